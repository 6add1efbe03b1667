"""From logits to the next token: softmax, temperature, top-k, top-p and sampling.

A language model ends every step with one raw score (a *logit*) per vocabulary
token. This module turns such a vector into the next token, in the same order
Hugging Face `generate(do_sample=True)` applies its warpers:

    logits --(/ temperature)--> --(top-k)--> --(top-p)--> softmax --> sample

Filtered tokens get the logit `-inf`, so softmax gives them probability 0.
Temperature 0 is greedy decoding: all probability on the argmax.

Every public function takes plain Python data (a list of floats for the logits)
and returns plain Python data, so a browser widget can call it through Pyodide.
Internally everything is float64 NumPy. `V` below is the vocabulary size.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np

MAX_SAMPLES = 1_000_000  # cap on `num_samples`, so a widget cannot freeze the tab


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_logits(logits):
    """Check `logits` and return them as a float64 array of shape (V,)."""
    if isinstance(logits, np.ndarray):
        if logits.dtype.kind not in "iuf":
            raise ValueError(f"logits must be numbers, got an array of dtype {logits.dtype}.")
        z = logits.astype(np.float64)
        if z.ndim != 1:
            raise ValueError(f"logits must be a flat list with one score per token, got shape {z.shape}.")
    else:
        if isinstance(logits, (str, bytes, dict)) or not hasattr(logits, "__iter__"):
            raise ValueError(f"logits must be a list of numbers, got {type(logits).__name__}.")
        items = list(logits)
        for i, x in enumerate(items):
            if isinstance(x, bool) or not isinstance(x, numbers.Real):
                raise ValueError(f"logits[{i}] is {x!r}; every logit must be a number.")
        try:
            z = np.array(items, dtype=np.float64)
        except OverflowError:
            raise ValueError("a logit is too large to be a float64 number.") from None
    if z.size == 0:
        raise ValueError("logits is empty: give at least one token score.")
    if np.isnan(z).any():
        raise ValueError(f"logits[{int(np.argmax(np.isnan(z)))}] is NaN; every logit must be a real number.")
    if np.isposinf(z).any():
        i = int(np.argmax(np.isposinf(z)))
        raise ValueError(f"logits[{i}] is +inf; logits must be finite (or -inf for a banned token).")
    if np.isneginf(z).all():
        raise ValueError("every logit is -inf, so no token could ever be chosen.")
    return z


def _as_number(name, value):
    """Check that `value` is a real, non-NaN number and return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a number, got NaN.")
    return value


def _as_temperature(temperature):
    t = _as_number("temperature", temperature)
    if t < 0:
        raise ValueError(f"temperature must be >= 0 (0 means greedy decoding), got {t}.")
    if math.isinf(t):
        raise ValueError("temperature must be finite; a large value already gives a nearly uniform distribution.")
    return t


