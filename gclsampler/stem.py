r"""STEM and ROOT: error-bounded kernel sampling from execution times alone.

Chung et al., *Swift and Trustworthy Large-Scale GPU Simulation with Fine-Grained
Error Modeling and Hierarchical Clustering* (MICRO'25), Sec. 3.1-3.5 and Appendix.

**STEM** sizes a random sample (with replacement) so that the estimated total time
:math:`t = \sum_i N_i \bar X_i` lies within a relative error :math:`\epsilon` of the
true total with confidence :math:`z` (CLT). For one cluster (eq. 3)

.. math:: m = \left\lceil \left(\frac{z}{\epsilon}\frac{\sigma}{\mu}\right)^2 \right\rceil .

For clusters :math:`C_0..C_{k-1}` jointly (Problem 1) it minimises the sampled time
:math:`\tau = \sum_i m_i\mu_i` subject to :math:`\sum_i b_i/m_i \le c` with
:math:`a_i=\mu_i`, :math:`b_i=N_i^2\sigma_i^2`, :math:`c=(\epsilon\sum_i N_i\mu_i/z)^2`.
The KKT solution (Appendix; the printed eq. 6 has a typo, the derivation gives)

.. math:: m_i = \frac{\sum_j \sqrt{a_j b_j}}{c}\sqrt{\frac{b_i}{a_i}}

meets the constraint with equality before rounding up.

**ROOT** splits a group of invocations (same kernel name, or a GCL cluster)
recursively in two with k-means on the execution times, and keeps a split only
when the STEM-sampled time drops (:math:`\tau_{new} < \tau_{old}`, eq. 7-8).

Differences from the public reference scripts, each covered by a test:

* a leaf whose times are all equal (:math:`\sigma = 0`) gets one sample and keeps
  its full weight, instead of a sample size of 0 that drops it from the estimate;
* ``min_samples`` per leaf (the CLT rule of thumb m >= 30, as Allegro does), capped
  at the leaf size; a leaf whose sample would be at least its size is taken whole
  (every invocation once, weight 1: exact, and never more work than the draws);
* everything is seeded (``random_state``) and byte-reproducible;
* times may be non-integer (the reference casts to ``int``);
* the 2-means on one dimension is exact (sorted times, prefix sums) and cannot
  return a single label silently: a cluster with one distinct time, or one whose
  only splits would leave a side smaller than ``min_group``, ends the recursion;
* the population standard deviation is used: the sample is drawn with
  replacement from the whole, finite, known population.

Everything is vectorised per group; nothing loops over invocations in Python.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gclsampler.errors import GclError
from gclsampler.plan import ClusterInfo, Sample, Sampler, SamplingPlan

__all__ = [
    "StemConfig",
    "StemError",
    "StemResult",
    "StemRootSampler",
    "stem_sample_size",
    "stem_kkt",
    "stem_root",
    "split_1d_2means",
]


class StemError(GclError):
    """Bad times, groups or STEM parameters (names the field or config key)."""


@dataclass
class StemConfig:
    """Hydra structured config of the ``stem`` group (``conf/stem/*.yaml``).

    ``scope``: ``group`` bounds the error of every group (kernel name or GCL cluster)
    separately, which by Theorem 3.1 bounds the total too and keeps per-kernel
    estimates trustworthy; ``global`` solves Problem 1 once over every leaf, which
    bounds only the total and needs fewer samples.
    """

    epsilon: float = 0.05
    z: float = 1.96
    min_samples: int = 1
    root: bool = True
    min_group: int = 2
    scope: str = "group"


@dataclass
class StemResult:
    """What STEM+ROOT decided for one workload.

    ``invocations`` unique sampled invocation ids (ascending) and their ``weights``
    (leaf size / draws, summed over repeated draws; they sum to ``len(times)``).
    ``leaf`` (N,) ROOT leaf of every invocation, leaves numbered 0..L-1 in order of
    their first invocation. Per leaf (L,): ``leaf_group`` (the group label it came
    from), ``leaf_sizes``, ``sample_sizes`` (draws; the leaf size when taken whole),
    ``leaf_mean``/``leaf_std`` (population, in the unit of ``times``),
    ``leaf_error_bound`` (predicted relative error of that leaf's own total at
    confidence z; 0 when taken whole). ``error_bound`` is the predicted relative
    error of the workload total, z * sqrt(sum N_i^2 sigma_i^2 / m_i) / sum N_i mu_i,
    after rounding; it is at most epsilon.
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

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_sizes.size)

    def estimate(self, per_invocation: np.ndarray) -> float:
        """Weighted-sum estimate of a per-invocation metric."""
        v = np.asarray(per_invocation, dtype=np.float64)
        return float(np.dot(self.weights, v[self.invocations]))


# ---------------------------------------------------------------------------------------
# STEM
# ---------------------------------------------------------------------------------------
def stem_sample_size(mu: float, sigma: float, epsilon: float = 0.05, z: float = 1.96) -> int:
    """Eq. 3 for one cluster, never below 1: a constant cluster still needs one draw."""
    if mu <= 0:
        return 1
    return max(1, int(math.ceil((z * sigma / (epsilon * mu)) ** 2 - 1e-9)))


def stem_kkt(sizes, mu, sigma, epsilon: float = 0.05, z: float = 1.96) -> np.ndarray:
    """Real-valued optimum of Problem 1 (before rounding) for clusters with these stats.

    Clusters with sigma = 0 (or mu = 0) need no draws for the error constraint and
    get 0 here; the caller raises them to at least one.
    """
    n = np.asarray(sizes, dtype=np.float64)
    a = np.asarray(mu, dtype=np.float64)
    sd = np.asarray(sigma, dtype=np.float64)
    b = n * n * sd * sd
    c = (epsilon * float(np.dot(n, a)) / z) ** 2
    out = np.zeros_like(a)
    live = (a > 0) & (b > 0)
    if not live.any() or c <= 0:
        return out
    s = float(np.sqrt(a[live] * b[live]).sum())
    out[live] = (s / c) * np.sqrt(b[live] / a[live])
    return out


def _round_sizes(m_real: np.ndarray, sizes: np.ndarray, min_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer draws per cluster and which clusters are taken whole.

    Ceil (eq. 6), at least ``min(min_samples, N)`` and 1; a cluster whose draws
    would reach its size is taken whole (census) instead.
    """
    m = np.ceil(m_real - 1e-9).astype(np.int64)
    floor = np.minimum(np.maximum(int(min_samples), 1), sizes)
    m = np.maximum(m, np.maximum(floor, 1))
    census = m >= sizes
    m = np.where(census, sizes, m)
    return m, census


def _sampled_time(sizes, mu, sigma, epsilon, z, min_samples) -> float:
    """tau = sum m_i mu_i of the STEM plan for these clusters (eq. 7/8 with our rounding)."""
    m, _ = _round_sizes(stem_kkt(sizes, mu, sigma, epsilon, z), np.asarray(sizes, dtype=np.int64), min_samples)
    return float(np.dot(m, mu))


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


def _eq3_rounded(n: np.ndarray, mu: np.ndarray, sd: np.ndarray, epsilon: float, z: float,
                 min_samples: int) -> np.ndarray:
    """Rounded draws of eq. 3 for many single clusters at once (tau_old, eq. 7)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m_real = np.where(mu > 0, (z * sd / (epsilon * np.where(mu > 0, mu, 1.0))) ** 2, 0.0)
    return _round_sizes(m_real, n, min_samples)[0]


def _kkt_pairs_rounded(n: np.ndarray, mu: np.ndarray, sd: np.ndarray, epsilon: float, z: float,
                       min_samples: int) -> np.ndarray:
    """Rounded Problem-1 draws for many independent cluster sets of two (rows), (P, 2)."""
    a, b = mu, n.astype(np.float64) ** 2 * sd * sd
    c = (epsilon * np.sum(n * mu, axis=1, keepdims=True) / z) ** 2
    live = (a > 0) & (b > 0)
    root_ab = np.sqrt(np.where(live, a * b, 0.0))
    s = root_ab.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        m_real = np.where(live, s / np.where(c > 0, c, 1.0) * np.sqrt(np.where(live, b, 0.0) / np.where(a > 0, a, 1.0)), 0.0)
    return _round_sizes(m_real, n, min_samples)[0]


_CHUNK = 1 << 20
"""Members handled per array pass in ROOT; bounds the temporaries (~100 B per member)."""


def _root_levels(xs: np.ndarray, seg_start: np.ndarray, seg_end: np.ndarray, epsilon: float, z: float,
                 min_samples: int, min_group: int) -> np.ndarray:
    """ROOT on many sorted segments at once, one recursion level per pass.

    Every active segment of a level gets its exact 2-means split, its tau_old
    (eq. 7) and tau_new (eq. 8) in a handful of array passes over the segments'
    members, so a level costs O(members) whatever the number of segments. The
    segments of a level are processed in chunks of about ``_CHUNK`` members to keep
    memory flat. Returns the start offsets of all leaves.
    """
    leaf_starts = [np.zeros(0, dtype=np.int64)]
    S, E = seg_start.astype(np.int64), seg_end.astype(np.int64)
    bar = _progress(int((E - S).sum()))
    while S.size:
        if bar is not None:
            bar.set_postfix_str(f"{S.size} segments, {int((E - S).sum())} invocations active", refresh=False)
            bar.update(1)
        cum = np.cumsum(E - S)
        # chunk boundaries at segment boundaries, ~_CHUNK members each (a bigger segment alone)
        cuts = np.unique(np.searchsorted(cum, np.arange(_CHUNK, int(cum[-1]), _CHUNK), side="left") + 1)
        bounds = np.concatenate([[0], cuts[cuts < S.size], [S.size]])
        accept = np.zeros(S.size, dtype=bool)
        cut = np.zeros(S.size, dtype=np.int64)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            accept[lo:hi], cut[lo:hi] = _split_level(xs, S[lo:hi], E[lo:hi], epsilon, z, min_samples, min_group)
        leaf_starts.append(S[~accept])
        s_acc, e_acc, mid = S[accept], E[accept], S[accept] + cut[accept]
        S = np.concatenate([s_acc, mid])
        E = np.concatenate([mid, e_acc])
    if bar is not None:
        bar.close()
    return np.concatenate(leaf_starts)


def _progress(n_members: int):
    """A tqdm bar over ROOT levels for big inputs on a terminal (stderr; off when CI is set)."""
    import os
    import sys

    if n_members < 1_000_000 or os.environ.get("CI") or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(desc="ROOT levels", unit="level", file=sys.stderr, leave=False)


def _split_level(xs: np.ndarray, S: np.ndarray, E: np.ndarray, epsilon: float, z: float,
                 min_samples: int, min_group: int) -> tuple[np.ndarray, np.ndarray]:
    """Best 2-means cut of each segment xs[S:E] and whether ROOT accepts it (eq. 7-8)."""
    mg = max(int(min_group), 1)
    lens = E - S
    nseg = S.size
    idx_t = np.int32 if int(lens.sum()) < 2**31 - 1 else np.int64
    seg = np.repeat(np.arange(nseg, dtype=idx_t), lens)
    base = np.cumsum(lens) - lens  # offset of each segment inside this chunk
    x = xs[_ranges(S, lens)]
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
    # children statistics, two-pass
    child = 2 * seg.astype(np.int64)
    child += j >= cut[seg]
    del j, seg
    nc = np.bincount(child, minlength=2 * nseg).astype(np.float64)
    safe = np.where(nc > 0, nc, 1.0)
    cmu = np.bincount(child, weights=x, minlength=2 * nseg) / safe
    x -= cmu[child]
    x *= x
    csd = np.sqrt(np.bincount(child, weights=x, minlength=2 * nseg) / safe)
    tau_old = _eq3_rounded(lens, mu, sd, epsilon, z, min_samples) * mu
    nc2, cmu2, csd2 = nc.reshape(nseg, 2).astype(np.int64), cmu.reshape(nseg, 2), csd.reshape(nseg, 2)
    m_new = _kkt_pairs_rounded(np.maximum(nc2, 1), cmu2, csd2, epsilon, z, min_samples)
    tau_new = (m_new * cmu2).sum(axis=1)
    # a strict gain only: when both sides are taken whole tau_new equals tau_old in
    # real arithmetic, and rounding must not decide
    accept = has & (tau_new < tau_old * (1.0 - 1e-9))
    return accept, cut


# ---------------------------------------------------------------------------------------
# STEM + ROOT
# ---------------------------------------------------------------------------------------
def _check_params(epsilon: float, z: float, min_samples: int, min_group: int, scope: str) -> None:
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon and math.isfinite(epsilon)):
        raise StemError(f"stem.epsilon: must be a number > 0, found {epsilon!r}")
    if not (isinstance(z, (int, float)) and 0 < z and math.isfinite(z)):
        raise StemError(f"stem.z: must be a number > 0, found {z!r}")
    if int(min_samples) != min_samples or min_samples < 1:
        raise StemError(f"stem.min_samples: must be an integer >= 1, found {min_samples!r}")
    if int(min_group) != min_group or min_group < 1:
        raise StemError(f"stem.min_group: must be an integer >= 1, found {min_group!r}")
    if scope not in ("group", "global"):
        raise StemError(f"stem.scope: must be 'group' or 'global', found {scope!r}")


def stem_root(times, groups=None, *, epsilon: float = 0.05, z: float = 1.96, min_samples: int = 1,
              root: bool = True, min_group: int = 2, random_state: int | None = 0,
              scope: str = "group") -> StemResult:
    """Error-bounded sample of invocations from their execution times.

    ``times`` (N,) per-invocation execution time (any unit, >= 0); ``groups`` (N,)
    labels that must never be mixed (kernel names, or GCL clusters for gcl_stem);
    None puts every invocation in one group. ``root=False`` makes each group one
    leaf (plain STEM). See the module docstring for the rules.
    """
    _check_params(epsilon, z, min_samples, min_group, scope)
    t = np.asarray(times)
    if t.ndim != 1:
        raise StemError(f"times: expected a 1-D array, found shape {t.shape}")
    try:
        t = t.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise StemError("times: not numeric") from None
    n = t.size
    if n == 0:
        raise StemError("times: no invocations")
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise StemError(f"times[{i}]: execution time must be finite and >= 0, found {t[i]!r}")

    # group codes 0..G-1 in order of first appearance
    if groups is None:
        codes = np.zeros(n, dtype=np.int64)
        labels = np.array([0])
    else:
        import pandas as pd

        g = groups if isinstance(groups, (pd.Series, pd.Categorical)) else np.asarray(groups)
        if len(g) != n:
            raise StemError(f"groups: length {len(g)} differs from times ({n})")
        codes, labels = pd.factorize(g, sort=False, use_na_sentinel=True)  # faster than keeping NA inline
        codes = codes.astype(np.int64, copy=False)
        labels = np.asarray(labels, dtype=object if np.asarray(labels).dtype.kind in "OUT" else None)
        if codes.size and codes.min() < 0:  # missing labels form one group of their own
            codes[codes < 0] = labels.size
            labels = np.append(labels.astype(object), None)

    # Sort by (group, time): every group, and every ROOT leaf inside it (a threshold
    # split), is then a contiguous range of `order`.
    order = _group_time_order(t, codes, labels.size)
    xs = t[order]
    gsorted = codes[order]
    G = labels.size
    gstart = np.searchsorted(gsorted, np.arange(G), side="left")
    gend = np.searchsorted(gsorted, np.arange(G), side="right")

    # ROOT, only where a split is possible at all (>= 2*min_group members, >= 2 values)
    starts: list[np.ndarray] = []
    splittable = np.zeros(G, dtype=bool)
    if root:
        sizes_g = gend - gstart
        ok = sizes_g >= 2 * max(min_group, 1)
        nonempty = sizes_g > 0
        first = np.where(nonempty, xs[np.minimum(gstart, n - 1)], 0.0)
        last = np.where(nonempty, xs[np.maximum(gend - 1, 0)], 0.0)
        splittable = ok & (first != last)
    leaf_starts = [gstart[~splittable], np.array([n])]
    if splittable.any():
        leaf_starts.append(_root_levels(xs, gstart[splittable], gend[splittable], epsilon, z, min_samples, min_group))
    bounds = np.unique(np.concatenate(leaf_starts))
    lstart, lend = bounds[:-1], bounds[1:]
    L = lstart.size

    # leaf ids in order of each leaf's first invocation
    first_inv = np.minimum.reduceat(order, lstart)
    rank = np.empty(L, dtype=np.int64)
    rank[np.argsort(first_inv, kind="stable")] = np.arange(L)
    lsize = (lend - lstart).astype(np.int64)
    leaf_sorted = np.repeat(rank, lsize)  # leaf of xs[j]
    leaf = np.empty(n, dtype=np.int64)
    leaf[order] = leaf_sorted

    # per-leaf statistics (two-pass for precision), in leaf-id order
    sizes = np.empty(L, dtype=np.int64)
    sizes[rank] = lsize
    mean = np.bincount(leaf_sorted, weights=xs, minlength=L) / sizes
    dev = xs - mean[leaf_sorted]
    std = np.sqrt(np.bincount(leaf_sorted, weights=dev * dev, minlength=L) / sizes)
    lgroup_code = np.empty(L, dtype=np.int64)
    lgroup_code[rank] = gsorted[lstart]

    # STEM sample sizes: Problem 1 per group (Theorem 3.1) or once over all leaves
    a, b = mean, (sizes.astype(np.float64) ** 2) * std * std
    if scope == "global":
        m_real = stem_kkt(sizes, mean, std, epsilon, z)
    else:
        nmu = sizes * mean
        c_g = (epsilon * np.bincount(lgroup_code, weights=nmu, minlength=G) / z) ** 2
        live = (a > 0) & (b > 0)
        root_ab = np.where(live, np.sqrt(np.where(live, a * b, 0.0)), 0.0)
        s_g = np.bincount(lgroup_code, weights=root_ab, minlength=G)
        with np.errstate(divide="ignore", invalid="ignore"):
            m_real = np.where(live, s_g[lgroup_code] / c_g[lgroup_code] * np.sqrt(np.where(live, b / np.where(a > 0, a, 1.0), 0.0)), 0.0)
    m, census = _round_sizes(m_real, sizes, min_samples)

    # draw with replacement inside each leaf; census leaves take every member once
    rng = np.random.default_rng(random_state)
    lstart_by_id = np.empty(L, dtype=np.int64)
    lstart_by_id[rank] = lstart
    drawn = np.flatnonzero(~census)
    draws_per = m[drawn]
    draw_leaf = np.repeat(drawn, draws_per)
    offsets = rng.integers(0, sizes[draw_leaf]) if draw_leaf.size else np.zeros(0, dtype=np.int64)
    inv_draw = order[lstart_by_id[draw_leaf] + offsets]
    w_draw = sizes[draw_leaf] / m[draw_leaf]
    whole = np.flatnonzero(census)
    if whole.size:
        # members of census leaves: contiguous ranges of `order`
        pos = _ranges(lstart_by_id[whole], sizes[whole])
        inv_all = np.concatenate([inv_draw, order[pos]])
        w_all = np.concatenate([w_draw, np.ones(pos.size)])
    else:
        inv_all, w_all = inv_draw, w_draw
    inv_u, inv_idx = np.unique(inv_all, return_inverse=True)
    weights = np.bincount(inv_idx, weights=w_all, minlength=inv_u.size)

    var_term = np.where(census, 0.0, b / np.maximum(m, 1))
    total = float(np.dot(sizes, mean))
    error_bound = float(z * math.sqrt(var_term.sum()) / total) if total > 0 else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        leaf_err = np.where(census | (mean <= 0), 0.0, z * std / (np.where(mean > 0, mean, 1.0) * np.sqrt(np.maximum(m, 1))))
    return StemResult(
        invocations=inv_u.astype(np.int64),
        weights=weights.astype(np.float64),
        leaf=leaf,
        leaf_group=labels[lgroup_code],
        leaf_sizes=sizes,
        sample_sizes=m.astype(np.int64),
        error_bound=error_bound,
        leaf_mean=mean,
        leaf_std=std,
        leaf_error_bound=leaf_err,
        leaf_census=census,
    )


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
                 random_state: int | None = 0, min_group: int = 2, scope: str = "group",
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
        names = prof["kernel_name"].to_numpy()
        res = stem_root(prof[self.time_column].to_numpy(dtype=np.float64), prof["kernel_name"], epsilon=self.epsilon, z=self.z,
                        min_samples=self.min_samples, root=self.root, min_group=self.min_group,
                        random_state=self.random_state, scope=self.scope)
        self.result_ = res
        self.labels_ = res.leaf
        self.error_bound_ = res.error_bound
        self.plan_ = result_to_plan(res, names, workload=workload.name, method=self.name,
                                    config={**self.get_params(), "groups": "kernel_name"},
                                    synthetic=bool(getattr(workload, "synthetic", False)))
        return self.plan_


def result_to_plan(res: StemResult, kernel_names, *, workload: str, method: str,
                   config: dict[str, Any] | None = None, synthetic: bool = False) -> SamplingPlan:
    """A ``SamplingPlan`` whose clusters are the ROOT leaves (with their error bounds)."""
    names = np.asarray(kernel_names)
    leaf_of = res.leaf[res.invocations]
    samples = [Sample(int(i), str(names[i]), int(c), float(w))
               for i, c, w in zip(res.invocations.tolist(), leaf_of.tolist(), res.weights.tolist())]
    clusters = [ClusterInfo(int(c), int(s), float(e))
                for c, (s, e) in enumerate(zip(res.leaf_sizes.tolist(), res.leaf_error_bound.tolist()))]
    cfg = dict(config or {})
    cfg.update({
        "error_bound": float(res.error_bound),
        "n_groups": int(np.unique(res.leaf_group).size) if res.leaf_group.size else 0,
        "n_leaves": int(res.n_leaves),
        "n_draws": int(res.sample_sizes.sum()),
    })
    return SamplingPlan(workload, method, int(res.leaf.size), samples, clusters, cfg, synthetic)


def config_dict(cfg: StemConfig) -> dict[str, Any]:
    return asdict(cfg)
