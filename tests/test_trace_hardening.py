"""Bad or hostile trace input found by a tester: each case once read as something else.

Every test builds its input in ``tmp_path``; the ones about parsing run with the compiled
parser and the numpy one (``parser`` fixture), since both must word errors the same way.
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys

import pytest

from gclsampler.cli import main
from gclsampler.trace import (TraceFormatError, group_raw_dir, list_invocations, read_kernel, trace_info,
                              write_kernel)
from gclsampler.trace import _text as T
from _trace_fixtures import HEADER_V5, Inst, make_trace

# no blank line before the body: the expected line numbers below count from it; .format(kid=...) per test
HEADER = HEADER_V5.replace("{gx}", "2").replace("{li}", "0").rstrip("\n") + "\n"

BODY = """#BEGIN_TB
thread block = 0,0,0
warp = 0
insts = 2
0000 ffffffff 1 R1 MOV 0 0 0
0010 ffffffff 0 EXIT 0 0 0
#END_TB
"""


@pytest.fixture(params=["compiled", "numpy"])
def parser(request, monkeypatch):
    """Run the test with the numba parser (when installed) and with the numpy fallback."""
    if request.param == "compiled":
        jit = pytest.importorskip("gclsampler.trace._jit", reason="numba is not installed")
        monkeypatch.setattr(T, "_JIT_STATE", [jit])
    else:
        monkeypatch.setattr(T, "_JIT_STATE", [None])
    return request.param


def _w(path, text: str | bytes):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _wl(root, files: dict[str, str | bytes], kernelslist: str | None):
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        _w(root / name, text)
    if kernelslist is not None:
        (root / "kernelslist.g").write_text(kernelslist)
    return root


def _error(capsys, argv) -> str:
    """Run the CLI, expect exit 2 with one error line and no traceback; return that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# ----------------------------------------------------------------------------- 1 truncated .zst

def test_truncated_multiblock_zst_is_refused(tmp_path, parser):
    zstandard = pytest.importorskip("zstandard")
    # distinct lines (fresh PCs) so that the frame spans several 128 KiB blocks
    warps = [[Inst("MOV", ("R1",), pc=16 * i) for i in range(8000)] + [Inst("EXIT", pc=16 * 8000)]]
    t = make_trace(warps, with_values=False)
    full = tmp_path / "kernel-1.traceg.zst"
    write_kernel(t, full, values=False)
    text = zstandard.ZstdDecompressor().decompressobj().decompress(full.read_bytes())
    assert len(text) > 128 * 1024
    assert read_kernel(full).n_insts == 8001
    data = full.read_bytes()
    (tmp_path / "cut").mkdir()
    for cut in (len(data) - 3, len(data) // 2, 8):
        p = _w(tmp_path / "cut" / "kernel-1.traceg.zst", data[:cut])
        with pytest.raises(TraceFormatError,
                           match=r"kernel-1\.traceg\.zst: compression: cannot decompress \(zst\): truncated$"):
            read_kernel(p)


def test_a_flipped_bit_in_a_zst_trace_is_refused_never_read_as_other_values(tmp_path):
    """The writer stores zstd's content checksum: without it most flips decoded into a trace
    with another register value or address, which every later stage took as data."""
    import numpy as np

    warps = [[Inst("IADD3", ("R1",), ("R2", "R3"), pc=16 * i) for i in range(300)] + [Inst("EXIT", pc=16 * 300)]]
    t = make_trace(warps, with_values=True)
    full = tmp_path / "kernel-1.traceg.zst"
    write_kernel(t, full, values=True)
    good = read_kernel(full)
    data = bytearray(full.read_bytes())
    (tmp_path / "flip").mkdir()
    refused = 0
    for pos in np.linspace(12, len(data) - 6, 25).astype(int).tolist():
        bad = bytearray(data)
        bad[pos] ^= 0x10
        p = _w(tmp_path / "flip" / "kernel-1.traceg.zst", bytes(bad))
        try:
            got = read_kernel(p)
        except TraceFormatError as e:
            assert "kernel-1.traceg.zst" in str(e)
            refused += 1
            continue
        assert np.array_equal(got.values, good.values) and np.array_equal(got.pc, good.pc), f"byte {pos}"
    assert refused >= 20


def test_concatenated_zst_frames_are_read_whole(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    text = (HEADER.format(kid=1) + BODY).encode()
    half = len(text) // 2
    c = zstandard.ZstdCompressor()
    p = _w(tmp_path / "kernel-1.traceg.zst", c.compress(text[:half]) + c.compress(text[half:]))
    assert read_kernel(p).n_insts == 2


# ----------------------------------------------------------------------------- 2 header only

def test_header_cut_before_its_format_line_is_refused(tmp_path, parser):
    cut = HEADER.format(kid=1).split("#traces format")[0]
    p = _w(tmp_path / "kernel-1.traceg", cut)
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg: thread block: none \(file truncated\?\)$"):
        read_kernel(p)


def test_complete_header_alone_is_a_launch_with_no_traced_cta(tmp_path, parser, capsys):
    """A real GPU's small grid can have no CTA on the traced SM: the tracer writes its header
    (ending with the #traces format line) and nothing else. That is one invocation of 0
    instructions, which graphs and samplers must keep; Accel-Sim cannot simulate it, so
    exporting it is refused by name."""
    p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1))
    t = read_kernel(p)
    assert (t.n_insts, t.n_warps, t.warp_cta.shape, t.warp_ptr.tolist()) == (0, 0, (0, 3), [0])
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": HEADER.format(kid=1)}, None)
    group_raw_dir(raw, tmp_path / "grouped")  # trace group keeps it, as a header again
    assert read_kernel(tmp_path / "grouped" / "kernel-1.traceg").n_insts == 0
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": HEADER.format(kid=1)}, "kernel-1.traceg\n")
    assert trace_info(wl)["per_invocation"][0]["instructions"] == 0
    line = _error(capsys, ["trace", "export-accelsim", str(wl), str(tmp_path / "out")])
    assert "thread block: none (no CTA of this launch was traced" in line and not (tmp_path / "out").exists()
    assert "GCL_TRACE_SM=-1 GCL_KERNEL_BEGIN=1 GCL_KERNEL_END=1" in line  # how to get a trace it can simulate


