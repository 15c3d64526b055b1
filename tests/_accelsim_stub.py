"""A stand-in for Accel-Sim's ``accel-sim.out`` that replays real logs (tests/data/accelsim/).

``make_stub_root(dir)`` lays out what ``gclsampler.simulate.locate_simulator`` expects of an
accel-sim-framework checkout (setup_environment.sh, bin/release/accel-sim.out, the tested
config files) with this file as the binary. Run as the binary, it behaves like Accel-Sim
where gclsampler can tell: reads ``-trace kernelslist.g`` and the trace it names, needs
``gpgpusim.config`` in its working directory, prints a real log with the trace's kernel
name, and answers a binary version other than 70, 75, 80 or 86 as "unsupported". What each kernel does comes from ``$STUB_PLAN`` (JSON, kernel id -> behaviour):

    {"mode": "ok" | "unsupported" | "crash" | "deadlock" | "hang" | "partial",
     "cycles": N, "insn": N,   # rewrite gpu_sim_cycle / gpu_sim_insn of the replayed log
     "sleep": seconds,          # before answering
     "wait_for": path}          # before answering, wait until this file exists (at most an hour)

and every call appends one JSON line (kernel id, argv, cwd, whether the environment was
sourced) to ``$STUB_CALLS``.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "data" / "accelsim"
LOGS = {"ok": "gemm_ok.log.gz", "hang": "gemm_ok.log.gz", "capped": "gemm_ok.log.gz", "partial": "gemm_ok.log.gz",
        "unsupported": "unsupported_binary_version.log.gz",
        "crash": "crash_unknown_opcode.log.gz", "deadlock": "deadlock_abort.log.gz"}


def make_stub_root(root: Path, *, config: str = "SM86_RTX3070", setup_fails: bool | str = False) -> Path:
    """A fake accel-sim-framework checkout whose binary is this stub; returns ``root``.

    ``setup_fails``: its setup_environment.sh fails, printing that text to stderr (True: the
    missing-nvcc error)."""
    gs = root / "gpu-simulator"
    (gs / "bin" / "release").mkdir(parents=True, exist_ok=True)
    said = "ERROR ** nvcc (from CUDA_INSTALL_PATH/bin) not in PATH" if setup_fails is True else setup_fails
    body = (f"printf '%s\\n' {' '.join(repr(ln) for ln in str(said).splitlines())} >&2; return 1\n" if setup_fails
            else "export STUB_SOURCED=yes\n")
    (gs / "setup_environment.sh").write_text("# stub of Accel-Sim's setup_environment.sh\n" + body)
    binary = gs / "bin" / "release" / "accel-sim.out"
    src = Path(__file__).read_text().replace(
        'FIXTURES = Path(__file__).resolve().parent / "data" / "accelsim"', f"FIXTURES = Path({str(FIXTURES)!r})", 1)
    binary.write_text(f"#!{sys.executable}\n" + src)
    binary.chmod(0o755)
    cfg = gs / "gpgpu-sim" / "configs" / "tested-cfgs" / config
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "gpgpusim.config").write_text("# stub\n-gpgpu_clock_domains 1000.0:1000.0:1000.0:3500.5\n")
    (cfg / "config_ampere_islip.icnt").write_text("// stub interconnect config\n")
    tc = gs / "configs" / "tested-cfgs" / config
    tc.mkdir(parents=True, exist_ok=True)
    (tc / "trace.config").write_text("# stub\n")
    return root


def _main(argv: list[str]) -> int:
    kl = Path(argv[argv.index("-trace") + 1])
    if not Path("gpgpusim.config").is_file():
        print("GPGPU-Sim ** ERROR: Cannot open config file 'gpgpusim.config'")
        return 1
    name_file = next(ln.strip() for ln in kl.read_text().splitlines() if ln.strip())
    trace = (kl.parent / name_file).read_text()
    kid = int(re.search(r"^-kernel id = (\d+)", trace, re.M).group(1))
    kname = re.search(r"^-kernel name = (.*)$", trace, re.M).group(1)
    if os.environ.get("STUB_CALLS"):
        with open(os.environ["STUB_CALLS"], "a") as fh:
            fh.write(json.dumps({"kernel_id": kid, "argv": argv, "cwd": os.getcwd(), "pid": os.getpid(),
                                 "sourced": os.environ.get("STUB_SOURCED")}) + "\n")
    plan = json.loads(Path(os.environ["STUB_PLAN"]).read_text()) if os.environ.get("STUB_PLAN") else {}
    b = plan.get(str(kid), plan.get("*", {}))
    mode = b.get("mode", "ok")
    version = re.search(r"^-binary version = (\d+)", trace, re.M)
    if version and int(version.group(1)) not in (70, 75, 80, 86):  # as Accel-Sim: a message, no simulation, exit 0
        mode = "unsupported"
    text = gzip.open(FIXTURES / b.get("log", LOGS[mode])).read().decode()
    if mode in ("ok", "partial"):
        text = re.sub(r"(?m)^kernel_name = .*$", lambda m: f"kernel_name = {kname} ", text)
        cyc, insn = b.get("cycles"), b.get("insn")
        if cyc is not None:
            text = re.sub(r"(?m)^gpu_sim_cycle = \d+$", f"gpu_sim_cycle = {cyc}", text)
        if insn is not None:
            text = re.sub(r"(?m)^gpu_sim_insn = \d+$", f"gpu_sim_insn = {insn}", text)
    time.sleep(float(b.get("sleep", 0)))
    if b.get("wait_for"):  # the test says when: ordering by a file, not by a guessed sleep
        deadline = time.monotonic() + 3600
        while not Path(b["wait_for"]).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    if mode == "hang":
        time.sleep(3600)
    if mode == "capped":  # -gpgpu_max_cycle reached: Accel-Sim says so, prints the stats and exits 0
        text = re.sub(r"(?m)^gpu_sim_insn = \d+$", "gpu_sim_insn = 0", text)
        text = text.replace("kernel_name = ", "GPGPU-Sim: ** break due to reaching the maximum cycles (or "
                            "instructions) **\nkernel_name = ", 1)
    if mode == "partial":  # exit 0, the log cut inside the stats block (before the cache miss rates)
        text = text[: text.index("\tL1D_total_cache_miss_rate")]
    sys.stdout.write(text)
    sys.stdout.flush()
    if mode in ("crash", "deadlock"):
        if mode == "crash":
            sys.stderr.write((FIXTURES / "crash_unknown_opcode.stderr").read_text())
            sys.stderr.flush()
        os.abort()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
