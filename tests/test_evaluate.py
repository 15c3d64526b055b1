"""Evaluation metrics, the per-workload runner and report.md on tiny hand-built workloads."""

from __future__ import annotations

import json
import shutil
import math
import re
from pathlib import Path

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
from gclsampler.errors import GclError
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
    runs = fit_methods(w, ["sieve", "random"], {"random": {"fraction": 0.2}}, n_seeds=3)
    assert [r.method for r in runs] == ["sieve"] + ["random"] * 3
    rows = evaluate_workload(w, runs, ["turing", "ampere"])
    df = pd.DataFrame(rows)
    assert len(df) == 8
    assert set(df["arch"]) == {"turing", "ampere"}
    assert df.loc[df["arch"] == "ampere", "cross_arch"].all()
    # the same plan scored on another arch's truth gives that arch's speedup
    r = runs[0]
    amp = df[(df["method"] == "sieve") & (df["arch"] == "ampere")].iloc[0]
    assert math.isclose(amp["speedup"], r.plan.speedup(a["time_ns"].to_numpy()))
    s = summarize(df)
    rnd = s[(s["method"] == "random") & (s["arch"] == "turing")].iloc[0]
    sp = df[(df["method"] == "random") & (df["arch"] == "turing")]["speedup"]
    assert rnd["n_seeds"] == 3
    assert math.isclose(rnd["speedup_mean"], sp.mean())
    assert math.isclose(rnd["speedup_hmean"], harmonic_mean(sp))
    avg = suite_averages(s)
    assert set(avg["method"]) == {"sieve", "random"}
    # one-per-cluster deterministic plans get the any-member error; seeded ones do not
    assert df.loc[df["method"] == "sieve", "error_cycles_any_member"].notna().all()
    assert df.loc[df["method"] == "random", "error_cycles_any_member"].isna().all()
    # the spread comes from the profile the plan was fitted on: one value for every arch it is scored on
    from gclsampler.score import representative_spread

    sieve = df[df["method"] == "sieve"]
    want = representative_spread(runs[0].plan, t["time_ns"].to_numpy(), runs[0].labels)[0]
    assert sieve["spread_sd"].tolist() == pytest.approx([want, want])
    assert s.loc[(s["method"] == "sieve") & (s["arch"] == "turing"), "spread_sd"].iloc[0] == pytest.approx(want)



def test_fit_methods_seeds_follow_the_root_seed_and_the_sweep_skips_the_main_epsilon(tmp_path):
    """evaluate.py seed=7: the stochastic methods' seeds are 7, 8, ... (not 0, 1, ... whatever the
    seed), each plan is the one its seed gives, and an ε sweep value equal to the main one is
    not fitted twice."""
    from gclsampler.evaluate import make_sampler

    w = _write_workload(tmp_path / "toy", {"turing": make_profile(60, 0)})
    params = {"random": {"fraction": 0.2}, "stem_root": {"epsilon": 0.25}}
    runs = fit_methods(w, ["random", "stem_root"], params, n_seeds=2, seed0=7, epsilons=[0.1, 0.25],
                       sweep_methods=["stem_root"])
    rnd = [r for r in runs if r.method == "random"]
    assert [r.seed for r in rnd] == [7, 8]
    for r in rnd:
        assert list(r.plan.invocations) == list(make_sampler("random", params["random"], r.seed).fit(w).invocations)
    assert {(r.epsilon, r.sweep) for r in runs if r.method == "stem_root"} == {(0.25, False), (0.1, True)}

def test_a_plan_scored_on_another_arch_uses_that_archs_ground_truth(tmp_path):
    """A cross-arch row answers "how well does the plan fitted on turing estimate ampere?".
    If it were scored against the turing profile again, every cross-arch column of the report
    would silently repeat the native numbers, and the portability claim would go unchecked.
    Ampere's cycles are scaled unevenly so the two truths give different errors."""
    from gclsampler.score import any_member_error

    t = make_profile(120, 0)
    a = t.copy()
    a["time_ns"] *= np.linspace(0.5, 1.5, len(a))
    a["cycles"] *= np.linspace(0.6, 0.9, len(a))
    w = _write_workload(tmp_path / "toy", {"turing": t, "ampere": a})
    runs = fit_methods(w, ["sieve"], {})
    plan = runs[0].plan
    df = pd.DataFrame(evaluate_workload(w, runs, ["turing", "ampere"])).set_index("arch")
    native, amp = score_plan(plan, t), score_plan(plan, a)
    assert native["error_cycles"] != pytest.approx(amp["error_cycles"])  # the check can tell them apart
    for arch, truth, want in (("turing", t, native), ("ampere", a, amp)):
        row = df.loc[arch]
        assert row["cycles_true"] == pytest.approx(truth["cycles"].sum())
        assert row["time_full_ns"] == pytest.approx(truth["time_ns"].sum())
        assert row["error_cycles"] == pytest.approx(want["error_cycles"])
        assert row["speedup"] == pytest.approx(want["speedup"])
        assert row["error_cycles_any_member"] == pytest.approx(
            any_member_error(plan, runs[0].labels, truth["cycles"].to_numpy(dtype=np.float64)))
    assert df.loc["ampere", "plan_arch"] == "turing" and bool(df.loc["ampere", "cross_arch"])


def test_missing_arch_truth_raises(tmp_path):
    w = _write_workload(tmp_path / "toy", {"turing": make_profile(30, 0)})
    runs = fit_methods(w, ["sieve"], {})
    with pytest.raises(EvaluationError, match="ada"):
        evaluate_workload(w, runs, ["turing", "ada"])


