"""Compiled (numba) versions of the byte-level loops of ``_text``.

Parsing a trace is a handful of passes over every byte (find tokens, read
digits, hash lines). In numpy each pass is a chain of whole-array temporaries
and sorts by token length; compiled, each is one loop with no temporaries,
which takes the synthetic bench from ~19 to ~68 MB/s per core.

``_text`` keeps the numpy versions: they run when numba is missing or
``GCLSAMPLER_NO_JIT=1``, and the tests check both give identical arrays.
Functions are compiled on first use and cached on disk (``cache=True``), so
only the first process after an install pays the ~seconds of compilation.
"""

from __future__ import annotations

import numba
import numpy as np

from gclsampler.trace import _text
from gclsampler.trace._text import tokenize

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)

# Compile-time constants of the kernels below, defined in this file and checked against
# ``_text``'s. Why not imported from ``_text``: numba freezes a global's value into the machine
# code it caches on disk, and it invalidates that cache only when this file's own size or mtime
# changes, so an edit of ``_text.MAX_DEC_DIGITS`` or ``_text._DIGIT`` (a ``git pull`` that does
# not touch this file) left every later run parsing with the old values from the cache, while
# the numpy parser used the new ones.
MAX_DEC_DIGITS = 19
_DIGIT = np.full(256, 255, dtype=np.uint8)  # byte -> digit value (255: not a hex digit)
_DIGIT[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10)
_DIGIT[np.frombuffer(b"abcdef", dtype=np.uint8)] = np.arange(10, 16)
_DIGIT[np.frombuffer(b"ABCDEF", dtype=np.uint8)] = np.arange(10, 16)
if MAX_DEC_DIGITS != _text.MAX_DEC_DIGITS or not np.array_equal(_DIGIT, _text._DIGIT):
    raise RuntimeError("gclsampler.trace._jit: MAX_DEC_DIGITS or _DIGIT differs from gclsampler.trace._text's; "
                       "change both files together")


@_jit
def parse_uint(buf, start, end, base, allow_0x, max_digits):
    """Same contract as ``_text.parse_uint``: values wrap on overflow, ``ok`` flags bad spans."""
    n = start.shape[0]
    val = np.zeros(n, np.uint64)
    ok = np.ones(n, np.bool_)
    size = buf.size
    b = np.uint64(base)
    for t in range(n):
        s = start[t]
        e = end[t]
        if allow_0x and e - s >= 3 and buf[s] == 48 and s + 1 < size and (buf[s + 1] | 32) == 120:
            s += 2
        if e - s <= 0 or e - s > max_digits:
            ok[t] = False
        v = np.uint64(0)
        for p in range(s, e):
            d = _DIGIT[buf[p]]
            if d >= base:
                ok[t] = False
                d = 0
            v = v * b + np.uint64(d)
        val[t] = v
    return val, ok


@_jit
def parse_int(buf, start, end):
    """Signed decimal (optional leading ``-``), at most 19 digits, as int64."""
    n = start.shape[0]
    val = np.zeros(n, np.int64)
    ok = np.ones(n, np.bool_)
    for t in range(n):
        val[t], ok[t] = _int(buf, start[t], end[t])
    return val, ok


@_jit
def span_hash(buf, start, end):
    """64-bit hash of each span's bytes and length (FNV-1a, then a final mix)."""
    n = start.shape[0]
    h = np.empty(n, np.uint64)
    prime = np.uint64(1099511628211)
    for t in range(n):
        s = start[t]
        e = end[t]
        x = np.uint64(1469598103934665603) ^ np.uint64(e - s)
        for p in range(s, e):
            x = (x ^ np.uint64(buf[p])) * prime
        x ^= x >> np.uint64(29)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(32)
        h[t] = x
    return h


# ----------------------------------------------------------------------------- lines

