"""Silhouette k-means over kernel embeddings (GCL-Sampler, section 3.4).

The paper feeds the 256-d graph embeddings to k-means, picks K by the silhouette
coefficient (favouring the smaller K when scores are comparable, because every
extra cluster is one more invocation to simulate) and takes the first invocation
of each cluster as its representative; the cluster size is its weight.

Why the code is shaped the way it is:

* Identical kernels give identical graphs and hence identical embeddings, so the
  work is done on the *distinct* embeddings with their multiplicities as weights.
  Weighted k-means and the weighted silhouette below are exactly k-means and the
  silhouette of the full invocation set, only cheaper. What touches every launch
  (finding the distinct rows by hash, the medoid) is one chunked pass over the
  embeddings as they come, so a million launches cost seconds (``distinct_rows``).
* Exact silhouette is quadratic (DESIGN.md: ~640 s on 50k points). Above
  ``sample_size`` invocations the sweep runs on a seeded uniform sample of
  invocations (~6 s, within ~0.005 of exact); the chosen labelling is then
  refined with Lloyd iterations on every distinct embedding.
* Silhouette curves are flat near the best K, so a single k-means start per K
  makes the choice flip between seeds: each K gets ``n_init`` starts (the lowest
  inertia one is scored) and the top ``refine_top`` K are re-scored with
  ``refine_n_init`` more starts, each scored by silhouette; every K below the one
  taken, up to ``k_step``, gets those starts too (the lowest inertia one is scored), before
  the smallest K within ``tolerance`` of the best score is taken. The sweep's k-means
  runs on the scored distinct embeddings, or on ``fit_size`` sampled invocations
  when there are more of them than that; the returned labelling is
  always Lloyd iterated on every distinct embedding and its score replaces the
  sweep's.
* k-means is implemented here (k-means++ seeding + Lloyd, vectorised numpy) so
  that every seed is derived from ``(random_state, K, start)`` and the result is
  byte-identical run to run, independent of which other K were swept; BLAS runs on
  one thread here, so the core count does not move a rounding either.
* The paper sets no upper K, so the sweep has none of its own; it runs in blocks of
  ``k_step`` K (every K in the first, then ``_GROWTH`` apart) and stops at the first
  block whose last quarter does not hold the best K so far.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from gclsampler._atomic import write_text_atomic
from gclsampler._kinds import is_int, is_real
from gclsampler.errors import GclError

REPRESENTATIVES = ("first", "medoid", "random", "work_mean")


# ClusterConfig field annotation -> (check, what the message says is expected)
_FIELD_KINDS = {
    "int": (is_int, "an integer"),
    "float": (is_real, "a number"),
    "bool": (lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
}


class ClusterConfigError(GclError):
    """A clustering setting outside its valid range (names the config key)."""


class EmbeddingError(GclError):
    """Embeddings that cannot be clustered (wrong shape, NaN/inf)."""


@dataclass
class ClusterConfig:
    """Hydra structured config of the ``cluster`` group (``conf/cluster/default.yaml``).

    Defaults are the project's ``gcl``: GCL-Sampler 3.4's silhouette-chosen K, then the
    work split (``split_tolerance``), the time-share cut (``time_split_share``) and the member
    nearest its cluster's mean work as representative (``work_mean``); ``gcl_paper`` sets
    every deviation back to the paper's setting (``samplers.GclPaperSampler``). The
    sampling/restart knobs follow DESIGN.md's measurements.
    """

    k_min: int = 2
    # The sweep covers every K = k_min..k_step first and goes on k_step K at a time, 5 % apart,
    # while the best K lies in the last quarter of the block just swept, up to
    # min(invocations - 1, distinct embeddings, k_max); 0 = no cap of its own (the paper sets
    # none). Why blocks: a sweep to n costs hours on large workloads, and a silhouette curve
    # that still rises at a block's end asks for more K.
    k_max: int = 0
    k_step: int = 50
    tolerance: float = 0.01  # K within this (absolute) silhouette of the best count as "comparable"
    n_init: int = 3  # k-means starts per K in the sweep
    refine_top: int = 3  # best-scoring K re-scored with more starts
    refine_n_init: int = 8
    max_iter: int = 300
    sample_size: int = 5000  # above this many invocations, silhouette is scored on a seeded sample
    # the sweep's k-means runs on the scored distinct embeddings; above this many of them, on
    # this many sampled invocations
    fit_size: int = 2000
    representative: str = "work_mean"  # work_mean (project) | medoid | first (paper) | random; docs/plans.md
    normalize: bool = False  # L2-normalise embeddings first (cosine geometry of the contrastive loss)
    # Weight of the launch-shape block (log2 CTAs, threads/CTA, shared memory, registers) appended
    # to the embeddings by the gcl samplers; 0 = the paper's embeddings alone. See docs/plans.md.
    launch_weight: float = 0.0
    # Embeddings closer than identical_tol x their RMS norm count as one point: k = 1 when
    # every embedding is within it of another. Below silhouette_min_points such points,
    # silhouette cannot rank partitions (with 3 points it only says which pair is closer, not
    # whether to merge it), so every distinct point is its own cluster.
    identical_tol: float = 1e-4
    silhouette_min_points: int = 4
    # Deviation (project's gcl): after silhouette k-means, a cluster whose members' work
    # (embedding column split_column, by default the size vector's log2 instructions on SM 0)
    # spans more than split_tolerance (0.4: 1.32x) is cut into the fewest pieces that each span at
    # most that, the cuts at the widest gaps (split_by_work). 0 = off (paper). docs/plans.md.
    split_tolerance: float = 0.4
    split_column: int = -6
    # Opt-in deviation: then cut every cluster whose members' measured times (the profile's
    # time_ns) span more than time_split_tolerance in log2 (0.5: 1.41x), as the work split does.
    # Needs the profile, so the GCL samplers apply it (cut_by_time); 0 = off (the default).
    time_split_tolerance: float = 0.0
    # Deviation (project's gcl): cut a cluster by measured time only where its spread matters to
    # the workload: while one representative drawn from it is expected to miss the cluster's
    # total by more than this share of the workload's time (sum |t - mean| / total), cut it at
    # its heaviest log2-time gap (width x launches on the smaller side). 0.04 is what 5 %
    # run-to-run jitter gives on average in a cluster that holds the whole workload (0.8 x 5 %),
    # so only clusters short of that stay clear of jitter; docs/plans.md says how often one that
    # holds nearly all crosses it. 0 = off (paper).
    time_split_share: float = 0.04

    def validate(self, where: str = "cluster") -> "ClusterConfig":
        def bad(key: str, msg: str) -> ClusterConfigError:
            return ClusterConfigError(f"{where}.{key}: {msg}")

        # types first: `--set 'cluster={k_max: abc}'` reached the comparisons below as a TypeError
        for f in fields(self):
            kind = f.type if isinstance(f.type, str) else f.type.__name__
            ok, expected = _FIELD_KINDS[kind]
            v = getattr(self, f.name)
            if not ok(v):
                raise bad(f.name, f"must be {expected}, got {v!r}")
        if self.k_min < 2:
            raise bad("k_min", f"must be >= 2 (silhouette needs two clusters), got {self.k_min}")
        if self.k_max != 0 and self.k_max < self.k_min:
            raise bad("k_max", f"must be 0 (no cap) or >= k_min={self.k_min}, got {self.k_max}")
        if self.k_step < 1:
            raise bad("k_step", f"must be >= 1, got {self.k_step}")
        if not (self.tolerance >= 0 and math.isfinite(self.tolerance)):
            raise bad("tolerance", f"must be a finite number >= 0, got {self.tolerance}")
        for key in ("n_init", "refine_n_init", "max_iter"):
            if getattr(self, key) < 1:
                raise bad(key, f"must be >= 1, got {getattr(self, key)}")
        if self.refine_top < 0:
            raise bad("refine_top", f"must be >= 0, got {self.refine_top}")
        for key in ("sample_size", "fit_size"):
            if getattr(self, key) < 3:
                raise bad(key, f"must be >= 3, got {getattr(self, key)}")
        if not (self.launch_weight >= 0 and math.isfinite(self.launch_weight)):
            raise bad("launch_weight", f"must be a finite number >= 0, got {self.launch_weight}")
        if not (self.identical_tol >= 0 and math.isfinite(self.identical_tol)):
            raise bad("identical_tol", f"must be a finite number >= 0, got {self.identical_tol}")
        if self.silhouette_min_points < 3:
            raise bad("silhouette_min_points", f"must be >= 3 (silhouette needs k < points), got {self.silhouette_min_points}")
        if not (self.split_tolerance >= 0 and math.isfinite(self.split_tolerance)):
            raise bad("split_tolerance", f"must be a finite number >= 0 (0 = off), got {self.split_tolerance}")
        if not (self.time_split_tolerance >= 0 and math.isfinite(self.time_split_tolerance)):
            raise bad("time_split_tolerance", f"must be a finite number >= 0 (0 = off), got {self.time_split_tolerance}")
        if not (0 <= self.time_split_share < 1):
            raise bad("time_split_share", f"must be a number in [0, 1) (0 = off), got {self.time_split_share}")
        if self.representative not in REPRESENTATIVES:
            raise bad("representative", f"must be one of {', '.join(REPRESENTATIVES)}, got {self.representative!r}")
        return self

    @classmethod
    def from_any(cls, cfg: "ClusterConfig | Mapping[str, Any] | None", where: str = "cluster") -> "ClusterConfig":
        """Accept a ClusterConfig, a plain/OmegaConf mapping, or None (defaults); reject unknown keys."""
        if cfg is None:
            return cls().validate(where)
        if isinstance(cfg, cls):  # ClusterConfig(split_tolerance=0) is the mapping {split_tolerance: 0}
            return cls(**_as_field_types(cls, asdict(cfg))).validate(where)
        try:  # OmegaConf DictConfig -> dict without importing omegaconf eagerly
            items = dict(cfg.items())
        except AttributeError:
            raise ClusterConfigError(f"{where}: expected a mapping of cluster settings, got {type(cfg).__name__}") from None
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(items) - known)
        if unknown:
            raise ClusterConfigError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(sorted(known))})")
        return cls(**_as_field_types(cls, items)).validate(where)


def _as_field_types(cls, items: dict[str, Any]) -> dict[str, Any]:
    """``items`` with an integer given for a float field made a float, as Hydra's typed config does.

    Why: ``cluster.split_tolerance=0`` from train.py arrives as 0.0, and ``--set 'cluster={split_tolerance:
    0}'`` from ``gclsampler sample`` as 0; the plan records its settings, so the two plans differed
    by that one byte."""
    import typing

    hints = typing.get_type_hints(cls)
    out = dict(items)
    for key, value in items.items():
        hint = hints.get(key)
        floats = hint is float or float in typing.get_args(hint)
        if floats and isinstance(value, int) and not isinstance(value, bool):
            out[key] = float(value)
    return out


@dataclass
class ClusterResult:
    """What the cluster stage decided.

    ``labels`` (N,) cluster of each invocation, numbered by first appearance so
    cluster 0 holds invocation 0; ``representatives`` (K,) one member invocation per
    cluster; ``sizes`` (K,) the weights; ``silhouette`` {K: mean silhouette} for every
    K that produced a valid labelling (empty when N < 3 or all embeddings coincide);
    ``sampled`` whether the scores are estimates on ``n_scored`` sampled invocations.
    """

    labels: np.ndarray
    k: int
    silhouette: dict[int, float]
    representatives: np.ndarray
    sizes: np.ndarray
    sampled: bool = False
    n_scored: int = 0
    config: dict[str, Any] = field(default_factory=dict)

    k_silhouette: int = 0  # K the silhouette chose, before any work split (0: no sweep ran)

    @property
    def score(self) -> float | None:
        return self.silhouette.get(self.k_silhouette or self.k)


# ---------------------------------------------------------------------------------------
# weighted k-means (k-means++ seeding + Lloyd)


def _sq_dist(x: np.ndarray, x_sq: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(n, k) squared Euclidean distances, clipped at 0 against cancellation."""
    d = x_sq[:, None] - 2.0 * (x @ c.T) + np.einsum("ij,ij->i", c, c)[None, :]
    np.maximum(d, 0.0, out=d)
    return d


