"""STEM+ROOT side by side with the public STEM-AE reference, on the same data, in one process tree.

The reference is read from a local copy of the STEM-AE artifact (Chung et al., MICRO'25)
whose directory you give; nothing of it is copied into this repository, and without
it the bench says so and exits 0. Each side runs in its own child process (wall time
and peak RSS are per side):

* ``ours``: ``gclsampler.profile.import_profile`` of the nsys CSV, then
  ``gclsampler.stem.stem_root`` (scope global, the paper's bound on the total), then
  ``--draws`` seeded redraws of the same plan (``stem_draw``) for the bound check;
* ``reference``: the artifact's ``figure7/sampling_methods/stem.py`` ``parse_stem``
  (its own CSV reader, ROOT with sklearn k-means and its sampler), ``--ref-draws``
  times (each re-reads and re-clusters; the first one is timed).

Data sets: ``synthetic`` (SYNTHETIC: ``bench/stem_scale.py``'s generator, ``--n``
invocations of ``--kernels`` kernel names with 1-4 time peaks each) and ``runtime-example``
(the artifact's ``figure1/runtime-example.csv``: measured nsys kernel times of 6
kernels). Both are written as an nsys ``cuda_kern_exec_trace`` CSV, the layout the
reference reads. Usage::

    python bench/stem_reference.py /path/to/STEM-AE [--n 1000000] [--epsilon 0.05] [--draws 200] [--ref-draws 5]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REF_STEM = Path("figure7") / "sampling_methods" / "stem.py"
REF_DATA = Path("figure1") / "runtime-example.csv"
NAME, SUBDIR = "bench", "0"  # where the reference looks: results_ncu-example/NAME/SUBDIR/nsys_NAME.csv


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---- data -----------------------------------------------------------------------------------
def synthetic(n: int, kernels: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    sys.path.insert(0, str(HERE))
    from stem_scale import generate

    t, names = generate(n, kernels, seed)
    return np.round(t), names


def runtime_example(ae: Path) -> tuple[np.ndarray, np.ndarray]:
    """The artifact's figure-1 table: one column of nsys kernel times (ns) per kernel."""
    import pandas as pd

    df = pd.read_csv(ae / REF_DATA, encoding="utf-8-sig")
    times, names = [], []
    for col in df.columns:
        v = df[col].dropna().to_numpy(dtype=np.float64)
        times.append(v)
        names.append(np.full(v.size, str(col).strip(), dtype=object))
    # interleave the kernels as a workload would launch them (a fixed shuffle)
    t, g = np.concatenate(times), np.concatenate(names)
    p = np.random.default_rng(0).permutation(t.size)
    return t[p], g[p]


def write_exec_trace(path: Path, times: np.ndarray, names: np.ndarray) -> None:
    """An ``nsys stats --report cuda_kern_exec_trace --format csv`` file of these launches."""
    import pandas as pd

    t = times.astype(np.int64)
    api = 1_000_000 + np.cumsum(t + 7000)
    df = pd.DataFrame({"API Start (ns)": api, "API Dur (ns)": 4500, "Queue Start (ns)": "", "Queue Dur (ns)": "",
                       "Kernel Start (ns)": api + 5000, "Kernel Dur (ns)": t, "Total Dur (ns)": t + 5000,
                       "PID": 4121, "TID": 4121, "DevId": 0, "API Function": "cudaLaunchKernel_v7000",
                       "GridXYZ": "  80    1    1", "BlockXYZ": "  256    1    1", "Kernel Name": names})
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        fh.write("Processing [report1.sqlite] with [cuda_kern_exec_trace.py]... \n\n")
        fh.write(",".join(df.columns) + "\n")  # the reference looks for this header unquoted
        df.to_csv(fh, header=False, index=False, lineterminator="\n")


