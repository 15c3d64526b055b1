"""Derive each real workload's ``profile.csv`` from the exports it was measured with.

Why a script: ``real/<name>/raw/`` holds what the GPU host wrote (an Nsight Compute CSV
or a torch.profiler chrome trace, xz-compressed as recorded); ``profile.csv`` is what
gclsampler reads. Re-running this on a clean checkout rebuilds every ``profile.csv``
byte for byte (``tests/test_real_workloads.py`` checks it), so the committed ground
truth is reproducible from the measurement and nothing else.

    python real/build.py            # rewrite real/*/profile.csv
    python real/build.py --check    # exit 1 if any committed profile.csv differs
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
import tempfile
from pathlib import Path

from gclsampler.profile import import_profile, write_profile

REAL = Path(__file__).resolve().parent


def build_profile(workload_dir: Path, out: Path) -> list[str]:
    """Import the export named by workload.json's ``profile_source`` into ``out``; returns the importer's notes."""
    meta = json.loads((workload_dir / "workload.json").read_text())
    src = meta["profile_source"]
    raw = workload_dir / src["file"]
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        # the importer detects formats by content and names files in its messages:
        # decompress under the export's own name
        plain = Path(tmp) / raw.name.removesuffix(".xz")
        plain.write_bytes(lzma.decompress(raw.read_bytes()) if raw.suffix == ".xz" else raw.read_bytes())
        df = import_profile(plain, src["format"], notes=notes)
    if len(df) != meta["n_invocations"]:
        raise SystemExit(f"{raw}: {len(df)} invocations, workload.json says {meta['n_invocations']}")
    write_profile(df, out)
    return [n.replace(str(plain), str(raw.relative_to(REAL.parent))) for n in notes]


def workloads() -> list[Path]:
    return sorted(p.parent for p in REAL.glob("*/workload.json"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed profile.csv instead of writing")
    args = ap.parse_args(argv)
    bad = 0
    for wl in workloads():
        if not args.check:
            for note in build_profile(wl, wl / "profile.csv"):
                print(f"{wl.name}: note: {note}")
            print(f"{wl.name}: profile.csv written")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "profile.csv"
            build_profile(wl, fresh)
            same = fresh.read_bytes() == (wl / "profile.csv").read_bytes()
        print(f"{wl.name}: {'same' if same else 'DIFFERENT'}")
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
