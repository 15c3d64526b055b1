"""Wall time of `gclsampler.synth.generate` (SYNTHETIC workloads).

Prints seconds per invocation for a reduced phi2 with the timing model in a worker
process (jobs=2) against the in-process baseline (jobs=1) measured in the same run.

    python bench/synth_generate.py [layers=2 decode=7 ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from gclsampler.errors import GclError
from gclsampler.synth import generate, plan_launches


def main(argv: list[str]) -> None:
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return
    bad = [a for a in argv if "=" not in a]
    if bad:
        print(f"synth_generate.py: {bad[0]!r}: expected KNOB=VALUE (a synth knob of phi2, e.g. layers=2)", file=sys.stderr)
        sys.exit(2)
    params = {"layers": 2, "decode": 7}
    params.update(dict(a.split("=", 1) for a in argv))
    try:
        n = len(plan_launches("phi2", params))
    except GclError as exc:  # an unknown or mistyped knob: the synthesizer's own one line
        print(f"synth_generate.py: {exc}", file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as d:
        times = {}
        for jobs in (1, 2):
            t = time.perf_counter()
            generate("phi2", Path(d) / f"j{jobs}", params=params, progress=False, jobs=jobs)
            times[jobs] = time.perf_counter() - t
    print(f"phi2 {params}: {n} invocations (SYNTHETIC)")
    for jobs, t in times.items():
        print(f"  jobs={jobs}: {t:.1f} s  ({1e3 * t / n:.1f} ms/invocation)")
    print(f"  speedup jobs=2 vs jobs=1: {times[1] / times[2]:.2f}x (needs an otherwise idle second core)")


if __name__ == "__main__":
    main(sys.argv[1:])
