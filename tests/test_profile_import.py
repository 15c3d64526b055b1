"""Importers: Nsight Compute raw CSV, Nsight Systems traces, torch.profiler chrome traces.

Fixtures in tests/data/profiles/ are hand-written in each tool's layout (SYNTHETIC numbers).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gclsampler.cli as cli
from gclsampler.cli import main


@pytest.fixture(autouse=True)
def _only_profile_cli(monkeypatch):
    """Build the real dispatcher with only this group, so the test does not import torch."""
    monkeypatch.setattr(cli, "GROUPS", {"profile": cli.GROUPS["profile"]})
from gclsampler.profile import (
    PKA_METRICS,
    ProfileFormatError,
    detect_format,
    import_ncu,
    import_profile,
    import_torch,
    read_profile,
)
from gclsampler.profile import _import_nsys_text

DATA = Path(__file__).parent / "data" / "profiles"
FIXTURES = {
    "ncu": DATA / "ncu_raw.csv",
    "nsys": DATA / "nsys_cuda_gpu_trace.csv",
    "nsys_exec": DATA / "nsys_cuda_kern_exec_trace.csv",
    "torch": DATA / "torch_trace.json",
}
# The same four launches in every fixture, in host launch order.
NAMES = ["ampere_sgemm_128x64_nn", "void reduce_kernel<512, 1>(float*, float const*, int)",
         "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(...)",
         "ampere_sgemm_128x64_nn"]
GRIDS = ["(64,8,1)", "(80,1,1)", "(1024,1,1)", "(64,8,1)"]
BLOCKS = ["(128,1,1)", "(512,1,1)", "(128,1,1)", "(128,1,1)"]
TIMES_NS = [117344.0, 1020.0, 8512.0, 118020.0]


@pytest.mark.parametrize("key", list(FIXTURES))
def test_every_format_gives_the_same_launches(key):
    df = import_profile(FIXTURES[key])
    assert list(df["invocation"]) == [0, 1, 2, 3]
    assert list(df["kernel_name"]) == NAMES
    assert list(df["grid"]) == GRIDS
    assert list(df["block"]) == BLOCKS
    np.testing.assert_allclose(df["time_ns"], TIMES_NS, rtol=0, atol=0.5)


@pytest.mark.parametrize("key, fmt", [("ncu", "ncu"), ("nsys", "nsys"), ("nsys_exec", "nsys"), ("torch", "torch")])
def test_detect_format(key, fmt):
    assert detect_format(FIXTURES[key]) == fmt


@pytest.mark.parametrize("key", list(FIXTURES))
def test_an_export_given_as_profile_csv_is_named_and_the_import_command_given(key, tmp_path, capsys):
    """A profiler export copied straight into a workload used to be reported as a CSV whose
    lines have more fields than its header (the ``==PROF==`` line taken for it)."""
    where = tmp_path / "my wl" / "profile.csv"
    where.parent.mkdir()
    where.write_bytes(FIXTURES[key].read_bytes())
    assert main(["profile", "info", str(where)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a profile.csv" in err and "fields" not in err
    assert f"gclsampler profile import '{where}' --out profile.csv" in err


@pytest.mark.parametrize("key, fmt", [("ncu", "ncu"), ("nsys", "nsys"), ("torch", "torch")])
def test_profile_import_format_profile_on_an_export_names_the_format_option(key, fmt, tmp_path, capsys):
    """``profile import --format profile`` on an export told the user to run ``profile import``,
    the command they were running: the advice is the format to give instead."""
    out = tmp_path / "profile.csv"
    assert main(["profile", "import", str(FIXTURES[key]), "--format", "profile", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a profile.csv" in err and f"--format {fmt}" in err
    assert "gclsampler profile import" not in err and not out.exists()


def test_a_profile_csv_missing_a_column_is_not_taken_for_an_export(tmp_path, capsys):
    where = tmp_path / "profile.csv"
    where.write_text("invocation,kernel_name,grid,block\n0,k,\"(1,1,1)\",\"(32,1,1)\"\n")
    assert main(["profile", "info", str(where)]) == 2
    err = capsys.readouterr().err
    assert "time_ns" in err and "not a profile.csv" not in err


def test_ncu_metrics_scaled_and_named():
    df = import_ncu(FIXTURES["ncu"])
    assert all(c in df.columns for c in PKA_METRICS)
    # values read straight off the fixture's first row (thousands separators removed)
    assert df["cycles"][0] == 164281
    assert df["inst_executed"][0] == 2359296
    assert df["l1_hit_rate"][0] == pytest.approx(0.125)  # 12.5 % -> fraction
    assert df["achieved_occupancy"][2] == pytest.approx(0.819)
    assert df["pka_thread_blocks"][0] == 512
    assert df["pka_divergence_efficiency"][1] == pytest.approx(29.5)
    assert df["shmem"][0] == pytest.approx(16380)  # 16.38 Kbyte/block
    assert df["shmem"][1] == 2048  # byte/block dynamic
    assert df["ipc"][0] == pytest.approx(2359296 / (164281 * 108))  # 512 CTAs on 108 SMs
    assert df["ipc"][1] == pytest.approx(41000 / (1428 * 80))  # 80 CTAs: 80 SMs busy
    assert df["warp_inst_executed_mean"][0] == pytest.approx(2359296 / (512 * 4))
    assert df["nregs"].tolist() == [122, 32, 16, 122]


def _ncu_text(unit: str, values: list[str], extra_header: str = "", extra_unit: str = "", extra_vals=None) -> str:
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"'
    units = '"","","","","","","","","","","","' + unit + '"'
    if extra_header:
        head += f',"{extra_header}"'
        units += f',"{extra_unit}"'
    lines = [head, units]
    for i, v in enumerate(values):
        row = f'"{i}","1","app","host","k{i % 2}","1","7","(256, 1, 1)","(4, 1, 1)","0","8.6","{v}"'
        if extra_header:
            row += f',"{extra_vals[i]}"'
        lines.append(row)
    return "\n".join(lines) + "\n"


@given(
    unit=st.sampled_from([("nsecond", 1.0), ("usecond", 1e3), ("msecond", 1e6), ("second", 1e9)]),
    values=st.lists(st.integers(0, 10**7), min_size=1, max_size=8),
)
@settings(max_examples=40, deadline=None)
def test_ncu_time_units_property(tmp_path_factory, unit, values):
    name, scale = unit
    p = tmp_path_factory.mktemp("ncu") / "raw.csv"
    # values written with ncu's thousands separators and two decimals
    p.write_text(_ncu_text(name, [f"{v / 100:,.2f}" for v in values]))
    df = import_ncu(p)
    # exactly the scaled decimal (v / 100 * scale left float noise: 1.005 us was 1004.9999999999999 ns)
    assert df["time_ns"].tolist() == [float(Decimal(v) / 100 * Decimal(scale)) for v in values]
    assert df["cycles"].isna().all()


@given(digits=st.integers(0, 10**15 - 1), exp=st.integers(-40, 40),
       scale=st.sampled_from([1e-2, 1.0, 1e3, 1e6, 1e9, 1e12]))
@settings(max_examples=300, deadline=None)
@example(digits=999_999_999_999_998, exp=-1, scale=1e-2)  # log10 rounds up to 14 just below 1e14
def test_unit_scaling_is_the_correctly_rounded_decimal(digits, exp, scale):
    """A value written with up to 15 significant digits, times a unit's power of ten, is the
    double nearest the scaled decimal: whole nanoseconds come out whole."""
    from gclsampler.profile import _scale_decimal

    text = f"{digits}e{exp}"
    want = float(Decimal(text) * Decimal(repr(scale)))
    assert _scale_decimal(np.array([float(text), -float(text)]), scale).tolist() == [want, -want]


def test_every_importer_scales_without_float_noise(tmp_path):
    """1.005 us imported as 1004.9999999999999 ns, 8.031 us (torch's dur) as 8031.000000000001."""
    p = _write(tmp_path, "raw.csv", _ncu_text("usecond", ["1.005", "8.031"]))
    assert import_ncu(p)["time_ns"].tolist() == [1005.0, 8031.0]
    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": i, "dur": d,
               "args": {"grid": [1, 1, 1], "block": [32, 1, 1], "correlation": i, "est. achieved occupancy %": 57.3}}
              for i, d in enumerate([8.031, 1.005])]
    df = import_torch(_write(tmp_path, "t.json", json.dumps({"traceEvents": events})))
    assert df["time_ns"].tolist() == [8031.0, 1005.0] and df["achieved_occupancy"].tolist() == [0.573, 0.573]
    text = FIXTURES["nsys"].read_text().replace('"Duration (ns)"', '"Duration (us)"')
    head, *rows = text.splitlines(keepends=True)
    text = head + "".join(r.replace(",8512,", ",1.005,").replace(",1020,", ",8.031,") for r in rows)
    nsys = _write(tmp_path, "g.csv", text)
    assert import_profile(nsys, "nsys")["time_ns"].tolist() == [117344000.0, 8031.0, 1005.0, 118020000.0]
    assert _import_nsys_text(nsys, text)["time_ns"].tolist() == [117344000.0, 8031.0, 1005.0, 118020000.0]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_ncu_missing_time_column_lists_found(tmp_path):
    text = FIXTURES["ncu"].read_text().replace('"gpu__time_duration.sum"', '"gpu__time_duration.avg"')
    p = _write(tmp_path, "raw.csv", text)
    with pytest.raises(ProfileFormatError) as err:
        import_ncu(p)
    msg = str(err.value)
    assert f"{p}:3: gpu__time_duration.sum:" in msg and "found columns: ID, Process ID" in msg
    assert "gpu__time_duration.avg" in msg