def _kmeans_pp(x: np.ndarray, x_sq: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator,
               d2: np.ndarray | None = None) -> np.ndarray:
    """Greedy k-means++ seeding (Arthur & Vassilvitskii, with 2 + log k local trials), weighted.

    ``d2``: the points' own squared-distance matrix, when the caller keeps one; every
    candidate is a data point, so seeding then needs no matrix products at all.
    """
    n = x.shape[0]
    trials = 2 + int(math.log(k))
    first = rng.choice(n, p=w / w.sum())
    centers = np.empty((k, x.shape[1]), dtype=x.dtype)
    centers[0] = x[first]
    closest = d2[first].astype(np.float64) if d2 is not None else _sq_dist(x, x_sq, centers[:1])[:, 0]
    for c in range(1, k):
        pot = w * closest
        total = pot.sum()
        if total <= 0:  # fewer distinct points than k: reuse a point (caller compacts labels)
            centers[c] = x[rng.integers(n)]
            continue
        cand = np.searchsorted(np.cumsum(pot), rng.random(trials) * total)
        cand = np.minimum(cand, n - 1)
        d_cand = d2[cand].T.astype(np.float64) if d2 is not None else _sq_dist(x, x_sq, x[cand])  # (n, trials)
        np.minimum(d_cand, closest[:, None], out=d_cand)
        best = int(np.argmin(w @ d_cand))
        centers[c] = x[cand[best]]
        closest = d_cand[:, best]
    return centers