def test_a_report_names_only_the_ground_truth_it_scored_on(tmp_path):
    """Your own workload measured on an H200, in a suite whose plans are fitted on turing: its rows
    are all h200, yet the report said "scored on turing, h200 ground truth"."""
    from gclsampler.report import write_report

    t = make_profile(40, 3)
    w = _write_workload(tmp_path / "toy", {"turing": t})
    df = pd.DataFrame(evaluate_workload(w, fit_methods(w, ["sieve"], {}), ["turing"]))
    df = df.assign(arch="h200", plan_arch="h200")
    text = write_report(df, tmp_path / "out", plots=False, plan_arch="turing").read_text()
    assert "fitted on the **h200** profile and scored on h200 ground truth" in text, text[:600]


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
        "labels": runs[0].labels, "representatives": runs[0].plan.invocations, "max_clusters": 4}],
        silhouette={"toy": sil})
    text = rep.read_text()
    assert SYNTHETIC_BANNER in "\n".join(text.splitlines()[:4])
    assert "| toy |" in text and "AVG" in text
    assert "## Cluster quality apart from the representative, turing" in text and "sieve E(%) / any member" in text
    for png in ("speedup_vs_error", "error_per_workload", "speedup_per_workload", "clusters_toy_sieve",
                "silhouette"):
        p = tmp_path / "out" / "plots" / f"{png}.png"
        assert p.exists() and p.stat().st_size > 1000
    # not synthetic -> no banner
    rep2 = write_report(df.assign(synthetic=False), tmp_path / "out2", plots=False)
    assert "SYNTHETIC" not in rep2.read_text()


# ------------------------------------------------------------------------------ suite runner
class _FakeGcl:
    """Stands in for gclsampler.samplers' GCL sampler: clusters on workload.embeddings."""

    name = "gcl"
    stochastic = False

    def __init__(self, random_state=0):
        self.random_state = random_state

    def fit(self, workload):
        emb = workload.embeddings
        labels = (emb[:, 0] > np.median(emb[:, 0])).astype(int)
        labels = labels if labels[0] == 0 else 1 - labels
        reps = np.array([np.flatnonzero(labels == c)[0] for c in range(labels.max() + 1)])
        self.labels_ = labels
        return plan_from_labels(workload.name, "gcl", labels, reps, workload.profile["kernel_name"].to_numpy(),
                                synthetic=workload.synthetic)


def _compose(overrides):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from gclsampler.evaluate import register_configs

    register_configs()
    conf = Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        cfg = compose(config_name="evaluate", overrides=overrides)
    return OmegaConf.to_object(cfg), OmegaConf.to_yaml(cfg)


def test_quick_suite_config_composes_and_runs(tmp_path, monkeypatch, capsys):
    import gclsampler.evaluate as ev

    data = tmp_path / "data"
    for i, name in enumerate(["wa", "wb"]):
        t = make_profile(80, i)
        _write_workload(data / name, {"turing": t, "ampere": t.assign(time_ns=t["time_ns"] * 1.3)})
    real = ev._registry
    monkeypatch.setattr(ev, "_registry", lambda: {**real(), "gcl": _FakeGcl})
    calls = []

    def embed(workload):
        calls.append(workload.name)
        return np.random.default_rng(0).standard_normal((workload.n_invocations, 4)).astype(np.float32)

    cfg, text = _compose(["suite=quick", "suite.workloads=[wa,wz,wb]", "suite.data_dir=null", "suite.archs=[turing,ampere]",
                          "suite.methods=[gcl,pka,sieve,random,allegro]", "suite.n_seeds=2",
                          f"data_dir={data}", "generate=false", "suite.hist_workload=wa",
                          "suite.hist_methods=[gcl,sieve]", "plots=false"])
    assert isinstance(cfg, ev.EvaluateConfig) and cfg.suite.name == "quick"
    results = ev.run_suite(cfg, tmp_path / "out", embed_fn=embed, config_text=text)
    assert calls == ["wa", "wb"]
    # rows: per workload (gcl, pka, sieve: 1 seed; random, allegro: 2) x 2 archs
    assert len(results) == 2 * (3 + 2 + 2) * 2
    csv = pd.read_csv(tmp_path / "out" / "results.csv")
    assert list(csv.columns) == ev.RESULT_COLUMNS and len(csv) == len(results)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "SYNTHETIC" in text.splitlines()[2]
    assert "Skipped workload wz" in text  # not on disk and generate=false
    assert "evaluate: warning: skipped workload wz: " in capsys.readouterr().err  # and said where it runs
    assert (tmp_path / "out" / "plans" / "wa" / "random_s1.json").exists()
    # byte-identical rerun (fit_seconds excluded: wall-clock)
    again = ev.run_suite(cfg, tmp_path / "out2", embed_fn=embed)
    pd.testing.assert_frame_equal(results.drop(columns="fit_seconds"), again.drop(columns="fit_seconds"))


@pytest.mark.parametrize("key", ["data_dir", "out_dir"])
def test_an_empty_path_is_refused_not_taken_for_the_default(tmp_path, key):
    """data_dir= synthesized into ./workloads (inside the repository when run from it)."""
    import gclsampler.evaluate as ev

    cfg, _ = _compose(["suite=quick", f"{key}=''"])
    with pytest.raises(ev.EvaluationError, match=rf"^{key}: empty path"):
        ev.check_suite_keys(cfg)


@pytest.mark.parametrize("key", ["sweep_methods", "hist_methods"])
def test_misspelt_sweep_and_histogram_methods_are_refused(tmp_path, key):
    """suite.sweep_methods=[stem_roots] made no ε-sweep while the report said it covered four."""
    import gclsampler.evaluate as ev

    cfg, _ = _compose(["suite=quick", f"data_dir={tmp_path}", f"suite.{key}=[stem_root,stem_roots]"])
    with pytest.raises(ev.EvaluationError, match=rf"^suite.{key}: unknown method 'stem_roots'; available: "):
        ev.check_suite_keys(cfg)


