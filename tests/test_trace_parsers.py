"""The compiled (numba) trace parser against the numpy one it replaces in the hot path.

Both must give identical arrays on every valid trace, and on a broken trace both
must raise the same ``TraceFormatError`` (the compiled parser finds the bad line,
the numpy one words the error). Mutations are single edits of rendered trace
text, so most produce exactly one bad line.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gclsampler.trace import TraceFormatError, read_kernel
from gclsampler.trace import _text as T
from gclsampler.trace.testing import random_kernel_trace
from gclsampler.trace.writer import render

jit = pytest.importorskip("gclsampler.trace._jit", reason="numba is not installed")

HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read(path, compiled: bool, monkeypatch):
    """read_kernel with the compiled kernels on or off; returns the trace or the error text."""
    with monkeypatch.context() as m:
        m.setattr(T, "_JIT_STATE", [jit if compiled else None])
        try:
            return read_kernel(path)
        except TraceFormatError as exc:
            return f"TraceFormatError: {exc}"


def _both(path, monkeypatch):
    return _read(path, True, monkeypatch), _read(path, False, monkeypatch)


def _assert_same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
    else:
        assert a.equals(b) and a.opcode_table == b.opcode_table


def _raw_text(t) -> bytes:
    """The same trace in the raw (ungrouped, tracer v3-style) layout: cta x y z and warp before each line."""
    text = render(t).decode()
    head, _, body = text.partition("#BEGIN_TB")
    out, cta, warp = [], None, None
    for line in ("#BEGIN_TB" + body).splitlines():
        s = line.strip()
        if s.startswith("thread block"):
            cta = s.split("=")[1].replace(",", " ").split()
        elif s.startswith("warp ="):
            warp = s.split("=")[1].strip()
        elif s and not s.startswith(("#", "insts")):
            out.append(" ".join(cta + [warp]) + " " + s)
    return (head + "\n".join(out) + "\n").encode()


@HYP
@given(seed=st.integers(0, 2**32 - 1), line_num=st.booleans(), imm=st.booleans(), values=st.booleans(),
       raw=st.booleans(), dense=st.booleans())
def test_parsers_agree_on_valid_traces(tmp_path, monkeypatch, seed, line_num, imm, values, raw, dense):
    rng = np.random.default_rng(seed)
    t = random_kernel_trace(rng, n_warps=5, max_insts=30, line_num=line_num, imm=imm, values=values,
                            dense=dense, max_dst=3, max_src=5)
    p = tmp_path / "kernel-1.traceg"
    p.write_bytes(_raw_text(t) if raw else render(t, values=values))
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert not isinstance(a, str), a
    if not raw:
        assert a.equals(t)


_EDITS = st.sampled_from(["delete_token", "duplicate_token", "replace_char", "delete_char", "insert_char"])


@HYP
@given(seed=st.integers(0, 2**32 - 1), values=st.booleans(), line_num=st.booleans(), edit=_EDITS,
       where=st.floats(0, 1, exclude_max=True), char=st.sampled_from(list(b"0x-|=+~:RZUPT g9f\t")))
def test_parsers_agree_on_broken_traces(tmp_path, monkeypatch, seed, values, line_num, edit, where, char):
    t = random_kernel_trace(np.random.default_rng(seed), n_warps=3, max_insts=12, values=values,
                            line_num=line_num)
    text = render(t, values=values)
    body0 = text.index(b"#BEGIN_TB")
    pos = body0 + int(where * (len(text) - body0))
    if edit in ("delete_token", "duplicate_token"):
        s = pos
        while s > body0 and text[s - 1] > 32:
            s -= 1
        e = pos
        while e < len(text) and text[e] > 32:
            e += 1
        tok = text[s:e]
        text = text[:s] + (b"" if edit == "delete_token" else tok + b" " + tok) + text[e:]
    elif edit == "replace_char":
        text = text[:pos] + bytes([char]) + text[pos + 1:]
    elif edit == "delete_char":
        text = text[:pos] + text[pos + 1:]
    else:
        text = text[:pos] + bytes([char]) + text[pos:]
    p = tmp_path / "kernel-1.traceg"
    p.write_bytes(text)
    a, b = _both(p, monkeypatch)
    # also when the edit removed the first '#BEGIN_TB', so that every line is a bad raw-layout
    # line: both name the first bad line (the compiled parser once named the first of its first
    # failing pass, numpy the first of its first failing column)
    _assert_same(a, b)


def test_dedup_path_agrees_and_errors_name_the_right_line(tmp_path, monkeypatch):
    """>1024 mostly repeated lines take the parse-distinct-lines path in both parsers."""
    rng = np.random.default_rng(11)
    t = random_kernel_trace(rng, n_warps=4, max_insts=40, dense=True, values=True, line_num=True)
    body = "#BEGIN_TB" + render(t).decode().partition("#BEGIN_TB")[2]
    # the same CTA body 40 times with different CTA ids: most instruction lines repeat
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, grid=(64, 1, 1)))
    head = render(t).decode().partition("#BEGIN_TB")[0]
    ctas = []
    for c in range(40):
        lines = [f"thread block = {c},0,0" if ln.startswith("thread block") else ln for ln in body.splitlines()]
        ctas.append("\n".join(lines) + "\n")
    good = head + "".join(ctas)
    p = tmp_path / "kernel-1.traceg"
    p.write_text(good)
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert not isinstance(a, str) and a.n_insts > 1024
    # corrupt one repeated line in the last CTA only: the error names that line in both parsers
    lines = good.splitlines()
    inst = [i for i, ln in enumerate(lines) if ln[:1].isdigit() and len(ln.split()) > 5]
    bad_i = inst[-1]
    toks = lines[bad_i].split()
    toks[1] = "zz"  # PC or mask column
    lines[bad_i] = " ".join(toks)
    p.write_text("\n".join(lines) + "\n")
    a, b = _both(p, monkeypatch)
    assert isinstance(a, str) and a == b and f":{bad_i + 1}:" in a



@pytest.mark.parametrize("jit_on", [True, False])
def test_only_a_leading_0x_is_a_hex_prefix(jit_on, monkeypatch):
    """``0x1f`` and ``0X2A`` read as hex with allow_0x; ``7x1f`` (an x after another digit) and
    a bare ``0x`` are no numbers, in the compiled parser and the numpy one alike."""
    if not jit_on:
        monkeypatch.setattr(T, "_JIT_STATE", [None])
    buf = np.frombuffer(b"0x1f 0X2A 7x1f 0x 1f\n", dtype=np.uint8)
    ts, te = T.tokenize(buf)
    v, ok = T.parse_uint(buf, ts, te, 16, allow_0x=True)
    assert ok.tolist() == [True, True, False, False, True]
    assert v[ok].tolist() == [0x1F, 0x2A, 0x1F]


@pytest.mark.parametrize("jit_on", [True, False])
@pytest.mark.parametrize("text, spans", [
    (b"ab cd\nef", [(0, 5), (6, 8)]),  # no newline after the last line: it is a line all the same
    (b"ab\n  x ", [(0, 2), (5, 6)]),
    (b"ab\n", [(0, 2)]),
])
def test_the_last_line_needs_no_newline(jit_on, text, spans, monkeypatch):
    if not jit_on:
        monkeypatch.setattr(T, "_JIT_STATE", [None])
    ls, le = T.line_spans(np.frombuffer(text, dtype=np.uint8))
    assert list(zip(ls.tolist(), le.tolist())) == spans

@HYP
@given(data=st.lists(st.sampled_from([b"0", b"7", b"f", b"F", b"x", b"X", b"-", b"g", b" ", b"\n", b"R"]),
                     max_size=60),
       base=st.sampled_from([10, 16]), allow_0x=st.booleans(), max_digits=st.integers(1, 20))
def test_number_kernels_match_numpy(data, base, allow_0x, max_digits):
    buf = np.frombuffer(b"".join(data) + b"\n" * 8, dtype=np.uint8)
    ts, te = T.tokenize(buf)
    v1, ok1 = jit.parse_uint(buf, ts, te, base, allow_0x, max_digits)
    v2, ok2 = T.parse_uint_numpy(buf, ts, te, base, allow_0x, max_digits)
    assert np.array_equal(ok1, ok2) and np.array_equal(v1[ok1], v2[ok2])
    i1, iok1 = jit.parse_int(buf, ts, te)
    i2, iok2 = T.parse_int_numpy(buf, ts, te)
    assert np.array_equal(iok1, iok2) and np.array_equal(i1[iok1], i2[iok2])
    ls1, le1 = jit.line_spans(buf)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "_JIT_STATE", [None])
        ls2, le2 = T.line_spans(buf)
    nonblank = le1 > ls1
    assert np.array_equal(nonblank, le2 > ls2)
    assert np.array_equal(ls1[nonblank], ls2[nonblank]) and np.array_equal(le1[nonblank], le2[nonblank])
    # hashes: equal spans hash equal (the only property the parser relies on)
    h = jit.span_hash(buf, ts, te)
    texts = [bytes(buf[s:e]) for s, e in zip(ts.tolist(), te.tolist())]
    for i in range(len(texts)):
        for j in range(i):
            if texts[i] == texts[j]:
                assert h[i] == h[j]


def test_no_jit_environment_variable_selects_numpy(monkeypatch):
    monkeypatch.setattr(T, "_JIT_STATE", [])
    monkeypatch.setenv("GCLSAMPLER_NO_JIT", "1")
    assert T.compiled() is None
    monkeypatch.setattr(T, "_JIT_STATE", [])
    monkeypatch.delenv("GCLSAMPLER_NO_JIT")
    assert T.compiled() is jit


@HYP
@given(keys=st.lists(st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 2**63]), max_size=80),
       rows=st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=5), max_size=20), data=st.data())
def test_gather_kernels_match_numpy(keys, rows, data):
    k = np.array(keys, dtype=np.uint64)
    r1, g1 = jit.first_occurrence(k)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "_JIT_STATE", [None])
        r2, g2 = T.first_occurrence(k)
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=ptr[1:])
        flat = np.array([v for r in rows for v in r], dtype=np.uint32)
        idx = np.array(data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)),
                                          max_size=30 if rows else 0)), dtype=np.int64)
        p2, d2 = T.ragged_take(ptr, flat, idx)
    assert np.array_equal(r1, r2) and np.array_equal(g1, g2)
    assert np.array_equal(k[r1][g1], k)  # every row maps to a representative with its key
    p1, d1 = jit.ragged_take(ptr, flat, idx)
    assert np.array_equal(p1, p2) and np.array_equal(d1, d2) and d1.dtype == flat.dtype


def test_broken_numba_falls_back_to_numpy_with_a_warning(tmp_path, monkeypatch):
    def broken():
        raise RuntimeError("no LLVM for this CPU")

    monkeypatch.setattr(jit, "warm_up", broken)
    monkeypatch.setattr(T, "_JIT_STATE", [])
    monkeypatch.delenv("GCLSAMPLER_NO_JIT", raising=False)
    with pytest.warns(RuntimeWarning, match="no LLVM for this CPU"):
        assert T.compiled() is None
    t = random_kernel_trace(np.random.default_rng(2), values=True)
    p = tmp_path / "kernel-1.traceg"
    p.write_bytes(render(t))
    assert read_kernel(p).equals(t)  # parsed by numpy now


def _ctrl_c_swallowed():
    """What llvmlite's ctypes callbacks do with a Ctrl-C that arrives while numba compiles."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between bytecodes, here
            time.sleep(0.001)
    except KeyboardInterrupt:
        pass