# ---- the two sides (child processes) ---------------------------------------------------------
def run_ours(csv: Path, epsilon: float, seed: int, draws: int, scope: str = "global") -> dict:
    sys.path.insert(0, str(ROOT))
    from gclsampler.profile import import_profile
    from gclsampler.stem import stem_draw, stem_root

    t0 = time.perf_counter()
    prof = import_profile(csv)
    t1 = time.perf_counter()
    t = prof["time_ns"].to_numpy(dtype=np.float64)
    res = stem_root(t, prof["kernel_name"], epsilon=epsilon, random_state=seed, scope=scope)
    t2 = time.perf_counter()
    total = t.sum()
    errs, speedups = [], []
    for s in range(draws):
        inv, w = (res.invocations, res.weights) if s == 0 else stem_draw(res, seed + s)
        errs.append(abs(float(np.dot(w, t[inv])) / total - 1.0))
        speedups.append(total / t[inv].sum())
    t3 = time.perf_counter()
    return {"side": "ours", "import_s": t1 - t0, "stem_s": t2 - t1, "draws_s": t3 - t2, "peak_rss_mb": _peak_rss_mb(),
            "n": int(t.size), "leaves": res.n_leaves, "samples": int(res.invocations.size), "scope": res.scope,
            "speedup": speedups[0], "speedup_hmean": len(speedups) / float(np.sum(1.0 / np.asarray(speedups))),
            "error_bound": res.error_bound, "errors": errs}


