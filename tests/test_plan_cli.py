"""`gclsampler plan show | export-accelsim | reconstruct` round trips on generated files."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.cli import GROUPS
from gclsampler.cli.plan import register
from gclsampler.errors import GclError
from gclsampler.plan import SamplingPlan, plan_from_labels


def main(argv: list[str]) -> int:
    """`gclsampler plan ...` without importing every other CLI group (torch etc.): same
    dispatch as gclsampler.cli.main (handler(args); GclError -> one line, exit 2)."""
    assert argv[0] == "plan" and GROUPS["plan"][0] == "gclsampler.cli.plan"
    parser = argparse.ArgumentParser(prog="gclsampler plan")
    register(parser)
    args = parser.parse_args(argv[1:])
    try:
        return int(args.handler(args) or 0)
    except GclError as exc:
        print(f"gclsampler: error: {exc}", file=sys.stderr)
        return 2


def make_plan(n=12, seed=0) -> tuple[SamplingPlan, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.unique(rng.integers(0, 4, n), return_inverse=True)[1]
    reps = np.array([np.flatnonzero(labels == c)[0] for c in range(labels.max() + 1)])
    # demangled names with spaces, as NVBit/Accel-Sim traces often carry them
    names = np.array([f"void gemm_kernel<float, {c}>(float*, int)" if c % 2 else f"_Z6kernel{c}Pfi" for c in labels])
    return plan_from_labels("toy", "gcl", labels, reps, names, {"k": int(labels.max() + 1)}, synthetic=True), names


def weighted(plan: SamplingPlan, values: dict[int, float]) -> float:
    """Independent of the code under test: sum over the plan's JSON samples."""
    return sum(s["weight"] * values[s["invocation"]] for s in plan.to_dict()["samples"])


def accelsim_log(kernels, noise=True, uids=None) -> str:
    """Stdout in GPGPU-Sim's gpu_print_stat layout (one block per finished kernel)."""
    out = ["Accel-Sim [build synthetic-test]", "GPGPU-Sim: Configuration options:", ""]
    tot = 0
    for j, (name, cyc, insn) in enumerate(kernels):
        uid = (uids[j] if uids else j + 1)
        out += [f"launching kernel name: {name} uid: {uid}"]
        if noise:
            out += ["GPGPU-Sim uArch: cycles simulated: 500  inst.: 1000 (ipc= 2.0)"]
        tot += cyc
        out += [f"kernel_name = {name} ", f"kernel_launch_uid = {uid} ", "kernel_stream_id = 0",
                f"gpu_sim_cycle = {cyc}", f"gpu_sim_insn = {insn}", f"gpu_ipc = {insn / cyc:12.4f}",
                f"gpu_tot_sim_cycle = {tot}", "gpu_tot_sim_insn = 1", ""]
    out += ["GPGPU-Sim: *** simulation thread exiting ***", "GPGPU-Sim: *** exit detected ***"]
    return "\n".join(out) + "\n"