@pytest.mark.parametrize("then", [None, RuntimeError("LLVM ERROR after the interrupt")])
def test_ctrl_c_swallowed_during_the_compile_still_interrupts(monkeypatch, recwarn, then):
    """Not a silent carry-on (the command used to finish and exit 0), and not "numba is broken,
    falling back to numpy" either when the swallowed interrupt turns into another error."""
    def compile_interrupted():
        _ctrl_c_swallowed()
        if then is not None:
            raise then

    monkeypatch.setattr(jit, "warm_up", compile_interrupted)
    monkeypatch.setattr(T, "_JIT_STATE", [])
    monkeypatch.delenv("GCLSAMPLER_NO_JIT", raising=False)
    with pytest.raises(KeyboardInterrupt):
        T.compiled()
    assert T._JIT_STATE == [] and not recwarn.list  # nothing decided: the next call compiles again
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.setattr(jit, "warm_up", lambda: None)
    assert T.compiled() is jit


def test_error_the_numpy_parser_does_not_confirm_still_names_line_and_field(tmp_path, monkeypatch):
    """If the compiled parser rejects a line the numpy one accepts, the error still locates it."""
    t = random_kernel_trace(np.random.default_rng(4), n_warps=1, max_insts=5, values=False)
    while t.n_insts == 0:
        t = random_kernel_trace(np.random.default_rng(5), n_warps=1, max_insts=5, values=False)
    p = tmp_path / "kernel-1.traceg"
    p.write_bytes(render(t, values=False))
    real = jit.parse_lines

    def rejects_first_line(buf, ls, le, *args):
        return (0, jit.F_MASK, None) if ls.size else real(buf, ls, le, *args)

    monkeypatch.setattr(jit, "parse_lines", rejects_first_line)
    monkeypatch.setattr(T, "_JIT_STATE", [jit])
    first = 1 + next(i for i, ln in enumerate(p.read_text().splitlines()) if ln[:1].isalnum() and " " in ln
                     and not ln.startswith(("thread", "warp", "insts")))
    with pytest.raises(TraceFormatError, match=rf"kernel-1.traceg:{first}: mask: does not follow the trace grammar"):
        read_kernel(p)


