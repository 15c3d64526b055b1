"""Contrastive training of the RGCN encoder and embedding of every invocation (paper 3.3-3.4).

* Split: the *unique* graphs of a workload (identical invocations share one graph,
  ``GraphDataset.inv_to_graph``) are shuffled under the seed and split 80/20 into
  training and validation. Splitting by unique graph rather than by invocation keeps
  copies of one kernel graph from sitting on both sides of the split, so validation
  loss measures generalisation to unseen kernels.
* Step: two augmented views of each kernel of a batch (``gclsampler.augment``), one
  encoder pass over both views stacked, symmetric InfoNCE on the projections.
* AdamW (lr 7e-4) with cosine annealing per epoch, validation loss every epoch on fixed
  views (same generator seed every epoch, drops and feature noise alike, so the same weights
  give the same loss and epochs are comparable), best checkpoint by
  validation loss (training loss when there are fewer than 2 validation graphs), resume
  from ``last.pt``, optional early stopping.
* Embedding: each unique graph is embedded once (eval mode, no augmentation) and row i of
  ``embeddings.npy`` is the embedding of invocation i's graph.

Deterministic on CPU under ``train.seed`` (fixed thread count; all randomness comes from
seeded torch generators).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from gclsampler._atomic import atomic_path, write_text_atomic
from gclsampler.augment import AugmentConfig, augment_batch
from gclsampler.loss import symmetric_info_nce
from gclsampler.model import GCLModel, ModelConfig
from gclsampler.train_config import PRECISIONS, TrainConfig, TrainConfigError  # noqa: F401  (re-exported)
from gclsampler.sweep_summary import SweepSummaryCallback, foreign_sweep_files, summarize_sweep  # noqa: F401  (re-exported)

_log = logging.getLogger("gclsampler.train")
LOG_COLUMNS = ["epoch", "train_loss", "val_loss", "lr", "n_train", "n_val", "seconds", "best"]


@dataclass
class TrainResult:
    """What a fit leaves behind. ``log`` rows follow ``LOG_COLUMNS``."""

    model: GCLModel
    log: List[dict] = field(default_factory=list)
    best_epoch: int = -1
    best_val_loss: float = float("nan")
    train_ids: List[int] = field(default_factory=list)
    val_ids: List[int] = field(default_factory=list)
    seconds: float = 0.0
    precision: str = "fp32"  # what ``train.precision`` resolved to on this device


def native_bf16(device: torch.device) -> bool:
    """Whether bfloat16 GEMMs are native here, so ``precision=auto`` may use them.

    On an x86 CPU without AVX512-BF16 or AMX-BF16, oneDNN converts to float32 and back, and
    the training step took 2.9x as long as in fp32 (``bench/rgcn_step.py`` on a 2-core
    AVX-512 Xeon without either). Other CPUs (ARM's BF16 extension included) are unmeasured
    and keep fp32; GPUs count only without emulation."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type != "cpu":
        return False
    get = getattr(torch.cpu, "get_capabilities", None)  # absent from older torch: fp32
    caps = get() if get is not None else {}
    return bool(caps.get("avx512_bf16") or caps.get("amx_bf16"))


def resolve_precision(precision: str, device: torch.device) -> str:
    if precision != "auto":
        return precision
    return "bf16" if native_bf16(device) else "fp32"


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainConfigError("train.device: cuda requested but torch sees no CUDA device")
    return torch.device(name)


def split_graphs(n_graphs: int, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Shuffle graph ids under ``seed``; the last ``round(val_fraction*n)`` are validation.

    Fewer than 2 validation graphs means none: InfoNCE needs a negative, so one graph gives
    no validation loss (training then keeps the epoch of lowest training loss), and holding
    it out only took it from training. A 5-graph workload (cfd) trained on 4 that way.
    """
    perm = torch.randperm(n_graphs, generator=torch.Generator().manual_seed(seed)).tolist()
    n_val = int(round(val_fraction * n_graphs)) if n_graphs >= 3 else 0
    n_val = min(n_val, n_graphs - 2)  # at least 2 graphs to contrast in training
    n_val = n_val if n_val >= 2 else 0
    return sorted(perm[: n_graphs - n_val]), sorted(perm[n_graphs - n_val:])


def _pack(order: Iterable[int], sizes: Sequence[int], batch_size: int, max_nodes: int) -> list[list[int]]:
    """Greedy runs of ``order``: a batch closes at ``batch_size`` graphs or before it would pass
    ``max_nodes`` nodes (if > 0); a graph larger than ``max_nodes`` still gets a batch of its own."""
    batches: list[list[int]] = []
    cur: list[int] = []
    nodes = 0
    for g in order:
        if cur and (len(cur) >= batch_size or (max_nodes > 0 and nodes + sizes[g] > max_nodes)):
            batches.append(cur)
            cur, nodes = [], 0
        cur.append(g)
        nodes += sizes[g]
    if cur:
        batches.append(cur)
    return batches


def make_batches(ids: Sequence[int], sizes: Sequence[int], batch_size: int, max_nodes: int,
                 gen: Optional[torch.Generator]) -> list[list[int]]:
    """Batches of at most ``batch_size`` graphs and (if > 0) ``max_nodes`` nodes; shuffled when ``gen``.

    A batch with a single graph has no negatives (its InfoNCE is 0, it trains nothing), so the
    graphs ``_pack`` leaves alone in a batch (one too large to share a batch under
    ``max_nodes`` with its neighbour in the order, or any with ``batch_size`` 1) are paired in
    order, over the cap if need be; an odd one out joins the last batch. Only a workload's
    lone graph is left out.
    Why not drop them, as before: every graph but the last single one was never trained on
    nor validated, silently, and those are the largest kernels (``graph.max_insts_per_warp=0``).
    """
    order = list(ids)
    if gen is not None:
        order = [order[i] for i in torch.randperm(len(order), generator=gen).tolist()]
    batches: list[list[int]] = []
    alone: Optional[int] = None
    for b in _pack(order, sizes, batch_size, max_nodes):
        if len(b) >= 2:
            batches.append(b)
        elif alone is None:
            alone = b[0]
        else:
            batches.append([alone, b[0]])
            alone = None
    if alone is not None and batches:
        batches[-1].append(alone)
    return batches


def _two_views(graphs: Sequence[Data], aug: AugmentConfig, gen: torch.Generator, device: torch.device,
               feature_dim: int = 64) -> Data:
    """Both views in one batch (view 1 graphs first) so the encoder runs once per step.

    Drawn on the CPU from ``gen`` (feature noise included), then moved to ``device``: the
    same generator state gives the same views on a CPU and a GPU."""
    batch = Batch.from_data_list(list(graphs) + list(graphs))
    return augment_batch(batch, aug, gen, feature_dim).to(device)


def projections(model: GCLModel, batch: Data, precision: str = "fp32") -> torch.Tensor:
    """Projections z' of a batch for the loss, the encoder under ``precision`` (``TrainConfig``).

    Same as ``model(batch)[1]``; with ``bf16`` the encoder runs under bfloat16 autocast and
    the projection head (and so the InfoNCE logits) stays float32.
    """
    if precision == "fp32":
        return model(batch)[1]
    with torch.autocast(batch.node_type.device.type, dtype=torch.bfloat16):
        z = model.encoder(batch)
    return model.head(z.float())


def _loss(model: GCLModel, graphs: Sequence[Data], aug: AugmentConfig, gen: torch.Generator,
          tau: float, device: torch.device, precision: str = "fp32") -> torch.Tensor:
    views = _two_views(graphs, aug, gen, device, model.cfg.in_dim)
    p = projections(model, views, precision)
    b = len(graphs)
    return symmetric_info_nce(p[:b], p[b:], tau)


def _atomic_save(obj, path: Path) -> None:
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def atomic_write_text(path: Path, text: str) -> None:
    write_text_atomic(path, text)


def atomic_save_npy(arr: np.ndarray, path: Path) -> None:
    with atomic_path(path, suffix=".npy") as tmp:  # np.save appends .npy to any other name
        np.save(tmp, arr)


def write_log(rows: list[dict], path: Path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=LOG_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in LOG_COLUMNS})
    atomic_write_text(path, buf.getvalue())


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    disable = (not enabled) or bool(os.environ.get("CI")) or not sys.stderr.isatty()
    return tqdm(total=total, desc=desc, disable=disable, file=sys.stderr, leave=False)


@contextlib.contextmanager
def intra_op_threads(n: int):
    """torch's intra-op threads set to ``n`` (0: left as they are) inside the block, and what they
    were restored after it; yields the count in effect.

    Why restore: the thread count is process-wide, and training sums in a thread-dependent
    order, so it decides the embeddings' last bits and, through them, which invocations a plan
    samples. Hydra's basic launcher runs every job of ``train.py -m`` in one process: a job
    with ``train.threads=1`` left the next job, with ``train.threads=0``, on one thread, and
    that job's plan differed from the same settings run alone."""
    before = torch.get_num_threads()
    if n > 0:
        torch.set_num_threads(n)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def deterministic_cuda(on: bool, device: torch.device):
    """torch's deterministic algorithms inside the block when ``on`` and ``device`` is CUDA;
    the previous setting restored after.

    Why: the encoder sums messages with ``index_add_``, which on CUDA adds in an order the GPU
    picks, so two runs with one seed trained different weights and could sample other
    invocations; on the CPU the order is fixed. Deterministic mode gives index_add_ (and
    cuBLAS, with ``CUBLAS_WORKSPACE_CONFIG``) a fixed order at some speed. ``warn_only``: an op
    without a deterministic CUDA kernel warns instead of stopping the run."""
    if not on or device.type != "cuda":
        yield
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS reads it when its handle is made
    before, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn)


def fit(graphs: Sequence[Data], model_cfg: ModelConfig, aug_cfg: AugmentConfig, cfg: TrainConfig,
        out_dir: Optional[Path] = None, log_fn: Optional[Callable[[dict], None]] = None,
        data_settings: Optional[dict] = None) -> TrainResult:
    """Train a :class:`GCLModel` on ``graphs`` (one per unique kernel graph), on ``cfg.threads``
    intra-op threads (restored after, ``intra_op_threads``), with deterministic kernels on CUDA
    unless ``cfg.deterministic`` is false (``deterministic_cuda``).

    Writes ``model.pt`` (best weights + configs), ``last.pt`` (full state for resume)
    and ``train_log.csv`` into ``out_dir`` when given. With ``cfg.resume`` and an
    existing ``last.pt`` there, training continues after its epoch; a run that had
    stopped early stays stopped. ``data_settings`` (``{"graph.max_warps": ..,
    "workload.name": ..}``) are what made the graphs: a resume refuses them changed, as it
    refuses changed training settings, and the graphs' sizes are checked too.
    """
    cfg.validate()
    with intra_op_threads(cfg.threads), deterministic_cuda(cfg.deterministic, resolve_device(cfg.device)):
        return _fit(graphs, model_cfg, aug_cfg, cfg, out_dir, log_fn, data_settings)


def _fit(graphs: Sequence[Data], model_cfg: ModelConfig, aug_cfg: AugmentConfig, cfg: TrainConfig,
         out_dir: Optional[Path], log_fn: Optional[Callable[[dict], None]], data_settings: Optional[dict]) -> TrainResult:
    aug_cfg.validate()
    model_cfg.validate()
    device = resolve_device(cfg.device)
    if cfg.precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise TrainConfigError("train.precision: this GPU has no bfloat16 support, set train.precision=fp32")
    # resolved before the resume settings are taken: a checkpoint records what it trained in
    cfg = replace(cfg, precision=resolve_precision(cfg.precision, device))
    t0 = time.perf_counter()
    torch.manual_seed(cfg.seed)
    model = GCLModel(model_cfg).to(device)
    sizes = [int(g.num_nodes) for g in graphs]
    train_ids, val_ids = split_graphs(len(graphs), cfg.val_fraction, cfg.seed)
    if cfg.max_train_graphs > 0 and len(train_ids) > cfg.max_train_graphs:
        pick = torch.randperm(len(train_ids), generator=torch.Generator().manual_seed(cfg.seed + 1))
        train_ids = sorted(train_ids[i] for i in pick[: cfg.max_train_graphs].tolist())
        keep = max(2, int(round(cfg.max_train_graphs * cfg.val_fraction)))
        if len(val_ids) > keep:  # a seeded subset, as training's: ids follow first launch, so the first
            # `keep` of them validated on the start of the program only (an LLM's prefill, not its decode)
            pick = torch.randperm(len(val_ids), generator=torch.Generator().manual_seed(cfg.seed + 2))
            val_ids = sorted(val_ids[i] for i in pick[:keep].tolist())
    result = TrainResult(model=model, train_ids=train_ids, val_ids=val_ids, precision=cfg.precision)
    last_path = Path(out_dir) / "last.pt" if out_dir is not None else None
    run_settings = {**_resume_settings(model_cfg, aug_cfg, cfg),
                    **json.loads(json.dumps(data_settings or {}, default=str)), "data.graphs": _graphs_digest(graphs)}
    if len(train_ids) < 2 or cfg.epochs == 0:
        if cfg.resume and last_path is not None and last_path.exists():
            # a trained run asked again with train.epochs=0 is a changed setting like any other: it
            # replaced the trained model.pt by untrained weights and deleted last.pt, unasked
            _check_resume_settings(last_path, _load_resume_state(last_path, device).get("settings"), run_settings)
        # one unique kernel graph (or no training asked): nothing to contrast against
        result.seconds = time.perf_counter() - t0
        if out_dir is not None:
            save_model(model, model_cfg, Path(out_dir) / "model.pt", extra={"epoch": -1})
            write_log([], Path(out_dir) / "train_log.csv")
            # an earlier run's last.pt no longer goes with this untrained model.pt: a later resume
            # (train.epochs back to its value) trained nothing, reloaded this model.pt as the best
            # one, and run.json counted the checkpoint's epochs
            (Path(out_dir) / "last.pt").unlink(missing_ok=True)
        return result

    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(cfg.epochs, 1))
    shuffle_gen = torch.Generator().manual_seed(cfg.seed + 11)
    aug_gen = torch.Generator().manual_seed(cfg.seed + 12)
    start_epoch, best, bad_epochs = 0, float("inf"), 0
    best_in_memory: Optional[dict] = None  # the kept model's weights when there is no out_dir
    log: list[dict] = []
    if cfg.resume and last_path is not None and last_path.exists():
        state = _load_resume_state(last_path, device)
        _check_resume_settings(last_path, state.get("settings"), run_settings)
        if state.get("train_ids") != train_ids:
            raise TrainConfigError(f"{last_path}: checkpoint was trained on a different split (other graphs, or "
                                   "a checkpoint from before 2026-11-27 with 3-7 unique graphs, whose one validation "
                                   "graph now trains); delete it or set train.resume=false")
        try:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            sched.load_state_dict(state["scheduler"])
        except (RuntimeError, ValueError, KeyError) as exc:  # checkpoints from before settings were recorded
            raise TrainConfigError(f"{last_path}: does not fit this model/optimizer ({str(exc).splitlines()[0]}); "
                                   "set train.resume=false to start over") from None
        # map_location=device put the RNG states on a GPU too: set_state takes CPU byte tensors
        shuffle_gen.set_state(state["shuffle_gen"].cpu())
        aug_gen.set_state(state["aug_gen"].cpu())  # every view's drops and feature noise
        torch.set_rng_state(state["torch_rng"].cpu())
        if device.type == "cuda" and state.get("cuda_rng") is not None:  # dropout masks on a GPU
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), device)
        start_epoch, best, bad_epochs, log = state["epoch"] + 1, state["best"], state["bad_epochs"], state["log"]
        result.best_epoch = state.get("best_epoch", -1)
        if cfg.patience > 0 and bad_epochs >= cfg.patience:
            start_epoch = cfg.epochs  # it stopped early: rerunning a finished run trains no further

    in_order = make_batches(train_ids, sizes, cfg.batch_size, cfg.max_nodes_per_batch, None)
    over = sum(sum(sizes[i] for i in b) > cfg.max_nodes_per_batch for b in in_order) if cfg.max_nodes_per_batch > 0 else 0
    if over:  # memory the cap was meant to bound
        _log.warning("%d of %d training batches exceed train.max_nodes_per_batch=%d: graphs too large to share a "
                     "batch under it are paired over it (InfoNCE needs two graphs a batch)",
                     over, len(in_order), cfg.max_nodes_per_batch)
    batches_per_epoch = len(in_order)
    bar = _progress((cfg.epochs - start_epoch) * batches_per_epoch, "train", cfg.progress)
    for epoch in range(start_epoch, cfg.epochs):
        te = time.perf_counter()
        model.train()
        losses = []
        for ids in make_batches(train_ids, sizes, cfg.batch_size, cfg.max_nodes_per_batch, shuffle_gen):
            opt.zero_grad(set_to_none=True)
            loss = _loss(model, [graphs[i] for i in ids], aug_cfg, aug_gen, cfg.tau, device, cfg.precision)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(epoch=epoch, loss=f"{losses[-1]:.3f}")
        lr = opt.param_groups[0]["lr"]
        sched.step()
        train_loss = float(np.mean(losses)) if losses else float("nan")
        val_loss = evaluate_loss(model, graphs, val_ids, aug_cfg, cfg, sizes, device)
        score = val_loss if math.isfinite(val_loss) else train_loss
        improved = score < best - cfg.min_delta
        if improved:
            best, bad_epochs, result.best_epoch = score, 0, epoch
            if out_dir is not None:
                save_model(model, model_cfg, Path(out_dir) / "model.pt",
                           extra={"epoch": epoch, "val_loss": val_loss, "train_loss": train_loss})
            else:  # nowhere to reload it from: without this the caller got the last epoch's weights
                best_in_memory = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            bad_epochs += 1
        row = {"epoch": epoch, "train_loss": round(train_loss, 6), "val_loss": round(val_loss, 6), "lr": lr,
               "n_train": len(train_ids), "n_val": len(val_ids),
               "seconds": round(time.perf_counter() - te, 3), "best": int(improved)}
        log.append(row)
        if log_fn is not None:
            log_fn(row)
        if out_dir is not None:
            write_log(log, Path(out_dir) / "train_log.csv")
            _atomic_save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                          "shuffle_gen": shuffle_gen.get_state(), "aug_gen": aug_gen.get_state(),
                          "torch_rng": torch.get_rng_state(),
                          "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                          "epoch": epoch, "best": best,
                          "best_epoch": result.best_epoch, "bad_epochs": bad_epochs, "log": log,
                          "train_ids": train_ids, "settings": run_settings}, last_path)
        if cfg.patience > 0 and bad_epochs >= cfg.patience:
            break
    bar.close()
    if best_in_memory is not None:
        model.load_state_dict(best_in_memory)
    best_path = Path(out_dir) / "model.pt" if out_dir is not None else None
    if best_path is not None and best_path.exists():
        try:
            best_state = torch.load(best_path, map_location=device, weights_only=False)
            model.load_state_dict(best_state["model"])
        except Exception as exc:  # truncated, not a checkpoint, another model's weights
            raise TrainConfigError(f"{best_path}: cannot read the best checkpoint ({type(exc).__name__}); delete it "
                                   "and last.pt, or set train.resume=false") from None
    result.log = log
    # the kept model's loss (NaN where the training loss chose it), not the lowest ever seen
    result.best_val_loss = next((float(r["val_loss"]) for r in log if r["epoch"] == result.best_epoch), float("nan"))
    # a resumed run's time includes the epochs before the resume, as its log does
    result.seconds = time.perf_counter() - t0 + sum(float(r["seconds"]) for r in log[:start_epoch])
    return result


