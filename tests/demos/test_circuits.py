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


# ---------------------------------------------------------------------------
# trained_circuits: the circuits of the induction task's model, trained and before training


def torch_circuits(torch, params, cfg, idx):
    """Every head's circuits, written again in PyTorch (float64) from the weights: (qk, positional, ov) per head."""
    F = torch.nn.functional
    p = {name: torch.tensor(value, dtype=torch.float64) for name, value in params.items()}
    C, H, T = cfg.n_embd, cfg.n_head, cfg.block_size
    D = C // H
    eps = 1e-5

    # The model's forward pass on the held-out batch, for the mean scale of each LayerNorm's input.
    ids = torch.tensor(idx)
    x = p["wte"][ids] + p["wpe"][: ids.shape[1]]
    causal = torch.triu(torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool), 1)
    scales = []
    for layer in range(cfg.n_layer):
        scales.append(torch.sqrt(x.var(-1, unbiased=False) + eps).mean())
        n = F.layer_norm(x, (C,), p[f"h.{layer}.ln_1.weight"], p[f"h.{layer}.ln_1.bias"], eps=eps)
        q, k, v = (n @ p[f"h.{layer}.attn.c_attn.weight"] + p[f"h.{layer}.attn.c_attn.bias"]).split(C, dim=-1)
        q, k, v = (t.unflatten(-1, (H, D)).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
        a = (q @ k.transpose(-1, -2) / D**0.5).masked_fill(causal, float("-inf")).softmax(-1)
        x = x + (a @ v).transpose(1, 2).flatten(-2) @ p[f"h.{layer}.attn.c_proj.weight"] + p[f"h.{layer}.attn.c_proj.bias"]
    final_scale = torch.sqrt(x.var(-1, unbiased=False) + eps).mean()

    def linear_ln(x, gain, scale):
        return (x - x.mean(-1, keepdim=True)) * gain / scale

    letters = p["wte"][1:]
    out = []
    for layer in range(cfg.n_layer):
        w_q, w_k, w_v = p[f"h.{layer}.attn.c_attn.weight"].split(C, dim=1)
        w_o = p[f"h.{layer}.attn.c_proj.weight"]
        by_letter = linear_ln(letters, p[f"h.{layer}.ln_1.weight"], scales[layer])
        by_position = linear_ln(p["wpe"], p[f"h.{layer}.ln_1.weight"], scales[layer])
        for h in range(H):
            s = slice(h * D, (h + 1) * D)
            qk = (by_letter @ w_q[:, s]) @ (by_letter @ w_k[:, s]).T / D**0.5
            scores = (by_position @ w_q[:, s]) @ (by_position @ w_k[:, s]).T / D**0.5
            positional = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf")).softmax(-1)
            ov = linear_ln(by_letter @ w_v[:, s] @ w_o[s], p["ln_f.weight"], final_scale) @ letters.T
            out.append((qk, positional, ov))
    return out


@pytest.mark.parametrize("weights", circuits.WEIGHTS)
def test_trained_circuits_match_a_pytorch_reading_of_the_same_weights(torch, weights):
    r = circuits.trained_circuits(weights)
    assert_plain({k: v for k, v in r.items() if k != "recipe"}, leaves=NUMBERS + (str,))
    params, cfg, _ = circuits.induction_model(weights)
    reference = torch_circuits(torch, params, cfg, circuits._MODELS["run"][2].eval[0])
    for shown, (qk, positional, ov) in zip(r["heads"], reference, strict=True):
        np.testing.assert_allclose(shown["qk"], qk.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(shown["positional"], positional.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(shown["ov"], ov.numpy(), rtol=1e-10, atol=1e-12)


def test_the_trained_model_learned_the_task_and_its_circuits_name_heads_with_a_job():
    """The committed weights predict the second copy, and their circuits show a head that looks for
    its own letter and heads that copy; before training no circuit has a diagonal."""
    trained, initial = (circuits.trained_circuits(w) for w in ("trained", "initial"))
    # Learned: the second copy costs far less than the first, which stays a guess among 16 letters.
    assert trained["loss"]["second"] < 1.0 and abs(trained["loss"]["first"] - np.log(16)) < 0.1
    assert all(abs(loss - np.log(16)) < 0.1 for loss in initial["loss"].values())
    # The file is what its training run recorded: PyTorch's last evaluation (float32) gives this loss.
    assert abs(trained["recipe"]["final"]["eval_second"] - trained["loss"]["second"]) < 1e-3

    heads = {(h["layer"], h["head"]): h for h in trained["heads"]}
    # A duplicate-letter head in layer 0: its QK on letters peaks on the diagonal in all 16 rows, and on
    # held-out repeats most of its attention goes to the earlier copy of the current letter.
    dup = max(trained["heads"], key=lambda h: h["held_out"]["earlier_copy"])
    assert dup["layer"] == 0 and dup["own_letter"] == 1.0 and dup["held_out"]["earlier_copy"] > 0.5
    assert dup["eigen_copying"] < -0.9  # what it moves lowers the letter it found
    copiers = [key for key, h in heads.items() if h["copying"] >= 15 / 16 and h["eigen_copying"] > 0.9]
    assert len(copiers) >= 2, copiers
    for h in initial["heads"]:  # before training: no diagonal, attention spread evenly
        assert max(h["own_letter"], h["copying"]) <= 2 / 16 and abs(h["eigen_copying"]) < 0.5
        assert max(h["held_out"].values()) < 0.1


def test_unknown_weights_are_refused():
    with pytest.raises(ValueError, match="weights must be one of trained, initial"):
        circuits.trained_circuits("random")
