"""Read one Accel-Sim / NVBit kernel trace into a columnar ``KernelTrace``.

Both layouts the NVBit tracer produces are accepted:

- grouped ``kernel-N.traceg`` (after Accel-Sim's post-processing: ``#BEGIN_TB``,
  ``thread block = x,y,z``, ``warp = w``, ``insts = n`` sections), and
- raw ``kernel-N.trace`` (one line per dynamic warp instruction, each prefixed
  with ``cta_x cta_y cta_z warp``, interleaved across warps); raw records are
  grouped by CTA then warp, keeping each warp's temporal order, as the paper's
  (and Accel-Sim's) post-processing does.

The whole decompressed file is held as one ``uint8`` array and parsed column by
column with numpy (see ``_text``); no Python object is created per instruction.
Tracer versions 3-5 differ only in which columns exist: ``line_num`` exists when
``-enable lineinfo = 1``, ``immediate`` when the ``#traces format`` line names it
(v4+), and gclsampler's per-lane register values when it names ``reg_values``.
"""

from __future__ import annotations

import gzip
import io
import logging
import lzma
import os
import re
import zlib
from dataclasses import dataclass

import numpy as np

from gclsampler.errors import GclError, located
from gclsampler.trace import _text as T
from gclsampler.trace.types import NO_REG, KernelHeader, KernelTrace

PARSER_VERSION = 1
"""What ``read_kernel`` makes of a file's bytes: bump it with any change to this module or to
``_text`` that can give another ``KernelTrace`` for the same bytes (a column read otherwise, a
record kept or dropped, a register or opcode spelt otherwise, raw records grouped otherwise).
It is part of the keys of what is derived from parsed traces and cached by the traces' bytes
(the graph cache, photon's BBV tables), so those are built again by the new parser instead
of being reused; a change that only refuses more input or words an error otherwise needs none."""

VALUE_MARKER = b"|"
"""Token that separates the Accel-Sim fields from gclsampler's per-lane register values."""

COMPRESSED_SUFFIXES = (".gz", ".xz", ".zst")

STRIDE_SPLIT_LANES = ("mode 1 (base stride) over active lanes that are not contiguous (mask {mask:08x}): "
                      "Accel-Sim expands a stride over the first run of active lanes only and gives the "
                      "others address 0, so the line means two things; tracers write such lanes in mode 2")
"""Why a stride line with a gap in its mask is refused. Neither NVBit tracer writes one (both check
that the active lanes are contiguous); gclsampler read base + j*stride for every active lane, a
reading Accel-Sim, whose format this is, does not share."""


class TraceFormatError(GclError):
    """A trace file, kernelslist or workload directory that does not follow the trace grammar."""

    def __init__(self, path: object, line: int | None, field: str | None, message: str):
        super().__init__(located(path, line, field, message))
        self.path = str(path)
        self.line = line
        self.field = field


# ----------------------------------------------------------------------------- files

_MAGIC = ((b"\x1f\x8b", "gzip", "gz"), (b"\x28\xb5\x2f\xfd", "zstd", "zst"), (b"\xfd7zXZ\x00", "xz", "xz"))
"""Leading bytes of the compressed formats a trace may be stored in: text never starts so."""


def open_bytes(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """Decompressed content of ``path`` (compression from the suffix).

    ``limit`` stops after roughly that many decompressed bytes (header peeks).
    """
    p = str(path)
    try:
        if p.endswith(".gz"):
            f: io.BufferedIOBase = gzip.open(p, "rb")
        elif p.endswith(".xz"):
            f = lzma.open(p, "rb")
        elif p.endswith(".zst"):
            with open(p, "rb") as raw:
                data = read_zst(raw, limit)
            if data is None:
                raise TraceFormatError(p, None, "compression", "cannot decompress (zst): truncated")
            return data
        else:
            f = open(p, "rb")
            head = f.read(6)
            f.seek(0)
            for magic, kind, suffix in _MAGIC:
                if head.startswith(magic):
                    f.close()
                    raise TraceFormatError(p, None, "compression", f"holds {kind}-compressed data under a name "
                                           f"without .{suffix}: rename it {os.path.basename(p)}.{suffix} (and "
                                           "its line in the list of traces)")
        with f:
            if limit is None:
                return f.read()
            chunks, got = [], 0
            while got < limit:  # stream readers may return short reads before EOF
                c = f.read(limit - got)
                if not c:
                    break
                chunks.append(c)
                got += len(c)
            return b"".join(chunks)
    except FileNotFoundError:
        raise TraceFormatError(p, None, None, "no such file") from None
    except IsADirectoryError:
        raise TraceFormatError(p, None, None, "is a directory, not a trace file") from None
    except PermissionError:
        raise TraceFormatError(p, None, None, "permission denied") from None
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        kind = p.rsplit(".", 1)[-1]
        raise TraceFormatError(p, None, "compression", f"cannot decompress ({kind}): {exc}") from None
    except Exception as exc:
        if is_zstd_error(exc):
            raise TraceFormatError(p, None, "compression", f"cannot decompress (zst): {exc}") from None
        raise


def is_zstd_error(exc: BaseException) -> bool:
    """Whether ``exc`` is zstandard's (``ZstdError`` and friends): its class depends on the
    backend (C or cffi), so it is told by module and name, not caught by one type."""
    return type(exc).__module__.startswith("zstandard") or "Zstd" in type(exc).__name__


def read_zst(f, limit: int | None) -> bytes | None:
    """zstd content of the open file ``f`` (about ``limit`` bytes of it), None if a frame is cut off.

    Not ``stream_reader``: it ends quietly at an incomplete frame, so a truncated copy
    read as a shorter valid trace. A decompression object sets ``eof`` only at a frame's
    end marker; frames written back to back (``cat a.zst b.zst``) are read in turn.
    """
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    d = dctx.decompressobj()
    out, got, open_frame = [], 0, False
    step = 1 << 24 if limit is None else 1 << 16  # header peeks: do not inflate a whole kernel
    while limit is None or got < limit:
        c = f.read(step)
        if not c:
            return b"".join(out) if out and not open_frame else None
        while c:
            o = d.decompress(c)
            out.append(o)
            got += len(o)
            open_frame, c = not d.eof, b""
            if d.eof:
                c, d = d.unused_data, dctx.decompressobj()
    return b"".join(out)


def strip_compression(name: str) -> str:
    for s in COMPRESSED_SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)]
    return name


# ----------------------------------------------------------------------------- header

_KEYS = {
    "kernel name": "name",
    "kernel id": "kernel_id",
    "grid dim": "grid",
    "block dim": "block",
    "shmem": "shmem",
    "nregs": "nregs",
    "binary version": "binary_version",
    "cuda stream id": "cuda_stream_id",
    "shmem base_addr": "shmem_base_addr",
    "local mem base_addr": "local_mem_base_addr",
    "nvbit version": "nvbit_version",
    "accelsim tracer version": "tracer_version",
    "enable lineinfo": "enable_lineinfo",
}
_REQUIRED = ("kernel name", "kernel id", "grid dim", "block dim")
_DIM = re.compile(r"^\(\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\)$", re.ASCII)  # a minus sign: "must be >= 1"
_DEC = re.compile(r"[0-9]+")  # int() would also take '١', '+1', ' 1' and '1_0'
_HEX = re.compile(r"(0[xX])?[0-9a-fA-F]+")
_GRID_MAX = (2**31 - 1, 65535, 65535)
_BLOCK_MAX = (1024, 1024, 64)
_UPPER = {  # what a launch can hold (CUDA's limits on every arch) or the field's C type in Accel-Sim
    "kernel_id": (2**63, "invocation = id - 1 must fit a 64-bit integer"),
    "nregs": (255, "at most 255 registers per thread"),
    "shmem": (2**32 - 1, "a 32-bit byte count"),
    "binary_version": (2**31 - 1, "a 32-bit int"),
    "tracer_version": (2**31 - 1, "a 32-bit int"),
    "cuda_stream_id": (2**64 - 1, "a 64-bit handle"),
    "shmem_base_addr": (2**64 - 1, "a 64-bit address"),
    "local_mem_base_addr": (2**64 - 1, "a 64-bit address"),
}
"""Upper bounds of header numbers. Why: nothing past them came from a launch, and the Accel-Sim
export copied such a value into a header its simulator reads with fixed-width integers."""


