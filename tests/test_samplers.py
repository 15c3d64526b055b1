"""GCL samplers and the registry: plan invariants, error bounds, determinism, configs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler import samplers as S
from gclsampler.cluster import ClusterConfig, ClusterConfigError
from gclsampler.plan import SamplingPlan
from gclsampler.samplers import (
    SAMPLERS,
    GclSampler,
    GclStemSampler,
    SamplerConfig,
    SamplerError,
    make_sampler,
    sampler_from_config,
)
from gclsampler.workload import Workload

CONF = Path(__file__).resolve().parents[1] / "conf"
# the clustering alone: no work split, no time cut (the toy times spread 50 % inside a group)
SMALL = dict(k_max=6, n_init=2, refine_n_init=2, representative="first", split_tolerance=0.0, time_split_share=0.0)


def toy_workload(seed=0, n=150, k=4, embeddings=True) -> Workload:
    """SYNTHETIC: k behaviour groups; times differ per group and are noisy inside one."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, k, n)
    emb = (rng.normal(size=(k, 16)) * 6)[group] + rng.normal(size=(n, 16)) * 0.3
    times = rng.gamma(4.0, 100.0, n) * (1 + group)
    prof = pd.DataFrame({"invocation": np.arange(n), "kernel_name": [f"kern_{g}" for g in group],
                         "time_ns": times, "cycles": times * 1.4})
    return Workload("toy", prof, synthetic=True, embeddings=emb.astype(np.float32) if embeddings else None)


@pytest.fixture(autouse=True)
def _fresh_memo():
    S._MEMO.clear()
    yield
    S._MEMO.clear()


def test_registry_holds_gcl_and_stem_root():
    assert SAMPLERS["gcl"] is GclSampler and SAMPLERS["gcl_stem"] is GclStemSampler
    assert "stem_root" in SAMPLERS
    for name, cls in SAMPLERS.items():
        assert cls.name == name


def test_make_sampler_errors_name_the_key():
    with pytest.raises(SamplerError, match="sampler.name: unknown sampler 'nope'"):
        make_sampler("nope")
    with pytest.raises(SamplerError, match="sampler.params"):
        make_sampler("gcl", epsilonn=0.1)


def test_gcl_plan_first_member_weights(tmp_path):
    w = toy_workload()
    s = make_sampler("gcl", cluster=SMALL, random_state=0)
    plan = s.fit(w)
    assert plan.weights.sum() == pytest.approx(w.n_invocations)
    assert plan.synthetic
    for smp in plan.samples:
        members = np.flatnonzero(s.labels_ == smp.cluster)
        assert smp.invocation == members[0]
        assert smp.weight == members.size
        assert smp.kernel_name == w.profile["kernel_name"][smp.invocation]
    assert s.k_ == len(plan.clusters) == 4
    assert plan.config["k"] == s.k_
    assert {k for k, _ in plan.config["silhouette"]} == set(s.silhouette_)
    assert SamplingPlan.load(plan.save(tmp_path / "p.json")).to_json() == plan.to_json()


@pytest.mark.parametrize("root", [True, False])
def test_gcl_stem_bounds_every_cluster(root):
    w = toy_workload(1)
    s = GclStemSampler(cluster=SMALL, epsilon=0.1, root=root, random_state=2, scope="group")
    plan = s.fit(w)
    assert plan.weights.sum() == pytest.approx(w.n_invocations)
    assert len(plan.clusters) == s.k_
    for c in plan.clusters:
        assert c.error_bound is not None and 0 <= c.error_bound <= 0.1 + 1e-12
        assert c.size == int((s.labels_ == c.id).sum())
    for smp in plan.samples:  # every sample sits in its GCL cluster
        assert s.labels_[smp.invocation] == smp.cluster
    assert plan.config["error_bound"] <= 0.1 + 1e-12
    # the bound per cluster is its own stratified bound: recompute from STEM's leaves
    st = s.stem_
    for c in plan.clusters:
        leaves = np.flatnonzero(st.leaf_group == c.id)
        var = sum((st.leaf_error_bound[i] * st.leaf_sizes[i] * st.leaf_mean[i]) ** 2 for i in leaves)
        tot = sum(st.leaf_sizes[i] * st.leaf_mean[i] for i in leaves)
        assert c.error_bound == pytest.approx(np.sqrt(var) / tot)


