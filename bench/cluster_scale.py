"""Cluster-stage scale check (run: ``python bench/cluster_scale.py``; ~1-2 min on 2 cores).

1. Wall time of the full silhouette sweep (K = 2..50) on 20k x 256 SYNTHETIC
   embeddings (Gaussian blobs, not trained embeddings), against the one-minute
   budget of issue 6: prints ``ratio = time / 60 s`` (below 1 meets it).
2. Sampled against exact silhouette on a smaller set: the estimator's gap on one
   fixed labelling (5 sample seeds) and its time ratio, then the whole sweep with
   ``sample_size`` below and above N (time ratio and both chosen K).
3. Stability: the K the sampled sweep picks over several seeds.

``--kernels M`` instead clusters a SYNTHETIC workload of M kernels, each launched in 3 shapes
with Zipf launch counts (``--n`` launches), as the defaults do: the K chosen, the share of
launches in clusters that mix kernels, the any-member cycle error under a made-up time per
shape (lognormal per kernel), against one cluster per kernel shape, and the wall time. This is
where the sweep's stopping rule and ``fit_size`` matter (docs/plans.md).

``--launches N`` instead measures the stage's cost in the number of launches: on the
``--kernels`` embeddings (100 kernels unless given) at N launches (try 1000000), the distinct-row
step (``cluster.distinct_rows``) against ``np.unique(axis=0)``, which it replaced (the same
arrays, and the time ratio), then the whole stage's wall time and peak traced memory.

``--launches N --workload DIR --embeddings FILE`` instead times ``gcl``'s whole fit (launch
features, clustering, time cut, plan) on a workload's profile and trained embeddings repeated
to N launches (each repeat's times jittered by 3 %, so the plan's representatives are told apart).

``--run RUN`` instead times the cluster stage (defaults) on the trained embeddings of an
``evaluate.py`` run (``RUN/train/<workload>/embeddings.npy``, the project encoder's), one call
per workload, and prints their total: what the stage costs on real embedding geometry.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from extra_samples import positive_int  # bench/ is the script's own directory

from gclsampler.cluster import ClusterConfig, cluster_embeddings, distinct_rows, silhouette_score
from gclsampler.plan import plan_from_labels
from gclsampler.score import any_member_error

# The silhouette sweep alone: blobs have no size vector, so gcl's work split (which would cut a
# random column at 0.5 and report hundreds of clusters) and the work_mean member are off.
SWEEP = dict(split_tolerance=0.0, time_split_share=0.0, representative="medoid")


def blobs(n: int, d: int, centres: int, seed: int) -> np.ndarray:
    """SYNTHETIC embeddings: ``centres`` Gaussian blobs of uneven size, plus repeated kernels."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, d)) * 4.0
    p = rng.dirichlet(np.ones(centres))
    x = c[rng.choice(centres, size=n, p=p)] + rng.normal(size=(n, d))
    dup = rng.random(n) < 0.3  # repeated kernels give identical embeddings
    x[dup] = x[rng.integers(0, n, dup.sum())]
    return x.astype(np.float32)


