"""Write a SYNTHETIC workload directory: traces, kernelslist.g, profile.csv, profiles/, workload.json.

Per invocation, in launch order:

1. build the family's SASS program for the launch parameters;
2. run it in one interpreter batch over (a) the CTAs the block scheduler places on
   SM 0 (round-robin: CTA ids 0, n_sm, 2*n_sm, ...; at most ``max_traced_ctas``),
   recorded up to ``trace_cap`` instructions per warp, and (b) ``sample_ctas``
   CTAs spread uniformly over the whole grid, recorded up to ``sample_cap``;
   execution always runs to the end, so per-warp instruction totals are exact;
3. write the traced part as ``kernel-<id>.traceg`` (header keeps the real grid);
4. hand the sample to the timing model once per arch, carrying each arch's cache
   state from invocation to invocation, with an rng stream per arch.

The whole directory is built in a temp dir next to ``out_dir`` and renamed at the
end, so a crash never leaves a half workload.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from gclsampler.errors import GclError
from gclsampler.synth.families import Launch, build
from gclsampler.synth.program import Memory, run_program
import gclsampler.synth.workloads_hpc  # noqa: F401  (registers the HPC workloads)
from gclsampler.synth.workloads import LOCAL_BASE, SHMEM_BASE, WORKLOADS, Alloc
from gclsampler.trace._text import ragged_rows
from gclsampler.trace.types import KernelHeader, KernelTrace


class SynthConfigError(GclError):
    """Unknown workload, unknown or ill-typed synth knob."""


def workload_names() -> list[str]:
    return sorted(WORKLOADS)


def workload_defaults(name: str) -> dict:
    if name not in WORKLOADS:
        raise SynthConfigError(f"workload: unknown synthetic workload {name!r}; known: {', '.join(workload_names())}")
    return dict(WORKLOADS[name].defaults)


INT_KNOB_MAX = 2**31 - 1


def resolve_params(name: str, params: dict | None) -> dict:
    """Defaults + overrides; an unknown key or a value of the wrong type fails before any work."""
    k = workload_defaults(name)
    for key, val in (params or {}).items():
        if key not in k:
            raise SynthConfigError(f"synth.{key}: unknown knob for workload {name!r}; known: {', '.join(sorted(k))}")
        k[key] = _coerce(name, key, k[key], val)
    for key, val in k.items():
        if isinstance(val, int) and not isinstance(val, bool) and not -INT_KNOB_MAX - 1 <= val <= INT_KNOB_MAX:
            bound = f"at most {INT_KNOB_MAX}" if val > 0 else f"at least {-INT_KNOB_MAX - 1}"
            raise SynthConfigError(f"synth.{key}: must be {bound} (counts and sizes here become 32-bit CUDA "
                                   f"launch dimensions, kernel arguments and trace fields), got {val!r}")
    for key in ("trace_cap", "max_traced_ctas"):
        if int(k[key]) < 0:
            raise SynthConfigError(f"synth.{key}: must be >= 0 (0 = no cap: the complete trace), got {k[key]!r}")
    for key in ("sample_cap", "sample_ctas", "batch_window", "batch_insts"):
        if int(k[key]) < 1:
            raise SynthConfigError(f"synth.{key}: must be >= 1, got {k[key]!r}")
    seen = set()
    for a in k["archs"]:  # a duplicate was recorded in workload.json as given, so the same request read as stale
        if a in seen:
            raise SynthConfigError(f"synth.archs: {a!r} given twice in {list(k['archs'])}; give each arch once")
        seen.add(a)
    if k["compress"] not in ("", "gz", "xz", "zst"):
        raise SynthConfigError(f"synth.compress: one of '', gz, xz, zst; got {k['compress']!r}")
    for key, low in WORKLOADS[name].minimums.items():
        if int(k[key]) < low:
            raise SynthConfigError(f"synth.{key}: must be >= {low} for workload {name!r}, got {k[key]!r}")
    return k


def with_second_run(name: str, params: dict | None, arch: str) -> dict:
    """``params`` whose archs also hold ``<arch>_rerun``, a second run of the arch the plan is
    fitted on. Why: a method that reads measured times (STEM's strata, gcl's share cut) is
    judged on the very jitter it chose from unless it is also scored on a run it did not read;
    the second run costs one more timing pass, not another interpreter pass."""
    from gclsampler.profile import rerun_arch

    out = dict(params or {})
    archs = list(resolve_params(name, out or None)["archs"])
    if rerun_arch(arch) not in archs and _known_arch(_timing()[3], arch):  # else check_request names the arch
        out["archs"] = archs + [rerun_arch(arch)]
    return out


GROUND_TRUTH_VERSION = 3
"""Bumped whenever what the synthesizer's hardware stand-in does changes (the interpreter's issue
rules or the timing model), so a workload synthesized before is synthesized again instead of
scoring samplers against the old ground truth. Recorded in workload.json; absent means 1.

