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

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = ("vecadd", "nw", "bfs", "lud")
NEEDED = ("bash", "timeout", "tar", "xz", "awk", "split")

# The stand-in: which sinks deliver records is FAKE_SINKS (comma list of channel,
# buffer); FAKE_SMOKE_FAIL=1 makes a timed vecadd under the tool fail, as a tool that
# cannot load would. Every call appends one JSON line to FAKE_LOG.
STAND_IN = r'''
import json, os, sys
from pathlib import Path

name = Path(sys.argv[0]).stem
if name == "llm_infer":
    name = "llm"
env = os.environ
tool = "gcl_tracer" in env.get("LD_PRELOAD", "")
call = {"program": name, "args": sys.argv[1:], "tool": tool,
        **{k: env[k] for k in ("GCL_TIME_ONLY", "GCL_COUNT_ONLY", "GCL_BUFFER_MB", "GCL_TRACE_SM", "GCL_TIME_GATE_US",
                             "CUDA_MODULE_LOADING") if k in env}}
with open(env["FAKE_LOG"], "a") as f:
    f.write(json.dumps(call) + "\n")
if not tool or "GCL_TRACE_DIR" not in env:
    sys.exit(0)
if name == "vecadd" and env.get("FAKE_SMOKE_FAIL") == "1" and env.get("GCL_TIME_ONLY") == "1":
    sys.exit(1)
out = Path(env["GCL_TRACE_DIR"])
out.mkdir(parents=True, exist_ok=True)
if env.get("GCL_TIME_ONLY") == "1":
    (out / "profile.csv").write_text("invocation,kernel_name,time_ns\n1,k,1000\n2,k,1100\n")
elif env.get("GCL_COUNT_ONLY") == "1":
    (out / "counts.csv").write_text("invocation,kernel_name,warp_insts\n1,k,100\n2,k,250\n")
else:
    sink = "buffer" if "GCL_BUFFER_MB" in env else "channel"
    delivers = sink in env.get("FAKE_SINKS", "").split(",")
    for i in (1, 2):
        body = "-kernel name = k\n\n#traces format = x\n\n"
        if delivers:
            body += f"0 0 0 0 0010 ffffffff 0 IMAD 0 0 0 {name}-{i}-{sink}\n"
        (out / f"kernel-{i}.trace").write_text(body)
    (out / "kernelslist").write_text("kernel-1.trace\nkernel-2.trace\n")
'''


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
    return root, repo, bindir, shims


def collect(stage, tag: str, **env: str) -> tuple[list[dict], Path, Path, subprocess.CompletedProcess]:
    root, repo, bindir, shims = stage
    out, work, log = root / f"out-{tag}", root / f"work-{tag}", root / f"calls-{tag}.jsonl"
    full = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GCL_BUFFER_MB", "SKIP_DONE")}
    full.update(PATH=f"{shims}:{full.get('PATH', '')}", OUT=str(out), GCL_WORK=str(work), FAKE_LOG=str(log),
                GCL_REAL_BIN=str(bindir), GCL_TRACER_SO=str(root / "absent" / "gcl_tracer.so"),
                NVBIT_PATH=str(root / "absent"), BUDGET_S="300", RESERVE_S="5", SKIP_DONE="1")
    full.update(env)
    r = subprocess.run(["bash", "real/collect.sh"], cwd=repo, env=full, capture_output=True, text=True, timeout=300)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return calls, out, work, r


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
    traces = packed_traces(out)
    for prog in (*PROGRAMS, "llm"):
        assert f"{prog}-1-buffer" in traces[f"{prog}/trace/kernel-1.trace"]
    assert any(name.startswith("probe/d/") for name in traces), "the probes' traces are packed too"


@pytest.mark.parametrize("sinks", ["channel", "channel,buffer", ""])
def test_the_channel_stays_unless_only_the_buffer_delivers(stage, sinks):
    calls, out, work, r = collect(stage, "ch" + sinks.replace(",", "-"), FAKE_SINKS=sinks)
    assert r.returncode == 0, r.stderr
    real = [c for c in traced_runs(calls) if c["args"] != ["4096"]]
    assert {c["program"] for c in real} == {*PROGRAMS, "llm"}
    assert all("GCL_BUFFER_MB" not in c for c in real), real
    delivered = packed_traces(out)["nw/trace/kernel-1.trace"]
    assert ("nw-1-channel" in delivered) == ("channel" in sinks)


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
    assert "2 launches, 350 warp instructions on SM 0" in (work / "collect.log").read_text()


def test_a_tool_that_fails_its_smoke_test_is_not_run_again(stage):
    calls, out, work, r = collect(stage, "smoke", FAKE_SINKS="channel", FAKE_SMOKE_FAIL="1")
    assert r.returncode == 0, r.stderr
    under_tool = [c for c in calls if c["tool"]]
    assert len(under_tool) == 1 and under_tool[0]["program"] == "vecadd", under_tool
    assert {c["program"] for c in calls if not c["tool"]} == set(PROGRAMS), "the plain runs still happen"
    assert "no tracer runs" in (work / "collect.log").read_text()
    assert (out / "meta.tar.xz").exists()


def test_no_time_left_skips_steps_but_still_packs(stage):
    calls, out, work, r = collect(stage, "late", FAKE_SINKS="channel", BUDGET_S="8", RESERVE_S="5")
    assert r.returncode == 0, r.stderr
    walls = (work / "walls.csv").read_text().splitlines()[1:]
    assert walls and all(line.endswith(",skipped,") for line in walls), walls
    assert calls == []
    assert (out / "meta.tar.xz").exists()
