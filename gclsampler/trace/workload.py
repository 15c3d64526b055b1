"""Workload-directory level trace operations: listing, iteration, grouping, export.

A workload directory lists its trace files in launch order in ``kernelslist.g``
(Accel-Sim's name; ``Memcpy...`` lines are kept but are not invocations). The
invocation index is the trace's ``-kernel id`` minus one, so a directory holding
only some invocations (an exported sample) keeps the original ids.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from gclsampler.errors import located
from gclsampler.trace.reader import TraceFormatError, open_bytes, read_header, read_kernel, strip_compression
from gclsampler.trace.types import NO_REG, InvocationInfo, KernelHeader, KernelTrace
from gclsampler.trace.writer import render, render_chunks, write_bytes_atomic, write_chunks_atomic

KERNELSLIST = "kernelslist.g"
ACCELSIM_MAX_DST = 1
ACCELSIM_MAX_SRC = 4
_TRACE_RE = re.compile(r"^kernel-(\d+)\.traceg?(\.gz|\.xz|\.zst)?$")


def _progress(it, total: int, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return it
    disable = bool(os.environ.get("CI")) or not os.isatty(2)
    return tqdm(it, total=total, desc=desc, disable=disable, file=None)


def kernelslist_path(root: Path) -> Path | None:
    """The workload's list of traces: ``kernelslist.g``, else the raw tracer's ``kernelslist``.

    One rule for every reader (trace commands, ``validate``), so they never disagree on
    which list a directory with both holds."""
    for name in (KERNELSLIST, "kernelslist"):
        if (root / name).exists():
            return root / name
    return None


def no_traces(root: str | os.PathLike) -> str | None:
    """``"<root>: no kernelslist.g and no kernel-<N>.traceg files"`` when ``root`` holds no traces
    (a profile-only workload), else None: the one test behind every "this method needs the
    traces" reason.

    Why the files count as well as the list: ``trace_files`` reads a directory without a list in
    ``N`` order, and so did validate and the trace commands, while photon, evaluate and train.py
    took such a directory for a profile alone."""
    root = Path(root)
    if kernelslist_path(root) is not None:
        return None
    try:
        if any(_TRACE_RE.match(p.name) for p in root.iterdir()):
            return None
    except OSError:
        pass  # the reader that follows names it
    return f"{root}: no kernelslist.g and no kernel-<N>.traceg files"


def _kernelslist_entries(root: str | os.PathLike, p: Path | None = None) -> tuple[Path, list[tuple[int, str]]]:
    """(path, [(line, entry)]) of ``kernelslist.g`` (or the raw tracer's ``kernelslist``; or the
    list ``p``), blank lines dropped.

    Entries are plain names in the directory: ``../x`` or ``/x`` made ``trace group``
    read and write files outside its directories, and an entry naming the list itself
    was read as a trace.
    """
    root = Path(root)
    p = kernelslist_path(root) if p is None else p
    if p is None:
        raise TraceFormatError(root, None, "kernelslist.g", "workload directory has no kernelslist.g")
    out = []
    from gclsampler._safe_out import special_input_problem

    problem = special_input_problem(p)
    if problem:
        raise TraceFormatError(p, None, "kernelslist", problem)
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a BOM (Windows editors) is not part of the first name
    except UnicodeDecodeError as exc:
        raise TraceFormatError(p, raw[:exc.start].count(b"\n") + 1, "kernelslist", "not UTF-8 text") from None
    for i, s, problem in kernelslist_lines(text):
        if problem:
            raise TraceFormatError(p, i, "kernelslist", problem)
        out.append((i, s))
    return p, out


def kernelslist_lines(text: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, stripped entry, ``kernelslist_entry_problem`` of it) for every non-blank line.

    One walk for the trace commands, which stop at the first problem, and for
    ``gclsampler validate``, which lists them all.
    """
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s:
            yield i, s, kernelslist_entry_problem(s)


_MEMCPY = re.compile(r"Memcpy[A-Za-z]+,0[xX][0-9a-fA-F]{1,16},[0-9]{1,20}", re.ASCII)
"""A copy line as the NVBit tracer writes it (``MemcpyHtoD,0x00007f7f99e00000,400004``)."""


def kernelslist_entry_problem(entry: str) -> str | None:
    """Why a stripped kernelslist line cannot be an entry, or None (``gclsampler validate`` says the same)."""
    if not (entry.startswith("Memcpy") or entry.startswith("kernel")):
        return f"neither a trace file name nor a Memcpy line: {entry[:80]!r}"
    if entry.startswith("Memcpy"):
        if _MEMCPY.fullmatch(entry):
            return None
        return (f"bad Memcpy line {entry[:80]!r} (the tracer writes MemcpyHtoD,0x<hex address>,<bytes>, which "
                "Accel-Sim reads with fixed-width integers)")
    from gclsampler._safe_out import is_plain_name

    if not is_plain_name(entry):
        return f"{entry!r} is not a plain file name (trace files are listed by name, in the kernelslist's own directory)"
    if entry in (KERNELSLIST, "kernelslist"):
        return f"lists {entry!r}, the kernelslist itself, not a trace file"
    return None