def _lloyd(
    x: np.ndarray, x_sq: np.ndarray, w: np.ndarray, centers: np.ndarray, max_iter: int, tol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted Lloyd iterations until the summed squared centre shift drops to ``tol``.

    Empty clusters are moved to the points farthest from their centres. The labels
    returned are those of the final centres.
    """
    k = centers.shape[0]
    n = x.shape[0]
    rows = np.arange(n)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        d = _sq_dist(x, x_sq, centers)
        new = np.argmin(d, axis=1)
        if np.array_equal(new, labels):
            return centers, labels
        labels = new
        onehot = np.zeros((k, n), dtype=x.dtype)
        onehot[labels, rows] = w
        sums = onehot @ x
        mass = onehot.sum(axis=1)
        empty = np.flatnonzero(mass == 0)
        if empty.size:
            far = np.argsort(-d[rows, labels], kind="stable")
            for j, c in enumerate(empty):
                sums[c] = x[far[j]] * w[far[j]]
                mass[c] = w[far[j]]
        new_centers = sums / mass[:, None]
        shift = float(np.sum((new_centers - centers) ** 2))
        centers = new_centers
        if shift <= tol:
            break
    return centers, np.argmin(_sq_dist(x, x_sq, centers), axis=1)


def _kmeans_tol(x: np.ndarray, w: np.ndarray) -> float:
    """sklearn's convergence scale: 1e-4 of the mean per-dimension (weighted) variance."""
    mean = (w @ x) / w.sum()
    var = (w @ ((x - mean) ** 2)) / w.sum()
    return 1e-4 * float(var.mean())


_ROW_CHUNK = 1 << 14  # rows per pass in the O(N x D) steps: bounds their temporaries to a few MB


def distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(x, axis=0, return_inverse=True, return_counts=True)`` for a 2-D float array:
    the same three arrays, in the same order.

    Why not call it: it sorts the N rows as records, field by field, and at a million
    invocations that sort was two thirds of the cluster stage (15 s of 23). Here each row is
    hashed to 64 bits, the hashes are sorted, every row is checked equal to the first row of
    its hash, and only one row per hash (a few hundred for a real workload) goes through
    ``np.unique``, which merges rows equal in value and puts them in its order. A collision
    between different rows (or a NaN, which equals nothing) fails the check and the record sort
    runs after all, so the hash only decides the speed.
    """
    x = np.asarray(x)
    if x.ndim == 2 and x.dtype.kind == "f" and x.dtype.itemsize in (2, 4, 8) and x.shape[0] >= 2:
        _, first, of_hash = np.unique(_row_hash(x), return_index=True, return_inverse=True)
        of_hash = of_hash.reshape(-1)
        if all(np.array_equal(x[i:i + _ROW_CHUNK], x[first[of_hash[i:i + _ROW_CHUNK]]])
               for i in range(0, x.shape[0], _ROW_CHUNK)):
            uniq, order = np.unique(x[first], axis=0, return_inverse=True)
            inverse = order.reshape(-1)[of_hash]
            return uniq, inverse, np.bincount(inverse, minlength=uniq.shape[0])
    uniq, inverse, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    return uniq, inverse.reshape(-1), counts


def _row_hash(x: np.ndarray) -> np.ndarray:
    """A 64-bit hash per row of a float array: the weighted sum of its bit patterns mod 2**64,
    one odd weight per column. Rows with the same bits hash alike; rows equal only in value
    (-0.0 and 0.0) may not, and ``distinct_rows``'s last ``np.unique`` merges those."""
    mult = np.arange(x.shape[1], dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C16) | np.uint64(1)
    h = np.empty(x.shape[0], dtype=np.uint64)
    for i in range(0, x.shape[0], _ROW_CHUNK):
        rows = np.ascontiguousarray(x[i:i + _ROW_CHUNK])
        bits = rows.view(f"u{x.dtype.itemsize}").astype(np.uint64, copy=False)
        h[i:i + _ROW_CHUNK] = (bits * mult).sum(axis=1)
    return h


def _compact(labels: np.ndarray) -> np.ndarray:
    """Renumber labels 0..K'-1 by first appearance (drops empty clusters)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    return order[inverse].astype(np.int64)


# ---------------------------------------------------------------------------------------
# weighted silhouette on a precomputed distance matrix


def _pairwise(x: np.ndarray) -> np.ndarray:
    """Euclidean distances (float32 to halve memory: 5k points -> 100 MB)."""
    sq = np.einsum("ij,ij->i", x, x)
    scale = sq[:, None] + sq[None, :]
    d = scale - 2.0 * (x @ x.T)
    # below float64 resolution of |x|^2 + |y|^2 the difference is rounding: call it 0
    d[d <= 1e-12 * scale] = 0.0
    np.sqrt(d, out=d)
    np.fill_diagonal(d, 0.0)
    return d.astype(np.float32)


def weighted_silhouette(dist: np.ndarray, labels: np.ndarray, w: np.ndarray) -> float | None:
    """Mean silhouette of points ``i`` repeated ``w[i]`` times (equals sklearn on the expanded set).

    Duplicates are at distance 0, so a point's mean intra-cluster distance divides by
    (cluster mass - 1). Returns None when the labelling has fewer than 2 clusters or
    no fewer clusters than points (silhouette undefined there).
    """
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1
    mass = np.bincount(labels, weights=w, minlength=k)
    n_clusters = int(np.count_nonzero(mass))
    if n_clusters < 2 or n_clusters > w.sum() - 1:
        return None
    onehot = np.zeros((labels.size, k), dtype=np.float32)
    onehot[np.arange(labels.size), labels] = w
    sums = (dist @ onehot).astype(np.float64)  # (n, k): weighted distance to each cluster
    own_mass = mass[labels]
    a = np.where(own_mass > 1, sums[np.arange(labels.size), labels] / np.maximum(own_mass - 1, 1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_to = sums / mass[None, :]
    mean_to[:, mass == 0] = np.inf
    mean_to[np.arange(labels.size), labels] = np.inf
    b = mean_to.min(axis=1)
    denom = np.maximum(a, b)
    s = np.where((own_mass > 1) & (denom > 0), (b - a) / np.where(denom > 0, denom, 1.0), 0.0)
    return float(np.dot(w, s) / w.sum())


def silhouette_score(emb: np.ndarray, labels: np.ndarray, sample_size: int | None = None, random_state: int = 0) -> float | None:
    """Mean silhouette of a labelling of invocations, exact or on a seeded sample.

    Same estimator the sweep uses (distinct embeddings weighted by multiplicity), so
    the sampled-vs-exact gap can be measured on any labelling (bench/cluster_scale.py).
    """
    x = np.asarray(emb, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    uniq, inverse, counts = distinct_rows(x)
    # a distinct embedding may carry several labels only if the caller split duplicates
    key = inverse.astype(np.int64) * (int(labels.max()) + 1) + labels
    cells, first, cell_of = np.unique(key, return_index=True, return_inverse=True)
    pts, lab = uniq[inverse[first]], labels[first]
    if sample_size is not None and sample_size < labels.size:
        ids, w = _subsample(cell_of.reshape(-1), sample_size, _seed(random_state, 0xC1, 0x5A))
    else:
        ids, w = np.arange(cells.size), np.bincount(cell_of.reshape(-1)).astype(np.float64)
    return weighted_silhouette(_pairwise(pts[ids]), _compact(lab[ids]), w)


# ---------------------------------------------------------------------------------------
# the sweep


def _seed(random_state: int | None, *key: int) -> np.random.Generator:
    """Generator for one purpose; None counts as 0 so that plans are always reproducible."""
    base = 0 if random_state is None else int(random_state) & 0xFFFFFFFF
    return np.random.default_rng(np.random.SeedSequence([base, *key]))


@dataclass
class _Points:
    """Weighted distinct embeddings (float32 for k-means, squared norms cached)."""

    x: np.ndarray
    w: np.ndarray
    sq: np.ndarray
    d2: np.ndarray | None = None  # own squared distances (fit set only: k-means++ lookups)

    @classmethod
    def of(cls, x: np.ndarray, w: np.ndarray, gram: bool = False) -> "_Points":
        x = np.ascontiguousarray(x, dtype=np.float32)
        sq = np.einsum("ij,ij->i", x, x)
        d2 = _sq_dist(x, sq, x) if gram else None
        return cls(x, np.asarray(w, dtype=np.float64), sq, d2)

    def assign(self, centers: np.ndarray) -> np.ndarray:
        return np.argmin(_sq_dist(self.x, self.sq, centers), axis=1)


def _kmeans(fit: _Points, k: int, rng: np.random.Generator, cfg: ClusterConfig, tol: float) -> tuple[np.ndarray, float]:
    """One k-means start on the fit set: centres and weighted inertia."""
    centers, labels = _lloyd(fit.x, fit.sq, fit.w, _kmeans_pp(fit.x, fit.sq, fit.w, k, rng, fit.d2), cfg.max_iter, tol)
    d = _sq_dist(fit.x, fit.sq, centers)[np.arange(labels.size), labels]
    return centers, float(fit.w @ d)


_GRAM_MAX = 5000  # fit sets up to this many distinct points keep their distance matrix (<= 100 MB)


def _pick(curve: dict[int, float], tolerance: float) -> int:
    best = max(curve.values())
    return min(k for k, s in curve.items() if s >= best - tolerance)


def _still_rising(curve: dict[int, float], block: Sequence[int]) -> bool:
    """Whether the sweep should go on past ``block``: the best K so far is among the block's
    last quarter of K (with fewer than 8 K in the block, it is the block's last K).

    Why not "the best K is the block's last": silhouette is noisy in K, and on a curve that
    still rises the block's last K often scores a hair below one a few K earlier: with that
    rule, 400 kernels in 20k launches (``bench/cluster_scale.py --kernels 400``) stopped at 150
    and took K = 146, with 48 % of the launches in clusters that mix kernels.
    """
    best = max(curve, key=lambda k: (curve[k], -k))
    return best >= block[-max(1, len(block) // 4)]


_GROWTH = 1.05
"""Past the first block, the sweep's K are this factor apart (at least 1). Why: the weighted
silhouette of distinct embeddings each launched several times rises towards K = distinct
embeddings (a cluster of identical points scores 1), so on embeddings with little structure
the sweep goes on to K in the thousands; every K there cost 216 s for 1500 distinct random
embeddings in 20k launches. A 5 % grid costs a few dozen K, and the K it skips below the pick
are swept afterwards, so the pick is the one a dense sweep of the same K range would take
(up to the restarts and the noise of other K)."""


def _later_block(last: int, hi: int, k_step: int) -> list[int]:
    """The sweep's next ``k_step`` K after ``last``, ``_GROWTH`` apart, up to ``hi`` included."""
    ks: list[int] = []
    k = last
    while len(ks) < k_step and k < hi:
        k = min(hi, max(k + 1, math.ceil(k * _GROWTH)))
        ks.append(k)
    return ks


def _one_cluster(n: int, cfg: ClusterConfig, random_state: int, work: np.ndarray | None = None) -> ClusterResult:
    labels = np.zeros(n, dtype=np.int64)
    reps = representatives(labels, None, cfg.representative, random_state, work) if n else np.zeros(0, dtype=np.int64)
    return ClusterResult(labels, 1 if n else 0, {}, reps, np.bincount(labels, minlength=1 if n else 0),
                         False, 0, asdict(cfg))


_GROUP_MAX = 2048  # up to this many distinct embeddings, near-identical groups are found pairwise


def _identical_groups(uniq: np.ndarray, counts: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Labels of the distinct embeddings' near-identical groups: points within ``tol`` x the
    embeddings' RMS norm of each other; and the pairwise distances when they were computed
    (``_pairwise(uniq)``, which the sweep reuses when it scores every distinct point).

    Why: a trained network maps two graphs that differ in an irrelevant bit to embeddings a
    rounding error apart; those must still count as one point (k = 1 when all are). The
    scale is the embeddings' norm, not their spread: a spread of rounding errors is itself
    tiny. Groups are the connected components of the within-tolerance pairs, and a component
    wider than twice the tolerance (a chain of steps each below it) is not one point: its
    members stay apart. Above ``_GROUP_MAX`` distinct points only the all-identical case is
    detected (every point its own group otherwise); the silhouette sweep decides there.
    """
    m = uniq.shape[0]
    w = counts.astype(np.float64)
    scale = tol * math.sqrt(float((np.einsum("ij,ij->i", uniq, uniq) * w).sum() / w.sum()))
    mean = (uniq * w[:, None]).sum(axis=0) / w.sum()
    if float(np.sqrt(((uniq - mean) ** 2).sum(axis=1)).max()) * 2 <= scale:
        return np.zeros(m, dtype=np.int64), None  # every pair is within the tolerance
    if m > _GROUP_MAX or scale == 0:
        return np.arange(m, dtype=np.int64), None
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    dist = _pairwise(uniq)
    _, comp = connected_components(csr_matrix(dist <= scale), directed=False)
    same = comp[:, None] == comp[None, :]
    width = np.zeros(int(comp.max()) + 1)
    np.maximum.at(width, comp, np.where(same, dist, 0.0).max(axis=1))
    chained = width[comp] > 2 * scale
    groups = np.where(chained, comp.max() + 1 + np.arange(m), comp)
    return _compact(groups), dist


def _each_group(groups: np.ndarray, inverse: np.ndarray, emb: np.ndarray, x_all: np.ndarray, cfg: ClusterConfig,
                random_state: int, curve: dict[int, float], sampled: bool = False, n_scored: int = 0) -> ClusterResult:
    """Every near-identical group its own cluster: what is left when the silhouette cannot
    rank partitions (too few groups, in all or in the scored sample) or finds no structure (no
    K scores above 0); then cut by ``split_by_work`` when it is on, as the sweep's labelling is.

    Why the split here too: "near-identical" is relative to the embeddings' norm, so on
    embeddings far from the origin (a large common offset) launches whose work column differs
    2x counted as one point and kept one representative, uncut."""
    labels = _compact(groups[inverse])
    return _work_split(labels, emb, x_all, cfg, random_state, curve, sampled, n_scored, int(labels.max()) + 1)


def _subsample(inverse: np.ndarray, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A uniform sample of ``size`` invocations as (distinct ids, multiplicities)."""
    pick = rng.choice(inverse.size, size=size, replace=False)
    ids, counts = np.unique(inverse[pick], return_counts=True)
    return ids, counts.astype(np.float64)


def _progress(ks: Sequence[int]):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return ks
    return tqdm(ks, desc="k-means sweep", unit="K", leave=False,
                disable=not sys.stderr.isatty() or bool(os.environ.get("CI")))


def cluster_embeddings(emb: np.ndarray, cfg: ClusterConfig | Mapping[str, Any] | None = None, random_state: int = 0) -> ClusterResult:
    """Silhouette-chosen k-means of (N, D) embeddings; one cluster when N < 2 or all coincide,
    one per distinct point when they are too few to rank (``silhouette_min_points``) or no K
    scores above 0.

    Three point sets, all weighted distinct embeddings: *all* (every invocation),
    *score* (all, or ``sample_size`` sampled invocations: silhouette is computed
    here) and *fit* (score, or ``fit_size`` of its invocations when score has more distinct
    points than that: the sweep's k-means runs here). The returned labels always come from
    Lloyd iterations on *all*.
    """
    cfg = ClusterConfig.from_any(cfg)
    emb = np.asarray(emb)
    if emb.ndim != 2:
        raise EmbeddingError(f"embeddings: expected an (invocations, dims) array, got shape {emb.shape}")
    # float32 embeddings stay float32 over the launches (a float64 copy of 1M x 264 was 5 s of
    # page faults and 2 GB); the distinct rows and everything after them are float64
    x_all = emb if emb.dtype.kind == "f" and emb.dtype.itemsize <= 8 else emb.astype(np.float64)
    bad = ~np.isfinite(x_all).all(axis=1)
    if bad.any():
        raise EmbeddingError(f"embeddings: row {int(np.flatnonzero(bad)[0])} (invocation) is not finite")
    with one_blas_thread():
        return _cluster(emb, x_all, cfg, random_state)


def _stage_points(x: np.ndarray, normalize: bool) -> np.ndarray:
    """The points the stage clusters and takes medoids over: ``x`` scaled into float32's range
    (``_in_float32_range``), then L2-normalised when ``normalize`` is on.

    Why one function: ``cut_by_time`` chooses the representatives of a cut labelling again, and
    its medoids must be those of the stage's geometry; over the raw clustering input they were
    the medoids of the unnormalised points under ``normalize``, and beyond ~2^±500 every
    squared distance overflowed or vanished, so every member tied and the middle launch won."""
    x = _in_float32_range(x)
    if normalize and x.shape[0]:
        x = x.astype(np.float64)
        norm = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norm > 0, norm, 1.0)
    return x


def one_blas_thread():
    """A context in which BLAS runs on one thread.

    Why: how a threaded BLAS splits a float32 product changes the rounding of its sums, so
    the silhouette scores, and in a near tie the chosen K, would depend on the machine's
    core count or ``OMP_NUM_THREADS``; a plan must be the same bytes for the same inputs
    and seed. The products here are small (at most a few thousand points).
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _in_float32_range(x: np.ndarray) -> np.ndarray:
    """``x`` times a power of two that puts its largest magnitude in [0.5, 1), when that
    magnitude is beyond 2^+-32.

    Why: k-means and the silhouette square distances in float32, which overflows from
    about 1e19 and loses everything below about 1e-19. A power of two is exact and every
    decision here is scale-free, so such embeddings cluster as their scaled copy does, and
    embeddings in the ordinary range are left as they are.
    """
    top = max(float(x.max()), -float(x.min())) if x.size else 0.0  # no |x| temporary
    if top == 0.0 or 2.0 ** -32 <= top <= 2.0 ** 32:
        return x
    return np.ldexp(x.astype(np.float64), -math.frexp(top)[1])  # in float64: exact there


def _cluster(emb: np.ndarray, x_all: np.ndarray, cfg: ClusterConfig, random_state: int) -> ClusterResult:
    n = x_all.shape[0]
    work = representative_work(emb, cfg)
    x_all = _stage_points(x_all, cfg.normalize)
    if n < 2:
        return _one_cluster(n, cfg, random_state, work)

    # distinct embeddings with multiplicities: exact, and much smaller for repeated kernels
    # (float32 rows are distinct and ordered exactly as their float64 copies are)
    uniq, inverse, counts = distinct_rows(x_all)
    uniq = uniq.astype(np.float64, copy=False)
    groups, dist_all = _identical_groups(uniq, counts, cfg.identical_tol)
    n_groups = int(groups.max()) + 1
    if n_groups == 1:  # one point, unless its launches' work spans more than the work split allows
        v = work_column(emb, cfg) if cfg.split_tolerance > 0 else None
        if v is None or not float(v.max() - v.min()) > cfg.split_tolerance:
            return _one_cluster(n, cfg, random_state, work)
        return _work_split(np.zeros(n, dtype=np.int64), emb, x_all, cfg, random_state, {}, False, 0, 0)
    if n_groups < cfg.silhouette_min_points:  # too few distinct points for silhouette to rank
        return _each_group(groups, inverse, emb, x_all, cfg, random_state, {})
    every = _Points.of(uniq, counts)

    sampled = n > cfg.sample_size
    if sampled:
        s_ids, s_w = _subsample(inverse, cfg.sample_size, _seed(random_state, 0xC1, 0x5A))
        n_scored = cfg.sample_size
        if np.unique(groups[s_ids]).size < cfg.silhouette_min_points:
            # the sample shows silhouette too few distinct points to rank partitions, though the
            # workload has more (one kernel launched thousands of times beside a few launched
            # rarely): with no K it could score, the rare kernels were merged into one cluster
            # with the common one by rule. As with too few in all, each group is its own cluster.
            return _each_group(groups, inverse, emb, x_all, cfg, random_state, {}, sampled, n_scored)
    else:
        s_ids, s_w = np.arange(uniq.shape[0]), counts.astype(np.float64)
        n_scored = n
    score_set = _Points.of(uniq[s_ids], s_w)
    dist = dist_all if dist_all is not None and not sampled else _pairwise(uniq[s_ids])
    # fit_size bounds distinct points, not invocations: k-means costs per distinct point, and a
    # sample of invocations misses the rarely launched kernels, which then share a cluster
    fit = None
    if s_ids.size > cfg.fit_size:
        f_local, f_w = _subsample(np.repeat(np.arange(s_ids.size), s_w.astype(np.int64)), cfg.fit_size,
                                  _seed(random_state, 0xF1, 0x7))
        # a fit sample with fewer near-identical groups than silhouette can rank caps K below them
        # (one distinct point: no K at all, and every kernel went into one cluster by rule): the
        # sweep then fits on the scored points themselves, as below fit_size
        if np.unique(groups[s_ids[f_local]]).size >= cfg.silhouette_min_points:
            fit = _Points.of(score_set.x[f_local], f_w, gram=True)
    if fit is None:
        fit = _Points.of(score_set.x, score_set.w, gram=score_set.x.shape[0] <= _GRAM_MAX)
    tol = _kmeans_tol(fit.x.astype(np.float64), fit.w)

    hi = min(n - 1, fit.x.shape[0], n_scored - 1)
    if cfg.k_max:
        hi = min(hi, cfg.k_max)
    lo = min(cfg.k_min, hi)

    def score_of(centers: np.ndarray) -> float | None:
        return weighted_silhouette(dist, _compact(score_set.assign(centers)), score_set.w)

    # sweep: n_init starts per K, the lowest-inertia one is scored; blocks of k_step K (every K
    # in the first, then _GROWTH apart), the next one only while the best K so far is in the
    # last quarter of the block swept
    curve: dict[int, float] = {}
    centers_of: dict[int, np.ndarray] = {}
    inertia_of: dict[int, float] = {}  # every K swept, scored or not

    def sweep(ks: Sequence[int]) -> None:
        for k in _progress(ks):
            runs = [_kmeans(fit, k, _seed(random_state, k, s), cfg, tol) for s in range(cfg.n_init)]
            centers, inertia_of[k] = min(runs, key=lambda r: r[1])
            score = score_of(centers)
            if score is not None:
                curve[k], centers_of[k] = score, centers

    block = list(range(lo, min(hi, max(lo, cfg.k_step)) + 1)) if hi >= 2 else []
    while block:
        sweep(block)
        if not curve or not _still_rising(curve, block):
            break
        block = _later_block(block[-1], hi, cfg.k_step)
    if not curve:  # no K could be scored (e.g. every K leaves a singleton-only labelling)
        return _work_split(np.zeros(n, dtype=np.int64), emb, x_all, cfg, random_state, {}, sampled, n_scored, 0)

    # refine: the leading K (and whichever K the rule then picks) get more starts, each
    # scored by silhouette; the best centres are iterated on every distinct embedding and
    # that labelling's score replaces the sweep's, so the curve scores what is returned
    refined: dict[int, np.ndarray] = {}  # K -> labels of the distinct embeddings
    extra_of: dict[int, list[tuple[np.ndarray, float]]] = {}  # K -> its refine_n_init extra starts

    def extra_starts(k: int) -> list[tuple[np.ndarray, float]]:
        """Kept: a K below the pick that gets them (restart) may become the pick (refine)."""
        if k not in extra_of:
            extra_of[k] = [_kmeans(fit, k, _seed(random_state, k, s), cfg, tol)
                           for s in range(cfg.n_init, cfg.n_init + cfg.refine_n_init)]
        return extra_of[k]

    def refine(k: int) -> None:
        best_c, best_s = centers_of[k], curve[k]
        for centers, _ in extra_starts(k):
            score = score_of(centers)
            if score is not None and score > best_s:
                best_c, best_s = centers, score
        _, labels_u = _lloyd(every.x, every.sq, every.w, best_c, cfg.max_iter, tol)
        labels_u = _compact(labels_u)
        score = weighted_silhouette(dist, _compact(labels_u[s_ids]), score_set.w)
        if score is None:
            del curve[k]
            return
        curve[k] = score
        refined[k] = labels_u

    # The rule takes the smallest K within tolerance of the best, so a smaller K whose few
    # starts all fell into a poor local optimum (scored low) silently moves the pick up: lu's
    # K = 3 scored 0.71 instead of 0.85 on one seed and the plan became 10 clusters, not 3.
    # So every K below the pick gets the extra starts too, chosen by inertia as in the sweep
    # (one silhouette each, not one per start), up to the first block's end: past it a poor
    # optimum merges a small share of the points among many clusters and moves the score little,
    # and these restarts were 2/3 of the stage on 400 kernels (bench/cluster_scale.py --kernels)
    # without moving its pick.
    restarted: set[int] = set()

    def restart(k: int) -> None:
        restarted.add(k)
        centers, inertia = min(extra_starts(k), key=lambda r: r[1])
        if inertia < inertia_of[k]:
            score = score_of(centers)
            if score is not None and score > curve[k]:
                curve[k], centers_of[k] = score, centers

    leaders = sorted(curve, key=lambda k: (-curve[k], k))[: cfg.refine_top]
    for k in sorted(leaders):
        refine(k)
    chosen = None
    while curve:
        chosen = _pick(curve, cfg.tolerance)
        # past the first block the grid skipped K: those between the pick and the K swept
        # below it are swept now, and the rule runs again
        gap = range(max((k for k in inertia_of if k < chosen), default=chosen - 1) + 1, chosen)
        if gap:
            sweep(gap)
            continue
        pending = [k for k in curve if k < chosen and k <= cfg.k_step and k not in refined and k not in restarted]
        if pending:
            restart(min(pending))
        elif chosen in refined:
            break
        else:
            refine(chosen)
    if not curve or chosen is None:
        return _work_split(np.zeros(n, dtype=np.int64), emb, x_all, cfg, random_state, {}, sampled, n_scored, 0)
    if max(curve.values()) <= 0:
        # No K separates the embeddings better than chance: the distinct kernels are about as
        # far from each other as from anything, and the rule "smallest K among the comparable"
        # would merge kernels that share nothing (4 equally spaced kernels launched once each
        # all score 0, so K = 2 won). Nothing is alike, so nothing is merged.
        return _each_group(groups, inverse, emb, x_all, cfg, random_state, dict(sorted(curve.items())),
                           sampled, n_scored)
    return _work_split(_compact(refined[chosen][inverse]), emb, x_all, cfg, random_state,
                       dict(sorted(curve.items())), sampled, n_scored, int(chosen))


def _work_split(labels: np.ndarray, emb: np.ndarray, x_all: np.ndarray, cfg: ClusterConfig, random_state: int,
                curve: dict[int, float], sampled: bool, n_scored: int, k_silhouette: int) -> ClusterResult:
    """The silhouette labelling (or the single cluster when no K could be scored), cut by
    ``split_by_work`` when it is on, with representatives: the fallback must not skip the
    split, or a workload whose embeddings defeat silhouette keeps kernels of any size together."""
    if cfg.split_tolerance > 0:
        labels = split_by_work(labels, work_column(emb, cfg), cfg.split_tolerance)
    reps = representatives(labels, x_all, cfg.representative, random_state, representative_work(emb, cfg))
    sizes = np.bincount(labels)
    return ClusterResult(labels, int(sizes.size), curve, reps, sizes, sampled, n_scored, asdict(cfg), k_silhouette)


def work_column(emb: np.ndarray, cfg: ClusterConfig) -> np.ndarray:
    """The embeddings' work column (``split_column``, by default the size vector's log2
    instructions on SM 0), which the work split cuts on and ``work_mean`` picks by."""
    emb = np.asarray(emb)
    if not -emb.shape[1] <= cfg.split_column < emb.shape[1]:
        uses = [k for k, on in (("cluster.split_tolerance=0", cfg.split_tolerance > 0),
                                ("another cluster.representative", cfg.representative == "work_mean")) if on]
        raise ClusterConfigError(
            f"cluster.split_column: {cfg.split_column} is outside embeddings of {emb.shape[1]} columns; the work "
            f"split and the work_mean representative need the size vector (model.kernel_features=true) or "
            f"{' and '.join(uses)}")
    return emb[:, cfg.split_column].astype(np.float64)


def representative_work(emb: np.ndarray, cfg: ClusterConfig | Mapping[str, Any]) -> np.ndarray | None:
    """The work column ``representatives`` needs under ``cfg.representative`` (``work_mean``'s),
    else None: what every caller of ``representatives`` and ``cut_by_time`` passes as ``work``."""
    cfg = ClusterConfig.from_any(cfg)
    return work_column(emb, cfg) if cfg.representative == "work_mean" else None


def _members_sorted_by(labels: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    """Each cluster's members (indices), sorted by ``v``: what the cuts below walk."""
    order = np.lexsort((v, labels))
    bounds = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1], True])
    return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def split_by_work(labels: np.ndarray, work: np.ndarray, tolerance: float) -> np.ndarray:
    """Cut every cluster whose ``work`` values span more than ``tolerance`` into the fewest
    pieces that each span at most ``tolerance``, the cuts at the widest gaps among such
    partitions; labels renumbered by first appearance.

    Why cut at all: silhouette rewards the most separated structure -- which kernels behave
    alike -- and is indifferent to a smooth spread of sizes inside one kernel's launches (a
    BFS frontier, the shrinking LU trailing matrix, a growing KV cache). A representative
    stands for its cluster only if the members do about the same work.
    Why the fewest pieces: cutting at the single widest gap, recursively (before 2026-11-28),
    keeps launches that do the same work together, but on a smooth spread in log2 the widest
    gap is always at the small end, so it peeled one launch size at a time: a decode
    attention kernel whose work grows with the context got one cluster per decode step (32 of
    a 63-step phi2 run's 52 clusters; 670 for 1000 steps where 7 spans of 1.41x cover them).
    The fewest pieces is the span bound's own count, and among the partitions with that
    count the widest-gap one still puts the cuts where the launches fall apart.
    """
    out = labels.astype(np.int64).copy()
    next_label = int(out.max()) + 1 if out.size else 0
    v = np.asarray(work, dtype=np.float64)
    for members in _members_sorted_by(out, v):
        vals = v[members]
        if vals[-1] - vals[0] <= tolerance:
            continue
        distinct, first = np.unique(vals, return_index=True)
        starts = first[_fewest_spans(distinct, tolerance)]
        for lo, hi in zip(starts[1:], np.r_[starts[2:], members.size]):
            out[members[lo:hi]] = next_label
            next_label += 1
    return _compact(out)


