"""Augmentation pool: rates, edge/node consistency, strategy draws, determinism, noise hook."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from _random_graphs import VOCAB, random_graphs
from gclsampler.augment import STRATEGIES, AugmentConfig, AugmentConfigError, augment_batch, choose_strategies


def big_batch(n=40, seed=0):
    return Batch.from_data_list(random_graphs(n, seed=seed, n_warps=3, insts_per_warp=30))


def test_strategy_draws_one_or_two_from_the_pool():
    cfg = AugmentConfig()
    flags = choose_strategies(4000, cfg, torch.Generator().manual_seed(0))
    k = flags.sum(1)
    assert set(k.tolist()) == {1, 2}
    assert abs(float(k.float().mean()) - 1.5) < 0.05
    # each strategy picked with equal probability (1.5 / 3 = 0.5)
    assert torch.allclose(flags.float().mean(0), torch.full((3,), 0.5), atol=0.04)
    only = choose_strategies(500, AugmentConfig(pool=["edge_drop"]), torch.Generator().manual_seed(0))
    assert only[:, 1].all() and not only[:, [0, 2]].any()


def test_node_drop_removes_nodes_and_their_edges():
    b = big_batch()
    cfg = AugmentConfig(pool=["node_drop"], node_drop=0.15)
    v = augment_batch(b, cfg, torch.Generator().manual_seed(1))
    frac = 1 - v.num_nodes / b.num_nodes
    assert 0.12 < frac < 0.18
    assert int(v.edge_index.max()) < v.num_nodes
    # every surviving edge is an original edge between surviving nodes, with its type:
    # recover kept node ids by matching the (batch, warp, token, pc, stats) rows in order
    assert v.edge_index.size(1) < b.edge_index.size(1)
    assert v.edge_type.numel() == v.edge_index.size(1)
    assert torch.equal(v.n_warps, b.n_warps) and torch.all(v.noise_std == 0)


def test_node_drop_edges_are_original_edges():
    b = big_batch(10)
    n = b.num_nodes
    # tag nodes with a unique id through the stats column so the view can be mapped back
    b.stats = b.stats.clone()
    b.stats[:, 0] = torch.arange(n, dtype=torch.float32)
    v = augment_batch(b, AugmentConfig(pool=["node_drop"]), torch.Generator().manual_seed(3))
    orig = v.stats[:, 0].long()
    assert torch.all(orig[1:] > orig[:-1])
    original = {(s, d, t) for (s, d), t in zip(b.edge_index.t().tolist(), b.edge_type.tolist())}
    got = [(int(orig[s]), int(orig[d]), t) for (s, d), t in zip(v.edge_index.t().tolist(), v.edge_type.tolist())]
    assert set(got) <= original
    kept = set(orig.tolist())
    expected = [e for e in zip(b.edge_index[0].tolist(), b.edge_index[1].tolist(), b.edge_type.tolist())
                if e[0] in kept and e[1] in kept]
    assert sorted(got) == sorted(expected)


def test_edge_drop_rate_and_nodes_kept():
    b = big_batch()
    v = augment_batch(b, AugmentConfig(pool=["edge_drop"], edge_drop=0.15), torch.Generator().manual_seed(2))
    assert v.num_nodes == b.num_nodes
    frac = 1 - v.edge_index.size(1) / b.edge_index.size(1)
    assert 0.12 < frac < 0.18


def test_edge_drop_uses_its_own_rate_not_the_node_drop_rate():
    """augment.edge_drop sets how many edges a view loses; read from node_drop (equal by
    default), a config that changes one of them changed the other's views."""
    b = big_batch()
    v = augment_batch(b, AugmentConfig(pool=["edge_drop"], node_drop=0.0, edge_drop=0.5),
                      torch.Generator().manual_seed(2))
    assert v.num_nodes == b.num_nodes
    frac = 1 - v.edge_index.size(1) / b.edge_index.size(1)
    assert 0.45 < frac < 0.55