def test_ncu_unknown_unit_names_units_line(tmp_path):
    p = _write(tmp_path, "raw.csv", _ncu_text("furlong", ["1"]))
    with pytest.raises(ProfileFormatError, match=r"raw.csv:2: gpu__time_duration.sum: unknown unit 'furlong'"):
        import_ncu(p)


def test_ncu_bad_value_names_line(tmp_path):
    p = _write(tmp_path, "raw.csv", _ncu_text("usecond", ["1.0", "2.0", "fast"]))
    with pytest.raises(ProfileFormatError, match=r"raw.csv:5: gpu__time_duration.sum: not a number: 'fast'"):
        import_ncu(p)


@pytest.mark.parametrize("cell", ["1,02", "1.234,5", "12,34", "1,2345", ",5"])
def test_a_decimal_comma_is_refused_not_read_as_a_separator(tmp_path, cell):
    """A profiler run under a locale with decimal commas writes 1,02 for 1.02: read as a
    thousands separator it imported as 102 us (100x), and 1.234,5 as 1.2345 us."""
    p = _write(tmp_path, "raw.csv", _ncu_text("usecond", ["1,234.5", cell]))
    with pytest.raises(ProfileFormatError, match=r"raw.csv:4: gpu__time_duration.sum: not a number: .*decimal point"):
        import_ncu(p)
    text = FIXTURES["nsys"].read_text().replace(",1020,", f',"{cell}",')
    with pytest.raises(ProfileFormatError, match=r"g.csv:8: Duration \(ns\): not a number: .*thousands separator"):
        import_profile(_write(tmp_path, "g.csv", text))