def _fewest_spans(u: np.ndarray, tolerance: float) -> np.ndarray:
    """Start indices (the first is 0) of the partition of sorted distinct values ``u`` into
    the fewest runs with ``max - min <= tolerance``, and among those the largest sum of the
    gaps cut at (ties: the earlier cut). A dynamic programme over the run ending at each value:
    the fewest runs for a prefix never decreases with its length, so the runs a value can close
    start in one window."""
    m = u.size
    gain = np.r_[0.0, np.diff(u)]  # what cutting before value j gains
    lo = np.searchsorted(u, u - tolerance, side="left")
    idx = np.arange(m)
    while True:  # the window's left end exactly as ``max - min <= tolerance`` rounds it
        up = u - u[lo] > tolerance
        down = (lo > 0) & (u - u[np.maximum(lo - 1, 0)] <= tolerance)
        if not (up.any() or down.any()):
            break
        lo = np.minimum(lo + up - down, idx)
    runs = np.zeros(m + 1, dtype=np.int64)
    gaps = np.zeros(m + 1)
    start = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, m + 1):
        a = int(lo[i - 1])
        fewest = runs[a]  # runs[] never decreases, so the window's first entry is its least
        last = a + int(np.searchsorted(runs[a:i], fewest, side="right"))
        cand = gaps[a:last] + gain[a:last]
        j = a + int(np.argmax(cand))
        runs[i], gaps[i], start[i] = fewest + 1, cand[j - a], j
    cuts = []
    i = m
    while i > 0:
        cuts.append(start[i])
        i = start[i]
    return np.asarray(cuts[::-1], dtype=np.int64)


