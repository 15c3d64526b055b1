"""Vectorised text assembly for the trace writer.

Every token is a right-aligned row of a ``uint8`` matrix plus a length; the
tokens of one instruction line come from several "groups" (one per field,
ragged fields such as address deltas give several tokens per line). Byte
positions are computed with cumulative sums, so a whole kernel is formatted
with a few dozen numpy passes instead of one Python f-string per token.

When numba is there (``_text.compiled()``), the token builders and the byte
placement run as compiled loops in ``_jit`` instead: the numpy versions spend
most of their time in whole-matrix temporaries. The ``*_numpy`` bodies stay the
fallback and the reference the tests hold the compiled loops to.
"""

from __future__ import annotations

import numpy as np

from gclsampler.trace._text import compiled

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def hex_tokens(v: np.ndarray, min_width: int = 1, prefix: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """Lower-case hex of uint64 values, at least ``min_width`` digits, with an optional prefix."""
    if not 1 <= min_width <= 16:  # the token matrix holds 16 digits; the compiled loop does not bounds-check
        raise ValueError(f"hex_tokens: min_width must be 1..16, got {min_width}")
    v = np.ascontiguousarray(v, dtype=np.uint64)
    jit = compiled()
    if jit is not None:
        return jit.hex_tokens(v, int(min_width), np.frombuffer(prefix, dtype=np.uint8))
    return hex_tokens_numpy(v, min_width, prefix)


def hex_tokens_numpy(v: np.ndarray, min_width: int = 1, prefix: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    v = np.ascontiguousarray(v, dtype=np.uint64)
    n = v.shape[0]
    P = len(prefix)
    W = 16 + P
    M = np.zeros((n, W), dtype=np.uint8)
    if n == 0:
        return M, np.zeros(0, dtype=np.int64)
    nd = np.full(n, min_width, dtype=np.int64)
    top = int(v.max())
    for j in range(max(min_width, (top.bit_length() + 3) // 4)):
        nib = ((v >> np.uint64(4 * j)) & np.uint64(15)).astype(np.uint8)
        M[:, W - 1 - j] = _HEX[nib]
        nd = np.where(nib != 0, np.maximum(nd, j + 1), nd)
    rows = np.arange(n)
    for k, ch in enumerate(prefix):
        M[rows, W - nd - P + k] = ch
    return M, nd + P


def dec_tokens(v: np.ndarray, prefix: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """Signed decimal of int64 values (with optional prefix characters)."""
    v = np.ascontiguousarray(v, dtype=np.int64)
    jit = compiled()
    if jit is not None:
        return jit.dec_tokens(v, np.frombuffer(prefix, dtype=np.uint8))
    return dec_tokens_numpy(v, prefix)


def dec_tokens_numpy(v: np.ndarray, prefix: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(v, dtype=np.int64)
    n = v.shape[0]
    P = len(prefix)
    W = 20 + P
    M = np.zeros((n, W), dtype=np.uint8)
    if n == 0:
        return M, np.zeros(0, dtype=np.int64)
    neg = v < 0
    m = np.where(neg, (~v.view(np.uint64)) + np.uint64(1), v.view(np.uint64))
    nd = np.ones(n, dtype=np.int64)
    ten = np.uint64(10)
    j = 0
    while True:
        M[:, W - 1 - j] = (m % ten).astype(np.uint8) + 48
        m = m // ten
        nz = m != 0
        if not nz.any():
            break
        j += 1
        nd[nz] = j + 1
    ln = nd + neg
    rows = np.arange(n)
    M[rows[neg], W - ln[neg]] = ord("-")
    for k, ch in enumerate(prefix):
        M[rows, W - ln - P + k] = ch
    return M, ln + P


def table_tokens(names: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Right-aligned matrix of fixed strings (opcode names, register names)."""
    W = max([len(s) for s in names] + [1])
    M = np.zeros((len(names), W), dtype=np.uint8)
    for i, s in enumerate(names):
        if s:
            M[i, W - len(s):] = np.frombuffer(s, dtype=np.uint8)
    return M, np.array([len(s) for s in names], dtype=np.int64)


class LineAssembler:
    """Collects token groups in line order and renders ``n_lines`` lines of text."""

    def __init__(self, n_lines: int):
        self.n = n_lines
        self.groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, lines: np.ndarray, mat: np.ndarray, length: np.ndarray) -> None:
        """Tokens for ``lines`` (ascending; repeated line ids = several tokens, in order)."""
        if lines.shape[0]:
            lines = np.asarray(lines, dtype=np.int64)
            length = np.asarray(length, dtype=np.int64)
            # the compiled placement writes where these point without bounds checks
            if (lines.shape != length.shape or lines.shape[0] != mat.shape[0] or lines[0] < 0 or lines[-1] >= self.n
                    or (lines.shape[0] > 1 and (np.diff(lines) < 0).any())
                    or length.min() < 0 or length.max() > mat.shape[1]):
                raise ValueError("LineAssembler.add: lines must ascend within the assembler, one per token, "
                                 "and each length fit its token row")
            self.groups.append((lines, mat, length))

    def render(self) -> tuple[bytes, np.ndarray]:
        """All lines joined with '\\n' (each line ends with one) and the (n+1) line offsets."""
        n = self.n
        line_len = np.zeros(n, dtype=np.int64)
        for ln, _, length in self.groups:
            line_len += np.bincount(ln, weights=length + 1, minlength=n).astype(np.int64)
        line_len = np.maximum(line_len, 1)  # an empty line still has its '\n'
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(line_len, out=starts[1:])
        out = np.full(int(starts[-1]), 32, dtype=np.uint8)
        cursor = starts[:-1].copy()
        jit = compiled()
        for ln, mat, length in self.groups:
            if jit is not None:
                jit.place_tokens(out, cursor, ln, np.ascontiguousarray(mat), length)
                continue
            step = length + 1
            cs = np.cumsum(step)
            seg_start = np.r_[True, ln[1:] != ln[:-1]]
            base = np.maximum.accumulate(np.where(seg_start, cs - step, 0))
            within = cs - step - base
            dest = cursor[ln] + within
            W = int(length.max())
            mat = mat[:, mat.shape[1] - W:]
            cols = np.arange(W)
            skip = W - length
            keep = cols[None, :] >= skip[:, None]
            pos = dest[:, None] + (cols[None, :] - skip[:, None])
            out[pos[keep]] = mat[keep]
            cursor += np.bincount(ln, weights=step, minlength=n).astype(np.int64)
        if n:
            out[starts[1:] - 1] = 10
        return out.tobytes(), starts
