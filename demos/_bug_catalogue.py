"""The spot-the-bug catalogue: each snippet's buggy code, fix, hint, diagnosis and inputs.

Data only; `demos.bugs` serves it to the widget and `demos._sandbox` runs the reader's
code against it. A snippet is written once, as a diff: lines marked `-` are only in
the buggy code the reader is given, lines marked `+` only in the corrected code, and
unmarked lines are in both. To add a snippet, append a `Bug` to `_BUGS` with a diff,
a hint, a diagnosis and a function that draws its inputs from a seeded generator.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from demos._sandbox import snippet_side


@dataclass(frozen=True)
class Bug:
    """One snippet: what the reader sees, what fixes it and how it is tested."""

    id: str
    title: str
    signature: str  # of the function the reader's code must define
    diff: str  # the snippet: "-" lines only in the buggy code, "+" lines only in the fix
    hint: str
    diagnosis: str
    make_inputs: Callable  # rng -> dict of keyword arguments
    select: Callable | None = None  # (inputs, output) -> the part of the output that is checked

    @property
    def function(self) -> str:
        """The name the reader's code must define."""
        return self.signature.split("(")[0]

    @property
    def code(self) -> str:
        """The buggy snippet, as the reader first sees it."""
        return snippet_side(self.diff, "-")

    @property
    def reference(self) -> str:
        """The corrected snippet, same function."""
        return snippet_side(self.diff, "+")


def _qkv(rng, T, d, batch=None):
    shape = (T, d) if batch is None else (batch, T, d)
    return {name: rng.standard_normal(shape) for name in ("q", "k", "v")}


def _square_qkv(rng):
    return _qkv(rng, T=int(rng.integers(3, 8)), d=int(rng.choice([4, 8, 16])))


def _cross_qkv(rng):
    T_q, T_k, d = int(rng.integers(2, 6)), int(rng.integers(3, 8)), int(rng.choice([4, 8]))
    return {"q": rng.standard_normal((T_q, d)), "k": rng.standard_normal((T_k, d)), "v": rng.standard_normal((T_k, int(rng.integers(2, 6))))}


def _scaled_inputs(rng):
    # d_k = 16 and entries of size 1.5: leaving out 1/sqrt(d_k) then changes the weights a lot.
    T_q, T_k = int(rng.integers(3, 7)), int(rng.integers(3, 7))
    return {"q": 1.5 * rng.standard_normal((T_q, 16)), "k": 1.5 * rng.standard_normal((T_k, 16)), "v": rng.standard_normal((T_k, 4))}


def _heads_inputs(rng):
    n_heads = int(rng.choice([2, 3, 4]))
    T, d_head = int(rng.integers(2, 6)), int(rng.integers(2, 5))
    return {"x": rng.standard_normal((T, n_heads * d_head)), "n_heads": n_heads}


def _padded_inputs(rng):
    B, T, d = int(rng.integers(2, 4)), int(rng.integers(4, 7)), int(rng.choice([4, 8]))
    lengths = [int(n) for n in rng.integers(1, T + 1, size=B)]
    lengths[0] = T - 1 - int(rng.integers(0, 2))  # at least one sequence is padded
    return _qkv(rng, T, d, batch=B) | {"lengths": lengths}


def _real_rows(inputs, output):
    """Only the outputs at real (non-padding) positions are checked."""
    T = inputs["q"].shape[1]
    real = np.arange(T)[None, :] < np.array(inputs["lengths"])[:, None]  # (B, T)
    return output[real]  # (number of real tokens, d)


def _mlp_inputs(rng):
    T, d = int(rng.integers(2, 6)), int(rng.choice([4, 6, 8]))
    return {
        "x": 2.0 * rng.standard_normal((T, d)) + 1.0,
        "w1": rng.standard_normal((d, 4 * d)) / math.sqrt(d),
        "w2": rng.standard_normal((4 * d, d)) / math.sqrt(4 * d),
    }


def _layer_norm_inputs(rng):
    T, d = int(rng.integers(3, 7)), int(rng.choice([4, 8, 10]))
    return {"x": 3.0 * rng.standard_normal((T, d)) + rng.standard_normal(d), "gamma": 1.0 + 0.1 * rng.standard_normal(d), "beta": 0.1 * rng.standard_normal(d)}


def _lm_inputs(rng):
    T, V = int(rng.integers(3, 9)), int(rng.choice([5, 7, 11]))
    return {"logits": 2.0 * rng.standard_normal((T, V)), "tokens": rng.integers(0, V, size=T)}


