"""Several evaluate.py runs side by side (gclsampler.compare, `gclsampler compare`, the multirun callback)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from gclsampler.compare import (across_runs, compare_dirs, find_runs, head_to_head, load_run, load_runs, per_run_table,
                                per_workload_table, run_summaries, write_comparison)
from gclsampler.score import RESULT_COLUMNS, EvaluationError, suite_averages, summarize
from test_baselines import make_profile
from test_evaluate import _write_workload

ROOT = Path(__file__).resolve().parents[1]


def _rows(errors: dict[tuple[str, str], float], seed: int = 0, speedup: float = 10.0, ada: float = 1.0,
          synthetic: bool = True) -> pd.DataFrame:
    """results.csv rows: one per (workload, method) on turing (the plan arch) and on ada."""
    rows = []
    for (w, m), e in errors.items():
        for arch, err in (("turing", e), ("ada", e * ada)):
            r = dict.fromkeys(RESULT_COLUMNS, np.nan)
            r.update(workload=w, method=m, arch=arch, plan_arch="turing", cross_arch=arch != "turing", seed=seed,
                     sweep=False, stochastic=False, n_invocations=100, n_simulated=5, n_clusters=5,
                     error_cycles=err, speedup=speedup, synthetic=synthetic, fit_seconds=0.1)
            rows.append(r)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _write(tmp_path: Path, name: str, df: pd.DataFrame) -> Path:
    d = tmp_path / name
    d.mkdir(parents=True)
    df.to_csv(d / "results.csv", index=False)
    return d


def test_mean_sd_worst_and_cross_arch_over_runs(tmp_path):
    a = _write(tmp_path, "s0", _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w1", "pka"): 2.0, ("w2", "pka"): 2.0},
                                     seed=0, ada=2.0))
    b = _write(tmp_path, "s1", _rows({("w1", "gcl"): 5.0, ("w2", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "pka"): 4.0},
                                     seed=1, ada=2.0, speedup=20.0))
    runs = [load_run(a), load_run(b)]
    assert [r.seed for r in runs] == [0, 1] and [r.label for r in runs] == ["s0", "s1"]
    per = per_run_table(runs, ["w1", "w2"], ["gcl", "pka"])
    g = per[per["method"] == "gcl"].set_index("run")
    assert g.loc["s0", "error_cycles"] == pytest.approx(2.0) and g.loc["s1", "error_cycles"] == pytest.approx(3.0)
    assert (g.loc["s0", "worst_workload"], g.loc["s1", "worst_workload"]) == ("w2", "w1")
    assert g.loc["s0", "error_cross_arch"] == pytest.approx(4.0)  # ada errors are twice turing's
    acr = across_runs(per).set_index("method")
    assert acr.loc["gcl", "error_cycles"] == pytest.approx(2.5)
    assert acr.loc["gcl", "error_cycles_sd"] == pytest.approx(np.std([2.0, 3.0], ddof=1))
    assert acr.loc["gcl", "worst_error_max"] == 5.0 and acr.loc["gcl", "worst_error_where"] == "w1 (s1)"
    assert acr.loc["pka", "speedup_mean"] == pytest.approx(15.0)
    # a run's row is what its own report shows
    own = suite_averages(summarize(runs[1].results))
    own = own[(own.method == "pka") & (own.arch == "turing")].iloc[0]
    assert per[(per.run == "s1") & (per.method == "pka")]["error_cycles"].iloc[0] == own["error_cycles"]


def test_speedup_hmean_over_runs_is_the_mean_of_each_runs_harmonic_mean(tmp_path):
    """Across runs, every per-run number is averaged over runs, the harmonic mean over workloads
    (STEM+ROOT's averaging) included. Averaging the arithmetic speedup_mean into the h-mean column
    instead reports a larger speedup than any run's h-mean, and mixes the two averagings."""
    from gclsampler.score import harmonic_mean

    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0}
    a = _write(tmp_path, "s0", _rows(errs, seed=0, speedup=10.0))
    df = _rows(errs, seed=1, speedup=10.0)
    df.loc[df["workload"] == "w2", "speedup"] = 40.0
    b = _write(tmp_path, "s1", df)
    per = per_run_table([load_run(a), load_run(b)], ["w1", "w2"], ["gcl"]).set_index("run")
    assert per.loc["s0", "speedup_hmean"] == pytest.approx(10.0)
    assert per.loc["s1", "speedup_hmean"] == pytest.approx(harmonic_mean([10.0, 40.0]))  # 16
    assert per.loc["s1", "speedup_mean"] == pytest.approx(25.0)
    acr = across_runs(per.reset_index()).set_index("method")
    assert acr.loc["gcl", "speedup_hmean"] == pytest.approx((10.0 + 16.0) / 2)
    assert acr.loc["gcl", "speedup_mean"] == pytest.approx((10.0 + 25.0) / 2)


def test_head_to_head_counts_ties_apart(tmp_path):
    errs = {("w1", "gcl"): 0.0, ("w1", "sieve"): 0.0,     # tie: both 0 %
            ("w2", "gcl"): 1.0, ("w2", "sieve"): 2.0,     # lower
            ("w3", "gcl"): 2.0, ("w3", "sieve"): 1.999,   # higher, however small
            ("w4", "gcl"): 0.5, ("w4", "sieve"): 0.5}     # tie: same plan
    run = load_run(_write(tmp_path, "r", _rows(errs)))
    h = head_to_head([run], ["w1", "w2", "w3", "w4"], ["gcl", "sieve"], "gcl").iloc[0]
    assert (h["lower"], h["tie"], h["higher"], h["n_workloads"]) == (1, 2, 1, 4)
    with pytest.raises(EvaluationError, match="--reference: method 'photon'"):
        head_to_head([run], ["w1"], ["gcl", "sieve"], "photon")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0, 50, allow_nan=False), min_size=6, max_size=6), min_size=1, max_size=4))
def test_head_to_head_partitions_the_workloads(tmp_path_factory, errs_per_run):
    """lower + tie + higher = workloads, and swapping the two methods swaps lower and higher."""
    tmp = tmp_path_factory.mktemp("h2h")
    runs = []
    for i, e in enumerate(errs_per_run):
        errs = {(f"w{j}", "gcl"): e[j] for j in range(3)} | {(f"w{j}", "pka"): e[3 + j] for j in range(3)}
        runs.append(load_run(_write(tmp, f"r{i}", _rows(errs, seed=i))))
    ws = ["w0", "w1", "w2"]
    h = head_to_head(runs, ws, ["gcl", "pka"], "gcl")
    r = head_to_head(runs, ws, ["gcl", "pka"], "pka")
    assert ((h["lower"] + h["tie"] + h["higher"]) == 3).all()
    assert (h["lower"].to_numpy() == r["higher"].to_numpy()).all() and (h["tie"].to_numpy() == r["tie"].to_numpy()).all()


