"""Random (SYNTHETIC) ``KernelTrace`` objects for property tests and the parse benchmark.

These are not GPU programs: PCs, opcodes and values are random draws that only
respect the trace grammar and the ``KernelTrace`` invariants (opcode table in
order of first appearance, operand matrices as wide as the widest row, value
blocks either empty or ``(ndst+nsrc) x popcount(mask)``).
"""

from __future__ import annotations

import numpy as np

from gclsampler.trace import _text as T
from gclsampler.trace.types import NO_REG, KernelHeader, KernelTrace

OPCODES = ("IMAD.MOV.U32", "LDG.E.128", "STG.E", "FFMA", "ISETP.GE.AND", "BRA", "EXIT",
           "LDS.U.32", "HMMA.16816.F32", "S2R", "IADD3", "LDGSTS.E.BYPASS.128", "BAR.SYNC", "DEPBAR.LE")
_REG_POOL = np.array(list(range(0, 40)) + [255, 256 + 3, 256 + 63, 512, 512 + 7, 640 + 1], dtype=np.int16)


def random_kernel_trace(rng: np.random.Generator, *, n_warps: int = 4, max_insts: int = 20,
                        line_num: bool = False, imm: bool = True, values: bool = True,
                        max_dst: int = 2, max_src: int = 4, kernel_id: int = 1,
                        mem_frac: float = 0.3, dense: bool = False) -> KernelTrace:
    """``dense=True`` mimics real tracer output: mostly full masks and coalesced addresses."""
    grid = (int(rng.integers(1, 4)), int(rng.integers(1, 3)), 1)
    block = (32 * int(rng.integers(1, 5)), 1, 1)
    wpc = block[0] // 32
    # warps grouped by CTA, warp ids ascending within a CTA
    ctas = [(x, y, 0) for y in range(grid[1]) for x in range(grid[0])]
    pairs = [(c, w) for c in ctas for w in range(wpc)]
    n_warps = min(n_warps, len(pairs))
    pick = np.sort(rng.choice(len(pairs), size=n_warps, replace=False))
    warp_cta = [pairs[i][0] for i in pick.tolist()]
    warp_id = [pairs[i][1] for i in pick.tolist()]
    counts = rng.integers(0, max_insts + 1, size=n_warps)
    N = int(counts.sum())
    warp_ptr = np.zeros(n_warps + 1, dtype=np.int64)
    np.cumsum(counts, out=warp_ptr[1:])
    masks = rng.choice(np.array([0xFFFFFFFF, 0x0000FFFF, 0x1, 0x0, 0xF0F0F0F0, 0x80000000, 0x7FFFFFFE],
                                dtype=np.uint32), size=N)
    rand_masks = rng.integers(0, 2**32, size=N, dtype=np.uint64).astype(np.uint32)
    masks = np.where(rng.random(N) < 0.3, rand_masks, masks).astype(np.uint32)
    if dense:
        masks = np.where(rng.random(N) < 0.9, np.uint32(0xFFFFFFFF), masks).astype(np.uint32)
    ops_used = rng.integers(0, len(OPCODES), size=N)
    # opcode table in order of first appearance
    uniq, first = np.unique(ops_used, return_index=True)
    order = uniq[np.argsort(first)]
    remap = np.zeros(len(OPCODES), dtype=np.int32)
    remap[order] = np.arange(order.size)
    opcode = remap[ops_used].astype(np.int32)
    table = tuple(OPCODES[i] for i in order.tolist())
    nd = rng.integers(0, max_dst + 1, size=N)
    ns = rng.integers(0, max_src + 1, size=N)
    dmax = int(nd.max(initial=0))
    smax = int(ns.max(initial=0))
    dst = np.full((N, dmax), NO_REG, dtype=np.int16)
    src = np.full((N, smax), NO_REG, dtype=np.int16)
    for j in range(dmax):
        sel = nd > j
        dst[sel, j] = rng.choice(_REG_POOL, size=int(sel.sum()))
    for j in range(smax):
        sel = ns > j
        src[sel, j] = rng.choice(_REG_POOL, size=int(sel.sum()))
    mem = rng.random(N) < mem_frac
    mw = np.where(mem, rng.choice(np.array([1, 2, 4, 8, 16]), size=N), 0).astype(np.int32)
    k = T.popcount32(masks)
    na = np.where(mem, k, 0)
    addr_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(na, out=addr_ptr[1:])
    A = int(addr_ptr[-1])
    base = np.repeat(rng.integers(0, 2**48, size=N, dtype=np.uint64), na)
    style = np.repeat(rng.choice(np.array([0, 0, 0, 0, 2]) if dense else np.arange(3), size=N), na)
    r = T.ragged_arange(na).astype(np.uint64)
    stride = np.repeat(rng.choice(np.array([4, 8, 16, 0, 128], dtype=np.uint64), size=N), na)
    addrs = np.where(style == 0, base + r * stride,
                     np.where(style == 1, rng.integers(0, 2**64 - 1, size=A, dtype=np.uint64),
                              base + rng.integers(0, 4096, size=A, dtype=np.uint64)))
    pc = (rng.integers(0, 4096, size=N) * 16).astype(np.int64)
    kt = dict(
        header=KernelHeader(
            name=f"_Z6kernel{kernel_id}Pfi", kernel_id=kernel_id, grid=grid, block=block,
            shmem=int(rng.integers(0, 49152)), nregs=int(rng.integers(8, 255)),
            binary_version=86, cuda_stream_id=int(rng.integers(0, 2**40)),
            shmem_base_addr=int(rng.integers(0, 2**48)), local_mem_base_addr=int(rng.integers(0, 2**48)),
            nvbit_version="1.7", tracer_version=5 if imm else 3, enable_lineinfo=line_num),
        warp_cta=np.array(warp_cta, dtype=np.int32).reshape(n_warps, 3),
        warp_id=np.array(warp_id, dtype=np.int32), warp_ptr=warp_ptr, pc=pc, mask=masks,
        opcode=opcode, opcode_table=table, dst=dst, src=src, mem_width=mw,
        addr_ptr=addr_ptr, addrs=addrs.astype(np.uint64),
        line_num=rng.integers(0, 5000, size=N).astype(np.int32) if line_num else None,
        imm=(np.where(rng.random(N) < (0.95 if dense else 0.2), 0, rng.integers(-2**40, 2**40, size=N))
             .astype(np.int64) if imm else None),
    )
    if values:
        rows = nd + ns
        with_v = rng.random(N) < 0.8
        nv = np.where(with_v, rows * k, 0)
        vptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(nv, out=vptr[1:])
        V = int(vptr[-1])
        rk = np.repeat(k[with_v & (rows > 0)], rows[with_v & (rows > 0)]) if V else np.zeros(0, np.int64)
        kind = np.repeat(rng.choice(np.array([0, 0, 1, 2, 3]) if dense else np.arange(4), size=rk.size), rk)
        rb = np.repeat(rng.integers(0, 2**32, size=rk.size, dtype=np.uint64), rk)
        rr = T.ragged_arange(rk).astype(np.uint64)
        vals = np.where(kind == 0, rb, np.where(kind == 1, rb + rr * np.uint64(4),
                        np.where(kind == 2, rb + rng.integers(0, 50, size=V, dtype=np.uint64),
                                 rng.integers(0, 2**32, size=V, dtype=np.uint64))))
        kt["value_ptr"] = vptr
        kt["values"] = (vals & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return KernelTrace(**kt)
