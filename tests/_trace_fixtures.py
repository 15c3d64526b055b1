"""Hand-written and random KernelTraces built directly with numpy (no parser needed).

``make_trace`` takes per-warp lists of ``Inst`` and lays them out exactly as
``gclsampler.trace.types.KernelTrace`` documents (CSR addresses, value blocks of
``(ndst + nsrc, popcount(mask))`` with destinations first).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gclsampler.trace.types import NO_REG, KernelHeader, KernelTrace, reg_code


# A grouped Accel-Sim v5 trace header (``str.format`` fields: kid, gx, li), for the parser tests.
HEADER_V5 = """-kernel name = _Z6vecAddPfS_S_i
-kernel id = {kid}
-grid dim = ({gx},1,1)
-block dim = (64,1,1)
-shmem = 0
-nregs = 16
-binary version = 86
-cuda stream id = 0
-shmem base_addr = 0x00007f0000000000
-local mem base_addr = 0x00007e0000000000
-nvbit version = 1.7
-accelsim tracer version = 5
-enable lineinfo = {li}

#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate

"""


@dataclass
class Inst:
    op: str
    dst: tuple[str, ...] = ()
    src: tuple[str, ...] = ()
    mem_width: int = 0
    addrs: tuple[int, ...] = ()
    mask: int = 0xFFFFFFFF
    pc: int | None = None
    values: list[list[int]] | None = None
    """One row per operand (destinations first), one column per active lane."""
    extra: dict = field(default_factory=dict)


def popcount(x: int) -> int:
    return bin(x & 0xFFFFFFFF).count("1")


def make_trace(warps: list[list[Inst]], *, with_values: bool = True, kernel_id: int = 1,
               name: str = "synthetic_kernel") -> KernelTrace:
    """A KernelTrace from instruction lists; missing values are filled deterministically."""
    insts = [i for w in warps for i in w]
    n = len(insts)
    table: list[str] = []
    op_ids = []
    for i in insts:
        if i.op not in table:
            table.append(i.op)
        op_ids.append(table.index(i.op))
    dmax = max([len(i.dst) for i in insts] + [1])
    smax = max([len(i.src) for i in insts] + [1])
    dst = np.full((n, dmax), NO_REG, dtype=np.int16)
    src = np.full((n, smax), NO_REG, dtype=np.int16)
    pcs = np.zeros(n, dtype=np.int64)
    addr_ptr = [0]
    addrs: list[int] = []
    value_ptr = [0]
    values: list[int] = []
    k = 0
    for w in warps:
        for pos, ins in enumerate(w):
            for j, r in enumerate(ins.dst):
                dst[k, j] = reg_code(r)
            for j, r in enumerate(ins.src):
                src[k, j] = reg_code(r)
            pcs[k] = ins.pc if ins.pc is not None else 16 * pos
            lanes = popcount(ins.mask)
            if ins.mem_width > 0:
                a = list(ins.addrs) if ins.addrs else [0x1000 + 4 * l for l in range(lanes)]
                assert len(a) == lanes, "one address per active lane"
                addrs += a
            addr_ptr.append(len(addrs))
            rows = len(ins.dst) + len(ins.src)
            if with_values:
                if ins.values is not None:
                    assert len(ins.values) == rows and all(len(r) == lanes for r in ins.values)
                    for r in ins.values:
                        values += [int(v) & 0xFFFFFFFF for v in r]
                else:
                    values += [(100 * (row + 1) + lane) for row in range(rows) for lane in range(lanes)]
            value_ptr.append(len(values))
            k += 1
    sizes = [len(w) for w in warps]
    warp_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    header = KernelHeader(name=name, kernel_id=kernel_id, grid=(1, 1, 1), block=(32 * max(len(warps), 1), 1, 1))
    return KernelTrace(
        header=header,
        warp_cta=np.zeros((len(warps), 3), dtype=np.int32),
        warp_id=np.arange(len(warps), dtype=np.int32),
        warp_ptr=warp_ptr,
        pc=pcs,
        mask=np.array([i.mask for i in insts], dtype=np.uint32),
        opcode=np.array(op_ids, dtype=np.int32),
        opcode_table=tuple(table),
        dst=dst,
        src=src,
        mem_width=np.array([i.mem_width for i in insts], dtype=np.int32),
        addr_ptr=np.array(addr_ptr, dtype=np.int64),
        addrs=np.array(addrs, dtype=np.uint64),
        value_ptr=np.array(value_ptr, dtype=np.int64) if with_values else None,
        values=np.array(values, dtype=np.uint32) if with_values else None,
    )


_ALU = ("IADD3", "FFMA", "IMAD.MOV.U32", "LOP3.LUT", "FADD", "ISETP.GE.AND", "MOV")
_REGS = ("R0", "R1", "R2", "R3", "R4", "RZ", "P0", "UR4")


def random_trace(rng: np.random.Generator, *, n_warps: int | None = None, max_len: int = 20,
                 with_values: bool = True) -> KernelTrace:
    """Small random trace mixing ALU ops, loads, stores and atomics over a few registers."""
    n_warps = n_warps or int(rng.integers(1, 4))
    warps = []
    for _ in range(n_warps):
        insts = []
        for _ in range(int(rng.integers(1, max_len + 1))):
            mask = int(rng.integers(1, 2**32)) if rng.random() < 0.3 else 0xFFFFFFFF
            lanes = popcount(mask)
            r = rng.random()
            if r < 0.2:
                op, dst, src = "LDG.E", (str(rng.choice(_REGS[:5])),), (str(rng.choice(_REGS[:5])),)
            elif r < 0.3:
                op, dst, src = "STS", (), tuple(str(x) for x in rng.choice(_REGS, 2))
            elif r < 0.35:
                op, dst, src = "ATOMG.ADD", (str(rng.choice(_REGS[:5])),), tuple(str(x) for x in rng.choice(_REGS, 2))
            else:
                op = str(rng.choice(_ALU))
                dst = tuple(str(x) for x in rng.choice(_REGS, int(rng.integers(0, 2))))
                src = tuple(str(x) for x in rng.choice(_REGS, int(rng.integers(0, 4))))
            mem = op.split(".")[0] in ("LDG", "STS", "ATOMG")
            addrs = ()
            if mem:
                base = int(rng.integers(0, 8)) * 64
                stride = int(rng.choice([0, 4, 8, 128]))
                addrs = tuple(base + stride * l for l in range(lanes))
            insts.append(Inst(op, dst, src, mem_width=4 if mem else 0, addrs=addrs, mask=mask))
        warps.append(insts)
    return make_trace(warps, with_values=with_values)


def export_warp_order(t) -> list:
    """Per warp of ``t``'s Accel-Sim export: the index of the warp of ``t`` it is, or None for a
    warp the export adds (a warp of a traced CTA that ``t`` does not list, written as one EXIT at
    the end of its CTA)."""
    import numpy as np

    wpc = max(1, -(-int(t.header.threads_per_cta) // 32))
    order, w = [], 0
    while w < t.n_warps:
        e = w
        while e < t.n_warps and (t.warp_cta[e] == t.warp_cta[w]).all():
            e += 1
        order += list(range(w, e))
        order += [None] * np.setdiff1d(np.arange(wpc), t.warp_id[w:e]).size
        w = e
    return order
