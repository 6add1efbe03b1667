"""Mixture of experts: a router, top-k gates, the load-balancing loss and routing collapse.

An MoE layer replaces the one feed-forward network of a block with `N` expert
networks and a small *router*. For each token vector `x` (one row of a (T, d)
matrix) the router scores every expert and only the best `k` run:

    logits = x W_r                       W_r: (d, N)      logits: (N,)
    p      = softmax(logits)             router probabilities, sum 1
    S      = the k experts with largest p (ties: the lower expert index)
    g_e    = p_e / sum_{j in S} p_j      gates, renormalised over S, sum 1
    y      = sum_{e in S} g_e E_e(x)     + every shared expert, with weight 1

Routing is decided token by token. If most tokens pick the same few experts
(*routing collapse*), the other experts are wasted. The Switch Transformer's
auxiliary loss discourages that:

    loss_aux = alpha * N * sum_i f_i * P_i

with `f_i` the fraction of routing slots sent to expert i (for top-1 routing,
the fraction of tokens; here `f_i = (tokens choosing i) / (T k)`, so sum f = 1)
and `P_i` the router probability of expert i averaged over the T tokens. When
routing is perfectly uniform, f_i = P_i = 1/N and the sum times N is exactly 1;
when every token goes to one expert with certainty it is N. In training, f is
treated as a constant (it comes from a non-differentiable choice) and the
gradient flows through P only. This module reports `N * sum_i f_i P_i` (alpha = 1)
except where a coefficient is asked for.

Every public function takes and returns plain Python data; inside, float64 NumPy.
"""

import math
from collections.abc import Sequence

import numpy as np

from demos._checks import as_array as _as_float_array
from demos._checks import as_finite as _as_finite
from demos._checks import as_int as _as_int
from demos._checks import as_number as _as_number

Matrix = Sequence[Sequence[float]]  # rows of numbers, e.g. T token vectors of width d

MAX_EXPERTS = 512
MAX_STEPS = 300
# the toy training dynamic of `routing_collapse` (see its docstring)
COLLAPSE_WIDTH = 16
COLLAPSE_LR = 4.0
COLLAPSE_SKILL_HALF = 3.0
COLLAPSE_INIT = 0.5


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_array(name, x, ndim):
    """Nested lists of finite numbers as a float64 array with `ndim` dimensions."""
    a = _as_float_array(name, x)
    if a.ndim != ndim or a.size == 0:
        raise ValueError(f"{name} must be a non-empty array with {ndim} dimensions, got shape {a.shape}.")
    return _as_finite(name, a)


def _as_probs(probs):
    p = _as_array("probs", probs, 2)  # (T, N)
    if (p < 0).any() or np.abs(p.sum(axis=1) - 1.0).max() > 1e-9:
        raise ValueError("each row of probs must be non-negative and sum to 1 (one router distribution per token).")
    return p


# ----------------------------------------------------------------------------
# the math, on float64 arrays


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))  # (T, N)
    return e / e.sum(axis=-1, keepdims=True)


def _top_k(p, k):
    """Indices (T, k) of the k largest probabilities per row; ties go to the lower index."""
    return np.argsort(-p, axis=1, kind="stable")[:, :k]


def _dispatch_fraction(chosen, n_experts):
    """f (N,): share of the T * k routing slots that went to each expert."""
    return np.bincount(chosen.ravel(), minlength=n_experts) / chosen.size


def _aux(f, p):
    """N * sum_i f_i P_i, with P (N,) the mean router probability per expert."""
    return float(p.shape[1] * np.dot(f, p.mean(axis=0)))


