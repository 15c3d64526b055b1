"""StemRootSampler (plans, contract with gclsampler.plan) and the `gclsampler stem` command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import gclsampler.cli as cli
from gclsampler.cli import main


@pytest.fixture(autouse=True)
def _only_stem_cli(monkeypatch):
    """Build the real dispatcher with only this group, so the test does not import torch."""
    monkeypatch.setattr(cli, "GROUPS", {"stem": cli.GROUPS["stem"]})
from gclsampler.plan import SamplingPlan
from gclsampler.profile import write_profile
from gclsampler.stem import StemRootSampler, stem_root
from gclsampler.workload import Workload


def _profile(rng, n_per=(600, 300, 40, 8)):
    """SYNTHETIC profile: kernel A has two time peaks, B one wide, C constant, D tiny."""
    t = np.concatenate([
        np.where(rng.random(n_per[0]) < 0.6, rng.normal(10_000, 200, n_per[0]), rng.normal(30_000, 600, n_per[0])),
        rng.gamma(3.0, 1500.0, n_per[1]),
        np.full(n_per[2], 2048.0),
        rng.normal(500, 50, n_per[3]),
    ])
    names = np.repeat(["gemm_A", "softmax_B", "copy_C", "reduce_D"], n_per)
    p = rng.permutation(t.size)
    t, names = t[p], names[p]
    n = t.size
    return pd.DataFrame({"invocation": np.arange(n), "kernel_name": names, "grid": "(80,1,1)",
                         "block": "(256,1,1)", "time_ns": np.round(t, 3), "cycles": np.round(t * 1.4)})


def test_sampler_plan_contract(rng):
    prof = _profile(rng)
    wl = Workload(name="synthetic_mix", profile=prof, synthetic=True)
    s = StemRootSampler(epsilon=0.05, random_state=3)
    assert s.name == "stem_root" and StemRootSampler.stochastic is True
    plan = s.fit(wl)
    plan.validate()
    res = s.result_
    assert plan.method == "stem_root" and plan.synthetic and plan.workload == "synthetic_mix"
    assert [c.id for c in plan.clusters] == list(range(res.n_leaves))
    assert [c.size for c in plan.clusters] == res.leaf_sizes.tolist()
    assert all(c.error_bound is not None for c in plan.clusters)
    np.testing.assert_array_equal(s.labels_, res.leaf)
    for smp in plan.samples:  # each sample lies in its cluster and carries its own name
        assert res.leaf[smp.invocation] == smp.cluster
        assert prof["kernel_name"][smp.invocation] == smp.kernel_name
    cfg = plan.config
    for key, val in (("epsilon", 0.05), ("z", 1.96), ("min_samples", 1), ("root", True), ("random_state", 3)):
        assert cfg[key] == val
    assert cfg["error_bound"] == pytest.approx(res.error_bound) and cfg["error_bound"] <= 0.05
    # the plan's estimate equals the result's, and is close to the truth
    t = prof["time_ns"].to_numpy()
    assert plan.estimate(t) == pytest.approx(res.estimate(t))
    assert abs(plan.estimate(t) / t.sum() - 1) < 0.05
    # kernel C (constant) is represented by exactly one sample carrying all 40 invocations
    c_samples = [x for x in plan.samples if x.kernel_name == "copy_C"]
    assert len(c_samples) == 1 and c_samples[0].weight == 40


def test_round_trip_through_json(tmp_path, rng):
    prof = _profile(rng)
    plan = StemRootSampler(epsilon=0.1, min_samples=30, random_state=0).fit(Workload("w", prof))
    back = SamplingPlan.load(plan.save(tmp_path / "plan.json"))
    assert back.to_json() == plan.to_json()


def test_plain_stem_has_one_cluster_per_kernel(rng):
    prof = _profile(rng)
    plan = StemRootSampler(root=False).fit(Workload("w", prof))
    assert len(plan.clusters) == prof["kernel_name"].nunique()


def test_same_as_function_on_kernel_names(rng):
    prof = _profile(rng)
    s = StemRootSampler(epsilon=0.03, random_state=5)
    s.fit(Workload("w", prof))
    direct = stem_root(prof["time_ns"].to_numpy(), prof["kernel_name"].to_numpy(), epsilon=0.03, random_state=5)
    np.testing.assert_array_equal(s.result_.invocations, direct.invocations)
    np.testing.assert_array_equal(s.result_.weights, direct.weights)


def test_cli_plan_is_byte_identical_and_summarised(tmp_path, rng, capsys):
    wdir = tmp_path / "wl"
    write_profile(_profile(rng), wdir / "profile.csv")
    (wdir / "workload.json").write_text(json.dumps({"workload": "mix", "synthetic": True}))
    args = ["stem", str(wdir / "profile.csv"), "--epsilon", "0.05", "--seed", "0", "--out"]
    assert main(args + [str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert main(args + [str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    plan = SamplingPlan.load(tmp_path / "a.json")
    assert plan.workload == "mix" and plan.synthetic
    assert "SYNTHETIC" in out and "kernel names 4" in out and "expected speedup" in out
    assert f"samples {len(plan.samples)} invocations" in out
    assert "scope global: the bound covers the workload's total time" in out  # the default, said aloud
    assert plan.config["scope"] == "global" and plan.config["bounded"] == "the workload's total time"
    # another seed, another draw
    assert main(["stem", str(wdir / "profile.csv"), "--seed", "1", "--out", str(tmp_path / "c.json")]) == 0
    assert (tmp_path / "c.json").read_bytes() != (tmp_path / "a.json").read_bytes()
    assert main(["stem", str(wdir / "profile.csv"), "--no-root", "--min-samples", "30", "--z", "2.58",
                 "--out", str(tmp_path / "d.json")]) == 0
    d = SamplingPlan.load(tmp_path / "d.json")
    assert len(d.clusters) == 4 and d.config["min_samples"] == 30 and d.config["z"] == 2.58
    capsys.readouterr()
    assert main(["stem", str(wdir / "profile.csv"), "--scope", "group", "--out", str(tmp_path / "e.json")]) == 0
    assert "scope group: the bound covers the total time of each group" in capsys.readouterr().out
    e = SamplingPlan.load(tmp_path / "e.json")
    assert e.config["scope"] == "group" and len(e.samples) >= len(plan.samples)


def test_cli_bad_epsilon_is_one_line(tmp_path, rng, capsys):
    write_profile(_profile(rng), tmp_path / "profile.csv")
    assert main(["stem", str(tmp_path / "profile.csv"), "--epsilon", "-1", "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--epsilon: " in err and "\n" not in err
    assert not (tmp_path / "p.json").exists()


def test_help_does_not_credit_the_paper_with_the_global_scope(capsys):
    """--help said scope global was "as in the STEM paper"; the paper bounds each kernel's cluster
    set and unions them (Theorem 3.1), which is scope group (docs/stem.md, conf/stem/default.yaml)."""
    with pytest.raises(SystemExit) as exc:
        main(["stem", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "global, default, as in the STEM paper" not in text
    assert "--scope group, the STEM paper's" in text
