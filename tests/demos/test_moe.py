"""demos.moe: router, top-k gates, the Switch load-balancing loss and routing collapse.

References: an independent PyTorch formulation of routing (torch.softmax,
torch.topk, gates as a softmax over the selected logits), a dense PyTorch MoE
(every expert computed, then masked and weighted), the toy training dynamic
rebuilt with torch autograd (f held constant, as the lecture's stop-gradient
describes), and properties: gates sum to 1, exactly k distinct experts per token,
N · Σ f_i P_i = 1 for uniform routing and N for total collapse.
"""

import math
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import NUMBERS, TOL
from demo_checks import assert_close as close
from demo_checks import assert_plain as check_plain
from demos.moe import load_balancing_loss, moe_layer, parameter_counts, route, routing_collapse

assert_plain = partial(check_plain, leaves=NUMBERS)


def random_problem(T, d, n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((T, d)), rng.standard_normal((d, n))


# ---------------------------------------------------------------------------
# routing


@pytest.mark.parametrize("T, d, n, k", [(5, 4, 8, 2), (10, 3, 4, 1), (7, 6, 16, 4), (3, 2, 3, 3)])
def test_route_matches_torch(T, d, n, k):
    torch = pytest.importorskip("torch")
    x, w = random_problem(T, d, n, seed=T + n)
    r = route(x.tolist(), w.tolist(), top_k=k)
    logits = torch.tensor(x) @ torch.tensor(w)
    probs = torch.softmax(logits, dim=-1)
    top_p, top_i = torch.topk(probs, k, dim=-1)
    gates = torch.softmax(torch.gather(logits, 1, top_i), dim=-1)  # softmax over the chosen logits
    close(r["logits"], logits.numpy())
    close(r["probs"], probs.numpy())
    assert r["experts"] == top_i.tolist()
    close(r["gates"], gates.numpy())
    counts = torch.bincount(top_i.flatten(), minlength=n)
    assert r["tokens_per_expert"] == counts.tolist()
    f, P = counts.double() / (T * k), probs.mean(dim=0)
    close(r["fraction_routed"], f.numpy())
    close(r["mean_prob"], P.numpy())
    assert r["aux_loss"] == pytest.approx(float(n * (f * P).sum()), abs=TOL)
    assert_plain(r)


@given(st.integers(1, 12), st.integers(1, 6), st.integers(2, 10), st.data())
@settings(max_examples=40, deadline=None)
def test_route_properties(T, d, n, data):
    k = data.draw(st.integers(1, n))
    x, w = random_problem(T, d, n, seed=data.draw(st.integers(0, 1000)))
    r = route(x.tolist(), w.tolist(), top_k=k)
    for experts, gates, probs in zip(r["experts"], r["gates"], r["probs"]):
        assert len(experts) == len(set(experts)) == k  # exactly k different experts
        assert sum(gates) == pytest.approx(1.0, abs=TOL) and min(gates) >= 0
        assert gates == sorted(gates, reverse=True)
        if k < n:  # every chosen expert is at least as probable as every other one
            assert min(probs[e] for e in experts) >= max(p for e, p in enumerate(probs) if e not in experts)
    assert sum(r["fraction_routed"]) == pytest.approx(1.0, abs=TOL)
    assert sum(r["tokens_per_expert"]) == T * k


def test_ties_go_to_the_lower_expert_index():
    r = route([[0.0, 0.0]], [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]], top_k=2)  # all logits 0
    assert r["experts"] == [[0, 1]] and r["gates"] == [[0.5, 0.5]]


# ---------------------------------------------------------------------------
# the load-balancing loss


