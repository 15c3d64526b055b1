"""What Accel-Sim's own parser reads from the traces gclsampler writes and exports.

Accel-Sim (``gpu-simulator/trace-parser/trace_parser.cc``, ``inst_trace_t::parse_from_string``)
reads an instruction line with a ``std::stringstream``: PC and mask into 32-bit ``unsigned``,
at most 1 destination and 4 sources as ``R%d``, the address part by mode (0: one hex address
per active lane; 1: hex base and an ``int`` stride, expanded over the first run of active
lanes only; 2: hex base and one ``long long`` delta per further active lane; it asks for one
more, which takes the immediate). A field it cannot extract fails the stream, and the fields
after it are left unread without a word. ``_accelsim_line`` below re-states those rules so that
the export can be held to them, not to gclsampler's own, more permissive reader.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.trace import TraceFormatError, read_kernel
from gclsampler.trace.testing import random_kernel_trace
from gclsampler.trace.workload import accelsim_text

from _trace_fixtures import Inst, make_trace

_U32 = 2**32 - 1


def _num(tok: str, base: int, lo: int, hi: int) -> int:
    """One stream extraction of Accel-Sim's parser; ValueError where its stream would fail."""
    if base == 16 and tok[:2] in ("0x", "0X"):
        tok = tok[2:]
    if not re.fullmatch(r"-?[0-9]+" if base == 10 else r"[0-9a-fA-F]+", tok):
        raise ValueError(f"{tok!r} is not base {base}")
    v = int(tok, base)
    if not lo <= v <= hi:
        raise ValueError(f"{tok!r} does not fit [{lo}, {hi}]")
    return v


def _accelsim_line(line: str, lineinfo: bool, version: int = 5) -> tuple[int, int, list[int] | None]:
    """(PC, mask, addresses of the active lanes or None) as Accel-Sim reads a grouped line of a
    file whose header says ``-accelsim tracer version = version``."""
    toks = iter(line.split())
    if version < 3:  # before v3 a line starts with its CTA's x y z and warp id, read and dropped
        for _ in range(4):
            _num(next(toks), 10, 0, _U32)
    if lineinfo:
        _num(next(toks), 10, 0, _U32)
    pc, mask = _num(next(toks), 16, 0, _U32), _num(next(toks), 16, 0, _U32)
    for limit in (1, 4):  # destinations, then (after the opcode) sources
        n = _num(next(toks), 10, 0, limit)
        assert all(re.fullmatch(r"R[0-9]+", next(toks)) for _ in range(n))
        if limit == 1:
            next(toks)  # the opcode
    if _num(next(toks), 10, 0, _U32) == 0:
        return pc, mask, None
    lanes = [s for s in range(32) if mask >> s & 1]
    mode = _num(next(toks), 10, 0, 2)
    if mode == 0:
        return pc, mask, [_num(next(toks), 16, 0, 2**64 - 1) for _ in lanes]
    base = _num(next(toks), 16, 0, 2**64 - 1)
    if mode == 1:
        stride = _num(next(toks), 10, -2**31, 2**31 - 1)
        run = 0
        for s in lanes:  # the first run of contiguous active lanes gets addresses, later lanes 0
            if s != lanes[0] + run:
                break
            run += 1
        return pc, mask, [(base + j * stride) % 2**64 if j < run else 0 for j in range(len(lanes))]
    out = [base] if lanes else []
    for _ in lanes[1:]:
        out.append((out[-1] + _num(next(toks), 10, -2**63, 2**63 - 1)) % 2**64)
    return pc, mask, out


def _exported_reads(t) -> None:
    """Export ``t``; Accel-Sim's reading of every line equals gclsampler's reading of the file."""
    import tempfile
    from pathlib import Path

    text = accelsim_text(t)
    # Accel-Sim's sscanf("-accelsim tracer version = %d"); the version picks the line layout
    version = int(re.search(rb"^-accelsim tracer version = (\d+)", text, re.M).group(1))
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "kernel-1.traceg"
        p.write_bytes(text)
        back = read_kernel(p)
    body = text.decode().split("#traces format", 1)[1].splitlines()[1:]
    lines = [ln for ln in body if ln and not ln.startswith(("#", "thread block =", "warp =", "insts ="))]
    assert len(lines) == back.n_insts
    for i, ln in enumerate(lines):
        pc, mask, addrs = _accelsim_line(ln, back.line_num is not None, version)
        assert (pc, mask) == (int(back.pc[i]), int(back.mask[i]))
        ours = back.addrs[back.addr_ptr[i]:back.addr_ptr[i + 1]].tolist()
        assert (addrs or []) == ours and (addrs is None) == (int(back.mem_width[i]) == 0)


