"""gclsampler.synth: interpreter trace invariants, family loop counts, workload files, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gclsampler.synth import SynthConfigError, generate, workload_defaults, workload_names
from gclsampler.synth.families import Launch, build
from gclsampler.synth.program import Memory, run_program
from gclsampler.trace.types import NO_REG, KernelHeader

BASE = 0x7F0000000000
SHBASE = 0x7F5A4F000000

# Ampere (binary version 86) opcodes Accel-Sim models; modifiers after the first dot are free
ALLOWED = {"FFMA", "FADD", "FMUL", "IMAD", "IADD3", "LEA", "LOP3", "ISETP", "FSETP", "SEL", "FSEL", "BRA", "BSSY",
           "BSYNC", "EXIT", "S2R", "ULDC", "MOV", "LDG", "STG", "LDS", "STS", "LDGSTS", "LDGDEPBAR", "DEPBAR",
           "LDSM", "HMMA", "SHFL", "MUFU", "BAR", "RED", "ATOM", "FMNMX", "SHF", "F2F", "I2F", "IMNMX"}


def _run(L: Launch, ctas, cap=10**6, mem=None, record_off=False):
    p = build(L)
    h = KernelHeader(L.name, 1, L.grid, L.block, shmem=p.shmem, nregs=p.nregs, shmem_base_addr=SHBASE)
    return p, run_program(p, h, np.asarray(ctas), mem or Memory(), cap, record_off=record_off)


def _popcount(mask):
    return np.unpackbits(mask.astype(np.uint32).view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1)


LAUNCHES = {
    "elementwise": Launch("ew", "elementwise", (3, 1, 1), (64, 1, 1),
                          dict(n=5000, ins=[BASE, BASE + 2**20], out=BASE + 2**21, op="add")),
    "bias_gelu": Launch("bg", "elementwise", (2, 1, 1), (64, 1, 1),
                        dict(n=3000, ins=[BASE], out=BASE + 2**21, op="bias_gelu_tanh", bias=BASE + 2**22, bias_n=96)),
    "layernorm": Launch("ln", "layernorm", (2, 1, 1), (64, 1, 1),
                        dict(hidden=320, x=BASE, gamma=BASE + 2**20, beta=BASE + 2**21, out=BASE + 2**22)),
    "rmsnorm": Launch("rms", "layernorm", (2, 1, 1), (64, 1, 1),
                      dict(hidden=320, x=BASE, gamma=BASE + 2**20, beta=0, out=BASE + 2**22, rms=True)),
    "softmax": Launch("sm", "softmax", (1, 1, 1), (64, 1, 1), dict(cols=300, x=BASE, out=BASE + 2**20)),
    "rotary": Launch("rot", "rotary", (2, 1, 1), (64, 1, 1),
                     dict(tokens=4, heads=4, head_dim=16, rot_dim=8, x=BASE, cos=BASE + 2**20, sin=BASE + 2**21,
                          out=BASE)),
    "gemm_tc": Launch("gemm", "gemm_tc", (2, 1, 1), (128, 1, 1),
                      dict(M=40, N=128, K=256, A=BASE, B=BASE + 2**24, C=BASE + 2**25, bias=BASE + 2**26,
                           bm=64, bn=64)),
    "gemv": Launch("gemv", "gemv", (4, 1, 1), (128, 1, 1), dict(N=14, K=512, W=BASE, x=BASE + 2**24, y=BASE + 2**25)),
    "attn_prefill": Launch("fa", "attn_prefill", (2, 2, 1), (128, 1, 1),
                           dict(seq=100, head_dim=64, heads=2, q=BASE, k=BASE + 2**22, v=BASE + 2**23,
                                out=BASE + 2**24, row_stride=128)),
    "attn_decode": Launch("fd", "attn_decode", (2, 1, 1), (128, 1, 1),
                          dict(kv_len=37, head_dim=80, q=BASE, k_cache=BASE + 2**22, v_cache=BASE + 2**23,
                               max_len=64, out=BASE + 2**24)),
    "argmax": Launch("am", "argmax", (1, 1, 1), (128, 1, 1), dict(n=1000, x=BASE, out=BASE + 2**20)),
}


def assert_trace_is_issued_less_guarded_off(L: Launch, ctas, res) -> None:
    """Uncapped, ``res`` (an NVBit trace) records every instruction its warps issued except those
    issued with the guard false on every lane, which the tracer does not see; the timing model's
    sample (``record_off``) keeps those too, with an empty mask, and insts_total counts them."""
    _, full = _run(L, ctas, record_off=True)
    assert np.array_equal(np.diff(full.trace.warp_ptr), res.insts_total)
    on = _popcount(full.trace.mask) > 0
    t = res.trace
    assert np.array_equal(np.diff(t.warp_ptr), np.add.reduceat(on, full.trace.warp_ptr[:-1]))
    for col in ("pc", "mask", "mem_width", "imm"):
        assert np.array_equal(getattr(full.trace, col)[on], getattr(t, col)), col
    names = lambda tr: np.asarray(tr.opcode_table)[tr.opcode]  # noqa: E731  ids follow first appearance
    assert np.array_equal(names(full.trace)[on], names(t))
    assert np.array_equal(full.trace.addrs, t.addrs)


@pytest.mark.parametrize("key", sorted(LAUNCHES))
def test_family_trace_invariants(key):
    L = LAUNCHES[key]
    ctas = [[0, 0, 0], [L.grid[0] - 1, L.grid[1] - 1, 0]]
    prog, res = _run(L, ctas)
    t = res.trace
    # warp structure: all warps of both CTAs, instructions partitioned by warp_ptr
    wpc = (L.threads + 31) // 32
    assert t.n_warps == 2 * wpc and t.warp_ptr[-1] == t.n_insts
    assert_trace_is_issued_less_guarded_off(L, ctas, res)
    # Accel-Sim limits and opcode generation
    assert t.dst.shape[1] <= 1 and t.src.shape[1] <= 4
    assert {op.split(".")[0] for op in t.opcode_table} <= ALLOWED
    assert all(i.op.split(".")[0] in ALLOWED for i in prog.insts)
    # masks and addresses agree: one address per active lane of memory instructions, none otherwise
    act = _popcount(t.mask)
    assert (act > 0).all()
    n_addr = np.diff(t.addr_ptr)
    assert np.array_equal(n_addr, np.where(t.mem_width > 0, act, 0))
    # register values: (ndst + nsrc) rows x active lanes per instruction
    nops = (t.dst != NO_REG).sum(1) + (t.src != NO_REG).sum(1)
    assert np.array_equal(np.diff(t.value_ptr), nops * act)
    # every warp ends with EXIT (all lanes retire)
    last = t.opcode[t.warp_ptr[1:] - 1]
    assert all(t.opcode_table[o] == "EXIT" for o in last)
    # PCs are 16-byte aligned and belong to the program
    assert (t.pc % 16 == 0).all() and t.pc.max() < 16 * len(prog.insts)


def _count(t, w, prefix):
    ops = t.opcode[t.warp_ptr[w]:t.warp_ptr[w + 1]]
    ids = [i for i, n in enumerate(t.opcode_table) if n.startswith(prefix)]
    return int(np.isin(ops, ids).sum())


def test_elementwise_grid_stride_trip_counts_and_addresses():
    L = LAUNCHES["elementwise"]  # n=5000 halfs, 8 per 16-byte vector -> 625 vectors, stride 192 threads
    _, res = _run(L, [[c, 0, 0] for c in range(3)])
    t = res.trace
    n_vec, stride = -(-5000 // 8), 3 * 64
    for w in range(t.n_warps):
        cta, wid = int(t.warp_cta[w, 0]), int(t.warp_id[w])
        gids = cta * 64 + wid * 32 + np.arange(32)
        trips = np.maximum(0, -(-(n_vec - gids) // stride))
        assert _count(t, w, "LDG") == 2 * trips.max()  # two inputs per iteration
        # first load: lane addresses are base + 16 * global thread id, for the lanes in bounds
        s = slice(t.warp_ptr[w], t.warp_ptr[w + 1])
        first = np.flatnonzero(t.mem_width[s] > 0)[0] + t.warp_ptr[w]
        lanes = np.flatnonzero((int(t.mask[first]) >> np.arange(32)) & 1)
        assert np.array_equal(lanes, np.flatnonzero(gids < n_vec))
        addrs = t.addrs[t.addr_ptr[first]:t.addr_ptr[first + 1]]
        assert np.array_equal(addrs.astype(np.int64), BASE + 16 * gids[lanes])


def test_gemm_main_loop_follows_k():
    for K in (128, 512):
        L = Launch("g", "gemm_tc", (1, 1, 1), (128, 1, 1),
                   dict(M=64, N=64, K=K, A=BASE, B=BASE + 2**24, C=BASE + 2**25, bias=0, bm=64, bn=64))
        _, res = _run(L, [[0, 0, 0]])
        n_acc = max(2, 64 * 64 // (4 * 128))
        for w in range(res.trace.n_warps):
            assert _count(res.trace, w, "HMMA") == (K // 32) * 2 * n_acc
            assert _count(res.trace, w, "LDSM") == (K // 32) * 4  # A and B fragments, two k16 steps


def test_attention_decode_work_grows_with_kv_and_diverges():
    counts = []
    for kv in (9, 33, 64):
        L = Launch("fd", "attn_decode", (1, 1, 1), (128, 1, 1),
                   dict(kv_len=kv, head_dim=80, q=BASE, k_cache=BASE + 2**22, v_cache=BASE + 2**23, max_len=64,
                        out=BASE + 2**24))
        _, res = _run(L, [[0, 0, 0]])
        t = res.trace
        for w in range(4):  # warp w walks positions w, w+4, ...: one K and one V load each, plus q
            assert _count(t, w, "LDG") == 2 * len(range(w, kv, 4)) + 1
        counts.append(res.insts_total.sum())
        # head_dim 80 -> 20 lanes carry K/V: loads run with 20 active lanes
        ldg = [i for i, n in enumerate(t.opcode_table) if n.startswith("LDG")]
        assert (_popcount(t.mask[np.isin(t.opcode, ldg)]) == 20).all()
    assert counts[0] < counts[1] < counts[2]


def test_attention_prefill_causal_work_per_cta():
    L = LAUNCHES["attn_prefill"]  # seq 100 -> 2 query blocks; block 1 walks 2 KV blocks
    _, res = _run(L, [[0, 0, 0], [1, 0, 0]])
    t = res.trace
    assert _count(t, 0, "HMMA") * 2 == _count(t, 4, "HMMA")


def test_capped_run_counts_equal_full_run():
    for key in ("gemm_tc", "layernorm", "attn_decode", "elementwise"):
        L = LAUNCHES[key]
        ctas = [[0, 0, 0], [L.grid[0] - 1, 0, 0]]
        _, full = _run(L, ctas)
        _, capped = _run(L, ctas, cap=7)
        assert np.array_equal(full.insts_total, capped.insts_total)  # fast-forward is exact
        assert (np.diff(capped.trace.warp_ptr) == np.minimum(7, np.diff(full.trace.warp_ptr))).all()
        # the capped trace is the prefix of the full one
        for w in range(full.trace.n_warps):
            a = full.trace.pc[full.trace.warp_ptr[w]:full.trace.warp_ptr[w] + 7]
            b = capped.trace.pc[capped.trace.warp_ptr[w]:capped.trace.warp_ptr[w + 1]]
            assert np.array_equal(a, b)


def test_embedding_addresses_follow_token_ids():
    ids = np.array([5, 900, 17], np.int32)
    mem = Memory()
    mem.register(BASE + 2**30, ids.nbytes, ids)
    L = Launch("emb", "embedding", (3, 1, 1), (32, 1, 1),
               dict(hidden=64, weight=BASE, ids=BASE + 2**30, out=BASE + 2**25))
    _, res = _run(L, [[0, 0, 0], [1, 0, 0], [2, 0, 0]], mem=mem)
    t = res.trace
    for w in range(3):
        s = np.flatnonzero(t.mem_width[t.warp_ptr[w]:t.warp_ptr[w + 1]] == 16) + t.warp_ptr[w]
        a = t.addrs[t.addr_ptr[s[0]]]  # first lane of the first row load
        assert int(a) == BASE + int(ids[w]) * 64 * 2


TINY = dict(layers=1, prompt=8, decode=1, trace_cap=8, sample_cap=24, sample_ctas=1, max_traced_ctas=1,
            archs=["ampere", "turing"])


@pytest.fixture(scope="module")
def tiny_phi2(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth") / "phi2"
    generate("phi2", d, params=TINY, arch="ampere", seed=3, progress=False, jobs=1)
    return d


def test_workload_files_and_profile(tiny_phi2):
    from gclsampler.profile import read_profile
    from gclsampler.trace import list_invocations, read_kernel

    d = tiny_phi2
    meta = json.loads((d / "workload.json").read_text())
    assert meta["synthetic"] is True and meta["workload"] == "phi2" and meta["arch"] == "ampere"
    names = [ln for ln in (d / "kernelslist.g").read_text().splitlines() if ln.strip()]
    n = len(names)
    assert n == meta["n_invocations"] and n == len(list_invocations(d))
    # phi-2 layer: LN, q, k, v, 2 rotary, 2 KV-cache copies, attention, dense, fc1, GELU, fc2, 2 adds = 15;
    # per step: embedding + layers + final LN + lm_head + argmax; prefill + 1 decode step
    assert n == 2 * (1 + 15 + 3)
    prof = read_profile(d / "profile.csv")
    assert len(prof) == n and list(prof["invocation"]) == list(range(n))
    assert (prof["time_ns"] > 0).all() and (prof["cycles"] > 0).all()
    for col in ("l1_hit_rate", "l2_hit_rate"):
        assert prof[col].between(0, 1).all()
    assert (d / "profile.csv").read_bytes() == (d / "profiles" / "ampere.csv").read_bytes()
    assert (d / "profiles" / "turing.csv").exists()
    for i, name in enumerate(names):
        t = read_kernel(d / name)
        assert t.header.kernel_id == i + 1 and t.header.binary_version == 86
        assert t.header.name == prof["kernel_name"][i]
        assert f"({t.header.grid[0]},{t.header.grid[1]},{t.header.grid[2]})" == prof["grid"][i]
        assert t.has_values and t.n_insts > 0
        assert (np.diff(t.warp_ptr) <= TINY["trace_cap"]).all()


def test_same_seed_byte_identical(tiny_phi2, tmp_path):
    """Same seed -> same bytes, also when the timing model runs in a worker process (jobs=2)."""
    d2 = tmp_path / "again"
    generate("phi2", d2, params=TINY, arch="ampere", seed=3, progress=False, jobs=2)
    files = sorted(p.relative_to(tiny_phi2) for p in tiny_phi2.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(d2) for p in d2.rglob("*") if p.is_file())
    for f in files:
        assert (tiny_phi2 / f).read_bytes() == (d2 / f).read_bytes(), f


def test_unknown_knob_fails_before_work(tmp_path):
    out = tmp_path / "w"
    with pytest.raises(SynthConfigError, match="synth.layerz"):
        generate("phi2", out, params={"layerz": 2}, progress=False)
    with pytest.raises(SynthConfigError, match="synth.layers"):
        generate("phi2", out, params={"layers": "many"}, progress=False)
    with pytest.raises(SynthConfigError, match="unknown synthetic workload"):
        generate("nope", out, progress=False)
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("knob, value", [("layers", 2.7), ("layers", True), ("values", 5), ("values", 2.0),
                                         ("layers", [2])])
def test_a_knob_value_of_the_wrong_type_is_refused_not_converted(tmp_path, knob, value):
    """int(2.7) is 2 and bool(5) True: `workload.synth.layers=2.7` (train.py, the Python API)
    synthesized and recorded another workload than the one asked for."""
    from gclsampler.synth.generate import resolve_params

    with pytest.raises(SynthConfigError, match=f"synth.{knob}: expected "):
        resolve_params("phi2", {knob: value})
    assert resolve_params("phi2", {"layers": 2.0, "values": 0})["layers"] == 2  # whole floats, 0/1 as YAML gives


def test_cli_overrides_after_options(tmp_path):
    """`gclsampler synth phi2 --out DIR key=value`: overrides after options reach the knob check."""
    import argparse

    from gclsampler.cli.synth import register

    parser = argparse.ArgumentParser()
    register(parser)
    args = parser.parse_args(["phi2", "--out", str(tmp_path / "w"), "bogus=1"])
    with pytest.raises(SynthConfigError, match="synth.bogus"):
        args.handler(args)
    assert not (tmp_path / "w").exists()


def test_conf_yaml_mirrors_defaults():
    import yaml

    root = Path(__file__).resolve().parents[1] / "conf" / "workload"
    for name in workload_names():
        doc = yaml.safe_load((root / f"{name}.yaml").read_text())
        assert doc["name"] == name and doc["synthetic"] is True
        assert doc["synth"] == workload_defaults(name)


@pytest.mark.parametrize("name", workload_names())
def test_size_knobs_below_their_minimum_fail_naming_the_knob(name, tmp_path):
    """A size the kernel programs cannot run (n=0, decode=-2) used to surface as a KeyError or
    as an error about a temp file; now it is the knob's name, before any work."""
    from gclsampler.synth.generate import WORKLOADS, resolve_params

    mins = WORKLOADS[name].minimums
    assert mins, f"{name}: no minimums for its size knobs"
    for key, low in mins.items():
        assert resolve_params(name, {key: low})[key] == low
        with pytest.raises(SynthConfigError, match=rf"^synth\.{key}: must be >= {low} for workload '{name}', got {low - 1}$"):
            generate(name, tmp_path / "w", params={key: low - 1}, arch="turing")
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("name", workload_names())
def test_integer_knobs_above_32_bits_fail_naming_the_knob(name, tmp_path):
    """A knob at 2**64 reached numpy (trace_cap, sample_cap) and ended in an OverflowError
    traceback with exit 1, or ran for ever (n); 2**31 - 1 is the largest count a launch holds."""
    from gclsampler.synth.generate import INT_KNOB_MAX, resolve_params

    ints = [k for k, v in workload_defaults(name).items() if isinstance(v, int) and not isinstance(v, bool)]
    assert "trace_cap" in ints and len(ints) > 6
    for key in ints:
        assert resolve_params(name, {key: INT_KNOB_MAX})[key] == INT_KNOB_MAX
        for big in (INT_KNOB_MAX + 1, 2**64):
            with pytest.raises(SynthConfigError, match=rf"^synth\.{key}: must be at most {INT_KNOB_MAX} .*, got {big}$"):
                generate(name, tmp_path / "w", params={key: str(big)}, arch="turing")
    assert not (tmp_path / "w").exists()


