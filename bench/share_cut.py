"""Where should the share cut cut? The heaviest log2 gap against the widest (run:
``python bench/share_cut.py``; a few seconds on 2 cores).

``gcl``'s share cut (``cluster.time_split_share``, ``gclsampler.cluster.split_by_share``) cuts a
cluster while one representative drawn from it would miss the cluster's total by more than that
share of the workload's time. It cuts at the gap in log2 time with the largest width x launches
on its smaller side. Until 2026-11-28 it cut at the widest gap, which this script keeps as the
baseline, run on the same times in the same run. Each case is one kernel's 1000 launches whose
SM-0 traces (and so embeddings) are identical, so the silhouette gives one cluster and the
share cut alone decides; the times are SYNTHETIC draws, not measurements. A cell is the
representatives (clusters) and the any-member error (``score.any_member_error``, 1000 draws):
the error expected when each cluster's representative is any of its members.
"""

from __future__ import annotations

import argparse

import numpy as np

from gclsampler.cluster import split_by_share
from gclsampler.plan import plan_from_labels
from gclsampler.score import any_member_error

from extra_samples import float_list, positive_int


def widest_gap_baseline(t: np.ndarray, share: float) -> np.ndarray:
    """The rule before 2026-11-28, on one cluster: cut at the widest log2 gap, recurse."""
    log_t = np.log2(t)
    out = np.zeros(t.size, dtype=np.int64)
    stack, nxt = [np.argsort(t, kind="stable")], 1
    while stack:
        m = stack.pop()
        if np.abs(t[m] - t[m].mean()).sum() <= share * t.sum():
            continue
        cut = int(np.argmax(np.diff(log_t[m]))) + 1
        out[m[cut:]] = nxt
        nxt += 1
        stack += [m[:cut], m[cut:]]
    return np.unique(out, return_inverse=True)[1]


def cases(n: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [
        ("rising evenly 1-2 us", np.linspace(1000.0, 2000.0, n)),
        ("lognormal, sd 0.3", 1000 * np.exp(rng.normal(0, 0.3, n))),
        ("lognormal, sd 0.6", 1000 * np.exp(rng.normal(0, 0.6, n))),
        ("rising evenly 1-2 us, 5 % jitter", np.linspace(1000.0, 2000.0, n) * np.exp(rng.normal(0, 0.05, n))),
        ("Pareto tail, 1 + Pareto(3)", 1000 * (1 + rng.pareto(3, n))),
        ("three groups, 1 : 16 : 4 launches, 2.6 / 7.8 / 10.2 us",
         np.r_[np.full(n // 21, 2600.0), np.full(16 * (n // 21), 7800.0), np.full(n - 17 * (n // 21), 10200.0)]
         * np.exp(rng.normal(0, 0.01, n))),
    ]


def cell(labels: np.ndarray, t: np.ndarray) -> str:
    reps = np.unique(labels, return_index=True)[1]
    plan = plan_from_labels("share_cut", "bench", labels, reps, np.array(["k"] * t.size))
    return f"{reps.size}, {any_member_error(plan, labels, t):.2f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])  # its first sentence wraps
    ap.add_argument("--n", type=positive_int, default=1000, help="launches per case")
    ap.add_argument("--shares", default="0.04,0.02,0.01,0.005", help="time_split_share values (0.04: gcl's default)")
    args = ap.parse_args()
    shares = float_list(ap, "--shares", args.shares)
    if any(not s >= 0 for s in shares):  # argmax of an empty sequence, deep in the cut
        ap.error(f"--shares: expected numbers >= 0, got {args.shares!r}")
    print(f"SYNTHETIC times, {args.n} launches of one kernel per case; cells: representatives, any-member error")
    print("| times | rule | " + " | ".join(f"share {s}" for s in shares) + " |")
    print("|---|---|" + "---|" * len(shares))
    fewer = []
    for name, t in cases(args.n):
        old = [widest_gap_baseline(t, s) for s in shares]
        new = [split_by_share(np.zeros(t.size, dtype=np.int64), t, s) for s in shares]
        print(f"| {name} | widest gap (before) | " + " | ".join(cell(x, t) for x in old) + " |")
        print("| | heaviest gap (now) | " + " | ".join(cell(x, t) for x in new) + " |")
        fewer.append((old[0].max() + 1) / (new[0].max() + 1))
    print(f"representatives at share {shares[0]}, widest / heaviest, per case: " + ", ".join(f"{r:.1f}" for r in fewer))


if __name__ == "__main__":
    main()
