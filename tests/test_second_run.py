"""A second, independent profile of the plan arch (``profiles/<arch>_rerun.csv``): the synthesizer
writes it on request, and evaluation scores every plan on it as ``error_cycles_rerun``."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gclsampler.evaluate import fit_methods, evaluate_workload, score_plan
from gclsampler.profile import read_profile, rerun_arch, rerun_of
from gclsampler.synth.generate import SynthConfigError, check_request, generate
from test_baselines import make_profile
from test_evaluate import _write_workload


def test_rerun_names_round_trip():
    assert rerun_arch("turing") == "turing_rerun" and rerun_of("turing_rerun") == "turing"
    assert rerun_of("turing") is None and rerun_of("_rerun") is None
    assert rerun_of(rerun_arch("h200")) == "h200"


def test_synthesized_second_run_draws_only_the_jitter_again(tmp_path):
    params = {"nodes": 2048}
    generate("bfs", tmp_path / "one", params={**params, "archs": ["turing"]}, arch="turing", seed=5,
             progress=False, jobs=1)
    generate("bfs", tmp_path / "two", params={**params, "archs": ["turing", "turing_rerun"]}, arch="turing",
             seed=5, progress=False, jobs=1)
    # asking for the second run changes nothing the first run had
    first = (tmp_path / "one" / "profiles" / "turing.csv").read_bytes()
    assert (tmp_path / "two" / "profiles" / "turing.csv").read_bytes() == first
    assert (tmp_path / "two" / "profile.csv").read_bytes() == first
    a = read_profile(tmp_path / "two" / "profiles" / "turing.csv")
    b = read_profile(tmp_path / "two" / "profiles" / "turing_rerun.csv")
    assert len(a) == len(b) > 2
    for col in ("kernel_name", "grid", "block", "inst_executed", "l1_hit_rate", "l2_hit_rate"):
        assert a[col].tolist() == b[col].tolist(), col
    ratio = b["time_ns"].to_numpy() / a["time_ns"].to_numpy()
    assert not np.allclose(ratio, 1.0) and np.all(np.abs(np.log(ratio)) < 0.3)  # jitter, not another machine
    meta = json.loads((tmp_path / "two" / "workload.json").read_text())
    assert meta["archs"] == ["turing", "turing_rerun"] and meta["synthetic"] is True


@pytest.mark.parametrize("arch", ["volta_rerun", "_rerun", "turing_rerun_x"])
def test_a_second_run_of_an_unknown_arch_is_refused_by_key(arch):
    with pytest.raises(SynthConfigError, match=r"synth\.archs: unknown arch"):
        check_request("bfs", {"archs": ["turing", arch]}, "turing", 0)


def _jittered(t: pd.DataFrame, seed: int) -> pd.DataFrame:
    f = np.exp(np.random.default_rng(seed).normal(0, 0.05, len(t)))
    return t.assign(time_ns=t["time_ns"] * f, cycles=np.round(t["cycles"] * f))


def test_plans_are_scored_on_the_second_run_of_their_own_arch_only(tmp_path):
    t = make_profile(90, 0)
    second = _jittered(t, 1)
    w = _write_workload(tmp_path / "toy", {"turing": t, "ampere": t.assign(cycles=t["cycles"] * 0.8),
                                           "turing_rerun": second})
    runs = fit_methods(w, ["sieve", "pka", "random"], {"random": {"fraction": 0.2}}, n_seeds=2)
    df = pd.DataFrame(evaluate_workload(w, runs, ["turing", "ampere"]))
    assert set(df["arch"]) == {"turing", "ampere"}  # the second run is a column, not an arch
    own = df[df["arch"] == "turing"]
    for run, (_, row) in zip(runs, own.iterrows()):
        assert row["method"] == run.method
        want = score_plan(run.plan, second)["error_cycles"]
        assert row["error_cycles_rerun"] == pytest.approx(want)
        assert not math.isclose(row["error_cycles_rerun"], row["error_cycles"])  # another run, another error
    assert df.loc[df["arch"] == "ampere", "error_cycles_rerun"].isna().all()
    # without a second run the column is empty, and nothing else changes
    (tmp_path / "toy" / "profiles" / "turing_rerun.csv").unlink()
    bare = pd.DataFrame(evaluate_workload(w, runs, ["turing", "ampere"]))
    assert bare["error_cycles_rerun"].isna().all()
    assert bare["error_time_rerun"].isna().all()
    both = ["error_cycles_rerun", "error_time_rerun"]
    pd.testing.assert_frame_equal(bare.drop(columns=both), df.drop(columns=both))


def test_report_shows_both_runs_and_train_report_keeps_the_second_run_out_of_the_archs(tmp_path):
    from gclsampler.baselines import SieveSampler
    from gclsampler.evaluate import write_workload_report
    from gclsampler.report import write_report

    t = make_profile(80, 3)
    w = _write_workload(tmp_path / "toy", {"turing": t, "turing_rerun": _jittered(t, 2)})
    runs = fit_methods(w, ["sieve", "allegro"], {})
    df = pd.DataFrame(evaluate_workload(w, runs, ["turing"]))
    text = write_report(df, tmp_path / "out", plots=False).read_text()
    assert "## Error on a second run of turing" in text
    section = text[text.index("## Error on a second run of turing"):]
    row = next(ln for ln in section.splitlines() if ln.startswith("| toy |"))
    sieve = df[(df["method"] == "sieve") & (df["arch"] == "turing")].iloc[0]
    assert f"{sieve['error_cycles']:.2f} / {sieve['error_cycles_rerun']:.2f}" in row
    # no second run: no section
    plain = write_report(df.assign(error_cycles_rerun=np.nan, error_time_rerun=np.nan), tmp_path / "out2",
                         plots=False).read_text()
    assert "second run" not in plain
    # train.py's report: every profiles/<arch>.csv is an arch to score on, but not a second run
    s = SieveSampler()
    write_workload_report(w, {"sieve": s.fit(w)}, tmp_path / "run", labels={"sieve": s.labels_}, plots=False)
    res = pd.read_csv(tmp_path / "run" / "results.csv")
    assert set(res["arch"]) == {"turing"} and res["error_cycles_rerun"].notna().all()


def test_suite_asks_the_synthesizer_for_a_second_run_of_the_trace_arch(tmp_path, monkeypatch):
    import gclsampler.synth as synth
    from gclsampler.evaluate import SuiteConfig, _prepare_workload

    asked = []

    def fake(name, out_dir, *, params=None, arch, seed, **_):
        asked.append((name, params, arch))
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "profile.csv").write_text("")
        return out_dir

    monkeypatch.setattr(synth, "generate", fake)
    _prepare_workload("3mm", tmp_path / "a", SuiteConfig(trace_arch="ampere"), True, 0)
    (name, params, arch), = asked
    assert arch == "ampere" and params["archs"][-1] == "ampere_rerun"
    assert params["archs"][:-1] == ["turing", "ampere", "ada"]  # the workload's own archs, then the second run
    asked.clear()
    _prepare_workload("3mm", tmp_path / "b", SuiteConfig(rerun=False), True, 0)
    assert "archs" not in (asked[0][1] or {})


def test_a_data_dir_without_the_second_run_is_synthesized_again_when_one_is_wanted(tmp_path):
    from gclsampler.synth.generate import stale_reason

    generate("bfs", tmp_path / "bfs", params={"nodes": 2048, "archs": ["turing"]}, arch="turing", seed=1,
             progress=False, jobs=1)
    assert stale_reason(tmp_path / "bfs", "bfs", {"nodes": 2048, "archs": ["turing"]}, "turing", 1) is None
    why = stale_reason(tmp_path / "bfs", "bfs", {"nodes": 2048, "archs": ["turing", "turing_rerun"]}, "turing", 1)
    assert why is not None and "turing_rerun" in why


ERRS = {("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w1", "pka"): 2.0, ("w2", "pka"): 2.0}  # fitted-run errors


def _runs_with_second_run(tmp_path, second) -> list:
    """Two results.csv (seeds 0, 1) of ERRS whose turing rows have error_cycles_rerun =
    ``second(rows, seed)``."""
    from test_compare import _rows, _write

    runs = []
    for seed in (0, 1):
        df = _rows(ERRS, seed=seed)
        own = df["arch"] == "turing"
        df.loc[own, "error_cycles_rerun"] = second(df.loc[own], seed)
        runs.append(_write(tmp_path, f"s{seed}", df))
    return runs


def test_compare_shows_the_second_run_only_where_runs_have_one(tmp_path):
    from gclsampler.compare import compare_dirs
    from test_compare import _rows, _write

    runs = _runs_with_second_run(tmp_path, lambda rows, seed: rows["error_cycles"] + 1.0 + seed)
    md = compare_dirs(runs, tmp_path / "cmp", plots=False).read_text()
    assert "second run (%)" in md
    gcl = next(ln for ln in md.splitlines() if ln.startswith("| gcl |"))
    assert "3.50 ± 0.71" in gcl  # runs at 2 % on the fitted run, 3 and 4 % on their second runs
    old = [_write(tmp_path, f"o{seed}", _rows(ERRS, seed=seed)) for seed in (0, 1)]
    md = compare_dirs(old, tmp_path / "cmp_old", plots=False).read_text()
    assert "second run" not in md


def test_compare_on_the_second_run_judges_every_count_by_it(tmp_path):
    from test_compare import _cli, _rows, _write

    # on the second run gcl is the worse of the two on both workloads
    runs = _runs_with_second_run(tmp_path, lambda rows, seed: np.where(rows["method"] == "gcl", 4.0 + seed, 1.0))
    r = _cli(*runs, "--out", tmp_path / "cmp", "--second-run", "--no-plots")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "**Scored on the second run**" in md and "second run (%)" not in md  # it is the error column
    # the per-run rows are not report.md's suite averages then: say where they come from
    assert "speedup, as each run's report.md has them." not in md.split("## Per run")[1].split("\n\n")[1]
    assert "on each run's second run (the second column of its report.md's second-run table)" in md
    gcl = next(ln for ln in md.splitlines() if ln.startswith("| gcl |"))
    assert gcl.startswith("| gcl | 4.50 ± 0.71 |")
    h2h = pd.read_csv(tmp_path / "cmp" / "compare_head_to_head.csv")
    assert h2h.loc[h2h["method"] == "pka", "higher"].tolist() == [2, 2]  # lower on the fitted run, higher here
    per = pd.read_csv(tmp_path / "cmp" / "compare.csv")
    assert per.loc[per["method"] == "gcl", "error_cross_arch"].tolist() == pytest.approx([2.0, 2.0])  # unchanged
    # a run with a plan-arch row that has no second run is refused, naming the row and the file it lacks
    df = pd.read_csv(runs[1] / "results.csv")
    df.loc[(df["workload"] == "w2") & (df["method"] == "pka") & (df["arch"] == "turing"), "error_cycles_rerun"] = np.nan
    df.to_csv(runs[1] / "results.csv", index=False)
    r = _cli(*runs, "--out", tmp_path / "cmp2", "--second-run")
    assert r.returncode == 2 and not (tmp_path / "cmp2").exists()
    line = r.stderr.strip().splitlines()[-1]
    assert "results.csv:" in line and "error_cycles_rerun: empty for workload 'w2'" in line and "turing_rerun.csv" in line
    # without the flag the same runs compare as before
    assert _cli(*runs, "--out", tmp_path / "cmp3", "--no-plots").returncode == 0
    old = _write(tmp_path, "old", _rows(ERRS).drop(columns="error_cycles_rerun"))
    r = _cli(old, "--out", tmp_path / "cmp4", "--second-run")
    assert r.returncode == 2 and "error_cycles_rerun: missing column" in r.stderr


def test_compare_plot_says_its_errors_are_the_second_runs(tmp_path, monkeypatch):
    """compare.md says "Scored on the second run"; its plot, which a reader copies out alone, had the
    same y axis either way, so second-run errors read as the fitted run's."""
    import gclsampler.report as report
    from gclsampler.compare import load_runs, write_comparison

    labels = []

    def keep(fig, path, synthetic=False, legend_of=None):
        labels.append(fig.axes[0].get_ylabel())
        import matplotlib.pyplot as plt

        plt.close(fig)
        return path

    monkeypatch.setattr(report, "_savefig", keep)
    runs = _runs_with_second_run(tmp_path, lambda rows, seed: rows["error_cycles"] + 1.0 + seed)
    write_comparison(load_runs(runs, second_run=True), tmp_path / "again")
    write_comparison(load_runs(runs), tmp_path / "fitted")
    assert labels == ["mean cycle error on the second run of turing over workloads (%)",
                      "mean cycle error over workloads (%)"]


