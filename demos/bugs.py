"""Spot the bug: short NumPy Transformer snippets, each with one real, common mistake.

Every snippet defines one function with a fixed signature (for example
`causal_attention(q, k, v)`). The reader edits the code until it behaves like the
correct reference implementation, and `check` says whether it does:

    check(bug_id, code)
      1. runs `code` in a fresh namespace (with `np`/`numpy` available),
      2. calls the function it defines on several seeded random inputs,
      3. compares every result with the reference implementation's,
      4. returns plain data: passed or not, and a message saying which input failed
         and by how much, or which exception was raised on which line.

The catalogue holds, for each snippet, a title, the buggy code, a hint, the
diagnosis and the corrected code. The diagnosis and the correction are only
returned once the check passes, or when the reader asks for them (`reveal`).

`check` catches the reader's exceptions (`Exception` and `SystemExit`) but lets
`KeyboardInterrupt` through: that is how the browser stops an endless loop (Pyodide
raises it when the page sets its interrupt buffer), and the caller reports it.
"""

import contextlib
import io
import math
import textwrap
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FILENAME = "<your code>"  # the file name user code runs under, to find its lines in tracebacks
NUM_CASES = 5  # seeded random inputs per check
MAX_CODE_CHARS = 20_000
MAX_OUTPUT_CHARS = 2_000  # printed output returned to the reader
RTOL, ATOL = 1e-6, 1e-8  # equivalent float64 formulations agree far better than this


# ----------------------------------------------------------------------------
# the catalogue


@dataclass(frozen=True)
class Bug:
    """One snippet: what the reader sees, what fixes it and how it is tested."""

    id: str
    title: str
    function: str  # the name the reader's code must define
    signature: str
    code: str  # the buggy snippet
    hint: str
    diagnosis: str
    reference: str  # the corrected snippet, same function
    make_inputs: Callable  # rng -> dict of keyword arguments
    select: Callable | None = None  # (inputs, output) -> the part of the output that is checked


def _code(text):
    return textwrap.dedent(text).strip() + "\n"


def _qkv(rng, T, d, batch=None):
    shape = (T, d) if batch is None else (batch, T, d)
    return {name: rng.standard_normal(shape) for name in ("q", "k", "v")}


def _square_qkv(rng):
    return _qkv(rng, T=int(rng.integers(3, 8)), d=int(rng.choice([4, 8, 16])))


def _cross_qkv(rng):
    T_q, T_k, d = int(rng.integers(2, 6)), int(rng.integers(3, 8)), int(rng.choice([4, 8]))
    return {"q": rng.standard_normal((T_q, d)), "k": rng.standard_normal((T_k, d)),
            "v": rng.standard_normal((T_k, int(rng.integers(2, 6))))}


def _scaled_inputs(rng):
    # d_k = 16 and entries of size 1.5: leaving out 1/sqrt(d_k) then changes the weights a lot.
    T_q, T_k = int(rng.integers(3, 7)), int(rng.integers(3, 7))
    return {"q": 1.5 * rng.standard_normal((T_q, 16)), "k": 1.5 * rng.standard_normal((T_k, 16)),
            "v": rng.standard_normal((T_k, 4))}


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
    return {"x": 2.0 * rng.standard_normal((T, d)) + 1.0,
            "w1": rng.standard_normal((d, 4 * d)) / math.sqrt(d),
            "w2": rng.standard_normal((4 * d, d)) / math.sqrt(4 * d)}


def _layer_norm_inputs(rng):
    T, d = int(rng.integers(3, 7)), int(rng.choice([4, 8, 10]))
    return {"x": 3.0 * rng.standard_normal((T, d)) + rng.standard_normal(d),
            "gamma": 1.0 + 0.1 * rng.standard_normal(d), "beta": 0.1 * rng.standard_normal(d)}


def _lm_inputs(rng):
    T, V = int(rng.integers(3, 9)), int(rng.choice([5, 7, 11]))
    return {"logits": 2.0 * rng.standard_normal((T, V)), "tokens": rng.integers(0, V, size=T)}


_SOFTMAX_ROWS = """
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)"""

