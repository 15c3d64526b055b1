"""Photon-style kernel sampling: reuse an earlier kernel whose GPU BBV is nearly the same.

Photon (Liu, Sun and Carlson, MICRO'23) samples at three levels; this is its
kernel level as the STEM+ROOT paper (Sec. 4, Table 1) and the STEM talk describe
it: every invocation gets a GPU basic-block vector, each new invocation is
compared with the invocations already chosen for simulation, and it reuses the
most similar one when their similarity reaches a fixed threshold (95 %), else it
becomes a new simulated invocation. There is no offline clustering, and the
cost is O(N S d) (S chosen invocations, d blocks), which is why STEM reports
it does not scale to millions of kernels.

BBVs come from the SASS traces (PCs), not from a profiler:

* basic blocks are found from the dynamic stream: a block starts at a warp's
  first instruction, at any instruction that does not follow its predecessor's
  PC by one instruction (a taken branch landed there; ``fall_through_pc`` says which PC
  follows, control words of pre-Volta code skipped), and after any control-transfer opcode;
* a block's entry is the number of warp instructions executed in it (so blocks
  are weighted by their length), normalised to sum 1;
* blocks are keyed by (kernel name, first PC), so different kernels never match,
  and with ``match_launch`` (default) also by the launch's grid and block, so
  only launches of the same shape can reuse each other (see the deviation below);
* similarity is ``sum(min(a, b))`` = 1 - L1/2 of the normalised vectors;
* a launch with an empty trace (none of its CTAs ran on the traced SM, as happens to small
  grids on real GPUs) gets one pseudo-block of its kernel key: such launches of one kernel
  (and shape) reuse each other, and match no launch that executed something. Without it
  an empty vector matched nothing, so each of them became its own simulated invocation.

Deviation: Photon scales a reused kernel's result by the new kernel's
instruction count. A gclsampler plan gives each simulated invocation one weight
and the weights sum to the number of invocations, so here each reused
invocation adds weight 1 to its representative (instruction-count scaling would
break the plan contract every evaluator relies on). Weight 1 stands in for that
scaling only when both launches do about the same work, hence ``match_launch``:
a normalised BBV cannot tell a 4-CTA GEMM from a 400-CTA one, Photon's scaling
would, and unscaled reuse across them is off by the CTA ratio.

Traces are whatever the tracer captured: by default every instruction of every
CTA on SM 0 (the paper's scope), so the BBV describes SM 0's share of the kernel,
and with opt-in capped traces (``trace_cap``, ``max_traced_ctas``) only their start.

The BBV table of a workload is kept in its derived-data cache (``gclsampler.workload_cache``,
``<workload>/.graph-cache/v1/photon/``), keyed by the content of every trace in launch order,
``match_launch``, ``BBV_VERSION`` and the trace parser's ``PARSER_VERSION``: reading and parsing
every trace was two thirds of a suite rescore, and the table depends on nothing else.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gclsampler.errors import GclError
from gclsampler.plan import Sampler, SamplingPlan, plan_from_labels
from gclsampler.trace.types import KernelTrace

__all__ = ["PhotonSampler", "PhotonError", "kernel_bbv", "workload_bbvs", "photon_assign", "CONTROL_OPCODES",
           "fall_through_pc"]

CONTROL_OPCODES = frozenset({"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "RTT", "EXIT", "KILL",
                             "BPT", "BREAK", "BSYNC", "WARPSYNC", "YIELD",
                             "CAL", "JCAL", "BRK", "CONT", "SYNC", "KIL", "LONGJMP"})
"""SASS opcodes after which a basic block ends even when execution falls through.

