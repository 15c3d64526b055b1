"""Run the user's Accel-Sim build on a plan's sampled invocations (or on all of them).

Why this module: people run gclsampler to simulate less. A plan is only useful once its
invocations have been simulated and the whole workload reconstructed from them, and a plan
is only *judged* by comparing that reconstruction with a full simulation (GCL-Sampler
§5.4, PKA, Sieve, STEM+ROOT). This module closes that loop:

* ``locate_simulator`` finds the user's ``accel-sim-framework`` checkout, sources its
  ``setup_environment.sh release`` once and keeps the environment (Accel-Sim is never a
  dependency of gclsampler; users bring their own build).
* ``simulate`` exports each requested invocation as a plain Accel-Sim trace and runs **one
  simulator process per invocation**: kernels simulated back to back in one process
  share L2 state (identical traces differed by up to 24 % in cycles), one per process
  starts cold, so results do not depend on which other invocations a plan picked.
  Processes run ``jobs`` at a time on this machine, or as a submitit job array on SLURM.
* Every finished run is cached under a key of the exported trace's content, the config
  files and the flags (``<cache>/<key>/result.json``, written atomically); a killed run
  resumes where it stopped and never reads a half-written file back.
* One command at a time per cache (``cache_lock``: ``<cache>/.lock``, one descriptor held
  for the whole call): a second command takes a run it finds unfinished for a killed run's
  leftovers and starts it again, which is right only when no other command is running it.
  So a second command waits, and says so, rather than guessing which runs are someone's.
* Every answer is checked: Accel-Sim exits 0 without printing cycles for an unsupported
  binary version, aborts on a (false) deadlock, crashes, or runs past the timeout; each
  is an error naming the invocation and its log file.

Defaults and why:

* ``-gpgpu_n_clusters 1 -gpgpu_n_cores_per_cluster 1``: gclsampler's traces are scoped
  to one SM (the CTAs SM 0 ran), so they run on a one-SM GPU; the cycles are SM 0's share.
* ``-gpgpu_deadlock_detect 0``: the detector false-alarms on long tensor-core GEMMs
  (abort at cycle 49,997 of a kernel that finishes in 63,382 cycles with it off).

Every number produced here is SIMULATED (and synthetic where the traces are); the output
files say so.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import importlib.util
import io
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from gclsampler._atomic import write_text_atomic
from gclsampler._kinds import is_real
from gclsampler._lock import NO_LOCKS as _NO_LOCKS
from gclsampler._lock import holder as _holder
from gclsampler._lock import open_lock as _open_lock
from gclsampler._lock import same_file as _same_file
from gclsampler._lock import sign as _sign
from gclsampler.errors import GclError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no flock, the cache runs unlocked (and says so)
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_CONFIG", "ONE_SM_FLAGS", "NO_DEADLOCK_FLAGS", "DEADLOCK_REASON", "METRICS",
    "SimulatorNotFound", "SimulationFailed", "Simulator", "Job", "RunRecord", "SimulationRun",
    "locate_simulator", "parse_log", "check_log", "run_job", "simulate", "LOCK_NAME", "CacheLock", "cache_lock",
]

DEFAULT_CONFIG = "SM86_RTX3070"
ONE_SM_FLAGS: tuple[str, ...] = ("-gpgpu_n_clusters", "1", "-gpgpu_n_cores_per_cluster", "1")
NO_DEADLOCK_FLAGS: tuple[str, ...] = ("-gpgpu_deadlock_detect", "0")
DEADLOCK_REASON = ("Accel-Sim's deadlock detector false-alarms on long tensor-core GEMMs (abort at cycle "
                   "49,997 of a kernel that finishes in 63,382 cycles with the detector off)")
CACHE_VERSION = 1
CHECK_VERSION = 2
"""The rules ``check_log`` applies (2: statistics that are not counts or rates fail the run). A
cached result checked under older rules is checked again from its log before it is used, so a
run the current rules call failed is simulated again instead of answering from the cache."""
METRICS: list[str] = ["cycles", "instructions", "ipc", "l1_hit_rate", "l2_hit_rate", "achieved_occupancy"]
SETUP_TIMEOUT_S = 300

_INSTALL_HINT = "see docs/simulate.md for building Accel-Sim"


class SimulatorNotFound(GclError):
    """No usable Accel-Sim: names what to install or set (the CLI exits 2)."""


class SimulationFailed(GclError):
    """A simulator run that gave no usable answer; names the invocation and the log file."""


# ---------------------------------------------------------------------------------------
# the user's simulator build
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Simulator:
    """A located, environment-ready Accel-Sim build and one of its tested configs."""

    root: Path                 # the accel-sim-framework checkout
    config: str                # tested config name, e.g. SM86_RTX3070
    binary: Path               # gpu-simulator/bin/release/accel-sim.out
    config_dir: Path           # gpu-simulator/gpgpu-sim/configs/tested-cfgs/<config> (copied into each run dir)
    trace_config: Path         # gpu-simulator/configs/tested-cfgs/<config>/trace.config
    env: dict[str, str] = field(repr=False, compare=False, hash=False)
    core_clock_mhz: float = float("nan")

    def fingerprint(self) -> str:
        """Hash of the binary's and the config files' bytes: a rebuilt simulator or a changed
        config invalidates cached results (a cache must never answer for another simulator)."""
        h = hashlib.sha256()
        h.update(self.binary.read_bytes())
        for p in sorted(self.config_dir.iterdir()) + [self.trace_config]:
            if p.is_file():
                h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()

    def command(self, kernelslist: Path, flags: Sequence[str]) -> list[str]:
        """argv of one run; ``gpgpusim.config`` is the copy in the run directory (cwd)."""
        return [str(self.binary), "-trace", str(kernelslist), "-config", "gpgpusim.config",
                "-config", str(self.trace_config), *flags]


def _framework_root(root: Path) -> Path:
    # Accel-Sim's own setup_environment.sh exports ACCELSIM_ROOT=<checkout>/gpu-simulator;
    # accept that as well as the checkout itself.
    if (root / "setup_environment.sh").is_file() and not (root / "gpu-simulator").is_dir():
        return root.parent
    return root


def _source_environment(setup: Path) -> dict[str, str]:
    """The environment after ``source setup_environment.sh release`` (sourced once, reused).

    ``release`` is passed explicitly: sourced from a script, it would otherwise inherit
    ``$1`` and pick a debug build or the system libcudart (``undefined symbol: _ZTI10shd_warp_t``).
    """
    # quoted for the shell: inside "..." a checkout path with $, ` or " was expanded or broke the line
    script = f"set +u; cd {shlex.quote(str(setup.parent))} && source ./setup_environment.sh release >&2 && env -0"
    try:
        p = subprocess.run(["bash", "-c", script], capture_output=True, timeout=SETUP_TIMEOUT_S,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SimulatorNotFound("bash: not found; Accel-Sim's setup_environment.sh needs bash") from None
    except subprocess.TimeoutExpired:
        raise SimulatorNotFound(f"{setup}: sourcing it took more than {SETUP_TIMEOUT_S} s") from None
    err = p.stderr.decode(errors="replace").strip().splitlines()
    env: dict[str, str] = {}
    for item in p.stdout.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            env[k.decode(errors="replace")] = v.decode(errors="replace")
    if p.returncode != 0 or not env:
        said = [ln.strip() for ln in err if ln.strip()]
        # the script's own ERROR line says why; what follows it can be a bare number (the CUDA version)
        last = next((ln for ln in reversed(said) if "ERROR" in ln), said[-1] if said else f"exit status {p.returncode}")
        hint = ("set CUDA_INSTALL_PATH to a CUDA 11.x install (headers and nvcc)"
                if any(w in last for w in ("CUDA_INSTALL_PATH", "nvcc", "CUDA version")) else _INSTALL_HINT)
        raise SimulatorNotFound(f"{setup}: `source setup_environment.sh release` failed ({last}); {hint}")
    return env


def _core_clock_mhz(config_file: Path, flags: Sequence[str]) -> float:
    """Core clock (MHz) of ``-gpgpu_clock_domains core:icnt:l2:dram``; the last setting wins,
    flags after the config file (Accel-Sim reads them in that order)."""
    clock = float("nan")
    try:
        text = config_file.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        m = re.match(r"\s*-gpgpu_clock_domains\s+([0-9.]+)", line)
        if m:
            clock = float(m.group(1))
    for v in flag_values(flags, "-gpgpu_clock_domains"):
        if v is not None:
            with contextlib.suppress(ValueError):
                clock = float(v.split(":")[0])
    return clock


def flag_values(flags: Sequence[str], name: str) -> list[str | None]:
    """Each value given for ``name``, in order (None for one last with no value after it):
    Accel-Sim reads its flags in order, a later setting replacing an earlier."""
    return [b for a, b in zip(flags, [*flags[1:], None]) if a == name]


def tested_configs(root: Path) -> list[str]:
    d = root / "gpu-simulator" / "gpgpu-sim" / "configs" / "tested-cfgs"
    return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


def locate_simulator(root: str | os.PathLike | None = None, config: str = DEFAULT_CONFIG,
                     flags: Sequence[str] = ()) -> Simulator:
    """Find the build named by ``root`` or ``$ACCELSIM_ROOT`` and source its environment.

    Raises ``SimulatorNotFound`` with one sentence saying what to install or set.
    """
    from gclsampler._safe_out import is_plain_name

    if not is_plain_name(config):
        # it names profiles/accelsim-<config>.csv too: '../..' wrote the profile outside the workload
        raise SimulatorNotFound(f"--config: {config!r} is not a tested config's name (a directory name under "
                                "gpu-simulator/gpgpu-sim/configs/tested-cfgs, e.g. SM86_RTX3070)")
    given = root if root is not None else os.environ.get("ACCELSIM_ROOT")
    if not given:
        raise SimulatorNotFound("no Accel-Sim build: pass --accelsim-root DIR or set ACCELSIM_ROOT to your "
                                f"accel-sim-framework checkout ({_INSTALL_HINT})")
    base = _framework_root(Path(given).expanduser().resolve())
    src = "--accelsim-root" if root is not None else "ACCELSIM_ROOT"
    setup = base / "gpu-simulator" / "setup_environment.sh"
    if not setup.is_file():
        raise SimulatorNotFound(f"{base}: {src}: not an accel-sim-framework checkout (no "
                                f"gpu-simulator/setup_environment.sh)")
    binary = base / "gpu-simulator" / "bin" / "release" / "accel-sim.out"
    if binary.exists() and not (binary.is_file() and os.access(binary, os.X_OK)):
        raise SimulatorNotFound(f"{binary}: not an executable file; rebuild Accel-Sim (cd {base / 'gpu-simulator'} && "
                                "source setup_environment.sh release && make -j; docs/simulate.md)")
    if not binary.exists():
        raise SimulatorNotFound(f"{binary}: missing; build Accel-Sim first (cd {base / 'gpu-simulator'} && "
                                "source setup_environment.sh release && make -j; docs/simulate.md)")
    config_dir = base / "gpu-simulator" / "gpgpu-sim" / "configs" / "tested-cfgs" / config
    trace_config = base / "gpu-simulator" / "configs" / "tested-cfgs" / config / "trace.config"
    if not (config_dir / "gpgpusim.config").is_file() or not trace_config.is_file():
        have = [c for c in tested_configs(base)
                if (base / "gpu-simulator" / "configs" / "tested-cfgs" / c / "trace.config").is_file()]
        raise SimulatorNotFound(f"--config {config}: no {config_dir / 'gpgpusim.config'} with "
                                f"{trace_config}; tested configs of this build: {', '.join(have) or 'none'}")
    env = _source_environment(setup)
    clock = _core_clock_mhz(config_dir / "gpgpusim.config", flags)
    return Simulator(base, config, binary, config_dir, trace_config, env, clock)


# ---------------------------------------------------------------------------------------
# the simulator's log
# ---------------------------------------------------------------------------------------
_STAT = re.compile(r"^\s*(kernel_name|kernel_launch_uid|gpu_sim_cycle|gpu_sim_insn|gpu_ipc|gpu_occupancy|"
                   r"L1D_total_cache_miss_rate|L2_total_cache_miss_rate|L1D_total_cache_accesses|"
                   r"L2_total_cache_accesses)\s*=\s*(.*?)\s*$")
_COUNT = re.compile(r"\d{1,19}")
_RATE = re.compile(r"\d{1,6}(?:\.\d+)?")
_NAN = re.compile(r"[-+]?nan", re.IGNORECASE)
_VALUES: dict[str, tuple[str, re.Pattern, float | None]] = {
    "kernel_launch_uid": ("uid", _COUNT, None),
    "gpu_sim_cycle": ("cycles", _COUNT, None),
    "gpu_sim_insn": ("instructions", _COUNT, None),
    "gpu_occupancy": ("achieved_occupancy", _RATE, 100.0),
    "L1D_total_cache_miss_rate": ("l1_hit_rate", _RATE, 1.0),
    "L2_total_cache_miss_rate": ("l2_hit_rate", _RATE, 1.0),
}
"""What each statistic read may hold, as Accel-Sim prints it: counts in decimal digits, rates and
occupancy (%) as decimals within their range. Anything else (nan cycles, a negative count, inf,
1e400, Python's 6_3382) fails the run rather than reaching an estimate."""
_DEADLOCK = re.compile(r"ERROR \*\* deadlock detected.*?@ gpu_sim_cycle (\d+)")
_CAPPED = re.compile(r"break due to reaching the maximum cycles \(or instructions\)")
_UNSUPPORTED = re.compile(r"unsupported binary version[^\n]*")
_EXITED = re.compile(r"(?m)^GPGPU-Sim: \*\*\* exit detected \*\*\*[ \t]*$")
"""Accel-Sim's last line: its ``main.cc`` prints it once the simulation loop is done ("to inform the
stats_collect script that we are done"), so a log without it was cut short."""


def parse_log(text: str) -> list[dict[str, Any]]:
    """Per-kernel stats blocks of an Accel-Sim stdout log, in print order.

    Each block: ``kernel_name``, ``uid`` and the metrics ``cycles`` (gpu_sim_cycle),
    ``instructions`` (gpu_sim_insn, thread instructions), ``ipc`` (their ratio),
    ``achieved_occupancy`` (gpu_occupancy as a fraction), ``l1_hit_rate`` and
    ``l2_hit_rate`` (1 − the total miss rates; absent when the cache saw no access).
    """
    blocks: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    seen: set[str] = set()
    for line in text.splitlines():
        m = _STAT.match(line)
        if not m:
            continue
        key, val = m.groups()
        if key == "kernel_name":
            cur = {"kernel_name": val}
            blocks.append(cur)
            seen = set()
            continue
        if cur is None or key not in _VALUES:
            continue
        if key in seen:  # which one is the kernel's? neither is taken
            cur.setdefault("garbled", f"{key} printed twice in one kernel's statistics")
            continue
        seen.add(key)
        field, pattern, top = _VALUES[key]
        v = val.rstrip("% ") if field == "achieved_occupancy" else (val.split() or [""])[0] if field == "uid" else val
        if _NAN.fullmatch(v) and field not in ("cycles", "instructions", "uid"):
            cur[field] = math.nan  # Accel-Sim's -nan where it has nothing to divide (the trace-driven occupancy)
            continue
        if not pattern.fullmatch(v) or (top is not None and float(v) > top):
            cur.setdefault("garbled", f"{key} = {val[:40]!r}")
            continue
        if field == "uid":
            cur["uid"] = int(v)
        elif field == "achieved_occupancy":
            cur[field] = float(v) / 100.0
        elif field.endswith("_hit_rate"):  # printed with 4 decimals: keep those
            cur[field] = round(1.0 - float(v), 4)
        else:
            cur[field] = float(v)
    for b in blocks:
        if b.get("cycles"):
            b["ipc"] = b.get("instructions", float("nan")) / b["cycles"]
    return blocks


def _last_words(path: Path) -> str:
    """The last non-empty line of a file (both ends of a long one), '' when none."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4096))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return ""
    line = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
    # C++ assertions put the signature first and the reason last: keep both ends
    return line if len(line) <= 200 else f"{line[:80]} ... {line[-110:]}"


def check_log(text: str, returncode: int | None, timed_out: bool, timeout_s: float | None,
              invocation: int, log: Path) -> dict[str, Any]:
    """The one kernel's stats of a finished run, or ``SimulationFailed`` saying what went wrong.

    Never trusts the exit status alone: Accel-Sim exits 0 without simulating anything
    for an unsupported binary version.
    """
    where = f"invocation {invocation}"
    dead = _DEADLOCK.search(text)
    if dead:
        raise SimulationFailed(f"{where}: Accel-Sim aborted: deadlock detected (no instruction written back "
                               f"since gpu_sim_cycle {dead.group(1)}; the detector false-alarms on long "
                               f"tensor-core kernels, drop --deadlock-detect or -gpgpu_deadlock_detect 1); log {log}")
    if timed_out:
        raise SimulationFailed(f"{where}: no answer within {timeout_s:g} s (--timeout); partial log {log}")
    if _CAPPED.search(text):  # it still prints a stats block and exits 0: a cut-short kernel's cycles
        raise SimulationFailed(f"{where}: Accel-Sim stopped at its cycle or instruction cap (-gpgpu_max_cycle, "
                               "-gpgpu_max_insn) before the kernel finished, so its cycles are not the kernel's: "
                               f"raise or drop the cap; log {log}")
    if returncode != 0:
        how = (f"was killed by signal {-returncode}" if returncode is not None and returncode < 0
               else f"exited with status {returncode}")
        said = _last_words(log.with_suffix(".stderr")) or _last_words(log)
        raise SimulationFailed(f"{where}: Accel-Sim {how}" + (f" ({said})" if said else "")
                               + f"; log {log} (stderr {log.with_suffix('.stderr')})")
    parsed = parse_log(text)
    garbled = next((b["garbled"] for b in parsed if "garbled" in b), None)
    if garbled is not None:
        raise SimulationFailed(f"{where}: Accel-Sim printed {garbled}, not a value it prints for a finished "
                               f"kernel, so the run is not used; log {log}")
    blocks = [b for b in parsed if "cycles" in b]
    if not blocks:
        unsup = _UNSUPPORTED.search(text)
        hint = ("; sm_89/sm_90 traces run on an Ampere model with --as-ampere"
                if unsup and re.search(r"\b(89|90)\b", unsup.group(0)) else "")
        why = (f" ({unsup.group(0).strip()}: Accel-Sim knows binary versions 70, 75, 80, 86{hint})" if unsup else "")
        raise SimulationFailed(f"{where}: Accel-Sim exited 0 without printing gpu_sim_cycle{why}; log {log}")
    if not _EXITED.search(text):
        # exit 0 and a stats block, but the log stops before the simulator's closing line (a full
        # disk, a lost write): the miss rates after the cut read as "the cache saw no access"
        raise SimulationFailed(f"{where}: the log ends before Accel-Sim's closing line (GPGPU-Sim: *** exit "
                               f"detected ***), so it was cut short and its statistics may be incomplete; log {log}")
    if len(blocks) != 1:
        raise SimulationFailed(f"{where}: {len(blocks)} kernels in one run's log, expected 1; log {log}")
    b = blocks[0]
    if b["cycles"] <= 0 or "instructions" not in b:
        raise SimulationFailed(f"{where}: no instructions or zero cycles in the log; log {log}")
    return {k: b[k] for k in ("kernel_name", *METRICS) if k in b}


# ---------------------------------------------------------------------------------------
# one run (module level so that submitit can pickle it)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """Everything one simulator process needs; picklable (submitit ships it to SLURM nodes)."""

    invocation: int
    kernel_name: str
    key: str
    job_dir: Path
    argv: tuple[str, ...]
    env: dict[str, str] = field(hash=False, compare=False, repr=False)
    config_dir: Path | None = None
    timeout_s: float | None = None
    keep_trace: bool = False


_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
_STOP = threading.Event()  # set on Ctrl-C: a run that starts after it is killed at once


def _kill(proc: subprocess.Popen) -> None:
    """Kill a simulator run with everything it started (``run_job`` gives each its own process
    group). Why the group: the simulator is often a wrapper script, and killing only the
    wrapper left the real simulator running on for hours, unseen, still writing into the log."""
    if hasattr(os, "killpg") and proc.poll() is None:  # only while the leader is unreaped, so the group is ours
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


def kill_live_runs() -> int:
    """Kill every simulator process this process started and that still runs (on Ctrl-C)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        _kill(p)
    return len(procs)


def run_job(job: Job) -> dict[str, Any]:
    """Run one simulator process; write ``result.json`` atomically on success.

    Returns ``{"invocation", "key", "stats", "sim_wall_s"}``, or ``{"invocation", "key",
    "error"}`` when the run gave no usable answer. The log goes to a temp name and is
    renamed to ``accelsim.log`` when the process has ended, so neither a concurrent
    leftover of a killed run nor a reader ever sees a log being written under that name.
    """
    job_dir = Path(job.job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=".run-", dir=job_dir))
    if job.config_dir is not None:
        for p in Path(job.config_dir).iterdir():
            if p.is_file():
                shutil.copy2(p, run_dir / p.name)
    fd_out, tmp_out = tempfile.mkstemp(prefix=".accelsim.log.", suffix=".tmp", dir=job_dir)
    fd_err, tmp_err = tempfile.mkstemp(prefix=".accelsim.stderr.", suffix=".tmp", dir=job_dir)
    log, err = job_dir / "accelsim.log", job_dir / "accelsim.stderr"
    timed_out, rc = False, None
    t0 = time.perf_counter()
    try:
        with os.fdopen(fd_out, "wb") as out, os.fdopen(fd_err, "wb") as errf:
            try:
                # its own session, so that _kill reaches what a wrapper script starts (POSIX; ignored elsewhere)
                proc = subprocess.Popen(list(job.argv), cwd=run_dir, env=job.env, stdout=out, stderr=errf,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:
                return {"invocation": job.invocation, "key": job.key, "broken": True,
                        "error": f"{job.argv[0]}: cannot start: {exc.strerror}; rebuild Accel-Sim "
                                 f"({_INSTALL_HINT})"}
            with _LIVE_LOCK:
                _LIVE.add(proc)
            if _STOP.is_set():
                _kill(proc)
            try:
                rc = proc.wait(timeout=job.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill(proc)
                rc = proc.wait()
            except BaseException:
                # an interrupt here (a submitit worker's SIGINT on cancel or Ctrl-C): in its own
                # session the simulator no longer gets the terminal's Ctrl-C, and left alive it ran on
                _kill(proc)
                raise
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(proc)
        os.replace(tmp_out, log)
        os.replace(tmp_err, err)
    finally:
        for tmp in (tmp_out, tmp_err):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        shutil.rmtree(run_dir, ignore_errors=True)
    wall = time.perf_counter() - t0
    text = log.read_text(errors="replace")
    said = _last_words(err)
    if rc == 127 or "error while loading shared libraries" in said:
        # the binary cannot run at all: a broken build or environment, not this invocation's fault
        return {"invocation": job.invocation, "key": job.key, "broken": True,
                "error": f"{job.argv[0]}: cannot run ({said or f'exit status {rc}'}); rebuild Accel-Sim or fix "
                         f"its environment (setup_environment.sh release; {_INSTALL_HINT})"}
    try:
        stats = check_log(text, rc, timed_out, job.timeout_s, job.invocation, log)
    except SimulationFailed as exc:
        return {"invocation": job.invocation, "key": job.key, "error": str(exc)}
    result = {"format": "gclsampler-simresult/1", "simulated": True, "invocation": job.invocation,
              "key": job.key, "stats": stats, "sim_wall_s": round(wall, 3), "argv": list(job.argv),
              "checked": CHECK_VERSION}
    write_text_atomic(job_dir / "result.json", json.dumps(result, indent=1) + "\n")
    if not job.keep_trace:
        shutil.rmtree(job_dir / "trace", ignore_errors=True)
    return result


def read_result(job_dir: Path) -> dict[str, Any] | None:
    """A cached result, or None when absent or unreadable (then the run is repeated).

    Why the stats are checked as ``check_log`` leaves them (cycles > 0, instructions): a
    result.json edited or left by another tool with stats lacking either was taken, and the
    summary and ``--all`` profile then stopped with a KeyError traceback.
    """
    try:
        r = json.loads((job_dir / "result.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(r, dict) or r.get("format") != "gclsampler-simresult/1":
        return None
    st = r.get("stats")
    ok = (isinstance(st, dict) and all(is_real(st.get(k)) for k in ("cycles", "instructions"))
          and math.isfinite(st["cycles"]) and st["cycles"] > 0)
    if not ok:
        return None
    log = job_dir / "accelsim.log"
    if r.get("checked") != CHECK_VERSION and log.is_file():
        # accepted under older rules (a run stopped at the cycle cap, a cut log, nan cycles): check it
        # again from its log, once; without its log (removed to save space) it stays as it was
        try:
            r["stats"] = check_log(log.read_text(errors="replace"), 0, False, None, r.get("invocation", -1), log)
        except SimulationFailed:
            return None
        r["checked"] = CHECK_VERSION
        with contextlib.suppress(OSError):  # a read-only cache checks again next time
            write_text_atomic(job_dir / "result.json", json.dumps(r, indent=1) + "\n")
    return r


# ---------------------------------------------------------------------------------------
# one command at a time on a run cache
# ---------------------------------------------------------------------------------------
LOCK_NAME = ".lock"
"""The run cache's lock file. A hidden regular file beside the run directories (those have
32-hex names), kept after use: a lock file removed on release lets a command that waited on
the removed one and a newcomer that made a new one both hold "the" lock."""


@dataclass(frozen=True)
class CacheLock:
    """How a command holds its run cache: ``held`` (alone), ``unlocked`` (the filesystem cannot
    lock; said on stderr) or ``read-only`` (no lock file and none can be made: this command may
    read cached runs, never start one, since it could not keep a second command out)."""

    cache: Path
    state: str
    why: str = ""

    def check_writable(self, invocation: int) -> None:
        if self.state == "read-only":
            raise SimulationFailed(f"{self.cache}: cannot make {LOCK_NAME} there ({self.why}), and invocation "
                                   f"{invocation} is not cached there; give a writable --cache-dir")


def _flock(fd: int, path: Path, cache: Path, wait: bool) -> bool:
    """Lock ``fd`` exclusively: True once held, False when another command holds it and
    ``wait`` is off. Raises OSError (naming ``path``) where the filesystem cannot lock."""
    from gclsampler._guard import stderr_line

    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not wait:
                return False
        holder = _holder(fd)
        stderr_line(f"gclsampler: waiting for another simulate command{f' ({holder})' if holder else ''} to finish "
                    f"with the run cache {cache}: one command at a time per cache (Ctrl-C stops this one)")
        fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C, SIGTERM: an interrupt out of here; the caller closes fd
        return True
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _acquire(cache: Path, wait: bool) -> tuple[int | None, CacheLock | None]:
    """The lock's descriptor (None when there is none to close) and how the cache is held
    (None: another command holds it and ``wait`` is off)."""
    from gclsampler._guard import stderr_line

    path = cache / LOCK_NAME
    while True:
        cache.mkdir(parents=True, exist_ok=True)
        fd, why = _open_lock(path)
        if fd is None:
            return None, CacheLock(cache, "read-only", why)
        try:
            if fcntl is None:
                raise OSError(errno.ENOSYS, "no flock on this system", str(path))
            got = _flock(fd, path, cache, wait)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in _NO_LOCKS:
                raise
            if wait:
                why = ("this platform has no flock" if fcntl is None
                       else f"{exc.strerror}: a filesystem without file locks, e.g. NFS without lockd?")
                stderr_line(f"gclsampler: warning: {path}: cannot lock it ({why}); running unlocked, so run no other "
                            f"simulate on {cache} until this one ends")
            return None, CacheLock(cache, "unlocked", exc.strerror or "")
        except BaseException:
            os.close(fd)
            raise
        if not got:
            os.close(fd)
            return None, None
        if _same_file(fd, path):
            _sign(fd)
            return fd, CacheLock(cache, "held")
        os.close(fd)  # the file was removed while we waited on it: lock the one there now


@contextlib.contextmanager
def cache_lock(cache: str | os.PathLike, *, wait: bool = True) -> Iterator[CacheLock | None]:
    """Hold a run cache for one command: one lock file and one descriptor, however many runs.

    Why per command: two commands on one cache at once each took the other's running
    simulation for a killed run's leftovers, removed its run directory and temp logs and ran it
    again (the first then failed renaming its log). Why not per run: one open file per
    uncached invocation met the default limit of 1024 open files at 1024 invocations.
    A second command waits, saying on stderr for which cache; ``wait=False`` yields None
    instead of waiting (and says nothing). The descriptor is not inherited by the simulators
    (``os.open``'s default), so a simulator left running never keeps the cache locked.
    """
    fd, lock = _acquire(Path(cache), wait)
    try:
        yield lock
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # no longer held by us: a command that waits next must not name us
            os.close(fd)  # releases the lock


# ---------------------------------------------------------------------------------------
# many runs
# ---------------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """One invocation's outcome: its stats (from a run, the cache, or a byte-identical twin)."""

    invocation: int
    kernel_name: str
    grid: str
    block: str
    key: str
    log: Path
    stats: dict[str, Any] | None = None
    error: str | None = None
    source: str = "run"  # run | cache | dedup:<invocation>
    sim_wall_s: float | None = None
    broken: bool = False  # the simulator itself could not run (not this invocation's failure)


@dataclass
class SimulationRun:
    """What ``simulate`` did: one record per requested invocation, in invocation order."""

    records: list[RunRecord]
    simulator: Simulator
    flags: list[str]
    n_run: int
    n_cached: int
    n_dedup: int
    wall_s: float
    jobs: int
    launcher: str
    export_facts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failures(self) -> list[RunRecord]:
        return [r for r in self.records if r.error is not None]

    def values(self, n: int) -> dict[str, np.ndarray]:
        """metric -> array over all ``n`` invocations (NaN where not simulated)."""
        out = {m: np.full(n, np.nan) for m in METRICS}
        for r in self.records:
            for m in METRICS:
                v = (r.stats or {}).get(m)
                if v is not None:
                    out[m][r.invocation] = float(v)
        return out

    def time_ns(self, cycles: float) -> float:
        """Cycles at the config's core clock, in ns (the profile's ``time_ns``)."""
        return cycles * 1000.0 / self.simulator.core_clock_mhz


def content_hash(trace_text: bytes) -> str:
    """sha256 of an exported trace without its ``-kernel id`` line.

    Why without it: byte-identical kernels differ only in that line, and ``--dedup`` should
    find them; the key of a run without ``--dedup`` adds the invocation back.
    """
    return hashlib.sha256(re.sub(rb"(?m)^-kernel id = \d+$", b"-kernel id = ?", trace_text, count=1)).hexdigest()


def run_key(trace_hash: str, invocation: int | None, config: str, fingerprint: str, flags: Sequence[str]) -> str:
    """The cache key of one run: trace content (+ invocation unless deduplicating), simulator, config, flags."""
    spec = {"v": CACHE_VERSION, "trace": trace_hash, "invocation": invocation, "config": config,
            "simulator": fingerprint, "flags": list(flags)}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


def _clean_debris(job_dir: Path) -> None:
    """Remove what a killed earlier attempt of this run left (its run directory, temp logs)."""
    if not job_dir.is_dir():
        return
    for p in job_dir.glob(".run-*"):
        shutil.rmtree(p, ignore_errors=True)
    for p in job_dir.glob(".accelsim.*.tmp"):
        with contextlib.suppress(OSError):
            p.unlink()


def default_flags(one_sm: bool = True, deadlock_detect: bool = False, extra: Sequence[str] = ()) -> list[str]:
    return [*(ONE_SM_FLAGS if one_sm else ()), *(() if deadlock_detect else NO_DEADLOCK_FLAGS), *extra]


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None
    disable = not os.isatty(2) or bool(os.environ.get("CI"))
    return tqdm(total=total, desc=desc, unit="kernel", disable=disable)


def simulate(sim: Simulator, workload_dir: str | os.PathLike, invocations: Sequence[int], cache_dir: str | os.PathLike,
             *, flags: Sequence[str], jobs: int = 1, launcher: str = "local", timeout_s: float | None = None,
             dedup: bool = False, keep_traces: bool = False, slurm_params: dict[str, Any] | None = None,
             on_record: Callable[[RunRecord], None] | None = None, as_ampere: bool = False) -> SimulationRun:
    """Simulate ``invocations`` of a workload, one process each; cached results are reused.

    ``launcher``: ``local`` (``jobs`` processes at a time here), ``slurm`` (a submitit job
    array) or ``submitit-local`` (submitit's local executor: the SLURM code path on one
    machine). A failed run is recorded (``RunRecord.error``), never cached, and retried
    by the next call. ``as_ampere`` runs sm_89/sm_90 traces as Ampere
    (``gclsampler.trace.ampere``); the rewritten text is what the run cache is keyed on.
    """
    from gclsampler.trace import list_invocations, read_kernel
    from gclsampler.trace.workload import accelsim_export, write_kernelslist
    from gclsampler.trace.writer import write_bytes_atomic

    check_launcher(launcher, slurm_params)  # before any trace is exported (the CLI calls it sooner, before --out exists)
    wdir = Path(workload_dir)
    cache = Path(cache_dir).resolve()  # the simulator runs in its own directory: paths must be absolute
    flags = list(flags)
    infos = {i.invocation: i for i in list_invocations(wdir)}
    missing = [i for i in invocations if i not in infos]
    if missing:
        raise SimulationFailed(f"{wdir}: invocations {missing[:10]} have no trace in this workload")
    fingerprint = sim.fingerprint()
    # one command at a time on a cache, from the first look into it to the last result
    # (the SLURM launcher's too): two at once each cleaned up the other's running runs
    with cache_lock(cache) as lock:
        t0 = time.perf_counter()  # after any wait for another command: the time of this one's work
        records: list[RunRecord] = []
        todo: list[Job] = []
        first_of_key: dict[str, RunRecord] = {}
        twins: list[tuple[RunRecord, RunRecord]] = []
        n_cached = 0
        facts: list[dict[str, Any]] = []
        try:
            for inv in sorted(set(int(i) for i in invocations)):
                info = infos[inv]
                h = info.header
                text, fact = accelsim_export(read_kernel(wdir / info.path), as_ampere=as_ampere)
                facts.append({"invocation": inv, **fact})
                key = run_key(content_hash(text), None if dedup else inv, sim.config, fingerprint, flags)
                job_dir = cache / key
                name = h.name
                rec = RunRecord(inv, name, f"({h.grid[0]},{h.grid[1]},{h.grid[2]})",
                                f"({h.block[0]},{h.block[1]},{h.block[2]})", key, job_dir / "accelsim.log")
                records.append(rec)
                if key in first_of_key:  # --dedup: a byte-identical trace is already scheduled or cached
                    twins.append((rec, first_of_key[key]))
                    continue
                first_of_key[key] = rec
                cached = read_result(job_dir)
                if cached is not None:
                    rec.stats, rec.source, rec.sim_wall_s = cached["stats"], "cache", cached.get("sim_wall_s")
                    n_cached += 1
                    if on_record:
                        on_record(rec)
                    continue
                lock.check_writable(inv)  # before anything in the cache is touched
                _clean_debris(job_dir)
                tdir = job_dir / "trace"
                fname = f"kernel-{h.kernel_id}.traceg"
                write_bytes_atomic(tdir / fname, text)
                write_kernelslist(tdir, [fname])
                todo.append(Job(inv, name, key, job_dir, tuple(sim.command(tdir / "kernelslist.g", flags)), sim.env,
                                sim.config_dir, timeout_s, keep_traces))
        except BaseException:
            # a bad trace (or ^C) met while exporting: the jobs exported so far never ran, so
            # their trace directories are debris, not cache; leave the cache as it was
            for job in todo:
                shutil.rmtree(job.job_dir, ignore_errors=True)
            raise
        by_inv = {r.invocation: r for r in records}

        def finish(res: dict[str, Any]) -> None:
            rec = by_inv[int(res["invocation"])]
            if "error" in res:
                rec.error = str(res["error"])
                rec.broken = bool(res.get("broken", False))
            else:
                rec.stats, rec.source, rec.sim_wall_s = res["stats"], "run", res.get("sim_wall_s")
            if on_record:
                on_record(rec)

        if todo:
            if launcher == "local":
                _run_local(todo, max(1, int(jobs)), finish)
            else:  # slurm or submitit-local: check_launcher refused any other name above
                _run_submitit(todo, launcher, cache / "submitit", timeout_s, slurm_params or {}, finish)
        for rec, first in twins:
            rec.stats, rec.error, rec.source = first.stats, first.error, f"dedup:{first.invocation}"
            rec.log = first.log
        return SimulationRun(records, sim, flags, len(todo), n_cached, len(twins), time.perf_counter() - t0,
                             max(1, int(jobs)), launcher, facts)


def _run_local(todo: list[Job], jobs: int, finish: Callable[[dict[str, Any]], None]) -> None:
    """``jobs`` simulator processes at a time on this machine (threads only wait on them)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    bar = _progress(len(todo), "simulate")
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(run_job, j) for j in todo]
        for fut in as_completed(futures):
            finish(fut.result())
            if bar is not None:
                bar.update(1)
    except BaseException:
        _STOP.set()
        pool.shutdown(wait=False, cancel_futures=True)
        kill_live_runs()
        raise
    finally:
        pool.shutdown(wait=True)
        _STOP.clear()
        if bar is not None:
            bar.close()


def _parse_value(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    for cast in (int, float):
        with contextlib.suppress(ValueError):
            return cast(v)
    return v


def check_launcher(launcher: str, slurm_params: dict[str, Any] | None = None) -> None:
    """Refuse a launcher this machine cannot use, or SLURM parameters it would not take, before
    any output exists: submitit found no ``srun``, or an unknown ``--slurm`` key, only after
    ``--out`` had been claimed, and left it behind with a traceback. ``--slurm`` with the local
    launcher was ignored without a word."""
    if launcher not in ("local", "slurm", "submitit-local"):
        raise SimulatorNotFound(f"--launcher: unknown launcher {launcher!r} (local, slurm, submitit-local)")
    if launcher == "local":
        if slurm_params:
            raise GclError(f"--slurm {next(iter(slurm_params))}=...: only --launcher slurm or submitit-local "
                           "reads SLURM parameters; --launcher local runs here")
        return
    if importlib.util.find_spec("submitit") is None:
        raise SimulatorNotFound(f"--launcher {launcher} needs submitit: pip install 'gclsampler[slurm]' "
                                "(or pip install submitit)")
    if launcher == "slurm":
        missing = [c for c in ("sbatch", "srun") if shutil.which(c) is None]
        if missing:
            raise SimulatorNotFound(f"--launcher slurm: {' and '.join(missing)} not on PATH; submit from a SLURM "
                                    "login node, or use --launcher local")
    if slurm_params:
        import submitit

        with tempfile.TemporaryDirectory() as folder:  # submitit names the keys its slurm executor takes
            ex = submitit.AutoExecutor(folder=folder, cluster="local")
            for k, v in slurm_params.items():
                try:
                    ex.update_parameters(**{f"slurm_{k}": _parse_value(v)})
                except (NameError, ValueError, TypeError) as exc:
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    raise GclError(f"--slurm {k}={v}: {first}") from None


def _run_submitit(todo: list[Job], launcher: str, folder: Path, timeout_s: float | None,
                  slurm_params: dict[str, Any], finish: Callable[[dict[str, Any]], None]) -> None:
    """One submitit job per invocation, submitted as one array; results come back as they end.

    submitit is an optional extra (``pip install 'gclsampler[slurm]'``), imported only here;
    ``check_launcher`` has made sure it is installed.
    """
    import submitit
    from submitit.helpers import as_completed

    ex = submitit.AutoExecutor(folder=str(folder), cluster="slurm" if launcher == "slurm" else "local")
    minutes = int(math.ceil(timeout_s / 60.0)) + 5 if timeout_s else 24 * 60
    ex.update_parameters(name="gclsampler-simulate", timeout_min=minutes, cpus_per_task=1, nodes=1, tasks_per_node=1)
    if slurm_params:  # check_launcher has tried each key
        ex.update_parameters(**{f"slurm_{k}": _parse_value(v) for k, v in slurm_params.items()})
    submitted = ex.map_array(run_job, todo)
    job_of = {id(j): t for j, t in zip(submitted, todo)}
    bar = _progress(len(todo), f"simulate ({launcher})")
    try:
        for sj in as_completed(submitted, poll_frequency=2.0):
            t = job_of[id(sj)]
            try:
                res = sj.result()
            except Exception as exc:  # the job itself died (node lost, time limit, pickling)
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                res = {"invocation": t.invocation, "key": t.key,
                       "error": f"invocation {t.invocation}: submitit job {sj.job_id} failed ({first}); "
                                f"its log {sj.paths.stderr}"}
            finish(res)
            if bar is not None:
                bar.update(1)
    except BaseException:
        for sj in submitted:
            with contextlib.suppress(Exception):
                sj.cancel(check=False)
        raise
    finally:
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------
def _as_ampere_from(run: SimulationRun) -> str:
    """The binary versions ``--as-ampere`` rewrote in this run, e.g. "90" (empty when none)."""
    return "/".join(str(v) for v in sorted({f["as_ampere_from"] for f in run.export_facts if f.get("as_ampere_from")}))


def flag_value(flags: Sequence[str], name: str) -> str | None:
    """The value the simulator takes for ``name``: the last one given (``flag_values``), or
    None when not given."""
    given = flag_values(flags, name)
    return given[-1] if given else None


def _is(value: str | None, n: int) -> bool:
    try:
        return value is not None and int(value) == n
    except ValueError:
        return False


def one_sm(flags: Sequence[str]) -> bool:
    """Whether these flags simulate one SM. Why not "the flags are there": ``--sim-arg
    '-gpgpu_n_clusters 4'`` comes after the one-SM defaults and wins, and every output
    still said "one SM, so cycles are SM 0's share"."""
    return _is(flag_value(flags, "-gpgpu_n_clusters"), 1) and _is(flag_value(flags, "-gpgpu_n_cores_per_cluster"), 1)


def deadlock_detect_off(flags: Sequence[str]) -> bool:
    """Whether these flags turn Accel-Sim's deadlock detector off (the last setting wins)."""
    return _is(flag_value(flags, "-gpgpu_deadlock_detect"), 0)


def provenance(run: SimulationRun, synthetic: bool) -> str:
    """The one-line label every output carries: simulated, by what, on how many SMs."""
    one = one_sm(run.flags)
    rewritten = _as_ampere_from(run)
    return ("SIMULATED by Accel-Sim (config " + run.simulator.config
            + ("; one SM, so cycles are SM 0's share" if one else "") + ")"
            + (f"; sm_{rewritten} traces run as Ampere (--as-ampere), an approximation of the GPU they were "
               "traced on" if rewritten else "")
            + ("; SYNTHETIC traces (gclsampler.synth), not a hardware measurement" if synthetic else ""))


def row_label(run: SimulationRun, synthetic: bool) -> str:
    """The short form of ``provenance`` for a CSV column, repeated on every row."""
    rewritten = _as_ampere_from(run)
    return (f"Accel-Sim {run.simulator.config}" + (", one SM (SM 0's share)" if one_sm(run.flags) else "")
            + (f", sm_{rewritten} run as Ampere" if rewritten else "")
            + (", synthetic traces" if synthetic else ""))


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)
    return str(v)


def write_simulated_csv(path: Path, run: SimulationRun, plan=None, synthetic: bool = False) -> Path:
    """``simulated.csv``: one row per simulated invocation (deterministic: no wall times)."""
    weights = {s.invocation: (s.cluster, s.weight) for s in plan.samples} if plan is not None else {}
    label = row_label(run, synthetic)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["invocation", "kernel_name", "cluster", "weight", *METRICS, "time_ns", "simulated_by", "log"])
    for r in run.records:
        if r.stats is None:
            continue
        c, wt = weights.get(r.invocation, (None, None))
        cyc = r.stats.get("cycles")
        w.writerow([r.invocation, r.kernel_name, _fmt(c), _fmt(wt), *[_fmt(r.stats.get(m)) for m in METRICS],
                    _fmt(run.time_ns(cyc) if cyc is not None else None), label, str(r.log)])
    return write_text_atomic(path, buf.getvalue())


def estimate(plan, run: SimulationRun) -> dict[str, Any]:
    """``estimate.json``'s content: Σ w·M totals, weighted-mean rates, per-cluster shares, interval."""
    from gclsampler.score import cluster_contributions, no_estimate_reasons, weighted_estimate

    n = plan.n_invocations
    vals = run.values(n)
    vals["time_ns"] = vals["cycles"] * 1000.0 / run.simulator.core_clock_mhz
    est = weighted_estimate(plan, vals)
    tot = est["totals"]
    if tot.get("cycles") and tot.get("instructions") is not None:
        # a cycles total past float64 (inf) has no ratio: x / inf gave an ipc_of_totals of 0.0, a
        # finite IPC beside cycles' "overflow"; NaN is null in estimate.json and reads as overflow
        # (no_estimate_reasons), as plan reconstruct's
        cyc = tot["cycles"]
        est["ipc_of_totals"] = tot["instructions"] / cyc if math.isfinite(cyc) else math.nan
    est["no_estimate"] = no_estimate_reasons(est)
    est["clusters"] = cluster_contributions(plan, vals["cycles"])
    from gclsampler.plan import is_finite_number

    eb = plan.config.get("error_bound")
    # `config` is free-form: only a finite bound >= 0, as the methods write it, gives an interval;
    # '5%', [0.1] or -1 in a hand-edited plan gave a traceback after every simulation had run
    if is_finite_number(eb) and eb >= 0 and tot.get("cycles") is not None:
        eb = float(eb)
        z = plan.config.get("z")
        z = z if is_finite_number(z) else None
        # the bound is relative to the true total T (STEM eq. 1: |est - T| <= eb T), so the totals it
        # admits are est / (1 + eb) .. est / (1 - eb); est (1 -/+ eb) took it relative to the estimate,
        # which drops totals the bound allows (at eb = 0.25: 1.25 est instead of 1.33 est; the
        # interval then missed about 6.3 % of z = 1.96 draws instead of 5 %)
        est["interval"] = {
            "metric": "cycles", "error_bound": eb,
            "confidence_z": None if z is None else float(z),
            "low": tot["cycles"] / (1.0 + eb), "high": tot["cycles"] / (1.0 - eb) if eb < 1 else math.inf,
            "note": "the total cycles that the plan's predicted relative error bound of the total (STEM, relative "
                    "to the true total) admits around the simulated estimate: estimate / (1 + bound) .. "
                    "estimate / (1 - bound)",
        }
    return est


def estimate_document(plan, plan_path: Path, workload_dir: Path, run: SimulationRun, synthetic: bool) -> dict[str, Any]:
    est = estimate(plan, run)
    return {
        "format": "gclsampler-estimate/1",
        "simulated": True,
        "synthetic": bool(synthetic),
        "note": provenance(run, synthetic),
        "plan": str(plan_path), "workload": plan.workload, "workload_dir": str(workload_dir),
        "method": plan.method, "n_invocations": plan.n_invocations, "n_simulated": len(run.records),
        "simulator": {"config": run.simulator.config, "flags": run.flags,
                      "core_clock_mhz": run.simulator.core_clock_mhz,
                      "deadlock_detect_off_because": DEADLOCK_REASON if deadlock_detect_off(run.flags) else None},
        "definitions": {"totals": "sum over samples of weight x metric (estimate of the workload total)",
                        "means": "sum over samples of weight x metric / n_invocations (estimate of the "
                                 "per-invocation mean of a rate)",
                        "ipc_of_totals": "totals.instructions / totals.cycles",
                        "time_ns": "cycles / core clock"},
        **est,
    }


def write_profile(path: Path, run: SimulationRun, synthetic: bool, n_invocations: int) -> Path:
    """``profiles/accelsim-<config>.csv`` in profile.csv format (row i = invocation i) + a sidecar JSON.

    ``time_ns`` = cycles / the config's core clock, so ``python evaluate.py`` scores plans on
    simulated cycles exactly as on a measured profile.
    """
    import pandas as pd

    from gclsampler.profile import write_profile as _write

    recs = sorted(run.records, key=lambda r: r.invocation)
    if [r.invocation for r in recs] != list(range(n_invocations)) or any(r.stats is None for r in recs):
        raise SimulationFailed(f"{path}: a profile needs every invocation 0..{n_invocations - 1} simulated")
    cyc = np.array([r.stats["cycles"] for r in recs], dtype=np.float64)
    df = pd.DataFrame({
        "invocation": np.arange(n_invocations), "kernel_name": [r.kernel_name for r in recs],
        "grid": [r.grid for r in recs], "block": [r.block for r in recs],
        "time_ns": cyc * 1000.0 / run.simulator.core_clock_mhz, "cycles": cyc,
        **{m: [r.stats.get(m, np.nan) for r in recs] for m in ("ipc", "l1_hit_rate", "l2_hit_rate", "achieved_occupancy")},
        "instructions": [r.stats.get("instructions") for r in recs],
        "simulated_by": row_label(run, synthetic),
    })
    out = _write(df, path)
    side = {"format": "gclsampler-simulated-profile/1", "simulated": True, "synthetic": bool(synthetic),
            "note": provenance(run, synthetic), "config": run.simulator.config, "flags": run.flags,
            "core_clock_mhz": run.simulator.core_clock_mhz,
            "columns": {"cycles": "gpu_sim_cycle", "instructions": "gpu_sim_insn (thread instructions)",
                        "time_ns": "cycles / core clock", "ipc": "gpu_sim_insn / gpu_sim_cycle",
                        "l1_hit_rate": "1 - L1D_total_cache_miss_rate", "l2_hit_rate": "1 - L2_total_cache_miss_rate",
                        "achieved_occupancy": "gpu_occupancy / 100"}}
    write_text_atomic(Path(path).with_suffix(".json"), json.dumps(side, indent=1) + "\n")
    return out