def test_gcl_stem_never_reads_the_work_column_its_representatives_would_need():
    """STEM draws gcl_stem's members, so cluster.representative (default work_mean, which reads
    the size vector's work column) picks nothing: embeddings narrower than that column were
    refused over it, and the rule must not change the plan."""
    w = toy_workload(5)
    w.embeddings = w.embeddings[:, :4]  # no size vector: split_column -6 is outside them
    knobs = {k: v for k, v in SMALL.items() if k != "representative"}
    with pytest.raises(ClusterConfigError, match="split_column: -6 is outside embeddings of 4 columns"):
        GclSampler(cluster={**knobs, "representative": "work_mean"}).fit(w)
    plans = [GclStemSampler(cluster={**knobs, "representative": rule}, epsilon=0.1, random_state=1).fit(w)
             for rule in ("work_mean", "first", "medoid")]
    assert plans[0].config["cluster"]["representative"] == "work_mean"  # recorded as given
    assert len({tuple((x.invocation, x.weight) for x in p.samples) for p in plans}) == 1


def test_gcl_stem_epsilon_is_the_knob():
    w = toy_workload(3)
    t = w.profile["time_ns"].to_numpy()
    draws, speedups = [], []
    for eps in (0.02, 0.05, 0.2):
        s = GclStemSampler(cluster=SMALL, epsilon=eps, root=False, random_state=0)
        plan = s.fit(w)
        draws.append(int(s.stem_.sample_sizes.sum()))
        speedups.append(plan.speedup(t))
    assert draws[0] >= draws[1] >= draws[2] and draws[0] > draws[2]


@pytest.mark.parametrize("name", ["gcl", "gcl_stem"])
def test_same_inputs_same_seed_byte_identical(tmp_path, name):
    paths = []
    for i in range(2):
        S._MEMO.clear()
        plan = make_sampler(name, cluster=SMALL, random_state=5).fit(toy_workload(4))
        paths.append(plan.save(tmp_path / f"{i}.json"))
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_missing_embeddings_is_a_clear_error():
    with pytest.raises(SamplerError, match="toy: embeddings: none loaded"):
        GclSampler().fit(toy_workload(embeddings=False))
    w = toy_workload()
    w.embeddings = w.embeddings[:-1]
    with pytest.raises(SamplerError, match="shape"):
        GclSampler().fit(w)
    # gcl_paper never falls back to the project's embeddings (it clustered them under its name)
    with pytest.raises(SamplerError, match=r"^toy: paper_embeddings: none loaded; gcl_paper clusters the "
                                           r"embeddings of the paper's encoder"):
        make_sampler("gcl_paper").fit(toy_workload())


def test_gcl_paper_never_normalizes():
    """cluster.normalize=true (cosine geometry) is not the paper's clustering: four groups at
    [1,0], [10,0], [0,1], [0,10] are two directions, so normalising merges them to k=2, and
    gcl_paper must give the plain paper labels (k=4) whatever the user's config says."""
    from gclsampler.cluster import cluster_embeddings

    rng = np.random.default_rng(0)
    emb = np.repeat([[1.0, 0.0], [10.0, 0.0], [0.0, 1.0], [0.0, 10.0]], 5, axis=0) + rng.normal(size=(20, 2)) * 1e-3
    paper = {"launch_weight": 0.0, "representative": "first", "split_tolerance": 0.0, "time_split_tolerance": 0.0,
             "time_split_share": 0.0}
    assert cluster_embeddings(emb, {**paper, "normalize": True}).k == 2
    plain = cluster_embeddings(emb, {**paper, "normalize": False})
    assert plain.k == 4
    prof = pd.DataFrame({"invocation": np.arange(20), "kernel_name": ["k"] * 20, "time_ns": np.full(20, 1000.0)})
    s = make_sampler("gcl_paper", cluster={"normalize": True})
    plan = s.fit(Workload("four", prof, paper_embeddings=emb.astype(np.float32)))
    assert np.array_equal(s.labels_, plain.labels) and s.k_ == 4
    assert plan.config["cluster"]["normalize"] is False


