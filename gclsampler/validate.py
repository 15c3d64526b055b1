"""Consistency checks of a workload directory, run before any expensive work.

Why: each reader (``trace``, ``profile``) checks its own file, but nothing checked the
files *against each other*. A profile.csv missing one row gave a plan for N-1
invocations; kernel names that differ between profile and traces, two traces with the
same ``-kernel id`` and a file listed twice in kernelslist.g were accepted; the
pipeline then trained for minutes before failing on an embeddings shape that named no
file. ``check_workload`` finds all of these in seconds (it reads trace *headers* only)
and reports one located line per problem; ``gclsampler validate WL`` prints them, and
``train.py``, ``evaluate.py``, ``gclsampler sample`` and ``gclsampler stem`` call
``require_valid_workload`` first.

Errors make the workload unusable (exit 2); warnings flag what Accel-Sim or a reader
may handle differently (an unknown binary or tracer version, registers or shared
memory that differ between profile and trace) and do not stop a run.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from gclsampler._kinds import is_real, is_whole
from gclsampler.errors import GclError, located
from gclsampler.trace.ampere import REWRITTEN_BINARY_VERSIONS as REWRITTEN
from gclsampler.trace.kernel_names import same_kernel

if TYPE_CHECKING:
    import pandas as pd

ACCELSIM_BINARY_VERSIONS = (70, 75, 80, 86)
"""Binary versions Accel-Sim's simulator knows; others it rejects silently (DESIGN.md)."""
TRACER_VERSIONS = (3, 4, 5)
MAX_PER_CHECK = 20
"""Lines printed per kind of problem; the rest are counted in one summary line."""


class WorkloadError(GclError):
    """A workload directory whose files disagree with each other (names the file and field)."""


@dataclass(frozen=True)
class Problem:
    """One finding: ``severity`` is ``"error"`` or ``"warning"``; ``text`` is located."""

    severity: str
    text: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.text}"


class _Report:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[Problem] = []
        self._counts: dict[str, int] = {}

    def add(self, severity: str, text: str, kind: str | None = None) -> None:
        """Record a problem; at most ``MAX_PER_CHECK`` of one ``kind`` are kept verbatim."""
        if kind is not None:
            c = self._counts[kind] = self._counts.get(kind, 0) + 1
            if c > MAX_PER_CHECK:
                return
        self.problems.append(Problem(severity, text))

    def finish(self) -> list[Problem]:
        for kind, c in self._counts.items():
            if c > MAX_PER_CHECK:
                sev, _, what = kind.partition(":")
                self.problems.append(Problem(sev, located(self.root, None, what,
                                                          f"{c - MAX_PER_CHECK} more like the above")))
        return self.problems


def _kernelslist(root: Path, rep: _Report, required: bool) -> tuple[Path | None, list[tuple[int, str]]]:
    """(path, [(line, trace file name)]) with per-line problems recorded.

    A directory without kernelslist.g is a profile-only workload (enough for the
    profile-based samplers); it is an error only when ``required``. If it holds
    ``kernel-<N>.traceg`` files all the same, the trace commands read those in id order, so
    they are checked as the listed traces would be: a gap in them was "ok" here while
    ``trace info`` counted one invocation fewer.
    """
    from gclsampler.trace import TraceFormatError
    from gclsampler.trace.workload import (kernelslist_lines, kernelslist_path, listed_file_problem, repeat_problem,
                                           trace_files)

    p = kernelslist_path(root)  # the trace commands' choice, kernelslist.g before the raw tracer's kernelslist
    if p is None:
        try:
            found = trace_files(root)
        except TraceFormatError as exc:
            if "no kernel-<N>.traceg files" not in str(exc):
                rep.add("error", str(exc).splitlines()[0])
            found = []
        if found:
            return None, [(None, s) for s in found]
        if required:
            rep.add("error", located(root, None, "kernelslist.g", "missing: a workload directory lists its traces "
                                                                   "in kernelslist.g"))
        return None, []
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        rep.add("error", located(p, None, None, f"cannot read: {exc.strerror or exc}"))
        return p, []
    except UnicodeDecodeError as exc:
        rep.add("error", located(p, raw[:exc.start].count(b"\n") + 1, None, "not UTF-8 text"))
        return p, []
    entries: list[tuple[int, str]] = []
    seen: dict[str, tuple[int, str]] = {}
    for i, s, problem in kernelslist_lines(text):
        if problem:
            rep.add("error", located(p, i, "kernelslist", problem), "error:kernelslist line")
            continue
        if s.startswith("Memcpy"):
            continue
        problem = repeat_problem(seen, i, s)
        if problem:
            rep.add("error", located(p, i, "kernelslist", problem), "error:kernelslist duplicate")
            continue
        problem = listed_file_problem(root, s)
        if problem:
            rep.add("error", located(p, i, "kernelslist", problem), "error:kernelslist missing file")
            continue
        entries.append((i, s))
    if not seen and not any(pr.severity == "error" for pr in rep.problems):
        rep.add("error", located(p, None, "kernelslist", "lists no kernel traces"))
    return p, entries


