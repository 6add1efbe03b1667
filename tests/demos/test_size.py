"""demos.size against the published tables, hand formulas and Hugging Face models.

Torch-free tests first (every preset against its published count, row by row,
exact hand counts, KV cache, FLOPs, MoE); the last section builds the same
architectures with `transformers` on PyTorch's meta device (no memory used) and
compares `sum(p.numel())` exactly. It is skipped where torch is missing.
"""

import math
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import assert_plain as check_plain
from demos import size
from demos.size import (
    chinchilla_tokens,
    count_parameters,
    kaplan_loss,
    kv_cache_bytes_per_token,
    llama_ffn_width,
    model_size,
    preset,
    preset_table,
    presets,
    training_flops,
    weight_memory,
)

assert_plain = partial(check_plain, allow_none=True)


PRESET_IDS = [p["id"] for p in size.PRESETS]

# Published parameter counts, row by row, as the sources print them.
PUBLISHED = {
    "gpt2-small": 124e6,
    "gpt2-medium": 355e6,
    "gpt2-large": 774e6,
    "gpt2-xl": 1558e6,
    "bert-base": 110e6,
    "bert-large": 340e6,
    "gpt3-small": 125e6,
    "gpt3-medium": 350e6,
    "gpt3-large": 760e6,
    "gpt3-xl": 1.3e9,
    "gpt3-2.7b": 2.7e9,
    "gpt3-6.7b": 6.7e9,
    "gpt3-13b": 13e9,
    "gpt3-175b": 175e9,
    "llama-7b": 6.7e9,
    "llama-13b": 13.0e9,
    "llama-33b": 32.5e9,
    "llama-65b": 65.2e9,
}

# The shapes of the lecture's GPT-3 table (layers, width, heads) and LLaMA table
# (width, heads, layers). GPT-3 XL and 13B are adjusted in the presets (see `note`).
GPT3_TABLE = {
    "gpt3-small": (12, 768, 12),
    "gpt3-medium": (24, 1024, 16),
    "gpt3-large": (24, 1536, 16),
    "gpt3-xl": (24, 2048, 24),
    "gpt3-2.7b": (32, 2560, 32),
    "gpt3-6.7b": (32, 4096, 32),
    "gpt3-13b": (40, 5140, 40),
    "gpt3-175b": (96, 12288, 96),
}
LLAMA_TABLE = {"llama-7b": (4096, 32, 32), "llama-13b": (5120, 40, 40), "llama-33b": (6656, 52, 60), "llama-65b": (8192, 64, 80)}


def gpt2_by_hand(n_layer, d, vocab=50257, n_positions=1024):
    """GPT-2: per block ln_1, c_attn (d, 3d)+3d, c_proj (d, d)+d, ln_2, c_fc (d, 4d)+4d, c_proj (4d, d)+d."""
    block = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d)
    return vocab * d + n_positions * d + n_layer * block + 2 * d  # tied head, final LayerNorm


# ---------------------------------------------------------------------------
# presets against the published tables


@pytest.mark.parametrize("pid", PRESET_IDS)
def test_preset_within_two_percent_of_published(pid):
    total = count_parameters(**preset(pid))["total"]
    assert abs(total - PUBLISHED[pid]) / PUBLISHED[pid] < 0.02, f"{pid}: {total:,} vs {PUBLISHED[pid]:,.0f}"


def test_preset_table_rows():
    rows = preset_table()
    assert [r["id"] for r in rows] == PRESET_IDS
    for r in rows:
        assert r["published"] == PUBLISHED[r["id"]]
        assert r["computed"] == count_parameters(**preset(r["id"]))["total"]
        assert r["relative_error"] == (r["computed"] - r["published"]) / r["published"]
        assert abs(r["relative_error"]) < 0.02
    assert_plain(rows)


