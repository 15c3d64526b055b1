"""Trace reader/writer: round trip, layouts (raw/grouped, v3-v5, compression), bad input."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gclsampler.trace import (TraceFormatError, export_accelsim, group_raw_dir, iter_kernels,
                              list_invocations, read_kernel, write_kernel, write_kernelslist)
from gclsampler.trace import _text as T
from gclsampler.trace.testing import random_kernel_trace
from gclsampler.trace.types import NO_REG, reg_code

from _trace_fixtures import HEADER_V5, Inst, export_warp_order, make_trace


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def parser(request, monkeypatch):
    """Every test here runs with the numba kernels and with the numpy fallback."""
    if request.param == "numpy":
        monkeypatch.setattr(T, "_JIT_STATE", [None])
    elif T.compiled() is None:
        pytest.skip("compiled parser off: numba missing or GCLSAMPLER_NO_JIT=1")
    return request.param

HEADER_V3 = """-kernel name = k3
-kernel id = 1
-grid dim = (2,1,1)
-block dim = (64,1,1)
-shmem = 0
-nregs = 16
-binary version = 70
-cuda stream id = 0
-shmem base_addr = 0x00007f0000000000
-local mem base_addr = 0x00007e0000000000
-nvbit version = 1.5
-accelsim tracer version = 3

#traces format = threadblock_x threadblock_y threadblock_z warpid_tb PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]

"""

GROUPED_BODY = """#BEGIN_TB

thread block = 0,0,0

warp = 0
insts = 3
0000 ffffffff 1 R1 MOV 0 0 0
0010 ffffffff 1 R4 LDG.E 2 R2 R3 4 1 0x7f0000001000 4 0
0020 0000000f 0 STG.E 2 R4 R2 4 2 0x7f0000002000 4 -8 100 0

warp = 1
insts = 1
0000 ffffffff 0 EXIT 0 0 0

#END_TB

#BEGIN_TB

thread block = 1,0,0

warp = 0
insts = 1
0000 00000003 0 STG.E 1 R4 8 0 0x10 0x20 0

#END_TB
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_grouped_v5_fields(tmp_path):
    t = read_kernel(_write(tmp_path / "kernel-1.traceg", HEADER_V5.format(kid=1, gx=2, li=0) + GROUPED_BODY))
    assert t.header.grid == (2, 1, 1) and t.header.tracer_version == 5
    assert t.n_warps == 3 and t.warp_ptr.tolist() == [0, 3, 4, 5]
    assert t.warp_cta.tolist() == [[0, 0, 0], [0, 0, 0], [1, 0, 0]] and t.warp_id.tolist() == [0, 1, 0]
    assert [t.opcode_table[i] for i in t.opcode] == ["MOV", "LDG.E", "STG.E", "EXIT", "STG.E"]
    assert t.mask.tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 0xF, 0xFFFFFFFF, 3]
    assert t.dst[:, 0].tolist() == [reg_code("R1"), reg_code("R4"), NO_REG, NO_REG, NO_REG]
    # mode 1: 32 lanes base+stride, mode 2: 4 lanes deltas, mode 0: list
    a = t.addrs
    lo, hi = t.addr_ptr[1], t.addr_ptr[2]
    assert (a[lo:hi] == 0x7F0000001000 + 4 * np.arange(32, dtype=np.uint64)).all()
    s = t.addr_ptr[2]
    assert a[s:s + 4].tolist() == [0x7F0000002000, 0x7F0000002004, 0x7F0000001FFC, 0x7F0000002060]
    assert a[t.addr_ptr[4]:].tolist() == [0x10, 0x20]
    assert t.imm.tolist() == [0, 0, 0, 0, 0] and t.line_num is None and t.values is None


@pytest.mark.parametrize("version,lineinfo", [(4, 0), (4, 1), (5, 1)])
def test_grouped_v4_v5_lineinfo(tmp_path, version, lineinfo):
    body = GROUPED_BODY
    if lineinfo:
        body = "\n".join(("7 " + s if s[:1].isdigit() else s) for s in body.splitlines()) + "\n"
    head = HEADER_V5.format(kid=3, gx=2, li=lineinfo).replace("tracer version = 5", f"tracer version = {version}")
    t = read_kernel(_write(tmp_path / "kernel-3.traceg", head + body))
    assert t.header.tracer_version == version and t.header.invocation == 2
    assert (t.line_num is not None) == bool(lineinfo) and t.imm is not None and t.n_insts == 5
    if lineinfo:
        assert t.line_num.tolist() == [7] * 5


