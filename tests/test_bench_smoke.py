"""bench/ scripts without a test of their own run at their smallest size and print their
ratio or summary line. Only the line's shape is checked, never a speed (timings stay out of
unit tests): the point is that a renamed import or argument fails here, not months later."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about a minute: seven scripts, each a fresh Python with numba and torch imports

BENCH = Path(__file__).resolve().parents[1] / "bench"
NUM = r"\d+\.\d+"


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    """``python bench/<script>.py args``, checked to exit 0 without a warning."""
    res = subprocess.run([sys.executable, str(BENCH / f"{script}.py"), *args], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Warning" not in res.stderr, res.stderr[-2000:]
    return res


@pytest.fixture(scope="module")
def gcl_run(tmp_path_factory):
    from _bench_runs import gcl_run

    return gcl_run(tmp_path_factory.mktemp("bench_smoke"))


@pytest.mark.parametrize("script, args, line", [
    ("photon_assign", ["--n", "200"], rf"ratio: {NUM}x; same labels and representatives: True"),
    ("timing_simulate", ["--repeats", "1"],
     rf"ampere +simulate +{NUM} ms CPU/call  budget ratio +{NUM}  \(= +{NUM} x sort\(1M\) reference {NUM} ms\) .*"),
    ("trace_write", ["--ctas", "1"], rf"one pass / chunked: peak {NUM}x, wall {NUM}x, CPU {NUM}x; same text: True"),
    ("nsys_import", ["--n", "2000", "--kernels", "10"],
     rf"baseline: pandas\.read_csv of the same file {NUM} s wall \(2,002 rows\); import / read_csv = {NUM}x"),
    ("graph_build", ["--warps", "4", "--insts", "64", "--invocations", "2", "--repeat", "1"],
     rf"dataset warm reload \(.*\): {NUM} s -> speed-up {NUM}x"),
])
def test_synthetic_bench_prints_its_ratio_line(script, args, line):
    out = _run(script, *args).stdout
    assert re.search(f"^{line}$", out, re.MULTILINE), out


def test_extra_samples_prints_its_table(gcl_run):
    run, data = gcl_run
    out = _run("extra_samples", str(run), str(data), "--budgets", "0,0.1", "--draws", "20").stdout
    for plan in (r"gcl \+ 0", r"gcl \+ 0\.1", "exact groups"):
        assert re.search(rf"^\| {plan} \| {NUM} % \| {NUM} % \(phi2\) \| {NUM}x \| \d+ \|$", out, re.MULTILINE), out


@pytest.mark.parametrize("script, args, row", [
    ("deviations", ["--draws", "20"], r"encoder \+ work_mean \+ work split \+ share cut \(gcl\)"),
    ("representatives", ["--random-draws", "2"], "work_mean"),
    ("time_split", ["--draws", "20"], "gcl"),
])
def test_a_data_dir_with_only_the_plans_arch_has_no_cross_arch_error(gcl_run, script, args, row):
    """The cross-arch column printed 'nan %' after numpy's "Mean of empty slice" warning."""
    run, data = gcl_run
    out = _run(script, str(run), str(data), *args).stdout
    assert re.search(rf"^\| {row} \| {NUM} % \(.*\) \| .*n/a \(no other arch\) \| {NUM}", out, re.MULTILINE), out
    assert "nan" not in out
