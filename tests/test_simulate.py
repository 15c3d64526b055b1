"""`gclsampler simulate` against a stub simulator that replays real Accel-Sim logs.

The logs in tests/data/accelsim/ come from a real build (see its README); the stub
(tests/_accelsim_stub.py) answers like Accel-Sim with them, so parsing, the estimate's
arithmetic, caching, resuming and every failure are tested without a simulator.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from _accelsim_stub import FIXTURES, make_stub_root
from _trace_fixtures import Inst, make_trace
from gclsampler import simulate as S
from gclsampler.cli import main
from gclsampler.plan import ClusterInfo, Sample, SamplingPlan
from gclsampler.trace import write_kernel, write_kernelslist

REPO = Path(__file__).resolve().parents[1]
CLOCK_MHZ = 1000.0  # the stub config's core clock


def _log(name: str) -> str:
    return gzip.open(FIXTURES / name).read().decode()


# ---------------------------------------------------------------------------------------
# real logs: parsing and the answer check
# ---------------------------------------------------------------------------------------
def test_parse_real_tensor_core_gemm_log():
    (b,) = S.parse_log(_log("gemm_ok.log.gz"))
    assert b["kernel_name"] == "ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x3_tn"
    assert b["cycles"] == 63382 and b["instructions"] == 391808
    assert b["ipc"] == pytest.approx(391808 / 63382)
    assert 0 <= b["l1_hit_rate"] <= 1 and 0 <= b["l2_hit_rate"] <= 1
    assert np.isnan(b["achieved_occupancy"])  # the trace-driven simulator prints gpu_occupancy = -nan%


def test_check_log_accepts_real_successes():
    for name, cycles in (("gemm_ok.log.gz", 63382), ("gemv_ok.log.gz", 67784), ("index_select_ok.log.gz", 7551)):
        st = S.check_log(_log(name), 0, False, None, 3, Path("x.log"))
        assert st["cycles"] == cycles and st["instructions"] > 0


def test_unsupported_binary_version_exits_0_but_is_an_error():
    with pytest.raises(S.SimulationFailed) as e:
        S.check_log(_log("unsupported_binary_version.log.gz"), 0, False, None, 7, Path("/r/accelsim.log"))
    msg = str(e.value)
    assert msg.startswith("invocation 7: ") and "without printing gpu_sim_cycle" in msg
    assert "unsupported binary version: 90" in msg and "/r/accelsim.log" in msg


def test_crash_names_signal_and_assertion(tmp_path):
    log = tmp_path / "accelsim.log"
    log.write_text(_log("crash_unknown_opcode.log.gz"))
    (tmp_path / "accelsim.stderr").write_text((FIXTURES / "crash_unknown_opcode.stderr").read_text())
    with pytest.raises(S.SimulationFailed) as e:
        S.check_log(log.read_text(), -6, False, None, 4, log)
    msg = str(e.value)
    assert "invocation 4: Accel-Sim was killed by signal 6" in msg and "undefined instruction" in msg
    assert str(log) in msg


def test_deadlock_abort_is_named():
    with pytest.raises(S.SimulationFailed) as e:
        S.check_log(_log("deadlock_abort.log.gz"), -6, False, None, 0, Path("d.log"))
    assert "invocation 0: Accel-Sim aborted: deadlock detected" in str(e.value)
    assert "gpu_sim_cycle 5027" in str(e.value) and "d.log" in str(e.value)


def test_a_log_cut_short_is_an_error_though_the_simulator_exited_0():
    """A log that stops inside the stats block (exit 0: a full disk, a lost write) was taken as a
    result and cached: the miss rates after the cut read as "the cache saw no access" (empty hit
    rates), or, cut after gpu_sim_insn, as a result without them. Accel-Sim's last line says it
    finished."""
    text = _log("gemm_ok.log.gz")
    assert S.check_log(text, 0, False, None, 3, Path("x.log"))["cycles"] == 63382
    for cut in ("\tL1D_total_cache_miss_rate", "L2_total_cache_miss_rate", "gpu_ipc", "GPGPU-Sim: *** simulation"):
        with pytest.raises(S.SimulationFailed, match=r"invocation 3: the log ends before Accel-Sim's closing "
                                                     r"line .*; log x\.log"):
            S.check_log(text[: text.index(cut)], 0, False, None, 3, Path("x.log"))


def test_timeout_and_two_kernels_are_errors():
    with pytest.raises(S.SimulationFailed, match=r"invocation 1: no answer within 5 s \(--timeout\)"):
        S.check_log("", -9, True, 5.0, 1, Path("t.log"))
    two = _log("gemm_ok.log.gz") + _log("index_select_ok.log.gz")
    with pytest.raises(S.SimulationFailed, match="2 kernels in one run's log"):
        S.check_log(two, 0, False, None, 1, Path("t.log"))


# ---------------------------------------------------------------------------------------
# finding the simulator
# ---------------------------------------------------------------------------------------
def test_locate_errors_say_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("ACCELSIM_ROOT", raising=False)
    with pytest.raises(S.SimulatorNotFound, match="pass --accelsim-root DIR or set ACCELSIM_ROOT"):
        S.locate_simulator(None)
    with pytest.raises(S.SimulatorNotFound, match="not an accel-sim-framework checkout"):
        S.locate_simulator(tmp_path)
    root = make_stub_root(tmp_path / "as")
    with pytest.raises(S.SimulatorNotFound, match=r"--config SM7_NOPE: .*tested configs of this build: SM86_RTX3070"):
        S.locate_simulator(root, "SM7_NOPE")
    for bad in ("../../../tmp/evil", "..", "a/b", ""):  # it names profiles/accelsim-<config>.csv too
        with pytest.raises(S.SimulatorNotFound, match=r"^--config: .* is not a tested config's name"):
            S.locate_simulator(root, bad)
    binary = root / "gpu-simulator" / "bin" / "release" / "accel-sim.out"
    binary.chmod(0o644)
    with pytest.raises(S.SimulatorNotFound, match="accel-sim.out: not an executable file; rebuild"):
        S.locate_simulator(root)
    binary.unlink()
    with pytest.raises(S.SimulatorNotFound, match="accel-sim.out: missing; build Accel-Sim first"):
        S.locate_simulator(root)
    bad = make_stub_root(tmp_path / "bad", setup_fails=True)
    with pytest.raises(S.SimulatorNotFound, match=r"setup_environment.sh release` failed \(ERROR \*\* nvcc.*CUDA_INSTALL_PATH"):
        S.locate_simulator(bad)
    # CUDA 13 (seen here): the script's reason comes first, then the version number it parsed
    cuda13 = make_stub_root(tmp_path / "cuda13", setup_fails="ERROR ** GPGPU-Sim version 4.2.0 not tested with CUDA "
                                                               "version 13.0 (please see README)\n13000")
    with pytest.raises(S.SimulatorNotFound, match=r"failed \(ERROR \*\* GPGPU-Sim version 4\.2\.0 not tested with CUDA "
                                                   r"version 13\.0 .*\); set CUDA_INSTALL_PATH to a CUDA 11\.x install"):
        S.locate_simulator(cuda13)


def test_locate_sources_environment_and_accepts_gpu_simulator_dir(tmp_path, monkeypatch):
    root = make_stub_root(tmp_path / "as")
    monkeypatch.setenv("ACCELSIM_ROOT", str(root / "gpu-simulator"))  # what Accel-Sim's own setup exports
    sim = S.locate_simulator(None)
    assert sim.root == root.resolve() and sim.env.get("STUB_SOURCED") == "yes"
    assert sim.core_clock_mhz == CLOCK_MHZ
    assert S.locate_simulator(root, flags=["-gpgpu_clock_domains", "1500:1:1:1"]).core_clock_mhz == 1500


@pytest.mark.parametrize("name", ["accel $HOME sim", 'accel "sim', "accel `true` sim"])
def test_locate_a_checkout_whose_path_the_shell_would_expand(tmp_path, name):
    """setup_environment.sh is sourced through bash: a checkout path with $, a double quote or a
    backtick was expanded there ("cd: .../accel /root sim/gpu-simulator: No such file") or broke
    the line ("unexpected EOF"), and the build was reported as broken."""
    root = make_stub_root(tmp_path / name)
    sim = S.locate_simulator(root)
    assert sim.root == root.resolve() and sim.env.get("STUB_SOURCED") == "yes"


def test_cli_without_simulator_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ACCELSIM_ROOT", raising=False)
    wl, plan = _workload(tmp_path)
    assert main(["simulate", str(plan), str(wl), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ACCELSIM_ROOT" in err[0]


# ---------------------------------------------------------------------------------------
# a tiny workload, a plan, and the stub's behaviour per kernel
# ---------------------------------------------------------------------------------------
NAMES = ["gemm", "gemm", "norm", "gemm", "act", "norm"]


def _traces(tmp_path: Path, names, synthetic: bool = True) -> Path:
    """The workload dir ``tmp_path/wl`` with one trace per name (same name, same body)."""
    wl = tmp_path / "wl"
    wl.mkdir(exist_ok=True)
    files = []
    for i, n in enumerate(names):
        body = {"gemm": [Inst("HMMA.16816.F32", ("R0",), ("R2", "R4")), Inst("EXIT")],
                "norm": [Inst("FADD", ("R0",), ("R1", "R2")), Inst("EXIT")],
                "act": [Inst("MUFU.EX2", ("R0",), ("R1",)), Inst("EXIT")]}[n]
        t = make_trace([body, body], kernel_id=i + 1, name=n)
        write_kernel(t, wl / f"kernel-{i + 1}.traceg")
        files.append(f"kernel-{i + 1}.traceg")
    write_kernelslist(wl, files)
    (wl / "workload.json").write_text(json.dumps({"workload": "toy", "synthetic": synthetic}))
    return wl


def _workload(tmp_path: Path, names=NAMES, synthetic: bool = True) -> tuple[Path, Path]:
    """len(names) traces; invocations with the same name have byte-identical bodies."""
    wl = _traces(tmp_path, names, synthetic)
    # clusters {0,1,3} (gemm, sampled 0 and 3), {2,5} (norm, sampled 2), {4} (act)
    plan = SamplingPlan("toy", "test", len(names),
                        [Sample(0, "gemm", 0, 1.0), Sample(3, "gemm", 0, 2.0), Sample(2, "norm", 1, 2.0),
                         Sample(4, "act", 2, 1.0)],
                        [ClusterInfo(0, 3, 0.05), ClusterInfo(1, 2, 0.02), ClusterInfo(2, 1, 0.0)],
                        {"error_bound": 0.04, "z": 1.96}, synthetic)
    return wl, plan.save(tmp_path / "plan.json")


CYC = {1: 1000, 2: 1100, 3: 3000, 4: 1300, 5: 500, 6: 3100}   # per kernel id
INSN = {k: 2 * v + 7 for k, v in CYC.items()}


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """The stub checkout, $STUB_PLAN (editable through the returned helper) and $STUB_CALLS."""
    root = make_stub_root(tmp_path / "accel-sim-framework")
    plan_file, calls = tmp_path / "stub_plan.json", tmp_path / "calls.jsonl"

    class Stub:
        def __init__(self):
            self.root = root
            self.set({str(k): {"cycles": CYC[k], "insn": INSN[k]} for k in CYC})

        def set(self, behaviour):
            plan_file.write_text(json.dumps(behaviour))

        def calls(self):
            return [json.loads(ln) for ln in calls.read_text().splitlines()] if calls.exists() else []

    monkeypatch.setenv("STUB_PLAN", str(plan_file))
    monkeypatch.setenv("STUB_CALLS", str(calls))
    monkeypatch.setenv("ACCELSIM_ROOT", str(root))
    return Stub()


def _simulate(tmp_path, *extra, wl=None, plan=None, out="out"):
    if wl is None:
        wl = tmp_path / "wl"
    if plan is None and "--all" not in extra:
        plan = tmp_path / "plan.json"
    args = ["simulate", *([str(plan)] if plan is not None else []), str(wl), "--out", str(tmp_path / out), *extra]
    return main(args)


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "0", "-1"])
def test_timeout_must_be_finite_and_positive(tmp_path, stub, capsys, value):
    """--timeout inf passed, then the submitit launchers' int() of it was a traceback (exit 1)
    after the output directory and its runs/ had been made."""
    _workload(tmp_path)
    assert _simulate(tmp_path, "--all", "--launcher", "submitit-local", "--timeout", value) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--timeout {float(value)}: must be a positive number of seconds" in err[0], err
    assert not (tmp_path / "out").exists() and stub.calls() == []


def test_a_broken_workload_json_is_refused_before_simulating(tmp_path, stub, capsys):
    """The true string "no" labelled the estimate SYNTHETIC; a list or broken JSON read as "not"."""
    wl, _ = _workload(tmp_path, synthetic=False)
    (wl / "workload.json").write_text(json.dumps({"workload": "toy", "synthetic": "no"}))
    assert _simulate(tmp_path) == 2
    assert "workload.json: synthetic: expected true or false, found 'no'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and stub.calls() == []


@pytest.mark.parametrize("config, interval", [
    ({"error_bound": "5%"}, None), ({"error_bound": [0.1]}, None), ({"error_bound": -1}, None),
    ({"error_bound": 0.04, "z": "x"}, (0.04, None)), ({"error_bound": 0.04, "z": 1.96}, (0.04, 1.96)),
])
def test_a_free_form_error_bound_in_the_plan_gives_no_traceback(tmp_path, stub, capsys, config, interval):
    """The plan loads (config is free-form), so a hand-edited bound of '5%', [0.1] or -1, or a z of
    'x', stopped `simulate` with a traceback after every simulation had run."""
    _, plan_path = _workload(tmp_path)
    doc = json.loads(plan_path.read_text())
    doc["config"] = config
    plan_path.write_text(json.dumps(doc))
    assert _simulate(tmp_path) == 0
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    got = est.get("interval")
    assert (None if got is None else (got["error_bound"], got["confidence_z"])) == interval


def test_estimate_arithmetic_and_outputs(tmp_path, stub, capsys):
    wl, plan_path = _workload(tmp_path)
    assert _simulate(tmp_path) == 0
    out = capsys.readouterr().out
    assert "SIMULATED by Accel-Sim (config SM86_RTX3070; one SM, so cycles are SM 0's share)" in out
    assert "SYNTHETIC traces" in out and "-gpgpu_deadlock_detect 0" in out
    plan = SamplingPlan.load(plan_path)
    w = {s.invocation: s.weight for s in plan.samples}
    cyc = {i: CYC[i + 1] for i in w}
    ipc = {i: INSN[i + 1] / CYC[i + 1] for i in w}
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert est["simulated"] is True and est["synthetic"] is True
    assert est["totals"]["cycles"] == pytest.approx(sum(w[i] * cyc[i] for i in w))
    assert est["totals"]["instructions"] == pytest.approx(sum(w[i] * INSN[i + 1] for i in w))
    assert est["totals"]["time_ns"] == pytest.approx(est["totals"]["cycles"] * 1000 / CLOCK_MHZ)
    assert est["means"]["ipc"] == pytest.approx(sum(w[i] * ipc[i] for i in w) / 6)
    assert est["ipc_of_totals"] == pytest.approx(est["totals"]["instructions"] / est["totals"]["cycles"])
    assert est["means"]["achieved_occupancy"] is None  # the real log prints -nan%
    assert est["no_estimate"]["achieved_occupancy"] == "missing"
    assert "cycles" not in est["no_estimate"]
    by = {c["cluster"]: c for c in est["clusters"]}
    assert by[0]["estimate"] == pytest.approx(1 * 1000 + 2 * 1300) and by[0]["samples"] == 2
    assert sum(c["share"] for c in est["clusters"]) == pytest.approx(1.0)
    # the bound is relative to the true total: |est - T| <= 0.04 T admits T in est/1.04 .. est/0.96
    assert est["interval"]["low"] == pytest.approx(est["totals"]["cycles"] / 1.04, rel=1e-12)
    assert est["interval"]["high"] == pytest.approx(est["totals"]["cycles"] / 0.96, rel=1e-12)
    sim = pd.read_csv(tmp_path / "out" / "simulated.csv")
    assert sim["invocation"].tolist() == [0, 2, 3, 4]
    assert sim["cycles"].tolist() == [1000, 3000, 1300, 500]
    assert set(sim["simulated_by"]) == {"Accel-Sim SM86_RTX3070, one SM (SM 0's share), synthetic traces"}
    assert all(Path(p).is_file() for p in sim["log"])
    # one process per invocation, in a directory holding the config, with the one-SM defaults
    calls = stub.calls()
    assert sorted(c["kernel_id"] for c in calls) == [1, 3, 4, 5]
    for c in calls:
        a = c["argv"]
        assert a[a.index("-gpgpu_n_clusters") + 1] == "1" and a[a.index("-gpgpu_n_cores_per_cluster") + 1] == "1"
        assert a[a.index("-gpgpu_deadlock_detect") + 1] == "0" and c["sourced"] == "yes"
    # plan reconstruct on simulated.csv gives the same numbers
    assert main(["plan", "reconstruct", str(plan_path), str(tmp_path / "out" / "simulated.csv"), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["totals"]["cycles"] == pytest.approx(est["totals"]["cycles"])
    assert rec["means"]["ipc"] == pytest.approx(est["means"]["ipc"])
    assert "cluster" not in rec["totals"] and "weight" not in rec["totals"]
    assert rec["simulated_by"] == "Accel-Sim SM86_RTX3070, one SM (SM 0's share), synthetic traces"
    assert main(["plan", "reconstruct", str(plan_path), str(tmp_path / "out" / "simulated.csv")]) == 0
    assert "SIMULATED values: Accel-Sim SM86_RTX3070" in capsys.readouterr().out


@pytest.mark.parametrize("cycles, insn, said", [
    ("1.5e+308", "2000", "gpu_sim_cycle = '1.5e+308'"),  # its overflowing total reached estimate.json as null
    ("nan", "2000", "gpu_sim_cycle = 'nan'"),
    ("6_3382", "2000", "gpu_sim_cycle = '6_3382'"),  # Python's float() reads 63382
    ("1000", "-2000", "gpu_sim_insn = '-2000'"),  # a negative IPC
    ("1000\ngpu_sim_cycle = 5", "2000", "gpu_sim_cycle printed twice"),  # the last one was taken
])
def test_a_run_whose_counts_are_not_counts_fails_and_is_not_cached(tmp_path, stub, capsys, cycles, insn, said):
    """Such a log was accepted with exit 0 and cached: nan cycles as missing, a repeated
    gpu_sim_cycle as its last value, a negative instruction count as a negative IPC."""
    _workload(tmp_path)
    stub.set({"*": {"cycles": 1000, "insn": 2000}, "4": {"cycles": cycles, "insn": insn}})
    assert _simulate(tmp_path) == 1
    err = capsys.readouterr().err
    assert f"invocation 3: Accel-Sim printed {said}" in err, err  # kernel id 4
    stub.set({"*": {"cycles": 1000, "insn": 2000}})
    assert _simulate(tmp_path) == 0  # not cached: simulated again
    assert "1 simulated now" in capsys.readouterr().out


def test_rates_past_their_range_fail_the_run():
    text = _log("gemm_ok.log.gz").replace("L2_total_cache_miss_rate = 0.9969", "L2_total_cache_miss_rate = 7.5")
    with pytest.raises(S.SimulationFailed, match=r"L2_total_cache_miss_rate = '7.5'"):
        S.check_log(text, 0, False, None, 3, Path("x.log"))


def test_outputs_are_deterministic_and_cached(tmp_path, stub, capsys):
    _workload(tmp_path)
    assert _simulate(tmp_path) == 0
    first = {f: (tmp_path / "out" / f).read_bytes() for f in ("simulated.csv", "estimate.json")}
    n = len(stub.calls())
    assert _simulate(tmp_path, "--jobs", "2") == 0  # all from the cache
    assert len(stub.calls()) == n
    assert "0 simulated now, 4 from the cache" in capsys.readouterr().out
    assert {f: (tmp_path / "out" / f).read_bytes() for f in first} == first
    # other flags or another config file content: new keys, simulated again
    assert _simulate(tmp_path, "--sim-arg=-gpgpu_max_insn 1000000") == 0
    assert len(stub.calls()) == 2 * n
    assert stub.calls()[-1]["argv"][-2:] == ["-gpgpu_max_insn", "1000000"]
    cfg = stub.root / "gpu-simulator" / "gpgpu-sim" / "configs" / "tested-cfgs" / "SM86_RTX3070" / "gpgpusim.config"
    cfg.write_text(cfg.read_text() + "-gpgpu_l1_latency 40\n")
    assert _simulate(tmp_path) == 0
    assert len(stub.calls()) == 3 * n
    binary = stub.root / "gpu-simulator" / "bin" / "release" / "accel-sim.out"
    binary.write_text(binary.read_text() + "\n# rebuilt\n")  # another build answers for itself
    assert _simulate(tmp_path) == 0
    assert len(stub.calls()) == 4 * n


@pytest.mark.parametrize("stats", [{}, {"cycles": 100.0}, {"cycles": 0.0, "instructions": 5.0},
                                   {"cycles": "100", "instructions": 5.0}, [], None])
def test_a_cached_result_without_usable_stats_is_run_again(tmp_path, stub, capsys, stats):
    """A result.json whose stats lack cycles or instructions (edited, or left by another tool)
    was taken from the cache, and the summary stopped with a KeyError traceback."""
    _workload(tmp_path)
    assert _simulate(tmp_path) == 0
    n = len(stub.calls())
    first = (tmp_path / "out" / "simulated.csv").read_bytes()
    done = sorted((tmp_path / "out" / "runs").glob("*/result.json"))
    doc = json.loads(done[0].read_text())
    doc["stats"] = stats
    done[0].write_text(json.dumps(doc))
    capsys.readouterr()
    assert _simulate(tmp_path) == 0
    assert len(stub.calls()) == n + 1  # that one again, the rest from the cache
    assert "1 simulated now" in capsys.readouterr().out
    assert (tmp_path / "out" / "simulated.csv").read_bytes() == first


@pytest.mark.parametrize("log_edit, rerun", [
    (lambda t: t.replace("kernel_name = ", "GPGPU-Sim: ** break due to reaching the maximum cycles (or "
                         "instructions) **\nkernel_name = ", 1), True),  # stopped at the cycle cap
    (lambda t: t.replace("GPGPU-Sim: *** exit detected ***", ""), True),  # cut before its closing line
    (lambda t: t, False),  # a good run: answered from the cache, marked checked
    (None, False),  # no log left to check against: kept as it was
])
def test_results_cached_under_older_rules_are_checked_again(tmp_path, stub, capsys, log_edit, rerun):
    """A cache written before a check existed answered with runs the current rules call failed
    (capped at the cycle cap, a cut log), where a fresh cache said 'simulations failed'."""
    _workload(tmp_path)
    assert _simulate(tmp_path) == 0
    n = len(stub.calls())
    done = sorted((tmp_path / "out" / "runs").glob("*/result.json"))[0]
    doc = json.loads(done.read_text())
    del doc["checked"]  # as the older versions wrote it
    done.write_text(json.dumps(doc))
    log = done.parent / "accelsim.log"
    if log_edit is None:
        log.unlink()
    else:
        log.write_text(log_edit(log.read_text()))
    capsys.readouterr()
    assert _simulate(tmp_path) == 0
    assert len(stub.calls()) == n + rerun
    assert ("1 simulated now" if rerun else "0 simulated now") in capsys.readouterr().out
    assert json.loads(done.read_text()).get("checked") == (S.CHECK_VERSION if log_edit is not None else None)


def test_full_gpu_and_deadlock_detect_flags(tmp_path, stub):
    _workload(tmp_path)
    assert _simulate(tmp_path, "--full-gpu", "--deadlock-detect") == 0
    for c in stub.calls():
        assert "-gpgpu_n_clusters" not in c["argv"] and "-gpgpu_deadlock_detect" not in c["argv"]
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert "SM 0" not in est["note"]


def test_flags_given_later_decide_the_one_sm_and_deadlock_labels(tmp_path, stub, capsys):
    """Accel-Sim takes the last value of a flag: --sim-arg='-gpgpu_n_clusters 4' after the one-SM
    defaults simulates 4 clusters, and '-gpgpu_deadlock_detect 1' turns the detector back on;
    every output still said "one SM, so cycles are SM 0's share" and gave why the detector is off."""
    _workload(tmp_path)
    assert _simulate(tmp_path, "--sim-arg=-gpgpu_n_clusters 4 -gpgpu_deadlock_detect 1") == 0
    a = stub.calls()[0]["argv"]
    assert a[len(a) - 1 - a[::-1].index("-gpgpu_n_clusters") + 1] == "4"
    out = capsys.readouterr().out
    assert "SM 0" not in out and "one SM" not in out and "false-alarms" not in out
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert "SM 0" not in est["note"] and est["simulator"]["deadlock_detect_off_because"] is None
    assert set(pd.read_csv(tmp_path / "out" / "simulated.csv")["simulated_by"]) == {
        "Accel-Sim SM86_RTX3070, synthetic traces"}
    # --full-gpu with one SM asked for by hand is one SM, and says so
    assert _simulate(tmp_path, "--full-gpu", "--sim-arg=-gpgpu_n_clusters 1 -gpgpu_n_cores_per_cluster 1",
                     out="o2") == 0
    assert "one SM, so cycles are SM 0's share" in json.loads((tmp_path / "o2" / "estimate.json").read_text())["note"]


def test_printed_evaluate_line_runs_as_pasted(tmp_path):
    """The line `simulate --all` prints is pasted into a shell: a data directory with a space
    split into two arguments (Hydra: "Error parsing override 'traces'"), and one with a comma
    would be read as a sweep."""
    import shlex

    from gclsampler.cli.simulate import _evaluate_command
    from test_evaluate import _compose

    for parent in ("my traces", "run,1"):
        wl = tmp_path / parent / "app"
        wl.mkdir(parents=True)
        line = _evaluate_command(wl, wl / "profiles" / "accelsim-SM86_RTX3070.csv")
        argv = shlex.split(line)
        assert argv[:2] == ["python", "evaluate.py"]
        cfg, _ = _compose(argv[2:])
        assert cfg.suite.data_dir == str(wl.parent.resolve())
        assert cfg.suite.workloads == ["app"] and cfg.suite.archs == ["accelsim-SM86_RTX3070"]


def test_dedup_only_when_asked(tmp_path, stub):
    wl, _ = _workload(tmp_path)
    assert _simulate(tmp_path, "--all") == 0
    assert len(stub.calls()) == 6  # byte-identical gemm traces still run once each
    assert _simulate(tmp_path, "--all", "--dedup", out="dd") == 0
    assert len(stub.calls()) == 6 + 3  # one per distinct trace: gemm, norm, act
    sim = pd.read_csv(tmp_path / "dd" / "simulated.csv")
    first_gemm = sim.loc[sim["invocation"] == 0, "cycles"].item()
    assert (sim.loc[sim["kernel_name"] == "gemm", "cycles"] == first_gemm).all()


def test_all_writes_profile_that_scores_plans(tmp_path, stub, capsys):
    from gclsampler.profile import read_profile
    from gclsampler.score import score_plan

    wl, plan_path = _workload(tmp_path)
    assert _simulate(tmp_path, "--all") == 0
    out = capsys.readouterr().out
    assert "accelsim-SM86_RTX3070" in out and "python evaluate.py" in out
    # the command it prints scores the workload as it is: the suite would otherwise synthesize a
    # workload made with other knobs again (and refuses to, over the simulated profile)
    assert "generate=false" in out and "suite.trace_arch" not in out  # toy's workload.json names no arch
    from gclsampler.cli.simulate import _evaluate_command

    (wl / "workload.json").write_text(json.dumps({"workload": "toy", "synthetic": True, "arch": "ampere"}))
    assert " suite.trace_arch=ampere 'suite.archs=[accelsim-SM86_RTX3070]' generate=false" in _evaluate_command(
        wl, wl / "profiles" / "accelsim-SM86_RTX3070.csv")
    prof = read_profile(wl / "profiles" / "accelsim-SM86_RTX3070.csv")
    assert prof["cycles"].tolist() == [CYC[k] for k in range(1, 7)]
    assert prof["time_ns"].tolist() == pytest.approx([CYC[k] * 1000 / CLOCK_MHZ for k in range(1, 7)])
    assert set(prof["simulated_by"]) == {"Accel-Sim SM86_RTX3070, one SM (SM 0's share), synthetic traces"}
    side = json.loads((wl / "profiles" / "accelsim-SM86_RTX3070.json").read_text())
    assert side["simulated"] is True and side["synthetic"] is True and "SIMULATED" in side["note"]
    row = score_plan(SamplingPlan.load(plan_path), prof)
    full = sum(CYC.values())
    est = 1 * 1000 + 2 * 1300 + 2 * 3000 + 1 * 500
    assert row["error_cycles"] == pytest.approx(abs(full - est) / full * 100)
    # the single-workload report scores on every profiles/*.csv and says which ground truth is simulated
    from gclsampler.report import write_workload_report
    from gclsampler.workload import Workload

    own = prof.assign(cycles=prof["cycles"] * 2)
    wk = Workload("toy", own, root=wl, arch="ampere", synthetic=True)
    write_workload_report(wk, SamplingPlan.load(plan_path), tmp_path / "rep", plots=False)
    res = pd.read_csv(tmp_path / "rep" / "results.csv")
    assert set(res["arch"]) == {"ampere", "accelsim-SM86_RTX3070"}
    assert res.loc[res["arch"] == "accelsim-SM86_RTX3070", "error_cycles"].item() == pytest.approx(row["error_cycles"])
    assert "`accelsim-SM86_RTX3070` is SIMULATED by Accel-Sim" in (tmp_path / "rep" / "report.md").read_text()
    # sharing the --all run's cache, the sampled run simulates nothing new and agrees with the profile
    assert _simulate(tmp_path, "--cache-dir", str(tmp_path / "out" / "runs"), out="sampled") == 0
    assert len(stub.calls()) == 6
    got = json.loads((tmp_path / "sampled" / "estimate.json").read_text())["totals"]["cycles"]
    assert got == pytest.approx(row["cycles_est"])


@pytest.mark.parametrize("mode, expect", [
    ("unsupported", "exited 0 without printing gpu_sim_cycle (unsupported binary version: 90"),
    ("crash", "was killed by signal 6 (accel-sim.out: trace_driven.cc:209"),
    ("deadlock", "aborted: deadlock detected"),
    ("capped", "stopped at its cycle or instruction cap (-gpgpu_max_cycle, -gpgpu_max_insn)"),
    ("partial", "the log ends before Accel-Sim's closing line (GPGPU-Sim: *** exit detected ***)"),
])
def test_failures_name_invocation_and_log_and_are_retried(tmp_path, stub, capsys, mode, expect):
    _workload(tmp_path)
    stub.set({"*": {"cycles": 900, "insn": 1800}, "4": {"mode": mode}})  # kernel 4 = invocation 3
    assert _simulate(tmp_path) == 1
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "invocation 3" in ln)
    assert expect in line
    log = Path(line.split("; log ")[1].split()[0])
    assert log.is_file() and log.name == "accelsim.log"
    assert "1 of 4 simulations failed" in err and not (tmp_path / "out" / "estimate.json").exists()
    stub.set({"*": {"cycles": 900, "insn": 1800}})
    n = len(stub.calls())
    assert _simulate(tmp_path) == 0  # only the failed one runs again
    assert [c["kernel_id"] for c in stub.calls()[n:]] == [4]


def test_a_failed_rerun_leaves_no_earlier_estimate_behind(tmp_path, stub, capsys):
    """docs/simulate.md: when any run failed, the command writes no estimate; an earlier run's
    estimate.json beside the new run.json (other flags, failures) contradicted it."""
    _workload(tmp_path)
    assert _simulate(tmp_path) == 0
    assert (tmp_path / "out" / "estimate.json").exists()
    stub.set({"*": {"cycles": 900, "insn": 1800}, "4": {"mode": "crash"}})
    assert _simulate(tmp_path, "--sim-arg=-gpgpu_max_cycle 5") == 1
    assert not (tmp_path / "out" / "estimate.json").exists() and not (tmp_path / "out" / "simulated.csv").exists()
    capsys.readouterr()


def test_trace_ids_other_than_1_to_n_are_refused_before_simulating(tmp_path, stub, capsys):
    """invocation i is -kernel id i+1 for simulate. With ids 2..4 (a trace that began after the
    first launch), a plan's invocation 1 ran the trace of the list's first launch, and --all
    simulated every trace, wrote simulated.csv, then failed on the profile (exit 2)."""
    wl = tmp_path / "wl"
    wl.mkdir()
    body = [Inst("FADD", ("R0",), ("R1", "R2")), Inst("EXIT")]
    for kid in (2, 3, 4):
        write_kernel(make_trace([body, body], kernel_id=kid, name="k"), wl / f"kernel-{kid}.traceg")
    write_kernelslist(wl, [f"kernel-{kid}.traceg" for kid in (2, 3, 4)])
    plan = SamplingPlan("toy", "test", 3, [Sample(1, "k", 0, 2.0), Sample(2, "k", 1, 1.0)],
                        [ClusterInfo(0, 2), ClusterInfo(1, 1)]).save(tmp_path / "plan.json")
    for extra in ((), ("--all",)):
        assert _simulate(tmp_path, *extra, plan=None if extra else plan) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "kernelslist.g: -kernel id: trace ids run 2..4 over 3 traces; simulate needs " \
                                 "ids 1..N" in err[0], err
        assert not (tmp_path / "out").exists() and stub.calls() == []
    assert not (wl / "profiles").exists()


def test_plan_of_another_workload_with_as_many_invocations_is_refused(tmp_path, stub, capsys):
    wl, plan_path = _workload(tmp_path)
    doc = json.loads(plan_path.read_text())
    s = next(s for s in doc["samples"] if s["invocation"] == 3)
    s["kernel_name"] = "softmax"  # invocation 3 traces gemm
    plan_path.write_text(json.dumps(doc))
    assert _simulate(tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invocation 3 is 'softmax', but" in err[0] and "traces 'gemm'" in err[0]
    assert stub.calls() == []


def test_all_never_overwrites_a_profile_it_did_not_write(tmp_path, stub, capsys):
    wl, _ = _workload(tmp_path)
    mine = wl / "profiles" / "accelsim-SM86_RTX3070.csv"
    mine.parent.mkdir()
    mine.write_text("my own data\n")
    assert _simulate(tmp_path, "--all") == 2
    assert "not written by `gclsampler simulate --all`" in capsys.readouterr().err
    assert mine.read_text() == "my own data\n" and stub.calls() == []
    mine.unlink()
    notes = mine.with_suffix(".json")  # the sidecar's name: a user's file there was overwritten
    notes.write_text('{"my": "notes"}')
    assert _simulate(tmp_path, "--all") == 2
    assert f"{notes}: exists and was not written by `gclsampler simulate --all`" in capsys.readouterr().err
    notes.unlink()
    import os

    os.mkfifo(notes)  # replaced by a regular file before
    assert _simulate(tmp_path, "--all") == 2
    assert f"{notes}: is a named pipe (FIFO)" in capsys.readouterr().err
    notes.unlink()
    assert _simulate(tmp_path, "--all") == 0
    assert _simulate(tmp_path, "--all", out="again") == 0  # its own earlier profile is replaced


@pytest.mark.parametrize("where, needle", [("user", "holds 'a.txt', which is not a simulate run"),
                                           ("workload", "--cache-dir: "), ("file", "is a file, not a run cache")])
def test_cache_dir_is_checked_as_out_is(tmp_path, stub, capsys, where, needle):
    wl, plan_path = _workload(tmp_path)
    cache = {"user": tmp_path / "user", "workload": wl / "cache", "file": tmp_path / "notes.txt"}[where]
    if where == "user":
        cache.mkdir()
        (cache / "a.txt").write_text("mine\n")
    if where == "file":
        cache.write_text("mine\n")
    assert _simulate(tmp_path, "--cache-dir", str(cache)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "out").exists() and stub.calls() == []
    assert not (wl / "cache").exists()


@pytest.mark.parametrize("out, cache", [("sim", "sim"), ("cc/o", "cc")])
def test_cache_dir_that_is_or_holds_out_is_refused_at_once(tmp_path, stub, capsys, monkeypatch, out, cache):
    """The first run wrote its outputs into the cache and succeeded; the identical rerun then
    refused the cache as holding '.gclsampler-output' (or 'o'), not a run."""
    _workload(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "plan.json", "wl", "--out", out, "--cache-dir", cache]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--cache-dir: {cache}: is --out or holds it" in err[0], err
    assert not (tmp_path / out).exists() and stub.calls() == []
    assert main(["simulate", "plan.json", "wl", "--out", out, "--cache-dir", "elsewhere"]) == 0
    assert main(["simulate", "plan.json", "wl", "--out", out, "--cache-dir", "elsewhere"]) == 0


def test_timeout_kills_the_run(tmp_path, stub, capsys):
    _workload(tmp_path)
    """A simulator that never answers (the stub sleeps an hour) is killed at --timeout: the
    command returns, names the invocation, and leaves no simulator process behind."""
    stub.set({"*": {"cycles": 900, "insn": 1800}, "1": {"mode": "hang"}})
    assert _simulate(tmp_path, "--timeout", "1.5", "--jobs", "2") == 1
    assert "invocation 0: no answer within 1.5 s (--timeout)" in capsys.readouterr().err
    hung = [c["pid"] for c in stub.calls() if c["kernel_id"] == 1]
    assert hung
    deadline = time.monotonic() + 30  # a wait for the kill to land, not a speed target: unkilled, it sleeps an hour
    while not all(_process_gone(pid) for pid in hung):
        assert time.monotonic() < deadline, f"simulator processes {hung} still running after --timeout"
        time.sleep(0.05)


def _process_gone(pid: int) -> bool:
    """No such process, or a zombie (killed, not yet reaped by its reparented parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wrapper_job(tmp_path: Path, timeout_s: float | None) -> tuple[S.Job, Path]:
    """A "simulator" that is a shell wrapper, as Accel-Sim's binary often is run: it starts the
    real work as a background child (a grandchild of gclsampler) and waits for it."""
    script, pid_file = tmp_path / "wrapper.sh", tmp_path / "grandchild.pid"
    script.write_text('#!/bin/bash\nsleep 3600 &\necho $! > "$PID_FILE"\nwait\n')
    script.chmod(0o755)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PID_FILE": str(pid_file)}
    return S.Job(0, "k", "k" * 32, tmp_path / "job", (str(script),), env, None, timeout_s), pid_file


def _grandchild_pid(pid_file: Path) -> int:
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline, "the wrapper never started its child"
        time.sleep(0.02)
    return int(pid_file.read_text())


def _assert_gone_soon(pid: int) -> None:
    try:
        deadline = time.monotonic() + 5  # a wait for the kill to land; unkilled, it sleeps an hour
        while not _process_gone(pid):
            assert time.monotonic() < deadline, f"the wrapper's child {pid} still runs after the wrapper was killed"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_timeout_kills_what_a_wrapper_script_started(tmp_path):
    """--timeout killed the wrapper only: its child went on simulating for an hour, unseen,
    still writing into the log."""
    job, pid_file = _wrapper_job(tmp_path, timeout_s=1.0)
    res = S.run_job(job)
    assert "no answer within 1 s (--timeout)" in res["error"]
    _assert_gone_soon(_grandchild_pid(pid_file))


def test_ctrl_c_kills_what_a_wrapper_script_started(tmp_path):
    """kill_live_runs (Ctrl-C, SIGTERM) killed the wrapper only, as --timeout did."""
    job, pid_file = _wrapper_job(tmp_path, timeout_s=None)
    t = threading.Thread(target=S.run_job, args=(job,))
    t.start()
    try:
        pid = _grandchild_pid(pid_file)
        assert S.kill_live_runs() == 1
        t.join(30)
        assert not t.is_alive()
        _assert_gone_soon(pid)
    finally:
        S.kill_live_runs()
        t.join(30)


def test_an_interrupted_run_job_kills_what_it_started(tmp_path):
    """submitit's local launcher cancels a job with a SIGINT to the worker running run_job only;
    the simulator and what it started ran on (and, in their own session, no longer get a
    terminal's Ctrl-C either)."""
    job, pid_file = _wrapper_job(tmp_path, timeout_s=None)
    pids: list[int] = []

    def interrupt():
        pids.append(_grandchild_pid(pid_file))
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        S.run_job(job)
    t.join(30)
    _assert_gone_soon(pids[0])


def test_bad_input_is_one_line_exit_2(tmp_path, stub, capsys):
    wl, plan = _workload(tmp_path)
    for argv, msg in (
        (["simulate", str(plan), "--out", "o"], "expected PLAN and WL"),
        (["simulate", "--all", str(plan), str(wl), "--out", "o"], "expected one workload directory"),
        (["simulate", str(plan), str(wl), "--out", "o", "--jobs", "0"], "--jobs 0"),
        (["simulate", str(plan), str(wl), "--out", "o", "--slurm", "partition"], "--slurm 'partition': expected KEY=VALUE"),
        (["simulate", str(plan), str(tmp_path), "--out", "o"], "not a workload directory"),
        (["simulate", str(plan), str(wl), "--out", "o", "--config", "NOPE"], "--config NOPE"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], (argv, err)
    other = SamplingPlan("toy", "t", 7, [Sample(0, "gemm", 0, 7.0)], [ClusterInfo(0, 7)]).save(tmp_path / "p7.json")
    assert main(["simulate", str(other), str(wl), "--out", "o"]) == 2
    assert "6 kernel invocations, but" in capsys.readouterr().err


def test_binary_that_cannot_run_is_one_line_exit_2(tmp_path, stub, capsys):
    _workload(tmp_path)
    binary = stub.root / "gpu-simulator" / "bin" / "release" / "accel-sim.out"
    binary.write_text("#!/bin/sh\necho 'accel-sim.out: error while loading shared libraries: libcudart.so.11.0: "
                      "cannot open shared object file: No such file or directory' >&2\nexit 127\n")
    assert _simulate(tmp_path) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("gclsampler: error:")]
    assert len(err) == 1 and "accel-sim.out: cannot run (accel-sim.out: error while loading shared libraries" in err[0]
    assert "rebuild Accel-Sim" in err[0]


def test_export_states_traced_ctas_and_capped_warps(tmp_path, capsys):
    import dataclasses

    from gclsampler.trace.workload import describe_export, export_facts

    capped = [Inst("FADD", ("R0",), ("R1", "R2")), Inst("FADD", ("R0",), ("R1", "R2"))]  # no EXIT: cut by a cap
    t = make_trace([capped, [Inst("FADD", ("R0",), ("R1",)), Inst("EXIT")]], kernel_id=1, name="k")
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, grid=(8, 1, 1)))  # 1 of 8 CTAs traced
    assert export_facts(t) == {"ctas_traced": 1, "ctas_grid": 8, "warps": 2, "warps_cut": 1}
    lines = describe_export([export_facts(t)])
    assert "1 of 1 traces hold only some CTAs of their launch (1 of 8 CTAs" in lines[0]
    assert "1 of 1 traces have warps that end without EXIT, cut short by an instruction cap or a trace that stopped early (1 of 2 warps" in lines[1]
    wl = tmp_path / "wl"
    write_kernel(t, wl / "kernel-1.traceg")
    write_kernelslist(wl, ["kernel-1.traceg"])
    assert main(["trace", "export-accelsim", str(wl), str(tmp_path / "x")]) == 0
    out = capsys.readouterr().out
    assert "note: 1 of 1 traces hold only some CTAs" in out and "warps that end without EXIT" in out
    complete = make_trace([[Inst("EXIT")]], kernel_id=1, name="k")
    assert describe_export([export_facts(complete)]) == []


