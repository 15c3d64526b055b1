"""One workload end to end: synthesize if missing -> graphs -> train -> embed -> post-embedding hook.

``train.py`` (Hydra) composes the config and calls :func:`run`; everything else lives
here so tests can call it with a composed config and a temporary output directory.

Outputs in the run directory: ``config.yaml`` (resolved), ``model.pt`` (best weights),
``last.pt`` (resume state), ``train_log.csv``, ``embeddings.npy`` (float32, N x 264 (256 with model=paper), row i =
invocation i), ``run.json`` (timings, counts, ``synthetic`` flag), and whatever the
post-embedding hook writes (``clusters.csv``, ``silhouette.csv``, ``plan.json``, ``report.md``,
``results.csv``, ``plots/``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from gclsampler.augment_config import AugmentConfig
from gclsampler.errors import GclError
from gclsampler.model_config import ModelConfig
from gclsampler.train_config import TrainConfig

log = logging.getLogger("gclsampler.pipeline")


class PipelineError(GclError):
    """A workload or config the pipeline cannot run (message names the key or path)."""


def _original_cwd() -> Path:
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            from hydra.utils import get_original_cwd

            return Path(get_original_cwd())
    except (ImportError, ValueError):
        pass
    return Path.cwd()


def _as_dataclass(cls, node: Any):
    """A stage dataclass from a (typed or plain) config node; unknown keys are a config error."""
    if isinstance(node, cls):
        return node
    data = OmegaConf.to_object(node) if isinstance(node, DictConfig) else dict(node or {})
    if isinstance(data, cls):
        return data
    try:
        return cls(**data)
    except TypeError as exc:
        raise PipelineError(f"config: {cls.__name__}: {exc}") from exc


def workload_dir(cfg: DictConfig) -> Path:
    """``workload.dir`` if set, else ``<paths.workloads_dir>/<workload.name>`` (relative to the original cwd)."""
    base = _original_cwd()
    if cfg.workload.get("dir"):
        p = Path(cfg.workload.dir)
    else:
        p = Path(cfg.paths.workloads_dir) / str(cfg.workload.name)
    return p if p.is_absolute() else base / p


def _workload_arch(cfg: DictConfig) -> str:
    """``workload.arch``, or the schema's default (``WorkloadConfig.arch``) for a config without it."""
    from gclsampler.config import WorkloadConfig

    return str(cfg.workload.get("arch", WorkloadConfig.arch))


def _synth_request(cfg: DictConfig) -> dict:
    params = OmegaConf.to_container(cfg.workload.synth, resolve=True) if cfg.workload.get("synth") else {}
    arch = _workload_arch(cfg)
    if cfg.workload.get("rerun", True):
        from gclsampler.synth.generate import workload_names, with_second_run

        if str(cfg.workload.name) in workload_names():  # an unknown name is refused by check_request
            with _synth_keys_under_workload():
                params = with_second_run(str(cfg.workload.name), params, arch)
    return {"params": params, "arch": arch, "seed": int(cfg.workload.get("seed", 0))}


def _stale_synthetic(wdir: Path, cfg: DictConfig) -> Optional[str]:
    """Why an existing synthesized dir does not match the requested knobs (None = it matches)."""
    from gclsampler.synth.generate import stale_reason

    req = _synth_request(cfg)
    with _synth_keys_under_workload():
        return stale_reason(wdir, str(cfg.workload.name), req["params"], req["arch"], req["seed"])


@contextlib.contextmanager
def _synth_keys_under_workload():
    """The synthesizer names its knobs ``synth.n`` and ``seed``; in train.py's config they
    are ``workload.synth.n`` and ``workload.seed``, the keys a user has to fix."""
    from gclsampler.synth.generate import SynthConfigError

    try:
        yield
    except SynthConfigError as exc:
        text = str(exc)
        if text.startswith(("synth.", "seed:")):
            raise SynthConfigError(f"workload.{text}") from None
        raise


def _label_own_workload(cfg: DictConfig) -> None:
    """A ``workload.dir`` of the user's is labelled as its workload.json says (not synthetic
    when it says nothing), not as the default workload group's ``synthetic: true``, so the
    run's config.yaml never calls traced data synthetic."""
    if not cfg.workload.get("dir"):
        return
    from gclsampler.workload import declared_data_kind

    cfg.workload.synthetic = declared_data_kind(workload_dir(cfg)) == "synthetic"