def _read_error(path: Path, read) -> tuple[Any, str | None]:
    """``(read(path), None)``, or ``(None, located error)`` from the reader (or the OS)."""
    from gclsampler.trace import TraceFormatError

    try:
        return read(path), None
    except TraceFormatError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, located(path, None, None, f"cannot read: {exc.strerror or exc}")


def _read_or_report(path: Path, read, rep: _Report, tag: str):
    """``read(path)``, or None with the reader's located error (or the OS's) reported."""
    got, err = _read_error(path, read)
    if err is not None:
        rep.add("error", err, tag)
    return got


def _headers(root: Path, kl: Path | None, entries: list[tuple[int, str]], rep: _Report,
             as_ampere: bool = False) -> list[Any] | None:
    """Trace headers in kernelslist order, or None when one cannot be read."""
    from gclsampler.trace import read_header
    from gclsampler.trace.workload import launch_order_problem

    heads: list[Any] = []
    ok = True
    for _, name in entries:
        got = _read_or_report(root / name, read_header, rep, "error:trace header")
        if got is None:
            ok = False
            continue
        heads.append((name, got[0]))
    if not ok:
        return None
    first: dict[int, str] = {}
    unknown: dict[int, list] = {}  # binary version -> [first trace, traces]
    prev = None
    for name, h in heads:
        if h.kernel_id in first:
            rep.add("error", located(root / name, None, "-kernel id",
                                     f"{h.kernel_id} is also the id of {first[h.kernel_id]}"), "error:duplicate id")
        else:
            first[h.kernel_id] = name
        problem = None if prev is None else launch_order_problem((prev[0], prev[1].kernel_id), name, h.kernel_id)
        if problem:
            rep.add("error", located(kl or root, None, "kernelslist", problem), "error:order")
        prev = (name, h)
        if h.binary_version not in ACCELSIM_BINARY_VERSIONS and not (as_ampere and h.binary_version in REWRITTEN):
            unknown.setdefault(h.binary_version, [name, 0])[1] += 1
        if h.tracer_version not in TRACER_VERSIONS:
            rep.add("warning", located(root / name, None, "-accelsim tracer version",
                                       f"{h.tracer_version} is not a known tracer version "
                                       f"({', '.join(map(str, TRACER_VERSIONS))})"), "warning:tracer version")
    # one line per version, not per trace: every trace of a GPU shares it (a real H200
    # workload printed 21 lines of it before each train.py run)
    for version, (name, n) in unknown.items():
        hint = ("; --as-ampere (trace/plan export-accelsim, simulate) runs them on an Ampere model"
                if version in REWRITTEN else "")
        rep.add("warning", located(root / name, None, "-binary version",
                                   f"{version} ({n} of {len(heads)} traces) is not one Accel-Sim knows "
                                   f"({', '.join(map(str, ACCELSIM_BINARY_VERSIONS))}); it skips such "
                                   f"kernels silently{hint}"))
    return [h for _, h in heads]