@pytest.mark.parametrize("n", [2, 4, 8, 64])
@pytest.mark.parametrize("k", [1, 2])
def test_aux_loss_is_one_for_uniform_routing_and_n_for_collapse(n, k):
    if k >= n:
        return
    T = 4 * n  # tokens spread evenly: token t prefers expert t mod n (slightly)
    probs = np.full((T, n), 1.0 / n)
    probs[np.arange(T), np.arange(T) % n] += 1e-9
    probs /= probs.sum(axis=1, keepdims=True)
    uniform = load_balancing_loss(probs.tolist(), top_k=1)
    assert uniform["fraction_routed"] == pytest.approx([1.0 / n] * n, abs=TOL)
    assert uniform["loss"] == pytest.approx(1.0, abs=1e-8)
    collapsed = np.zeros((T, n))
    collapsed[:, 0] = 1.0
    assert load_balancing_loss(collapsed.tolist(), top_k=1)["loss"] == pytest.approx(n, abs=TOL)
    unscaled = load_balancing_loss(probs.tolist(), top_k=k)["loss"]
    assert load_balancing_loss(probs.tolist(), top_k=k, alpha=0.01)["loss"] == pytest.approx(0.01 * unscaled, abs=TOL)


@given(st.integers(2, 8), st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8))
@settings(max_examples=60, deadline=None)
def test_aux_loss_is_at_least_one_when_probabilities_match_the_dispatch(n, raw):
    # One-hot router outputs make P = f, and then N * sum f_i^2 >= 1 (Cauchy-Schwarz), = 1 only if uniform.
    T = len(raw)
    choices = [min(int(v * n), n - 1) for v in raw]
    probs = np.eye(n)[choices]
    out = load_balancing_loss(probs.tolist())
    f = np.bincount(choices, minlength=n) / T
    assert out["loss"] == pytest.approx(n * float((f**2).sum()), abs=TOL)
    assert out["loss"] >= 1.0 - TOL


def test_aux_loss_is_not_a_lower_bound_in_general():
    # Three tokens barely prefer expert 0, one strongly prefers expert 1:
    # f = (3/4, 1/4), P = (0.375, 0.625), 2 * (0.28125 + 0.15625) = 0.875 < 1.
    probs = [[0.5 + 1e-12, 0.5 - 1e-12]] * 3 + [[0.0, 1.0]]
    out = load_balancing_loss(probs)
    assert out["fraction_routed"] == [0.75, 0.25]
    assert out["loss"] == pytest.approx(0.875, abs=1e-9)


def test_aux_loss_matches_a_torch_formula():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    probs = torch.softmax(torch.tensor(rng.standard_normal((20, 6))), dim=-1)
    for k in (1, 2, 3):
        idx = torch.topk(probs, k, dim=-1).indices
        f = torch.nn.functional.one_hot(idx, 6).sum(dim=(0, 1)).double() / (20 * k)
        expected = 6 * (f * probs.mean(0)).sum()
        out = load_balancing_loss(probs.tolist(), top_k=k, alpha=0.5)
        assert out["loss"] == pytest.approx(0.5 * float(expected), abs=TOL)
        assert out["uniform_loss"] == 0.5


# ---------------------------------------------------------------------------
# a whole layer


@pytest.mark.parametrize("k, shared", [(1, 0), (2, 0), (2, 1), (3, 2)])
def test_moe_layer_matches_a_dense_torch_formulation(k, shared):
    torch = pytest.importorskip("torch")
    T, d, n = 6, 4, 5
    rng = np.random.default_rng(k * 10 + shared)
    x, w = rng.standard_normal((T, d)), rng.standard_normal((d, n))
    experts = rng.standard_normal((n, d, d))
    shared_w = rng.standard_normal((shared, d, d)) if shared else None
    got = moe_layer(x.tolist(), w.tolist(), experts.tolist(), top_k=k, w_shared=None if shared_w is None else shared_w.tolist())
    xt = torch.tensor(x)
    logits = xt @ torch.tensor(w)
    top = torch.topk(logits, k, dim=-1)  # same order as the probabilities
    gate = torch.zeros(T, n, dtype=torch.float64).scatter(1, top.indices, torch.softmax(top.values, dim=-1))
    every = torch.einsum("td,nde->tne", xt, torch.tensor(experts))  # (T, N, d): all experts, then mask
    expected = (gate[:, :, None] * every).sum(dim=1)
    if shared:
        expected = expected + torch.einsum("td,sde->te", xt, torch.tensor(shared_w))
    close(got["output"], expected.numpy(), tol=1e-11)
    assert got["experts"] == top.indices.tolist()
    assert_plain(got)


