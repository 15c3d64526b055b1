"""The NVBit tool's formatter (tracer/gcl_format.h) and gclsampler.trace agree.

The C++ side is built with g++ from the GPU-free header; records are generated
here, formatted there (including the BEFORE/AFTER merge the tool's host thread
does, with warps interleaved), and parsed back with ``read_kernel``. Every field
of the GCL-Sampler paper's Table 1 and every address mode is covered.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gclsampler.trace import read_kernel, reg_code

ROOT = Path(__file__).resolve().parents[1]
OPCODES = ["IMAD.MOV.U32", "LDG.E.128.SYS", "STG.E", "FFMA", "ISETP.GE.AND", "BRA", "LDS.U.32",
           "HMMA.16816.F32", "EXIT", "ATOM.E.ADD.STRONG.GPU", "DEPBAR.LE"]
MEM = {1: 16, 2: 4, 6: 4, 9: 4}  # opcode index -> mem width


@pytest.fixture(scope="module")
def format_test(tmp_path_factory) -> Path:
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++/make not available: cannot build tracer/test/format_test")
    build = tmp_path_factory.mktemp("tracer-build")
    exe = build / "format_test"
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Werror", f"-I{ROOT / 'tracer'}",
                    str(ROOT / "tracer/test/format_test.cpp"), "-o", str(exe)], check=True)
    return exe


def _build(tmp_path: Path, source: str, *flags: str) -> Path:
    """tracer/test/<source>.cpp built with g++ (-std=c++17 -Wall -Werror, the tracer headers on
    the include path, plus ``flags``) into tmp_path; skips the test without g++."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    exe = tmp_path / source
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", *flags, f"-I{ROOT / 'tracer'}",
                    str(ROOT / "tracer" / "test" / f"{source}.cpp"), "-o", str(exe)], check=True)
    return exe


def _mask(rng: np.random.Generator, kind: str) -> int:
    if kind == "full":
        return 0xFFFFFFFF
    if kind == "none":  # predicated off for the whole warp: issued, recorded as Accel-Sim's tracer does
        return 0
    if kind == "contig":
        lo = int(rng.integers(0, 31))
        hi = int(rng.integers(lo + 1, 33))
        return ((1 << hi) - 1) ^ ((1 << lo) - 1)
    m = int(rng.integers(1, 2**32))
    return m


def _row(rng: np.random.Generator, kind: str) -> np.ndarray:
    base = int(rng.integers(0, 2**32))
    if kind == "const":
        return np.full(32, base, dtype=np.uint64)
    if kind == "stride":
        step = int(rng.integers(-1000, 1000))
        return (base + step * np.arange(32, dtype=np.int64)) % 2**32
    return rng.integers(0, 2**32, size=32, dtype=np.uint64)


def _reg(num: int) -> int:
    """The reader's code of the tool's register number (gcl::kUniformBase = 256 starts URn)."""
    return reg_code(f"UR{num - 256}" if num >= 256 else f"R{num}")


def _generate(seed: int, lineinfo: bool):
    """Per-warp instruction lists (the expectation) and the interleaved record stream."""
    rng = np.random.default_rng(seed)
    warps = [((c, 0, 0), w) for c in range(2) for w in range(3)]
    expected: dict[tuple, list[dict]] = {}
    streams = []
    for cta, w in warps:
        insts, recs = [], []
        for i in range(int(rng.integers(1, 14))):
            op = int(rng.integers(0, len(OPCODES)))
            mask = _mask(rng, ["full", "contig", "rand", "none"][int(rng.integers(0, 4))])
            ndst = int(rng.integers(0, 3))
            nsrc = int(rng.integers(0, 6))
            # general registers, and uniform ones (256 + n: UR0..UR63) as ULDC writes kernel arguments to
            dst = [int(x) for x in rng.integers(0, 320, ndst)]
            src = [int(x) for x in rng.integers(0, 320, nsrc)]
            width = MEM.get(op, 0)
            lanes = np.flatnonzero([(mask >> b) & 1 for b in range(32)])
            if width and rng.random() < 0.5:
                addrs = (int(rng.integers(0, 2**40)) + width * np.arange(32)).astype(np.uint64)
            else:
                addrs = rng.integers(0, 2**48, size=32, dtype=np.uint64)
            if not width:
                addrs = np.zeros(32, dtype=np.uint64)
            has_values = bool(rng.random() < 0.8)
            rows = [_row(rng, ["const", "stride", "rand"][int(rng.integers(0, 3))]) for _ in range(ndst + nsrc)]
            after = has_values and ndst > 0
            inst = dict(pc=16 * i, mask=mask, op=OPCODES[op], dst=dst, src=src, width=width,
                        addrs=addrs[lanes] if width else np.zeros(0, np.uint64),
                        imm=int(rng.integers(-2**63, 2**63, dtype=np.int64)), line=int(rng.integers(1, 500)),
                        values=np.concatenate([r[lanes] for r in rows]) if has_values and rows else None)
            insts.append(inst)
            before_rows = [np.zeros(32, np.uint64) if after and j < ndst else rows[j] for j in range(len(rows))]
            head = [cta[0], cta[1], cta[2], w, inst["line"], format(inst["pc"], "x"), format(mask, "x"), op,
                    width, ndst, *dst, nsrc, *src, inst["imm"] % 2**64, int(has_values)]
            addr_tok = [format(int(a), "x") for a in addrs]
            val_tok = [format(int(v), "x") for r in before_rows for v in r] if has_values else []
            recs.append(" ".join(map(str, ["RECORD", 0, int(after), *head, *addr_tok, *val_tok])))
            if after:
                ahead = [cta[0], cta[1], cta[2], w, 0, format(inst["pc"], "x"), format(mask, "x"), op, 0, ndst,
                         *dst, 0, 0, 1]
                atok = [format(int(v), "x") for r in rows[:ndst] for v in r]
                recs.append(" ".join(map(str, ["RECORD", 1, 0, *ahead, *(["0"] * 32), *atok])))
        expected[(cta, w)] = insts
        streams.append(recs)
    # interleave warps arbitrarily while keeping each warp's order, as the channel does
    order = np.concatenate([np.full(len(s), k) for k, s in enumerate(streams)])
    rng.shuffle(order)
    pos = [0] * len(streams)
    lines = []
    for k in order:
        lines.append(streams[k][pos[k]])
        pos[k] += 1
    text = (f"HEADER _Z6kernelPf 7 2 1 1 96 1 1 {int(lineinfo)} 1\n"
            f"OPCODES {len(OPCODES)} {' '.join(OPCODES)}\n" + "\n".join(lines) + "\nEND\n")
    return expected, text