_SYNTH_ONLY = ("workload.synth", "workload.arch", "workload.seed", "workload.rerun")
"""Workload keys that only synthesis reads: set beside ``workload.dir`` they change nothing."""


def _command_line_overrides() -> list[str]:
    """The overrides the user gave this Hydra run (none outside one)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    except Exception:  # pragma: no cover - no Hydra run (API use)
        return []


def _name_in(wdir: Path) -> str:
    """The workload's own name, as ``Workload.load`` gives it (workload.json's, else the directory's)."""
    from gclsampler.workload import declared_meta

    try:
        return str(declared_meta(wdir).get("workload", wdir.name))
    except GclError:  # a broken workload.json: the workload's validation names it next
        return wdir.name


def _require_own_dir(wdir: Path) -> None:
    """``workload.dir`` must be a directory: checked before a sweep's first job, and again when the
    run reads it."""
    if not wdir.is_dir():
        raise PipelineError(f"workload.dir: {wdir}: " + ("not a directory" if wdir.exists() else "no such directory"))


def ensure_workload(cfg: DictConfig, hold: Optional[contextlib.ExitStack] = None) -> Path:
    """Return the workload directory, synthesizing it first when it does not exist.

    Only a workload without ``dir`` (the synthetic benchmarks) is synthesized; an
    explicitly given directory that is missing is an error, never silently replaced.
    A directory that ``gclsampler.synth`` wrote for another workload or with other knobs/seed/arch than the
    config asks for is synthesized again (so ``debug=default`` cannot leak a tiny
    workload into a full run). A synthesized workload is kept from being synthesized again by
    another process (a multirun's job that wants other knobs) until ``hold`` closes
    (``_safe_out.use_workload``); the user's own ``workload.dir`` is never synthesized.
    """
    wdir = workload_dir(cfg)
    if cfg.workload.get("dir"):
        _require_own_dir(wdir)
        from gclsampler.trace.workload import no_traces

        why = no_traces(wdir)
        if why:
            raise PipelineError(f"workload.dir: {why} (not a workload directory with traces)")
        given = [(o, o.split("=", 1)[0].lstrip("+~")) for o in _command_line_overrides()]  # (override, key)
        keys = {key for _, key in given}  # this run's own: evaluate.py's training composes workload.dir itself
        if "workload.dir" in keys and not keys & {"workload", "workload.name"}:
            # the default group's name (phi2) labelled someone's bfs traces in the run dir, plan and report
            raise PipelineError(f"workload.dir: give workload.name too (e.g. workload.name={_name_in(wdir)}): "
                                f"without it this run, its plan.json and report are labelled "
                                f"{str(cfg.workload.name)!r}, the default workload's name")
        unused = [o for o, key in given if key in _SYNTH_ONLY or key.startswith("workload.synth.")]
        if unused:
            log.warning("not used with workload.dir (nothing is synthesized): %s", " ".join(unused))
        label = [o for o, key in given if key == "workload.synthetic"]
        if label:
            log.warning("not used with workload.dir: %s; a directory's data is labelled by its workload.json "
                        '("synthetic": false for measured data, true for synthetic; without it, neither)',
                        " ".join(label))
        return wdir
    req = _check_synth_request(cfg)  # a bad knob or arch fails before the lock file exists

    def unusable() -> Optional[str]:
        return _stale_synthetic(wdir, cfg) if (wdir / "kernelslist.g").exists() else "missing"

    def make(why: str) -> None:
        if (wdir / "kernelslist.g").exists():
            from gclsampler.synth.generate import check_replaceable

            check_replaceable(wdir, f"use it as it is with workload.dir={wdir} ({why})")
            log.info("re-synthesizing %s: %s", wdir, why)
        try:
            from gclsampler.synth import generate
        except ImportError as exc:  # pragma: no cover
            raise PipelineError(f"workload.name: {wdir} is missing and gclsampler.synth is unavailable") from exc
        log.info("synthesizing SYNTHETIC workload %s into %s", cfg.workload.name, wdir)
        with _synth_keys_under_workload():
            try:
                generate(str(cfg.workload.name), wdir, params=req["params"], arch=req["arch"], seed=req["seed"],
                         progress=bool(cfg.train.progress))
            except OSError as exc:  # the place the user chose cannot be written: name the key that chose it
                raise PipelineError(f"paths.workloads_dir: {wdir}: cannot write the workload there "
                                    f"({exc.strerror or exc})") from None

    from gclsampler._guard import stderr_line
    from gclsampler._safe_out import use_workload

    use_workload(wdir, unusable, make, lambda line: stderr_line(f"train.py: {line}"), hold)
    return wdir