# ----------------------------------------------------------------------------- 3/4 trace group names

def _raw(kid: int) -> str:
    return HEADER.format(kid=kid) + "0 0 0 0 0000 ffffffff 0 EXIT 0 0 0\n"


def test_group_refuses_entries_outside_the_directory(tmp_path, capsys):
    _wl(tmp_path / "victim", {"kernel-1.trace": _raw(1), "kernel-1.traceg": "precious"}, None)
    victim = tmp_path / "victim" / "kernel-1.traceg"
    raw = _wl(tmp_path / "raw", {"kernel-2.trace": _raw(2)}, None)
    (raw / "kernelsub").mkdir()
    (raw / "kernelslist").write_text("kernel-2.trace\nkernelsub/../../victim/kernel-1.trace\n")
    out = tmp_path / "out"
    line = _error(capsys, ["trace", "group", str(raw), str(out)])
    assert re.search(r"raw/kernelslist:2: kernelslist: 'kernelsub/\.\./\.\./victim/kernel-1\.trace' "
                     r"is not a plain file name", line), line
    assert victim.read_text() == "precious" and not out.exists()
    for bad in ("kernelsub/kernel-1.trace", "kernel-1\\x.trace"):
        (raw / "kernelslist").write_text(f"kernel-2.trace\n{bad}\n")
        with pytest.raises(TraceFormatError, match="kernelslist:2: kernelslist: .* not a plain file name"):
            group_raw_dir(raw, tmp_path / "o2")
    (raw / "kernelslist").write_text("kernel-2.trace\nkernelslist\n")
    with pytest.raises(TraceFormatError,
                       match="kernelslist:2: kernelslist: lists 'kernelslist', the kernelslist itself"):
        group_raw_dir(raw, tmp_path / "o3")


def test_group_still_reads_plain_and_accelsim_kernelslists(tmp_path):
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-2.trace.gz": gzip.compress(_raw(2).encode())}, None)
    (raw / "kernelslist").write_text("MemcpyHtoD,0x00007f0000000000,4096\nkernel-1.trace\n\nkernel-2.trace.gz\n")
    paths = group_raw_dir(raw, tmp_path / "wl")
    assert [p.name for p in paths] == ["kernel-1.traceg", "kernel-2.traceg"]
    assert (tmp_path / "wl" / "kernelslist.g").read_text().splitlines() == [
        "MemcpyHtoD,0x00007f0000000000,4096", "kernel-1.traceg", "kernel-2.traceg"]
    assert [i.invocation for i in list_invocations(tmp_path / "wl")] == [0, 1]


