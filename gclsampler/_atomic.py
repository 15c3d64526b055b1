"""Atomic file writes: a temp file in the same directory, then ``os.replace``.

Why: every file gclsampler writes (plans, profiles, cache entries, checkpoints, traces,
reports) is later read back and trusted. A process killed mid-write, or an exception
raised by the serialiser half way through, must never leave a truncated file under the
final name that a later run reads as valid. Writing to a temp file in the *same*
directory (same filesystem, so the rename is atomic) and renaming it onto the target
only after the write completed gives readers either the old file or the new one,
never a mixture. On failure the temp file is removed, so no debris is left behind.

Scope: this guards against crashes and errors of the writing process. There is no
``fsync``, so a power loss or kernel crash can still lose the newest write on some
filesystems (the old content or an empty file may be seen afterwards).

The temp file is created by ``tempfile.mkstemp`` (mode 0600, so no other user sees a
half-written file); just before the rename it gets the mode a plain ``open(path, "w")``
would have given (0666 minus the umask), so outputs are as readable as any other file
the user creates (a plan handed to a colleague, a shared cache).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "current_umask", "errors_name", "through_link", "write_bytes_atomic", "write_text_atomic"]


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux /proc).

    ``os.umask`` can only be read by setting it, which races with other threads
    creating files; /proc/self/status reports it directly.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


# what only a write raises: a file-less one of these is the output's
_WRITE_ERRNOS = {e for e in (getattr(errno, n, None) for n in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS")) if e is not None}


def _named(exc: OSError, path: Path, tmp: str | None) -> OSError | None:
    """``exc`` about ``path`` instead of the temp file (or directory) it was being built in;
    None when it is about something else (an input read inside the block) or has no errno."""
    if exc.errno is None:
        return None
    where = exc.filename
    if where is None:
        if exc.errno not in _WRITE_ERRNOS:
            return None  # e.g. EIO while reading an input inside the block: not the output's
        name = str(path)  # write() and close() say "No space left on device" and no file
    else:
        where = os.fsdecode(where) if isinstance(where, (str, bytes)) else str(where)
        if tmp is not None and (where == tmp or where.startswith(tmp + os.sep)):
            name = str(path) + where[len(tmp):]
        elif (os.path.abspath(os.path.dirname(where)) == os.path.abspath(path.parent)
              and os.path.basename(where).startswith(f".{path.name}.")):
            # mkstemp's own name, before ``tmp`` was known. Compared as absolute paths: mkstemp
            # names its file absolutely, so `--out rom/plan.json` in a read-only directory printed
            # the hidden /abs/rom/.plan.json.x1y2.tmp instead of the name the user gave
            name = str(path)
        else:
            return None
    return OSError(exc.errno, exc.strerror, name)


@contextlib.contextmanager
def errors_name(path: str | os.PathLike, tmp: str | os.PathLike | None = None) -> Iterator[None]:
    """Re-raise an OSError about the temp file or directory an output is built in (or about no
    file at all) as one about the output ``path`` itself.

    Why: a full disk raised "No space left on device" from ``write()``, which names no file, and a
    read-only directory named ``.plan.json.ono56h_l.tmp``: neither is what the user gave as
    ``--out``. A file inside a temp directory becomes the same file inside ``path``.
    """
    try:
        yield
    except OSError as exc:
        named = _named(exc, Path(path), None if tmp is None else os.fspath(tmp))
        if named is None:
            raise
        raise named from exc


def through_link(path: Path) -> Path:
    """The path a symbolic link ``path`` names, else ``path``: where an output is written. Why:
    users link an output to a bigger disk (``data/phi2 -> /scratch/phi2``, ``plan.json ->
    /scratch/plan.json``); a rename beside the link replaced the link with a file or directory on
    the small disk and left what it named as it was."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, suffix: str = ".tmp", make_parents: bool = True) -> Iterator[str]:
    """Yield a temp path next to ``path``; rename it onto ``path`` if the block succeeds.

    The temp file already exists (empty) when the block starts; write it by name
    (``np.save``, ``torch.save``, ``fig.savefig``, ``open(tmp, "w")``). If the block
    raises (any ``BaseException``, KeyboardInterrupt included) the temp file is removed
    and ``path`` is left exactly as it was. ``suffix`` is the temp file's ending: writers
    that pick a format from it (matplotlib) or append one (``np.save`` adds ``.npy``)
    need the real extension. ``make_parents`` creates missing parent directories.

    A symbolic link at ``path`` is written through (``through_link``): the temp file goes
    beside the file it names and replaces that, as output directories are swapped in.
    """
    path = through_link(Path(path))
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    with errors_name(path):
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        with errors_name(path, tmp):
            yield tmp
            os.chmod(tmp, 0o666 & ~current_umask())
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # never hide the original error behind a cleanup one
            os.unlink(tmp)
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring for why)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str, *, newline: str | None = None,
                      encoding: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically; ``newline``/``encoding`` as for ``open``."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline=newline, encoding=encoding) as fh:
            fh.write(text)
    return Path(path)
