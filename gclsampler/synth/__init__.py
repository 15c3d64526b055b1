"""SYNTHETIC workloads: SASS-level kernel programs run by a vectorised warp interpreter.

``generate(name, out_dir, ...)`` writes a workload directory with exactly the files a
GPU host would produce (kernel-<id>.traceg, kernelslist.g, profile.csv,
profiles/<arch>.csv, workload.json with ``"synthetic": true``). Nothing it writes is a
hardware measurement. See docs/synth.md.
"""

from gclsampler.synth.generate import (  # noqa: F401
    SynthConfigError,
    generate,
    plan_launches,
    resolve_params,
    workload_defaults,
    workload_names,
)
