"""Change-the-code exercises: a function to complete, checked case by case against a reference.

Each lab page has at least one exercise. The reader gets a starting version of one
function (it runs, but does not do the job yet), completes or changes it, and
`check(exercise_id, code)` runs it in the sandbox of `demos._sandbox`:

    1. the code runs in a fresh namespace with `np`/`numpy` available;
    2. the function it defines is called on `NUM_CASES` seeded random inputs;
    3. every result is compared with the reference implementation's
       (`numpy.allclose(rtol=1e-6, atol=1e-8)`), and each case is reported on its own:
       passed, or what was wrong (the shape, the largest error, or the exception and
       its line).

Unlike `demos.bugs.check`, a failing case does not stop the others: the reader sees
which inputs pass and which do not. `KeyboardInterrupt` is let through (that is how the
browser stops an endless loop); the reader's other exceptions are reported.
"""

import io
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from demos import _sandbox

NUM_CASES = _sandbox.NUM_CASES


@dataclass(frozen=True)
class Exercise:
    """One exercise: the task, the starting code, the reference and how it is tested."""

    id: str
    title: str
    page: str  # the lab page it belongs to, e.g. "labs/attention.md"
    signature: str
    task: str
    diff: str  # the code: "-" lines only in what the reader starts from, "+" lines only in the reference
    hint: str
    make_inputs: Callable  # rng -> dict of arguments, in the signature's order
    wrong: tuple = ()  # typical wrong answers (for the tests; never shown)

    @property
    def code(self) -> str:
        """What the reader starts from."""
        return _sandbox.snippet_side(self.diff, "-")

    @property
    def reference(self) -> str:
        """A correct solution."""
        return _sandbox.snippet_side(self.diff, "+")

    @property
    def function(self) -> str:
        """The name the reader's code must define."""
        return self.signature.split("(")[0]


def _attention_inputs(rng):
    T, d = int(rng.integers(3, 8)), int(rng.choice([4, 8, 16]))
    return {"q": 1.5 * rng.standard_normal((T, d)), "k": 1.5 * rng.standard_normal((T, d))}


def _layer_norm_inputs(rng):
    T, d = int(rng.integers(2, 6)), int(rng.choice([4, 8, 16]))
    return {"x": 3 * rng.standard_normal((T, d)) + 2, "gamma": rng.standard_normal(d), "beta": rng.standard_normal(d)}


def _merge_inputs(rng):
    ids = [int(i) for i in rng.integers(0, 3, size=int(rng.integers(6, 14)))]
    ids[1:3] = [1, 1]  # "1 1 1" runs make overlapping pairs likely
    ids += [1, 1, 1]
    return {"ids": ids, "pair": (1, 1), "new_id": 256}


def _guided_inputs(rng):
    V = int(rng.integers(5, 12))
    probs = rng.dirichlet(np.ones(V))
    allowed = rng.random(V) < 0.5
    allowed[int(rng.integers(V))] = True
    return {"probs": probs, "allowed": allowed}


def _kv_inputs(rng):
    n_layer, n_head = int(rng.integers(2, 48)), int(rng.choice([1, 4, 8, 12, 32]))
    return {
        "n_layer": n_layer,
        "n_kv_head": n_head,
        "d_head": int(rng.choice([32, 64, 128])),
        "context_length": int(rng.integers(1, 8192)),
        "bytes_per_value": int(rng.choice([1, 2, 4])),
    }


def _cosine_inputs(rng):
    d = int(rng.integers(2, 10))
    return {"a": 3 * rng.standard_normal(d), "b": rng.standard_normal(d)}


def _gpt2_inputs(rng):
    n_head = int(rng.choice([2, 4, 12]))
    return {
        "n_layer": int(rng.integers(1, 25)),
        "d_model": n_head * int(rng.choice([16, 32, 64])),
        "vocab_size": int(rng.integers(100, 60_000)),
        "n_positions": int(rng.choice([128, 512, 1024, 2048])),
    }