def _profile_vs_traces(prof_path: Path, prof, names: list[str], heads: list[Any], rep: _Report,
                       kl: Path | None, own: bool = True) -> None:
    """``kl``: the workload's kernelslist.g, None when it has none (the traces were globbed);
    passed in because ``prof_path`` may sit in ``profiles/``, one level below it."""
    from gclsampler.profile import ProfileRowLines, format_dim3

    line_of = ProfileRowLines(prof_path)  # physical lines (blank lines, quoted line breaks), found on first use
    n_prof, n_tr = len(prof), len(heads)
    if n_prof != n_tr:
        rep.add("error", located(prof_path, None, "invocation",
                                 f"{n_prof} rows, but " + (f"{kl.name} lists" if kl is not None else
                                                          "the directory holds (no kernelslist.g)") +
                                 f" {n_tr} kernel traces (one row per invocation, in launch order)"))
    from gclsampler.trace.workload import ids_not_one_to_n

    ids = [h.kernel_id for h in heads]
    problem = ids_not_one_to_n([i - 1 for i in ids], prof_path.parent, "a workload with a profile") if own else None
    if problem:
        rep.add("error", problem)
    pk = prof["kernel_name"].astype(str).tolist()
    pg = prof["grid"].astype(str).tolist()
    pb = prof["block"].astype(str).tolist()
    extra = {c: prof[c].to_numpy() for c in ("nregs", "shmem") if c in prof.columns}
    # row i is the trace with -kernel id i + 1 (invocation = id - 1), so a trace that is missing
    # or unlisted (reported above) leaves its row unchecked instead of shifting every later
    # row onto the next trace, which reported each of them as a wrong kernel, grid and block
    pairs = list(zip(range(n_tr), range(n_tr)))
    if ids and len(set(ids)) == len(ids) and min(ids) >= 1 and max(ids) <= n_prof:
        pairs = [(h.kernel_id - 1, j) for j, h in enumerate(heads)]
    for i, j in pairs:
        if i >= n_prof:
            continue
        h, trace = heads[j], names[j]
        if not same_kernel(pk[i], h.name):  # mangled trace vs demangled profile names are one kernel
            rep.add("error", located(prof_path, line_of(i), "kernel_name",
                                     f"{pk[i][:100]!r}, but {trace} is {h.name[:100]!r}"), "error:kernel_name")
        for col, have, want in (("grid", pg[i], format_dim3(h.grid)), ("block", pb[i], format_dim3(h.block))):
            if have != want:
                rep.add("error", located(prof_path, line_of(i), col, f"{have}, but {trace} has {want}"), f"error:{col}")
        if own:
            for col, v in extra.items():
                want = getattr(h, col)
                if v[i] == v[i] and want and int(v[i]) != int(want):  # NaN-safe; 0 = header did not say
                    rep.add("warning", located(prof_path, line_of(i), col, f"{v[i]:g}, but {trace} says {want}"),
                            f"warning:{col}")


def _partial_cycles(path: Path, prof, rep: _Report, scored: bool | None) -> None:
    """``cycles`` empty in some rows but not all (an ncu export with ``n/a`` for a launch).

    A wall-time source leaves every row empty and is scored on time; a gap in some rows
    only cannot be scored at all (``score_plan`` refuses it, as any estimate would drop those
    rows' cycles). ``scored``: the caller scores plans on this profile (train.py, evaluate.py),
    so it is an error found before training instead of after it; False (``gclsampler
    validate``) a warning; None (a sampler, which reads ``time_ns``) not checked."""
    if scored is None or "cycles" not in prof.columns:
        return
    import numpy as np

    empty = np.flatnonzero(prof["cycles"].isna().to_numpy())
    if 0 < empty.size < len(prof):
        from gclsampler.profile import ProfileRowLines

        first = int(empty[0])
        rep.add("error" if scored else "warning",
                located(path, ProfileRowLines(path)(first), "cycles",
                        f"empty in {empty.size} of {len(prof)} rows (first: invocation {first}); plans cannot be "
                        "scored on cycles some launches lack, so train.py and evaluate.py refuse it (profile "
                        "those launches again, or `gclsampler profile import --clock-mhz` fills them as an "
                        "estimate)"))