def many_kernels(n: int, kernels: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SYNTHETIC embeddings of ``kernels`` kernels x 3 launch shapes, Zipf(0.8) launch counts;
    also each launch's shape id and a made-up time per launch."""
    rng = np.random.default_rng(seed)
    shapes = rng.normal(size=(kernels, 1, 64)) * 4 + rng.normal(size=(kernels, 3, 64)) * 0.5
    p = 1 / np.arange(1, kernels + 1) ** 0.8
    kernel = rng.choice(kernels, size=n, p=p / p.sum())
    shape = kernel * 3 + rng.integers(0, 3, n)
    time_of = (np.exp(rng.normal(size=kernels) * 1.5)[:, None] * np.array([1.0, 1.1, 1.2])).reshape(-1)
    return shapes.reshape(-1, 64)[shape].astype(np.float32), shape, time_of[shape]


def any_member(labels: np.ndarray, times: np.ndarray) -> float:
    """``score.any_member_error`` of one-member-per-cluster plan with these labels (which member
    the plan names does not matter: every draw redraws it)."""
    labels = np.unique(labels, return_inverse=True)[1]
    reps = np.unique(labels, return_index=True)[1]
    names = np.array(["k"] * labels.size)
    return any_member_error(plan_from_labels("many_kernels", "bench", labels, reps, names), labels, times)


def kernels_study(n: int, kernels: int) -> None:
    print(f"SYNTHETIC embeddings and times ({kernels} kernels x 3 shapes, {n} launches); timings on this machine")
    x, shape, times = many_kernels(n, kernels, 0)
    t = time.perf_counter()
    r = cluster_embeddings(x, ClusterConfig(**SWEEP), random_state=0)
    dt = time.perf_counter() - t
    kernel = shape // 3
    mixed = [c for c in range(r.k) if np.unique(kernel[r.labels == c]).size > 1]
    print(f"{len(np.unique(x, axis=0))} distinct embeddings, {np.unique(kernel).size} kernels launched")
    print(f"defaults: K={r.k} (swept to {max(r.silhouette)}) in {dt:.1f} s; launches in mixed-kernel clusters "
          f"{np.isin(r.labels, mixed).mean() * 100:.1f} %; any-member error {any_member(r.labels, times):.2f} % "
          f"at {n / r.k:.1f}x")
    ref = np.unique(shape, return_inverse=True)[1]
    print(f"reference, one cluster per kernel shape: K={ref.max() + 1}; any-member error "
          f"{any_member(ref, times):.2f} % at {n / (ref.max() + 1):.1f}x")


def launches_study(n: int, kernels: int) -> None:
    import tracemalloc

    print(f"SYNTHETIC embeddings ({kernels} kernels x 3 shapes, {n} launches); timings on this machine")
    x, _, _ = many_kernels(n, kernels, 0)
    x64 = x.astype(np.float64)  # what the stage dedupes
    t = time.perf_counter()
    want = np.unique(x64, axis=0, return_inverse=True, return_counts=True)
    t_np = time.perf_counter() - t
    t = time.perf_counter()
    got = distinct_rows(x64)
    t_ours = time.perf_counter() - t
    same = (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1].reshape(-1))
            and np.array_equal(got[2], want[2]))
    print(f"distinct rows ({got[0].shape[0]} of {n}): np.unique(axis=0) {t_np:.2f} s, distinct_rows {t_ours:.2f} s, "
          f"identical output: {same}; ratio np.unique / distinct_rows = {t_np / t_ours:.1f}")
    del x64, want, got
    t = time.perf_counter()
    r = cluster_embeddings(x, ClusterConfig(**SWEEP), random_state=0)
    dt = time.perf_counter() - t
    tracemalloc.start()  # a second run: tracing slows numpy's allocations down
    cluster_embeddings(x, ClusterConfig(**SWEEP), random_state=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"cluster stage: K={r.k} in {dt:.1f} s; peak traced memory {peak / 2**20:.0f} MiB "
          f"({peak / n:.0f} bytes per launch; the float32 embeddings themselves {x.nbytes / 2**20:.0f} MiB)")


def fail(message: str):
    """Bad input: one line on stderr and exit status 2."""
    print(f"cluster_scale: {message}", file=sys.stderr)
    raise SystemExit(2)


