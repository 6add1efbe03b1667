"""demos.backprop against PyTorch autograd (gpt_reference.py): the loss and every parameter's
gradient in float64; and, where PyTorch is missing (Pyodide), against central differences.
"""

import math

import numpy as np
import pytest

from demos import backprop
from demos.backprop import TinyConfig
from gpt_reference import torch_loss

CASES = [  # (name, config, batch, tokens, ignored positions)
    ("mlp", TinyConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8), 3, 7, ()),
    ("attention-only", TinyConfig(vocab_size=9, block_size=12, n_layer=2, n_head=4, n_embd=16, mlp=False), 2, 12, ()),
    ("one layer, one head, ignored targets", TinyConfig(vocab_size=5, block_size=6, n_layer=1, n_head=1, n_embd=4), 4, 5, ((0, 0), (2, 3))),
    ("three layers, T shorter than block_size", TinyConfig(vocab_size=13, block_size=16, n_layer=3, n_head=2, n_embd=12), 2, 9, ((1, 8),)),
]


def batch(cfg, B, T, ignored, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, cfg.vocab_size, size=(B, T))
    targets = rng.integers(0, cfg.vocab_size, size=(B, T))
    for b, pos in ignored:
        targets[b, pos] = -1
    return idx, targets


def perturbed(params, seed):
    """GPT-2's init plus noise on every parameter, so LayerNorm gains and biases are not 1 and 0."""
    rng = np.random.default_rng(seed)
    return {k: v + rng.normal(0, 0.3, v.shape) for k, v in params.items()}


@pytest.mark.parametrize("name, cfg, B, T, ignored", CASES, ids=[c[0] for c in CASES])
def test_loss_and_every_gradient_match_autograd(torch, name, cfg, B, T, ignored):
    params = perturbed(backprop.init_params(cfg, seed=1), seed=2)
    idx, targets = batch(cfg, B, T, ignored, seed=3)
    _, loss, cache = backprop.forward(params, cfg, idx, targets)
    grads = backprop.backward(params, cfg, cache)
    ref_loss, t = torch_loss(torch, params, cfg, idx, targets)
    ref_loss.backward()
    assert loss == pytest.approx(ref_loss.item(), rel=1e-12)
    assert grads.keys() == params.keys()
    for key, g in grads.items():
        ref = t[key].grad.numpy()
        scale = max(np.abs(ref).max(), 1e-12)
        assert np.abs(g - ref).max() / scale < 1e-6, key


def test_init_follows_gpt2():
    """N(0, 0.02) weights, residual projections 0.02 / sqrt(2 L), zero biases, unit LayerNorm gains."""
    cfg = TinyConfig(vocab_size=500, block_size=64, n_layer=4, n_head=4, n_embd=64)
    params = backprop.init_params(cfg, seed=0)
    assert params["wte"].std() == pytest.approx(0.02, rel=0.02)
    assert params["h.0.attn.c_attn.weight"].std() == pytest.approx(0.02, rel=0.03)
    for name in ("h.3.attn.c_proj.weight", "h.3.mlp.c_proj.weight"):
        assert params[name].std() == pytest.approx(0.02 / math.sqrt(8), rel=0.05), name
    assert not params["h.1.mlp.c_fc.bias"].any()
    assert (params["ln_f.weight"] == 1).all()


def test_the_unembedding_is_the_embedding():
    """Tied weights: logits are the final stream times wte transposed (no separate head)."""
    cfg = TinyConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_embd=4)
    params = backprop.init_params(cfg, seed=0)
    assert "lm_head.weight" not in params
    logits, _, cache = backprop.forward(params, cfg, np.array([[1, 2, 3]]))
    np.testing.assert_allclose(logits, cache["xf"] @ params["wte"].T)


def test_gradients_match_central_differences():
    """d loss / d p against (loss(p + h) - loss(p - h)) / 2h for a few entries of every parameter."""
    cfg = TinyConfig(vocab_size=6, block_size=5, n_layer=2, n_head=2, n_embd=4)
    params = perturbed(backprop.init_params(cfg, seed=4), seed=5)
    idx, targets = batch(cfg, 2, 5, ((0, 1),), seed=6)
    _, _, cache = backprop.forward(params, cfg, idx, targets)
    grads = backprop.backward(params, cfg, cache)
    rng = np.random.default_rng(7)
    h = 1e-6
    for name, value in params.items():
        for flat in rng.choice(value.size, size=min(3, value.size), replace=False):
            at = np.unravel_index(flat, value.shape)
            saved = value[at]
            value[at] = saved + h
            up = backprop.forward(params, cfg, idx, targets)[1]
            value[at] = saved - h
            down = backprop.forward(params, cfg, idx, targets)[1]
            value[at] = saved
            assert grads[name][at] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-9), (name, at)


@pytest.mark.parametrize("logits, target", [([2.0, 1.0, 0.0], 0), ([0.5, -3.0, 4.0, 4.0], 1), ([10.0, 0.0], 1)])
def test_softmax_cross_entropy_gradient_matches_autograd(torch, logits, target):
    z = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(z[None], torch.tensor([target]))
    loss.backward()
    out = backprop.softmax_cross_entropy(logits, target)
    assert out["loss"] == pytest.approx(loss.item(), rel=1e-12)
    assert out["bits"] == pytest.approx(loss.item() / math.log(2), rel=1e-12)
    np.testing.assert_allclose(out["grad"], z.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert sum(out["grad"]) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("logits, target, message", [([1.0], 0, "2 to 1,000"), ([1.0, 2.0], 2, "target"), ([1.0, float("nan")], 0, "logits")])
def test_softmax_cross_entropy_refuses_bad_input(logits, target, message):
    with pytest.raises(ValueError, match=message):
        backprop.softmax_cross_entropy(logits, target)
