"""STEM sample sizes (eq. 3, Problem 1), ROOT splits (eq. 7-8), and the fixes over the reference scripts."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from gclsampler.errors import GclError
from gclsampler.stem import (
    StemConfig,
    StemError,
    split_1d_2means,
    stem_allocate,
    stem_draw,
    stem_kkt,
    stem_root,
    stem_sample_size,
)


# ---- STEM ------------------------------------------------------------------------------
def test_eq3_hand_values():
    # (1.96 * 10 / (0.05 * 100))^2 = 15.3664 -> 16 ; (1.96 * 0.5 / 0.01)^2 = 9604 exactly
    assert stem_sample_size(100.0, 10.0, 0.05, 1.96) == 16
    assert stem_sample_size(1.0, 0.5, 0.01, 1.96) == 9604
    assert stem_sample_size(100.0, 0.0) == 1  # sigma = 0 still needs one draw


@pytest.mark.parametrize("args, needle", [((1.0, 1.0, 0.0), "epsilon"), ((1.0, -1.0), "sigma=-1"),
                                          ((1.0, float("nan")), "sigma=nan"), ((float("inf"), 1.0), "mu=inf")])
def test_eq3_refuses_what_has_no_sample_size(args, needle):
    """sigma -1 gave 1537 draws (squared away), epsilon 0 a ZeroDivisionError, NaN a ValueError."""
    with pytest.raises(StemError, match=re.escape(needle)):
        stem_sample_size(*args)


@pytest.mark.parametrize("call, needle", [
    (lambda: stem_sample_size(-100.0, 10.0), "mu=-100.0"),  # was 1 draw, whatever the spread
    (lambda: stem_kkt([10], [100.0], [10.0], 0.05, 0.0), "stem.z"),  # was ZeroDivisionError
    (lambda: stem_kkt([10], [100.0], [10.0], 0.0, 1.96), "stem.epsilon"),  # was 0 draws
    (lambda: stem_kkt([10], [100.0], [-10.0]), "sigma[0]"),  # was 15.37 draws (squared away)
    (lambda: stem_kkt([10], [-100.0], [10.0]), "mu[0]"),
    (lambda: stem_kkt([10, 5], [100.0], [10.0, 1.0]), "one length"),  # was numpy's shape error
    (lambda: stem_kkt([10], [np.nan], [1.0]), "mu[0]"),
])
def test_eq3_and_kkt_refuse_what_is_no_mean_spread_or_bound(call, needle):
    """A mean and a spread of execution times are finite and >= 0, and the bound has STEM's ranges:
    stem_kkt checked nothing, and stem_sample_size took a negative mean for a zero one."""
    with pytest.raises(StemError, match=re.escape(needle)):
        call()


@pytest.mark.parametrize("e", [-600, -565, 0, 520, 1000])
def test_kkt_does_not_depend_on_the_unit_of_the_times(e):
    """Problem 1's optimum is the same in any unit of time; with times 2^-565 (~1e-170) c underflowed
    to 0 and stem_kkt returned 0 draws, with times 2^520 it returned NaN."""
    n, mu, sd = np.array([1000.0, 50.0]), np.array([10.0, 400.0]), np.array([5.0, 40.0])
    ref = stem_kkt(n, mu, sd)
    np.testing.assert_allclose(stem_kkt(n, np.ldexp(mu, e), np.ldexp(sd, e)), ref, rtol=1e-12)
    np.testing.assert_allclose(stem_kkt(n * 2.0**200, mu, sd), ref, rtol=1e-12)


def test_single_cluster_kkt_is_eq3():
    m = stem_kkt([1000], [100.0], [10.0], 0.05, 1.96)
    assert m[0] == pytest.approx(15.3664, rel=1e-12)


@pytest.mark.parametrize("mu, sigma, eps, approx", [
    (10.0, 1.0, 1e-200, "3.8416e398"),  # (1.96e199)^2 is beyond float64: was OverflowError
    (1e-300, 1e-301, 1e-30, "3.8416e58"),  # epsilon * mu underflows to 0: was ZeroDivisionError
], ids=["beyond-float64", "epsilon-mu-underflows"])
def test_eq3_takes_every_epsilon_in_its_range(mu, sigma, eps, approx):
    """A size beyond float64, or epsilon * mu below the smallest float, is the exact ceiling of
    (z sigma / (epsilon mu))^2 from the inputs' exact values, not a bare Python error."""
    from fractions import Fraction

    exact = math.ceil((Fraction(1.96) * Fraction(sigma) / (Fraction(eps) * Fraction(mu))) ** 2)
    got = stem_sample_size(mu, sigma, eps, 1.96)
    assert isinstance(got, int) and got == exact
    assert Fraction(got) / Fraction(approx) == pytest.approx(1.0, rel=1e-12)


def test_kkt_at_a_tiny_epsilon_is_eq3_or_inf():
    """(epsilon T / z)^2 underflowed to 0 below epsilon ~1e-160 and every cluster got 0 draws; one
    cluster is eq. 3 there too, and an optimum beyond float64 is inf."""
    m = stem_kkt([1000], [10.0], [1e-12], 1e-165, 1.96)
    assert m[0] == pytest.approx(stem_sample_size(10.0, 1e-12, 1e-165, 1.96), rel=1e-12)
    assert np.isposinf(stem_kkt([1000, 50], [10.0, 400.0], [1.0, 40.0], 1e-200, 1.96)).all()


stats = st.lists(
    st.tuples(st.integers(1, 10**6), st.floats(1e-3, 1e6), st.floats(1e-4, 10.0)),  # N, mu, CoV
    min_size=1, max_size=12,
)


@given(stats, st.floats(0.001, 0.3), st.floats(0.5, 4.0))
@settings(max_examples=60, deadline=None)
def test_kkt_meets_constraint_with_equality(rows, eps, z):
    n = np.array([r[0] for r in rows], dtype=float)
    mu = np.array([r[1] for r in rows])
    sd = mu * np.array([r[2] for r in rows])
    m = stem_kkt(n, mu, sd, eps, z)
    lhs = np.sum(n**2 * sd**2 / m)
    rhs = (eps * np.dot(n, mu) / z) ** 2
    assert lhs == pytest.approx(rhs, rel=1e-9)


