"""Graph dataset of a workload: built in parallel, cached on disk, deduplicated.

Cache layout (default ``<workload_dir>/.graph-cache``; the root, its version and the memo of
trace content hashes are ``gclsampler.workload_cache``'s, shared with photon's BBV tables)::

    v<CACHE_VERSION>/index/<key>.json   key = H(trace file bytes, GraphConfig, format and parser versions)
                                         -> {"graph": <graph hash>, ...}
    v<CACHE_VERSION>/graphs/<hash>.hrg   one file per distinct graph, named by the hash of its bytes

Why two levels: the index answers "has this exact trace been built with this config?"
without parsing it, and naming graph files by their own content hash stores identical
graphs once (a kernel launched many times with the same inputs) and lets every read verify
the bytes it got. Every file is written to a temporary name in the same directory and
renamed, and the index entry is written only after its graph file, so a crash can leave an
orphan graph but never an index entry that points at a missing or partial graph. A graph
file whose bytes do not hash to its name is treated as absent and rebuilt.

Workers parse and build one invocation at a time and return only the graph hash, so memory
is bounded by a few graphs per worker whatever the workload's length.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections import OrderedDict
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch_geometric.data import Data

from gclsampler._atomic import write_bytes_atomic
from gclsampler._interrupt import process_pool
from gclsampler.errors import GclError, located
from gclsampler.graph import FORMAT_VERSION, GraphBuildError, GraphConfig, build_graph
from gclsampler.trace import reader as _trace_reader
from gclsampler.workload_cache import CACHE_VERSION, check_cache_dir, default_cache_dir, trace_memo_dir
from gclsampler.workload_cache import digest as _digest
from gclsampler.workload_cache import trace_digest as _trace_digest

__all__ = ["GraphDataset", "make_loader", "GraphCacheError", "CACHE_VERSION", "save_graph_bytes",
           "load_graph_bytes"]


_MAGIC = b"GCLHRG1\n"
_FIELDS = ("node_type", "token", "pc", "stats", "edge_index", "edge_type", "warp", "n_warps", "kfeat")


class GraphCacheError(GclError):
    """A cache file that cannot be trusted (wrong magic, size or hash); callers rebuild."""


# --------------------------------------------------------------------------------------
# Serialisation: magic, JSON header (field, dtype, shape), then raw little-endian arrays.
# Deterministic bytes for equal graphs (no timestamps, unlike zip/npz), so the file hash is
# a content hash of the graph.
# --------------------------------------------------------------------------------------


def save_graph_bytes(g: Data) -> bytes:
    arrays = [(k, g[k].detach().cpu().contiguous().numpy()) for k in _FIELDS]
    header = {"num_nodes": int(g.num_nodes),
              "fields": [[k, a.dtype.str, list(a.shape)] for k, a in arrays]}
    hb = json.dumps(header, sort_keys=True).encode()
    out = io.BytesIO()
    out.write(_MAGIC)
    out.write(len(hb).to_bytes(8, "little"))
    out.write(hb)
    for _, a in arrays:
        out.write(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return out.getvalue()


def load_graph_bytes(buf: bytes | bytearray | memoryview, where: str = "<graph>") -> Data:
    mv = memoryview(buf)
    if bytes(mv[:len(_MAGIC)]) != _MAGIC or len(mv) < len(_MAGIC) + 8:
        raise GraphCacheError(located(where, None, "magic", "not a gclsampler graph file"))
    hl = int.from_bytes(mv[len(_MAGIC):len(_MAGIC) + 8], "little")
    off = len(_MAGIC) + 8
    try:
        header = json.loads(bytes(mv[off:off + hl]))
    except ValueError as exc:
        raise GraphCacheError(located(where, None, "header", f"unreadable ({exc})")) from None
    off += hl
    fields = {}
    for name, dt, shape in header["fields"]:
        dtype = np.dtype(dt)
        n = int(np.prod(shape)) * dtype.itemsize
        if off + n > len(mv):
            raise GraphCacheError(located(where, None, name, "file is truncated"))
        arr = np.frombuffer(mv[off:off + n], dtype=dtype).reshape(shape)
        fields[name] = torch.from_numpy(arr.astype(dtype.newbyteorder("="), copy=True))
        off += n
    if off != len(mv):
        raise GraphCacheError(located(where, None, None, "trailing bytes after the last field"))
    return Data(num_nodes=int(header["num_nodes"]), **fields)


def _write_atomic(path: Path, data: bytes) -> None:
    write_bytes_atomic(path, data)


def _config_fingerprint(cfg: GraphConfig) -> str:
    """What a graph is built by besides its trace's bytes. The parser's version is in it because
    a graph is built from the parsed trace: a parser change reused the old parser's graphs
    unless someone remembered to bump ``FORMAT_VERSION`` as well."""
    return json.dumps({"graph": cfg.to_dict(), "format": FORMAT_VERSION, "cache": CACHE_VERSION,
                       "parser": _trace_reader.PARSER_VERSION}, sort_keys=True)


@dataclass
class _Paths:
    root: Path

    @property
    def index(self) -> Path:
        return self.root / f"v{CACHE_VERSION}" / "index"

    @property
    def graphs(self) -> Path:
        return self.root / f"v{CACHE_VERSION}" / "graphs"

    @property
    def trace_memo(self) -> Path:
        return trace_memo_dir(self.root)

    def graph(self, h: str) -> Path:
        return self.graphs / f"{h}.hrg"

    def entry(self, key: str) -> Path:
        return self.index / f"{key}.json"

    def content_entry(self, key: str) -> Path:
        """Where a trace text's graph is named (``_content_key``); the index holds files' entries."""
        return self.root / f"v{CACHE_VERSION}" / "content" / f"{key}.json"


def _read_entry(paths: _Paths, key: str, at: Path | None = None) -> str | None:
    """Graph hash of a cache entry (the index's for ``key``, or the one ``at``) if the entry and
    its graph file look intact, else None."""
    try:
        entry = json.loads((paths.entry(key) if at is None else at).read_text())
        h = entry["graph"]
        size = int(entry["bytes"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        if paths.graph(h).stat().st_size != size:
            return None
    except OSError:
        return None
    return h


def _content_key(text: bytes, fingerprint: str) -> str:
    """Cache key of a trace by what the graph is built from: its decompressed text without the
    ``-kernel id`` line, and the graph config.

    Why: the file digest keys a trace by its compressed bytes, and every launch's header names
    its own kernel id, so two launches that ran the same code on the same data never share a
    key, and each was parsed and built again (27 ms a trace, most of it parsing): phi2's 1024
    launches hold 422 distinct texts once the id is left out, exactly its 422 graphs. The graph
    does not read the id (only error messages name it)."""
    from gclsampler.trace.workload import launch_text_digest

    return _digest(b"content:" + launch_text_digest(text).encode() + fingerprint.encode())


def _build_one(trace_path: str, cfg_dict: dict, cache_root: str, key: str) -> tuple[str, int, float, bool]:
    """Worker: parse, build, store. Returns (graph hash, instructions parsed, seconds, whether it
    parsed) only.

    A launch whose text (kernel id aside) was built before is not parsed again: its content
    entry names the graph, and only the file's own entry is written."""
    from gclsampler.trace import read_kernel
    from gclsampler.trace.reader import open_bytes

    t0 = time.perf_counter()
    paths = _Paths(Path(cache_root))
    cfg = GraphConfig(**cfg_dict)
    text = open_bytes(trace_path)
    content = _content_key(text, _config_fingerprint(cfg))
    h = _read_entry(paths, content, paths.content_entry(content))
    parsed = h is None
    n_insts = 0
    if parsed:
        trace = read_kernel(trace_path, data=text)
        del text
        g = build_graph(trace, cfg)
        n_insts = trace.n_insts
        del trace
        data = save_graph_bytes(g)
        h = _digest(data)
        gp = paths.graph(h)
        if not (gp.exists() and gp.stat().st_size == len(data)):
            _write_atomic(gp, data)
        _write_entry(paths.content_entry(content), h, len(data), trace_path)
    _write_entry(paths.entry(key), h, paths.graph(h).stat().st_size, trace_path)
    return h, n_insts, time.perf_counter() - t0, parsed


def _write_entry(at: Path, h: str, size: int, trace_path: str) -> None:
    entry = {"graph": h, "bytes": size, "trace": os.path.basename(trace_path),
             "format": FORMAT_VERSION, "cache": CACHE_VERSION}
    _write_atomic(at, json.dumps(entry, sort_keys=True).encode())


def _build_task(trace_path: str, cfg_dict: dict, cache_root: str, key: str) -> tuple[str, int, float, bool]:
    """Pool entry point: GclError subclasses with custom constructors (TraceFormatError) do
    not unpickle in the parent, so they cross the process boundary as GraphBuildError with
    the same located message."""
    try:
        return _build_one(trace_path, cfg_dict, cache_root, key)
    except GclError as exc:
        raise GraphBuildError(str(exc)) from None


def _worker_init() -> None:
    torch.set_num_threads(1)


def _progress(total: int, desc: str):
    from tqdm import tqdm

    disable = bool(os.environ.get("CI")) or not sys.stderr.isatty()
    return tqdm(total=total, desc=desc, disable=disable, file=sys.stderr, unit="inv")


class GraphDataset(torch.utils.data.Dataset):
    """The HRGs of every invocation of a workload, built once and reloaded from the cache.

    ``dataset[invocation]`` returns the graph of that invocation (0-based launch order id)
    with an extra ``invocation`` field (long, shape [1]) so batches know whom they hold.
    ``inv_to_graph[i]`` is the unique-graph index of the i-th listed invocation; invocations
    with equal graphs share one file and one index. ``len(dataset)`` is the number of
    invocations. Graphs are read lazily and the last ``memory_graphs`` are kept in memory.
    ``rehash=True`` re-reads every trace file instead of trusting the (size, mtime, ctime, inode)
    memo of its content hash.
    """

    def __init__(self, workload_dir: str | os.PathLike, graph_cfg: GraphConfig | None = None,
                 cache_dir: str | os.PathLike | None = None, workers: int = 2, *,
                 memory_graphs: int = 64, progress: bool = True, rehash: bool = False) -> None:
        from gclsampler.trace import list_invocations

        self.workload_dir = Path(workload_dir)
        self.cfg = GraphConfig.coerce(graph_cfg)
        self.cfg.validate()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(self.workload_dir)
        check_cache_dir(self.cache_dir)
        self._paths = _Paths(self.cache_dir)
        self.memory_graphs = int(memory_graphs)
        self._lru: OrderedDict[int, Data] = OrderedDict()
        t0 = time.perf_counter()
        infos = list_invocations(self.workload_dir)
        self.invocations = np.array([i.invocation for i in infos], dtype=np.int64)
        self._pos = {int(v): k for k, v in enumerate(self.invocations)}
        self._trace_paths = [str(self.workload_dir / i.path) for i in infos]
        self._keys = [self._key(p, rehash) for p in self._trace_paths]
        hashes: list[str | None] = [_read_entry(self._paths, k) for k in self._keys]
        todo = [i for i, h in enumerate(hashes) if h is None]
        n_insts = n_parsed = 0
        if todo:
            cfg_dict = self.cfg.to_dict()
            bar = _progress(len(todo), f"graphs {self.workload_dir.name}") if progress else None
            if workers <= 1 or len(todo) == 1:
                for i in todo:
                    h, ni, _, parsed = _build_one(self._trace_paths[i], cfg_dict, str(self.cache_dir), self._keys[i])
                    hashes[i], n_insts, n_parsed = h, n_insts + ni, n_parsed + parsed
                    if bar is not None:
                        bar.update(1)
            else:
                start = "fork" if sys.platform.startswith("linux") else "spawn"
                with process_pool(min(workers, len(todo)), start, initializer=_worker_init) as pool:
                    futs = {pool.submit(_build_task, self._trace_paths[i], cfg_dict, str(self.cache_dir),
                                        self._keys[i]): i for i in todo}
                    for fut in as_completed(futs):
                        h, ni, _, parsed = fut.result()
                        hashes[futs[fut]], n_insts, n_parsed = h, n_insts + ni, n_parsed + parsed
                        if bar is not None:
                            bar.update(1)
            if bar is not None:
                bar.close()
        uniq: dict[str, int] = {}
        for h in hashes:
            uniq.setdefault(h, len(uniq))  # order of first invocation: deterministic
        self.graph_hashes: list[str] = list(uniq)
        self.inv_to_graph = np.array([uniq[h] for h in hashes], dtype=np.int64)
        self.stats = {
            "workload": str(self.workload_dir), "invocations": len(infos), "unique_graphs": len(uniq),
            "built": len(todo), "parsed": n_parsed, "cached": len(infos) - len(todo), "built_instructions": n_insts,
            "seconds": round(time.perf_counter() - t0, 3), "cache_dir": str(self.cache_dir),
        }

    # ---------------------------------------------------------------------------------
    @property
    def n_unique(self) -> int:
        return len(self.graph_hashes)

    def __len__(self) -> int:
        return len(self.invocations)

    def position(self, invocation: int) -> int:
        try:
            return self._pos[int(invocation)]
        except KeyError:
            raise IndexError(f"invocation {invocation} is not in {self.workload_dir}") from None

    def graph(self, gid: int) -> Data:
        """Unique graph ``gid`` (verified against its content hash; rebuilt if damaged).

        The cached object itself, not a copy, so the pipeline's list of every unique graph
        costs no second copy of the ones in memory: a caller must not edit it (augmentations
        work on a ``Batch``, a copy). ``dataset[invocation]`` returns a copy of its own.
        """
        g = self._lru.get(gid)
        if g is not None:
            self._lru.move_to_end(gid)
            return g
        h = self.graph_hashes[gid]
        path = self._paths.graph(h)
        try:
            data = path.read_bytes()
            if _digest(data) != h:
                raise GraphCacheError(located(path, None, None, "content does not match its hash"))
            g = load_graph_bytes(data, str(path))
        except (OSError, GraphCacheError):
            g = self._rebuild(gid)
            if g is None:
                raise GraphCacheError(located(path, None, None, "damaged, and the trace of every invocation it was built "
                                              "from changed since the dataset was opened: open it again")) from None
        self._lru[gid] = g
        if len(self._lru) > self.memory_graphs:
            self._lru.popitem(last=False)
        return g

    def _key(self, trace_path: str, rehash: bool) -> str:
        """The cache index key of a trace under this dataset's graph config (its content's hash,
        read again with ``rehash`` rather than taken from the memo)."""
        return _digest((_trace_digest(Path(trace_path), self._paths.trace_memo, rehash)
                        + _config_fingerprint(self.cfg)).encode())

    def _rebuild(self, gid: int) -> Data | None:
        """A damaged graph file: rebuild it from the invocations that map to it, first first.

        One whose trace changed since the dataset was opened gets a graph of its own (a new
        index) and the next is tried, so ``gid`` stays the graph of the invocations whose traces
        did not change. Why: it used to return the changed trace's graph as ``gid``'s, and its
        unchanged twins were then served that graph from memory. None when none is left.

        The rebuilt graph is filed under the key of the trace as it is now (hashed again): filed
        under the key taken at open, a changed trace's graph was served for the original text by
        the next open once the edit was undone."""
        for pos in np.flatnonzero(self.inv_to_graph == gid).tolist():
            for p in (self._paths.graph(self.graph_hashes[gid]), self._paths.entry(self._keys[pos])):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
            path = self._trace_paths[pos]
            self._keys[pos] = self._key(path, rehash=True)
            h, _, _, _ = _build_one(path, self.cfg.to_dict(), str(self.cache_dir), self._keys[pos])
            if h == self.graph_hashes[gid]:
                return load_graph_bytes(self._paths.graph(h).read_bytes(), str(self._paths.graph(h)))
            self.graph_hashes.append(h)  # this invocation's trace changed: its new graph is read on demand
            self.inv_to_graph[pos] = len(self.graph_hashes) - 1
        return None

    def __getitem__(self, invocation: int) -> Data:
        pos = self.position(invocation)
        while True:  # again when its own trace changed while its graph was rebuilt (a new index)
            gid = int(self.inv_to_graph[pos])
            try:
                g = self.graph(gid)
            except GraphCacheError:
                if int(self.inv_to_graph[pos]) == gid:
                    raise
                continue
            if int(self.inv_to_graph[pos]) == gid:
                break
        g = g.clone()
        g.invocation = torch.tensor([int(self.invocations[pos])], dtype=torch.long)
        return g

    def __repr__(self) -> str:
        return (f"GraphDataset({self.workload_dir.name!r}, invocations={len(self)}, "
                f"unique_graphs={self.n_unique}, cache={str(self.cache_dir)!r})")


class _Selection(torch.utils.data.Dataset):
    def __init__(self, dataset: GraphDataset, invocations: Sequence[int]) -> None:
        self.dataset = dataset
        self.invocations = [int(i) for i in invocations]

    def __len__(self) -> int:
        return len(self.invocations)

    def __getitem__(self, k: int) -> Data:
        return self.dataset[self.invocations[k]]


def make_loader(dataset: GraphDataset, invocations: Sequence[int] | None = None, batch_size: int = 32,
                shuffle: bool = False, seed: int = 0):
    """PyG loader over some invocations; batches carry ``invocation`` and per-graph ``n_warps``.

    The shuffle order depends only on ``seed``. In a batch, global warp ids are
    ``warp + exclusive_cumsum(n_warps)[batch]``.
    """
    from torch_geometric.loader import DataLoader

    if invocations is None:
        invocations = dataset.invocations.tolist()
    gen = torch.Generator()
    gen.manual_seed(int(seed))
    return DataLoader(_Selection(dataset, invocations), batch_size=int(batch_size), shuffle=bool(shuffle),
                      generator=gen, num_workers=0)
