"""Photon-style BBV sampling: basic blocks from traces, online reuse, plans on a synthetic workload."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from _trace_fixtures import HEADER_V5, Inst, make_trace
from gclsampler.photon import SIM_ROUNDING, PhotonError, PhotonSampler, kernel_bbv, photon_assign


def _at(pc: int, op: str = "IADD3") -> Inst:
    return Inst(op, dst=("R1",), src=("R2",), pc=pc)


def test_blocks_split_at_jump_targets_and_after_branches():
    # a loop body 0x00-0x20 run twice (BRA back to 0x00), then fall through to 0x30-0x40
    loop = [_at(0x00), _at(0x10), _at(0x20, "BRA")]
    warp = loop + loop + [_at(0x30), _at(0x40, "EXIT")]
    starts, counts = kernel_bbv(make_trace([warp], with_values=False))
    assert starts.tolist() == [0x00, 0x30] and counts.tolist() == [6, 2]
    # a not-taken BRA (next PC follows) still ends its block; a second warp entering at 0x10 splits 0x00
    w1 = [_at(0x00), _at(0x10, "BRA.U"), _at(0x20), _at(0x30, "EXIT")]
    w2 = [_at(0x10, "BRA.U"), _at(0x20), _at(0x30, "EXIT")]
    starts, counts = kernel_bbv(make_trace([w1, w2], with_values=False))
    assert starts.tolist() == [0x00, 0x10, 0x20] and counts.tolist() == [1, 2, 4]
    assert counts.sum() == 7  # every warp instruction lands in one block


@pytest.mark.parametrize("binary_version, step", [(61, 8), (70, 16), (86, 16)])
def test_straight_line_code_is_one_block_at_the_arch_instruction_size(binary_version, step):
    """SASS is 8 bytes per instruction before Volta (sm_70) and 16 from sm_70 on: straight-line
    code at that spacing is one basic block. With the wrong size every instruction became its
    own block, and BBVs compared instruction mixes, not control flow."""
    import dataclasses

    warp = [_at(k * step) for k in range(3)] + [_at(3 * step, "EXIT")]
    t = make_trace([warp], with_values=False)
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, binary_version=binary_version))
    starts, counts = kernel_bbv(t)
    assert starts.tolist() == [0] and counts.tolist() == [4]


def _code_pcs(n: int, binary_version: int) -> list[int]:
    """Byte offsets of the first n instructions of a function, as the tracer records them:
    before Volta the control word that opens each 32-byte (sm_5x/6x) or 64-byte (sm_3x)
    bundle takes a slot but is never executed, so it never appears in a trace."""
    bundle = 32 if binary_version >= 50 else 64
    return [o for o in range(0, 8 * 2 * n, 8) if o % bundle][:n]


@pytest.mark.parametrize("binary_version", [52, 61, 35])
def test_pre_volta_control_words_do_not_split_straight_line_code(binary_version):
    """A real sm_61 trace runs 0x08 0x10 0x18 0x28 ...: the gap at each bundle edge is a
    control word, not a taken branch. Here one warp falls through a BRA at the prologue's end
    and runs the body straight to its EXIT; the other takes the BRA into the body's middle.
    The blocks are the prologue, the body up to the branch target, and the rest: cutting at
    every bundle edge gave a block per 3 (sm_3x: 7) instructions."""
    import dataclasses

    pcs = _code_pcs(24, binary_version)
    ops = ["MOV"] * 7 + ["BRA"] + ["IADD"] * 15 + ["EXIT"]
    code = [_at(p, o) for p, o in zip(pcs, ops)]
    falls, takes = code, code[:8] + code[17:]
    t = make_trace([falls, takes], with_values=False)
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, binary_version=binary_version))
    starts, counts = kernel_bbv(t)
    assert starts.tolist() == [pcs[0], pcs[8], pcs[17]]
    assert counts.tolist() == [2 * 8, 9, 2 * 7]


@pytest.mark.parametrize("op, binary_version", [("BRK", 61), ("CONT", 52), ("SYNC", 61), ("CAL", 35),
                                               ("JCAL", 61), ("KIL", 61), ("LONGJMP", 61),
                                               ("BRXU", 75), ("JMXU", 86), ("RTT", 80)])
def test_a_not_taken_control_transfer_of_any_generation_ends_its_block(op, binary_version):
    """Pre-Volta SASS spells its transfers CAL, BRK, SYNC, KIL, CONT; Turing on adds the
    uniform BRXU and JMXU. A predicated-off one falls through, and its block still ends there,
    as it does after BRA."""
    import dataclasses

    pcs = _code_pcs(4, binary_version) if binary_version < 70 else [0x00, 0x10, 0x20, 0x30]
    warp = [_at(pcs[0]), _at(pcs[1], op), _at(pcs[2]), _at(pcs[3], "EXIT")]
    t = make_trace([warp], with_values=False)
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, binary_version=binary_version))
    starts, counts = kernel_bbv(t)
    assert starts.tolist() == [pcs[0], pcs[2]] and counts.tolist() == [2, 2]


@pytest.mark.parametrize("binary_version, pc, after", [
    (61, [0x08, 0x10, 0x18, 0x28], [0x10, 0x18, 0x28, 0x30]),
    (50, [0x38], [0x48]),
    (35, [0x08, 0x30, 0x38, 0x40], [0x10, 0x38, 0x48, 0x48]),
    (20, [0x18], [0x20]),
    (70, [0x00, 0x10], [0x10, 0x20]),
    (90, [0xf0], [0x100]),
])
def test_fall_through_pc_skips_control_words(binary_version, pc, after):
    from gclsampler.photon import fall_through_pc

    assert fall_through_pc(np.array(pc), binary_version).tolist() == after


def _sim(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.minimum(a, b).sum())


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 25), d=st.integers(1, 12), seed=st.integers(0, 2**32 - 1),
       threshold=st.sampled_from([0.5, 0.8, 0.95, 1.0]))
def test_online_assignment_matches_brute_force(n, d, seed, threshold):
    rng = np.random.default_rng(seed)
    # few distinct BBVs so that exact repeats and near misses both occur
    protos = rng.integers(0, 4, size=(3, d)).astype(float)
    protos[protos.sum(axis=1) == 0, 0] = 1.0
    dense = protos[rng.integers(0, 3, size=n)] + (rng.random((n, d)) < 0.2)
    dense /= dense.sum(axis=1, keepdims=True)
    labels, reps = photon_assign(sp.csr_matrix(dense), threshold)
    assert np.array_equal(labels[reps], np.arange(reps.size))
    assert np.all(np.diff(reps) > 0) and reps[0] == 0
    for i in range(n):
        earlier = reps[reps < i]
        sims = [_sim(dense[i], dense[r]) for r in earlier]
        if i in reps:
            assert all(s < threshold - SIM_ROUNDING for s in sims)
        else:
            # the most similar, earliest on ties (photon_assign: within 1e-12, so 0.666...6 and
            # 0.666...7, one similarity summed in two orders, are a tie)
            best = earlier[int(np.flatnonzero(np.asarray(sims) >= max(sims) - 1e-12)[0])]
            assert reps[labels[i]] == best and _sim(dense[i], dense[best]) >= threshold - 2 * SIM_ROUNDING


def test_identical_bbvs_reach_threshold_one_whatever_their_sum_rounds_to():
    """Seven blocks of 1/7 each: the summed similarity of two identical BBVs is
    0.9999999999999998, and the twin must still reuse the first at threshold 1.0."""
    a = np.full(7, 1 / 7)
    assert sum(a.tolist()) < 1.0  # the rounding this is about
    labels, reps = photon_assign(sp.csr_matrix(np.stack([a, a])), 1.0)
    assert reps.tolist() == [0] and labels.tolist() == [0, 0]


def test_identical_bbvs_share_a_representative_and_threshold_one_needs_equality():
    a = np.array([0.5, 0.5, 0.0])
    b = np.array([0.45, 0.55, 0.0])
    c = np.array([0.0, 0.0, 1.0])
    labels, reps = photon_assign(sp.csr_matrix(np.stack([a, b, a, c, b])), 0.95)
    assert reps.tolist() == [0, 3] and labels.tolist() == [0, 0, 0, 1, 0]
    labels, reps = photon_assign(sp.csr_matrix(np.stack([a, b, a, c, b])), 1.0)
    assert reps.tolist() == [0, 1, 3] and labels.tolist() == [0, 1, 0, 2, 1]


def test_a_tie_between_representatives_goes_to_the_earliest():
    """photon_assign's contract: an invocation as similar to two representatives joins the
    earlier one; a later one wins only when strictly more similar."""
    a, b = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    labels, reps = photon_assign(sp.csr_matrix(np.array([a, b, [0.5, 0.5, 0.0]])), 0.5)
    assert reps.tolist() == [0, 1] and labels.tolist() == [0, 1, 0]
    labels, reps = photon_assign(sp.csr_matrix(np.array([a, b, [0.4, 0.6, 0.0]])), 0.5)
    assert reps.tolist() == [0, 1] and labels.tolist() == [0, 1, 1]


def test_match_launch_keeps_launches_of_another_block_shape_apart(tmp_path):
    """Two launches of one kernel, one grid, the same code, but 64 and 128 threads per block:
    with match_launch they must not share a representative (its instruction count is not the
    other's), without it they do."""
    from gclsampler.photon import workload_bbvs

    body = ("#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
            "0000 ffffffff 1 R1 MOV 0 0 0\n0010 ffffffff 0 EXIT 0 0 0\n#END_TB\n")
    head = HEADER_V5.format(kid="{kid}", gx=1, li=0)
    assert "-block dim = (64,1,1)" in head
    (tmp_path / "kernel-1.traceg").write_text(head.format(kid=1) + body)
    (tmp_path / "kernel-2.traceg").write_text(head.format(kid=2).replace("(64,1,1)", "(128,1,1)") + body)
    shaped = workload_bbvs(tmp_path, 2, match_launch=True, cache=False)
    assert photon_assign(shaped, 0.95)[1].tolist() == [0, 1]
    loose = workload_bbvs(tmp_path, 2, match_launch=False, cache=False)
    assert photon_assign(loose, 0.95)[1].tolist() == [0]


@pytest.fixture(scope="module")
def tiny_workload(tmp_path_factory):
    from gclsampler.synth import generate
    from gclsampler.workload import Workload

    d = tmp_path_factory.mktemp("photon") / "phi2"
    generate("phi2", d, params=dict(layers=1, prompt=8, decode=1, trace_cap=8, sample_cap=24, sample_ctas=1,
                                    max_traced_ctas=1), arch="ampere", seed=3, progress=False, jobs=1)
    return Workload.load(d)


def test_plan_on_a_synthetic_workload(tiny_workload):
    wl = tiny_workload
    s = PhotonSampler()
    plan = s.fit(wl)
    n = wl.n_invocations
    assert plan.method == "photon" and plan.synthetic
    assert sum(x.weight for x in plan.samples) == pytest.approx(n)
    assert sorted(x.invocation for x in plan.samples) == s.representatives_.tolist()
    # different kernels never share a representative: blocks are keyed by kernel name
    names = wl.profile["kernel_name"].to_numpy()
    assert np.array_equal(names, names[s.representatives_[s.labels_]])
    assert PhotonSampler().fit(wl).to_json() == plan.to_json()  # deterministic
    strict = PhotonSampler(threshold=1.0).fit(wl)
    assert len(strict.samples) >= len(plan.samples)


def test_bad_threshold_and_missing_traces_are_named(tiny_workload, tmp_path):
    import dataclasses

    with pytest.raises(PhotonError, match="threshold"):
        PhotonSampler(threshold=1.5).fit(tiny_workload)
    short = dataclasses.replace(tiny_workload, profile=tiny_workload.profile.iloc[:-1])
    with pytest.raises(PhotonError, match="kernelslist.g: lists .* traces but profile.csv has"):
        PhotonSampler().fit(short)
    with pytest.raises(PhotonError, match="no directory"):
        PhotonSampler().fit(dataclasses.replace(tiny_workload, root=None))


def test_registered_with_the_other_samplers():
    from gclsampler.evaluate import make_sampler

    assert isinstance(make_sampler("photon", {"threshold": 0.9}), PhotonSampler)


def test_match_launch_keeps_launch_shapes_apart(tiny_workload):
    wl = tiny_workload
    shaped = PhotonSampler(match_launch=True)
    shaped.fit(wl)
    loose = PhotonSampler(match_launch=False)
    loose.fit(wl)
    grid = wl.profile["grid"].astype(str).to_numpy()
    block = wl.profile["block"].astype(str).to_numpy()
    rep = shaped.representatives_[shaped.labels_]
    assert np.array_equal(grid[rep], grid) and np.array_equal(block[rep], block)
    # prefill and decode launch the same kernels with different grids: without the shape they merge
    assert loose.representatives_.size < shaped.representatives_.size


def test_bbvs_of_repeated_launch_texts_are_each_launchs_own(tiny_workload):
    """workload_bbvs parses a launch text once (launches differ in the kernel id alone) and gives
    its row to every launch of it: every row must equal the BBV of that launch's own trace, and
    the synthetic phi2 must hold repeated texts for the shortcut to have been taken."""
    from gclsampler.photon import workload_bbvs
    from gclsampler.trace import iter_kernels
    from gclsampler.trace.workload import iter_distinct_kernels

    root = tiny_workload.root
    m = workload_bbvs(root, tiny_workload.n_invocations)
    pairs = list(iter_distinct_kernels(root))
    assert any(t is None for _, t in pairs) and len({k for k, _ in pairs}) < len(pairs)
    for i, trace in enumerate(iter_kernels(root)):
        starts, counts = kernel_bbv(trace)
        row = m.getrow(i)
        assert np.allclose(np.sort(row.data), np.sort(counts / counts.sum()))
    again = [(k, t is None) for k, t in iter_distinct_kernels(root)]
    assert again == [(k, t is None) for k, t in pairs]  # deterministic: the first launch of a text parses


@pytest.fixture
def wl_dir(tiny_workload, tmp_path):
    """A private copy of the workload's directory, without any cache a test left in it."""
    import shutil

    dst = tmp_path / "wl"
    shutil.copytree(tiny_workload.root, dst, ignore=shutil.ignore_patterns(".graph-cache"))
    return dst


def test_bbv_table_is_cached_by_trace_content(wl_dir, monkeypatch):
    """The table is read back instead of parsing every trace again (two thirds of a suite
    rescore), and it is the same table; a trace whose content changes is parsed again."""
    import gclsampler.trace.workload as tw
    from gclsampler.photon import workload_bbvs

    fresh = workload_bbvs(wl_dir, cache=False)
    assert not (wl_dir / ".graph-cache").exists()  # cache=False writes nothing
    first = workload_bbvs(wl_dir)
    assert list((wl_dir / ".graph-cache" / "v1" / "photon").glob("*.npz"))
    real_iter = tw.iter_distinct_kernels

    def no_parsing(*a, **k):
        raise AssertionError("a cached table was parsed again")

    monkeypatch.setattr(tw, "iter_distinct_kernels", no_parsing)
    warm = workload_bbvs(wl_dir)
    for m in (first, warm):
        assert m.shape == fresh.shape and (m != fresh).nnz == 0 and m.dtype == np.float64
        assert np.array_equal(m.indptr, fresh.indptr) and np.array_equal(m.indices, fresh.indices)
    # launch 0's trace now holds launch 1's text: its key changes, so the table is computed again
    import zstandard

    from gclsampler.trace.reader import open_bytes

    files = tw.trace_files(wl_dir)
    a, b = wl_dir / files[0], wl_dir / files[1]
    text = bytes(open_bytes(b)).replace(b"-kernel id = 2\n", b"-kernel id = 1\n", 1)
    assert a.suffix == ".zst" and b"-kernel id = 1\n" in text
    a.write_bytes(zstandard.ZstdCompressor().compress(text))
    with pytest.raises(AssertionError, match="parsed again"):
        workload_bbvs(wl_dir)
    monkeypatch.setattr(tw, "iter_distinct_kernels", real_iter)
    changed = workload_bbvs(wl_dir)
    assert (changed != workload_bbvs(wl_dir, cache=False)).nnz == 0
    # the launch shape is in the key: the other setting is its own table
    assert (workload_bbvs(wl_dir, match_launch=False) != workload_bbvs(wl_dir, match_launch=False,
                                                                         cache=False)).nnz == 0


def test_a_new_trace_parser_version_computes_the_bbv_table_again(wl_dir, monkeypatch):
    """The table is built from parsed traces, so it is keyed by the parser's version
    (``trace.reader.PARSER_VERSION``) as well as the traces' bytes and ``BBV_VERSION``."""
    import gclsampler.trace.reader as reader
    import gclsampler.trace.workload as tw
    from gclsampler.photon import workload_bbvs

    first = workload_bbvs(wl_dir)
    real_iter, parsed = tw.iter_distinct_kernels, []
    monkeypatch.setattr(tw, "iter_distinct_kernels", lambda *a, **k: parsed.append(1) or real_iter(*a, **k))
    workload_bbvs(wl_dir)
    assert parsed == []
    monkeypatch.setattr(reader, "PARSER_VERSION", reader.PARSER_VERSION + 1)
    again = workload_bbvs(wl_dir)
    assert parsed == [1] and (again != first).nnz == 0
    assert len(list((wl_dir / ".graph-cache" / "v1" / "photon").glob("*.npz"))) == 2


def test_a_bad_or_unusable_bbv_cache_is_passed_by(wl_dir, tmp_path):
    """A truncated table is computed again (and rewritten); a cache directory holding someone
    else's files is neither written to nor an error: the cache only saves time."""
    from gclsampler.photon import workload_bbvs

    fresh = workload_bbvs(wl_dir, cache=False)
    workload_bbvs(wl_dir)
    (entry,) = (wl_dir / ".graph-cache" / "v1" / "photon").glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:40])
    assert (workload_bbvs(wl_dir) != fresh).nnz == 0
    assert entry.stat().st_size > 40  # rewritten whole
    theirs = tmp_path / "thesis"
    theirs.mkdir()
    (theirs / "chapter1.tex").write_text("x")
    assert (workload_bbvs(wl_dir, cache_dir=theirs) != fresh).nnz == 0
    assert sorted(p.name for p in theirs.iterdir()) == ["chapter1.tex"]


