"""Issue 14: property-based fuzzing of every reader of user files.

For each reader (trace files plain and gzip, kernelslist.g + headers via the workload
check, profile.csv, the ncu/nsys/torch importers, plan.json, embeddings.npy) hypothesis
mutates a valid file (bytes deleted, inserted, replaced, lines dropped, duplicated or
swapped, numbers replaced by extreme or non-numeric tokens, truncation, non-UTF-8 bytes)
and asserts that reading it either succeeds or raises the stage's ``GclError`` whose
message names the file: never another exception (a traceback for the user). Mutations
that must not change the meaning (CRLF line ends, a UTF-8 BOM, compression, huge kernel
ids) must give the same result as the original.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gclsampler.errors import GclError

DATA = Path(__file__).resolve().parent / "data" / "profiles"
# GCLSAMPLER_FUZZ_EXAMPLES=1000 for a longer hunt; the default keeps the suite fast and deterministic
FUZZ = settings(max_examples=int(os.environ.get("GCLSAMPLER_FUZZ_EXAMPLES", "60")), deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

_TOKENS = [b"-1", b"0", b"1e308", b"nan", b"inf", b"-inf", b"abc", b"", b"99999999999999999999999",
           b"0x", b"(1,2)", b"(0,1,1)", b"\xff\xfe", b",", b"\"", b"|", b"#BEGIN_TB", b"-kernel id = 1",
           b"\x00", b"1.5", b"[", b"{", b"null", b"true"]


@st.composite
def mutations(draw, data: bytes):
    """A mutated copy of ``data`` (one to three edits)."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "delete", "insert", "token", "line_drop", "line_dup",
                                     "line_swap", "truncate"]))
        n = len(out)
        if n == 0:
            out += draw(st.binary(min_size=1, max_size=8))
            continue
        i = draw(st.integers(0, n - 1))
        if kind == "flip":
            out[i] = draw(st.integers(0, 255))
        elif kind == "delete":
            del out[i:i + draw(st.integers(1, 16))]
        elif kind == "insert":
            out[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "truncate":
            del out[i:]
        elif kind == "token":  # replace one number (or word) by a hostile token
            spans = [m.span() for m in re.finditer(rb"[0-9A-Za-z_.]+", bytes(out))]
            if spans:
                a, b = spans[draw(st.integers(0, len(spans) - 1))]
                out[a:b] = draw(st.sampled_from(_TOKENS))
        else:
            lines = bytes(out).split(b"\n")
            j = draw(st.integers(0, len(lines) - 1))
            if kind == "line_drop":
                del lines[j]
            elif kind == "line_dup":
                lines.insert(j, lines[j])
            else:
                k = draw(st.integers(0, len(lines) - 1))
                lines[j], lines[k] = lines[k], lines[j]
            out = bytearray(b"\n".join(lines))
    return bytes(out)


def _expect_located(fn, path: Path):
    """Run a reader: success, or a GclError naming ``path``; anything else fails the test."""
    try:
        return fn()
    except GclError as exc:
        msg = str(exc)
        assert str(path) in msg or path.name in msg, f"error does not name the file: {msg}"
        assert "\n" not in msg.strip(), f"not one line: {msg!r}"
        return None


# ----------------------------------------------------------------------------- traces
@pytest.fixture(scope="module")
def trace_bytes(tiny_workload) -> bytes:
    return (tiny_workload / "kernel-3.traceg").read_bytes()


def _same_trace(a, b) -> None:
    assert a.header == b.header
    for f in ("warp_ptr", "pc", "mask", "opcode", "dst", "src", "mem_width", "addr_ptr", "addrs"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.opcode_table == b.opcode_table


def test_trace_reader_survives_mutations(trace_bytes, tmp_path_factory):
    from gclsampler.trace import read_kernel

    d = tmp_path_factory.mktemp("fuzz-trace")

    @FUZZ
    @given(st.data())
    def run(data):
        p = d / "kernel-3.traceg"
        p.write_bytes(data.draw(mutations(trace_bytes)))
        got = _expect_located(lambda: read_kernel(p), p)
        if got is not None:  # what was accepted is a whole trace: it writes and reads back the same
            _round_trips(got, d)

    run()


def _round_trips(trace, d: Path) -> None:
    from gclsampler.trace import read_kernel, write_kernel

    again = d / "again" / "kernel-3.traceg"
    again.parent.mkdir(exist_ok=True)
    write_kernel(trace, again)
    _same_trace(read_kernel(again), trace)


def test_compressed_trace_reader_survives_mutations(trace_bytes, tmp_path_factory):
    from gclsampler.trace import read_header, read_kernel

    d = tmp_path_factory.mktemp("fuzz-gz")
    packed = gzip.compress(trace_bytes, mtime=0)

    @FUZZ
    @given(st.data())
    def run(data):
        p = d / "kernel-3.traceg.gz"
        p.write_bytes(data.draw(mutations(packed)))
        _expect_located(lambda: read_header(p), p)
        got = _expect_located(lambda: read_kernel(p), p)
        if got is not None:
            _round_trips(got, d)

    run()


def test_unusual_but_valid_traces_read_the_same(trace_bytes, tmp_path):
    import zstandard

    from gclsampler.trace import read_kernel

    ref = tmp_path / "kernel-3.traceg"
    ref.write_bytes(trace_bytes)
    want = read_kernel(ref)
    variants = {
        "crlf/kernel-3.traceg": trace_bytes.replace(b"\n", b"\r\n"),
        "bom/kernel-3.traceg": b"\xef\xbb\xbf" + trace_bytes,
        "gz/kernel-3.traceg.gz": gzip.compress(trace_bytes),
        "xz/kernel-3.traceg.xz": lzma.compress(trace_bytes),
        "zst/kernel-3.traceg.zst": zstandard.ZstdCompressor().compress(trace_bytes),
    }
    for rel, content in variants.items():
        p = tmp_path / rel
        p.parent.mkdir()
        p.write_bytes(content)
        _same_trace(read_kernel(p), want)
    huge = tmp_path / "huge" / "kernel-3.traceg"
    huge.parent.mkdir()
    huge.write_bytes(re.sub(rb"-kernel id = \d+", b"-kernel id = 4294967301", trace_bytes))
    assert read_kernel(huge).header.kernel_id == 4294967301


# ----------------------------------------------------------------------------- kernelslist + headers
def test_workload_check_reports_every_mutation_as_located_problems(tiny_workload, tmp_path_factory):
    """check_workload never raises; every problem it reports names a file of the workload."""
    from gclsampler.validate import check_workload

    d = tmp_path_factory.mktemp("fuzz-wl") / "wl"
    shutil.copytree(tiny_workload, d)
    kl_orig = (d / "kernelslist.g").read_bytes()
    head_orig = (d / "kernel-2.traceg").read_bytes()

    @FUZZ
    @given(st.data())
    def run(data):
        (d / "kernelslist.g").write_bytes(data.draw(mutations(kl_orig)))
        (d / "kernel-2.traceg").write_bytes(data.draw(mutations(head_orig)) if data.draw(st.booleans())
                                            else head_orig)
        for p in check_workload(d):
            assert str(d) in p.text and "\n" not in p.text, p.text

    run()


def test_kernelslist_crlf_and_bom_are_fine(wl_copy):
    from gclsampler.validate import check_workload

    kl = wl_copy / "kernelslist.g"
    kl.write_bytes(b"\xef\xbb\xbf" + kl.read_bytes().replace(b"\n", b"\r\n"))
    assert check_workload(wl_copy) == []


# ----------------------------------------------------------------------------- profile.csv
def test_profile_reader_survives_mutations(tiny_workload, tmp_path_factory):
    from gclsampler.profile import read_profile

    d = tmp_path_factory.mktemp("fuzz-prof")
    orig = (tiny_workload / "profile.csv").read_bytes()

    @FUZZ
    @given(st.data())
    def run(data):
        p = d / "profile.csv"
        p.write_bytes(data.draw(mutations(orig)))
        df = _expect_located(lambda: read_profile(p), p)
        if df is not None:  # what was accepted satisfies the contract
            assert list(df["invocation"]) == list(range(len(df))) and len(df) > 0
            for c in ("l1_hit_rate", "l2_hit_rate", "achieved_occupancy"):
                if c in df:
                    v = df[c].to_numpy(dtype=float)
                    assert not (v[~np.isnan(v)] > 1 + 1e-6).any()

    run()


def test_profile_crlf_and_bom_read_the_same(tiny_workload, tmp_path):
    from gclsampler.profile import read_profile

    orig = (tiny_workload / "profile.csv").read_bytes()
    want = read_profile(tiny_workload / "profile.csv")
    p = tmp_path / "profile.csv"
    p.write_bytes(b"\xef\xbb\xbf" + orig.replace(b"\n", b"\r\n"))
    got = read_profile(p)
    assert list(got.columns) == list(want.columns)
    assert got.equals(want)


@pytest.mark.parametrize("name,fmt", [("ncu_raw.csv", "ncu"), ("nsys_cuda_gpu_trace.csv", "nsys"),
                                      ("nsys_cuda_kern_exec_trace.csv", "nsys"), ("torch_trace.json", "torch")])
def test_importers_survive_mutations(tmp_path_factory, name, fmt):
    from gclsampler.profile import import_profile

    d = tmp_path_factory.mktemp(f"fuzz-{fmt}")
    orig = (DATA / name).read_bytes()

    @FUZZ
    @given(st.data())
    def run(data):
        p = d / name
        p.write_bytes(data.draw(mutations(orig)))
        _expect_located(lambda: import_profile(p, "auto"), p)
        _expect_located(lambda: import_profile(p, fmt), p)

    run()


# ----------------------------------------------------------------------------- plan.json
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                       st.text(max_size=5))
_json = st.recursive(_json_leaf, lambda c: st.one_of(st.lists(c, max_size=3),
                                                      st.dictionaries(st.text(max_size=5), c, max_size=3)),
                     max_leaves=6)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


@pytest.fixture(scope="module")
def plan_doc(tiny_workload) -> dict:
    from gclsampler.stem import StemRootSampler
    from gclsampler.workload import Workload

    plan = StemRootSampler(epsilon=0.2).fit(Workload.load(tiny_workload))
    return plan.to_dict()


def test_plan_reader_survives_structural_mutations(plan_doc, tmp_path_factory):
    """Any JSON value put anywhere in a valid plan: loaded (and then valid) or a PlanError."""
    from gclsampler.plan import SamplingPlan

    d = tmp_path_factory.mktemp("fuzz-plan")
    paths = list(_paths(plan_doc))

    @FUZZ
    @given(st.sampled_from(paths), _json, st.booleans())
    def run(path, value, delete):
        doc = json.loads(json.dumps(plan_doc))
        if not path:
            doc = value
        else:
            parent = doc
            for k in path[:-1]:
                parent = parent[k]
            if delete:
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        p = d / "plan.json"
        p.write_text(json.dumps(doc))
        plan = _expect_located(lambda: SamplingPlan.load(p), p)
        if plan is not None:
            plan.validate()
            assert all(isinstance(s.invocation, int) for s in plan.samples)

    run()


def test_plan_reader_survives_byte_mutations(plan_doc, tmp_path_factory):
    from gclsampler.plan import SamplingPlan

    d = tmp_path_factory.mktemp("fuzz-planb")
    orig = json.dumps(plan_doc, indent=1).encode()

    @FUZZ
    @given(st.data())
    def run(data):
        p = d / "plan.json"
        p.write_bytes(data.draw(mutations(orig)))
        plan = _expect_located(lambda: SamplingPlan.load(p), p)
        if plan is not None:  # accepted: a valid plan whose file form reads back as itself
            assert SamplingPlan.from_dict(json.loads(plan.validate().to_json())).to_json() == plan.to_json()

    run()


def test_plan_with_bom_and_crlf_loads_the_same(plan_doc, tmp_path):
    from gclsampler.plan import SamplingPlan

    p = tmp_path / "plan.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(plan_doc, indent=1).encode().replace(b"\n", b"\r\n"))
    assert SamplingPlan.load(p).to_dict() == SamplingPlan.from_dict(plan_doc).to_dict()


# ----------------------------------------------------------------------------- embeddings
def test_embeddings_reader_survives_mutations(tmp_path_factory):
    from gclsampler.embeddings import load_embeddings

    d = tmp_path_factory.mktemp("fuzz-emb")
    buf = io.BytesIO()
    np.save(buf, np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32))
    orig = buf.getvalue()

    @FUZZ
    @given(st.data())
    def run(data):
        p = d / "emb.npy"
        p.write_bytes(data.draw(mutations(orig)))
        emb = _expect_located(lambda: load_embeddings(p, 6), p)
        if emb is not None:
            assert emb.shape[0] == 6 and np.isfinite(emb).all()

    run()
