"""real/collect.sh, run end to end against stand-in programs.

Why: the script is the whole of a GPU session's plan, and that session has minutes of
device time. A wrong branch in it (the probes choosing the wrong way records leave the
GPU, a step run without the tool, a pack that drops the traces) is found there only
after the time is spent. Here every CUDA program, the LLM and the NVBit tool are one
stand-in that reads the tool's environment the way the tool does, writes what the tool
would, and logs how it was called; the script's own logic is what runs.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from _trace_fixtures import HEADER_V5

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = ("vecadd", "nw", "bfs", "lud")
NEEDED = ("bash", "timeout", "tar", "xz", "awk", "split")

# The stand-in: which sinks deliver records is FAKE_SINKS (comma list of channel,
# buffer); FAKE_SMOKE_FAIL=1 makes a timed vecadd under the tool fail, as a tool that
# cannot load would. The tool counts as loaded only when the LD_PRELOAD file exists (ld.so
# ignores a missing one and the program runs alone, exit 0), and not at all with
# FAKE_TOOL_INERT=1 (a file ld.so cannot preload: the same). FAKE_NO_TRACE_SO=TEXT: a traced
# run whose LD_PRELOAD contains TEXT fails and writes nothing. FAKE_SLEEP_TRACE=S: every
# traced run sleeps S seconds first. FAKE_HANG=channel|buffer: a traced run through that sink
# writes a header and hangs (until the step's timeout). FAKE_DROP=1: a traced run reports records of its
# launch 2 dropped, as the tool does on stderr. Every call appends one JSON line to
# FAKE_LOG. Traces are in the tool's raw format, two launches per program; a record's
# immediate says which sink carried it (1 channel, 2 buffer). Gated times are a third of
# the ungated ones.
STAND_IN_BODY = r'''
import json, os, sys
from pathlib import Path

HEADER = HEADER_V5_TEXT

name = Path(sys.argv[0]).stem
if name == "llm_infer":
    name = "llm"
env = os.environ
preload = env.get("LD_PRELOAD", "")
tool = bool(preload) and os.path.isfile(preload) and env.get("FAKE_TOOL_INERT") != "1"
call = {"program": name, "args": sys.argv[1:], "tool": tool, "preload": preload,
        **{k: env[k] for k in ("GCL_TIME_ONLY", "GCL_COUNT_ONLY", "GCL_BUFFER_MB", "GCL_TRACE_SM", "GCL_TIME_GATE_US",
                             "CUDA_MODULE_LOADING", "GCL_UNIFORM", "GCL_CTA_SCOPE") if k in env}}
with open(env["FAKE_LOG"], "a") as f:
    f.write(json.dumps(call) + "\n")
if not tool or "GCL_TRACE_DIR" not in env:
    sys.exit(0)
if name == "vecadd" and env.get("FAKE_SMOKE_FAIL") == "1" and env.get("GCL_TIME_ONLY") == "1":
    sys.exit(1)
out = Path(env["GCL_TRACE_DIR"])
out.mkdir(parents=True, exist_ok=True)
if env.get("GCL_TIME_ONLY") == "1":
    t = [1000, 1200] if "GCL_TIME_GATE_US" in env else [3000, 3600]
    (out / "profile.csv").write_text(f"invocation,kernel_name,time_ns\n0,k,{t[0]}\n1,k,{t[1]}\n")
elif env.get("GCL_COUNT_ONLY") == "1":
    (out / "counts.csv").write_text("invocation,kernel_name,warp_insts\n1,k,100\n2,k,250\n")
else:
    if env.get("FAKE_SLEEP_TRACE"):
        import time
        time.sleep(float(env["FAKE_SLEEP_TRACE"]))
    if env.get("FAKE_HANG") == ("buffer" if "GCL_BUFFER_MB" in env else "channel"):
        import time
        (out / "kernel-1.trace").write_text(HEADER.format(kid=1, gx=16, li=0))  # its header, then nothing
        time.sleep(3600)
    if env.get("FAKE_NO_TRACE_SO") and env["FAKE_NO_TRACE_SO"] in preload:
        sys.exit(1)
    sink = "buffer" if "GCL_BUFFER_MB" in env else "channel"
    delivers = sink in env.get("FAKE_SINKS", "").split(",")
    # FAKE_UNIFORM_BREAKS=1: values-on tracing with uniform registers delivers nothing
    if env.get("FAKE_UNIFORM_BREAKS") == "1" and env.get("GCL_VALUES", "1") != "0" and env.get("GCL_UNIFORM", "1") != "0":
        delivers = False
    for i in (1, 2):
        body = HEADER.format(kid=i, gx=16, li=0)
        if delivers:
            imm = 2 if sink == "buffer" else 1
            body += f"0 0 0 0 0000 ffffffff 1 R1 IMAD 2 R2 R3 0 {imm}\n0 0 0 0 0010 ffffffff 0 EXIT 0 0 0\n"
        (out / f"kernel-{i}.trace").write_text(body)
        if env.get("GCL_VERBOSE") == "1":
            print(f"gcl_tracer: launch {i} traced: setup 0.010 s, launch+kernel 0.020 s (GPU 0.004 ms), "
                  f"flush 0.001 s, drain 0.002 s, {2 if delivers else 0} records", file=sys.stderr)
    (out / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    if env.get("FAKE_DROP") == "1":
        print("gcl_tracer: kernel 2: 5 records did not fit GCL_BUFFER_MB=16384 and are missing from its trace; "
              "rerun with a larger GCL_BUFFER_MB", file=sys.stderr)
'''
STAND_IN = STAND_IN_BODY.replace("HEADER_V5_TEXT", repr(HEADER_V5), 1)


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    missing = [t for t in NEEDED if shutil.which(t) is None]
    if missing:
        pytest.skip(f"collect.sh needs {', '.join(missing)}")
    root = tmp_path_factory.mktemp("collect")
    repo = root / "repo"
    (repo / "real" / "src").mkdir(parents=True)
    shutil.copy(REPO / "real" / "collect.sh", repo / "real" / "collect.sh")
    bindir = root / "bin"
    bindir.mkdir()
    script = f"#!{sys.executable}\n{STAND_IN}"
    for prog in PROGRAMS:
        (bindir / prog).write_text(script)
        (bindir / prog).chmod(0o755)
    (repo / "real" / "src" / "llm_infer.py").write_text(STAND_IN)
    # python3 on the script's PATH is this interpreter, so the LLM stand-in runs here too
    shims = root / "path"
    shims.mkdir()
    (shims / "python3").symlink_to(sys.executable)
    (shims / "nvidia-smi").write_text(NVIDIA_SMI)
    (shims / "nvidia-smi").chmod(0o755)
    # the carried build of the tool: a file, so that ld.so (the stand-in) loads it
    (root / "tool").mkdir()
    (root / "tool" / "gcl_tracer.so").write_text("stand-in")
    return root, repo, bindir, shims


# stand-in nvidia-smi: the GPU the traces came from is an H100 (the committed profiles: H200)
NVIDIA_SMI = """#!/bin/sh
echo 'name, driver_version, clocks.current.sm [MHz], clocks.max.sm [MHz], clocks.current.memory [MHz]'
echo 'NVIDIA H100 80GB HBM3, 580.159.04, 345 MHz, 1980 MHz, 2619 MHz'
"""


def collect(stage, tag: str, path_first: Path | None = None, args: tuple[str, ...] = (), **env: str
            ) -> tuple[list[dict], Path, Path, subprocess.CompletedProcess]:
    root, repo, bindir, shims = stage
    if path_first is not None:
        shims = f"{path_first}:{shims}"
    out, work, log = root / f"out-{tag}", root / f"work-{tag}", root / f"calls-{tag}.jsonl"
    full = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GCL_BUFFER_MB", "SKIP_DONE")}
    full.update(PATH=f"{shims}:{full.get('PATH', '')}", OUT=str(out), GCL_WORK=str(work), FAKE_LOG=str(log),
                GCL_REAL_BIN=str(bindir), GCL_TRACER_SO=str(root / "tool" / "gcl_tracer.so"),
                NVBIT_PATH=str(root / "absent"), BUDGET_S="300", RESERVE_S="5", SKIP_DONE="1")
    full.update(env)
    full = {k: v for k, v in full.items() if v is not None}  # None: leave that variable out
    r = subprocess.run(["bash", "real/collect.sh", *args], cwd=repo, env=full, capture_output=True, text=True, timeout=300)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return calls, out, work, r


@pytest.mark.parametrize("tag,args,env,says", [
    ("arg", ("--dry-run",), {}, "takes no arguments, not '--dry-run'"),
    ("budget", (), {"BUDGET_S": "480s"}, "BUDGET_S=480s is not a whole number of seconds"),
    ("budgetneg", (), {"BUDGET_S": "-5"}, "BUDGET_S=-5 is not a whole number of seconds"),
    ("reserve", (), {"RESERVE_S": "abc"}, "RESERVE_S=abc is not a whole number of seconds"),
])
def test_bad_settings_stop_the_pass_before_anything_runs(stage, tag, args, env, says):
    """An argument (the script reads none, so `--help` used to start a whole pass) or a budget
    that is not a number (its shell arithmetic failed and every step was skipped as "no time
    left", exit 5 after the device time was spent) is one line and exit 2, before any step."""
    calls, out, work, r = collect(stage, "bad-" + tag, args=args, **env)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith(f"collect.sh: {says}")
    assert calls == [] and not out.exists() and not work.exists()


def test_help_prints_the_header_and_runs_nothing(stage):
    calls, out, work, r = collect(stage, "help", args=("--help",))
    assert r.returncode == 0, r.stderr
    assert "BUDGET_S" in r.stdout and "Exit status:" in r.stdout and not r.stdout.startswith(("#", "!"))
    assert calls == [] and not out.exists() and not work.exists()


def packed_traces(out: Path) -> dict[str, str]:
    """The trace stream as the GPU host leaves it: split parts, zstd or xz, one tar."""
    parts = sorted(out.glob("traces.tar.part*"))
    assert parts, f"no packed traces in {out}"
    blob = b"".join(p.read_bytes() for p in parts)
    tool = ["zstd", "-dc"] if blob[:4] == b"\x28\xb5\x2f\xfd" else ["xz", "-dc"]
    tar_bytes = subprocess.run(tool, input=blob, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tf:
        return {m.name: tf.extractfile(m).read().decode() for m in tf.getmembers() if m.isfile()}


def traced_runs(calls: list[dict]) -> list[dict]:
    """Calls under the tool that record instructions (not timing, not counting)."""
    return [c for c in calls if c["tool"] and "GCL_TIME_ONLY" not in c and "GCL_COUNT_ONLY" not in c]


def test_only_the_buffer_delivering_sends_every_workload_through_it(stage):
    calls, out, work, r = collect(stage, "buffer", FAKE_SINKS="buffer")
    assert r.returncode == 0, r.stderr
    workloads = [c for c in traced_runs(calls) if c["program"] != "vecadd" or c.get("GCL_TRACE_SM") == "0"]
    probes = {c.get("GCL_BUFFER_MB") for c in traced_runs(calls) if c["args"] == ["4096"]}
    assert probes == {None, "1024"}, "the probes try the channel and a 1 GiB buffer"
    real = [c for c in workloads if c["args"] != ["4096"]]
    assert {c["program"] for c in real} == {*PROGRAMS, "llm"}
    assert all(c.get("GCL_BUFFER_MB") == "16384" and c.get("GCL_TRACE_SM") == "0" for c in real), real
    assert "traced runs use the device buffer" in (work / "collect.log").read_text()
    # SM 0's share by CTA id is counted once, beside the %smid count; the traces keep %smid
    by_id = [c for c in calls if c.get("GCL_CTA_SCOPE") is not None]
    assert [(c["program"], c.get("GCL_COUNT_ONLY"), c.get("GCL_TRACE_SM"), c["GCL_CTA_SCOPE"]) for c in by_id] == \
        [("vecadd", "1", "0", "id")]
    traces = packed_traces(out)
    for prog in (*PROGRAMS, "llm"):
        assert "IMAD 2 R2 R3 0 2\n" in traces[f"{prog}/trace/kernel-1.trace"]
    assert any(name.startswith("probe/d/") for name in traces), "the probes' traces are packed too"


@pytest.mark.parametrize("sinks", ["channel", "channel,buffer"])
def test_the_channel_stays_unless_only_the_buffer_delivers(stage, sinks):
    calls, out, work, r = collect(stage, "ch" + sinks.replace(",", "-"), FAKE_SINKS=sinks)
    assert r.returncode == 0, r.stderr
    real = [c for c in traced_runs(calls) if c["args"] != ["4096"]]
    assert {c["program"] for c in real} == {*PROGRAMS, "llm"}
    assert all("GCL_BUFFER_MB" not in c for c in real), real
    delivered = packed_traces(out)["nw/trace/kernel-1.trace"]
    assert ("IMAD 2 R2 R3 0 1\n" in delivered) == ("channel" in sinks)


@pytest.mark.parametrize("sinks,expected", [("channel", {}), ("buffer", {"GCL_BUFFER_MB": "16384"})])
def test_when_uniform_registers_break_tracing_the_workloads_leave_them_out(stage, sinks, expected):
    calls, out, work, r = collect(stage, "uniform-" + sinks, FAKE_SINKS=sinks, FAKE_UNIFORM_BREAKS="1")
    assert r.returncode == 0, r.stderr
    real = [c for c in traced_runs(calls) if c["args"] != ["4096"]]
    assert {c["program"] for c in real} == {*PROGRAMS, "llm"}
    for c in real:
        assert c.get("GCL_UNIFORM") == "0" and c.get("GCL_BUFFER_MB") == expected.get("GCL_BUFFER_MB"), c
    assert "IMAD 2 R2 R3 0" in packed_traces(out)["lud/trace/kernel-2.trace"]
    assert "traced runs leave uniform registers out" in (work / "collect.log").read_text()


def test_when_no_probe_delivers_only_vecadd_is_traced_in_full(stage):
    """The first H200 passes spent minutes on full traces that were headers alone; when no
    SM-0 probe delivered a record by any sink, only vecadd's trace (and its retry) runs."""
    calls, out, work, r = collect(stage, "empty", FAKE_SINKS="")
    real = [c for c in traced_runs(calls) if c["args"] != ["4096"]]
    assert [c["program"] for c in real] == ["vecadd"], real
    assert "full traces of nw, bfs, lud and the LLM are left out" in (out / "collect.log").read_text()
    steps = [line.split(",")[0] for line in (out / "walls.csv").read_text().splitlines()[1:]]
    assert "nw.time" in steps and "llm.count" in steps, "the cheap steps still ran"
    assert (out / "meta.tar.xz").exists()


def test_skip_cheap_goes_straight_to_the_probes_and_traces(stage):
    calls, out, work, r = collect(stage, "skipcheap", FAKE_SINKS="channel", SKIP_CHEAP="1")
    assert r.returncode == 0, r.stdout
    steps = [line.split(",")[0] for line in (out / "walls.csv").read_text().splitlines()[1:]]
    assert not any(s.endswith((".plain", ".time", ".time_gated")) or s in ("llm.count", "bfs.ncu_time") for s in steps), steps
    assert "probe.values.sm0" in steps and {f"{p}.trace" for p in (*PROGRAMS, "llm")} <= set(steps)
    timed = [c["program"] for c in calls if "GCL_TIME_ONLY" in c]
    assert timed == ["vecadd"], "only the smoke test times anything"
    assert not any(c["program"] == "llm" and "GCL_COUNT_ONLY" in c for c in calls)


def test_the_uniform_probes_run_only_when_both_sinks_failed(stage):
    calls, out, work, r = collect(stage, "uniform-ok", FAKE_SINKS="channel")
    assert not any("GCL_UNIFORM" in c for c in calls)
    assert not (work / "probe" / "e").exists()


def test_every_step_leaves_a_wall_time_and_the_small_files_are_packed(stage):
    calls, out, work, r = collect(stage, "walls", FAKE_SINKS="channel")
    assert r.returncode == 0, r.stderr
    with tarfile.open(out / "meta.tar.xz") as tf:
        names = set(tf.getnames())
        walls = tf.extractfile("./walls.csv").read().decode().splitlines()
    assert {"./walls.csv", "./collect.log", "./env.txt", "./llm/time/profile.csv", "./nw/time/profile.csv",
            "./llm/count/counts.csv"} <= names
    steps = {line.split(",")[0]: line.split(",")[1] for line in walls[1:]}
    for prog in PROGRAMS:
        assert steps[f"{prog}.plain"] == steps[f"{prog}.time"] == steps[f"{prog}.trace"] == "0"
        assert steps[f"{prog}.time_gated"] == "0"
        assert f"./{prog}/time_gated/profile.csv" in names
    gated = [c for c in calls if "GCL_TIME_GATE_US" in c]
    assert {c["program"] for c in gated} == set(PROGRAMS)
    assert all(c["GCL_TIME_ONLY"] == "1" and c["CUDA_MODULE_LOADING"] == "EAGER" for c in gated), gated
    assert steps["llm.trace"] == "0"
    assert "build_tracer" in steps and steps["build_tracer"] != "0", "no NVBit here: the build fails and is logged"
    # the LLM count step's total reaches the log: 2 launches, 350 warp instructions
    assert "2 launches, 350 warp instructions in scope (SM 0; CTA 0 of a grid smaller than the GPU)" in (work / "collect.log").read_text()


def test_a_tool_that_fails_its_smoke_test_is_not_run_again(stage):
    calls, out, work, r = collect(stage, "smoke", FAKE_SINKS="channel", FAKE_SMOKE_FAIL="1")
    assert r.returncode == 4, r.stdout
    under_tool = [c for c in calls if c["tool"]]
    assert len(under_tool) == 1 and under_tool[0]["program"] == "vecadd", under_tool
    assert {c["program"] for c in calls if not c["tool"]} == set(PROGRAMS), "the plain runs still happen"
    assert "no tracer runs" in (work / "collect.log").read_text()
    assert (out / "meta.tar.xz").exists()


def test_no_time_left_skips_steps_but_still_packs(stage):
    calls, out, work, r = collect(stage, "late", FAKE_SINKS="channel", BUDGET_S="8", RESERVE_S="5")
    assert r.returncode == 5, r.stdout
    assert "no time for the smoke test" in (out / "collect.log").read_text()
    walls = (work / "walls.csv").read_text().splitlines()[1:]
    assert walls and all(line.endswith(",skipped,") for line in walls), walls
    assert calls == []
    assert (out / "meta.tar.xz").exists()


def test_without_a_tool_the_pass_stops_before_the_gpu_and_says_why_in_out(stage):
    """No NVBit core/ here, so the build fails, and no carried .so: LD_PRELOAD of a missing
    file is ignored by ld.so (exit 0), so every step would have run without the tool."""
    root = stage[0]
    calls, out, work, r = collect(stage, "notool", FAKE_SINKS="channel",
                                  GCL_TRACER_SO=str(root / "absent" / "gcl_tracer.so"))
    assert r.returncode == 3, r.stdout
    assert calls == [], "nothing runs on the GPU, with or without the tool"
    log = (out / "collect.log").read_text()
    assert "NVBit release's core/" in log and str(root / "absent") in log and "docs/real.md" in log
    assert "exit 3" in log
    assert "NVIDIA H100 80GB HBM3" in (out / "env.txt").read_text(), "env.txt comes back too"


def test_a_tool_that_writes_nothing_fails_the_smoke_test(stage):
    """A .so that ld.so cannot preload leaves vecadd to run alone and exit 0: the smoke test
    must see the tool's profile rows, not the exit status."""
    calls, out, work, r = collect(stage, "inert", FAKE_SINKS="channel", FAKE_TOOL_INERT="1")
    assert r.returncode == 4, r.stdout
    preloaded = [c for c in calls if c["preload"]]
    assert len(preloaded) == 1 and preloaded[0]["program"] == "vecadd", preloaded
    assert "profile.csv has no rows" in (out / "collect.log").read_text()


def test_the_cheap_steps_run_before_any_full_trace(stage):
    calls, out, work, r = collect(stage, "order", FAKE_SINKS="channel")
    assert r.returncode == 0, r.stdout
    steps = [line.split(",")[0] for line in (out / "walls.csv").read_text().splitlines()[1:]]
    first_trace = min(steps.index(f"{p}.trace") for p in (*PROGRAMS, "llm"))
    cheap = ["llm.time", "llm.count", "bfs.ncu_time", *(f"{p}.{k}" for p in PROGRAMS for k in ("time", "time_gated"))]
    assert all(steps.index(c) < first_trace for c in cheap), steps
    assert max(i for i, s in enumerate(steps) if s.startswith("probe.")) < first_trace, "the probes pick the sink first"


def test_the_vecadd_trace_is_retried_only_with_another_build_of_the_tool(stage):
    root, repo = stage[0], stage[1]
    carried = str(root / "tool" / "gcl_tracer.so")
    # the same .so that failed: no retry
    calls, out, work, r = collect(stage, "noretry", FAKE_SINKS="channel", FAKE_NO_TRACE_SO="gcl_tracer")
    steps = [line.split(",")[0] for line in (out / "walls.csv").read_text().splitlines()[1:]]
    assert "vecadd.trace" in steps and "vecadd.trace2" not in steps, steps
    assert "no other build of the tool to retry with" in (out / "collect.log").read_text()
    # a build made on the device that fails: retried with the carried one, which the later traces use
    tools = root / "make-bin"
    tools.mkdir(exist_ok=True)
    (tools / "make").write_text('#!/bin/sh\n[ "$2" = tracer ] || exit 2\n'
                                'mkdir -p tracer/build-device && echo so >tracer/build-device/gcl_tracer.so\n')
    (tools / "make").chmod(0o755)
    try:
        calls, out, work, r = collect(stage, "retry", path_first=tools, FAKE_SINKS="channel",
                                      FAKE_NO_TRACE_SO="build-device")
    finally:
        shutil.rmtree(repo / "tracer", ignore_errors=True)
    assert r.returncode == 0, r.stdout
    walls = {line.split(",")[0]: line.split(",")[1] for line in (out / "walls.csv").read_text().splitlines()[1:]}
    assert walls["vecadd.trace"] != "0" and walls["vecadd.trace2"] == "0"
    traced = [c for c in traced_runs(calls) if c["args"] != ["4096"]]
    assert traced[0]["preload"].endswith("build-device/gcl_tracer.so") and traced[1]["preload"] == carried
    assert all(c["preload"] == carried for c in traced[1:]), traced


def test_a_pass_killed_midway_leaves_its_log_walls_and_env_in_out(stage):
    import signal
    import time

    root, repo, bindir, shims = stage
    out, work, log = root / "out-killed", root / "work-killed", root / "calls-killed.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GCL_BUFFER_MB")}
    env.update(PATH=f"{shims}:{env.get('PATH', '')}", OUT=str(out), GCL_WORK=str(work), FAKE_LOG=str(log),
               GCL_REAL_BIN=str(bindir), GCL_TRACER_SO=str(root / "tool" / "gcl_tracer.so"),
               NVBIT_PATH=str(root / "absent"), BUDGET_S="300", RESERVE_S="5", SKIP_DONE="1",
               FAKE_SINKS="channel", FAKE_SLEEP_TRACE="60")
    out.mkdir()
    (out / "meta.tar.xz").write_bytes(b"an earlier pass's")  # must not pass for this one's
    (out / "traces.tar.part0").write_bytes(b"an earlier pass's")
    proc = subprocess.Popen(["bash", "real/collect.sh"], cwd=repo, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:  # until the first traced run (a probe) is under way
            calls = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
            if traced_runs(calls):
                break
            time.sleep(0.2)
        else:
            pytest.fail("no traced run started")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (out / "meta.tar.xz").exists() and not (out / "traces.tar.part0").exists()
    text = (out / "collect.log").read_text()
    assert "vecadd.smoke rc=0" in text and "llm.count rc=0" in text
    walls = (out / "walls.csv").read_text().splitlines()
    assert walls[0] == "step,rc,wall_s" and any(x.startswith("llm.time,0,") for x in walls)
    assert "NVIDIA H100" in (out / "env.txt").read_text()


def test_packing_errors_reach_out_and_the_exit_status(stage):
    root = stage[0]
    tools = root / "xz-bin"
    tools.mkdir(exist_ok=True)
    (tools / "xz").write_text("#!/bin/sh\ncat >/dev/null; echo 'xz: stand-in: cannot allocate memory' >&2; exit 1\n")
    (tools / "xz").chmod(0o755)
    calls, out, work, r = collect(stage, "packerr", path_first=tools, FAKE_SINKS="channel")
    assert r.returncode == 6, r.stdout
    err = (out / "pack.err").read_text()
    assert "xz: stand-in: cannot allocate memory" in err and "meta.tar.xz" in err


def test_a_relative_out_is_packed_where_it_was_meant(stage):
    repo = stage[1]
    try:
        calls, out, work, r = collect(stage, "relative", FAKE_SINKS="channel", OUT="rel-out")
        assert r.returncode == 0, r.stdout
        assert (repo / "rel-out" / "meta.tar.xz").is_file()
        assert "nw/trace/kernel-1.trace" in packed_traces(repo / "rel-out")
    finally:
        shutil.rmtree(repo / "rel-out", ignore_errors=True)


def test_what_skip_done_leaves_out_is_what_the_header_and_docs_say(stage):
    calls, out, work, r = collect(stage, "skipdone", FAKE_SINKS="channel")
    steps = [line.split(",")[0] for line in (out / "walls.csv").read_text().splitlines()[1:]]
    assert "bfs.ncu_time" in steps
    assert not [s for s in steps if s.endswith((".ncu", ".check")) or s in ("llm.plain", "llm.torch")], steps
    header = (REPO / "real" / "collect.sh").read_text().split("\nset -u", 1)[0]
    docs = (REPO / "docs" / "real.md").read_text()
    for text in (header, docs):
        said = " ".join(text[text.index("SKIP_DONE=1"):].split()[:60])
        assert "bfs.ncu_time" in said and "still runs" in said and "llm.torch" in said, said
    assert "needs tracer/build/gcl_tracer.so and real/src/build" not in header
    assert "xz -d" in docs and "Before a GPU session" in docs and "BUDGET_S + 120" in docs


def test_an_nvbit_release_and_a_carried_zstd_are_never_committed():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "check-ignore", ".nvbit/core/libnvbit.a", ".nvbit/core/nvbit.h", ".zstd/zstd"],
                       cwd=REPO, capture_output=True, text=True)
    assert r.stdout.split() == [".nvbit/core/libnvbit.a", ".nvbit/core/nvbit.h", ".zstd/zstd"], r