def test_a_workload_inside_what_the_run_writes_is_refused(tmp_path):
    """A measured workload under OUT/plans got plans written into it, and the rerun's cleanup
    deleted it; nothing is created before the refusal."""
    import gclsampler.evaluate as ev
    from gclsampler._safe_out import OutputError

    out = tmp_path / "out"
    t = make_profile(60, 0)
    for sub in ("plans", "plots", "silhouette", "train"):
        data = out / sub
        _write_workload(data / "myapp", {"turing": t})
        before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
        cfg, _ = _compose(["suite=quick", "suite.workloads=[myapp]", "suite.archs=[turing]", f"data_dir={data}",
                           "generate=false", "suite.hist_workload=myapp", "plots=false", "suite.n_seeds=1",
                           "suite.methods=[pka]", "suite.hist_methods=[pka]"])
        with pytest.raises(OutputError, match=rf"myapp: data_dir: workload myapp lies inside out_dir's {sub}, "):
            ev.run_suite(cfg, out)
        assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
        shutil.rmtree(out)
    data = tmp_path / "data"
    _write_workload(data / "myapp", {"turing": t})
    cfg, _ = _compose(["suite=quick", "suite.workloads=[myapp]", f"data_dir={data}", "suite.methods=[pka]"])
    with pytest.raises(OutputError, match=r"out_dir: lies inside workload myapp"):
        ev.run_suite(cfg, data / "myapp" / "x")
    assert not (data / "myapp" / "x").exists()
    before = sorted(p.name for p in (data / "myapp").iterdir())
    with pytest.raises(OutputError, match=r"out_dir: lies inside workload myapp"):  # the workload itself
        ev.run_suite(cfg, data / "myapp")
    assert sorted(p.name for p in (data / "myapp").iterdir()) == before


def test_a_rerun_deletes_only_what_an_earlier_run_wrote(tmp_path):
    """A rerun deleted every file under plots/, plans/ and silhouette/ it did not write itself:
    a user's notes and figures too. A run of an older version (its marker lists nothing) loses
    only files of the kinds evaluate.py writes there, and never a plot."""
    import gclsampler.evaluate as ev

    data = tmp_path / "data"
    t = make_profile(60, 0)
    _write_workload(data / "wa", {"turing": t})
    common = ["suite=quick", "suite.workloads=[wa]", "suite.archs=[turing]", f"data_dir={data}", "generate=false",
              "suite.hist_workload=wa", "plots=false", "suite.n_seeds=1"]
    out = tmp_path / "out"
    ev.run_suite(_compose([*common, "suite.methods=[pka,sieve]", "suite.hist_methods=[pka]"])[0], out)
    for legacy in (False, True):
        if legacy:
            (out / ".gclsampler-output").write_text('{"command": "evaluate"}\n')
            (out / "plans" / "wa" / "sieve.json").write_bytes((out / "plans" / "wa" / "pka.json").read_bytes())
        (out / "plots").mkdir(exist_ok=True)
        (out / "plots" / "fig1.png").write_bytes(b"my figure")
        (out / "plans" / "wa" / "phd_plan.txt").write_text("my plan")
        (out / "silhouette").mkdir(exist_ok=True)
        (out / "silhouette" / "mine.csv").write_text("k,my score\n2,0.5\n")
        ev.run_suite(_compose([*common, "suite.methods=[pka]", "suite.hist_methods=[pka]"])[0], out)
        assert sorted(p.name for p in (out / "plans" / "wa").iterdir()) == ["phd_plan.txt", "pka.json"], legacy
        assert (out / "plots" / "fig1.png").read_bytes() == b"my figure"
        assert (out / "silhouette" / "mine.csv").read_text() == "k,my score\n2,0.5\n"
        assert json.loads((out / ".gclsampler-output").read_text())["outputs"] == [
            "plans/wa/pka.json", "report.md", "results.csv"]


def test_a_rerun_into_a_run_directory_replaces_its_outputs(tmp_path):
    """The docs' rescoring recipe (cp -r RUN NEW, then evaluate into NEW) left the earlier run's
    plans, plots and silhouette curves of methods it no longer ran beside the new report."""
    import gclsampler.evaluate as ev

    data = tmp_path / "data"
    t = make_profile(60, 0)
    _write_workload(data / "wa", {"turing": t, "ampere": t.assign(time_ns=t["time_ns"] * 1.3)})
    common = ["suite=quick", "suite.workloads=[wa]", "suite.archs=[turing]", f"data_dir={data}", "generate=false",
              "suite.hist_workload=wa", "plots=false", "suite.n_seeds=1"]
    cfg, _ = _compose([*common, "suite.methods=[pka,sieve,random]", "suite.hist_methods=[pka]"])
    out = tmp_path / "out"
    ev.run_suite(cfg, out)
    assert {p.name for p in (out / "plans" / "wa").iterdir()} >= {"pka.json", "sieve.json"}
    (out / "train").mkdir()
    (out / "train" / "kept.npy").write_bytes(b"embeddings")  # what embeddings=cached reuses
    (out / "unavailable.csv").write_text("workload,method,reason\nwa,gcl,old\n")
    (out / "plots").mkdir(exist_ok=True)
    (out / "plots" / "clusters_wa_sieve.png").write_bytes(b"an earlier run's plot")
    marker = json.loads((out / ".gclsampler-output").read_text())
    assert "plans/wa/sieve.json" in marker["outputs"] and marker["command"] == "evaluate"
    marker["outputs"] += ["unavailable.csv", "plots/clusters_wa_sieve.png"]  # as a run with plots would record
    (out / ".gclsampler-output").write_text(json.dumps(marker))
    (out / "plans" / "wa" / "notes.txt").write_text("mine")  # what the user added is kept
    cfg, _ = _compose([*common, "suite.methods=[pka]", "suite.hist_methods=[pka]"])
    ev.run_suite(cfg, out)
    assert sorted(p.name for p in (out / "plans" / "wa").iterdir()) == ["notes.txt", "pka.json"]
    assert not (out / "plots").exists()  # plots=false: the new report shows none
    assert not (out / "unavailable.csv").exists() and (out / "train" / "kept.npy").read_bytes() == b"embeddings"
    assert set(pd.read_csv(out / "results.csv")["method"]) == {"pka"}
    cfg, _ = _compose([*common, "suite.methods=[sieve]", "suite.hist_methods=[sieve]"])
    import gclsampler.report as report

    def broken(*a, **k):
        raise RuntimeError("report failed")

    real_write = report.write_report
    report.write_report = broken
    try:
        with pytest.raises(RuntimeError):
            ev.run_suite(cfg, out)
    finally:
        report.write_report = real_write
    assert (out / "plans" / "wa" / "pka.json").exists()  # a failed rerun keeps the earlier plans
    mine = tmp_path / "mine"  # an API caller's directory is checked as evaluate.py's out_dir is
    (mine / "plots").mkdir(parents=True)
    with pytest.raises(GclError, match="not written by `python evaluate.py`"):
        ev.run_suite(cfg, mine)
    assert (mine / "plots").is_dir()



