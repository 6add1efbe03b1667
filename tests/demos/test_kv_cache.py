"""demos.kv_cache: cache sizes for MHA/GQA/MQA, FLOPs saved, and cached = full attention.

References: the closed-form size 2 · n_layer · n_kv_head · d_head · bytes with
GPT-2 small's shape (12 layers, 12 heads of 64, from the course page) and the
LLaMA-7B shape (32 layers, 32 heads, width 4096, from the lecture table); a FLOP
count by brute-force loops over steps, layers and positions; and attention
against torch.nn.functional.scaled_dot_product_attention (is_causal, enable_gqa)
in float64.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import assert_close as close
from demo_checks import assert_plain
from demos.kv_cache import (
    cached_attention,
    causal_attention,
    compare_attention_variants,
    generation_flops,
    kv_cache_bytes,
    presets,
)

# ---------------------------------------------------------------------------
# memory

SIZES = [  # (n_layer, n_kv_head, d_head, context, dtype, bytes per token, total bytes)
    (12, 12, 64, 1024, "float32", 73_728, 75_497_472),  # GPT-2 small, full context: 72 MiB
    (12, 12, 64, 1024, "float16", 36_864, 37_748_736),
    (32, 32, 128, 2048, "float16", 524_288, 1_073_741_824),  # LLaMA-7B shape: 0.5 MiB per token, 1 GiB at 2048
    (32, 8, 128, 2048, "float16", 131_072, 268_435_456),  # the same with 8 key/value heads (GQA)
    (32, 1, 128, 2048, "int8", 8_192, 16_777_216),  # MQA in int8
]


@pytest.mark.parametrize("L, H, d, T, dtype, per_token, total", SIZES)
def test_kv_cache_bytes(L, H, d, T, dtype, per_token, total):
    r = kv_cache_bytes(L, H, d, T, dtype)
    assert r["bytes_per_token"] == per_token == 2 * L * H * d * r["bytes_per_value"]
    assert r["total_bytes"] == total
    assert kv_cache_bytes(L, H, d, T, dtype, batch_size=3)["total_bytes"] == 3 * total
    assert_plain(r)


def test_variants_share_keys_and_values_across_query_heads():
    for p in presets().values():
        r = compare_attention_variants(p["n_layer"], p["n_head"], p["d_head"], p["gqa_kv_heads"], 4096, "float16")
        mha, gqa, mqa = r["variants"]
        assert [v["name"] for v in r["variants"]] == ["MHA", "GQA", "MQA"]
        assert (mha["n_kv_head"], gqa["n_kv_head"], mqa["n_kv_head"]) == (p["n_head"], p["gqa_kv_heads"], 1)
        assert gqa["total_bytes"] * gqa["group_size"] == mha["total_bytes"] == mqa["total_bytes"] * p["n_head"]
        assert gqa["fraction_of_mha"] == p["gqa_kv_heads"] / p["n_head"]
        assert_plain(r)
    assert presets()["gpt2-small"] == {"label": "GPT-2 small", "n_layer": 12, "n_head": 12, "d_head": 64, "gqa_kv_heads": 4}
    assert presets()["llama-7b-gqa"]["n_head"] * presets()["llama-7b-gqa"]["d_head"] == 4096


# ---------------------------------------------------------------------------
# arithmetic


def flops_by_loops(L, d, P, N):
    """Count per layer, per processed position: 24 d^2 for the matrices, 4 d i for attention over i keys."""
    without = with_cache = 0
    for j in range(N):
        t = P + j
        full = sum(L * (24 * d * d + 4 * d * i) for i in range(1, t + 1))
        without += full
        with_cache += full if j == 0 else L * (24 * d * d + 4 * d * t)
    return without, with_cache


@pytest.mark.parametrize("L, d, P, N", [(12, 768, 16, 64), (2, 64, 1, 1), (4, 32, 5, 30), (1, 8, 100, 3)])
def test_generation_flops_match_a_loop_count(L, d, P, N):
    r = generation_flops(L, d, P, N)
    without, with_cache = flops_by_loops(L, d, P, N)
    assert r["without_cache"] == without and r["with_cache"] == with_cache
    assert r["ratio"] == pytest.approx(without / with_cache, rel=1e-15)
    assert r["steps"] == list(range(P, P + N))
    assert sum(r["per_step_without"]) == without and sum(r["per_step_with"]) == with_cache
    assert_plain(r)


def test_the_cache_saves_more_the_longer_we_generate():
    ratios = [generation_flops(12, 768, 16, n)["ratio"] for n in (1, 2, 8, 64, 512)]
    assert ratios[0] == 1.0  # one step is just the prefill
    assert all(a < b for a, b in zip(ratios, ratios[1:]))
    assert generation_flops(12, 768, 16, 64)["saved_fraction"] > 0.95


# ---------------------------------------------------------------------------
# incremental attention equals full causal attention


def qkv(H, H_kv, T, d, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((H, T, d)), rng.standard_normal((H_kv, T, d)), rng.standard_normal((H_kv, T, d))


def naive_causal(q, k, v):
    """Loop form: position i attends to keys 0..i."""
    out = np.zeros_like(q)
    for i in range(q.shape[0]):
        s = np.array([q[i] @ k[j] for j in range(i + 1)]) / math.sqrt(q.shape[1])
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ v[: i + 1]
    return out


@pytest.mark.parametrize("H, H_kv, T, d", [(1, 1, 7, 4), (4, 4, 9, 8), (4, 2, 6, 3), (6, 1, 5, 2), (8, 2, 12, 16)])
def test_cached_attention_equals_full_causal_attention(H, H_kv, T, d):
    q, k, v = qkv(H, H_kv, T, d, seed=H * T + d)
    full = np.array(causal_attention(q.tolist(), k.tolist(), v.tolist()))
    cached = cached_attention(q.tolist(), k.tolist(), v.tolist())
    close(cached["output"], full)
    assert cached["cache_length"] == list(range(1, T + 1))
    group = H // H_kv
    for h in range(H):
        close(full[h], naive_causal(q[h], k[h // group], v[h // group]))
    assert_plain(cached)


@pytest.mark.parametrize("H, H_kv, T, d", [(1, 1, 7, 4), (4, 4, 9, 8), (4, 2, 6, 3), (6, 1, 5, 2)])
def test_attention_matches_torch_sdpa(H, H_kv, T, d):
    torch = pytest.importorskip("torch")
    q, k, v = qkv(H, H_kv, T, d, seed=T + d)
    expected = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True, enable_gqa=H_kv != H).numpy()
    close(causal_attention(q.tolist(), k.tolist(), v.tolist()), expected)
    close(cached_attention(q.tolist(), k.tolist(), v.tolist())["output"], expected)


def test_a_single_head_may_be_given_as_a_matrix():
    q, k, v = qkv(1, 1, 5, 3, seed=0)
    flat = causal_attention(q[0].tolist(), k[0].tolist(), v[0].tolist())
    assert np.shape(flat) == (5, 3)
    close(flat, causal_attention(q.tolist(), k.tolist(), v.tolist())[0])
    close(cached_attention(q[0].tolist(), k[0].tolist(), v[0].tolist())["output"], flat)


@given(st.integers(1, 8), st.integers(1, 5), st.integers(0, 10_000))
@settings(max_examples=30, deadline=None)
def test_earlier_outputs_never_change_when_tokens_are_appended(T, extra, seed):
    # This is why caching works: row i of causal attention depends only on tokens 0..i.
    q, k, v = qkv(2, 1, T + extra, 3, seed)
    long = np.array(causal_attention(q.tolist(), k.tolist(), v.tolist()))
    short = np.array(causal_attention(q[:, :T].tolist(), k[:, :T].tolist(), v[:, :T].tolist()))
    close(long[:, :T], short)


def test_lab_page_quotes_the_module():
    path = Path(__file__).resolve().parents[2] / "docs" / "labs" / "efficiency.md"
    if not path.exists():
        pytest.skip("the textbook's pages are not next to the tests")
    page = path.read_text(encoding="utf-8")
    page = page.replace("{,}", ",").replace("$", "")  # KaTeX's thousands separator and math delimiters
    gpt2 = kv_cache_bytes(12, 12, 64, 1024, "float32")
    assert f"{gpt2['bytes_per_token']:,} bytes per token" in page and f"{gpt2['total_bytes']:,} bytes (72 MiB)" in page
    assert kv_cache_bytes(12, 4, 64, 1, "float32")["bytes_per_token"] == 24_576 and "24,576 bytes" in page
    short, long = generation_flops(12, 768, 16, 64), generation_flops(12, 768, 16, 256)
    assert f"{short['without_cache'] / 1e11:.2f} \\times 10^{{11}}" in page and f"{short['with_cache'] / 1e10:.2f} \\times 10^{{10}}" in page
    assert f"{round(short['ratio'])} times fewer" in page and f"{round(long['ratio'])} times fewer" in page


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (kv_cache_bytes, dict(n_layer=0, n_kv_head=1, d_head=1), "n_layer"),
    (kv_cache_bytes, dict(n_layer=1, n_kv_head=1, d_head=1, dtype="float8"), "dtype must be one of"),
    (kv_cache_bytes, dict(n_layer=1, n_kv_head=1, d_head=1, context_length=2.5), "whole number"),
    (kv_cache_bytes, dict(n_layer=1000, n_kv_head=1000, d_head=100_000, context_length=10_000_000, dtype="float32"), "petabytes"),
    (compare_attention_variants, dict(n_head=12, gqa_kv_heads=5), "must divide n_head"),
    (compare_attention_variants, dict(n_head=12, gqa_kv_heads=13), "gqa_kv_heads"),
    (generation_flops, dict(new_tokens=0), "new_tokens"),
    (generation_flops, dict(prompt_length=True), "whole number"),
    (causal_attention, dict(q=[[1.0]], k=[[1.0], [2.0]], v=[[1.0], [2.0]]), "same number of tokens"),
    (causal_attention, dict(q=[[1.0]], k=[[1.0]], v=[[1.0, 2.0]]), "k and v must have the same shape"),
    (causal_attention, dict(q=[[[1.0]]] * 3, k=[[[1.0]]] * 2, v=[[[1.0]]] * 2), "split evenly"),
    (causal_attention, dict(q=[1.0], k=[1.0], v=[1.0]), r"\(T, d\)"),
    (cached_attention, dict(q=[["x"]], k=[[1.0]], v=[[1.0]]), "contains 'x'"),
    (cached_attention, dict(q=[[math.inf]], k=[[1.0]], v=[[1.0]]), "NaN or infinity"),
    (cached_attention, dict(q="abc", k=[[1.0]], v=[[1.0]]), "list of vectors"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)


# ---------------------------------------------------------------------------
# Multi-head latent attention's cache


def test_latent_cache_counts_the_latent_and_the_rotary_key():
    from demos.kv_cache import kv_cache_bytes, latent_cache_bytes

    r = latent_cache_bytes(n_layer=61, d_latent=512, d_rope=64, n_head=128, d_head=128, context_length=1000, dtype="bfloat16")
    assert r["bytes_per_token"] == 61 * (512 + 64) * 2 and r["total_bytes"] == 1000 * r["bytes_per_token"]
    mha = kv_cache_bytes(61, 128, 128, 1, "bfloat16")["bytes_per_token"]
    assert r["mha_bytes_per_token"] == mha and r["ratio"] == pytest.approx(mha / r["bytes_per_token"])
    # the same bytes as a GQA cache with 2.25 key/value heads of width 128 (DeepSeek-V2's comparison)
    assert r["equivalent_gqa_groups"] == 2.25
    assert r["bytes_per_token"] == pytest.approx(kv_cache_bytes(61, 9, 128, 1, "bfloat16")["bytes_per_token"] / 4)


@pytest.mark.parametrize("kwargs", [{"d_latent": 0}, {"n_layer": 0}, {"dtype": "float8"}])
def test_latent_cache_refuses_bad_sizes(kwargs):
    from demos.kv_cache import latent_cache_bytes

    with pytest.raises(ValueError):
        latent_cache_bytes(**kwargs)
