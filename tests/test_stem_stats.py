"""Statistical check of STEM's promise: P(|estimate - total| / total > epsilon) <= 5% at z = 1.96.

A plan is bounded when, over 200 seeded draws, the realised relative error of the
total exceeds epsilon in at most 5 % of them (10 of 200). The fast test draws 200
generated (SYNTHETIC) workloads of 5-15 kernel names with 1-3 time peaks each, one
draw each. The slow tests redraw one plan 200 times (``stem_draw``: same leaves and
sizes, another seed) on the issue's data: 1M SYNTHETIC invocations from
``bench/stem_scale.py``'s generator; the STEM-AE artifact's measured nsys times
(``STEM_AE_DIR`` = a local copy of the artifact, skipped without); and every
synthetic suite workload (``GCLSAMPLER_SUITE_DIR`` = a directory of ``gclsampler synth
NAME --out DIR/NAME`` outputs, skipped without), for ``stem_root`` and ``gcl_stem``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from gclsampler.stem import stem_draw, stem_root

DRAWS = 200
ALLOWED = 10  # 5 % of 200
CALIBRATED = 19  # a predicted bound is exceeded ~5 % of the time: Binomial(200, 0.05) < 20 w.p. 99.7 %
EPS = 0.05
SUITE = ["phi2", "pythia", "qwen1_5", "3mm", "lu", "bfs", "cfd", "lud", "nw", "backprop", "alexnet"]


def _workload(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(10_000 + seed)
    times, names = [], []
    for k in range(int(rng.integers(5, 15))):
        n = int(rng.integers(40, 250))
        peaks = int(rng.integers(1, 4))
        mus = rng.uniform(5.0, 500.0, peaks)
        cov = rng.uniform(0.02, 0.3, peaks)
        which = rng.integers(0, peaks, n)
        times.append(np.abs(rng.normal(mus[which], cov[which] * mus[which])))
        names += [f"kernel_{k}"] * n
    t, g = np.concatenate(times), np.array(names)
    p = rng.permutation(t.size)
    return t[p], g[p]


@pytest.mark.slow
def test_error_exceeds_epsilon_in_at_most_5_percent_of_draws():
    keys = [("stem_global", False, "global"), ("root_global", True, "global"), ("stem_group", False, "group"),
            ("root_group", True, "group")]
    over_eps = dict.fromkeys([k for k, _, _ in keys], 0)
    over_own = dict.fromkeys([k for k, _, _ in keys], 0)
    for seed in range(DRAWS):
        t, g = _workload(seed)
        total = t.sum()
        for key, root, scope in keys:
            res = stem_root(t, g, epsilon=EPS, z=1.96, root=root, scope=scope, random_state=seed)
            err = abs(res.estimate(t) - total) / total
            assert res.error_bound <= EPS + 1e-12
            over_eps[key] += err > EPS
            over_own[key] += err > res.error_bound
    assert all(v <= ALLOWED for v in over_eps.values()), over_eps
    # plain STEM with one joint bound on the total is the sharp case: its predicted bound
    # is close to epsilon, so it must actually miss sometimes (a bound never reached
    # would be looser than the one claimed)
    assert over_eps["stem_global"] >= 1, over_eps
    # the predicted bound is calibrated: exceeded in ~5% of draws, not far more or far less
    assert all(1 <= v <= CALIBRATED for v in over_own.values()), over_own


def _redraws(res, t: np.ndarray) -> np.ndarray:
    """Relative error of the total over DRAWS seeded draws of one plan."""
    total = t.sum()
    errs = []
    for s in range(DRAWS):
        inv, w = stem_draw(res, s)
        errs.append(abs(float(np.dot(w, t[inv])) / total - 1.0))
    return np.asarray(errs)


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["global", "group"])
def test_bound_on_a_million_synthetic_invocations(scope):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from stem_scale import generate

    t, names = generate(1_000_000, 200, 0)
    res = stem_root(t, names, epsilon=EPS, scope=scope, random_state=0)
    errs = _redraws(res, t)
    assert (errs > EPS).sum() <= ALLOWED, (errs > EPS).sum()
    assert (errs > res.error_bound).sum() <= CALIBRATED


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("STEM_AE_DIR"), reason="STEM_AE_DIR (a local copy of the STEM-AE artifact) not set")
@pytest.mark.parametrize("scope", ["global", "group"])
def test_bound_on_the_stem_ae_nsys_times(scope):
    import pandas as pd

    df = pd.read_csv(Path(os.environ["STEM_AE_DIR"]) / "figure1" / "runtime-example.csv", encoding="utf-8-sig")
    t = np.concatenate([df[c].dropna().to_numpy(dtype=np.float64) for c in df.columns])
    g = np.concatenate([np.full(df[c].notna().sum(), str(c)) for c in df.columns])
    res = stem_root(t, g, epsilon=EPS, scope=scope, random_state=0)
    assert (_redraws(res, t) > EPS).sum() <= ALLOWED


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gcl_stem_bound_on_generated_workloads(seed):
    """gcl_stem's own path (silhouette k-means on embeddings, then STEM+ROOT inside each cluster)
    keeps STEM's promise without any environment variable: one plan of a generated workload
    (5-15 kernel names, 1-3 time peaks each), redrawn 200 times. The embeddings stand in for a
    trained RGCN's that cannot tell two kernels apart: names are paired, each pair gets one
    one-hot code plus noise, so a cluster holds two names' time distributions and STEM+ROOT
    must size it as such. The stand-in has no size vector, so the work split and work_mean
    representative (which read it) are off.

    Threshold: a calibrated 5 % bound is exceeded in Binomial(200, 0.05) draws, at most 19 with
    probability 99.7 % (CALIBRATED); ALLOWED (10), which the name-strata tests use, would fail a
    calibrated plan about one time in three. Over 1000 draws of seeds 0-11 these plans miss
    epsilon in 0.2-4.4 % and their own bound in 4.1-6.2 %."""
    import pandas as pd

    from gclsampler.samplers import GclStemSampler
    from gclsampler.workload import Workload

    t, g = _workload(seed)
    codes = np.unique(g, return_inverse=True)[1] // 2
    rng = np.random.default_rng(seed)
    emb = np.eye(codes.max() + 1)[codes] + rng.normal(0.0, 0.05, (t.size, codes.max() + 1))
    prof = pd.DataFrame({"invocation": np.arange(t.size), "kernel_name": g, "time_ns": t})
    sampler = GclStemSampler(cluster=dict(k_max=16, representative="medoid", split_tolerance=0.0), epsilon=EPS,
                             strata="gcl", random_state=0)
    sampler.fit(Workload(f"generated{seed}", prof, embeddings=emb, synthetic=True))
    errs = _redraws(sampler.stem_, t)
    assert sampler.stem_.error_bound <= EPS + 1e-12
    assert (errs > EPS).sum() <= CALIBRATED, (errs > EPS).sum()
    assert 1 <= (errs > sampler.stem_.error_bound).sum() <= CALIBRATED


def _suite_profile(name: str):
    from gclsampler.profile import read_profile

    path = Path(os.environ["GCLSAMPLER_SUITE_DIR"]) / name / "profile.csv"
    if not path.exists():
        pytest.skip(f"{path} not generated (gclsampler synth {name} --out ...)")
    return read_profile(path)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("GCLSAMPLER_SUITE_DIR"), reason="GCLSAMPLER_SUITE_DIR not set")
@pytest.mark.parametrize("name", SUITE)
def test_bound_on_every_synthetic_suite_workload(name):
    """stem_root on kernel names, and gcl_stem on clusters of a stand-in for the embeddings.

    gcl_stem's own code path runs (silhouette k-means, then STEM+ROOT per cluster); the
    embeddings are the 12 PKA metrics of the profile (log1p, standardised) instead of a
    trained RGCN's, which would take minutes per workload to train.
    """
    from gclsampler.profile import PKA_METRICS
    from gclsampler.samplers import GclStemSampler
    from gclsampler.stem import StemRootSampler
    from gclsampler.workload import Workload

    prof = _suite_profile(name)
    t = prof["time_ns"].to_numpy(dtype=np.float64)
    s = StemRootSampler(epsilon=EPS, random_state=0)
    s.fit(Workload(name, prof, synthetic=True))
    assert (_redraws(s.result_, t) > EPS).sum() <= ALLOWED
    x = np.log1p(prof[[c for c in PKA_METRICS if c in prof.columns]].to_numpy(dtype=np.float64))
    emb = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)
    g = GclStemSampler(cluster=dict(k_max=min(12, max(2, len(prof) - 1))), epsilon=EPS, strata="gcl",
                       random_state=0)  # the GCL-cluster path (auto may fall back to the names)
    g.fit(Workload(name, prof, embeddings=emb, synthetic=True))
    assert (_redraws(g.stem_, t) > EPS).sum() <= ALLOWED