@pytest.mark.parametrize("policy", ["auto", "list", "delta"])
@pytest.mark.parametrize("seed,lineinfo", [(0, False), (1, True), (2, False), (3, True)])
def test_cpp_formatter_round_trips_through_python_reader(format_test, tmp_path, policy, seed, lineinfo):
    expected, text = _generate(seed, lineinfo)
    out = subprocess.run([str(format_test), policy], input=text, capture_output=True, text=True, check=True)
    path = tmp_path / "kernel-7.trace"
    path.write_text(out.stdout)
    if policy == "list":
        assert " 0 0x" in out.stdout  # mode 0 really exercised
    if policy == "delta":
        assert " 2 0x" in out.stdout
    t = read_kernel(path)
    # one record per LDGSTS, said in the format line, so the reader looks for no pairs
    assert "[mem_addresses] immediate ldgsts_once" in out.stdout.splitlines()[14]
    assert t.header.name == "_Z6kernelPf" and t.header.kernel_id == 7
    assert t.header.grid == (2, 1, 1) and t.header.block == (96, 1, 1)
    assert (t.line_num is not None) == lineinfo
    seen = set()
    for w in range(t.n_warps):
        key = (tuple(int(x) for x in t.warp_cta[w]), int(t.warp_id[w]))
        seen.add(key)
        insts = expected[key]
        sl = t.warp_slice(w)
        assert sl.stop - sl.start == len(insts)
        for j, inst in enumerate(insts):
            i = sl.start + j
            assert int(t.pc[i]) == inst["pc"] and int(t.mask[i]) == inst["mask"]
            assert t.opcode_table[t.opcode[i]] == inst["op"]
            assert [int(c) for c in t.dst[i] if c >= 0] == [_reg(r) for r in inst["dst"]]
            assert [int(c) for c in t.src[i] if c >= 0] == [_reg(r) for r in inst["src"]]
            assert int(t.mem_width[i]) == inst["width"]
            np.testing.assert_array_equal(t.addrs[t.addr_ptr[i]:t.addr_ptr[i + 1]], inst["addrs"])
            assert int(t.imm[i]) == inst["imm"]
            if lineinfo:
                assert int(t.line_num[i]) == inst["line"]
            got = t.values[t.value_ptr[i]:t.value_ptr[i + 1]]
            if inst["values"] is None:
                assert got.size == 0
            else:
                np.testing.assert_array_equal(got.astype(np.uint64), inst["values"])
    assert seen == set(expected)


def test_a_before_record_whose_after_never_comes_has_zero_destination_values(format_test, tmp_path):
    """A warp that exits (or an instruction that rewrites its own guard predicate) sends no AFTER
    record; the merger writes its BEFORE at the next record of the warp or at the launch's end.
    Its destination values were never read on the device: they are written as 0, not as the
    unused words of the device's record (here 0xdeadbeef), which differ from run to run."""
    head = ["RECORD", 0, 1, 0, 0, 0, 0, 1, "10", "ffffffff", 3, 0, 1, 5, 1, 6, 0, 1]  # FFMA R5 <- R6, values on
    garbage = ["deadbeef"] * 32 + [format(v, "x") for v in range(1, 33)]  # dst row (unread), then src row
    text = (f"HEADER _Z6kernelPf 7 1 1 1 32 1 1 0 1\nOPCODES {len(OPCODES)} {' '.join(OPCODES)}\n"
            + " ".join(map(str, [*head, *(["0"] * 32), *garbage])) + "\nEND\n")
    out = subprocess.run([str(format_test), "auto"], input=text, capture_output=True, text=True, check=True)
    path = tmp_path / "kernel-7.trace"
    path.write_text(out.stdout)
    t = read_kernel(path)
    assert t.n_insts == 1 and t.opcode_table[t.opcode[0]] == "FFMA"
    got = t.values[t.value_ptr[0]:t.value_ptr[1]].astype(np.uint64)
    np.testing.assert_array_equal(got, np.concatenate([np.zeros(32), np.arange(1, 33)]).astype(np.uint64))
    # the same without an AFTER expected (a control-flow instruction with a destination)
    head[2] = 0
    text = text.split("RECORD", 1)[0] + " ".join(map(str, [*head, *(["0"] * 32), *garbage])) + "\nEND\n"
    out = subprocess.run([str(format_test), "auto"], input=text, capture_output=True, text=True, check=True)
    path.write_text(out.stdout)
    t = read_kernel(path)
    got = t.values[t.value_ptr[0]:t.value_ptr[1]].astype(np.uint64)
    np.testing.assert_array_equal(got, np.concatenate([np.zeros(32), np.arange(1, 33)]).astype(np.uint64))


