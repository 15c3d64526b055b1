"""Several ``evaluate.py`` runs side by side, usually one per synthesis seed.

Why: a synthesis seed is one draw of the workloads' inputs and of the run-to-run jitter
of their ground truth. With one representative per cluster, much of a plan's error on a
workload is that draw (README, "Across synthesis seeds"), so a method's mean error, its
worst workload and a head-to-head count can all flip from one seed to the next. A
sampler should be chosen on numbers over several draws, with their spread shown. This
module reads the runs' ``results.csv`` files; it never refits or rescores anything.

Every statistic is built on ``gclsampler.score.summarize`` / ``suite_averages`` of each
run, so a run's row here is exactly the row its own ``report.md`` shows.
"""

from __future__ import annotations

import math
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from gclsampler._atomic import write_text_atomic
from gclsampler._safe_out import _HydraCallback, first_line, job_order
from gclsampler.errors import GclError
from gclsampler.plan import numeric_column
from gclsampler.score import (TIE, EvaluationError, averaged_columns, head_to_head_counts, method_sort_key, summarize,
                              suite_averages)

__all__ = ["EvaluationRun", "load_run", "run_summaries", "per_run_table", "across_runs", "head_to_head",
           "per_workload_table", "write_comparison", "load_runs", "compare_dirs", "find_runs", "expand_runs",
           "data_of", "check_comparison_files", "CompareCallback"]

_NUMERIC = ("seed", "epsilon", "error_cycles", "speedup", "n_simulated", "n_invocations")
_FLAGS = ("cross_arch", "sweep", "stochastic", "synthetic")
_REQUIRED = ("workload", "method", "arch", "plan_arch", *_NUMERIC, *_FLAGS)
_ERRORS = ("error_cycles", "error_cycles_any_member", "error_cycles_rerun")
"""The error columns compare.md shows: absolute errors in %, so never negative."""
_INTEGRAL = ("seed", "n_invocations")
_TITLE = "gclsampler: evaluation runs compared"
_ROW_KEY = ("workload", "method", "arch", "seed", "epsilon", "sweep")
"""What one results.csv row is the score of: evaluate.py writes one row per key."""


@dataclass(frozen=True)
class EvaluationRun:
    """One ``evaluate.py`` run: its ``results.csv`` rows and the synthesis seed they came from.

    ``seed`` is the seed of the deterministic methods' rows, which is ``evaluate.py``'s
    ``seed`` (stochastic methods count up from it); None when every row is stochastic.
    """

    label: str
    path: Path
    seed: int | None
    results: Any  # pandas.DataFrame
    second_run: bool = False  # plan-arch errors are the second run's (``on_second_run``)
    unavailable: frozenset = frozenset()  # (workload, method) the run's unavailable.csv says could not run


def errors_on(run: EvaluationRun) -> str:
    """The ``errors_on`` cell of compare's CSVs: ``second_run`` when the run's plan-arch errors
    (``error_cycles``, and every count made from them) are its second run's (``on_second_run``),
    else ``fitted_run``. Why: under ``--second-run`` compare.csv's ``error_cycles`` held second-run
    errors under the fitted run's column name, and nothing in the file said so."""
    return "second_run" if run.second_run else "fitted_run"


def on_second_run(run: EvaluationRun) -> EvaluationRun:
    """The run with each plan-arch row's cycle error replaced by the same plan's error on the
    second run of that arch (``error_cycles_rerun``), so that every table, head-to-head count and
    Pareto count of the comparison judges the plans on a run no method read. Cross-arch rows
    keep theirs. A run without a second run for every plan-arch row is refused: a mean over
    some workloads' second runs and others' fitted runs would compare nothing."""
    df = run.results
    own = ~df["cross_arch"].to_numpy(dtype=bool)
    if "error_cycles_rerun" not in df.columns:
        raise EvaluationError(f"{run.path}:1: error_cycles_rerun: missing column (results.csv written before "
                              "evaluate.py scored plans on a second run)")
    values = numeric_column(df, "error_cycles_rerun", run.path, EvaluationError)
    missing = own & ~np.isfinite(values) & np.isfinite(df["error_cycles"].to_numpy(dtype=float))
    if missing.any():
        r = int(np.flatnonzero(missing)[0])
        raise EvaluationError(
            f"{run.path}:{r + 2}: error_cycles_rerun: empty for workload {df['workload'].iloc[r]!r} (its data dir "
            f"has no profiles/{df['plan_arch'].iloc[r]}_rerun.csv; evaluate.py's suite.rerun=true writes one for "
            "a synthetic workload, a second profiler pass of the GPU for a real one)")
    df = df.copy()
    df.loc[own, "error_cycles"] = values[own]
    return EvaluationRun(run.label, run.path, run.seed, df, second_run=True, unavailable=run.unavailable)


def _flag_column(df, name: str, where: Path):
    """A True/False column as bool; pandas leaves it as text when one cell is neither."""
    col = df[name]
    if col.dtype == bool:
        return col
    text = col.astype(str).str.strip().str.lower()
    ok = text.isin(["true", "false", "1", "0"])
    if not ok.all():
        r = int(np.flatnonzero(~ok.to_numpy())[0])
        raise EvaluationError(f"{where}:{r + 2}: {name}: expected True or False, found {str(col.iloc[r])[:40]!r}")
    return text.isin(["true", "1"])


def _check_values(df, csv: Path) -> None:
    """Refuse, at its line, a value evaluate.py never writes. Why: each was taken as if it
    were a measurement: a seed of 1.7 became seed 1 (and was counted as that run's seed), and
    a negative error, which no absolute error can be, showed as "<0.01" %, the best score."""
    import pandas as pd

    for c in _INTEGRAL:
        v = df[c].to_numpy()
        bad = v != np.floor(v)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise EvaluationError(f"{csv}:{r + 2}: {c}: expected a whole number, found {df[c].iloc[r]:g}")
    for c in _ERRORS:
        if c not in df.columns:
            continue
        v = numeric_column(df, c, csv, EvaluationError)
        bad = v < 0
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise EvaluationError(f"{csv}:{r + 2}: {c}: negative ({v[r]:g}); an error is an absolute difference "
                                  "in %, never below 0")
        bad = np.isinf(v)  # was averaged in (every mean inf), or called "empty" beside a finite one
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise EvaluationError(f"{csv}:{r + 2}: {c}: infinite; evaluate.py writes a finite error, or leaves "
                                  "the cell empty where there is no ground truth")
        df[c] = v
    for c in averaged_columns(df.columns):  # the other metrics' errors and the spread are averaged too
        if c not in _ERRORS:
            df[c] = numeric_column(df, c, csv, EvaluationError)
    # a cycle error missing from one row while its workload has it on that arch elsewhere: the
    # row's method was averaged over fewer workloads than the others, and nothing said so (a
    # workload without cycles at all, an nsys-only profile, has none for every method)
    err = df["error_cycles"].to_numpy(dtype=float)
    key = [df["workload"].astype(str).to_numpy(), df["arch"].astype(str).to_numpy()]
    has = pd.Series(np.isfinite(err)).groupby(key).transform("any").to_numpy(dtype=bool)
    gap = ~np.isfinite(err) & has
    if gap.any():
        r = int(np.flatnonzero(gap)[0])
        raise EvaluationError(f"{csv}:{r + 2}: error_cycles: empty for workload {df['workload'].iloc[r]!r}, method "
                              f"{df['method'].iloc[r]!r}, arch {df['arch'].iloc[r]!r}, which the other methods have "
                              "there; every mean would leave this workload out of that method's alone")
    for c, low in (("speedup", "> 0"), ("n_simulated", ">= 1")):
        v = df[c].to_numpy(dtype=float)
        bad = np.isnan(v) | ((v <= 0) if c == "speedup" else (v < 1))
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise EvaluationError(f"{csv}:{r + 2}: {c}: {df[c].iloc[r]:g}; a plan's {c} is {low}")


