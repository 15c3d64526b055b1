"""Write a ``KernelTrace`` back out as a grouped Accel-Sim ``.traceg`` file.

Addresses are compressed the way the NVBit tracer does it (mode 1 base+stride
for contiguous lanes with a constant 32-bit stride, otherwise mode 2
base+deltas), so Accel-Sim reads our files exactly like tracer output.
Register values (gclsampler's extension) follow the immediate behind a ``|``
token; Accel-Sim stops reading a line after the immediate, so it never sees them.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from gclsampler._atomic import atomic_path
from gclsampler._atomic import write_bytes_atomic as _write_bytes_atomic
from gclsampler.trace import _fmt as F
from gclsampler.trace import _text as T
from gclsampler.trace.types import NO_REG, KernelHeader, KernelTrace, reg_name

FORMAT_LINE = ("#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] "
               "mem_width [adrrescompress?] [mem_addresses]")


def header_text(h: KernelHeader, *, imm: bool, values: bool, lineinfo: bool | None = None) -> str:
    li = h.enable_lineinfo if lineinfo is None else lineinfo
    lines = [
        f"-kernel name = {h.name}",
        f"-kernel id = {h.kernel_id}",
        f"-grid dim = ({h.grid[0]},{h.grid[1]},{h.grid[2]})",
        f"-block dim = ({h.block[0]},{h.block[1]},{h.block[2]})",
        f"-shmem = {h.shmem}",
        f"-nregs = {h.nregs}",
        f"-binary version = {h.binary_version}",
        f"-cuda stream id = {h.cuda_stream_id}",
        f"-shmem base_addr = 0x{h.shmem_base_addr:016x}",
        f"-local mem base_addr = 0x{h.local_mem_base_addr:016x}",
        f"-nvbit version = {h.nvbit_version}",
        f"-accelsim tracer version = {h.tracer_version}",
        f"-enable lineinfo = {int(li)}",
        "",
        FORMAT_LINE + (" immediate" if imm else "") + (" | reg_values" if values else ""),
        "",
    ]
    return "\n".join(lines) + "\n"


def _addr_modes(t: KernelTrace, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-instruction address mode (1 stride / 2 delta / 0 none-active) and stride."""
    n = t.n_insts
    mode = np.zeros(n, dtype=np.int8)
    stride = np.zeros(n, dtype=np.int64)
    mem = t.mem_width > 0
    cnt = t.addr_ptr[1:] - t.addr_ptr[:-1]
    mode[mem & (cnt > 0)] = 2
    a = t.addrs.view(np.int64)
    if a.size > 1:
        d = np.diff(a)  # wraps like uint64 - uint64 in C
        # diff j is within instruction i iff addr_ptr[i] <= j < addr_ptr[i+1]-1
        cand = np.flatnonzero(mem & (cnt >= 2))
        if cand.size:
            s = t.addr_ptr[cand]
            first = d[s]
            # constant stride <=> no diff of the instruction differs from its first diff
            lens = cnt[cand] - 1
            idx = np.repeat(s, lens) + T.ragged_arange(lens)
            dev = (d[idx] != np.repeat(first, lens)).astype(np.int64)
            bad = np.add.reduceat(dev, np.cumsum(lens) - lens) if dev.size else np.zeros(0, np.int64)
            ok = (bad == 0) & T.lanes_contiguous(t.mask[cand]) & (first >= -(2**31)) & (first < 2**31)
            mode[cand[ok]] = 1
            stride[cand[ok]] = first[ok]
    return mode, stride


