"""HRG construction: a hand-written trace with its exact graph, plus invariants on random traces."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.graph import (
    EDGE_ADDRESS, EDGE_CONTROL, EDGE_READ, EDGE_WRITE, KERNEL_FEATURE_NAMES, NODE_INSTRUCTION, NODE_PSEUDO,
    NODE_VARIABLE, NUM_EDGE_TYPES, NUM_NODE_TYPES, OPCODE_VOCAB, PSEUDO_VOCAB, VARIABLE_VOCAB,
    GraphConfig, GraphConfigError, build_graph, graph_summary, kernel_features, opcode_token, vocab_sizes,
)
from gclsampler.trace.types import NO_REG, reg_code

from _trace_fixtures import Inst, make_trace, random_trace

C, R, W, A = EDGE_CONTROL, EDGE_READ, EDGE_WRITE, EDGE_ADDRESS


def _slog(x):
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.log1p(np.abs(x))


def _stats8(x):
    """Independent reference: numpy/scipy definitions of the 8 statistics."""
    x = np.asarray(x, dtype=np.float64)
    s = float(np.mean((x - x.mean()) ** 3) / x.std() ** 3) if x.std() > 0 else 0.0
    return np.array([x.mean(), x.std(), np.median(x), x.min(), x.max(),
                     np.percentile(x, 25), np.percentile(x, 75), s])


def _edges(g):
    return sorted(zip(g.edge_index[0].tolist(), g.edge_index[1].tolist(), g.edge_type.tolist()))


def _hand_trace():
    f = lambda v: int(np.float32(v).view(np.uint32))  # noqa: E731
    warp = [
        Inst("S2R", ("R0",), (), values=[[0, 1]]),                                       # 0
        Inst("IADD3", ("R2",), ("R0", "R1", "RZ"), values=[[7, 8], [0, 1], [-5, 1000], [0, 0]]),  # 1
        Inst("STG.E", (), ("R2", "R0"), mem_width=4, addrs=(0x1000, 0x1004)),             # 2
        Inst("LDG.E", ("R4",), ("R2",), mem_width=4, addrs=(0x1000, 0x1004)),             # 3
        Inst("IADD3", ("R4",), ("R4", "R0")),                                             # 4
        Inst("FADD", ("R5",), ("R4", "R6"), values=[[0, 0], [0, 0], [f(1.5), f(-3.0e6)]]),  # 5
        Inst("EXIT"),                                                                     # 6
    ]
    for i in warp:
        i.mask = 0x3
    return make_trace([warp])


def test_hand_written_trace_exact_graph():
    g = build_graph(_hand_trace(), GraphConfig())
    # nodes: 7 instructions, 2 MEMREFs (STG at 7, LDG at 8), register writes R0@0 R2@1 R4@3
    # R4@4 R5@5 (9..13), live-ins R1 R6 (14, 15), the written global line (16).
    assert g.num_nodes == 17
    assert g.node_type.tolist() == [0] * 7 + [1] * 2 + [2] * 8
    ops = ["S2R", "IADD3", "STG", "LDG", "IADD3", "FADD", "EXIT"]
    assert g.token[:7].tolist() == [OPCODE_VOCAB.index(o) for o in ops]
    assert [PSEUDO_VOCAB[t] for t in g.token[7:9].tolist()] == ["MEMREF.ST.GLOBAL.F0", "MEMREF.LD.GLOBAL.F0"]
    assert [VARIABLE_VOCAB[t] for t in g.token[9:].tolist()] == ["REG.R"] * 7 + ["MEM.GLOBAL"]
    assert torch.allclose(g.pc[:7], torch.arange(7, dtype=torch.float32) / 6)
    assert (g.pc[7:] == 0).all()
    assert g.warp.tolist() == [0] * 17 and g.n_warps.tolist() == [1]
    expected = [
        # control flow path
        (0, 1, C), (1, 2, C), (2, 3, C), (3, 4, C), (4, 5, C), (5, 6, C),
        # writes: instruction -> new version
        (0, 9, W), (1, 10, W), (3, 11, W), (4, 12, W), (5, 13, W), (2, 16, W),
        # reads of the latest version; live-ins R1 (14) and R6 (15)
        (9, 1, R), (14, 1, R), (9, 2, R), (11, 4, R), (9, 4, R), (12, 5, R), (15, 5, R),
        # memory: the LDG reads the line version the STG wrote
        (16, 3, R),
        # addressing: address register -> MEMREF -> instruction
        (10, 7, A), (10, 8, A), (7, 2, A), (8, 3, A),
    ]
    assert _edges(g) == sorted(expected)
    # statistics only on live-ins: R1 read by IADD3 as int32, R6 read by FADD as float32
    np.testing.assert_allclose(g.stats[14].numpy(), _stats8(_slog([-5, 1000])), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g.stats[15].numpy(), _stats8(_slog([1.5, -3.0e6])), rtol=1e-5, atol=1e-5)
    # instruction nodes: each PC ran once in a 7-instruction warp, no immediates
    inst = g.stats[:7].numpy()
    np.testing.assert_allclose(inst[:, 0], np.log1p(1.0), rtol=1e-6)
    np.testing.assert_allclose(inst[:, 1], np.log1p(7.0), rtol=1e-6)
    assert (inst[:, 2:] == 0).all()
    other = torch.ones(17, dtype=torch.bool)
    other[[14, 15]] = False
    other[:7] = False
    assert (g.stats[other] == 0).all()


def test_memory_live_in_gets_loaded_value_stats_and_warps_are_separate():
    w0 = [Inst("LDG.E", ("R1",), ("R2",), mem_width=4, mask=0xF,
               addrs=(0x2000, 0x2004, 0x2080, 0x2084), values=[[1, 2, 30, 40], [0, 0, 0, 0]]),
          Inst("STG.E", (), ("R2", "R1"), mem_width=4, mask=0x1, addrs=(0x2000,))]
    w1 = [Inst("LDG.E", ("R1",), ("R2",), mem_width=4, mask=0x1, addrs=(0x2000,), values=[[9], [0]])]
    g = build_graph(make_trace([w0, w1]), GraphConfig(mem_granularity="line"))
    mem = (g.node_type == NODE_VARIABLE) & (g.token >= VARIABLE_VOCAB.index("MEM.GLOBAL"))
    # warp 0: lines 0x2000 and 0x2080 read (live-in) + 0x2000 written; warp 1: its own live-in
    assert int(mem.sum()) == 4
    assert sorted(g.warp[mem].tolist()) == [0, 0, 0, 1]
    live_stats = sorted(tuple(np.round(r, 4)) for r in g.stats[mem].numpy() if np.any(r))
    want = sorted(tuple(np.round(_stats8(_slog(v)), 4)) for v in ([1, 2], [30, 40], [9]))
    np.testing.assert_allclose(np.array(live_stats), np.array(want), atol=1e-3)
    # the LDG's MEMREF footprint bucket: 2 lines -> F1
    p = (g.node_type == NODE_PSEUDO).nonzero().view(-1)
    assert PSEUDO_VOCAB[int(g.token[p[0]])] == "MEMREF.LD.GLOBAL.F1"
    ei = g.edge_index
    assert (g.warp[ei[0]] == g.warp[ei[1]]).all()


def test_memory_live_in_read_by_an_access_without_a_loaded_value_keeps_its_access_pattern():
    """LDGSTS (into shared memory) and RED (returns nothing) have no destination, so a trace with
    values records no loaded value for them: the global lines they read first were live-ins with
    all-zero statistics, like versions written in the graph, while the same trace without values
    gave them their access pattern. Both now give the access pattern; a load keeps its values."""
    w = [Inst("LDGSTS.E.128", (), ("R3", "R2"), mem_width=16, mask=0x3, addrs=(0x1010, 0x1030)),
         Inst("RED.E.ADD", (), ("R4", "R5"), mem_width=4, mask=0x1, addrs=(0x2008,)),
         Inst("LDG.E", ("R1",), ("R6",), mem_width=4, mask=0x3, addrs=(0x3000, 0x3004), values=[[7, 9], [0, 0]])]
    cfg = GraphConfig(mem_granularity="line")
    for with_values in (True, False):
        g = build_graph(make_trace([w], with_values=with_values), cfg)
        mem = ((g.node_type == NODE_VARIABLE) & (g.token >= VARIABLE_VOCAB.index("MEM.GLOBAL"))).nonzero().view(-1)
        reads = {int(d): int(s) for s, d, t in zip(*g.edge_index.tolist(), g.edge_type.tolist())
                 if t == R and s in set(mem.tolist())}  # instruction -> the live-in line it reads
        np.testing.assert_allclose(g.stats[reads[0]].numpy(), _stats8(np.log1p([0x10, 0x30])), atol=1e-5)
        np.testing.assert_allclose(g.stats[reads[1]].numpy(), _stats8(np.log1p([0x08])), atol=1e-5)
        ldg = _stats8(_slog([7, 9])) if with_values else _stats8(np.log1p([0, 4]))
        np.testing.assert_allclose(g.stats[reads[2]].numpy(), ldg, atol=1e-5)


def test_sector_granularity_splits_a_line():
    w = [Inst("LDG.E", ("R1",), ("R2",), mem_width=4, mask=0x3, addrs=(0x0, 0x40))]
    assert int(((build_graph(make_trace([w]), GraphConfig(mem_granularity="sector")).token
                 == VARIABLE_VOCAB.index("MEM.GLOBAL"))).sum()) >= 2
    g_line = build_graph(make_trace([w]), GraphConfig(mem_granularity="line"))
    g_sec = build_graph(make_trace([w]), GraphConfig(mem_granularity="sector"))
    n_mem = lambda g: int(((g.node_type == 2) & (g.token == VARIABLE_VOCAB.index("MEM.GLOBAL"))).sum())  # noqa: E731
    assert (n_mem(g_line), n_mem(g_sec)) == (1, 2)


def test_opcode_tokens_drop_modifiers_and_unknown_maps_to_unk():
    assert opcode_token("LDG.E.128.SYS") == OPCODE_VOCAB.index("LDG")
    assert opcode_token("NOT_AN_OPCODE.X") == 0 and OPCODE_VOCAB[0] == "<UNK>"
    assert vocab_sizes() == {"instruction": len(OPCODE_VOCAB), "pseudo": len(PSEUDO_VOCAB),
                             "variable": len(VARIABLE_VOCAB)}
    assert NUM_NODE_TYPES == 3 and NUM_EDGE_TYPES == 4


@pytest.mark.parametrize("key,value", [("max_warps", -1), ("mem_granularity", "page"),
                                       ("warp_selection", "random"), ("max_units_per_access", 0)])
def test_bad_config_names_the_key(key, value):
    with pytest.raises(GraphConfigError, match=f"graph.{key}"):
        build_graph(_hand_trace(), GraphConfig(**{key: value}))


@pytest.mark.parametrize("key", ["max_warps", "max_insts_per_warp", "max_units_per_access", "windows"])
@pytest.mark.parametrize("value", [True, False])
def test_bool_is_not_an_integer_config_value(key, value):
    """bool subclasses int: graph.max_units_per_access=True was taken as 1, and its cache
    fingerprint (JSON ``true``) differed from the equal graph's of ``1``."""
    with pytest.raises(GraphConfigError, match=f"graph.{key}: must be an integer") as err:
        GraphConfig(**{key: value}).validate()
    assert "\n" not in str(err.value) and f"got {value!r}" in str(err.value)


