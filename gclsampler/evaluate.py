"""The evaluation suite (``python evaluate.py``): fit every method on every workload, score, report.

The scoring arithmetic (GCL-Sampler eq. 5 and 6, weighted-mean rate metrics, averaging
over seeds) lives in ``gclsampler.score``, below this module, the training pipeline and
the report, so none of them import each other in a circle; its names are re-exported here
for existing callers. Cross-arch: a plan fitted on the trace arch's ``profile.csv`` is
scored against ``profiles/<arch>.csv`` of every other arch (GCL Sec. 5.2, P1 -> P2, P3),
and ``profiles/accelsim-<config>.csv`` written by ``gclsampler simulate --all`` is scored
the same way (simulated ground truth: the papers' sampled-versus-full simulation).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional  # plain types for OmegaConf

import numpy as np

from gclsampler._atomic import write_text_atomic
from gclsampler._guard import one_line, stderr_line
from gclsampler.errors import GclError
from gclsampler.plan import Sampler
from gclsampler.report import write_workload_report
from gclsampler.score import (  # noqa: F401  (re-exported: the suite's public names before the split)
    METHOD_ORDER,
    RATE_METRICS,
    RESULT_COLUMNS,
    EvaluationError,
    MethodRun,
    _rel_error_pct,
    evaluate_workload,
    harmonic_mean,
    method_sort_key,
    score_plan,
    suite_averages,
    summarize,
    write_results_csv,
)

__all__ = [
    "EvaluationError",
    "RATE_METRICS",
    "METHOD_ORDER",
    "score_plan",
    "make_sampler",
    "MethodRun",
    "evaluate_workload",
    "summarize",
    "harmonic_mean",
    "SuiteConfig",
    "EvaluateConfig",
    "run_suite",
    "register_configs",
    "write_workload_report",
]

EMBEDDING_METHODS = ("gcl", "gcl_stem", "gcl_paper")
PAPER_EMBEDDING_METHODS = ("gcl_paper",)
"""Methods clustering embeddings of the paper's encoder (``model=paper``), trained separately."""


def _registry() -> dict[str, type[Sampler]]:
    """A copy of ``gclsampler.samplers.SAMPLERS``, the one registry of sampling methods.

    That module registers gcl, gcl_stem, stem_root and the baselines; ``register_sampler``
    adds more. Imported lazily (it pulls in clustering), copied so callers may extend it.
    """
    from gclsampler.samplers import SAMPLERS

    return dict(SAMPLERS)


def make_sampler(method: str, params: dict[str, Any] | None = None, seed: int = 0) -> Sampler:
    """``Cls(**params, random_state=seed)`` for a method name (``pka``, ``gcl``, ...)."""
    reg = _registry()
    if method not in reg:
        raise EvaluationError(f"suite.methods: unknown method {method!r}; available: {sorted(reg)}")
    from gclsampler.samplers import unknown_param

    problem = unknown_param(reg[method], params or {}, f"method_params.{method}.")
    if problem:
        raise EvaluationError(problem)
    try:
        return reg[method](**dict(params or {}), random_state=int(seed))
    except TypeError as exc:
        raise EvaluationError(f"method_params.{method}: {exc}") from None


def _labels_of(sampler: Sampler) -> np.ndarray | None:
    for attr in ("labels_", "leaf_"):
        v = getattr(sampler, attr, None)
        if v is not None:
            return np.asarray(v, dtype=np.int64)
    res = getattr(sampler, "result_", None)
    if res is not None and getattr(res, "leaf", None) is not None:
        return np.asarray(res.leaf, dtype=np.int64)
    return None


def _no_traces(workload) -> str | None:
    """Why ``workload`` has no SASS traces to embed, or None when it has them.

    A real workload can be a profile alone (a GPU run whose tracing did not finish): the
    trace-graph methods are then not run on it (``run_suite`` does not embed it), and the
    tables say why.
    """
    root = getattr(workload, "root", None)
    if root is None:
        return None
    from gclsampler.trace.workload import no_traces

    why = no_traces(root)
    return why and f"{why}: no SASS traces to build graphs from (a profile-only workload)"


def fit_methods(workload, methods: list[str], method_params: dict[str, dict[str, Any]], *,
                n_seeds: int = 10, epsilons: list[float] | None = None,
                sweep_methods: Iterable[str] = ("stem_root", "gcl_stem"), seed0: int = 0,
                progress: Callable[[str], None] | None = None,
                unavailable: list[tuple[str, str]] | None = None) -> list[MethodRun]:
    """Fit every method on ``workload`` (seeds for stochastic ones, the ε sweep where asked).

    A method whose inputs the workload lacks (``Sampler.missing_inputs``: pka without the PKA
    metrics, sieve without instruction counts) is appended to ``unavailable`` as
    ``(method, reason)`` and not fitted; without that list it is an error naming the reason.
    """
    reg = _registry()
    runs: list[MethodRun] = []
    sweep_methods = set(sweep_methods)
    for method in methods:
        if method not in reg:
            raise EvaluationError(f"suite.methods: unknown method {method!r}; available: {sorted(reg)}")
        cls = reg[method]
        base = dict(method_params.get(method, {}) or {})
        stochastic = bool(getattr(cls, "stochastic", False))
        seeds = [seed0 + s for s in range(int(n_seeds))] if stochastic else [seed0]
        variants: list[tuple[dict[str, Any], float | None, bool]] = []
        main_eps = base.get("epsilon")
        variants.append((base, None if main_eps is None else float(main_eps), False))
        if method in sweep_methods and epsilons:
            for eps in epsilons:
                if main_eps is not None and math.isclose(float(eps), float(main_eps)):
                    continue
                variants.append(({**base, "epsilon": float(eps)}, float(eps), True))
        if method in EMBEDDING_METHODS and getattr(workload, "embeddings", None) is None:
            why = _no_traces(workload)
            if why is None or unavailable is None:
                raise EvaluationError(f"methods: {method} needs embeddings for workload {workload.name!r}"
                                      + (f" ({why})" if why else ""))
            unavailable.append((method, why))
            continue
        check = getattr(make_sampler(method, base, seed0), "missing_inputs", None)  # registered non-Sampler classes
        why = check(workload) if check is not None else None
        if why is not None:
            if unavailable is None:
                raise EvaluationError(f"methods: {method} cannot run on workload {workload.name!r}: {why}")
            unavailable.append((method, why))
            continue
        for params, eps, sweep in variants:
            for seed in seeds:
                if progress:
                    progress(f"{workload.name}:{method}" + (f"@{eps:g}" if eps is not None else "") + f":s{seed}")
                sampler = make_sampler(method, params, seed)
                t0 = time.perf_counter()
                plan = sampler.fit(workload)
                dt = time.perf_counter() - t0
                plan.validate(f"{workload.name}/{method} plan")
                sil = getattr(sampler, "silhouette_", None)
                runs.append(MethodRun(method, seed, eps, sweep, plan, _labels_of(sampler), dt,
                                      stochastic, params, dict(sil) if isinstance(sil, dict) else None))
    return runs