@_jit
def line_spans(buf):
    """Per line (split at ``\\n``), the span from its first to one past its last byte > 0x20.

    Blank lines get an empty span at the newline. Newlines are sparse, so the
    byte loop is a vectorisable count plus one store per line.
    """
    n = buf.size
    n_nl = 0
    for i in range(n):
        n_nl += np.int64(buf[i] == 10)
    n_lines = n_nl + (1 if n > 0 and buf[n - 1] != 10 else 0)
    ls = np.empty(n_lines, np.int64)
    le = np.empty(n_lines, np.int64)
    line = 0
    s = 0
    for i in range(n):
        if buf[i] == 10:
            ls[line] = s
            le[line] = i
            line += 1
            s = i + 1
    if line < n_lines:
        ls[line] = s
        le[line] = n
    for j in range(n_lines):
        a = ls[j]
        b = le[j]
        while a < b and buf[a] <= 32:
            a += 1
        while b > a and buf[b - 1] <= 32:
            b -= 1
        ls[j] = a
        le[j] = b
    return ls, le


# field codes of ``parse_lines`` errors, and the grammar field each one names
F_PREFIX, F_LINE_NUM, F_PC, F_MASK, F_NDST, F_DST, F_OPCODE, F_NSRC, F_SRC = 1, 2, 3, 4, 5, 6, 7, 8, 9
F_MEM_WIDTH, F_MODE, F_ADDR, F_IMM, F_VALUES, F_LINE = 10, 11, 12, 13, 14, 15
FIELD_NAMES = {F_PREFIX: "thread block/warp", F_LINE_NUM: "line_num", F_PC: "PC", F_MASK: "mask",
               F_NDST: "dest_num", F_DST: "reg_dests", F_OPCODE: "opcode", F_NSRC: "src_num",
               F_SRC: "reg_srcs", F_MEM_WIDTH: "mem_width", F_MODE: "address mode", F_ADDR: "mem_addresses",
               F_IMM: "immediate", F_VALUES: "reg_values", F_LINE: "line"}


@_jit
def _tok(buf, p, e):
    """(start, end) of the next token at or after byte ``p`` of a line ending at ``e``; start == e if none."""
    while p < e and buf[p] <= 32:
        p += 1
    q = p
    while q < e and buf[q] > 32:
        q += 1
    return p, q


@_jit
def _uint(buf, s, e, base, allow_0x, max_digits):
    if allow_0x and e - s >= 3 and buf[s] == 48 and (buf[s + 1] | 32) == 120:
        s += 2
    ok = (e - s > 0) and (e - s <= max_digits)
    v = np.uint64(0)
    b = np.uint64(base)
    for p in range(s, e):
        d = _DIGIT[buf[p]]
        if d >= base:
            ok = False
            d = 0
        v = v * b + np.uint64(d)
    return v, ok


@_jit
def _int(buf, s, e):
    neg = s < e and buf[s] == 45
    if neg:
        s += 1
    v, ok = _uint(buf, s, e, 10, False, 19)
    if v > np.uint64(9223372036854775807):
        if neg and v == np.uint64(9223372036854775808):  # -2^63 is an int64 too
            return np.int64(-9223372036854775807) - np.int64(1), ok
        return np.int64(0), False
    iv = np.int64(v)
    return (-iv if neg else iv), ok


@_jit
def _imm64(buf, s, e):
    """The immediate: a signed decimal, or (as gcl_tracer wrote them before 2026-11-27) an
    unsigned one below 2^64, read as the int64 with the same bits; see reader.imm64."""
    if s < e and buf[s] == 45:
        return _int(buf, s, e)
    if e - s <= 0 or e - s > 20:
        return np.int64(0), False
    v = np.uint64(0)
    top = np.uint64(1844674407370955161)  # (2^64 - 1) // 10
    for p in range(s, e):
        d = _DIGIT[buf[p]]
        if d >= 10:
            return np.int64(0), False
        if v > top or (v == top and d > 5):
            return np.int64(0), False
        v = v * np.uint64(10) + np.uint64(d)
    return np.int64(v), True  # same-width cast: the bits are kept


