"""Advisory file locks (``flock``) for what several processes use at once.

Why one module: a run cache (``gclsampler simulate``, one command at a time) and a synthesized
workload (``train.py -m`` jobs, ``evaluate.py`` beside them: synthesized once, read by many,
replaced only when nobody reads it) are both shared by processes that know nothing of each
other, and both must get the same answers from a filesystem that cannot lock or a directory
that cannot be written.

A lock file is a hidden regular file, kept after use: one removed on release lets a process
that waited on the removed file and a newcomer that made a new one both hold "the" lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path
from typing import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: nothing is locked
    fcntl = None  # type: ignore[assignment]

__all__ = ["NO_LOCKS", "READ_ONLY", "LockFile", "open_lock", "holder", "sign", "same_file"]

# what flock answers where the filesystem cannot lock (NFS without lockd, Lustre without its
# flock mount option, some FUSE filesystems; EBADF: NFS with a read-only descriptor)
NO_LOCKS = frozenset(e for e in (getattr(errno, n, None) for n in ("ENOLCK", "EOPNOTSUPP", "ENOTSUP", "ENOSYS",
                                                                   "EINVAL", "EBADF")) if e is not None)
READ_ONLY = frozenset((errno.EACCES, errno.EPERM, errno.EROFS))


def open_lock(path: Path) -> tuple[int | None, str]:
    """A descriptor of the lock file (made if missing), or (None, why) in a read-only directory without one.

    Why a read-only descriptor next: flock takes one, so a lock file another user made (not
    writable by us) still locks against that user's processes.
    """
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666), ""  # 0666 - umask, as the other files there
    except OSError as exc:
        if exc.errno not in READ_ONLY:
            raise
        why = exc.strerror or type(exc).__name__
    try:
        return os.open(path, os.O_RDONLY), ""
    except OSError as exc:
        if exc.errno not in READ_ONLY | {errno.ENOENT}:
            raise
        return None, why


def holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it ("pid N on HOST"); '' when unknown."""
    try:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
    except OSError:
        return ""
    return text.splitlines()[0] if text else ""


def sign(fd: int) -> None:
    """Write who holds the lock into it, for the line of a process that waits (not possible
    through a read-only descriptor, and not needed: the lock holds without it)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)


def same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file locked through ``fd``. Why: a lock file removed
    while a process waited on it would leave that process holding a lock no later one sees."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


_warned: set[Path] = set()
"""Directories whose filesystem this process found unable to lock, and lock files it could not
make, and said so: one line each, not one per attempt."""


class LockFile:
    """One lock file held through one descriptor, shared or exclusive, changed in place.

    Why one descriptor for both: flock locks belong to an open file, so a process that took
    a second descriptor to change its shared lock into an exclusive one would wait on itself.
    An exclusive holder writes its name into the file (``sign``), and a waiting line names it:
    without it a user could not tell which job a wait was for. Shared holders are many and write
    nothing, so a wait for readers names no one.
    ``say(line)`` is told once before each wait for another process, and once when the
    filesystem cannot lock or the lock file cannot be made (then nothing is locked). Why a
    warning and not an error there: the locks are advisory, and what they guard worked before
    them, so a workload that can be read must not become unusable for want of its lock file; a
    read-only directory alone says nothing, since nothing can be written there to keep out.
    """

    def __init__(self, path: str | os.PathLike, say: Callable[[str], None]) -> None:
        self.path = Path(path)
        self.say = say
        self.fd: int | None = None
        self.locking = fcntl is not None  # off for good once the lock file or the filesystem cannot lock
        self.signed = False  # the file names this process: it holds the lock exclusively

    def __enter__(self) -> "LockFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release the lock (closing its descriptor)."""
        if self.fd is not None:
            self._unsign()
            fd, self.fd = self.fd, None
            os.close(fd)

    def unlock(self) -> None:
        if self.fd is not None:
            self._unsign()
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _unsign(self) -> None:
        """Clear the file of a name that no longer holds it alone, before letting go: a process
        that waits next must not name this one."""
        if self.signed:
            self.signed = False
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)

    def lock(self, *, shared: bool, waiting: str | None = None) -> None:
        """Take the lock, or change the one held: shared or exclusive. ``waiting``: the line
        said before waiting for another process (None: one is never expected to hold it)."""
        while self.locking:
            if self.fd is None:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self.fd, _ = open_lock(self.path)
                except OSError as exc:
                    # not read-only (a name over 255 bytes, a full disk): the work itself may still be
                    # possible, and was before the locks, so it goes on; but without a word, jobs that
                    # counted on the lock replaced the workload under each other
                    self.fd = None
                    if exc.errno not in READ_ONLY and self.path not in _warned:
                        _warned.add(self.path)
                        self.say(f"warning: {self.path}: cannot make its lock file "
                                 f"({exc.strerror or type(exc).__name__}); going on unlocked")
                if self.fd is None:  # a read-only directory: nothing is written there, so nothing to keep out
                    self.locking = False
                    return
            mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
            if shared:
                self._unsign()  # before the change: while shared, others may hold it too
            try:
                try:
                    fcntl.flock(self.fd, mode | fcntl.LOCK_NB)
                except BlockingIOError:
                    if waiting:
                        who = holder(self.fd)  # '' while shared holders have it: they are many, and sign nothing
                        self.say(f"{waiting} (held by {who})" if who else waiting)
                    fcntl.flock(self.fd, mode)  # Ctrl-C, SIGTERM: an interrupt out of here; close() releases
            except OSError as exc:
                if exc.errno not in NO_LOCKS:
                    raise OSError(exc.errno, exc.strerror, str(self.path)) from None
                self.close()
                self.locking = False
                if self.path.parent not in _warned:  # one line per directory, not per lock file there
                    _warned.add(self.path.parent)
                    self.say(f"warning: {self.path}: cannot lock it ({exc.strerror}: a filesystem without file "
                             "locks, e.g. NFS without lockd?); going on unlocked")
                return
            if same_file(self.fd, self.path):
                if not shared:
                    sign(self.fd)
                    self.signed = True
                elif os.fstat(self.fd).st_size:  # while it is held shared nobody holds it alone: a name
                    with contextlib.suppress(OSError):  # there is a killed holder's, which a waiter must not name
                        os.ftruncate(self.fd, 0)
                return
            self.close()  # the file was removed while we waited on it: lock the one there now
