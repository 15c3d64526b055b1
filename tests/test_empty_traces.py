"""Launches with an empty trace: on a real GPU a small grid can have no CTA on the traced SM,
and the tracer writes its header alone. Each is still one invocation: the graph stage, the
encoder and every sampler keep it (plans account for every invocation, weights sum to N)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from gclsampler.trace import read_kernel


def _empty(path) -> None:
    """Cut a grouped trace to its header (ends with the `#traces format` line, as the tracer writes it)."""
    text = path.read_text()
    path.write_text(text[:text.index("#BEGIN_TB")])


@pytest.fixture(scope="module")
def empty_wl(tiny_workload, tmp_path_factory):
    """A copy of the tiny workload in which invocations 2, 5 and 6 have empty traces (two of them
    launches of one kernel and shape, so Photon can reuse one for the other)."""
    import pandas as pd

    dst = tmp_path_factory.mktemp("empty") / "wl"
    shutil.copytree(tiny_workload, dst, ignore=shutil.ignore_patterns(".graph-cache"))
    prof = pd.read_csv(dst / "profile.csv")
    key = prof["kernel_name"] + prof["grid"] + prof["block"]
    twins = [int(i) for i in np.flatnonzero(key.duplicated(keep=False).to_numpy())]
    pair = [i for i in twins if (key == key[i]).sum() >= 2][:1]
    pair.append(int(np.flatnonzero((key == key[pair[0]]).to_numpy())[1]))
    empty = sorted({2, *pair})
    for i in empty:
        _empty(dst / f"kernel-{i + 1}.traceg")
    return dst, empty, pair


def test_empty_traces_read_validate_and_build_empty_graphs(empty_wl, tmp_path):
    from gclsampler.data import GraphDataset
    from gclsampler.graph import GraphConfig
    from gclsampler.validate import errors_and_warnings, check_workload

    wl, empty, pair = empty_wl
    assert [read_kernel(wl / f"kernel-{i + 1}.traceg").n_insts for i in empty] == [0] * len(empty)
    errors, _ = errors_and_warnings(check_workload(wl))
    assert not errors
    ds = GraphDataset(wl, GraphConfig(max_warps=2, max_insts_per_warp=32), cache_dir=tmp_path / "c", workers=1)
    assert len(ds.inv_to_graph) == len(ds.invocations)  # no invocation dropped
    for i in empty:
        assert ds.graph(int(ds.inv_to_graph[i])).num_nodes == 0


@pytest.mark.parametrize("model", ["default", "paper"])
def test_encoder_trains_and_embeds_with_empty_graphs(empty_wl, tmp_path, model):
    from gclsampler.augment import AugmentConfig
    from gclsampler.data import GraphDataset
    from gclsampler.graph import GraphConfig
    from gclsampler.model import ModelConfig
    from gclsampler.train import TrainConfig, embed_invocations, fit

    wl, empty, pair = empty_wl
    ds = GraphDataset(wl, GraphConfig(max_warps=2, max_insts_per_warp=32), cache_dir=tmp_path / "c", workers=1)
    graphs = [ds.graph(g) for g in range(ds.n_unique)]
    mcfg = ModelConfig(**({"inst_stats": False, "kernel_features": False} if model == "paper" else {}))
    torch.manual_seed(0)
    r = fit(graphs, mcfg, AugmentConfig(), TrainConfig(epochs=1, batch_size=4, seed=0, progress=False, threads=1), None)
    emb = embed_invocations(r.model, graphs, np.asarray(ds.inv_to_graph), batch_size=4)
    assert emb.shape[0] == len(ds.invocations) and np.isfinite(emb).all()


def test_every_sampler_keeps_every_invocation(empty_wl):
    from gclsampler.evaluate import make_sampler
    from gclsampler.samplers import SAMPLERS
    from gclsampler.workload import Workload

    wl, empty, pair = empty_wl
    w = Workload.load(wl)
    n = w.n_invocations
    w.embeddings = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    w.paper_embeddings = w.embeddings.copy()
    for method in sorted(SAMPLERS):
        plan = make_sampler(method, {"epsilon": 0.25} if method in ("stem_root", "gcl_stem") else {}).fit(w)
        plan.validate(method)
        assert plan.n_invocations == n and sum(s.weight for s in plan.samples) == pytest.approx(n), method
        assert sum(c.size for c in plan.clusters) == n, method


def test_photon_lets_empty_launches_of_one_kernel_reuse_each_other(empty_wl):
    from gclsampler.photon import PhotonSampler, workload_bbvs
    from gclsampler.workload import Workload

    wl, empty, pair = empty_wl
    bbv = workload_bbvs(wl)
    assert all(bbv[i].nnz == 1 for i in empty)  # the pseudo-block, not an all-zero row
    s = PhotonSampler()
    s.fit(Workload.load(wl))
    a, b = pair
    assert s.labels_[a] == s.labels_[b]  # same kernel and shape, both empty: one representative
    joined = {int(i) for i in np.flatnonzero(s.labels_ == s.labels_[a])}
    assert joined <= set(empty)  # no launch that executed something joins them


@pytest.mark.parametrize("model", ["default", "paper", "pyg"])
def test_a_batch_of_empty_graphs_alone_embeds_as_it_does_beside_others(empty_wl, tmp_path, model):
    """A header-only trace's graph has no nodes. Embedded in a batch with no other graph (its own
    batch, or the last batch of the list) the conv's view(0, -1) raised and train.py ended in a
    traceback; its embedding must not depend on which batch it falls into."""
    from gclsampler.data import GraphDataset
    from gclsampler.graph import GraphConfig
    from gclsampler.model import GCLModel, ModelConfig
    from gclsampler.train import embed_graphs

    wl, empty, pair = empty_wl
    ds = GraphDataset(wl, GraphConfig(max_warps=2, max_insts_per_warp=32), cache_dir=tmp_path / "c", workers=1)
    graphs = [ds.graph(g) for g in range(ds.n_unique)]
    cfg = {"default": {}, "paper": {"inst_stats": False, "kernel_features": False}, "pyg": {"conv": "pyg"}}[model]
    torch.manual_seed(0)
    m = GCLModel(ModelConfig(**cfg))
    together = embed_graphs(m, graphs, batch_size=len(graphs))
    one_by_one = embed_graphs(m, graphs, batch_size=1)
    hollow = [g for g in range(len(graphs)) if graphs[g].num_nodes == 0]
    assert hollow and np.isfinite(one_by_one).all()
    np.testing.assert_allclose(one_by_one[hollow], together[hollow], rtol=0, atol=1e-6)


def test_validate_full_warns_when_most_traces_are_a_header_alone(empty_wl, tmp_path):
    """A few header-only traces are launches that ran on other SMs; all of them is a tracer that
    recorded nothing, which `validate --full` called ok (and train.py then embedded zeros)."""
    from gclsampler.validate import check_workload, errors_and_warnings

    wl, empty, pair = empty_wl

    def hollow_warning(root):
        _, warnings = errors_and_warnings(check_workload(root, bodies=True))
        return [w.text for w in warnings if "are a header alone" in w.text]

    assert hollow_warning(wl) == []  # 3 of the workload's launches: a scope that missed them
    dst = tmp_path / "all"
    shutil.copytree(wl, dst, ignore=shutil.ignore_patterns(".graph-cache"))
    names = sorted(dst.glob("kernel-*.traceg"))
    for path in names:
        if read_kernel(path).n_insts:
            _empty(path)
    (line,) = hollow_warning(dst)
    assert f"{len(names)} of {len(names)} traces are a header alone" in line and "GCL_COUNT_ONLY" in line
