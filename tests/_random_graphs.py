"""Random graphs with the exact ``gclsampler.graph`` Data layout (team contract).

Used by the model/training tests and ``bench/rgcn_step.py`` so they do not depend
on the trace or graph stages. The shape mimics a trace graph: per warp a chain of
instruction nodes linked by control-flow edges (type 0), variable nodes written by
one instruction and read by later ones (types 1..3), a few pseudo nodes.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

VOCAB = {"instruction": 40, "pseudo": 6, "variable": 12}


def random_graph(
    rng: np.random.Generator,
    n_warps: int = 4,
    insts_per_warp: int = 30,
    vocab: dict[str, int] | None = None,
) -> Data:
    """One graph: ``node_type`` 0=instruction 1=pseudo 2=variable, 4 edge types."""
    vocab = vocab or VOCAB
    node_type, token, pc, warp, src, dst, etype = [], [], [], [], [], [], []
    n = 0
    for w in range(n_warps):
        k = int(insts_per_warp)
        inst = np.arange(n, n + k)
        n += k
        node_type.append(np.zeros(k, np.int64))
        token.append(rng.integers(0, vocab["instruction"], k))
        pc.append(np.sort(rng.random(k)).astype(np.float32))
        warp.append(np.full(k, w))
        src.append(inst[:-1]); dst.append(inst[1:]); etype.append(np.zeros(k - 1, np.int64))
        nv = max(1, int(0.7 * k))
        var = np.arange(n, n + nv)
        n += nv
        node_type.append(np.full(nv, 2))
        token.append(rng.integers(0, vocab["variable"], nv))
        pc.append(np.zeros(nv, np.float32))
        warp.append(np.full(nv, w))
        writer = rng.integers(0, k, nv)
        src.append(inst[writer]); dst.append(var); etype.append(np.ones(nv, np.int64))
        nr = 2 * k
        reads = rng.integers(0, nv, nr)
        src.append(var[reads]); dst.append(inst[rng.integers(0, k, nr)])
        etype.append(rng.integers(2, 4, nr))
        npd = 2
        ps = np.arange(n, n + npd)
        n += npd
        node_type.append(np.ones(npd, np.int64))
        token.append(rng.integers(0, vocab["pseudo"], npd))
        pc.append(np.zeros(npd, np.float32))
        warp.append(np.full(npd, w))
        src.append(ps[[0]]); dst.append(inst[[0]]); etype.append(np.zeros(1, np.int64))
        src.append(inst[[-1]]); dst.append(ps[[1]]); etype.append(np.zeros(1, np.int64))
    node_type_a = np.concatenate(node_type)
    stats = np.zeros((n, 8), np.float32)
    is_var = node_type_a == 2
    stats[is_var] = rng.normal(size=(int(is_var.sum()), 8)).astype(np.float32)
    is_inst = node_type_a == 0
    stats[is_inst, :3] = np.abs(rng.normal(size=(int(is_inst.sum()), 3))).astype(np.float32)
    kfeat = np.abs(rng.normal(size=(1, 8))).astype(np.float32) * 4
    return Data(
        kfeat=torch.from_numpy(kfeat),
        node_type=torch.from_numpy(node_type_a),
        token=torch.from_numpy(np.concatenate(token).astype(np.int64)),
        pc=torch.from_numpy(np.concatenate(pc)),
        stats=torch.from_numpy(stats),
        edge_index=torch.from_numpy(np.stack([np.concatenate(src), np.concatenate(dst)]).astype(np.int64)),
        edge_type=torch.from_numpy(np.concatenate(etype).astype(np.int64)),
        warp=torch.from_numpy(np.concatenate(warp).astype(np.int64)),
        n_warps=torch.tensor([n_warps], dtype=torch.long),
        num_nodes=n,
    )


def random_graphs(n: int, seed: int = 0, **kw) -> list[Data]:
    """``n`` graphs of varying size; sizes vary so batches are ragged like real ones."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        kw2 = dict(kw)
        kw2.setdefault("n_warps", int(rng.integers(1, 5)))
        kw2.setdefault("insts_per_warp", int(rng.integers(5, 40)))
        out.append(random_graph(rng, **kw2))
    return out
