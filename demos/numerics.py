"""Why the same computation can give different answers: floating-point sums.

Floating-point addition rounds after every operation, so it is not associative:
`(a + b) + c` and `a + (b + c)` can differ in the last bits. This module shows the
three consequences that matter for serving language models:

1. `sum_orders`: the same numbers summed in different orders give different sums.
2. `batch_sums`: the same row reduced alone or inside a batch gives different sums,
   when the kernel splits the reduction differently depending on the batch size
   (many GPU kernels do, to keep all cores busy).
3. `argmax_flip`: so two logits that are within rounding error of each other can
   swap places, and greedy decoding (temperature 0) picks a different token for
   the same prompt depending on what else was in the batch.

Every sum here is *sequential*: `s = x[0]; s = s + x[1]; s = s + x[2]; ...`, each
step rounded to the chosen dtype. The exact sum, computed with `math.fsum` (which
rounds only once, at the end), is the yardstick. Errors are also given in *ulps*:
multiples of the spacing between adjacent numbers of the dtype near the exact sum.
"""

import math

import numpy as np

from demos import _checks

DTYPES = ("float16", "float32", "float64")
MAX_ELEMENTS = 2_000_000  # n * num_orders cap, so a widget cannot freeze the tab
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
WORKERS = 64  # parallel workers the model kernel below shares among the rows of a batch
FLIP_TOKENS = (" yes", " no")


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_int(name, value, low, high):
    return _checks.as_int(name, value, low, high, grouping=",")


def _as_dtype(dtype):
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}.")
    return np.dtype(dtype)


# ----------------------------------------------------------------------------
# the math


def _sequential_sums(rows, dtype):
    """Left-to-right sum of each row of `rows` (R, n), rounding to `dtype` after every add."""
    return np.add.accumulate(rows.astype(dtype), axis=1, dtype=dtype)[:, -1]  # (R,)


def _split_sum(x, splits, dtype):
    """Cut `x` (n,) into `splits` contiguous chunks, sum each, then sum the partial sums."""
    chunks = np.array_split(x.astype(dtype), splits)
    partials = np.array([_sequential_sums(c[None, :], dtype)[0] for c in chunks if c.size], dtype=dtype)
    return _sequential_sums(partials[None, :], dtype)[0]


