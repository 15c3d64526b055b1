"""HPC kernel families (Rodinia / PolyBench-GPU / Tango shaped), as SASS programs. SYNTHETIC.

Same conventions as :mod:`gclsampler.synth.families`: launch parameters arrive via
ULDC, trip counts and guards are computed from them (or from array-backed data
such as BFS graphs), addresses come from the real array layouts.
"""

from __future__ import annotations

from gclsampler.synth.families import Launch, family
from gclsampler.synth.program import RZ, Builder, Program


def _tid2(b: Builder, bx: int, by: int):
    tx, ty = b.s2r("SR_TID.X"), b.s2r("SR_TID.Y")
    cx, cy = b.s2r("SR_CTAID.X"), b.s2r("SR_CTAID.Y")
    j = b.imad(cx, b.uldc(bx), tx)
    i = b.imad(cy, b.uldc(by), ty)
    return tx, ty, i, j


@family("lu_row")
def lu_row(L: Launch) -> Program:
    """PolyBench lu_kernel1: A[k][j] /= A[k][k] for j > k (grid fixed, active threads shrink with k)."""
    a = L.args
    n, k = a["n"], a["k"]
    b = Builder(L.name)
    tid = b.s2r("SR_TID.X")
    cta = b.s2r("SR_CTAID.X")
    j = b.imad(cta, b.uldc(L.block[0]), tid)
    kk, nn = b.uldc(k), b.uldc(n)
    p = b.isetp("le", j, kk)
    b.exit_if(p)
    p2 = b.isetp("ge", j, nn)
    b.exit_if(p2)
    A = b.uldc(a["A"])
    row = b.imadi(kk, n, RZ)
    piv = b.ldg(b.wide(row, 4, A), 4)
    e = b.iadd3(row, j)
    ad = b.wide(e, 4, A)
    v = b.ldg(ad, 4)
    r = b.mufu("RCP", piv)
    q = b.fmul(v, r)
    b.stg(ad, q, 4)
    return b.build()


@family("lu_update")
def lu_update(L: Launch) -> Program:
    """PolyBench lu_kernel2: A[i][j] -= A[i][k] * A[k][j] for i, j > k (2-D grid, 32x8 blocks)."""
    a = L.args
    n, k = a["n"], a["k"]
    b = Builder(L.name)
    tx, ty, i, j = _tid2(b, L.block[0], L.block[1])
    kk, nn = b.uldc(k), b.uldc(n)
    for x in (i, j):
        b.exit_if(b.isetp("le", x, kk))
        b.exit_if(b.isetp("ge", x, nn))
    A = b.uldc(a["A"])
    aik = b.ldg(b.wide(b.imadi(i, n, kk), 4, A), 4)
    akj = b.ldg(b.wide(b.imadi(kk, n, j), 4, A), 4)
    ad = b.wide(b.imadi(i, n, j), 4, A)
    aij = b.ldg(ad, 4)
    prod = b.fmul(aik, akj)
    b.stg(ad, b.fsub(aij, prod), 4)
    return b.build()


@family("gemm_ffma")
def gemm_ffma(L: Launch) -> Program:
    """PolyBench mm3 kernels: one thread per C element, plain FFMA over K (LDG A row, LDG B column)."""
    a = L.args
    N, M, K = a["N"], a["M"], a["K"]  # C is N x M, inner K
    b = Builder(L.name)
    tx, ty, i, j = _tid2(b, L.block[0], L.block[1])
    b.exit_if(b.isetp("ge", i, b.uldc(N)))
    b.exit_if(b.isetp("ge", j, b.uldc(M)))
    A, B, C = b.uldc(a["A"]), b.uldc(a["B"]), b.uldc(a["C"])
    pa = b.wide(b.imadi(i, K, RZ), 4, A)
    pb = b.wide(j, 4, B)
    acc = b.movi(0.0)
    kk = b.movi(0)
    kend, one = b.uldc(K), b.uldc(1)
    stride_b = b.uldc(4 * M)
    four = b.uldc(4)
    with b.loop(kk, kend, one):
        x = b.ldg(pa, 4)
        y = b.ldg(pb, 4)
        b.ffma(x, y, acc, dst=acc)
        b.iadd3(pa, four, dst=pa)
        b.iadd3(pb, stride_b, dst=pb)
    b.stg(b.wide(b.imadi(i, M, j), 4, C), acc, 4)
    return b.build()