@dataclass(frozen=True)
class TraceLayout:
    """Which optional columns the instruction lines carry (from the header)."""

    line_num: bool
    imm: bool
    values: bool
    raw: bool
    format_line: bool = False
    """The header ends with its ``#traces format`` line: complete, so a file of nothing else is a
    launch with no CTA on the traced SM (0 instructions), not a file cut inside its header."""
    ldgsts_once: bool = False
    """The tracer wrote one record per LDGSTS (gcl_tracer: the global address), not Accel-Sim's
    pair of one record per memory reference, so there are no pairs to remove."""


def _at_most(attr: str, v: int) -> int:
    top, why = _UPPER.get(attr, (None, ""))
    if top is not None and v > top:
        raise ValueError(f"above {top:#x} ({why})" if "addr" in attr else f"above {top} ({why})")
    return v


def _header_value(path, lineno, key, text):
    attr = _KEYS[key]
    try:
        if attr == "name":
            if not text:
                raise ValueError("empty")
            return text
        if attr in ("grid", "block"):
            m = _DIM.match(text)
            if not m:
                raise ValueError("expected (x,y,z)")
            dims = tuple(int(v) for v in m.groups())
            if min(dims) < 1:
                raise ValueError("dimensions must be >= 1")
            top = _GRID_MAX if attr == "grid" else _BLOCK_MAX
            if any(d > t for d, t in zip(dims, top)):
                raise ValueError(f"beyond CUDA's {attr} limits {top}")
            if attr == "block" and dims[0] * dims[1] * dims[2] > 1024:
                raise ValueError("more than 1024 threads in a block")
            return dims
        if attr in ("shmem_base_addr", "local_mem_base_addr"):
            if not _HEX.fullmatch(text):
                raise ValueError("expected hex digits")
            return _at_most(attr, int(text, 16))
        if attr == "nvbit_version":
            return text
        if not _DEC.fullmatch(text):
            raise ValueError("expected ASCII decimal digits")
        v = int(text)
        if attr == "enable_lineinfo":
            if v not in (0, 1):
                raise ValueError("expected 0 or 1")
            return bool(v)
        if attr == "kernel_id" and v < 1:
            raise ValueError("kernel ids start at 1 (invocation = id - 1)")
        return _at_most(attr, v)
    except ValueError as exc:
        raise TraceFormatError(path, lineno, f"-{key}", f"bad value {text!r} ({exc})") from None


def parse_header(data: bytes, path: str) -> tuple[KernelHeader, TraceLayout, int, int]:
    """Header fields, column layout, byte offset and 0-based line index where the body starts."""
    fields: dict = {}
    key_line: dict[str, int] = {}
    fmt: str | None = None
    fmt_line = 0  # where fmt was read, for the "appears again" error
    pos = 0
    lineno = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            nl = n
        raw_line = data[pos:nl]
        if lineno == 0 and raw_line.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte order mark
            raw_line = raw_line[3:]
        if raw_line.lstrip().startswith(b"-"):
            try:  # a header value that is not UTF-8 must not silently become another name
                line = raw_line.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                key = raw_line.lstrip()[1:].split(b"=", 1)[0].decode("ascii", "replace").strip()
                raise TraceFormatError(path, lineno + 1, f"-{' '.join(key.split())}",
                                       f"not UTF-8 text (byte {raw_line[exc.start]:#04x} at column {exc.start + 1})") from None
        else:
            line = raw_line.decode("utf-8", "replace").strip()
        if line.startswith("-"):
            body = line[1:]
            if "=" not in body:
                raise TraceFormatError(path, lineno + 1, "header", f"expected '-key = value', got {line!r}")
            key, _, value = body.partition("=")
            key = " ".join(key.split())
            if key not in _KEYS:
                raise TraceFormatError(path, lineno + 1, f"-{key}", "unknown header key")
            if key in key_line:  # keeping either value silently could describe another launch
                raise TraceFormatError(path, lineno + 1, f"-{key}", f"appears again (first at line {key_line[key]})")
            key_line[key] = lineno + 1
            fields[key] = _header_value(path, lineno + 1, key, value.strip())
        elif line.startswith("#traces format"):
            if fmt is not None:
                raise TraceFormatError(path, lineno + 1, "#traces format", f"appears again (first at line {fmt_line})")
            fmt, fmt_line = line, lineno + 1
        elif line == "":
            pass
        else:
            break  # first body line
        pos = nl + 1
        lineno += 1
    for key in _REQUIRED:
        if key not in fields:
            if not fields and pos >= n:
                raise TraceFormatError(path, None, "header", "empty trace file")
            raise TraceFormatError(path, lineno + 1 if pos < n else None, f"-{key}",
                                   "missing required header line")
    kw = {_KEYS[k]: v for k, v in fields.items()}
    header = KernelHeader(**kw)
    if fmt is None:
        has_imm = header.tracer_version >= 4
        has_values = False
    else:
        words = fmt.split()
        has_imm = "immediate" in words
        has_values = "reg_values" in words
    ldgsts_once = fmt is not None and "ldgsts_once" in fmt.split()
    m = re.compile(rb"\S").search(data, pos)
    first = data[m.start():m.start() + 1] if m else b""
    raw = bool(first) and first != b"#"
    if raw and re.match(rb"(thread block|warp|insts)\s*=", data[m.start():m.start() + 16]):
        # a grouped trace's CTA or warp line, read as a raw record, was worded as a bad number
        raise TraceFormatError(path, lineno + data.count(b"\n", pos, m.start()) + 1, "#BEGIN_TB",
                               "a grouped trace's CTA section starts without its '#BEGIN_TB' line")
    layout = TraceLayout(line_num=header.enable_lineinfo, imm=has_imm, values=has_values, raw=raw,
                         format_line=fmt is not None, ldgsts_once=ldgsts_once)
    return header, layout, pos, lineno


# ----------------------------------------------------------------------------- body


class _Lines:
    """Line view of the body: the trimmed span of every line, and the token view on demand.

    The compiled parser needs only line spans. The numpy parser (no numba, or to
    word an error the compiled one found) needs every token, which costs a full
    tokenisation, so ``body`` is built on first use.
    """

    def __init__(self, path: str, buf: np.ndarray, line0: int):
        self.path = path
        self.buf = buf
        self.line0 = line0
        self.ls, self.le = T.line_spans(buf)
        self.n_lines = self.ls.shape[0]
        self._body: _Body | None = None

    @property
    def body(self) -> "_Body":
        if self._body is None:
            self._body = _Body(self.path, self.buf, self.line0)
        return self._body

    def fail(self, line_idx: int, field: str, message: str):
        raise TraceFormatError(self.path, self.line0 + int(line_idx) + 1, field, message)

    def text_of_line(self, li: int) -> str:
        return bytes(self.buf[self.ls[li]:self.le[li]]).decode("utf-8", "replace")