@_jit
def _reg(buf, s, e):
    """``reg_code`` of a register token, or -1."""
    n = e - s
    if n < 2:
        return -1
    c0 = buf[s]
    c1 = buf[s + 1]
    base = -1
    plen = 1
    limit = 0
    if c0 == 82:  # R
        if n == 2 and c1 == 90:
            return 255
        base, limit = 0, 256
    elif c0 == 80:  # P
        if n == 2 and c1 == 84:
            return 512 + 7
        base, limit = 512, 8
    elif c0 == 85 and (c1 == 82 or c1 == 80):  # UR / UP
        plen = 2
        if n == 3 and c1 == 82 and buf[s + 2] == 90:
            return 256 + 63
        if n == 3 and c1 == 80 and buf[s + 2] == 84:
            return 640 + 7
        base, limit = (256, 64) if c1 == 82 else (640, 8)
    else:
        return -1
    v, ok = _uint(buf, s + plen, e, 10, False, 3)
    if not ok or v >= np.uint64(limit):
        return -1
    return base + np.int64(v)


@_jit
def _popcount32(mask):
    m = np.int64(mask)
    m = m - ((m >> 1) & 0x55555555)
    m = (m & 0x33333333) + ((m >> 2) & 0x33333333)
    m = (m + (m >> 4)) & 0x0F0F0F0F
    return ((m * 0x01010101) & 0xFFFFFFFF) >> 24


@_jit
def _operands(buf, p, e):
    """A register list ``n R.. R..``: ``(n, start of the list, end, bad)``; bad 1 = count, 2 = register."""
    a, p = _tok(buf, p, e)
    v, ok = _uint(buf, a, p, 10, False, MAX_DEC_DIGITS)
    if not ok or v > np.uint64(255):
        return 0, p, p, 1
    n = np.int64(v)
    start = p
    for j in range(n):
        a, p = _tok(buf, p, e)
        if _reg(buf, a, p) < 0:
            return n, start, p, 2
    return n, start, p, 0


@_jit
def _fixed_fields(buf, ls, le, prefix, has_line_num, pre, line_num, pc, mask, k, ndst, nsrc, dpos, spos,
                  op_s, op_e, mw, cur):
    """Pass 1: every field up to ``mem_width``; returns ``(err_i, err_f, dmax, smax, n_addr)``."""
    dmax = 0
    smax = 0
    n_addr = 0
    for i in range(ls.shape[0]):
        p, e = ls[i], le[i]
        for j in range(prefix):
            a, p = _tok(buf, p, e)
            v, ok = _uint(buf, a, p, 10, False, MAX_DEC_DIGITS)
            if not ok:
                return i, F_PREFIX, 0, 0, 0
            pre[i, j] = np.int64(v)
        if has_line_num:
            a, p = _tok(buf, p, e)
            v, ok = _uint(buf, a, p, 10, False, MAX_DEC_DIGITS)
            if not ok or v > np.uint64(2147483647):
                return i, F_LINE_NUM, 0, 0, 0
            line_num[i] = np.int32(v)
        a, p = _tok(buf, p, e)
        v, ok = _uint(buf, a, p, 16, True, 16)
        if not ok or v > np.uint64(9223372036854775807):
            return i, F_PC, 0, 0, 0
        pc[i] = np.int64(v)
        a, p = _tok(buf, p, e)
        v, ok = _uint(buf, a, p, 16, True, 16)
        if not ok or v > np.uint64(0xFFFFFFFF):
            return i, F_MASK, 0, 0, 0
        mask[i] = np.uint32(v)
        k[i] = _popcount32(v)
        n, dpos[i], p, bad = _operands(buf, p, e)
        if bad:
            return i, F_NDST if bad == 1 else F_DST, 0, 0, 0
        ndst[i] = n
        dmax = max(dmax, n)
        a, p = _tok(buf, p, e)
        if a == p:
            return i, F_OPCODE, 0, 0, 0
        op_s[i], op_e[i] = a, p
        n, spos[i], p, bad = _operands(buf, p, e)
        if bad:
            return i, F_NSRC if bad == 1 else F_SRC, 0, 0, 0
        nsrc[i] = n
        smax = max(smax, n)
        a, p = _tok(buf, p, e)
        v, ok = _uint(buf, a, p, 10, False, MAX_DEC_DIGITS)
        if not ok or v > np.uint64(2147483647):
            return i, F_MEM_WIDTH, 0, 0, 0
        mw[i] = np.int32(v)
        cur[i] = p
        if v > 0:
            n_addr += k[i]
    return -1, 0, dmax, smax, n_addr