def test_tracer_output_directory_groups_into_a_workload(format_test, tmp_path):
    """The layout gcl_tracer.so writes (compressed raw traces named in `kernelslist`, Memcpy
    lines between them) is what `gclsampler trace group` turns into a workload directory."""
    import zstandard

    from gclsampler.trace import list_invocations
    from gclsampler.trace.workload import group_raw_dir

    expected, text = _generate(5, False)
    out = subprocess.run([str(format_test)], input=text, capture_output=True, text=True, check=True).stdout
    raw = tmp_path / "traces"
    raw.mkdir()
    (raw / "kernel-7.trace.zst").write_bytes(zstandard.ZstdCompressor().compress(out.encode()))
    (raw / "kernelslist").write_text("MemcpyHtoD,0x00007f0000000000,4096\nkernel-7.trace.zst\n")
    group_raw_dir(raw, tmp_path / "wl")
    (info,) = list_invocations(tmp_path / "wl")
    assert info.header.kernel_id == 7 and info.path.endswith(".traceg")
    grouped = read_kernel(tmp_path / "wl" / info.path)
    direct = read_kernel(raw / "kernel-7.trace.zst")
    assert grouped.n_warps == len(expected) and grouped.equals(direct)


def test_a_trace_without_values_says_so_in_its_format_line(format_test, tmp_path):
    """GCL_VALUES=0 writes plain Accel-Sim lines, and its header must not claim `| reg_values`:
    gcl_tracer.cu never set the header's `values`, whose default is on, so every such trace said it
    carried values and gclsampler read it as one (`has_values`, `trace info`) whose lines all lack
    them. The formatter writes the line from `values`; the tool must hand it GCL_VALUES."""
    rec = ["RECORD", 0, 0, 0, 0, 0, 0, 1, "10", "ffffffff", 3, 0, 1, 5, 1, 6, 0, 0, *(["0"] * 32)]  # FFMA, no values
    got = {}
    for values in (0, 1):
        text = (f"HEADER _Z6kernelPf 7 1 1 1 32 1 1 0 {values}\nOPCODES {len(OPCODES)} {' '.join(OPCODES)}\n"
                + " ".join(map(str, rec)) + "\nEND\n")
        out = subprocess.run([str(format_test), "auto"], input=text, capture_output=True, text=True, check=True)
        path = tmp_path / f"kernel-7.{values}.trace"
        path.write_text(out.stdout)
        t = read_kernel(path)
        assert t.n_insts == 1 and "|" not in out.stdout.splitlines()[-1]
        got[values] = t.has_values
    assert got == {0: False, 1: True}  # the line, not the instructions, decides: so the tool must set it
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    header = src.split("gcl::KernelHeaderInfo h;", 1)[1].split("gcl::format_raw_header(h", 1)[0]
    assert re.search(r"h\.values = opt\.values", header)


def test_a_bad_gcl_uniform_is_refused_with_values_off_too():
    """GCL_UNIFORM was read only when GCL_VALUES was on (`opt.values && env_flag(...)`), so with
    GCL_VALUES=0 any value of it passed without a word."""
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    assert not re.search(r"opt\.values\s*&&\s*gcl::env_flag\(\"GCL_UNIFORM\"", src)
    assert re.search(r"= gcl::env_flag\(\"GCL_UNIFORM\", 1\);", src)


@pytest.mark.parametrize("begin, end, line", [
    (1, 0, "ok"), (5, 5, "ok"), (1, 500, "ok"), (7, 0, "ok"),
    (10, 5, "GCL_KERNEL_END=5 is before GCL_KERNEL_BEGIN=10: no launch would be traced"),
])
def test_a_launch_range_that_holds_no_launch_is_refused(tmp_path, begin, end, line):
    """GCL_KERNEL_BEGIN and GCL_KERNEL_END were each range-checked alone; END below BEGIN ran the
    whole program under the tool and traced nothing. gcl_tracer.cu stops at start-up (exit 2) with
    gcl_env.h's line."""
    exe = _build(tmp_path, "env_test", "-O1", "-Wextra")
    run = subprocess.run([str(exe), "range", str(begin), str(end)], capture_output=True, text=True, check=True)
    assert run.stdout == line + "\n"
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    init = src.split("void nvbit_at_init()", 1)[1].split("\n}\n", 1)[0]
    assert "gcl::kernel_range_error(" in init and "exit(2)" in init.split("gcl::kernel_range_error(", 1)[1]


