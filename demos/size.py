"""How big is a Transformer? Parameters, memory, KV cache and training compute.

A decoder (GPT, LLaMA) or encoder (BERT) stack is a handful of matrices repeated
`n_layer` times, plus embedding tables at the ends. With width d, FFN width f,
h heads of width d_h = d/h, and h_kv key/value heads (GQA; h_kv = h is ordinary
multi-head attention, h_kv = 1 is multi-query attention), one layer holds:

    attention   W_Q (d, d) + W_K (d, h_kv d_h) + W_V (d, h_kv d_h) + W_O (d, d)
    FFN         W_1 (d, f) + W_2 (f, d), or with a gated FFN (SwiGLU) a third (d, f)
    norms       two LayerNorms (2d each: scale and shift) or RMSNorms (d: scale only)

plus a bias vector after every matrix when the model uses biases. Around the
stack: a token table (V, d), a learned position table (P, d) unless positions are
sinusoidal or rotary, BERT's segment table, a final norm (pre-norm models) or an
embedding norm (post-norm models), and the output head (V, d), which costs nothing
extra when it is tied to the token table.

The same counts give the memory of the weights (bytes per parameter), the KV
cache (2 * n_layer * h_kv * d_h numbers per token), the training compute
(about 6 N D floating-point operations for N parameters and D tokens) and the
compute-optimal token budget of the Chinchilla rule (about 20 tokens per
parameter). A mixture-of-experts FFN stores every expert but runs only `top_k`
of them (plus any shared experts) per token: total versus active parameters.
"""

from demos import _checks

BYTES_PER_PARAM = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5}
TRAIN_FLOPS_PER_PARAM_TOKEN = 6  # ~2 for the forward pass, ~4 for the backward pass
CHINCHILLA_TOKENS_PER_PARAM = 20
KAPLAN_ALPHA_N = 0.076  # Kaplan et al. (2020), eq. (1.1): the exponent of L(N)
KAPLAN_N_C = 8.8e13  # the same fit's scale, in non-embedding parameters
MAX_EXACT = 2**53  # counts must stay exact integers in JavaScript too
MAX_TOKENS = 10**15  # training tokens; also below 2^53
POSITIONS = ("learned", "sinusoidal", "rotary")
NORMS = {"layernorm": 2, "rmsnorm": 1}  # parameter vectors of width d per norm
NORM_POSITIONS = ("pre", "post")

GPT2 = dict(
    vocab_size=50257,
    n_positions=1024,
    positions="learned",
    tie_embeddings=True,
    lm_head=True,
    gated_ffn=False,
    bias=True,
    norm="layernorm",
    norm_position="pre",
)
GPT3 = dict(GPT2, n_positions=2048)
# BERT: GPT-2's parts, but post-norm, no LM head, segment embeddings and a pooler.
BERT = dict(GPT2, vocab_size=30522, n_positions=512, tie_embeddings=False, lm_head=False, norm_position="post", n_segments=2, pooler=True)
LLAMA = dict(
    vocab_size=32000, n_positions=0, positions="rotary", tie_embeddings=False, lm_head=True, gated_ffn=True, bias=False, norm="rmsnorm", norm_position="pre"
)