# ---------------------------------------------------------------------------------------
# suite: Hydra config and runner (``python evaluate.py``)
# ---------------------------------------------------------------------------------------
ALL_WORKLOADS = ["phi2", "pythia", "qwen1_5", "3mm", "lu", "bfs", "cfd", "lud", "nw", "backprop", "alexnet"]


@dataclass
class SuiteConfig:
    """Which workloads, archs, methods, seeds and error bounds one evaluation covers."""

    name: str = "full"
    workloads: List[str] = field(default_factory=lambda: list(ALL_WORKLOADS))
    archs: List[str] = field(default_factory=lambda: ["turing", "ampere", "ada"])
    trace_arch: str = "turing"  # P1 in GCL-Sampler Table 3: plans are fitted here
    methods: List[str] = field(default_factory=lambda: ["gcl", "gcl_paper", "gcl_stem", "stem_root", "pka", "sieve",
                                                        "allegro", "photon", "random"])  # = conf/suite/full.yaml
    n_seeds: int = 10
    epsilons: List[float] = field(default_factory=lambda: [0.03, 0.05, 0.10, 0.25])
    sweep_methods: List[str] = field(default_factory=lambda: ["stem_root", "gcl_stem"])
    synth_params: Dict[str, Any] = field(default_factory=dict)
    train_overrides: List[str] = field(default_factory=list)
    data_dir: Optional[str] = None  # the suite's own place (keeps shrunk quick workloads apart); a root data_dir wins
    hist_workload: Optional[str] = "cfd"  # as full.yaml; null: the first workload
    hist_methods: List[str] = field(default_factory=lambda: ["gcl", "stem_root", "sieve", "pka"])
    real: bool = False  # every workload is measured (docs/real.md): never synthesized, a missing one is an error
    rerun: bool = True  # synthesize a second run of trace_arch (profiles/<trace_arch>_rerun.csv) to score plans on too


@dataclass
class EvaluateConfig:
    """Root config of ``python evaluate.py`` (conf/evaluate.yaml + conf/suite/*.yaml)."""

    suite: SuiteConfig = field(default_factory=SuiteConfig)
    method_params: Dict[str, Any] = field(default_factory=lambda: {
        "pka": {"target_error": 0.05, "k_max": 20},
        "sieve": {"cov_threshold": 0.1, "bandwidth": "silverman", "representative": "dominant_cta"},
        "random": {"fraction": 0.1},
        "allegro": {"epsilon": 0.05},
        "photon": {"threshold": 0.95, "match_launch": True},
        "stem_root": {"epsilon": 0.25},
        "gcl_stem": {"epsilon": 0.25, "cluster_random_state": 0},
        "gcl": {},
    })
    data_dir: Optional[str] = None  # <data_dir>/<name>; null: suite.data_dir, else workloads/ (train.py's paths.workloads_dir)
    out_dir: Optional[str] = None  # default: Hydra's run dir; given, it is Hydra's run dir (conf/evaluate.yaml)
    generate: bool = True  # write missing synthetic workloads with gclsampler.synth
    embeddings: str = "train"  # train | cached (<workload>/embeddings.npy, else train)
    seed: int = 0
    save_plans: bool = True
    plots: bool = True
    skip_unavailable: bool = True  # a workload synth cannot generate is skipped (named in report.md)
    train_config_dir: Optional[str] = None  # conf/ of train.py; default: the repository's conf/


