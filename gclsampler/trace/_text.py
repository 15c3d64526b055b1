"""Vectorised number parsing on a byte buffer split into whitespace tokens.

A trace body is tens of millions of short tokens. Python's ``int(tok, 16)``
per token would cost ~100 ns each plus a Python object, so instead the body is
one ``uint8`` array, tokens are ``(start, end)`` offset arrays, and each column
of the instruction grammar is parsed for all lines at once by walking the
digit positions (at most 16-20 iterations of whole-array operations).
"""

from __future__ import annotations

import numpy as np

# digit value of each byte for bases up to 16; 255 = not a digit
_DIGIT = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789"):
    _DIGIT[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _DIGIT[_c] = 10 + _i
for _i, _c in enumerate(b"ABCDEF"):
    _DIGIT[_c] = 10 + _i


def tokenize(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start/end offsets of whitespace-separated tokens (bytes <= 0x20 are whitespace)."""
    if buf.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    ws = buf <= 32
    nws = ~ws
    edge = np.empty(buf.size + 1, dtype=bool)
    edge[0] = False
    edge[-1] = False
    # starts: non-ws preceded by ws (or buffer start)
    prev_ws = np.empty(buf.size, dtype=bool)
    prev_ws[0] = True
    prev_ws[1:] = ws[:-1]
    starts = np.flatnonzero(nws & prev_ws)
    next_ws = np.empty(buf.size, dtype=bool)
    next_ws[-1] = True
    next_ws[:-1] = ws[1:]
    ends = np.flatnonzero(nws & next_ws) + 1
    return starts.astype(np.int64), ends.astype(np.int64)


def parse_uint(buf: np.ndarray, start: np.ndarray, end: np.ndarray, base: int,
               allow_0x: bool = False, max_digits: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned integers in ``base`` (10 or 16) of the spans ``[start, end)``.

    Returns ``(values uint64, ok bool)``; ``ok`` is False for empty spans, spans
    with a non-digit, or more digits than fit (16 hex / 20 decimal).
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    n = start.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    if allow_0x:
        pre = (end - start >= 3) & (buf[np.minimum(start, buf.size - 1)] == 48) & (
            (buf[np.minimum(start + 1, buf.size - 1)] | 32) == ord("x"))
        start = start + 2 * pre
    length = end - start
    if max_digits is None:
        max_digits = 16 if base == 16 else 20
    ok = (length > 0) & (length <= max_digits)
    val = np.zeros(n, dtype=np.uint64)
    maxlen = int(min(length.max(initial=0), max_digits))
    last = buf.size - 1
    b = np.uint64(base)
    for j in range(maxlen):
        act = length > j
        d = _DIGIT[buf[np.minimum(start + j, last)]]
        ok &= ~act | (d < base)
        val = np.where(act, val * b + d.astype(np.uint64), val)
    return val, ok


def parse_int(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed decimal integers (optional leading ``-``) as int64."""
    start = np.asarray(start, dtype=np.int64)
    if start.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    neg = buf[np.minimum(start, buf.size - 1)] == ord("-")
    mag, ok = parse_uint(buf, start + neg, end, 10, max_digits=19)
    v = mag.astype(np.int64)
    return np.where(neg, -v, v), ok


def span_hash(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """64-bit FNV-style hash of each span, used to intern opcode strings without Python objects."""
    n = start.shape[0]
    length = end - start
    h = np.full(n, 1469598103934665603, dtype=np.uint64) ^ length.astype(np.uint64)
    prime = np.uint64(1099511628211)
    last = buf.size - 1
    for j in range(int(length.max(initial=0))):
        act = length > j
        c = buf[np.minimum(start + j, last)].astype(np.uint64)
        h = np.where(act, (h ^ c) * prime, h)
    return h


def spans_equal(buf: np.ndarray, s1, e1, s2, e2) -> np.ndarray:
    """Elementwise byte equality of two span sets."""
    l1 = e1 - s1
    eq = l1 == (e2 - s2)
    last = buf.size - 1
    for j in range(int(l1.max(initial=0))):
        act = l1 > j
        eq &= ~act | (buf[np.minimum(s1 + j, last)] == buf[np.minimum(s2 + j, last)])
    return eq


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(c) for c in counts])`` without the Python loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ptr = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(ptr, counts)


def ragged_take(ptr: np.ndarray, data: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reorder a CSR ragged array (``ptr``, ``data``) by row indices ``idx``."""
    counts = (ptr[1:] - ptr[:-1])[idx]
    new_ptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    gather = np.repeat(ptr[:-1][idx], counts) + ragged_arange(counts)
    return new_ptr, data[gather]


def popcount32(mask: np.ndarray) -> np.ndarray:
    m = np.ascontiguousarray(mask, dtype=np.uint32)
    return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).astype(np.int64)


def lane_ids(mask: np.ndarray) -> np.ndarray:
    """Lane numbers of active lanes, lanes ascending, concatenated over instructions."""
    m = np.ascontiguousarray(mask, dtype=np.uint32)
    bits = ((m[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & 1).astype(bool)
    return np.nonzero(bits)[1].astype(np.int64)
