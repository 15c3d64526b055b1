"""profile.csv contract: round trip, validation errors name path:line and field."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.errors import GclError
from gclsampler.profile import (
    OPTIONAL_COLUMNS,
    PKA_METRICS,
    REQUIRED_COLUMNS,
    ProfileFormatError,
    dim3_array,
    parse_dim3,
    read_profile,
    validate_profile,
    write_profile,
)


def _table(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame({
        "invocation": np.arange(n),
        "kernel_name": [f"k{i % 2}" for i in range(n)],
        "grid": ["(128,1,1)"] * n,
        "block": ["(256,1,1)"] * n,
        "time_ns": np.linspace(1000.5, 2000.0, n),
        "cycles": np.arange(n) * 10 + 100,
    })


def test_pka_metrics_are_the_twelve_table2_names():
    assert len(PKA_METRICS) == 12 and len(set(PKA_METRICS)) == 12
    assert all(m.startswith("pka_") and m in OPTIONAL_COLUMNS for m in PKA_METRICS)
    assert not set(REQUIRED_COLUMNS) & set(OPTIONAL_COLUMNS)


def test_round_trip_is_byte_identical(tmp_path):
    df = _table()
    df["ipc"] = [0.5, 1.25, np.nan, 2.0]
    df["l2_hit_rate"] = [0.10, 0.20, 0.30, 0.40]  # fractions (0..1), checked by validate_profile
    a = write_profile(df, tmp_path / "a.csv")
    back = read_profile(a)
    assert list(back.columns[:6]) == REQUIRED_COLUMNS
    np.testing.assert_allclose(back["time_ns"], df["time_ns"])
    assert np.isnan(back["ipc"][2])
    b = write_profile(back, tmp_path / "b.csv")
    assert a.read_bytes() == b.read_bytes()


def test_grid_block_normalised(tmp_path):
    df = _table(2)
    df["grid"] = ["(4, 2, 1)", "[8,1,1]"]
    back = read_profile(write_profile(df, tmp_path / "p.csv"))
    assert list(back["grid"]) == ["(4,2,1)", "(8,1,1)"]
    assert dim3_array(back["grid"]).tolist() == [[4, 2, 1], [8, 1, 1]]


@given(st.tuples(*[st.integers(1, 2**31 - 1)] * 3))
@settings(max_examples=50, deadline=None)
def test_dim3_round_trip(dims):
    assert parse_dim3(f"({dims[0]},{dims[1]},{dims[2]})") == dims
    assert parse_dim3(f"({dims[0]}, {dims[1]}, {dims[2]})") == dims


def _write_text(tmp_path, text: str):
    p = tmp_path / "profile.csv"
    p.write_text(text)
    return p


HEADER = "invocation,kernel_name,grid,block,time_ns,cycles\n"


@pytest.mark.parametrize(
    "body, where, field",
    [
        ("0,k,\"(1,1,1)\",\"(32,1,1)\",abc,1\n", ":2", "time_ns"),
        ("0,k,\"(1,1,1)\",\"(32,1,1)\",1,1\n1,k,\"(1,1,1)\",\"(32,1,1)\",,1\n", ":3", "time_ns"),
        ("0,k,\"(1,1,1)\",\"(32,1,1)\",1,1\n2,k,\"(1,1,1)\",\"(32,1,1)\",1,1\n", ":3", "invocation"),
        ("0,k,\"(1,1)\",\"(32,1,1)\",1,1\n", ":2", "grid"),
        ("0,k,\"(1,1,1)\",\"(0,1,1)\",1,1\n", ":2", "block"),
        ("0,,\"(1,1,1)\",\"(32,1,1)\",1,1\n", ":2", "kernel_name"),
        ("0,k,\"(1,1,1)\",\"(32,1,1)\",1,-5\n", ":2", "cycles"),
        ("0,k,\"(1,1,1)\",\"(32,1,1)\",inf,1\n", ":2", "time_ns"),
    ],
)
def test_bad_rows_name_line_and_field(tmp_path, body, where, field):
    p = _write_text(tmp_path, HEADER + body)
    with pytest.raises(ProfileFormatError) as err:
        read_profile(p)
    msg = str(err.value)
    assert f"{p}{where}: {field}:" in msg
    assert isinstance(err.value, GclError)


def test_validating_a_frame_names_the_csv_line_of_the_row():
    """A frame's row r is line r + 2 of the profile.csv it came from (the header is line 1):
    an error one line off sends the user to the wrong launch."""
    df = _table(3)
    df.loc[1, "grid"] = "(0,1,1)"
    with pytest.raises(ProfileFormatError, match=r"^profile\.csv:3: grid:"):
        validate_profile(df, "profile.csv")


@pytest.mark.parametrize("col", ["l1_hit_rate", "l2_hit_rate", "achieved_occupancy"])
def test_fractions_above_one_are_refused_but_one_is_accepted(col):
    """Hit rates and occupancy are fractions 0..1; 1.005 (a small overshoot, or a mis-scaled
    value) must be refused, not skew every estimate built on it, while exactly 1 is valid."""
    df = _table(2)
    df[col] = [0.5, 1.0]
    assert validate_profile(df, "profile.csv")[col].tolist() == [0.5, 1.0]
    df[col] = [0.5, 1.005]
    with pytest.raises(ProfileFormatError, match=rf"^profile\.csv:3: {col}: 1\.005 is out of range"):
        validate_profile(df, "profile.csv")


def test_missing_required_column_lists_found(tmp_path):
    p = _write_text(tmp_path, "invocation,kernel_name,grid,block,time_ns\n0,k,\"(1,1,1)\",\"(1,1,1)\",1\n")
    with pytest.raises(ProfileFormatError, match=r"cycles.*found columns: invocation, kernel_name, grid, block, time_ns"):
        read_profile(p)


def test_bad_optional_metric_named(tmp_path):
    p = _write_text(tmp_path, HEADER.strip() + ",ipc\n0,k,\"(1,1,1)\",\"(1,1,1)\",1,1,fast\n")
    with pytest.raises(ProfileFormatError, match=r":2: ipc: not a number"):
        read_profile(p)


def test_empty_and_missing_file(tmp_path):
    with pytest.raises(ProfileFormatError, match="empty file"):
        read_profile(_write_text(tmp_path, ""))
    with pytest.raises(ProfileFormatError, match="no such file"):
        read_profile(tmp_path / "nope.csv")


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".zst"])
def test_a_compressed_profile_is_refused_not_read_past_its_checks(tmp_path, suffix):
    """pandas decompressed it by name while the checks that read the file itself saw no header,
    so a short row became a missing cycle count and a repeated column a renamed one."""
    from gclsampler.profile import import_profile
    from gclsampler.trace.writer import write_bytes_atomic

    p = tmp_path / f"profile.csv{suffix}"
    write_bytes_atomic(p, (HEADER + '0,k,"(1,1,1)","(32,1,1)",100,200\n1,k,"(1,1,1)","(32,1,1)",100\n').encode())
    for read in (read_profile, import_profile):
        with pytest.raises(ProfileFormatError, match=r"compressed profile.csv is not read"):
            read(p)


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_a_line_holding_only_an_empty_quoted_field_is_a_short_row(tmp_path, eol):
    """pandas reads '""' as a row of missing cells, but the field-count check took it for a blank
    line: the error named the next line, as a missing invocation."""
    row = ',k,"(1,1,1)","(32,1,1)",100,200'
    p = tmp_path / "profile.csv"
    p.write_bytes(eol.join([HEADER.strip(), "0" + row, "   ", '""', "1" + row, ""]).encode())
    with pytest.raises(ProfileFormatError, match=r"profile.csv:4: malformed CSV: expected 6 fields like the header, found 1"):
        read_profile(p)


def test_ragged_row_is_located(tmp_path):
    p = _write_text(tmp_path, HEADER + "0,k,\"(1,1,1)\",\"(1,1,1)\",1,1,7,8\n")
    with pytest.raises(ProfileFormatError, match=r"profile.csv:2: malformed CSV"):
        read_profile(p)


def test_an_unclosed_quote_is_named_where_its_record_starts(tmp_path):
    """The quote runs on until the csv module's 128 KiB field limit, thousands of lines later:
    that line was named, far from anything to fix."""
    from gclsampler.profile import import_profile

    rows = "".join(f'{i},{chr(34) if i == 5 else ""}k,(1 1 1),(1 1 1),5,1\n' for i in range(30000))
    p = _write_text(tmp_path, HEADER + rows)
    for read in (read_profile, import_profile):
        with pytest.raises(ProfileFormatError, match=r"profile.csv:7: malformed CSV: field larger than field limit "
                                                     r"\(131072\) \(an unclosed quote\?\)$"):
            read(p)


def test_write_rejects_bad_table(tmp_path):
    df = _table()
    df.loc[1, "time_ns"] = np.nan
    with pytest.raises(ProfileFormatError, match="time_ns"):
        write_profile(df, tmp_path / "p.csv")
    assert not (tmp_path / "p.csv").exists()
    assert not list(tmp_path.iterdir())


@given(
    rows=st.lists(
        st.tuples(
            st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(lambda s: s.strip()),
            st.tuples(*[st.integers(1, 65535)] * 3),
            st.floats(0, 1e12, allow_nan=False),
            st.one_of(st.none(), st.floats(0, 1e12, allow_nan=False)),
        ),
        min_size=1, max_size=20,
    )
)
@settings(max_examples=40, deadline=None)
def test_write_read_round_trip_property(tmp_path_factory, rows):
    df = pd.DataFrame({
        "invocation": np.arange(len(rows)),
        "kernel_name": [r[0] for r in rows],
        "grid": [f"({r[1][0]}, {r[1][1]}, {r[1][2]})" for r in rows],
        "block": ["(32,1,1)"] * len(rows),
        "time_ns": [r[2] for r in rows],
        "cycles": [np.nan if r[3] is None else r[3] for r in rows],
    })
    p = write_profile(df, tmp_path_factory.mktemp("rt") / "profile.csv")
    back = read_profile(p)
    assert list(back["kernel_name"]) == [r[0] for r in rows]
    assert dim3_array(back["grid"]).tolist() == [list(r[1]) for r in rows]
    np.testing.assert_array_equal(back["time_ns"].to_numpy(), np.array([r[2] for r in rows]))
    np.testing.assert_array_equal(np.isnan(back["cycles"].to_numpy()), np.array([r[3] is None for r in rows]))