_ADDR = st.sampled_from([0, 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1]) | st.integers(0, 2**64 - 1)
_MASK = st.sampled_from([0, 1, 0x80000000, 0xFFFFFFFF, 0x0000FFFF, 0x7FFFFFFE, 0x55555555]) | st.integers(0, _U32)


@st.composite
def _memory_inst(draw):
    """A load whose lane addresses run with a stride (one that fits an int or not), are all
    equal, or are anything, over any mask: what the writer must pick mode 1 or 2 for."""
    mask = draw(_MASK)
    k = bin(mask).count("1")
    base = draw(_ADDR)
    kind = draw(st.sampled_from(["stride", "any"]))
    if kind == "stride":
        step = draw(st.sampled_from([0, 4, -4, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**63]))
        addrs = tuple((base + j * step) % 2**64 for j in range(k))
    else:
        addrs = tuple(draw(st.lists(_ADDR, min_size=k, max_size=k)))
    return Inst("LDG.E", ("R1",), ("R2",), mem_width=4, addrs=addrs, mask=mask,
                pc=draw(st.sampled_from([0, 0x10, 0xFFFFFFE0])))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_memory_inst(), max_size=6), min_size=1, max_size=3))
def test_accelsim_reads_every_exported_address_as_gclsampler_does(warps):
    """Stride mode only over contiguous lanes and int strides, delta mode otherwise, 32-bit PCs
    and masks: every exported line is one Accel-Sim's stream reads whole and alike."""
    _exported_reads(make_trace(warps, with_values=False))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lineinfo=st.booleans(), dense=st.booleans())
def test_accelsim_reads_random_exports_as_gclsampler_does(seed, lineinfo, dense):
    t = random_kernel_trace(np.random.default_rng(seed), n_warps=5, max_insts=12, line_num=lineinfo,
                            max_dst=1, max_src=4, dense=dense)
    _exported_reads(t)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("imm, lineinfo", [(False, False), (True, False), (False, True), (True, True)])
def test_the_exported_header_states_the_tracer_version_of_the_lines_written(version, imm, lineinfo):
    """The export writes every line in the layout of tracer v3+ (no CTA/warp prefix), with an
    immediate and a line number as v4+ has them, whatever version the input's header said. It
    copied a header's version 0-2, and Accel-Sim then read each line's PC and mask as a CTA id."""
    import dataclasses

    t = random_kernel_trace(np.random.default_rng(version), n_warps=3, max_insts=8, line_num=lineinfo,
                            imm=imm, max_dst=1, max_src=4)
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, tracer_version=version))
    head = accelsim_text(t).split(b"#traces format", 1)[0].decode()
    want = max(version, 4 if imm or lineinfo else 3)
    assert f"-accelsim tracer version = {want}\n" in head
    _exported_reads(t)


@pytest.mark.parametrize("pc, closed", [(2**32, True), (2**63 - 1, False), (2**63 - 1, True),
                                        (0xFFFFFFF0, False)])
def test_export_refuses_a_pc_accelsim_reads_into_32_bits(pc, closed):
    """The reader takes PCs up to 2^63 - 1 (a tracer writing absolute addresses); Accel-Sim's
    ``unsigned m_pc`` fails its stream on a larger one and leaves the rest of the line unread.
    The export wrote such PCs as they were, and the EXIT it appends to an open warp at PC + 16
    wrapped 2^63 - 1 to a negative PC, written as 800000000000000f, which gclsampler's own
    reader then refused."""
    warp = [Inst("MOV", ("R1",), pc=0), Inst("EXIT" if closed else "MOV", pc=pc)]
    with pytest.raises(TraceFormatError, match=r"\bPC\b.*(32-bit PC)") as exc:
        accelsim_text(make_trace([warp], with_values=False))
    assert exc.value.field == "PC" and f"PC {pc:04x}" in str(exc.value)


