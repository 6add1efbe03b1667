"""Speculative decoding: the reference the book's pages and tests check the idea against.

A small *draft* model proposes ``gamma`` tokens one by one; the large *target* model scores
all of them in one pass; a rejection rule keeps a prefix of them and adds one token of its own,
so that every round yields between 1 and ``gamma + 1`` tokens for one pass of the target
(Leviathan, Kalman and Matias, 2023; Chen et al., 2023):

* proposal ``x_i`` drawn from the draft's ``q_i`` is accepted with probability
  ``min(1, p_i(x_i) / q_i(x_i))``, where ``p_i`` is the target's distribution at that position;
* at the first rejection, the token is drawn instead from the residual ``max(0, p_i - q_i)``,
  normalised, and the round ends;
* if all are accepted, one more token is drawn from the target's next distribution.

The tokens are then distributed exactly as if drawn from the target alone. At temperature 0
the rule becomes: keep the proposals that equal the target's argmax, then add the target's
argmax, so the output is the target's greedy output token for token.

The models are functions from token ids to the logits of every position (no cache: this is a
reference for correctness, not for speed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

LogitsFn = Callable[[Sequence[int]], np.ndarray]  # ids -> (len(ids), V) logits


def distribution(logits: np.ndarray, temperature: float) -> np.ndarray:
    """float64 softmax(logits / temperature); temperature 0: all mass on the first argmax."""
    z = np.asarray(logits, np.float64)
    if temperature == 0:
        out = np.zeros_like(z)
        out[int(np.argmax(z))] = 1.0
        return out
    z = (z - z.max()) / temperature
    e = np.exp(z)
    return e / e.sum()


def draw(p: np.ndarray, rng: np.random.Generator | None) -> int:
    """A token from `p`: its argmax without a generator (temperature 0), else a draw."""
    return int(np.argmax(p)) if rng is None else int(rng.choice(p.size, p=p))


@dataclass
class SpeculativeResult:
    """Tokens written and what each round did.

    Attributes:
        tokens: The new tokens.
        proposed: Draft tokens proposed in each round.
        accepted: Of those, how many the target kept in each round.
    """

    tokens: list[int]
    proposed: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)

    @property
    def target_passes(self) -> int:
        """Passes of the target model (one per round)."""
        return len(self.proposed)


def speculative_decode(
    target: LogitsFn,
    draft: LogitsFn,
    prompt: Sequence[int],
    new_tokens: int,
    gamma: int,
    *,
    temperature: float = 0.0,
    rng: np.random.Generator | None = None,
) -> SpeculativeResult:
    """Write `new_tokens` tokens after `prompt`, the draft proposing up to `gamma` a round.

    Args:
        target: The model whose distribution the output follows.
        draft: The model that proposes.
        prompt: Token ids.
        new_tokens: How many tokens to write (1 or more).
        gamma: Proposals per round (1 or more); the last round proposes fewer if fewer remain.
        temperature: 0 for greedy decoding, else the sampling temperature of both models.
        rng: The generator for sampling (required when temperature > 0).

    Returns:
        The tokens and, per round, how many were proposed and accepted.
    """
    if new_tokens < 1 or gamma < 1:
        raise ValueError(f"new_tokens and gamma must be at least 1 (got {new_tokens} and {gamma})")
    if temperature > 0 and rng is None:
        raise ValueError("sampling (temperature > 0) needs a random generator")
    sampler = rng if temperature > 0 else None
    out = list(prompt)
    result = SpeculativeResult([])
    while len(result.tokens) < new_tokens:
        k = min(gamma, new_tokens - len(result.tokens) - 1)  # the round adds up to k + 1 tokens
        proposals, q = [], []
        for _ in range(k):  # the draft, one token at a time
            dist = distribution(draft(out + proposals)[-1], temperature)
            proposals.append(draw(dist, sampler))
            q.append(dist)
        scores = target(out + proposals)  # (len(out) + k, V): one pass checks every proposal
        p = [distribution(scores[len(out) - 1 + i], temperature) for i in range(k + 1)]
        kept = 0
        for i, token in enumerate(proposals):
            ratio = p[i][token] / q[i][token]
            if not (ratio >= 1 or (sampler is not None and sampler.random() < ratio)):
                break
            kept += 1
        if kept < k:  # the first refused proposal is replaced from the residual distribution
            residual = np.maximum(p[kept] - q[kept], 0.0)
            last = draw(residual / residual.sum(), sampler)
        else:
            last = draw(p[k], sampler)
        written = [*proposals[:kept], last]
        out += written
        result.tokens += written
        result.proposed.append(k)
        result.accepted.append(kept)
    return result


def greedy_decode(model: LogitsFn, prompt: Sequence[int], new_tokens: int) -> list[int]:
    """The model's own greedy output, one pass per token (what speculative greedy must equal)."""
    out = list(prompt)
    for _ in range(new_tokens):
        out.append(int(np.argmax(model(out)[-1])))
    return out[len(prompt) :]
