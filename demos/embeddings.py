"""From token ids to vectors: one-hot codes, dense embeddings, cosine similarity, analogies.

A model cannot multiply a word; it looks up a vector for the word's id. The most
literal vector is *one-hot*: position `i` of a length-`V` vector is 1 for word `i`,
every other entry 0. Any two different one-hot vectors are orthogonal, so their
cosine similarity is 0 whether the words are "king" and "queen" or "king" and
"bread". A *dense* embedding gives each word a short vector of real numbers instead,
and similar words can then point in similar directions.

Real embeddings are learned and their coordinates have no names. So that the
geometry can be read off by eye, this module uses a tiny hand-built table
(`DENSE_VECTORS`) with five named dimensions:

| dimension | meaning | scale |
|---|---|---|
| `royalty` | belongs to a royal family | 0 (no) to 1 (yes) |
| `gender` | grammatical/social gender | -1 (female) to +1 (male), 0 neutral |
| `age` | adult or young | -1 (young) to +1 (adult) |
| `food` | something to eat | 0 to 1 |
| `person` | a human being | 0 to 1 |

The values are chosen by hand (with small irregularities, as learned vectors have),
not learned from text. With them the classic analogy works:
`king - man + woman` lands next to `queen`.

Every public function takes and returns plain Python data.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np

from demos._checks import as_int as _as_count

DIMENSIONS = ["royalty", "gender", "age", "food", "person"]

# word -> [royalty, gender, age, food, person]; hand-built, see the module docstring
DENSE_VECTORS = {
    "king": [0.93, 0.85, 0.70, 0.02, 0.90],
    "queen": [0.95, -0.88, 0.68, 0.01, 0.92],
    "man": [0.05, 0.90, 0.75, 0.03, 0.95],
    "woman": [0.04, -0.87, 0.72, 0.02, 0.93],
    "prince": [0.85, 0.82, -0.55, 0.02, 0.90],
    "princess": [0.88, -0.84, -0.52, 0.01, 0.91],
    "boy": [0.02, 0.88, -0.60, 0.03, 0.94],
    "girl": [0.03, -0.85, -0.62, 0.02, 0.92],
    "child": [0.02, 0.02, -0.70, 0.02, 0.95],
    "crown": [0.90, 0.05, 0.10, 0.02, 0.05],
    "apple": [0.01, 0.00, 0.05, 0.97, 0.02],
    "bread": [0.02, 0.01, 0.10, 0.92, 0.01],
}
WORDS = list(DENSE_VECTORS)  # the vocabulary, in id order: "king" has id 0
MAX_WORDS = 12  # the widget shows at most this many rows


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_word(value, name="word"):
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a word, got {value!r}.")
    word = value.strip().lower()
    if word not in DENSE_VECTORS:
        raise ValueError(f"{value!r} is not in the toy vocabulary; choose one of: {', '.join(WORDS)}.")
    return word


def _as_words(words):
    if isinstance(words, str) or not isinstance(words, Sequence):
        raise ValueError(f"words must be a list of words, got {type(words).__name__}.")
    chosen = [_as_word(w, f"words[{i}]") for i, w in enumerate(words)]
    if not chosen:
        raise ValueError("choose at least one word.")
    if len(chosen) > MAX_WORDS:
        raise ValueError(f"choose at most {MAX_WORDS} words, got {len(chosen)}.")
    return chosen


def _as_vectors(vectors, name="vectors"):
    """A (n, d) float64 array from a list of equal-length lists of numbers."""
    if isinstance(vectors, (str, bytes, dict)) or not hasattr(vectors, "__iter__"):
        raise ValueError(f"{name} must be a list of vectors, got {type(vectors).__name__}.")
    rows = [_as_vector(v, f"{name}[{i}]") for i, v in enumerate(vectors)]
    if not rows:
        raise ValueError(f"{name} is empty: give at least one vector.")
    if len({r.size for r in rows}) > 1:
        raise ValueError(f"all {name} must have the same length.")
    return np.stack(rows)


def _as_vector(v, name):
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
        raise ValueError(f"{name} must be a list of numbers, got {type(v).__name__}.")
    items = list(v)
    for j, x in enumerate(items):
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not _finite(x):
            raise ValueError(f"{name}[{j}] is {x!r}; every entry must be a finite number.")
    if not items:
        raise ValueError(f"{name} is empty.")
    return np.array(items, dtype=np.float64)


def _finite(x):
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


# ----------------------------------------------------------------------------
# the math, on float64 arrays


def _cosine_matrix(E):
    """Cosine similarity (n, n) between the rows of E (n, d)."""
    peak = np.abs(E).max(axis=1)  # (n,)
    if np.any(peak == 0):
        raise ValueError(f"vector {int(np.argmin(peak))} is all zeros, so its direction (and cosine) is undefined.")
    E = E / peak[:, None]  # (n, d) same directions, largest entry ±1: no overflow or underflow in the norms
    U = E / np.linalg.norm(E, axis=1)[:, None]  # (n, d) unit rows
    return np.clip(U @ U.T, -1.0, 1.0)  # (n, n); clip rounding just outside [-1, 1]


def _one_hot(ids, V):
    """One-hot rows (n, V): row r has a 1 at column ids[r]."""
    E = np.zeros((len(ids), V))
    E[np.arange(len(ids)), ids] = 1.0
    return E


def _dense(words):
    return np.array([DENSE_VECTORS[w] for w in words], dtype=np.float64)  # (n, d)


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def vocabulary() -> dict:
    """The toy vocabulary and its hand-built dense vectors.

    Returns:
        `words` (list[str], in id order), `dimensions` (the names of the five
            coordinates) and `vectors` (one list of five floats per word).
    """
    return {"words": list(WORDS), "dimensions": list(DIMENSIONS), "vectors": [list(DENSE_VECTORS[w]) for w in WORDS]}


def one_hot(words: Sequence[str]) -> list[list[float]]:
    """One-hot vectors of the given words over the whole toy vocabulary.

    Args:
        words: Words from `vocabulary()["words"]` (case and surrounding spaces ignored).

    Returns:
        One vector of length V = 12 per word: 1.0 at the word's id, 0.0 elsewhere.

    Raises:
        ValueError: If a word is not in the vocabulary.

    Examples:
        >>> one_hot(["queen"])[0][:3]
        [0.0, 1.0, 0.0]
    """
    chosen = _as_words(words)
    return _one_hot([WORDS.index(w) for w in chosen], len(WORDS)).tolist()


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between two vectors: `a·b / (|a| |b|)`.

    1 means the same direction, 0 orthogonal, -1 opposite. Only directions matter:
    scaling either vector by a positive number changes nothing.

    Args:
        a: A vector (list of numbers).
        b: A vector of the same length.

    Returns:
        The cosine similarity, in [-1, 1].

    Raises:
        ValueError: If the vectors differ in length, are empty or one is all zeros.

    Examples:
        >>> cosine_similarity([1.0, 0.0], [1.0, 1.0])
        0.7071067811865475
    """
    E = _as_vectors([a, b], "vectors")
    return float(_cosine_matrix(E)[0, 1])