def test_every_warps_first_instruction_starts_a_block():
    """A block starts at a warp's first instruction even where its PC follows the previous warp's
    last one (a warp whose trace ends without a control opcode, e.g. a capped trace); and a warp
    with no instructions at the end of the trace changes nothing."""
    w1 = [_at(0x00), _at(0x10)]  # no EXIT: the trace stopped here
    w2 = [_at(0x20), _at(0x30, "EXIT")]
    starts, counts = kernel_bbv(make_trace([w1, w2], with_values=False))
    assert starts.tolist() == [0x00, 0x20] and counts.tolist() == [2, 2]
    starts, counts = kernel_bbv(make_trace([w1, w2, []], with_values=False))
    assert starts.tolist() == [0x00, 0x20] and counts.tolist() == [2, 2]


def test_threshold_zero_is_refused_and_the_defaults_are_photons(tiny_workload):
    """The threshold lies in (0, 1]: 0 would merge every launch that shares a block. The defaults
    are Photon's fixed 95 % and launch-shape matching (module docstring)."""
    with pytest.raises(PhotonError, match="threshold"):
        PhotonSampler(threshold=0.0).fit(tiny_workload)
    s = PhotonSampler()
    assert s.threshold == 0.95 and s.match_launch is True
    plan = s.fit(tiny_workload)
    assert plan.to_json() == PhotonSampler(threshold=0.95, match_launch=True).fit(tiny_workload).to_json()


def test_a_cached_table_of_another_shape_or_dtype_is_recomputed(wl_dir):
    """A well-formed cache entry this code would not have written (a row count other than the
    workload's, float32 values) is not trusted: the table is computed again."""
    from gclsampler.photon import workload_bbvs

    fresh = workload_bbvs(wl_dir, cache=False)
    workload_bbvs(wl_dir)
    (entry,) = (wl_dir / ".graph-cache" / "v1" / "photon").glob("*.npz")
    wrong_rows = sp.vstack([fresh, fresh.getrow(0)]).tocsr()
    wrong_rows.sort_indices()
    f32 = fresh.astype(np.float32)
    for bad in (wrong_rows, f32):
        with entry.open("wb") as fh:
            np.savez(fh, data=bad.data, indices=bad.indices, indptr=bad.indptr,
                     shape=np.asarray(bad.shape, dtype=np.int64))
        m = workload_bbvs(wl_dir)
        assert m.shape == fresh.shape and m.dtype == np.float64 and (m != fresh).nnz == 0