def register_configs() -> None:
    """Store the schema as ``evaluate_schema`` so conf/evaluate.yaml is type-checked."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    ConfigStore.instance().store(name="evaluate_schema", node=EvaluateConfig)
    # conf/evaluate.yaml's hydra.run.dir: out_dir when given, so .hydra/ and evaluate.log go with the
    # results rather than into outputs/ under the working directory (oc.select keeps a null out_dir)
    OmegaConf.register_new_resolver("gcl.out_dir_or", lambda out_dir, default: out_dir or default, replace=True)


def _declared_real(wdir: Path) -> bool:
    """workload.json says ``"synthetic": false``: traced and measured data, never to be synthesized over."""
    from gclsampler.workload import declared_data_kind

    return declared_data_kind(wdir) == "real"


def fit_on_arch(workload, arch: str) -> None:
    """Make ``arch``'s profile the workload's own, the one its plans are fitted on: a workload
    with no arch of its own takes ``arch``'s name; one traced on another arch (e.g. by
    train.py) gets ``profiles/<arch>.csv`` as its profile."""
    if workload.arch is None:
        workload.arch = arch
    elif workload.arch != arch:
        workload.profile = workload.ground_truth(arch)
        workload.arch = arch


def check_real_workload(wdir: Path, name: str, required: bool) -> bool:
    """Check a real workload before any work starts; True when ``wdir`` holds one.

    ``required`` (``suite.real``): the directory must exist and its workload.json must say
    ``"synthetic": false``. Why one located line, not a skip or a synthesis: a real workload
    cannot be regenerated, so a missing or misnamed one must stop the run where it is named
    (the suite's ``workloads`` list or ``data_dir``), and nothing may be written in its place.
    """
    meta = wdir / "workload.json"
    if not _declared_real(wdir):
        if not required:
            return False
        if not wdir.is_dir():
            raise EvaluationError(f"{wdir}: suite.workloads: no real workload {name!r} here (suite.real: real "
                                  "workloads are read, never synthesized; fix the name or data_dir)")
        raise EvaluationError(f"{meta}: synthetic: suite.real takes measured workloads only, whose workload.json "
                              "says \"synthetic\": false" + ("" if meta.exists() else " (the file is missing)"))
    from gclsampler.workload import read_meta

    d = read_meta(meta)
    if not d.get("arch"):
        raise EvaluationError(f"{meta}: arch: missing (the arch the profile was measured on, e.g. \"h100\")")
    from gclsampler.validate import require_valid_workload

    profile = require_valid_workload(wdir, traces=None, scored=True)
    if "n_invocations" in d:
        rows = len(profile)
        if not isinstance(d["n_invocations"], int) or d["n_invocations"] != rows:
            raise EvaluationError(f"{meta}: n_invocations: {d['n_invocations']!r}, but profile.csv has {rows} rows")
    return True


def _check_unique_names(suite: SuiteConfig, data_dir: Path) -> None:
    """Refuse two workloads of the suite that declare one name (workload.json's ``workload``).

    Why: a workload's training run (``train/<name>/``), plans and result rows are named by it,
    so the second trained into the first's run, or with ``embeddings=cached`` was handed the
    first's embeddings without a word when their invocation counts matched. A directory not
    on disk yet is synthesized under its suite name."""
    from gclsampler.workload import declared_name

    named: dict[str, Path] = {}
    for name in suite.workloads:
        wdir = data_dir / name
        declared = declared_name(wdir)  # without a workload.json: the directory's name, the suite's
        if declared in named:
            raise EvaluationError(f"{wdir / 'workload.json'}: workload: {declared!r} is also the name of "
                                  f"{named[declared]}; each workload of a suite needs its own name")
        named[declared] = wdir


def _prepare_workload(name: str, data_dir: Path, suite: SuiteConfig, generate: bool, seed: int,
                      hold: contextlib.ExitStack | None = None) -> Path:
    """The workload directory, generating it with ``gclsampler.synth`` when missing.

    A directory whose workload.json says ``"synthetic": false`` is returned as it is, or
    refused; never synthesized over, whatever ``generate`` says (``check_real_workload``).
    A synthesized one is kept from being synthesized again by another process (a ``train.py``
    or suite that wants other knobs) until ``hold`` closes (``_safe_out.use_workload``).
    """
    wdir = data_dir / name
    if _declared_real(wdir):  # run_suite checked it with every other workload, before any work
        return wdir
    if suite.real:
        check_real_workload(wdir, name, required=True)  # raises: not a real workload
    params = _synth_params(suite, name)
    from gclsampler.synth.generate import stale_reason, with_second_run, workload_names

    if suite.rerun and name in workload_names():
        params = with_second_run(name, params, suite.trace_arch)
    if not (wdir / "profile.csv").exists() and not generate:
        raise EvaluationError(f"{wdir}: data_dir: workload {name!r} not found and generate=false")

    def unusable() -> str | None:
        if not (wdir / "profile.csv").exists():
            return "missing"
        return stale_reason(wdir, name, params or None, suite.trace_arch, seed) if generate else None

    if generate and unusable() is not None:
        from gclsampler.synth.generate import check_request

        check_request(name, params or None, suite.trace_arch, seed)  # a bad knob fails before the lock file exists

    made: list = []

    def make(why: str) -> None:
        if not generate:  # removed since it was found
            raise EvaluationError(f"{wdir}: data_dir: workload {name!r} not found and generate=false")
        try:
            from gclsampler.synth import generate as synth_generate
        except ImportError as exc:
            raise EvaluationError(f"{wdir}: generate: gclsampler.synth is not available ({exc})") from None
        if (wdir / "profile.csv").exists():
            from gclsampler.synth.generate import check_replaceable
            from gclsampler.workload import declared_arch

            made_on = declared_arch(wdir)
            check_replaceable(wdir, "score it as it is with generate=false" +
                              (f" suite.trace_arch={made_on}" if made_on and made_on != suite.trace_arch else "")
                              + f" ({why})")
            print(f"evaluate: re-synthesizing {wdir}: {why}", file=sys.stderr)
        made.append(synth_generate(name, wdir, params=params or None, arch=suite.trace_arch, seed=seed))

    from gclsampler._safe_out import use_workload

    use_workload(wdir, unusable, make, lambda line: print(f"evaluate: {line}", file=sys.stderr, flush=True), hold)
    if not made:
        if not generate:  # scored as it is: say so when it is not what this run asks for
            # (another seed, knobs, arch, workload or ground-truth version): its rows would carry
            # this run's seed, which compare.md takes for the synthesis seed, over other data
            why = stale_reason(wdir, name, params or None, suite.trace_arch, seed)
            if why is not None:
                print(f"evaluate: warning: {wdir}: not the workload this run asks for ({why}); scored as it is "
                      "(generate=false)", file=sys.stderr)
        return wdir
    out = made[0]
    for cand in (Path(out) if isinstance(out, (str, Path)) else None, wdir, wdir / name):
        if cand is not None and (cand / "profile.csv").exists():
            return cand
    raise EvaluationError(f"{wdir}: generate: synth wrote no profile.csv for {name!r}")


def _compose_train_config(overrides: list[str], config_dir: str | None):
    """The training pipeline's root config (conf/config.yaml) with ``overrides``.

    Inside ``python evaluate.py`` Hydra is already initialised on the same conf/ directory,
    so ``compose`` is used directly; elsewhere (tests, notebooks) a temporary context is made.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    import gclsampler.config  # noqa: F401  (registers gclsampler_schema)

    if GlobalHydra.instance().is_initialized() and config_dir is None:
        return compose(config_name="config", overrides=overrides)
    conf = Path(config_dir) if config_dir else Path(__file__).resolve().parents[1] / "conf"
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf.resolve())):
        return compose(config_name="config", overrides=overrides)


_OVERRIDE_KEY = re.compile(r"Could not override '(\w+)'"
                           r"|^config: (\w+): (?:Key '\w+' not in 'EvaluateConfig'|unknown key \(known in the root)")


def train_setting_hint(text: str) -> str:
    """A sentence for ``evaluate.py``'s error line when the key it refuses is train.py's
    (``model=pyg``, ``train.epochs=3``): the two share conf/, and such settings reach the
    suite's training only through ``suite.train_overrides``."""
    import dataclasses

    from gclsampler.config import RootConfig

    m = _OVERRIDE_KEY.search(text)
    key = next((g for g in m.groups() if g), None) if m else None
    own = {f.name for f in dataclasses.fields(EvaluateConfig)}
    if key is None or key in own or key not in {f.name for f in dataclasses.fields(RootConfig)}:
        return ""
    return f"({key} is a train.py setting: give it to the suite's training as 'suite.train_overrides=[\"{key}...\"]')"


