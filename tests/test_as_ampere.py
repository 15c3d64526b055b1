"""``--as-ampere``: Hopper (sm_90) and Ada (sm_89) traces for an Accel-Sim that models Ampere at most.

The REAL H200 traces under ``real/`` are the fixtures: nw uses VIADD and VIADDMNMX, bfs VIADD and
VIMNMX, the LLM's cuBLAS GEMMs HGMMA and TMA instructions. Accel-Sim dev 73f9fac ran nw, lud and
bfs traces rewritten this way on SM86_RTX3070 (docs/simulate.md); these tests hold the rewrite
to what made that work.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from _trace_fixtures import Inst, make_trace
from gclsampler.cli import main
from gclsampler.trace import read_kernel
from gclsampler.trace.ampere import (AMPERE_BINARY_VERSION, AMPERE_OPCODES, HOPPER_TO_AMPERE, as_ampere,
                                     describe)
from gclsampler.trace.reader import TraceFormatError
from gclsampler.trace.workload import accelsim_export, write_kernelslist
from gclsampler.trace.writer import write_kernel

REAL = Path(__file__).resolve().parents[1] / "real"


def _hopper(ops: list[str], version: int = 90, kernel_id: int = 1):
    """A one-warp trace of ``ops`` (each with a destination and two sources) at ``version``."""
    warp = [Inst(op, ("R0",), ("R1", "R2")) for op in ops] + [Inst("EXIT")]
    t = make_trace([warp], kernel_id=kernel_id, name=f"k{kernel_id}")
    return dataclasses.replace(t, header=dataclasses.replace(t.header, binary_version=version))


def _opcode_bases(text: bytes) -> set[str]:
    """Opcodes of an exported trace's instruction lines (Accel-Sim looks each up before its first '.')."""
    out = set()
    for line in text.decode().splitlines():
        m = re.match(r"^[0-9a-f]{4} [0-9a-f]{8} \d+(?: R\d+)* ([A-Z][A-Z0-9_.]*) ", line)
        if m:
            out.add(m.group(1).split(".", 1)[0])
    return out


@pytest.mark.parametrize("version", [89, 90])
def test_hopper_integer_opcodes_become_their_ampere_unit_and_the_operands_stay(version):
    t = _hopper(["VIADD", "VIADDMNMX.RELU", "VIMNMX.U32", "FADD", "VIADD"], version)
    out, renamed = as_ampere(t)
    assert out.header.binary_version == AMPERE_BINARY_VERSION
    assert renamed == {"VIADD": 2, "VIADDMNMX": 1, "VIMNMX": 1}
    names = [out.opcode_table[i] for i in out.opcode]
    assert names[:5] == ["IADD3", "IADD3", "IMNMX", "FADD", "IADD3"]
    assert all(n.split(".")[0] in AMPERE_OPCODES for n in names)
    # only the opcode names change: registers, addresses, masks and PCs are the traced ones
    for f in ("dst", "src", "pc", "mask", "opcode", "warp_ptr", "addrs"):
        assert np.array_equal(getattr(out, f), getattr(t, f)), f


def test_other_binary_versions_pass_unchanged():
    t = _hopper(["VIADD"], version=86)  # as if an Ampere trace held it: not ours to rename
    out, renamed = as_ampere(t)
    assert out is t and renamed == {}


def test_an_instruction_without_an_ampere_counterpart_is_refused_by_name_and_count():
    t = _hopper(["HGMMA.64x64x16.F32", "HGMMA.64x64x16.F32", "UTMALDG.2D", "VIADD"])
    with pytest.raises(TraceFormatError) as err:
        as_ampere(t)
    text = str(err.value)
    assert "opcode" in text and "HGMMA x2, UTMALDG x1" in text and "no Ampere counterpart" in text


def test_renames_map_onto_opcodes_ampere_knows():
    assert set(HOPPER_TO_AMPERE.values()) <= AMPERE_OPCODES
    assert not set(HOPPER_TO_AMPERE) & AMPERE_OPCODES


def test_real_h200_traces_export_with_nothing_ampere_lacks():
    """Every non-empty REAL nw/lud/bfs trace exports: version 86, only Ampere opcodes, Hopper
    ones counted; the LLM's first GEMM with tensor-core instructions is refused instead."""
    seen: dict[str, int] = {}
    for wl in ("nw", "lud", "bfs"):
        for path in sorted((REAL / wl).glob("kernel-*.traceg.zst"))[:40]:
            t = read_kernel(path)
            if t.n_warps == 0:
                continue
            text, facts = accelsim_export(t, as_ampere=True)
            assert b"-binary version = 86\n" in text
            assert _opcode_bases(text) <= AMPERE_OPCODES, path
            assert facts["as_ampere_from"] == 90
            for op, n in facts["renamed"].items():
                seen[op] = seen.get(op, 0) + n
    assert set(seen) == {"VIADD", "VIADDMNMX", "VIMNMX"}
    gemm = next(p for p in sorted((REAL / "pythia410m_2l").glob("kernel-*.traceg.zst"), key=lambda p: int(p.name.split("-")[1].split(".")[0]))
                if "HGMMA" in {s.split(".")[0] for s in read_kernel(p).opcode_table})
    with pytest.raises(TraceFormatError, match="HGMMA"):
        accelsim_export(read_kernel(gemm), as_ampere=True)


