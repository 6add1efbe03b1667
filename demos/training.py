"""Training a tiny GPT: the data, the loop, and what to watch while it learns.

Two tasks:

* ``"induction"``: random tokens with a stretch written twice, ``[BOS, x y, a b c …, a b c …]``:
  a random prefix, then a stretch of 4 to 10 random tokens repeated at once, its length drawn
  anew for each sequence so that no fixed offset finds the copy. The first copy cannot be
  predicted (its loss stays near ln V); the second can, by a head that looks back to the token
  after the current token's earlier occurrence and copies it: an induction head (Olsson et al.,
  2022), which needs a head of an earlier layer that tells each position its previous token.
  Each evaluation reports both copies' held-out loss and every head's induction score (its mean
  attention from each second-copy position t to t - half + 1 on ``[BOS, half, half]``, the score
  of `<tx-induction>`). On that layout the copy always sits half - 1 back, so a head that
  attends that far back by position scores too: a high score alone does not prove an induction
  head.
* ``"text"``: a character-level model of a short text (`TEXT`, a few paragraphs of this book).

Each step draws a batch from the task's generator (seeded), runs `backprop.forward` and
`backprop.backward`, clips the gradient norm to 1, and takes an `optim.adamw_step` at
`optim.lr_at(step)`: the loop of nanoGPT's train.py, at toy size.

A reader's browser trains through a session: `start` creates it (and returns its id),
`steps` advances it by a few steps and returns their losses, `sample` writes text with it,
`stop` frees it. `train` runs a whole run at once (for the tests and the figures).
"""

import itertools

import numpy as np

from demos import backprop, optim
from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between
from demos.backprop import TinyConfig

TASKS = ("induction", "text")
MAX_LAYERS = 4
MAX_WIDTH = 64
MAX_STEPS = 5000
MAX_CHUNK = 200
MAX_SESSIONS = 4

INDUCTION_VOCAB = 16  # random tokens 1..16; 0 is BOS
INDUCTION_TOKENS = 24  # tokens after BOS in a training sequence
INDUCTION_REPEAT = (4, 10)  # the repeated stretch's shortest and longest length
INDUCTION_HALF = 8  # the held-out sequences: [BOS, 8 tokens, the same 8]
EVAL_BATCH = 64
PHASE_SHARE = 0.5  # the step reported as `phase`: the second copy's held-out loss below this share of its start

TEXT = (
    "The Transformer reads a sequence of tokens and predicts the next one. Each token becomes a vector, "
    "its position is added, and a stack of blocks refines the vectors: attention lets every token look "
    "back at the tokens before it, and a small network then works on each token alone. A last layer "
    "turns the final vector into a score for every token of the vocabulary, and softmax turns the "
    "scores into probabilities. To train it, we show it text and ask it to predict every next token at "
    "once; the loss is the average surprise, minus the log of the probability it gave the right token. "
    "The gradient of that loss says how to move every weight to be a little less surprised, and the "
    "optimizer takes a small step in that direction, many thousands of times. The model never sees a "
    "rule; whatever helps it predict, it learns.\n"
)

# Defaults per task: model size, batch, context and the schedule.
DEFAULTS = {
    "induction": dict(n_layer=2, n_head=2, n_embd=32, mlp=False, batch=32, lr=3e-3, warmup=20, steps=600),
    "text": dict(n_layer=2, n_head=2, n_embd=32, mlp=True, batch=16, lr=3e-3, warmup=20, steps=600, block=32),
}