def check_train_overrides(cfg: "EvaluateConfig") -> None:
    """Compose the training config with ``suite.train_overrides`` and check its keys and values
    (``pipeline.check_config``) before any work, naming that key in what fails. Why: they were
    first composed at the first workload's training, after synthesis, and the error named
    ``train.epoch`` but not where it had been written."""
    if not cfg.suite.train_overrides:
        return
    from gclsampler._guard import check_config_keys, prefixed_errors
    from gclsampler.pipeline import check_config

    with prefixed_errors("suite.train_overrides", EvaluationError):
        composed = _compose_train_config(["post_embedding=false", *cfg.suite.train_overrides], cfg.train_config_dir)
        check_config_keys(composed)
        check_config(composed)  # the values too: train.lr=-1 failed at the first training, after synthesis
    model = composed.get("model")
    readers = _size_vector_readers(cfg) if model is not None else []  # outside: a method_params error is not the overrides'
    if readers:
        # train.py refuses these by key; composed with post_embedding=false the plan stage's
        # check did not run, and gcl cut its work split on a learned column without a word
        if not model.get("kernel_features", True):
            raise EvaluationError(f"suite.train_overrides: model.kernel_features=false: {'; '.join(readers)} read "
                                  f"the size vector's work column, which these embeddings would lack; drop the "
                                  "override, or set method_params.<method>.cluster={split_tolerance: 0, "
                                  "representative: medoid}")
        scale = model.get("kfeat_scale", 1.0)
        if scale != 1:
            raise EvaluationError(f"suite.train_overrides: model.kfeat_scale={scale}: {'; '.join(readers)} read the "
                                  "size vector's work column as log2 instructions, which a scaled one is not; drop "
                                  "the override")


def _size_vector_readers(cfg: "EvaluateConfig") -> list[str]:
    """The suite's methods on the project's embeddings whose settings read the size vector's work
    column (``GclSampler.size_vector_uses``), each with those settings."""
    out = []
    for m in cfg.suite.methods:
        if m not in EMBEDDING_METHODS:
            continue
        sampler = make_sampler(m, dict(cfg.method_params.get(m) or {}), int(cfg.seed))
        uses = sampler.size_vector_uses() if hasattr(sampler, "size_vector_uses") else []  # a registered stand-in
        if getattr(sampler, "embedding_attr", "embeddings") == "embeddings" and uses:
            out.append(f"{m} ({' and '.join(uses)})")
    return out


def _refuse_other_data(embeddings: Path, root) -> None:
    """Refuse cached ``embeddings`` whose training run (its ``run.json``) trained on other data
    than the workload directory ``root`` holds now. Embeddings without a run.json beside them, or
    from a run that did not record its data (before ``data_digest``), are reused as before.

    Why: ``embeddings=cached`` into an ``out_dir`` whose ``train/`` an earlier run filled, with
    another ``seed`` (its workloads synthesized again in place), clustered the earlier seed's
    embeddings without a word: same rows, same kernel names, other traces and ground truth.
    Why a refusal and not a new training: that would replace the earlier run's models in
    ``train/``, which the user may still want (and its resume checkpoint refuses other graphs).
    """
    from gclsampler.workload import data_digest

    run_json = embeddings.parent / "run.json"
    try:
        recorded = json.loads(run_json.read_text()).get("data_digest") if run_json.is_file() else None
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded and recorded != data_digest(root):
        raise EvaluationError(
            f"{embeddings}: trained on other data than {root} holds now ({run_json}: data_digest; the workload was "
            "synthesized again since, e.g. with another seed): give a new out_dir (or copy only the runs of this "
            "data into it) to reuse or train embeddings of this data (embeddings=cached)")


def default_embed_fn(cfg: "EvaluateConfig", out_dir: Path,
                     graph_cache_dir: Path | None = None) -> Callable[[Any], np.ndarray]:
    """Embeddings from the training pipeline (``gclsampler.pipeline.run``) for each workload.

    The pipeline is run on the existing workload directory (``workload.dir``) with
    ``post_embedding=false`` and ``suite.train_overrides``; its ``embeddings.npy`` lands in
    ``<out_dir>/train/<workload>/``. With ``embeddings: cached`` a ``<workload>/embeddings.npy``
    or an earlier ``<out_dir>/train/<workload>/embeddings.npy`` is reused.

    A real workload's graphs are cached in ``graph_cache_dir`` (default ``<out_dir>/graph-cache``;
    ``python evaluate.py`` passes ``.cache/graphs`` of the launch directory, which git ignores),
    not in ``<workload>/.graph-cache``: its directory is committed data, and evaluating must
    leave it as it was. The cache is keyed by trace content, so workloads can share it.
    """

    def embed(workload, variant: str = "project") -> np.ndarray:
        paper = variant == "paper"
        run_dir = out_dir / "train" / (workload.name + ("-paper" if paper else ""))
        if cfg.embeddings == "cached":
            own = Path(workload.root) / ("paper_embeddings.npy" if paper else "embeddings.npy")
            for cand in (own, run_dir / "embeddings.npy"):
                if cand.exists():
                    _refuse_other_data(cand, workload.root)
                    from gclsampler.embeddings import load_embeddings, not_paper_encoder, without_size_vector

                    emb = load_embeddings(cand, workload.n_invocations, Path(workload.root) / "profile.csv")
                    why = not_paper_encoder(cand, emb.shape[1]) if paper else None
                    if why:  # gcl_paper would cluster the project's embeddings under the paper's name
                        raise EvaluationError(f"{cand}: {why}; gcl_paper clusters the paper's encoder's "
                                              "embeddings (embeddings=cached)")
                    readers = [] if paper else _size_vector_readers(cfg)
                    why = without_size_vector(cand, emb.shape[1]) if readers else None
                    if why:  # gcl's work split would cut on a learned column
                        raise EvaluationError(f"{cand}: {why}; {'; '.join(readers)} read the size vector's work "
                                              "column (embeddings=cached)")
                    return emb
        elif cfg.embeddings != "train":
            raise EvaluationError(f"embeddings: expected 'train' or 'cached', found {cfg.embeddings!r}")
        from gclsampler import pipeline
        from gclsampler._sweep import hydra_value

        conf_dir = Path(cfg.train_config_dir) if cfg.train_config_dir else Path(__file__).resolve().parents[1] / "conf"
        overrides = []
        measured = getattr(workload, "data_kind", "") == "real"
        if (conf_dir / "workload" / f"{workload.name}.yaml").exists() and not measured:
            overrides.append(f"workload={workload.name}")
        else:  # a real nw is not the synthetic benchmark of that name: no synth knobs, no synthetic label
            overrides.append(f"workload.name={hydra_value(workload.name)}")
        overrides += [f"workload.dir={hydra_value(str(Path(workload.root).resolve()))}",
                      f"workload.arch={hydra_value(str(workload.arch))}", "post_embedding=false", f"seed={cfg.seed}"]
        if measured:  # the graph cache goes outside the (committed, read-only) real workload directory
            cache = Path(graph_cache_dir or out_dir / "graph-cache").resolve()
            overrides.append(f"paths.cache_dir={hydra_value(str(cache))}")
        overrides += list(cfg.suite.train_overrides)
        if paper:
            overrides.append("model=paper")
        tcfg = _compose_train_config(overrides, cfg.train_config_dir)
        if paper:
            from gclsampler.embeddings import project_deviations

            on = project_deviations(tcfg.model)
            if on:  # a model.* value in train_overrides outranks the model=paper group
                raise EvaluationError(f"suite.train_overrides: {' '.join(on)} turns the project's encoder "
                                      "back on in gcl_paper's training (model=paper)")
        from gclsampler.train_config import TrainConfigError

        try:
            pipeline.run(tcfg, out_dir=run_dir)
        except TrainConfigError as exc:  # train.py's hint is no key evaluate.py takes
            raise TrainConfigError(_suite_resume_hint(str(exc))) from None
        emb = np.load(run_dir / "embeddings.npy")
        if emb.shape[0] != workload.n_invocations:
            raise EvaluationError(f"{run_dir}/embeddings.npy: rows: {emb.shape[0]} != {workload.n_invocations} "
                                  "invocations")
        return emb

    return embed


