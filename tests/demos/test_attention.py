"""demos.attention against an independent NumPy loop, exact hand values and PyTorch.

The torch-free tests come first; the PyTorch references (`scaled_dot_product_attention`
and `nn.MultiheadAttention`, both in float64) are in the last section and are skipped
where torch is missing (e.g. inside Pyodide).
"""

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import TOL, assert_close, assert_plain
from demos import attention
from demos.attention import (
    explore,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    split_heads,
    worked_example,
)

_rng = np.random.default_rng(2024)


def rand(*shape):
    return _rng.standard_normal(shape).tolist()


def loop_attention(q, k, v, allowed):
    """Attention written out with Python loops and math.exp: the independent reference."""
    d_k = len(q[0])
    out, weights = [], []
    for i, qi in enumerate(q):
        scores = [sum(a * b for a, b in zip(qi, kj)) / math.sqrt(d_k) for kj in k]
        top = max(s for s, ok in zip(scores, allowed[i]) if ok)
        exps = [math.exp(s - top) if ok else 0.0 for s, ok in zip(scores, allowed[i])]
        total = sum(exps)
        w = [e / total for e in exps]
        weights.append(w)
        out.append([sum(w[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return weights, out


# ---------------------------------------------------------------------------
# the worked one-head example


def test_worked_example_by_hand():
    ex = worked_example()
    s, vals = attention.WORKED_SCALED_SCORES, attention.WORKED_VALUES
    exps = [math.exp(x) for x in s]
    total = math.fsum(exps)
    assert ex["query_position"] == 3 and ex["key_positions"] == [1, 2, 3]
    assert ex["scaled_scores"] == list(s)
    assert_close(ex["exp_scores"], exps)
    assert_close(ex["exp_sum"], total)
    assert_close(ex["weights"], [e / total for e in exps])
    assert_close(ex["output"], math.fsum(e / total * x for e, x in zip(exps, vals)))
    # The third key gets the largest weight, but its value is 0: it adds nothing.
    assert ex["top_key"] == 3 and max(ex["weights"]) == ex["weights"][2]
    assert vals[2] == 0.0 and ex["weighted_values"][2] == 0.0
    assert abs(sum(ex["weights"]) - 1.0) < TOL
    # Rounded, the numbers a reader checks by hand.
    assert [round(w, 4) for w in ex["weights"]] == [0.0900, 0.2447, 0.6652]
    assert round(ex["output"], 4) == 0.8496
    assert_plain(ex)


def test_worked_example_vector_values_go_coordinate_by_coordinate():
    scores = [0.5, -1.0, 2.0, 0.0]
    vectors = rand(4, 3)
    ex = worked_example(scores, vectors)
    for c in range(3):
        column = worked_example(scores, [row[c] for row in vectors])
        assert_close([row[c] for row in ex["weighted_values"]], column["weighted_values"])
        assert_close(ex["output"][c], column["output"])
    assert_plain(ex)


def test_worked_example_equals_one_row_of_sdpa():
    # A query whose scaled scores are s: q = s * sqrt(d_k) against unit keys.
    s = [0.3, 1.7, -0.4]
    values = [[2.0], [-1.0], [0.5]]
    out = scaled_dot_product_attention([[x for x in s]], np.eye(3).tolist(), values, scale=1.0)
    ex = worked_example(s, [v[0] for v in values])
    assert_close(out["weights"][0], ex["weights"])
    assert_close(out["output"][0][0], ex["output"])


# ---------------------------------------------------------------------------
# scaled dot-product attention, step by step

SDPA_CASES = [
    pytest.param(4, 4, 8, 5, False, None, id="square"),
    pytest.param(4, 4, 8, 5, True, None, id="causal"),
    pytest.param(3, 6, 4, 2, False, None, id="cross-lengths"),
    pytest.param(3, 6, 4, 2, True, None, id="causal-rectangular"),
    pytest.param(5, 5, 6, 6, False, [False, False, False, True, True], id="padding"),
    pytest.param(5, 5, 6, 6, True, [False, False, False, True, True], id="causal+padding"),
    pytest.param(1, 1, 3, 1, True, None, id="single-token"),
]


@pytest.mark.parametrize("t_q, t_k, d_k, d_v, causal, pad", SDPA_CASES)
def test_sdpa_matches_loop_reference(t_q, t_k, d_k, d_v, causal, pad):
    q, k, v = rand(t_q, d_k), rand(t_k, d_k), rand(t_k, d_v)
    r = scaled_dot_product_attention(q, k, v, causal=causal, key_padding_mask=pad)
    allowed = [[(not causal or j <= i) and not (pad and pad[j]) for j in range(t_k)] for i in range(t_q)]
    weights, out = loop_attention(q, k, v, allowed)
    assert r["allowed"] == allowed
    assert_close(r["weights"], weights)
    assert_close(r["output"], out)
    assert_close(r["scores"], np.array(q) @ np.array(k).T)
    assert r["scale"] == 1.0 / math.sqrt(d_k)
    assert_close(r["scaled_scores"], np.array(r["scores"]) * r["scale"])
    for i in range(t_q):
        assert abs(sum(r["weights"][i]) - 1.0) < TOL
        for j in range(t_k):
            if allowed[i][j]:
                assert r["masked_scores"][i][j] == r["scaled_scores"][i][j]
            else:
                assert r["masked_scores"][i][j] == -math.inf and r["weights"][i][j] == 0.0
    assert_plain(r)


def test_attn_mask_combines_with_causal_and_padding():
    q, k, v = rand(4, 3), rand(4, 3), rand(4, 2)
    custom = [[True, True, False, True]] * 4
    r = scaled_dot_product_attention(q, k, v, causal=True, key_padding_mask=[False, False, False, True], attn_mask=custom)
    expected = [[j <= i and j != 3 and j != 2 for j in range(4)] for i in range(4)]
    assert r["allowed"] == expected


def test_scale_of_one_gives_raw_softmax():
    q, k, v = rand(2, 4), rand(3, 4), rand(3, 2)
    r = scaled_dot_product_attention(q, k, v, scale=1.0)
    s = np.array(q) @ np.array(k).T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    assert_close(r["weights"], e / e.sum(axis=1, keepdims=True))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**31), st.booleans())
def test_rows_are_distributions(t, d, seed, causal):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.uniform(-3, 3, (t, d)).tolist() for _ in range(3))
    w = np.array(scaled_dot_product_attention(q, k, v, causal=causal)["weights"])
    assert np.all(w >= 0) and np.allclose(w.sum(axis=1), 1.0, atol=TOL)
    if causal:
        assert np.all(np.triu(w, 1) == 0.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31))
