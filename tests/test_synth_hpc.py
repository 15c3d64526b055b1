"""gclsampler.synth HPC families and workloads: trace invariants, data-dependent control flow, shrinking work."""

from __future__ import annotations

import numpy as np
import pytest

import gclsampler.synth.families_hpc  # noqa: F401  (registers the families)
from gclsampler.synth.families import Launch, build
from gclsampler.synth.program import Memory
from gclsampler.trace.types import NO_REG
from tests.test_synth import ALLOWED, BASE, _popcount, _run, assert_trace_is_issued_less_guarded_off

# ----------------------------------------------------------------------------- HPC families
HPC = {
    "lu_row": Launch("l1", "lu_row", (1, 1, 1), (64, 1, 1), dict(n=50, k=3, A=BASE)),
    "lu_update": Launch("l2", "lu_update", (2, 8, 1), (32, 8, 1), dict(n=50, k=3, A=BASE)),
    "gemm_ffma": Launch("mm", "gemm_ffma", (2, 4, 1), (32, 8, 1), dict(N=30, M=40, K=20, A=BASE, B=BASE + 2**20,
                                                                         C=BASE + 2**21)),
    "nw_upper": Launch("nw1", "nw_diag", (3, 1, 1), (16, 1, 1),
                       dict(cols=129, penalty=10, input=BASE, ref=BASE + 2**20, bw=8, diag=3, upper=True)),
    "nw_lower": Launch("nw2", "nw_diag", (3, 1, 1), (16, 1, 1),
                       dict(cols=129, penalty=10, input=BASE, ref=BASE + 2**20, bw=8, diag=3, upper=False)),
    "lud_diagonal": Launch("d", "lud_diagonal", (1, 1, 1), (16, 1, 1), dict(n=64, m=BASE, offset=16)),
    "lud_perimeter": Launch("p", "lud_perimeter", (2, 1, 1), (32, 1, 1), dict(n=64, m=BASE, offset=16)),
    "lud_internal": Launch("i", "lud_internal", (2, 2, 1), (16, 16, 1), dict(n=64, m=BASE, offset=16)),
    "backprop_forward": Launch("bf", "backprop_forward", (1, 4, 1), (16, 16, 1),
                               dict(hid=16, input=BASE, weights=BASE + 2**20, partial=BASE + 2**21)),
    "backprop_adjust": Launch("ba", "backprop_adjust", (1, 4, 1), (16, 16, 1),
                              dict(hid=16, delta=BASE, ly=BASE + 2**20, weights=BASE + 2**21, oldw=BASE + 2**22)),
    "cfd_step_factor": Launch("sf", "cfd_step_factor", (2, 1, 1), (64, 1, 1),
                              dict(nelr=128, vars=BASE, areas=BASE + 2**20, step=BASE + 2**21)),
    "cfd_time_step": Launch("ts", "cfd_time_step", (2, 1, 1), (64, 1, 1),
                            dict(nelr=128, vars=BASE, old=BASE + 2**20, flux=BASE + 2**21, step=BASE + 2**22,
                                 stage=1)),
    "conv_igemm": Launch("cv", "conv_igemm", (2, 1, 1), (64, 1, 1),
                         dict(C=2, H=7, W=7, R=3, S=3, stride=1, pad=1, OH=7, OW=7, K=4, x=BASE, w=BASE + 2**20,
                              y=BASE + 2**21, bias=BASE + 2**22)),
    "maxpool": Launch("mp", "maxpool", (1, 1, 1), (64, 1, 1), dict(C=2, H=7, W=7, OH=3, OW=3, x=BASE, y=BASE + 2**20)),
    "fc_ffma": Launch("fc", "fc_ffma", (2, 1, 1), (128, 1, 1), dict(K=100, N=7, w=BASE, x=BASE + 2**20, y=BASE + 2**21,
                                                                     bias=BASE + 2**22, relu=True)),
}


@pytest.mark.parametrize("key", sorted(HPC))
def test_hpc_family_trace_invariants(key):
    L = HPC[key]
    ctas = [[0, 0, 0], [L.grid[0] - 1, L.grid[1] - 1, 0]]
    prog, res = _run(L, ctas)
    t = res.trace
    assert_trace_is_issued_less_guarded_off(L, ctas, res)
    assert t.dst.shape[1] <= 1 and t.src.shape[1] <= 4
    assert {op.split(".")[0] for op in t.opcode_table} <= ALLOWED
    act = _popcount(t.mask)
    assert (act > 0).all()
    assert np.array_equal(np.diff(t.addr_ptr), np.where(t.mem_width > 0, act, 0))
    nops = (t.dst != NO_REG).sum(1) + (t.src != NO_REG).sum(1)
    assert np.array_equal(np.diff(t.value_ptr), nops * act)


