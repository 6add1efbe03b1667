"""Golden tests for demos.sampling against PyTorch and Hugging Face warpers.

Each table below is a list of cases; one parametrized test per function runs the
NumPy implementation and independent references: the `transformers` logits warpers
called as `warper(input_ids, scores)` and torch.softmax in float64 (CPython), and a
plain-Python transcription of the same rules (everywhere, also inside Pyodide, where
tests/pyodide/run.mjs runs this file against the wheel the site serves).
"""

import math
from functools import partial

import numpy as np
import pytest

from demo_checks import NUMBERS, TOL
from demo_checks import assert_plain as check_plain
from demos.sampling import next_token_distribution, sample, softmax, top_k_filter, top_p_filter

assert_plain = partial(check_plain, leaves=NUMBERS)


try:
    import torch
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )
except ImportError:  # inside Pyodide: the PyTorch references are skipped, the rest runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch/transformers reference (CPython only)")

INF = math.inf
IDS = torch.zeros((1, 1), dtype=torch.long) if torch else None  # warpers ignore input_ids, but require them

_rng = np.random.default_rng(1234)
RANDOM_20 = (3.0 * _rng.standard_normal(20)).tolist()  # continuous values: no ties
RANDOM_50 = (2.0 * _rng.standard_normal(50)).tolist()
EXAMPLE = [3.2, 2.9, 2.1, 1.5, 1.4, 0.3, -0.5, -1.2, -2.0, -3.1]  # a widget-like vector
PROBS_4321 = [math.log(x) for x in (0.4, 0.3, 0.2, 0.1)]
PROBS_5_3_15_05 = [math.log(x) for x in (0.5, 0.3, 0.15, 0.05)]
PROBS_4221 = [math.log(x) for x in (4.0, 2.0, 2.0, 1.0)]  # the two 2s tie


def torch_row(logits):
    """Logits as a float64 torch tensor of shape (1, V), as warpers expect."""
    return torch.tensor([logits], dtype=torch.float64)


def hf_warp(logits, temperature=1.0, top_k=0, top_p=1.0):
    """Warped scores (V,) using HF warpers in the order `generate` builds them."""
    scores = torch_row(logits)
    warpers = []
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(float(temperature)))
    if top_k != 0:
        warpers.append(TopKLogitsWarper(top_k=top_k))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=top_p))
    for warper in warpers:
        scores = warper(IDS, scores)
    return scores[0]


def py_softmax(scores):
    """Softmax in plain Python floats (-inf scores get probability 0)."""
    top = max(scores)
    weights = [math.exp(x - top) if x > -INF else 0.0 for x in scores]
    total = math.fsum(weights)
    return [w / total for w in weights]


def py_warp(logits, temperature=1.0, top_k=0, top_p=1.0):
    """HF's warper rules (temperature, top-k, top-p) transcribed in plain Python."""
    scores = [x / temperature for x in logits]
    if 0 < top_k < len(scores):
        kth = sorted(scores, reverse=True)[top_k - 1]
        scores = [x if x >= kth else -INF for x in scores]
    if top_p < 1.0:
        probs = py_softmax(scores)
        order = sorted(range(len(scores)), key=lambda i: scores[i])  # ascending, stable
        cumulative, removed = 0.0, set()
        for position, i in enumerate(order):
            cumulative += probs[i]
            if cumulative <= 1.0 - top_p and position < len(order) - 1:
                removed.add(i)
        scores = [-INF if i in removed else x for i, x in enumerate(scores)]
    return scores


def assert_close(actual, expected, tol=TOL):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------
# softmax with temperature

SOFTMAX_CASES = [
    pytest.param([2.0, 1.0, 0.1], 1.0, id="basic"),
    pytest.param([2.0, 1.0, 0.1], 0.5, id="T=0.5-sharper"),
    pytest.param([2.0, 1.0, 0.1], 2.0, id="T=2-flatter"),
    pytest.param([1, 2, 3], 1, id="python-ints"),
    pytest.param([0.3] * 5, 1.0, id="all-equal"),
    pytest.param([1e4, 0.0, -1.0, 2.0], 1.0, id="huge-logit"),
    pytest.param([-1e4, -1e4 + 1.0, -1e4 + 3.0], 1.0, id="very-negative"),
    pytest.param([0.0, -1e4, 5.0], 1.0, id="huge-gap"),
    pytest.param([3.7], 1.0, id="vocab-of-one"),
    pytest.param([3.7], 1e-3, id="vocab-of-one-cold"),
    pytest.param([1.0, 1.001, 0.999, 0.5], 1e-3, id="T=1e-3"),
    pytest.param([1e4, 9999.0, 0.0], 1e-3, id="T=1e-3-huge"),
    pytest.param(EXAMPLE, 100.0, id="T=100"),
    pytest.param([0.0, -INF, 1.0], 1.0, id="banned-token"),
    pytest.param(RANDOM_50, 0.7, id="random-50"),
]


