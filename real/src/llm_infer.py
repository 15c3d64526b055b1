"""Greedy LLM inference with random weights of Pythia-410m's shape, for tracing.

Why random weights: the kernel sequence and every launch's shape depend on the
architecture, the prompt length and the number of decode steps, not on the
weights' values, and the machine that runs this cannot download a checkpoint.
The weights are drawn on the CPU (fixed seed) and cast to fp16 there, so that
moving them to the GPU is plain host-to-device copies: every kernel the process
launches belongs to the inference itself, which keeps trace ids, the timing run
and the torch.profiler run aligned row for row.

    python real/src/llm_infer.py --layers 2                    # traced or timed by the caller
    python real/src/llm_infer.py --layers 2 --profile out.json # torch.profiler chrome trace

Eager PyTorch (no torch.compile, no CUDA graphs): one kernel per op, as the
tracer and the profilers count them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=24, help="transformer layers (Pythia-410m has 24)")
    ap.add_argument("--prompt", type=int, default=32, help="prompt tokens (one prefill forward)")
    ap.add_argument("--decode", type=int, default=15, help="decode steps (one forward each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default=None, help="write a torch.profiler chrome trace of every kernel here")
    ap.add_argument("--meta", default=None, help="write the model shape and library versions (JSON) here")
    ap.add_argument("--device", default="cuda", help="cuda (what is traced); cpu only checks the script")
    args = ap.parse_args(argv)

    import torch
    import transformers
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("llm_infer: no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    # Pythia-410m (GPT-NeoX): hidden 1024, 16 heads, 4096 MLP, rotary on 25 % of a head, parallel residual.
    cfg = GPTNeoXConfig(
        vocab_size=50304, hidden_size=1024, num_hidden_layers=args.layers, num_attention_heads=16,
        intermediate_size=4096, rotary_pct=0.25, max_position_embeddings=2048, use_parallel_residual=True,
        tie_word_embeddings=False,
    )
    model = GPTNeoXForCausalLM(cfg).half().eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, args.prompt), generator=torch.Generator().manual_seed(args.seed))
    if args.meta:
        with open(args.meta, "w") as f:
            json.dump({
                "model": "GPT-NeoX with Pythia-410m's shape, random weights (fixed seed), fp16, eager",
                "layers": args.layers, "hidden": 1024, "heads": 16, "intermediate": 4096, "vocab": 50304,
                "prompt_tokens": args.prompt, "decode_steps": args.decode, "seed": args.seed,
                "attn_implementation": getattr(cfg, "_attn_implementation", None),
                "torch": torch.__version__, "transformers": transformers.__version__,
                "cuda": torch.version.cuda,
                "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu",
            }, f, indent=1)

    prof = contextlib.nullcontext()
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU])
    t0 = time.perf_counter()
    with prof as p, torch.no_grad():
        model = model.to(dev)
        ids = prompt.to(dev)
        out = model(ids, use_cache=True, logits_to_keep=1)
        past, token = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        generated = [token]
        for _ in range(args.decode):
            out = model(token, past_key_values=past, use_cache=True, logits_to_keep=1)
            past, token = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            generated.append(token)
        if dev.type == "cuda":
            torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    if args.profile:
        p.export_chrome_trace(args.profile)
    # .item() copies each token to the host without a kernel: a torch.cat here was a launch after the
    # profiled region, so the tool counted one launch (1059) more than torch.profiler (1058)
    toks = [t.item() for t in generated]
    print(f"llm_infer: layers={args.layers} prompt={args.prompt} decode={args.decode} "
          f"wall={wall:.3f}s tokens={toks[:4]}...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
