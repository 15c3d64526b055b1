"""The GCL samplers and the registry of every sampling method.

* ``GclSampler`` ("gcl"): the project's best GCL configuration: GCL-Sampler 3.4's
  silhouette k-means on the RGCN embeddings (which end in the size vector), with the
  documented deviations (work split, share cut; docs/plans.md) and the member nearest its
  cluster's mean SM-0 work simulated (``work_mean``), weighted by the cluster's size.
  One simulated invocation per cluster, no error bound.
* ``GclPaperSampler`` ("gcl_paper"): GCL-Sampler 3.4 as published, on the paper encoder's
  embeddings (``model=paper``): silhouette k-means on them alone, the first invocation of
  each cluster simulated, none of the deviations whatever the ``cluster`` group says.
* ``GclStemSampler`` ("gcl_stem"): the design's post-stage. The GCL clusters group
  invocations by *behaviour* (what the code does); inside each cluster STEM (and
  ROOT on the execution times, optionally) sizes a random sample from the
  cluster's time distribution, ``stem_root(times, groups=gcl_labels)``, or from the
  kernel names where those give a cheaper plan at the same bound (``strata``). The plan
  then carries a stated error bound per cluster at a chosen epsilon: one knob
  trades speedup for accuracy, where plain GCL has none.

``SAMPLERS`` maps method names to classes so that comparing methods is a loop:
``make_sampler(name, **params).fit(workload)``. STEM+ROOT and the baselines are
registered when their modules import; a missing one leaves the others usable.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Mapping

import numpy as np

from gclsampler.cluster import (
    ClusterConfig,
    ClusterResult,
    cluster_embeddings,
    cut_by_time,
    representative_work,
    work_column,
)
from gclsampler.errors import GclError
from gclsampler.plan import ClusterInfo, Sample, Sampler, SamplingPlan, check_seed, finite_column, plan_from_labels


class SamplerError(GclError):
    """A sampler that cannot run on this workload or with these parameters."""


@dataclass
class SamplerConfig:
    """Hydra structured config of the ``sampler`` group (``conf/sampler/<name>.yaml``).

    ``params`` are the sampler's constructor arguments (``random_state`` comes from
    the run's seed). For ``gcl`` and ``gcl_stem`` the clustering settings come from
    the ``cluster`` group unless ``params.cluster`` overrides them.
    """

    name: str = "gcl"
    params: Dict[str, Any] = field(default_factory=dict)


def _embeddings_of(workload, method: str, attr: str = "embeddings") -> np.ndarray:
    """``workload.<attr>``, checked against the invocation count; never another attribute.

    Why no fallback from ``paper_embeddings`` to ``embeddings``: the latter are the project's
    encoder's (instruction statistics, size vector), and ``gcl_paper`` clustering them would be
    a plan of neither the paper's method nor the project's, under the paper's name.
    """
    emb = getattr(workload, attr, None)
    where = getattr(workload, "name", "workload")
    if emb is None and attr == "paper_embeddings":
        raise SamplerError(f"{where}: paper_embeddings: none loaded; {method} clusters the embeddings of the "
                           "paper's encoder (python train.py model=paper), not the project's: pass "
                           "Workload(..., paper_embeddings=...)")
    if emb is None:
        raise SamplerError(f"{where}: embeddings: none loaded; {method} clusters RGCN embeddings "
                           "(train first, or pass Workload(..., embeddings=...))")
    emb = np.asarray(emb)
    n = int(workload.n_invocations)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise SamplerError(f"{where}: embeddings: shape {emb.shape}, expected ({n}, dims) for {n} invocations")
    return emb


def _parse_dims(col) -> np.ndarray:
    """``"(x,y,z)"`` strings of profile.csv as an (N, 3) int array."""
    return np.array([[int(v) for v in str(d).strip("()").split(",")] for d in col], dtype=np.float64)


def launch_features(workload) -> np.ndarray | None:
    """Per-invocation launch shape: log2 of CTAs, threads per CTA, shared memory, registers.

    Why: graphs are built from capped traces (instructions per warp, warps per graph) and
    read out by mean pooling, so two launches of one kernel that differ only in grid size
    or loop trip count can get the same graph and embedding, while their times differ by
    orders of magnitude (a decode GEMV for q_proj vs lm_head). The launch shape is in
    every trace header, costs nothing to read, and tells those apart. Read from the trace
    headers when the workload has traces, else from profile.csv's grid/block columns;
    None when it has neither (an in-memory table without launch columns).
    """
    root = getattr(workload, "root", None)
    if root is not None and (Path(root) / "kernelslist.g").exists():
        from gclsampler.trace import list_invocations

        heads = [i.header for i in list_invocations(root)]
        f = np.array([[h.n_ctas, h.threads_per_cta, h.shmem, h.nregs] for h in heads], dtype=np.float64)
    elif {"grid", "block"} <= set(workload.profile.columns):
        prof = workload.profile
        grid, block = _parse_dims(prof["grid"]), _parse_dims(prof["block"])
        extra = [prof[c].to_numpy(dtype=np.float64) if c in prof.columns else np.zeros(len(prof))
                 for c in ("shmem", "nregs")]
        f = np.column_stack([grid.prod(1), block.prod(1), *extra])
    else:
        return None
    if f.shape[0] != workload.n_invocations:
        raise SamplerError(f"{getattr(workload, 'name', 'workload')}: traces list {f.shape[0]} invocations, "
                           f"profile.csv {workload.n_invocations}")
    return np.log2(np.nan_to_num(f, nan=0.0) + 1.0)


def clustering_input(emb: np.ndarray, launch: np.ndarray | None, weight: float) -> np.ndarray:
    """Embeddings with the standardised launch block appended.

    The block is scaled so that its total variance is ``weight**2`` times the embeddings'
    total variance: ``weight`` then means the same thing whatever the embedding scale is.
    """
    if launch is None or weight <= 0:
        return emb
    sd = launch.std(axis=0)
    varies = sd > 1e-9  # a constant column's std is rounding noise, not signal
    z = np.where(varies, (launch - launch.mean(axis=0)) / np.where(varies, sd, 1.0), 0.0)
    active = max(int(varies.sum()), 1)
    scale = weight * float(np.sqrt(np.asarray(emb, dtype=np.float64).var(axis=0).sum())) / np.sqrt(active)
    return np.hstack([emb, (scale * z).astype(emb.dtype, copy=False)])


_MEMO: dict[tuple, ClusterResult] = {}
_MEMO_SIZE = 4


def _cached_clustering(emb: np.ndarray, cfg: ClusterConfig, seed: int) -> ClusterResult:
    """Cluster once per (embeddings, config, seed) in this process.

    Evaluation fits gcl_stem for every epsilon of a sweep on the same embeddings; the
    clustering is the expensive, epsilon-independent part. The key is a content hash,
    so a changed input can never hit a stale entry; the memo holds a few results.
    """
    emb = np.ascontiguousarray(emb)
    digest = hashlib.sha256(emb.reshape(-1).view(np.uint8)).hexdigest()  # no bytes copy of the array
    key = (digest, str(emb.dtype), emb.shape, repr(asdict(cfg)), 0 if seed is None else int(seed))  # None: 0, as cluster
    hit = _MEMO.get(key)
    if hit is None:
        hit = cluster_embeddings(emb, cfg, seed)
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = hit
    return copy.deepcopy(hit)


def _work_column_on_input(cfg: ClusterConfig, emb_cols: int, input_cols: int) -> ClusterConfig:
    """``cfg`` with ``split_column`` pointing at the same embedding column of the clustering
    input. Why: ``split_column`` counts from the embeddings' end (the size vector is their
    tail), and the launch block appended after them would otherwise shift a negative index
    onto a launch feature, so the work split and ``work_mean`` would read the wrong column."""
    extra = input_cols - emb_cols
    if extra <= 0 or (cfg.split_tolerance <= 0 and cfg.representative != "work_mean"):
        return cfg
    work_column(np.zeros((1, emb_cols)), cfg)  # refuses a column outside the embeddings, by key
    return replace(cfg, split_column=cfg.split_column - extra) if cfg.split_column < 0 else cfg


def _cluster_config_dict(cfg: ClusterConfig) -> dict[str, Any]:
    return asdict(cfg)


def _silhouette_list(curve: Mapping[int, float]) -> list[list[float]]:
    """[[k, score], ...]: JSON keeps int keys only as strings, a list keeps them numbers."""
    return [[int(k), float(s)] for k, s in sorted(curve.items())]


class GclSampler(Sampler):
    """GCL-Sampler as this project runs it: silhouette k-means, work split, share cut, mean-work member.

    With the default ``cluster`` group: k-means with silhouette-chosen K on the embeddings
    (which end in the trace's size vector), clusters cut where their work spans more than
    ``split_tolerance``, then where their profiled times spread by more than
    ``time_split_share`` of the workload's time (work an SM-0 trace does not see), and the
    member whose SM-0 work is nearest its cluster's mean simulated (``work_mean``).
    ``gcl_paper`` is the paper's version.

    Parameters: ``cluster`` (``ClusterConfig``, a mapping of its fields, or None for
    its defaults) and ``random_state`` (k-means starts, silhouette sample).
    Learned: ``result_`` (``ClusterResult``), ``labels_``, ``k_``, ``silhouette_``
    ({K: score}), ``representatives_``, ``plan_``.
    """

    name = "gcl"
    stochastic = False  # seeds only pick k-means starts; the multi-start sweep makes the plan stable
    embedding_attr = "embeddings"  # the workload attribute holding this method's embeddings
    cluster_overrides: dict[str, Any] = {}  # cluster settings this method fixes whatever the config says
    simulates_representatives = True  # the plan simulates cluster.representative's member of each cluster

    def __init__(self, cluster: ClusterConfig | Mapping[str, Any] | None = None, random_state: int = 0):
        self.cluster = cluster
        self.random_state = random_state

    def _cluster_seed(self) -> int:
        return self.random_state

    def effective_cluster_config(self) -> ClusterConfig:
        """The cluster settings this sampler fits with: ``cluster`` under ``cluster_overrides``
        (checked before training by ``pipeline``, which must see what ``fit`` will use)."""
        cfg = ClusterConfig.from_any(self.cluster, "cluster")
        if not self.cluster_overrides:
            return cfg
        return ClusterConfig(**{**asdict(cfg), **self.cluster_overrides}).validate("cluster")

    def size_vector_uses(self) -> list[str]:
        """The settings of this sampler's plan that read the size vector's work column
        (``cluster.split_column``): empty when embeddings without one (the paper's encoder's)
        would change nothing in the plan."""
        cfg = self.effective_cluster_config()
        return [k for k, on in (("cluster.split_tolerance", cfg.split_tolerance > 0),
                                ("cluster.representative=work_mean",
                                 cfg.representative == "work_mean" and self.simulates_representatives)) if on]

    def _cluster(self, workload) -> ClusterResult:
        cfg = self.effective_cluster_config()
        self.cluster_config_ = cfg  # what the plan records
        if not self.simulates_representatives and cfg.representative == "work_mean":
            # its members are never simulated: embeddings without the size vector must not be
            # refused over a work column nothing reads (labels do not depend on the rule)
            cfg = replace(cfg, representative="first")
        emb = _embeddings_of(workload, self.name, self.embedding_attr)
        self.embedding_dims_ = int(np.shape(emb)[1])
        launch = launch_features(workload) if cfg.launch_weight > 0 else None
        x = clustering_input(emb, launch, cfg.launch_weight)
        on_x = _work_column_on_input(cfg, np.shape(emb)[1], np.shape(x)[1])
        res = _cached_clustering(x, on_x, self._cluster_seed())
        if cfg.time_split_tolerance > 0 or cfg.time_split_share > 0:
            times = workload.profile["time_ns"].to_numpy(dtype=np.float64)
            try:
                res = cut_by_time(res, x, times, cfg.time_split_tolerance, cfg.representative, self._cluster_seed(),
                                  share=cfg.time_split_share, work=representative_work(x, on_x))
            except ValueError as e:  # the profile, not the config, is at fault: say which file
                where = f"{workload.root / 'profile.csv'}" if workload.root is not None else f"{workload.name} profile"
                keys = [k for k in ("time_split_tolerance", "time_split_share") if getattr(cfg, k) > 0]
                if times.shape == res.labels.shape and (np.isfinite(times) & (times >= 0)).all():
                    keys = ["time_split_tolerance"]  # a zero time: the share cut takes it, only the span cut needs > 0
                raise SamplerError(f"{where}: {e} ({' and '.join(f'cluster.{k}=0' for k in keys)} "
                                   f"turn{'s' if len(keys) == 1 else ''} the cut off)") from None
        self.result_ = res
        self.labels_ = res.labels
        self.k_ = res.k
        self.silhouette_ = dict(res.silhouette)
        self.representatives_ = res.representatives
        return res

    def _config(self) -> dict[str, Any]:
        res = self.result_
        return {
            "cluster": _cluster_config_dict(self.cluster_config_),
            "random_state": self.random_state,
            "cluster_random_state": self._cluster_seed(),
            "k": int(res.k),
            "k_silhouette": int(res.k_silhouette),
            "silhouette": _silhouette_list(res.silhouette),
            "silhouette_sampled": bool(res.sampled),
            "silhouette_n_scored": int(res.n_scored),
        }

    def fit(self, workload) -> SamplingPlan:
        res = self._cluster(workload)
        names = workload.profile["kernel_name"].to_numpy()
        self.plan_ = plan_from_labels(workload.name, self.name, res.labels, res.representatives, names,
                                      self._config(), bool(getattr(workload, "synthetic", False)))
        return self.plan_.validate(f"{workload.name}: {self.name} plan")


STRATA = ("auto", "gcl")  # gcl_stem's starting strata (GclStemSampler.strata)


class GclStemSampler(GclSampler):
    """GCL clusters (or kernel names, where cheaper), each sampled to an error bound by STEM (+ ROOT).

    Parameters: ``cluster`` and ``random_state`` as ``GclSampler``; ``epsilon``, ``z``,
    ``min_samples``, ``root``, ``min_group``, ``scope`` as ``gclsampler.stem.stem_root``;
    ``time_column`` the profile column STEM reads; ``cluster_random_state`` seeds the
    k-means (default: ``random_state``; fix it to vary only STEM's draws over seeds).
    ``strata`` (``STRATA``) what ROOT starts from: ``gcl`` the GCL clusters; ``auto``
    (default) whichever of the GCL clusters, the kernel names, and the kernel names cut by
    GCL cluster gives the plan with the least expected simulated time at the same bound.
    Why auto: at a fixed epsilon every stratification meets the same bound, so STEM's own
    objective (simulated time) ranks them; GCL strata win where they merge equivalent
    kernels of different names (nw) or separate behaviours one name hides (qwen1_5), and
    where they do not the plan is STEM+ROOT's, never costlier (docs/plans.md). Plan
    clusters are the chosen strata; each carries the predicted relative error of its own
    total time at confidence ``z``. The workload total's bound is ``config.error_bound`` (at most epsilon); with
    ``scope="group"`` every cluster's bound is at most epsilon too (default ``global``:
    only the total; the STEM paper bounds every group, docs/stem.md).
    Learned: those of ``GclSampler`` plus ``stem_`` (``StemResult``), ``error_bound_``,
    ``cluster_error_bounds_`` (K,), ``strata_`` (the chosen strata), ``strata_costs_``
    ({strata: expected simulated time} of every candidate tried), ``gcl_labels_`` (the GCL
    clusters; ``labels_`` and ``k_`` are the chosen strata, the plan's clusters).
    """

    name = "gcl_stem"
    stochastic = True  # STEM draws invocations at random (without replacement) inside each leaf

    def __init__(self, cluster: ClusterConfig | Mapping[str, Any] | None = None, epsilon: float = 0.05,
                 z: float = 1.96, min_samples: int = 1, root: bool = True, min_group: int = 2,
                 scope: str = "global", time_column: str = "time_ns", cluster_random_state: int | None = None,
                 strata: str = "auto", random_state: int = 0):
        super().__init__(cluster, random_state)
        self.strata = strata
        self.cluster_random_state = cluster_random_state
        self.epsilon = epsilon
        self.z = z
        self.min_samples = min_samples
        self.root = root
        self.min_group = min_group
        self.scope = scope
        self.time_column = time_column

    def _cluster_seed(self) -> int:
        return self.random_state if self.cluster_random_state is None else self.cluster_random_state

    # ROOT already cuts each cluster by execution time where its variance costs samples; the
    # work split (and the time cut) would only add strata that each pay for a draw (suite: 1.95 % at 49x with it,
    # 2.73 % at 105x without, stem_root 3.56 % at 115x; docs/plans.md)
    cluster_overrides = {"split_tolerance": 0.0, "time_split_tolerance": 0.0, "time_split_share": 0.0}
    simulates_representatives = False  # STEM draws the members; cluster.representative is not used

    def fit(self, workload) -> SamplingPlan:
        from gclsampler.stem import _group_codes, _profile_where, stem_root

        prof = workload.profile
        if self.time_column not in prof.columns:
            raise SamplerError(f"{workload.name}: profile: no column {self.time_column!r} (sampler.params.time_column)")
        if self.strata not in STRATA:
            raise SamplerError(f"{workload.name}: {self.name}.strata: must be one of {', '.join(STRATA)}, got {self.strata!r}")
        if self.cluster_random_state is not None:
            check_seed(self.cluster_random_state, f"{self.name}.cluster_random_state")
        times = finite_column(prof, self.time_column, _profile_where(workload), SamplerError,
                              f"{self.name} needs a time in every row (time_column)")
        res = self._cluster(workload)
        names = prof["kernel_name"].to_numpy()
        candidates = {"gcl": res.labels}
        if self.strata == "auto":  # codes numbered by first invocation, as stem_root numbers its groups
            by_name = _group_codes(names, names.size)[0]
            candidates["kernel_name_gcl"] = _group_codes(by_name * res.k + res.labels, names.size)[0]
            if self.scope != "group":
                # scope group bounds each stratum's total; only strata inside the GCL clusters
                # bound every cluster's total too (Theorem 3.1), whichever is cheapest. Kernel
                # names would silently bound something else than the user asked for
                candidates["kernel_name"] = by_name
        best = None
        costs: dict[str, float] = {}
        for label, groups in candidates.items():  # dict order breaks ties: gcl first
            trial = stem_root(times, groups, epsilon=self.epsilon, z=self.z, min_samples=self.min_samples,
                              root=self.root, min_group=self.min_group, random_state=self.random_state,
                              scope=self.scope)
            costs[label] = trial.expected_sampled_time
            if best is None or costs[label] < costs[best[0]]:
                best = (label, groups, trial)
        self.strata_, strata, stem = best
        self.strata_costs_ = costs
        k = int(strata.max()) + 1
        self.gcl_labels_ = res.labels
        self.labels_, self.k_ = strata, k  # plan clusters (and clusters.csv) are the chosen strata
        self.stem_ = stem
        self.error_bound_ = float(stem.error_bound)
        bounds = _group_error_bounds(stem, k)
        self.cluster_error_bounds_ = bounds

        group_of_sample = stem.leaf_group[stem.leaf[stem.invocations]].astype(np.int64)
        samples = [Sample(int(i), str(names[i]), int(c), float(w))
                   for i, c, w in zip(stem.invocations.tolist(), group_of_sample.tolist(), stem.weights.tolist())]
        clusters = [ClusterInfo(c, int(s), float(bounds[c])) for c, s in enumerate(np.bincount(strata, minlength=k).tolist())]
        leaves_per_cluster = np.bincount(stem.leaf_group.astype(np.int64), minlength=k)
        draws_per_cluster = np.bincount(stem.leaf_group.astype(np.int64), weights=stem.sample_sizes, minlength=k)
        config = {
            **self._config(),
            "strata": self.strata, "strata_chosen": self.strata_, "n_strata": k,
            "strata_expected_time": {c: float(v) for c, v in costs.items()},
            "epsilon": float(self.epsilon), "z": float(self.z), "min_samples": int(self.min_samples),
            "root": bool(self.root), "min_group": int(self.min_group), "scope": str(self.scope),
            "time_column": self.time_column,
            "error_bound": float(stem.error_bound),
            "n_leaves": int(stem.leaf_sizes.size),
            "leaves_per_cluster": leaves_per_cluster.astype(int).tolist(),
            "draws_per_cluster": draws_per_cluster.astype(int).tolist(),
        }
        self.plan_ = SamplingPlan(workload.name, self.name, int(res.labels.size), samples, clusters, config,
                                  bool(getattr(workload, "synthetic", False)))
        return self.plan_.validate(f"{workload.name}: {self.name} plan")


def _group_error_bounds(stem, k: int) -> np.ndarray:
    """Predicted relative error of each group's total (stratified over its ROOT leaves).

    Leaf i contributes the variance of its estimated total, finite-population corrected
    (N_i^2 S_i^2 (1/m_i - 1/N_i)), which is (e_i N_i mu_i / z)^2 with e_i its own bound; so a
    group's bound is sqrt(sum (e_i N_i mu_i)^2) / sum N_i mu_i. Each group's totals are
    divided by a power of two of its own (exact, and the bound is a ratio), so the squares
    stay finite for huge times and do not vanish for a group far below the others.
    """
    from gclsampler.stem import time_scales

    g = stem.leaf_group.astype(np.int64)
    total = stem.leaf_sizes * stem.leaf_mean
    top = np.zeros(k)
    np.maximum.at(top, g, total)
    total = total / time_scales(top)[g]
    spread = (stem.leaf_error_bound * total) ** 2
    num = np.sqrt(np.bincount(g, weights=spread, minlength=k))
    den = np.bincount(g, weights=total, minlength=k)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


# ---------------------------------------------------------------------------------------
# registry

SAMPLERS: dict[str, type[Sampler]] = {}


def register_sampler(cls: type[Sampler]) -> type[Sampler]:
    """Add a ``Sampler`` subclass under its ``name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Sampler)):
        raise TypeError(f"{cls!r} is not a Sampler subclass")
    SAMPLERS[cls.name] = cls
    return cls


