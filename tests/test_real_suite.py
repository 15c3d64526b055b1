"""`python evaluate.py suite=real`: measured workloads scored as they are, labelled REAL.

The "real" workloads here are made from the tiny SYNTHETIC workload (its traces, a jittered
copy of its times as the "measured" profile, workload.json saying "synthetic": false), one
with the PKA metrics and an empty trace, one timed only (no PKA metrics, no instruction
counts, no cycles), as the real suite's LLM is.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
GPU = "NVIDIA H200"


def make_real(src: Path, dst: Path, *, pka: bool, empty: tuple[int, ...] = (), traces: bool = True) -> Path:
    """A REAL-labelled workload dir from a synthetic one (traces copied, times jittered);
    ``traces=False`` makes a profile-only one, as a GPU run whose tracing did not finish."""
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.name.startswith("kernel") and traces:
            shutil.copy(f, dst / f.name)
    prof = pd.read_csv(src / "profile.csv")
    prof["time_ns"] = np.round(prof["time_ns"] * np.random.default_rng(1).uniform(0.9, 1.1, len(prof)))
    if not pka:  # torch.profiler-like: times only
        prof = prof[["invocation", "kernel_name", "grid", "block", "time_ns"]].assign(cycles=np.nan)
    prof.to_csv(dst / "profile.csv", index=False)
    for i in empty:  # no CTA on SM 0: the header alone
        text = (dst / f"kernel-{i + 1}.traceg").read_text()
        (dst / f"kernel-{i + 1}.traceg").write_text(text[:text.index("#BEGIN_TB")])
    (dst / "workload.json").write_text(json.dumps({
        "workload": dst.name, "synthetic": False, "arch": "h200", "n_invocations": len(prof), "gpu": GPU,
        "driver": "580.00", "cuda": "13.0", "how": "test fixture"}))
    return dst


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() + f"@{p.stat().st_mtime_ns}"
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def real_dir(tiny_workload, tmp_path_factory):
    d = tmp_path_factory.mktemp("realdata")
    make_real(tiny_workload, d / "realA", pka=True, empty=(2,))
    make_real(tiny_workload, d / "realB", pka=False)
    return d


def _compose(overrides):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from gclsampler.evaluate import register_configs

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="evaluate", overrides=overrides)
    return OmegaConf.to_object(cfg), OmegaConf.to_yaml(cfg)


TINY_TRAIN = ('suite.train_overrides=["train.epochs=1","train.progress=false","graph.max_warps=2",'
              '"graph.max_insts_per_warp=32"]')


def test_real_suite_end_to_end(real_dir, tmp_path):
    """Every method, real training: nothing written into the workloads, REAL labels, pka and
    sieve n/a on the timed-only workload with their reasons, no cross-arch rows, every plan
    accounts for every invocation (including the one with an empty trace)."""
    from gclsampler.evaluate import run_suite
    from gclsampler.plan import SamplingPlan

    before = snapshot(real_dir)
    cfg, text = _compose(["suite=real", "suite.workloads=[realA,realB]", f"suite.data_dir={real_dir}",
                          "suite.n_seeds=2", "suite.epsilons=[0.25]", TINY_TRAIN, "plots=false"])
    assert cfg.suite.real and cfg.suite.archs == ["h200"] and len(cfg.suite.methods) == 9
    out = tmp_path / "out"
    res = run_suite(cfg, out, launch_dir=tmp_path, config_text=text)
    assert snapshot(real_dir) == before  # no cache, no re-synthesis, no touched file
    assert (tmp_path / ".cache" / "graphs").is_dir()  # the graph cache went to the launch dir
    assert set(res["data"]) == {"real"} and not res["synthetic"].any() and set(res["gpu"]) == {GPU}
    assert set(res["arch"]) == {"h200"} and not res["cross_arch"].any()
    ran = res.groupby("workload")["method"].unique().map(set).to_dict()
    assert ran["realA"] == set(cfg.suite.methods)
    assert ran["realB"] == set(cfg.suite.methods) - {"pka", "sieve"}
    b = res[res["workload"] == "realB"]
    assert b["error_cycles"].isna().all() and b["error_time"].notna().all()  # no cycles: time is scored
    na = pd.read_csv(out / "unavailable.csv")
    assert na[["workload", "method"]].values.tolist() == [["realB", "pka"], ["realB", "sieve"]]
    assert "PKA metrics" in na["reason"][0] and "inst_executed" in na["reason"][1]
    report = (out / "report.md").read_text()
    head = "\n".join(report.splitlines()[:4])
    assert "**REAL DATA.**" in head and GPU in head
    assert "SYNTHETIC" not in report
    assert "| realB (REAL) | 38 |" in report and "not run" in report and "## Methods that could not run" in report
    assert "Cross-architecture (GCL-Sampler Table 3): not evaluated" in report
    assert "## Error on measured time (`time_ns`), h200" in report
    n = {"realA": 38, "realB": 38}
    plans = sorted((out / "plans").rglob("*.json"))
    assert len(plans) == len(res.drop_duplicates(["workload", "method", "seed", "epsilon"]))
    for p in plans:
        plan = SamplingPlan.load(p)
        assert plan.n_invocations == n[p.parent.name] and not plan.synthetic
        assert sum(s.weight for s in plan.samples) == pytest.approx(plan.n_invocations), p
        assert sum(c.size for c in plan.clusters) == plan.n_invocations, p


def test_real_workload_is_never_synthesized_over(real_dir, tmp_path, monkeypatch):
    """A synthetic suite pointed at a real dir (workload.json "synthetic": false) uses it as it
    is, or stops naming what is wrong; it never calls the synthesizer, whatever `generate` says."""
    import gclsampler.synth as synth
    from gclsampler.errors import GclError
    from gclsampler.evaluate import run_suite

    def refuse(*a, **k):
        raise AssertionError("synthesized over a real workload")

    monkeypatch.setattr(synth, "generate", refuse)
    broken = tmp_path / "data"
    shutil.copytree(real_dir / "realB", broken / "nw")
    (broken / "nw" / "profile.csv").unlink()
    before = snapshot(broken)
    cfg, _ = _compose(["suite=quick", "suite.workloads=[nw]", f"suite.data_dir={broken}", "generate=true",
                       "suite.methods=[random]", "suite.archs=[h200]", "suite.trace_arch=h200"])
    with pytest.raises(GclError, match=r"nw/profile\.csv: missing"):
        run_suite(cfg, tmp_path / "out")
    assert snapshot(broken) == before


def test_mixed_suite_labels_each_row(real_dir, tiny_workload, tmp_path):
    """Synthetic and real workloads in one suite: each row and table line says which it is;
    the real one is fitted on its measured h200 profile and has no other arch's rows."""
    from gclsampler.evaluate import run_suite

    data = tmp_path / "data"
    shutil.copytree(tiny_workload, data / "phi2", ignore=shutil.ignore_patterns(".graph-cache"))
    shutil.copytree(real_dir / "realA", data / "realA")
    cfg, _ = _compose(["suite=quick", "suite.workloads=[phi2,realA]", f"suite.data_dir={data}", "generate=false",
                       "suite.methods=[stem_root,pka,random]", "suite.n_seeds=2", "suite.epsilons=[0.25]",
                       "suite.trace_arch=ampere", "suite.archs=[ampere,ada]", "suite.hist_workload=phi2",
                       "suite.hist_methods=[stem_root]", "plots=false"])
    res = run_suite(cfg, tmp_path / "out")
    by = res.groupby("workload")
    assert by["data"].unique().map(list).to_dict() == {"phi2": ["synthetic"], "realA": ["real"]}
    assert set(res.loc[res["workload"] == "realA", "arch"]) == {"h200"}
    assert set(res.loc[res["workload"] == "realA", "plan_arch"]) == {"h200"}
    assert set(res.loc[res["workload"] == "phi2", "arch"]) == {"ampere", "ada"}
    report = (tmp_path / "out" / "report.md").read_text()
    assert "**MIXED DATA: SYNTHETIC and REAL workloads.**" in "\n".join(report.splitlines()[:4])
    assert "| phi2 (SYNTHETIC) |" in report and "| realA (REAL) |" in report
    assert "| realA |" not in report.split("## Strata")[0] and "| phi2 |" not in report
    assert "## Error and speedup per workload on h200" in report  # the real workload's own block
    assert "measured on one GPU only" in report


