"""RGCN encoder: fast conv == PyG reference == eq. 1 by hand; features; readout; invariances."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch

from _random_graphs import VOCAB, random_graph, random_graphs
from gclsampler.model import (
    GCLModel,
    ModelConfig,
    ModelConfigError,
    RGCNEncoder,
    TypedRGCNConv,
    fast_to_pyg_state,
    pyg_to_fast_state,
    typed_adjacency,
    warp_kernel_readout,
)

VOCAB_KW = dict(vocab_instruction=VOCAB["instruction"], vocab_pseudo=VOCAB["pseudo"], vocab_variable=VOCAB["variable"])


def make(conv="fast", mix="auto", bases=2, dropout=0.0, seed=0) -> GCLModel:
    torch.manual_seed(seed)
    return GCLModel(ModelConfig(conv=conv, basis_mixing=mix, num_bases=bases, dropout=dropout, **VOCAB_KW))


def eq1_by_hand(conv: TypedRGCNConv, x, edge_index, edge_type):
    """Paper eq. 1 (before the activation) with explicit loops: the independent oracle."""
    n = x.size(0)
    w = conv.weight if conv.comp is None else torch.einsum("rb,bio->rio", conv.comp, conv.weight)
    out = x @ conv.root + conv.bias
    src, dst = edge_index.tolist()
    types = edge_type.tolist()
    for v in range(n):
        for r in range(conv.num_relations):
            nb = [s for s, d, t in zip(src, dst, types) if d == v and t == r]
            if nb:
                out[v] = out[v] + x[nb].mean(0) @ w[r]
    return out


@pytest.mark.parametrize("bases,mix", [(2, True), (2, False), (None, False), (4, True)])
def test_fast_conv_matches_equation_1(bases, mix):
    rng = np.random.default_rng(1)
    g = random_graph(rng, n_warps=2, insts_per_warp=6)
    torch.manual_seed(0)
    conv = TypedRGCNConv(5, 3, 4, num_bases=bases, mix_bases=mix)
    x = torch.randn(g.num_nodes, 5)
    adj = typed_adjacency(g.edge_index, g.edge_type, g.num_nodes, 4, relation_major_mean=mix)
    got = conv(x, adj)
    want = eq1_by_hand(conv, x, g.edge_index, g.edge_type)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mix", ["never", "always"])
@pytest.mark.parametrize("bases", [2, None])
def test_fast_equals_pyg_reference_outputs_and_grads(mix, bases):
    batch = Batch.from_data_list(random_graphs(6, seed=3))
    ref = make("pyg", "never", bases)
    fast = make("fast", mix, bases, seed=1)  # different init, then same weights loaded
    fast.load_state_dict(pyg_to_fast_state(ref.state_dict()))
    z_ref, p_ref = ref(batch)
    z_fast, p_fast = fast(batch)
    torch.testing.assert_close(z_fast, z_ref, rtol=1e-4, atol=1e-5)
    (p_ref.square().sum() + z_ref.sum()).backward()
    (p_fast.square().sum() + z_fast.sum()).backward()
    ref_grads = pyg_to_fast_state({k: v.grad for k, v in ref.named_parameters()})
    for name, p in fast.named_parameters():
        torch.testing.assert_close(p.grad, ref_grads[name], rtol=1e-3, atol=1e-4, msg=name)


def _degenerate_graphs() -> list:
    """A batch's worth of the graphs a trace can give besides the usual: one whose control-flow
    edges are gone (isolated instruction nodes), one with read/write edges only (relations 0 and 3
    without an edge), and one without nodes (a header-only trace), between ordinary ones."""
    rng = np.random.default_rng(7)
    isolated = random_graph(rng, 2, 6)
    keep = isolated.edge_type != 0
    isolated.edge_index, isolated.edge_type = isolated.edge_index[:, keep], isolated.edge_type[keep]
    two_relations = random_graph(rng, 1, 5)
    keep = (two_relations.edge_type == 1) | (two_relations.edge_type == 2)
    two_relations.edge_index, two_relations.edge_type = two_relations.edge_index[:, keep], two_relations.edge_type[keep]
    empty = random_graph(rng, 1, 2)
    for k in ("node_type", "token", "warp"):
        empty[k] = empty[k][:0]
    empty.pc, empty.stats = empty.pc[:0], empty.stats[:0]
    empty.edge_index, empty.edge_type = empty.edge_index[:, :0], empty.edge_type[:0]
    empty.n_warps, empty.num_nodes = torch.tensor([0]), 0
    return [random_graph(rng, 1, 4), isolated, empty, two_relations, random_graph(rng, 2, 3)]


@pytest.mark.parametrize("mix,bases", [("never", 2), ("always", 2), ("never", None)])
def test_fast_equals_pyg_on_isolated_nodes_edgeless_relations_and_empty_graphs(mix, bases):
    """The fast conv's typed means must give an isolated node (or a relation without edges) no
    message, as PyG's mean over no neighbours does, and a graph without nodes the zero vector."""
    graphs = _degenerate_graphs()
    batch = Batch.from_data_list(graphs)
    ref = make("pyg", "never", bases)
    fast = make("fast", mix, bases, seed=1)
    fast.load_state_dict(pyg_to_fast_state(ref.state_dict()))
    z_ref, p_ref = ref(batch)
    z_fast, p_fast = fast(batch)
    torch.testing.assert_close(z_fast, z_ref, rtol=1e-4, atol=1e-5)
    assert not z_fast[2, :-8].any()  # the empty graph: nothing pooled, only its size vector
    (p_ref.square().sum() + z_ref.sum()).backward()
    (p_fast.square().sum() + z_fast.sum()).backward()
    ref_grads = pyg_to_fast_state({k: v.grad for k, v in ref.named_parameters()})
    for name, p in fast.named_parameters():
        torch.testing.assert_close(p.grad, ref_grads[name], rtol=1e-3, atol=1e-4, msg=name)
    # each graph alone embeds as it does in the batch (no message crosses into the empty graph's neighbours)
    for i, g in enumerate(graphs):
        torch.testing.assert_close(fast.embed(Batch.from_data_list([g]))[0], fast.embed(batch)[i], rtol=1e-5, atol=1e-6)