@pytest.mark.parametrize("version, has_imm", [(3, False), (4, True), (5, True)])
def test_without_a_format_line_the_tracer_version_says_if_there_is_an_immediate(tmp_path, version, has_imm):
    """With no `#traces format` line, Accel-Sim's tracer version decides the layout: from
    version 4 every instruction line ends in its immediate. Taking a v4 trace for one without
    immediates refused it (or misread its last column as an address)."""
    head = HEADER_V5.format(kid=1, gx=1, li=0).replace("tracer version = 5", f"tracer version = {version}")
    head = "".join(s for s in head.splitlines(keepends=True) if not s.startswith("#traces format"))
    imm = " 7" if has_imm else ""
    body = ("#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
            f"0000 ffffffff 1 R1 MOV 0 0{imm}\n0010 ffffffff 0 EXIT 0 0{' 0' if has_imm else ''}\n#END_TB\n")
    t = read_kernel(_write(tmp_path / "kernel-1.traceg", head + body))
    assert t.header.tracer_version == version and t.n_insts == 2
    if has_imm:
        assert t.imm.tolist() == [7, 0]
    else:
        assert t.imm is None


def test_raw_v3_is_grouped_by_cta_and_warp_keeping_order(tmp_path):
    raw = HEADER_V3 + "\n".join([
        "1 0 0 0 0000 ffffffff 0 MOV 0 0",
        "0 0 0 1 0000 ffffffff 0 MOV 0 0",
        "0 0 0 0 0000 ffffffff 1 R1 IADD3 1 R2 0",
        "1 0 0 0 0010 ffffffff 0 EXIT 0 0",
        "0 0 0 0 0010 00000001 0 LDG.E 1 R2 4 2 0x100",
        "0 0 0 1 0010 ffffffff 0 EXIT 0 0",
    ]) + "\n"
    t = read_kernel(_write(tmp_path / "kernel-1.trace", raw))
    assert t.imm is None and t.header.tracer_version == 3
    assert t.warp_cta.tolist() == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    assert t.warp_id.tolist() == [0, 1, 0]
    names = [t.opcode_table[i] for i in t.opcode]
    assert names == ["IADD3", "LDG.E", "MOV", "EXIT", "MOV", "EXIT"]
    assert t.pc.tolist() == [0, 0x10, 0, 0x10, 0, 0x10]
    assert t.addrs.tolist() == [0x100]


def test_raw_ldgsts_pairs_keep_second(tmp_path):
    raw = HEADER_V5.format(kid=1, gx=1, li=0) + "\n".join([
        "0 0 0 0 0000 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x5000 0",
        "0 0 0 0 0000 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x7f0000 0",
        "0 0 0 0 0010 ffffffff 0 EXIT 0 0 0",
    ]) + "\n"
    t = read_kernel(_write(tmp_path / "kernel-1.trace", raw))
    assert t.n_insts == 2 and t.addrs.tolist() == [0x7F0000]
    t2 = read_kernel(tmp_path / "kernel-1.trace", dedup_ldgsts=False)
    assert t2.n_insts == 3