class _Body:
    """Token view of the body; helpers raise errors naming file:line and field."""

    def __init__(self, path: str, buf: np.ndarray, line0: int):
        self.path = path
        self.buf = buf
        self.line0 = line0
        self.ts, self.te, self.line_tok0, self.line_ntok = T.scan(buf)
        self.n_lines = self.line_tok0.shape[0]
        self.digits = None  # per-character lookups only for parsed (distinct) lines

    def fail(self, line_idx: int, field: str, message: str):
        raise TraceFormatError(self.path, self.line0 + int(line_idx) + 1, field, message)

    def text_of_line(self, li: int) -> str:
        t0 = self.line_tok0[li]
        t1 = t0 + self.line_ntok[li]
        if t1 == t0:
            return ""
        return bytes(self.buf[self.ts[t0]:self.te[t1 - 1]]).decode("utf-8", "replace")

    # --- column readers; ``lines`` are line indices, ``tok`` token indices
    def check(self, ok: np.ndarray, lines: np.ndarray, field: str, message: str):
        if ok.size and not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            self.fail(lines[bad], field, message)

    def tok_text(self, t: int) -> str:
        return bytes(self.buf[self.ts[t]:self.te[t]]).decode("utf-8", "replace")

    def uint(self, tok, lines, field, base, allow_0x=False, max_value=None):
        v, ok = T.parse_uint(self.buf, self.ts[tok], self.te[tok], base, allow_0x=allow_0x, digits=self.digits)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            text = self.tok_text(tok[bad])
            if _is_number(text, base, allow_0x):
                most = f"max {max_value}" if max_value is not None else (
                    "at most 16 hex digits" if base == 16 else f"at most {T.MAX_DEC_DIGITS} decimal digits")
                self.fail(lines[bad], field, f"value {text!r} out of range ({most})")
            kind = "hex" if base == 16 else "decimal"
            self.fail(lines[bad], field, f"token {text!r} is not {kind}")
        if max_value is not None and v.size and int(v.max()) > max_value:
            bad = int(np.flatnonzero(v > np.uint64(max_value))[0])
            self.fail(lines[bad], field, f"value {self.tok_text(tok[bad])!r} out of range (max {max_value})")
        return v

    def sint(self, tok, lines, field):
        v, ok = T.parse_int(self.buf, self.ts[tok], self.te[tok], digits=self.digits)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            text = self.tok_text(tok[bad])
            if _is_number(text.removeprefix("-"), 10, False):
                self.fail(lines[bad], field, f"value {text!r} out of range (signed 64-bit)")
            self.fail(lines[bad], field, f"token {text!r} is not a decimal integer")
        return v

    def imm64(self, tok, lines, field):
        """The immediate: 64 bits, written signed. gcl_tracer wrote them unsigned until it was
        first run on a GPU (2026-11-27), so a decimal in [2^63, 2^64) is read as the int64 with
        the same bits; the real traces of that run have -1 as 18446744073709551615. As the compiled
        parser (``_jit._imm64``): up to 20 digits (2^64 - 1 has 20), so also a zero-padded one below 2^63."""
        v, ok = T.parse_int(self.buf, self.ts[tok], self.te[tok], digits=self.digits)
        for bad in np.flatnonzero(~ok):
            text = self.tok_text(tok[bad])
            if text.isascii() and text.isdigit() and len(text) <= 20 and int(text) < 2**64:
                x = int(text)
                v[bad] = x - 2**64 if x >= 2**63 else x
                ok[bad] = True
        if not ok.all():
            return self.sint(tok, lines, field)  # the first bad token, named as sint names it
        return v

    def regs(self, tok, lines, field) -> np.ndarray:
        """Register tokens (R12, RZ, UR4, URZ, P0, PT, UP1, UPT) to ``reg_code`` int16."""
        buf, last = self.buf, self.buf.size - 1
        s, e = self.ts[tok], self.te[tok]
        c0 = buf[s]
        if s.size and (c0 == ord("R")).all():  # fast path: tracer output has only R<n>
            num, ok = T.parse_uint(buf, s + 1, e, 10, max_digits=3, digits=self.digits)
            if ok.all() and int(num.max()) < 256:
                return num.astype(np.int16)
        c1 = buf[np.minimum(s + 1, last)] * (e - s > 1)
        c2 = buf[np.minimum(s + 2, last)] * (e - s > 2)
        R, U, P, Z, Tt = ord("R"), ord("U"), ord("P"), ord("Z"), ord("T")
        base = np.full(s.shape, -1, dtype=np.int64)
        plen = np.zeros(s.shape, dtype=np.int64)
        limit = np.zeros(s.shape, dtype=np.int64)
        isR, isP = c0 == R, c0 == P
        isUR, isUP = (c0 == U) & (c1 == R), (c0 == U) & (c1 == P)
        for m, b, pl, lim in ((isR, 0, 1, 256), (isP, 512, 1, 8), (isUR, 256, 2, 64), (isUP, 640, 2, 8)):
            base[m], plen[m], limit[m] = b, pl, lim
        special = np.zeros(s.shape, dtype=np.int64) - 1
        length = e - s
        special[isR & (c1 == Z) & (length == 2)] = 255
        special[isP & (c1 == Tt) & (length == 2)] = 512 + 7
        special[isUR & (c2 == Z) & (length == 3)] = 256 + 63
        special[isUP & (c2 == Tt) & (length == 3)] = 640 + 7
        num, ok = T.parse_uint(buf, s + plen, e, 10, max_digits=3, digits=self.digits)
        num = num.astype(np.int64)
        ok &= (base >= 0) & (num < limit)
        code = np.where(special >= 0, special, base + num)
        ok |= special >= 0
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            self.fail(lines[bad], field, f"token {self.tok_text(tok[bad])!r} is not a register")
        return code.astype(np.int16)


def _is_number(text: str, base: int, allow_0x: bool) -> bool:
    """Whether a refused token is digits of ``base`` (so too large, not malformed)."""
    if allow_0x and text[:2] in ("0x", "0X") and len(text) > 2:
        text = text[2:]
    return bool(text) and all(c in "0123456789abcdefABCDEF"[:base + 6 * (base == 16)] for c in text)


def _need(body: _Body, cur, end, count, lines, field, then: tuple[str, ...] = ()):
    """Fail on the first line with fewer than ``count`` tokens left. ``field`` names the first
    ``count - len(then)`` of them and ``then`` the single tokens after, so a line cut short names
    the first field it lacks (``0030 ffffffff`` lacks dest_num, not the PC it has)."""
    bad = cur + count > end
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        have = int(end[i] - cur[i])
        lead = int(count[i] if np.ndim(count) else count) - len(then)
        body.fail(lines[i], field if have < lead else then[have - lead], "line ends before this field (missing "
                  "tokens: mask/address/operand count does not match the tokens present)")