def test_presets_follow_the_lecture_tables():
    for pid, (layers, width, heads) in GPT3_TABLE.items():
        c = preset(pid)
        assert c["n_layer"] == layers and c["d_ff"] == 4 * c["d_model"]
        if pid == "gpt3-13b":  # 40 heads x 128 = 5120; the table's 5140 is a misprint
            assert c["d_model"] == 5120 and c["n_head"] == 40
        elif pid == "gpt3-xl":  # 24 heads x 128 would be 3072 wide; 2048 = 16 x 128
            assert c["d_model"] == width and c["n_head"] == 16
        else:
            assert (c["d_model"], c["n_head"]) == (width, heads)
    for pid, (width, heads, layers) in LLAMA_TABLE.items():
        c = preset(pid)
        assert (c["d_model"], c["n_head"], c["n_layer"]) == (width, heads, layers)
    llama_tokens = {p["id"]: p["train_tokens"] for p in presets() if p["family"] == "LLaMA"}
    assert llama_tokens == {"llama-7b": 10**12, "llama-13b": 10**12, "llama-33b": 1.4e12, "llama-65b": 1.4e12}
    assert_plain(presets())


def test_gpt2_small_exact():
    p = count_parameters(**preset("gpt2-small"))
    assert p["total"] == 124_439_808 == gpt2_by_hand(12, 768)
    assert p["token_embedding"] == 50257 * 768 == 38_597_376  # the (50257, 768) table, ~39M
    assert p["attention_per_layer"] == 768 * 2304 + 2304 + 768 * 768 + 768  # fused c_attn + c_proj
    assert p["ffn_per_layer"] == 768 * 3072 + 3072 + 3072 * 768 + 768  # ~4.7M of the block's ~7M
    assert p["per_layer"] == 7_087_872
    assert p["lm_head"] == 0  # tied
    assert_plain(p)


@pytest.mark.parametrize("pid, layers, d", [("gpt2-medium", 24, 1024), ("gpt2-large", 36, 1280), ("gpt2-xl", 48, 1600)])
def test_gpt2_family_exact(pid, layers, d):
    assert count_parameters(**preset(pid))["total"] == gpt2_by_hand(layers, d)


def test_bert_base_exact():
    p = count_parameters(**preset("bert-base"))
    d, f = 768, 3072
    embeddings = 30522 * d + 512 * d + 2 * d + 2 * d  # word, position, segment, LayerNorm
    layer = 4 * (d * d + d) + 2 * d + (d * f + f + f * d + d) + 2 * d
    assert p["total"] == embeddings + 12 * layer + d * d + d == 109_482_240  # + pooler
    assert p["final_norm"] == 0 and p["embedding_norm"] == 2 * d  # post-norm


def test_llama_ffn_width_matches_the_released_models():
    assert [llama_ffn_width(d) for d in (4096, 5120, 6656, 8192)] == [11008, 13824, 17920, 22016]


def test_llama_7b_by_hand():
    d, f, layers, vocab = 4096, 11008, 32, 32000
    layer = 4 * d * d + 3 * d * f + 2 * d  # no biases; two RMSNorm scales
    assert count_parameters(**preset("llama-7b"))["total"] == 2 * vocab * d + layers * layer + d


# ---------------------------------------------------------------------------
# architecture switches


BASE = dict(n_layer=2, d_model=64, n_head=8, vocab_size=1000, n_positions=128)


def test_tying_saves_exactly_one_vocab_table():
    tied = count_parameters(**BASE, tie_embeddings=True)["total"]
    untied = count_parameters(**BASE, tie_embeddings=False)["total"]
    assert untied - tied == 1000 * 64


def test_rotary_and_sinusoidal_positions_are_free():
    learned = count_parameters(**BASE)
    for kind in ("rotary", "sinusoidal"):
        assert learned["total"] - count_parameters(**BASE, positions=kind)["total"] == 128 * 64


def test_gated_ffn_adds_a_third_matrix():
    plain = count_parameters(**BASE, bias=False)
    gated = count_parameters(**BASE, bias=False, gated_ffn=True)
    assert gated["ffn_per_layer"] - plain["ffn_per_layer"] == 64 * 256


def test_rmsnorm_has_half_the_parameters_of_layernorm():
    ln = count_parameters(**BASE)
    rms = count_parameters(**BASE, norm="rmsnorm")
    assert ln["norms_per_layer"] == 2 * rms["norms_per_layer"] == 4 * 64