def test_plot_stamps_follow_the_data():
    from gclsampler.report import plot_stamp

    rows = pd.DataFrame({"workload": ["a", "b"], "synthetic": [True, False], "data": ["synthetic", "real"],
                         "gpu": ["", GPU]})
    assert plot_stamp(rows) == "SYNTHETIC + REAL DATA (rows labelled in report.md)"
    assert plot_stamp(rows.iloc[1:]) == f"REAL DATA ({GPU})"
    assert plot_stamp(rows.iloc[:1]) == "SYNTHETIC DATA"
    assert plot_stamp(rows.iloc[1:].assign(data="")) is None  # workload.json said neither: no label
    # synthetic beside unlabelled rows (perhaps measured): neither the stamp nor the banner says "all synthetic"
    mixed = rows.assign(data=["synthetic", ""])
    assert plot_stamp(mixed) == "SYNTHETIC + UNLABELLED DATA (rows labelled in report.md)"
    from gclsampler.report import SYNTHETIC_BANNER, data_banner

    banner = "\n".join(data_banner(mixed))
    assert SYNTHETIC_BANNER not in banner and "SYNTHETIC DATA in rows marked (SYNTHETIC)" in banner
    assert "Workloads b: workload.json does not say" in banner


def test_missing_real_workload_is_one_line_exit_2(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "suite=real", "suite.data_dir=nowhere",
                        f"out_dir={tmp_path / 'out'}"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / "nowhere" / "nw") in lines[0], r.stderr
    assert "never synthesized" in lines[0] and not (tmp_path / "out").exists()