def _graphs_digest(graphs: Sequence[Data]) -> str:
    """Every tensor of every graph, hashed: what tells one workload's graphs from another's
    with as many unique graphs, for a resume (the split alone only checks their number).
    Tens of MB for a suite workload: milliseconds beside an epoch."""
    h = hashlib.blake2b(digest_size=8)
    for g in graphs:
        for key in sorted(g.keys()):
            v = g[key]
            if isinstance(v, torch.Tensor):
                h.update(key.encode())
                h.update(str(tuple(v.shape)).encode())
                if v.numel():  # an empty tensor has no bytes (and cannot be viewed as any); its shape is hashed
                    h.update(v.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


_NOT_RESULT_KEYS = {"resume", "progress", "threads", "device", "embed_batch_size", "deterministic"}
"""Train settings that change how a run goes, not what it computes: free to change on resume."""


def _resume_settings(model_cfg: ModelConfig, aug_cfg: AugmentConfig, cfg: TrainConfig) -> dict:
    """Flat ``{"train.lr": ..., "model.hidden": ...}`` of every setting a resumed run must share."""
    out = {}
    for group, obj in (("model", model_cfg), ("augment", aug_cfg), ("train", cfg)):
        for k, v in asdict(obj).items():
            if group == "train" and k in _NOT_RESULT_KEYS:
                continue
            out[f"{group}.{k}"] = v
    return json.loads(json.dumps(out, default=str))  # plain JSON types: compare what was stored


def _load_resume_state(path: Path, device) -> dict:
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except Exception as exc:  # truncated, not a checkpoint, another torch's pickle
        raise TrainConfigError(f"{path}: cannot read the resume checkpoint ({type(exc).__name__}); delete it "
                               "or set train.resume=false") from None
    if not isinstance(state, dict) or "epoch" not in state:
        raise TrainConfigError(f"{path}: not a resume checkpoint of gclsampler; delete it or set train.resume=false")
    return state


def _check_resume_settings(path: Path, saved: dict | None, now: dict) -> None:
    """Refuse to continue a run whose settings changed since its checkpoint.

    Why: a resumed run kept the old optimizer and learning-rate schedule (the cosine
    schedule is built from ``train.epochs``) while config.yaml recorded the new values,
    or died inside ``load_state_dict`` when the model shape changed.
    """
    if saved is None:
        return  # written before settings were recorded: load_state_dict is the only check
    # graph and workload settings were recorded later: a checkpoint without them is not refused for that
    changed = sorted(k for k in set(saved) | set(now) if saved.get(k) != now.get(k)
                     and not (k.startswith(("graph.", "workload.", "data.")) and k not in saved))
    if changed:
        shown = ", ".join(f"{k} ({saved.get(k)!r} -> {now.get(k)!r})" for k in changed[:6])
        more = f" and {len(changed) - 6} more" if len(changed) > 6 else ""
        raise TrainConfigError(f"{path}: cannot resume with changed settings: {shown}{more}; "
                               "set train.resume=false to start over, or use the checkpoint's settings")


@torch.no_grad()
def evaluate_loss(model: GCLModel, graphs: Sequence[Data], ids: Sequence[int], aug_cfg: AugmentConfig,
                  cfg: TrainConfig, sizes: Sequence[int], device: torch.device) -> float:
    """Mean InfoNCE on fixed validation views (eval mode, float32; NaN with fewer than 2 graphs)."""
    if len(ids) < 2:
        return float("nan")
    was = model.training
    model.eval()
    gen = torch.Generator().manual_seed(cfg.seed + 99)
    total, count = 0.0, 0
    for b in make_batches(ids, sizes, cfg.batch_size, cfg.max_nodes_per_batch, None):
        total += float(_loss(model, [graphs[i] for i in b], aug_cfg, gen, cfg.tau, device)) * len(b)
        count += len(b)
    model.train(was)
    return total / max(count, 1)


def save_model(model: GCLModel, model_cfg: ModelConfig, path: Path, extra: Optional[dict] = None) -> None:
    """``model.pt``: weights + the model config (with resolved vocab sizes) to rebuild it."""
    cfg = asdict(model_cfg)
    vocab = model.encoder.features.vocab
    cfg.update(vocab_instruction=vocab["instruction"], vocab_pseudo=vocab["pseudo"], vocab_variable=vocab["variable"])
    _atomic_save({"format": "gclsampler-model/1", "model": model.state_dict(), "model_cfg": cfg, **(extra or {})},
                 Path(path))


def load_model(path: Path, device: str = "cpu") -> GCLModel:
    """Rebuild a :class:`GCLModel` from ``model.pt`` (either conv implementation's keys)."""
    from gclsampler.model import fast_to_pyg_state, pyg_to_fast_state

    path = Path(path)
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except (OSError, RuntimeError) as exc:
        raise TrainConfigError(f"{path}: cannot read model checkpoint ({exc})") from exc
    if not isinstance(state, dict) or state.get("format") != "gclsampler-model/1":
        raise TrainConfigError(f"{path}: format: not a gclsampler-model/1 checkpoint")
    mcfg = ModelConfig(**state["model_cfg"])
    model = GCLModel(mcfg)
    weights = state["model"]
    weights = pyg_to_fast_state(weights) if mcfg.conv == "fast" else fast_to_pyg_state(weights)
    model.load_state_dict(weights)
    return model.to(device)


@torch.no_grad()
def embed_graphs(model: GCLModel, graphs: Sequence[Data], batch_size: int = 32, max_nodes: int = 0,
                 progress: bool = False) -> np.ndarray:
    """(G, model.cfg.embedding_dim) float32 kernel embeddings z of ``graphs`` (eval mode, no augmentation)."""
    device = next(model.parameters()).device
    model.eval()
    out = np.zeros((len(graphs), model.cfg.embedding_dim), dtype=np.float32)
    batches = _pack(range(len(graphs)), [int(g.num_nodes) for g in graphs], batch_size, max_nodes)
    bar = _progress(len(graphs), "embed", progress)
    for ids in batches:
        batch = Batch.from_data_list([graphs[i] for i in ids]).to(device)
        out[ids] = model.embed(batch).float().cpu().numpy()
        bar.update(len(ids))
    bar.close()
    return out


def embed_invocations(model: GCLModel, graphs: Sequence[Data], inv_to_graph: np.ndarray, batch_size: int = 32,
                      max_nodes: int = 0, progress: bool = False) -> np.ndarray:
    """(N, embedding_dim) float32: row i = embedding of invocation i's graph; each unique graph embedded once."""
    z = embed_graphs(model, graphs, batch_size, max_nodes, progress)
    inv_to_graph = np.asarray(inv_to_graph, dtype=np.int64)
    return np.ascontiguousarray(z[inv_to_graph], dtype=np.float32)


# --------------------------------------------------------------------------- sweeps