def read_kernelslist(root: str | os.PathLike) -> list[str]:
    """Lines of ``kernelslist.g`` (or the raw tracer's ``kernelslist``), blank lines dropped."""
    return [s for _, s in _kernelslist_entries(root)[1]]


def _refuse_repeats(kl: Path, entries: list[tuple[int, str]], out_name=None) -> None:
    """Refuse a trace listed twice, or two traces that ``out_name`` maps to one output file.

    Either would count one launch twice or let one output overwrite the other.
    """
    first: dict[str, tuple[int, str]] = {}
    for i, s in entries:
        if s.startswith("Memcpy"):
            continue
        problem = repeat_problem(first, i, s, None if out_name is None else out_name(s))
        if problem:
            raise TraceFormatError(kl, i, "kernelslist", problem)


def repeat_problem(first: dict[str, tuple[int, str]], line: int, entry: str, key: str | None = None) -> str | None:
    """Why ``entry`` on ``line`` repeats an earlier one (the same ``key``, by default the entry
    itself), or None after recording it in ``first`` ({key: (line, entry)}); ``validate`` says the same."""
    k = entry if key is None else key
    if k in first:
        j, t = first[k]
        return (f"{entry!r} is listed again (first on line {j})" if t == entry
                else f"{entry!r} and {t!r} (line {j}) would both become {k!r}")
    first[k] = (line, entry)
    return None


def listed_file_problem(root: Path, entry: str) -> str | None:
    """Why a kernelslist.g entry names no trace file to read, or None (what the error says after
    the list's line): a directory was called missing, so a user looked for a file that is there."""
    p = root / entry
    if p.is_file():
        return None
    if not p.exists():
        return f"lists {entry!r}, which does not exist"
    return f"lists {entry!r}, which is {'a directory' if p.is_dir() else 'a special file (FIFO, device, socket)'}, not a trace file"


def _refuse_missing(root: Path, kl: Path, entries: Iterable[tuple[int, str]]) -> None:
    """Name the list's line of a trace that is not there, before any trace is read."""
    for i, s in entries:
        problem = None if s.startswith("Memcpy") else listed_file_problem(root, s)
        if problem:
            raise TraceFormatError(kl, i, "kernelslist", problem)


def trace_files(root: str | os.PathLike) -> list[str]:
    """Trace file names (relative) of a workload directory in launch order."""
    root = Path(root)
    if not root.is_dir():
        raise TraceFormatError(root, None, None, "not a directory")
    listed = kernelslist_path(root) is not None
    if listed:
        kl, entries = _kernelslist_entries(root)
        entries = [(i, s) for i, s in entries if not s.startswith("Memcpy")]
        _refuse_repeats(kl, entries)
        _refuse_missing(root, kl, entries)
        names = [s for _, s in entries]
    else:
        found = sorted((int(m.group(1)), p.name) for p in root.iterdir() if (m := _TRACE_RE.match(p.name)))
        for (a, x), (b, y) in zip(found, found[1:]):
            if a == b:  # kernel-1.traceg and kernel-1.traceg.gz: one launch, read twice
                raise TraceFormatError(root, None, "kernelslist", f"{x} and {y} are both kernel {a}; list the "
                                       "traces to use in kernelslist.g")
        names = [n for _, n in found]
    if not names:
        if not listed and (root / "profile.csv").exists():
            raise TraceFormatError(root, None, "kernelslist.g", "missing, and no kernel-<N>.traceg files: a "
                                   "profile-only workload (methods that need no traces run on it: "
                                   "`gclsampler sample --list`)")
        raise TraceFormatError(root, None, "kernelslist", "empty workload: no kernel traces")
    return names


def unlisted_traces(root: str | os.PathLike, listed: Iterable[str]) -> list[str]:
    """``kernel-N.trace[g]`` files in ``root`` that its list of traces leaves out, by N.

    Every reader takes the list as the workload, so such a file is silently not part of it: a
    line lost from the list, or a trace copied in later. Only files of the listed kind count
    (grouped ``.traceg`` beside grouped ones, raw ``.trace`` beside raw ones), so raw traces
    kept next to their grouped copies are not reported.
    """
    listed = set(listed)
    kinds = {_TRACE_RE.match(e).group(0).split(".")[1] for e in listed if _TRACE_RE.match(e)}
    found = []
    for q in Path(root).iterdir():
        m = _TRACE_RE.match(q.name)
        if m and q.name not in listed and q.name.split(".")[1] in kinds and q.is_file():
            found.append((int(m.group(1)), q.name))
    return [n for _, n in sorted(found)]


def _open_warps(t: KernelTrace) -> np.ndarray:
    """Per warp: its trace does not end with an EXIT, or holds no instruction at all."""
    lens = np.diff(t.warp_ptr)
    is_open = lens == 0
    if t.n_insts and t.opcode_table:
        base = np.array([op.split(".")[0] for op in t.opcode_table])
        full = np.flatnonzero(lens > 0)
        is_open[full] = base[t.opcode[t.warp_ptr[1:][full] - 1]] != "EXIT"
    return is_open


