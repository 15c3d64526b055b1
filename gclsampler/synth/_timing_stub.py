"""TEMPORARY stand-in for ``gclsampler.synth.timing`` (timing engineer) until it lands.

Same signature; a crude instruction-count model so generation can run end to end.
Removed as soon as the real model is in the tree (``generate._timing`` prefers it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gclsampler.synth.arch import ARCHS  # noqa: F401
from gclsampler.trace.types import KernelHeader, KernelTrace


@dataclass
class WorkSummary:
    header: KernelHeader
    sample: KernelTrace
    sample_cta_ids: np.ndarray
    insts_scale: float


@dataclass
class CacheState:
    lines: frozenset = frozenset()


@dataclass
class TimingConfig:
    noise: float = 0.02


def simulate(arch, work: WorkSummary, cache, rng: np.random.Generator, cfg: TimingConfig):
    s = work.sample
    warp_insts = s.n_insts * work.insts_scale
    mem = float((s.mem_width > 0).mean()) if s.n_insts else 0.0
    ipc = max(0.2, 2.0 * (1 - mem))
    cycles = 2000 + warp_insts / (arch.sm_count * ipc)
    cycles *= float(np.exp(rng.normal(0, cfg.noise)))
    ns = cycles / arch.clock_mhz * 1e3
    h = work.header
    thread_insts = float(s.active_lanes().sum()) * work.insts_scale
    m = {"time_ns": ns, "cycles": cycles, "ipc": warp_insts / cycles, "l1_hit_rate": 0.5, "l2_hit_rate": 0.7,
         "achieved_occupancy": 0.5, "inst_executed": warp_insts,
         "warp_inst_executed_mean": warp_insts / max(1, h.n_ctas * ((h.threads_per_cta + 31) // 32)),
         "pka_coalesced_global_loads": 0.0, "pka_coalesced_global_stores": 0.0, "pka_coalesced_local_loads": 0.0,
         "pka_thread_global_loads": 0.0, "pka_thread_global_stores": 0.0, "pka_thread_local_loads": 0.0,
         "pka_thread_shared_loads": 0.0, "pka_thread_shared_stores": 0.0, "pka_thread_global_atomics": 0.0,
         "pka_instructions": thread_insts, "pka_divergence_efficiency": thread_insts / max(1.0, 32 * warp_insts),
         "pka_thread_blocks": float(h.n_ctas)}
    return m, CacheState()