2: a warp issues an instruction whose guard is false on all its lanes (an issue slot, counted
   in inst_executed), as the GPU does; 1 skipped it (lu's inst_executed was 9 % low).
3: on CC 8.x every CTA takes the driver's 1 KB shared-memory reserve, as cuda_occupancy.h counts
   it; 2 counted it only for kernels with shared memory, so on Ampere and Ada a kernel without
   any got the whole 128 KB as L1 instead of 112 KB (16 resident CTAs) or 96 KB (24 on Ada).
   Turing, where plans are fitted, reserves nothing and is unchanged."""


def stale_reason(wdir, name: str, params: dict | None, arch: str, seed: int) -> str | None:
    """Why a directory ``gclsampler.synth`` wrote does not match this request (None = it does,
    or it was not written by the synthesizer: traced or hand-made data is never replaced).

    The workload's own name is compared first. Why: the knobs alone do not tell workloads apart
    (lu and lud both take only ``n``), so ``workloads/lud`` holding lu's traces (two directories
    swapped, a ``gclsampler synth lu --out workloads/lud``) was used as lud, and its plans and
    scores were lu's under lud's name."""
    meta_path = Path(wdir) / "workload.json"
    if not meta_path.exists():
        return None
    meta = _synth_meta(meta_path)
    if meta is None:
        return None
    if "workload" in meta and str(meta["workload"]) != str(name):
        return f"workload differs: {meta['workload']!r} -> {str(name)!r}"
    want = json.loads(json.dumps(resolve_params(name, params)))
    have = meta.get("synth")
    if isinstance(have, dict):
        from gclsampler.synth.workloads import LEGACY_KNOBS

        have = {**{k: v for k, v in LEGACY_KNOBS.items() if k not in have}, **have}
    if have is not None and have != want:
        diff = [f"{key} {have.get(key, '(none)')!r} -> {want.get(key, '(none)')!r}"
                for key in sorted(set(have) | set(want)) if have.get(key) != want.get(key)]
        return "synth knobs differ: " + ", ".join(diff)
    if "seed" in meta and int(meta["seed"]) != int(seed):
        return "seed differs"
    if "arch" in meta and str(meta["arch"]) != str(arch):
        return "arch differs"
    made = _version_of(meta)
    if made != GROUND_TRUTH_VERSION:
        return old_ground_truth(made)
    return None


def _version_of(meta: dict) -> int:
    """A synthesized workload.json's ground-truth version (absent: written before the field, 1)."""
    return meta.get("ground_truth_version", 1)


def old_ground_truth(made: int) -> str:
    """Why a synthesized directory of ground-truth version ``made`` is not this synthesizer's."""
    return f"synthesized by ground-truth model version {made}; this version writes {GROUND_TRUTH_VERSION}"


def ground_truth_version(wdir) -> int | None:
    """The ground-truth version a synthesized directory was made with (1 when workload.json
    predates the field), None for a directory the synthesizer did not write."""
    meta_path = Path(wdir) / "workload.json"
    meta = _synth_meta(meta_path) if meta_path.exists() else None
    return None if meta is None else _version_of(meta)


