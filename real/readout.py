"""Unpack what ``real/collect.sh`` packed on a GPU host and say what it holds.

Why: a collection pass runs on a GPU machine lent for minutes, and its results come back
as three archives. What the next step is (group the traces into workloads, fix the
tool, rerun a probe) depends on a handful of facts buried in them: which probes got
records out of the GPU, where each traced launch's time went, which workloads have a
trace for every launch, and whether ``GCL_TIME_GATE_US`` brought the tool's times down to
the profiler's. This script unpacks the archives into a new directory and writes those
facts as one markdown page (also printed), so nothing is read off by hand.

    python real/readout.py OUT STAGE           # OUT: collect.sh's OUT; STAGE: a new directory
    python real/readout.py OUT STAGE --group   # also: STAGE/workloads/<name>, ready for train.py

``--group`` turns each workload whose every launch came back traced into a workload directory
under STAGE (grouped traces, and the committed ``profile.csv`` and ``workload.json`` of
``real/<name>``, with ``traces_gpu`` and ``traces_driver`` from the pass's env.txt, and a
warning when that GPU is not the profile's ``gpu``), runs ``gclsampler validate``'s checks on it
and reports them. A launch the tool said it dropped records of (``GCL_BUFFER_MB`` too small,
``GCL_MAX_INSTS_PER_WARP``) makes its workload incomplete. It does not touch ``real/<name>/``:
committing traces there stays a deliberate step.
"""

from __future__ import annotations

import argparse
import csv
import json
import lzma
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

REAL = Path(__file__).resolve().parent
WORKLOADS = ("vecadd", "nw", "bfs", "lud", "llm")
REAL_NAME = {"llm": "pythia410m_2l"}  # the committed workload a traced program belongs to
PROBES = {  # directory under probe/: what collect.sh ran there
    "count_all": "count-only, every SM, 16 CTAs",
    "count_sm0": "count-only, SM 0",
    "count_id0": "count-only, SM 0's share by CTA id (GCL_CTA_SCOPE=id)",
    "a": "records, values off, every SM, 16 CTAs",
    "b": "records, values on, every SM, 16 CTAs",
    "c": "records, values on, SM 0, 16 CTAs (channel)",
    "d": "records, values on, SM 0, 16 CTAs (device buffer)",
    "e": "as c, GCL_UNIFORM=0 (only when c and d got none)",
    "f": "as d, GCL_UNIFORM=0 (only when c and d got none)",
}
# the tool's stderr when a launch's trace is missing records (tracer/gcl_tracer.cu)
DROPPED = re.compile(r"gcl_tracer: kernel (\d+): (\d+) records (did not fit GCL_BUFFER_MB=\d+|over GCL_MAX_INSTS_PER_WARP)")
# GCL_VERBOSE's line for a launch whose grid has fewer CTAs than the GPU has SMs (GCL_SMALL_GRID=cta0)
KEPT_CTA0 = re.compile(r"gcl_tracer: launch (\d+): \d+ CTAs on \d+ SMs: keeping CTA 0")
VERBOSE = re.compile(r"gcl_tracer: launch (\d+) (\w+)([^:]*): setup ([\d.]+) s, launch\+kernel ([\d.]+) s "
                     r"\(GPU ([\d.]+) ms\), flush ([\d.]+) s, drain ([\d.]+) s, (\d+)")


# tarfile's "data" filter (no absolute paths, links out of the tree, devices) where this
# Python has it (3.10.12+, 3.11.4+)
_SAFE = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}


class ReadoutError(Exception):
    """Input this script cannot read: one line naming the file."""