@_jit
def _registers(buf, le, ndst, nsrc, dpos, spos, dst, src):
    """Register codes into the padded matrices (pass 1 validated every token)."""
    for i in range(le.shape[0]):
        p, e = dpos[i], le[i]
        for j in range(ndst[i]):
            a, p = _tok(buf, p, e)
            dst[i, j] = _reg(buf, a, p)
        p = spos[i]
        for j in range(nsrc[i]):
            a, p = _tok(buf, p, e)
            src[i, j] = _reg(buf, a, p)


@_jit
def _addresses(buf, le, k, mask, mw, cur, has_imm, has_values, rows, addr_ptr, addrs, imm, marker, value_ptr):
    """Pass 2: lane addresses (modes 0/1/2), immediate, and the '|' value marker."""
    o = 0
    for i in range(le.shape[0]):
        p, e = cur[i], le[i]
        addr_ptr[i] = o
        if mw[i] > 0:
            ki = k[i]
            a, p = _tok(buf, p, e)
            mode, ok = _uint(buf, a, p, 10, False, MAX_DEC_DIGITS)
            if not ok or mode > np.uint64(2):
                return i, F_MODE
            if mode == 0:  # one hex address per active lane
                for j in range(ki):
                    a, p = _tok(buf, p, e)
                    x, ok = _uint(buf, a, p, 16, True, 16)
                    if not ok:
                        return i, F_ADDR
                    addrs[o + j] = x
            else:
                a, p = _tok(buf, p, e)
                base, ok = _uint(buf, a, p, 16, True, 16)
                if not ok:
                    return i, F_ADDR
                if mode == 1:  # base stride, over contiguous active lanes (reader.STRIDE_SPLIT_LANES)
                    m = np.uint64(mask[i])
                    if ((m + (m & (~m + np.uint64(1)))) & m) != np.uint64(0):
                        return i, F_MODE
                    a, p = _tok(buf, p, e)
                    st, ok = _int(buf, a, p)
                    if not ok:
                        return i, F_ADDR
                    for j in range(ki):
                        addrs[o + j] = base + np.uint64(st * j)
                else:  # base, then a delta per further lane
                    if ki > 0:
                        addrs[o] = base
                    for j in range(1, ki):
                        a, p = _tok(buf, p, e)
                        d, ok = _int(buf, a, p)
                        if not ok:
                            return i, F_ADDR
                        base += np.uint64(d)
                        addrs[o + j] = base
            o += ki
        if has_imm:
            a, p = _tok(buf, p, e)
            x, ok = _imm64(buf, a, p)
            if not ok:
                return i, F_IMM
            imm[i] = x
        a, q = _tok(buf, p, e)
        if q - a == 1 and buf[a] == 124:  # '|'
            if not has_values:
                return i, F_VALUES
            marker[i] = True
            p = q
        cur[i] = p
        value_ptr[i + 1] = value_ptr[i] + (rows[i] * k[i] if marker[i] else 0)
    addr_ptr[le.shape[0]] = o
    return -1, 0