class _OpcodeTable:
    """Interns opcode spans into ids in order of first appearance across chunks."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.names: list[str] = []

    def intern(self, ctx, s: np.ndarray, e: np.ndarray, lines: np.ndarray) -> np.ndarray:
        """Opcode ids of the spans ``[s, e)`` of ``ctx.buf``; ``lines`` name them in errors."""
        if s.size == 0:
            return np.zeros(0, dtype=np.int32)
        # A 64-bit hash of (bytes, length) identifies the opcode; with at most a few
        # thousand distinct opcodes a collision has probability ~1e-13, so spans are not
        # compared byte by byte (that would double the cost of this column).
        h = T.span_hash(ctx.buf, s, e)
        uh, first, inv = np.unique(h, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        gid = np.empty(uh.shape[0], dtype=np.int32)
        for u in order.tolist():
            raw = bytes(ctx.buf[s[first[u]]:e[first[u]]])
            try:  # replacing bad bytes with U+FFFD would silently merge or rename opcodes
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                ctx.fail(lines[first[u]], "opcode", f"not UTF-8 text (byte {raw[exc.start]:#04x} "
                         f"at character {exc.start + 1} of the opcode)")
            if not text[:1].isalpha() and not text[:1] == "_":
                ctx.fail(lines[first[u]], "opcode", f"token {text!r} is not a SASS opcode")
            gid[u] = self._id(text)
        return gid[inv.reshape(-1)]

    def _id(self, text: str) -> int:
        i = self.ids.get(text)
        if i is None:
            i = self.ids[text] = len(self.names)
            self.names.append(text)
        return i


def _parse_lines(body: _Body, lines: np.ndarray, layout: TraceLayout, opcodes: _OpcodeTable,
                 prefix: int) -> dict:
    """Parse instruction lines ``lines`` (line indices) into column arrays.

    ``prefix`` leading decimal tokens (raw traces: cta x/y/z and warp) are returned
    as ``prefix`` (M, prefix) int64.
    """
    M = lines.shape[0]
    cur = body.line_tok0[lines].copy()
    end = cur + body.line_ntok[lines]
    out: dict = {}
    if prefix:
        _need(body, cur, end, prefix, lines, "thread block/warp")
        pre = np.empty((M, prefix), dtype=np.int64)
        for j in range(prefix):
            pre[:, j] = body.uint(cur + j, lines, "thread block/warp", 10).astype(np.int64)
        cur += prefix
        out["prefix"] = pre
    if layout.line_num:
        _need(body, cur, end, 1, lines, "line_num")
        out["line_num"] = body.uint(cur, lines, "line_num", 10, max_value=2**31 - 1).astype(np.int32)
        cur += 1
    _need(body, cur, end, 3, lines, "PC", ("mask", "dest_num"))
    out["pc"] = body.uint(cur, lines, "PC", 16, allow_0x=True, max_value=2**63 - 1).astype(np.int64)
    mask = body.uint(cur + 1, lines, "mask", 16, allow_0x=True, max_value=0xFFFFFFFF).astype(np.uint32)
    out["mask"] = mask
    ndst = body.uint(cur + 2, lines, "dest_num", 10, max_value=255).astype(np.int64)
    cur += 3
    _need(body, cur, end, ndst + 2, lines, "reg_dests", ("opcode", "src_num"))
    dmax = int(ndst.max(initial=0))
    dst = np.full((M, dmax), NO_REG, dtype=np.int16)
    for j in range(dmax):
        sel = np.flatnonzero(ndst > j)
        dst[sel, j] = body.regs(cur[sel] + j, lines[sel], "reg_dests")
    cur += ndst
    out["dst"] = dst
    out["opcode"] = opcodes.intern(body, body.ts[cur], body.te[cur], lines)
    nsrc = body.uint(cur + 1, lines, "src_num", 10, max_value=255).astype(np.int64)
    cur += 2
    _need(body, cur, end, nsrc + 1, lines, "reg_srcs", ("mem_width",))
    smax = int(nsrc.max(initial=0))
    src = np.full((M, smax), NO_REG, dtype=np.int16)
    for j in range(smax):
        sel = np.flatnonzero(nsrc > j)
        src[sel, j] = body.regs(cur[sel] + j, lines[sel], "reg_srcs")
    cur += nsrc
    out["src"] = src
    mw = body.uint(cur, lines, "mem_width", 10, max_value=2**31 - 1).astype(np.int32)
    cur += 1
    out["mem_width"] = mw

    # --- memory addresses, expanded to one per active lane
    k = T.popcount32(mask)
    is_mem = mw > 0
    n_addr = np.where(is_mem, k, 0)
    addr_ptr = np.zeros(M + 1, dtype=np.int64)
    np.cumsum(n_addr, out=addr_ptr[1:])
    addrs = np.zeros(int(addr_ptr[-1]), dtype=np.uint64)
    mi = np.flatnonzero(is_mem)
    if mi.size:
        _need(body, cur[mi], end[mi], 1, lines[mi], "address mode")
        mode = body.uint(cur[mi], lines[mi], "address mode", 10, max_value=9).astype(np.int64)
        cur[mi] += 1
        bad = (mode > 2)
        if bad.any():
            body.fail(lines[mi[np.flatnonzero(bad)[0]]], "address mode", "must be 0, 1 or 2")
        # mode 0: k hex addresses
        s0 = mi[mode == 0]
        if s0.size:
            _need(body, cur[s0], end[s0], k[s0], lines[s0], "mem_addresses")
            r = T.ragged_arange(k[s0])
            tok = np.repeat(cur[s0], k[s0]) + r
            ln = np.repeat(lines[s0], k[s0])
            dest = np.repeat(addr_ptr[s0], k[s0]) + r
            addrs[dest] = body.uint(tok, ln, "mem_addresses", 16, allow_0x=True)
            cur[s0] += k[s0]
        # mode 1: base stride
        s1 = mi[mode == 1]
        if s1.size:
            split = ~T.lanes_contiguous(mask[s1])
            if split.any():
                i = int(np.flatnonzero(split)[0])
                body.fail(lines[s1[i]], "address mode", STRIDE_SPLIT_LANES.format(mask=int(mask[s1[i]])))
            _need(body, cur[s1], end[s1], 2, lines[s1], "mem_addresses")
            base = body.uint(cur[s1], lines[s1], "mem_addresses", 16, allow_0x=True)
            stride = body.sint(cur[s1] + 1, lines[s1], "address stride")
            r = T.ragged_arange(k[s1])
            dest = np.repeat(addr_ptr[s1], k[s1]) + r
            addrs[dest] = np.repeat(base, k[s1]) + (np.repeat(stride, k[s1]) * r).astype(np.uint64)
            cur[s1] += 2
        # mode 2: base d1..d(k-1)
        s2 = mi[mode == 2]
        if s2.size:
            nd = np.maximum(k[s2] - 1, 0)
            _need(body, cur[s2], end[s2], 1 + nd, lines[s2], "mem_addresses")
            base = body.uint(cur[s2], lines[s2], "mem_addresses", 16, allow_0x=True)
            r = T.ragged_arange(nd)
            tok = np.repeat(cur[s2] + 1, nd) + r
            deltas = body.sint(tok, np.repeat(lines[s2], nd), "address delta")
            has = k[s2] > 0
            addrs[addr_ptr[s2][has]] = base[has]
            if deltas.size:
                cs = np.cumsum(deltas)
                seg0 = np.cumsum(nd) - nd
                within = cs - np.repeat(cs[seg0[nd > 0]] - deltas[seg0[nd > 0]], nd[nd > 0])
                dest = np.repeat(addr_ptr[s2] + 1, nd) + r
                addrs[dest] = np.repeat(base, nd) + within.astype(np.uint64)
            cur[s2] += 1 + nd
    out["addr_ptr"], out["addrs"] = addr_ptr, addrs

    if layout.imm:
        _need(body, cur, end, 1, lines, "immediate")
        out["imm"] = body.imm64(cur, lines, "immediate")
        cur += 1

    # --- gclsampler value extension
    has_marker = np.zeros(M, dtype=bool)
    more = cur < end
    if more.any():
        mi2 = np.flatnonzero(more)
        t = cur[mi2]
        is_m = (body.te[t] - body.ts[t] == 1) & (body.buf[body.ts[t]] == VALUE_MARKER[0])
        has_marker[mi2[is_m]] = True
    rows = ndst + nsrc
    if has_marker.any() and not layout.values:
        i = int(np.flatnonzero(has_marker)[0])
        body.fail(lines[i], "reg_values", "value marker '|' in a trace whose #traces format line "
                  "does not list reg_values")
    if layout.values:
        nval = np.where(has_marker, rows * k, 0)
        value_ptr = np.zeros(M + 1, dtype=np.int64)
        np.cumsum(nval, out=value_ptr[1:])
        values = np.zeros(int(value_ptr[-1]), dtype=np.uint32)
        cur[has_marker] += 1
        for r_ in range(int(rows[has_marker].max(initial=0))):
            sel = np.flatnonzero(has_marker & (rows > r_) & (k > 0))
            if sel.size == 0:
                continue
            _need(body, cur[sel], end[sel], 1, lines[sel], "reg_values")
            head = cur[sel]
            hc = body.buf[body.ts[head]]
            row0 = value_ptr[sel] + r_ * k[sel]
            ks = k[sel]
            v0, ok = T.parse_uint(body.buf, body.ts[head] + 1, body.te[head], 16, max_digits=8)
            if not ok.all():
                b = int(np.flatnonzero(~ok)[0])
                text = body.tok_text(head[b])
                if text[:1] in "=+~:" and _is_number(text[1:], 16, False):
                    body.fail(lines[sel[b]], "reg_values",
                              f"value {text!r} out of range (32-bit: at most 8 hex digits)")
                body.fail(lines[sel[b]], "reg_values", f"token {text!r} is not "
                          "'=hex', '+hex', '~hex' or ':hex'")
            v0 = v0.astype(np.int64)
            adv = np.zeros(sel.shape[0], dtype=np.int64)
            # '=' uniform
            m = hc == ord("=")
            if m.any():
                dest = np.repeat(row0[m], ks[m]) + T.ragged_arange(ks[m])
                values[dest] = np.repeat(v0[m], ks[m]).astype(np.uint32)
                adv[m] = 1
            # '+' base stride
            m = hc == ord("+")
            if m.any():
                _need(body, head[m] + 1, end[sel][m], 1, lines[sel][m], "reg_values")
                st = body.sint(head[m] + 1, lines[sel][m], "value stride")
                r = T.ragged_arange(ks[m])
                dest = np.repeat(row0[m], ks[m]) + r
                values[dest] = ((np.repeat(v0[m], ks[m]) + np.repeat(st, ks[m]) * r) & 0xFFFFFFFF).astype(np.uint32)
                adv[m] = 2
            # '~' base deltas, ':' list
            for ch, kind in ((ord("~"), "delta"), (ord(":"), "list")):
                m = hc == ch
                if not m.any():
                    continue
                km = ks[m]
                nd = km - 1
                _need(body, head[m], end[sel][m], km, lines[sel][m], "reg_values")
                r = T.ragged_arange(nd)
                tok = np.repeat(head[m] + 1, nd) + r
                ln = np.repeat(lines[sel][m], nd)
                values[row0[m]] = v0[m].astype(np.uint32)
                if kind == "list":
                    vv, ok = T.parse_uint(body.buf, body.ts[tok], body.te[tok], 16, max_digits=8)
                    if not ok.all():
                        b = int(np.flatnonzero(~ok)[0])
                        text = body.tok_text(tok[b])
                        if _is_number(text, 16, False):
                            body.fail(ln[b], "reg_values",
                                      f"value {text!r} out of range (32-bit: at most 8 hex digits)")
                        body.fail(ln[b], "reg_values", f"token {text!r} is not hex")
                    values[np.repeat(row0[m] + 1, nd) + r] = vv.astype(np.uint32)
                else:
                    d = body.sint(tok, ln, "value delta")
                    if d.size:
                        cs = np.cumsum(d)
                        pos = nd > 0
                        seg0 = (np.cumsum(nd) - nd)[pos]
                        within = cs - np.repeat(cs[seg0] - d[seg0], nd[pos])
                        vals = (np.repeat(v0[m], nd) + within) & 0xFFFFFFFF
                        values[np.repeat(row0[m] + 1, nd) + r] = vals.astype(np.uint32)
                adv[m] = km
            bad = adv == 0
            if bad.any():
                b = int(np.flatnonzero(bad)[0])
                body.fail(lines[sel[b]], "reg_values", f"token {body.tok_text(head[b])!r} does not "
                          "start with '=', '+', '~' or ':'")
            cur[sel] += adv
        out["value_ptr"], out["values"] = value_ptr, values
    extra = cur != end
    if extra.any():
        i = int(np.flatnonzero(extra)[0])
        body.fail(lines[i], "line", f"unexpected token {body.tok_text(int(cur[i]))!r} after the "
                  "last field (address/value count does not match the mask?)")
    return out


_CHUNK_LINES = 1 << 20
_DEDUP_MIN_LINES = 1024


def _parse_all(ctx: _Lines, inst_lines: np.ndarray, layout: TraceLayout, prefix: int) -> tuple[dict, list[str]]:
    """Parse each distinct instruction line once, then broadcast to its repeats.

    Non-memory instructions repeat verbatim across warps and CTAs (same PC, mask,
    registers), so real traces have far fewer distinct lines than lines. When
    less than 80% of the lines are distinct, only first occurrences are parsed
    (in file order, so opcode ids keep first-appearance order) and the columns
    are gathered back; the CSR address/value arrays are gathered row by row.
    """
    n = inst_lines.shape[0]
    if n >= _DEDUP_MIN_LINES and not prefix:
        h = T.line_hashes(ctx.buf, ctx.ls[inst_lines], ctx.le[inst_lines])
        reps, group = T.first_occurrence(h)
        if reps.size < 0.8 * n:
            cols, names = _parse_rows(ctx, inst_lines[reps], layout, prefix)
            return _take(cols, group, trim=False), names
    return _parse_rows(ctx, inst_lines, layout, prefix)


def _first_bad(failing: int, probe) -> int:
    """Index of the first line that a parse of the lines up to it refuses.

    ``failing``: a count of leading lines known to be refused; ``probe(m)``: the index of a
    refused line among the first ``m`` (< m), or -1 when they parse. Why: each parser finds
    *a* bad line (the compiled one the first of its first failing pass, numpy the first of
    its first failing column), so with two bad lines they named different ones; both now
    name the first in file order. Bisection, cut short by each probe's own finding, costs a
    few parses, and only when a trace is bad; one when the line found is the only bad one.
    """
    lo, hi = 0, failing  # the first lo lines parse; the first hi do not
    if hi > 1:
        bad = probe(hi - 1)  # the lines before the one found: usually they parse
        lo, hi = (hi - 1, hi) if bad < 0 else (0, bad + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        bad = probe(mid)
        if bad >= 0:
            hi = bad + 1
        else:
            lo = mid
    return hi - 1


def _parse_rows(ctx: _Lines, lines: np.ndarray, layout: TraceLayout, prefix: int) -> tuple[dict, list[str]]:
    """Columns of instruction lines ``lines``: compiled parser if numba is there, else numpy.

    The compiled parser only locates a bad line; the first bad line is found
    (``_first_bad``) and the numpy parser reads that one line and raises the worded
    error, as the numpy path does, so both paths report bad input identically.
    """
    jit = T.compiled()
    if jit is None:
        return _parse_chunks(ctx.body, lines, layout, prefix)

    def probe(m: int) -> tuple[int, int]:
        e, f, _ = jit.parse_lines(ctx.buf, ctx.ls[lines[:m]], ctx.le[lines[:m]], prefix,
                                  layout.line_num, layout.imm, layout.values)
        return int(e), int(f)

    err_i, err_f, out = jit.parse_lines(ctx.buf, ctx.ls[lines], ctx.le[lines], prefix,
                                        layout.line_num, layout.imm, layout.values)
    if err_i >= 0:
        k = _first_bad(int(err_i) + 1, lambda m: probe(m)[0])
        bad = lines[k:k + 1]
        _parse_lines(ctx.body, bad, layout, _OpcodeTable(), prefix)  # raises the worded error
        e, f = probe(k + 1)
        ctx.fail(int(bad[0]), jit.FIELD_NAMES.get(f if e == k else int(err_f), "line"),
                 "does not follow the trace grammar")
    opcodes = _OpcodeTable()
    out["opcode"] = opcodes.intern(ctx, out.pop("opcode_start"), out.pop("opcode_end"), lines)
    return out, opcodes.names


def _parse_chunks(body: _Body, inst_lines: np.ndarray, layout: TraceLayout, prefix: int) -> tuple[dict, list[str]]:
    """Parse in chunks of lines so that temporaries stay a fraction of the file size."""
    opcodes = _OpcodeTable()
    parts = []
    for i in range(0, max(inst_lines.shape[0], 1), _CHUNK_LINES):
        chunk = inst_lines[i:i + _CHUNK_LINES]
        try:
            parts.append(_parse_lines(body, chunk, layout, opcodes, prefix))
        except TraceFormatError as exc:
            def position(e: TraceFormatError, m: int) -> int:
                """Where among the first m lines of the chunk the error's line is (m - 1 if not there)."""
                li = (e.line or 0) - body.line0 - 1
                at = int(np.searchsorted(chunk[:m], li))  # the lines are in file order
                return at if at < m and chunk[at] == li else m - 1

            def probe(m: int) -> int:
                try:
                    _parse_lines(body, chunk[:m], layout, _OpcodeTable(), prefix)
                except TraceFormatError as e:
                    return position(e, m)
                return -1

            k = _first_bad(position(exc, chunk.shape[0]) + 1, probe)
            _parse_lines(body, chunk[k:k + 1], layout, _OpcodeTable(), prefix)  # raises the worded error
            raise  # refused only beside the lines before it: the chunk's own error
    return _concat(parts), opcodes.names