def test_report_files_synthetic_banner_and_left_out_workloads(tmp_path):
    a = _write(tmp_path, "0", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 1.0, ("w2", "pka"): 3.0}))
    b = _write(tmp_path, "1", _rows({("w1", "gcl"): 3.0, ("w1", "pka"): 2.0}, seed=1))
    out = tmp_path / "cmp"
    md = compare_dirs([a, b], out, plots=True)
    text = md.read_text()
    assert "SYNTHETIC" in text.splitlines()[2]
    assert "Left out, not in every run: workloads w2 (no turing rows in 1)." in text
    # gcl vs pka on w1: lower in run 0, higher in run 1, at the same speedup (so Pareto too)
    assert "| **all runs** | 1 / 0 / 1; Pareto 1 / 1 |" in text
    for f in ("compare.csv", "compare_workloads.csv", "compare_head_to_head.csv", "plots/compare_speedup_vs_error.png"):
        assert (out / f).exists(), f
    per = pd.read_csv(out / "compare.csv")
    assert set(per["run"].astype(str)) == {"0", "1"} and len(per) == 4
    # not synthetic -> no banner
    c = _write(tmp_path, "h0", _rows({("w1", "gcl"): 1.0}, synthetic=False))
    d = _write(tmp_path, "h1", _rows({("w1", "gcl"): 2.0}, seed=1, synthetic=False))
    assert "SYNTHETIC" not in write_comparison([load_run(c), load_run(d)], tmp_path / "h", plots=False).read_text()


def test_same_inputs_give_identical_files(tmp_path):
    a = _write(tmp_path, "a", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}))
    b = _write(tmp_path, "b", _rows({("w1", "gcl"): 3.0, ("w1", "pka"): 2.5}, seed=1))
    compare_dirs([a, b], tmp_path / "x", plots=False)
    compare_dirs([a, b], tmp_path / "y", plots=False)
    for f in ("compare.md", "compare.csv", "compare_workloads.csv", "compare_head_to_head.csv"):
        assert (tmp_path / "x" / f).read_bytes() == (tmp_path / "y" / f).read_bytes()


def test_tables_from_shared_summaries_equal_their_own(tmp_path):
    """write_comparison summarises each run once and hands that to every table: the tables
    must be the ones each computes alone, and a handed-in summary must be what is used."""
    a = _write(tmp_path, "s0", _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w1", "pka"): 2.0, ("w2", "pka"): 2.0}))
    b = _write(tmp_path, "s1", _rows({("w1", "gcl"): 5.0, ("w2", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "pka"): 4.0},
                                     seed=1, speedup=20.0))
    runs, ws, ms = [load_run(a), load_run(b)], ["w1", "w2"], ["gcl", "pka"]
    summ = run_summaries(runs, ws, ms)
    pd.testing.assert_frame_equal(per_run_table(runs, ws, ms, summaries=summ), per_run_table(runs, ws, ms))
    pd.testing.assert_frame_equal(per_workload_table(runs, ws, ms, summaries=summ), per_workload_table(runs, ws, ms))
    pd.testing.assert_frame_equal(head_to_head(runs, ws, ms, "gcl", summaries=summ), head_to_head(runs, ws, ms, "gcl"))
    swapped = per_run_table(runs, ws, ms, summaries=summ[::-1]).set_index(["run", "method"])["error_cycles"]
    assert swapped[("s0", "gcl")] == pytest.approx(3.0) and swapped[("s1", "gcl")] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="expected one per run"):
        head_to_head(runs, ws, ms, "gcl", summaries=summ[:1])


@pytest.mark.parametrize("edit, needle", [
    (lambda df: df.drop(columns="error_cycles"), "results.csv:1: error_cycles: missing column"),
    (lambda df: df.assign(error_cycles=["1.0", "x%"] + ["1"] * (len(df) - 2)), "error_cycles: not numeric (e.g. line 3"),
    (lambda df: df.assign(sweep=["False", "maybe"] + ["False"] * (len(df) - 2)), "results.csv:3: sweep: expected True"),
    (lambda df: df.assign(seed=[0, np.nan] + [0] * (len(df) - 2)), "results.csv:3: seed: empty"),
    (lambda df: df.assign(plan_arch=["turing", "ada"] + ["turing"] * (len(df) - 2)), "plan_arch: plans of one run"),
    (lambda df: df.iloc[:0], "no rows"),
    # averaged by summarize as well: a text cell there was a pandas TypeError with a traceback
    (lambda df: df.assign(error_ipc=["unknown"] + ["1"] * (len(df) - 1)), "error_ipc: not numeric (e.g. line 2"),
    (lambda df: df.assign(spread_sd="x"), "spread_sd: not numeric (e.g. line 2"),
])
def test_bad_results_csv_is_one_located_error(tmp_path, edit, needle):
    df = edit(_rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0}))
    d = _write(tmp_path, "r", df)
    with pytest.raises(EvaluationError) as e:
        load_run(d)
    assert needle in str(e.value) and str(d / "results.csv") in str(e.value)


def test_a_blank_line_is_refused_at_its_line_so_no_error_names_the_wrong_line(tmp_path):
    """pandas skips blank lines, and each error numbers its row as row + 2: a blank line made the
    bad cell below it (line 6 here) be named as line 5. Trailing blank lines shift nothing."""
    lines = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0}).to_csv(index=False).splitlines(keepends=True)
    bad = lines[:3] + ["\n"] + lines[3:4] + [lines[4].replace(",100,", ",x,", 1)]
    d = tmp_path / "r"
    d.mkdir()
    (d / "results.csv").write_text("".join(bad))
    with pytest.raises(EvaluationError, match=re.escape(f"{d / 'results.csv'}:4: a blank line")):
        load_run(d)
    (d / "results.csv").write_text("".join(lines) + "\n\n")
    assert len(load_run(d).results) == len(lines) - 1


def test_runs_fitted_on_different_archs_are_refused(tmp_path):
    a = _write(tmp_path, "a", _rows({("w1", "gcl"): 1.0}))
    b = _write(tmp_path, "b", _rows({("w1", "gcl"): 1.0}).assign(plan_arch="ampere", cross_arch=True))
    with pytest.raises(EvaluationError, match="different archs"):
        compare_dirs([a, b], tmp_path / "o", plots=False)
    assert not (tmp_path / "o").exists()


def test_one_run_given_twice_is_refused(tmp_path):
    """Its seed would count twice; the tables broke on the duplicate label with a traceback."""
    a = _write(tmp_path, "a", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}))
    b = _write(tmp_path, "b", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}))
    for again in (a, a / "results.csv"):
        with pytest.raises(EvaluationError, match=rf"^{again}: the run {a} again; each run is compared once$"):
            compare_dirs([a, b, again], tmp_path / "o", plots=False)
    assert not (tmp_path / "o").exists()