The last line is the Kepler/Maxwell/Pascal spelling of the same transfers (``CAL`` and ``JCAL`` for
``CALL``, ``BRK`` for ``BREAK``, ``SYNC`` for ``BSYNC``, ``KIL`` for ``KILL``, plus ``CONT`` and
``LONGJMP``): without them a not-taken ``@P BRK`` of an sm_6x trace did not end its block while
the same ``@P BREAK`` of an sm_70 one did. The instructions that only set a target up (``SSY``,
``PBK``, ``PCNT``, ``PRET``, ``BSSY``) transfer nothing and are left out."""

BBV_VERSION = 3
"""What a cached BBV table was computed by: bump it with any change to ``kernel_bbv`` or to how
``workload_bbvs`` keys and normalises blocks, so tables from the code before are never read."""


class PhotonError(GclError):
    """Photon cannot run: no traces, or traces that do not match the profile."""


def fall_through_pc(pc: np.ndarray, binary_version: int) -> np.ndarray:
    """The PC of the instruction laid out after each of ``pc`` in the kernel's code.

    Why not ``pc + size``: the tracer records PCs as byte offsets from the function's start
    (NVBit's instruction offset), and before Volta the code holds scheduling control words
    that are never executed. Maxwell and Pascal (sm_5x, sm_6x) pack 3 instructions of 8 bytes
    after one control word in each 32-byte bundle, so a real sm_61 trace runs 0x08 0x10 0x18
    0x28 ...; Kepler (sm_3x) puts one before every 7, in 64-byte bundles. With ``pc + 8``
    alone every bundle edge looked like a taken branch and cut straight-line code into blocks
    of 3 (7) instructions. Volta on (sm_70+) has 16-byte instructions that carry their own
    control bits, and Fermi (sm_2x) 8-byte ones with none. The layout comes from the header's
    binary version rather than from the PCs seen: a kernel's trace need not run two adjacent
    instructions at all (a short kernel, a capped trace), so a stride measured from it can be
    wrong where the architecture's is not. Offsets count from the function's start, which is
    bundle-aligned, so the control words sit at multiples of the bundle size.
    """
    pc = np.asarray(pc, dtype=np.int64)
    if binary_version >= 70:
        return pc + 16
    nxt = pc + 8
    bundle = 32 if binary_version >= 50 else 64 if binary_version >= 30 else 0
    if bundle:
        nxt = np.where(nxt % bundle == 0, nxt + 8, nxt)  # step over the bundle's control word
    return nxt


def kernel_bbv(trace: KernelTrace) -> tuple[np.ndarray, np.ndarray]:
    """``(block_start_pcs, warp_instructions)`` of one invocation, blocks ascending by PC."""
    pc = trace.pc
    n = pc.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    base = np.array([name.split(".")[0] for name in trace.opcode_table])
    is_ctrl = np.isin(base, list(CONTROL_OPCODES))[trace.opcode]
    leader = np.ones(n, dtype=bool)
    leader[1:] = (pc[1:] != fall_through_pc(pc[:-1], trace.header.binary_version)) | is_ctrl[:-1]
    leader[trace.warp_ptr[:-1][np.diff(trace.warp_ptr) > 0]] = True  # each warp's first instruction
    starts = np.unique(pc[leader])
    block = np.searchsorted(starts, pc, side="right") - 1
    return starts, np.bincount(block, minlength=starts.size).astype(np.int64)


def workload_bbvs(root: str | Path, n_expected: int | None = None, match_launch: bool = True,
                  cache: bool = True, cache_dir: str | Path | None = None) -> sp.csr_matrix:
    """Normalised BBVs of every invocation of a workload directory, one row each, launch order.

    Block keys carry the kernel name, and with ``match_launch`` the grid and block too. With
    ``cache``, the table is read from (or written to) the workload's cache (``cache_dir``,
    default ``<root>/.graph-cache``); a cache that cannot be used is passed by, never an error.
    """
    from gclsampler.trace.workload import kernelslist_path, trace_files

    root = Path(root)
    files = trace_files(root)  # kernelslist.g only; the traces are read below
    n = len(files)
    if n_expected is not None and n != n_expected:
        kl = kernelslist_path(root)
        where = f"{kl}: lists" if kl is not None else f"{root}: holds (no kernelslist.g)"
        raise PhotonError(f"{where} {n} traces but profile.csv has "
                          f"{n_expected} invocations; photon needs one trace per invocation")
    at = _bbv_cache_path(root, files, match_launch, cache_dir) if cache else None
    m = _read_bbvs(at, n) if at is not None else None
    if m is None:
        m = _compute_bbvs(root, n, match_launch)
        if at is not None:
            _write_bbvs(at, m)
    return m


def _compute_bbvs(root: Path, n: int, match_launch: bool) -> sp.csr_matrix:
    from gclsampler.trace.workload import iter_distinct_kernels

    keys: dict[tuple[str, int], int] = {}
    rows, cols, vals = [], [], []
    row_of: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # a launch text's block columns and values
    for i, (text, trace) in enumerate(iter_distinct_kernels(root)):
        if trace is not None:  # the first launch of this text (the kernel id aside): its BBV
            starts, counts = kernel_bbv(trace)
            h = trace.header
            kernel = (h.name, h.grid, h.block) if match_launch else (h.name,)
            if starts.size == 0:  # no CTA on the traced SM: one pseudo-block (PC -1, never a real PC)
                starts, counts = np.array([-1], dtype=np.int64), np.ones(1, dtype=np.int64)
            idx = np.fromiter((keys.setdefault((kernel, int(s)), len(keys)) for s in starts.tolist()),
                              dtype=np.int64, count=starts.size)
            total = counts.sum()
            row_of[text] = (idx, counts / total if total else counts.astype(float))
        idx, val = row_of[text]
        rows.append(np.full(idx.size, i, dtype=np.int64))
        cols.append(idx)
        vals.append(val)
    if not rows:
        return sp.csr_matrix((n, 0))
    m = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, len(keys)))
    m.sort_indices()
    return m


def _bbv_cache_path(root: Path, files: list[str], match_launch: bool, cache_dir) -> Path | None:
    """Where this workload's BBV table is cached, or None where the cache cannot be used (a
    directory of someone else's files, an unreadable trace: the read below then says why)."""
    from gclsampler.trace import reader
    from gclsampler.workload_cache import (CACHE_VERSION, check_cache_dir, default_cache_dir, digest, trace_digest,
                                           trace_memo_dir)

    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir(root)
    try:
        check_cache_dir(cache)
        memo = trace_memo_dir(cache)
        traces = [trace_digest(root / f, memo) for f in files]
    except (GclError, OSError):
        return None
    key = digest(json.dumps({"bbv": BBV_VERSION, "parser": reader.PARSER_VERSION, "match_launch": bool(match_launch),
                             "traces": traces}).encode())
    return cache / f"v{CACHE_VERSION}" / "photon" / f"{key}.npz"