@_jit
def _values(buf, le, k, cur, marker, rows, value_ptr, values):
    """Pass 3: per-lane register values, one row per operand; then no token may remain."""
    for i in range(le.shape[0]):
        p, e = cur[i], le[i]
        ki = k[i]
        if marker[i] and ki > 0:
            o = value_ptr[i]
            for r in range(rows[i]):
                a, p = _tok(buf, p, e)
                c = buf[a] if a < p else 0
                v0, ok = _uint(buf, a + 1, p, 16, False, 8)
                if not ok or not (c == 61 or c == 43 or c == 126 or c == 58):
                    return i, F_VALUES
                v = np.int64(v0)
                values[o] = np.uint32(v)
                if c == 61:  # '=' all lanes equal
                    for j in range(1, ki):
                        values[o + j] = np.uint32(v)
                elif c == 43:  # '+' base stride
                    a, p = _tok(buf, p, e)
                    st, ok = _int(buf, a, p)
                    if not ok:
                        return i, F_VALUES
                    for j in range(1, ki):
                        values[o + j] = np.uint32((v + st * j) & 0xFFFFFFFF)
                elif c == 126:  # '~' base, then a delta per further lane
                    for j in range(1, ki):
                        a, p = _tok(buf, p, e)
                        d, ok = _int(buf, a, p)
                        if not ok:
                            return i, F_VALUES
                        v += d
                        values[o + j] = np.uint32(v & 0xFFFFFFFF)
                else:  # ':' one hex value per lane
                    for j in range(1, ki):
                        a, p = _tok(buf, p, e)
                        x, ok = _uint(buf, a, p, 16, False, 8)
                        if not ok:
                            return i, F_VALUES
                        values[o + j] = np.uint32(x)
                o += ki
        a, q = _tok(buf, p, e)
        if a != q:
            return i, F_LINE
    return -1, 0


def parse_lines(buf, ls, le, prefix, has_line_num, has_imm, has_values):
    """Parse instruction lines ``[ls, le)`` into columns, as ``reader._parse_lines`` does.

    Three compiled passes over each line, each resuming where the previous
    stopped: fixed fields (which size the register matrices and the address
    array), then addresses and immediate (which size the value array), then
    register values. Returns ``(err_i, err_field, columns)``: on the first bad
    line ``err_i`` is its position in ``ls`` and ``columns`` is None, so that the
    caller can re-read that line with the numpy parser to word the error.
    """
    M = ls.shape[0]
    z = lambda dt: np.zeros(M, dt)  # noqa: E731
    pre = np.zeros((M, prefix), np.int64)
    line_num, pc, mask, mw = z(np.int32), z(np.int64), z(np.uint32), z(np.int32)
    k, ndst, nsrc, dpos, spos, op_s, op_e, cur = (z(np.int64) for _ in range(8))
    err_i, err_f, dmax, smax, n_addr = _fixed_fields(buf, ls, le, prefix, has_line_num, pre, line_num, pc,
                                                     mask, k, ndst, nsrc, dpos, spos, op_s, op_e, mw, cur)
    if err_i >= 0:
        return err_i, err_f, None
    dst = np.full((M, dmax), -1, np.int16)
    src = np.full((M, smax), -1, np.int16)
    _registers(buf, le, ndst, nsrc, dpos, spos, dst, src)
    rows = ndst + nsrc
    addr_ptr = np.zeros(M + 1, np.int64)
    addrs = np.zeros(n_addr, np.uint64)
    imm = z(np.int64)
    marker = z(np.bool_)
    value_ptr = np.zeros(M + 1, np.int64)
    err_i, err_f = _addresses(buf, le, k, mask, mw, cur, has_imm, has_values, rows, addr_ptr, addrs, imm, marker,
                              value_ptr)
    if err_i >= 0:
        return err_i, err_f, None
    values = np.zeros(value_ptr[M], np.uint32)
    err_i, err_f = _values(buf, le, k, cur, marker, rows, value_ptr, values)
    if err_i >= 0:
        return err_i, err_f, None
    cols = {"pc": pc, "mask": mask, "dst": dst, "opcode_start": op_s, "opcode_end": op_e, "src": src,
            "mem_width": mw, "addr_ptr": addr_ptr, "addrs": addrs}
    if prefix:
        cols["prefix"] = pre
    if has_line_num:
        cols["line_num"] = line_num
    if has_imm:
        cols["imm"] = imm
    if has_values:
        cols["value_ptr"], cols["values"] = value_ptr, values
    return -1, 0, cols


# ----------------------------------------------------------------------------- gathers