def test_lineinfo_and_values_extension(tmp_path):
    body = """#BEGIN_TB
thread block = 0,0,0
warp = 0
insts = 2
12 0000 0000000f 1 R1 IADD3 2 R2 R3 0 0 | =5 +10 4 ~ffffffff 1 1 -3
13 0010 00000003 1 R1 LDG.E 1 R2 4 1 0x100 4 0 | :1 2 =0
#END_TB
"""
    text = HEADER_V5.format(kid=1, gx=1, li=1).replace("immediate", "immediate | reg_values") + body
    t = read_kernel(_write(tmp_path / "kernel-1.traceg", text))
    assert t.line_num.tolist() == [12, 13]
    blk0 = t.values[t.value_ptr[0]:t.value_ptr[1]].reshape(3, 4)
    assert blk0.tolist() == [[5] * 4, [0x10, 0x14, 0x18, 0x1C], [0xFFFFFFFF, 0, 1, 0xFFFFFFFE]]
    blk1 = t.values[t.value_ptr[1]:t.value_ptr[2]].reshape(2, 2)
    assert blk1.tolist() == [[1, 2], [0, 0]]


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz", ".zst"])
def test_compressed_round_trip(tmp_path, suffix):
    t = random_kernel_trace(np.random.default_rng(3), line_num=True)
    p = tmp_path / f"kernel-1.traceg{suffix}"
    write_kernel(t, p)
    assert read_kernel(p).equals(t)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), line_num=st.booleans(), imm=st.booleans(), values=st.booleans(),
       n_warps=st.integers(1, 6), max_dst=st.integers(0, 3), max_src=st.integers(0, 5))
def test_round_trip_property(tmp_path, seed, line_num, imm, values, n_warps, max_dst, max_src):
    t = random_kernel_trace(np.random.default_rng(seed), n_warps=n_warps, line_num=line_num, imm=imm,
                            values=values, max_dst=max_dst, max_src=max_src)
    p = tmp_path / "kernel-1.traceg"
    write_kernel(t, p)
    back = read_kernel(p)
    assert back.equals(t)
    write_kernel(back, p, values=False)
    plain = read_kernel(p)
    assert plain.values is None and np.array_equal(plain.addrs, t.addrs) and np.array_equal(plain.pc, t.pc)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.integers(1, 50), values=st.booleans(), line_num=st.booleans())
def test_text_formatted_in_chunks_is_the_text_formatted_at_once(seed, chunk, values, line_num):
    """The writer formats long kernels a chunk of instructions at a time (a complete conv layer
    needed tens of GB at once); where the chunks cut warps, CTAs or empty warps must not show."""
    from gclsampler.trace.writer import render_chunks

    rng = np.random.default_rng(seed)
    t = random_kernel_trace(rng, n_warps=int(rng.integers(1, 9)), max_insts=int(rng.integers(0, 30)),
                            line_num=line_num, values=True)
    whole = b"".join(render_chunks(t, values=values, chunk_insts=max(1, t.n_insts)))
    assert b"".join(render_chunks(t, values=values, chunk_insts=chunk)) == whole
    assert whole.count(b"#BEGIN_TB") == whole.count(b"#END_TB") == len({tuple(c) for c in t.warp_cta.tolist()})


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz", ".zst"])
def test_a_kernel_too_long_for_one_compress_call_streams(tmp_path, suffix, monkeypatch):
    """Past ONE_SHOT_BYTES of text the file streams through the compressor: the same content
    (and for plain, gz and xz the same bytes) as one call, and never a partial file."""
    from gclsampler.trace import writer

    t = random_kernel_trace(np.random.default_rng(11), n_warps=8, max_insts=200, values=True)
    write_kernel(t, tmp_path / f"once.traceg{suffix}")
    monkeypatch.setattr(writer, "ONE_SHOT_BYTES", 1000)
    monkeypatch.setattr(writer, "CHUNK_INSTS", 16)
    p = tmp_path / f"kernel-1.traceg{suffix}"
    write_kernel(t, p)
    assert read_kernel(p).equals(t)
    if suffix != ".zst":  # a streamed zstd frame leaves out the content size
        assert p.read_bytes() == (tmp_path / f"once.traceg{suffix}").read_bytes()

    def broken():
        yield from writer.render_chunks(t, chunk_insts=16)
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        writer.write_chunks_atomic(p, broken())
    assert read_kernel(p).equals(t) and sorted(x.name for x in tmp_path.iterdir()) == sorted(
        [p.name, f"once.traceg{suffix}"])


def _workload(tmp_path, n=3):
    d = tmp_path / "wl"
    d.mkdir()
    names = ["MemcpyHtoD,0x00007f0000000000,4096"]
    for i in range(n):
        t = random_kernel_trace(np.random.default_rng(i), kernel_id=i + 1, max_dst=1, max_src=4)
        name = f"kernel-{i + 1}.traceg" + (".zst" if i % 2 else "")
        write_kernel(t, d / name)
        names.append(name)
    write_kernelslist(d, names)
    return d


