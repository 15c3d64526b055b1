"""bench/ scripts given a path that is not there: one line naming it and exit status 2, never a
traceback, and never a check that passes on nothing."""

from __future__ import annotations

import sys

import pytest

from _bench_runs import bench_module as _bench


def _exit_status(call) -> int:
    try:
        rc = call()
    except SystemExit as exc:
        rc = exc.code
    return rc


def test_stem_bound_on_a_dir_without_workloads_is_no_pass(tmp_path, monkeypatch, capsys):
    """A mistyped suite dir printed "worst: 0/200 draws over epsilon: PASS" and exit 0."""
    monkeypatch.setattr(sys, "argv", ["stem_bound.py", str(tmp_path / "nope")])
    assert _bench("stem_bound").main() == 2
    out = capsys.readouterr()
    assert "PASS" not in out.out
    assert out.err.strip() == f"stem_bound: no suite workload under {tmp_path / 'nope'} (no <w>/profile.csv; " \
                              f"gclsampler synth NAME --out {tmp_path / 'nope' / 'NAME'})"


def test_rerun_profiles_names_a_missing_data_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["rerun_profiles.py", str(tmp_path / "nope"), str(tmp_path / "out")])
    assert _bench("rerun_profiles").main() == 2
    assert capsys.readouterr().err.strip() == f"rerun_profiles: {tmp_path / 'nope'}: no such directory"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, needle", [
    (["--run", "{d}/nope"], "{d}/nope: no train/<workload>/embeddings.npy"),
    (["--launches", "100", "--workload", "{d}/nope", "--embeddings", "{d}/e.npy"], "{d}/nope/profile.csv: no such file"),
])
def test_cluster_scale_bad_paths_exit_2_with_one_line(tmp_path, monkeypatch, capsys, args, needle):
    monkeypatch.setattr(sys, "argv", ["cluster_scale.py", *(a.format(d=tmp_path) for a in args)])
    assert _exit_status(_bench("cluster_scale").main) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cluster_scale: ") and needle.format(d=tmp_path) in err and "\n" not in err