def _router_inputs(rng):
    T, E = int(rng.integers(2, 7)), int(rng.choice([4, 8]))
    return {"logits": 2 * rng.standard_normal((T, E)), "k": int(rng.integers(1, 4))}


def _sinusoid_inputs(rng):
    return {"n_positions": int(rng.integers(3, 12)), "d_model": 2 * int(rng.integers(2, 9))}


def _softmax_inputs(rng):
    return {"x": 800 * rng.standard_normal(int(rng.integers(3, 10)))}


_EXERCISES = [
    Exercise(
        id="causal_weights",
        title="Scaled and causal attention weights",
        page="labs/attention.md",
        signature="attention_weights(q, k)",
        task=(
            "Return the (T, T) attention weights of a decoder: scores q kᵀ scaled by 1/√d_k, "
            "the future masked out (token i sees tokens 0…i), softmax over each row. "
            "The starting code forgets two of these steps."
        ),
        diff="""\
 def attention_weights(q, k):
-    scores = q @ k.T
+    T, d_k = q.shape
+    scores = q @ k.T / np.sqrt(d_k)
+    future = np.triu(np.ones((T, T), dtype=bool), k=1)
+    scores = np.where(future, -np.inf, scores)
     scores = scores - scores.max(axis=-1, keepdims=True)
     w = np.exp(scores)
     return w / w.sum(axis=-1, keepdims=True)
""",
        hint="np.triu(np.ones((T, T), dtype=bool), k=1) is True above the diagonal: the future.",
        make_inputs=_attention_inputs,
        wrong=(
            """\
def attention_weights(q, k):
    T, d_k = q.shape
    scores = q @ k.T / np.sqrt(d_k)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w * np.tril(np.ones((T, T)))
""",
            """\
def attention_weights(q, k):
    T, d_k = q.shape
    scores = np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, q @ k.T)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)
""",
        ),
    ),
    Exercise(
        id="layer_norm",
        title="LayerNorm over the features",
        page="labs/block.md",
        signature="layer_norm(x, gamma, beta)",
        task=(
            "Normalise each row of x (one token's d features) to mean 0 and variance 1, with "
            "eps = 1e-5 inside the square root, then scale by gamma and shift by beta."
        ),
        diff="""\
 def layer_norm(x, gamma, beta):
     eps = 1e-5
-    # your change: centre each row (subtract its mean), then divide by sqrt(variance + eps)
-    return gamma * x + beta
+    mean = x.mean(axis=-1, keepdims=True)
+    var = x.var(axis=-1, keepdims=True)
+    return gamma * (x - mean) / np.sqrt(var + eps) + beta
""",
        hint="Which axis holds one token's features? keepdims=True keeps the shapes broadcastable.",
        make_inputs=_layer_norm_inputs,
        wrong=(
            """\
def layer_norm(x, gamma, beta):
    eps = 1e-5
    mean = x.mean(axis=0, keepdims=True)
    var = x.var(axis=0, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta
""",
        ),
    ),
    Exercise(
        id="bpe_merge",
        title="Apply one BPE merge",
        page="labs/bpe.md",
        signature="merge(ids, pair, new_id)",
        task=(
            "Return a new list of token ids in which every occurrence of the adjacent pair "
            "(a, b), read left to right, is replaced by new_id. With pair (1, 1), the run "
            "1 1 1 becomes new_id 1: a merged pair cannot be reused."
        ),
        diff="""\
 def merge(ids, pair, new_id):
-    out = []
+    out, i = [], 0
-    for i in range(len(ids)):
+    while i < len(ids):
+        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
+            out.append(new_id)
+            i += 2
+        else:
-        out.append(ids[i])
+            out.append(ids[i])
+            i += 1
     return out
""",
        hint="Walk with a while loop: after a merge, skip both tokens of the pair.",
        make_inputs=_merge_inputs,
        wrong=(
            """\
def merge(ids, pair, new_id):
    out = []
    for i in range(len(ids)):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
        else:
            out.append(ids[i])
    return out
""",
        ),
    ),
    Exercise(
        id="guided_mask",
        title="Guided decoding: keep only the allowed tokens",
        page="labs/decoding.md",
        signature="guide(probs, allowed)",
        task=(
            "probs is the model's next-token distribution, allowed a boolean mask of the tokens "
            "the grammar permits. Return the distribution the guided sampler draws from: zero "
            "for every token not allowed, and still a probability distribution."
        ),
        diff="""\
 def guide(probs, allowed):
-    return probs
+    kept = np.where(allowed, probs, 0.0)
+    return kept / kept.sum()
""",
        hint="After zeroing the forbidden tokens, what do the remaining probabilities sum to?",
        make_inputs=_guided_inputs,
        wrong=(
            """\
def guide(probs, allowed):
    return np.where(allowed, probs, 0.0)
""",
        ),
    ),
    Exercise(
        id="kv_cache_bytes",
        title="The size of a KV cache",
        page="labs/efficiency.md",
        signature="kv_cache_bytes(n_layer, n_kv_head, d_head, context_length, bytes_per_value)",
        task=(
            "Return how many bytes the KV cache of one sequence takes: every layer keeps, for "
            "every token of the context, the keys and the values of its n_kv_head heads, "
            "d_head numbers each, at bytes_per_value bytes a number."
        ),
        diff="""\
 def kv_cache_bytes(n_layer, n_kv_head, d_head, context_length, bytes_per_value):
-    return n_layer * n_kv_head * d_head * bytes_per_value
+    return 2 * n_layer * n_kv_head * d_head * context_length * bytes_per_value
""",
        hint="Two tensors are cached, not one, and each grows with the context.",
        make_inputs=_kv_inputs,
        wrong=(
            """\
def kv_cache_bytes(n_layer, n_kv_head, d_head, context_length, bytes_per_value):
    return n_layer * n_kv_head * d_head * context_length * bytes_per_value
""",
        ),
    ),
    Exercise(
        id="cosine",
        title="Cosine similarity",
        page="labs/embeddings.md",
        signature="cosine(a, b)",
        task=("Return the cosine of the angle between vectors a and b: 1 for the same direction, 0 for orthogonal, -1 for opposite, whatever their lengths."),
        diff="""\
 def cosine(a, b):
-    return a @ b
+    return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
""",
        hint="The dot product grows with the vectors' lengths; divide them out.",
        make_inputs=_cosine_inputs,
        wrong=(
            """\
def cosine(a, b):
    return a @ b / np.linalg.norm(a)
""",
        ),
    ),
    Exercise(
        id="gpt2_parameters",
        title="Count GPT-2's parameters exactly",
        page="labs/model-size.md",
        signature="gpt2_parameters(n_layer, d_model, vocab_size, n_positions)",
        task=(
            "Return the exact parameter count of a GPT-2-style model: token and learned position "
            "tables; per block two LayerNorms (gain and bias), Q/K/V and output projections, and "
            "an MLP 4·d wide, every linear layer with a bias; a final LayerNorm; the output head "
            "tied to the token table. 12·n_layer·d² is only the rule of thumb."
        ),
        diff="""\
 def gpt2_parameters(n_layer, d_model, vocab_size, n_positions):
-    return 12 * n_layer * d_model ** 2
+    d = d_model
+    attention = 4 * (d * d + d)
+    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)
+    norms = 2 * (2 * d)
+    embeddings = vocab_size * d + n_positions * d
+    return embeddings + n_layer * (attention + mlp + norms) + 2 * d
""",
        hint="Count one block (weights and biases) first, then add the embeddings and the final norm.",
        make_inputs=_gpt2_inputs,
        wrong=(
            """\
def gpt2_parameters(n_layer, d_model, vocab_size, n_positions):
    d = d_model
    return vocab_size * d + n_layer * (12 * d * d + 13 * d) + 2 * d
""",
        ),
    ),
    Exercise(
        id="top_k_router",
        title="Top-k routing weights",
        page="labs/moe.md",
        signature="route(logits, k)",
        task=(
            "logits has one row per token and one column per expert. Return the gate weights: "
            "for each token, a softmax over its k highest-scoring experts only, and 0 for the "
            "others (each row sums to 1)."
        ),
        diff="""\
 def route(logits, k):
+    kth = np.sort(logits, axis=-1)[:, -k][:, None]
+    kept = np.where(logits >= kth, logits, -np.inf)
-    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
+    e = np.exp(kept - kept.max(axis=-1, keepdims=True))
     return e / e.sum(axis=-1, keepdims=True)
""",
        hint="Find each row's k-th largest logit; set the smaller ones to -inf before the softmax.",
        make_inputs=_router_inputs,
        wrong=(
            """\
def route(logits, k):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    kth = np.sort(logits, axis=-1)[:, -k][:, None]
    return np.where(logits >= kth, p, 0.0)
""",
        ),
    ),
    Exercise(
        id="sinusoidal",
        title="The sinusoidal position table",
        page="labs/positions.md",
        signature="sinusoidal(n_positions, d_model)",
        task=(
            "Return the (n_positions, d_model) table of the original Transformer: for position p "
            "and pair i, column 2i holds sin(p / 10000^(2i/d)) and column 2i+1 holds "
            "cos(p / 10000^(2i/d))."
        ),
        diff="""\
 def sinusoidal(n_positions, d_model):
     p = np.arange(n_positions)[:, None]
     i = np.arange(d_model // 2)[None, :]
     angle = p / 10000 ** (2 * i / d_model)
     table = np.zeros((n_positions, d_model))
     table[:, 0::2] = np.sin(angle)
-    table[:, 1::2] = np.sin(angle)
+    table[:, 1::2] = np.cos(angle)
     return table
""",
        hint="Each pair is a point on a circle: one coordinate is a sine, the other a cosine.",
        make_inputs=_sinusoid_inputs,
        wrong=(
            """\
def sinusoidal(n_positions, d_model):
    p = np.arange(n_positions)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = p / 10000 ** (i / d_model)
    table = np.zeros((n_positions, d_model))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)
    return table
""",
        ),
    ),
    Exercise(
        id="stable_softmax",
        title="A softmax that does not overflow",
        page="labs/spot-the-bug.md",
        signature="softmax(x)",
        task=(
            "Return softmax(x) for a vector of logits as large as ±2,000 (float64's exp overflows "
            "above about 709). The result must be the exact softmax, with no inf or nan."
        ),
        diff="""\
 def softmax(x):
-    e = np.exp(x)
+    e = np.exp(x - x.max())
     return e / e.sum()
""",
        hint="softmax(x) = softmax(x - c) for any constant c. Which c keeps every exponent ≤ 0?",
        make_inputs=_softmax_inputs,
        wrong=(
            """\
def softmax(x):
    e = np.exp(x - x.min())
    return e / e.sum()
""",
        ),
    ),
]