def train_request(*overrides: str) -> dict:
    """The synthesis request ``python train.py OVERRIDES`` makes (``pipeline._synth_request``)."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401  (registers the structured schema)
    from gclsampler.pipeline import _synth_request

    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[1] / "conf"), version_base="1.3"):
        return _synth_request(compose("config", overrides=list(overrides)))


def test_train_asks_for_a_second_run_of_its_plan_arch_unless_told_not_to():
    """train.py's report scores the plan on a run it did not read, as evaluate.py's does:
    the synthesis request carries <workload.arch>_rerun; workload.rerun=false leaves it out."""

    def request(*overrides):
        return train_request("workload=3mm", *overrides)

    req = request()
    assert req["arch"] == "turing" and req["params"]["archs"] == ["turing", "ampere", "ada", "turing_rerun"]
    assert request("workload.arch=ampere")["params"]["archs"][-1] == "ampere_rerun"
    assert request("debug=default")["params"]["archs"] == ["turing", "turing_rerun"]
    assert request("workload.rerun=false")["params"]["archs"] == ["turing", "ampere", "ada"]
    # an unknown arch gets no second run: the synthesizer names the arch the user gave
    with pytest.raises(SynthConfigError, match="unknown arch 'volta'"):
        check_request("3mm", request("workload.arch=volta")["params"], "volta", 0)


@pytest.mark.parametrize("workload", ["3mm", "phi2", "alexnet"])
def test_train_and_evaluate_ask_for_the_same_synthetic_workload(tmp_path, monkeypatch, workload):
    """Both scripts synthesize into workloads/<name> by default. train.py traced ampere while
    evaluate.py traces turing, so each run found the other's directory stale and synthesized it
    again (about 100 s for phi2, every alternation). Their default requests now resolve alike."""
    import gclsampler.synth as synth
    from gclsampler.evaluate import _prepare_workload
    from gclsampler.synth.generate import resolve_params
    from test_evaluate import _compose as compose_evaluate

    asked = []

    def fake(name, out_dir, *, params=None, arch, seed, **_):
        asked.append((resolve_params(name, params), arch, seed))
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "profile.csv").write_text("")
        return out_dir

    monkeypatch.setattr(synth, "generate", fake)
    ev, _ = compose_evaluate(["suite=full"])
    _prepare_workload(workload, tmp_path, ev.suite, True, ev.seed)
    req = train_request(f"workload={workload}")
    assert asked == [(resolve_params(workload, req["params"]), req["arch"], req["seed"])]


@pytest.mark.parametrize("workload", ["3mm", "phi2"])
def test_synth_command_writes_what_train_asks_for(tmp_path, monkeypatch, workload):
    """`gclsampler synth NAME --out workloads/NAME` then `train.py workload=NAME`: the command's
    defaults were ampere and no second run, so train.py found the directory stale and synthesized
    it again. Its request now resolves as train.py's; --no-rerun and --arch still change it."""
    import gclsampler.synth as synth
    from gclsampler.cli import main
    from gclsampler.synth.generate import resolve_params

    asked = []
    monkeypatch.setattr(synth, "generate", lambda name, out, *, params=None, arch, seed, **_:
                        asked.append((resolve_params(name, params), arch, seed)))
    for extra in ([], ["--no-rerun"], ["--arch", "ada"]):
        assert main(["synth", workload, "--out", str(tmp_path / "w"), "--quiet", *extra]) == 0
    req = train_request(f"workload={workload}")
    assert asked[0] == (resolve_params(workload, req["params"]), req["arch"], req["seed"])
    assert asked[1][0]["archs"] == [a for a in asked[0][0]["archs"] if not a.endswith("_rerun")]
    assert asked[2][1] == "ada" and asked[2][0]["archs"][-1] == "ada_rerun"