def unpack(out: Path, stage: Path) -> list[str]:
    """Extract meta.tar.xz and the trace stream into ``stage``; returns notes on what was cut."""
    meta = out / "meta.tar.xz"
    if not meta.is_file():
        if (out / "collect.log").is_file():  # collect.sh keeps its log in OUT as it goes
            raise ReadoutError(f"{meta}: not found: the pass did not pack (killed, or stopped early); "
                               f"{out / 'collect.log'} says how far it got")
        raise ReadoutError(f"{meta}: not found (is {out} the OUT of a collect.sh pass?)")
    notes: list[str] = []
    try:
        with tarfile.open(meta) as tf:
            tf.extractall(stage, **_SAFE)
    except (tarfile.TarError, EOFError, lzma.LZMAError) as e:  # cut short or not an archive
        why = str(e).splitlines()[0].rstrip(":") if str(e) else type(e).__name__
        raise ReadoutError(f"{meta}: cannot be unpacked ({why}): packing failed (see pack.err and collect.log "
                           f"in {out}) or the file was cut in transfer") from None
    parts = sorted(out.glob("traces.tar.part*"))
    if not parts:
        notes.append("no traces.tar.part* in OUT: the pass packed no traces")
        return notes
    with open(parts[0], "rb") as f:
        magic = f.read(4)
    tool = ["zstd", "-dc", "--long=27"] if magic == b"\x28\xb5\x2f\xfd" else ["xz", "-dc"]
    if shutil.which(tool[0]) is None:
        raise ReadoutError(f"{parts[0]}: needs {tool[0]} on PATH to decompress")
    # Streamed: the parts are concatenated into the decompressor and its output read as a tar
    # stream, so a pass of gigabytes of text is never held in memory. A stream cut at
    # collect.sh's size limit ends mid-file: the decompressor then fails at the end, and every
    # member before the cut is whole.
    extracted = 0
    last = None
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["sh", "-c", 'cat "$@" | ' + " ".join(tool), "sh", *map(str, parts)],
                                stdout=subprocess.PIPE, stderr=err)
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tf:
                for member in tf:
                    last = member.name
                    tf.extract(member, stage, **_SAFE)
                    extracted += 1
                    last = None
        except (tarfile.ReadError, EOFError) as e:
            if last is not None:
                (stage / last).unlink(missing_ok=True)
                notes.append(f"{last}: cut off in the archive, left out ({e})")
            elif not extracted:
                notes.append(f"the trace stream holds no complete file ({e})")
        finally:
            proc.stdout.close()
            rc = proc.wait()
        if rc != 0:
            err.seek(0)
            msg = err.read().decode(errors="replace").strip()[:120]
            notes.insert(0, f"the trace stream ends early ({tool[0]}: {msg}): it was cut at collect.sh's size limit")
    return notes


def records_in(path: Path) -> int:
    """Instruction lines of a raw trace (neither header nor blank), as collect.sh counts them."""
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip() and not line.startswith((b"-", b"#")))


def listed_traces(trace_dir: Path) -> list[str]:
    """The trace names the tool's kernelslist holds, by gclsampler's own rule for that list
    (no Memcpy lines; an entry outside the directory is refused with TraceFormatError)."""
    from gclsampler.trace.workload import _kernelslist_entries, kernelslist_path

    if kernelslist_path(trace_dir) is None:
        return []
    return [s for _, s in _kernelslist_entries(trace_dir)[1] if not s.startswith("Memcpy")]


@dataclass
class Traced:
    """One workload's traced run, as unpacked."""

    listed: int  # launches the tool opened a trace for
    unpacked: int  # of those, files that came back whole
    with_records: int
    records: int
    expected: int | None  # launches the workload has (real/<name>/workload.json)
    problem: str = ""  # first trace the reader refused, with its message
    dropped: tuple[str, ...] = ()  # launches the tool said it left records out of, and why

    def verdict(self) -> str:
        """"yes" when every launch of the workload came back as a trace the reader accepts and the
        traces hold records, else why not. A trace with a header alone is a launch none of whose
        CTAs ran on SM 0 (a small grid can miss it), so some of those are counted, not refused;
        all of them means the records did not get off the GPU. A launch whose records the tool
        said it did not all write (its stderr) is never complete."""
        why = []
        if self.expected is None:
            why.append("no workload.json to count its launches")
        elif self.listed != self.expected:
            why.append(f"{self.listed} of {self.expected} launches traced")
        if self.unpacked < self.listed:
            why.append(f"{self.listed - self.unpacked} traces not in the archive")
        if self.unpacked and not self.with_records:
            why.append("no trace has a record")
        if self.problem:
            why.append(self.problem)
        if self.dropped:
            shown = ", ".join(self.dropped[:3]) + (f" and {len(self.dropped) - 3} more" if len(self.dropped) > 3 else "")
            why.append(f"records missing from {len(self.dropped)} launches ({shown})")
        if why:
            return "no: " + "; ".join(why)
        empty = self.unpacked - self.with_records
        return f"yes ({empty} launches ran no CTA on SM 0)" if empty else "yes"


