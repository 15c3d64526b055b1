"""What tells invocations of one kernel apart reaches the graph and the readout (issue: GCL that
sees the whole kernel); tiny workloads are not merged by rule; ``gcl_paper`` is the paper's method."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf
from torch_geometric.data import Batch

from gclsampler.cluster import cluster_embeddings
from gclsampler.graph import (
    INST_STAT_COUNT, NODE_INSTRUCTION, NODE_VARIABLE, VARIABLE_VOCAB, GraphConfig, build_graph,
    kernel_features,
)
from gclsampler.model import GCLModel, ModelConfig
from gclsampler.samplers import GclPaperSampler, GclSampler, make_sampler
from gclsampler.synth.families import Launch, build
from gclsampler.synth.generate import _header, traced_cta_ids
from gclsampler.synth.program import Memory, run_program
from gclsampler.workload import Workload

from _trace_fixtures import random_trace

SMALL_GRAPH = GraphConfig(max_warps=4, max_insts_per_warp=64)


def _gemm_trace(K: int, grid_n: int = 2, n_sm: int = 1):
    """Complete trace of the synthesizer's tensor-core GEMM on SM 0 (every CTA, every instruction)."""
    launch = Launch("gemm", "gemm_tc", (grid_n, 1, 1), (128, 1, 1),
                    dict(M=64, N=64 * grid_n, K=K, A=0x10000000, B=0x20000000, C=0x30000000, bias=0, bm=64, bn=64))
    prog = build(launch)
    ids = traced_cta_ids(launch.n_ctas, n_sm, 0)
    coords = np.stack([ids % grid_n, np.zeros_like(ids), np.zeros_like(ids)], axis=1)
    res = run_program(prog, _header(launch, 1, prog), coords, Memory(), 1 << 40, True,
                      np.repeat(np.asarray(prog.slots, np.int64).reshape(1, -1), len(ids), axis=0))
    return res.trace


def _embed(model, graphs):
    return model.embed(Batch.from_data_list(graphs)).numpy()


def _model(**kw):
    torch.manual_seed(0)
    return GCLModel(ModelConfig(hidden_dim=32, out_dim=32, proj_hidden=16, proj_dim=8, **kw))


def test_loop_trips_reach_the_graph_and_the_readout():
    short, long_ = _gemm_trace(K=128), _gemm_trace(K=512)
    g1, g2 = build_graph(short, SMALL_GRAPH), build_graph(long_, SMALL_GRAPH)
    # the capped sample of the warp looks alike, the counts and the size vector do not
    assert not torch.equal(g1.kfeat, g2.kfeat)
    ins1, ins2 = g1.node_type == NODE_INSTRUCTION, g2.node_type == NODE_INSTRUCTION
    assert g2.stats[ins2, INST_STAT_COUNT].max() > g1.stats[ins1, INST_STAT_COUNT].max()
    # 4x the trips: about 4x the instructions per warp, i.e. about 2 more in log2
    assert 1.5 < float(g2.kfeat[0, 0] - g1.kfeat[0, 0]) < 2.1
    z = _embed(_model(), [g1, g2])
    assert np.linalg.norm(z[0] - z[1]) > 1.0
    # the paper's encoder, given the same two graphs, sees only opcodes, PCs and values
    zp = _embed(_model(inst_stats=False, kernel_features=False), [g1, g2])
    assert zp.shape[1] == 32 and z.shape[1] == 32 + g1.kfeat.shape[1]


def test_grid_reaches_the_readout():
    """Two launches whose SM-0 traces run the same instructions (8 SMs: SM 0 runs CTA 0 of
    either grid) and differ in the grid: the grid's CTA count reaches z through the size vector.
    Why 8 SMs: on one SM, SM 0 runs every CTA, so the traces (and embeddings) differ anyway and a
    readout that dropped the size vector would pass."""
    t1, t2 = _gemm_trace(K=128, grid_n=2, n_sm=8), _gemm_trace(K=128, grid_n=4, n_sm=8)
    f1, f2 = kernel_features(t1), kernel_features(t2)
    assert np.flatnonzero(f1 != f2).tolist() == [5]  # the size vectors differ in grid CTAs only
    assert f2[5] - f1[5] == pytest.approx(np.log2(5 / 3), abs=1e-5)  # log2(1 + x)
    g1, g2 = build_graph(t1, SMALL_GRAPH), build_graph(t2, SMALL_GRAPH)
    assert torch.equal(g1.token, g2.token) and torch.equal(g1.edge_index, g2.edge_index)  # same instructions
    z = _embed(_model(), [g1, g2])
    size = z[:, -len(f1):]  # the readout's tail: kfeat_scale (1) x the size vector
    np.testing.assert_allclose(size, np.stack([f1, f2]), rtol=1e-6)
    assert np.flatnonzero(size[0] != size[1]).tolist() == [5]


