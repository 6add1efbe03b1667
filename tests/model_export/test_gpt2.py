"""Our readable GPT-2 (model_export.gpt2) against Hugging Face's GPT2LMHeadModel.

The reference is transformers' eager-attention GPT-2 on the tiny shape (2 layers, 4 heads, width
64, GPT-2's vocabulary and positions). Its weights are redrawn with a larger spread than GPT-2's
initialisation (std 0.02), which makes attention nearly uniform and would let attention bugs hide
below the tolerance; with std 0.1 the attention rows are far from uniform.
"""

import pytest
import torch
import transformers

from model_export.gpt2 import GPT2, GPT2Config, attention_bias

TOL_HF = 1e-5
TINY = dict(n_layer=2, n_head=4, n_embd=64)


@pytest.fixture(scope="module")
def hf_model():
    torch.manual_seed(0)
    config = transformers.GPT2Config(**TINY, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            is_layer_norm_gain = ".ln_" in name and name.endswith(".weight")
            param.normal_(1.0 if is_layer_norm_gain else 0.0, 0.1)
    return model


@pytest.fixture(scope="module")
def model(hf_model):
    return GPT2.from_hf(hf_model, output_attentions=True, output_hidden_states=True)


def make_batch(batch: int, length: int, left_pad: list[int], seed: int = 0):
    """Random ids, a left-padded mask and the matching position ids (real tokens count from 0)."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, 50257, (batch, length), generator=generator)
    attention_mask = torch.ones(batch, length, dtype=torch.int64)
    for row, pad in enumerate(left_pad):
        attention_mask[row, :pad] = 0
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    return input_ids, attention_mask, position_ids


@torch.no_grad()
def hf_forward(hf_model, input_ids, attention_mask, position_ids):
    return hf_model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=False,
        output_attentions=True,
        output_hidden_states=True,
    )


def split_outputs(outputs, n_layer):
    logits, rest = outputs[0], outputs[1:]
    return logits, rest[: 2 * n_layer], rest[2 * n_layer : 3 * n_layer], rest[3 * n_layer :]


def test_attention_is_not_uniform(hf_model, model):
    """Guards the premise of the weight redraw: softmax rows must differ from uniform."""
    input_ids, attention_mask, position_ids = make_batch(1, 12, [0])
    with torch.no_grad():
        _, _, attentions, _ = split_outputs(model(input_ids, attention_mask, position_ids), 2)
    last_row = attentions[0][0, :, -1, :]  # (nh, 12)
    assert (last_row - 1 / 12).abs().max() > 0.05


@pytest.mark.parametrize(
    "batch, length, left_pad",
    [(1, 1, [0]), (1, 12, [0]), (2, 10, [0, 3]), (3, 7, [2, 0, 6])],
)
def test_logits_match_hf_without_past(hf_model, model, batch, length, left_pad):
    input_ids, attention_mask, position_ids = make_batch(batch, length, left_pad)
    expected = hf_forward(hf_model, input_ids, attention_mask, position_ids).logits
    with torch.no_grad():
        logits, present, _, _ = split_outputs(model(input_ids, attention_mask, position_ids), 2)
    real = attention_mask.bool()  # padded positions predict nothing; compare real tokens
    assert logits.shape == (batch, length, 50257)
    assert (logits - expected)[real].abs().max() <= TOL_HF
    assert torch.isfinite(logits).all()  # fully masked padding rows must not turn into NaN
    assert len(present) == 4
    for tensor in present:
        assert tensor.shape == (batch, 4, length, 16)


@pytest.mark.parametrize(
    "prompt_len, new_len, left_pad",
    [(7, 1, [0]), (7, 3, [0]), (1, 1, [0]), (9, 1, [0, 4]), (6, 2, [3, 0])],
)
def test_logits_with_past_match_hf_full_sequence(hf_model, model, prompt_len, new_len, left_pad):
    """Prefill, then feed the present back as past: the new tokens' logits must equal those of
    Hugging Face recomputing the whole sequence without any cache."""
    batch, total = len(left_pad), prompt_len + new_len
    input_ids, attention_mask, position_ids = make_batch(batch, total, left_pad, seed=1)
    expected = hf_forward(hf_model, input_ids, attention_mask, position_ids).logits[:, prompt_len:]

    with torch.no_grad():
        _, past, _, _ = split_outputs(model(input_ids[:, :prompt_len], attention_mask[:, :prompt_len], position_ids[:, :prompt_len]), 2)
        logits, present, attentions, _ = split_outputs(model(input_ids[:, prompt_len:], attention_mask, position_ids[:, prompt_len:], *past), 2)
    real = attention_mask[:, prompt_len:].bool()
    assert (logits - expected)[real].abs().max() <= TOL_HF
    for before, after in zip(past, present):
        assert after.shape == (batch, 4, total, 16)
        assert torch.equal(after[:, :, :prompt_len], before)  # the cache is extended, not rewritten
    assert attentions[0].shape == (batch, 4, new_len, total)


def test_attentions_and_hidden_states_match_hf(hf_model, model):
    input_ids, attention_mask, position_ids = make_batch(2, 9, [0, 2], seed=2)
    expected = hf_forward(hf_model, input_ids, attention_mask, position_ids)
    with torch.no_grad():
        _, _, attentions, hidden_states = split_outputs(model(input_ids, attention_mask, position_ids), 2)
    real_queries = attention_mask.bool()[:, None, :, None]  # (B, 1, T, 1)
    for ours, theirs in zip(attentions, expected.attentions, strict=True):
        assert (ours - theirs).abs().masked_select(real_queries).max() <= TOL_HF
    # HF's last hidden state has ln_f applied; ours is the raw residual stream of every block.
    # Padding positions differ on purpose (a padding query attends to itself, HF's to everything).
    real = attention_mask.bool()  # (B, T)
    assert len(hidden_states) == len(expected.hidden_states) == 3
    for ours, theirs in zip(hidden_states[:-1], expected.hidden_states[:-1]):
        assert (ours - theirs)[real].abs().max() <= TOL_HF
    with torch.no_grad():
        assert (model.ln_f(hidden_states[-1]) - expected.hidden_states[-1])[real].abs().max() <= TOL_HF


def test_default_outputs_are_logits_and_present(hf_model):
    plain = GPT2.from_hf(hf_model)
    input_ids, attention_mask, position_ids = make_batch(1, 5, [0])
    with torch.no_grad():
        outputs = plain(input_ids, attention_mask, position_ids)
    assert len(outputs) == 1 + 2 * 2


def test_lm_head_is_tied_to_token_embedding(hf_model, model):
    assert model.lm_head.weight is model.wte.weight
    assert model.lm_head.weight.data_ptr() == model.wte.weight.data_ptr()
    # parameters() lists a shared tensor once: the count equals Hugging Face's (also tied)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in hf_model.parameters())


def test_weights_are_copied_not_shared(hf_model, model):
    hf_wte = hf_model.transformer.wte.weight
    assert torch.equal(model.wte.weight, hf_wte)
    assert model.wte.weight.data_ptr() != hf_wte.data_ptr()
    # Conv1D (in, out) became nn.Linear (out, in)
    assert model.blocks[0].attn.c_attn.weight.shape == (3 * 64, 64)
    assert torch.equal(model.blocks[0].attn.c_attn.weight, hf_model.transformer.h[0].attn.c_attn.weight.t())


def test_config_from_hf():
    config = GPT2Config.from_hf(transformers.GPT2Config(**TINY))
    assert config == GPT2Config(n_layer=2, n_head=4, n_embd=64, n_positions=1024, vocab_size=50257)
    assert config.head_dim == 16
    assert GPT2Config().to_dict()["n_embd"] == 768


@pytest.mark.parametrize(
    "override",
    [{"activation_function": "relu"}, {"n_inner": 100}, {"scale_attn_by_inverse_layer_idx": True}],
)
def test_config_rejects_variants_it_does_not_implement(override):
    with pytest.raises(ValueError, match="unsupported GPT-2 variant"):
        GPT2Config.from_hf(transformers.GPT2Config(**TINY, **override))


def test_causal_mask_uses_the_past_offset(model):
    """With 3 cached tokens, new query i (absolute position 3 + i) sees keys 0 .. 3 + i."""
    from model_export.gpt2 import allowed_keys

    allowed = allowed_keys(torch.tensor([[0, 1, 1, 1, 1]]), num_new=2)[0, 0]
    assert allowed.tolist() == [[False, True, True, True, False], [False, True, True, True, True]]


def test_a_padding_query_sees_only_itself():
    """Left padding: the padded queries would see no key at all; each sees itself instead."""
    from model_export.gpt2 import allowed_keys

    allowed = allowed_keys(torch.tensor([[0, 0, 1, 1]]), num_new=4)[0, 0]
    assert allowed.tolist() == [
        [True, False, False, False],
        [False, True, False, False],
        [False, False, True, False],
        [False, False, True, True],
    ]
    assert allowed.any(dim=-1).all()  # no empty softmax row


def test_attention_bias_is_zero_or_float32_min():
    from model_export.gpt2 import allowed_keys, attention_bias

    mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
    bias = attention_bias(mask, num_new=3)
    assert bias.shape == (2, 1, 3, 3) and bias.dtype == torch.float32
    allowed = allowed_keys(mask, 3)
    assert (bias[allowed] == 0).all()
    assert (bias[~allowed] == torch.finfo(torch.float32).min).all()


def test_hidden_states_are_embeddings_then_each_block(hf_model, model):
    """hidden_states.0 is token + position embedding; hidden_states.i is block i's output."""
    input_ids, attention_mask, position_ids = make_batch(1, 6, [0], seed=4)
    with torch.no_grad():
        _, _, _, hidden_states = split_outputs(model(input_ids, attention_mask, position_ids), 2)
        embeddings = model.wte(input_ids) + model.wpe(position_ids)
        bias = attention_bias(attention_mask, 6)
        after_block_0 = model.blocks[0](embeddings, bias, *model.empty_past(1)[:2])[0]
    assert len(hidden_states) == 3
    assert torch.equal(hidden_states[0], embeddings)
    assert torch.allclose(hidden_states[1], after_block_0, atol=1e-6)


def test_outputs_without_past_equal_outputs_with_empty_past(model):
    input_ids, attention_mask, position_ids = make_batch(2, 5, [0, 1], seed=5)
    with torch.no_grad():
        implicit = model(input_ids, attention_mask, position_ids)
        explicit = model(input_ids, attention_mask, position_ids, *model.empty_past(2))
    assert all(torch.equal(a, b) for a, b in zip(implicit, explicit, strict=True))


@pytest.mark.parametrize(
    "shape",
    [
        dict(n_layer=3, n_head=2, n_embd=32, n_positions=16, vocab_size=100),
        dict(n_layer=1, n_head=8, n_embd=64, n_positions=32, vocab_size=7, layer_norm_epsilon=1e-3),
    ],
)
def test_other_shapes_match_hf(shape):
    """Nothing is tied to GPT-2 small's sizes: other shapes match the reference too."""
    torch.manual_seed(3)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(**shape, attn_implementation="eager")).eval()
    ours = GPT2.from_hf(hf)
    assert ours.config.n_positions == shape["n_positions"]
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, shape["vocab_size"], (2, shape["n_positions"]), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    position_ids = torch.arange(shape["n_positions"]).repeat(2, 1)
    expected = hf_forward(hf, input_ids, attention_mask, position_ids).logits
    with torch.no_grad():
        logits = ours(input_ids, attention_mask, position_ids)[0]
    assert (logits - expected).abs().max() <= TOL_HF