class Task:
    """A task's data: `batch(rng, n)` gives (idx, targets, copies), `eval` a fixed held-out batch.

    `copies` (induction only) holds two masks (n, T) of the predictions to average: of tokens of
    the first copy (unpredictable) and of the second (predictable by induction).
    """

    def __init__(self, name, seed):
        self.name = name
        if name == "induction":
            self.vocab = ["⟨bos⟩"] + [chr(ord("A") + i) for i in range(INDUCTION_VOCAB)]
            self.block = INDUCTION_TOKENS
        else:
            self.vocab = sorted(set(TEXT))
            self.block = DEFAULTS["text"]["block"]
            ids = np.array([self.vocab.index(c) for c in TEXT])
            cut = int(len(ids) * 0.9)
            self.train_ids, self.eval_ids = ids[:cut], ids[cut - self.block :]
        self.eval = self.batch(np.random.default_rng([seed, 1]), EVAL_BATCH, held_out=True)

    def batch(self, rng, n, held_out=False):
        """n sequences, their next-token targets and (induction) the copies' masks."""
        if self.name == "induction":
            return self._repeats(rng, n, held_out)
        ids = self.eval_ids if held_out else self.train_ids
        starts = rng.integers(0, len(ids) - self.block, size=n)
        windows = np.stack([ids[s : s + self.block + 1] for s in starts])
        return windows[:, :-1], windows[:, 1:], None

    def _repeats(self, rng, n, held_out):
        """[BOS, prefix, stretch, stretch] (held out: no prefix, stretch of INDUCTION_HALF)."""
        size = 2 * INDUCTION_HALF if held_out else INDUCTION_TOKENS
        seq = np.concatenate([np.zeros((n, 1), dtype=int), rng.integers(1, INDUCTION_VOCAB + 1, size=(n, size))], axis=1)
        if held_out:
            h, start = np.full(n, INDUCTION_HALF), np.ones(n, dtype=int)
        else:
            h = rng.integers(INDUCTION_REPEAT[0], INDUCTION_REPEAT[1] + 1, size=n)  # each row's stretch
            start = 1 + np.floor(rng.random(n) * (size - 2 * h + 1)).astype(int)  # where its first copy begins
        h, start = h[:, None], start[:, None]  # (n, 1)
        pos = np.arange(size + 1)[None, :]  # (1, size + 1): positions in seq
        second_copy = (pos >= start + h) & (pos < start + 2 * h)  # (n, size + 1)
        rows, cols = np.nonzero(second_copy)
        seq[rows, cols] = seq[rows, cols - h[rows, 0]]  # the second copy repeats the first
        target = pos[:, 1:]  # (1, size): target k predicts seq[k + 1]
        first = (target > start) & (target < start + h)  # tokens of the first copy after its first
        second = (target > start + h) & (target < start + 2 * h)  # tokens of the second copy after its first
        return seq[:, :-1], seq[:, 1:], (first, second)


def induction_scores(probs: list, half: int = INDUCTION_HALF) -> list:
    """Each head's mean attention from second-copy positions t to t - half + 1 (the token after
    the earlier occurrence), the score of `<tx-induction>`.

    Args:
        probs: Per layer, attention probabilities (B, H, T, T) on [BOS, half, half] minus its last token.
        half: Length of the repeated half.

    Returns:
        Per layer, a list with each head's score, in [0, 1].
    """
    out = []
    for p in probs:
        T = p.shape[-1]
        t = np.arange(half + 1, T)  # second-copy positions that have a previous occurrence in view
        out.append(p[:, :, t, t - half + 1].mean(axis=(0, 2)).tolist())
    return out


def _copy_losses(per_position, copies):
    """Mean loss on the first copy's predictions and on the second's (induction task)."""
    first, second = copies
    return float(per_position[first].mean()), float(per_position[second].mean())