def load_graphs(cfg: DictConfig, wdir: Path):
    """(dataset, unique graphs in dataset order, invocation -> unique graph index)."""
    from gclsampler.data import GraphDataset
    from gclsampler.graph import GraphConfig

    gcfg = _as_dataclass(GraphConfig, cfg.graph)
    cache = cfg.paths.get("cache_dir")
    if cache and not Path(cache).is_absolute():
        cache = _original_cwd() / cache
    from gclsampler._safe_out import OutputError

    try:
        ds = GraphDataset(wdir, gcfg, cache_dir=cache, workers=int(cfg.workers), progress=bool(cfg.train.progress))
    except OutputError as exc:  # a user's directory as the cache: name the key that chose it, if one did
        if not cache:  # the default, <workload>/.graph-cache: no key of the user's chose it
            raise
        raise OutputError(f"paths.cache_dir: {exc}") from None
    invocations = np.asarray(ds.invocations)
    if not np.array_equal(invocations, np.arange(len(invocations))):
        raise PipelineError(f"{wdir}/kernelslist.g: invocations are not 0..N-1 in launch order")
    graphs = [ds.graph(g) for g in range(ds.n_unique)]
    return ds, graphs, np.asarray(ds.inv_to_graph, dtype=np.int64)


PLAN_OUTPUTS = ("plan.json", "clusters.csv", "silhouette.csv", "report.md", "results.csv")
"""What the post-embedding stage writes at the top of a run directory."""
RUN_OUTPUTS = ("config.yaml", "model.pt", "last.pt", "train_log.csv", "embeddings.npy", "run.json", *PLAN_OUTPUTS)
"""What a run writes at the top of its directory. Its plots (``plots/``) are left: a new
report.md names only the plots it drew, and the post-embedding stage removes the
sampler-specific ones."""


def _start_over(out_dir: Path) -> None:
    """Remove an earlier run's outputs before a run that does not resume writes its own.

    Why: a rerun overwrote them one by one as it went, so one stopped part way (Ctrl-C, a
    killed job) left its new config.yaml beside the earlier run's model.pt, embeddings.npy
    and plan.json, and the embeddings reader then took that config.yaml's encoder for theirs.
    Done once the data and graphs are known good, so a rerun refused for its input keeps the
    earlier run whole. Only the files a run writes are removed, by name.
    """
    for name in RUN_OUTPUTS:
        (out_dir / name).unlink(missing_ok=True)


def run(cfg: DictConfig, out_dir: Optional[Path] = None) -> dict:
    """Run the pipeline for ``cfg.workload``; returns the ``run.json`` summary.

    A synthesized workload is held until the run ends, not only while it is made: a multirun's
    job that wants it synthesized again (other knobs or seed) waits, rather than replacing the
    traces and profile this run reads (``ensure_workload``)."""
    with contextlib.ExitStack() as hold:
        return _run(cfg, out_dir, hold)