def test_gcl_stem_missing_time_column():
    with pytest.raises(SamplerError, match="time_column"):
        GclStemSampler(cluster=SMALL, time_column="gpu_time").fit(toy_workload())


@pytest.mark.parametrize("name", ["gcl", "gcl_stem", "stem_root"])
def test_yaml_configs_compose_and_build(name):
    from omegaconf import OmegaConf

    cluster = OmegaConf.merge(OmegaConf.structured(ClusterConfig), OmegaConf.load(CONF / "cluster" / "default.yaml"))
    cluster.k_max = 6
    # the stem samplers' knobs interpolate the root's `stem` group (conf/stem/default.yaml)
    root = OmegaConf.create({"stem": OmegaConf.load(CONF / "stem" / "default.yaml"),
                             "sampler": OmegaConf.merge(OmegaConf.structured(SamplerConfig),
                                                        OmegaConf.load(CONF / "sampler" / f"{name}.yaml"))})
    cfg = root.sampler
    assert cfg.name == name
    s = sampler_from_config(cfg, cluster, random_state=1)
    assert s.name == name and s.random_state == 1
    plan = s.fit(toy_workload(5))
    assert plan.method == name and plan.weights.sum() == pytest.approx(150)


def test_cluster_yaml_matches_dataclass_defaults():
    from omegaconf import OmegaConf

    assert OmegaConf.to_container(OmegaConf.load(CONF / "cluster" / "default.yaml")) == \
        OmegaConf.to_container(OmegaConf.structured(ClusterConfig))


def test_run_plan_stage_writes_plan_and_cluster_files(tmp_path):
    import csv

    from gclsampler.samplers import run_plan_stage

    w = toy_workload(6)
    summary = run_plan_stage(w, SamplerConfig("gcl_stem", {"epsilon": 0.1}), SMALL, tmp_path, random_state=0)
    plan = SamplingPlan.load(tmp_path / "plan.json")
    assert plan.method == "gcl_stem" and summary["n_samples"] == len(plan.samples)
    with open(tmp_path / "clusters.csv") as fh:
        rows = list(csv.DictReader(fh))
    by_inv = {int(r["invocation"]): int(r["cluster"]) for r in rows}
    assert len(rows) == w.n_invocations
    assert all(by_inv[s.invocation] == s.cluster for s in plan.samples)
    assert summary["k"] == len(plan.clusters) == len(set(by_inv.values()))
    t = w.profile["time_ns"].to_numpy()
    assert summary["expected_speedup"] == pytest.approx(t.sum() / t[plan.invocations].sum())
    assert (tmp_path / "silhouette.csv").read_text().startswith("k,score\n")


def test_gcl_stem_stated_bound_holds_over_seeds():
    """The workload bound is a 95% statement: over seeds the realised error mostly stays within it."""
    w = toy_workload(7, n=400)
    t = w.profile["time_ns"].to_numpy()
    inside = []
    for seed in range(40):
        plan = GclStemSampler(cluster=SMALL, epsilon=0.15, root=False, cluster_random_state=0, random_state=seed).fit(w)
        bound = plan.config["error_bound"]
        assert 0 < bound <= 0.15 and len(plan.samples) < w.n_invocations  # really sampled, not a census
        inside.append(abs(plan.estimate(t) / t.sum() - 1) <= bound)
    assert np.mean(inside) >= 0.85