def test_list_and_iter(tmp_path):
    d = _workload(tmp_path)
    infos = list_invocations(d)
    assert [i.invocation for i in infos] == [0, 1, 2]
    assert infos[1].path.endswith(".zst") and infos[1].n_bytes == (d / infos[1].path).stat().st_size
    ks = list(iter_kernels(d))
    assert [k.header.kernel_id for k in ks] == [1, 2, 3]
    assert all(k.header == i.header for k, i in zip(ks, infos))


def test_a_whole_export_keeps_the_memcpy_lines_in_place(tmp_path):
    """Accel-Sim models a MemcpyHtoD line (it fills L2 with -gpgpu_perf_sim_memcpy, on by
    default); the export dropped them from a whole workload. A sample has no order to keep."""
    d = _workload(tmp_path)
    lines = (d / "kernelslist.g").read_text().split()
    (d / "kernelslist.g").write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")  # copy after launch 0
    export_accelsim(d, tmp_path / "all")
    assert (tmp_path / "all" / "kernelslist.g").read_text().split() == [
        "kernel-1.traceg", "MemcpyHtoD,0x00007f0000000000,4096", "kernel-2.traceg", "kernel-3.traceg"]
    export_accelsim(d, tmp_path / "some", invocations=[0, 1, 2])
    assert (tmp_path / "some" / "kernelslist.g").read_text().split() == [
        "kernel-1.traceg", "kernel-2.traceg", "kernel-3.traceg"]


def test_export_accelsim_subset_rewrites_grid(tmp_path):
    d = _workload(tmp_path)
    out = tmp_path / "as"
    export_accelsim(d, out, invocations=[2, 0])
    assert (out / "kernelslist.g").read_text().split() == ["kernel-1.traceg", "kernel-3.traceg"]
    for name in ("kernel-1.traceg", "kernel-3.traceg"):
        text = (out / name).read_text()
        assert "|" not in text.split("#BEGIN_TB", 1)[1]
        t = read_kernel(out / name)
        assert text.count("#BEGIN_TB") == t.header.n_ctas
        assert t.values is None
        orig = read_kernel(d / [i.path for i in list_invocations(d) if i.header.kernel_id == t.header.kernel_id][0])
        # the export appends an EXIT to warps the trace cap cut off (Accel-Sim needs it);
        # everything else is the original instruction stream
        keep = np.ones(t.n_insts, bool)
        order = export_warp_order(orig)
        assert t.n_warps == len(order)
        for v, w in enumerate(order):
            b = t.warp_slice(v)
            assert t.opcode_table[t.opcode[b.stop - 1]].split(".")[0] == "EXIT"
            if w is None:  # a warp its CTA does not list, added as one EXIT
                assert b.stop - b.start == 1
                keep[b.start] = False
                continue
            a = orig.warp_slice(w)
            if b.stop - b.start == a.stop - a.start + 1:
                keep[b.stop - 1] = False
            else:
                assert b.stop - b.start == a.stop - a.start
        assert np.array_equal(orig.addrs, t.addrs) and np.array_equal(orig.pc, t.pc[keep])
        assert (t.dst != NO_REG).sum(axis=1).max(initial=0) <= 1
        assert ((t.src == NO_REG) | (t.src < 256)).all()


def test_export_keeps_general_registers_only_from_r0_to_the_last_below_ur0():
    """Accel-Sim's parser reads only R<n> operands: uniform (UR0 is code 256, the first past the
    general registers) and predicate registers are dropped from the exported line, the general
    ones kept in order. A UR0 left in was written as an operand Accel-Sim cannot read."""
    from gclsampler.trace.workload import accelsim_text

    t = make_trace([[Inst("IADD3", ("UR0",), ("R1", "UR0", "P0", "R254")),
                     Inst("MOV", ("R3",), ("UR4",)), Inst("EXIT")]], with_values=False)
    lines = [ln.split() for ln in accelsim_text(t).decode().splitlines() if ln[:1].isdigit()]
    # PC mask dest_num [dests] opcode src_num [srcs] mem_width
    assert lines[0][2:] == ["0", "IADD3", "2", "R1", "R254", "0"]
    assert lines[1][2:] == ["1", "R3", "MOV", "0", "0"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.sampled_from([0xFFFFFFFF, 0x0000FFFF, 0])),
                min_size=1, max_size=5),
       st.integers(1, 160))
