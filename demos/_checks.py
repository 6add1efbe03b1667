"""Input checks shared by the demos modules (not a lesson of its own)."""

import math
import numbers

import numpy as np


def bad_leaf(x):
    """`(entry,)` for the first entry of a nested list that is not a real number (bools count), else `()`."""
    stack = [x]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, np.ndarray):
            if item.dtype.kind not in "iuf":
                return (item,)
        elif isinstance(item, bool) or not isinstance(item, numbers.Real):
            return (item,)
    return ()


def as_int(name, value, low, high):
    """``value`` as an int in [low, high] (a whole float counts; bools do not), else a readable ValueError."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}.")
    return int(value)


def as_number(name, value):
    """``value`` as a finite float64 (bools do not count), else a readable ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} is too large to be a float64 number.") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}.")
    return value