def test_group_reads_the_tracers_list_beside_an_earlier_runs_kernelslist_g(tmp_path, capsys):
    """Accel-Sim's post-processing writes kernelslist.g and .traceg files into the raw directory.
    Traced again into it, `trace group` took the old kernelslist.g (every reader takes it first)
    and grouped the old run without a word. Grouping is from raw traces: the tracer's list is
    read when its traces are all there, a .g listing other launches is refused, and a
    post-processed directory whose raw traces were removed groups from its .g as before.
    (File times decide nothing: cp -r and git clone reorder them.)"""
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-2.trace": _raw(2)}, None)
    (raw / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    (raw / "kernel-1.traceg").write_text(_raw(1))
    (raw / "kernelslist.g").write_text("kernel-1.traceg\n")  # the earlier run had one launch
    line = _error(capsys, ["trace", "group", str(raw), str(tmp_path / "out")])
    assert "raw/kernelslist.g: lists 1 launches where the tracer's kernelslist beside it lists 2" in line, line
    assert not (tmp_path / "out").exists()
    # the same launches: the earlier run's grouped kernel 2 ran another kernel
    (raw / "kernel-2.traceg").write_text(_raw(2).replace("-kernel name = ", "-kernel name = old_"))
    (raw / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    group_raw_dir(raw, tmp_path / "new")
    assert not read_kernel(tmp_path / "new" / "kernel-2.traceg").header.name.startswith("old_")
    (raw / "kernelslist").write_text("MemcpyHtoD,0x00007f0000000000,4096\n")  # an old tool's time-only run
    group_raw_dir(raw, tmp_path / "memcpy_only")
    assert read_kernel(tmp_path / "memcpy_only" / "kernel-2.traceg").header.name.startswith("old_")
    (raw / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    for name in ("kernel-1.trace", "kernel-2.trace"):
        (raw / name).unlink()  # raw traces removed after post-processing: the .g is the list
    group_raw_dir(raw, tmp_path / "post")
    assert read_kernel(tmp_path / "post" / "kernel-2.traceg").header.name.startswith("old_")


def test_group_of_a_list_without_traces_names_the_unlisted_trace_files(tmp_path):
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-2.trace": _raw(2)}, None)
    (raw / "kernelslist").write_text("MemcpyHtoD,0x00007f0000000000,4096\n")  # as an old tool's time-only run left it
    with pytest.raises(TraceFormatError, match=r"empty workload: no kernel traces; 2 kernel-\* trace files here "
                                               r"are not listed \(a GCL_TIME_ONLY"):
        group_raw_dir(raw, tmp_path / "out")


@pytest.mark.parametrize("listing,line,message", [
    ("kernel-1.trace\nkernel-1.trace.gz\n", 2, "'kernel-1.trace.gz' and 'kernel-1.trace' (line 1) would both become "
                                               "'kernel-1.traceg'"),
    ("kernel-1.trace\nkernel-2.trace\nkernel-1.trace\n", 3, "'kernel-1.trace' is listed again (first on line 1)"),
])
def test_group_refuses_colliding_entries_before_writing(tmp_path, capsys, listing, line, message):
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-1.trace.gz": gzip.compress(_raw(1).encode()),
                                 "kernel-2.trace": _raw(2)}, None)
    (raw / "kernelslist").write_text(listing)
    out = tmp_path / "wl"
    err = _error(capsys, ["trace", "group", str(raw), str(out)])
    assert err.endswith(f"raw/kernelslist:{line}: kernelslist: {message}"), err
    assert not out.exists()
    with pytest.raises(TraceFormatError):
        group_raw_dir(raw, tmp_path / "direct")
    assert not (tmp_path / "direct").exists()  # refused before anything was written


def test_group_without_kernelslist_refuses_two_files_for_one_kernel(tmp_path):
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-1.traceg": HEADER.format(kid=1) + BODY}, None)
    with pytest.raises(TraceFormatError, match="kernel-1.trace and kernel-1.traceg are both kernel 1"):
        group_raw_dir(raw, tmp_path / "wl")


# ----------------------------------------------------------------------------- 5 LDGSTS pairs

def _ldgsts_raw(lines: list[str]) -> str:
    return HEADER.format(kid=1) + "\n".join(lines) + "\n"


A = "0 0 0 0 0000 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x5000 0"
B = "0 0 0 0 0000 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x7f0000 0"
C = "0 0 0 0 0020 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x6000 0"
X = "0 0 0 0 0030 ffffffff 0 EXIT 0 0 0"


def test_ldgsts_pairs_are_matched_by_pc_and_counted(tmp_path, parser):
    # warp 0: a pair at 0x0, then a lone record at 0x20; warp 1: a pair. Counting per warp
    # used to drop the lone record and keep the wrong half of nothing.
    lines = [A, B, C, X, A.replace("0 0 0 0 ", "0 0 0 1 "), B.replace("0 0 0 0 ", "0 0 0 1 "),
             X.replace("0 0 0 0 ", "0 0 0 1 ")]
    p = _w(tmp_path / "kernel-1.trace", _ldgsts_raw(lines))
    facts: dict = {}
    t = read_kernel(p, facts=facts)
    assert t.n_insts == 5  # 7 records - 2 first-of-pair
    assert t.addrs.tolist() == [0x7F0000, 0x6000, 0x7F0000]
    assert facts == {"ldgsts_removed": 2, "ldgsts_unpaired": 1, "ldgsts_unpaired_at": f"{p}:18"}
    assert read_kernel(p, dedup_ldgsts=False).n_insts == 7


def test_trace_group_reports_ldgsts_counts(tmp_path, capsys):
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _ldgsts_raw([A, B, C, X])}, None)
    (raw / "kernelslist").write_text("kernel-1.trace\n")
    assert main(["trace", "group", str(raw), str(tmp_path / "wl")]) == 0
    cap = capsys.readouterr()
    assert "removed 1 LDGSTS records" in cap.out
    assert re.search(r"warning: .*kernel-1\.trace:18: opcode: 1 LDGSTS record\(s\) without", cap.err), cap.err
    assert read_kernel(tmp_path / "wl" / "kernel-1.traceg").n_insts == 3