def _run(cfg: DictConfig, out_dir: Optional[Path], hold: contextlib.ExitStack) -> dict:
    t_start = time.perf_counter()
    if out_dir is None:
        from hydra.core.hydra_config import HydraConfig

        out_dir = Path(HydraConfig.get().runtime.output_dir)
    from gclsampler._safe_out import claim_dir

    # every value is checked before the run directory is claimed or anything is synthesized
    _label_own_workload(cfg)  # a broken workload.json is refused before the run directory is claimed
    model_cfg, aug_cfg, train_cfg = check_config(cfg)
    # torch (about 3 s) only once the config holds: a config error, and train.py's check of
    # every swept value, do not wait for it
    from gclsampler.train import (atomic_save_npy, atomic_write_text, deterministic_cuda, embed_invocations, fit,
                                  intra_op_threads, native_bf16, resolve_device, resolve_precision)

    device = resolve_device(train_cfg.device)  # fail before synthesis/graph building
    # a run directory given by hand (hydra.run.dir=...) may hold someone's files: never overwrite
    # them, and never put a run inside the workload it reads
    from gclsampler._safe_out import check_not_input

    check_not_input(out_dir, [workload_dir(cfg)], directory=False)  # a run is written into, not replaced
    out_dir = claim_dir(out_dir, "train", ignore=(".hydra", "train.log"))
    resuming = bool(train_cfg.resume) and (out_dir / "last.pt").exists()
    timings: dict[str, float] = {}

    t = time.perf_counter()
    wdir = ensure_workload(cfg, hold)
    post_enabled = bool(cfg.get("post_embedding", True))
    from gclsampler.validate import require_valid_workload

    # kernelslist.g vs trace headers vs profile.csv: seconds, before minutes of graphs and training
    profile = require_valid_workload(wdir, profile=post_enabled, traces=True, scored=post_enabled)
    # profile.csv is read now (by the validator), so a bad profile fails before minutes of training
    workload = _load_workload(wdir, str(cfg.workload.name), profile) if post_enabled else None
    timings["workload_s"] = round(time.perf_counter() - t, 3)

    t = time.perf_counter()
    ds, graphs, inv_to_graph = load_graphs(cfg, wdir)
    timings["graphs_s"] = round(time.perf_counter() - t, 3)
    n_nodes = [int(g.num_nodes) for g in graphs]
    log.info("%d invocations, %d unique graphs (%d nodes on average)", len(inv_to_graph), len(graphs),
             int(np.mean(n_nodes)) if n_nodes else 0)

    precision = resolve_precision(train_cfg.precision, device)
    if train_cfg.precision == "bf16" and not native_bf16(device):
        log.warning("train.precision=bf16 on a %s without native bfloat16: emulated, slower than fp32 "
                    "(train.precision=auto picks fp32 here)", device.type.upper())
    log.info("training on %s in %s%s", device, precision, " (train.precision=auto)" if train_cfg.precision == "auto" else "")
    data = {f"graph.{k}": v for k, v in OmegaConf.to_container(cfg.graph, resolve=True).items()}
    data["workload.name"] = str(cfg.workload.name)
    if not resuming:  # a resumed run's config.yaml is written once its checkpoint has accepted the settings
        _start_over(out_dir)
        atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    # this job's threads, not the one before it in a multirun; on CUDA fixed summation orders
    with intra_op_threads(train_cfg.threads) as threads, deterministic_cuda(train_cfg.deterministic, device):
        result = fit(graphs, model_cfg, aug_cfg, train_cfg, out_dir, data_settings=data,
                     log_fn=lambda r: log.info("epoch %d train %.4f val %s (%.1fs)", r["epoch"], r["train_loss"],
                                               "n/a" if math.isnan(r["val_loss"]) else f"{r['val_loss']:.4f}",
                                               r["seconds"]))
        if resuming:
            atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        timings["train_s"] = round(result.seconds, 3)

        t = time.perf_counter()
        emb = embed_invocations(result.model, graphs, inv_to_graph, train_cfg.embed_batch_size,
                                train_cfg.max_nodes_per_batch, progress=train_cfg.progress)
    atomic_save_npy(emb, out_dir / "embeddings.npy")
    timings["embed_s"] = round(time.perf_counter() - t, 3)

    if workload is not None:
        workload.embeddings = emb
        from gclsampler.embeddings import project_deviations

        if not project_deviations(model_cfg):  # the paper's encoder: what gcl_paper clusters
            workload.paper_embeddings = emb
    t = time.perf_counter()
    if post_enabled:
        post = run_post_embedding(cfg, workload, emb, out_dir)
    else:  # a resumed run keeps its directory: an earlier run's plan and report would sit beside a
        # config.yaml and run.json that say no plan was made
        post = {}
        for name in PLAN_OUTPUTS:
            (out_dir / name).unlink(missing_ok=True)
    timings["post_s"] = round(time.perf_counter() - t, 3)
    timings["total_s"] = round(time.perf_counter() - t_start, 3)

    from gclsampler.workload import data_digest, declared_data_kind

    summary = {
        "workload": str(cfg.workload.name), "workload_dir": str(wdir),
        "data_digest": data_digest(wdir),  # which data the embeddings are of (evaluate.py embeddings=cached)
        "synthetic": bool(getattr(workload, "synthetic", cfg.workload.get("synthetic", True))),
        "data": declared_data_kind(wdir),  # synthetic / real / "" (unlabelled), as report.md labels it
        "invocations": int(len(inv_to_graph)), "unique_graphs": len(graphs),
        "mean_nodes": float(np.mean(n_nodes)) if n_nodes else 0.0,
        "train_graphs": len(result.train_ids), "val_graphs": len(result.val_ids),
        "epochs_run": len(result.log), "best_epoch": result.best_epoch, "best_val_loss": result.best_val_loss,
        "device": str(next(result.model.parameters()).device), "threads": threads,
        "precision": result.precision,
        "timings": timings, "post_embedding": post,
    }
    from gclsampler.score import finite_or_null

    # NaN (no validation graphs: no best validation loss) is no JSON; JSON.parse and jq refused run.json
    atomic_write_text(out_dir / "run.json",
                      json.dumps(finite_or_null(summary), indent=2, default=str, allow_nan=False) + "\n")
    log.info("done in %.1fs: %s", timings["total_s"], out_dir)
    return summary


