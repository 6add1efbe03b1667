"""Tests for demos.decoding against an independent brute force in exact arithmetic.

The reference extends every prefix by every word of the vocabulary, keeps the sequences
the decoding rules allow (`</s>` only last, stop at `</s>` or at max_len words) and
computes joint probabilities with `fractions.Fraction` from the table's decimal
values, so no floating-point rounding is involved.
"""

import functools
import math
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import assert_plain
from demos import decoding
from demos.decoding import all_sequences, beam_search, decode, greedy, model, sample, sequence_probability

END = decoding.END
TOKENS = decoding.TOKENS
TABLE = {c: {w: Fraction(str(p)) for w, p in row.items()} for c, row in decoding._NEXT.items()}  # exact
ALPHAS = [0.0, 0.5, 1.0, 2.0]


def exact_prob(words):
    prob, previous = Fraction(1), decoding.START
    for w in words:
        prob *= TABLE[previous].get(w, Fraction(0))
        previous = w
    return prob


@functools.cache
def brute_force(max_len):
    """{words: exact probability} for every sequence of non-zero probability.

    Every word of the vocabulary is tried after every prefix; a prefix of
    probability 0 is not extended (no extension of it can have non-zero probability).
    """
    found, frontier = {}, [()]
    while frontier:
        prefix = frontier.pop()
        for w in TOKENS:
            words = prefix + (w,)
            p = exact_prob(words)
            if p == 0:
                continue
            if w == END or len(words) == max_len:
                found[words] = p
            else:
                frontier.append(words)
    return found


def score(words, alpha):
    return math.fsum(math.log(TABLE[prev][w]) for prev, w in zip((decoding.START,) + words, words)) / len(words) ** alpha


@functools.cache
def best(max_len, alpha):
    """The brute-force optimum; ties go to the earlier words in table order, as in the module."""
    found = brute_force(max_len)
    return min(found, key=lambda w: (-round(score(w, alpha), 12), [TOKENS.index(x) for x in w]))


# ---------------------------------------------------------------------------
# the table


def test_docstring_table_is_the_table():
    """The table printed in the module docstring (the documented model) is the one used."""
    rows = re.findall(r"^    (\S+)\s+\| (.+)$", decoding.__doc__, flags=re.M)
    documented = {c: {w: Fraction(p) for w, p in re.findall(r"(\S+) (\d\.\d+)", rest)} for c, rest in rows[1:]}
    assert documented == TABLE


def test_model_rows_are_distributions():
    m = model()
    assert m["tokens"] == TOKENS and m["tokens"][-1] == END and m["contexts"][0] == "<s>"
    assert len(m["table"]) == len(m["contexts"])
    for context, row in zip(m["contexts"], m["table"]):
        assert len(row) == len(TOKENS) and min(row) >= 0
        assert sum(Fraction(str(p)) for p in row) == 1, context
        assert row == [float(TABLE[context].get(w, 0)) for w in TOKENS]


# ---------------------------------------------------------------------------
# joint probabilities


@pytest.mark.parametrize("max_len", [1, 2, 3, 5, 8])
def test_all_sequences_is_the_brute_force(max_len):
    expected = brute_force(max_len)
    got = all_sequences(max_len)
    assert {tuple(s["tokens"]) for s in got} == set(expected)
    for s in got:
        words = tuple(s["tokens"])
        assert s["prob"] == pytest.approx(float(expected[words]), rel=1e-12)
        assert s["logprob"] == pytest.approx(math.log(expected[words]), rel=1e-12)
        assert s["step_probs"] == [float(TABLE[p][w]) for p, w in zip(("<s>",) + words, words)]
        assert s["ended"] == (words[-1] == END) and s["length"] == len(words) and s["text"] == " ".join(words)
    assert sum(expected.values()) == 1  # every path ends somewhere: a distribution over sequences
    assert [s["score"] for s in got] == sorted((s["score"] for s in got), reverse=True)


def test_sequence_probability_examples():
    assert sequence_probability(["the", "cat", "sat", END])["prob"] == pytest.approx(0.084, abs=1e-15)
    assert sequence_probability(["a", "dog", END])["prob"] == pytest.approx(0.216, abs=1e-15)
    s = sequence_probability(["a", "dog", "ran", "away", END], length_penalty=1.0)
    assert s["prob"] == pytest.approx(0.1296, abs=1e-15)
    assert s["score"] == pytest.approx(math.log(0.1296) / 5, rel=1e-12)
    zero = sequence_probability(["cat", "cat"])
    assert zero["prob"] == 0.0 and zero["logprob"] == -math.inf


# ---------------------------------------------------------------------------
# greedy and beam search


def test_greedy_is_not_the_most_probable_sequence():
    g = greedy(6)["best"]
    assert g["tokens"] == ["the", "cat", "sat", END]
    assert exact_prob(tuple(g["tokens"])) == Fraction("0.084")
    assert best(6, 0.0) == ("a", "dog", END)
    b = beam_search(2, 6)["best"]
    assert b["tokens"] == ["a", "dog", END] and b["prob"] > g["prob"]


def test_length_penalty_changes_the_winner():
    assert beam_search(2, 6, length_penalty=1.0)["best"]["tokens"] == ["a", "dog", "ran", "away", END]
    assert best(6, 1.0) == ("a", "dog", "ran", "away", END)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("max_len", range(1, 11))