def _value_rows(vals: np.ndarray, k_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Encoding per value row ('=', '+', '~', ':') and stride for '+' rows."""
    jit = T.compiled()
    if jit is not None:
        return jit.value_rows(np.ascontiguousarray(vals, dtype=np.uint32), np.ascontiguousarray(k_rows, dtype=np.int64))
    return _value_rows_numpy(vals, k_rows)


def _value_rows_numpy(vals: np.ndarray, k_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nrow = k_rows.shape[0]
    enc = np.full(nrow, ord(":"), dtype=np.uint8)
    stride = np.zeros(nrow, dtype=np.int64)
    if nrow == 0:
        return enc, stride
    v = vals.astype(np.int64)
    starts = np.cumsum(k_rows) - k_rows
    lens = k_rows - 1
    d = np.diff(v) if v.size > 1 else np.zeros(0, np.int64)
    idx = np.repeat(starts, lens) + T.ragged_arange(lens)
    dd = ((d[idx] + 2**31) & 0xFFFFFFFF) - 2**31 if idx.size else np.zeros(0, np.int64)
    first = np.zeros(nrow, dtype=np.int64)
    has = lens > 0
    first[has] = dd[(np.cumsum(lens) - lens)[has]]
    dev = (dd != np.repeat(first, lens)).astype(np.int64)
    nz = np.zeros(nrow, dtype=np.int64)
    if dev.size:
        seg = np.cumsum(lens) - lens
        sums = np.add.reduceat(dev, seg[has])
        nz[has] = sums
    const = nz == 0
    enc[const & (first == 0)] = ord("=")
    enc[const & (first != 0)] = ord("+")
    stride[const] = first[const]
    # delta vs list: pick the shorter text
    rest = ~const
    if rest.any():
        hexlen = np.maximum(1, (np.floor(np.log2(np.maximum(v, 1))).astype(np.int64) // 4) + 1)
        declen = (np.floor(np.log10(np.maximum(np.abs(dd), 1))).astype(np.int64) + 1 + (dd < 0)) if dd.size else dd
        hl = np.zeros(nrow, np.int64)
        dl = np.zeros(nrow, np.int64)
        if v.size:
            hl = np.add.reduceat(hexlen, starts)
            hl = hl - hexlen[starts]
        if dd.size:
            dl[has] = np.add.reduceat(declen, (np.cumsum(lens) - lens)[has])
        enc[rest & (dl < hl)] = ord("~")
    return enc, stride


_REG_TABLE = None


def _reg_table():
    global _REG_TABLE
    if _REG_TABLE is None:
        names = []
        for c in range(648):
            try:
                names.append(reg_name(c).encode())
            except ValueError:
                names.append(b"?")
        _REG_TABLE = F.table_tokens(names)
    return _REG_TABLE


def _ragged_regs(a: KernelTrace, regs: np.ndarray, asm: F.LineAssembler) -> None:
    rows, cols = np.nonzero(regs != NO_REG)
    if rows.size:
        M, L = _reg_table()
        codes = regs[rows, cols].astype(np.int64)
        asm.add(rows, M[codes], L[codes])


def _count_tokens(regs: np.ndarray, asm: F.LineAssembler) -> None:
    n = (regs != NO_REG).sum(axis=1)
    asm.add(np.arange(regs.shape[0]), *F.dec_tokens(n))


def instruction_text(t: KernelTrace, *, values: bool = True, imm: bool = True,
                     first: int = 0) -> tuple[bytes, np.ndarray]:
    """All instruction lines (warp order) as one byte string plus (N+1) line offsets.
    ``first``: the index of ``t``'s first instruction in the whole trace (for messages)."""
    n = t.n_insts
    allv = np.arange(n, dtype=np.int64)
    asm = F.LineAssembler(n)
    k = T.popcount32(t.mask) if n else np.zeros(0, np.int64)
    if t.line_num is not None:
        asm.add(allv, *F.dec_tokens(t.line_num.astype(np.int64)))
    asm.add(allv, *F.hex_tokens(t.pc.astype(np.uint64), 4))
    asm.add(allv, *F.hex_tokens(t.mask.astype(np.uint64), 8))
    _count_tokens(t.dst, asm)
    _ragged_regs(t, t.dst, asm)
    om, ol = F.table_tokens([o.encode() for o in t.opcode_table])
    asm.add(allv, om[t.opcode], ol[t.opcode])
    _count_tokens(t.src, asm)
    _ragged_regs(t, t.src, asm)
    asm.add(allv, *F.dec_tokens(t.mem_width.astype(np.int64)))
    # addresses
    mode, stride = _addr_modes(t, k)
    mem = np.flatnonzero(t.mem_width > 0)
    if mem.size:
        asm.add(mem, *F.dec_tokens(mode[mem].astype(np.int64)))
        wb = mem[mode[mem] > 0]
        asm.add(wb, *F.hex_tokens(t.addrs[t.addr_ptr[wb]], 1, b"0x"))
        m1 = mem[mode[mem] == 1]
        asm.add(m1, *F.dec_tokens(stride[m1]))
        m2 = mem[mode[mem] == 2]
        nd = (t.addr_ptr[m2 + 1] - t.addr_ptr[m2]) - 1
        if int(nd.sum()):
            idx = np.repeat(t.addr_ptr[m2] + 1, nd) + T.ragged_arange(nd)
            a = t.addrs.view(np.int64)
            asm.add(np.repeat(m2, nd), *F.dec_tokens(a[idx] - a[idx - 1]))
    if imm and t.imm is not None:
        asm.add(allv, *F.dec_tokens(t.imm))
    if values and t.values is not None:
        vp = t.value_ptr
        nv = vp[1:] - vp[:-1]
        rows = (t.dst != NO_REG).sum(axis=1) + (t.src != NO_REG).sum(axis=1)
        withv = nv > 0
        bad = withv & (nv != rows * k)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"instruction {first + i}: {int(nv[i])} values but {int(rows[i])} operands x "
                             f"{int(k[i])} lanes")
        wi = np.flatnonzero(withv)
        if wi.size:
            asm.add(wi, np.full((wi.size, 1), ord("|"), np.uint8), np.ones(wi.size, np.int64))
            krow = np.repeat(k[wi], rows[wi])
            rstart = np.repeat(vp[wi], rows[wi]) + T.ragged_arange(rows[wi]) * krow
            gidx = np.repeat(rstart, krow) + T.ragged_arange(krow)
            enc, vstride = _value_rows(t.values[gidx], krow)
            row_ptr = np.zeros(wi.size + 1, dtype=np.int64)
            np.cumsum(rows[wi], out=row_ptr[1:])
            v64 = t.values.astype(np.int64)
            for r in range(int(rows[wi].max(initial=0))):
                sel = np.flatnonzero(rows[wi] > r)
                lines = wi[sel]
                g = row_ptr[sel] + r
                st = rstart[g]
                kk = krow[g]
                e = enc[g]
                M, L = F.hex_tokens(t.values[st].astype(np.uint64), 1, b"=")
                M[np.arange(M.shape[0]), M.shape[1] - L] = e
                asm.add(lines, M, L)
                m = e == ord("+")
                asm.add(lines[m], *F.dec_tokens(vstride[g[m]]))
                for ch in (ord("~"), ord(":")):
                    m = e == ch
                    nd = kk[m] - 1
                    if not int(nd.sum()):
                        continue
                    idx = np.repeat(st[m] + 1, nd) + T.ragged_arange(nd)
                    ln = np.repeat(lines[m], nd)
                    if ch == ord(":"):
                        asm.add(ln, *F.hex_tokens(t.values[idx].astype(np.uint64), 1))
                    else:
                        d = ((v64[idx] - v64[idx - 1] + 2**31) & 0xFFFFFFFF) - 2**31
                        asm.add(ln, *F.dec_tokens(d))
    return asm.render()