def _check_unique_rows(df, csv: Path) -> None:
    """Refuse a row that repeats another's key (``_ROW_KEY``). Why: every mean over seeds and
    workloads weights each row once, so a pasted-twice row silently counted its plan twice."""
    again = df.duplicated(list(_ROW_KEY), keep="first").to_numpy()
    if not again.any():
        return
    group = df.groupby(list(_ROW_KEY), sort=False, dropna=False).ngroup().to_numpy()
    r = int(np.flatnonzero(again)[0])
    first = int(np.flatnonzero(group == group[r])[0])
    key = tuple(df[c].iloc[r] for c in _ROW_KEY)
    w, m, a, seed, eps, sweep = key
    what = f"workload {w!r}, method {m!r}, arch {a!r}, seed {seed:g}" + ("" if math.isnan(eps) else f", epsilon {eps:g}")
    raise EvaluationError(f"{csv}:{r + 2}: duplicate row: {what}{' (sweep)' if sweep else ''} is already on line "
                          f"{first + 2}; each plan is scored once")


def load_run(path: str | Path, label: str | None = None) -> EvaluationRun:
    """A run directory holding ``results.csv``, or the CSV itself."""
    import pandas as pd

    p = Path(path)
    csv = p / "results.csv" if p.is_dir() else p
    if not csv.exists():
        raise EvaluationError(f"{csv}: no such file (give an evaluate.py output directory or its results.csv)")
    try:
        df = pd.read_csv(csv, keep_default_na=True)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"{csv}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    except pd.errors.EmptyDataError:
        raise EvaluationError(f"{csv}: empty file; expected evaluate.py's results.csv") from None
    blank = _blank_line(csv)
    if blank is not None:
        raise EvaluationError(f"{csv}:{blank}: a blank line, which evaluate.py never writes; remove it (every line "
                              "after it would be named one line off)")
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise EvaluationError(f"{csv}:1: {missing[0]}: missing column (results.csv of evaluate.py has "
                              f"{', '.join(_REQUIRED)})")
    if df.empty:
        raise EvaluationError(f"{csv}: no rows")
    df = df.copy()
    for c in _NUMERIC:
        df[c] = numeric_column(df, c, csv, EvaluationError)
        bad = ~np.isfinite(df[c].to_numpy())
        if c in _INTEGRAL and bad.any():  # a speedup may be inf: sampled time 0
            r = int(np.flatnonzero(bad)[0])
            raise EvaluationError(f"{csv}:{r + 2}: {c}: empty or not finite")
    _check_values(df, csv)
    for c in _FLAGS:
        df[c] = _flag_column(df, c, csv)
    for c in ("workload", "method", "arch", "plan_arch"):
        empty = df[c].isna().to_numpy()
        if empty.any():
            raise EvaluationError(f"{csv}:{int(np.flatnonzero(empty)[0]) + 2}: {c}: empty")
        df[c] = df[c].astype(str)
    _check_unique_rows(df, csv)
    plan_archs = sorted(df["plan_arch"].unique())
    if len(plan_archs) != 1:
        raise EvaluationError(f"{csv}: plan_arch: plans of one run come from one arch, found {plan_archs}")
    fixed = df.loc[~df["stochastic"], "seed"].unique()
    if fixed.size > 1:
        raise EvaluationError(f"{csv}: seed: deterministic methods ran with several seeds ({', '.join(f'{v:g}' for v in sorted(fixed)[:4])}); "
                              "expected one evaluate.py run")
    off = df["cross_arch"].to_numpy(dtype=bool) != (df["arch"] != df["plan_arch"]).to_numpy()
    if off.any():  # which rows the cross-arch mean takes: an edited flag moved a row in or out of it
        r = int(np.flatnonzero(off)[0])
        raise EvaluationError(f"{csv}:{r + 2}: cross_arch: {df['cross_arch'].iloc[r]} for arch "
                              f"{df['arch'].iloc[r]!r} with plan_arch {df['plan_arch'].iloc[r]!r}; evaluate.py "
                              "writes cross_arch = (arch != plan_arch)")
    seed = int(fixed[0]) if fixed.size else None
    return EvaluationRun(label or _default_label(p), csv, seed, df, unavailable=_unavailable(csv.parent))


def _unavailable(run_dir: Path) -> frozenset:
    """The (workload, method) pairs evaluate.py's ``unavailable.csv`` names (a method the workload's
    data cannot feed: pka and sieve on a profile without Nsight Compute's metrics), which have no
    row by design; empty when the file is absent or unreadable (then a missing row is refused)."""
    import csv as _csv

    try:
        with open(run_dir / "unavailable.csv", newline="", encoding="utf-8") as fh:
            return frozenset((r["workload"], r["method"]) for r in _csv.DictReader(fh)
                             if r.get("workload") and r.get("method"))
    except (OSError, KeyError, UnicodeDecodeError, _csv.Error):
        return frozenset()


def _blank_line(csv: Path) -> int | None:
    """The line number of the first blank line of ``csv`` that comes before a line of data (the
    header included), or None. Why: pandas skips blank lines, and every error naming a row
    numbers it as row + 2, so a blank line (a hand edit, two files pasted together) made each
    error after it name the line above the damaged one. Trailing blank lines shift nothing."""
    import csv as csvlib

    first = None
    with open(csv, encoding="utf-8-sig", errors="replace", newline="") as f:
        reader = csvlib.reader(f)
        try:
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    first = reader.line_num if first is None else first
                elif first is not None:
                    return first
        except csvlib.Error:  # what pandas read and this reader cannot (a cell past its size limit): no blank found
            return None
    return None


def _seed_cell(run: EvaluationRun, data: str) -> str:
    """The run table's synthesis seed: none was used for measured data (the seed then only
    seeds the stochastic methods)."""
    if run.seed is None:
        return "n/a"
    # a REAL workload scored on a simulator too ("real+simulated") was no more synthesized
    kinds = set(data.split("+"))
    measured = "real" in kinds and kinds <= {"real", "simulated"}
    return f"n/a (measured; methods' seed {run.seed})" if measured else str(run.seed)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _default_label(p: Path) -> str:
    """A run's name in compare.md: its directory's (``.`` resolved: it was empty), or the CSV's
    own name when the CSV is not ``results.csv`` (``seed0.csv`` and ``seed1.csv`` side by side
    were both named after their directory)."""
    full = Path(os.path.abspath(p))
    if full.is_dir():
        return full.name or str(full)
    return (full.parent.name or str(full.parent)) if full.name == "results.csv" else full.stem