def _check_synth_request(cfg: DictConfig) -> Optional[dict]:
    """The synthesis request of a workload without ``workload.dir``, checked without any work
    (None for the user's own directory). Why before anything: ``workload.arch`` joins
    ``workload.synth.archs``, and the synthesizer's refusal of an unknown arch named that key,
    not the one the user set; a bad knob was found only after the run directory was claimed."""
    if cfg.workload.get("dir"):
        return None
    from gclsampler.synth.generate import check_request, synthesizes

    arch = _workload_arch(cfg)
    if not synthesizes(arch):
        from gclsampler.synth.arch import ARCHS

        raise PipelineError(f"workload.arch: unknown arch {arch!r}; known: {', '.join(sorted(ARCHS))}, "
                            "each also as <arch>_rerun (a second run of it)")
    req = _synth_request(cfg)
    with _synth_keys_under_workload():
        check_request(str(cfg.workload.name), req["params"], req["arch"], req["seed"])
    return req


def check_config(cfg: DictConfig) -> tuple[ModelConfig, AugmentConfig, TrainConfig]:
    """Every value of a train.py config a stage would refuse, checked without reading or writing
    anything (but whether ``workload.dir`` is a directory, and, for ``train.device=cuda``, whether
    torch sees one): ``run`` calls it first, and ``train.py -m`` calls it on each sweep value before
    the first job (``gclsampler._sweep``), so a bad value in a sweep does not wait for its job."""
    if isinstance(cfg.get("workers"), bool) or int(cfg.get("workers", 1)) < 1:  # as `graph build --workers`
        raise PipelineError(f"workers: must be at least 1 (processes building graphs; 1 = in this process), "
                            f"got {cfg.get('workers')!r}")
    paths = cfg.get("paths") or {}
    for key in ("workloads_dir", "cache_dir"):  # '' was taken as the current directory, and written into
        if key in paths and paths.get(key) is not None and not str(paths.get(key)).strip():
            raise PipelineError(f"paths.{key}: empty path; give a directory (or leave the default)")
    model_cfg = _as_dataclass(ModelConfig, cfg.model).validate()
    aug_cfg = _as_dataclass(AugmentConfig, cfg.augment).validate()
    train_cfg = _as_dataclass(TrainConfig, cfg.train).validate()
    from gclsampler.graph import GraphConfig

    _as_dataclass(GraphConfig, cfg.graph).validate()
    if bool(cfg.get("post_embedding", True)):
        _check_plan_stage(cfg)  # sampler/cluster parameters fail now, not after training
    _check_synth_request(cfg)
    # the two checks a run made only once it started: in a sweep (`train.device=cpu,cuda`,
    # `workload.dir=A,B`) the jobs before the bad value trained in full first
    if str(train_cfg.device) == "cuda":
        from gclsampler.train import resolve_device  # torch: only when CUDA is asked for

        resolve_device("cuda")
    if (cfg.get("workload") or {}).get("dir"):
        _require_own_dir(workload_dir(cfg))
    elif paths.get("workloads_dir"):
        # a file there gave two lock warnings and an error naming neither the file nor the key
        from gclsampler._safe_out import _blocking_file

        where = workload_dir(cfg)
        blocker = _blocking_file(where)
        if blocker is not None:
            raise PipelineError(f"paths.workloads_dir: {where.parent}: {blocker} is a file, not a directory")
    return model_cfg, aug_cfg, train_cfg