def test_a_rerun_keeps_its_own_plots_and_leaves_no_empty_directories(tmp_path):
    """A rerun with plots keeps the figures its new report.md shows (though the earlier run
    recorded the same names) and records them; a workload it no longer runs leaves no empty
    plans/<workload>/ behind."""
    import re as re_

    import gclsampler.evaluate as ev

    data = tmp_path / "data"
    for w in ("wa", "wb"):
        _write_workload(data / w, {"turing": make_profile(40, 0)})
    common = ["suite=quick", "suite.archs=[turing]", f"data_dir={data}", "generate=false", "suite.hist_workload=wa",
              "suite.n_seeds=1", "suite.methods=[pka]", "suite.hist_methods=[pka]"]
    out = tmp_path / "out"
    ev.run_suite(_compose([*common, "suite.workloads=[wa,wb]"])[0], out)
    assert (out / "plans" / "wb" / "pka.json").exists()
    ev.run_suite(_compose([*common, "suite.workloads=[wa]"])[0], out)
    assert sorted(p.name for p in (out / "plans").iterdir()) == ["wa"]
    shown = sorted(set(re_.findall(r"plots/[\w./-]+?\.png", (out / "report.md").read_text())))
    assert shown and all((out / p).is_file() for p in shown)
    assert set(shown) <= set(json.loads((out / ".gclsampler-output").read_text())["outputs"])

@pytest.mark.parametrize("suite, own", [("full", "workloads"), ("quick", "workloads/quick"), ("real", "real")])
def test_a_data_dir_on_the_command_line_wins_over_the_suites_own(tmp_path, suite, own):
    """The seed sweep passes data_dir=workloads/seed<S>; a suite that kept its own place ran
    every seed on one directory without a word."""
    from gclsampler.evaluate import suite_data_dir

    cfg, _ = _compose([f"suite={suite}"])
    assert suite_data_dir(cfg, tmp_path) == tmp_path / own
    cfg, _ = _compose([f"suite={suite}", "data_dir=mine"])
    assert suite_data_dir(cfg, tmp_path) == tmp_path / "mine"


def test_an_arch_without_ground_truth_fails_before_any_workload_is_made(tmp_path):
    """A simulated or measured arch must be on disk; the synthesizer's own are made with the workload."""
    import gclsampler.evaluate as ev

    def embed(*_):
        raise AssertionError("no training before the check")

    cfg, _ = _compose(["suite=quick", "suite.methods=[pka]", f"data_dir={tmp_path / 'data'}", "plots=false",
                       "suite.archs=[ampere,accelsim-SM86_RTX3070]"])
    with pytest.raises(EvaluationError, match=r"pythia/profiles/accelsim-SM86_RTX3070.csv: suite.archs: no ground "
                                              r"truth for arch 'accelsim-SM86_RTX3070' in workload 'pythia'"):
        ev.run_suite(cfg, tmp_path / "out", embed_fn=embed)
    assert not (tmp_path / "data").exists()
    cfg, _ = _compose(["suite=quick", "suite.methods=[pka]", f"data_dir={tmp_path / 'data'}", "suite.archs=[ada_rerun]"])
    ev._check_suite_archs(cfg.suite, tmp_path / "data", set())  # the synthesizer writes it


def test_a_bad_seed_is_named_by_its_own_key(tmp_path):
    import gclsampler.evaluate as ev

    cfg, _ = _compose(["suite=quick", "seed=-1", f"data_dir={tmp_path}"])
    with pytest.raises(GclError, match=r"^seed: must be an integer in \[0, 2\*\*32\), found -1$"):
        ev.run_suite(cfg, tmp_path / "out")


def test_misspelt_method_parameter_fails_before_work(tmp_path):
    import gclsampler.evaluate as ev

    cfg, _ = _compose(["suite=quick", "suite.methods=[sieve]", "+method_params.sieve.bandwith=1",
                       f"data_dir={tmp_path}", "generate=false"])
    with pytest.raises(EvaluationError, match="method_params.sieve"):
        ev.run_suite(cfg, tmp_path / "out")


