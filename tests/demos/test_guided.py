"""Tests for demos.guided: the mask is exactly the grammar, and guided decoding
always yields JSON that `json.loads` accepts and that fits the schema.

The grammar is checked against an independent description: every valid answer is
generated from the schema's parts with `itertools.product` (for shortened limits,
so the language is small enough to list), and the tokens allowed after a prefix
must be exactly the tokens that continue some valid answer.
"""

import itertools
import json
import math

import numpy as np
import pytest

from demos import guided
from demos.guided import allowed_tokens, generate, guided_distribution, success_rates, vocabulary

VOCAB = guided.VOCAB
ID = {piece: i for i, piece in enumerate(VOCAB)}


def answers(max_pieces, max_digits):
    """Every valid answer as a tuple of token ids, built from the schema's parts."""
    names = [p for n in range(1, max_pieces + 1) for p in itertools.product(guided.NAME_PIECES, repeat=n)]
    ages = ["0"] + [str(a) for a in range(1, 10**max_digits)]
    for name, age, s1, s2, s3 in itertools.product(names, ages, *[["", " "]] * 3):
        pieces = [
            "{",
            '"name"',
            ":",
            *([s1] if s1 else []),
            '"',
            *name,
            '"',
            ",",
            *([s2] if s2 else []),
            '"age"',
            ":",
            *([s3] if s3 else []),
            *age,
            "}",
            "<eos>",
        ]
        yield tuple(ID[p] for p in pieces)


@pytest.mark.parametrize("max_pieces, max_digits", [(1, 2), (2, 1)])
def test_mask_is_exactly_the_grammar(monkeypatch, max_pieces, max_digits):
    monkeypatch.setattr(guided, "MAX_NAME_PIECES", max_pieces)
    monkeypatch.setattr(guided, "MAX_DIGITS", max_digits)
    continuations = {}
    for ids in answers(max_pieces, max_digits):
        for k in range(len(ids)):
            continuations.setdefault(ids[:k], set()).add(ids[k])
        continuations.setdefault(ids, set())
    for prefix, expected in continuations.items():
        got = allowed_tokens(list(prefix))
        assert set(got["allowed"]) == expected, [VOCAB[i] for i in prefix]
        assert got["mask"] == [i in expected for i in range(len(VOCAB))]
        assert got["complete"] == (not expected)


def test_full_size_answers_are_accepted_and_parse():
    for ids in [
        (
            ID["{"],
            ID['"name"'],
            ID[":"],
            ID['"'],
            ID["Ada"],
            ID["Bo"],
            ID["Zo"],
            ID['"'],
            ID[","],
            ID['"age"'],
            ID[":"],
            ID[" "],
            ID["9"],
            ID["0"],
            ID["7"],
            ID["}"],
            guided.EOS,
        )
    ]:
        for k in range(len(ids)):
            assert ids[k] in allowed_tokens(list(ids[:k]))["allowed"]
        assert allowed_tokens(list(ids))["complete"]
        assert json.loads("".join(VOCAB[i] for i in ids[:-1])) == {"name": "AdaBoZo", "age": 907}


@pytest.mark.parametrize(
    "text_pieces",
    [
        ["{", '"name"', ":", '"', '"'],  # empty name
        ["{", '"name"', ":", '"', "Ada", "Ada", "Ada", "Ada"],  # fourth piece
        ["{", '"age"'],  # keys out of order
        ["{", '"name"', ":", '"', "Ada", '"', ",", '"age"', ":", "0", "1"],  # leading zero
        ["{", '"name"', ":", '"', "Ada", '"', ",", '"age"', ":", "1", "2", "3", "4"],  # 4 digits
        ["{", '"name"', ":", " ", " "],  # two spaces
        ["true"],
    ],
)
def test_prefixes_that_break_the_schema_are_rejected(text_pieces):
    with pytest.raises(ValueError, match="already breaks the schema"):
        allowed_tokens([ID[p] for p in text_pieces])


# ---------------------------------------------------------------------------
# one guided step


@pytest.mark.parametrize("seed", range(5))
def test_guided_distribution_masks_and_renormalises(seed):
    rng = np.random.default_rng(seed)
    logits = (3 * rng.standard_normal(len(VOCAB))).tolist()
    prefix = [ID["{"], ID['"name"'], ID[":"]]
    d = guided_distribution(logits, prefix)
    allowed = set(d["allowed"])
    assert allowed == {ID[" "], ID['"']}
    z = np.array(logits)
    raw = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(d["probs"], raw, rtol=1e-12)
    kept = sum(raw[i] for i in allowed)
    for i, p in enumerate(d["guided_probs"]):
        assert p == (pytest.approx(raw[i] / kept, rel=1e-12) if i in allowed else 0.0)
    assert d["removed_mass"] == pytest.approx(1 - kept, abs=1e-12)