def test_constant_bank_words_become_valued_variables():
    g = build_graph(_gemm_trace(K=128), SMALL_GRAPH)
    const = (g.node_type == NODE_VARIABLE) & (g.token == VARIABLE_VOCAB.index("MEM.CONST"))
    assert int(const.sum()) > 0
    # live-ins with the value the ULDC returned, and every one is read by an instruction
    assert (g.stats[const].abs().sum(dim=1) > 0).any()
    ids = torch.nonzero(const).view(-1)
    assert torch.isin(ids, g.edge_index[0]).all()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), cap=st.integers(1, 40), windows=st.integers(1, 6))
def test_windows_keep_cap_instructions_per_warp_in_order(seed, cap, windows):
    t = random_trace(np.random.default_rng(seed), n_warps=3, max_len=60)
    g = build_graph(t, GraphConfig(max_warps=0, max_insts_per_warp=cap, windows=windows))
    lens = np.diff(t.warp_ptr)
    ins = g.node_type == NODE_INSTRUCTION
    counts = torch.bincount(g.warp[ins], minlength=len(lens)).numpy()
    live = lens[lens > 0]
    assert counts.tolist() == np.minimum(live, cap).tolist()
    # instruction nodes follow the stream: PCs of a kept window are consecutive trace entries
    pc = g.pc[ins].numpy()
    assert np.isfinite(pc).all()


def _sized(emb):
    """Toy embeddings with a size-vector tail of equal work (split_column -6), which the default
    work split and work_mean representative read: the rows differ only where the test says."""
    emb = np.asarray(emb, dtype=np.float64)
    return np.hstack([emb, np.zeros((emb.shape[0], 6))])


def test_two_different_kernels_give_two_clusters_and_identical_launches_one():
    two = _sized([[0.0, 1.0], [5.0, -2.0]])
    assert cluster_embeddings(two).k == 2
    same = _sized(np.tile([[0.3, 0.7]], (5, 1)))
    assert cluster_embeddings(same).k == 1
    near = same + np.linspace(0, 1e-9, 5)[:, None]
    assert cluster_embeddings(near).k == 1
    # many distinct rows a rounding error apart (relative 1e-7): still one cluster
    rng = np.random.default_rng(0)
    many = rng.normal(size=(1, 16)) + rng.normal(size=(200, 16)) * 1e-7
    assert cluster_embeddings(many).k == 1
    # but the same spread scaled up is real structure
    assert cluster_embeddings(rng.normal(size=(1, 16)) + np.repeat(np.eye(16)[:4] * 5, 50, axis=0)).k >= 2
    three = _sized([[0.0, 0.0], [1.0, 0.0], [0.0, 10.0]])
    res = cluster_embeddings(three)
    assert res.k == 3 and sorted(res.labels.tolist()) == [0, 1, 2]


def _workload(emb, names):
    prof = pd.DataFrame({"invocation": range(len(names)), "kernel_name": names,
                         "time_ns": np.arange(1.0, len(names) + 1), "grid": ["(1,1,1)"] * len(names),
                         "block": ["(128,1,1)"] * len(names)})
    return Workload(name="tiny", profile=prof, embeddings=_sized(emb).astype(np.float32))


def test_a_two_invocation_workload_of_two_kernels_simulates_both():
    wl = _workload([[0.0, 1.0], [3.0, 1.0]], ["k_a", "k_b"])
    wl.paper_embeddings = np.array([[0.0, 1.0], [3.0, 1.0]], dtype=np.float32)
    for name in ("gcl", "gcl_paper"):
        plan = make_sampler(name).fit(wl)
        assert sorted(s.invocation for s in plan.samples) == [0, 1]


# The paper's clustering (GCL-Sampler 3.4): silhouette K on the embeddings alone, first member.
PAPER_CLUSTER = {"launch_weight": 0.0, "normalize": False, "split_tolerance": 0.0, "time_split_tolerance": 0.0,
                 "time_split_share": 0.0, "representative": "first"}
