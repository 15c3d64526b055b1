"""Contrastive views of trace graphs (GCL-Sampler paper 3.3.1, "Graph Augmentation").

Pool: drop 15% of nodes with their incident edges, drop 15% of edges, Gaussian
noise (sigma = 0.01) on node features. Each graph of each view draws one or two
strategies from the pool at random; two views per kernel form the positive pair.

Where the noise goes: on the 64-d *encoded* node features (after the token
embeddings, PC encoding and stats), as the paper adds it "to node features". The
augmentation draws the noise itself, ``N(0, sigma^2)`` rows of ``feature_dim`` values
for the kept nodes of the graphs that drew ``feature_noise`` (fields ``noise`` and
``noise_node``), and the encoder adds them to those nodes' encoded features
(``gclsampler.model.RGCNEncoder.node_features``). Adding it inside the model keeps
augmentation independent of the embedding tables and lets the noise see learned
features rather than raw token ids; drawing it here keeps it on the seeded generator.

Everything is vectorised over a whole batch (no per-graph Python loop) and drawn
from the explicit ``torch.Generator`` passed in -- strategy choice, node and edge drops
*and* the feature noise -- so a view is a function of the batch, the config and the
generator state alone: same seed, bit-identical view (on any device the view is moved
to, since a CPU generator draws on the CPU), and torch's global RNG is not touched.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from gclsampler.augment_config import STRATEGIES, AugmentConfig, AugmentConfigError  # noqa: F401  (re-exported)


def choose_strategies(num_graphs: int, cfg: AugmentConfig, gen: torch.Generator) -> Tensor:
    """(G, 3) bool: which strategies (columns in ``STRATEGIES`` order) each graph gets."""
    p = len(cfg.pool)
    hi = min(cfg.max_strategies, p)
    lo = min(cfg.min_strategies, hi)
    k = torch.randint(lo, hi + 1, (num_graphs,), generator=gen)
    rank = torch.argsort(torch.rand(num_graphs, p, generator=gen), dim=1).argsort(dim=1)
    picked = rank < k.unsqueeze(1)
    out = torch.zeros(num_graphs, len(STRATEGIES), dtype=torch.bool)
    for j, name in enumerate(cfg.pool):
        out[:, STRATEGIES.index(name)] = picked[:, j]
    return out


def _keep_one_per_graph(keep: Tensor, u: Tensor, node_batch: Tensor, num_graphs: int) -> Tensor:
    """``keep`` with, in every graph that had nodes and kept none, its node of highest draw ``u``.

    Why: a graph of a few nodes can lose all of them (a one-node graph does in about one
    node-drop view in 7 at the default rate 0.15), and the readout of a graph without nodes
    is the zero vector, so its view says nothing of its kernel and every emptied graph of a
    batch projects to the same point. One node is what the readout needs (it skips empty
    warps, and a node of any type has features). The node of highest draw is the one closest
    to surviving: uniform over the graph's nodes, taken from draws already made, so the
    generator's stream -- and every view that lost no whole graph -- is as before. The lowest
    index wins a tie, so exactly one node comes back.
    """
    emptied = torch.bincount(node_batch[keep], minlength=num_graphs) == 0
    rescue = emptied[node_batch]
    if not bool(rescue.any()):
        return keep
    best = torch.full((num_graphs,), -1.0, dtype=u.dtype).scatter_reduce(0, node_batch, u, "amax")
    idx = (rescue & (u == best[node_batch])).nonzero(as_tuple=True)[0]
    n = keep.numel()
    first = torch.full((num_graphs,), n, dtype=torch.long).scatter_reduce(0, node_batch[idx], idx, "amin")
    keep = keep.clone()
    keep[first[first < n]] = True
    return keep


def augment_batch(batch: Data, cfg: AugmentConfig, gen: torch.Generator, feature_dim: int = 64) -> Data:
    """One random view of every graph in ``batch`` (a PyG ``Batch`` of trace graphs).

    Returns a ``Data`` with the graph fields the encoder reads (``node_type, token,
    pc, stats, edge_index, edge_type, warp, n_warps, batch``) plus ``noise_std`` (G,),
    each graph's sigma (0 without ``feature_noise``), and the noise itself: ``noise_node``
    (M,) the view's nodes in noised graphs and ``noise`` (M, ``feature_dim``) their
    ``N(0, sigma^2)`` draws from ``gen`` (``feature_dim`` = the encoder's ``model.in_dim``).
    ``n_warps`` is kept so warp ids stay valid; the readout skips warps that lost
    all their nodes, and node drop leaves every graph that had nodes at least one
    (``_keep_one_per_graph``). The input batch is not modified.
    """
    num_graphs = int(batch.n_warps.numel())
    n = int(batch.node_type.numel())
    node_batch = batch.batch if getattr(batch, "batch", None) is not None else torch.zeros(n, dtype=torch.long)
    flags = choose_strategies(num_graphs, cfg, gen)
    edge_index, edge_type = batch.edge_index, batch.edge_type

    keep_node = torch.ones(n, dtype=torch.bool)
    if cfg.node_drop > 0:
        u = torch.rand(n, generator=gen)
        keep_node = _keep_one_per_graph(~((u < cfg.node_drop) & flags[node_batch, 0]), u, node_batch, num_graphs)
    if cfg.edge_drop > 0 and edge_index.size(1) > 0:
        edge_graph = node_batch[edge_index[0]]
        keep_edge = ~((torch.rand(edge_index.size(1), generator=gen) < cfg.edge_drop) & flags[edge_graph, 1])
    else:
        keep_edge = torch.ones(edge_index.size(1), dtype=torch.bool)

    if not bool(keep_node.all()):
        keep_edge &= keep_node[edge_index[0]] & keep_node[edge_index[1]]
        new_id = torch.cumsum(keep_node.long(), 0) - 1
        edge_index = new_id[edge_index[:, keep_edge]]
        edge_type = edge_type[keep_edge]
        idx = keep_node.nonzero(as_tuple=True)[0]
    else:
        edge_index, edge_type = edge_index[:, keep_edge], edge_type[keep_edge]
        idx = None

    def take(t: Tensor) -> Tensor:
        return t if idx is None else t.index_select(0, idx)

    noise_std = flags[:, 2].to(torch.float32) * float(cfg.feature_noise)
    # drawn after the drops (drop patterns under a seed are as before), only for noised nodes
    view_batch = take(node_batch)
    sigma = noise_std[view_batch]
    noise_node = (sigma > 0).nonzero(as_tuple=True)[0]
    noise = torch.randn(int(noise_node.numel()), int(feature_dim), generator=gen) * sigma[noise_node].unsqueeze(1)
    return Data(
        node_type=take(batch.node_type), token=take(batch.token), pc=take(batch.pc), stats=take(batch.stats),
        warp=take(batch.warp), batch=view_batch, n_warps=batch.n_warps.view(-1),
        kfeat=getattr(batch, "kfeat", None),
        edge_index=edge_index, edge_type=edge_type, noise_std=noise_std, noise=noise, noise_node=noise_node, num_nodes=int(take(batch.node_type).numel()),
    )
