"""The 200-draw bound check on every synthetic suite workload, as a table (SYNTHETIC data).

For each ``DIR/NAME/profile.csv`` (``gclsampler synth NAME --out DIR/NAME``): stem_root
under both scopes and gcl_stem (scope global), each plan redrawn 200 times with
``stem_draw``; prints how many draws exceed epsilon (at most 10 of 200 is the bound
honoured), the samples and the first draw's speedup. gcl_stem runs its own code path
(silhouette k-means, then STEM+ROOT per cluster) on a stand-in for the RGCN embeddings:
the profile's 12 PKA metrics, log1p and standardised. Usage::

    python bench/stem_bound.py /tmp/stemwl [--epsilon 0.05] [--draws 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from extra_samples import epsilon_arg, positive_int

ROOT = Path(__file__).resolve().parents[1]
SUITE = ["phi2", "pythia", "qwen1_5", "3mm", "lu", "bfs", "cfd", "lud", "nw", "backprop", "alexnet"]


def over(res, t: np.ndarray, eps: float, draws: int) -> int:
    from gclsampler.stem import stem_draw

    total = t.sum()
    return int(sum(abs(float(np.dot(w, t[i])) / total - 1.0) > eps for i, w in (stem_draw(res, s) for s in range(draws))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite_dir", type=Path)
    ap.add_argument("--epsilon", type=epsilon_arg, default=0.05)
    ap.add_argument("--draws", type=positive_int, default=200)  # 0 draws printed "0/0 ... PASS"
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from gclsampler.profile import PKA_METRICS, read_profile
    from gclsampler.samplers import GclStemSampler
    from gclsampler.stem import StemRootSampler
    from gclsampler.workload import Workload

    allowed = int(0.05 * args.draws)
    print(f"SYNTHETIC suite workloads, epsilon {args.epsilon:g}, {args.draws} draws each; "
          f"count = draws with |error| > epsilon (allowed {allowed})")
    print("| workload | invocations | kernel names | stem_root global | stem_root group | gcl_stem global |")
    print("|---|---|---|---|---|---|")
    worst, checked = 0, 0
    for name in SUITE:
        path = args.suite_dir / name / "profile.csv"
        if not path.exists():
            print(f"| {name} | (not generated: gclsampler synth {name} --out {args.suite_dir / name}) | | | | |")
            continue
        prof = read_profile(path)
        t = prof["time_ns"].to_numpy(dtype=np.float64)
        cells = [name, str(len(prof)), str(prof["kernel_name"].nunique())]
        for scope in ("global", "group"):
            s = StemRootSampler(epsilon=args.epsilon, random_state=0, scope=scope)
            s.fit(Workload(name, prof, synthetic=True))
            k = over(s.result_, t, args.epsilon, args.draws)
            worst = max(worst, k)
            inv = s.result_.invocations
            cells.append(f"{k} ({inv.size} samples, {t.sum() / t[inv].sum():.1f}x)")
        x = np.log1p(prof[[c for c in PKA_METRICS if c in prof.columns]].to_numpy(dtype=np.float64))
        emb = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)
        g = GclStemSampler(cluster=dict(k_max=min(12, max(2, len(prof) - 1))), epsilon=args.epsilon, strata="gcl",
                           random_state=0)  # the GCL-cluster path; auto may fall back to the names
        g.fit(Workload(name, prof, embeddings=emb, synthetic=True))
        k = over(g.stem_, t, args.epsilon, args.draws)
        worst = max(worst, k)
        inv = g.stem_.invocations
        cells.append(f"{k} (k={g.k_}, {inv.size} samples, {t.sum() / t[inv].sum():.1f}x)")
        print("| " + " | ".join(cells) + " |", flush=True)
        checked += 1
    if not checked:  # nothing was checked: not a PASS
        print(f"stem_bound: no suite workload under {args.suite_dir} (no <w>/profile.csv; "
              f"gclsampler synth NAME --out {args.suite_dir / 'NAME'})", file=sys.stderr)
        return 2
    print(f"worst: {worst}/{args.draws} draws over epsilon: {'PASS' if worst <= allowed else 'FAIL'}")
    return 0 if worst <= allowed else 1


if __name__ == "__main__":
    sys.exit(main())
