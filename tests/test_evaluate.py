"""Evaluation metrics, the per-workload runner and report.md on tiny hand-built workloads."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gclsampler.evaluate import (
    EvaluationError,
    fit_methods,
    evaluate_workload,
    harmonic_mean,
    score_plan,
    summarize,
    suite_averages,
)
from gclsampler.plan import ClusterInfo, Sample, SamplingPlan, plan_from_labels
from gclsampler.workload import Workload
from test_baselines import make_profile


def _truth(cycles, time_ns, **metrics) -> pd.DataFrame:
    n = len(cycles)
    return pd.DataFrame({"invocation": np.arange(n), "kernel_name": ["k"] * n, "grid": ["(1,1,1)"] * n,
                         "block": ["(32,1,1)"] * n, "time_ns": np.asarray(time_ns, float),
                         "cycles": np.asarray(cycles, float), **metrics})


def test_error_zero_when_each_cluster_constant():
    # clusters {0,1,2} and {3,4}: every metric constant inside a cluster
    labels = np.array([0, 0, 0, 1, 1])
    truth = _truth([10, 10, 10, 70, 70], [5, 5, 5, 9, 9], ipc=[1.0, 1, 1, 2.5, 2.5],
                   l1_hit_rate=[.2, .2, .2, .9, .9], l2_hit_rate=[.5] * 3 + [.1] * 2,
                   achieved_occupancy=[.3] * 3 + [.8] * 2)
    plan = plan_from_labels("t", "x", labels, np.array([1, 4]), truth["kernel_name"].to_numpy())
    row = score_plan(plan, truth)
    assert row["error_cycles"] == 0.0  # integer-valued sums: exact
    for m in ("ipc", "l1_hit_rate", "l2_hit_rate", "achieved_occupancy"):
        assert row[f"error_{m}"] == pytest.approx(0.0, abs=1e-9)  # float means: rounding only
    assert row["n_simulated"] == 2
    assert math.isclose(row["speedup"], (15 + 18) / (5 + 9))


def test_hand_checked_error_and_rate_estimate():
    truth = _truth([10, 30, 20, 40], [1, 1, 1, 1], ipc=[1.0, 3.0, 2.0, 2.0])
    plan = SamplingPlan("t", "x", 4, [Sample(1, "k", 0, 2.0), Sample(2, "k", 1, 2.0)],
                        [ClusterInfo(0, 2), ClusterInfo(1, 2)])
    row = score_plan(plan, truth)
    # estimate 2*30 + 2*20 = 100 vs 100 -> 0; ipc: (2*3 + 2*2)/4 = 2.5 vs mean 2.0 -> 25 %
    assert row["cycles_est"] == 100 and row["error_cycles"] == 0
    assert math.isclose(row["error_ipc"], 25.0)
    assert math.isnan(row["error_l1_hit_rate"])  # column absent
    assert row["speedup"] == 2.0


def test_speedup_is_n_for_one_sample_of_equal_times():
    n = 37
    truth = _truth(np.full(n, 8.0), np.full(n, 3.0))
    plan = plan_from_labels("t", "x", np.zeros(n, dtype=int), np.array([5]), truth["kernel_name"].to_numpy())
    row = score_plan(plan, truth)
    assert math.isclose(row["speedup"], n)
    assert row["error_cycles"] == 0


def test_mismatched_lengths_raise():
    truth = _truth([1, 2, 3], [1, 1, 1])
    plan = plan_from_labels("t", "x", np.zeros(2, dtype=int), np.array([0]), np.array(["k", "k"]))
    with pytest.raises(EvaluationError, match="n_invocations"):
        score_plan(plan, truth)


def test_harmonic_mean():
    assert math.isclose(harmonic_mean([1, 2, 4]), 3 / (1 + 0.5 + 0.25))
    assert math.isnan(harmonic_mean([]))


def _write_workload(root, df_by_arch: dict[str, pd.DataFrame], arch: str = "turing"):
    root.mkdir(parents=True, exist_ok=True)
    (root / "profiles").mkdir(exist_ok=True)
    df_by_arch[arch].to_csv(root / "profile.csv", index=False)
    for a, df in df_by_arch.items():
        df.to_csv(root / "profiles" / f"{a}.csv", index=False)
    (root / "workload.json").write_text(json.dumps({"workload": root.name, "arch": arch, "synthetic": True,
                                                    "seed": 0, "archs": list(df_by_arch)}))
    return Workload.load(root)


def test_cross_arch_rows_and_seeds(tmp_path):
    t = make_profile(120, 0)
    a = t.copy()
    a["time_ns"] *= 0.7
    a["cycles"] *= np.linspace(0.6, 0.9, len(a))
    w = _write_workload(tmp_path / "toy", {"turing": t, "ampere": a})
    runs = fit_methods(w, ["pka", "random"], {"random": {"fraction": 0.2}}, n_seeds=3)
    assert [r.method for r in runs] == ["pka"] + ["random"] * 3
    rows = evaluate_workload(w, runs, ["turing", "ampere"])
    df = pd.DataFrame(rows)
    assert len(df) == 8
    assert set(df["arch"]) == {"turing", "ampere"}
    assert df.loc[df["arch"] == "ampere", "cross_arch"].all()
    # the same plan scored on another arch's truth gives that arch's speedup
    r = runs[0]
    amp = df[(df["method"] == "pka") & (df["arch"] == "ampere")].iloc[0]
    assert math.isclose(amp["speedup"], r.plan.speedup(a["time_ns"].to_numpy()))
    s = summarize(df)
    rnd = s[(s["method"] == "random") & (s["arch"] == "turing")].iloc[0]
    sp = df[(df["method"] == "random") & (df["arch"] == "turing")]["speedup"]
    assert rnd["n_seeds"] == 3
    assert math.isclose(rnd["speedup_mean"], sp.mean())
    assert math.isclose(rnd["speedup_hmean"], harmonic_mean(sp))
    avg = suite_averages(s)
    assert set(avg["method"]) == {"pka", "random"}


def test_missing_arch_truth_raises(tmp_path):
    w = _write_workload(tmp_path / "toy", {"turing": make_profile(30, 0)})
    runs = fit_methods(w, ["sieve"], {})
    with pytest.raises(EvaluationError, match="ada"):
        evaluate_workload(w, runs, ["turing", "ada"])


def test_gcl_without_embeddings_is_an_error(tmp_path):
    w = _write_workload(tmp_path / "toy", {"turing": make_profile(30, 0)})
    with pytest.raises(EvaluationError):
        fit_methods(w, ["gcl"], {})


def test_report_says_synthetic_and_writes_plots(tmp_path):
    t = make_profile(100, 1)
    w = _write_workload(tmp_path / "toy", {"turing": t, "ampere": t.assign(time_ns=t["time_ns"] * 2)})
    runs = fit_methods(w, ["sieve", "allegro"], {}, n_seeds=2)
    df = pd.DataFrame(evaluate_workload(w, runs, ["turing", "ampere"]))
    from gclsampler.report import SYNTHETIC_BANNER, write_report

    sil = pd.DataFrame({"k": [2, 3, 4], "score": [0.3, 0.6, 0.5]})
    rep = write_report(df, tmp_path / "out", histograms=[{
        "workload": "toy", "method": "sieve", "times_ns": t["time_ns"].to_numpy(),
        "labels": runs[0].labels, "representatives": runs[0].plan.invocations}],
        silhouette={"toy": sil})
    text = rep.read_text()
    assert SYNTHETIC_BANNER in "\n".join(text.splitlines()[:4])
    assert "| toy |" in text and "AVG" in text
    for png in ("speedup_vs_error", "error_per_workload", "speedup_per_workload", "clusters_toy_sieve",
                "silhouette"):
        p = tmp_path / "out" / "plots" / f"{png}.png"
        assert p.exists() and p.stat().st_size > 1000
    # not synthetic -> no banner
    rep2 = write_report(df.assign(synthetic=False), tmp_path / "out2")
    assert "SYNTHETIC" not in rep2.read_text()