# A user config with every deviation knob on, each of which changes the plan on _deviant_workload
DEVIATIONS = {"launch_weight": 2.0, "normalize": True, "split_tolerance": 0.05, "time_split_tolerance": 0.5,
              "time_split_share": 0.01, "representative": "work_mean"}


def _deviant_workload():
    """Four groups of five launches at [10,0], [100,0], [0,10], [0,100] (k=4; L2-normalised: k=2),
    each group's members spread in the work column (-6) by 0.1 (work split, work_mean), in
    time by 2x per member (time cuts) and in grid size (launch block); the project's
    embeddings (``embeddings``) are another matrix, two groups of ten."""
    rng = np.random.default_rng(0)
    n = 20
    paper = np.zeros((n, 8))
    paper[:, :2] = np.repeat([[10.0, 0.0], [100.0, 0.0], [0.0, 10.0], [0.0, 100.0]], 5, axis=0)
    paper[:, :2] += rng.normal(size=(n, 2)) * 1e-3
    paper[:, 2] = np.tile(np.arange(5) * 0.1, 4)  # column -6
    prof = pd.DataFrame({"invocation": range(n), "kernel_name": ["k"] * n,
                         "time_ns": np.tile(1000.0 * 2.0 ** np.arange(5), 4),
                         "grid": [f"({1 if i % 2 else 256},1,1)" for i in range(n)], "block": ["(128,1,1)"] * n})
    project = _sized(np.repeat([[0.0, 0.0], [5.0, 5.0]], 10, axis=0))
    return Workload(name="deviant", profile=prof, embeddings=project.astype(np.float32),
                    paper_embeddings=paper.astype(np.float32))


def test_gcl_paper_uses_none_of_the_deviations():
    """gcl_paper's labels and representatives are the paper's clustering of the paper
    embeddings, computed directly, whatever deviation the user's cluster config turns on; and
    it never falls back to the project's embeddings."""
    from gclsampler.samplers import SamplerError

    wl = _deviant_workload()
    ref = cluster_embeddings(wl.paper_embeddings, PAPER_CLUSTER, random_state=0)
    assert ref.k == 4 and ref.representatives.tolist() == [0, 5, 10, 15]  # the first member of each group
    # the data is sensitive: each knob alone changes the project's sampler's clusters or members
    plain = Workload(name="deviant", profile=wl.profile, embeddings=wl.paper_embeddings)
    for key, value in DEVIATIONS.items():
        g = GclSampler(cluster={**PAPER_CLUSTER, key: value})
        g.fit(plain)
        assert (not np.array_equal(g.labels_, ref.labels)
                or not np.array_equal(g.representatives_, ref.representatives)), key
    for user in (DEVIATIONS, {**DEVIATIONS, "launch_weight": 0.0}, {"normalize": True}):
        s = GclPaperSampler(cluster=user)
        plan = s.fit(wl)
        assert np.array_equal(s.labels_, ref.labels) and np.array_equal(s.representatives_, ref.representatives)
        assert sorted(x.invocation for x in plan.samples) == [0, 5, 10, 15]
        assert {k: plan.config["cluster"][k] for k in PAPER_CLUSTER} == PAPER_CLUSTER
        assert plan.config["embedding_dims"] == 8
    # the project's embeddings are never clustered under the paper's name
    wl.paper_embeddings = None
    with pytest.raises(SamplerError, match=r"^deviant: paper_embeddings: none loaded; gcl_paper clusters "
                                           r"the embeddings of the paper's encoder"):
        GclPaperSampler().fit(wl)
    # model=paper turns both encoder deviations off; the default model has the size vector in z
    conf = OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "model" / "paper.yaml")
    assert conf.inst_stats is False and conf.kernel_features is False
    assert ModelConfig().embedding_dim == ModelConfig().out_dim + 8
    assert ModelConfig(kernel_features=False).embedding_dim == ModelConfig().out_dim


def test_work_split_also_cuts_when_no_k_gets_a_silhouette_score(monkeypatch):
    """The fallback to one cluster (no K scorable) still separates launches whose work differs."""
    import gclsampler.cluster as C

    rng = np.random.default_rng(3)
    emb = rng.normal(size=(40, 8)) * 1e-2
    emb[:, -6] = np.where(np.arange(40) < 25, 10.0, 13.0)  # log2 instructions on SM 0: 8x apart
    monkeypatch.setattr(C, "weighted_silhouette", lambda *a, **k: None)
    res = cluster_embeddings(emb, {"split_tolerance": 0.5}, random_state=0)
    assert res.silhouette == {} and res.k_silhouette == 0
    assert res.k == 2 and np.array_equal(res.labels, (np.arange(40) >= 25).astype(np.int64))
    assert cluster_embeddings(emb, {"split_tolerance": 0.0}, random_state=0).k == 1