def test_feature_noise_sets_per_graph_sigma_and_encoder_uses_it():
    from gclsampler.model import GCLModel, ModelConfig

    b = big_batch(4)
    v = augment_batch(b, AugmentConfig(pool=["feature_noise"], feature_noise=0.01), torch.Generator().manual_seed(0))
    assert torch.allclose(v.noise_std, torch.full((4,), 0.01))
    m = GCLModel(ModelConfig(vocab_instruction=VOCAB["instruction"], vocab_pseudo=VOCAB["pseudo"],
                             vocab_variable=VOCAB["variable"], dropout=0.0)).eval()
    clean = m.encoder.features(b.node_type, b.token, b.pc, b.stats)
    noisy = m.encoder.node_features(v)
    d = noisy - clean
    assert 0.008 < float(d.std()) < 0.012
    torch.testing.assert_close(d, v.noise)  # every node of every graph got its drawn row, no other noise
    assert torch.equal(v.noise_node, torch.arange(b.num_nodes))
    assert torch.equal(m.encoder.node_features(v), noisy)  # no RNG in the encoder: same view, same features
    v.noise, v.noise_node = torch.zeros(0, 64), torch.zeros(0, dtype=torch.long)
    torch.testing.assert_close(m.encoder.node_features(v), clean)


def test_feature_noise_comes_from_the_generator_not_the_global_rng():
    """The noise was torch.randn_like inside the encoder, from torch's global RNG: views drawn
    with the same generator seed differed in their features (validation loss jittered)."""
    b = big_batch(8)
    cfg = AugmentConfig(pool=["node_drop", "feature_noise"], min_strategies=2, max_strategies=2)
    torch.manual_seed(0)
    a1 = augment_batch(b, cfg, torch.Generator().manual_seed(5), feature_dim=64)
    torch.manual_seed(1)  # another global RNG state changes nothing
    a2 = augment_batch(b, cfg, torch.Generator().manual_seed(5), feature_dim=64)
    a3 = augment_batch(b, cfg, torch.Generator().manual_seed(6), feature_dim=64)
    assert a1.noise.shape == (a1.num_nodes, 64) and float(a1.noise.abs().sum()) > 0
    assert torch.equal(a1.noise, a2.noise) and torch.equal(a1.noise_node, a2.noise_node)
    assert not torch.equal(a1.noise[:10], a3.noise[:10])
    # only the nodes of noised graphs carry noise
    only = augment_batch(b, AugmentConfig(pool=["edge_drop", "feature_noise"], min_strategies=1, max_strategies=1),
                         torch.Generator().manual_seed(3))
    noised_graphs = (only.noise_std > 0).nonzero(as_tuple=True)[0]
    assert 0 < noised_graphs.numel() < 8
    assert torch.equal(only.noise_node, torch.isin(only.batch, noised_graphs).nonzero(as_tuple=True)[0])


def test_deterministic_under_generator_seed():
    b = big_batch(8)
    a1 = augment_batch(b, AugmentConfig(), torch.Generator().manual_seed(7))
    a2 = augment_batch(b, AugmentConfig(), torch.Generator().manual_seed(7))
    a3 = augment_batch(b, AugmentConfig(), torch.Generator().manual_seed(8))
    assert torch.equal(a1.edge_index, a2.edge_index) and torch.equal(a1.noise_std, a2.noise_std)
    assert torch.equal(a1.noise, a2.noise) and torch.equal(a1.noise_node, a2.noise_node)
    assert not (torch.equal(a1.batch, a3.batch) and torch.equal(a1.edge_index, a3.edge_index))


@pytest.mark.parametrize("bad,key", [(dict(pool=[]), "augment.pool"), (dict(pool=["mask"]), "augment.pool"),
                                     (dict(node_drop=1.0), "augment.node_drop"),
                                     (dict(feature_noise=-1.0), "augment.feature_noise"),
                                     (dict(min_strategies=3, max_strategies=2), "augment.min_strategies")])
def test_bad_config(bad, key):
    with pytest.raises(AugmentConfigError, match=key):
        AugmentConfig(**bad).validate()