def test_caps_bound_warps_and_instructions():
    t = random_trace(np.random.default_rng(3), n_warps=9, max_len=30)
    g = build_graph(t, GraphConfig(max_warps=4, max_insts_per_warp=5))
    ins = g.node_type == NODE_INSTRUCTION
    assert int(g.n_warps[0]) == 4
    counts = torch.bincount(g.warp[ins], minlength=4)
    lens = np.diff(t.warp_ptr)[np.round(np.linspace(0, 8, 4)).astype(int)]
    assert counts.tolist() == np.minimum(lens, 5).tolist()


def _reference_reads(t, cfg):
    """Naive per-instruction loop: (reader, writer or -1) for every register read."""
    out = []
    const = {reg_code(x) for x in ("RZ", "URZ", "PT", "UPT")}
    base = 0
    for w in range(t.n_warps):
        last = {}
        for k in range(int(t.warp_ptr[w]), int(t.warp_ptr[w + 1])):
            for r in t.src[k]:
                if r != NO_REG and int(r) not in const:
                    out.append((base + k - int(t.warp_ptr[w]), last.get(int(r), -1)))
            for r in t.dst[k]:
                if r != NO_REG and int(r) not in const:
                    last[int(r)] = base + k - int(t.warp_ptr[w])
        base += int(t.warp_ptr[w + 1] - t.warp_ptr[w])
    return sorted(out)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), values=st.booleans())