def test_a_knob_below_32_bits_fails_naming_the_knob(tmp_path):
    """nw's gap penalty may be negative, and at -2**64 it was an OverflowError traceback."""
    from gclsampler.synth.generate import INT_KNOB_MAX

    with pytest.raises(SynthConfigError, match=rf"^synth\.penalty: must be at least {-INT_KNOB_MAX - 1} .*, got -{2**64}$"):
        generate("nw", tmp_path / "w", params={"n": 16, "penalty": -2**64}, arch="turing")
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("name,key,low,extra", [("nw", "n", 16, {}), ("backprop", "input", 16, {}),
                                                ("3mm", "n", 1, {}), ("phi2", "decode", 0, {"layers": 1, "prompt": 2})])
def test_smallest_allowed_size_synthesizes(name, key, low, extra, tmp_path):
    out = generate(name, tmp_path / "w", params={key: low, **extra, "trace_cap": 16, "max_traced_ctas": 1},
                   arch="turing", progress=False, jobs=1)
    assert (out / "kernelslist.g").read_text().strip()


def test_an_arch_given_twice_is_refused_before_work(tmp_path):
    # it was recorded in workload.json as given, so asking again with it once read as a different request
    with pytest.raises(SynthConfigError, match=r"^synth\.archs: 'ampere' given twice in \['ampere', 'ampere'\]"):
        generate("3mm", tmp_path / "w", params={"n": 16, "archs": "[ampere,ampere]"}, arch="turing")
    assert not (tmp_path / "w").exists()


