"""Speed of the NVBit tool's host-side formatter against printf, in one run.

The tool's host thread turns every record the GPU pushes into a trace line while the kernel
waits on the channel, so formatting speed bounds a traced launch's speed once the channel is
full. ``tracer/gcl_format.h`` writes its numbers by hand; ``tracer/test/printf_reference.h``
is the snprintf formatter it replaced, kept as the oracle. This builds
``tracer/test/format_speed.cpp`` with g++ -O2, checks that both write the same bytes, and
prints microseconds per record for each and the ratio (CPU only; no GPU or NVBit needed)::

    python bench/tracer_format.py [--records 300000] [--reps 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from extra_samples import positive_int

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=positive_int, default=300000, help="random records formatted per rep")
    ap.add_argument("--reps", type=positive_int, default=3, help="timed repetitions (each prints its own ratio)")
    args = ap.parse_args()
    if shutil.which("g++") is None:
        print("tracer_format: g++ not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "format_speed"
        subprocess.run(["g++", "-std=c++17", "-O2", f"-I{ROOT / 'tracer'}", str(ROOT / "tracer/test/format_speed.cpp"),
                        "-o", str(exe)], check=True)
        check = subprocess.run([str(exe), "check", str(args.records)], capture_output=True, text=True)
        if check.returncode != 0:
            print(f"tracer_format: outputs differ:\n{check.stderr}", file=sys.stderr)
            return 1
        print(check.stdout.strip())
        for rep in range(args.reps):
            out = subprocess.run([str(exe), "time", str(args.records), str(rep + 1)], capture_output=True, text=True,
                                 check=True)
            print(out.stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
