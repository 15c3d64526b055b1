"""Should gcl also cut its clusters by measured time, as ROOT does? A study on an evaluate.py run (SYNTHETIC).

gcl's work split cuts a cluster whose members' SM-0 instructions span more than
``cluster.split_tolerance``. Work that runs on other SMs (a BFS frontier) or a launch slowed by
cold caches is not in an SM-0 trace, so such members stay together. The profile's measured times
do see it, and every gclsampler workload has them (``time_ns`` is a required profile.csv
column). This script takes the clusters gcl used in a run (re-clustered from its embeddings with
the plan's settings), additionally cuts every cluster whose ``time_ns`` on the plan's arch spans
more than TOL in log2 (0.5: 1.41x, the work split's default) at its widest gap, picks medoids as
gcl does, and prints the cycle error on the plan's arch and on the other archs, the any-member
error (expected over uniformly drawn representatives, the jitter-free measure) and the
arithmetic-mean speedup, beside gcl with its work split tightened instead
(``--work-tolerances``), the knob that already trades speed for accuracy, and beside a cut only
where a cluster's sorted log2 times have a gap wider than G (``--gaps``: two populations, not one
population spread by jitter or by a smooth trend), and beside a cut on the profile's whole-grid
``inst_executed`` instead of time (``--inst-tolerances``: work on every SM, without jitter).
``--shares`` replaces gcl's own share cut (``cluster.time_split_share``: cut a cluster while a
representative drawn from it would miss by more than that share of the workload's time) by
other shares, 0 being gcl with no time cut at all. Every plan is also scored on an independent
second run of the same arch where there is one: the data dir's ``<w>/profiles/<arch>_rerun.csv``
(``evaluate.py`` synthesizes it), or ``DIR/<w>/<arch>_rerun.csv`` with ``--rerun DIR``
(``bench/rerun_profiles.py``, for a data dir made before). The profile the cuts read is then
not the run they are scored on, so a cut that only follows one run's jitter gains nothing there.
Usage::

    python evaluate.py suite=full out_dir=RUN data_dir=DATA_DIR       # the run studied
    python bench/time_split.py RUN DATA_DIR [--tolerances 0,0.5,0.7,1.0] [--shares 0,0.02,0.04] [--gaps 0.5]
                               [--rerun RERUN_DIR] [--arch turing]

TOL 0 is gcl's plan as it is (the script checks that its representatives equal the plan's); TOL > 0 is
what ``cluster.time_split_tolerance=TOL`` makes gcl do (``gclsampler.cluster.cut_by_time``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from extra_samples import cross_arch_cell, float_list, nothing_found, positive_int, suite_runs

CROSS = ("turing", "ampere", "ada")


def cut_at_gaps(labels: np.ndarray, log_time: np.ndarray, gap: float) -> np.ndarray:
    """``labels`` with each cluster cut wherever two neighbours in sorted ``log_time`` are more than
    ``gap`` apart; labels renumbered by first appearance. Unlike the span cut, a cluster whose
    times spread smoothly (jitter, a shrinking LU trailing matrix) stays whole however wide it is."""
    from gclsampler.cluster import _compact

    order = np.lexsort((log_time, labels))
    new = np.r_[True, (labels[order][1:] != labels[order][:-1]) | (np.diff(log_time[order]) > gap)]
    out = np.empty_like(labels)
    out[order] = np.cumsum(new) - 1
    return _compact(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="an evaluate.py out_dir (train/<w>/embeddings.npy, plans/<w>/gcl.json)")
    ap.add_argument("data_dir", type=Path, help="its data_dir (<w>/profiles/<arch>.csv)")
    ap.add_argument("--arch", default="turing", help="the arch the plans were made on")
    ap.add_argument("--tolerances", default="0,0.5,0.7,1.0", help="log2 spans of time_ns allowed in a cluster; 0 = no cut")
    ap.add_argument("--work-tolerances", default="0.3,0.2",
                    help="for comparison: gcl with only cluster.split_tolerance (SM-0 work) lowered to these")
    ap.add_argument("--gaps", default="",
                    help="also: cut clusters only at gaps between sorted log2 time_ns wider than these")
    ap.add_argument("--inst-tolerances", default="",
                    help="also: gcl then cut where the profile's log2 inst_executed spans more than these")
    ap.add_argument("--shares", default="",
                    help="also: gcl with its share cut at these shares instead of the plan's (0 = no time cut)")
    ap.add_argument("--rerun", type=Path, default=None,
                    help="score the second run in DIR/<w>/<arch>_rerun.csv (bench/rerun_profiles.py) instead of "
                         "the data dir's <w>/profiles/<arch>_rerun.csv")
    ap.add_argument("--draws", type=positive_int, default=2000)
    args = ap.parse_args()
    if args.rerun is not None and not args.rerun.is_dir():  # every workload's rerun column went n/a, exit 0
        ap.error(f"--rerun {args.rerun}: no such directory")
    from gclsampler.cluster import cluster_embeddings, cut_by_time, representative_work, representatives
    from gclsampler.plan import plan_from_labels
    from gclsampler.profile import read_profile, rerun_arch
    from gclsampler.score import any_member_error, score_plan

    tols = float_list(ap, "--tolerances", args.tolerances)
    work_tols = float_list(ap, "--work-tolerances", args.work_tolerances, empty_ok=True)
    gaps = float_list(ap, "--gaps", args.gaps, empty_ok=True)
    inst_tols = float_list(ap, "--inst-tolerances", args.inst_tolerances, empty_ok=True)
    shares = float_list(ap, "--shares", args.shares, empty_ok=True)
    variants = ([("time", t) for t in tols] + [("share", x) for x in shares] + [("work", t) for t in work_tols]
                + [("gap", g) for g in gaps] + [("inst", t) for t in inst_tols])
    rows: dict[tuple[str, float], list[tuple[str, float, float, float, float, int, float]]] = {v: [] for v in variants}
    for name, emb, gcl_plan, base, prof in suite_runs(args.run_dir, args.data_dir, args.arch):
        cfg = gcl_plan["config"]
        others = [read_profile(path) for path in (args.data_dir / name / "profiles" / f"{a}.csv"
                                                  for a in CROSS if a != args.arch) if path.exists()]
        names = prof["kernel_name"].to_numpy()
        seed = cfg.get("cluster_random_state", 0)
        time_ns = prof["time_ns"].to_numpy(np.float64)
        rerun_path = (args.rerun / name if args.rerun else args.data_dir / name / "profiles") / \
            f"{rerun_arch(args.arch)}.csv"
        rerun = read_profile(rerun_path) if rerun_path.exists() else None
        if rerun is None:
            print(f"{name}: no {rerun_path}; its rerun column is left out", file=sys.stderr)
        # gcl's k-means and work split before any time cut: what every --shares variant cuts
        uncut = cluster_embeddings(emb, cfg["cluster"], seed) if shares else None
        work = representative_work(emb, cfg["cluster"])  # what a work_mean plan's cuts pick by
        for kind, tol in variants:
            if kind == "work":
                res = cluster_embeddings(emb, {**cfg["cluster"], "split_tolerance": tol}, seed)
            elif kind == "share":  # gcl's k-means and work split, then only this share cut
                res = cut_by_time(uncut, emb.astype(np.float64), time_ns, 0.0, cfg["cluster"]["representative"],
                                  seed, share=tol, work=work)
            elif kind == "inst":  # the same cut on whole-grid instructions (never 0: floor 1)
                inst = np.maximum(prof["inst_executed"].to_numpy(np.float64), 1.0)
                res = cut_by_time(base, emb.astype(np.float64), inst, tol, cfg["cluster"]["representative"], seed,
                                  work=work)
            elif kind == "gap":
                labels = cut_at_gaps(base.labels, np.log2(time_ns), tol)
                reps = representatives(labels, emb.astype(np.float64), cfg["cluster"]["representative"], seed, work)
                res = replace(base, labels=labels, k=int(labels.max()) + 1, representatives=reps,
                              sizes=np.bincount(labels))
            else:  # what gcl does with cluster.time_split_tolerance=tol
                res = cut_by_time(base, emb.astype(np.float64), time_ns, tol,
                                  cfg["cluster"]["representative"], seed, work=work)
            if (kind, tol) == ("time", 0) and \
                    sorted(res.representatives.tolist()) != sorted(s["invocation"] for s in gcl_plan["samples"]):
                print(f"{name}: re-clustering does not reproduce plans/{name}/gcl.json; rerun with this checkout",
                      file=sys.stderr)
                return 2
            plan = plan_from_labels(name, "gcl", res.labels, res.representatives, names)
            own = score_plan(plan, prof)
            cross = float(np.mean([score_plan(plan, o)["error_cycles"] for o in others])) if others else float("nan")
            any_member = any_member_error(plan, res.labels, prof["cycles"].to_numpy(np.float64), args.draws)
            again = score_plan(plan, rerun)["error_cycles"] if rerun is not None else float("nan")
            rows[(kind, tol)].append((name, own["error_cycles"], cross, any_member, own["speedup"], res.k, again))

    if not any(rows.values()):
        return nothing_found("time_split", args.run_dir, args.data_dir, args.arch)
    print(f"SYNTHETIC, plans on {args.arch}; cycle error of the plan, mean over workloads")
    print("| plan | error (worst) | cross-arch | any-member error | arithmetic speedup | simulated | "
          f"error on a rerun of {args.arch} (worst) |")
    print("|---|---|---|---|---|---|---|")
    for (kind, tol), r in rows.items():
        worst = max(r, key=lambda v: v[1])
        scored = [v for v in r if not np.isnan(v[6])]
        again = (f"{np.mean([v[6] for v in scored]):.2f} % ({max(scored, key=lambda v: v[6])[6]:.2f} % "
                 f"{max(scored, key=lambda v: v[6])[0]}), {len(scored)} workloads") if scored else "n/a"
        label = {"time": "gcl" if tol == 0 else f"gcl + time cut at {tol:g} ({2 ** tol:.2f}x)",
                 "share": "gcl, no time cut" if tol == 0 else f"gcl, share cut at {tol:g}",
                 "work": f"gcl, split_tolerance {tol:g} ({2 ** tol:.2f}x), no time cut",
                 "gap": f"gcl + cut at time gaps over {tol:g} ({2 ** tol:.2f}x)",
                 "inst": f"gcl + inst_executed cut at {tol:g} ({2 ** tol:.2f}x)"}[kind]
        print(f"| {label} | {np.mean([v[1] for v in r]):.2f} % "
              f"({worst[1]:.2f} % {worst[0]}) | {cross_arch_cell([v[2] for v in r])} | "
              f"{np.mean([v[3] for v in r]):.2f} % | {np.mean([v[4] for v in r]):.1f}x | {sum(v[5] for v in r)} | {again} |")
    print("per workload, error / speedup (error on the rerun in brackets, where there is one):")
    for (kind, tol), r in rows.items():
        print(f"  {kind} {tol:g}: " + ", ".join(
            f"{v[0]} {v[1]:.2f} %" + ("" if np.isnan(v[6]) else f" [{v[6]:.2f} %]") + f"/{v[4]:.0f}x" for v in r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
