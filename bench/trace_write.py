"""Peak memory and time of writing one long kernel trace: chunked (the writer's default)
against the same text formatted in one pass, and the compiled (numba) formatting kernels
against the numpy ones, measured in the same run.

    python bench/trace_write.py                  # ~1.5 M warp instructions with register values
    python bench/trace_write.py --ctas 64 --compress .zst

Why: a complete SM-0 trace of a conv layer is millions of warp instructions, and formatting
takes about 7.5 KB per instruction, so the whole kernel at once needed tens of GB. Prints
tracemalloc peaks (numpy buffers included), wall and CPU seconds, and the ratios
one-pass / chunked and numpy / compiled; all files are checked to hold the same text. The trace is SYNTHETIC
(random instruction mixes tiled over CTAs, as in bench/trace_parse.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extra_samples import positive_int  # noqa: E402
from trace_parse import _tile  # noqa: E402

from gclsampler.trace import _text as T  # noqa: E402
from gclsampler.trace.reader import open_bytes  # noqa: E402
from gclsampler.trace.testing import random_kernel_trace  # noqa: E402
from gclsampler.trace.writer import render_chunks, write_bytes_atomic, write_kernel  # noqa: E402


def _measure(fn) -> tuple[float, float, float]:
    tracemalloc.start()
    w, c = time.perf_counter(), time.process_time()
    fn()
    w, c = time.perf_counter() - w, time.process_time() - c
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6, w, c


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctas", type=positive_int, default=48, help="CTAs the one-CTA random trace is tiled over")
    ap.add_argument("--compress", default="", choices=["", ".gz", ".xz", ".zst"])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    one = random_kernel_trace(np.random.default_rng(a.seed), n_warps=8, max_insts=4000, values=True, dense=True)
    t = _tile(one, a.ctas, np.random.default_rng(a.seed), fresh_lines=False)
    kernels = T.compiled()  # compiled once here, outside the timings
    with tempfile.TemporaryDirectory() as d:
        chunked, whole = Path(d) / f"c.traceg{a.compress}", Path(d) / f"w.traceg{a.compress}"
        plain = Path(d) / f"n.traceg{a.compress}"
        rows = {
            "chunked": _measure(lambda: write_kernel(t, chunked)),
            "one pass": _measure(lambda: write_bytes_atomic(
                whole, b"".join(render_chunks(t, chunk_insts=max(1, t.n_insts))))),
        }
        if kernels is not None:
            T._JIT_STATE[:] = [None]  # the numpy formatting kernels, as without numba
            try:
                rows["numpy"] = _measure(lambda: write_kernel(t, plain))
            finally:
                T._JIT_STATE[:] = [kernels]
        same = open_bytes(chunked) == open_bytes(whole)
        if "numpy" in rows:
            same = same and open_bytes(plain) == open_bytes(chunked)
        size = len(open_bytes(chunked)) / 1e6
    print(f"{t.n_insts:,} warp instructions, {t.n_warps} warps, {size:.0f} MB of text{a.compress and ' -> ' + a.compress}"
          " (SYNTHETIC)")
    print(f"{'':10} {'peak MB':>9} {'wall s':>8} {'CPU s':>8}")
    for name, (peak, w, c) in rows.items():
        print(f"{name:10} {peak:9.0f} {w:8.2f} {c:8.2f}")
    (pc, wc, cc), (pw, ww, cw) = rows["chunked"], rows["one pass"]
    print(f"one pass / chunked: peak {pw / pc:.1f}x, wall {ww / wc:.2f}x, CPU {cw / cc:.2f}x; same text: {same}")
    if "numpy" in rows:
        pn, wn, cn = rows["numpy"]
        print(f"numpy / compiled (both chunked): wall {wn / wc:.2f}x, CPU {cn / cc:.2f}x, peak {pn / pc:.1f}x")
    else:
        print("numpy / compiled: not measured (numba missing or GCLSAMPLER_NO_JIT=1: 'chunked' is numpy)")
    if not same:
        raise SystemExit("bench/trace_write.py: the files' texts differ")


if __name__ == "__main__":
    main()
