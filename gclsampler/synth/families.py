"""Kernel families: each is a small SASS program built for one launch's parameters.

A family function takes the launch (grid, block, args with sizes and device
pointers) and returns a :class:`Program`. Launch parameters enter the program
through ULDC (constant bank) exactly as kernel arguments do on hardware, so loop
trip counts, guards and addresses are computed from them by the interpreter.
Everything here is SYNTHETIC: plausible compiled code, not disassembly of real
kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from gclsampler.synth.program import RZ, Builder, Program

LOG2E = 1.4426950408889634


@dataclass
class Launch:
    """One kernel invocation as a workload issues it."""

    name: str
    family: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: dict = field(default_factory=dict)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


FAMILIES: dict[str, Callable[[Launch], Program]] = {}


def family(name: str):
    def deco(fn):
        FAMILIES[name] = fn
        return fn
    return deco


def build(launch: Launch) -> Program:
    return FAMILIES[launch.family](launch)


# ----------------------------------------------------------------------------- helpers
def _gtid(b: Builder, block_x: int):
    tid = b.s2r("SR_TID.X")
    cta = b.s2r("SR_CTAID.X")
    nt = b.uldc(block_x)
    gid = b.imad(cta, nt, tid)
    return tid, cta, gid


def _warp_reduce(b: Builder, v: int, kind: str = "add", width: int = 32) -> int:
    off = width // 2
    while off >= 1:
        t = b.shfl("BFLY", v, off)
        v = b.fadd(v, t) if kind == "add" else b.fmnmx(v, t, kind == "max")
        off //= 2
    return v


def _vec_op(b: Builder, op: str, xs: list[int], ys: list[int] | None, consts: dict) -> list[int]:
    """The arithmetic of one elementwise functor applied to each loaded register."""
    out = []
    for k, x in enumerate(xs):
        y = ys[k] if ys else None
        if op == "copy":
            out.append(x)
        elif op == "add":
            out.append(b.fadd(x, y))
        elif op == "mul":
            out.append(b.fmul(x, y))
        elif op in ("gelu_tanh", "bias_gelu_tanh"):
            if y is not None:
                x = b.fadd(x, y)
            t = b.fmul(x, x)
            t = b.fmul(t, x)
            u = b.ffma(t, consts["c044"], x)
            u = b.fmul(u, consts["c0797"])
            th = b.mufu("TANH", u)
            h = b.ffma(th, consts["half"], consts["half"])
            out.append(b.fmul(x, h))
        elif op in ("gelu_erf", "bias_gelu_erf"):
            if y is not None:
                x = b.fadd(x, y)
            s = b.fmul(x, consts["cm1702l2e"])
            e = b.mufu("EX2", s)
            d = b.fadd(e, consts["one"])
            r = b.mufu("RCP", d)
            out.append(b.fmul(x, r))
        elif op == "silu_mul":
            s = b.fmul(x, consts["cml2e"])
            e = b.mufu("EX2", s)
            d = b.fadd(e, consts["one"])
            r = b.mufu("RCP", d)
            v = b.fmul(x, r)
            out.append(b.fmul(v, y))
        else:
            raise ValueError(f"unknown elementwise op {op!r}")
    return out


def _consts(b: Builder, op: str) -> dict:
    c = {}
    if "gelu_tanh" in op:
        c["c044"] = b.uldc(0.044715)
        c["c0797"] = b.uldc(0.7978845608)
        c["half"] = b.uldc(0.5)
    if "gelu_erf" in op:
        c["cm1702l2e"] = b.uldc(-1.702 * LOG2E)
        c["one"] = b.uldc(1.0)
    if op == "silu_mul":
        c["cml2e"] = b.uldc(-LOG2E)
        c["one"] = b.uldc(1.0)
    return c


# ----------------------------------------------------------------------------- ML families
@family("elementwise")
def elementwise(L: Launch) -> Program:
    """Grid-stride vectorised elementwise functor (PyTorch vectorized_elementwise_kernel).

    args: n (elements), esize, vec_bytes, ins (list of base pointers), out, op,
    optional bias (pointer) + bias_n (broadcast along the last dim).
    """
    a = L.args
    esize, vb = a.get("esize", 2), a.get("vec_bytes", 16)
    per = vb // esize  # elements per thread per iteration
    b = Builder(L.name)
    tid, cta, gid = _gtid(b, L.block[0])
    nvec = b.uldc(-(-a["n"] // per))
    stride = b.uldc(L.n_ctas * L.threads)
    p = b.isetp("ge", gid, nvec)
    b.exit_if(p)
    bases = [b.uldc(ptr) for ptr in a["ins"]]
    out = b.uldc(a["out"])
    consts = _consts(b, a["op"])
    bias = b.uldc(a["bias"]) if a.get("bias") else None
    i = b.mov(gid)
    with b.loop(i, nvec, stride):
        regs = []
        for base in bases:
            addr = b.wide(i, vb, base)
            regs.append(b.ldg(addr, vb))
        nr = max(1, vb // 4)
        xs = [regs[0] + k for k in range(nr)]
        ys = [regs[1] + k for k in range(nr)] if len(regs) > 1 else None
        if bias is not None:
            e0 = b.imadi(i, per, RZ)
            q = b.divi(e0, a["bias_n"])
            col = b.remi(e0, q, a["bias_n"])
            ba = b.wide(col, esize, bias)
            br = b.ldg(ba, vb)
            ys = [br + k for k in range(nr)]
        res = _vec_op(b, a["op"], xs, ys, consts)
        oa = b.wide(i, vb, out)
        b.stg(oa, res[0], vb)
    return b.build()


def _block_reduce(b: Builder, v: int, tid: int, nwarps: int, kind: str, sh_off: int) -> int:
    """Warp shuffle tree, partials through shared memory, second shuffle tree in warp 0."""
    v = _warp_reduce(b, v, kind)
    lane = b.s2r("SR_LANEID")
    wid = b.shf(tid, 5)
    p0 = b.isetp("eq", lane, RZ)
    sh = b.imadi(wid, 4, RZ)
    b.sts(sh, v, 4, off=sh_off, guard=(p0, False))
    b.simple("BAR.SYNC.DEFER_BLOCKING", imm=0)
    if nwarps > 1:
        pw = b.isetp("lt", tid, b.uldc(nwarps))
        with b.if_(pw):
            la = b.imadi(lane, 4, RZ)
            t = b.lds(la, 4, off=sh_off)
            t = _warp_reduce(b, t, kind, width=1 << (nwarps - 1).bit_length())
            b.sts(RZ, t, 4, off=sh_off, guard=(p0, False))
        b.simple("BAR.SYNC.DEFER_BLOCKING", imm=0)
    return b.lds(RZ, 4, off=sh_off)


@family("layernorm")
def layernorm(L: Launch) -> Program:
    """One CTA per row: sum / sum-of-squares loop, block reduction, normalise loop.

    args: hidden, esize, x, gamma, beta (0 for RMSNorm), out, rms (bool), eps.
    """
    a = L.args
    esize, H, T = a.get("esize", 2), a["hidden"], L.block[0]
    vb = 8
    per = vb // esize
    b = Builder(L.name, shmem=256)
    tid = b.s2r("SR_TID.X")
    row = b.s2r("SR_CTAID.X")
    x = b.uldc(a["x"])
    rowb = b.wide(row, H * esize, x)
    hend = b.uldc(H)
    step = b.uldc(T * per)
    s = b.movi(0.0)
    q = b.movi(0.0)
    i = b.imadi(tid, per, RZ)
    with b.loop(i, hend, step):
        ad = b.wide(i, esize, rowb)
        v = b.ldg(ad, vb)
        for k in range(vb // 4):
            if not a.get("rms"):
                b.fadd(s, v + k, dst=s)
            b.ffma(v + k, v + k, q, dst=q)
    nw = T // 32
    if not a.get("rms"):
        s = _block_reduce(b, s, tid, nw, "add", 0)
    q = _block_reduce(b, q, tid, nw, "add", 128)
    inv_h = b.uldc(1.0 / H)
    eps = b.uldc(float(a.get("eps", 1e-5)))
    if a.get("rms"):
        var = b.ffma(q, inv_h, eps)
        mean = b.movi(0.0)
    else:
        mean = b.fmul(s, inv_h)
        ex2 = b.fmul(q, inv_h)
        m2 = b.fmul(mean, mean)
        var = b.fsub(ex2, m2)
        var = b.fadd(var, eps)
    rstd = b.mufu("RSQ", var)
    g = b.uldc(a["gamma"])
    be = b.uldc(a["beta"]) if a.get("beta") else None
    out = b.uldc(a["out"])
    orow = b.wide(row, H * esize, out)
    j = b.imadi(tid, per, RZ)
    with b.loop(j, hend, step):
        ad = b.wide(j, esize, rowb)
        v = b.ldg(ad, vb)
        ga = b.wide(j, esize, g)
        gv = b.ldg(ga, vb)
        bv = None
        if be is not None:
            bea = b.wide(j, esize, be)
            bv = b.ldg(bea, vb)
        res = []
        for k in range(vb // 4):
            y = b.fsub(v + k, mean)
            y = b.fmul(y, rstd)
            y = b.ffma(y, gv + k, bv + k) if bv is not None else b.fmul(y, gv + k)
            res.append(y)
        oa = b.wide(j, esize, orow)
        b.stg(oa, res[0], vb)
    return b.build()


@family("softmax")
def softmax(L: Launch) -> Program:
    """Row softmax: max loop, exp-sum loop, scale loop (MUFU.EX2, MUFU.RCP), block reductions.

    args: cols, esize, x, out.
    """
    a = L.args
    esize, C, T = a.get("esize", 2), a["cols"], L.block[0]
    b = Builder(L.name, shmem=256)
    tid = b.s2r("SR_TID.X")
    row = b.s2r("SR_CTAID.X")
    x = b.uldc(a["x"])
    rowb = b.wide(row, C * esize, x)
    cend = b.uldc(C)
    step = b.uldc(T)
    mx = b.movi(-3.0e38)
    i = b.mov(tid)
    with b.loop(i, cend, step):
        v = b.ldg(b.wide(i, esize, rowb), esize if esize >= 4 else 2)
        b.fmnmx(mx, v, True, dst=mx)
    nw = T // 32
    mx = _block_reduce(b, mx, tid, nw, "max", 0)
    l2e = b.uldc(LOG2E)
    sm = b.movi(0.0)
    j = b.mov(tid)
    with b.loop(j, cend, step):
        v = b.ldg(b.wide(j, esize, rowb), esize if esize >= 4 else 2)
        d = b.fsub(v, mx)
        d = b.fmul(d, l2e)
        e = b.mufu("EX2", d)
        b.fadd(sm, e, dst=sm)
    sm = _block_reduce(b, sm, tid, nw, "add", 128)
    r = b.mufu("RCP", sm)
    out = b.uldc(a["out"])
    orow = b.wide(row, C * esize, out)
    k = b.mov(tid)
    with b.loop(k, cend, step):
        v = b.ldg(b.wide(k, esize, rowb), esize if esize >= 4 else 2)
        d = b.fsub(v, mx)
        d = b.fmul(d, l2e)
        e = b.mufu("EX2", d)
        y = b.fmul(e, r)
        b.stg(b.wide(k, esize, orow), y, esize if esize >= 4 else 2)
    return b.build()


@family("rotary")
def rotary(L: Launch) -> Program:
    """Rotary embedding on the first ``rot_dim`` dims of each head (rotate-half form).

    args: tokens, heads, head_dim, rot_dim, esize, x, cos, sin, out, pos0.
    """
    a = L.args
    esize, hd, half = a.get("esize", 2), a["head_dim"], a["rot_dim"] // 2
    n = a["tokens"] * a["heads"] * half
    b = Builder(L.name)
    tid, cta, gid = _gtid(b, L.block[0])
    nn = b.uldc(n)
    stride = b.uldc(L.n_ctas * L.threads)
    p = b.isetp("ge", gid, nn)
    b.exit_if(p)
    x, cs, sn, out = b.uldc(a["x"]), b.uldc(a["cos"]), b.uldc(a["sin"]), b.uldc(a["out"])
    pos0 = b.uldc(a.get("pos0", 0))
    i = b.mov(gid)
    with b.loop(i, nn, stride):
        th = b.divi(i, half)
        d = b.remi(i, th, half)
        t = b.divi(th, a["heads"])
        e1 = b.imadi(th, hd, d)
        a1 = b.wide(e1, esize, x)
        x1 = b.ldg(a1, esize)
        x2 = b.ldg(a1, esize, off=half * esize)
        tp = b.iadd3(t, pos0)
        ci = b.imadi(tp, half, d)
        c = b.ldg(b.wide(ci, 4, cs), 4)
        s = b.ldg(b.wide(ci, 4, sn), 4)
        y1 = b.fmul(x1, c)
        ns = b.fmul(x2, s)
        y1 = b.fsub(y1, ns)
        y2 = b.fmul(x2, c)
        y2 = b.ffma(x1, s, y2)
        oa = b.wide(e1, esize, out)
        b.stg(oa, b.f2f(y1), esize)
        b.stg(oa, b.f2f(y2), esize, off=half * esize)
    return b.build()


@family("embedding")
def embedding(L: Launch) -> Program:
    """Row gather: token id loaded from memory picks the weight row (irregular addresses).

    args: hidden, esize, weight, ids (int32 array-backed), out.
    """
    a = L.args
    esize, H, T = a.get("esize", 2), a["hidden"], L.block[0]
    per = 16 // esize
    b = Builder(L.name)
    tid = b.s2r("SR_TID.X")
    row = b.s2r("SR_CTAID.X")
    ids = b.uldc(a["ids"])
    tok = b.ldg(b.wide(row, 4, ids), 4)
    w = b.uldc(a["weight"])
    src = b.wide(tok, H * esize, w)
    out = b.uldc(a["out"])
    dst = b.wide(row, H * esize, out)
    hend = b.uldc(H)
    step = b.uldc(T * per)
    i = b.imadi(tid, per, RZ)
    with b.loop(i, hend, step):
        v = b.ldg(b.wide(i, esize, src), 16)
        b.stg(b.wide(i, esize, dst), v, 16)
    return b.build()


@family("argmax")
def argmax(L: Launch) -> Program:
    """Single-row arg-max reduction (greedy decoding): FSETP/FSEL/SEL, shuffles, shared memory.

    args: n, esize, x, out.
    """
    a = L.args
    esize, n, T = a.get("esize", 2), a["n"], L.block[0]
    b = Builder(L.name, shmem=512)
    tid = b.s2r("SR_TID.X")
    x = b.uldc(a["x"])
    nn = b.uldc(n)
    step = b.uldc(T)
    best = b.movi(-3.0e38)
    bidx = b.movi(0)
    i = b.mov(tid)
    with b.loop(i, nn, step):
        v = b.ldg(b.wide(i, esize, x), esize if esize >= 4 else 2)
        p = b.fsetp("gt", v, best)
        b.fsel(v, best, p, dst=best)
        b.sel(i, bidx, p, dst=bidx)
    off = 16
    while off >= 1:
        ov = b.shfl("DOWN", best, off)
        oi = b.shfl("DOWN", bidx, off)
        p = b.fsetp("gt", ov, best)
        b.fsel(ov, best, p, dst=best)
        b.sel(oi, bidx, p, dst=bidx)
        off //= 2
    lane = b.s2r("SR_LANEID")
    wid = b.shf(tid, 5)
    p0 = b.isetp("eq", lane, RZ)
    sh = b.imadi(wid, 8, RZ)
    b.sts(sh, best, 4, guard=(p0, False))
    b.sts(sh, bidx, 4, off=4, guard=(p0, False))
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    pw = b.isetp("eq", tid, RZ)
    with b.if_(pw):
        k = b.movi(0)
        kend = b.uldc(T // 32)
        one = b.uldc(1)
        with b.loop(k, kend, one):
            ka = b.imadi(k, 8, RZ)
            v = b.lds(ka, 4)
            vi = b.lds(ka, 4, off=4)
            p = b.fsetp("gt", v, best)
            b.fsel(v, best, p, dst=best)
            b.sel(vi, bidx, p, dst=bidx)
        out = b.uldc(a["out"])
        b.stg(out, bidx, 4)
    return b.build()


@family("gemm_tc")
def gemm_tc(L: Launch) -> Program:
    """Tensor-core GEMM C = A B^T (+bias): cp.async (LDGSTS) double buffer, LDSM, HMMA.16816, epilogue.

    args: M, N, K, esize, A, B, C, bias (0 = none), bm, bn. grid = (N/bn, M/bm).
    Trip count of the main loop = K / 32 from the launch parameters.
    """
    a = L.args
    esize, K, N, M = a.get("esize", 2), a["K"], a["N"], a["M"]
    bm, bn = a["bm"], a["bn"]
    T = L.threads
    nwarps = T // 32
    bk = 32
    na = max(1, bm * bk * esize // (T * 16))
    nb = max(1, bn * bk * esize // (T * 16))
    n_acc = max(2, (bm * bn) // (nwarps * 16 * 8))  # m16n8 tiles per warp
    n_acc = min(n_acc, 16)
    b = Builder(L.name, shmem=(bm + bn) * bk * esize * 3)
    tid = b.s2r("SR_TID.X")
    bx = b.s2r("SR_CTAID.X")
    by = b.s2r("SR_CTAID.Y")
    lane = b.s2r("SR_LANEID")
    wid = b.shf(tid, 5)
    Ab, Bb, Cb = b.uldc(a["A"]), b.uldc(a["B"]), b.uldc(a["C"])
    r_in = b.shf(tid, 2)  # row of the tile this thread copies
    c_in = b.andi(tid, 3)
    c8 = b.imadi(c_in, 8, RZ)
    row_a = b.imadi(by, bm, r_in)
    row_b = b.imadi(bx, bn, r_in)
    ea = b.imadi(row_a, K, c8)
    eb = b.imadi(row_b, K, c8)
    ga = b.wide(ea, esize, Ab)
    gb = b.wide(eb, esize, Bb)
    sha = b.imadi(tid, 16, RZ)
    shb = b.iaddi(sha, bm * bk * esize)
    lm = b.imadi(lane, 16, RZ)
    wm = b.imadi(wid, 16 * bk * esize // 2, lm)
    accs = [b.movi(0.0) for _ in range(n_acc)]
    k = b.movi(0)
    kend = b.uldc(K)
    kstep = b.uldc(bk)
    adv = b.uldc(bk * esize)
    rows_per_pass = T // 4
    with b.loop(k, kend, kstep):
        for j in range(na):
            b.ldgsts(sha, ga, off=j * rows_per_pass * K * esize)
        for j in range(nb):
            b.ldgsts(shb, gb, off=j * rows_per_pass * K * esize)
        b.simple("LDGDEPBAR")
        b.simple("DEPBAR.LE", imm=1)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
        b.iadd3(ga, adv, dst=ga)
        b.iadd3(gb, adv, dst=gb)
        for kk in range(2):
            fa = b.ldsm(wm)
            fb = b.ldsm(shb)
            for j, acc in enumerate(accs):
                b.hmma(fa + (j % 2), fb + (j // 2) % 4, acc, dst=acc)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
    # epilogue: bias, conversion, guarded stores
    er = b.imadi(by, bm, b.imadi(wid, 16, b.shf(lane, 2)))
    ec = b.imadi(bx, bn, b.imadi(b.andi(lane, 3), 2, RZ))
    mm = b.uldc(M)
    pr = b.isetp("lt", er, mm)
    bias = b.uldc(a["bias"]) if a.get("bias") else None
    for j, acc in enumerate(accs[: min(len(accs), 8)]):
        col = b.iaddi(ec, 8 * j)
        v = acc
        if bias is not None:
            bv = b.ldg(b.wide(col, esize, bias), 4)
            v = b.fadd(v, bv)
        h = b.f2f(v)
        e = b.imadi(er, N, col)
        b.stg(b.wide(e, esize, Cb), h, 4, guard=(pr, False))
    return b.build()


@family("gemv")
def gemv(L: Launch) -> Program:
    """Decode-time matrix-vector product: one warp per output row, LDG.128 of weights, shuffle reduce.

    args: N (rows), K, esize, W, x, y, bias (0 = none), rows_per_cta.
    """
    a = L.args
    esize, K, N = a.get("esize", 2), a["K"], a["N"]
    rpc = a.get("rows_per_cta", L.threads // 32)
    per = 16 // esize
    b = Builder(L.name)
    tid = b.s2r("SR_TID.X")
    cta = b.s2r("SR_CTAID.X")
    lane = b.s2r("SR_LANEID")
    wid = b.shf(tid, 5)
    row = b.imadi(cta, rpc, wid)
    p = b.isetp("ge", row, b.uldc(N))
    b.exit_if(p)
    Wb, xb = b.uldc(a["W"]), b.uldc(a["x"])
    wrow = b.wide(row, K * esize, Wb)
    acc = b.movi(0.0)
    kk = b.imadi(lane, per, RZ)
    kend = b.uldc(K)
    step = b.uldc(32 * per)
    with b.loop(kk, kend, step):
        w = b.ldg(b.wide(kk, esize, wrow), 16)
        xv = b.ldg(b.wide(kk, esize, xb), 16)
        for j in range(4):
            b.ffma(w + j, xv + j, acc, dst=acc)
    acc = _warp_reduce(b, acc)
    p0 = b.isetp("eq", lane, RZ)
    with b.if_(p0):
        if a.get("bias"):
            bv = b.ldg(b.wide(row, esize, b.uldc(a["bias"])), 2)
            acc = b.fadd(acc, bv)
        b.stg(b.wide(row, esize, b.uldc(a["y"])), b.f2f(acc), 2)
    return b.build()


@family("attn_prefill")
def attn_prefill(L: Launch) -> Program:
    """Causal flash attention for the prompt: per CTA 64 queries of one head; the KV loop
    runs to the CTA's diagonal, so later CTAs do more work.

    args: seq, head_dim, heads, esize, q, k, v, out, row_stride (elements between tokens).
    grid = (ceil(seq/64), heads, 1), block 128.
    """
    a = L.args
    esize, hd, S = a.get("esize", 2), a["head_dim"], a["seq"]
    rs = a["row_stride"]
    b = Builder(L.name, shmem=2 * 64 * hd * esize * 2)
    tid = b.s2r("SR_TID.X")
    qb = b.s2r("SR_CTAID.X")
    head = b.s2r("SR_CTAID.Y")
    lane = b.s2r("SR_LANEID")
    wid = b.shf(tid, 5)
    Q, Kp, V, O = b.uldc(a["q"]), b.uldc(a["k"]), b.uldc(a["v"]), b.uldc(a["out"])
    qrow = b.imadi(qb, 64, b.imadi(wid, 16, b.shf(lane, 2)))
    hoff = b.imadi(head, hd, b.imadi(b.andi(lane, 3), 8, RZ))
    qe = b.imadi(qrow, rs, hoff)
    qa = b.wide(qe, esize, Q)
    nq = max(1, hd // 32)
    qf = [b.ldg(qa, 16, off=16 * 4 * j) for j in range(nq)]
    kv_end = b.imnmx(b.imadi(qb, 64, b.uldc(64)), b.uldc(S))
    kr = b.shf(tid, 1)
    ke = b.imadi(kr, rs, hoff)
    ka = b.wide(ke, esize, Kp)
    va = b.wide(ke, esize, V)
    sh = b.imadi(tid, 16, RZ)
    shv = b.iaddi(sh, 64 * hd * esize)
    nld = max(1, 64 * hd * esize // (128 * 16))
    m = b.movi(-3.0e38)
    l = b.movi(0.0)
    acc = [b.movi(0.0) for _ in range(4)]
    l2e = b.uldc(LOG2E * (hd ** -0.5))
    adv = b.uldc(64 * rs * esize)
    j = b.movi(0)
    step = b.uldc(64)
    with b.loop(j, kv_end, step):
        for t in range(nld):
            b.ldgsts(sh, ka, off=t * 16 * 8)
        for t in range(nld):
            b.ldgsts(shv, va, off=t * 16 * 8)
        b.simple("LDGDEPBAR")
        b.simple("DEPBAR.LE", imm=0)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
        b.iadd3(ka, adv, dst=ka)
        b.iadd3(va, adv, dst=va)
        kf = b.ldsm(sh)
        s = [b.hmma(qf[t % nq], kf + (t % 4), b.movi(0.0)) for t in range(4)]
        mx = b.fmnmx(s[0], s[1])
        mx = b.fmnmx(mx, b.fmnmx(s[2], s[3]))
        mx = b.fmnmx(mx, b.shfl("BFLY", mx, 1))
        mx = b.fmnmx(mx, b.shfl("BFLY", mx, 2))
        mn = b.fmnmx(m, mx)
        corr = b.mufu("EX2", b.fmul(b.fsub(m, mn), l2e))
        ps = [b.mufu("EX2", b.fmul(b.fsub(x, mn), l2e)) for x in s]
        b.fmul(l, corr, dst=l)
        for x in ps:
            b.fadd(l, x, dst=l)
        b.mov(mn, dst=m)
        vf = b.ldsm(shv)
        for t, ac in enumerate(acc):
            b.fmul(ac, corr, dst=ac)
            b.hmma(ps[t], vf + t, ac, dst=ac)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
    lt = b.fadd(l, b.shfl("BFLY", l, 1))
    lt = b.fadd(lt, b.shfl("BFLY", lt, 2))
    r = b.mufu("RCP", lt)
    pr = b.isetp("lt", qrow, b.uldc(S))
    oa = b.wide(qe, esize, O)
    for t, ac in enumerate(acc):
        b.stg(oa, b.f2f(b.fmul(ac, r)), 4, off=4 * t, guard=(pr, False))
    return b.build()


@family("attn_decode")
def attn_decode(L: Launch) -> Program:
    """Single-query attention over the KV cache: each warp walks every 4th cached position
    (trip count = kv_len / 4, growing every decode step), online softmax, then a
    cross-warp merge in shared memory. Lanes beyond head_dim/4 are inactive (divergence).

    args: kv_len, head_dim, esize, q, k_cache, v_cache, max_len, out. grid = (heads,1,1), block 128.
    """
    a = L.args
    esize, hd, ml = a.get("esize", 2), a["head_dim"], a["max_len"]
    b = Builder(L.name, shmem=4 * (2 + hd) * 4)
    tid = b.s2r("SR_TID.X")
    head = b.s2r("SR_CTAID.X")
    lane = b.s2r("SR_LANEID")
    wid = b.shf(tid, 5)
    nl = b.uldc(hd // 4)
    pl = b.isetp("lt", lane, nl)
    Q = b.uldc(a["q"])
    l8 = b.imadi(lane, 4 * esize, RZ)
    qe = b.imadi(head, hd * esize, l8)
    q = b.ldg(b.wide(qe, 1, Q), 8, guard=(pl, False))
    kh = b.wide(head, ml * hd * esize, b.uldc(a["k_cache"]))
    vh = b.wide(head, ml * hd * esize, b.uldc(a["v_cache"]))
    kh = b.iadd3(kh, l8)
    vh = b.iadd3(vh, l8)
    m = b.movi(-3.0e38)
    l = b.movi(0.0)
    acc0, acc1 = b.movi(0.0), b.movi(0.0)
    scale = b.uldc(LOG2E * hd ** -0.5)
    j = b.mov(wid)
    jend = b.uldc(a["kv_len"])
    four = b.uldc(4)
    with b.loop(j, jend, four):
        kv = b.ldg(b.wide(j, hd * esize, kh), 8, guard=(pl, False))
        s = b.fmul(q, kv)
        s = b.ffma(q + 1, kv + 1, s)
        s = _warp_reduce(b, s)
        s = b.fmul(s, scale)
        mn = b.fmnmx(m, s)
        c = b.mufu("EX2", b.fsub(m, mn))
        p = b.mufu("EX2", b.fsub(s, mn))
        b.ffma(l, c, p, dst=l)
        b.mov(mn, dst=m)
        vv = b.ldg(b.wide(j, hd * esize, vh), 8, guard=(pl, False))
        b.fmul(acc0, c, dst=acc0)
        b.ffma(p, vv, acc0, dst=acc0)
        b.fmul(acc1, c, dst=acc1)
        b.ffma(p, vv + 1, acc1, dst=acc1)
    shw = b.imadi(wid, 8, RZ)
    p0 = b.isetp("eq", lane, RZ)
    b.sts(shw, m, 4, guard=(p0, False))
    b.sts(shw, l, 4, off=4, guard=(p0, False))
    sho = b.imadi(wid, hd * 4, b.imadi(lane, 8, RZ))
    b.sts(sho, acc0, 8, off=64, guard=(pl, False))
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    pw = b.isetp("eq", wid, RZ)
    with b.if_(pw):
        mt = b.movi(-3.0e38)
        lt = b.movi(0.0)
        o = b.movi(0.0)
        for w in range(4):
            mw = b.lds(RZ, 4, off=8 * w)
            lw = b.lds(RZ, 4, off=8 * w + 4)
            ow = b.lds(b.imadi(lane, 8, RZ), 4, off=64 + w * hd * 4)
            mn = b.fmnmx(mt, mw)
            c1 = b.mufu("EX2", b.fsub(mt, mn))
            c2 = b.mufu("EX2", b.fsub(mw, mn))
            b.fmul(lt, c1, dst=lt)
            b.ffma(lw, c2, lt, dst=lt)
            b.fmul(o, c1, dst=o)
            b.ffma(ow, c2, o, dst=o)
            b.mov(mn, dst=mt)
        r = b.mufu("RCP", lt)
        y = b.f2f(b.fmul(o, r))
        oe = b.imadi(head, hd * esize, l8)
        b.stg(b.wide(oe, 1, b.uldc(a["out"])), y, 4, guard=(pl, False))
    return b.build()