class Session:
    """One training run: the model, the optimizer's state, the data and the history."""

    def __init__(self, task, seed, lr, warmup, steps, n_layer, n_embd, n_head):
        spec = DEFAULTS[task]
        self.task = Task(task, seed)
        self.cfg = TinyConfig(len(self.task.vocab), self.task.block, n_layer, n_head, n_embd, spec["mlp"])
        self.params = backprop.init_params(self.cfg, seed)
        self.rng = np.random.default_rng([seed, 0])
        self.state = {}
        self.lr, self.warmup, self.max_steps, self.batch = lr, warmup, steps, spec["batch"]
        self.step = 0
        self.phase = None  # the first step with the second copy's held-out loss below PHASE_SHARE of its start (induction)
        self.start_second = None

    def train_step(self):
        """One optimizer step; returns its record."""
        idx, targets, copies = self.task.batch(self.rng, self.batch)
        _, loss, cache = backprop.forward(self.params, self.cfg, idx, targets)
        grads = backprop.backward(self.params, self.cfg, cache)
        norm = optim.clip_grad_norm(grads, 1.0)
        lr = optim.lr_at(self.step, self.lr, self.warmup, self.max_steps, self.lr / 10)
        optim.adamw_step(self.params, grads, self.state, lr)
        record = {"step": self.step, "loss": loss, "lr": lr, "grad_norm": norm}
        if self.task.name == "induction":
            record["first"], record["second"] = _copy_losses(cache["losses"], copies)
        self.step += 1
        return record

    def evaluate(self):
        """The held-out loss (and, for induction, the copies' losses and every head's score)."""
        idx, targets, copies = self.task.eval
        _, loss, cache = backprop.forward(self.params, self.cfg, idx, targets)
        out = {"step": self.step, "eval_loss": loss}
        if self.task.name == "induction":
            out["eval_first"], out["eval_second"] = _copy_losses(cache["losses"], copies)
            out["scores"] = induction_scores(cache["probs"])
            if self.start_second is None:
                self.start_second = out["eval_second"]
            elif self.phase is None and out["eval_second"] < PHASE_SHARE * self.start_second:
                self.phase = self.step
        return out

    def sample(self, prompt, length, seed):
        """Text the model writes after `prompt` (characters of the vocabulary; others are dropped)."""
        ids = [self.task.vocab.index(c) for c in prompt if c in self.task.vocab] or [0]
        rng = np.random.default_rng(seed)
        for _ in range(length):
            context = np.array([ids[-self.cfg.block_size :]])
            logits, _, _ = backprop.forward(self.params, self.cfg, context)
            z = logits[0, -1] - logits[0, -1].max()
            p = np.exp(z) / np.exp(z).sum()
            ids.append(int(rng.choice(len(p), p=p)))
        return "".join(self.task.vocab[i] for i in ids)


_SESSIONS: dict[int, Session] = {}
_NEXT_ID = itertools.count(1)


def _session_args(task, seed, lr, warmup, steps, n_layer, n_embd, n_head):
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}.")
    n_layer = _as_int("The number of layers", n_layer, 1, MAX_LAYERS)
    n_head = _as_int("The number of heads", n_head, 1, 8)
    n_embd = _as_int("The width", n_embd, n_head, MAX_WIDTH)
    if n_embd % n_head:
        raise ValueError(f"The width ({n_embd}) must be a multiple of the number of heads ({n_head}).")
    steps = _as_int("The number of steps", steps, 1, MAX_STEPS, grouping=",")
    warmup = _as_int("The warm-up", warmup, 0, steps, grouping=",")
    lr = _between("The learning rate", lr, 1e-5, 0.1)
    seed = _as_int("The seed", seed, 0, 2**32 - 1)
    return task, seed, lr, warmup, steps, n_layer, n_embd, n_head


