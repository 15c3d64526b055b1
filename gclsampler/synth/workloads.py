"""Workloads: the launch sequences of the programs gclsampler ships synthetic versions of.

Each workload is a default knob dict (the ``synth:`` section of
``conf/workload/<name>.yaml`` mirrors it) and a function that turns knobs into
the list of :class:`Launch` in launch order, registering data-carrying memory
(token ids, graph CSR arrays...) in the :class:`Memory` the interpreter loads from.

LLM workloads follow the published architectures (hidden size, heads, MLP width,
vocabulary, rotary dims) and PyTorch-eager launch order, one kernel per op, with
a ``layers`` knob that runs fewer decoder layers than the real model so the
default pipeline stays fast. Everything is SYNTHETIC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gclsampler.synth.families import Launch
from gclsampler.synth.program import Memory

# knobs every workload has (trace/sample sizes, archs); workload defaults override
COMMON_DEFAULTS: dict = {
    "trace_cap": 0,  # instructions recorded per traced warp (0 = all: the complete trace, as the paper's tracer)
    "max_traced_ctas": 0,  # CTAs of the traced SM kept in the trace (0 = every CTA the SM runs)
    "sample_cap": 256,  # instructions per warp recorded for the timing model's sample
    "sample_ctas": 2,  # CTAs sampled uniformly across the whole grid for timing
    "archs": ["turing", "ampere", "ada"],
    "compress": "zst",  # "", "gz", "xz" or "zst": suffix of kernel-<id>.traceg
    "batch_window": 128,  # launches interpreted together (same-program launches share one batch)
    "batch_insts": 2000000,  # recorded warp instructions one interpreter batch may hold (bounds memory)
    "values": True,  # write per-lane register values (gclsampler's trace extension)
    # true: record a warp instruction whose guard is false on every lane as a line with mask
    # 00000000, as tracer/ and Accel-Sim's NVBit tracer do, so synthetic traces read like theirs
    # (docs/synth.md, "Deviations", has the A/B that made it the default; false gives the traces
    # of before 2026-11-29, and the real/ traces of tracer pass 6 lack these lines)
    "trace_guarded_off": True,
}

LEGACY_KNOBS: dict = {"trace_guarded_off": False}
"""Knobs added after workloads were synthesized, with the value that reproduces those workloads:
a workload.json without one was written with it, so it is not synthesized again for its absence."""

SHMEM_BASE = 0x00007F5A4F000000
LOCAL_BASE = 0x00007F5A4D000000


class Alloc:
    """Device allocator: persistent region (weights, caches) + per-layer scratch reused like
    PyTorch's caching allocator, so activations of every layer land on the same addresses."""

    def __init__(self):
        self.w = 0x00007F5A20000000
        self.s0 = 0x00007F5C00000000
        self.s = self.s0

    def weight(self, nbytes: int) -> int:
        base = self.w
        self.w += (int(nbytes) + 511) // 512 * 512
        return base

    def act(self, nbytes: int) -> int:
        base = self.s
        self.s += (int(nbytes) + 511) // 512 * 512
        return base

    def reset(self) -> None:
        self.s = self.s0


@dataclass
class WorkloadSpec:
    name: str
    defaults: dict
    launches: Callable[[dict, Alloc, Memory, np.random.Generator], list[Launch]]
    doc: str = ""
    minimums: dict = field(default_factory=dict)
    """Smallest value of each integer size knob the kernel programs can run (a 16-wide tile
    needs n >= 16); ``resolve_params`` refuses less with the knob's name, before any work."""


WORKLOADS: dict[str, WorkloadSpec] = {}


def register(name: str, defaults: dict, doc: str = "", minimums: dict | None = None):
    def deco(fn):
        WORKLOADS[name] = WorkloadSpec(name, {**COMMON_DEFAULTS, **defaults}, fn, doc, dict(minimums or {}))
        return fn
    return deco


# ----------------------------------------------------------------------------- LLM kernels
K_EW = "void at::native::vectorized_elementwise_kernel<4, {f}>"
K_LN = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>"
K_RMS = "void at::native::reduce_rms_norm_kernel<c10::Half, float, 256>"
K_GEMM = "ampere_fp16_s16816gemm_fp16_{bm}x{bn}_ldg8_f2f_stages_64x3_tn"
K_GEMV = "void gemv2T_kernel_val<int, int, __half, __half, float, 128, 16, 4, 4, false, false>"
K_ROT = "void at::native::unrolled_elementwise_kernel<at::native::rotary_embedding_functor<c10::Half>>"
K_CAT = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<c10::Half, unsigned int, 4, 64, 64>"
K_FA = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<{hd}, 64, 64, 4>, true>"
K_FD = "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<{hd}, 64, 128, 4>, false>"
K_EMB = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::Half, long, unsigned int, 2, 2, -2, true>"
K_AMAX = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::Half, at::native::ArgMaxOps<c10::Half>>>"
K_SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::Half, float, c10::Half>"

