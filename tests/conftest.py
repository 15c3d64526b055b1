"""Shared fixtures. Heavy fixtures (synthetic workloads) are session-scoped and tiny."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "2")

# A shell starts a background job (`pytest &`, `(pytest &)`) with SIGINT ignored, and Python then
# keeps it ignored: the tests that send themselves (or a child they start) a Ctrl-C failed there
# (5 of them, in every such run). They test Python's usual handler, so it is put back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def tiny_workload(tmp_path_factory):
    """A small SYNTHETIC phi2 workload (traces, kernelslist.g, profile.csv); never modify it."""
    from gclsampler.synth import generate

    d = tmp_path_factory.mktemp("tiny") / "phi2"
    # plain .traceg files (compress=""), whatever synth's default compression: tests edit them in place
    generate("phi2", d, params=dict(layers=1, prompt=8, decode=1, trace_cap=8, sample_cap=24, sample_ctas=1,
                                    max_traced_ctas=1, compress=""), arch="ampere", seed=3, progress=False, jobs=1)
    return d


@pytest.fixture
def wl_copy(tiny_workload, tmp_path):
    """A private copy of ``tiny_workload`` that a test may break."""
    import shutil

    dst = tmp_path / "wl"
    shutil.copytree(tiny_workload, dst)
    return dst