def _misspelt_columns(prof_path: Path, prof, rep: _Report) -> None:
    """A warning for each column close to one gclsampler reads but not it (``l1_hitrate``,
    ``IPC``). Why: extra columns are kept as they are, so a misspelt metric was dropped from
    every score without a word."""
    import difflib

    from gclsampler.profile import OPTIONAL_COLUMNS, REQUIRED_COLUMNS

    known = [*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS]
    norm = {k.replace("_", "").lower(): k for k in known}
    for col in prof.columns:
        if col in known:
            continue
        key = str(col).replace("_", "").lower()
        close = [norm[key]] if key in norm else difflib.get_close_matches(str(col), known, n=1, cutoff=0.85)
        if close:
            rep.add("warning", located(prof_path, 1, str(col), f"not a column gclsampler reads; did you mean "
                                                              f"{close[0]!r}? (extra columns are kept, unread)"),
                    "warning:column name")


def _profile_vs_profile(path: Path, prof, ref_path: Path, ref, rep: _Report) -> None:
    """Row i of every ``profiles/<arch>.csv`` must be the same launch as row i of profile.csv:
    same kernel name, grid and block (launch facts, whatever the architecture)."""
    import numpy as np

    from gclsampler.profile import ProfileRowLines

    if len(prof) != len(ref):
        rep.add("error", located(path, None, "invocation", f"{len(prof)} rows, but {ref_path.name} has {len(ref)}"))
    n = min(len(prof), len(ref))
    cols = ("kernel_name", "grid", "block")
    have = {c: prof[c].astype(str).to_numpy(dtype=object)[:n] for c in cols}
    want = {c: ref[c].astype(str).to_numpy(dtype=object)[:n] for c in cols}
    differ = {c: have[c] != want[c] for c in cols}
    for i in np.flatnonzero(differ["kernel_name"]).tolist():  # two profilers' spellings of one kernel agree
        differ["kernel_name"][i] = not same_kernel(have["kernel_name"][i], want["kernel_name"][i])
    line_of, ref_line_of = ProfileRowLines(path), ProfileRowLines(ref_path)
    for i in np.flatnonzero(differ["kernel_name"] | differ["grid"] | differ["block"]).tolist():
        for c in cols:
            if differ[c][i]:
                a, b = (repr(have[c][i][:100]), repr(want[c][i][:100])) if c == "kernel_name" else (have[c][i], want[c][i])
                rep.add("error", located(path, line_of(i), c, f"{a}, but {ref_path.name} line {ref_line_of(i)} is {b}"),
                        f"error:{path.name} {c}")


def check_profile_usable(prof, where: str | os.PathLike, time_column: str = "time_ns") -> None:
    """Raise ``WorkloadError`` when a (format-valid) profile cannot drive a plan.

    All-zero times are a valid table but gave a plan with "speedup nanx" and a
    "predicted error bound 0.00 %"; every sampler needs some measured time.
    """
    if time_column in prof.columns:
        from gclsampler.plan import finite_column

        # --time-column may name a text column, or one an import left empty (cycles from nsys)
        t = finite_column(prof, time_column, where, WorkloadError, "every sampler needs a time in every row")
        if t.size and not (t > 0).any():
            raise WorkloadError(located(where, None, time_column, "every value is 0; speedups and error bounds "
                                                                  "need measured times"))


