"""Per-invocation hardware profiles: one table per workload (``profile.csv``).

Every sampler and the evaluation read the same table, whatever profiler produced
it: row i is invocation i in launch order (the trace's ``-kernel id`` minus one),
so an estimate ``sum(weight * M[invocation])`` can index any column directly.

Required columns: ``invocation, kernel_name, grid, block, time_ns, cycles``.
``grid``/``block`` are written ``"(x,y,z)"`` exactly like the trace header.
``cycles`` may be empty in a row when the source has no cycle counter (Nsight
Systems and torch.profiler record wall time only); every other required value
must be present. Optional metric columns use the names in ``OPTIONAL_COLUMNS``;
other extra columns are kept as they are (they may be useful to a user) but
nothing in gclsampler relies on them.

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
import tempfile
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

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
]

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


class ProfileFormatError(GclError):
    """A profile or profiler export that cannot be read (names path:line and the field)."""


# ---------------------------------------------------------------------------------------
# dim3 helpers
# ---------------------------------------------------------------------------------------
_DIM3 = re.compile(r"^\s*[\(\[]?\s*(\d+)\s*[,\s]\s*(\d+)\s*[,\s]\s*(\d+)\s*[\)\]]?\s*$")


def parse_dim3(text: str) -> tuple[int, int, int]:
    """``"(x,y,z)"`` (also ``"[x, y, z]"`` or ``"x y z"``) -> ``(x, y, z)``; ValueError otherwise."""
    m = _DIM3.match(str(text))
    if not m:
        raise ValueError(f"expected (x,y,z), found {text!r}")
    x, y, z = (int(g) for g in m.groups())
    if min(x, y, z) < 1:
        raise ValueError(f"dimensions must be >= 1, found {text!r}")
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


def validate_profile(df: pd.DataFrame, where: str | Path = "profile", *, line_of=_line_of) -> pd.DataFrame:
    """Check and normalise a profile table; return a fresh frame in canonical column order.

    ``line_of(row)`` maps a 0-based data row to the line a user should look at.
    """
    where = str(where)
    dup = pd.Index(df.columns)[pd.Index(df.columns).duplicated()]
    if len(dup):
        raise ProfileFormatError(located(where, 1, str(dup[0]), "column appears more than once"))
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ProfileFormatError(
            located(where, 1, ",".join(missing),
                    f"required column(s) missing; found columns: {', '.join(map(str, df.columns)) or '(none)'}")
        )
    out: dict[str, Any] = {}
    n = len(df)

    inv = pd.to_numeric(df["invocation"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    expected = np.arange(n, dtype=np.float64)
    bad = np.flatnonzero(~(inv == expected))
    if bad.size:
        r = int(bad[0])
        raise ProfileFormatError(
            located(where, line_of(r), "invocation",
                    f"rows must list invocations 0..N-1 in launch order; expected {r}, found {df['invocation'].iloc[r]!r}")
        )
    out["invocation"] = np.arange(n, dtype=np.int64)

    names = df["kernel_name"]
    name_str = names.astype(str)
    empty = names.isna().to_numpy() | (name_str.str.strip() == "").to_numpy()
    if empty.any():
        r = int(np.flatnonzero(empty)[0])
        raise ProfileFormatError(located(where, line_of(r), "kernel_name", "empty kernel name"))
    out["kernel_name"] = name_str.to_numpy(dtype=object)

    for col in ("grid", "block"):
        out[col] = _normalise_dim3_column(df[col], where, col, line_of)

    for col in [c for c in NUMERIC_COLUMNS if c in df.columns]:
        values = _numeric_column(df[col], where, col, line_of)
        if col == "time_ns":
            nan = np.isnan(values)
            if nan.any():
                r = int(np.flatnonzero(nan)[0])
                raise ProfileFormatError(located(where, line_of(r), col, "missing value"))
        neg = values < 0
        if neg.any():
            r = int(np.flatnonzero(neg)[0])
            raise ProfileFormatError(located(where, line_of(r), col, f"negative value {values[r]!r}"))
        out[col] = values

    extras = [c for c in df.columns if c not in REQUIRED_COLUMNS and c not in OPTIONAL_COLUMNS]
    for col in extras:
        out[col] = df[col].to_numpy()
    order = REQUIRED_COLUMNS + [c for c in OPTIONAL_COLUMNS if c in df.columns] + extras
    result = pd.DataFrame({c: out[c] for c in order})
    result["kernel_name"] = result["kernel_name"].astype(str)
    return result


def _numeric_column(series: pd.Series, where: str, col: str, line_of) -> np.ndarray:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    raw_missing = series.isna().to_numpy() | (series.astype(str).str.strip() == "").to_numpy()
    bad = np.isnan(values) & ~raw_missing
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ProfileFormatError(located(where, line_of(r), col, f"not a number: {series.iloc[r]!r}"))
    inf = np.isinf(values)
    if inf.any():
        r = int(np.flatnonzero(inf)[0])
        raise ProfileFormatError(located(where, line_of(r), col, f"not finite: {series.iloc[r]!r}"))
    return values


def _normalise_dim3_column(series: pd.Series, where: str, col: str, line_of) -> np.ndarray:
    text = series.astype(str)
    # Fast path: most files already hold the canonical "(x,y,z)" with no spaces.
    canon = text.str.fullmatch(r"\(\d+,\d+,\d+\)").to_numpy()
    result = text.to_numpy(dtype=object).copy()
    for r in np.flatnonzero(~canon):
        try:
            result[r] = format_dim3(parse_dim3(text.iloc[r]))
        except ValueError as exc:
            raise ProfileFormatError(located(where, line_of(int(r)), col, str(exc))) from None
    if canon.any():
        zero = text.str.contains(r"(?:^\(|,)0+(?:,|\)$)").to_numpy() & canon
        if zero.any():
            r = int(np.flatnonzero(zero)[0])
            raise ProfileFormatError(located(where, line_of(r), col, f"dimensions must be >= 1, found {text.iloc[r]!r}"))
    return result


# ---------------------------------------------------------------------------------------
# profile.csv
# ---------------------------------------------------------------------------------------
def read_profile(path: str | Path) -> pd.DataFrame:
    """Read and validate ``profile.csv``; row i is invocation i.

    Numeric columns come back as float64 (``cycles`` may hold NaN where the source
    had no cycle counter), ``grid``/``block`` as canonical ``"(x,y,z)"`` strings.
    """
    path = Path(path)
    try:
        # header=None: a row with more fields than the header is then a located parser
        # error instead of being silently taken as an index column.
        raw = pd.read_csv(path, dtype=str, header=None, keep_default_na=False, na_values=[])
    except FileNotFoundError:
        raise ProfileFormatError(located(path, None, None, "no such file")) from None
    except pd.errors.EmptyDataError:
        raise ProfileFormatError(located(path, 1, None, "empty file (expected a header line)")) from None
    except pd.errors.ParserError as exc:
        raise ProfileFormatError(located(path, _parser_error_line(exc), None, f"malformed CSV: {exc}")) from None
    except UnicodeDecodeError as exc:
        raise ProfileFormatError(located(path, None, None, f"not UTF-8 text: {exc.reason}")) from None
    df = raw.iloc[1:].reset_index(drop=True)
    df.columns = [str(c).strip() for c in raw.iloc[0]]
    return validate_profile(df, path)


def _parser_error_line(exc: Exception) -> int | None:
    m = re.search(r"line (\d+)", str(exc))
    return int(m.group(1)) if m else None


def write_profile(df: pd.DataFrame, path: str | Path) -> Path:
    """Validate, then write ``profile.csv`` atomically (temp file in the same dir, rename).

    Integral numeric columns are written as integers so that a round trip and two
    runs over the same input give the same bytes.
    """
    path = Path(path)
    table = validate_profile(df, f"{path} (table being written)", line_of=lambda r: r)
    for col in [c for c in NUMERIC_COLUMNS if c in table.columns]:
        v = table[col].to_numpy(dtype=np.float64)
        if v.size and not np.isnan(v).any() and np.all(v == np.round(v)) and np.abs(v).max() < 2**62:
            table[col] = v.astype(np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            table.to_csv(fh, index=False, lineterminator="\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