class GclPaperSampler(GclSampler):
    """GCL-Sampler exactly as the paper states it (section 3.4): silhouette-chosen k-means on
    the RGCN embeddings alone, the first invocation of each cluster simulated.

    Whatever ``cluster`` says, every deviation of the project's is off: no launch shape
    appended (``launch_weight`` 0), no L2 normalisation, no work split, no time cuts, and the
    representative is the first member. It clusters ``workload.paper_embeddings`` only, those
    of a model trained with ``model=paper`` (no instruction statistics, no size vector in the
    readout); ``train.py``, ``gclsampler sample`` and ``evaluate.py`` refuse or never load the
    project's encoder's embeddings for it. This row shows what the paper's method does on a
    workload and what the project's deviations (``gcl``) buy over it.
    """

    name = "gcl_paper"
    embedding_attr = "paper_embeddings"
    cluster_overrides = {"launch_weight": 0.0, "representative": "first", "normalize": False,
                         "split_tolerance": 0.0, "time_split_tolerance": 0.0, "time_split_share": 0.0}

    def _config(self) -> dict[str, Any]:
        """``GclSampler``'s record plus ``embedding_dims``, the columns clustered. Why: a reader of
        plan.json can tell the encoder from it (``model=paper``: ``model.out_dim``, 256 by default;
        the project's encoder appends the 8-column size vector), and it is the same number
        whichever entry point loaded the file, so ``gclsampler sample`` still gives the
        pipeline's plan.json byte for byte."""
        return {**super()._config(), "embedding_dims": self.embedding_dims_}