def test_write_workload_report(tmp_path):
    from gclsampler.baselines import SieveSampler
    from gclsampler.evaluate import write_workload_report

    t = make_profile(60, 2)
    w = _write_workload(tmp_path / "toy", {"turing": t, "ada": t.assign(cycles=t["cycles"] * 0.5)})
    s = SieveSampler()
    plan = s.fit(w)
    rep = write_workload_report(w, {"sieve": plan}, tmp_path / "run", labels={"sieve": s.labels_}, plots=False)
    text = rep.read_text()
    assert "SYNTHETIC" in text and "ada" in text
    res = pd.read_csv(tmp_path / "run" / "results.csv")
    assert set(res["arch"]) == {"turing", "ada"}
    assert res["error_cycles_any_member"].notna().all()  # the plan's labels reach the any-member column
    assert res["spread_sd"].notna().all() and "/ spread" in text


@pytest.mark.slow  # imports torch via gclsampler.config (seconds on a loaded machine)
def test_training_config_for_embeddings_targets_the_workload_dir(tmp_path):
    from gclsampler.evaluate import _compose_train_config

    cfg = _compose_train_config([f"workload.dir={tmp_path}", "workload.arch=turing", "post_embedding=false",
                                 "train.epochs=1"], None)
    assert cfg.workload.dir == str(tmp_path) and cfg.workload.arch == "turing"
    assert cfg.post_embedding is False and cfg.train.epochs == 1


@pytest.mark.slow  # imports torch via gclsampler.config (seconds on a loaded machine)
def test_a_train_config_dir_is_used_inside_evaluate_py_too(tmp_path):
    """Inside ``python evaluate.py`` Hydra is already initialised on the repository's conf/:
    the training config is composed there, unless the user gave ``train_config_dir``, whose
    config.yaml is then the one the suite trains with."""
    from hydra import initialize_config_dir

    from gclsampler.evaluate import _compose_train_config

    repo_conf = Path(__file__).resolve().parents[1] / "conf"
    mine = tmp_path / "conf"
    shutil.copytree(repo_conf, mine)
    default = _compose_train_config(["post_embedding=false"], None).workers
    text = (mine / "config.yaml").read_text()
    assert re.search(r"^workers: \d+", text, flags=re.M)
    (mine / "config.yaml").write_text(re.sub(r"^workers: \d+", f"workers: {default + 3}", text, flags=re.M))
    with initialize_config_dir(version_base="1.3", config_dir=str(repo_conf)):  # as @hydra.main leaves it
        assert _compose_train_config(["post_embedding=false"], None).workers == default
        assert _compose_train_config(["post_embedding=false"], str(mine)).workers == default + 3


@pytest.mark.slow  # imports torch via gclsampler.config (seconds on a loaded machine)
def test_gcl_paper_embeddings_are_never_the_projects_encoders(tmp_path):
    """gcl_paper's embeddings come from a model=paper run: a cached paper_embeddings.npy of the
    project's encoder's width, or a suite.train_overrides value turning a deviation back on
    (a model.* value outranks the model=paper group), is refused before it is clustered."""
    from types import SimpleNamespace

    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, default_embed_fn

    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "profile.csv").write_text("")
    wl = SimpleNamespace(name="toy", root=tmp_path / "wl", n_invocations=3, arch="turing", data_kind="")
    np.save(tmp_path / "wl" / "paper_embeddings.npy", np.ones((3, 264), np.float32))
    embed = default_embed_fn(EvaluateConfig(embeddings="cached"), tmp_path / "out")
    with pytest.raises(EvaluationError, match=r"paper_embeddings.npy: 264 columns, the width of the project's "
                                              r"encoder .*; gcl_paper clusters the paper's encoder's embeddings"):
        embed(wl, "paper")
    np.save(tmp_path / "wl" / "paper_embeddings.npy", np.ones((3, 256), np.float32))
    assert embed(wl, "paper").shape == (3, 256)
    cfg = EvaluateConfig(suite=SuiteConfig(train_overrides=["model.kernel_features=true"]))
    with pytest.raises(EvaluationError, match=r"^suite.train_overrides: model.kernel_features=true turns the "
                                              r"project's encoder back on in gcl_paper's training"):
        default_embed_fn(cfg, tmp_path / "out")(wl, "paper")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # imports torch via gclsampler.config (seconds on a loaded machine)
def test_embeddings_without_the_size_vector_are_not_clustered_by_a_gcl_that_reads_it(tmp_path):
    """Cached 256-column embeddings (a model=paper or kernel_features=false run) were clustered by
    gcl, whose work split and work_mean representative then read a learned column as work."""
    from types import SimpleNamespace

    from gclsampler.evaluate import (EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys,
                                     default_embed_fn)

    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "profile.csv").write_text("")
    wl = SimpleNamespace(name="toy", root=tmp_path / "wl", n_invocations=3, arch="turing", data_kind="")
    np.save(tmp_path / "wl" / "embeddings.npy", np.ones((3, 256), np.float32))
    with pytest.raises(EvaluationError, match=r"embeddings.npy: 256 columns, the width of the paper's encoder .*; "
                                              r"gcl \(cluster.split_tolerance"):
        default_embed_fn(EvaluateConfig(embeddings="cached"), tmp_path / "out")(wl)
    medoid = {"cluster": {"split_tolerance": 0.0, "representative": "medoid"}}
    cfg = EvaluateConfig(embeddings="cached", suite=SuiteConfig(methods=["gcl", "gcl_stem"]),
                         method_params={"gcl": medoid, "gcl_stem": {"epsilon": 0.25, **medoid}})
    assert default_embed_fn(cfg, tmp_path / "out")(wl).shape == (3, 256)  # nothing reads it: clustered
    cfg.suite.train_overrides = ["model.kernel_features=false"]
    cfg.embeddings = "train"
    check_suite_keys(cfg)


