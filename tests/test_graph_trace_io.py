"""build_graph on the trace engineer's random traces (odd masks, wide addresses, UR/P registers)
and through a write_kernel/read_kernel round trip."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.graph import NODE_INSTRUCTION, NODE_VARIABLE, EDGE_WRITE, GraphConfig, build_graph
from gclsampler.trace import read_kernel, write_kernel
from gclsampler.trace.testing import random_kernel_trace

FIELDS = ("node_type", "token", "pc", "stats", "edge_index", "edge_type", "warp", "n_warps")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), values=st.booleans(), gran=st.sampled_from(["line", "sector", "address"]))
def test_random_kernel_traces_build_valid_graphs(seed, values, gran):
    t = random_kernel_trace(np.random.default_rng(seed), n_warps=4, max_insts=30, values=values)
    g = build_graph(t, GraphConfig(max_warps=0, max_insts_per_warp=0, mem_granularity=gran))
    nt, ei, et = g.node_type, g.edge_index, g.edge_type
    assert int((nt == NODE_INSTRUCTION).sum()) == t.n_insts
    assert ei.shape[1] == 0 or int(ei.max()) < g.num_nodes
    assert (g.warp[ei[0]] == g.warp[ei[1]]).all()
    assert torch.isfinite(g.stats).all() and bool((g.stats.abs() < 100).all())
    # each written version has exactly one writer; variables never have two producers
    wr = ei[1][et == EDGE_WRITE]
    assert (nt[wr] == NODE_VARIABLE).all() and len(torch.unique(wr)) == len(wr)
    assert int(g.n_warps[0]) == int((np.diff(t.warp_ptr) > 0).sum()) and bool((g.warp < int(g.n_warps[0])).all())


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_graph_survives_trace_file_round_trip(seed):
    t = random_kernel_trace(np.random.default_rng(seed), n_warps=3, max_insts=25, values=True)
    cfg = GraphConfig(max_warps=2, max_insts_per_warp=10)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "kernel-1.traceg"
        write_kernel(t, p)
        g2 = build_graph(read_kernel(p), cfg)
    g1 = build_graph(t, cfg)
    assert all(torch.equal(g1[k], g2[k]) for k in FIELDS)
