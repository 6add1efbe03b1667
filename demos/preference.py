"""Learning from preferences: the reward model, the KL-regularized objective, PPO's clipped
update and DPO, on numbers small enough to follow.

A person compares two answers to one prompt and picks one, the *chosen* y_w over the
*rejected* y_l. The Bradley-Terry model turns a reward r into the probability of that choice,

    P(y_w preferred to y_l) = sigmoid(r(y_w) - r(y_l)),

so a reward model is trained by `reward_model_loss`, -log sigmoid(r_w - r_l) (Ouyang et al.,
2022). RLHF then tunes the policy pi to maximize the reward while staying close to the model it
started from, pi_ref:

    maximize  E_{y ~ pi}[r(y)] - beta KL(pi || pi_ref),

whose best policy is known in closed form (`optimal_policy`): pi*(y) = pi_ref(y) exp(r(y) / beta) / Z.
PPO (Schulman et al., 2017) climbs toward it step by step, each step clipped (`ppo_objective`).
DPO (Rafailov et al., 2023) skips the reward model: solving the closed form for r gives
r(y) = beta log(pi(y) / pi_ref(y)) + beta log Z, and Z cancels in a difference, so the
preference data train the policy directly (`dpo_loss`).
"""

import numpy as np

from demos._checks import as_array as _as_array
from demos._checks import as_number_between as _between

MAX_ANSWERS = 1000


def _log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def reward_model_loss(chosen: list, rejected: list) -> dict:
    """The Bradley-Terry loss of a reward model on preference pairs.

    Args:
        chosen: r(y_w) for each pair.
        rejected: r(y_l) for each pair.

    Returns:
        loss (the mean of -log sigmoid(r_w - r_l)), prob_chosen (sigmoid(r_w - r_l) per pair),
        accuracy (share of pairs with r_w > r_l), grad_chosen (d loss / d r_w per pair; the
        gradient for r_l is its negative).

    Examples:
        >>> round(reward_model_loss([0.0], [0.0])["loss"], 4)  # no preference yet: ln 2
        0.6931
    """
    won, lost = _as_array("chosen", chosen).ravel(), _as_array("rejected", rejected).ravel()
    if won.shape != lost.shape or not won.size:
        raise ValueError("chosen and rejected must hold one reward per pair, as many of each.")
    margin = won - lost
    prob = 1.0 / (1.0 + np.exp(-margin))
    return {
        "loss": float(-_log_sigmoid(margin).mean()),
        "prob_chosen": prob.tolist(),
        "accuracy": float((margin > 0).mean()),
        "grad_chosen": (-(1.0 - prob) / margin.size).tolist(),
    }


def optimal_policy(ref_probs: list, rewards: list, beta: float = 1.0) -> dict:
    """The policy that maximizes E[r] - beta KL(pi || pi_ref) over a handful of answers.

    Args:
        ref_probs: pi_ref over the answers (positive; normalized here).
        rewards: r for each answer.
        beta: How much staying close to pi_ref counts (small: chase the reward).

    Returns:
        probs (pi*), expected_reward, kl (KL(pi* || pi_ref) in nats), objective, and
        implicit_reward (beta log(pi* / pi_ref), which is r minus the same constant for every answer).

    Examples:
        >>> optimal_policy([0.5, 0.5], [1.0, 0.0], beta=1e-3)["probs"][0] > 0.999
        True
    """
    ref = _as_array("ref_probs", ref_probs).ravel()
    r = _as_array("rewards", rewards).ravel()
    if ref.shape != r.shape or not 1 <= ref.size <= MAX_ANSWERS or np.any(ref <= 0):
        raise ValueError(f"ref_probs (all above 0) and rewards must give one number per answer, 1 to {MAX_ANSWERS} answers.")
    beta = _between("beta", beta, 1e-6, 1e6)
    ref = ref / ref.sum()
    logits = np.log(ref) + r / beta
    log_pi = logits - np.logaddexp.reduce(logits)  # log pi*, normalized: pi_ref exp(r / beta) / Z
    pi = np.exp(log_pi)
    kl = float(np.sum(pi * (log_pi - np.log(ref))))
    expected = float(pi @ r)
    return {
        "probs": pi.tolist(),
        "expected_reward": expected,
        "kl": kl,
        "objective": expected - beta * kl,
        "implicit_reward": (beta * (log_pi - np.log(ref))).tolist(),
    }