def test_runs_are_named_by_their_files_or_resolved_directories(tmp_path, monkeypatch):
    """Two CSVs side by side were both named after their directory, and the tables then failed
    with a traceback; ``compare .`` named its run ""; compare.md's paths were relative to the
    shell's directory, wrong when read from --out."""
    d = tmp_path / "csvs"
    d.mkdir()
    _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}).to_csv(d / "seed0.csv", index=False)
    _rows({("w1", "gcl"): 1.5, ("w1", "pka"): 2.5}, seed=1).to_csv(d / "seed1.csv", index=False)
    compare_dirs([d / "seed0.csv", d / "seed1.csv"], tmp_path / "o", plots=False)
    text = (tmp_path / "o" / "compare.md").read_text()
    assert f"| seed0 | `{d / 'seed0.csv'}` | 0 |" in text and f"| seed1 | `{d / 'seed1.csv'}` | 1 |" in text
    run = _write(tmp_path, "run_a", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}, seed=2))
    monkeypatch.chdir(run)
    compare_dirs([".", "../csvs/seed0.csv"], tmp_path / "o2", plots=False)
    assert f"| run_a | `{run / 'results.csv'}` | 2 |" in (tmp_path / "o2" / "compare.md").read_text()
    x = _write(tmp_path / "x", "run", _rows({("w1", "gcl"): 1.0}))
    y = _write(tmp_path / "y", "run", _rows({("w1", "gcl"): 2.0}, seed=3))
    (tmp_path / "z").mkdir()
    _rows({("w1", "gcl"): 3.0}, seed=4).to_csv(tmp_path / "z" / "seed0.csv", index=False)
    assert [r.label for r in load_runs([x, y])] == [str(x), str(y)]  # one name twice: the paths as given
    z = tmp_path / "z" / "seed0.csv"
    assert [r.label for r in load_runs([d / "seed0.csv", z])] == [str(d / "seed0.csv"), str(z)]


def test_runs_that_are_not_repeats_over_seeds_are_said_to_be(tmp_path):
    """A -m sweep of a method parameter (both jobs synthesis seed 0) was pooled into one
    mean ± sd, described as a spread across runs, with nothing telling the jobs apart."""
    runs = []
    for i, (seed, fraction) in enumerate([(0, 0.1), (0, 0.5), (1, 0.1)]):
        d = _write(tmp_path, f"{i}_full", _rows({("w1", "gcl"): 1.0 + i, ("w1", "pka"): 2.0}, seed=seed))
        (d / ".hydra").mkdir()
        (d / ".hydra" / "overrides.yaml").write_text(
            f"- suite=full\n- seed={seed}\n- data_dir=/w/seed{seed}\n- method_params.random.fraction={fraction}\n")
        runs.append(d)
    compare_dirs(runs, tmp_path / "o", plots=False)
    text = (tmp_path / "o" / "compare.md").read_text()
    assert ("**Settings differ between runs** besides the seed and paths (`.hydra/overrides.yaml`): "
            "0_full: `method_params.random.fraction=0.1`; 1_full: `method_params.random.fraction=0.5`; "
            "2_full: `method_params.random.fraction=0.1`.") in text
    assert "**Runs share a synthesis seed**: 0_full, 1_full (seed 0)." in text
    compare_dirs([runs[0], runs[2]], tmp_path / "o2", plots=False)  # one setting, two seeds: repeats
    text = (tmp_path / "o2" / "compare.md").read_text()
    assert "Settings differ" not in text and "share a synthesis seed" not in text


def test_a_mean_over_workloads_uses_the_workloads_every_run_scored(tmp_path):
    """A run without a second run of w1 averaged its second-run error over w2 alone, pooled with
    a run averaging over both: the column looked better than the first. Means over one set."""
    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w1", "pka"): 2.0, ("w2", "pka"): 4.0}
    a = _rows(errs)
    a["error_cycles_rerun"] = np.where(a["workload"] == "w1", 10.0, 2.0)
    b = _rows(errs, seed=1)
    b["error_cycles_rerun"] = np.where(b["workload"] == "w1", np.nan, 4.0)
    runs = [_write(tmp_path, "a", a), _write(tmp_path, "b", b)]
    compare_dirs(runs, tmp_path / "o", plots=False)
    per = pd.read_csv(tmp_path / "o" / "compare.csv").set_index(["run", "method"])
    assert per.loc[("a", "gcl"), "error_cycles_rerun"] == pytest.approx(2.0)  # w2 alone, as in b
    assert per.loc[("b", "gcl"), "error_cycles_rerun"] == pytest.approx(4.0)
    assert per.loc[("a", "gcl"), "error_cycles"] == pytest.approx(2.0)  # both scored both: report.md's mean
    text = (tmp_path / "o" / "compare.md").read_text()
    assert ("The second-run error of gcl, pka is averaged over the workloads every run has one for: "
            "left out w1 (none in b)") in text


def _cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GCLSAMPLER_DEBUG": ""}
    return subprocess.run([sys.executable, "-m", "gclsampler", "compare", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd)


def test_cli_expands_a_sweep_dir_and_guards_its_output(tmp_path):
    sweep = tmp_path / "sweep"
    for i in range(3):
        _write(sweep, str(i), _rows({("w1", "gcl"): 1.0 + i, ("w1", "pka"): 2.0}, seed=i))
    (sweep / "10" / ".hydra").mkdir(parents=True)  # a job that failed before writing results: not a run
    (sweep / "plots").mkdir()  # not a job at all
    assert [p.name for p in find_runs(sweep)] == ["0", "1", "2"]
    r = _cli(sweep, "--out", tmp_path / "cmp", "--no-plots")
    assert r.returncode == 0, r.stderr
    assert "3 runs compared" in r.stdout and "| 2 |" in (tmp_path / "cmp" / "compare.md").read_text()
    # the failed job is named, not left out in silence
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == [
        f"gclsampler: warning: {sweep / '10'}: no results.csv (a job that failed or is still running); left out"]
    assert _cli(sweep, "--out", tmp_path / "cmp", "--no-plots").returncode == 0  # its own output: rewritten
    # the user's directory is not written into
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    r = _cli(sweep, "--out", mine)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "not replaced" in lines[0], r.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    # a missing run, an unreadable one, a reference no run has: one line, nothing created
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "results.csv").write_bytes(b"\xff\xfe\x00garbage")
    for args, needle in (([sweep / "0", tmp_path / "nope"], "nope: no such file"),
                         ([sweep / "0", tmp_path / "junk"], "not a readable CSV"),
                         ([sweep, "--reference", "photon"], "--reference: method 'photon'")):
        r = _cli(*args, "--out", tmp_path / "new" / "cmp")
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and needle in lines[0], r.stderr
        assert not (tmp_path / "new").exists()