def test_export_ends_every_warp_with_one_exit_even_an_empty_one(warps, threads):
    """Each warp of the export ends with an EXIT that retires its threads' lanes not yet exited,
    and nothing else moves. A warp listed with `insts = 0` (the reader takes it) was written
    as an empty warp, which trips Accel-Sim's assertion; it now gets one EXIT at the kernel's
    first PC. A warp traced to its EXIT is left as it was."""
    import dataclasses

    from gclsampler.trace.workload import _close_truncated_warps, accelsim_text, warps_without_exit

    body = []
    for n, ends, mask in warps:
        w = [Inst("MOV", ("R1",), (), pc=0x40 + 16 * i, mask=mask) for i in range(n)]
        if ends and n:
            w[-1] = Inst("EXIT", pc=0x40 + 16 * (n - 1), mask=mask)
        body.append(w)
    t = make_trace(body, with_values=False)
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, block=(max(threads, 32 * (len(warps) - 1) + 1), 1, 1)))
    lens = np.diff(t.warp_ptr)
    closed = _close_truncated_warps(t)
    assert warps_without_exit(t) == sum(1 for n, ends, _ in warps if not (ends and n))
    assert warps_without_exit(closed) == 0
    first_pc = int(t.pc.min()) if t.n_insts else 0
    for w, (n, ends, mask) in enumerate(warps):
        a, b = t.warp_slice(w), closed.warp_slice(w)
        added = (b.stop - b.start) - (a.stop - a.start)
        assert added == (0 if ends and n else 1)
        assert np.array_equal(closed.pc[b.start:b.start + lens[w]], t.pc[a])
        if added:
            lanes = (1 << min(32, max(0, t.header.threads_per_cta - 32 * w))) - 1
            assert closed.opcode_table[closed.opcode[b.stop - 1]] == "EXIT"
            assert int(closed.mask[b.stop - 1]) == lanes
            assert int(closed.pc[b.stop - 1]) == (int(t.pc[a.stop - 1]) + 16 if n else first_pc)
    text = accelsim_text(t).decode()
    assert "insts = 0" not in text


def test_export_adds_the_warps_a_cta_does_not_list(tmp_path):
    """Accel-Sim builds every warp the block dimension gives a CTA and asserts on one without a
    trace (`warp_traces.size() > 0`, seen with the simulator on this fixture's CTA 1, which lists
    warp 0 of its 2). The export adds each missing warp as one EXIT of its lanes, in its CTA, and
    counts it among the warps cut short; CTAs that list every warp are written as before."""
    from gclsampler.trace.workload import describe_export

    d = tmp_path / "wl"
    d.mkdir()
    _write(d / "kernel-1.traceg", HEADER_V5.format(kid=1, gx=2, li=0) + GROUPED_BODY)  # block 64: 2 warps per CTA
    write_kernelslist(d, ["kernel-1.traceg"])
    facts: list = []
    export_accelsim(d, tmp_path / "out", facts=facts)
    t = read_kernel(tmp_path / "out" / "kernel-1.traceg")
    assert [tuple(c) + (int(w),) for c, w in zip(t.warp_cta, t.warp_id)] == [
        (0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 0), (1, 0, 0, 1)]
    added = t.warp_slice(3)
    assert added.stop - added.start == 1 and t.opcode_table[t.opcode[added.start]] == "EXIT"
    assert int(t.mask[added.start]) == 0xFFFFFFFF and int(t.pc[added.start]) == 0
    assert facts[0]["warps"] == 4 and facts[0]["warps_cut"] == 3  # TB 0's warp 0, TB 1's warp 0, the added warp
    assert "(3 of 4 warps; an EXIT is appended)" in describe_export(facts)[0]


