"""STEM+ROOT at scale: 10 million invocations in at most 10 s and 1 GB (SYNTHETIC workload).

Generates ~200 kernel names with 1-4 execution-time peaks each (Zipf-like call counts),
then times, each in a fresh process so peak RSS is per phase:

* ``baseline``: the least any per-kernel time sampler must do on the same data,
  pd.factorize of the names + a stable argsort by (kernel, time) + per-kernel
  mean/std with np.bincount;
* ``stem``: ``gclsampler.stem.stem_root(times, names)`` (ROOT on, epsilon 0.05, scope
  ``--scope``: global by default, the bound on the workload's total time).

Prints wall time and peak RSS (VmHWM, includes the generated input) per phase and
the ratio stem / baseline. Usage::

    python bench/stem_scale.py [--n 10000000] [--kernels 200] [--epsilon 0.05] [--seed 0] [--scope global|group]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from extra_samples import epsilon_arg, positive_int

ROOT = Path(__file__).resolve().parents[1]


def generate(n: int, kernels: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """SYNTHETIC times (ns) and kernel names; every kernel has 1-4 time peaks."""
    rng = np.random.default_rng(seed)
    share = 1.0 / np.arange(1, kernels + 1) ** 1.1
    counts = rng.multinomial(n - kernels, share / share.sum()) + 1
    names = np.array([f"sm80_kernel_{k:03d}_{'gemm' if k % 3 == 0 else 'elementwise'}" for k in range(kernels)],
                     dtype=object)
    code = np.repeat(np.arange(kernels), counts)
    peaks = rng.integers(1, 5, kernels)
    centre = rng.uniform(2e3, 2e6, (kernels, 4)) * np.array([1.0, 1.7, 2.9, 4.3])
    cov = rng.uniform(0.005, 0.08, (kernels, 4))
    which = (rng.random(n) * peaks[code]).astype(np.int64)
    mu = centre[code, which]
    times = np.abs(rng.normal(mu, cov[code, which] * mu))
    perm = rng.permutation(n)
    return times[perm], names[code[perm]]


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def phase(name: str, n: int, kernels: int, seed: int, epsilon: float, scope: str = "global") -> dict:
    times, names = generate(n, kernels, seed)
    data_rss = _peak_rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    info: dict = {}
    if name == "baseline":
        import pandas as pd

        codes, uniq = pd.factorize(names)
        order = np.argsort(times, kind="stable")
        order = order[np.argsort(codes[order], kind="stable")]
        cnt = np.bincount(codes)
        mean = np.bincount(codes, weights=times) / cnt
        dev = times - mean[codes]
        std = np.sqrt(np.bincount(codes, weights=dev * dev) / cnt)
        info = {"groups": int(uniq.size), "checksum": float(std.sum() + order[0])}
    else:
        sys.path.insert(0, str(ROOT))
        from gclsampler.stem import stem_root

        res = stem_root(times, names, epsilon=epsilon, random_state=seed, scope=scope)
        est = res.estimate(times)
        info = {"groups": int(np.unique(res.leaf_group.astype(str)).size), "leaves": res.n_leaves,
                "samples": int(res.invocations.size), "scope": res.scope,
                "error_bound": res.error_bound, "actual_error": abs(est / times.sum() - 1.0),
                "speedup": float(times.sum() / times[res.invocations].sum())}
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"phase": name, "seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": _peak_rss_mb(), "data_rss_mb": data_rss, **info}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=positive_int, default=10_000_000)
    ap.add_argument("--kernels", type=positive_int, default=200)
    ap.add_argument("--epsilon", type=epsilon_arg, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scope", choices=["global", "group"], default="global")
    ap.add_argument("--phase", choices=["baseline", "stem"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.n, args.kernels, args.seed, args.epsilon, args.scope)))
        return 0
    print(f"SYNTHETIC workload: {args.n:,} invocations, {args.kernels} kernel names, 1-4 time peaks each, "
          f"epsilon={args.epsilon}, seed={args.seed}, scope={args.scope}")
    results = {}
    for name in ("baseline", "stem"):
        out = subprocess.run([sys.executable, __file__, "--phase", name, "--n", str(args.n), "--kernels",
                              str(args.kernels), "--epsilon", str(args.epsilon), "--seed", str(args.seed),
                              "--scope", args.scope],
                             check=True, capture_output=True, text=True).stdout
        results[name] = r = json.loads(out.strip().splitlines()[-1])
        print(f"{name:9s} {r['seconds']:7.2f} s wall {r['cpu_seconds']:7.2f} s CPU   peak RSS {r['peak_rss_mb']:7.0f} MB "
              f"(input alone {r['data_rss_mb']:.0f} MB)")
    s = results["stem"]
    print(f"stem_root ({s['scope']} scope): {s['groups']} groups -> {s['leaves']:,} ROOT leaves, "
          f"{s['samples']:,} sampled invocations, predicted error bound {100 * s['error_bound']:.3f}%, "
          f"actual error {100 * s['actual_error']:.4f}%, speedup {s['speedup']:.0f}x")
    ratio = s["seconds"] / results["baseline"]["seconds"]
    cpu_ratio = s["cpu_seconds"] / results["baseline"]["cpu_seconds"]
    ok = s["seconds"] <= 10.0 and s["peak_rss_mb"] <= 1024.0
    print(f"ratio stem/baseline: wall {ratio:.2f}x, CPU {cpu_ratio:.2f}x; "
          f"target <= 10 s and <= 1 GB: {'met' if ok else 'NOT met'} (wall time; check the load average if not)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