def test_random_trace_invariants(seed, values):
    t = random_trace(np.random.default_rng(seed), with_values=values)
    cfg = GraphConfig(max_warps=0, max_insts_per_warp=0)
    g = build_graph(t, cfg)
    nt, ei, et = g.node_type, g.edge_index, g.edge_type
    ins = (nt == NODE_INSTRUCTION).nonzero().view(-1)
    # exactly one instruction node per traced instruction, in trace order
    assert len(ins) == t.n_insts and ins.tolist() == list(range(t.n_insts))
    assert torch.isfinite(g.stats).all() and torch.isfinite(g.pc).all()
    assert ((g.pc >= 0) & (g.pc <= 1)).all()
    # edges never cross warps
    assert (g.warp[ei[0]] == g.warp[ei[1]]).all()
    # control flow: a path through each warp's instructions in temporal order
    cf = ei[:, et == C]
    sizes = np.diff(t.warp_ptr)
    assert cf.shape[1] == int((sizes - 1).sum())
    assert (cf[1] == cf[0] + 1).all() and (g.warp[cf[0]] == g.warp[cf[1]]).all()
    assert (nt[cf] == NODE_INSTRUCTION).all()
    # typing: writes go instruction -> variable; every variable has at most one incoming edge
    wr = ei[:, et == W]
    assert (nt[wr[0]] == NODE_INSTRUCTION).all() and (nt[wr[1]] == NODE_VARIABLE).all()
    var_in = torch.bincount(ei[1][nt[ei[1]] == NODE_VARIABLE], minlength=g.num_nodes)
    assert var_in.numel() == 0 or int(var_in.max()) <= 1
    # variables with an incoming edge start at zero
    assert (g.stats[var_in > 0] == 0).all()
    # register reads attach to the latest earlier write of the same warp
    reg_var = (nt == NODE_VARIABLE) & (g.token <= VARIABLE_VOCAB.index("REG.UP"))
    writer = torch.full((g.num_nodes,), -1, dtype=torch.long)
    writer[wr[1]] = wr[0]
    pseudo_inst = torch.full((g.num_nodes,), -1, dtype=torch.long)
    pa = ei[:, (et == A) & (nt[ei[0]] == NODE_PSEUDO)]
    pseudo_inst[pa[0]] = pa[1]
    rd = ei[:, ((et == R) | (et == A)) & reg_var[ei[0]]]
    reader = torch.where(nt[rd[1]] == NODE_PSEUDO, pseudo_inst[rd[1]], rd[1])
    got = sorted(zip(reader.tolist(), writer[rd[0]].tolist()))
    assert got == _reference_reads(t, cfg)


def test_build_is_deterministic():
    t = random_trace(np.random.default_rng(11), n_warps=3)
    a, b = build_graph(t), build_graph(t)
    for k in ("node_type", "token", "pc", "stats", "edge_index", "edge_type", "warp", "n_warps"):
        assert torch.equal(a[k], b[k])


def test_config_from_hydra_node_and_yaml_defaults_match_dataclass():
    from pathlib import Path

    from omegaconf import OmegaConf

    yaml = OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "graph" / "default.yaml")
    assert GraphConfig.coerce(yaml) == GraphConfig()
    t = _hand_trace()
    a = build_graph(t, OmegaConf.create({"max_warps": 1, "mem_granularity": "sector"}))
    b = build_graph(t, GraphConfig(max_warps=1, mem_granularity="sector"))
    assert _edges(a) == _edges(b)
    with pytest.raises(GraphConfigError, match="graph.max_wraps"):
        GraphConfig.coerce({"max_wraps": 3})


