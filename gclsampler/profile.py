"""Per-invocation hardware profiles: one table per workload (``profile.csv``).

Every sampler and the evaluation read the same table, whatever profiler produced
it: row i is invocation i in launch order (the trace's ``-kernel id`` minus one),
so an estimate ``sum(weight * M[invocation])`` can index any column directly.

Required columns: ``invocation, kernel_name, grid, block, time_ns, cycles``.
``grid``/``block`` are written ``"(x,y,z)"`` exactly like the trace header.
``cycles`` may be empty in a row when the source has no cycle counter (Nsight
Systems and torch.profiler record wall time only); every other required value
must be present. Optional metric columns use the names in ``OPTIONAL_COLUMNS``;
other extra columns are kept as they are, as the text in the file (they may be
useful to a user) but nothing in gclsampler relies on them.

The importers (``import_ncu``, ``import_nsys``, ``import_torch``) turn profiler
exports into this table. Bad input raises ``ProfileFormatError`` naming
``path:line`` and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shlex
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from gclsampler._atomic import atomic_path
from gclsampler._csv_records import csv_records
from gclsampler.errors import GclError, located

__all__ = [
    "REQUIRED_COLUMNS",
    "OPTIONAL_COLUMNS",
    "PKA_METRICS",
    "ProfileFormatError",
    "read_profile",
    "write_profile",
    "validate_profile",
    "parse_dim3",
    "format_dim3",
    "dim3_array",
    "ProfileRowLines",
    "RERUN_SUFFIX",
    "rerun_arch",
    "rerun_of",
    "simulated_by",
]

RERUN_SUFFIX = "_rerun"
"""``profiles/<arch>_rerun.csv`` is a second, independent run of ``<arch>``: the same launches
profiled again. A plan fitted on one run and scored on that same run is also scored on the
jitter it was fitted to (a rule that reads measured times, such as STEM+ROOT's strata, can
chase it); scored on a second run it is not. On a GPU it is a second profiler pass; the
synthesizer writes one when ``<arch>_rerun`` is in ``synth.archs`` (same machine model, only
the run-to-run jitter drawn again)."""


def fitted_arch(arch: str | None) -> str:
    """The arch name profile.csv goes by (plans are fitted on it): workload.json's ``arch``, or
    ``native`` for a directory that names none (so its second run is ``profiles/native_rerun.csv``)."""
    return arch if isinstance(arch, str) and arch else "native"


def rerun_arch(arch: str) -> str:
    """The name of ``arch``'s second run (its profile is ``profiles/<that>.csv``)."""
    return f"{arch}{RERUN_SUFFIX}"


def rerun_of(name: str) -> str | None:
    """The arch whose second run ``name`` is, or None when ``name`` is not a second run."""
    return name[: -len(RERUN_SUFFIX)] if name.endswith(RERUN_SUFFIX) and len(name) > len(RERUN_SUFFIX) else None


SIMULATED_PREFIX = "accelsim-"
"""``profiles/accelsim-<config>.csv`` is what ``gclsampler simulate --all`` writes: cycles from
a simulator, not from a GPU."""


def simulated_by(profile: pd.DataFrame, arch: str | None = None) -> str:
    """Which simulator produced a profile's cycles, or "" for a measured (or synthesized) one.

    Why: a REAL workload scored on a simulated profile has real traces but a simulator's ground
    truth, and every row scored on it must say so. The profile's ``simulated_by`` column
    (``gclsampler simulate --all`` writes it on every row) names the run; a profile named
    ``accelsim-<config>`` without that column (edited, or an older file) is still a simulation.
    """
    if "simulated_by" in profile.columns:
        for v in profile["simulated_by"]:
            if isinstance(v, str) and v.strip():
                return v.strip()
    if arch is not None and str(arch).startswith(SIMULATED_PREFIX):
        return f"Accel-Sim {str(arch)[len(SIMULATED_PREFIX):]}"
    return ""


REQUIRED_COLUMNS: list[str] = ["invocation", "kernel_name", "grid", "block", "time_ns", "cycles"]

PKA_METRICS: list[str] = [
    "pka_coalesced_global_loads",
    "pka_coalesced_global_stores",
    "pka_coalesced_local_loads",
    "pka_thread_global_loads",
    "pka_thread_global_stores",
    "pka_thread_local_loads",
    "pka_thread_shared_loads",
    "pka_thread_shared_stores",
    "pka_thread_global_atomics",
    "pka_instructions",
    "pka_divergence_efficiency",
    "pka_thread_blocks",
]
"""The 12 microarchitecture-agnostic metrics of the PKA paper (Baddouh et al., Table 2)."""

OPTIONAL_COLUMNS: list[str] = [
    "ipc",
    "l1_hit_rate",
    "l2_hit_rate",
    "achieved_occupancy",
    "inst_executed",
    "warp_inst_executed_mean",
    "nregs",
    "shmem",
    *PKA_METRICS,
]

NUMERIC_COLUMNS: list[str] = ["time_ns", "cycles", *OPTIONAL_COLUMNS]

VALUE_RANGES: dict[str, tuple[float, float, str]] = {
    "l1_hit_rate": (0.0, 1.0, "a fraction 0..1 (a percentage? divide by 100)"),
    "l2_hit_rate": (0.0, 1.0, "a fraction 0..1 (a percentage? divide by 100)"),
    "achieved_occupancy": (0.0, 1.0, "a fraction 0..1 (a percentage? divide by 100)"),
    "nregs": (0.0, 255.0, "registers per thread, 0..255"),
}
"""Upper bounds of known columns (all numeric columns are also >= 0). Why: a hit rate of 24
(a percentage) was accepted and silently skewed every metric estimate built on it."""

WHOLE_NUMBER_COLUMNS: tuple[str, ...] = ("nregs",)
"""Registers per thread are whole; a fraction means a wrong column (byte and instruction counts
may legitimately come out fractional from unit conversions, so they are not checked)."""


class ProfileFormatError(GclError):
    """A profile or profiler export that cannot be read (names path:line and the field)."""


# ---------------------------------------------------------------------------------------
# dim3 helpers
# ---------------------------------------------------------------------------------------
_DIM3 = re.compile(r"^\s*[\(\[]?\s*(-?\d+)\s*[,\s]\s*(-?\d+)\s*[,\s]\s*(-?\d+)\s*[\)\]]?\s*$")
DIM3_MAX = 2**31 - 1
"""Largest launch dimension CUDA allows (grid x); bounds every dim so that (N, 3) int64 arrays
and products of dims cannot overflow on a corrupt value."""


def parse_dim3(text: str) -> tuple[int, int, int]:
    """``"(x,y,z)"`` (also ``"[x, y, z]"`` or ``"x y z"``) -> ``(x, y, z)``; ValueError otherwise."""
    m = _DIM3.match(str(text))
    if not m:
        raise ValueError(f"expected (x,y,z), found {text!r}")
    x, y, z = (int(g) for g in m.groups())
    if min(x, y, z) < 1:
        raise ValueError(f"dimensions must be >= 1, found {text!r}")
    if max(x, y, z) > DIM3_MAX:
        raise ValueError(f"dimensions must be below 2^31 (CUDA's limit), found {text!r}")
    return x, y, z


def format_dim3(dims: Iterable[int]) -> str:
    x, y, z = (int(d) for d in dims)
    return f"({x},{y},{z})"


def dim3_array(column: pd.Series) -> np.ndarray:
    """(N, 3) int64 array from a validated ``grid`` or ``block`` column."""
    parts = column.astype(str).str.strip("()").str.split(",", expand=True)
    return parts.astype(np.int64).to_numpy()


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------
def _line_of(row: int) -> int:
    """File line of data row ``row`` (header is line 1)."""
    return int(row) + 2