def test_trace_parse_bad_trace_paths_exit_2_with_one_line(tmp_path, capsys):
    bench = _bench("trace_parse")
    assert bench.main(["--trace", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"trace_parse: {tmp_path / 'nope'}: no such file"
    assert bench.main(["--trace", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"trace_parse: {tmp_path}: no kernel-* trace file in this directory"


def test_rgcn_step_missing_workload_exits_2_with_one_line(tmp_path, capsys):
    pytest.importorskip("torch_geometric")
    assert _bench("rgcn_step").main(["--workload", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"rgcn_step: {tmp_path / 'nope'}: not a directory"


@pytest.mark.parametrize("script, args", [
    ("share_cut", ["--shares", "0.04,x"]),
    ("extra_samples", ["RUN", "DATA", "--budgets", "0,x"]),
    ("time_split", ["RUN", "DATA", "--tolerances", "0,x"]),
    ("time_split", ["RUN", "DATA", "--shares", "x"]),
])
def test_a_list_of_numbers_that_is_not_one_is_an_argument_error(monkeypatch, capsys, script, args):
    """A comma list with a word in it was float()'s ValueError traceback, before any work."""
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *args])
    assert _exit_status(_bench(script).main) == 2
    err = capsys.readouterr().err
    assert f"{script}.py: error: {args[-2]}: expected comma-separated numbers, got {args[-1]!r}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("script, args, needle", [
    ("photon_assign", ["--kernels", "0"], "argument --kernels: expected a positive integer, got '0'"),
    ("photon_assign", ["--n", "0"], "argument --n: expected a positive integer, got '0'"),
    ("photon_assign", ["--spread", "-1"], "argument --spread: expected a number >= 0, got '-1'"),
    ("photon_assign", ["--spread", "nan"], "argument --spread: expected a number >= 0, got 'nan'"),
    ("share_cut", ["--n", "0"], "argument --n: expected a positive integer, got '0'"),
    ("timing_simulate", ["--repeats", "0"], "argument --repeats: expected a positive integer, got '0'"),
    ("nsys_import", ["--n", "0"], "argument --n: expected a positive integer, got '0'"),
    ("nsys_import", ["--kernels", "-3"], "argument --kernels: expected a positive integer, got '-3'"),
    ("graph_build", ["--repeat", "0"], "argument --repeat: expected a positive integer, got '0'"),
    ("trace_write", ["--ctas", "0"], "argument --ctas: expected a positive integer, got '0'"),
    # found by a later audit: 0 draws printed "0/0 draws over epsilon: PASS", the others tracebacks or nan
    ("stem_bound", ["DIR", "--draws", "0"], "argument --draws: expected a positive integer, got '0'"),
    ("stem_bound", ["DIR", "--epsilon", "0"], "argument --epsilon: expected a number in (0, 1), got '0'"),
    ("tracer_format", ["--records", "0"], "argument --records: expected a positive integer, got '0'"),
    ("tracer_format", ["--reps", "0"], "argument --reps: expected a positive integer, got '0'"),
    ("extra_samples", ["RUN", "DATA", "--draws", "0"], "argument --draws: expected a positive integer, got '0'"),
    ("deviations", ["RUN", "DATA", "--draws", "0"], "argument --draws: expected a positive integer, got '0'"),
    ("time_split", ["RUN", "DATA", "--draws", "0"], "argument --draws: expected a positive integer, got '0'"),
    ("representatives", ["RUN", "DATA", "--random-draws", "0"],
     "argument --random-draws: expected a positive integer, got '0'"),
    ("trace_parse", ["--mb", "0"], "argument --mb: expected a finite number > 0, got '0'"),
    ("trace_parse", ["--repeat", "0"], "argument --repeat: expected a positive integer, got '0'"),
    ("graph_build", ["--warps", "0"], "argument --warps: expected a positive integer, got '0'"),
    ("graph_build", ["--invocations", "0"], "argument --invocations: expected a positive integer, got '0'"),
    ("cluster_scale", ["--n", "0"], "argument --n: expected a positive integer, got '0'"),
    ("cluster_scale", ["--k-max", "1"], "--k-max: expected 0 (no cap) or an integer >= 2, got 1"),
    ("stem_scale", ["--kernels", "0"], "argument --kernels: expected a positive integer, got '0'"),
    ("stem_scale", ["--epsilon", "-1"], "argument --epsilon: expected a number in (0, 1), got '-1'"),
    ("rgcn_step", ["--graphs", "0"], "argument --graphs: expected a positive integer, got '0'"),
    ("rgcn_step", ["--reps", "0"], "argument --reps: expected a positive integer, got '0'"),
    ("share_cut", ["--shares", "-1"], "--shares: expected numbers >= 0, got '-1'"),
    ("nsys_import", ["--n", "10", "--kernels", "100"], "--kernels 100: more kernels than --n 10 rows"),
    ("representatives", ["RUN", "DATA", "--rules", ""], "--rules: name at least one of"),
])
def test_a_count_below_one_or_a_negative_spread_is_an_argument_error(monkeypatch, capsys, script, args, needle):
    """--n 0 printed 'ratio 0.0x' with exit 0, --repeats 0 divided by zero, --kernels 0 and
    --spread -1 were numpy tracebacks: now argparse's usage and one line naming the option."""
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *args])
    assert _exit_status(_bench(script).main) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and err.strip().splitlines()[-1].startswith(f"{script}.py: error: {needle}")


@pytest.mark.parametrize("script", ["deviations", "extra_samples", "representatives", "time_split"])
def test_a_study_of_a_run_dir_that_is_not_there_says_so_in_one_line(tmp_path, monkeypatch, capsys, script):
    """Eleven '<w>: skipped (no .../train/<w>/embeddings.npy)' lines, then 'nothing found': never
    that the directory given was not there."""
    monkeypatch.setattr(sys, "argv", [f"{script}.py", str(tmp_path / "nope"), str(tmp_path)])
    assert _exit_status(_bench(script).main) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and not ln.startswith("usage:")]
    assert len(lines) == 1 and lines[0].endswith(f"{tmp_path / 'nope'}: no such directory"), lines


def test_time_split_rerun_dir_that_is_not_there_is_refused(tmp_path, monkeypatch, capsys):
    """Every rerun column went n/a with a warning per workload, and exit 0."""
    monkeypatch.setattr(sys, "argv", ["time_split.py", str(tmp_path), str(tmp_path), "--rerun", str(tmp_path / "nope")])
    assert _exit_status(_bench("time_split").main) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(f"--rerun {tmp_path / 'nope'}: no such directory")