_BUGS = [
    Bug(
        id="causal_mask",
        title="Missing causal mask",
        function="causal_attention",
        signature="causal_attention(q, k, v)",
        code=_code('''
            import numpy as np

            def causal_attention(q, k, v):
                """Masked self-attention of a decoder, one head.

                q, k, v: arrays of shape (T, d). Returns an array of shape (T, d).
                The token at position t may only use positions 0..t.
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T, T)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T, d)
        '''),
        hint="Look at row 0 of the weights: which positions does the first token read from?",
        diagnosis=(
            "Nothing stops a position from attending to later positions. In training the model "
            "would read the very token it is asked to predict, and at generation time those "
            "future tokens do not exist yet. The scores above the diagonal must be set to -inf "
            "before the softmax, so their weights become exactly 0."
        ),
        reference=_code('''
            import numpy as np

            def causal_attention(q, k, v):
                """Masked self-attention of a decoder, one head.

                q, k, v: arrays of shape (T, d). Returns an array of shape (T, d).
                The token at position t may only use positions 0..t.
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T, T)
                T = scores.shape[0]
                future = np.triu(np.ones((T, T), dtype=bool), k=1)  # True above the diagonal
                scores = np.where(future, -np.inf, scores)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T, d)
        '''),
        make_inputs=_square_qkv,
    ),
    Bug(
        id="mask_with_zero",
        title="A mask that multiplies by zero",
        function="causal_attention",
        signature="causal_attention(q, k, v)",
        code=_code('''
            import numpy as np

            def causal_attention(q, k, v):
                """Masked self-attention of a decoder, one head.

                q, k, v: arrays of shape (T, d). Returns an array of shape (T, d).
                The token at position t may only use positions 0..t.
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T, T)
                T = scores.shape[0]
                allowed = np.tril(np.ones((T, T)))                  # 1 = may attend, 0 = future
                scores = scores * allowed
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T, d)
        '''),
        hint="What is exp(0)? Compare it with exp(-inf).",
        diagnosis=(
            "Multiplying a score by 0 gives a score of 0, and softmax turns 0 into exp(0) = 1, "
            "a perfectly ordinary weight: the future is still visible, just with the score it "
            "would have had if q and k were orthogonal. A masked score has to be -inf (or a "
            "very large negative number) so that its weight is exp(-inf) = 0."
        ),
        reference=_code('''
            import numpy as np

            def causal_attention(q, k, v):
                """Masked self-attention of a decoder, one head.

                q, k, v: arrays of shape (T, d). Returns an array of shape (T, d).
                The token at position t may only use positions 0..t.
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T, T)
                T = scores.shape[0]
                allowed = np.tril(np.ones((T, T)))                  # 1 = may attend, 0 = future
                scores = np.where(allowed == 1, scores, -np.inf)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T, d)
        '''),
        make_inputs=_square_qkv,
    ),
    Bug(
        id="softmax_axis",
        title="Softmax over the wrong axis",
        function="attention",
        signature="attention(q, k, v)",
        code=_code('''
            import numpy as np

            def attention(q, k, v):
                """Scaled dot-product attention, no mask.

                q: (T_q, d), k: (T_k, d), v: (T_k, d_v). Returns (T_q, d_v).
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T_q, T_k)
                weights = np.exp(scores - scores.max(axis=0, keepdims=True))
                weights = weights / weights.sum(axis=0, keepdims=True)
                return weights @ v                                  # (T_q, d_v)
        '''),
        hint="Each query's weights should add up to 1. Do they? Sum the rows of `weights`.",
        diagnosis=(
            "The softmax normalises each column (one key, over all queries) instead of each row "
            "(one query, over all keys). Every query must get a probability distribution over "
            "the keys, so the softmax runs over the last axis, the keys' axis: "
            "axis=-1 in both the max and the sum."
        ),
        reference=_code('''
            import numpy as np

            def attention(q, k, v):
                """Scaled dot-product attention, no mask.

                q: (T_q, d), k: (T_k, d), v: (T_k, d_v). Returns (T_q, d_v).
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T_q, T_k)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T_q, d_v)
        '''),
        make_inputs=_cross_qkv,
    ),
    Bug(
        id="missing_scale",
        title="Missing 1/√d_k",
        function="attention",
        signature="attention(q, k, v)",
        code=_code('''
            import numpy as np

            def attention(q, k, v):
                """Scaled dot-product attention, no mask.

                q: (T_q, d_k), k: (T_k, d_k), v: (T_k, d_v). Returns (T_q, d_v).
                """
                scores = q @ k.T                                    # (T_q, T_k)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T_q, d_v)
        '''),
        hint="The function is called *scaled* dot-product attention. How large do the scores get when d_k = 16?",
        diagnosis=(
            "The scores are not divided by √d_k. A dot product of two d_k-dimensional vectors "
            "with unit-variance entries has variance d_k, so without the scaling the scores "
            "grow with the head size, the softmax saturates to nearly one-hot weights, and its "
            "gradients all but vanish. Dividing by √d_k brings the variance back to about 1."
        ),
        reference=_code('''
            import numpy as np

            def attention(q, k, v):
                """Scaled dot-product attention, no mask.

                q: (T_q, d_k), k: (T_k, d_k), v: (T_k, d_v). Returns (T_q, d_v).
                """
                scores = q @ k.T / np.sqrt(q.shape[-1])           # (T_q, T_k)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                  # (T_q, d_v)
        '''),
        make_inputs=_scaled_inputs,
    ),
    Bug(
        id="head_split",
        title="Splitting heads with reshape alone",
        function="split_heads",
        signature="split_heads(x, n_heads)",
        code=_code('''
            import numpy as np

            def split_heads(x, n_heads):
                """Cut each token's vector into n_heads slices, one per head.

                x: (T, d_model). Returns (n_heads, T, d_head) with d_head = d_model // n_heads;
                head h gets columns h*d_head ... (h+1)*d_head - 1 of every token.
                """
                T, d_model = x.shape
                d_head = d_model // n_heads
                return x.reshape(n_heads, T, d_head)
        '''),
        hint="Try x = np.arange(12).reshape(3, 4) with n_heads=2. Which numbers end up in head 0?",
        diagnosis=(
            "reshape only re-reads the same row-major buffer with new dimensions: it does not "
            "move data between axes. Reshaping (T, d_model) straight to (n_heads, T, d_head) "
            "gives head 0 the first T*d_head numbers of the buffer, i.e. whole tokens, mixing "
            "positions and features. The split that keeps each token intact is "
            "reshape(T, n_heads, d_head) followed by transpose(1, 0, 2)."
        ),
        reference=_code('''
            import numpy as np

            def split_heads(x, n_heads):
                """Cut each token's vector into n_heads slices, one per head.

                x: (T, d_model). Returns (n_heads, T, d_head) with d_head = d_model // n_heads;
                head h gets columns h*d_head ... (h+1)*d_head - 1 of every token.
                """
                T, d_model = x.shape
                d_head = d_model // n_heads
                return x.reshape(T, n_heads, d_head).transpose(1, 0, 2)
        '''),
        make_inputs=_heads_inputs,
    ),
    Bug(
        id="padding_mask",
        title="Padding that is not masked",
        function="padded_attention",
        signature="padded_attention(q, k, v, lengths)",
        code=_code('''
            import numpy as np

            def padded_attention(q, k, v, lengths):
                """Self-attention over a batch of sequences padded to the same length T.

                q, k, v: (B, T, d). lengths: B integers, the real length of each sequence;
                positions >= lengths[b] are padding. Returns (B, T, d). Only the outputs at
                real positions are checked.
                """
                scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])   # (B, T, T)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                           # (B, T, d)
        '''),
        hint="`lengths` is passed in but never used. What do the real tokens of a short sequence read?",
        diagnosis=(
            "The padding positions are attended to like real tokens, so a sequence's result "
            "depends on how much filler the batch added to it. Padding keys must get the "
            "score -inf, for every query, before the softmax; the outputs at padding "
            "positions themselves are then simply ignored."
        ),
        reference=_code('''
            import numpy as np

            def padded_attention(q, k, v, lengths):
                """Self-attention over a batch of sequences padded to the same length T.

                q, k, v: (B, T, d). lengths: B integers, the real length of each sequence;
                positions >= lengths[b] are padding. Returns (B, T, d). Only the outputs at
                real positions are checked.
                """
                scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])   # (B, T, T)
                T = q.shape[1]
                is_pad = np.arange(T)[None, :] >= np.array(lengths)[:, None]   # (B, T)
                scores = np.where(is_pad[:, None, :], -np.inf, scores)        # hide padding keys
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = weights / weights.sum(axis=-1, keepdims=True)
                return weights @ v                                           # (B, T, d)
        '''),
        make_inputs=_padded_inputs,
        select=_real_rows,
    ),
    Bug(
        id="post_norm",
        title="Post-norm where pre-norm was intended",
        function="pre_norm_mlp",
        signature="pre_norm_mlp(x, w1, w2)",
        code=_code('''
            import numpy as np

            def layer_norm(x, eps=1e-5):
                mean = x.mean(axis=-1, keepdims=True)
                var = x.var(axis=-1, keepdims=True)
                return (x - mean) / np.sqrt(var + eps)

            def pre_norm_mlp(x, w1, w2):
                """One pre-norm residual sublayer, as in GPT-2: x + MLP(LayerNorm(x)).

                x: (T, d), w1: (d, 4d), w2: (4d, d). Returns (T, d).
                """
                h = np.maximum(0.0, x @ w1) @ w2        # (T, d) ReLU MLP
                return layer_norm(x + h)
        '''),
        hint="Read the docstring's formula, then read the last two lines. Where is LayerNorm applied?",
        diagnosis=(
            "This is the original Transformer's post-norm block, LayerNorm(x + MLP(x)), not the "
            "pre-norm block the docstring asks for. In pre-norm (GPT-2 and most models since) "
            "only the sublayer's input is normalised and the residual path x + ... is left "
            "untouched, which keeps an identity path from input to output and makes deep stacks "
            "easier to train."
        ),
        reference=_code('''
            import numpy as np

            def layer_norm(x, eps=1e-5):
                mean = x.mean(axis=-1, keepdims=True)
                var = x.var(axis=-1, keepdims=True)
                return (x - mean) / np.sqrt(var + eps)

            def pre_norm_mlp(x, w1, w2):
                """One pre-norm residual sublayer, as in GPT-2: x + MLP(LayerNorm(x)).

                x: (T, d), w1: (d, 4d), w2: (4d, d). Returns (T, d).
                """
                h = np.maximum(0.0, layer_norm(x) @ w1) @ w2   # (T, d) ReLU MLP
                return x + h
        '''),
        make_inputs=_mlp_inputs,
    ),
    Bug(
        id="layer_norm_axis",
        title="LayerNorm over the wrong axis",
        function="layer_norm",
        signature="layer_norm(x, gamma, beta)",
        code=_code('''
            import numpy as np

            def layer_norm(x, gamma, beta, eps=1e-5):
                """LayerNorm of every token vector separately.

                x: (T, d); gamma, beta: (d,). Returns (T, d).
                """
                mean = x.mean(axis=0, keepdims=True)     # (1, d)
                var = x.var(axis=0, keepdims=True)       # (1, d)
                return gamma * (x - mean) / np.sqrt(var + eps) + beta
        '''),
        hint="After normalising, each token's vector should have mean 0. Check x_hat.mean(axis=-1).",
        diagnosis=(
            "The statistics are taken over the tokens (axis 0), once per feature, which is what "
            "batch normalisation does, and which makes every token's output depend on the other "
            "tokens in the sequence. LayerNorm takes the mean and variance over the features of "
            "each token (axis=-1), so each token is normalised on its own."
        ),
        reference=_code('''
            import numpy as np

            def layer_norm(x, gamma, beta, eps=1e-5):
                """LayerNorm of every token vector separately.

                x: (T, d); gamma, beta: (d,). Returns (T, d).
                """
                mean = x.mean(axis=-1, keepdims=True)    # (T, 1)
                var = x.var(axis=-1, keepdims=True)      # (T, 1)
                return gamma * (x - mean) / np.sqrt(var + eps) + beta
        '''),
        make_inputs=_layer_norm_inputs,
    ),
    Bug(
        id="shifted_targets",
        title="Targets that are not shifted",
        function="lm_loss",
        signature="lm_loss(logits, tokens)",
        code=_code('''
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
                picked = log_probs[np.arange(T), tokens]                          # (T,)
                return -picked.mean()
        '''),
        hint="Row t of the logits is a guess about which token?",
        diagnosis=(
            "Every position is scored on the token it already sees (tokens[t]) instead of the "
            "next one (tokens[t+1]): a causal model trained this way only learns to copy its "
            "input. The targets are the inputs shifted left by one, so the last position has no "
            "target: use log_probs[:-1] with tokens[1:]."
        ),
        reference=_code('''
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
                targets = tokens[1:]                                              # (T-1,)
                picked = log_probs[np.arange(T - 1), targets]                     # (T-1,)
                return -picked.mean()
        '''),
        make_inputs=_lm_inputs,
    ),
]

