"""Trace parse throughput vs. plain read/decompression of the same files, same run.

    python bench/trace_parse.py                 # 200 MB of SYNTHETIC trace text, plain files
    python bench/trace_parse.py --mb 20         # smaller
    python bench/trace_parse.py --compress .zst # parse vs zstd decompression
    python bench/trace_parse.py --values        # with gclsampler register values
    python bench/trace_parse.py --trace DIR_OR_FILE   # your own traces
    python bench/trace_parse.py --trace workloads/lu  # many short warps: where the structure check shows

Prints MB/s of decompressed trace text for (a) reading/decompressing the bytes
and (b) ``read_kernel`` (which includes (a)), both wall-clock and CPU time of
this process (CPU time is the per-core rate; the machine may be shared), and
the ratio parse/read. The generated traces are SYNTHETIC (random instruction
mixes), written by tiling one rendered CTA across the grid.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from extra_samples import positive_float, positive_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gclsampler.errors import GclError  # noqa: E402
from gclsampler.trace import read_kernel  # noqa: E402
from gclsampler.trace.reader import open_bytes  # noqa: E402
from gclsampler.trace.testing import random_kernel_trace  # noqa: E402
from gclsampler.trace.writer import render, write_bytes_atomic  # noqa: E402


def _tile(t, n_cta: int, rng: np.random.Generator, fresh_lines: bool):
    """``n_cta`` copies of a one-CTA trace, CTA x = copy index.

    Copies keep PCs, masks, registers and opcodes (as warps of a real kernel do) but
    get their own addresses and register values, so memory lines differ per CTA
    and only non-memory lines repeat. ``fresh_lines`` also randomises PCs and
    masks per copy so that (almost) no line repeats: the worst case for the parser.
    """
    import dataclasses

    N, A = t.n_insts, t.addrs.shape[0]
    cp = np.arange(n_cta, dtype=np.int64)
    reps = lambda a: np.tile(a, (n_cta,) + (1,) * (a.ndim - 1))  # noqa: E731
    counts = np.diff(t.warp_ptr)
    warp_ptr = np.zeros(n_cta * t.n_warps + 1, dtype=np.int64)
    np.cumsum(np.tile(counts, n_cta), out=warp_ptr[1:])
    acount = np.diff(t.addr_ptr)
    addr_ptr = np.zeros(n_cta * N + 1, dtype=np.int64)
    np.cumsum(np.tile(acount, n_cta), out=addr_ptr[1:])
    addrs = np.tile(t.addrs, n_cta) + np.repeat(cp.astype(np.uint64) * np.uint64(0x10000), A)
    pc, mask = reps(t.pc), reps(t.mask)
    if fresh_lines:
        pc = (rng.integers(0, 1 << 20, size=pc.shape[0]) * 16).astype(np.int64)
    kw = dict(
        warp_cta=np.stack([np.repeat(cp, t.n_warps), np.zeros(n_cta * t.n_warps, np.int64),
                           np.zeros(n_cta * t.n_warps, np.int64)], axis=1).astype(np.int32),
        warp_id=reps(t.warp_id), warp_ptr=warp_ptr, pc=pc, mask=mask, opcode=reps(t.opcode),
        dst=reps(t.dst), src=reps(t.src), mem_width=reps(t.mem_width), addr_ptr=addr_ptr, addrs=addrs,
        imm=reps(t.imm) if t.imm is not None else None,
        header=dataclasses.replace(t.header, grid=(n_cta, 1, 1)))
    if t.values is not None:
        V = t.values.shape[0]
        vcount = np.diff(t.value_ptr)
        vptr = np.zeros(n_cta * N + 1, dtype=np.int64)
        np.cumsum(np.tile(vcount, n_cta), out=vptr[1:])
        kw["value_ptr"] = vptr
        kw["values"] = (np.tile(t.values, n_cta) + np.repeat(cp.astype(np.uint32) * np.uint32(977), V))
    return dataclasses.replace(t, **kw)


def make_kernel(path: Path, mb: float, seed: int, values: bool, fresh_lines: bool = False) -> int:
    """Write a SYNTHETIC kernel of about ``mb`` MB of text: one random CTA program, tiled."""
    import dataclasses

    rng = np.random.default_rng(seed)
    t = random_kernel_trace(rng, n_warps=8, max_insts=3000, values=values, dense=True,
                            max_dst=1, max_src=3, kernel_id=seed + 1, mem_frac=0.25)
    t = dataclasses.replace(t, warp_cta=np.zeros_like(t.warp_cta),
                            warp_id=np.arange(t.n_warps, dtype=np.int32),
                            header=dataclasses.replace(t.header, block=(32 * t.n_warps, 1, 1)))
    one = len(render(t, values=values))
    n_cta = max(1, int(mb * 1e6 / one))
    data = render(_tile(t, n_cta, rng, fresh_lines), values=values)
    write_bytes_atomic(path, data)
    return len(data)


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=positive_float, default=200.0, help="total MB of trace text to generate (default 200)")
    ap.add_argument("--kernel-mb", type=float, default=50.0, help="MB per kernel file (default 50)")
    ap.add_argument("--compress", default="", choices=["", ".gz", ".xz", ".zst"])
    ap.add_argument("--values", action="store_true", help="include gclsampler register values")
    ap.add_argument("--trace", default=None, help="existing trace file or directory instead of generating")
    ap.add_argument("--repeat", type=positive_int, default=1, help="runs; the best is reported")
    ap.add_argument("--no-numpy", action="store_true",
                    help="skip the second parse with the numpy fallback parser (the in-run baseline)")
    ap.add_argument("--no-walk", action="store_true",
                    help="skip the parse with the line-by-line structure walk (the in-run baseline of the "
                         "whole-array structure check; it matters on many-warp traces such as lu's)")
    ap.add_argument("--fresh-lines", action="store_true",
                    help="randomise PCs per CTA so almost no line repeats (parser worst case)")
    args = ap.parse_args(argv)
    try:
        return _bench(args)
    except GclError as exc:  # a --trace that is missing or not a trace: one line, not a traceback
        print(f"trace_parse: {exc}", file=sys.stderr)
        return 2


def _bench(args) -> int:
    tmp = None
    if args.trace:
        p = Path(args.trace)
        files = sorted(x for x in p.iterdir() if x.name.startswith("kernel-")) if p.is_dir() else [p]
        if not files:
            raise GclError(f"{p}: no kernel-* trace file in this directory")
        synthetic = False
    else:
        tmp = tempfile.TemporaryDirectory(prefix="gcl-bench-")
        files, total, i = [], 0.0, 0
        while total < args.mb * 1e6:
            mb = min(args.kernel_mb, args.mb - total / 1e6)
            f = Path(tmp.name) / f"kernel-{i + 1}.traceg{args.compress}"
            total += make_kernel(f, max(mb, 0.5), i, args.values, args.fresh_lines)
            files.append(f)
            i += 1
        synthetic = True

    # one-off cost of the compiled parser (numba import, then compile or load from its disk
    # cache), paid once per process; reported on its own, not folded into the rate
    from gclsampler.trace import _text

    warm = Path(tempfile.mkdtemp(prefix="gcl-warm-")) / "kernel-1.traceg"
    make_kernel(warm, 0.05, 99, args.values)
    _, _, jit_cpu = timed(lambda: read_kernel(warm))
    engine = "numba" if _text.compiled() is not None else "numpy (numba missing or GCLSAMPLER_NO_JIT=1)"
    warm.unlink()
    warm.parent.rmdir()
    if args.trace:  # your traces may need kernels the generated one did not (raw layout, other columns)
        jit_cpu += timed(lambda: read_kernel(files[0]))[2]

    # machine calibration: Python's own whitespace split of the same text (no numbers parsed)
    sample = open_bytes(files[0])
    c0 = time.process_time()
    sample.split()
    split_rate = len(sample) / 1e6 / max(time.process_time() - c0, 1e-9)
    del sample
    best_read = best_parse = None
    text_bytes = 0
    n_insts = 0
    for _ in range(args.repeat):
        rw = rc = pw = pc = 0.0
        text_bytes = n_insts = 0
        for f in files:
            data, w, c = timed(lambda: open_bytes(f))
            text_bytes += len(data)
            del data
            rw += w
            rc += c
            t, w, c = timed(lambda: read_kernel(f))
            n_insts += t.n_insts
            del t
            pw += w
            pc += c
        if best_read is None or rw < best_read[0]:
            best_read = (rw, rc)
        if best_parse is None or pw < best_parse[0]:
            best_parse = (pw, pc)
    npc = None
    if not args.no_numpy and _text.compiled() is not None:
        saved = list(_text._JIT_STATE)
        _text._JIT_STATE[:] = [None]
        try:
            npc = sum(timed(lambda: read_kernel(f))[2] for f in files)
        finally:
            _text._JIT_STATE[:] = saved
    walk_c = None
    if not args.no_walk:
        from gclsampler.trace import reader

        fast = reader._structure_fast
        reader._structure_fast = lambda *a: None
        try:
            walk_c = sum(timed(lambda: read_kernel(f))[2] for f in files)
        finally:
            reader._structure_fast = fast
    mb = text_bytes / 1e6
    (rw, rc), (pw, pc) = best_read, best_parse
    if args.trace:
        found = sorted({f.suffix for f in files if f.suffix in (".gz", ".xz", ".zst")}) or ["none"]
        kinds = f"compression {'/'.join(found)} (as found)"
    else:
        kinds = f"compression '{args.compress or 'none'}', values={'yes' if args.values else 'no'}"
    print(f"trace text: {mb:.1f} MB in {len(files)} kernel(s), {n_insts} warp instructions, {kinds}"
          f"{', SYNTHETIC' if synthetic else ''}{' (fresh lines)' if args.fresh_lines else ''}")
    print(f"read/decompress : {mb / rw:8.1f} MB/s wall  {mb / max(rc, 1e-9):8.1f} MB/s cpu")
    print(f"read_kernel     : {mb / pw:8.1f} MB/s wall  {mb / max(pc, 1e-9):8.1f} MB/s cpu  [{engine}]")
    print(f"first call      : {jit_cpu:8.2f} s cpu once per process (numba import + compile/cache load),"
          " not in the rate above")
    if npc is not None:
        print(f"numpy fallback  :                {mb / npc:8.1f} MB/s cpu  "
              f"(same files; compiled parser is {npc / max(pc, 1e-9):.2f}x faster)")
    if walk_c is not None:
        print(f"structure walk  :                {mb / walk_c:8.1f} MB/s cpu  (same files, the line-by-line "
              f"structure check; the whole-array one is {walk_c / max(pc, 1e-9):.2f}x faster)")
    print(f"bytes.split()   :                {split_rate:8.1f} MB/s cpu  (calibration: tokens only, no parsing)")
    print(f"ratio parse/read: {rw / pw:.3f} (wall)  {max(rc, 1e-9) / max(pc, 1e-9):.3f} (cpu)")
    print(f"load average    : {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared machine: noisy)")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
