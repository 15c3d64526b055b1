"""gclsampler._atomic: a write either lands completely or leaves the old file alone."""

import errno
import os

import pytest

from gclsampler import _guard
from gclsampler._atomic import atomic_path, write_bytes_atomic, write_text_atomic
from gclsampler._safe_out import replace_dir


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


needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")


def _fill_the_disk() -> None:
    """What a full disk does to a write: ENOSPC from flush(), with no file name."""
    with open("/dev/full", "w") as fh:
        fh.write("x")


@needs_dev_full
def test_a_full_disk_names_the_output_not_the_temp_file(tmp_path):
    out = tmp_path / "plan.json"
    out.write_text("old\n")
    with pytest.raises(OSError) as info, atomic_path(out):
        _fill_the_disk()
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(out)
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["plan.json"]
    assert _guard.os_error_text(info.value) == f"{out}: No space left on device"


def test_a_temp_file_that_cannot_be_created_names_the_output(tmp_path, monkeypatch):
    out = tmp_path / "plan.json"

    def refused(prefix, suffix, dir):  # what mkstemp raises in a directory the user cannot write
        raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, prefix + "ab12cd" + suffix))

    monkeypatch.setattr("gclsampler._atomic.tempfile.mkstemp", refused)
    with pytest.raises(PermissionError) as info:
        write_text_atomic(out, "x")
    assert info.value.filename == str(out)


def test_a_temp_file_that_cannot_be_created_names_a_relative_output(tmp_path, monkeypatch):
    """mkstemp names the file it could not create absolutely, whatever ``dir`` it was given."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ro").mkdir()
    out = "ro/plan.json"

    def refused(prefix, suffix, dir):  # CPython: os.path.abspath(os.path.join(dir, name))
        raise OSError(errno.EROFS, "Read-only file system", os.path.abspath(os.path.join(dir, prefix + "ab12cd" + suffix)))

    monkeypatch.setattr("gclsampler._atomic.tempfile.mkstemp", refused)
    with pytest.raises(OSError) as info:
        write_text_atomic(out, "x")
    assert info.value.filename == out
    assert _guard.os_error_text(info.value) == f"{out}: Read-only file system"


def test_an_input_error_inside_the_block_keeps_its_own_file_name(tmp_path):
    missing = tmp_path / "no-such-input.csv"
    with pytest.raises(FileNotFoundError) as info, atomic_path(tmp_path / "out.csv"):
        missing.read_text()
    assert info.value.filename == str(missing)
    with pytest.raises(OSError) as info, atomic_path(tmp_path / "out.csv"):
        raise OSError(errno.EIO, "Input/output error")  # no file, and not one only writes raise
    assert info.value.filename is None


@needs_dev_full
def test_a_full_disk_under_a_temp_output_dir_names_the_file_in_the_output(tmp_path):
    out = tmp_path / "export"
    with pytest.raises(OSError) as info, replace_dir(out, "trace export-accelsim") as tmp:
        (tmp / "kernel-1.traceg").write_text("")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp / "kernel-1.traceg"))
    assert info.value.filename == str(out / "kernel-1.traceg")
    with pytest.raises(OSError) as info, replace_dir(out, "trace export-accelsim"):
        _fill_the_disk()
    assert info.value.filename == str(out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_an_interrupted_write_keeps_old_content_and_removes_temp(tmp_path, stop):
    """Ctrl-C (or sys.exit) in the middle of a write is what a long save meets most: the old
    file stays and no hidden temp file is left beside it."""
    target = tmp_path / "model.pt"
    target.write_bytes(b"old")
    with pytest.raises(stop):
        with atomic_path(target) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"half")
            raise stop()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]


def test_an_error_about_a_look_alike_file_elsewhere_keeps_its_name(tmp_path):
    """Only a temp file beside the output is renamed to it: a file of a temp-like name in
    another directory (an input the block reads) keeps its own name in the error."""
    other = tmp_path / "inputs" / ".out.csv.abc123.tmp"
    with pytest.raises(PermissionError) as info, atomic_path(tmp_path / "out.csv"):
        raise PermissionError(errno.EACCES, "Permission denied", str(other))
    assert info.value.filename == str(other)


def test_a_linked_output_file_is_written_through_its_link(tmp_path):
    """A user links an output to another disk: the file the link names gets the new content and
    the link stays a link (the rename used to replace the link with a file beside it)."""
    target = tmp_path / "scratch" / "plan.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    write_text_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "scratch"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["plan.json"]