def test_bf16_autocast_runs_only_the_conv_gemm_in_bf16():
    """train.precision=bf16: the fast conv's output is float32 and close to the fp32 one."""
    batch = Batch.from_data_list(random_graphs(4, seed=2))
    m = make()
    z32 = m.embed(batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = m.encoder.features(batch.node_type, batch.token, batch.pc, batch.stats)
        z16 = m.embed(batch)
    assert x.dtype == torch.float32 and z16.dtype == torch.float32
    torch.testing.assert_close(z16, z32, rtol=0.05, atol=0.05)
    assert not torch.equal(z16, z32)  # the GEMMs did run in bfloat16


def test_state_dict_key_round_trip():
    ref = make("pyg")
    keys = set(ref.state_dict())
    assert set(fast_to_pyg_state(pyg_to_fast_state(ref.state_dict()))) == keys
    assert set(pyg_to_fast_state(ref.state_dict())) == set(make("fast").state_dict())


def test_architecture_shapes_and_no_dropout_after_last_layer():
    m = make(dropout=0.5)
    convs = m.encoder.convs
    assert [(c.in_channels, c.out_channels) for c in convs] == [(64, 128), (128, 128), (128, 256)]
    batch = Batch.from_data_list(random_graphs(3, seed=0))
    z, p = m(batch)
    # z = pooled RGCN output (256) followed by the 8-column size vector of each graph
    assert z.shape == (3, 256 + 8) and p.shape == (3, 64)
    torch.testing.assert_close(z[:, 256:], batch.kfeat * m.cfg.kfeat_scale)
    # the last conv output (after LayerNorm+ReLU) is pooled without dropout: in eval and
    # train mode the embedding of a fixed last-layer input must be identical
    m.eval()
    z1 = m.embed(batch)
    z2 = m.embed(batch)
    torch.testing.assert_close(z1, z2)
    assert "num_relations=4" in repr(convs[0]) and "64, 128" in repr(convs[0])


def test_embed_leaves_the_model_in_the_mode_it_found():
    m = make(dropout=0.5)
    batch = Batch.from_data_list(random_graphs(2))
    for training in (True, False):
        m.train(training)
        m.embed(batch)
        assert m.training is training


def test_dropout_only_in_training():
    m = make(dropout=0.5)
    batch = Batch.from_data_list(random_graphs(3, seed=0))
    m.train()
    a, b = m(batch)[0], m(batch)[0]
    assert not torch.allclose(a, b)
    m.eval()
    torch.testing.assert_close(m(batch)[0], m(batch)[0])


def test_feature_encoder_layout():
    m = make()
    g = random_graph(np.random.default_rng(0), n_warps=1, insts_per_warp=8)
    x = m.encoder.features(g.node_type, g.token, g.pc, g.stats)
    assert x.shape == (g.num_nodes, 64)
    var = g.node_type == 2
    pseudo = g.node_type == 1
    assert torch.all(x[var][:, 40:] == 0) and torch.any(x[var][:, :40] != 0)
    assert torch.all(x[pseudo][:, 16:] == 0)
    torch.testing.assert_close(x[var][:, 32:40], g.stats[var] * m.cfg.stats_scale)
    # same opcode at different PCs -> different features (PC encoding)
    inst = (g.node_type == 0).nonzero().view(-1)[:2]
    tok = g.token.clone()
    tok[inst] = 3
    x2 = m.encoder.features(g.node_type, tok, g.pc, g.stats)
    assert not torch.allclose(x2[inst[0]], x2[inst[1]])


def test_token_outside_vocabulary_is_a_config_error():
    m = make()
    g = random_graph(np.random.default_rng(0), n_warps=1, insts_per_warp=4)
    g.token[0] = VOCAB["instruction"] + 5
    g.node_type[0] = 0
    with pytest.raises(ModelConfigError, match="model.vocab_instruction"):
        m.embed(Batch.from_data_list([g]))


@pytest.mark.parametrize("node_type, name", [(0, "instruction"), (1, "pseudo"), (2, "variable")])
@pytest.mark.parametrize("past", [0, -1])
def test_a_token_just_outside_its_vocabulary_is_a_config_error(node_type, name, past):
    """One past the last id (or -1) would read the neighbouring table's first (or last) row in
    the stacked lookup: refused by the table it belongs to, like any other id outside it."""
    m = make()
    g = random_graph(np.random.default_rng(0), n_warps=1, insts_per_warp=4)
    g.node_type[0] = node_type
    g.token[0] = VOCAB[name] + past if past == 0 else past
    # the error names the offending id itself (it named the table's largest token, inside it)
    with pytest.raises(ModelConfigError, match=f"model.vocab_{name}: token id {int(g.token[0])} outside vocabulary"):
        m.embed(Batch.from_data_list([g]))
    g.token[0] = VOCAB[name] - 1  # the last id is inside
    m.embed(Batch.from_data_list([g]))

@pytest.mark.parametrize("bad", [dict(conv="dense"), dict(num_bases=0), dict(dropout=1.0), dict(basis_mixing="x")])
def test_bad_model_config(bad):
    with pytest.raises(ModelConfigError, match="model."):
        RGCNEncoder(ModelConfig(**VOCAB_KW, **bad))


@pytest.mark.parametrize("key, value, message", [
    ("hidden_dim", 0, "model.hidden_dim: must be >= 1, got 0"),
    ("out_dim", 0, "model.out_dim: must be >= 1, got 0"),
    ("in_dim", 0, "model.in_dim: must be >= 1, got 0"),
    ("proj_hidden", 0, "model.proj_hidden: must be >= 1, got 0"),
    ("proj_dim", 0, "model.proj_dim: must be >= 1, got 0"),
    ("var_token_dim", 0, "model.var_token_dim: must be >= 1, got 0"),
    ("pseudo_token_dim", -1, "model.pseudo_token_dim: must be >= 1, got -1"),
    ("inst_token_dim", 63, "model.inst_token_dim: must be an even number >= 2 (the PC encoding is sine/cosine "
                           "pairs), got 63"),
    ("n_stats", 0, "model.n_stats: must be 8, the value statistics each graph node carries, got 0"),
    ("n_stats", 4, "model.n_stats: must be 8, the value statistics each graph node carries, got 4"),
    ("num_relations", 2, "model.num_relations: must be 4, the graphs' edge types (control, read, write, address): "
                         "fewer mix one node's messages into another's, more add weights no edge trains; got 2"),
    ("num_relations", 5, "model.num_relations: must be 4, the graphs' edge types (control, read, write, address): "
                         "fewer mix one node's messages into another's, more add weights no edge trains; got 5"),
    ("vocab_pseudo", 0, "model.vocab_pseudo: must be >= 1 or null (null = the graph stage's vocabulary), got 0"),
    ("stats_scale", float("nan"), "model.stats_scale: must be a finite number >= 0, got nan"),
    ("stats_scale", float("inf"), "model.stats_scale: must be a finite number >= 0, got inf"),
    ("stats_scale", -1.0, "model.stats_scale: must be a finite number >= 0, got -1.0"),
    ("kfeat_scale", float("nan"), "model.kfeat_scale: must be a finite number >= 0, got nan"),
])
def test_model_config_out_of_range_names_the_key(key, value, message):
    """Each of these built a model that divided by zero, failed on a shape deep in the first
    forward pass, trained on a constant loss (proj_dim 0), or, with num_relations 2, silently
    aggregated edge types 2-3 into other nodes' relation slots."""
    with pytest.raises(ModelConfigError) as err:
        ModelConfig(**{**VOCAB_KW, key: value}).validate()
    assert str(err.value) == message


def test_model_config_relations_follow_the_graph_stage():
    from gclsampler.graph import NUM_EDGE_TYPES

    assert ModelConfig().validate().num_relations == NUM_EDGE_TYPES


def test_readout_mean_of_warp_means_skips_empty_warps():
    h = torch.tensor([[1.0], [3.0], [10.0], [5.0], [7.0]])
    batch = torch.tensor([0, 0, 0, 1, 1])
    warp = torch.tensor([0, 0, 2, 0, 0])  # graph 0 has 3 warps, warp 1 has no nodes
    n_warps = torch.tensor([3, 1])
    out = warp_kernel_readout(h, batch, warp, n_warps)
    torch.testing.assert_close(out, torch.tensor([[(2.0 + 10.0) / 2], [6.0]]))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_embedding_invariant_to_node_order(seed):
    """Permuting node ids (and remapping edges) must not change the kernel embedding."""
    rng = np.random.default_rng(seed)
    g = random_graph(rng, n_warps=2, insts_per_warp=7)
    perm = torch.from_numpy(rng.permutation(g.num_nodes))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(g.num_nodes)
    h = g.clone()
    for key in ("node_type", "token", "pc", "stats", "warp"):
        h[key] = g[key][perm]
    h.edge_index = inv[g.edge_index]
    m = make()
    z1 = m.embed(Batch.from_data_list([g]))
    z2 = m.embed(Batch.from_data_list([h]))
    torch.testing.assert_close(z1, z2, rtol=1e-4, atol=1e-5)


def test_batching_does_not_mix_graphs():
    gs = random_graphs(4, seed=5)
    m = make()
    together = m.embed(Batch.from_data_list(gs))
    alone = torch.cat([m.embed(Batch.from_data_list([g])) for g in gs])
    torch.testing.assert_close(together, alone, rtol=1e-4, atol=1e-5)


def test_reset_parameters_reinitialises():
    m = make()
    before = m.encoder.convs[0].weight.detach().clone()
    m.reset_parameters()
    assert not torch.equal(before, m.encoder.convs[0].weight)