@pytest.mark.parametrize("logits, temperature", SOFTMAX_CASES)
def test_softmax_matches_plain_python(logits, temperature):
    assert_close(softmax(logits, temperature=temperature), py_softmax([x / temperature for x in logits]))


@needs_torch
@pytest.mark.parametrize("logits, temperature", SOFTMAX_CASES)
def test_softmax_matches_torch(logits, temperature):
    got = softmax(logits, temperature=temperature)
    expected = torch.softmax(torch_row(logits) / temperature, dim=-1)[0]
    tempered = TemperatureLogitsWarper(float(temperature))(IDS, torch_row(logits))
    via_hf = torch.softmax(tempered, dim=-1)[0]
    assert_close(got, expected)
    assert_close(got, via_hf)
    assert abs(sum(got) - 1.0) < TOL
    assert_plain(got)


GREEDY_CASES = [
    pytest.param([0.1, 2.5, -1.0], id="clear-winner"),
    pytest.param([1.0, 3.0, 3.0, 2.0], id="tie-takes-first"),
    pytest.param([0.0] * 6, id="all-equal"),
    pytest.param([-INF, -1e4, -INF], id="only-one-finite"),
    pytest.param([7.0], id="vocab-of-one"),
    pytest.param(RANDOM_20, id="random-20"),
]


@pytest.mark.parametrize("logits", GREEDY_CASES)
def test_temperature_zero_is_argmax_one_hot(logits):
    winner = logits.index(max(logits))  # the first maximum, as torch.argmax returns
    one_hot = [1.0 if i == winner else 0.0 for i in range(len(logits))]
    assert softmax(logits, temperature=0) == one_hot
    # Greedy ignores top-k and top-p entirely.
    d = next_token_distribution(logits, temperature=0.0, top_k=3, top_p=0.2)
    assert d["probs"] == one_hot and d["base_probs"] == one_hot
    assert d["kept"] == [i == winner for i in range(len(logits))]
    assert d["greedy"] is True and d["num_kept"] == 1 and d["argmax"] == winner
    assert d["entropy_bits"] == 0.0 and d["kept_mass"] == 1.0
    assert sample(logits, temperature=0, top_p=0.5, num_samples=50, seed=3) == [winner] * 50
    assert_plain(d)


# ---------------------------------------------------------------------------
# top-k

# (logits, k, expected kept mask or None to rely on HF alone)
TOP_K_CASES = [
    pytest.param(EXAMPLE, 3, None, id="k=3"),
    pytest.param(EXAMPLE, 1, None, id="k=1"),
    pytest.param(RANDOM_20, 7, None, id="random-k=7"),
    pytest.param([1.0, 3.0, 2.0, 2.0, 0.0], 2, [False, True, True, True, False], id="tie-at-boundary-keeps-all"),
    pytest.param([5.0, 1.0, 5.0], 1, [True, False, True], id="tie-at-top-k=1"),
    pytest.param([0.0] * 5, 2, [True] * 5, id="all-equal"),
    pytest.param([1e4, 0.0, -1e4], 1, [True, False, False], id="huge-logit"),
    pytest.param([-1e4, -1e4 + 2.0, -1e4 + 1.0], 2, [False, True, True], id="very-negative"),
    pytest.param([0.5], 1, [True], id="vocab-of-one"),
    pytest.param(EXAMPLE, len(EXAMPLE), [True] * len(EXAMPLE), id="k=V"),
    pytest.param(EXAMPLE, len(EXAMPLE) + 5, [True] * len(EXAMPLE), id="k>V"),
    pytest.param([0.0, -INF, -INF, 1.0], 3, [True, False, False, True], id="banned-tokens-stay-banned"),
    pytest.param(EXAMPLE, 0, [True] * len(EXAMPLE), id="k=0-disables"),
    pytest.param(EXAMPLE, -2, [True] * len(EXAMPLE), id="negative-k-disables"),
]


