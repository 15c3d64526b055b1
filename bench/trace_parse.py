"""Trace parse throughput vs. plain read/decompression of the same files, same run.

    python bench/trace_parse.py                 # 200 MB of SYNTHETIC trace text, plain files
    python bench/trace_parse.py --mb 20         # smaller
    python bench/trace_parse.py --compress .zst # parse vs zstd decompression
    python bench/trace_parse.py --values        # with gclsampler register values
    python bench/trace_parse.py --trace DIR_OR_FILE   # your own traces

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gclsampler.trace import read_kernel  # noqa: E402
from gclsampler.trace.reader import open_bytes  # noqa: E402
from gclsampler.trace.testing import random_kernel_trace  # noqa: E402
from gclsampler.trace.writer import render, write_bytes_atomic  # noqa: E402


def make_kernel(path: Path, mb: float, seed: int, values: bool) -> int:
    """Write a SYNTHETIC kernel of about ``mb`` MB of text by tiling one rendered CTA."""
    rng = np.random.default_rng(seed)
    t = random_kernel_trace(rng, n_warps=8, max_insts=3000, values=values, dense=True,
                            max_dst=1, max_src=3, kernel_id=seed + 1, mem_frac=0.25)
    import dataclasses

    t = dataclasses.replace(t, warp_cta=np.zeros_like(t.warp_cta),
                            warp_id=np.arange(t.n_warps, dtype=np.int32),
                            header=dataclasses.replace(t.header, block=(32 * t.n_warps, 1, 1)))
    text = render(t, values=values).decode()
    head, _, body = text.partition("\n#BEGIN_TB\n")
    body = "\n#BEGIN_TB\n" + body
    n_cta = max(1, int(mb * 1e6 / len(body)))
    first = "thread block = 0,0,0"
    chunks = [body.replace(first, f"thread block = {i},0,0", 1) for i in range(n_cta)]
    head = head.replace(f"-grid dim = ({t.header.grid[0]},{t.header.grid[1]},{t.header.grid[2]})",
                        f"-grid dim = ({n_cta},1,1)")
    data = (head + "".join(chunks)).encode()
    write_bytes_atomic(path, data)
    return len(data)


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="total MB of trace text to generate (default 200)")
    ap.add_argument("--kernel-mb", type=float, default=50.0, help="MB per kernel file (default 50)")
    ap.add_argument("--compress", default="", choices=["", ".gz", ".xz", ".zst"])
    ap.add_argument("--values", action="store_true", help="include gclsampler register values")
    ap.add_argument("--trace", default=None, help="existing trace file or directory instead of generating")
    ap.add_argument("--repeat", type=int, default=1, help="runs; the best is reported")
    args = ap.parse_args(argv)

    tmp = None
    if args.trace:
        p = Path(args.trace)
        files = sorted(x for x in p.iterdir() if x.name.startswith("kernel-")) if p.is_dir() else [p]
        synthetic = False
    else:
        tmp = tempfile.TemporaryDirectory(prefix="gcl-bench-")
        files, total, i = [], 0.0, 0
        while total < args.mb * 1e6:
            mb = min(args.kernel_mb, args.mb - total / 1e6)
            f = Path(tmp.name) / f"kernel-{i + 1}.traceg{args.compress}"
            total += make_kernel(f, max(mb, 0.5), i, args.values)
            files.append(f)
            i += 1
        synthetic = True

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
    mb = text_bytes / 1e6
    (rw, rc), (pw, pc) = best_read, best_parse
    print(f"trace text: {mb:.1f} MB in {len(files)} kernel(s), {n_insts} warp instructions, "
          f"compression '{args.compress or 'none'}', values={'yes' if args.values else 'no'}"
          f"{', SYNTHETIC' if synthetic else ''}")
    print(f"read/decompress : {mb / rw:8.1f} MB/s wall  {mb / max(rc, 1e-9):8.1f} MB/s cpu")
    print(f"read_kernel     : {mb / pw:8.1f} MB/s wall  {mb / max(pc, 1e-9):8.1f} MB/s cpu")
    print(f"ratio parse/read: {rw / pw:.3f} (wall)  {max(rc, 1e-9) / max(pc, 1e-9):.3f} (cpu)")
    print(f"load average    : {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared machine: noisy)")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
