"""plan.json contract: round-trip, byte determinism, and the accounting invariants."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.plan import PlanError, SamplingPlan, plan_from_labels


@st.composite
def labelled(draw):
    n = draw(st.integers(1, 200))
    k = draw(st.integers(1, min(n, 12)))
    labels = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    labels = np.unique(labels, return_inverse=True)[1]  # compact 0..K-1
    return labels


@given(labelled())
@settings(max_examples=60, deadline=None)
def test_first_member_plan_accounts_for_every_invocation(labels):
    k = labels.max() + 1
    reps = np.array([np.flatnonzero(labels == c)[0] for c in range(k)])
    names = np.array([f"k{i % 3}" for i in range(labels.size)])
    plan = plan_from_labels("w", "gcl", labels, reps, names).validate()
    assert plan.weights.sum() == pytest.approx(labels.size)
    assert sorted(plan.invocations.tolist()) == sorted(reps.tolist())
    ones = np.ones(labels.size)
    assert plan.estimate(ones) == pytest.approx(labels.size)


def test_round_trip_is_byte_identical(tmp_path):
    labels = np.array([0, 1, 0, 2, 1, 2, 2])
    plan = plan_from_labels("w", "gcl", labels, np.array([0, 1, 3]), np.array(list("abcdefg")), {"seed": 0})
    p = plan.save(tmp_path / "plan.json")
    again = SamplingPlan.load(p)
    assert again.to_json() == p.read_text()
    again.save(tmp_path / "plan2.json")
    assert (tmp_path / "plan2.json").read_bytes() == p.read_bytes()


def test_dropped_invocation_is_rejected(tmp_path):
    labels = np.array([0, 0, 1])
    plan = plan_from_labels("w", "gcl", labels, np.array([0, 2]), np.array(list("abc")))
    d = plan.to_dict()
    d["samples"][0]["weight"] = 1.0  # cluster 0 now only accounts for 1 of its 2 members
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(PlanError, match="cluster 0"):
        SamplingPlan.load(path)
    assert not list(tmp_path.glob(".*.tmp"))


def test_representative_outside_cluster_is_rejected():
    with pytest.raises(ValueError):
        plan_from_labels("w", "gcl", np.array([0, 1]), np.array([1, 0]), np.array(["a", "b"]))