def _jit_globals_from_elsewhere(mod) -> list[str]:
    """Globals that a compiled kernel of ``mod`` reads as constants but ``mod``'s file does not
    define (imported from another module)."""
    import ast
    import inspect
    import numbers

    tree = ast.parse(Path(mod.__file__).read_text())
    own = {n.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
           for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
           for n in ast.walk(t) if isinstance(n, ast.Name)}
    bad = []
    for name, obj in vars(mod).items():
        py = getattr(obj, "py_func", None)
        if py is None or inspect.getmodule(py) is not mod:
            continue
        for g in py.__code__.co_names:
            v = py.__globals__.get(g)
            if isinstance(v, (np.ndarray, numbers.Number)) and not isinstance(v, bool) and g not in own:
                bad.append(f"{name}: {g}")
    return bad


def test_compiled_kernels_read_no_constant_defined_in_another_file():
    """numba freezes a global's value into the code it caches on disk and invalidates that cache
    only when the kernel's own file changes: ``_jit`` read ``_DIGIT`` and ``MAX_DEC_DIGITS`` from
    ``_text``, so an edit of those in ``_text.py`` alone left the compiled parser on the old
    values for every later run (the numpy parser on the new). Each compiled module must define
    its constants itself (``_jit`` checks them against ``_text``'s at import)."""
    from gclsampler.trace import _text

    assert _jit_globals_from_elsewhere(jit) == []
    assert jit.MAX_DEC_DIGITS == _text.MAX_DEC_DIGITS and np.array_equal(jit._DIGIT, _text._DIGIT)
    photon_jit = pytest.importorskip("gclsampler._photon_jit")
    assert _jit_globals_from_elsewhere(photon_jit) == []


