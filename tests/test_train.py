"""Training loop: split, batches, checkpoints, resume, early stopping, determinism, embedding rows."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from _random_graphs import VOCAB, random_graphs
from gclsampler.augment import AugmentConfig
from gclsampler.model import ModelConfig
from gclsampler.train import (
    TrainConfig,
    TrainConfigError,
    embed_invocations,
    evaluate_loss,
    fit,
    load_model,
    make_batches,
    resolve_precision,
    split_graphs,
)

MCFG = dict(vocab_instruction=VOCAB["instruction"], vocab_pseudo=VOCAB["pseudo"], vocab_variable=VOCAB["variable"])


def tiny(n=10, seed=0):
    return random_graphs(n, seed=seed, n_warps=2, insts_per_warp=6)


def tcfg(**kw):
    base = dict(epochs=2, batch_size=4, seed=0, progress=False, threads=1)
    base.update(kw)
    return TrainConfig(**base)


def test_split_is_a_seeded_80_20_partition():
    tr, va = split_graphs(50, 0.2, seed=3)
    assert sorted(tr + va) == list(range(50)) and len(va) == 10
    assert split_graphs(50, 0.2, seed=3) == (tr, va)
    assert split_graphs(50, 0.2, seed=4) != (tr, va)


@settings(deadline=None, max_examples=60)
@given(st.integers(0, 400), st.floats(0.0, 0.95), st.integers(0, 2**31))
@example(5, 0.2, 0).via("cfd: 5 unique graphs, the default val_fraction")
@example(3, 0.2, 7)
@example(3, 0.5, 0).via("review: 3 graphs at val_fraction 0.5 kept 1 to train")
def test_a_validation_split_is_empty_or_scorable_and_keeps_every_graph(n, frac, seed):
    """One validation graph has no negative, so no InfoNCE loss: it was held out of training
    for nothing (cfd's 5 graphs trained on 4)."""
    tr, va = split_graphs(n, frac, seed)
    assert sorted(tr + va) == list(range(n)) and (len(va) == 0 or len(va) >= 2)
    assert len(tr) >= min(n, 2)
    if n == 5 and frac == 0.2:
        assert tr == [0, 1, 2, 3, 4]


def test_batches_respect_caps_and_never_leave_a_singleton():
    sizes = [10] * 9
    bs = make_batches(list(range(9)), sizes, batch_size=4, max_nodes=0, gen=None)
    assert [len(b) for b in bs] == [4, 5]  # trailing singleton merged
    bs = make_batches(list(range(9)), sizes, batch_size=8, max_nodes=30, gen=None)
    assert all(sum(sizes[i] for i in b) <= 30 for b in bs[:-1])
    assert sorted(i for b in bs for i in b) == list(range(9))
    # max_nodes is a bound a batch may reach: three graphs of 3 + 3 + 4 nodes fill a cap of 10 together
    assert make_batches(list(range(6)), [3, 3, 4] * 2, batch_size=8, max_nodes=10, gen=None) == [[0, 1, 2], [3, 4, 5]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 120), min_size=0, max_size=30), st.integers(1, 8), st.integers(0, 150),
       st.booleans(), st.integers(0, 9))
@example(sizes=[70] * 10, batch_size=32, max_nodes=120, shuffle=False, seed=0)  # only the last pair was kept
@example(sizes=[10] * 5 + [150] + [10] * 5, batch_size=32, max_nodes=100, shuffle=False, seed=0)  # 5 was never trained
def test_every_graph_is_in_exactly_one_batch_of_two_or_more(sizes, batch_size, max_nodes, shuffle, seed):
    """Graphs too large to share a batch under max_nodes got one of their own and were then
    dropped: with 10 graphs of 70 nodes under a cap of 120, 8 were never trained on."""
    gen = torch.Generator().manual_seed(seed) if shuffle else None
    bs = make_batches(list(range(len(sizes))), sizes, batch_size, max_nodes, gen)
    flat = [i for b in bs for i in b]
    assert sorted(flat) == (list(range(len(sizes))) if len(sizes) >= 2 else [])
    assert all(len(b) >= 2 for b in bs)
    # the caps bend only by the pairing: two lone graphs, and an odd one out on the last batch
    assert all(len(b) <= max(batch_size, 2) + 1 for b in bs)
    if max_nodes > 0 and len(sizes) >= 2 and max(sizes) <= max_nodes // 3:  # all fit three to a batch
        assert all(sum(sizes[i] for i in b) <= max_nodes for b in bs[:-1])


