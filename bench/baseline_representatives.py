"""Is gcl's lead over pka and sieve its clusters or its representatives? A study on an evaluate.py run (SYNTHETIC).

pka and sieve simulate the first-chronological member of each cluster (sieve: the first with
the dominant CTA count), as their papers prescribe; gcl simulates the member whose work is
nearest its cluster's mean (``cluster.representative=work_mean``). In the synthetic timing
model a kernel's first launch runs cold, so part of what separates the methods in a run's
``results.csv`` is the representative rule, not the grouping. This script refits pka and
sieve on each workload of a run with the run's own parameters (read from its plans), once with
their papers' rule and once with ``representative=work_mean`` (the member whose instruction
count is nearest its cluster's mean count; for pka the rule also picks the members whose
projected error chooses k), and scores every plan as ``evaluate.py`` does
(``gclsampler.score.evaluate_workload``): cycle error on the profile the plans were fitted on,
on the second run of that arch no method read (``profiles/<arch>_rerun.csv``), and speedup.
gcl's numbers are the run's own rows of ``results.csv``. Usage::

    python evaluate.py suite=full data_dir=DATA_DIR seed=0 out_dir=RUN      # the run studied
    python bench/baseline_representatives.py RUN DATA_DIR
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAPER_RULE = {"pka": "first", "sieve": "dominant_cta"}
"""What each method's paper simulates, its default ``representative``."""
MEASURES = (("error_cycles", "cycle error on the fitted run", "%"),
            ("error_cycles_rerun", "cycle error on the second run, which no method read", "%"),
            ("speedup_mean", "speedup (arithmetic)", "×"))


def run_params(run_dir: Path, workload: str, method: str, defaults: dict) -> dict:
    """The parameters ``method`` ran with on ``workload``: the constructor's keys of its saved
    plan's ``config`` (``plans/<w>/<method>.json``), else ``defaults`` (evaluate.py's)."""
    from gclsampler.evaluate import _registry

    plan = run_dir / "plans" / workload / f"{method}.json"
    if not plan.exists():
        return dict(defaults)
    config = json.loads(plan.read_text())["config"]
    names = set(inspect.signature(_registry()[method].__init__).parameters) - {"self", "random_state"}
    return {k: v for k, v in config.items() if k in names}


def load_fitted(wdir: Path, arch: str):
    """The workload with the profile of ``arch`` as its own, as ``evaluate.run_suite`` fits it."""
    from gclsampler.evaluate import fit_on_arch
    from gclsampler.workload import Workload

    workload = Workload.load(wdir)
    fit_on_arch(workload, arch)
    return workload


def rules_of(base: dict, method: str) -> tuple[str, str]:
    """(the paper's rule as the run used it, ``work_mean``): a run made with work_mean itself is
    compared with the paper's default."""
    rule = base.get("representative", PAPER_RULE[method])
    return (rule if rule != "work_mean" else PAPER_RULE[method]), "work_mean"


def refit(workload, run_dir: Path, seed: int, defaults: dict) -> tuple[list, dict[str, str]]:
    """``score.evaluate_workload`` rows of pka and sieve under each representative rule, on the
    plan arch only, ``method`` being ``"<method> <rule>"``; and per method the rule the run's
    own rows were made with."""
    from gclsampler.evaluate import fit_methods
    from gclsampler.score import evaluate_workload

    rows, used = [], {}
    for method in PAPER_RULE:
        base = run_params(run_dir, workload.name, method, defaults.get(method, {}))
        used[method] = base.get("representative", PAPER_RULE[method])
        for rule in rules_of(base, method):
            runs = fit_methods(workload, [method], {method: {**base, "representative": rule}}, n_seeds=1,
                               seed0=seed, unavailable=[])
            rows += [{**row, "method": f"{method} {rule}"} for row in evaluate_workload(workload, runs, [workload.arch])]
    return rows, used