@pytest.mark.parametrize("logits, k, expected_kept", TOP_K_CASES)
def test_top_k_filter_matches_hf(logits, k, expected_kept):
    got = top_k_filter(logits, k)
    assert got == py_warp(logits, top_k=k)
    if k >= 1 and torch is not None:
        reference = TopKLogitsWarper(top_k=k)(IDS, torch_row(logits))[0].tolist()
        assert got == reference  # same survivors, survivors bit-identical
    # (HF rejects k <= 0; generate() treats top_k=0 as "off", as we do.)
    if expected_kept is not None:
        assert [x > -INF for x in got] == expected_kept
    assert_plain(got)


# ---------------------------------------------------------------------------
# top-p (nucleus)

# (logits, p, expected kept mask or None). Where a tie straddles the boundary,
# HF's answer depends on torch.sort's order among equal values; there the mask
# pins our documented rule (the whole tie is kept) and HF is checked for
# consistency with it.
TOP_P_CASES = [
    pytest.param(PROBS_5_3_15_05, 0.7, [True, True, False, False], id="0.5+0.3 reaches 0.7"),
    pytest.param(PROBS_5_3_15_05, 0.9, [True, True, True, False], id="needs three"),
    pytest.param(PROBS_5_3_15_05, 0.99, [True] * 4, id="needs all"),
    pytest.param(PROBS_5_3_15_05, 1e-9, [True, False, False, False], id="tiny-p-keeps-one"),
    pytest.param(PROBS_5_3_15_05, 0.0, [True, False, False, False], id="p=0-keeps-one"),
    pytest.param(EXAMPLE, 0.5, None, id="example-0.5"),
    pytest.param(EXAMPLE, 0.95, None, id="example-0.95"),
    pytest.param(RANDOM_20, 0.8, None, id="random-0.8"),
    pytest.param(RANDOM_50, 0.3, None, id="random-0.3"),
    pytest.param([1e4, 0.0, 1.0, 2.0], 0.9, [True, False, False, False], id="huge-logit"),
    pytest.param([-1e4, -1e4 + 1.0, -1e4 + 2.0], 0.5, [False, False, True], id="very-negative"),
    pytest.param([0.25], 0.5, [True], id="vocab-of-one"),
    pytest.param([1.0, -INF, 0.0, -INF], 0.9, [True, False, True, False], id="after-top-k"),
    pytest.param(PROBS_4221, 0.8, [True, True, True, False], id="tie-inside-nucleus"),
    pytest.param(PROBS_4221, 0.5, [True, True, True, False], id="tie-straddles-boundary"),
    pytest.param([0.0] * 4, 0.3, [True] * 4, id="all-equal-0.3"),
    pytest.param([0.0] * 4, 0.5, [True] * 4, id="all-equal-0.5"),
    pytest.param([2.0, 2.0, 0.0], 1e-6, [True, True, False], id="tie-at-top-tiny-p"),
]


@pytest.mark.parametrize("logits, p, expected_kept", TOP_P_CASES)
def test_top_p_filter_matches_hf(logits, p, expected_kept):
    got = top_p_filter(logits, p)
    ours = np.array([x > -INF for x in got])
    if torch is not None:
        hf = np.isfinite(TopPLogitsWarper(top_p=p)(IDS, torch_row(logits))[0].numpy())
    else:  # the same rule in plain Python, with a stable sort
        hf = np.array([x > -INF for x in py_warp(logits, top_p=p)])
    z = np.asarray(logits, dtype=np.float64)
    # Survivors keep their logits exactly.
    assert np.array_equal(np.asarray(got)[ours], z[ours])
    if expected_kept is None:
        assert np.array_equal(ours, hf)
    else:
        assert ours.tolist() == expected_kept
        # HF keeps a subset of ours; the extra tokens are exactly the boundary
        # tie, i.e. they share the smallest surviving logit.
        assert not (hf & ~ours).any()
        assert np.all(z[ours & ~hf] == z[ours].min())
        # Both keep the same logit values, only possibly fewer copies of the tie.
        assert set(z[hf].tolist()) == set(z[ours].tolist())
    assert_plain(got)