def test_without_out_dir_fit_returns_the_kept_epochs_weights():
    """The best weights were reloaded only from out_dir/model.pt: without one, fit returned the
    last epoch's model beside the best epoch's loss (epoch 0 kept, epoch 3 returned)."""
    g = random_graphs(20, seed=0, n_warps=2, insts_per_warp=6)
    small = dict(MCFG, hidden_dim=16, out_dim=16, proj_hidden=16, proj_dim=8)
    # min_delta keeps epoch 0 whatever the later epochs score (with lr=0.05 and patience 3 the last
    # epoch had become the best one here, and the test's precondition failed before fit was checked)
    cfg = tcfg(epochs=3, lr=0.05, patience=0, min_delta=1e9)
    r = fit(g, ModelConfig(**small), AugmentConfig(), cfg, None)
    assert r.best_epoch == 0 and r.log[-1]["epoch"] == 2
    assert r.log[-1]["val_loss"] != r.log[0]["val_loss"]  # the last epoch's weights score otherwise
    sizes = [int(x.num_nodes) for x in g]
    again = evaluate_loss(r.model, g, r.val_ids, AugmentConfig(), cfg, sizes, torch.device("cpu"))
    assert again == pytest.approx(r.best_val_loss, abs=1e-5)


def test_a_capped_training_set_validates_on_a_spread_of_the_program():
    """With max_train_graphs, validation kept the lowest graph ids of its split, and ids follow
    first launch: 51 graphs of ids 0-265 out of 0-999, the start of the program only."""
    g = random_graphs(1, seed=0, n_warps=1, insts_per_warp=3) * 1000
    r = fit(g, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=0), None)
    _, val = split_graphs(1000, 0.2, 0)
    assert len(r.val_ids) == 51 and set(r.val_ids) <= set(val) and r.val_ids == sorted(r.val_ids)
    assert max(r.val_ids) > 900 and min(r.val_ids) < 100  # spread over the program, as the training subset is
    assert fit(g, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=0), None).val_ids == r.val_ids  # seeded



@pytest.mark.parametrize("n, cap, n_train, n_val", [
    (14, 10, 10, 2),  # one training graph over the cap is capped too
    (13, 10, 10, 3),  # at the cap: kept whole, and so is validation
    (20, 4, 4, 2),  # a small cap still validates on two graphs (InfoNCE needs a negative), not on round(0.8)
])
def test_max_train_graphs_caps_training_and_keeps_validation_scorable(n, cap, n_train, n_val):
    g = random_graphs(1, seed=0, n_warps=1, insts_per_warp=3) * n
    r = fit(g, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=0, max_train_graphs=cap, val_fraction=0.2), None)
    assert (len(r.train_ids), len(r.val_ids)) == (n_train, n_val)
    assert not set(r.train_ids) & set(r.val_ids)


def test_each_invocation_gets_its_own_graphs_embedding():
    from gclsampler.model import GCLModel
    from gclsampler.train import embed_graphs, embed_invocations

    m = GCLModel(ModelConfig(**MCFG))
    graphs = tiny(3, seed=4)
    z = embed_graphs(m, graphs)
    inv_to_graph = np.array([2, 0, 2, 1, 0])
    np.testing.assert_array_equal(embed_invocations(m, graphs, inv_to_graph), z[inv_to_graph])

