"""Graph dataset: cache hits, corruption handling, dedup, parallel build, loaders."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from gclsampler.data import GraphCacheError, GraphDataset, load_graph_bytes, make_loader, save_graph_bytes
from gclsampler.graph import GraphConfig, build_graph
from gclsampler.trace import read_kernel, write_kernel, write_kernelslist

from _trace_fixtures import random_trace

FIELDS = ("node_type", "token", "pc", "stats", "edge_index", "edge_type", "warp", "n_warps")
CFG = GraphConfig(max_warps=2, max_insts_per_warp=16)


def _equal(a, b) -> bool:
    return a.num_nodes == b.num_nodes and all(torch.equal(a[k], b[k]) for k in FIELDS)


def _workload(tmp: Path, seeds: list[int]) -> Path:
    """SYNTHETIC workload dir: invocation i has the random trace of seeds[i] (repeats dedup)."""
    names = []
    for i, s in enumerate(seeds):
        t = random_trace(np.random.default_rng(s), n_warps=3, max_len=12)

        t.header = replace(t.header, kernel_id=i + 1)
        name = f"kernel-{i + 1}.traceg"
        write_kernel(t, tmp / name)
        names.append(name)
    write_kernelslist(tmp, names)
    (tmp / "workload.json").write_text(json.dumps({"workload": "t", "synthetic": True}))
    return tmp


@pytest.fixture
def wl(tmp_path):
    return _workload(tmp_path / "wl", [1, 2, 1, 3, 2])


def test_build_dedup_and_equal_to_direct_build(wl):
    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    assert len(ds) == 5 and ds.n_unique == 3
    assert ds.inv_to_graph.tolist() == [0, 1, 0, 2, 1]
    assert ds.stats["built"] == 5 and ds.stats["unique_graphs"] == 3 and ds.stats["cached"] == 0
    assert len(list((wl / ".graph-cache" / "v1" / "graphs").glob("*.hrg"))) == 3
    for i in range(5):
        direct = build_graph(read_kernel(wl / f"kernel-{i + 1}.traceg"), CFG)
        assert _equal(ds[i], direct)
        assert ds[i].invocation.tolist() == [i]


def test_reload_is_a_cache_hit_with_equal_tensors(wl):
    a = GraphDataset(wl, CFG, workers=1, progress=False)
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["built"] == 0 and b.stats["cached"] == 5
    assert all(_equal(a[i], b[i]) for i in range(5))
    # a different config is a different cache entry
    other = GraphConfig(max_warps=1, max_insts_per_warp=16)
    c = GraphDataset(wl, other, workers=1, progress=False)
    assert c.stats["built"] == 5
    # ... and its graphs are that config's, not the cached texts' graphs of the first config
    assert c.stats["parsed"] == 3
    for i in range(5):
        assert _equal(c[i], build_graph(read_kernel(wl / f"kernel-{i + 1}.traceg"), other))


def test_a_new_trace_parser_version_is_a_cache_miss(wl, monkeypatch):
    """Graphs are keyed by the parser's version too (``trace.reader.PARSER_VERSION``): a parser
    that reads the same bytes otherwise builds every graph again, the texts' entries included,
    rather than reusing what the parser before it built (unless FORMAT_VERSION was bumped)."""
    import gclsampler.trace.reader as reader

    GraphDataset(wl, CFG, workers=1, progress=False)
    assert GraphDataset(wl, CFG, workers=1, progress=False).stats["built"] == 0
    monkeypatch.setattr(reader, "PARSER_VERSION", reader.PARSER_VERSION + 1)
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["built"] == 5 and b.stats["parsed"] == 3
    assert all(_equal(b[i], build_graph(read_kernel(wl / f"kernel-{i + 1}.traceg"), CFG)) for i in range(5))
    assert GraphDataset(wl, CFG, workers=1, progress=False).stats["built"] == 0


def test_truncated_graph_file_is_rebuilt_not_trusted(wl):
    a = GraphDataset(wl, CFG, workers=1, progress=False)
    ref = [a[i] for i in range(5)]
    gfile = wl / ".graph-cache" / "v1" / "graphs" / f"{a.graph_hashes[0]}.hrg"
    gfile.write_bytes(gfile.read_bytes()[:-7])
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["built"] == 2  # invocations 0 and 2 share that graph
    assert all(_equal(ref[i], b[i]) for i in range(5))


def test_flipped_byte_is_detected_on_read_and_rebuilt(wl):
    a = GraphDataset(wl, CFG, workers=1, progress=False)
    ref = a[3]
    gfile = wl / ".graph-cache" / "v1" / "graphs" / f"{a.graph_hashes[2]}.hrg"
    raw = bytearray(gfile.read_bytes())
    raw[-1] ^= 0xFF
    gfile.write_bytes(bytes(raw))
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert _equal(b[3], ref)
    assert gfile.read_bytes() == save_graph_bytes(ref)  # repaired on disk


def test_partial_index_entry_and_leftover_temp_files_are_ignored(wl):
    a = GraphDataset(wl, CFG, workers=1, progress=False)
    idx = wl / ".graph-cache" / "v1" / "index"
    entry = sorted(idx.glob("*.json"))[0]
    entry.write_text('{"graph": "')  # crash mid-write (cannot happen with atomic writes, but)
    (idx / ".tmp-crashed").write_text("garbage")
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["built"] == 1
    assert all(_equal(a[i], b[i]) for i in range(5))


def test_parallel_build_matches_serial(tmp_path):
    w1 = _workload(tmp_path / "a", [4, 5, 6, 4])
    s = GraphDataset(w1, CFG, cache_dir=tmp_path / "c1", workers=1, progress=False)
    p = GraphDataset(w1, CFG, cache_dir=tmp_path / "c2", workers=2, progress=False)
    assert p.inv_to_graph.tolist() == s.inv_to_graph.tolist() == [0, 1, 2, 0]
    assert p.graph_hashes == s.graph_hashes
    assert not (w1 / ".graph-cache").exists()


def test_serialisation_round_trip_and_rejects_garbage():
    g = build_graph(random_trace(np.random.default_rng(9)), CFG)
    data = save_graph_bytes(g)
    assert _equal(load_graph_bytes(data), g)
    from gclsampler.data import GraphCacheError
    with pytest.raises(GraphCacheError):
        load_graph_bytes(data[:-3])
    with pytest.raises(GraphCacheError):
        load_graph_bytes(b"not a graph")
    with pytest.raises(GraphCacheError, match="trailing bytes"):  # two graphs' bytes run together
        load_graph_bytes(data + data[:5])


def test_loader_batches_are_seeded_and_carry_warp_offsets(wl):
    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    order = lambda seed: [b.invocation.tolist() for b in make_loader(ds, [0, 1, 2, 3, 4], 2, True, seed)]  # noqa: E731
    assert order(7) == order(7)
    assert sorted(sum(order(7), [])) == [0, 1, 2, 3, 4]
    assert any(order(s) != order(7) for s in range(8, 14))
    batch = next(iter(make_loader(ds, [3, 1], batch_size=2, shuffle=False, seed=0)))
    assert batch.invocation.tolist() == [3, 1] and batch.n_warps.shape == (2,)
    offs = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(batch.n_warps, 0)[:-1]])
    gw = batch.warp + offs[batch.batch]
    # global warp ids: graph 0 uses [0, n0), graph 1 uses [n0, n0 + n1)
    n0 = int(batch.n_warps[0])
    assert int(gw[batch.batch == 0].max()) < n0 <= int(gw[batch.batch == 1].min())
    # edges stay within one graph after batching
    assert torch.equal(batch.batch[batch.edge_index[0]], batch.batch[batch.edge_index[1]])


def test_changed_trace_is_rebuilt_even_with_hash_memo(wl):
    a = GraphDataset(wl, CFG, workers=1, progress=False)
    # rewrite invocation 1 with another body: size/mtime change, so the memo is not trusted
    t = random_trace(np.random.default_rng(77), n_warps=3, max_len=12)
    t.header = replace(t.header, kernel_id=2)
    write_kernel(t, wl / "kernel-2.traceg")
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["built"] == 1
    assert _equal(b[1], build_graph(read_kernel(wl / "kernel-2.traceg"), CFG))
    assert _equal(b[0], a[0])
    c = GraphDataset(wl, CFG, workers=1, progress=False, rehash=True)
    assert c.stats["built"] == 0 and c.inv_to_graph.tolist() == b.inv_to_graph.tolist()


def test_same_size_edit_with_its_old_mtime_put_back_is_rebuilt(wl):
    """The hash memo must not trust a file edited in place whose size and mtime were kept."""
    GraphDataset(wl, CFG, workers=1, progress=False)
    p = wl / "kernel-4.traceg"
    st = p.stat()
    text = p.read_text()
    op, swap = next((o, n) for o, n in ((" FADD ", " FMUL "), (" FFMA ", " FMUL "), (" IADD3 ", " IMNMX "))
                    if o in text)
    edited = text.replace(op, swap, 1)
    assert len(edited) == len(text) and edited != text
    with open(p, "r+") as f:  # in place: same inode, same size
        f.write(edited)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["built"] == 1
    assert _equal(b[3], build_graph(read_kernel(p), CFG))


@pytest.mark.parametrize("workers", [1, 2])
def test_bad_trace_raises_one_located_error_and_leaves_no_entry(tmp_path, workers):
    from gclsampler.errors import GclError

    wl = _workload(tmp_path / "wl", [1, 2, 3])
    p = wl / "kernel-2.traceg"
    lines = p.read_text().splitlines()
    body = next(i for i, l in enumerate(lines) if l.startswith("insts"))
    lines[body + 1] = "0010 ffffffff 1 R1 NOT A VALID LINE"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(GclError, match="kernel-2.traceg"):
        GraphDataset(wl, CFG, workers=workers, progress=False)
    idx = wl / ".graph-cache" / "v1" / "index"
    assert len(list(idx.glob("*.json"))) <= 2  # never an entry for the bad trace


@pytest.mark.parametrize("workers", [1, 2])
def test_launches_of_the_same_text_are_parsed_once(tmp_path, workers):
    """Launches whose traces differ only in the header's kernel id (the same code on the same
    data) share one graph and are parsed once; any other difference is parsed on its own.
    Seeds [1, 2, 1, 3, 2]: five launches, three texts."""
    wl = _workload(tmp_path / "wl", [1, 2, 1, 3, 2])
    ds = GraphDataset(wl, CFG, workers=workers, progress=False)
    assert ds.stats["built"] == 5 and ds.n_unique == 3
    if workers == 1:  # in parallel two workers may both parse a text before either stored it
        assert ds.stats["parsed"] == 3
    assert ds.inv_to_graph.tolist() == [0, 1, 0, 2, 1]
    for i in range(5):  # each launch's graph is what its own trace builds
        assert _equal(ds[i], build_graph(read_kernel(wl / f"kernel-{i + 1}.traceg"), CFG))
    again = GraphDataset(wl, CFG, workers=1, progress=False)
    assert again.stats["built"] == 0 and again.stats["parsed"] == 0


def test_a_changed_body_is_parsed_though_its_twin_was_cached(tmp_path):
    """The content key covers everything but the kernel id: a trace that differs from a cached
    one in a register is parsed, and gets its own graph."""
    wl = _workload(tmp_path / "wl", [1, 2, 1])
    first = GraphDataset(wl, CFG, workers=1, progress=False)
    p = wl / "kernel-3.traceg"
    text = p.read_text()
    i = text.index(" R", text.index("#BEGIN_TB"))
    reg = text[i + 2:i + 4].rstrip(" \n")
    edited = text[:i + 2] + ("9" if reg != "9" else "8") + text[i + 2 + len(reg):]
    p.write_text(edited)
    b = GraphDataset(wl, CFG, workers=1, progress=False)
    assert b.stats["parsed"] == 1
    assert _equal(b[2], build_graph(read_kernel(p), CFG))
    assert b[2].num_nodes != first[0].num_nodes or not _equal(b[2], first[0])


@pytest.mark.parametrize("name, is_dir", [("v1", False), ("v2", False), ("v1-notes", True), ("v1.bak", True),
                                          ("v", True), ("xv1", True)])
def test_a_graph_cache_holds_only_version_directories(tmp_path, name, is_dir):
    """Only directories named v<N> are a graph cache's own: a user's file called v1, or a
    directory that merely starts like one, makes the directory someone else's."""
    from gclsampler._safe_out import OutputError
    from gclsampler.workload_cache import check_cache_dir

    cache = tmp_path / "cache"
    check_cache_dir(cache)  # a new directory
    (cache / "v1").mkdir(parents=True)
    (cache / "v12").mkdir()
    check_cache_dir(cache)  # an earlier cache, of this and another version
    (cache / "v1").rmdir()
    (cache / name).mkdir() if is_dir else (cache / name).write_text("mine")
    with pytest.raises(OutputError, match=f"graph cache {cache}: holds '{name}', which is not the graph cache's"):
        check_cache_dir(cache)


