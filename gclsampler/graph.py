"""Heterogeneous relational graph (HRG) of one kernel invocation (GCL-Sampler, sections 3.2, 3.3.1).

Every traced warp becomes its own graph; the kernel graph is their disjoint union and
each node keeps the index of its warp so the encoder can pool per warp, then per kernel.
See docs/graph.md for the drawn example and the reasoning behind each choice.

Nodes (``node_type``):

- 0 instruction: one per executed (traced) SASS instruction; ``token`` = base opcode id
  (``LDG.E.128`` -> ``LDG``), ``pc`` = PC / max PC of the kernel's trace.
- 1 pseudo: one ``MEMREF`` per memory instruction, the address calculation that happens
  inside the instruction; ``token`` encodes load/store/atomic, memory space and footprint.
- 2 variable: a *version* of a register (per run) or of a memory unit (per run, per
  128-byte line by default); a run is a stretch of kept instructions of one warp that are
  consecutive in its trace (the whole kept warp, or one window). Every write creates a new
  version, reads attach to the latest one of the run (SSA-like). A version nobody in the run
  wrote (live-in) carries statistics of the
  values the trace recorded; versions produced inside the graph carry zeros and are
  "computed" by message passing.

Edges (``edge_type``), always from the source of information to its consumer:

- 0 control flow: instruction -> next executed instruction of the same warp (a path per run;
  none joins two windows).
- 1 read: variable version -> instruction reading it as a data operand (registers, and the
  memory unit a load/atomic reads).
- 2 write: instruction -> the variable version it produces (destination registers, the
  memory unit a store/atomic writes).
- 3 address: address register version -> MEMREF pseudo node, and MEMREF -> its instruction.

The build is vectorised over the whole (capped) trace: versioning is one lexsort of
(variable key, instruction, read-before-write) plus a running maximum, no Python loop per
instruction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:  # torch is imported where a graph is made: train.py's config (GraphConfig) does not need it
    from torch_geometric.data import Data

from gclsampler.errors import GclError, located
from gclsampler.graph_schema import (EDGE_ADDRESS, EDGE_CONTROL, EDGE_READ, EDGE_TYPE_NAMES, EDGE_WRITE,
                                     KERNEL_FEATURE_NAMES, N_KERNEL_FEATURES, N_STATS, NODE_INSTRUCTION,
                                     NODE_PSEUDO, NODE_TYPE_NAMES, NODE_VARIABLE, NUM_EDGE_TYPES, NUM_NODE_TYPES)
from gclsampler.trace.types import NO_REG, KernelTrace

__all__ = [
    "NUM_NODE_TYPES",
    "NUM_EDGE_TYPES",
    "N_STATS",
    "NODE_INSTRUCTION",
    "NODE_PSEUDO",
    "NODE_VARIABLE",
    "EDGE_CONTROL",
    "EDGE_READ",
    "EDGE_WRITE",
    "EDGE_ADDRESS",
    "GraphConfig",
    "GraphConfigError",
    "GraphBuildError",
    "build_graph",
    "vocab_sizes",
    "OPCODE_VOCAB",
    "PSEUDO_VOCAB",
    "VARIABLE_VOCAB",
    "opcode_token",
    "graph_summary",
    "kernel_features",
    "N_KERNEL_FEATURES",
    "KERNEL_FEATURE_NAMES",
]


# --------------------------------------------------------------------------------------
# Vocabularies. Ids are positions in these tuples; id 0 is UNK in every vocabulary so that
# a token never seen when the list was written still embeds (as "unknown of this type").
# Appending is backward compatible for cached graphs only if FORMAT_VERSION is bumped.
# --------------------------------------------------------------------------------------

UNK = "<UNK>"

# Base SASS opcodes of Volta (sm_70), Turing (sm_75), Ampere (sm_80/86) and Ada (sm_89),
# from the CUDA Binary Utilities instruction set tables. Grouped as there.
_SASS_OPCODES = (
    # floating point
    "FADD", "FADD32I", "FCHK", "FFMA", "FFMA32I", "FHADD", "FHFMA", "FMNMX", "FMUL", "FMUL32I",
    "FSEL", "FSET", "FSETP", "FSWZADD", "MUFU",
    "HADD2", "HADD2_32I", "HFMA2", "HFMA2_32I", "HMMA", "HMNMX2", "HMUL2", "HMUL2_32I",
    "HSET2", "HSETP2",
    "DADD", "DFMA", "DMMA", "DMUL", "DSETP",
    # integer
    "BMMA", "BMSK", "BREV", "FLO", "IABS", "IADD", "IADD3", "IADD32I", "IDP", "IDP4A",
    "IMAD", "IMMA", "IMNMX", "IMUL", "IMUL32I", "ISCADD", "ISCADD32I", "ISETP", "LEA",
    "LOP", "LOP3", "LOP32I", "POPC", "SHF", "SHL", "SHR", "VABSDIFF", "VABSDIFF4",
    # conversion
    "F2F", "F2FP", "F2I", "F2IP", "FRND", "I2F", "I2FP", "I2I", "I2IP",
    # movement
    "MOV", "MOV32I", "MOVM", "PRMT", "SEL", "SGXT", "SHFL",
    # predicate
    "PLOP3", "PSETP", "P2R", "R2P",
    # load / store
    "LD", "LDC", "LDG", "LDGDEPBAR", "LDGSTS", "LDL", "LDS", "LDSM",
    "ST", "STG", "STL", "STS", "MATCH", "QSPC",
    "ATOM", "ATOMG", "ATOMS", "RED", "CCTL", "CCTLL", "CCTLT", "ERRBAR", "MEMBAR",
    # uniform datapath
    "R2UR", "S2UR", "UBMSK", "UBREV", "UCLEA", "UF2FP", "UFLO", "UIADD3", "UIMAD", "UISETP",
    "ULDC", "ULEA", "ULOP", "ULOP3", "ULOP32I", "UMOV", "UP2UR", "UPLOP3", "UPOPC",
    "UPRMT", "UPSETP", "UR2UP", "USEL", "USGXT", "USHF", "USHL", "USHR", "VOTEU",
    # texture / surface
    "TEX", "TLD", "TLD4", "TMML", "TXD", "TXQ", "SUATOM", "SULD", "SURED", "SUST",
    # control
    "BMOV", "BPT", "BRA", "BREAK", "BRX", "BRXU", "BSSY", "BSYNC", "CALL", "EXIT", "JMP",
    "JMX", "JMXU", "KILL", "NANOSLEEP", "RET", "RPCMOV", "RTT", "WARPSYNC", "YIELD",
    # miscellaneous
    "B2R", "BAR", "CS2R", "CSMTEST", "DEPBAR", "GETLMEMBASE", "LEPC", "NOP", "PMTRIG",
    "R2B", "S2R", "SETCTAID", "SETLMEMBASE", "VOTE",
)
OPCODE_VOCAB: tuple[str, ...] = (UNK,) + _SASS_OPCODES
_OPCODE_ID = {name: i for i, name in enumerate(OPCODE_VOCAB)}

# Memory spaces (variable vocabulary and pseudo tokens).
_SPACES = ("GLOBAL", "SHARED", "LOCAL", "GENERIC", "CONST", "TEXTURE")
_SP = {name: i for i, name in enumerate(_SPACES)}
# Memory access kinds: what the instruction does to the memory unit.
_KINDS = ("LD", "ST", "ATOM")
_MEM_NONE, _MEM_LD, _MEM_ST, _MEM_ATOM = -1, 0, 1, 2
_FOOTPRINT_BUCKETS = 6  # distinct memory units touched: 1, 2, 3-4, 5-8, 9-16, 17+

_MEM_OPS = {
    # opcode: (kind, space)
    "LDG": (_MEM_LD, "GLOBAL"), "LDGSTS": (_MEM_LD, "GLOBAL"), "STG": (_MEM_ST, "GLOBAL"),
    "ATOMG": (_MEM_ATOM, "GLOBAL"), "RED": (_MEM_ATOM, "GLOBAL"),
    "LDS": (_MEM_LD, "SHARED"), "LDSM": (_MEM_LD, "SHARED"), "STS": (_MEM_ST, "SHARED"),
    "ATOMS": (_MEM_ATOM, "SHARED"),
    "LDL": (_MEM_LD, "LOCAL"), "STL": (_MEM_ST, "LOCAL"),
    "LD": (_MEM_LD, "GENERIC"), "ST": (_MEM_ST, "GENERIC"), "ATOM": (_MEM_ATOM, "GENERIC"),
    "LDC": (_MEM_LD, "CONST"), "ULDC": (_MEM_LD, "CONST"),
    "TEX": (_MEM_LD, "TEXTURE"), "TLD": (_MEM_LD, "TEXTURE"), "TLD4": (_MEM_LD, "TEXTURE"),
    "TXD": (_MEM_LD, "TEXTURE"), "SULD": (_MEM_LD, "TEXTURE"), "SUST": (_MEM_ST, "TEXTURE"),
    "SUATOM": (_MEM_ATOM, "TEXTURE"), "SURED": (_MEM_ATOM, "TEXTURE"),
}

PSEUDO_VOCAB: tuple[str, ...] = (UNK,) + tuple(
    f"MEMREF.{k}.{s}.F{b}" for k in _KINDS for s in _SPACES for b in range(_FOOTPRINT_BUCKETS)
)

_REG_CLASSES = ("R", "UR", "P", "UP")
VARIABLE_VOCAB: tuple[str, ...] = (UNK,) + tuple(f"REG.{c}" for c in _REG_CLASSES) + tuple(
    f"MEM.{s}" for s in _SPACES
)
_VAR_REG_BASE = 1
_VAR_MEM_BASE = 1 + len(_REG_CLASSES)

# How raw uint32 register bits are read before statistics: 0 = int32, 1 = float32,
# 2 = float16 in the low half (the first lane of a half2 pair). Sources and destinations
# separately, because conversions change the type (F2I: float in, int out).
_INT, _F32, _F16 = 0, 1, 2
_FLOAT_IO = {"FADD", "FADD32I", "FFMA", "FFMA32I", "FHADD", "FHFMA", "FMNMX", "FMUL", "FMUL32I",
             "FSEL", "FSWZADD", "MUFU", "FRND", "F2F"}
_FLOAT_IN = {"FSET", "FSETP", "FCHK", "F2I", "F2IP"}
_FLOAT_OUT = {"I2F", "I2FP"}
_HALF_IO = {"HADD2", "HADD2_32I", "HFMA2", "HFMA2_32I", "HMNMX2", "HMUL2", "HMUL2_32I"}
_HALF_IN = {"HSET2", "HSETP2"}

# Constant registers: reading them reads no variable, writing them discards the result.
_CONST_REGS = np.array([255, 256 + 63, 512 + 7, 640 + 7], dtype=np.int64)  # RZ URZ PT UPT
_REG_KEY_SPAN = 1024  # reg codes are < 648
_REG_VARIABLE = np.ones(_REG_KEY_SPAN + 1, dtype=bool)  # indexed by code + 1
_REG_VARIABLE[0] = False  # NO_REG padding
_REG_VARIABLE[_CONST_REGS + 1] = False

_GRANULARITY_SHIFT = {"address": 0, "sector": 5, "line": 7}

FORMAT_VERSION = 7  # 4: register/memory versions and control edges stay inside a run; 5: a mask-0 line writes
# no register and is no work in the size vector, statistics from the first read that recorded values, windows
# under a small cap, (warp, PC) constants; 6: a memory live-in first read by an access that recorded no
# loaded value (LDGSTS, RED) in a trace with values gets its access pattern, not zeros; 7: a wide load's
# upper registers (LDG.E.128 R8 fills R8-R11) are its version, not live-ins (``dst_width``)
"""Bump whenever vocabularies, features or edge rules change: it is part of the cache key (as the
parser's own ``trace.reader.PARSER_VERSION`` is, for a change in how traces are read)."""

# Columns of ``stats`` on instruction nodes (variable nodes use all 8 for value statistics).
INST_STAT_COUNT, INST_STAT_WARP_LEN, INST_STAT_IMM = 0, 1, 2


_WIDE_LOADS = frozenset({"LD", "LDG", "LDL", "LDS"})


def dst_width(opcode: str) -> int:
    """Registers a load's destination fills, of which the trace names only the first.

    Why: SASS names a register pair or quad by its first register (``LDG.E.128 R8`` fills R8-R11),
    and so does every tracer, so a later ``FFMA`` reading R9 looked like a read of a register
    nothing wrote: a live-in, cut off from the load it came from (13-28 % of the LLM graphs'
    register live-ins; docs/graph.md, "Format 7"). Only loads are widened: ``IMAD.WIDE``,
    ``ULDC.64`` and ``HMMA`` fill pairs and quads on a GPU too, but the synthesizer's kernel
    programs keep their results in the named register and use the next one for something else,
    so widening them would link reads to writes that never happened there.
    """
    parts = opcode.split(".")
    if parts[0] == "LDSM":  # LDSM.16.M88.4: the last field counts 8x8 matrices, one register each
        return int(parts[-1]) if parts[-1] in ("1", "2", "4") else 1
    if parts[0] in _WIDE_LOADS:
        return 4 if "128" in parts[1:] else 2 if "64" in parts[1:] else 1
    return 1


def _opcode_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-opcode-id lookup arrays: memory kind, memory space, source/destination value class."""
    n = len(OPCODE_VOCAB)
    kind = np.full(n, _MEM_NONE, dtype=np.int64)
    space = np.full(n, _SP["GENERIC"], dtype=np.int64)
    src_cls = np.zeros(n, dtype=np.int64)
    dst_cls = np.zeros(n, dtype=np.int64)
    for name, (k, s) in _MEM_OPS.items():
        kind[_OPCODE_ID[name]] = k
        space[_OPCODE_ID[name]] = _SP[s]
    for names, s_cls, d_cls in ((_FLOAT_IO, _F32, _F32), (_FLOAT_IN, _F32, _INT),
                                (_FLOAT_OUT, _INT, _F32), (_HALF_IO, _F16, _F16),
                                (_HALF_IN, _F16, _INT)):
        for name in names:
            src_cls[_OPCODE_ID[name]] = s_cls
            dst_cls[_OPCODE_ID[name]] = d_cls
    return kind, space, src_cls, dst_cls


_OP_KIND, _OP_SPACE, _OP_SRC_CLS, _OP_DST_CLS = _opcode_tables()


def opcode_token(opcode: str) -> int:
    """Vocabulary id of a full SASS token: modifiers after the first '.' are dropped.

    Modifiers (``.E``, ``.128``, ``.SYS``, ``.FTZ``) multiply the vocabulary without
    changing what the unit does; the width they encode is in the trace's ``mem_width`` and
    in the pseudo node's footprint. Unknown base opcodes map to id 0 (``<UNK>``).
    """
    base = opcode.split(".", 1)[0].strip().upper()
    return _OPCODE_ID.get(base, 0)


def vocab_sizes() -> dict[str, int]:
    """Embedding table sizes per node type (UNK included)."""
    return {"instruction": len(OPCODE_VOCAB), "pseudo": len(PSEUDO_VOCAB),
            "variable": len(VARIABLE_VOCAB)}


class GraphConfigError(GclError):
    """A ``graph.*`` config key has a value the builder cannot use."""


class GraphBuildError(GclError):
    """The trace is internally inconsistent in a way that prevents building its graph."""


@dataclass
class GraphConfig:
    """How a trace becomes a graph (Hydra group ``graph``; YAML in conf/graph/default.yaml).

    The caps bound a graph's size independently of the kernel's: training cost grows with
    nodes, and a kernel's behaviour is already visible in a prefix of a few warps.
    """

    max_warps: int = 4
    """Warps kept per kernel graph (0 = all). Chosen evenly spread over the trace's warps
    (``warp_selection: spread``) so that several CTAs are represented."""
    max_insts_per_warp: int = 128
    """Instructions kept per warp (0 = all), as contiguous runs so data flow stays intact."""
    inst_selection: str = "windows"
    """``prefix`` (the first ``max_insts_per_warp``, as before) or ``windows``: ``windows``
    equal runs spread evenly over the whole warp stream, so a long kernel's later phases
    (the loop's last trips, the epilogue, the stores) reach the graph too."""
    windows: int = 4
    """Runs per warp with ``inst_selection: windows``."""
    warp_selection: str = "spread"
    """``spread`` (evenly spaced over all traced warps) or ``first``."""
    mem_granularity: str = "line"
    """Memory variable unit: ``line`` (128 B), ``sector`` (32 B) or ``address`` (byte address)."""
    max_units_per_access: int = 4
    """Memory units one access connects to (the lowest addresses); the full footprint is
    still encoded in the MEMREF token."""

    def validate(self, key: "Callable[[str], str] | None" = None) -> None:
        """Raise one ``GraphConfigError`` naming the first key out of range.

        Why ``key``: the same ranges are checked as config keys (``graph.max_warps``, through
        train.py) and as command-line options (``--max-warps``, ``gclsampler graph``), and the
        error must name what the user typed. ``key`` maps a field name to that; without it the
        error names ``graph.<field>``.
        """
        def bad(name: str, msg: str) -> GraphConfigError:
            if key is None:
                return GraphConfigError(located("graph config", None, f"graph.{name}", msg))
            return GraphConfigError(f"{key(name)}: {msg}")

        for cap in ("max_warps", "max_insts_per_warp"):
            v = getattr(self, cap)
            # above 2**62 the int64 arithmetic on counts overflowed (a traceback); no trace holds that many
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 2**62:
                raise bad(cap, f"must be an integer in [0, 2**62] (0 = no cap), got {v!r}")
        # bool is an int subclass: True passed as 1, under a cache key (JSON `true`) of its own
        if (not isinstance(self.max_units_per_access, int) or isinstance(self.max_units_per_access, bool)
                or self.max_units_per_access < 1):
            raise bad("max_units_per_access", f"must be an integer >= 1, got {self.max_units_per_access!r}")
        if self.inst_selection not in ("prefix", "windows"):
            raise bad("inst_selection", f"must be 'prefix' or 'windows', got {self.inst_selection!r}")
        if not isinstance(self.windows, int) or isinstance(self.windows, bool) or self.windows < 1:
            raise bad("windows", f"must be an integer >= 1, got {self.windows!r}")
        if self.warp_selection not in ("spread", "first"):
            raise bad("warp_selection", f"must be 'spread' or 'first', got {self.warp_selection!r}")
        if self.mem_granularity not in _GRANULARITY_SHIFT:
            raise bad("mem_granularity",
                      f"must be one of {sorted(_GRANULARITY_SHIFT)}, got {self.mem_granularity!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def coerce(cls, cfg: "GraphConfig | dict | None") -> "GraphConfig":
        """Accept a GraphConfig, a plain dict or an OmegaConf node (Hydra's ``cfg.graph``)."""
        if cfg is None:
            return cls()
        if isinstance(cfg, cls):
            return cfg
        try:
            from omegaconf import DictConfig, OmegaConf

            if isinstance(cfg, DictConfig):
                cfg = OmegaConf.to_container(cfg, resolve=True)
        except ImportError:  # pragma: no cover
            pass
        if not isinstance(cfg, dict):
            raise GraphConfigError(located("graph config", None, "graph", f"expected a mapping, got {type(cfg).__name__}"))
        known = set(asdict(cls()))
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise GraphConfigError(located("graph config", None, f"graph.{unknown[0]}",
                                           f"unknown key (known: {', '.join(sorted(known))})"))
        return cls(**cfg)


# --------------------------------------------------------------------------------------
# Vectorised helpers
# --------------------------------------------------------------------------------------


def _ragged_index(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the concatenated ranges [starts[g], starts[g]+lengths[g]) and owner g."""
    lengths = lengths.astype(np.int64)
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    if total == 0:
        return np.zeros(0, dtype=np.int64), owner
    first = np.cumsum(lengths) - lengths
    idx = np.arange(total, dtype=np.int64) - first[owner] + starts.astype(np.int64)[owner]
    return idx, owner


def _versions(order: np.ndarray, new_group: np.ndarray, is_write: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Link every event to the latest earlier write of the same variable.

    ``order`` sorts the events by (variable, instruction, reads before writes) and
    ``new_group[p]`` marks sorted positions where a new variable starts. Reads of an
    instruction come before its own writes (``R4 = R4 + 1`` reads the old R4). A running
    maximum over write positions replaces the per-instruction dictionary walk.

    Returns ``prev`` (event index of that write, -1 for a live-in read), ``gid`` (dense
    variable id per event) and ``first`` (the earliest event of each variable).
    """
    n = len(order)
    prev = np.full(n, -1, dtype=np.int64)
    gid = np.empty(n, dtype=np.int64)
    if n == 0:
        return prev, gid, np.zeros(0, dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    group_start = np.maximum.accumulate(np.where(new_group, pos, 0))
    last_write = np.maximum.accumulate(np.where(is_write[order], pos, -1))
    before = np.empty(n, dtype=np.int64)
    before[0] = -1
    before[1:] = last_write[:-1]
    ok = before >= group_start
    prev[order[ok]] = order[before[ok]]
    gid[order] = np.cumsum(new_group) - 1
    return prev, gid, order[new_group]


def _widen_writes(e_inst: np.ndarray, e_col: np.ndarray, e_reg: np.ndarray, width: np.ndarray, n_scol: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Register events with a write of r+1 .. r+w-1 after each write of r by a w-wide destination.

    The aliases follow their write in event order (instruction, sources before destinations,
    column, then register), which ``_versions`` needs; none goes past its class's last variable
    register (a quad at R253 fills R253 and R254, never RZ). Returns the events and which are
    aliases."""
    wide = (e_col >= n_scol) & (width[e_inst] > 1)
    if not wide.any():
        return e_inst, e_col, e_reg, np.zeros(len(e_inst), dtype=bool)
    prim = np.flatnonzero(wide)
    k = width[e_inst[prim]] - 1
    src = np.repeat(prim, k)
    off = np.arange(len(src), dtype=np.int64) - np.repeat(np.cumsum(k) - k, k) + 1
    reg = e_reg[src] + off
    end = _CONST_REGS[np.searchsorted(_CONST_REGS, e_reg[src])]  # each class's constant register ends it
    keep = reg < end
    src, off, reg = src[keep], off[keep], reg[keep]
    inst = np.concatenate([e_inst, e_inst[src]])
    col = np.concatenate([e_col, e_col[src]])
    sub = np.concatenate([np.zeros(len(e_inst), dtype=np.int64), off])
    perm = np.lexsort((sub, col, inst))
    alias = np.concatenate([np.zeros(len(e_inst), dtype=bool), np.ones(len(src), dtype=bool)])
    return inst[perm], col[perm], np.concatenate([e_reg, reg])[perm], alias[perm]


def _popcount32(m: np.ndarray) -> np.ndarray:
    """Active lanes per mask (int64)."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(m).astype(np.int64)
    return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1, dtype=np.int64)


def _stable_argsort(key: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative int64 keys below 2**32: two 16-bit radix passes."""
    if len(key) == 0:
        return np.zeros(0, dtype=np.int64)
    if int(key.max()) < 1 << 16:
        return np.argsort(key.astype(np.uint16), kind="stable")
    if int(key.max()) >= 1 << 32:
        return np.argsort(key, kind="stable")
    o = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
    return o[np.argsort((key[o] >> 16).astype(np.uint16), kind="stable")]


def _interpret(bits: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Raw uint32 register bits -> float64 by value class, then signed log1p.

    Signed log1p keeps sign and order, maps int32 to [-21.5, 21.5] and float32 to
    [-88.8, 88.8], so statistics are bounded whatever the scale of the program's data.
    NaN becomes 0 and infinities the float32 extremes.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        return _interpret_raw(bits, cls)


def _interpret_raw(bits: np.ndarray, cls: np.ndarray) -> np.ndarray:
    bits = bits.astype(np.uint32, copy=False)
    out = bits.view(np.int32).astype(np.float64)
    f = cls == _F32
    if f.any():
        out[f] = bits[f].view(np.float32).astype(np.float64)
    h = cls == _F16
    if h.any():
        out[h] = (bits[h] & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float64)
    big = float(np.finfo(np.float32).max)
    out = np.nan_to_num(out, nan=0.0, posinf=big, neginf=-big)
    return np.sign(out) * np.log1p(np.abs(out))


def _ragged_stats(values: np.ndarray, owner: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, 8) mean, std, median, min, max, p25, p75, skewness of ragged groups.

    ``owner`` must be sorted ascending (values grouped). Groups are padded into a dense
    matrix (at most 32 lanes each in practice) and sorted once per row, so quantiles are
    linear-interpolated reads of the sorted rows (same rule as ``numpy.percentile``).
    Empty groups get zeros; std is the population std, skewness is 0 when std is 0.
    """
    out = np.zeros((n_groups, N_STATS), dtype=np.float64)
    if n_groups == 0 or len(values) == 0:
        return out.astype(np.float32)
    counts = np.bincount(owner, minlength=n_groups)
    width = int(counts.max())
    first = np.cumsum(counts) - counts
    col = np.arange(len(values), dtype=np.int64) - first[owner]
    mat = np.full((n_groups, width), np.inf)
    mat[owner, col] = values
    mat.sort(axis=1)
    has = counts > 0
    c = np.maximum(counts, 1).astype(np.float64)
    finite = np.isfinite(mat)
    vals0 = np.where(finite, mat, 0.0)
    mean = vals0.sum(axis=1) / c
    dev = np.where(finite, mat - mean[:, None], 0.0)
    var = (dev ** 2).sum(axis=1) / c
    std = np.sqrt(var)
    m3 = (dev ** 3).sum(axis=1) / c
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = np.where(std > 1e-12, m3 / np.where(std > 1e-12, std, 1.0) ** 3, 0.0)
    rows = np.arange(n_groups)

    def quant(q: float) -> np.ndarray:
        p = q * (c - 1)
        lo = np.floor(p).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(counts - 1, 0))
        frac = p - lo
        a = vals0[rows, lo]
        b = vals0[rows, hi]
        return a + (b - a) * frac

    out[:, 0] = mean
    out[:, 1] = std
    out[:, 2] = quant(0.5)
    out[:, 3] = vals0[:, 0]
    out[:, 4] = vals0[rows, np.maximum(counts - 1, 0)]
    out[:, 5] = quant(0.25)
    out[:, 6] = quant(0.75)
    out[:, 7] = skew
    out[~has] = 0.0
    return out.astype(np.float32)


def _select_instructions(trace: KernelTrace, cfg: GraphConfig
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global instruction indices kept (warp-major, temporal order), their local warp, and
    the kept warps' indices in the trace."""
    ptr = np.asarray(trace.warp_ptr, dtype=np.int64)
    # warps that executed nothing (traced but exited at once) would be empty pools: skip them
    live = np.flatnonzero(np.diff(ptr) > 0)
    n_w = len(live)
    if cfg.max_warps and n_w > cfg.max_warps:
        if cfg.warp_selection == "first":
            warps = live[:cfg.max_warps]
        else:
            warps = live[np.unique(np.round(np.linspace(0, n_w - 1, cfg.max_warps)).astype(np.int64))]
    else:
        warps = live
    starts = ptr[warps]
    full = ptr[warps + 1] - starts
    cap = cfg.max_insts_per_warp
    if not cap:
        idx, owner = _ragged_index(starts, full)
    elif cfg.inst_selection == "prefix" or cfg.windows == 1:
        idx, owner = _ragged_index(starts, np.minimum(full, cap))
    else:
        # W runs per warp (cap // W each, the remainder spread over the first runs), starting at
        # evenly spaced offsets of the warp's stream; a warp no longer than the cap is kept whole
        # no more runs than instructions: empty runs at the end left the warp's last instructions out
        w = min(int(cfg.windows), int(cap))
        run = cap // w + (np.arange(w) < cap % w)
        short = full <= cap
        starts_in = np.concatenate([[0], np.cumsum(run)[:-1]])
        frac = np.arange(w, dtype=np.float64) / max(w - 1, 1)
        span = np.maximum(full - cap, 0)[:, None]
        # run j starts at its place in a cap-long prefix, shifted right by an even share of the
        # slack: runs never overlap and the last one ends at the warp's last instruction
        offs = starts_in[None, :] + np.round(frac[None, :] * span).astype(np.int64)
        r_start = (starts[:, None] + offs).reshape(-1)
        r_len = np.broadcast_to(run[None, :], offs.shape).reshape(-1)
        r_owner = np.repeat(np.arange(len(warps)), w)
        keep_runs = ~short[r_owner]
        s_start = np.concatenate([starts[short], r_start[keep_runs]])
        s_len = np.concatenate([full[short], r_len[keep_runs]])
        s_own = np.concatenate([np.flatnonzero(short), r_owner[keep_runs]])
        o = np.argsort(s_own * (1 << 40) + s_start, kind="stable")
        idx, run_owner = _ragged_index(s_start[o], s_len[o])
        owner = s_own[o][run_owner]
    return idx, owner, warps


def kernel_features(trace: KernelTrace) -> np.ndarray:
    """The invocation's size on the traced SM, log2(1 + x), as a (8,) float32 vector; instructions
    are those with an active lane.

    Why: the HRG of a capped warp sample looks the same whether a loop turned 80 or 320
    times or whether SM 0 ran 2 or 160 CTAs, yet those are what set the cycle count. These
    numbers come from the complete trace (every warp, every instruction), not from the
    kept sample, so they still tell such launches apart. log2: a doubling is one unit.
    """
    ptr = np.asarray(trace.warp_ptr, dtype=np.int64)
    # instructions with at least one active lane: a line with mask 0 (issued with its guard false
    # on every lane, which NVBit tracers record) takes an issue slot and does no work; counted,
    # it moved lu's SM-0 count by up to 14 % with the launch and the work split cut on it
    done = np.r_[0, np.cumsum(np.asarray(trace.mask) != 0, dtype=np.int64)]
    lens = done[ptr[1:]] - done[ptr[:-1]]
    n_w = max(len(lens), 1)
    ctas = len(np.unique(np.asarray(trace.warp_cta), axis=0)) if len(lens) else 0
    g = trace.header.grid
    b = trace.header.block
    n_addr = len(trace.addrs) if trace.addrs is not None else 0
    raw = np.array([lens.mean() if len(lens) else 0.0, lens.max() if len(lens) else 0.0, float(lens.sum()),
                    float(len(lens)), float(ctas), float(g[0] * g[1] * g[2]), float(b[0] * b[1] * b[2]),
                    n_addr / n_w], dtype=np.float64)
    return np.log2(1.0 + raw).astype(np.float32)


def _pc_counts(trace: KernelTrace, warps: np.ndarray, idx: np.ndarray, iw: np.ndarray) -> np.ndarray:
    """How many times each kept instruction's PC ran in its warp over the whole stream.

    This is the repetition count a folded loop would carry: the kept window shows one
    trip of the body, the count says how many trips there were.
    """
    ptr = np.asarray(trace.warp_ptr, dtype=np.int64)
    full_idx, full_owner = _ragged_index(ptr[warps], ptr[warps + 1] - ptr[warps])
    pc = np.asarray(trace.pc, dtype=np.int64)
    upc, pc_code = np.unique(pc[full_idx], return_inverse=True)
    span = max(len(upc), 1)
    key = full_owner * span + pc_code.reshape(-1)
    counts = np.bincount(key, minlength=len(warps) * span)
    kept_code = np.searchsorted(upc, pc[idx])
    return counts[iw * span + kept_code]


# --------------------------------------------------------------------------------------
# The builder
# --------------------------------------------------------------------------------------


def build_graph(trace: KernelTrace, cfg: GraphConfig | None = None) -> Data:
    """Build the HRG of one kernel invocation (see module docstring for the rules).

    Node order: instruction nodes (warp-major, temporal), then pseudo nodes, then register
    versions (writes, then live-ins), then memory versions (writes, then live-ins), then
    constant-bank words (by warp and PC).
    """
    cfg = GraphConfig.coerce(cfg)
    cfg.validate()
    src_name = trace.source or f"kernel-{trace.header.kernel_id}"
    idx, iw, kept_warps = _select_instructions(trace, cfg)
    n_warps = len(kept_warps)
    n = len(idx)

    # ---- instruction nodes
    tok_of_table = np.array([opcode_token(s) for s in trace.opcode_table] or [0], dtype=np.int64)
    op_raw = np.asarray(trace.opcode)
    if len(op_raw) and (op_raw.min() < 0 or op_raw.max() >= len(trace.opcode_table)):
        raise GraphBuildError(located(src_name, None, "opcode", "index outside opcode_table"))
    tok = tok_of_table[op_raw[idx]] if n else np.zeros(0, dtype=np.int64)
    pc_all = np.asarray(trace.pc, dtype=np.int64)
    pc_max = float(pc_all.max()) if len(pc_all) else 0.0
    pc = (pc_all[idx].astype(np.float64) / pc_max) if pc_max > 0 else np.zeros(n)

    # ---- runs: maximal stretches of kept instructions of one warp that follow each other in
    # the trace (a whole warp without a cap or with a prefix; one per window, or windows that
    # abut, with inst_selection: windows). Data flow and control flow stay inside a run: the
    # instructions dropped between two runs may rewrite any register or memory unit, so a read
    # at a run's start is a live-in carrying its traced values, never a stale earlier version.
    brk = np.ones(n, dtype=bool)
    brk[1:] = (iw[1:] != iw[:-1]) | (idx[1:] != idx[:-1] + 1)
    ir = np.cumsum(brk) - 1  # run id per kept instruction, warp-major (== iw with one run per warp)

    # ---- control flow: consecutively executed instructions (consecutive within a run)
    cf = np.flatnonzero(~brk[1:])
    e_src = [cf]
    e_dst = [cf + 1]
    e_typ = [np.full(len(cf), EDGE_CONTROL, dtype=np.int64)]

    kind = _OP_KIND[tok]
    space = _OP_SPACE[tok]
    mem_width = np.asarray(trace.mem_width)[idx]
    addr_ptr = np.asarray(trace.addr_ptr, dtype=np.int64)
    n_addr = addr_ptr[idx + 1] - addr_ptr[idx] if n else np.zeros(0, dtype=np.int64)
    is_mem = (mem_width > 0) | (n_addr > 0)
    kind = np.where(is_mem & (kind == _MEM_NONE), _MEM_LD, kind)
    kind = np.where(is_mem, kind, _MEM_NONE)

    # ---- pseudo nodes: one MEMREF per memory instruction
    mem_inst = np.flatnonzero(is_mem)  # local instruction index
    n_pseudo = len(mem_inst)
    pseudo_id = np.full(n, -1, dtype=np.int64)
    pseudo_id[mem_inst] = n + np.arange(n_pseudo)

    # memory units touched by each memory instruction: unique (instruction, unit) pairs.
    # Kept instructions that follow each other in the trace own one contiguous range of the
    # address column (a whole-warp prefix does): slice it instead of gathering.
    shift = _GRANULARITY_SHIFT[cfg.mem_granularity]
    all_addrs = np.asarray(trace.addrs, dtype=np.uint64)
    a_lo = addr_ptr[idx] if n else np.zeros(0, dtype=np.int64)
    if n and np.array_equal(a_lo[1:], addr_ptr[idx[:-1] + 1]):
        addrs = all_addrs[int(a_lo[0]):int(a_lo[0] + n_addr.sum())]
    else:
        addrs = all_addrs[_ragged_index(a_lo, n_addr)[0]]
    a_inst = np.repeat(np.arange(n, dtype=np.int64), n_addr)  # local instruction of each address
    unit = addrs >> np.uint64(shift)
    n_a = len(unit)
    new_inst = np.ones(n_a, dtype=bool)
    new_inst[1:] = a_inst[1:] != a_inst[:-1]
    # lanes usually walk addresses upwards: sort only when some warp access does not
    if n_a and not bool(np.all(new_inst[1:] | (unit[1:] >= unit[:-1]))):
        ao = np.lexsort((unit, a_inst))
        s_inst, s_unit = a_inst[ao], unit[ao]
        new_pair = np.ones(n_a, dtype=bool)
        new_pair[1:] = (s_inst[1:] != s_inst[:-1]) | (s_unit[1:] != s_unit[:-1])
    else:
        s_inst, s_unit = a_inst, unit
        new_pair = new_inst.copy()
        new_pair[1:] |= unit[1:] != unit[:-1]
    u_inst, u_unit = s_inst[new_pair], s_unit[new_pair]
    per_inst = np.bincount(u_inst, minlength=n)
    fp = per_inst[mem_inst]
    bucket = np.minimum(np.ceil(np.log2(np.maximum(fp, 1))).astype(np.int64), _FOOTPRINT_BUCKETS - 1)
    p_tok = 1 + (kind[mem_inst] * len(_SPACES) + space[mem_inst]) * _FOOTPRINT_BUCKETS + bucket
    # MEMREF -> instruction
    e_src.append(pseudo_id[mem_inst])
    e_dst.append(mem_inst)
    e_typ.append(np.full(n_pseudo, EDGE_ADDRESS, dtype=np.int64))

    # ---- register events, in (instruction, sources before destinations) order
    dst = np.asarray(trace.dst)
    srcr = np.asarray(trace.src)
    dst = (dst[:, None] if dst.ndim == 1 else dst)[idx]
    srcr = (srcr[:, None] if srcr.ndim == 1 else srcr)[idx]
    n_scol = srcr.shape[1]
    ops = np.concatenate([srcr, dst], axis=1)
    present = ops != NO_REG
    nd = np.count_nonzero(present[:, n_scol:], axis=1).astype(np.int64)
    ns = np.count_nonzero(present[:, :n_scol], axis=1).astype(np.int64)
    is_var = _REG_VARIABLE[ops.astype(np.intp) + 1]
    # a line issued with its guard false on every lane (mask 0; tracers write them) writes no
    # register: its destinations are no new versions, later reads keep the version before it
    is_var[:, n_scol:] &= (np.asarray(trace.mask)[idx] != 0)[:, None]
    e_inst, e_col = np.nonzero(is_var)
    e_reg = ops[e_inst, e_col].astype(np.int64)
    width_of_table = np.array([dst_width(s) for s in trace.opcode_table] or [1], dtype=np.int64)
    e_inst, e_col, e_reg, alias = _widen_writes(e_inst, e_col, e_reg, width_of_table[op_raw[idx]], n_scol)
    ev_w = e_col >= n_scol  # an alias (a wide load's upper register) is a write of its own register
    ev_node = ev_w & ~alias  # but no node of its own: it is the load's version
    r_idx = np.flatnonzero(~ev_w)
    w_idx = np.flatnonzero(ev_node)
    r_inst, r_col = e_inst[r_idx], e_col[r_idx]
    w_inst, w_reg = e_inst[w_idx], e_reg[w_idx]
    # address operands: all sources of a load, the first source of a store/atomic
    r_kind = kind[r_inst]
    r_is_addr = (r_kind == _MEM_LD) | ((r_kind >= _MEM_ST) & (r_col == 0))
    n_wver = len(w_idx)
    ev_key = ir[e_inst] * _REG_KEY_SPAN + e_reg  # one variable per (run, register)
    order = _stable_argsort(ev_key)  # events are already in (instruction, read-first) order
    k_sorted = ev_key[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = k_sorted[1:] != k_sorted[:-1]
    prev, gid, first = _versions(order, new_group, ev_w)
    wnum = np.cumsum(ev_node) - 1  # write event -> write-version number (an alias: its load's)
    node_base = n + n_pseudo
    live_groups = np.flatnonzero(~ev_w[first])  # variables read before any write: live-in
    live_num = np.full(len(first), -1, dtype=np.int64)
    live_num[live_groups] = np.arange(len(live_groups))
    live_ev = first[live_groups]  # first read of each live-in (an event index)
    n_live = len(live_groups)
    live_base = node_base + n_wver
    rp = prev[r_idx]
    read_var = np.where(rp >= 0, node_base + wnum[np.maximum(rp, 0)], live_base + live_num[gid[r_idx]])
    read_target = np.where(r_is_addr, pseudo_id[r_inst], r_inst)
    e_src += [read_var, w_inst]
    e_dst += [read_target, node_base + np.arange(n_wver)]
    e_typ += [np.where(r_is_addr, EDGE_ADDRESS, EDGE_READ).astype(np.int64),
              np.full(n_wver, EDGE_WRITE, dtype=np.int64)]
    live_reg = e_reg[live_ev]
    reg_cls = lambda code: np.select([code < 256, code < 512, code < 640], [0, 1, 2], 3)  # noqa: E731
    var_tok_reg = _VAR_REG_BASE + np.concatenate([reg_cls(w_reg), reg_cls(live_reg)])
    var_warp_reg = np.concatenate([iw[w_inst], iw[e_inst[live_ev]]])

    # live-in register statistics from the per-lane source values of the first read that
    # recorded them: a mask-0 line (guard false on every lane) reads the live-in too but has no
    # value block, and its zeros would stand for the values the next read records
    reg_stats = np.zeros((n_wver + n_live, N_STATS), dtype=np.float32)
    lanes = None
    vals_ok = None
    if trace.values is not None and trace.value_ptr is not None and n:
        vptr = np.asarray(trace.value_ptr, dtype=np.int64)
        lanes = _popcount32(np.asarray(trace.mask, dtype=np.uint32)[idx])
        vstart = vptr[idx]
        vlen = vptr[idx + 1] - vstart
        vals_ok = (vlen == (nd + ns) * lanes) & (lanes > 0)
        stat_ev = live_ev
        if n_live:
            n_ev = len(e_inst)
            cand = r_idx[(rp < 0) & vals_ok[r_inst]]  # reads of a live-in, with values
            best = np.full(len(first), n_ev, dtype=np.int64)
            np.minimum.at(best, gid[cand], cand)  # event order is trace order
            stat_ev = np.where(best[live_groups] < n_ev, best[live_groups], live_ev)
        li = e_inst[stat_ev]
        lc = e_col[stat_ev]
        ok = vals_ok[li]
        starts = vstart[li] + (nd[li] + lc) * lanes[li]
        v_idx, v_own = _ragged_index(starts[ok], lanes[li][ok])
        cls = _OP_SRC_CLS[tok[li][ok]][v_own]
        vv = _interpret(np.asarray(trace.values)[v_idx], cls)
        reg_stats[n_wver + np.flatnonzero(ok)] = _ragged_stats(vv, v_own, int(ok.sum()))

    # ---- memory events: (instruction, unit) pairs, capped per access
    grp_first = np.ones(len(u_inst), dtype=bool)
    grp_first[1:] = u_inst[1:] != u_inst[:-1]
    pos = np.arange(len(u_inst))
    rank = pos - np.maximum.accumulate(np.where(grp_first, pos, 0)) if len(pos) else pos
    kp = np.flatnonzero(rank < cfg.max_units_per_access)  # kept pair indices
    m_inst, m_unit = u_inst[kp], u_unit[kp]
    m_kind = kind[m_inst]
    is_r = (m_kind == _MEM_LD) | (m_kind == _MEM_ATOM)
    is_w = (m_kind == _MEM_ST) | (m_kind == _MEM_ATOM)
    per_pair = is_r.astype(np.int64) + is_w
    ev_pair = np.repeat(np.arange(len(m_inst), dtype=np.int64), per_pair)
    in_pair = np.arange(len(ev_pair), dtype=np.int64) - (np.cumsum(per_pair) - per_pair)[ev_pair]
    mev_w = ~is_r[ev_pair] | (in_pair == 1)  # an atomic reads, then writes
    mev_inst = m_inst[ev_pair]
    mev_unit = m_unit[ev_pair]
    mev_sp = space[mev_inst]
    mev_wsp = ir[mev_inst] * len(_SPACES) + mev_sp  # one variable per (run, space, unit)
    morder = np.lexsort((mev_unit, mev_wsp))  # stable: instruction order kept per variable
    mnew = np.ones(len(morder), dtype=bool)
    if len(morder):
        b1, c1 = mev_wsp[morder], mev_unit[morder]
        mnew[1:] = (b1[1:] != b1[:-1]) | (c1[1:] != c1[:-1])
    mprev, mgid, mfirst = _versions(morder, mnew, mev_w)
    mwnum = np.cumsum(mev_w) - 1
    mr_e = np.flatnonzero(~mev_w)
    mw_e = np.flatnonzero(mev_w)
    n_mr, n_mw = len(mr_e), len(mw_e)
    mem_base = node_base + n_wver + n_live
    mlive_groups = np.flatnonzero(~mev_w[mfirst])
    mlive_num = np.full(len(mfirst), -1, dtype=np.int64)
    mlive_num[mlive_groups] = np.arange(len(mlive_groups))
    mlive_ev = mfirst[mlive_groups]  # first read event of each live-in unit
    n_mlive = len(mlive_groups)
    mp = mprev[mr_e]
    mread_var = np.where(mp >= 0, mem_base + mwnum[np.maximum(mp, 0)],
                         mem_base + n_mw + mlive_num[mgid[mr_e]])
    e_src += [mread_var, mev_inst[mw_e]]
    e_dst += [mev_inst[mr_e], mem_base + np.arange(n_mw)]
    e_typ += [np.full(n_mr, EDGE_READ, dtype=np.int64), np.full(n_mw, EDGE_WRITE, dtype=np.int64)]
    var_tok_mem = _VAR_MEM_BASE + np.concatenate([mev_sp[mw_e], mev_sp[mlive_ev]])
    var_warp_mem = np.concatenate([iw[mev_inst[mw_e]], iw[mev_inst[mlive_ev]]])
    mem_stats = np.zeros((n_mw + n_mlive, N_STATS), dtype=np.float32)
    if n_mlive:
        # the lanes of that first reading access whose address falls in the unit
        a_first = np.cumsum(n_addr) - n_addr  # first local address of each instruction
        live_i = mev_inst[mlive_ev]
        g_idx, g_own = _ragged_index(a_first[live_i], n_addr[live_i])
        hit = unit[g_idx] == mev_unit[mlive_ev][g_own]
        sel, owner = g_idx[hit], g_own[hit]  # grouped by owner already
        # the access pattern (byte offsets inside the unit), what a plain trace has ...
        vv = np.log1p((addrs[sel] - (unit[sel] << np.uint64(shift))).astype(np.float64))
        if vals_ok is not None:
            # ... replaced by the loaded value where the access recorded one. An access with no
            # destination (LDGSTS loads into shared memory, RED returns nothing) recorded none:
            # dropping its lanes left the live-in at zeros, like a version written in the graph
            ins = live_i[owner]
            okv = vals_ok[ins] & (nd[ins] > 0) & (n_addr[ins] == lanes[ins])
            ins = ins[okv]
            col = sel[okv] - a_first[ins]  # lane column of the address = value column
            v_at = np.asarray(trace.value_ptr, dtype=np.int64)[idx[ins]] + col  # destination row 0
            vv[okv] = _interpret(np.asarray(trace.values)[v_at], _OP_DST_CLS[tok[ins]])  # loaded value
        mem_stats[n_mw:] = _ragged_stats(vv, owner, n_mlive)

    # ---- constant-bank words (kernel arguments: K, N, strides, trip counts). ULDC/LDC carry no
    # address in the trace, so the load above left the word invisible. Per section 3.2 a variable
    # nobody wrote is initialised from its traced value: one live-in MEM.CONST variable per
    # (warp, PC) -- the same static load reads the same word -- with the statistics of the value
    # the load returned, read by every dynamic instance of that load.
    const_ld = np.flatnonzero((space == _SP["CONST"]) & ~is_mem & (nd > 0))
    n_const = 0
    const_stats = np.zeros((0, N_STATS), dtype=np.float32)
    const_warp = np.zeros(0, dtype=np.int64)
    if len(const_ld):
        # (warp, PC) pairs, not warp * 2**40 + PC: the reader takes PCs up to 2**63 - 1, and a PC
        # of 2**40 or more made two warps' loads one variable (an edge across warps)
        ckey = np.stack([iw[const_ld], pc_all[idx[const_ld]]], axis=1)
        ukey, cfirst, cinv = np.unique(ckey, axis=0, return_index=True, return_inverse=True)
        cinv = cinv.reshape(-1)
        n_const = len(ukey)
        const_base = n + n_pseudo + n_wver + n_live + n_mw + n_mlive
        e_src.append(const_base + cinv)
        e_dst.append(const_ld)
        e_typ.append(np.full(len(const_ld), EDGE_READ, dtype=np.int64))
        ci = const_ld[cfirst]
        const_warp = iw[ci]
        const_stats = np.zeros((n_const, N_STATS), dtype=np.float32)
        if vals_ok is not None:
            # the first instance that recorded the value (a mask-0 instance returned none)
            with_v = np.flatnonzero(vals_ok[const_ld])  # ascending: trace order
            best = np.full(n_const, len(const_ld), dtype=np.int64)
            np.minimum.at(best, cinv[with_v], with_v)
            ci = np.where(best < len(const_ld), const_ld[np.minimum(best, len(const_ld) - 1)], ci)
            ok = vals_ok[ci]
            v_idx, v_own = _ragged_index(np.asarray(trace.value_ptr, dtype=np.int64)[idx[ci[ok]]], lanes[ci[ok]])
            vv = _interpret(np.asarray(trace.values)[v_idx], _OP_DST_CLS[tok[ci[ok]]][v_own])
            const_stats[np.flatnonzero(ok)] = _ragged_stats(vv, v_own, int(ok.sum()))

    # ---- instruction statistics: repetition count of the PC in its warp (what a folded loop
    # carries), the warp's full length, and the immediate (loop bounds, strides, offsets)
    inst_stats = np.zeros((n, N_STATS), dtype=np.float32)
    if n:
        inst_stats[:, INST_STAT_COUNT] = np.log1p(_pc_counts(trace, kept_warps, idx, iw))
        wlen = np.diff(np.asarray(trace.warp_ptr, dtype=np.int64))[kept_warps]
        inst_stats[:, INST_STAT_WARP_LEN] = np.log1p(wlen[iw])
        if trace.imm is not None:
            imm = np.asarray(trace.imm)[idx].astype(np.float64)
            inst_stats[:, INST_STAT_IMM] = np.sign(imm) * np.log1p(np.abs(imm))

    # ---- assemble
    n_var = n_wver + n_live + n_mw + n_mlive + n_const
    n_nodes = n + n_pseudo + n_var
    node_type = np.concatenate([np.full(n, NODE_INSTRUCTION), np.full(n_pseudo, NODE_PSEUDO),
                                np.full(n_var, NODE_VARIABLE)]).astype(np.int64)
    var_tok_const = np.full(n_const, _VAR_MEM_BASE + _SP["CONST"], dtype=np.int64)
    token = np.concatenate([tok, p_tok, var_tok_reg, var_tok_mem, var_tok_const]).astype(np.int64)
    pcs = np.zeros(n_nodes, dtype=np.float32)
    pcs[:n] = pc
    stats = np.zeros((n_nodes, N_STATS), dtype=np.float32)
    stats[:n] = inst_stats
    stats[node_base:mem_base] = reg_stats
    stats[mem_base:mem_base + n_mw + n_mlive] = mem_stats
    stats[mem_base + n_mw + n_mlive:] = const_stats
    warp = np.concatenate([iw, iw[mem_inst], var_warp_reg, var_warp_mem, const_warp]).astype(np.int64)
    n_edges = sum(len(x) for x in e_src)
    edge_index = np.empty((2, n_edges), dtype=np.int64)
    np.concatenate(e_src, out=edge_index[0], casting="unsafe")
    np.concatenate(e_dst, out=edge_index[1], casting="unsafe")
    edge_type = np.concatenate(e_typ).astype(np.int64)
    import torch
    from torch_geometric.data import Data

    return Data(
        node_type=torch.from_numpy(node_type),
        token=torch.from_numpy(token),
        pc=torch.from_numpy(pcs),
        stats=torch.from_numpy(stats),
        edge_index=torch.from_numpy(edge_index),
        edge_type=torch.from_numpy(edge_type),
        warp=torch.from_numpy(warp),
        n_warps=torch.tensor([n_warps], dtype=torch.long),
        kfeat=torch.from_numpy(kernel_features(trace)).view(1, -1),
        num_nodes=n_nodes,
    )


def graph_summary(g: Data) -> dict:
    """Node and edge counts per type plus tensor bytes, for ``gclsampler graph info``."""
    import torch

    nt = torch.bincount(g.node_type, minlength=NUM_NODE_TYPES).tolist()
    et = torch.bincount(g.edge_type, minlength=NUM_EDGE_TYPES).tolist()
    nbytes = sum(v.element_size() * v.numel() for _, v in g.items() if torch.is_tensor(v))
    return {
        "nodes": int(g.num_nodes),
        "edges": int(g.edge_index.shape[1]),
        "warps": int(g.n_warps[0]),
        "nodes_by_type": dict(zip(NODE_TYPE_NAMES, nt)),
        "edges_by_type": dict(zip(EDGE_TYPE_NAMES, et)),
        "bytes": int(nbytes),
    }
