"""Greedy decoding, beam search and sampling on a tiny language model with a known table.

The "model" is a bigram table: the probability of the next word depends only on the
previous one. It is small enough to print, and every number below can be checked by
hand. Sequences start after the start marker `<s>` and end with the word `</s>` or
when they reach `max_len` words, whichever comes first.

    previous  | next-word probabilities
    ----------+--------------------------------------------------------
    <s>       | the 0.5   a 0.4    cat 0.05  dog 0.05
    the       | cat 0.4   dog 0.3  sat 0.1   ran 0.1   </s> 0.1
    a         | dog 0.9   cat 0.1
    cat       | sat 0.6   ran 0.2  </s> 0.2
    dog       | </s> 0.6  ran 0.4
    sat       | </s> 0.7  away 0.3
    ran       | away 0.9  </s> 0.1
    away      | </s> 1.0

The joint probability of a sequence is the product of its step probabilities (its
log-probability the sum of their logs). Greedy decoding takes "the" first (0.5 beats
0.4), but every continuation of "the" is mediocre: it ends with "the cat sat </s>",
probability 0.5 x 0.4 x 0.6 x 0.7 = 0.084. "a dog </s>" has 0.4 x 0.9 x 0.6 = 0.216,
and beam search with two beams finds it. Ranked by probability per word instead
(length penalty 1, below), the best is the longer "a dog ran away </s>",
0.4 x 0.9 x 0.4 x 0.9 x 1.0 = 0.1296, about 0.66 per word against 0.60.

Beam search keeps the `beam_width` best partial sequences. At every step each
unfinished beam is extended by every word of non-zero probability, finished beams
compete unchanged, and the best `beam_width` candidates survive. Candidates are
ranked by their *score*, `logprob / length ** length_penalty` (Hugging Face's
convention): `length_penalty = 0` ranks by joint probability, which favours short
sequences since every extra word multiplies by a number <= 1; `length_penalty = 1`
ranks by the mean log-probability per word. Ties are broken by word order in the
table, so every result is deterministic.
"""

import math
from collections.abc import Sequence

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _as_float

START, END = "<s>", "</s>"
TOKENS = ["the", "a", "cat", "dog", "sat", "ran", "away", END]  # the vocabulary, in table order
_NEXT = {  # previous word -> {next word: probability}; every row sums to 1
    START: {"the": 0.5, "a": 0.4, "cat": 0.05, "dog": 0.05},
    "the": {"cat": 0.4, "dog": 0.3, "sat": 0.1, "ran": 0.1, END: 0.1},
    "a": {"dog": 0.9, "cat": 0.1},
    "cat": {"sat": 0.6, "ran": 0.2, END: 0.2},
    "dog": {END: 0.6, "ran": 0.4},
    "sat": {END: 0.7, "away": 0.3},
    "ran": {"away": 0.9, END: 0.1},
    "away": {END: 1.0},
}
CONTEXTS = [START] + TOKENS[:-1]  # the rows of the table: `</s>` is never a context
V = len(TOKENS)
_END_ID = TOKENS.index(END)
_TABLE = np.array([[_NEXT[c].get(w, 0.0) for w in TOKENS] for c in CONTEXTS])  # (V, V) rows: contexts
_ROW = {c: i for i, c in enumerate(CONTEXTS)}

MAX_LEN = 10
MAX_BEAM_WIDTH = 64
MAX_SAMPLES = 1000
MAX_TEMPERATURE = 10.0


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_words(tokens):
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise ValueError('tokens must be a list of words, e.g. ["a", "dog", "</s>"].')
    ids = []
    for i, word in enumerate(tokens):
        if word not in TOKENS:
            raise ValueError(f"tokens[{i}] is {word!r}, which is not in the vocabulary: {', '.join(TOKENS)}.")
        if word == END and i != len(tokens) - 1:
            raise ValueError("</s> ends a sequence, so it can only be the last word.")
        ids.append(TOKENS.index(word))
    return ids


# ----------------------------------------------------------------------------
# the math: sequences are tuples of word ids