def test_cached_embeddings_of_other_data_are_refused_not_clustered(tmp_path):
    """embeddings=cached into an out_dir whose train/ an earlier run filled, with its workload
    synthesized again since (another seed: same rows, same kernel names), clustered the earlier
    data's embeddings without a word. The training run's run.json records its data (data_digest):
    embeddings of this very data are reused, of other data refused naming the file, and of a run
    that recorded none (or without a run.json) reused as before."""
    import json
    from types import SimpleNamespace

    from gclsampler.evaluate import EvaluateConfig, EvaluationError, default_embed_fn
    from gclsampler.workload import data_digest

    root = tmp_path / "wl"
    root.mkdir()
    (root / "workload.json").write_text(json.dumps({"workload": "toy", "seed": 0}))
    (root / "profile.csv").write_text("invocation,kernel_name\n0,k\n1,k\n2,k\n")
    wl = SimpleNamespace(name="toy", root=root, n_invocations=3, arch="turing", data_kind="")
    run = tmp_path / "out" / "train" / "toy"
    run.mkdir(parents=True)
    emb = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(run / "embeddings.npy", emb)
    embed = default_embed_fn(EvaluateConfig(embeddings="cached"), tmp_path / "out")
    assert np.array_equal(embed(wl), emb)  # no run.json: as before
    (run / "run.json").write_text(json.dumps({"workload": "toy"}))
    assert np.array_equal(embed(wl), emb)  # a run from before data_digest
    (run / "run.json").write_text(json.dumps({"workload": "toy", "data_digest": data_digest(root)}))
    assert np.array_equal(embed(wl), emb)  # this very data
    (root / "workload.json").write_text(json.dumps({"workload": "toy", "seed": 1}))  # synthesized again
    with pytest.raises(EvaluationError, match=r"embeddings.npy: trained on other data than .*wl holds now"):
        embed(wl)
    assert np.array_equal(np.load(run / "embeddings.npy"), emb)  # the earlier run's models are left as they were


def test_any_member_error_is_exact_on_constant_clusters_and_matches_enumeration():
    from gclsampler.plan import ClusterInfo, Sample, SamplingPlan
    from gclsampler.score import any_member_error

    labels = np.array([0, 0, 1, 1, 1, 2])
    plan = SamplingPlan("w", "m", 6, [Sample(0, "a", 0, 2.0), Sample(3, "b", 1, 3.0), Sample(5, "c", 2, 1.0)],
                        [ClusterInfo(0, 2), ClusterInfo(1, 3), ClusterInfo(2, 1)], {}, True)
    same = np.array([5.0, 5.0, 2.0, 2.0, 2.0, 9.0])  # members identical: any member is exact
    assert any_member_error(plan, labels, same) == 0.0
    c = np.array([4.0, 6.0, 1.0, 2.0, 3.0, 10.0])
    total = c.sum()
    exact = np.mean([abs(2 * a + 3 * b + 10.0 - total) / total * 100 for a in (4.0, 6.0) for b in (1.0, 2.0, 3.0)])
    assert any_member_error(plan, labels, c, draws=20000) == pytest.approx(exact, rel=0.03)
    assert any_member_error(plan, labels, c) == any_member_error(plan, labels, c)  # seeded
    # not one sample per cluster with the cluster size as weight: undefined
    two = SamplingPlan("w", "m", 6, [Sample(0, "a", 0, 1.0), Sample(1, "a", 0, 1.0), Sample(3, "b", 1, 3.0),
                                     Sample(5, "c", 2, 1.0)], [ClusterInfo(0, 2), ClusterInfo(1, 3), ClusterInfo(2, 1)], {}, True)
    assert np.isnan(any_member_error(two, labels, c))
    assert np.isnan(any_member_error(plan, None, c))


@pytest.mark.parametrize("change,msg", [
    ({"n_seeds": 0}, "suite.n_seeds: must be >= 1"),
    ({"epsilons": [0.05, 5.0]}, "suite.epsilons: each must be in (0, 1)"),
    ({"epsilons": [0.0]}, "suite.epsilons"),
    ({"epsilons": [0.05, 1.0]}, "suite.epsilons: each must be in (0, 1) (a relative error bound), got 1.0"),
    ({"hist_workload": "nosuch"}, "suite.hist_workload: 'nosuch' names no workload"),
    ({"embeddings": "foo"}, "embeddings: expected 'train' or 'cached'"),
    ({"methods": ["nosuch"]}, "suite.methods: unknown method 'nosuch'"),
    ({}, "{data}/lu: data_dir: workload 'lu' not found and generate=false"),
])
def test_suite_values_the_schema_lets_through_fail_by_key_before_any_output(change, msg, tmp_path):
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, run_suite

    top = {k: v for k, v in change.items() if k == "embeddings"}
    suite = SuiteConfig(**{"workloads": ["lu"], "methods": ["pka"], **{k: v for k, v in change.items() if k not in top}})
    cfg = EvaluateConfig(suite=suite, data_dir=str(tmp_path / "data"), generate=False, **top)
    msg = msg.replace("{data}", str(tmp_path / "data"))
    with pytest.raises(EvaluationError, match="^" + re.escape(msg)):
        run_suite(cfg, tmp_path / "out", embed_fn=lambda w, *a: None)
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()