def test_gqa_and_mqa_shrink_only_k_and_v():
    mha = count_parameters(**BASE, bias=False)
    gqa = count_parameters(**BASE, bias=False, n_kv_head=2)
    mqa = count_parameters(**BASE, bias=False, n_kv_head=1)
    assert mha["attention_k"] == 64 * 64 and gqa["attention_k"] == 64 * 16 and mqa["attention_k"] == 64 * 8
    assert mha["attention_q"] == gqa["attention_q"] == mqa["attention_q"]


def test_mixture_of_experts_total_and_active():
    dense = count_parameters(**BASE, bias=False)
    moe = count_parameters(**BASE, bias=False, n_experts=8, top_k=2)
    expert = dense["ffn_per_expert"]
    assert moe["ffn_per_layer"] == 8 * expert + 64 * 8  # every expert plus the router
    assert moe["ffn_active_per_layer"] == 2 * expert + 64 * 8
    assert moe["total"] - moe["active"] == 2 * 6 * expert
    shared = count_parameters(**BASE, bias=False, n_experts=8, top_k=2, n_shared_experts=1)
    assert shared["ffn_per_layer"] == moe["ffn_per_layer"] + expert
    assert shared["ffn_active_per_layer"] == moe["ffn_active_per_layer"] + expert
    r = model_size(**BASE, bias=False, n_experts=8, top_k=2)
    assert r["moe"] == {"total": moe["total"], "active": moe["active"], "active_fraction": moe["active"] / moe["total"]}


@settings(max_examples=60, deadline=None)
@given(
    n_layer=st.integers(1, 48),
    heads=st.sampled_from([(1, 1), (4, 2), (8, 8), (12, 4), (16, 1)]),
    width_per_head=st.integers(1, 96),
    vocab=st.integers(1, 60000),
    positions=st.sampled_from(size.POSITIONS),
    tie=st.booleans(),
    gated=st.booleans(),
    bias=st.booleans(),
    norm=st.sampled_from(["layernorm", "rmsnorm"]),
    where=st.sampled_from(["pre", "post"]),
    experts=st.sampled_from([(1, 1, 0), (8, 2, 0), (16, 1, 2)]),
)
def test_parts_add_up(n_layer, heads, width_per_head, vocab, positions, tie, gated, bias, norm, where, experts):
    h, kv = heads
    n_experts, top_k, shared = experts
    shape = dict(
        d_model=h * width_per_head,
        n_head=h,
        n_kv_head=kv,
        vocab_size=vocab,
        n_positions=512,
        positions=positions,
        tie_embeddings=tie,
        gated_ffn=gated,
        bias=bias,
        norm=norm,
        norm_position=where,
        n_experts=n_experts,
        top_k=top_k,
        n_shared_experts=shared,
    )
    p = count_parameters(n_layer=n_layer, **shape)
    parts = ("token_embedding", "position_embedding", "segment_embedding", "embedding_norm", "layers", "final_norm", "pooler", "lm_head")
    assert p["total"] == sum(p[k] for k in parts)
    assert p["per_layer"] == p["attention_per_layer"] + p["ffn_per_layer"] + p["norms_per_layer"]
    assert p["attention_per_layer"] == sum(p[f"attention_{k}"] for k in "qkvo")
    assert p["layers"] == n_layer * p["per_layer"]
    assert p["active"] <= p["total"]
    more = count_parameters(n_layer=n_layer + 1, **shape)
    assert more["total"] - p["total"] == p["per_layer"]


# ---------------------------------------------------------------------------
# memory, KV cache, compute


def test_weight_memory_per_precision():
    n = count_parameters(**preset("gpt2-small"))["total"]
    m = weight_memory(n)
    assert m == {"fp32": 4.0 * n, "fp16": 2.0 * n, "bf16": 2.0 * n, "int8": 1.0 * n, "int4": 0.5 * n}
    assert round(m["fp32"] / 1e6) == 498  # the ~499 MB fp32 file of GPT-2 small


def test_kv_cache_formula():
    # 2 (K and V) * layers * kv heads * head width * bytes
    assert kv_cache_bytes_per_token(12, 12, 64, "fp16") == 2 * 12 * 12 * 64 * 2 == 36_864
    assert kv_cache_bytes_per_token(32, 32, 128, "fp16") == 524_288  # LLaMA 7B: 0.5 MiB per token
    assert kv_cache_bytes_per_token(32, 8, 128, "fp16") == 524_288 / 4  # GQA with 8 groups
    assert kv_cache_bytes_per_token(32, 1, 128, "fp32") == 2 * 32 * 128 * 4  # MQA