BUGS = {bug.id: bug for bug in _BUGS}


# ----------------------------------------------------------------------------
# running the reader's code


class _UserCodeError(Exception):
    """The reader's code failed; `info` is the plain-data description."""

    def __init__(self, info):
        super().__init__(info["message"])
        self.info = info


def _get(bug_id):
    if not isinstance(bug_id, str) or bug_id not in BUGS:
        raise ValueError(f"unknown snippet {bug_id!r}; choose one of: {', '.join(BUGS)}.")
    return BUGS[bug_id]


def _line_text(code, line):
    lines = code.splitlines()
    return lines[line - 1].strip() if line and 1 <= line <= len(lines) else ""


def _describe_exception(exc, code, where):
    """Plain data for an exception raised by the reader's code: type, message, line."""
    if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        line = exc.lineno
        detail = exc.msg
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
        line = frames[-1].lineno if frames else None
        detail = str(exc)
    name = type(exc).__name__
    text = _line_text(code, line)
    at = f" on line {line}" + (f" ({text})" if text else "") if line else ""
    message = f"{name}{at} {where}: {detail}" if detail else f"{name}{at} {where}."
    return {"type": name, "message": detail, "line": line, "summary": message}


def _load(code, bug):
    """Run the reader's code in a fresh namespace and return the function it defines."""
    namespace = {"__name__": "snippet", "np": np, "numpy": np}
    try:
        compiled = compile(code, FILENAME, "exec")
        exec(compiled, namespace)  # noqa: S102 - the reader runs their own code, in their own browser
    except (Exception, SystemExit) as exc:
        info = _describe_exception(exc, code, "while running your code")
        raise _UserCodeError(info) from None
    fn = namespace.get(bug.function)
    if not callable(fn):
        message = f"Your code must define a function `{bug.signature}`."
        raise _UserCodeError({"type": "NameError", "message": message, "line": None, "summary": message})
    return fn


