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
])
def test_a_count_below_one_or_a_negative_spread_is_an_argument_error(monkeypatch, capsys, script, args, needle):
    """--n 0 printed 'ratio 0.0x' with exit 0, --repeats 0 divided by zero, --kernels 0 and
    --spread -1 were numpy tracebacks: now argparse's usage and one line naming the option."""
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *args])
    assert _exit_status(_bench(script).main) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and err.strip().splitlines()[-1] == f"{script}.py: error: {needle}"
