"""Sampling plans: the one file a simulator user needs (``plan.json``, DESIGN.md).

Every sampler, ours and the baselines, returns a ``SamplingPlan``. The estimate of
any per-invocation metric M is ``sum(weight * M[invocation])`` over the samples, so
a plan can be checked by anything that reads JSON. Invariants, enforced in
``SamplingPlan.validate``: each invocation appears at most once, every cluster's
samples carry exactly the cluster's size as total weight (no invocation is
dropped), and the weights sum to ``n_invocations``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gclsampler._atomic import write_text_atomic
from gclsampler.errors import GclError, check_seed  # noqa: F401  (check_seed: plan.check_seed callers)

PLAN_FORMAT = "gclsampler-plan/1"


def _counts_agree(weight_sum: float, count: int) -> bool:
    """Whether sample weights summing to ``weight_sum`` stand for ``count`` invocations.

    Why a tolerance: a weight N/m is not exact in binary, so m of them sum to N only up to
    rounding. Why capped below half an invocation: a relative tolerance alone grows with N and,
    on a plan of 10^12 invocations, would let weights count hundreds that are not there.
    """
    return abs(weight_sum - count) <= min(0.5, max(1e-6, 1e-9 * abs(count)))


class PlanError(GclError):
    """A plan file that breaks the contract (names the file and the field)."""


@dataclass(frozen=True)
class Sample:
    invocation: int
    kernel_name: str
    cluster: int
    weight: float


@dataclass(frozen=True)
class ClusterInfo:
    id: int
    size: int
    error_bound: float | None = None


def _numpy_scalar(x: Any) -> Any:
    """JSON for a numpy scalar in a plan's config (a sampler given ``epsilon=np.float32(0.05)``
    keeps it as given): the Python number it holds, so the file is the one a float gives."""
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"{type(x).__name__} in a plan's config is not JSON")


@dataclass
class SamplingPlan:
    workload: str
    method: str
    n_invocations: int
    samples: list[Sample]
    clusters: list[ClusterInfo]
    config: dict[str, Any] = field(default_factory=dict)
    synthetic: bool = False

    # ---- invariants -------------------------------------------------------------
    def validate(self, where: str = "plan") -> "SamplingPlan":
        """Raise ``PlanError`` unless the plan accounts for every invocation exactly."""
        inv = np.array([s.invocation for s in self.samples], dtype=np.int64)
        if inv.size != np.unique(inv).size:
            raise PlanError(f"{where}: samples: an invocation appears more than once")
        if inv.size and (inv.min() < 0 or inv.max() >= self.n_invocations):
            raise PlanError(f"{where}: samples: invocation outside [0, {self.n_invocations})")
        sizes = {c.id: c.size for c in self.clusters}
        if len(sizes) != len(self.clusters):  # a dict would keep one of them: save() wrote what load() refuses
            raise PlanError(f"{where}: clusters: an id appears more than once")
        if sum(sizes.values()) != self.n_invocations:
            raise PlanError(
                f"{where}: clusters: sizes sum to {sum(sizes.values())}, not n_invocations={self.n_invocations}"
            )
        per_cluster: dict[int, float] = {}
        for s in self.samples:
            if s.cluster not in sizes:
                raise PlanError(f"{where}: samples: invocation {s.invocation} names unknown cluster {s.cluster}")
            if not (s.weight > 0 and math.isfinite(s.weight)):
                raise PlanError(f"{where}: samples: invocation {s.invocation} has weight {s.weight}")
            per_cluster[s.cluster] = per_cluster.get(s.cluster, 0.0) + s.weight
        for cid, size in sizes.items():
            got = per_cluster.get(cid, 0.0)
            if size == 0 and cid in per_cluster:  # weight on an empty cluster counts invocations twice
                raise PlanError(f"{where}: cluster {cid}: size 0, but its samples carry weight {got}")
            if not _counts_agree(got, size):
                raise PlanError(f"{where}: cluster {cid}: sample weights sum to {got}, not its size {size}")
        # per-cluster tolerances could add up over many clusters: the whole must hold too
        total = math.fsum(per_cluster.values())
        if not _counts_agree(total, self.n_invocations):
            raise PlanError(f"{where}: samples: weights sum to {total}, not n_invocations={self.n_invocations}")
        return self

    # ---- derived ------------------------------------------------------------------
    @property
    def invocations(self) -> np.ndarray:
        return np.array([s.invocation for s in self.samples], dtype=np.int64)

    @property
    def weights(self) -> np.ndarray:
        return np.array([s.weight for s in self.samples], dtype=np.float64)

    def estimate(self, per_invocation: np.ndarray) -> float:
        """Weighted-sum estimate of a per-invocation metric (cycles, time, ...)."""
        values = np.asarray(per_invocation, dtype=np.float64)
        return weighted_sum(self.weights, values[self.invocations])

    def speedup(self, time_per_invocation: np.ndarray) -> float:
        """Total time of all invocations over total time of the simulated ones (GCL eq. 6).

        inf (or nan) when the sampled invocations' time is 0: no warning, since callers
        report that case in words (``speedup_text``).
        """
        t = np.asarray(time_per_invocation, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.float64(t.sum()) / t[self.invocations].sum())

    def speedup_text(self, time_per_invocation: np.ndarray) -> str:
        """The expected-speedup line the CLIs print, or why there is no number."""
        s = self.speedup(time_per_invocation)
        if not math.isfinite(s):
            return "expected speedup: n/a (sampled invocations have zero profiled time)"
        return f"expected speedup {s:.1f}x (profile time of all invocations / of the sampled ones)"

    # ---- file form ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        samples = sorted(self.samples, key=lambda s: s.invocation)
        return {
            "format": PLAN_FORMAT,
            "workload": self.workload,
            "method": self.method,
            "synthetic": self.synthetic,
            "n_invocations": int(self.n_invocations),
            "samples": [
                {"invocation": int(s.invocation), "kernel_name": s.kernel_name,
                 "cluster": int(s.cluster), "weight": float(s.weight)}
                for s in samples
            ],
            "clusters": [
                {"id": int(c.id), "size": int(c.size),
                 "error_bound": None if c.error_bound is None else float(c.error_bound)}
                for c in sorted(self.clusters, key=lambda c: c.id)
            ],
            "config": self.config,
        }

    def to_json(self) -> str:
        """Canonical text (samples by invocation, clusters by id, keys in contract order, repr floats),
        so equal plans are equal bytes."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=False, allow_nan=False, default=_numpy_scalar) + "\n"

    def save(self, path: str | Path) -> Path:
        """Validate, then write atomically (temp file in the same directory, then rename)."""
        path = Path(path)
        self.validate(str(path))
        return write_text_atomic(path, self.to_json())

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "plan") -> "SamplingPlan":
        """Parse the file form strictly: a value of the wrong type is an error, never coerced.

        ``int(0.5)`` used to turn ``"invocation": 0.5`` into invocation 0, and a JSON list
        at the top level raised AttributeError; both now name the file and the field.
        """
        if not isinstance(d, dict):
            raise PlanError(f"{where}: expected a JSON object (gclsampler-plan/1), found a JSON {_json_type(d)}")
        if d.get("format") != PLAN_FORMAT:
            raise PlanError(f"{where}: format: expected {PLAN_FORMAT!r}, found {d.get('format')!r}")
        for key in ("workload", "method", "n_invocations", "samples", "clusters"):
            if key not in d:
                raise PlanError(f"{where}: missing field {key!r}")
        samples_raw, clusters_raw = d["samples"], d["clusters"]
        if not isinstance(samples_raw, list):
            raise PlanError(f"{where}: samples: expected a list, found a JSON {_json_type(samples_raw)}")
        if not isinstance(clusters_raw, list):
            raise PlanError(f"{where}: clusters: expected a list, found a JSON {_json_type(clusters_raw)}")
        config = d.get("config")
        if config is None:  # absent or null: no settings recorded (`or {}` also took [], 0, false, "")
            config = {}
        if not isinstance(config, dict):
            raise PlanError(f"{where}: config: expected an object, found a JSON {_json_type(config)}")
        samples = []
        for j, s in enumerate(samples_raw):
            f = f"samples[{j}]"
            if not isinstance(s, dict):
                raise PlanError(f"{where}: {f}: expected an object, found a JSON {_json_type(s)}")
            samples.append(Sample(_int_field(s, "invocation", f, where), _str_field(s, "kernel_name", f, where),
                                  _int_field(s, "cluster", f, where), _float_field(s, "weight", f, where)))
        clusters = []
        for j, c in enumerate(clusters_raw):
            f = f"clusters[{j}]"
            if not isinstance(c, dict):
                raise PlanError(f"{where}: {f}: expected an object, found a JSON {_json_type(c)}")
            bound = None if c.get("error_bound") is None else _float_field(c, "error_bound", f, where)
            if bound is not None and bound < 0:  # a relative half-width: show printed -100.00%
                raise PlanError(f"{where}: {f}.error_bound: {bound!r} is negative (a bound on a relative error)")
            clusters.append(ClusterInfo(_int_field(c, "id", f, where), _int_field(c, "size", f, where), bound))
        synthetic = d.get("synthetic", False)
        if not isinstance(synthetic, bool):
            raise PlanError(f"{where}: synthetic: expected true or false, found {synthetic!r}")
        plan = cls(
            workload=_str_field(d, "workload", None, where),
            method=_str_field(d, "method", None, where),
            n_invocations=_int_field(d, "n_invocations", None, where),
            samples=samples,
            clusters=clusters,
            config=dict(config),
            synthetic=synthetic,
        )
        if plan.n_invocations < 0:
            raise PlanError(f"{where}: n_invocations: must be >= 0, found {plan.n_invocations}")
        if any(c.size < 0 for c in plan.clusters):
            raise PlanError(f"{where}: clusters: a size is negative")
        return plan.validate(where)

    @classmethod
    def load(cls, path: str | Path) -> "SamplingPlan":
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise PlanError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise PlanError(f"{path}: is a directory, not a plan file") from None
        except OSError as exc:
            raise PlanError(f"{path}: cannot read: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[:exc.start].count(b"\n") + 1
            raise PlanError(f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x})") from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
        except RecursionError:
            raise PlanError(f"{path}: not a plan: JSON nested too deeply") from None
        except ValueError as exc:  # Python's int digit limit: a number of thousands of digits
            raise PlanError(f"{path}: not a plan: {str(exc).split(';')[0]}") from None
        try:
            return cls.from_dict(d, str(path))
        except (ValueError, OverflowError, TypeError) as exc:  # a value no field check foresaw
            raise PlanError(f"{path}: not a valid plan ({type(exc).__name__}: {exc})") from None