@given(st.integers(3, 60), st.integers(1, 4), st.integers(0, 2**31 - 1))
@settings(max_examples=15, deadline=None)
def test_gcl_plan_accounts_for_every_invocation(n, groups, seed):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n)
    emb = rng.normal(size=(groups, 4))[g] * 5 + rng.normal(size=(n, 4))
    prof = pd.DataFrame({"invocation": np.arange(n), "kernel_name": [f"k{x}" for x in g], "time_ns": 1.0 + g})
    s = GclSampler(cluster=dict(k_max=4, n_init=1, refine_n_init=1, representative="first", split_tolerance=0.0),
                   random_state=seed)
    plan = s.fit(Workload("prop", prof, embeddings=emb))
    assert plan.weights.sum() == pytest.approx(n)
    assert sorted(plan.invocations.tolist()) == [int(np.flatnonzero(s.labels_ == c)[0]) for c in range(s.k_)]


def _same_code_two_grids(n=60):
    """SYNTHETIC: one kernel whose graphs (so embeddings) are identical, launched with two grid
    sizes whose times differ 20x: what capped traces plus mean pooling cannot tell apart."""
    rng = np.random.default_rng(3)
    big = (np.arange(n) % 3) == 0
    emb = np.tile(rng.normal(size=(1, 8)), (n, 1)).astype(np.float32) + rng.normal(size=(n, 8)).astype(np.float32) * 1e-3
    times = np.where(big, 2000.0, 100.0) * rng.uniform(0.98, 1.02, n)
    prof = pd.DataFrame({"invocation": np.arange(n), "kernel_name": "gemv", "grid": np.where(big, "(400,1,1)", "(20,1,1)"),
                         "block": "(128,1,1)", "time_ns": times, "cycles": times})
    return Workload("two_grids", prof, synthetic=True, embeddings=emb), big


def test_launch_shape_separates_launches_the_embeddings_cannot():
    from gclsampler.evaluate import score_plan

    w, big = _same_code_two_grids()
    paper = GclSampler(cluster=dict(SMALL, launch_weight=0.0)).fit(w)
    shaped_s = GclSampler(cluster=dict(SMALL, launch_weight=2.0))
    shaped = shaped_s.fit(w)
    # with the launch block the two grid sizes never share a cluster
    assert not (set(shaped_s.labels_[big]) & set(shaped_s.labels_[~big]))
    assert score_plan(shaped, w.profile)["error_cycles"] < 5.0
    assert score_plan(paper, w.profile)["error_cycles"] > score_plan(shaped, w.profile)["error_cycles"]


def test_launch_block_leaves_the_work_column_where_the_size_vector_is():
    """SYNTHETIC: launches that differ only in the work column (split_column, counted from the
    embeddings' end). The launch block appended after the embeddings must not move that column:
    the work split and work_mean read the same column with and without it."""
    rng = np.random.default_rng(5)
    n = 40
    emb = np.tile(rng.normal(size=(1, 8)), (n, 1)) + rng.normal(size=(n, 8)) * 1e-3
    emb[:, -6] = np.linspace(10.0, 12.0, n)  # log2 work spread 2 doublings over the launches
    times = 2.0 ** emb[:, -6]
    prof = pd.DataFrame({"invocation": np.arange(n), "kernel_name": "gemm", "grid": "(80,1,1)",
                         "block": "(128,1,1)", "time_ns": times, "cycles": times})
    w = Workload("work_only", prof, synthetic=True, embeddings=emb.astype(np.float32))
    cfg = dict(k_max=6, n_init=2, refine_n_init=2, split_tolerance=0.5, time_split_share=0.0,
               representative="work_mean")
    plain, shaped = GclSampler(cluster=dict(cfg, launch_weight=0.0)), GclSampler(cluster=dict(cfg, launch_weight=2.0))
    plain.fit(w), shaped.fit(w)
    for s in (plain, shaped):  # every cluster's work spans at most the tolerance
        assert max(np.ptp(emb[s.labels_ == c, -6]) for c in range(s.k_)) <= 0.5 + 1e-6
    np.testing.assert_array_equal(shaped.labels_, plain.labels_)
    np.testing.assert_array_equal(shaped.representatives_, plain.representatives_)
    assert shaped.cluster_config_.split_column == -6  # the plan records the user's setting
    with pytest.raises(ClusterConfigError, match="cluster.split_column: -9 is outside embeddings of 8 columns"):
        GclSampler(cluster=dict(cfg, launch_weight=2.0, split_column=-9)).fit(w)


