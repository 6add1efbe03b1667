"""demos.flash: tiled attention with the online softmax, and the memory-traffic count.

References: plain attention written with loops, torch's
scaled_dot_product_attention (plain and causal) in float64, and a traffic count
obtained by walking the tiles and tallying every element read or written.
"""

import math
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import NUMBERS, TOL
from demo_checks import assert_close as close
from demo_checks import assert_plain as check_plain
from demos.flash import flash_attention, memory_traffic, naive_attention, online_softmax_trace

assert_plain = partial(check_plain, leaves=NUMBERS)


def qkv(Tq, Tk, d, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((Tq, d)), rng.standard_normal((Tk, d)), rng.standard_normal((Tk, d))


def loop_attention(q, k, v, causal):
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        n = i + 1 if causal else k.shape[0]
        s = np.array([q[i] @ k[j] for j in range(n)]) / math.sqrt(q.shape[1])
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ v[:n]
    return out


SHAPES = [  # (Tq, Tk, d, block_q, block_k, causal)
    (8, 8, 4, 4, 4, False),
    (8, 8, 4, 4, 4, True),
    (10, 10, 3, 3, 4, True),  # tiles that do not divide T
    (10, 10, 3, 4, 3, False),
    (7, 7, 5, 1, 1, True),  # one element per tile
    (9, 9, 2, 9, 9, True),  # one tile: plain softmax
    (5, 12, 6, 2, 5, False),  # cross-attention: more keys than queries
    (16, 16, 8, 16, 3, True),
]


@pytest.mark.parametrize("Tq, Tk, d, bq, bk, causal", SHAPES)
def test_tiled_equals_naive_in_float64(Tq, Tk, d, bq, bk, causal):
    q, k, v = qkv(Tq, Tk, d, seed=Tq * Tk + d)
    naive = naive_attention(q.tolist(), k.tolist(), v.tolist(), causal)
    tiled = flash_attention(q.tolist(), k.tolist(), v.tolist(), causal, bq, bk)
    close(tiled, naive)
    close(naive, loop_attention(q, k, v, causal))
    assert_plain(tiled)


@pytest.mark.parametrize("Tq, Tk, d, bq, bk, causal", SHAPES)
def test_tiled_matches_torch_sdpa(Tq, Tk, d, bq, bk, causal):
    torch = pytest.importorskip("torch")
    q, k, v = qkv(Tq, Tk, d, seed=Tq + Tk * d)
    expected = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=causal).numpy()
    close(flash_attention(q.tolist(), k.tolist(), v.tolist(), causal, bq, bk), expected)
    close(naive_attention(q.tolist(), k.tolist(), v.tolist(), causal), expected)


def test_large_scores_stay_finite_thanks_to_the_running_max():
    q, k, v = qkv(12, 12, 4, seed=1, scale=400.0)  # scores in the thousands: exp would overflow unshifted
    out = np.array(flash_attention(q.tolist(), k.tolist(), v.tolist(), True, 5, 2))
    assert np.isfinite(out).all()
    close(out, naive_attention(q.tolist(), k.tolist(), v.tolist(), True))


@given(st.integers(1, 12), st.integers(1, 5), st.integers(1, 13), st.integers(1, 13), st.booleans(), st.integers(0, 999))
@settings(max_examples=50, deadline=None)
def test_any_tiling_gives_the_same_answer(T, d, bq, bk, causal, seed):
    q, k, v = qkv(T, T, d, seed)
    close(flash_attention(q.tolist(), k.tolist(), v.tolist(), causal, bq, bk), naive_attention(q.tolist(), k.tolist(), v.tolist(), causal))


# ---------------------------------------------------------------------------
# the trace of one row


@pytest.mark.parametrize("row, bk, causal", [(7, 3, True), (0, 2, True), (4, 4, False), (9, 1, False), (9, 10, True)])
def test_online_softmax_trace(row, bk, causal):
    q, k, v = qkv(10, 10, 4, seed=row + bk)
    t = online_softmax_trace(q.tolist(), k.tolist(), v.tolist(), row=row, block_k=bk, causal=causal)
    n = row + 1 if causal else 10
    assert len(t["steps"]) == math.ceil(n / bk)
    scores = (k[:n] @ q[row]) / 2.0  # sqrt(4)
    seen = 0
    for i, step in enumerate(t["steps"]):
        lo, hi = step["keys"]
        assert lo == i * bk and hi == min(lo + bk, n) - 1
        close(step["scores"], scores[lo : hi + 1])
        seen = hi + 1
        m = scores[:seen].max()
        assert step["max_after"] == pytest.approx(m, abs=TOL)
        assert step["max_before"] == (-math.inf if i == 0 else t["steps"][i - 1]["max_after"])
        assert step["rescale"] == pytest.approx(math.exp(step["max_before"] - step["max_after"]), abs=TOL)
        w = np.exp(scores[:seen] - m)
        assert step["sum_after"] == pytest.approx(w.sum(), rel=TOL)
        close(step["output_after"], (w / w.sum()) @ v[:seen])  # softmax over the keys seen so far
    maxima = [s["max_after"] for s in t["steps"]]
    assert maxima == sorted(maxima)  # the running max never decreases
    close(t["output"], t["reference"])
    close(t["reference"], loop_attention(q, k, v, causal)[row])
    assert_plain({k_: v_ for k_, v_ in t.items()})


