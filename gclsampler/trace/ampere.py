"""Hopper (sm_90) and Ada (sm_89) traces for an Accel-Sim that models Ampere at most.

Why: Accel-Sim releases before 2.0 accept binary versions 70, 75, 80 and 86; any other
version prints ``unsupported binary version`` and simulates nothing. Ada shares Ampere's SASS,
and Accel-Sim's maintainers point Hopper users with plain kernels (Rodinia) at Ampere's opcode
map too. What stops a Hopper trace there is a handful of integer opcodes Ampere's map lacks
(``VIADD``, ``VIMNMX``, ``VIADDMNMX``: nw, lud and bfs on the H200 use nothing else new), and
Accel-Sim asserts on an opcode it does not know. Those run on the integer unit like their
Ampere counterparts, so they are renamed; the operands stay as traced. Tensor-core, TMA,
cluster-barrier and warpgroup instructions (``HGMMA``, ``UTMALDG``, ``SYNCS``, ...) have no
Ampere counterpart, and a trace holding one is refused by name: the REAL LLM's cuBLAS GEMMs
need an Accel-Sim with Hopper's model.

The result is an approximation named as one: Hopper SASS on the Ampere timing model of the
config the user picks. ``describe`` says so in every output that used it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gclsampler.trace.reader import TraceFormatError
from gclsampler.trace.types import KernelTrace

AMPERE_BINARY_VERSION = 86
"""The binary version written into a rewritten trace (Accel-Sim's ``AMPERE_RTX_BINART_VERSION``)."""

REWRITTEN_BINARY_VERSIONS = (89, 90)
"""sm_89 (Ada) and sm_90 (Hopper): the versions ``as_ampere`` rewrites; others pass unchanged."""

HOPPER_TO_AMPERE = {"VIADD": "IADD3", "VIMNMX": "IMNMX", "VIADDMNMX": "IADD3"}
"""Hopper integer opcodes Ampere's map lacks, and the Ampere opcode of the same unit."""

AMPERE_OPCODES = frozenset("""
ATOM ATOMG ATOMS B2R BAR BMMA BMOV BMSK BPT BRA BREAK BREV BRX BRXU BSSY BSYNC CALL CCTL CCTLL CCTLT
CS2R CSMTEST DADD DEPBAR DFMA DMMA DMUL DSETP ERRBAR EXIT F2F F2FP F2I F2IP FADD FADD32I FCHK FFMA
FFMA32I FLO FMNMX FMUL FMUL32I FRND FSEL FSET FSETP FSWZADD GETLMEMBASE HADD2 HADD2_32I HFMA2
HFMA2_32I HMMA HMNMX2 HMUL2 HMUL2_32I HSET2 HSETP2 I2F I2FP I2I I2IP IABS IADD IADD3 IADD32I IDP IDP4A
IMAD IMMA IMNMX IMUL IMUL32I ISCADD ISCADD32I ISETP JMP JMX JMXU KILL LD LDC LDG LDGDEPBAR LDGSTS LDL
LDS LDSM LEA LEPC LOP LOP3 LOP32I MATCH MEMBAR MOV MOV32I MOVM MUFU NANOSLEEP NOP P2R PLOP3 PMTRIG
POPC PRMT PSETP QSPC R2B R2P R2UR RED REDUX RET RPCMOV RTT S2R S2UR SEL SETCTAID SETLMEMBASE SGXT
SHF SHFL SHL SHR ST STG STL STS SUATOM SULD SUQUERY SURED SUST TEX TLD TLD4 TMML TXD TXQ UBMSK UBREV
UCLEA UF2FP UFLO UIADD3 UIMAD UISETP ULDC ULEA ULOP ULOP3 ULOP32I UMOV UP2UR UPLOP3 UPOPC UPRMT
UPSETP UR2UP USEL USGXT USHF USHL USHR VABSDIFF VABSDIFF4 VOTE VOTEU VOTE_VTG WARPSYNC YIELD
""".split())
"""Base opcodes of Accel-Sim's Ampere opcode map (``ISA_Def/ampere_opcode.h``, dev 73f9fac):
Accel-Sim looks an instruction up by the opcode before its first '.' and asserts on a miss."""


AS_AMPERE_HELP = ("run sm_89/sm_90 (Ada/Hopper) traces as Ampere (binary version 86) for an Accel-Sim without "
                  "Hopper support: Hopper-only integer opcodes renamed (VIADD -> IADD3, ...), a trace with "
                  "tensor-core, TMA or cluster instructions refused; an approximation, said in every output")
"""``--as-ampere``'s help, the same in ``trace export-accelsim``, ``plan export-accelsim`` and ``simulate``."""


def _base(token: str) -> str:
    return token.split(".", 1)[0]


def as_ampere(t: KernelTrace) -> tuple[KernelTrace, dict[str, int]]:
    """``t`` as an Ampere trace, and how many instructions of each Hopper opcode were renamed.

    A trace of another binary version is returned as it is. Raises ``TraceFormatError``
    naming the trace and every opcode Ampere's map lacks, with its count, when any is left.
    """
    if t.header.binary_version not in REWRITTEN_BINARY_VERSIONS:
        return t, {}
    table = list(t.opcode_table)
    counts = np.bincount(np.asarray(t.opcode, dtype=np.int64), minlength=len(table)) if len(table) else np.zeros(0)
    renamed: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for i, token in enumerate(table):
        base, n = _base(token), int(counts[i])
        if base in HOPPER_TO_AMPERE:
            # the modifiers of a fused add-min/max mean nothing to IADD3: the base alone
            table[i] = HOPPER_TO_AMPERE[base]
            if n:
                renamed[base] = renamed.get(base, 0) + n
        elif base not in AMPERE_OPCODES and n:
            unknown[base] = unknown.get(base, 0) + n
    if unknown:
        listed = ", ".join(f"{op} x{n}" for op, n in sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0])))
        raise TraceFormatError(
            t.source or t.header.name, None, "opcode",
            f"{listed}: sm_{t.header.binary_version} instructions with no Ampere counterpart, so --as-ampere "
            "cannot run this trace on an Ampere model (an Accel-Sim with Hopper support runs it without --as-ampere)")
    header = dataclasses.replace(t.header, binary_version=AMPERE_BINARY_VERSION)
    return dataclasses.replace(t, header=header, opcode_table=tuple(table)), renamed


def describe(facts: list[dict]) -> list[str]:
    """One sentence on the traces ``as_ampere`` rewrote (empty when none were), for every output."""
    rewritten = [f for f in facts if f.get("as_ampere_from")]
    if not rewritten:
        return []
    versions = sorted({f["as_ampere_from"] for f in rewritten})
    renamed: dict[str, int] = {}
    for f in rewritten:
        for op, n in f.get("renamed", {}).items():
            renamed[op] = renamed.get(op, 0) + n
    ops = ", ".join(f"{op} -> {HOPPER_TO_AMPERE[op]} x{n}" for op, n in sorted(renamed.items())) or "no opcode renamed"
    return [f"--as-ampere: {len(rewritten)} of {len(facts)} traces of binary version "
            f"{'/'.join(map(str, versions))} run as Ampere ({AMPERE_BINARY_VERSION}) on the config's Ampere-era "
            f"timing model ({ops}): an approximation of the GPU they were traced on"]