def _tied_launches(times):
    """Launches of one kernel with identical embeddings (same SM-0 trace) and these measured times."""
    n = len(times)
    wl = _workload(np.tile([[0.3, 0.7]], (n, 1)), ["k"] * n)
    wl.profile["time_ns"] = np.asarray(times, dtype=np.float64)
    return wl


def test_time_cut_separates_launches_an_sm0_trace_cannot_tell_apart():
    """Identical traces, but the first launch ran 2.6x longer (cold caches, or work on other SMs):
    the time cuts give it its own cluster; jitter inside the tolerance is never cut."""
    times = [2600.0] + [1000.0 * (1 + 0.03 * np.sin(i)) for i in range(1, 10)]
    off = make_sampler("gcl", cluster={"time_split_share": 0.0}).fit(_tied_launches(times))
    assert len(off.clusters) == 1
    # the default share cut: that launch alone is 22 % of the time, a representative drawn from
    # the cluster would miss its total by 25 % of the workload on average
    default = make_sampler("gcl").fit(_tied_launches(times))
    assert sorted(c.size for c in default.clusters) == [1, 9]
    assert [x.invocation for x in default.samples if x.weight == 1.0] == [0]
    on = make_sampler("gcl", cluster={"time_split_tolerance": 0.5, "time_split_share": 0.0}).fit(_tied_launches(times))
    assert sorted(c.size for c in on.clusters) == [1, 9]
    assert sum(x.weight for x in on.samples) == 10
    alone = [x for x in on.samples if x.weight == 1.0]
    assert [x.invocation for x in alone] == [0]
    # the other nine are still represented by their middle launch (medoid tie-break)
    assert sorted(x.invocation for x in on.samples) == [0, 5]
    assert on.config["k"] == 2 and on.config["cluster"]["time_split_tolerance"] == 0.5
    jitter_only = make_sampler("gcl", cluster={"time_split_tolerance": 0.5}).fit(_tied_launches(times[1:]))
    assert len(jitter_only.clusters) == 1
    # gcl_stem's strata are cut by ROOT instead: the setting is overridden there
    stem = make_sampler("gcl_stem", cluster={"time_split_tolerance": 0.5}).fit(_tied_launches(times))
    assert stem.config["cluster"]["time_split_tolerance"] == 0.0 and stem.config["cluster"]["time_split_share"] == 0.0


def test_share_cut_leaves_jitter_and_rare_outliers_in_big_clusters():
    """The share cut spends simulated launches only where one representative could move the
    workload's total: 5 % run-to-run jitter in a cluster holding the whole workload stays one
    cluster, and so does one 2.6x launch among 287 (1 % of the total), which the span cut does cut."""
    rng = np.random.default_rng(0)
    jitter = 1000.0 * np.exp(0.05 * rng.standard_normal(200))
    assert len(make_sampler("gcl").fit(_tied_launches(jitter)).clusters) == 1
    rare = [1000.0] * 143 + [2600.0] + [1000.0] * 143
    assert len(make_sampler("gcl").fit(_tied_launches(rare)).clusters) == 1
    span = make_sampler("gcl", cluster={"time_split_tolerance": 0.5}).fit(_tied_launches(rare))
    assert sorted(c.size for c in span.clusters) == [1, 286]
    # a tighter share does cut that launch out
    tight = make_sampler("gcl", cluster={"time_split_share": 0.005}).fit(_tied_launches(rare))
    assert sorted(c.size for c in tight.clusters) == [1, 286]


