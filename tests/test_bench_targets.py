"""bench/targets.py: issue 12's targets per evaluate.py run, from the runs' results.csv alone."""

from __future__ import annotations

import numpy as np

from test_compare import _rows, _write
from test_whole_kernel import _bench_module

WORKLOADS = [f"w{i}" for i in range(10)]


def _run(gcl: dict[str, float], sieve_exact: int = 0) -> dict[tuple[str, str], float]:
    """Errors of every method the targets need: pka 2 %, photon 0.5 %, sieve 0 % on its first
    ``sieve_exact`` workloads (a census: nobody can be lower there) and 2 % elsewhere,
    gcl_stem and stem_root 3 % (equal plans: on each other's front)."""
    errors = {}
    for i, w in enumerate(WORKLOADS):
        errors.update({(w, "gcl"): gcl.get(w, 1.0), (w, "pka"): 2.0, (w, "photon"): 0.5,
                       (w, "sieve"): 0.0 if i < sieve_exact else 2.0, (w, "gcl_stem"): 3.0,
                       (w, "stem_root"): 3.0})
    return errors


def test_targets_count_what_each_run_meets(tmp_path, capsys):
    targets = _bench_module("targets")
    a = _write(tmp_path, "s0", _rows(_run({"w9": 6.0}, sieve_exact=2), seed=0))
    b = _write(tmp_path, "s1", _rows(_run({}, sieve_exact=2), seed=1, ada=4.0))
    assert targets.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    lines = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines() if line.startswith("| ")}
    # s0: mean 1.5 %, worst w9 6 %; s1: 1 % everywhere
    assert "| 1.50 | 1.00 | 2 of 2 |" in lines["`gcl` mean ≤ 2 %"]
    assert "| 6.00 w9 | 1.00 w0 | 1 of 2 |" in lines["no workload above 5 %"]
    assert "| 9 | 10 | 2 of 2 |" in lines["lower than pka on ≥ 8 (at most 10 possible)"]
    # sieve is exact on two workloads: at most 8; s0 loses w9 as well, so 7
    assert "| 7 | 8 | 1 of 2 |" in lines["lower than sieve on ≥ 8 (at most 8 possible)"]
    assert "| 0 | 0 | 0 of 2 |" in lines["lower than photon on ≥ 8 (at most 10 possible)"]
    assert "2 of 2" in lines["speedup ≥ pka's (gcl / pka)"]  # equal speedups hold
    assert "| 10 | 10 | 2 of 2 |" in lines["`gcl_stem` on stem_root's front on ≥ 9"]
    assert "| 1.50 | 4.00 | 1 of 2 |" in lines["cross-arch mean ≤ 3 %"]  # s1's ada errors are 4x


def test_targets_give_the_chance_of_each_count_from_the_spreads(tmp_path, capsys):
    """Equal spreads make every workload a coin flip, except where the rival is exact (spread 0):
    8 of the 8 others against sieve is 1/256, 8 of 10 against pka 56/1024."""
    targets = _bench_module("targets")
    df = _rows(_run({}, sieve_exact=2), seed=0)
    exact = (df["method"] == "sieve") & (df["error_cycles"] == 0.0)
    df["spread_sd"] = np.where(exact, 0.0, 1.0)
    run = _write(tmp_path, "s0", df)
    assert targets.main([str(run)]) == 0
    lines = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()
             if line.startswith("| ")}
    assert "| 5.5 % | mean 5.5 % |" in lines["chance of ≥ 8 lower than pka, from the spreads"]
    assert "| 0.4 % | mean 0.4 % |" in lines["chance of ≥ 8 lower than sieve, from the spreads"]
    # without spreads (an older results.csv) there is no chance to give
    assert targets.main([str(_write(tmp_path, "old", _rows(_run({}), seed=1)))]) == 0
    assert "| n/a | mean n/a |" in capsys.readouterr().out


