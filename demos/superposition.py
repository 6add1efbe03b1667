"""Superposition: more features than dimensions, when the features are sparse.

A model may need to represent more features (n) than its stream has dimensions (d). It can give
d of them a dimension each and drop the rest, or give every feature a direction in the same d
dimensions, directions that cannot all be orthogonal, and accept some interference (Elhage et
al., 2022). With features that are rarely active, interference is rare too, and superposition
wins. This module measures that with random directions and the toy model's readout:

    h = W x                  W: (d, n), unit columns: feature i's direction      h: (d,)
    x̂ = ReLU(Wᵀ h − b)       each feature read back along its own direction, minus a threshold b

against the *dedicated* model, which stores features 0 … d − 1 exactly and loses the others.
The features are each active with probability `density`, with a value uniform in [0, 1].
"""

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between


def directions(n_features: int, d: int, seed: int = 0) -> np.ndarray:
    """n random unit vectors in d dimensions, the columns of W (d, n)."""
    w = np.random.default_rng(seed).standard_normal((d, n_features))
    return w / np.linalg.norm(w, axis=0, keepdims=True)


def superposition(n_features: int = 64, d: int = 16, density: float = 0.02, threshold: float = 0.3, samples: int = 4000, seed: int = 0) -> dict:
    """Reconstruction error of n sparse features stored in d dimensions, superposed or dedicated.

    Args:
        n_features: n, features to represent (2 to 512).
        d: Dimensions of the stream (1 to n).
        density: Probability that a feature is active in a sample (0 to 1).
        threshold: b, subtracted before the ReLU: it cuts the small interference terms.
        samples: How many random samples the error is averaged over.
        seed: Seed of the directions and the samples.

    Returns:
        ``superposition_error`` and ``dedicated_error`` (each ‖x̂ − x‖² / ‖x‖² over all samples),
        ``winner`` ("superposition" or "dedicated"), ``max_interference`` (largest |cos| between
        two directions) and the settings.

    Examples:
        >>> superposition(n_features=64, d=16, density=0.02)["winner"]
        'superposition'
        >>> superposition(n_features=64, d=16, density=0.5)["winner"]
        'dedicated'
    """
    n = _as_int("n_features", n_features, 2, 512)
    d = _as_int("d", d, 1, n)
    density = _between("density", density, 0.0, 1.0)
    threshold = _between("threshold", threshold, 0.0, 10.0)
    samples = _as_int("samples", samples, 1, 100_000)
    seed = _as_int("seed", seed, 0, 2**31 - 1)
    w = directions(n, d, seed)  # (d, n)
    rng = np.random.default_rng([seed, 1])
    x = rng.random((samples, n)) * (rng.random((samples, n)) < density)  # (S, n), sparse features in [0, 1]
    h = x @ w.T  # (S, d): the stream
    x_hat = np.maximum(h @ w - threshold, 0.0)  # (S, n): read back, interference cut by the threshold
    dedicated = x.copy()
    dedicated[:, d:] = 0.0  # d features kept exactly, the rest dropped
    energy = float((x**2).sum()) or 1.0
    sup = float(((x_hat - x) ** 2).sum()) / energy
    ded = float(((dedicated - x) ** 2).sum()) / energy
    cos = np.abs(w.T @ w - np.eye(n))
    return {
        "superposition_error": sup,
        "dedicated_error": ded,
        "winner": "superposition" if sup < ded else "dedicated",
        "max_interference": float(cos.max()),
        "settings": {"n_features": n, "d": d, "density": density, "threshold": threshold, "samples": samples, "seed": seed},
    }
