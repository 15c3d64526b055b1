"""Vectorised number parsing on a byte buffer split into whitespace tokens.

A trace body is tens of millions of short tokens. Python's ``int(tok, 16)``
per token would cost ~100 ns each plus a Python object, so instead the body is
one ``uint8`` array, tokens are ``(start, end)`` offset arrays, and each column
of the instruction grammar is parsed for all lines at once by walking the
digit positions (at most 16-20 iterations of whole-array operations).

Each public function dispatches to its compiled twin in ``_jit`` when numba is
available (~3.5x faster end to end); the numpy bodies (``*_numpy``) remain the
fallback and the reference the tests compare the compiled loops against.
"""

from __future__ import annotations

import os

import numpy as np

from gclsampler._interrupt import interrupt_for, interrupts_recorded

_JIT_STATE: list = []


def compiled():
    """The numba kernels (``_jit``) or None: numba missing, or ``GCLSAMPLER_NO_JIT=1``.

    Imported on first use, not at import time, so commands that never parse a
    trace body do not pay numba's ~0.7 s import.
    """
    if not _JIT_STATE:
        mod = None
        if os.environ.get("GCLSAMPLER_NO_JIT", "") not in ("1", "true", "yes"):
            try:
                from gclsampler.trace import _jit as mod
            except ImportError:  # numba absent: the numpy versions below still work
                mod = None
            else:
                mod = _warm_up(mod)
        _JIT_STATE.append(mod)
    return _JIT_STATE[0]


def _warm_up(mod):
    """Compile (or load from numba's disk cache) every kernel now, on a tiny trace.

    Doing it here, once, means a numba that cannot compile them (a version that
    does not match numpy, an unsupported platform) degrades to the numpy parser
    with a warning instead of failing in the middle of a workload.
    """
    import logging
    import time
    import warnings

    t0 = time.perf_counter()
    failed = None
    with interrupts_recorded() as hit:
        try:
            mod.warm_up()
        except Exception as exc:  # numba raises many error types; any of them means "do not use it"
            failed = exc
    if hit:  # Ctrl-C (or SIGTERM) during the compile: llvmlite's ctypes callbacks swallow it, or it became the error
        raise interrupt_for(hit[-1])
    if failed is not None:
        warnings.warn(f"gclsampler: compiled trace parser unavailable ({type(failed).__name__}: {failed}); "
                      "using the numpy parser (about 3.5x slower)", RuntimeWarning, stacklevel=3)
        return None
    dt = time.perf_counter() - t0
    if dt > 3.0:
        logging.getLogger("gclsampler.trace").info(
            "compiled the trace parser in %.0f s (numba caches it on disk for later runs)", dt)
    return mod


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


MAX_DEC_DIGITS = 19
"""Longest decimal token read: every 19-digit number fits in uint64, so none wraps silently
(20 digits let ``18446744073709551617`` read as 1)."""