def test_evaluate_multirun_writes_compare_md(tmp_path):
    """`python evaluate.py -m seed=0,1`: each job its own run, then compare.md in the sweep dir."""
    data = tmp_path / "data"
    for i, name in enumerate(["wa", "wb"]):
        t = make_profile(60, i)
        _write_workload(data / name, {"turing": t, "ampere": t.assign(time_ns=t["time_ns"] * 1.3)})
    sweep = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GCLSAMPLER_DEBUG": "", "CI": "1"}
    r = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "-m", "seed=0,1", "suite=quick",
                        "suite.workloads=[wa,wb]", "suite.data_dir=null", "suite.archs=[turing,ampere]",
                        "suite.methods=[pka,sieve,random]", "suite.n_seeds=2", "suite.hist_workload=wa",
                        "suite.hist_methods=[sieve]", f"data_dir={data}", "generate=false", "plots=false",
                        f"hydra.sweep.dir={sweep}"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (sweep / "0_quick" / "results.csv").exists() and (sweep / "1_quick" / "results.csv").exists()
    text = (sweep / "compare.md").read_text()
    assert "2 runs of `evaluate.py`" in text and "## `pka` head to head" in text  # no gcl: the first method
    per = pd.read_csv(sweep / "compare.csv")
    assert sorted(set(per["seed"])) == [0, 1] and set(per["method"]) == {"pka", "sieve", "random"}
    # a 1-job multirun into the same sweep dir: job 1 is the earlier multirun's, so nothing is compared,
    # and the earlier comparison (of jobs this one overwrote) does not stay beside them
    again = subprocess.run([*r.args[:3], "seed=5", *r.args[4:]], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert again.returncode == 0 and "compared" not in again.stdout, again.stderr[-2000:]
    assert "removed the comparison of an earlier multirun" in again.stderr
    assert not (sweep / "compare.md").exists() and not (sweep / "compare.csv").exists()
    # compare of the sweep dir: the earlier multirun's job is left out, by name (dated as minutes
    # earlier: here the two multiruns ran within the file times' slack of each other)
    old = (sweep / "multirun.yaml").stat().st_mtime - 600
    os.utime(sweep / "1_quick" / "results.csv", (old, old))
    cli = _cli(sweep, "--out", tmp_path / "cmp", "--no-plots")
    assert cli.returncode == 0, cli.stderr
    assert f"{sweep / '1_quick'}: results.csv older than" in cli.stderr
    assert sorted(set(pd.read_csv(tmp_path / "cmp" / "compare.csv")["seed"])) == [5]


def test_a_multirun_stopped_by_a_failed_job_compares_the_jobs_that_finished(tmp_path):
    data = tmp_path / "data0"
    for i, name in enumerate(["wa", "wb"]):
        t = make_profile(60, i)
        _write_workload(data / name, {"turing": t})
    import shutil

    shutil.copytree(data, tmp_path / "data1")
    shutil.copytree(data, tmp_path / "data2")
    prof = tmp_path / "data2" / "wb" / "profile.csv"
    bad = pd.read_csv(prof)
    bad.loc[1, "time_ns"] = -3.0
    bad.to_csv(prof, index=False)
    sweep = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GCLSAMPLER_DEBUG": "", "CI": "1"}
    r = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "-m", "seed=0,1,2", "suite=quick",
                        "suite.workloads=[wa,wb]", "suite.data_dir=null", "suite.archs=[turing]",
                        "suite.methods=[pka,sieve]", f"data_dir={tmp_path}/data${{seed}}", "generate=false",
                        "plots=false", f"hydra.sweep.dir={sweep}"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 2 and f"{prof}:3: time_ns: negative value" in r.stderr, r.stderr[-2000:]
    assert f"compared 2 runs that finished before the error in {sweep / 'compare.md'}" in r.stderr
    assert sorted(set(pd.read_csv(sweep / "compare.csv")["seed"])) == [0, 1]


def test_a_suite_sweep_shares_one_sweep_dir():
    """Hydra resolves hydra.sweep.dir per job: with ${suite.name} in it, `-m suite=quick,full`
    put the jobs under multirun/evaluate/quick/ and .../full/, and compare.md (written into the
    primary config's dir) saw only one of them."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from gclsampler.evaluate import register_configs

    register_configs()
    dirs = set()
    for suite in ("quick", "full"):
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose(config_name="evaluate", overrides=[f"suite={suite}"], return_hydra_config=True)
        sweep = OmegaConf.to_container(cfg.hydra.sweep, resolve=False)
        dirs.add(sweep["dir"])
        assert "${suite.name}" in sweep["subdir"] and "${hydra.job.num}" in sweep["subdir"]
    assert len(dirs) == 1 and "suite" not in dirs.pop()


def test_find_runs_orders_jobs_by_number(tmp_path):
    for job in ("10_full", "2_quick", "0_full", "notes"):
        _write(tmp_path, job, _rows({("w1", "gcl"): 1.0}))
    assert [p.name for p in find_runs(tmp_path)] == ["0_full", "2_quick", "10_full", "notes"]


def test_callback_reports_a_summary_it_cannot_write_in_one_line(tmp_path, capsys):
    """The jobs' own results stand; the sweep ends with one line on why compare.md is missing."""
    from omegaconf import OmegaConf

    from gclsampler.compare import CompareCallback

    _write(tmp_path, "0", _rows({("w1", "gcl"): 1.0}))
    _write(tmp_path, "1", _rows({("w1", "gcl"): 1.0}).assign(plan_arch="ampere", cross_arch=True))
    cfg = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}, "plots": False})
    CompareCallback().on_multirun_end(cfg)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compare.md not written" in err[0] and "different archs" in err[0]
    assert not (tmp_path / "compare.md").exists()
    _write(tmp_path, "1b", _rows({("w1", "gcl"): 2.0}, seed=1))
    (tmp_path / "1" / "results.csv").unlink()
    CompareCallback().on_multirun_end(cfg)
    assert "compared 2 runs" in capsys.readouterr().out and (tmp_path / "compare.md").exists()


def test_head_to_head_section_shows_chance_only_where_every_run_has_spreads(tmp_path):
    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 3.0, ("w2", "pka"): 1.0}
    a = _rows(errs, seed=0).assign(spread_sd=1.0)
    b = _rows(errs, seed=1).assign(spread_sd=1.0)
    c = _rows(errs, seed=2)  # an older results.csv: no spread
    md = write_comparison([load_run(_write(tmp_path, "a", a)), load_run(_write(tmp_path, "b", b))],
                          tmp_path / "ab", plots=False).read_text()
    assert "| **all runs** | 2 / 0 / 2 (chance 2.0 / 0.0 / 2.0); Pareto 2 / 2 |" in md
    h = pd.read_csv(tmp_path / "ab" / "compare_head_to_head.csv")
    assert h["expected_lower"].tolist() == [1.0, 1.0]
    md = write_comparison([load_run(_write(tmp_path, "a2", a)), load_run(_write(tmp_path, "c", c))],
                          tmp_path / "ac", plots=False).read_text()
    assert "| a2 | 1 / 0 / 1 (chance 1.0 / 0.0 / 1.0); Pareto 1 / 1 |" in md
    assert "| **all runs** | 2 / 0 / 2; Pareto 2 / 2 |" in md


