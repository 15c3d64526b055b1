r"""RGCN encoder of GCL-Sampler (paper 3.3.1 features, 3.3.2 architecture, section 4).

Graph batch (``gclsampler.graph`` layout) -> node features (64) -> three relational
convolutions 64 -> 128 -> 128 -> 256 (basis decomposition; LayerNorm, ReLU, Dropout,
no dropout after the last) -> mean over nodes of a warp -> mean over warps = kernel
embedding :math:`z \in \mathbb{R}^{256}` -> projection head 256 -> 128 -> 64 (training only).

The relational convolution is the hot spot of training. Two interchangeable
implementations compute the same function with the same parameters
(``weight``, ``comp``, ``root``, ``bias``, laid out like PyG's ``RGCNConv`` so state
dicts load into either):

* ``conv="pyg"`` — :class:`torch_geometric.nn.RGCNConv`, the reference.
* ``conv="fast"`` — :class:`TypedRGCNConv`: one sparse product gathers, per node,
  ``[x_v, mean_{N_1(v)} x, ..., mean_{N_R(v)} x]`` (or the basis-mixed means, see
  below) into one ``N x (K+1)F`` matrix, followed by ONE dense matmul with the
  stacked weights. The typed adjacency is built once per batch and shared by all
  layers (:func:`typed_adjacency`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gclsampler.graph import N_STATS
from gclsampler.graph import NODE_INSTRUCTION as INSTRUCTION
from gclsampler.graph import NODE_VARIABLE as VARIABLE
from gclsampler.model_config import ModelConfig, ModelConfigError  # re-exported: model.ModelConfig is public


def _vocab(cfg: ModelConfig) -> dict[str, int]:
    given = {"instruction": cfg.vocab_instruction, "pseudo": cfg.vocab_pseudo, "variable": cfg.vocab_variable}
    if any(v is None for v in given.values()):
        try:
            from gclsampler.graph import vocab_sizes
        except ImportError as exc:  # graph stage not installed: sizes must be given
            raise ModelConfigError(
                "model.vocab_*: gclsampler.graph is unavailable, set model.vocab_instruction/pseudo/variable"
            ) from exc
        known = vocab_sizes()
        given = {k: (known[k] if v is None else v) for k, v in given.items()}
    return {k: int(v) for k, v in given.items()}


# --------------------------------------------------------------------------- features


def pc_encoding(pc: Tensor, dim: int) -> Tensor:
    """Sinusoidal encoding of a normalised PC in [0, 1] (transformer-style).

    Why sinusoidal: nearby PCs (same basic block) get similar codes while the
    highest frequency still separates neighbouring instructions of long kernels.
    """
    half = dim // 2
    freqs = torch.exp(torch.arange(half, dtype=pc.dtype, device=pc.device) * (-math.log(10000.0) / max(half, 1)))
    ang = pc.unsqueeze(1) * 4096.0 * freqs  # scale [0,1] to a PC-offset-like range
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)




_N_INST_STATS = 3  # gclsampler.graph INST_STAT_COUNT, INST_STAT_WARP_LEN, INST_STAT_IMM


class FeatureEncoder(nn.Module):
    r"""Initial node features of paper 3.3.1, zero-padded to ``in_dim`` (64).

    * instruction: token embedding (64) + sinusoidal PC encoding (64)
    * variable: token embedding (32) ‖ stats * stats_scale (8) = 40, padded.
      The graph stage already maps values through signed log1p (|v| <= 89);
      the scale brings them to the order of the embeddings.
    * pseudo: token embedding (16), padded

    Shapes:
        - **input:** ``node_type`` :math:`(|V|)`, ``token`` :math:`(|V|)`,
          ``pc`` :math:`(|V|)`, ``stats`` :math:`(|V|, 8)`
        - **output:** :math:`(|V|, 64)`
    """

    def __init__(self, vocab: dict[str, int], in_dim: int = 64, inst_dim: int = 64, var_dim: int = 32,
                 pseudo_dim: int = 16, n_stats: int = N_STATS, stats_scale: float = 1.0 / 16, inst_stats: bool = False):
        super().__init__()
        # instruction statistics (repetition count, warp length, immediate) enter linearly
        self.inst_lin = nn.Linear(_N_INST_STATS, inst_dim, bias=False) if inst_stats else None
        self.stats_scale = float(stats_scale)
        self.in_dim, self.inst_dim, self.var_dim, self.pseudo_dim, self.n_stats = in_dim, inst_dim, var_dim, pseudo_dim, n_stats
        self.vocab = dict(vocab)
        self.inst_emb = nn.Embedding(vocab["instruction"], inst_dim)
        self.var_emb = nn.Embedding(vocab["variable"], var_dim)
        self.pseudo_emb = nn.Embedding(vocab["pseudo"], pseudo_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for emb in (self.inst_emb, self.var_emb, self.pseudo_emb):
            nn.init.normal_(emb.weight, std=1.0 / math.sqrt(emb.embedding_dim))
        if self.inst_lin is not None:
            self.inst_lin.reset_parameters()

    def forward(self, node_type: Tensor, token: Tensor, pc: Tensor, stats: Tensor) -> Tensor:
        # Assembled in whole-batch passes rather than per node type: one lookup in the three
        # tables stacked (each zero-padded to in_dim), plus a constant part (PC encoding,
        # variable stats) built without autograd. The per-type index_copy version copied the
        # N x in_dim output once per type and scattered it back in the backward pass.
        tables = (self.inst_emb, self.pseudo_emb, self.var_emb)  # row order = node type id
        sizes = torch.tensor([e.num_embeddings for e in tables], device=token.device)
        bad = (token < 0) | (token >= sizes[node_type])
        if bool(bad.any()):
            t = int(node_type[bad][0])  # the first offending token names its table (its own id, not the table's max)
            raise ModelConfigError(f"model.vocab_{('instruction', 'pseudo', 'variable')[t]}: token id "
                                   f"{int(token[bad][0])} outside vocabulary of {tables[t].num_embeddings}")
        table = torch.cat([F.pad(e.weight, (0, self.in_dim - e.embedding_dim)) for e in tables])
        offset = torch.cumsum(sizes, 0) - sizes
        out = F.embedding(token + offset[node_type], table)
        dtype = out.dtype
        with torch.no_grad():
            inst = (node_type == INSTRUCTION).nonzero(as_tuple=True)[0]
            var = (node_type == VARIABLE).nonzero(as_tuple=True)[0]
            const = torch.zeros_like(out)
            const[inst, : self.inst_dim] = pc_encoding(pc[inst].to(dtype), self.inst_dim)
            const[var, self.var_dim: self.var_dim + self.n_stats] = stats[var].to(dtype) * self.stats_scale
        out = out + const
        if self.inst_lin is not None:
            s = torch.zeros(out.size(0), _N_INST_STATS, dtype=dtype, device=out.device)
            s[inst] = stats[inst, :_N_INST_STATS].to(dtype) * self.stats_scale
            with torch.autocast(out.device.type, enabled=False):  # features stay float32 under autocast
                out = torch.addmm(out, s, F.pad(self.inst_lin.weight.t(), (0, self.in_dim - self.inst_dim)))
        return out

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(in_dim={self.in_dim}, instruction={self.vocab['instruction']}x{self.inst_dim}"
                f"+pc, variable={self.vocab['variable']}x{self.var_dim}+{self.n_stats} stats, "
                f"pseudo={self.vocab['pseudo']}x{self.pseudo_dim})")


# --------------------------------------------------------------------------- typed adjacency


@dataclass
class TypedAdjacency:
    """Per-batch sparse operators shared by every layer of the fast conv.

    ``fwd`` is CSR of shape ``(N*(R+1), N)``: row ``v*(R+1)`` selects ``x_v`` (self),
    row ``v*(R+1)+1+r`` holds ``1/|N_r(v)|`` at each type-r in-neighbour. ``bwd`` is
    its transpose, built once so backward needs no conversion.
    ``mean_fwd``/``mean_bwd`` hold the typed means only, ``(N*R, N)``, relation-major
    (row ``r*N+v``) for basis mixing; a batch builds one pair or the other.
    """

    num_nodes: int
    num_relations: int
    fwd: Optional[Tensor] = None
    bwd: Optional[Tensor] = None
    mean_fwd: Optional[Tensor] = None
    mean_bwd: Optional[Tensor] = None


def _csr(rows, cols, vals, shape: tuple[int, int]) -> Tensor:
    """CSR with int32 indices from unsorted (row, col, val) triples (numpy arrays or tensors).

    Why this shape: MKL's sparse BLAS (LP64) takes int32 indices, so int64 ones are
    converted on every product; and only the row order matters to a CSR x dense
    product, so one sort by the small row key suffices (the order of the columns
    within a row only changes the summation order). A stable sort keeps the result
    independent of the sort implementation.
    """
    if isinstance(rows, np.ndarray):
        order = np.argsort(rows, kind="stable")
        crow = np.zeros(shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows, minlength=shape[0]), out=crow[1:])
        parts = (torch.from_numpy(crow), torch.from_numpy(cols[order].astype(np.int32)), torch.from_numpy(vals[order]))
    else:
        order = torch.argsort(rows, stable=True)
        crow = torch.zeros(shape[0] + 1, dtype=torch.int32, device=rows.device)
        torch.cumsum(torch.bincount(rows, minlength=shape[0]), 0, out=crow[1:])
        parts = (crow, cols[order].to(torch.int32), vals[order])
    with warnings.catch_warnings():  # "CSR support is in beta" / invariant-check notices on every batch otherwise
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(*parts, size=shape, check_invariants=False)


def _csr_pair(rows, cols, vals, shape: tuple[int, int]) -> tuple[Tensor, Tensor]:
    """The CSR of ``(rows, cols, vals)`` and the CSR of its transpose."""
    return _csr(rows, cols, vals, shape), _csr(cols, rows, vals, (shape[1], shape[0]))


def typed_adjacency(edge_index: Tensor, edge_type: Tensor, num_nodes: int, num_relations: int,
                    dtype: torch.dtype = torch.float32, relation_major_mean: bool = False) -> TypedAdjacency:
    """Build the sparse operators of :class:`TypedAdjacency` (once per batch).

    Edges go ``edge_index[0] -> edge_index[1]`` (source to target, PyG convention);
    duplicate edges count twice, as in PyG's mean aggregation. Values are at least
    float32 (``dtype`` bfloat16 under autocast gives float32): the sparse kernels take
    no reduced precision on CPU.

    On CPU the index work runs in numpy, single-threaded. Why: each of the ~30 small
    torch ops here is split over the 2 threads, and on the busy 2-core machine every such
    split waits a scheduler slice for the second thread (≈2.7 ms per op whatever its
    size; torch's parallel sort ≈190 ms instead of ≈2 ms): ≈290 ms per 40k-node batch,
    against a few ms in numpy.
    """
    dtype = torch.promote_types(dtype, torch.float32)
    if edge_index.device.type == "cpu":
        xp, src, dst, et = np, edge_index[0].numpy(), edge_index[1].numpy(), edge_type.numpy()
        cat, ones, arange = np.concatenate, np.ones, np.arange
        fdtype = torch.empty(0, dtype=dtype).numpy().dtype
    else:
        xp, src, dst, et = torch, edge_index[0], edge_index[1], edge_type
        cat, fdtype = torch.cat, dtype
        ones = lambda n, dtype: torch.ones(n, dtype=dtype, device=src.device)  # noqa: E731
        arange = lambda n: torch.arange(n, device=src.device)  # noqa: E731
    seg = dst * num_relations + et
    deg = xp.bincount(seg, minlength=num_nodes * num_relations)
    val = 1.0 / (deg.astype(fdtype) if xp is np else deg.to(fdtype))[seg]
    if relation_major_mean:
        mean_fwd, mean_bwd = _csr_pair(et * num_nodes + dst, src, val, (num_nodes * num_relations, num_nodes))
        return TypedAdjacency(num_nodes, num_relations, None, None, mean_fwd, mean_bwd)
    r1 = num_relations + 1
    ar = arange(num_nodes)
    rows = cat([ar * r1, dst * r1 + 1 + et])
    cols = cat([ar, src])
    vals = cat([ones(num_nodes, dtype=fdtype), val])
    fwd, bwd = _csr_pair(rows, cols, vals, (num_nodes * r1, num_nodes))
    return TypedAdjacency(num_nodes, num_relations, fwd, bwd)


def _sparse_dense(a: Tensor, x: Tensor) -> Tensor:
    """``a @ x`` for CSR ``a``, written straight into a fresh output.

    Why not ``torch.sparse.mm``: on CPU it zero-fills a temporary and copies it into
    the result before MKL runs, three passes over an ``N*(R+1) x F`` matrix where one
    suffices (measured 2-4x slower than this on the bench batch). ``beta=0`` tells
    MKL not to read the uninitialised output.
    """
    x = x.to(a.dtype)  # sparse kernels are float32-only on CPU (autocast may hand over bfloat16)
    with torch.autocast(x.device.type, enabled=False):
        if a.device.type != "cpu":
            return torch.sparse.mm(a, x)
        out = torch.empty(a.size(0), x.size(1), dtype=x.dtype, device=x.device)
        return torch.addmm(out, a, x, beta=0, out=out)


class _SpMM(torch.autograd.Function):
    """``A @ x`` with a precomputed ``A^T`` for the backward (no per-call transpose)."""

    @staticmethod
    def forward(ctx, a: Tensor, at: Tensor, x: Tensor) -> Tensor:  # type: ignore[override]
        ctx.at = at
        return _sparse_dense(a, x)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        return None, None, _sparse_dense(ctx.at, grad.contiguous())


def spmm(a: Tensor, at: Tensor, x: Tensor) -> Tensor:
    return _SpMM.apply(a, at, x)


# --------------------------------------------------------------------------- convolutions


class TypedRGCNConv(nn.Module):
    r"""Relational graph convolution with mean aggregation (paper eq. 1), fused.

    .. math::
        \mathbf{x}'_v = \mathbf{W}_0 \mathbf{x}_v + \sum_{r} \frac{1}{|\mathcal{N}_r(v)|}
        \sum_{u \in \mathcal{N}_r(v)} \mathbf{W}_r \mathbf{x}_u + \mathbf{b},
        \qquad \mathbf{W}_r = \sum_b a_{rb} \mathbf{V}_b

    Same parameters as :class:`torch_geometric.nn.RGCNConv` (``weight`` = V
    :math:`(B, F_{in}, F_{out})`, ``comp`` = a :math:`(R, B)`, ``root`` = W_0, ``bias``).
    Instead of R masked propagations and R+1 matmuls it takes the typed means of
    :class:`TypedAdjacency` and does ONE matmul of ``N x (K+1)F_in`` by the stacked
    ``(K+1)F_in x F_out`` weights, where K = R, or K = B when the means are first
    mixed with ``comp`` (``mix_bases``; fewer FLOPs when B < R).

    Args:
        in_channels (int): size of each input feature.
        out_channels (int): size of each output feature.
        num_relations (int): number of edge types R.
        num_bases (int, optional): number of bases B (None = one weight per relation).
        mix_bases (bool): mix the means with ``comp`` before the matmul.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`,
          :class:`TypedAdjacency` of the batch (from ``edge_index`` :math:`(2, |\mathcal{E}|)`
          and ``edge_type`` :math:`(|\mathcal{E}|)`)
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """

    def __init__(self, in_channels: int, out_channels: int, num_relations: int,
                 num_bases: Optional[int] = None, mix_bases: bool = False):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_relations, self.num_bases = num_relations, num_bases
        self.mix_bases = bool(mix_bases and num_bases is not None)
        if num_bases is not None:
            self.weight = nn.Parameter(torch.empty(num_bases, in_channels, out_channels))
            self.comp = nn.Parameter(torch.empty(num_relations, num_bases))
        else:
            self.weight = nn.Parameter(torch.empty(num_relations, in_channels, out_channels))
            self.register_parameter("comp", None)
        self.root = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        from torch_geometric.nn.inits import glorot, zeros

        glorot(self.weight)
        glorot(self.comp)
        glorot(self.root)
        zeros(self.bias)

    def forward(self, x: Tensor, adj: TypedAdjacency) -> Tensor:
        n, f = x.shape
        if self.mix_bases:
            return self._forward_mixed(x, adj)
        weight = self.weight
        if self.num_bases is not None:
            weight = (self.comp @ weight.view(self.num_bases, -1)).view(self.num_relations, f, self.out_channels)
        stacked = torch.cat([self.root.unsqueeze(0), weight], 0).view(-1, self.out_channels)
        # [x_v, mean_1, ..., mean_R]; the width spelled out, as a batch of header-only traces has n = 0
        h = spmm(adj.fwd, adj.bwd, x).view(n, (self.num_relations + 1) * f)
        # Under bfloat16 autocast (train.precision=bf16) only this GEMM runs in bfloat16; the
        # output returns to x's dtype (float32) so LayerNorm and the readout's sums keep full precision.
        return torch.addmm(self.bias, h, stacked).to(x.dtype)

    def _forward_mixed(self, x: Tensor, adj: TypedAdjacency) -> Tensor:
        n, f = x.shape
        if adj.mean_fwd is None:
            raise RuntimeError("TypedAdjacency built without relation_major_mean for basis mixing")
        agg = spmm(adj.mean_fwd, adj.mean_bwd, x)  # (R*N, F) relation-major: one block per relation
        # c_b = sum_r a_rb mean_r: one (B x R) @ (R x N*F) product, no transposes or copies
        mixed = (self.comp.t() @ agg.view(self.num_relations, n * f)).view(self.num_bases, n, f)
        out = torch.addmm(self.bias, x, self.root)
        for b in range(self.num_bases):  # B+1 accumulating GEMMs: no N x (B+1)F concatenation
            out = torch.addmm(out, mixed[b], self.weight[b])
        return out.to(x.dtype)  # float32 under bf16 autocast too, as in forward()

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, "
                f"num_relations={self.num_relations}, num_bases={self.num_bases}, mix_bases={self.mix_bases})")


class _PygConv(nn.Module):
    """Adapter so the reference RGCNConv has the fast conv's call signature."""

    def __init__(self, in_channels: int, out_channels: int, num_relations: int, num_bases: Optional[int]):
        super().__init__()
        from torch_geometric.nn import RGCNConv

        self.conv = RGCNConv(in_channels, out_channels, num_relations, num_bases=num_bases, aggr="mean")

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor, edge_type: Tensor) -> Tensor:
        return self.conv(x, edge_index, edge_type)

    def __repr__(self) -> str:
        c = self.conv
        return f"RGCNConv[pyg]({c.in_channels}, {c.out_channels}, num_relations={c.num_relations}, num_bases={c.num_bases})"


# --------------------------------------------------------------------------- encoder


def warp_kernel_readout(h: Tensor, batch: Tensor, warp: Tensor, n_warps: Tensor) -> Tensor:
    """Mean over the nodes of each warp, then mean over the warps of each kernel.

    Why two levels: a kernel with many short warps and one with few long warps
    weigh each warp equally, as the paper's readout does. Warps left without
    nodes (node dropping) are skipped rather than counted as zero vectors.

    Shapes: ``h`` (N, D), ``batch``/``warp`` (N,), ``n_warps`` (G,) -> (G, D).
    """
    g = n_warps.numel()
    offset = torch.zeros(g, dtype=torch.long, device=h.device)
    if g > 1:
        offset[1:] = torch.cumsum(n_warps, 0)[:-1]
    total = int(n_warps.sum())
    gw = warp + offset[batch]
    wsum = torch.zeros(total, h.size(1), dtype=h.dtype, device=h.device).index_add_(0, gw, h)
    wcnt = torch.bincount(gw, minlength=total).to(h.dtype)
    wmean = wsum / wcnt.clamp(min=1).unsqueeze(1)
    present = (wcnt > 0).to(h.dtype)
    warp_graph = torch.repeat_interleave(torch.arange(g, device=h.device), n_warps)
    gsum = torch.zeros(g, h.size(1), dtype=h.dtype, device=h.device).index_add_(0, warp_graph, wmean)
    gcnt = torch.zeros(g, dtype=h.dtype, device=h.device).index_add_(0, warp_graph, present)
    return gsum / gcnt.clamp(min=1).unsqueeze(1)


class RGCNEncoder(nn.Module):
    r"""Features -> 3 relational convs (LayerNorm, ReLU, Dropout; none after the last) -> readout.

    Shapes:
        - **input:** a graph batch (``node_type, token, pc, stats, edge_index,
          edge_type, warp, n_warps, batch``), optional feature noise ``noise_node`` (M,) and
          ``noise`` (M, in_dim) from ``gclsampler.augment.augment_batch``
        - **output:** kernel embeddings :math:`(G, 256 + 8)` (:math:`(G, 256)` without ``kernel_features``)
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.features = FeatureEncoder(_vocab(cfg), cfg.in_dim, cfg.inst_token_dim, cfg.var_token_dim,
                                       cfg.pseudo_token_dim, cfg.n_stats, cfg.stats_scale, cfg.inst_stats)
        dims = [cfg.in_dim] + [cfg.hidden_dim] * (cfg.num_layers - 1) + [cfg.out_dim]
        mix = cfg.basis_mixing == "always" or (
            cfg.basis_mixing == "auto" and cfg.num_bases is not None and cfg.num_bases < cfg.num_relations)
        self.mix_bases = bool(mix and cfg.num_bases is not None)
        self.convs = nn.ModuleList()
        for a, b in zip(dims[:-1], dims[1:]):
            if cfg.conv == "pyg":
                self.convs.append(_PygConv(a, b, cfg.num_relations, cfg.num_bases))
            else:
                self.convs.append(TypedRGCNConv(a, b, cfg.num_relations, cfg.num_bases, mix_bases=self.mix_bases))
        self.norms = nn.ModuleList(nn.LayerNorm(b) for b in dims[1:])
        self.dropout = cfg.dropout

    def reset_parameters(self) -> None:
        self.features.reset_parameters()
        for c, nrm in zip(self.convs, self.norms):
            c.reset_parameters()
            nrm.reset_parameters()

    def node_features(self, data) -> Tensor:
        x = self.features(data.node_type, data.token, data.pc, data.stats)
        noise = getattr(data, "noise", None)
        if noise is not None and noise.numel():
            # feature-noise augmentation (paper 3.3.1) on the encoded 64-d features; applied
            # whenever a view carries it (validation views too), never by embed() on raw graphs.
            # The augmentation drew it from its seeded generator: no RNG is used here.
            x = x.index_add(0, data.noise_node, noise.to(x.dtype))
        return x

    def forward(self, data) -> Tensor:
        x = self.node_features(data)
        n = x.size(0)
        if self.cfg.conv == "fast":
            adj = typed_adjacency(data.edge_index, data.edge_type, n, self.cfg.num_relations, x.dtype,
                                  relation_major_mean=self.mix_bases)
        last = len(self.convs) - 1
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            x = conv(x, adj) if self.cfg.conv == "fast" else conv(x, data.edge_index, data.edge_type)
            x = F.relu(norm(x))
            if i < last:
                x = F.dropout(x, self.dropout, self.training)
        z = warp_kernel_readout(x, _batch_vector(data), data.warp, data.n_warps.view(-1))
        if self.cfg.kernel_features:
            kf = getattr(data, "kfeat", None)
            if kf is None:
                raise ModelConfigError("model.kernel_features: the graphs carry no kfeat (rebuild the graph cache)")
            z = torch.cat([z, kf.view(z.size(0), -1).to(z.dtype) * self.cfg.kfeat_scale], dim=1)
        return z


def _batch_vector(data) -> Tensor:
    b = getattr(data, "batch", None)
    if b is None:
        return torch.zeros(data.node_type.numel(), dtype=torch.long, device=data.node_type.device)
    return b


class ProjectionHead(nn.Module):
    """256 -> 128 (ReLU, Dropout) -> 64; used for the loss only, dropped after training."""

    def __init__(self, in_dim: int = 256, hidden: int = 128, out_dim: int = 64, dropout: float = 0.1):
        super().__init__()
        self.lin1, self.lin2, self.dropout = nn.Linear(in_dim, hidden), nn.Linear(hidden, out_dim), dropout

    def reset_parameters(self) -> None:
        self.lin1.reset_parameters()
        self.lin2.reset_parameters()

    def forward(self, z: Tensor) -> Tensor:
        return self.lin2(F.dropout(F.relu(self.lin1(z)), self.dropout, self.training))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.lin1.in_features} -> {self.lin1.out_features} -> {self.lin2.out_features})"


class GCLModel(nn.Module):
    """Encoder + projection head. ``forward`` returns ``(z (G,256), z' (G,64))``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = RGCNEncoder(cfg)
        self.head = ProjectionHead(cfg.embedding_dim, cfg.proj_hidden, cfg.proj_dim, cfg.dropout)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.head.reset_parameters()

    def forward(self, data) -> tuple[Tensor, Tensor]:
        z = self.encoder(data)
        return z, self.head(z)

    @torch.no_grad()
    def embed(self, data) -> Tensor:
        """Kernel embeddings z (eval mode: no dropout, no noise)."""
        was = self.training
        self.eval()
        try:
            return self.encoder(data)
        finally:
            self.train(was)


def pyg_to_fast_state(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rename a ``conv=pyg`` state dict (``convs.i.conv.weight``) to ``conv=fast`` keys."""
    out = {}
    for k, v in state.items():
        parts = k.split(".")
        if len(parts) >= 4 and parts[-2] == "conv" and parts[-4] == "convs":
            del parts[-2]
        out[".".join(parts)] = v
    return out


def fast_to_pyg_state(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Inverse of :func:`pyg_to_fast_state`."""
    out = {}
    for k, v in state.items():
        parts = k.split(".")
        if len(parts) >= 3 and parts[-3] == "convs" and parts[-1] in ("weight", "comp", "root", "bias"):
            parts.insert(len(parts) - 1, "conv")
        out[".".join(parts)] = v
    return out