def _plain(value: Any) -> str:
    """``repr`` of a cell as the user wrote it: ``0`` and ``inf``, not ``np.int64(0)``."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def validate_profile(df: pd.DataFrame, where: str | Path = "profile", *, line_of=_line_of) -> pd.DataFrame:
    """Check and normalise a profile table; return a fresh frame in canonical column order.

    ``line_of(row)`` maps a 0-based data row to the line a user should look at.
    """
    where = str(where)
    _refuse_repeated_columns(df.columns, where, 1)
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ProfileFormatError(
            located(where, 1, ",".join(missing),
                    f"required column(s) missing; found columns: {', '.join(map(str, df.columns)) or '(none)'}"
                    + (_HINT if where.endswith(".csv") or where.endswith(".json") else ""))
        )
    out: dict[str, Any] = {}
    n = len(df)
    if n == 0:
        raise ProfileFormatError(located(where, 2, None, "no invocation rows after the header"))

    inv = pd.to_numeric(df["invocation"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    expected = np.arange(n, dtype=np.float64)
    bad = np.flatnonzero(~(inv == expected))
    if bad.size:
        r = int(bad[0])
        raise ProfileFormatError(
            located(where, line_of(r), "invocation",
                    f"rows must list invocations 0..N-1 in launch order; expected {r}, found {_plain(df['invocation'].iloc[r])}")
        )
    out["invocation"] = np.arange(n, dtype=np.int64)

    names = df["kernel_name"]
    codes, uniq = pd.factorize(names, use_na_sentinel=True)
    bad_codes = [i for i, u in enumerate(uniq) if not str(u).strip()]
    empty = (codes < 0) | np.isin(codes, bad_codes)
    if empty.any():
        r = int(np.flatnonzero(empty)[0])
        raise ProfileFormatError(located(where, line_of(r), "kernel_name", "empty kernel name"))
    out["kernel_name"] = names.array if _is_pandas_str(names) else \
        _take_strings(np.asarray([str(u) for u in uniq], dtype=object), codes)

    for col in ("grid", "block"):
        out[col] = _normalise_dim3_column(df[col], where, col, line_of)

    for col in [c for c in NUMERIC_COLUMNS if c in df.columns]:
        values = _numeric_column(df[col], where, col, line_of)
        if col == "time_ns":
            nan = np.isnan(values)
            if nan.any():
                r = int(np.flatnonzero(nan)[0])
                raise ProfileFormatError(located(where, line_of(r), col, "missing value (empty, NaN or n/a): "
                                                 "every invocation needs its time"))
        neg = values < 0
        if neg.any():
            r = int(np.flatnonzero(neg)[0])
            raise ProfileFormatError(located(where, line_of(r), col, f"negative value {float(values[r])!r}"))
        if col in ("time_ns", "cycles"):  # every estimate sums them: a total of inf scores nothing
            with np.errstate(over="ignore"):
                total = np.nansum(values)
            if not np.isfinite(total):
                r = int(np.nanargmax(values))
                raise ProfileFormatError(located(where, line_of(r), col, f"{float(values[r])!r}: the column's total "
                                                 "overflows float64; give it in a larger unit"))
        if col in WHOLE_NUMBER_COLUMNS:
            frac = ~np.isnan(values) & (values != np.round(values))
            if frac.any():
                r = int(np.flatnonzero(frac)[0])
                raise ProfileFormatError(located(where, line_of(r), col, f"{float(values[r])!r} is not a whole number"))
        if col in VALUE_RANGES:
            hi, what = VALUE_RANGES[col][1], VALUE_RANGES[col][2]
            above = values > hi * (1 + 1e-9)
            if above.any():
                r = int(np.flatnonzero(above)[0])
                raise ProfileFormatError(located(where, line_of(r), col, f"{float(values[r])!r} is out of range: {what}"))
        out[col] = values

    extras = [c for c in df.columns if c not in REQUIRED_COLUMNS and c not in OPTIONAL_COLUMNS]
    for col in extras:
        out[col] = df[col].to_numpy()
    order = REQUIRED_COLUMNS + [c for c in OPTIONAL_COLUMNS if c in df.columns] + extras
    result = pd.DataFrame({c: out[c] for c in order})
    result["kernel_name"] = result["kernel_name"].astype(str)
    return result


def _refuse_repeated_columns(names, where, line: int | None) -> None:
    """A column named twice: which copy a reader took would be an accident (pandas renames the
    second to ``time_ns.1``, a dict of column positions keeps the last)."""
    names = pd.Index(list(names))
    dup = names[names.duplicated()]
    if len(dup):
        raise ProfileFormatError(located(where, line, str(dup[0]), "column appears more than once"))


def _refuse_unnamed_columns(header: list[str], path: Path) -> None:
    """A column with an empty header (pandas' ``to_csv`` writes its index so) came back named
    ``Unnamed: 0`` and moved last; no reader can say what it is, so it is named, not guessed."""
    blank = [i for i, c in enumerate(header) if not c]
    if blank:
        why = " (pandas writes its index so: save the frame with to_csv(..., index=False))" if blank[0] == 0 else ""
        raise ProfileFormatError(located(path, 1, None, f"column {blank[0] + 1} of the header has no name{why}; "
                                                        "give it one or remove the column"))


def _numeric_column(series: pd.Series, where: str, col: str, line_of) -> np.ndarray:
    if pd.api.types.is_bool_dtype(series.dtype) or (series.dtype == object and
                                                     pd.api.types.infer_dtype(series, skipna=True) in ("boolean", "mixed")):
        # pandas reads True/False as booleans, and those would count as 1/0
        is_bool = series.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
        if is_bool.any():
            r = int(np.flatnonzero(is_bool)[0])
            raise ProfileFormatError(located(where, line_of(r), col, f"not a number: {_plain(series.iloc[r])}"))
    if pd.api.types.is_numeric_dtype(series.dtype):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:  # text: parse, then look only at the cells that did not parse
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        nan_rows = np.flatnonzero(np.isnan(values))
        if nan_rows.size:
            sub = series.iloc[nan_rows]
            text = sub.astype(object).where(sub.notna(), "").astype(str).str.strip()
            bad = (text != "") & ~text.str.lower().isin(["nan", "na", "n/a"])
            if bad.any():
                r = int(nan_rows[np.flatnonzero(bad.to_numpy())[0]])
                raise ProfileFormatError(located(where, line_of(r), col, f"not a number: {_plain(series.iloc[r])}"))
    inf = np.isinf(values)
    if inf.any():
        r = int(np.flatnonzero(inf)[0])
        raise ProfileFormatError(located(where, line_of(r), col, f"not finite: {_plain(series.iloc[r])}"))
    return values


def _normalise_dim3_column(series: pd.Series, where: str, col: str, line_of) -> np.ndarray:
    """Canonical "(x,y,z)" strings; launch shapes repeat, so each distinct value is parsed once."""
    codes, uniq = pd.factorize(series, use_na_sentinel=True)
    if (codes < 0).any():
        r = int(np.flatnonzero(codes < 0)[0])
        raise ProfileFormatError(located(where, line_of(r), col, "missing value"))
    canon = np.empty(len(uniq), dtype=object)
    for i, u in enumerate(uniq):
        try:
            canon[i] = format_dim3(parse_dim3(str(u)))
        except ValueError as exc:
            r = int(np.flatnonzero(codes == i)[0])
            raise ProfileFormatError(located(where, line_of(r), col, str(exc))) from None
    if _is_pandas_str(series) and all(c == u for c, u in zip(canon.tolist(), list(uniq))):
        return series.array  # already canonical: keep the column as it is (no second copy of every cell)
    return _take_strings(canon, codes)


def _is_pandas_str(series: pd.Series) -> bool:
    """Whether the column already holds pandas' default string type (what a profile ends up with)."""
    return series.dtype == pd.Series(["a"]).dtype


def _take_strings(uniq: np.ndarray, codes: np.ndarray):
    """``uniq[codes]`` as pandas' own string array, decoded by pyarrow from a dictionary.

    Converting a million Python strings into pandas' (pyarrow-backed) string column
    costs ~0.15 s per column; decoding codes against the few distinct values costs
    ~0.02 s. Falls back to the object array when pandas' strings are not pyarrow's.
    """
    want = pd.Series(["a"]).dtype
    if getattr(want, "storage", None) == "pyarrow" and codes.size:
        try:
            import pyarrow as pa

            d = pa.DictionaryArray.from_arrays(pa.array(np.asarray(codes, dtype=np.int64)),
                                               pa.array(list(uniq), type=pa.large_string()))
            return pd.array(d.cast(pa.large_string()), dtype=want)
        except (ImportError, TypeError, ValueError):  # pragma: no cover - other pandas/pyarrow versions
            pass
    return np.asarray(uniq, dtype=object)[codes]


# ---------------------------------------------------------------------------------------
# profile.csv
# ---------------------------------------------------------------------------------------
_COMPRESSED_SUFFIXES = frozenset({".gz", ".bz2", ".xz", ".zst", ".zip", ".tar", ".tgz"})


def read_profile(path: str | Path) -> pd.DataFrame:
    """Read and validate ``profile.csv``; row i is invocation i.

    Numeric columns come back as float64 (``cycles`` may hold NaN where the source
    had no cycle counter), ``grid``/``block`` as canonical ``"(x,y,z)"`` strings, and
    any other column as the text in the file (empty cells missing), so that
    ``write_profile`` gives it back unchanged.
    """
    path = Path(path)
    if path.suffix.lower() in _COMPRESSED_SUFFIXES:
        # pandas would decompress it by its name, past every check below that reads the file
        # itself (field counts, repeated columns, extra columns kept as text)
        raise ProfileFormatError(located(path, None, None, "a compressed profile.csv is not read: decompress it "
                                         "first (profiler exports may be compressed, profile.csv may not)"))
    fast = _read_profile_arrow(path)
    if fast is not None:
        return fast
    raw_header = _profile_header(path)
    header = [c.strip() for c in raw_header] if raw_header else None
    if not header or not set(REQUIRED_COLUMNS) <= set(header):
        _refuse_profiler_export(path)
    if header:
        # pandas renames a repeated column (time_ns.1), fills a short row with NaN and takes
        # extra fields as an index: all three are decided here, from the file itself
        _refuse_repeated_columns(header, path, 1)
        _refuse_unnamed_columns(header, path)
        _check_field_counts(path, len(header))
    # Every column gclsampler does not read as a number stays the text of the file: pandas
    # would turn an extra column's 007 into 7.0, 1e3 into 1000.0 and TRUE into True, and a
    # re-written profile would not hold what the user wrote. A sampler pointed at such a
    # column parses it then (plan.numeric_column).
    numeric = {"invocation", *NUMERIC_COLUMNS}
    text_cols = {"kernel_name": str, "grid": str, "block": str}
    text_cols.update({raw: str for raw in raw_header or [] if raw.strip() not in numeric})
    try:
        # Only empty cells are missing: a kernel called "NA" stays a name.
        df = pd.read_csv(path, dtype=text_cols, keep_default_na=False, na_values=[""], compression=None)
    except FileNotFoundError:
        raise ProfileFormatError(located(path, None, None, "no such file")) from None
    except pd.errors.EmptyDataError:
        raise ProfileFormatError(located(path, 1, None, "empty file (expected a header line)")) from None
    except pd.errors.ParserError as exc:
        raise ProfileFormatError(located(path, _parser_error_line(exc), None, f"malformed CSV: {str(exc).strip()}{_HINT}")) from None
    except UnicodeDecodeError as exc:
        raise ProfileFormatError(located(path, _first_non_utf8_line(path), None,
                                         f"not UTF-8 text: {exc.reason}")) from None
    if not isinstance(df.index, pd.RangeIndex):
        # every data row had more fields than the header: pandas took the extras as an index
        raise ProfileFormatError(located(path, 2, None, f"malformed CSV: more fields than the header's {len(df.columns)}{_HINT}"))
    df.columns = [str(c).strip() for c in df.columns]
    return validate_profile(df, path, line_of=ProfileRowLines(path))


_EXPORT_NAMES = {"ncu": "an Nsight Compute export", "nsys": "an Nsight Systems export",
                 "torch": "a torch.profiler trace"}


def _refuse_profiler_export(path: Path, *, importing: bool = False) -> None:
    """Raise when a file given as profile.csv is a profiler's export, which ``profile import`` converts.
    ``importing``: asked by ``profile import --format profile``, whose user is already running the
    command the advice would name, so the advice is the format option instead.

    Why: copying ``ncu --csv --page raw`` output straight into a workload is the likely mistake,
    and its ``==PROF==`` lines (or nsys's preamble, or torch's JSON) were taken for the header, so
    the error spoke of field counts. Only the head of the file is read, and only on this path:
    a profile.csv with its required columns never gets here.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16).decode("utf-8-sig", errors="replace")
    except OSError:
        return  # the reader that follows names it
    try:
        fmt = detect_format(path, head)
    except ProfileFormatError:
        return
    if fmt in _EXPORT_NAMES:
        advice = (f"import it with `--format {fmt}` (or `--format auto`, the default)" if importing else
                  f"convert it with `gclsampler profile import {shlex.quote(str(path))} --out profile.csv`")
        raise ProfileFormatError(located(path, None, "format" if importing else None,
                                         f"this is {_EXPORT_NAMES[fmt]}, not a profile.csv: {advice}"))


def _profile_header(path: Path) -> list[str] | None:
    """The header record's column names as written (pandas' dtype keys); None when there is none to read."""
    try:
        with open(path, "r", encoding="utf-8-sig", newline="") as fh:
            return next(csv.reader(fh), []) or None
    except (OSError, UnicodeError, csv.Error):
        return None  # pandas reads the file next and names the problem


def _profile_records(path: Path):
    """``(line, fields)`` of every data record of a profile.csv, skipping the lines pandas skips."""
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    rows = _csv_rows(path, text)
    next(rows, None)  # the header
    physical: list[str] | None = None
    for line, row in rows:
        if len(row) <= 1 and not "".join(row).strip():  # blank or whitespace-only, or a lone ""
            if physical is None:  # lines end at LF, CR or CRLF, as for _csv_rows
                physical = re.split(r"\r\n|\r|\n", text)
            if '"' not in physical[line - 1]:  # pandas reads a quoted empty field as a row of missing cells
                continue
        yield line, row


def _check_field_counts(path: Path, n: int) -> None:
    """Raise naming the first record whose field count is not the header's ``n``.

    pyarrow's reader checks every record's count at C speed; only when it finds one
    does a row-by-row pass look for the line to name.
    """
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # pragma: no cover
        suspect = True
    else:
        found: list = []

        def on_invalid(row) -> str:
            if not row.text.strip():
                return "skip"  # a whitespace-only line, which pandas skips too
            found.append(row)
            return "error"

        names = [f"c{i}" for i in range(n)]
        try:
            reader = pacsv.open_csv(
                str(path),
                read_options=pacsv.ReadOptions(skip_rows=1, column_names=names, block_size=1 << 24),
                parse_options=pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=on_invalid),
                convert_options=pacsv.ConvertOptions(include_columns=names[:1], column_types={names[0]: pa.binary()}))
            for _ in reader:
                pass
            suspect = bool(found)
        except (pa.ArrowInvalid, OSError):
            suspect = True  # a bad record, or something else pandas will name; look to be sure
    if not suspect:
        return
    try:
        for line, row in _profile_records(path):
            if len(row) != n:
                raise ProfileFormatError(located(path, line, None,
                                                 f"malformed CSV: expected {n} fields like the header, found {len(row)}"))
    except OSError:
        return


class ProfileRowLines:
    """``line_of`` for a profile.csv: the physical line where data row ``r`` starts.

    Blank lines and quoted line breaks make it differ from ``r + 2``; finding it reads
    the file again, so that is done on the first call only (an error is being reported).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lines: np.ndarray | None = None

    def __call__(self, row: int) -> int:
        if self._lines is None:
            try:
                self._lines = np.fromiter((ln for ln, _ in _profile_records(self.path)), dtype=np.int64)
            except (OSError, ProfileFormatError):
                self._lines = np.zeros(0, dtype=np.int64)
        row = int(row)
        return int(self._lines[row]) if row < self._lines.size else _line_of(row)


