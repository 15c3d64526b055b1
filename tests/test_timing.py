"""Behaviour of the synthetic timing model (gclsampler.synth.timing).

Kernels are built directly as KernelTrace arrays: every warp runs ``iters``
iterations of [LDG?, STG?, FFMA x n_fp, IADD3] and ends with EXIT.
"""

from __future__ import annotations

import numpy as np
import pytest

from gclsampler.synth.arch import ARCHS
from gclsampler.synth.timing import (
    METRICS, CacheState, TimingConfig, TimingError, WorkSummary, classify_opcodes, occupancy,
    simulate, OPCODE_CLASSES, _l1_bytes,
)
from gclsampler.trace.types import NO_REG, KernelHeader, KernelTrace

BASE = 0x7F0000000000
OPS = ("LDG.E", "STG.E", "FFMA", "IADD3", "EXIT", "HMMA.16816.F32", "LDS")
SMEM = 0x7F5A4F000000


def make_work(grid=(256, 1, 1), block=(128, 1, 1), nregs=32, shmem=0, iters=8, n_fp=8,
              mem: str | None = "resident", footprint=16 * 1024, store=False, sample_ctas=4,
              n_mma=0, base=BASE, kid=1, n_lds=0, lds_stride=4) -> WorkSummary:
    n_ctas = grid[0] * grid[1] * grid[2]
    wpc = -(-(block[0] * block[1] * block[2]) // 32)
    ids = np.unique(np.linspace(0, n_ctas - 1, min(n_ctas, sample_ctas)).round().astype(np.int64))
    body = ([0] if mem else []) + ([1] if store else []) + [6] * n_lds + [2] * n_fp + [5] * n_mma + [3]
    prog = np.array(body * iters + [4], dtype=np.int32)
    it_of = np.array([i for i in range(iters) for _ in body] + [iters - 1], dtype=np.int64)
    L = prog.size
    W = ids.size * wpc
    cta_of_w = np.repeat(ids, wpc)
    warp_in_cta = np.tile(np.arange(wpc), ids.size)
    opcode = np.tile(prog, W)
    it = np.tile(it_of, W)
    w_of = np.repeat(np.arange(W), L)
    n = opcode.size
    is_lds = opcode == 6
    is_mem = (opcode == 0) | (opcode == 1) | is_lds
    gw = cta_of_w[w_of] * wpc + warp_in_cta[w_of]  # global warp id
    if mem == "stream":
        line = (gw * iters + it) * 2 + (opcode == 1)
    else:  # resident: a small footprint shared by every CTA
        lines = max(1, footprint // 128)
        line = (warp_in_cta[w_of] * iters + it) % lines
    addr0 = np.where(is_lds, SMEM, base + line.astype(np.int64) * 128)
    stride = np.where(is_lds, lds_stride, 4)
    counts = np.where(is_mem, 32, 0)
    addr_ptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    lane = np.tile(np.arange(32), int(is_mem.sum()))
    addrs = (np.repeat(addr0[is_mem], 32) + lane * np.repeat(stride[is_mem], 32)).astype(np.uint64)
    cta_xyz = np.stack([cta_of_w % grid[0], (cta_of_w // grid[0]) % grid[1],
                        cta_of_w // (grid[0] * grid[1])], axis=1).astype(np.int32)
    trace = KernelTrace(
        header=KernelHeader(name="k", kernel_id=kid, grid=grid, block=block, shmem=shmem, nregs=nregs),
        warp_cta=cta_xyz, warp_id=warp_in_cta.astype(np.int32),
        warp_ptr=(np.arange(W + 1) * L).astype(np.int64),
        pc=np.tile(np.arange(L) * 16, W).astype(np.int64),
        mask=np.full(n, 0xFFFFFFFF, dtype=np.uint32),
        opcode=opcode, opcode_table=OPS,
        dst=np.full((n, 1), NO_REG, np.int16), src=np.full((n, 2), NO_REG, np.int16),
        mem_width=np.where(is_mem, 4, 0).astype(np.int32),
        addr_ptr=addr_ptr, addrs=addrs,
    )
    return WorkSummary(header=trace.header, sample=trace, sample_cta_ids=ids,
                       insts_scale=n_ctas / ids.size)


NOJIT = TimingConfig(jitter_cov_compute=0.0, jitter_cov_memory=0.0)


def run(work, arch="ampere", cache=None, cfg=NOJIT, seed=0):
    return simulate(ARCHS[arch], work, cache, np.random.default_rng(seed), cfg)


def test_returns_exactly_the_profile_metrics():
    m, st = run(make_work())
    assert list(m) == METRICS and len(METRICS) == 22
    assert all(isinstance(v, float) and np.isfinite(v) for v in m.values())
    assert isinstance(st, CacheState) and st.arch == "ampere"


@pytest.mark.parametrize("mem", ["resident", "stream", None])
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_rates_are_bounded(mem, arch):
    m, _ = run(make_work(mem=mem, store=True), arch=arch)
    for k in ("l1_hit_rate", "l2_hit_rate", "achieved_occupancy"):
        assert 0.0 <= m[k] <= 1.0, k
    assert 0.0 <= m["pka_divergence_efficiency"] <= 32.0
    assert m["time_ns"] > 0 and m["cycles"] >= 1 and m["ipc"] > 0


def test_pka_counts_scale_to_the_whole_kernel():
    w = make_work(grid=(512, 1, 1), iters=4, store=True, mem="stream")
    m, _ = run(w)
    warps = 512 * 4
    assert m["pka_thread_blocks"] == 512
    assert m["pka_thread_global_loads"] == pytest.approx(warps * 4)
    assert m["pka_thread_global_stores"] == pytest.approx(warps * 4)
    # 32 consecutive 4-byte lanes = 128 B = 4 sectors per warp-instruction
    assert m["pka_coalesced_global_loads"] == pytest.approx(warps * 4 * 4)
    assert m["pka_instructions"] == m["inst_executed"] == pytest.approx(w.sample.n_insts * w.insts_scale)
    assert m["pka_divergence_efficiency"] == pytest.approx(32.0)
    assert m["warp_inst_executed_mean"] == pytest.approx(m["inst_executed"] / warps)


def test_streaming_traffic_lowers_hit_rate_and_costs_time():
    kw = dict(grid=(2048, 1, 1), iters=16, n_fp=2)
    res, _ = run(make_work(mem="resident", footprint=8 * 1024, **kw))
    stream, _ = run(make_work(mem="stream", **kw))
    assert stream["l2_hit_rate"] < res["l2_hit_rate"]
    assert stream["l1_hit_rate"] < res["l1_hit_rate"]
    assert stream["time_ns"] > 1.5 * res["time_ns"]


# CUDA occupancy calculator, known cases (CC 8.6: 48 warps, 16 CTAs, 64K regs, 100 KB smem)
@pytest.mark.parametrize("threads,nregs,shmem,ctas,limiter", [
    (256, 32, 0, 6, "warps"),  # 8 warps/CTA -> 48/8
    (256, 64, 0, 4, "registers"),  # 2048 regs/warp -> 32 warps -> 4 CTAs
    (128, 128, 0, 4, "registers"),  # 4096 regs/warp -> 4 warps per sub-partition -> 16 warps
    (64, 16, 0, 16, "ctas"),  # 2 warps/CTA, CTA limit 16
    (128, 32, 48 * 1024, 2, "shared"),  # (48K+1K) rounded -> 2 per 100 KB
    (512, 64, 0, 2, "registers"),  # 16 warps/CTA: 32 register-limited warps -> 2
])
def test_occupancy_matches_cuda_rules_ampere(threads, nregs, shmem, ctas, limiter):
    o = occupancy(ARCHS["ampere"], threads, nregs, shmem)
    assert (o.ctas_per_sm, o.limiter) == (ctas, limiter)


def test_occupancy_turing_and_ada_limits():
    assert occupancy(ARCHS["turing"], 256, 32, 0).ctas_per_sm == 4  # 32 warps max
    assert occupancy(ARCHS["turing"], 128, 32, 20 * 1024).ctas_per_sm == 3  # 64 KB smem, no reserve
    assert occupancy(ARCHS["ada"], 64, 16, 0).ctas_per_sm == 24  # CC 8.9: 24 CTAs
    assert occupancy(ARCHS["ampere"], 256, 255, 0).ctas_per_sm == 1


def test_the_driver_reserve_is_taken_by_ctas_without_shared_memory():
    # cuda_occupancy.h: reservedSharedMemPerBlock joins every CTA's allocation on CC >= 8, so the
    # resident CTAs of a kernel with no __shared__ still need a carveout, and L1 shrinks by it.
    amp = occupancy(ARCHS["ampere"], 64, 16, 0)  # 16 CTAs x 1 KB
    assert amp.smem_per_sm_used == 16 * 1024
    assert _l1_bytes(ARCHS["ampere"], amp.smem_per_sm_used) == (128 - 16) * 1024
    ada = occupancy(ARCHS["ada"], 64, 16, 0)  # 24 CTAs x 1 KB -> the 32 KB carveout
    assert ada.smem_per_sm_used == 24 * 1024
    assert _l1_bytes(ARCHS["ada"], ada.smem_per_sm_used) == (128 - 32) * 1024
    tu = occupancy(ARCHS["turing"], 64, 16, 0)  # CC 7.5 reserves nothing
    assert tu.smem_per_sm_used == 0 and tu.limiter != "shared"


def test_occupancy_rejects_impossible_launches():
    with pytest.raises(TimingError, match="nregs"):
        occupancy(ARCHS["ampere"], 128, 300, 0)
    with pytest.raises(TimingError, match="shmem"):
        occupancy(ARCHS["turing"], 128, 32, 80 * 1024)
    with pytest.raises(TimingError, match="registers"):  # 1024 x 72 regs > 64K register file
        occupancy(ARCHS["ampere"], 1024, 72, 0)
    with pytest.raises(TimingError, match="block"):
        occupancy(ARCHS["ampere"], 2048, 32, 0)


def test_reported_occupancy_follows_the_limits():
    lo, _ = run(make_work(grid=(4096, 1, 1), block=(256, 1, 1), nregs=128, mem=None))
    hi, _ = run(make_work(grid=(4096, 1, 1), block=(256, 1, 1), nregs=32, mem=None))
    assert lo["achieved_occupancy"] <= 16 / 48 + 1e-9
    assert hi["achieved_occupancy"] > lo["achieved_occupancy"]


def test_time_is_linear_in_grid_beyond_one_wave():
    one_wave = 80 * 4  # ampere: 80 SMs x 4 CTAs of 8 warps (64 regs)
    kw = dict(block=(256, 1, 1), nregs=64, mem=None, n_fp=16, iters=32)
    part = {g: run(make_work(grid=(g, 1, 1), **kw))[0]["time_ns"] for g in (8, 80)}
    assert part[80] / part[8] < 1.2  # under one wave, more CTAs run side by side
    t = {w: run(make_work(grid=(w * one_wave, 1, 1), **kw))[0]["time_ns"] for w in (4, 8, 16)}
    assert t[8] / t[4] == pytest.approx(2.0, rel=0.1)
    assert t[16] / t[8] == pytest.approx(2.0, rel=0.1)
    assert t[4] > 3 * part[80]


@pytest.mark.parametrize("mem,cov", [(None, 0.01), ("stream", 0.05)])
def test_jitter_has_the_configured_cov(mem, cov):
    cfg = TimingConfig(jitter_cov_compute=0.01, jitter_cov_memory=0.05)
    w = make_work(grid=(4096, 1, 1), mem=mem, n_fp=1 if mem else 16, iters=8)
    times = np.array([run(w, cfg=cfg, seed=s)[0]["time_ns"] for s in range(150)])
    sample_cov = times.std(ddof=1) / times.mean()
    assert sample_cov == pytest.approx(cov, rel=0.25)  # ~4 standard errors at n=150


def test_memory_bound_kernels_jitter_more():
    cfg = TimingConfig()
    mk = lambda mem: make_work(grid=(2048, 1, 1), mem=mem, n_fp=1 if mem else 16)  # noqa: E731
    covs = []
    for mem in (None, "stream"):
        x = np.array([run(mk(mem), cfg=cfg, seed=s)[0]["time_ns"] for s in range(60)])
        covs.append(x.std() / x.mean())
    assert covs[1] > 2 * covs[0]


def test_determinism_under_a_seed():
    w = make_work(mem="stream")
    a = run(w, cfg=TimingConfig(), seed=7)[0]
    b = run(w, cfg=TimingConfig(), seed=7)[0]
    assert a == b


def test_warm_cache_makes_a_repeated_kernel_faster():
    small = make_work(grid=(64, 1, 1), mem="resident", footprint=256 * 1024, iters=32, n_fp=1)
    flush = make_work(grid=(8192, 1, 1), mem="stream", iters=32, base=BASE + (1 << 36), kid=2)
    cold, st = run(small)
    warm, st = run(small, cache=st)
    _, st = run(flush, cache=st)
    assert 0 < st.resident_bytes <= ARCHS["ampere"].l2_kb * 1024  # the 64 MB stream keeps only its tail
    flushed, _ = run(small, cache=st)
    assert warm["l2_hit_rate"] > cold["l2_hit_rate"]
    assert warm["time_ns"] < flushed["time_ns"]
    assert flushed["l2_hit_rate"] < warm["l2_hit_rate"]
    # without carrying state, the second run looks like the first
    nocarry = TimingConfig(jitter_cov_compute=0.0, jitter_cov_memory=0.0, carry_cache_state=False)
    again, _ = run(small, cache=st, cfg=nocarry)
    assert again["time_ns"] == pytest.approx(cold["time_ns"])


def test_cache_state_of_another_arch_is_rejected():
    _, st = run(make_work(), arch="turing")
    with pytest.raises(TimingError, match="cache"):
        run(make_work(), arch="ada", cache=st)


def test_ada_beats_turing_on_compute_bound_kernel():
    w = make_work(grid=(8192, 1, 1), mem=None, n_fp=32)
    t = {a: run(w, arch=a)[0]["time_ns"] for a in ARCHS}
    assert t["ada"] < t["ampere"] < t["turing"]


def test_tensor_work_is_limited_by_mma_rate():
    base = run(make_work(grid=(8192, 1, 1), mem=None, n_fp=4))[0]["time_ns"]
    mma = run(make_work(grid=(8192, 1, 1), mem=None, n_fp=4, n_mma=8))[0]["time_ns"]
    assert mma > 2 * base


def test_shared_bank_conflicts_cost_time():
    kw = dict(grid=(8192, 1, 1), mem=None, n_fp=2, n_lds=8)
    free = run(make_work(lds_stride=4, **kw))[0]  # 32 lanes -> 32 banks
    bcast = run(make_work(lds_stride=0, **kw))[0]  # one word, broadcast
    conflict = run(make_work(lds_stride=128, **kw))[0]  # every lane in bank 0: 32-way
    assert conflict["time_ns"] > 3 * free["time_ns"]
    assert bcast["time_ns"] == pytest.approx(free["time_ns"], rel=0.05)
    assert conflict["pka_thread_shared_loads"] == free["pka_thread_shared_loads"]


def test_opcode_classes_from_base_opcode():
    table = ("LDG.E.128", "STG.E", "ATOMG.E.ADD", "RED.E.ADD", "LDS.U", "STS.128", "LDSM.16.M88.4",
             "LDL", "STL", "LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "FFMA", "MUFU.EX2", "IMAD.WIDE",
             "BRA", "BAR.SYNC", "DFMA")
    got = [OPCODE_CLASSES[c] for c in classify_opcodes(table)]
    assert got == ["ldg", "stg", "atom", "atom", "lds", "sts", "lds", "ldl", "stl", "ldgsts", "tensor",
                   "fp32", "sfu", "int", "ctrl", "sync", "fp64"]


# ----------------------------------------------------------------------------- the LRU approximation
from hypothesis import given, settings, strategies as st  # noqa: E402

from gclsampler.synth.timing import _LRU  # noqa: E402


def exact_lru(sets, keys, assoc):
    """Reference: per-set lists, most recent last."""
    state: dict[int, list[int]] = {}
    hits = []
    for s, k in zip(sets.tolist(), keys.tolist()):
        ways = state.setdefault(s, [])
        hits.append(k in ways)
        if k in ways:
            ways.remove(k)
        elif len(ways) == assoc:
            ways.pop(0)
        ways.append(k)
    return np.array(hits)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=150), st.integers(1, 4), st.integers(1, 4))
def test_lru_with_unit_chunks_is_exact(stream, n_sets, assoc):
    keys = np.array(stream, dtype=np.uint64)
    sets = (keys % np.uint64(n_sets)).astype(np.int64)
    got = _LRU(n_sets, assoc).access(sets, keys, 0, 1)
    assert np.array_equal(got, exact_lru(sets, keys, assoc))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31), st.integers(20, 400))
def test_lru_chunks_approximate_exact_hit_rate(seed, footprint):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, footprint, 2000).astype(np.uint64)  # random re-use over a footprint
    n_sets, assoc = 16, 8
    sets = (keys % np.uint64(n_sets)).astype(np.int64)
    exact = exact_lru(sets, keys, assoc).mean()
    approx = _LRU(n_sets, assoc).access(sets, keys, 0, n_sets * assoc // 2).mean()
    assert 0.0 <= approx <= 1.0
    assert abs(approx - exact) < 0.12


def test_divergence_and_empty_samples():
    w = make_work(mem="stream")
    w.sample.mask[:] = 0x0000FFFF  # half the lanes active everywhere
    m, _ = run(w)
    assert m["pka_divergence_efficiency"] == pytest.approx(16.0)
    t = w.sample
    empty = KernelTrace(header=t.header, warp_cta=t.warp_cta[:0], warp_id=t.warp_id[:0],
                        warp_ptr=np.zeros(1, np.int64), pc=t.pc[:0], mask=t.mask[:0], opcode=t.opcode[:0],
                        opcode_table=t.opcode_table, dst=t.dst[:0], src=t.src[:0], mem_width=t.mem_width[:0],
                        addr_ptr=np.zeros(1, np.int64), addrs=t.addrs[:0])
    m, st = run(WorkSummary(t.header, empty, w.sample_cta_ids, 1.0))
    assert m["inst_executed"] == 0 and m["time_ns"] > 0 and st.n_entries == 0


def test_bad_work_summary_is_rejected():
    w = make_work()
    with pytest.raises(TimingError, match="insts_scale"):
        run(WorkSummary(w.header, w.sample, w.sample_cta_ids, 0.0))
    with pytest.raises(TimingError, match="sample_cta_ids"):
        run(WorkSummary(w.header, w.sample, w.sample_cta_ids + 1, w.insts_scale))


def test_consumer_finds_the_whole_producer_output_warm():
    # different sampled CTAs (4 vs 6 of 2048): only 2 coincide, the rest is extrapolated
    prod = make_work(grid=(2048, 1, 1), mem="stream", iters=2, n_fp=1, sample_ctas=4)
    cons = make_work(grid=(2048, 1, 1), mem="stream", iters=2, n_fp=1, sample_ctas=6, kid=2)
    cold, _ = run(cons)
    _, st = run(prod)
    assert st.resident_bytes <= ARCHS["ampere"].l2_kb * 1024
    warm, _ = run(cons, cache=st)
    assert cold["l2_hit_rate"] < 0.1 and warm["l2_hit_rate"] > 0.9
    assert warm["time_ns"] < cold["time_ns"]


def test_arch_table_is_consistent():
    assert set(ARCHS) == {"turing", "ampere", "ada"}
    for name, a in ARCHS.items():
        assert a.name == name
        for f, v in vars(a).items():
            if isinstance(v, (int, float)):
                assert v > 0 or f == "smem_reserved_per_cta", (name, f)
        assert a.max_smem_per_cta <= a.max_smem_per_sm <= a.l1_unified_kb * 1024
        assert max(a.smem_carveouts_kb) * 1024 == a.max_smem_per_sm
    # newer generations: more SMs, faster clocks, more DRAM bandwidth
    t, m, d = ARCHS["turing"], ARCHS["ampere"], ARCHS["ada"]
    assert t.sm_count < m.sm_count < d.sm_count and t.dram_bw_gbs < m.dram_bw_gbs < d.dram_bw_gbs


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(sorted(ARCHS)), st.integers(1, 5000), st.integers(1, 8))
def test_random_address_streams_give_valid_metrics(seed, arch, grid, warps):
    rng = np.random.default_rng(seed)
    w = make_work(grid=(grid, 1, 1), block=(32 * warps, 1, 1), iters=4, mem="stream", store=True)
    t = w.sample
    t.addrs[:] = (BASE + rng.integers(0, 1 << int(rng.integers(8, 30)), t.addrs.size)).astype(np.uint64)
    t.mask[:] = rng.integers(1, 2**32, t.mask.size).astype(np.uint32)
    m, st = simulate(ARCHS[arch], w, None, rng, TimingConfig())
    assert all(np.isfinite(v) for v in m.values())
    for k in ("l1_hit_rate", "l2_hit_rate", "achieved_occupancy"):
        assert 0.0 <= m[k] <= 1.0
    assert m["time_ns"] > 0 and 1 <= m["pka_divergence_efficiency"] <= 32
    assert st.resident_bytes <= ARCHS[arch].l2_kb * 1024
    assert m["pka_coalesced_global_loads"] >= m["pka_thread_global_loads"]  # >= 1 sector each