def test_empty_warps_are_skipped_and_empty_traces_give_empty_graphs():
    g = build_graph(make_trace([[], [Inst("EXIT")], [], [Inst("NOP"), Inst("EXIT")]]))
    assert g.n_warps.tolist() == [2] and g.warp.tolist() == [0, 1, 1]
    assert torch.bincount(g.warp).min() > 0
    e = build_graph(make_trace([[]]))
    assert e.num_nodes == 0 and e.n_warps.tolist() == [0] and e.edge_index.shape == (2, 0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), gran=st.sampled_from(["line", "sector", "address"]),
       cap=st.integers(1, 4))
def test_memory_versions_match_naive_reference(seed, gran, cap):
    t = random_trace(np.random.default_rng(seed))
    cfg = GraphConfig(max_warps=0, max_insts_per_warp=0, mem_granularity=gran, max_units_per_access=cap)
    g = build_graph(t, cfg)
    nt, ei, et = g.node_type, g.edge_index, g.edge_type
    mem_var = (nt == NODE_VARIABLE) & (g.token >= VARIABLE_VOCAB.index("MEM.GLOBAL"))
    writer = torch.full((g.num_nodes,), -1, dtype=torch.long)
    wr = ei[:, et == W]
    writer[wr[1]] = wr[0]
    rd = ei[:, (et == R) & mem_var[ei[0]]]
    got = sorted(zip(rd[1].tolist(), writer[rd[0]].tolist()))
    from gclsampler.graph import _select_instructions

    idx, iw, _ = _select_instructions(t, cfg)
    assert got == _reference_kept(t, idx, iw, cfg, runs=True)[1]


# --------------------------------------------------------------------------------------
# Windows: data flow and control flow stay inside a run of consecutively traced instructions
# --------------------------------------------------------------------------------------


def _audit_trace():
    """One warp of 16: R1 written at 2, rewritten at 8, read at 12; a global line stored at 1,
    re-stored at 9, loaded at 13. Two windows of 4 keep 0-3 and 12-15."""
    nop = lambda: Inst("NOP", mask=0x3)  # noqa: E731
    w = [nop() for _ in range(16)]
    w[1] = Inst("STG.E", (), ("R3", "R4"), mem_width=4, mask=0x3, addrs=(0x1000, 0x1004))
    w[2] = Inst("MOV", ("R1",), ("R5",), mask=0x3, values=[[1, 2], [1, 2]])
    w[8] = Inst("MOV", ("R1",), ("R6",), mask=0x3, values=[[70, 80], [70, 80]])
    w[9] = Inst("STG.E", (), ("R3", "R1"), mem_width=4, mask=0x3, addrs=(0x1000, 0x1004))
    w[12] = Inst("IADD3", ("R2",), ("R1", "RZ"), mask=0x3, values=[[71, 81], [70, 80], [0, 0]])
    w[13] = Inst("LDG.E", ("R7",), ("R3",), mem_width=4, mask=0x3, addrs=(0x1000, 0x1004),
                 values=[[11, 12], [0x1000, 0x1004]])
    return make_trace([w])


def test_windows_read_at_a_run_start_is_a_live_in_and_no_control_edge_spans_a_gap():
    g = build_graph(_audit_trace(), GraphConfig(max_warps=0, max_insts_per_warp=8, windows=2))
    nt, ei, et = g.node_type, g.edge_index, g.edge_type
    assert int((nt == NODE_INSTRUCTION).sum()) == 8  # trace entries 0-3, 12-15 -> nodes 0-7
    cf = ei[:, et == C]
    assert sorted(zip(cf[0].tolist(), cf[1].tolist())) == [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7)]
    has_in = torch.zeros(g.num_nodes, dtype=torch.bool)
    has_in[ei[1]] = True
    reg_var = (nt == NODE_VARIABLE) & (g.token <= VARIABLE_VOCAB.index("REG.UP"))
    mem_var = (nt == NODE_VARIABLE) & (g.token == VARIABLE_VOCAB.index("MEM.GLOBAL"))
    # the IADD3 (node 4) reads R1: a live-in with the values traced at that read, not the
    # version written at trace entry 2 (entry 8 rewrote it in the gap)
    r1 = ei[0, (et == R) & (ei[1] == 4) & reg_var[ei[0]]]
    assert len(r1) == 1 and not bool(has_in[r1[0]])
    np.testing.assert_allclose(g.stats[r1[0]].numpy(), _stats8(_slog([70, 80])), atol=1e-3)
    # the LDG (node 5) reads the line stored at entries 1 and 9: a live-in with the loaded values
    ld = ei[0, (et == R) & (ei[1] == 5) & mem_var[ei[0]]]
    assert len(ld) == 1 and not bool(has_in[ld[0]])
    np.testing.assert_allclose(g.stats[ld[0]].numpy(), _stats8(_slog([11, 12])), atol=1e-3)
    # the whole warp (one run): both reads link to the latest write, control is one path
    full = build_graph(_audit_trace(), GraphConfig(max_warps=0, max_insts_per_warp=0))
    fe = full.edge_index
    assert int((full.edge_type == C).sum()) == 15
    writer = {int(d): int(s) for s, d in fe[:, full.edge_type == W].t().tolist()}
    for reader, want in ((12, 8), (13, 9)):
        src = fe[0, (full.edge_type == R) & (fe[1] == reader) & (full.node_type[fe[0]] == NODE_VARIABLE)]
        assert want in [writer.get(int(s), -1) for s in src.tolist()]