@pytest.mark.parametrize("edit, needle", [
    (lambda df: df.assign(error_cycles=[1.0, -50.0] + [1.0] * (len(df) - 2)),
     "results.csv:3: error_cycles: negative (-50)"),
    (lambda df: df.assign(error_cycles_rerun=[np.nan, -0.5] + [np.nan] * (len(df) - 2)),
     "results.csv:3: error_cycles_rerun: negative (-0.5)"),
    (lambda df: df.assign(error_cycles=[1.0, np.inf] + [1.0] * (len(df) - 2)),
     "results.csv:3: error_cycles: infinite; evaluate.py writes a finite error"),
    (lambda df: df.assign(error_cycles=[np.inf] * len(df)),  # every method's: nothing to compare it with
     "results.csv:2: error_cycles: infinite"),
    (lambda df: df.assign(error_cycles_rerun=[np.nan, np.inf] + [np.nan] * (len(df) - 2)),
     "results.csv:3: error_cycles_rerun: infinite"),
    (lambda df: pd.concat([df, df.iloc[[2]]], ignore_index=True),
     "results.csv:6: duplicate row: workload 'w2', method 'gcl', arch 'turing', seed 0 is already on line 4"),
    (lambda df: df.assign(seed=[0.0, 1.7] + [0.0] * (len(df) - 2)),
     "results.csv:3: seed: expected a whole number, found 1.7"),
])
def test_values_evaluate_never_writes_are_refused_at_their_line(tmp_path, edit, needle):
    """A negative error read as "<0.01" (the best score), a pasted-twice row counted its plan
    twice, and a seed of 1.7 became seed 1: each is one located error now."""
    d = _write(tmp_path, "r", edit(_rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0})))
    with pytest.raises(EvaluationError) as e:
        load_run(d)
    assert str(e.value).startswith(str(d / "results.csv")) and needle in str(e.value), str(e.value)


def test_a_negative_error_is_never_shown_as_the_best_score():
    from gclsampler.compare import _pct
    from gclsampler.report import _fmt_err

    assert _pct(-50.0) == "-50.00" and _fmt_err(-50.0) == "-50.00" and _fmt_err(-0.001) == "-0.00"
    assert _pct(0.004) == "<0.01" and _fmt_err(0.0) == "<0.01"


@pytest.mark.parametrize("column, value, needle", [
    ("error_cycles", np.nan, "error_cycles: empty for workload 'w2', method 'gcl', arch 'turing', which the other"),
    ("speedup", -5.0, "speedup: -5; a plan's speedup is > 0"),
    ("speedup", 0.0, "speedup: 0; a plan's speedup is > 0"),
    ("n_simulated", -1.0, "n_simulated: -1; a plan's n_simulated is >= 1"),
    ("cross_arch", True, "cross_arch: True for arch 'turing' with plan_arch 'turing'; evaluate.py writes"),
])
def test_a_row_evaluate_never_writes_is_refused_at_its_line(tmp_path, column, value, needle):
    """An empty cycle error in one method's row was averaged over one workload fewer than the
    other methods, with nothing in compare.md saying so; a negative or zero speedup and a
    negative count were averaged in. Each is now refused, naming the line."""
    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w1", "pka"): 3.0, ("w2", "pka"): 4.0})
    at = int(np.flatnonzero(((df["workload"] == "w2") & (df["method"] == "gcl") & (df["arch"] == "turing")).to_numpy())[0])
    df.loc[at, column] = value
    with pytest.raises(EvaluationError, match=re.escape(f"results.csv:{at + 2}: {needle}")):
        load_run(_write(tmp_path, "r", df))


def test_a_workload_without_cycles_for_every_method_is_still_read(tmp_path):
    """An nsys-only workload has no cycle error for any method: that is no gap, and is read."""
    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w1", "pka"): 3.0, ("w2", "pka"): 4.0})
    df.loc[df["workload"] == "w2", "error_cycles"] = np.nan
    assert load_run(_write(tmp_path, "r", df)).results["error_cycles"].isna().sum() == 4


def test_an_infinite_speedup_counts_in_the_harmonic_mean(tmp_path):
    """1/inf is 0: the harmonic mean of 2 and inf is 4, in compare's tables and in
    evaluate's report (both go through score.harmonic_mean); dropping inf gave 2."""
    from gclsampler.score import harmonic_mean

    assert harmonic_mean([2.0, np.inf]) == pytest.approx(4.0) and harmonic_mean([np.inf]) == np.inf
    assert harmonic_mean([2.0, np.nan]) == pytest.approx(2.0)
    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 1.0}, speedup=2.0)
    df.loc[(df["workload"] == "w2") & (df["arch"] == "turing"), "speedup"] = np.inf
    run = load_run(_write(tmp_path, "r", df))
    per = per_run_table([run], ["w1", "w2"], ["gcl"]).iloc[0]
    assert per["speedup_hmean"] == pytest.approx(4.0)


def test_an_infinite_speedup_counts_in_the_pareto_counts(tmp_path):
    """A speedup of inf (sampled time 0) is the highest speedup, not a missing one: a plan lower
    on error at speedup inf beats one at 10x on both, and two plans at inf tie on speed. The
    Pareto counts dropped such a workload (Pareto 1 / 0 here, where pka beats gcl on w2)."""
    from gclsampler.score import pareto_counts

    assert pareto_counts([2.0], [10.0], [0.5], [np.inf]) == (0.0, 1.0)
    assert pareto_counts([0.5], [np.inf], [2.0], [np.inf]) == (1.0, 0.0)
    assert pareto_counts([1.0], [np.inf], [1.0], [5.0]) == (1.0, 0.0)
    assert pareto_counts([1.0], [np.inf], [1.0], [np.inf]) == (0.0, 0.0)
    assert pareto_counts([1.0], [np.nan], [2.0], [5.0]) == (0.0, 0.0)  # a missing number still counts for neither
    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w1", "pka"): 3.0, ("w2", "pka"): 0.5})
    df.loc[(df["workload"] == "w2") & (df["method"] == "pka") & (df["arch"] == "turing"), "speedup"] = np.inf
    run = load_run(_write(tmp_path, "r", df))
    h = head_to_head([run], ["w1", "w2"], ["gcl", "pka"], "gcl").iloc[0]
    assert (h["dominates"], h["dominated"]) == (1.0, 1.0)


def test_a_method_without_plan_arch_rows_is_left_out_not_a_traceback(tmp_path):
    """A run holding pka's cross-arch rows but none on the plan arch counted as having pka, and
    per_run_table died on the missing row (IndexError); a run with no plan-arch rows at all too."""
    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 1.5, ("w2", "pka"): 2.5}
    a = _write(tmp_path, "a", _rows(errs))
    df = _rows(errs, seed=1)
    b = _write(tmp_path, "b", df[~((df["method"] == "pka") & (df["arch"] == "turing"))])
    text = compare_dirs([a, b], tmp_path / "o", plots=False).read_text()
    assert "Left out, not in every run: methods pka (no turing rows in b)." in text
    assert set(pd.read_csv(tmp_path / "o" / "compare.csv")["method"]) == {"gcl"}
    c = _write(tmp_path, "c", df[df["arch"] != "turing"])
    with pytest.raises(EvaluationError, match=rf"^{c / 'results.csv'}: arch: no rows on the plan arch turing"):
        compare_dirs([a, c], tmp_path / "o2", plots=False)
    r = _cli(a, c, "--out", tmp_path / "o3", "--no-plots")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "no rows on the plan arch turing" in lines[0], r.stderr
    assert not (tmp_path / "o3").exists()


