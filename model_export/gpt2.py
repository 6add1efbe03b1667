"""A readable GPT-2 in PyTorch, written to be exported to ONNX and read in the textbook.

The forward pass takes and returns flat tensors so that the same code runs in PyTorch and, once
exported, in ONNX Runtime:

    forward(input_ids, attention_mask, position_ids, *past) -> (logits, *present)

``past`` and ``present`` alternate key and value per layer: ``past[2 * i]`` is layer ``i``'s key
cache and ``past[2 * i + 1]`` its value cache, each of shape (B, n_head, P, head_dim). One graph
serves both the prefill (P = 0: every prompt token at once) and the decode steps (P > 0: one new
token attends to the cached keys and values of all earlier tokens).

Shape letters used in the comments:
    B  batch size
    T  number of new tokens in this call
    P  number of cached (past) tokens
    C  embedding width (n_embd)
    nh number of heads (n_head)
    hd width of one head (head_dim = C / nh)
    V  vocabulary size

Inference only: there is no dropout and no loss.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GPT2Config:
    """Hyper-parameters of a GPT-2 model.

    The defaults are GPT-2 small (124M parameters).

    Attributes:
        n_layer: Number of Transformer blocks.
        n_head: Number of attention heads per block.
        n_embd: Width of the residual stream; must be divisible by ``n_head``.
        n_positions: Longest sequence the position embedding covers.
        vocab_size: Number of token ids.
        layer_norm_epsilon: Epsilon of every LayerNorm.
        eos_token_id: The ``<|endoftext|>`` token id.
    """

    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    n_positions: int = 1024
    vocab_size: int = 50257
    layer_norm_epsilon: float = 1e-5
    eos_token_id: int = 50256

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} is not divisible by n_head={self.n_head}")

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        """Returns the configuration as a plain dict (JSON-serialisable)."""
        return asdict(self)

    @classmethod
    def from_hf(cls, hf_config) -> GPT2Config:
        """Builds a config from a transformers ``GPT2Config``.

        Args:
            hf_config: A ``transformers.GPT2Config``.

        Returns:
            The matching ``GPT2Config``.

        Raises:
            ValueError: If the Hugging Face model uses a variant this module does not implement.
        """
        unsupported = {
            "activation_function": (hf_config.activation_function, "gelu_new"),
            "n_inner": (hf_config.n_inner, None),
            "scale_attn_weights": (hf_config.scale_attn_weights, True),
            "scale_attn_by_inverse_layer_idx": (hf_config.scale_attn_by_inverse_layer_idx, False),
            "reorder_and_upcast_attn": (hf_config.reorder_and_upcast_attn, False),
            "add_cross_attention": (hf_config.add_cross_attention, False),
            "tie_word_embeddings": (hf_config.tie_word_embeddings, True),
        }
        if hf_config.n_inner == 4 * hf_config.n_embd:
            unsupported.pop("n_inner")
        for name, (value, expected) in unsupported.items():
            if value != expected:
                raise ValueError(f"unsupported GPT-2 variant: {name}={value!r} (this module implements {expected!r})")
        eos = hf_config.eos_token_id
        return cls(
            n_layer=hf_config.n_layer,
            n_head=hf_config.n_head,
            n_embd=hf_config.n_embd,
            n_positions=hf_config.n_positions,
            vocab_size=hf_config.vocab_size,
            layer_norm_epsilon=hf_config.layer_norm_epsilon,
            eos_token_id=eos if eos is not None else cls.eos_token_id,
        )


def new_gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation ("gelu_new"), as in the original GPT-2.

    Written out rather than calling ``F.gelu(x, approximate="tanh")`` so the exported graph uses
    only elementary operators (Mul, Add, Pow, Tanh) that every ONNX Runtime backend implements.
    """
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def allowed_keys(attention_mask: torch.Tensor, num_new: int) -> torch.Tensor:
    """Says which keys each new query may attend to.

    The ``num_new`` queries are the last tokens of the sequence: query ``i`` sits at absolute
    position ``P + i`` (P = number of cached tokens) and may see keys ``0 .. P + i``, provided
    those keys are real tokens rather than padding. A padding query would then see nothing at
    all; it is allowed to see itself, so that every row of the softmax has at least one entry
    (its output is never used).

    Args:
        attention_mask: (B, P+T) int, 1 for a real token, 0 for padding.
        num_new: T, the number of new tokens (queries).

    Returns:
        (B, 1, T, P+T) bool, True where attention is allowed. The head axis has size 1 and
        broadcasts over all heads.
    """
    total = attention_mask.shape[1]  # P+T
    key_pos = torch.arange(total, device=attention_mask.device)  # (P+T,)
    query_pos = key_pos[total - num_new :]  # (T,)  absolute positions P .. P+T-1
    causal = key_pos[None, :] <= query_pos[:, None]  # (T, P+T)
    is_self = key_pos[None, :] == query_pos[:, None]  # (T, P+T)
    is_token = attention_mask[:, None, None, :].bool()  # (B, 1, 1, P+T)
    return causal[None, None] & (is_token | is_self[None, None])  # (B, 1, T, P+T)