def test_gcl_tracer_single_ldgsts_records_are_all_kept_without_a_warning(tmp_path, parser, caplog):
    """gcl_tracer writes one record per LDGSTS (its global address) and says so with `ldgsts_once`
    in the #traces format line: two LDGSTS back to back at one PC are two instructions there, not
    Accel-Sim's pair, and nothing is reported missing its partner."""
    text = _ldgsts_raw([A, B, C, X]).replace(" immediate\n", " immediate ldgsts_once\n")
    assert "ldgsts_once" in text
    p = _w(tmp_path / "kernel-1.trace", text)
    facts: dict = {}
    with caplog.at_level("WARNING", logger="gclsampler.trace"):
        t = read_kernel(p, facts=facts)
        assert read_kernel(p).n_insts == 4
    assert t.n_insts == 4 and t.addrs.tolist() == [0x5000, 0x7F0000, 0x6000]
    assert facts == {"ldgsts_removed": 0, "ldgsts_unpaired": 0}
    assert not caplog.records


# ----------------------------------------------------------------------------- 6 repeated CTA / warp

def test_repeated_thread_block_and_warp_are_refused(tmp_path, parser):
    p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + BODY + BODY)
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg:24: thread block: \(0,0,0\) appears again "
                                               r"\(first at line 17\)$"):
        read_kernel(p)
    body = BODY.replace("#END_TB\n", "warp = 0\ninsts = 1\n0010 ffffffff 0 EXIT 0 0 0\n#END_TB\n")
    p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + body)
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg:22: warp: 0 appears again in thread block "
                                               r"\(0,0,0\) \(first at line 18\)$"):
        read_kernel(p)
    body = BODY.replace("warp = 0\n", "warp = 1\nwarp = 0\n")
    p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + body)
    with pytest.raises(TraceFormatError, match=r":19: insts: warp 1 has no 'insts =' line"):
        read_kernel(p)


def test_nul_bytes_are_refused_at_their_line(tmp_path, parser):
    """Bytes below 0x21 separate tokens, so a line of NULs (a crash, a full disk) read as a blank
    line: trace group dropped an instruction and exited 0."""
    raw = HEADER.format(kid=1) + "0 0 0 0 0000 ffffffff 1 R1 MOV 0 0 0\n" + "\0" * 40 + "\n" \
        + "0 0 0 0 0010 ffffffff 0 EXIT 0 0 0\n"
    for name, text, line in (("kernel-1.trace", raw, 17), ("kernel-1.traceg", HEADER.format(kid=1) + BODY + "\0\0", 23)):
        p = _w(tmp_path / name, text)
        with pytest.raises(TraceFormatError, match=rf"{name}:{line}: line: NUL byte: the file was cut or overwritten"):
            read_kernel(p)


def test_a_raw_trace_cut_mid_record_is_refused(tmp_path, parser):
    """A raw trace cut after a digit of its last record ("=20" of "=200") was grouped with the
    other value and exit 0; the tracer ends every record with a newline."""
    whole = HEADER.format(kid=1) + "0 0 0 0 0000 ffffffff 1 R1 MOV 0 0 0\n0 0 0 0 0010 ffffffff 0 EXIT 0 0 0\n"
    read_kernel(_w(tmp_path / "kernel-1.trace", whole))
    p = _w(tmp_path / "kernel-2.trace", whole[:-1].replace("kernel_id = 1", "kernel_id = 2"))
    with pytest.raises(TraceFormatError, match=r"kernel-2\.trace:17: line: the last record has no newline: the file "
                                               r"was cut"):
        read_kernel(p)


@pytest.mark.parametrize("cut, field", [
    ("0000", "mask"), ("0000 ffffffff", "dest_num"), ("0000 ffffffff 1", "reg_dests"), ("0000 ffffffff 1 R1", "opcode"),
    ("0000 ffffffff 1 R1 MOV", "src_num"), ("0000 ffffffff 1 R1 MOV 1 R2", "mem_width")])
def test_a_line_cut_short_names_the_first_field_it_lacks(tmp_path, parser, cut, field):
    """A line cut after its mask was reported as lacking the PC it has."""
    p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + BODY.replace("0000 ffffffff 1 R1 MOV 0 0 0", cut))
    with pytest.raises(TraceFormatError, match=rf"kernel-1\.traceg:20: {field}: "):
        read_kernel(p)


def test_a_thread_block_section_without_its_cta_line_is_refused(tmp_path, parser):
    """Read as nothing, an empty section passed for an empty launch, or a CTA lost from a full one."""
    for body, line in (("#BEGIN_TB\n#END_TB\n", 17), (BODY + "#BEGIN_TB\n\n#END_TB\n", 25)):
        p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + body)
        with pytest.raises(TraceFormatError, match=rf"kernel-1\.traceg:{line}: #END_TB: a #BEGIN_TB section without "
                                                   r"its 'thread block = x,y,z' line$"):
            read_kernel(p)
    assert read_kernel(_w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + BODY)).n_insts == 2


# ----------------------------------------------------------------------------- 7 trace info counts once

