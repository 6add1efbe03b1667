"""Input checks shared by the demos modules (not a lesson of its own)."""

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