def _trace_stderr(stage: Path, name: str) -> str:
    """The stderr of a workload's traced step: the retry's (vecadd.trace2) where there was one,
    since it wrote the traces that came back; '' without one."""
    err = next((e for e in (stage / f"{name}.trace2.err", stage / f"{name}.trace.err") if e.is_file()), None)
    return err.read_text(errors="replace") if err is not None else ""


def dropped_records(stage: Path, name: str, empty: Iterable[int] = ()) -> tuple[str, ...]:
    """The launches of a workload's traced step whose records did not all come back, from that
    step's stderr: those the tool said it did not write (a full GCL_BUFFER_MB buffer, or
    GCL_MAX_INSTS_PER_WARP), and those of ``empty`` (kernel ids whose trace holds no record)
    that it said kept CTA 0. Why the second: CTA 0 runs somewhere in every launch, so its
    trace cannot be empty, unlike an SM-0 trace of a small grid; an empty one means the CTA-0
    scope lost its records, which counting it as a launch that missed SM 0 would hide."""
    text = _trace_stderr(stage, name)
    found: dict[int, list[str]] = {}
    for m in DROPPED.finditer(text):
        why = "not written: over GCL_MAX_INSTS_PER_WARP" if m.group(3).startswith("over") else m.group(3)
        found.setdefault(int(m.group(1)), []).append(f"{m.group(2)} records {why}")
    kept_cta0 = {int(m.group(1)) for m in KEPT_CTA0.finditer(text)}
    for k in sorted(kept_cta0.intersection(empty)):
        found.setdefault(k, []).append("kept CTA 0 (GCL_SMALL_GRID) but holds no record")
    return tuple(f"kernel-{k}.trace: {'; '.join(v)}" for k, v in sorted(found.items()))


def traced(stage: Path, name: str, check: bool, real: Path = REAL) -> Traced:
    from gclsampler.trace import TraceFormatError, read_kernel

    trace_dir = stage / name / "trace"
    files, problem = [], ""
    try:
        files = listed_traces(trace_dir)
    except TraceFormatError as e:
        problem = str(e).splitlines()[0]
    present = [trace_dir / f for f in files if (trace_dir / f).is_file()]
    wl = real / REAL_NAME.get(name, name) / "workload.json"
    expected = json.loads(wl.read_text())["n_invocations"] if wl.is_file() else None
    counts = []
    for p in present:
        # a trace is read once: the parse, when it succeeds, also gives the record count
        # (instructions plus the LDGSTS records it folded), which the line count would repeat
        if check and not problem:
            facts: dict = {}
            try:
                counts.append(read_kernel(p, facts=facts).pc.size + facts.get("ldgsts_removed", 0))
                continue
            except TraceFormatError as e:
                problem = str(e).splitlines()[0]
        counts.append(records_in(p))
    empty = [int(m.group(1)) for p, c in zip(present, counts) if c == 0
             for m in [re.match(r"kernel-(\d+)\.", p.name)] if m]
    return Traced(len(files), len(present), sum(c > 0 for c in counts), sum(counts), expected, problem,
                  dropped_records(stage, name, empty))


def verbose_phases(err: Path) -> dict[str, float] | None:
    """Medians of GCL_VERBOSE's per-launch phases in one step's stderr."""
    if not err.is_file():
        return None
    rows = [m.groups() for m in VERBOSE.finditer(err.read_text(errors="replace"))]
    if not rows:
        return None
    col = lambda i: statistics.median(float(r[i]) for r in rows)  # noqa: E731
    return {"launches": len(rows), "setup_s": col(3), "launch_kernel_s": col(4), "gpu_ms": col(5),
            "flush_s": col(6), "drain_s": col(7), "records": sum(int(r[8]) for r in rows),
            "kernel_handles": sum("CUkernel" in r[2] for r in rows)}


def profile_times(path: Path) -> list[float]:
    """time_ns of the tool's profile.csv, in launch order."""
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return [float(row["time_ns"]) for row in csv.DictReader(f)]


def ncu_times(path: Path) -> list[float]:
    if not path.is_file():
        return []
    from gclsampler.profile import import_profile

    try:
        return [float(t) for t in import_profile(path, "ncu")["time_ns"]]
    except Exception as e:  # noqa: BLE001 -- any importer refusal is reported, not fatal
        print(f"readout: {path}: not read ({e})", file=sys.stderr)
        return []