def warps_without_exit(t: KernelTrace) -> int:
    """Warps whose trace does not end with an EXIT: a warp traced to its end finishes with one,
    so these hold a prefix only (an instruction cap, a trace that stopped early, or none of
    the warp's instructions: an empty warp)."""
    return int(_open_warps(t).sum())


def ids_not_one_to_n(invocations: Iterable[int], root: str | os.PathLike, who: str) -> str | None:
    """Why trace ids that do not run 1..N cannot serve ``who`` (located at the workload's list), or
    None. Invocation i is the trace of ``-kernel id`` i + 1, while a plan's or a profile's invocation
    i is the list's i-th launch: with ids 2..N+1 (a trace that began after the first launch) the two
    disagree by one, silently."""
    ids = sorted(invocations)
    if ids == list(range(len(ids))):
        return None
    return located(kernelslist_path(Path(root)) or root, None, "-kernel id",
                   f"trace ids run {ids[0] + 1}..{ids[-1] + 1} over {len(ids)} traces; {who} "
                   "needs ids 1..N (invocation = id - 1, its position in the list)")


def launch_order_problem(prev: tuple[str, int], name: str, kernel_id: int) -> str | None:
    """Why ``name`` may not follow ``prev`` (its file name and ``-kernel id``) in a trace list, or None.

    Why: invocation i is the list's i-th trace and profile.csv's i-th row; a list out of
    launch order pairs each trace with another launch's row, and Accel-Sim runs the list in order.
    """
    if kernel_id < prev[1]:
        return (f"{name} (-kernel id {kernel_id}) is listed after {prev[0]} (-kernel id {prev[1]}); "
                "list traces in launch order")
    return None


def _headers_checked(root: Path, names: Iterable[str], listing: Path | None = None) -> list[tuple[Path, KernelHeader]]:
    """Each trace's header, refusing a ``-kernel id`` seen before (one invocation twice is
    counted twice, or exported over itself) and a list out of launch order (``validate``'s rules)."""
    first: dict[int, str] = {}
    out = []
    for name in names:
        p = root / name
        header, _ = read_header(p)
        if header.kernel_id in first:
            raise TraceFormatError(p, None, "-kernel id",
                                   f"{header.kernel_id} is also the id of {first[header.kernel_id]}")
        if out:
            problem = launch_order_problem((out[-1][0].name, out[-1][1].kernel_id), name, header.kernel_id)
            if problem:
                raise TraceFormatError(listing or kernelslist_path(root) or root, None, "kernelslist", problem)
        first[header.kernel_id] = p.name
        out.append((p, header))
    return out


def list_invocations(root: str | os.PathLike) -> list[InvocationInfo]:
    """Invocations in launch order with header metadata; bodies are not parsed."""
    root = Path(root)
    return [InvocationInfo(invocation=header.invocation, path=p.name, header=header, n_bytes=p.stat().st_size)
            for p, header in _headers_checked(root, trace_files(root))]


def iter_kernels(root: str | os.PathLike, invocations: Sequence[int] | None = None) -> Iterator[KernelTrace]:
    """Parse kernels one at a time (memory bounded by one kernel), in launch order."""
    infos = list_invocations(root)
    if invocations is not None:
        want = set(int(i) for i in invocations)
        infos = [i for i in infos if i.invocation in want]
    for info in _progress(infos, len(infos), "traces"):
        yield read_kernel(Path(root) / info.path)


_KERNEL_ID_LINE = re.compile(rb"^-kernel id = [^\n]*\n?", re.M)


def launch_text_digest(text: bytes) -> str:
    """BLAKE2b (16 bytes, hex) of a trace's decompressed text without its ``-kernel id`` line.

    Why: every launch's header names its own kernel id, so the files of two launches that ran
    the same code on the same data differ in that line alone, and whatever is derived from the
    rest (a graph, a BBV) is the same for both. The default SYNTHETIC phi2 has 1024 launches
    and 422 such texts."""
    import hashlib

    return hashlib.blake2b(_KERNEL_ID_LINE.sub(b"", text, count=1), digest_size=16).hexdigest()


def iter_distinct_kernels(root: str | os.PathLike) -> Iterator[tuple[str, KernelTrace | None]]:
    """Every launch in order as (``launch_text_digest``, trace), the trace parsed only the first
    time its text appears (None after): for consumers that derive the same thing from the same
    text and would otherwise parse each launch (parsing is most of a trace's cost)."""
    seen: set[str] = set()
    infos = list_invocations(root)
    for info in _progress(infos, len(infos), "traces"):
        path = Path(root) / info.path
        text = open_bytes(path)
        key = launch_text_digest(text)
        if key in seen:
            yield key, None
            continue
        seen.add(key)
        yield key, read_kernel(path, data=text)