def test_kkt_is_the_optimum_of_problem1(rng):
    for _ in range(20):
        k = int(rng.integers(2, 6))
        n = rng.integers(10, 10_000, k).astype(float)
        mu = rng.uniform(1, 100, k)
        sd = mu * rng.uniform(0.05, 2.0, k)
        eps, z = 0.05, 1.96
        b, c = n**2 * sd**2, (eps * n @ mu / z) ** 2
        m = stem_kkt(n, mu, sd, eps, z)
        res = minimize(lambda x: mu @ np.exp(x), np.log(m * 2),
                       constraints=[{"type": "ineq", "fun": lambda x: 1.0 - np.sum(b / np.exp(x)) / c}],
                       method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
        other = np.exp(res.x)
        other *= np.sum(b / other) / c  # scale onto the constraint (feasible, tight)
        assert mu @ m <= mu @ other * (1 + 1e-9)
        # and no random feasible point beats it
        pts = rng.uniform(0.1, 10.0, (500, k)) * m
        pts *= (np.sum(b / pts, axis=1) / c)[:, None]
        assert np.all(pts @ mu >= mu @ m * (1 - 1e-12))


def test_printed_eq6_typo_would_break_the_bound():
    # The printed eq. 6 uses sqrt(sum a_j b_j); the derivation gives sum sqrt(a_j b_j).
    n, mu, sd = np.array([1000.0, 50.0]), np.array([10.0, 400.0]), np.array([5.0, 40.0])
    a, b, c = mu, n**2 * sd**2, (0.05 * n @ mu / 1.96) ** 2
    typo = np.sqrt(np.sum(a * b)) / c * np.sqrt(b / a)
    assert np.sum(b / typo) > c * 1.01  # the typo misses the error bound
    assert np.sum(b / stem_kkt(n, mu, sd)) == pytest.approx(c)


# ---- 1-D 2-means --------------------------------------------------------------------------
def _sse(parts):
    return sum(float(((p - p.mean()) ** 2).sum()) for p in parts if p.size)


@given(st.lists(st.integers(0, 30), min_size=2, max_size=40), st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_2means_split_is_exact(values, min_group):
    x = np.sort(np.array(values, dtype=float) / 3.0)
    k = split_1d_2means(x, min_group)
    candidates = [j for j in range(1, x.size) if x[j - 1] != x[j] and min_group <= j <= x.size - min_group]
    if not candidates:
        assert k is None
        return
    best = min(_sse([x[:j], x[j:]]) for j in candidates)
    assert k in candidates
    assert _sse([x[:k], x[k:]]) == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_2means_single_value_returns_none():
    assert split_1d_2means(np.full(100, 3.5)) is None


# ---- integer allocation (what a plan really costs) ----------------------------------------
leaf_rows = st.lists(
    st.tuples(st.integers(1, 5000), st.floats(1e-2, 1e4), st.floats(0.0, 3.0), st.integers(0, 2)),  # N, mu, CoV, unit
    min_size=1, max_size=15,
)


def _fpc_var(m, n, sd):
    n = np.asarray(n, dtype=float)
    big_b = np.where(n > 1, n**3 * sd**2 / np.maximum(n - 1, 1), 0.0)
    return big_b * (1 / np.asarray(m, dtype=float) - 1 / n)


@given(leaf_rows, st.floats(0.005, 0.3), st.integers(1, 40))
@settings(max_examples=80, deadline=None)
def test_allocation_is_integer_bounded_and_meets_every_units_bound(rows, eps, ms):
    n = np.array([r[0] for r in rows])
    mu = np.array([r[1] for r in rows])
    sd = mu * np.array([r[2] for r in rows])
    unit = np.unique(np.array([r[3] for r in rows]), return_inverse=True)[1]
    m, lam = stem_allocate(n, mu, sd, unit, epsilon=eps, z=1.96, min_samples=ms)
    assert m.dtype == np.int64
    assert np.all(m >= np.minimum(ms, n)) and np.all(m <= n) and np.all(m >= 1)
    var = _fpc_var(m, n, sd)
    for u in np.unique(unit):
        sel = unit == u
        c = (eps * np.dot(n[sel], mu[sel]) / 1.96) ** 2
        assert var[sel].sum() <= c * (1 + 1e-9) + 1e-300
    # rounding up costs at most one draw per leaf over the bounded continuous optimum
    cont = np.clip(lam[unit] * np.sqrt(np.where(n > 1, n**3 * sd**2 / np.maximum(n - 1, 1), 0.0) / mu), np.minimum(ms, n), n)
    assert np.dot(m, mu) <= np.dot(cont, mu) + mu.sum() * (1 + 1e-9)


def test_allocation_is_near_the_integer_optimum_by_brute_force(rng):
    """Over every integer plan of 2-3 small leaves, ours is feasible and within one draw per leaf."""
    import itertools

    for _ in range(40):
        k = int(rng.integers(2, 4))
        n = rng.integers(2, 14, k)
        mu = rng.uniform(1, 50, k)
        sd = mu * rng.uniform(0.05, 1.5, k)
        eps = float(rng.uniform(0.02, 0.3))
        c = (eps * np.dot(n, mu) / 1.96) ** 2
        m, _ = stem_allocate(n, mu, sd, epsilon=eps)
        assert _fpc_var(m, n, sd).sum() <= c * (1 + 1e-9)
        best = min(np.dot(p, mu) for p in itertools.product(*[range(1, int(x) + 1) for x in n])
                   if _fpc_var(np.array(p), n, sd).sum() <= c * (1 + 1e-9))
        assert best <= np.dot(m, mu) <= best + mu.sum() + 1e-9


def test_small_leaf_is_taken_whole_with_zero_variance():
    # 6 invocations that vary wildly: the bound needs all of them, and FPC makes that exact
    m, _ = stem_allocate([6], [10.0], [9.0], epsilon=0.01)
    assert m.tolist() == [6]
    res = stem_root(np.array([1.0, 3.0, 9.0, 27.0, 2.0, 18.0]), root=False, epsilon=0.01)
    assert res.leaf_census.all() and res.error_bound == 0.0
    assert res.estimate(np.arange(6.0)) == pytest.approx(15.0)


def test_large_leaf_needs_eq3_draws():
    # N >> m: the correction vanishes and the allocation is eq. 3 rounded up
    m, _ = stem_allocate([10**9], [100.0], [10.0], epsilon=0.05)
    assert m.tolist() == [stem_sample_size(100.0, 10.0, 0.05, 1.96)]


# ---- ROOT ------------------------------------------------------------------------------
def _two_peaks(rng, n=4000):
    return np.where(rng.random(n) < 0.5, rng.normal(100, 2, n), rng.normal(400, 8, n))


def _tau(r):
    return float(np.dot(r.sample_sizes, r.leaf_mean))


@pytest.mark.parametrize("scope", ["global", "group"])
def test_root_separates_peaks(rng, scope):
    t = _two_peaks(rng)
    res = stem_root(t, None, epsilon=0.05, scope=scope)
    assert res.n_leaves >= 2
    for leaf in range(res.n_leaves):  # no leaf mixes the two peaks
        v = t[res.leaf == leaf]
        assert v.max() < 250 or v.min() > 250
    plain = stem_root(t, None, epsilon=0.05, root=False, scope=scope)
    assert plain.n_leaves == 1
    assert _tau(res) < _tau(plain)


def test_root_does_not_split_when_one_draw_per_group_already_meets_the_bound(rng):
    """The paper's rule would split every two-peaked kernel; the plan gains nothing from it."""
    t = np.concatenate([_two_peaks(rng, 400) for _ in range(50)])
    g = np.repeat(np.arange(50), 400)
    res = stem_root(t, g, epsilon=0.25, scope="global")
    plain = stem_root(t, g, epsilon=0.25, scope="global", root=False)
    assert plain.sample_sizes.tolist() == [1] * 50  # 50 kernels, one draw each meets 25 %
    assert res.n_leaves == 50 and _tau(res) == pytest.approx(_tau(plain))


_ints = st.lists(st.integers(1, 60), min_size=1, max_size=80)


@given(_ints, st.integers(1, 4), st.sampled_from([0.02, 0.05, 0.2]), st.sampled_from(["global", "group"]),
       st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_root_plan_is_never_dearer_than_plain_stem(values, n_groups, eps, scope, ms):
    t = np.array(values, dtype=float) * 7.0
    g = np.arange(t.size) % n_groups
    res = stem_root(t, g, epsilon=eps, scope=scope, min_samples=ms)
    plain = stem_root(t, g, epsilon=eps, scope=scope, min_samples=ms, root=False)
    assert _tau(res) <= _tau(plain) * (1 + 1e-12)
    assert res.error_bound <= eps * (1 + 1e-9)
    _check_weights(res, t.size)


def _root_oracle(t, g, eps, z, ms, mg, scope):
    """Plain-Python ROOT by the price of variance (one leaf at a time), as an oracle.

    Leaves are sorted arrays; each pass prices every leaf's best 2-means cut at the
    current multiplier and applies the candidates (all, else the better half, ...)
    only when the re-allocated integer plan is cheaper; if none is, the EXACT_TRIES
    leaves with the best gains (after the one tried) are split one at a time and the
    cheapest integer plan taken, if it is cheaper.
    """
    from gclsampler.stem import EXACT_TRIES

    groups = sorted(set(g.tolist()), key=lambda k: int(np.flatnonzero(g == k)[0]))
    leaves = [(np.sort(t[g == k]), gi if scope == "group" else 0) for gi, k in enumerate(groups)]

    def stats(ls):
        return (np.array([x.size for x, _ in ls]), np.array([x.mean() for x, _ in ls]),
                np.array([x.std() for x, _ in ls]), np.array([u for _, u in ls]))

    def cost(ls):
        n, mu, sd, u = stats(ls)
        m, lam = stem_allocate(n, mu, sd, u, epsilon=eps, z=z, min_samples=ms)
        return float(np.dot(m, mu)), lam

    def phi(x, lam):
        n = x.size
        big_b = n**3 * x.std() ** 2 / (n - 1) if n > 1 else 0.0
        lo = min(ms, n)
        mc = min(max(lam * np.sqrt(big_b / x.mean()), lo), n) if x.mean() > 0 and big_b > 0 else lo
        return min(x.mean() * m + lam**2 * big_b * (1 / m - 1 / n) for m in {max(lo, math.floor(mc)), math.ceil(mc)})

    import math

    c0, lam = cost(leaves)
    while True:
        cands, every = [], []
        for i, (x, u) in enumerate(leaves):
            k = split_1d_2means(x, mg)
            if k is None or lam[u] <= 0:
                continue
            gain = phi(x, lam[u]) - phi(x[:k], lam[u]) - phi(x[k:], lam[u])
            every.append((-gain, i, k))
            if gain > 1e-12 * phi(x, lam[u]):
                cands.append((-gain, i, k))
        if not every:
            return leaves
        cands.sort(key=lambda c: c[0])
        every.sort(key=lambda c: c[0])
        size, done = len(cands), False
        while size >= 1:
            chosen = {i: k for _, i, k in cands[:size]}
            trial = []
            for i, (x, u) in enumerate(leaves):
                trial += [(x[:chosen[i]], u), (x[chosen[i]:], u)] if i in chosen else [(x, u)]
            c1, lam1 = cost(trial)
            if c1 < c0 * (1 - 1e-12):
                leaves, c0, lam, done = trial, c1, lam1, True
                break
            size //= 2
        if not done:  # no level of candidates: the next EXACT_TRIES leaves by gain, one split each, priced exactly
            tried = cands[0][1] if cands else None
            best = None
            for _, i, k in [c for c in every if c[1] != tried][:EXACT_TRIES]:
                (x, u) = leaves[i]
                trial = leaves[:i] + [(x[:k], u), (x[k:], u)] + leaves[i + 1:]
                c1, lam1 = cost(trial)
                if c1 < c0 * (1 - 1e-12) and (best is None or c1 < best[0]):
                    best = (c1, lam1, trial)
            if best is None:
                return leaves
            c0, lam, leaves = best


@pytest.mark.parametrize("eps, ms, mg, scope", [(0.05, 1, 2, "global"), (0.02, 30, 2, "group"), (0.1, 1, 5, "group"),
                                                (0.01, 3, 1, "global"), (0.005, 1, 2, "global")])
def test_vectorised_root_equals_plain_oracle(rng, eps, ms, mg, scope):
    t = np.concatenate([_two_peaks(rng, 1500), rng.gamma(2.0, 30.0, 800), np.round(rng.gamma(1.0, 5.0, 700))])
    g = np.repeat([0, 1, 2], [1500, 800, 700])
    res = stem_root(t, g, epsilon=eps, min_samples=ms, min_group=mg, scope=scope)
    oracle = _root_oracle(t, g, eps, 1.96, ms, mg, scope)
    assert res.n_leaves == len(oracle) > 3  # ROOT did split
    for grp in range(3):
        expected = [x.size for x, _ in sorted(((x, u) for x, u in oracle if np.all(np.isin(x, t[g == grp]))),
                                              key=lambda p: p[0].min())]
        leaves = np.flatnonzero(res.leaf_group == grp)
        got = [int(res.leaf_sizes[k]) for k in sorted(leaves, key=lambda k: t[res.leaf == k].min())]
        assert got == expected


def test_chunked_levels_give_the_same_leaves(rng, monkeypatch):
    import gclsampler.stem as stem_mod

    t = np.concatenate([_two_peaks(rng, 2000), rng.gamma(2.0, 30.0, 1500)])
    g = rng.integers(0, 9, t.size)
    for scope in ("global", "group"):
        whole = stem_root(t, g, epsilon=0.02, random_state=4, scope=scope)
        monkeypatch.setattr(stem_mod, "_CHUNK", 64)
        chunked = stem_root(t, g, epsilon=0.02, random_state=4, scope=scope)
        monkeypatch.setattr(stem_mod, "_CHUNK", 1 << 20)
        np.testing.assert_array_equal(whole.leaf, chunked.leaf)
        np.testing.assert_array_equal(whole.invocations, chunked.invocations)


def test_root_never_mixes_groups_and_respects_min_group(rng):
    t = rng.gamma(1.5, 20.0, 5000)
    g = rng.integers(0, 7, 5000)
    res = stem_root(t, g, epsilon=0.02, min_group=25)
    for leaf in range(res.n_leaves):
        members = res.leaf == leaf
        assert np.unique(g[members]).size == 1
        assert g[members][0] == res.leaf_group[leaf]
        if res.n_leaves > 7 and (res.leaf_group == res.leaf_group[leaf]).sum() > 1:
            assert members.sum() >= 25


# ---- the plan ---------------------------------------------------------------------------
def _check_weights(res, n):
    assert np.all(np.diff(res.invocations) > 0)
    assert res.weights.sum() == pytest.approx(n, rel=1e-12)
    per_leaf = np.bincount(res.leaf[res.invocations], weights=res.weights, minlength=res.n_leaves)
    np.testing.assert_allclose(per_leaf, res.leaf_sizes, rtol=1e-12)
    assert np.all(res.leaf_sizes == np.bincount(res.leaf, minlength=res.n_leaves))


def test_leaf_ids_follow_first_invocation(rng):
    t = rng.gamma(2.0, 10.0, 3000)
    g = rng.integers(0, 5, 3000)
    res = stem_root(t, g, epsilon=0.03)
    firsts = [int(np.flatnonzero(res.leaf == k)[0]) for k in range(res.n_leaves)]
    assert firsts == sorted(firsts)
    _check_weights(res, t.size)


def test_constant_group_keeps_one_sample_and_its_weight(rng):
    """Reference bug: sigma = 0 gives m = 0, and the group vanishes from the estimate."""
    t = np.concatenate([np.full(500, 42.0), rng.normal(100, 20, 500)])
    g = np.repeat(["const", "noisy"], 500)
    res = stem_root(t, g, epsilon=0.05)
    const_leaves = np.flatnonzero(res.leaf_group == "const")
    assert const_leaves.size == 1
    c = const_leaves[0]
    assert res.sample_sizes[c] == 1 and res.leaf_sizes[c] == 500
    sampled = res.invocations[res.leaf[res.invocations] == c]
    assert sampled.size == 1 and res.weights[res.invocations == sampled[0]][0] == 500
    _check_weights(res, t.size)


def test_all_zero_and_single_invocation_groups():
    t = np.array([0.0, 0.0, 0.0, 5.0])
    res = stem_root(t, ["z", "z", "z", "one"], epsilon=0.05)
    _check_weights(res, 4)
    assert res.estimate(t) == pytest.approx(5.0)
    assert res.error_bound == 0.0


def test_min_samples_clt_floor(rng):
    t = np.concatenate([rng.normal(100, 1, 2000), rng.normal(50, 1, 12)])
    g = np.repeat(["big", "small"], [2000, 12])
    res = stem_root(t, g, epsilon=0.05, min_samples=30, root=False)
    big, small = (np.flatnonzero(res.leaf_group == k)[0] for k in ("big", "small"))
    assert res.sample_sizes[big] >= 30 and not res.leaf_census[big]
    assert res.leaf_census[small] and res.sample_sizes[small] == 12  # capped at the group size
    small_inv = np.flatnonzero(g == "small")
    assert set(small_inv) <= set(res.invocations)
    assert np.all(res.weights[np.isin(res.invocations, small_inv)] == 1.0)
    _check_weights(res, t.size)
    one = stem_root(t, g, epsilon=0.05, min_samples=1, root=False)
    assert one.sample_sizes[big] < 30


def test_seeded_and_reproducible(rng):
    t = rng.gamma(2.0, 10.0, 4000)
    g = rng.integers(0, 4, 4000)
    a = stem_root(t, g, epsilon=0.1, random_state=7)
    b = stem_root(t, g, epsilon=0.1, random_state=7)
    c = stem_root(t, g, epsilon=0.1, random_state=8)
    assert not a.leaf_census.all()
    for f in ("invocations", "weights", "leaf", "sample_sizes"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.invocations, c.invocations)
    np.testing.assert_array_equal(a.leaf, c.leaf)  # ROOT itself is deterministic


@given(st.floats(1e-3, 1e3))
@settings(max_examples=20, deadline=None)
def test_non_integer_times_and_scale_invariance(scale):
    rng = np.random.default_rng(3)
    t = rng.gamma(2.0, 1.7, 600)  # fractional values, e.g. microseconds
    g = rng.integers(0, 3, 600)
    a = stem_root(t, g, epsilon=0.05, random_state=1)
    b = stem_root(t * scale, g, epsilon=0.05, random_state=1)
    np.testing.assert_array_equal(a.leaf, b.leaf)
    np.testing.assert_array_equal(a.sample_sizes, b.sample_sizes)
    np.testing.assert_array_equal(a.invocations, b.invocations)
    assert a.error_bound == pytest.approx(b.error_bound, rel=1e-9)


@pytest.mark.parametrize("top", [1e300, 1.7e308])
def test_times_near_the_float_limit_give_the_plan_of_ordinary_times(top):
    """Scaling by a power of two changes nothing but the unit, up to the largest finite time."""
    rng = np.random.default_rng(5)
    t = rng.gamma(2.0, 1.7, 300)
    g = rng.integers(0, 3, 300)
    big = t / t.sum() * top  # the total stays finite
    a = stem_root(t, g, epsilon=0.05, random_state=1)
    b = stem_root(big, g, epsilon=0.05, random_state=1)
    np.testing.assert_array_equal(a.sample_sizes, b.sample_sizes)
    np.testing.assert_array_equal(a.invocations, b.invocations)


def _group_leaves(res, name):
    """The leaves of group ``name`` in ``res``: sizes, draws, std and own bounds, by first member."""
    ids = sorted(np.flatnonzero(res.leaf_group == name), key=lambda k: int(np.flatnonzero(res.leaf == k)[0]))
    return (res.leaf_sizes[ids], res.sample_sizes[ids], res.leaf_std[ids], res.leaf_error_bound[ids])


@pytest.mark.parametrize("factor", [1e-160, 1e-200])
@pytest.mark.parametrize("root", [False, True])
def test_group_10_160_below_another_is_sized_as_alone(root, factor):
    """Scope group: a group whose times lie 1e160 below another's keeps its spread.

    With one scale for all times its squares underflowed, so its leaves looked constant
    (one draw each, spread and own bound 0). Each leaf is now measured in its own power
    of two, and each group is allocated in its own: the plan of the small group is the
    one it gets alone, at an ordinary scale.
    """
    rng = np.random.default_rng(0)
    small = rng.gamma(2.0, 1.0, 2000)
    t = np.concatenate([rng.gamma(2.0, 50.0, 2000), small * factor])
    g = np.repeat(["big", "small"], 2000)
    alone = stem_root(small, np.repeat(["small"], 2000), root=root, scope="group")
    both = stem_root(t, g, root=root, scope="group")
    n0, m0, sd0, e0 = _group_leaves(alone, "small")
    n1, m1, sd1, e1 = _group_leaves(both, "small")
    np.testing.assert_array_equal(n1, n0)
    np.testing.assert_array_equal(m1, m0)
    np.testing.assert_allclose(sd1 / factor, sd0, rtol=1e-12)
    np.testing.assert_allclose(e1, e0, rtol=1e-12)
    assert (e1 > 0).all()


@given(st.lists(st.integers(-1000, 1000), min_size=2, max_size=3), st.integers(0, 2**32 - 1),
       st.sampled_from([0.01, 0.05, 0.2]))
@settings(max_examples=30, deadline=None)
def test_group_scope_allocation_does_not_depend_on_other_groups_magnitudes(exps, seed, eps):
    """Scope group, plain STEM: each group is its own unit, so its draws, spread and bound are
    those it gets alone, whatever power of two (2^-1000 .. 2^1000) the other groups sit at.

    Each group's times have their largest in [1, 2) before scaling by 2^k, so the group alone
    is at an ordinary scale and the scaled one differs from it only by an exact power of two.
    """
    rng = np.random.default_rng(seed)
    parts, alone = [], []
    for k in exps:
        n = int(rng.integers(2, 400))
        x = np.where(rng.random(n) < 0.3, rng.uniform(0.25, 0.5, n), rng.uniform(0.9, 1.0, n))
        x = np.round(x * 2.0**20) / 2.0**20  # some equal times
        x = x / x.max() * 1.5  # >= 1/4, so x 2^-1000 is still a normal float
        parts.append(np.ldexp(x, k))
        alone.append(stem_root(x, None, epsilon=eps, root=False, scope="group"))
    t = np.concatenate(parts)
    g = np.repeat(np.arange(len(exps)), [p.size for p in parts])
    res = stem_root(t, g, epsilon=eps, root=False, scope="group")
    for i, (k, a) in enumerate(zip(exps, alone)):
        j = np.flatnonzero(res.leaf_group == i)
        np.testing.assert_array_equal(res.sample_sizes[j], a.sample_sizes)
        np.testing.assert_array_equal(res.leaf_std[j], np.ldexp(a.leaf_std, k))
        np.testing.assert_array_equal(res.leaf_error_bound[j], a.leaf_error_bound)
    assert res.error_bound <= eps * (1 + 1e-9)


def test_leaf_far_below_the_rest_of_its_unit_keeps_its_spread(rng):
    """Scope global, and ROOT leaves inside one group: a leaf 1e160 (or 1e300) below the unit's
    largest time is negligible to the unit's allocation, but its reported spread and own bound
    are its own (they were 0 when every leaf shared one scale)."""
    def std(x):  # the population std of x, computed at an ordinary scale
        s = np.ldexp(1.0, -np.frexp(x.max())[1])
        return (x * s).std() / s

    t = np.concatenate([rng.gamma(2.0, 50.0, 2000), rng.gamma(2.0, 1.0, 2000) * 2.0**-600])
    g = np.repeat(["big", "small"], 2000)
    one = np.concatenate([rng.normal(100, 10, 500) * 1e150, rng.gamma(2.0, 1.0, 500) * 1e-150])
    for times, groups in ((t, g), (one, None)):
        res = stem_root(times, groups, scope="global")
        ref = np.array([std(times[res.leaf == k]) for k in range(res.n_leaves)])
        np.testing.assert_allclose(res.leaf_std, ref, rtol=1e-12)
        tiny = res.leaf_mean < 1e-100
        assert tiny.any() and (res.leaf_std[tiny] > 0).all() and (res.leaf_error_bound[tiny] > 0).all()
        assert (res.sample_sizes[tiny] == 1).all()  # at its lower bound: nothing of the total
        assert 0 < res.error_bound <= 0.05


def test_gcl_cluster_bounds_of_a_group_far_below_the_others():
    """gcl_stem's per-cluster bound is a ratio: a cluster 1e170 below another gets its own."""
    from gclsampler.samplers import _group_error_bounds

    rng = np.random.default_rng(2)
    small = rng.gamma(2.0, 1.0, 1500)
    t = np.concatenate([rng.gamma(2.0, 50.0, 1500), small * 1e-170])
    g = np.repeat([0, 1], 1500)
    both = _group_error_bounds(stem_root(t, g, scope="group"), 2)
    alone = _group_error_bounds(stem_root(small, np.ones(1500, dtype=np.int64), scope="group"), 2)
    assert both[1] > 0
    assert both[1] == pytest.approx(alone[1], rel=1e-12)


def test_error_bound_at_most_epsilon_and_matches_definition(rng):
    t = np.concatenate([_two_peaks(rng, 3000), rng.gamma(2.0, 30.0, 2000)])
    g = np.repeat([0, 1], [3000, 2000])
    for scope in ("group", "global"):
        res = stem_root(t, g, epsilon=0.03, scope=scope)
        assert 0 < res.error_bound <= 0.03 + 1e-12
        var = np.sum(_fpc_var(res.sample_sizes, res.leaf_sizes, res.leaf_std))
        assert res.error_bound == pytest.approx(1.96 * np.sqrt(var) / t.sum(), rel=1e-9)


def test_group_scope_bounds_every_group(rng):
    t = np.concatenate([rng.normal(1000, 300, 3000).clip(1), rng.gamma(4.0, 2.5, 3000)])
    g = np.repeat(["large", "tiny"], 3000)
    res = stem_root(t, g, epsilon=0.05, root=False, scope="group")
    for name in ("large", "tiny"):
        k = np.flatnonzero(res.leaf_group == name)[0]
        assert res.leaf_error_bound[k] <= 0.05 + 1e-12
    glob = stem_root(t, g, epsilon=0.05, root=False, scope="global")
    assert glob.sample_sizes.sum() < res.sample_sizes.sum()
    # with ROOT, a group's bound is stratified over its leaves; each is at most epsilon
    t2 = np.concatenate([_two_peaks(rng, 3000), rng.gamma(4.0, 2.5, 3000)])
    res = stem_root(t2, g, epsilon=0.05, scope="group")
    for name in ("large", "tiny"):
        k = res.leaf_group == name
        var = _fpc_var(res.sample_sizes[k], res.leaf_sizes[k], res.leaf_std[k]).sum()
        assert 1.96 * np.sqrt(var) / t2[g == name].sum() <= 0.05 * (1 + 1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(times=[1.0, -2.0]), r"times\[1\]: execution time must be finite and >= 0"),
        (dict(times=[1.0, np.nan]), r"times\[1\]"),
        (dict(times=[]), "times: no invocations"),
        (dict(times=[1.0, 2.0], groups=["a"]), "groups: length 1 differs"),
        (dict(times=[1.0], epsilon=0), "stem.epsilon"),
        (dict(times=[1.0], z=-1), "stem.z"),
        (dict(times=[1.0], min_samples=0), "stem.min_samples"),
        (dict(times=[1.0], min_group=0), "stem.min_group"),
        (dict(times=[1.0], scope="world"), "stem.scope"),
        (dict(times=[[1.0]]), "times: expected a 1-D array"),
        (dict(times=np.array([True, False, True])), "times: booleans"),  # were read as 1/0
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(StemError, match=match) as err:
        stem_root(**kwargs)
    assert isinstance(err.value, GclError)


def test_config_defaults_are_the_papers():
    cfg = StemConfig()
    assert (cfg.epsilon, cfg.z, cfg.min_samples, cfg.root, cfg.scope) == (0.05, 1.96, 1, True, "global")


def test_groups_may_be_strings_ints_or_series(rng):
    t = rng.gamma(2.0, 10.0, 300)
    names = np.array(["a", "b", "c"])[rng.integers(0, 3, 300)]
    a = stem_root(t, names, random_state=2)
    b = stem_root(t, pd.Series(names), random_state=2)
    c = stem_root(t, pd.factorize(names)[0], random_state=2)
    np.testing.assert_array_equal(a.invocations, b.invocations)
    np.testing.assert_array_equal(a.invocations, c.invocations)


@pytest.mark.parametrize("n_groups", [3, 5000])
def test_group_time_order_is_the_total_order(rng, n_groups):
    from gclsampler.stem import _group_time_order

    t = np.round(rng.gamma(2.0, 10.0, 20000))  # many ties
    c = rng.integers(0, n_groups, t.size)
    np.testing.assert_array_equal(_group_time_order(t, c, n_groups), np.lexsort((np.arange(t.size), t, c)))


# ---- drawing without replacement -------------------------------------------------------------
@given(st.lists(st.floats(0.0, 1e4), min_size=1, max_size=300), st.integers(1, 6), st.integers(0, 2**31),
       st.sampled_from([0.01, 0.05, 0.3]), st.integers(1, 40))
@settings(max_examples=80, deadline=None)
def test_every_invocation_accounted_for_and_draws_distinct(values, n_groups, seed, eps, ms):
    t = np.array(values)
    g = np.arange(t.size) % n_groups
    res = stem_root(t, g, epsilon=eps, min_samples=ms, random_state=seed)
    _check_weights(res, t.size)
    # every leaf holds exactly its draws, each weighing N_i / m_i; every invocation is in one leaf
    leaf_of = res.leaf[res.invocations]
    np.testing.assert_array_equal(np.bincount(leaf_of, minlength=res.n_leaves), res.sample_sizes)
    np.testing.assert_allclose(res.weights, (res.leaf_sizes / res.sample_sizes)[leaf_of], rtol=1e-12)
    assert res.leaf.min() == 0 and res.leaf.max() == res.n_leaves - 1
    again = stem_draw(res, seed)
    np.testing.assert_array_equal(again[0], res.invocations)
    np.testing.assert_array_equal(again[1], res.weights)


@pytest.mark.parametrize("n, m", [(5, 2), (9, 7), (40, 3)])
def test_draw_gives_every_member_the_same_chance(n, m):
    """Both draw paths (sparse: redraw duplicates; dense: random keys) are uniform, m/n each."""
    from gclsampler.stem import StemResult

    res = StemResult(invocations=np.zeros(0, np.int64), weights=np.zeros(0), leaf=np.zeros(n, np.int64),
                     leaf_group=np.array([0]), leaf_sizes=np.array([n]), sample_sizes=np.array([m]),
                     error_bound=0.0, leaf_members=np.arange(n), leaf_start=np.array([0]))
    reps = 4000
    hits = np.zeros(n)
    for s in range(reps):
        inv, w = stem_draw(res, s)
        assert inv.size == m and np.unique(inv).size == m and np.allclose(w, n / m)
        hits[inv] += 1
    p = m / n
    assert np.all(np.abs(hits / reps - p) < 5 * np.sqrt(p * (1 - p) / reps))


def test_check_params_takes_numpy_integers_and_refuses_non_integers():
    """Review: the single check refused np.int64(30) for min_samples, which API callers pass."""
    from gclsampler.stem import StemError, check_params

    check_params(0.05, 1.96, np.int64(30), np.int32(2), "global")
    check_params(0.05, 1.96, 2.0, 1, "group")
    for bad in (0, 1.5, float("nan"), float("inf"), True, "3"):
        with pytest.raises(StemError, match=r"^stem\.min_samples: must be an integer >= 1"):
            check_params(0.05, 1.96, bad, 1, "global")


def test_a_split_the_price_test_rejects_is_still_taken_when_it_makes_the_plan_cheaper():
    """Times 7, 10, 12, 15, 16 at epsilon 0.5: the price test rejects the only cut, so ROOT
    kept one leaf with 2 draws (24 time units); the split with 1 + 1 draws costs 22.8."""
    res = stem_root(np.array([7.0, 10, 12, 15, 16]), epsilon=0.5)
    assert res.n_leaves == 2 and res.sample_sizes.tolist() == [1, 1]
    assert res.expected_sampled_time == pytest.approx(8.5 + 43 / 3)
    assert res.error_bound <= 0.5


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 120), peaks=st.integers(1, 3),
       eps=st.sampled_from([0.01, 0.05, 0.2, 0.5]), scope=st.sampled_from(["global", "group"]))
def test_no_single_further_split_makes_a_small_plan_cheaper(seed, n, peaks, eps, scope):
    """When every leaf with a cut is within ROOT's exact tries, its plan is a local optimum:
    splitting any one leaf by its 2-means cut and re-allocating does not lower the sampled time."""
    from gclsampler.stem import EXACT_TRIES, split_1d_2means

    rng = np.random.default_rng(seed)
    t = np.concatenate([rng.lognormal(rng.normal(0, 1), rng.uniform(0.01, 0.8), max(n // peaks, 2))
                        for _ in range(peaks)])
    g = np.arange(t.size) % 2
    res = stem_root(t, g, epsilon=eps, scope=scope)
    parts = [(np.sort(t[res.leaf == k]), int(res.leaf_group[k]) if scope == "group" else 0) for k in range(res.n_leaves)]

    def cost(ps):
        m, _ = stem_allocate(np.array([x.size for x, _ in ps]), np.array([x.mean() for x, _ in ps]),
                             np.array([x.std() for x, _ in ps]), np.array([u for _, u in ps]), epsilon=eps)
        return float(np.dot(m, [x.mean() for x, _ in ps]))

    c0 = cost(parts)
    assert c0 == pytest.approx(res.expected_sampled_time, rel=1e-9)
    cuts = [(i, split_1d_2means(x, 2)) for i, (x, _) in enumerate(parts)]
    cuts = [(i, k) for i, k in cuts if k is not None]
    if len(cuts) > EXACT_TRIES + 1:
        return
    for i, k in cuts:
        x, u = parts[i]
        assert cost(parts[:i] + [(x[:k], u), (x[k:], u)] + parts[i + 1:]) >= c0 * (1 - 1e-9), i


# ---- round-4 mutation gaps ------------------------------------------------------------------
def test_eq3_zero_mean_and_exact_integer_sizes():
    """Eq. 3 is never below 1, also for a cluster whose times are all 0 (mu = 0: nothing to divide
    by); and where (z sigma / (epsilon mu))^2 is an integer in exact arithmetic, float rounding
    (9.000000000000004 for 1.5 * 0.1 / (0.01 * 5)) must not add a draw."""
    from fractions import Fraction

    assert stem_sample_size(0.0, 0.0) == 1
    for mu, sigma, eps, z in [(5, "0.1", "0.01", "1.5"), (1, "0.1", "0.01", "1.5"), (2, "0.2", "0.01", "1.5"),
                              (5, "0.2", "0.01", "1.5"), (5, "0.2", "0.02", "1.5")]:
        exact = (Fraction(z) * Fraction(sigma) / (Fraction(eps) * mu)) ** 2
        assert exact.denominator == 1
        assert stem_sample_size(float(mu), float(sigma), float(eps), float(z)) == int(exact)


def test_allocation_meets_the_bound_when_min_samples_exceeds_a_small_leaf():
    """A leaf smaller than min_samples is taken whole (zero variance): its draws are capped at its
    size, and its large spread must not count as slack that lets another leaf stay under-sampled."""
    n = np.array([2, 10_000])
    mu = np.array([1e4, 1.0])
    sd = np.array([1e4, 5.0])  # leaf 0: times 0 and 2e4, as spread as two times can be
    for eps in (0.05, 0.1):
        m, _ = stem_allocate(n, mu, sd, epsilon=eps, min_samples=40)
        assert m[0] == 2 and m[1] >= 40
        c = (eps * np.dot(n, mu) / 1.96) ** 2
        assert _fpc_var(m, n, sd).sum() <= c * (1 + 1e-9)
    t = np.concatenate([[0.0, 2e4], np.where(np.arange(10_000) % 100 == 0, 100.0, 0.0)])
    res = stem_root(t, np.repeat([0, 1], [2, 10_000]), epsilon=0.05, min_samples=40, root=False)
    assert res.sample_sizes[0] == 2 and res.error_bound <= 0.05 * (1 + 1e-9)


@given(leaf_rows, st.floats(0.005, 0.3), st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_multiplier_is_the_feasible_edge_of_the_continuous_constraint(rows, eps, ms):
    """lam is the smallest multiplier whose continuous (unrounded) draws meet each unit's bound:
    feasible at lam, infeasible just below it (bisection to double precision, feasible side)."""
    n = np.array([r[0] for r in rows])
    mu = np.array([r[1] for r in rows])
    sd = mu * np.array([r[2] for r in rows])
    unit = np.unique(np.array([r[3] for r in rows]), return_inverse=True)[1]
    _, lam = stem_allocate(n, mu, sd, unit, epsilon=eps, z=1.96, min_samples=ms)
    nf = n.astype(float)
    big_b = np.where(n > 1, n**3 * sd**2 / np.maximum(n - 1, 1), 0.0)
    lo = np.minimum(ms, nf)
    r = np.sqrt(big_b / mu)
    for u in np.unique(unit):
        sel = unit == u
        cap = (eps * np.dot(nf[sel], mu[sel]) / 1.96) ** 2 + np.sum(big_b[sel] / nf[sel])

        def g(x, sel=sel):
            return np.sum(big_b[sel] / np.clip(x * r[sel], lo[sel], nf[sel]))

        if lam[u] == 0:
            assert g(0.0) <= cap * (1 + 1e-12)  # every leaf at its lower bound already meets it
            continue
        assert g(lam[u]) <= cap * (1 + 1e-12)
        assert g(lam[u] * (1 - 1e-9)) > cap


def test_2means_ties_go_to_the_leftmost_cut_as_in_root():
    """split_1d_2means (the public cut, and the test oracle's) breaks ties like ROOT's vectorised
    cut: the leftmost best. 0, 1, 1, 2 has two equally good cuts, after the 0 and before the 2."""
    from gclsampler.stem import _new_leaves

    rng = np.random.default_rng(0)
    cases = [np.array([0.0, 1.0, 1.0, 2.0])]
    cases += [np.sort(np.concatenate([-v, v])) for v in (rng.integers(1, 6, 7).astype(float) for _ in range(20))]
    for x in cases:
        for mg in (1, 2):
            k = split_1d_2means(x, mg)
            lv = _new_leaves(x, np.array([0]), np.array([x.size]), np.array([0]), mg)
            assert (k is not None) == bool(lv.has[0])
            if k is not None:
                assert k == int(lv.cut[0])
    assert split_1d_2means(np.array([0.0, 1.0, 1.0, 2.0])) == 1


def _small_mixture(seed):
    rng = np.random.default_rng(seed)
    n, peaks = int(rng.integers(4, 150)), int(rng.integers(1, 5))
    t = np.concatenate([rng.lognormal(rng.normal(0, 1.5), rng.uniform(0.01, 0.8), max(n // peaks, 2))
                        for _ in range(peaks)])
    g = rng.integers(0, int(rng.integers(1, 6)), t.size)
    return t, g, [0.01, 0.05, 0.2, 0.5][seed % 4], ["global", "group"][(seed // 4) % 2], int(rng.integers(1, 4))


def _leaf_sizes_by_group(leaves, t, g):
    """Sorted (group, min time, size) of leaves given as arrays of their times."""
    out = []
    for x in leaves:
        grp = int(g[np.flatnonzero(np.isin(t, x))[0]])
        out.append((grp, float(x.min()), int(x.size)))
    return sorted(out)


def test_vectorised_root_equals_plain_oracle_on_small_mixtures():
    """The oracle comparison over many small mixtures of few groups, where ROOT's later steps
    matter: the better half of the candidates when all of them do not lower the plan, and a split
    taken only when it makes the plan strictly cheaper."""
    for seed in range(240):
        t, g, eps, scope, ms = _small_mixture(seed)
        res = stem_root(t, g, epsilon=eps, scope=scope, min_samples=ms)
        oracle = _root_oracle(t, g, eps, 1.96, ms, 2, scope)
        got = _leaf_sizes_by_group([np.sort(t[res.leaf == k]) for k in range(res.n_leaves)], t, g)
        assert got == _leaf_sizes_by_group([x for x, _ in oracle], t, g), seed


def test_small_plans_are_local_optima_up_to_the_documented_16_tries():
    """docs/stem.md: when no level is accepted, the EXACT_TRIES (16) leaves with the best gains are
    tried one at a time, so a plan with at most 16 leaves that have a cut admits no cheaper single
    split. (The hypothesis test above reads the constant from the module; this pins the 16.)"""
    def cost(ps, eps, ms):
        n = np.array([x.size for x, _ in ps])
        mu = np.array([x.mean() for x, _ in ps])
        u = np.unique(np.array([u for _, u in ps]), return_inverse=True)[1]
        m, _ = stem_allocate(n, mu, np.array([x.std() for x, _ in ps]), u, epsilon=eps, min_samples=ms)
        return float(np.dot(m, mu))

    for seed in range(240):
        t, g, eps, scope, ms = _small_mixture(seed)
        res = stem_root(t, g, epsilon=eps, scope=scope, min_samples=ms)
        parts = [(np.sort(t[res.leaf == k]), int(res.leaf_group[k]) if scope == "group" else 0)
                 for k in range(res.n_leaves)]
        c0 = cost(parts, eps, ms)
        cuts = [(i, k) for i, (x, _) in enumerate(parts) if (k := split_1d_2means(x, 2)) is not None]
        if len(cuts) > 16:
            continue
        for i, k in cuts:
            x, u = parts[i]
            assert cost(parts[:i] + [(x[:k], u), (x[k:], u)] + parts[i + 1:], eps, ms) >= c0 * (1 - 1e-9), (seed, i)


def test_out_of_range_bound_and_overflowing_totals_are_refused():
    """epsilon 1 (100 %) bounds nothing; z's documented range [0.01, 40] is inclusive; times whose
    total overflows float64 are refused with the unit advice rather than planned."""
    from gclsampler.stem import Z_RANGE, check_bound

    with pytest.raises(StemError, match="stem.epsilon"):
        stem_root([1.0, 2.0], epsilon=1.0)
    for z in Z_RANGE:
        check_bound(0.05, z)
        stem_root([1.0, 2.0, 4.0], z=z)
    with pytest.raises(StemError, match="total overflows"):
        stem_root([1e308, 1.5e308, 1.7e308])


def test_missing_group_labels_form_a_group_of_their_own():
    """None/NaN labels (a profile row without a kernel name) are one group, never mixed with the
    named ones, and every invocation is still in the plan's leaves and weights."""
    rng = np.random.default_rng(1)
    t = rng.gamma(2.0, 10.0, 300)
    names = np.array(["a", "b", None], dtype=object)[rng.integers(0, 3, 300)]
    for groups in (names, pd.Series(names), pd.Series(np.where(pd.isna(names), np.nan, names))):
        res = stem_root(t, groups, epsilon=0.05, random_state=0)
        _check_weights(res, t.size)
        missing = pd.isna(pd.Series(names)).to_numpy()
        for leaf in range(res.n_leaves):
            members = res.leaf == leaf
            assert missing[members].all() or not missing[members].any()
            assert pd.isna(res.leaf_group[leaf]) == missing[members][0]
        assert pd.isna(pd.Series(res.leaf_group, dtype=object)).any()


def test_min_group_default_is_2_and_keeps_a_lone_outlier():
    """docs/stem.md: min_group defaults to 2 (config, function and sampler alike), which keeps a
    lone slow first launch in its leaf: 999 equal times and one 30x outlier stay one leaf, while
    min_group=1 cuts the outlier off and needs far fewer draws."""
    from gclsampler.stem import StemRootSampler

    assert StemConfig().min_group == 2 == StemRootSampler().get_params()["min_group"]
    t = np.concatenate([[30.0], np.ones(999)])
    default = stem_root(t, epsilon=0.05)
    assert default.n_leaves == 1
    np.testing.assert_array_equal(default.sample_sizes, stem_root(t, epsilon=0.05, min_group=2).sample_sizes)
    one = stem_root(t, epsilon=0.05, min_group=1)
    assert one.n_leaves == 2 and one.sample_sizes.sum() < default.sample_sizes.sum()


@pytest.mark.parametrize("e", [0, -1060, -1070])
def test_a_zero_leaf_beside_subnormal_times_changes_nothing(e):
    """Times scaled by a power of two give the same plan, down to subnormal times, also when an
    all-zero group shares the unit (its scale 1 against a tiny unit scale must not overflow)."""
    base = np.array([0.0, 0.0, 1.0, 2.0, 3.0, 5.0])
    g = ["zero", "zero", "b", "b", "b", "b"]
    ref = stem_root(base, g, epsilon=0.05)
    res = stem_root(np.ldexp(base, e), g, epsilon=0.05)
    np.testing.assert_array_equal(res.sample_sizes, ref.sample_sizes)
    assert res.error_bound == pytest.approx(ref.error_bound)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_a_seed_numpy_refuses_is_one_error_naming_random_state(seed):
    """random_state -1 reached numpy.random.default_rng after ROOT: its bare "expected non-negative
    integer" (ValueError) named no parameter; 1.5 and "0" were TypeErrors, True seeded as 1."""
    t = np.random.default_rng(0).lognormal(3, 1, 200)
    with pytest.raises(StemError, match=r"^random_state: must be an integer >= 0"):
        stem_root(t, random_state=seed)
    res = stem_root(t, random_state=0)
    with pytest.raises(StemError, match=r"^random_state: must be an integer >= 0"):
        stem_draw(res, seed)
    for ok in (None, 0, np.int64(7), 2**40, np.random.default_rng(1)):  # what default_rng takes still works
        _, w = stem_draw(res, ok)
        assert w.sum() == pytest.approx(t.size)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(sizes=[0, 10]), "sizes[0]"),  # the budget was NaN: leaf 1 got 1 draw for a 5 % bound
    (dict(sizes=[2.5, 10]), "sizes[0]"),
    (dict(sigma=[1.0, -30.0]), "sigma[1]"),  # squared into draws
    (dict(mu=[np.inf, 100.0]), "mu[0]"),
    (dict(units=[0, -1]), "units[1]"),
    (dict(units=[0]), "one length"),
    (dict(epsilon=5.0), "stem.epsilon"),  # 1 draw: a bound of 500 % bounds nothing
    (dict(min_samples=0), "stem.min_samples"),
])
def test_allocate_refuses_what_has_no_allocation(kwargs, needle):
    args = dict(sizes=[5, 10_000], mu=[1.0, 100.0], sigma=[1.0, 30.0])
    args.update(kwargs)
    with pytest.raises(StemError, match=re.escape(needle)):
        stem_allocate(args.pop("sizes"), args.pop("mu"), args.pop("sigma"), args.pop("units", None), **args)
    m, _ = stem_allocate([5, 10_000], [1.0, 100.0], [1.0, 30.0])  # the same leaves, in range
    assert m[1] > 100


@pytest.mark.parametrize("method", ["stem_root", "gcl_stem"])
def test_plans_of_many_leaves_do_not_depend_on_the_blas_thread_count(method):
    """np.dot hands vectors past about 10,000 elements to BLAS threads, which round the sum in
    another order: stem_root's error bound and gcl_stem's strata costs (so plan.json's bytes)
    changed with OMP_NUM_THREADS once a plan had that many leaves."""
    import os

    from threadpoolctl import threadpool_limits

    from gclsampler.samplers import make_sampler
    from gclsampler.workload import Workload

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: BLAS has no second thread to split a sum across")
    g = 15000
    t = np.random.default_rng(0).gamma(2.0, 1000.0, 3 * g)
    prof = pd.DataFrame({"invocation": np.arange(3 * g), "kernel_name": [f"k{i % g}" for i in range(3 * g)],
                         "time_ns": t, "cycles": t})
    wl = Workload("w", prof, embeddings=np.ones((3 * g, 8), np.float32))
    params = {"epsilon": 0.05}  # gcl_stem: strata auto, whose costs (strata_expected_time) it records
    docs = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            docs.append(make_sampler(method, **params).fit(wl).to_dict())
    assert docs[0] == docs[1]
