"""`gclsampler profile import` of a large Nsight Systems CSV (SYNTHETIC rows).

Writes an ``nsys stats --report cuda_gpu_trace --format csv`` file (or, with
``--report cuda_kern_exec_trace``, that layout) of ``--n`` kernel rows plus a memcpy
row every 1000 kernels, with the kernel names and execution times of
``bench/stem_scale.py``'s generator, then times ``gclsampler profile import`` on it in
a fresh process (wall time and peak RSS of the command), against ``pandas.read_csv`` of
the same file in another fresh process (the ratio is the importer's cost over a plain
CSV read: name matching, memcpy rows, unit checks). Usage::

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
from extra_samples import positive_int  # noqa: E402
from stem_scale import generate  # noqa: E402

PREAMBLE = ("Generating SQLite file report1.sqlite from report1.nsys-rep\n"
            "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2024.2.1/host-linux-x64/reports/{r}.py]... \n\n")


def write_nsys_csv(path: Path, times: np.ndarray, names: np.ndarray, report: str = "cuda_gpu_trace") -> None:
    """An nsys stats CSV of these kernels in launch order (SYNTHETIC), written by pyarrow.

    cuda_gpu_trace files get a memcpy row (empty launch dimensions) after every 1000
    kernels, as real traces interleave copies with launches.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    n = times.size
    t = np.round(times).astype(np.int64)
    codes, uniq = pd.factorize(names)
    if report == "cuda_gpu_trace":
        k = np.arange(n)
        pos = k + k // 1000  # row of kernel k once a memcpy row follows every 1000 kernels
        rows = n + n // 1000
        is_k = np.zeros(rows, dtype=bool)
        is_k[pos] = True
        start = 1_000_000 + np.cumsum(np.where(is_k, 0, 2100)) + np.zeros(rows, dtype=np.int64)
        start[pos] += np.cumsum(t + 500)

        def col(values, memcpy_value=None, dtype=None):
            """A kernel column with the memcpy rows empty (or set to memcpy_value)."""
            import pyarrow.compute as pc

            full = np.empty(rows, dtype=dtype or np.asarray(values).dtype)
            full[pos] = values
            if memcpy_value is None:
                return pa.array(full, mask=~is_k)
            arr = pa.array(full)
            return pc.if_else(pa.array(~is_k), pa.scalar(memcpy_value, arr.type), arr)

        codes_full = np.zeros(rows, dtype=np.int64)
        codes_full[pos] = codes
        name_dict = pa.array(list(uniq) + ["[CUDA memcpy Device-to-Host]"], type=pa.string())
        name_idx = np.where(is_k, codes_full, len(uniq))
        table = pa.table({
            "Start (ns)": start, "Duration (ns)": col(t, 2100), "CorrId": 100 + np.arange(rows),
            "GrdX": col(64 * (1 + codes % 8)), "GrdY": col(np.ones(n, np.int64)), "GrdZ": col(np.ones(n, np.int64)),
            "BlkX": col(np.full(n, 256)), "BlkY": col(np.ones(n, np.int64)), "BlkZ": col(np.ones(n, np.int64)),
            "Reg/Trd": col(32 + codes % 64), "StcSMem (MB)": col(np.full(n, "0.016", dtype=object), dtype=object),
            "DymSMem (MB)": col(np.full(n, "0.000", dtype=object), dtype=object),
            "Bytes (MB)": pa.array(np.where(is_k, "", "0.004")), "Throughput (MBps)": pa.array(np.where(is_k, "", "1.905")),
            "SrcMemKd": pa.array(np.where(is_k, "", "Device")), "DstMemKd": pa.array(np.where(is_k, "", "Pageable")),
            "Device": pa.array(np.full(rows, "NVIDIA A100-SXM4-40GB (0)")), "Ctx": np.ones(rows, np.int64),
            "GreenCtx": pa.array(np.full(rows, "")), "Strm": np.full(rows, 7),
            "Name": pa.DictionaryArray.from_arrays(pa.array(name_idx), name_dict).cast(pa.string()),
        })
    else:
        start = 1_000_000 + np.cumsum(t + 9500)
        gxyz = pa.array([f"{g:>4}    1    1" for g in range(64, 64 * 9, 64)])
        table = pa.table({
            "API Start (ns)": start - 9000, "API Dur (ns)": np.full(n, 4512), "Queue Start (ns)": pa.array(np.full(n, "")),
            "Queue Dur (ns)": pa.array(np.full(n, "")), "Kernel Start (ns)": start, "Kernel Dur (ns)": t,
            "Total Dur (ns)": t + 9000, "PID": np.full(n, 41213), "TID": np.full(n, 41213), "DevId": np.zeros(n, np.int64),
            "API Function": pa.array(np.full(n, "cudaLaunchKernel_v7000")),
            "GridXYZ": pa.DictionaryArray.from_arrays(pa.array(codes % 8), gxyz).cast(pa.string()),
            "BlockXYZ": pa.array(np.full(n, "  256    1    1")),
            "Kernel Name": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(list(uniq))).cast(pa.string()),
        })
    with open(path, "wb") as fh:
        fh.write(PREAMBLE.format(r=report).encode())
        fh.write((",".join(f'"{c}"' for c in table.column_names) + "\n").encode())
        pacsv.write_csv(table, fh, pacsv.WriteOptions(include_header=False, quoting_style="needed"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=positive_int, default=1_000_000)
    ap.add_argument("--kernels", type=positive_int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", choices=["cuda_gpu_trace", "cuda_kern_exec_trace"], default="cuda_gpu_trace")
    ap.add_argument("--keep", type=Path, help="write the CSV and profile.csv here instead of a temp dir")
    args = ap.parse_args()
    if args.kernels > args.n:  # generate's "n < 0" traceback
        ap.error(f"--kernels {args.kernels}: more kernels than --n {args.n} rows")
    if args.keep is not None and args.keep.exists() and not args.keep.is_dir():  # mkdir's FileExistsError traceback
        ap.error(f"--keep {args.keep}: exists and is not a directory")
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
               "import os, resource, sys, time; t00 = time.perf_counter(); from gclsampler.cli import main; "
               "t0 = time.perf_counter(); rc = main(sys.argv[1:]); dt = time.perf_counter() - t0; "
               "u = resource.getrusage(resource.RUSAGE_SELF); "
               "print(f'import: {dt:.2f} s wall in the command ({time.perf_counter() - t00:.2f} s with Python imports), '"
               "      f'{u.ru_utime + u.ru_stime:.2f} s CPU, peak RSS {u.ru_maxrss / 1024:.0f} MB, '"
               "      f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores'); "
               "sys.exit(rc)",
               "profile", "import", str(csv), "--out", str(d / "profile.csv")]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        print(out.strip())
        # in-run baseline: the same file read by pandas alone (fresh process, same preamble skipped)
        base = [sys.executable, "-c",
                "import sys, time; import pandas as pd; t0 = time.perf_counter(); "
                "df = pd.read_csv(sys.argv[1], skiprows=2); print(f'{time.perf_counter() - t0:.4f} {len(df)}')",
                str(csv)]
        read_s, rows = subprocess.run(base, check=True, capture_output=True, text=True).stdout.split()
        import_s = float(out.split("import: ", 1)[1].split(" s wall", 1)[0])
        print(f"baseline: pandas.read_csv of the same file {float(read_s):.2f} s wall ({int(rows):,} rows); "
              f"import / read_csv = {import_s / max(float(read_s), 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