def test_a_trace_is_listed_only_once_it_is_whole():
    """kernelslist named a launch's trace at the launch's entry; when the launch faulted or its
    channel flush failed the tool exited with the trace listed, and the compressor, reading end of
    input at the exit, closed a valid .zst of what had arrived, which `trace group` took as the
    launch's trace. The line is written after the trace closed without a failure."""
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    assert src.count('fprintf(kernelslist, "%s\\n"') == 1
    callback = src.split("void nvbit_at_cuda_event(", 1)[1].split("\nvoid ", 1)[0]
    entry, exit_ = callback.split("/* exit: the launch is queued", 1)
    assert "kernelslist" not in entry.split("p->ByteCount);", 1)[1]  # the launch's entry lists nothing
    after_close = exit_.split("gcl::close_trace(", 1)[1]
    listed = after_close.index('fprintf(kernelslist, "%s\\n"')
    assert after_close.index("exit(2);") < listed  # a trace that is not whole stops the tool unlisted
    for failure in ("failed under instrumentation", "channel flush failed"):
        assert exit_.index(failure) < exit_.index("gcl::close_trace(")


def test_the_compressor_command_comes_from_gcl_output():
    """The trace's path goes into the compressor's shell command through gcl_output.h's quoting
    (output_test runs it on a directory named with ' $ ` " and spaces): between bare single quotes,
    an apostrophe in GCL_TRACE_DIR was a shell syntax error and the program died of SIGPIPE."""
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    body = src.split("static FILE *open_trace(", 1)[1].split("\n}\n", 1)[0]
    assert "gcl::compressor_command(opt.compress, path)" in body and "'\"" not in body


@pytest.mark.parametrize("flags,expected", [
    ([], "3 7\ngraph 0"),
    (["-DGCL_MOCK_STREAM_ARG"], "4 7 0x40\ngraph 0"),
    (["-DGCL_MOCK_LAUNCH_HANDLE"], "5 7 0x40 0\n5 9 0x40 119\ngraph 1"),
])
def test_nvbit_compat_picks_the_set_at_launch_form(tmp_path, flags, expected):
    """tracer/nvbit_compat.h builds against NVBit 1.7.1's nvbit_set_at_launch (no stream), a
    later one (with a stream) and 1.7.7's (stream and a graph node's launch handle), calling
    whichever the header declares. A graph node's launch value is set only where the release
    takes the node's handle, and the caller is told whether it was."""
    exe = _build(tmp_path, "nvbit_compat_test", *flags)
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip() == expected


def _pointer(text: str) -> int:
    """A %p of the mock's output: glibc prints a null pointer as (nil)."""
    return 0 if text == "(nil)" else int(text, 16)


def test_every_single_kernel_launch_entry_point_is_read_alike(tmp_path):
    """tracer/gcl_launch.h: cuLaunchKernel, cuLaunchCooperativeKernel and cuLaunchKernelEx (the
    last keeps its geometry in a CUlaunchConfig), each with its _ptsz form, give the same view
    of kernel, grid, block, dynamic shared memory and stream; other callbacks are not launches.
    Only cuLaunchKernel[_ptsz] was hooked, so cudaLaunchKernelEx launches went uncounted and the
    trace ids stopped matching profile rows."""
    exe = _build(tmp_path, "launch_view_test", "-Wextra")
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    apis = ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz",
            "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"]
    for k, (api, line) in enumerate(zip(apis, lines), start=1):
        name, func, grid, block, shmem, stream, queue = line.split()
        assert name == api and int(func, 16) == 0x1000 * k and int(stream, 16) == 0x100 * k, line
        assert grid == f"{10 * k + 1},{10 * k + 2},{10 * k + 3}" and block == f"{10 * k + 4},{10 * k + 5},{10 * k + 6}"
        assert int(shmem) == 10 * k + 7
        assert _pointer(queue) == 0x100 * k, line  # a named stream is the stream, _ptsz or not
    views = [ln for ln in lines if not ln.startswith(("attr ", "null "))]
    assert [ln.split()[0] for ln in views[len(apis):]] == ["-", "-", "-"]  # Ex without a config, a memcpy, a graph


def test_a_null_stream_is_the_threads_own_in_a_per_thread_launch(tmp_path):
    """A _ptsz launch with stream 0 runs on the calling thread's default stream
    (CU_STREAM_PER_THREAD, 0x2), not the legacy one. The tool records its timing events and asks
    about stream capture on ``queue()``: on the legacy stream the start event waited for every
    other blocking stream's work, and a capture on the thread's stream went unseen, so the
    tool's events broke it. The stream as passed stays in ``stream``, which NVBit matches the
    launch value on, and in the trace header."""
    exe = _build(tmp_path, "launch_view_test", "-Wextra")
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    null = {ln.split()[1]: (_pointer(ln.split()[2]), _pointer(ln.split()[3])) for ln in lines if ln.startswith("null ")}
    per_thread_stream = 0x2
    assert null == {
        "cuLaunchKernel": (0, 0), "cuLaunchCooperativeKernel": (0, 0), "cuLaunchKernelEx": (0, 0),
        "cuLaunchKernel_ptsz": (0, per_thread_stream), "cuLaunchCooperativeKernel_ptsz": (0, per_thread_stream),
        "cuLaunchKernelEx_ptsz": (0, per_thread_stream),
    }


