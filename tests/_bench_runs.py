"""Tiny SYNTHETIC data and evaluate.py-shaped run dirs for the bench/ scripts' tests (seconds, no training)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str):
    """Import ``bench/<name>.py`` as a module (bench/ is no package; its scripts import each other
    by name, so bench/ is on the path while it loads)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def tiny_phi2(data: Path):
    """A one-layer phi2 under ``data/phi2`` with a Turing profile and a second Turing run, and
    no other arch: the smallest suite workload the study scripts read."""
    from gclsampler.synth import generate
    from gclsampler.workload import Workload

    generate("phi2", data / "phi2", params=dict(layers=1, prompt=8, decode=2, trace_cap=8, sample_cap=24,
                                                sample_ctas=1, max_traced_ctas=1, archs=["turing", "turing_rerun"]),
             arch="turing", seed=3, progress=False, jobs=1)
    return Workload.load(data / "phi2")


def gcl_run(root: Path) -> tuple[Path, Path]:
    """(run dir, data dir): tiny_phi2 and the files evaluate.py leaves for gcl and gcl_paper
    (train/<w>[-paper]/embeddings.npy, plans/<w>/gcl[_paper].json). The embeddings are random
    rather than trained, which is all extra_samples, deviations, representatives and
    time_split need: they re-cluster whatever embeddings the plans were fitted on."""
    from gclsampler.evaluate import EvaluateConfig, fit_methods

    data, run = root / "data", root / "run"
    wl = tiny_phi2(data)
    rng = np.random.default_rng(0)
    for sub, attr in (("phi2", "embeddings"), ("phi2-paper", "paper_embeddings")):
        emb = rng.random((wl.n_invocations, 16)).astype(np.float32)
        setattr(wl, attr, emb)
        (run / "train" / sub).mkdir(parents=True)
        np.save(run / "train" / sub / "embeddings.npy", emb)
    for r in fit_methods(wl, ["gcl", "gcl_paper"], EvaluateConfig().method_params, n_seeds=1, seed0=0):
        r.plan.save(run / "plans" / "phi2" / f"{r.method}.json")
    return run, data