_BUGS = [
    Bug(
        id="causal_mask",
        title="Missing causal mask",
        signature="causal_attention(q, k, v)",
        diff='''
            import numpy as np

            def causal_attention(q, k, v):
                """Masked self-attention of a decoder, one head.

                q, k, v: arrays of shape (T, d). Returns an array of shape (T, d).
                The token at position t may only use positions 0..t.
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T, T)
           +    T = scores.shape[0]
           +    future = np.triu(np.ones((T, T), dtype=bool), k=1)  # True above the diagonal
           +    scores = np.where(future, -np.inf, scores)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T, d)
        ''',
        hint="Look at row 0 of the weights: which positions does the first token read from?",
        diagnosis=(
            "Nothing stops a position from attending to later positions. In training the model "
            "would read the very token it is asked to predict, and at generation time those "
            "future tokens do not exist yet. The scores above the diagonal must be set to -inf "
            "before the softmax, so their weights become exactly 0."
        ),
        make_inputs=_square_qkv,
    ),
    Bug(
        id="mask_with_zero",
        title="A mask that multiplies by zero",
        signature="causal_attention(q, k, v)",
        diff='''
            import numpy as np

            def causal_attention(q, k, v):
                """Masked self-attention of a decoder, one head.

                q, k, v: arrays of shape (T, d). Returns an array of shape (T, d).
                The token at position t may only use positions 0..t.
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T, T)
                T = scores.shape[0]
                allowed = np.tril(np.ones((T, T)))                  # 1 = may attend, 0 = future
           -    scores = scores * allowed
           +    scores = np.where(allowed == 1, scores, -np.inf)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T, d)
        ''',
        hint="What is exp(0)? Compare it with exp(-inf).",
        diagnosis=(
            "Multiplying a score by 0 gives a score of 0, and softmax turns 0 into exp(0) = 1, "
            "a perfectly ordinary weight: the future is still visible, just with the score it "
            "would have had if q and k were orthogonal. A masked score has to be -inf (or a "
            "very large negative number) so that its weight is exp(-inf) = 0."
        ),
        make_inputs=_square_qkv,
    ),
    Bug(
        id="softmax_axis",
        title="Softmax over the wrong axis",
        signature="attention(q, k, v)",
        diff='''
            import numpy as np

            def attention(q, k, v):
                """Scaled dot-product attention, no mask.

                q: (T_q, d), k: (T_k, d), v: (T_k, d_v). Returns (T_q, d_v).
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T_q, T_k)
           -    weights = np.exp(scores - scores.max(axis=0, keepdims=True))
           -    weights = weights / weights.sum(axis=0, keepdims=True)
           +    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
           +    weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T_q, d_v)
        ''',
        hint="Each query's weights should add up to 1. Do they? Sum the rows of `weights`.",
        diagnosis=(
            "The softmax normalises each column (one key, over all queries) instead of each row "
            "(one query, over all keys). Every query must get a probability distribution over "
            "the keys, so the softmax runs over the last axis, the keys' axis: "
            "axis=-1 in both the max and the sum."
        ),
        make_inputs=_cross_qkv,
    ),
    Bug(
        id="missing_scale",
        title="Missing 1/√d_k",
        signature="attention(q, k, v)",
        diff='''
            import numpy as np

            def attention(q, k, v):
                """Scaled dot-product attention, no mask.

                q: (T_q, d_k), k: (T_k, d_k), v: (T_k, d_v). Returns (T_q, d_v).
                """
           -    scores = q @ k.T                                    # (T_q, T_k)
           +    scores = q @ k.T / np.sqrt(q.shape[-1])           # (T_q, T_k)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T_q, d_v)
        ''',
        hint="The function is called *scaled* dot-product attention. How large do the scores get when d_k = 16?",
        diagnosis=(
            "The scores are not divided by √d_k. A dot product of two d_k-dimensional vectors "
            "with unit-variance entries has variance d_k, so without the scaling the scores "
            "grow with the head size, the softmax saturates to nearly one-hot weights, and its "
            "gradients all but vanish. Dividing by √d_k brings the variance back to about 1."
        ),
        make_inputs=_scaled_inputs,
    ),
    Bug(
        id="head_split",
        title="Splitting heads with reshape alone",
        signature="split_heads(x, n_heads)",
        diff='''
            import numpy as np

            def split_heads(x, n_heads):
                """Cut each token's vector into n_heads slices, one per head.

                x: (T, d_model). Returns (n_heads, T, d_head) with d_head = d_model // n_heads;
                head h gets columns h*d_head ... (h+1)*d_head - 1 of every token.
                """
                T, d_model = x.shape
                d_head = d_model // n_heads
           -    return x.reshape(n_heads, T, d_head)
           +    return x.reshape(T, n_heads, d_head).transpose(1, 0, 2)
        ''',
        hint="Try x = np.arange(12).reshape(3, 4) with n_heads=2. Which numbers end up in head 0?",
        diagnosis=(
            "reshape only re-reads the same row-major buffer with new dimensions: it does not "
            "move data between axes. Reshaping (T, d_model) straight to (n_heads, T, d_head) "
            "gives head 0 the first T*d_head numbers of the buffer, i.e. whole tokens, mixing "
            "positions and features. The split that keeps each token intact is "
            "reshape(T, n_heads, d_head) followed by transpose(1, 0, 2)."
        ),
        make_inputs=_heads_inputs,
    ),
    Bug(
        id="padding_mask",
        title="Padding that is not masked",
        signature="padded_attention(q, k, v, lengths)",
        diff='''
            import numpy as np

            def padded_attention(q, k, v, lengths):
                """Self-attention over a batch of sequences padded to the same length T.

                q, k, v: (B, T, d). lengths: B integers, the real length of each sequence;
                positions >= lengths[b] are padding. Returns (B, T, d). Only the outputs at
                real positions are checked.
                """
                scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])   # (B, T, T)
           +    T = q.shape[1]
           +    is_pad = np.arange(T)[None, :] >= np.array(lengths)[:, None]   # (B, T)
           +    scores = np.where(is_pad[:, None, :], -np.inf, scores)        # hide padding keys
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                           # (B, T, d)
        ''',
        hint="`lengths` is passed in but never used. What do the real tokens of a short sequence read?",
        diagnosis=(
            "The padding positions are attended to like real tokens, so a sequence's result "
            "depends on how much filler the batch added to it. Padding keys must get the "
            "score -inf, for every query, before the softmax; the outputs at padding "
            "positions themselves are then simply ignored."
        ),
        make_inputs=_padded_inputs,
        select=_real_rows,
    ),
    Bug(
        id="post_norm",
        title="Post-norm where pre-norm was intended",
        signature="pre_norm_mlp(x, w1, w2)",
        diff='''
            import numpy as np

            def layer_norm(x, eps=1e-5):
                mean = x.mean(axis=-1, keepdims=True)
                var = x.var(axis=-1, keepdims=True)
                return (x - mean) / np.sqrt(var + eps)

            def pre_norm_mlp(x, w1, w2):
                """One pre-norm residual sublayer, as in GPT-2: x + MLP(LayerNorm(x)).

                x: (T, d), w1: (d, 4d), w2: (4d, d). Returns (T, d).
                """
           -    h = np.maximum(0.0, x @ w1) @ w2        # (T, d) ReLU MLP
           -    return layer_norm(x + h)
           +    h = np.maximum(0.0, layer_norm(x) @ w1) @ w2   # (T, d) ReLU MLP
           +    return x + h
        ''',
        hint="Read the docstring's formula, then read the last two lines. Where is LayerNorm applied?",
        diagnosis=(
            "This is the original Transformer's post-norm block, LayerNorm(x + MLP(x)), not the "
            "pre-norm block the docstring asks for. In pre-norm (GPT-2 and most models since) "
            "only the sublayer's input is normalised and the residual path x + ... is left "
            "untouched, which keeps an identity path from input to output and makes deep stacks "
            "easier to train."
        ),
        make_inputs=_mlp_inputs,
    ),
    Bug(
        id="layer_norm_axis",
        title="LayerNorm over the wrong axis",
        signature="layer_norm(x, gamma, beta)",
        diff='''
            import numpy as np

            def layer_norm(x, gamma, beta, eps=1e-5):
                """LayerNorm of every token vector separately.

                x: (T, d); gamma, beta: (d,). Returns (T, d).
                """
           -    mean = x.mean(axis=0, keepdims=True)     # (1, d)
           -    var = x.var(axis=0, keepdims=True)       # (1, d)
           +    mean = x.mean(axis=-1, keepdims=True)    # (T, 1)
           +    var = x.var(axis=-1, keepdims=True)      # (T, 1)
                return gamma * (x - mean) / np.sqrt(var + eps) + beta
        ''',
        hint="After normalising, each token's vector should have mean 0. Check x_hat.mean(axis=-1).",
        diagnosis=(
            "The statistics are taken over the tokens (axis 0), once per feature, which is what "
            "batch normalisation does, and which makes every token's output depend on the other "
            "tokens in the sequence. LayerNorm takes the mean and variance over the features of "
            "each token (axis=-1), so each token is normalised on its own."
        ),
        make_inputs=_layer_norm_inputs,
    ),
    Bug(
        id="shifted_targets",
        title="Targets that are not shifted",
        signature="lm_loss(logits, tokens)",
        diff='''
            import numpy as np

            def lm_loss(logits, tokens):
                """Next-token cross-entropy of a causal language model.

                logits: (T, V); row t scores the token that comes AFTER tokens[t].
                tokens: (T,) integer ids. Returns the mean loss over the T - 1 positions
                whose next token is known.
                """
                z = logits - logits.max(axis=-1, keepdims=True)
                log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))   # (T, V)
                T = len(tokens)
           -    picked = log_probs[np.arange(T), tokens]                          # (T,)
           +    targets = tokens[1:]                                              # (T-1,)
           +    picked = log_probs[np.arange(T - 1), targets]                     # (T-1,)
                return -picked.mean()
        ''',
        hint="Row t of the logits is a guess about which token?",
        diagnosis=(
            "Every position is scored on the token it already sees (tokens[t]) instead of the "
            "next one (tokens[t+1]): a causal model trained this way only learns to copy its "
            "input. The targets are the inputs shifted left by one, so the last position has no "
            "target: use log_probs[:-1] with tokens[1:]."
        ),
        make_inputs=_lm_inputs,
    ),
]

BUGS = {bug.id: bug for bug in _BUGS}