def _next_probs(ids):
    """Next-word probabilities (V,) after the sequence `ids` (only its last word matters)."""
    previous = CONTEXTS[0] if not ids else TOKENS[ids[-1]]
    return _TABLE[_ROW[previous]]


def _step_probs(ids):
    """The probability of each word given the one before it."""
    probs, previous = [], ()
    for i in ids:
        probs.append(float(_next_probs(previous)[i]))
        previous = (i,)
    return probs


def _log(p):
    return math.log(p) if p > 0 else -math.inf


def _score(logprob, length, length_penalty):
    return logprob / (length**length_penalty) if length else 0.0


def _finished(ids, max_len):
    return len(ids) >= max_len or (len(ids) > 0 and ids[-1] == _END_ID)


def _rank_key(candidate):
    """Best first: higher score, then earlier words in table order (deterministic ties)."""
    return (-candidate["score"], candidate["ids"])


def _candidate(ids, logprob, length_penalty, max_len):
    return {"ids": tuple(ids), "logprob": logprob, "score": _score(logprob, len(ids), length_penalty), "finished": _finished(ids, max_len)}


def _sequence(ids, length_penalty=0.0):
    """Plain-data description of a sequence."""
    steps = _step_probs(ids)
    logprob = math.fsum(_log(p) for p in steps)
    return {
        "tokens": [TOKENS[i] for i in ids],
        "text": " ".join(TOKENS[i] for i in ids),
        "step_probs": steps,
        "prob": math.prod(steps),
        "logprob": logprob,
        "score": _score(logprob, len(ids), length_penalty),
        "length": len(ids),
        "ended": bool(ids) and ids[-1] == _END_ID,
    }


def _beam_search(beam_width, max_len, length_penalty):
    """Final beams (best first) and, per step, every candidate with whether it was kept."""
    beams = [_candidate((), 0.0, length_penalty, max_len)]
    steps = []
    for _ in range(max_len):
        candidates = []
        for beam in beams:
            if beam["finished"]:
                candidates.append(beam | {"parent": beam["ids"], "new": False})
                continue
            probs = _next_probs(beam["ids"])  # (V,)
            for w in np.flatnonzero(probs):
                ids = beam["ids"] + (int(w),)
                logprob = beam["logprob"] + math.log(probs[w])
                candidates.append(_candidate(ids, logprob, length_penalty, max_len) | {"parent": beam["ids"], "new": True})
        candidates.sort(key=_rank_key)
        beams = candidates[:beam_width]
        steps.append([(c, rank < beam_width) for rank, c in enumerate(candidates)])
        if all(b["finished"] for b in beams):
            break
    return beams, steps


def _all_sequences(max_len):
    """Every sequence with non-zero probability: ends with </s> or has max_len words."""
    done, stack = [], [((), 0.0)]
    while stack:
        ids, logprob = stack.pop()
        if _finished(ids, max_len):
            done.append((ids, logprob))
            continue
        probs = _next_probs(ids)
        for w in np.flatnonzero(probs):
            stack.append((ids + (int(w),), logprob + math.log(probs[w])))
    return done


def _tempered(probs, temperature):
    """probs ** (1/T), renormalised; T = 0 puts everything on the first argmax."""
    if temperature == 0.0:
        out = np.zeros_like(probs)
        out[np.argmax(probs)] = 1.0
        return out
    logs = np.where(probs > 0, np.log(np.where(probs > 0, probs, 1.0)), -np.inf) / temperature
    e = np.exp(logs - logs.max())
    return e / e.sum()


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def model() -> dict:
    """The bigram table, for display.

    Returns:
        `tokens` (the vocabulary, `</s>` last), `start` (`"<s>"`), `end` (`"</s>"`),
        `contexts` (the table's rows: `<s>` and every word but `</s>`) and `table`
        (one list of next-word probabilities per context, in `tokens` order).
    """
    return {"tokens": list(TOKENS), "start": START, "end": END, "contexts": list(CONTEXTS), "table": _TABLE.tolist()}