def _header(grid=(1, 1, 1), block=(32, 1, 1)) -> str:
    return ("-kernel name = k\n-kernel id = 1\n"
            f"-grid dim = ({grid[0]},{grid[1]},{grid[2]})\n-block dim = ({block[0]},{block[1]},{block[2]})\n"
            "-accelsim tracer version = 5\n\n"
            "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
            "[adrrescompress?] [mem_addresses] immediate\n\n")


def test_long_lines_of_equal_length_stay_distinct_on_the_dedup_path(tmp_path, monkeypatch):
    """Two lines of the same length over 2^18 bytes (padding inside the line) are different lines:
    the numpy line hash once counted their 8-byte words in int16 and hashed them by length alone, so
    the second took the first one's parse on the repeated-line path (more than 1024 lines)."""
    pad = " " * 300_000
    lines = [f"0000 ffffffff 1 R1 MOV{pad}0 0 0", f"0000 ffffffff 1 R2 MOV{pad}0 0 0"]
    lines += ["0010 ffffffff 0 NOP 0 0 0"] * 1100
    p = tmp_path / "kernel-1.traceg"
    p.write_text(_header() + f"#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = {len(lines)}\n"
                 + "\n".join(lines) + "\n\n#END_TB\n")
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert a.dst[:2, 0].tolist() == [1, 2]


