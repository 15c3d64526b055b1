"""`gclsampler profile import` of a large Nsight Systems CSV (SYNTHETIC rows).

Writes an ``nsys stats --report cuda_gpu_trace --format csv`` file (or, with
``--report cuda_kern_exec_trace``, that layout) of ``--n`` kernel rows plus a memcpy
row every 1000 kernels, with the kernel names and execution times of
``bench/stem_scale.py``'s generator, then times ``gclsampler profile import`` on it in
a fresh process (wall time and peak RSS of the command). Usage::

    python bench/nsys_import.py [--n 1000000] [--report cuda_gpu_trace] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stem_scale import generate  # noqa: E402

PREAMBLE = ("Generating SQLite file report1.sqlite from report1.nsys-rep\n"
            "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2024.2.1/host-linux-x64/reports/{r}.py]... \n\n")


def write_nsys_csv(path: Path, times: np.ndarray, names: np.ndarray, report: str = "cuda_gpu_trace") -> None:
    """An nsys stats CSV of these kernels in launch order (SYNTHETIC), written with pandas."""
    import pandas as pd

    n = times.size
    t = np.round(times).astype(np.int64)
    start = 1_000_000 + np.cumsum(t + 500)
    codes, uniq = pd.factorize(names)
    grid_x = (64 * (1 + codes % 8)).astype(np.int64)
    quoted = np.array(['"' + str(u).replace('"', '""') + '"' for u in uniq], dtype=object)[codes]
    with open(path, "w", newline="") as fh:
        fh.write(PREAMBLE.format(r=report))
        if report == "cuda_gpu_trace":
            fh.write('"Start (ns)","Duration (ns)","CorrId","GrdX","GrdY","GrdZ","BlkX","BlkY","BlkZ","Reg/Trd",'
                     '"StcSMem (MB)","DymSMem (MB)","Bytes (MB)","Throughput (MBps)","SrcMemKd","DstMemKd","Device",'
                     '"Ctx","GreenCtx","Strm","Name"\n')
            df = pd.DataFrame({"s": start, "d": t, "c": 100 + 2 * np.arange(n), "gx": grid_x, "gy": 1, "gz": 1,
                               "bx": 256, "by": 1, "bz": 1, "r": 32 + codes % 64, "st": "0.016", "dy": "0.000",
                               "b": "", "tp": "", "sk": "", "dk": "", "dev": "NVIDIA A100-SXM4-40GB (0)", "ctx": 1,
                               "g": "", "strm": 7, "name": quoted})
            memcpy = '{s},2100,{c},,,,,,,,,,0.004,1.905,Device,Pageable,NVIDIA A100-SXM4-40GB (0),1,,7,[CUDA memcpy Device-to-Host]\n'
        else:
            fh.write('"API Start (ns)","API Dur (ns)","Queue Start (ns)","Queue Dur (ns)","Kernel Start (ns)",'
                     '"Kernel Dur (ns)","Total Dur (ns)","PID","TID","DevId","API Function","GridXYZ","BlockXYZ",'
                     '"Kernel Name"\n')
            gxyz = np.array([f'"{g:>4}    1    1"' for g in range(64, 64 * 9, 64)], dtype=object)[codes % 8]
            df = pd.DataFrame({"a": start - 9000, "ad": 4512, "q": "", "qd": "", "ks": start, "d": t, "td": t + 9000,
                               "pid": 41213, "tid": 41213, "dev": 0, "fn": "cudaLaunchKernel_v7000", "g": gxyz,
                               "b": '"  256    1    1"', "name": quoted})
            memcpy = None
        step = 1000
        for lo in range(0, n, step * 100):
            chunk = df.iloc[lo:lo + step * 100]
            text = chunk.to_csv(header=False, index=False, quoting=3, lineterminator="\n")  # QUOTE_NONE: pre-quoted
            if memcpy is not None:
                lines = text.splitlines(keepends=True)
                out = []
                for k in range(0, len(lines), step):
                    out.extend(lines[k:k + step])
                    out.append(memcpy.format(s=int(start[min(lo + k, n - 1)]) + 1, c=99 + 2 * (lo + k)))
                text = "".join(out)
            fh.write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", choices=["cuda_gpu_trace", "cuda_kern_exec_trace"], default="cuda_gpu_trace")
    ap.add_argument("--keep", type=Path, help="write the CSV and profile.csv here instead of a temp dir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        csv = d / f"nsys_{args.report}_{args.n}.csv"
        times, names = generate(args.n, args.kernels, args.seed)
        t0 = time.perf_counter()
        write_nsys_csv(csv, times, names, args.report)
        print(f"SYNTHETIC {args.report} CSV: {args.n:,} kernel rows, {csv.stat().st_size / 1e6:.0f} MB "
              f"(written in {time.perf_counter() - t0:.1f} s)")
        cmd = [sys.executable, "-c",
               "import resource, sys, time; from gclsampler.cli import main; t0 = time.perf_counter(); "
               "rc = main(sys.argv[1:]); dt = time.perf_counter() - t0; "
               "print(f'import: {dt:.2f} s wall, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB'); "
               "sys.exit(rc)",
               "profile", "import", str(csv), "--out", str(d / "profile.csv")]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        print(out.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