def _synth_meta(meta_path: Path) -> dict | None:
    """A synthesized workload's workload.json, None when another tool wrote it, or one located
    ``SynthConfigError`` for a file that is broken where the stale check reads it (an edit by
    hand, a copy cut short): a traceback from json or int() named no file."""
    from gclsampler.errors import located
    from gclsampler.workload import read_meta

    try:
        meta = read_meta(meta_path)  # JSON, an object, and the keys every workload.json shares
    except GclError as exc:
        raise SynthConfigError(str(exc)) from None
    if meta.get("generator") != "gclsampler.synth":
        return None
    if "synth" in meta and not isinstance(meta["synth"], dict):
        raise SynthConfigError(located(meta_path, None, "synth", f"expected an object of knobs, found {meta['synth']!r:.60}"))
    for key, default in (("seed", 0), ("ground_truth_version", 1)):
        v = meta.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise SynthConfigError(located(meta_path, None, key, f"expected an integer, found {v!r:.60}"))
    return meta


def foreign_files(wdir) -> list[Path]:
    """Files in a directory the synthesizer wrote that it did not write itself.

    Why: synthesizing a workload again replaces its whole directory, and other commands write
    into it: ``gclsampler simulate --all`` adds ``profiles/accelsim-<config>.csv`` (hours of
    simulation), a user may add ``embeddings.npy`` or an imported profile. Those are refused,
    not deleted. The graph cache (``.graph-cache/``) is derived from the traces and goes with them.
    """
    wdir = Path(wdir)
    meta_path = wdir / "workload.json"
    try:
        meta = _synth_meta(meta_path) if meta_path.is_file() else None
    except (OSError, SynthConfigError):  # broken: nothing says what synth wrote; the marker check decides
        meta = None
    if meta is None:
        return []
    from gclsampler._safe_out import MARKER
    from gclsampler.trace import TraceFormatError, read_kernelslist

    try:
        own = set(read_kernelslist(wdir))
    except (OSError, TraceFormatError):
        own = set()
    own |= {MARKER, "workload.json", "profile.csv", "kernelslist.g", ".graph-cache", "profiles"}
    own_profiles = {f"{a}.csv" for a in meta.get("archs", [])}
    out = [q for q in sorted(wdir.iterdir()) if q.name not in own]
    if (wdir / "profiles").is_dir():
        out += [q for q in sorted((wdir / "profiles").iterdir()) if q.name not in own_profiles]
    return out


def check_replaceable(wdir, how: str = "") -> None:
    """Raise ``OutputError`` naming the first file of ``wdir`` that synthesizing it again
    would delete (``foreign_files``); ``how`` says how the caller can keep the directory as it is."""
    from gclsampler._safe_out import OutputError

    found = foreign_files(wdir)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise OutputError(
            f"{found[0]}: not written by gclsampler synth{more}; synthesizing {Path(wdir).name} again would "
            f"replace {wdir} and delete it: move it out first" + (f", or {how}" if how else ""))


def _coerce(name, key, default, val):
    """``val`` as the knob's type, or ``SynthConfigError``. Why so strict: ``int(64.9)`` is 64 and
    ``bool(5)`` True, so ``workload.synth.nodes=64.9`` synthesized, and recorded, another workload
    than the one asked for (the CLI's strings were already refused)."""
    if isinstance(default, bool):
        if isinstance(val, str):
            if val.lower() in ("true", "1", "yes"):
                return True
            if val.lower() in ("false", "0", "no"):
                return False
        elif isinstance(val, bool) or (isinstance(val, int) and val in (0, 1)):
            return bool(val)
    elif isinstance(default, int):
        if isinstance(val, float) and val.is_integer():
            return int(val)
        if isinstance(val, (int, str)) and not isinstance(val, bool):
            try:
                return int(val)
            except ValueError:
                pass
    elif isinstance(default, float):
        if not isinstance(val, bool):
            try:
                return float(val)
            except (TypeError, ValueError):
                pass
    elif isinstance(default, list):
        if isinstance(val, str):
            val = [v for v in val.strip("[]").replace(" ", "").split(",") if v]
        if isinstance(val, (list, tuple)):
            return [str(v) for v in val]
    elif isinstance(default, str):
        return "" if val is None else str(val)
    raise SynthConfigError(f"synth.{key}: expected {type(default).__name__}, got {val!r} (workload {name!r})")


