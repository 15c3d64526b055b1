"""The whole-array structure check of grouped traces agrees with the line-by-line walk.

``reader._structure_fast`` takes canonical, well-formed bodies; everything else must fall to
``reader._structure_walk`` so that results and error lines are the walk's. Generated bodies
(several CTAs and warps, random counts) are read both ways and must give equal traces;
each mutation that breaks a rule must give the walk's error whichever path runs first.
"""

from __future__ import annotations

import numpy as np
import pytest

from _trace_fixtures import random_trace
from gclsampler.trace import TraceFormatError, read_kernel, write_kernel
from gclsampler.trace import reader as R

GRID, BLOCK = (6, 2, 1), (128, 1, 1)  # 4 warps per CTA


def _inst_lines(tmp_path, seed: int) -> list[str]:
    """Valid instruction lines of one random warp, as write_kernel spells them."""
    p = tmp_path / f"src{seed}.traceg"
    write_kernel(random_trace(np.random.default_rng(seed), n_warps=1, max_len=30), p)
    text = p.read_text().splitlines()
    start = text.index("warp = 0") + 2  # past its 'insts =' line
    return [ln for ln in text[start:] if ln and not ln.startswith("#")]


def _body(rng, pool: list[str]) -> list[str]:
    """Canonical sections: distinct CTAs inside GRID, distinct warps per CTA, each with its lines."""
    lines: list[str] = []
    n_ctas = int(rng.integers(1, 5))
    ctas = rng.choice(GRID[0] * GRID[1], size=n_ctas, replace=False)
    for c in ctas.tolist():
        lines += ["#BEGIN_TB", "", f"thread block = {c % GRID[0]},{c // GRID[0]},0", ""]
        for w in rng.permutation(4)[: int(rng.integers(1, 5))].tolist():  # a CTA lists a warp
            n = int(rng.integers(0, len(pool) + 1))
            lines += [f"warp = {w}", f"insts = {n}", *pool[:n], ""]
        lines += ["#END_TB", ""]
    return lines


def _header(tmp_path) -> str:
    p = tmp_path / "h.traceg"
    write_kernel(random_trace(np.random.default_rng(0), n_warps=1, max_len=1), p)
    head = p.read_text().split("#BEGIN_TB")[0]
    return head.replace("-grid dim = (1,1,1)", f"-grid dim = ({GRID[0]},{GRID[1]},{GRID[2]})").replace(
        "-block dim = (32,1,1)", f"-block dim = ({BLOCK[0]},{BLOCK[1]},{BLOCK[2]})")


def _read(path, monkeypatch, fast: bool):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(R, "_structure_fast", lambda *a, **k: None)
        try:
            return read_kernel(path), None
        except TraceFormatError as exc:
            return None, str(exc)


MUTATIONS = {
    "duplicate warp": lambda L: _dup(L, "warp = "),
    "warp past the CTA": lambda L: _sub(L, "warp = ", "warp = 4"),
    "insts one too many": lambda L: _bump(L, +1),
    "insts one too few": lambda L: _bump(L, -1),
    "CTA outside the grid": lambda L: _sub(L, "thread block = ", f"thread block = {GRID[0]},0,0"),
    "duplicate CTA": lambda L: _dup_cta(L),
    "no thread block line": lambda L: [ln for ln in L if not ln.startswith("thread block")],
    "instruction before the first section": lambda L: [next(ln for ln in L if ln[:1].isdigit()), *L],
    "section never ends": lambda L: L[: max(i for i, ln in enumerate(L) if ln == "#END_TB")],
    "instruction after a section": lambda L: [*L, next(ln for ln in L if ln[:1].isdigit())],
    "spaces in the thread block": lambda L: _sub(L, "thread block = ", "thread block = 0, 0, 0"),
    "cluster line": lambda L: _after(L, "thread block = ", "cluster = 0,0,0"),
    "a CTA listing no warp": lambda L: _empty_cta(L),
}


def _empty_cta(L):
    """The first CTA's section with its warps taken out."""
    i, j = _first(L, "thread block = "), L.index("#END_TB")
    return [*L[:i + 1], *L[j:]]


def _first(L, prefix):
    return next((i for i, ln in enumerate(L) if ln.startswith(prefix)), None)


def _sub(L, prefix, new):
    i = _first(L, prefix)
    return None if i is None else [*L[:i], new, *L[i + 1:]]


def _after(L, prefix, new):
    i = _first(L, prefix)
    return None if i is None else [*L[:i + 1], new, *L[i + 1:]]


def _dup(L, prefix):
    """An empty block for the first warp's id, just before it: counts stay right, the id repeats."""
    i = _first(L, prefix)
    return None if i is None else [*L[:i], L[i], "insts = 0", *L[i:]]


def _bump(L, d):
    i = _first(L, "insts = ")
    if i is None:
        return None
    n = int(L[i].split()[-1]) + d
    return None if n < 0 else [*L[:i], f"insts = {n}", *L[i + 1:]]


def _dup_cta(L):
    i = _first(L, "thread block = ")
    return None if i is None else [*L, "#BEGIN_TB", L[i], "#END_TB"]


@pytest.mark.parametrize("seed", range(12))
def test_fast_structure_reads_generated_bodies_as_the_walk_does(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    pool = _inst_lines(tmp_path, seed)
    head = _header(tmp_path)
    monkeypatch.setattr(R, "_FAST_STRUCTURE_LINES", 0)  # small bodies too (the threshold is for speed)
    taken = []
    real_fast = R._structure_fast
    monkeypatch.setattr(R, "_structure_fast", lambda *a: taken.append(r := real_fast(*a)) or r)
    body = _body(rng, pool)
    p = tmp_path / "k.traceg"
    p.write_text(head + "\n".join(body) + "\n")
    fast, err = _read(p, monkeypatch, True)
    assert err is None and taken[-1] is not None  # canonical and well formed: the fast path took it
    walk, _ = _read(p, monkeypatch, False)
    assert fast.equals(walk)
    for name, mutate in MUTATIONS.items():
        bad = mutate(body)
        if bad is None:
            continue
        p.write_text(head + "\n".join(bad) + "\n")
        got = _read(p, monkeypatch, True)
        want = _read(p, monkeypatch, False)
        assert (got[1], got[0] is None) == (want[1], want[0] is None), name
        if got[0] is not None:
            assert got[0].equals(want[0]), name
        # a body the walk refuses is never accepted by the fast path
        assert want[1] is None or taken[-1] is None, name


def test_many_warps_take_the_fast_path_and_few_take_the_walk(tmp_path, monkeypatch):
    pool = _inst_lines(tmp_path, 0)
    head = _header(tmp_path)
    taken = []
    real_fast = R._structure_fast
    monkeypatch.setattr(R, "_structure_fast", lambda *a: taken.append(1) or real_fast(*a))
    every = []
    for c in range(GRID[0] * GRID[1]):
        every += ["#BEGIN_TB", f"thread block = {c % GRID[0]},{c // GRID[0]},0"]
        for w in range(4):
            every += [f"warp = {w}", "insts = 2", *pool[:2]]
        every += ["#END_TB"]
    p = tmp_path / "k.traceg"
    p.write_text(head + "\n".join(every) + "\n")
    assert read_kernel(p).warp_id.size == 4 * GRID[0] * GRID[1] and taken == [1]
    p.write_text(head + "\n".join(every[:19]) + "\n")  # one CTA: 11 structural lines
    assert read_kernel(p).warp_id.size == 4 and taken == [1]