def test_fit_writes_outputs_and_is_deterministic(tmp_path):
    graphs = tiny()
    r1 = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(), tmp_path / "a")
    r2 = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(), tmp_path / "b")
    for name in ("model.pt", "last.pt", "train_log.csv"):
        assert (tmp_path / "a" / name).exists()
    rows = list(csv.DictReader(open(tmp_path / "a" / "train_log.csv")))
    assert [int(r["epoch"]) for r in rows] == [0, 1]
    assert all(np.isfinite(float(r["val_loss"])) for r in rows)
    assert (tmp_path / "a" / "train_log.csv").read_bytes() .split(b"\n")[1].split(b",")[:3] == \
        (tmp_path / "b" / "train_log.csv").read_bytes().split(b"\n")[1].split(b",")[:3]
    inv = np.array([0, 3, 3, 9, 0])
    e1 = embed_invocations(r1.model, graphs, inv)
    e2 = embed_invocations(r2.model, graphs, inv)
    assert e1.dtype == np.float32 and e1.shape == (5, 256 + 8)
    assert e1.tobytes() == e2.tobytes()
    assert np.array_equal(e1[1], e1[2]) and np.array_equal(e1[0], e1[4])
    assert not np.array_equal(e1[0], e1[1])
    # best checkpoint reloads to the same embeddings
    e3 = embed_invocations(load_model(tmp_path / "a" / "model.pt"), graphs, inv)
    np.testing.assert_allclose(e3, e1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_training_lowers_the_contrastive_loss(tmp_path, precision):
    graphs = random_graphs(12, seed=4, n_warps=2, insts_per_warp=8)
    cfg = tcfg(epochs=8, batch_size=6, lr=3e-3, precision=precision)
    r = fit(graphs, ModelConfig(**MCFG, dropout=0.0), AugmentConfig(), cfg, None)
    assert r.log[-1]["train_loss"] < r.log[0]["train_loss"]


def test_bf16_training_validates_in_fp32(tmp_path):
    graphs = random_graphs(12, seed=4, n_warps=2, insts_per_warp=8)
    cfg = tcfg(epochs=2, batch_size=6, precision="bf16")
    r = fit(graphs, ModelConfig(**MCFG, dropout=0.0), AugmentConfig(), cfg, None)
    # validation loss is computed in float32 whatever the training precision: recomputing it
    # with the fp32 path gives the logged value of the last epoch's weights
    from gclsampler.train import evaluate_loss

    sizes = [g.num_nodes for g in graphs]
    again = evaluate_loss(r.model, graphs, r.val_ids, AugmentConfig(), cfg, sizes, torch.device("cpu"))
    assert again == pytest.approx(r.log[-1]["val_loss"], rel=1e-4, abs=1e-6)  # log rounds to 6 places


def test_validation_loss_is_bit_identical_on_fixed_views():
    """Validation views were fixed only in their drops: the feature noise came from torch's
    global RNG, so evaluate_loss on one model and graphs gave 2.2390, 2.2339, 2.2406, ... and
    the best checkpoint / early stopping could flip near a plateau."""
    from gclsampler.model import GCLModel
    from gclsampler.train import evaluate_loss

    graphs = random_graphs(12, seed=4, n_warps=2, insts_per_warp=8)
    sizes = [g.num_nodes for g in graphs]
    torch.manual_seed(0)
    model = GCLModel(ModelConfig(**MCFG))
    aug = AugmentConfig(pool=["feature_noise"], feature_noise=0.5)  # every view noised, visibly
    cfg, cpu, ids = tcfg(batch_size=6), torch.device("cpu"), list(range(12))
    first = evaluate_loss(model, graphs, ids, aug, cfg, sizes, cpu)
    torch.rand(5)  # the global RNG moves on between epochs (dropout, shuffles)
    again = evaluate_loss(model, graphs, ids, aug, cfg, sizes, cpu)
    assert first == again
    assert evaluate_loss(model, graphs, ids, aug, tcfg(batch_size=6, seed=1), sizes, cpu) != first


def test_validation_loss_weighs_every_graph_alike():
    """The validation loss is the batches' InfoNCE averaged over the validation graphs: a batch
    of five counts five times, a batch of four four times, so it neither tilts towards the
    graphs of a smaller batch nor shrinks with the number of graphs."""
    from gclsampler.model import GCLModel
    from gclsampler.train import _loss

    graphs = random_graphs(9, seed=5, n_warps=2, insts_per_warp=8)
    sizes = [g.num_nodes for g in graphs]
    torch.manual_seed(0)
    model = GCLModel(ModelConfig(**MCFG))
    aug = AugmentConfig(min_strategies=0, max_strategies=0)  # both views are the graph itself
    cfg, cpu, ids = tcfg(batch_size=4), torch.device("cpu"), list(range(9))
    batches = make_batches(ids, sizes, cfg.batch_size, cfg.max_nodes_per_batch, None)
    assert sorted(map(len, batches)) == [4, 5]
    model.eval()
    with torch.no_grad():  # each batch's own loss, on the same (unaugmented) views
        each = [float(_loss(model, [graphs[i] for i in b], aug, torch.Generator(), cfg.tau, cpu)) for b in batches]
    assert each[0] != pytest.approx(each[1])  # else any weighting agrees
    assert evaluate_loss(model, graphs, batches[1], aug, tcfg(batch_size=5), sizes, cpu) == pytest.approx(each[1])
    whole = evaluate_loss(model, graphs, ids, aug, cfg, sizes, cpu)
    assert whole == pytest.approx(sum(len(b) * v for b, v in zip(batches, each)) / len(ids), rel=1e-6)


def test_training_views_follow_the_seed_not_the_global_rng():
    """Same seed, same run whatever the global RNG did before fit; another seed, other views."""
    graphs = tiny(8, seed=2)
    aug = AugmentConfig(pool=["feature_noise"], feature_noise=0.5)
    mcfg = ModelConfig(**MCFG, dropout=0.0)  # no dropout: the views are the only randomness of a step
    from gclsampler.train import _two_views

    a = _two_views(graphs, aug, torch.Generator().manual_seed(12), torch.device("cpu"))
    torch.manual_seed(123)
    b = _two_views(graphs, aug, torch.Generator().manual_seed(12), torch.device("cpu"))
    c = _two_views(graphs, aug, torch.Generator().manual_seed(13), torch.device("cpu"))
    assert torch.equal(a.noise, b.noise) and not torch.equal(a.noise, c.noise)
    r1 = fit(graphs, mcfg, aug, tcfg(epochs=2), None)
    r2 = fit(graphs, mcfg, aug, tcfg(epochs=2), None)
    assert [(r["train_loss"], r["val_loss"]) for r in r1.log] == [(r["train_loss"], r["val_loss"]) for r in r2.log]


def _cpu_caps(monkeypatch, **flags):
    caps = dict(torch.cpu.get_capabilities())
    caps.update({"avx512_bf16": False, "amx_bf16": False, **flags})
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: caps)


