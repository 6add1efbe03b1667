"""demos.training: a run's steps against the same loop in PyTorch (gpt_reference.py, torch.optim.AdamW,
clip_grad_norm_), its determinism, the induction data, and its messages for bad settings."""

import sys

import numpy as np
import pytest

from demos import optim, training
from gpt_reference import torch_loss


@pytest.mark.parametrize("task, settings", [("text", {"n_layer": 1, "n_embd": 16}), ("induction", {"n_layer": 2, "n_embd": 16})])
def test_ten_steps_follow_pytorch(torch, task, settings):
    """Loss of each of ten steps and the weights after them, against PyTorch doing the same loop."""
    run = training.start(task, seed=3, steps=10, warmup=3, lr=1e-2, **settings)
    session = training._SESSIONS[run["session"]]
    tensors = {k: torch.tensor(v.copy(), dtype=torch.float64, requires_grad=True) for k, v in session.params.items()}
    groups = [
        {"params": [t for t in tensors.values() if t.ndim >= 2], "weight_decay": 0.1},
        {"params": [t for t in tensors.values() if t.ndim < 2], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    task_data = training.Task(task, 3)
    rng = np.random.default_rng([3, 0])
    records = training.steps(run["session"], 10)["records"]
    for step, record in enumerate(records):
        idx, targets, _ = task_data.batch(rng, session.batch)
        loss, _ = torch_loss(torch, tensors, session.cfg, idx, targets)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(tensors.values()), 1.0)
        for group in opt.param_groups:
            group["lr"] = optim.lr_at(step, 1e-2, 3, 10, 1e-3)
        opt.step()
        assert record["loss"] == pytest.approx(loss.item(), rel=1e-9), step
    for name, t in tensors.items():
        np.testing.assert_allclose(session.params[name], t.detach().numpy(), rtol=1e-6, atol=1e-9, err_msg=name)
    training.stop(run["session"])


def test_the_same_seed_gives_the_same_curve():
    a = training.train("text", seed=5, steps=6, n_layer=1, n_embd=8)
    b = training.train("text", seed=5, steps=6, n_layer=1, n_embd=8)
    c = training.train("text", seed=6, steps=6, n_layer=1, n_embd=8)
    assert [r["loss"] for r in a["records"]] == [r["loss"] for r in b["records"]]
    assert [r["loss"] for r in a["records"]] != [r["loss"] for r in c["records"]]


def test_induction_sequences_repeat_a_stretch():
    """Second-copy targets are the first copy's tokens, one stretch-length back; held-out: [BOS, 8, same 8]."""
    task = training.Task("induction", 0)
    idx, targets, (first, second) = task.batch(np.random.default_rng(1), 50)
    seq = np.concatenate([idx[:, :1], targets], axis=1)
    assert (idx[:, 0] == 0).all() and (seq[:, 1:] > 0).all()
    for row in range(50):
        (pos,) = np.nonzero(second[row])  # target indices t: predicting seq[t + 1]
        h = len(pos) + 1
        assert training.INDUCTION_REPEAT[0] <= h <= training.INDUCTION_REPEAT[1]
        assert (seq[row, pos + 1] == seq[row, pos + 1 - h]).all()
        assert first[row].sum() == h - 1 and not (first[row] & second[row]).any()
    held_idx, _, (_, held_second) = task.eval
    assert held_idx.shape[1] == 16 and (held_idx[:, 9:] == held_idx[:, 1:8]).all()  # inputs: all of it but the last token
    assert held_second[:, 9:].all() and not held_second[:, :9].any()


def test_induction_scores_read_the_copy_offset():
    """A head that attends exactly to t - half + 1 scores 1, a uniform head about 1/t."""
    half, T = 4, 8  # [BOS, a b c d, a b c] as input
    exact = np.zeros((1, 2, T, T))
    for t in range(T):
        exact[0, :, t, max(t - half + 1, 0)] = 1.0
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    scores = training.induction_scores([exact, np.broadcast_to(uniform, (1, 2, T, T))], half)
    assert scores[0] == [1.0, 1.0]
    assert scores[1][0] == pytest.approx(np.mean([1 / (t + 1) for t in range(half + 1, T)]))


def test_a_text_run_writes_its_own_characters():
    run = training.start("text", seed=0, steps=5, n_layer=1, n_embd=8)
    training.steps(run["session"], 5)
    out = training.sample(run["session"], prompt="The ", length=30)
    assert out["text"].startswith("The ") and len(out["text"]) == 34
    assert set(out["text"]) <= set(run["vocab"])
    assert training.stop(run["session"]) == {"stopped": True}
    with pytest.raises(ValueError, match="gone"):
        training.steps(run["session"], 1)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"task": "poetry"}, "task must be one of"),
        ({"n_layer": 9}, "number of layers"),
        ({"n_embd": 33}, "multiple of the number of heads"),
        ({"lr": 5.0}, "learning rate"),
        ({"steps": 0}, "number of steps"),
        ({"warmup": 10, "steps": 5}, "warm-up"),
    ],
)
def test_bad_settings_are_refused_in_words(settings, message):
    with pytest.raises(ValueError, match=message):
        training.start(**settings)


@pytest.mark.skipif(sys.platform == "emscripten", reason="600 steps; the same numbers in CPython, and the browser test compares the curves")
def test_the_text_task_overfits_as_its_page_says():
    """docs/training/in-your-browser.md: with the defaults, the held-out loss is lowest within the
    first 200 steps and then rises, while the training loss ends below one nat."""
    run = training.train("text", seed=0, eval_every=50)
    held_out = [(e["step"], e["eval_loss"]) for e in run["evals"]]
    best_step, best = min(held_out, key=lambda x: x[1])
    assert best_step <= 200, held_out
    assert held_out[-1][1] > best + 0.5, held_out
    assert np.mean([r["loss"] for r in run["records"][-20:]]) < 1.0
    assert run["start"]["eval"]["eval_loss"] == pytest.approx(np.log(34), abs=0.1)
    assert len(training.TEXT) == 816 and len(run["start"]["vocab"]) == 34
    assert run["start"]["parameters"] == 27_584
