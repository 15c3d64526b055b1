"""Which member should represent a gcl cluster? A study on an evaluate.py run (SYNTHETIC).

A plan scales its representative's time by the cluster size, so the best member is the one
whose time is the cluster's mean. gcl takes the member whose SM-0 work is nearest its cluster's
mean work (``cluster.representative=work_mean``, ``docs/plans.md``). This script keeps the
clusters gcl used in a run (re-clustered from its embeddings with the plan's settings, and
checked to reproduce the run's plan) and swaps only the representative rule:

- ``medoid``: the member nearest the cluster mean in embedding space, ties to the middle launch
  (``cluster.representative=medoid``; gcl's default before ``work_mean``);
- ``work_mean``: the member whose SM-0 instruction count (the size vector's column,
  ``cluster.split_column``) is nearest the members' arithmetic mean count, on the idea that
  time follows work; ties keep the medoid if it is tied, else go to the middle launch
  (gcl's default, ``gclsampler.cluster.nearest_mean_work``);
- ``time_mean``: the member whose profiled ``time_ns`` (the fitted run's, as gcl's time cuts
  read it) is nearest the members' mean time. On the fitted run this is close to the ideal by
  construction, so it is judged on the second run (``profiles/<arch>_rerun.csv``) alone;
- ``first``: the earliest member (the paper's rule; ``gcl_paper``);
- ``random``: a uniform member, averaged over ``--random-draws`` seeds: the expected error of
  a member drawn blindly (one draw alone can land anywhere, lower than the medoid or higher).

It prints the cycle error on the plan's arch, on a second run of it where the data dir has
one (``profiles/<arch>_rerun.csv``, which ``evaluate.py`` synthesizes: no rule read it), on the
other archs, and the speedup. Usage::

    python evaluate.py suite=full out_dir=RUN data_dir=DATA_DIR       # the run studied
    python bench/representatives.py RUN DATA_DIR [--rules medoid,work_mean,first,random] [--arch turing]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from extra_samples import cross_arch_cell, mean_and_worst, nothing_found, positive_int, print_study_table, suite_runs

CROSS = ("turing", "ampere", "ada")
RULES = ("medoid", "work_mean", "time_mean", "first", "random")


def nearest_mean_time(labels: np.ndarray, times_ns: np.ndarray) -> np.ndarray:
    """Per cluster, the member whose time is nearest the members' mean time (earliest if tied)."""
    k = int(labels.max()) + 1
    mean = np.bincount(labels, weights=times_ns, minlength=k) / np.bincount(labels, minlength=k)
    d = np.abs(times_ns - mean[labels])
    order = np.lexsort((np.arange(len(labels)), d, labels))  # by cluster, then distance, then launch
    return order[np.searchsorted(labels[order], np.arange(k))].astype(np.int64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="an evaluate.py out_dir (train/<w>/embeddings.npy, plans/<w>/gcl.json)")
    ap.add_argument("data_dir", type=Path, help="its data_dir (<w>/profiles/<arch>.csv)")
    ap.add_argument("--arch", default="turing", help="the arch the plans were made on")
    ap.add_argument("--rules", default=",".join(RULES), help=f"representative rules to compare: {', '.join(RULES)}")
    ap.add_argument("--random-draws", type=positive_int, default=50, help="seeds the random rule is averaged over")
    args = ap.parse_args()
    rules = [r for r in args.rules.split(",") if r]
    if not rules:  # reached "no suite workload has ... embeddings.npy", which was not what was missing
        ap.error(f"--rules: name at least one of {', '.join(RULES)}")
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        print(f"representatives: --rules: unknown rule {unknown[0]!r} (one of {', '.join(RULES)})", file=sys.stderr)
        return 2
    from gclsampler.cluster import nearest_mean_work, representatives
    from gclsampler.plan import plan_from_labels
    from gclsampler.profile import read_profile, rerun_arch
    from gclsampler.score import score_plan

    rows: dict[str, list[tuple[str, float, float, float, float, int]]] = {r: [] for r in rules}
    for name, emb, gcl_plan, base, prof in suite_runs(args.run_dir, args.data_dir, args.arch):
        second_path = args.data_dir / name / "profiles" / f"{rerun_arch(args.arch)}.csv"
        second = read_profile(second_path) if second_path.exists() else None
        fitted_times = read_profile(args.data_dir / name / "profile.csv")["time_ns"].to_numpy(np.float64)
        cfg = gcl_plan["config"]
        if sorted(base.representatives.tolist()) != sorted(s["invocation"] for s in gcl_plan["samples"]):
            print(f"{name}: re-clustering does not reproduce plans/{name}/gcl.json; rerun with this checkout",
                  file=sys.stderr)
            return 2
        others = [read_profile(path) for path in (args.data_dir / name / "profiles" / f"{a}.csv"
                                                  for a in CROSS if a != args.arch) if path.exists()]
        names = prof["kernel_name"].to_numpy()
        medoid = representatives(base.labels, emb.astype(np.float64), "medoid", 0)
        for rule in rules:
            if rule == "medoid":
                reps = medoid
            elif rule == "work_mean":
                reps = nearest_mean_work(base.labels, emb[:, cfg["cluster"].get("split_column", -6)], medoid)
            elif rule == "time_mean":
                reps = nearest_mean_time(base.labels, fitted_times)
            elif rule == "first":
                reps = representatives(base.labels, None, "first", 0)
            scored = []
            for draw in range(args.random_draws if rule == "random" else 1):
                if rule == "random":
                    reps = representatives(base.labels, None, "random", draw)
                plan = plan_from_labels(name, "gcl", base.labels, reps, names)
                own = score_plan(plan, prof)
                again = score_plan(plan, second)["error_cycles"] if second is not None else np.nan
                cross = float(np.mean([score_plan(plan, o)["error_cycles"] for o in others])) if others else np.nan
                scored.append((own["error_cycles"], again, cross, own["speedup"],
                               int((reps != base.representatives).sum())))
            rows[rule].append((name, *np.mean(scored, axis=0).tolist()))

    if not any(rows.values()):
        return nothing_found("representatives", args.run_dir, args.data_dir, args.arch)
    print_study_table(
        f"SYNTHETIC, gcl's clusters, plans on {args.arch}; cycle error of the plan, mean over workloads",
        ["representative", "error (worst)", f"on a second run of {args.arch} (worst)", "cross-arch",
         "arithmetic speedup", "representatives moved"], rows,
        lambda r: [mean_and_worst(r), mean_and_worst(r, 2) if all(np.isfinite(v[2]) for v in r) else "n/a",
                   cross_arch_cell([v[3] for v in r]), f"{np.mean([v[4] for v in r]):.1f}x",
                   f"{sum(v[5] for v in r):.0f}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
