"""What counts as an integer or a real number in a parameter, shared by every check of one.

Why one place: numpy's scalars (``np.int64`` from a profile column, ``np.float32`` from an
array) are numbers a user means, while ``True`` is not a count or a fraction although Python
takes it as 1; each module that checked its own parameters drew that line a little differently.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

__all__ = ["is_int", "is_real"]


def is_int(v: Any) -> bool:
    """A whole number, numpy's included; not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def is_real(v: Any) -> bool:
    """A real number, numpy's included; not a bool (``True`` is no error bound)."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