@pytest.mark.parametrize("key, value, message", [
    ("feature_noise", float("nan"), "augment.feature_noise: sigma must be a finite number >= 0, got nan"),
    ("feature_noise", float("inf"), "augment.feature_noise: sigma must be a finite number >= 0, got inf"),
    ("feature_noise", -0.5, "augment.feature_noise: sigma must be a finite number >= 0, got -0.5"),
    ("node_drop", float("nan"), "augment.node_drop: rate must be in [0, 1), got nan"),
    ("edge_drop", float("inf"), "augment.edge_drop: rate must be in [0, 1), got inf"),
    ("min_strategies", -1, "augment.min_strategies/max_strategies: need 0 <= min <= max, got -1, 2"),
])
def test_augment_config_out_of_range_names_the_key(key, value, message):
    """A NaN sigma passed `< 0` and made every noised view's features NaN."""
    with pytest.raises(AugmentConfigError) as err:
        AugmentConfig(**{key: value}).validate()
    assert str(err.value) == message


def test_strategy_names():
    assert STRATEGIES == ("node_drop", "edge_drop", "feature_noise")


def test_a_max_above_the_pool_size_means_the_whole_pool():
    """The count of strategies is drawn between min and max *achievable* ones: a max above the
    pool's size is the pool's size, so the draw is exactly that of max = len(pool) (the count is
    not skewed towards 'all of them' by the unreachable counts)."""
    pool = ["node_drop", "feature_noise"]
    for seed in range(5):
        capped = choose_strategies(300, AugmentConfig(pool=pool, max_strategies=len(pool)),
                                   torch.Generator().manual_seed(seed))
        over = choose_strategies(300, AugmentConfig(pool=pool, max_strategies=5), torch.Generator().manual_seed(seed))
        assert torch.equal(capped, over)
    k = over.sum(1).float()
    assert abs(float(k.mean()) - 1.5) < 0.1  # uniform over {1, 2}, not over {1, 2, 3, 4, 5} clipped


def test_a_min_above_the_pool_size_draws_the_whole_pool():
    """min_strategies beyond the pool (a valid config: validate() checks min <= max only) gives
    every graph every strategy of the pool instead of failing in torch.randint."""
    cfg = AugmentConfig(pool=["edge_drop"], min_strategies=2, max_strategies=3).validate()
    flags = choose_strategies(50, cfg, torch.Generator().manual_seed(0))
    assert flags[:, 1].all() and not flags[:, [0, 2]].any()
    cfg = AugmentConfig(pool=["edge_drop", "node_drop"], min_strategies=3, max_strategies=3).validate()
    flags = choose_strategies(50, cfg, torch.Generator().manual_seed(0))
    assert flags[:, :2].all() and not flags[:, 2].any()


def test_node_drop_and_edge_drop_together_both_apply():
    """A graph that draws both drops loses the edges of its dropped nodes *and* its share of the
    other edges: dropping nodes must not undo the edge drop (the two masks are combined)."""
    b = big_batch(20)
    n = b.num_nodes
    b.stats = b.stats.clone()
    b.stats[:, 0] = torch.arange(n, dtype=torch.float32)  # tag nodes to map the view back
    cfg = AugmentConfig(pool=["node_drop", "edge_drop"], min_strategies=2, max_strategies=2,
                        node_drop=0.15, edge_drop=0.5)
    v = augment_batch(b, cfg, torch.Generator().manual_seed(4))
    orig = v.stats[:, 0].long()
    assert v.num_nodes < n  # nodes were dropped
    kept = torch.zeros(n, dtype=torch.bool)
    kept[orig] = True
    between_kept = int((kept[b.edge_index[0]] & kept[b.edge_index[1]]).sum())
    frac = 1 - v.edge_index.size(1) / between_kept  # of the edges node drop left, edge drop removed ~half
    assert 0.4 < frac < 0.6