def sequence_probability(tokens: Sequence[str], length_penalty: float = 0.0) -> dict:
    """Joint probability of a word sequence under the bigram table.

    Args:
        tokens: Words from the vocabulary, e.g. `["a", "dog", "</s>"]`; `</s>` may only
            come last. The start marker is implicit.
        length_penalty: Exponent alpha of the score `logprob / length ** alpha`.

    Returns:
        `tokens`, `text`, `step_probs` (each word's probability given the previous
        one), `prob` (their product), `logprob` (the sum of their logs, `-inf` for
        probability 0), `score`, `length` and `ended` (whether it ends with `</s>`).

    Raises:
        ValueError: On an unknown word or a `</s>` before the end.

    Examples:
        >>> round(sequence_probability(["a", "dog", "ran", "away", "</s>"])["prob"], 6)
        0.1296
    """
    ids = _as_words(tokens)
    return _sequence(ids, _as_float("length_penalty", length_penalty, 0.0, 3.0))


def greedy(max_len: int = 6) -> dict:
    """Greedy decoding: always take the most probable next word.

    Args:
        max_len: Stop after this many words (1 to 10) if `</s>` has not come.

    Returns:
        `best` (the sequence, as in `sequence_probability`) and `steps`: per step the
        `context` word, the next-word `probs` (in `tokens` order) and the `choice`.

    Raises:
        ValueError: If `max_len` is out of range.
    """
    max_len = _as_int("max_len", max_len, 1, MAX_LEN)
    ids, steps = (), []
    while not _finished(ids, max_len):
        probs = _next_probs(ids)
        choice = int(np.argmax(probs))  # the first of tied maxima, like torch.argmax
        steps.append({"context": TOKENS[ids[-1]] if ids else START, "probs": probs.tolist(), "choice": TOKENS[choice]})
        ids += (choice,)
    return {"best": _sequence(ids), "steps": steps}


def beam_search(beam_width: int = 2, max_len: int = 6, length_penalty: float = 0.0) -> dict:
    """Beam search with `beam_width` beams, ranked by `logprob / length ** length_penalty`.

    Finished beams (ending with `</s>` or `max_len` words long) stay in the beam and
    compete unchanged with the extended ones. The search stops when every beam has
    finished. Width 1 is greedy decoding; a width as large as the number of possible
    sequences is an exhaustive search.

    Args:
        beam_width: Number of beams kept, 1 to 64.
        max_len: Maximum number of words per sequence, 1 to 10.
        length_penalty: Exponent alpha in [0, 3]; 0 ranks by joint probability,
            1 by mean log-probability per word.

    Returns:
        `best` (the top final beam), `beams` (all final beams, best first) and
        `steps`: per step a list of candidates, best first, each a sequence dict with
        `kept` (survived the cut), `new` (extended this step, not carried over) and
        `parent` (the words of the beam it extends).

    Raises:
        ValueError: If a setting is out of range.
    """
    beam_width = _as_int("beam_width", beam_width, 1, MAX_BEAM_WIDTH)
    max_len = _as_int("max_len", max_len, 1, MAX_LEN)
    alpha = _as_float("length_penalty", length_penalty, 0.0, 3.0)
    beams, steps = _beam_search(beam_width, max_len, alpha)
    return {
        "best": _sequence(beams[0]["ids"], alpha),
        "beams": [_sequence(b["ids"], alpha) for b in beams],
        "steps": [
            [_sequence(c["ids"], alpha) | {"kept": kept, "new": c["new"], "parent": [TOKENS[i] for i in c["parent"]]} for c, kept in step] for step in steps
        ],
    }


def all_sequences(max_len: int = 6, length_penalty: float = 0.0) -> list[dict]:
    """Every possible sequence, best first: the exhaustive search beam search approximates.

    Args:
        max_len: Maximum number of words per sequence, 1 to 10.
        length_penalty: Exponent alpha of the ranking score.

    Returns:
        Sequence dicts (as in `sequence_probability`) for every sequence of non-zero
        probability that ends with `</s>` or has `max_len` words, sorted by score.
        Their probabilities sum to 1.

    Raises:
        ValueError: If a setting is out of range.
    """
    max_len = _as_int("max_len", max_len, 1, MAX_LEN)
    alpha = _as_float("length_penalty", length_penalty, 0.0, 3.0)
    found = [_candidate(ids, lp, alpha, max_len) for ids, lp in _all_sequences(max_len)]
    found.sort(key=_rank_key)
    return [_sequence(c["ids"], alpha) for c in found]


