"""Training in 16 bits: what float16 and bfloat16 keep, what they lose, and the two fixes.

A float stores a sign, an exponent and a mantissa (significand). The exponent's bits set the
*range* (the largest and smallest magnitudes), the mantissa's the *precision* (the gap between
neighbouring numbers, relative to their size):

    format    exponent  mantissa   largest      smallest normal   gap above 1 (epsilon)
    float32        8        23     3.4e38       1.2e-38           1.2e-7
    float16        5        10     65504        6.1e-5            9.8e-4
    bfloat16       8         7     3.4e38       1.2e-38           7.8e-3

Mixed-precision training (Micikevicius et al., 2018) runs the forward and backward passes in 16
bits and meets two failures with two fixes:

1. `flush`: small gradients (a sample: `gradients`) fall below float16's range and become 0. **Loss scaling**
   multiplies the loss (so every gradient) by S before the backward pass and divides the
   gradients by S before the update; `loss_scale_schedule` is the dynamic version (halve S
   and skip the step when a gradient overflows, double it after a run of good steps).
   bfloat16 has float32's exponent, so its range needs no scaling (Kalamkar et al., 2019).
2. `stale_updates`: an update smaller than half the gap between a weight and its neighbour is
   rounded away, so a 16-bit weight stops moving. The fix is an float32 **master copy** of the
   weights that the optimizer updates; the 16-bit weights are copies of it.

`round_to` rounds to a format as PyTorch does (round to nearest, ties to even; bfloat16 from the
float32 value), which the tests hold it to.
"""

import numpy as np

from demos._checks import as_array as _as_array
from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between

# (exponent bits, mantissa bits); one sign bit each.
FORMATS = {"float32": (8, 23), "float16": (5, 10), "bfloat16": (8, 7)}
MAX_SAMPLES = 200_000
MAX_STEPS = 100_000


def _as_format(fmt):
    if fmt not in FORMATS:
        raise ValueError(f"The format must be one of {', '.join(FORMATS)}, got {fmt!r}.")
    return fmt


def format_info(fmt: str = "float16") -> dict:
    """A format's layout and the numbers it implies.

    Args:
        fmt: "float32", "float16" or "bfloat16".

    Returns:
        bits, exponent_bits, mantissa_bits, max (largest finite), smallest_normal,
        smallest_subnormal, epsilon (the gap between 1 and the next number) and digits
        (decimal digits of precision, log10(2^(mantissa + 1))).

    Examples:
        >>> format_info("float16")["max"]
        65504.0
    """
    e, m = FORMATS[_as_format(fmt)]
    bias = 2 ** (e - 1) - 1
    return {
        "format": fmt,
        "bits": 1 + e + m,
        "exponent_bits": e,
        "mantissa_bits": m,
        "max": float((2 - 2.0**-m) * 2.0**bias),
        "smallest_normal": float(2.0 ** (1 - bias)),
        "smallest_subnormal": float(2.0 ** (1 - bias - m)),
        "epsilon": float(2.0**-m),
        "digits": round(float((m + 1) * np.log10(2)), 2),
    }


def _round(x, fmt):
    """float64 array `x` rounded to `fmt` (returned as float64; too large: ±inf)."""
    with np.errstate(over="ignore"):
        x32 = np.asarray(x, dtype=np.float64).astype(np.float32)
        if fmt == "float16":
            return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)
    if fmt == "float32":
        return x32.astype(np.float64)
    # bfloat16: the top 16 bits of the float32, rounded to nearest, ties to even
    bits = x32.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(x32), np.nan, out)


def _gap(value, direction, fmt):
    """The distance from `value` (exact in `fmt`) to its neighbour in `fmt` on the side of `direction`."""
    e, m = FORMATS[fmt]
    lowest_exponent = 2 - 2 ** (e - 1)  # the smallest normal's: 1 - bias
    if value == 0:
        return 2.0 ** (lowest_exponent - m)
    exponent = max(int(np.floor(np.log2(abs(value)))), lowest_exponent)
    spacing = 2.0 ** (exponent - m)
    toward_zero = (direction < 0) == (value > 0)
    if toward_zero and abs(value) == 2.0**exponent and exponent > lowest_exponent:
        return spacing / 2  # just below a power of two the numbers are twice as dense
    return spacing


def round_to(values: list, fmt: str = "bfloat16") -> dict:
    """Numbers rounded to a format, and how far each moved.

    Args:
        values: The numbers.
        fmt: "float32", "float16" or "bfloat16".

    Returns:
        rounded (None for a number that overflows to ±inf), relative_error per number (None
        where it is 0 or the number overflowed), and overflow (how many became ±inf).

    Examples:
        >>> round_to([0.1, 70000.0], "float16")["rounded"]
        [0.0999755859375, None]
    """
    x = _as_array("values", values)
    r = _round(x, _as_format(fmt))
    finite = np.isfinite(r)
    rel = np.full(x.shape, np.nan)
    ok = finite & (x != 0)
    rel[ok] = np.abs(r[ok] - x[ok]) / np.abs(x[ok])
    return {
        "format": fmt,
        "rounded": [float(v) if f else None for v, f in zip(r.ravel(), finite.ravel())],
        "relative_error": [None if np.isnan(v) else float(v) for v in rel.ravel()],
        "overflow": int((~finite).sum()),
    }


def _gradients(n, seed):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], size=n) * 2.0 ** rng.normal(-26.0, 6.0, size=n)


