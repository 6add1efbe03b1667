"""Speculative decoding: a small draft model proposes, the large model checks, the output is unchanged.

A cheap draft model q proposes γ tokens one after another; the target model p scores all of them
in one forward pass. Each proposed token x is accepted with probability ``min(1, p(x) / q(x))``;
at the first rejection, a replacement is drawn from the leftover distribution
``max(0, p − q)`` renormalised, and the rest of the proposal is discarded (Leviathan et al.,
2023; Chen et al., 2023). The token that comes out is distributed exactly as p
(`output_distribution` computes it), so the text is as if the target had sampled alone, while
each target pass yields between 1 and γ + 1 tokens.

With the acceptance rate ``α = Σ_x min(p(x), q(x))`` the same at every step, the expected
number of tokens per target pass is ``(1 − α^(γ+1)) / (1 − α)`` (`expected_tokens`).
"""

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between


def _distribution(name, p):
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size < 1 or not np.all(np.isfinite(p)) or np.any(p < 0) or not np.isclose(p.sum(), 1.0, atol=1e-9):
        raise ValueError(f"{name} must be a list of non-negative probabilities that sum to 1")
    return p


def output_distribution(p, q) -> dict:
    """The distribution of the token speculative sampling emits at one position.

    Args:
        p: The target model's next-token probabilities.
        q: The draft model's, over the same tokens.

    Returns:
        ``acceptance`` (α = Σ min(p, q)), ``residual`` (the leftover distribution drawn from after
        a rejection; uniform zeros if α = 1) and ``output`` (q·min(1, p/q) + (1 − α)·residual,
        which equals p).

    Examples:
        >>> r = output_distribution([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
        >>> round(r["acceptance"], 6), [round(x, 6) for x in r["output"]]
        (0.7, [0.5, 0.3, 0.2])
    """
    p, q = _distribution("p", p), _distribution("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must cover the same tokens, got {p.size} and {q.size}")
    accepted = np.minimum(p, q)  # q(x) · min(1, p(x)/q(x)), the chance x is proposed and kept
    alpha = float(accepted.sum())
    leftover = np.maximum(p - q, 0.0)
    residual = leftover / leftover.sum() if leftover.sum() > 0 else np.zeros_like(p)
    return {"acceptance": alpha, "residual": residual.tolist(), "output": (accepted + (1.0 - alpha) * residual).tolist()}


def expected_tokens(alpha: float = 0.8, gamma: int = 4) -> float:
    """Expected tokens per target pass with γ draft tokens and acceptance rate α: (1 − α^(γ+1)) / (1 − α).

    Examples:
        >>> round(expected_tokens(0.8, 4), 4)
        3.3616
    """
    alpha = _between("alpha", alpha, 0.0, 1.0)
    gamma = _as_int("gamma", gamma, 0, 64)
    return float(gamma + 1) if alpha == 1.0 else (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def simulate(p, q, gamma: int = 4, passes: int = 2000, seed: int = 0) -> dict:
    """Run speculative sampling with the same p and q at every position.

    Returns:
        ``tokens_per_pass`` (mean tokens emitted per target pass), ``expected`` (the formula's
        value for this α), ``frequencies`` (how often each token was emitted) and ``acceptance``.
    """
    p, q = _distribution("p", p), _distribution("q", q)
    gamma = _as_int("gamma", gamma, 0, 64)
    passes = _as_int("passes", passes, 1, 1_000_000)
    rng = np.random.default_rng(_as_int("seed", seed, 0, 2**31 - 1))
    out = output_distribution(p, q)
    residual = np.array(out["residual"])
    counts = np.zeros(p.size)
    emitted = 0
    for _ in range(passes):
        for _ in range(gamma):
            x = rng.choice(p.size, p=q)  # the draft proposes
            if rng.random() < min(1.0, p[x] / q[x]):  # the target accepts
                counts[x] += 1
                emitted += 1
                continue
            counts[rng.choice(p.size, p=residual)] += 1  # rejected: one token from the leftover, then stop
            emitted += 1
            break
        else:
            counts[rng.choice(p.size, p=p)] += 1  # all γ accepted: the target's pass gives one more
            emitted += 1
    return {
        "tokens_per_pass": emitted / passes,
        "expected": expected_tokens(out["acceptance"], gamma),
        "frequencies": (counts / counts.sum()).tolist(),
        "acceptance": out["acceptance"],
    }
