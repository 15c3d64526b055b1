"""Argument types shared by the command groups."""

from __future__ import annotations

import argparse
from pathlib import Path


def path_arg(text: str) -> Path:
    """A file or directory argument that may not be empty.

    Why: ``Path("")`` is ``.``, so ``--out "$OUT"`` with OUT unset wrote ``plan.json`` under the
    name ``.`` (the working directory), and an empty input path read the working directory."""
    if not text:
        raise argparse.ArgumentTypeError("empty path (an unset shell variable?)")
    return Path(text)