FUNCTOR = {
    "add": "at::native::CUDAFunctor_add<c10::Half>",
    "mul": "at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float>>",
    "gelu_tanh": "at::native::GeluCUDAKernelImpl<c10::Half, tanh>",
    "gelu_erf": "at::native::GeluCUDAKernelImpl<c10::Half, none>",
    "silu_mul": "at::native::silu_and_mul_functor<c10::Half>",
    "copy": "at::native::CopyFunctor<c10::Half>",
}


@dataclass
class LLMSpec:
    hidden: int
    heads: int
    head_dim: int
    mlp: int
    vocab: int
    rot_dim: int
    norm: str  # "layernorm" | "rmsnorm"
    act: str  # elementwise op after fc1
    qkv: str  # "separate" | "fused"
    qkv_bias: bool
    o_bias: bool
    mlp_kind: str  # "gelu" | "swiglu"
    residual: str  # "parallel_shared_ln" (phi), "parallel_two_ln" (neox), "sequential" (llama/qwen)
    lm_bias: bool
    max_pos: int


class _LLM:
    """Emits one model's eager kernel sequence; holds pointers so launches stay short."""

    def __init__(self, spec: LLMSpec, k: dict, alloc: Alloc, mem: Memory, rng: np.random.Generator):
        self.m, self.k, self.A, self.mem, self.rng = spec, k, alloc, mem, rng
        self.out: list[Launch] = []
        self.n_sm = k["n_sm"]

    # -- launch helpers
    def ew(self, op: str, n: int, ins: list[int], out: int, bias: int = 0, bias_n: int = 0, name: str = ""):
        nvec = -(-n // 8)
        grid = max(1, min(-(-nvec // 128), self.n_sm * 16))
        args = dict(n=n, esize=2, vec_bytes=16, ins=ins, out=out, op=op)
        if bias:
            args.update(bias=bias, bias_n=bias_n)
        self.out.append(Launch(name or K_EW.format(f=FUNCTOR[op.replace("bias_", "")]), "elementwise",
                               (grid, 1, 1), (128, 1, 1), args))

    def linear(self, S: int, N: int, K: int, x: int, w: int, bias: int, y: int):
        if S == 1:
            self.out.append(Launch(K_GEMV, "gemv", (-(-N // 4), 1, 1), (128, 1, 1),
                                   dict(N=N, K=K, W=w, x=x, y=y, bias=bias, rows_per_cta=4)))
            return
        bm = bn = 64 if S <= 64 else 128
        T = 128 if bm == 64 else 256
        self.out.append(Launch(K_GEMM.format(bm=bm, bn=bn), "gemm_tc", (-(-N // bn), -(-S // bm), 1), (T, 1, 1),
                               dict(M=S, N=N, K=K, A=x, B=w, C=y, bias=bias, bm=bm, bn=bn)))

    def norm(self, S: int, x: int, g: int, be: int, y: int):
        rms = self.m.norm == "rmsnorm"
        self.out.append(Launch(K_RMS if rms else K_LN, "layernorm", (S, 1, 1), (256, 1, 1),
                               dict(hidden=self.m.hidden, x=x, gamma=g, beta=0 if rms else be, out=y, rms=rms,
                                    eps=1e-6 if rms else 1e-5)))

    # -- model
    def run(self) -> list[Launch]:
        m, k, A = self.m, self.k, self.A
        H, hd, nh = m.hidden, m.head_dim, m.heads
        L, P, T = k["layers"], k["prompt"], k["decode"]
        max_len = P + T + 1
        e = 2
        wt = lambda n: A.weight(n * e)  # noqa: E731
        emb = wt(m.vocab * H)
        layers = []
        for _ in range(L):
            lw = dict(ln_g=wt(H), ln_b=wt(H), ln2_g=wt(H), ln2_b=wt(H))
            if m.qkv == "fused":
                lw.update(qkv=wt(3 * H * H), qkv_b=wt(3 * H))
            else:
                lw.update(q=wt(H * H), k=wt(H * H), v=wt(H * H), qb=wt(H), kb=wt(H), vb=wt(H))
            lw.update(o=wt(H * H), ob=wt(H))
            if m.mlp_kind == "swiglu":
                lw.update(gate=wt(m.mlp * H), up=wt(m.mlp * H), down=wt(m.mlp * H))
            else:
                lw.update(fc1=wt(m.mlp * H), fc1b=wt(m.mlp), fc2=wt(m.mlp * H), fc2b=wt(H))
            lw.update(kc=wt(nh * max_len * hd), vc=wt(nh * max_len * hd))
            layers.append(lw)
        lnf_g, lnf_b = wt(H), wt(H)
        lm = emb if k.get("tied", False) else wt(m.vocab * H)
        lm_b = wt(m.vocab) if m.lm_bias else 0
        cos = A.weight(max_len * m.rot_dim // 2 * 4)
        sin = A.weight(max_len * m.rot_dim // 2 * 4)
        tokens = self.rng.integers(0, m.vocab, size=P + T).astype(np.int32)
        ids_buf = A.weight(tokens.nbytes)
        self.mem.register(ids_buf, tokens.nbytes, tokens)
        for step in range(T + 1):
            S = P if step == 0 else 1
            pos0 = 0 if step == 0 else P + step - 1
            kv_len = pos0 + S
            A.reset()
            x = A.act(S * H * e)
            self.out.append(Launch(K_EMB, "embedding", (S, 1, 1), (128, 1, 1),
                                   dict(hidden=H, weight=emb, ids=ids_buf + 4 * pos0, out=x)))
            for lw in layers:
                x = self.layer(lw, x, S, pos0, kv_len, max_len, cos, sin)
            h = A.act(S * H * e)
            self.norm(S, x, lnf_g, lnf_b, h)
            logits = A.act(m.vocab * e)
            self.linear(1, m.vocab, H, h + (S - 1) * H * e, lm, lm_b, logits)
            if k.get("sampling", False):
                probs = A.act(m.vocab * e)
                self.out.append(Launch(K_SOFTMAX, "softmax", (1, 1, 1), (512, 1, 1),
                                       dict(cols=m.vocab, x=logits, out=probs)))
                logits = probs
            self.out.append(Launch(K_AMAX, "argmax", (1, 1, 1), (512, 1, 1),
                                   dict(n=m.vocab, x=logits, out=A.act(8))))
        return self.out

    def attention_block(self, lw, h, S, pos0, kv_len, max_len, cos, sin):
        m, A, e = self.m, self.A, 2
        H, hd, nh = m.hidden, m.head_dim, m.heads
        if m.qkv == "fused":
            qkv = A.act(S * 3 * H * e)
            self.linear(S, 3 * H, H, h, lw["qkv"], lw["qkv_b"], qkv)
            q, kk, v = qkv, qkv + H * e, qkv + 2 * H * e
        else:
            q, kk, v = A.act(S * H * e), A.act(S * H * e), A.act(S * H * e)
            self.linear(S, H, H, h, lw["q"], lw["qb"] if m.qkv_bias else 0, q)
            self.linear(S, H, H, h, lw["k"], lw["kb"] if m.qkv_bias else 0, kk)
            self.linear(S, H, H, h, lw["v"], lw["vb"] if m.qkv_bias else 0, v)
        n_rot = S * nh * (m.rot_dim // 2)
        grid = (max(1, -(-n_rot // 128)), 1, 1)
        for t in (q, kk):
            self.out.append(Launch(K_ROT, "rotary", grid, (128, 1, 1),
                                   dict(tokens=S, heads=nh, head_dim=hd, rot_dim=m.rot_dim, x=t, cos=cos, sin=sin,
                                        out=t, pos0=pos0)))
        for t, c in ((kk, lw["kc"]), (v, lw["vc"])):
            self.ew("copy", S * H, [t], c + pos0 * H * e, name=K_CAT)
        o = A.act(S * H * e)
        if S > 1:
            self.out.append(Launch(K_FA.format(hd=hd), "attn_prefill", (-(-S // 64), nh, 1), (128, 1, 1),
                                   dict(seq=S, head_dim=hd, heads=nh, q=q, k=kk, v=v, out=o,
                                        row_stride=H)))
        else:
            self.out.append(Launch(K_FD.format(hd=hd), "attn_decode", (nh, 1, 1), (128, 1, 1),
                                   dict(kv_len=kv_len, head_dim=hd, q=q, k_cache=lw["kc"], v_cache=lw["vc"],
                                        max_len=max_len, out=o)))
        ao = A.act(S * H * e)
        self.linear(S, H, H, o, lw["o"], lw["ob"] if m.o_bias else 0, ao)
        return ao

    def mlp_block(self, lw, h, S):
        m, A, e = self.m, self.A, 2
        H, F = m.hidden, m.mlp
        if m.mlp_kind == "swiglu":
            g, u = A.act(S * F * e), A.act(S * F * e)
            self.linear(S, F, H, h, lw["gate"], 0, g)
            self.linear(S, F, H, h, lw["up"], 0, u)
            a = A.act(S * F * e)
            self.ew("silu_mul", S * F, [g, u], a)
            y = A.act(S * H * e)
            self.linear(S, H, F, a, lw["down"], 0, y)
            return y
        f1 = A.act(S * F * e)
        self.linear(S, F, H, h, lw["fc1"], lw["fc1b"], f1)
        a = A.act(S * F * e)
        self.ew(m.act, S * F, [f1], a)
        y = A.act(S * H * e)
        self.linear(S, H, F, a, lw["fc2"], lw["fc2b"], y)
        return y

    def layer(self, lw, x, S, pos0, kv_len, max_len, cos, sin):
        A, e, H = self.A, 2, self.m.hidden
        h = A.act(S * H * e)
        self.norm(S, x, lw["ln_g"], lw["ln_b"], h)
        if self.m.residual == "sequential":
            ao = self.attention_block(lw, h, S, pos0, kv_len, max_len, cos, sin)
            x1 = A.act(S * H * e)
            self.ew("add", S * H, [x, ao], x1)
            h2 = A.act(S * H * e)
            self.norm(S, x1, lw["ln2_g"], lw["ln2_b"], h2)
            y = self.mlp_block(lw, h2, S)
            x2 = A.act(S * H * e)
            self.ew("add", S * H, [x1, y], x2)
            return x2
        ao = self.attention_block(lw, h, S, pos0, kv_len, max_len, cos, sin)
        if self.m.residual == "parallel_two_ln":
            h2 = A.act(S * H * e)
            self.norm(S, x, lw["ln2_g"], lw["ln2_b"], h2)
            h = h2
        y = self.mlp_block(lw, h, S)
        s = A.act(S * H * e)
        self.ew("add", S * H, [ao, y], s)
        x2 = A.act(S * H * e)
        self.ew("add", S * H, [s, x], x2)
        return x2


PHI2 = LLMSpec(hidden=2560, heads=32, head_dim=80, mlp=10240, vocab=51200, rot_dim=32, norm="layernorm",
               act="gelu_tanh", qkv="separate", qkv_bias=True, o_bias=True, mlp_kind="gelu",
               residual="parallel_shared_ln", lm_bias=True, max_pos=2048)
# Pythia-410m (GPT-NeoX): fused QKV, rotary on 25% of each head, parallel residual with two LNs
PYTHIA = LLMSpec(hidden=1024, heads=16, head_dim=64, mlp=4096, vocab=50304, rot_dim=16, norm="layernorm",
                 act="gelu_erf", qkv="fused", qkv_bias=True, o_bias=True, mlp_kind="gelu",
                 residual="parallel_two_ln", lm_bias=False, max_pos=2048)
# Qwen1.5-0.5B: RMSNorm, q/k/v with bias, o without, SwiGLU MLP, full rotary, tied embeddings
QWEN15 = LLMSpec(hidden=1024, heads=16, head_dim=64, mlp=2816, vocab=151936, rot_dim=64, norm="rmsnorm",
                 act="silu_mul", qkv="separate", qkv_bias=True, o_bias=False, mlp_kind="swiglu",
                 residual="sequential", lm_bias=False, max_pos=32768)

LLM_DOC = ("{model}: {layers_real} decoder layers in the real model; `layers` runs fewer. Prefill `prompt` tokens, "
           "then greedy-decode `decode` tokens.")

LLM_MINIMUMS = {"layers": 1, "prompt": 1, "decode": 0}  # one layer and one prompt token; decode may be 0


@register("phi2", {"layers": 4, "prompt": 32, "decode": 15, "tied": False, "sampling": False},
          LLM_DOC.format(model="Phi-2 (2.7B)", layers_real=32),
          minimums=LLM_MINIMUMS)
def phi2(k, alloc, mem, rng):
    return _LLM(PHI2, k, alloc, mem, rng).run()


@register("pythia", {"layers": 6, "prompt": 32, "decode": 15, "tied": False, "sampling": False},
          LLM_DOC.format(model="Pythia-410m", layers_real=24),
          minimums=LLM_MINIMUMS)
def pythia(k, alloc, mem, rng):
    return _LLM(PYTHIA, k, alloc, mem, rng).run()


@register("qwen1_5", {"layers": 6, "prompt": 32, "decode": 15, "tied": True, "sampling": True},
          LLM_DOC.format(model="Qwen1.5-0.5B", layers_real=24),
          minimums=LLM_MINIMUMS)
def qwen1_5(k, alloc, mem, rng):
    return _LLM(QWEN15, k, alloc, mem, rng).run()