def test_time_cut_refuses_a_profile_without_usable_times():
    from gclsampler.cluster import ClusterConfigError
    from gclsampler.samplers import SamplerError

    times = [1000.0, 0.0, 1000.0, 1200.0]
    make_sampler("gcl", cluster={"time_split_share": 0.0}).fit(_tied_launches(times))  # off: times are not read
    # the share cut takes a zero time (a launch too short to time) as the shortest of all
    plan = make_sampler("gcl").fit(_tied_launches(times))
    assert sum(x.weight for x in plan.samples) == 4 and [c.size for c in plan.clusters if c.size == 1]
    with pytest.raises(SamplerError, match=r"time_ns: invocation 1: .*time > 0.*time_split_tolerance=0"):
        make_sampler("gcl", cluster={"time_split_tolerance": 0.5}).fit(_tied_launches(times))
    with pytest.raises(SamplerError, match=r"time_ns: invocation 2: .*finite time >= 0.*time_split_share=0"):
        make_sampler("gcl").fit(_tied_launches([1000.0, 1000.0, np.inf, 1200.0]))
    with pytest.raises(ClusterConfigError, match="cluster.time_split_tolerance"):
        make_sampler("gcl", cluster={"time_split_tolerance": -1.0}).fit(_tied_launches(times))
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ClusterConfigError, match="cluster.time_split_share"):
            make_sampler("gcl", cluster={"time_split_share": bad}).fit(_tied_launches(times))


def _drawn_clusters(rows):
    """(labels, times, ClusterResult) of (cluster, time) pairs drawn by hypothesis."""
    from gclsampler.cluster import ClusterResult, _compact, representatives

    labels = _compact(np.array([r[0] for r in rows], dtype=np.int64))
    k = int(labels.max()) + 1
    res = ClusterResult(labels, k, {}, representatives(labels, None, "medoid", 0), np.bincount(labels))
    return labels, np.array([r[1] for r in rows]), res


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(1.0, 1e6)), min_size=1, max_size=40),
       st.sampled_from([0.1, 0.5, 1.0]))
def test_time_cut_refines_clusters_to_the_tolerance(rows, tol):
    from gclsampler.cluster import cut_by_time

    labels, times, res = _drawn_clusters(rows)
    out = cut_by_time(res, None, times, tol)
    assert out.sizes.sum() == len(rows) and out.k == out.sizes.size == out.representatives.size
    for c in range(out.k):
        members = np.flatnonzero(out.labels == c)
        assert np.ptp(np.log2(times[members])) <= tol + 1e-12  # every cluster within the tolerance
        assert np.unique(labels[members]).size == 1  # a refinement: never merges across old clusters
        assert out.representatives[c] in members
    assert out.labels[0] == 0  # numbered by first appearance


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0.0, 1e6)), min_size=1, max_size=40),
       st.sampled_from([0.01, 0.04, 0.2]))
def test_share_cut_refines_clusters_until_none_matters(rows, share):
    from gclsampler.cluster import cut_by_time

    labels, times, res = _drawn_clusters(rows)
    k = res.k
    out = cut_by_time(res, None, times, 0.0, share=share)
    assert out.sizes.sum() == len(rows) and out.k == out.sizes.size == out.representatives.size
    total = times.sum()
    for c in range(out.k):
        members = np.flatnonzero(out.labels == c)
        spread = np.abs(times[members] - times[members].mean()).sum()
        assert spread <= share * total * (1 + 1e-9) + 1e-9  # no cluster left that matters
        assert np.unique(labels[members]).size == 1  # a refinement: never merges across old clusters
        assert out.representatives[c] in members
    for c in range(k):  # a cluster that did not matter is left whole
        members = np.flatnonzero(labels == c)
        if np.abs(times[members] - times[members].mean()).sum() <= share * total:
            assert np.unique(out.labels[members]).size == 1
    assert out.labels[0] == 0


def _bench_module(name: str):
    """A study script of bench/ (not a package) imported by name."""
    import importlib
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0.0, 20.0)), min_size=1, max_size=40),
       st.sampled_from([0.1, 0.5, 1.0]))
def test_gap_cut_of_the_time_study_keeps_spread_clusters_whole(rows, gap):
    """bench/time_split.py --gaps: cuts only where sorted log2 times jump by more than the gap."""
    cut_at_gaps = _bench_module("time_split").cut_at_gaps
    from gclsampler.cluster import _compact

    labels = _compact(np.array([r[0] for r in rows], dtype=np.int64))
    log_time = np.array([r[1] for r in rows])
    out = cut_at_gaps(labels, log_time, gap)
    assert out[0] == 0 and np.array_equal(out, _compact(out))  # numbered by first appearance
    for c in range(int(out.max()) + 1):
        members = np.flatnonzero(out == c)
        assert np.unique(labels[members]).size == 1  # a refinement
        assert np.all(np.diff(np.sort(log_time[members])) <= gap)  # no gap left inside
    for c in range(int(labels.max()) + 1):  # and no cut where there was no gap
        members = np.flatnonzero(labels == c)
        jumps = int(np.sum(np.diff(np.sort(log_time[members])) > gap))
        assert np.unique(out[members]).size == jumps + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=1, max_size=40), st.data())