def test_thousands_separators_in_groups_of_three_are_read(tmp_path):
    p = _write(tmp_path, "raw.csv", _ncu_text("nsecond", ["1,234.5", "12,345,678", "1,000e3"]))
    assert import_ncu(p)["time_ns"].tolist() == [1234.5, 12345678.0, 1e6]


def test_ncu_na_metric_becomes_missing(tmp_path):
    p = _write(tmp_path, "raw.csv", _ncu_text("usecond", ["1", "2"], "sm__cycles_elapsed.max", "cycle", ["n/a", "1,000"]))
    df = import_ncu(p)
    assert np.isnan(df["cycles"][0]) and df["cycles"][1] == 1000


def test_ncu_id_gap_is_rejected(tmp_path):
    text = _ncu_text("usecond", ["1", "2", "3"]).replace('"2","1","app"', '"5","1","app"')
    p = _write(tmp_path, "raw.csv", text)
    with pytest.raises(ProfileFormatError, match=r"raw.csv:5: ID: launch IDs jump from 1 to 5"):
        import_ncu(p)


def test_ncu_ids_must_start_at_0_and_not_repeat(tmp_path):
    """IDs 5,6 were read as invocations 0,1 (ncu numbers from 0: the first rows were lost);
    a repeated ID was reported as a 'jump from 0 to 0'."""
    text = _ncu_text("usecond", ["1", "2"]).replace('"0","1","app"', '"5","1","app"').replace('"1","1","app"', '"6","1","app"')
    p = _write(tmp_path, "raw.csv", text)
    with pytest.raises(ProfileFormatError) as err:
        import_ncu(p)
    assert str(err.value) == (f"{p}:3: ID: the first launch ID is 5, not 0: ncu numbers a report's launches from 0, "
                              "so the rows of launches 0..4 are missing (export the whole report)")
    text = _ncu_text("usecond", ["1", "2", "3"]).replace('"1","1","app"', '"0","1","app"')
    p = _write(tmp_path, "raw.csv", text)
    with pytest.raises(ProfileFormatError) as err:
        import_ncu(p)
    assert str(err.value) == f"{p}:4: ID: launch ID 0 repeated (also line 3): one row per invocation"


def test_ncu_ragged_row(tmp_path):
    text = _ncu_text("usecond", ["1", "2"]).rstrip("\n") + ',"extra"\n'
    p = _write(tmp_path, "raw.csv", text)
    with pytest.raises(ProfileFormatError, match=r"raw.csv:4: expected 12 fields"):
        import_ncu(p)


def test_ncu_bad_grid(tmp_path):
    p = _write(tmp_path, "raw.csv", _ncu_text("usecond", ["1"]).replace('"(4, 1, 1)"', '"(4, 1)"'))
    with pytest.raises(ProfileFormatError, match=r"raw.csv:3: Grid Size: expected \(x,y,z\)"):
        import_ncu(p)


def test_ncu_without_header(tmp_path):
    p = _write(tmp_path, "raw.csv", "==PROF== nothing profiled\n")
    with pytest.raises(ProfileFormatError, match=r"raw.csv: ID: no Nsight Compute header"):
        import_profile(p, "ncu")


def test_nsys_skips_memcpy_and_orders_by_correlation():
    df = import_profile(FIXTURES["nsys"], "nsys")
    assert len(df) == 4  # two memcpy rows dropped
    assert "memcpy" not in " ".join(df["kernel_name"]).lower()
    assert df["nregs"].tolist() == [122, 32, 16, 122]
    assert df["cycles"].isna().all()