def _load_reference(ae: Path):
    """The artifact's ``stem`` module, without its package ``__init__`` (which imports every method)."""
    import importlib.util
    import types

    d = ae / REF_STEM.parent
    pkg = types.ModuleType("sampling_methods")
    pkg.__path__ = [str(d)]
    sys.modules["sampling_methods"] = pkg
    mods = {}
    for name in ("utils", "stem"):
        spec = importlib.util.spec_from_file_location(f"sampling_methods.{name}", d / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mods[name] = mod
    return mods["stem"]


def run_reference(ae: Path, workdir: Path, epsilon: float, seed: int, draws: int) -> dict:
    import random

    import matplotlib

    matplotlib.use("Agg")
    os.chdir(workdir)
    ref = _load_reference(ae)
    leaves = []
    inner = ref.cluster_recursive

    def counting(key, values, c, kernel_info, simtime_old_, n_samples_old_):
        if simtime_old_ == -1.0 and (not leaves or leaves[-1] is not kernel_info):
            leaves.append(kernel_info)  # the dict of leaves parse_stem fills (one per call)
        return inner(key, values, c, kernel_info, simtime_old_, n_samples_old_)

    ref.cluster_recursive = counting
    out = []
    first_s = None
    for k in range(draws):
        random.seed(seed + k)
        np.random.seed(seed + k)  # sklearn's KMeans(random_state=None) draws from here
        buf = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(buf):
            speedup, err = ref.parse_stem(suite_name="bench", name=NAME, subdir=SUBDIR, error_bound=epsilon,
                                          use_nsys_only=True)
        if first_s is None:
            first_s = time.perf_counter() - t0
            rss = _peak_rss_mb()
        m = re.search(r"Total number of sampled kernels: (\d+)", buf.getvalue())
        out.append({"speedup": float(speedup), "error": float(err), "samples": int(m.group(1)) if m else -1,
                    "leaves": len(leaves[-1]) if leaves else -1})
    return {"side": "reference", "seconds": first_s, "peak_rss_mb": rss, "runs": out}


# ---- driver -----------------------------------------------------------------------------------
def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def compare(label: str, csv: Path, workdir: Path, args) -> bool:
    sys.path.insert(0, str(ROOT))
    ours = _child(["--child", "ours", "--csv", str(csv), "--epsilon", str(args.epsilon), "--seed", str(args.seed),
                   "--draws", str(args.draws), "--scope", args.scope, str(args.stem_ae)])
    ref = _child(["--child", "reference", "--csv", str(workdir), "--epsilon", str(args.epsilon), "--seed",
                  str(args.seed), "--ref-draws", str(args.ref_draws), str(args.stem_ae)])
    e = np.asarray(ours["errors"])
    runs = ref["runs"]
    re_err = np.array([r["error"] for r in runs])
    re_sp = np.array([r["speedup"] for r in runs])
    over = int((e > args.epsilon).sum())
    allowed = int(0.05 * e.size)
    from gclsampler.stem import scope_description

    print(f"\n{label}: {ours['n']:,} invocations, epsilon {args.epsilon:g}, z 1.96; ours: "
          f"{scope_description(ours['scope'])}; the reference sizes every kernel name (every ROOT subtree) for its own bound")
    print(f"{'':22s}{'leaves':>9s}{'samples':>9s}{'speedup':>10s}  realised error{'':18s}{'time':>22s}{'peak RSS':>10s}")
    first5 = e[: len(runs)]
    print(f"{'STEM-AE reference':22s}{runs[0]['leaves']:>9,}{runs[0]['samples']:>9,}{re_sp[0]:>9.1f}x  "
          f"mean {100 * re_err.mean():.2f}%, max {100 * re_err.max():.2f}% ({len(runs)} draws)"
          f"{ref['seconds']:>10.1f} s (read+cluster){ref['peak_rss_mb']:>7.0f} MB")
    print(f"{'gclsampler stem_root':22s}{ours['leaves']:>9,}{ours['samples']:>9,}{ours['speedup']:>9.1f}x  "
          f"mean {100 * first5.mean():.2f}%, max {100 * first5.max():.2f}% ({len(runs)} draws)"
          f"{ours['stem_s']:>6.1f} s (+ {ours['import_s']:.1f} s import){ours['peak_rss_mb']:>7.0f} MB")
    print(f"  ours over {e.size} seeded draws: error mean {100 * e.mean():.2f}%, max {100 * e.max():.2f}%, "
          f"> epsilon in {over}/{e.size} (allowed {allowed}, 5%): {'PASS' if over <= allowed else 'FAIL'}; "
          f"predicted bound {100 * ours['error_bound']:.2f}%; harmonic-mean speedup {ours['speedup_hmean']:.1f}x")
    better = ours["samples"] <= runs[0]["samples"] and ours["speedup"] >= re_sp[0]
    print(f"  samples ours {ours['samples']:,} vs reference {runs[0]['samples']:,}; speedup ours {ours['speedup']:.1f}x vs "
          f"reference {re_sp[0]:.1f}x: {'ours simulates less' if better else 'NOT better'}")
    return better and over <= allowed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stem_ae", nargs="?", type=Path, help="local copy of the STEM-AE artifact (github ejchung0406/STEM-AE)")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--epsilon", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=200, help="seeded draws of our plan for the bound check")
    ap.add_argument("--ref-draws", type=int, default=5, help="runs of the reference (each re-reads and re-clusters)")
    ap.add_argument("--scope", choices=["global", "group"], default="global",
                    help="what our bound covers: the workload's total (global, default) or each kernel name's")
    ap.add_argument("--data", choices=["both", "synthetic", "runtime-example"], default="both")
    ap.add_argument("--child", choices=["ours", "reference"], help=argparse.SUPPRESS)
    ap.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "ours":
        print(json.dumps(run_ours(args.csv, args.epsilon, args.seed, args.draws, args.scope)))
        return 0
    if args.child == "reference":
        print(json.dumps(run_reference(args.stem_ae.resolve(), args.csv, args.epsilon, args.seed, args.ref_draws)))
        return 0
    if args.stem_ae is None:
        print(f"skipped: no STEM-AE artifact given (expected DIR/{REF_STEM}); "
              "usage: python bench/stem_reference.py /path/to/STEM-AE")
        return 0
    if not (args.stem_ae / REF_STEM).is_file():  # a path was given: a wrong one is an error, not a skip
        print(f"stem_reference: error: {args.stem_ae / REF_STEM}: no such file (give a copy of the STEM-AE "
              "artifact, github ejchung0406/STEM-AE)", file=sys.stderr)
        return 2
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        sets = []
        if args.data in ("both", "synthetic"):
            sets.append((f"SYNTHETIC ({args.kernels} kernel names, 1-4 time peaks each, seed {args.seed})",
                         synthetic(args.n, args.kernels, args.seed)))
        if args.data in ("both", "runtime-example") and (args.stem_ae / REF_DATA).is_file():
            sets.append((f"STEM-AE {REF_DATA} (measured nsys kernel times)", runtime_example(args.stem_ae)))
        for k, (label, (t, g)) in enumerate(sets):
            work = Path(tmp) / f"set{k}"
            csv = work / "results_ncu-example" / NAME / SUBDIR / f"nsys_{NAME}.csv"
            write_exec_trace(csv, t, g)
            ok &= compare(label, csv, work, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
