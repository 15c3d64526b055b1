"""Training-step speed of the RGCN encoder: PyG RGCNConv (reference) vs gclsampler's fast conv.

One run, one batch, same weights: ms per training step (features + 3 convs + readout +
projection head + InfoNCE, forward + backward + AdamW step, as ``gclsampler.train`` runs
it) and nodes/s for each implementation, beside the FLOP floor computed from the fp32
matmul rate measured in the same run. Rows: the reference (PyG ``RGCNConv``, fp32), the
fast conv in fp32 and in ``train.precision=bf16`` (bfloat16 GEMMs in the convs), and with
``--mixed`` / ``--pyg-bf16`` the basis-mixed fast conv and the reference under bf16 autocast.
The last line gives the ratio of the default training configuration
(``TrainConfig.precision``, as ``auto`` resolves it on this CPU) over the fp32 reference. The batch is random graphs with the
``gclsampler.graph`` layout (``tests/_random_graphs.py``), or real graphs with ``--workload DIR``
(built with the default ``GraphConfig`` into that workload's ``.graph-cache/``, as ``train.py`` does).

    python bench/rgcn_step.py [--graphs 64 --warps 8 --insts 40 --reps 5 --threads 2]

The machine may be shared: compare ratios within one run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from extra_samples import positive_int  # noqa: E402
from torch_geometric.data import Batch  # noqa: E402

from gclsampler.loss import symmetric_info_nce  # noqa: E402
from gclsampler.model import GCLModel, ModelConfig, pyg_to_fast_state  # noqa: E402
from gclsampler.train import TrainConfig, projections, resolve_precision  # noqa: E402


def matmul_gflops(n: int = 2048, reps: int = 5, dtype=torch.float32) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def flops_per_node(cfg: ModelConfig, blocks: int) -> float:
    """Dense matmul FLOPs per node per step (fwd + 2x bwd) with ``blocks`` weight blocks per layer."""
    dims = [cfg.in_dim] + [cfg.hidden_dim] * (cfg.num_layers - 1) + [cfg.out_dim]
    fwd = sum(2 * blocks * a * b for a, b in zip(dims[:-1], dims[1:]))
    return 3.0 * fwd


def make_step(model: GCLModel, batch, precision: str = "fp32"):
    opt = torch.optim.AdamW(model.parameters(), lr=7e-4)
    model.train()

    def step() -> float:
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        p = projections(model, batch, precision)
        half = p.size(0) // 2
        loss = symmetric_info_nce(p[:half], p[half: 2 * half], 0.05)
        loss.backward()
        opt.step()
        return time.perf_counter() - t

    step()  # warm-up
    return step


def interleaved_best(steps: list, reps: int) -> list[float]:
    """Best of ``reps`` per implementation, taking turns so load changes hit all alike."""
    best = [float("inf")] * len(steps)
    for _ in range(reps):
        for i, step in enumerate(steps):
            best[i] = min(best[i], step())
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=positive_int, default=64)
    ap.add_argument("--warps", type=positive_int, default=8)
    ap.add_argument("--insts", type=positive_int, default=40, help="instructions per warp")
    ap.add_argument("--reps", type=positive_int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--num-bases", type=int, default=2)
    ap.add_argument("--workload", type=str, default=None, help="use real graphs of this workload dir")
    ap.add_argument("--mixed", action="store_true", help="also time the basis-mixed fast conv")
    ap.add_argument("--pyg-bf16", action="store_true", help="also time the reference under bf16 autocast")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    if args.workload:
        from gclsampler.data import GraphDataset
        from gclsampler.graph import GraphConfig

        from gclsampler.errors import GclError

        try:
            ds = GraphDataset(args.workload, GraphConfig())
        except GclError as exc:  # a missing or unreadable workload dir: one line, not a traceback
            print(f"rgcn_step: {exc}", file=sys.stderr)
            return 2
        firsts = {}
        for inv, g in enumerate(ds.inv_to_graph.tolist()):
            firsts.setdefault(g, inv)
        graphs = [ds[i] for i in list(firsts.values())[: args.graphs]]
        vocab = None
    else:
        from _random_graphs import VOCAB, random_graphs

        graphs = random_graphs(args.graphs, seed=0, n_warps=args.warps, insts_per_warp=args.insts)
        vocab = VOCAB
    batch = Batch.from_data_list(graphs)
    n = batch.num_nodes
    kind = f"graphs of {args.workload}" if args.workload else "SYNTHETIC random graphs"
    print(f"batch: {len(graphs)} {kind}, {n} nodes, {batch.edge_index.size(1)} edges, threads={args.threads}")

    gf = matmul_gflops()
    print(f"fp32 matmul rate (2048^3, same run): {gf:.1f} GFLOP/s")

    def make(conv: str, mix: str) -> GCLModel:
        torch.manual_seed(0)
        kw = {} if vocab is None else dict(vocab_instruction=vocab["instruction"], vocab_pseudo=vocab["pseudo"],
                                           vocab_variable=vocab["variable"])
        return GCLModel(ModelConfig(conv=conv, basis_mixing=mix, num_bases=args.num_bases, **kw))

    ref = make("pyg", "never")
    rows = [("pyg RGCNConv (reference)", ref, 4, "fp32")]
    if args.pyg_bf16:
        rows.append(("pyg RGCNConv, bf16 autocast", make("pyg", "never"), 4, "bf16"))
    variants = [("never", "fp32", "fast, R+1 blocks, fp32"), ("never", "bf16", "fast, R+1 blocks, bf16")]
    if args.mixed:
        variants.append(("always", "fp32", "fast, basis-mixed B+1 blocks"))
    for mix, precision, label in variants:
        m = make("fast", mix)
        m.load_state_dict(pyg_to_fast_state(ref.state_dict()))
        blocks = args.num_bases if mix == "always" else 4
        rows.append((label, m, blocks, precision))

    cfg = ref.cfg
    floor_full = gf * 1e9 / flops_per_node(cfg, cfg.num_relations + 1)
    print(f"FLOP floor (R+1={cfg.num_relations + 1} blocks, {flops_per_node(cfg, cfg.num_relations + 1) / 1e6:.2f} "
          f"MFLOP/node): {floor_full:,.0f} nodes/s")
    times = interleaved_best([make_step(m, batch, prec) for _, m, _, prec in rows], args.reps)
    gf_after = matmul_gflops()
    print(f"fp32 matmul rate again after timing: {gf_after:.1f} GFLOP/s (a large change means the machine was busy)")
    print(f"{'implementation':34s} {'ms/step':>9s} {'nodes/s':>10s} {'vs ref':>7s} {'floor(nodes/s)':>15s}")
    for (label, _, blocks, _), t in zip(rows, times):
        floor = gf * 1e9 / flops_per_node(cfg, blocks + 1)
        print(f"{label:34s} {t * 1e3:9.1f} {n / t:10,.0f} {times[0] / t:6.2f}x {floor:15,.0f}")
    default = resolve_precision(TrainConfig().precision, torch.device("cpu"))
    t_default = times[[lab for lab, *_ in rows].index(f"fast, R+1 blocks, {default}")]
    print(f"default training step (model.conv=fast, train.precision={TrainConfig().precision} = {default} on this CPU): "
          f"{times[0] / t_default:.2f}x PyG RGCNConv (fp32), {n / t_default:,.0f} nodes/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
