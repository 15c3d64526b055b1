"""The cache of what is derived from a workload's traces (default ``<workload_dir>/.graph-cache``).

Layout under the cache root::

    v<CACHE_VERSION>/trace-hashes/<H(path)>.json   a trace file's content hash, memoised by stat
    v<CACHE_VERSION>/index, graphs, content        the graph stage's (``gclsampler.data``)
    v<CACHE_VERSION>/photon/<key>.npz              photon's BBV table of the whole workload

Why a module of its own, without torch: the graph stage and photon's BBVs both key what they
derive by the traces' content, through one memo of content hashes, and ``gclsampler sample
photon`` should not import torch (seconds) to find its entry.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from gclsampler._atomic import write_bytes_atomic

__all__ = ["CACHE_VERSION", "default_cache_dir", "check_cache_dir", "digest", "trace_digest", "trace_memo_dir"]

CACHE_VERSION = 1
"""Layout/serialisation version of the cache files (graph semantics: ``graph.FORMAT_VERSION``)."""


def default_cache_dir(workload_dir: str | Path) -> Path:
    return Path(workload_dir) / ".graph-cache"


def trace_memo_dir(cache: str | Path) -> Path:
    return Path(cache) / f"v{CACHE_VERSION}" / "trace-hashes"


def check_cache_dir(cache: Path) -> None:
    """Refuse a cache directory that holds anything but cache versions (``v1/``): the graphs
    would be written in among a user's files (``--cache-dir ~/thesis`` put ``v1/`` beside the
    chapters), as ``simulate --cache-dir`` and every ``--out`` already refuse."""
    from gclsampler._safe_out import OutputError, foreign_entries

    if cache.exists() and not cache.is_dir():
        raise OutputError(f"graph cache {cache}: is a file, not a directory")
    other = foreign_entries(cache, lambda p: p.is_dir() and re.fullmatch(r"v\d+", p.name) is not None)
    if other:
        raise OutputError(f"graph cache {cache}: holds {other[0]!r}, which is not the graph cache's (it holds "
                          "only v1/); give an empty or new directory, or an earlier graph cache")


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def trace_digest(path: Path, memo_dir: Path, rehash: bool = False) -> str:
    """Content hash of a trace file, memoised by (size, mtime_ns, ctime_ns, inode).

    Hashing gigabytes of traces would dominate a warm reload; the memo only skips
    re-reading a file whose size, nanosecond mtime and ctime and inode are unchanged since
    it was hashed, and the cache key is still the content hash. The ctime is there because
    a same-size edit can carry its old mtime back (``touch -r``, ``rsync -t``, an editor
    that preserves it); no user call sets ctime, and every write or utime moves it.
    """
    st = path.stat()
    ident = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    memo = memo_dir / f"{digest(str(path.resolve()).encode())}.json"
    if not rehash:
        try:
            m = json.loads(memo.read_text())
            if m["stat"] == ident and isinstance(m["digest"], str):
                return m["digest"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    d = _file_digest(path)
    try:
        write_bytes_atomic(memo, json.dumps({"stat": ident, "digest": d, "path": str(path)}).encode())
    except OSError:  # read-only cache: still correct, just slower next time
        pass
    return d
