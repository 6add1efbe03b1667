"""Input checks shared by the demos modules (not a lesson of its own)."""

import math
import numbers

import numpy as np

MAX_ELEMENTS = 1_000_000  # the most numbers one input array may hold, so a widget cannot freeze the tab


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


def as_int(name, value, low, high, grouping=""):
    """``value`` as an int in [low, high] (a whole float counts; bools do not), else a readable ValueError.

    ``grouping=","`` writes the numbers in the message with thousands separators (1,000,000).
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low:{grouping}} and {high:{grouping}}, got {value:{grouping}}.")
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


def as_number_between(name, value, low, high):
    """``value`` as a float in [low, high] (bools and NaN do not count), else a readable ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}.")
    return float(value)


def as_array(name, x, what="numbers"):
    """Nested lists of real numbers (or a numeric ndarray) as a float64 array of any shape.

    Args:
        name: The argument's name, for the messages.
        x: What the widget passed.
        what: What the list holds, for the message when `x` is no list ("numbers", "vectors").

    Returns:
        A new float64 array; its shape, size and values are the caller's to check
        (see `as_finite`).

    Raises:
        ValueError: If `x` is text, a scalar, ragged or holds anything but real numbers.
    """
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "iuf":
            raise ValueError(f"{name} must hold numbers, got dtype {x.dtype}.")
        return x.astype(np.float64)
    if isinstance(x, (str, bytes, dict)) or not hasattr(x, "__iter__"):
        raise ValueError(f"{name} must be a list of {what}, got {type(x).__name__}.")
    bad = bad_leaf(x)
    if bad:
        raise ValueError(f"{name} contains {bad[0]!r}; every entry must be a number.")
    try:
        return np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a rectangular list of numbers (no text, no ragged rows).") from None
    except OverflowError:
        raise ValueError(f"{name} has a number too large for float64.") from None


def as_finite(name, a):
    """``a`` itself if it holds at most `MAX_ELEMENTS` numbers, all finite, else a readable ValueError."""
    if a.size > MAX_ELEMENTS:
        raise ValueError(f"{name} has {a.size} numbers; the demos accept at most {MAX_ELEMENTS}.")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity; every entry must be finite.")
    return a