@pytest.mark.parametrize("flags, want", [({}, "fp32"), ({"avx512_bf16": True}, "bf16"), ({"amx_bf16": True}, "bf16")])
def test_auto_precision_is_bf16_only_on_a_cpu_with_native_bfloat16(monkeypatch, flags, want):
    _cpu_caps(monkeypatch, **flags)
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) == want
    assert resolve_precision("fp32", cpu) == "fp32" and resolve_precision("bf16", cpu) == "bf16"  # as asked
    assert TrainConfig().precision == "auto"


def test_auto_precision_without_native_bf16_trains_as_fp32(tmp_path, monkeypatch):
    """The resolved precision is what trains, what the result reports and what a checkpoint
    records: a run started as ``auto`` resumes as an explicit ``fp32`` run would."""
    _cpu_caps(monkeypatch)
    graphs = tiny(8, seed=5)
    auto = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(precision="auto"), tmp_path / "auto")
    fp32 = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(precision="fp32"), tmp_path / "fp32")
    assert auto.precision == fp32.precision == "fp32"
    assert [r["train_loss"] for r in auto.log] == [r["train_loss"] for r in fp32.log]
    again = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(precision="fp32"), tmp_path / "auto")
    assert [r["train_loss"] for r in again.log] == [r["train_loss"] for r in auto.log]
    with pytest.raises(TrainConfigError, match=r"train.precision \('fp32' -> 'bf16'\)"):  # the checkpoint says fp32
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(precision="bf16"), tmp_path / "auto")


@pytest.mark.parametrize("resume_with", [{}, {"deterministic": False}, {"threads": 2}, {"embed_batch_size": 3}])
def test_resume_equals_uninterrupted_run(tmp_path, resume_with):
    """An interrupted run resumes to the uninterrupted one's losses. train.deterministic,
    train.threads and train.embed_batch_size, like device, are free to change on resume: a
    resume with one changed continues instead of refusing. Another thread count sums in another
    order (README: same bytes for the same thread count), so its later epochs agree to rounding
    only: on a CPU with native bfloat16 (precision auto = bf16) epoch 2 gave 0.008433 against
    0.008447 with 1 thread, and the exact comparison failed there."""
    graphs = tiny(8, seed=2)
    full = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path / "full")

    def interrupt(row):
        if row["epoch"] == 1:
            raise KeyboardInterrupt  # killed during epoch 1: last.pt holds epoch 0

    with pytest.raises(KeyboardInterrupt):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path / "part", log_fn=interrupt)
    resumed = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3, **resume_with), tmp_path / "part")
    assert len(resumed.log) == 3
    if "threads" in resume_with:
        assert resumed.log[0]["train_loss"] == full.log[0]["train_loss"]  # the checkpoint's epoch
        assert [r["train_loss"] for r in resumed.log] == pytest.approx([r["train_loss"] for r in full.log], abs=1e-3)
    else:
        assert [r["train_loss"] for r in resumed.log] == [r["train_loss"] for r in full.log]
    # its training time counts the epoch before the interruption too, as its log does
    assert resumed.seconds >= sum(r["seconds"] for r in resumed.log) - 0.01