def test_a_misspelt_workload_fails_by_key_before_any_output(tmp_path):
    """`suite.workloads=[backprp]` with generate (the default) claimed out_dir and then said
    "no workload could be prepared"; it is now refused by key before anything exists. A name
    that is a workload directory in data_dir (the user's own) is fine."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys, run_suite

    cfg = EvaluateConfig(suite=SuiteConfig(workloads=["backprp"], methods=["pka"]), data_dir=str(tmp_path / "data"))
    with pytest.raises(EvaluationError, match=r"^suite\.workloads: 'backprp' is neither a synthetic workload \("):
        run_suite(cfg, tmp_path / "out", embed_fn=lambda w, *a: None)
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
    # beside a good one, too: skip_unavailable (for a workload synth fails to make) dropped it, exit 0
    cfg.suite.workloads = ["bfs", "bsf"]
    assert cfg.skip_unavailable
    with pytest.raises(EvaluationError, match=r"^suite\.workloads: 'bsf' is neither a synthetic workload \("):
        check_suite_keys(cfg)
    cfg.suite.workloads = ["backprp"]
    (tmp_path / "data" / "backprp").mkdir(parents=True)
    (tmp_path / "data" / "backprp" / "profile.csv").write_text("")
    check_suite_keys(cfg)


def test_a_synth_knob_one_workload_lacks_fails_by_key_before_any_output(tmp_path):
    """A knob only the LLMs take, given to the whole suite, dropped every other workload from the
    tables (skip_unavailable), with a line in report.md and exit 0."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys, run_suite

    suite = SuiteConfig(workloads=["phi2", "bfs"], methods=["pka"], synth_params={"layers": 1})
    cfg = EvaluateConfig(suite=suite, data_dir=str(tmp_path / "data"))
    with pytest.raises(EvaluationError, match=r"^suite\.synth_params: workload 'bfs': synth\.layers: unknown knob .*"
                                              r"suite\.synth_params\.per_workload\.<workload>\.layers$"):
        run_suite(cfg, tmp_path / "out", embed_fn=lambda w, *a: None)
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
    suite.synth_params = {"per_workload": {"phi2": {"layers": 1}}, "trace_cap": 8}
    check_suite_keys(cfg)
    suite.synth_params = {"per_workload": {"bfs": {"layers": 1}}}  # given to bfs alone: no hint to move it there
    with pytest.raises(EvaluationError, match=r"^suite\.synth_params: workload 'bfs': synth\.layers: unknown knob") as err:
        check_suite_keys(cfg)
    assert "per_workload" not in str(err.value)