# ---- real/readout.py on what the stand-in pass packed ---------------------------------

NCU = """#!/bin/bash
# stand-in Nsight Compute: bfs's two launches took 1000 and 1200 ns
while [ $# -gt 0 ]; do case $1 in --log-file) f=$2; shift 2;; *) shift;; esac; done
{ echo '"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum"'
  echo '"","","","","nsecond"'
  echo '"0","k","(16, 1, 1)","(64, 1, 1)","1000"'
  echo '"1","k","(16, 1, 1)","(64, 1, 1)","1200"'; } > "$f"
"""


@pytest.fixture(scope="module")
def buffer_pass(stage):
    """A pass in which only the device buffer delivered, with an Nsight Compute on PATH."""
    root = stage[0]
    tools = root / "ncu-bin"
    tools.mkdir()
    (tools / "ncu").write_text(NCU)
    (tools / "ncu").chmod(0o755)
    calls, out, work, r = collect(stage, "readout", path_first=tools, FAKE_SINKS="buffer")
    assert r.returncode == 0, r.stderr
    # nw has 2 launches here: its workload.json, for the "complete" verdict
    real = root / "real-2"
    (real / "nw").mkdir(parents=True)
    (real / "nw" / "workload.json").write_text(json.dumps({"n_invocations": 2, "synthetic": False}))
    (real / "nw" / "profile.csv").write_text(PROFILE.format(grid="16,1,1"))
    return out, real