def _concat(parts: list[dict]) -> dict:
    if len(parts) == 1:
        return parts[0]
    out = {}
    for key in parts[0]:
        arrs = [p[key] for p in parts]
        if key in ("dst", "src"):
            w = max(a.shape[1] for a in arrs)
            arrs = [np.pad(a, ((0, 0), (0, w - a.shape[1])), constant_values=NO_REG) for a in arrs]
            out[key] = np.concatenate(arrs)
        elif key in ("addr_ptr", "value_ptr"):
            data_key = "addrs" if key == "addr_ptr" else "values"
            offs = np.cumsum([0] + [p[data_key].shape[0] for p in parts[:-1]])
            out[key] = np.concatenate([arrs[0][:1]] + [a[1:] + o for a, o in zip(arrs, offs)])
        else:
            out[key] = np.concatenate(arrs)
    return out


def _grouped_structure(body: _Lines, header: KernelHeader, complete_header: bool = False):
    """Walk the structural lines; returns instruction line indices and per-warp arrays.

    ``complete_header``: the header ended with its ``#traces format`` line. Then a file with no
    body at all is a launch none of whose CTAs ran on the traced SM (the tracer scopes to one SM,
    and a small grid can miss it): 0 warps, 0 instructions, still one invocation. Without that
    line a missing body means the file was cut inside its header, and is refused.

    A well-formed body in the canonical spelling (what the tracers and ``write_kernel`` emit)
    is checked in whole-array passes (``_structure_fast``); anything else, including every
    malformed body, takes the line-by-line walk, which words the error.
    """
    buf = body.buf
    nonblank = body.le > body.ls
    if complete_header and not nonblank.any():
        return (np.zeros(0, np.int64), np.zeros((0, 3), np.int32), np.zeros(0, np.int32),
                np.zeros(1, np.int64))
    c0 = np.zeros(body.n_lines, dtype=np.uint8)
    c1 = np.zeros(body.n_lines, dtype=np.uint8)
    nb = np.flatnonzero(nonblank)
    c0[nb] = buf[body.ls[nb]]
    c1[nb] = buf[np.minimum(body.ls[nb] + 1, buf.size - 1)]
    struct = nonblank & (np.isin(c0, np.frombuffer(b"#twi", np.uint8)) | ((c0 == ord("c")) & (c1 == ord("l"))))
    is_inst = nonblank & ~struct
    inst_cum = np.concatenate([[0], np.cumsum(is_inst)])
    s_lines = np.flatnonzero(struct)
    s_next = np.append(s_lines[1:], body.n_lines)
    wpc = (header.threads_per_cta + 31) // 32
    n_after = inst_cum[s_next] - inst_cum[s_lines + 1]
    if s_lines.size >= _FAST_STRUCTURE_LINES:
        fast = _structure_fast(body, header, s_lines, n_after, is_inst, wpc)
        if fast is not None:
            return fast
    return _structure_walk(body, header, s_lines, n_after, is_inst, nonblank, wpc)