def _splits_for(batch_size):
    """The kernel's choice: the more rows in the batch, the fewer workers per row."""
    return max(1, WORKERS // batch_size)


def _ulp(value, dtype):
    """Spacing of `dtype` numbers at `value` (for errors measured in ulps)."""
    return float(np.spacing(np.abs(np.array(value, dtype=dtype))))


def _error(value, exact, ulp):
    err = float(value) - exact
    return {"value": float(value), "error": err, "error_ulps": err / ulp if ulp > 0 else 0.0}


def _exact_sum(x):
    """The exact sum of the numbers in `x`, rounded once to float64."""
    return math.fsum(x.astype(np.float64).tolist())


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def sum_orders(n: int = 1000, dtype: str = "float32", seed: int = 0, num_orders: int = 200) -> dict:
    """Sum the same n numbers in many orders and collect the different results.

    The numbers are `n` draws from a standard normal distribution (like activations),
    rounded to `dtype`. Order 0 is the original order; the others are random
    permutations. Some named orders are added for comparison, and `pairwise` is
    NumPy's own `np.sum`, which adds in a tree rather than left to right.

    Args:
        n: How many numbers, 2 to 100,000.
        dtype: `"float16"`, `"float32"` or `"float64"`.
        seed: Non-negative integer seed for the numbers and the orders.
        num_orders: How many orders to try, 1 to 1,000 (`n * num_orders` <= 2,000,000).

    Returns:
        `n`, `dtype`, `exact` (the exact sum of the rounded numbers, as float64),
        `ulp` (the dtype's spacing at `exact`), `sums` (one per order),
        `distinct` (each different sum once, ascending, with `value`, `count`,
        `error` and `error_ulps`), `num_distinct`, `min`, `max`, `spread`
        (max - min), `spread_ulps`, `named` (orders `original`, `ascending`,
        `descending`, `small_to_large` and `large_to_small` by magnitude, and
        `pairwise`, each with `value`, `error`, `error_ulps`) and `preview` (the
        first 8 numbers).

    Raises:
        ValueError: On a bad size, dtype or seed.
    """
    n = _as_int("n", n, 2, 100_000)
    dt = _as_dtype(dtype)
    seed = _as_int("seed", seed, 0, 2**63 - 1)
    num_orders = _as_int("num_orders", num_orders, 1, 1000)
    if n * num_orders > MAX_ELEMENTS:
        raise ValueError(f"n x num_orders must be at most {MAX_ELEMENTS:,}; got {n:,} x {num_orders:,}.")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dt)  # (n,)
    orders = np.stack([np.arange(n)] + [rng.permutation(n) for _ in range(num_orders - 1)])  # (num_orders, n)
    sums = _sequential_sums(x[orders], dt)  # (num_orders,)
    exact = _exact_sum(x)
    ulp = _ulp(exact, dt)
    values, counts = np.unique(sums, return_counts=True)
    magnitude = np.argsort(np.abs(x), kind="stable")
    named_orders = {
        "original": np.arange(n),
        "ascending": np.argsort(x, kind="stable"),
        "descending": np.argsort(x, kind="stable")[::-1],
        "small_to_large": magnitude,
        "large_to_small": magnitude[::-1],
    }
    named = {name: _error(_sequential_sums(x[order][None, :], dt)[0], exact, ulp) for name, order in named_orders.items()}
    named["pairwise"] = _error(np.sum(x, dtype=dt), exact, ulp)
    low, high = float(values[0]), float(values[-1])
    return {
        "n": n,
        "dtype": dt.name,
        "exact": exact,
        "ulp": ulp,
        "sums": sums.astype(np.float64).tolist(),
        "distinct": [_error(v, exact, ulp) | {"count": int(c)} for v, c in zip(values, counts)],
        "num_distinct": int(values.size),
        "min": low,
        "max": high,
        "spread": high - low,
        "spread_ulps": (high - low) / ulp if ulp > 0 else 0.0,
        "named": named,
        "preview": x[:8].astype(np.float64).tolist(),
    }


def batch_sums(n: int = 4096, dtype: str = "float32", seed: int = 0) -> dict:
    """Reduce the same row alone and inside batches of growing size.

    A model kernel that sums each row of a batch splits the work among `WORKERS`
    (64) workers: a row gets `max(1, 64 // batch_size)` of them. Each worker sums a
    contiguous chunk of the row, and the partial sums are then added in order. The
    row's numbers never change; only the batch around it does, and with it where
    the rounding happens.

    Args:
        n: Length of the row, 64 to 100,000.
        dtype: `"float16"`, `"float32"` or `"float64"`.
        seed: Non-negative integer seed for the row.

    Returns:
        `n`, `dtype`, `exact`, `ulp`, `rows` (one per batch size in 1, 2, 4, ...,
        128, with `batch_size`, `splits`, `value`, `error`, `error_ulps`) and
        `num_distinct` (how many different values the same row got).

    Raises:
        ValueError: On a bad size, dtype or seed.
    """
    n = _as_int("n", n, 64, 100_000)
    dt = _as_dtype(dtype)
    seed = _as_int("seed", seed, 0, 2**63 - 1)
    x = np.random.default_rng(seed).standard_normal(n).astype(dt)  # (n,) row 0 of every batch
    exact = _exact_sum(x)
    ulp = _ulp(exact, dt)
    rows = []
    for b in BATCH_SIZES:
        splits = _splits_for(b)
        rows.append({"batch_size": b, "splits": splits} | _error(_split_sum(x, splits, dt), exact, ulp))
    return {"n": n, "dtype": dt.name, "exact": exact, "ulp": ulp, "rows": rows, "num_distinct": len({r["value"] for r in rows})}