def tiled_fit(wl: Path, emb_file: Path, n: int) -> None:
    import resource

    from gclsampler.errors import GclError
    from gclsampler.samplers import make_sampler
    from gclsampler.workload import Workload

    try:
        base = Workload.load(wl)
    except GclError as exc:
        fail(str(exc))
    try:
        emb = np.load(emb_file)
    except (OSError, ValueError) as exc:
        fail(f"{emb_file}: {exc}")
    if emb.shape[0] != base.n_invocations:
        fail(f"{emb_file}: {emb.shape[0]} rows for {base.n_invocations} invocations in {wl}")
    idx = np.arange(n) % base.n_invocations
    prof = base.profile.iloc[idx].reset_index(drop=True)
    jitter = np.random.default_rng(0).normal(1.0, 0.03, n)
    prof["time_ns"] = prof["time_ns"].to_numpy(float) * jitter
    prof["cycles"] = prof["cycles"].to_numpy(float) * jitter
    prof["invocation"] = np.arange(n)
    w = Workload(f"{base.name}x{n}", prof, None, base.arch, base.synthetic, emb[idx], meta=base.meta)
    print(f"{wl.name} ({'SYNTHETIC' if base.synthetic else base.data_kind or 'unlabelled'} data) repeated to {n} "
          f"launches, {emb.shape[1]}-d embeddings; timings on this machine")
    t = time.perf_counter()
    plan = make_sampler("gcl").fit(w)
    dt = time.perf_counter() - t
    print(f"gcl fit: {len(plan.samples)} representatives in {dt:.1f} s; this process's peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB (the inputs included)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=positive_int, default=20000)
    ap.add_argument("--exact-n", type=int, default=6000)
    ap.add_argument("--sample", type=int, default=2000, help="sample_size for the sampled-vs-exact comparison")
    ap.add_argument("--k-max", type=int, default=50)
    ap.add_argument("--seeds", type=int, default=4, help="seeds for the K-stability check")
    ap.add_argument("--kernels", type=positive_int, help="the many-kernels study with this many kernels instead")
    ap.add_argument("--launches", type=positive_int, help="the cost-in-launches study at this many launches instead")
    ap.add_argument("--workload", type=Path, help="with --launches and --embeddings: time gcl's fit on this workload repeated")
    ap.add_argument("--embeddings", type=Path, help="the workload's embeddings.npy, for --workload")
    ap.add_argument("--run", type=Path, help="time the cluster stage on this evaluate.py run's trained embeddings instead")
    args = ap.parse_args()
    if args.k_max != 0 and args.k_max < 2:  # ClusterConfig's own refusal was a traceback
        ap.error(f"--k-max: expected 0 (no cap) or an integer >= 2, got {args.k_max}")
    if args.run is not None:
        time_trained(args.run)
        return
    if args.workload is not None:
        if args.launches is None or args.embeddings is None:
            ap.error("--workload needs --launches and --embeddings")
        tiled_fit(args.workload, args.embeddings, args.launches)
        return
    if args.launches is not None:
        launches_study(args.launches, args.kernels or 100)
        return
    if args.kernels is not None:
        kernels_study(args.n, args.kernels)
        return
    print("SYNTHETIC embeddings (Gaussian blobs); timings on this machine, not hardware measurements")

    x = blobs(args.n, 256, 24, 0)
    t = time.perf_counter()
    r = cluster_embeddings(x, ClusterConfig(k_max=args.k_max, **SWEEP), random_state=0)
    dt = time.perf_counter() - t
    print(f"sweep n={args.n} d=256 K=2..{args.k_max}: {dt:.1f} s, chose K={r.k} "
          f"(silhouette {r.score:.4f}, sampled={r.sampled}, scored on {r.n_scored}); ratio to 60 s budget = {dt / 60:.2f}")

    # sampled vs exact: (a) the estimator on one fixed labelling, (b) the whole sweep
    x = blobs(args.exact_n, 256, 12, 1)
    k_max = min(args.k_max, 20)
    t = time.perf_counter()
    exact = cluster_embeddings(x, ClusterConfig(k_max=k_max, sample_size=args.exact_n, **SWEEP), random_state=0)
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    samp = cluster_embeddings(x, ClusterConfig(k_max=k_max, sample_size=args.sample, **SWEEP), random_state=0)
    t_samp = time.perf_counter() - t
    t = time.perf_counter()
    s_exact = silhouette_score(x, exact.labels)
    t1 = time.perf_counter() - t
    t = time.perf_counter()
    gaps = [abs(silhouette_score(x, exact.labels, args.sample, seed) - s_exact) for seed in range(5)]
    t2 = (time.perf_counter() - t) / 5
    print(f"n={args.exact_n}, labelling with K={exact.k}: exact silhouette {s_exact:.4f} in {t1:.2f} s; "
          f"sampled({args.sample}) max |gap| over 5 seeds {max(gaps):.4f} in {t2:.2f} s; time ratio {t2 / t1:.3f}")
    print(f"n={args.exact_n} sweep K=2..{k_max}: exact {t_exact:.1f} s (K={exact.k}), sampled({args.sample}) "
          f"{t_samp:.1f} s (K={samp.k}); time ratio sampled/exact = {t_samp / t_exact:.2f}")

    # 3. stability of the chosen K over seeds (multi-start + re-scoring is meant to give this)
    chosen = [cluster_embeddings(x, ClusterConfig(k_max=k_max, sample_size=args.sample, **SWEEP), random_state=s).k
              for s in range(1, 1 + args.seeds)]
    print(f"n={args.exact_n} sampled({args.sample}) sweep over seeds 1..{args.seeds}: chosen K {chosen}; "
          f"share equal to the exact sweep's K={exact.k}: {sum(k == exact.k for k in chosen) / len(chosen):.2f}")


def time_trained(run: Path) -> None:
    files = sorted(f for f in run.glob("train/*/embeddings.npy") if not f.parent.name.endswith("-paper"))
    if not files:
        fail(f"{run}: no train/<workload>/embeddings.npy (an evaluate.py out_dir?)")
    total = 0.0
    for f in files:
        x = np.load(f)
        t = time.perf_counter()
        r = cluster_embeddings(x, None, random_state=0)
        dt = time.perf_counter() - t
        total += dt
        print(f"{f.parent.name}: {x.shape[0]} invocations, K={r.k} in {dt:.2f} s")
    print(f"cluster stage on {len(files)} workloads' trained embeddings: {total:.2f} s")


if __name__ == "__main__":
    main()
