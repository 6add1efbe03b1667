"""Beam search over an exported graph with its KV cache: the reference for the browser's.

Beam search keeps the ``num_beams`` best partial continuations (by summed log-probability)
instead of the single best token. Each step runs all beams as one batch, scores every
(beam, token) extension, keeps the best ones and reorders the key-value cache so that row
``i`` holds the past of the beam now in row ``i``.

The rules are those of Hugging Face transformers' ``generate(num_beams=..., do_sample=False)``
(``GenerationMixin._beam_search`` in transformers 5), so the two give the same tokens:

* each step takes the best ``2 * num_beams`` extensions over all beams (candidates), so that
  ``num_beams`` remain to continue even when some of them end;
* a candidate ends when its token is end-of-text or it reaches the length limit; an ending
  candidate among the best ``num_beams`` joins the finished hypotheses with the score
  ``sum of log-probabilities / new_length ** length_penalty``, and the ``num_beams`` best
  finished hypotheses are kept;
* the running beams are the best ``num_beams`` candidates that did not end;
* the search stops when every candidate ended, or (``early_stopping=True``) when
  ``num_beams`` hypotheses have finished, or when the best running beam, divided by the
  length penalty of its current length (of the longest possible length with
  ``early_stopping="never"`` and a positive penalty), cannot beat the worst finished one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .runtime import empty_past
from .validate import log_softmax

DROPPED = np.float32(-1.0e9)  # the score of a candidate that may not be kept


@dataclass
class BeamStep:
    """One step of the search, for a view of the beam tree.

    Attributes:
        parents: (K,) the running beam each candidate extends (its row before this step).
        tokens: (K,) each candidate's new token.
        log_probs: (K,) each candidate's summed log-probability, best first.
        ended: (K,) the candidate ended (end-of-text or the length limit).
        kept: (num_beams,) the candidates that run on, in their new row order.
    """

    parents: np.ndarray
    tokens: np.ndarray
    log_probs: np.ndarray
    ended: np.ndarray
    kept: np.ndarray


@dataclass
class BeamResult:
    """The finished hypotheses, best first, and the steps that led to them.

    Attributes:
        sequences: Each finished hypothesis's new tokens (ending with end-of-text if it ended so).
        scores: Their length-penalised scores.
        steps: Every step's candidates (``BeamStep``).
    """

    sequences: list[list[int]]
    scores: list[float]
    steps: list[BeamStep] = field(default_factory=list)


def best(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values``, largest first (earlier index first on a tie)."""
    return np.argsort(-values, kind="stable")[:k]


def beam_search(
    runner,
    prompt: list[int],
    num_beams: int,
    new_tokens: int,
    *,
    eos: int | None = None,
    length_penalty: float = 1.0,
    early_stopping: bool | str = False,
) -> BeamResult:
    """Beam search after ``prompt``, every beam in one batch, the cache reordered by beam.

    Args:
        runner: ``runtime.OrtGPT2`` or ``runtime.TorchGPT2``.
        prompt: The prompt's token ids.
        num_beams: Beams kept per step (1 or more).
        new_tokens: The length limit, in new tokens.
        eos: End-of-text id (ends a hypothesis), or None.
        length_penalty: Exponent of the new length that divides a finished score (0: plain sum;
            above 0 favours longer hypotheses).
        early_stopping: True, False or ``"never"``, as transformers'.

    Returns:
        The ``num_beams`` best finished hypotheses and the steps.

    Raises:
        ValueError: If ``num_beams`` < 1, ``new_tokens`` < 1, or the prompt and new tokens
            do not fit the model's context.
    """
    if num_beams < 1 or new_tokens < 1:
        raise ValueError(f"num_beams and new_tokens must be at least 1 (got {num_beams} and {new_tokens})")
    if len(prompt) + new_tokens - 1 > runner.config.n_positions:
        raise ValueError(f"{len(prompt)} prompt tokens and {new_tokens} new ones do not fit {runner.config.n_positions} positions")
    candidates = max(2, 1 + (eos is not None)) * num_beams  # K
    running = np.tile(np.asarray(prompt, np.int64), (num_beams, 1))  # (nb, L): every beam starts as the prompt
    running_scores = np.full(num_beams, DROPPED, np.float32)
    running_scores[0] = 0.0  # one live beam at the start, so the first step's candidates differ
    finished = [[] for _ in range(num_beams)]  # token lists, best first
    finished_scores = np.full(num_beams, DROPPED, np.float32)
    finished_flags = np.zeros(num_beams, bool)
    may_improve = True
    steps: list[BeamStep] = []
    step_ids, past = running, empty_past(runner.config, num_beams)
    positions = np.tile(np.arange(len(prompt), dtype=np.int64), (num_beams, 1))
    for step in range(new_tokens):
        logits, present = runner.run(step_ids, np.ones((num_beams, len(prompt) + step), np.int64), positions, past)
        log_probs = log_softmax(logits[:, -1]).astype(np.float32) + running_scores[:, None]  # (nb, V), summed in float32 as transformers does
        vocab = log_probs.shape[1]
        top = best(log_probs.reshape(-1), candidates)  # (K,) over every (beam, token)
        parents, tokens, scores = top // vocab, top % vocab, log_probs.reshape(-1)[top]
        ended = (tokens == eos) | (step + 1 == new_tokens)  # (K,)
        # The running beams: the best candidates that did not end.
        kept = best(scores + ended * DROPPED, num_beams)
        # The finished hypotheses: the ones kept so far and this step's ending candidates among the best num_beams.
        just_finished = ended & (np.arange(candidates) < num_beams)
        penalised = scores / np.float32((step + 1) ** length_penalty)  # (K,)
        if (finished_flags.all() and early_stopping is True) or not may_improve:
            penalised = penalised + DROPPED
        penalised = penalised + (~just_finished) * DROPPED
        merged = np.concatenate([finished_scores, penalised])  # (nb + K,)
        order = best(merged, num_beams)
        hypotheses = finished + [[*running[p, len(prompt) :].tolist(), int(t)] for p, t in zip(parents, tokens, strict=True)]
        finished = [hypotheses[i] for i in order]
        finished_scores, finished_flags = merged[order], np.concatenate([finished_flags, just_finished])[order]
        steps.append(BeamStep(parents, tokens, scores, ended, kept))
        # Reorder: row i now continues candidate kept[i], with its parent's cache.
        rows = parents[kept]
        running = np.concatenate([running[rows], tokens[kept, None]], axis=1)  # (nb, L + step + 1)
        running_scores = (scores + ended * DROPPED)[kept]
        past = [p[rows] for p in present]
        step_ids, positions = tokens[kept, None], np.full((num_beams, 1), len(prompt) + step, np.int64)
        # Could a running beam still beat the worst finished hypothesis?
        longest = new_tokens if early_stopping == "never" and length_penalty > 0 else step + 1
        worst = finished_scores.min() if finished_flags.all() else DROPPED
        may_improve = may_improve and bool(running_scores[0] / np.float32(longest**length_penalty) > worst)
        if not may_improve or (finished_flags.all() and early_stopping is True) or ended.all():
            break
    return BeamResult(finished, [float(s) for s in finished_scores], steps)