def sample(num_samples: int = 10, max_len: int = 6, temperature: float = 1.0, seed: int = 0) -> dict:
    """Ancestral sampling: draw each next word from the (tempered) table row.

    Temperature T reshapes every row to `p ** (1/T)`, renormalised; T = 0 is greedy.
    The reported probabilities are always the model's own (T = 1) ones.

    Args:
        num_samples: How many sequences to draw, 1 to 1000.
        max_len: Maximum number of words per sequence, 1 to 10.
        temperature: T in [0, 10].
        seed: Non-negative integer seed of `numpy.random.default_rng`.

    Returns:
        `samples` (sequence dicts, in the order drawn) and `distinct` (each different
        sequence once, with its `count`, most frequent first, ties by probability).

    Raises:
        ValueError: If a setting is out of range.
    """
    n = _as_int("num_samples", num_samples, 1, MAX_SAMPLES)
    max_len = _as_int("max_len", max_len, 1, MAX_LEN)
    t = _as_float("temperature", temperature, 0.0, MAX_TEMPERATURE)
    seed = _as_int("seed", seed, 0, 2**63 - 1)
    rng = np.random.default_rng(seed)
    drawn = []
    for _ in range(n):
        ids = ()
        while not _finished(ids, max_len):
            probs = _tempered(_next_probs(ids), t)  # (V,)
            cdf = np.cumsum(probs)
            w = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
            ids += (min(w, int(np.flatnonzero(probs)[-1])),)  # guard the top end against rounding
        drawn.append(ids)
    counts = {}
    for ids in drawn:
        counts[ids] = counts.get(ids, 0) + 1
    distinct = sorted(counts, key=lambda ids: (-counts[ids], -_sequence(ids)["logprob"], ids))
    return {"samples": [_sequence(ids) for ids in drawn], "distinct": [_sequence(ids) | {"count": counts[ids]} for ids in distinct]}


def decode(
    method: str = "beam", beam_width: int = 2, max_len: int = 6, length_penalty: float = 0.0, temperature: float = 1.0, num_samples: int = 10, seed: int = 0
) -> dict:
    """One decoding run plus the two yardsticks a widget compares it with.

    Args:
        method: `"greedy"`, `"beam"` or `"sample"`.
        beam_width: Beams for `"beam"` (1 to 64).
        max_len: Maximum number of words per sequence (1 to 10).
        length_penalty: Ranking exponent for `"beam"` and for `optimum`.
        temperature: Sampling temperature for `"sample"` (0 to 10).
        num_samples: Sequences drawn for `"sample"` (1 to 1000).
        seed: Random seed for `"sample"`.

    Returns:
        `method`; `result` (what `greedy`, `beam_search` or `sample` returns);
        `greedy` (greedy's best sequence); `optimum` (the best-scoring sequence of
        all, found by exhaustive search); `num_sequences` (how many sequences exist).

    Raises:
        ValueError: On an unknown method or a setting out of range.
    """
    if method not in ("greedy", "beam", "sample"):
        raise ValueError(f'method must be "greedy", "beam" or "sample", got {method!r}.')
    if method == "greedy":
        result = greedy(max_len)
    elif method == "beam":
        result = beam_search(beam_width, max_len, length_penalty)
    else:
        result = sample(num_samples, max_len, temperature, seed)
    everything = all_sequences(max_len, length_penalty)
    greedy_ids = [TOKENS.index(w) for w in greedy(max_len)["best"]["tokens"]]
    return {
        "method": method,
        "result": result,
        "greedy": _sequence(greedy_ids, float(length_penalty)),
        "optimum": everything[0],
        "num_sequences": len(everything),
    }
