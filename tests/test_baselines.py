"""Baselines (PKA, Sieve, Random, Allegro) on in-memory profiles built here."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.baselines import (
    BASELINES,
    AllegroSampler,
    BaselineError,
    PkaSampler,
    RandomSampler,
    SieveSampler,
    allegro_m_min,
    allegro_partition,
    kde_split,
    sieve_tiers,
    silverman_bandwidth,
)
from gclsampler.workload import Workload

PKA_METRICS = [
    "pka_coalesced_global_loads", "pka_coalesced_global_stores", "pka_coalesced_local_loads",
    "pka_thread_global_loads", "pka_thread_global_stores", "pka_thread_local_loads",
    "pka_thread_shared_loads", "pka_thread_shared_stores", "pka_thread_global_atomics",
    "pka_instructions", "pka_divergence_efficiency", "pka_thread_blocks",
]


def make_profile(n: int = 200, seed: int = 0, n_names: int = 4) -> pd.DataFrame:
    """A profile with every column: a few kernel names, each with 1-3 behaviour modes."""
    rng = np.random.default_rng(seed)
    name_id = rng.integers(0, n_names, n)
    mode = rng.integers(0, 3, n) * (name_id % 2)  # odd names are multi-modal
    base = (name_id + 1) * 1e5 * (1 + 2.0 * mode)
    inst = np.round(base * (1 + 0.01 * rng.standard_normal(n)))
    time_ns = inst / 50 * (1 + 0.02 * rng.standard_normal(n))
    grid_x = np.where(mode == 0, 64, 128) * (name_id + 1)
    df = pd.DataFrame({
        "invocation": np.arange(n),
        "kernel_name": [f"kern_{k}" for k in name_id],
        "grid": [f"({g},1,1)" for g in grid_x],
        "block": ["(256,1,1)"] * n,
        "time_ns": time_ns,
        "cycles": time_ns * 1.4,
        "ipc": rng.uniform(0.5, 3.0, n),
        "l1_hit_rate": rng.uniform(0.1, 0.9, n),
        "l2_hit_rate": rng.uniform(0.3, 0.95, n),
        "achieved_occupancy": rng.uniform(0.2, 1.0, n),
        "inst_executed": inst,
    })
    for j, m in enumerate(PKA_METRICS):
        df[m] = inst * (0.05 + 0.01 * j) * (1 + 0.001 * rng.standard_normal(n))
    df["pka_thread_blocks"] = grid_x.astype(float)
    return df


def wl(df: pd.DataFrame, name: str = "toy") -> Workload:
    return Workload(name=name, profile=df, arch="turing", synthetic=True)


@pytest.mark.parametrize("method", sorted(BASELINES))
@pytest.mark.parametrize("seed", [0, 1])
def test_every_baseline_accounts_for_every_invocation(method, seed):
    df = make_profile(150, seed)
    plan = BASELINES[method](random_state=seed).fit(wl(df))
    plan.validate()
    assert plan.n_invocations == len(df)
    assert math.isclose(plan.weights.sum(), len(df), rel_tol=1e-9)
    assert len(set(plan.invocations.tolist())) == len(plan.samples)
    assert plan.method == method and plan.synthetic
    # a plan is a set of real invocations with their own kernel names
    names = df["kernel_name"].to_numpy()
    assert all(s.kernel_name == names[s.invocation] for s in plan.samples)


@pytest.mark.parametrize("method", sorted(BASELINES))
def test_deterministic_under_seed(method):
    df = make_profile(120, 3)
    a = BASELINES[method](random_state=5).fit(wl(df)).to_json()
    b = BASELINES[method](random_state=5).fit(wl(df)).to_json()
    assert a == b


def test_stochastic_methods_change_with_seed():
    df = make_profile(300, 4)
    for cls in (RandomSampler, AllegroSampler):
        assert cls.stochastic
        plans = {tuple(cls(random_state=s).fit(wl(df)).invocations) for s in range(4)}
        assert len(plans) > 1


# ---------------------------------------------------------------------------------------- PKA
def _pka_profile(cycles: np.ndarray, feature: np.ndarray) -> pd.DataFrame:
    n = cycles.size
    df = pd.DataFrame({
        "invocation": np.arange(n), "kernel_name": ["k"] * n, "grid": ["(1,1,1)"] * n,
        "block": ["(32,1,1)"] * n, "time_ns": cycles.astype(float), "cycles": cycles.astype(float),
    })
    for m in PKA_METRICS:
        df[m] = feature.astype(float)
    return df


def test_pka_picks_smallest_k_under_target():
    # Three well-separated feature groups whose cycles differ; k=1 and k=2 project badly, k=3 exactly.
    feature = np.repeat([1.0, 100.0, 10000.0], 10)
    cycles = np.repeat([10.0, 1000.0, 50.0], 10)
    s = PkaSampler(target_error=0.05, random_state=0)
    plan = s.fit(wl(_pka_profile(cycles, feature)))
    assert s.k_ == 3
    assert all(s.errors_[k] >= 0.05 for k in (1, 2))
    assert s.errors_[3] < 0.05
    assert plan.config["target_met"] is True
    # first-chronological representatives
    assert sorted(plan.invocations.tolist()) == [0, 10, 20]


def test_pka_stops_at_first_k_even_if_larger_k_is_better():
    # cycles constant within groups except one outlier; k=1 already under a loose target
    feature = np.repeat([1.0, 50.0], 20)
    cycles = np.concatenate([np.full(20, 100.0), np.full(20, 104.0)])
    s = PkaSampler(target_error=0.05, random_state=0)
    s.fit(wl(_pka_profile(cycles, feature)))
    assert s.k_ == 1  # error 2% < 5%: smallest k, not the k=2 "oracle" with 0% error
    assert list(s.errors_) == [1]


def test_pka_fallback_when_target_unreachable():
    feature = np.arange(6, dtype=float)
    cycles = np.array([1000, 1, 1, 1, 1, 1], dtype=float)
    s = PkaSampler(target_error=1e-9, k_max=3, random_state=0)
    plan = s.fit(wl(_pka_profile(cycles, feature)))
    assert plan.config["target_met"] is False
    assert s.errors_[s.k_] == min(s.errors_.values())


@pytest.mark.parametrize("k_min", [3, 7])
def test_pka_k_min_beyond_the_distinct_points_starts_at_their_number(k_min):
    """Two distinct feature vectors: no K >= 3 exists, and the search tried none (min() of nothing)."""
    feature = np.repeat([1.0, 100.0], 4)
    cycles = np.repeat([10.0, 1000.0], 4)
    s = PkaSampler(target_error=0.05, k_min=k_min, k_max=max(k_min, 20), random_state=0)
    plan = s.fit(wl(_pka_profile(cycles, feature)))
    assert s.k_ == 2 and list(s.errors_) == [2]
    assert sorted(plan.invocations.tolist()) == [0, 4]


def test_pka_work_mean_takes_the_member_nearest_the_mean_instruction_count():
    # one cluster (k = 1 is under a loose target): mean pka_instructions 4 is invocation 4's
    feature = np.array([1.0, 2, 3, 10, 4])
    cycles = feature * 100
    first = PkaSampler(target_error=10.0).fit(wl(_pka_profile(cycles, feature)))
    mean = PkaSampler(target_error=10.0, representative="work_mean").fit(wl(_pka_profile(cycles, feature)))
    assert first.invocations.tolist() == [0] and mean.invocations.tolist() == [4]
    assert mean.config["representative"] == "work_mean" and "representative" not in first.config
    # ties (invocations 1 and 2 at the mean 3): gcl's nearest_mean_work, the later of the two
    tied = PkaSampler(target_error=10.0, representative="work_mean").fit(
        wl(_pka_profile(np.ones(4), np.array([1.0, 3, 3, 5]))))
    assert tied.invocations.tolist() == [2]


def test_pka_work_mean_rule_is_the_one_that_chooses_k():
    # cold first launches: each group's first cycles are 3x; k = 2 is the most k can be
    feature = np.repeat([1.0, 100.0], 10)
    cycles = np.tile(np.r_[30.0, np.full(9, 10.0)], 2)
    s_first, s_mean = PkaSampler(k_max=2), PkaSampler(k_max=2, representative="work_mean")
    s_first.fit(wl(_pka_profile(cycles, feature)))
    plan = s_mean.fit(wl(_pka_profile(cycles, feature)))
    assert s_first.errors_[2] == pytest.approx(1.5)  # 20 x 30 against 240
    assert s_mean.errors_[2] == pytest.approx(40 / 240)  # the middle launch of each tied group: 10
    assert sorted(plan.invocations.tolist()) == [5, 15]


def test_default_pka_and_sieve_plans_are_the_paper_rule_with_the_old_config():
    # representative="first" (pka) and "dominant_cta" (sieve) are the defaults, and a default pka
    # plan's config has no representative key: the bytes plans had before the option existed
    from gclsampler.baselines import _first_per_label
    from gclsampler.plan import plan_from_labels

    df = make_profile(150, 1)
    s = PkaSampler()
    plan = s.fit(wl(df))
    assert list(plan.config) == ["target_error", "k_min", "k_max", "pca_variance", "n_init", "random_state",
                                 "k", "target_met", "n_components", "projected_error"]
    expected = plan_from_labels("toy", "pka", s.labels_, _first_per_label(s.labels_, s.k_),
                                df["kernel_name"].to_numpy(), plan.config, True)
    assert plan.to_json() == expected.to_json()
    assert SieveSampler().fit(wl(df)).to_json() == SieveSampler(representative="dominant_cta").fit(wl(df)).to_json()


@pytest.mark.parametrize("cls", [PkaSampler, SieveSampler])
def test_representative_rule_is_checked(cls):
    with pytest.raises(BaselineError, match=r"representative: expected one of .*work_mean, found 'mean'"):
        cls(representative="mean").fit(wl(make_profile(30)))


def test_pka_drops_constant_metrics_whose_mean_rounds_off_them():
    """docs/evaluation.md: constant columns are dropped. Twenty launches with equal
    non-integer metrics have a float std of ~1e-11 (their mean is not exactly their value), so
    they were kept and PCA met zero total variance with a RuntimeWarning."""
    import warnings

    df = make_profile(20)
    same = df.iloc[[0] * 20].reset_index(drop=True)
    same["invocation"] = np.arange(20)
    same["cycles"] = np.linspace(90.0, 110.0, 20)
    assert (same[PKA_METRICS].to_numpy().std(axis=0) > 0).any()  # the premise: float noise
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = PkaSampler()
        plan = s.fit(wl(same))
    assert s.k_ == 1 and s.n_components_ == 1 and plan.invocations.tolist() == [0]


def test_pka_missing_metric_names_column():
    df = make_profile(30).drop(columns=["pka_thread_local_loads"])
    with pytest.raises(BaselineError, match="pka_thread_local_loads"):
        PkaSampler().fit(wl(df))


# -------------------------------------------------------------------------------------- Sieve
def test_sieve_tiers_by_cov():
    inst = np.array([5, 5, 5, 100, 101, 99, 100, 10, 1000, 10, 1000], dtype=float)
    names = np.array(["a"] * 3 + ["b"] * 4 + ["c"] * 4)
    group, tier = sieve_tiers(inst, names, cov_threshold=0.1)
    assert group.tolist() == [0] * 3 + [1] * 4 + [2] * 4
    assert tier.tolist() == [1, 2, 3]


def test_sieve_cov_equal_to_the_threshold_is_tier_2():
    """The tiers are CoV == 0, CoV <= threshold, larger: a name whose CoV is exactly the
    threshold has "little" variation and must not be sent to the KDE split of tier 3."""
    inst = np.array([9.0, 11.0])  # mean 10, population sd 1: CoV 0.1
    names = np.array(["k", "k"])
    assert sieve_tiers(inst, names, cov_threshold=0.1)[1].tolist() == [2]
    assert sieve_tiers(inst, names, cov_threshold=0.09)[1].tolist() == [3]


def test_sieve_dominant_cta_tie_goes_to_the_larger_cta_count():
    """SieveSampler's docstring: dominant_cta takes the first invocation with the stratum's
    most frequent CTA count, ties to the larger count. Two counts, twice each: the first
    launch with the larger count represents the stratum."""
    grids = ["(4,1,1)", "(16,1,1)", "(4,1,1)", "(16,1,1)"]
    n = len(grids)
    df = pd.DataFrame({"invocation": np.arange(n), "kernel_name": ["a"] * n, "grid": grids,
                       "block": ["(32,1,1)"] * n, "time_ns": [100.0] * n, "cycles": [100.0] * n,
                       "inst_executed": [500.0] * n})  # constant: one tier-1 stratum
    plan = SieveSampler().fit(wl(df))
    assert len(plan.clusters) == 1
    assert plan.invocations.tolist() == [grids.index("(16,1,1)")]


def test_kde_split_separates_modes_and_keeps_unimodal():
    rng = np.random.default_rng(0)
    a = rng.normal(1e6, 1e4, 60)
    b = rng.normal(5e6, 1e4, 40)
    x = np.concatenate([a, b])
    sub = kde_split(x)
    assert len(np.unique(sub)) == 2
    assert np.all(sub[:60] == 0) and np.all(sub[60:] == 1)
    assert len(np.unique(kde_split(rng.normal(1e6, 1e4, 200)))) == 1


def _grid_minima_split(x: np.ndarray, h: float, g: np.ndarray) -> np.ndarray:
    """Reference: sub-strata from the strict minima of the exact density on grid ``g``."""
    v, c = np.unique(x, return_counts=True)
    dens = np.concatenate([(c[None, :] * np.exp(-0.5 * ((part[:, None] - v[None, :]) / h) ** 2)).sum(axis=1)
                           for part in np.array_split(g, max(1, g.size // 20000))])
    sign = np.sign(np.diff(dens))
    nz = np.flatnonzero(sign != 0)
    cuts = [0.5 * (g[a + 1] + g[b]) for a, b in zip(nz[:-1], nz[1:]) if sign[a] < 0 and sign[b] > 0]
    return np.unique(np.searchsorted(cuts, x, side="right"), return_inverse=True)[1].reshape(-1)


def test_kde_split_finds_modes_a_coarse_grid_steps_over():
    # Silverman h = 26 over a range of 7e6: a 512-point grid (spacing 1.4e4) stepped over the
    # modes 1000 and 1100 and made them one stratum ([100, 3, 3])
    x = np.r_[np.full(50, 1000.0), np.full(50, 1100.0), np.full(3, 5e6), np.full(3, 7e6)]
    assert np.bincount(kde_split(x)).tolist() == [50, 50, 3, 3]
    assert kde_split(x).tolist() == [0] * 50 + [1] * 50 + [2] * 3 + [3] * 3


def test_kde_split_modes_of_very_different_sizes():
    # 2000 launches on five counts 1000..1004 (h = 0.29: 3.4 h apart, every count a mode, as
    # h = 1 splits every distinct value), one at 5e5, seven at 1e6 and 50 on two counts at 3e7:
    # a range of 1e8 h. The old grid gave [2008, 50]: the lone and the small modes were lost.
    x = np.r_[1000 + np.arange(2000) % 5, [5e5], np.full(7, 1e6), 3e7 + np.arange(50) % 2].astype(float)
    sub = kde_split(x)
    assert np.bincount(sub).tolist() == [400] * 5 + [1, 7, 25, 25]
    assert np.all(np.diff(sub[np.argsort(x, kind="stable")]) >= 0)  # ascending in x


@pytest.mark.parametrize("seed", range(6))
def test_kde_split_matches_a_fine_grid_of_the_exact_density(seed):
    # modes of very different widths and sizes over 11 to 1e5 bandwidths (the 512-point grid
    # is coarser than h/4 on all but one): a grid of h/16 over the exact density is the reference
    rng = np.random.default_rng(seed)
    parts = [np.round(rng.normal(c, sd, n)) for c, sd, n in
             zip(rng.uniform(0, 1e5, 4), rng.choice([3.0, 30.0, 300.0], 4), rng.choice([1, 5, 40, 400], 4))]
    x = np.concatenate(parts)
    h = silverman_bandwidth(x)
    g = np.arange(x.min(), x.max() + h / 16, h / 16)
    got, ref = kde_split(x), _grid_minima_split(x, h, g)
    assert got.max() == ref.max()
    assert np.mean(got == ref) >= 0.99  # a cut is placed to within a grid step of h/4


def test_kde_split_keeps_the_original_grid_where_it_resolves_h_over_4():
    # range + 6h <= 511 h/4: the 512 points over [min - 3h, max + 3h], as before
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = np.concatenate([rng.normal(c, 1.0, 30) for c in rng.uniform(0, 40, 3)])
        h = silverman_bandwidth(x)
        assert np.ptp(x) + 6 * h <= 511 * h / 4
        g = np.linspace(x.min() - 3 * h, x.max() + 3 * h, 512)
        assert np.array_equal(kde_split(x), _grid_minima_split(x, h, g))


def test_kde_split_cost_grows_with_the_input_not_its_range():
    # 200k counts 10 apart with h = 1 (a range of 2e6 h): every count its own stratum; a
    # 2e6 h-wide grid at h/4 spacing would be 8e6 points
    x = np.arange(200_000, dtype=float) * 10
    assert np.array_equal(kde_split(x, 1.0), np.arange(x.size))
    # counts 7.9 h apart share one grid of spacing h/4: still each its own mode
    y = np.arange(20_000, dtype=float) * 7.9
    assert np.array_equal(kde_split(y, 1.0), np.arange(y.size))


def test_kde_split_at_a_bandwidth_near_either_end_of_float64():
    """h = 5e-324 made the grid step h/4 zero (numpy's bare "repeats may not contain negative
    values"); h near 1e308 made min - 3h -inf and cast NaN grid indices to int64. The split is
    that of the same data at an ordinary h: every count its own mode, or one stratum."""
    import warnings

    x = np.array([3.0, 1e5, 1e5 + 1, 7e6, 7e6, 2e7])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for tiny in (5e-324, 1e-323, 1e-320, 2.0**-1000):
            assert kde_split(x, tiny).tolist() == [0, 1, 2, 3, 3, 4]
        for huge in (2.0**1000, 1e308, 1.7e308):
            assert kde_split(x, huge).tolist() == [0] * 6
        # a subnormal Silverman h from the profile's own counts (an IQR of 5e-324): the three
        # counts within a few h are one mode, as 0, 1, 2 at h = 1 are, and 1.0 is another
        d = 5e-324
        y = np.array([0, d, d, d, 2 * d, 2 * d, 2 * d, 1.0])
        assert silverman_bandwidth(y) == d
        assert kde_split(y).tolist() == [0] * 7 + [1]
        assert kde_split(np.array([0, 1, 1, 1, 2, 2, 2, 100.0]), 1.0).tolist() == [0] * 7 + [1]


@pytest.mark.parametrize("exp", [-1000, 1000])
@pytest.mark.parametrize("bandwidth", ["silverman", "scott", 3.0])
def test_sieve_strata_do_not_depend_on_the_unit_of_the_counts(exp, bandwidth):
    """Counts times 2^-1000 squared to 0 (every name tier 1, Silverman's h 0) and times 2^1000
    summed to inf (every name tier 3, h inf); a power of two changes no ratio of counts."""
    import warnings

    df = make_profile(200, 1)
    ref = SieveSampler(bandwidth=bandwidth)
    ref.fit(wl(df))
    df["inst_executed"] = np.ldexp(df["inst_executed"].to_numpy(), exp)
    got = SieveSampler(bandwidth=bandwidth if isinstance(bandwidth, str) else float(np.ldexp(bandwidth, exp)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got.fit(wl(df))
    assert got.tiers_.tolist() == ref.tiers_.tolist() and 3 in ref.tiers_
    assert np.array_equal(got.labels_, ref.labels_)


def test_silverman_bandwidth_matches_rule():
    x = np.array([1.0, 2, 3, 4, 10])
    sd = x.std(ddof=1)
    iqr = (np.percentile(x, 75) - np.percentile(x, 25)) / 1.34
    assert math.isclose(silverman_bandwidth(x), 0.9 * min(sd, iqr) * 5 ** -0.2)


def test_sieve_plan_on_crafted_strata():
    # name a: tier 1 (one stratum); name b: tier 3 with two instruction-count modes -> 2 strata.
    inst = np.array([7] * 5 + [1000] * 6 + [9000] * 6, dtype=float)
    inst[5:] += np.tile([0, 1, 2], 4)  # small jitter inside each mode
    n = inst.size
    grids = ["(4,1,1)"] * 5 + ["(8,1,1)", "(16,1,1)", "(16,1,1)", "(16,1,1)", "(8,1,1)", "(16,1,1)"] + ["(2,1,1)"] * 6
    df = pd.DataFrame({"invocation": np.arange(n), "kernel_name": ["a"] * 5 + ["b"] * 12, "grid": grids,
                       "block": ["(32,1,1)"] * n, "time_ns": inst, "cycles": inst, "inst_executed": inst})
    s = SieveSampler(cov_threshold=0.1)
    plan = s.fit(wl(df))
    assert s.tiers_.tolist() == [1, 3]
    assert len(plan.clusters) == 3
    # dominant CTA count of the 1000-mode is 16 -> first such invocation is 6, not 5
    assert sorted(plan.invocations.tolist()) == [0, 6, 11]
    assert sorted(SieveSampler(representative="first").fit(wl(df)).invocations.tolist()) == [0, 5, 11]
    # work_mean: the member nearest the stratum's mean count (1001, 9001: launches 6 and 9, 12
    # and 15, tied: the later; name a is constant: its middle launch 2)
    mean = SieveSampler(representative="work_mean").fit(wl(df))
    assert sorted(mean.invocations.tolist()) == [2, 9, 15] and mean.config["representative"] == "work_mean"
    # without KDE tier 3 stays one stratum
    assert len(SieveSampler(kde=False).fit(wl(df)).clusters) == 2



def test_sieve_bandwidth_is_checked_before_any_stratum_needs_it():
    # every name is tier 1 here, so no KDE runs: a misspelt rule used to pass unnoticed
    df = make_profile(12, 0)
    df["inst_executed"] = 100.0
    for bad in ("silvermann", True, 0, -1.0, float("nan")):
        with pytest.raises(BaselineError, match=r"^sieve: bandwidth: expected 'silverman' or 'scott' or a positive number"):
            SieveSampler(bandwidth=bad).fit(wl(df))
    for good in ("silverman", "scott", 3, 0.5):
        assert SieveSampler(bandwidth=good).fit(wl(df)).validate("sieve plan") is not None


# ------------------------------------------------------------------------------------- Random
@given(n=st.integers(1, 400), frac=st.floats(0.001, 1.0), seed=st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_random_weights_sum_to_n(n, frac, seed):
    df = make_profile(n, 0)
    plan = RandomSampler(fraction=frac, random_state=seed).fit(wl(df))
    m = max(1, min(n, round(frac * n)))
    assert len(plan.samples) == m
    assert np.allclose(plan.weights, n / m)
    assert math.isclose(plan.weights.sum(), n, rel_tol=1e-9)


@pytest.mark.parametrize("bad", [True, np.bool_(True), "0.5", 1.5, float("nan")])
def test_random_rejects_a_fraction_that_is_no_fraction(bad):
    """True is not 100 %: it was taken as 1 and the plan simulated every invocation."""
    with pytest.raises(BaselineError, match="random: fraction"):
        RandomSampler(fraction=bad).fit(wl(make_profile(10)))


@pytest.mark.parametrize("good", [np.float32(0.5), np.float64(0.5), 0.5])
def test_random_takes_numpy_fractions(good):
    assert RandomSampler(fraction=good).fit(wl(make_profile(10))).invocations.size == 5


@pytest.mark.parametrize("key,bad", [("floor", 30.7), ("floor", True), ("m_th", 0), ("m_th", "50"),
                                     ("floor", float("inf")), ("m_th", np.float64("nan")), ("floor", -30.0)])
def test_allegro_sample_counts_must_be_whole_numbers(key, bad):
    """floor and m_th count samples: 30.7 was truncated to 30 without a word."""
    with pytest.raises(BaselineError, match=f"allegro: {key}: must be an integer >= 1"):
        AllegroSampler(**{key: bad}).fit(wl(make_profile(40)))


@pytest.mark.parametrize("floor,m_th", [(np.int64(30), np.int32(50)), (30.0, 50.0), (np.float64(30), np.float32(50))])
def test_allegro_takes_whole_numbers_of_any_kind(floor, m_th):
    """One rule for every count a sampler takes: STEM's min_samples and pka's k_max take 30.0
    (what ``--set floor=30.0`` gives), and allegro refused it."""
    prof = make_profile(40)
    a = AllegroSampler(floor=floor, m_th=m_th, random_state=0).fit(wl(prof))
    b = AllegroSampler(floor=30, m_th=50, random_state=0).fit(wl(prof))
    assert a.invocations.tolist() == b.invocations.tolist()
    assert a.weights.tolist() == b.weights.tolist()


def test_a_whole_float_count_is_taken_by_stem_pka_and_allegro_alike():
    """The samplers with sample/cluster counts draw the same line at 3.0 and 3.5."""
    from gclsampler.stem import StemError, check_params
    prof = make_profile(40)
    pka_prof = _pka_profile(np.arange(1.0, 41.0), np.arange(40.0))
    checks = (lambda v: AllegroSampler(floor=v).fit(wl(prof)),
              lambda v: PkaSampler(k_max=v).fit(wl(pka_prof)),
              lambda v: check_params(0.05, 1.96, v, 2, "global"),
              lambda v: check_params(0.05, 1.96, 1, v, "global"))
    for check in checks:
        check(3.0)
        with pytest.raises((BaselineError, StemError), match="must be an integer >= 1, found 3.5"):
            check(3.5)


@pytest.mark.parametrize("make", [lambda v: PkaSampler(target_error=v), lambda v: SieveSampler(cov_threshold=v),
                                  lambda v: SieveSampler(bandwidth=v)])
def test_positive_parameters_take_numpy_floats_as_the_early_check_does(make):
    """validate.check_sampler_params reads numbers with _kinds.is_real (np.float32(0.05) is a
    number the user means), and fit refused what that check had passed."""
    prof = make_profile(40)
    assert make(np.float32(0.05)).fit(wl(prof)).to_json() == make(float(np.float32(0.05))).fit(wl(prof)).to_json()


@pytest.mark.parametrize("make,key,bad", [
    (PkaSampler, "target_error", True), (SieveSampler, "cov_threshold", True),
    (PkaSampler, "pca_variance", "0.9"), (PkaSampler, "pca_variance", True),
    (SieveSampler, "kde", "false"), (SieveSampler, "kde", 0),
    (RandomSampler, "random_state", -1), (RandomSampler, "random_state", "1"),
    (AllegroSampler, "random_state", -1), (AllegroSampler, "random_state", 2.5)])
def test_bad_baseline_parameters_are_one_error_naming_the_key(make, key, bad):
    """pca_variance="0.9" raised TypeError, random_state=-1 numpy's bare ValueError, kde="false"
    (truthy) split tier 3 anyway and True passed as a target error of 1."""
    with pytest.raises(BaselineError, match=f"^{make.name}: {key}: "):
        make(**{key: bad}).fit(wl(make_profile(40)))


def test_allegro_floor_beyond_int64_is_a_census_not_an_overflow():
    """A floor above every leaf's size simulates every leaf whole; floor=1e20 overflowed the
    int64 array of m_min (OverflowError) where 2**62 gave the census."""
    prof = make_profile(60)
    census = AllegroSampler(floor=2**62).fit(wl(prof))
    assert census.invocations.size == len(prof)
    for floor in (2**63, 10**20, 1e20):
        s = AllegroSampler(floor=floor)
        plan = s.fit(wl(prof))
        assert plan.invocations.tolist() == census.invocations.tolist()
        assert plan.weights.tolist() == census.weights.tolist()
        assert s.m_min_.tolist() == [2**62] * s.m_min_.size


def test_random_rejects_bad_fraction():
    with pytest.raises(BaselineError, match="fraction"):
        RandomSampler(fraction=0).fit(wl(make_profile(10)))


# ------------------------------------------------------------------------------------ Allegro
@given(cov=st.floats(0.0, 2.0), eps=st.sampled_from([0.03, 0.05, 0.1, 0.25]))
@settings(max_examples=60, deadline=None)
def test_allegro_m_min_formula_and_floor(cov, eps):
    # two-point sample with a given sample CoV: values mu(1 +- cov/sqrt(2)) have sd = mu*cov (ddof=1)
    t = np.array([1 - cov / math.sqrt(2), 1 + cov / math.sqrt(2)]) * 100.0
    m = allegro_m_min(t, eps)
    expected = math.ceil(round((1.96 / eps * cov) ** 2, 9))
    assert m == max(expected, 30)
    assert m >= 30


def test_allegro_floor_and_cap_at_group_size():
    # constant times: m_min = 30 (floor); a group of 12 is sampled entirely, one of 100 gets 30 draws
    n1, n2 = 12, 100
    df = make_profile(n1 + n2, 0)
    df["kernel_name"] = ["small"] * n1 + ["big"] * n2
    df["grid"] = "(1,1,1)"
    df["time_ns"] = 1000.0
    s = AllegroSampler(epsilon=0.05, random_state=0)
    plan = s.fit(wl(df))
    assert s.m_min_.tolist() == [30, 30]
    assert s.sample_sizes_.tolist() == [12, 30]
    assert len(plan.samples) == 42
    w = {c.id: c.size for c in plan.clusters}
    assert w == {0: 12, 1: 100}


def test_allegro_recursion_stops_when_m_min_under_threshold():
    # two tight modes in one key: whole group m_min >> 50, each mode's m_min = 30 -> exactly 2 leaves
    rng = np.random.default_rng(1)
    t = np.concatenate([rng.normal(100, 0.5, 80), rng.normal(1000, 5, 80)])
    labels, m_min = allegro_partition(t, np.zeros(t.size, dtype=int), epsilon=0.05)
    assert allegro_m_min(t, 0.05) > 50
    assert len(m_min) == 2 and np.all(m_min <= 50)
    assert np.all(labels[:80] == labels[0]) and np.all(labels[80:] == labels[80]) and labels[0] != labels[80]
    # a threshold above the whole group's m_min means no split at all
    labels2, m2 = allegro_partition(t, np.zeros(t.size, dtype=int), epsilon=0.05, m_th=10**9)
    assert len(m2) == 1


def _leaves_in_order(labels: np.ndarray, m_min: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leaf labels renumbered by first appearance, and their m_min in that order: a group's
    partition compares equal whatever leaf ids the other groups took."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inv], m_min[np.unique(labels)][np.argsort(first)]


def _assert_same_leaves(got: tuple[np.ndarray, np.ndarray], alone: tuple[np.ndarray, np.ndarray]) -> None:
    assert np.array_equal(got[0], alone[0]) and np.array_equal(got[1], alone[1])


def _two_peaks(rng: np.random.Generator, n: int = 80) -> np.ndarray:
    return np.concatenate([rng.normal(100, 0.5, n), rng.normal(1000, 5, n)])


@pytest.mark.parametrize("below", [1e-200, 1e-160, 1e200])
def test_allegro_group_far_from_another_gets_its_alone_leaves(below):
    # one global time_scale made this two-peak group's 2-means squares underflow at 1e-200:
    # it was peeled one invocation at a time (65 leaves) instead of its alone 2
    rng = np.random.default_rng(1)
    low = _two_peaks(rng)
    other = rng.normal(1000, 5, 40)
    alone = _leaves_in_order(*allegro_partition(low, np.zeros(low.size, dtype=int), epsilon=0.05))
    t = np.concatenate([other, low * below])
    keys = np.r_[np.zeros(other.size, dtype=int), np.ones(low.size, dtype=int)]
    labels, m_min = allegro_partition(t, keys, epsilon=0.05)
    got = _leaves_in_order(labels[other.size:], m_min)
    assert len(alone[1]) == 2
    _assert_same_leaves(got, alone)


@given(e=st.integers(-1000, 1000), seed=st.integers(0, 2**16), eps=st.sampled_from([0.03, 0.05, 0.1, 0.25]))
@settings(max_examples=60, deadline=None)
def test_allegro_group_at_any_power_of_two_is_partitioned_as_alone(e, seed, eps):
    # a group at 2^e (e in -1000..1000) beside one at 1: its leaves and m_min bit for bit as alone
    rng = np.random.default_rng(seed)
    g = rng.choice(rng.uniform(10, 1e5, 3), 120) * (1 + 0.05 * rng.standard_normal(120))
    other = rng.uniform(10, 1e5, 50)
    alone = _leaves_in_order(*allegro_partition(g, np.zeros(g.size, dtype=int), epsilon=eps))
    t = np.concatenate([g * 2.0**e, other])
    keys = np.r_[np.zeros(g.size, dtype=int), np.ones(other.size, dtype=int)]
    labels, m_min = allegro_partition(t, keys, epsilon=eps)
    _assert_same_leaves(_leaves_in_order(labels[:g.size], m_min), alone)
    other_alone = _leaves_in_order(*allegro_partition(other, np.zeros(other.size, dtype=int), epsilon=eps))
    _assert_same_leaves(_leaves_in_order(labels[g.size:], m_min), other_alone)


def test_allegro_keys_separate_grid_and_block():
    df = make_profile(60, 0)
    df["kernel_name"] = "k"
    df["time_ns"] = 5.0
    df["grid"] = ["(1,1,1)"] * 30 + ["(2,1,1)"] * 30
    df["block"] = ["(32,1,1)"] * 15 + ["(64,1,1)"] * 45
    s = AllegroSampler(random_state=0)
    s.fit(wl(df))
    assert len(s.m_min_) == 3


@pytest.mark.parametrize("cls", [PkaSampler, SieveSampler])
def test_work_mean_with_a_cluster_of_zero_instruction_counts(cls):
    """A count of 0 is work 0: a stratum whose counts are all 0 has every member at its mean,
    so its middle launch stands for it. log2(0) = -inf made its work NaN, and the rule picked a
    member of another cluster (or indexed past the end)."""
    df = make_profile(6, 0, n_names=2)
    df["kernel_name"] = ["a", "a", "a", "b", "b", "b"]
    df["grid"] = ["(1,1,1)"] * 6
    df["inst_executed"] = [0.0, 0.0, 0.0, 10.0, 20.0, 30.0]
    df["pka_instructions"] = df["inst_executed"]
    plan = cls(representative="work_mean").fit(wl(df)).validate()
    assert sorted(plan.invocations.tolist()) == [1, 4]


@pytest.mark.parametrize("lo", [90, 95, 98, 105, 109, 150])
@pytest.mark.parametrize("reverse", [False, True])
def test_sieve_work_mean_tie_goes_to_the_later_launch_whatever_the_counts_round_to(lo, reverse):
    """Two counts equally near their mean are a tie (the documented rule: the middle launch, the
    later of two), not decided by how log2/exp2 rounds them (exp2(log2(3)) != 3)."""
    df = make_profile(2, 0, n_names=1)
    df["kernel_name"] = ["k", "k"]
    df["grid"] = ["(1,1,1)"] * 2
    df["inst_executed"] = [float(lo + 2), float(lo)] if reverse else [float(lo), float(lo + 2)]
    plan = SieveSampler(representative="work_mean").fit(wl(df))
    assert plan.invocations.tolist() == [1]