def test_export_rejects_too_many_operands(tmp_path):
    d = tmp_path / "wl"
    d.mkdir()
    body = GROUPED_BODY.replace("0000 ffffffff 1 R1 MOV 0 0 0", "0000 ffffffff 2 R1 R2 HMMA.16816.F32 0 0 0")
    _write(d / "kernel-1.traceg", HEADER_V5.format(kid=1, gx=2, li=0) + body)
    write_kernelslist(d, ["kernel-1.traceg"])
    with pytest.raises(TraceFormatError, match=r"HMMA.16816.F32.*2 destination"):
        export_accelsim(d, tmp_path / "out")


def test_group_raw_dir(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    text = HEADER_V5.format(kid=1, gx=2, li=0) + "\n".join([
        "1 0 0 0 0000 ffffffff 0 MOV 0 0 0",
        "0 0 0 0 0000 ffffffff 1 R1 IADD3 1 R2 0 7",
    ]) + "\n"
    (raw / "kernel-1.trace.xz").write_bytes(lzma.compress(text.encode()))
    (raw / "kernelslist").write_text("MemcpyHtoD,0x0000000000001000,16\nkernel-1.trace.xz\n")
    group_raw_dir(raw, tmp_path / "g")
    assert (tmp_path / "g" / "kernelslist.g").read_text().split() == [
        "MemcpyHtoD,0x0000000000001000,16", "kernel-1.traceg"]
    t = read_kernel(tmp_path / "g" / "kernel-1.traceg")
    assert t.warp_cta.tolist() == [[0, 0, 0], [1, 0, 0]] and t.imm.tolist() == [7, 0]
    assert read_kernel(raw / "kernel-1.trace.xz").equals(t)


# ------------------------------------------------------------------ bad input

def _bad(tmp_path, text, name="kernel-1.traceg"):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    with pytest.raises(TraceFormatError) as ei:
        read_kernel(p)
    return str(ei.value)


def _good():
    return HEADER_V5.format(kid=1, gx=2, li=0) + GROUPED_BODY


def test_bad_truncated(tmp_path):
    text = _good()
    msg = _bad(tmp_path, text[: text.index("0000 00000003")])
    assert "kernel-1.traceg:" in msg and ("insts" in msg or "#END_TB" in msg)


def test_bad_truncated_midline(tmp_path):
    text = _good()
    cut = text.index("4 -8 100 0")
    msg = _bad(tmp_path, text[:cut])
    assert "kernel-1.traceg:" in msg


def test_bad_unknown_header(tmp_path):
    msg = _bad(tmp_path, "-kernel colour = blue\n" + _good())
    assert msg.startswith(str(tmp_path / "kernel-1.traceg") + ":1: -kernel colour: unknown header key")


def test_bad_insts_count(tmp_path):
    msg = _bad(tmp_path, _good().replace("insts = 3", "insts = 2"))
    line = _good().splitlines().index("insts = 3") + 1
    assert f":{line}: insts:" in msg


def test_bad_hex_token(tmp_path):
    msg = _bad(tmp_path, _good().replace("0010 ffffffff 1 R4", "0010 fffffgff 1 R4"))
    line = [i for i, s in enumerate(_good().splitlines(), 1) if s.startswith("0010 ffffffff 1 R4")][0]
    assert f":{line}: mask:" in msg and "fffffgff" in msg


def test_bad_address_count(tmp_path):
    msg = _bad(tmp_path, _good().replace("0x10 0x20 0", "0x10 0"))
    assert "mem_addresses" in msg or "immediate" in msg
    msg2 = _bad(tmp_path, _good().replace("4 -8 100 0", "4 -8 100 55 0"))
    assert "unexpected token" in msg2


def test_bad_empty_workload(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    with pytest.raises(TraceFormatError, match="empty workload"):
        list_invocations(d)
    write_kernelslist(d, ["MemcpyHtoD,0x0,4"])
    with pytest.raises(TraceFormatError, match="empty workload"):
        list_invocations(d)


def test_profile_only_workload_is_named_so(tmp_path):
    """A directory with a profile and no traces at all (the committed REAL workloads whose
    tracing has not run yet) is told apart from an empty trace list, and the user is pointed
    at the methods that still run on it."""
    d = tmp_path / "profile_only"
    d.mkdir()
    (d / "profile.csv").write_text("invocation,kernel_name,time_ns\n0,k,10\n")
    with pytest.raises(TraceFormatError, match=r"kernelslist.g: missing.*profile-only workload.*sample --list"):
        list_invocations(d)
    write_kernelslist(d, ["MemcpyHtoD,0x0,4"])
    with pytest.raises(TraceFormatError, match="empty workload"):
        list_invocations(d)


def test_bad_compression(tmp_path):
    msg = _bad(tmp_path, b"this is not gzip", name="kernel-1.traceg.gz")
    assert "compression" in msg
    msg = _bad(tmp_path, b"this is not zstd", name="kernel-1.traceg.zst")
    assert "compression" in msg
    msg = _bad(tmp_path, gzip.compress(_good().encode())[:200], name="kernel-1.traceg.gz")
    assert "compression" in msg


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".zst"])
def test_compressed_data_under_a_plain_name_says_which_suffix(tmp_path, suffix):
    """A compressed trace saved without its suffix was read as text and blamed on a missing
    header line; the reader now names the compression and the name to give the file."""
    from gclsampler.trace.writer import write_bytes_atomic

    src = tmp_path / f"kernel-1.traceg{suffix}"
    write_bytes_atomic(src, _good().encode())
    (tmp_path / "kernel-1.traceg").write_bytes(src.read_bytes())
    with pytest.raises(TraceFormatError) as exc:
        read_kernel(tmp_path / "kernel-1.traceg")
    assert str(exc.value).startswith(f"{tmp_path / 'kernel-1.traceg'}: compression: ")
    assert f"rename it kernel-1.traceg{suffix}" in str(exc.value)
    assert read_kernel(src).equals(read_kernel(_write(tmp_path / "plain.traceg", _good())))