EXERCISES = {e.id: e for e in _EXERCISES}


def _get(exercise_id):
    if not isinstance(exercise_id, str) or exercise_id not in EXERCISES:
        shown = exercise_id[:40] if isinstance(exercise_id, str) else type(exercise_id).__name__
        raise ValueError(f"There is no exercise “{shown}”; choose one of: {', '.join(EXERCISES)}.")
    return EXERCISES[exercise_id]


def _summary(e):
    return {
        "id": e.id,
        "title": e.title,
        "page": e.page,
        "function": e.function,
        "signature": e.signature,
        "task": e.task,
        "code": e.code,
        "hint": e.hint,
    }


def list_exercises() -> list[dict]:
    """The catalogue, without the answers.

    Returns:
        One dict per exercise with keys `id`, `title`, `page` (the lab page it belongs
        to), `function`, `signature`, `task` (what to do), `code` (the starting code)
        and `hint`.
    """
    return [_summary(e) for e in _EXERCISES]


def get_exercise(exercise_id: str) -> dict:
    """One exercise of the catalogue, without the answer.

    Args:
        exercise_id: An id from `list_exercises()`, e.g. `"causal_weights"`.

    Returns:
        The keys of `list_exercises()`' entries.

    Raises:
        ValueError: If there is no exercise with that id.
    """
    return _summary(_get(exercise_id))


