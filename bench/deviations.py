"""What does each of gcl's departures from the GCL-Sampler paper buy? A ladder on an evaluate.py run (SYNTHETIC).

``gcl_paper`` is the paper's method as stated: its encoder (opcode and PC features, mean
readout; ``model=paper``), K by silhouette, the first invocation of each cluster. ``gcl`` is this
project's: instruction statistics and the size vector in the embedding (``model=default``), the
work split, the share cut, the member nearest its cluster's mean work. An ``evaluate.py`` run
trains both encoders on every workload, so this script can re-cluster each one's embeddings with
one change at a time and score every rung on the same ground truth (nothing is trained again):

1. ``paper``: gcl_paper as the run made it (checked to reproduce plans/<w>/gcl_paper.json);
2. ``paper + medoid``: the paper encoder, its clusters, the medoid instead of the first member;
3. ``encoder``: the project's encoder (instruction statistics, size vector in z), silhouette K,
   first member, no work split;
4. ``encoder + medoid``;
5. ``encoder + medoid + work split``;
6. ``encoder + medoid + work split + share cut``: the share cut (``cluster.time_split_share``)
   reads the profile's times; gcl as it was before the work_mean representative;
7. ``encoder + work_mean + work split + share cut``: gcl with its defaults. Whichever of 6 and 7
   has the run's own settings is checked to reproduce plans/<w>/gcl.json;
8. ``encoder + work split, first member``: what the split does without the medoid.

Each rung prints the plan's cycle error on the plan's arch, on a second run of it where the data
dir has one (``profiles/<arch>_rerun.csv``, which ``evaluate.py`` synthesizes and no rung reads:
the share cut reads the fitted run's times), its cross-arch error on the other archs, the
any-member error (expected over representatives redrawn uniformly from their clusters: the
quality of the clusters apart from which member was picked), the arithmetic-mean speedup, and
the invocations simulated. Usage::

    python evaluate.py suite=full out_dir=RUN data_dir=DATA_DIR       # the run studied
    python bench/deviations.py RUN DATA_DIR [--arch turing] [--draws 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from extra_samples import ROOT, SUITE, cross_arch_cell, gcl_clusters, mean_and_worst, positive_int, print_study_table

CROSS = ("turing", "ampere", "ada")
# (label, which embeddings, representative, work split on, share cut on)
RUNGS = [
    ("paper (gcl_paper)", "paper", "first", False, False),
    ("paper + medoid", "paper", "medoid", False, False),
    ("encoder, first member", "project", "first", False, False),
    ("encoder + medoid", "project", "medoid", False, False),
    ("encoder + medoid + work split", "project", "medoid", True, False),
    ("encoder + medoid + work split + share cut", "project", "medoid", True, True),
    ("encoder + work_mean + work split + share cut (gcl)", "project", "work_mean", True, True),
    ("encoder + work split, first member", "project", "first", True, False),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path,
                    help="an evaluate.py out_dir (train/<w>/ and train/<w>-paper/embeddings.npy, plans/<w>/gcl*.json)")
    ap.add_argument("data_dir", type=Path, help="its data_dir (<w>/profiles/<arch>.csv)")
    ap.add_argument("--arch", default="turing", help="the arch the plans were made on")
    ap.add_argument("--draws", type=positive_int, default=2000, help="draws of the any-member error")
    args = ap.parse_args()
    for d in (args.run_dir, args.data_dir):  # a skipped line per workload never said the directory was not there
        if not d.is_dir():
            ap.error(f"{d}: no such directory")
    sys.path.insert(0, str(ROOT))
    from gclsampler.plan import plan_from_labels
    from gclsampler.profile import read_profile, rerun_arch
    from gclsampler.score import any_member_error, score_plan

    rows: dict[str, list[tuple[str, float, float, float, float, int, float]]] = {r[0]: [] for r in RUNGS}
    for name in SUITE:
        train, plans = args.run_dir / "train", args.run_dir / "plans" / name
        paths = {"project": (train / name / "embeddings.npy", plans / "gcl.json"),
                 "paper": (train / f"{name}-paper" / "embeddings.npy", plans / "gcl_paper.json")}
        prof_path = args.data_dir / name / "profiles" / f"{args.arch}.csv"
        fit_path = args.data_dir / name / "profile.csv"  # the times the share cut reads
        missing = [str(p) for pair in paths.values() for p in pair if not p.exists()]
        missing += [str(p) for p in (prof_path, fit_path) if not p.exists()]
        if missing:
            print(f"{name}: skipped (no {missing[0]})", file=sys.stderr)
            continue
        times = read_profile(fit_path)["time_ns"].to_numpy(np.float64)
        prof = read_profile(prof_path)
        second_path = args.data_dir / name / "profiles" / f"{rerun_arch(args.arch)}.csv"
        second = read_profile(second_path) if second_path.exists() else None
        others = [read_profile(p) for p in (args.data_dir / name / "profiles" / f"{a}.csv"
                                            for a in CROSS if a != args.arch) if p.exists()]
        names, cycles = prof["kernel_name"].to_numpy(), prof["cycles"].to_numpy(np.float64)
        gcl_cfg = json.loads(paths["project"][1].read_text())["config"]["cluster"]
        for label, which, rep, split, share in RUNGS:
            emb_path, plan_path = paths[which]
            made = json.loads(plan_path.read_text())["config"]
            cfg = {**made["cluster"], "representative": rep,
                   "split_tolerance": gcl_cfg["split_tolerance"] if split else 0.0,
                   "time_split_share": gcl_cfg.get("time_split_share", 0.0) if share else 0.0}
            res = gcl_clusters(np.load(emb_path), {**made, "cluster": cfg}, times)
            # the run's own plan (a run made before the share cut had none): the re-clustering must reproduce it
            if cfg == {"time_split_share": 0.0, **made["cluster"]}:
                want = sorted(s["invocation"] for s in json.loads(plan_path.read_text())["samples"])
                if sorted(res.representatives.tolist()) != want:
                    print(f"{name}: re-clustering does not reproduce {plan_path}; rerun with this checkout",
                          file=sys.stderr)
                    return 2
            plan = plan_from_labels(name, "gcl", res.labels, res.representatives, names)
            own = score_plan(plan, prof)
            cross = float(np.mean([score_plan(plan, o)["error_cycles"] for o in others])) if others else np.nan
            again = score_plan(plan, second)["error_cycles"] if second is not None else np.nan
            rows[label].append((name, own["error_cycles"], cross,
                                any_member_error(plan, res.labels, cycles, args.draws), own["speedup"], res.k, again))

    if not any(rows.values()):
        print(f"deviations: no suite workload has both encoders' embeddings and plans under {args.run_dir} "
              f"and <w>/profiles/{args.arch}.csv under {args.data_dir}", file=sys.stderr)
        return 2
    print_study_table(
        f"SYNTHETIC, plans on {args.arch}; cycle error, mean over workloads",
        ["rung", "error (worst)", f"on a second run of {args.arch} (worst)", "cross-arch", "any-member error",
         "arithmetic speedup", "simulated"], rows,
        lambda r: [mean_and_worst(r), mean_and_worst(r, 6) if all(np.isfinite(v[6]) for v in r) else "n/a",
                   cross_arch_cell([v[2] for v in r]), f"{np.mean([v[3] for v in r]):.2f} %",
                   f"{np.mean([v[4] for v in r]):.1f}x", str(sum(v[5] for v in r))])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