def _route(x, w_router, k):
    logits = x @ w_router  # (T, N)
    p = _softmax(logits)  # (T, N)
    chosen = _top_k(p, k)  # (T, k)
    picked = np.take_along_axis(p, chosen, axis=1)  # (T, k)
    gates = picked / picked.sum(axis=1, keepdims=True)  # (T, k) renormalised
    return logits, p, chosen, gates


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def route(x: Matrix, w_router: Matrix, top_k: int = 2) -> dict:
    """Route T tokens to experts: router probabilities, top-k choice and gates.

    Args:
        x: Token vectors, T rows of width d.
        w_router: Router weights, d rows of width N (one column per expert).
        top_k: Experts per token, 1 to N.

    Returns:
        `logits` and `probs` (T × N), `experts` (T × k expert indices, most
            probable first), `gates` (T × k, each row sums to 1),
            `tokens_per_expert` (N counts), `fraction_routed` (f, N values),
            `mean_prob` (P, N values) and `aux_loss` (N · Σ f_i P_i).

    Raises:
        ValueError: On shape mismatches or top_k outside 1..N.
    """
    x = _as_array("x", x, 2)  # (T, d)
    w = _as_array("w_router", w_router, 2)  # (d, N)
    if w.shape[0] != x.shape[1]:
        raise ValueError(f"w_router must have d = {x.shape[1]} rows (the token width), got {w.shape[0]}.")
    n = w.shape[1]
    k = _as_int("top_k", top_k, 1, n)
    logits, p, chosen, gates = _route(x, w, k)
    f = _dispatch_fraction(chosen, n)
    return {
        "logits": logits.tolist(),
        "probs": p.tolist(),
        "experts": chosen.tolist(),
        "gates": gates.tolist(),
        "tokens_per_expert": np.bincount(chosen.ravel(), minlength=n).tolist(),
        "fraction_routed": f.tolist(),
        "mean_prob": p.mean(axis=0).tolist(),
        "aux_loss": _aux(f, p),
    }


def load_balancing_loss(probs: Matrix, top_k: int = 1, alpha: float = 1.0) -> dict:
    """The Switch-Transformer auxiliary loss `alpha * N * sum_i f_i * P_i`.

    Args:
        probs: Router probabilities, T rows of N values, each row summing to 1.
        top_k: Experts chosen per token (ties: the lower index); f counts the
            T · k routing slots.
        alpha: Coefficient of the loss (Switch Transformers used a small value
            such as 0.01 in training; 1 shows the bare quantity).

    Returns:
        `fraction_routed` (f), `mean_prob` (P), `loss` (alpha · N · Σ f_i P_i),
            and `uniform_loss` (what perfectly uniform routing gives: alpha).

    Raises:
        ValueError: If a row is not a probability distribution or top_k is out of range.

    Examples:
        >>> load_balancing_loss([[0.5, 0.5], [0.5, 0.5]])["loss"]
        1.0
        >>> load_balancing_loss([[1.0, 0.0], [1.0, 0.0]])["loss"]
        2.0
    """
    p = _as_probs(probs)
    k = _as_int("top_k", top_k, 1, p.shape[1])
    a = _as_number("alpha", alpha)
    if a < 0:
        raise ValueError(f"alpha must be >= 0, got {a}.")
    f = _dispatch_fraction(_top_k(p, k), p.shape[1])
    return {"fraction_routed": f.tolist(), "mean_prob": p.mean(axis=0).tolist(), "loss": a * _aux(f, p), "uniform_loss": a}