def test_trace_info_refuses_duplicate_entries(tmp_path, capsys):
    good = HEADER.format(kid=1) + BODY
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": good, "kernel-2.traceg": HEADER.format(kid=2) + BODY},
             "kernel-1.traceg\nkernel-1.traceg\nkernel-2.traceg\n")
    line = _error(capsys, ["trace", "info", str(wl)])
    assert line.endswith("kernelslist.g:2: kernelslist: 'kernel-1.traceg' is listed again (first on line 1)")
    wl2 = _wl(tmp_path / "wl2", {"kernel-1.traceg": good, "kernel-1.traceg.gz": gzip.compress(good.encode())}, None)
    with pytest.raises(TraceFormatError, match="kernel-1.traceg and kernel-1.traceg.gz are both kernel 1"):
        trace_info(wl2)
    wl3 = _wl(tmp_path / "wl3", {"kernel-1.traceg": good, "kernel-2.traceg": good},
              "kernel-1.traceg\nkernel-2.traceg\n")
    with pytest.raises(TraceFormatError, match=r"kernel-2\.traceg: -kernel id: 1 is also the id of kernel-1\.traceg"):
        trace_info(wl3)
    wl4 = _wl(tmp_path / "wl4", {"kernel-1.traceg": good}, "kernel-1.traceg\n")
    assert trace_info(wl4)["invocations"] == 1 and trace_info(wl4)["instructions"] == 2


def test_trace_info_names_a_trace_its_kernelslist_leaves_out(tmp_path, capsys):
    """graph info and export-accelsim warned; trace info counted one invocation and said nothing."""
    good = HEADER.format(kid=1) + BODY
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": good, "kernel-2.traceg": HEADER.format(kid=2) + BODY},
             "kernel-1.traceg\n")
    assert main(["trace", "info", str(wl)]) == 0
    out, err = capsys.readouterr()
    assert "invocations         1" in out
    assert f"{wl / 'kernel-2.traceg'}: not in kernelslist.g, so no command reads it" in err


# ----------------------------------------------------------------------------- 8-10 header and opcode text

