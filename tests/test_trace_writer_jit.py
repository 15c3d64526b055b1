"""The compiled (numba) trace-writer kernels against the numpy ones they replace.

The synthesizer spends most of its time formatting trace text, so the token builders,
the byte placement and the register-value row encoding run compiled when numba is
there. Each must give exactly the numpy version's arrays, and a whole rendered trace
must be byte-identical either way (the files a workload's graphs are cached under).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.trace import _fmt as F
from gclsampler.trace import _text as T
from gclsampler.trace import writer as W
from gclsampler.trace.testing import random_kernel_trace

jit = pytest.importorskip("gclsampler.trace._jit", reason="numba is not installed")

HYP = settings(max_examples=80, deadline=None)
U64 = st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 15, 16, 2**32 - 1, 2**63, 2**64 - 1])
I64 = st.integers(-2**63, 2**63 - 1) | st.sampled_from([0, -1, 9, 10, -10, 99, -2**63, 2**63 - 1])
PREFIX = st.sampled_from([b"", b"0x", b"=", b"abc"])


@HYP
@given(v=st.lists(U64, max_size=40), min_width=st.integers(1, 16), prefix=PREFIX)
def test_hex_tokens_match_numpy(v, min_width, prefix):
    a = np.array(v, dtype=np.uint64)
    M1, L1 = jit.hex_tokens(a, min_width, np.frombuffer(prefix, np.uint8))
    M2, L2 = F.hex_tokens_numpy(a, min_width, prefix)
    assert np.array_equal(M1, M2) and np.array_equal(L1, L2)
    for i, x in enumerate(v):  # and the visible token is the number
        assert bytes(M1[i, M1.shape[1] - L1[i]:]) == prefix + format(x, f"0{min_width}x").encode()


def test_hex_width_outside_the_token_matrix_is_refused():
    for w in (0, 17):
        with pytest.raises(ValueError, match="min_width"):
            F.hex_tokens(np.array([1], np.uint64), w)


@HYP
@given(v=st.lists(I64, max_size=40), prefix=PREFIX)
def test_dec_tokens_match_numpy(v, prefix):
    a = np.array(v, dtype=np.int64)
    M1, L1 = jit.dec_tokens(a, np.frombuffer(prefix, np.uint8))
    M2, L2 = F.dec_tokens_numpy(a, prefix)
    assert np.array_equal(M1, M2) and np.array_equal(L1, L2)
    for i, x in enumerate(v):
        assert bytes(M1[i, M1.shape[1] - L1[i]:]) == prefix + str(x).encode()


_ROW = st.one_of(
    st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=32),  # anything: ':' or '~'
    st.tuples(st.integers(0, 2**32 - 1), st.integers(-2**32, 2**32), st.integers(1, 32)).map(  # strided, wrapping
        lambda t: [(t[0] + i * t[1]) % 2**32 for i in range(t[2])]),
    st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 32)).map(lambda t: [t[0]] * t[1]),  # '='
    st.lists(st.integers(2**31 - 3, 2**31 + 3), min_size=2, max_size=8),  # small deltas around the sign bit
    st.lists(st.integers(0, 40), min_size=3, max_size=6),  # hex list and deltas often the same length
)


@HYP
@given(rows=st.lists(_ROW, max_size=12))
def test_value_rows_match_numpy(rows):
    vals = np.array([x for r in rows for x in r], dtype=np.uint32)
    k = np.array([len(r) for r in rows], dtype=np.int64)
    e1, s1 = jit.value_rows(vals, k)
    e2, s2 = W._value_rows_numpy(vals, k)
    assert np.array_equal(e1, e2) and np.array_equal(s1, s2)


def test_value_rows_prefer_the_hex_list_on_a_tie():
    """[0, 1, 3]: deltas "1 2" and the hex list "1 3" are both 2 characters, and the list wins
    the tie; [0, 1000, 1001]: deltas "1000 1" are shorter than "3e8 3e9"."""
    vals, k = np.array([0, 1, 3, 0, 1000, 1001], np.uint32), np.array([3, 3], np.int64)
    for enc, _ in (jit.value_rows(vals, k), W._value_rows_numpy(vals, k)):
        assert bytes(enc) == b":~"


@HYP
@given(groups=st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=12), st.lists(I64, max_size=12)),
                       max_size=5))
def test_line_assembly_matches_numpy(groups):
    def rendered(kernels):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(T, "_JIT_STATE", [kernels])
            asm = F.LineAssembler(6)
            for lines, nums in groups:
                n = min(len(lines), len(nums))
                asm.add(np.sort(np.array(lines[:n], np.int64)), *F.dec_tokens(np.array(nums[:n], np.int64)))
            return asm.render()

    (b1, s1), (b2, s2) = rendered(jit), rendered(None)
    assert b1 == b2 and np.array_equal(s1, s2)


def test_line_assembler_refuses_tokens_it_cannot_place():
    M, L = F.dec_tokens(np.array([1, 2], np.int64))
    for lines, length in (([0, 6], L), ([-1, 0], L), ([1, 0], L), ([0, 1], np.array([1, 99]))):
        with pytest.raises(ValueError, match="LineAssembler.add"):
            F.LineAssembler(6).add(np.array(lines), M, length)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), values=st.booleans(), dense=st.booleans(), chunk=st.sampled_from([None, 7]))
def test_rendered_traces_are_byte_identical(seed, values, dense, chunk):
    t = random_kernel_trace(np.random.default_rng(seed), values=values, dense=dense)

    def text(kernels):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(T, "_JIT_STATE", [kernels])
            return b"".join(W.render_chunks(t, chunk_insts=chunk))

    assert text(jit) == text(None)


def test_a_writer_kernel_that_misformats_disables_the_compiled_kernels(monkeypatch):
    """The warm-up checks the writer's kernels too: a wrong one means numpy for everything."""
    monkeypatch.setattr(jit, "value_rows", lambda v, k: (np.full(k.shape[0], 58, np.uint8), np.zeros(k.shape[0], np.int64)))
    monkeypatch.setattr(T, "_JIT_STATE", [])
    monkeypatch.delenv("GCLSAMPLER_NO_JIT", raising=False)
    with pytest.warns(RuntimeWarning, match="misformatted"):
        assert T.compiled() is None