register_sampler(GclSampler)
register_sampler(GclStemSampler)
register_sampler(GclPaperSampler)

# module -> attribute holding {name: class}, or a class; missing modules are skipped
_OPTIONAL = (("gclsampler.stem", "StemRootSampler"), ("gclsampler.baselines", "BASELINES"),
             ("gclsampler.photon", "PhotonSampler"))


def _load_optional() -> None:
    for module, attr in _OPTIONAL:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        found = getattr(mod, attr, None)
        if isinstance(found, Mapping):
            for cls in found.values():
                register_sampler(cls)
        elif found is not None:
            register_sampler(found)


_load_optional()


def unknown_param(cls: type, params: Mapping[str, Any], where: str) -> str | None:
    """Why ``cls(**params)`` would fail on a parameter name, or None: ``f"{where}{key}: photon
    has no parameter 'thresh'; it takes: threshold, match_launch"`` (``where`` is the config
    path or flag the parameters came from, ``"--set "`` or ``"method_params.photon."``).

    Why: the constructor's own TypeError reads "__init__() got an unexpected keyword
    argument", which names neither the method nor what it does take. ``random_state`` is
    accepted but not listed (every method takes it, from the run's seed).
    """
    import inspect

    sig = inspect.signature(cls.__init__)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    names = list(sig.parameters)[1:]
    for key in params:
        if key not in names:
            listed = [n for n in names if n != "random_state"]
            return (f"{where}{key}: {getattr(cls, 'name', cls.__name__)} has no parameter {key!r}; "
                    f"it takes: {', '.join(listed) or 'none'}")
    return None