def table(summary, workloads: list[str], columns: list[str], col: str, unit: str, reference: str) -> list[str]:
    """Markdown: one row per workload, a mean row and, for errors, where ``reference`` is lower."""
    from gclsampler.score import TIE

    v = summary.pivot_table(index="workload", columns="method", values=col, aggfunc="first", dropna=False)
    v = v.reindex(index=workloads, columns=columns)

    def cell(x: float) -> str:
        return "n/a" if not np.isfinite(x) else (f"{x:.2f} %" if unit == "%" else f"{x:.1f}×")

    out = ["| workload | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    out += [f"| {w} | " + " | ".join(cell(v.loc[w, c]) for c in columns) + " |" for w in workloads]
    out.append("| **mean** | " + " | ".join(cell(float(np.nanmean(v[c]))) if v[c].notna().any() else "n/a"
                                             for c in columns) + " |")
    if unit == "%":
        ref = v[reference].to_numpy(np.float64)
        counts = []
        for c in columns:
            if c == reference:
                counts.append("—")
                continue
            other = v[c].to_numpy(np.float64)
            known = np.isfinite(ref) & np.isfinite(other)
            counts.append(f"{int((ref[known] < other[known] - TIE).sum())} of {int(known.sum())}")
        out.append(f"| {reference} lower on | " + " | ".join(counts) + " |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="an evaluate.py out_dir (results.csv, plans/<w>/pka.json)")
    ap.add_argument("data_dir", type=Path, help="its data_dir (<w>/profile.csv, <w>/profiles/<arch>_rerun.csv)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import pandas as pd

    from gclsampler.compare import load_run, main_rows
    from gclsampler.errors import GclError
    from gclsampler.evaluate import EvaluateConfig
    from gclsampler.report import plot_stamp
    from gclsampler.score import summarize

    try:
        run = load_run(args.run_dir)
    except GclError as e:
        print(f"baseline_representatives: {e}", file=sys.stderr)
        return 2
    arch = str(run.results["plan_arch"].iloc[0])
    seed = run.seed if run.seed is not None else 0
    defaults = EvaluateConfig().method_params
    gcl = main_rows(run, list(run.results["workload"].unique()), ["gcl"])
    workloads = [w for w in dict.fromkeys(gcl["workload"]) if (args.data_dir / w / "profile.csv").exists()]
    skipped = [w for w in dict.fromkeys(gcl["workload"]) if w not in workloads]
    if not workloads:
        print(f"baseline_representatives: no workload of {run.path} with gcl rows has a profile.csv under "
              f"{args.data_dir}", file=sys.stderr)
        return 2
    rows: list = []
    used: dict[str, set] = {m: set() for m in PAPER_RULE}
    for w in workloads:
        print(f"{w} ...", file=sys.stderr)
        got, rule = refit(load_fitted(args.data_dir / w, arch), args.run_dir, seed, defaults)
        rows += got
        for m, r in rule.items():
            used[m].add((w, r))
    ours = summarize(pd.DataFrame(rows), sweep=False)
    theirs = summarize(main_rows(run, workloads, ["gcl", "pka", "sieve"]), sweep=False)
    summary = pd.concat([ours, theirs], ignore_index=True)
    summary = summary[summary["arch"] == arch]
    columns = [*dict.fromkeys(ours["method"]), "gcl"]
    # a refit with the rule the run used must reproduce the run's own pka and sieve rows: else the
    # run was made with other code or data, and its gcl rows are not a like-for-like comparison
    by = summary.set_index(["method", "workload"])["error_cycles"]
    for m in PAPER_RULE:
        for w, r in sorted(used[m]):
            if (m, w) in by.index and (f"{m} {r}", w) in by.index and not np.isclose(
                    by[(f"{m} {r}", w)], by[(m, w)], rtol=1e-9, atol=1e-9):
                print(f"warning: {w}: {m} refitted with representative={r} gives {by[(f'{m} {r}', w)]:.4f} %, "
                      f"the run's results.csv {by[(m, w)]:.4f} % (made by other code or data?)", file=sys.stderr)
    stamp = (plot_stamp(main_rows(run, workloads, ["gcl"]), labelled_in="the run's report.md")
             or "UNLABELLED DATA (the run's workload.json files say neither synthetic nor real)")
    if "SYNTHETIC" not in stamp:
        stamp = f"{stamp} (this study was written for SYNTHETIC runs)"
    print(f"{stamp}: pka and sieve refitted with their papers' representative and with work_mean "
          f"(gcl's rule, on instruction counts); gcl from {run.path}. Plans on {arch}, seed {seed}, "
          f"{len(workloads)} workloads.")
    if skipped:
        print(f"Skipped (no profile.csv under {args.data_dir}): {', '.join(skipped)}.")
    for col, what, unit in MEASURES:
        print(f"\n### {what}\n")
        print("\n".join(table(summary, workloads, columns, col, unit, "gcl")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