def _check_plan_stage(cfg: DictConfig) -> None:
    """Check the cluster, stem and sampler groups and build the sampler, without fitting it."""
    from gclsampler.cluster import ClusterConfig
    from gclsampler.samplers import sampler_from_config
    from gclsampler.validate import check_sampler_params

    ClusterConfig.from_any(cfg.get("cluster"), "cluster")
    if cfg.get("stem") is not None:
        from gclsampler.stem import check_params

        st = cfg.stem
        check_params(st.epsilon, st.z, st.min_samples, st.min_group, st.scope)

    from gclsampler.plan import check_seed

    check_seed(cfg.seed, "seed")  # the root seed reaches the sampler as random_state: name the key the user set
    try:
        sampler = sampler_from_config(cfg.sampler, cfg.cluster, int(cfg.seed))
    except TypeError as exc:
        raise PipelineError(f"sampler.params: {exc}") from None
    check_sampler_params(sampler, "sampler.params")
    _check_encoder(cfg, sampler)
    _check_work_column(cfg, sampler)


def _check_encoder(cfg: DictConfig, sampler) -> None:
    """Refuse a sampler of the paper's encoder's embeddings (``gcl_paper``) with the project's encoder.

    Why: ``gcl_paper`` is the paper's method only on the paper's encoder (GCL-Sampler 3.3.1-3.3.2:
    no instruction statistics, no size vector); trained with the default model, the plan under
    its name clustered the project's embeddings. Refused rather than switched silently, so the
    run's config.yaml and the command line say the same thing (docs/plans.md).
    """
    if getattr(sampler, "embedding_attr", "embeddings") != "paper_embeddings" or cfg.get("model") is None:
        return
    from gclsampler.embeddings import project_deviations

    on = project_deviations(cfg.model)
    if on:
        raise PipelineError(f"{' '.join(on)}: the project's encoder, but sampler={sampler.name} clusters the "
                            f"paper's encoder's embeddings; add model=paper "
                            f"(or {' '.join(k.replace('=true', '=false') for k in on)})")


def _check_work_column(cfg: DictConfig, sampler) -> None:
    """Refuse a GCL sampler that reads the size vector's work column when the encoder has none.

    Why: ``split_column`` counts from the embeddings' end, so without the size vector
    (``model.kernel_features=false``, the paper's encoder) the work split and ``work_mean``
    would read a learned dimension as work and say nothing: fail before training, by key.
    """
    from gclsampler.graph import KERNEL_FEATURE_NAMES, N_KERNEL_FEATURES
    from gclsampler.samplers import GclSampler

    if not isinstance(sampler, GclSampler) or cfg.get("model") is None:
        return
    cl = sampler.effective_cluster_config()
    uses = sampler.size_vector_uses()
    if cfg.model.get("kernel_features", True):
        # a column outside the size vector is a learned dimension (or none): refused now, not
        # after training, and not read silently as work
        if uses and not -N_KERNEL_FEATURES <= cl.split_column <= -1:
            names = ", ".join(f"{i - N_KERNEL_FEATURES} {n}" for i, n in enumerate(KERNEL_FEATURE_NAMES))
            raise PipelineError(
                f"cluster.split_column: {cl.split_column} is not a column of the size vector, which "
                f"{' and '.join(uses)} read{'' if len(uses) > 1 else 's'} as work; counted from the "
                f"embeddings' end its columns are {names}")
        scale = cfg.model.get("kfeat_scale", 1.0)
        if uses and scale != 1:
            raise PipelineError(_kfeat_scale_conflict(scale, uses))
        return
    if uses:
        raise PipelineError(
            f"model.kernel_features=false: {' and '.join(uses)} {'read' if len(uses) > 1 else 'reads'} the size "
            f"vector's work column, which these embeddings lack; add cluster.split_tolerance=0 "
            f"cluster.representative=medoid, or use sampler=gcl_paper")