def test_rehash_reads_the_file_whatever_its_memo_says(tmp_path):
    """trace_digest trusts a memo whose stat matches (that is what makes a warm reload fast);
    rehash=True, the way out of a bad memo, reads the file again and corrects the memo."""
    from gclsampler.workload_cache import digest, trace_digest

    p = tmp_path / "kernel-1.traceg"
    p.write_bytes(b"-kernel name = k\n")
    memo = tmp_path / "memo"
    right = trace_digest(p, memo)
    assert right == digest(p.read_bytes())
    (entry,) = memo.iterdir()
    bad = json.loads(entry.read_text())
    bad["digest"] = "0" * 32
    entry.write_text(json.dumps(bad))
    assert trace_digest(p, memo) == "0" * 32  # the memo is trusted while the stat matches
    assert trace_digest(p, memo, rehash=True) == right
    assert trace_digest(p, memo) == right  # the memo was written again


def test_a_damaged_graph_whose_trace_changed_is_rebuilt_for_that_invocation(wl):
    """A graph file read back damaged is rebuilt from its first invocation's trace; when that
    trace changed meanwhile, the invocation gets a graph of its own (the new text's), and its
    twin keeps the old graph's index."""
    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    assert ds.inv_to_graph.tolist() == [0, 1, 0, 2, 1]
    p = wl / "kernel-1.traceg"
    t = random_trace(np.random.default_rng(7), n_warps=3, max_len=12)
    t.header = replace(t.header, kernel_id=1)
    write_kernel(t, p)
    ds._paths.graph(ds.graph_hashes[0]).write_bytes(b"damaged")
    assert _equal(ds[0], build_graph(read_kernel(p), CFG))
    assert ds.n_unique == 4 and ds.inv_to_graph.tolist() == [3, 1, 0, 2, 1]
    # the twin, whose trace did not change, is served its own graph (it was served ds[0]'s)
    assert _equal(ds[2], build_graph(read_kernel(wl / "kernel-3.traceg"), CFG))
    assert _equal(ds.graph(0), build_graph(read_kernel(wl / "kernel-3.traceg"), CFG))


