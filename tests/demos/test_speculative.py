"""demos.speculative: the acceptance rule leaves the target's distribution unchanged.

References: the target distribution itself (the emitted token must be distributed as p, exactly
by `output_distribution` and within sampling error by `simulate`, by a chi-square statistic below
its 0.1% critical value), and the expected-length formula of Leviathan et al. (2023) against
simulation.
"""

import numpy as np
import pytest

from demos import speculative as sp


@pytest.mark.parametrize("seed", range(5))
def test_the_emitted_token_is_distributed_as_the_target(seed):
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    r = sp.output_distribution(p.tolist(), q.tolist())
    np.testing.assert_allclose(r["output"], p, atol=1e-12)
    assert r["acceptance"] == pytest.approx(np.minimum(p, q).sum())


def test_simulation_matches_the_target_and_the_expected_length():
    p, q = [0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]
    r = sp.simulate(p, q, gamma=3, passes=4000, seed=1)
    emitted = round(r["tokens_per_pass"] * 4000)
    counts = np.round(np.array(r["frequencies"]) * emitted)
    expected = np.array(p) * counts.sum()
    assert ((counts - expected) ** 2 / expected).sum() < 16.27  # chi-square, 3 degrees of freedom, p = 0.001
    assert r["acceptance"] == pytest.approx(0.7)
    assert r["tokens_per_pass"] == pytest.approx(r["expected"], rel=0.05)


def test_expected_tokens_limits():
    assert sp.expected_tokens(0.0, 5) == 1.0  # every proposal rejected: the target's one token
    assert sp.expected_tokens(1.0, 5) == 6.0  # every proposal kept, plus the target's bonus token
    assert sp.expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)


@pytest.mark.parametrize("p, q, message", [([0.5, 0.6], [0.5, 0.5], "p must"), ([1.0], [0.5, 0.5], "same tokens"), ([0.5, 0.5], [-0.1, 1.1], "q must")])
def test_bad_distributions_are_refused(p, q, message):
    with pytest.raises(ValueError, match=message):
        sp.output_distribution(p, q)