def _body_check(path: str) -> tuple[str | None, int, int]:
    """``(located error or None, warps without EXIT, warps)`` of parsing ``path`` whole; what a
    worker returns (not the trace: only the verdict crosses the process boundary)."""
    from gclsampler.trace import read_kernel
    from gclsampler.trace.workload import warps_without_exit

    t, err = _read_error(Path(path), read_kernel)
    return (err, 0, 0) if t is None else (None, warps_without_exit(t), int(t.n_warps))


def _bodies(root: Path, entries: list[tuple[int, str]], rep: _Report, progress: bool, workers: int = 1) -> None:
    """Parse every listed trace whole, as the graph stage will: a body cut short (a copy that
    stopped early) or malformed past the header is otherwise found only after minutes of work.
    A trace cut at a line boundary parses, but its warps end without their EXIT: a warning,
    since an instruction cap (``trace_cap``, ``GCL_MAX_INSTS_PER_WARP``) does the same on purpose.

    ``workers`` > 1 parses that many traces at once, in processes as the graph stage builds
    graphs; problems are reported in kernelslist order whatever order the workers finish in.
    """
    from gclsampler.trace.workload import _progress

    paths = [str(root / name) for _, name in entries]
    got: list[tuple[str | None, int, int]] = [(None, 0, 0)] * len(paths)
    bar = _progress(None, len(paths), "trace bodies") if progress else None
    if workers <= 1 or len(paths) <= 1:
        for i, p in enumerate(paths):
            got[i] = _body_check(p)
            if bar is not None:
                bar.update(1)
    else:
        from concurrent.futures import as_completed

        from gclsampler._interrupt import process_pool

        start = "fork" if sys.platform.startswith("linux") else "spawn"
        with process_pool(min(workers, len(paths)), start) as pool:
            futs = {pool.submit(_body_check, p): i for i, p in enumerate(paths)}
            for fut in as_completed(futs):
                got[futs[fut]] = fut.result()
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    for p, (err, cut, warps) in zip(paths, got):
        if err is not None:
            rep.add("error", err, "error:trace body")
        elif cut:
            rep.add("warning", located(p, None, "warps", f"{cut} of {warps} end without EXIT, so they hold a prefix "
                                       "only (an instruction cap such as trace_cap or GCL_MAX_INSTS_PER_WARP, or a "
                                       "trace that stopped early)"), "warning:no exit")
    hollow = [p for p, (err, _, warps) in zip(paths, got) if err is None and warps == 0]
    if hollow and len(hollow) * 2 >= len(paths):
        # a few header-only traces are launches whose CTAs ran on other SMs; most or all of them
        # is a tracer that recorded nothing (the broken channel of the first H200 passes did this)
        rep.add("warning", located(root, None, "traces",
                                   f"{len(hollow)} of {len(paths)} traces are a header alone (no warp recorded, "
                                   f"e.g. {Path(hollow[0]).name}): launches whose CTAs all ran on other SMs (a "
                                   "tracer before GCL_SMALL_GRID=cta0), or a tracer that recorded nothing "
                                   "(GCL_COUNT_ONLY=1 tells; tracer/README.md)"))


