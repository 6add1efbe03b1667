"""demos.optim against PyTorch: AdamW (torch.optim.AdamW with GPT-3's no-decay groups), the
warm-up + cosine schedule (LinearLR then CosineAnnealingLR), clipping (clip_grad_norm_), and the
four optimizers of `compare` (torch.optim.SGD, SGD with momentum, Adam, AdamW)."""

import math

import numpy as np
import pytest

from demos import optim

SCHEDULES = [  # (max_lr, warmup, max_steps, min_lr)
    (6e-4, 10, 100, 6e-5),
    (1.0, 1, 20, 0.0),
    (3e-3, 0, 50, 3e-4),
]


@pytest.mark.parametrize("max_lr, warmup, max_steps, min_lr", SCHEDULES)
def test_schedule_matches_torch_linear_then_cosine(torch, max_lr, warmup, max_steps, min_lr):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=max_lr)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max_steps - warmup, eta_min=min_lr)
    if warmup:
        linear = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, total_iters=max(warmup - 1, 1) if warmup > 1 else 0)
        scheduler = torch.optim.lr_scheduler.SequentialLR(opt, [linear, cosine], milestones=[warmup])
    else:
        scheduler = cosine
    for step in range(max_steps):
        assert optim.lr_at(step, max_lr, warmup, max_steps, min_lr) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-9, abs=1e-15), step
        opt.step()
        scheduler.step()
    assert optim.lr_at(max_steps + 5, max_lr, warmup, max_steps, min_lr) == min_lr


def params_and_grads(seed):
    rng = np.random.default_rng(seed)
    shapes = {"w": (4, 3), "b": (3,), "ln.weight": (3,), "emb": (5, 3)}
    return {k: rng.normal(size=s) for k, s in shapes.items()}, [{k: rng.normal(size=s) for k, s in shapes.items()} for _ in range(10)]


def test_ten_adamw_steps_match_torch(torch):
    """GPT-3's settings (betas 0.9, 0.95, wd 0.1 on matrices only), a learning rate that changes each step."""
    params, grads = params_and_grads(0)
    tensors = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in params.items()}
    groups = [
        {"params": [t for k, t in tensors.items() if t.ndim >= 2], "weight_decay": 0.1},
        {"params": [t for k, t in tensors.items() if t.ndim < 2], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    state = {}
    for step, g in enumerate(grads):
        lr = optim.lr_at(step, 1e-2, 3, 10, 1e-3)
        optim.adamw_step(params, g, state, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
        for group in opt.param_groups:
            group["lr"] = lr
        for k, t in tensors.items():
            t.grad = torch.tensor(g[k])
        opt.step()
        for k, t in tensors.items():
            np.testing.assert_allclose(params[k], t.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=f"{k} after step {step}")


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clipping_matches_torch(torch, max_norm):
    _, grads = params_and_grads(1)
    g = grads[0]
    tensors = [torch.nn.Parameter(torch.zeros(v.shape, dtype=torch.float64)) for v in g.values()]
    for t, v in zip(tensors, g.values()):
        t.grad = torch.tensor(v)
    ref_norm = torch.nn.utils.clip_grad_norm_(tensors, max_norm).item()
    norm = optim.clip_grad_norm(g, max_norm)
    assert norm == pytest.approx(ref_norm, rel=1e-12)
    for t, v in zip(tensors, g.values()):
        np.testing.assert_allclose(v, t.grad.numpy(), rtol=1e-12)


def test_compare_follows_torch_optimizers(torch):
    out = optim.compare(steps=30, lr=0.05, stretch=10.0, start=(-4.0, 2.0), weight_decay=0.1)
    makers = {
        "sgd": lambda p: torch.optim.SGD([p], lr=0.05),
        "momentum": lambda p: torch.optim.SGD([p], lr=0.05, momentum=0.9),
        "adam": lambda p: torch.optim.Adam([p], lr=0.05, betas=(0.9, 0.999), eps=1e-8),
        "adamw": lambda p: torch.optim.AdamW([p], lr=0.05, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1),
    }
    for name, make in makers.items():
        p = torch.nn.Parameter(torch.tensor([-4.0, 2.0], dtype=torch.float64))
        opt = make(p)
        path = [p.detach().tolist()]
        for _ in range(30):
            opt.zero_grad()
            (0.5 * (p[0] ** 2 + 10.0 * p[1] ** 2)).backward()
            opt.step()
            path.append(p.detach().tolist())
        np.testing.assert_allclose(out[name]["path"], path, rtol=1e-10, atol=1e-12, err_msg=name)


def test_adam_evens_out_a_stretched_bowl():
    """The lesson of the figure: after 60 steps at lr 0.1, Adam is nearer the minimum than SGD on the shallow axis."""
    out = optim.compare(steps=60, lr=0.1, stretch=10.0)
    sgd_x, adam_x = abs(out["sgd"]["path"][-1][0]), abs(out["adam"]["path"][-1][0])
    assert adam_x < sgd_x
    assert out["sgd"]["loss"][-1] < out["sgd"]["loss"][0]
    assert math.isfinite(out["momentum"]["loss"][-1])


@pytest.mark.parametrize("kwargs, message", [({"steps": 0}, "steps"), ({"lr": -1}, "lr"), ({"stretch": 0.5}, "stretch")])
def test_compare_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        optim.compare(**kwargs)
