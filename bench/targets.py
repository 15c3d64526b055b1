"""Does ``gcl`` meet issue 12's targets? A per-run table over evaluate.py runs (SYNTHETIC suites).

Issue 12 ("GCL that sees the whole kernel") states what ``gcl`` must reach on
``python evaluate.py suite=full`` with plans on Turing: a mean cycle error of at most 2 %, no
workload above 5 %, lower error than each of pka, sieve and photon on at least 8 of the 11
workloads at an arithmetic-mean speedup no lower than pka's, ``gcl_stem`` (ε = 0.25) on the
Pareto front against ``stem_root`` (ε = 0.25: error no higher and speedup no lower) on at
least 9, and a cross-arch mean of at most 3 %. One run is one draw of the workloads and of the
ground truth's run-to-run jitter, so this script reads several runs (synthesis seeds) and says
on how many each target holds. It reads only what the runs' ``results.csv`` hold, through
``gclsampler.compare`` (the same summaries ``gclsampler compare`` tabulates), so every number
matches that report.

``--second-run`` judges every plan-arch error on the second run no method read
(``error_cycles_rerun``, ``gclsampler.compare.on_second_run``); speedups and cross-arch errors
are the same plans' either way. "At most N possible" counts, from ``head_to_head_counts``, say
where a rival is exact (0 %, a census or one kernel per cluster), so no plan can be lower there.
"Chance of ≥ 8" is the probability of that count if each plan's error were only the draw of
its members (``score.chance_at_least`` on the spreads the report's head-to-head table uses;
equal errors count as a tie, as there): near 0 means the count needs tighter clusters, not a
luckier draw.
Usage::

    python evaluate.py suite=full seed=S data_dir=DATA_S out_dir=RUN_S     # for S = 0 .. 6
    python bench/targets.py RUN_0 ... RUN_6 [--second-run]
    python bench/targets.py multirun/evaluate/<time>        # a sweep directory: its jobs' runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RIVALS = ("pka", "sieve", "photon")
LOWER_ON = 8  # of the 11 workloads
NEEDED = ("gcl", "gcl_stem", "stem_root", *RIVALS)


def run_targets(summary, per_run, arch: str) -> dict:
    """Issue 12's measures for one run: ``summary`` its ``score.summarize`` rows, ``per_run`` its
    rows of ``compare.per_run_table`` (suite means, worst workload, cross-arch), by method."""
    from gclsampler.score import TIE, head_to_head_counts, speedup_no_lower

    gcl, pka = per_run.loc["gcl"], per_run.loc["pka"]
    h2h = head_to_head_counts(summary, "gcl", arch, list(RIVALS), at_least=LOWER_ON).set_index("method")
    own = summary[summary["arch"] == arch].set_index(["method", "workload"])
    stem, root = own.loc["gcl_stem"], own.loc["stem_root"].reindex(own.loc["gcl_stem"].index)
    on_front = (stem["error_cycles"] <= root["error_cycles"] + TIE) & speedup_no_lower(stem["speedup_mean"],
                                                                                      root["speedup_mean"])
    return {
        "mean": float(gcl["error_cycles"]),
        "worst": (float(gcl["worst_error"]), str(gcl["worst_workload"])),
        "lower": {m: (int(h2h.loc[m, "lower"]), int(h2h.loc[m, "max_lower"])) for m in RIVALS},
        "over": {m: (int(h2h.loc[m, "n_workloads"]), int(h2h.loc[m, "of_workloads"])) for m in RIVALS},
        "chance": {m: float(h2h.loc[m, "chance_at_least"]) for m in RIVALS},
        "speedup": (float(gcl["speedup_mean"]), float(pka["speedup_mean"])),
        "front": (int(on_front.sum()), int(len(on_front))),
        "cross": float(gcl["error_cross_arch"]),
    }


def _percent(p: float) -> str:
    if not np.isfinite(p):
        return "n/a"  # a rival without spreads (stochastic methods average several plans)
    return "0 %" if p == 0 else f"{100 * p:.1f} %" if p >= 0.001 else "< 0.1 %"


def _speedup(x: float) -> str:
    """A mean speedup cell: n/a where it is not finite (report.py's ``INFINITE_SPEEDUP`` says why), as
    compare.md shows it; "inf" was printed as if it were a measurement."""
    return f"{x:.1f}" if np.isfinite(x) else "n/a"


def _speedup_pair(a: float, b: float) -> str:
    """``gcl / pka`` speedups, with as many decimals (up to 4) as it takes to show which is
    higher: seed 0's 50.4386 against 50.4425 printed "50.4 / 50.4×" beside a failed count."""
    digits = 1
    if np.isfinite(a) and np.isfinite(b) and a != b:
        while digits < 4 and f"{a:.{digits}f}" == f"{b:.{digits}f}":
            digits += 1
    fmt = (lambda x: f"{x:.{digits}f}") if digits > 1 else _speedup
    return f"{fmt(a)} / {fmt(b)}" + ("×" if np.isfinite(b) else "")


INFINITE_SPEEDUP_HOLDS = "An infinite speedup is still no lower than any other."
"""Why an n/a gcl speedup can hold the "speedup ≥ pka's" target; what n/a is, report.py's
``INFINITE_SPEEDUP`` says, in the words report.md and compare.md use for the same cells."""


def _pct(x: float) -> str:
    """An error cell: n/a where the run has no number (no other arch, no cycle counts), as
    compare.md shows it; "nan" was printed as if it were a measurement."""
    return f"{x:.2f}" if np.isfinite(x) else "n/a"


def _lower_cell(lower: int, n: int, of: int) -> str:
    """A head-to-head count, with "(over k of n)" when it was counted on k < n workloads (a
    workload without cycle counts has no error to compare), as report.md's and compare.md's
    head-to-head cells say it: a bare count read as one over every workload."""
    return f"{lower} (over {n} of {of})" if n < of else str(lower)


def _holds(values: list[float], limit: float) -> int | str:
    """On how many runs ``value <= limit``; a run without a value (NaN) is named apart, not
    counted as a miss: a target it was never measured on did not fail there."""
    held = sum(bool(v <= limit) for v in values)
    missing = sum(not np.isfinite(v) for v in values)
    return held if not missing else f"{held} of {len(values)}; n/a on {missing}" if missing < len(values) \
        else f"n/a on {missing} of {len(values)}"


NO_CROSS_ARCH = ("n/a cross-arch: the run scored its plans on no arch but the one they were fitted on "
                 "(evaluate.py's suite.archs), or its other archs have no cycle counts, so that target was not "
                 "measured there; n/a is not counted as a miss.")


def target_rows(per_run: list[dict]) -> list[tuple[str, list[str], int | str]]:
    """(target, cell per run, on how many runs it holds; for a chance row, its mean over runs)."""
    rows = [
        ("`gcl` mean ≤ 2 %", [_pct(t["mean"]) for t in per_run], _holds([t["mean"] for t in per_run], 2.0)),
        ("no workload above 5 %", [f"{_pct(t['worst'][0])} {t['worst'][1]}".strip() for t in per_run],
         _holds([t["worst"][0] for t in per_run], 5.0)),
    ]
    for m in RIVALS:
        most = max(t["lower"][m][1] for t in per_run)
        rows.append((f"lower than {m} on ≥ {LOWER_ON} (at most {most} possible)",
                     [_lower_cell(t["lower"][m][0], *t["over"][m]) for t in per_run],
                     sum(t["lower"][m][0] >= LOWER_ON for t in per_run)))
        chance = [t["chance"][m] for t in per_run]
        rows.append((f"chance of ≥ {LOWER_ON} lower than {m}, from the spreads", [_percent(p) for p in chance],
                     f"mean {_percent(float(np.mean(chance)))}"))
    rows += [
        ("speedup ≥ pka's (gcl / pka)", [_speedup_pair(a, b) for a, b in (t["speedup"] for t in per_run)],
         sum(a >= b for a, b in (t["speedup"] for t in per_run))),
        ("`gcl_stem` on stem_root's front on ≥ 9", [str(t["front"][0]) for t in per_run],
         sum(t["front"][0] >= 9 for t in per_run)),
        ("cross-arch mean ≤ 3 %", [_pct(t["cross"]) for t in per_run], _holds([t["cross"] for t in per_run], 3.0)),
    ]
    return rows


def data_stamp(runs, workloads: list[str], methods: list[str]) -> str:
    """What the judged rows' ground truth is, from their results.csv (``report.plot_stamp``):
    the line said "SYNTHETIC unless the runs say otherwise" even of runs that all say REAL."""
    import pandas as pd

    from gclsampler.compare import main_rows
    from gclsampler.report import plot_stamp

    rows = pd.concat([main_rows(r, workloads, methods) for r in runs], ignore_index=True)
    return (plot_stamp(rows, labelled_in="each run's report.md")
            or "UNLABELLED DATA (the runs' workload.json files say neither synthetic nor real)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path,
                    help="evaluate.py out_dirs (each with results.csv), their results.csv files, or a directory of "
                         "them (a multirun sweep directory), as `gclsampler compare` reads them")
    ap.add_argument("--second-run", action="store_true",
                    help="judge plan-arch errors on the second run no method read (error_cycles_rerun)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from gclsampler.compare import common_to_all, expand_runs, load_runs, per_run_table, run_summaries
    from gclsampler.errors import GclError
    from gclsampler.report import INFINITE_SPEEDUP, has_infinite_speedup

    earlier: list[Path] = []
    try:
        runs = load_runs(expand_runs(args.runs, earlier=earlier), reference="gcl", second_run=args.second_run)
    except GclError as e:
        print(f"targets: {e}", file=sys.stderr)
        return 2
    for job in earlier:
        print(f"targets: {job}: a job of an earlier multirun in its directory (older than multirun.yaml); left out",
              file=sys.stderr)
    workloads, methods, _ = common_to_all(runs)
    missing = [m for m in NEEDED if m not in methods]
    if missing:
        print(f"targets: method {missing[0]!r} is not in every run (the targets need {', '.join(NEEDED)}; "
              "run evaluate.py with suite=full)", file=sys.stderr)
        return 2
    arch = str(runs[0].results["plan_arch"].iloc[0])
    summaries = run_summaries(runs, workloads, methods)
    table = per_run_table(runs, workloads, methods, summaries=summaries)
    per_run = [run_targets(s, table[table["run"] == r.label].set_index("method"), arch)
               for r, s in zip(runs, summaries)]
    judged = f"the second run of {arch}, which no method read" if args.second_run else f"the {arch} profile"
    print(f"{data_stamp(runs, workloads, methods)}; plans on {arch}, errors on {judged}; "
          f"{len(workloads)} workloads per run")
    header = ["target", *[r.label for r in runs], f"holds on, {len(runs)} run{'' if len(runs) == 1 else 's'}"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for target, cells, holds in target_rows(per_run):
        last = holds if isinstance(holds, str) else f"{holds} of {len(runs)}"
        print(f"| {target} | " + " | ".join(cells) + f" | {last} |")
    if has_infinite_speedup(*(t["speedup"] for t in per_run)):
        print(f"\n{INFINITE_SPEEDUP} {INFINITE_SPEEDUP_HOLDS}")
    if not all(np.isfinite(t["cross"]) for t in per_run):
        print(f"\n{NO_CROSS_ARCH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
