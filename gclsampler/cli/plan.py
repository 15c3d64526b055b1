"""``gclsampler plan``: look at a sampling plan, feed it to Accel-Sim, read the results back.

A plan (``plan.json``, format ``gclsampler-plan/1``) lists the invocations to simulate
and the weight of each; the estimate of any per-invocation metric is the weighted sum
over them. The three commands follow a sampled-simulation run:

* ``show``: clusters, samples, weights (and expected speedup given ``--profile``);
* ``export-accelsim``: Accel-Sim traces of only the sampled invocations + kernelslist.g;
* ``reconstruct``: the weighted estimate per metric from Accel-Sim's stdout log
  (``kernel_name = ...`` / ``gpu_sim_cycle = N`` per launch) or a per-invocation CSV.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from gclsampler.cli import shown
from gclsampler.cli._args import path_arg
from gclsampler._csv_records import csv_records
from gclsampler._kinds import is_int  # `config` is free-form: show prints a key only when it has the type the methods write
from gclsampler.errors import GclError, located
from gclsampler.trace.ampere import AS_AMPERE_HELP
from gclsampler.trace.kernel_names import same_kernel


class ResultsFormatError(GclError):
    """A results file (Accel-Sim log or CSV) that cannot be matched to the plan."""


def register(parser: argparse.ArgumentParser) -> None:
    # `gclsampler plan` alone prints this group's help on stderr and exits 2, as trace, graph and profile do
    sub = parser.add_subparsers(dest="plan_command", metavar="SUBCOMMAND")

    p = sub.add_parser("show", help="clusters, samples and weights of a plan (expected speedup with --profile)",
                       description="Summarise plan.json: one line per cluster with its size, samples and error bound.")
    p.add_argument("plan", type=path_arg, help="plan.json")
    p.add_argument("--profile", type=path_arg, help="profile.csv of the same workload: adds expected speedup and the plan's error on it")
    p.add_argument("--time-column", default="time_ns", help="profile column for speedup (default time_ns)")
    p.add_argument("--samples", action="store_true", help="also list every sampled invocation with its weight")
    p.add_argument("--limit", type=int, default=40, help="clusters (and samples) listed at most (default 40; 0 = all)")
    p.set_defaults(handler=_show)

    p = sub.add_parser("export-accelsim", help="Accel-Sim traces of the sampled invocations + kernelslist.g",
                       description="Write plain Accel-Sim traces of only the plan's sampled invocations, a "
                                   "kernelslist.g listing them in launch order, and a copy of the plan.")
    p.add_argument("plan", type=path_arg, help="plan.json")
    p.add_argument("workload_dir", type=path_arg, help="workload directory holding the traces")
    p.add_argument("out_dir", type=path_arg, help="directory to write (traces, kernelslist.g, plan.json)")
    p.add_argument("--as-ampere", action="store_true", help=AS_AMPERE_HELP)
    p.set_defaults(handler=_export)

    p = sub.add_parser("reconstruct", help="weighted estimate per metric from simulated results",
                       description="Estimate whole-workload metrics from the sampled invocations' results "
                                   "(totals as sums of weight x metric; rates such as ipc and hit rates as "
                                   "weighted means): "
                                   "an Accel-Sim stdout log (launches in kernelslist order, i.e. ascending "
                                   "sampled invocation; kernel_launch_uid is used when present) or a CSV "
                                   "with an `invocation` column and numeric metric columns.")
    p.add_argument("plan", type=path_arg, help="plan.json")
    p.add_argument("results", type=path_arg, help="Accel-Sim output log, or CSV with invocation + metric columns")
    p.add_argument("--format", choices=["auto", "accelsim", "csv"], default="auto",
                   help="results format; auto (default): a CSV when the first line is a header of comma-separated "
                        "column names (it then needs an `invocation` column), else an Accel-Sim log")
    p.add_argument("--no-name-check", action="store_true",
                   help="do not require the results' kernel names (Accel-Sim log, or a CSV's kernel_name "
                        "column) to match the plan's kernel_name")
    p.add_argument("--rate", action="append", default=[], metavar="COLUMN",
                   help="estimate COLUMN as a weighted mean, like ipc and the hit rates (repeatable)")
    p.add_argument("--json", action="store_true",
                   help="print the estimates as strict JSON: totals, means, and no_estimate (why a value is null: "
                        "missing or overflow)")
    p.set_defaults(handler=_reconstruct)


# ---------------------------------------------------------------------------------------
# show


def _fmt_bound(b: float | None) -> str:
    return "-" if b is None else f"{100 * b:.2f}%"


def _silhouette_curve(raw) -> dict[int, float] | None:
    """``{K: score}`` from the ``[[K, score], ...]`` the GCL samplers write; None if malformed."""
    from gclsampler.plan import is_finite_number

    if not isinstance(raw, list):
        return None
    pairs = [p for p in raw if isinstance(p, list) and len(p) == 2 and is_int(p[0]) and is_finite_number(p[1])]
    return {k: float(v) for k, v in pairs} if len(pairs) == len(raw) else None


def _show(args: argparse.Namespace) -> int:
    from gclsampler.plan import SamplingPlan, is_finite_number

    if args.limit < 0:
        raise GclError(f"--limit {args.limit}: must be >= 0 (0 = all)")
    plan = SamplingPlan.load(args.plan)
    out = io.StringIO()  # printed whole at the end: a bad --profile must not leave half a summary above its error
    samples = sorted(plan.samples, key=lambda s: s.invocation)
    tag = " (SYNTHETIC)" if plan.synthetic else ""
    print(f"{args.plan}: {plan.method} plan for {plan.workload}{tag}", file=out)
    print(f"  invocations {plan.n_invocations}, clusters {len(plan.clusters)}, sampled invocations "
          f"{len(samples)} ({100 * len(samples) / max(plan.n_invocations, 1):.2f}%)", file=out)
    cfg = plan.config
    k, curve = cfg.get("k"), _silhouette_curve(cfg.get("silhouette"))
    k_sil = cfg.get("k_silhouette", k)  # older plans recorded only the final K
    if is_int(k_sil) and curve and k_sil in curve:
        # the K the silhouette picked; the work split and time cuts may then make more clusters,
        # and the score of the final K is that of another labelling, not of this plan's clusters
        after = f"; the work split and time cuts made {k} clusters" if is_int(k) and k != k_sil else ""
        print(f"  K={k_sil} chosen by silhouette {curve[k_sil]:.4f} "
              f"(best {max(curve.values()):.4f}; {len(curve)} K scored){after}", file=out)
    chosen = cfg.get("strata_chosen")
    if isinstance(chosen, str) and chosen != "gcl":  # gcl_stem with strata auto: the clusters are not the K above
        n_strata = cfg.get("n_strata")  # printed only as the integer the samplers write
        n_strata = n_strata if is_int(n_strata) else len(plan.clusters)
        print(f"  clusters: the {chosen} strata ({n_strata}), which STEM sizes "
              "more cheaply than the GCL clusters (strata auto)", file=out)
    bound, epsilon = cfg.get("error_bound"), cfg.get("epsilon")
    if is_finite_number(bound):  # as floats: an int in float range can be past it times 100 (OverflowError)
        eps = f" (epsilon {100 * float(epsilon):g}%)" if is_finite_number(epsilon) else ""
        print(f"  predicted error bound of the total: {_fmt_bound(float(bound))}{eps}", file=out)

    if args.profile is not None:
        _show_profile(plan, args.profile, args.time_column, out, args.plan)

    by_cluster: dict[int, list] = {}
    for s in samples:
        by_cluster.setdefault(s.cluster, []).append(s)
    limit = args.limit if args.limit > 0 else None
    print(f"  {'cluster':>7} {'size':>8} {'samples':>7} {'error':>8}  representative(s)", file=out)
    clusters = sorted(plan.clusters, key=lambda c: c.id)
    for c in clusters[:limit]:
        members = by_cluster.get(c.id, [])
        reps = ", ".join(f"{s.invocation}:{shown(s.kernel_name)}" for s in members[:2])
        if len(members) > 2:
            reps += f", ... (+{len(members) - 2})"
        print(f"  {c.id:>7} {c.size:>8} {len(members):>7} {_fmt_bound(c.error_bound):>8}  {reps}", file=out)
    if limit is not None and len(clusters) > limit:
        print(f"  ... {len(clusters) - limit} more clusters (--limit 0 lists all)", file=out)
    if args.samples:
        print(f"  {'invocation':>10} {'cluster':>7} {'weight':>12}  kernel", file=out)
        for s in samples[:limit]:
            # ten digits: six printed a weight of 1234567 as 1.23457e+06 beside its cluster's exact size
            print(f"  {s.invocation:>10} {s.cluster:>7} {s.weight:>12.10g}  {shown(s.kernel_name)}", file=out)
        if limit is not None and len(samples) > limit:
            print(f"  ... {len(samples) - limit} more samples", file=out)
    sys.stdout.write(out.getvalue())
    return 0


def _show_profile(plan, path: Path, column: str, out, plan_path: Path | None = None) -> None:
    from gclsampler.plan import numeric_column
    from gclsampler.profile import read_profile

    prof = read_profile(path)
    if len(prof) != plan.n_invocations:
        raise ResultsFormatError(located(path, None, "invocation",
                                         f"{len(prof)} rows, but the plan covers {plan.n_invocations} invocations"))
    # names compared as `gclsampler validate`, reconstruct and export-accelsim compare them:
    # one kernel may be spelt mangled, demangled or spaced otherwise in another tool's export
    samples = sorted(plan.samples, key=lambda s: s.invocation)
    inv = np.array([s.invocation for s in samples], dtype=np.int64)
    names = prof["kernel_name"].iloc[inv].astype(str).to_numpy(dtype=object)
    for name, s in zip(names, samples):
        if not same_kernel(name, s.kernel_name):
            from gclsampler.profile import ProfileRowLines

            # the row's physical line: a blank line or a quoted line break above it made row + 2 name another row
            raise _name_mismatch(path, ProfileRowLines(path)(s.invocation), "kernel_name", name, s, plan_path)
    if column not in prof.columns:
        raise ResultsFormatError(located(path, 1, column, "no such column (--time-column)"))
    t = numeric_column(prof, column, path)
    sampled = t[plan.invocations].sum()
    if not np.isfinite(t).all():
        raise ResultsFormatError(located(path, None, column, "needs finite values"))
    est, true = plan.estimate(t), float(t.sum())
    if sampled > 0:
        print(f"  expected speedup {true / sampled:.2f}x ({column}: all invocations {true:.6g} / sampled {sampled:.6g})",
              file=out)
    else:  # a valid profile, as `sample` and `stem` take it: only the ratio has no number
        print(f"  expected speedup: n/a (the sampled invocations' {column} sums to {sampled:.6g})", file=out)
    if true > 0:
        print(f"  estimate of total {column} {est:.6g} vs profile {true:.6g}: error {100 * abs(est - true) / true:.2f}%",
              file=out)


def _name_mismatch(path, line, field: str, got: str, sample, plan_path=None, hint: str = "") -> ResultsFormatError:
    """A sampled invocation whose kernel is another one here: the plan was made for another
    workload (or the file belongs to one), and its estimate would be silently wrong."""
    of = f" of {plan_path}" if plan_path is not None else ""
    return ResultsFormatError(located(path, line, field, f"{got[:100]!r}, but sampled invocation {sample.invocation}"
                                                         f"{of} is {sample.kernel_name[:100]!r}{hint}"))


# ---------------------------------------------------------------------------------------
# export-accelsim


def _export(args: argparse.Namespace) -> int:
    from gclsampler.plan import SamplingPlan
    from gclsampler.trace import export_accelsim, list_invocations

    from gclsampler._safe_out import check_out_dir

    check_out_dir(args.out_dir, "plan export-accelsim", inputs=[args.workload_dir, args.plan])
    from gclsampler.validate import require_valid_workload

    # duplicate ids would overwrite each other
    require_valid_workload(args.workload_dir, profile=False, traces=True, as_ampere=args.as_ampere)
    plan = SamplingPlan.load(args.plan)
    inv = sorted(int(i) for i in plan.invocations)
    infos = {i.invocation: i for i in list_invocations(args.workload_dir)}
    from gclsampler.trace.workload import ids_not_one_to_n

    problem = ids_not_one_to_n(infos, args.workload_dir, "export-accelsim")  # it exported the trace listed before, exit 0
    if problem:
        raise GclError(problem)
    if len(infos) != plan.n_invocations:
        raise GclError(located(args.workload_dir, None, "kernelslist.g",
                               f"{len(infos)} kernel invocations, but {args.plan} covers {plan.n_invocations}"))
    for s in sorted(plan.samples, key=lambda s: s.invocation):
        if s.invocation not in infos:
            raise GclError(located(args.workload_dir, None, "kernelslist.g",
                                   f"no trace of sampled invocation {s.invocation} of {args.plan}"))
        info = infos[s.invocation]
        if not same_kernel(info.header.name, s.kernel_name):  # as `gclsampler validate` compares profile and traces
            raise _name_mismatch(Path(args.workload_dir) / info.path, None, "-kernel name", info.header.name, s,
                                 args.plan)
    from gclsampler._safe_out import replace_dir
    from gclsampler.trace.workload import describe_export

    facts: list = []
    with replace_dir(args.out_dir, "plan export-accelsim", inputs=[args.workload_dir, args.plan]) as tmp:
        written = export_accelsim(args.workload_dir, tmp, invocations=inv, facts=facts, infos=list(infos.values()),
                                  as_ampere=args.as_ampere)
        # the user's plan byte for byte, which load accepted: saving it again would refuse a
        # NaN that another tool's json.dump left in its free-form config
        shutil.copyfile(args.plan, tmp / "plan.json")
    print(f"{args.out_dir}: {len(written)} Accel-Sim traces of {plan.n_invocations} invocations "
          f"+ kernelslist.g + plan.json")
    for line in describe_export(facts):
        print(f"  note: {line}")
    q = shlex.quote  # lines to paste into a shell: a path with a space must stay one argument
    print("  run Accel-Sim on kernelslist.g, then: gclsampler plan reconstruct "
          f"{q(str(Path(args.out_dir) / 'plan.json'))} <accel-sim stdout log>")
    print(f"  or let gclsampler run it, one process per invocation: gclsampler simulate {q(str(args.plan))} "
          f"{q(str(args.workload_dir))} --out DIR" + (" --as-ampere" if args.as_ampere else ""))
    return 0


# ---------------------------------------------------------------------------------------
# reconstruct

_KV = re.compile(r"^\s*(kernel_name|kernel_launch_uid|gpu_sim_cycle|gpu_sim_insn)\s*=\s*(.*?)\s*$")
# Accel-Sim/GPGPU-Sim per-kernel stats -> metric names in the estimate
_LOG_METRICS = {"gpu_sim_cycle": "cycles", "gpu_sim_insn": "instructions"}


@dataclass
class _Launch:
    line: int
    names: list[str]
    uids: list[int]
    values: dict[str, float]


def parse_accelsim_log(path: Path) -> list[_Launch]:
    """Per-kernel stat blocks of an Accel-Sim stdout log, in the order they were printed.

    Each finished kernel prints ``kernel_name = <names> ``, ``kernel_launch_uid = <uids> ``
    and then ``gpu_sim_cycle = N`` / ``gpu_sim_insn = N`` (GPGPU-Sim ``gpu_print_stat``);
    a block with several launch uids ran kernels concurrently and cannot be attributed.
    """
    launches: list[_Launch] = []
    try:
        fh = open(path, errors="replace")
    except OSError as exc:
        raise ResultsFormatError(located(path, None, None, f"cannot read: {exc.strerror}")) from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            m = _KV.match(line)
            if not m:
                continue
            key, value = m.groups()
            if key == "kernel_name":
                # one name per kernel, but names may hold spaces ("void f<a, b>(...)"): the
                # number of kernels in the block is read from kernel_launch_uid
                launches.append(_Launch(lineno, [value], [], {}))
                continue
            if not launches:
                raise ResultsFormatError(located(path, lineno, key, "appears before any kernel_name line"))
            cur = launches[-1]
            if key == "kernel_launch_uid":
                try:
                    cur.uids = [_strict(int, u) for u in value.split()]
                except ValueError:
                    raise ResultsFormatError(located(path, lineno, key, f"not an integer: {value!r}")) from None
            else:
                try:
                    v = _strict(float, value)
                except ValueError:
                    raise ResultsFormatError(located(path, lineno, key, f"not a number: {value!r}")) from None
                if not math.isfinite(v):
                    raise ResultsFormatError(located(path, lineno, key, f"not finite: {value!r}"))
                if key == "gpu_sim_cycle" and v <= 0:  # a kernel takes time; ipc = insn / cycles
                    raise ResultsFormatError(located(path, lineno, key, f"must be > 0, found {value!r}"))
                if v < 0:
                    raise ResultsFormatError(located(path, lineno, key, f"must be >= 0, found {value!r}"))
                cur.values[_LOG_METRICS[key]] = v
    for b in launches:
        if len(b.uids) > 1:
            raise ResultsFormatError(located(path, b.line + 1, "kernel_launch_uid",
                                             f"{len(b.uids)} kernels in one stats block ran concurrently; "
                                             "simulate the sampled kernels on one stream"))
        if "cycles" not in b.values:
            raise ResultsFormatError(located(path, b.line, "gpu_sim_cycle", "missing for this kernel"))
    return launches


def _values_from_log(plan, path: Path, check_names: bool) -> dict[str, dict[int, float]]:
    samples = sorted(plan.samples, key=lambda s: s.invocation)
    launches = parse_accelsim_log(path)
    if len(launches) != len(samples):
        raise ResultsFormatError(located(path, None, "kernel_name",
                                         f"{len(launches)} simulated kernels, but the plan samples {len(samples)} "
                                         "invocations" + (" (was the simulation cut short?)" if len(launches) < len(samples)
                                                          else " (a log of another kernelslist, or of two runs?)")))
    if all(b.uids for b in launches):  # uid i = i-th launch of the exported kernelslist
        uids = sorted(b.uids[0] for b in launches)
        if uids != list(range(1, len(samples) + 1)):
            raise ResultsFormatError(located(path, None, "kernel_launch_uid",
                                             f"expected 1..{len(samples)} once each (one per sampled invocation)"))
        launches = sorted(launches, key=lambda b: b.uids[0])
    metrics = sorted({k for b in launches for k in b.values})
    out: dict[str, dict[int, float]] = {m: {} for m in metrics}  # invocation -> value, sampled ones only
    for s, b in zip(samples, launches):
        if check_names and not same_kernel(b.names[0], s.kernel_name):
            raise _name_mismatch(path, b.line, "kernel_name", b.names[0], s, hint=" (--no-name-check to skip)")
        for m in metrics:
            if m not in b.values:
                raise ResultsFormatError(located(path, b.line, m, "missing for this kernel"))
            out[m][s.invocation] = b.values[m]
    return out


def _values_from_csv(plan, path: Path, check_names: bool = True) -> dict[str, dict[int, float]]:
    wanted = set(int(i) for i in plan.invocations)
    try:
        fh = open(path, newline="", encoding="utf-8-sig", errors="replace")  # -sig: Excel's BOM
    except OSError as exc:
        raise ResultsFormatError(located(path, None, None, f"cannot read: {exc.strerror}")) from None
    with fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or "invocation" not in [h.strip() for h in header]:
            raise ResultsFormatError(located(path, 1, "invocation", "no such column"))
        header = [h.strip() for h in header]
        seen: set[str] = set()
        for h in header:  # a repeated column would silently give the last copy's values
            if h and h in seen:
                raise ResultsFormatError(located(path, 1, h, "column appears twice"))
            seen.add(h)
        inv_col = header.index("invocation")
        # plan columns that `gclsampler simulate` copies into simulated.csv are not metrics
        cols = [j for j, h in enumerate(header) if j != inv_col and h and h not in ("cluster", "weight")]
        rows: dict[int, tuple[int, list[str]]] = {}
        for lineno, row in csv_records(reader, lambda line, why: ResultsFormatError(located(path, line, None, why))):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise ResultsFormatError(located(path, lineno, None, f"{len(row)} fields, header has {len(header)}"))
            try:
                inv = _strict(int, row[inv_col])
            except ValueError:
                raise ResultsFormatError(located(path, lineno, "invocation", f"not an integer: {row[inv_col]!r}")) from None
            if inv in rows:
                raise ResultsFormatError(located(path, lineno, "invocation", f"{inv} already on line {rows[inv][0]}"))
            if not 0 <= inv < plan.n_invocations:  # a file keyed by the 1-based -kernel id read as shifted by one
                raise ResultsFormatError(located(path, lineno, "invocation", f"{inv} is outside the plan's "
                                                 f"0..{plan.n_invocations - 1} (0-based: -kernel id minus 1)"))
            if inv in wanted:
                rows[inv] = (lineno, row)
    missing = sorted(wanted - set(rows))
    if missing:
        raise ResultsFormatError(located(path, None, "invocation",
                                         f"no row for sampled invocation(s) {missing[:10]}"))
    if check_names and "kernel_name" in header:  # a results file of another workload
        name_col = header.index("kernel_name")
        for s in sorted(plan.samples, key=lambda s: s.invocation):
            lineno, row = rows[s.invocation]
            if not same_kernel(row[name_col], s.kernel_name):
                raise _name_mismatch(path, lineno, "kernel_name", row[name_col], s, hint=" (--no-name-check to skip)")
    from gclsampler.simulate import METRICS

    known = {*METRICS, "time_ns"}  # what `gclsampler simulate` writes: metrics even when no cell holds a value
    out: dict[str, np.ndarray] = {}
    for j in cols:
        parsed: dict[int, float] = {}
        bad: tuple[int, str] | None = None
        number = False  # a cell Python reads as a float (nan and inf too): the column is meant as numbers
        for inv, (lineno, row) in rows.items():
            if not row[j].strip():
                continue  # an empty cell: no value (e.g. a simulated hit rate of a cache without accesses)
            try:
                v = _strict(float, row[j])
            except ValueError:
                bad = bad or (lineno, row[j])
                continue
            number = True
            if not math.isfinite(v) or v < 0 or (v == 0 and header[j] == "cycles"):
                bad = bad or (lineno, row[j])  # never negative; a kernel takes cycles, as the log path says
                continue
            parsed[inv] = v
        if not (parsed or number or header[j] in known):
            continue  # a text column (kernel_name, grid, ...): not a metric
        # a metric column with no usable value in any sampled row was dropped here, so `cycles` of
        # a one-sample plan whose simulation failed vanished from the estimate without a word
        if bad is not None:
            low = "> 0" if header[j] == "cycles" else ">= 0"
            raise ResultsFormatError(located(path, bad[0], header[j], f"not a finite number {low}: {bad[1]!r}"))
        out[header[j]] = parsed  # invocation -> value: a plan of 2**62 invocations needs no dense array
    if not out:
        raise ResultsFormatError(located(path, 1, None, "no numeric metric column besides `invocation`"))
    return out


def _looks_like_csv(path: Path) -> bool:
    """A table whose first line is a header of column names, with or without ``invocation``
    (its absence is then named as a CSV problem, not read as an Accel-Sim log that "simulated
    0 kernels"); a log's first line has spaces, ``=`` or a single field."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline()
    except OSError as exc:
        raise ResultsFormatError(located(path, None, None, f"cannot read: {exc.strerror}")) from None
    fields = [c.strip() for c in next(csv.reader([first]), [])]
    if "invocation" in fields:
        return True
    for sep, name in ((";", "semicolons"), ("\t", "tabs")):  # read as a log, it "simulated 0 kernels"
        if "invocation" in [c.strip() for c in first.split(sep)]:
            raise ResultsFormatError(located(path, 1, None, f"a table separated by {name}; write it with commas "
                                                            "(CSV), as simulated.csv is"))
    return len(fields) >= 2 and "=" not in first and all(f and not any(ch.isspace() for ch in f) for f in fields)


def _strict(parse, text: str):
    """``parse`` (int or float) of a results cell, refusing what Python reads but no simulator
    or script writes: ``1_0`` (read as 10) and non-ASCII digits, as the profile importers do."""
    from gclsampler.profile import refuse_python_only_digits

    refuse_python_only_digits(text.strip())
    return parse(text)


def reconstruct(plan, results: Path, fmt: str = "auto", check_names: bool = True,
                rates: tuple[str, ...] = ()) -> dict:
    """Whole-workload estimates from the sampled invocations' results.

    ``{"totals": {m: Σ w·M}, "means": {m: Σ w·M / N}}``: additive metrics (cycles,
    instructions, time) are estimated as totals; rates (IPC, hit rates, occupancy, and any
    column named in ``rates``) as weighted means, since a weighted *sum* of per-invocation
    IPCs is no IPC. From an Accel-Sim log, ``ipc_of_totals`` = instructions / cycles too.
    """
    from gclsampler.score import weighted_estimate

    if fmt == "auto":
        fmt = "csv" if _looks_like_csv(results) else "accelsim"
    values = _values_from_csv(plan, results, check_names) if fmt == "csv" else \
        _values_from_log(plan, results, check_names)
    if fmt == "accelsim" and "cycles" in values and "instructions" in values:
        cyc = values["cycles"]
        values["ipc"] = {i: (v / cyc[i] if cyc[i] else math.nan) for i, v in values["instructions"].items()}
    unknown = [r for r in rates if r not in values]
    if unknown:
        raise ResultsFormatError(located(results, 1, unknown[0], "no such metric (--rate)"))
    with np.errstate(over="ignore", invalid="ignore"):  # a sum beyond float64 is inf: null in --json
        est: dict = weighted_estimate(plan, values, rates)
    tot = est["totals"]
    if tot.get("cycles") and tot.get("instructions") is not None:
        # a cycles total past float64 (inf) has no ratio: x / inf gave 0.0, printed as an IPC of 0
        # beside cycles' "overflow"; NaN reads as overflow too (no_estimate_reasons, null in --json)
        cyc = tot["cycles"]
        est["ipc_of_totals"] = tot["instructions"] / cyc if math.isfinite(cyc) else math.nan
    return est


def _reconstruct(args: argparse.Namespace) -> int:
    from gclsampler.plan import PlanError, SamplingPlan
    from gclsampler.score import finite_or_null, no_estimate_reasons

    plan = SamplingPlan.load(args.plan)
    if plan.n_invocations == 0:  # load accepts it; the weighted means divide by it
        raise PlanError(f"{args.plan}: n_invocations: 0; a plan of no invocations has nothing to estimate")
    with _read_again(args.results) as results:
        est = reconstruct(plan, results, args.format, not args.no_name_check, tuple(args.rate))
        fmt = args.format if args.format != "auto" else ("csv" if _looks_like_csv(results) else "accelsim")
        sim_by = _simulated_by(results) if fmt == "csv" else f"Accel-Sim log {args.results}"
    n = plan.n_invocations
    if args.json:
        doc = {"plan": str(args.plan), "results": str(args.results), "workload": plan.workload,
               "method": plan.method, "synthetic": plan.synthetic, "simulated_by": sim_by,
               "n_invocations": n, "n_sampled": len(plan.samples), **est,
               "no_estimate": no_estimate_reasons(est)}
        print(json.dumps(finite_or_null(doc), indent=1, allow_nan=False))
        return 0
    tag = " (SYNTHETIC)" if plan.synthetic else ""
    print(f"{args.plan}: {plan.method} plan for {plan.workload}{tag}; {len(plan.samples)} sampled of {n} invocations")
    if sim_by:
        print(f"  SIMULATED values: {sim_by}")
    print("  totals are sums of weight x metric; rates are weighted means per invocation (sum of weight x metric / N)")
    print(f"  {'metric':<28} {'estimate':>18}  kind")
    for m, v in est["totals"].items():
        print(f"  {m:<28} {_num(v):>18}  total (mean per invocation {_num(None if v is None else v / n)})")
    for m, v in est["means"].items():
        print(f"  {m:<28} {_num(v):>18}  weighted mean")
    if "ipc_of_totals" in est:
        print(f"  {'ipc_of_totals':<28} {_num(est['ipc_of_totals']):>18}  instructions / cycles")
    return 0


@contextlib.contextmanager
def _read_again(path: Path) -> Iterator[Path]:
    """``path``, or a private copy of it when it is a pipe (``<(...)``, ``/dev/stdin``, a FIFO):
    the results are read several times (to tell a CSV from a log, then to parse it), and a
    pipe's second read found it empty ("0 simulated kernels ... cut short?"). Errors name
    ``path``, not the copy."""
    if path.is_file() or not path.exists():
        yield path
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsFormatError(located(path, None, None, f"cannot read: {exc.strerror}")) from None
    with tempfile.TemporaryDirectory(prefix="gclsampler-results-") as d:
        copy = Path(d) / (path.name or "results")
        copy.write_bytes(data)
        try:
            yield copy
        except GclError as exc:
            exc.args = (str(exc).replace(str(copy), str(path)),)
            raise


def _simulated_by(path: Path) -> str | None:
    """The ``simulated_by`` label of a ``gclsampler simulate`` CSV (first row), so the estimate
    built from it is labelled as simulated too; None for other files."""
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
            row = next(csv.DictReader(fh), None)
    except (OSError, csv.Error):
        return None
    return (row or {}).get("simulated_by") or None


def _num(v) -> str:
    if v is None:
        return "- (missing)"
    return f"{v:.6g}" if math.isfinite(v) else "- (overflow)"