def test_beam_width_vocab_finds_the_optimum(max_len, alpha):
    found = beam_search(len(TOKENS), max_len, alpha)["best"]
    assert tuple(found["tokens"]) == best(max_len, alpha)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("max_len", range(1, 11))
def test_greedy_is_beam_width_one(max_len, alpha):
    g = greedy(max_len)
    assert beam_search(1, max_len, alpha)["best"]["tokens"] == g["best"]["tokens"]
    for step, word in zip(g["steps"], g["best"]["tokens"]):
        assert step["choice"] == word == TOKENS[step["probs"].index(max(step["probs"]))]


@pytest.mark.parametrize("max_len", [2, 4, 6])
def test_exhaustive_beam_keeps_every_sequence(max_len):
    n = len(brute_force(max_len))
    result = beam_search(n, max_len)
    assert sorted(tuple(b["tokens"]) for b in result["beams"]) == sorted(brute_force(max_len))
    assert [b["tokens"] for b in result["beams"]] == [s["tokens"] for s in all_sequences(max_len)]


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 12), max_len=st.integers(1, 8), alpha=st.sampled_from(ALPHAS))
def test_beam_search_invariants(width, max_len, alpha):
    result = beam_search(width, max_len, alpha)
    optimum = best(max_len, alpha)
    assert result["best"]["score"] <= score(optimum, alpha) + 1e-12  # never better than the optimum
    assert result["best"] == result["beams"][0]
    assert len(result["beams"]) <= width
    for step in result["steps"]:
        kept = [c for c in step if c["kept"]]
        assert len(kept) == min(width, len(step)) and step[: len(kept)] == kept  # the best ones survive
        assert [c["score"] for c in step] == sorted((c["score"] for c in step), reverse=True)
        for c in step:
            assert c["prob"] == pytest.approx(float(exact_prob(tuple(c["tokens"]))), rel=1e-12)
            assert c["parent"] == (c["tokens"][:-1] if c["new"] else c["tokens"])
    assert all(b["ended"] or b["length"] == max_len for b in result["beams"])


# ---------------------------------------------------------------------------
# sampling


def test_sampling_is_reproducible_and_follows_the_table():
    a = sample(1000, 6, 1.0, seed=3)
    assert a == sample(1000, 6, 1.0, seed=3)
    assert a != sample(1000, 6, 1.0, seed=4)
    exact = brute_force(6)
    counts = {tuple(s["tokens"]): s["count"] for s in a["distinct"]}
    assert sum(counts.values()) == 1000 and set(counts) <= set(exact)
    for words, p in exact.items():  # each count within 4.5 standard deviations of its expectation
        mean, sd = 1000 * float(p), math.sqrt(1000 * float(p) * (1 - float(p)))
        assert abs(counts.get(words, 0) - mean) <= 4.5 * sd + 1, words
    for s in a["samples"]:
        assert s["prob"] == pytest.approx(float(exact[tuple(s["tokens"])]), rel=1e-12)


def test_temperature_zero_is_greedy_and_high_temperature_spreads():
    cold = sample(20, 6, 0.0, seed=1)
    assert [d["tokens"] for d in cold["distinct"]] == [greedy(6)["best"]["tokens"]]
    assert len(sample(300, 6, 5.0, seed=1)["distinct"]) > len(sample(300, 6, 0.3, seed=1)["distinct"])


# ---------------------------------------------------------------------------
# decode and input checks


@pytest.mark.parametrize("method", ["greedy", "beam", "sample"])
def test_decode_bundles_the_yardsticks(method):
    r = decode(method, beam_width=3, max_len=5, length_penalty=0.5, temperature=0.8, num_samples=7, seed=2)
    assert r["method"] == method
    assert tuple(r["optimum"]["tokens"]) == best(5, 0.5)
    assert r["greedy"]["tokens"] == greedy(5)["best"]["tokens"]
    assert r["greedy"]["score"] == pytest.approx(score(tuple(r["greedy"]["tokens"]), 0.5), rel=1e-12)
    assert r["num_sequences"] == len(brute_force(5))
    assert_plain(r)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: beam_search(0), "beam_width must be between 1 and 64"),
        (lambda: beam_search(2, 0), "max_len must be between 1 and 10"),
        (lambda: beam_search(2, 3, -1), "length_penalty must be between"),
        (lambda: beam_search(2.5), "beam_width must be a whole number"),
        (lambda: greedy(11), "max_len must be between"),
        (lambda: sample(0), "num_samples must be between"),
        (lambda: sample(5, 4, float("nan")), "temperature must be a number"),
        (lambda: sample(5, 4, 1.0, -1), "seed must be between"),
        (lambda: decode("top-k"), "method must be"),
        (lambda: sequence_probability(["a", "cow"]), "not in the vocabulary"),
        (lambda: sequence_probability([END, "a"]), "only be the last"),
        (lambda: sequence_probability("a dog"), "must be a list"),
    ],
)
def test_bad_input_is_a_readable_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_whole_floats_from_javascript_are_accepted():
    assert beam_search(2.0, 6.0, 0)["best"] == beam_search(2, 6, 0.0)["best"]