def _cut_at_heaviest_gaps(labels: np.ndarray, v: np.ndarray, too_wide) -> np.ndarray:
    """Cut each cluster for which ``too_wide(members)`` holds at the gap in ``v`` with the largest
    width x launches on its smaller side, then the pieces likewise, until none is; labels
    renumbered by first appearance.

    Why weigh the gap: the widest gap alone (until 2026-11-28) is where launches fall apart when
    they form groups, but on a smooth spread in log2 the widest gap is always at the short end,
    so it peeled one launch at a time (1000 launches whose times rise evenly from 1 to 2 became
    512 clusters). A cut moves the launches on its smaller side away from the wrong mean, so a
    gap counts as wide as it is times how many launches it separates: groups still come apart
    at their gap (a few launches 3x faster than the rest do), a smooth spread is halved."""
    out = labels.astype(np.int64).copy()
    next_label = int(out.max()) + 1 if out.size else 0
    stack = _members_sorted_by(out, v)
    while stack:
        members = stack.pop()  # sorted by v
        if not too_wide(members):
            continue
        left = np.arange(1, members.size)  # launches below each gap
        cut = int(np.argmax(np.diff(v[members]) * np.minimum(left, members.size - left))) + 1
        hi = members[cut:]
        out[hi] = next_label
        next_label += 1
        stack += [members[:cut], hi]
    return _compact(out)


