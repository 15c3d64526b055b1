"""plan.json contract: round-trip, byte determinism, and the accounting invariants."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.plan import ClusterInfo, PlanError, Sample, SamplingPlan, plan_from_labels


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


@pytest.mark.parametrize("invocation", [-1, 2])
def test_a_sample_outside_the_invocations_is_rejected(invocation):
    """Invocations are 0 .. n_invocations-1: a sample at n_invocations names a launch that does
    not exist (estimate() then indexed past the end of the times)."""
    for inv in (0, 1):
        SamplingPlan("w", "m", 2, [Sample(inv, "k", 0, 2.0)], [ClusterInfo(0, 2)]).validate()
    bad = SamplingPlan("w", "m", 2, [Sample(invocation, "k", 0, 2.0)], [ClusterInfo(0, 2)])
    with pytest.raises(PlanError, match=r"invocation outside \[0, 2\)"):
        bad.validate()


@pytest.mark.parametrize("field", ["workload", "method", "kernel_name"])
def test_a_lone_surrogate_escape_is_refused_at_load(tmp_path, field):
    """JSON's "\\ud800" decodes to a lone surrogate: plan show crashed printing it (UnicodeEncodeError)."""
    plan = plan_from_labels("w", "gcl", np.array([0, 0, 1]), np.array([0, 2]), np.array(list("abc")))
    d = plan.to_dict()
    (d["samples"][1] if field == "kernel_name" else d)[field] = "k\ud800"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))  # ensure_ascii: the escape, as another tool writes it
    where = "samples[1].kernel_name" if field == "kernel_name" else field
    with pytest.raises(PlanError, match=re.escape(where) + r": not valid Unicode \(a lone surrogate '\\ud800' at character 1\)"):
        SamplingPlan.load(path)


@pytest.mark.parametrize("bound, ok", [(-1.0, False), (-1e-300, False), (0.0, True), (0.05, True), (None, True)])
def test_a_cluster_error_bound_is_never_negative(tmp_path, bound, ok):
    """A bound on a relative error; plan show printed -100.00% for -1."""
    plan = plan_from_labels("w", "gcl_stem", np.array([0, 0, 1]), np.array([0, 2]), np.array(list("abc")))
    d = plan.to_dict()
    d["clusters"][1]["error_bound"] = bound
    path = tmp_path / "p.json"
    path.write_text(json.dumps(d))
    if ok:
        assert SamplingPlan.load(path).clusters[1].error_bound == bound
    else:
        with pytest.raises(PlanError, match=r"clusters\[1\]\.error_bound: .* is negative"):
            SamplingPlan.load(path)


def test_many_clusters_each_within_tolerance_cannot_add_up_to_a_miscount():
    """Each cluster's weights may miss its size by rounding (1e-6 for a small cluster), but 1000
    such misses would add up to a thousandth of an invocation: the whole plan must still sum to
    n_invocations, so the per-cluster tolerance cannot be spent a thousand times."""
    from gclsampler.plan import ClusterInfo, Sample

    n = 1000
    plan = SamplingPlan("w", "m", n, [Sample(i, "k", i, 1.0 + 9e-7) for i in range(n)],
                        [ClusterInfo(i, 1) for i in range(n)])
    with pytest.raises(PlanError, match="weights sum to"):
        plan.validate()
    exact = SamplingPlan("w", "m", n, [Sample(i, "k", i, 1.0) for i in range(n)], [ClusterInfo(i, 1) for i in range(n)])
    assert exact.validate() is exact


@st.composite
def plans(draw):
    """Any valid plan: clusters of 1..50 members, 1..size samples each weighted size/m (not exact
    in binary), names with any text, optional error bounds, a small config."""
    from gclsampler.plan import ClusterInfo, Sample

    sizes = draw(st.lists(st.integers(1, 50), min_size=1, max_size=12))
    n = sum(sizes)
    order = draw(st.permutations(range(n)))
    samples, clusters, start = [], [], 0
    for cid, size in enumerate(sizes):
        members = order[start:start + size]
        start += size
        m = draw(st.integers(1, size))
        name = draw(st.text(min_size=1, max_size=20))
        samples += [Sample(int(inv), name, cid, size / m) for inv in members[:m]]
        bound = draw(st.none() | st.floats(0, 10, allow_nan=False))
        clusters.append(ClusterInfo(cid, size, bound))
    config = draw(st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8) | st.booleans(), max_size=3))
    return SamplingPlan(draw(st.text(max_size=10)), draw(st.text(min_size=1, max_size=10)), n, samples, clusters,
                        config, draw(st.booleans()))


@given(plans(), st.randoms(use_true_random=False))
@settings(max_examples=80, deadline=None)
def test_any_plan_round_trips_exactly_and_its_bytes_ignore_sample_order(tmp_path_factory, plan, rnd):
    """load(save(plan)) gives back every field exactly (weights to the last bit), and the file
    form does not depend on the order the sampler listed samples and clusters in."""
    path = tmp_path_factory.mktemp("rt") / "plan.json"
    plan.save(path)
    again = SamplingPlan.load(path)
    key = lambda s: s.invocation  # noqa: E731
    assert sorted(again.samples, key=key) == sorted(plan.samples, key=key)
    assert sorted(again.clusters, key=lambda c: c.id) == sorted(plan.clusters, key=lambda c: c.id)
    assert (again.workload, again.method, again.n_invocations, again.config, again.synthetic) == \
        (plan.workload, plan.method, plan.n_invocations, plan.config, plan.synthetic)
    shuffled = SamplingPlan(plan.workload, plan.method, plan.n_invocations, rnd.sample(plan.samples, len(plan.samples)),
                            rnd.sample(plan.clusters, len(plan.clusters)), plan.config, plan.synthetic)
    assert shuffled.to_json() == path.read_text()


def test_representative_outside_cluster_is_rejected():
    with pytest.raises(ValueError):
        plan_from_labels("w", "gcl", np.array([0, 1]), np.array([1, 0]), np.array(["a", "b"]))


@pytest.mark.parametrize("config", [[], 0, False, ""])
def test_a_config_that_is_no_object_is_refused_even_when_empty(tmp_path, config):
    """`config` must be an object; an empty list, 0, false or "" was taken as {} (coerced, and
    saved back as {}), while a non-empty list was refused."""
    plan = plan_from_labels("w", "gcl", np.array([0, 0, 1]), np.array([0, 2]), np.array(list("abc")))
    d = plan.to_dict()
    d["config"] = config
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    with pytest.raises(PlanError, match=r"plan\.json: config: expected an object, found a JSON "):
        SamplingPlan.load(path)
    d["config"] = None  # null: no settings recorded, as when the key is absent
    path.write_text(json.dumps(d))
    assert SamplingPlan.load(path).config == {}