def test_top_p_one_is_a_no_op_even_when_probabilities_underflow():
    # exp(-1e4) underflows to 0, so calling HF's warper with p=1 would drop token 1
    # (cumulative 0 <= 1 - p = 0); generate() never does that, it skips top_p=1.
    logits = [0.0, -1e4, 1.0]
    assert top_p_filter(logits, 1.0) == logits
    assert next_token_distribution(logits, top_p=1.0)["kept"] == [True, True, True]


# ---------------------------------------------------------------------------
# the whole pipeline: temperature -> top-k -> top-p -> softmax

# (logits, temperature, top_k, top_p)
PIPELINE_CASES = [
    pytest.param(EXAMPLE, 1.0, 0, 1.0, id="no-warping"),
    pytest.param(EXAMPLE, 0.7, 5, 0.9, id="all-three"),
    pytest.param(EXAMPLE, 1.5, 0, 0.8, id="hot-nucleus"),
    pytest.param(EXAMPLE, 0.5, 0, 0.8, id="cold-nucleus"),
    pytest.param(EXAMPLE, 1e-3, 3, 0.5, id="T=1e-3"),
    pytest.param(EXAMPLE, 100.0, 4, 0.95, id="T=100"),
    pytest.param(PROBS_4321, 1.0, 2, 0.5, id="top-p-sees-renormalised-top-k"),
    pytest.param(RANDOM_50, 1.3, 20, 0.7, id="random-50"),
    pytest.param([1e4, 0.0, -1.0, 2.0], 1.0, 2, 0.99, id="huge-logit"),
    pytest.param([-1e4, -1e4 + 1.0, -1e4 + 3.0, -1e4 + 0.5], 2.0, 3, 0.9, id="very-negative"),
    pytest.param([0.0] * 6, 0.8, 2, 1.0, id="all-equal-top-k-tie"),
    pytest.param([1.5], 0.3, 1, 0.1, id="vocab-of-one"),
    pytest.param([0.0, -INF, 2.0, -INF, 1.0], 0.9, 4, 0.95, id="banned-tokens"),
]


