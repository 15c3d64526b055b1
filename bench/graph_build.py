"""Graph build throughput (trace instructions per second, one core) and cache-reload speed-up.

Run:  python bench/graph_build.py [--warps 256] [--insts 2048] [--invocations 8]

Inputs are SYNTHETIC: random small warps (tests/_trace_fixtures.random_trace) tiled to the
requested size, written as .traceg when gclsampler.trace.write_kernel exists. Both numbers
come from the same run: build rate on one core, then GraphDataset cold build vs warm reload.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]
from _trace_fixtures import random_trace  # noqa: E402
from extra_samples import positive_int  # noqa: E402

from gclsampler.graph import GraphConfig, build_graph  # noqa: E402
from gclsampler.trace.types import KernelTrace  # noqa: E402

torch.set_num_threads(1)


def tile_trace(base: KernelTrace, n_warps: int, insts_per_warp: int, kernel_id: int = 1) -> KernelTrace:
    """Repeat one random warp's body to build a big trace without a Python loop per instruction."""
    w_n = int(base.warp_ptr[1])
    reps = -(-insts_per_warp // w_n)
    one = np.tile(np.arange(w_n), reps)[:insts_per_warp]
    idx = np.tile(one, n_warps)
    n = len(idx)
    a_len = np.diff(base.addr_ptr)[idx]
    v_len = np.diff(base.value_ptr)[idx]

    def gather(ptr, data, lens):
        starts = ptr[idx]
        own = np.repeat(np.arange(n), lens)
        first = np.cumsum(lens) - lens
        j = np.arange(int(lens.sum())) - first[own] + starts[own]
        return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64), data[j]

    addr_ptr, addrs = gather(base.addr_ptr, base.addrs, a_len)
    # shift addresses per warp so warps touch different lines, like different CTAs would
    addrs = addrs + (np.repeat(np.arange(n) // insts_per_warp, a_len) * 4096).astype(np.uint64)
    value_ptr, values = gather(base.value_ptr, base.values, v_len)
    from dataclasses import replace
    wpc = min(n_warps, 32)
    n_ctas = -(-n_warps // wpc)
    hdr = replace(base.header, kernel_id=kernel_id, grid=(n_ctas, 1, 1), block=(32 * wpc, 1, 1))
    warp_cta = np.zeros((n_warps, 3), np.int32)
    warp_cta[:, 0] = np.arange(n_warps) // wpc
    return KernelTrace(
        header=hdr, warp_cta=warp_cta, warp_id=(np.arange(n_warps) % wpc).astype(np.int32),
        warp_ptr=np.arange(0, n + 1, insts_per_warp, dtype=np.int64), pc=base.pc[idx] + 0,
        mask=base.mask[idx], opcode=base.opcode[idx], opcode_table=base.opcode_table,
        dst=base.dst[idx], src=base.src[idx], mem_width=base.mem_width[idx], addr_ptr=addr_ptr,
        addrs=addrs, value_ptr=value_ptr, values=values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warps", type=positive_int, default=256)
    ap.add_argument("--insts", type=positive_int, default=2048, help="instructions per warp")
    ap.add_argument("--invocations", type=positive_int, default=8, help="trace files for the cache test")
    ap.add_argument("--repeat", type=positive_int, default=3)
    args = ap.parse_args()
    base = _base(np.random.default_rng(0))
    big = tile_trace(base, args.warps, args.insts)
    cfg = GraphConfig(max_warps=0, max_insts_per_warp=0)
    build_graph(big, cfg)  # warm-up
    best = min(_timed(lambda: build_graph(big, cfg)) for _ in range(args.repeat))
    g = build_graph(big, cfg)
    rate = big.n_insts / best
    print(f"SYNTHETIC trace: {big.n_insts} instructions, {args.warps} warps -> "
          f"{g.num_nodes} nodes, {g.edge_index.shape[1]} edges")
    print(f"build (uncapped, 1 thread): {best:.3f} CPU s = {rate / 1e3:.0f}k instructions/s per core "
          f"(load average {os.getloadavg()[0]:.1f})")
    dcfg = GraphConfig()
    best_d = min(_timed(lambda: build_graph(big, dcfg)) for _ in range(args.repeat))
    print(f"build (default caps {dcfg.max_warps} warps x {dcfg.max_insts_per_warp} insts): "
          f"{best_d * 1e3:.1f} CPU ms per kernel")
    _bench_cache(base, args)


def _base(rng: np.random.Generator) -> KernelTrace:
    base = random_trace(rng, n_warps=1, max_len=200)
    while base.n_insts < 100:
        base = random_trace(rng, n_warps=1, max_len=200)
    return base


def _timed(fn) -> float:
    """CPU seconds of this process: "per core" and robust to other jobs sharing the machine."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def _bench_cache(base: KernelTrace, args) -> None:
    try:
        from gclsampler.data import GraphDataset
        from gclsampler.trace import write_kernel, write_kernelslist
    except ImportError as exc:
        print(f"cache benchmark skipped: {exc}")
        return
    with tempfile.TemporaryDirectory() as d:
        names = []
        rng = np.random.default_rng(1)
        bases = [_base(rng) for _ in range(-(-args.invocations // 2))]
        for i in range(args.invocations):  # invocations 2k and 2k+1 share a body: dedup shows
            t = tile_trace(bases[i // 2], args.warps, args.insts, kernel_id=i + 1)
            name = f"kernel-{i + 1}.traceg"
            write_kernel(t, Path(d) / name)
            names.append(name)
        write_kernelslist(d, names)
        cfg = GraphConfig(max_warps=0, max_insts_per_warp=0)
        t0 = time.perf_counter()
        ds = GraphDataset(d, cfg, workers=1)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        ds2 = GraphDataset(d, cfg, workers=1)
        for i in range(len(ds2)):
            ds2[i]
        warm = time.perf_counter() - t0
        n_inst = args.invocations * args.warps * args.insts
        from gclsampler.trace import read_kernel

        t0 = time.perf_counter()
        read_kernel(Path(d) / names[0])
        parse = time.perf_counter() - t0
        print(f"(of which parsing one trace file with gclsampler.trace.read_kernel: {parse:.2f} s wall)")
        print(f"dataset cold build (parse + build + write, 1 worker): {cold:.2f} s "
              f"({n_inst / cold / 1e3:.0f}k trace instructions/s), unique graphs {ds.n_unique}/{len(ds)}")
        print(f"dataset warm reload (memoised trace hashes + read and verify every graph): {warm:.2f} s -> speed-up {cold / warm:.1f}x")


if __name__ == "__main__":
    main()