def test_early_stopping(tmp_path):
    r = fit(tiny(), ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=10, patience=2, min_delta=1e9), tmp_path)
    assert len(r.log) == 3 and r.best_epoch == 0


def test_a_run_that_stopped_early_stays_stopped_when_rerun(tmp_path):
    """Each rerun of a finished run trained past its early stop and changed model.pt and plan."""
    graphs = tiny(8, seed=2)
    cfg = tcfg(epochs=10, patience=2, min_delta=1e9)
    first = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), cfg, tmp_path)
    model = (tmp_path / "model.pt").read_bytes()
    again = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), cfg, tmp_path)
    assert len(again.log) == len(first.log) == 3 and again.best_epoch == first.best_epoch == 0
    assert (tmp_path / "model.pt").read_bytes() == model
    assert again.seconds >= sum(r["seconds"] for r in first.log)  # the whole run's training time


def test_best_val_loss_is_the_kept_epochs(tmp_path):
    """run.json said min(val_loss), an epoch that did not count as best under min_delta."""
    r = fit(tiny(8, seed=2), ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=4, patience=0, min_delta=1e9), tmp_path)
    assert r.best_epoch == 0 and r.best_val_loss == r.log[0]["val_loss"]


def test_resume_refuses_other_graphs_and_graph_settings(tmp_path):
    """Only model/augment/train settings were compared: a resume went on training weights of
    line-grain graphs on sector-grain ones, or on another workload with as many unique graphs."""
    from gclsampler.train import TrainConfigError

    graphs = tiny(8, seed=2)

    def interrupt(row):
        if row["epoch"] == 1:
            raise KeyboardInterrupt

    data = {"graph.mem_granularity": "line", "workload.name": "phi2"}
    with pytest.raises(KeyboardInterrupt):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path, log_fn=interrupt, data_settings=data)
    with pytest.raises(TrainConfigError, match=r"graph\.mem_granularity \('line' -> 'sector'\)"):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path,
            data_settings={**data, "graph.mem_granularity": "sector"})
    with pytest.raises(TrainConfigError, match=r"data\.graphs"):
        fit(tiny(8, seed=5), ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path, data_settings=data)
    assert len(fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path, data_settings=data).log) == 3


def test_a_checkpoint_from_before_graph_settings_were_recorded_still_resumes(tmp_path):
    """last.pt recorded the graph, workload and graph-digest settings only later than the
    training ones: a checkpoint without them resumes to the uninterrupted run's losses instead
    of being refused for settings it never recorded."""
    graphs = tiny(8, seed=2)
    data = {"graph.mem_granularity": "line", "workload.name": "phi2"}
    full = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path / "full", data_settings=data)

    def interrupt(row):
        if row["epoch"] == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path / "part", log_fn=interrupt,
            data_settings=data)
    last = tmp_path / "part" / "last.pt"
    state = torch.load(last, weights_only=False)
    later = ("graph.", "workload.", "data.")
    assert {k.split(".")[0] + "." for k in state["settings"] if k.startswith(later)} == set(later)
    state["settings"] = {k: v for k, v in state["settings"].items() if not k.startswith(later)}
    torch.save(state, last)
    resumed = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path / "part", data_settings=data)
    assert [r["train_loss"] for r in resumed.log] == [r["train_loss"] for r in full.log]


def test_an_unreadable_best_checkpoint_is_one_error(tmp_path):
    from gclsampler.train import TrainConfigError

    graphs = tiny(8, seed=2)
    fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=2), tmp_path)
    (tmp_path / "model.pt").write_bytes((tmp_path / "model.pt").read_bytes()[:1000])
    with pytest.raises(TrainConfigError, match=r"model\.pt: cannot read the best checkpoint"):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=2), tmp_path)