def test_targets_on_the_second_run_and_bad_input(tmp_path, capsys):
    targets = _bench_module("targets")
    df = _rows(_run({}), seed=0)
    own = ~df["cross_arch"].astype(bool)
    df.loc[own, "error_cycles_rerun"] = df.loc[own, "error_cycles"]
    df.loc[own & (df["method"] == "gcl"), "error_cycles_rerun"] = 4.0
    run = _write(tmp_path, "s0", df)
    assert targets.main([str(run)]) == 0
    assert "| 1.00 | 1 of 1 |" in capsys.readouterr().out
    assert targets.main([str(run), "--second-run"]) == 0
    out = capsys.readouterr().out
    assert "second run of turing" in out and "| 4.00 | 0 of 1 |" in out
    # a run without the second run, or without a method the targets need, is refused
    old = _write(tmp_path, "old", _rows(_run({}), seed=1))
    assert targets.main([str(old), "--second-run"]) == 2
    assert "error_cycles_rerun" in capsys.readouterr().err
    no_photon = _rows({k: v for k, v in _run({}).items() if k[1] != "photon"}, seed=2)
    assert targets.main([str(_write(tmp_path, "partial", no_photon))]) == 2
    assert "method 'photon' is not in every run" in capsys.readouterr().err


def test_a_run_without_plan_arch_rows_of_a_method_is_refused_not_a_traceback(tmp_path, capsys):
    """gcl_stem's cross-arch rows alone counted as the method being in the run, and the per-run
    table died with an IndexError; now it is missing from that run, and the targets need it."""
    targets = _bench_module("targets")
    a = _write(tmp_path, "s0", _rows(_run({}), seed=0))
    df = _rows(_run({}), seed=1)
    b = _write(tmp_path, "s1", df[~((df["method"] == "gcl_stem") & (df["arch"] == "turing"))])
    assert targets.main([str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "method 'gcl_stem' is not in every run" in err[0]


def test_targets_say_what_the_runs_data_is(tmp_path, capsys):
    """All-REAL runs were printed as "SYNTHETIC unless the runs say otherwise"."""
    targets = _bench_module("targets")
    real = [_write(tmp_path, f"r{s}", _rows(_run({}), seed=s).assign(synthetic=False, data="real", gpu="NVIDIA H200"))
            for s in (0, 1)]
    assert targets.main([str(p) for p in real]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("REAL DATA (NVIDIA H200); plans on turing") and "SYNTHETIC" not in first
    synth = [_write(tmp_path, f"s{s}", _rows(_run({}), seed=s)) for s in (0, 1)]
    assert targets.main([str(p) for p in synth]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("SYNTHETIC DATA; plans on turing")


def test_targets_read_a_sweep_directory_as_compare_does(tmp_path, capsys):
    """The docs say targets.py reads the same runs as `gclsampler compare`; it refused a sweep dir."""
    targets = _bench_module("targets")
    sweep = tmp_path / "sweep"
    for s in (0, 1):
        _write(sweep, f"{s}_full", _rows(_run({}), seed=s))
    assert targets.main([str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "| target | 0_full | 1_full | holds on, 2 runs |" in out
    (tmp_path / "empty").mkdir()
    assert targets.main([str(tmp_path / "empty")]) == 2
    assert "no results.csv in it or in its subdirectories" in capsys.readouterr().err


def test_an_infinite_speedup_is_no_inf_cell_and_ties_on_the_front(tmp_path, capsys):
    """A plan of sampled time 0 has speedup inf: gcl's mean speedup was printed "inf" as if it
    were a number, and gcl_stem and stem_root both at inf (equal plans) were off each other's
    front, since inf >= inf - inf is False."""
    targets = _bench_module("targets")
    df = _rows(_run({}), seed=0)
    own = df["arch"] == "turing"
    df.loc[own & (df["method"] == "gcl") & (df["workload"] == "w3"), "speedup"] = np.inf
    df.loc[own & df["method"].isin(["gcl_stem", "stem_root"]) & (df["workload"] == "w4"), "speedup"] = np.inf
    assert targets.main([str(_write(tmp_path, "s0", df))]) == 0
    out = capsys.readouterr().out
    lines = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines() if line.startswith("| ")}
    assert "inf" not in lines["speedup ≥ pka's (gcl / pka)"].lower()
    assert "| n/a / 10.0× | 1 of 1 |" in lines["speedup ≥ pka's (gcl / pka)"]
    assert "| 10 | 1 of 1 |" in lines["`gcl_stem` on stem_root's front on ≥ 9"]
    # the n/a says what report.md and compare.md say of it, in report.py's words; no harmonic
    # mean is shown here, so not that sentence; and why the cell still holds the target
    from gclsampler.report import INFINITE_SPEEDUP

    note = [line for line in out.splitlines() if line.startswith("n/a speedup")]
    assert note == [f"{INFINITE_SPEEDUP} An infinite speedup is still no lower than any other."]
    assert not hasattr(targets, "INFINITE_SPEEDUP")


def test_a_target_a_run_cannot_be_judged_on_is_n_a_not_a_miss(tmp_path, capsys):
    """Runs scored on their plan arch alone (``suite.archs=[turing]``) have no cross-arch error:
    the row printed "nan" per run and "0 of 2", a miss counted for a target never measured
    (compare.md says n/a for the same number). Without cycle counts, the mean and the worst
    workload were "nan" too."""
    targets = _bench_module("targets")
    runs = [_write(tmp_path, f"s{s}", (lambda df: df[df["arch"] == "turing"])(_rows(_run({}), seed=s)))
            for s in (0, 1)]
    assert targets.main([str(p) for p in runs]) == 0
    out = capsys.readouterr().out
    lines = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines() if line.startswith("| ")}
    assert "nan" not in out.lower()
    assert "| n/a | n/a | n/a on 2 of 2 |" in lines["cross-arch mean ≤ 3 %"]
    assert "| 1.00 | 1.00 | 2 of 2 |" in lines["`gcl` mean ≤ 2 %"]  # the others as before
    # one run with another arch, one without: judged on the one that has it
    both = [runs[0], _write(tmp_path, "s2", _rows(_run({}), seed=2))]
    assert targets.main([str(p) for p in both]) == 0
    lines = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()
             if line.startswith("| ")}
    assert "| n/a | 1.00 | 1 of 2; n/a on 1 |" in lines["cross-arch mean ≤ 3 %"]


def test_a_speedup_miss_that_one_decimal_hides_is_printed_with_more(tmp_path, capsys):
    """Seed 0 printed "50.4 / 50.4×" beside a failed count (50.4386 against 50.4425): the cell
    takes as many decimals as show which is higher, and one where nothing is hidden."""
    targets = _bench_module("targets")
    df = _rows(_run({}), seed=0)
    df.loc[df["method"] == "gcl", "speedup"] = 10.0 - 0.004  # pka's is 10.0
    a = _write(tmp_path, "s0", df)
    b = _write(tmp_path, "s1", _rows(_run({}), seed=1))
    assert targets.main([str(a), str(b)]) == 0
    lines = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()
             if line.startswith("| ")}
    assert "| 9.996 / 10.000× | 10.0 / 10.0× | 1 of 2 |" in lines["speedup ≥ pka's (gcl / pka)"]


def test_a_count_over_fewer_workloads_says_over_how_many(tmp_path, capsys):
    """A workload without cycle counts has no error for any method, so "lower than pka" counted
    over the other 9 of 10 and printed a bare 9, as if over all 10; report.md and compare.md say
    "(over k of n workloads)" in the same cells."""
    targets = _bench_module("targets")
    runs = []
    for s in (0, 1):
        df = _rows(_run({}), seed=s)
        if s == 0:
            df.loc[df["workload"] == "w9", "error_cycles"] = np.nan
        runs.append(_write(tmp_path, f"s{s}", df))
    assert targets.main([str(p) for p in runs]) == 0
    lines = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()
             if line.startswith("| ")}
    assert "| 9 (over 9 of 10) | 10 | 2 of 2 |" in lines["lower than pka on ≥ 8 (at most 10 possible)"]
