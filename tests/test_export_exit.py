"""export-accelsim closes warps that a per-warp instruction cap cut off before their EXIT.

Accel-Sim retires a warp only on EXIT; a trace that runs out first crashes its scheduler
(found by running synthetic phi2 exports through Accel-Sim's trace-driven simulator).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gclsampler.trace import read_kernel, write_kernel
from gclsampler.trace.testing import random_kernel_trace
from gclsampler.trace.workload import accelsim_text, export_accelsim, write_kernelslist

from _trace_fixtures import Inst, export_warp_order, make_trace


def _base(t, i):
    return t.opcode_table[int(t.opcode[i])].split(".")[0]


@given(seed=st.integers(0, 2**32 - 1), lineinfo=st.booleans())
@settings(max_examples=40, deadline=None)
def test_every_exported_warp_ends_in_exit_and_nothing_else_changes(seed, lineinfo, tmp_path_factory):
    rng = np.random.default_rng(seed)
    t = random_kernel_trace(rng, n_warps=5, max_insts=12, line_num=lineinfo, max_dst=1, max_src=4)
    path = tmp_path_factory.mktemp("x") / "kernel-1.traceg"
    path.write_bytes(accelsim_text(t))
    out = read_kernel(path)
    order = export_warp_order(t)
    assert out.n_warps == len(order)
    for v, w in enumerate(order):
        b = out.warp_slice(v)
        if w is None:  # a warp its CTA does not list: one EXIT of its lanes (all 32 threads here)
            assert b.stop - b.start == 1 and _base(out, b.start) == "EXIT" and int(out.mask[b.start]) == 0xFFFFFFFF
            continue
        a = t.warp_slice(w)
        n_in, n_out = a.stop - a.start, b.stop - b.start
        if n_in == 0:  # an empty warp (Accel-Sim asserts on one) retires at once at the kernel's first PC
            assert n_out == 1 and _base(out, b.start) == "EXIT" and int(out.mask[b.start]) == 0xFFFFFFFF
            assert int(out.pc[b.start]) == (int(t.pc.min()) if t.n_insts else 0)
            continue
        closed = _base(t, a.stop - 1) == "EXIT"
        assert n_out == n_in + (0 if closed else 1)
        assert _base(out, b.stop - 1) == "EXIT"
        # the original instructions are untouched, in order
        np.testing.assert_array_equal(out.pc[b.start:b.start + n_in], t.pc[a])
        np.testing.assert_array_equal(out.mask[b.start:b.start + n_in], t.mask[a])
        got = [out.opcode_table[i] for i in out.opcode[b.start:b.start + n_in]]
        assert got == [t.opcode_table[i] for i in t.opcode[a]]
        np.testing.assert_array_equal(out.addrs[out.addr_ptr[b.start]:out.addr_ptr[b.start + n_in]],
                                      t.addrs[t.addr_ptr[a.start]:t.addr_ptr[a.stop]])
        if not closed:
            e = b.stop - 1
            # the lanes that have not exited (random_kernel_trace's warps are all 32 threads)
            exited = np.bitwise_or.reduce([int(m) for i, m in zip(range(a.start, a.stop), t.mask[a])
                                           if _base(t, i) == "EXIT"] + [0])
            assert int(out.pc[e]) == int(t.pc[a.stop - 1]) + 16 and int(out.mask[e]) == 0xFFFFFFFF & ~exited
            assert int(out.mem_width[e]) == 0 and (out.dst[e] < 0).all() and (out.src[e] < 0).all()


def test_export_of_a_capped_workload_closes_its_warps(tmp_path):
    rng = np.random.default_rng(7)
    src = tmp_path / "wl"
    src.mkdir()
    t = random_kernel_trace(rng, n_warps=3, max_insts=10, max_dst=1, max_src=4, kernel_id=1)
    write_kernel(t, src / "kernel-1.traceg")
    write_kernelslist(src, ["kernel-1.traceg"])
    (out_path,) = export_accelsim(src, tmp_path / "out")
    out = read_kernel(out_path)
    ends = [_base(out, out.warp_slice(w).stop - 1) for w in range(out.n_warps)
            if out.warp_slice(w).stop > out.warp_slice(w).start]
    assert ends and set(ends) == {"EXIT"}


def test_an_appended_exit_retires_every_lane_that_has_not_exited(tmp_path):
    """Accel-Sim retires a warp once every lane of its threads has executed an EXIT, each lane
    once (a second EXIT of a lane asserts); a warp not retired when its trace runs out is
    fetched past its end, the crash the appended EXIT is for. The EXIT took the last traced
    mask, which is predicated: a cap that stops at a divergent branch or at an instruction whose
    guard is false on every lane (00000000) left lanes that never exit (synthetic bfs with
    trace_cap=47: 33 of its 352 exported warps)."""
    t = make_trace([
        [Inst("MOV", ("R1",)), Inst("BRA", mask=0x0000FFFF)],  # cut at a divergent branch
        [Inst("EXIT", mask=0x000000FF), Inst("MOV", ("R2",), mask=0)],  # lanes 0-7 exited, then guard false
        [Inst("MOV", ("R3",)), Inst("EXIT")],  # complete: nothing appended
        [Inst("MOV", ("R4",), mask=0xF)],  # the CTA's last 16 threads
    ], with_values=False)
    t = dataclasses.replace(t, header=dataclasses.replace(t.header, block=(112, 1, 1)))
    path = tmp_path / "kernel-1.traceg"
    path.write_bytes(accelsim_text(t))
    out = read_kernel(path)
    last = out.warp_ptr[1:] - 1
    assert [out.opcode_table[i] for i in out.opcode[last]] == ["EXIT"] * 4
    assert out.mask[last].tolist() == [0xFFFFFFFF, 0xFFFFFF00, 0xFFFFFFFF, 0x0000FFFF]
    assert np.diff(out.warp_ptr).tolist() == [3, 3, 2, 2]
