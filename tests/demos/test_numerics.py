"""Tests for demos.numerics with exact references.

Exact sums and dot products are computed with `fractions.Fraction` (every float is
a rational number, and products of two float32 numbers are exact in float64).
Rounded sums are recomputed by plain Python loops over NumPy scalars of the dtype,
which round after every addition just as the module's vectorised code must.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from demos import numerics
from demos.numerics import argmax_flip, batch_sums, sum_orders

DTYPES = ["float16", "float32", "float64"]


def exact(values):
    return sum((Fraction(float(v)) for v in values), Fraction(0))


def loop_sum(values, dtype):
    """Left to right, rounding to `dtype` after every addition."""
    scalar = np.dtype(dtype).type
    total = scalar(values[0])
    for v in values[1:]:
        total = scalar(total + scalar(v))
    return total


def numbers(n, dtype, seed):
    """The numbers sum_orders draws (its first use of the generator)."""
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


# ---------------------------------------------------------------------------
# sum_orders


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_orders_against_exact_and_loops(dtype):
    r = sum_orders(n=300, dtype=dtype, seed=5, num_orders=50)
    x = numbers(300, dtype, 5)
    assert r["exact"] == float(exact(x))  # fsum is correctly rounded, so is float(Fraction)
    assert r["preview"] == x[:8].astype(float).tolist()
    assert r["sums"][0] == float(loop_sum(x, dtype))  # order 0 is the original order
    assert r["named"]["original"]["value"] == r["sums"][0]
    assert r["named"]["ascending"]["value"] == float(loop_sum(np.sort(x), dtype))
    assert r["named"]["descending"]["value"] == float(loop_sum(np.sort(x)[::-1], dtype))
    by_size = x[np.argsort(np.abs(x), kind="stable")]
    assert r["named"]["small_to_large"]["value"] == float(loop_sum(by_size, dtype))
    assert r["named"]["large_to_small"]["value"] == float(loop_sum(by_size[::-1], dtype))
    assert r["named"]["pairwise"]["value"] == float(np.sum(x, dtype=dtype))
    for entry in [*r["distinct"], *r["named"].values()]:
        assert entry["error"] == entry["value"] - r["exact"]
        assert entry["error_ulps"] == pytest.approx(entry["error"] / r["ulp"], rel=1e-12)
    assert r["ulp"] == float(np.spacing(np.abs(np.array(r["exact"], dtype=dtype))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_order_obeys_the_recursive_summation_error_bound(dtype):
    """|computed - exact| <= (n - 1) u sum |x_i| (+ O(u^2)), u the unit roundoff."""
    n = 500
    r = sum_orders(n=n, dtype=dtype, seed=1, num_orders=100)
    x = numbers(n, dtype, 1)
    u = Fraction(float(np.finfo(dtype).eps)) / 2
    bound = (n - 1) * u * exact(np.abs(x)) * Fraction(101, 100)
    true = exact(x)
    for s in r["sums"]:
        assert abs(Fraction(s) - true) <= bound


def test_orders_give_different_sums():
    r = sum_orders(n=1000, dtype="float32", seed=0, num_orders=200)
    assert r["num_distinct"] > 5
    assert sum(d["count"] for d in r["distinct"]) == 200 == len(r["sums"])
    values = [d["value"] for d in r["distinct"]]
    assert values == sorted(set(r["sums"]))
    for v in values:
        assert float(np.float32(v)) == v  # each is a float32 number
    assert r["min"] == values[0] and r["max"] == values[-1]
    assert r["spread"] == values[-1] - values[0] > 0
    assert r["spread_ulps"] == pytest.approx(r["spread"] / r["ulp"])


def test_the_classic_three_numbers():
    """(a + b) + c != a + (b + c): the smallest example of what sum_orders shows at scale."""
    a, b, c = np.float32(1e8), np.float32(-1e8), np.float32(1.0)
    assert (a + b) + c == 1.0 and a + (b + c) == 0.0  # 1e8 - 1 rounds back to 1e8 in float32


# ---------------------------------------------------------------------------
# batch_sums


def split_sum_loop(x, splits, dtype):
    """Independent chunking: the first n % splits chunks get one extra element."""
    n = len(x)
    size, extra = divmod(n, splits)
    partials, start = [], 0
    for i in range(splits):
        stop = start + size + (1 if i < extra else 0)
        if stop > start:
            partials.append(loop_sum(x[start:stop], dtype))
        start = stop
    return loop_sum(partials, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_sums_against_loops_and_exact(dtype):
    r = batch_sums(n=1000, dtype=dtype, seed=3)
    x = np.random.default_rng(3).standard_normal(1000).astype(dtype)
    assert r["exact"] == float(exact(x))
    assert [row["batch_size"] for row in r["rows"]] == list(numerics.BATCH_SIZES)
    for row in r["rows"]:
        assert row["splits"] == max(1, numerics.WORKERS // row["batch_size"])
        assert row["value"] == float(split_sum_loop(x, row["splits"], dtype))
        assert row["error"] == row["value"] - r["exact"]
    assert r["num_distinct"] == len({row["value"] for row in r["rows"]})


def test_the_same_row_gets_different_sums_in_different_batches():
    r = batch_sums()
    assert r["num_distinct"] > 1
    # a kernel that does not change its split with the batch size would be batch-invariant
    assert r["rows"][-1]["splits"] == r["rows"][-2]["splits"] == 1
    assert r["rows"][-1]["value"] == r["rows"][-2]["value"]


# ---------------------------------------------------------------------------
# argmax_flip


@pytest.mark.parametrize("seed", range(8))
def test_argmax_flips_with_the_batch(seed):
    r = argmax_flip(seed=seed, d=256)
    assert r["flips"] and len(r["argmaxes"]) == 2
    assert {row["argmax"] for row in r["rows"]} == {0, 1}
    for row in r["rows"]:
        a, b = row["logits"]
        assert row["argmax"] == (1 if b > a else 0)  # ties go to the first token
        assert row["token"] == r["tokens"][row["argmax"]]
        assert row["difference"] == b - a
        for v in row["logits"]:
            assert float(np.float32(v)) == v


def flip_inputs(seed, d, tuned):
    """h (d,) and the two rows (2, d) the function uses: its draws, with the tuned weight set."""
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(d).astype(np.float32)
    w = rng.standard_normal((2, d)).astype(np.float32)
    assert w[1, tuned["index"]] == np.float32(tuned["original"])
    w[1, tuned["index"]] = np.float32(tuned["value"])
    return h, w


def exact_dot(a, b):
    return sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0))


@pytest.mark.parametrize("seed", [2, 6])
def test_flip_exact_logits(seed):
    r = argmax_flip(seed=seed, d=128)
    h, w = flip_inputs(seed, 128, r["tuned"])
    yes, no = exact_dot(h, w[0]), exact_dot(h, w[1])
    assert r["exact_logits"] == [float(yes), float(no)]
    assert r["exact_difference"] == float(no - yes)
    assert r["exact_argmax"] == (1 if no > yes else 0)
    # The true gap is tiny next to the values, and some batch size gets the sign wrong.
    assert abs(no - yes) < 8 * r["ulp"]
    assert any(row["argmax"] != r["exact_argmax"] for row in r["rows"])


def test_flip_rows_recomputed_with_loops():
    """Recompute the float32 logits of one example with Python loops over float32 scalars."""
    r = argmax_flip(seed=4, d=64)
    h, w = flip_inputs(4, 64, r["tuned"])
    for row in r["rows"]:
        for token in (0, 1):
            products = [np.float32(a * b) for a, b in zip(h, w[token])]
            assert row["logits"][token] == float(split_sum_loop(products, row["splits"], "float32"))


# ---------------------------------------------------------------------------
# input checks


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sum_orders(n=1), "n must be between 2"),
        (lambda: sum_orders(dtype="int8"), "dtype must be one of"),
        (lambda: sum_orders(n=10_000, num_orders=1000), "at most 2,000,000"),
        (lambda: sum_orders(seed=-1), "seed must be between"),
        (lambda: sum_orders(n=2.5), "n must be a whole number"),
        (lambda: batch_sums(n=10), "n must be between 64"),
        (lambda: argmax_flip(d=8), "d must be between 64"),
    ],
)
def test_bad_input_is_a_readable_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_results_are_plain_data():
    def plain(value):
        if isinstance(value, dict):
            return all(type(k) is str and plain(v) for k, v in value.items())
        if isinstance(value, list):
            return all(plain(v) for v in value)
        return type(value) in (float, int, bool, str)

    assert plain(sum_orders(n=100, num_orders=10))
    assert plain(batch_sums(n=128))
    assert plain(argmax_flip(seed=1, d=64))
    assert not any(math.isnan(s) for s in sum_orders(n=100, num_orders=10)["sums"])
