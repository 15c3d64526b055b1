"""Baseline kernel-sampling methods that GCL-Sampler is compared against.

Each is a ``gclsampler.plan.Sampler``: ``Cls(params..., random_state).fit(workload)``
returns a ``SamplingPlan`` built from the workload's ``profile.csv`` alone (no traces).
The methods are re-implemented from their papers, not from released code:

* ``PkaSampler``   Principal Kernel Selection (Baddouh et al., MICRO'21, Sec. 3.1): the
  12 Table-2 metrics, standardised, PCA, k-means for k = 1..20, the smallest k whose
  projected cycle error is under the target, first-chronological representative.
* ``SieveSampler`` Sieve (Naderan-Tahan et al., ISPASS'23, as summarised in the STEM+ROOT
  talk and the GCL-Sampler paper): strata by exact kernel name, tiers by the CoV of
  instruction counts, tier 3 split at the minima of a kernel density estimate,
  representative = first invocation with the dominant CTA count.

  Both take ``representative="work_mean"`` (opt-in, not their papers' rule): gcl's member
  nearest the cluster's mean work, here its instruction count from the profile.
* ``RandomSampler`` uniform random sampling (the STEM+ROOT paper's "Random" row).
* ``AllegroSampler`` Allegro (Chung et al., Algorithm 1): name+grid+block groups,
  CLT sample size m_min, recursive 1-D 2-means while m_min > m_Th, random draws.

STEM+ROOT lives in ``gclsampler.stem``; the GCL methods in ``gclsampler.samplers``.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable

import numpy as np

from gclsampler._kinds import is_count, is_int, is_real
from gclsampler.errors import GclError
from gclsampler.plan import (ClusterInfo, Sample, Sampler, SamplingPlan, finite_column, plan_from_labels,
                             profile_gaps)
from gclsampler.profile import PKA_METRICS  # PKA paper Table 2
from gclsampler.stem import time_scale, time_scales

__all__ = [
    "BaselineError",
    "PkaSampler",
    "SieveSampler",
    "RandomSampler",
    "AllegroSampler",
    "BASELINES",
    "silverman_bandwidth",
    "kde_split",
    "sieve_tiers",
    "allegro_m_min",
    "allegro_partition",
]


class BaselineError(GclError):
    """A baseline cannot run on this profile or with these parameters (names the column/key)."""


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _where(workload) -> str:
    root = getattr(workload, "root", None)
    return f"{root}/profile.csv" if root is not None else f"workload {workload.name!r}"


def _column(workload, name: str, method: str) -> np.ndarray:
    df = workload.profile
    if name not in df.columns:
        raise BaselineError(f"{_where(workload)}: {name}: column required by {method} is missing")
    return finite_column(df, name, _where(workload), BaselineError, f"{method} needs a finite value in every row")


def _dim3_product(column) -> np.ndarray:
    """CTA (or thread) count x*y*z from a ``"(x,y,z)"`` column."""
    parts = column.astype(str).str.strip("()[] ").str.split(",", expand=True)
    return parts.astype(np.int64).to_numpy().prod(axis=1)


def _named(method: str, key: Callable[[str], str] | None) -> Callable[[str], str]:
    """How ``check_params`` names a parameter: as the caller's user typed it (``key``, e.g.
    ``"--set {}".format`` from ``gclsampler sample``), else ``method: name``."""
    return key or (lambda name: f"{method}: {name}")


def _check_positive(value: float, shown: str) -> None:
    """A finite number > 0 by ``_kinds.is_real``: numpy's floats too (the early check,
    ``validate.check_sampler_params``, takes np.float32(0.05), so fit must), not ``True``."""
    if not (is_real(value) and math.isfinite(value) and value > 0):
        raise BaselineError(f"{shown}: must be a positive number, found {value!r}")


@contextlib.contextmanager
def _sklearn_params(method: str):
    """A parameter scikit-learn refuses (InvalidParameterError, with its own traceback) as one
    line naming the method; it names the parameter itself."""
    from sklearn.utils._param_validation import InvalidParameterError

    try:
        yield
    except InvalidParameterError as exc:
        raise BaselineError(f"{method}: {str(exc).splitlines()[0]}") from None


def _check_count(value, shown: str) -> None:
    """An integer >= 1, by the rule STEM's counts follow (``_kinds.is_count``)."""
    if not is_count(value):
        raise BaselineError(f"{shown}: must be an integer >= 1, found {value!r}")


def _check_rng_seed(value, shown: str) -> None:
    """A seed ``numpy.random.default_rng`` takes (an integer >= 0), else one line naming the key:
    -1 was numpy's bare "expected non-negative integer". Not ``check_seed``'s [0, 2**32): the
    suite's stochastic seeds count up from ``seed``, which may itself be 2**32 - 1."""
    if not (is_int(value) and value >= 0):
        raise BaselineError(f"{shown}: must be an integer >= 0, found {value!r}")