@family("bfs_expand")
def bfs_expand(L: Launch) -> Program:
    """Rodinia BFS Kernel: frontier nodes walk their CSR edge list (trip = degree, from data),
    and unvisited neighbours get cost+1 (data-dependent branch, irregular addresses)."""
    a = L.args
    b = Builder(L.name)
    tid = b.s2r("SR_TID.X")
    cta = b.s2r("SR_CTAID.X")
    t = b.imad(cta, b.uldc(L.block[0]), tid)
    b.exit_if(b.isetp("ge", t, b.uldc(a["n"])))
    mask, nodes, edges = b.uldc(a["mask"]), b.uldc(a["nodes"]), b.uldc(a["edges"])
    visited, cost, upd = b.uldc(a["visited"]), b.uldc(a["cost"]), b.uldc(a["updating"])
    ma = b.wide(t, 1, mask)
    m = b.ldg(ma, 1)
    b.exit_if(b.isetp("eq", m, RZ))
    b.stg(ma, RZ, 2)
    na = b.wide(t, 8, nodes)
    start = b.ldg(na, 4)
    num = b.ldg(na, 4, off=4)
    end = b.iadd3(start, num)
    ct = b.ldg(b.wide(t, 4, cost), 4)
    c1 = b.iaddi(ct, 1)
    one = b.uldc(1)
    i = b.mov(start)
    with b.loop(i, end, one):
        nid = b.ldg(b.wide(i, 4, edges), 4)
        v = b.ldg(b.wide(nid, 1, visited), 1)
        p = b.isetp("eq", v, RZ)
        with b.if_(p):
            b.stg(b.wide(nid, 4, cost), c1, 4)
            b.stg(b.wide(nid, 1, upd), one, 2)
    return b.build()


@family("bfs_update")
def bfs_update(L: Launch) -> Program:
    """Rodinia BFS Kernel2: nodes reached this level join the next frontier."""
    a = L.args
    b = Builder(L.name)
    tid = b.s2r("SR_TID.X")
    cta = b.s2r("SR_CTAID.X")
    t = b.imad(cta, b.uldc(L.block[0]), tid)
    b.exit_if(b.isetp("ge", t, b.uldc(a["n"])))
    ua = b.wide(t, 1, b.uldc(a["updating"]))
    u = b.ldg(ua, 1)
    p = b.isetp("ne", u, RZ)
    with b.if_(p):
        one = b.uldc(1)
        b.stg(b.wide(t, 1, b.uldc(a["mask"])), one, 2)
        b.stg(b.wide(t, 1, b.uldc(a["visited"])), one, 2)
        b.stg(b.uldc(a["over"]), one, 2)
        b.stg(ua, RZ, 2)
    return b.build()