# ---------------------------------------------------------------------------
# memory traffic


def traffic_by_walking(T, d, bq, bk, causal):
    """Tally reads and writes by visiting the tiles the way the tiled kernel does."""
    reads = writes = tiles = 0
    for i0 in range(0, T, bq):
        rows = min(bq, T - i0)
        reads += rows * d  # the query tile
        for j0 in range(0, T, bk):
            if causal and j0 > i0 + rows - 1:
                continue
            reads += 2 * min(bk, T - j0) * d  # a key tile and a value tile
            tiles += 1
        writes += rows * d  # the output tile
    return reads, writes, tiles


@pytest.mark.parametrize(
    "T, d, bq, bk, causal", [(1024, 64, 64, 64, False), (1024, 64, 64, 64, True), (1000, 32, 48, 80, True), (7, 3, 2, 5, False), (1, 1, 1, 1, True)]
)
def test_memory_traffic_matches_a_tile_walk(T, d, bq, bk, causal):
    r = memory_traffic(T, d, bq, bk, causal, "float32")
    reads, writes, tiles = traffic_by_walking(T, d, bq, bk, causal)
    assert (r["tiled"]["reads"], r["tiled"]["writes"], r["tiles"]) == (reads, writes, tiles)
    assert r["tiled"]["score_matrix"] == 0
    assert r["naive"] == {
        "reads": 3 * T * d + 2 * T * T,
        "writes": T * d + 2 * T * T,
        "total": 4 * T * d + 4 * T * T,
        "score_matrix": 4 * T * T,
        "bytes": 4 * (4 * T * d + 4 * T * T),
    }
    assert r["tiled"]["bytes"] == 4 * (reads + writes)
    assert r["ratio"] == r["naive"]["total"] / r["tiled"]["total"]
    assert_plain(r)


def test_traffic_ratio_grows_with_the_tile_size_and_causal_skips_half():
    small = memory_traffic(4096, 64, 32, 32, dtype="float16")
    big = memory_traffic(4096, 64, 128, 128, dtype="float16")
    assert big["ratio"] > 3 * small["ratio"] > small["ratio"] > 1
    causal = memory_traffic(4096, 64, 128, 128, causal=True)
    assert causal["tiled"]["total"] < 0.55 * big["tiled"]["total"]
    assert big["naive"]["score_matrix"] == 4 * 4096**2
    assert big["on_chip_elements"] == 128 * 64 * 4 + 128 * 128 + 2 * 128


def test_the_largest_sizes_are_computed_without_looping_over_tiles():
    r = memory_traffic(1_000_000, 128, 1, 1, causal=True)
    assert r["tiles"] == 1_000_000 * 1_000_001 // 2


def test_lab_page_quotes_the_module():
    path = Path(__file__).resolve().parents[2] / "docs" / "labs" / "efficiency.md"
    if not path.exists():
        pytest.skip("the textbook's pages are not next to the tests")
    page = path.read_text(encoding="utf-8")
    plain, causal = memory_traffic(4096, 64, 128, 128), memory_traffic(4096, 64, 128, 128, causal=True)
    assert f"plain attention moves {plain['naive']['total']:,} elements and tiled attention {plain['tiled']['total']:,}" in page
    assert f"about {plain['ratio']:.1f} times fewer" in page
    assert f"moves {causal['tiled']['total']:,}, {causal['ratio']:.1f} times fewer" in page


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (naive_attention, dict(q=[[1.0]], k=[[1.0, 2.0]], v=[[1.0]]), "same width"),
    (naive_attention, dict(q=[[1.0]], k=[[1.0]], v=[[1.0], [2.0]]), "one row per key"),
    (naive_attention, dict(q=[[1.0]], k=[[1.0], [1.0]], v=[[1.0], [2.0]], causal=True), "as many queries as keys"),
    (naive_attention, dict(q=[[1.0]], k=[[1.0]], v=[[1.0]], causal="yes"), "true or false"),
    (naive_attention, dict(q=[1.0], k=[[1.0]], v=[[1.0]]), "matrix"),
    (naive_attention, dict(q=[[None]], k=[[1.0]], v=[[1.0]]), "contains None"),
    (flash_attention, dict(q=[[1.0]], k=[[1.0]], v=[[1.0]], block_q=0), "block_q"),
    (flash_attention, dict(q=[[1.0]], k=[[1.0]], v=[[1.0]], block_k=1.5), "whole number"),
    (online_softmax_trace, dict(q=[[1.0]], k=[[1.0]], v=[[1.0]], row=1), "row must be between 0 and 0"),
    (memory_traffic, dict(seq_len=0), "seq_len"),
    (memory_traffic, dict(seq_len=16, block_q=32), "block_q must be between 1 and 16"),
    (memory_traffic, dict(dtype="int4"), "dtype"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)