def write_kernelslist(root: str | os.PathLike, file_names: Sequence[str]) -> Path:
    """``kernelslist.g`` with one trace name (or ``Memcpy...`` line) per line, atomically."""
    p = Path(root) / KERNELSLIST
    write_bytes_atomic(p, "".join(f"{n}\n" for n in file_names).encode())
    return p


def _strip_for_accelsim(t: KernelTrace) -> KernelTrace:
    """Drop non-GPR operands (Accel-Sim's parser reads only ``R<n>``) and check operand limits."""
    import dataclasses

    def keep_r(a):
        r = np.where((a >= 0) & (a < 256), a, NO_REG).astype(np.int16)
        # compact left, keep order
        order = np.argsort(r == NO_REG, axis=1, kind="stable")
        r = np.take_along_axis(r, order, axis=1)
        w = int((r != NO_REG).sum(axis=1).max(initial=0))
        return np.ascontiguousarray(r[:, :w])

    dst, src = keep_r(t.dst), keep_r(t.src)
    return dataclasses.replace(t, dst=dst, src=src, value_ptr=None, values=None)


def _instruction_at(t: KernelTrace, i: int) -> str:
    """``instruction j of warp w in CTA (x, y, z) (PC pc OPCODE)`` for instruction ``i`` of ``t``."""
    w = int(np.searchsorted(t.warp_ptr, i, side="right") - 1)
    return (f"instruction {i - int(t.warp_ptr[w])} of warp {int(t.warp_id[w])} in CTA "
            f"{tuple(int(x) for x in t.warp_cta[w])} (PC {int(t.pc[i]):04x} {t.opcode_table[int(t.opcode[i])]})")


def _check_limits(t: KernelTrace, path: str) -> None:
    for arr, lim, what in ((t.dst, ACCELSIM_MAX_DST, "destination"), (t.src, ACCELSIM_MAX_SRC, "source")):
        n = (arr != NO_REG).sum(axis=1)
        bad = np.flatnonzero(n > lim)
        if bad.size:
            i = int(bad[0])
            raise TraceFormatError(
                path, None, "reg_dests" if what == "destination" else "reg_srcs",
                f"{_instruction_at(t, i)} has {int(n[i])} {what} registers; Accel-Sim accepts at most {lim}")


ACCELSIM_MAX_PC = 2**32 - 1
"""Accel-Sim reads an instruction's PC into a 32-bit ``unsigned`` (``inst_trace_t::m_pc``)."""


def accelsim_tracer_version(t: KernelTrace) -> int:
    """The ``-accelsim tracer version`` an export of ``t`` states: its own, raised to the first
    version whose line layout is the one the export writes.

    Why: the export does not copy lines, it writes every one anew in the layout of tracer v3+
    (PC first, address modes 0/1/2), with a line number when ``-enable lineinfo = 1`` and an
    immediate when ``t`` has them, which tracers write from v4. Accel-Sim ignores the
    ``#traces format`` line and takes the layout from the version alone: below 3 it reads each
    line's first four fields as the CTA's x y z and warp id (``inst_trace_t::parse_from_string``),
    so a copied version 0-2 made it read the PC and mask as a CTA id and fail the rest of every
    line without a word; and gclsampler's reader, without a format line, takes an immediate only
    from v4. The input's version is no reason to refuse: gclsampler has already read its lines
    as v3+ ones (a pre-v3 line's four extra fields do not parse), so only the number was wrong,
    and the version the lines were written in is the one that can be true. A higher version
    (a real tracer's 5) is kept.
    """
    lowest = 4 if t.imm is not None or t.line_num is not None else 3
    return max(int(t.header.tracer_version), lowest)


def _check_pcs(t: KernelTrace, path: str) -> None:
    """Refuse a PC Accel-Sim cannot read, before ``_close_truncated_warps`` adds PC + 16.

    Why: the reader takes PCs up to 2^63 - 1 (a tracer that writes absolute addresses), but
    Accel-Sim extracts the PC into a 32-bit ``unsigned``: a larger one fails its line's stream,
    and every later field of the line (mask, registers, addresses) is left unread, silently.
    An open warp's appended EXIT at PC + 16 must fit as well; at 2^63 - 1 it wrapped to a
    negative PC that the export wrote and gclsampler's own reader then refused.
    """
    if not t.n_insts:
        return
    bad = np.flatnonzero((t.pc < 0) | (t.pc > ACCELSIM_MAX_PC))
    if bad.size:
        i = int(bad[0])
        raise TraceFormatError(path, None, "PC", f"{_instruction_at(t, i)}: the PC is past Accel-Sim's 32-bit PC "
                               f"(at most {ACCELSIM_MAX_PC:x}; its traces hold offsets in the function)")
    lens = np.diff(t.warp_ptr)
    last = t.warp_ptr[1:][_open_warps(t) & (lens > 0)] - 1
    bad = last[t.pc[last] > ACCELSIM_MAX_PC - 16]
    if bad.size:
        i = int(bad[0])
        raise TraceFormatError(path, None, "PC", f"{_instruction_at(t, i)} ends its warp without EXIT, and the EXIT "
                               f"the export appends at PC + 16 would be past Accel-Sim's 32-bit PC "
                               f"(at most {ACCELSIM_MAX_PC:x})")