def test_bad_register_and_mode(tmp_path):
    assert "reg_srcs" in _bad(tmp_path, _good().replace("2 R2 R3 4 1", "2 R2 Q3 4 1"))
    assert "address mode" in _bad(tmp_path, _good().replace("4 1 0x7f0000001000", "4 7 0x7f0000001000"))


def test_repeated_lines_parse_like_unique_lines(tmp_path, monkeypatch):
    """The distinct-line shortcut (>1024 lines, mostly repeats) gives the same arrays."""
    import dataclasses

    from gclsampler.trace import reader

    rng = np.random.default_rng(5)
    t = random_kernel_trace(rng, n_warps=4, max_insts=60, values=True, dense=True, line_num=True)
    reps = 40  # same warps in 40 CTAs: >1024 lines, most of them repeats
    t = dataclasses.replace(t, warp_cta=np.zeros_like(t.warp_cta), warp_id=np.arange(t.n_warps, dtype=np.int32),
                            header=dataclasses.replace(t.header, grid=(reps, 1, 1), block=(128, 1, 1)))
    big = dataclasses.replace(
        t,
        warp_cta=np.stack([np.repeat(np.arange(reps), t.n_warps), np.zeros(reps * t.n_warps, int),
                           np.zeros(reps * t.n_warps, int)], axis=1).astype(np.int32),
        warp_id=np.tile(t.warp_id, reps),
        warp_ptr=np.concatenate([[0], np.cumsum(np.tile(np.diff(t.warp_ptr), reps))]),
        pc=np.tile(t.pc, reps), mask=np.tile(t.mask, reps), opcode=np.tile(t.opcode, reps),
        dst=np.tile(t.dst, (reps, 1)), src=np.tile(t.src, (reps, 1)), mem_width=np.tile(t.mem_width, reps),
        line_num=np.tile(t.line_num, reps), imm=np.tile(t.imm, reps),
        addr_ptr=np.concatenate([[0], np.cumsum(np.tile(np.diff(t.addr_ptr), reps))]),
        addrs=np.tile(t.addrs, reps) + np.repeat(np.arange(reps, dtype=np.uint64) * np.uint64(4096),
                                                 t.addrs.size),
        value_ptr=np.concatenate([[0], np.cumsum(np.tile(np.diff(t.value_ptr), reps))]),
        values=np.tile(t.values, reps))
    assert big.n_insts > 1024
    p = tmp_path / "kernel-1.traceg"
    write_kernel(big, p)
    fast = read_kernel(p)
    monkeypatch.setattr(reader, "_DEDUP_MIN_LINES", 10**12)
    slow = read_kernel(p)
    assert fast.equals(big) and slow.equals(big)