def _loaded_regs(opcode: str) -> int:
    """Registers a load fills from its named one on: LDG.E.64 a pair, LDS.128 a quad, LDSM.16.M88.4
    four (one per 8x8 matrix); everything else the register the trace names."""
    f = opcode.split(".")
    if f[0] == "LDSM":
        return {"2": 2, "4": 4}.get(f[-1], 1)
    if f[0] in ("LD", "LDG", "LDL", "LDS"):
        return 4 if "128" in f else 2 if "64" in f else 1
    return 1


def _reference_kept(t, idx, iw, cfg, runs: bool):
    """Naive loop over the kept instructions: (reader node, writer node or -1) for register
    reads and for memory-unit reads. With ``runs`` the versions reset wherever two kept
    instructions are not consecutive trace entries of one warp."""
    const = {reg_code(x) for x in ("RZ", "URZ", "PT", "UPT")}
    shift = {"line": 7, "sector": 5, "address": 0}[cfg.mem_granularity]
    reg_out, mem_out = [], []
    last, mlast = {}, {}
    for i, k in enumerate(idx.tolist()):
        if i == 0 or iw[i] != iw[i - 1] or (runs and k != idx[i - 1] + 1):
            last, mlast = {}, {}
        for r in t.src[k]:
            if r != NO_REG and int(r) not in const:
                reg_out.append((i, last.get(int(r), -1)))
        for r in t.dst[k]:
            if r != NO_REG and int(r) not in const and int(t.mask[k]) != 0:  # mask 0 writes nothing
                for q in range(int(r), int(r) + _loaded_regs(t.opcode_table[t.opcode[k]])):
                    if q in const:
                        break  # a quad at R253 fills R253, R254 and stops at RZ
                    last[q] = i
        a = t.addrs[t.addr_ptr[k]:t.addr_ptr[k + 1]]
        if t.mem_width[k] == 0 and len(a) == 0:
            continue
        base = t.opcode_table[t.opcode[k]].split(".")[0]
        space = {"STS": "S", "LDS": "S"}.get(base, "G")
        units = sorted({int(x) >> shift for x in a})[:cfg.max_units_per_access]
        for u in units:
            if base in ("LDG", "ATOMG", "LDS"):
                mem_out.append((i, mlast.get((space, u), -1)))
        for u in units:
            if base in ("STG", "STS", "ATOMG"):
                mlast[(space, u)] = i
    return sorted(reg_out), sorted(mem_out)


def _graph_reads(g):
    nt, ei, et = g.node_type, g.edge_index, g.edge_type
    writer = torch.full((g.num_nodes,), -1, dtype=torch.long)
    wr = ei[:, et == W]
    writer[wr[1]] = wr[0]
    reg_var = (nt == NODE_VARIABLE) & (g.token <= VARIABLE_VOCAB.index("REG.UP"))
    mem_var = (nt == NODE_VARIABLE) & (g.token >= VARIABLE_VOCAB.index("MEM.GLOBAL"))
    pseudo_inst = torch.full((g.num_nodes,), -1, dtype=torch.long)
    pa = ei[:, (et == A) & (nt[ei[0]] == NODE_PSEUDO)]
    pseudo_inst[pa[0]] = pa[1]
    rd = ei[:, ((et == R) | (et == A)) & reg_var[ei[0]]]
    reader = torch.where(nt[rd[1]] == NODE_PSEUDO, pseudo_inst[rd[1]], rd[1])
    md = ei[:, (et == R) & mem_var[ei[0]]]
    return (sorted(zip(reader.tolist(), writer[rd[0]].tolist())),
            sorted(zip(md[1].tolist(), writer[md[0]].tolist())))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), cap=st.integers(1, 30), windows=st.integers(1, 5),
       sel=st.sampled_from(["windows", "prefix"]))
def test_windows_keep_data_and_control_flow_inside_runs(seed, cap, windows, sel):
    from gclsampler.graph import _select_instructions

    t = random_trace(np.random.default_rng(seed), n_warps=2, max_len=60)
    cfg = GraphConfig(max_warps=0, max_insts_per_warp=cap, windows=windows, inst_selection=sel)
    g = build_graph(t, cfg)
    idx, iw, _ = _select_instructions(t, cfg)
    # every read links to a write earlier in its run, or is a live-in; with a prefix (one run
    # per warp) that is the per-warp rule of before
    assert _graph_reads(g) == _reference_kept(t, idx, iw, cfg, runs=True)
    if sel == "prefix" or windows == 1:
        assert _graph_reads(g) == _reference_kept(t, idx, iw, cfg, runs=False)
    # control edges join exactly the kept instructions that are consecutive trace entries of a warp
    cf = g.edge_index[:, g.edge_type == C]
    want = [(i, i + 1) for i in range(len(idx) - 1) if iw[i] == iw[i + 1] and idx[i + 1] == idx[i] + 1]
    assert sorted(zip(cf[0].tolist(), cf[1].tolist())) == want
    # variables carry statistics only where nothing writes them (live-ins)
    var_in = torch.bincount(g.edge_index[1][g.node_type[g.edge_index[1]] == NODE_VARIABLE], minlength=g.num_nodes)
    assert (g.stats[var_in > 0] == 0).all()