def _close_truncated_warps(t: KernelTrace) -> KernelTrace:
    """Append an ``EXIT`` to every warp whose trace stops before one.

    Traces capped at N instructions per warp (GCL_MAX_INSTS_PER_WARP, synth's
    ``trace_cap``) end mid-program. Accel-Sim retires a warp only when it executes
    EXIT; a warp whose trace runs out first makes the simulator fetch past the end
    and crash (segfault in the scheduler). The EXIT takes the warp's last PC + 16, and as
    its mask the lanes of the warp's threads that have not executed an EXIT: Accel-Sim
    retires a warp once each of those lanes has, once (``shd_warp_t::set_completed``). The
    last traced mask is predicated (a divergent branch, a guard false on every lane), so as
    the EXIT's mask it left lanes that never exit and the warp ran out of trace all the same.
    A warp listed with ``insts = 0`` (the reader takes it) tripped Accel-Sim's assertion on
    an empty warp; it gets an EXIT of all its threads' lanes at the kernel's first PC, so it
    retires at once, as a warp cut before its first instruction.
    """
    import dataclasses

    is_open = _open_warps(t)
    if not is_open.any():
        return t
    lens = np.diff(t.warp_ptr)
    ow = np.flatnonzero(is_open)
    at = t.warp_ptr[1:][ow]  # insert at each open warp's end (its start, when it is empty)
    base = np.array([op.split(".")[0] for op in t.opcode_table]) if t.opcode_table else np.zeros(0, str)
    # lanes still to exit: the warp's threads (the last warp of a CTA may hold fewer than 32)
    # less the lanes of its EXITs so far
    is_exit = base[t.opcode] == "EXIT" if t.n_insts else np.zeros(0, bool)
    exited = np.zeros(t.n_warps, dtype=np.uint64)
    np.bitwise_or.at(exited, np.repeat(np.arange(t.n_warps), lens)[is_exit], t.mask[is_exit].astype(np.uint64))
    threads = np.clip(t.header.threads_per_cta - 32 * t.warp_id[ow].astype(np.int64), 0, 32)
    lanes = (np.uint64(1) << threads.astype(np.uint64)) - np.uint64(1)
    exit_mask = (lanes & ~exited[ow]).astype(t.mask.dtype)
    last = np.maximum(at - 1, 0)
    entry = t.pc.min() if t.n_insts else 0
    exit_pc = np.where(lens[ow] > 0, t.pc[last] + 16 if t.n_insts else 0, entry).astype(t.pc.dtype)
    table = t.opcode_table
    if "EXIT" not in table:
        table = table + ("EXIT",)
    exit_id = table.index("EXIT")

    def ins(a, v):
        return np.insert(a, at, v, axis=0)

    n_addr = np.diff(t.addr_ptr)
    addr_ptr = np.zeros(t.n_insts + ow.size + 1, dtype=t.addr_ptr.dtype)
    np.cumsum(ins(n_addr, 0), out=addr_ptr[1:])
    warp_ptr = t.warp_ptr.copy()
    warp_ptr[1:] += np.cumsum(is_open)  # EXITs added up to each warp's end
    line_num = None
    if t.line_num is not None:
        line_num = ins(t.line_num, np.where(lens[ow] > 0, t.line_num[last] if t.n_insts else 0, 0))
    return dataclasses.replace(
        t, warp_ptr=warp_ptr, pc=ins(t.pc, exit_pc), mask=ins(t.mask, exit_mask),
        opcode=ins(t.opcode, exit_id), opcode_table=table, dst=ins(t.dst, NO_REG), src=ins(t.src, NO_REG),
        mem_width=ins(t.mem_width, 0), addr_ptr=addr_ptr, line_num=line_num,
        imm=None if t.imm is None else ins(t.imm, 0), value_ptr=None, values=None)