def _as_int(name, value):
    """Accept an int, or a float with no fractional part (JavaScript numbers)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"{name} must be a whole number, got {value!r}.")


def _as_top_p(top_p):
    p = _as_number("top_p", top_p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"top_p is a probability and must lie between 0 and 1, got {p}.")
    return p


# ----------------------------------------------------------------------------
# the math, on float64 arrays of shape (V,)


def _softmax(z, temperature=1.0):
    """Probabilities of shape (V,) from logits `z` of shape (V,)."""
    if temperature == 0.0:
        probs = np.zeros_like(z)
        probs[np.argmax(z)] = 1.0  # greedy: np.argmax picks the first of tied maxima
        return probs
    # Subtracting the max changes nothing mathematically (it cancels in the ratio)
    # but keeps exp() in (0, 1]: no overflow even for logit 1e4 at temperature 1e-3.
    scaled = (z - z.max()) / temperature  # (V,) all <= 0, the top token at exactly 0
    e = np.exp(scaled)  # (V,) -inf logits become exactly 0
    return e / e.sum()


def _top_k_mask(z, k):
    """Boolean keep-mask (V,): every token whose logit is >= the k-th largest."""
    V = z.size
    if k <= 0 or k >= V:
        return np.ones(V, dtype=bool)
    kth_largest = np.sort(z)[V - k]
    return z >= kth_largest  # ties with the k-th largest are all kept


def _top_p_mask(z, p):
    """Boolean keep-mask (V,): the smallest top set with probability >= p, plus ties."""
    if p >= 1.0:
        return np.ones(z.size, dtype=bool)
    ascending = np.sort(z)  # (V,) least likely first
    cumulative = np.cumsum(_softmax(ascending))  # (V,) mass of this token and all less likely ones
    removed = cumulative <= 1.0 - p  # (V,) True on a prefix: the unlikely tail
    removed[-1] = False  # the most likely token always survives
    threshold = ascending[np.argmin(removed)]  # smallest surviving logit (first False)
    return z >= threshold  # equal logits share one fate


def _next_token_probs(z, temperature, top_k, top_p):
    """Final probs (V,), keep-mask (V,) and tempered but unfiltered probs (V,)."""
    if temperature == 0.0:
        probs = _softmax(z, 0.0)  # one-hot on the argmax; k and p cannot change it
        return probs, probs > 0, probs
    # Temperature divides the logits. Shifting them by their max first changes no
    # probability and no filter decision, and cannot overflow for tiny temperatures.
    scaled = (z - z.max()) / temperature  # (V,)
    keep = np.isfinite(scaled)  # (V,) a banned (-inf) token never counts as kept
    keep &= _top_k_mask(scaled, top_k)
    keep &= _top_p_mask(np.where(keep, scaled, -np.inf), top_p)  # top-p sees top-k's survivors
    probs = _softmax(np.where(keep, scaled, -np.inf))  # renormalise over the survivors
    return probs, keep, _softmax(scaled)


def _entropy_bits(probs):
    """Shannon entropy in bits; tokens with probability 0 contribute nothing."""
    p = probs[probs > 0]
    return float(max(0.0, -(p * np.log2(p)).sum()))


def _draw(probs, num_samples, rng):
    """Inverse-CDF sampling: `num_samples` token ids from `probs` (V,)."""
    cdf = np.cumsum(probs)  # (V,) running total, ends at 1 up to rounding
    cdf /= cdf[-1]
    cdf[np.flatnonzero(probs)[-1] :] = 1.0  # close the last interval exactly
    u = rng.random(num_samples)  # (num_samples,) uniform in [0, 1)
    # The token whose interval [cdf[i-1], cdf[i]) contains u; a token of
    # probability 0 has an empty interval and can never be drawn.
    return np.searchsorted(cdf, u, side="right")  # (num_samples,)


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def softmax(logits: Sequence[float], temperature: float = 1.0) -> list[float]:
    """Turn logits into probabilities, optionally with a temperature.

    Computes `p_i = exp(z_i / T) / sum_j exp(z_j / T)` in a numerically stable way.
    T < 1 sharpens the distribution, T > 1 flattens it, and T = 0 is the greedy
    limit: a one-hot vector on the largest logit (the first one if several tie,
    like `torch.argmax`).

    Args:
        logits: One score per token, e.g. `[2.0, 1.0, 0.1]`. `-inf` marks a banned
            token (probability 0); NaN and `+inf` are rejected.
        temperature: T >= 0. Default 1, the model's own distribution.

    Returns:
        Probabilities, same length as `logits`, summing to 1.

    Raises:
        ValueError: If the logits are empty or not numbers, or T < 0.

    Examples:
        >>> [round(p, 3) for p in softmax([2.0, 1.0, 0.1])]
        [0.659, 0.242, 0.099]
    """
    z = _as_logits(logits)
    return _softmax(z, _as_temperature(temperature)).tolist()


def top_k_filter(logits: Sequence[float], k: int) -> list[float]:
    """Keep the k highest logits and set every other one to `-inf`.

    Same rule as Hugging Face's `TopKLogitsWarper`: a token survives when its logit
    is at least the k-th largest logit, so tokens tied with the k-th largest all
    survive and more than k tokens can remain.

    Args:
        logits: One score per token (`-inf` allowed).
        k: Number of tokens to keep. `k <= 0` or `k >= len(logits)` keeps all.

    Returns:
        The logits, with filtered tokens replaced by `-inf`.

    Raises:
        ValueError: If the logits are invalid or `k` is not a whole number.

    Examples:
        >>> top_k_filter([1.0, 3.0, 2.0, 3.0], k=1)
        [-inf, 3.0, -inf, 3.0]
    """
    z = _as_logits(logits)
    keep = _top_k_mask(z, _as_int("top_k", k))
    return np.where(keep, z, -np.inf).tolist()


def top_p_filter(logits: Sequence[float], p: float) -> list[float]:
    """Nucleus filtering: keep the most likely tokens whose total probability reaches p.

    Follows Hugging Face's `TopPLogitsWarper`: sort the tokens from least to most
    likely, accumulate their softmax probabilities, and remove every token whose
    cumulative probability is <= 1 - p; the most likely token is always kept. What
    survives is the smallest set of top tokens with total probability >= p.

    Ties at the boundary: Hugging Face sorts with `torch.sort`, whose order among
    equal logits is not specified, so it can keep one copy of a tied logit and drop
    another. Here a token is kept when its logit is >= the smallest logit that the
    Hugging Face procedure keeps. That threshold does not depend on how ties are
    ordered (equal logits have equal probabilities), so the result is deterministic,
    keeps every token tied at the boundary (as `top_k_filter` does), and equals
    Hugging Face's whenever no tie straddles the boundary.

    Args:
        logits: One score per token (`-inf` allowed). Probabilities are the plain
            softmax of these logits; apply a temperature beforehand if you want one.
        p: Target probability mass, 0 <= p <= 1. `p = 1` keeps every token;
            `p = 0` keeps only the most likely token (and any ties with it).

    Returns:
        The logits, with filtered tokens replaced by `-inf`.

    Raises:
        ValueError: If the logits are invalid or p is outside [0, 1].

    Examples:
        >>> import math
        >>> top_p_filter([math.log(0.5), math.log(0.3), math.log(0.2)], p=0.7)[2]
        -inf
    """
    z = _as_logits(logits)
    keep = _top_p_mask(z, _as_top_p(p))
    return np.where(keep, z, -np.inf).tolist()


def next_token_distribution(logits: Sequence[float], temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> dict:
    """The distribution the next token is drawn from, with everything a widget shows.

    Applies, in Hugging Face's order: divide by the temperature, top-k, top-p, then
    softmax over the surviving tokens. Top-p therefore measures mass *after*
    temperature and top-k. Temperature 0 means greedy decoding: the argmax gets
    probability 1 whatever `top_k` and `top_p` say.

    The returned dict has these keys:

    - `probs` (list[float]): final probabilities, 0 for filtered tokens, sum 1;
    - `kept` (list[bool]): which tokens survived the filters (a `-inf` logit never does);
    - `greedy` (bool): True when the temperature is 0;
    - `num_kept` (int): how many tokens survived;
    - `base_probs` (list[float]): softmax after temperature, before filtering;
    - `kept_mass` (float): share of `base_probs` held by the survivors;
    - `entropy_bits` (float): entropy of `probs` in bits (0 means no randomness);
    - `argmax` (int): index of the largest logit (the greedy choice).

    Args:
        logits: One score per token (`-inf` allowed).
        temperature: T >= 0; 0 is greedy.
        top_k: Keep the k highest logits (ties kept); 0 disables it.
        top_p: Keep the smallest top set with mass >= top_p (ties kept); 1 disables it.

    Returns:
        The keys `probs`, `kept`, `greedy`, `num_kept`, `base_probs`,
            `kept_mass`, `entropy_bits` and `argmax`, as described above.

    Raises:
        ValueError: On invalid logits or settings.
    """
    z = _as_logits(logits)
    t = _as_temperature(temperature)
    k = _as_int("top_k", top_k)
    p = _as_top_p(top_p)
    probs, kept, base = _next_token_probs(z, t, k, p)
    return {
        "probs": probs.tolist(),
        "kept": kept.tolist(),
        "greedy": t == 0.0,
        "num_kept": int(kept.sum()),
        "base_probs": base.tolist(),
        "kept_mass": float(min(1.0, base[kept].sum())),
        "entropy_bits": _entropy_bits(probs),
        "argmax": int(np.argmax(z)),
    }


def sample(
    logits: Sequence[float],
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int = 0,
) -> list[int]:
    """Draw next-token ids from `next_token_distribution`, reproducibly.

    Uses `numpy.random.default_rng(seed)`: the same arguments always give the same
    tokens. Each draw is independent (this samples one step many times; it does
    not generate a sequence). With temperature 0 every draw is the argmax.

    Args:
        logits: One score per token (`-inf` allowed).
        temperature: T >= 0; 0 is greedy.
        top_k: Keep the k highest logits; 0 disables it.
        top_p: Nucleus mass in [0, 1]; 1 disables it.
        num_samples: How many independent draws, 1 to 1,000,000.
        seed: Non-negative integer seed for the random generator.

    Returns:
        `num_samples` token indices into `logits`.

    Raises:
        ValueError: On invalid logits, settings, sample count or seed.

    Examples:
        >>> sample([0.0, 5.0, 0.0], temperature=0, num_samples=3)
        [1, 1, 1]
    """
    z = _as_logits(logits)
    t = _as_temperature(temperature)
    k = _as_int("top_k", top_k)
    p = _as_top_p(top_p)
    n = _as_int("num_samples", num_samples)
    if not 1 <= n <= MAX_SAMPLES:
        raise ValueError(f"num_samples must be between 1 and {MAX_SAMPLES:,}, got {n}.")
    seed = _as_int("seed", seed)
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}.")
    probs, _, _ = _next_token_probs(z, t, k, p)
    return _draw(probs, n, np.random.default_rng(seed)).tolist()
