"""demos.superposition: sparse features stored in fewer dimensions.

Reference: the toy model rebuilt in PyTorch from its documented recipe (unit directions, features
active with probability `density`, readout ReLU(Wᵀ W x − b)); and the phenomenon itself: sparse
features favour superposition, dense ones a dimension each.
"""

import numpy as np
import pytest

from demo_checks import NUMBERS, assert_plain
from demos import superposition as sp


def test_errors_match_a_pytorch_rebuild(torch):
    n, d, density, b, samples, seed = 32, 8, 0.05, 0.3, 500, 4
    w = torch.tensor(sp.directions(n, d, seed))
    rng = np.random.default_rng([seed, 1])
    x = torch.tensor(rng.random((samples, n)) * (rng.random((samples, n)) < density))
    x_hat = torch.relu(x @ w.T @ w - b)
    kept = torch.cat([x[:, :d], torch.zeros(samples, n - d, dtype=x.dtype)], dim=1)
    r = sp.superposition(n, d, density, b, samples, seed)
    assert_plain(r, leaves=(*NUMBERS, str))
    assert r["superposition_error"] == pytest.approx(float(((x_hat - x) ** 2).sum() / (x**2).sum()), rel=1e-12)
    assert r["dedicated_error"] == pytest.approx(float(((kept - x) ** 2).sum() / (x**2).sum()), rel=1e-12)
    cos = (w.T @ w - torch.eye(n, dtype=w.dtype)).abs().max()
    assert r["max_interference"] == pytest.approx(float(cos), rel=1e-12)


def test_sparse_features_favour_superposition_and_dense_ones_do_not():
    sparse, dense = sp.superposition(density=0.02), sp.superposition(density=0.5)
    assert sparse["winner"] == "superposition" and sparse["superposition_error"] < 0.6 * sparse["dedicated_error"]
    assert dense["winner"] == "dedicated"
    assert 0.7 < sparse["dedicated_error"] < 0.8  # 48 of 64 equally likely features dropped: about 3/4 of the energy
    np.testing.assert_allclose(np.linalg.norm(sp.directions(10, 4), axis=0), 1.0)


@pytest.mark.parametrize("kwargs, message", [({"d": 100}, "d"), ({"density": 1.5}, "density"), ({"n_features": 1}, "n_features")])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sp.superposition(**kwargs)