def test_launch_features_from_profile_columns_and_scaling():
    w, big = _same_code_two_grids()
    f = S.launch_features(w)
    assert f.shape == (w.n_invocations, 4)
    np.testing.assert_allclose(f[big, 0], np.log2(401)) and np.testing.assert_allclose(f[~big, 0], np.log2(21))
    emb = np.asarray(w.embeddings, dtype=np.float64)
    x = S.clustering_input(emb, f, 2.0)
    block = x[:, emb.shape[1]:]
    # the launch block carries weight**2 times the embeddings' total variance
    assert block.var(axis=0).sum() == pytest.approx(4.0 * emb.var(axis=0).sum(), rel=1e-6)
    assert S.clustering_input(emb, f, 0.0) is emb


def test_gcl_stem_auto_under_scope_group_bounds_every_gcl_cluster():
    """With scope group the plan bounds each stratum's total. auto picked the kernel names when
    they were cheapest, so a user asking for a bound per GCL cluster got one per name instead."""
    rng = np.random.default_rng(3)
    n = 120
    g = np.repeat([0, 1], n // 2)  # two behaviours, each launched under both names
    emb = np.array([[0.0] * 6, [9.0] * 6])[g] + rng.normal(size=(n, 6)) * 0.1
    times = np.where(g == 0, 100.0, 130.0) * rng.gamma(40.0, 1 / 40.0, n)
    prof = pd.DataFrame({"invocation": np.arange(n), "kernel_name": np.where(np.arange(n) % 2, "a", "b"),
                         "time_ns": times, "cycles": times})
    w = Workload("grp", prof, synthetic=True, embeddings=emb.astype(np.float32))
    cl = dict(k_max=4, n_init=1, refine_n_init=1, split_tolerance=0.0)
    glob = GclStemSampler(cluster=cl, epsilon=0.05, min_samples=1).fit(w)
    assert "kernel_name" in glob.config["strata_expected_time"]
    plan = GclStemSampler(cluster=cl, epsilon=0.05, scope="group").fit(w)
    assert set(plan.config["strata_expected_time"]) == {"gcl", "kernel_name_gcl"}
    assert plan.config["strata_chosen"] in ("gcl", "kernel_name_gcl")
    # every chosen stratum lies inside one GCL cluster, so each cluster's total is bounded
    strata = np.array([s.cluster for s in plan.samples])
    assert all(len(set(g[[s.invocation for s in plan.samples if s.cluster == c]])) == 1 for c in set(strata))


def _expected_time(plan: SamplingPlan, w: Workload) -> float:
    return float(plan.config["strata_expected_time"][plan.config["strata_chosen"]])


@given(st.integers(20, 120), st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**31 - 1))
@settings(max_examples=12, deadline=None)
def test_gcl_stem_auto_never_plans_more_time_than_stem_root(n, behaviours, names, seed):
    """auto includes STEM+ROOT's own strata, so at one epsilon its expected simulated time is
    at most stem_root's and at most the GCL strata's, and the chosen one is the cheapest tried."""
    from gclsampler.stem import StemRootSampler

    rng = np.random.default_rng(seed)
    g = rng.integers(0, behaviours, n)
    emb = rng.normal(size=(behaviours, 6))[g] * 5 + rng.normal(size=(n, 6)) * 0.2
    times = rng.gamma(3.0, 50.0, n) * (1 + g)
    prof = pd.DataFrame({"invocation": np.arange(n), "kernel_name": [f"k{x}" for x in rng.integers(0, names, n)],
                         "time_ns": times, "cycles": times})
    w = Workload("prop", prof, synthetic=True, embeddings=emb.astype(np.float32))
    cl = dict(k_max=4, n_init=1, refine_n_init=1, split_tolerance=0.0)
    auto = GclStemSampler(cluster=cl, epsilon=0.1, random_state=seed % 7)
    plan = auto.fit(w)
    costs = plan.config["strata_expected_time"]
    assert set(costs) == {"gcl", "kernel_name", "kernel_name_gcl"}
    assert plan.config["strata_chosen"] == auto.strata_ and costs[auto.strata_] == min(costs.values())
    sr = StemRootSampler(epsilon=0.1, random_state=seed % 7)
    sr.fit(w)
    assert _expected_time(plan, w) <= sr.result_.expected_sampled_time * (1 + 1e-12)
    pure = GclStemSampler(cluster=cl, epsilon=0.1, strata="gcl", random_state=seed % 7)
    pure_plan = pure.fit(w)
    assert _expected_time(plan, w) <= _expected_time(pure_plan, w) * (1 + 1e-12)
    assert plan.weights.sum() == pytest.approx(n) and pure_plan.weights.sum() == pytest.approx(n)
    for s in plan.samples:  # samples sit in the plan's clusters, which are the chosen strata
        assert auto.labels_[s.invocation] == s.cluster
    if auto.strata_ == "kernel_name":  # the same strata and seed: exactly STEM+ROOT's draws
        assert plan.invocations.tolist() == sr.plan_.invocations.tolist()