def _suite_resume_hint(message: str) -> str:
    """A training error's "set train.resume=false", as evaluate.py takes it. Why: evaluate.py
    refuses ``train.resume=false`` as a key of its own (it is a train.py setting), so the hint a
    rerun into the same ``out_dir`` with other training settings got was one it could not follow."""
    return message.replace("train.resume=false", "'suite.train_overrides=[\"train.resume=false\"]'")


def suite_data_dir(cfg: EvaluateConfig, launch_dir: str | Path | None = None) -> Path:
    """``data_dir`` when the user sets it, else the suite's own ``suite.data_dir``, else
    ``workloads``. Why the root wins: ``data_dir=`` on the command line is what the seed sweep
    and the README pass, and a suite that kept its own place would ignore it silently.
    A relative one is taken from the launch directory (Hydra's original cwd), never from
    Hydra's run directory."""
    data_dir = Path(cfg.data_dir or cfg.suite.data_dir or "workloads")
    if not data_dir.is_absolute() and launch_dir is not None:
        data_dir = Path(launch_dir) / data_dir
    return data_dir


def check_out_dir_apart(out: Path, cfg: EvaluateConfig, launch_dir: str | Path | None = None) -> None:
    """Refuse an ``out_dir`` that lies inside a workload of the suite, or a workload that lies
    inside what the run writes and cleans (``EARLIER_OUTPUTS``, ``train/``), before anything is
    created. Why: a user's measured workload under ``OUT/plans`` got plans written into it and was
    deleted by the rerun's cleanup, and an ``out_dir`` inside a workload was refused only after
    its marker had been left there, which then stopped that workload's synthesis."""
    from gclsampler._safe_out import OutputError, _is_within, _resolve

    data_dir = suite_data_dir(cfg, launch_dir)
    o = _resolve(out)
    managed = [o / n for n in (*EARLIER_OUTPUTS, "train")]
    for name in cfg.suite.workloads:
        w = _resolve(data_dir / name)
        if _is_within(o, w):
            raise OutputError(f"{out}: out_dir: lies inside workload {name} ({data_dir / name}); choose a path outside it")
        inside = next((m for m in managed if _is_within(w, m)), None)
        if inside is not None:
            raise OutputError(f"{data_dir / name}: data_dir: workload {name} lies inside out_dir's {inside.name}, which "
                              "evaluate.py writes and cleans; choose a data_dir outside it")


def check_suite_keys(cfg: EvaluateConfig, launch_dir: str | Path | None = None) -> None:
    """Values the schema's types let through but the suite cannot use, named by their key.

    Why here: each would otherwise surface late and under another name (``n_seeds=0``
    left stochastic methods with no plan and the report said only "no workload could be
    prepared"; an out-of-range sweep ε was reported as ``stem.epsilon``), or be ignored
    (an ``embeddings`` mode or ``hist_workload`` that matches nothing).
    """
    suite = cfg.suite
    from gclsampler.plan import check_seed

    check_seed(cfg.seed, "seed")  # else the first sampler checked named it method_params.<m>.random_state
    for key in ("data_dir", "out_dir"):  # '' fell back to the default silently, as if the key were not given
        v = getattr(cfg, key, None)
        if v is not None and not str(v).strip():
            raise EvaluationError(f"{key}: empty path; give a directory, or null for the default")
    for key in ("workloads", "methods"):  # an empty list failed only at the end, after every workload was synthesized
        if not list(getattr(suite, key)):
            raise EvaluationError(f"suite.{key}: empty; name at least one")
    if int(suite.n_seeds) < 1:
        raise EvaluationError(f"suite.n_seeds: must be >= 1 (seeds per stochastic method), got {suite.n_seeds}")
    for eps in suite.epsilons:
        if not 0.0 < float(eps) < 1.0:
            raise EvaluationError(f"suite.epsilons: each must be in (0, 1) (a relative error bound), got {eps!r}")
    if cfg.embeddings not in ("train", "cached"):
        raise EvaluationError(f"embeddings: expected 'train' or 'cached', found {cfg.embeddings!r}")
    if cfg.embeddings == "train" and any(m in EMBEDDING_METHODS for m in suite.methods):
        check_train_overrides(cfg)
    known = list(dict.fromkeys([*suite.workloads, *ALL_WORKLOADS]))
    if suite.hist_workload is not None and suite.hist_workload not in known:
        # a known workload outside a narrowed suite.workloads (full.yaml's cfd with workloads=[lu]) just has no histogram
        raise EvaluationError(f"suite.hist_workload: {suite.hist_workload!r} names no workload "
                              f"(suite.workloads: {', '.join(suite.workloads)})")
    for key in ("workloads", "methods", "archs"):  # each row of results.csv twice, and gcl trained twice
        seen = getattr(suite, key)
        twice = next((x for i, x in enumerate(seen) if x in seen[:i]), None)
        if twice is not None:
            raise EvaluationError(f"suite.{key}: {twice!r} is listed twice")
    data_dir = suite_data_dir(cfg, launch_dir)
    if suite.real:  # a misnamed real workload stops the run before its output directory exists
        for name in suite.workloads:
            if not _declared_real(data_dir / name):
                check_real_workload(data_dir / name, name, required=True)
    method_params = {k: dict(v or {}) for k, v in dict(cfg.method_params).items()}
    from gclsampler.validate import check_sampler_params

    for key in ("sweep_methods", "hist_methods"):  # a misspelt name made no ε-sweep or histogram, silently
        unknown = [m for m in getattr(suite, key) if m not in _registry()]
        if unknown:
            raise EvaluationError(f"suite.{key}: unknown method {unknown[0]!r}; available: {sorted(_registry())}")
    import inspect

    with_eps = sorted(m for m, c in _registry().items() if "epsilon" in inspect.signature(c.__init__).parameters)
    no_eps = [m for m in suite.sweep_methods if m not in with_eps]
    if no_eps:  # found when the sweep set its epsilon, after every model had been trained
        raise EvaluationError(f"suite.sweep_methods: {no_eps[0]!r} takes no epsilon to sweep; those that do: "
                              f"{', '.join(with_eps)}")
    stray = [m for m in method_params if m not in _registry()]
    if stray:  # `+method_params.stem_roots.epsilon=0.1` (the `+` the "not in struct" hint asks for) was ignored
        raise EvaluationError(f"method_params.{stray[0]}: unknown method; available: {sorted(_registry())}")
    # a misspelt method or parameter (or a bad value) fails before any work starts; so does one of a method
    # this suite does not run, whose parameters a later run with it would meet
    for m in dict.fromkeys([*suite.methods, *method_params]):
        check_sampler_params(make_sampler(m, method_params.get(m, {}), cfg.seed), f"method_params.{m}")
    if cfg.generate and not suite.real:  # a misspelt name is no workload to synthesize: say so before out_dir exists
        from gclsampler.synth.generate import workload_names

        synth = set(workload_names())
        unknown = [n for n in suite.workloads if n not in synth and not (data_dir / n / "profile.csv").exists()
                   and not _declared_real(data_dir / n)]
        if unknown:  # a misspelling, not a workload synth failed to make: skip_unavailable does not hide it
            raise EvaluationError(f"suite.workloads: {unknown[0]!r} is neither a synthetic workload "
                                  f"({', '.join(sorted(synth))}) nor a workload in {data_dir}")
        _check_synth_params(suite, data_dir, synth, cfg.seed)
    if not cfg.generate:  # nothing will make a missing workload: skipped (skip_unavailable), or an error
        missing = [n for n in suite.workloads
                   if not (data_dir / n / "profile.csv").exists() and not _declared_real(data_dir / n)]
        if missing and (not cfg.skip_unavailable or len(missing) == len(suite.workloads)):
            raise EvaluationError(f"{data_dir / missing[0]}: data_dir: workload {missing[0]!r} not found and "
                                  "generate=false" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))


