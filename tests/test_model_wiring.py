"""Encoder wiring the module docstring states but test_model.py does not pin down: the PC
encoding, LayerNorm -> ReLU -> Dropout between convs and nothing after the last, the size
vector's scale, the instruction statistics' scale, and the projection head's ReLU."""

from __future__ import annotations


import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from _random_graphs import VOCAB, random_graph, random_graphs
from gclsampler.model import GCLModel, ModelConfig, pc_encoding, warp_kernel_readout

VOCAB_KW = dict(vocab_instruction=VOCAB["instruction"], vocab_pseudo=VOCAB["pseudo"], vocab_variable=VOCAB["variable"])


def make(seed=0, **kw) -> GCLModel:
    torch.manual_seed(seed)
    return GCLModel(ModelConfig(**{**VOCAB_KW, **kw}))


def test_pc_encoding_is_sines_then_cosines():
    """Transformer-style: PC 0 encodes as sin(0) = 0 in the first half, cos(0) = 1 in the second;
    every (sin, cos) pair lies on the unit circle."""
    enc = pc_encoding(torch.tensor([0.0, 0.3, 1.0]), 64)
    assert enc.shape == (3, 64)
    torch.testing.assert_close(enc[0], torch.cat([torch.zeros(32), torch.ones(32)]))
    torch.testing.assert_close(enc[:, :32] ** 2 + enc[:, 32:] ** 2, torch.ones(3, 32))


def test_pc_encoding_separates_neighbouring_instructions_of_a_long_kernel():
    """"the highest frequency still separates neighbouring instructions of long kernels": two
    instructions 16 bytes apart in a 64 KiB kernel (normalised PCs 1/4096 apart) get clearly
    different codes, while the lowest frequencies keep them close (same basic block)."""
    p = torch.tensor([0.5, 0.5 + 1.0 / 4096])
    enc = pc_encoding(p, 64)
    assert float((enc[0] - enc[1]).norm()) > 0.5
    # lowest frequency (last sin/cos pair) barely moves
    assert abs(float(enc[0, 31] - enc[1, 31])) < 0.05 and abs(float(enc[0, 63] - enc[1, 63])) < 0.05


def _capture_layers(enc):
    outs, ins = {}, {}
    hooks = [c.register_forward_hook(lambda m, a, o, i=i: outs.__setitem__(i, o)) for i, c in enumerate(enc.convs)]
    hooks += [c.register_forward_pre_hook(lambda m, a, i=i: ins.__setitem__(i, a[0])) for i, c in enumerate(enc.convs)]
    return outs, ins, hooks


@pytest.mark.parametrize("conv", ["fast", "pyg"])
def test_each_conv_feeds_relu_of_layernorm_and_the_last_is_pooled_without_dropout(conv):
    """Between convs: LayerNorm, ReLU (then dropout, off in eval); after the last conv:
    LayerNorm and ReLU only, also in training mode, then the warp/kernel readout."""
    m = make(conv=conv, dropout=0.5)
    enc = m.encoder
    batch = Batch.from_data_list(random_graphs(3, seed=1))
    outs, ins, hooks = _capture_layers(enc)
    try:
        m.eval()
        with torch.no_grad():
            enc(batch)
        for i in range(len(enc.convs) - 1):
            torch.testing.assert_close(ins[i + 1], torch.relu(enc.norms[i](outs[i])))
        m.train()
        torch.manual_seed(3)
        with torch.no_grad():
            z = enc(batch)
    finally:
        for h in hooks:
            h.remove()
    last = torch.relu(enc.norms[-1](outs[len(enc.convs) - 1]))
    want = warp_kernel_readout(last, batch.batch, batch.warp, batch.n_warps)
    torch.testing.assert_close(z[:, :m.cfg.out_dim], want)


def test_single_layer_encoder_has_no_dropout_in_training():
    """With one conv it is also the last: no dropout at all, so training mode equals embed()."""
    m = make(num_layers=1, dropout=0.9)
    batch = Batch.from_data_list(random_graphs(2, seed=2))
    m.train()
    with torch.no_grad():
        z_train = m.encoder(batch)
    torch.testing.assert_close(z_train, m.embed(batch))


@pytest.mark.parametrize("scale", [0.0, 0.25, 3.0])
def test_size_vector_is_scaled_by_kfeat_scale(scale):
    m = make(kfeat_scale=scale)
    batch = Batch.from_data_list(random_graphs(2, seed=4))
    z = m.embed(batch)
    assert z.shape[1] == m.cfg.out_dim + 8
    torch.testing.assert_close(z[:, m.cfg.out_dim:], batch.kfeat * scale)


def test_instruction_statistics_enter_scaled_by_stats_scale():
    """With inst_stats, an instruction's feature is its token + PC code + inst_lin(stats[:3] *
    stats_scale): linear in the statistics with slope stats_scale."""
    m = make(inst_stats=True, stats_scale=0.125)
    f = m.encoder.features
    g = random_graph(np.random.default_rng(0), n_warps=1, insts_per_warp=6)
    inst = g.node_type == 0
    base_stats = g.stats.clone()
    base_stats[inst] = 0
    with torch.no_grad():
        x0 = f(g.node_type, g.token, g.pc, base_stats)
        x1 = f(g.node_type, g.token, g.pc, g.stats)
        want = (g.stats[inst, :3] * 0.125) @ f.inst_lin.weight.t()
    torch.testing.assert_close((x1 - x0)[inst, : f.inst_dim], want, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close((x1 - x0)[~inst], torch.zeros_like(x1[~inst]))


def test_projection_head_is_relu_between_its_two_linear_layers():
    """256 -> 128 (ReLU, Dropout) -> 64."""
    m = make(dropout=0.0)
    h = m.head
    z = torch.randn(5, h.lin1.in_features)
    with torch.no_grad():
        torch.testing.assert_close(h(z), h.lin2(torch.relu(h.lin1(z))))


def test_embed_runs_in_eval_mode_whatever_mode_the_model_is_in():
    """embed(): "eval mode: no dropout" even when called on a model in training mode."""
    m = make(dropout=0.5)
    batch = Batch.from_data_list(random_graphs(2, seed=6))
    m.eval()
    with torch.no_grad():
        want = m.encoder(batch)
    m.train()
    torch.testing.assert_close(m.embed(batch), want)
    torch.testing.assert_close(m.embed(batch), want)