def test_gcl_stem_auto_takes_gcl_strata_when_names_are_unique():
    """nw-like: every invocation has its own kernel name (a template argument per diagonal), so
    name strata simulate everything; the GCL clusters merge the equivalent launches."""
    w = toy_workload(8, n=120, k=3)
    w.profile["kernel_name"] = [f"needle<{i}>" for i in range(120)]
    s = GclStemSampler(cluster=SMALL, epsilon=0.25, random_state=0)
    plan = s.fit(w)
    assert s.strata_ == "gcl" and np.array_equal(s.labels_, s.gcl_labels_)
    assert len(plan.samples) < 120 / 4
    costs = plan.config["strata_expected_time"]
    assert costs["kernel_name"] == pytest.approx(w.profile["time_ns"].sum())  # a census


def test_gcl_stem_auto_breaks_a_cost_tie_in_favour_of_the_gcl_strata():
    """Where every candidate costs the same (the GCL clusters are the kernel names), the plan
    records the GCL strata, as the docstring's tie rule says; a later candidate winning the tie
    labelled a plan of GCL clusters as one of kernel names."""
    rng = np.random.default_rng(0)
    emb = np.repeat(rng.normal(size=(4, 16)) * 6, 10, axis=0)
    prof = pd.DataFrame({"invocation": np.arange(40), "kernel_name": np.repeat([f"k{i}" for i in range(4)], 10),
                         "time_ns": rng.uniform(90, 110, 40)})
    s = GclStemSampler(cluster=SMALL, epsilon=0.1, random_state=0)
    plan = s.fit(Workload("tie", prof, synthetic=True, embeddings=emb.astype(np.float32)))
    costs = plan.config["strata_expected_time"]
    assert len(set(costs.values())) == 1  # the same strata three times over: a tie
    assert s.strata_ == "gcl" and plan.config["strata_chosen"] == "gcl"


def test_gcl_stem_strata_gcl_and_bad_value():
    w = toy_workload(9)
    s = GclStemSampler(cluster=SMALL, epsilon=0.1, strata="gcl", random_state=0)
    plan = s.fit(w)
    assert s.strata_ == "gcl" and list(plan.config["strata_expected_time"]) == ["gcl"]
    assert np.array_equal(s.labels_, s.gcl_labels_) and len(plan.clusters) == s.result_.k
    with pytest.raises(SamplerError, match=r"gcl_stem.strata: must be one of auto, gcl, got 'names'"):
        GclStemSampler(cluster=SMALL, strata="names").fit(w)