def _first_non_utf8_line(path: Path) -> int | None:
    """Line of the first byte that is not UTF-8 (pandas reports a position in its own buffer)."""
    try:
        at = _first_non_utf8(data := path.read_bytes())
    except OSError:
        return None
    return None if at is None else data[:at].count(b"\n") + 1


def _first_non_utf8(data: bytes) -> int | None:
    """Offset of the first byte of ``data`` that is not UTF-8 (a byte-order mark is UTF-8), or None."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _read_profile_arrow(path: Path) -> pd.DataFrame | None:
    """pyarrow's columnar reader for a profile.csv with only the documented columns.

    Ten million rows take pandas' reader about 20 s and this one a few. Any doubt
    (an unknown column whose type pandas would infer, a parse error, a value that
    fails validation) returns None, and pandas' reader then reads the file or names
    the line and field at fault.
    """
    try:
        import pyarrow as pa
        import pyarrow.csv  # noqa: F401  (only: is the CSV reader there?)
    except ImportError:  # pragma: no cover
        return None
    try:
        with open(path, "r", encoding="utf-8", newline="") as fh:
            first = fh.readline()
        header = [c.strip() for c in next(csv.reader([first]), [])]
    except (OSError, UnicodeError):
        return None
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    if not header or len(set(header)) != len(header) or not set(header) <= known or \
            any(c not in header for c in REQUIRED_COLUMNS):
        return None
    # text columns repeat a few distinct values: read them dictionary-encoded
    types = {c: (pa.dictionary(pa.int32(), pa.large_string()) if c in ("kernel_name", "grid", "block") else pa.float64())
             for c in header}
    types["invocation"] = pa.int64()
    try:
        table = _arrow_read_csv(pa.memory_map(str(path)), header, types, skip_rows=1)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if table.num_rows == 0 or table.column("invocation").null_count:
        return None
    df = pd.DataFrame({c: (_arrow_strings(table.column(c)) if c in ("kernel_name", "grid", "block")
                           else table.column(c).to_numpy()) for c in header}, copy=False)
    try:
        return validate_profile(df, path)
    except ProfileFormatError:
        return None


def _arrow_read_csv(source, header: list[str], types: dict, *, include: list[str] | None = None, skip_rows: int = 0):
    """Every value a string column, in ``types``' types, read by pyarrow's streaming CSV reader.

    The streaming reader converts 16 MB blocks as it goes: at three million rows it
    peaks at half the memory of ``pyarrow.csv.read_csv`` and takes half its CPU time.
    Only empty cells are missing (a kernel called "NA" stays a name).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    reader = pacsv.open_csv(
        source,
        read_options=pacsv.ReadOptions(skip_rows=skip_rows, column_names=header, use_threads=True, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(newlines_in_values=False),
        convert_options=pacsv.ConvertOptions(column_types=types, include_columns=include or [], null_values=[""],
                                             strings_can_be_null=False, quoted_strings_can_be_null=False),
    )
    return pa.Table.from_batches(list(reader), schema=reader.schema)


def _arrow_strings(col) -> Any:
    """A dictionary-encoded arrow column as pandas' string array, decoded once per distinct value."""
    col = col.unify_dictionaries() if hasattr(col, "unify_dictionaries") else col
    chunks = col.chunks if hasattr(col, "chunks") else [col]
    if not chunks:
        return np.zeros(0, dtype=object)
    uniq = np.asarray(chunks[0].dictionary.to_pylist(), dtype=object)
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks]).astype(np.int64)
    return _take_strings(uniq, codes)


_HINT = " (profiler exports are converted with `gclsampler profile import FILE --out profile.csv`)"


def _parser_error_line(exc: Exception) -> int | None:
    m = re.search(r"line (\d+)", str(exc))
    return int(m.group(1)) if m else None


def write_profile(df: pd.DataFrame, path: str | Path, *, validated: bool = False) -> Path:
    """Validate, then write ``profile.csv`` atomically (temp file in the same dir, rename).

    Integral numeric columns are written as integers so that a round trip and two
    runs over the same input give the same bytes. ``validated=True`` is for a frame
    just returned by ``validate_profile`` / ``read_profile`` / ``import_profile`` and
    not changed since: it skips the second check (and its copy of every column, which
    at ten million rows is over a gigabyte).
    """
    path = Path(path)
    table = df.copy(deep=False) if validated else validate_profile(df, f"{path} (table being written)", line_of=lambda r: r)
    for col in [c for c in NUMERIC_COLUMNS if c in table.columns]:
        v = table[col].to_numpy(dtype=np.float64)
        if v.size and not np.isnan(v).any() and np.all(v == np.round(v)) and np.abs(v).max() < 2**62:
            table[col] = v.astype(np.int64)
    plan = _csv_plan(table)
    with atomic_path(path) as tmp, open(tmp, "wb" if plan is not None else "w", **({} if plan is not None else {"newline": ""})) as fh:
        if plan is not None:
            fh.write((",".join(_csv_quote(np.asarray([str(c) for c in table.columns], dtype=object)).tolist()) + "\n").encode("utf-8"))
            for lo in range(0, len(table), _CSV_ROWS):
                rows = _csv_text_rows(plan, lo, min(lo + _CSV_ROWS, len(table)))
                off = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset: rows.offset + len(rows) + 1]
                fh.write(memoryview(rows.buffers()[2])[int(off[0]): int(off[-1])])
        else:
            table.to_csv(fh, index=False, lineterminator="\n")
    return path


_CSV_ROWS = 1 << 20
"""Rows formatted per pass when writing profile.csv (bounds the text held in memory)."""


def _csv_quote(values: np.ndarray) -> np.ndarray:
    """Python csv QUOTE_MINIMAL of distinct strings: quoted when they hold , " CR or LF."""
    out = np.empty(values.size, dtype=object)
    for i, v in enumerate(values.tolist()):
        out[i] = '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\r\n') else v
    return out


def _csv_plan(table: pd.DataFrame) -> list | None:
    """How to format each column the way ``table.to_csv(index=False)`` does, by columns.

    pandas writes a million-row profile in about 3 s, one Python row at a time. Here
    integers are written in plain decimal, floats the way pandas formats them (numpy's
    ``astype(str)``, NaN as an empty cell), text quoted once per distinct value (csv's
    QUOTE_MINIMAL), and pyarrow joins the cells (``_csv_text_rows``). Returns None for a
    column kind it does not handle (pandas then writes). A test checks the bytes equal
    pandas' on generated tables.
    """
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover
        return None
    if not len(table) or not len(table.columns):
        return None
    plan = []
    for name in table.columns:
        col = table[name]
        kind = col.dtype.kind if isinstance(col.dtype, np.dtype) else None
        if kind in ("i", "u", "f"):
            plan.append((kind, col.to_numpy()))
        elif kind == "O" or pd.api.types.is_string_dtype(col.dtype):
            codes, uniq = pd.factorize(col, sort=False, use_na_sentinel=True)
            if not all(isinstance(u, str) for u in uniq):
                return None
            plan.append(("s", np.asarray(codes), np.append(_csv_quote(np.asarray(uniq, dtype=object)), "")))  # -1 -> ""
        else:
            return None
    return plan


def _csv_text_rows(plan: list, lo: int, hi: int):
    """Rows lo..hi of a ``_csv_plan`` as one arrow large_string array, each row ending in a newline."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = []
    for kind, values, *rest in plan:
        v = values[lo:hi]
        if kind in ("i", "u"):
            cells.append(pa.array(v).cast(pa.large_string()))  # plain decimal, as str(int)
        elif kind == "f":
            nan = np.isnan(v)
            text = np.where(nan, "", v.astype(str)) if not nan.all() else np.full(v.size, "")
            cells.append(pa.array(text, type=pa.large_string()))
        else:
            d = pa.DictionaryArray.from_arrays(pa.array(np.where(v < 0, rest[0].size - 1, v)),
                                               pa.array(list(rest[0]), type=pa.large_string()))
            cells.append(d.cast(pa.large_string()))
    rows = pc.binary_join_element_wise(*cells, pa.scalar(",", pa.large_string()))
    rows = pc.binary_join_element_wise(rows, pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string()))
    return pa.concat_arrays([rows]) if isinstance(rows, pa.ChunkedArray) else rows


# ---------------------------------------------------------------------------------------
# importers: Nsight Compute, Nsight Systems, torch.profiler
# ---------------------------------------------------------------------------------------
FORMATS = ("ncu", "nsys", "torch", "profile")

_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "nsec": 1.0, "us": 1e3, "usecond": 1e3, "usec": 1e3,
            "\u00b5s": 1e3, "\u03bcs": 1e3, "ms": 1e6, "msecond": 1e6, "msec": 1e6, "s": 1e9, "second": 1e9, "sec": 1e9}
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_COUNT_UNITS = ("inst", "sector", "cycle", "block", "warp", "thread", "request", "byte", "instruction", "register")
_COUNT_UNIT_RE = re.compile(r"^(|K|M|G|T)(?:(?:" + "|".join(_COUNT_UNITS) + r")s?(?:/(?:thread|block|warp|SM))?)?$")


_SCALED_TO = {"time": "to ns", "count": "to a plain count", "pct": "to a fraction", "ratio": ""}


def _unit_scale(unit: str, kind: str) -> float | None:
    """Multiplier that turns a value in ``unit`` into gclsampler's unit for ``kind``.

    kind ``time`` -> ns, ``count`` -> plain count (bytes for sizes), ``pct`` ->
    fraction in [0, 1], ``ratio`` -> unchanged. ``None`` when the unit is unknown, so
    the caller can name the field instead of importing a value off by 1000x.
    """
    unit = unit.strip()
    if kind == "time":
        return _TIME_NS.get(unit)
    if kind == "pct":
        return 0.01 if unit in ("%", "") else None
    if kind == "ratio":
        return 1.0
    m = _COUNT_UNIT_RE.match(unit)
    return _SI[m.group(1)] if m else None


_POW10 = np.asarray([float(10**i) for i in range(23)])
"""10**0 .. 10**22: the powers of ten a double holds exactly (``float`` of a Python int rounds correctly)."""


def _scale_decimal(x: np.ndarray, scale: float) -> np.ndarray:
    """``x * scale`` (``scale`` a power of ten) as the double nearest the scaled decimal
    value ``x`` was written as: 1.005 us is 1005 ns, not ``1.005 * 1e3`` = 1004.9999999999999.

    Why: the double nearest 1.005 lies below it, and a plain product keeps that error, so
    whole nanoseconds came out 8031.000000000001 and byte-compared profiles carried noise.
    Each value's 15 significant digits are taken as a whole number ``M`` (exactly, when
    the value has no more digits than that: it equals ``M * 10**p`` read back), trailing
    zeros dropped, and the result is ``M * 10**(p + k)``: one correctly rounded operation
    on exact operands while ``10**|p + k|`` is exact, else Python's correctly rounded
    decimal conversion (a value beyond ~1e±22 of the shift). Values with more than 15
    digits get the plain product.
    """
    x = np.asarray(x, dtype=np.float64)
    k = int(round(math.log10(scale)))
    if 10.0 ** k != scale:  # pragma: no cover - every unit table holds powers of ten
        raise ValueError(f"scale {scale!r} is not a power of ten")
    if k == 0:
        return x.copy()
    with np.errstate(over="ignore"):
        out = x * scale if k > 0 else x / _POW10[-k]  # dividing by the exact 10**-k: one rounding, not two
    a = np.abs(x)
    ok = np.isfinite(a) & (a > 0)
    if not ok.any():
        return out
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e = np.where(ok, np.floor(np.log10(np.where(ok, a, 1.0))), 0.0).astype(np.int64)
        # log10 of a value just below a power of ten may round up to it (99999999999999.8 -> 14):
        # its 15 digits then rounded to 1e14 in range, so the loop below never saw the slip
        e = e - (ok & (a < np.power(10.0, e.astype(np.float64))))
        m = np.zeros_like(a)
        for _ in range(2):  # log10 may be one off next to a power of ten: fix the exponent, recompute
            m = np.rint(_times_pow10(a, 14 - e, ok))
            e = e + (m >= 1e15) - (m < 1e14)
        p = e - 14
        exact = ok & (np.abs(p) <= 22) & (m >= 1e14) & (m < 1e15)
        exact &= _times_pow10(m, p, exact) == a  # a holds no more than 15 significant digits
        far = np.flatnonzero(exact & (np.abs(p + k) > 22))
        for _ in range(14 if far.size else 0):  # 1e-7 is 1 * 10**-7, not 100000000000000 * 10**-21
            far = far[np.fmod(m[far], 10.0) == 0]
            if not far.size:
                break
            m[far] /= 10.0
            p[far] += 1
        q = p + k
        fast = exact & (np.abs(q) <= 22)
        out = np.where(fast, np.copysign(_times_pow10(m, q, fast), x), out)
    # 15 digits that 10**|p + k| cannot shift exactly, or a value read through a power of ten
    # no double holds (below ~1e-8, above ~1e37): Python's decimal conversion, value by value.
    # A value known to carry more than 15 digits (|p| <= 22, not exact) keeps the plain product
    # without that loop: measured values written with 16-17 digits are common, not rare
    slow = np.flatnonzero(ok & ~fast & (exact | (np.abs(p) > 22)))
    for i in slow.tolist():
        v = float(x[i])
        digits = f"{v:.15g}"
        if float(digits) == v:
            out[i] = float(Decimal(digits).scaleb(k))
    return out


def _ns_or_located(t: np.ndarray, scale: float, cell) -> np.ndarray:
    """Times scaled to ns by ``_scale_decimal``; one that overflows float64 (finite as written)
    is refused naming its cell (``cell(k)`` -> ``path:line: field: value``), not later as a
    column's anonymous ``inf``."""
    ns = _scale_decimal(t, scale)
    over = np.flatnonzero(np.isinf(ns) & np.isfinite(t))
    if over.size:
        raise ProfileFormatError(f"{cell(int(over[0]))} overflows float64 once scaled to ns")
    return ns