@pytest.mark.parametrize("edit", [
    lambda t: "Processing [report1.sqlite] with [cuda_gpu_trace.py]...\r 100%\n" + t,  # a progress redraw
    lambda t: t.replace("\n", "\r"),  # classic-Mac line ends
])
def test_nsys_with_a_bare_carriage_return_imports_as_the_clean_file(tmp_path, edit):
    """The fast path's header scan fed a line holding a CR to csv.reader: a csv.Error traceback."""
    text = FIXTURES["nsys"].read_text()
    clean = import_profile(FIXTURES["nsys"], "auto")
    got = import_profile(_write(tmp_path, "t.csv", edit(text)), "auto")
    assert got.equals(clean)


@pytest.mark.parametrize("fixture", ["ncu", "nsys", "nsys_exec"])
@pytest.mark.parametrize("ending", ["", "\n", "\r\n\r\n"])
def test_an_export_cut_inside_its_last_quoted_field_is_refused(tmp_path, fixture, ending):
    """The csv readers take what is there: ncu's SM count "108" cut to "10" imported a ten times
    higher IPC, and an nsys kernel name cut short became another kernel's name, both silently."""
    text = FIXTURES[fixture].read_text().rstrip("\r\n")
    last = text.rfind('"')  # the closing quote of the last quoted field
    assert last > 0
    cut = text[:last - 1] + ending
    p = _write(tmp_path, "t.csv", cut)
    line = cut.rstrip("\r\n").count("\n") + 1 if fixture != "nsys" else None  # nsys' mapped reader counts none
    where = f"t.csv:{line}: " if line else "t.csv: "
    with pytest.raises(ProfileFormatError, match=re.escape(where + "the file ends inside a quoted field")):
        import_profile(p, "auto")
    assert len(import_profile(_write(tmp_path, "whole.csv", text + ending), "auto")) == 4


def test_an_export_whose_last_kernel_name_holds_a_line_break_is_whole(tmp_path):
    """The cut check counted the quotes of the last physical line only: a last record that began
    a line earlier (a quoted line break in its name) was refused as cut off."""
    ncu = ('"ID","Process ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum"\n'
           '"","","","","","usecond"\n"0","1","k","(32, 1, 1)","(4, 1, 1)","1"\n'
           '"1","1","weird\nname","(32, 1, 1)","(4, 1, 1)","2"\n')
    got = import_profile(_write(tmp_path, "ncu.csv", ncu), "auto")
    assert got["kernel_name"].tolist() == ["k", "weird\nname"]
    text = FIXTURES["nsys_exec"].read_text().rstrip("\r\n")  # read by the mapped fast path
    head, last = text.rsplit("\n", 1)
    front, name = last.rsplit(",", 1)
    got = import_profile(_write(tmp_path, "nsys.csv", f'{head}\n{front},"{name[:6]}\n{name[6:]}"\n'), "auto")
    assert got["kernel_name"].iloc[-1] == f"{name[:6]}\n{name[6:]}"
    with pytest.raises(ProfileFormatError, match="ends inside a quoted field"):  # cut inside that name
        import_profile(_write(tmp_path, "cut.csv", f'{head}\n{front},"{name[:6]}\n{name[6:]}'), "auto")


def test_nsys_time_unit_from_header(tmp_path):
    text = FIXTURES["nsys"].read_text().replace('"Duration (ns)"', '"Duration (us)"')
    df = import_profile(_write(tmp_path, "t.csv", text), "nsys")
    np.testing.assert_allclose(df["time_ns"], np.array(TIMES_NS) * 1e3)


@pytest.mark.parametrize("unit, ns_per_unit", [("ns", 1), ("us", 10**3), ("\u00b5s", 10**3), ("ms", 10**6), ("s", 10**9)])
def test_nsys_every_duration_unit_scales_to_ns(tmp_path, unit, ns_per_unit):
    """`nsys stats` writes the unit in the Duration header (--timeunit); a 1.5 ms kernel
    read as 1500 ns (a wrong factor in the unit table) would make every time, speedup and
    error built on the profile off by 1000x without any error."""
    text = FIXTURES["nsys"].read_text().replace('"Duration (ns)"', f'"Duration ({unit})"')
    text = text.replace("1100480,117344,", "1100480,1.5,")  # the first kernel: 1.5 units
    df = import_profile(_write(tmp_path, "t.csv", text), "nsys")
    assert df["time_ns"][0] == float(Decimal("1.5") * ns_per_unit)
    np.testing.assert_allclose(df["time_ns"][1:], np.array(TIMES_NS[1:]) * ns_per_unit)


def test_ncu_percentage_without_a_unit_is_a_percentage(tmp_path):
    """Some ncu exports leave a .pct metric's unit cell empty; the metric name already says
    percent, so 42 must read as the fraction 0.42 (refusing it blocked importing such exports)."""
    head = '"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum","lts__t_sector_hit_rate.pct"'
    units = '"","","","","nsecond",""'
    row = '"0","kA","(1, 1, 1)","(32, 1, 1)","100","42"'
    df = import_profile(_write(tmp_path, "n.csv", "\n".join([head, units, row]) + "\n"))
    assert df["l2_hit_rate"].tolist() == [pytest.approx(0.42)]