def split_by_share(labels: np.ndarray, times: np.ndarray, share: float) -> np.ndarray:
    """Cut every cluster whose ``sum |t - mean|`` exceeds ``share`` of the whole workload's time at
    its heaviest log2-time gap (width x launches on the smaller side), recursively, until none
    does; labels renumbered by first appearance.

    Why this measure: with one member r simulated and scaled by the cluster size n, the cluster's
    estimate misses its total by n |t_r - mean|, which averages sum |t - mean| over a uniformly
    drawn r. Dividing by the workload's time makes it the error that cluster alone can put into
    the workload's estimate. A span rule (``split_by_work`` on time) cuts any wide cluster, also
    one whose outlier is 1 of 287 launches and cannot move the total; this cuts only where the
    spread matters, so what it costs in simulated launches goes where the error is.
    Zero times are allowed (a gap to them is as wide as the smallest positive time allows).
    """
    t = np.asarray(times, dtype=np.float64)
    total = float(t.sum())
    if share <= 0 or total <= 0:  # nothing to cut (an empty workload sums to 0)
        return _compact(labels.astype(np.int64))
    pos = t > 0
    log_t = np.full(t.shape, np.log2(t[pos].min()) - 1.0)  # a zero time: one halving below the shortest
    log_t[pos] = np.log2(t[pos])
    return _cut_at_heaviest_gaps(labels, log_t,
                                 lambda members: np.abs(t[members] - t[members].mean()).sum() > share * total)