_FAST_STRUCTURE_LINES = 64
"""Below this many structural lines (about 20 warps) the walk is cheaper than the fixed cost of
the whole-array passes (on nw's 2-warp traces the fast check took 0.2 ms against the walk's 0.03)."""

_B, _T, _W, _I, _E = range(5)  # structural line kinds of the canonical spelling
_NEXT_OK = np.zeros((5, 5), dtype=bool)  # kind of line -> kinds that may follow it
for _a, _b in ((_B, _T), (_T, _W), (_W, _I), (_I, _W), (_I, _E), (_E, _B)):  # a CTA lists a warp
    _NEXT_OK[_a, _b] = True


def _spelled(body: _Lines, lines: np.ndarray, prefix: bytes, whole: bool = False) -> np.ndarray:
    """Which of ``lines`` start with ``prefix`` (byte for byte) and run past it (``whole``: are it)."""
    buf = body.buf
    ls, le = body.ls[lines], body.le[lines]
    ok = (le - ls == len(prefix)) if whole else (le - ls > len(prefix))
    for j, ch in enumerate(prefix):
        ok &= buf[np.minimum(ls + j, buf.size - 1)] == ch
    return ok


def _structure_fast(body: _Lines, header: KernelHeader, s_lines: np.ndarray, n_after: np.ndarray,
                    is_inst: np.ndarray, wpc: int):
    """``_grouped_structure``'s result from whole-array checks, or None to take the walk.

    Why: the walk costs a regex and a few dict lookups per ``warp =`` / ``insts =`` line, a
    quarter of reading a many-warp trace (2048 lu kernels of ~250 short warps each). Only
    the canonical spelling is taken here (``#BEGIN_TB``, ``thread block = x,y,z``, ``warp = w``,
    ``insts = n``, ``#END_TB`` in that nesting); every rule the walk enforces is checked, and
    any doubt returns None, so results and errors are the walk's.
    """
    n_s = s_lines.size
    if n_s == 0:
        return None
    buf, ls, le = body.buf, body.ls[s_lines], body.le[s_lines]
    kind = np.full(n_s, -1, dtype=np.int64)
    kind[_spelled(body, s_lines, b"#BEGIN_TB", whole=True)] = _B
    kind[_spelled(body, s_lines, b"#END_TB", whole=True)] = _E
    kind[_spelled(body, s_lines, b"thread block = ")] = _T
    kind[_spelled(body, s_lines, b"warp = ")] = _W
    kind[_spelled(body, s_lines, b"insts = ")] = _I
    if (kind < 0).any() or kind[0] != _B or kind[-1] != _E or not _NEXT_OK[kind[:-1], kind[1:]].all():
        return None
    first_inst = np.flatnonzero(is_inst)
    if first_inst.size and first_inst[0] < s_lines[0]:
        return None
    is_i = kind == _I
    if (n_after[~is_i] != 0).any():  # instruction lines belong right after an 'insts =' line
        return None
    w_rows, i_rows = np.flatnonzero(kind == _W), np.flatnonzero(is_i)
    wi, ok_w = T.parse_uint(buf, ls[w_rows] + 7, le[w_rows], 10)
    cnt, ok_i = T.parse_uint(buf, ls[i_rows] + 8, le[i_rows], 10)
    if not (ok_w.all() and ok_i.all()) or (cnt != n_after[i_rows].astype(np.uint64)).any() or (wi >= wpc).any():
        return None
    t_rows = np.flatnonzero(kind == _T)
    ctas = np.zeros((t_rows.size, 3), dtype=np.int64)
    for r, li in enumerate(s_lines[t_rows].tolist()):  # one per CTA: few, and a comma split is cheap
        parts = bytes(buf[body.ls[li] + 15:body.le[li]]).split(b",")
        if len(parts) != 3 or not all(p.isdigit() and p.isascii() and len(p) < 10 for p in parts):
            return None
        ctas[r] = [int(p) for p in parts]
    g = np.asarray(header.grid, dtype=np.int64)
    if (ctas >= g).any():
        return None
    lin = (ctas[:, 2] * g[1] + ctas[:, 1]) * g[0] + ctas[:, 0]
    if np.unique(lin).size != lin.size:
        return None
    owner = np.cumsum(kind == _T)[w_rows] - 1  # the CTA section each warp line sits in
    wkey = owner * wpc + wi.astype(np.int64)
    if np.unique(wkey).size != wkey.size:
        return None
    W = w_rows.size
    wp = np.zeros(W + 1, dtype=np.int64)
    np.cumsum(cnt.astype(np.int64), out=wp[1:])
    return first_inst, ctas[owner].astype(np.int32).reshape(W, 3), wi.astype(np.int32), wp