def test_suite_real_names_the_workloads_committed_under_real():
    """conf/suite/real.yaml's list must name real/<name>/ dirs once any are committed."""
    from omegaconf import OmegaConf

    if not list((ROOT / "real").glob("*/workload.json")):
        pytest.skip("no real workload committed under real/ yet")
    names = OmegaConf.load(ROOT / "conf" / "suite" / "real.yaml")["workloads"]
    for name in names:
        meta = ROOT / "real" / name / "workload.json"
        assert meta.is_file(), f"conf/suite/real.yaml names {name!r}, but real/{name}/workload.json is missing"
        assert json.loads(meta.read_text()).get("synthetic") is False, f"real/{name}: workload.json is not synthetic: false"


def test_pka_without_its_metrics_is_unavailable_not_a_crash(real_dir):
    from gclsampler.evaluate import EvaluationError, fit_methods
    from gclsampler.workload import Workload

    w = Workload.load(real_dir / "realB")
    na: list = []
    runs = fit_methods(w, ["pka", "stem_root"], {"stem_root": {"epsilon": 0.25}}, n_seeds=1, unavailable=na)
    assert [r.method for r in runs] == ["stem_root"]
    assert na == [("pka", "profile.csv has none of the 12 PKA metrics of Nsight Compute")]
    with pytest.raises(EvaluationError, match="pka cannot run on workload 'realB': profile.csv has none"):
        fit_methods(w, ["pka"], {})


def test_score_without_cycles_scores_time_and_partial_cycles_fail():
    from gclsampler.plan import plan_from_labels
    from gclsampler.score import EvaluationError, score_plan

    truth = pd.DataFrame({"time_ns": [1.0, 1.0, 2.0, 4.0], "cycles": np.nan})
    plan = plan_from_labels("w", "x", np.array([0, 0, 1, 1]), np.array([0, 2]), np.array(list("abcd")))
    row = score_plan(plan, truth)
    assert np.isnan(row["error_cycles"]) and row["error_time"] == pytest.approx(abs(8 - 6) / 8 * 100)
    with pytest.raises(EvaluationError, match=r"cycles: .*\(1 of 4, first invocation 3\)"):
        score_plan(plan, truth.assign(cycles=[1.0, 1.0, 2.0, np.nan]))


def test_profile_only_real_workload_runs_the_profile_methods_and_names_the_rest(tiny_workload, tmp_path):
    """A real workload without traces (the first GPU runs: profiles, no finished trace):
    the methods that read traces are not run, with the reason, instead of the suite
    stopping at the graph stage; the profile methods run and plan every invocation."""
    from gclsampler.evaluate import run_suite
    from gclsampler.plan import SamplingPlan

    data = tmp_path / "data"
    make_real(tiny_workload, data / "profonly", pka=True, traces=False)
    assert not list((data / "profonly").glob("kernel*"))
    cfg, text = _compose(["suite=real", "suite.workloads=[profonly]", f"suite.data_dir={data}", "suite.n_seeds=1",
                          "suite.epsilons=[0.25]", TINY_TRAIN, "plots=false"])
    out = tmp_path / "out"
    res = run_suite(cfg, out, launch_dir=tmp_path, config_text=text)
    na = pd.read_csv(out / "unavailable.csv")
    assert sorted(na["method"]) == ["gcl", "gcl_paper", "gcl_stem", "photon"]
    assert na["reason"].str.contains("no kernelslist.g").all()
    assert set(res["method"]) == {"stem_root", "pka", "sieve", "allegro", "random"}
    n = len(pd.read_csv(data / "profonly" / "profile.csv"))
    for p in (out / "plans").rglob("*.json"):
        plan = SamplingPlan.load(p)
        assert sum(s.weight for s in plan.samples) == pytest.approx(n) and plan.n_invocations == n
    report = (out / "report.md").read_text()
    assert "a workload with a profile alone" in report.splitlines()[2]