def test_unmasked_self_attention_is_permutation_equivariant(t, seed):
    # No mask and no positions: permuting the tokens permutes the outputs the same way.
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((t, 4))
    perm = rng.permutation(t)
    out = np.array(scaled_dot_product_attention(x, x, x)["output"])
    out_perm = np.array(scaled_dot_product_attention(x[perm], x[perm], x[perm])["output"])
    assert_close(out_perm, out[perm], tol=1e-10)


def test_huge_scores_do_not_overflow():
    r = scaled_dot_product_attention([[1e4]], [[1e4], [-1e4], [0.0]], [[1.0], [2.0], [3.0]])
    assert r["weights"][0] == [1.0, 0.0, 0.0] and r["output"][0] == [1.0]


# ---------------------------------------------------------------------------
# heads: split, merge, multi-head attention


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.sampled_from([(1, 1), (4, 2), (6, 3), (8, 4), (12, 12), (12, 1)]), st.integers(0, 2**31))
def test_split_then_merge_is_identity(t, dh, seed):
    d, h = dh
    x = np.random.default_rng(seed).standard_normal((t, d))
    heads = split_heads(x.tolist(), h)
    assert np.array(heads).shape == (h, t, d // h)
    assert merge_heads(heads) == x.tolist()
    for i in range(h):  # head i holds the i-th block of columns
        assert heads[i] == x[:, i * (d // h) : (i + 1) * (d // h)].tolist()


def test_multi_head_equals_independent_heads():
    t, d, h = 5, 6, 3
    x, wq, wk, wv, wo = np.array(rand(t, d)), *(np.array(rand(d, d)) for _ in range(4))
    r = multi_head_attention(x.tolist(), wq.tolist(), wk.tolist(), wv.tolist(), wo.tolist(), h, causal=True, key_padding_mask=[False] * 4 + [True])
    outs = []
    for i in range(h):
        cols = slice(i * 2, (i + 1) * 2)
        one = scaled_dot_product_attention(
            (x @ wq)[:, cols].tolist(), (x @ wk)[:, cols].tolist(), (x @ wv)[:, cols].tolist(), causal=True, key_padding_mask=[False] * 4 + [True]
        )
        assert_close(r["weights"][i], one["weights"])
        outs.append(one["output"])
    assert_close(r["concat"], np.concatenate(outs, axis=1))
    assert_close(r["output"], np.concatenate(outs, axis=1) @ wo)
    assert_plain(r)


# ---------------------------------------------------------------------------
# the sentence explorer


def test_explore_shapes_masks_and_determinism():
    r = explore("The cat sat on the mat", heads=3, causal=True, padding=2)
    t = 8
    assert r["tokens"] == ["The", "cat", "sat", "on", "the", "mat", "[PAD]", "[PAD]"]
    assert r["is_pad"] == [False] * 6 + [True] * 2
    assert (r["n_heads"], r["d_model"], r["d_head"], r["causal"]) == (3, 24, 8, True)
    assert len(r["heads"]) == 3
    for head in r["heads"]:
        w = np.array(head["weights"])
        assert w.shape == (t, t)
        assert np.allclose(w.sum(axis=1), 1.0, atol=TOL)
        assert np.all(np.triu(w, 1) == 0.0)  # no peeking ahead
        assert np.all(w[:, 6:] == 0.0)  # nobody attends to padding
    allowed = np.array(r["allowed"])
    assert allowed.tolist() == [[j <= i and j < 6 for j in range(t)] for i in range(t)]
    # Different heads look at different things; the same call gives the same numbers.
    assert r["heads"][0]["weights"] != r["heads"][1]["weights"]
    assert explore("The cat sat on the mat", heads=3, causal=True, padding=2) == r
    assert_plain(r)


def test_explore_matches_multi_head_attention_on_its_own_inputs():
    # Rebuild the explorer's inputs by hand and run them through multi_head_attention.
    sentence, d, h, seed = "attention is all you need", 8, 2, 5
    words = sentence.split()
    emb = np.stack([np.random.default_rng(zlib.crc32(w.encode())).uniform(-1, 1, d) for w in words])
    pos = np.arange(len(words))[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    pe = np.zeros((len(words), d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos), np.cos(pos)
    rng = np.random.default_rng(seed)
    gain = 1.5 * math.sqrt(3.0 / d)
    w = [rng.uniform(-gain, gain, (d, d)).tolist() for _ in range(3)]
    ref = multi_head_attention((emb + pe).tolist(), *w, np.eye(d).tolist(), h, causal=False)
    got = explore(sentence, heads=h, causal=False, d_model=d, seed=seed)
    for i in range(h):
        assert_close(got["heads"][i]["weights"], ref["weights"][i])


def test_explore_case_insensitive_words_and_no_mask():
    r = explore("Dog dog", heads=1, causal=False)
    assert all(all(row) for row in r["allowed"])
    s = np.array(r["heads"][0]["scaled_scores"])
    assert s.shape == (2, 2)


# ---------------------------------------------------------------------------
# bad input: a ValueError whose message the widget can show

OK3 = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]

BAD_INPUTS = [
    pytest.param(scaled_dot_product_attention, dict(q=[], k=OK3, v=OK3), "matrix", id="empty-q"),
    pytest.param(scaled_dot_product_attention, dict(q=[[1.0, 2.0], [3.0]], k=OK3, v=OK3), "different lengths", id="ragged"),
    pytest.param(scaled_dot_product_attention, dict(q=[[1.0, "a"]], k=OK3, v=OK3), "not a number", id="string"),
    pytest.param(scaled_dot_product_attention, dict(q=[[1.0, math.nan]], k=OK3, v=OK3), "NaN", id="nan"),
    pytest.param(scaled_dot_product_attention, dict(q=[[1.0, 2.0, 3.0]], k=OK3, v=OK3), "same width", id="width-mismatch"),
    pytest.param(scaled_dot_product_attention, dict(q=OK3, k=OK3, v=OK3[:2]), "one value row per key", id="values-mismatch"),
    pytest.param(scaled_dot_product_attention, dict(q=OK3, k=OK3, v=OK3, causal="yes"), "true or false", id="causal-string"),
    pytest.param(scaled_dot_product_attention, dict(q=OK3, k=OK3, v=OK3, key_padding_mask=[True] * 2), "shape", id="padding-length"),
    pytest.param(scaled_dot_product_attention, dict(q=OK3, k=OK3, v=OK3, key_padding_mask=[True] * 3), "no key at all", id="all-padding"),
    pytest.param(scaled_dot_product_attention, dict(q=OK3, k=OK3, v=OK3, key_padding_mask=[1, 0, 0]), "true/false", id="padding-ints"),
    pytest.param(scaled_dot_product_attention, dict(q=OK3, k=OK3, v=OK3, scale=math.inf), "finite", id="inf-scale"),
    pytest.param(split_heads, dict(x=[[1.0] * 6], n_heads=4), "do not divide the width 6", id="heads-divide"),
    pytest.param(split_heads, dict(x=[[1.0] * 6], n_heads=0), "between 1 and 6", id="zero-heads"),
    pytest.param(split_heads, dict(x=[[1.0] * 6], n_heads=2.5), "whole number", id="fractional-heads"),
    pytest.param(merge_heads, dict(heads=[[1.0, 2.0]]), "equally shaped", id="merge-2d"),
    pytest.param(multi_head_attention, dict(x=OK3, w_q=OK3, w_k=OK3, w_v=OK3, w_o=OK3, n_heads=1), r"shape \(2, 2\)", id="mha-weight-shape"),
    pytest.param(worked_example, dict(scaled_scores=[1.0, 2.0], values=[1.0]), "one value per legal key", id="worked-lengths"),
    pytest.param(worked_example, dict(scaled_scores=[1000.0], values=[1.0]), "overflows", id="worked-overflow"),
    pytest.param(explore, dict(sentence="   "), "empty", id="explore-empty"),
    pytest.param(explore, dict(sentence="a " * 13), "at most 12", id="explore-long"),
    pytest.param(explore, dict(sentence="a b", heads=5), "5 heads do not divide the width 24", id="explore-heads"),
    pytest.param(explore, dict(sentence="a b", padding=9), "padding", id="explore-padding"),
    pytest.param(explore, dict(sentence="a b", d_model=7, heads=1), "even", id="explore-odd-width"),
    pytest.param(explore, dict(sentence=3), "text", id="explore-not-text"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD_INPUTS)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)


# ---------------------------------------------------------------------------
# PyTorch references (float64)


@pytest.mark.parametrize("t_q, t_k, d_k, d_v, causal, pad", SDPA_CASES)
def test_sdpa_matches_torch(torch, t_q, t_k, d_k, d_v, causal, pad):
    import torch.nn.functional as F

    q, k, v = rand(t_q, d_k), rand(t_k, d_k), rand(t_k, d_v)
    r = scaled_dot_product_attention(q, k, v, causal=causal, key_padding_mask=pad)
    tq, tk, tv = (torch.tensor(a, dtype=torch.float64)[None] for a in (q, k, v))
    if pad is None:
        ref = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    else:  # torch takes either is_causal or a mask: combine them into one boolean mask
        mask = torch.ones(t_q, t_k, dtype=torch.bool)
        if causal:
            mask = mask.tril()
        mask &= ~torch.tensor(pad)[None, :]
        ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    assert_close(r["output"], ref[0].numpy())


def test_sdpa_attn_mask_matches_torch(torch):
    import torch.nn.functional as F

    q, k, v = rand(3, 4), rand(5, 4), rand(5, 2)
    mask = [[True, False, True, True, False], [False, True, True, False, True], [True] * 5]
    r = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ref = F.scaled_dot_product_attention(*(torch.tensor(a, dtype=torch.float64) for a in (q, k, v)), attn_mask=torch.tensor(mask))
    assert_close(r["output"], ref.numpy())


@pytest.mark.parametrize(
    "d, h, causal, pad",
    [
        pytest.param(8, 2, False, None, id="2-heads"),
        pytest.param(12, 4, True, None, id="4-heads-causal"),
        pytest.param(6, 3, True, [False, False, False, False, True, True], id="causal+padding"),
        pytest.param(4, 1, False, [False, True, False, False, False, False], id="one-head-padding"),
    ],
)
def test_multi_head_attention_matches_torch(torch, d, h, causal, pad):
    t = 6
    x, wq, wk, wv, wo = np.array(rand(t, d)), *(np.array(rand(d, d)) for _ in range(4))
    r = multi_head_attention(x.tolist(), wq.tolist(), wk.tolist(), wv.tolist(), wo.tolist(), h, causal=causal, key_padding_mask=pad)
    mha = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.tensor(np.concatenate([wq.T, wk.T, wv.T])))
        mha.out_proj.weight.copy_(torch.tensor(wo.T))
    tx = torch.tensor(x)[None]
    # nn.MultiheadAttention's boolean masks mark what is NOT allowed.
    attn_mask = torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None
    kpm = torch.tensor([pad]) if pad is not None else None
    out, weights = mha(tx, tx, tx, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=True, average_attn_weights=False)
    assert_close(r["output"], out[0].detach().numpy())
    assert_close(r["weights"], weights[0].detach().numpy())


def test_split_heads_matches_torch_view(torch):
    x = torch.tensor(rand(5, 12), dtype=torch.float64)
    ref = x.view(5, 4, 3).transpose(0, 1)  # (T, d) -> (h, T, d_h), as nanoGPT does per batch
    assert split_heads(x.tolist(), 4) == ref.tolist()
    assert merge_heads(ref.tolist()) == ref.transpose(0, 1).reshape(5, 12).tolist()