def _read_bbvs(path: Path, n: int) -> sp.csr_matrix | None:
    """The cached table, or None when it is missing or cannot be trusted (then it is recomputed)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            shape = tuple(int(x) for x in z["shape"])
            m = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
        m.check_format(full_check=True)
    except Exception:  # missing, truncated, or not what this code writes: recompute
        return None
    if shape[0] != n or m.data.dtype != np.float64 or not m.has_sorted_indices:
        return None
    return m


def _write_bbvs(path: Path, m: sp.csr_matrix) -> None:
    from gclsampler._atomic import write_bytes_atomic

    buf = io.BytesIO()
    np.savez(buf, data=m.data, indices=m.indices, indptr=m.indptr, shape=np.asarray(m.shape, dtype=np.int64))
    try:
        write_bytes_atomic(path, buf.getvalue())
    except OSError:  # a read-only workload: still correct, just slower next time
        pass


SIM_ROUNDING = 1e-9
"""How far below ``threshold`` a summed similarity may fall and still count as reaching it.
Why: a similarity is a float sum over blocks, and two identical BBVs of 7 blocks each 1/7
summed to 0.9999999999999998, so at ``threshold`` 1.0 a launch did not reuse its exact twin.
The rounding of such a sum is below 1e-12 up to thousands of blocks; real BBV similarities
are far coarser than 1e-9."""


def photon_assign(bbv: sp.csr_matrix, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Online, in launch order: ``(labels, representatives)``.

    Invocation i joins the most similar representative chosen so far (earliest on
    ties) when the similarity is at least ``threshold`` (within ``SIM_ROUNDING``); otherwise it
    becomes a representative itself. Only representatives sharing a block with i can score
    above 0, so each comparison runs against those alone; the loop is compiled
    (``gclsampler._photon_jit``). Ties: scanning the candidates from the earliest, a later one
    replaces the best only when more similar by 1e-12.
    """
    from gclsampler._photon_jit import assign

    bbv = sp.csr_matrix(bbv, dtype=np.float64, copy=True)
    bbv.sum_duplicates()  # also sorts each row's blocks
    return assign(bbv.indptr.astype(np.int64), bbv.indices.astype(np.int64), bbv.data,
                  bbv.shape[1], float(threshold) - SIM_ROUNDING)


class PhotonSampler(Sampler):
    """Photon (kernel level): reuse an earlier invocation whose trace BBV is threshold-similar.

    Details and the deviation from Photon are in the module docstring.

    ``threshold``: similarity (1 - L1/2 of normalised BBVs) at or above which an
    invocation reuses an earlier representative; Photon's fixed value is 0.95.
    ``match_launch``: reuse only within one grid and block shape (the stand-in for
    Photon's instruction-count scaling; false gives BBV similarity alone).

    Learned: ``labels_``, ``representatives_``, ``n_blocks_`` (BBV dimensions).
    """

    name = "photon"
    stochastic = False

    def __init__(self, threshold: float = 0.95, match_launch: bool = True, random_state: int = 0):
        self.threshold = threshold
        self.match_launch = match_launch
        self.random_state = random_state

    def missing_inputs(self, workload) -> str | None:
        root = getattr(workload, "root", None)
        if root is None:
            return "no workload directory: Photon's BBVs come from the traces"
        from gclsampler.trace.workload import no_traces

        why = no_traces(root)
        return why and f"{why}: Photon's BBVs come from the traces"

    def fit(self, workload) -> SamplingPlan:
        if not 0.0 < float(self.threshold) <= 1.0:
            raise PhotonError(f"photon: threshold: must be in (0, 1], found {self.threshold!r}")
        root = getattr(workload, "root", None)
        if root is None:
            raise PhotonError(f"photon: workload {workload.name!r} has no directory, and BBVs come from its traces")
        bbv = workload_bbvs(root, workload.n_invocations, bool(self.match_launch),
                            cache_dir=getattr(workload, "cache_dir", None))
        labels, reps = photon_assign(bbv, float(self.threshold))
        names = workload.profile["kernel_name"].to_numpy().astype(str)
        self.labels_, self.representatives_, self.n_blocks_ = labels, reps, int(bbv.shape[1])
        config = {**self.get_params(), "n_blocks": self.n_blocks_, "n_representatives": int(reps.size)}
        self.plan_ = plan_from_labels(workload.name, self.name, labels, reps, names, config,
                                      bool(getattr(workload, "synthetic", False))).validate("photon plan")
        return self.plan_
