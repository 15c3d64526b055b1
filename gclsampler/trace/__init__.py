"""Reading and writing Accel-Sim / NVBit SASS traces (see docs/trace-format.md)."""

from gclsampler.trace.types import (  # noqa: F401
    NO_REG,
    InvocationInfo,
    KernelHeader,
    KernelTrace,
    reg_code,
    reg_name,
)