def moe_layer(x: Matrix, w_router: Matrix, w_experts: Sequence[Matrix], top_k: int = 2, w_shared: Sequence[Matrix] | None = None) -> dict:
    """A full (toy) MoE layer with linear experts: `y = sum_e g_e x W_e + sum_s x W_s`.

    Real experts are small feed-forward networks; linear maps keep the example
    readable without changing how routing and gating combine them.

    Args:
        x: Token vectors, T rows of width d.
        w_router: Router weights (d, N).
        w_experts: N expert matrices, each (d, d).
        top_k: Routed experts per token, 1 to N.
        w_shared: Optional list of shared-expert matrices (d, d), applied to
            every token with weight 1, whatever the router says.

    Returns:
        `output` (T × d), `experts` (T × k) and `gates` (T × k).

    Raises:
        ValueError: On shape mismatches or top_k outside 1..N.
    """
    x = _as_array("x", x, 2)  # (T, d)
    w = _as_array("w_router", w_router, 2)  # (d, N)
    experts = _as_array("w_experts", w_experts, 3)  # (N, d, d)
    T, d = x.shape
    n = experts.shape[0]
    if w.shape != (d, n):
        raise ValueError(f"w_router must have shape ({d}, {n}): token width by number of experts, got {w.shape}.")
    if experts.shape[1:] != (d, d):
        raise ValueError(f"every expert matrix must be ({d}, {d}), got {experts.shape[1:]}.")
    k = _as_int("top_k", top_k, 1, n)
    _, _, chosen, gates = _route(x, w, k)
    y = np.zeros((T, d))
    for t in range(T):  # token by token, as the routing is
        for e, g in zip(chosen[t], gates[t]):
            y[t] += g * (x[t] @ experts[e])
    if w_shared is not None:
        shared = _as_array("w_shared", w_shared, 3)  # (S, d, d)
        if shared.shape[1:] != (d, d):
            raise ValueError(f"every shared expert matrix must be ({d}, {d}), got {shared.shape[1:]}.")
        y += sum(x @ s for s in shared)
    return {"output": y.tolist(), "experts": chosen.tolist(), "gates": gates.tolist()}


def routing_collapse(
    num_experts: int = 8,
    top_k: int = 1,
    steps: int = 60,
    balance: bool = False,
    alpha: float = 0.5,
    num_tokens: int = 64,
    seed: int = 0,
) -> dict:
    """Simulate a few training steps of a router, with or without the balancing loss.

    A deliberately tiny model of the rich-get-richer feedback. A fixed batch of
    T random tokens (width 16) is routed by a linear router W (16, N). Each expert
    has a *skill* that grows with the tokens it has been trained on:
    `skill_e = n_e / (n_e + 3)`, where `n_e` is its running total of routed tokens
    (in units of batches). At each step:

    1. route: `p = softmax(X W)`, top-k, the fractions f and mean probabilities P;
    2. task loss: `L = -(1/T) sum_t sum_e p_te skill_e`, i.e. the router is rewarded
       for sending tokens to well-trained experts;
    3. if `balance`: add `alpha * N * sum_i f_i P_i` with f held constant;
    4. one gradient step on W (learning rate 4); then `n_e += k f_e`.

    Random numbers: `numpy.random.default_rng(seed)` draws `X = standard_normal((T, 16))`
    and then `W = 0.5 * standard_normal((16, N))`. Everything is deterministic.

    Without balancing, experts that start with a few more tokens improve faster, so
    the router sends them even more: the load concentrates on a few experts. With
    the auxiliary loss the load stays close to uniform.

    Args:
        num_experts: N, 2 to 64.
        top_k: Experts per token, 1 to N - 1.
        steps: Training steps, 1 to 300.
        balance: Add the load-balancing loss.
        alpha: Its coefficient, 0 to 10 (used only when `balance` is true).
        num_tokens: T, 8 to 1024.
        seed: Non-negative seed.

    Returns:
        Per step (index 0 is before the first update): `load` (N fractions f),
            `max_load`, `active_experts` (experts receiving any token) and
            `aux_loss` (N · Σ f_i P_i, reported even when not trained on);
            plus `skill` (final, per expert) and `uniform_load` (1/N).

    Raises:
        ValueError: On out-of-range settings.
    """
    n = _as_int("num_experts", num_experts, 2, 64)
    k = _as_int("top_k", top_k, 1, n - 1)
    steps = _as_int("steps", steps, 1, MAX_STEPS)
    if not isinstance(balance, bool):
        raise ValueError(f"balance must be true or false, got {balance!r}.")
    alpha = _as_number("alpha", alpha)
    if not 0 <= alpha <= 10:
        raise ValueError(f"alpha must be between 0 and 10, got {alpha}.")
    T = _as_int("num_tokens", num_tokens, 8, 1024)
    seed = _as_int("seed", seed, 0, 2**32 - 1)

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, COLLAPSE_WIDTH))  # (T, d)
    W = COLLAPSE_INIT * rng.standard_normal((COLLAPSE_WIDTH, n))  # (d, N)
    trained = np.zeros(n)  # (N,) tokens seen so far, in batches
    history = {"load": [], "max_load": [], "active_experts": [], "aux_loss": []}
    for _ in range(steps):
        skill = trained / (trained + COLLAPSE_SKILL_HALF)  # (N,) in [0, 1)
        p = _softmax(X @ W)  # (T, N)
        f = _dispatch_fraction(_top_k(p, k), n)  # (N,)
        history["load"].append(f.tolist())
        history["max_load"].append(float(f.max()))
        history["active_experts"].append(int((f > 0).sum()))
        history["aux_loss"].append(_aux(f, p))
        # dL/dlogits for L = -(1/T) sum p*skill: softmax Jacobian p*(a - p.a) with a = -skill
        grad = -p * (skill - p @ skill[:, None]) / T  # (T, N)
        if balance:  # d/dlogits of alpha*N*sum_i f_i mean_t p_ti, f constant
            grad += alpha * n * p * (f - p @ f[:, None]) / T
        W -= COLLAPSE_LR * (X.T @ grad)  # (d, N)
        trained += k * f
    history["skill"] = (trained / (trained + COLLAPSE_SKILL_HALF)).tolist()
    history["uniform_load"] = 1.0 / n
    return history