def test_negative_seed_is_refused_naming_the_key(tmp_path):
    with pytest.raises(SynthConfigError, match="^seed: must be a non-negative integer, got -1$"):
        generate("3mm", tmp_path / "w", params={"n": 16}, seed=-1)
    assert not (tmp_path / "w").exists()



def _warp_view(t, w):
    """Warp ``w``'s instructions, addresses and value blocks, as plain lists."""
    a, b = int(t.warp_ptr[w]), int(t.warp_ptr[w + 1])
    vals = None if t.values is None else t.values[t.value_ptr[a]:t.value_ptr[b]].tolist()
    return (t.pc[a:b].tolist(), t.mask[a:b].tolist(), t.addrs[t.addr_ptr[a]:t.addr_ptr[b]].tolist(),
            np.diff(t.addr_ptr[a:b + 1]).tolist(), vals,
            None if t.value_ptr is None else np.diff(t.value_ptr[a:b + 1]).tolist())


@pytest.mark.parametrize("key", ["gemm_tc", "attn_decode", "layernorm"])
def test_batched_warps_record_what_each_cta_records_alone(key):
    """The synthesizer runs traced CTAs (values on, no cap) and timing-sample CTAs (values off,
    capped) in one batch; the interpreter puts every record's addresses and values in its own
    warp's place. A traced CTA's warps are what the CTA records alone, and a sample CTA's carry
    no values."""
    L = LAUNCHES[key]
    p = build(L)
    h = KernelHeader(L.name, 1, L.grid, L.block, shmem=p.shmem, nregs=p.nregs, shmem_base_addr=SHBASE)
    last = [L.grid[0] - 1, L.grid[1] - 1, 0]
    both = run_program(p, h, np.asarray([[0, 0, 0], last]), Memory(), np.array([10**6, 40]),
                       np.array([True, False])).trace
    alone = run_program(p, h, np.asarray([[0, 0, 0]]), Memory(), 10**6, True).trace
    wpc = alone.n_warps
    for w in range(wpc):
        assert _warp_view(both, w) == _warp_view(alone, w)
    for w in range(wpc, 2 * wpc):
        pcs, _, _, _, vals, nvals = _warp_view(both, w)
        assert len(pcs) == 40 and vals == [] and set(nvals) == {0}


