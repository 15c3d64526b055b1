"""SASS-level kernel programs and the vectorised warp interpreter that runs them.

A kernel family is written once as a small *structured* SASS program (straight
instruction runs, counted loops, if-blocks, guarded EXITs) with a builder that
allocates registers the way ptxas would name them (R0..R254, UR4.., P0..P6). The
interpreter then executes that program for every traced warp at once: register
files are numpy arrays of shape (warps, 32), divergence is an active-lane mask of
the same shape, and each executed instruction appends one record per issuing warp.
Because loops stay structured, a warp that leaves a loop early simply has no
lanes in the mask for the remaining iterations, which is exactly SIMT
reconvergence at the loop's BSYNC point.

Why structured rather than a PC-driven machine: warps of one kernel run the same
control flow with different trip counts, so lock-stepping them through the tree
keeps every step a handful of numpy ops over (W, 32) arrays, never a Python
object per dynamic instruction. Loop trip counts still come from register
values (launch parameters and loaded data), and the loop's ISETP/BRA compare
those real values.

Registers hold typed arrays: integers/addresses as int64 (a register pair R4.64
in real SASS keeps its full value here), floats as float32. The trace records
the low 32 bits (floats as their IEEE bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from gclsampler.trace._text import popcount32, ragged_arange
from gclsampler.trace.types import KernelHeader, KernelTrace, reg_code

PC_STEP = 16  # Ampere instructions are 128-bit
RZ = reg_code("RZ")
URZ = reg_code("URZ")
_BITS = (np.uint64(1) << np.arange(32, dtype=np.uint64)).astype(np.uint64)
_LANE = np.arange(32, dtype=np.int64)


# ----------------------------------------------------------------------------- program tree
@dataclass(eq=False)
class Inst:
    """One static SASS instruction. At most 1 destination and 4 source registers (Accel-Sim)."""

    op: str
    dst: tuple[int, ...] = ()
    src: tuple[int, ...] = ()
    fn: Callable | None = None  # fn(m, *src_values) -> dst value (or predicate for pdst)
    pdst: int | None = None  # predicate written by ISETP/FSETP/...
    guard: tuple[int, bool] | None = None  # (@P idx, negated)
    mem: int = 0  # bytes per lane, 0 = not a memory instruction
    space: str = ""  # "g" global, "s" shared
    addr: Callable | None = None  # addr(m, *src_values) -> int64 (W, 32)
    load: bool = False  # destination filled from memory
    nregs_written: int = 1  # vector loads fill consecutive registers
    imm: int = 0
    pc: int = -1
    sid: int = -1


@dataclass(eq=False)
class Loop:
    """``do { body; idx += step } while (idx < end)`` with a guarding pre-check.

    Compiled as: ISETP.GE P, idx, end; @P BRA exit; body; IADD3 idx, idx, step;
    ISETP.LT P, idx, end; @P BRA top. Lanes leave when their own compare fails.
    """

    idx: int
    end: int
    step: int  # register holding the step
    body: list
    pre: list  # the pre-check instructions
    post: list  # increment, compare, back-edge branch
    pred: int

    @property
    def straight(self) -> bool:
        return all(isinstance(n, Inst) and n.op != "EXIT" for n in self.body)


@dataclass(eq=False)
class If:
    """BSSY; @!P BRA join; body; join: BSYNC. Lanes with P false skip the body."""

    pred: int
    neg: bool
    body: list
    head: list  # BSSY, BRA
    tail: list  # BSYNC


@dataclass
class Program:
    name: str
    body: list
    insts: list  # static instructions in PC order
    nregs: int
    shmem: int = 0
    slots: tuple = ()  # integer kernel-parameter values, in ULDC order

    def signature(self) -> tuple:
        """Static identity: two programs with equal signatures differ only in their ULDC integers."""
        return (self.shmem, self.nregs, tuple((i.op, i.dst, i.src, i.imm, i.guard, i.pdst) for i in self.insts))


# ----------------------------------------------------------------------------- builder
class Builder:
    """Emits a structured SASS program; each method returns the destination register code."""

    def __init__(self, name: str, shmem: int = 0):
        self.name = name
        self.shmem = shmem
        self._stack: list[list] = [[]]
        self._next_r = 0
        self._next_ur = 4
        self._next_p = 0
        self.slots: list[int] = []
        self._max_r = 0

    # registers -------------------------------------------------------------
    def r(self, n: int = 1) -> int:
        """Fresh general register (``n`` consecutive for vector loads)."""
        code = self._next_r
        self._next_r += n
        self._max_r = max(self._max_r, self._next_r)
        if self._next_r > 254:
            raise RuntimeError(f"{self.name}: out of registers")
        return code

    def scope(self):
        """Registers allocated inside the ``with`` block are dead after it and get reused
        (ptxas-style allocation for unrolled code)."""
        return _RegScope(self)

    def ur(self) -> int:
        code = 256 + self._next_ur
        self._next_ur += 1
        return code

    def p(self) -> int:
        code = self._next_p
        self._next_p = (self._next_p + 1) % 7
        return code

    def emit(self, inst: Inst) -> Inst:
        if len(inst.dst) > 1 or len(inst.src) > 4:
            raise RuntimeError(f"{inst.op}: Accel-Sim allows 1 dst / 4 src")
        self._stack[-1].append(inst)
        return inst

    def _op(self, op, srcs, fn, dst=None, **kw) -> int:
        d = self.r() if dst is None else dst
        self.emit(Inst(op, (d,), tuple(srcs), fn, **kw))
        return d

    # special / constant -------------------------------------------------------
    def s2r(self, sr: str, dst=None) -> int:
        return self._op("S2R", (), lambda m: m.special(sr), dst=dst, imm=hash_sr(sr))

    def uldc(self, value: int | float, dst=None) -> int:
        """Kernel parameter from the constant bank into a uniform register.

        Integer parameters get a slot so one interpreter batch can run several
        launches of the same program with different arguments (pointers, sizes).
        """
        d = self.ur() if dst is None else dst
        if isinstance(value, float):
            v = np.float32(value)
            self.emit(Inst("ULDC", (d,), (), lambda m, v=v: np.full(m.shape, v, np.float32)))
        else:
            v = int(value)
            slot = len(self.slots)
            self.slots.append(v)
            wide = v >= 2**31 or v < -(2**31)
            self.emit(Inst("ULDC.64" if wide else "ULDC", (d,), (), lambda m, s=slot, v=v: m.param(s, v)))
        return d

    def mov(self, a: int, dst=None) -> int:
        return self._op("MOV", (a,), lambda m, x: x.copy(), dst=dst)

    def movi(self, value, dst=None) -> int:
        if isinstance(value, float):
            v = np.float32(value)
            return self._op("MOV", (), lambda m: np.full(m.shape, v, np.float32), dst=dst, imm=int(np.float32(v).view(np.uint32)))
        v = int(value)
        return self._op("MOV", (), lambda m: np.full(m.shape, v, np.int64), dst=dst, imm=v & 0xFFFFFFFF)

    # integer ----------------------------------------------------------------
    def iadd3(self, a, b, c=RZ, dst=None) -> int:
        return self._op("IADD3", (a, b, c), lambda m, x, y, z: _i(x) + _i(y) + _i(z), dst=dst)

    def iaddi(self, a, imm: int, dst=None) -> int:
        return self._op("IADD3", (a, RZ), lambda m, x, z: _i(x) + imm, dst=dst, imm=imm & 0xFFFFFFFF)

    def imad(self, a, b, c, dst=None) -> int:
        return self._op("IMAD", (a, b, c), lambda m, x, y, z: _i(x) * _i(y) + _i(z), dst=dst)

    def imadi(self, a, imm: int, c, dst=None) -> int:
        return self._op("IMAD", (a, c), lambda m, x, z: _i(x) * imm + _i(z), dst=dst, imm=imm)

    def wide(self, idx, scale: int, base, dst=None) -> int:
        """IMAD.WIDE: 64-bit address = base + idx * scale (element size)."""
        return self._op("IMAD.WIDE", (idx, base), lambda m, x, b: _i(b) + _i(x) * scale, dst=dst, imm=scale)

    def divi(self, a, d: int, dst=None) -> int:
        """Unsigned division by a launch constant (IMAD.HI.U32 magic-number sequence)."""
        return self._op("IMAD.HI.U32", (a, RZ), lambda m, x, z: _i(x) // d, dst=dst, imm=d)

    def remi(self, a, q, d: int, dst=None) -> int:
        """a - q*d, the second half of a division-by-constant."""
        return self._op("IMAD", (q, a), lambda m, y, x: _i(x) - _i(y) * d, dst=dst, imm=(-d) & 0xFFFFFFFF)

    def lea(self, a, b, shift: int, dst=None) -> int:
        return self._op("LEA", (a, b), lambda m, x, y: (_i(x) << shift) + _i(y), dst=dst, imm=shift)

    def shf(self, a, shift: int, dst=None) -> int:
        return self._op("SHF.R.U32.HI", (RZ, a), lambda m, z, x: _i(x) >> shift, dst=dst, imm=shift)

    def lop3(self, a, b, kind: str, dst=None) -> int:
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
        return self._op("LOP3.LUT", (a, b, RZ), lambda m, x, y, z: f(_i(x), _i(y)), dst=dst)

    def andi(self, a, imm: int, dst=None) -> int:
        return self._op("LOP3.LUT", (a, RZ), lambda m, x, z: _i(x) & imm, dst=dst, imm=imm)

    def isetp(self, cmp: str, a, b, pdst=None) -> int:
        p = self.p() if pdst is None else pdst
        f = _CMP[cmp]
        self.emit(Inst(f"ISETP.{cmp.upper()}.AND", (), (a, b), lambda m, x, y: f(_i(x), _i(y)), pdst=p))
        return p

    def fsetp(self, cmp: str, a, b, pdst=None) -> int:
        p = self.p() if pdst is None else pdst
        f = _CMP[cmp]
        self.emit(Inst(f"FSETP.{cmp.upper()}.AND", (), (a, b), lambda m, x, y: f(_f(x), _f(y)), pdst=p))
        return p

    def sel(self, a, b, pred: int, dst=None) -> int:
        return self._op("SEL", (a, b), lambda m, x, y: _bits_where(m.preds[pred], x, y), dst=dst)

    def fsel(self, a, b, pred: int, dst=None) -> int:
        return self._op("FSEL", (a, b), lambda m, x, y: np.where(m.preds[pred], _f(x), _f(y)), dst=dst)

    # float ------------------------------------------------------------------
    def ffma(self, a, b, c, dst=None) -> int:
        return self._op("FFMA", (a, b, c), lambda m, x, y, z: _f(x) * _f(y) + _f(z), dst=dst)

    def fadd(self, a, b, dst=None) -> int:
        return self._op("FADD", (a, b), lambda m, x, y: _f(x) + _f(y), dst=dst)

    def fsub(self, a, b, dst=None) -> int:
        return self._op("FADD", (a, b), lambda m, x, y: _f(x) - _f(y), dst=dst)

    def imnmx(self, a, b, is_max=False, dst=None) -> int:
        f = np.maximum if is_max else np.minimum
        return self._op("IMNMX", (a, b), lambda m, x, y: f(_i(x), _i(y)), dst=dst)

    def fmul(self, a, b, dst=None) -> int:
        return self._op("FMUL", (a, b), lambda m, x, y: _f(x) * _f(y), dst=dst)

    def fmuli(self, a, c: float, dst=None) -> int:
        c32 = np.float32(c)
        return self._op("FMUL", (a,), lambda m, x: _f(x) * c32, dst=dst, imm=int(c32.view(np.uint32)))

    def fmnmx(self, a, b, is_max=True, dst=None) -> int:
        f = np.maximum if is_max else np.minimum
        return self._op("FMNMX", (a, b), lambda m, x, y: f(_f(x), _f(y)), dst=dst)

    def mufu(self, kind: str, a, dst=None) -> int:
        f = _MUFU[kind]
        return self._op(f"MUFU.{kind}", (a,), lambda m, x: f(_f(x)).astype(np.float32), dst=dst)

    def i2f(self, a, dst=None) -> int:
        return self._op("I2F", (a,), lambda m, x: _i(x).astype(np.float32), dst=dst)

    def f2f(self, a, dst=None, to="F16.F32") -> int:
        """Precision conversion; values are rounded through fp16 so they stay plausible."""
        return self._op(f"F2F.{to}", (a,), lambda m, x: _f(x).astype(np.float16).astype(np.float32), dst=dst)

    def hmma(self, a, b, c, dst=None) -> int:
        """HMMA.16816.F32: each lane's accumulator gets a dot product over its quad's fragments."""

        def fn(m, x, y, z):
            xf, yf = _f(x), _f(y)
            quad = (xf.reshape(xf.shape[0], 8, 4) * yf.reshape(yf.shape[0], 8, 4)).sum(axis=2)
            return (_f(z) + np.repeat(quad, 4, axis=1)).astype(np.float32)

        return self._op("HMMA.16816.F32", (a, b, c), fn, dst=dst)

    def shfl(self, kind: str, a, arg: int, dst=None) -> int:
        """SHFL.BFLY/DOWN/IDX with an immediate lane argument (out-of-range lanes keep their value)."""
        if kind == "BFLY":
            src_lane = _LANE ^ arg
        elif kind == "DOWN":
            src_lane = np.where(_LANE + arg < 32, _LANE + arg, _LANE)
        elif kind == "IDX":
            src_lane = np.full(32, arg, np.int64)
        else:
            raise ValueError(kind)
        return self._op(f"SHFL.{kind}", (a, RZ), lambda m, x, z: x[:, src_lane], dst=dst, imm=arg)

    # memory -----------------------------------------------------------------
    def ldg(self, addr_reg, width: int = 4, off: int = 0, dst=None, guard=None) -> int:
        n = max(1, width // 4)
        d = self.r(n) if dst is None else dst
        op = {1: "LDG.E.U8", 2: "LDG.E.U16", 4: "LDG.E", 8: "LDG.E.64", 16: "LDG.E.128"}[width]
        self.emit(Inst(op, (d,), (addr_reg,), None, mem=width, space="g", load=True, nregs_written=n,
                       addr=lambda m, a: _i(a) + off, imm=off, guard=guard))
        return d

    def stg(self, addr_reg, val_reg, width: int = 4, off: int = 0, guard=None) -> None:
        op = {2: "STG.E.U16", 4: "STG.E", 8: "STG.E.64", 16: "STG.E.128"}[width]
        self.emit(Inst(op, (), (addr_reg, val_reg), None, mem=width, space="g",
                       addr=lambda m, a, v: _i(a) + off, imm=off, guard=guard))

    def red(self, addr_reg, val_reg, op="RED.E.ADD.F32.FTZ.RN", guard=None) -> None:
        self.emit(Inst(op, (), (addr_reg, val_reg), None, mem=4, space="g",
                       addr=lambda m, a, v: _i(a), guard=guard))

    def atom(self, addr_reg, val_reg, op="ATOM.E.ADD", guard=None) -> int:
        d = self.r()
        self.emit(Inst(op, (d,), (addr_reg, val_reg), None, mem=4, space="g", load=True,
                       addr=lambda m, a, v: _i(a), guard=guard))
        return d

    def lds(self, addr_reg, width: int = 4, off: int = 0, dst=None) -> int:
        n = max(1, width // 4)
        d = self.r(n) if dst is None else dst
        op = {4: "LDS", 8: "LDS.64", 16: "LDS.128"}[width]
        self.emit(Inst(op, (d,), (addr_reg,), None, mem=width, space="s", load=True, nregs_written=n,
                       addr=lambda m, a: _i(a) + off, imm=off))
        return d

    def sts(self, addr_reg, val_reg, width: int = 4, off: int = 0, guard=None) -> None:
        op = {4: "STS", 8: "STS.64", 16: "STS.128"}[width]
        self.emit(Inst(op, (), (addr_reg, val_reg), None, mem=width, space="s",
                       addr=lambda m, a, v: _i(a) + off, imm=off, guard=guard))

    def ldsm(self, addr_reg, dst=None) -> int:
        d = self.r(4) if dst is None else dst
        self.emit(Inst("LDSM.16.M88.4", (d,), (addr_reg,), None, mem=16, space="s", load=True,
                       nregs_written=4, addr=lambda m, a: _i(a)))
        return d

    def ldgsts(self, sh_addr, g_addr, off: int = 0) -> None:
        """Asynchronous global->shared copy; the trace lists the global addresses."""
        self.emit(Inst("LDGSTS.E.BYPASS.LTC128B.128", (), (sh_addr, g_addr), None, mem=16, space="g",
                       addr=lambda m, s, g: _i(g) + off, imm=off))

    def simple(self, op: str, srcs=(), imm: int = 0) -> None:
        """No-destination control/sync instruction (BAR.SYNC, LDGDEPBAR, DEPBAR.LE, ...)."""
        self.emit(Inst(op, (), tuple(srcs), None, imm=imm))

    def exit_if(self, pred: int | None = None, neg=False) -> None:
        self.emit(Inst("EXIT", guard=None if pred is None else (pred, neg)))

    # structure ----------------------------------------------------------------
    def loop(self, idx: int, end: int, step: int):
        """Context manager: body of a loop ``while idx < end: ...; idx += step``."""
        return _LoopCtx(self, idx, end, step)

    def if_(self, pred: int, neg: bool = False):
        return _IfCtx(self, pred, neg)

    def build(self) -> Program:
        body = self._stack[0]
        if not body or not (isinstance(body[-1], Inst) and body[-1].op == "EXIT" and body[-1].guard is None):
            self.exit_if()
        insts: list[Inst] = []
        _flatten(body, insts)
        for i, inst in enumerate(insts):
            inst.pc = i * PC_STEP
            inst.sid = i
        # the branch targets: imm of BRA = target pc (for realism of the imm column only)
        _fix_branches(body)
        nregs = min(255, ((self._max_r + 2 + 7) // 8) * 8)
        return Program(self.name, body, insts, nregs, self.shmem, tuple(self.slots))


class _RegScope:
    def __init__(self, b: Builder):
        self.b = b

    def __enter__(self):
        self.mark = self.b._next_r
        return self

    def __exit__(self, *exc):
        self.b._next_r = self.mark
        return False


class _LoopCtx:
    def __init__(self, b: Builder, idx, end, step):
        self.b, self.idx, self.end, self.step = b, idx, end, step

    def __enter__(self):
        self.b._stack.append([])
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        b = self.b
        body = b._stack.pop()
        p = b.p()
        idx, end, step = self.idx, self.end, self.step
        pre = [Inst("ISETP.GE.AND", (), (idx, end), lambda m, x, y: _i(x) >= _i(y), pdst=p),
               Inst("BRA", guard=(p, False))]
        post = [Inst("IADD3", (idx,), (idx, step, RZ), lambda m, x, y, z: _i(x) + _i(y)),
                Inst("ISETP.LT.AND", (), (idx, end), lambda m, x, y: _i(x) < _i(y), pdst=p),
                Inst("BRA", guard=(p, False))]
        b._stack[-1].append(Loop(idx, end, step, body, pre, post, p))
        return False


class _IfCtx:
    def __init__(self, b: Builder, pred, neg):
        self.b, self.pred, self.neg = b, pred, neg

    def __enter__(self):
        self.b._stack.append([])
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        body = self.b._stack.pop()
        head = [Inst("BSSY", imm=0), Inst("BRA", guard=(self.pred, not self.neg))]
        tail = [Inst("BSYNC")]
        self.b._stack[-1].append(If(self.pred, self.neg, body, head, tail))
        return False


def _flatten(nodes, out):
    for n in nodes:
        if isinstance(n, Inst):
            out.append(n)
        elif isinstance(n, Loop):
            out.extend(n.pre)
            _flatten(n.body, out)
            out.extend(n.post)
        elif isinstance(n, If):
            out.extend(n.head)
            _flatten(n.body, out)
            out.extend(n.tail)


def _first_pc(nodes, default):
    for n in nodes:
        if isinstance(n, Inst):
            return n.pc
        if isinstance(n, Loop):
            return n.pre[0].pc
        if isinstance(n, If):
            return n.head[0].pc
    return default


def _fix_branches(nodes):
    for n in nodes:
        if isinstance(n, Loop):
            top = _first_pc(n.body, n.post[0].pc)
            n.pre[1].imm = n.post[-1].pc + PC_STEP
            n.post[-1].imm = top
            _fix_branches(n.body)
        elif isinstance(n, If):
            n.head[0].imm = n.tail[0].pc
            n.head[1].imm = n.tail[0].pc
            _fix_branches(n.body)


def hash_sr(sr: str) -> int:
    return {"SR_TID.X": 0x21, "SR_TID.Y": 0x22, "SR_TID.Z": 0x23, "SR_CTAID.X": 0x25,
            "SR_CTAID.Y": 0x26, "SR_CTAID.Z": 0x27, "SR_LANEID": 0x0}.get(sr, 0)


def _i(x: np.ndarray) -> np.ndarray:
    """Integer view of a register: float32 registers give their IEEE bits."""
    if x.dtype == np.int64:
        return x
    if x.dtype == np.float64:
        x = x.astype(np.float32)
    return x.view(np.uint32).astype(np.int64) if x.dtype == np.float32 else x.astype(np.int64)


def _f(x: np.ndarray) -> np.ndarray:
    """Float view of a register: integer registers are reinterpreted from their low 32 bits."""
    if x.dtype == np.float32:
        return x
    if x.dtype.kind == "f" or x.dtype == bool:
        return x.astype(np.float32)
    return x.astype(np.uint32).view(np.float32)


def _bits_where(p, x, y):
    """SEL moves bits: mixed float/int operands are selected as raw 32-bit patterns."""
    if x.dtype != y.dtype:
        x, y = _i(x), _i(y)
    return np.where(p, x, y)


_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "eq": np.equal, "ne": np.not_equal}


def _safe(f):
    def g(x):
        with np.errstate(all="ignore"):
            return f(x)
    return g


_MUFU = {
    "EX2": _safe(np.exp2),
    "RCP": _safe(lambda x: 1.0 / x),
    "RSQ": _safe(lambda x: 1.0 / np.sqrt(np.abs(x))),
    "SQRT": _safe(lambda x: np.sqrt(np.abs(x))),
    "LG2": _safe(lambda x: np.log2(np.abs(x))),
    "TANH": _safe(np.tanh),
    "SIN": _safe(np.sin),
    "COS": _safe(np.cos),
}


# ----------------------------------------------------------------------------- memory
class Memory:
    """Device memory as seen by loads: registered regions, some backed by real arrays.

    Weights and activations are not materialised: a load returns a deterministic
    value hashed from its address (same address, same value, across kernels), in
    the value range of the region. Regions that steer control flow (token ids,
    graph CSR arrays, frontier masks) are backed by numpy arrays, so loops and
    branches depend on real data.
    """

    def __init__(self):
        self._bases: list[int] = []
        self._ends: list[int] = []
        self._arrays: list[np.ndarray | None] = []

    def register(self, base: int, nbytes: int, array: np.ndarray | None = None) -> None:
        self._bases.append(base)
        self._ends.append(base + nbytes)
        self._arrays.append(array)

    def load(self, addrs: np.ndarray, width: int, space: str) -> np.ndarray:
        """Values of a load (float32 for hashed data, int64 for array-backed data)."""
        h = _hash_f32(addrs)
        if space != "g" or not any(a is not None for a in self._arrays):
            return h
        out = None
        for base, end, arr in zip(self._bases, self._ends, self._arrays):
            if arr is None:
                continue
            sel = (addrs >= base) & (addrs < end)
            if not sel.any():
                continue
            if out is None:
                out = h.view(np.uint32).astype(np.int64)
            esz = arr.dtype.itemsize
            idx = np.clip((addrs[sel] - base) // esz, 0, arr.shape[0] - 1)
            out[sel] = arr[idx].astype(np.int64)
        return h if out is None else out


def _hash_f32(addrs: np.ndarray) -> np.ndarray:
    x = addrs.astype(np.uint64)
    x = (x ^ (x >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(32))
    u = (x & np.uint64(0xFFFF)).astype(np.float32) / np.float32(32768.0) - np.float32(1.0)
    return u.astype(np.float32)


# ----------------------------------------------------------------------------- interpreter
@dataclass
class RunResult:
    """Records of one interpreter run, already grouped by warp (temporal order inside)."""

    warp_cta: np.ndarray  # (W, 3)
    warp_id: np.ndarray  # (W,)
    insts_total: np.ndarray  # (W,) dynamic instructions each warp executed (uncapped)
    trace: KernelTrace


class Machine:
    """Lock-step interpreter state for W warps of (possibly different) CTAs."""

    def __init__(self, prog: Program, header: KernelHeader, ctas: np.ndarray, mem: Memory,
                 cap: np.ndarray | int, record_values: bool | np.ndarray = True,
                 params: np.ndarray | None = None, record_off: bool | np.ndarray = False):
        self.prog = prog
        self.header = header
        self.mem = mem
        bx, by, bz = header.block
        nthreads = bx * by * bz
        wpc = (nthreads + 31) // 32
        ctas = np.asarray(ctas, np.int64).reshape(-1, 3)
        self.warp_cta = np.repeat(ctas, wpc, axis=0).astype(np.int32)
        self.warp_id = np.tile(np.arange(wpc, dtype=np.int32), len(ctas))
        W = len(self.warp_id)
        self.W = W
        self.shape = (W, 32)
        flat = self.warp_id[:, None].astype(np.int64) * 32 + _LANE[None, :]
        self.tid = (flat % bx, (flat // bx) % by, flat // (bx * by))
        self.exited = flat >= nthreads
        self.regs: dict[int, np.ndarray] = {}
        self.preds: dict[int, np.ndarray] = {7: np.ones(self.shape, bool)}
        self.count = np.zeros(W, np.int64)  # warp instructions issued (what inst_executed counts)
        self.nrec = np.zeros(W, np.int64)  # ... recorded, which the cap limits
        cap_arr = np.broadcast_to(np.asarray(cap, np.int64), (len(ctas),))
        self.cap = np.repeat(cap_arr, wpc)
        # warps that also record what they issue with every lane's guard false (an empty mask):
        # the timing model's sample, never the NVBit trace (the tracer records nothing for them)
        self.record_off = np.repeat(np.broadcast_to(np.asarray(record_off, bool), (len(ctas),)), wpc)
        rv = np.broadcast_to(np.asarray(record_values, bool), (len(ctas),))
        self.value_warps = np.repeat(rv, wpc)
        self.record_values = bool(rv.any())
        # (n_ctas, n_slots) integer parameters per CTA (batched launches), else the baked ones
        self.ptab = None if params is None else np.repeat(np.asarray(params, np.int64), wpc, axis=0)
        self._recs: list[tuple] = []
        self._recording = bool((self.cap > 0).any())
        self._all_w = np.arange(W)

    # -- helpers
    def param(self, slot: int, default: int) -> np.ndarray:
        if self.ptab is None:
            return np.full(self.shape, default, np.int64)
        return np.repeat(self.ptab[:, slot:slot + 1], 32, axis=1)

    def special(self, sr: str) -> np.ndarray:
        if sr.startswith("SR_TID."):
            return self.tid["XYZ".index(sr[-1])].copy()
        if sr.startswith("SR_CTAID."):
            col = self.warp_cta[:, "XYZ".index(sr[-1])].astype(np.int64)
            return np.repeat(col[:, None], 32, axis=1)
        if sr == "SR_LANEID":
            return np.broadcast_to(_LANE, self.shape).copy()
        raise ValueError(sr)

    def reg(self, code: int) -> np.ndarray:
        if code in (RZ, URZ):
            return np.zeros(self.shape, np.int64)
        v = self.regs.get(code)
        if v is None:
            v = np.zeros(self.shape, np.int64)
        return v

    def _write(self, code: int, value: np.ndarray, eff: np.ndarray) -> None:
        if code in (RZ, URZ):
            return
        old = self.regs.get(code)
        if value.shape != self.shape:
            value = np.broadcast_to(value, self.shape)
        if old is None:
            old = np.zeros(self.shape, value.dtype)
        elif old.dtype != value.dtype:
            old = _i(old) if value.dtype == np.int64 else _f(old)
        self.regs[code] = np.where(eff, value, old)

    # -- execution
    def run(self) -> None:
        with np.errstate(all="ignore"):  # hashed data can overflow fp32 like real garbage can
            self._exec(self.prog.body, ~self.exited)

    def _exec(self, nodes, mask: np.ndarray) -> None:
        for n in nodes:
            if isinstance(n, Inst):
                self._inst(n, mask)
            elif isinstance(n, Loop):
                self._loop(n, mask)
            else:
                self._if(n, mask)

    def _if(self, n: If, mask):
        for i in n.head:
            self._inst(i, mask)
        p = self.preds.get(n.pred, np.zeros(self.shape, bool))
        inner = mask & (~p if n.neg else p)
        if inner.any():
            self._exec(n.body, inner)
        for i in n.tail:
            self._inst(i, mask)

    def _loop(self, n: Loop, mask):
        for i in n.pre:
            self._inst(i, mask)
        live = mask & ~self.preds[n.pred] & ~self.exited
        per_iter = len(n.body) + len(n.post)
        while live.any():
            if n.straight and not (live.any(axis=1) & (self.nrec < self.cap)).any():
                # fast-forward: nothing more is recorded, only the counts matter
                idx, end, step = _i(self.reg(n.idx)), _i(self.reg(n.end)), np.maximum(_i(self.reg(n.step)), 1)
                rem = np.where(live, -(-(end - idx) // step), 0)
                rem_w = rem.max(axis=1)
                # every instruction of each iteration is issued, the final back-edge BRA (guard
                # false on all lanes) and guarded body instructions included
                self.count += rem_w * per_iter
                self._write(n.idx, idx + rem * step, live)
                break
            self._exec(n.body, live)
            for i in n.post:
                self._inst(i, live)
            live = live & self.preds[n.pred] & ~self.exited

    def _inst(self, inst: Inst, mask: np.ndarray) -> None:
        act = mask & ~self.exited
        eff = act
        if inst.guard is not None:
            p = self.preds.get(inst.guard[0], np.zeros(self.shape, bool))
            eff = act & (~p if inst.guard[1] else p)
        # A warp that reaches a guarded instruction issues it even when the guard is false on
        # all its lanes (it takes an issue slot and counts in inst_executed); only a branch
        # around it, or exited lanes, keep a warp from issuing it. It then does nothing.
        issued = act.any(axis=1)
        if not issued.any():
            return
        wa = eff.any(axis=1)
        rec = np.where(self.record_off, issued, wa) & (self.nrec < self.cap) if self._recording else None
        self.count += issued
        if rec is not None:
            self.nrec += rec
        if inst.op == "EXIT" or not wa.any():  # (no lane's guard holds: nothing is written)
            if rec is not None and rec.any():
                self._record(inst, rec, eff, np.zeros(self.shape, np.uint64) if inst.mem else None, [])
            if inst.op == "EXIT":
                self.exited |= eff
            self._recording = bool((self.nrec < self.cap).any())
            return
        srcv = [self.reg(s) for s in inst.src]
        addrs = None
        if inst.mem:
            addrs = inst.addr(self, *srcv)
            if inst.space == "s":
                addrs = addrs + self.header.shmem_base_addr
            if inst.load and inst.dst:
                base = inst.dst[0]
                step = 4 if inst.mem >= 4 else inst.mem
                for k in range(inst.nregs_written):
                    self._write(base + k, self.mem.load(addrs + k * step, inst.mem, inst.space), eff)
        elif inst.fn is not None:
            val = inst.fn(self, *srcv)
            if inst.pdst is not None:
                old = self.preds.get(inst.pdst, np.zeros(self.shape, bool))
                self.preds[inst.pdst] = np.where(eff, val, old)
            elif inst.dst:
                self._write(inst.dst[0], val, eff)
        if rec is not None and rec.any():
            dstv = [self.reg(d) for d in inst.dst]
            self._record(inst, rec, eff, addrs, dstv + srcv)
            if not (self.nrec < self.cap).any():
                self._recording = False

    def _record(self, inst: Inst, rec: np.ndarray, eff: np.ndarray, addrs, vals) -> None:
        # only what the trace keeps, compacted now: the 32-lane mask as a word, the active
        # lanes' addresses, and the active lanes' register values of value-recording warps
        # (operand-major, lanes ascending, the trace's own value layout); result() puts them
        # in warp order. Full (rows, 32) blocks held to the end cost ~3.5 KB per record.
        if rec.all():
            w, m, a, sel = self._all_w, eff, addrs, None
        else:
            w = np.nonzero(rec)[0]
            m = eff[w]
            a = addrs[w] if addrs is not None else None
            sel = w
        bits = np.packbits(m, axis=1, bitorder="little").view(np.uint32).reshape(-1)
        af = None
        if inst.mem:
            af = (a if a is not None else np.zeros(m.shape, np.uint64))[m]
        vf = keep = None
        if self.record_values and vals:
            keep = self.value_warps[w]
            if keep.any():
                rows = slice(None) if keep.all() else np.nonzero(keep)[0]
                blk = np.empty((int(keep.sum()), len(vals), 32), np.uint32)
                for j, x in enumerate(vals):
                    blk[:, j] = _u32(x if sel is None else x[sel])[rows]
                vf = blk[np.broadcast_to(m[rows][:, None, :], blk.shape)]
            else:
                keep = None
        self._recs.append((inst.sid, w, bits, af, vf, keep))

    # -- output
    def result(self) -> RunResult:
        prog, W = self.prog, self.W
        recs = self._recs
        self._recs = []
        R = sum(len(r[1]) for r in recs)
        sid = np.empty(R, np.int64)
        warp = np.empty(R, np.int64)
        masks = np.empty(R, np.uint32)
        vrow = np.zeros(R, bool)
        o = 0
        for s_, w, bits, _, vf, keep in recs:
            n = len(w)
            sid[o:o + n] = s_
            warp[o:o + n] = w
            masks[o:o + n] = bits
            if vf is not None:
                vrow[o:o + n] = keep
            o += n
        mem_w = np.array([i.mem for i in prog.insts], np.int32)
        nops = np.array([len(i.dst) + len(i.src) for i in prog.insts], np.int64)
        lanes = popcount32(masks)
        addr_cnt = lanes * (mem_w[sid] > 0)
        val_cnt = lanes * nops[sid] * vrow
        order = np.argsort(warp, kind="stable")
        rank = np.empty(R, np.int64)
        rank[order] = np.arange(R)
        addr_ptr = np.zeros(R + 1, np.int64)
        np.cumsum(addr_cnt[order], out=addr_ptr[1:])
        value_ptr = np.zeros(R + 1, np.int64)
        np.cumsum(val_cnt[order], out=value_ptr[1:])
        addrs = np.zeros(int(addr_ptr[-1]), np.uint64)
        values = np.zeros(int(value_ptr[-1]), np.uint32) if self.record_values else None
        # scatter the record-order pieces to their warp-order places, a batch of records at a time
        o = i = 0
        while i < len(recs):
            j, rows = i, 0
            while j < len(recs) and (rows < 65536 or j == i):
                rows += len(recs[j][1])
                j += 1
            g = slice(o, o + rows)
            for col, cnt, ptr, out in ((3, addr_cnt, addr_ptr, addrs), (4, val_cnt, value_ptr, values)):
                parts = [r[col] for r in recs[i:j] if r[col] is not None]
                if parts and out is not None:
                    c = cnt[g]
                    dest = np.repeat(ptr[rank[g]], c) + ragged_arange(c)
                    out[dest] = np.concatenate(parts)
            recs[i:j] = [None] * (j - i)  # free what is placed
            o, i = o + rows, j
        if not self.record_values:
            value_ptr = None
        sid_o = sid[order]
        warp_o = warp[order]
        warp_ptr = np.zeros(W + 1, np.int64)
        np.cumsum(np.bincount(warp_o, minlength=W), out=warp_ptr[1:])
        # opcode table in order of first dynamic appearance
        uniq_ops: dict[str, int] = {}
        op_of_sid = np.array([uniq_ops.setdefault(i.op, len(uniq_ops)) for i in prog.insts], np.int32)
        op_dyn = op_of_sid[sid_o]
        appear_vals, first_idx = np.unique(op_dyn, return_index=True)
        appear = appear_vals[np.argsort(first_idx)]
        remap = np.full(len(uniq_ops), -1, np.int32)
        remap[appear] = np.arange(len(appear), dtype=np.int32)
        names = list(uniq_ops)
        table = tuple(names[i] for i in appear)
        dmax = max([len(i.dst) for i in prog.insts] + [0])
        smax = max([len(i.src) for i in prog.insts] + [0])
        dst_t = np.full((len(prog.insts), max(dmax, 1)), -1, np.int16)
        src_t = np.full((len(prog.insts), max(smax, 1)), -1, np.int16)
        for i in prog.insts:
            dst_t[i.sid, :len(i.dst)] = i.dst
            src_t[i.sid, :len(i.src)] = i.src
        pcs = np.array([i.pc for i in prog.insts], np.int64)
        imms = np.array([i.imm for i in prog.insts], np.int64)
        trace = KernelTrace(
            header=self.header,
            warp_cta=self.warp_cta.copy(),
            warp_id=self.warp_id.copy(),
            warp_ptr=warp_ptr,
            pc=pcs[sid_o],
            mask=masks[order],
            opcode=remap[op_dyn],
            opcode_table=table,
            dst=dst_t[sid_o][:, :dmax],
            src=src_t[sid_o][:, :smax],
            mem_width=mem_w[sid_o],
            addr_ptr=addr_ptr,
            addrs=addrs,
            line_num=None,
            imm=imms[sid_o],
            value_ptr=value_ptr,
            values=values,
        )
        return RunResult(self.warp_cta, self.warp_id, self.count.copy(), trace)


def _u32(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:
        return x.view(np.uint32)
    return x.astype(np.uint32)  # wraps modulo 2**32: the low word of the register


def run_program(prog: Program, header: KernelHeader, ctas: np.ndarray, mem: Memory,
                cap: np.ndarray | int, record_values: bool | np.ndarray = True,
                params: np.ndarray | None = None, record_off: bool | np.ndarray = False) -> RunResult:
    """Execute ``prog`` for all warps of ``ctas`` (rows of (x,y,z)) and return the trace.

    ``cap`` is the per-CTA limit on recorded instructions per warp; execution
    continues past it (without recording) so ``insts_total`` (issued warp instructions) is
    exact. ``record_off`` (per CTA): also record, with an empty mask, what a warp issues
    with its guard false on every lane, which the NVBit tracer does not see but the GPU issues.
    """
    m = Machine(prog, header, ctas, mem, cap, record_values, params, record_off)
    m.run()
    return m.result()