def llama_ffn_width(d_model: int, multiple_of: int = 256) -> int:
    """The FFN width of the original LLaMA: 2/3 of 4d, rounded up to a multiple of 256.

    A gated FFN has three matrices instead of two, so LLaMA shrinks the hidden
    width to 2/3 of the usual 4d to keep the FFN's parameter count about the same.

    Args:
        d_model: Model width d.
        multiple_of: Round up to a multiple of this (256 in LLaMA).

    Returns:
        The FFN width f.

    Examples:
        >>> llama_ffn_width(4096)
        11008
    """
    hidden = int(2 * 4 * d_model / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def _preset(pid, name, family, published, label, base, n_layer, d_model, n_head, source, train_tokens):
    d_ff = llama_ffn_width(d_model) if base is LLAMA else 4 * d_model
    config = dict(base, n_layer=n_layer, d_model=d_model, n_head=n_head, d_ff=d_ff)
    return {
        "id": pid,
        "name": name,
        "family": family,
        "config": config,
        "published": published,
        "published_label": label,
        "train_tokens": train_tokens,
        "source": source,
        "note": _NOTES.get(pid, ""),
    }


_GPT2_SRC = "OpenAI's GPT-2 release (checkpoint names 124M/355M/774M/1558M); shapes from Hugging Face's configs"
_GPT3_SRC = "GPT-3 family table (lecture notes, from the GPT-3 paper); 2048 positions, 300B training tokens"
_LLAMA_SRC = "LLaMA table (lecture notes, from the LLaMA paper); FFN width 2/3 of 4d rounded up to 256"
_BERT_SRC = "BERT table (lecture notes): about 110M and 340M; counted as Hugging Face's BertModel"

_300B, _1T, _1_4T = 300_000_000_000, 1_000_000_000_000, 1_400_000_000_000  # training tokens in the papers

_NOTES = {  # where a preset departs from its source table
    "gpt3-xl": "The table lists 24 heads of width 128, which would be 3072 wide, not 2048; "
    "16 heads of 128 fit the width (the head count does not change the parameter count).",
    "gpt3-13b": "The table prints the width as 5140, but 40 heads of width 128 make 5120.",
}

PRESETS = [  # id, name, family, published count and its label, base, n_layer, d_model, n_head, source, training tokens or None
    _preset("gpt2-small", "GPT-2 small", "GPT-2", 124_000_000, "124M", GPT2, 12, 768, 12, _GPT2_SRC, None),
    _preset("gpt2-medium", "GPT-2 medium", "GPT-2", 355_000_000, "355M", GPT2, 24, 1024, 16, _GPT2_SRC, None),
    _preset("gpt2-large", "GPT-2 large", "GPT-2", 774_000_000, "774M", GPT2, 36, 1280, 20, _GPT2_SRC, None),
    _preset("gpt2-xl", "GPT-2 XL", "GPT-2", 1_558_000_000, "1558M", GPT2, 48, 1600, 25, _GPT2_SRC, None),
    _preset("bert-base", "BERT-Base", "BERT", 110_000_000, "110M", BERT, 12, 768, 12, _BERT_SRC, None),
    _preset("bert-large", "BERT-Large", "BERT", 340_000_000, "340M", BERT, 24, 1024, 16, _BERT_SRC, None),
    _preset("gpt3-small", "GPT-3 Small", "GPT-3", 125_000_000, "125M", GPT3, 12, 768, 12, _GPT3_SRC, _300B),
    _preset("gpt3-medium", "GPT-3 Medium", "GPT-3", 350_000_000, "350M", GPT3, 24, 1024, 16, _GPT3_SRC, _300B),
    _preset("gpt3-large", "GPT-3 Large", "GPT-3", 760_000_000, "760M", GPT3, 24, 1536, 16, _GPT3_SRC, _300B),
    _preset("gpt3-xl", "GPT-3 XL", "GPT-3", 1_300_000_000, "1.3B", GPT3, 24, 2048, 16, _GPT3_SRC, _300B),
    _preset("gpt3-2.7b", "GPT-3 2.7B", "GPT-3", 2_700_000_000, "2.7B", GPT3, 32, 2560, 32, _GPT3_SRC, _300B),
    _preset("gpt3-6.7b", "GPT-3 6.7B", "GPT-3", 6_700_000_000, "6.7B", GPT3, 32, 4096, 32, _GPT3_SRC, _300B),
    _preset("gpt3-13b", "GPT-3 13B", "GPT-3", 13_000_000_000, "13B", GPT3, 40, 5120, 40, _GPT3_SRC, _300B),
    _preset("gpt3-175b", "GPT-3 175B", "GPT-3", 175_000_000_000, "175B", GPT3, 96, 12288, 96, _GPT3_SRC, _300B),
    _preset("llama-7b", "LLaMA 7B", "LLaMA", 6_700_000_000, "6.7B", LLAMA, 32, 4096, 32, _LLAMA_SRC, _1T),
    _preset("llama-13b", "LLaMA 13B", "LLaMA", 13_000_000_000, "13.0B", LLAMA, 40, 5120, 40, _LLAMA_SRC, _1T),
    _preset("llama-33b", "LLaMA 33B", "LLaMA", 32_500_000_000, "32.5B", LLAMA, 60, 6656, 52, _LLAMA_SRC, _1_4T),
    _preset("llama-65b", "LLaMA 65B", "LLaMA", 65_200_000_000, "65.2B", LLAMA, 80, 8192, 64, _LLAMA_SRC, _1_4T),
]


# ----------------------------------------------------------------------------
# input checking: every message names the field, and the widget shows it


def _as_count(name, value, low, high):
    """A whole number in [low, high]; a float with no fractional part is accepted (JavaScript)."""
    return _checks.as_int(name, value, low, high, grouping=",")


def _as_flag(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}.")
    return value


def _as_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
    return value


def _config(
    n_layer,
    d_model,
    n_head,
    vocab_size,
    n_kv_head=None,
    d_ff=None,
    n_positions=0,
    positions="learned",
    tie_embeddings=True,
    lm_head=True,
    gated_ffn=False,
    bias=True,
    norm="layernorm",
    norm_position="pre",
    n_segments=0,
    pooler=False,
    n_experts=1,
    top_k=1,
    n_shared_experts=0,
):
    """Validate one architecture and fill in the defaults (h_kv = h, f = 4d)."""
    c = {
        "n_layer": _as_count("n_layer", n_layer, 1, 10_000),
        "d_model": _as_count("d_model", d_model, 1, 1_000_000),
        "n_head": _as_count("n_head", n_head, 1, 100_000),
        "vocab_size": _as_count("vocab_size", vocab_size, 1, 10_000_000),
        "positions": _as_choice("positions", positions, POSITIONS),
        "tie_embeddings": _as_flag("tie_embeddings", tie_embeddings),
        "lm_head": _as_flag("lm_head", lm_head),
        "gated_ffn": _as_flag("gated_ffn", gated_ffn),
        "bias": _as_flag("bias", bias),
        "norm": _as_choice("norm", norm, tuple(NORMS)),
        "norm_position": _as_choice("norm_position", norm_position, NORM_POSITIONS),
        "n_segments": _as_count("n_segments", n_segments, 0, 1_000),
        "pooler": _as_flag("pooler", pooler),
        "n_experts": _as_count("n_experts", n_experts, 1, 10_000),
        "n_shared_experts": _as_count("n_shared_experts", n_shared_experts, 0, 10_000),
    }
    c["n_kv_head"] = c["n_head"] if n_kv_head is None else _as_count("n_kv_head", n_kv_head, 1, 100_000)
    c["d_ff"] = 4 * c["d_model"] if d_ff is None else _as_count("d_ff", d_ff, 1, 10_000_000)
    c["top_k"] = _as_count("top_k", top_k, 1, c["n_experts"])
    if c["positions"] == "learned":
        c["n_positions"] = _as_count("n_positions", n_positions, 1, 10_000_000)
    else:
        c["n_positions"] = _as_count("n_positions", n_positions, 0, 10_000_000)
    if c["d_model"] % c["n_head"]:
        raise ValueError(f"n_head must divide d_model: {c['d_model']} cannot be cut into {c['n_head']} equal heads.")
    if c["n_head"] % c["n_kv_head"]:
        raise ValueError(f"n_kv_head must divide n_head: {c['n_head']} query heads cannot share {c['n_kv_head']} key/value heads in equal groups.")
    return c


def _as_precision(name, value):
    return _as_choice(name, value, tuple(BYTES_PER_PARAM))


# ----------------------------------------------------------------------------
# the counts


def _count(c):
    """Parameter breakdown (plain ints) of a validated config `c`."""
    d, f, h, kv = c["d_model"], c["d_ff"], c["n_head"], c["n_kv_head"]
    d_head = d // h
    b = 1 if c["bias"] else 0
    norm = NORMS[c["norm"]] * d  # one LayerNorm (scale + shift) or RMSNorm (scale)
    q = o = d * d + b * d
    k = v = d * kv * d_head + b * kv * d_head
    attention = q + k + v + o
    if c["gated_ffn"]:
        expert = 3 * d * f + b * (2 * f + d)  # gate and up (d, f), down (f, d)
    else:
        expert = 2 * d * f + b * (f + d)  # up (d, f), down (f, d)
    router = d * c["n_experts"] if c["n_experts"] > 1 else 0
    ffn = (c["n_experts"] + c["n_shared_experts"]) * expert + router
    ffn_active = (c["top_k"] + c["n_shared_experts"]) * expert + router
    layer = attention + ffn + 2 * norm
    layer_active = attention + ffn_active + 2 * norm

    parts = {
        "token_embedding": c["vocab_size"] * d,
        "position_embedding": c["n_positions"] * d if c["positions"] == "learned" else 0,
        "segment_embedding": c["n_segments"] * d,
        "embedding_norm": norm if c["norm_position"] == "post" else 0,
        "layers": c["n_layer"] * layer,
        "final_norm": norm if c["norm_position"] == "pre" else 0,
        "pooler": d * d + b * d if c["pooler"] else 0,
        "lm_head": c["vocab_size"] * d if c["lm_head"] and not c["tie_embeddings"] else 0,
    }
    total = sum(parts.values())
    active = total - c["n_layer"] * (layer - layer_active)
    if total >= MAX_EXACT:
        raise ValueError(f"this model would have about {total:.3g} parameters, more than this calculator counts exactly (2^53); choose smaller sizes.")
    return {
        **parts,
        "total": total,
        "active": active,
        "embeddings": parts["token_embedding"] + parts["position_embedding"] + parts["segment_embedding"],
        "per_layer": layer,
        "per_layer_active": layer_active,
        "attention_per_layer": attention,
        "attention_q": q,
        "attention_k": k,
        "attention_v": v,
        "attention_o": o,
        "ffn_per_layer": ffn,
        "ffn_active_per_layer": ffn_active,
        "ffn_per_expert": expert,
        "router_per_layer": router,
        "norms_per_layer": 2 * norm,
        "d_head": d_head,
    }


def _kv_bytes_per_token(n_layer, n_kv_head, d_head, bytes_per_value):
    return 2 * n_layer * n_kv_head * d_head * bytes_per_value  # K and V, every layer, every KV head


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def count_parameters(**config) -> dict:
    """Count the parameters of a GPT-, BERT- or LLaMA-style Transformer, part by part.

    Keyword arguments (the architecture):

    - `n_layer`, `d_model`, `n_head`, `vocab_size` (required);
    - `n_kv_head`: key/value heads (GQA); default `n_head` (plain multi-head);
      1 is multi-query attention. Must divide `n_head`;
    - `d_ff`: FFN hidden width; default 4 * d_model;
    - `n_positions` and `positions`: "learned" adds an (n_positions, d) table;
      "sinusoidal" and "rotary" add no parameters;
    - `tie_embeddings`: the output head reuses the token table; `lm_head`:
      whether there is an output head at all (BERT's bare encoder has none);
    - `gated_ffn`: three FFN matrices (SwiGLU) instead of two;
    - `bias`: a bias vector after every linear layer;
    - `norm`: "layernorm" (2d parameters) or "rmsnorm" (d);
    - `norm_position`: "pre" (norm before each sublayer, plus a final norm) or
      "post" (norm after each residual add, plus a norm on the embeddings);
    - `n_segments` (BERT's segment table) and `pooler` (BERT's (d, d) pooler);
    - `n_experts`, `top_k`, `n_shared_experts`: a mixture-of-experts FFN with a
      (d, n_experts) router and no router when n_experts = 1.

    Returns:
        A dict of plain ints: the parts `token_embedding`, `position_embedding`,
        `segment_embedding`, `embedding_norm`, `layers`, `final_norm`, `pooler`,
        `lm_head` (which sum to `total`), `active` (parameters used per token),
        `embeddings`, `per_layer`, `per_layer_active`, `attention_per_layer`,
        `attention_q/k/v/o`, `ffn_per_layer`, `ffn_active_per_layer`,
        `ffn_per_expert`, `router_per_layer`, `norms_per_layer` and `d_head`.

    Raises:
        ValueError: If a field is missing, not a positive whole number, or the
            heads do not divide (n_head | d_model, n_kv_head | n_head).

    Examples:
        >>> count_parameters(**preset("gpt2-small"))["total"]
        124439808
    """
    try:
        c = _config(**config)
    except TypeError as err:  # a missing or unknown keyword
        raise ValueError(f"model size: {err}") from None
    return _count(c)


def weight_memory(n_params: int) -> dict:
    """Bytes needed to store `n_params` weights at each precision.

    fp32 uses 4 bytes per parameter, fp16 and bf16 2, int8 1 and int4 half a
    byte (quantisation scales and zero points come on top and are ignored).

    Args:
        n_params: Number of parameters.

    Returns:
        `{"fp32": bytes, "fp16": ..., "bf16": ..., "int8": ..., "int4": ...}`
        as floats.

    Examples:
        >>> weight_memory(1000)["fp16"]
        2000.0
    """
    n = _as_count("n_params", n_params, 0, MAX_EXACT)
    return {name: float(n * b) for name, b in BYTES_PER_PARAM.items()}


def kv_cache_bytes_per_token(n_layer: int, n_kv_head: int, d_head: int, precision: str = "fp16") -> float:
    """Bytes of KV cache one token adds: 2 * n_layer * n_kv_head * d_head * bytes.

    Every layer stores one key and one value vector of width d_head per
    key/value head for every token seen so far, so that later tokens can attend
    to it without recomputing it.

    Args:
        n_layer: Number of layers.
        n_kv_head: Key/value heads (n_head for MHA, fewer for GQA, 1 for MQA).
        d_head: Width of one head.
        precision: "fp32", "fp16", "bf16", "int8" or "int4".

    Returns:
        Bytes per token.

    Examples:
        >>> kv_cache_bytes_per_token(12, 12, 64, "fp16")   # GPT-2 small
        36864.0
    """
    return float(
        _kv_bytes_per_token(
            _as_count("n_layer", n_layer, 1, 10_000),
            _as_count("n_kv_head", n_kv_head, 1, 100_000),
            _as_count("d_head", d_head, 1, 1_000_000),
            BYTES_PER_PARAM[_as_precision("precision", precision)],
        )
    )


def training_flops(n_params: int, n_tokens: int) -> float:
    """Training compute in floating-point operations: about 6 * N * D.

    Each parameter takes part in about 2 operations per token in the forward
    pass (a multiply and an add) and about 4 in the backward pass.

    Args:
        n_params: Parameters N (for a mixture of experts, the active ones).
        n_tokens: Training tokens D.

    Returns:
        FLOPs (a total amount of work, not FLOP/s).

    Examples:
        >>> training_flops(10**9, 2 * 10**10)
        1.2e+20
    """
    n = _as_count("n_params", n_params, 0, MAX_EXACT)
    return float(TRAIN_FLOPS_PER_PARAM_TOKEN) * n * _as_count("n_tokens", n_tokens, 0, MAX_TOKENS)


def chinchilla_tokens(n_params: int) -> float:
    """Compute-optimal training tokens by the Chinchilla rule of thumb: about 20 per parameter.

    Args:
        n_params: Parameters N.

    Returns:
        About 20 * N tokens.

    Examples:
        >>> chinchilla_tokens(70 * 10**9)
        1400000000000.0
    """
    return float(CHINCHILLA_TOKENS_PER_PARAM * _as_count("n_params", n_params, 0, MAX_EXACT))


def kaplan_loss(n_params: int) -> float:
    """Test loss predicted from model size alone by Kaplan et al.'s 2020 power law.

    ``L(N) = (N_c / N) ** alpha_N`` with the paper's fitted constants ``alpha_N = 0.076``
    and ``N_c = 8.8e13`` (Kaplan et al., 2020, "Scaling Laws for Neural Language Models",
    eq. 1.1): the cross-entropy in nats per token of a model trained to convergence on
    enough data, when its size is the only limit. ``N`` counts non-embedding parameters.

    Args:
        n_params: Non-embedding parameters N (at least 1).

    Returns:
        The predicted loss in nats per token.

    Examples:
        >>> round(kaplan_loss(10**9), 3)
        2.376
    """
    n = _as_count("n_params", n_params, 1, MAX_EXACT)
    return float((KAPLAN_N_C / n) ** KAPLAN_ALPHA_N)


def presets() -> list[dict]:
    """The built-in architectures: GPT-2, BERT, GPT-3 and LLaMA.

    Returns:
        A list of dicts with `id`, `name`, `family`, `config` (keyword arguments
        for `count_parameters`), `published` (the published parameter count as
        an int), `published_label` (as printed, e.g. "124M"), `train_tokens` (int,
        or None when the source gives none), `source` and `note`.
    """
    return [dict(p, config=dict(p["config"])) for p in PRESETS]


def preset(name: str) -> dict:
    """The `count_parameters` keyword arguments of one preset, e.g. `"gpt2-small"`.

    Args:
        name: A preset id from `presets()`.

    Returns:
        The configuration dict.

    Raises:
        ValueError: For an unknown id.
    """
    for p in PRESETS:
        if p["id"] == name:
            return dict(p["config"])
    raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(p['id'] for p in PRESETS)}.")