@pytest.mark.parametrize("seed", range(6))
def test_warp_range_keeps_each_warp_whole(seed):
    """A batch's trace is cut into each launch's traced and sampled CTAs as one instruction
    range; each kept warp is the original warp, opcode names included, and the copy does not
    share memory with the batch it came from."""
    from gclsampler.synth.generate import warp_range
    from gclsampler.trace.testing import random_kernel_trace

    rng = np.random.default_rng(seed)
    t = random_kernel_trace(rng, n_warps=8, max_insts=25, values=True)
    lo = int(rng.integers(0, t.n_warps))
    for w0, w1 in ((lo, t.n_warps), (0, lo + 1), (0, t.n_warps), (lo, lo)):
        for values in (True, False):
            s = warp_range(t, w0, w1, values=values)
            assert s.n_warps == w1 - w0 and np.array_equal(s.warp_id, t.warp_id[w0:w1])
            for i, w in enumerate(range(w0, w1)):
                got, want = _warp_view(s, i), _warp_view(t, w)
                assert got[:4] == want[:4] and got[4:] == (want[4:] if values else (None, None))
                a, b = s.warp_ptr[i], s.warp_ptr[i + 1]
                c = t.warp_ptr[w]
                assert [s.opcode_table[o] for o in s.opcode[a:b]] == [t.opcode_table[o] for o in t.opcode[c:c + b - a]]
            assert not np.shares_memory(s.pc, t.pc) and (s.values is None or not np.shares_memory(s.values, t.values))
            assert len(s.opcode_table) == len(set(s.opcode.tolist()))  # only the opcodes the range uses