def _check_choice(value, choices: tuple[str, ...], shown: str) -> None:
    if not (isinstance(value, str) and value in choices):
        raise BaselineError(f"{shown}: expected one of {', '.join(choices)}, found {value!r}")


def _first_per_label(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """First (lowest-index) member of each label 0..n_labels-1."""
    first = np.full(n_labels, -1, dtype=np.int64)
    present, idx = np.unique(labels, return_index=True)
    first[present] = idx
    return first


def _work_mean_reps(labels: np.ndarray, inst: np.ndarray, x: np.ndarray | None, column: str,
                    method: str) -> np.ndarray:
    """Per cluster, the member whose instruction count (``column``) is nearest the members'
    mean count: gcl's ``work_mean`` rule (``gclsampler.cluster.representatives``), so ties go
    as ``nearest_mean`` resolves them, to the medoid of ``x`` (the method's own feature
    space) when it is one of the nearest, else to the middle launch of them."""
    from gclsampler.cluster import nearest_mean, representatives

    if np.any(inst < 0):
        i = int(np.flatnonzero(inst < 0)[0])
        raise BaselineError(f"{method}: representative: work_mean needs instruction counts >= 0; "
                            f"{column} is {inst[i]!r} at invocation {i}")
    # The counts themselves, not gcl's log2 work column: a log2/exp2 round trip (what
    # nearest_mean_work takes) is inexact for most integers (exp2(log2(3)) != 3), so two counts
    # equally near the mean were a tie only when rounding allowed, and a cluster of counts 0
    # (log2 = -inf) made its work NaN and picked a member of another cluster. Each cluster is
    # measured in a power of two of its own largest count (exact; 1 below 2^64) so sums cannot
    # overflow.
    k = int(labels.max()) + 1
    top = np.zeros(k)
    np.maximum.at(top, labels, inst)
    work = inst / time_scales(top)[labels]
    return nearest_mean(labels, work, representatives(labels, x, "medoid", 0))


def _relabel(keys: np.ndarray) -> np.ndarray:
    """Dense labels 0..K-1 numbered by first appearance (deterministic cluster ids)."""
    _, first_idx, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(first_idx.size, dtype=np.int64)
    rank[np.argsort(first_idx, kind="stable")] = np.arange(first_idx.size)
    return rank[inverse.ravel()]


def _plan_from_draws(workload, method: str, labels: np.ndarray, draws: list[np.ndarray],
                     config: dict[str, Any], error_bounds: list[float | None] | None = None) -> SamplingPlan:
    """Plan where cluster c's draws (invocation ids, distinct) share the cluster's size equally."""
    names = workload.profile["kernel_name"].to_numpy()
    sizes = np.bincount(labels, minlength=len(draws))
    samples: list[Sample] = []
    clusters: list[ClusterInfo] = []
    for c, inv in enumerate(draws):
        if sizes[c] == 0:
            continue
        w = float(sizes[c]) / inv.size
        samples.extend(Sample(int(i), str(names[i]), c, w) for i in np.sort(inv))
        bound = None if error_bounds is None else error_bounds[c]
        clusters.append(ClusterInfo(c, int(sizes[c]), bound))
    return SamplingPlan(workload.name, method, int(labels.size), samples, clusters, config,
                        bool(getattr(workload, "synthetic", False))).validate(f"{method} plan")


# ---------------------------------------------------------------------------------------
# PKA
# ---------------------------------------------------------------------------------------
class PkaSampler(Sampler):
    """Principal Kernel Selection (PKA paper Sec. 3.1).

    PCA keeps the components explaining ``pca_variance`` of the standardised metrics'
    variance (the paper does not state a count). For each k in ``k_min..k_max`` k-means
    groups the projected invocations; the first-chronological member of each group,
    scaled by the group size, projects the total cycles. The *smallest* k whose
    projection is within ``target_error`` of the profiled total is chosen, as the paper
    defines it. If no k reaches the target, the k with the smallest projected error is
    used and ``config["target_met"]`` is false.

    ``representative``: ``"first"`` (default, the paper's first-chronological member) or
    ``"work_mean"`` (opt-in, gcl's rule: the member whose ``pka_instructions`` is nearest the
    group's mean, ties to the medoid of the PCA projection when it is one of the nearest,
    else the middle launch of them). The rule picks the members of every k tried, so the
    projection that chooses k is the plan's own. Why offer it: in the synthetic timing model a
    kernel's first launch runs cold, so a first-chronological member confounds the method's
    grouping with its representative when pka is compared with gcl (docs/evaluation.md).
    ``config["representative"]`` is written only for ``work_mean``: a default plan has the
    bytes it had before the option existed.

    Learned: ``k_``, ``labels_``, ``errors_`` (k -> projected error), ``n_components_``.
    """

    name = "pka"
    stochastic = False
    REPRESENTATIVES = ("first", "work_mean")
    INST_COLUMN = "pka_instructions"
    """The PKA metric ``representative="work_mean"`` reads as the member's work."""

    def __init__(self, target_error: float = 0.05, k_min: int = 1, k_max: int = 20,
                 pca_variance: float = 0.95, n_init: int = 10, representative: str = "first",
                 random_state: int = 0):
        self.target_error = target_error
        self.k_min = k_min
        self.k_max = k_max
        self.pca_variance = pca_variance
        self.n_init = n_init
        self.representative = representative
        self.random_state = random_state

    def missing_inputs(self, workload) -> str | None:
        return (profile_gaps(workload.profile, PKA_METRICS, "the 12 PKA metrics of Nsight Compute")
                or profile_gaps(workload.profile, ["cycles"], "PKA projects the total cycles"))

    def check_params(self, key: Callable[[str], str] | None = None) -> None:
        """The checks that need no data, so a CLI or config can run them before reading any
        (``key``: how to name a parameter, ``_named``)."""
        named = _named("pka", key)
        _check_choice(self.representative, self.REPRESENTATIVES, named("representative"))
        _check_positive(self.target_error, named("target_error"))
        for name in ("k_min", "k_max", "n_init"):
            _check_count(getattr(self, name), named(name))
        if not (1 <= int(self.k_min) <= int(self.k_max)):
            raise BaselineError(f"{named('k_min/k_max')}: need 1 <= k_min <= k_max, found {self.k_min}, {self.k_max}")
        if not (is_real(self.pca_variance) and 0 < self.pca_variance <= 1):  # "0.9" raised TypeError
            raise BaselineError(f"{named('pca_variance')}: must be in (0, 1], found {self.pca_variance!r}")

    def fit(self, workload) -> SamplingPlan:
        from sklearn.cluster import KMeans
        from sklearn.decomposition import PCA

        self.check_params()
        x = np.column_stack([_column(workload, m, "pka") for m in PKA_METRICS])
        cycles = _column(workload, "cycles", "pka")
        n = x.shape[0]
        std = x.std(axis=0)
        # constant by its values, not by std > 0: the float mean of n equal non-integers is
        # not always exactly their value, so their std was a tiny non-zero (1e-11 on 20 equal
        # launches) and a profile of identical launches met PCA with zero total variance
        # (sklearn's "invalid value encountered in divide")
        keep = np.ptp(x, axis=0) > 0
        z = (x[:, keep] - x[:, keep].mean(axis=0)) / std[keep] if keep.any() else np.zeros((n, 1))
        if z.shape[1] > 1 and n > 1:
            pca = PCA(n_components=float(self.pca_variance) if self.pca_variance < 1 else None,
                      svd_solver="full", random_state=0)
            with _sklearn_params("pka"):
                proj = pca.fit_transform(z)
        else:
            proj = z
        self.n_components_ = int(proj.shape[1])
        inst = x[:, PKA_METRICS.index(self.INST_COLUMN)]

        def pick(labels: np.ndarray, kk: int) -> np.ndarray:
            if self.representative == "work_mean":
                return _work_mean_reps(labels, inst, proj, self.INST_COLUMN, "pka")
            return _first_per_label(labels, kk)

        n_distinct = int(np.unique(np.round(proj, 12), axis=0).shape[0])
        total = float(cycles.sum())
        self.errors_: dict[int, float] = {}
        all_labels: dict[int, np.ndarray] = {}
        chosen = None
        # k_min beyond the distinct points (a 2-invocation workload, k_min=3) starts at their
        # number, the most clusters k-means can make, rather than trying no K at all
        for k in range(min(int(self.k_min), n_distinct), int(self.k_max) + 1):
            if k > n_distinct:
                break
            if k == 1:
                labels = np.zeros(n, dtype=np.int64)
            else:
                km = KMeans(n_clusters=k, n_init=int(self.n_init), random_state=self.random_state)
                with _sklearn_params("pka"):
                    labels = _relabel(km.fit_predict(proj))
            kk = int(labels.max()) + 1
            reps = pick(labels, kk)
            projected = float(np.dot(np.bincount(labels, minlength=kk), cycles[reps]))
            err = abs(projected - total) / total if total > 0 else 0.0
            self.errors_[k] = err
            all_labels[k] = labels
            if err < self.target_error:
                chosen = k
                break
        target_met = chosen is not None
        if chosen is None:
            chosen = min(self.errors_, key=lambda k: (self.errors_[k], k))
        self.k_ = chosen
        self.labels_ = all_labels[chosen]
        reps = pick(self.labels_, int(self.labels_.max()) + 1)
        params = self.get_params()
        if params["representative"] == "first":  # the paper's rule: a default plan keeps its bytes
            del params["representative"]
        config = {**params, "k": int(chosen), "target_met": target_met,
                  "n_components": self.n_components_,
                  "projected_error": {str(k): float(e) for k, e in self.errors_.items()}}
        self.plan_ = plan_from_labels(workload.name, self.name, self.labels_, reps,
                                      workload.profile["kernel_name"].to_numpy(), config,
                                      bool(getattr(workload, "synthetic", False))).validate("pka plan")
        return self.plan_


# ---------------------------------------------------------------------------------------
# Sieve
# ---------------------------------------------------------------------------------------
def silverman_bandwidth(x: np.ndarray) -> float:
    """Silverman's rule of thumb h = 0.9 min(sd, IQR/1.34) n^(-1/5).

    The IQR term keeps h small when a stratum is multimodal (sd inflated by the gaps
    between modes), which is exactly the case Sieve's tier 3 must split; a fixed h = 1
    would be meaningless for instruction counts in the millions.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n < 2:
        return 0.0
    s = time_scale(np.abs(x))  # counts near 1e-160 square to 0 in sd (h 0), near 1e160 to inf
    x = x / s
    sd = float(x.std(ddof=1))
    q75, q25 = np.percentile(x, [75, 25])
    iqr = float(q75 - q25) / 1.34
    spread = min(sd, iqr) if iqr > 0 else sd
    return 0.9 * spread * n ** (-0.2) * s


_KDE_STEP = 0.25
"""Grid spacing, in bandwidths, at which ``kde_split`` evaluates the density (h/4)."""
_KDE_REACH = 8.0
"""Bandwidths beyond which a point's kernel is dropped (e^-32 of its peak); gaps wider than
this between sorted distinct values are cut directly."""
_KDE_CHUNK = 4096
_KDE_H_RANGE = (2.0**-960, 2.0**960)
"""Bandwidths ``kde_split`` evaluates as they are; beyond, its h/4 grid step rounds (to 0 at
h = 5e-324) or min - 3h overflows, so ``_rescaled_split`` finds the split at h near 1."""


def _density_minima(dens: np.ndarray, same: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of every strict local minimum of ``dens``: it lies after point a and before
    point b + 1, its plateau of equal values being points a + 1 .. b. ``same[i]`` false says
    points i and i + 1 are not neighbours (they belong to different grids)."""
    sign = np.sign(np.diff(dens))
    if same is not None:
        sign[~same] = 0
    nz = np.flatnonzero(sign != 0)
    a, b = nz[:-1], nz[1:]
    keep = (sign[a] < 0) & (sign[b] > 0)
    if same is not None:  # no neighbourless step between a and b
        broken = np.cumsum(~same)
        keep &= broken[a] == broken[b]
    return a[keep], b[keep]


def _grid_density(values: np.ndarray, counts: np.ndarray, g: np.ndarray, h: float) -> np.ndarray:
    dens = np.zeros(g.size)
    for lo in range(0, values.size, _KDE_CHUNK):  # bounded memory: grid x chunk
        v, c = values[lo:lo + _KDE_CHUNK], counts[lo:lo + _KDE_CHUNK]
        dens += (c[None, :] * np.exp(-0.5 * ((g[:, None] - v[None, :]) / h) ** 2)).sum(axis=1)
    return dens


def _fine_cuts(values: np.ndarray, counts: np.ndarray, h: float) -> np.ndarray:
    """Density minima of sorted distinct ``values`` (``counts`` of each) at any range / h.

    A gap wider than ``_KDE_REACH`` h between neighbours is a cut at its middle. Each run of
    values between such gaps gets its own grid, spacing h/4, from its first value to its
    last; every value adds its kernel to the grid points within ``_KDE_REACH`` h of it, and
    the strict minima of each run's density are its cuts. All runs share one array, so the
    cost is O(66) per distinct value plus the grid (at most 32 points per value).
    """
    dx = _KDE_STEP * h
    gap = np.diff(values) > _KDE_REACH * h
    run = np.r_[0, np.cumsum(gap)]  # run id per value
    first = np.flatnonzero(np.r_[True, gap])  # first value of each run
    last = np.r_[first[1:] - 1, values.size - 1]
    origin = values[first]
    n_grid = np.floor((values[last] - origin) / dx).astype(np.int64) + 2  # past the last value
    base = np.r_[0, np.cumsum(n_grid)[:-1]]
    total = int(n_grid.sum())
    point_run = np.repeat(np.arange(first.size), n_grid)
    local = np.arange(total) - base[point_run]
    pos = origin[point_run] + local * dx
    taps = int(np.ceil(2 * _KDE_REACH / _KDE_STEP)) + 2
    dens = np.zeros(total)
    for lo in range(0, values.size, _KDE_CHUNK):  # bounded memory: chunk x taps
        v, c, r = values[lo:lo + _KDE_CHUNK], counts[lo:lo + _KDE_CHUNK], run[lo:lo + _KDE_CHUNK]
        k = np.ceil((v - _KDE_REACH * h - origin[r]) / dx).astype(np.int64)[:, None] + np.arange(taps)[None, :]
        z = (origin[r][:, None] + k * dx - v[:, None]) / h
        ok = (k >= 0) & (k < n_grid[r][:, None]) & (np.abs(z) <= _KDE_REACH)
        w = np.where(ok, c[:, None] * np.exp(-0.5 * np.where(ok, z, 0.0) ** 2), 0.0)
        dens += np.bincount(np.where(ok, base[r][:, None] + k, 0).ravel(), weights=w.ravel(), minlength=total)
    a, b = _density_minima(dens, point_run[:-1] == point_run[1:])
    inner = 0.5 * (pos[a + 1] + pos[b])
    between = 0.5 * (values[first[1:] - 1] + values[first[1:]])
    return np.sort(np.r_[inner, between])


def kde_split(x: np.ndarray, bandwidth: float | None = None, grid: int = 512) -> np.ndarray:
    """Sub-stratum id (0..S-1, ascending in x) from the minima of a Gaussian KDE of x.

    Every strict local minimum of the density between two modes becomes a cut point, at any
    ratio of range to bandwidth h. Where ``grid`` points over [min - 3h, max + 3h] are at
    most h/4 apart, the density is evaluated there (the original grid). Where they are not,
    such a grid can step over whole modes (h = 26 over a range of 7e6: counts 1000 and 1100
    fell between two points and were one stratum), so instead:

    * a gap wider than 8h between sorted distinct values is a cut: the density there is a
      sum of tails below e^-32 of a kernel's peak and rises to both sides, so it has a
      minimum in the gap, and every point of the gap gives the same sub-strata;
    * each run of values between such gaps is evaluated on its own grid of spacing h/4,
      every value adding its kernel to the grid points within 8h of it (66 per distinct value, so the cost
      grows linearly with the input, whatever its range).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0:
        return np.zeros(x.size, dtype=np.int64)
    h = silverman_bandwidth(x) if bandwidth is None else float(bandwidth)
    if not 0 < h < math.inf:  # an infinite h smooths every mode away
        return np.zeros(x.size, dtype=np.int64)
    if not _KDE_H_RANGE[0] <= h <= _KDE_H_RANGE[1]:
        return _rescaled_split(x, h, grid)
    values, counts = np.unique(x, return_counts=True)
    counts = counts.astype(np.float64)
    lo_edge, hi_edge = values[0] - 3 * h, values[-1] + 3 * h
    if (hi_edge - lo_edge) / (grid - 1) <= _KDE_STEP * h:  # the original grid resolves h/4
        g = np.linspace(lo_edge, hi_edge, grid)
        a, b = _density_minima(_grid_density(values, counts, g, h))
        cuts = 0.5 * (g[a + 1] + g[b])
    else:
        cuts = _fine_cuts(values, counts, h)
    sub = np.searchsorted(cuts, x, side="right")
    return np.unique(sub, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _rescaled_split(x: np.ndarray, h: float, grid: int) -> np.ndarray:
    """``kde_split`` at an h beyond ``_KDE_H_RANGE``: x and h divided by one power of two near h.

    Why: the division is exact and moves every density minimum with the data, so the split is
    the same, where at the h itself h/4 was 0 (h = 5e-324, a subnormal Silverman h of counts
    0, 5e-324, 1e-323: numpy's bare "repeats may not contain negative values") or min - 3h was
    -inf (h near 1e308). Scaling a tiny h up, a count more than 8h from both neighbours could
    overflow; it is a sub-stratum of its own (a gap of 8h holds a density minimum, as in
    ``_fine_cuts``), so only counts with a neighbour that near are scaled, and those lie below
    2^-900 (two distinct float64 within 8h < 2^-957 of each other do).
    """
    s = float(np.ldexp(1.0, np.frexp(h)[1] - 1))  # 2^(e-1) <= h < 2^e, finite at either end
    if h > 1:
        return kde_split(x / s, h / s, grid)
    values, inverse = np.unique(x, return_inverse=True)
    inverse = inverse.reshape(-1)
    gap = np.diff(values) > _KDE_REACH * h
    near = ~(np.r_[True, gap] & np.r_[gap, True])[inverse]
    sub = np.zeros(x.size, dtype=np.int64)
    sub[near] = kde_split(x[near] / s, h / s, grid)
    run = np.r_[0, np.cumsum(gap)][inverse]  # run and sub both ascend in x: a sub-stratum per pair
    return np.unique(run * (int(sub.max()) + 1) + sub, return_inverse=True)[1].reshape(-1).astype(np.int64)


def sieve_tiers(inst: np.ndarray, names: np.ndarray, cov_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(group id per invocation, tier per group) with tiers 1/2/3 by instruction-count CoV.

    Tier 1: no variation (CoV == 0, includes single invocations); tier 2: CoV <=
    ``cov_threshold``; tier 3: larger variation.
    """
    group = _relabel(np.asarray(names).astype(str))
    n_groups = int(group.max()) + 1 if group.size else 0
    cnt = np.bincount(group, minlength=n_groups).astype(np.float64)
    # CoV is a ratio: each name's counts in a power of two of its own largest (exact), so counts
    # near 1e-160 do not square to 0 (tier 1) nor counts near 1e160 sum to inf (tier 3)
    top = np.zeros(n_groups)
    np.maximum.at(top, group, np.abs(inst))
    work = inst / time_scales(top)[group]
    s1 = np.bincount(group, weights=work, minlength=n_groups)
    mean = s1 / cnt
    var = np.bincount(group, weights=(work - mean[group]) ** 2, minlength=n_groups) / cnt
    with np.errstate(divide="ignore", invalid="ignore"):
        cov = np.where(mean != 0, np.sqrt(var) / np.abs(mean), 0.0)
    tier = np.where(cov == 0, 1, np.where(cov <= cov_threshold, 2, 3)).astype(np.int64)
    # exact zero for constant groups regardless of float rounding
    const = np.array([np.ptp(inst[group == g]) == 0 for g in range(n_groups)], dtype=bool)
    tier[const] = 1
    return group, tier


class SieveSampler(Sampler):
    """Sieve: name strata, instruction-count tiers, KDE split of tier 3.

    ``cov_threshold`` separates "little" (tier 2) from "large" (tier 3) variation; the
    slides do not give the value, 0.1 is our assumption (configurable). ``bandwidth``
    is ``"silverman"`` (default, robust rule above), ``"scott"`` (1.06 sd n^-1/5) or a
    number in instruction units. ``representative``: ``"dominant_cta"`` (first invocation
    whose CTA count is the stratum's most frequent one; ties to the larger count, our
    reading), ``"max_cta"`` (first with the largest CTA count, as the GCL paper words it),
    ``"first"`` or, opt-in, ``"work_mean"`` (gcl's rule: the member whose ``inst_column``
    count is nearest the stratum's mean count, ties to the middle launch of them; not
    Sieve's rule, it takes the confound of cold first launches out of a comparison with gcl,
    docs/evaluation.md). ``inst_column`` defaults to ``inst_executed`` (warp-level SASS count).

    Learned: ``labels_``, ``tiers_`` (tier per name group), ``group_of_``.
    """

    name = "sieve"
    stochastic = False
    REPRESENTATIVES = ("dominant_cta", "max_cta", "first", "work_mean")
    BANDWIDTH_RULES = ("silverman", "scott")

    def __init__(self, cov_threshold: float = 0.1, bandwidth: str | float = "silverman",
                 representative: str = "dominant_cta", kde: bool = True,
                 inst_column: str = "inst_executed", random_state: int = 0):
        self.cov_threshold = cov_threshold
        self.bandwidth = bandwidth
        self.representative = representative
        self.kde = kde
        self.inst_column = inst_column
        self.random_state = random_state

    def _bandwidth(self, x: np.ndarray) -> float:
        bw = self.bandwidth
        if isinstance(bw, str):
            if bw == "silverman":
                return silverman_bandwidth(x)
            if bw == "scott":
                s = time_scale(np.abs(x))  # as in silverman_bandwidth: no sd of 0 or inf
                return 1.06 * float(np.std(x / s, ddof=1)) * x.size ** (-0.2) * s if x.size > 1 else 0.0
        return float(bw)

    def missing_inputs(self, workload) -> str | None:
        return profile_gaps(workload.profile, [self.inst_column], "Sieve's instruction counts, from Nsight Compute")

    def check_params(self, key: Callable[[str], str] | None = None) -> None:
        """The checks that need no data, so a CLI or config can run them before reading any
        (``key``: how to name a parameter, ``_named``)."""
        named = _named("sieve", key)
        _check_choice(self.representative, self.REPRESENTATIVES, named("representative"))
        _check_positive(self.cov_threshold, named("cov_threshold"))
        # checked before any work: a misspelt rule used to pass until a stratum reached tier 3
        bw = self.bandwidth
        if not (bw in self.BANDWIDTH_RULES if isinstance(bw, str) else
                is_real(bw) and math.isfinite(bw) and bw > 0):
            raise BaselineError(f"{named('bandwidth')}: expected {' or '.join(map(repr, self.BANDWIDTH_RULES))} or a "
                                f"positive number, found {bw!r}")
        if not isinstance(self.kde, (bool, np.bool_)):  # kde="false" is truthy: it split tier 3 all the same
            raise BaselineError(f"{named('kde')}: must be true or false, found {self.kde!r}")

    def fit(self, workload) -> SamplingPlan:
        self.check_params()
        inst = _column(workload, self.inst_column, "sieve")
        names = workload.profile["kernel_name"].to_numpy().astype(str)
        ctas = _dim3_product(workload.profile["grid"])
        group, tiers = sieve_tiers(inst, names, self.cov_threshold)
        sub = np.zeros(inst.size, dtype=np.int64)
        if self.kde:
            for g in np.flatnonzero(tiers == 3):
                idx = np.flatnonzero(group == g)
                sub[idx] = kde_split(inst[idx], self._bandwidth(inst[idx]))
        keys = group.astype(np.int64) * (int(sub.max()) + 1) + sub
        labels = _relabel(keys)
        k = int(labels.max()) + 1
        if self.representative == "work_mean":
            reps = _work_mean_reps(labels, inst, inst[:, None], self.inst_column, "sieve")
        else:
            reps = np.empty(k, dtype=np.int64)
            for c in range(k):
                idx = np.flatnonzero(labels == c)
                reps[c] = self._pick(idx, ctas[idx])
        self.labels_, self.tiers_, self.group_of_ = labels, tiers, group
        config = {**self.get_params(), "n_strata": k,
                  "tier_counts": {str(t): int((tiers == t).sum()) for t in (1, 2, 3)}}
        self.plan_ = plan_from_labels(workload.name, self.name, labels, reps, names, config,
                                      bool(getattr(workload, "synthetic", False))).validate("sieve plan")
        return self.plan_

    def _pick(self, idx: np.ndarray, cta: np.ndarray) -> int:
        if self.representative == "first":
            return int(idx[0])
        if self.representative == "max_cta":
            return int(idx[np.flatnonzero(cta == cta.max())[0]])
        values, counts = np.unique(cta, return_counts=True)
        dominant = values[counts == counts.max()].max()
        return int(idx[np.flatnonzero(cta == dominant)[0]])


# ---------------------------------------------------------------------------------------
# Random
# ---------------------------------------------------------------------------------------
class RandomSampler(Sampler):
    """Uniform random sampling: m = max(1, round(fraction N)) invocations without replacement.

    Each sampled invocation carries weight N/m (the Horvitz-Thompson weight of a simple
    random sample), so the weights sum to N and the total-time estimate is unbiased.
    """

    name = "random"
    stochastic = True

    def __init__(self, fraction: float = 0.1, random_state: int = 0):
        self.fraction = fraction
        self.random_state = random_state

    def check_params(self, key: Callable[[str], str] | None = None) -> None:
        """The checks that need no data, so a CLI or config can run them before reading any
        (``key``: how to name a parameter, ``_named``)."""
        named = _named("random", key)
        if not (is_real(self.fraction) and 0 < self.fraction <= 1):  # numpy's numbers too, not True
            raise BaselineError(f"{named('fraction')}: must be in (0, 1], found {self.fraction!r}")
        _check_rng_seed(self.random_state, named("random_state"))

    def fit(self, workload) -> SamplingPlan:
        self.check_params()
        n = workload.n_invocations
        m = max(1, min(n, int(round(self.fraction * n))))
        rng = np.random.default_rng(self.random_state)
        draws = rng.choice(n, size=m, replace=False)
        self.labels_ = np.zeros(n, dtype=np.int64)
        self.plan_ = _plan_from_draws(workload, self.name, self.labels_, [draws],
                                      {**self.get_params(), "n_samples": int(m)})
        return self.plan_


# ---------------------------------------------------------------------------------------
# Allegro
# ---------------------------------------------------------------------------------------
_M_MIN_CAP = 2.0**62
"""m_min beyond any leaf size (and within int64): where a tiny epsilon would make it overflow."""


def allegro_m_min(times: np.ndarray, epsilon: float, z: float = 1.96, floor: int = 30) -> int:
    """m_min = max(ceil((z/eps * sigma/mu)^2), floor) (Allegro Theorem 2), capped only at 2^62.

    sigma/mu is scale-free: times far from 1 are divided by a power of two first
    (``time_scale``), so times near 1e150 do not overflow the variance.
    """
    t = np.asarray(times, dtype=np.float64)
    t = t / time_scale(t)
    mu = float(t.mean())
    sigma = float(t.std(ddof=1)) if t.size > 1 else 0.0
    cov = sigma / mu if mu > 0 else 0.0
    q = z / epsilon * cov
    # round before ceil so (z/eps*cov)^2 == 30.000000000004 does not become 31; the floor is
    # capped too: floor=1e20 (a census of every leaf) overflowed the int64 m_min array
    return min(max(int(math.ceil(round(min(q * q, _M_MIN_CAP), 9))), int(floor)), int(_M_MIN_CAP))


def _best_2means_1d(t: np.ndarray) -> np.ndarray:
    """Optimal 1-D 2-means: the split of the sorted values with the least within-SSE."""
    order = np.argsort(t, kind="stable")
    s = t[order]
    n = s.size
    c1 = np.cumsum(s)
    c2 = np.cumsum(s * s)
    k = np.arange(1, n)  # left part = s[:k]
    left_sse = c2[k - 1] - c1[k - 1] ** 2 / k
    rt1 = c1[-1] - c1[k - 1]
    rt2 = c2[-1] - c2[k - 1]
    right_sse = rt2 - rt1 ** 2 / (n - k)
    # only cut between distinct values
    valid = s[k] > s[k - 1]
    cost = np.where(valid, left_sse + right_sse, np.inf)
    cut = int(k[np.argmin(cost)])
    side = np.zeros(n, dtype=bool)
    side[order[cut:]] = True
    return side


def allegro_partition(times: np.ndarray, keys: np.ndarray, epsilon: float, z: float = 1.96,
                      floor: int = 30, m_th: int = 50, max_depth: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Allegro Algorithm 1: leaves (label per invocation, 0..L-1) and m_min per leaf.

    Groups by ``keys``; a group is split with 1-D 2-means on execution time while its
    m_min exceeds ``m_th`` (and it still has two distinct times). m_min is returned
    uncapped; callers cap it at the leaf size.

    Each partition is measured in a power of two of its own (``time_scale`` of its
    largest time) before its m_min and its 2-means. Why: with one scale for all times, a
    group far below another (~1e-200) squares to 0 in the 2-means sums and is peeled off
    one invocation at a time. Dividing by a power of two is exact, so every split and
    m_min is the one that partition gets alone, and times in any ordinary unit (scale 1)
    give the same bytes as before.
    """
    times = np.asarray(times, dtype=np.float64)
    groups = _relabel(np.asarray(keys))
    leaves: list[np.ndarray] = []
    m_mins: list[int] = []
    stack = [(np.flatnonzero(groups == g), 0) for g in range(int(groups.max()) + 1)][::-1]
    while stack:
        idx, depth = stack.pop()
        t = times[idx]
        t = t / time_scale(t)  # exact; squares are taken relative to this partition's largest time
        m = allegro_m_min(t, epsilon, z, floor)
        if m <= m_th or depth >= max_depth or np.ptp(t) == 0:
            leaves.append(idx)
            m_mins.append(m)
            continue
        side = _best_2means_1d(t)
        stack.append((idx[side], depth + 1))
        stack.append((idx[~side], depth + 1))
    labels = np.empty(times.size, dtype=np.int64)
    first = np.array([leaf.min() for leaf in leaves])
    order = np.argsort(first, kind="stable")  # leaf ids by first invocation
    for new, old in enumerate(order):
        labels[leaves[old]] = new
    return labels, np.asarray(m_mins, dtype=np.int64)[order]


class AllegroSampler(Sampler):
    """Allegro (Algorithm 1): key = (kernel name, grid, block), recursive 2-means on time.

    Each leaf draws min(m_min, leaf size) invocations uniformly without replacement,
    each weighted leaf size / draws. ``m_th`` is the paper's split threshold (50),
    ``floor`` the CLT minimum of 30 samples. ``time_column``: ``time_ns`` (profiled
    execution time, as in the paper) or ``cycles``. A partition 64 splits deep is a leaf
    whatever its m_min (``allegro_partition``'s ``max_depth``, a guard the paper does not
    have: each split peels off at least one invocation, so without it a group's depth is
    bounded only by its size); such a leaf is at worst a census.

    Learned: ``labels_`` (leaf per invocation), ``m_min_`` (uncapped, per leaf),
    ``sample_sizes_`` (capped).
    """

    name = "allegro"
    stochastic = True

    def __init__(self, epsilon: float = 0.05, z: float = 1.96, floor: int = 30, m_th: int = 50,
                 time_column: str = "time_ns", random_state: int = 0):
        self.epsilon = epsilon
        self.z = z
        self.floor = floor
        self.m_th = m_th
        self.time_column = time_column
        self.random_state = random_state

    def check_params(self, key: Callable[[str], str] | None = None) -> None:
        """The checks that need no data, so a CLI or config can run them before reading any
        (``key``: how to name a parameter, ``_named``)."""
        from gclsampler.stem import check_bound

        named = _named("allegro", key)
        check_bound(self.epsilon, self.z, named(""), BaselineError)  # STEM's ranges: the same bound
        _check_rng_seed(self.random_state, named("random_state"))
        for name in ("floor", "m_th"):  # sample counts: 30.7 was truncated to 30, True taken as 1
            _check_count(getattr(self, name), named(name))

    def fit(self, workload) -> SamplingPlan:
        self.check_params()
        times = _column(workload, self.time_column, "allegro")
        df = workload.profile
        keys = (df["kernel_name"].astype(str) + "|" + df["grid"].astype(str) + "|"
                + df["block"].astype(str)).to_numpy()
        labels, m_min = allegro_partition(times, keys, float(self.epsilon), float(self.z),
                                          int(self.floor), int(self.m_th))
        sizes = np.bincount(labels, minlength=m_min.size)
        take = np.minimum(m_min, sizes)
        rng = np.random.default_rng(self.random_state)
        draws = [rng.choice(np.flatnonzero(labels == c), size=int(take[c]), replace=False)
                 for c in range(m_min.size)]
        self.labels_, self.m_min_, self.sample_sizes_ = labels, m_min, take
        config = {**self.get_params(), "n_leaves": int(m_min.size)}
        self.plan_ = _plan_from_draws(workload, self.name, labels, draws, config,
                                      [float(self.epsilon)] * m_min.size)
        return self.plan_


BASELINES: dict[str, type[Sampler]] = {
    "pka": PkaSampler,
    "sieve": SieveSampler,
    "random": RandomSampler,
    "allegro": AllegroSampler,
}