def make_sampler(name: str, **params: Any) -> Sampler:
    """Instantiate a registered sampler; unknown names and parameters name the config key."""
    cls = SAMPLERS.get(name)
    if cls is None:
        raise SamplerError(f"sampler.name: unknown sampler {name!r} (known: {', '.join(sorted(SAMPLERS))})")
    problem = unknown_param(cls, params, "sampler.params.")
    if problem:
        raise SamplerError(problem)
    try:
        return cls(**params)
    except TypeError as exc:
        raise SamplerError(f"sampler.params: {name}: {exc}") from None


def sampler_from_config(cfg: SamplerConfig | Mapping[str, Any], cluster: ClusterConfig | Mapping[str, Any] | None = None,
                        random_state: int = 0) -> Sampler:
    """Build the sampler of a composed config: ``sampler`` group + the ``cluster`` group for GCL."""
    name = cfg.name if isinstance(cfg, SamplerConfig) else cfg["name"]
    raw = cfg.params if isinstance(cfg, SamplerConfig) else cfg.get("params", {})
    params = dict(raw.items()) if raw is not None else {}
    params.setdefault("random_state", random_state)
    cls = SAMPLERS.get(name)
    if cls is not None and issubclass(cls, GclSampler) and cluster is not None:
        params.setdefault("cluster", cluster)
    return make_sampler(name, **params)