def test_nearest_mean_work_rule_of_the_representative_study(rows, data):
    """cluster.representative=work_mean (also bench/representatives.py's rule): each cluster's
    member is one of its members whose work is nearest the members' mean work, and the medoid
    is kept when it is one of those."""
    from gclsampler.cluster import _compact, nearest_mean_work

    labels = _compact(np.array([r[0] for r in rows], dtype=np.int64))
    log2_work = np.array([r[1] for r in rows], dtype=np.float64)
    k = int(labels.max()) + 1
    medoids = np.array([data.draw(st.sampled_from(np.flatnonzero(labels == c).tolist())) for c in range(k)])
    reps = nearest_mean_work(labels, log2_work, medoids)
    for c in range(k):
        members = np.flatnonzero(labels == c)
        work = np.exp2(log2_work[members])
        d = np.abs(work - np.bincount(np.zeros(members.size, dtype=np.int64), weights=work)[0] / members.size)
        best = set(members[d == d.min()].tolist())  # the mean as the bench computes it: a bincount sum
        assert labels[reps[c]] == c and int(reps[c]) in best
        if int(medoids[c]) in best:
            assert reps[c] == medoids[c]
    # the same choice whole powers of two beyond float64's range (embeddings scaled far from
    # the encoder's: 2**1100 is inf, and inf - inf picked no member at all)
    for offset in (1100.0, -1100.0, 5000.0):
        assert np.array_equal(nearest_mean_work(labels, log2_work + offset, medoids), reps)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 6)), min_size=1, max_size=40))
def test_nearest_mean_time_rule_of_the_representative_study(rows):
    """bench/representatives.py time_mean: each cluster's member is its earliest member among
    those whose time is nearest the members' mean time."""
    nearest_mean_time = _bench_module("representatives").nearest_mean_time
    from gclsampler.cluster import _compact

    labels = _compact(np.array([r[0] for r in rows], dtype=np.int64))
    times = np.array([r[1] for r in rows], dtype=np.float64) * 1000.0
    reps = nearest_mean_time(labels, times)
    for c in range(int(labels.max()) + 1):
        members = np.flatnonzero(labels == c)
        d = np.abs(times[members] - np.bincount(np.zeros(members.size, dtype=np.int64), weights=times[members])[0]
                   / members.size)
        assert reps[c] == members[d == d.min()][0]


def test_rerun_profiles_writes_the_synthesizers_second_run_beside_an_old_data_dir(tmp_path):
    """bench/rerun_profiles.py: for a data dir synthesized without a second run, the second run
    the synthesizer would have written, byte for byte; the data dir is left as it was."""
    import subprocess
    import sys

    from gclsampler.synth.generate import generate

    data = tmp_path / "data"
    generate("bfs", data / "bfs", params={"nodes": 2048, "archs": ["turing"]}, arch="turing", seed=3,
             progress=False, jobs=1)
    before = {p.name: p.read_bytes() for p in (data / "bfs").rglob("*") if p.is_file()}
    script = Path(__file__).resolve().parents[1] / "bench" / "rerun_profiles.py"
    run = subprocess.run([sys.executable, str(script), str(data), str(tmp_path / "rr")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    # the file the synthesizer writes when asked for the second run itself (what it holds:
    # tests/test_second_run.py)
    generate("bfs", tmp_path / "both", params={"nodes": 2048, "archs": ["turing", "turing_rerun"]}, arch="turing",
             seed=3, progress=False, jobs=1)
    second = (tmp_path / "rr" / "bfs" / "turing_rerun.csv").read_bytes()
    assert second == (tmp_path / "both" / "profiles" / "turing_rerun.csv").read_bytes()
    assert second != (data / "bfs" / "profiles" / "turing.csv").read_bytes()
    assert {p.name: p.read_bytes() for p in (data / "bfs").rglob("*") if p.is_file()} == before
    # a data dir the synthesizer did not make cannot be run again
    meta = json.loads((data / "bfs" / "workload.json").read_text())
    (data / "bfs" / "workload.json").write_text(json.dumps({**meta, "synthetic": False}))
    run = subprocess.run([sys.executable, str(script), str(data), str(tmp_path / "rr2")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "not a synthetic workload" in run.stderr
    assert not (tmp_path / "rr2" / "bfs").exists()