def test_opcodes_that_differ_after_16k_bytes_are_two_opcodes(tmp_path, monkeypatch):
    """The numpy span hash (opcode interning) once read only a span's first 2^14 + 1 bytes."""
    stem = "A" * 17_000
    p = tmp_path / "kernel-1.traceg"
    p.write_text(_header() + "#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = 2\n"
                 f"0000 ffffffff 0 OP{stem}X 0 0 0\n0010 ffffffff 0 OP{stem}Y 0 0 0\n\n#END_TB\n")
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert a.opcode.tolist() == [0, 1] and len(a.opcode_table) == 2


def test_spans_equal_compares_every_byte():
    buf = np.frombuffer(b"x" * 20_000 + b"1" + b"x" * 20_000 + b"2" + b" " * 8, dtype=np.uint8)
    s = np.array([0], dtype=np.int64)
    assert not T.spans_equal(buf, s, s + 20_001, s + 20_001, s + 40_002)[0]
    assert T.spans_equal(buf, s, s + 20_000, s + 20_001, s + 40_001)[0]


def test_raw_records_group_by_cta_at_the_largest_grids(tmp_path, monkeypatch):
    """The (CTA, warp) sort key overflowed int64 past 2^63 (grid at its limits, 32 warps per CTA):
    a CTA read back as (2147483644, 65531, -3) and sorted before CTA (1, 0, 0)."""
    p = tmp_path / "kernel-1.trace"
    p.write_text(_header(grid=(2**31 - 1, 65535, 65535), block=(1024, 1, 1))
                 + "2147483646 65534 65534 5 0000 ffffffff 0 EXIT 0 0 0\n"
                 + "1 0 0 0 0000 ffffffff 0 EXIT 0 0 0\n"
                 + "2147483646 65534 65534 2 0010 ffffffff 0 EXIT 0 0 0\n")
    a, b = _both(p, monkeypatch)
    _assert_same(a, b)
    assert a.warp_cta.tolist() == [[1, 0, 0], [2147483646, 65534, 65534], [2147483646, 65534, 65534]]
    assert a.warp_id.tolist() == [0, 2, 5] and a.pc.tolist() == [0, 0x10, 0]


@pytest.mark.parametrize("raw", [False, True])
def test_of_two_bad_lines_both_parsers_name_the_first(tmp_path, monkeypatch, raw):
    """Line 1 is bad in a later column (mem_width) than line 2 (PC): numpy checked column by
    column and named line 2, the compiled parser line 1."""
    pre = ("0 0 0 0 " if raw else "")
    lines = [pre + "0000 ffffffff 0 MOV 0 x 0", pre + "zz10 ffffffff 0 EXIT 0 0 0"]
    lines += [pre + f"{16 * i + 32:04x} ffffffff 0 NOP 0 0 0" for i in range(40)]
    body = "\n".join(lines) if raw else ("#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\n"
                                         f"insts = {len(lines)}\n" + "\n".join(lines) + "\n\n#END_TB")
    p = tmp_path / "kernel-1.traceg"
    p.write_text(_header() + body + "\n")
    first = _header().count("\n") + (1 if raw else 7)
    a, b = _both(p, monkeypatch)
    assert isinstance(a, str) and a == b and f":{first}: mem_width:" in a, (a, b)


def test_a_cta_section_without_its_begin_line_is_named(tmp_path, monkeypatch):
    """Taken for a raw trace, the grouped trace's 'thread block = 0,0,0' was refused as a bad
    number ('thread block/warp: token 'thread' is not decimal')."""
    p = tmp_path / "kernel-1.traceg"
    p.write_text(_header() + "\nthread block = 0,0,0\n\nwarp = 0\ninsts = 1\n0000 ffffffff 0 EXIT 0 0 0\n\n#END_TB\n")
    a, b = _both(p, monkeypatch)
    assert a == b and f":{_header().count(chr(10)) + 2}: #BEGIN_TB: " in a, a