def test_model_size_kv_cache_and_compute():
    r = model_size(**preset("llama-7b"), n_kv_head=8, context_length=4096, train_tokens=10**12)
    kv = r["kv_cache"]
    assert kv["bytes_per_token"] == {"mha": 524_288.0, "gqa": 131_072.0, "mqa": 16_384.0}
    assert kv["bytes_per_token_model"] == 131_072.0
    assert kv["bytes_for_context"] == 131_072 * 4096
    n = r["parameters"]["total"]
    assert r["training_flops"] == 6.0 * n * 10**12
    assert r["chinchilla_tokens"] == 20.0 * n
    assert r["train_tokens"] == 10**12
    assert r["weight_memory"] == weight_memory(n)
    assert_plain(r)
    # Without a token count the Chinchilla budget is used.
    default = model_size(**preset("gpt2-small"))
    assert default["train_tokens"] == 20 * 124_439_808
    assert default["training_flops"] == 6.0 * 124_439_808 * 20 * 124_439_808


def test_flops_and_chinchilla_rules():
    assert training_flops(10**9, 2 * 10**10) == 1.2e20
    assert chinchilla_tokens(70 * 10**9) == 1.4e12  # 20 tokens per parameter
    gpt3 = count_parameters(**preset("gpt3-175b"))["total"]
    assert 3.0e23 < training_flops(gpt3, 300 * 10**9) < 3.3e23  # the well-known ~3.1e23 FLOPs


def test_kaplan_loss_is_the_papers_power_law():
    # Kaplan et al. (2020), eq. (1.1): L(N) = (N_c / N) ** alpha_N, alpha_N = 0.076, N_c = 8.8e13.
    assert (size.KAPLAN_ALPHA_N, size.KAPLAN_N_C) == (0.076, 8.8e13)
    for n in (10**6, 124_000_000, 10**9, 175 * 10**9):
        assert kaplan_loss(n) == pytest.approx(math.exp(0.076 * (math.log(8.8e13) - math.log(n))), rel=1e-12)
    assert kaplan_loss(8.8e13) == pytest.approx(1.0)  # N = N_c gives a loss of 1 nat
    assert kaplan_loss(2 * 10**9) / kaplan_loss(10**9) == pytest.approx(2**-0.076)  # ~0.95 per doubling, as the page says
    assert kaplan_loss(10**9) == pytest.approx(2.376, abs=1e-3)
    with pytest.raises(ValueError, match="n_params must be between 1"):
        kaplan_loss(0)


# ---------------------------------------------------------------------------
# bad input

BAD_INPUTS = [
    pytest.param(dict(BASE, n_head=7), "n_head must divide d_model", id="heads-divide"),
    pytest.param(dict(BASE, n_kv_head=3), "n_kv_head must divide n_head", id="kv-divide"),
    pytest.param(dict(BASE, n_layer=0), "n_layer must be between 1", id="zero-layers"),
    pytest.param(dict(BASE, d_model=-64), "d_model must be between 1", id="negative-width"),
    pytest.param(dict(BASE, n_layer=2.5), "n_layer must be a whole number", id="fractional"),
    pytest.param(dict(BASE, vocab_size="1000"), "vocab_size must be a whole number", id="string"),
    pytest.param(dict(BASE, n_layer=True), "whole number", id="bool-count"),
    pytest.param(dict(BASE, n_positions=0), "n_positions must be between 1", id="learned-needs-positions"),
    pytest.param(dict(BASE, positions="alibi"), "positions must be one of", id="unknown-positions"),
    pytest.param(dict(BASE, norm="batchnorm"), "norm must be one of", id="unknown-norm"),
    pytest.param(dict(BASE, tie_embeddings="yes"), "true or false", id="flag-string"),
    pytest.param(dict(BASE, n_experts=4, top_k=5), "top_k must be between 1 and 4", id="top-k"),
    pytest.param({"n_layer": 2, "d_model": 64}, "missing", id="missing-field"),
    pytest.param(dict(BASE, colour="red"), "unexpected keyword", id="unknown-field"),
    pytest.param(dict(BASE, n_layer=10_000, d_model=1_000_000, n_head=1), "2\\^53", id="too-large"),
]