def _kfeat_scale_conflict(scale, uses: list[str]) -> str:
    """Why a scaled size vector is refused where the work column is read.

    Why refused: the work split's tolerance and ``work_mean``'s mean are in log2 instructions,
    and the embeddings hold them times ``model.kfeat_scale``: at 0.5 a 0.4 tolerance let
    clusters span 1.74x instead of 1.32x, at 0 the split was off and ``work_mean`` fell back
    to the medoid, all without a word."""
    return (f"model.kfeat_scale={scale}: the embeddings' size vector is scaled, but {' and '.join(uses)} "
            f"{'read' if len(uses) > 1 else 'reads'} its work column as log2 instructions; keep "
            f"model.kfeat_scale=1, or add cluster.split_tolerance=0 cluster.representative=medoid")


def _load_workload(wdir: Path, name: str, profile=None):
    """The workload's profile and metadata, named as the config names it (plan.json's ``workload``).

    ``profile``: profile.csv as the validator already parsed it (None reads it)."""
    from gclsampler.workload import Workload

    if not (wdir / "profile.csv").exists():
        raise PipelineError(f"{wdir / 'profile.csv'}: missing; the plan needs kernel names and times "
                            "(import one with `gclsampler profile import`, or set post_embedding=false)")
    workload = Workload.load(wdir, profile=profile)
    workload.name = name
    return workload


def run_post_embedding(cfg: DictConfig, workload, embeddings: np.ndarray, out_dir: Path) -> dict:
    """Cluster the embeddings, write the sampling plan and score it against ground truth.

    Writes ``plan.json``, ``clusters.csv`` and ``silhouette.csv`` (gclsampler.samplers),
    then ``report.md``, ``results.csv`` and plots (gclsampler.report) scored on the
    workload's own profile and every ``profiles/<arch>.csv`` it has. Returns the plan
    summary plus the plan's error and speedup on the workload's own arch, which the
    sweep summary compares across settings.
    """
    from gclsampler.report import write_workload_report
    from gclsampler.plan import SamplingPlan
    from gclsampler.samplers import run_plan_stage

    # what only some samplers write: a rerun into this run dir with another sampler (stem_root
    # after gcl) left gcl's, and its report then drew gcl's clusters.csv as stem_root's clusters
    plots = out_dir / "plots"
    for old in [out_dir / "clusters.csv", out_dir / "silhouette.csv", plots / "silhouette.png",
                *(plots.glob("clusters_*.png") if plots.is_dir() else [])]:
        old.unlink(missing_ok=True)
    summary = run_plan_stage(workload, cfg.sampler, cfg.cluster, out_dir, int(cfg.seed))
    plan = SamplingPlan.load(out_dir / "plan.json")
    labels = None
    clusters_csv = out_dir / "clusters.csv"
    if clusters_csv.exists():
        import pandas as pd

        labels = {plan.method: pd.read_csv(clusters_csv)["cluster"].to_numpy()}
    write_workload_report(workload, plan, out_dir, labels=labels, silhouette=out_dir / "silhouette.csv")
    results = out_dir / "results.csv"
    if results.exists():
        import pandas as pd

        from gclsampler.profile import fitted_arch

        df = pd.read_csv(results)
        own = df[df["arch"] == fitted_arch(workload.arch)]
        if len(own):
            # null, not NaN (no JSON), where the profile has no cycle counts; the time error is always there
            err = float(own["error_cycles"].iloc[0])
            summary["error_pct"] = err if math.isfinite(err) else None
            summary["error_time_pct"] = float(own["error_time"].iloc[0])
            summary["speedup"] = float(own["speedup"].iloc[0])
    return summary