def _add_missing_warps(t: KernelTrace) -> KernelTrace:
    """``t`` with an empty warp for every warp of a traced CTA that its trace does not list.

    Why: Accel-Sim builds every warp its block dimension gives a CTA and asserts on one with no
    trace (``warp_traces.size() > 0``), so a CTA listing fewer warps (a trace cut short inside its
    last CTA, a hand-made one) stopped the simulator; as empty warps they get an EXIT below."""
    import dataclasses

    wpc = max(1, -(-int(t.header.threads_per_cta) // 32))
    if t.n_warps == 0:
        return t
    cta = t.warp_cta
    starts = np.flatnonzero(np.r_[True, np.any(cta[1:] != cta[:-1], axis=1)])
    ends = np.r_[starts[1:], t.n_warps]
    if ((ends - starts) >= wpc).all():
        return t
    at, ids, rows = [], [], []
    for a, b in zip(starts, ends):  # per CTA, and only where warps are missing: no per-instruction work
        if b - a >= wpc:
            continue
        missing = np.setdiff1d(np.arange(wpc), t.warp_id[a:b])
        at += [b] * missing.size
        ids += missing.tolist()
        rows += [a] * missing.size
    if not at:
        return t
    at_arr = np.asarray(at, dtype=np.int64)
    return dataclasses.replace(
        t, warp_cta=np.insert(t.warp_cta, at_arr, t.warp_cta[np.asarray(rows)], axis=0),
        warp_id=np.insert(t.warp_id, at_arr, np.asarray(ids, dtype=t.warp_id.dtype)),
        warp_ptr=np.insert(t.warp_ptr, at_arr + 1, t.warp_ptr[at_arr]))


def export_facts(t: KernelTrace) -> dict:
    """What exporting ``t`` for Accel-Sim changes: traced CTAs against the launch grid, warps cut by a cap.

    Why: a trace that keeps only some CTAs gets its grid rewritten to those CTAs, and a warp
    capped at N instructions gets an EXIT appended; both simulate a fraction of the real
    kernel (capped synthetic traces ran at 24 % of the complete traces' cycles), so every
    command that exports says so instead of silently simulating less.
    """
    cta = t.warp_cta
    n_tb = int(np.unique(cta, axis=0).shape[0]) if cta.shape[0] else 0
    full = _add_missing_warps(t)  # a warp its CTA does not list is exported as one cut before it began
    return {"ctas_traced": n_tb, "ctas_grid": int(t.header.n_ctas), "warps": int(full.n_warps),
            "warps_cut": warps_without_exit(full)}


def describe_export(facts: Sequence[dict]) -> list[str]:
    """One or two sentences summarising ``export_facts`` over the exported traces (empty if complete)."""
    lines = []
    partial = [f for f in facts if f["ctas_traced"] != f["ctas_grid"]]
    if partial:
        traced = sum(f["ctas_traced"] for f in partial)
        grid = sum(f["ctas_grid"] for f in partial)
        lines.append(f"{len(partial)} of {len(facts)} traces hold only some CTAs of their launch ({traced} of {grid} "
                     "CTAs in all, e.g. the CTAs of one SM): their grid is rewritten to the traced CTAs")
    cut = [f for f in facts if f["warps_cut"]]
    if cut:
        lines.append(f"{len(cut)} of {len(facts)} traces have warps that end without EXIT, cut short by an "
                     f"instruction cap or a trace that stopped early ({sum(f['warps_cut'] for f in cut)} of "
                     f"{sum(f['warps'] for f in cut)} warps; an EXIT is appended): they simulate only the traced prefix")
    from gclsampler.trace.ampere import describe

    return lines + describe(list(facts))


def accelsim_text(t: KernelTrace) -> bytes:
    """Plain Accel-Sim trace text; partial CTA sets get a rewritten 1-D grid, warps cut off by
    an instruction cap get their EXIT, the header the tracer version of the lines written
    (``accelsim_tracer_version``)."""
    import dataclasses

    if t.n_warps == 0:  # a real launch none of whose CTAs ran on the traced SM (reader.py, complete_header)
        raise TraceFormatError(t.source or t.header.name, None, "thread block",
                               "none (no CTA of this launch was traced; Accel-Sim cannot simulate an empty kernel: "
                               f"trace launch {t.header.kernel_id} again with the tool's GCL_SMALL_GRID=cta0, or whole "
                               f"with GCL_TRACE_SM=-1 GCL_KERNEL_BEGIN={t.header.kernel_id} "
                               f"GCL_KERNEL_END={t.header.kernel_id}, tracer/README.md)")
    t = _add_missing_warps(_strip_for_accelsim(t))
    _check_pcs(t, t.source or t.header.name)
    t = _close_truncated_warps(t)
    _check_limits(t, t.source or t.header.name)
    cta = t.warp_cta
    if cta.shape[0]:
        new = np.r_[True, np.any(cta[1:] != cta[:-1], axis=1)]
        n_tb = int(new.sum())
    else:
        new = np.zeros(0, bool)
        n_tb = 0
    header = dataclasses.replace(t.header, tracer_version=accelsim_tracer_version(t))
    coords = None
    if n_tb != header.n_ctas:
        # Accel-Sim launches grid-many CTAs and reads one #BEGIN_TB section per CTA.
        header = dataclasses.replace(header, grid=(max(n_tb, 1), 1, 1))
        lin = np.cumsum(new) - 1
        coords = np.stack([lin, np.zeros_like(lin), np.zeros_like(lin)], axis=1)
    return render(t, values=False, header=header, cta_coords=coords)


def accelsim_export(t: KernelTrace, *, as_ampere: bool = False) -> tuple[bytes, dict]:
    """The Accel-Sim text of ``t`` and its ``export_facts``; ``as_ampere`` runs an sm_89/sm_90
    trace as Ampere (``gclsampler.trace.ampere``), and the facts then say from which version
    and which opcodes it renamed."""
    facts = export_facts(t)
    if as_ampere:
        from gclsampler.trace.ampere import as_ampere as rewrite

        version = t.header.binary_version
        t, renamed = rewrite(t)
        if t.header.binary_version != version:
            facts.update(as_ampere_from=version, renamed=renamed)
    return accelsim_text(t), facts


def export_accelsim(src_dir: str | os.PathLike, dst_dir: str | os.PathLike,
                    invocations: Sequence[int] | None = None, facts: list | None = None,
                    infos: Sequence[InvocationInfo] | None = None, as_ampere: bool = False) -> list[Path]:
    """Write plain Accel-Sim traces (+ kernelslist.g) for some or all invocations.

    File names stay ``kernel-<id>.traceg`` (uncompressed: Accel-Sim reads
    ``.traceg`` and ``.xz`` only) so results map back to invocation ids.
    ``facts``, when given, receives ``export_facts`` of each trace (see ``describe_export``).
    ``infos``: ``list_invocations(src_dir)`` when the caller has it already. Why: it opens
    every trace for its header, which on a workload of 10^4 launches costs seconds, while a
    plan exports a few dozen of them. ``as_ampere``: see ``accelsim_export``.
    """
    src_dir, dst_dir = Path(src_dir), Path(dst_dir)
    infos = list_invocations(src_dir) if infos is None else list(infos)
    if invocations is not None:
        want = sorted(set(int(i) for i in invocations))
        have = {i.invocation for i in infos}
        missing = [i for i in want if i not in have]
        if missing:
            raise TraceFormatError(src_dir, None, "invocations",
                                   f"not in this workload: {missing[:10]}")
        ws = set(want)
        infos = [i for i in infos if i.invocation in ws]
    dst_dir.mkdir(parents=True, exist_ok=True)
    names, written = [], []
    facts = [] if facts is None else facts
    first = len(facts)  # this export's facts: AS_AMPERE.txt below says what they say
    for info in _progress(infos, len(infos), "export"):
        name = f"kernel-{info.header.kernel_id}.traceg"
        text, fact = accelsim_export(read_kernel(src_dir / info.path), as_ampere=as_ampere)
        facts.append({"invocation": info.invocation, **fact})
        write_bytes_atomic(dst_dir / name, text)
        names.append(name)
        written.append(dst_dir / name)
    if invocations is None and kernelslist_path(src_dir) is not None:
        # a whole workload keeps its Memcpy lines where they were: Accel-Sim models those
        # copies (into L2 with -gpgpu_perf_sim_memcpy); a sample of launches has no order to keep
        exported = {info.path: name for info, name in zip(infos, names)}
        names = [e if e.startswith("Memcpy") else exported[e] for _, e in _kernelslist_entries(src_dir)[1]]
    write_kernelslist(dst_dir, names)
    from gclsampler.trace.ampere import describe

    said = describe(facts[first:])
    if said:  # the traces now say binary version 86: once the terminal scrolls away, only this file says why
        write_bytes_atomic(dst_dir / AS_AMPERE_NOTE, (
            "\n".join(said) + "\nThese traces were recorded on a newer GPU and rewritten by gclsampler "
            f"(--as-ampere) to run on an Ampere model of Accel-Sim; their '-binary version' header says 86. "
            f"Source: {src_dir}\n").encode())
    return written


AS_AMPERE_NOTE = "AS_AMPERE.txt"
"""Written beside traces ``--as-ampere`` rewrote: the one record in the output that they are
another GPU's instruction streams (their headers say Ampere)."""


def _list_to_group(raw_dir: Path) -> tuple[Path, list[tuple[int, str]]] | None:
    """The list of traces ``trace group`` reads, as ``_kernelslist_entries`` gives it (None: no
    list): the tracer's ``kernelslist`` when every trace it names is here, even beside a
    ``kernelslist.g``; a ``kernelslist.g`` listing other launches than it is refused.

    Why: every other reader takes ``kernelslist.g`` first (``kernelslist_path``). Accel-Sim's
    post-processing writes one, with its ``.traceg`` files, into the raw directory; traced again
    into that directory, ``trace group`` grouped the old run's files and said nothing of the new
    traces. Grouping is from raw traces, so the raw list wins where its traces are all there;
    the ``.g`` is read where they are gone (removed after post-processing)."""
    grouped, raw = raw_dir / KERNELSLIST, raw_dir / "kernelslist"
    if not (grouped.is_file() and raw.is_file()):
        only = kernelslist_path(raw_dir)
        return None if only is None else _kernelslist_entries(raw_dir, only)
    g_list, r_list = _kernelslist_entries(raw_dir, grouped), _kernelslist_entries(raw_dir, raw)
    g_names, r_names = ([e for _, e in lst[1] if _TRACE_RE.match(e)] for lst in (g_list, r_list))
    if not r_names:  # MemcpyHtoD lines alone: what an older tool's time-only run left in place of the list
        return g_list
    g_ids, r_ids = ([int(_TRACE_RE.match(e).group(1)) for e in names] for names in (g_names, r_names))
    if g_ids != r_ids:
        raise TraceFormatError(grouped, None, None, f"lists {len(g_ids)} launches where the tracer's kernelslist "
                               f"beside it lists {len(r_ids)}: it is an earlier run's list; move it (and that run's "
                               ".traceg files) away, then group again")
    return r_list if all((raw_dir / e).is_file() for e in r_names) else g_list


def _grouped_name(entry: str, compress: str) -> str:
    base = strip_compression(entry)
    if base.endswith(".trace"):
        base += "g"
    return base + compress


def group_raw_dir(raw_dir: str | os.PathLike, out_dir: str | os.PathLike, *, values: bool = True,
                  compress: str = "", dedup_ldgsts: bool = True, facts: dict | None = None) -> list[Path]:
    """Raw tracer output (``kernel-N.trace[.xz]`` + ``kernelslist``) -> grouped ``.traceg`` dir.

    Memcpy lines of the kernelslist are kept; ``compress`` is '', '.gz', '.xz' or '.zst'.
    ``facts``, when given, receives ``ldgsts_removed`` (see ``read_kernel``) summed over the traces,
    ``cut``: ``(raw file, warps without EXIT, warps)`` of each trace with such warps, and
    ``unlisted``: raw trace files of the directory its kernelslist leaves out (not grouped).
    """
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    listed = _list_to_group(raw_dir)
    if listed is not None:
        kl, entries = listed
    else:
        kl, entries = raw_dir, list(enumerate(trace_files(raw_dir), 1))
    if not any(not e.startswith("Memcpy") for _, e in entries):
        present = sum(1 for q in raw_dir.iterdir() if _TRACE_RE.match(q.name) and q.is_file())
        raise TraceFormatError(raw_dir, None, "kernelslist", "empty workload: no kernel traces" + (
            f"; {present} kernel-* trace files here are not listed (a GCL_TIME_ONLY or GCL_COUNT_ONLY run of an "
            "older tool in the same GCL_TRACE_DIR rewrote the list: trace again, or write the list in launch "
            "order)" if present else ""))
    # before anything is written: two entries with one output name would overwrite each other
    _refuse_repeats(kl, entries, lambda e: _grouped_name(e, compress))
    if kl != raw_dir:
        _refuse_missing(raw_dir, kl, entries)
    # and two traces of one invocation, or a list out of launch order: every command would
    # refuse the grouped workload
    _headers_checked(raw_dir, (e for _, e in entries if not e.startswith("Memcpy")), kl)
    if facts is not None and kl != raw_dir:
        facts["unlisted"] = [raw_dir / n for n in unlisted_traces(raw_dir, (e for _, e in entries))]
    out_dir.mkdir(parents=True, exist_ok=True)
    lines, written = [], []
    for _, e in _progress(entries, len(entries), "group"):
        if e.startswith("Memcpy"):
            lines.append(e)
            continue
        t = read_kernel(raw_dir / e, dedup_ldgsts=dedup_ldgsts, facts=facts)
        cut = warps_without_exit(t)
        if cut and facts is not None:
            facts.setdefault("cut", []).append((raw_dir / e, cut, int(t.n_warps)))
        name = _grouped_name(e, compress)
        write_chunks_atomic(out_dir / name, render_chunks(t, values=values))  # bounded memory for long kernels
        lines.append(name)
        written.append(out_dir / name)
    write_kernelslist(out_dir, lines)
    return written


def trace_info(root: str | os.PathLike, top: int = 10) -> dict:
    """Summary of a workload's traces (parses every kernel, one at a time)."""
    infos = list_invocations(root)
    hist: Counter = Counter()
    names: Counter = Counter()
    tot = {"instructions": 0, "warps": 0, "ctas": 0, "bytes": 0, "addresses": 0, "values": 0}
    per = []
    for info in _progress(infos, len(infos), "info"):
        t = read_kernel(Path(root) / info.path)
        counts = np.bincount(t.opcode, minlength=len(t.opcode_table))
        for name, c in zip(t.opcode_table, counts.tolist()):
            hist[name.split(".")[0]] += c
        n_cta = int(np.unique(t.warp_cta, axis=0).shape[0]) if t.n_warps else 0
        names[info.header.name] += 1
        tot["instructions"] += t.n_insts
        tot["warps"] += t.n_warps
        tot["ctas"] += n_cta
        tot["bytes"] += info.n_bytes
        tot["addresses"] += int(t.addrs.shape[0])
        tot["values"] += int(t.values.shape[0]) if t.values is not None else 0
        per.append({"invocation": info.invocation, "path": info.path, "kernel_name": info.header.name,
                    "grid": list(info.header.grid), "block": list(info.header.block),
                    "instructions": t.n_insts, "warps": t.n_warps, "ctas": n_cta,
                    "bytes": info.n_bytes, "has_values": t.has_values})
    return {
        "invocations": len(infos),
        "unique_kernel_names": len(names),
        **tot,
        "opcode_top": [{"opcode": k, "count": v} for k, v in
                       sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))[:top]],
        "per_invocation": per,
    }