def _structure_walk(body: _Lines, header: KernelHeader, s_lines: np.ndarray, n_after_all: np.ndarray,
                    is_inst: np.ndarray, nonblank: np.ndarray, wpc: int):
    """``_grouped_structure`` line by line: any spelling the grammar allows, and the error.
    ``n_after_all[p]``: instruction lines between structural line ``p`` and the next one."""
    warp_cta, warp_id, counts = [], [], []
    in_tb = False
    cta = None
    pending_warp = None
    n_tb = 0
    cta_line: dict[tuple, int] = {}  # first line of each CTA / warp: a repeat would merge two sections
    warp_line: dict[int, int] = {}
    seen_inst_ok = np.zeros(s_lines.shape[0], dtype=bool)
    for p, li in enumerate(s_lines.tolist()):
        text = body.text_of_line(li)
        words = text.split()
        n_after = int(n_after_all[p])
        key = words[0]
        if key == "#BEGIN_TB":
            if in_tb:
                body.fail(li, "#BEGIN_TB", "thread block starts before the previous one ends")
            in_tb, cta, pending_warp = True, None, None
            n_tb += 1
        elif key == "#END_TB":
            if not in_tb:
                body.fail(li, "#END_TB", "without #BEGIN_TB")
            if pending_warp is not None:
                body.fail(li, "insts", f"warp {pending_warp} has no 'insts =' line")
            if cta is None:  # read as nothing, a lost CTA section passed for an empty launch
                body.fail(li, "#END_TB", "a #BEGIN_TB section without its 'thread block = x,y,z' line")
            if not warp_line:  # a KernelTrace has no row for it: the launch silently lost a CTA
                body.fail(li, "warp", f"thread block ({cta[0]},{cta[1]},{cta[2]}) lists no warp (every CTA a "
                          "tracer records runs one; the section was cut or edited?)")
            in_tb = False
        elif not in_tb:
            body.fail(li, key, f"{text!r} outside a #BEGIN_TB/#END_TB section")
        elif key == "thread" and text.startswith("thread block"):
            m = re.match(r"^thread block\s*=\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)$", text, re.ASCII)
            if not m:
                body.fail(li, "thread block", f"expected 'thread block = x,y,z', got {text!r}")
            if cta is not None:
                body.fail(li, "thread block", "second 'thread block =' line in one #BEGIN_TB section")
            cta = tuple(int(v) for v in m.groups())
            if any(c >= g for c, g in zip(cta, header.grid)):
                body.fail(li, "thread block", f"{cta} outside grid {header.grid}")
            if cta in cta_line:
                body.fail(li, "thread block", f"({cta[0]},{cta[1]},{cta[2]}) appears again "
                          f"(first at line {body.line0 + cta_line[cta] + 1})")
            cta_line[cta] = li
            warp_line = {}
        elif key == "cluster":
            pass  # Hopper thread-block-cluster lines (newer post-processing); not modelled
        elif key == "warp":
            m = re.match(r"^warp\s*=\s*(\d+)$", text, re.ASCII)
            if not m:
                body.fail(li, "warp", f"expected 'warp = w', got {text!r}")
            if cta is None:
                body.fail(li, "warp", "warp before 'thread block =' line")
            if pending_warp is not None:
                body.fail(li, "insts", f"warp {pending_warp} has no 'insts =' line")
            pending_warp = int(m.group(1))
            if pending_warp >= wpc:
                body.fail(li, "warp", f"warp {pending_warp} >= {wpc} warps per CTA of block {header.block}")
            if pending_warp in warp_line:
                body.fail(li, "warp", f"{pending_warp} appears again in thread block ({cta[0]},{cta[1]},{cta[2]}) "
                          f"(first at line {body.line0 + warp_line[pending_warp] + 1})")
            warp_line[pending_warp] = li
        elif key == "insts":
            m = re.match(r"^insts\s*=\s*(\d+)$", text, re.ASCII)
            if not m:
                body.fail(li, "insts", f"expected 'insts = n', got {text!r}")
            if pending_warp is None:
                body.fail(li, "insts", "'insts =' without a preceding 'warp =' line")
            n = int(m.group(1))
            if n != n_after:
                truncated = p == len(s_lines) - 1
                body.fail(li, "insts", f"declares {n} instructions but {n_after} follow"
                          + (" (file truncated?)" if truncated else ""))
            seen_inst_ok[p] = True
            warp_cta.append(cta)
            warp_id.append(pending_warp)
            counts.append(n)
            pending_warp = None
        else:
            body.fail(li, key, f"unknown line {text!r}")
        if n_after and not seen_inst_ok[p]:
            body.fail(int(np.flatnonzero(is_inst[li + 1:])[0]) + li + 1, "line",
                      "instruction line outside a warp's 'insts =' block")
    if in_tb:
        body.fail(int(np.flatnonzero(nonblank)[-1]), "#END_TB", "file ends inside a thread block (truncated)")
    first_inst = np.flatnonzero(is_inst)
    if first_inst.size and (s_lines.size == 0 or first_inst[0] < s_lines[0]):
        body.fail(first_inst[0], "line", "instruction line before the first #BEGIN_TB")
    if n_tb == 0:  # structure lines but no #BEGIN_TB, or a header cut before its #traces format line
        raise TraceFormatError(body.path, None, "thread block", "none (file truncated?)")
    W = len(warp_id)
    wc = np.array(warp_cta, dtype=np.int32).reshape(W, 3)
    wi = np.array(warp_id, dtype=np.int32)
    wp = np.zeros(W + 1, dtype=np.int64)
    np.cumsum(np.array(counts, dtype=np.int64), out=wp[1:])
    return first_inst, wc, wi, wp