def gradients(n: int = 20_000, seed: int = 0) -> list:
    """A made-up sample of gradient values spread over many powers of two, as real ones are:
    log2 of the magnitudes is normal with mean -26 and standard deviation 6 (half the values
    below 2^-26, about 1.5e-8), signs random.

    Examples:
        >>> len(gradients(5))
        5
    """
    return _gradients(_as_int("n", n, 1, MAX_SAMPLES, grouping=","), seed).tolist()


def flush(scale: float = 1.0, fmt: str = "float16", n: int = 20_000, seed: int = 0) -> dict:
    """What happens to a sample of gradients (`gradients`) multiplied by `scale` and stored in `fmt`.

    Args:
        scale: The loss scale S (gradients are multiplied by it), 2^-10 to 2^40.
        fmt: "float32", "float16" or "bfloat16".
        n: How many gradients.
        seed: The sample's seed.

    Returns:
        Shares of the gradients that became zero, that are subnormal (kept with fewer bits),
        normal, and that overflowed to ±inf; the log2 histogram of the scaled magnitudes
        (`bins` edges, `counts`) and the format's limits as log2 values.

    Examples:
        >>> flush(1.0)["zero"] > flush(2.0**16)["zero"]
        True
    """
    scale = _between("scale", scale, 2.0**-10, 2.0**40)
    n = _as_int("n", n, 1, MAX_SAMPLES, grouping=",")
    info = format_info(_as_format(fmt))
    g = _gradients(n, seed) * scale
    r = _round(g, fmt)
    mag = np.abs(r)
    zero = mag == 0
    inf = ~np.isfinite(r)
    sub = ~zero & ~inf & (mag < info["smallest_normal"])
    edges = np.arange(-64, 33, 4)
    counts, _ = np.histogram(np.clip(np.log2(np.abs(g)), edges[0], edges[-1]), bins=edges)
    return {
        "format": fmt,
        "scale": scale,
        "zero": float(zero.mean()),
        "subnormal": float(sub.mean()),
        "normal": float((~zero & ~inf & ~sub).mean()),
        "overflow": float(inf.mean()),
        "bins": edges.tolist(),
        "counts": counts.tolist(),
        "log2_smallest_subnormal": float(np.log2(info["smallest_subnormal"])),
        "log2_smallest_normal": float(np.log2(info["smallest_normal"])),
        "log2_max": float(np.log2(info["max"])),
    }


def loss_scale_schedule(overflows: list, init_scale: float = 2.0**16, growth: float = 2.0, backoff: float = 0.5, interval: int = 2000) -> dict:
    """Dynamic loss scaling: the scale used at each step, and which steps are skipped.

    A step whose gradients hold an inf or NaN (`overflows[i]` true) is skipped and the scale is
    multiplied by `backoff`; after `interval` good steps in a row it is multiplied by `growth`.

    Args:
        overflows: Per step, whether its scaled gradients overflowed.
        init_scale: The first scale.
        growth: Factor after `interval` good steps.
        backoff: Factor after an overflow.
        interval: Good steps in a row before the scale grows.

    Returns:
        scales (the scale each step used), skipped (steps whose update was dropped), final_scale.

    Examples:
        >>> loss_scale_schedule([False, True, False, False], init_scale=8.0, interval=2)["scales"]
        [8.0, 8.0, 4.0, 4.0]
    """
    flags = [bool(f) for f in overflows]
    _as_int("the number of steps", len(flags), 1, MAX_STEPS, grouping=",")
    scale = _between("init_scale", init_scale, 1.0, 2.0**64)
    growth = _between("growth", growth, 1.0, 1024.0)
    backoff = _between("backoff", backoff, 1e-6, 1.0)
    interval = _as_int("interval", interval, 1, MAX_STEPS, grouping=",")
    scales, skipped, good = [], [], 0
    for step, overflow in enumerate(flags):
        scales.append(scale)
        if overflow:
            skipped.append(step)
            scale *= backoff
            good = 0
        else:
            good += 1
            if good == interval:
                scale *= growth
                good = 0
    return {"scales": scales, "skipped": skipped, "final_scale": scale}


def stale_updates(weight: float = 1.0, update: float = 1e-3, steps: int = 1000, fmt: str = "bfloat16") -> dict:
    """Subtract `update` from a weight `steps` times, the weight kept in `fmt`, and in float32
    beside it as a master copy whose rounded value is the one the model would use.

    Args:
        weight: The starting weight.
        update: What each step subtracts (learning rate × gradient).
        steps: How many steps.
        fmt: The 16-bit format (or float32).

    Returns:
        in_format (the weight kept in `fmt` after every step), master (the float32 copy),
        master_in_format (the copy rounded to `fmt`), exact (the starting weight, rounded to `fmt`, minus steps * update), and
        half_gap (half the gap between the starting weight and its neighbour in `fmt` on the
        side the update moves it: an update smaller than that is rounded away).

    Examples:
        >>> stale_updates(1.0, 1e-3, 1000, "bfloat16")["in_format"]
        1.0
    """
    fmt = _as_format(fmt)
    weight = _between("weight", weight, -1e4, 1e4)
    update = _between("update", update, -1e4, 1e4)
    steps = _as_int("steps", steps, 1, MAX_STEPS, grouping=",")
    start = float(_round(weight, fmt))  # the weight as the format holds it
    w16 = np.array([start])
    w32 = np.array([start], dtype=np.float32)
    step = np.float32(update)
    for _ in range(steps):
        w16 = _round(w16 - update, fmt)
        w32 = (w32 - step).astype(np.float32)
    gap = _gap(start, -update, fmt)
    return {
        "format": fmt,
        "in_format": float(w16[0]),
        "master": float(w32[0]),
        "master_in_format": float(_round(w32.astype(np.float64), fmt)[0]),
        "exact": start - steps * update,
        "half_gap": float(gap / 2),
    }