def _times_pow10(v: np.ndarray, q: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``v * 10**q`` by multiplying or dividing by an exact power of ten (where ``ok``; 0 elsewhere)."""
    j = np.where(ok, np.minimum(np.abs(q), 22), 0)
    return np.where(ok, np.where(q >= 0, v * _POW10[j], v / _POW10[j]), 0.0)


def _read_text(path: Path) -> str:
    """The export's text; ``.gz``, ``.xz`` and ``.zst`` are read through (the compressions a
    trace may have: exports are kept beside traces, as ``real/*/raw/`` keeps them)."""
    import lzma

    try:
        if path.suffix == ".gz":
            import gzip

            with gzip.open(path, "rb") as fh:
                data = fh.read()
        elif path.suffix == ".xz":
            with lzma.open(path, "rb") as fh:
                data = fh.read()
        elif path.suffix == ".zst":
            from gclsampler.trace.reader import read_zst  # the traces' reader: every frame, a cut one refused

            with open(path, "rb") as fh:
                data = read_zst(fh, None)
            if data is None:  # a cut-off frame would read as a shorter export
                raise ProfileFormatError(located(path, None, None, "cannot read: the zstd data is truncated"))
        else:
            data = path.read_bytes()
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:  # decoded whole, so the file's offset is known: name its line
            at = _first_non_utf8(data)
            raise ProfileFormatError(located(path, data[:at].count(b"\n") + 1, None,
                                             f"not UTF-8 text: {exc.reason} (byte 0x{data[at]:02x})")) from None
    except FileNotFoundError:
        raise ProfileFormatError(located(path, None, None, "no such file")) from None
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise ProfileFormatError(located(path, None, None, f"cannot read as text: {exc}")) from None
    except Exception as exc:
        from gclsampler.trace.reader import is_zstd_error

        if is_zstd_error(exc):
            raise ProfileFormatError(located(path, None, None, f"cannot read as zstd: {exc}")) from None
        raise


def _csv_rows(path: Path, text: str):
    """Yield ``(line, row)`` for every CSV record (line = where the record starts). Lines end
    only at LF, CR or CRLF, as for pandas and pyarrow (``str.splitlines`` also splits at form
    feeds and U+2028, which moved every later line number)."""
    return csv_records(csv.reader(io.StringIO(text, newline="")),
                       lambda line, why: ProfileFormatError(located(path, line, None, why)))


_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?")
"""A number with thousands separators as profilers write them: groups of three digits before the point."""


def _number(text: str) -> float:
    """Parse a profiler number: ``1,234.5`` (thousands separators), ``n/a`` -> NaN.

    A comma anywhere but between groups of three digits before the decimal point is refused
    (ValueError): a decimal comma (``1,02`` or ``1.234,5``, from a profiler run under a
    locale that writes them) was read as 102 and 1.2345, off by 100x or 1000x without a word.
    """
    s = text.strip()
    if "," in s:
        if not _GROUPED.fullmatch(s):
            raise ValueError(s)
        s = s.replace(",", "")
    if s == "" or s.lower() in ("n/a", "na", "nan", "-"):
        return math.nan
    refuse_python_only_digits(s)
    return float(s)


def _not_a_number(cell: str) -> str:
    """What is wrong with a cell ``_number`` refused; a comma gets the hint that it is read only
    as a thousands separator (``1,234.5``), so a decimal comma is named as the cause."""
    why = f"not a number: {cell!r}"
    if "," in cell:
        why += " (a comma is read only as a thousands separator, 1,234.5: export with '.' as the decimal point)"
    return why


def refuse_python_only_digits(s: str) -> None:
    """ValueError for text that Python's ``float`` reads but no profiler writes: digit-group
    underscores (``1_5`` read as 15) and non-ASCII digits (``١٢`` read as 12). Why: a cell
    like that is a damaged or hand-edited export, and it was imported as another number."""
    if "_" in s or not s.isascii():
        raise ValueError(s)


def detect_format(path: str | Path, text: str | None = None) -> str:
    """Guess the export format from content, not from the file name.

    The header is looked for in the first 200 lines that are neither blank nor profiler
    chatter (``==PROF==``, ``==WARNING==``, which the importers skip too): ncu run with its
    CSV on stdout prints a ``==PROF==`` progress line per launch before the header, and
    counting those made a long run's export "unrecognised" while ``--format ncu`` read it.
    """
    path = Path(path)
    if text is None:
        text = _read_text(path)
    head = text.lstrip()[:1]
    if head in ("{", "["):
        return "torch"
    looked = 0
    for line in io.StringIO(text, newline=""):
        s = line.strip()
        if not s or s.startswith("=="):
            continue
        looked += 1
        if looked > 200:
            break
        if s.startswith('"ID"') or s.startswith("ID,"):
            # "Kernel Name" may be the column that is missing: the importer then names it
            if "Kernel Name" in s or "__" in s:
                return "ncu"
        row = [c.strip() for c in next(csv.reader([s]))]
        if _is_nsys_header(row):
            return "nsys"
        # a profile.csv's columns may come in any order (read_profile puts them in its own);
        # one that starts with invocation but lacks a column is the importer's to name
        if row[0] == "invocation" or set(REQUIRED_COLUMNS) <= set(row):
            return "profile"
    raise ProfileFormatError(
        located(path, 1, None, "unrecognised export: expected an Nsight Compute --csv --page raw file, "
                "an nsys stats cuda_gpu_trace/cuda_kern_exec_trace CSV, a torch.profiler chrome trace "
                "(JSON), or a profile.csv, with its header among the first 200 lines that are not blank or "
                "==PROF== chatter (a program's own output before it: ncu --log-file keeps it out; "
                "or --format ncu|nsys)")
    )


def import_profile(path: str | Path, fmt: str = "auto", *, clock_mhz: float | None = None,
                   notes: list[str] | None = None) -> pd.DataFrame:
    """Read any supported export into a validated profile table (row i = invocation i).

    ``notes`` (when given) receives one located line per kind of record left out on
    purpose (memcpy rows, non-complete kernel events), so that no skip goes unreported.
    """
    path = Path(path)
    if fmt not in ("auto", *FORMATS):
        raise ProfileFormatError(located(path, None, "format", f"unknown format {fmt!r}; choose auto, {', '.join(FORMATS)}"))
    df = _import_nsys_mapped(path, fmt, notes)
    if df is not None:
        _refuse_cut_last_field(path, _tail_of(path), counted=False)
        return _fill_cycles(df, path, clock_mhz)
    text = _read_text(path)
    if fmt == "auto":
        fmt = detect_format(path, text)
    if fmt in ("ncu", "nsys"):
        _refuse_cut_last_field(path, text)
    if fmt == "profile":
        _refuse_profiler_export(path, importing=True)
        df = read_profile(path)
    elif fmt == "ncu":
        df = _import_ncu_text(path, text, notes)
    elif fmt == "nsys":
        df = _import_nsys(path, text, notes)
    else:
        df = _import_torch_text(path, text, notes)
    return _fill_cycles(df, path, clock_mhz)


def _tail_of(path: Path) -> str:
    """The last 64 KiB of a plain file as text (what ``_refuse_cut_last_field`` looks at)."""
    with open(path, "rb") as fh:
        fh.seek(max(0, fh.seek(0, os.SEEK_END) - (1 << 16)))
        return fh.read().decode("utf-8", "replace")


def _quotes_in(path: Path) -> int:
    """Quote characters in a plain file, read a few MiB at a time."""
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 23):
            n += chunk.count(b'"')
    return n


def _refuse_cut_last_field(path: Path, text: str, counted: bool = True) -> None:
    """Refuse an export whose last line opens a quote it never closes: a file cut off inside
    its last field (a copy stopped early, a full disk). Why: the csv readers take what is there,
    so ncu's SM count "108" cut to "10" imported as a ten times higher IPC, without a word.
    A closed quoted field holds an even number of quote characters (inner ones are doubled),
    so an odd count in the whole file is an open one at its end. The last line's count alone
    refused a whole export whose last record began a line earlier (a quoted line break in a
    kernel name) and missed one cut inside such a record.
    ``text``: the whole export, or only its tail (``counted=False``: no line number then, and the
    file's quotes are counted from the file); lines are counted only for the error."""
    tail = text[-(1 << 16):]
    body = tail.rstrip("\r\n")
    if (text.count('"') if counted else _quotes_in(path)) % 2:
        line = text.count("\n", 0, len(text) - len(tail) + len(body)) + 1 if counted else None
        raise ProfileFormatError(located(path, line, None, "the file ends inside a quoted field (an export cut "
                                                           "off before its end?); export it again"))


def _import_nsys_mapped(path: Path, fmt: str, notes: list[str] | None = None) -> pd.DataFrame | None:
    """An nsys CSV read straight from the mapped file, without first decoding all of it.

    Only for plain (not gzipped) files that are, or are detected from their first
    megabyte to be, nsys exports; None otherwise, and for anything the fast path does
    not accept (the caller then reads the text and the row reader decides).
    """
    if fmt not in ("auto", "nsys") or path.suffix == ".gz":
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20).decode("utf-8-sig", errors="ignore")
    except OSError:
        return None
    try:
        if fmt == "auto" and detect_format(path, head) != "nsys":
            return None
    except ProfileFormatError:
        return None
    try:
        return _import_nsys_arrow(path, notes=notes)
    except ProfileFormatError:
        return None


def _fill_cycles(df: pd.DataFrame, path: Path, clock_mhz: float | None) -> pd.DataFrame:
    if clock_mhz is not None:
        if isinstance(clock_mhz, bool) or not (isinstance(clock_mhz, (int, float, np.number))
                                               and math.isfinite(clock_mhz) and clock_mhz > 0):
            raise ProfileFormatError(located(path, None, "clock_mhz", f"must be a finite number > 0, found {clock_mhz}"))
        missing = df["cycles"].isna().to_numpy()
        cycles = df["cycles"].to_numpy(dtype=np.float64, copy=True)
        with np.errstate(over="ignore"):
            # whole cycles: the estimate is no finer, and 263299.13999999996 is not a count
            cycles[missing] = np.rint(df["time_ns"].to_numpy(dtype=np.float64)[missing] * (clock_mhz / 1000.0))
            total = np.sum(cycles)
        # read_profile refuses a cycles column whose total overflows (every estimate sums
        # it): a clock that makes one would write a profile.csv the reader then refuses
        if not np.isfinite(total):
            r = int(np.flatnonzero(missing)[np.argmax(cycles[missing])])
            what = "infinite cycles" if np.isinf(cycles[r]) else "cycles whose total overflows float64"
            raise ProfileFormatError(located(path, None, "clock_mhz",
                                             f"{clock_mhz} MHz gives {what} (largest: invocation {r}, "
                                             f"time_ns {_plain(df['time_ns'].iloc[r])})"))
        df.loc[missing, "cycles"] = cycles[missing]
    return df


def import_ncu(path: str | Path, *, notes: list[str] | None = None) -> pd.DataFrame:
    """Nsight Compute ``ncu --csv --page raw`` export (one row per profiled launch)."""
    path = Path(path)
    return _import_ncu_text(path, _read_text(path), notes)


def import_nsys(path: str | Path, *, notes: list[str] | None = None) -> pd.DataFrame:
    """``nsys stats --report cuda_gpu_trace|cuda_kern_exec_trace --format csv`` export."""
    path = Path(path)
    return _import_nsys(path, _read_text(path), notes)


def import_torch(path: str | Path, *, notes: list[str] | None = None) -> pd.DataFrame:
    """torch.profiler chrome trace (``export_chrome_trace``), kernel events only."""
    path = Path(path)
    return _import_torch_text(path, _read_text(path), notes)


# ---- Nsight Compute ----------------------------------------------------------------------
# profile column -> (ncu metric names in order of preference, kind)
_NCU_METRICS: list[tuple[str, tuple[str, ...], str]] = [
    ("time_ns", ("gpu__time_duration.sum",), "time"),
    ("cycles", ("sm__cycles_elapsed.max", "sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max"), "count"),
    ("l1_hit_rate", ("l1tex__t_sector_hit_rate.pct",), "pct"),
    ("l2_hit_rate", ("lts__t_sector_hit_rate.pct",), "pct"),
    ("achieved_occupancy", ("sm__warps_active.avg.pct_of_peak_sustained_active",), "pct"),
    ("inst_executed", ("smsp__inst_executed.sum", "sm__inst_executed.sum"), "count"),
    ("nregs", ("launch__registers_per_thread",), "count"),
    ("pka_coalesced_global_loads", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), "count"),
    ("pka_coalesced_global_stores", ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",), "count"),
    ("pka_coalesced_local_loads", ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",), "count"),
    ("pka_thread_global_loads", ("smsp__inst_executed_op_global_ld.sum",), "count"),
    ("pka_thread_global_stores", ("smsp__inst_executed_op_global_st.sum",), "count"),
    ("pka_thread_local_loads", ("smsp__inst_executed_op_local_ld.sum",), "count"),
    ("pka_thread_shared_loads", ("smsp__inst_executed_op_shared_ld.sum",), "count"),
    ("pka_thread_shared_stores", ("smsp__inst_executed_op_shared_st.sum",), "count"),
    ("pka_thread_global_atomics", ("smsp__sass_inst_executed_op_global_atom.sum",), "count"),
    ("pka_instructions", ("smsp__inst_executed.sum",), "count"),
    ("pka_divergence_efficiency", ("smsp__thread_inst_executed_per_inst_executed.ratio",), "ratio"),
    ("pka_thread_blocks", ("launch__grid_size",), "count"),
]
# (key, metric, kind): a rate such as IPC is a ratio (ncu 2025.3 writes its unit as
# 'inst/cycle'), not a count
_NCU_AUX: list[tuple[str, str, str]] = [
    ("ipc_direct", "sm__inst_executed.avg.per_cycle_elapsed", "ratio"),
    ("sm_count", "device__attribute_multiprocessor_count", "count"),
    ("warps_launched", "smsp__warps_launched.sum", "count"),
    ("grid_size", "launch__grid_size", "count"),
    ("block_size", "launch__block_size", "count"),
    ("shmem_static", "launch__shared_mem_per_block_static", "count"),
    ("shmem_dynamic", "launch__shared_mem_per_block_dynamic", "count"),
    ("shmem_total", "launch__shared_mem_per_block", "count"),
]
_NCU_WHOLE = frozenset({
    "launch__registers_per_thread", "launch__grid_size", "launch__block_size", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block", "device__attribute_multiprocessor_count",
})
"""Metrics that count whole things. ncu auto-scales them ("16.38 Kbyte/block"), and 16.38 * 1e3
is 16379.999999999998 in floating point: they are rounded to the whole number the printed value
stands for, and a value that stands for no whole number (a fraction of a register) is refused."""


def _noting_ncu_errors(rows, into: list[tuple[int, str]]):
    """``rows``, passed on as they are, with each ``==ERROR==`` line ncu wrote appended to
    ``into`` on its way: the header search and the record loop read one stream of rows."""
    for line, row in rows:
        if row and row[0].lstrip().startswith("==ERROR=="):
            into.append((line, ",".join(row).strip()))
        yield line, row


def _import_ncu_text(path: Path, text: str, notes: list[str] | None = None) -> pd.DataFrame:
    ncu_errors: list[tuple[int, str]] = []  # ==ERROR== lines: (line, text), wherever they stand
    rows = _noting_ncu_errors(_csv_rows(path, text), ncu_errors)
    header: list[str] | None = None
    header_line = 0
    for line, row in rows:
        if row and row[0].strip() == "ID":
            header, header_line = [c.strip() for c in row], line
            break
    if header is None:
        raise ProfileFormatError(located(path, None, "ID", "no Nsight Compute header line (\"ID\",...,\"Kernel Name\",...) found"))
    _refuse_repeated_columns(header, path, header_line)
    col = {name: i for i, name in enumerate(header)}
    has_dims = ("Grid Size" in col and "Block Size" in col) or ("launch__grid_size" in col and "launch__block_size" in col)
    need = ["Kernel Name", "gpu__time_duration.sum"]
    missing = [c for c in need if c not in col] + ([] if has_dims else
                                                   [c for c in ("Grid Size", "Block Size") if c not in col])
    if missing and "Metric Name" in col and "Metric Value" in col:
        raise ProfileFormatError(located(path, header_line, ",".join(missing),
                                         "this is ncu's --page details export (one row per metric); export "
                                         "--page raw (one row per launch) with --csv"))
    if missing:
        raise ProfileFormatError(located(path, header_line, ",".join(missing),
                                         f"required Nsight Compute column(s) missing (profile with --page raw and "
                                         f"--metrics including them); found columns: {', '.join(header)}"))

    units = [""] * len(header)
    units_line = header_line
    records: list[tuple[int, list[str]]] = []
    for line, row in rows:
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("=="):
            continue  # blank lines and ==PROF==/==WARNING== chatter from the profiler
        if len(row) != len(header):
            raise ProfileFormatError(located(path, line, None, f"expected {len(header)} fields like the header, found {len(row)}"))
        if row[0].strip() == "" and not records:
            units = [u.strip() for u in row]  # the units row ncu writes second
            units_line = line
            continue
        if row[0].strip() == "ID":  # ncu prints one report, header and all, per profiled process
            raise ProfileFormatError(located(path, line, "ID", f"a second header (the first is line {header_line}): "
                                             "the export holds several processes' reports; a workload is one "
                                             "process, so export that one (ncu --target-processes, or one report file)"))
        records.append((line, row))
    if not records:
        raise ProfileFormatError(located(path, header_line, None, "no kernel rows after the header"))
    if "Process ID" in col:  # one report block can hold several processes' launches, interleaved
        pids = [row[col["Process ID"]].strip() for _, row in records]
        other = next((i for i, pid in enumerate(pids) if pid != pids[0]), None)
        if other is not None:
            raise ProfileFormatError(located(path, records[other][0], "Process ID",
                                             f"{pids[other]}, but line {records[0][0]} is process {pids[0]}: a "
                                             "workload is one process's launches, in its order; export that "
                                             "process alone"))

    lines = [ln for ln, _ in records]
    ids = []
    for line, row in records:
        try:
            v = _number(row[col["ID"]])
            if not v.is_integer():
                raise ValueError
            ids.append(int(v))
        except (ValueError, OverflowError):
            raise ProfileFormatError(located(path, line, "ID", f"not an integer: {row[col['ID']]!r}")) from None
    # ncu numbers a report's results 0, 1, 2...: a first ID above 0 means the export lost
    # its first rows (a cut file), and every row would be taken for an earlier launch
    if ids[0] != 0:
        raise ProfileFormatError(located(
            path, lines[0], "ID", f"the first launch ID is {ids[0]}, not 0: ncu numbers a report's launches from 0, "
            f"so the rows of launches 0..{ids[0] - 1} are missing (export the whole report)"))
    step = np.diff(np.asarray(ids, dtype=object))  # Python ints: a 30-digit ID cannot wrap
    bad = np.flatnonzero(step != 1)
    if bad.size:
        k = int(bad[0]) + 1
        if step[k - 1] == 0:
            raise ProfileFormatError(located(
                path, lines[k], "ID", f"launch ID {ids[k]} repeated (also line {lines[k - 1]}): one row per invocation"))
        raise ProfileFormatError(located(
            path, lines[k], "ID",
            f"launch IDs jump from {ids[k - 1]} to {ids[k]}: rows were taken out of the export; keep every "
            "profiled launch, in order, one row per invocation"))

    def metric(name: str, kind: str) -> np.ndarray | None:
        if name not in col:
            return None
        j = col[name]
        scale = _unit_scale(units[j], kind)
        if scale is None:
            raise ProfileFormatError(located(path, units_line, name, f"unknown unit {units[j]!r} for a {kind} metric"))
        out = np.empty(len(records))
        for k, (line, row) in enumerate(records):
            try:
                out[k] = _number(row[j])
            except ValueError:
                raise ProfileFormatError(located(path, line, name, _not_a_number(row[j]))) from None
        inf = np.isinf(out)
        if inf.any():
            k = int(np.flatnonzero(inf)[0])
            raise ProfileFormatError(located(path, lines[k], name, f"not finite: {records[k][1][j]!r}"))
        neg = out < 0  # no ncu metric this reader takes (times, counts, rates, sizes) can be below 0
        if neg.any():
            k = int(np.flatnonzero(neg)[0])
            raise ProfileFormatError(located(path, lines[k], name, f"negative value {records[k][1][j].strip()!r}"))
        out = _scale_decimal(out, scale)
        over = np.isinf(out)  # finite as written, too large once scaled by the units row
        if over.any():
            k = int(np.flatnonzero(over)[0])
            raise ProfileFormatError(located(path, lines[k], name, f"{records[k][1][j].strip()!r} {units[j]} "
                                             f"overflows float64 once scaled {_SCALED_TO[kind]}"))
        out_raw = out.copy()
        if kind == "pct":
            # Real Nsight Compute output has hit rates above 100 % (lts__t_sector_hit_rate
            # reached 191 % on lud's kernels on an H200, ncu 2025.3.1). Refusing the export
            # would refuse real profiles; the excess is clipped, and said.
            over = out > 1.0
            if over.any():
                out[over] = 1.0
                if notes is not None:
                    notes.append(located(path, None, name, f"{int(over.sum())} of {len(out)} launches report above 100 % "
                                         f"(up to {float(np.nanmax(np.where(over, out_raw, np.nan))) * 100:.1f} %); "
                                         "clipped to 100 %"))
        if name in _NCU_WHOLE:
            whole = np.round(out)
            frac = ~np.isnan(out) & ~(np.abs(out - whole) <= 1e-9 * np.maximum(1.0, np.abs(out)))
            if frac.any():
                k = int(np.flatnonzero(frac)[0])
                raise ProfileFormatError(located(
                    path, lines[k], name, f"{records[k][1][j].strip()!r}" + (f" {units[j]}" if units[j] else "")
                    + f" is {out[k]:.6g}, not a whole number"))
            out = whole
        return out

    df: dict[str, Any] = {"invocation": np.arange(len(records))}
    df["kernel_name"] = [row[col["Kernel Name"]].strip() for _, row in records]
    for out_name, dim_col, total_col in (("grid", "Grid Size", "launch__grid_size"),
                                         ("block", "Block Size", "launch__block_size")):
        vals = []
        if dim_col in col:
            for line, row in records:
                raw = row[col[dim_col]]
                try:
                    vals.append(format_dim3(parse_dim3(raw)))
                except ValueError as exc:
                    raise ProfileFormatError(located(path, line, dim_col, str(exc))) from None
        else:  # only the total is known: record it as a 1-D launch (scaled by the units row, whole)
            totals = metric(total_col, "count")
            for (line, row), v in zip(records, totals.tolist()):
                if not 1 <= v <= DIM3_MAX:  # NaN too
                    raise ProfileFormatError(located(path, line, total_col, f"expected a whole number from 1 to "
                                                                            f"2^31-1, found {row[col[total_col]]!r}"))
                vals.append(format_dim3((int(v), 1, 1)))
        df[out_name] = vals
    for out_name, names, kind in _NCU_METRICS:
        for k, name in enumerate(names):
            v = metric(name, kind)
            if v is not None:
                df[out_name] = v
                if k and notes is not None:  # e.g. sm__cycles_elapsed.avg is below .max: say which was read
                    notes.append(located(path, header_line, name, f"{out_name} read from it: the export has no "
                                         f"{names[0]}, which profiles of this format are read from"))
                break
    # named here by the export's own column: validate_profile, later, can only say "time_ns"
    missing_time = np.flatnonzero(np.isnan(np.asarray(df["time_ns"], dtype=np.float64)))
    if missing_time.size:
        r = int(missing_time[0])
        raise ProfileFormatError(located(path, lines[r], "gpu__time_duration.sum",
                                         f"no value ({records[r][1][col['gpu__time_duration.sum']].strip()!r}): "
                                         "every profiled launch needs its time"))
    if "cycles" not in df:
        df["cycles"] = np.full(len(records), np.nan)
    aux = {key: metric(name, kind) for key, name, kind in _NCU_AUX}
    _check_ncu_launch(path, lines, records, col, df, aux)
    # ipc: warp instructions per cycle per SM that had work, min(#SMs, #CTAs) (the synthetic
    # timing model's definition); from the SM count when known, else ncu's per-SM average
    if "inst_executed" in df and aux["sm_count"] is not None and not np.all(np.isnan(df["cycles"])):
        ctas = dim3_array(pd.Series(df["grid"])).astype(np.float64).prod(axis=1)  # int64 could wrap
        active = np.minimum(aux["sm_count"], ctas)
        with np.errstate(divide="ignore", invalid="ignore"):
            df["ipc"] = np.where((df["cycles"] > 0) & (active > 0), df["inst_executed"] / (df["cycles"] * active), np.nan)
    elif aux["ipc_direct"] is not None:
        df["ipc"] = aux["ipc_direct"]
    if "inst_executed" in df:
        warps = aux["warps_launched"]
        if warps is None and aux["grid_size"] is not None and aux["block_size"] is not None:
            warps = aux["grid_size"] * np.ceil(aux["block_size"] / 32.0)
        if warps is None:
            g = dim3_array(pd.Series(df["grid"])).astype(np.float64)
            b = dim3_array(pd.Series(df["block"])).astype(np.float64)
            warps = g.prod(axis=1) * np.ceil(b.prod(axis=1) / 32.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            df["warp_inst_executed_mean"] = np.where(warps > 0, df["inst_executed"] / warps, np.nan)
    if aux["shmem_static"] is not None or aux["shmem_dynamic"] is not None:
        # A part ncu reports as n/a is unknown, so the total is too (missing, not that part
        # taken as 0); only a part whose column the export lacks counts as none.
        zero = np.zeros(len(records))
        df["shmem"] = (aux["shmem_static"] if aux["shmem_static"] is not None else zero) + \
            (aux["shmem_dynamic"] if aux["shmem_dynamic"] is not None else zero)
    elif aux["shmem_total"] is not None:
        df["shmem"] = aux["shmem_total"]
    table = pd.DataFrame(df)
    result = validate_profile(table, path, line_of=lambda r: lines[r])
    if ncu_errors and notes is not None:
        # ncu reports a launch it failed to profile (or an application that failed) on such a
        # line and writes no row for it: skipped like ==PROF== chatter, the export looked whole
        first_line, first = ncu_errors[0]
        notes.append(located(path, first_line, None, f"{len(ncu_errors)} ==ERROR== line(s) from ncu (first: "
                             f"{first[:120]!r}): a launch ncu failed to profile has no row; `gclsampler validate` "
                             "against the traces tells whether every launch is here"))
    return result


MAX_SMS = 10_000
"""The most SMs an ncu SM count may claim: today's largest GPUs have fewer than 200, so a larger
count is a value from another column (it made every launch's IPC one over its CTA count)."""


def _check_ncu_launch(path: Path, lines: list[int], records, col: dict[str, int], df: dict[str, Any],
                      aux: dict[str, np.ndarray | None]) -> None:
    """Refuse launch facts no launch can have, or that contradict each other in one row.

    Each one silently skewed a column: an SM count of 0 left IPC empty for every
    launch, and a ``launch__grid_size`` that is not the product of ``Grid Size`` (a column
    pasted from another report) fed PKA's thread-block count while the grid said otherwise.
    """
    sm = aux["sm_count"]
    if sm is not None:
        bad = np.flatnonzero((sm < 1) | (sm > MAX_SMS))  # NaN (n/a) is unknown, not wrong; fractions are refused as counts
        if bad.size:
            k = int(bad[0])
            raise ProfileFormatError(located(path, lines[k], "device__attribute_multiprocessor_count",
                                             f"{records[k][1][col['device__attribute_multiprocessor_count']].strip()!r}: "
                                             f"a GPU has 1 to {MAX_SMS:,} SMs"))
    lanes = df.get("pka_divergence_efficiency")
    if lanes is not None:  # ncu's ratio is threads per warp instruction (a profile.csv may hold another unit)
        over = np.flatnonzero(lanes > 32)
        if over.size:
            k = int(over[0])
            name = "smsp__thread_inst_executed_per_inst_executed.ratio"
            raise ProfileFormatError(located(path, lines[k], name, f"{records[k][1][col[name]].strip()!r}: threads per "
                                             "warp instruction, at most the 32 lanes of a warp"))
    for key, dim_col, metric_name in (("grid_size", "Grid Size", "launch__grid_size"),
                                      ("block_size", "Block Size", "launch__block_size")):
        total = aux[key]
        if total is None or dim_col not in col:
            continue
        dims = dim3_array(pd.Series(df["grid" if key == "grid_size" else "block"])).astype(np.float64).prod(axis=1)
        differ = np.flatnonzero(~np.isnan(total) & (total != dims))
        if differ.size:
            k = int(differ[0])
            raise ProfileFormatError(located(path, lines[k], metric_name,
                                             f"{total[k]:.0f}, but {dim_col} {records[k][1][col[dim_col]].strip()!r} "
                                             f"is {dims[k]:.0f} {'CTAs' if key == 'grid_size' else 'threads'}: the "
                                             "row mixes two launches' values"))


# ---- Nsight Systems ----------------------------------------------------------------------
_UNIT_SUFFIX = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")
_NSYS_NOT_KERNEL = re.compile(r"^\[CUDA [^\]]*\]$")
"""cuda_gpu_trace's names of rows that are not kernel launches ("[CUDA memcpy Host-to-Device]",
"[CUDA memset]"): the only rows that may have no grid."""
_NSYS_SKIPPED = "row(s) without a grid (memcpy/memset, not kernel launches)"


def _split_unit(name: str) -> tuple[str, str | None]:
    m = _UNIT_SUFFIX.match(name)
    return (m.group(1), m.group(2)) if m else (name, None)


def _import_nsys(path: Path, text: str, notes: list[str] | None = None) -> pd.DataFrame:
    """Columnar fast path for well-formed exports; anything it does not accept goes to
    the row-by-row reader, which either reads it too or names the file, line and field.

    Millions of launches are common in ML workloads, and the row reader costs about
    10 us a row; pyarrow's CSV reader parses the same file in a few hundred ms. The
    fast path accepts only what it can read exactly like the row reader (same rows,
    values and order); on any doubt it returns None and the row reader decides.
    """
    try:
        df = _import_nsys_arrow(path, text, notes=notes)
    except ProfileFormatError:
        df = None
    return df if df is not None else _import_nsys_text(path, text, notes=notes)


def _import_nsys_arrow(path: Path, text: str | None = None, *, notes: list[str] | None = None) -> pd.DataFrame | None:
    """The fast path: ``text`` already read, or (None) the file mapped into memory as bytes."""
    try:
        import pyarrow as pa
        import pyarrow.csv  # noqa: F401  (only: is the CSV reader there?)
    except ImportError:  # pragma: no cover - pyarrow is a dependency; keep the row reader usable
        return None
    try:
        data = pa.py_buffer(text.encode("utf-8")) if text is not None else pa.memory_map(str(path)).read_buffer()
    except (OSError, UnicodeError):
        return None
    # the header is within the first few lines (nsys prints a short preamble)
    head = data.slice(0, min(data.size, 1 << 20)).to_pybytes()
    offset = 3 if head.startswith(b"\xef\xbb\xbf") else 0
    header = None
    for raw in head[offset:].split(b"\n")[:200]:
        offset += len(raw) + 1
        try:
            row = next(csv.reader([raw.decode("utf-8")]), [])
        except (UnicodeDecodeError, csv.Error):  # e.g. a bare CR (a progress redraw, CR-only line ends)
            return None
        names = [_split_unit(c.strip())[0] for c in row]
        if ("Name" in names and "GrdX" in names) or ("Kernel Name" in names and "GridXYZ" in names):
            header = [c.strip() for c in row]
            break
    if header is None or len(set(header)) != len(header):
        return None
    base = {_split_unit(c)[0]: c for c in header}
    unit_of = {b: (_split_unit(c)[1] or "ns") for b, c in base.items()}
    exec_trace = "GridXYZ" in base
    if exec_trace:
        need, order_col, dur_col, name_col = ["Kernel Dur", "GridXYZ", "BlockXYZ", "Kernel Name"], "API Start", "Kernel Dur", "Kernel Name"
        dims = ["GridXYZ", "BlockXYZ"]
    else:
        need, order_col, dur_col, name_col = ["Start", "Duration", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Name"], "CorrId", "Duration", "Name"
        dims = ["GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ"]
    scale = _TIME_NS.get(unit_of.get(dur_col, ""))
    if any(c not in base for c in need) or scale is None:
        return None
    cols = [base[c] for c in need if c != "Start"] + ([base[order_col]] if order_col in base else []) + \
        ([base["Reg/Trd"]] if not exec_trace and "Reg/Trd" in base else []) + \
        ([base["PID"]] if exec_trace and "PID" in base else [])
    text = pa.dictionary(pa.int32(), pa.string())  # names and shapes repeat: read them dictionary-encoded
    types = {base[dur_col]: pa.float64(), base[name_col]: text}
    if order_col in base:
        types[base[order_col]] = pa.float64()
    if not exec_trace:
        types.update({base[c]: pa.int32() for c in dims})
        if "Reg/Trd" in base:
            types[base["Reg/Trd"]] = pa.float64()
    else:
        types.update({base[c]: text for c in dims})
        if "PID" in base:
            types[base["PID"]] = text
    try:
        table = _arrow_read_csv(pa.BufferReader(data.slice(min(offset, data.size))), header, types,
                                include=list(dict.fromkeys(cols)))
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError):
        return None
    del data  # the parsed columns own their bytes: unmap the file now, not at return
    if table.num_rows == 0:
        return None

    def num(c: str) -> np.ndarray:
        return table.column(base[c]).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)

    # names: the row reader strips them; factorise first, strip each distinct name once
    codes, uniq = _arrow_factorize(table.column(base[name_col]))
    uniq = np.asarray([str(u).strip() for u in uniq], dtype=object)
    skipped = 0
    if not exec_trace:
        gx = table.column(base["GrdX"])
        keep = ~np.asarray(gx.is_null().to_numpy(zero_copy_only=False))
        memop = np.asarray([bool(_NSYS_NOT_KERNEL.match(u)) for u in uniq], dtype=bool)
        if not keep.any() or (~keep & ~memop[codes]).any():
            return None  # no kernel rows, or a kernel without a grid: let the row reader name it
        if not keep.all():
            skipped = int((~keep).sum())
            table = table.filter(pa.array(keep))
            codes = codes[keep]
        if any(table.column(base[c]).null_count for c in dims):
            return None  # a kernel row with a missing dimension: let the row reader name it
    n = table.num_rows
    if exec_trace and "PID" in base:
        _, pids = _arrow_factorize(table.column(base["PID"]))
        if len({"" if v is None else str(v).strip() for v in pids}) > 1:
            return None  # launches of several processes: the row reader names the first other one
    if exec_trace:
        grid = _dim3_strings(table.column(base["GridXYZ"]))
        block = _dim3_strings(table.column(base["BlockXYZ"]))
        if grid is None or block is None:
            return None
    else:
        d = np.stack([table.column(base[c]).to_numpy(zero_copy_only=False) for c in dims], axis=1).astype(np.int64)
        if (d < 1).any():
            return None
        grid, block = _dim3_from_ints(d[:, :3]), _dim3_from_ints(d[:, 3:])
    t = _scale_decimal(num(dur_col), scale)
    if not np.isfinite(t).all():
        return None  # missing, or too large in ns: the row reader names the row
    perm = np.arange(n)
    if order_col in base:
        o = num(order_col)
        if not np.isfinite(o).all():
            return None  # a missing launch order: the row reader names the row
        perm = np.argsort(o, kind="stable")
        if order_col == "CorrId" and ((o[perm][1:] == o[perm][:-1]).any() or _inexact_id(o) is not None):
            return None  # two launches with one correlation id, or an id past 2^53: the row reader names them
    df: dict[str, Any] = {
        "invocation": np.arange(n),
        "kernel_name": _take_strings(uniq, codes[perm]),
        "grid": _take_strings(grid[0], grid[1][perm]),
        "block": _take_strings(block[0], block[1][perm]),
        "time_ns": t[perm],
        "cycles": np.full(n, np.nan),
    }
    if not exec_trace and "Reg/Trd" in base:
        regs = num("Reg/Trd")
        if not np.isnan(regs).all():
            df["nregs"] = regs[perm]
    result = validate_profile(pd.DataFrame(df, copy=False), path, line_of=lambda r: r)
    if skipped and notes is not None:
        notes.append(located(path, None, None, f"skipped {skipped} {_NSYS_SKIPPED}"))
    return result


def _arrow_factorize(col) -> tuple[np.ndarray, list]:
    """Codes (in order of first appearance) and distinct values of an arrow string column,
    without making a Python object per row."""
    import pyarrow as pa

    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode()
    col = col.unify_dictionaries() if hasattr(col, "unify_dictionaries") else col
    chunks = col.chunks if hasattr(col, "chunks") else [col]
    if not chunks:
        return np.zeros(0, dtype=np.int64), []
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks]).astype(np.int64)
    return codes, chunks[0].dictionary.to_pylist()


def _dim3_from_ints(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct "(x,y,z)" strings and each row's code; launch shapes repeat, so each is formatted once."""
    if d.size and d.max() < 1 << 20:  # CUDA: x < 2^31, y, z < 2^16; pack into one int64 and hash
        codes, uniq = pd.factorize((d[:, 0] << 40) | (d[:, 1] << 20) | d[:, 2], sort=False)
        rows = np.stack([uniq >> 40, (uniq >> 20) & 0xFFFFF, uniq & 0xFFFFF], axis=1)
    else:
        rows, codes = np.unique(d, axis=0, return_inverse=True)
    text = np.asarray([format_dim3(u) for u in rows.tolist()], dtype=object)
    return text, np.asarray(codes).reshape(-1)


def _dim3_strings(col) -> tuple[np.ndarray, np.ndarray] | None:
    """Canonical dims from nsys's "  64    8    1" cells, each distinct cell parsed once."""
    codes, uniq = _arrow_factorize(col)
    try:
        text = np.asarray([format_dim3(parse_dim3(str(u).replace(",", " "))) for u in uniq], dtype=object)
    except ValueError:
        return None
    return text, codes


_NSYS_SIGNATURE = frozenset({"CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd", "StcSMem",
                             "DymSMem", "Strm", "GridXYZ", "BlockXYZ", "Kernel Dur", "API Start"})
"""Column names only nsys's kernel-trace reports use."""


def _is_nsys_header(names: list[str]) -> bool:
    """Whether a CSV row is an nsys kernel-trace header, even one missing a required column:
    the importer then names the column, where "unrecognised export" named none."""
    return len(_NSYS_SIGNATURE.intersection(_split_unit(c.strip().strip('"'))[0] for c in names)) >= 2


def _import_nsys_text(path: Path, text: str, *, notes: list[str] | None = None) -> pd.DataFrame:
    rows = _csv_rows(path, text)
    header: list[str] | None = None
    header_line = 0
    for line, row in rows:
        if _is_nsys_header(row):
            header, header_line = [c.strip() for c in row], line
            break
    if header is None:
        raise ProfileFormatError(located(
            path, None, None,
            "no Nsight Systems header found: expected `nsys stats --report cuda_gpu_trace` (Start, Duration, "
            "CorrId, GrdX..BlkZ, Name) or `cuda_kern_exec_trace` (API Start, Kernel Dur, GridXYZ, BlockXYZ, "
            "Kernel Name) with --format csv"))
    _refuse_repeated_columns(header, path, header_line)
    base = {}
    unit_of = {}
    for i, c in enumerate(header):
        b, u = _split_unit(c)
        base[b] = i
        unit_of[b] = u or "ns"
    exec_trace = "GridXYZ" in base
    if exec_trace:
        need = ["Kernel Dur", "GridXYZ", "BlockXYZ", "Kernel Name"]
        order_col, dur_col, name_col = "API Start", "Kernel Dur", "Kernel Name"
    else:
        need = ["Start", "Duration", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Name"]
        order_col, dur_col, name_col = "CorrId", "Duration", "Name"
    missing = [c for c in need if c not in base]
    if missing:
        raise ProfileFormatError(located(path, header_line, ",".join(missing),
                                         f"required Nsight Systems column(s) missing; found columns: {', '.join(header)}"))
    scale = _TIME_NS.get(unit_of[dur_col])
    if scale is None:
        raise ProfileFormatError(located(path, header_line, header[base[dur_col]],
                                         f"unknown time unit {unit_of[dur_col]!r} (expected ns, us, ms or s)"))
    lines: list[int] = []
    names: list[str] = []
    grids: list[str] = []
    blocks: list[str] = []
    times: list[float] = []
    dur_text: list[str] = []  # as written, for an error message
    pid_col = base.get("PID") if exec_trace else None
    first_pid: tuple[int, str] | None = None  # (line, pid) of the first kernel row
    order: list[float] = []
    nregs: list[float] = []
    skipped = 0
    for line, row in rows:
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise ProfileFormatError(located(path, line, None, f"expected {len(header)} fields like the header, found {len(row)}"))
        if exec_trace:
            g_raw, b_raw = row[base["GridXYZ"]], row[base["BlockXYZ"]]
            field_g, field_b = "GridXYZ", "BlockXYZ"
        else:
            if row[base["GrdX"]].strip() == "":
                if _NSYS_NOT_KERNEL.match(row[base[name_col]].strip()):
                    skipped += 1  # memcpy / memset: not a kernel invocation
                    continue
                raise ProfileFormatError(located(path, line, "GrdX", f"empty grid for kernel {row[base[name_col]].strip()!r} "
                                                                     "(only [CUDA memcpy/memset] rows have no grid)"))
            g_raw = " ".join(row[base[k]] for k in ("GrdX", "GrdY", "GrdZ"))
            b_raw = " ".join(row[base[k]] for k in ("BlkX", "BlkY", "BlkZ"))
            field_g, field_b = "GrdX", "BlkX"
        try:
            g = format_dim3(parse_dim3(g_raw.replace(",", " ")))
        except ValueError as exc:
            raise ProfileFormatError(located(path, line, field_g, str(exc))) from None
        try:
            b = format_dim3(parse_dim3(b_raw.replace(",", " ")))
        except ValueError as exc:
            raise ProfileFormatError(located(path, line, field_b, str(exc))) from None
        try:
            t = _number(row[base[dur_col]])
        except ValueError:
            raise ProfileFormatError(located(path, line, header[base[dur_col]], _not_a_number(row[base[dur_col]]))) from None
        o = math.nan
        if order_col in base:
            try:
                o = _number(row[base[order_col]])
            except ValueError:
                raise ProfileFormatError(located(path, line, header[base[order_col]],
                                                 _not_a_number(row[base[order_col]]))) from None
            if not math.isfinite(o):
                # one missing value would otherwise put every launch back in GPU start order
                raise ProfileFormatError(located(path, line, header[base[order_col]],
                                                 f"missing or not finite: {row[base[order_col]]!r} (launch order "
                                                 "comes from this column, so every kernel row needs it)"))
        if not exec_trace:
            # Shared memory is left out on purpose: nsys prints it in MB with three
            # decimals, which cannot tell 16000 from 16384 bytes.
            j = base.get("Reg/Trd")
            try:
                nregs.append(math.nan if j is None else _number(row[j]))
            except ValueError:
                raise ProfileFormatError(located(path, line, header[j], _not_a_number(row[j]))) from None
        lines.append(line)
        names.append(row[base[name_col]].strip())
        grids.append(g)
        blocks.append(b)
        times.append(t)
        dur_text.append(row[base[dur_col]].strip())
        order.append(o)
        if pid_col is not None:
            pid = row[pid_col].strip()
            if first_pid is None:
                first_pid = (line, pid)
            elif pid != first_pid[1]:
                # launches of two processes interleaved by API start: neither one's launch order
                raise ProfileFormatError(located(path, line, header[pid_col],
                                                 f"{pid}, but line {first_pid[0]} is process {first_pid[1]}: a "
                                                 "workload is one process's launches, in its order; export that "
                                                 "process alone"))
    if not lines:
        raise ProfileFormatError(located(path, header_line, None, "no kernel rows after the header"))
    # Launch order: correlation ids (cuda_gpu_trace) / API start (cuda_kern_exec_trace)
    # follow the host's launch calls, which is how NVBit numbers the traced kernels;
    # GPU start times do not when several streams overlap.
    # Without the column at all (an export that does not have it), rows stay in file order.
    o = np.asarray(order)
    perm = np.argsort(o, kind="stable") if order_col in base else np.arange(len(o))
    if order_col == "CorrId" and order_col in base:
        big = _inexact_id(o)
        if big is not None:
            raise ProfileFormatError(located(path, lines[big], header[base[order_col]], _INEXACT_ID))
        rep = _repeated_id(o, perm)
        if rep is not None:
            raise ProfileFormatError(located(path, lines[rep[1]], header[base[order_col]],
                                             f"{_id_text(o[rep[1]])} is also the correlation id of line {lines[rep[0]]}; "
                                             "each launch of a process has its own: rows of several processes "
                                             "(export one), or kernels replayed from one CUDA graph launch (not "
                                             "supported)"))
    df: dict[str, Any] = {
        "invocation": np.arange(len(lines)),
        "kernel_name": np.asarray(names, dtype=object)[perm],
        "grid": np.asarray(grids, dtype=object)[perm],
        "block": np.asarray(blocks, dtype=object)[perm],
        "time_ns": _ns_or_located(np.asarray(times, dtype=np.float64), scale,
                                  lambda k: located(path, lines[k], header[base[dur_col]], repr(dur_text[k])))[perm],
        "cycles": np.full(len(lines), np.nan),
    }
    if nregs and not np.isnan(nregs).all():
        df["nregs"] = np.asarray(nregs, dtype=np.float64)[perm]
    src_lines = np.asarray(lines)[perm]
    result = validate_profile(pd.DataFrame(df), path, line_of=lambda r: int(src_lines[r]))
    if skipped and notes is not None:
        notes.append(located(path, None, None, f"skipped {skipped} {_NSYS_SKIPPED}"))
    return result


def _repeated_id(ids: np.ndarray, perm: np.ndarray) -> tuple[int, int] | None:
    """``(earlier, later)`` records sharing a correlation id, ``later`` the first such in
    file order; None when all differ. ``perm`` is the stable argsort of ``ids``.

    Why refuse: launch order comes from these ids, and two launches with one id have
    no order between them.
    """
    s = ids[perm]
    d = np.flatnonzero(s[1:] == s[:-1])
    if not d.size:
        return None
    i = int(np.argmin(perm[d + 1]))
    return int(perm[d[i]]), int(perm[d[i] + 1])


_INEXACT_ID = ("past 2^53, where ids are read as float64 and two of them can look alike; launch order "
               "comes from these ids, so they must be below it (CUPTI's are 32-bit)")


def _inexact_id(ids: np.ndarray) -> int | None:
    """The first record whose id a float64 may not hold exactly (|id| >= 2^53), else None."""
    big = np.flatnonzero(np.abs(np.asarray(ids, dtype=np.float64)) >= 2.0 ** 53)
    return int(big[0]) if big.size else None


def _id_text(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


# ---- torch.profiler -------------------------------------------------------------------------
def _json_number(v: Any) -> float:
    """A finite JSON number, or a string holding one, as float; ValueError for anything else.

    Why not ``float(v)``: it reads ``true`` as 1 and accepts Infinity; ``int(v)`` reads
    2.9 as 2. Numbers in a trace are never silently misread.
    """
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(v)
    if isinstance(v, str):
        refuse_python_only_digits(v.strip())
    try:
        x = float(v)
    except OverflowError:
        raise ValueError(v) from None
    if not math.isfinite(x):
        raise ValueError(v)
    return x


def _json_int(digits: str) -> int | float:
    """A JSON integer; one past Python's int-conversion limit (4300 digits) is read as a float,
    so a field the importer never uses cannot stop it, and one it uses is refused by name."""
    return int(digits) if len(digits) < 4000 else float(digits)


def _import_torch_text(path: Path, text: str, notes: list[str] | None = None) -> pd.DataFrame:
    try:
        doc = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise ProfileFormatError(located(path, exc.lineno, None, f"not JSON: {exc.msg}")) from None
    except RecursionError:  # nesting deeper than the interpreter's stack: no chrome trace is
        raise ProfileFormatError(located(path, None, None, "not a chrome trace: JSON nested too deeply to read")) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ProfileFormatError(located(path, None, "traceEvents", "expected a chrome trace with a traceEvents list"))
    # "Kernel" is how older torch releases' Kineto named the category (torch 1.8-1.10 by one report), "kernel" later ones
    kernel_events = [(k, e) for k, e in enumerate(events)
                     if isinstance(e, dict) and isinstance(e.get("cat"), str) and e["cat"].lower() == "kernel"]
    kernels = [(k, e) for k, e in kernel_events if e.get("ph", "X") == "X"]
    note = None
    if len(kernels) < len(kernel_events):
        k0, e0 = next((k, e) for k, e in kernel_events if e.get("ph", "X") != "X")
        note = located(path, None, "traceEvents",
                       f"skipped {len(kernel_events) - len(kernels)} kernel event(s) whose ph is not \"X\" "
                       f"(first: traceEvents[{k0}], ph {e0.get('ph')!r:.20}); only complete events carry a duration")
    if not kernels and note is not None:
        raise ProfileFormatError(note.replace("skipped", "no complete kernel events:", 1))
    if not kernels:
        cats = sorted({str(e.get("cat")) for e in events if isinstance(e, dict)})
        raise ProfileFormatError(located(path, None, "traceEvents",
                                         f"no kernel events (cat \"kernel\", or \"Kernel\" as older torch releases wrote it); categories found: {', '.join(cats) or '(none)'}"))
    n = len(kernels)
    names, grids, blocks = [], [], []
    times, order, ts = np.empty(n), np.empty(n), np.empty(n)
    nregs, shmem, occ = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    no_corr: list[int] = []
    for k, (idx, e) in enumerate(kernels):
        where = f"traceEvents[{idx}]"
        args = e.get("args") or {}
        if not isinstance(args, dict):
            raise ProfileFormatError(located(path, None, f"{where}.args", f"expected an object, found {args!r:.80}"))
        name = e.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ProfileFormatError(located(path, None, f"{where}.name", "missing kernel name"))
        try:
            dur = _json_number(e["dur"])
        except (KeyError, ValueError):
            raise ProfileFormatError(located(path, None, f"{where}.dur", f"missing or not a number: {e.get('dur')!r}")) from None
        try:
            start = _json_number(e.get("ts"))
        except ValueError:
            start = math.nan  # needed only without correlation ids; refused there
        for key, out in (("grid", grids), ("block", blocks)):
            v = args.get(key)
            try:
                if not isinstance(v, list) or len(v) != 3:
                    raise ValueError(v)
                xs = [_json_number(x) for x in v]
                if not all(x.is_integer() for x in xs):
                    raise ValueError(v)
                out.append(format_dim3(parse_dim3(",".join(str(int(x)) for x in xs))))
            except ValueError:
                raise ProfileFormatError(located(path, None, f"{where}.args.{key}",
                                                 f"expected [x, y, z] of whole numbers from 1 to 2^31-1, found {v!r:.80}")) from None
        names.append(name.strip())
        times[k] = dur
        ts[k] = start
        corr = args.get("correlation")
        if corr is None:
            no_corr.append(k)
            order[k] = math.nan
        else:
            try:
                order[k] = _json_number(corr)
                if not order[k].is_integer():
                    raise ValueError(corr)
            except ValueError:
                raise ProfileFormatError(located(path, None, f"{where}.args.correlation",
                                                 f"not a whole number: {corr!r:.80}")) from None
        for key, arr, whole in (("registers per thread", nregs, True), ("shared memory", shmem, True),
                                ("est. achieved occupancy %", occ, False)):
            v = args.get(key)
            if v is not None:
                try:
                    arr[k] = _json_number(v)
                except ValueError:
                    raise ProfileFormatError(located(path, None, f"{where}.args.{key}",
                                                     f"not a number: {v!r:.80}")) from None
                if whole and not arr[k].is_integer():
                    # registers and bytes of a launch are whole: a fraction is a wrong field or unit
                    raise ProfileFormatError(located(path, None, f"{where}.args.{key}",
                                                     f"not a whole number: {v!r:.80}"))
    # launch order: the CUDA correlation id follows the host's launch calls; GPU start
    # times (ts) only when the trace has no correlation ids at all
    times = _ns_or_located(times, 1e3, lambda k: located(path, None, f"traceEvents[{kernels[k][0]}].dur",
                                                         f"{kernels[k][1]['dur']!r:.80} us"))  # chrome traces count us
    occ = _scale_decimal(occ, 0.01)  # percent
    event_of = np.asarray([idx for idx, _ in kernels])
    if no_corr and len(no_corr) < n:
        raise ProfileFormatError(located(path, None, f"traceEvents[{event_of[no_corr[0]]}].args.correlation",
                                         "missing, but other kernel events have one (launch order comes from it)"))
    if no_corr:
        bad_ts = np.flatnonzero(np.isnan(ts))
        if bad_ts.size:
            k = int(bad_ts[0])
            raise ProfileFormatError(located(path, None, f"traceEvents[{event_of[k]}].ts",
                                             f"missing or not a number: {kernels[k][1].get('ts')!r:.80} (no kernel "
                                             "event has a correlation id, so launch order comes from ts)"))
        perm = np.argsort(ts, kind="stable")
    else:
        perm = np.argsort(order, kind="stable")
        big = _inexact_id(order)
        if big is not None:
            raise ProfileFormatError(located(path, None, f"traceEvents[{event_of[big]}].args.correlation", _INEXACT_ID))
        rep = _repeated_id(order, perm)
        if rep is not None:
            raise ProfileFormatError(located(path, None, f"traceEvents[{event_of[rep[1]]}].args.correlation",
                                             f"{_id_text(order[rep[1]])} is also the correlation id of "
                                             f"traceEvents[{event_of[rep[0]]}]; each launch has its own (kernels replayed from one "
                                             "CUDA graph launch share it: CUDA-graph workloads are not supported)"))
    df: dict[str, Any] = {
        "invocation": np.arange(n),
        "kernel_name": np.asarray(names, dtype=object)[perm],
        "grid": np.asarray(grids, dtype=object)[perm],
        "block": np.asarray(blocks, dtype=object)[perm],
        "time_ns": times[perm],
        "cycles": np.full(n, np.nan),
    }
    for name, arr in (("achieved_occupancy", occ), ("nregs", nregs), ("shmem", shmem)):
        if not np.isnan(arr).all():
            df[name] = arr[perm]
    event_ids = event_of[perm]
    result = validate_profile(pd.DataFrame(df), f"{path} (traceEvents index)", line_of=lambda r: int(event_ids[r]))
    if note is not None and notes is not None:
        notes.append(note)
    return result