def test_synth_usage_shows_out_as_required(capsys):
    from gclsampler.cli import main

    with pytest.raises(SystemExit):
        main(["synth", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "WORKLOAD --out DIR" in usage and "[--out" not in usage


@pytest.mark.parametrize("argv", [["phi2", "--list"], ["--list", "phi2"], ["phi2", "--out", "x", "--list"]])
def test_synth_list_with_a_workload_lists_its_knobs(argv, capsys, tmp_path, monkeypatch):
    """``synth phi2 --list`` said "unrecognized arguments: --list": the workload's REMAINDER took it."""
    from gclsampler.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["synth", *argv]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("phi2: ") and f"layers={workload_defaults('phi2')['layers']}" in lines[0]
    assert list(tmp_path.iterdir()) == []  # listing writes nothing, --out or not
    assert main(["synth", "--list"]) == 0
    assert [ln.split(":")[0] for ln in capsys.readouterr().out.splitlines()] == workload_names()
    assert main(["synth", "phi2", "--list", "layers=2"]) == 2  # not ignored silently
    assert "--list takes no KEY=VALUE" in capsys.readouterr().err


def test_synthesized_traces_record_guarded_off_instructions_as_mask_0_lines(tmp_path):
    """An NVBit tracer (tracer/, Accel-Sim's) writes an instruction a warp issues with its guard
    false on every lane as a line with mask 00000000; the synthesizer now does too (the knob
    ``trace_guarded_off``, default true). Off, the traces are those lines fewer and otherwise the
    same; what the hardware stand-in does (every profile) does not depend on it."""
    from gclsampler.graph import kernel_features
    from gclsampler.synth import generate
    from gclsampler.trace import iter_kernels

    out = {}
    for flag in (True, False):
        d = tmp_path / f"lu_{flag}"
        generate("lu", d, params=dict(n=48, trace_guarded_off=flag, archs=["turing"], values=False),
                 arch="turing", seed=1, progress=False, jobs=1)
        out[flag] = d
    on, off = list(iter_kernels(out[True])), list(iter_kernels(out[False]))
    assert len(on) == len(off) and sum(int((t.mask == 0).sum()) for t in on) > 0
    for a, b in zip(on, off):
        assert (b.mask != 0).all()
        keep = a.mask != 0
        assert np.array_equal(a.pc[keep], b.pc) and np.array_equal(a.warp_cta, b.warp_cta)
        names = lambda tr: np.asarray(tr.opcode_table)[tr.opcode]  # noqa: E731
        assert np.array_equal(names(a)[keep], names(b))
        assert np.array_equal(np.add.reduceat(keep, a.warp_ptr[:-1]) if a.n_insts else [], np.diff(b.warp_ptr))
        # a mask-0 line is an instruction no lane executes: no address, no destination written
        assert (np.diff(a.addr_ptr)[~keep] == 0).all()
        # and no work: the size vector (the work split's and work_mean's SM-0 count) is the same
        # (counted, it moved lu's count by up to 14 % with the launch and cost gcl accuracy)
        assert np.array_equal(kernel_features(a), kernel_features(b))
    for prof in ("profile.csv", "profiles/turing.csv"):
        assert (out[True] / prof).read_bytes() == (out[False] / prof).read_bytes()


def test_a_workload_synthesized_before_the_trace_guarded_off_knob_reads_as_false(tmp_path):
    """workload.json records every synth knob; one written before ``trace_guarded_off`` existed
    lacks it and was written with the knob's value ``false`` (LEGACY_KNOBS). Asking for that
    value must take it as it is (it was synthesized again, byte for byte the same, for the
    missing key); the default request (true since the knob became the default) must not, as
    its traces lack the mask-0 lines."""
    import json

    from gclsampler.synth import generate
    from gclsampler.synth.generate import stale_reason
    from gclsampler.synth.workloads import COMMON_DEFAULTS

    assert COMMON_DEFAULTS["trace_guarded_off"] is True
    params = dict(n=8, archs=["turing"], values=False, trace_guarded_off=False)
    d = generate("lu", tmp_path / "lu", params=params, arch="turing", seed=1, progress=False, jobs=1)
    meta_path = d / "workload.json"
    meta = json.loads(meta_path.read_text())
    assert meta["synth"]["trace_guarded_off"] is False
    del meta["synth"]["trace_guarded_off"]
    meta_path.write_text(json.dumps(meta))
    assert stale_reason(d, "lu", params, "turing", 1) is None
    default = {k: v for k, v in params.items() if k != "trace_guarded_off"}
    why = stale_reason(d, "lu", default, "turing", 1)
    assert why == "synth knobs differ: trace_guarded_off False -> True"


def test_synth_arch_that_is_a_second_run_is_named_as_given(capsys, tmp_path):
    """``--arch turing_rerun`` (rerun on by default) said "unknown arch 'turing_rerun_rerun'",
    a name the user never typed; now one line names what was given and the two ways out."""
    from gclsampler.cli import main

    assert main(["synth", "bfs", "--out", str(tmp_path / "o"), "--arch", "turing_rerun"]) == 2
    err = capsys.readouterr().err
    assert "_rerun_rerun" not in err and "--arch turing_rerun is a second run itself" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