# ---------------------------------------------------------------------------
# routing collapse


def torch_collapse(n, k, steps, balance, alpha, T, seed):
    """The documented dynamic, with the gradient taken by torch autograd."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    X = torch.tensor(rng.standard_normal((T, 16)))
    W = torch.tensor(0.5 * rng.standard_normal((16, n)), requires_grad=True)
    trained = torch.zeros(n, dtype=torch.float64)
    loads = []
    for _ in range(steps):
        skill = trained / (trained + 3.0)
        p = torch.softmax(X @ W, dim=-1)
        chosen = torch.topk(p, k, dim=-1).indices
        f = torch.bincount(chosen.flatten(), minlength=n).double() / (T * k)  # a constant: no gradient
        loads.append(f.tolist())
        loss = -(p * skill).sum() / T
        if balance:
            loss = loss + alpha * n * (f * p.mean(dim=0)).sum()
        loss.backward()
        with torch.no_grad():
            W -= 4.0 * W.grad
            W.grad.zero_()
        trained = trained + k * f
    return loads


@pytest.mark.parametrize(
    "n, k, balance, alpha, T, seed", [(8, 1, False, 0.5, 64, 0), (8, 1, True, 0.5, 64, 0), (6, 2, True, 1.0, 32, 3), (4, 1, False, 0.5, 16, 7)]
)
def test_routing_collapse_matches_torch_autograd(n, k, balance, alpha, T, seed):
    got = routing_collapse(num_experts=n, top_k=k, steps=25, balance=balance, alpha=alpha, num_tokens=T, seed=seed)
    close(got["load"], torch_collapse(n, k, 25, balance, alpha, T, seed), tol=0)  # the same routing decisions
    assert_plain(got)


@pytest.mark.parametrize("seed", range(6))
def test_without_balancing_the_load_collapses_and_with_it_stays_even(seed):
    free = routing_collapse(seed=seed, steps=60, balance=False)
    balanced = routing_collapse(seed=seed, steps=60, balance=True)
    n = 8
    assert free["max_load"][-1] >= 2.5 / n  # one expert takes at least 2.5 times its fair share
    assert free["active_experts"][-1] <= 5  # and several experts get no token at all
    assert max(balanced["max_load"][10:]) <= 2.0 / n
    assert balanced["active_experts"][-1] == n
    assert free["aux_loss"][-1] > 1.9 and balanced["aux_loss"][-1] == pytest.approx(1.0, abs=0.05)
    assert len(free["load"]) == 60 and all(sum(f) == pytest.approx(1.0, abs=TOL) for f in free["load"])
    assert free["uniform_load"] == 1 / n


def test_routing_collapse_is_deterministic():
    assert routing_collapse(seed=5, steps=12) == routing_collapse(seed=5.0, steps=12.0)
    assert routing_collapse(seed=5, steps=12) != routing_collapse(seed=6, steps=12)
    assert routing_collapse(balance=True, alpha=0.0) == routing_collapse(balance=False)


# ---------------------------------------------------------------------------
# shared and fine-grained experts


def test_parameter_counts():
    p = parameter_counts(d_model=768, d_ff=3072, num_experts=8, top_k=2)
    per = 2 * 768 * 3072
    assert p["params_per_expert"] == p["dense_ffn_params"] == per
    assert p["total_params"] == 8 * per + 768 * 8
    assert p["active_params"] == 2 * per + 768 * 8
    assert p["log10_combinations"] == pytest.approx(math.log10(28), abs=TOL)  # C(8, 2)
    fine = parameter_counts(d_model=768, d_ff=3072, num_experts=8, top_k=2, granularity=4)
    assert (fine["routed_experts"], fine["active_routed"], fine["expert_hidden"]) == (32, 8, 768)
    # Splitting experts keeps the expert parameters and the per-token compute, and multiplies the choices.
    assert fine["total_params"] - 768 * 32 == p["total_params"] - 768 * 8
    assert fine["active_params"] - 768 * 32 == p["active_params"] - 768 * 8
    assert fine["log10_combinations"] == pytest.approx(math.log10(math.comb(32, 8)), abs=1e-9)
    shared = parameter_counts(d_model=768, d_ff=3072, num_experts=8, top_k=2, num_shared=1)
    assert shared["total_params"] - p["total_params"] == shared["active_params"] - p["active_params"] == per
    assert_plain(p)


def test_frontier_scale_combinations_from_the_lecture():
    # 256 routed experts with 8 active: C(256, 8) ~ 4.1e14 possible expert sets per token.
    p = parameter_counts(d_model=1024, d_ff=1024, num_experts=256, top_k=8)
    assert p["log10_combinations"] == pytest.approx(math.log10(math.comb(256, 8)), abs=1e-9)
    assert p["active_fraction"] < 8 / 256 + 0.01


def test_lab_page_quotes_the_module():
    path = Path(__file__).resolve().parents[2] / "docs" / "labs" / "moe.md"
    if not path.exists():
        pytest.skip("the textbook's pages are not next to the tests")
    page = path.read_text(encoding="utf-8")
    for kwargs in (dict(), dict(granularity=4), dict(granularity=4, num_shared=1)):
        p = parameter_counts(**kwargs)
        combos = f"{round(10 ** p['log10_combinations']):,}"
        assert f"| {p['total_params']:,} | {p['active_params']:,} | {combos} |" in page
    assert load_balancing_loss([[0.5 + 1e-12, 0.5 - 1e-12]] * 3 + [[0.0, 1.0]])["loss"] == pytest.approx(0.875)
    assert "= 0.875" in page


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (route, dict(x=[[1.0, 2.0]], w_router=[[1.0, 2.0]], top_k=1), "w_router must have d = 2 rows"),
    (route, dict(x=[[1.0]], w_router=[[1.0, 2.0]], top_k=3), "top_k must be between 1 and 2"),
    (route, dict(x=[[1.0]], w_router=[[1.0, 2.0]], top_k=0), "top_k"),
    (route, dict(x=[1.0], w_router=[[1.0]]), "2 dimensions"),
    (route, dict(x=[["a"]], w_router=[[1.0]]), "contains 'a'"),
    (route, dict(x=[[math.nan]], w_router=[[1.0]]), "NaN"),
    (load_balancing_loss, dict(probs=[[0.5, 0.6]]), "sum to 1"),
    (load_balancing_loss, dict(probs=[[1.5, -0.5]]), "non-negative"),
    (load_balancing_loss, dict(probs=[[0.5, 0.5]], alpha=-1), "alpha must be >= 0"),
    (moe_layer, dict(x=[[1.0]], w_router=[[1.0, 1.0]], w_experts=[[[1.0]]]), r"w_router must have shape \(1, 1\)"),
    (moe_layer, dict(x=[[1.0]], w_router=[[1.0]], w_experts=[[[1.0, 2.0]]], top_k=1), r"every expert matrix must be \(1, 1\)"),
    (moe_layer, dict(x=[[1.0]], w_router=[[1.0]], w_experts=[[[1.0]]], top_k=1, w_shared=[[[1.0, 1.0]]]), "shared expert"),
    (routing_collapse, dict(num_experts=1), "num_experts"),
    (routing_collapse, dict(num_experts=4, top_k=4), "top_k must be between 1 and 3"),
    (routing_collapse, dict(steps=1000), "steps"),
    (routing_collapse, dict(balance="yes"), "true or false"),
    (routing_collapse, dict(alpha=20), "alpha"),
    (routing_collapse, dict(num_tokens=2), "num_tokens"),
    (parameter_counts, dict(d_ff=3072, granularity=5), "must divide d_ff"),
    (parameter_counts, dict(num_experts=4, top_k=5), "top_k"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)