def test_single_unique_graph_skips_training(tmp_path):
    g = tiny(1)
    r = fit(g, ModelConfig(**MCFG), AugmentConfig(), tcfg(), tmp_path)
    assert r.log == [] and (tmp_path / "model.pt").exists()
    e = embed_invocations(r.model, g, np.zeros(3, dtype=np.int64))
    assert e.shape == (3, 256 + 8) and np.all(e == e[0])


@pytest.mark.parametrize("bad", [dict(batch_size=1), dict(lr=0.0), dict(device="tpu"), dict(val_fraction=1.0),
                                 dict(precision="fp16"), dict(threads=-1), dict(embed_batch_size=0),
                                 dict(max_train_graphs=-1)])
def test_bad_train_config(bad):
    (key,) = bad
    with pytest.raises(TrainConfigError, match=f"^train.{key}: "):
        TrainConfig(**bad).validate()


@pytest.mark.parametrize("key, value, message", [
    ("lr", float("nan"), "train.lr: must be a finite number > 0, got nan"),
    ("lr", float("inf"), "train.lr: must be a finite number > 0, got inf"),
    ("lr", -1e-3, "train.lr: must be a finite number > 0, got -0.001"),
    ("tau", float("nan"), "train.tau: must be a finite number > 0, got nan"),
    ("tau", float("inf"), "train.tau: must be a finite number > 0, got inf"),
    ("weight_decay", -1.0, "train.weight_decay: must be a finite number >= 0, got -1.0"),
    ("weight_decay", float("nan"), "train.weight_decay: must be a finite number >= 0, got nan"),
    ("min_delta", float("nan"), "train.min_delta: must be a finite number >= 0, got nan"),
    ("min_delta", float("inf"), "train.min_delta: must be a finite number >= 0, got inf"),
    ("min_delta", -0.1, "train.min_delta: must be a finite number >= 0, got -0.1"),
    ("max_nodes_per_batch", -5, "train.max_nodes_per_batch: must be >= 0 (0 = no cap), got -5"),
    ("val_fraction", float("nan"), "train.val_fraction: must be in [0, 1), got nan"),
    ("seed", -1, r"train.seed: must be an integer in [0, 2**32), found -1"),
    ("seed", 2**64, r"train.seed: must be an integer in [0, 2**32), found 18446744073709551616"),
])
def test_train_config_out_of_range_names_the_key(key, value, message):
    """NaN passed every comparison (nan <= 0 is false), inf and a negative weight decay reached
    AdamW as tracebacks, a NaN/inf min_delta never saved a model.pt, a negative node cap was taken."""
    from gclsampler.errors import GclError

    with pytest.raises(GclError) as err:
        TrainConfig(**{key: value}).validate()
    assert str(err.value) == message


def test_a_cap_of_one_training_graph_is_refused_not_left_untrained():
    """train.max_train_graphs=1 was accepted, and fit() then had one training graph, no negative
    to contrast, and returned the initialised encoder without a word (train_log.csv empty)."""
    with pytest.raises(TrainConfigError) as err:
        TrainConfig(max_train_graphs=1).validate()
    assert str(err.value) == ("train.max_train_graphs: must be 0 (all) or >= 2 (InfoNCE needs two graphs to "
                              "contrast), got 1")
    with pytest.raises(TrainConfigError, match="^train.max_train_graphs: "):
        fit(tiny(), ModelConfig(**MCFG), AugmentConfig(), tcfg(max_train_graphs=1))
    TrainConfig(max_train_graphs=2).validate()


def test_train_config_edge_values_are_accepted():
    TrainConfig(max_nodes_per_batch=0, weight_decay=0.0, min_delta=0.0, seed=2**32 - 1).validate()


def test_load_model_rejects_other_files(tmp_path):
    p = tmp_path / "x.pt"
    torch.save({"foo": 1}, p)
    with pytest.raises(TrainConfigError, match="format"):
        load_model(p)


