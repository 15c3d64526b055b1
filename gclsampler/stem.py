r"""STEM and ROOT: error-bounded kernel sampling from execution times alone.

Chung et al., *Swift and Trustworthy Large-Scale GPU Simulation with Fine-Grained
Error Modeling and Hierarchical Clustering* (MICRO'25), Sec. 3.1-3.5 and Appendix.

**STEM** sizes a random sample so that the estimated total time
:math:`t = \sum_i N_i \bar X_i` lies within a relative error :math:`\epsilon` of the
true total with confidence :math:`z` (CLT). For one cluster (eq. 3)

.. math:: m = \left\lceil \left(\frac{z}{\epsilon}\frac{\sigma}{\mu}\right)^2 \right\rceil .

For clusters :math:`C_0..C_{k-1}` jointly (Problem 1) it minimises the sampled time
:math:`\tau = \sum_i m_i\mu_i` subject to :math:`\sum_i b_i/m_i \le c` with
:math:`a_i=\mu_i`, :math:`b_i=N_i^2\sigma_i^2`, :math:`c=(\epsilon\sum_i N_i\mu_i/z)^2`.
The KKT solution (Appendix; the printed eq. 6 has a typo, the derivation gives)

.. math:: m_i = \frac{\sum_j \sqrt{a_j b_j}}{c}\sqrt{\frac{b_i}{a_i}}

meets the constraint with equality before rounding up (``stem_kkt``).

**What a plan really costs.** A plan simulates whole invocations: at least one per
leaf, at most the leaf's N_i, an integer number. We draw *without* replacement
inside a leaf, so a leaf's variance carries the finite-population correction,
:math:`\mathrm{Var}(N_i\bar X_i) = N_i^2 S_i^2 (1/m_i - 1/N_i)` with
:math:`S_i^2 = \sigma_i^2 N_i/(N_i-1)`, and a leaf drawn whole (m_i = N_i) is exact.
``stem_allocate`` solves Problem 1 with these bounds: the KKT stationarity
:math:`m_i = \lambda\sqrt{B_i/a_i}` (:math:`B_i = N_i^2 S_i^2`) clipped to
:math:`[\max(1, \text{min\_samples}) \wedge N_i,\ N_i]`, with :math:`\lambda` chosen
so the constraint :math:`\sum_i B_i/m_i \le c + \sum_i B_i/N_i` holds, then
rounded up (rounding up only lowers the variance).

**ROOT** (eq. 7-8) splits a group recursively in two with the exact 1-D 2-means on
execution times. The paper keeps a split when the STEM-sampled time of the two
halves, sized for the parent's own bound, is below the parent's. Judged that way a
leaf is split for a budget much tighter than the one the final allocation gives it,
and every extra leaf then pays for at least one whole invocation. Here a split is
judged with the price of variance of the plan it joins: at the Lagrange multiplier
:math:`\nu = \lambda^2` of the current allocation every leaf costs
:math:`\phi_i = \min_{m} a_i m + \nu B_i (1/m - 1/N_i)` over integer m in its bounds,
and a split is a candidate when :math:`\phi_L + \phi_R < \phi_P`. Candidates of one
level are applied only if the re-allocated integer plan is cheaper (if not, the
better half of them is tried, and so on), so the plan's sampled time falls at every
accepted level. The price test is a filter: with few draws, rounding up leaves the
variance budget slack, and a split it rejects can still make the integer plan cheaper
(times 7, 10, 12, 15, 16 at epsilon 0.5: one leaf with 2 draws costs 24 time units,
their 2-means split with 1 + 1 draws 22.8). So when no level of candidates is accepted,
the ``EXACT_TRIES`` leaves with the best gains are split one at a time and priced
exactly, and the cheapest is taken if it lowers the plan; ROOT stops when none does.

**Scope** is what the bound covers. ``global`` (this project's default: the workload's
total time) solves the allocation once over every leaf; ``group`` (the paper's
construction) solves it per group (kernel name or GCL cluster), so each group's total is
bounded too, and by Theorem 3.1 so is the workload total, at the price of more samples.

Differences from the public reference scripts, each covered by a test:

* a leaf whose times are all equal (:math:`\sigma = 0`) gets one sample and keeps
  its full weight, instead of a sample size of 0 that drops it from the estimate;
* integer draws, at least ``min_samples`` (default 1) per leaf and at most its size,
  drawn without replacement with the finite-population correction in the bound;
* everything is seeded (``random_state``) and byte-reproducible;
* times may be non-integer (the reference casts to ``int``), and of any magnitude, groups
  and leaves 10^300 apart included: every leaf is measured in a power of two of its own
  (``time_scales``, 1 unless its largest time is beyond 2^±64), so the squares in its
  spread neither overflow nor underflow, and the leaves of one allocation unit meet in the
  unit's own power of two, an exact conversion (``_in_units``). With scope group every
  group is its own unit, so a group's allocation over its leaves does not depend on how
  far the other groups' times are from its own;
* the 2-means on one dimension is exact (sorted times, prefix sums) and cannot
  return a single label silently: a cluster with one distinct time, or one whose
  only splits would leave a side smaller than ``min_group``, is not split.

Everything is vectorised per leaf or per member; nothing loops over invocations in
Python.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from gclsampler._kinds import is_count, is_int, is_real
from gclsampler.errors import GclError
from gclsampler.plan import ClusterInfo, Sample, Sampler, SamplingPlan, finite_column, weighted_sum

__all__ = [
    "SCOPES",
    "StemConfig",
    "StemError",
    "StemResult",
    "StemRootSampler",
    "scope_description",
    "stem_allocate",
    "stem_draw",
    "stem_sample_size",
    "stem_kkt",
    "stem_root",
    "split_1d_2means",
    "time_scale",
    "time_scales",
    "Z_RANGE",
    "check_bound",
]

Z_RANGE = (0.01, 40.0)
"""Accepted confidence z-scores (``check_bound``)."""

SCOPES = {"global": "the workload's total time", "group": "the total time of each group (kernel name or cluster)"}
"""What the error bound covers under each ``scope``; printed by every output."""


def scope_description(scope: str) -> str:
    """One line saying what the bound of ``scope`` covers (for CLI and bench output)."""
    return f"scope {scope}: the bound covers {SCOPES[scope]}"


class StemError(GclError):
    """Bad times, groups or STEM parameters (names the field or config key)."""


@dataclass
class StemConfig:
    """Hydra structured config of the ``stem`` group (``conf/stem/*.yaml``).

    ``scope``: ``global`` (this project's default; the paper builds ``group``, docs/stem.md)
    bounds the error of the workload's total time and solves Problem 1 once over every leaf;
    ``group`` bounds every group (kernel name or GCL cluster) separately, which by Theorem 3.1 bounds the total too
    and keeps per-kernel estimates trustworthy, with more samples.
    """

    epsilon: float = 0.05
    z: float = 1.96
    min_samples: int = 1
    root: bool = True
    min_group: int = 2
    scope: str = "global"


@dataclass
class StemResult:
    """What STEM+ROOT decided for one workload.

    ``invocations`` sampled invocation ids (ascending, distinct) and their ``weights``
    (leaf size / draws; they sum to ``len(times)``). ``leaf`` (N,) ROOT leaf of every
    invocation, leaves numbered 0..L-1 in order of their first invocation. Per leaf
    (L,): ``leaf_group`` (the group label it came from), ``leaf_sizes``,
    ``sample_sizes`` (draws without replacement; the leaf size when taken whole),
    ``leaf_mean``/``leaf_std`` (population, in the unit of ``times``),
    ``leaf_error_bound`` (predicted relative error of that leaf's own total at
    confidence z, with the finite-population correction; 0 when taken whole).
    ``error_bound`` is the predicted relative error of the workload total,
    z * sqrt(sum_i N_i^2 S_i^2 (1/m_i - 1/N_i)) / sum_i N_i mu_i, after rounding; it is
    at most epsilon under either scope. ``scope`` says what was bounded.
    """

    invocations: np.ndarray
    weights: np.ndarray
    leaf: np.ndarray
    leaf_group: np.ndarray
    leaf_sizes: np.ndarray
    sample_sizes: np.ndarray
    error_bound: float
    leaf_mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    leaf_std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    leaf_error_bound: np.ndarray = field(default_factory=lambda: np.zeros(0))
    leaf_census: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    scope: str = "global"
    leaf_members: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    leaf_start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_sizes.size)

    @property
    def expected_sampled_time(self) -> float:
        """tau = sum_i m_i mu_i, the expected simulated time of the plan (eq. 7-8)."""
        return weighted_sum(self.sample_sizes, self.leaf_mean)

    def estimate(self, per_invocation: np.ndarray) -> float:
        """Weighted-sum estimate of a per-invocation metric."""
        v = np.asarray(per_invocation, dtype=np.float64)
        return weighted_sum(self.weights, v[self.invocations])


# ---------------------------------------------------------------------------------------
# STEM
# ---------------------------------------------------------------------------------------
def stem_sample_size(mu: float, sigma: float, epsilon: float = 0.05, z: float = 1.96) -> int:
    """Eq. 3 for one cluster, never below 1: a constant cluster still needs one draw.

    The bound is checked (``check_bound``) and mu and sigma must be finite numbers >= 0 (they are
    a mean and a spread of execution times): a negative sigma was squared into a sample size, a
    negative mu gave 1 draw whatever the spread, and epsilon 0 divided by zero.

    A size beyond float64 (epsilon near 1e-200, or epsilon * mu below the smallest float) is
    the exact ceiling of the same ratio, from the inputs' exact rational values: the float
    formula raised a bare OverflowError or ZeroDivisionError for such inputs, which the bound's
    range accepts."""
    check_bound(epsilon, z)
    if not all(is_real(v) and math.isfinite(v) and v >= 0 for v in (mu, sigma)):
        raise StemError(f"stem: mu and sigma must be finite numbers >= 0, found mu={mu!r}, sigma={sigma!r}")
    if mu == 0:
        return 1
    try:
        m = math.ceil((z * sigma / (epsilon * mu)) ** 2 - 1e-9)
    except (OverflowError, ZeroDivisionError):
        from fractions import Fraction

        m = math.ceil((Fraction(z) * Fraction(sigma) / (Fraction(epsilon) * Fraction(mu))) ** 2)
    return max(1, int(m))


def stem_kkt(sizes, mu, sigma, epsilon: float = 0.05, z: float = 1.96) -> np.ndarray:
    """Real-valued optimum of Problem 1 as printed (with replacement, no bounds on m).

    Clusters with sigma = 0 (or mu = 0) need no draws for the error constraint and
    get 0 here; a size beyond float64 (epsilon near 1e-200) is inf. ``stem_allocate`` is
    what plans use: integer, bounded, corrected.
    The bound is checked as ``stem_sample_size`` checks it, and sizes, mu and sigma must be
    1-D arrays of one length of finite numbers >= 0: z = 0 divided by zero, epsilon 0 gave 0
    draws everywhere, and a negative sigma was squared into draws.
    """
    check_bound(epsilon, z)
    n = _finite_nonneg(sizes, "sizes")
    a = _finite_nonneg(mu, "mu")
    sd = _finite_nonneg(sigma, "sigma")
    if not n.shape == a.shape == sd.shape:
        raise StemError(f"stem: sizes, mu and sigma must have one length, found {n.size}, {a.size}, {sd.size}")
    # m_i does not change when every time (or every size) is multiplied by one factor, but b and c
    # are squares: times around 1e-170 made c underflow to 0 and gave 0 draws, times around 1e160
    # gave NaN. Divide by a power of two (exact; 1 for times and sizes in any ordinary unit)
    ts = time_scale(np.concatenate([a, sd]))
    a, sd = a / ts, sd / ts
    n = n / time_scale(n)
    b = n * n * sd * sd
    out = np.zeros_like(a)
    live = (a > 0) & (b > 0)
    if not live.any():
        return out
    # (s / c) sqrt(b / a) with c = (epsilon T / z)^2, c never formed: only the factor (z / epsilon)^2
    # is far from 1, and (epsilon T / z)^2 underflowed to 0 for epsilon below ~1e-160, which gave
    # every cluster 0 draws where the optimum is ~1e300 (or beyond float64: inf)
    t = weighted_sum(n, a)
    q = z / epsilon
    s = float(np.sqrt(a[live] * b[live]).sum())
    with np.errstate(over="ignore"):
        out[live] = (s / t * q) * (np.sqrt(b[live] / a[live]) / t * q)
    return out


def _finite_nonneg(values, name: str) -> np.ndarray:
    """``values`` as a 1-D float64 array of finite numbers >= 0, else a ``StemError`` naming ``name``."""
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise StemError(f"stem: {name}: not numeric") from None
    if v.ndim != 1:
        raise StemError(f"stem: {name}: expected a 1-D array, found shape {v.shape}")
    bad = ~np.isfinite(v) | (v < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise StemError(f"stem: {name}[{i}]: must be a finite number >= 0, found {float(v[i])!r}")
    return v


def _corrected_b(n: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """B_i = N_i^2 S_i^2 with the unbiased S_i^2 = sigma_i^2 N_i / (N_i - 1); 0 for N_i = 1.

    Sampling m of N without replacement, Var(N xbar) = B (1/m - 1/N): linear in 1/m,
    so Problem 1 keeps its KKT form, and m = N gives zero variance.
    """
    n = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, n * n * n * sd * sd / np.maximum(n - 1.0, 1.0), 0.0)


def stem_allocate(sizes, mu, sigma, units=None, *, epsilon: float = 0.05, z: float = 1.96,
                  min_samples: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Integer draws per leaf minimising sum m_i mu_i under each unit's error bound.

    ``units`` (L,) codes 0..U-1: leaves of one unit share one bound, epsilon of the
    unit's total at confidence z (one unit = scope global; one per group = scope
    group). Bounds: lo_i = min(max(min_samples, 1), N_i) <= m_i <= N_i; variance with
    the finite-population correction (module docstring). Returns (m, lam): int64 draws
    per leaf and the KKT multiplier per unit (m_i before rounding = clip(lam * sqrt(B_i
    / mu_i), lo_i, N_i); lam = 0 where every leaf at its lower bound already meets the
    bound). lam is found by bisection on log(lam) (the constraint is monotone in lam),
    from the feasible side, and rounding up keeps it feasible.

    The answer depends only on ratios of times within a unit, but B_i and the budget are
    squares: give each unit's mu and sigma in a unit where they are neither huge nor tiny
    (``stem_root`` passes each unit's in the power of two of its largest time).

    Inputs are checked (one ``StemError`` naming the field): the bound's ranges, sizes whole
    numbers >= 1, mu and sigma finite and >= 0, units whole numbers >= 0, one length. A leaf of
    size 0 made the budget NaN and every other leaf got its lower bound; a negative sigma was
    squared into draws; epsilon 5 gave 1 draw.
    """
    check_params(epsilon, z, min_samples, 1, "global")
    nf = _finite_nonneg(sizes, "sizes")
    a = _finite_nonneg(mu, "mu")
    sd = _finite_nonneg(sigma, "sigma")
    uf = np.zeros(nf.size) if units is None else _finite_nonneg(units, "units")
    if not nf.shape == a.shape == sd.shape == uf.shape:
        raise StemError(f"stem: sizes, mu, sigma and units must have one length, found "
                        f"{nf.size}, {a.size}, {sd.size}, {uf.size}")
    for name, v, least in (("sizes", nf, 1), ("units", uf, 0)):
        bad = (v < least) | (v != np.floor(v))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise StemError(f"stem: {name}[{i}]: must be a whole number >= {least}, found {float(v[i])!r}")
    return _allocate(nf.astype(np.int64), a, sd, uf.astype(np.int64), epsilon, z, min_samples)


def _allocate(n: np.ndarray, a: np.ndarray, sd: np.ndarray, u: np.ndarray, epsilon, z,
              min_samples) -> tuple[np.ndarray, np.ndarray]:
    """``stem_allocate`` on checked arrays (int64 sizes and units, float64 mu and sigma)."""
    U = int(u.max()) + 1 if u.size else 0
    nf = n.astype(np.float64)
    lo = np.minimum(max(int(min_samples), 1), nf)
    B = _corrected_b(n, sd)
    lam = _multiplier(nf, a, B, lo, u, U, epsilon, z)
    m = _clip_draws(lam[u], nf, a, B, lo)
    return m, lam


def _ratio(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """sqrt(B / a), the KKT direction of each leaf (0 where B = 0 or a = 0)."""
    live = (a > 0) & (B > 0)
    return np.where(live, np.sqrt(np.where(live, B, 0.0) / np.where(live, a, 1.0)), 0.0)


def _multiplier(nf, a, B, lo, u, U, epsilon, z) -> np.ndarray:
    """KKT multiplier lam per unit (see ``stem_allocate``)."""
    lam = np.zeros(U)
    if not nf.size:
        return lam
    total = np.bincount(u, weights=nf * a, minlength=U)
    cap = (epsilon * total / z) ** 2 + np.bincount(u, weights=B / nf, minlength=U)
    at_lo = np.bincount(u, weights=B / lo, minlength=U)
    need = at_lo > cap * (1.0 + 1e-12)
    if not need.any():
        return lam
    r = _ratio(a, B)
    live = r > 0
    lmin = np.full(U, np.inf)
    lmax = np.zeros(U)
    np.minimum.at(lmin, u[live], lo[live] / r[live])
    np.maximum.at(lmax, u[live], nf[live] / r[live])
    lo_l = np.log(np.where(need, lmin, 1.0))
    hi_l = np.log(np.where(need, lmax, 1.0)) + 1e-12
    for _ in range(80):  # log range of a few hundred at most; 80 halvings reach double precision
        mid = 0.5 * (lo_l + hi_l)
        g = np.bincount(u, weights=B / np.clip(np.exp(mid)[u] * r, lo, nf), minlength=U)
        feasible = g <= cap
        hi_l = np.where(feasible, mid, hi_l)
        lo_l = np.where(feasible, lo_l, mid)
    return np.where(need, np.exp(hi_l), 0.0)


def _clip_draws(lam_leaf, nf, a, B, lo) -> np.ndarray:
    """Rounded-up draws clip(lam * sqrt(B/a), lo, N) as int64."""
    m = np.clip(lam_leaf * _ratio(a, B), lo, nf)
    return np.clip(np.ceil(m * (1.0 - 1e-12)), lo, nf).astype(np.int64)


def _leaf_cost(lam_leaf, nf, a, B, lo) -> np.ndarray:
    """phi_i: a leaf's Lagrangian cost a m + lam^2 B (1/m - 1/N) at its best integer m."""
    mc = np.clip(lam_leaf * _ratio(a, B), lo, nf)
    nu = lam_leaf * lam_leaf
    best = None
    for m in (np.clip(np.floor(mc), lo, nf), np.clip(np.ceil(mc), lo, nf)):
        f = a * m + nu * B * (1.0 / m - 1.0 / nf)
        best = f if best is None else np.minimum(best, f)
    return best


def _total_variance(m, nf, B) -> float:
    return float(np.sum(B * (1.0 / m - 1.0 / nf)))


# ---------------------------------------------------------------------------------------
# ROOT
# ---------------------------------------------------------------------------------------
def split_1d_2means(x: np.ndarray, min_group: int = 1) -> int | None:
    """Optimal 2-means split of sorted values: left = x[:k], right = x[k:].

    In one dimension the optimal 2-means partition is a threshold, so the best k
    maximises the between-cluster sum of squares S_k^2 n / (k (n - k)) of the
    centred prefix sums: exact and O(n). Splits fall only between distinct values
    (k-means never separates equal points) and leave ``min_group`` on each side.
    Returns None when no such split exists (a single distinct value, too small).
    """
    n = int(x.size)
    min_group = max(int(min_group), 1)
    if n < 2 * min_group or x[0] == x[-1]:
        return None
    d = x - x.mean()
    cs = np.cumsum(d)[:-1]
    k = np.arange(1, n, dtype=np.float64)
    score = cs * cs * (n / (k * (n - k)))
    valid = x[1:] != x[:-1]
    if min_group > 1:
        valid[: min_group - 1] = False
        valid[n - min_group:] = False
    if not valid.any():
        return None
    score[~valid] = -1.0
    return int(np.argmax(score)) + 1


_CHUNK = 1 << 20
"""Members handled per array pass in ROOT; bounds the temporaries (~100 B per member)."""


class _Leaves:
    """The current ROOT leaves as parallel arrays, with each leaf's best cut cached.

    ``S``/``E`` bound the leaf in the (group, time)-sorted times; ``unit`` is the
    allocation unit (0 for scope global, the group for scope group); ``n``, ``mu``,
    ``sd`` its statistics; ``has`` whether a 2-means cut exists, ``cut`` its left size
    and ``cn``/``cmu``/``csd`` (L, 2) the halves' statistics. ``mu``, ``sd``, ``cmu``
    and ``csd`` are in units of the leaf's own ``scale`` (``time_scales`` of its largest
    time), so a leaf far below the others keeps its spread instead of squaring to 0;
    ``_in_units`` brings them to a common unit, exactly, where leaves are compared.
    """

    fields = ("S", "E", "unit", "scale", "n", "mu", "sd", "has", "cut", "cn", "cmu", "csd")

    def __init__(self, **arrays):
        for k in self.fields:
            setattr(self, k, arrays[k])

    def take(self, idx) -> "_Leaves":
        return _Leaves(**{k: getattr(self, k)[idx] for k in self.fields})

    @staticmethod
    def concat(parts) -> "_Leaves":
        return _Leaves(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in _Leaves.fields})


def _new_leaves(xs, S, E, unit, min_group) -> _Leaves:
    """Statistics and best cut of the segments xs[S:E], in chunks of ~_CHUNK members."""
    S, E = S.astype(np.int64), E.astype(np.int64)
    out = []
    if S.size:
        cum = np.cumsum(E - S)
        cuts = np.unique(np.searchsorted(cum, np.arange(_CHUNK, int(cum[-1]), _CHUNK), side="left") + 1)
        bounds = np.concatenate([[0], cuts[cuts < S.size], [S.size]])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            out.append(_split_level(xs, S[lo:hi], E[lo:hi], unit[lo:hi], min_group))
    if not out:
        z = np.zeros(0)
        return _Leaves(S=S, E=E, unit=unit, scale=z, n=S.copy(), mu=z, sd=z, has=np.zeros(0, bool),
                       cut=S.copy(), cn=np.zeros((0, 2), np.int64), cmu=np.zeros((0, 2)), csd=np.zeros((0, 2)))
    return _Leaves.concat(out)


def _split_level(xs, S, E, unit, min_group) -> _Leaves:
    """Statistics and best 2-means cut of each segment xs[S:E] (one pass of arrays).

    Each segment is measured in units of its own ``scale`` (its largest time is its last),
    1 for times in any ordinary unit, so the squares below neither overflow nor underflow.
    """
    mg = max(int(min_group), 1)
    lens = E - S
    nseg = S.size
    idx_t = np.int32 if int(lens.sum()) < 2**31 - 1 else np.int64
    seg = np.repeat(np.arange(nseg, dtype=idx_t), lens)
    base = np.cumsum(lens) - lens  # offset of each segment inside this chunk
    x = xs[_ranges(S, lens)]
    scale = time_scales(xs[E - 1])
    if (scale != 1.0).any():
        x /= scale[seg]  # exact: a power of two
    j = np.arange(x.size, dtype=idx_t)
    j -= base[seg].astype(idx_t)  # index inside the segment
    mu = np.bincount(seg, weights=x, minlength=nseg) / lens
    d = x - mu[seg]
    sd = np.sqrt(np.bincount(seg, weights=d * d, minlength=nseg) / lens)
    cs = np.cumsum(d)
    del d
    before = np.where(base > 0, cs[np.maximum(base - 1, 0)], 0.0)
    cs -= before[seg]  # centred prefix sum of the segment's x[:j+1]
    # valid cuts: between distinct values, at least mg members on each side
    n_of = lens[seg].astype(np.float64)
    k = j + 1.0  # left size if we cut after j
    valid = np.zeros(x.size, dtype=bool)
    np.not_equal(x[1:], x[:-1], out=valid[:-1])
    valid &= k >= mg
    valid &= n_of - k >= mg  # also excludes the last member (n - k = 0)
    # between-cluster sum of squares of the cut, S_k^2 n / (k (n - k)); -1 where invalid
    cs *= cs
    cs *= n_of
    k *= np.maximum(n_of - k, 1.0)
    cs /= k
    score = np.where(valid, cs, -1.0)
    del cs, k, n_of
    best = np.maximum.reduceat(score, base)
    hit = np.flatnonzero((score == best[seg]) & valid)
    del score, valid
    has = np.zeros(nseg, dtype=bool)
    cut = np.zeros(nseg, dtype=np.int64)
    if hit.size:
        seg_hit = seg[hit]  # non-decreasing: keep the first (leftmost) best cut per segment
        first = np.ones(hit.size, dtype=bool)
        first[1:] = seg_hit[1:] != seg_hit[:-1]
        has[seg_hit[first]] = True
        cut[seg_hit[first]] = j[hit[first]] + 1
    # halves' statistics, two-pass (a segment without a cut has an empty right half)
    child = 2 * seg.astype(np.int64)
    child += (j >= cut[seg]) & has[seg]
    del j, seg
    nc = np.bincount(child, minlength=2 * nseg).astype(np.float64)
    safe = np.where(nc > 0, nc, 1.0)
    cmu = np.bincount(child, weights=x, minlength=2 * nseg) / safe
    x -= cmu[child]
    x *= x
    csd = np.sqrt(np.bincount(child, weights=x, minlength=2 * nseg) / safe)
    return _Leaves(S=S, E=E, unit=unit, scale=scale, n=lens.astype(np.int64), mu=mu, sd=sd, has=has, cut=cut,
                   cn=nc.reshape(nseg, 2).astype(np.int64), cmu=cmu.reshape(nseg, 2), csd=csd.reshape(nseg, 2))


def _in_units(lv: _Leaves, unit_scale: np.ndarray, cols: tuple[str, ...] = ("mu", "sd")) -> list[np.ndarray]:
    """The leaves' ``cols`` in units of their allocation unit's scale (``unit_scale[unit]``).

    Why: Problem 1 mixes the leaves of a unit (a_i, b_i and the unit's total in c), so they
    must share one unit. Each leaf's scale / unit scale is a power of two <= 1, so the
    conversion is exact unless it leaves the normal range: sd^2 can only for a spread below
    2^-511 of the unit's largest time, and distinct float64 times that close together lie
    below ~2^-440 of it. Such a leaf's share of the unit's total and variance is then
    beneath the rounding of the sums it joins, and exact arithmetic also leaves it at its
    lower bound (lam r_i < 1 for epsilon above 1e-18 and up to 10^12 invocations); its own
    statistics stay in its own scale.
    """
    us = unit_scale[lv.unit]
    f = np.minimum(lv.scale, us) / us  # an all-zero leaf has scale 1 and nothing to scale
    return [getattr(lv, c) * (f if getattr(lv, c).ndim == 1 else f[:, None]) for c in cols]


def _plan_cost(lv: _Leaves, unit_scale: np.ndarray, epsilon, z, min_samples) -> tuple[float, np.ndarray]:
    """Sampled time sum m_i mu_i of the integer allocation over these leaves, and lam.

    lam per unit is in that unit's scale (as ``_in_units``); the sampled time is summed in
    the largest unit's, the time of the whole plan that ROOT lowers.
    """
    mu, sd = _in_units(lv, unit_scale)
    m, lam = _allocate(lv.n, mu, sd, lv.unit, epsilon, z, min_samples)
    return weighted_sum(m, mu * (unit_scale / unit_scale.max())[lv.unit]), lam


def _apply_splits(lv: _Leaves, idx: np.ndarray) -> tuple[_Leaves, _Leaves]:
    """Leaves with ``idx`` replaced by their halves (halves' cuts not yet known)."""
    keep = np.ones(lv.S.size, dtype=bool)
    keep[idx] = False
    p = lv.take(idx)
    mid = p.S + p.cut
    k = idx.size
    halves = _Leaves(S=np.concatenate([p.S, mid]), E=np.concatenate([mid, p.E]), unit=np.concatenate([p.unit, p.unit]),
                     scale=np.concatenate([p.scale, p.scale]),  # in the parent's unit until re-measured
                     n=np.concatenate([p.cn[:, 0], p.cn[:, 1]]), mu=np.concatenate([p.cmu[:, 0], p.cmu[:, 1]]),
                     sd=np.concatenate([p.csd[:, 0], p.csd[:, 1]]), has=np.zeros(2 * k, bool),
                     cut=np.zeros(2 * k, np.int64), cn=np.zeros((2 * k, 2), np.int64), cmu=np.zeros((2 * k, 2)),
                     csd=np.zeros((2 * k, 2)))
    return lv.take(np.flatnonzero(keep)), halves


EXACT_TRIES = 16
"""When no level of price-test candidates makes the integer plan cheaper, how many single
splits (best price-test gain first) ROOT still tries exactly before it stops."""


def _root(xs, lv: _Leaves, unit_scale: np.ndarray, epsilon, z, min_samples, min_group) -> _Leaves:
    """ROOT by the price of variance, one level per pass (module docstring).

    Each pass: allocate over the current leaves (multiplier lam per unit); every leaf
    with a cut whose halves lower the Lagrangian cost is a candidate; apply the
    candidates if the re-allocated integer plan is cheaper, else the better half of
    them (by gain), and so on down to one; if none is, the next ``EXACT_TRIES`` leaves by
    gain (rejected ones too) are split one at a time and the cheapest integer plan taken.
    New leaves get their cuts in one array pass over their members. Stops when none of
    those makes the plan cheaper. A leaf is priced
    in its unit's scale (``unit_scale``), where its lam lives; gains are ranked in the
    largest unit's, like the plan's sampled time.
    """
    bar = _progress(int(lv.n.sum()))
    common = unit_scale / unit_scale.max()
    cost, lam = _plan_cost(lv, unit_scale, epsilon, z, min_samples)
    while True:
        if bar is not None:
            bar.set_postfix_str(f"{lv.S.size} leaves", refresh=False)
            bar.update(1)
        cand = np.flatnonzero(lv.has & (lam[lv.unit] > 0))
        if not cand.size:
            break
        c = lv.take(cand)
        lam_c = lam[c.unit]

        def cost_of(n, mu, sd):
            nf = n.astype(np.float64)
            return _leaf_cost(lam_c, nf, mu, _corrected_b(n, sd), np.minimum(max(int(min_samples), 1), nf))

        mu, sd, cmu, csd = _in_units(c, unit_scale, ("mu", "sd", "cmu", "csd"))
        parent = cost_of(c.n, mu, sd)
        halves = cost_of(c.cn[:, 0], cmu[:, 0], csd[:, 0]) + cost_of(c.cn[:, 1], cmu[:, 1], csd[:, 1])
        gain = parent - halves
        ok = gain > 1e-12 * np.maximum(parent, 1e-300)
        ranked = np.argsort(-(gain * common[c.unit]), kind="stable")
        committed = False
        k = int(ok.sum())
        order = cand[ranked[:k]]  # the candidates (ok), best gain first
        while k >= 1:
            idx = np.sort(order[:k])
            rest, new = _apply_splits(lv, idx)
            trial = _Leaves.concat([rest, new])
            new_cost, new_lam = _plan_cost(trial, unit_scale, epsilon, z, min_samples)
            if new_cost < cost * (1.0 - 1e-12):
                committed = True
                break
            k //= 2
        if not committed:
            # the price test is a filter: with few draws, rounding up leaves the variance budget
            # slack, and a split it rejects can still lower the integer plan's time. Try the best
            # EXACT_TRIES by gain (the one best candidate was tried above) one at a time, exactly.
            best = None
            tried = order[0] if order.size else -1
            for i in [j for j in cand[ranked[:EXACT_TRIES + 1]] if j != tried][:EXACT_TRIES]:
                r, nw = _apply_splits(lv, np.array([i]))
                t_cost, _ = _plan_cost(_Leaves.concat([r, nw]), unit_scale, epsilon, z, min_samples)
                if t_cost < cost * (1.0 - 1e-12) and (best is None or t_cost < best[0]):
                    best = (t_cost, r, nw)
            if best is None:
                break
            _, rest, new = best
        fresh = _new_leaves(xs, new.S, new.E, new.unit, min_group)
        lv = _Leaves.concat([rest, fresh])
        cost, lam = _plan_cost(lv, unit_scale, epsilon, z, min_samples)
    if bar is not None:
        bar.close()
    return lv


def _progress(n_members: int):
    """A tqdm bar over ROOT levels for big inputs on a terminal (stderr; off when CI is set)."""
    import os
    import sys

    if n_members < 1_000_000 or os.environ.get("CI") or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(desc="ROOT levels", unit="level", file=sys.stderr, leave=False)


# ---------------------------------------------------------------------------------------
# STEM + ROOT
# ---------------------------------------------------------------------------------------
def check_bound(epsilon: Any, z: Any, prefix: str = "stem.", error: type[GclError] = StemError) -> None:
    """The error bound's ranges, shared by STEM+ROOT, gcl_stem and Allegro (and their
    up-front checks): ``error(prefix + "epsilon: ...")`` when one is out of range."""
    # a relative error of 100% or more bounds nothing (an estimate of 0 is within it); numpy
    # scalars are numbers too (np.float32(0.05) was refused as "must be a number in (0, 1)")
    if not (is_real(epsilon) and 0 < epsilon < 1):
        raise error(f"{prefix}epsilon: must be a number in (0, 1), found {epsilon!r}")
    # a normal quantile: beyond 40 the confidence is 1 in double precision, and a z near 0
    # makes the budget (epsilon total / z)^2 overflow
    if not (is_real(z) and Z_RANGE[0] <= z <= Z_RANGE[1]):
        raise error(f"{prefix}z: must be a number in [{Z_RANGE[0]:g}, {Z_RANGE[1]:g}] (1.96 = 95% confidence), "
                    f"found {z!r}")


def check_params(epsilon: Any, z: Any, min_samples: Any, min_group: Any, scope: Any,
                 key: Callable[[str], str] = "stem.{}".format) -> None:
    """STEM+ROOT's parameter ranges, one ``StemError`` naming the first one out of range.

    Why ``key``: the same ranges are checked before work as config keys (``stem.min_group``),
    as a sampler's params (``min_group``) and as CLI options (``--min-group``), and the error
    must name what the user typed.
    """
    check_bound(epsilon, z, key(""), StemError)
    for name, v in (("min_samples", min_samples), ("min_group", min_group)):
        if not is_count(v):
            raise StemError(f"{key(name)}: must be an integer >= 1, found {v!r}")
    if scope not in SCOPES:
        raise StemError(f"{key('scope')}: must be 'global' or 'group', found {scope!r}")


def time_scale(t: np.ndarray) -> float:
    """A power of two near the largest time when that is far from 1 (beyond 2^±64), else 1.

    Why: STEM squares totals and spreads, (epsilon sum N mu / z)^2 and N^2 sigma^2, so times
    around 1e150 overflow them and times around 1e-160 underflow (a varying leaf looks
    constant). Sample sizes depend only on ratios of times, and dividing by a power of two
    is exact, so scaling changes nothing else; times in any ordinary unit are left as they
    are and give the same bytes as before. One scale serves one set of times that are
    compared with each other; ``time_scales`` gives one per group.
    """
    return float(time_scales(np.float64(t.max() if t.size else 0.0)))


def time_scales(top: np.ndarray) -> np.ndarray:
    """``time_scale`` of each largest time in ``top`` (one per group or leaf), elementwise.

    Why one per group: with a single scale from the overall largest time, a group whose
    times lie 10^160 below another's squares to 0 and is sized as if constant. Each group
    (or ROOT leaf) measured in its own power of two keeps its statistics; where groups
    meet (one allocation unit, one total) their values are brought to a common scale by
    a power of two, which is exact unless the group is too small to count there at all.
    """
    top = np.asarray(top, dtype=np.float64)
    far = (top != 0.0) & ((top < 2.0**-64) | (top > 2.0**64))
    return np.where(far, np.ldexp(1.0, np.frexp(top)[1] - 1), 1.0)  # 2^(e-1) <= top: finite near DBL_MAX


def _times(times) -> np.ndarray:
    t = np.asarray(times)
    if t.ndim != 1:
        raise StemError(f"times: expected a 1-D array, found shape {t.shape}")
    if t.dtype == np.bool_:  # True/False became 1/0: a mask passed where the times belong
        raise StemError("times: booleans, not execution times")
    try:
        t = t.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise StemError("times: not numeric") from None
    if t.size == 0:
        raise StemError("times: no invocations")
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise StemError(f"times[{i}]: execution time must be finite and >= 0, found {t[i]!r}")
    with np.errstate(over="ignore"):
        total = t.sum()
    if not np.isfinite(total):
        raise StemError("times: their total overflows float64; give the times in a larger unit")
    return t


def _group_codes(groups, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Group codes 0..G-1 in order of first appearance, and the labels."""
    if groups is None:
        return np.zeros(n, dtype=np.int64), np.array([0])
    import pandas as pd

    g = groups if isinstance(groups, (pd.Series, pd.Categorical)) else np.asarray(groups)
    if len(g) != n:
        raise StemError(f"groups: length {len(g)} differs from times ({n})")
    codes, labels = pd.factorize(g, sort=False, use_na_sentinel=True)
    codes = codes.astype(np.int64, copy=False)
    labels = np.asarray(labels, dtype=object if np.asarray(labels).dtype.kind in "OUT" else None)
    if codes.size and codes.min() < 0:  # missing labels form one group of their own
        codes[codes < 0] = labels.size
        labels = np.append(labels.astype(object), None)
    return codes, labels


def stem_root(times, groups=None, *, epsilon: float = 0.05, z: float = 1.96, min_samples: int = 1,
              root: bool = True, min_group: int = 2, random_state: int | None = 0,
              scope: str = "global") -> StemResult:
    """Error-bounded sample of invocations from their execution times.

    ``times`` (N,) per-invocation execution time (any unit, >= 0); ``groups`` (N,)
    labels that must never be mixed (kernel names, or GCL clusters for gcl_stem);
    None puts every invocation in one group. ``root=False`` makes each group one
    leaf (plain STEM). ``scope`` what the bound covers (``SCOPES``). See the module
    docstring for the rules; ``stem_draw`` redraws the same leaves and sizes.
    """
    check_params(epsilon, z, min_samples, min_group, scope)
    _check_random_state(random_state)
    t = _times(times)
    n = t.size
    codes, labels = _group_codes(groups, n)
    G = labels.size

    # Sort by (group, time): every group, and every ROOT leaf inside it (a threshold
    # split), is then a contiguous range of `order`.
    order = _group_time_order(t, codes, G)
    xs = t[order]
    gsorted = codes[order]
    gstart = np.searchsorted(gsorted, np.arange(G), side="left")
    gend = np.searchsorted(gsorted, np.arange(G), side="right")
    del gsorted
    nonempty = gend > gstart
    gid = np.flatnonzero(nonempty)
    unit = gid.astype(np.int64) if scope == "group" else np.zeros(gid.size, dtype=np.int64)
    U = G if scope == "group" else 1
    lv = _new_leaves(xs, gstart[gid], gend[gid], unit, min_group if root else n + 1)
    # each leaf is measured in its own power of two (lv.scale); a unit's leaves are allocated
    # in the scale of the unit's largest time (unit_scale), which splitting never changes
    unit_top = np.zeros(U)
    np.maximum.at(unit_top, lv.unit, xs[lv.E - 1])
    unit_scale = time_scales(unit_top)
    if root:
        lv = _root(xs, lv, unit_scale, epsilon, z, min_samples, min_group)
    mu_u, sd_u = _in_units(lv, unit_scale)
    m, _ = _allocate(lv.n, mu_u, sd_u, lv.unit, epsilon, z, min_samples)

    # leaf ids in order of each leaf's first invocation
    pos = np.argsort(lv.S, kind="stable")
    lv, m = lv.take(pos), m[pos]
    L = lv.S.size
    first_inv = np.minimum.reduceat(order, lv.S)
    rank = np.empty(L, dtype=np.int64)
    rank[np.argsort(first_inv, kind="stable")] = np.arange(L)
    leaf_sorted = np.repeat(rank, lv.n)  # leaf of xs[j]
    leaf = np.empty(n, dtype=np.int64)
    leaf[order] = leaf_sorted
    del leaf_sorted
    by_id = np.empty(L, dtype=np.int64)
    by_id[rank] = np.arange(L)
    lv, m = lv.take(by_id), m[by_id]
    group_code = codes[order[lv.S]]

    # a leaf's own bound in its own scale; the workload's in the largest leaf's (each
    # leaf's share converted by a power of two, as _in_units)
    nf = lv.n.astype(np.float64)
    var = _corrected_b(lv.n, lv.sd) * (1.0 / m - 1.0 / nf)
    f = np.minimum(lv.scale, unit_scale.max()) / unit_scale.max()
    total = weighted_sum(nf, lv.mu * f)
    error_bound = float(z * math.sqrt(max((var * f * f).sum(), 0.0)) / total) if total > 0 else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        leaf_err = np.where((lv.mu > 0) & (var > 0), z * np.sqrt(np.maximum(var, 0.0)) / (nf * np.where(lv.mu > 0, lv.mu, 1.0)), 0.0)
    res = StemResult(
        invocations=np.zeros(0, dtype=np.int64),
        weights=np.zeros(0),
        leaf=leaf,
        leaf_group=labels[group_code],
        leaf_sizes=lv.n.astype(np.int64),
        sample_sizes=m.astype(np.int64),
        error_bound=error_bound,
        leaf_mean=lv.mu * lv.scale,
        leaf_std=lv.sd * lv.scale,
        leaf_error_bound=leaf_err,
        leaf_census=m >= lv.n,
        scope=scope,
        leaf_members=order,
        leaf_start=lv.S.astype(np.int64),
    )
    res.invocations, res.weights = stem_draw(res, random_state)
    return res


def stem_draw(res: StemResult, random_state: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """A fresh draw of the plan's sample: m_i distinct members of every leaf, weight N_i/m_i.

    The same leaves and sizes, another seed: how the statistical checks repeat a plan
    200 times without re-running ROOT. Leaves with m_i > N_i / 2 take the m_i smallest
    of N_i random keys; sparser ones draw m_i offsets and redraw the duplicates until
    none is left (each round keeps the first copy), which gives every m_i-subset the
    same chance by symmetry. Returns (invocations ascending, weights).
    """
    _check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    sizes, m = res.leaf_sizes, res.sample_sizes
    start = res.leaf_start
    members = res.leaf_members
    part = np.flatnonzero(m < sizes)
    dense = part[2 * m[part] > sizes[part]]
    sparse = part[2 * m[part] <= sizes[part]]
    picks, owners = [], []
    whole = np.flatnonzero(m >= sizes)
    if whole.size:
        picks.append(_ranges(start[whole], sizes[whole]))
        owners.append(np.repeat(whole, sizes[whole]))
    if dense.size:
        pos = _ranges(start[dense], sizes[dense])
        owner = np.repeat(np.arange(dense.size), sizes[dense])
        key = rng.random(pos.size)
        srt = np.lexsort((key, owner))
        rank_in = np.arange(pos.size) - np.repeat(np.cumsum(sizes[dense]) - sizes[dense], sizes[dense])
        keep = rank_in < np.repeat(m[dense], sizes[dense])
        picks.append(pos[srt][keep])
        owners.append(dense[owner[srt][keep]])
    if sparse.size:
        owner = np.repeat(sparse, m[sparse])
        off = rng.integers(0, sizes[owner])
        span = int(sizes.max()) + 1
        redo = np.arange(owner.size)
        while redo.size:
            key = owner * span + off
            srt = np.argsort(key, kind="stable")
            dup = np.zeros(key.size, dtype=bool)
            dup[srt[1:]] = key[srt[1:]] == key[srt[:-1]]
            redo = np.flatnonzero(dup)
            if redo.size:
                off[redo] = rng.integers(0, sizes[owner[redo]])
        picks.append(start[owner] + off)
        owners.append(owner)
    if not picks:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    pos = np.concatenate(picks)
    leaf_of_pos = np.concatenate(owners)
    inv = members[pos]
    w = sizes[leaf_of_pos] / m[leaf_of_pos]
    o = np.argsort(inv, kind="stable")
    return inv[o].astype(np.int64), w[o].astype(np.float64)


def _check_random_state(value: Any) -> None:
    """A seed ``numpy.random.default_rng`` takes: None, an integer >= 0 (or a numpy Generator or
    SeedSequence), else one ``StemError`` naming ``random_state``. Why: -1 was numpy's bare
    "expected non-negative integer" traceback, after ROOT had run (the baselines check the same)."""
    if value is None or isinstance(value, (np.random.Generator, np.random.SeedSequence)):
        return
    if not (is_int(value) and value >= 0):
        raise StemError(f"random_state: must be an integer >= 0 or None, found {value!r}")


def _group_time_order(t: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Invocations ordered by (group, time, invocation): a total order, so the result
    does not depend on the sorting algorithm and plans are reproducible everywhere.

    Few groups: an O(n) radix sort by group, then each group's times sorted on their
    own (shorter sorts, cache-friendly). Many groups: two global stable sorts.
    """
    if n_groups > 4096:
        order = np.argsort(t, kind="stable")
        return order[np.argsort(codes[order], kind="stable")]
    key = codes.astype(np.uint16) if n_groups <= np.iinfo(np.uint16).max else codes
    order = np.argsort(key, kind="stable")  # radix sort; invocation order inside each group
    bounds = np.searchsorted(key[order], np.arange(n_groups + 1), side="left")
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if hi - lo > 1:
            sub = order[lo:hi]
            order[lo:hi] = sub[np.argsort(t[sub], kind="stable")]
    return order


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + l) for many ranges, without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths)


# ---------------------------------------------------------------------------------------
# Sampler
# ---------------------------------------------------------------------------------------
class StemRootSampler(Sampler):
    """STEM+ROOT as a sampler: groups are kernel names, plan clusters are ROOT leaves.

    Learned: ``result_`` (StemResult), ``labels_`` (leaf of every invocation),
    ``error_bound_``, ``plan_``.
    """

    name = "stem_root"
    stochastic = True

    def __init__(self, epsilon: float = 0.05, z: float = 1.96, min_samples: int = 1, root: bool = True,
                 random_state: int | None = 0, min_group: int = 2, scope: str = "global",
                 time_column: str = "time_ns"):
        self.epsilon = epsilon
        self.z = z
        self.min_samples = min_samples
        self.root = root
        self.random_state = random_state
        self.min_group = min_group
        self.scope = scope
        self.time_column = time_column

    def fit(self, workload) -> SamplingPlan:
        prof = workload.profile
        if self.time_column not in prof.columns:
            raise StemError(f"{workload.name}: profile has no column {self.time_column!r} (stem.time_column)")
        names = prof["kernel_name"]
        times = finite_column(prof, self.time_column, _profile_where(workload), StemError,
                              "STEM needs a time in every row (time_column)")
        res = stem_root(times, prof["kernel_name"], epsilon=self.epsilon, z=self.z,
                        min_samples=self.min_samples, root=self.root, min_group=self.min_group,
                        random_state=self.random_state, scope=self.scope)
        self.result_ = res
        self.labels_ = res.leaf
        self.error_bound_ = res.error_bound
        self.plan_ = result_to_plan(res, names, workload=workload.name, method=self.name,
                                    config={**self.get_params(), "groups": "kernel_name"},
                                    synthetic=bool(getattr(workload, "synthetic", False)))
        return self.plan_


def _profile_where(workload) -> str:
    root = getattr(workload, "root", None)
    return f"{root}/profile.csv" if root is not None else f"workload {workload.name!r}"


def result_to_plan(res: StemResult, kernel_names, *, workload: str, method: str,
                   config: dict[str, Any] | None = None, synthetic: bool = False) -> SamplingPlan:
    """A ``SamplingPlan`` whose clusters are the ROOT leaves (with their error bounds)."""
    import pandas as pd

    # only the sampled invocations' names are needed (a million-row column stays as it is)
    names = kernel_names.iloc[res.invocations].to_numpy(dtype=object) if isinstance(kernel_names, pd.Series) \
        else np.asarray(kernel_names)[res.invocations]
    leaf_of = res.leaf[res.invocations]
    samples = [Sample(int(i), str(nm), int(c), float(w))
               for i, nm, c, w in zip(res.invocations.tolist(), names.tolist(), leaf_of.tolist(), res.weights.tolist())]
    clusters = [ClusterInfo(int(c), int(s), float(e))
                for c, (s, e) in enumerate(zip(res.leaf_sizes.tolist(), res.leaf_error_bound.tolist()))]
    cfg = dict(config or {})
    cfg.update({
        "error_bound": float(res.error_bound),
        "n_groups": int(pd.unique(pd.Series(res.leaf_group, dtype=object)).size) if res.leaf_group.size else 0,
        "n_leaves": int(res.n_leaves),
        "n_draws": int(res.sample_sizes.sum()),
        "scope": res.scope,
        "bounded": SCOPES[res.scope],
    })
    return SamplingPlan(workload, method, int(res.leaf.size), samples, clusters, cfg, synthetic)


def config_dict(cfg: StemConfig) -> dict[str, Any]:
    return asdict(cfg)
