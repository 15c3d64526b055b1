"""A second, independent run of a synthetic workload on the same arch (SYNTHETIC).

A plan made from a profile and scored on that same profile is also scored on the jitter it
read (``time_ns``: STEM+ROOT's strata, gcl's time cuts). ``evaluate.py`` now synthesizes a
second run itself (``suite.rerun``, ``profiles/<arch>_rerun.csv``, the ``error_cycles_rerun``
column); this script makes one for a data dir synthesized before that, without touching it:
every workload of DATA_DIR is synthesized again with its own ``workload.json`` settings plus the
arch ``<arch>_rerun`` (same machine model, same launches and cache states, only the run-to-run
jitter drawn again). It checks that ``<arch>.csv`` comes out byte-identical to DATA_DIR's, so
nothing else moved, and keeps ``OUT/<w>/<arch>_rerun.csv``: the file the synthesizer would have
written into the data dir. Score plans on it with ``bench/time_split.py RUN DATA_DIR --rerun
OUT``. About the synthesis time of the suite (10-11 min on 2 cores, alexnet the most);
workloads already in OUT are skipped. It takes no workload lock (``_safe_out.use_workload``):
it writes no workload directory (its synthesis goes to a temp dir), so a job reading DATA_DIR
has nothing to wait for, and a workload synthesized again with other settings between its reads of
``workload.json`` and ``<arch>.csv`` fails the byte comparison (exit 2) rather than passing.
Usage::

    python bench/rerun_profiles.py DATA_DIR OUT [--arch turing] [--workloads bfs,lu]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", type=Path, help="a suite data_dir of synthetic workloads (<w>/workload.json)")
    ap.add_argument("out", type=Path, help="where <w>/<arch>_rerun.csv go (created; existing ones are kept)")
    ap.add_argument("--arch", default="turing", help="the arch to run again (default turing, the plans' arch)")
    ap.add_argument("--workloads", default="", help="comma-separated subset (default: every workload of data_dir)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from gclsampler.profile import rerun_arch
    from gclsampler.synth.arch import ARCHS
    from gclsampler.synth.generate import generate

    if args.arch not in ARCHS:
        print(f"rerun_profiles: --arch: unknown arch {args.arch!r}; known: {', '.join(sorted(ARCHS))}", file=sys.stderr)
        return 2
    if not args.data_dir.is_dir():
        print(f"rerun_profiles: {args.data_dir}: no such directory", file=sys.stderr)
        return 2
    rerun = rerun_arch(args.arch)
    names = [w for w in args.workloads.split(",") if w] or \
        sorted(p.name for p in args.data_dir.iterdir() if (p / "workload.json").is_file())
    if not names:
        print(f"rerun_profiles: {args.data_dir}: no workload (no <w>/workload.json)", file=sys.stderr)
        return 2
    for name in names:
        meta_path = args.data_dir / name / "workload.json"
        if not meta_path.is_file():
            print(f"rerun_profiles: {meta_path}: no such file", file=sys.stderr)
            return 2
        meta = json.loads(meta_path.read_text())
        if not meta.get("synthetic"):
            print(f"rerun_profiles: {meta_path}: not a synthetic workload; only the synthesizer can run it again",
                  file=sys.stderr)
            return 2
        dest = args.out / name / f"{rerun}.csv"
        if dest.exists():
            continue
        params = {**meta["synth"], "archs": [args.arch, rerun]}  # the other archs are not needed
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix=f"rerun-{name}-") as tmp:
            made = Path(tmp) / name
            generate(name, made, params=params, arch=args.arch, seed=int(meta["seed"]), progress=False)
            original = args.data_dir / name / "profiles" / f"{args.arch}.csv"
            if not filecmp.cmp(made / "profiles" / f"{args.arch}.csv", original, shallow=False):
                print(f"rerun_profiles: {name}: synthesized again, {args.arch}.csv differs from {original}: the data "
                      f"dir was made by other code or settings, so a rerun of it cannot be made here", file=sys.stderr)
                return 2
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(made / "profiles" / f"{rerun}.csv", dest.with_suffix(".tmp"))
            dest.with_suffix(".tmp").replace(dest)
        print(f"{name}: {time.time() - t0:.0f} s, {dest} (SYNTHETIC; {args.arch}.csv reproduced byte for byte)",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