def test_describe_names_the_approximation_once_for_all_traces():
    facts = [{"as_ampere_from": 90, "renamed": {"VIADD": 3}}, {"as_ampere_from": 90, "renamed": {}}, {}]
    (line,) = describe(facts)
    assert "2 of 3 traces of binary version 90" in line and "VIADD -> IADD3 x3" in line
    assert "approximation" in line
    assert describe([{}, {}]) == []


def _workload(tmp_path: Path) -> Path:
    wl = tmp_path / "wl"
    wl.mkdir()
    names = []
    for k, ops in enumerate((["VIADD", "FADD"], ["VIMNMX"]), start=1):
        write_kernel(_hopper(ops, kernel_id=k), wl / f"kernel-{k}.traceg")
        names.append(f"kernel-{k}.traceg")
    write_kernelslist(wl, names)
    return wl


def test_export_cli_rewrites_only_when_asked_and_says_so(tmp_path, capsys):
    wl = _workload(tmp_path)
    assert main(["trace", "export-accelsim", str(wl), str(tmp_path / "plain")]) == 0
    said = capsys.readouterr()
    assert "--as-ampere" in said.err  # the binary-version warning names the way out
    assert b"-binary version = 90" in (tmp_path / "plain" / "kernel-1.traceg").read_bytes()

    assert main(["trace", "export-accelsim", str(wl), str(tmp_path / "ampere"), "--as-ampere"]) == 0
    said = capsys.readouterr()
    assert "binary version" not in said.err  # nothing left to warn about
    assert "--as-ampere: 2 of 2 traces of binary version 90" in said.out and "approximation" in said.out
    for k in (1, 2):
        text = (tmp_path / "ampere" / f"kernel-{k}.traceg").read_bytes()
        assert b"-binary version = 86" in text and _opcode_bases(text) <= AMPERE_OPCODES
    # said in the output too, not only on the terminal: the headers now claim Ampere
    note = (tmp_path / "ampere" / "AS_AMPERE.txt").read_text()
    assert "--as-ampere: 2 of 2 traces of binary version 90" in note and str(wl) in note
    assert not (tmp_path / "plain" / "AS_AMPERE.txt").exists()


def test_export_cli_refuses_a_tensor_core_trace_and_writes_nothing(tmp_path, capsys):
    wl = _workload(tmp_path)
    write_kernel(_hopper(["HGMMA.64x8x16.F32"], kernel_id=3), wl / "kernel-3.traceg")
    write_kernelslist(wl, ["kernel-1.traceg", "kernel-2.traceg", "kernel-3.traceg"])
    assert main(["trace", "export-accelsim", str(wl), str(tmp_path / "out"), "--as-ampere"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "kernel-3.traceg" in err and "HGMMA x1" in err
    assert not (tmp_path / "out").exists()


def test_simulate_runs_hopper_traces_only_with_as_ampere_and_labels_every_output(tmp_path, capsys, monkeypatch):
    from _accelsim_stub import make_stub_root

    monkeypatch.setenv("ACCELSIM_ROOT", str(make_stub_root(tmp_path / "accel-sim-framework")))
    monkeypatch.delenv("STUB_PLAN", raising=False)
    wl = _workload(tmp_path)
    # the stub, like Accel-Sim, prints "unsupported binary version" for 90 and simulates nothing
    assert main(["simulate", "--all", str(wl), "--out", str(tmp_path / "plain")]) == 1
    err = capsys.readouterr().err
    assert "unsupported binary version" in err and "run on an Ampere model with --as-ampere" in err
    assert main(["simulate", "--all", str(wl), "--out", str(tmp_path / "sim"), "--as-ampere"]) == 0
    out = capsys.readouterr().out
    assert "sm_90 traces run as Ampere (--as-ampere), an approximation" in out
    rows = (tmp_path / "sim" / "simulated.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all("sm_90 run as Ampere" in r for r in rows)
    (meta,) = (wl / "profiles").glob("accelsim-*.json")
    assert "run as Ampere (--as-ampere)" in json.loads(meta.read_text())["note"]


def test_renames_of_one_opcode_under_several_modifiers_are_counted_together():
    _, renamed = as_ampere(_hopper(["VIMNMX", "VIMNMX.U32", "VIMNMX.U32", "VIADD"]))
    assert renamed == {"VIMNMX": 3, "VIADD": 1}


def test_only_opcodes_the_trace_runs_can_stop_the_rewrite():
    """An opcode-table entry no instruction uses runs nothing on Ampere: not refused."""
    t = _hopper(["VIADD", "FADD"])
    t = dataclasses.replace(t, opcode_table=(*t.opcode_table, "HGMMA.64x8x16.F32"))
    out, renamed = as_ampere(t)
    assert renamed == {"VIADD": 1} and out.header.binary_version == AMPERE_BINARY_VERSION


def test_opcodes_without_a_counterpart_are_listed_most_frequent_first():
    with pytest.raises(TraceFormatError, match=r"UTMALDG x3, HGMMA x2, SYNCS x2: sm_90 instructions with no Ampere"):
        as_ampere(_hopper(["SYNCS", "UTMALDG", "HGMMA", "UTMALDG", "HGMMA", "SYNCS", "UTMALDG", "VIADD"]))
