"""``gclsampler compare RUN RUN ... --out DIR``: evaluate.py runs side by side with their spread."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gclsampler.cli._args import path_arg


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Combine the results.csv of several `python evaluate.py` runs (usually one per synthesis seed: "
        "`python evaluate.py -m seed=0,1,2 'data_dir=workloads/seed${seed}'`) into compare.md: each method's "
        "mean error, worst workload, cross-arch error and speedup as mean ± sd over the runs, the per-run rows, "
        "a head-to-head count of --reference against every other method beside what chance alone would give "
        "(from the plans' spread_sd) and the most that is possible where the rival is exact, and a per-workload "
        "table. Nothing "
        "is refitted or rescored. A multirun writes the same files into its sweep directory by itself."
    )
    parser.add_argument("runs", nargs="+", type=path_arg,
                        help="evaluate.py output directories or their results.csv files; a directory without "
                             "results.csv stands for the runs inside it (a multirun sweep directory)")
    parser.add_argument("--out", type=path_arg, required=True,
                        help="directory for compare.md, compare*.csv and plots/ (new, empty, or an earlier "
                             "`gclsampler compare` output, which is replaced as a whole)")
    parser.add_argument("--reference", default=None, help="method counted head to head against the others "
                                                          "(default gcl, or the first method when a run lacks gcl)")
    parser.add_argument("--second-run", action="store_true",
                        help="judge every plan on the second run of its arch (results.csv's error_cycles_rerun, "
                             "scored on profiles/<arch>_rerun.csv, which no method read) instead of the profile it "
                             "was fitted on: every error, worst cell, head-to-head and Pareto count; a run without "
                             "it is refused")
    parser.add_argument("--no-plots", action="store_true", help="tables only (matplotlib costs a few seconds)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from gclsampler._safe_out import replace_dir
    from gclsampler.compare import expand_runs, load_runs, write_comparison

    left_out: list[Path] = []
    earlier: list[Path] = []
    paths = expand_runs(args.runs, left_out, earlier)
    runs = load_runs(paths, args.reference, second_run=args.second_run)  # all read and checked before any output
    # a run named by its results.csv is its directory all the same: --out r1/cmp beside r1/results.csv
    # was written into the run, where --out inside a run named as a directory is refused
    dirs = [Path(p).parent if Path(p).is_file() else Path(p) for p in paths]
    with replace_dir(args.out, "compare", inputs=dirs) as tmp:  # an error leaves no half-written --out
        write_comparison(runs, tmp, reference=args.reference, plots=not args.no_plots)
    print(f"{args.out / 'compare.md'}: {len(runs)} run{'s' if len(runs) != 1 else ''} compared")
    for job in left_out:  # after the work: an error above stays the one line it is
        print(f"gclsampler: warning: {job}: no results.csv (a job that failed or is still running); left out",
              file=sys.stderr)
    for job in earlier:
        print(f"gclsampler: warning: {job}: results.csv older than {job.parent / 'multirun.yaml'} (a job of an earlier "
              "multirun in this directory); left out: name it to compare it", file=sys.stderr)
    return 0