@_jit
def first_occurrence(keys):
    """``(reps, group)``: first index of each distinct key, ascending, and each row's group.

    An open-addressing table, so the cost is one probe per row instead of the
    sort ``np.unique`` needs.
    """
    n = keys.shape[0]
    size = 1
    while size < 2 * n:
        size *= 2
    mask = np.uint64(size - 1)
    slot_key = np.zeros(size, np.uint64)
    slot_grp = np.full(size, -1, np.int64)
    group = np.empty(n, np.int64)
    reps = np.empty(n, np.int64)
    g = 0
    for i in range(n):
        k = keys[i]
        s = (k * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
        s &= mask
        while True:
            if slot_grp[s] < 0:
                slot_key[s] = k
                slot_grp[s] = g
                reps[g] = i
                group[i] = g
                g += 1
                break
            if slot_key[s] == k:
                group[i] = slot_grp[s]
                break
            s = (s + np.uint64(1)) & mask
    return reps[:g].copy(), group


@_jit
def ragged_take(ptr, data, idx):
    """Rows ``idx`` of the CSR array (``ptr``, ``data``), as ``_text.ragged_take``."""
    m = idx.shape[0]
    new_ptr = np.zeros(m + 1, np.int64)
    for i in range(m):
        r = idx[i]
        new_ptr[i + 1] = new_ptr[i] + ptr[r + 1] - ptr[r]
    out = np.empty(new_ptr[m], data.dtype)
    for i in range(m):
        r = idx[i]
        o = new_ptr[i]
        for j in range(ptr[r], ptr[r + 1]):
            out[o] = data[j]
            o += 1
    return new_ptr, out


# ----------------------------------------------------------------------------- writer
# Twins of ``_fmt``'s token builders and line assembly and of the writer's value-row
# encoding. They return exactly the numpy versions' arrays (the tests compare them),
# including the digit columns left of a token that no line ever shows.

_HEXB = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


@_jit
def _hex_digits(x):
    """Hex digits of uint64 ``x`` without leading zeros (1 for 0)."""
    nd = 1
    x >>= np.uint64(4)
    while x != 0:
        nd += 1
        x >>= np.uint64(4)
    return nd


@_jit
def _dec_digits(m):
    """Decimal digits of uint64 ``m`` (1 for 0)."""
    nd = 1
    m //= np.uint64(10)
    while m != 0:
        nd += 1
        m //= np.uint64(10)
    return nd


@_jit
def hex_tokens(v, min_width, prefix):
    """``_fmt.hex_tokens``: right-aligned lower-case hex of uint64 ``v``."""
    n = v.shape[0]
    P = prefix.shape[0]
    W = 16 + P
    M = np.zeros((n, W), np.uint8)
    L = np.zeros(n, np.int64)
    if n == 0:
        return M, L
    top = np.uint64(0)
    for i in range(n):
        if v[i] > top:
            top = v[i]
    cols = max(_hex_digits(top), min_width)
    for i in range(n):
        x = v[i]
        nd = min_width
        for j in range(cols):
            nib = x & np.uint64(15)
            M[i, W - 1 - j] = _HEXB[nib]
            if nib != 0 and j + 1 > nd:
                nd = j + 1
            x >>= np.uint64(4)
        for k in range(P):
            M[i, W - nd - P + k] = prefix[k]
        L[i] = nd + P
    return M, L


@_jit
def dec_tokens(v, prefix):
    """``_fmt.dec_tokens``: right-aligned signed decimal of int64 ``v``."""
    n = v.shape[0]
    P = prefix.shape[0]
    W = 20 + P
    M = np.zeros((n, W), np.uint8)
    L = np.zeros(n, np.int64)
    if n == 0:
        return M, L
    mag = np.empty(n, np.uint64)
    cols = 1
    for i in range(n):
        x = v[i]
        m = np.uint64(-(x + 1)) + np.uint64(1) if x < 0 else np.uint64(x)  # |int64 min| fits
        mag[i] = m
        d = _dec_digits(m)
        if d > cols:
            cols = d
    for i in range(n):
        m = mag[i]
        nd = 1
        for j in range(cols):
            M[i, W - 1 - j] = np.uint8(m % np.uint64(10)) + np.uint8(48)
            m //= np.uint64(10)
            if m != 0:
                nd = j + 2
        ln = nd + (1 if v[i] < 0 else 0)
        if v[i] < 0:
            M[i, W - ln] = 45
        for k in range(P):
            M[i, W - ln - P + k] = prefix[k]
        L[i] = ln + P
    return M, L


@_jit
def place_tokens(out, cursor, lines, mat, length):
    """Copy each token's right-aligned bytes to its line's cursor, then step past a space."""
    W = mat.shape[1]
    for i in range(lines.shape[0]):
        ln = lines[i]
        d = cursor[ln]
        n = length[i]
        for c in range(n):
            out[d + c] = mat[i, W - n + c]
        cursor[ln] = d + n + 1


@_jit
def value_rows(v, k_rows):
    """The writer's ``_value_rows``: per row of lane values, '=' (all equal), '+' (constant
    32-bit stride), '~' (deltas, when shorter than the hex list) or ':' (hex list)."""
    nrow = k_rows.shape[0]
    enc = np.full(nrow, 58, np.uint8)
    stride = np.zeros(nrow, np.int64)
    s = 0
    for r in range(nrow):
        k = k_rows[r]
        first = np.int64(0)
        const = True
        hl = 0
        dl = 0
        for j in range(1, k):
            d = ((np.int64(v[s + j]) - np.int64(v[s + j - 1]) + 2**31) & 0xFFFFFFFF) - 2**31
            if j == 1:
                first = d
            elif d != first:
                const = False
            hl += _hex_digits(np.uint64(v[s + j]))
            dl += _dec_digits(np.uint64(-d if d < 0 else d)) + (1 if d < 0 else 0)
        if const:
            enc[r] = 61 if first == 0 else 43
            stride[r] = first
        elif dl < hl:
            enc[r] = 126
        s += k
    return enc, stride


def warm_up() -> None:
    """Run every kernel once on a read-only buffer, the kind ``read_kernel`` passes.

    Raises if a kernel misparses the two known lines (grouped, and raw with line_num).
    """
    inst = (b"0010 ffffffff 1 R4 LDG.E 2 R2 UR3 4 2 0x7f0000001000" + b" 4" * 31 + b" 0 | =1 +2 -1 ~3"
            + b" 1" * 31)
    buf = np.frombuffer(inst + b"\n1 0 0 3 7 " + inst + b"\n" * 9, dtype=np.uint8)
    ls, le = line_spans(buf)
    for row, prefix, line_num in ((0, 0, False), (1, 4, True)):
        err, _, cols = parse_lines(buf, ls[row:row + 1], le[row:row + 1], prefix, line_num, True, True)
        if err >= 0 or cols["addrs"][-1] != 0x7f0000001000 + 31 * 4 or cols["values"][-1] != 3 + 31:
            raise RuntimeError("compiled trace parser misread its warm-up line")
    reps, group = first_occurrence(span_hash(buf, ls, le))
    one = np.zeros(1, np.int64)
    ragged_take(np.array([0, 1], np.int64), np.zeros(1, np.uint64), one)
    ragged_take(np.array([0, 1], np.int64), np.zeros(1, np.uint32), one)
    ts, te = tokenize(buf)
    parse_uint(buf, ts, te, 16, True, 16)
    parse_int(buf, ts, te)
    _warm_up_writer()


def _warm_up_writer() -> None:
    """Compile the writer's kernels and check one known line of each."""
    M, L = hex_tokens(np.array([0x1f, 0], np.uint64), 4, np.frombuffer(b"0x", np.uint8))
    D, DL = dec_tokens(np.array([-12, 7], np.int64), np.zeros(0, np.uint8))
    out = np.full(32, 32, np.uint8)
    cur = np.zeros(1, np.int64)
    place_tokens(out, cur, np.zeros(2, np.int64), M, L)
    place_tokens(out, cur, np.zeros(2, np.int64), D, DL)
    enc, st = value_rows(np.array([5, 5, 1, 3, 5, 9, 8, 100], np.uint32), np.array([2, 3, 3], np.int64))
    if (bytes(out[:int(cur[0])]) != b"0x001f 0x0000 -12 7 " or bytes(enc) != b"=+:"
            or st.tolist() != [0, 2, 0]):
        raise RuntimeError("compiled trace writer misformatted its warm-up tokens")