def ppo_objective(ratio: list, advantage: list, clip: float = 0.2) -> dict:
    """PPO's clipped surrogate, per sample: min(rho A, clip(rho, 1 - eps, 1 + eps) A), where rho =
    pi(y) / pi_old(y) and A the advantage. Beyond the clip the objective is flat in rho, so a
    step gains nothing by moving the policy further from the one that sampled the data.

    Args:
        ratio: rho per sample (above 0).
        advantage: A per sample.
        clip: eps.

    Returns:
        objective (per sample), mean, and clipped (whether the clip decided, so the sample's
        gradient with respect to rho is 0).

    Examples:
        >>> ppo_objective([1.5, 0.5], [1.0, 1.0], 0.2)["objective"]
        [1.2, 0.5]
    """
    rho, adv = _as_array("ratio", ratio).ravel(), _as_array("advantage", advantage).ravel()
    if rho.shape != adv.shape or not rho.size or np.any(rho <= 0):
        raise ValueError("ratio (all above 0) and advantage must give one number per sample.")
    eps = _between("clip", clip, 0.0, 1.0)
    unclipped, clipped = rho * adv, np.clip(rho, 1 - eps, 1 + eps) * adv
    out = np.minimum(unclipped, clipped)
    return {"objective": out.tolist(), "mean": float(out.mean()), "clipped": (clipped < unclipped).tolist()}


def dpo_loss(policy_chosen: list, policy_rejected: list, ref_chosen: list, ref_rejected: list, beta: float = 0.1) -> dict:
    """DPO's loss on preference pairs, from the log-probabilities of whole answers.

    loss = -log sigmoid(beta [(log pi(y_w) - log pi_ref(y_w)) - (log pi(y_l) - log pi_ref(y_l))])

    Args:
        policy_chosen: log pi(y_w) per pair (the sum of the answer's token log-probabilities).
        policy_rejected: log pi(y_l) per pair.
        ref_chosen: log pi_ref(y_w) per pair.
        ref_rejected: log pi_ref(y_l) per pair.
        beta: The same beta as in the KL-regularized objective.

    Returns:
        loss (mean over pairs), reward_chosen and reward_rejected (the implicit rewards beta log
        pi / pi_ref), grad_chosen (d loss / d log pi(y_w) per pair; that of log pi(y_l) is its
        negative), accuracy (share of pairs whose chosen answer has the larger implicit reward).

    Examples:
        >>> round(dpo_loss([-5.0], [-5.0], [-5.0], [-5.0])["loss"], 4)  # the policy is pi_ref: ln 2
        0.6931
    """
    arrays = [
        _as_array(n, v).ravel()
        for n, v in (("policy_chosen", policy_chosen), ("policy_rejected", policy_rejected), ("ref_chosen", ref_chosen), ("ref_rejected", ref_rejected))
    ]
    if len({a.shape for a in arrays}) != 1 or not arrays[0].size:
        raise ValueError("The four log-probability lists must hold one number per pair, as many of each.")
    pw, pl, rw, rl = arrays
    beta = _between("beta", beta, 1e-6, 1e6)
    reward_w, reward_l = beta * (pw - rw), beta * (pl - rl)
    margin = reward_w - reward_l
    return {
        "loss": float(-_log_sigmoid(margin).mean()),
        "reward_chosen": reward_w.tolist(),
        "reward_rejected": reward_l.tolist(),
        "grad_chosen": (-beta / (1.0 + np.exp(margin)) / margin.size).tolist(),
        "accuracy": float((margin > 0).mean()),
    }