def cut_by_time(result: ClusterResult, x: np.ndarray | None, times_ns: np.ndarray, tolerance: float,
                representative: str = "medoid", random_state: int = 0, share: float = 0.0,
                work: np.ndarray | None = None) -> ClusterResult:
    """``result`` with every cluster whose measured times span more than ``tolerance`` (log2)
    cut into the fewest pieces within it (``split_by_work`` on log2 time), then every cluster
    whose time spread is more than ``share`` of the workload's time cut (``split_by_share``), and
    representatives chosen anew where anything was cut.

    Why: an SM-scoped trace does not see work that ran on other SMs (a BFS frontier) or a
    launch slowed by cold caches, so launches with the same SM-0 trace can differ 2x in time;
    the profile's times, which every workload has, do see it. ROOT cuts STEM's strata by time
    for the same reason. The span cut is off by default: it costs speedup (docs/plans.md,
    bench/time_split.py); the share cut is on in ``gcl``, where it cuts bfs's frontier clusters
    and, on the synthetic suite, nothing else.
    ``x`` is the clustering input (None: all members tied); the medoid is taken over it as the
    stage took it (scaled into range, normalised when ``result.config`` says ``normalize``);
    ``work`` the log2 work column ``work_mean`` needs.
    """
    times_ns = np.asarray(times_ns, dtype=np.float64)
    if times_ns.shape != result.labels.shape:
        raise ValueError(f"time_ns: {times_ns.size} times for {result.labels.size} invocations")
    need_positive = tolerance > 0
    bad = ~(np.isfinite(times_ns) & ((times_ns > 0) if need_positive else (times_ns >= 0)))
    if bad.any():
        what = "a time > 0" if need_positive else "a finite time >= 0"
        raise ValueError(f"time_ns: invocation {int(np.flatnonzero(bad)[0])}: the time cut needs {what}, "
                         f"found {float(times_ns[bad][0])!r}")
    if result.labels.size == 0 or (tolerance <= 0 and share <= 0):
        return result
    labels = split_by_work(result.labels, np.log2(times_ns), tolerance) if tolerance > 0 else result.labels
    labels = split_by_share(labels, times_ns, share) if share > 0 else labels
    if labels.max() + 1 == result.k:
        return result
    points = None if x is None else _stage_points(np.asarray(x), bool(result.config.get("normalize", False)))
    reps = representatives(labels, points, representative, random_state, work)
    return replace(result, labels=labels, k=int(labels.max()) + 1, representatives=reps, sizes=np.bincount(labels))