def run_plan_stage(workload, sampler_cfg: SamplerConfig | Mapping[str, Any] | None,
                   cluster_cfg: ClusterConfig | Mapping[str, Any] | None, out_dir, random_state: int = 0) -> dict:
    """The pipeline's post-embedding step: fit the configured sampler, write its files.

    Writes ``plan.json`` and, for the GCL samplers, ``clusters.csv`` and ``silhouette.csv``
    (from the very clustering the plan was built on). Returns a JSON-able summary for the
    run record (method, K, samples, error bound, expected speedup on the profile).
    """
    from pathlib import Path

    from gclsampler.cluster import write_clusters_csv, write_silhouette_csv

    out_dir = Path(out_dir)
    sampler = sampler_from_config(sampler_cfg if sampler_cfg is not None else SamplerConfig(), cluster_cfg,
                                  random_state)
    plan = sampler.fit(workload)
    plan.save(out_dir / "plan.json")
    summary: dict[str, Any] = {"method": plan.method, "n_invocations": plan.n_invocations,
                               "n_samples": len(plan.samples), "n_clusters": len(plan.clusters),
                               "synthetic": plan.synthetic}
    if isinstance(sampler, GclSampler):
        names = workload.profile["kernel_name"].to_numpy()
        write_clusters_csv(out_dir / "clusters.csv", sampler.labels_, names)
        write_silhouette_csv(out_dir / "silhouette.csv", sampler.silhouette_)
        summary["k"] = int(sampler.k_)
    if "error_bound" in plan.config:
        summary["error_bound"] = float(plan.config["error_bound"])
    if "time_ns" in workload.profile.columns:
        speedup = plan.speedup(workload.profile["time_ns"].to_numpy(dtype=np.float64))
        summary["expected_speedup"] = speedup if np.isfinite(speedup) else None  # sampled time 0
    return summary
