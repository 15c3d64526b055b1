"""What counts as an integer or a real number in a parameter, shared by every check of one.

Why one place: numpy's scalars (``np.int64`` from a profile column, ``np.float32`` from an
array) are numbers a user means, while ``True`` is not a count or a fraction although Python
takes it as 1; each module that checked its own parameters drew that line a little differently.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["is_count", "is_int", "is_real", "is_whole"]


def is_int(v: Any) -> bool:
    """A whole number, numpy's included; not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def is_real(v: Any) -> bool:
    """A real number, numpy's included; not a bool (``True`` is no error bound)."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def is_whole(v: Any) -> bool:
    """A whole number of any sign, a whole float such as 30.0 included.

    Why floats: ``--set floor=30.0`` and a YAML ``30.0`` arrive as floats and mean 30; 30.7,
    ``True``, NaN and infinity do not.
    """
    return is_real(v) and math.isfinite(v) and float(v).is_integer()


def is_count(v: Any) -> bool:
    """A whole number >= 1 (a sample or cluster count), a whole float such as 30.0 included."""
    return is_whole(v) and v >= 1