def test_cli_info_group_export_and_error_exit(tmp_path, capsys, monkeypatch):
    import json

    from gclsampler import cli
    from gclsampler.cli import main

    # only the trace group: other groups import torch, which is slow and not under test here
    monkeypatch.setattr(cli, "GROUPS", {"trace": cli.GROUPS["trace"]})

    d = _workload(tmp_path)
    assert main(["trace", "info", str(d), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    ks = list(iter_kernels(d))
    assert info["invocations"] == 3 and info["instructions"] == sum(k.n_insts for k in ks)
    assert info["warps"] == sum(k.n_warps for k in ks)
    assert sum(r["count"] for r in info["opcode_top"]) <= info["instructions"]
    assert main(["trace", "info", str(d)]) == 0
    assert "invocations         3" in capsys.readouterr().out
    assert main(["trace", "export-accelsim", str(d), str(tmp_path / "as"), "--invocations", "1-2"]) == 0
    assert (tmp_path / "as" / "kernelslist.g").read_text().split() == ["kernel-2.traceg", "kernel-3.traceg"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "kernel-1.traceg").write_text(_good().replace("insts = 3", "insts = 4"))
    write_kernelslist(bad, ["kernel-1.traceg"])
    capsys.readouterr()
    assert main(["trace", "info", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kernel-1.traceg:" in err[0] and "insts" in err[0]
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "kernel-1.trace").write_text(HEADER_V5.format(kid=1, gx=1, li=0) + "0 0 0 1 0000 ffffffff 0 EXIT 0 0 0\n")
    (raw / "kernelslist").write_text("kernel-1.trace\n")
    assert main(["trace", "group", str(raw), str(tmp_path / "g"), "--compress", ".gz"]) == 0
    assert read_kernel(tmp_path / "g" / "kernel-1.traceg.gz").warp_id.tolist() == [1]
    # synth's compress= spelling (no dot) is taken too
    assert main(["trace", "group", str(raw), str(tmp_path / "g2"), "--compress", "zst"]) == 0
    assert read_kernel(tmp_path / "g2" / "kernel-1.traceg.zst").warp_id.tolist() == [1]


def _raw_two_warps(kid: int) -> str:
    """A raw (NVBit-order) trace of one CTA whose two warps run a MOV and end with their EXIT."""
    return HEADER_V5.format(kid=kid, gx=1, li=0) + "".join(
        f"0 0 0 {w} {pc:04x} ffffffff {'1 R1 MOV' if op == 'MOV' else '0 EXIT'} 0 0 0\n"
        for pc, op in ((0, "MOV"), (16, "EXIT")) for w in (0, 1))


def test_group_warns_of_warps_without_exit_and_of_unlisted_traces(tmp_path, capsys, monkeypatch):
    """A raw trace cut at a line boundary parses; its warps end without EXIT and `trace group`
    says so by file. A raw trace the kernelslist leaves out is named instead of dropped in silence.
    A complete raw directory groups without a warning."""
    from gclsampler import cli
    from gclsampler.cli import main

    monkeypatch.setattr(cli, "GROUPS", {"trace": cli.GROUPS["trace"]})
    raw = tmp_path / "raw"
    raw.mkdir()
    for k in (1, 2):
        (raw / f"kernel-{k}.trace").write_text(_raw_two_warps(k))
    (raw / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    assert main(["trace", "group", str(raw), str(tmp_path / "g0")]) == 0
    assert capsys.readouterr().err == ""

    text = (raw / "kernel-2.trace").read_text().splitlines(keepends=True)
    (raw / "kernel-2.trace").write_text("".join(text[:-1]))  # warp 1's EXIT is lost
    (raw / "kernel-3.trace").write_text(_raw_two_warps(3))  # traced, but not listed
    assert main(["trace", "group", str(raw), str(tmp_path / "g1")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert f"{raw / 'kernel-3.trace'}: not in the kernelslist" in err[0]
    assert f"{raw / 'kernel-2.trace'}: 1 of 2 warps end without EXIT" in err[1]
    assert (tmp_path / "g1" / "kernelslist.g").read_text().split() == ["kernel-1.traceg", "kernel-2.traceg"]
