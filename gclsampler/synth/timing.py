"""Synthetic ground-truth timing model: a kernel's whole-grid work -> profile metrics.

This is a SYNTHETIC ANALYTICAL MODEL, not a hardware simulator and not a
measurement. It exists so that synthetic workloads get per-invocation ground
truth (time, cycles, hit rates, occupancy, PKA metrics) whose structure matches
what the sampling papers rely on: time depends on the whole grid (waves,
occupancy), on memory traffic through caches driven by the actual generated
addresses, on per-opcode-class throughput and latency, on the cache state the
previous kernel left behind, and on run-to-run jitter that is larger for
memory-bound kernels. The equations are in ``docs/timing-model.md``.

The model sees a *sample* of the kernel (all warps of a few CTAs spread across
the grid, each warp possibly truncated) plus the scale factor to the whole
kernel, never just the traced SM.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gclsampler.errors import GclError, located
from gclsampler.synth.arch import ARCHS, ArchConfig
from gclsampler.trace.types import KernelHeader, KernelTrace

__all__ = [
    "ARCHS",
    "ArchConfig",
    "CacheState",
    "METRICS",
    "OPCODE_CLASSES",
    "TimingConfig",
    "TimingError",
    "WorkSummary",
    "classify_opcodes",
    "occupancy",
    "simulate",
]


class TimingError(GclError):
    """A launch the modelled GPU cannot run, or an inconsistent work summary."""


METRICS: list[str] = [
    "time_ns", "cycles", "ipc", "l1_hit_rate", "l2_hit_rate", "achieved_occupancy",
    "inst_executed", "warp_inst_executed_mean", "nregs", "shmem",
    "pka_coalesced_global_loads", "pka_coalesced_global_stores", "pka_coalesced_local_loads",
    "pka_thread_global_loads", "pka_thread_global_stores", "pka_thread_local_loads",
    "pka_thread_shared_loads", "pka_thread_shared_stores", "pka_thread_global_atomics",
    "pka_instructions", "pka_divergence_efficiency", "pka_thread_blocks",
]
"""Exactly the profile.csv metric columns ``simulate`` returns, in this order."""


# ----------------------------------------------------------------------------- public dataclasses
@dataclass
class WorkSummary:
    """What the timing model knows about one invocation.

    ``sample`` holds the warps of CTAs sampled uniformly across the whole grid
    (warps grouped by CTA); ``insts_scale`` turns sample counts into whole-kernel
    counts (total warp-instructions / ``sample.n_insts``).
    """

    header: KernelHeader
    sample: KernelTrace
    sample_cta_ids: np.ndarray
    insts_scale: float


@dataclass
class TimingConfig:
    """Knobs of the synthetic timing model (Hydra-friendly plain fields).

    Defaults give CASIO-like spreads: ~1% CoV for compute-bound kernels, ~5% for
    memory-bound ones (STEM+ROOT paper, Figure 1 and Section 2).
    """

    jitter_cov_compute: float = 0.01  # run-to-run CoV of time for compute-bound kernels
    jitter_cov_memory: float = 0.05  # ... for memory-bound kernels (interpolated by memory-boundness)
    carry_cache_state: bool = True  # L2 contents carry from the previous kernel on this arch
    ilp: float = 2.0  # independent instructions a warp can issue per dependent chain (ALU stalls / ilp)
    mlp: float = 4.0  # outstanding loads per warp before it stalls (memory stalls / mlp)
    overlap_p: float = 4.0  # p of the p-norm combining overlapping bounds (inf = pure max)
    dram_efficiency: float = 0.85  # achievable fraction of peak DRAM bandwidth
    l2_efficiency: float = 0.80  # achievable fraction of L2 bandwidth
    launch_overhead_ns: float = 1500.0  # fixed launch/drain cost added to every kernel
    max_cache_addresses: int = 65536  # cap on lane addresses fed to the cache models (whole CTAs kept)
    max_carried_sectors: int = 262144  # cap on L2 sectors remembered across kernels
    max_shared_insts: int = 1024  # shared-memory instructions examined for bank conflicts (strided subset)
    lru_chunk_max: int = 4096  # most accesses per vectorised LRU step (also <= capacity / 2)


@dataclass
class CacheState:
    """L2 contents left by the previous kernels on one arch, most recent entry first.

    Entry i is the 32-byte-sector range ``[lo[i], hi[i])``: either one sector a
    kernel *sample* touched, standing for ``weight`` real sectors (1 / that
    sample's footprint fraction), or a dense range extrapolated over the CTAs the
    sample skipped (weight = its length). The list is truncated at the real L2
    capacity (sum of weights), not at the sample's.
    """

    arch: str
    lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    weight: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))

    @property
    def n_entries(self) -> int:
        return int(self.lo.size)

    @property
    def resident_bytes(self) -> float:
        return float(self.weight.sum()) * 32.0

    def covers(self, sectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which ``sectors`` are resident, and the index of an entry holding each (recency rank)."""
        if self.lo.size == 0 or sectors.size == 0:
            return np.zeros(sectors.size, dtype=bool), np.zeros(sectors.size, dtype=np.int64)
        o = np.argsort(self.lo, kind="stable")
        los = self.lo[o]
        his = np.maximum.accumulate(self.hi[o])
        i = np.searchsorted(los, sectors, side="right") - 1
        ok = i >= 0
        ic = np.maximum(i, 0)
        return ok & (his[ic] > sectors), o[ic].astype(np.int64)


# ----------------------------------------------------------------------------- opcode classes
OPCODE_CLASSES: tuple[str, ...] = (
    "int", "fp32", "fp64", "sfu", "tensor", "ctrl", "sync",
    "ldg", "stg", "atom", "lds", "sts", "ldl", "stl", "ldgsts",
    "off",  # issued with the guard false on every lane: an issue slot, no pipe, no latency, no memory
)
_C = {c: i for i, c in enumerate(OPCODE_CLASSES)}
NC = len(OPCODE_CLASSES)
_MEM_CLASSES = ("ldg", "stg", "atom", "lds", "sts", "ldl", "stl", "ldgsts")
_GLOBALISH = np.array([c in ("ldg", "stg", "atom", "ldl", "stl", "ldgsts") for c in OPCODE_CLASSES])

_BASE_CLASS = {
    **dict.fromkeys(["LDG"], "ldg"),
    **dict.fromkeys(["STG"], "stg"),
    **dict.fromkeys(["ATOM", "ATOMG", "RED"], "atom"),
    **dict.fromkeys(["LDS", "LDSM", "ATOMS"], "lds"),
    **dict.fromkeys(["STS"], "sts"),
    **dict.fromkeys(["LDL"], "ldl"),
    **dict.fromkeys(["STL"], "stl"),
    **dict.fromkeys(["LDGSTS"], "ldgsts"),
    **dict.fromkeys(["HMMA", "IMMA", "DMMA", "BMMA", "HGMMA"], "tensor"),
    **dict.fromkeys(["FFMA", "FADD", "FMUL", "FMNMX", "FSET", "FSETP", "FSEL", "FCHK", "FSWZADD",
                     "HFMA2", "HADD2", "HMUL2", "HSET2", "HSETP2", "HMNMX2", "FFMA32I", "FADD32I",
                     "FMUL32I", "HFMA2MMA"], "fp32"),
    **dict.fromkeys(["DFMA", "DADD", "DMUL", "DSETP", "DMNMX", "DSET"], "fp64"),
    **dict.fromkeys(["MUFU", "F2I", "I2F", "F2F", "I2I", "FRND", "POPC", "FLO", "BREV", "SHFL",
                     "F2FP"], "sfu"),
    **dict.fromkeys(["BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "WARPSYNC",
                     "YIELD", "NOP", "KILL", "BREAK", "BPT", "SSY", "SYNC", "PBK", "BRK", "CONT",
                     "PCNT", "BMOV", "RTT", "NANOSLEEP"], "ctrl"),
    **dict.fromkeys(["BAR", "MEMBAR", "DEPBAR", "ERRBAR", "CCTL", "CCTLL", "ARRIVES"], "sync"),
}


def _base(token: str) -> str:
    return token.split(".", 1)[0].lstrip("@!")


def classify_opcodes(opcode_table: tuple[str, ...]) -> np.ndarray:
    """Class id (index into ``OPCODE_CLASSES``) of each opcode-table token.

    Unknown opcodes (IMAD, IADD3, LOP3, MOV, S2R, uniform-datapath U*...) are
    integer-pipe work, which is where the hardware issues them too.
    """
    return np.array([_C[_BASE_CLASS.get(_base(t), "int")] for t in opcode_table], dtype=np.int64)


def _bypass_l1(opcode_table: tuple[str, ...]) -> np.ndarray:
    """Loads that do not allocate in L1 (``LDGSTS...BYPASS``, ``LDG...STRONG.GPU``)."""
    return np.array([(".BYPASS" in t) or (".STRONG.GPU" in t) for t in opcode_table], dtype=bool)


def _tensor_fma(token: str) -> float:
    """FP16-equivalent multiply-adds of one warp-level MMA (HMMA.16816 -> 16*8*16)."""
    for part in token.split(".")[1:]:
        if part.isdigit() and len(part) >= 3:
            d = part
            if len(d) == 5:  # 16816
                m, n, k = int(d[:2]), int(d[2]), int(d[3:])
            elif len(d) == 4:  # 1688
                m, n, k = int(d[:2]), int(d[2]), int(d[3])
            else:  # 884
                m, n, k = int(d[0]), int(d[1]), int(d[2])
            return float(m * n * k)
    return 2048.0


# ----------------------------------------------------------------------------- occupancy
@dataclass(frozen=True)
class Occupancy:
    ctas_per_sm: int
    warps_per_cta: int
    limiter: str  # "warps", "ctas", "registers" or "shared"
    theoretical: float  # active warps / max warps
    smem_per_sm_used: int  # bytes of shared memory the resident CTAs take


def _round_up(x: int, unit: int) -> int:
    return -(-int(x) // unit) * unit


def occupancy(arch: ArchConfig, threads_per_cta: int, nregs: int, shmem: int) -> Occupancy:
    """CTAs per SM by the CUDA occupancy rules (cuda_occupancy.h / occupancy calculator).

    Registers are allocated per warp in units of ``reg_alloc_unit`` and per
    sub-partition (each holds 1/4 of the register file); shared memory per CTA is
    rounded to the allocation unit after adding the driver-reserved bytes.
    """
    where = f"arch {arch.name}"
    if threads_per_cta < 1 or threads_per_cta > arch.max_threads_per_cta:
        raise TimingError(located(where, None, "block", f"{threads_per_cta} threads per CTA "
                                  f"(limit {arch.max_threads_per_cta})"))
    if nregs > arch.max_regs_per_thread or nregs < 0:
        raise TimingError(located(where, None, "nregs", f"{nregs} registers per thread "
                                  f"(limit {arch.max_regs_per_thread})"))
    if shmem > arch.max_smem_per_cta or shmem < 0:
        raise TimingError(located(where, None, "shmem", f"{shmem} bytes of shared memory per CTA "
                                  f"(limit {arch.max_smem_per_cta})"))
    wpc = -(-threads_per_cta // 32)
    limits = {"warps": arch.max_warps_per_sm // wpc, "ctas": arch.max_ctas_per_sm}
    if nregs > 0:
        regs_per_warp = _round_up(nregs * 32, arch.reg_alloc_unit)
        per_sub = (arch.regs_per_sm // arch.sub_partitions) // regs_per_warp
        limits["registers"] = (per_sub * arch.sub_partitions) // wpc
    # The driver's reserve is taken by every CTA, shared memory or not: cuda_occupancy.h adds
    # reservedSharedMemPerBlock to each CTA's static size on CC >= 8 unconditionally. Counting it
    # only for kernels with shared memory gave CC 8.x kernels without any the whole L1.
    smem_cta = _round_up(shmem + arch.smem_reserved_per_cta, arch.smem_alloc_unit)
    if smem_cta > 0:
        limits["shared"] = arch.max_smem_per_sm // smem_cta
    limiter = min(limits, key=lambda k: limits[k])
    ctas = int(limits[limiter])
    if ctas < 1:
        raise TimingError(located(where, None, limiter, f"no CTA fits on an SM (block {threads_per_cta} "
                                  f"threads, {nregs} regs, {shmem} B shared)"))
    return Occupancy(ctas, wpc, limiter, ctas * wpc / arch.max_warps_per_sm, ctas * smem_cta)


def _l1_bytes(arch: ArchConfig, smem_used: int) -> int:
    """L1 capacity left after the smallest shared-memory carveout that fits the resident CTAs."""
    carve = next((c for c in arch.smem_carveouts_kb if c * 1024 >= smem_used), arch.smem_carveouts_kb[-1])
    return max(arch.l1_unified_kb - carve, 16) * 1024 if arch.l1_unified_kb > carve else 16 * 1024


# ----------------------------------------------------------------------------- set-associative LRU
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_OLD = np.int64(-(2 ** 62))


class _LRU:
    """Set-associative LRU cache over integer keys, updated a chunk of accesses at a time.

    Within a chunk, an access hits if its key is resident at the chunk start or
    was touched earlier in the same chunk (evictions inside a chunk are ignored,
    which is why chunks are kept small compared to the capacity); at the chunk
    end every set keeps its ``assoc`` most recently used keys. Set indices must be
    compact (0..n_sets-1): callers renumber the sets their stream touches, so the
    state is as large as the touched part of the cache, not the whole cache.
    """

    def __init__(self, n_sets: int, assoc: int):
        self.n_sets, self.assoc = int(max(1, n_sets)), int(max(1, assoc))
        self.tags = np.full((self.n_sets, self.assoc), _EMPTY, dtype=np.uint64)
        self.stamp = np.full((self.n_sets, self.assoc), _OLD, dtype=np.int64)

    def install(self, sets: np.ndarray, keys: np.ndarray, stamps: np.ndarray, ordered: bool = False) -> None:
        """Insert unique ``keys`` with their last-use stamps, newer than anything resident.

        ``ordered`` says the entries are already sorted by set, newest first.
        """
        if keys.size == 0:
            return
        eq = self.tags[sets] == keys[:, None]
        r, way = np.nonzero(eq)  # at most one way per row: keys are unique within a set
        if r.size:  # already resident: refresh the stamp in place
            self.stamp[sets[r], way] = stamps[r]
            new = np.ones(keys.size, dtype=bool)
            new[r] = False
            sets, keys, stamps = sets[new], keys[new], stamps[new]
            if keys.size == 0:
                return
        if not ordered:
            o = np.lexsort((-stamps, sets))
            sets, keys, stamps = sets[o], keys[o], stamps[o]
        rank = np.arange(sets.size) - np.searchsorted(sets, sets, side="left")
        # rank r (newest first) replaces the r-th least recently used way of its set;
        # written stamps are newer than every resident one, so argmin finds the next victim
        for rk in range(min(int(rank.max()) + 1, self.assoc)):
            m = rank == rk
            ns = sets[m]
            way = self.stamp[ns].argmin(axis=1)
            self.tags[ns, way] = keys[m]
            self.stamp[ns, way] = stamps[m]

    def access(self, sets: np.ndarray, keys: np.ndarray, t0: int, chunk: int) -> np.ndarray:
        """Hit flag of each access, in order; updates the state. ``t0`` offsets the LRU stamps.

        The per-chunk bookkeeping (repeats inside a chunk, the last use of each key,
        install order) is computed for the whole stream with one sort up front.
        """
        n = keys.size
        if n == 0:
            return np.zeros(0, dtype=bool)
        chunk = max(1, int(chunk))
        pos = np.arange(n, dtype=np.int64)
        cid = pos // chunk
        _, kd = _uniq_inv(keys)
        big = cid * (int(kd.max()) + 1) + kd  # (chunk, key) pairs
        order = np.argsort(big, kind="stable")
        bs = big[order]
        first = np.r_[True, bs[1:] != bs[:-1]]
        seen = np.empty(n, dtype=bool)
        seen[order] = ~first  # repeated within its chunk
        last = order[np.r_[first[1:], True]]  # last use of each (chunk, key)
        lo = np.lexsort((-last, sets[last], cid[last]))
        last = last[lo]
        bounds = np.searchsorted(cid[last], np.arange(0, (n - 1) // chunk + 2))
        hits = seen
        for c in range((n - 1) // chunk + 1):
            c0, c1 = c * chunk, min(n, (c + 1) * chunk)
            k, s = keys[c0:c1], sets[c0:c1]
            hits[c0:c1] |= _rowany(self.tags[s] == k[:, None])
            lp = last[bounds[c]:bounds[c + 1]]
            self.install(sets[lp], keys[lp], t0 + lp, ordered=True)
        return hits


def _rowany(eq: np.ndarray) -> np.ndarray:
    """``eq.any(axis=1)`` for a C-contiguous (n, A) bool matrix, without numpy's slow
    short-axis reduction: rows are reinterpreted as a few machine words."""
    n, a = eq.shape
    for width, dt in ((8, np.uint64), (4, np.uint32), (2, np.uint16)):
        if a % width == 0:
            words = np.ascontiguousarray(eq).view(dt).reshape(n, a // width)
            out = words[:, 0] != 0
            for j in range(1, a // width):
                out |= words[:, j] != 0
            return out
    return eq.any(axis=1)


def _chunk(capacity: int, cfg: "TimingConfig") -> int:
    """LRU step size: at most half the capacity, so ignoring evictions inside a step stays mild."""
    return int(min(max(cfg.lru_chunk_max, 16), max(256, capacity // 2)))


def _uniq(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based; cheaper than np.unique's hash path here)."""
    if x.size == 0:
        return x.copy()
    y = np.sort(x)
    return y[np.r_[True, y[1:] != y[:-1]]]


def _uniq_inv(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and, for each element, the index of its value (int64)."""
    order = np.argsort(x, kind="stable")
    y = x[order]
    start = np.r_[True, y[1:] != y[:-1]] if y.size else np.zeros(0, bool)
    inv = np.empty(x.size, dtype=np.int64)
    inv[order] = np.cumsum(start) - 1
    return y[start], inv


def _first_occurrence(x: np.ndarray) -> np.ndarray:
    """True at the first position of every distinct value."""
    out = np.zeros(x.size, dtype=bool)
    if x.size:
        order = np.argsort(x, kind="stable")
        y = x[order]
        out[order[np.r_[True, y[1:] != y[:-1]]]] = True
    return out


def _member(x: np.ndarray, sorted_vals: np.ndarray) -> np.ndarray:
    """``np.isin(x, sorted_vals)`` for an ascending ``sorted_vals`` (binary search)."""
    if sorted_vals.size == 0 or x.size == 0:
        return np.zeros(x.size, dtype=bool)
    i = np.minimum(np.searchsorted(sorted_vals, x), sorted_vals.size - 1)
    return sorted_vals[i] == x


def _compact(*set_arrays: np.ndarray) -> tuple[int, list[np.ndarray]]:
    """Renumber set indices used by several streams to 0..n-1 (same mapping for all)."""
    u = _uniq(np.concatenate(set_arrays))
    return max(1, u.size), [np.searchsorted(u, a) for a in set_arrays]


def _hash_set(keys: np.ndarray, n_sets: int) -> np.ndarray:
    """Set index from a multiplicative hash (GPU L2 slices/sets use hashed addresses)."""
    h = (keys * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(29)
    return (h % np.uint64(n_sets)).astype(np.int64)


# ----------------------------------------------------------------------------- helpers
def _pnorm(xs, p: float):
    """Soft maximum of overlapping bounds: (sum x^p)^(1/p); p=inf is the plain max."""
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    if not np.isfinite(p):
        return np.maximum.reduce(xs)
    scale = np.maximum.reduce(xs)
    safe = np.where(scale > 0, scale, 1.0)
    return scale * sum((x / safe) ** p for x in xs) ** (1.0 / p)


def _range_mod_counts(lo: np.ndarray, hi: np.ndarray, S: int) -> np.ndarray:
    """(R, S) counts of integers j in [lo_r, hi_r) with j % S == s (CTA -> SM round robin)."""
    s = np.arange(S, dtype=np.int64)[None, :]
    def below(x):  # count of j in [0, x) with j % S == s
        x = x[:, None]
        return np.maximum(0, (x - s + S - 1) // S)
    return below(hi) - below(lo)


def _shared_wavefronts(t: KernelTrace, ii: np.ndarray, cnt_all: np.ndarray) -> np.ndarray:
    """Shared-memory wavefronts of instructions ``ii``: max(bytes / 128, worst bank conflict).

    32 banks of 4 bytes; lanes reading the same word share it (broadcast); a bank
    that must serve d distinct words needs d wavefronts. Wide accesses (64/128-bit)
    are judged by their first word, which reproduces the phase rule (LDS.128 over
    consecutive 16 B = 4 wavefronts, over a 32 B stride = 8).
    """
    lanes = _popcount32(t.mask[ii])
    base = np.ceil(lanes * np.maximum(t.mem_width[ii], 4) / 128.0)
    cnt = cnt_all[ii]
    has = cnt > 0
    if not has.any():
        return base
    jj, cnt = ii[has], cnt[has]
    M = jj.size
    offs = np.cumsum(cnt) - cnt
    pos = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(offs, cnt)
    words = (t.addrs[np.repeat(t.addr_ptr[jj], cnt) + pos] >> np.uint64(2)).astype(np.int64)
    key = np.full((M, 32), np.iinfo(np.int64).max, dtype=np.int64)
    key[np.repeat(np.arange(M), cnt), np.minimum(pos, 31)] = (words % 32) * (1 << 40) + (words & ((1 << 40) - 1))
    key.sort(axis=1)
    distinct = np.ones((M, 32), dtype=bool)
    distinct[:, 1:] = key[:, 1:] != key[:, :-1]
    distinct &= key != np.iinfo(np.int64).max
    bank = np.where(distinct, key >> 40, 0)
    per_bank = np.bincount((np.arange(M)[:, None] * 32 + bank).ravel(), weights=distinct.ravel(),
                           minlength=M * 32).reshape(M, 32)
    out = base.copy()
    out[has] = np.maximum(base[has], per_bank.max(axis=1))
    return out


def _carry(arch: str, old: CacheState | None, s2: np.ndarray, useq: np.ndarray, u_full: float,
           frac: float, n_kept: int, reps: float, l2_sectors: int, cfg: "TimingConfig") -> CacheState:
    """L2 state after a kernel: its own data first, then older entries up to the real capacity.

    When the sample skipped CTAs, the kernel's data is extrapolated to dense sector
    ranges: the gaps between neighbouring sample sectors are filled, smallest
    first, while the covered length stays within 2 U (U = the extrapolated
    footprint), so data split across sampled CTAs of one array merges into one
    range and distinct arrays stay apart. This lets a consumer kernel find the
    producer's whole output warm, not only the sampled CTAs' part.
    """
    rev = s2[::-1]
    recent = rev[_first_occurrence(rev)]  # distinct sectors, most recently used first
    lo = recent
    hi = recent + np.uint64(1)
    w = np.full(recent.size, 1.0 / frac)
    if reps > 1.0 and useq.size > 1:
        gaps = np.diff(useq).astype(np.float64) - 1.0  # untouched sectors between neighbours
        # fill the smallest gaps first while the covered length stays within 2 U
        order = np.argsort(gaps, kind="stable")
        n_fill = int(np.searchsorted(np.cumsum(gaps[order]), 2.0 * u_full - useq.size, side="right"))
        filled = np.zeros(gaps.size, dtype=bool)
        filled[order[:n_fill]] = True
        brk = np.flatnonzero(~filled)
        lo = useq[np.r_[0, brk + 1]]
        hi = useq[np.r_[brk, useq.size - 1]] + np.uint64(1)
        w = (hi - lo).astype(np.float64)
        # most recently used range first (e.g. the output written at the end, then inputs)
        which = np.searchsorted(lo, recent, side="right") - 1
        first_use = np.full(lo.size, np.iinfo(np.int64).max, dtype=np.int64)
        ok = which >= 0
        np.minimum.at(first_use, which[ok], np.flatnonzero(ok))
        o = np.argsort(first_use, kind="stable")
        lo, hi, w = lo[o], hi[o], w[o]
    if old is not None and old.n_entries:
        new = CacheState(arch, lo, hi, w)
        c_lo, _ = new.covers(old.lo)
        c_hi, _ = new.covers(old.hi - np.uint64(1))
        keep_old = ~(c_lo & c_hi)  # drop older entries the new data covers
        lo = np.concatenate([lo, old.lo[keep_old]])
        hi = np.concatenate([hi, old.hi[keep_old]])
        w = np.concatenate([w, old.weight[keep_old]])
    # LRU at the real capacity: the entry that overflows keeps only what still fits (the
    # end of a range, the part a forward sweep touched last); a single sampled sector
    # survives if at least half of what it stands for fits
    room = l2_sectors - (np.cumsum(w) - w)
    rng_ = (hi - lo) > np.uint64(1)
    part = (w > room) & (room > 0)
    cut = part & rng_
    lo = lo.copy()
    lo[cut] = hi[cut] - np.floor(room[cut]).astype(np.uint64)
    w = np.where(cut, np.floor(room), w)
    keep = (room > 0) & ~(part & ~rng_ & (room < 0.5 * w)) & (w > 0)
    n = min(int(keep.sum()), cfg.max_carried_sectors)
    lo, hi, w = lo[keep][:n], hi[keep][:n], w[keep][:n]
    return CacheState(arch, lo.astype(np.uint64), hi.astype(np.uint64), w.astype(np.float64))


def _popcount32(mask: np.ndarray) -> np.ndarray:
    return np.bitwise_count(mask.astype(np.uint32, copy=False)).astype(np.int64)


# ----------------------------------------------------------------------------- the model
def simulate(arch: ArchConfig, work: WorkSummary, cache: CacheState | None,
             rng: np.random.Generator, cfg: TimingConfig) -> tuple[dict[str, float], CacheState]:
    """Per-invocation metrics of the whole kernel on ``arch`` and the L2 state it leaves.

    One call draws exactly one standard normal from ``rng`` (the run-to-run
    jitter), so a fixed seed gives byte-identical results.
    """
    h = work.header
    t = work.sample
    where = f"kernel {h.name!r} (id {h.kernel_id})"
    if cache is not None and cache.arch != arch.name:
        raise TimingError(located(where, None, "cache", f"cache state of arch {cache.arch!r} "
                                  f"passed to arch {arch.name!r}"))
    if not np.isfinite(work.insts_scale) or work.insts_scale <= 0:
        raise TimingError(located(where, None, "insts_scale", f"must be > 0, got {work.insts_scale!r}"))
    n_ctas = int(h.n_ctas)
    if n_ctas < 1:
        raise TimingError(located(where, None, "grid", f"empty grid {h.grid}"))
    occ = occupancy(arch, h.threads_per_cta, int(h.nregs), int(h.shmem))
    k_res = occ.ctas_per_sm
    S = arch.sm_count
    N = t.n_insts
    W = t.n_warps

    # ---- per-instruction classes and per-warp / per-CTA counts -------------------------
    cls_tab = classify_opcodes(t.opcode_table)
    fma_tab = np.array([_tensor_fma(x) if cls_tab[i] == _C["tensor"] else 0.0
                        for i, x in enumerate(t.opcode_table)], dtype=np.float64)
    lanes = _popcount32(t.mask) if N else np.zeros(0, np.int64)
    # an empty mask: the warp issued it with its guard false on every lane (the sample keeps
    # those; an NVBit trace has none), so it is work of no pipe
    on = lanes > 0
    cls = np.where(on, cls_tab[t.opcode], _C["off"]) if N else np.zeros(0, np.int64)
    wlen = np.diff(t.warp_ptr).astype(np.int64)
    warp_of = np.repeat(np.arange(W, dtype=np.int64), wlen)
    wcnt = np.bincount(warp_of * NC + cls, minlength=W * NC).reshape(W, NC).astype(np.float64)
    w_fma = np.bincount(warp_of, weights=np.where(on, fma_tab[t.opcode], 0.0), minlength=W) if N else np.zeros(W)

    gx, gy = h.grid[0], h.grid[1]
    wc = t.warp_cta.astype(np.int64)
    warp_cta_lin = wc[:, 0] + gx * (wc[:, 1] + gy * wc[:, 2]) if W else np.zeros(0, np.int64)
    if W:
        cta_start = np.flatnonzero(np.r_[True, warp_cta_lin[1:] != warp_cta_lin[:-1]])
    else:
        cta_start = np.zeros(0, np.int64)
    n_sc = max(1, cta_start.size)  # sampled CTAs present in the trace
    cta_of_warp = np.repeat(np.arange(cta_start.size), np.diff(np.r_[cta_start, W])) if W else cta_start
    cta_ids = warp_cta_lin[cta_start] if W else np.zeros(1, np.int64)
    if W and not np.array_equal(_uniq(cta_ids), _uniq(np.asarray(work.sample_cta_ids, dtype=np.int64))):
        raise TimingError(located(where, None, "sample_cta_ids", "CTAs of the sample's warps "
                                  f"{cta_ids[:4].tolist()}... differ from sample_cta_ids "
                                  f"{np.asarray(work.sample_cta_ids)[:4].tolist()}..."))
    if W and int(cta_ids.max()) >= n_ctas:
        raise TimingError(located(where, None, "warp_cta", f"CTA {int(cta_ids.max())} outside grid {h.grid}"))

    scale = float(work.insts_scale)
    tot_cls = wcnt.sum(axis=0) * scale  # whole-kernel warp-instructions per class
    inst_total = float(N) * scale

    # ---- memory: coalescing + caches --------------------------------------------------
    mem = _memory(arch, t, cls, cls_tab, warp_of, wlen, cta_of_warp, cta_ids, n_ctas, occ, cache, cfg)

    # ---- latencies: per-class stall a dependent chain pays per warp-instruction ----------
    h1, h2 = mem["l1_hit"], mem["l2_load_hit"]
    ld_lat = h1 * arch.l1_lat + (1 - h1) * (h2 * arch.l2_lat + (1 - h2) * arch.dram_lat)
    ilp, mlp = max(cfg.ilp, 1e-6), max(cfg.mlp, 1e-6)
    stall = np.ones(NC)
    for c, lat in (("int", arch.alu_lat), ("fp32", arch.alu_lat), ("fp64", arch.fp64_lat),
                   ("sfu", arch.sfu_lat), ("tensor", arch.tensor_lat), ("ctrl", arch.branch_lat),
                   ("sync", arch.sync_lat), ("lds", arch.shared_lat), ("sts", 1.0), ("stg", 1.0),
                   ("stl", 1.0)):
        stall[_C[c]] = max(1.0, lat / ilp)
    mem_stall = np.zeros(NC)
    for c in ("ldg", "ldl", "ldgsts"):
        mem_stall[_C[c]] = max(1.0, ld_lat / mlp)
    mem_stall[_C["atom"]] = max(1.0, arch.l2_lat / mlp)
    chain_w = wcnt @ (stall + mem_stall)  # cycles a warp needs alone
    chain_mem_w = wcnt @ mem_stall
    if W:
        cta_chain = np.maximum.reduceat(chain_w, cta_start)
        cta_cnt = np.add.reduceat(wcnt, cta_start, axis=0)
        cta_fma = np.add.reduceat(w_fma, cta_start)
    else:
        cta_chain = np.zeros(1)
        cta_cnt = np.zeros((1, NC))
        cta_fma = np.zeros(1)
    mem_frac = float(chain_mem_w.sum() / chain_w.sum()) if chain_w.sum() > 0 else 0.0

    # ---- distribute the grid: CTA j -> SM j % S, represented by sampled CTA floor(j*n/N) --
    r = np.arange(n_sc, dtype=np.int64)
    lo = -(-(r * n_ctas) // n_sc)
    hi = -(-((r + 1) * n_ctas) // n_sc)
    M = _range_mod_counts(lo, hi, S).astype(np.float64)  # (n_sc, S)
    per_cta = scale * n_sc / n_ctas  # sample CTA counts -> one real CTA's counts
    sm_cnt = M.T @ (cta_cnt * per_cta)  # (S, NC)
    sm_fma = M.T @ (cta_fma * per_cta)
    sm_l1 = M.T @ (cta_cnt @ mem["l1_wavefronts_per_inst"] * per_cta)
    n_sm = M.sum(axis=0)  # CTAs per SM
    thr = np.full(NC, arch.int_per_clk)
    thr[_C["fp32"]] = arch.fp32_per_clk
    thr[_C["fp64"]] = arch.fp64_per_clk
    thr[_C["sfu"]] = arch.sfu_per_clk
    thr[_C["sync"]] = arch.issue_per_clk
    thr[_C["off"]] = arch.issue_per_clk  # only the issue slot
    thr[_C["tensor"]] = np.inf  # limited by FMA rate below
    for c in _MEM_CLASSES:
        thr[_C[c]] = arch.lsu_per_clk
    t_pipe = np.max(sm_cnt / thr[None, :], axis=1)
    t_issue = sm_cnt.sum(axis=1) / arch.issue_per_clk
    t_tensor = sm_fma / arch.tensor_fma_per_clk
    t_l1 = sm_l1 / arch.l1_sectors_per_clk
    t_thr = np.maximum.reduce([t_pipe, t_issue, t_tensor, t_l1])
    waves_sm = np.ceil(n_sm / k_res)
    chain_mean = (M.T @ cta_chain) / np.maximum(n_sm, 1)
    # sampled warps may be truncated: stretch each chain to a real warp's length
    warps_per_sampled_cta = W / n_sc if W else occ.warps_per_cta
    trunc = per_cta * warps_per_sampled_cta / occ.warps_per_cta
    t_lat = waves_sm * chain_mean * trunc
    t_sm = _pnorm([t_thr, t_lat], cfg.overlap_p)
    t_sm_max = float(t_sm.max())

    dram_bytes = mem["dram_bytes"] * scale  # sample stream -> whole kernel
    l2_bytes = mem["l2_bytes"] * scale
    t_dram = dram_bytes / (arch.dram_bytes_per_clk * cfg.dram_efficiency)
    t_l2 = l2_bytes / (arch.l2_bw_bytes_per_clk * cfg.l2_efficiency)
    busy = float(_pnorm([t_sm_max, t_dram, t_l2], cfg.overlap_p))

    i_sm = int(np.argmax(t_sm))
    t_mem = max(t_dram, t_l2, float(t_lat[i_sm]) * mem_frac)
    t_cmp = max(float(t_thr[i_sm]), float(t_lat[i_sm]) * (1.0 - mem_frac))
    mem_bound = t_mem ** 2 / (t_mem ** 2 + t_cmp ** 2) if (t_mem + t_cmp) > 0 else 0.0

    base_ns = busy / arch.clock_ghz + cfg.launch_overhead_ns
    cov = cfg.jitter_cov_compute + mem_bound * (cfg.jitter_cov_memory - cfg.jitter_cov_compute)
    sigma = float(np.sqrt(np.log1p(max(cov, 0.0) ** 2)))
    z = float(rng.standard_normal())
    time_ns = base_ns * float(np.exp(sigma * z - 0.5 * sigma * sigma))
    cycles = max(1.0, round(time_ns * arch.clock_ghz))

    active_sms = int(min(S, n_ctas))
    # achieved occupancy: resident CTAs averaged over each SM's busy time, over SMs weighted by busy time
    conc = np.where(n_sm > 0, n_sm / np.maximum(waves_sm, 1), 0.0)
    warp_fill = float(wlen.mean() / np.maximum.reduceat(wlen, cta_start).mean()) if W else 1.0
    w_busy = t_sm / max(t_sm.sum(), 1e-12)
    achieved = float(np.sum(w_busy * conc) * occ.warps_per_cta / arch.max_warps_per_sm * warp_fill)
    achieved = min(max(achieved, 0.0), occ.theoretical)

    thread_insts = float(lanes.sum())
    out = {
        "time_ns": time_ns,
        "cycles": float(cycles),
        "ipc": inst_total / (cycles * active_sms),
        "l1_hit_rate": mem["l1_hit"],
        "l2_hit_rate": mem["l2_hit"],
        "achieved_occupancy": achieved,
        "inst_executed": inst_total,
        "warp_inst_executed_mean": inst_total / (n_ctas * occ.warps_per_cta),
        "nregs": float(h.nregs),
        "shmem": float(h.shmem),
        "pka_coalesced_global_loads": mem["sectors"][_C["ldg"]] * scale + mem["sectors"][_C["ldgsts"]] * scale,
        "pka_coalesced_global_stores": mem["sectors"][_C["stg"]] * scale,
        "pka_coalesced_local_loads": mem["sectors"][_C["ldl"]] * scale,
        "pka_thread_global_loads": tot_cls[_C["ldg"]] + tot_cls[_C["ldgsts"]],
        "pka_thread_global_stores": tot_cls[_C["stg"]],
        "pka_thread_local_loads": tot_cls[_C["ldl"]],
        "pka_thread_shared_loads": tot_cls[_C["lds"]],
        "pka_thread_shared_stores": tot_cls[_C["sts"]] + tot_cls[_C["ldgsts"]],
        "pka_thread_global_atomics": tot_cls[_C["atom"]],
        "pka_instructions": inst_total,
        "pka_divergence_efficiency": thread_insts / N if N else 0.0,
        "pka_thread_blocks": float(n_ctas),
    }
    out = {k: float(out[k]) for k in METRICS}
    return out, mem["state"]


def _memory(arch, t, cls, cls_tab, warp_of, wlen, cta_of_warp, cta_ids, n_ctas, occ, cache, cfg) -> dict:
    """Coalesced sectors per class, L1/L2 hit rates, DRAM/L2 bytes and the next cache state.

    Only global/local instructions go through the cache models; shared-memory
    instructions cost L1 data-path wavefronts (128 bytes each, more with bank conflicts).
    """
    N = t.n_insts
    sb = arch.sector_bytes
    n_sc = cta_ids.size
    res = {"sectors": np.zeros(NC), "l1_wavefronts_per_inst": np.zeros(NC)}
    cnt_all = np.diff(t.addr_ptr) if N else np.zeros(0, np.int64)
    memi = np.flatnonzero(_GLOBALISH[cls] & (t.mem_width > 0) & (cnt_all > 0)) if N else np.zeros(0, np.int64)

    # shared-memory wavefronts per instruction, bank conflicts included
    for c in ("lds", "sts"):
        ii = np.flatnonzero(cls == _C[c])
        if ii.size:
            wf = _shared_wavefronts(t, ii[:: max(1, -(-ii.size // max(1, cfg.max_shared_insts)))], cnt_all)
            # the L1 data path moves 128 B/clk: one shared wavefront = l1_sectors_per_clk sectors
            res["l1_wavefronts_per_inst"][_C[c]] = float(wf.mean()) * arch.l1_sectors_per_clk

    # cap the address stream by keeping whole sampled CTAs, evenly spaced
    if memi.size:
        inst_cta = cta_of_warp[warp_of[memi]]
        addr_per_cta = np.bincount(inst_cta, weights=cnt_all[memi], minlength=n_sc)
        keep_ctas = np.arange(n_sc)
        if addr_per_cta.sum() > cfg.max_cache_addresses:
            stride = int(np.ceil(addr_per_cta.sum() / cfg.max_cache_addresses))
            keep_ctas = np.arange(0, n_sc, stride)
            if addr_per_cta[keep_ctas].sum() > cfg.max_cache_addresses:
                keep_ctas = keep_ctas[:1]
        sel = _member(inst_cta, keep_ctas)
        # a single huge CTA: keep its first instructions only
        if cnt_all[memi[sel]].sum() > cfg.max_cache_addresses:
            csum = np.cumsum(np.where(sel, cnt_all[memi], 0))
            sel &= csum <= cfg.max_cache_addresses
        mi = memi[sel]
    else:
        mi = memi
    l1_acc = l1_hits = l2_ld_acc = l2_ld_hits = l2_st = 0.0
    state_in = cache if (cache is not None and cfg.carry_cache_state) else None
    new_state = CacheState(arch.name)
    res["dram_bytes"] = res["l2_bytes"] = 0.0  # sample-level bytes; the caller scales by insts_scale
    if mi.size:
        cnt = cnt_all[mi]
        M = mi.size
        starts = t.addr_ptr[mi]
        offs = np.cumsum(cnt) - cnt
        pos = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(offs, cnt)
        src = np.repeat(starts, cnt) + pos
        mat = np.full((M, 32), _EMPTY, dtype=np.uint64)
        mat[np.repeat(np.arange(M), cnt), np.minimum(pos, 31)] = t.addrs[src] // np.uint64(sb)
        # wide lanes (e.g. 16 B) stay inside one aligned sector; accesses spanning two are rare
        mat.sort(axis=1)
        first = np.ones((M, 32), dtype=bool)
        first[:, 1:] = mat[:, 1:] != mat[:, :-1]
        first &= mat != _EMPTY
        nsec = first.sum(axis=1)
        mcls = cls[mi]
        mbyp = _bypass_l1(t.opcode_table)[t.opcode[mi]]
        for c in ("ldg", "stg", "atom", "ldl", "stl", "ldgsts"):
            cc = _C[c]
            m = mcls == cc
            if m.any():
                full = np.count_nonzero(cls == cc)
                res["sectors"][cc] = float(nsec[m].mean()) * full  # sample-level; caller scales
                res["l1_wavefronts_per_inst"][cc] = float(nsec[m].mean())
        # temporal order: the kept CTAs run side by side (as co-resident CTAs of one virtual
        # SM, and as concurrent SMs for L2), warps interleaved by their progress
        wv = warp_of[mi]
        cta = cta_of_warp[wv]
        prog = (mi - t.warp_ptr[wv]) / np.maximum(wlen[wv], 1)
        order = np.lexsort((wv, prog))
        mat, first, mcls, cta, mbyp = mat[order], first[order], mcls[order], cta[order], mbyp[order]
        row = np.repeat(np.arange(M), 32).reshape(M, 32)[first]
        sec = mat[first]  # sector stream in issue order
        scls = mcls[row]
        scta = cta[row]
        is_ld = (scls == _C["ldg"]) | (scls == _C["ldl"]) | (scls == _C["ldgsts"])
        is_l1 = (is_ld & ~mbyp[row]) | (scls == _C["stl"])  # .BYPASS loads skip L1
        n_kept = max(1, _uniq(scta).size)
        # ---- L1: the kept CTAs share min(n, k)/k of one SM's L1 ---------------------
        l1_bytes = _l1_bytes(arch, occ.smem_per_sm_used) * min(n_kept, occ.ctas_per_sm) / occ.ctas_per_sm
        l1_sets = max(1, int(l1_bytes // sb // arch.l1_assoc))
        i1 = np.flatnonzero(is_l1)
        hit1 = np.zeros(sec.size, dtype=bool)
        if i1.size:
            s1 = sec[i1]
            set1 = ((s1 ^ (s1 >> np.uint64(7))) % np.uint64(l1_sets)).astype(np.int64)
            n1, (set1,) = _compact(set1)
            l1 = _LRU(n1, arch.l1_assoc)
            hit1[i1] = l1.access(set1, s1, 0, _chunk(l1_sets * arch.l1_assoc, cfg))
        ld1 = is_ld & ~mbyp[row]
        l1_acc = float(ld1.sum())
        l1_hits = float((hit1 & ld1).sum())
        # ---- footprint of the whole kernel from sharing between the kept CTAs ----------
        # share = distinct sectors / sum of per-CTA distinct sectors: 1 when CTAs touch
        # disjoint data, 1/n when they all touch the same data; q = fraction of a CTA's
        # sectors that are new to the kernel, so the full footprint is u * (1 + q (reps - 1)).
        g = scls != _C["stl"]
        useq_all, inv_all = _uniq_inv(sec[g])
        u_sample = float(useq_all.size)
        per_cta_u = float(_uniq(inv_all * n_sc + scta[g]).size)
        share = u_sample / per_cta_u if per_cta_u else 1.0
        q = (share * n_kept - 1.0) / (n_kept - 1.0) if n_kept > 1 else 1.0
        q = min(max(q, 0.0), 1.0)
        reps = n_ctas / n_kept  # real CTAs per kept sampled CTA
        u_full = u_sample * (1.0 + q * (reps - 1.0))
        frac = min(1.0, u_sample / max(u_full, 1.0))
        # ---- L2: whole-GPU cache, capacity scaled to the sample's share of the footprint --
        to_l2 = ~(hit1 | (scls == _C["stl"]))  # L1 misses, global stores, atomics
        s2 = sec[to_l2]
        c2 = scls[to_l2]
        l2_sectors = arch.l2_kb * 1024 // sb
        l2_sets = max(1, int(round(l2_sectors * frac / arch.l2_assoc)))
        warm_keys = np.zeros(0, np.uint64)
        warm_st = np.zeros(0, np.int64)
        if state_in is not None and state_in.n_entries:
            warm, rank = state_in.covers(useq_all)
            warm_keys = useq_all[warm]
            # older entries get lower stamps; all precede this kernel's accesses
            warm_st = -1 - rank[warm]
        n2, (wset, aset) = _compact(_hash_set(warm_keys, l2_sets), _hash_set(s2, l2_sets))
        l2 = _LRU(n2, arch.l2_assoc)
        l2.install(wset, warm_keys, warm_st)
        hit2 = l2.access(aset, s2, 0, _chunk(l2_sets * arch.l2_assoc, cfg))
        is_st = (c2 == _C["stg"])
        ld2 = ~is_st
        # compulsory (first-touch, not warm) load misses: in the real kernel a shared sector
        # misses once for all reps CTAs that read it, so they scale by (1 + q (reps-1)) / reps
        first2 = _first_occurrence(s2)
        if warm_keys.size:
            first2 &= ~_member(s2, _uniq(warm_keys))
        miss_ld = ~hit2 & ld2
        comp = float((miss_ld & first2).sum())
        other = float(miss_ld.sum()) - comp
        comp_real = comp * (1.0 + q * (reps - 1.0)) / reps
        l2_ld_acc = float(ld2.sum())
        miss_rd = other + comp_real
        l2_ld_hits = l2_ld_acc - miss_rd
        l2_st = float(is_st.sum())
        # ---- traffic, scaled from the kept stream to the whole sample (caller scales on) ---
        t_scale = float(memi.size) / float(M)
        wb = min(1.0, u_full / l2_sectors)  # stores reach DRAM when the footprint spills L2
        res["dram_bytes"] = (miss_rd + l2_st * wb) * sb * t_scale
        res["l2_bytes"] = float(s2.size) * sb * t_scale
        # ---- carried L2 state: this kernel's sectors (recency order) then older survivors --
        new_state = _carry(arch.name, state_in, s2, useq_all, u_full, frac, n_kept, reps, l2_sectors, cfg)
    elif state_in is not None:
        new_state = CacheState(arch.name, state_in.lo.copy(), state_in.hi.copy(), state_in.weight.copy())

    res["l1_hit"] = l1_hits / l1_acc if l1_acc else 0.0
    l2_acc = l2_ld_acc + l2_st
    res["l2_hit"] = (l2_ld_hits + l2_st) / l2_acc if l2_acc else 0.0
    res["l2_load_hit"] = l2_ld_hits / l2_ld_acc if l2_ld_acc else 1.0
    res["state"] = new_state
    return res
