"""demos.embeddings: one-hot versus dense vectors, cosine similarity and the toy analogy.

References: an independent NumPy formula (dot product over norms, written out
entry by entry), torch.nn.functional.cosine_similarity in float64, and properties
(one-hot orthogonality, scale invariance) checked with hypothesis.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import TOL, assert_plain
from demos import embeddings
from demos.embeddings import analogy, compare_representations, cosine_matrix, cosine_similarity, one_hot, vocabulary

WORDS = vocabulary()["words"]


def cosine_by_hand(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


# ---------------------------------------------------------------------------
# the vocabulary


def test_vocabulary_is_small_documented_and_consistent():
    v = vocabulary()
    assert v["dimensions"] == ["royalty", "gender", "age", "food", "person"]
    assert len(v["words"]) == len(set(v["words"])) == len(v["vectors"]) == 12
    assert all(len(vec) == 5 for vec in v["vectors"])
    assert_plain(v)
    # The named dimensions mean what they say: the gender coordinate has the sign of the word's gender.
    vec = dict(zip(v["words"], v["vectors"]))
    for male, female in (("king", "queen"), ("man", "woman"), ("prince", "princess"), ("boy", "girl")):
        assert vec[male][1] > 0.5 and vec[female][1] < -0.5
    for adult, young in (("king", "prince"), ("man", "boy"), ("woman", "girl")):
        assert vec[adult][2] > 0 > vec[young][2]
    assert vec["apple"][3] > 0.9 and vec["king"][3] < 0.1


# ---------------------------------------------------------------------------
# one-hot vectors


def test_one_hot_rows_are_unit_vectors_at_the_word_id():
    rows = one_hot(["queen", "bread", "king"])
    assert [r.index(1.0) for r in rows] == [WORDS.index("queen"), WORDS.index("bread"), WORDS.index("king")]
    assert all(sum(r) == 1.0 and len(r) == len(WORDS) for r in rows)
    assert_plain(rows)


@given(st.lists(st.sampled_from(WORDS), min_size=2, max_size=12, unique=True))
@settings(max_examples=40, deadline=None)
def test_one_hot_vectors_of_different_words_are_orthogonal(words):
    m = compare_representations(words)["one_hot"]["matrix"]
    assert m == np.eye(len(words)).tolist()  # exactly: cosine 0 between any two different words


def test_dense_vectors_are_not_orthogonal():
    m = np.array(compare_representations(["king", "queen", "prince", "apple"])["dense"]["matrix"])
    assert m[0, 1] > 0.4 and m[0, 2] > 0.4  # related words point in related directions
    assert m[0, 3] < 0.1  # unrelated ones do not
    assert np.allclose(m, m.T, atol=0) and np.allclose(np.diag(m), 1.0, atol=TOL)


# ---------------------------------------------------------------------------
# cosine similarity against independent references

PAIRS = [
    ([1.0, 0.0], [1.0, 1.0], 1 / math.sqrt(2)),
    ([1.0, 0.0], [0.0, 3.0], 0.0),
    ([1.0, 2.0, 3.0], [-2.0, -4.0, -6.0], -1.0),
    ([3.0, 4.0], [3.0, 4.0], 1.0),
    ([1e-200, 1e-200], [1.0, 1.0], 1.0),  # tiny but non-zero: direction is still defined
    ([1e150, 0.0], [1e150, 1e150], 1 / math.sqrt(2)),  # no overflow in the norms
]


@pytest.mark.parametrize("a, b, expected", PAIRS)
def test_cosine_similarity_known_values(a, b, expected):
    assert cosine_similarity(a, b) == pytest.approx(expected, abs=TOL)


@given(st.lists(st.floats(-10, 10), min_size=3, max_size=3), st.lists(st.floats(-10, 10), min_size=3, max_size=3), st.floats(0.01, 100))
@settings(max_examples=60, deadline=None)
def test_cosine_is_symmetric_bounded_and_scale_invariant(a, b, scale):
    if min(np.linalg.norm(a), np.linalg.norm(b)) < 1e-3:
        return
    c = cosine_similarity(a, b)
    assert -1.0 <= c <= 1.0
    assert c == pytest.approx(cosine_similarity(b, a), abs=TOL)
    assert c == pytest.approx(cosine_similarity([scale * x for x in a], b), abs=1e-9)
    assert c == pytest.approx(cosine_by_hand(a, b), abs=1e-9)


def test_dense_cosine_matrix_matches_a_by_hand_formula():
    words = ["king", "queen", "man", "woman", "apple"]
    got = compare_representations(words)["dense"]["matrix"]
    vec = dict(zip(WORDS, vocabulary()["vectors"]))
    for i, a in enumerate(words):
        for j, b in enumerate(words):
            assert got[i][j] == pytest.approx(cosine_by_hand(vec[a], vec[b]), abs=TOL)


def test_cosine_matrix_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(3)
    X = rng.standard_normal((7, 5))
    got = np.array(cosine_matrix(X.tolist()))
    t = torch.tensor(X, dtype=torch.float64)
    expected = F.cosine_similarity(t[:, None, :], t[None, :, :], dim=-1).numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)
    for kind in ("one_hot", "dense"):
        rep = compare_representations(WORDS)[kind]
        t = torch.tensor(rep["vectors"], dtype=torch.float64)
        expected = F.cosine_similarity(t[:, None, :], t[None, :, :], dim=-1).numpy()
        np.testing.assert_allclose(rep["matrix"], expected, rtol=0, atol=TOL)


# ---------------------------------------------------------------------------
# analogies

ANALOGIES = [
    ("king", "man", "woman", "queen"),
    ("queen", "woman", "man", "king"),
    ("prince", "boy", "girl", "princess"),
    ("king", "man", "boy", "prince"),
    ("man", "boy", "girl", "woman"),
    ("princess", "girl", "boy", "prince"),
]


@pytest.mark.parametrize("a, b, c, expected", ANALOGIES)
def test_analogies_find_the_expected_word(a, b, c, expected):
    r = analogy(a, b, c)
    assert r["best"] == expected
    assert r["ranking"][0]["cosine"] - r["ranking"][1]["cosine"] > 0.1  # a clear winner, not a tie
    assert_plain(r)


def test_analogy_excludes_the_query_words_and_ranks_by_cosine():
    r = analogy("king", "man", "woman", top=12)
    names = [x["word"] for x in r["ranking"]]
    assert {"king", "man", "woman"}.isdisjoint(names)
    assert len(names) == len(WORDS) - 3
    cosines = [x["cosine"] for x in r["ranking"]]
    assert cosines == sorted(cosines, reverse=True)
    vec = dict(zip(WORDS, vocabulary()["vectors"]))
    target = np.array(vec["king"]) - np.array(vec["man"]) + np.array(vec["woman"])
    assert r["target"] == pytest.approx(target.tolist(), abs=TOL)
    for x in r["ranking"]:
        assert x["cosine"] == pytest.approx(cosine_by_hand(target, vec[x["word"]]), abs=TOL)
    # Without the exclusion the query word itself would be the nearest: king - man + woman is closest to queen,
    # but queen - woman + man is closest to king, which is the query's first word.
    assert analogy("king", "man", "woman", top=2)["ranking"] == r["ranking"][:2]


def test_words_are_case_and_space_insensitive():
    assert analogy(" King", "MAN ", "Woman")["best"] == "queen"
    assert compare_representations(["QUEEN"])["words"] == ["queen"]


# ---------------------------------------------------------------------------
# the lab page quotes the module's numbers


def test_lab_page_table_and_numbers_match_the_module():
    path = Path(__file__).resolve().parents[2] / "docs" / "labs" / "embeddings.md"
    if not path.exists():
        pytest.skip("the textbook's pages are not next to the tests")
    page = path.read_text(encoding="utf-8")
    rows = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] in WORDS:
            rows[cells[0]] = [float(c.replace("−", "-")) for c in cells[1:]]
    assert rows == embeddings.DENSE_VECTORS
    r = analogy("king", "man", "woman")
    assert f"cosine {r['ranking'][0]['cosine']:.4f}" in page and f"({r['ranking'][1]['cosine']:.3f})" in page
    assert "(0.92, -0.92, 0.67, 0.01, 0.88)" in page
    assert [round(v, 2) for v in r["target"]] == [0.92, -0.92, 0.67, 0.01, 0.88]


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (one_hot, dict(words=["kingdom"]), "not in the toy vocabulary"),
    (one_hot, dict(words="king"), "list of words"),
    (one_hot, dict(words=[]), "at least one"),
    (one_hot, dict(words=[3]), "must be a word"),
    (compare_representations, dict(words=["king"] * 13), "at most 12"),
    (cosine_similarity, dict(a=[0.0, 0.0], b=[1.0, 1.0]), "all zeros"),
    (cosine_similarity, dict(a=[1.0, 2.0], b=[1.0]), "same length"),
    (cosine_similarity, dict(a=[1.0, math.nan], b=[1.0, 1.0]), "finite"),
    (cosine_similarity, dict(a=[1.0, "x"], b=[1.0, 1.0]), "finite number"),
    (cosine_similarity, dict(a=[10**400, 1], b=[1.0, 1.0]), "finite number"),
    (cosine_matrix, dict(vectors=[]), "empty"),
    (cosine_matrix, dict(vectors="abc"), "list of vectors"),
    (analogy, dict(a="king", b="man", c="wizard"), "wizard"),
    (analogy, dict(a="king", b="man", c="woman", top=0), "between 1 and 12"),
    (analogy, dict(a="king", b="man", c="woman", top=2.5), "whole number"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)