def cosine_matrix(vectors: Sequence[Sequence[float]]) -> list[list[float]]:
    """Cosine similarity between every pair of vectors.

    Args:
        vectors: n vectors of equal length d, none of them all zeros.

    Returns:
        An n × n symmetric matrix (list of rows) with ones on the diagonal.

    Raises:
        ValueError: On ragged, empty or all-zero vectors.
    """
    return _cosine_matrix(_as_vectors(vectors)).tolist()


def compare_representations(words: Sequence[str]) -> dict:
    """Cosine matrices of the same words as one-hot and as dense vectors.

    Args:
        words: 1 to 12 words of the toy vocabulary.

    Returns:
        `words` (normalised to lower case), `dimensions`, and for each of
            `one_hot` and `dense` a dict with `vectors` and `matrix` (n × n cosines).
            In `one_hot` every off-diagonal entry between different words is 0.

    Raises:
        ValueError: If a word is unknown or the list is empty or too long.
    """
    chosen = _as_words(words)
    hot = _one_hot([WORDS.index(w) for w in chosen], len(WORDS))  # (n, V)
    dense = _dense(chosen)  # (n, d)
    return {
        "words": chosen,
        "dimensions": list(DIMENSIONS),
        "one_hot": {"vectors": hot.tolist(), "matrix": _cosine_matrix(hot).tolist()},
        "dense": {"vectors": dense.tolist(), "matrix": _cosine_matrix(dense).tolist()},
    }


def analogy(a: str, b: str, c: str, top: int = 5) -> dict:
    """Solve "b is to a as c is to ?" the Word2Vec way: the nearest word to a - b + c.

    The target vector `a - b + c` is compared by cosine similarity with every word
    of the toy vocabulary except `a`, `b` and `c` themselves (otherwise `a` itself
    often wins). Words with equal cosine keep vocabulary order.

    Args:
        a: First word, e.g. "king".
        b: Word to subtract, e.g. "man".
        c: Word to add, e.g. "woman".
        top: How many candidates to return, 1 to 12.

    Returns:
        `target` (the vector a - b + c), `ranking` (up to `top` dicts with `word`
            and `cosine`, best first), `best` (the top word) and `best_cosine`.

    Raises:
        ValueError: If a word is unknown or `top` is out of range.

    Examples:
        >>> analogy("king", "man", "woman")["best"]
        'queen'
    """
    a, b, c = _as_word(a, "a"), _as_word(b, "b"), _as_word(c, "c")
    top = _as_count("top", top, 1, len(WORDS))
    E = _dense(WORDS)  # (V, d)
    target = E[WORDS.index(a)] - E[WORDS.index(b)] + E[WORDS.index(c)]  # (d,)
    candidates = [i for i, w in enumerate(WORDS) if w not in (a, b, c)]  # at least 9 words remain
    cos = _cosine_matrix(np.vstack([target, E[candidates]]))[0, 1:]  # (len(candidates),)
    order = sorted(range(len(candidates)), key=lambda j: -cos[j])  # stable: ties keep vocabulary order
    ranking = [{"word": WORDS[candidates[j]], "cosine": float(cos[j])} for j in order[:top]]
    return {
        "a": a,
        "b": b,
        "c": c,
        "target": target.tolist(),
        "ranking": ranking,
        "best": ranking[0]["word"],
        "best_cosine": ranking[0]["cosine"],
    }