def test_non_utf8_opcode_is_refused(tmp_path, parser):
    p = _w(tmp_path / "kernel-1.traceg", (HEADER.format(kid=1) + BODY).encode().replace(b"MOV", b"M\xffV"))
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg:20: opcode: not UTF-8 text \(byte 0xff"):
        read_kernel(p)


def test_repeated_header_key_is_refused(tmp_path):
    text = HEADER.format(kid=1).replace("-nregs = 16\n", "-nregs = 16\n-nregs = 255\n") + BODY
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg:7: -nregs: appears again \(first at line 6\)$"):
        read_kernel(_w(tmp_path / "kernel-1.traceg", text))
    text = HEADER.format(kid=1) + "#traces format = PC mask\n" + BODY
    with pytest.raises(TraceFormatError, match=r":16: #traces format: appears again \(first at line 15\)$"):
        read_kernel(_w(tmp_path / "kernel-1.traceg", text))


@pytest.mark.parametrize("line,value,why", [
    ("-kernel id = {kid}", "0", "kernel ids start at 1"),
    ("-kernel id = {kid}", "\u0661", "expected ASCII decimal digits"),
    ("-kernel id = {kid}", "+1", "expected ASCII decimal digits"),
    ("-kernel id = {kid}", "1_0", "expected ASCII decimal digits"),
    ("-nregs = 16", "\u0661\u0666", "expected ASCII decimal digits"),
    ("-enable lineinfo = 0", "\u0660", "expected ASCII decimal digits"),
    ("-grid dim = (2,1,1)", "(\u0662,1,1)", "expected (x,y,z)"),
    ("-grid dim = (2,1,1)", "(-5,1,1)", "dimensions must be >= 1"),  # was "expected (x,y,z)"
    ("-shmem base_addr = 0x00007f0000000000", "0x7f_00", "expected hex digits"),
    # nothing a launch can hold: 2**64 ids broke the graph stage's int64 arrays with a traceback,
    # and the Accel-Sim export copied the rest into headers its simulator reads as fixed-width ints
    ("-kernel id = {kid}", str(2**63 + 1), "above 9223372036854775808"),
    ("-kernel id = {kid}", "99999999999999999999", "above"),
    ("-grid dim = (2,1,1)", "(2147483648,1,1)", "beyond CUDA's grid limits"),
    ("-grid dim = (2,1,1)", "(2,65536,1)", "beyond CUDA's grid limits"),
    ("-block dim = (64,1,1)", "(2048,1,1)", "beyond CUDA's block limits"),
    ("-block dim = (64,1,1)", "(1,1,65)", "beyond CUDA's block limits"),
    ("-block dim = (64,1,1)", "(64,32,1)", "more than 1024 threads in a block"),
    ("-nregs = 16", "256", "above 255"),
    ("-shmem = 0", str(2**32), "above 4294967295"),
    ("-binary version = 86", str(2**31), "above 2147483647"),
    ("-accelsim tracer version = 5", "99999999999999999999", "above 2147483647"),
    ("-cuda stream id = 0", str(2**64), "above 18446744073709551615"),
    ("-shmem base_addr = 0x00007f0000000000", "0x1ffffffffffffffffff", "above 0xffffffffffffffff"),
])
def test_header_numbers_are_ascii_in_range_and_ids_one_based(tmp_path, line, value, why):
    key = line.split("=")[0].strip()
    text = HEADER.replace(line, f"{key} = {value}").format(kid=1) + BODY
    with pytest.raises(TraceFormatError, match=re.escape(f"{key}: bad value {value!r} ({why}")):
        read_kernel(_w(tmp_path / "kernel-1.traceg", text))


@pytest.mark.parametrize("line,value", [("-kernel id = {kid}", "0"), ("-nregs = 16", "999"),
                                        ("-enable lineinfo = 0", "x")])
def test_a_bad_header_value_names_its_own_line(tmp_path, line, value):
    """The error must send the user to the header line that holds the bad value (1-based),
    not the line above it."""
    lineno = HEADER.splitlines().index(line) + 1
    key = line.split("=")[0].strip()
    text = HEADER.replace(line, f"{key} = {value}").format(kid=1) + BODY
    with pytest.raises(TraceFormatError, match=rf"kernel-1\.traceg:{lineno}: {key}: bad value"):
        read_kernel(_w(tmp_path / "kernel-1.traceg", text))


@pytest.mark.parametrize("line,value", [
    ("-kernel id = {kid}", str(2**63)), ("-grid dim = (2,1,1)", "(2147483647,65535,65535)"),
    ("-block dim = (64,1,1)", "(1024,1,1)"), ("-block dim = (64,1,1)", "(16,1,64)"), ("-nregs = 16", "255"),
    ("-cuda stream id = 0", str(2**64 - 1)), ("-shmem base_addr = 0x00007f0000000000", "0xffffffffffffffff"),
])
def test_header_numbers_at_the_limits_are_read(tmp_path, line, value):
    key = line.split("=")[0].strip()
    text = HEADER.replace(line, f"{key} = {value}").format(kid=1) + BODY
    assert read_kernel(_w(tmp_path / "kernel-1.traceg", text)).header is not None


def test_structure_numbers_are_ascii(tmp_path, parser):
    text = HEADER.format(kid=1) + BODY.replace("warp = 0", "warp = \u0660")
    with pytest.raises(TraceFormatError, match=r":18: warp: expected 'warp = w'"):
        read_kernel(_w(tmp_path / "kernel-1.traceg", text))


# ----------------------------------------------------------------------------- 11 huge --invocations range

def test_export_invocation_range_is_bounded_by_the_workload(tmp_path, capsys):
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": HEADER.format(kid=1) + BODY,
                               "kernel-2.traceg": HEADER.format(kid=2) + BODY}, "kernel-1.traceg\nkernel-2.traceg\n")
    out = tmp_path / "out"
    # in a process of its own: before the fix this built a list of 10^11 ids and never returned
    r = subprocess.run([sys.executable, "-m", "gclsampler", "trace", "export-accelsim", str(wl), str(out),
                        "--invocations", "0-99999999999"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--invocations: '0-99999999999' goes past the last invocation" in r.stderr and "(1)" in r.stderr
    assert not out.exists()
    line = _error(capsys, ["trace", "export-accelsim", str(wl), str(out), "--invocations", "1,2-5"])
    assert line.endswith(f"--invocations: '2-5' goes past the last invocation of {wl} (1)")
    line = _error(capsys, ["trace", "export-accelsim", str(wl), str(out), "--invocations", "@"])
    assert line.endswith("--invocations: '@' must be followed by a file name (@ids.txt)")
    (tmp_path / "ids.txt").write_text("1\n7-9\n")
    line = _error(capsys, ["trace", "export-accelsim", str(wl), str(out), "--invocations", f"@{tmp_path / 'ids.txt'}"])
    assert f"{tmp_path / 'ids.txt'}:2: '7-9' goes past the last invocation" in line
    (tmp_path / "ids.txt").write_text("0\n\n1, x\n")  # a bad token names its line (blank lines count)
    line = _error(capsys, ["trace", "export-accelsim", str(wl), str(out), "--invocations", f"@{tmp_path / 'ids.txt'}"])
    assert line.endswith(f"{tmp_path / 'ids.txt'}:3: 'x' is not an invocation id or range like 7-9")
    assert main(["trace", "export-accelsim", str(wl), str(out), "--invocations", "0-1"]) == 0
    assert (out / "kernelslist.g").read_text().split() == ["kernel-1.traceg", "kernel-2.traceg"]


# ----------------------------------------------------------------------------- 12 smaller ones

def test_missing_listed_file_names_the_kernelslist_line(tmp_path, capsys):
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": HEADER.format(kid=1) + BODY}, "kernel-1.traceg\n\nkernel-2.traceg\n")
    line = _error(capsys, ["trace", "info", str(wl)])
    assert line.endswith("kernelslist.g:3: kernelslist: lists 'kernel-2.traceg', which does not exist")


@pytest.mark.parametrize("command", [["trace", "info"], ["graph", "info"], ["validate"]])
def test_a_listed_directory_or_fifo_is_named_for_what_it_is(tmp_path, capsys, command):
    """A directory was called missing (and a FIFO hung the trace reader)."""
    import os

    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": HEADER.format(kid=1) + BODY}, "kernel-1.traceg\nkernel-2.traceg\n")
    (wl / "kernel-2.traceg").mkdir()
    capsys.readouterr()
    assert main([*command, str(wl)]) == 2
    err = capsys.readouterr().err
    assert "kernelslist.g:2: kernelslist: lists 'kernel-2.traceg', which is a directory, not a trace file" in err
    (wl / "kernel-2.traceg").rmdir()
    os.mkfifo(wl / "kernel-2.traceg")
    assert main([*command, str(wl)]) == 2
    assert "lists 'kernel-2.traceg', which is a special file (FIFO, device, socket), not a trace file" in \
        capsys.readouterr().err


def test_every_trace_command_refuses_a_list_out_of_launch_order(tmp_path, capsys):
    """validate and the graph stage refused it; trace info, export-accelsim and group read it,
    pairing each trace with another launch's profile row (and Accel-Sim runs the list in order)."""
    files = {f"kernel-{k}.traceg": HEADER.format(kid=k) + BODY for k in (1, 2, 3)}
    wl = _wl(tmp_path / "wl", files, "kernel-2.traceg\nkernel-1.traceg\nkernel-3.traceg\n")
    why = ("kernelslist: kernel-1.traceg (-kernel id 1) is listed after kernel-2.traceg (-kernel id 2); "
           "list traces in launch order")
    for argv in (["trace", "info", str(wl)], ["trace", "export-accelsim", str(wl), str(tmp_path / "out")],
                 ["validate", str(wl)]):
        assert main(argv) == 2
        assert f"{wl / 'kernelslist.g'}: {why}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    raw = _wl(tmp_path / "raw", {f"kernel-{k}.trace": _raw(k) for k in (1, 2)}, None)
    (raw / "kernelslist").write_text("kernel-2.trace\nkernel-1.trace\n")
    with pytest.raises(TraceFormatError, match=r"raw/kernelslist: kernelslist: kernel-1\.trace \(-kernel id 1\) is "
                                               r"listed after kernel-2\.trace"):
        group_raw_dir(raw, tmp_path / "grouped")
    assert not (tmp_path / "grouped").exists()
    (wl / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\nkernel-3.traceg\n")
    assert [i.path for i in list_invocations(wl)] == ["kernel-1.traceg", "kernel-2.traceg", "kernel-3.traceg"]


def test_kernelslist_listing_itself_is_refused(tmp_path):
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": HEADER.format(kid=1) + BODY}, "kernel-1.traceg\nkernelslist.g\n")
    with pytest.raises(TraceFormatError,
                       match=r"kernelslist\.g:2: kernelslist: lists 'kernelslist\.g', the kernelslist itself"):
        list_invocations(wl)


@pytest.mark.parametrize("argv,message", [
    (["trace", "info", "{wl}", "--top", "-1"], "--top -1: must be at least 1"),
    (["trace", "info", "{wl}", "--top", "0"], "--top 0: must be at least 1"),
    (["graph", "build", "{wl}", "--workers", "0"], "--workers 0: must be at least 1"),
    (["graph", "info", "{wl}", "--workers", "-3"], "--workers -3: must be at least 1"),
])
def test_counts_must_be_positive(tmp_path, capsys, argv, message):
    wl = _wl(tmp_path / "wl", {"kernel-1.traceg": HEADER.format(kid=1) + BODY}, "kernel-1.traceg\n")
    assert _error(capsys, [a.format(wl=wl) for a in argv]).endswith(message)
    assert not (wl / ".graph-cache").exists()


def test_workers_has_help(capsys):
    for cmd in ("build", "info"):
        with pytest.raises(SystemExit):
            main(["graph", cmd, "--help"])
        out = capsys.readouterr().out
        assert re.search(r"--workers WORKERS\s+processes", out), out


@pytest.mark.parametrize("old,new,message", [
    ("0010 ffffffff 0 EXIT", "10000000000000000 ffffffff 0 EXIT", "PC: value '10000000000000000' out of range"),
    ("0010 ffffffff 0 EXIT", "0010 1ffffffff 0 EXIT", "mask: value '1ffffffff' out of range (max 4294967295)"),
    ("0010 ffffffff 0 EXIT 0 0 0", "0010 ffffffff 0 EXIT 18446744073709551617 0 0",
     "src_num: value '18446744073709551617' out of range (max 255)"),
    ("0010 ffffffff 0 EXIT 0 0 0", "0010 ffffffff 0 EXIT 0 0 99999999999999999999",
     "immediate: value '99999999999999999999' out of range (signed 64-bit)"),
    ("0010 ffffffff 0 EXIT 0 0 0", "0010 ffffffff 0 EXIT 0 0 1x", "immediate: token '1x' is not a decimal integer"),
])
def test_overflowing_numbers_say_out_of_range(tmp_path, parser, old, new, message):
    p = _w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + BODY.replace(old, new))
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg:21: " + re.escape(message)):
        read_kernel(p)


@pytest.mark.parametrize("written,value", [("18446744073709551552", -64), ("18446744073709551615", -1),
                                           ("9223372036854775808", -2**63), ("-9223372036854775808", -2**63),
                                           ("9223372036854775807", 2**63 - 1), ("-64", -64)])
def test_an_immediate_is_its_64_bits_written_signed_or_unsigned(tmp_path, parser, written, value):
    """gcl_tracer wrote immediates unsigned until its first GPU run (the real traces have -64
    as 18446744073709551552); the format says signed. Both spellings of the same bits read alike."""
    body = BODY.replace("0000 ffffffff 1 R1 MOV 0 0 0", f"0000 ffffffff 1 R1 MOV 0 0 {written}")
    t = read_kernel(_w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + body))
    assert int(t.imm[0]) == value


@pytest.mark.parametrize("written,value", [("01234567890123456789", 1234567890123456789),
                                           ("09223372036854775808", -2**63), ("00000000000000000064", 64)])
def test_a_twenty_digit_immediate_below_2_63_reads_alike_in_both_parsers(tmp_path, parser, written, value):
    """The compiled parser reads an unsigned immediate of up to 20 digits (2^64 - 1 has 20), so a
    zero-padded one below 2^63 too; the numpy one took only [2^63, 2^64) past 19 digits and called
    01234567890123456789 'out of range (signed 64-bit)': one file, read or refused by the parser."""
    body = BODY.replace("0000 ffffffff 1 R1 MOV 0 0 0", f"0000 ffffffff 1 R1 MOV 0 0 {written}")
    t = read_kernel(_w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + body))
    assert int(t.imm[0]) == value