def test_a_line_issued_with_every_lane_guarded_off_writes_no_register():
    """A mask-00000000 line (``@P0 LDG R1, [R2]`` with P0 false on every lane; tracers write
    such lines) writes nothing: a later read of R1 links to the MOV's version, not to a
    version "created" by the guarded-off load, which the graph used to make."""
    w = [Inst("MOV", ("R1",), ("R5",), mask=0x3, values=[[1, 2], [1, 2]]),        # 0
         Inst("LDG.E", ("R1",), ("R2",), mem_width=4, mask=0x0),                  # 1: guarded off
         Inst("IADD3", ("R1",), ("R6", "RZ"), mask=0x0),                           # 2: guarded off
         Inst("IADD3", ("R4",), ("R1", "RZ"), mask=0x3),                           # 3
         Inst("STG.E", (), ("R3", "R1"), mem_width=4, mask=0x3, addrs=(0x1000, 0x1004))]  # 4
    g = build_graph(make_trace([w]), GraphConfig(max_warps=0, max_insts_per_warp=0))
    regs, mem = _graph_reads(g)
    assert [(i, wr) for i, wr in regs if i in (3, 4)] == [(3, 0), (4, -1), (4, 0)]  # R3 live-in, R1 from the MOV
    ei, et = g.edge_index, g.edge_type
    writers = ei[0, et == W].tolist()
    assert 1 not in writers and 2 not in writers  # the guarded-off lines create no version
    assert mem == []  # the guarded-off LDG read no memory


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), cap=st.integers(0, 30), windows=st.integers(1, 5))
def test_register_reads_skip_guarded_off_writes_on_generated_traces(seed, cap, windows):
    """Generated traces carry mask-0 lines with destination registers; every register read
    links to the latest write of its run by a line with at least one active lane."""
    from gclsampler.graph import _select_instructions
    from gclsampler.trace.testing import random_kernel_trace

    t = random_kernel_trace(np.random.default_rng(seed), n_warps=3, max_insts=50)
    cfg = GraphConfig(max_warps=0, max_insts_per_warp=cap, windows=windows)
    g = build_graph(t, cfg)
    idx, iw, _ = _select_instructions(t, cfg)
    assert _graph_reads(g)[0] == _reference_kept(t, idx, iw, cfg, runs=True)[0]


@pytest.mark.parametrize("cap,windows", [(2, 4), (3, 4), (2, 3), (3, 5)])
def test_windows_with_fewer_instructions_than_runs_still_end_at_the_warps_last(cap, windows):
    """``--max-insts 2`` with the default 4 windows: runs of 1, 1, 0, 0 instructions put the
    two kept ones in the first half of the warp; the last run must end at its last instruction."""
    from gclsampler.graph import _select_instructions

    t = make_trace([[Inst("NOP") for _ in range(20)]])
    idx, _, _ = _select_instructions(t, GraphConfig(max_warps=0, max_insts_per_warp=cap, windows=windows))
    assert len(idx) == cap and len(set(idx.tolist())) == cap
    assert int(idx[0]) == 0 and int(idx[-1]) == 19


def test_live_in_statistics_come_from_the_first_read_that_recorded_values():
    """A mask-0 line reads a live-in too (``@P0 STG [R2], R4`` with P0 false on every lane) but
    records no values; the live-in and the constant word keep the values the next read
    recorded, not zeros."""
    w = [Inst("ULDC", ("UR4",), (), mask=0x0, pc=0x10),                                # 0: guarded off
         Inst("STG.E", (), ("R2", "R4"), mem_width=4, mask=0x0, pc=0x20),              # 1: guarded off
         Inst("IADD3", ("R5",), ("R4", "RZ"), mask=0x3, pc=0x30, values=[[9, 9], [40, 50], [0, 0]]),
         Inst("ULDC", ("UR4",), (), mask=0x3, pc=0x10, values=[[7, 7]])]
    g = build_graph(make_trace([w]), GraphConfig(max_warps=0, max_insts_per_warp=0))
    ei, et = g.edge_index, g.edge_type
    r4 = ei[0, (et == R) & (ei[1] == 2) & (g.node_type[ei[0]] == NODE_VARIABLE)]
    assert len(r4) == 1 and (ei[0, ei[1] == 1] == r4[0]).any()  # the STG reads that same live-in
    np.testing.assert_allclose(g.stats[r4[0]].numpy(), _stats8(_slog([40, 50])), atol=1e-5)
    const = ((g.node_type == NODE_VARIABLE) & (g.token == VARIABLE_VOCAB.index("MEM.CONST"))).nonzero().view(-1)
    assert len(const) == 1
    np.testing.assert_allclose(g.stats[const[0]].numpy(), _stats8(_slog([7, 7])), atol=1e-5)


def test_constant_words_of_two_warps_stay_apart_whatever_the_pc():
    """The reader takes PCs up to 2**63 - 1 (absolute addresses, a hand-made trace); the (warp, PC)
    key of a constant word was warp * 2**40 + PC, so warp 0 at PC 2**40 + 0x10 and warp 1 at 0x10
    shared one MEM.CONST node: an edge across warps."""
    big = 1 << 40
    t = make_trace([[Inst("ULDC", ("UR4",), (), mask=0x1, pc=big + 0x10, values=[[5]])],
                    [Inst("ULDC", ("UR4",), (), mask=0x1, pc=0x10, values=[[9]])]])
    g = build_graph(t, GraphConfig(max_warps=0, max_insts_per_warp=0))
    ei = g.edge_index
    assert (g.warp[ei[0]] == g.warp[ei[1]]).all()
    const = ((g.node_type == NODE_VARIABLE) & (g.token == VARIABLE_VOCAB.index("MEM.CONST"))).nonzero().view(-1)
    assert g.warp[const].tolist() == [0, 1]
    np.testing.assert_allclose(g.stats[const].numpy(), np.stack([_stats8(_slog([5])), _stats8(_slog([9]))]),
                               atol=1e-5)