def _copy(inputs):
    return {name: value.copy() if isinstance(value, np.ndarray) else list(value) if isinstance(value, list) else value
            for name, value in inputs.items()}


def _describe_inputs(inputs):
    parts = []
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            parts.append(f"{name} of shape {value.shape}")
        else:
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def _as_result_array(value):
    """The reader's return value as a float64 array, or None if it is not numeric."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return arr


def _compare(got, expected):
    """(passed, max_abs_error, problem) for one input; `problem` is a sentence or ''."""
    if got is None:
        return False, None, "it did not return an array of numbers"
    if got.shape != expected.shape:
        return False, None, f"it returned shape {got.shape}, expected shape {expected.shape}"
    if not np.isfinite(got).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(got))[0])
        return False, math.inf, f"it returned {got[bad]}" + (f" at index {bad}" if bad else "")
    diff = np.abs(got - expected)
    max_err = float(diff.max()) if diff.size else 0.0
    if np.allclose(got, expected, rtol=RTOL, atol=ATOL):
        return True, max_err, ""
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    worst = tuple(int(i) for i in worst)
    at = f" at index {worst}" if worst else ""
    return False, max_err, (f"max abs error {max_err:.3g}{at} (yours {got[worst]:.6g}, "
                            f"reference {expected[worst]:.6g})")


def _result(bug, passed, message, reveal, **extra):
    result = {
        "bug_id": bug.id,
        "passed": passed,
        "message": message,
        "num_cases": NUM_CASES,
        "cases_passed": 0,
        "failed_case": None,
        "max_abs_error": None,
        "error": None,
        "output": "",
        "diagnosis": bug.diagnosis if passed or reveal else None,
        "reference": bug.reference if passed or reveal else None,
    }
    result.update(extra)
    return result


def _run_cases(bug, fn, reference_fn):
    """Call `fn` and the reference on every seeded input; stop at the first failure."""
    worst = 0.0
    for case in range(NUM_CASES):
        inputs = bug.make_inputs(np.random.default_rng(1000 + case))
        expected = np.asarray(reference_fn(*_copy(inputs).values()), dtype=np.float64)
        got = _as_result_array(fn(*_copy(inputs).values()))  # exceptions go to the caller, which reports the line
        if bug.select is not None and got is not None and got.shape == expected.shape:
            got, expected = bug.select(inputs, got), bug.select(inputs, expected)
        ok, err, problem = _compare(got, expected)
        if not ok:
            return case, err, f"Input {case + 1} of {NUM_CASES} ({_describe_inputs(inputs)}): {problem}."
        worst = max(worst, err)
    return None, worst, ""


def _reference_function(bug):
    namespace = {"__name__": "reference", "np": np}
    exec(compile(bug.reference, f"<reference {bug.id}>", "exec"), namespace)  # noqa: S102 - our own catalogue
    return namespace[bug.function]


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def _summary(bug):
    return {"id": bug.id, "title": bug.title, "function": bug.function, "signature": bug.signature,
            "code": bug.code, "hint": bug.hint}


def list_bugs() -> list[dict]:
    """The catalogue, without the answers.

    Returns:
        One dict per snippet, in teaching order, with keys `id`, `title`,
        `function` (the name the code must define), `signature`, `code` (the buggy
        snippet) and `hint`.
    """
    return [_summary(bug) for bug in _BUGS]


def get_bug(bug_id: str) -> dict:
    """One snippet of the catalogue, without the answer.

    Args:
        bug_id: A snippet id from `list_bugs()`, e.g. `"causal_mask"`.

    Returns:
        The keys `id`, `title`, `function`, `signature`, `code` and `hint`.

    Raises:
        ValueError: If there is no snippet with that id.
    """
    return _summary(_get(bug_id))


def reveal(bug_id: str) -> dict:
    """The answer to one snippet: what is wrong and the corrected code.

    Args:
        bug_id: A snippet id from `list_bugs()`.

    Returns:
        The keys `id`, `diagnosis` (a paragraph) and `reference` (the corrected code).

    Raises:
        ValueError: If there is no snippet with that id.
    """
    bug = _get(bug_id)
    return {"id": bug.id, "diagnosis": bug.diagnosis, "reference": bug.reference}


def check(bug_id: str, code: str, reveal: bool = False) -> dict:
    """Run the reader's version of a snippet and compare it with the reference.

    The code runs in a fresh namespace where `np` and `numpy` are NumPy. The function
    it defines (`function` in the catalogue) is called on `NUM_CASES` seeded random
    inputs, each a fresh copy, and every result is compared with the reference
    implementation's with `numpy.allclose(rtol=1e-6, atol=1e-8)`. Arguments are
    passed by position, in the order of the snippet's signature. The first failing
    input stops the check. Whatever the code prints is returned as `output`.

    `KeyboardInterrupt` is not caught, so an interrupt (how the browser stops an
    endless loop) reaches the caller.

    Args:
        bug_id: A snippet id from `list_bugs()`.
        code: Python source defining the snippet's function.
        reveal: Also return the diagnosis and the corrected code when the check fails.

    Returns:
        A dict with `bug_id`, `passed` (bool), `message` (a sentence for the reader),
        `num_cases`, `cases_passed`, `failed_case` (1-based, or None),
        `max_abs_error` (largest error seen, or None when no comparison was possible),
        `error` (None, or `{type, message, line}` for an exception in the reader's code,
        `line` counted from 1 in `code`), `output` (printed text), `diagnosis` and
        `reference` (None unless passed or `reveal`).

    Raises:
        ValueError: If the snippet id is unknown or `code` is not a string.

    Examples:
        >>> check("causal_mask", get_bug("causal_mask")["code"])["passed"]
        False
        >>> check("causal_mask", reveal("causal_mask")["reference"])["passed"]
        True
    """
    bug = _get(bug_id)
    if not isinstance(code, str):
        raise ValueError(f"code must be a string of Python source, got {type(code).__name__}.")
    if len(code) > MAX_CODE_CHARS:
        raise ValueError(f"code is too long ({len(code):,} characters; at most {MAX_CODE_CHARS:,}).")
    reveal = bool(reveal)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn = _load(code, bug)
            reference_fn = _reference_function(bug)
            failed, max_err, problem = _run_cases(bug, fn, reference_fn)
        except _UserCodeError as exc:
            failed, max_err, problem = None, None, None
            error = exc.info
        except (Exception, SystemExit) as exc:
            failed, max_err, problem = None, None, None
            error = _describe_exception(exc, code, "while calling your function")
        else:
            error = None
    output = printed.getvalue()
    if len(output) > MAX_OUTPUT_CHARS:
        output = output[:MAX_OUTPUT_CHARS] + "\n… (output cut)"
    if error is not None:
        summary = error.pop("summary")
        return _result(bug, False, summary, reveal, error=error, output=output)
    if failed is not None:
        return _result(bug, False, problem, reveal, cases_passed=failed, failed_case=failed + 1,
                       max_abs_error=max_err, output=output)
    message = (f"Passed: your {bug.function} matches the reference on all {NUM_CASES} inputs "
               f"(max abs error {max_err:.2g}).")
    return _result(bug, True, message, reveal, cases_passed=NUM_CASES, max_abs_error=max_err, output=output)


def check_all_references() -> dict:
    """Check every snippet's corrected code: a self-test of the catalogue.

    Returns:
        `{bug_id: passed}` for every snippet; all should be True.
    """
    return {bug.id: check(bug.id, bug.reference)["passed"] for bug in _BUGS}