def check_workload(root: str | os.PathLike, *, profile: bool = True, traces: bool | None = None,
                   bodies: bool = False, progress: bool = False, workers: int = 1,
                   as_ampere: bool = False, read: dict | None = None, scored: bool | None = None) -> list[Problem]:
    """Every consistency problem of the workload at ``root`` (see the module docstring).

    Checks kernelslist.g (readable, no duplicate or missing entries), every trace header
    (readable, unique ``-kernel id`` in launch order, known binary/tracer version),
    profile.csv (readable, value ranges) and the two against each other (one row per
    trace, same kernel name, grid and block; nregs/shmem as warnings), workload.json,
    and every ``profiles/<arch>.csv`` against the traces. ``profile=False`` skips the
    profile checks (trace-only commands); ``traces=True`` requires kernelslist.g (the
    default requires it only when there is no profile to work from). ``bodies=True`` also
    parses every trace whole (``validate --full``; minutes on gigabytes of traces), with a
    progress bar when ``progress`` and ``workers`` traces at once; by default only headers
    are read. ``as_ampere``: the traces go to Accel-Sim through ``--as-ampere``, so sm_89/sm_90
    headers are not warned about. ``read``: a dict that receives the parsed profile.csv under
    ``"profile"`` (when it parsed), so a caller that goes on to use it does not read a
    million-row file twice. ``scored``: whether plans will be scored on these profiles. True
    (train.py, evaluate.py): a ``cycles`` column empty in some rows only is an error, found
    before training; False (``gclsampler validate``): a warning; None (the samplers, which
    read ``time_ns``): not checked.
    """
    from gclsampler.profile import ProfileFormatError, read_profile

    root = Path(root)
    rep = _Report(root)
    if not root.exists():
        return [Problem("error", located(root, None, None, "no such directory"))]
    if not root.is_dir():
        return [Problem("error", located(root, None, None, "not a directory (give the workload directory)"))]
    from gclsampler._safe_out import special_input_problem

    own = [root / n for n in ("workload.json", "kernelslist.g", "kernelslist", "profile.csv")]
    own += sorted((root / "profiles").glob("*.csv")) if (root / "profiles").is_dir() else []
    special = [Problem("error", located(p, None, None, why)) for p in own if (why := special_input_problem(p))]
    if special:  # each read would block forever (a named pipe with no writer)
        return special
    meta = root / "workload.json"
    declared_n = None
    declared_arch = None
    if meta.exists():
        from gclsampler.workload import read_meta

        try:  # the loaders' own reader: JSON, an object, and the types of synthetic and n_invocations
            declared = read_meta(meta)
            declared_n, declared_arch = declared.get("n_invocations"), declared.get("arch")
        except GclError as exc:
            rep.add("error", str(exc))
        except OSError as exc:
            rep.add("error", located(meta, None, None, f"cannot read: {exc.strerror or exc}"))
    if traces is None:
        traces = not (profile and (root / "profile.csv").exists())
    kl, entries = _kernelslist(root, rep, traces)
    if kl is not None:
        from gclsampler.trace.workload import unlisted_traces

        for name in unlisted_traces(root, (n for _, n in entries)):
            rep.add("warning", located(root / name, None, None, f"not in {kl.name}, so no command reads it (a lost "
                                       f"{kl.name} line, or a trace added later: list it, or move it out)"),
                    "warning:unlisted")
    heads = _headers(root, kl, entries, rep, as_ampere) if entries else None
    if bodies and heads is not None:
        _bodies(root, entries, rep, progress, workers)
    names = [n for _, n in entries]
    if profile:
        prof_path = root / "profile.csv"
        prof = None
        if not prof_path.exists():
            rep.add("error", located(prof_path, None, None, "missing (import one with `gclsampler profile import`)"))
        else:
            try:
                prof = read_profile(prof_path)
            except ProfileFormatError as exc:
                rep.add("error", str(exc))
            except OSError as exc:
                rep.add("error", located(prof_path, None, None, f"cannot read: {exc.strerror or exc}"))
        if prof is not None:
            if read is not None:
                read["profile"] = prof
            try:
                check_profile_usable(prof, prof_path)
            except WorkloadError as exc:
                rep.add("error", str(exc))
            _misspelt_columns(prof_path, prof, rep)
            _partial_cycles(prof_path, prof, rep, scored)
        if prof is not None and heads is not None:
            _profile_vs_traces(prof_path, prof, names, heads, rep, kl)
        # the traces are the better witness: where they disagree with the profile, that was said
        if prof is not None and declared_n is not None and declared_n != len(prof) and (
                heads is None or len(heads) == len(prof)):
            rep.add("error", located(meta, None, "n_invocations", f"{declared_n}, but {prof_path.name} has "
                                                                   f"{len(prof)} rows (one per invocation)"))
        others = sorted((root / "profiles").glob("*.csv")) if (root / "profiles").is_dir() else []
        _unscored_reruns(root, others, declared_arch, rep)
        for other in others:
            try:
                p2 = read_profile(other)
            except ProfileFormatError as exc:
                rep.add("error", str(exc))
                continue
            except OSError as exc:
                rep.add("error", located(other, None, None, f"cannot read: {exc.strerror or exc}"))
                continue
            _partial_cycles(other, p2, rep, scored)
            if heads is not None:
                _profile_vs_traces(other, p2, names, heads, rep, kl, own=False)
            elif prof is not None:  # a profile-only workload: the arch profiles must align with profile.csv
                _profile_vs_profile(other, p2, prof_path, prof, rep)
    return rep.finish()