def _chain(n, tag0):
    """A one-warp graph of ``n`` instruction nodes, node i tagged ``tag0 + i`` in stats[:, 0]."""
    from torch_geometric.data import Data

    stats = torch.zeros(n, 8)
    stats[:, 0] = torch.arange(tag0, tag0 + n, dtype=torch.float32)
    src = torch.arange(max(n - 1, 0))
    return Data(node_type=torch.zeros(n, dtype=torch.long), token=torch.arange(n) % VOCAB["instruction"],
                pc=torch.linspace(0, 1, n), stats=stats, edge_index=torch.stack([src, src + 1]),
                edge_type=torch.zeros(src.numel(), dtype=torch.long), warp=torch.zeros(n, dtype=torch.long),
                n_warps=torch.tensor([1]), kfeat=torch.ones(1, 8), num_nodes=n)


def test_node_drop_never_empties_a_graph():
    """Graphs of 1-3 nodes at a high drop rate lost every node, and an emptied graph's
    readout is the zero vector: one node of each must survive, and only one comes back."""
    sizes = [1, 2, 3, 0, 1, 3, 2, 1]  # a graph without nodes (an empty trace) stays empty
    graphs = [_chain(k, 10 * i) for i, k in enumerate(sizes)]
    b = Batch.from_data_list(graphs)
    cfg = AugmentConfig(pool=["node_drop"], node_drop=0.95).validate()
    sizes_t = torch.tensor(sizes)
    for seed in range(20):
        v = augment_batch(b, cfg, torch.Generator().manual_seed(seed))
        counts = torch.bincount(v.batch, minlength=len(sizes))
        assert torch.equal(counts, (sizes_t > 0).long()), (seed, counts)  # 0.95: nearly all rescued, one each
        tags = v.stats[:, 0].long()
        assert torch.equal(tags // 10, v.batch)  # the survivor is one of its own graph's nodes
        assert torch.equal(tags % 10 < sizes_t[v.batch], torch.ones_like(tags, dtype=torch.bool))
        again = augment_batch(b, cfg, torch.Generator().manual_seed(seed))
        assert torch.equal(v.stats, again.stats) and torch.equal(v.edge_index, again.edge_index)


def test_node_drop_survivor_is_drawn_not_always_the_first_node():
    cfg = AugmentConfig(pool=["node_drop"], node_drop=0.95).validate()
    b = Batch.from_data_list([_chain(3, 0)])
    kept = {int(augment_batch(b, cfg, torch.Generator().manual_seed(s)).stats[0, 0]) for s in range(40)}
    assert kept == {0, 1, 2}


def test_node_drop_keeps_other_graphs_views_as_drawn():
    """The rescue uses the draws already made: graphs that kept a node get the same view as
    plain ``rand < rate`` gives them, and the generator is left where it was."""
    graphs = [_chain(1, 0), _chain(40, 100), _chain(2, 200)]
    b = Batch.from_data_list(graphs)
    cfg = AugmentConfig(pool=["node_drop"], node_drop=0.6, edge_drop=0.0).validate()
    gen = torch.Generator().manual_seed(11)
    v = augment_batch(b, cfg, gen, feature_dim=4)
    ref = torch.Generator().manual_seed(11)
    choose_strategies(3, cfg, ref)
    u = torch.rand(b.num_nodes, generator=ref)
    big = b.batch == 1
    assert not bool((u[~big] >= 0.6).any())  # plain drop would empty both small graphs
    assert torch.bincount(v.batch, minlength=3)[[0, 2]].tolist() == [1, 1]
    assert torch.equal(v.stats[v.batch == 1, 0], b.stats[big & (u >= 0.6), 0])
    assert torch.equal(gen.get_state(), ref.get_state())


def test_emptied_graph_view_is_not_the_zero_embedding():
    from gclsampler.model import GCLModel, ModelConfig

    b = Batch.from_data_list([_chain(1, 0), _chain(2, 10), _chain(1, 20)])
    m = GCLModel(ModelConfig(vocab_instruction=VOCAB["instruction"], vocab_pseudo=VOCAB["pseudo"],
                             vocab_variable=VOCAB["variable"], dropout=0.0, kernel_features=False)).eval()
    v = augment_batch(b, AugmentConfig(pool=["node_drop"], node_drop=0.99), torch.Generator().manual_seed(0))
    z = m.encoder(v)
    assert torch.isfinite(z).all() and bool((z.abs().sum(1) > 0).all())
