"""HRG rules the module docstrings spell out that the other graph tests do not pin down:
footprint buckets, float16 value reading, register classes, per-warp instruction statistics
and the radix argsort helper."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.graph import (
    NODE_INSTRUCTION, NODE_PSEUDO, NODE_VARIABLE, PSEUDO_VOCAB, VARIABLE_VOCAB,
    GraphConfig, build_graph,
)
from gclsampler.graph import _stable_argsort

from _trace_fixtures import Inst, make_trace

# graph.py: "distinct memory units touched: 1, 2, 3-4, 5-8, 9-16, 17+"
_BUCKET_UPPER = (1, 2, 4, 8, 16, None)


def _bucket(units: int) -> int:
    return next(b for b, hi in enumerate(_BUCKET_UPPER) if hi is None or units <= hi)


def _slog(x):
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.log1p(np.abs(x))


@pytest.mark.parametrize("units", range(1, 33))
def test_memref_footprint_bucket_follows_the_documented_ranges(units):
    """A load whose lanes touch ``units`` distinct 128-byte lines gets the MEMREF bucket of
    the documented ranges (3 lines is bucket 3-4, not 2)."""
    mask = (1 << 32) - 1
    # every lane active; lanes spread over `units` lines, lane l in line l % units
    addrs = tuple(0x100000 + 128 * (lane % units) + 4 * (lane // units) for lane in range(32))
    g = build_graph(make_trace([[Inst("LDG.E", ("R1",), ("R2",), mem_width=4, mask=mask, addrs=addrs)]],
                               with_values=False), GraphConfig(mem_granularity="line"))
    p = (g.node_type == NODE_PSEUDO).nonzero().view(-1)
    assert len(p) == 1
    assert PSEUDO_VOCAB[int(g.token[p[0]])] == f"MEMREF.LD.GLOBAL.F{_bucket(units)}"


def test_half_precision_sources_are_read_from_the_low_half():
    """HADD2 reads its sources as float16 in the low 16 bits (the first lane of a half2 pair);
    the high half must not leak into the live-in's statistics."""
    halves = np.array([1.5, -2.25, 0.125, 6.0], dtype=np.float16)
    low = halves.view(np.uint16).astype(np.uint32)
    garbage = np.array([0x3C00, 0xBC00, 0x7BFF, 0x0001], dtype=np.uint32)  # 1.0, -1.0, 65504, tiny
    bits = (garbage << 16) | low
    w = [Inst("HADD2", ("R1",), ("R2", "RZ"), mask=0xF,
              values=[[0, 0, 0, 0], [int(b) for b in bits], [0, 0, 0, 0]])]
    g = build_graph(make_trace([w]))
    var = (g.node_type == NODE_VARIABLE).nonzero().view(-1)
    # R1 written (no stats), R2 live-in (stats of the low halves)
    live = [int(v) for v in var if g.stats[v].abs().sum() > 0]
    assert len(live) == 1
    x = _slog(halves.astype(np.float64))
    np.testing.assert_allclose(g.stats[live[0], 0].item(), x.mean(), rtol=1e-5)
    np.testing.assert_allclose(g.stats[live[0], 3].item(), x.min(), rtol=1e-5)
    np.testing.assert_allclose(g.stats[live[0], 4].item(), x.max(), rtol=1e-5)


@pytest.mark.parametrize("reg, cls", [("R7", "REG.R"), ("UR5", "REG.UR"), ("P0", "REG.P"), ("P6", "REG.P"),
                                      ("UP0", "REG.UP"), ("UP6", "REG.UP")])
def test_register_versions_carry_their_register_class(reg, cls):
    """A written register's version is tokenised by its class (R, UR, P, UP), the first and
    the last register of each class included."""
    g = build_graph(make_trace([[Inst("MOV", (reg,), ())]]))
    var = g.node_type == NODE_VARIABLE
    assert [VARIABLE_VOCAB[t] for t in g.token[var].tolist()] == [cls]


def test_warp_length_statistic_is_each_instructions_own_warp():
    """INST_STAT_WARP_LEN is log1p of the length of the warp the instruction belongs to."""
    lens = (3, 7, 2)
    warps = [[Inst("IADD3", ("R1",), ("R1",)) for _ in range(k)] for k in lens]
    g = build_graph(make_trace(warps), GraphConfig(max_warps=0, max_insts_per_warp=0))
    inst = g.node_type == NODE_INSTRUCTION
    got = g.stats[inst, 1].numpy()
    want = np.log1p(np.repeat(np.array(lens, dtype=np.float64), lens))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(g.warp[inst].numpy(), np.repeat(np.arange(3), lens))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=300), st.integers(0, 3))
def test_stable_argsort_matches_numpys_stable_sort(keys, dup):
    """``_stable_argsort`` is documented as a stable argsort of keys below 2**32 (its two radix
    passes must give numpy's order, keys past 2**16 included)."""
    key = np.array(keys + keys[:dup], dtype=np.int64)
    np.testing.assert_array_equal(_stable_argsort(key), np.argsort(key, kind="stable"))