def test_nsys_missing_column_lists_found(tmp_path):
    text = FIXTURES["nsys"].read_text().replace('"BlkY",', '"BlockY",')
    p = _write(tmp_path, "t.csv", text)
    with pytest.raises(ProfileFormatError, match=r"t.csv:4: BlkY: required Nsight Systems column\(s\) missing; found columns: Start \(ns\)"):
        import_profile(p, "nsys")


@pytest.mark.parametrize("column, lost", [('"Duration (ns)",', "Duration"), (',"Name"', "Name")])
def test_nsys_missing_required_column_is_named_without_format(tmp_path, column, lost):
    """Without --format, an nsys export missing Duration (or Name) was "unrecognised export",
    which named no column; its nsys-only columns (CorrId, GrdX, ...) now identify it, so the
    importer names what is missing, on the header's line."""
    text = FIXTURES["nsys"].read_text().replace(column, "")
    p = _write(tmp_path, "t.csv", text)
    with pytest.raises(ProfileFormatError, match=rf"t.csv:4: {lost}: required Nsight Systems column\(s\) missing"):
        import_profile(p)


def test_nsys_bad_duration_names_line(tmp_path):
    text = FIXTURES["nsys"].read_text().replace("1100480,117344,", "1100480,slow,")
    p = _write(tmp_path, "t.csv", text)
    with pytest.raises(ProfileFormatError, match=r"t.csv:6: Duration \(ns\): not a number: 'slow'"):
        import_profile(p, "nsys")


def test_nsys_exec_trace_bad_grid(tmp_path):
    text = FIXTURES["nsys_exec"].read_text().replace('"  80    1    1"', '"  80    x    1"')
    p = _write(tmp_path, "t.csv", text)
    with pytest.raises(ProfileFormatError, match=r"t.csv:5: GridXYZ:"):
        import_profile(p, "nsys")


def test_nsys_no_header(tmp_path):
    p = _write(tmp_path, "t.csv", "Processing [x.sqlite] with [cuda_gpu_trace.py]...\n\nSKIPPED: x.sqlite does not contain CUDA trace data.\n")
    with pytest.raises(ProfileFormatError, match="no Nsight Systems header"):
        import_profile(p, "nsys")


def test_torch_fields():
    df = import_torch(FIXTURES["torch"])
    assert df["achieved_occupancy"].tolist() == pytest.approx([0.25, 0.19, 1.0, 0.25])
    assert df["shmem"].tolist() == [16384, 2048, 0, 16384]


def test_torch_missing_grid_names_event(tmp_path):
    doc = json.loads(FIXTURES["torch"].read_text())
    del doc["traceEvents"][2]["args"]["grid"]
    p = _write(tmp_path, "t.json", json.dumps(doc))
    with pytest.raises(ProfileFormatError, match=r"t.json: traceEvents\[2\].args.grid: expected \[x, y, z\]"):
        import_torch(p)


def test_torch_no_kernels_lists_categories(tmp_path):
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}
    p = _write(tmp_path, "t.json", json.dumps(doc))
    with pytest.raises(ProfileFormatError, match=r"no kernel events.*categories found: cpu_op"):
        import_torch(p)


def test_torch_bad_json_names_line(tmp_path):
    p = _write(tmp_path, "t.json", '{"traceEvents": [\n{"cat": "kernel",,}\n]}')
    with pytest.raises(ProfileFormatError, match=r"t.json:2: not JSON"):
        import_torch(p)


def test_torch_gzip(tmp_path):
    import gzip

    p = tmp_path / "t.json.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(FIXTURES["torch"].read_text())
    assert list(import_profile(p)["kernel_name"]) == NAMES


def test_clock_fills_only_missing_cycles():
    df = import_profile(FIXTURES["torch"], clock_mhz=1410.0)
    np.testing.assert_array_equal(df["cycles"], np.rint(np.array(TIMES_NS) * 1.41))  # whole cycles
    ncu = import_profile(FIXTURES["ncu"], clock_mhz=1.0)
    assert ncu["cycles"][0] == 164281  # measured cycles are kept


