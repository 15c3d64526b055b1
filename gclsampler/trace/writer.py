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
import tempfile
from pathlib import Path

import numpy as np

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
            # max |d - first| over the instruction's diffs == 0  <=> constant stride
            seg_ptr = np.concatenate([t.addr_ptr[cand], ])  # starts of diffs
            lens = cnt[cand] - 1
            idx = np.repeat(s, lens) + T.ragged_arange(lens)
            dev = (d[idx] != np.repeat(first, lens)).astype(np.int64)
            bad = np.add.reduceat(dev, np.cumsum(lens) - lens) if dev.size else np.zeros(0, np.int64)
            m = t.mask[cand].astype(np.uint64)
            low = m & (~m + np.uint64(1))
            contig = ((m + low) & m) == 0
            ok = (bad == 0) & contig & (first >= -(2**31)) & (first < 2**31)
            mode[cand[ok]] = 1
            stride[cand[ok]] = first[ok]
            del seg_ptr
    return mode, stride


def _value_rows(vals: np.ndarray, k_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Encoding per value row ('=', '+', '~', ':') and stride for '+' rows."""
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


def trace_lines(t: KernelTrace, *, values: bool = True, imm: bool = True,
                keep_regs: np.ndarray | None = None) -> list[list[str]]:
    """Instruction lines per warp as strings (no newline)."""
    n = t.n_insts
    k = T.popcount32(t.mask) if n else np.zeros(0, np.int64)
    mode, stride = _addr_modes(t, k)
    pcs = [format(x, "04x") for x in t.pc.tolist()]
    masks = [format(x, "08x") for x in t.mask.tolist()]
    ops = t.opcode_table
    opc = t.opcode.tolist()
    mw = t.mem_width.tolist()
    reg_names = {}

    def rn(c):
        s = reg_names.get(c)
        if s is None:
            s = reg_names[c] = reg_name(c)
        return s

    dst = t.dst.tolist()
    src = t.src.tolist()
    ln = t.line_num.tolist() if t.line_num is not None else None
    im = t.imm.tolist() if (t.imm is not None and imm) else None
    addrs = t.addrs.tolist()
    ap = t.addr_ptr.tolist()
    modes = mode.tolist()
    strides = stride.tolist()
    # value rows
    use_vals = values and t.values is not None
    if use_vals:
        vp = t.value_ptr
        nv = vp[1:] - vp[:-1]
        rows = (t.dst != NO_REG).sum(axis=1) + (t.src != NO_REG).sum(axis=1)
        withv = nv > 0
        bad = withv & (nv != rows * k)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"instruction {i}: {int(nv[i])} values but {int(rows[i])} operands x "
                             f"{int(k[i])} lanes")
        krow = np.repeat(k[withv], rows[withv])
        enc, vstride = _value_rows(t.values[vp[0]:vp[-1]] if vp.size else t.values, krow)
        row_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.where(withv, rows, 0), out=row_ptr[1:])
        enc_l = enc.tolist()
        vstr = vstride.tolist()
        vals = t.values.tolist()
        vpl = vp.tolist()
        rpl = row_ptr.tolist()
        kl = k.tolist()
    out = []
    for w in range(t.n_warps):
        lines = []
        for i in range(int(t.warp_ptr[w]), int(t.warp_ptr[w + 1])):
            parts = []
            if ln is not None:
                parts.append(str(ln[i]))
            ds = [rn(c) for c in dst[i] if c != NO_REG]
            ss = [rn(c) for c in src[i] if c != NO_REG]
            parts += [pcs[i], masks[i], str(len(ds)), *ds, ops[opc[i]], str(len(ss)), *ss, str(mw[i])]
            if mw[i] > 0:
                a0, a1 = ap[i], ap[i + 1]
                md = modes[i]
                if md == 0:
                    parts.append("0")
                elif md == 1:
                    parts += ["1", f"0x{addrs[a0]:x}", str(strides[i])]
                else:
                    parts += ["2", f"0x{addrs[a0]:x}"]
                    prev = addrs[a0]
                    for a in addrs[a0 + 1:a1]:
                        dlt = (a - prev) & 0xFFFFFFFFFFFFFFFF
                        parts.append(str(dlt - (1 << 64) if dlt >= 1 << 63 else dlt))
                        prev = a
            if im is not None:
                parts.append(str(im[i]))
            if use_vals and vpl[i + 1] > vpl[i]:
                parts.append("|")
                kk = kl[i]
                base = vpl[i]
                for r in range(rpl[i], rpl[i + 1]):
                    row = vals[base:base + kk]
                    base += kk
                    e = enc_l[r]
                    if e == 61:  # '='
                        parts.append(f"={row[0]:x}")
                    elif e == 43:  # '+'
                        parts += [f"+{row[0]:x}", str(vstr[r])]
                    elif e == 126:  # '~'
                        parts.append(f"~{row[0]:x}")
                        prev = row[0]
                        for v in row[1:]:
                            dlt = (v - prev) & 0xFFFFFFFF
                            parts.append(str(dlt - (1 << 32) if dlt >= 1 << 31 else dlt))
                            prev = v
                    else:
                        parts.append(f":{row[0]:x}")
                        parts += [f"{v:x}" for v in row[1:]]
            lines.append(" ".join(parts))
        out.append(lines)
    return out


def render(t: KernelTrace, *, values: bool = True, header: KernelHeader | None = None,
           cta_coords: np.ndarray | None = None) -> str:
    """Whole grouped file as text. ``cta_coords`` overrides the per-warp CTA ids."""
    h = header or t.header
    has_vals = values and t.values is not None
    if (t.line_num is not None) != h.enable_lineinfo:
        raise ValueError("header.enable_lineinfo must be True exactly when line_num is present")
    parts = [header_text(h, imm=t.imm is not None, values=has_vals)]
    per_warp = trace_lines(t, values=values)
    wc = t.warp_cta if cta_coords is None else cta_coords
    prev = None
    for w in range(t.n_warps):
        cta = tuple(int(x) for x in wc[w])
        if cta != prev:
            if prev is not None:
                parts.append("\n#END_TB\n")
            parts.append(f"\n#BEGIN_TB\n\nthread block = {cta[0]},{cta[1]},{cta[2]}\n")
            prev = cta
        body = per_warp[w]
        parts.append(f"\nwarp = {int(t.warp_id[w])}\ninsts = {len(body)}\n")
        if body:
            parts.append("\n".join(body))
            parts.append("\n")
    if prev is not None:
        parts.append("\n#END_TB\n")
    return "".join(parts)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Compress by suffix and write via a temp file in the same directory + ``os.replace``."""
    p = str(path)
    if p.endswith(".gz"):
        bio = io.BytesIO()
        with gzip.GzipFile(fileobj=bio, mode="wb", mtime=0, filename="") as g:
            g.write(data)
        data = bio.getvalue()
    elif p.endswith(".xz"):
        data = lzma.compress(data, preset=1)
    elif p.endswith(".zst"):
        import zstandard

        data = zstandard.ZstdCompressor(level=3).compress(data)
    d = os.path.dirname(os.path.abspath(p))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(p))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_kernel(trace: KernelTrace, path: str | os.PathLike, *, values: bool = True) -> Path:
    """Write a grouped ``.traceg`` (compression from the suffix: .gz/.xz/.zst).

    ``values=False`` drops gclsampler's register-value extension (plain Accel-Sim).
    Raises ``ValueError`` for an inconsistent ``KernelTrace`` (a bug in the caller).
    """
    text = render(trace, values=values)
    write_bytes_atomic(path, text.encode())
    return Path(path)