# digit value of each byte for bases up to 16; 255 = not a digit (this and MAX_DEC_DIGITS are
# repeated in _jit.py, which checks they agree: numba's disk cache sees only that file's edits)
_DIGIT = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789"):
    _DIGIT[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _DIGIT[_c] = 10 + _i
for _i, _c in enumerate(b"ABCDEF"):
    _DIGIT[_c] = 10 + _i


def scan(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Token starts/ends and, per line, index of its first token and its token count.

    Lines end at ``\\n`` (and at the end of a buffer without a final newline). Only the
    token-level numpy parser needs this (the fallback, and wording an error the compiled
    parser found), so it has no compiled twin.
    """
    ts, te = tokenize(buf)
    nl = np.flatnonzero(buf == 10)
    if buf.size and buf[-1] != 10:
        nl = np.append(nl, buf.size)
    tok_end = np.searchsorted(ts, nl)  # tokens starting before each newline
    tok0 = np.zeros(nl.shape[0], dtype=np.int64)
    tok0[1:] = tok_end[:-1]
    return ts, te, tok0, (tok_end - tok0).astype(np.int64)


def line_spans(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per line, the span from its first to one past its last non-whitespace byte (empty if blank)."""
    jit = compiled()
    if jit is not None:
        return jit.line_spans(buf)
    ts, te, tok0, ntok = scan(buf)
    nl = np.flatnonzero(buf == 10)
    blank_at = nl if nl.shape[0] == tok0.shape[0] else np.append(nl, buf.size)
    has = ntok > 0
    last = np.maximum(tok0 + ntok - 1, 0)
    ls = np.where(has, ts[np.minimum(tok0, max(ts.size - 1, 0))] if ts.size else 0, blank_at)
    le = np.where(has, te[last] if te.size else 0, blank_at)
    return ls.astype(np.int64), le.astype(np.int64)


def tokenize(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start/end offsets of whitespace-separated tokens (bytes <= 0x20 are whitespace)."""
    if buf.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    w = np.zeros(buf.size + 2, dtype=np.int8)
    np.greater(buf, 32, out=w[1:-1].view(bool))
    edges = np.flatnonzero(w[1:] != w[:-1])  # alternating start, end (positions in buf)
    return edges[0::2], edges[1::2]


def _by_length(start: np.ndarray, length: np.ndarray, max_len: int | None = None):
    """Sort spans by length, longest first, so that digit position j touches only a prefix.

    Returns (order, sorted starts, counts) where counts[j] = number of spans longer than j.
    Work of a digit loop is then proportional to the characters, not n * max length.
    ``max_len`` caps the positions visited (a number longer than its widest legal form
    only needs to be seen as too long); hashing and comparing spans pass none, so that
    every byte of a long line or opcode counts, as in the compiled versions.
    """
    ln = np.asarray(length, dtype=np.int64)
    if max_len is not None:
        ln = np.minimum(ln, max_len + 1)
    order = np.argsort(-ln, kind="stable")
    sl = ln[order]
    maxl = int(sl[0]) if sl.size else 0
    # counts[j] = #spans with length > j; lengths are sorted descending
    counts = np.searchsorted(-sl, -np.arange(maxl, dtype=np.int64), side="left")
    return order, start[order], counts


def parse_uint(buf: np.ndarray, start: np.ndarray, end: np.ndarray, base: int,
               allow_0x: bool = False, max_digits: int | None = None,
               digits: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned integers in ``base`` (10 or 16) of the spans ``[start, end)``; see ``parse_uint_numpy``."""
    jit = compiled()
    if jit is None or digits is not None:
        return parse_uint_numpy(buf, start, end, base, allow_0x, max_digits, digits)
    if max_digits is None:
        max_digits = 16 if base == 16 else MAX_DEC_DIGITS
    return jit.parse_uint(buf, _i64(start), _i64(end), base, bool(allow_0x), max_digits)


def parse_uint_numpy(buf: np.ndarray, start: np.ndarray, end: np.ndarray, base: int,
                     allow_0x: bool = False, max_digits: int | None = None,
                     digits: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned integers in ``base`` (10 or 16) of the spans ``[start, end)``.

    ``digits`` is an optional precomputed ``digit_values(buf)`` (saves one lookup per character).

    Returns ``(values uint64, ok bool)``; ``ok`` is False for empty spans, spans
    with a non-digit, or more digits than fit (16 hex / 19 decimal).
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    n = start.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    if allow_0x:
        s1 = np.minimum(start + 1, buf.size - 1)
        pre = (buf[s1] | 32) == ord("x")
        if pre.any():
            pre &= (end - start >= 3) & (buf[start] == 48)
            start = start + 2 * pre
    length = end - start
    if max_digits is None:
        max_digits = 16 if base == 16 else MAX_DEC_DIGITS
    ok = (length > 0) & (length <= max_digits)
    lmin, lmax = int(length.min()), int(length.max())
    if lmin == lmax:  # fixed width column (masks, PCs)
        order, s, counts = None, start, np.full(min(lmax, max_digits), n)
    elif lmax <= 4:  # short tokens (register numbers): masked loop, no sort
        dig = _DIGIT if digits is None else digits
        val = np.zeros(n, dtype=np.uint64)
        b = np.uint64(base)
        last = buf.size - 1
        for j in range(lmax):
            act = length > j
            p = np.minimum(start + j, last)
            d = _DIGIT[buf[p]] if digits is None else dig[p]
            d = np.where(act, d, 0)
            if int(d.max(initial=0)) >= base:
                ok &= d < base
                d = np.where(d < base, d, 0)
            val = np.where(act, val * b + d, val)
        return val, ok
    else:
        order, s, counts = _by_length(start, length, max_digits)
    val = np.zeros(n, dtype=np.uint64)
    b = np.uint64(base)
    dig = _DIGIT if digits is None else None
    pos = s.copy()
    for j in range(min(len(counts), max_digits)):
        c = int(counts[j])
        p = pos[:c]
        d = dig[buf[p]] if digits is None else digits[p]
        if int(d.max(initial=0)) >= base:
            bad = np.zeros(n, dtype=bool)
            bad[:c] = d >= base
            ok &= ~(bad if order is None else _unsort(bad, order))
            d = np.where(d >= base, 0, d).astype(np.uint8)
        v = val[:c]
        v *= b
        v += d
        p += 1
    if order is not None:
        val = _unsort(val, order)
    return val, ok


def _unsort(sorted_vals: np.ndarray, order: np.ndarray) -> np.ndarray:
    out = np.empty_like(sorted_vals)
    out[order] = sorted_vals
    return out


def digit_values(buf: np.ndarray) -> np.ndarray:
    """Digit value (0-15, 255 = not a hex digit) of every byte of the buffer."""
    return _DIGIT[buf]


def parse_int(buf: np.ndarray, start: np.ndarray, end: np.ndarray,
              digits: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Signed decimal integers (optional leading ``-``, at most 19 digits) as int64."""
    jit = compiled()
    if jit is None or digits is not None:
        return parse_int_numpy(buf, start, end, digits)
    return jit.parse_int(buf, _i64(start), _i64(end))


def parse_int_numpy(buf: np.ndarray, start: np.ndarray, end: np.ndarray,
                    digits: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    start = np.asarray(start, dtype=np.int64)
    if start.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    neg = buf[start] == ord("-")
    mag, ok = parse_uint_numpy(buf, start + neg, end, 10, max_digits=19, digits=digits)
    ok &= mag <= np.where(neg, np.uint64(2**63), np.uint64(2**63 - 1))  # -2^63 is an int64 too
    v = mag.astype(np.int64)  # 2^63 wraps to -2^63, which negation leaves as it is
    return np.where(neg, -v, v), ok


def span_hash(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """64-bit hash of each span (bytes and length), to intern opcodes and find repeated lines.

    Only equality of hashes matters (which spans are the same text); the compiled
    and numpy versions use different hash functions. With n distinct spans two
    collide with probability ~n^2/2^65 (~1e-6 for four million distinct lines).
    """
    jit = compiled()
    if jit is not None:
        return jit.span_hash(buf, _i64(start), _i64(end))
    return span_hash_numpy(buf, start, end)


def span_hash_numpy(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    n = start.shape[0]
    length = end - start
    order, s, counts = _by_length(start, length)
    h = np.full(n, 1469598103934665603, dtype=np.uint64) ^ length[order].astype(np.uint64)
    prime = np.uint64(1099511628211)
    for j in range(len(counts)):
        c = int(counts[j])
        v = h[:c]
        v ^= buf[s[:c] + j]
        v *= prime
    return _unsort(h, order)


def spans_equal(buf: np.ndarray, s1, e1, s2, e2) -> np.ndarray:
    """Elementwise byte equality of two span sets."""
    l1 = e1 - s1
    eq = l1 == (e2 - s2)
    order, a, counts = _by_length(s1, l1)
    b = s2[order]
    eqs = eq[order]
    for j in range(len(counts)):
        c = int(counts[j])
        eqs[:c] &= buf[a[:c] + j] == buf[np.minimum(b[:c] + j, buf.size - 1)]
    return _unsort(eqs, order)


def lanes_contiguous(mask: np.ndarray) -> np.ndarray:
    """Per 32-bit active mask: are its set lanes one contiguous run (0 counts as one)? Accel-Sim
    expands a base+stride line over the first run of active lanes only, so the writer may use
    that mode, and the reader may take it, only where this holds."""
    m = np.asarray(mask).astype(np.uint64)
    return ((m + (m & (~m + np.uint64(1)))) & m) == 0


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(c) for c in counts])`` without the Python loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ptr = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(ptr, counts)


def first_occurrence(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, group)``: the first index of each distinct key in ascending order, and for
    every row the position of its key's first index in ``reps``."""
    jit = compiled()
    if jit is not None:
        return jit.first_occurrence(np.ascontiguousarray(keys, dtype=np.uint64))
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order].astype(np.int64), rank[inv.reshape(-1)].astype(np.int64)


def ragged_take(ptr: np.ndarray, data: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reorder a CSR ragged array (``ptr``, ``data``) by row indices ``idx``."""
    jit = compiled()
    if jit is not None:
        return jit.ragged_take(_i64(ptr), data, _i64(idx))
    counts = (ptr[1:] - ptr[:-1])[idx]
    new_ptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    gather = np.repeat(ptr[:-1][idx], counts) + ragged_arange(counts)
    return new_ptr, data[gather]


def ragged_rows(ptr: np.ndarray, data: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``[a, b)`` of a CSR ragged array: a rebased pointer and a view of their data (a
    contiguous range needs no gather, unlike ``ragged_take``)."""
    lo, hi = int(ptr[a]), int(ptr[b])
    return ptr[a:b + 1] - lo, data[lo:hi]


def popcount32(mask: np.ndarray) -> np.ndarray:
    m = np.ascontiguousarray(mask, dtype=np.uint32)
    return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).astype(np.int64)


def lane_ids(mask: np.ndarray) -> np.ndarray:
    """Lane numbers of active lanes, lanes ascending, concatenated over instructions."""
    m = np.ascontiguousarray(mask, dtype=np.uint32)
    bits = ((m[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & 1).astype(bool)
    return np.nonzero(bits)[1].astype(np.int64)




def line_hashes(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Hash of each line span; repeated lines (same bytes) get the same value. See ``span_hash``."""
    jit = compiled()
    if jit is not None:
        return jit.span_hash(buf, _i64(start), _i64(end))
    return line_hashes_numpy(buf, start, end)


def line_hashes_numpy(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """64-bit hash of each span (bytes and length), reading 8 bytes per step.

    ``buf`` must have at least 8 readable bytes after the last span. Used to find
    repeated instruction lines (the same PC/mask/registers in many warps) so each
    distinct line is parsed once, like the LUT of Accel-Sim's post-processing.
    With n distinct lines two of them collide with probability ~n^2/2^65
    (~1e-6 for four million distinct lines in one kernel).
    """
    n = start.shape[0]
    length = end - start
    words = np.ndarray(shape=(buf.size - 7,), dtype="<u8", buffer=buf, offset=0, strides=(1,))
    nw = ((length + 7) // 8).astype(np.int64)
    order = np.argsort(-nw, kind="stable")
    s = start[order]
    ln = length[order]
    snw = nw[order]
    maxw = int(snw[0]) if n else 0
    # counts[j] = lines with more than j words (descending sort => prefix)
    counts = np.searchsorted(-snw, -np.arange(maxw + 1, dtype=np.int64), side="left")
    h = np.full(n, 0x9E3779B97F4A7C15, dtype=np.uint64) ^ ln.astype(np.uint64)
    p1 = np.uint64(0xFF51AFD7ED558CCD)
    s29 = np.uint64(29)
    for j in range(maxw):
        c, full = int(counts[j]), int(counts[j + 1])
        w = words[s[:c] + 8 * j]
        if full < c:  # last, partial word of the lines that end in this step
            rem = (ln[full:c] - 8 * j).astype(np.uint64)
            keep = np.where(rem >= 8, np.uint64(0xFFFFFFFFFFFFFFFF),
                            (np.uint64(1) << (np.minimum(rem, np.uint64(7)) * np.uint64(8))) - np.uint64(1))
            w[full:c] &= keep
        a = h[:c]
        a ^= w
        a *= p1
        a ^= a >> s29
    return _unsort(h, order)