def parameter_counts(
    d_model: int = 768,
    d_ff: int = 3072,
    num_experts: int = 8,
    top_k: int = 2,
    num_shared: int = 0,
    granularity: int = 1,
) -> dict:
    """Total versus active expert parameters, with shared and fine-grained experts.

    Each expert is a two-layer FFN without biases (d -> hidden -> d): 2 · d · hidden
    weights. Fine-grained experts split every expert into `granularity` smaller
    ones of hidden width `d_ff / granularity` and route `top_k * granularity` of
    them, so the compute per token stays the same while the router can combine
    many more distinct experts. Shared experts (each of the full width `d_ff`)
    run for every token. The router adds d · (routed experts) weights.

    Args:
        d_model: d, the residual-stream width.
        d_ff: Hidden width of one (coarse) expert.
        num_experts: N coarse routed experts, 1 to 512.
        top_k: Coarse experts per token, 1 to N.
        num_shared: Always-active shared experts, 0 to 16.
        granularity: How many pieces each coarse expert is split into, 1 to 64;
            must divide d_ff.

    Returns:
        `routed_experts`, `active_routed`, `expert_hidden`, `params_per_expert`,
            `total_params` (all routed + shared experts + router), `active_params`
            (what one token uses), `active_fraction`, `dense_ffn_params` (one FFN of
            width d_ff, for comparison) and `log10_combinations` (log10 of how many
            different sets of routed experts a token can get).

    Raises:
        ValueError: On out-of-range sizes or a granularity that does not divide d_ff.

    Examples:
        >>> round(parameter_counts()["active_fraction"], 4)
        0.2501
    """
    d = _as_int("d_model", d_model, 1, 100_000)
    h = _as_int("d_ff", d_ff, 1, 1_000_000)
    n = _as_int("num_experts", num_experts, 1, MAX_EXPERTS)
    k = _as_int("top_k", top_k, 1, n)
    s = _as_int("num_shared", num_shared, 0, 16)
    m = _as_int("granularity", granularity, 1, 64)
    if h % m:
        raise ValueError(f"granularity {m} must divide d_ff = {h} so every fine-grained expert has the same width.")
    routed, active, hidden = n * m, k * m, h // m
    per_expert = 2 * d * hidden
    router = d * routed
    shared = s * 2 * d * h
    total = routed * per_expert + shared + router
    used = active * per_expert + shared + router
    combos = math.lgamma(routed + 1) - math.lgamma(active + 1) - math.lgamma(routed - active + 1)
    return {
        "routed_experts": routed,
        "active_routed": active,
        "expert_hidden": hidden,
        "params_per_expert": per_expert,
        "total_params": total,
        "active_params": used,
        "active_fraction": used / total,
        "dense_ffn_params": 2 * d * h,
        "log10_combinations": combos / math.log(10),
    }