def solution(exercise_id: str) -> dict:
    """The reference solution of one exercise.

    Args:
        exercise_id: An id from `list_exercises()`.

    Returns:
        The keys `id` and `reference` (the code).

    Raises:
        ValueError: If there is no exercise with that id.
    """
    e = _get(exercise_id)
    return {"id": e.id, "reference": e.reference}


def _one_case(case, inputs, expected, outcome):
    """The verdict on one input: the reader's `outcome` (array or None, error info or None) against `expected`."""
    got, info = outcome
    described = _sandbox._describe_inputs(inputs)
    if info is not None:
        return {"case": case + 1, "inputs": described, "passed": False, "max_abs_error": None, "message": info["summary"], "line": info["line"]}
    ok, err, problem = _sandbox._compare(got, expected)
    if err is not None and not math.isfinite(err):
        err = None
    message = f"matches the reference (max abs error {err:.2g})" if ok else problem
    return {"case": case + 1, "inputs": described, "passed": ok, "max_abs_error": err, "message": message, "line": None}


def check(exercise_id: str, code: str) -> dict:
    """Run the reader's code for one exercise on every test case and compare it with the reference.

    Args:
        exercise_id: An id from `list_exercises()`.
        code: Python source defining the exercise's function.

    Returns:
        A dict with `exercise_id`, `passed` (every case passed), `message` (a sentence),
        `num_cases`, `cases_passed`, `cases` (one dict per case: `case` (1-based),
        `inputs` (described), `passed`, `max_abs_error` (None when no comparison was
        possible), `message`, `line` (the line of your code that raised, or None)),
        `error` (None, or `{type, message, line}` when the code itself does not run or
        defines no such function), `output` (printed text) and `reference` (the
        reference code, once every case passes; else None).

    Raises:
        ValueError: If the id is unknown, or `code` is not a string or is too long.

    Examples:
        The starting code fails; the reference passes:

        >>> [check("cosine", code)["passed"] for code in (get_exercise("cosine")["code"], solution("cosine")["reference"])]
        [False, True]
    """
    e = _get(exercise_id)
    _sandbox.check_code(code)
    inputs = _sandbox.seeded_inputs(e)
    expected = _sandbox.reference_results(e, inputs)
    printed = io.StringIO()
    error, outcomes = _sandbox.run_reader_code(code, e, inputs, printed, stop_at_error=False)
    error = dict(error) if error is not None else None
    cases = [_one_case(case, inputs[case], expected[case], outcome) for case, outcome in enumerate(outcomes)]
    passed_count = sum(c["passed"] for c in cases)
    result = {
        "exercise_id": e.id,
        "passed": error is None and passed_count == NUM_CASES,
        "num_cases": NUM_CASES,
        "cases_passed": passed_count,
        "cases": cases,
        "error": None,
        "output": _sandbox._printed(printed),
        "reference": None,
    }
    if error is not None:
        result["message"] = error.pop("summary")
        result["error"] = error
    elif result["passed"]:
        result["message"] = f"Passed: your {e.function} matches the reference on all {NUM_CASES} inputs."
        result["reference"] = e.reference
    else:
        result["message"] = f"{passed_count} of {NUM_CASES} inputs pass; each is listed below."
    return result