def find_runs(root: str | Path) -> list[Path]:
    """The job directories of a multirun (or any directory) that hold a ``results.csv``,
    in Hydra's job order (``0_full``, ``1_full``, ..., ``10_full``), then by name."""
    root = Path(root)
    jobs = [p for p in root.iterdir() if p.is_dir() and (p / "results.csv").exists()]
    return sorted(jobs, key=job_order)


def expand_runs(paths: Iterable[str | Path], left_out: list[Path] | None = None,
                earlier: list[Path] | None = None) -> list[Path]:
    """The runs the user named: a path holding results.csv (or the CSV itself) is one run, a
    directory without one stands for the runs inside it (a multirun sweep directory,
    ``find_runs``). Why here: ``gclsampler compare`` and ``bench/targets.py`` read the same runs.
    ``left_out`` receives the job directories of such a sweep (those Hydra made, with ``.hydra/``)
    that hold no results.csv: a job that failed or is still running, which the caller names.
    A sweep directory reused by several multiruns (a fixed ``hydra.sweep.dir``) also holds the
    jobs of earlier ones: a results.csv older than the directory's ``multirun.yaml`` (which each
    multirun writes as it starts) is not of its last multirun, and is left out into ``earlier``
    (a stale job with a seed the last multirun also ran counted it twice)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir() and not (p / "results.csv").exists():
            inside = find_runs(p)
            since = _multirun_start(p)
            old = [q for q in inside if since is not None and _mtime(q / "results.csv") < since - _CLOCK_SLACK_S]
            inside = [q for q in inside if q not in old]
            if not inside:
                raise EvaluationError(f"{p}: no results.csv in it or in its subdirectories; give evaluate.py "
                                      "output directories" if not old else
                                      f"{p}: every results.csv in it is older than its multirun.yaml (jobs of an "
                                      "earlier multirun); name the job directories to compare them")
            out += inside
            if earlier is not None:
                earlier += old
            if left_out is not None:
                left_out += sorted((q for q in p.iterdir() if q.is_dir() and (q / ".hydra").is_dir()
                                    and not (q / "results.csv").exists()), key=job_order)
        else:
            out.append(p)
    return out


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")


def _multirun_start(sweep_dir: Path) -> float | None:
    """When the last multirun into ``sweep_dir`` started (its ``multirun.yaml``), or None."""
    f = sweep_dir / "multirun.yaml"
    return f.stat().st_mtime if f.is_file() else None


def _plan_arch_rows(run: EvaluationRun):
    """A run's main (non-sweep) rows on its plan arch: the rows every table of compare.md is
    made of (cross-arch errors aside), so what a run "has" is what it has there."""
    df = run.results
    return df[~df["sweep"] & (df["arch"] == df["plan_arch"])]


_KINDS = {"synthetic": "synthetic", "real": "real", "simulated": "simulated", "": "unlabelled"}
"""``report.data_kinds``'s per-row kinds as the ``data`` column of compare's CSVs writes them."""


def data_of(rows) -> str:
    """What the ground truth of these results.csv rows is, for a ``data`` column:
    ``synthetic``, ``real``, ``simulated`` (scored on a simulator's cycles), ``unlabelled``
    (workload.json says neither), or several joined by ``+``. Why: a number copied out of compare.csv must still say whether it was measured."""
    from gclsampler.report import data_kinds

    present = set(data_kinds(rows))
    return "+".join(word for kind, word in _KINDS.items() if kind in present)


def _data_words(data: str) -> str:
    """``data_of``'s label as compare.md writes it: SYNTHETIC, REAL, SIMULATED, unlabelled."""
    return " + ".join(w.upper() if w != "unlabelled" else w for w in data.split("+"))


def _workload_tags(rows) -> dict[str, str]:
    """workload -> its row name in compare.md: ``w (REAL)``, ``w (SYNTHETIC)`` when the compared
    data is not all synthetic; ``data_banner`` then says rows are marked, and they must be."""
    if data_of(rows) == "synthetic":
        return {}
    return {w: f"{w} ({_data_words(data_of(d))})" for w, d in rows.groupby("workload", sort=False)}


def _one_kind_per_workload(runs: Sequence[EvaluationRun], workloads: list[str]) -> None:
    """Refuse a workload that is SYNTHETIC in one run and REAL (or unlabelled) in another. Why:
    its cells were averaged into one mean and sd, a synthesizer's timing model pooled with a
    measurement (or with data nobody labelled), under a banner promising each row marked;
    there is no honest label for that mean."""
    from gclsampler.report import workload_kinds

    word = {"synthetic": "SYNTHETIC", "real": "REAL", "": "unlabelled (workload.json says neither)"}
    first: dict[str, tuple[str, EvaluationRun]] = {}
    for r in runs:
        df = r.results
        for at, w, kind in zip(df.index, df["workload"], workload_kinds(df)):
            if w not in workloads:
                continue
            seen, where = first.setdefault(w, (kind, r))
            if seen != kind:
                why = ("a synthetic ground truth with a measured one" if {kind, seen} == {"synthetic", "real"}
                       else "a labelled ground truth with one nobody labelled")
                raise EvaluationError(
                    f"{r.path}:{int(at) + 2}: data: workload {w!r} is {word[kind]} here and {word[seen]} in "
                    f"{where.path}; a mean over both would pool {why}: compare the "
                    + " runs and the ".join(word[k].split()[0].lower() for k in word if k in (kind, seen))
                    + " runs separately")


def _distinct(col) -> frozenset:
    """The values of a column, an empty cell (no ε: the method has no error bound) as "none"."""
    return frozenset("none" if v != v else float(v) for v in col)


def _values(x: frozenset) -> str:
    return ", ".join(v if isinstance(v, str) else f"{v:g}" for v in sorted(x, key=str))


def _same_experiment(runs: Sequence[EvaluationRun], workloads: list[str], methods: list[str]) -> list[str]:
    """Refuse runs that are not draws of one experiment, and say where they differ in ways a
    reader must know. Why: compare pooled ``stem_root`` at ε 0.25 with one at 0.05 (a
    different error bound, so a different speedup) into one mean and sd. Invocation counts,
    archs or seed counts that differ leave the numbers comparable but not alike: notes, not
    errors (a synthesis seed draws bfs's graph, so its launch count is 20-26 across seeds)."""
    rows = [main_rows(r, workloads, methods) for r in runs]
    first = rows[0]
    for r, mine in zip(runs[1:], rows[1:]):
        for k in methods:
            a, b = mine.loc[mine["method"] == k, "epsilon"], first.loc[first["method"] == k, "epsilon"]
            if _distinct(a) != _distinct(b):
                odd = [i for i, v in a.items() if ("none" if v != v else float(v)) not in _distinct(b)]
                raise EvaluationError(
                    f"{r.path}:{int(odd[0] if odd else a.index[0]) + 2}: epsilon: method {k!r} has epsilon "
                    f"{_values(_distinct(a))} here and {_values(_distinct(b))} in {runs[0].path}; these runs "
                    "are not the same experiment (compare runs made with the same suite settings)")
    notes = []
    counts = {w: [_distinct(d.loc[d["workload"] == w, "n_invocations"]) for d in rows] for w in workloads}
    varied = [w for w, c in counts.items() if any(x != c[0] for x in c)]
    if varied:
        notes.append("Invocation counts differ between runs for " + "; ".join(
            f"{w} ({', '.join(f'{r.label} {_values(c)}' for r, c in zip(runs, counts[w]))})" for w in varied)
            + ": a synthesis seed can draw a different program (bfs's graph), and other synth knobs (another "
              "suite) other sizes, so those cells pool different launch counts.")
    archs = [sorted(set(d["arch"])) for d in rows]
    if any(a != archs[0] for a in archs):
        notes.append("Archs differ between runs: " + "; ".join(f"{r.label} {', '.join(a)}" for r, a in zip(runs, archs))
                     + ". Each run's cross-arch error is its mean over its own other archs, and a run without one "
                       "is left out of the cross-arch mean.")
    seeds = []
    for m in methods:
        per = []
        for d in rows:
            d = d[(d["method"] == m) & (d["arch"] == d["plan_arch"])]
            per.append(int(d.groupby("workload")["seed"].nunique().max()))
        if any(n != per[0] for n in per):
            seeds.append(f"{m} ({', '.join(f'{r.label} {n}' for r, n in zip(runs, per))})")
    if seeds:
        notes.append("Seeds per workload differ between runs for " + "; ".join(seeds)
                     + ": those means are over different numbers of seeds.")
    settings = run_settings(runs)
    if settings:
        notes.append("**Settings differ between runs** besides the seed and paths (`.hydra/overrides.yaml`): "
                     + "; ".join(f"{r.label}: {', '.join(f'`{o}`' for o in settings[r.label]) or 'defaults'}"
                                 for r in runs)
                     + ". Their numbers are pooled below as if they were repeats: ± mixes those settings with "
                       "the seeds. Compare the runs of one setting for a spread over seeds.")
    synthetic = [r for r, d in zip(runs, rows) if r.seed is not None and data_of(d) == "synthetic"]
    by_seed: dict[int, list[str]] = {}
    for r in synthetic:
        by_seed.setdefault(int(r.seed), []).append(r.label)
    shared = {s: labels for s, labels in by_seed.items() if len(labels) > 1}
    if shared:
        notes.append("**Runs share a synthesis seed**: " + "; ".join(f"{', '.join(ls)} (seed {s})"
                                                                  for s, ls in shared.items())
                     + ". They score the same synthetic workloads, so ± is not a spread over synthesis seeds, "
                       "and one run counted twice (a copy, or a stale job of an earlier sweep) weighs double.")
    return notes


_VARYING = {"seed", "data_dir", "out_dir", "suite.data_dir"}
"""Overrides expected to differ between repeats of one experiment (``-m seed=0,1 'data_dir=...'``)."""


def run_settings(runs: Sequence[EvaluationRun]) -> dict[str, list[str]]:
    """Each run's overrides (its ``.hydra/overrides.yaml``) that not every run has, the seed and
    paths aside; {} when all runs have the same, or a run has no record of them.
    Why: a ``-m method_params.random.fraction=0.1,0.5`` sweep was pooled into one mean ± sd and
    its run table showed nothing that told the jobs apart."""
    import yaml

    per: dict[str, list[str]] = {}
    for r in runs:
        rec = Path(r.path).parent / ".hydra" / "overrides.yaml"
        try:
            items = yaml.safe_load(rec.read_text(encoding="utf-8")) if rec.is_file() else None
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            items = None
        if not isinstance(items, list):
            return {}
        keys = [str(o).lstrip("+~").split("=", 1)[0] for o in items]
        per[r.label] = sorted(str(o) for o, k in zip(items, keys) if k not in _VARYING and not k.startswith("hydra."))
    common = set.intersection(*(set(v) for v in per.values())) if per else set()
    return {k: [o for o in v if o not in common] for k, v in per.items()} \
        if any(set(v) != common for v in per.values()) else {}


def common_to_all(runs: Sequence[EvaluationRun]) -> tuple[list[str], list[str], list[str]]:
    """Workloads, methods and notes: only what every run has on its plan arch is compared, and
    what is left out is said (with the runs that lack it).

    Why the plan arch: every table starts from a run's plan-arch rows, and a run holding a
    method's cross-arch rows alone (its plan-arch rows deleted or never written) counted as
    having the method, so the tables then died on the missing row with an IndexError."""
    if not runs:
        raise EvaluationError("compare: no runs given")
    archs = {r.results["plan_arch"].iloc[0] for r in runs}
    if len(archs) > 1:
        raise EvaluationError("compare: plan_arch: the runs fitted their plans on different archs "
                              f"({', '.join(f'{r.path}: {r.results.plan_arch.iloc[0]}' for r in runs)})")
    own = [_plan_arch_rows(r) for r in runs]
    for r, o in zip(runs, own):
        if o.empty:
            raise EvaluationError(f"{r.path}: arch: no rows on the plan arch {r.results['plan_arch'].iloc[0]} "
                                  "(sweep rows aside); compare's tables are of plan-arch errors")
    seen = [set(zip(o["workload"], o["method"])) for o in own]
    workloads = list(dict.fromkeys(w for o in own for w in o["workload"]))
    methods = sorted({m for o in own for m in o["method"]}, key=method_sort_key)
    has = {"workloads": lambda s, x: any(k[0] == x for k in s), "methods": lambda s, x: any(k[1] == x for k in s)}
    keep_w = [w for w in workloads if all(has["workloads"](s, w) for s in seen)]
    keep_m = [m for m in methods if all(has["methods"](s, m) for s in seen)]
    notes = []
    for what, all_, kept in (("workloads", workloads, keep_w), ("methods", methods, keep_m)):
        left = [f"{x} (no {runs[0].results['plan_arch'].iloc[0]} rows in "
                f"{', '.join(r.label for r, s in zip(runs, seen) if not has[what](s, x))})"
                for x in all_ if x not in kept]
        if left:
            notes.append(f"Left out, not in every run: {what} {'; '.join(left)}.")
    if not keep_w or not keep_m:
        what = "workload" if not keep_w else "method"
        raise EvaluationError(f"compare: the runs have no {what} in common (" + "; ".join(
            f"{r.label}: {', '.join(sorted({k[0 if what == 'workload' else 1] for k in s}))}"
            for r, s in zip(runs, seen)) + ")")
    plan_arch = runs[0].results["plan_arch"].iloc[0]
    missing = [(w, m, r.path) for w in keep_w for m in keep_m for r, s in zip(runs, seen)
               if (w, m) not in s and (w, m) not in r.unavailable]
    if missing:
        w, m, p = missing[0]
        raise EvaluationError(f"{p}: method {m!r} has no {plan_arch} row (sweep rows aside) for workload {w!r}, "
                              "although both are in the run: every method's plan-arch rows of every workload "
                              "are compared")
    for m in keep_m:  # rows absent by design: the method's means and counts are over fewer workloads
        gone = [w for w in keep_w if any((w, m) not in s for s in seen)]
        if gone:
            notes.append(f"Not run: {m} on {', '.join(gone)} (the runs' unavailable.csv: the data cannot feed it); "
                         f"its means and counts are over the other {len(keep_w) - len(gone)} of {len(keep_w)} "
                         "workloads.")
    _one_kind_per_workload(runs, keep_w)
    return keep_w, keep_m, notes + _same_experiment(runs, keep_w, keep_m)


def _check_reference(reference: str, methods: list[str]) -> None:
    if reference not in methods:
        raise EvaluationError(f"compare: --reference: method {reference!r} is not in every run "
                              f"(methods: {', '.join(methods)})")


def main_rows(run: EvaluationRun, workloads: list[str], methods: list[str]):
    """A run's non-sweep rows of these workloads and methods: what every table of compare (and
    ``bench/targets.py``) is computed from."""
    df = run.results
    return df[df["workload"].isin(workloads) & df["method"].isin(methods) & ~df["sweep"]]


def run_summaries(runs: Sequence[EvaluationRun], workloads: list[str], methods: list[str]) -> list[Any]:
    """``score.summarize`` of each run's main (non-sweep) rows of these workloads and methods.

    The three tables below all start from these; ``write_comparison`` computes them once
    and hands them to each table (``summaries=``) instead of letting each recompute them."""
    return [summarize(main_rows(r, workloads, methods), sweep=False) for r in runs]


def _summaries_of(runs, workloads, methods, given) -> list[Any]:
    if given is None:
        return run_summaries(runs, workloads, methods)
    if len(given) != len(runs):
        raise ValueError(f"summaries: expected one per run ({len(runs)}), got {len(given)}")
    return list(given)


def per_run_table(runs: Sequence[EvaluationRun], workloads: list[str], methods: list[str], *,
                  summaries: Sequence[Any] | None = None):
    """One row per run x method: the suite averages its ``report.md`` shows, the worst
    workload on the plan arch, and the mean error on the other archs (cross-arch)."""
    import pandas as pd

    rows = []
    summs = _summaries_of(runs, workloads, methods, summaries)
    common = scored_in_every_run(runs, summs, methods)
    for r, summary in zip(runs, summs):
        avg = suite_averages(summary)
        plan_arch = r.results["plan_arch"].iloc[0]
        data = data_of(main_rows(r, workloads, methods))
        own = summary[summary["arch"] == plan_arch]
        for m in methods:
            a = avg[(avg["method"] == m) & (avg["arch"] == plan_arch)].iloc[0]
            d = own[own["method"] == m]
            worst = d.loc[d["error_cycles"].idxmax()] if d["error_cycles"].notna().any() else None
            cross = avg[(avg["method"] == m) & avg["cross_arch"]]

            def mean_of(col: str) -> float:  # over the workloads every run scored on it: one set for all runs
                if col not in d.columns:
                    return math.nan
                if common[m].get(col) is None:  # every run scored the same workloads: report.md's mean
                    return float(a.get(col, math.nan))
                v = d.loc[d["workload"].isin(common[m][col]), col]
                return float(v.mean()) if len(v) else math.nan
            rows.append({
                "run": r.label, "seed": r.seed, "data": data, "method": m, "arch": plan_arch,
                "errors_on": errors_on(r), "error_cycles": mean_of("error_cycles"),
                "worst_error": float(worst["error_cycles"]) if worst is not None else math.nan,
                "worst_workload": str(worst["workload"]) if worst is not None else "",
                "error_cross_arch": float(cross["error_cycles"].mean()) if len(cross) else math.nan,
                "error_cycles_any_member": mean_of("error_cycles_any_member"),
                "error_cycles_rerun": mean_of("error_cycles_rerun"),
                "speedup_mean": float(a["speedup_mean"]), "speedup_hmean": float(a["speedup_hmean"]),
                "n_simulated": float(a["n_simulated"]),
            })
    return pd.DataFrame(rows)


_PER_WORKLOAD_MEANS = ("error_cycles", "error_cycles_rerun", "error_cycles_any_member")
_MEAN_WORDS = {"error_cycles": "cycle error", "error_cycles_rerun": "second-run error",
               "error_cycles_any_member": "any-member error"}


def _left_out_of_means(runs, summaries, workloads: list[str], methods: list[str]) -> list[str]:
    """Notes naming the workloads ``scored_in_every_run`` keeps out of a mean, and the runs
    that have no value for them."""
    common = scored_in_every_run(runs, summaries, methods)
    notes = []
    for col in _PER_WORKLOAD_MEANS:
        by_gap: dict[tuple[str, ...], list[str]] = {}
        for m in methods:
            keep = common[m][col]
            if keep is None:
                continue
            gap = tuple(w for w in workloads if w not in keep)
            by_gap.setdefault(gap, []).append(m)
        for gap, ms in by_gap.items():
            lacking = []
            for w in gap:
                runs_without = [r.label for r, summ in zip(runs, summaries)
                                if not ((summ["workload"] == w) & summ["method"].isin(ms) & summ[col].notna()
                                        & (summ["arch"] == r.results["plan_arch"].iloc[0])).any()]
                lacking.append(f"{w} (none in {', '.join(runs_without) or 'some runs for some methods'})")
            notes.append(f"The {_MEAN_WORDS[col]} of {', '.join(ms)} is averaged over the workloads every run has "
                         f"one for: left out {'; '.join(lacking) or 'none'}; so each run's mean here may differ "
                         "from its report.md.")
    return notes


def scored_in_every_run(runs: Sequence[EvaluationRun], summaries: Sequence[Any],
                        methods: list[str]) -> dict[str, dict[str, list[str] | None]]:
    """method -> column -> the workloads every run has a value for on its plan arch, or None
    when each run has a value for the same workloads. Why: a run whose bfs has no second run
    averaged its second-run error over backprop alone, pooled with runs averaging over both,
    so the second-run column looked better than the first; means over one set stay comparable."""
    out: dict[str, dict[str, list[str] | None]] = {}
    for m in methods:
        out[m] = {}
        for col in _PER_WORKLOAD_MEANS:
            sets = []
            for r, summ in zip(runs, summaries):
                d = summ[(summ["arch"] == r.results["plan_arch"].iloc[0]) & (summ["method"] == m)]
                sets.append(frozenset(d.loc[d[col].notna(), "workload"]) if col in d.columns else frozenset())
            same = all(x == sets[0] for x in sets)
            out[m][col] = None if same else sorted(frozenset.intersection(*sets))
    return out


def _sd(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    return float(x.std(ddof=1)) if x.size > 1 else math.nan


def across_runs(per_run) -> Any:
    """Per method: the mean over runs of each per-run number, its sample standard deviation
    across runs, and the extremes a user should know (best and worst mean, worst workload)."""
    import pandas as pd

    rows = []
    for m, d in per_run.groupby("method", sort=False):
        worst_i = d["worst_error"].idxmax() if d["worst_error"].notna().any() else None
        rows.append({
            "method": m, "n_runs": int(len(d)),
            "error_cycles": d["error_cycles"].mean(), "error_cycles_sd": _sd(d["error_cycles"]),
            "error_cycles_min": d["error_cycles"].min(), "error_cycles_max": d["error_cycles"].max(),
            "worst_error_mean": d["worst_error"].mean(),
            "worst_error_max": d["worst_error"].max(),
            "worst_error_where": (f"{d.loc[worst_i, 'worst_workload']} ({d.loc[worst_i, 'run']})"
                                  if worst_i is not None else ""),
            "error_cross_arch": d["error_cross_arch"].mean(), "error_cross_arch_sd": _sd(d["error_cross_arch"]),
            "error_cycles_any_member": d["error_cycles_any_member"].mean(),
            "error_cycles_rerun": d["error_cycles_rerun"].mean(), "error_cycles_rerun_sd": _sd(d["error_cycles_rerun"]),
            "speedup_mean": d["speedup_mean"].mean(), "speedup_mean_sd": _sd(d["speedup_mean"]),
            "speedup_hmean": d["speedup_hmean"].mean(),
        })
    return pd.DataFrame(rows)


def per_workload_table(runs: Sequence[EvaluationRun], workloads: list[str], methods: list[str], *,
                       summaries: Sequence[Any] | None = None):
    """Per workload x method on the plan arch: error mean, sd and max over runs, mean speedup."""
    import pandas as pd

    parts = []
    for r, s in zip(runs, _summaries_of(runs, workloads, methods, summaries)):
        s = s[s["arch"] == r.results["plan_arch"].iloc[0]]
        parts.append(s.assign(run=r.label)[["run", "workload", "method", "error_cycles", "speedup_mean"]])
    all_ = pd.concat(parts, ignore_index=True)
    g = all_.groupby(["workload", "method"], sort=False)
    out = g["error_cycles"].agg(["mean", "max"]).rename(columns={"mean": "error_cycles", "max": "error_cycles_max"})
    out["error_cycles_sd"] = g["error_cycles"].agg(_sd)
    out["speedup_mean"] = g["speedup_mean"].mean()
    out = out.reset_index()
    rows = pd.concat([main_rows(r, workloads, methods) for r in runs], ignore_index=True)
    out.insert(2, "data", out["workload"].map({w: data_of(d) for w, d in rows.groupby("workload", sort=False)}))
    out.insert(3, "errors_on", "+".join(dict.fromkeys(errors_on(r) for r in runs)))  # load_runs scores all alike
    out["workload"] = pd.Categorical(out["workload"], categories=workloads, ordered=True)
    out["method"] = pd.Categorical(out["method"], categories=methods, ordered=True)
    return out.sort_values(["workload", "method"]).astype({"workload": str, "method": str}).reset_index(drop=True)


def head_to_head(runs: Sequence[EvaluationRun], workloads: list[str], methods: list[str], reference: str, *,
                 summaries: Sequence[Any] | None = None):
    """Per run and rival: ``score.head_to_head_counts`` on the plan arch, so each run's row is
    the one its own ``report.md`` shows (lower / equal / higher, and what chance expects)."""
    import pandas as pd

    _check_reference(reference, methods)
    parts = []
    for r, s in zip(runs, _summaries_of(runs, workloads, methods, summaries)):
        c = head_to_head_counts(s, reference, r.results["plan_arch"].iloc[0], methods)
        c.insert(0, "reference", reference)
        c.insert(0, "errors_on", errors_on(r))
        c.insert(0, "data", data_of(main_rows(r, workloads, methods)))
        c.insert(0, "seed", r.seed)
        c.insert(0, "run", r.label)
        parts.append(c)
    return pd.concat(parts, ignore_index=True)


# ---------------------------------------------------------------------------------------
# report


def _pct(x: float, sd: float | None = None) -> str:
    """An error in % for compare.md; "<0.01" only for a true small error (0 <= x < 0.01), so
    a negative one (malformed input) shows as the number it is, not as the best score."""
    if x is None or not math.isfinite(x):
        return "n/a"
    s = "<0.01" if 0 <= x < 0.01 else f"{x:.2f}"
    if sd is not None and math.isfinite(sd):
        s += f" ± {sd:.2f}"
    return s


def _su(x: float, sd: float | None = None) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.1f}×" + (f" ± {sd:.1f}" if sd is not None and math.isfinite(sd) else "")


def _plot(across, per_run, path: Path, synthetic: bool | str | None, second_run_of: str | None = None) -> Path:
    """Mean error against mean speedup per method, bars one sd across runs, faint dots per run.

    ``second_run_of``: the plan arch whose second run the errors are (``--second-run``); the y
    axis then says so. Why: the figure was the same under both, so one copied out of a
    ``--second-run`` comparison passed second-run errors off as the fitted run's."""
    from gclsampler.report import (_COLORS, _maybe_symlog, _plt, _savefig, infinite_edge,
                                   mark_infinite_x)

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    # an infinite mean speedup (a plan of sampled time 0) is drawn at the axis edge: as nothing, it looked not run
    speedups = np.concatenate([per_run["speedup_mean"].to_numpy(dtype=float), across["speedup_mean"].to_numpy(dtype=float)])
    edge = infinite_edge(speedups)
    for _, a in across.iterrows():
        m = a["method"]
        d = per_run[per_run["method"] == m]
        color = _COLORS.get(m)
        su = d["speedup_mean"].to_numpy(dtype=float)
        inf = np.isposinf(su)
        ax.scatter(np.where(inf, edge, su), d["error_cycles"], color=color, alpha=0.35, s=14, linewidths=0)
        x = float(a["speedup_mean"])
        at_edge = math.isinf(x) and x > 0
        ax.errorbar(edge if at_edge else x, a["error_cycles"],
                    xerr=0 if not math.isfinite(a["speedup_mean_sd"]) else a["speedup_mean_sd"],
                    yerr=0 if not math.isfinite(a["error_cycles_sd"]) else a["error_cycles_sd"],
                    fmt=">" if at_edge else "o", color=color, ecolor=color, capsize=3, label=m,
                    markeredgecolor="k", markeredgewidth=0.4, markersize=8 if at_edge else 6)
    ax.set_xscale("log")
    mark_infinite_x(ax, edge, speedups)
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("speedup, arithmetic mean over workloads (×, log)")
    on = f" on the second run of {second_run_of}" if second_run_of else ""
    ax.set_ylabel(f"mean cycle error{on} over workloads (%)" + _maybe_symlog(ax, per_run["error_cycles"]))
    n = int(per_run["run"].nunique())
    ax.set_title(f"{n} runs: mean ± 1 sd across runs (dots: each run)")
    ax.grid(True, which="both", alpha=0.3)
    return _savefig(fig, path, synthetic, legend_of=ax)


def _head_to_head_section(runs, h2h, reference: str, others: list[str], plan_arch: str) -> list[str]:
    from gclsampler.report import H2H_CHANCE_TEXT, H2H_OVER_TEXT, _md_table, h2h_cell

    lines = ["", f"## `{reference}` head to head", "",
             f"Workloads on which `{reference}` has lower / equal / higher {plan_arch} cycle error than each method, "
             f"per run (equal: within {TIE:g} points, e.g. both 0 % on a census or a workload of one kernel per "
             "cluster). " + H2H_CHANCE_TEXT
             + (" " + H2H_OVER_TEXT + " The all-runs row counts the workloads of every run."
                if (h2h["n_workloads"] < h2h["of_workloads"]).any() else ""), ""]
    rows = []
    for r in runs:
        d = h2h[h2h["run"] == r.label].set_index("method")
        rows.append([r.label] + [h2h_cell(d.loc[m]) for m in others])
    # a NaN chance count in any run leaves the total NaN, so it is not shown
    tot = h2h.groupby("method", sort=False)[["lower", "tie", "higher", "n_workloads", "of_workloads", "max_lower",
                                             "expected_lower", "expected_tie", "expected_higher", "dominates",
                                             "dominated"]].sum(min_count=len(runs))
    rows.append(["**all runs**"] + [h2h_cell(tot.loc[m]) for m in others])
    lines += _md_table(["run"] + [f"vs {m}" for m in others], rows).split("\n")
    return lines


def write_comparison(runs: Sequence[EvaluationRun], out_dir: str | Path, *, reference: str | None = None,
                     plots: bool = True, title: str | None = None) -> Path:
    """Write ``compare.md`` and its CSVs (and a plot) into ``out_dir``; returns compare.md.

    ``reference``: the method counted head to head; None = ``gcl`` when every run has it,
    else the first method in the report order."""
    import pandas as pd

    from gclsampler.report import _md_table, data_banner, plot_stamp

    out = Path(out_dir)
    workloads, methods, notes = common_to_all(runs)
    if reference is None:
        reference = "gcl" if "gcl" in methods else methods[0]
    summ = run_summaries(runs, workloads, methods)
    per_run = per_run_table(runs, workloads, methods, summaries=summ)
    across = across_runs(per_run)
    per_w = per_workload_table(runs, workloads, methods, summaries=summ)
    h2h = head_to_head(runs, workloads, methods, reference, summaries=summ)
    # what the data is: every compared row of every run (a left-out workload's kind is not the report's)
    rows_all = pd.concat([main_rows(r, workloads, methods) for r in runs], ignore_index=True)
    tags = _workload_tags(rows_all)
    plan_arch = runs[0].results["plan_arch"].iloc[0]
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "compare.csv", per_run.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    write_text_atomic(out / "compare_workloads.csv",
                      per_w.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    write_text_atomic(out / "compare_head_to_head.csv",
                      h2h.to_csv(index=False, float_format="%.10g", lineterminator="\n"))

    lines = [f"# {title or _TITLE}", ""]
    lines += data_banner(rows_all)
    lines += [f"{_count(len(runs), 'run')} of `evaluate.py`, plans fitted on **{plan_arch}**; "
              f"{_count(len(workloads), 'workload')} "
              f"({', '.join(workloads)}). Each run's numbers are those of its own report.md; ± is one sample "
              "standard deviation across runs, so it shows how much a single run's table can be trusted.", ""]
    scored_again = any(r.second_run for r in runs)
    if scored_again:
        lines += [f"**Scored on the second run** (`--second-run`): every {plan_arch} cycle error below, and every "
                  "count made from them, is the plan's error on the independent second run of its arch "
                  f"(`error_cycles_rerun`, `profiles/{plan_arch}_rerun.csv`), which no method read, not on the "
                  "profile it was fitted on (its report.md's second-run table). Cross-arch errors, speedups and "
                  "spreads are unchanged.", ""]
    kinds = [data_of(main_rows(r, workloads, methods)) for r in runs]
    lines += _md_table(["run", "path", "synthesis seed", "data"],
                       [[r.label, f"`{os.path.abspath(r.path)}`", _seed_cell(r, k), _data_words(k)]
                        for r, k in zip(runs, kinds)]).split("\n")
    lines.append("")
    notes = notes + _left_out_of_means(runs, summ, workloads, methods)
    lines += notes + ([""] if notes else [])
    lines += ["## Methods over runs", "",
              f"Cycle error on {plan_arch} (mean over workloads, then over runs); worst workload, mean: each "
              "run's worst cell, averaged over runs (not the workload worst on average, which the per-workload "
              "table shows); worst cell: the worst over all runs; cross-arch: the same plans scored on the other "
              "archs; speedup: the arithmetic mean over workloads (GCL-Sampler), and the harmonic mean over "
              "workloads (STEM+ROOT), each then averaged over runs.", ""]
    # runs whose workloads have a second run; under --second-run it is the error column already
    second = bool(across["error_cycles_rerun"].notna().any()) and not scored_again
    if second:
        lines += [f"Second run: the same plans scored on an independent second profile of {plan_arch} "
                  f"(`profiles/{plan_arch}_rerun.csv`), which no method read; a workload without one in some "
                  "run is left out of every run's mean (named in the notes above).", ""]
    rows = []
    for _, a in across.iterrows():
        rows.append([a["method"], _pct(a["error_cycles"], a["error_cycles_sd"]),
                     f"{_pct(a['error_cycles_min'])} – {_pct(a['error_cycles_max'])}",
                     _pct(a["worst_error_mean"]), f"{_pct(a['worst_error_max'])} {a['worst_error_where']}".strip(),
                     _pct(a["error_cross_arch"], a["error_cross_arch_sd"]), _pct(a["error_cycles_any_member"])]
                    + ([_pct(a["error_cycles_rerun"], a["error_cycles_rerun_sd"])] if second else [])
                    + [_su(a["speedup_mean"], a["speedup_mean_sd"]), _su(a["speedup_hmean"])])
    lines += _md_table(["method", "error (%)", "range over runs", "worst workload, mean", "worst cell",
                        "cross-arch (%)", "any-member (%)"] + (["second run (%)"] if second else [])
                       + ["speedup (arith.)", "speedup (harm.)"], rows).split("\n")
    from gclsampler.report import INFINITE_SPEEDUP_NOTE, has_infinite_speedup

    if has_infinite_speedup(per_run["speedup_mean"], per_w["speedup_mean"]):
        lines += ["", INFINITE_SPEEDUP_NOTE]  # no blank line after it: the Per run section opens with one
    # under --second-run the plan-arch errors are the second run's, which report.md shows per workload only
    source = (f"the {plan_arch} error and worst workload on each run's second run (the second column of its "
              "report.md's second-run table), cross-arch errors and speedups as its report.md has them"
              if scored_again else "as each run's report.md has them")
    lines += ["", "## Per run", "", f"{plan_arch} cycle error % (worst workload) / cross-arch error % / "
              f"arithmetic speedup, {source}.", ""]
    rows = []
    for m in methods:
        d = per_run[per_run["method"] == m].set_index("run")
        rows.append([m] + [f"{_pct(d.loc[r.label, 'error_cycles'])} ({_pct(d.loc[r.label, 'worst_error'])} "
                           f"{d.loc[r.label, 'worst_workload']}) / {_pct(d.loc[r.label, 'error_cross_arch'])} / "
                           f"{_su(d.loc[r.label, 'speedup_mean'])}" for r in runs])
    lines += _md_table(["method"] + [r.label for r in runs], rows).split("\n")
    others = [m for m in methods if m != reference]
    if others:
        lines += _head_to_head_section(runs, h2h, reference, others, plan_arch)
    lines += ["", "## Per workload", "", f"{plan_arch} cycle error (%), mean ± sd over runs (max), and mean speedup.", ""]
    rows = []
    for w in workloads:
        d = per_w[per_w["workload"] == w].set_index("method")
        rows.append([tags.get(w, w)] + [f"{_pct(d.loc[m, 'error_cycles'], d.loc[m, 'error_cycles_sd'])} "
                           f"({_pct(d.loc[m, 'error_cycles_max'])}) / {_su(d.loc[m, 'speedup_mean'])}"
                           if m in d.index else "not run (unavailable.csv)" for m in methods])
    lines += _md_table(["workload"] + methods, rows).split("\n")
    if plots:
        (out / "plots").mkdir(exist_ok=True)
        _plot(across, per_run, out / "plots" / "compare_speedup_vs_error.png", plot_stamp(rows_all, labelled_in="compare.md"),
              second_run_of=plan_arch if scored_again else None)
        lines += ["", "## Plot", "", "![error vs speedup over runs](plots/compare_speedup_vs_error.png)"]
    lines += ["", "Files: `compare.csv` (per run x method), `compare_workloads.csv` (per workload x method), "
              "`compare_head_to_head.csv`."]
    return write_text_atomic(out / "compare.md", "\n".join(lines) + "\n")


def load_runs(paths: Iterable[str | Path], reference: str | None = None,
              second_run: bool = False) -> list[EvaluationRun]:
    """``load_run`` of each path; runs labelled by their directory names, or by their full
    paths when two share a name (``a/run`` and ``b/run``). Everything ``write_comparison``
    would refuse (mixed plan archs, nothing in common, an absent ``reference``) is refused
    here, before an output exists. ``second_run``: ``on_second_run`` of each."""
    paths = list(paths)
    runs = [load_run(p) for p in paths]
    first: dict[Path, str | Path] = {}
    for given, r in zip(paths, runs):  # one run twice would count its seed twice (and broke the tables)
        key = r.path.resolve()
        if key in first:
            raise EvaluationError(f"{given}: the run {first[key]} again; each run is compared once")
        first[key] = given
    if second_run:
        runs = [on_second_run(r) for r in runs]
    _, methods, _ = common_to_all(runs)
    if reference is not None:
        _check_reference(reference, methods)
    labels = [r.label for r in runs]
    if len(set(labels)) < len(labels):  # a/run and b/run: the paths as given, which differ (one run twice is refused)
        runs = [EvaluationRun(str(g), r.path, r.seed, r.results, r.second_run, r.unavailable)
                for g, r in zip(paths, runs)]
    return runs


def compare_dirs(paths: Iterable[str | Path], out_dir: str | Path, **kw) -> Path:
    """``write_comparison`` of the runs at ``paths`` (run directories or results.csv files)."""
    return write_comparison(load_runs(paths), out_dir, **kw)


_CSV_COLUMNS = {"compare.csv": {"run", "seed", "method", "error_cycles", "worst_error", "worst_workload"},
                "compare_workloads.csv": {"workload", "method", "error_cycles", "error_cycles_max", "error_cycles_sd"},
                "compare_head_to_head.csv": {"run", "seed", "reference", "method", "lower", "tie", "higher"}}
"""Columns by which a CSV is known as compare's own (earlier versions' headers included)."""
PLOT = Path("plots") / "compare_speedup_vs_error.png"


def _written_by_compare(path: Path, out: Path) -> bool:
    """Whether the file at ``path`` is one ``write_comparison`` wrote into ``out`` (an empty
    file holds nothing to lose). The plot has no header to read: it is compare's when the
    compare.md beside it is, since the two are written together."""
    if path.is_dir():
        return False
    if path.stat().st_size == 0:
        return True
    if path.name == "compare.md":
        return first_line(path) == f"# {_TITLE}"
    if path.name in _CSV_COLUMNS:
        line = first_line(path)
        return line is not None and _CSV_COLUMNS[path.name] <= {c.strip().strip('"') for c in line.split(",")}
    md = out / "compare.md"
    return md.is_file() and _written_by_compare(md, out)


def check_comparison_files(out: str | Path, plots: bool = True) -> None:
    """Raise ``OutputError`` when ``out`` holds a compare.md, compare*.csv or plot of that name
    that compare did not write. Why: the multirun callback writes into the sweep directory,
    which also holds whatever the user put there, and replaced a user's compare.md unasked."""
    from gclsampler._safe_out import OutputError

    out = Path(out)
    for rel in [*("compare.md", *_CSV_COLUMNS), *([PLOT] if plots else [])]:
        path = out / rel
        if (path.exists() or path.is_symlink()) and not _written_by_compare(path, out):
            raise OutputError(f"{path}: exists and was not written by gclsampler compare; not replaced (move it, "
                              f"or write the comparison elsewhere: gclsampler compare {shlex.quote(str(out))} --out DIR)")


_CLOCK_SLACK_S = 2.0
"""How much older than the multirun's start a job's results.csv may look and still be its:
file times are whole seconds (or 2 s) on some file systems."""


class CompareCallback(_HydraCallback):  # type: ignore[misc,valid-type]
    """Hydra callback (conf/evaluate.yaml): after ``python evaluate.py -m seed=0,1,2 ...``,
    compare the jobs of this multirun that wrote a results.csv, into the sweep directory.

    Which jobs: those whose end this callback saw (``on_job_end``, in this process under
    Hydra's basic launcher), else those whose results.csv was written since the multirun
    began. Why: a sweep directory reused by several multiruns (a fixed ``hydra.sweep.dir``)
    also holds earlier jobs, and comparing every job dir found there compared a 1-job
    multirun against a stale job. Fewer than 2 jobs of this multirun: no comparison.

    A failure here, a file of compare's names that compare did not write included, is
    reported in one line, not raised: the jobs' own results are written and stay valid."""

    def __init__(self) -> None:
        self._started: float | None = None
        self._ended: list[Path] = []

    def on_multirun_start(self, config, **kwargs) -> None:  # noqa: D401
        import contextlib
        import sys
        import time

        self._started = time.time()
        self._ended = []
        # a comparison an earlier multirun wrote here describes jobs this one overwrites: it would
        # stay beside them, stale, when this one compares nothing (fewer than 2 jobs, or a failure)
        root = Path(str(config.hydra.sweep.dir))
        stale = [root / rel for rel in ("compare.md", *_CSV_COLUMNS, PLOT)
                 if (root / rel).is_file() and _written_by_compare(root / rel, root)]
        for f in stale:
            with contextlib.suppress(OSError):
                f.unlink()
        if stale:
            print(f"evaluate: {root}: removed the comparison of an earlier multirun there (it described other jobs)",
                  file=sys.stderr)
        from gclsampler._guard import after_an_error

        # a failed job stops the multirun before on_multirun_end: compare the jobs that finished then
        after_an_error(lambda: self._compare(root, bool(config.get("plots", True)), "that finished before the error"))

    def on_job_end(self, config, job_return, **kwargs) -> None:  # noqa: D401
        from omegaconf import OmegaConf

        out = OmegaConf.select(config, "hydra.runtime.output_dir", default=None)
        if out is not None and getattr(getattr(job_return, "status", None), "name", "") == "COMPLETED":
            self._ended.append(Path(str(out)))

    def _jobs(self, root: Path) -> list[Path]:
        if self._ended:
            return [d for d in dict.fromkeys(self._ended) if (d / "results.csv").is_file()]
        jobs = find_runs(root) if root.is_dir() else []
        if self._started is None:  # not started by Hydra: every job there
            return jobs
        return [d for d in jobs if (d / "results.csv").stat().st_mtime >= self._started - _CLOCK_SLACK_S]

    def on_multirun_end(self, config, **kwargs) -> None:  # noqa: D401
        self._compare(Path(config.hydra.sweep.dir), bool(config.get("plots", True)))

    def _compare(self, root: Path, plots: bool, which: str = "") -> None:
        import sys

        jobs = self._jobs(root)
        if len(jobs) < 2:
            return
        try:
            check_comparison_files(root, plots)
            md = compare_dirs(jobs, root, plots=plots)
        except (GclError, OSError) as exc:  # the runs succeeded; say why the summary did not (a bug still raises)
            print(f"evaluate: {root}: compare.md not written: {exc}", file=sys.stderr)
            return
        print(f"evaluate: compared {len(jobs)} runs{' ' + which if which else ''} in {md}",
              file=sys.stderr if which else sys.stdout)