# Instructions formatted in one pass. Formatting takes about 7.5 KB per instruction (token
# matrices, offsets) against about 450 B for the instruction itself, so a whole complete
# kernel at once (an alexnet conv layer: millions of warp instructions) needed tens of GB.
CHUNK_INSTS = 1 << 16


def _instruction_range(t: KernelTrace, a: int, b: int) -> KernelTrace:
    """Instructions ``[a, b)`` of ``t`` as one pseudo-warp of views: what ``instruction_text``
    reads is per instruction, so lines come out the same as in the whole trace."""
    def ragged(ptr, data):
        return (None, None) if ptr is None else T.ragged_rows(ptr, data, a, b)

    addr_ptr, addrs = ragged(t.addr_ptr, t.addrs)
    value_ptr, vals = ragged(t.value_ptr, t.values)
    cut = (lambda x: None if x is None else x[a:b])
    return KernelTrace(header=t.header, warp_cta=t.warp_cta[:0], warp_id=t.warp_id[:0],
                       warp_ptr=np.array([0, b - a], np.int64), pc=t.pc[a:b], mask=t.mask[a:b],
                       opcode=t.opcode[a:b], opcode_table=t.opcode_table, dst=t.dst[a:b], src=t.src[a:b],
                       mem_width=t.mem_width[a:b], addr_ptr=addr_ptr, addrs=addrs, line_num=cut(t.line_num),
                       imm=cut(t.imm), value_ptr=value_ptr, values=vals)