def test_runs_of_different_experiments_are_refused_and_differences_noted(tmp_path):
    """ε of a method that differs between runs makes them different experiments (refused at
    the line); invocation counts (a synthesis seed draws bfs's graph: 20-26 launches), archs or
    seed counts that differ are named."""
    errs = {("w1", "gcl"): 1.0, ("w1", "stem_root"): 2.0}
    a = _write(tmp_path, "a", _rows(errs).assign(epsilon=lambda d: np.where(d.method == "stem_root", 0.25, np.nan)))
    b = _rows(errs, seed=1).assign(epsilon=lambda d: np.where(d.method == "stem_root", 0.05, np.nan))
    b = _write(tmp_path, "b", b)
    with pytest.raises(EvaluationError) as e:
        compare_dirs([a, b], tmp_path / "o", plots=False)
    assert str(e.value) == (f"{b / 'results.csv'}:4: epsilon: method 'stem_root' has epsilon 0.05 here and 0.25 in "
                            f"{a / 'results.csv'}; these runs are not the same experiment (compare runs made with "
                            "the same suite settings)")
    assert not (tmp_path / "o").exists()
    c = _rows(errs, seed=1).assign(epsilon=lambda d: np.where(d.method == "stem_root", 0.25, np.nan), n_invocations=80)
    text = compare_dirs([a, _write(tmp_path, "c", c)], tmp_path / "oc", plots=False).read_text()
    assert "Invocation counts differ between runs for w1 (a 100, c 80)" in text
    # the same experiment, but b has no ada rows and two seeds of gcl: compared, with notes
    d = _rows(errs, seed=1).assign(epsilon=lambda d: np.where(d.method == "stem_root", 0.25, np.nan))
    d = pd.concat([d, d[d["method"] == "gcl"].assign(seed=2, stochastic=True)], ignore_index=True)
    d.loc[d["method"] == "gcl", "stochastic"] = True
    d = _write(tmp_path, "d", d[d["arch"] == "turing"])
    text = compare_dirs([a, d], tmp_path / "o", plots=False).read_text()
    assert "Archs differ between runs: a ada, turing; d turing." in text
    assert "Seeds per workload differ between runs for gcl (a 1, d 2)" in text


def _real(df: pd.DataFrame, workloads=None) -> pd.DataFrame:
    """The rows of ``workloads`` (all when None) as measured on an H200, the rest synthetic."""
    df = df.copy()
    real = df["workload"].isin(workloads) if workloads is not None else pd.Series(True, index=df.index)
    df["data"] = np.where(real, "real", "synthetic")
    df["synthetic"] = ~real
    df["gpu"] = np.where(real, "NVIDIA H200", "")
    return df


def test_one_workload_synthetic_in_one_run_and_real_in_another_is_refused(tmp_path):
    """Its cells were averaged into one mean under a banner saying every row is marked; no row was."""
    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}
    a = _write(tmp_path, "synth", _rows(errs))
    b = _write(tmp_path, "real", _real(_rows(errs, seed=1)))
    with pytest.raises(EvaluationError) as e:
        compare_dirs([a, b], tmp_path / "o", plots=False)
    assert str(e.value) == (f"{b / 'results.csv'}:2: data: workload 'w1' is REAL here and SYNTHETIC in "
                            f"{a / 'results.csv'}; a mean over both would pool a synthetic ground truth with a "
                            "measured one: compare the synthetic runs and the real runs separately")
    r = _cli(a, b, "--out", tmp_path / "o2", "--no-plots")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "data: workload 'w1' is REAL here" in lines[0], r.stderr
    assert not (tmp_path / "o2").exists()
    # REAL beside unlabelled (workload.json says neither) was pooled under the REAL banner
    c = _write(tmp_path, "unlabelled", _real(_rows(errs, seed=2)).assign(data=""))
    with pytest.raises(EvaluationError, match=r"^.*unlabelled/results\.csv:2: data: workload 'w1' is unlabelled "
                                              r"\(workload\.json says neither\) here and REAL in .*a labelled ground "
                                              r"truth with one nobody labelled: compare the real runs and the "
                                              r"unlabelled runs separately$"):
        compare_dirs([b, c], tmp_path / "o3", plots=False)


def test_every_run_row_and_csv_says_what_its_data_is(tmp_path, monkeypatch):
    """compare.md's MIXED DATA banner says rows are marked (SYNTHETIC) / (REAL): they are, the
    runs table has a data column, and every CSV carries one, so numbers copied out stay labelled."""
    import gclsampler.compare as compare

    stamps = []
    monkeypatch.setattr(compare, "_plot", lambda across, per_run, path, stamp, **kw: stamps.append(stamp))
    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 1.0, ("w2", "pka"): 3.0}
    a = _write(tmp_path, "a", _real(_rows(errs), ["w2"]))
    b = _write(tmp_path, "b", _real(_rows(errs, seed=1), ["w2"]))
    text = write_comparison([load_run(a), load_run(b)], tmp_path / "o").read_text()
    assert "MIXED DATA" in text
    assert f"| a | `{a / 'results.csv'}` | 0 | SYNTHETIC + REAL |" in text
    assert "| w1 (SYNTHETIC) | " in text and "| w2 (REAL) | " in text
    assert stamps == ["SYNTHETIC + REAL DATA (rows labelled in compare.md)"]
    out = tmp_path / "o"
    assert set(pd.read_csv(out / "compare.csv")["data"]) == {"synthetic+real"}
    assert set(pd.read_csv(out / "compare_head_to_head.csv")["data"]) == {"synthetic+real"}
    w = pd.read_csv(out / "compare_workloads.csv").drop_duplicates("workload").set_index("workload")["data"]
    assert w.to_dict() == {"w1": "synthetic", "w2": "real"}
    # all real: each run labelled REAL, no SYNTHETIC anywhere
    c = _write(tmp_path, "c", _real(_rows(errs)))
    d = _write(tmp_path, "d", _real(_rows(errs, seed=1)))
    text = write_comparison([load_run(c), load_run(d)], tmp_path / "o2", plots=False).read_text()
    assert f"| d | `{d / 'results.csv'}` | n/a (measured; methods' seed 1) | REAL |" in text and "SYNTHETIC" not in text
    # ... and each workload row says (REAL), as the runs' own report.md does: the REAL DATA
    # banner promises measured data, and a row copied out of the table must still say so
    from gclsampler.report import write_report

    assert "| w1 (REAL) | " in text and "| w2 (REAL) | " in text
    own = write_report(load_run(c).results, tmp_path / "c_report", plots=False).read_text()
    assert "| w1 (REAL) | " in own and "| w2 (REAL) | " in own
    assert set(pd.read_csv(tmp_path / "o2" / "compare.csv")["data"]) == {"real"}
    # results.csv without a data column and not synthetic: unlabelled, said so
    e = _write(tmp_path, "e", _rows(errs, synthetic=False).drop(columns=["data", "gpu"]))
    f = _write(tmp_path, "f", _rows(errs, seed=1, synthetic=False).drop(columns=["data", "gpu"]))
    text = write_comparison([load_run(e), load_run(f)], tmp_path / "o3", plots=False).read_text()
    assert f"| e | `{e / 'results.csv'}` | 0 | unlabelled |" in text
    assert set(pd.read_csv(tmp_path / "o3" / "compare_workloads.csv")["data"]) == {"unlabelled"}


def _sweep_cfg(root: Path):
    from omegaconf import OmegaConf

    return OmegaConf.create({"hydra": {"sweep": {"dir": str(root)}}, "plots": False})