def _synth_params(suite: SuiteConfig, name: str) -> dict:
    """The synth knobs the suite gives workload ``name``: ``suite.synth_params`` with its
    ``per_workload.<name>`` entries over them."""
    params = dict(suite.synth_params or {})
    per = params.pop("per_workload", {}) or {}
    params.update(per.get(name, {}) or {})
    return params


def _check_synth_params(suite: SuiteConfig, data_dir: Path, synth: set[str], seed: int) -> None:
    """Every synthetic workload of the suite takes ``suite.synth_params``' knobs, checked before any work.

    Why: a knob one workload lacks (``layers`` is the LLMs') was found when that workload's turn
    came, and ``skip_unavailable`` then dropped the workload from the tables with a line in
    report.md only: ``+suite.synth_params.layers=2`` on the full suite scored 3 of its 11.
    """
    from gclsampler.synth.generate import check_request, known_archs_text, synthesizes

    shared = set(suite.synth_params or {}) - {"per_workload"}
    if not synthesizes(suite.trace_arch):  # the synthesizer's refusal named suite.synth_params, not the key set
        name = next((n for n in suite.workloads if n in synth and not _declared_real(data_dir / n)), None)
        if name is not None:
            raise EvaluationError(f"suite.trace_arch: unknown arch {suite.trace_arch!r} for synthetic workload "
                                  f"{name!r}; {known_archs_text()}")
    for name in suite.workloads:
        if name not in synth or _declared_real(data_dir / name):
            continue
        try:
            check_request(name, _synth_params(suite, name) or None, suite.trace_arch, seed)
        except GclError as exc:
            knob = str(exc).split(":", 1)[0].removeprefix("synth.")
            hint = (f"; a knob only some workloads take goes under suite.synth_params.per_workload.<workload>.{knob}"
                    if knob in shared else "")
            raise EvaluationError(f"suite.synth_params: workload {name!r}: {exc}{hint}") from None


def _check_suite_archs(suite: SuiteConfig, data_dir: Path, on_disk: set[Path]) -> None:
    """Every arch in ``suite.archs`` has a ground truth for every workload, checked before any work.

    Why: scoring found a missing ``profiles/<arch>.csv`` only after the first workload had been
    synthesized and trained on. The synthesizer's archs (and their second runs) are written
    with the workload; any other (``accelsim-<config>``, a measured GPU) must be on disk. A
    real workload leaves an arch it was not measured on out, with a note, as the suite does.
    """
    from gclsampler.synth.arch import ARCHS
    from gclsampler.synth.generate import synthesizes
    from gclsampler.workload import declared_arch

    for arch in suite.archs:
        if synthesizes(arch):
            continue
        for name in suite.workloads:
            wdir = data_dir / name
            if wdir in on_disk and (_declared_real(wdir) or declared_arch(wdir) == arch
                                    or (wdir / "profiles" / f"{arch}.csv").is_file()):
                continue
            raise EvaluationError(
                f"{wdir / 'profiles' / f'{arch}.csv'}: suite.archs: no ground truth for arch {arch!r} in workload "
                f"{name!r}; the synthesizer writes {', '.join(sorted(ARCHS))} (and <arch>_rerun), any other "
                "arch's profile must be in the workload directory")


EARLIER_OUTPUTS = ("results.csv", "report.md", "unavailable.csv", "plans", "plots", "silhouette")
"""What a run writes into ``out_dir`` and a rerun replaces; ``train/`` stays (``embeddings=cached``)."""


def earlier_outputs(out: Path) -> set[str] | None:
    """The files (paths relative to ``out``) an earlier run into ``out`` recorded as its own in
    the marker, or None when its marker records none (a run of an older version)."""
    from gclsampler._safe_out import MARKER

    try:
        listed = json.loads((out / MARKER).read_text(encoding="utf-8")).get("outputs")
    except (OSError, ValueError, AttributeError):
        return None
    return set(map(str, listed)) if isinstance(listed, list) else None


