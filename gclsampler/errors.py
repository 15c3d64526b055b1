"""The one base class the CLI knows how to turn into a single error line.

Each stage defines its own subclass next to the code that raises it
(``TraceFormatError`` in ``gclsampler.trace``, ``ProfileFormatError`` in
``gclsampler.profile``...). The CLI catches ``GclError`` and prints ``str(err)``,
so the message itself must name the file, line and field (or config key).
"""

from __future__ import annotations


class GclError(Exception):
    """Bad input or configuration that the user can fix; never a bug in gclsampler."""


def located(path: object, line: int | None, field: str | None, message: str) -> str:
    """Format ``path:line: field: message`` so every stage reports bad input the same way."""
    where = str(path)
    if line is not None:
        where += f":{line}"
    if field:
        return f"{where}: {field}: {message}"
    return f"{where}: {message}"


def check_seed(value: object, key: str, error: type[GclError] = GclError) -> int:
    """``value`` as a seed, or ``error`` naming ``key``.

    Why one range for every stage: numpy's ``default_rng`` refuses negative seeds with a
    traceback, scikit-learn refuses seeds >= 2**32, torch refuses >= 2**64, and the clustering
    folds seeds to 32 bits, so -1 and 2**32 - 1 gave the same plan. [0, 2**32) means the same
    thing everywhere. Here, in the lowest module, so training and the plan stage share it.
    """
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < 2**32:
        raise error(f"{key}: must be an integer in [0, 2**32), found {value!r}")
    return int(value)
