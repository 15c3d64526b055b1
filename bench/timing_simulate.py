"""Cost of one ``gclsampler.synth.timing.simulate`` call (run: ``python bench/timing_simulate.py``).

Builds a SYNTHETIC kernel sample of ~50k warp-instructions (8 CTAs x 8 warps, a
GEMM-like loop of LDG.E.128 / LDS / FFMA / HMMA plus an epilogue STG, 30% of the
instructions touching memory, ~60k lane addresses) and times ``simulate`` on each
arch, carrying the cache state as the generator does. The budget is 50 ms per
call; because the machine is shared, the script also times a fixed numpy
reference (sorting 1M float64) in the same run and prints both, so a slow
machine shows up as a slow reference rather than as a regression.

Then it prints the shapes of repeated-invocation time distributions (STEM+ROOT
Figure 1) the model produces on ampere: the CoV of a compute-bound and of a
memory-bound kernel, and the two peaks of one streaming kernel that runs after
either a cache-flushing kernel (1 in 3) or a small unrelated one (warm L2).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from gclsampler.synth.arch import ARCHS
from gclsampler.synth.timing import TimingConfig, WorkSummary, simulate
from gclsampler.trace.types import NO_REG, KernelHeader, KernelTrace

from extra_samples import positive_int

OPS = ("LDG.E.128", "LDS.128", "FFMA", "HMMA.16816.F32", "IADD3", "STG.E", "BAR.SYNC", "EXIT")


def kernel(n_ctas_sampled=8, warps=8, iters=32, grid=4096, seed=0) -> WorkSummary:
    rng = np.random.default_rng(seed)
    body = [0, 0, 6, 1, 1, 1, 1, 3, 3, 3, 3, 2, 2, 2, 2, 4, 4, 4, 4, 4, 2, 2, 2, 2]
    prog = np.array(body * iters + [5, 5, 7], dtype=np.int32)
    L = prog.size
    ids = np.unique(np.linspace(0, grid - 1, n_ctas_sampled).round().astype(np.int64))
    W = ids.size * warps
    opcode = np.tile(prog, W)
    n = opcode.size
    w_of = np.repeat(np.arange(W), L)
    it = np.tile(np.r_[np.repeat(np.arange(iters), len(body)), [iters - 1] * 3], W)
    cta = ids[w_of // warps]
    is_ldg, is_lds, is_stg = opcode == 0, opcode == 1, opcode == 5
    is_mem = is_ldg | is_lds | is_stg
    a_base = np.where(is_ldg, 0x7F0000000000 + ((cta % 64) * iters + it) * 512 * 4,  # A/B tiles, reused
             np.where(is_stg, 0x7F8000000000 + (cta * warps + w_of % warps) * 1024,  # disjoint C
                      0x7F5A4F000000 + (w_of % warps) * 512)).astype(np.int64)
    width = np.where(is_ldg | is_lds, 16, np.where(is_stg, 4, 0))
    counts = np.where(is_mem, 32, 0)
    lane = np.tile(np.arange(32), int(is_mem.sum()))
    addrs = (np.repeat(a_base[is_mem], 32) + lane * np.repeat(width[is_mem], 32)).astype(np.uint64)
    mask = np.where(rng.random(n) < 0.05, 0x0000FFFF, 0xFFFFFFFF).astype(np.uint32)
    h = KernelHeader(name="bench_gemm_like", kernel_id=1, grid=(grid, 1, 1), block=(warps * 32, 1, 1),
                     shmem=32768, nregs=96)
    t = KernelTrace(
        header=h, warp_cta=np.stack([np.repeat(ids, warps), np.zeros(W, np.int64), np.zeros(W, np.int64)],
                                    axis=1).astype(np.int32),
        warp_id=np.tile(np.arange(warps), ids.size).astype(np.int32),
        warp_ptr=(np.arange(W + 1) * L).astype(np.int64), pc=np.tile(np.arange(L) * 16, W).astype(np.int64),
        mask=mask, opcode=opcode, opcode_table=OPS,
        dst=np.full((n, 1), NO_REG, np.int16), src=np.full((n, 2), NO_REG, np.int16),
        mem_width=width.astype(np.int32), addr_ptr=np.r_[0, np.cumsum(counts)].astype(np.int64), addrs=addrs)
    return WorkSummary(header=h, sample=t, sample_cta_ids=ids, insts_scale=grid / ids.size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=positive_int, default=10)
    args = ap.parse_args()
    w = kernel()
    print(f"SYNTHETIC kernel sample: {w.sample.n_insts} warp-insts, {w.sample.addrs.size} lane addresses")
    x = np.random.default_rng(0).random(1_000_000)
    t0 = time.process_time()
    for _ in range(3):
        np.sort(x)
    ref = (time.process_time() - t0) / 3
    cfg = TimingConfig()
    for name, arch in ARCHS.items():
        st = None
        rng = np.random.default_rng(0)
        simulate(arch, w, None, rng, cfg)  # warm-up
        t0 = time.process_time()  # CPU time: less sensitive to other jobs on a shared machine
        for _ in range(args.repeats):
            m, st = simulate(arch, w, st, rng, cfg)
        dt = (time.process_time() - t0) / args.repeats
        print(f"{name:7s} simulate {dt * 1e3:7.2f} ms CPU/call  budget ratio {dt / 0.05:5.2f}  "
              f"(= {dt / ref:5.2f} x sort(1M) reference {ref * 1e3:.1f} ms)  "
              f"time_ns={m['time_ns']:.0f} l1={m['l1_hit_rate']:.2f} l2={m['l2_hit_rate']:.2f}")
    figure1()


def figure1(n: int = 300) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_timing import BASE, make_work  # the tests' SYNTHETIC kernel builder

    arch, cfg, rng = ARCHS["ampere"], TimingConfig(), np.random.default_rng(1)

    def repeat(w):
        st, x = None, []
        for _ in range(n):
            m, st = simulate(arch, w, st, rng, cfg)
            x.append(m["time_ns"])
        return np.array(x)

    for name, w in (("compute-bound", make_work(grid=(4096, 1, 1), mem=None, n_fp=16)),
                    ("memory-bound", make_work(grid=(4096, 1, 1), mem="stream", n_fp=1))):
        x = repeat(w)
        print(f"{name:14s} mean {x.mean():8.0f} ns  CoV {x.std() / x.mean():.3f}")
    kern = make_work(grid=(512, 1, 1), mem="stream", iters=16, n_fp=1)
    flush = make_work(grid=(8192, 1, 1), mem="stream", iters=32, base=BASE + (1 << 36), kid=2)
    other = make_work(grid=(64, 1, 1), mem="resident", footprint=64 * 1024, iters=8, n_fp=1,
                      base=BASE + (1 << 37), kid=3)
    st, x = None, []
    for i in range(n):
        _, st = simulate(arch, flush if i % 3 == 0 else other, st, rng, cfg)
        m, st = simulate(arch, kern, st, rng, cfg)
        x.append(m["time_ns"])
    x = np.array(x)
    cut = (x.min() + x.max()) / 2
    lo, hi = x[x < cut], x[x >= cut]
    print(f"two contexts   warm peak {lo.mean():.0f} ns (n={lo.size}, CoV {lo.std() / lo.mean():.3f}), "
          f"cold peak {hi.mean():.0f} ns (n={hi.size}, CoV {hi.std() / hi.mean():.3f})")


if __name__ == "__main__":
    main()