def _unscored_reruns(root: Path, others: list[Path], arch, rep: "_Report") -> None:
    """Warn of a ``profiles/<arch>_rerun.csv`` that no plan is scored on. Plans are fitted on
    profile.csv, whose arch is workload.json's ``arch`` (``fitted_arch``), and only that
    arch's second run is scored: an imported ``h200_rerun.csv`` beside a workload.json without
    ``"arch": "h200"`` was ignored without a word (no second-run table, empty error_cycles_rerun)."""
    from gclsampler.profile import fitted_arch, rerun_arch, rerun_of

    fitted = rerun_arch(fitted_arch(arch))
    for p in others:
        base = rerun_of(p.stem)
        if base is not None and p.stem != fitted and not (root / "profiles" / f"{base}.csv").exists():
            why = ('workload.json has no "arch"' if not arch else f'workload.json says "arch": {json.dumps(arch)}')
            rep.add("warning", located(p, None, None, f"no plan is scored on it: plans are fitted on profile.csv, "
                                                      f"and {why}, so its second run is profiles/{fitted}.csv "
                                                      f"(set \"arch\": {json.dumps(base)} in workload.json if profile.csv "
                                                      "was measured there)"), "warning:rerun")


def errors_and_warnings(problems: Iterable[Problem]) -> tuple[list[Problem], list[Problem]]:
    problems = list(problems)
    return ([p for p in problems if p.severity == "error"], [p for p in problems if p.severity == "warning"])


def require_valid_workload(root: str | os.PathLike, *, profile: bool = True, traces: bool | None = None,
                           warn=None, as_ampere: bool = False, scored: bool | None = None) -> pd.DataFrame | None:
    """Raise ``WorkloadError`` (first problem + a count) when ``check_workload`` finds errors.

    Warnings go to ``warn`` (default: one line each on stderr) and do not stop the run.
    Returns profile.csv as ``read_profile`` gave it (None with ``profile=False``), which the
    caller hands to ``Workload.load`` instead of parsing the file again. ``scored``: see
    ``check_workload``.
    """
    read: dict = {}
    errors, warnings = errors_and_warnings(check_workload(root, profile=profile, traces=traces,
                                                          as_ampere=as_ampere, read=read, scored=scored))
    if warn is None:
        def warn(text: str) -> None:
            print(f"gclsampler: warning: {text}", file=sys.stderr)
    for w in warnings:
        warn(w.text)
    if errors:
        more = f" (and {len(errors) - 1} more problem(s); see `gclsampler validate {shlex.quote(str(root))}`)" if len(errors) > 1 else ""
        raise WorkloadError(errors[0].text + more)
    return read.get("profile")


# ---------------------------------------------------------------------------------------
# stage parameters, checked before any data is read
# ---------------------------------------------------------------------------------------
_STEM_KEYS = ("epsilon", "z", "min_samples", "min_group", "scope")