def representatives(labels: np.ndarray, x: np.ndarray | None, how: str, random_state: int,
                    work: np.ndarray | None = None) -> np.ndarray:
    """One member invocation per cluster.

    ``first``: the earliest invocation (paper; a simulator reaches it soonest).
    ``medoid``: the member nearest the cluster mean; under squared Euclidean distance
    this is exactly the member minimising the summed distance to all members. Members tied
    at that distance (launches whose embeddings are identical, as every launch of a kernel
    with unchanged arguments is) go to the middle launch of the tied ones, the later of two
    (project deviation). Why not the earliest: the first launch of a kernel finds the
    caches cold, so of launches that look the same it is the one least like the rest; the
    synthetic Ada, whose L2 holds cfd's working set, shows it as a 25 % cross-arch error.
    ``random``: a seeded uniform member.
    ``work_mean`` (project default): the member whose work ``2**work`` (``work``: the log2 work column,
    the size vector's SM-0 instructions) is nearest the members' mean work; the medoid where it is
    one of the nearest, else the middle launch of them. Why: a plan scales its member by the
    cluster size, so the ideal member has the mean time, and time follows work. On the
    synthetic suite it was 0.2-0.3 points lower than the medoid on two runs no method read
    (docs/plans.md); on the run the plan was fitted on the two are equal.
    """
    if how == "work_mean":
        if work is None:
            raise ValueError("representative work_mean needs the work column")
        return nearest_mean_work(labels, np.asarray(work, dtype=np.float64),
                                 representatives(labels, x, "medoid", random_state))
    k = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")  # members of each cluster in invocation order
    starts = np.searchsorted(labels[order], np.arange(k))
    sizes = np.bincount(labels, minlength=k)
    if how == "first":
        return order[starts].astype(np.int64)
    if how == "random":
        off = _seed(random_state, 0x5E, 0x1EC7).integers(0, sizes)
        return order[starts + off].astype(np.int64)
    if x is None:  # all members identical: all are tied
        return order[starts + sizes // 2].astype(np.int64)
    sums = np.zeros((k, x.shape[1]))
    for i in range(0, labels.size, _ROW_CHUNK):  # float64 chunks: add.at casting float32 was 3 s at 1M
        np.add.at(sums, labels[i:i + _ROW_CHUNK], x[i:i + _ROW_CHUNK].astype(np.float64, copy=False))
    means = sums / sizes[:, None]
    d = np.empty(labels.size)
    for i in range(0, labels.size, _ROW_CHUNK):  # in chunks: one N x D difference was 4 s at 1M
        r = x[i:i + _ROW_CHUNK] - means[labels[i:i + _ROW_CHUNK]]
        d[i:i + _ROW_CHUNK] = np.einsum("ij,ij->i", r, r)
    return _middle_member(_at_cluster_minimum(d, labels, k), labels, k)  # identical rows: bit-identical d


def _at_cluster_minimum(d: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Which members have their cluster's smallest ``d`` (ties included)."""
    d_min = np.full(k, np.inf)
    np.minimum.at(d_min, labels, d)
    return d == d_min[labels]


def _middle_member(tied: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Per cluster, the middle launch (the later of two) of its members where ``tied`` holds;
    every cluster must have one."""
    ids = np.flatnonzero(tied)
    ids = ids[np.argsort(labels[ids], kind="stable")]  # tied members by cluster, in invocation order
    first_tied = np.searchsorted(labels[ids], np.arange(k))
    return ids[first_tied + np.bincount(labels[ids], minlength=k) // 2].astype(np.int64)


def nearest_mean_work(labels: np.ndarray, log2_work: np.ndarray, medoids: np.ndarray) -> np.ndarray:
    """Per cluster, the member whose work ``2**log2_work`` is nearest the members' mean work:
    ``medoids[c]`` when it is one of the nearest, else the middle launch of those.

    A cluster whose log2 work leaves float64's exponent range (embeddings scaled far from
    what the encoder writes) is taken relative to its own largest member, by a whole power
    of two: 2**1100 would be inf and inf - inf no member at all. Clusters in range are not
    shifted, so their choice is the same bits as before.

    Launches whose counts sit symmetrically about the mean (bfs's 566 and 594 about 580) are
    equally near it, but their float32 log2 values are not: which one rounded nearer decides,
    deterministically. Treating distances within the column's resolution as ties (the
    medoid, else the middle launch) was tried and not kept: 2026-11-29, docs/plans.md.
    """
    log2_work = log2_work.astype(np.float64)
    k = int(labels.max()) + 1
    hi = np.full(k, -np.inf)
    np.maximum.at(hi, labels, log2_work)
    lo = np.full(k, np.inf)
    np.minimum.at(lo, labels, log2_work)
    shift = np.where((hi > 1000.0) | (lo < -1000.0), np.floor(hi), 0.0)
    return nearest_mean(labels, np.exp2(log2_work - shift[labels]), medoids)


def nearest_mean(labels: np.ndarray, work: np.ndarray, medoids: np.ndarray) -> np.ndarray:
    """Per cluster, the member whose ``work`` (finite, linear) is nearest the members' mean:
    ``medoids[c]`` when it is one of the nearest, else the middle launch of those. Exact ties
    stay ties only in the caller's own units: the profile baselines pass instruction counts
    as they are, since a log2/exp2 round trip is inexact for most integers."""
    k = int(labels.max()) + 1
    mean = np.bincount(labels, weights=work, minlength=k) / np.bincount(labels, minlength=k)
    tied = _at_cluster_minimum(np.abs(work - mean[labels]), labels, k)
    return np.where(tied[medoids], medoids, _middle_member(tied, labels, k))


# ---------------------------------------------------------------------------------------
# files


def _atomic_write_text(path: Path, text: str) -> Path:
    return write_text_atomic(path, text, newline="")


def write_clusters_csv(path: str | Path, labels: np.ndarray, kernel_names: Sequence[str]) -> Path:
    """``clusters.csv``: invocation, kernel_name, cluster (one row per invocation, atomic)."""
    labels = np.asarray(labels, dtype=np.int64)
    if len(kernel_names) != labels.size:
        raise ValueError(f"{labels.size} labels but {len(kernel_names)} kernel names")
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["invocation", "kernel_name", "cluster"])
    for i, (name, c) in enumerate(zip(kernel_names, labels.tolist())):
        out.writerow([i, str(name), c])
    return _atomic_write_text(Path(path), buf.getvalue())


def write_silhouette_csv(path: str | Path, curve: Mapping[int, float]) -> Path:
    """``silhouette.csv``: k, score for every K of the sweep (atomic)."""
    lines = ["k,score"] + [f"{int(k)},{float(s)!r}" for k, s in sorted(curve.items())]
    return _atomic_write_text(Path(path), "\n".join(lines) + "\n")


def run_cluster_stage(
    embeddings: np.ndarray,
    kernel_names: Sequence[str],
    cfg: ClusterConfig | Mapping[str, Any] | None,
    out_dir: str | Path,
    random_state: int = 0,
) -> ClusterResult:
    """The pipeline's cluster step: cluster, then write ``clusters.csv`` and ``silhouette.csv``."""
    result = cluster_embeddings(embeddings, cfg, random_state)
    out_dir = Path(out_dir)
    write_clusters_csv(out_dir / "clusters.csv", result.labels, kernel_names)
    write_silhouette_csv(out_dir / "silhouette.csv", result.silhouette)
    return result
