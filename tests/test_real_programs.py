"""The CUDA programs under real/src, run on the CPU.

Why: they were run once on a lent GPU and will be again; a kernel bug found there costs
device time nobody can get back. Here each program's own kernels and host code are
compiled with g++ against a small shim (one std::thread per CUDA thread, a std::barrier
for __syncthreads) and checked against the program's CPU reference (`--check`), with
the launch count the workload's invocation count depends on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "real" / "src"
GXX = shutil.which("g++")

# program, size, launches it must make: nw 2*(n/16)-1 tile diagonals, lud 3 per step
# plus the last diagonal tile
CASES = [("vecadd", 1000, 3), ("nw", 64, 7), ("nw", 128, 15), ("lud", 64, 10), ("lud", 96, 16), ("bfs", 1000, None)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if GXX is None:
        pytest.skip("g++ not on PATH")
    out = tmp_path_factory.mktemp("emu")
    bins = {}
    for prog in sorted({c[0] for c in CASES}):
        exe = out / prog
        r = subprocess.run([GXX, "-std=c++20", "-O1", "-pthread", "-include", str(SRC / "test" / "cpu_shim.h"),
                            "-x", "c++", str(SRC / f"{prog}.cu"), "-o", str(exe)], capture_output=True, text=True)
        if r.returncode != 0 and "barrier" in r.stderr:
            pytest.skip("this g++ has no C++20 <barrier>")
        assert r.returncode == 0, r.stderr
        bins[prog] = exe
    return bins


@pytest.mark.parametrize("prog,size,launches", CASES)
def test_program_matches_its_cpu_reference(built, prog, size, launches):
    r = subprocess.run([str(built[prog]), str(size), "--check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "CHECK OK" in r.stdout, r.stdout
    made = int(re.search(r"EMU: (\d+) launches", r.stderr).group(1))
    assert made == int(re.search(r"launches=(\d+)", r.stdout).group(1))
    if launches is not None:
        assert made == launches


def test_bfs_launches_two_kernels_per_level_plus_the_last_empty_pass(built):
    r = subprocess.run([str(built["bfs"]), "1000", "--check"], capture_output=True, text=True, timeout=120)
    levels = int(re.search(r"levels=(\d+)", r.stdout).group(1))
    assert int(re.search(r"launches=(\d+)", r.stdout).group(1)) == 2 * (levels + 1)
