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
