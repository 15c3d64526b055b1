"""Photon's online assignment: the compiled loop (``photon.photon_assign``) against the
per-candidate numpy loop it replaced, on the same SYNTHETIC BBVs, in one run.

The BBVs stand for launches whose basic-block counts depend on their data (a graph
kernel's frontier, a sparse kernel): ``--kernels`` kernels of ``--blocks`` blocks each,
every launch a kernel's block counts drawn from a lognormal of sigma ``--spread``. With a
wide spread most launches fall below the 95 % threshold and become representatives,
so every later launch has many candidates: the case that made the old loop quadratic.
Prints both times, the speedup ratio, and checks the two give the same labels.

    python bench/photon_assign.py [--n 5000 --kernels 4 --blocks 40 --spread 0.1]

The machine may be shared: compare the ratio within one run, not times across runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extra_samples import non_negative_float, positive_int  # noqa: E402

from gclsampler.photon import photon_assign  # noqa: E402


def python_loop(bbv: sp.csr_matrix, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The assignment as written before 2026-11-28 (one np.intersect1d per candidate): the baseline."""
    n = bbv.shape[0]
    reps: list[int] = []
    labels = np.empty(n, dtype=np.int64)
    by_block: dict[int, list[int]] = {}
    for i in range(n):
        lo, hi = bbv.indptr[i], bbv.indptr[i + 1]
        cols, vals = bbv.indices[lo:hi], bbv.data[lo:hi]
        best, best_sim = -1, -1.0
        for r in sorted({r for c in cols.tolist() for r in by_block.get(c, ())}):
            rep = reps[r]
            rlo, rhi = bbv.indptr[rep], bbv.indptr[rep + 1]
            common, ia, ib = np.intersect1d(cols, bbv.indices[rlo:rhi], assume_unique=True, return_indices=True)
            sim = float(np.minimum(vals[ia], bbv.data[rlo:rhi][ib]).sum()) if common.size else 0.0
            if sim > best_sim + 1e-12:
                best, best_sim = r, sim
        if best >= 0 and best_sim >= threshold:
            labels[i] = best
        else:
            labels[i] = len(reps)
            for c in cols.tolist():
                by_block.setdefault(c, []).append(len(reps))
            reps.append(i)
    return labels, np.asarray(reps, dtype=np.int64)


def bbvs(n: int, kernels: int, blocks: int, spread: float, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    kernel = rng.integers(0, kernels, size=n)
    runs = rng.random((kernels, blocks)) < 0.8  # the blocks each kernel executes at all
    counts = rng.lognormal(0.0, spread, size=(n, blocks)) * runs[kernel]
    counts[:, 0] += 1.0  # every launch runs its kernel's entry block
    counts /= counts.sum(axis=1, keepdims=True)
    cols = kernel[:, None] * blocks + np.arange(blocks)[None, :]
    m = sp.csr_matrix((counts.ravel(), (np.repeat(np.arange(n), blocks), cols.ravel())), shape=(n, kernels * blocks))
    m.eliminate_zeros()
    m.sort_indices()
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=positive_int, default=5000, help="launches (default 5000)")
    ap.add_argument("--kernels", type=positive_int, default=4, help="kernels (default 4)")
    ap.add_argument("--blocks", type=positive_int, default=40, help="basic blocks per kernel (default 40)")
    ap.add_argument("--spread", type=non_negative_float, default=0.1, help="lognormal sigma of block counts (default 0.1)")
    ap.add_argument("--threshold", type=float, default=0.95, help="Photon's threshold (default 0.95)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    m = bbvs(args.n, args.kernels, args.blocks, args.spread, args.seed)
    photon_assign(m[:2], args.threshold)  # compile (or load the cached kernel) outside the timing
    t0 = time.perf_counter()
    fast = photon_assign(m, args.threshold)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = python_loop(m, args.threshold)
    t_slow = time.perf_counter() - t0
    same = np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    print(f"SYNTHETIC BBVs: {args.n} launches, {args.kernels} kernels x {args.blocks} blocks, "
          f"{fast[1].size} representatives")
    print(f"numpy loop (before): {t_slow:.3f} s")
    print(f"compiled (photon_assign): {t_fast:.4f} s")
    print(f"ratio: {t_slow / max(t_fast, 1e-9):.1f}x; same labels and representatives: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