def test_callback_compares_only_this_multiruns_jobs(tmp_path, capsys):
    """A sweep dir reused by an earlier multirun: its jobs are not this one's. A 1-job multirun
    was compared against a stale job; now it writes no comparison, and 2 new jobs are compared alone."""
    from gclsampler.compare import CompareCallback

    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}
    for name in ("0_quick", "1_quick"):  # an earlier multirun's jobs
        stale = _write(tmp_path, name, _rows(errs, seed=7))
        os.utime(stale / "results.csv", (1_000_000_000, 1_000_000_000))
    cb = CompareCallback()
    cb.on_multirun_start(_sweep_cfg(tmp_path))
    (tmp_path / "0_quick" / "results.csv").unlink()
    _rows(errs, seed=0).to_csv(tmp_path / "0_quick" / "results.csv", index=False)  # this multirun's one job
    cb.on_multirun_end(_sweep_cfg(tmp_path))
    assert not (tmp_path / "compare.md").exists() and capsys.readouterr().out == ""
    _write(tmp_path, "2_quick", _rows(errs, seed=1))
    cb.on_multirun_end(_sweep_cfg(tmp_path))
    assert "compared 2 runs" in capsys.readouterr().out
    assert sorted(set(pd.read_csv(tmp_path / "compare.csv")["seed"])) == [0, 1]  # not the stale seed 7


def test_callback_takes_the_jobs_hydra_reported_ended(tmp_path, capsys):
    """Under Hydra's basic launcher on_job_end runs here: exactly the jobs that completed are compared."""
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from gclsampler.compare import CompareCallback

    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}
    cb = CompareCallback()
    cb.on_multirun_start(_sweep_cfg(tmp_path))
    jobs = [_write(tmp_path, str(i), _rows(errs, seed=i)) for i in range(3)]  # all fresh; job 1 failed
    for j, status in zip(jobs, ("COMPLETED", "FAILED", "COMPLETED")):
        cb.on_job_end(OmegaConf.create({"hydra": {"runtime": {"output_dir": str(j)}}}),
                      SimpleNamespace(status=SimpleNamespace(name=status)))
    cb.on_multirun_end(_sweep_cfg(tmp_path))
    assert "compared 2 runs" in capsys.readouterr().out
    assert sorted(set(pd.read_csv(tmp_path / "compare.csv")["seed"])) == [0, 2]


def test_callback_never_overwrites_files_compare_did_not_write(tmp_path, capsys):
    """The sweep dir is the user's too: their compare.md or compare.csv stays, with one line on why
    no comparison was written; compare's own earlier files are rewritten."""
    from gclsampler.compare import CompareCallback

    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}
    for i in range(2):
        _write(tmp_path, str(i), _rows(errs, seed=i))
    for name, text in (("compare.md", "# my notes on the sweep\n"), ("compare.csv", "a,b\n1,2\n"),
                       ("compare_head_to_head.csv", "x\n")):
        (tmp_path / name).write_text(text)
        CompareCallback().on_multirun_end(_sweep_cfg(tmp_path))
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{tmp_path / name}: exists and was not written by gclsampler compare" in err[0]
        assert (tmp_path / name).read_text() == text
        assert not (tmp_path / "compare_workloads.csv").exists()
        (tmp_path / name).unlink()
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "compare_speedup_vs_error.png").write_bytes(b"my figure")
    cfg = _sweep_cfg(tmp_path)
    cfg.plots = True
    CompareCallback().on_multirun_end(cfg)
    assert "compare_speedup_vs_error.png: exists and was not written" in capsys.readouterr().err
    assert (tmp_path / "plots" / "compare_speedup_vs_error.png").read_bytes() == b"my figure"
    (tmp_path / "plots" / "compare_speedup_vs_error.png").unlink()
    for _ in range(2):  # its own files, plot included, are written again
        CompareCallback().on_multirun_end(cfg)
        assert "compared 2 runs" in capsys.readouterr().out
    assert (tmp_path / "plots" / "compare_speedup_vs_error.png").stat().st_size > 1000


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc, where no directory can be made")
def test_an_out_dir_that_cannot_be_made_is_named_not_its_hidden_temp_dir(tmp_path):
    a = _write(tmp_path, "a", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}))
    b = _write(tmp_path, "b", _rows({("w1", "gcl"): 1.5, ("w1", "pka"): 2.5}, seed=1))
    r = _cli(a, b, "--out", "/proc/gclsampler-compare-test", "--no-plots")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("gclsampler: error: /proc/gclsampler-compare-test: ") and ".tmp-" not in lines[0]


def test_runs_with_nothing_in_common_say_what_each_has(tmp_path):
    a = _write(tmp_path, "a", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}))
    b = _write(tmp_path, "b", _rows({("w2", "gcl"): 1.0, ("w2", "pka"): 2.0}, seed=1))
    with pytest.raises(EvaluationError, match=r"^compare: the runs have no workload in common \(a: w1; b: w2\)$"):
        compare_dirs([a, b], tmp_path / "o", plots=False)
    c = _write(tmp_path, "c", _rows({("w1", "gcl"): 1.0, ("w2", "pka"): 2.0}, seed=2))
    d = _write(tmp_path, "d", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 1.0,
                                     ("w2", "pka"): 2.0}, seed=3))
    with pytest.raises(EvaluationError, match=r"c/results\.csv: method 'pka' has no turing row \(sweep rows aside\) "
                                              r"for workload 'w1', although both are in the run"):
        compare_dirs([c, d], tmp_path / "o", plots=False)
    assert not (tmp_path / "o").exists()


def test_a_method_the_data_cannot_feed_is_compared_over_the_other_workloads(tmp_path):
    """evaluate.py writes no row for pka and sieve on a workload without Nsight Compute's metrics
    (the REAL LLM) and names them in unavailable.csv; compare refused every suite=real run for
    the missing row, where report.md counts the method over the other workloads."""
    errors = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 3.0}
    runs = [_write(tmp_path, name, _rows(errors, seed=seed)) for name, seed in (("a", 0), ("b", 1))]
    with pytest.raises(EvaluationError, match=r"method 'pka' has no turing row"):  # no word why: refused
        compare_dirs(runs, tmp_path / "o", plots=False)
    for r in runs:
        (r / "unavailable.csv").write_text("workload,method,reason\nw2,pka,profile.csv has none of the 12 PKA metrics\n")
    compare_dirs(runs, tmp_path / "o", plots=False)
    text = (tmp_path / "o" / "compare.md").read_text()
    assert "Not run: pka on w2 (the runs' unavailable.csv" in text and "over the other 1 of 2 workloads" in text
    assert "not run (unavailable.csv)" in text and "1 / 0 / 0 (over 1 of 2 workloads)" in text