def attention_bias(attention_mask: torch.Tensor, num_new: int) -> torch.Tensor:
    """The mask as a number added to the attention scores: 0 where allowed, very negative elsewhere.

    Adding the most negative float32 (rather than -inf) sends the hidden keys' probabilities to
    exactly 0 after the softmax. An additive mask is also the form ONNX Runtime's fusion tools
    recognise as attention.

    Args:
        attention_mask: (B, P+T) int, 1 for a real token, 0 for padding.
        num_new: T, the number of new tokens (queries).

    Returns:
        (B, 1, T, P+T) float32.
    """
    allowed = allowed_keys(attention_mask, num_new)  # (B, 1, T, P+T)
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)  # (B, 1, T, P+T)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a key/value cache."""

    def __init__(self, config: GPT2Config):
        super().__init__()
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.head_dim = config.head_dim
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)  # fused query, key, value projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)  # output projection

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, C) -> (B, nh, T, hd)."""
        B, T, C = x.shape
        return x.view(B, T, self.n_head, self.head_dim).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, nh, T, hd) -> (B, T, C)."""
        B, nh, T, hd = x.shape
        return x.transpose(1, 2).contiguous().view(B, T, nh * hd)

    def forward(
        self, x: torch.Tensor, bias: torch.Tensor, past_key: torch.Tensor, past_value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Attends from the new tokens to the cached and the new tokens.

        Args:
            x: (B, T, C) the new tokens' residual stream after ln_1.
            bias: (B, 1, T, P+T) from ``attention_bias``, added to the scores.
            past_key: (B, nh, P, hd) cached keys.
            past_value: (B, nh, P, hd) cached values.

        Returns:
            A tuple ``(y, key, value, probs)``: y (B, T, C) the attention output; key and value
            (B, nh, P+T, hd) the updated cache; probs (B, nh, T, P+T) the attention probabilities.
        """
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)
        q = self.split_heads(q)  # (B, nh, T, hd)
        k = self.split_heads(k)  # (B, nh, T, hd)
        v = self.split_heads(v)  # (B, nh, T, hd)

        key = torch.cat([past_key, k], dim=2)  # (B, nh, P+T, hd)
        value = torch.cat([past_value, v], dim=2)  # (B, nh, P+T, hd)

        # scaled dot-product scores: how well each query matches each key
        scores = (q @ key.transpose(-2, -1)) / math.sqrt(self.head_dim)  # (B, nh, T, P+T)
        # hide future tokens and padding
        scores = scores + bias  # (B, nh, T, P+T)
        # each row becomes a probability distribution over the visible keys
        probs = F.softmax(scores, dim=-1)  # (B, nh, T, P+T)
        # weighted average of the values
        y = probs @ value  # (B, nh, T, hd)

        y = self.merge_heads(y)  # (B, T, C)
        y = self.c_proj(y)  # (B, T, C)
        return y, key, value, probs


class MLP(nn.Module):
    """Position-wise feed-forward network: C -> 4C -> GELU -> C."""

    def __init__(self, config: GPT2Config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, C) -> (B, T, C)."""
        x = self.c_fc(x)  # (B, T, 4C)
        x = new_gelu(x)  # (B, T, 4C)
        x = self.c_proj(x)  # (B, T, C)
        return x


class Block(nn.Module):
    """One pre-norm Transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: GPT2Config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = MLP(config)

    def forward(
        self, x: torch.Tensor, bias: torch.Tensor, past_key: torch.Tensor, past_value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Updates the residual stream.

        Args:
            x: (B, T, C) residual stream.
            bias: (B, 1, T, P+T) attention bias (0 or very negative).
            past_key: (B, nh, P, hd) cached keys of this layer.
            past_value: (B, nh, P, hd) cached values of this layer.

        Returns:
            A tuple ``(x, key, value, probs)``: the new residual stream (B, T, C), this layer's
            updated cache (B, nh, P+T, hd) twice, and its attention probabilities (B, nh, T, P+T).
        """
        attn_out, key, value, probs = self.attn(self.ln_1(x), bias, past_key, past_value)
        x = x + attn_out  # (B, T, C)
        x = x + self.mlp(self.ln_2(x))  # (B, T, C)
        return x, key, value, probs


class GPT2(nn.Module):
    """GPT-2 language model with an explicit key/value cache.

    Args:
        config: Model hyper-parameters.
        output_attentions: Also return every layer's attention probabilities, named
            ``attentions.{i}``, each (B, nh, T, P+T), after the present tensors.
        output_hidden_states: Also return the residual stream, named ``hidden_states.{i}``, each
            (B, T, C): the embeddings (i = 0) and the output of every block (i = 1 .. n_layer),
            before the final LayerNorm. They come last.
    """

    def __init__(self, config: GPT2Config, output_attentions: bool = False, output_hidden_states: bool = False):
        super().__init__()
        self.config = config
        self.output_attentions = output_attentions
        self.output_hidden_states = output_hidden_states
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # token embedding
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)  # position embedding
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one (V, C) matrix embeds tokens and scores them
        self.eval()

    def empty_past(self, batch_size: int) -> list[torch.Tensor]:
        """Returns a zero-length cache, ``2 * n_layer`` tensors of shape (B, nh, 0, hd)."""
        shape = (batch_size, self.config.n_head, 0, self.config.head_dim)
        return [self.wte.weight.new_zeros(shape) for _ in range(2 * self.config.n_layer)]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Runs the new tokens through the model.

        Args:
            input_ids: (B, T) int64 token ids of the new tokens.
            attention_mask: (B, P+T) int64 over cached and new tokens, 1 = real token, 0 = padding.
            position_ids: (B, T) int64 absolute positions of the new tokens.
            *past: ``2 * n_layer`` tensors (B, nh, P, hd), key then value per layer. Omit them
                entirely for a call without cache.

        Returns:
            ``(logits, *present)`` with logits (B, T, V) and present ``2 * n_layer`` tensors
            (B, nh, P+T, hd), key then value per layer; followed by the attentions and hidden
            states when enabled in the constructor.
        """
        B, T = input_ids.shape
        if not past:
            past = tuple(self.empty_past(B))
        bias = attention_bias(attention_mask, T)  # (B, 1, T, P+T)

        tok_emb = self.wte(input_ids)  # (B, T, C)
        pos_emb = self.wpe(position_ids)  # (B, T, C)
        x = tok_emb + pos_emb  # (B, T, C)

        present, attentions, hidden_states = [], [], [x]
        for i, block in enumerate(self.blocks):
            x, key, value, probs = block(x, bias, past[2 * i], past[2 * i + 1])
            present += [key, value]  # 2 x (B, nh, P+T, hd)
            attentions.append(probs)  # (B, nh, T, P+T)
            hidden_states.append(x)  # (B, T, C)

        x = self.ln_f(x)  # (B, T, C)
        logits = self.lm_head(x)  # (B, T, V)

        outputs = [logits, *present]
        if self.output_attentions:
            outputs += attentions
        if self.output_hidden_states:
            outputs += hidden_states
        return tuple(outputs)

    @classmethod
    def from_hf(cls, hf_model, **kwargs) -> GPT2:
        """Copies the weights of a transformers ``GPT2LMHeadModel``.

        Hugging Face's GPT-2 uses ``Conv1D`` layers whose weight is stored (in, out), the
        transpose of ``nn.Linear``'s (out, in); those are transposed here.

        Args:
            hf_model: A ``transformers.GPT2LMHeadModel``.
            **kwargs: Passed to the constructor (``output_attentions``, ``output_hidden_states``).

        Returns:
            A ``GPT2`` in eval mode holding copies of the weights.
        """
        config = GPT2Config.from_hf(hf_model.config)
        model = cls(config, **kwargs)
        hf_state = hf_model.state_dict()
        conv1d_weights = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
        state = {}
        for name in model.state_dict():
            if name == "lm_head.weight":
                hf_name = "transformer.wte.weight"  # tied to the token embedding in both models
            else:
                hf_name = "transformer." + name.replace("blocks.", "h.", 1)
            tensor = hf_state[hf_name].detach()
            if name.endswith(conv1d_weights):
                tensor = tensor.t()  # Conv1D (in, out) -> nn.Linear (out, in)
            state[name] = tensor.to(torch.float32)
        model.load_state_dict(state, strict=True)
        return model.eval()