def test_resume_refuses_changed_settings_and_restarts_when_asked(tmp_path):
    """Issue 14: resuming with another lr/epochs kept the old schedule; another model shape died in
    load_state_dict. Now: one error listing the changed keys; train.resume=false starts over."""
    from gclsampler.train import TrainConfigError

    graphs = tiny(8, seed=2)

    def interrupt(row):
        if row["epoch"] == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3), tmp_path, log_fn=interrupt)
    with pytest.raises(TrainConfigError, match=r"last\.pt: cannot resume with changed settings: "
                                               r"train\.epochs \(3 -> 4\), train\.lr"):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=4, lr=1e-3), tmp_path)
    with pytest.raises(TrainConfigError, match=r"model\.hidden_dim \(128 -> 64\)"):
        fit(graphs, ModelConfig(**MCFG, hidden_dim=64), AugmentConfig(), tcfg(epochs=3), tmp_path)
    # settings that do not change the result may differ
    fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=3, progress=False), tmp_path)
    r = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=4, lr=1e-3, resume=False), tmp_path)
    assert len(r.log) == 4  # started over


def test_resume_from_a_corrupt_checkpoint_is_one_error(tmp_path):
    from gclsampler.train import TrainConfigError

    (tmp_path / "last.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(TrainConfigError, match=r"last\.pt: cannot read the resume checkpoint"):
        fit(tiny(8, seed=2), ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=2), tmp_path)


def test_embeddings_do_not_depend_on_how_the_graphs_are_batched():
    from gclsampler.model import GCLModel
    from gclsampler.train import embed_graphs

    torch.manual_seed(0)
    model = GCLModel(ModelConfig(**MCFG))
    graphs = tiny(7, seed=3)
    whole = embed_graphs(model, graphs, batch_size=32)
    for bs, max_nodes in [(1, 0), (3, 0), (32, 1), (32, int(graphs[0].num_nodes) + 1)]:
        np.testing.assert_allclose(embed_graphs(model, graphs, batch_size=bs, max_nodes=max_nodes), whole,
                                   rtol=1e-5, atol=1e-5)
    assert whole.shape == (7, model.cfg.embedding_dim) and np.isfinite(whole).all()


def test_deterministic_kernels_are_switched_on_for_cuda_only_and_restored(monkeypatch):
    """On CUDA the encoder's index_add_ sums in an order the GPU picks, so one seed could train
    different weights run to run; train.deterministic turns on torch's deterministic kernels
    (warn-only: an op without one must not stop a run) and cuBLAS's fixed workspace for CUDA
    runs, and puts the process's setting back after, as intra_op_threads does the threads. The
    context is checked here without a GPU (a torch.device names CUDA without one)."""
    from gclsampler.train import deterministic_cuda

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic_cuda(True, torch.device("cpu")):
        assert torch.are_deterministic_algorithms_enabled() == before
    with deterministic_cuda(False, torch.device("cuda")):
        assert torch.are_deterministic_algorithms_enabled() == before
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    with pytest.raises(RuntimeError), deterministic_cuda(True, torch.device("cuda")):
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
        raise RuntimeError("a failed epoch")
    assert torch.are_deterministic_algorithms_enabled() == before


def test_an_untrained_rerun_leaves_no_checkpoint_a_later_resume_would_take(tmp_path):
    """train.epochs=0 into a finished run's directory replaced model.pt with untrained weights but
    kept last.pt: the next run with the first settings resumed past its last epoch, trained
    nothing, and embedded with the untrained model.pt while its log counted the trained epochs.
    Resuming, epochs=0 is a changed setting like any other (it wiped the trained model.pt and
    last.pt unasked); with train.resume=false it starts over untrained."""
    from gclsampler.train import TrainConfigError

    graphs = tiny(8, seed=2)
    first = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=2), tmp_path)
    kept = {f: (tmp_path / f).read_bytes() for f in ("model.pt", "last.pt", "train_log.csv")}
    with pytest.raises(TrainConfigError, match=r"last\.pt: cannot resume with changed settings: train\.epochs \(2 -> 0\)"):
        fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=0), tmp_path)
    assert {f: (tmp_path / f).read_bytes() for f in kept} == kept
    fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=0, resume=False), tmp_path)
    assert not (tmp_path / "last.pt").exists()
    again = fit(graphs, ModelConfig(**MCFG), AugmentConfig(), tcfg(epochs=2), tmp_path)
    assert [r["train_loss"] for r in again.log] == [r["train_loss"] for r in first.log]
    for a, b in zip(first.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
