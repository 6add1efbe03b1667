"""demos.preference against PyTorch: the reward model's and DPO's losses and gradients
(autograd), PPO's clipped surrogate and its zero gradient past the clip, and the closed-form
best policy against gradient ascent on the KL-regularized objective."""

import numpy as np
import pytest

from demos import preference


def test_reward_model_loss_and_gradient_match_autograd(torch):
    rng = np.random.default_rng(0)
    won, lost = rng.normal(size=16), rng.normal(size=16)
    rw = torch.tensor(won, requires_grad=True)
    loss = -torch.nn.functional.logsigmoid(rw - torch.tensor(lost)).mean()
    loss.backward()
    out = preference.reward_model_loss(won.tolist(), lost.tolist())
    assert out["loss"] == pytest.approx(loss.item(), rel=1e-12)
    np.testing.assert_allclose(out["grad_chosen"], rw.grad.numpy(), rtol=1e-10)
    assert out["accuracy"] == np.mean(won > lost)


def test_dpo_loss_and_gradient_match_autograd(torch):
    rng = np.random.default_rng(1)
    pw, pl, rw, rl = (rng.normal(-20, 3, size=8) for _ in range(4))
    t = torch.tensor(pw, requires_grad=True)
    beta = 0.1
    margin = beta * ((t - torch.tensor(rw)) - (torch.tensor(pl) - torch.tensor(rl)))
    loss = -torch.nn.functional.logsigmoid(margin).mean()
    loss.backward()
    out = preference.dpo_loss(pw.tolist(), pl.tolist(), rw.tolist(), rl.tolist(), beta)
    assert out["loss"] == pytest.approx(loss.item(), rel=1e-12)
    np.testing.assert_allclose(out["grad_chosen"], t.grad.numpy(), rtol=1e-10)


def test_ppo_objective_and_its_gradient_match_autograd(torch):
    rho = np.array([0.5, 0.9, 1.0, 1.1, 1.5, 0.5, 1.5])
    adv = np.array([1.0, 1.0, -2.0, 1.0, 1.0, -1.0, -1.0])
    r = torch.tensor(rho, requires_grad=True)
    a = torch.tensor(adv)
    objective = torch.min(r * a, torch.clamp(r, 0.8, 1.2) * a)
    objective.sum().backward()
    out = preference.ppo_objective(rho.tolist(), adv.tolist(), 0.2)
    np.testing.assert_allclose(out["objective"], objective.detach().numpy(), rtol=1e-12)
    assert out["clipped"] == (r.grad.numpy() == 0).tolist()  # where the clip decides, no gradient


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_closed_form_policy_is_what_gradient_ascent_finds(torch, beta):
    ref = np.array([0.4, 0.3, 0.2, 0.1])
    rewards = np.array([0.0, 1.0, 0.5, 2.0])
    logits = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([logits], lr=0.05)
    for _ in range(3000):
        log_pi = torch.log_softmax(logits, 0)
        pi = log_pi.exp()
        objective = (pi * torch.tensor(rewards)).sum() - beta * (pi * (log_pi - torch.log(torch.tensor(ref)))).sum()
        opt.zero_grad()
        (-objective).backward()
        opt.step()
    out = preference.optimal_policy(ref.tolist(), rewards.tolist(), beta)
    np.testing.assert_allclose(out["probs"], torch.softmax(logits, 0).detach().numpy(), atol=1e-6)
    assert out["objective"] == pytest.approx(objective.item(), abs=1e-9)
    # DPO's premise: beta log(pi* / pi_ref) is the reward up to one constant for every answer
    shift = np.array(out["implicit_reward"]) - rewards
    np.testing.assert_allclose(shift, shift[0], atol=1e-12)


def test_small_beta_chases_the_reward_and_large_beta_stays_home():
    ref, rewards = [0.7, 0.2, 0.1], [0.0, 0.0, 1.0]
    assert preference.optimal_policy(ref, rewards, 0.01)["probs"][2] > 0.999
    far = preference.optimal_policy(ref, rewards, 100.0)
    np.testing.assert_allclose(far["probs"], ref, atol=0.01)
    assert far["kl"] < 1e-4


def test_bad_input_is_refused_in_words():
    with pytest.raises(ValueError, match="one reward per pair"):
        preference.reward_model_loss([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="above 0"):
        preference.optimal_policy([0.5, 0.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="beta"):
        preference.dpo_loss([0.0], [0.0], [0.0], [0.0], beta=0.0)