@pytest.mark.parametrize("logits, temperature, top_k, top_p", PIPELINE_CASES)
def test_next_token_distribution_matches_plain_python(logits, temperature, top_k, top_p):
    d = next_token_distribution(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    warped = py_warp(logits, temperature, top_k, top_p)
    assert d["kept"] == [x > -INF for x in warped]
    assert_close(d["probs"], py_softmax(warped))
    assert_close(d["base_probs"], py_softmax([x / temperature for x in logits]))


@needs_torch
@pytest.mark.parametrize("logits, temperature, top_k, top_p", PIPELINE_CASES)
def test_next_token_distribution_matches_hf_pipeline(logits, temperature, top_k, top_p):
    d = next_token_distribution(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    warped = hf_warp(logits, temperature, top_k, top_p)
    expected = torch.softmax(warped, dim=-1)
    base = torch.softmax(torch_row(logits)[0] / temperature, dim=-1)

    assert_close(d["probs"], expected)
    assert d["kept"] == torch.isfinite(warped).tolist()
    assert d["num_kept"] == sum(d["kept"])
    assert d["greedy"] is False
    assert abs(sum(d["probs"]) - 1.0) < TOL
    assert all(p == 0.0 for p, k in zip(d["probs"], d["kept"]) if not k)
    assert_close(d["base_probs"], base)
    assert_close(d["kept_mass"], base[torch.isfinite(warped)].sum().item())
    nz = expected[expected > 0]
    assert_close(d["entropy_bits"], -(nz * torch.log2(nz)).sum().item(), tol=1e-10)
    assert d["argmax"] == int(torch.argmax(torch_row(logits)[0]))
    assert_plain(d)


def test_order_of_filters_matters():
    # probs 0.4/0.3/0.2/0.1, top_k=2, top_p=0.5. HF order (top-k first): the
    # survivors renormalise to 0.57/0.43, so 0.57 alone reaches 0.5 -> 1 token.
    # The other order would keep 0.4 + 0.3 -> 2 tokens.
    d = next_token_distribution(PROBS_4321, top_k=2, top_p=0.5)
    assert d["num_kept"] == 1
    reverse = top_k_filter(top_p_filter(PROBS_4321, 0.5), 2)
    assert sum(x > -INF for x in reverse) == 2
    if torch is not None:
        hf_reverse = TopKLogitsWarper(top_k=2)(IDS, TopPLogitsWarper(top_p=0.5)(IDS, torch_row(PROBS_4321)))
        assert int(torch.isfinite(hf_reverse).sum()) == 2


def test_temperature_changes_the_nucleus():
    cold = next_token_distribution(EXAMPLE, temperature=0.5, top_p=0.8)
    hot = next_token_distribution(EXAMPLE, temperature=1.5, top_p=0.8)
    assert cold["num_kept"] < hot["num_kept"]
    # ...but never the top-k set, since dividing by T > 0 keeps the ranking.
    for t in (0.01, 0.5, 1.0, 3.0, 100.0):
        assert next_token_distribution(EXAMPLE, temperature=t, top_k=4)["num_kept"] == 4


# ---------------------------------------------------------------------------
# sampling

# (logits, temperature, top_k, top_p)
SAMPLE_CASES = [
    pytest.param(EXAMPLE, 1.0, 0, 1.0, id="plain"),
    pytest.param(EXAMPLE, 0.8, 5, 0.9, id="filtered"),
    pytest.param(EXAMPLE, 3.0, 0, 1.0, id="hot"),
    pytest.param([0.0] * 5, 1.0, 0, 1.0, id="uniform"),
    pytest.param([1.0, -INF, 0.5, -INF, 0.0], 1.0, 0, 1.0, id="banned"),
    pytest.param([2.0], 1.0, 0, 1.0, id="vocab-of-one"),
]


@pytest.mark.parametrize("logits, temperature, top_k, top_p", SAMPLE_CASES)
def test_sample_frequencies_match_distribution(logits, temperature, top_k, top_p):
    n = 200_000
    settings = dict(temperature=temperature, top_k=top_k, top_p=top_p)
    draws = sample(logits, num_samples=n, seed=42, **settings)
    probs = np.array(next_token_distribution(logits, **settings)["probs"])
    counts = np.bincount(draws, minlength=len(logits))
    assert counts.sum() == n
    assert np.all(counts[probs == 0] == 0)  # filtered tokens never appear
    live = probs > 0
    expected = n * probs[live]
    chi2 = float(((counts[live] - expected) ** 2 / expected).sum())
    df = max(int(live.sum()) - 1, 1)
    assert chi2 < df + 6 * math.sqrt(2 * df), f"chi-square {chi2:.1f} with {df} degrees of freedom"


def test_sample_is_reproducible_and_plain():
    a = sample(EXAMPLE, temperature=1.2, top_k=6, num_samples=100, seed=7)
    b = sample(EXAMPLE, temperature=1.2, top_k=6, num_samples=100, seed=7)
    c = sample(EXAMPLE, temperature=1.2, top_k=6, num_samples=100, seed=8)
    assert a == b
    assert a != c
    assert len(a) == 100 and all(type(i) is int and 0 <= i < len(EXAMPLE) for i in a)
    assert sample(EXAMPLE) == sample(EXAMPLE, seed=0) and len(sample(EXAMPLE)) == 1
    # Ties at a filter boundary can all be drawn.
    assert set(sample([1.0, 3.0, 2.0, 2.0, 0.0], top_k=2, num_samples=500)) == {1, 2, 3}


# ---------------------------------------------------------------------------
# input forms and plain outputs (the browser passes lists)

INPUT_FORMS = [
    pytest.param(lambda xs: list(xs), id="list"),
    pytest.param(lambda xs: tuple(xs), id="tuple"),
    pytest.param(lambda xs: np.array(xs), id="ndarray"),
    pytest.param(lambda xs: np.array(xs, dtype=np.float32).astype(np.float64), id="ndarray-f64"),
    pytest.param(lambda xs: [np.float64(x) for x in xs], id="list-of-np-floats"),
]


@pytest.mark.parametrize("form", INPUT_FORMS)
def test_input_forms_give_identical_plain_results(form):
    xs = [float(x) for x in np.float32(EXAMPLE)]  # exactly representable in float32 too
    calls = [
        lambda z: softmax(z, temperature=0.9),
        lambda z: top_k_filter(z, k=3),
        lambda z: top_p_filter(z, p=0.8),
        lambda z: next_token_distribution(z, temperature=0.9, top_k=5, top_p=0.9),
        lambda z: sample(z, temperature=0.9, num_samples=20, seed=1),
    ]
    for call in calls:
        got = call(form(xs))
        assert_plain(got)
        assert got == call(xs)


def test_integral_floats_are_accepted_as_counts():
    # JavaScript has one number type; a slider may send 3.0 for 3.
    assert top_k_filter(EXAMPLE, 3.0) == top_k_filter(EXAMPLE, 3)
    assert sample(EXAMPLE, num_samples=5.0, seed=2.0) == sample(EXAMPLE, num_samples=5, seed=2)


# ---------------------------------------------------------------------------
# bad input: a ValueError whose message the widget can show

BAD_INPUTS = [
    pytest.param(softmax, dict(logits=[]), "empty", id="empty"),
    pytest.param(softmax, dict(logits=[1.0, math.nan]), r"logits\[1\] is NaN", id="nan"),
    pytest.param(softmax, dict(logits=[1.0, INF]), r"\+inf", id="plus-inf"),
    pytest.param(softmax, dict(logits=[-INF, -INF]), "every logit is -inf", id="all-minus-inf"),
    pytest.param(softmax, dict(logits="1 2 3"), "list of numbers", id="string"),
    pytest.param(softmax, dict(logits=3.0), "list of numbers", id="scalar"),
    pytest.param(softmax, dict(logits=None), "list of numbers", id="none"),
    pytest.param(softmax, dict(logits={"a": 1.0}), "list of numbers", id="dict"),
    pytest.param(softmax, dict(logits=[1.0, "2"]), r"logits\[1\] is '2'", id="string-element"),
    pytest.param(softmax, dict(logits=[[1.0, 2.0]]), "must be a number", id="nested-list"),
    pytest.param(softmax, dict(logits=[True, False]), "must be a number", id="bools"),
    pytest.param(softmax, dict(logits=[10**400]), "too large", id="huge-int"),
    pytest.param(softmax, dict(logits=np.zeros((2, 2))), "flat list", id="2d-array"),
    pytest.param(softmax, dict(logits=np.array(["a"])), "dtype", id="string-array"),
    pytest.param(softmax, dict(logits=[1.0], temperature=-0.5), ">= 0", id="negative-T"),
    pytest.param(softmax, dict(logits=[1.0], temperature=math.nan), "NaN", id="nan-T"),
    pytest.param(softmax, dict(logits=[1.0], temperature=INF), "finite", id="inf-T"),
    pytest.param(softmax, dict(logits=[1.0], temperature="hot"), "must be a number", id="string-T"),
    pytest.param(top_k_filter, dict(logits=[1.0, 2.0], k=1.5), "whole number", id="fractional-k"),
    pytest.param(top_k_filter, dict(logits=[1.0, 2.0], k="3"), "whole number", id="string-k"),
    pytest.param(top_k_filter, dict(logits=[1.0, 2.0], k=None), "whole number", id="none-k"),
    pytest.param(top_p_filter, dict(logits=[1.0, 2.0], p=-0.1), "between 0 and 1", id="negative-p"),
    pytest.param(top_p_filter, dict(logits=[1.0, 2.0], p=1.5), "between 0 and 1", id="p>1"),
    pytest.param(top_p_filter, dict(logits=[1.0, 2.0], p=math.nan), "NaN", id="nan-p"),
    pytest.param(top_p_filter, dict(logits=[1.0, 2.0], p="0.9"), "must be a number", id="string-p"),
    pytest.param(next_token_distribution, dict(logits=[1.0], top_k=2.5), "top_k", id="ntd-fractional-k"),
    pytest.param(next_token_distribution, dict(logits=[1.0], top_p=2), "top_p", id="ntd-p>1"),
    pytest.param(next_token_distribution, dict(logits=[1.0], temperature=-1), "temperature", id="ntd-negative-T"),
    pytest.param(sample, dict(logits=[1.0], num_samples=0), "num_samples", id="zero-samples"),
    pytest.param(sample, dict(logits=[1.0], num_samples=10**7), "num_samples", id="too-many-samples"),
    pytest.param(sample, dict(logits=[1.0], num_samples=2.5), "num_samples", id="fractional-samples"),
    pytest.param(sample, dict(logits=[1.0], seed=-1), "seed", id="negative-seed"),
    pytest.param(sample, dict(logits=[1.0], seed=1.5), "seed", id="fractional-seed"),
    pytest.param(sample, dict(logits=[], seed=1), "empty", id="sample-empty"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD_INPUTS)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)