def _looks_written_by_evaluate(f: Path, top: str) -> bool:
    """For a run whose marker lists nothing: whether ``f`` is a file of the kind an evaluate.py
    run writes there (a plan, a silhouette curve, its unavailable.csv). Plots are never taken
    for one: a user's figure is a .png too."""
    from gclsampler._safe_out import first_line

    if top == "plans":
        try:
            return str(json.loads(f.read_text(encoding="utf-8")).get("format", "")).startswith("gclsampler-plan/")
        except (OSError, ValueError, AttributeError):
            return False
    head = first_line(f) or ""
    return (top == "silhouette" and head == "k,score") or (top == "unavailable.csv" and head == "workload,method,reason")


def _remove_earlier_outputs(out: Path, written: set[Path], earlier: set[str] | None) -> None:
    """Once this run's results and report are written, delete what an earlier run into the
    same directory wrote and this one did not: files under ``EARLIER_OUTPUTS`` that the earlier
    run recorded (``earlier``; for an older run without a record, files of the kinds it writes)
    and that are not in ``written`` or, in ``plots/``, not shown by the new report.md. Then
    record this run's outputs in the marker for the next one.

    Why: a rerun (the docs' ``cp -r RUN NEW`` rescoring) left the earlier run's plans and plots
    of methods it no longer runs beside the new report, which names none of them, and an
    ``unavailable.csv`` it no longer has. Why only recorded files: a note or figure the user
    put into ``plots/`` or ``plans/`` was deleted too. Why at the end: a rerun that fails keeps
    the earlier results rather than leaving neither.
    """
    from gclsampler._atomic import write_text_atomic
    from gclsampler._safe_out import MARKER

    report = (out / "report.md").read_text(encoding="utf-8") if (out / "report.md").is_file() else ""
    keep = {p.resolve() for p in written} | {(out / n).resolve() for n in ("results.csv", "report.md")}
    ours: list[str] = []
    for name in EARLIER_OUTPUTS:
        top = out / name
        files = [top] if not top.is_dir() or top.is_symlink() else sorted(top.rglob("*"), reverse=True)
        for f in files:
            if f.is_dir() and not f.is_symlink():
                if not any(f.iterdir()):
                    f.rmdir()
                continue
            if not (f.exists() or f.is_symlink()):
                continue
            rel = f.relative_to(out).as_posix()
            shown = name == "plots" and f"plots/{f.relative_to(top).as_posix()}" in report
            if f.resolve() in keep or shown:
                ours.append(rel)
            elif rel in earlier if earlier is not None else _looks_written_by_evaluate(f, name):
                f.unlink()
        if top.is_dir() and not top.is_symlink() and not any(top.iterdir()):
            top.rmdir()
    write_text_atomic(out / MARKER, json.dumps({"command": "evaluate", "outputs": sorted(ours)}) + "\n")


def run_suite(cfg: EvaluateConfig, out_dir: str | Path, *, embed_fn: Callable[[Any], np.ndarray] | None = None,
              launch_dir: str | Path | None = None, config_text: str | None = None):
    """Fit every method on every workload, score on every arch; write results.csv, report.md, plots.

    ``embed_fn(workload) -> (N, d) array`` supplies GCL embeddings (stubbed in tests).
    Returns the results DataFrame. Each synthesized workload is held while it is trained on
    and scored (``_prepare_workload``): a ``train.py`` job beside this run that wants it
    synthesized again waits for that, rather than replacing its traces and profiles under it.
    """
    with contextlib.ExitStack() as hold:
        return _run_suite(cfg, out_dir, embed_fn, launch_dir, config_text, hold)