def test_an_immediate_past_64_bits_is_refused(tmp_path, parser):
    body = BODY.replace("0000 ffffffff 1 R1 MOV 0 0 0", "0000 ffffffff 1 R1 MOV 0 0 18446744073709551616")
    with pytest.raises(TraceFormatError, match=re.escape("immediate: value '18446744073709551616' out of range")):
        read_kernel(_w(tmp_path / "kernel-1.traceg", HEADER.format(kid=1) + body))


def test_twenty_digit_decimal_does_not_wrap(tmp_path, parser):
    # 2**64 + 1 once wrapped to 1 and was read as a valid line number
    text = HEADER.format(kid=1).replace("-enable lineinfo = 0", "-enable lineinfo = 1") + \
        BODY.replace("0000 ffffffff 1 R1", "18446744073709551617 0000 ffffffff 1 R1").replace("0010 ffff", "2 0010 ffff")
    with pytest.raises(TraceFormatError, match=r":20: line_num: value '18446744073709551617' out of range"):
        read_kernel(_w(tmp_path / "kernel-1.traceg", text))


def test_group_refuses_two_raw_traces_of_one_invocation(tmp_path, capsys):
    """It wrote a workload that every other command then refused."""
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-2.trace": _raw(1)}, None)
    (raw / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    line = _error(capsys, ["trace", "group", str(raw), str(tmp_path / "g")])
    assert "kernel-2.trace: -kernel id: 1 is also the id of kernel-1.trace" in line, line
    assert not (tmp_path / "g").exists()


def test_regrouping_never_deletes_what_was_added_to_the_workload(tmp_path, capsys):
    """The README's steps group traces into a directory, then import profile.csv into it;
    grouping again (say, compressed) replaced the directory and deleted the profile."""
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1), "kernel-2.trace": _raw(2)}, None)
    (raw / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    wl = tmp_path / "myapp"
    assert main(["trace", "group", str(raw), str(wl)]) == 0
    (wl / ".graph-cache").mkdir()  # derived from the traces: goes with them
    assert main(["trace", "group", str(raw), str(wl), "--compress", ".gz"]) == 0
    assert sorted(p.name for p in wl.iterdir()) == [".gclsampler-output", "kernel-1.traceg.gz",
                                                    "kernel-2.traceg.gz", "kernelslist.g"]
    (wl / "profile.csv").write_text("invocation,kernel_name\n")
    (wl / "profiles").mkdir()
    capsys.readouterr()
    line = _error(capsys, ["trace", "group", str(raw), str(wl)])
    assert f"{wl / 'profile.csv'}: not written by `gclsampler trace group` (and 1 more)" in line, line
    assert (wl / "profile.csv").read_text() == "invocation,kernel_name\n"
    assert (wl / "kernel-1.traceg.gz").exists() and not list(tmp_path.glob(".myapp.*"))


def test_group_names_the_list_line_of_a_missing_trace(tmp_path):
    raw = _wl(tmp_path / "raw", {"kernel-1.trace": _raw(1)}, None)
    (raw / "kernelslist").write_text("MemcpyHtoD,0x00007f0000000000,4096\nkernel-1.trace\nkernel-2.trace\n")
    with pytest.raises(TraceFormatError, match=r"raw/kernelslist:3: kernelslist: lists 'kernel-2.trace', which does "
                                               r"not exist"):
        group_raw_dir(raw, tmp_path / "out")
    assert not (tmp_path / "out").exists()