def _guarded_off(work: WorkSummary, op: int) -> WorkSummary:
    """``work`` with every instruction of opcode ``op`` issued with its guard false on all lanes:
    an empty mask and no addresses, as the synthesizer's sample keeps such an instruction."""
    import dataclasses

    t = work.sample
    off = t.opcode == op
    cnt = np.where(off, 0, np.diff(t.addr_ptr))
    keep = np.repeat(~off, np.diff(t.addr_ptr))
    trace = dataclasses.replace(t, mask=np.where(off, 0, t.mask).astype(np.uint32),
                                addr_ptr=np.r_[0, np.cumsum(cnt)].astype(np.int64), addrs=t.addrs[keep])
    return dataclasses.replace(work, sample=trace)


def test_an_instruction_issued_with_every_lane_guarded_off_costs_an_issue_slot_only():
    """Ground-truth version 2: such an instruction used to be neither issued nor counted. It counts in
    inst_executed as the GPU counts it, and moves no data and no pipe but the issue stage."""
    work = make_work(mem="stream", iters=16)
    on, _ = run(work)
    off, _ = run(_guarded_off(work, OPS.index("LDG.E")))
    assert off["inst_executed"] == on["inst_executed"] and off["pka_instructions"] == on["pka_instructions"]
    assert off["pka_thread_global_loads"] == 0 < on["pka_thread_global_loads"]
    assert off["pka_coalesced_global_loads"] == 0 < on["pka_coalesced_global_loads"]
    assert off["cycles"] < on["cycles"]
    assert off["pka_divergence_efficiency"] < on["pka_divergence_efficiency"] == 32
    # an FFMA-bound kernel: guarded-off FFMAs leave the FP32 pipe and its latency, not the issue slot
    work = make_work(mem=None, n_fp=32, iters=16)
    on, _ = run(work)
    off, _ = run(_guarded_off(work, OPS.index("FFMA")))
    gone, _ = run(make_work(mem=None, n_fp=0, iters=16))  # the same kernel without those FFMAs
    assert gone["cycles"] < off["cycles"] < on["cycles"]
    assert gone["inst_executed"] < off["inst_executed"] == on["inst_executed"]