def test_missing_submitit_is_one_line(tmp_path, stub, capsys, monkeypatch):
    _workload(tmp_path)
    monkeypatch.setitem(sys.modules, "submitit", None)
    assert _simulate(tmp_path, "--launcher", "slurm") == 2
    assert "needs submitit: pip install 'gclsampler[slurm]'" in capsys.readouterr().err


def test_slurm_without_a_cluster_is_one_line_and_leaves_no_output(tmp_path, stub, capsys, monkeypatch):
    """submitit's "Could not detect srun" came as a traceback after --out was claimed."""
    pytest.importorskip("submitit")
    _workload(tmp_path)
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda c, *a, **k: None if c in ("sbatch", "srun") else real_which(c, *a, **k))
    assert _simulate(tmp_path, "--launcher", "slurm") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--launcher slurm: sbatch and srun not on PATH" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("launcher,kv,needle", [
    ("submitit-local", "nosuchkey=1", "--slurm nosuchkey=1: Unknown argument 'nosuchkey' for executor 'slurm'"),
    ("local", "partition=gpu", "--slurm partition=...: only --launcher slurm or submitit-local reads SLURM"),
])
def test_slurm_parameters_a_launcher_would_not_take_are_refused_before_any_output(tmp_path, stub, capsys,
                                                                                 launcher, kv, needle):
    """An unknown key was submitit's NameError traceback (exit 1) after --out had been claimed;
    with the local launcher, --slurm was ignored without a word."""
    if launcher != "local":
        pytest.importorskip("submitit")
    _workload(tmp_path)
    assert _simulate(tmp_path, "--launcher", launcher, "--slurm", kv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert needle in line
    assert not (tmp_path / "out").exists()
    assert not stub.calls()


def test_cluster_errors_from_submitit_are_one_line(capsys):
    """hydra/launcher=slurm fails inside submitit, past any check of ours: the guard words it."""
    pytest.importorskip("submitit")
    from gclsampler._guard import call_guarded

    def no_srun():
        import submitit.slurm.slurm as sl

        code = compile('raise RuntimeError(\'Could not detect "srun", are you indeed on a slurm cluster?\')',
                       sl.__file__, "exec")
        exec(code, {})

    with pytest.raises(SystemExit) as e:
        call_guarded(no_srun, "train.py")
    assert e.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith('train.py: error: SLURM: Could not detect "srun"') and "local launcher" in line
    with pytest.raises(RuntimeError):  # the same error from our own code stays a bug's traceback
        call_guarded(lambda: (_ for _ in ()).throw(RuntimeError("boom")), "train.py")


def test_a_failed_job_of_a_submitit_multirun_is_its_own_error_line(tmp_path, capsys):
    """`train.py -m hydra/launcher=slurm` (or submitit_local) with a job that fails: the launcher
    re-raises submitit's error for it, and the line said "SLURM: Job 14211 (task: 0) with path
    .../14211_0_result.pkl (... needs a SLURM cluster: run on its login node, or use the local
    launcher)", the wrong cause and not the job's error. Now it names the job, its error and its log."""
    pytest.importorskip("submitit")
    from submitit.local.local import LocalJob

    from gclsampler._guard import call_guarded

    folder = tmp_path / ".submitit" / "14211"
    folder.mkdir(parents=True)
    (folder / "14211_0_log.err").write_text("train.py: error: augment.min_strategies/max_strategies: need 0 <= "
                                            "min <= max, got 3, 2\n")
    job = LocalJob(folder=folder, job_id="14211")
    job._results_timeout_s = 0  # no result pickle: the job exited 2 before writing one

    with pytest.raises(SystemExit) as e:
        call_guarded(lambda: job.result(), "train.py")
    assert e.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == ("train.py: error: job 14211 (task 0) of the multirun failed: augment.min_strategies/"
                    f"max_strategies: need 0 <= min <= max, got 3, 2 (its log: {folder / '14211_0_log.err'})")


def test_submitit_local_executor(tmp_path, stub, monkeypatch):
    pytest.importorskip("submitit")
    # submitit's workers unpickle gclsampler.simulate.run_job: make this checkout importable there
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
    _workload(tmp_path)
    assert _simulate(tmp_path, "--launcher", "submitit-local") == 0
    assert sorted(c["kernel_id"] for c in stub.calls()) == [1, 3, 4, 5]
    assert (tmp_path / "out" / "runs" / "submitit").is_dir()
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert est["totals"]["cycles"] == pytest.approx(1 * 1000 + 2 * 1300 + 2 * 3000 + 1 * 500)


@pytest.mark.skipif(os.environ.get("GCL_TEST_SLURM") != "1" or shutil.which("sbatch") is None,
                    reason="opt-in: GCL_TEST_SLURM=1 with a SLURM cluster answering sbatch")
def test_slurm_launcher_on_a_real_cluster(tmp_path, stub, monkeypatch):
    """The local executor does not exercise sbatch: its flags, the array, polling squeue/sacct.

    Opt-in, because an installed but stopped or busy SLURM would fail or stall an unrelated test
    run (docs/simulate.md sets up a one-node slurmctld+slurmd). The output folder stands in for
    the shared filesystem. GCL_TEST_SLURM_PARTITION picks the partition.
    """
    pytest.importorskip("submitit")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
    _workload(tmp_path)
    part = os.environ.get("GCL_TEST_SLURM_PARTITION")
    extra = [a for kv in ([f"partition={part}"] if part else []) + ["mem_gb=1", "cpus_per_task=1"]
             for a in ("--slurm", kv)]
    assert _simulate(tmp_path, "--launcher", "slurm", "--timeout", "120", *extra) == 0
    assert sorted(c["kernel_id"] for c in stub.calls()) == [1, 3, 4, 5]
    logs = sorted(p.name for p in (tmp_path / "out" / "runs" / "submitit").rglob("*_submission.sh"))
    assert logs, "submitit wrote no sbatch script"
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert est["totals"]["cycles"] == pytest.approx(1 * 1000 + 2 * 1300 + 2 * 3000 + 1 * 500)


def _cli(tmp_path, *args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "gclsampler", "simulate", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_results(runs: Path, n: int, timeout: float = 60) -> list[Path]:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        done = list(runs.glob("*/result.json"))
        if len(done) >= n:
            return done
        time.sleep(0.05)
    raise AssertionError(f"no {n} results within {timeout} s")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_resume_after_kill(tmp_path, stub, sig):
    wl, plan = _workload(tmp_path)
    stub.set({str(k): {"cycles": CYC[k], "insn": INSN[k], "sleep": 0.3} for k in CYC})
    p = _cli(tmp_path, "--all", wl, "--out", tmp_path / "out")
    done = _wait_results(tmp_path / "out" / "runs", 2)
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    if sig == signal.SIGTERM:
        assert p.returncode == 143 and "gclsampler: terminated; finished simulations are cached" in err, err
    time.sleep(0.5)  # a SIGKILLed driver leaves its running simulator behind: let it end
    finished = {json.loads(f.read_text())["invocation"] for f in _wait_results(tmp_path / "out" / "runs", len(done))}
    n_before = len(stub.calls())
    assert _simulate(tmp_path, "--all", wl=wl) == 0
    again = {c["kernel_id"] - 1 for c in stub.calls()[n_before:]}
    assert again == set(range(6)) - finished  # nothing finished is simulated twice
    prof = pd.read_csv(wl / "profiles" / "accelsim-SM86_RTX3070.csv")
    assert prof["cycles"].tolist() == [CYC[k] for k in range(1, 7)]
    assert not list((tmp_path / "out" / "runs").glob("*/.run-*"))  # run directories are cleaned up


def test_out_that_is_not_simulates_is_refused_and_left_alone(tmp_path, stub, capsys):
    """--out is written into (it is also the run cache), so it must be simulate's own
    directory: a user's directory, or one inside the workload, is refused before any work."""
    wl, plan = _workload(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "estimate.json").write_text('{"mine": 1}')
    (mine / "notes.txt").write_text("keep")
    for out, msg in ((mine, "not written by `gclsampler simulate`"), (wl / "sim", "inside the input")):
        assert main(["simulate", str(plan), str(wl), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err
    assert (mine / "estimate.json").read_text() == '{"mine": 1}' and (mine / "notes.txt").read_text() == "keep"
    assert not (wl / "sim").exists() and stub.calls() == []
    # its own output may be written again (a rerun continues from the cache)
    assert _simulate(tmp_path) == 0 and _simulate(tmp_path) == 0
    (tmp_path / "out" / ".gclsampler-output").unlink()  # an output from before the marker: known by run.json
    assert _simulate(tmp_path) == 0


def test_bad_trace_leaves_no_output_behind(tmp_path, stub, capsys):
    wl, plan = _workload(tmp_path)
    bad = wl / "kernel-4.traceg"  # invocation 3, exported after invocations 0 and 2
    bad.write_text(bad.read_text().replace("EXIT", "EXIT R0 R0 R0 garbage", 1).replace("#END_TB", "", 1))
    rc = _simulate(tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("gclsampler: error: ") and "kernel-4.traceg:" in err[-1]
    assert not (tmp_path / "out").exists() and stub.calls() == []
    # an empty directory made beforehand (mkdir, a job script) is left empty, not marked as a run
    (tmp_path / "out").mkdir()
    assert _simulate(tmp_path) == 2
    assert list((tmp_path / "out").iterdir()) == [] and stub.calls() == []


def test_a_cold_cache_of_many_invocations_stays_within_the_open_files_limit(tmp_path, stub):
    """A per-run lock held from export to result kept one open file per uncached invocation:
    ``simulate --all`` on a cold cache of 1024 launches met the default limit of 1024 open
    files (exit 2, "Too many open files"). Files held must not grow with the invocations."""
    import resource

    n = 96
    _traces(tmp_path, ["gemm", "norm", "act"] * (n // 3))
    stub.set({"*": {"cycles": 1000, "insn": 2000}})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_now = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 64
    limit = open_now + 48  # well under n: one file per invocation cannot fit
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), hard))
    try:
        assert _simulate(tmp_path, "--all") == 0
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    lines = (tmp_path / "out" / "simulated.csv").read_text().splitlines()
    assert len(lines) == n + 1


# ---------------------------------------------------------------------------------------
# two commands on one run cache
# ---------------------------------------------------------------------------------------
def _cli_to_files(tmp_path: Path, name: str, *args) -> tuple[subprocess.Popen, Path, Path]:
    """A ``gclsampler simulate`` process whose stdout and stderr go to files, so a test can
    look for a line while the process still runs (no reader thread, no pipe that fills)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out, err = tmp_path / f"{name}.stdout", tmp_path / f"{name}.stderr"
    with open(out, "w") as fo, open(err, "w") as fe:
        p = subprocess.Popen([sys.executable, "-m", "gclsampler", "simulate", *map(str, args)], env=env,
                             stdout=fo, stderr=fe, text=True)
    return p, out, err


def _until(what: str, done: Callable[[], bool], timeout: float = 60) -> None:
    """Wait for an event the test can see (a file, a line); the timeout only stops a broken run."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.02)


WAITING = "gclsampler: waiting for another simulate command"  # not just "waiting": a test's path may hold it


def _calls_of(stub, kernel_id: int) -> int:
    return sum(c["kernel_id"] == kernel_id for c in stub.calls())


def test_two_commands_on_one_cache_at_once_simulate_each_run_once(tmp_path, stub):
    """Two commands on one --cache-dir at once: the second took the run the first was still
    simulating for a killed run's leftovers, removed its run directory and temp logs and
    simulated it again, and the first then failed renaming its log. The second now waits for
    the first, says so naming the cache, and then answers from the cache."""
    wl, plan = _workload(tmp_path)
    go, cache = tmp_path / "go", tmp_path / "cache"
    behaviour = {str(k): {"cycles": CYC[k], "insn": INSN[k]} for k in CYC}
    behaviour["1"]["wait_for"] = str(go)  # invocation 0 runs until the test says
    stub.set(behaviour)
    a, a_out, a_err = _cli_to_files(tmp_path, "a", plan, wl, "--out", tmp_path / "a", "--cache-dir", cache)
    try:
        _until("simulation of invocation 0 by the first command", lambda: _calls_of(stub, 1) == 1)
        b, b_out, b_err = _cli_to_files(tmp_path, "b", plan, wl, "--out", tmp_path / "b", "--cache-dir", cache)
        try:
            # the second command either says it waits (one run at a time) or starts invocation 0 again
            _until("wait, second simulation or end of the second command",
                   lambda: WAITING in b_err.read_text() or _calls_of(stub, 1) > 1 or b.poll() is not None)
        finally:
            go.write_text("")
            b.wait(60)
    finally:
        go.write_text("")
        a.wait(60)
    assert a.returncode == 0, a_err.read_text()
    assert b.returncode == 0, b_err.read_text()
    assert sorted(c["kernel_id"] for c in stub.calls()) == [1, 3, 4, 5]  # each run simulated once
    waiting = [ln for ln in b_err.read_text().splitlines() if ln.startswith(WAITING)]
    assert len(waiting) == 1 and str(cache.resolve()) in waiting[0], b_err.read_text()
    assert "runs: 0 simulated now, 4 from the cache" in b_out.read_text()
    est_a, est_b = (json.loads((tmp_path / d / "estimate.json").read_text()) for d in ("a", "b"))
    assert est_a["totals"] == est_b["totals"]


def test_a_second_command_on_one_out_is_refused_before_it_touches_it(tmp_path, stub):
    """Two commands with one --out: the second deleted the first's simulated.csv and
    estimate.json (an earlier run's, it took them for) and wrote its own run.json beside the
    first's results. It is now refused, exit 2, naming --out, and the first's files stay as
    it writes them; after it, the same --out is taken again (in this process too)."""
    from gclsampler.cli import main

    wl, plan = _workload(tmp_path)
    go, out = tmp_path / "go", tmp_path / "out"
    assert main(["simulate", str(plan), str(wl), "--out", str(out), "--accelsim-root", str(stub.root)]) == 0
    before = json.loads((out / "estimate.json").read_text())["totals"]
    behaviour = {str(k): {"cycles": CYC[k], "insn": INSN[k]} for k in CYC}
    behaviour["1"]["wait_for"] = str(go)
    stub.set(behaviour)
    n0 = _calls_of(stub, 1)  # the run above
    a, _, a_err = _cli_to_files(tmp_path, "a", plan, wl, "--out", out, "--cache-dir", tmp_path / "cache_a")
    try:
        _until("simulation of invocation 0 by the first command", lambda: _calls_of(stub, 1) == n0 + 1)
        b, b_out, b_err = _cli_to_files(tmp_path, "b", plan, wl, "--out", out, "--cache-dir", tmp_path / "cache_b")
        try:
            assert b.wait(60) == 2
        finally:
            if b.poll() is None:
                b.kill()
        assert b_err.read_text().splitlines() == [
            f"gclsampler: error: --out: {out}: in use by another simulate command; give each command its own "
            "--out (they may share a --cache-dir)"], b_err.read_text()
        assert not (tmp_path / "cache_b").exists() and _calls_of(stub, 1) == n0 + 1
    finally:
        go.write_text("")
        a.wait(60)
    assert a.returncode == 0, a_err.read_text()
    assert json.loads((out / "estimate.json").read_text())["totals"] == before  # the first's, whole
    stub.set({str(k): {"cycles": CYC[k], "insn": INSN[k]} for k in CYC})
    assert main(["simulate", str(plan), str(wl), "--out", str(out), "--accelsim-root", str(stub.root)]) == 0
    assert main(["simulate", str(plan), str(wl), "--out", str(out), "--accelsim-root", str(stub.root)]) == 0
    assert not (out / ".gclsampler-run.lock").exists()


@pytest.mark.parametrize("sig, status, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_command_waiting_for_the_cache_stops_cleanly(tmp_path, stub, sig, status, word):
    """Ctrl-C (or a scheduler's SIGTERM) while waiting for another command's cache: one line,
    the usual exit status, nothing simulated, and the other command's lock left alone."""
    wl, plan = _workload(tmp_path)
    cache = tmp_path / "cache"
    with S.cache_lock(cache) as held:
        assert held is not None and held.state == "held"
        b, _, b_err = _cli_to_files(tmp_path, "b", plan, wl, "--out", tmp_path / "b", "--cache-dir", cache)
        try:
            _until("waiting line", lambda: WAITING in b_err.read_text() or b.poll() is not None)
            assert WAITING in b_err.read_text(), b_err.read_text()
            b.send_signal(sig)
            assert b.wait(60) == status, b_err.read_text()
        finally:
            if b.poll() is None:
                b.kill()
        with S.cache_lock(cache, wait=False) as other:
            assert other is None  # still ours
    err = b_err.read_text()
    assert "Traceback" not in err and f"gclsampler: {word}; finished simulations are cached in" in err, err
    assert f"with the run cache {cache.resolve()}:" in err
    assert stub.calls() == [] and [p.name for p in cache.iterdir()] == [S.LOCK_NAME]


def _lock_fds(lock: Path) -> int:
    """How many of this process's descriptors are open on ``lock``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            n += os.readlink(f"/proc/self/fd/{fd}") == str(lock)
    return n


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
@pytest.mark.parametrize("launcher", ["local", "submitit-local"])
def test_one_lock_descriptor_per_command_however_many_invocations(tmp_path, stub, monkeypatch, launcher):
    """A lock per run held one open file per uncached invocation (1024 invocations met the
    default limit of 1024). One command holds its cache through one descriptor, from the
    first cached answer to the last run (the SLURM launcher's path too), and none after."""
    if launcher != "local":
        pytest.importorskip("submitit")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "tests"),
                                                          os.environ.get("PYTHONPATH", "")]))
    n = 12 if launcher == "local" else 6
    wl = _traces(tmp_path, ["gemm", "norm", "act"] * (n // 3))
    stub.set({"*": {"cycles": 1000, "insn": 2000}})
    sim = S.locate_simulator(stub.root)
    cache = tmp_path / "cache"
    lock = cache.resolve() / S.LOCK_NAME
    seen: list[tuple[str, int, bool]] = []

    def on_record(rec):
        with S.cache_lock(cache, wait=False) as other:  # another descriptor, as a second command's
            seen.append((rec.source, _lock_fds(lock), other is None))

    before = len(os.listdir("/proc/self/fd"))
    S.simulate(sim, wl, range(n // 2), cache, flags=S.default_flags(), launcher=launcher, on_record=on_record)
    S.simulate(sim, wl, range(n), cache, flags=S.default_flags(), launcher=launcher, on_record=on_record)
    assert [s for s, _, _ in seen] == ["run"] * (n // 2) + ["cache"] * (n // 2) + ["run"] * (n - n // 2)
    assert all(fds == 1 and busy for _, fds, busy in seen), seen  # one descriptor, and the cache held
    assert _lock_fds(lock) == 0 and len(os.listdir("/proc/self/fd")) <= before


def test_a_filesystem_without_locks_runs_unlocked_and_says_so(tmp_path, stub, capsys, monkeypatch):
    """NFS without lockd answers flock with ENOLCK: the command runs as before the lock (one at
    a time is then the user's to keep) with one line saying so, rather than stopping."""
    import errno

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    _workload(tmp_path)
    monkeypatch.setattr(S.fcntl, "flock", no_locks)
    cache = tmp_path / "cache"
    assert _simulate(tmp_path, "--cache-dir", str(cache)) == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert len(warned) == 1 and f"{cache.resolve() / S.LOCK_NAME}: cannot lock it (No locks available" in warned[0]
    assert "run no other simulate on" in warned[0]
    assert sorted(c["kernel_id"] for c in stub.calls()) == [1, 3, 4, 5]


def test_a_platform_without_flock_says_so_not_nfs(tmp_path, stub, capsys, monkeypatch):
    """Without ``fcntl`` (Windows) the warning blamed the filesystem ("NFS without lockd?"): the
    user was sent to check a mount, where it is this platform that has no flock."""
    _workload(tmp_path)
    monkeypatch.setattr(S, "fcntl", None)
    cache = tmp_path / "cache"
    assert _simulate(tmp_path, "--cache-dir", str(cache)) == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert len(warned) == 1 and f"{cache.resolve() / S.LOCK_NAME}: cannot lock it (this platform has no flock)" \
        in warned[0], warned
    assert "NFS" not in warned[0] and "run no other simulate on" in warned[0]


def test_a_read_only_cache_answers_what_it_holds_and_refuses_to_simulate_more(tmp_path, stub, capsys, monkeypatch):
    """A cache this user may only read (a colleague's, a read-only mount) has no lock file to
    make: its cached runs are still answered, but nothing is started there, since a command that
    cannot lock the cache cannot keep a second one out of the runs it would start."""
    import errno

    wl, _ = _workload(tmp_path)
    cache = tmp_path / "cache"
    assert _simulate(tmp_path, "--cache-dir", str(cache)) == 0  # invocations 0, 2, 3, 4 cached
    (cache / S.LOCK_NAME).unlink()
    real_open = os.open

    def read_only(path, flags, *args, **kw):
        if str(path).endswith("/" + S.LOCK_NAME) and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(S.os, "open", read_only)
    n_calls, entries = len(stub.calls()), sorted(p.name for p in cache.iterdir())
    capsys.readouterr()
    assert _simulate(tmp_path, "--cache-dir", str(cache), out="again") == 0
    assert "runs: 0 simulated now, 4 from the cache" in capsys.readouterr().out
    assert _simulate(tmp_path, "--all", "--cache-dir", str(cache), out="all") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"gclsampler: error: {cache.resolve()}: cannot make {S.LOCK_NAME} there (Permission denied), "
                       "and invocation 1 is not cached there; give a writable --cache-dir"), err
    assert len(stub.calls()) == n_calls and sorted(p.name for p in cache.iterdir()) == entries


def test_a_lock_file_removed_while_a_command_waits_is_not_held_by_two(tmp_path, capsys):
    """Removing an unused cache (the CLI after a refused trace) removes its lock file: a command
    that waited on the removed file held a lock no later command saw, so a third one could run
    beside it. The waiter locks the file that is there now."""
    cache = tmp_path / "runs"
    got = threading.Event()
    release = threading.Event()

    def second():
        with S.cache_lock(cache) as lock:
            assert lock is not None and lock.state == "held"
            got.set()
            release.wait(60)

    t = threading.Thread(target=second)
    with S.cache_lock(cache):
        t.start()
        said: list[str] = []
        _until("waiting line", lambda: said.append(capsys.readouterr().err) or WAITING in "".join(said))
        shutil.rmtree(cache)
    try:
        assert got.wait(60)
        assert (cache / S.LOCK_NAME).is_file()
        with S.cache_lock(cache, wait=False) as third:
            assert third is None  # the waiter holds the lock file that is there now
    finally:
        release.set()
        t.join(60)