def check_sampler_params(sampler, where: str = "sampler.params", key: Callable[[str], str] | None = None) -> None:
    """Check a sampler's parameters without fitting it (raise a ``GclError`` naming the key).

    Samplers validate in ``fit`` (scikit-learn style), which in the pipeline runs after
    graphs and training; this runs the same checks up front. Duck-typed: a sampler with
    a ``check_params()`` method is asked too, after the checks below; the STEM parameters
    (``epsilon, z, min_samples, min_group, scope``) and a ``cluster`` mapping are checked
    with the stem and cluster stages' own validators; positive-number parameters of the
    baselines are checked by name, and a ``representative`` against the sampler class's
    ``REPRESENTATIVES`` where it declares them (pka, sieve).

    ``key`` names a parameter as the user typed it (``"--set {}".format``: ``--set threshold``,
    ``--set cluster.k_min``), in these checks and the method's own; without it, ``where: name``
    and ``where.cluster.name`` (the config keys of train.py and evaluate.py).
    """
    import math

    named = key or (lambda name: f"{where}: {name}")
    params = {k: v for k, v in vars(sampler).items() if not k.startswith("_") and not k.endswith("_")}
    _check_types_against_defaults(sampler, params, named)
    if all(k in params for k in _STEM_KEYS):
        from gclsampler.stem import StemError, check_params

        try:
            check_params(*(params[k] for k in _STEM_KEYS), key=named)
        except StemError as exc:
            raise GclError(str(exc)) from None
    elif "epsilon" in params or "z" in params:  # allegro: the same ranges as STEM's
        from gclsampler.stem import check_bound

        # an absent one gets an in-range stand-in, so only a parameter the sampler has can fail
        check_bound(params.get("epsilon", 0.5), params.get("z", 1.96), named(""), GclError)
    for name in ("random_state", "cluster_random_state"):  # before any data is read (train.py, evaluate.py)
        if params.get(name) is not None:
            from gclsampler.plan import check_seed

            check_seed(params[name], named(name))
    if "strata" in params:
        from gclsampler.samplers import STRATA

        if params["strata"] not in STRATA:
            raise GclError(f"{named('strata')}: must be one of {', '.join(STRATA)}, found {params['strata']!r}")
    choices = getattr(type(sampler), "REPRESENTATIVES", None)  # pka, sieve: their representative rules
    if choices is not None and "representative" in params:
        v = params["representative"]
        if not (isinstance(v, str) and v in choices):
            raise GclError(f"{named('representative')}: must be one of {', '.join(choices)}, found {v!r}")
    if "cluster" in params and params["cluster"] is not None:
        from gclsampler.cluster import ClusterConfig

        ClusterConfig.from_any(params["cluster"], key("cluster") if key else f"{where}.cluster")
    positive = ("target_error", "cov_threshold", "fraction", "threshold")
    for name in positive:
        if name in params:
            v = params[name]
            if not (is_real(v) and math.isfinite(v) and v > 0):
                raise GclError(f"{named(name)}: must be a number > 0, found {v!r}")
    for name in ("fraction", "threshold"):
        if name in params and params[name] > 1:
            raise GclError(f"{named(name)}: must be at most 1, found {params[name]!r}")
    own = getattr(sampler, "check_params", None)
    if callable(own):  # the method's own data-free checks (pka's k range, allegro's counts, ...)
        own() if key is None else own(key=key)


def _check_types_against_defaults(sampler, params: dict, named: Callable[[str], str]) -> None:
    """A value must have its default's kind: a number for a numeric default (whole for an
    int), true/false for a bool. ``--set k_max=abc`` reached ``int('abc')`` inside fit."""
    import inspect

    try:
        sig = inspect.signature(type(sampler).__init__)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return
    for name, p in sig.parameters.items():
        if name not in params or p.default is inspect.Parameter.empty or p.default is None:
            continue
        d, v = p.default, params[name]
        if isinstance(d, bool):
            if not isinstance(v, bool):
                raise GclError(f"{named(name)}: must be true or false, found {v!r}")
        elif isinstance(d, (int, float)):
            if not is_real(v):
                raise GclError(f"{named(name)}: must be a number, found {v!r}")
            if isinstance(d, int) and not is_whole(v):
                raise GclError(f"{named(name)}: must be a whole number, found {v!r}")