def test_a_damaged_graph_whose_every_trace_changed_says_to_reopen(tmp_path):
    """When every invocation of a damaged graph changed its trace, each gets its own new graph,
    and asking for the old index by itself is one clear error, not another invocation's graph."""
    wl = _workload(tmp_path / "wl", [1, 2, 1])
    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    assert ds.inv_to_graph.tolist() == [0, 1, 0]
    for i, seed in ((1, 7), (3, 8)):
        t = random_trace(np.random.default_rng(seed), n_warps=2, max_len=10)
        t.header = replace(t.header, kernel_id=i)
        write_kernel(t, wl / f"kernel-{i}.traceg")
    ds._paths.graph(ds.graph_hashes[0]).write_bytes(b"damaged")
    assert _equal(ds[0], build_graph(read_kernel(wl / "kernel-1.traceg"), CFG))
    assert _equal(ds[2], build_graph(read_kernel(wl / "kernel-3.traceg"), CFG))
    assert 0 not in ds.inv_to_graph.tolist()
    ds._lru.clear()
    with pytest.raises(GraphCacheError, match="changed since the dataset was opened"):
        ds.graph(0)


def test_an_invocations_graph_is_its_own_copy(wl):
    """Invocations 0 and 2 share one cached graph; what a caller does to one's graph (the
    augmentations edit tensors in place) reaches neither the other nor a later read."""
    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    a, b = ds[0], ds[2]
    assert a.invocation.tolist() == [0] and b.invocation.tolist() == [2]
    a.token += 1
    assert _equal(ds[2], b) and _equal(ds[0], b) and not torch.equal(a.token, b.token)


