"""model_export.speculative: speculative decoding keeps the target's output. (Not test_speculative.py:
that basename is tests/demos' test of the lesson's demos.speculative, and pytest imports test
modules by basename.)

* Sampling: on two bigram models over 5 tokens (a draft that disagrees with the target), the
  3-token continuations of 20,000 speculative runs follow the target's exact distribution
  (Pearson's chi-square, p > 0.001), while continuations drawn from the draft alone are
  rejected by the same test (p < 1e-6): the test can tell the difference.
* Greedy: on the book's trained model, with a draft made of its first two blocks (the early
  exit of a logit lens), the output equals the target's own greedy output token for token,
  and the draft's proposals are often kept.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch

from model_export import corpus, train
from model_export.speculative import distribution, greedy_decode, speculative_decode
from model_export.weights import BOOK_MODEL_DIR, BOOK_SOURCE, load_hf

VOCAB = 5
LENGTH = 3
RUNS = 20_000
DRAFT_BLOCKS = 2  # the book's model has 4


def bigram(seed: int):
    """A model whose logits at each position depend on that position's token only."""
    table = np.random.default_rng(seed).standard_normal((VOCAB, VOCAB)) * 1.5
    return (lambda ids: table[np.asarray(ids)]), table


def chi_square_p(observed: np.ndarray, expected: np.ndarray) -> float:
    """Pearson's test of counts against expected counts (cells expected below 5 pooled), its
    p-value by the Wilson–Hilferty approximation of the chi-square distribution."""
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    statistic = float(((obs - exp) ** 2 / exp).sum())
    k = obs.size - 1  # degrees of freedom
    z = ((statistic / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def exact_sequence_probabilities(table: np.ndarray, last: int) -> np.ndarray:
    """Probability of every LENGTH-token continuation under a bigram model, in product order."""
    out = []
    for seq in itertools.product(range(VOCAB), repeat=LENGTH):
        p, prev = 1.0, last
        for token in seq:
            p *= distribution(table[prev], 1.0)[token]
            prev = token
        out.append(p)
    return np.array(out)


def counts(sequences) -> np.ndarray:
    index = {seq: i for i, seq in enumerate(itertools.product(range(VOCAB), repeat=LENGTH))}
    out = np.zeros(VOCAB**LENGTH)
    for seq in sequences:
        out[index[tuple(seq)]] += 1
    return out


def test_speculative_sampling_follows_the_targets_distribution():
    target, table = bigram(1)
    draft, draft_table = bigram(2)
    rng = np.random.default_rng(0)
    runs = [speculative_decode(target, draft, [0], LENGTH, gamma=2, temperature=1.0, rng=rng) for _ in range(RUNS)]
    expected = RUNS * exact_sequence_probabilities(table, 0)
    assert chi_square_p(counts(r.tokens for r in runs), expected) > 1e-3
    accepted = sum(sum(r.accepted) for r in runs) / sum(sum(r.proposed) for r in runs)
    assert 0.2 < accepted < 0.95, accepted  # the draft disagrees often enough for rejections to matter

    # The same test rejects continuations drawn from the draft alone.
    from_draft = [[int(t) for t in _draft_sample(draft_table, rng)] for _ in range(RUNS)]
    assert chi_square_p(counts(from_draft), expected) < 1e-6


def _draft_sample(table: np.ndarray, rng: np.random.Generator):
    prev = 0
    for _ in range(LENGTH):
        prev = int(rng.choice(VOCAB, p=distribution(table[prev], 1.0)))
        yield prev


def test_speculative_greedy_is_the_targets_greedy_on_the_books_model():
    hf = load_hf(BOOK_SOURCE).model.float().eval()
    early_exit = copy.deepcopy(hf)
    early_exit.transformer.h = early_exit.transformer.h[:DRAFT_BLOCKS]  # then the final norm and unembedding
    early_exit.config.n_layer = DRAFT_BLOCKS

    def logits_of(model):
        @torch.no_grad()
        def run(ids):
            return model(torch.tensor([list(ids)])).logits[0].double().numpy()

        return run

    target, draft = logits_of(hf), logits_of(early_exit)
    held_out = train.tokenize(corpus.load_pages(BOOK_MODEL_DIR / train.CORPUS_FILE), train.gpt2_tokenizer()).held_out
    proposed = accepted = 0
    for start in (10, 400, 900):
        prompt = held_out[start : start + 12].tolist()
        result = speculative_decode(target, draft, prompt, 16, gamma=3)
        assert result.tokens == greedy_decode(target, prompt, 16)
        assert result.target_passes < 16  # fewer target passes than tokens
        proposed += sum(result.proposed)
        accepted += sum(result.accepted)
    print(f"accepted {accepted} of {proposed} proposals")
    assert 0.25 < accepted / proposed < 0.45, (accepted, proposed)  # "about a third" (decoding/speculative.md)


@pytest.mark.parametrize("bad", [dict(new_tokens=0, gamma=2), dict(new_tokens=3, gamma=0)])
def test_bad_arguments_are_refused(bad):
    target, _ = bigram(1)
    with pytest.raises(ValueError, match="at least 1"):
        speculative_decode(target, target, [0], **bad)
