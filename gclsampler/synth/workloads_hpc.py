"""HPC workloads with the kernel-count structure of their suites (PolyBench-GPU, Rodinia, Tango).

Sizes are knobs; defaults keep generation in minutes. Data that steers control flow
(BFS graph and frontiers, CFD mesh neighbours) is real and seeded. SYNTHETIC.
"""

from __future__ import annotations

import numpy as np

import gclsampler.synth.families_hpc  # noqa: F401  (registers the HPC families)
from gclsampler.synth.families import Launch
from gclsampler.synth.workloads import register


@register("3mm", {"n": 512, "repeats": 1}, "PolyBench 3mm: E=A*B, F=C*D, G=E*F with plain FFMA kernels (3 invocations).",
          minimums={"n": 1, "repeats": 1})
def mm3(k, alloc, mem, rng):
    n = k["n"]
    A, B, C, D, E, F, G = (alloc.weight(4 * n * n) for _ in range(7))
    out = []
    grid, block = (-(-n // 32), -(-n // 8), 1), (32, 8, 1)
    for _ in range(k["repeats"]):
        for i, (x, y, z) in enumerate(((A, B, E), (C, D, F), (E, F, G)), start=1):
            out.append(Launch(f"_Z11mm3_kernel{i}PfS_S_", "gemm_ffma", grid, block, dict(N=n, M=n, K=n, A=x, B=y, C=z)))
    return out


@register("lu", {"n": 1024}, "PolyBench lu: per pivot k, a row-scale and a trailing-update kernel (2n invocations, "
          "active threads shrink with k).",
          minimums={"n": 1})
def lu(k, alloc, mem, rng):
    n = k["n"]
    A = alloc.weight(4 * n * n)
    out = []
    for kk in range(n):
        out.append(Launch("_Z10lu_kernel1Pfi", "lu_row", (-(-n // 256), 1, 1), (256, 1, 1), dict(n=n, k=kk, A=A)))
        out.append(Launch("_Z10lu_kernel2Pfi", "lu_update", (-(-n // 32), -(-n // 8), 1), (32, 8, 1),
                          dict(n=n, k=kk, A=A)))
    return out


@register("bfs", {"nodes": 65536, "degree": 6}, "Rodinia BFS on a seeded random graph: Kernel/Kernel2 per level.",
          minimums={"nodes": 1, "degree": 0})
def bfs(k, alloc, mem, rng):
    n, deg = k["nodes"], k["degree"]
    counts = rng.poisson(deg, size=n).astype(np.int32)
    starts = np.zeros(n, np.int32)
    starts[1:] = np.cumsum(counts)[:-1]
    m = int(counts.sum())
    # mostly-local neighbourhoods plus long-range edges, like the Rodinia generator's graphs
    src = np.repeat(np.arange(n), counts)
    local = (src + rng.integers(-64, 65, size=m)) % n
    far = rng.integers(0, n, size=m)
    edges = np.where(rng.random(m) < 0.7, local, far).astype(np.int32)
    nodes = np.stack([starts, counts], axis=1).reshape(-1).astype(np.int32)
    # host-side BFS levels from node 0 (what the kernels compute)
    level = np.full(n, -1, np.int64)
    level[0] = 0
    frontier = np.array([0])
    lv = 0
    while len(frontier):
        nb = np.unique(np.concatenate([edges[starts[f]:starts[f] + counts[f]] for f in frontier]))
        nb = nb[level[nb] < 0]
        level[nb] = lv + 1
        frontier = nb
        lv += 1
    n_levels = lv
    p_nodes, p_edges = alloc.weight(nodes.nbytes), alloc.weight(edges.nbytes)
    mem.register(p_nodes, nodes.nbytes, nodes)
    mem.register(p_edges, edges.nbytes, edges)
    cost, over = alloc.weight(4 * n), alloc.weight(4)
    out = []
    grid, block = (-(-n // 512), 1, 1), (512, 1, 1)
    for L in range(n_levels):
        # each level sees its own snapshot of the frontier/visited/updating arrays
        fm = (level == L).astype(np.uint8)
        vis = ((level >= 0) & (level <= L)).astype(np.uint8)
        upd = (level == L + 1).astype(np.uint8)
        ptrs = {}
        for name, arr in (("mask", fm), ("visited", vis), ("updating", upd)):
            ptrs[name] = alloc.weight(n)
            mem.register(ptrs[name], n, arr)
        args = dict(n=n, nodes=p_nodes, edges=p_edges, cost=cost, over=over, **ptrs)
        out.append(Launch("_Z6KernelP4NodePiPbS2_S2_S1_i", "bfs_expand", grid, block, args))
        out.append(Launch("_Z7Kernel2PbS_S_S_i", "bfs_update", grid, block, args))
    return out


@register("nw", {"n": 2048, "penalty": 10}, "Rodinia Needleman-Wunsch: one kernel name per anti-diagonal "
          "(2*(n/16)-1 names), two behaviours (upper-left and lower-right triangles).",
          minimums={"n": 16})
def nw(k, alloc, mem, rng):
    n = k["n"]
    cols = n + 1
    bw = n // 16
    inp, ref = alloc.weight(4 * cols * cols), alloc.weight(4 * cols * cols)
    out = []
    base = dict(cols=cols, penalty=k["penalty"], input=inp, ref=ref, bw=bw)
    for i in range(1, bw + 1):
        out.append(Launch(f"void needle_cuda_shared_1<{i}>(int*, int*, int, int, int, int)", "nw_diag",
                          (i, 1, 1), (16, 1, 1), dict(base, diag=i, upper=True)))
    for i in range(bw - 1, 0, -1):
        out.append(Launch(f"void needle_cuda_shared_2<{i}>(int*, int*, int, int, int, int)", "nw_diag",
                          (i, 1, 1), (16, 1, 1), dict(base, diag=i, upper=False)))
    return out


@register("lud", {"n": 1024}, "Rodinia LUD: per 16-wide step a diagonal, a perimeter and an internal kernel; "
          "the trailing matrix (and the work) shrinks every step.",
          minimums={"n": 1})
def lud(k, alloc, mem, rng):
    n = k["n"]
    M = alloc.weight(4 * n * n)
    out = []
    steps = n // 16
    for it in range(steps - 1):
        off = it * 16
        g = steps - it - 1
        a = dict(n=n, m=M, offset=off)
        out.append(Launch("_Z12lud_diagonalPfii", "lud_diagonal", (1, 1, 1), (16, 1, 1), a))
        out.append(Launch("_Z13lud_perimeterPfii", "lud_perimeter", (g, 1, 1), (32, 1, 1), a))
        out.append(Launch("_Z12lud_internalPfii", "lud_internal", (g, g, 1), (16, 16, 1), a))
    out.append(Launch("_Z12lud_diagonalPfii", "lud_diagonal", (1, 1, 1), (16, 1, 1),
                      dict(n=n, m=M, offset=(steps - 1) * 16)))
    return out


@register("backprop", {"input": 65536, "iterations": 1}, "Rodinia backprop: layer-forward and weight-adjust kernels "
          "(2 invocations per training iteration).",
          minimums={"input": 16, "iterations": 1})
def backprop(k, alloc, mem, rng):
    n, hid = k["input"], 16
    inp, w, oldw = alloc.weight(4 * (n + 1)), alloc.weight(4 * (n + 1) * (hid + 1)), alloc.weight(4 * (n + 1) * (hid + 1))
    part, delta = alloc.weight(4 * (n // 16) * hid), alloc.weight(4 * (hid + 1))
    grid, block = (1, n // 16, 1), (16, 16, 1)
    out = []
    for _ in range(k["iterations"]):
        out.append(Launch("_Z22bpnn_layerforward_CUDAPfS_S_S_ii", "backprop_forward", grid, block,
                          dict(hid=hid, input=inp, weights=w, partial=part)))
        out.append(Launch("_Z24bpnn_adjust_weights_cudaPfiS_iS_S_", "backprop_adjust", grid, block,
                          dict(hid=hid, delta=delta, ly=inp, weights=w, oldw=oldw)))
    return out


@register("cfd", {"cells": 97046, "iterations": 40}, "Rodinia CFD euler3d: per iteration a step-factor kernel and "
          "3 Runge-Kutta stages of flux + time-step (7 invocations per iteration).",
          minimums={"cells": 1, "iterations": 1})
def cfd(k, alloc, mem, rng):
    n = k["cells"]
    var, old, flux = alloc.weight(20 * n), alloc.weight(20 * n), alloc.weight(20 * n)
    areas, step, normals = alloc.weight(4 * n), alloc.weight(4 * n), alloc.weight(4 * 4 * 3 * n)
    # unstructured-mesh neighbours: mostly nearby cells, ~5% boundary faces (-1 wall, -2 far field)
    nbr = (np.arange(n)[None, :] + rng.integers(-400, 401, size=(4, n))) % n
    bnd = rng.random((4, n)) < 0.05
    nbr = np.where(bnd, -1 - rng.integers(0, 2, size=(4, n)), nbr).astype(np.int32).reshape(-1)
    p_nbr = alloc.weight(nbr.nbytes)
    mem.register(p_nbr, nbr.nbytes, nbr)
    grid, block = (-(-n // 192), 1, 1), (192, 1, 1)
    a = dict(nelr=n, vars=var, old=old, flux=flux, areas=areas, step=step, normals=normals, nbr=p_nbr)
    out = []
    for _ in range(k["iterations"]):
        out.append(Launch("_Z25cuda_compute_step_factoriPfS_S_", "cfd_step_factor", grid, block, a))
        for stage in range(3):
            out.append(Launch("_Z17cuda_compute_fluxiPiPfS0_S0_", "cfd_flux", grid, block, a))
            out.append(Launch("_Z14cuda_time_stepiiPfS_S_S_", "cfd_time_step", grid, block, dict(a, stage=stage)))
    return out


ALEXNET = [  # (C, H, K, R, stride, pad, pool_after)
    (3, 227, 96, 11, 4, 0, True),
    (96, 27, 256, 5, 1, 2, True),
    (256, 13, 384, 3, 1, 1, False),
    (384, 13, 384, 3, 1, 1, False),
    (384, 13, 256, 3, 1, 1, True),
]


@register("alexnet", {"images": 2}, "Tango AlexNet inference per image: 5 convolutions (implicit GEMM, fused ReLU), "
          "3 max-pools, 3 fully connected layers and a softmax (12 invocations per image).",
          minimums={"images": 1})
def alexnet(k, alloc, mem, rng):
    out = []
    ws = []
    for (C, H, K, R, st, pad, pool) in ALEXNET:
        ws.append((alloc.weight(4 * K * C * R * R), alloc.weight(4 * K)))
    fcs = [(9216, 4096), (4096, 4096), (4096, 1000)]
    fw = [(alloc.weight(4 * a * b), alloc.weight(4 * b)) for a, b in fcs]
    for _ in range(k["images"]):
        alloc.reset()
        x = alloc.act(4 * 3 * 227 * 227)
        for li, ((C, H, K, R, st, pad, pool), (w, bias)) in enumerate(zip(ALEXNET, ws), start=1):
            OH = (H + 2 * pad - R) // st + 1
            y = alloc.act(4 * K * OH * OH)
            nthr = K * OH * OH
            out.append(Launch(f"_Z{11 + len(str(li))}conv{li}_kernelPKfS0_S0_Pf", "conv_igemm",
                              (-(-nthr // 256), 1, 1), (256, 1, 1),
                              dict(C=C, H=H, W=H, R=R, S=R, stride=st, pad=pad, OH=OH, OW=OH, K=K, x=x, w=w, y=y,
                                   bias=bias)))
            x = y
            if pool:
                PH = (OH - 3) // 2 + 1
                y = alloc.act(4 * K * PH * PH)
                out.append(Launch("_Z14maxpool_kernelPKfPfiii", "maxpool", (-(-(K * PH * PH) // 256), 1, 1),
                                  (256, 1, 1), dict(C=K, H=OH, W=OH, OH=PH, OW=PH, x=x, y=y)))
                x = y
        for fi, ((kin, nout), (w, bias)) in enumerate(zip(fcs, fw), start=6):
            y = alloc.act(4 * nout)
            out.append(Launch(f"_Z11fc{fi}_kernelPKfS0_S0_Pf", "fc_ffma", (-(-nout // 8), 1, 1), (256, 1, 1),
                              dict(K=kin, N=nout, w=w, x=x, y=y, bias=bias, relu=fi < 8)))
            x = y
        out.append(Launch("_Z14softmax_kernelPfS_i", "softmax", (1, 1, 1), (256, 1, 1),
                          dict(cols=1000, esize=4, x=x, out=alloc.act(4000))))
    return out
