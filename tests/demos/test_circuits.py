"""demos.circuits: a head's QK and OV circuits, and the per-head split of the output projection.

Reference: torch.nn.MultiheadAttention with the same weights (its in-projection holds W_Q, W_K,
W_V; its out-projection W_O), run in float64: the sum of the heads' shares must be its output.
"""

import numpy as np
import pytest

from demo_checks import NUMBERS, assert_plain
from demos import circuits


def test_the_sum_of_the_heads_shares_is_pytorchs_multi_head_output(torch):
    C, H, T = 16, 4, 6
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, C))
    w_q, w_k, w_v, w_o = (rng.standard_normal((C, C)) / np.sqrt(C) for _ in range(4))
    mha = torch.nn.MultiheadAttention(C, H, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.tensor(np.concatenate([w_q.T, w_k.T, w_v.T])))  # torch stores W^T
        mha.out_proj.weight.copy_(torch.tensor(w_o.T))
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    expected, attn = mha(*(torch.tensor(x)[None],) * 3, attn_mask=mask, average_attn_weights=False)
    D = C // H
    shares = []
    for h in range(H):
        cols = slice(h * D, (h + 1) * D)
        w_ov = w_v[:, cols] @ w_o[cols, :]  # the head's OV circuit
        shares.append(attn[0, h].detach().numpy() @ x @ w_ov)
        w_qk = w_q[:, cols] @ w_k[:, cols].T  # its QK circuit gives the scores torch softmaxed
        scores = x @ w_qk @ x.T / np.sqrt(D)
        scores[np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        np.testing.assert_allclose(e / e.sum(axis=1, keepdims=True), attn[0, h].detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sum(shares), expected[0].detach().numpy(), rtol=1e-12, atol=1e-13)
    z = (attn[0] @ torch.tensor(x @ w_v).reshape(T, H, D).transpose(0, 1)).transpose(0, 1).reshape(T, C).detach().numpy()
    np.testing.assert_allclose(circuits.split_output(z, w_o, H), np.stack(shares), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("d_model, n_head", [(16, 4), (12, 3), (8, 1), (8, 8)])
def test_both_ways_agree_and_each_circuit_has_the_heads_rank(d_model, n_head):
    r = circuits.circuits(d_model=d_model, n_head=n_head, tokens=5, seed=1)
    assert_plain(r, leaves=NUMBERS)
    D = d_model // n_head
    assert r["d_head"] == D and r["qk_rank"] == [D] * n_head and r["ov_rank"] == [D] * n_head
    assert r["qk_shape"] == r["ov_shape"] == [d_model, d_model]
    assert max(r["score_gap"], r["output_gap"], r["split_gap"]) < 1e-12


@pytest.mark.parametrize("kwargs, message", [({"d_model": 10, "n_head": 4}, "multiple"), ({"tokens": 0}, "tokens"), ({"n_head": 0}, "n_head")])
def test_bad_sizes_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        circuits.circuits(**kwargs)