def test_a_wall_time_second_run_is_scored_on_its_times(tmp_path):
    """A second run imported from nsys or torch.profiler has no cycles: error_cycles_rerun was NaN
    and the report had no second-run section, so the file README step 2 says every plan is scored
    on was left out without a word. It is scored on time_ns, in a table of its own."""
    from gclsampler.report import write_report

    t = make_profile(80, 3)
    second = _jittered(t, 2).assign(cycles=np.nan)
    w = _write_workload(tmp_path / "toy", {"turing": t, "turing_rerun": second})
    runs = fit_methods(w, ["sieve", "pka"], {})
    df = pd.DataFrame(evaluate_workload(w, runs, ["turing"]))
    assert df["error_cycles_rerun"].isna().all()
    for run, (_, row) in zip(runs, df.iterrows()):
        assert row["error_time_rerun"] == pytest.approx(score_plan(run.plan, second)["error_time"])
    text = write_report(df, tmp_path / "out", plots=False).read_text()
    section = text[text.index("## Error on a second run of turing, on measured time"):]
    row = next(ln for ln in section.splitlines() if ln.startswith("| toy |"))
    sieve = df[df["method"] == "sieve"].iloc[0]
    assert f"{sieve['error_time']:.2f} / {sieve['error_time_rerun']:.2f}" in row
    # a second run with cycles keeps its cycle table alone
    w2 = _write_workload(tmp_path / "toy2", {"turing": t, "turing_rerun": _jittered(t, 2)})
    df2 = pd.DataFrame(evaluate_workload(w2, fit_methods(w2, ["sieve"], {}), ["turing"]))
    text2 = write_report(df2, tmp_path / "out2", plots=False).read_text()
    assert "## Error on a second run of turing" in text2 and "on measured time (`time_ns`)\n\nEach plan" not in text2