def test_guided_distribution_matches_torch():
    torch = pytest.importorskip("torch")
    logits = np.random.default_rng(9).standard_normal(len(VOCAB))
    prefix = [ID[p] for p in ["{", '"name"', ":", '"', "Eve"]]
    d = guided_distribution(logits.tolist(), prefix)
    mask = torch.tensor(d["mask"])
    want = torch.softmax(torch.tensor(logits).masked_fill(~mask, float("-inf")), dim=-1)
    np.testing.assert_allclose(d["guided_probs"], want.numpy(), rtol=1e-12, atol=0)


def decode_with(logits_for_step):
    """Greedy guided decoding with arbitrary logits, through the public step function."""
    prefix = []
    while not allowed_tokens(prefix)["complete"]:
        d = guided_distribution(logits_for_step(len(prefix)), prefix)
        prefix.append(int(np.argmax(d["guided_probs"])))
    return "".join(VOCAB[i] for i in prefix if i != guided.EOS)


@pytest.mark.parametrize("scale", [1.0, 10.0, 100.0])
def test_guided_greedy_always_gives_valid_json(scale):
    for seed in range(100):
        noise = scale * np.random.default_rng(seed).standard_normal((guided.MAX_TOKENS, len(VOCAB)))
        text = decode_with(lambda t, noise=noise: noise[t].tolist())
        value = json.loads(text)
        assert list(value) == ["name", "age"] and isinstance(value["name"], str) and type(value["age"]) is int


def test_adversarial_logits_cannot_break_it():
    """Even logits that favour exactly the wrong tokens give valid JSON."""
    bad = [ID[p] for p in ["true", "null", "[", "]", '"city"', "<eos>"]]
    text = decode_with(lambda t: [50.0 if i in bad else -float(i) for i in range(len(VOCAB))])
    assert json.loads(text)["age"] >= 0


# ---------------------------------------------------------------------------
# the toy model, guided and unguided


@pytest.mark.parametrize("skill", [0.0, 2.0, 4.0, 8.0])
def test_generate_guided_is_always_valid(skill):
    for seed in range(60):
        r = generate(seed, guided=True, skill=skill)
        assert r["valid_json"] and r["matches_schema"] and r["finished"] and r["error"] is None
        assert json.loads(r["text"]) == r["parsed"]
        assert all(step["grammatical"] for step in r["steps"])
        for step in r["steps"]:
            assert step["chosen"] in step["allowed"]
            assert step["guided_probs"][step["chosen"]] == max(step["guided_probs"])
            assert step["removed_mass"] == pytest.approx(math.fsum(p for i, p in enumerate(step["probs"]) if i not in step["allowed"]), abs=1e-12)


def test_unguided_often_fails():
    rates = success_rates(num_seeds=100, skill=3.0)
    assert rates["guided_ok"] == 100
    assert rates["unguided_ok"] <= 50
    for failure in rates["unguided_failures"]:
        raw = generate(failure["seed"], guided=False, skill=3.0)
        assert raw["text"] == failure["text"] and not raw["matches_schema"]
        if not raw["valid_json"]:
            with pytest.raises(json.JSONDecodeError):
                json.loads(raw["text"])
    assert success_rates(num_seeds=50, skill=0.0)["unguided_ok"] == 0


def test_guided_only_changes_ungrammatical_steps():
    """Same noise: the guided run agrees with the unguided one until the latter slips."""
    for seed in range(40):
        g, u = generate(seed, True, 4.0), generate(seed, False, 4.0)
        for gs, us in zip(g["steps"], u["steps"]):
            assert gs["raw_choice"] == us["raw_choice"]
            if not us["grammatical"]:
                assert gs["chosen"] != us["chosen"]
                break
            assert gs["chosen"] == us["chosen"]
        else:
            assert g["tokens"] == u["tokens"] and u["matches_schema"]


def test_vocabulary_and_bad_input():
    v = vocabulary()
    assert v["tokens"] == VOCAB and len(set(VOCAB)) == len(VOCAB) and v["tokens"][v["eos"]] == "<eos>"
    with pytest.raises(ValueError, match="token ids are whole numbers"):
        allowed_tokens([99])
    with pytest.raises(ValueError, match="must be a list of"):
        guided_distribution([0.0, 1.0], [])
    with pytest.raises(ValueError, match="finite"):
        guided_distribution([math.inf] * len(VOCAB), [])
    with pytest.raises(ValueError, match="nothing may follow"):
        guided_distribution([0.0] * len(VOCAB), list(generate(0)["tokens"]))
    with pytest.raises(ValueError, match="skill must be between"):
        generate(0, True, -1)
    with pytest.raises(ValueError, match="num_seeds must be between"):
        success_rates(0)