def _run_suite(cfg: EvaluateConfig, out_dir: str | Path, embed_fn: Callable[[Any], np.ndarray] | None,
               launch_dir: str | Path | None, config_text: str | None, hold: contextlib.ExitStack):
    import pandas as pd
    from tqdm import tqdm

    from gclsampler.workload import Workload

    t_start = time.perf_counter()
    check_suite_keys(cfg, launch_dir)
    from gclsampler._safe_out import claim_dir

    # evaluate.py claims it before Hydra's task starts; an API caller's directory is checked here
    check_out_dir_apart(Path(out_dir), cfg, launch_dir)
    out = claim_dir(out_dir, "evaluate", ignore=(".hydra", "evaluate.log"))
    earlier = earlier_outputs(out)  # what a rerun may delete: the earlier run's own files only
    written: set[Path] = set()  # what this run writes under EARLIER_OUTPUTS (the rest is an earlier run's)
    suite = cfg.suite
    data_dir = suite_data_dir(cfg, launch_dir)
    needs_emb = any(m in EMBEDDING_METHODS for m in suite.methods)
    # what is derived from a REAL workload's traces (graphs, photon's BBVs) is cached here, since
    # its own directory is committed data
    real_cache = (Path(launch_dir) / ".cache" / "graphs" if launch_dir is not None else out / "graph-cache").resolve()
    if needs_emb and embed_fn is None:
        embed_fn = default_embed_fn(cfg, out, real_cache)
    method_params = {k: dict(v or {}) for k, v in dict(cfg.method_params).items()}
    from gclsampler.validate import require_valid_workload

    checked: set[Path] = set()
    for name in suite.workloads:  # every workload already on disk is checked before any work starts
        if check_real_workload(data_dir / name, name, required=suite.real):
            checked.add(data_dir / name)
        elif (data_dir / name / "profile.csv").exists():
            require_valid_workload(data_dir / name, scored=True)
            checked.add(data_dir / name)
    _check_suite_archs(suite, data_dir, checked)
    _check_unique_names(suite, data_dir)
    rows: list[dict[str, Any]] = []
    histograms: list[dict[str, Any]] = []
    silhouettes: dict[str, Any] = {}
    silhouette_k: dict[str, int] = {}
    cluster_sections: list[tuple[str, str]] = []
    strata_plans: dict[str, Any] = {}  # workload -> its main gcl_stem plan
    hist_wl = suite.hist_workload or (suite.workloads[0] if suite.workloads else None)
    notes: list[str] = []
    unavailable: list[tuple[str, str, str]] = []  # (workload, method, why it could not run there)
    disable = not sys.stderr.isatty() or bool(os.environ.get("CI"))
    bar = tqdm(suite.workloads, desc="evaluate", unit="workload", disable=disable)
    skipped: list[str] = []
    for name in bar:
        bar.set_postfix_str(name)
        hold.close()  # the workload before: scored, and never held while waiting for the next one
        try:
            wdir = _prepare_workload(name, data_dir, suite, cfg.generate, cfg.seed, hold)
        except GclError as exc:
            if not cfg.skip_unavailable:
                raise
            skipped.append(f"{name} ({exc})")
            stderr_line(f"evaluate: warning: skipped workload {name}: {one_line(str(exc))} (named in report.md; "
                        "skip_unavailable=false makes it an error)")
            continue
        # synthesized just now: checked here, and its profile.csv parsed once
        profile = require_valid_workload(wdir, scored=True) if wdir not in checked else None
        workload = Workload.load(wdir, profile=profile)
        real = workload.data_kind == "real"
        if real:
            workload.cache_dir = real_cache
        alt = wdir / "profiles" / f"{suite.trace_arch}.csv"
        if real and workload.arch not in (None, suite.trace_arch) and not alt.exists():
            # measured on one GPU: its plans are fitted on that measured profile (rows say plan_arch)
            notes.append(f"Plans for REAL workload {name} are fitted on its measured {workload.arch} profile "
                         f"(there is no {suite.trace_arch} profile, suite.trace_arch).")
        else:
            if workload.arch not in (None, suite.trace_arch) and not alt.exists():
                raise EvaluationError(f"{alt}: suite.trace_arch: workload {name!r} has no {suite.trace_arch!r} profile")
            fit_on_arch(workload, suite.trace_arch)
        # a REAL workload can be a profile alone (its tracing did not finish): the trace-graph
        # methods are then listed as not run; anywhere else a missing trace stays an error
        if needs_emb and not (real and _no_traces(workload) is not None):
            workload.embeddings = embed_fn(workload)
            if any(m in PAPER_EMBEDDING_METHODS for m in suite.methods):
                workload.paper_embeddings = embed_fn(workload, "paper")
        not_run: list[tuple[str, str]] = []
        runs = fit_methods(workload, list(suite.methods), method_params, n_seeds=suite.n_seeds,
                           epsilons=list(suite.epsilons), sweep_methods=suite.sweep_methods, seed0=cfg.seed,
                           unavailable=not_run)
        unavailable += [(name, m, why) for m, why in not_run]
        archs = [a for a in suite.archs] or [workload.arch]
        if workload.arch not in archs:
            archs = [workload.arch, *archs]
        if real:  # only what was measured: another arch's column would be empty or made up
            unmeasured = [a for a in archs if a != workload.arch and not (wdir / "profiles" / f"{a}.csv").exists()]
            archs = [a for a in archs if a not in unmeasured]
            if unmeasured:
                notes.append(f"No {', '.join(unmeasured)} rows for REAL workload {name}: it was measured on one GPU "
                             f"({workload.gpu or workload.arch}) only, so there is no ground truth to score its "
                             "plans on another arch.")
        rows += evaluate_workload(workload, runs, archs)
        if cfg.save_plans:
            for r in runs:
                tag = r.method + (f"_eps{r.epsilon:g}" if r.sweep else "") + (f"_s{r.seed}" if r.stochastic else "")
                written.add(r.plan.save(out / "plans" / name / f"{tag}.json"))
        if name == hist_wl:
            for m in suite.hist_methods:
                r = next((r for r in runs if r.method == m and not r.sweep and r.labels is not None), None)
                if r is not None:
                    histograms.append({"workload": name, "method": m,
                                       "times_ns": workload.profile["time_ns"].to_numpy(),
                                       "labels": r.labels, "representatives": r.plan.invocations})
                    from gclsampler.cluster_table import cluster_table

                    cluster_sections.append((f"Clusters of the {m} plan for {name} ({workload.arch})",
                                             cluster_table(r.plan, workload.profile["time_ns"].to_numpy(), r.labels)))
        stem_run = next((r for r in runs if r.method == "gcl_stem" and not r.sweep), None)
        if stem_run is not None:
            strata_plans[name] = stem_run.plan
        gcl_run = next((r for r in runs if r.method == "gcl" and not r.sweep), None)
        if gcl_run is not None:
            from gclsampler.cluster_table import chosen_k

            silhouette_k[name] = chosen_k(gcl_run.plan, gcl_run.labels)  # the plan's k, not the curve's max
        for cand in (wdir / "silhouette.csv", out / "train" / name / "silhouette.csv"):
            if cand.exists():
                silhouettes[name] = cand
                break
        else:
            learned = next((r.silhouette for r in runs if r.method == "gcl" and r.silhouette), None)
            if learned:
                curve = pd.DataFrame({"k": sorted(learned), "score": [learned[k] for k in sorted(learned)]})
                silhouettes[name] = curve
                write_text_atomic(out / "silhouette" / f"{name}.csv", curve.to_csv(index=False, lineterminator="\n"))
                written.add(out / "silhouette" / f"{name}.csv")
    results = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    if results.empty:
        if skipped:
            raise EvaluationError(f"suite.workloads: no workload could be prepared: {'; '.join(skipped)}")
        raise EvaluationError(f"suite.methods: no method produced a plan ({', '.join(suite.methods) or 'none given'})")
    write_results_csv(results, out / "results.csv")
    from gclsampler.report import strata_table, write_report

    if unavailable:  # beside results.csv: the cells the table shows as n/a, and why
        written.add(out / "unavailable.csv")
        write_text_atomic(out / "unavailable.csv", pd.DataFrame(unavailable, columns=["workload", "method", "reason"])
                          .to_csv(index=False, lineterminator="\n"))
    notes = [f"Skipped workload {s}" for s in skipped] + notes
    stem_like = [m for m in ("stem_root", "gcl_stem") if m in suite.methods]
    if stem_like:
        notes.append("Main rows of " + ", ".join(f"{m} use ε = {method_params.get(m, {}).get('epsilon')}"
                                                for m in stem_like)
                     + " (GCL-Sampler compares at ε = 0.25); the sweep covers "
                     + ", ".join(f"{e:g}" for e in suite.epsilons) + ".")
    strata = strata_table(strata_plans)
    if strata:
        cluster_sections.append(("Strata of gcl_stem (main ε, first seed)",
                                 "`strata: auto` runs STEM+ROOT from each candidate and keeps the least expected "
                                 "simulated time (bold; profile time units). Where `kernel_name` wins, the plan is "
                                 "stem_root's.\n\n" + strata))
    write_report(results, out, title=f"gclsampler evaluation: suite `{suite.name}`", started_at=t_start,
                 plan_arch=suite.trace_arch, histograms=histograms, silhouette=silhouettes,
                 config_text=config_text, plots=cfg.plots, notes=notes, silhouette_k=silhouette_k,
                 sections=cluster_sections, unavailable=unavailable)
    _remove_earlier_outputs(out, written, earlier)
    return results