# --------------------------------------------------------------------------------------
# The size vector, constant-bank words, warp selection, instruction statistics, edge names
# --------------------------------------------------------------------------------------


def test_size_vector_counts_every_warp_cta_and_the_whole_grid():
    """kfeat is what tells launches apart that a capped graph cannot: a column swapped or a
    count taken wrong (a grid without z, CTAs counted by coordinate instead of by CTA) feeds
    the encoder and the work split the wrong size."""
    import dataclasses

    def nops(n):
        return [Inst("NOP") for _ in range(n)]

    w0 = [Inst("LDG.E", ("R1",), ("R2",), mem_width=4, mask=0xF, addrs=(0, 4, 8, 12)), Inst("EXIT", mask=0xF)]
    t = make_trace([w0, nops(4), nops(6), nops(4)])
    # warps 0 and 1 in CTA (0,0,0), warp 2 in CTA (1,0,0), warp 3 in CTA (0,1,0): 3 CTAs, 2 distinct x and y
    cta = np.array([[0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.int32)
    t = dataclasses.replace(t, warp_cta=cta,
                            header=dataclasses.replace(t.header, grid=(2, 3, 4), block=(64, 1, 2)))
    raw = {"insts_per_warp_mean": 4.0, "insts_per_warp_max": 6.0, "insts_on_sm": 16.0, "warps_on_sm": 4.0,
           "ctas_on_sm": 3.0, "grid_ctas": 24.0, "threads_per_cta": 128.0, "addresses_per_warp": 1.0}
    want = np.log2(1.0 + np.array([raw[k] for k in KERNEL_FEATURE_NAMES]))
    np.testing.assert_allclose(kernel_features(t), want, rtol=1e-6)
    assert torch.allclose(build_graph(t).kfeat, torch.from_numpy(want).float().view(1, -1))


def test_constant_bank_load_is_one_valued_live_in_per_warp_and_pc():
    """A kernel argument loaded by ULDC becomes one MEM.CONST live-in per (warp, PC) with the
    loaded value's statistics, read by every dynamic instance of that load. Keyed by PC alone,
    two warps shared one variable: an edge across warps, which the per-warp pooling forbids."""
    def warp(k, trips):
        body = []
        for _ in range(trips):  # a loop: the same static ULDC runs once per trip
            body += [Inst("ULDC", ("UR4",), (), mask=0x3, pc=0x10, values=[[k, k]]),
                     Inst("IADD3", ("R1",), ("UR4", "RZ"), mask=0x3, pc=0x20)]
        return body

    g = build_graph(make_trace([warp(7, 2), warp(-9, 1)]), GraphConfig(max_warps=0, max_insts_per_warp=0))
    const = ((g.node_type == NODE_VARIABLE) & (g.token == VARIABLE_VOCAB.index("MEM.CONST"))).nonzero().view(-1)
    assert g.warp[const].tolist() == [0, 1]
    ei, et = g.edge_index, g.edge_type
    assert (g.warp[ei[0]] == g.warp[ei[1]]).all()
    readers = [sorted(ei[1, (ei[0] == c) & (et == R)].tolist()) for c in const.tolist()]
    assert readers == [[0, 2], [4]]  # the ULDC nodes: warp 0's two trips, warp 1's one
    for c, k in zip(const.tolist(), (7, -9)):
        np.testing.assert_allclose(g.stats[c].numpy(), _stats8(_slog([k, k])), atol=1e-5)
    # a constant load without a destination register returned nothing: no variable, and no crash
    g2 = build_graph(make_trace([[Inst("LDC", (), (), mask=0x1, pc=0x10), Inst("EXIT", mask=0x1, pc=0x20)]]))
    assert int((g2.token[g2.node_type == NODE_VARIABLE] == VARIABLE_VOCAB.index("MEM.CONST")).sum()) == 0


def test_first_warp_selection_keeps_the_first_warps_that_ran():
    """``warp_selection: first`` keeps the trace's first ``max_warps`` warps that executed
    something; keeping any others would change what the graph of a capped kernel shows."""
    t = make_trace([[Inst("NOP") for _ in range(n)] for n in (0, 1, 2, 3, 4, 5)])
    g = build_graph(t, GraphConfig(max_warps=2, warp_selection="first"))
    assert int(g.n_warps[0]) == 2
    assert torch.bincount(g.warp[g.node_type == NODE_INSTRUCTION]).tolist() == [1, 2]


def test_instruction_stats_see_the_whole_warp_and_the_immediate_sign():
    """Instruction nodes carry the PC's repetition count and the warp's length over the whole
    stream (what a capped window cannot show: a loop's trip count), and the immediate as signed
    log1p (a negative stride or offset is not a positive one)."""
    import dataclasses

    # a 2-instruction loop body run 5 times: each PC 5 times in a warp of 10; the cap keeps 4
    w = [Inst("IADD3", ("R1",), ("R1",), pc=16 * (i % 2)) for i in range(10)]
    t = make_trace([w])
    t = dataclasses.replace(t, imm=np.array([-7, 100] * 5, dtype=np.int64))
    g = build_graph(t, GraphConfig(max_insts_per_warp=4, inst_selection="prefix"))
    st_ = g.stats[g.node_type == NODE_INSTRUCTION].numpy()
    assert st_.shape[0] == 4
    np.testing.assert_allclose(st_[:, 0], np.log1p(5.0), rtol=1e-6)
    np.testing.assert_allclose(st_[:, 1], np.log1p(10.0), rtol=1e-6)
    np.testing.assert_allclose(st_[:, 2], _slog([-7, 100, -7, 100]), rtol=1e-6)


def test_edge_type_ids_and_summary_names_follow_the_module_docstring():
    """Edge ids are 0 control, 1 read, 2 write, 3 address (graph.py's docstring, the model's
    relation ids in cached graphs); ``gclsampler graph info`` must name each count by its type."""
    assert (EDGE_CONTROL, EDGE_READ, EDGE_WRITE, EDGE_ADDRESS) == (0, 1, 2, 3)
    assert (NODE_INSTRUCTION, NODE_PSEUDO, NODE_VARIABLE) == (0, 1, 2)
    s = graph_summary(build_graph(_hand_trace()))
    # the hand-written graph above: 6 control, 8 read, 6 write, 4 address edges
    assert s["edges_by_type"] == {"control": 6, "read": 8, "write": 6, "address": 4}
    assert s["nodes_by_type"] == {"instruction": 7, "pseudo": 2, "variable": 8}
    assert (s["nodes"], s["edges"], s["warps"]) == (17, 24, 1)


# --------------------------------------------------------------------------------------
# Wide loads: the trace names a pair or quad by its first register (format 7)

def _reg_vars(g) -> torch.Tensor:
    return (g.node_type == NODE_VARIABLE) & (g.token <= VARIABLE_VOCAB.index("REG.UP"))


def _reg_live_ins(g) -> int:
    reg_var = _reg_vars(g)
    written = torch.zeros(g.num_nodes, dtype=torch.bool)
    written[g.edge_index[1, g.edge_type == W]] = True
    return int((reg_var & ~written).sum())


def test_a_read_of_a_wide_loads_upper_register_links_to_the_load():
    """``LDG.E.128 R8`` fills R8-R11: the FFMA reading R9 and R11 reads the load's version, not
    two live-ins with no writer (what every graph before format 7 made of it)."""
    w = [Inst("LDG.E.128", ("R8",), ("R2",), mem_width=16, addrs=[0x100], mask=0x1, pc=0x10),
         Inst("FFMA", ("R4",), ("R9", "R11", "R8"), mask=0x1, pc=0x20)]
    g = build_graph(make_trace([w]), GraphConfig(max_warps=0, max_insts_per_warp=0))
    reads = dict(_graph_reads(g)[0])
    ffma_writers = [wr for rd, wr in _graph_reads(g)[0] if rd == 1]
    assert ffma_writers == [0, 0, 0]  # R8, R9, R11 all come from instruction 0's one write version
    assert reads[0] == -1  # the load's address register R2 is the only live-in
    assert _reg_live_ins(g) == 1
    reg_var = _reg_vars(g)
    reg_writes = int(((g.edge_type == W) & (g.edge_index[0] == 0) & reg_var[g.edge_index[1]]).sum())
    assert reg_writes == 1  # the quad is one version node: no node per upper register


@pytest.mark.parametrize("opcode,named,reads,live", [
    ("LDG.E.64", "R4", ("R5",), 0),          # a pair
    ("LDS.128", "R4", ("R7",), 0),           # a quad of shared memory
    ("LDS.128", "R4", ("R8",), 1),           # one past the quad: written by nothing
    ("LDSM.16.M88.4", "R12", ("R15",), 0),   # four 8x8 matrices, one register each
    ("LDSM.16.M88.2", "R12", ("R14",), 1),   # two: R12, R13
    ("LDG.E.128", "R253", ("R254",), 0),     # a quad at R253 stops at RZ
    ("IMAD.WIDE", "R4", ("R5",), 1),         # not widened: the synthesizer keeps one register
    ("LDG.E", "R4", ("R5",), 1),             # 32 bits
])
def test_which_destinations_are_wide(opcode, named, reads, live):
    load = opcode.startswith("LD")
    srcs = ("R2",) if load else ("R2", "R3")
    mem = dict(mem_width=4, addrs=[0x100]) if load else {}
    w = [Inst(opcode, (named,), srcs, mask=0x1, pc=0x10, **mem),
         Inst("MOV", ("R20",), reads, mask=0x1, pc=0x20)]
    g = build_graph(make_trace([w]), GraphConfig(max_warps=0, max_insts_per_warp=0))
    assert _reg_live_ins(g) == len(srcs) + live


def test_a_guarded_off_wide_load_fills_nothing():
    """A mask-0 ``@P0 LDG.E.128 R8`` writes no register, so R9's read stays a live-in."""
    w = [Inst("LDG.E.128", ("R8",), ("R2",), mem_width=16, addrs=[], mask=0x0, pc=0x10),
         Inst("MOV", ("R20",), ("R9",), mask=0x1, pc=0x20)]
    g = build_graph(make_trace([w]), GraphConfig(max_warps=0, max_insts_per_warp=0))
    assert _reg_live_ins(g) == 2