def test_data_dir_with_a_comma_trains(tiny_workload, tmp_path):
    """The suite passes each workload's path to the training config as a Hydra override:
    under a data directory named `run,1` (quoted, as Hydra asks, on the command line) it
    stopped with "config: Ambiguous value for argument 'workload.dir=...'", an override the
    user never gave, while train.py took the same path."""
    from gclsampler.evaluate import run_suite
    from gclsampler.plan import SamplingPlan

    data = tmp_path / "run,1"
    make_real(tiny_workload, data / "realA", pka=False)
    cfg, text = _compose(["suite=real", "suite.workloads=[realA]", f"suite.data_dir='{data}'", "suite.n_seeds=1",
                          "suite.methods=[gcl]", "suite.epsilons=[0.25]", TINY_TRAIN, "plots=false"])
    out = tmp_path / "out"
    res = run_suite(cfg, out, launch_dir=tmp_path, config_text=text)
    assert set(res["method"]) == {"gcl"}
    plan = SamplingPlan.load(next((out / "plans").rglob("*.json")))
    assert sum(s.weight for s in plan.samples) == pytest.approx(plan.n_invocations)


def _simulated_copy(wl: Path, config: str = "SM86_TEST") -> str:
    """``profiles/accelsim-<config>.csv`` as ``gclsampler simulate --all`` writes it: the same
    launches, other cycles, and a ``simulated_by`` label on every row."""
    from gclsampler.profile import read_profile, write_profile

    prof = read_profile(wl / "profile.csv")
    cyc = np.round(prof["cycles"].to_numpy() * np.linspace(0.5, 2.0, len(prof)))
    sim = prof[["invocation", "kernel_name", "grid", "block"]].assign(
        time_ns=cyc / 1.5, cycles=cyc, simulated_by=f"Accel-Sim {config}, one SM (SM 0's share)")
    (wl / "profiles").mkdir(exist_ok=True)
    write_profile(sim, wl / "profiles" / f"accelsim-{config}.csv")
    return f"accelsim-{config}"


def test_simulated_ground_truth_of_a_real_workload_is_not_called_measured(tiny_workload, tmp_path):
    """A REAL workload scored on Accel-Sim's cycles (docs/simulate.md's recipe): those rows say
    SIMULATED in results.csv (``simulated_by``), in the banner, in the stamp and in compare.csv;
    the banner's "measured on the GPU" covers only the rows on the measured profile."""
    from gclsampler.compare import data_of
    from gclsampler.evaluate import run_suite
    from gclsampler.report import data_banner, data_kinds, plot_stamp

    wl = make_real(tiny_workload, tmp_path / "data" / "realA", pka=True)
    arch = _simulated_copy(wl)
    cfg, text = _compose(["suite=real", "suite.workloads=[realA]", f"suite.data_dir={tmp_path / 'data'}",
                          "suite.methods=[pka,sieve]", "plots=false", f"suite.archs=[h200,{arch}]"])
    res = run_suite(cfg, tmp_path / "both", launch_dir=tmp_path, config_text=text)
    on_sim = res["arch"] == arch
    assert on_sim.any() and (~on_sim).any()
    assert res.loc[on_sim, "simulated_by"].str.startswith("Accel-Sim SM86_TEST").all()
    assert (res.loc[~on_sim, "simulated_by"].fillna("") == "").all()
    assert set(res["data"]) == {"real"}  # the workload is real; the row's ground truth is what differs
    assert list(data_kinds(res)[on_sim].unique()) == ["simulated"] and set(data_kinds(res)[~on_sim]) == {"real"}
    report = (tmp_path / "both" / "report.md").read_text()
    head = report[:report.index("Workloads:")]
    assert "**REAL DATA (the rows on measured profiles).**" in head
    assert f"**SIMULATED GROUND TRUTH.** Rows of realA on `{arch}` (Accel-Sim SM86_TEST" in head
    assert f"(traced: realA on {GPU})" in head
    assert "| realA (REAL) |" in report
    assert plot_stamp(res) == "REAL + SIMULATED DATA (rows labelled in report.md)"
    assert pd.read_csv(tmp_path / "both" / "results.csv")["simulated_by"].notna().sum() == on_sim.sum()

    # the simulated rows alone (compare.py or a user's filter of results.csv): nothing says measured
    from gclsampler.report import _workload_tags

    only = res[on_sim]
    banner = "\n".join(data_banner(only))
    assert "SIMULATED GROUND TRUTH" in banner and "REAL DATA" not in banner and "measured on the GPU" not in banner
    assert plot_stamp(only) == "SIMULATED DATA (not measured on hardware)"
    assert _workload_tags(only) == {"realA": "realA (SIMULATED)"}
    assert data_of(only) == "simulated" and data_of(res) == "real+simulated"


def test_results_written_before_simulated_by_still_label_accelsim_rows_simulated():
    from gclsampler.report import data_kinds

    old = pd.DataFrame({"workload": ["a", "a", "b"], "arch": ["h200", "accelsim-SM86_RTX3070", "accelsim-SM86_RTX3070"],
                        "synthetic": [False, False, True], "data": ["real", "real", "synthetic"], "gpu": [GPU, GPU, ""]})
    assert data_kinds(old).tolist() == ["real", "simulated", "synthetic"]