@pytest.mark.parametrize("cuda_version, kernel_handles_answered", [(13010, True), (11080, False)])
def test_launch_attribute_reads_kernel_handles_too(tmp_path, cuda_version, kernel_handles_answered):
    """gcl::launch_attribute: a launch that carries a CUkernel (CUDA >= 12 runtimes may pass one to
    cuLaunchKernel) gets its registers and shared memory from cuKernelGetAttribute after
    cuFuncGetAttribute says INVALID_HANDLE. Before, every row of the first H200 profile had nregs =
    shmem = 0. A handle nobody knows gives 0 and the driver's error, never the garbage it leaves in
    the output; a CUDA 11 build, which has no kernel handles, keeps the plain query."""
    exe = _build(tmp_path, "launch_view_test", "-Wextra", f"-DCUDA_VERSION={cuda_version}")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    rows = [ln.split()[1:] for ln in out.splitlines() if ln.startswith("attr ")]
    invalid_handle = "400"
    # mock values: a CUfunction 0x3000 gives 100 * attr + 3; a CUkernel 0xa000 gives 1000 * attr + 2
    assert rows[0] == ["function", "403", "0", "0"]
    if kernel_handles_answered:
        assert rows[1] == ["kernel", "4002", "0", "1"] and rows[2] == ["kernel", "1002", "0", "1"]
    else:
        assert rows[1] == ["kernel", "0", invalid_handle, "0"] and rows[2] == ["kernel", "0", invalid_handle, "0"]
    assert rows[3] == ["unknown", "0", invalid_handle, "0"]


