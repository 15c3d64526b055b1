"""gclsampler._atomic: a write either lands completely or leaves the old file alone."""

import pytest

from gclsampler._atomic import atomic_path, write_bytes_atomic, write_text_atomic


class Boom(Exception):
    pass


def test_writes_land_and_leave_no_temp_file(tmp_path):
    out = write_text_atomic(tmp_path / "sub" / "a.txt", "hello\n")
    assert out == tmp_path / "sub" / "a.txt" and out.read_text() == "hello\n"
    write_bytes_atomic(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    write_bytes_atomic(tmp_path / "b.bin", b"new")  # replaces an existing file
    assert (tmp_path / "b.bin").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.bin", "sub"]


def test_error_mid_write_keeps_old_content_and_removes_temp(tmp_path):
    target = tmp_path / "plan.json"
    target.write_text("old")
    with pytest.raises(Boom):
        with atomic_path(target) as tmp:
            with open(tmp, "w") as fh:
                fh.write("half a fi")
            raise Boom
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_error_before_first_write_creates_nothing(tmp_path):
    with pytest.raises(Boom):
        with atomic_path(tmp_path / "x.npy", suffix=".npy") as tmp:
            assert tmp.endswith(".npy")
            raise Boom
    assert list(tmp_path.iterdir()) == []
