"""CSV records with the physical line each one starts on: the one reader behind every located
CSV error (profile exports, ``plan reconstruct``'s results).

Why the start: a quote left open runs on through later lines until the csv module's field
limit (128 KiB) stops it, thousands of lines on; the line to fix is where the record began.
"""

from __future__ import annotations

import csv
from typing import Callable, Iterator


def csv_records(reader, fail: Callable[[int, str], Exception]) -> Iterator[tuple[int, list[str]]]:
    """``(line, row)`` of each record ``reader`` (a ``csv.reader`` over lines that end at LF, CR
    or CRLF, e.g. ``io.StringIO(text, newline="")``) has left; a record the csv module cannot
    read raises ``fail(line, message)`` for the line it starts on."""
    start = reader.line_num + 1
    try:
        for row in reader:
            yield start, row
            start = reader.line_num + 1
    except csv.Error as exc:
        hint = " (an unclosed quote?)" if "field limit" in str(exc) else ""
        raise fail(start, f"malformed CSV: {exc}{hint}") from None