def test_training_views_of_the_cached_graphs_leave_them_unchanged(wl):
    """The pipeline trains on ``ds.graph(g)``, the cached objects themselves (no copy): the
    views (all three strategies, one- and many-graph batches) must leave a later read as built.
    A guard, not a fix: no caller mutates them today."""
    from gclsampler.augment import AugmentConfig
    from gclsampler.train import _two_views

    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    graphs = [ds.graph(g) for g in range(ds.n_unique)]
    before = [g.clone() for g in graphs]
    cfg = AugmentConfig(node_drop=0.9, edge_drop=0.9, min_strategies=3, max_strategies=3).validate()
    gen = torch.Generator().manual_seed(0)
    for ids in ([0], [0, 1, 2], [2, 1]):
        _two_views([graphs[i] for i in ids], cfg, gen, torch.device("cpu"))
    for g in range(ds.n_unique):
        assert ds.graph(g) is graphs[g] and _equal(ds.graph(g), before[g])


def test_a_rebuild_after_a_trace_changed_does_not_poison_the_old_texts_entry(wl):
    """A damaged graph rebuilt from a trace that changed since the dataset was opened must not
    be filed under the old text's index key: with the edit undone (git checkout, a restore),
    the next open served the edited trace's graph for the original text."""
    ds = GraphDataset(wl, CFG, workers=1, progress=False)
    p = wl / "kernel-1.traceg"
    original = p.read_bytes()
    t = random_trace(np.random.default_rng(7), n_warps=3, max_len=12)
    t.header = replace(t.header, kernel_id=1)
    write_kernel(t, p)
    ds._paths.graph(ds.graph_hashes[0]).write_bytes(b"damaged")
    assert _equal(ds[0], build_graph(read_kernel(p), CFG))
    p.write_bytes(original)  # the edit undone
    again = GraphDataset(wl, CFG, workers=1, progress=False)
    assert again.inv_to_graph.tolist() == [0, 1, 0, 2, 1]
    assert _equal(again[0], build_graph(read_kernel(p), CFG))
