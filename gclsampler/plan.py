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
from gclsampler.errors import GclError

PLAN_FORMAT = "gclsampler-plan/1"


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
            if size > 0 and not math.isclose(got, size, rel_tol=1e-9, abs_tol=1e-6):
                raise PlanError(f"{where}: cluster {cid}: sample weights sum to {got}, not its size {size}")
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
        return float(np.dot(self.weights, values[self.invocations]))

    def speedup(self, time_per_invocation: np.ndarray) -> float:
        """Total time of all invocations over total time of the simulated ones (GCL eq. 6)."""
        t = np.asarray(time_per_invocation, dtype=np.float64)
        return float(t.sum() / t[self.invocations].sum())

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
        return json.dumps(self.to_dict(), indent=1, sort_keys=False, allow_nan=False) + "\n"

    def save(self, path: str | Path) -> Path:
        """Validate, then write atomically (temp file in the same directory, then rename)."""
        path = Path(path)
        self.validate(str(path))
        return write_text_atomic(path, self.to_json())

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "plan") -> "SamplingPlan":
        try:
            if d.get("format") != PLAN_FORMAT:
                raise PlanError(f"{where}: format: expected {PLAN_FORMAT!r}, found {d.get('format')!r}")
            plan = cls(
                workload=str(d["workload"]),
                method=str(d["method"]),
                n_invocations=int(d["n_invocations"]),
                samples=[Sample(int(s["invocation"]), str(s["kernel_name"]), int(s["cluster"]),
                                float(s["weight"])) for s in d["samples"]],
                clusters=[ClusterInfo(int(c["id"]), int(c["size"]),
                                      None if c.get("error_bound") is None else float(c["error_bound"]))
                          for c in d["clusters"]],
                config=dict(d.get("config") or {}),
                synthetic=bool(d.get("synthetic", False)),
            )
        except KeyError as exc:
            raise PlanError(f"{where}: missing field {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise PlanError(f"{where}: malformed field: {exc}") from None
        return plan.validate(where)

    @classmethod
    def load(cls, path: str | Path) -> "SamplingPlan":
        path = Path(path)
        try:
            d = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise PlanError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
        except OSError as exc:
            raise PlanError(f"{path}: cannot read: {exc.strerror}") from None
        return cls.from_dict(d, str(path))


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

    def get_params(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.endswith("_") and not k.startswith("_")}
