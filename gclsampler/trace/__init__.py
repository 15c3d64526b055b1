"""Reading and writing Accel-Sim / NVBit SASS traces (see docs/trace-format.md).

Public API::

    read_kernel(path) -> KernelTrace          grouped/raw, plain/.gz/.xz/.zst, v3-v5, value extension
    write_kernel(trace, path, *, values=True) grouped .traceg (+ value extension), compression by suffix
    list_invocations(dir) -> [InvocationInfo] launch order, headers only
    iter_kernels(dir, invocations=None)       one KernelTrace at a time
    write_kernelslist(dir, file_names)        kernelslist.g (Memcpy lines allowed)
    export_accelsim(src, dst, invocations=None) plain Accel-Sim traces + kernelslist.g
    group_raw_dir(raw_dir, out_dir)           raw kernel-N.trace -> grouped kernel-N.traceg
    read_header(path), trace_info(dir), TraceFormatError
"""

from gclsampler.trace.reader import TraceFormatError, read_header, read_kernel  # noqa: F401
from gclsampler.trace.types import (  # noqa: F401
    NO_REG,
    InvocationInfo,
    KernelHeader,
    KernelTrace,
    reg_code,
    reg_name,
)
from gclsampler.trace.workload import (  # noqa: F401
    export_accelsim,
    group_raw_dir,
    iter_kernels,
    list_invocations,
    read_kernelslist,
    trace_info,
    write_kernelslist,
)
from gclsampler.trace.writer import write_kernel  # noqa: F401