def test_report_lists_the_strata_gcl_stem_chose():
    from gclsampler.report import strata_table

    w = toy_workload(8, n=120, k=3)
    w.profile["kernel_name"] = [f"needle<{i}>" for i in range(120)]
    plan = GclStemSampler(cluster=SMALL, epsilon=0.25, random_state=0).fit(w)
    table = strata_table({"nwlike": plan, "other": make_sampler("gcl", cluster=SMALL).fit(toy_workload())})
    rows = [r for r in table.splitlines() if r.startswith("| nwlike")]
    assert len(rows) == 1 and "| gcl |" in rows[0]
    assert f"**{plan.config['strata_expected_time']['gcl']:.4g}**" in rows[0]
    assert "| other" not in table  # plans without strata are left out
    assert strata_table({}) is None


def test_misspelt_parameter_names_the_key_and_what_the_method_takes():
    """train.py's sampler.params and evaluate.py's method_params get the message `sample --set`
    gives, not the constructor's "__init__() got an unexpected keyword argument"."""
    from gclsampler.evaluate import EvaluationError
    from gclsampler.evaluate import make_sampler as make_method
    from gclsampler.samplers import SamplerError, make_sampler

    with pytest.raises(SamplerError, match=r"^sampler\.params\.thresh: photon has no parameter 'thresh'; "
                                           r"it takes: threshold, match_launch$"):
        make_sampler("photon", thresh=0.9, random_state=0)
    with pytest.raises(EvaluationError, match=r"^method_params\.pka\.target: pka has no parameter 'target'; it takes: "):
        make_method("pka", {"target": 0.1})


def test_a_time_the_time_cut_cannot_take_is_quoted_as_a_number():
    """The message quoted numpy's repr ("found np.float64(0.0)") in the one error line."""
    w = toy_workload(1, n=30)
    w.profile.loc[3, "time_ns"] = 0.0
    with pytest.raises(SamplerError, match=r"time_ns: invocation 3: the time cut needs a time > 0, found 0\.0 \("):
        GclSampler(cluster=dict(SMALL, time_split_tolerance=0.5)).fit(w)


def test_a_zero_time_names_only_the_span_cut_as_the_way_out():
    """A zero time stops only the span cut (time_split_tolerance needs every time > 0); the share
    cut takes it. The message told the user to turn the default share cut off as well."""
    w = toy_workload(1, n=30)
    w.profile.loc[3, "time_ns"] = 0.0
    cfg = dict(SMALL, time_split_tolerance=0.5, time_split_share=0.04)
    with pytest.raises(SamplerError, match=r"\(cluster\.time_split_tolerance=0 turns the cut off\)$"):
        GclSampler(cluster=cfg).fit(w)
    GclSampler(cluster=dict(cfg, time_split_tolerance=0.0)).fit(w)  # which is enough


@pytest.mark.parametrize("method", ["gcl", "gcl_stem", "gcl_paper"])
def test_gcl_samplers_take_random_state_none_as_the_clustering_does(method):
    """The clustering counts None as 0 and stem_root takes it, but the GCL samplers' memo key
    called int(None): a TypeError traceback instead of a plan."""
    import numpy as np
    import pandas as pd

    from gclsampler.samplers import make_sampler
    from gclsampler.workload import Workload

    e = np.random.default_rng(0).normal(size=(20, 264)).astype(np.float32)
    prof = pd.DataFrame({"invocation": range(20), "kernel_name": ["k"] * 20, "time_ns": np.arange(1, 21.0),
                         "cycles": np.arange(1, 21.0)})
    wl = Workload("w", prof, embeddings=e, paper_embeddings=e[:, :256])
    none, zero = (make_sampler(method, random_state=s).fit(wl).to_dict() for s in (None, 0))
    assert none["clusters"] == zero["clusters"]  # the clustering: None is 0
    if method != "gcl_stem":  # whose STEM draw, as stem_root's, takes None as numpy does: unseeded
        assert none["samples"] == zero["samples"]
    assert sum(x["weight"] for x in none["samples"]) == pytest.approx(20)