# ----------------------------------------------------------------------------- timing model binding
def _timing():
    """The ground-truth timing model (timing engineer's ``gclsampler.synth.timing``)."""
    from gclsampler.synth import timing as T
    from gclsampler.synth.arch import ARCHS

    return T.WorkSummary, T.TimingConfig, T.simulate, ARCHS


def _machine(archs: dict, name: str):
    """The machine model ``name`` runs on: ``<arch>_rerun`` is ``<arch>`` profiled a second time
    (``gclsampler.profile.RERUN_SUFFIX``). Only its name differs, and the name seeds the arch's
    jitter draw (``_arch_rng``), so the second run sees the same launches and cache states and
    only the run-to-run jitter is drawn again: what profiling the same program twice gives."""
    from gclsampler.profile import rerun_of

    return archs[name] if name in archs else archs[rerun_of(name) or name]


def _known_arch(archs: dict, name: str) -> bool:
    from gclsampler.profile import rerun_of

    return name in archs or rerun_of(name) in archs


def known_archs_text() -> str:
    """The archs synthesis models, as a refusal of an unknown one lists them."""
    return f"known: {', '.join(sorted(_timing()[3]))}, each also as <arch>_rerun (a second run of it)"


def synthesizes(arch: str) -> bool:
    """Whether synthesis writes a ground truth for ``arch`` (a modelled GPU or its second run):
    callers that check a suite before any work need to tell those from archs that must be on disk."""
    return _known_arch(_timing()[3], arch)


def _arch_rng(seed: int, arch: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(arch.encode())]))