def test_export_takes_pcs_up_to_the_last_32_bit_one():
    warp = [Inst("MOV", ("R1",), pc=0), Inst("MOV", pc=0xFFFFFFEF)]  # its EXIT goes at ffffffff
    t = make_trace([warp, [Inst("EXIT", pc=0xFFFFFFFF)]], with_values=False)
    _exported_reads(t)


_CTA_NO_WARP = """#BEGIN_TB

thread block = 0,0,0

warp = 0
insts = 1
0000 ffffffff 0 EXIT 0 0 0

#END_TB

#BEGIN_TB

thread block = 1,0,0

#END_TB
"""


@pytest.mark.parametrize("parser", ["compiled", "numpy"])
@pytest.mark.parametrize("fast", [True, False])
def test_a_cta_section_listing_no_warp_is_refused(tmp_path, monkeypatch, parser, fast):
    """A ``KernelTrace`` has no row for a CTA without warps, so the reader dropped such a
    section without a word: the launch lost a CTA, and the export then rewrote the grid without
    it. No tracer writes one (Accel-Sim's post-processing lists every warp of a CTA it writes)."""
    from gclsampler.trace import _text as T
    from gclsampler.trace import reader as R

    from _trace_fixtures import HEADER_V5

    if parser == "numpy":
        monkeypatch.setattr(T, "_JIT_STATE", [None])
    monkeypatch.setattr(R, "_FAST_STRUCTURE_LINES", 0 if fast else 10**9)
    p = tmp_path / "kernel-1.traceg"
    p.write_text(HEADER_V5.format(kid=1, gx=2, li=0) + _CTA_NO_WARP)
    with pytest.raises(TraceFormatError, match=r"thread block \(1,0,0\) lists no warp") as exc:
        read_kernel(p)
    assert exc.value.field == "warp" and exc.value.line == HEADER_V5.count("\n") + _CTA_NO_WARP.count("\n")


@pytest.mark.parametrize("parser", ["compiled", "numpy"])
@settings(max_examples=40, deadline=None)
@given(mask=_MASK, base=_ADDR, stride=st.sampled_from([0, 4, -8, 2**31 - 1, -2**31]), scatter=st.booleans(),
       data=st.data())
def test_each_address_mode_reads_as_accelsim_reads_it(parser, mask, base, stride, scatter, data):
    """One set of lane addresses written as a list (mode 0), as base and deltas (mode 2) and, when
    it has a stride, as base and stride (mode 1) reads the same in gclsampler and in Accel-Sim.
    A stride line whose mask has a gap is refused: Accel-Sim gives the lanes after the gap address
    0, where gclsampler read base + j*stride, silently another set of addresses."""
    import tempfile
    from pathlib import Path

    from gclsampler.trace import _text as T

    from _trace_fixtures import HEADER_V5

    lanes = bin(mask).count("1")
    if scatter:
        addrs = data.draw(st.lists(_ADDR, min_size=lanes, max_size=lanes))
    else:
        addrs = [(base + j * stride) % 2**64 for j in range(lanes)]
    delta = [((b - a + 2**63) % 2**64) - 2**63 for a, b in zip(addrs, addrs[1:])]
    encodings = {0: " ".join(f"0x{a:x}" for a in addrs), 2: " ".join([f"0x{addrs[0]:x}" if addrs else "0x0",
                                                                     *map(str, delta)])}
    if not scatter:
        encodings[1] = f"0x{base:x} {stride}"
    state = T._JIT_STATE[:]
    if parser == "numpy":
        T._JIT_STATE[:] = [None]
    try:
        for mode, text in encodings.items():
            line = f"0010 {mask:08x} 1 R4 LDG.E 1 R2 4 {mode} {text} 0".replace("  ", " ")
            with tempfile.TemporaryDirectory() as d:
                p = Path(d) / "kernel-1.traceg"
                p.write_text(HEADER_V5.format(kid=1, gx=1, li=0)
                             + f"#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n{line}\n#END_TB\n")
                m = mask & -mask if mask else 0
                if mode == 1 and (mask + m) & mask:
                    with pytest.raises(TraceFormatError, match="not contiguous") as exc:
                        read_kernel(p)
                    assert exc.value.field == "address mode" and exc.value.line == HEADER_V5.count("\n") + 5
                    continue
                got = read_kernel(p).addrs.tolist()
            assert got == addrs == _accelsim_line(line, False)[2], mode
    finally:
        T._JIT_STATE[:] = state