def render_chunks(t: KernelTrace, *, values: bool = True, header: KernelHeader | None = None,
                  cta_coords: np.ndarray | None = None, chunk_insts: int | None = None) -> Iterator[bytes]:
    """The grouped file in pieces (joined: ``render``), formatted ``chunk_insts`` instructions
    at a time (default ``CHUNK_INSTS``) so that memory stays bounded however long the kernel is."""
    h = header or t.header
    has_vals = values and t.values is not None
    if (t.line_num is not None) != h.enable_lineinfo:
        raise ValueError("header.enable_lineinfo must be True exactly when line_num is present")
    yield header_text(h, imm=t.imm is not None, values=has_vals).encode()
    # what precedes each warp's instruction lines: CTA boundaries and the warp's own header
    wc = np.asarray(t.warp_cta if cta_coords is None else cta_coords).tolist()
    wp = t.warp_ptr.tolist()
    wid = t.warp_id.tolist()
    seps, prev = [], None
    for w in range(t.n_warps):
        cta = tuple(wc[w])
        sep = b""
        if cta != prev:
            if prev is not None:
                sep = b"\n#END_TB\n"
            sep += f"\n#BEGIN_TB\n\nthread block = {cta[0]},{cta[1]},{cta[2]}\n".encode()
            prev = cta
        seps.append(sep + f"\nwarp = {wid[w]}\ninsts = {wp[w + 1] - wp[w]}\n".encode())
    n, w = t.n_insts, 0
    step = max(1, int(CHUNK_INSTS if chunk_insts is None else chunk_insts))
    for a in range(0, n, step):
        b = min(n, a + step)
        body, starts = instruction_text(_instruction_range(t, a, b), values=values, first=a)
        parts, cur = [], a
        while w < t.n_warps and wp[w] < b:  # warps that start inside this chunk, in order
            parts.append(body[int(starts[cur - a]):int(starts[wp[w] - a])])
            parts.append(seps[w])
            cur, w = wp[w], w + 1
        parts.append(body[int(starts[cur - a]):int(starts[b - a])])
        yield b"".join(parts)
    yield b"".join(seps[w:])  # warps without instructions at the end
    if prev is not None:
        yield b"\n#END_TB\n"


def render(t: KernelTrace, *, values: bool = True, header: KernelHeader | None = None,
           cta_coords: np.ndarray | None = None) -> bytes:
    """Whole grouped file. ``cta_coords`` overrides the per-warp CTA ids."""
    return b"".join(render_chunks(t, values=values, header=header, cta_coords=cta_coords))


def _zstd():
    import zstandard

    return zstandard.ZstdCompressor(level=3, write_checksum=True)  # a flipped bit fails to decode, not a wrong value


def _compress(p: str, data: bytes) -> bytes:
    if p.endswith(".zst"):  # one call: the frame states its content size
        return _zstd().compress(data)
    if not p.endswith((".gz", ".xz")):
        return data
    bio = io.BytesIO()
    sink = _compressing_writer(p, bio)
    sink.write(data)
    sink.close()
    return bio.getvalue()


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Compress by suffix, then write atomically (``gclsampler._atomic``: temp file + ``os.replace``)."""
    p = str(path)
    _write_bytes_atomic(p, _compress(p, data))


# Up to this much text is compressed in one call, as earlier versions did for every file (the
# same bytes); past it the rest streams through the compressor (a .zst frame then does not
# state its content size, as the zstd command line's from a pipe does not either).
ONE_SHOT_BYTES = 1 << 26


class _Plain:
    def __init__(self, fh):
        self.write = fh.write

    def close(self) -> None:
        pass


def _compressing_writer(p: str, fh):
    if p.endswith(".gz"):
        return gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="")
    if p.endswith(".xz"):
        return lzma.LZMAFile(fh, "wb", preset=1)
    if p.endswith(".zst"):
        return _zstd().stream_writer(fh, closefd=False)
    return _Plain(fh)


def write_chunks_atomic(path: str | os.PathLike, chunks: Iterable[bytes]) -> None:
    """``write_bytes_atomic`` of ``b"".join(chunks)`` without holding more than
    ``ONE_SHOT_BYTES`` of it: a complete kernel's text can be several GB."""
    p = str(path)
    it = iter(chunks)
    head, size = [], 0
    for c in it:
        head.append(c)
        size += len(c)
        if size > ONE_SHOT_BYTES:
            break
    else:
        write_bytes_atomic(p, b"".join(head))
        return
    with atomic_path(p) as tmp, open(tmp, "wb") as fh:
        sink = _compressing_writer(p, fh)
        for c in head:
            sink.write(c)
        del head
        for c in it:
            sink.write(c)
        sink.close()


def write_kernel(trace: KernelTrace, path: str | os.PathLike, *, values: bool = True) -> Path:
    """Write a grouped ``.traceg`` (compression from the suffix: .gz/.xz/.zst).

    ``values=False`` drops gclsampler's register-value extension (plain Accel-Sim).
    Raises ``ValueError`` for an inconsistent ``KernelTrace`` (a bug in the caller).
    """
    write_chunks_atomic(path, render_chunks(trace, values=values))
    return Path(path)