# the committed profile of a 2-launch nw, as the stand-in's traces describe its launches
PROFILE = ('invocation,kernel_name,grid,block,time_ns,cycles\n0,_Z6vecAddPfS_S_i,"({grid})","(64,1,1)",1000,1400\n'
           '1,_Z6vecAddPfS_S_i,"({grid})","(64,1,1)",1200,1700\n')


def run_readout(out: Path, stage_dir: Path, real: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "real" / "readout.py"), str(out), str(stage_dir), "--real", str(real),
                           *extra], capture_output=True, text=True, timeout=300)


def table_row(text: str, first_cell: str, section: str = "") -> list[str]:
    """The cells of the first row starting with ``first_cell`` after the heading ``section``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"## {section}")) if section else 0
    row = next(ln for ln in lines[start:] if ln.startswith(f"| {first_cell} |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_readout_says_which_probes_delivered_and_which_workloads_are_whole(buffer_pass, tmp_path):
    out, real = buffer_pass
    r = run_readout(out, tmp_path / "stage", real)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "stage" / "readout.md").read_text()
    assert r.stdout.strip() == text.strip()
    assert table_row(text, "c")[2:4] == ["2", "0"], "the channel probe: traces without records"
    assert table_row(text, "d")[2:4] == ["2", "4"], "the buffer probe: two traces of two records"
    assert table_row(text, "count_sm0")[4] == "350"
    assert table_row(text, "count_id0")[4] == "350"
    assert "traced runs use the device buffer (GCL_BUFFER_MB=16384)" in text
    assert table_row(text, "nw", "Traced workloads")[1:] == ["2", "2", "2", "2", "4", "yes"]
    assert table_row(text, "vecadd", "Traced workloads")[-1] == "no: no workload.json to count its launches"
    assert table_row(text, "bfs", "Traced workloads")[-1] == "no: no workload.json to count its launches"
    assert table_row(text, "nw.trace")[1] == "2", "GCL_VERBOSE lines of the traced step"
    # the stand-in's gated times are a third of the ungated, and equal to Nsight Compute's
    assert table_row(text, "bfs", "GCL_TIME_GATE_US")[1:5] == ["0.33x", "3.00x", "1.00x", "0"]
    assert (tmp_path / "stage" / "nw" / "trace" / "kernel-2.trace").is_file()
    # against the committed workloads, two launches of nw's 255 are not a workload
    r = run_readout(out, tmp_path / "stage2", REPO / "real")
    text = (tmp_path / "stage2" / "readout.md").read_text()
    assert table_row(text, "nw", "Traced workloads")[-1] == "no: 2 of 255 launches traced"


def test_readout_says_where_the_trace_stream_was_cut(buffer_pass, tmp_path):
    out, real = buffer_pass
    """collect.sh stops the compressed stream at a size limit: a last trace big enough to span
    many compressed blocks is cut in its middle, and everything before it must come out."""
    cut = tmp_path / "cut"
    shutil.copytree(out, cut)
    parts = sorted(cut.glob("traces.tar.part*"))
    whole = packed_traces(cut)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, text in [*whole.items(), ("llm/trace/kernel-9.trace", os.urandom(1 << 21).hex())]:
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    xz = subprocess.run(["xz", "-c", "-0"], input=buf.getvalue(), capture_output=True, check=True).stdout
    for p in parts:
        p.unlink()
    (cut / "traces.tar.part0").write_bytes(xz[: len(xz) * 3 // 4])
    r = run_readout(cut, tmp_path / "stage", real)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "stage" / "readout.md").read_text()
    assert "ends early" in text and "llm/trace/kernel-9.trace: cut off in the archive, left out" in text
    assert not (tmp_path / "stage" / "llm" / "trace" / "kernel-9.trace").exists()
    assert table_row(text, "d")[2:4] == ["2", "4"], "files before the cut are whole"
    assert table_row(text, "nw", "Traced workloads")[-1] == "yes"


def test_readout_leaves_a_directory_with_files_alone(buffer_pass, tmp_path):
    out, real = buffer_pass
    (tmp_path / "stage").mkdir()
    (tmp_path / "stage" / "mine.txt").write_text("keep")
    r = run_readout(out, tmp_path / "stage", real)
    assert r.returncode == 2
    assert "not empty" in r.stderr and r.stderr.count("\n") == 1
    assert sorted(p.name for p in (tmp_path / "stage").iterdir()) == ["mine.txt"]


def test_readout_names_a_directory_that_is_not_a_pass(tmp_path):
    r = run_readout(tmp_path, tmp_path / "stage", tmp_path)
    assert r.returncode == 2
    assert f"{tmp_path / 'meta.tar.xz'}: not found" in r.stderr


def test_readout_groups_a_complete_workload_ready_for_train_py(buffer_pass, tmp_path):
    out, real = buffer_pass
    r = run_readout(out, tmp_path / "stage", real, "--group")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "stage" / "readout.md").read_text()
    wl = tmp_path / "stage" / "workloads" / "nw"
    assert f"- `{wl}`: valid; `python train.py workload.dir={wl} workload.name=nw`" in text
    from gclsampler.trace import read_kernel
    from gclsampler.validate import check_workload

    assert check_workload(wl) == []
    assert read_kernel(wl / "kernel-2.traceg.zst").n_insts == 2
    assert json.loads((wl / "workload.json").read_text())["traces"] is True
    assert sorted(p.name for p in (tmp_path / "stage" / "workloads").iterdir()) == ["nw"], "only complete ones"
    assert (real / "nw" / "profile.csv").read_text() == PROFILE.format(grid="16,1,1"), "real/ is left alone"


def test_readout_reports_a_grouped_workload_its_profile_disagrees_with(buffer_pass, tmp_path):
    out, real = buffer_pass
    other = tmp_path / "real"
    shutil.copytree(real, other)
    (other / "nw" / "profile.csv").write_text(PROFILE.format(grid="8,1,1"))
    r = run_readout(out, tmp_path / "stage", other, "--group")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "stage" / "readout.md").read_text()
    assert "problem(s) from the validate checks" in text
    assert "  - error: " in text and "grid" in text.split("problem(s) from the validate checks", 1)[1]


def test_a_grouped_workload_says_which_gpu_its_traces_came_from(buffer_pass, tmp_path):
    """The stand-in nvidia-smi is an H100; the committed profile says H200."""
    out, real = buffer_pass
    other = tmp_path / "real"
    shutil.copytree(real, other)
    meta = json.loads((other / "nw" / "workload.json").read_text())
    (other / "nw" / "workload.json").write_text(json.dumps({**meta, "gpu": "NVIDIA H200", "driver": "580.159.04"}))
    r = run_readout(out, tmp_path / "stage", other, "--group")
    assert r.returncode == 0, r.stderr
    wl = tmp_path / "stage" / "workloads" / "nw"
    got = json.loads((wl / "workload.json").read_text())
    assert got["traces_gpu"] == "NVIDIA H100 80GB HBM3" and got["traces_driver"] == "580.159.04"
    assert got["gpu"] == "NVIDIA H200", "the profile's GPU stays what it was"
    warning = "warning: traced on NVIDIA H100 80GB HBM3 (driver 580.159.04), but profile.csv was measured on NVIDIA H200"
    assert warning in r.stderr and warning in (tmp_path / "stage" / "readout.md").read_text()
    from gclsampler.validate import check_workload

    assert check_workload(wl) == []
    # the same GPU: no warning
    (other / "nw" / "workload.json").write_text(json.dumps({**meta, "gpu": "NVIDIA H100 80GB HBM3"}))
    r = run_readout(out, tmp_path / "stage2", other, "--group")
    assert "warning: traced on" not in r.stderr and "warning: traced on" not in r.stdout


def test_launches_the_tool_dropped_records_of_are_not_complete(stage, buffer_pass, tmp_path):
    real = buffer_pass[1]
    calls, out, work, r = collect(stage, "dropped", FAKE_SINKS="channel", FAKE_DROP="1")
    assert r.returncode == 0, r.stdout
    r = run_readout(out, tmp_path / "stage", real, "--group")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "stage" / "readout.md").read_text()
    assert table_row(text, "nw", "Traced workloads")[-1] == (
        "no: records missing from 1 launches (kernel-2.trace: 5 records did not fit GCL_BUFFER_MB=16384)")
    assert not (tmp_path / "stage" / "workloads").exists()
    T = load_readout().Traced
    assert T(2, 2, 2, 4, 2, dropped=("kernel-1.trace: 3 records not written: over GCL_MAX_INSTS_PER_WARP",)
             ).verdict().startswith("no: records missing from 1 launches (kernel-1.trace: 3 records not written")


@pytest.mark.parametrize("cut", ["half", "garbage"])
def test_readout_names_a_meta_archive_it_cannot_unpack(buffer_pass, tmp_path, cut):
    """A meta.tar.xz cut short (a pass killed while packing, a transfer cut) or not an archive was
    a tarfile traceback (exit 1) that left STAGE half filled, so the same command then refused it
    as not empty. Now: one line naming the file, exit 2, STAGE as it was."""
    out, real = buffer_pass
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    meta = bad / "meta.tar.xz"
    meta.write_bytes(meta.read_bytes()[: meta.stat().st_size // 2] if cut == "half" else b"not an archive\n")
    r = run_readout(bad, tmp_path / "stage", real)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and f"readout: {meta}: cannot be unpacked" in r.stderr
    assert not (tmp_path / "stage").exists()
    (tmp_path / "empty").mkdir()
    r = run_readout(bad, tmp_path / "empty", real)
    assert r.returncode == 2 and list((tmp_path / "empty").iterdir()) == []


def test_readout_refuses_a_stage_that_is_a_file(buffer_pass, tmp_path):
    out, real = buffer_pass
    (tmp_path / "stage").write_text("mine")
    r = run_readout(out, tmp_path / "stage", real)
    assert r.returncode == 2 and r.stderr.strip() == f"readout: {tmp_path / 'stage'}: not a directory; give a new directory (nothing was written)"
    assert (tmp_path / "stage").read_text() == "mine"


def test_readout_points_at_the_log_of_a_pass_that_did_not_pack(tmp_path):
    (tmp_path / "collect.log").write_text("[3s] vecadd.smoke rc=0\n")
    r = run_readout(tmp_path, tmp_path / "stage", tmp_path)
    assert r.returncode == 2
    assert "the pass did not pack" in r.stderr and str(tmp_path / "collect.log") in r.stderr


def load_readout():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gcl_real_readout", REPO / "real" / "readout.py")
    readout = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = readout  # dataclasses look their module up there
    spec.loader.exec_module(readout)
    return readout


def test_readout_counts_records_from_its_parse_as_the_line_count_does(tmp_path):
    """The parse gives the count (LDGSTS pairs it folded included); a trace it refuses is still counted."""
    readout = load_readout()
    trace_dir = tmp_path / "w" / "trace"
    trace_dir.mkdir(parents=True)
    body = ["0 0 0 0 0000 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x5000 0",
            "0 0 0 0 0000 00000001 0 LDGSTS.E.BYPASS.128 2 R2 R4 16 2 0x7f0000 0",
            "0 0 0 0 0010 ffffffff 0 EXIT 0 0 0"]
    for kid in (1, 2):
        (trace_dir / f"kernel-{kid}.trace").write_text(HEADER_V5.format(kid=kid, gx=1, li=0) + "\n".join(body[kid - 1:]) + "\n")
    (trace_dir / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    checked, counted = (readout.traced(tmp_path, "w", check, real=tmp_path) for check in (True, False))
    assert checked.records == counted.records == 5 and checked.with_records == 2 and not checked.problem
    with open(trace_dir / "kernel-1.trace", "a") as f:
        f.write("0 0 0 0 0020 ffffffff 0 NOT_A_LINE\n")
    checked = readout.traced(tmp_path, "w", True, real=tmp_path)
    assert checked.records == 6 and "kernel-1.trace" in checked.problem


def test_readout_counts_a_launch_that_ran_no_cta_on_sm0(tmp_path):
    """An SM-0 trace of a launch whose CTAs all ran elsewhere is a header alone; the readout of
    the first traced H200 pass stopped at the first one (KeyError) before saying anything."""
    readout = load_readout()
    trace_dir = tmp_path / "w" / "trace"
    trace_dir.mkdir(parents=True)
    (trace_dir / "kernel-1.trace").write_text(HEADER_V5.format(kid=1, gx=1, li=0) + "0 0 0 0 0010 ffffffff 0 EXIT 0 0 0\n")
    (trace_dir / "kernel-2.trace").write_text(HEADER_V5.format(kid=2, gx=1, li=0))
    (trace_dir / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
    checked = readout.traced(tmp_path, "w", True, real=tmp_path)
    assert (checked.records, checked.with_records, checked.unpacked) == (1, 1, 2) and not checked.problem


def test_readout_verdict_counts_launches_that_missed_sm0_but_refuses_a_trace_without_any_record():
    T = load_readout().Traced
    assert T(listed=3, unpacked=3, with_records=3, records=9, expected=3).verdict() == "yes"
    assert T(3, 3, 2, 9, 3).verdict() == "yes (1 launches ran no CTA on SM 0)"
    assert T(3, 3, 0, 0, 3).verdict() == "no: no trace has a record"
    assert T(3, 2, 2, 9, 3).verdict() == "no: 1 traces not in the archive"
    assert T(2, 2, 2, 9, 3).verdict() == "no: 2 of 3 launches traced"
    assert T(3, 3, 3, 9, 3, problem="kernel-2.trace:19: opcode: bad").verdict() == "no: kernel-2.trace:19: opcode: bad"


def test_readout_refuses_an_empty_trace_of_a_launch_that_kept_cta0(tmp_path):
    """With GCL_SMALL_GRID=cta0 (the tool's default) a launch of fewer CTAs than SMs keeps CTA 0,
    which runs somewhere in every launch: its trace cannot be a header alone as an SM-0 trace of
    a small grid can. An empty one means the CTA-0 scope lost the records, and the workload is not
    complete; an empty trace of a launch the tool scoped to SM 0 is still a launch that missed it."""
    readout = load_readout()
    trace_dir = tmp_path / "w" / "trace"
    trace_dir.mkdir(parents=True)
    (trace_dir / "kernel-1.trace").write_text(HEADER_V5.format(kid=1, gx=1, li=0))
    (trace_dir / "kernel-2.trace").write_text(HEADER_V5.format(kid=2, gx=1, li=0) + "0 0 0 0 0010 ffffffff 0 EXIT 0 0 0\n")
    (trace_dir / "kernel-3.trace").write_text(HEADER_V5.format(kid=3, gx=1, li=0))
    (trace_dir / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\nkernel-3.trace\n")
    (tmp_path / "w.trace.err").write_text(
        "gcl_tracer: launch 1: instrumenting k\n"
        "gcl_tracer: launch 1: 1 CTAs on 132 SMs: keeping CTA 0 (GCL_SMALL_GRID=cta0)\n"
        "gcl_tracer: launch 2: 4 CTAs on 132 SMs: keeping CTA 0 (GCL_SMALL_GRID=cta0)\n")
    t = readout.traced(tmp_path, "w", True, real=tmp_path)
    assert t.dropped == ("kernel-1.trace: kept CTA 0 (GCL_SMALL_GRID) but holds no record",)
    t.expected = 3  # the workload's launch count (workload.json, absent here)
    assert t.verdict() == ("no: records missing from 1 launches (kernel-1.trace: kept CTA 0 (GCL_SMALL_GRID) but "
                           "holds no record)")
    (tmp_path / "w.trace.err").write_text("")  # an older tool, or GCL_SMALL_GRID=sm: both empty ones missed SM 0
    t = readout.traced(tmp_path, "w", True, real=tmp_path)
    t.expected = 3
    assert t.dropped == () and t.verdict() == "yes (2 launches ran no CTA on SM 0)"


def test_a_probe_that_hangs_leaves_out_the_other_probes_of_its_sink(stage):
    """Passes 2-4 hung on every traced launch: each probe then spent its whole 15 s. When the
    first channel probe runs out of time without a record, the channel's other probes (and its
    uniform-register retry) are left out; the buffer is still probed, and here it delivers, so
    the traced runs use it."""
    calls, out, work, r = collect(stage, "hang-channel", FAKE_SINKS="channel,buffer", FAKE_HANG="channel",
                                  SKIP_CHEAP="1")
    assert r.returncode == 0, r.stderr
    log = (work / "collect.log").read_text()
    assert "probe.novalues.allsm ran out of time without a record: the channel's other probes are left out" in log
    steps = [line.split(",")[0] for line in (out / "walls.csv").read_text().splitlines()[1:]]
    assert "probe.novalues.allsm" in steps and "probe.buffer.sm0" in steps
    assert not {"probe.values.allsm", "probe.values.sm0", "probe.nouniform.sm0"} & set(steps), steps
    assert "traced runs use the device buffer" in log
    real = [c for c in traced_runs(calls) if c["args"] != ["4096"]]
    assert real and all(c.get("GCL_BUFFER_MB") for c in real), real