# ----------------------------------------------------------------------------- one invocation
def _cta_coords(ids: np.ndarray, grid) -> np.ndarray:
    gx, gy = grid[0], grid[1]
    return np.stack([ids % gx, (ids // gx) % gy, ids // (gx * gy)], axis=1).astype(np.int64)


def traced_cta_ids(n_ctas: int, n_sm: int, max_ctas: int) -> np.ndarray:
    """CTAs the round-robin block scheduler places on SM 0, in issue order (``max_ctas`` 0: all)."""
    ids = np.arange(0, n_ctas, max(1, n_sm), dtype=np.int64)
    return ids[:max_ctas] if max_ctas else ids


def sample_cta_ids(n_ctas: int, k: int) -> np.ndarray:
    return np.unique(np.linspace(0, n_ctas - 1, min(n_ctas, k)).round().astype(np.int64))


def warp_range(t: KernelTrace, w0: int, w1: int, header: KernelHeader | None = None,
               values: bool = True) -> KernelTrace:
    """Warps ``[w0, w1)`` of a batch's trace (one launch's traced or sampled CTAs) as their own
    trace: one instruction range, copied so the batch's arrays can be freed, opcodes
    renumbered in order of first appearance. Slices, not per-value index arrays: those took
    ~2 KB per instruction of a values-carrying trace."""
    a, b = int(t.warp_ptr[w0]), int(t.warp_ptr[w1])

    def ragged(ptr, data):
        if ptr is None:
            return None, None
        rows_ptr, rows = ragged_rows(ptr, data, a, b)
        return rows_ptr, rows.copy()

    addr_ptr, addrs = ragged(t.addr_ptr, t.addrs)
    value_ptr, vals = ragged(t.value_ptr, t.values) if values else (None, None)
    used, first = np.unique(t.opcode[a:b], return_index=True)
    order = used[np.argsort(first)]
    remap = np.full(len(t.opcode_table), -1, np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return KernelTrace(
        header=t.header if header is None else header, warp_cta=t.warp_cta[w0:w1].copy(),
        warp_id=t.warp_id[w0:w1].copy(), warp_ptr=t.warp_ptr[w0:w1 + 1] - a,
        pc=t.pc[a:b].copy(), mask=t.mask[a:b].copy(), opcode=remap[t.opcode[a:b]],
        opcode_table=tuple(t.opcode_table[i] for i in order), dst=t.dst[a:b].copy(), src=t.src[a:b].copy(),
        mem_width=t.mem_width[a:b].copy(), addr_ptr=addr_ptr, addrs=addrs, line_num=None,
        imm=None if t.imm is None else t.imm[a:b].copy(), value_ptr=value_ptr, values=vals)


def _header(launch: Launch, kernel_id: int, prog) -> KernelHeader:
    return KernelHeader(name=launch.name, kernel_id=kernel_id, grid=tuple(launch.grid), block=tuple(launch.block),
                        shmem=int(prog.shmem), nregs=int(prog.nregs), binary_version=86,
                        shmem_base_addr=SHMEM_BASE, local_mem_base_addr=LOCAL_BASE)


@dataclass
class Interpreted:
    """What one invocation contributes: its trace file content and the timing model's input.
    ``traced`` is None once handed to ``interpret``'s ``emit`` (written and let go)."""

    header: KernelHeader
    traced: KernelTrace | None
    sample: KernelTrace
    sample_ctas: np.ndarray
    insts_scale: float
    nregs: int
    shmem: int


def interpret(launches: list[Launch], first_id: int, mem: Memory, k: dict, n_sm: int,
              emit: Callable[[KernelTrace], None] | None = None) -> list[Interpreted]:
    """Interpret consecutive launches; launches whose programs differ only in integer
    kernel parameters (same layer op in another layer or decode step) run as one
    vectorised batch, each CTA reading its own launch's parameters.

    ``emit(traced)``, when given, receives each launch's trace (its header carries the kernel
    id) as soon as its batch is done, and the result keeps only the header: complete traces of a whole window of launches
    (every conv layer of a network) do not fit in memory together."""
    progs = [build(L) for L in launches]
    groups: dict[tuple, list[int]] = {}
    for j, (L, p) in enumerate(zip(launches, progs)):
        groups.setdefault((L.grid, L.block, p.signature()), []).append(j)
    out: list[Interpreted | None] = [None] * len(launches)
    tcap = int(k["trace_cap"]) or _NO_CAP
    budget = int(k["batch_insts"])
    for members in groups.values():
        # complete traces of long kernels do not fit many launches in one batch: the first
        # launch runs alone, and the largest recorded size seen so far sizes the next chunks
        i, per_launch = 0, 0
        while i < len(members):
            take = 1 if per_launch == 0 else max(1, budget // per_launch)
            chunk = members[i:i + take]
            per_launch = max(per_launch, _interpret_group(launches, progs, chunk, first_id, mem, k, n_sm, tcap, out,
                                                          emit))
            i += len(chunk)
    return out


_NO_CAP = 1 << 62


def _interpret_group(launches, progs, members: list[int], first_id: int, mem: Memory, k: dict, n_sm: int,
                     tcap: int, out: list, emit=None) -> int:
    """One interpreter batch of same-program launches; fills ``out``; returns the largest
    number of warp instructions recorded for one launch's traced CTAs."""
    scap = int(k["sample_cap"])
    L0, p0 = launches[members[0]], progs[members[0]]
    n = L0.n_ctas
    t_ids = traced_cta_ids(n, n_sm, int(k["max_traced_ctas"]))
    s_ids = sample_cta_ids(n, int(k["sample_ctas"]))
    ids = np.concatenate([t_ids, s_ids])
    per = len(ids)
    coords = np.tile(_cta_coords(ids, L0.grid), (len(members), 1))
    traced_cta = np.tile(np.arange(per) < len(t_ids), len(members))  # else a timing-sample CTA
    caps = np.where(traced_cta, tcap, scap)
    params = np.repeat(np.array([progs[j].slots for j in members], np.int64).reshape(len(members), -1), per, axis=0)
    # the timing sample always sees guarded-off instructions (they take an issue slot); the
    # trace records them as mask-0 lines, as an NVBit tracer does, unless trace_guarded_off is off
    res = run_program(p0, _header(L0, first_id + members[0], p0), coords, mem, caps, traced_cta & bool(k["values"]),
                      params, record_off=~traced_cta | bool(k["trace_guarded_off"]))
    wpc = (L0.threads + 31) // 32
    largest = 0
    for g, j in enumerate(members):
        w0 = g * per * wpc
        nt = len(t_ids) * wpc
        hdr = _header(launches[j], first_id + j, progs[j])
        traced = warp_range(res.trace, w0, w0 + nt, header=hdr, values=bool(k["values"]))
        sample = warp_range(res.trace, w0 + nt, w0 + per * wpc, header=hdr, values=False)
        per_cta = res.insts_total[w0 + nt:w0 + per * wpc].reshape(len(s_ids), wpc).sum(axis=1)
        total = float(per_cta.mean()) * n
        largest = max(largest, int(traced.n_insts))
        if emit is not None:
            emit(traced)
            traced = None
        out[j] = Interpreted(hdr, traced, sample, s_ids, total / max(1, sample.n_insts), p0.nregs, p0.shmem)
    return largest


class _TimingChain:
    """Per-arch timing state carried across invocations in launch order (cache, rng)."""

    def __init__(self, archs: list[str], seed: int):
        WorkSummary, TimingConfig, simulate, ARCHS = _timing()
        self.archs, self.simulate = archs, simulate
        self.machines = {a: _machine(ARCHS, a) for a in archs}
        self.cfg = TimingConfig()
        self.rngs = {a: _arch_rng(seed, a) for a in archs}
        self.caches = {a: None for a in archs}

    def run(self, items: list[tuple]) -> dict[str, list[dict]]:
        rows: dict[str, list[dict]] = {a: [] for a in self.archs}
        for i, name, grid, block, nregs, shmem, work in items:
            for a in self.archs:
                metrics, self.caches[a] = self.simulate(self.machines[a], work, self.caches[a], self.rngs[a], self.cfg)
                row = {"invocation": i, "kernel_name": name, "grid": _dim(grid), "block": _dim(block)}
                row.update({kk: float(v) for kk, v in metrics.items()})
                row["nregs"] = nregs
                row["shmem"] = shmem
                rows[a].append(row)
        return rows


_WORKER_CHAIN: _TimingChain | None = None


def _timing_task(archs: list[str], seed: int, items: list[tuple]) -> dict[str, list[dict]]:
    """Runs in the single timing worker process; its chain lives there across tasks."""
    global _WORKER_CHAIN
    if _WORKER_CHAIN is None:
        _WORKER_CHAIN = _TimingChain(archs, seed)
    return _WORKER_CHAIN.run(items)


# ----------------------------------------------------------------------------- workload
def check_request(name: str, params: dict | None, arch: str, seed) -> tuple[dict, list[str]]:
    """The resolved knobs and archs of a ``generate`` call, or the SynthConfigError it would
    raise, without any work: callers check before they create anything (a lock file, a dir)."""
    k = resolve_params(name, params)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SynthConfigError(f"seed: must be a non-negative integer, got {seed!r}")  # SeedSequence's own error names no key
    archs = list(dict.fromkeys(list(k["archs"]) + [arch]))
    known = _timing()[3]
    bad = [a for a in archs if not _known_arch(known, a)]
    if bad:
        raise SynthConfigError(f"synth.archs: unknown arch {bad[0]!r}; {known_archs_text()}")
    return k, archs


def generate(name: str, out_dir, *, params: dict | None = None, arch: str = "ampere", seed: int = 0,
             progress: bool = True, jobs: int = 2) -> Path:
    """Synthesize workload ``name`` into ``out_dir`` (replaced if it exists). Returns the path.

    ``params`` overrides the workload's synth knobs (see ``workload_defaults``);
    ``arch`` is the arch whose ground truth becomes ``profile.csv``. With ``jobs >= 2``
    the timing model runs in one worker process while this one interprets and writes
    traces (same files as ``jobs=1``: the timing chain stays sequential).
    """
    k, archs = check_request(name, params, arch, seed)
    check_replaceable(out_dir)
    WorkSummary, _, _, ARCHS = _timing()
    n_sm = int(getattr(_machine(ARCHS, arch), "sm_count", 46))
    spec = WORKLOADS[name]
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(name.encode())]))
    mem = Memory()
    launches = spec.launches({**k, "n_sm": n_sm}, Alloc(), mem, rng)

    from gclsampler.trace import write_kernel, write_kernelslist
    try:
        from gclsampler.profile import write_profile
    except ImportError:  # pragma: no cover - profile stage always present in the tree
        write_profile = None

    from gclsampler._safe_out import replace_dir

    out_dir = Path(out_dir)
    t0 = time.time()
    # refuses a directory synth did not write (never deleted); an error or Ctrl-C removes the temp dir,
    # and an OSError about it names out_dir
    with replace_dir(out_dir, "synth") as tmp:
        (tmp / "profiles").mkdir()
        suffix = ".traceg" + (f".{k['compress']}" if k["compress"] else "")
        rows = {a: [] for a in archs}
        files = []
        it = range(len(launches))
        if progress and sys.stderr.isatty() and not os.environ.get("CI"):
            from tqdm import tqdm
            it = tqdm(it, desc=f"synth {name}", unit="kernel", file=sys.stderr)
        window = int(k["batch_window"])
        from gclsampler._interrupt import process_pool
        with (process_pool(1, "spawn") if jobs >= 2 else contextlib.nullcontext()) as pool:
            chain = None if pool else _TimingChain(archs, seed)
            futures = []
            done: list[Interpreted] = []
            items: list[tuple] = []

            def trace_file(kernel_id: int) -> str:
                return f"kernel-{kernel_id}{suffix}"

            def emit(traced: KernelTrace) -> None:
                write_kernel(traced, tmp / trace_file(traced.header.kernel_id), values=bool(k["values"]))

            for i in it:
                if i % window == 0:
                    done = interpret(launches[i:i + window], i + 1, mem, k, n_sm, emit=emit)
                L, r = launches[i], done[i % window]
                files.append(trace_file(i + 1))  # written by emit
                work = WorkSummary(header=r.header, sample=r.sample, sample_cta_ids=r.sample_ctas,
                                   insts_scale=r.insts_scale)
                items.append((i, L.name, L.grid, L.block, r.nregs, r.shmem, work))
                if len(items) == window or i == len(launches) - 1:
                    if pool is None:
                        futures.append(chain.run(items))
                    else:
                        while sum(not f.done() for f in futures) >= 2:  # bound queued samples
                            time.sleep(0.05)
                        futures.append(pool.submit(_timing_task, archs, int(seed), items))
                    items = []
            for f in futures:
                part = f if pool is None else f.result()
                for a in archs:
                    rows[a].extend(part[a])
        write_kernelslist(tmp, files)
        import pandas as pd
        for a in archs:
            df = pd.DataFrame(rows[a])
            if write_profile is not None:
                write_profile(df, tmp / "profiles" / f"{a}.csv")
            else:
                df.to_csv(tmp / "profiles" / f"{a}.csv", index=False)
        shutil.copyfile(tmp / "profiles" / f"{arch}.csv", tmp / "profile.csv")
        meta = {
            "workload": name, "arch": arch, "synthetic": True, "seed": int(seed), "archs": archs,
            "generator": "gclsampler.synth", "n_invocations": len(launches),
            "synth": {kk: v for kk, v in k.items()},
            "timing_model": "gclsampler.synth.timing (analytical, SYNTHETIC)",
            "ground_truth_version": GROUND_TRUTH_VERSION,
            "note": "SYNTHETIC workload: traces from a SASS-level interpreter, ground truth from an analytical "
                    "timing model; not hardware measurements.",
        }
        (tmp / "workload.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    if progress:
        print(f"synth {name}: {len(launches)} invocations in {time.time() - t0:.1f}s -> {out_dir} (SYNTHETIC)",
              file=sys.stderr)
    return out_dir


def _dim(d) -> str:
    return f"({d[0]},{d[1]},{d[2]})"


def plan_launches(name: str, params: dict | None = None, seed: int = 0, n_sm: int = 80) -> list[Launch]:
    """The launch list alone (no interpretation), e.g. to count invocations."""
    k = resolve_params(name, params)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(name.encode())]))
    return WORKLOADS[name].launches({**k, "n_sm": n_sm}, Alloc(), Memory(), rng)
