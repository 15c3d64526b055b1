"""Profile import and profile.csv reading on hostile input: each bad value is one located
error (never a traceback, never a silently dropped or misread record), and each record left
out on purpose is counted in a warning.

Inputs are generated here (SYNTHETIC values in each tool's layout).
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import gclsampler.cli as cli
from gclsampler.cli import main
from gclsampler.profile import (
    ProfileFormatError,
    detect_format,
    import_profile,
    parse_dim3,
    read_profile,
)


@pytest.fixture(autouse=True)
def _only_profile_cli(monkeypatch):
    """Build the real dispatcher with only this group, so the test does not import torch."""
    monkeypatch.setattr(cli, "GROUPS", {"profile": cli.GROUPS["profile"]})


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ---- Nsight Systems (cuda_gpu_trace) -----------------------------------------------------------
NSYS_HEAD = '"Start (ns)","Duration (ns)","CorrId","GrdX","GrdY","GrdZ","BlkX","BlkY","BlkZ","Reg/Trd","Name"\n'


def _nsys(tmp_path, *rows: str) -> Path:
    return _write(tmp_path, "g.csv", NSYS_HEAD + "".join(r + "\n" for r in rows))


def test_nsys_one_missing_corrid_is_an_error(tmp_path):
    p = _nsys(tmp_path, "1000,100,10,1,1,1,32,1,1,16,kA", "1100,200,,2,1,1,32,1,1,16,kC",
              "1200,300,11,3,1,1,32,1,1,16,kB")
    with pytest.raises(ProfileFormatError, match=r"g.csv:3: CorrId: missing"):
        import_profile(p)


def test_nsys_repeated_corrid_is_an_error(tmp_path):
    p = _nsys(tmp_path, "1000,100,10,1,1,1,32,1,1,16,kA", "1100,200,11,2,1,1,32,1,1,16,kC",
              "1200,300,11,3,1,1,32,1,1,16,kB")
    with pytest.raises(ProfileFormatError, match=r"g.csv:4: CorrId: 11 is also the correlation id of line 3"):
        import_profile(p)


def test_nsys_without_corrid_column_keeps_file_order(tmp_path):
    text = NSYS_HEAD.replace('"CorrId",', "") + "1000,100,1,1,1,32,1,1,16,kA\n1100,200,2,1,1,32,1,1,16,kB\n"
    df = import_profile(_write(tmp_path, "g.csv", text))
    assert list(df["kernel_name"]) == ["kA", "kB"]


def test_nsys_kernel_with_empty_grid_is_an_error(tmp_path):
    p = _nsys(tmp_path, "1000,100,10,1,1,1,32,1,1,16,kA", "1100,200,11,,,,32,1,1,16,kB")
    with pytest.raises(ProfileFormatError, match=r"g.csv:3: GrdX: empty grid for kernel 'kB'"):
        import_profile(p)


def test_nsys_skipped_memcpy_rows_are_counted(tmp_path, capsys):
    p = _nsys(tmp_path, "900,50,9,,,,,,,,[CUDA memcpy Host-to-Device]", "1000,100,10,1,1,1,32,1,1,16,kA",
              "1050,10,12,,,,,,,,[CUDA memset]", "1100,200,11,2,1,1,32,1,1,16,kB")
    from gclsampler.profile import _import_nsys_arrow, _import_nsys_text

    for read in (lambda n: import_profile(p, notes=n), lambda n: _import_nsys_text(p, p.read_text(), notes=n),
                 lambda n: _import_nsys_arrow(p, notes=n)):
        notes: list[str] = []
        assert list(read(notes)["kernel_name"]) == ["kA", "kB"]
        assert notes == [f"{p}: skipped 2 row(s) without a grid (memcpy/memset, not kernel launches)"]
    assert main(["profile", "import", str(p), "--out", str(tmp_path / "p.csv")]) == 0
    assert capsys.readouterr().err.strip() == (f"gclsampler: warning: {p}: skipped 2 row(s) without a grid "
                                               "(memcpy/memset, not kernel launches)")


def test_nsys_non_numeric_registers_are_an_error(tmp_path):
    p = _nsys(tmp_path, "1000,100,10,1,1,1,32,1,1,abc,kA", "1100,200,11,2,1,1,32,1,1,16,kB")
    with pytest.raises(ProfileFormatError, match=r"g.csv:2: Reg/Trd: not a number: 'abc'"):
        import_profile(p)


def test_nsys_repeated_header_column_is_an_error(tmp_path):
    from gclsampler.profile import _import_nsys_text

    text = NSYS_HEAD.replace('"Name"', '"Reg/Trd","Name"') + "1000,100,10,1,1,1,32,1,1,16,17,kA\n"
    with pytest.raises(ProfileFormatError, match=r"g.csv:1: Reg/Trd: column appears more than once"):
        _import_nsys_text(_write(tmp_path, "g.csv", text), text)


# ---- torch.profiler ------------------------------------------------------------------------------
def _torch(tmp_path, *events: dict, name: str = "t.json") -> Path:
    return _write(tmp_path, name, json.dumps({"traceEvents": list(events)}))


def _ev(name: str, ts: float, corr=None, grid=(1, 1, 1), **args) -> dict:
    a = {"grid": list(grid), "block": [32, 1, 1], **args}
    if corr is not None:
        a["correlation"] = corr
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 1.0, "args": a}


def test_torch_one_missing_or_non_numeric_correlation_is_an_error(tmp_path):
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7), _ev("kC", 11))
    with pytest.raises(ProfileFormatError, match=r"t.json: traceEvents\[2\].args.correlation: missing"):
        import_profile(p)
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7), _ev("kC", 11, "six"))
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[2\].args.correlation: not a whole number: 'six'"):
        import_profile(p)


def test_torch_integer_past_pythons_digit_limit(tmp_path):
    """json.loads raised a plain ValueError (int conversion past 4300 digits): a traceback, exit 1.
    In a field the importer does not read it is ignored; in one it reads it is named."""
    huge = "9" * 5000
    ev = json.dumps(_ev("kA", 10, 5))
    p = _write(tmp_path, "t.json", '{"traceEvents": [' + ev[:-2] + ', "x": ' + huge + "}}]}")
    assert list(import_profile(p)["kernel_name"]) == ["kA"]
    p = _write(tmp_path, "t.json", '{"traceEvents": [' + ev.replace('"correlation": 5', '"correlation": ' + huge) + "]}")
    with pytest.raises(ProfileFormatError, match=r"t.json: traceEvents\[0\].args.correlation: not a whole number"):
        import_profile(p)


def test_torch_numeric_string_correlation_orders_like_a_number(tmp_path):
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7), _ev("kC", 13, "6"))
    assert list(import_profile(p)["kernel_name"]) == ["kA", "kC", "kB"]


def test_torch_without_any_correlation_orders_by_ts(tmp_path):
    p = _torch(tmp_path, _ev("kA", 10), _ev("kB", 12), _ev("kC", 11))
    assert list(import_profile(p)["kernel_name"]) == ["kA", "kC", "kB"]


def test_torch_repeated_correlation_is_an_error(tmp_path):
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7), _ev("kC", 13, 5))
    with pytest.raises(ProfileFormatError,
                       match=r"traceEvents\[2\].args.correlation: 5 is also the correlation id of traceEvents\[0\]"):
        import_profile(p)


@pytest.mark.parametrize("ids", [(2**53 + 1, 2**53), (2**53 + 3, 2**53 + 2)])
def test_correlation_ids_past_2_53_are_refused_for_what_they_are(tmp_path, ids):
    """Read as float64, two distinct ids past 2^53 became one and were refused as "repeated",
    naming a value neither line holds; ids that stayed apart were taken (as they still would be
    read by a float). Both nsys readers and the torch reader now name the first such id."""
    p = _nsys(tmp_path, f"1000,100,{ids[0]},1,1,1,32,1,1,16,kA", f"1100,200,{ids[1]},2,1,1,32,1,1,16,kB")
    with pytest.raises(ProfileFormatError, match=r"g.csv:2: CorrId: past 2\^53"):
        import_profile(p)
    p = _torch(tmp_path, _ev("kA", 10, ids[0]), _ev("kB", 12, ids[1]))
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[0\].args.correlation: past 2\^53"):
        import_profile(p)


def test_torch_non_complete_kernel_events_are_counted(tmp_path):
    b = dict(_ev("kB", 12, 7), ph="B")
    p = _torch(tmp_path, _ev("kA", 10, 5), b, _ev("kC", 11, 6))
    notes: list[str] = []
    assert list(import_profile(p, notes=notes)["kernel_name"]) == ["kA", "kC"]
    assert len(notes) == 1 and "skipped 1 kernel event(s) whose ph is not \"X\" (first: traceEvents[1], ph 'B')" in notes[0]


@pytest.mark.parametrize("grid, shown", [((2.9, 1, 1), r"\[2.9, 1, 1\]"), ((float("inf"), 1, 1), r"\[inf, 1, 1\]"),
                                         ((1e30, 1, 1), r"\[1e\+30, 1, 1\]"), ((True, 1, 1), r"\[True, 1, 1\]"),
                                         ((1, 1), r"\[1, 1\]")])
def test_torch_grid_must_be_three_whole_numbers(tmp_path, grid, shown):
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7, grid=grid))
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[1\].args.grid: expected \[x, y, z\] .*found " + shown):
        import_profile(p)


def test_torch_args_not_an_object_and_bool_duration_are_errors(tmp_path):
    bad = dict(_ev("kB", 12, 7), args=[1, 2])
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[1\].args: expected an object, found \[1, 2\]"):
        import_profile(_torch(tmp_path, _ev("kA", 10, 5), bad))
    bad = dict(_ev("kB", 12, 7), dur=True)
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[1\].dur: missing or not a number: True"):
        import_profile(_torch(tmp_path, _ev("kA", 10, 5), bad))


def test_torch_registers_must_be_numbers(tmp_path):
    p = _torch(tmp_path, _ev("kA", 10, 5, **{"registers per thread": "abc"}))
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[0\].args.registers per thread: not a number: 'abc'"):
        import_profile(p)
    p = _torch(tmp_path, _ev("kA", 10, 5, **{"registers per thread": "122"}))
    assert import_profile(p)["nregs"].tolist() == [122]


@pytest.mark.parametrize("key", ["shared memory", "registers per thread"])
def test_torch_fractional_shared_memory_and_registers_are_refused(tmp_path, key):
    """shared memory 10.5 was imported as 10.5 bytes; docs say fractions where a whole
    number belongs are refused. Whole numbers (also as strings) still import."""
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7, **{key: 10.5}))
    with pytest.raises(ProfileFormatError) as err:
        import_profile(p)
    assert str(err.value) == f"{p}: traceEvents[1].args.{key}: not a whole number: 10.5"
    p = _torch(tmp_path, _ev("kA", 10, 5, **{key: "48"}), _ev("kB", 12, 7, **{key: 10}))
    col = "shmem" if key == "shared memory" else "nregs"
    assert import_profile(p)[col].tolist() == [48.0, 10.0]


def test_torch_gzip_with_bom(tmp_path):
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(b"\xef\xbb\xbf" + json.dumps({"traceEvents": [_ev("kA", 10, 5)]}).encode()))
    assert list(import_profile(p)["kernel_name"]) == ["kA"]


# ---- Nsight Compute ----------------------------------------------------------------------------
def _ncu(tmp_path, header: list[str], units: list[str], *rows: list[str]) -> Path:
    def line(cells):
        return ",".join(f'"{c}"' for c in cells) + "\n"
    return _write(tmp_path, "n.csv", line(header) + line(units) + "".join(line(r) for r in rows))


NCU_HEAD = ["ID", "Kernel Name", "Grid Size", "Block Size", "gpu__time_duration.sum"]
NCU_UNITS = ["", "", "", "", "nsecond"]


def test_ncu_scaled_bytes_are_whole(tmp_path):
    p = _ncu(tmp_path, NCU_HEAD + ["launch__shared_mem_per_block_static", "launch__registers_per_thread"],
             NCU_UNITS + ["Kbyte/block", "register/thread"], ["0", "kA", "(64, 8, 1)", "(128, 1, 1)", "100", "16.38", "32"])
    df = import_profile(p)
    assert df["shmem"].tolist() == [16380.0] and df["nregs"].tolist() == [32.0]
    p = _ncu(tmp_path, NCU_HEAD + ["launch__registers_per_thread"], NCU_UNITS + ["register/thread"],
             ["0", "kA", "(64, 8, 1)", "(128, 1, 1)", "100", "32.5"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: launch__registers_per_thread: '32.5' register/thread is 32.5, "
                                                 r"not a whole number"):
        import_profile(p)


def test_ncu_1d_launch_uses_units_and_refuses_fractions(tmp_path):
    head = ["ID", "Kernel Name", "launch__grid_size", "launch__block_size", "gpu__time_duration.sum"]
    p = _ncu(tmp_path, head, ["", "", "K", "", "nsecond"], ["0", "kA", "2", "128", "100"], ["1", "kB", "64.7", "128", "100"])
    assert list(import_profile(p)["grid"]) == ["(2000,1,1)", "(64700,1,1)"]
    p = _ncu(tmp_path, head, ["", "", "", "", "nsecond"], ["0", "kA", "64.7", "128", "100"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: launch__grid_size: '64.7' is 64.7, not a whole number"):
        import_profile(p)
    p = _ncu(tmp_path, head, ["", "", "", "", "nsecond"], ["0", "kA", "inf", "128", "100"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: launch__grid_size: not finite: 'inf'"):
        import_profile(p)


def test_ncu_huge_grid_is_located(tmp_path):
    p = _ncu(tmp_path, NCU_HEAD + ["sm__cycles_elapsed.max", "smsp__inst_executed.sum", "device__attribute_multiprocessor_count"],
             NCU_UNITS + ["cycle", "inst", ""], ["0", "kA", "(99999999999999999999, 1, 1)", "(128, 1, 1)", "100", "200", "300", "108"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: Grid Size: dimensions must be below 2\^31"):
        import_profile(p)
    with pytest.raises(ValueError):
        parse_dim3("(2147483648,1,1)")
    assert parse_dim3("(2147483647,1,1)") == (2147483647, 1, 1)


def test_ncu_repeated_column_and_missing_kernel_name(tmp_path):
    p = _ncu(tmp_path, NCU_HEAD + ["Grid Size"], NCU_UNITS + [""], ["0", "kA", "(1, 1, 1)", "(1, 1, 1)", "5", "(2, 1, 1)"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:1: Grid Size: column appears more than once"):
        import_profile(p)
    head = ["ID", "Kernel", "Grid Size", "Block Size", "gpu__time_duration.sum"]
    p = _ncu(tmp_path, head, NCU_UNITS, ["0", "kA", "(1, 1, 1)", "(1, 1, 1)", "5"])
    assert detect_format(p) == "ncu"
    with pytest.raises(ProfileFormatError, match=r"n.csv:1: Kernel Name: required Nsight Compute column"):
        import_profile(p)


def test_ncu_missing_grid_size_names_that_column_alone(tmp_path):
    """An export without `Grid Size` was refused naming `Grid Size,Block Size` as missing,
    while `Block Size` was there (and the message's own list of columns showed it)."""
    head = ["ID", "Kernel Name", "Block Size", "gpu__time_duration.sum"]
    p = _ncu(tmp_path, head, ["", "", "", "nsecond"], ["0", "kA", "(1, 1, 1)", "5"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:1: Grid Size: required Nsight Compute column\(s\) missing"):
        import_profile(p)
    head = ["ID", "Kernel Name", "Grid Size", "launch__block_size", "gpu__time_duration.sum"]
    p = _ncu(tmp_path, head, ["", "", "", "", "nsecond"], ["0", "kA", "(1, 1, 1)", "1", "5"])
    with pytest.raises(ProfileFormatError, match=r"n.csv:1: Block Size: required Nsight Compute column\(s\) missing"):
        import_profile(p)


def test_ncu_launch_facts_no_launch_can_have(tmp_path):
    row = ["0", "kA", "(64, 8, 1)", "(128, 1, 1)", "100"]
    head = NCU_HEAD + ["sm__cycles_elapsed.max", "smsp__inst_executed.sum", "device__attribute_multiprocessor_count"]
    units = NCU_UNITS + ["cycle", "inst", ""]
    assert import_profile(_ncu(tmp_path, head, units, row + ["200", "300", "108"]))["ipc"].notna().all()
    # 1e300 SMs (another column's value) made every launch's IPC one over its CTA count
    for sms, why in (("0", "1 to 10,000 SMs"), ("1e300", "1 to 10,000 SMs"), ("-1", "negative value '-1'"),
                     ("80.5", "not a whole number"), ("inf", "not finite")):
        with pytest.raises(ProfileFormatError, match=r"n.csv:3: device__attribute_multiprocessor_count: .*" + why):
            import_profile(_ncu(tmp_path, head, units, row + ["200", "300", sms]))
    assert import_profile(_ncu(tmp_path, head, units, row + ["200", "300", "10000"]))["ipc"].notna().all()
    # a part of the shared memory below 0 no longer hides inside a positive total
    head = NCU_HEAD + ["launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"]
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: launch__shared_mem_per_block_dynamic: negative value '-1'"):
        import_profile(_ncu(tmp_path, head, NCU_UNITS + ["byte/block", "byte/block"], row + ["1024", "-1"]))
    # threads per warp instruction: at most the 32 lanes of a warp
    head = NCU_HEAD + ["smsp__thread_inst_executed_per_inst_executed.ratio"]
    assert import_profile(_ncu(tmp_path, head, NCU_UNITS + [""], row + ["32"]))["pka_divergence_efficiency"].tolist() == [32.0]
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: smsp__thread_inst_executed_per_inst_executed.ratio: '99': threads per warp instruction, at most"):
        import_profile(_ncu(tmp_path, head, NCU_UNITS + [""], row + ["99"]))


def test_ncu_total_sizes_must_match_the_dims(tmp_path):
    head = NCU_HEAD + ["launch__grid_size", "launch__block_size"]
    ok = ["0", "kA", "(64, 8, 1)", "(128, 1, 1)", "100", "512", "128"]
    assert import_profile(_ncu(tmp_path, head, NCU_UNITS + ["", ""], ok))["pka_thread_blocks"].tolist() == [512.0]
    bad = ok[:5] + ["64", "128"]
    with pytest.raises(ProfileFormatError, match=r"n.csv:4: launch__grid_size: 64, but Grid Size '\(64, 8, 1\)' is 512 "
                                                 r"CTAs"):
        import_profile(_ncu(tmp_path, head, NCU_UNITS + ["", ""], ["0"] + ok[1:], ["1"] + bad[1:]))
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: launch__block_size: 256, but Block Size '\(128, 1, 1\)' "
                                                 r"is 128 threads"):
        import_profile(_ncu(tmp_path, head, NCU_UNITS + ["", ""], ok[:6] + ["256"]))
    # n/a (a metric ncu could not collect) is unknown, not a contradiction
    assert len(import_profile(_ncu(tmp_path, head, NCU_UNITS + ["", ""], ok[:5] + ["n/a", "128"]))) == 1


# ---- profile.csv -------------------------------------------------------------------------------
HEADER = "invocation,kernel_name,grid,block,time_ns,cycles\n"
ROW0 = '0,k,"(1,1,1)","(1,1,1)",5,\n'


def test_profile_short_row_is_an_error(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER.replace("\n", ",nregs\n") + '0,k,"(1,1,1)","(1,1,1)",5,10,32\n'
               '1,k,"(1,1,1)","(1,1,1)",6,12\n')
    with pytest.raises(ProfileFormatError, match=r"p.csv:3: .*expected 7 fields like the header, found 6"):
        read_profile(p)


def test_profile_trailing_comma_is_a_field_count_error(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + '0,k,"(1,1,1)","(1,1,1)",5,1,\n1,k,"(1,1,1)","(1,1,1)",5,1,\n')
    with pytest.raises(ProfileFormatError, match=r"p.csv:2: .*expected 6 fields like the header, found 7"):
        read_profile(p)


def test_profile_repeated_column_is_an_error(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER.replace("\n", ",time_ns\n") + '0,k,"(1,1,1)","(1,1,1)",5,10,5000\n')
    with pytest.raises(ProfileFormatError, match=r"p.csv:1: time_ns: column appears more than once"):
        read_profile(p)


def test_profile_with_an_unnamed_column_is_named_not_renamed(tmp_path):
    """pandas' ``to_csv`` without ``index=False`` writes an unnamed first column; it came back
    as ``Unnamed: 0``, moved last, and was written back so."""
    import pandas as pd

    good = _write(tmp_path, "good.csv", HEADER + '0,k,"(1,1,1)","(1,1,1)",5,10\n1,k,"(1,1,1)","(1,1,1)",6,12\n')
    read_profile(good).to_csv(tmp_path / "idx.csv")  # index=True, the default
    with pytest.raises(ProfileFormatError, match=r"idx.csv:1: column 1 of the header has no name \(pandas writes its "
                                                 r"index so: save the frame with to_csv\(\.\.\., index=False\)\)"):
        read_profile(tmp_path / "idx.csv")
    mid = _write(tmp_path, "mid.csv", HEADER.replace("\n", ",,nregs\n") + '0,k,"(1,1,1)","(1,1,1)",5,10,a,3\n')
    with pytest.raises(ProfileFormatError, match=r"mid.csv:1: column 7 of the header has no name; give it one"):
        read_profile(mid)
    assert list(pd.read_csv(good).columns) == list(read_profile(good).columns)


def test_a_negative_launch_dimension_is_named_as_one(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + '0,k,"(-5,1,1)","(1,1,1)",5,10\n')
    with pytest.raises(ProfileFormatError, match=r"p\.csv:2: grid: .*dimensions must be >= 1"):
        read_profile(p)


def test_a_nan_time_is_named_as_what_it_is(tmp_path):
    """A literal NaN was reported as a bare "missing value", which reads as an empty cell."""
    p = _write(tmp_path, "p.csv", HEADER + '0,k,"(1,1,1)","(1,1,1)",5,10\n1,k,"(1,1,1)","(1,1,1)",NaN,12\n')
    with pytest.raises(ProfileFormatError, match=r"p\.csv:3: time_ns: missing value \(empty, NaN or n/a\): every "
                                                 r"invocation needs its time"):
        read_profile(p)


def test_profile_booleans_are_not_numbers(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER.replace("\n", ",nregs\n") + '0,k,"(1,1,1)","(1,1,1)",True,10,True\n')
    with pytest.raises(ProfileFormatError, match=r"p.csv:2: time_ns: not a number: True"):
        read_profile(p)


def test_profile_errors_name_the_physical_line(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + ROW0 + "\n\n" + '1,k,"(1,1,1)","(1,1,1)",-5,\n')
    with pytest.raises(ProfileFormatError, match=r"p.csv:5: time_ns: negative value"):
        read_profile(p)
    p = _write(tmp_path, "p.csv", HEADER + '0,"two\nlines","(1,1,1)","(1,1,1)",5,\n1,k,"(1,1,1)","(1,1,1)",-5,\n')
    with pytest.raises(ProfileFormatError, match=r"p.csv:4: time_ns: negative value"):
        read_profile(p)


def test_profile_errors_show_plain_values(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + ROW0 + ROW0)
    with pytest.raises(ProfileFormatError, match=r"p.csv:3: invocation: .*expected 1, found 0$"):
        read_profile(p)
    p = _write(tmp_path, "p.csv", HEADER + ROW0.replace(",\n", ",inf\n"))
    with pytest.raises(ProfileFormatError, match=r"p.csv:2: cycles: not finite: inf$"):
        read_profile(p)


def test_profile_with_quoted_header_imports(tmp_path):
    p = _write(tmp_path, "p.csv", '"invocation","kernel_name","grid","block","time_ns","cycles"\n' + ROW0)
    assert detect_format(p) == "profile"
    assert list(import_profile(p)["kernel_name"]) == ["k"]


def test_profile_with_reordered_columns_is_detected(tmp_path):
    """read_profile takes the columns in any order; --format auto called such a file unrecognised."""
    p = _write(tmp_path, "p.csv", HEADER + ROW0)
    q = _write(tmp_path, "q.csv", 'kernel_name,time_ns,invocation,grid,block,cycles\nk,5,0,"(1,1,1)","(1,1,1)",\n')
    assert detect_format(q) == "profile"
    pd.testing.assert_frame_equal(import_profile(q), import_profile(p))
    r = _write(tmp_path, "r.csv", 'kernel_name,time_ns,grid,block,cycles\nk,5,"(1,1,1)","(1,1,1)",\n')
    with pytest.raises(ProfileFormatError, match="unrecognised export"):  # no invocation column: not a profile.csv
        detect_format(r)


@pytest.mark.parametrize("col", ["time_ns", "cycles"])
def test_a_column_whose_total_overflows_names_its_largest_value(tmp_path, col):
    """Each value is finite, but every estimate sums them: the total would be inf."""
    rows = [f'{i},k,"(1,1,1)","(1,1,1)",' + (f"{v},5\n" if col == "time_ns" else f"5,{v}\n")
            for i, v in enumerate([5, 1.2e308, 1.5e308])]
    p = _write(tmp_path, "p.csv", HEADER + "".join(rows))
    with pytest.raises(ProfileFormatError, match=rf"p.csv:4: {col}: 1.5e\+308: the column's total overflows float64"):
        read_profile(p)


@pytest.mark.parametrize("clock", [float("inf"), 1e308, float("nan")])
def test_clock_must_give_finite_cycles(tmp_path, clock):
    p = _write(tmp_path, "p.csv", HEADER + ROW0.replace(",5,", ",5000,"))  # 5000 ns at 1e308 MHz overflows
    with pytest.raises(ProfileFormatError, match=r"p.csv: clock_mhz: "):
        import_profile(p, clock_mhz=clock)


# ---- validate ----------------------------------------------------------------------------------
def test_arch_profile_must_agree_on_grid_and_block(tmp_path):
    from gclsampler.validate import check_workload

    wl = tmp_path / "wl"
    (wl / "profiles").mkdir(parents=True)
    (wl / "profile.csv").write_text(HEADER + ROW0 + "\n" + '1,k,"(1,1,1)","(1,1,1)",5,\n')
    (wl / "profiles" / "ampere.csv").write_text(HEADER + ROW0 + '1,k,"(9,9,9)","(1024,1,1)",5,\n')
    texts = [p.text for p in check_workload(wl) if p.severity == "error"]
    assert len(texts) == 2
    assert texts[0].endswith("ampere.csv:3: grid: (9,9,9), but profile.csv line 4 is (1,1,1)")
    assert texts[1].endswith("ampere.csv:3: block: (1024,1,1), but profile.csv line 4 is (1,1,1)")


def test_profile_vs_traces_names_the_physical_line(wl_copy):
    from gclsampler.validate import check_workload

    p = wl_copy / "profile.csv"
    lines = p.read_text().splitlines(keepends=True)
    head, row3 = lines[0], lines[4].split(",", 2)
    lines[4] = f"{row3[0]},not_the_traced_kernel,{row3[2]}"
    p.write_text(head + "\n" + "".join(lines[1:]))  # a blank line after the header
    texts = [q.text for q in check_workload(wl_copy) if q.severity == "error"]
    assert len(texts) == 1 and "profile.csv:6: kernel_name: 'not_the_traced_kernel'" in texts[0]


def test_no_tracebacks_and_one_line_from_the_cli(tmp_path, capsys):
    cases = {
        "t.json": json.dumps({"traceEvents": [dict(_ev("kA", 10, 5), args=[1, 2])]}),
        "n.csv": '"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum"\n"","","","","nsecond"\n'
                 '"0","kA","(99999999999999999999, 1, 1)","(1, 1, 1)","5"\n',
    }
    for name, text in cases.items():
        p = _write(tmp_path, name, text)
        assert main(["profile", "import", str(p), "--out", str(tmp_path / "p.csv")]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.strip().count("\n") == 0 and f"{name}" in err
    assert not (tmp_path / "p.csv").exists()


def test_ncu_real_units_ipc_rate_and_hit_rate_over_100(tmp_path):
    """Two things a real ncu 2025.3.1 export on an H200 has and the importer refused:
    IPC written as 'inst/cycle', and L2 hit rates above 100 %. The rate is read as a ratio;
    the hit rate is clipped to 1 and a note names the column, the count and the maximum."""
    head = NCU_HEAD + ["sm__inst_executed.avg.per_cycle_elapsed", "lts__t_sector_hit_rate.pct"]
    units = NCU_UNITS + ["inst/cycle", "%"]
    p = _ncu(tmp_path, head, units, ["0", "kA", "(4, 1, 1)", "(128, 1, 1)", "100", "0.52", "183.76"],
             ["1", "kA", "(4, 1, 1)", "(128, 1, 1)", "100", "0.48", "71.5"])
    notes: list[str] = []
    df = import_profile(p, notes=notes)
    assert df["l2_hit_rate"].tolist() == [1.0, 0.715]
    assert notes == [f"{p}: lts__t_sector_hit_rate.pct: 1 of 2 launches report above 100 % (up to 183.8 %); "
                     "clipped to 100 %"]
    assert df["ipc"].tolist() == pytest.approx([0.52, 0.48])


def test_extra_columns_keep_the_text_written_and_still_read_as_numbers(tmp_path, capsys):
    """An unknown column's cells were re-written as pandas parsed them (007 -> 7.0, 1e3 ->
    1000.0, TRUE -> True); docs say other columns are kept as they are. A sampler pointed at
    such a column (--time-column) still reads it as numbers."""
    from gclsampler.plan import numeric_column

    rows = ['0,k,"(1,1,1)","(1,1,1)",5,7,007,1,TRUE," a,b "\n', '1,k,"(1,1,1)","(1,1,1)",5,8,1e3,2.50,,x\n']
    p = _write(tmp_path, "p.csv", HEADER.rstrip("\n") + ",note,tag,flag,text\n" + "".join(rows))
    out = tmp_path / "o.csv"
    assert main(["profile", "import", str(p), "--out", str(out)]) == 0
    assert out.read_text() == p.read_text()
    df = read_profile(out)
    assert numeric_column(df, "note", out).tolist() == [7.0, 1000.0]
    assert numeric_column(df, "tag", out).tolist() == [1.0, 2.5]
    assert df["flag"].isna().tolist() == [False, True]


def test_ncu_on_stdout_with_a_progress_line_per_launch_is_detected(tmp_path):
    """ncu with its CSV on stdout prints one ==PROF== line per launch before the header;
    with 255 of them the header was past the 200 lines detection looked at."""
    chatter = "==PROF== Connected to process 4242 (/app)\n" + "".join(
        f'==PROF== Profiling "kA" - {i}: 0%....50%....100% - 9 passes\n' for i in range(255))
    rows = [["0", "kA", "(1, 1, 1)", "(32, 1, 1)", "100"], ["1", "kA", "(1, 1, 1)", "(32, 1, 1)", "200"]]
    p = _ncu(tmp_path, NCU_HEAD, NCU_UNITS, *rows)
    p.write_text(chatter + p.read_text() + "==PROF== Disconnected from process 4242\n")
    assert detect_format(p) == "ncu"
    assert import_profile(p)["time_ns"].tolist() == [100.0, 200.0]


def test_ncu_shared_memory_with_a_part_n_a_is_missing(tmp_path):
    """np.nan_to_num turned ncu's n/a into 0 bytes; docs say n/a is read as missing."""
    head = NCU_HEAD + ["launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"]
    rows = [["0", "kA", "(1, 1, 1)", "(32, 1, 1)", "100", "n/a", "512"],
            ["1", "kA", "(1, 1, 1)", "(32, 1, 1)", "100", "1024", "n/a"],
            ["2", "kA", "(1, 1, 1)", "(32, 1, 1)", "100", "n/a", "n/a"],
            ["3", "kA", "(1, 1, 1)", "(32, 1, 1)", "100", "1024", "512"]]
    p = _ncu(tmp_path, head, NCU_UNITS + ["byte/block", "byte/block"], *rows)
    shmem = import_profile(p)["shmem"]
    assert shmem.isna().tolist() == [True, True, True, False] and shmem.iloc[3] == 1536.0
    out = tmp_path / "o.csv"
    assert main(["profile", "import", str(p), "--out", str(out)]) == 0
    assert [line.rsplit(",", 1)[1] for line in out.read_text().splitlines()] == ["shmem", "", "", "", "1536.0"]


def test_clock_whose_filled_cycles_total_overflows_writes_nothing(tmp_path, capsys):
    """Each filled value was finite (1 us at 1e308 MHz is 1e308 cycles), so import wrote a
    profile.csv whose cycles total overflows, and `profile info` then refused it."""
    p = _torch(tmp_path, _ev("kA", 10, 5), _ev("kB", 12, 7))
    out = tmp_path / "o.csv"
    assert main(["profile", "import", str(p), "--out", str(out), "--clock-mhz", "1e308"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"gclsampler: error: {p}: clock_mhz: 1e+308 MHz gives cycles whose total overflows float64 "
                   "(largest: invocation 0, time_ns 1000.0)")
    assert not out.exists()
    assert main(["profile", "import", str(p), "--out", str(out), "--clock-mhz", "1e305"]) == 0
    assert main(["profile", "info", str(out)]) == 0
    assert read_profile(out)["cycles"].tolist() == [1e305, 1e305]


def test_a_time_that_overflows_once_scaled_names_its_cell(tmp_path, capsys):
    """ncu 1.5e308 msecond printed numpy's 'RuntimeWarning: overflow encountered in multiply'
    and then 'time_ns: not finite: inf' without the line; each importer now names the cell."""
    ncu = _ncu(tmp_path, NCU_HEAD, ["", "", "", "", "msecond"], ["0", "kA", "(1, 1, 1)", "(32, 1, 1)", "1"],
               ["1", "kA", "(1, 1, 1)", "(32, 1, 1)", "1.5e308"])
    nsys = _write(tmp_path, "g.csv", NSYS_HEAD.replace("Duration (ns)", "Duration (ms)")
                  + '1,1.5e308,5,1,1,1,32,1,1,16,kA\n')
    torch = _torch(tmp_path, _ev("kA", 10, 5), dict(_ev("kB", 12, 7), dur=1.5e308))
    want = {ncu: f"{ncu}:4: gpu__time_duration.sum: '1.5e308' msecond overflows float64 once scaled to ns",
            nsys: f"{nsys}:2: Duration (ms): '1.5e308' overflows float64 once scaled to ns",
            torch: f"{torch}: traceEvents[1].dur: 1.5e+308 us overflows float64 once scaled to ns"}
    for p, line in want.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's overflow warning would be a second line
            assert main(["profile", "import", str(p), "--out", str(tmp_path / "o.csv")]) == 2
        assert capsys.readouterr().err == f"gclsampler: error: {line}\n"
    assert not (tmp_path / "o.csv").exists()


# ---- audit: cells Python's float() reads but no profiler writes; processes; ncu errors ---------
@pytest.mark.parametrize("cell", ["1_5", "\u0661\u0662"])
def test_a_number_only_python_reads_is_refused_not_misread(tmp_path, cell):
    """float("1_5") is 15.0 and float("١٢") is 12.0: such a cell was imported as another number."""
    p = _ncu(tmp_path, NCU_HEAD, NCU_UNITS, ["0", "kA", "(64, 8, 1)", "(128, 1, 1)", cell])
    with pytest.raises(ProfileFormatError, match=r"n.csv:3: gpu__time_duration.sum: not a number"):
        import_profile(p)
    p = _nsys(tmp_path, f"1000,{cell},10,1,1,1,32,1,1,16,kA")
    with pytest.raises(ProfileFormatError, match=r"g.csv:2: Duration \(ns\): not a number"):
        import_profile(p)
    p = _write(tmp_path, "t.json", json.dumps({"traceEvents": [dict(_ev("kA", 10, 5), dur=cell)]}))
    with pytest.raises(ProfileFormatError, match=r"traceEvents\[0\]\.dur: missing or not a number"):
        import_profile(p)


EXEC_HEAD = ('"API Start (ns)","API Dur (ns)","Kernel Start (ns)","Kernel Dur (ns)","PID","TID","DevId",'
             '"API Function","GridXYZ","BlockXYZ","Kernel Name"\n')


def test_nsys_kern_exec_trace_of_two_processes_is_refused(tmp_path):
    """Its rows are put in API start order: two processes' launches came out interleaved, each
    row taken for the next launch of one program (ncu's Process ID column is refused so already)."""
    from gclsampler.profile import _import_nsys_arrow

    rows = ['1000,5,2000,100,41,41,0,cudaLaunchKernel,"1 1 1","32 1 1",kA',
            '1100,5,2100,100,42,42,0,cudaLaunchKernel,"1 1 1","32 1 1",kB']
    p = _write(tmp_path, "e.csv", EXEC_HEAD + "".join(r + "\n" for r in rows))
    with pytest.raises(ProfileFormatError, match=r"e.csv:3: PID: 42, but line 2 is process 41"):
        import_profile(p)
    assert _import_nsys_arrow(p) is None  # the fast path leaves it to the row reader
    p = _write(tmp_path, "e.csv", EXEC_HEAD + "".join(r.replace(",42,", ",41,") + "\n" for r in rows))
    assert list(import_profile(p)["kernel_name"]) == ["kA", "kB"]


def test_ncu_error_lines_are_counted_in_a_warning(tmp_path, capsys):
    """ncu writes a launch it failed to profile as an ==ERROR== line and no row; skipped like
    ==PROF== chatter, nothing said the export might lack a launch."""
    p = _ncu(tmp_path, NCU_HEAD, NCU_UNITS, ["0", "kA", "(64, 8, 1)", "(128, 1, 1)", "100"])
    p.write_text(p.read_text() + '==ERROR== Failed to profile "kB" in process 41\n')
    notes: list[str] = []
    assert list(import_profile(p, notes=notes)["kernel_name"]) == ["kA"]
    assert len(notes) == 1 and notes[0].startswith(f"{p}:4: 1 ==ERROR== line(s) from ncu")
    assert main(["profile", "import", str(p), "--out", str(tmp_path / "out.csv")]) == 0
    assert "warning" in capsys.readouterr().err


def test_nsys_duration_in_greek_mu_seconds(tmp_path):
    p = _write(tmp_path, "g.csv", NSYS_HEAD.replace("Duration (ns)", "Duration (\u03bcs)") + "1000,1.5,10,1,1,1,32,1,1,16,kA\n")
    assert import_profile(p)["time_ns"].tolist() == [1500.0]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_non_utf8_byte_in_an_export_is_named_by_line(tmp_path, bom, suffix):
    """The error gave the decoder's byte position ('in position 84'), not the file's line."""
    import gzip

    data = bom + b'"ID","Kernel Name"\n"0","k1"\n"1","k\xff"\n'
    p = tmp_path / f"ncu.csv{suffix}"
    p.write_bytes(gzip.compress(data) if suffix else data)
    with pytest.raises(ProfileFormatError, match=r"ncu.csv(\.gz)?:3: not UTF-8 text: .*\(byte 0xff\)"):
        import_profile(p)