def median_ratio(a: list[float], b: list[float]) -> str:
    if not a or not b:
        return "-"
    if len(a) != len(b):
        return f"({len(a)} vs {len(b)} launches)"
    return f"{statistics.median(x / y for x, y in zip(a, b) if y > 0):.2f}x"


def traced_gpu(stage: Path) -> tuple[str, str] | None:
    """(name, driver) of the GPU the pass ran on, from env.txt's nvidia-smi --query-gpu line."""
    env = stage / "env.txt"
    if not env.is_file():
        return None
    text = env.read_text(errors="replace").splitlines()
    rows = [text[i + 1] for i, ln in enumerate(text[:-1]) if ln.startswith("name, driver_version")]
    cells = [c.strip() for c in rows[0].split(",")] if rows else []
    return (cells[0], cells[1]) if len(cells) >= 2 and cells[0] else None


def group_workload(stage: Path, name: str, real: Path) -> tuple[Path, list[str], list[str]]:
    """STAGE/workloads/<real name>: the traces grouped, beside the committed profile and
    workload.json (``traces`` set true, ``traces_gpu``/``traces_driver`` from env.txt); returns
    it, its validation problems (errors first) and warnings of this script's own (a profile
    measured on another GPU than the traces came from)."""
    from gclsampler.trace import group_raw_dir
    from gclsampler.validate import check_workload, errors_and_warnings

    src = real / REAL_NAME.get(name, name)
    out = stage / "workloads" / src.name
    group_raw_dir(stage / name / "trace", out, compress=".zst")
    shutil.copy(src / "profile.csv", out / "profile.csv")
    meta = json.loads((src / "workload.json").read_text())
    meta.update(traces=True, traces_note=f"grouped by real/readout.py from the pass unpacked in {stage}")
    notes = []
    gpu = traced_gpu(stage)
    if gpu is None:
        meta.update(traces_gpu=None, traces_driver=None)
        notes.append("warning: env.txt does not say which GPU the traces came from (traces_gpu is null)")
    else:
        meta.update(traces_gpu=gpu[0], traces_driver=gpu[1])
        prof_gpu = meta.get("gpu")
        if not isinstance(prof_gpu, str) or prof_gpu.strip().lower() != gpu[0].lower():
            notes.append(f"warning: traced on {gpu[0]} (driver {gpu[1]}), but profile.csv was measured on "
                         f"{prof_gpu} (driver {meta.get('driver')}): the traces and the ground truth are not "
                         "from the same GPU")
    (out / "workload.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    errors, warnings = errors_and_warnings(check_workload(out))
    return out, [str(p) for p in errors + warnings], notes


def readout(stage: Path, notes: list[str], check: bool = True, real: Path = REAL, group: bool = False) -> str:
    lines = [f"# collect.sh pass: {stage}", ""]
    if (stage / "env.txt").is_file():  # the line after nvidia-smi --query-gpu's header
        gpu = traced_gpu(stage)
        lines += [f"GPU (nvidia-smi): `{gpu[0]}`, driver `{gpu[1]}`" if gpu else "GPU: env.txt has no nvidia-smi line", ""]
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])

    walls = stage / "walls.csv"
    if walls.is_file():
        with open(walls, newline="") as f:
            bad = [r for r in csv.DictReader(f) if r["rc"] != "0"]
        lines += ["## Steps that did not exit 0", ""]
        lines += [f"- `{r['step']}`: " + ("skipped, no time left" if r["rc"] == "skipped" else
                                          f"rc {r['rc']} after {r['wall_s']} s" + (" (timed out)" if r["rc"] in ("124", "137") else ""))
                  for r in bad] or ["- none"]
        lines.append("")

    lines += ["## Probes (vector add)", "", "| probe | what | traces | instruction records | warp instructions counted |",
              "|---|---|---|---|---|"]
    for d, what in PROBES.items():
        p = stage / "probe" / d
        files = sorted(p.glob("kernel-*.trace")) if p.is_dir() else []
        counted = "-"
        if (p / "counts.csv").is_file():
            with open(p / "counts.csv", newline="") as f:
                counted = str(sum(int(r["warp_insts"]) for r in csv.DictReader(f)))
        lines.append(f"| {d} | {what} | {len(files)} | {sum(records_in(x) for x in files)} | {counted} |")
    log = stage / "collect.log"
    if log.is_file():
        chosen = [ln.split("] ", 1)[-1] for ln in log.read_text().splitlines() if "probe records" in ln or "traced runs" in ln]
        lines += [""] + [f"collect.log: {c}" for c in chosen]
    lines.append("")

    lines += ["## Where a traced launch's time went (GCL_VERBOSE, medians)", "",
              "| step | launches | setup s | launch+kernel s | GPU ms | flush s | drain s | records | CUkernel handles |",
              "|---|---|---|---|---|---|---|---|---|"]
    for err in sorted(stage.glob("*.err")):
        ph = verbose_phases(err)
        if ph:
            lines.append(f"| {err.stem} | {ph['launches']} | {ph['setup_s']:.3f} | {ph['launch_kernel_s']:.3f} | "
                         f"{ph['gpu_ms']:.3f} | {ph['flush_s']:.3f} | {ph['drain_s']:.3f} | {ph['records']} | "
                         f"{ph['kernel_handles']} |")
    lines.append("")

    lines += ["## Traced workloads", "", "| workload | launches | traced | unpacked | with records | records | complete |",
              "|---|---|---|---|---|---|---|"]
    complete = []
    for name in WORKLOADS:
        t = traced(stage, name, check, real)
        verdict = t.verdict()
        lines.append(f"| {name} | {t.expected if t.expected is not None else '-'} | {t.listed} | {t.unpacked} | "
                     f"{t.with_records} | {t.records} | {verdict} |")
        if verdict.startswith("yes"):
            complete.append(name)
    lines.append("")
    if group:
        lines += ["## Grouped workloads", ""]
        for name in complete:
            out, problems, warned = group_workload(stage, name, real)
            for n in warned:
                print(f"readout: {out}: {n}", file=sys.stderr)
            lines.append(f"- `{out}`: " + ("valid; `python train.py workload.dir="
                                          f"{out} workload.name={out.name}`" if not problems else
                                          f"{len(problems)} problem(s) from the validate checks:"))
            lines += [f"  - {p}" for p in problems[:5]] + [f"  - {n}" for n in warned]
        if not complete:
            lines.append("- none: no workload came back with every launch traced")
        lines.append("")

    lines += ["## GCL_TIME_GATE_US (per-launch medians)", "",
              "| program | gated / ungated | ungated / Nsight Compute | gated / Nsight Compute | gate timeouts |",
              "|---|---|---|---|---|"]
    for name in WORKLOADS:
        plain, gated = profile_times(stage / name / "time" / "profile.csv"), profile_times(stage / name / "time_gated" / "profile.csv")
        if not (plain or gated):
            continue
        ncu = ncu_times(stage / name / "ncu_time.csv")
        # the tool's exit line counts the launches whose gate timed out (the step runs without GCL_VERBOSE)
        err = stage / f"{name}.time_gated.err"
        timeouts = re.search(r"(\d+) launches \(the first", err.read_text(errors="replace")) if err.is_file() else None
        lines.append(f"| {name} | {median_ratio(gated, plain)} | {median_ratio(plain, ncu)} | {median_ratio(gated, ncu)} | "
                     f"{timeouts.group(1) if timeouts else 0} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the directory collect.sh packed into (its OUT)")
    ap.add_argument("stage", type=Path, help="a new or empty directory to unpack into")
    ap.add_argument("--no-check", action="store_true", help="do not parse every unpacked trace with gclsampler's reader")
    ap.add_argument("--group", action="store_true",
                    help="also group each complete workload into STAGE/workloads/<name> with its committed profile")
    ap.add_argument("--real", type=Path, default=REAL,
                    help="where each workload's workload.json says how many launches it has (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.stage.exists() and not args.stage.is_dir():
        print(f"readout: {args.stage}: not a directory; give a new directory (nothing was written)", file=sys.stderr)
        return 2
    if args.stage.exists() and any(args.stage.iterdir()):
        print(f"readout: {args.stage}: not empty; give a new directory (nothing was written)", file=sys.stderr)
        return 2
    made = not args.stage.exists()
    try:
        args.stage.mkdir(parents=True, exist_ok=True)
        notes = unpack(args.out, args.stage)
    except ReadoutError as e:
        # STAGE as it was (absent or empty), so that the same command can be run again
        for child in args.stage.iterdir():
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        if made:
            args.stage.rmdir()
        print(f"readout: {e}", file=sys.stderr)
        return 2
    text = readout(args.stage, notes, check=not args.no_check, real=args.real, group=args.group)
    (args.stage / "readout.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