def _dedup_ldgsts(opcode_names: list[str], opcode: np.ndarray, warp_key: np.ndarray,
                  pc: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Keep the second of each pair of LDGSTS records per warp (Accel-Sim post-processing).

    The NVBit tracer emits one record per memory reference and LDGSTS has two
    (global source, shared destination), written back to back by the same warp at
    the same PC; Accel-Sim keeps one of them. Pairs are matched by that adjacency,
    not by counting, so one lone record neither vanishes nor shifts every later pair:
    it is kept and reported. Rows must already be sorted by warp. Returns a keep mask,
    the number of unpaired records and the row of the first (-1 if none).
    """
    ld = np.array(["LDGSTS" in n for n in opcode_names], dtype=bool)
    keep = np.ones(opcode.shape[0], dtype=bool)
    if not ld.any():
        return keep, 0, -1
    is_ld = ld[opcode]
    cont = np.zeros(opcode.shape[0], dtype=bool)  # same LDGSTS as the record before it in its warp
    cont[1:] = is_ld[1:] & is_ld[:-1] & (warp_key[1:] == warp_key[:-1]) & (pc[1:] == pc[:-1])
    idx = np.flatnonzero(is_ld)
    start = ~cont[idx]
    grp = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    rank = np.arange(idx.size) - first[grp]
    run = np.diff(np.append(first, idx.size))
    paired = (run - run % 2)[grp]  # an odd run's last record has no partner
    keep[idx[(rank % 2 == 0) & (rank < paired)]] = False
    odd = np.flatnonzero(run % 2 == 1)
    bad = int(idx[first[odd[0]] + run[odd[0]] - 1]) if odd.size else -1
    return keep, int(odd.size), bad


def read_kernel(path: str | os.PathLike, *, dedup_ldgsts: bool = True, facts: dict | None = None,
                data: bytes | None = None) -> KernelTrace:
    """Parse one kernel trace (grouped or raw, plain or .gz/.xz/.zst).

    Raises ``TraceFormatError`` naming ``path:line`` and the field for anything
    that does not follow the grammar in docs/trace-format.md. ``facts``, when given,
    receives (added to) ``ldgsts_removed``, raw records dropped as the first of an LDGSTS
    pair, and ``ldgsts_unpaired``, lone LDGSTS records kept (with ``ldgsts_unpaired_at``,
    the first one's file:line), so that callers can say what did not become an
    instruction; without ``facts`` lone records are logged as a warning. ``data``, when given,
    is the file's decompressed content, already read (``path`` then only names it).
    """
    path = str(path)
    data = open_bytes(path) if data is None else data
    if re.search(rb"\S", data) is None:
        raise TraceFormatError(path, None, "header", "empty trace file")
    header, layout, off, line0 = parse_header(data, path)
    # a final newline, then 8 spare bytes so that the numpy hasher's 8-byte word reads at the
    # end of the last line stay in bounds (one copy of the text, not two)
    nul = data.find(b"\0", off)  # bytes below 0x21 separate tokens: a line of NULs read as blank
    unended = not data.endswith(b"\n")
    buf = np.frombuffer(data + b"\n" * (8 + unended), dtype=np.uint8)[off:]
    if nul >= 0:
        line = data.count(b"\n", off, nul)
    del data
    body = _Lines(path, buf, line0)
    if nul >= 0:
        body.fail(line, "line", "NUL byte: the file was cut or overwritten (a crash, a full disk?); trace the "
                  "kernel again")
    if layout.raw:
        inst_lines = np.flatnonzero(body.le > body.ls)
        if unended and inst_lines.size:
            # the tracer ends every record with a newline: without one the file was cut mid-record, and
            # a record cut after a digit ("=20" of "=200") parses as another value
            body.fail(int(inst_lines[-1]), "line", "the last record has no newline: the file was cut (a crash, "
                      "a full disk, an unfinished copy?); trace the kernel again")
        cols, names = _parse_all(body, inst_lines, layout, prefix=4)
        pre = cols.pop("prefix")
        gx, gy, gz = header.grid
        wpc = (header.threads_per_cta + 31) // 32
        for j, (lim, f) in enumerate(((gx, "thread block x"), (gy, "thread block y"), (gz, "thread block z"),
                                      (wpc, "warp"))):
            bad = pre[:, j] >= lim
            if bad.any():
                body.fail(inst_lines[np.flatnonzero(bad)[0]], f, f"{int(pre[np.flatnonzero(bad)[0], j])} "
                          f"outside grid {header.grid} / {wpc} warps per CTA")
        cta_lin = (pre[:, 2] * gy + pre[:, 1]) * gx + pre[:, 0]  # < 2^63 within the header's limits
        ctas = None
        if gx * gy * gz * wpc >= 1 << 62:  # (CTA, warp) keys would overflow int64: number the CTAs seen
            ctas, cta_lin = np.unique(cta_lin, return_inverse=True)
        key = cta_lin * wpc + pre[:, 3]
        order = np.argsort(key, kind="stable")
        key_s = key[order]
        removed = unpaired = 0
        if dedup_ldgsts and not layout.ldgsts_once:
            keep, unpaired, bad = _dedup_ldgsts(names, cols["opcode"][order], key_s, cols["pc"][order])
            removed = int(keep.size - np.count_nonzero(keep))
            if unpaired:
                at = f"{path}:{body.line0 + int(inst_lines[order[bad]]) + 1}"
                if facts is None:
                    logging.getLogger("gclsampler.trace").warning(
                        "gclsampler: warning: %s: opcode: %d LDGSTS record(s) without the second record of "
                        "their pair (same warp and PC, next record) kept as instructions", at, unpaired)
                else:
                    facts.setdefault("ldgsts_unpaired_at", at)
            order, key_s = order[keep], key_s[keep]
        if facts is not None:
            facts["ldgsts_removed"] = facts.get("ldgsts_removed", 0) + removed
            facts["ldgsts_unpaired"] = facts.get("ldgsts_unpaired", 0) + unpaired
        cols = _take(cols, order)
        starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]]) if key_s.size else np.zeros(0, np.int64)
        wkey = key_s[starts]
        warp_ptr = np.append(starts, key_s.size).astype(np.int64)
        warp_id = (wkey % wpc).astype(np.int32)
        lin = wkey // wpc if ctas is None else ctas[wkey // wpc]
        warp_cta = np.stack([lin % gx, (lin // gx) % gy, lin // (gx * gy)], axis=1).astype(np.int32)
        # opcode ids must follow first appearance in the grouped order
        cols["opcode"], names = _renumber(cols["opcode"], names)
    else:
        inst_lines, warp_cta, warp_id, warp_ptr = _grouped_structure(body, header, layout.format_line)
        cols, names = _parse_all(body, inst_lines, layout, prefix=0)
    return KernelTrace(
        header=header, warp_cta=warp_cta, warp_id=warp_id, warp_ptr=warp_ptr,
        pc=cols["pc"], mask=cols["mask"], opcode=cols["opcode"].astype(np.int32),
        opcode_table=tuple(names), dst=cols["dst"], src=cols["src"], mem_width=cols["mem_width"],
        addr_ptr=cols["addr_ptr"], addrs=cols["addrs"], line_num=cols.get("line_num"),
        imm=cols.get("imm"), value_ptr=cols.get("value_ptr"), values=cols.get("values"), source=path,
    )


def _renumber(opcode: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    if opcode.size == 0:
        return opcode.astype(np.int32), []
    u, first = np.unique(opcode, return_index=True)
    order = u[np.argsort(first, kind="stable")]
    remap = np.full(len(names), -1, dtype=np.int32)
    remap[order] = np.arange(order.size, dtype=np.int32)
    return remap[opcode], [names[i] for i in order.tolist()]


def _take(cols: dict, order: np.ndarray, trim: bool = True) -> dict:
    out = {}
    for key, a in cols.items():
        if key in ("addrs", "values"):
            continue
        if key == "addr_ptr":
            out["addr_ptr"], out["addrs"] = T.ragged_take(a, cols["addrs"], order)
        elif key == "value_ptr":
            out["value_ptr"], out["values"] = T.ragged_take(a, cols["values"], order)
        else:
            out[key] = a[order]
    for key in ("dst", "src") if trim else ():  # dropped rows (LDGSTS pairs) may leave padding columns
        a = out[key]
        w = int((a != NO_REG).sum(axis=1).max(initial=0))
        out[key] = np.ascontiguousarray(a[:, :w])
    return out


def read_header(path: str | os.PathLike) -> tuple[KernelHeader, TraceLayout]:
    """Header only: decompress just enough bytes to reach the first body line."""
    path = str(path)
    limit = 1 << 14
    while True:
        data = open_bytes(path, limit=limit)
        whole = len(data) < limit
        try:
            header, layout, off, _ = parse_header(data, path)
        except TraceFormatError:
            if whole:
                raise
        else:
            if whole or off < len(data):  # saw the first body line, so every header line is complete
                return header, layout
        if limit >= 1 << 26:
            raise TraceFormatError(path, None, "header", "no instruction body within the first 64 MB")
        limit *= 4