@pytest.mark.parametrize("config, message", BAD_INPUTS)
def test_bad_config_raises_readable_value_error(config, message):
    with pytest.raises(ValueError, match=message):
        count_parameters(**config)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="unknown preset"):
        preset("gpt-5")
    with pytest.raises(ValueError, match="kv_precision must be one of"):
        model_size(**BASE, kv_precision="fp8")
    with pytest.raises(ValueError, match="context_length"):
        model_size(**BASE, context_length=0)
    with pytest.raises(ValueError, match="train_tokens"):
        model_size(**BASE, train_tokens=-5)
    with pytest.raises(ValueError, match="n_params"):
        weight_memory(-1)
    assert math.isfinite(model_size(**BASE, train_tokens=1e12)["training_flops"])  # JS sends floats


# ---------------------------------------------------------------------------
# Hugging Face models, built on the meta device: exact parameter counts


def hf_count(torch, model_class, config):
    with torch.device("meta"):
        model = model_class(config)
    return sum(p.numel() for p in model.parameters())  # a tied weight is counted once


def hf_model(pid):
    """The transformers class and config of a preset."""
    import transformers as tf

    c = preset(pid)
    if pid.startswith(("gpt2", "gpt3")):
        return tf.GPT2LMHeadModel, tf.GPT2Config(
            n_layer=c["n_layer"], n_embd=c["d_model"], n_head=c["n_head"], n_positions=c["n_positions"], vocab_size=c["vocab_size"]
        )
    if pid.startswith("bert"):
        return tf.BertModel, tf.BertConfig(
            num_hidden_layers=c["n_layer"], hidden_size=c["d_model"], num_attention_heads=c["n_head"], intermediate_size=c["d_ff"]
        )
    return tf.LlamaForCausalLM, tf.LlamaConfig(
        num_hidden_layers=c["n_layer"],
        hidden_size=c["d_model"],
        num_attention_heads=c["n_head"],
        intermediate_size=c["d_ff"],
        vocab_size=c["vocab_size"],
        tie_word_embeddings=False,
    )


def test_gpt2_small_matches_hf_default_config(torch):
    from transformers import GPT2Config, GPT2LMHeadModel

    assert hf_count(torch, GPT2LMHeadModel, GPT2Config()) == count_parameters(**preset("gpt2-small"))["total"]


def test_bert_base_matches_hf_default_config(torch):
    from transformers import BertConfig, BertModel

    assert hf_count(torch, BertModel, BertConfig()) == count_parameters(**preset("bert-base"))["total"]


@pytest.mark.parametrize("pid", PRESET_IDS)
def test_every_preset_matches_hf(torch, pid):
    model_class, config = hf_model(pid)
    assert hf_count(torch, model_class, config) == count_parameters(**preset(pid))["total"]


def test_llama_gqa_matches_hf(torch):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=256, intermediate_size=688, num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2, vocab_size=500, tie_word_embeddings=False
    )
    ours = count_parameters(
        n_layer=3,
        d_model=256,
        n_head=8,
        n_kv_head=2,
        d_ff=688,
        vocab_size=500,
        positions="rotary",
        tie_embeddings=False,
        gated_ffn=True,
        bias=False,
        norm="rmsnorm",
    )
    assert hf_count(torch, LlamaForCausalLM, config) == ours["total"]


def test_mixtral_moe_matches_hf(torch):
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(
        hidden_size=128,
        intermediate_size=320,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=4,
        vocab_size=300,
        num_local_experts=8,
        num_experts_per_tok=2,
        tie_word_embeddings=False,
    )
    ours = count_parameters(
        n_layer=2,
        d_model=128,
        n_head=8,
        n_kv_head=4,
        d_ff=320,
        vocab_size=300,
        positions="rotary",
        tie_embeddings=False,
        gated_ffn=True,
        bias=False,
        norm="rmsnorm",
        n_experts=8,
        top_k=2,
    )
    assert hf_count(torch, MixtralForCausalLM, config) == ours["total"]
