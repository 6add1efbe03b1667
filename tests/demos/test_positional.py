"""demos.positional against the formula written out, trigonometric identities and PyTorch.

Torch-free tests first; the PyTorch references (the float64 table as PyTorch
tutorials build it, DistilBERT's sinusoidal initialiser, cosine similarity and a
GPT-2 `wpe` table) come last and are skipped where torch is missing.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import assert_close, assert_plain
from demos.positional import (
    frequencies,
    learned_similarity,
    relative_dot,
    shift_check,
    shift_matrix,
    similarity_matrix,
    sinusoidal_table,
    sinusoidal_view,
)


def vaswani(pos, j, d):
    """PE[pos, j] written as in the paper: sin for even j = 2i, cos for odd j = 2i + 1."""
    i = j // 2
    angle = pos / 10000 ** (2 * i / d)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


# ---------------------------------------------------------------------------
# the table


@pytest.mark.parametrize("n, d", [(1, 2), (10, 4), (50, 16), (17, 64), (8, 512)])
def test_table_matches_the_formula(n, d):
    table = sinusoidal_table(n, d)
    assert_close(table, [[vaswani(pos, j, d) for j in range(d)] for pos in range(n)])
    assert_plain(table)


def test_frequencies_and_first_rows():
    assert frequencies(8) == [1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75]
    row0 = sinusoidal_table(1, 8)[0]
    assert row0 == [0.0, 1.0] * 4  # sin 0, cos 0
    # Low dimensions oscillate fast: column 0 changes sign within a few positions, the last pair barely moves.
    t = np.array(sinusoidal_table(10, 64))
    assert np.any(t[:, 0] < 0) and np.all(t[:, 63] > 0.999)


# ---------------------------------------------------------------------------
# shifting is a rotation of every (sin, cos) pair


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2000), st.integers(-200, 2000), st.sampled_from([2, 4, 16, 64, 128]))
def test_shift_is_a_fixed_linear_map(pos, k, d):
    if pos + k < 0:
        k = -pos
    r = shift_check(pos, k, d)
    assert r["max_abs_error"] < 1e-9  # angles up to ~4000 rad: rounding grows with the angle
    assert_close(r["shifted"], sinusoidal_table(pos + k + 1, d)[pos + k], tol=1e-9)


def test_shift_matrix_is_block_rotation_and_composes():
    d = 8
    m3, m5, m8 = (np.array(shift_matrix(k, d)) for k in (3, 5, 8))
    assert_close(m3 @ m3.T, np.eye(d))  # orthogonal: lengths are kept
    assert_close(m3 @ m5, m8)  # moving 3 then 5 is moving 8
    assert_close(np.array(shift_matrix(-3, d)), m3.T)  # moving back undoes it
    assert np.count_nonzero(m3) == 2 * d  # one 2x2 block per pair, zeros elsewhere
    for pos in range(0, 40, 7):  # the same map works at every position
        table = np.array(sinusoidal_table(pos + 4, d))
        assert_close(m3 @ table[pos], table[pos + 3])


# ---------------------------------------------------------------------------
# dot products depend only on the offset


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 500), st.integers(0, 500), st.integers(0, 500), st.sampled_from([2, 8, 32, 128]))
def test_dot_product_depends_only_on_offset(p, q, k, d):
    r = relative_dot(p, q, k, d)
    table = np.array(sinusoidal_table(max(p, q) + k + 1, d))
    assert math.isclose(r["dot"], float(table[p] @ table[q]), rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(r["dot"], r["shifted_dot"], rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(r["dot"], r["closed_form"], rel_tol=1e-9, abs_tol=1e-9)
    assert r["difference"] == abs(r["dot"] - r["shifted_dot"])
    assert r["offset"] == p - q
    assert r["dot"] <= d / 2 + 1e-9  # largest when p == q, where every cosine is 1
    assert_plain(r)


def test_self_similarity_is_the_maximum():
    d = 32
    dots = np.array(similarity_matrix(sinusoidal_table(40, d), measure="dot"))
    assert_close(np.diag(dots), np.full(40, d / 2))
    assert np.all(dots <= d / 2 + 1e-12)
    # Toeplitz: every diagonal is constant (the value depends on p - q alone).
    for offset in range(-39, 40):
        diagonal = np.diag(dots, offset)
        assert_close(diagonal, np.full(diagonal.size, diagonal[0]), tol=1e-10)


# ---------------------------------------------------------------------------
# similarity matrices of any table


def test_cosine_similarity_matrix():
    rng = np.random.default_rng(7)
    table = rng.standard_normal((6, 5))
    sim = np.array(similarity_matrix(table.tolist()))
    norm = table / np.linalg.norm(table, axis=1, keepdims=True)
    assert_close(sim, norm @ norm.T)
    assert_close(np.diag(sim), np.ones(6))
    assert_close(sim, sim.T)
    assert_close(similarity_matrix(table.tolist(), "dot"), table @ table.T)


def test_learned_similarity_with_step():
    table = np.random.default_rng(3).standard_normal((20, 8))
    r = learned_similarity(table.tolist(), step=4)
    assert r["positions"] == [0, 4, 8, 12, 16] and r["measure"] == "cosine"
    assert_close(r["similarity"], similarity_matrix(table[::4].tolist()))
    assert_plain(r)


def test_sinusoidal_view_is_consistent():
    v = sinusoidal_view(n_positions=12, d_model=10, p=2, q=9, k=3)
    assert v["table"] == sinusoidal_table(12, 10)
    assert v["similarity"] == similarity_matrix(v["table"], "dot")
    assert v["readout"] == relative_dot(2, 9, 3, 10)
    assert v["frequencies"] == frequencies(10)
    assert_plain(v)


# ---------------------------------------------------------------------------
# bad input

BAD_INPUTS = [
    pytest.param(sinusoidal_table, dict(n_positions=4, d_model=5), "even", id="odd-width"),
    pytest.param(sinusoidal_table, dict(n_positions=0, d_model=4), "n_positions", id="no-positions"),
    pytest.param(sinusoidal_table, dict(n_positions=4, d_model=4, base=1.0), "greater than 1", id="base-1"),
    pytest.param(sinusoidal_table, dict(n_positions=4.5, d_model=4), "whole number", id="fractional"),
    pytest.param(relative_dot, dict(p=-1, q=2), "p must be between 0", id="negative-position"),
    pytest.param(relative_dot, dict(p=3, q=2, k=-3), "k must be between -2", id="shift-below-zero"),
    pytest.param(shift_check, dict(position=2, k=-5, d_model=4), "k must be between -2", id="shift-check"),
    pytest.param(similarity_matrix, dict(table=[[0.0, 0.0], [1.0, 0.0]]), "all zeros", id="zero-row"),
    pytest.param(similarity_matrix, dict(table=[1.0, 2.0]), "table", id="flat"),
    pytest.param(similarity_matrix, dict(table=[[1.0, 2.0]], measure="l2"), "measure", id="measure"),
    pytest.param(learned_similarity, dict(table=[[1.0], [2.0]], step=3), "step", id="step"),
    pytest.param(sinusoidal_view, dict(n_positions=129), "n_positions", id="view-too-long"),
    pytest.param(sinusoidal_view, dict(d_model=258), "d_model", id="view-too-wide"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD_INPUTS)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)


# ---------------------------------------------------------------------------
# PyTorch references


def test_table_matches_torch_tutorial_formula(torch):
    n, d = 100, 48
    position = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    assert_close(sinusoidal_table(n, d), pe.numpy(), tol=1e-10)


def test_table_matches_distilbert_initialiser(torch):
    from transformers.models.distilbert.modeling_distilbert import _create_sinusoidal_embeddings

    n, d = 64, 32
    out = torch.empty(n, d)
    _create_sinusoidal_embeddings(n_pos=n, dim=d, out=out)  # float32 tensor
    assert_close(sinusoidal_table(n, d), out.numpy(), tol=1e-6)


def test_cosine_matches_torch(torch):
    table = torch.randn(10, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ref = torch.nn.functional.cosine_similarity(table[:, None, :], table[None, :, :], dim=-1)
    assert_close(similarity_matrix(table.tolist()), ref.numpy())


def test_learned_similarity_of_a_gpt2_wpe_table(torch):
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_positions=64, n_embd=32, n_layer=1, n_head=2, vocab_size=10))
    wpe = model.wpe.weight.detach().double()
    r = learned_similarity(wpe.tolist(), step=8)
    kept = wpe[::8]
    ref = torch.nn.functional.cosine_similarity(kept[:, None, :], kept[None, :, :], dim=-1)
    assert r["positions"] == list(range(0, 64, 8))
    assert_close(r["similarity"], ref.numpy())