def run_json(capsys, *argv):
    assert main(["plan", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_show_with_profile_reports_speedup(tmp_path, capsys):
    plan, names = make_plan()
    p = plan.save(tmp_path / "plan.json")
    t = np.arange(1, plan.n_invocations + 1, dtype=float) * 10
    prof = pd.DataFrame({"invocation": range(plan.n_invocations), "kernel_name": names, "grid": "(1,1,1)",
                         "block": "(32,1,1)", "time_ns": t, "cycles": t * 2})
    prof.to_csv(tmp_path / "profile.csv", index=False)
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv"), "--samples"]) == 0
    out = capsys.readouterr().out
    assert "SYNTHETIC" in out
    assert f"clusters {len(plan.clusters)}" in out
    expected = t.sum() / t[[s.invocation for s in plan.samples]].sum()
    assert f"expected speedup {expected:.2f}x" in out
    for s in plan.samples:
        assert re.search(rf"\b{s.invocation}\s+{s.cluster}\s+{s.weight:g}\b", out)


def test_show_samples_prints_large_and_fractional_weights_in_full(tmp_path, capsys):
    """--samples printed six significant digits: a cluster of 1234567 launches showed weight
    1.23457e+06 beside its exact size, and a STEM weight 1234567/3 lost its fraction's digits."""
    from gclsampler.plan import ClusterInfo, Sample

    n = 1234567 + 1234567
    plan = SamplingPlan("big", "stem_root", n, [Sample(0, "a", 0, 1234567.0), Sample(5, "b", 1, 1234567 / 3),
                                                 Sample(9, "b", 1, 1234567 / 3), Sample(12, "b", 1, 1234567 / 3)],
                        [ClusterInfo(0, 1234567), ClusterInfo(1, 1234567)], {}, True)
    p = plan.save(tmp_path / "plan.json")
    assert main(["plan", "show", str(p), "--samples"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+0\s+0\s+1234567\s+a$", out, flags=re.M), out
    assert re.search(r"^\s+5\s+1\s+411522\.3333\s+b$", out, flags=re.M), out


def test_show_profile_of_other_workload_is_rejected(tmp_path, capsys):
    plan, names = make_plan()
    p = plan.save(tmp_path / "plan.json")
    pd.DataFrame({"invocation": [0, 1], "kernel_name": ["a", "b"], "grid": "(1,1,1)", "block": "(1,1,1)",
                  "time_ns": [1.0, 2.0], "cycles": [1.0, 2.0]}).to_csv(tmp_path / "profile.csv", index=False)
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv")]) == 2
    cap = capsys.readouterr()
    assert "profile.csv: invocation: 2 rows" in cap.err
    assert cap.out == ""  # no half summary above the error


def test_show_profile_names_the_line_of_a_row_below_blank_lines(tmp_path, capsys):
    """The kernel-name mismatch was reported at row + 2: with a blank line above the row (which
    read_profile skips), the error named another row's line."""
    from gclsampler.plan import ClusterInfo, Sample

    p = SamplingPlan("toy", "test", 3, [Sample(0, "k", 0, 2.0), Sample(2, "k", 1, 1.0)],
                     [ClusterInfo(0, 2), ClusterInfo(1, 1)]).save(tmp_path / "plan.json")
    row = ',"(1,1,1)","(32,1,1)",10,20'
    (tmp_path / "profile.csv").write_text(f"invocation,kernel_name,grid,block,time_ns,cycles\n0,k{row}\n\n"
                                          f"1,k{row}\n\n2,other{row}\n")
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv")]) == 2
    err = capsys.readouterr().err
    assert "profile.csv:6: kernel_name: 'other', but sampled invocation 2" in err, err


def test_show_profile_time_column_error_names_the_physical_line(tmp_path, capsys):
    """numeric_column named row + 2: below blank lines (which read_profile skips) that was
    another row's line."""
    from gclsampler.plan import ClusterInfo, Sample

    p = SamplingPlan("toy", "test", 3, [Sample(0, "k", 0, 2.0), Sample(2, "k", 1, 1.0)],
                     [ClusterInfo(0, 2), ClusterInfo(1, 1)]).save(tmp_path / "plan.json")
    row = ',"(1,1,1)","(32,1,1)",10,20'
    (tmp_path / "profile.csv").write_text(f"invocation,kernel_name,grid,block,time_ns,cycles,t2\n0,k{row},5\n\n"
                                          f"1,k{row},6\n\n2,k{row},n/a\n")
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv"), "--time-column", "t2"]) == 2
    err = capsys.readouterr().err
    assert "profile.csv: t2: not numeric (e.g. line 6: 'n/a')" in err, err


def test_show_profile_of_a_plan_whose_samples_took_no_time(tmp_path, capsys):
    """`sample` and `stem` print "n/a" for such a plan on a valid profile; `plan show --profile`
    refused the profile instead (exit 2) and printed nothing of the summary."""
    from gclsampler.plan import ClusterInfo, Sample

    p = SamplingPlan("toy", "test", 2, [Sample(0, "kA", 0, 2.0)], [ClusterInfo(0, 2)]).save(tmp_path / "plan.json")
    (tmp_path / "profile.csv").write_text('invocation,kernel_name,grid,block,time_ns,cycles\n'
                                          '0,kA,"(1,1,1)","(32,1,1)",0,1\n1,kA,"(1,1,1)","(32,1,1)",100,200\n')
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv")]) == 0
    out = capsys.readouterr().out
    assert "expected speedup: n/a" in out and "error 100.00%" in out, out


def test_finite_column_names_the_physical_line(tmp_path):
    from gclsampler.plan import finite_column
    from gclsampler.profile import read_profile

    row = ',"(1,1,1)","(32,1,1)",10,'
    path = tmp_path / "profile.csv"
    path.write_text(f"invocation,kernel_name,grid,block,time_ns,cycles\n0,k{row}5\n\n\n1,k{row}\n")
    with pytest.raises(GclError, match=r"profile\.csv:5: cycles: empty"):
        finite_column(read_profile(path), "cycles", path, GclError, "needed")
    with pytest.raises(GclError, match=r"^workload 'x':3: cycles: empty"):  # no file: row + 2, as before
        finite_column(read_profile(path), "cycles", "workload 'x'", GclError, "needed")


def test_reconstruct_csv(tmp_path, capsys):
    plan, names = make_plan(20, 1)
    p = plan.save(tmp_path / "plan.json")
    rng = np.random.default_rng(2)
    cyc = rng.integers(100, 10_000, plan.n_invocations).astype(float)
    l2 = rng.random(plan.n_invocations)
    # every invocation present (a full ground-truth table works too), shuffled rows, a text column
    df = pd.DataFrame({"kernel_name": names, "invocation": range(plan.n_invocations), "cycles": cyc, "l2_hit_rate": l2})
    df.sample(frac=1, random_state=0).to_csv(tmp_path / "res.csv", index=False)
    got = run_json(capsys, "reconstruct", p, tmp_path / "res.csv")
    assert set(got["totals"]) == {"cycles"} and set(got["means"]) == {"l2_hit_rate"}
    assert got["totals"]["cycles"] == pytest.approx(weighted(plan, dict(enumerate(cyc))))
    # a rate is a weighted mean, not a weighted sum of per-invocation rates
    assert got["means"]["l2_hit_rate"] == pytest.approx(weighted(plan, dict(enumerate(l2))) / plan.n_invocations)
    assert 0 <= got["means"]["l2_hit_rate"] <= 1


@pytest.mark.parametrize("kind", ["csv", "log"])
def test_reconstruct_reads_results_from_a_pipe(tmp_path, capsys, kind):
    """The results were read once to tell a CSV from a log and again to parse them, so a pipe
    (`<(...)`, /dev/stdin) was empty the second time: "0 simulated kernels ... cut short?"."""
    import threading

    plan, names = make_plan(8, 3)
    p = plan.save(tmp_path / "plan.json")
    cyc = {s.invocation: 1000.0 + 10 * s.invocation for s in plan.samples}
    if kind == "csv":
        text = "invocation,kernel_name,cycles\n" + "".join(f'{i},"{names[i]}",{c}\n' for i, c in cyc.items())
    else:
        text = accelsim_log([(names[i], c, 2 * c) for i, c in sorted(cyc.items())], noise=False)
    fifo = tmp_path / "results"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(text,), daemon=True)
    writer.start()
    # in a process of its own: a second open of the pipe waits for a writer forever
    r = subprocess.run([sys.executable, "-m", "gclsampler", "plan", "reconstruct", str(p), str(fifo), "--json"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    writer.join(5)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["totals"]["cycles"] == pytest.approx(weighted(plan, cyc)) and got["results"] == str(fifo)


def test_reconstruct_rate_flag_and_empty_cells(tmp_path, capsys):
    plan, names = make_plan(20, 1)
    p = plan.save(tmp_path / "plan.json")
    inv = sorted(s.invocation for s in plan.samples)
    rows = ["invocation,cycles,frac,notes,l1_hit_rate"] + [f"{i},{100 + i},0.5,," for i in inv]
    (tmp_path / "res.csv").write_text("\n".join(rows) + "\n")
    got = run_json(capsys, "reconstruct", p, tmp_path / "res.csv", "--rate", "frac")
    assert got["means"]["frac"] == pytest.approx(0.5)
    assert "notes" not in got["means"] and "notes" not in got["totals"]  # all cells empty, no metric name: not one
    # a metric `gclsampler simulate` writes has no estimate, as in its estimate.json, instead of vanishing
    assert got["means"]["l1_hit_rate"] is None and got["no_estimate"] == {"l1_hit_rate": "missing"}
    rows[1] = rows[1] + "0.9"  # one sampled invocation has a hit rate, the others none
    (tmp_path / "res.csv").write_text("\n".join(rows) + "\n")
    got = run_json(capsys, "reconstruct", p, tmp_path / "res.csv")
    assert got["means"]["l1_hit_rate"] is None  # no estimate rather than one from a reweighted subset
    assert got["no_estimate"] == {"l1_hit_rate": "missing"}
    assert main(["plan", "reconstruct", str(p), str(tmp_path / "res.csv"), "--rate", "nope"]) == 2
    assert "res.csv:1: nope: no such metric (--rate)" in capsys.readouterr().err


def test_reconstruct_csv_bad_value_names_line_and_field(tmp_path, capsys):
    plan, _ = make_plan()
    p = plan.save(tmp_path / "plan.json")
    inv = sorted(s.invocation for s in plan.samples)
    rows = ["invocation,cycles"] + [f"{i},{100 + i}" for i in inv]
    rows[2] = f"{inv[1]},12x"
    (tmp_path / "res.csv").write_text("\n".join(rows) + "\n")
    assert main(["plan", "reconstruct", str(p), str(tmp_path / "res.csv")]) == 2
    assert "res.csv:3: cycles: not a finite number > 0: '12x'" in capsys.readouterr().err
    (tmp_path / "res.csv").write_text("\n".join(["invocation,cycles"] + [f"{i},1" for i in inv[1:]]) + "\n")
    assert main(["plan", "reconstruct", str(p), str(tmp_path / "res.csv")]) == 2
    assert f"invocation: no row for sampled invocation(s) [{inv[0]}]" in capsys.readouterr().err
    rows[2] = f"{inv[1]},-5"  # a negative count shifted the estimate without a word
    (tmp_path / "res.csv").write_text("\n".join(rows) + "\n")
    assert main(["plan", "reconstruct", str(p), str(tmp_path / "res.csv")]) == 2
    assert "res.csv:3: cycles: not a finite number > 0: '-5'" in capsys.readouterr().err
    for head in ("Invocation,cycles", "inv,cycles"):  # a table without the column is a table, not a log
        (tmp_path / "res.csv").write_text("\n".join([head] + [f"{i},1" for i in inv]) + "\n")
        assert main(["plan", "reconstruct", str(p), str(tmp_path / "res.csv")]) == 2
        assert "res.csv:1: invocation: no such column" in capsys.readouterr().err


def test_reconstruct_refuses_digits_only_python_reads(tmp_path, capsys):
    """int() and float() read `1_0` as 10 and Arabic-Indic digits as ASCII ones: a damaged results
    file was read as other invocations and values, where the profile importers refuse the same cells."""
    plan, _ = make_plan()
    inv = sorted(s.invocation for s in plan.samples)
    rows = ["invocation,cycles"] + [f"{i},{100 + i}" for i in inv]
    bad = list(rows)
    bad[1] = f"{inv[0] // 10}_{inv[0] % 10},{100 + inv[0]}"
    assert "res.csv:2: invocation: not an integer" in reconstruct_refused(tmp_path, capsys, plan, bad)
    bad = list(rows)
    bad[2] = f"{inv[1]},1_00"
    assert "res.csv:3: cycles: not a finite number > 0: '1_00'" in reconstruct_refused(tmp_path, capsys, plan, bad)
    bad[2] = f"{inv[1]},\u0661\u0662"
    assert "res.csv:3: cycles: not a finite number > 0" in reconstruct_refused(tmp_path, capsys, plan, bad)


def _log_for(plan, rng):
    samples = sorted(plan.samples, key=lambda s: s.invocation)
    cyc = {s.invocation: int(rng.integers(1_000, 90_000)) for s in samples}
    insn = {s.invocation: int(rng.integers(1_000, 90_000)) for s in samples}
    return samples, cyc, insn


def reconstruct_refused(tmp_path, capsys, plan: SamplingPlan, rows: list[str]) -> str:
    """``plan reconstruct`` of ``plan`` and a results CSV of ``rows``: it must refuse (exit 2);
    returns what it said on stderr."""
    p = plan.save(tmp_path / "plan.json")
    (tmp_path / "res.csv").write_text("\n".join(rows) + "\n")
    assert main(["plan", "reconstruct", str(p), str(tmp_path / "res.csv")]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("cell", ["nan", "inf", "N/A", "abc", "0"])
def test_reconstruct_refuses_a_metric_unreadable_in_every_sampled_row(tmp_path, capsys, cell):
    """A cycles column with no usable cell (a one-sample plan, or a simulator that failed on
    every sample) was taken for a text column and left out: the estimate had no cycles and
    exit 0. It is refused at its first line, as one bad cell among good ones is."""
    plan, _ = make_plan()
    inv = sorted(s.invocation for s in plan.samples)
    err = reconstruct_refused(tmp_path, capsys, plan, ["invocation,cycles,instructions"]
                              + [f"{i},{cell},{10 * i}" for i in inv])
    assert f"res.csv:2: cycles: not a finite number > 0: '{cell}'" in err


@pytest.mark.parametrize("sep, name", [(";", "semicolons"), ("\t", "tabs")])
def test_reconstruct_names_a_table_with_another_separator(tmp_path, capsys, sep, name):
    """A results table separated by ';' or tabs was read as an Accel-Sim log that "simulated 0 kernels"."""
    plan, _ = make_plan()
    inv = sorted(s.invocation for s in plan.samples)
    err = reconstruct_refused(tmp_path, capsys, plan, [f"invocation{sep}cycles"] + [f"{i}{sep}{100 + i}" for i in inv])
    assert f"res.csv:1: a table separated by {name}; write it with commas" in err


@pytest.mark.parametrize("shift", [1, -5, 10**6])
def test_reconstruct_refuses_invocations_outside_the_plan(tmp_path, capsys, shift):
    """A results file keyed by the 1-based -kernel id: its last row is outside the plan, and
    reading the rest as 0-based gave a wrong estimate with exit 0."""
    plan, _ = make_plan()
    n = plan.n_invocations
    ids = range(shift, n + shift) if shift == 1 else [*range(n), shift]
    err = reconstruct_refused(tmp_path, capsys, plan, ["invocation,cycles"] + [f"{i},{100 + i}" for i in ids])
    bad = n if shift == 1 else shift
    assert f"invocation: {bad} is outside the plan's 0..{n - 1}" in err


def test_reconstruct_accelsim_log(tmp_path, capsys):
    plan, _ = make_plan(30, 3)
    p = plan.save(tmp_path / "plan.json")
    samples, cyc, insn = _log_for(plan, np.random.default_rng(0))
    (tmp_path / "sim.log").write_text(accelsim_log([(s.kernel_name, cyc[s.invocation], insn[s.invocation]) for s in samples]))
    got = run_json(capsys, "reconstruct", p, tmp_path / "sim.log")
    assert got["simulated_by"].startswith("Accel-Sim log ")
    tot = got["totals"]
    assert tot["cycles"] == pytest.approx(weighted(plan, cyc))
    assert tot["instructions"] == pytest.approx(weighted(plan, insn))
    assert got["ipc_of_totals"] == pytest.approx(tot["instructions"] / tot["cycles"])
    ipc = {i: insn[i] / cyc[i] for i in cyc}
    assert got["means"]["ipc"] == pytest.approx(weighted(plan, ipc) / plan.n_invocations)


def test_reconstruct_accelsim_uses_launch_uid_when_kernels_finish_out_of_order(tmp_path, capsys):
    plan, _ = make_plan(30, 3)
    p = plan.save(tmp_path / "plan.json")
    samples, cyc, insn = _log_for(plan, np.random.default_rng(1))
    order = list(reversed(range(len(samples))))
    log = accelsim_log([(samples[j].kernel_name, cyc[samples[j].invocation], insn[samples[j].invocation]) for j in order],
                       uids=[j + 1 for j in order])
    (tmp_path / "sim.log").write_text(log)
    got = run_json(capsys, "reconstruct", p, tmp_path / "sim.log")["totals"]
    assert got["cycles"] == pytest.approx(weighted(plan, cyc))


def test_reconstruct_accelsim_errors(tmp_path, capsys):
    plan, _ = make_plan(30, 3)
    p = plan.save(tmp_path / "plan.json")
    samples, cyc, insn = _log_for(plan, np.random.default_rng(2))
    ks = [(s.kernel_name, cyc[s.invocation], insn[s.invocation]) for s in samples]
    log = tmp_path / "sim.log"

    log.write_text(accelsim_log(ks[:-1]))  # simulation cut short
    assert main(["plan", "reconstruct", str(p), str(log)]) == 2
    assert f"{len(ks) - 1} simulated kernels, but the plan samples {len(ks)} invocations (was the simulation cut " \
        "short?)" in capsys.readouterr().err
    log.write_text(accelsim_log(ks + ks[:1]))  # one too many: not a run cut short
    assert main(["plan", "reconstruct", str(p), str(log)]) == 2
    err = capsys.readouterr().err
    assert f"{len(ks) + 1} simulated kernels, but the plan samples {len(ks)}" in err and "cut short" not in err

    bad = list(ks)
    bad[1] = ("other_kernel", 5, 5)
    log.write_text(accelsim_log(bad))
    assert main(["plan", "reconstruct", str(p), str(log)]) == 2
    err = capsys.readouterr().err
    assert re.search(r"sim\.log:\d+: kernel_name: 'other_kernel'", err)
    assert main(["plan", "reconstruct", str(p), str(log), "--no-name-check"]) == 0
    capsys.readouterr()

    log.write_text(accelsim_log(ks).replace(f"gpu_sim_cycle = {ks[0][1]}\n", "gpu_sim_cycle = lots\n", 1))
    assert main(["plan", "reconstruct", str(p), str(log)]) == 2
    assert re.search(r"sim\.log:\d+: gpu_sim_cycle: not a number: 'lots'", capsys.readouterr().err)

    log.write_text(accelsim_log(ks).replace("kernel_launch_uid = 2 \n", "kernel_launch_uid = 2 3 \n", 1))
    assert main(["plan", "reconstruct", str(p), str(log)]) == 2
    assert re.search(r"sim\.log:\d+: kernel_launch_uid: 2 kernels in one stats block", capsys.readouterr().err)


def test_reconstruct_ipc_of_totals_is_no_number_when_cycles_overflow(tmp_path, capsys):
    """A cycles total beyond float64 is null ("overflow"); instructions / inf gave an
    ipc_of_totals of 0.0, a finite IPC of 0 printed beside it."""
    from gclsampler.plan import ClusterInfo, Sample

    p = SamplingPlan("toy", "test", 3, [Sample(0, "k", 0, 2.0), Sample(2, "k", 1, 1.0)],
                     [ClusterInfo(0, 2), ClusterInfo(1, 1)]).save(tmp_path / "plan.json")
    (tmp_path / "sim.log").write_text(accelsim_log([("k", 1.5e308, 1000), ("k", 10, 1000)]))
    got = run_json(capsys, "reconstruct", p, tmp_path / "sim.log")
    assert got["totals"] == {"cycles": None, "instructions": 3000.0}
    assert got["ipc_of_totals"] is None
    assert got["no_estimate"] == {"cycles": "overflow", "ipc_of_totals": "overflow"}
    assert main(["plan", "reconstruct", str(p), str(tmp_path / "sim.log")]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.split()[:1] == ["ipc_of_totals"]]
    assert line and "- (overflow)" in line[0], line


@given(st.lists(st.tuples(st.integers(1, 10**9), st.integers(0, 10**12)), min_size=1, max_size=12))
@settings(max_examples=40, deadline=None)
def test_log_parser_round_trips_values(tmp_path_factory, stats):
    from gclsampler.cli.plan import parse_accelsim_log

    path = tmp_path_factory.mktemp("log") / "sim.log"
    path.write_text(accelsim_log([(f"void k{i}<int, 2>(int*)", c, s) for i, (c, s) in enumerate(stats)], noise=False))
    got = parse_accelsim_log(path)
    assert [b.names[0] for b in got] == [f"void k{i}<int, 2>(int*)" for i in range(len(stats))]
    assert [(b.values["cycles"], b.values["instructions"]) for b in got] == [(float(c), float(s)) for c, s in stats]
    assert [b.uids for b in got] == [[i + 1] for i in range(len(stats))]


def test_export_accelsim_writes_only_sampled(tmp_path, capsys):
    from _trace_fixtures import Inst, make_trace

    from gclsampler.trace import list_invocations, write_kernel, write_kernelslist

    plan, names = make_plan(8, 4)
    wdir = tmp_path / "wl"
    wdir.mkdir()
    files = []
    for i in range(plan.n_invocations):
        t = make_trace([[Inst("IADD3", ("R1",), ("R2", "R3")), Inst("EXIT")]], kernel_id=i + 1, name=str(names[i]))
        write_kernel(t, wdir / f"kernel-{i + 1}.traceg")
        files.append(f"kernel-{i + 1}.traceg")
    write_kernelslist(wdir, files)
    p = plan.save(tmp_path / "plan.json")
    out = tmp_path / "sim out"  # a space: the printed next steps must still paste as one argument each
    capsys.readouterr()
    assert main(["plan", "export-accelsim", str(p), str(wdir), str(out)]) == 0
    steps = [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if ": gclsampler " in line]
    assert shlex.split(steps[0])[:4] == ["gclsampler", "plan", "reconstruct", str(out / "plan.json")]
    assert shlex.split(steps[1])[:4] == ["gclsampler", "simulate", str(p), str(wdir)]
    sampled = sorted(s.invocation for s in plan.samples)
    listed = [line for line in (out / "kernelslist.g").read_text().split("\n") if line]
    assert listed == [f"kernel-{i + 1}.traceg" for i in sampled]
    assert [i.header.kernel_id - 1 for i in list_invocations(out)] == sampled
    assert SamplingPlan.load(out / "plan.json").to_json() == plan.to_json()
    # the plan goes along byte for byte: another tool's json.dump may leave a NaN in the
    # free-form config, which load accepts and a fresh save refused after all the export work
    doc = json.loads(p.read_text())
    doc["config"]["note"] = float("nan")
    p.write_text(json.dumps(doc))
    assert main(["plan", "export-accelsim", str(p), str(wdir), str(out)]) == 0
    assert (out / "plan.json").read_bytes() == p.read_bytes()


@pytest.mark.parametrize("ids", [(2, 3, 4), (1, 3, 4)])
def test_export_accelsim_refuses_trace_ids_other_than_1_to_n(tmp_path, capsys, ids):
    """The plan's invocation i is the list's i-th launch; export took it as -kernel id i+1. With
    ids 2..4 (a trace that began after the first launch) invocations 1 and 2 were exported as the
    traces listed first and second, exit 0: Accel-Sim then simulated the wrong launches."""
    from _trace_fixtures import Inst, make_trace

    from gclsampler.plan import ClusterInfo, Sample
    from gclsampler.trace import write_kernel, write_kernelslist

    wl = tmp_path / "wl"
    wl.mkdir()
    for kid, op in zip(ids, ("FADD", "IADD3", "FMUL")):
        write_kernel(make_trace([[Inst(op, ("R0",), ("R1", "R2")), Inst("EXIT")]], kernel_id=kid, name="k"),
                     wl / f"kernel-{kid}.traceg")
    write_kernelslist(wl, [f"kernel-{kid}.traceg" for kid in ids])
    plan = SamplingPlan("toy", "test", 3, [Sample(1, "k", 0, 2.0), Sample(2, "k", 1, 1.0)],
                        [ClusterInfo(0, 2), ClusterInfo(1, 1)]).save(tmp_path / "plan.json")
    capsys.readouterr()
    assert main(["plan", "export-accelsim", str(plan), str(wl), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"kernelslist.g: -kernel id: trace ids run {ids[0]}..4 over 3 traces; " \
                             "export-accelsim needs ids 1..N" in err[0], err
    assert not (tmp_path / "out").exists()


def test_listings_print_control_characters_escaped(tmp_path, capsys):
    """A kernel name holding ESC sequences or a carriage return (a plan or profile from
    elsewhere) was printed raw by plan show: it could clear the terminal or hide rows. A line
    break or tab in the name broke the one-line-per-row table the same way."""
    from gclsampler.cli import main as cli_main

    plan, _ = make_plan()
    doc = plan.to_dict()
    for s in doc["samples"]:
        s["kernel_name"] = "k\x1b[2J\rhidden\x9b\nnext\tcol"
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    assert cli_main(["plan", "show", str(p), "--samples"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert out.count("k\\x1b[2J\\x0dhidden\\x9b\\x0anext\\x09col") == len(doc["samples"]) + len(plan.clusters)
    assert "\t" not in out and not any(line.startswith("next") for line in out.splitlines())