@pytest.mark.parametrize("clock", ["0", "-5", "nan", "inf"])
def test_a_bad_clock_names_the_option_not_the_input(tmp_path, capsys, clock):
    out = tmp_path / "profile.csv"
    assert main(["profile", "import", str(FIXTURES["nsys"]), "--out", str(out), f"--clock-mhz={clock}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gclsampler: error: --clock-mhz {clock}: must be a finite number > 0") and not out.exists()
    assert str(FIXTURES["nsys"]) not in err


def test_an_ncu_export_behind_a_programs_own_output_says_how_to_read_it(tmp_path):
    """`ncu ... ./app > ncu.csv` (as tracer/README.md's recipe wrote it) puts the program's
    stdout before the header: past 200 lines the export was "unrecognised", with no word of
    where the header must be or of --log-file / --format."""
    text = FIXTURES["ncu"].read_text()
    noisy = _write(tmp_path, "ncu.csv", "".join(f"step {i}: loss 0.{i}\n" for i in range(250)) + text)
    with pytest.raises(ProfileFormatError, match=r"header among the first 200 lines .* ncu --log-file keeps it out; "
                                                  r"or --format ncu\|nsys"):
        import_profile(noisy)
    clean = import_profile(FIXTURES["ncu"])
    assert import_profile(noisy, "ncu").equals(clean)


def test_unrecognised_and_unknown_format(tmp_path):
    p = _write(tmp_path, "x.txt", "hello\n")
    with pytest.raises(ProfileFormatError, match="unrecognised export"):
        import_profile(p)
    with pytest.raises(ProfileFormatError, match="format: unknown format 'xls'"):
        import_profile(p, "xls")


def test_cli_import_and_info(tmp_path, capsys):
    out = tmp_path / "profile.csv"
    assert main(["profile", "import", str(FIXTURES["ncu"]), "--out", str(out)]) == 0
    first = out.read_bytes()
    assert main(["profile", "import", str(FIXTURES["ncu"]), "--out", str(out)]) == 0
    assert out.read_bytes() == first  # same input, same bytes
    back = read_profile(out)
    assert list(back["kernel_name"]) == NAMES
    assert main(["profile", "info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "invocations  4" in text and "PKA metrics  12/12" in text
    assert [p.name for p in tmp_path.iterdir()] == ["profile.csv"]  # no temp files left


@pytest.mark.parametrize("top", ["-3", "0"])
def test_cli_info_refuses_a_top_below_1(tmp_path, capsys, top):
    """--top -3 listed no kernels without a word (trace info --top 0 is refused)."""
    out = tmp_path / "p.csv"
    assert main(["profile", "import", str(FIXTURES["ncu"]), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["profile", "info", str(out), "--top", top]) == 2
    cap = capsys.readouterr()
    assert cap.err == f"gclsampler: error: --top {top}: must be at least 1\n" and cap.out == ""
    assert main(["profile", "info", str(out), "--top", "1"]) == 0
    assert "top 1 kernel names by time:" in capsys.readouterr().out


def test_cli_info_shares_of_huge_times_are_finite(tmp_path, capsys):
    """A total just inside float64 is accepted; its shares printed as inf%."""
    p = _write(tmp_path, "p.csv", 'invocation,kernel_name,grid,block,time_ns,cycles\n'
               '0,kA,"(1,1,1)","(1,1,1)",1.2e308,\n1,kB,"(1,1,1)","(1,1,1)",0.4e308,\n')
    assert main(["profile", "info", str(p)]) == 0
    text = capsys.readouterr().out
    assert "   75.0%         1 x  kA" in text and "   25.0%         1 x  kB" in text and "inf%" not in text
    assert "total time   1.6e+302 ms" in text


def test_cli_error_is_one_line_exit_2(tmp_path, capsys):
    bad = _write(tmp_path, "raw.csv", _ncu_text("furlong", ["1"]))
    assert main(["profile", "import", str(bad), "--out", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "gpu__time_duration.sum" in err
    assert not (tmp_path / "p.csv").exists()


# ---- the columnar fast path (pyarrow) reads exactly what the row reader reads ------------------
_NAMES = st.sampled_from(["ampere_sgemm_128x64_nn", "void reduce_kernel<512, 1>(float*, float const*, int)",
                          'k "quoted", name', "  padded_name  ", "NA", "n/a"])


@given(rows=st.lists(st.tuples(_NAMES, st.integers(1, 10**7), st.integers(1, 1024), st.integers(1, 64),
                               st.booleans()), min_size=1, max_size=30),
       shuffle=st.randoms(use_true_random=False))
@settings(max_examples=40, deadline=None)
def test_nsys_fast_path_equals_row_reader(tmp_path_factory, rows, shuffle):
    import pandas as pd

    from gclsampler.profile import _import_nsys_arrow, _import_nsys_text

    head = FIXTURES["nsys"].read_text().splitlines()[:4]
    corr = list(range(100, 100 + 2 * len(rows), 2))
    shuffle.shuffle(corr)  # rows out of launch order: both readers sort by correlation id
    lines = []
    for (name, dur, gx, regs, memcpy), c in zip(rows, corr):
        if memcpy:
            lines.append(f"1050200,48032,{c - 1},,,,,,,,,,16.777,349.284,Pageable,Device,NVIDIA A100 (0),1,,7,[CUDA memcpy Host-to-Device]")
        q = '"' + name.replace('"', '""') + '"'
        lines.append(f"1100480,{dur},{c},{gx},2,1,128,1,1,{regs},0.016,0.000,,,,,NVIDIA A100 (0),1,,7,{q}")
    p = tmp_path_factory.mktemp("nsys") / "t.csv"
    text = "\n".join(head + lines) + "\n\n"
    p.write_text(text)
    fast = _import_nsys_arrow(p, text)
    assert fast is not None
    pd.testing.assert_frame_equal(fast, _import_nsys_text(p, text))
    pd.testing.assert_frame_equal(_import_nsys_arrow(p), fast)  # the file mapped as bytes
    exec_head = FIXTURES["nsys_exec"].read_text().splitlines()[:3]
    ex = [f"{c},4512,,,1100480,{dur},127723,41213,41213,0,cudaLaunchKernel_v7000,\"{gx:>4}    1    1\",\"  128    1    1\","
          + '"' + name.replace('"', '""') + '"' for (name, dur, gx, _, _), c in zip(rows, corr)]
    text = "\n".join(exec_head + ex) + "\n"
    p.write_text(text)
    fast = _import_nsys_arrow(p, text)
    assert fast is not None
    pd.testing.assert_frame_equal(fast, _import_nsys_text(p, text))


@pytest.mark.parametrize("old, new, match", [
    ("1100480,117344,", "1100480,slow,", r"t.csv:6: Duration \(ns\): not a number: 'slow'"),
    ("1100480,117344,121,64,", "1100480,117344,121,0,", r"t.csv:6: GrdX: dimensions must be >= 1"),
    ("1100480,117344,121,64,8,1,128,", "1100480,117344,121,64,,1,128,", r"t.csv:6: GrdX: expected \(x,y,z\)"),
    ("1100480,117344,", "1100480,,", r"t.csv:6: time_ns: missing value"),
    ("ampere_sgemm_128x64_nn\n1100900", "ampere_sgemm_128x64_nn,extra\n1100900", r"t.csv:6: expected 21 fields"),
])
def test_nsys_bad_rows_still_name_file_line_and_field(tmp_path, old, new, match, capsys):
    text = FIXTURES["nsys"].read_text()
    assert old in text
    p = _write(tmp_path, "t.csv", text.replace(old, new, 1))
    with pytest.raises(ProfileFormatError, match=match):
        import_profile(p, "nsys")
    assert main(["profile", "import", str(p), "--out", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "t.csv:6" in err


@given(n=st.integers(1, 40), seed=st.integers(0, 2**31 - 1))
@settings(max_examples=30, deadline=None)
def test_profile_writer_bytes_equal_pandas(tmp_path_factory, n, seed):
    """write_profile builds the CSV by columns; the bytes are those pandas' to_csv writes."""
    import pandas as pd

    from gclsampler.profile import _csv_plan, write_profile

    rng = np.random.default_rng(seed)
    names = np.array(["a", "b,c", 'q"uote', "x y", "NA", "é"], dtype=object)[rng.integers(0, 6, n)]
    df = pd.DataFrame({
        "invocation": np.arange(n), "kernel_name": names,
        "grid": [f"({x},1,1)" for x in rng.integers(1, 99, n)], "block": "(256,1,1)",
        "time_ns": rng.choice([0.5, 1e-5, 123456789.125, 3.0, 1e17, 2.0 / 3.0], n),
        "cycles": np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 10**6, n).astype(float)),
        "ipc": rng.random(n), "note": rng.choice(["", "x,y", "plain"], n),
    })
    p = tmp_path_factory.mktemp("w") / "profile.csv"
    write_profile(df, p)
    assert _csv_plan(read_profile(p)) is not None  # the columnar writer handled this table
    # and the columnar reader reads what pandas' reader reads (an extra column sends it to pandas)
    import gclsampler.profile as P

    plain = df.drop(columns=["note"])
    write_profile(plain, p)
    fast = P._read_profile_arrow(p)
    assert fast is not None
    pd.testing.assert_frame_equal(fast, P.validate_profile(pd.read_csv(p, dtype={"kernel_name": str, "grid": str, "block": str},
                                                                       keep_default_na=False, na_values=[""]), p))
    write_profile(df, p)
    assert P._read_profile_arrow(p) is None
    # what write_profile hands to the writer, written by pandas
    from gclsampler.profile import NUMERIC_COLUMNS, validate_profile

    ref = validate_profile(df, "x", line_of=lambda r: r)
    for col in [c for c in NUMERIC_COLUMNS if c in ref.columns]:
        v = ref[col].to_numpy(dtype=np.float64)
        if v.size and not np.isnan(v).any() and np.all(v == np.round(v)) and np.abs(v).max() < 2**62:
            ref[col] = v.astype(np.int64)
    import io

    buf = io.StringIO()
    ref.to_csv(buf, index=False, lineterminator="\n")
    assert p.read_bytes() == buf.getvalue().encode("utf-8")


def test_xz_and_zst_exports_import_as_their_text(tmp_path, capsys):
    """An export kept compressed, as real/pythia410m_2l/raw/torch_trace.json.xz is (the workload's
    own source), imports like its text; a truncated .zst is refused, not read as a shorter export.
    Only .gz was read through before: the .xz gave "cannot read as text: 'utf-8' codec..."."""
    import lzma

    import zstandard

    xz = Path(__file__).resolve().parents[1] / "real" / "pythia410m_2l" / "raw" / "torch_trace.json.xz"
    text = lzma.decompress(xz.read_bytes())
    (tmp_path / "t.json").write_bytes(text)
    (tmp_path / "t.json.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    outs = []
    for name, src in (("plain", tmp_path / "t.json"), ("xz", xz), ("zst", tmp_path / "t.json.zst")):
        assert main(["profile", "import", str(src), "--out", str(tmp_path / f"{name}.csv")]) == 0
        outs.append((tmp_path / f"{name}.csv").read_bytes())
    half = len(text) // 2
    (tmp_path / "frames.json.zst").write_bytes(zstandard.ZstdCompressor().compress(text[:half])
                                               + zstandard.ZstdCompressor().compress(text[half:]))  # as pzstd writes
    assert main(["profile", "import", str(tmp_path / "frames.json.zst"), "--out", str(tmp_path / "frames.csv")]) == 0
    outs.append((tmp_path / "frames.csv").read_bytes())
    assert len(set(outs)) == 1 and outs[0].count(b"\n") == 1059  # header + 1058 launches
    cut = tmp_path / "cut.json.zst"
    cut.write_bytes((tmp_path / "t.json.zst").read_bytes()[:50_000])
    capsys.readouterr()
    assert main(["profile", "import", str(cut), "--out", str(tmp_path / "cut.csv")]) == 2
    assert "cut.json.zst: cannot read: the zstd data is truncated" in capsys.readouterr().err
    assert not (tmp_path / "cut.csv").exists()


def test_ncu_export_of_several_processes_is_refused_by_line(tmp_path):
    """A workload is one process's launches. One ncu report block can interleave two processes'
    rows (imported as one workload before, silently), and ncu can print a report per process (the
    second header read as "ID: not an integer: 'ID'")."""
    text = _ncu_text("nsecond", ["100", "200", "300"])
    lines = text.splitlines()
    mixed = "\n".join(lines[:3] + [lines[3].replace('"1","app"', '"2","app"')] + lines[4:]) + "\n"
    with pytest.raises(ProfileFormatError, match=r"mixed.csv:4: Process ID: 2, but line 3 is process 1"):
        import_ncu(_write(tmp_path, "mixed.csv", mixed))
    two_reports = text + "\n".join(lines[:3]) + "\n"
    with pytest.raises(ProfileFormatError, match=r"two.csv:6: ID: a second header \(the first is line 1\)"):
        import_ncu(_write(tmp_path, "two.csv", two_reports))
    assert len(import_ncu(_write(tmp_path, "one.csv", text))) == 3


def test_ncu_fallback_metric_is_named_and_the_details_page_is_recognised(tmp_path):
    text = _ncu_text("nsecond", ["100", "200"], "sm__cycles_elapsed.avg", "cycle", ["50", "60"])
    notes: list[str] = []
    df = import_ncu(_write(tmp_path, "avg.csv", text), notes=notes)
    assert list(df["cycles"]) == [50, 60]
    assert any("sm__cycles_elapsed.avg: cycles read from it: the export has no sm__cycles_elapsed.max" in n
               for n in notes)
    details = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
               '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
               '"0","1","app","host","k0","1","7","(256, 1, 1)","(4, 1, 1)","0","8.6","GPU Speed Of Light",'
               '"Duration","nsecond","100"\n')
    with pytest.raises(ProfileFormatError, match=r"--page details export .* export --page raw"):
        import_ncu(_write(tmp_path, "details.csv", details))


def test_json_nested_too_deeply_is_one_line(tmp_path, capsys):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["profile", "import", str(p), "--out", str(tmp_path / "o.csv"), "--format", "torch"]) == 2
    assert "JSON nested too deeply" in capsys.readouterr().err and not (tmp_path / "o.csv").exists()


def test_ncu_launch_without_a_time_is_named_by_the_exports_column(tmp_path):
    text = _ncu_text("nsecond", ["100", "n/a", "300"])
    with pytest.raises(ProfileFormatError, match=r"na.csv:4: gpu__time_duration.sum: no value \('n/a'\)"):
        import_ncu(_write(tmp_path, "na.csv", text))


def test_torch_kernel_category_as_older_releases_spell_it(tmp_path):
    """Older torch releases' Kineto wrote GPU kernels as cat "Kernel"; the importer took only
    "kernel" and refused such a trace as having no kernel events. Both spellings give the
    same profile; other categories stay out."""
    doc = json.loads(FIXTURES["torch"].read_text())
    n_kernels = sum(e.get("cat") == "kernel" for e in doc["traceEvents"])
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["cat"] = "Kernel"
    p = _write(tmp_path, "old.json", json.dumps(doc))
    old, new = import_torch(p), import_torch(FIXTURES["torch"])
    assert len(old) == n_kernels > 0
    assert old.equals(new)
