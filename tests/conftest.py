"""Shared fixtures. Heavy fixtures (synthetic workloads) are session-scoped and tiny."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "2")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