def defaults(task: str = "induction") -> dict:
    """A task's default settings (model size, batch, learning rate, warm-up, steps).

    Examples:
        >>> defaults("induction")["n_layer"]
        2
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}.")
    return dict(DEFAULTS[task])


def start(
    task: str = "induction",
    seed: int = 0,
    lr: float | None = None,
    warmup: int | None = None,
    steps: int | None = None,
    n_layer: int | None = None,
    n_embd: int | None = None,
    n_head: int | None = None,
) -> dict:
    """Create a training run in this interpreter; advance it with `steps`.

    Args:
        task: "induction" or "text".
        seed: Seeds the weights and the data.
        lr: Peak learning rate (1e-5 to 0.1); default per task (`DEFAULTS`).
        warmup: Linear warm-up steps (0 to `steps`); default the task's, at most `steps`.
        steps: Steps of the schedule (1 to 5,000): the cosine reaches lr / 10 there.
        n_layer: Blocks (1 to 4).
        n_embd: Width (a multiple of `n_head`, at most 64).
        n_head: Heads per layer (1 to 8).

    Returns:
        `{"session", "task", "config", "parameters", "vocab", "eval"}`: the run's id, its settings,
        its parameter count, its vocabulary and the held-out numbers before training.
    """
    spec = DEFAULTS.get(task, DEFAULTS["induction"])
    values = {k: spec[k] if v is None else v for k, v in dict(lr=lr, warmup=warmup, steps=steps, n_layer=n_layer, n_embd=n_embd, n_head=n_head).items()}
    if warmup is None and isinstance(values["steps"], int):
        values["warmup"] = min(values["warmup"], values["steps"])  # a short run warms up for all of it at most
    args = _session_args(task, seed, **values)
    if len(_SESSIONS) >= MAX_SESSIONS:
        _SESSIONS.pop(next(iter(_SESSIONS)))  # the oldest run goes
    session = Session(*args)
    key = next(_NEXT_ID)
    _SESSIONS[key] = session
    cfg = session.cfg
    return {
        "session": key,
        "task": task,
        "config": dict(vars(cfg), steps=session.max_steps, lr=session.lr, warmup=session.warmup, batch=session.batch, seed=args[1]),
        "parameters": int(sum(p.size for p in session.params.values())),
        "vocab": session.task.vocab,
        "eval": session.evaluate(),
    }


def _get(session):
    if session not in _SESSIONS:
        raise ValueError("This training run is gone (stopped, or replaced by newer runs): start a new one.")
    return _SESSIONS[session]


def steps(session: int, count: int = 20, eval_every: int = 20) -> dict:
    """Advance a run by `count` optimizer steps (fewer at the end of its schedule).

    Args:
        session: The id `start` returned.
        count: Steps to take now (1 to 200).
        eval_every: Also evaluate on the held-out batch every this many steps.

    Returns:
        `{"records": [{step, loss, lr, grad_norm, first?, second?}], "evals": [...], "done": bool,
        "phase": the step at which the second copy's held-out loss first fell below PHASE_SHARE of
        its start (induction; None until then)}`.
    """
    run = _get(session)
    count = _as_int("count", count, 1, MAX_CHUNK)
    eval_every = _as_int("eval_every", eval_every, 1, MAX_STEPS)
    records, evals = [], []
    for _ in range(min(count, run.max_steps - run.step)):
        records.append(run.train_step())
        if run.step % eval_every == 0 or run.step == run.max_steps:
            evals.append(run.evaluate())
    return {"records": records, "evals": evals, "done": run.step >= run.max_steps, "phase": run.phase}


def sample(session: int, prompt: str = "", length: int = 80, seed: int = 0) -> dict:
    """Text the run's model writes now, after `prompt` (its vocabulary's characters only).

    Returns:
        `{"text": prompt and continuation, "prompt_length": characters of the prompt kept}`.
    """
    run = _get(session)
    length = _as_int("length", length, 1, 400)
    text = run.sample(str(prompt), length, _as_int("seed", seed, 0, 2**32 - 1))
    return {"text": text, "prompt_length": len(text) - length}


def stop(session: int) -> dict:
    """Free a run. Returns `{"stopped": bool}` (False when it was already gone)."""
    return {"stopped": _SESSIONS.pop(session, None) is not None}


def train(task: str = "induction", seed: int = 0, eval_every: int = 20, **settings) -> dict:
    """A whole run at once: `start`, then `steps` to the end of the schedule, then `stop`.

    Args:
        task: "induction" or "text".
        seed: Seeds the weights and the data.
        eval_every: Held-out evaluation every this many steps.
        **settings: `start`'s lr, warmup, steps, n_layer, n_embd, n_head.

    Returns:
        `{"start": start's result, "records": every step's record, "evals": every evaluation,
        "phase": the step at which the second copy's held-out loss first fell below PHASE_SHARE of
        its start, or None}`.

    Examples:
        >>> run = train("induction", steps=3, eval_every=3)
        >>> [r["step"] for r in run["records"]], len(run["evals"])  # evaluated before training and after step 3
        ([0, 1, 2], 2)
    """
    first = start(task, seed, **settings)
    records, evals = [], [first["eval"]]
    while True:
        out = steps(first["session"], MAX_CHUNK, eval_every)
        records += out["records"]
        evals += out["evals"]
        if out["done"]:
            break
    stop(first["session"])
    return {"start": first, "records": records, "evals": evals, "phase": out["phase"]}