def test_compare_csvs_say_which_run_their_errors_are_scored_on(tmp_path):
    """Under --second-run compare.csv's error_cycles held the second run's errors under the
    fitted run's column name, and nothing in the file said so: a CSV read apart from compare.md
    passed them off as the fitted run's. Every CSV now has an errors_on column."""
    from test_compare import _cli

    runs = _runs_with_second_run(tmp_path, lambda rows, seed: rows["error_cycles"] + 1.0 + seed)
    for flag, out, on in ((["--second-run"], "again", "second_run"), ([], "fitted", "fitted_run")):
        r = _cli(*runs, "--out", tmp_path / out, "--no-plots", *flag)
        assert r.returncode == 0, r.stderr
        per = pd.read_csv(tmp_path / out / "compare.csv")
        assert per["errors_on"].tolist() == [on] * len(per) and len(per) == 4
        assert list(per.columns[per.columns.get_loc("errors_on"):][:2]) == ["errors_on", "error_cycles"]
        gcl = per.loc[per["method"] == "gcl", "error_cycles"].tolist()
        assert gcl == pytest.approx([3.0, 4.0] if on == "second_run" else [2.0, 2.0])
        for name in ("compare_workloads.csv", "compare_head_to_head.csv"):
            assert set(pd.read_csv(tmp_path / out / name)["errors_on"]) == {on}, name