def _json_type(v: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number" if isinstance(v, (int, float)) else type(v).__name__)


def _field_name(key: str, parent: str | None) -> str:
    return f"{parent}.{key}" if parent else key


def _field(d: dict, key: str, parent: str | None, where: str, ok, expected: str):
    """``d[key]`` when present and ``ok(value)``; otherwise one located PlanError."""
    if key not in d:
        raise PlanError(f"{where}: {_field_name(key, parent)}: missing")
    v = d[key]
    if not ok(v):
        raise PlanError(f"{where}: {_field_name(key, parent)}: expected {expected}, found {v!r}")
    return v


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_INT64 = (-(2**63), 2**63)


def _int_field(d: dict, key: str, parent: str | None, where: str) -> int:
    """An integer that fits int64: invocations and sizes become numpy int64 arrays."""
    ok = lambda v: _is_number(v) and (not isinstance(v, float) or v.is_integer())  # noqa: E731
    v = _field(d, key, parent, where, ok, "an integer")
    if not _INT64[0] <= v < _INT64[1]:
        raise PlanError(f"{where}: {_field_name(key, parent)}: {v!r} is outside the 64-bit integer range")
    return int(v)


def weighted_sum(weights, values) -> float:
    """Σ weights x values, summed by numpy in one fixed order.

    Why not ``np.dot``: past about 10,000 elements BLAS splits a dot product across its threads,
    so its last bits, and with them plan.json's bytes (STEM's error bound, gcl_stem's strata
    costs), changed with ``OMP_NUM_THREADS`` and the core count.
    """
    return float(np.sum(np.multiply(weights, values, dtype=np.float64)))


def is_finite_number(v: Any) -> bool:
    """A JSON number (not a bool) that is finite; False, not OverflowError, for ints past float range."""
    try:
        return _is_number(v) and math.isfinite(v)
    except OverflowError:  # an int beyond float range (10**400)
        return False


def _float_field(d: dict, key: str, parent: str | None, where: str) -> float:
    return float(_field(d, key, parent, where, is_finite_number, "a finite number"))


def _str_field(d: dict, key: str, parent: str | None, where: str) -> str:
    v = _field(d, key, parent, where, lambda v: isinstance(v, str), "a string")
    try:  # JSON's "\ud800" escape decodes to a lone surrogate, which no output can encode
        v.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlanError(f"{where}: {_field_name(key, parent)}: not valid Unicode (a lone surrogate "
                        f"{v[exc.start]!r} at character {exc.start})") from None
    return v


def numeric_column(df, name: str, where: Any, error: type[GclError] = GclError) -> np.ndarray:
    """``df[name]`` as float64, or one located ``error`` quoting the first cell that is no number.

    Why: the column a sampler reads times or instruction counts from is a parameter
    (``--time-column``, ``time_column=``, ``inst_column=``), so it may name a text column
    (kernel_name, grid) that ``read_profile`` had no reason to check as numbers, and
    ``to_numpy(float)`` raised a bare ValueError. True/False are no numbers either.
    """
    import pandas as pd

    col = df[name]
    is_bool = pd.api.types.is_bool_dtype(col.dtype)
    if pd.api.types.is_numeric_dtype(col.dtype) and not is_bool:
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    parsed = pd.Series(np.nan, index=col.index) if is_bool else pd.to_numeric(col, errors="coerce")
    bad = (parsed.isna() & col.notna()).to_numpy(dtype=bool)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise error(f"{where}: {name}: not numeric (e.g. line {_row_line(where, r)}: {str(col.iloc[r])[:80]!r})")
    return parsed.to_numpy(dtype=np.float64, na_value=np.nan)


def _row_line(where: Any, row: int) -> int:
    """The physical line of data row ``row`` of the CSV file ``where`` names, else ``row + 2``.

    Why: pandas skips blank lines, and a quoted cell may hold a line break, so row + 2 named
    another row's line below either (``ProfileRowLines``, as ``gclsampler validate`` counts).
    ``where`` may also be a description (``workload 'x'``) of a table with no file.
    """
    try:
        path = Path(str(where))
        if path.is_file():
            from gclsampler.profile import ProfileRowLines

            return ProfileRowLines(path)(row)
    except (OSError, ValueError):
        pass
    return row + 2


def finite_column(df, name: str, where: Any, error: type[GclError], needs: str) -> np.ndarray:
    """``numeric_column``, with the first empty (or infinite) cell refused at its line.

    Why: a time or instruction column a sampler is pointed at may be one ``read_profile``
    lets be empty (``cycles`` of an Nsight Systems or torch.profiler import), and the
    statistics downstream could only name an array index. ``needs`` says who needs it.
    """
    values = numeric_column(df, name, where, error)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        r = int(bad[0])
        cell = "empty" if np.isnan(values[r]) else repr(float(values[r]))
        raise error(f"{where}:{_row_line(where, r)}: {name}: {cell}; {needs} ({bad.size} of {values.size} rows "
                    "have none)")
    return values


def profile_gaps(profile, columns, what: str) -> str | None:
    """Why ``profile`` cannot feed a method that reads ``columns``: the ones absent, or the
    first one with empty cells (and how many); None when every row has every column.

    ``what`` names the columns for a reader ("the 12 PKA metrics of Nsight Compute").
    Text that is no number is not a gap: ``numeric_column`` refuses it as bad input.
    """
    cols = list(columns)
    absent = [c for c in cols if c not in profile.columns]
    if absent:
        shown = ", ".join(absent[:3]) + (f" and {len(absent) - 3} more" if len(absent) > 3 else "")
        return (f"profile.csv has none of {what}" if len(absent) == len(cols) and len(cols) > 1
                else f"profile.csv has no {shown} column ({what})")
    for c in cols:
        empty = int(profile[c].isna().sum())
        if empty:
            first = int(np.flatnonzero(profile[c].isna().to_numpy())[0])
            return (f"profile.csv: {c} is empty in {empty} of {len(profile)} rows "
                    f"(first: invocation {first}; {what})")
    return None


def plan_from_labels(
    workload: str,
    method: str,
    labels: np.ndarray,
    representatives: np.ndarray,
    kernel_names: np.ndarray,
    config: dict[str, Any] | None = None,
    synthetic: bool = False,
) -> SamplingPlan:
    """One representative per cluster, weighted by the cluster's size (PKA, Sieve, GCL).

    ``labels[i]`` is invocation i's cluster (0..K-1); ``representatives[c]`` the chosen
    invocation of cluster c, which must be a member of c.
    """
    labels = np.asarray(labels, dtype=np.int64)
    reps = np.asarray(representatives, dtype=np.int64)
    sizes = np.bincount(labels, minlength=reps.size)
    if reps.size != sizes.size:
        raise ValueError("one representative per cluster label is required")
    if np.any(labels[reps] != np.arange(reps.size)):
        raise ValueError("a representative lies outside its cluster")
    samples = [Sample(int(r), str(kernel_names[r]), c, float(sizes[c])) for c, r in enumerate(reps) if sizes[c] > 0]
    clusters = [ClusterInfo(c, int(sizes[c])) for c in range(reps.size) if sizes[c] > 0]
    return SamplingPlan(workload, method, int(labels.size), samples, clusters, dict(config or {}), synthetic)


class Sampler:
    """Base of every sampling method (``Sampler(params..., random_state).fit(workload)``).

    Like a scikit-learn estimator: ``__init__`` only stores parameters; ``fit``
    validates them, learns attributes ending in ``_`` (``labels_``, ``plan_``...)
    and returns the ``SamplingPlan``. ``name`` is the method's id in plans and reports.
    """

    name: str = "sampler"
    stochastic: bool = False
    """True when different random_state values give different plans (evaluated over seeds)."""

    def fit(self, workload) -> SamplingPlan:  # pragma: no cover - interface
        raise NotImplementedError

    def missing_inputs(self, workload) -> str | None:
        """Why this method cannot run on ``workload``'s data (a profile column or the traces it
        reads are absent or empty), else None.

        Why: real workloads differ in what was measured (an LLM timed with torch.profiler has
        no Nsight Compute metrics, so no PKA metrics and no instruction counts). The
        evaluation reports such a method as n/a on that workload with this reason, instead of
        stopping the whole suite or leaving the method out unsaid. A bad parameter is not a
        missing input: ``fit`` still raises for it.
        """
        return None

    def get_params(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.endswith("_") and not k.startswith("_")}
