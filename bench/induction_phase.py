"""How many training steps the induction task needs before its phase change, found in PyTorch.

`<tx-train>`'s induction task trains `demos.training`'s two-layer attention-only model in the
reader's browser. Whether an induction head forms within a browser's minute depends on how many
steps it needs, and that is cheaper to find in PyTorch on this machine than in Pyodide. This
script trains the same model on the same data: the weights start as `demos.backprop.init_params`
draws them, every batch comes from `demos.training.Task`, the schedule is `demos.optim.lr_at`,
the gradient is clipped to norm 1 and the optimizer is AdamW with the demos' betas and weight
decay (matrices only). Before training it checks that its forward pass gives the demos' held-out
loss (float32 against float64, 1e-4).

Each run evaluates the held-out batch every ``--every`` steps and records the second copy's loss
and every head's induction score (`demos.training.induction_scores`, the score `<tx-train>`
draws); `phase` is the first evaluation with the second copy's loss below
`demos.training.PHASE_SHARE` of its start, as `<tx-train>` reports it, and `induction` the
first with a layer-1 head scoring above ``--head`` (an induction head, not a smear). The JSON
goes to ``bench/results/induction_phase.json`` (or ``--out``).

``--save FILE`` also writes the last run's final weights, float32, named as `demos.backprop`
names them, with the run's settings and last evaluation under ``recipe`` (a JSON string): the
trained model that `demos.circuits.trained_circuits` reads its circuits from is made so
(``demos/data/induction_model.npz``, committed).

Usage::

    .venv/bin/python bench/induction_phase.py [--runs 32:3e-3:6000 128:1e-2:3000 ...]
    .venv/bin/python bench/induction_phase.py --runs 128:1e-2:8000 --out /tmp/phase.json --save demos/data/induction_model.npz
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS, git_commit  # noqa: E402
from demos import backprop, optim, training  # noqa: E402
from demos.backprop import TinyConfig  # noqa: E402

DEFAULT_RUNS = ("32:3e-3:20000", "32:1e-2:20000", "128:3e-3:8000", "128:1e-2:8000")


def forward(params: dict, cfg: TinyConfig, idx: torch.Tensor):
    """`demos.backprop.forward` for an attention-only model, in torch: logits and each layer's attention."""
    B, T = idx.shape
    C, H = cfg.n_embd, cfg.n_head
    x = params["wte"][idx] + params["wpe"][:T]  # (B, T, C)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    probs = []
    for layer in range(cfg.n_layer):
        p = f"h.{layer}."
        h = torch.nn.functional.layer_norm(x, (C,), params[p + "ln_1.weight"], params[p + "ln_1.bias"], eps=backprop.LN_EPS)
        q, k, v = (h @ params[p + "attn.c_attn.weight"] + params[p + "attn.c_attn.bias"]).split(C, dim=-1)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
        att = (q @ k.transpose(-1, -2) / math.sqrt(C // H)).masked_fill(mask, float("-inf")).softmax(-1)  # (B, H, T, T)
        probs.append(att)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ params[p + "attn.c_proj.weight"] + params[p + "attn.c_proj.bias"]
    xf = torch.nn.functional.layer_norm(x, (C,), params["ln_f.weight"], params["ln_f.bias"], eps=backprop.LN_EPS)
    return xf @ params["wte"].T, probs  # (B, T, V)


def second_copy_loss(params, cfg, task) -> tuple[float, float, list]:
    """Held-out loss over all targets, on the second copy, and every head's induction score."""
    idx, targets, (_, second) = task.eval
    with torch.no_grad():
        logits, probs = forward(params, cfg, torch.tensor(idx))
        losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), torch.tensor(targets), reduction="none").numpy()
    scores = training.induction_scores([p.numpy() for p in probs])
    return float(losses.mean()), float(losses[second].mean()), scores


def run(batch: int, lr: float, steps: int, seed: int, every: int, head: float) -> dict:
    """Train one model; return its evaluations and the steps of its phase change and induction head."""
    spec = training.DEFAULTS["induction"]
    task = training.Task("induction", seed)
    cfg = TinyConfig(len(task.vocab), task.block, spec["n_layer"], spec["n_head"], spec["n_embd"], False)
    start = backprop.init_params(cfg, seed)
    params = {name: torch.tensor(value, dtype=torch.float32, requires_grad=True) for name, value in start.items()}
    demos_loss = backprop.forward(start, cfg, task.eval[0], task.eval[1])[1]
    torch_loss = second_copy_loss(params, cfg, task)[0]
    assert abs(demos_loss - torch_loss) < 1e-4, (demos_loss, torch_loss)

    decay = [p for name, p in params.items() if optim.decays(name, start[name])]
    rest = [p for name, p in params.items() if not optim.decays(name, start[name])]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95), eps=1e-8)
    rng = np.random.default_rng([seed, 0])
    evals, phase, induction, first_second = [], None, None, None
    began = time.perf_counter()
    for step in range(steps + 1):
        if step % every == 0:
            loss, second, scores = second_copy_loss(params, cfg, task)
            evals.append(
                {"step": step, "eval_loss": round(loss, 4), "eval_second": round(second, 4), "scores": [[round(s, 3) for s in layer] for layer in scores]}
            )
            first_second = second if first_second is None else first_second
            if phase is None and second < training.PHASE_SHARE * first_second:
                phase = step
            if induction is None and max(scores[-1]) > head:
                induction = step
        if step == steps:
            break
        idx, targets, _ = task.batch(rng, batch)
        logits, _ = forward(params, cfg, torch.tensor(idx))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab_size), torch.tensor(targets).reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        for group in opt.param_groups:
            group["lr"] = optim.lr_at(step, lr, spec["warmup"], steps, lr / 10)
        opt.step()
    return {
        "batch": batch,
        "lr": lr,
        "steps": steps,
        "tokens": steps * batch * task.block,
        "seed": seed,
        "phase_step": phase,
        "induction_step": induction,
        "final": evals[-1],
        "seconds": round(time.perf_counter() - began, 1),
        "evals": evals,
        "_params": {name: p.detach().numpy().astype(np.float32) for name, p in params.items()},
    }


def save_weights(path: Path, result: dict, argv: list[str]) -> None:
    """Write a run's final weights and its recipe (settings, last evaluation, command) to `path` (.npz)."""
    recipe = {k: result[k] for k in ("batch", "lr", "steps", "seed", "phase_step", "induction_step", "final")}
    recipe |= {"trained_by": "bench/induction_phase.py", "argv": argv, "commit": git_commit(), "torch": torch.__version__}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, recipe=np.array(json.dumps(recipe)), **result["_params"])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS), help="batch:lr:steps of each run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--head", type=float, default=0.4, help="a layer-1 score above this counts as an induction head")
    parser.add_argument("--out", type=Path, default=RESULTS / "induction_phase.json")
    parser.add_argument("--save", type=Path, help="write the last run's final weights here (.npz)")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    runs = []
    for text in args.runs:
        batch, lr, steps = text.split(":")
        result = run(int(batch), float(lr), int(steps), args.seed, args.every, args.head)
        print(
            f"batch {batch} lr {lr}: phase {result['phase_step']}, induction head {result['induction_step']}, final {result['final']} ({result['seconds']} s)",
            flush=True,
        )
        runs.append(result)
    if args.save:
        save_weights(args.save, runs[-1], sys.argv[1:] if argv is None else argv)
    for result in runs:
        del result["_params"]
    report = {
        "benchmark": "bench/induction_phase.py",
        "argv": sys.argv[1:] if argv is None else argv,
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "head": args.head,
        "runs": runs,
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