def _flip_logits(h, w, batch_size):
    """float32 logits (2,) of hidden state `h` (d,) against rows `w` (2, d), by the split kernel."""
    splits = _splits_for(batch_size)
    products = (w * h).astype(np.float32)  # (2, d) products, each rounded to float32
    return np.array([_split_sum(p, splits, np.float32) for p in products])


def _exact_logits(h, w):
    """Exact dot products (products of float32 numbers are exact in float64), rounded once."""
    h64, w64 = h.astype(np.float64), w.astype(np.float64)
    exact = [math.fsum((h64 * row).tolist()) for row in w64]
    difference = math.fsum((h64 * w64[1]).tolist() + (-h64 * w64[0]).tolist())
    return exact, difference


def argmax_flip(seed: int = 0, d: int = 512) -> dict:
    """Greedy decoding that depends on the batch: an argmax flipped by rounding.

    A hidden state `h` (d,) meets two rows of the output matrix, the logits of the
    tokens " yes" and " no". The " no" row is tuned so that its exact logit is
    within a hair of " yes"'s: far closer than float32 can resolve. Both logits are
    then computed in float32 by the batch-dependent kernel of `batch_sums`, once per
    batch size, and the argmax (first index on ties, like `torch.argmax`) is taken.
    The search for a tuning that makes the flip visible is deterministic, so a seed
    always gives the same example.

    Args:
        seed: Non-negative integer seed for `h` and the rows.
        d: Hidden size, 64 to 4,096.

    Returns:
        `d`, `seed`, `tokens`, `exact_logits` (both exact, rounded to float64),
        `exact_difference` (no - yes, exact), `exact_argmax`, `ulp` (float32 spacing
        at the logits), `tuned` (the " no" weight that was adjusted: `index`,
        `original` and `value`), `rows` (per batch size: `batch_size`, `splits`, `logits`
        as computed in float32, `difference`, `argmax`, `token`), `argmaxes` (the
        distinct choices made) and `flips` (True when batch size changed the answer).

    Raises:
        ValueError: On a bad seed or size, or when no flip is found (never for the
            sizes allowed, but the check is kept honest).
    """
    seed = _as_int("seed", seed, 0, 2**63 - 1)
    d = _as_int("d", d, 64, 4096)
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(d).astype(np.float32)  # (d,)
    w = rng.standard_normal((2, d)).astype(np.float32)  # (2, d) rows of " yes" and " no"
    order = np.argsort(-np.abs(h), kind="stable")
    for j in order[:8]:  # tune one weight of the " no" row, where h is large
        exact, _ = _exact_logits(h, w)
        start = np.float32(w[1, j] + (exact[0] - exact[1]) / h[j])  # now the exact logits nearly tie
        for k in (0, 1, -1, 2, -2, 3, -3, 4, -4):
            candidate = w.copy()
            step = np.inf if k > 0 else -np.inf
            value = start
            for _ in range(abs(k)):
                value = np.nextafter(value, np.float32(step))
            candidate[1, j] = value
            rows = []
            for b in BATCH_SIZES:
                logits = _flip_logits(h, candidate, b)
                top = int(np.argmax(logits))
                rows.append(
                    {
                        "batch_size": b,
                        "splits": _splits_for(b),
                        "logits": logits.astype(np.float64).tolist(),
                        "difference": float(logits[1]) - float(logits[0]),
                        "argmax": top,
                        "token": FLIP_TOKENS[top],
                    }
                )
            argmaxes = sorted({r["argmax"] for r in rows})
            if len(argmaxes) > 1:
                exact, difference = _exact_logits(h, candidate)
                return {
                    "d": d,
                    "seed": seed,
                    "tokens": list(FLIP_TOKENS),
                    "exact_logits": exact,
                    "exact_difference": difference,
                    "exact_argmax": 1 if difference > 0 else 0,
                    "ulp": _ulp(exact[0], np.float32),
                    "tuned": {"index": int(j), "original": float(w[1, j]), "value": float(value)},
                    "rows": rows,
                    "argmaxes": argmaxes,
                    "flips": True,
                }
    raise ValueError(f"no batch-dependent flip found for seed {seed} and d {d}; try another seed.")
