"""In-memory form of one kernel invocation's SASS trace.

A trace holds millions of dynamic instructions, so it is stored as flat columns
(one numpy array per Table-1 field of the GCL-Sampler paper) with CSR-style
offset arrays for the ragged parts: warps -> instructions, instructions ->
addresses and instructions -> register values. Per-warp views are slices, never
copies, and no Python object is ever created per instruction.

Register operands are small integers (``reg_code``) so that dst/src columns are
dense ``int16`` matrices padded with ``NO_REG``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NO_REG = -1
"""Padding in ``dst``/``src`` for instructions with fewer operands than the widest one."""

# Register name spaces, packed into int16 codes. R0..R255 (RZ is R255), uniform
# registers UR0..UR63 (URZ is UR63), predicates P0..P7 (PT is P7), uniform predicates.
_REG_BASES = (("UR", 256), ("UP", 640), ("R", 0), ("P", 512))
_NAMED = {"RZ": 255, "URZ": 256 + 63, "PT": 512 + 7, "UPT": 640 + 7}


def reg_code(name: str) -> int:
    """Map a SASS register token (``R12``, ``RZ``, ``UR4``, ``P0``) to its int16 code.

    Raises ``ValueError`` for anything else so that the reader can name the field.
    """
    if name in _NAMED:
        return _NAMED[name]
    for prefix, base in _REG_BASES:
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            n = int(name[len(prefix):])
            limit = 256 if prefix == "R" else (64 if prefix == "UR" else 8)
            if n < limit:
                return base + n
    raise ValueError(f"not a register: {name!r}")


def reg_name(code: int) -> str:
    """Inverse of ``reg_code``; RZ/URZ/PT are written as R255/UR63/P7."""
    code = int(code)
    if 0 <= code < 256:
        return f"R{code}"
    if 256 <= code < 320:
        return f"UR{code - 256}"
    if 512 <= code < 520:
        return f"P{code - 512}"
    if 640 <= code < 648:
        return f"UP{code - 640}"
    raise ValueError(f"not a register code: {code}")


@dataclass(frozen=True)
class KernelHeader:
    """The ``-key = value`` lines that open an Accel-Sim trace file.

    ``kernel_id`` is the trace's own (1-based) id; the invocation index used in
    profile.csv and plan.json is ``kernel_id - 1``.
    """

    name: str
    kernel_id: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem: int = 0
    nregs: int = 0
    binary_version: int = 86
    cuda_stream_id: int = 0
    shmem_base_addr: int = 0
    local_mem_base_addr: int = 0
    nvbit_version: str = "1.7"
    tracer_version: int = 5
    enable_lineinfo: bool = False

    @property
    def invocation(self) -> int:
        return self.kernel_id - 1

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass
class KernelTrace:
    """One kernel invocation: header plus columnar per-warp instruction arrays.

    Shapes (W warps, N instructions, A addresses, V register values):

    - ``warp_cta`` (W, 3) int32: CTA coordinates of each traced warp.
    - ``warp_id`` (W,) int32: warp index inside its CTA.
    - ``warp_ptr`` (W+1,) int64: instructions of warp w are ``[warp_ptr[w], warp_ptr[w+1])``,
      in the warp's temporal order. Warps appear grouped by CTA, CTAs in trace order.
    - ``pc`` (N,) int64, ``mask`` (N,) uint32 active-lane mask.
    - ``line_num`` (N,) int32 or None when the trace has no line numbers.
    - ``opcode`` (N,) int32 index into ``opcode_table`` (full tokens with modifiers,
      e.g. ``LDG.E.128``), table in order of first appearance.
    - ``dst`` (N, Dmax) int16 and ``src`` (N, Smax) int16 register codes, ``NO_REG`` padded;
      operand order is the trace's order, padding only at the end of a row.
    - ``mem_width`` (N,) int32 bytes per lane, 0 for non-memory instructions.
    - ``imm`` (N,) int64 or None when the trace has no immediate column.
    - ``addr_ptr`` (N+1,) int64 and ``addrs`` (A,) uint64: one address per active
      lane (lanes ascending) for instructions with ``mem_width > 0``, whatever
      compression mode the file used.
    - ``value_ptr`` (N+1,) int64 and ``values`` (V,) uint32, or both None when the
      trace carries no register values (plain Accel-Sim traces). For an instruction
      with values the block is ``(ndst + nsrc, popcount(mask))`` row-major: one row per
      register operand, destinations first, sources before execution and destinations
      after it, lanes ascending. An instruction without values has an empty block.
    """

    header: KernelHeader
    warp_cta: np.ndarray
    warp_id: np.ndarray
    warp_ptr: np.ndarray
    pc: np.ndarray
    mask: np.ndarray
    opcode: np.ndarray
    opcode_table: tuple[str, ...]
    dst: np.ndarray
    src: np.ndarray
    mem_width: np.ndarray
    addr_ptr: np.ndarray
    addrs: np.ndarray
    line_num: np.ndarray | None = None
    imm: np.ndarray | None = None
    value_ptr: np.ndarray | None = None
    values: np.ndarray | None = None
    source: str | None = field(default=None, compare=False)
    """Path the trace was read from, for error messages; not part of equality."""

    @property
    def n_warps(self) -> int:
        return int(self.warp_id.shape[0])

    @property
    def n_insts(self) -> int:
        return int(self.pc.shape[0])

    @property
    def has_values(self) -> bool:
        return self.values is not None

    def warp_slice(self, w: int) -> slice:
        return slice(int(self.warp_ptr[w]), int(self.warp_ptr[w + 1]))

    def n_dst(self) -> np.ndarray:
        return (self.dst != NO_REG).sum(axis=1)

    def n_src(self) -> np.ndarray:
        return (self.src != NO_REG).sum(axis=1)

    def active_lanes(self) -> np.ndarray:
        """Popcount of ``mask`` per instruction (vectorised)."""
        m = self.mask.astype(np.uint32)
        return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).astype(np.int32)

    def equals(self, other: "KernelTrace") -> bool:
        """Array-exact equality, the round-trip criterion (source path ignored)."""
        if self.header != other.header or self.opcode_table != other.opcode_table:
            return False
        names = ("warp_cta", "warp_id", "warp_ptr", "pc", "mask", "opcode", "dst", "src",
                 "mem_width", "addr_ptr", "addrs", "line_num", "imm", "value_ptr", "values")
        for name in names:
            a, b = getattr(self, name), getattr(other, name)
            if (a is None) != (b is None):
                return False
            if a is not None and (a.shape != b.shape or not np.array_equal(a, b)):
                return False
        return True


@dataclass(frozen=True)
class InvocationInfo:
    """What a workload directory says about one invocation without parsing its body."""

    invocation: int  # 0-based launch order
    path: str  # trace file, relative to the workload directory
    header: KernelHeader
    n_bytes: int  # size on disk (compressed size for .gz/.xz/.zst)