@family("nw_diag")
def nw_diag(L: Launch) -> Program:
    """Rodinia needle_cuda_shared_1/2: one 16x16 tile per CTA along an anti-diagonal; tiles are
    filled by a 16-step wavefront in shared memory (lanes <= m active at step m)."""
    a = L.args
    cols, pen = a["cols"], a["penalty"]
    B = 16
    b = Builder(L.name, shmem=(B + 1) * (B + 1) * 4 + B * B * 4)
    tx = b.s2r("SR_TID.X")
    bx = b.s2r("SR_CTAID.X")
    # tile coordinates from the diagonal index (kernel 1: upper-left triangle, kernel 2: lower-right)
    diag = b.uldc(a["diag"])
    if a["upper"]:
        bxx = bx
        byy = b.iadd3(diag, b.imadi(bx, -1, RZ))
        byy = b.iaddi(byy, -1)
    else:
        bxx = b.iadd3(bx, b.uldc(a["bw"] - a["diag"]))
        byy = b.iadd3(b.uldc(a["bw"] - 1), b.imadi(bx, -1, RZ))
    base = b.imadi(byy, B * cols, b.imadi(bxx, B, RZ))
    inp, ref = b.uldc(a["input"]), b.uldc(a["ref"])
    colsr = b.uldc(cols)
    one = b.uldc(1)
    ty = b.movi(0)
    yend = b.uldc(B)
    with b.loop(ty, yend, one):  # reference tile -> shared
        e = b.imad(ty, colsr, b.iadd3(base, tx))
        e = b.iadd3(e, colsr)
        e = b.iaddi(e, 1)
        r = b.ldg(b.wide(e, 4, ref), 4)
        b.sts(b.imadi(ty, B * 4, b.imadi(tx, 4, RZ)), r, 4, off=(B + 1) * (B + 1) * 4)
    nb = b.ldg(b.wide(b.iadd3(base, tx), 4, inp), 4, off=4)
    b.sts(b.imadi(tx, 4, RZ), nb, 4, off=4)
    wb = b.ldg(b.wide(b.imad(tx, colsr, b.iadd3(base, colsr)), 4, inp), 4)
    b.sts(b.imadi(tx, (B + 1) * 4, RZ), wb, 4, off=(B + 1) * 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    penr = b.uldc(-pen)
    for m in range(B):  # wavefront: step m, lanes tx <= m
        p = b.isetp("le", tx, b.uldc(m))
        with b.scope(), b.if_(p):
            row = b.iaddi(b.imadi(tx, -1, RZ), m + 1)  # t_index_y = m - tx + 1
            col = b.iaddi(tx, 1)
            sh = b.imadi(row, (B + 1) * 4, b.imadi(col, 4, RZ))
            nw_ = b.lds(sh, 4, off=-(B + 1) * 4 - 4)
            w_ = b.lds(sh, 4, off=-4)
            n_ = b.lds(sh, 4, off=-(B + 1) * 4)
            rr = b.lds(sh, 4, off=(B + 1) * (B + 1) * 4 - (B + 2) * 4)
            d = b.iadd3(nw_, rr)
            x = b.imnmx(d, b.iadd3(w_, penr), is_max=True)
            x = b.imnmx(x, b.iadd3(n_, penr), is_max=True)
            b.sts(sh, x, 4)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
    ty2 = b.movi(0)
    with b.loop(ty2, yend, one):  # tile -> global
        v = b.lds(b.imadi(ty2, (B + 1) * 4, b.imadi(tx, 4, RZ)), 4, off=(B + 2) * 4)
        e = b.imad(ty2, colsr, b.iadd3(base, tx))
        b.stg(b.wide(e, 4, inp), v, 4, off=(cols + 1) * 4)
    return b.build()


@family("lud_diagonal")
def lud_diagonal(L: Launch) -> Program:
    """Rodinia lud_diagonal: one 16x16 block factorised in shared memory with triangular loops."""
    a = L.args
    n, off = a["n"], a["offset"]
    B = 16
    b = Builder(L.name, shmem=B * B * 4)
    tx = b.s2r("SR_TID.X")
    M = b.uldc(a["m"])
    base = b.wide(b.imadi(tx, n, RZ), 4, M)
    base = b.iaddi(base, (off * n + off) * 4)
    one, bend = b.uldc(1), b.uldc(B)
    r = b.movi(0)
    with b.loop(r, bend, one):
        v = b.ldg(b.wide(r, 4 * n, base), 4)
        b.sts(b.imadi(tx, B * 4, b.imadi(r, 4, RZ)), v, 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    i = b.movi(0)
    with b.loop(i, bend, one):
        p = b.isetp("gt", tx, i)
        with b.if_(p):
            j = b.movi(0)
            sa = b.imadi(tx, B * 4, RZ)
            acc = b.lds(b.imadi(i, 4, sa), 4)
            with b.loop(j, i, one):  # trip = i: grows with the outer step
                x = b.lds(b.imadi(j, 4, sa), 4)
                y = b.lds(b.imadi(j, B * 4, b.imadi(i, 4, RZ)), 4)
                acc = b.fsub(acc, b.fmul(x, y), dst=acc)
            d = b.lds(b.imadi(i, B * 4 + 4, RZ), 4)
            b.sts(b.imadi(i, 4, sa), b.fmul(acc, b.mufu("RCP", d)), 4)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
    r2 = b.movi(1)
    with b.loop(r2, bend, one):
        v = b.lds(b.imadi(r2, B * 4, b.imadi(tx, 4, RZ)), 4)
        b.stg(b.wide(r2, 4 * n, base), v, 4)
    return b.build()


@family("lud_perimeter")
def lud_perimeter(L: Launch) -> Program:
    """Rodinia lud_perimeter: 32 threads per block; the first 16 update a row block, the other
    16 a column block (divergent halves), each with a triangular loop."""
    a = L.args
    n, off = a["n"], a["offset"]
    B = 16
    b = Builder(L.name, shmem=3 * B * B * 4)
    tx = b.s2r("SR_TID.X")
    bx = b.s2r("SR_CTAID.X")
    M = b.uldc(a["m"])
    one, bend = b.uldc(1), b.uldc(B)
    blk = b.imadi(bx, B, b.uldc(off + B))
    p_row = b.isetp("lt", tx, bend)
    lane16 = b.andi(tx, 15)
    r = b.movi(0)
    with b.loop(r, bend, one):
        e_row = b.imadi(b.iaddi(r, off), n, b.iadd3(blk, lane16))
        e_col = b.imadi(b.iadd3(blk, r), n, b.iaddi(lane16, off))
        e = b.sel(e_row, e_col, p_row)
        v = b.ldg(b.wide(e, 4, M), 4)
        b.sts(b.imadi(r, B * 4, b.imadi(tx, 4, RZ)), v, 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    i = b.movi(0)
    with b.loop(i, bend, one):
        acc = b.lds(b.imadi(i, B * 4, b.imadi(tx, 4, RZ)), 4)
        j = b.movi(0)
        with b.loop(j, i, one):
            x = b.lds(b.imadi(j, B * 4, b.imadi(tx, 4, RZ)), 4, off=B * B * 4)
            y = b.lds(b.imadi(i, B * 4, b.imadi(j, 4, RZ)), 4, off=2 * B * B * 4)
            b.fsub(acc, b.fmul(x, y), dst=acc)
        b.sts(b.imadi(i, B * 4, b.imadi(tx, 4, RZ)), acc, 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    r2 = b.movi(0)
    with b.loop(r2, bend, one):
        v = b.lds(b.imadi(r2, B * 4, b.imadi(tx, 4, RZ)), 4)
        e_row = b.imadi(b.iaddi(r2, off), n, b.iadd3(blk, lane16))
        e_col = b.imadi(b.iadd3(blk, r2), n, b.iaddi(lane16, off))
        b.stg(b.wide(b.sel(e_row, e_col, p_row), 4, M), v, 4)
    return b.build()


@family("lud_internal")
def lud_internal(L: Launch) -> Program:
    """Rodinia lud_internal: 16x16 threads per trailing block, shared tiles, 16-step FFMA."""
    a = L.args
    n, off = a["n"], a["offset"]
    B = 16
    b = Builder(L.name, shmem=2 * B * B * 4)
    tx, ty = b.s2r("SR_TID.X"), b.s2r("SR_TID.Y")
    bx, by = b.s2r("SR_CTAID.X"), b.s2r("SR_CTAID.Y")
    M = b.uldc(a["m"])
    gr = b.imadi(by, B, b.uldc(off + B))
    gc = b.imadi(bx, B, b.uldc(off + B))
    row = b.iadd3(gr, ty)
    col = b.iadd3(gc, tx)
    pr = b.ldg(b.wide(b.imadi(b.iaddi(ty, off), n, col), 4, M), 4)
    pc = b.ldg(b.wide(b.imadi(row, n, b.iaddi(tx, off)), 4, M), 4)
    st = b.imadi(ty, B * 4, b.imadi(tx, 4, RZ))
    b.sts(st, pr, 4)
    b.sts(st, pc, 4, off=B * B * 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    acc = b.movi(0.0)
    k = b.movi(0)
    one, bend = b.uldc(1), b.uldc(B)
    with b.loop(k, bend, one):
        x = b.lds(b.imadi(ty, B * 4, b.imadi(k, 4, RZ)), 4, off=B * B * 4)
        y = b.lds(b.imadi(k, B * 4, b.imadi(tx, 4, RZ)), 4)
        b.ffma(x, y, acc, dst=acc)
    ad = b.wide(b.imadi(row, n, col), 4, M)
    v = b.ldg(ad, 4)
    b.stg(ad, b.fsub(v, acc), 4)
    return b.build()


@family("backprop_forward")
def backprop_forward(L: Launch) -> Program:
    """Rodinia bpnn_layerforward: 16x16 tile of input x weights, then a shared-memory tree
    reduction over rows (log2(16) steps, the active half shrinks: divergence)."""
    a = L.args
    hid = a["hid"]
    B = 16
    b = Builder(L.name, shmem=(B + B * B) * 4)
    tx, ty = b.s2r("SR_TID.X"), b.s2r("SR_TID.Y")
    by = b.s2r("SR_CTAID.Y")
    inp, w, part = b.uldc(a["input"]), b.uldc(a["weights"]), b.uldc(a["partial"])
    idx = b.imadi(by, B, ty)
    p0 = b.isetp("eq", tx, RZ)
    with b.if_(p0):
        x = b.ldg(b.wide(idx, 4, inp), 4, off=4)
        b.sts(b.imadi(ty, 4, RZ), x, 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    e = b.imadi(b.iaddi(idx, 1), hid + 1, b.iaddi(tx, 1))
    wv = b.ldg(b.wide(e, 4, w), 4)
    xv = b.lds(b.imadi(ty, 4, RZ), 4)
    prod = b.fmul(wv, xv)
    st = b.imadi(ty, B * 4, b.imadi(tx, 4, RZ))
    b.sts(st, prod, 4, off=B * 4)
    b.simple("BAR.SYNC.DEFER_BLOCKING")
    for s in (1, 2, 4, 8):  # power-of-two tree over ty
        m = b.andi(ty, 2 * s - 1)
        p = b.isetp("eq", m, RZ)
        with b.if_(p):
            u = b.lds(st, 4, off=B * 4)
            v = b.lds(st, 4, off=B * 4 + s * B * 4)
            b.sts(st, b.fadd(u, v), 4, off=B * 4)
        b.simple("BAR.SYNC.DEFER_BLOCKING")
    pt = b.isetp("eq", ty, RZ)
    with b.if_(pt):
        v = b.lds(b.imadi(tx, 4, RZ), 4, off=B * 4)
        b.stg(b.wide(b.imadi(by, hid, tx), 4, part), v, 4)
    return b.build()


@family("backprop_adjust")
def backprop_adjust(L: Launch) -> Program:
    """Rodinia bpnn_adjust_weights: w += eta*delta*x + momentum*oldw (2-D grid, no reuse)."""
    a = L.args
    hid = a["hid"]
    b = Builder(L.name)
    tx, ty = b.s2r("SR_TID.X"), b.s2r("SR_TID.Y")
    by = b.s2r("SR_CTAID.Y")
    idx = b.imadi(by, 16, ty)
    delta, ly, w, oldw = b.uldc(a["delta"]), b.uldc(a["ly"]), b.uldc(a["weights"]), b.uldc(a["oldw"])
    eta, mom = b.uldc(0.3), b.uldc(0.3)
    e = b.imadi(b.iaddi(idx, 1), hid + 1, b.iaddi(tx, 1))
    d = b.ldg(b.wide(b.iaddi(tx, 1), 4, delta), 4)
    x = b.ldg(b.wide(b.iaddi(idx, 1), 4, ly), 4)
    wa, oa = b.wide(e, 4, w), b.wide(e, 4, oldw)
    ov = b.ldg(oa, 4)
    wv = b.ldg(wa, 4)
    t = b.fmul(b.fmul(d, x), eta)
    t = b.ffma(ov, mom, t)
    b.stg(wa, b.fadd(wv, t), 4)
    b.stg(oa, t, 4)
    return b.build()


@family("cfd_step_factor")
def cfd_step_factor(L: Launch) -> Program:
    """Rodinia euler3d compute_step_factor: per cell, speed of sound (MUFU.SQRT) and step factor."""
    a = L.args
    n = a["nelr"]
    b = Builder(L.name)
    tid, cta = b.s2r("SR_TID.X"), b.s2r("SR_CTAID.X")
    i = b.imad(cta, b.uldc(L.block[0]), tid)
    V, areas, sf = b.uldc(a["vars"]), b.uldc(a["areas"]), b.uldc(a["step"])
    vals = [b.ldg(b.wide(i, 4, V), 4, off=4 * n * c) for c in range(5)]
    rho = vals[0]
    inv = b.mufu("RCP", rho)
    sp = b.fmul(vals[1], vals[1])
    sp = b.ffma(vals[2], vals[2], sp)
    sp = b.ffma(vals[3], vals[3], sp)
    sp = b.fmul(sp, inv)
    pr = b.fsub(vals[4], b.fmul(sp, b.uldc(0.5)))
    pr = b.fmul(pr, b.uldc(0.4))
    c = b.mufu("SQRT", b.fmul(b.fmul(pr, inv), b.uldc(1.4)))
    s = b.mufu("SQRT", b.fmul(sp, inv))
    ar = b.ldg(b.wide(i, 4, areas), 4)
    den = b.fmul(b.mufu("SQRT", ar), b.fadd(s, c))
    b.stg(b.wide(i, 4, sf), b.fmul(b.uldc(0.5), b.mufu("RCP", den)), 4)
    return b.build()


@family("cfd_flux")
def cfd_flux(L: Launch) -> Program:
    """Rodinia euler3d compute_flux: per cell, loop over 4 neighbours read from the mesh
    (irregular gathers); boundary faces (negative neighbour id) take a different path."""
    a = L.args
    n = a["nelr"]
    b = Builder(L.name)
    tid, cta = b.s2r("SR_TID.X"), b.s2r("SR_CTAID.X")
    i = b.imad(cta, b.uldc(L.block[0]), tid)
    V, nbr, nrm, flux = b.uldc(a["vars"]), b.uldc(a["nbr"]), b.uldc(a["normals"]), b.uldc(a["flux"])
    own = [b.ldg(b.wide(i, 4, V), 4, off=4 * n * c) for c in range(5)]
    inv = b.mufu("RCP", own[0])
    fl = [b.movi(0.0) for _ in range(5)]
    j = b.movi(0)
    four, one = b.uldc(4), b.uldc(1)
    with b.loop(j, four, one):
        e = b.imad(j, b.uldc(n), i)
        nb = b.ldg(b.wide(e, 4, nbr), 4)
        nx = b.ldg(b.wide(e, 4, nrm), 4)
        ny = b.ldg(b.wide(e, 4, nrm), 4, off=4 * n * 4)
        p_in = b.isetp("ge", nb, RZ)
        with b.if_(p_in):
            nv = [b.ldg(b.wide(nb, 4, V), 4, off=4 * n * c) for c in range(5)]
            ninv = b.mufu("RCP", nv[0])
            f = b.fmul(b.fadd(nv[1], own[1]), nx)
            f = b.ffma(b.fadd(nv[2], own[2]), ny, f)
            sm = b.mufu("SQRT", b.fmul(b.fadd(ninv, inv), b.uldc(1.4)))
            for c in range(5):
                b.ffma(f, b.fadd(nv[c], own[c]), fl[c], dst=fl[c])
                b.ffma(sm, b.fsub(own[c], nv[c]), fl[c], dst=fl[c])
        p_b = b.isetp("lt", nb, RZ)
        with b.if_(p_b):
            pr = b.fmul(own[4], b.uldc(0.4))
            b.ffma(pr, nx, fl[1], dst=fl[1])
            b.ffma(pr, ny, fl[2], dst=fl[2])
    for c in range(5):
        b.stg(b.wide(i, 4, flux), fl[c], 4, off=4 * n * c)
    return b.build()


@family("cfd_time_step")
def cfd_time_step(L: Launch) -> Program:
    """Rodinia euler3d time_step: vars = old + factor * flux for the 5 conserved variables."""
    a = L.args
    n = a["nelr"]
    b = Builder(L.name)
    tid, cta = b.s2r("SR_TID.X"), b.s2r("SR_CTAID.X")
    i = b.imad(cta, b.uldc(L.block[0]), tid)
    V, old, flux, sf = b.uldc(a["vars"]), b.uldc(a["old"]), b.uldc(a["flux"]), b.uldc(a["step"])
    f = b.ldg(b.wide(i, 4, sf), 4)
    f = b.fmul(f, b.uldc(1.0 / (3 + 1 - a["stage"])))
    for c in range(5):
        o = b.ldg(b.wide(i, 4, old), 4, off=4 * n * c)
        fl = b.ldg(b.wide(i, 4, flux), 4, off=4 * n * c)
        b.stg(b.wide(i, 4, V), b.ffma(f, fl, o), 4, off=4 * n * c)
    return b.build()


@family("conv_igemm")
def conv_igemm(L: Launch) -> Program:
    """AlexNet-style direct convolution as implicit GEMM: one thread per output pixel and
    channel, loop over C*R*S with (c, r, s) decoded by division, padding lanes predicated off."""
    a = L.args
    C, H, W, R, S, st, pad = a["C"], a["H"], a["W"], a["R"], a["S"], a["stride"], a["pad"]
    OH, OW, Kc = a["OH"], a["OW"], a["K"]
    b = Builder(L.name)
    tid, cta = b.s2r("SR_TID.X"), b.s2r("SR_CTAID.X")
    g = b.imad(cta, b.uldc(L.block[0]), tid)
    b.exit_if(b.isetp("ge", g, b.uldc(OH * OW * Kc)))
    kc = b.divi(g, OH * OW)
    pix = b.remi(g, kc, OH * OW)
    oh = b.divi(pix, OW)
    ow = b.remi(pix, oh, OW)
    ih0 = b.imadi(oh, st, b.uldc(-pad))
    iw0 = b.imadi(ow, st, b.uldc(-pad))
    X, Wt, Y, bias = b.uldc(a["x"]), b.uldc(a["w"]), b.uldc(a["y"]), b.uldc(a["bias"])
    wrow = b.wide(kc, C * R * S * 4, Wt)
    acc = b.movi(0.0)
    k = b.movi(0)
    kend, one = b.uldc(C * R * S), b.uldc(1)
    Hr, Wr = b.uldc(H), b.uldc(W)
    with b.loop(k, kend, one):
        c = b.divi(k, R * S)
        rs = b.remi(k, c, R * S)
        r = b.divi(rs, S)
        s = b.remi(rs, r, S)
        ih = b.iadd3(ih0, r)
        iw = b.iadd3(iw0, s)
        # in bounds iff min(ih, iw, H-1-ih, W-1-iw) >= 0 (padding lanes are predicated off)
        inb = b.imnmx(b.imnmx(ih, iw), b.iaddi(b.imnmx(b.imadi(ih, -1, Hr), b.imadi(iw, -1, Wr)), -1))
        pin = b.isetp("ge", inb, RZ)
        e = b.imad(b.imadi(c, H, ih), Wr, iw)
        x = b.ldg(b.wide(e, 4, X), 4, guard=(pin, False))
        wv = b.ldg(b.wide(k, 4, wrow), 4)
        xz = b.sel(x, RZ, pin)
        b.ffma(xz, wv, acc, dst=acc)
    bv = b.ldg(b.wide(kc, 4, bias), 4)
    y = b.fadd(acc, bv)
    y = b.fmnmx(y, b.movi(0.0), True)  # fused ReLU
    b.stg(b.wide(g, 4, Y), y, 4)
    return b.build()


@family("maxpool")
def maxpool(L: Launch) -> Program:
    """3x3 stride-2 max pooling: one thread per output element, FMNMX over the window."""
    a = L.args
    C, H, W, OH, OW = a["C"], a["H"], a["W"], a["OH"], a["OW"]
    b = Builder(L.name)
    tid, cta = b.s2r("SR_TID.X"), b.s2r("SR_CTAID.X")
    g = b.imad(cta, b.uldc(L.block[0]), tid)
    b.exit_if(b.isetp("ge", g, b.uldc(C * OH * OW)))
    c = b.divi(g, OH * OW)
    pix = b.remi(g, c, OH * OW)
    oh = b.divi(pix, OW)
    ow = b.remi(pix, oh, OW)
    X = b.uldc(a["x"])
    base = b.imad(b.imadi(c, H, b.imadi(oh, 2, RZ)), b.uldc(W), b.imadi(ow, 2, RZ))
    pa = b.wide(base, 4, X)
    m = b.movi(-3.0e38)
    for r in range(3):
        for s in range(3):
            v = b.ldg(pa, 4, off=4 * (r * W + s))
            b.fmnmx(m, v, True, dst=m)
    b.stg(b.wide(g, 4, b.uldc(a["y"])), m, 4)
    return b.build()


@family("fc_ffma")
def fc_ffma(L: Launch) -> Program:
    """Fully connected layer, one warp per output neuron: strided FFMA then shuffle reduction."""
    a = L.args
    K, N = a["K"], a["N"]
    b = Builder(L.name)
    tid, cta = b.s2r("SR_TID.X"), b.s2r("SR_CTAID.X")
    lane = b.s2r("SR_LANEID")
    row = b.imadi(cta, L.threads // 32, b.shf(tid, 5))
    b.exit_if(b.isetp("ge", row, b.uldc(N)))
    wr = b.wide(row, K * 4, b.uldc(a["w"]))
    X = b.uldc(a["x"])
    acc = b.movi(0.0)
    k = b.mov(lane)
    kend, step = b.uldc(K), b.uldc(32)
    with b.loop(k, kend, step):
        w = b.ldg(b.wide(k, 4, wr), 4)
        x = b.ldg(b.wide(k, 4, X), 4)
        b.ffma(w, x, acc, dst=acc)
    off = 16
    while off:
        b.fadd(acc, b.shfl("BFLY", acc, off), dst=acc)
        off //= 2
    p0 = b.isetp("eq", lane, RZ)
    with b.if_(p0):
        bv = b.ldg(b.wide(row, 4, b.uldc(a["bias"])), 4)
        y = b.fadd(acc, bv)
        if a.get("relu"):
            y = b.fmnmx(y, b.movi(0.0), True)
        b.stg(b.wide(row, 4, b.uldc(a["y"])), y, 4)
    return b.build()