def preset_table() -> list[dict]:
    """Every preset's computed parameter count next to the published one.

    Returns:
        One dict per preset: `id`, `name`, `published`, `published_label`,
        `computed` (int) and `relative_error` ((computed - published) / published).
    """
    rows = []
    for p in PRESETS:
        computed = _count(_config(**p["config"]))["total"]
        rows.append(
            {
                "id": p["id"],
                "name": p["name"],
                "published": p["published"],
                "published_label": p["published_label"],
                "computed": computed,
                "relative_error": (computed - p["published"]) / p["published"],
            }
        )
    return rows


def model_size(context_length: int = 1024, train_tokens: int | None = None, kv_precision: str = "fp16", **config) -> dict:
    """Everything the size calculator shows, for one architecture.

    Args:
        context_length: Tokens held in the KV cache (one sequence).
        train_tokens: Training tokens D for the FLOPs estimate; default: the
            Chinchilla budget of 20 tokens per active parameter.
        kv_precision: Precision of the cached keys and values ("fp16", ...).
        **config: The architecture, as for `count_parameters`.

    Returns:
        A dict with `parameters` (the `count_parameters` breakdown),
        `weight_memory` (bytes per precision, for all parameters),
        `kv_cache` (`bytes_per_token` for `mha`, `gqa` (this model's n_kv_head)
        and `mqa`, `bytes_per_token_model`, `context_length`,
        `bytes_for_context`, `precision`), `train_tokens`, `training_flops`
        (6 * active * D), `chinchilla_tokens` (20 * active), and `moe` (`total`,
        `active`, `active_fraction`).

    Raises:
        ValueError: On an invalid architecture or setting.
    """
    try:
        c = _config(**config)
    except TypeError as err:
        raise ValueError(f"model size: {err}") from None
    params = _count(c)
    context = _as_count("context_length", context_length, 1, 100_000_000)
    bytes_per_value = BYTES_PER_PARAM[_as_precision("kv_precision", kv_precision)]
    n_active = params["active"]
    chinchilla = CHINCHILLA_TOKENS_PER_PARAM * n_active
    if train_tokens is None:
        tokens = min(chinchilla, MAX_TOKENS)
    else:
        tokens = _as_count("train_tokens", train_tokens, 1, MAX_TOKENS)
    per_token = {
        name: float(_kv_bytes_per_token(c["n_layer"], kv, params["d_head"], bytes_per_value))
        for name, kv in (("mha", c["n_head"]), ("gqa", c["n_kv_head"]), ("mqa", 1))
    }
    return {
        "parameters": params,
        "weight_memory": weight_memory(params["total"]),
        "kv_cache": {
            "bytes_per_token": per_token,
            "bytes_per_token_model": per_token["gqa"],
            "context_length": context,
            "bytes_for_context": per_token["gqa"] * context,
            "precision": kv_precision,
        },
        "train_tokens": int(tokens),
        "training_flops": float(TRAIN_FLOPS_PER_PARAM_TOKEN) * n_active * tokens,
        "chinchilla_tokens": float(chinchilla),
        "moe": {"total": params["total"], "active": n_active, "active_fraction": n_active / params["total"]},
    }