def test_a_real_run_scored_on_a_simulator_too_has_no_synthesis_seed(tmp_path):
    """A REAL workload's run with cross-arch rows on a simulated profile (data "real+simulated")
    was listed with its methods' seed as its "synthesis seed", as if its data were synthesized."""
    errs = {("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}

    def simulated_cross_arch(df):
        df = _real(df)
        other = df["arch"] == "ada"
        df.loc[other, "arch"] = "accelsim-SM86_RTX3070"
        df["simulated_by"] = np.where(other, "Accel-Sim SM86_RTX3070, one SM (SM 0's share)", "")
        return df

    a = _write(tmp_path, "a", simulated_cross_arch(_rows(errs)))
    b = _write(tmp_path, "b", simulated_cross_arch(_rows(errs, seed=1)))
    text = write_comparison([load_run(a), load_run(b)], tmp_path / "o", plots=False).read_text()
    assert f"| a | `{a / 'results.csv'}` | n/a (measured; methods' seed 0) | REAL + SIMULATED |" in text
    assert f"| b | `{b / 'results.csv'}` | n/a (measured; methods' seed 1) | REAL + SIMULATED |" in text


def test_several_deterministic_seeds_are_named_as_numbers(tmp_path):
    """The error listed numpy reprs: "([np.float64(0.0), np.float64(3.0)])"."""
    df = _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0})
    df.loc[df["method"] == "pka", "seed"] = 3
    with pytest.raises(EvaluationError, match=r"several seeds \(0, 3\); expected one evaluate\.py run$"):
        load_run(_write(tmp_path, "r", df))


def test_an_infinite_mean_speedup_is_explained_where_it_shows_as_n_a(tmp_path):
    """A plan whose sampled invocations all took 0 ns has speedup inf, and a mean over workloads
    with it is inf: report.md and compare.md printed "n/a" for it as for a missing number, with
    no word on why; only bench/targets.py said. Both now say it under their tables."""
    from gclsampler.report import write_report

    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w1", "pka"): 2.0, ("w2", "pka"): 3.0}
    df = _rows(errs)
    df.loc[(df["workload"] == "w1") & (df["method"] == "gcl") & (df["arch"] == "turing"), "speedup"] = np.inf
    own = write_report(df, tmp_path / "r", plots=False).read_text()
    assert "n/a" in own and "sampled time 0" in own
    plain = write_report(_rows(errs), tmp_path / "r2", plots=False).read_text()
    assert "sampled time 0" not in plain
    runs = [load_run(_write(tmp_path, "a", df)), load_run(_write(tmp_path, "b", _rows(errs, seed=1)))]
    text = write_comparison(runs, tmp_path / "o", plots=False).read_text()
    assert "| gcl | " in text and "n/a" in text and "sampled time 0" in text
    # the whole note once, under the methods table, one blank line either side (the Per run
    # section opens with its own); report.md carries the same note
    from gclsampler.report import INFINITE_SPEEDUP_NOTE

    at = text.splitlines().index(INFINITE_SPEEDUP_NOTE)
    assert text.splitlines()[at - 2].startswith("| ") and text.splitlines()[at - 1:at + 3:2] == ["", ""]
    assert text.splitlines()[at + 2] == "## Per run" and text.count(INFINITE_SPEEDUP_NOTE) == 1
    assert INFINITE_SPEEDUP_NOTE in own
    text = write_comparison([load_run(tmp_path / "b"), load_run(_write(tmp_path, "c", _rows(errs, seed=2)))],
                            tmp_path / "o2", plots=False).read_text()
    assert "sampled time 0" not in text


def test_a_cross_arch_mean_over_fewer_workloads_says_so(tmp_path):
    """A workload with no ground truth on an arch (a REAL one measured on one GPU) is "—" in the
    cross-arch table, and that arch's AVG was a mean over the other workloads beside the plan
    arch's mean over all, with nothing saying so (the comparison table's AVG row does)."""
    from gclsampler.report import write_report

    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w1", "pka"): 2.0, ("w2", "pka"): 2.0}
    df = _rows(errs, ada=2.0)
    df = df[~((df["workload"] == "w2") & (df["arch"] == "ada"))]
    text = write_report(df, tmp_path / "r", plots=False).read_text()
    gcl = text.split("### gcl\n")[1].split("###")[0]
    avg = next(line for line in gcl.splitlines() if line.startswith("| **AVG**"))
    assert avg == "| **AVG** | 2.00 | 10.00× | 2.00 (1 of 2 workloads) | 10.00× |"
    full = write_report(_rows(errs, ada=2.0), tmp_path / "r2", plots=False).read_text()
    assert "of 2 workloads" not in full


def test_a_cross_arch_mean_that_skips_a_workload_without_cycles_says_so(tmp_path):
    """A workload whose ground truth on an arch has no cycle counts has a row there with a NaN
    error; the mean skips it, so the AVG covers fewer workloads than rows, and says so."""
    from gclsampler.report import write_report

    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w1", "pka"): 2.0, ("w2", "pka"): 2.0}
    df = _rows(errs, ada=2.0)
    df.loc[(df["workload"] == "w2") & (df["arch"] == "ada"), "error_cycles"] = np.nan
    text = write_report(df, tmp_path / "r", plots=False).read_text()
    gcl = text.split("### gcl\n")[1].split("###")[0]
    avg = next(line for line in gcl.splitlines() if line.startswith("| **AVG**"))
    assert "2.00 (1 of 2 workloads)" in avg


def test_an_infinite_mean_speedup_is_drawn_at_the_plot_edge(tmp_path, monkeypatch):
    """compare's plot left a method whose mean speedup is inf (a plan of sampled time 0) out, its
    dot and its mean, as if it had not run; they are drawn past the highest finite speedup,
    marked "∞", with a legend entry saying what that is."""
    import warnings

    from gclsampler import report

    figs = []

    def fake(fig, path, synthetic=False, legend_of=None):
        legend_of.legend()
        figs.append(fig)
        return path

    monkeypatch.setattr(report, "_savefig", fake)
    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w1", "pka"): 2.0, ("w2", "pka"): 3.0}
    df = _rows(errs)
    df.loc[(df["workload"] == "w1") & (df["method"] == "gcl") & (df["arch"] == "turing"), "speedup"] = np.inf
    runs = [load_run(_write(tmp_path, "a", df)), load_run(_write(tmp_path, "b", _rows(errs, seed=1)))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_comparison(runs, tmp_path / "o")
    ax = figs[0].axes[0]
    edge = 40.0  # 4x the highest finite speedup (10)
    gcl_mean = [ln for ln in ax.lines if ln.get_marker() == ">"]
    assert [ln.get_xdata()[0] for ln in gcl_mean] == [edge]  # gcl's mean over runs (inf), at the edge
    dots = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections if len(c.get_offsets())])
    assert edge in dots and np.isfinite(dots).all()  # run a's gcl dot too
    assert any(t.get_text().strip() == "∞" for t in ax.texts)
    assert report.INFINITE_LABEL in [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("by_csv", [False, True])
def test_out_inside_a_run_is_refused_however_the_run_is_named(tmp_path, by_csv):
    """A run named by its results.csv was not a directory input, so --out r1/cmp was written
    into the run; named as a directory it was refused ("inside the input")."""
    a = _write(tmp_path, "r0", _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0}))
    b = _write(tmp_path, "r1", _rows({("w1", "gcl"): 1.5, ("w1", "pka"): 2.5}, seed=1))
    runs = [a / "results.csv", b / "results.csv"] if by_csv else [a, b]
    r = _cli(*runs, "--out", b / "cmp", "--no-plots")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "inside" in lines[0], r.stderr
    assert not (b / "cmp").exists()