@pytest.mark.parametrize("seed", [1, 2])
def test_hand_written_appenders_write_what_printf_writes(tmp_path, seed):
    """gcl_format.h writes numbers by hand (the tool's host thread formats every record while the
    GPU waits on the channel; snprintf cost 3-8 us a record). tracer/test/format_speed.cpp
    formats seeded random records that reach every branch (negative and extreme CTA ids, PCs past
    16 bits, partial masks, every address mode and policy, constant, strided and divergent values,
    immediates over the whole 64 bits, written signed, line info) both ways; every line must be byte-identical to the
    printf oracle in tracer/test/printf_reference.h."""
    exe = _build(tmp_path, "format_speed", "-O1", "-Wextra")
    run = subprocess.run([str(exe), "check", "20000", str(seed)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "20000 records identical"


def test_device_buffer_drain_takes_each_record_inside_the_capacity_once_in_order(tmp_path):
    """GCL_BUFFER_MB: after a launch the host reads back the records the injected code wrote
    into the device buffer. gcl::drain_buffer must hand over every record inside the buffer's
    capacity once, in slot order (each warp's records are in its program order there), across
    chunk boundaries of the staging area, and nothing past the capacity when the launch claimed
    more slots than there were (those were counted as dropped on the device)."""
    exe = _build(tmp_path, "drain_test", "-O1", "-Wextra")
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"{6 * 4 * 4} cases ok"


def test_time_gate_keeps_the_launch_call_out_of_the_measured_time(tmp_path):
    """GCL_TIME_GATE_US: the start event of a timed launch must fire after the launch is
    queued, which needs gate_begin's order (gate, then start event) and gate_end's (open the
    gate, then wait on the stop event). test/gate_test.cpp runs the tool's host side against
    a CPU emulation of one stream: the gated time excludes 30 ms of launch latency that the
    ungated time includes, a launch call that waits for the stream ends in the gate's timeout
    instead of a deadlock, and the next launch is gated again."""
    exe = _build(tmp_path, "gate_test", "-O1", "-Wextra", "-pthread")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "gate: all checks hold" in run.stdout


def test_operand_choice_records_uniform_registers_only_when_asked(tmp_path):
    """The tool's choice of destination and source registers (gcl_operands.h) on SASS forms
    written out as NVBit operand lists: `ULDC URn, c[...]` keeps its uniform destination (the
    kernel argument's value) only with GCL_UNIFORM, a uniform source keeps its place among
    general ones, URZ is dropped and RZ kept, a memory reference gives its base register."""
    exe = _build(tmp_path, "operands_test", "-O1", "-Wextra")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "operands: all cases hold" in run.stdout


def test_the_compressor_is_looked_up_on_path_and_its_failure_named(tmp_path):
    """GCL_COMPRESS=zstd (the default) on a host without zstd: the tool's popen shell exited
    127, a C program died of SIGPIPE at its first traced launch, and one that ignores SIGPIPE
    ran on with kernelslist naming traces never written. gcl_output.h finds the program on PATH
    before the first launch (no shell: one would inherit LD_PRELOAD and start the tool again)
    and names why a compressor failed from pclose's status. An uncompressed trace whose bytes
    did not all reach the disk (fclose fails: /dev/full here) is named too; its fclose result
    was ignored, leaving a cut trace listed in kernelslist as whole."""
    exe = _build(tmp_path, "output_test", "-O1", "-Wextra")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run = subprocess.run([str(exe), str(scratch)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "output: all checks hold" in run.stdout


def test_the_tool_names_the_file_of_a_trace_that_is_not_whole():
    """An uncompressed trace whose write failed was reported as "its trace in GCL_TRACE_DIR is
    incomplete", naming the directory of every launch's trace, not the one file cut short; the
    compressed case named no file at all. gcl_tracer.cu prints gcl_output.h's line, which
    output_test checks."""
    text = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    body = text.split("gcl::close_trace(", 1)[1].split("exit(2);", 1)[0]
    assert "gcl::trace_failure(" in body
    assert "its trace in %s" not in text and "opt.dir.c_str(), trace_failed" not in text


def test_packed_static_fields_survive_the_round_trip(tmp_path):
    """gcl_before's static fields travel packed (gcl_record.h): tracer/test/pack_test.cpp packs
    every opcode id, width, operand count and flag the tool can pass and unpacks them as the
    device does."""
    exe = _build(tmp_path, "pack_test", "-O1", "-Wextra")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "pack: all cases hold" in run.stdout


def test_launch_scope_keeps_cta0_of_small_grids_and_the_sm_of_large_ones(tmp_path):
    """Which CTAs a launch records (gcl_record.h, launch_scope / in_scope), over 20,000 random
    grids and block-scheduler placements in tracer/test/scope_test.cpp: every CTA with
    GCL_TRACE_SM=-1; CTA (0,0,0) alone for a grid of fewer CTAs than SMs, where SM 0 holds no
    CTA in about half the draws (631 of 1058 REAL LLM launches had none on an H200); the SM's
    CTAs otherwise, which for a grid of at least one CTA per SM is never none; under
    GCL_CTA_SCOPE=id, the SM's round-robin share by linear CTA id wherever those CTAs ran (its
    32-bit remainder checked against 64-bit arithmetic on grids up to CUDA's limits)."""
    exe = _build(tmp_path, "scope_test", "-O1", "-Wextra")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "scope: all cases hold" in run.stdout
    small, lost = (int(x) for x in re.search(r"\((\d+) small grids, (\d+) of them", run.stdout).groups())
    assert 0 < lost < small
    assert int(re.search(r"(\d+) CTAs kept by id that ran elsewhere", run.stdout).group(1)) > 0


def test_injected_code_asks_the_shared_scope_rule():
    """The device code and scope_test must use the one rule in gcl_record.h: a second copy of the
    scope test inside inject_funcs.cu would let the tested rule and the traced one drift."""
    text = (ROOT / "tracer" / "inject_funcs.cu").read_text()
    assert "gcl::in_scope(" in text and "gcl::cta_linear_mod(" in text
    assert "0xffffffff" not in text and "0xfffffffe" not in text
    assert "%" not in text.split("gcl_in_launch_scope(uint32_t scope)", 1)[1].split("\n}\n", 1)[0]
    for function in ("gcl_fill_common", "gcl_count"):
        body = text.split(function + "(", 1)[1].split("\n}\n", 1)[0]
        assert "gcl_in_launch_scope(launch_sm)" in body, function


# 32-bit words an injected function's parameter takes; 64-bit ones start on an even word
_WORDS = {"int": 1, "int32_t": 1, "uint32_t": 1, "bool": 1, "uint64_t": 2, "int64_t": 2}


def _argument_words(signature: str) -> tuple[int, list[str]]:
    words, odd = 0, []
    for param in (p.strip() for p in signature.split(",")):
        if param == "...":
            continue
        kind, name = param.rsplit(" ", 1)
        size = _WORDS[kind.split()[-1]]
        if size == 2 and words % 2:
            odd.append(name)
            words += 1
        words += size
    return words, odd


@pytest.mark.parametrize("function", ["gcl_before", "gcl_after", "gcl_count"])
def test_injected_calls_stay_inside_what_nvbit_passes(function):
    """On the H200 every instrumented launch faulted with an illegal address while gcl_before took
    19 scalar and three 64-bit arguments (25 words with alignment; NVlabs/NVBit#160); packed into 15
    it ran. Accel-Sim's tracer passes 22 words. The fixed parameters plus the register values a
    call can add (kMaxSrc sources before, kMaxDst destinations after) must stay within that, with
    every 64-bit parameter on an even word."""
    text = (ROOT / "tracer" / "inject_funcs.cu").read_text()
    m = re.search(r'extern "C" __device__ __noinline__ void ' + function + r"\(([^)]*)\)", text)
    assert m, function
    signature = " ".join(m.group(1).split())
    words, odd = _argument_words(signature)
    variadic = {"gcl_before": 5, "gcl_after": 2}.get(function, 0) if signature.endswith("...") else 0
    assert not odd, f"{function}: 64-bit parameters on an odd word: {odd}"
    assert words + variadic <= 22, f"{function}: {words} fixed words + {variadic} register values"
    assert _argument_words("int pred, uint32_t a, int32_t b, int32_t c, int32_t d, uint64_t addr") == (8, ["addr"])


def _edge_address_records(seed: int, n: int) -> list[str]:
    """format_test RECORD lines (no values) whose addresses sit on the compressor's edges: strides
    at and just past the int32 limits, negative strides, bases next to 0 and 2^64 (so a lane's
    address wraps), one lane off the stride, masks with gaps, one lane, every lane and none."""
    rng = np.random.default_rng(seed)
    bases = [0, 1, 2**32 - 4, 2**63 - 8, 2**63, 2**64 - 64, 2**64 - 1]
    strides = [0, 1, -1, 4, -4, 16, -128, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**32, -2**40, 2**63 - 1, -2**63]
    masks = [0xFFFFFFFF, 0, 1, 0x80000000, 0x0000FF00, 0xFFFF0000, 0x7FFFFFFF, 0xFFFFFFFE, 0xF0F0F0F0,
             0x80000001, 0x00010000]
    recs = []
    for i in range(n):
        mask = masks[i % len(masks)] if rng.random() < 0.7 else int(rng.integers(0, 2**32))
        base = bases[int(rng.integers(0, len(bases)))] if rng.random() < 0.6 else int(rng.integers(0, 2**64, dtype=np.uint64))
        stride = strides[int(rng.integers(0, len(strides)))] if rng.random() < 0.8 else int(rng.integers(-2**63, 2**63))
        lanes = np.flatnonzero([(mask >> b) & 1 for b in range(32)])
        addrs = [0] * 32
        # the stride runs over the active lanes, as the compressor sees them
        for j, lane in enumerate(lanes):
            addrs[lane] = (base + stride * j) % 2**64
        kind = rng.random()
        if kind < 0.15 and lanes.size:
            lane = int(rng.choice(lanes))
            addrs[lane] = (addrs[lane] + int(rng.integers(1, 2**40))) % 2**64  # one lane off the stride
        elif kind < 0.3:
            addrs = [int(a) for a in rng.integers(0, 2**64, size=32, dtype=np.uint64)]
        op = [1, 2, 6, 9][int(rng.integers(0, 4))]
        cta = [int(rng.choice([0, 1, 2**31 - 2])), int(rng.choice([0, 65534])), int(rng.choice([0, 65534]))]  # up to the grid limits
        recs.append(" ".join(map(str, ["RECORD", 0, 0, *cta, int(rng.integers(0, 32)), 0, format(16 * i, "x"),
                                       format(mask, "x"), op, MEM[op], 1, 5, 2, 6, 7, int(rng.integers(0, 2**64, dtype=np.uint64)),
                                       0, *(format(a, "x") for a in addrs)])))
    return recs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tracer_and_python_writer_write_the_same_address_lines(format_test, tmp_path, seed):
    """The NVBit tool (gcl_format.h) and gclsampler's writer (writer._addr_modes) compress a memory
    instruction's addresses alike, byte for byte: mode 1 only for contiguous active lanes whose
    stride is constant and fits int32, otherwise mode 2 with signed 64-bit deltas; and a warp
    predicated off entirely (mask 0) lists no address at all (`4 0`). Lines are compared after
    the tool's CTA and warp fields, which the grouped file moves into its headers."""
    from gclsampler.trace.writer import instruction_text

    recs = _edge_address_records(seed, 400)
    text = (f"HEADER _Z6kernelPf 3 2147483647 65535 65535 1024 1 1 0 0\nOPCODES {len(OPCODES)} {' '.join(OPCODES)}\n"
            + "\n".join(recs) + "\nEND\n")
    out = subprocess.run([str(format_test), "auto"], input=text, capture_output=True, text=True, check=True).stdout
    path = tmp_path / "kernel-3.trace"
    path.write_text(out)
    t = read_kernel(path)
    assert t.n_insts == len(recs)
    by_pc = {}
    for line in out.splitlines():
        if line and line[0].isdigit():
            tok = line.split(" ")
            by_pc[int(tok[4], 16)] = " ".join(tok[4:])
    body, _ = instruction_text(t, values=False)
    py = body.decode().splitlines()
    assert len(py) == len(recs)
    for line in py:
        assert by_pc[int(line.split(" ")[0], 16)] == line
    # every case was there: stride lines, delta lines, and mask-0 lines without addresses
    assert any(" 1 0x" in ln for ln in py) and any(" 2 0x" in ln for ln in py)
    assert any(" 00000000 " in ln for ln in py)


def _sanitized(tmp_path: Path, source: str) -> Path:
    """tracer/test/<source>.cpp built with AddressSanitizer and UBSan (any report fails the run);
    skips where g++ has no sanitizer runtime."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    exe = tmp_path / f"{source}-asan"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined",
                            "-fno-sanitize-recover=all", f"-I{ROOT / 'tracer'}",
                            str(ROOT / "tracer" / "test" / f"{source}.cpp"), "-o", str(exe)],
                           capture_output=True, text=True)
    if build.returncode != 0 or subprocess.run([str(exe), "x"], capture_output=True).returncode == 127:
        pytest.skip(f"no sanitizer runtime for g++: {build.stderr[-200:]}")
    return exe


def test_formatter_is_memory_safe_on_the_largest_lines(tmp_path):
    """Under ASan/UBSan, the largest records the tool can format: a 100,000-character kernel name,
    a 2,000-character opcode, every operand slot at its largest register (R255, UR63), 32 lanes of
    64-bit addresses in mode 0 and in mode 2 deltas of +-2^63, seven divergent 32-bit value rows,
    extreme CTA ids, line numbers and immediates; the lines parse back whole. Then the 20,000
    random records of format_speed (every mask, mode and policy) against the printf oracle."""
    exe = _sanitized(tmp_path, "format_test")
    name = "_Z1kIN" + "A" * 100_000 + "EEvv"
    ops = ["X" * 2000, "LDG.E.128.SYS"]
    lanes = [format(a, "x") for a in [2**64 - 1, 0] * 16]  # every delta is -(2^64-1) or +(2^64-1): wraps
    vals = [format(0xFFFFFFFF if j % 2 else j * 0x01010101, "x") for j in range(32)]
    recs = []
    for i, mask in enumerate([0xFFFFFFFF, 0xAAAAAAAA, 0x80000000, 0]):
        for op in (0, 1):
            # 7 operands: 2 destinations, 5 sources (kMaxDst, kMaxSrc)
            head = ["RECORD", 0, 0, 2**31 - 2, 65534, 65534, 31, 2**31 - 1, format(0xFFFFFFF0 - 32 * i - 16 * op, "x"),
                    format(mask, "x"), op, 16 if op == 1 else 0, 2, 255, 256 + 63, 5, 255, 256 + 63, 254, 256, 0,
                    2**63, 1]
            recs.append(" ".join(map(str, [*head, *lanes, *(vals * 7)])))
    text = (f"HEADER {name} {2**63} 2147483647 65535 65535 1024 1 1 1 1\nOPCODES 2 {' '.join(ops)}\n"
            + "\n".join(recs) + "\nEND\n")
    for policy in ("list", "delta", "auto"):
        run = subprocess.run([str(exe), policy], input=text, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        path = tmp_path / f"kernel-{policy}.trace"
        path.write_text(run.stdout)
        t = read_kernel(path)
        assert t.header.name == name and t.header.kernel_id == 2**63 and t.n_insts == len(recs)
        assert ops[0] in t.opcode_table
        full = [i for i in range(t.n_insts) if int(t.mask[i]) == 0xFFFFFFFF and int(t.mem_width[i])]
        assert full and all(t.addr_ptr[i + 1] - t.addr_ptr[i] == 32 for i in full)
        assert t.addrs[t.addr_ptr[full[0]]] == 2**64 - 1
    speed = _sanitized(tmp_path, "format_speed")
    run = subprocess.run([str(speed), "check", "20000", "7"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.parametrize("value, out, line", [
    (None, "7", None),  # unset: the default
    ("", "7", None),
    ("10", "10", None),
    ("0", "0", None),
    ("-1", None, "GCL_X=-1 must be in the test's range"),  # GCL_KERNEL_BEGIN=-1 traced no launch
    ("11", None, "GCL_X=11 must be in the test's range"),
    ("99999999999999999999", None, "GCL_X=99999999999999999999 must be in the test's range"),  # strtoll clamped it
    ("3x", None, "GCL_X=3x is not an integer"),
    ("x", None, "GCL_X=x is not an integer"),
])
def test_tracer_settings_out_of_range_are_one_line_and_exit_2(tmp_path, value, out, line):
    """gcl_env.h: a setting read wrong is found only after a GPU run (a negative GCL_KERNEL_BEGIN,
    cast to uint64, traced nothing; 2^44 MiB of GCL_BUFFER_MB wrapped to a tiny buffer; an
    out-of-range number was clamped by strtoll without a word). Each is one line and status 2."""
    import os

    exe = _build(tmp_path, "env_test", "-O1", "-Wextra")
    env = {k: v for k, v in os.environ.items() if k != "GCL_X"}
    if value is not None:
        env["GCL_X"] = value
    run = subprocess.run([str(exe), "GCL_X", "7", "0", "10"], env=env, capture_output=True, text=True)
    if out is not None:
        assert (run.returncode, run.stdout.strip(), run.stderr) == (0, out, "")
    else:
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr == f"gcl_tracer: {line}\n"


def test_every_numeric_tracer_setting_is_range_checked():
    """gcl_tracer.cu reads every number through gcl_env.h with a range (no bare strtoll left), and
    GCL_BUFFER_MB's bound keeps its byte count (MiB << 20) within 64 bits."""
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    assert "strtoll" not in src and "strtoul" not in src and "atoi" not in src
    for name in ("GCL_TRACE_SM", "GCL_KERNEL_BEGIN", "GCL_KERNEL_END", "GCL_MAX_INSTS_PER_WARP", "GCL_BUFFER_MB",
                 "GCL_TIME_GATE_US", "GCL_VALUES", "GCL_UNIFORM", "GCL_TIME_ONLY", "GCL_LINEINFO", "GCL_VERBOSE",
                 "GCL_COUNT_ONLY"):
        assert re.search(rf'gcl::env_(int|count|flag)\("{name}"', src), name
    header = (ROOT / "tracer" / "gcl_env.h").read_text()
    bound = int(re.search(r"kMaxBufferMb = int64_t\(1\) << (\d+)", header).group(1))
    assert bound + 20 < 64


def test_every_cuda_memcpy_of_the_tracer_is_checked():
    """GCL_BUFFER_MB's drain ignored cudaMemcpy's status, so a chunk that did not copy back left the
    staging buffer's stale bytes to be written as the launch's records. Every cudaMemcpy's result is
    kept, and a failed drain stops the tool naming the launch (a host-side check: no GPU here)."""
    src = (ROOT / "tracer" / "gcl_tracer.cu").read_text()
    calls = re.findall(r"^(.*)\bcudaMemcpy\(", src, flags=re.M)
    assert calls and all(re.search(r"=\s*$", before) for before in calls), calls
    assert re.search(r"if \(drain_copy_error != cudaSuccess\) \{[^}]*exit\(1\);", src)
    assert "drain_copy_error == cudaSuccess) cur.merger.push" in src  # no failed copy's bytes reach the trace