def _bfs_mem(rng, n=96):
    counts = rng.integers(0, 9, size=n).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    edges = rng.integers(0, n, size=int(counts.sum())).astype(np.int32)
    mask = (rng.random(n) < 0.4).astype(np.uint8)
    visited = (rng.random(n) < 0.5).astype(np.uint8)
    mem = Memory()
    ptr = {}
    for i, (name, arr) in enumerate((("nodes", np.stack([starts, counts], 1).reshape(-1)), ("edges", edges),
                                     ("mask", mask), ("visited", visited))):
        ptr[name] = BASE + (i + 1) * 2**24
        mem.register(ptr[name], arr.nbytes, arr)
    return mem, ptr, counts, starts, edges, mask, visited


def test_bfs_expand_follows_graph_data(rng):
    n = 96
    mem, ptr, counts, starts, edges, mask, visited = _bfs_mem(rng, n)
    L = Launch("bfs", "bfs_expand", (3, 1, 1), (32, 1, 1),
               dict(n=n, cost=BASE + 2**30, updating=BASE + 2**31, over=BASE + 2**32, **ptr))
    _, res = _run(L, [[0, 0, 0], [1, 0, 0], [2, 0, 0]], mem=mem)
    t = res.trace
    edge_load = t.mem_width == 4
    for w in range(3):
        s = slice(t.warp_ptr[w], t.warp_ptr[w + 1])
        nodes = w * 32 + np.arange(32)
        front = nodes[mask[nodes] == 1]
        # edge-list loads (LDG of edges[i]) happen once per frontier edge, with its real address
        addrs = [t.addrs[t.addr_ptr[i]:t.addr_ptr[i + 1]] for i in np.flatnonzero(edge_load[s]) + t.warp_ptr[w]]
        got = np.sort(np.concatenate([a for a in addrs if len(a) and ptr["edges"] <= a[0] < ptr["edges"] + 2**24]
                                     or [np.zeros(0, np.uint64)]))
        want = np.sort(np.concatenate([ptr["edges"] + 4 * np.arange(starts[f], starts[f] + counts[f]) for f in front]
                                      or [np.zeros(0)]).astype(np.uint64))
        assert np.array_equal(got, want)
        # cost stores go exactly to unvisited neighbours
        stores = [i for i in np.flatnonzero(t.mem_width[s] == 4) + t.warp_ptr[w]
                  if t.opcode_table[t.opcode[i]].startswith("STG")]
        tgt = np.sort(np.concatenate([t.addrs[t.addr_ptr[i]:t.addr_ptr[i + 1]] for i in stores] or [np.zeros(0)]))
        nb = np.concatenate([edges[starts[f]:starts[f] + counts[f]] for f in front] or [np.zeros(0, np.int32)])
        want_st = np.sort((BASE + 2**30 + 4 * nb[visited[nb] == 0].astype(np.int64)).astype(np.uint64))
        assert np.array_equal(tgt.astype(np.uint64), want_st)


def test_lu_and_lud_work_shrinks():
    from gclsampler.synth.generate import plan_launches

    def total(L):
        ctas = [[x, y, 0] for x in range(L.grid[0]) for y in range(L.grid[1])]
        return _run(L, ctas, cap=1)[1].insts_total.sum()

    launches = plan_launches("lu", {"n": 48})
    upd = [total(L) for L in launches if L.family == "lu_update"][::8]
    assert all(a > b for a, b in zip(upd, upd[1:]))
    lud = plan_launches("lud", {"n": 64})
    grids = [L.n_ctas for L in lud if L.family == "lud_internal"]
    assert grids == sorted(grids, reverse=True) and grids[-1] < grids[0]


def test_nw_names_and_two_behaviours():
    from gclsampler.synth.generate import plan_launches

    launches = plan_launches("nw", {"n": 256})
    bw = 256 // 16
    assert len(launches) == 2 * bw - 1 == len({L.name for L in launches})
    sigs = {build(L).signature() for L in launches}
    assert len(sigs) == 2  # same program per triangle; only launch parameters differ