@pytest.mark.parametrize("override, needle", [
    ("train.epoch=3", "suite.train_overrides: config: train.epoch: "),
    ("+train.epoch=3", "suite.train_overrides: config: train.epoch: unknown key"),
    ("model=nosuch", "suite.train_overrides: config: "),
    ("train.lr=-1", "suite.train_overrides: train.lr: must be a finite number > 0"),  # a value, not a key
    ("workers=0", "suite.train_overrides: workers: must be at least 1"),
    # train.py refuses these by key; evaluate.py trained, then cut gcl's work split on a learned column
    ("model.kernel_features=false", "suite.train_overrides: model.kernel_features=false: gcl (cluster.split_tolerance "
                                    "and cluster.representative=work_mean) read the size vector's work column"),
    ("model.kfeat_scale=0.5", "suite.train_overrides: model.kfeat_scale=0.5: gcl (cluster.split_tolerance"),
])
def test_a_bad_train_override_names_suite_train_overrides_before_any_output(override, needle, tmp_path):
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys, run_suite

    cfg = EvaluateConfig(suite=SuiteConfig(workloads=["lu"], methods=["pka", "gcl"], train_overrides=[override]),
                         data_dir=str(tmp_path / "data"), generate=False)
    with pytest.raises(EvaluationError, match="^" + re.escape(needle)):
        run_suite(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    ok = EvaluateConfig(suite=SuiteConfig(workloads=["lu"], methods=["gcl"], train_overrides=["train.epochs=3"]))
    check_suite_keys(ok)
    no_gcl = EvaluateConfig(suite=SuiteConfig(workloads=["lu"], methods=["pka"], train_overrides=[override]))
    check_suite_keys(no_gcl)  # nothing is trained, so nothing composes them


@pytest.mark.parametrize("key, value", [("workloads", ["lu", "bfs", "lu"]), ("methods", ["pka", "pka"]),
                                        ("archs", ["turing", "turing"])])
def test_a_name_listed_twice_is_refused_before_any_work(key, value):
    """suite.workloads=[bfs,bfs] doubled every row of results.csv, and trained gcl twice."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys

    with pytest.raises(EvaluationError, match=rf"^suite\.{key}: '{value[-1]}' is listed twice$"):
        check_suite_keys(EvaluateConfig(suite=SuiteConfig(**{"workloads": ["lu"], key: value})))


def test_a_sweep_method_without_epsilon_is_refused_before_any_work():
    """pka in sweep_methods failed at its sweep, after every model had been trained."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys

    with pytest.raises(EvaluationError, match=r"^suite\.sweep_methods: 'pka' takes no epsilon to sweep; those that "
                                              r"do: allegro, gcl_stem, stem_root$"):
        check_suite_keys(EvaluateConfig(suite=SuiteConfig(workloads=["lu"], sweep_methods=["stem_root", "pka"])))
    check_suite_keys(EvaluateConfig(suite=SuiteConfig(workloads=["lu"], sweep_methods=["allegro"])))


@pytest.mark.parametrize("params, message", [
    ({"stem_roots": {"epsilon": 0.1}}, r"^method_params\.stem_roots: unknown method; available: \['allegro', "),
    ({"gcl_paper": {"bogus": 1}}, r"^method_params\.gcl_paper\.bogus: gcl_paper has no parameter 'bogus'"),
])
def test_method_params_of_no_method_or_of_one_not_run_are_refused_before_any_work(params, message):
    """`+method_params.stem_roots.epsilon=0.1` (the `+` that the "not in struct" hint for
    `method_params.stem_roots.epsilon` asks for) ran the whole suite with stem_root at its default
    epsilon, and the parameters of a method the suite does not run were never checked."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys

    cfg = EvaluateConfig(suite=SuiteConfig(workloads=["lu"], methods=["stem_root"], sweep_methods=[],
                                           hist_methods=[]))
    check_suite_keys(cfg)
    cfg.method_params.update(params)
    with pytest.raises(EvaluationError, match=message):
        check_suite_keys(cfg)


def test_a_known_hist_workload_outside_a_narrowed_suite_is_fine():
    from gclsampler.evaluate import EvaluateConfig, SuiteConfig, check_suite_keys

    check_suite_keys(EvaluateConfig(suite=SuiteConfig(workloads=["lu"], hist_workload="cfd")))


def test_schema_defaults_equal_the_default_yaml():
    """An API user building SuiteConfig() / TrainConfig() gets what the CLI's defaults give
    (they had drifted: 8 methods without gcl_paper, a halved node budget per batch)."""
    from omegaconf import OmegaConf

    from gclsampler.evaluate import SuiteConfig
    from gclsampler.train import TrainConfig

    conf = Path(__file__).resolve().parents[1] / "conf"
    for cls, yaml in ((SuiteConfig, conf / "suite" / "full.yaml"), (TrainConfig, conf / "train" / "default.yaml")):
        schema = OmegaConf.to_container(OmegaConf.structured(cls))
        given = OmegaConf.to_container(OmegaConf.load(yaml))
        differ = {k: (schema.get(k), v) for k, v in given.items() if schema.get(k) != v}
        assert not differ, f"{yaml.name}: {differ}"


def test_evaluate_jobs_that_need_one_missing_workload_synthesize_it_once(tmp_path, monkeypatch):
    """What test_pipeline checks for train.py's workloads_dir, for evaluate.py's data_dir (a
    multirun over settings that share one data_dir)."""
    import gclsampler.synth as synth
    from gclsampler.evaluate import SuiteConfig, _prepare_workload
    from tests._concurrent_synth import run_in_threads, slow_fake_generate

    calls: list = []
    monkeypatch.setattr(synth, "generate", slow_fake_generate(calls, "profile.csv"))
    got = run_in_threads(lambda: _prepare_workload("3mm", tmp_path, SuiteConfig(), True, 0))
    assert calls == ["3mm"] and got == [tmp_path / "3mm"] * 3


@pytest.mark.parametrize("text, key", [
    ("config: Could not override 'model'. No match in the defaults list.", "model"),
    ("config: train: Key 'train' not in 'EvaluateConfig'", "train"),
    ("config: graph: unknown key (known in the root: data_dir, seed, suite)", "graph"),
    ("config: suite.nope: Key 'nope' not in 'SuiteConfig'", None),
    ("config: seedx: Key 'seedx' not in 'EvaluateConfig'", None),
    ("config: Could not override 'suite'. No match in the defaults list.", None),  # evaluate's own group
    ("config: Could not override 'seed'. No match in the defaults list.", None),  # both have it: evaluate's own
    ("/x/profile.csv:3: time_ns: not a number", None),
])
def test_a_refused_train_py_setting_points_to_suite_train_overrides(text, key):
    from gclsampler.evaluate import train_setting_hint

    hint = train_setting_hint(text)
    if key is None:
        assert hint == ""
    else:
        assert f"'suite.train_overrides=[\"{key}" in hint and hint.startswith(f"({key} is a train.py setting")


@pytest.mark.parametrize("key", ["workloads", "methods"])
def test_an_empty_workload_or_method_list_is_refused_before_any_work(key):
    """suite.methods=[] synthesized every workload of the suite (hours for suite=full) and only then
    said 'no method produced a plan'; suite.workloads=[] blamed suite.methods."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys

    with pytest.raises(EvaluationError, match=rf"^suite\.{key}: empty; name at least one$"):
        check_suite_keys(EvaluateConfig(suite=SuiteConfig(**{"workloads": ["lu"], "methods": ["pka"], key: []})))


def test_an_unknown_trace_arch_is_named_by_its_own_key(tmp_path):
    """suite.trace_arch=volta was refused as 'suite.synth_params: ... synth.archs: unknown arch'."""
    from gclsampler.evaluate import EvaluateConfig, EvaluationError, SuiteConfig, check_suite_keys

    cfg = EvaluateConfig(suite=SuiteConfig(workloads=["lu"], methods=["pka"], trace_arch="volta"),
                         data_dir=str(tmp_path))
    with pytest.raises(EvaluationError, match=r"^suite\.trace_arch: unknown arch 'volta' for synthetic workload 'lu'; "
                                              r"known: ada, ampere, turing, each also as <arch>_rerun \(a second run of it\)$"):
        check_suite_keys(cfg)


def test_a_training_refusal_names_the_key_evaluate_takes(tmp_path, monkeypatch):
    """A rerun into the same out_dir with other training settings was told to "set
    train.resume=false", which evaluate.py refuses as a key of its own; the hint now names
    suite.train_overrides, and the error keeps its type and the rest of its words."""
    from types import SimpleNamespace

    from gclsampler import pipeline
    from gclsampler.evaluate import EvaluateConfig, default_embed_fn
    from gclsampler.train_config import TrainConfigError

    def refuse(cfg, out_dir):
        raise TrainConfigError(f"{out_dir}/last.pt: settings differ (train.lr); set train.resume=false to start over")

    monkeypatch.setattr(pipeline, "run", refuse)
    wl = SimpleNamespace(name="toy", root=tmp_path / "wl", n_invocations=3, arch="turing", data_kind="")
    with pytest.raises(TrainConfigError) as e:
        default_embed_fn(EvaluateConfig(), tmp_path / "out")(wl)
    assert str(e.value) == (f"{tmp_path / 'out' / 'train' / 'toy'}/last.pt: settings differ (train.lr); set "
                            "'suite.train_overrides=[\"train.resume=false\"]' to start over")
