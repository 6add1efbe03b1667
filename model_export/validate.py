"""Numbers that say the exported files are right, each check one row of a table.

Three comparisons, in order:

* **torch vs HF**: our PyTorch ``GPT2`` against Hugging Face's ``GPT2LMHeadModel`` (eager
  attention) on a left-padded batch, and on decode steps after a KV cache (the reference
  recomputes the whole sequence);
* **fp32 vs torch**: the fp32 ONNX graph in ONNX Runtime (CPU) against our module: logits,
  present, attentions and hidden states on a left-padded batch of two, without and with past;
  top-1 agreement; greedy and no-repeat greedy continuations of a left-padded batch, with and
  without the KV cache, against PyTorch recomputing the whole sequence at every step;
* **variant vs fp32**: each shipped variant against the fp32 graph, teacher-forced on a text
  shipped with this package (``data/validation_text.txt``): mean KL divergence of the next-token
  distributions, top-1 and top-5 agreement, perplexity ratio, the KV cache's consistency within
  the variant, and finite logits on a left-padded batch.

A row passes when its measurement is within its bound: at most ``limit`` for errors, at least
``limit`` for agreements. NaN never passes.

Every length is fitted to the model's context: the batches, the greedy continuations and the
text are cut so that no check feeds a position beyond ``n_positions`` (``batch_lengths``,
``runtime.fit_greedy``, ``text_tokens``); a context under ``export.MIN_POSITIONS`` is refused
when the checkpoint is read. Which bounds apply, random or trained weights, is measured on the
weights (``weights_verdict``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from .gpt2 import GPT2
from .runtime import OrtGPT2, TorchGPT2, empty_past, fit_greedy, greedy, positions_from_mask
from .variants import VariantTolerance
from .variants import tolerances as variant_tolerances

PROMPT_LEN, DECODE_LEN, PAD = 8, 3, 3  # the left-padded batch of two: a prefill, then decode steps
GREEDY_PROMPT, GREEDY_NEW, GREEDY_SHORTER = 8, 20, 3  # greedy: 20 tokens after prompts of 8 and 8 - 3 tokens
PADDED_LEN, PADDED_PAD = 8, 5  # each variant's left-padded batch (finite logits)
TEXT_TOKENS = 512  # of the validation text, at most (and at most n_positions)
CACHE_STEPS = 16  # decode steps compared with the same variant's teacher-forced logits
TOP_K = 5  # the top-k overlap (at most the vocabulary)
FLAT_SHARE = 0.9  # mean next-token entropy / log(vocab_size) from which weights count as random


@dataclass
class Tolerances:
    """Every bound of the validation.

    Attributes:
        hf: Max abs logit difference, our module vs Hugging Face.
        ort: Max abs difference of every output, fp32 ONNX Runtime vs our module.
        top1: Min top-1 agreement, fp32 ONNX Runtime vs our module.
        tokens: Max greedy tokens differing, ONNX Runtime vs PyTorch.
        variants: Per-variant bounds against the fp32 graph.
    """

    hf: float = 1e-5
    ort: float = 1e-4
    top1: float = 0.99
    tokens: int = 0
    variants: dict[str, VariantTolerance] = field(default_factory=dict)

    @classmethod
    def defaults(cls, random_weights: bool) -> Tolerances:
        """Bounds suited to random weights or to a trained checkpoint (see ``weights_verdict``).

        Random weights give nearly flat next-token distributions: a tiny change of the logits
        moves the top-1 token, so agreements are low and KL tiny even for a good variant.
        Trained weights give peaked distributions, larger logits (so larger absolute float32
        differences) and a meaningful perplexity.
        """
        if random_weights:
            return cls(hf=1e-5, ort=1e-4, top1=0.99, tokens=0, variants=variant_tolerances(random_weights=True))
        return cls(hf=1e-3, ort=1e-3, top1=0.99, tokens=0, variants=variant_tolerances(random_weights=False))

    def override(self, key: str, value: float) -> Tolerances:
        """A copy with one bound changed.

        Args:
            key: ``hf``, ``ort``, ``top1``, ``tokens``, or ``VARIANT.METRIC`` such as ``q4.kl``.
            value: The new bound.

        Raises:
            ValueError: For an unknown key.
        """
        if "." not in key:
            names = [f.name for f in fields(self) if f.name != "variants"]
            if key not in names:
                raise ValueError(f"unknown tolerance {key!r}; use one of {', '.join(names)} or VARIANT.METRIC")
            return replace(self, **{key: int(value) if key == "tokens" else value})
        variant, metric = key.split(".", 1)
        metrics = [f.name for f in fields(VariantTolerance)]
        if variant not in self.variants or metric not in metrics:
            raise ValueError(f"unknown tolerance {key!r}; variants: {', '.join(self.variants)}; metrics: {', '.join(metrics)}")
        variants = dict(self.variants)
        variants[variant] = replace(variants[variant], **{metric: value})
        return replace(self, variants=variants)


@dataclass
class CheckResult:
    """One row of the validation table.

    Attributes:
        name: What was measured.
        measured: The measurement.
        limit: The bound.
        passed: Whether the measurement is within the bound.
        at_least: True if the bound is a minimum (agreements), False for a maximum (errors).
        group: ``torch``, ``fp32``, ``files`` or a variant name.
    """

    name: str
    measured: float
    limit: float
    passed: bool
    at_least: bool = False
    group: str = "fp32"

    def to_dict(self) -> dict:
        """Returns the row as a JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict) -> CheckResult:
        """Rebuilds a row written by ``to_dict``."""
        return cls(**{f.name: row[f.name] for f in fields(cls) if f.name in row})


def check(name: str, measured: float, limit: float, *, at_least: bool = False, group: str = "fp32") -> CheckResult:
    """Builds a row. NaN never passes (every comparison with NaN is False)."""
    measured = int(measured) if isinstance(measured, int | np.integer) else float(measured)
    passed = measured >= limit if at_least else measured <= limit
    return CheckResult(name, measured, limit, bool(passed), at_least, group)


def max_abs_diff(a, b, where: np.ndarray | None = None) -> float:
    """Max |a - b| over arrays (or lists of arrays), optionally only where ``where`` is True."""
    if isinstance(a, list | tuple):
        return max(max_abs_diff(x, y) for x, y in zip(a, b, strict=True))
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != np.float32 or b.dtype != np.float32:  # float32 - float32 is exact enough; others in float64
        a, b = a.astype(np.float64), b.astype(np.float64)
    diff = np.abs(a - b)
    if where is not None:
        diff = diff[np.broadcast_to(where, diff.shape)]
    return float(diff.max()) if diff.size else 0.0


def example_batch(vocab_size: int, length: int = PROMPT_LEN, pad: int = PAD, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two random sequences, the second left-padded by ``pad`` tokens.

    Returns:
        ``(input_ids, attention_mask)``, both (2, length) int64.
    """
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(0, vocab_size, (2, length), dtype=np.int64)
    attention_mask = np.ones_like(input_ids)
    attention_mask[1, :pad] = 0
    input_ids[1, :pad] = 0
    return input_ids, attention_mask


def hf_logits(hf_model, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Logits of a transformers GPT-2 over the full sequence, no cache."""
    with torch.no_grad():
        out = hf_model(
            input_ids=torch.from_numpy(input_ids),
            attention_mask=torch.from_numpy(attention_mask),
            position_ids=torch.from_numpy(positions_from_mask(attention_mask)),
            use_cache=False,
        )
    return out.logits.float().numpy()


def prefill_then_decode(runner, input_ids: np.ndarray, attention_mask: np.ndarray, split: int, everything=False):
    """Runs ``input_ids[:, :split]`` with an empty past, then the rest as one step with that past.

    Returns:
        ``(first, second)``: each ``(logits, present)``, or every output by name with
        ``everything``.
    """
    positions = positions_from_mask(attention_mask)
    past0 = empty_past(runner.config, input_ids.shape[0])
    first_args = (input_ids[:, :split], attention_mask[:, :split], positions[:, :split])
    if everything:
        first = runner.run_all(*first_args, past0)
        past = [first[name] for name in first if name.startswith("present.")]
        second = runner.run_all(input_ids[:, split:], attention_mask, positions[:, split:], past)
        return first, second
    first = runner.run(*first_args, past0)
    return first, runner.run(input_ids[:, split:], attention_mask, positions[:, split:], first[1])


def batch_lengths(n_positions: int) -> tuple[int, int]:
    """``(prompt, decode)`` of the left-padded batch: the prompt is cut so that both fit the
    context (``export.MIN_POSITIONS`` leaves it longer than the padding)."""
    return min(PROMPT_LEN, n_positions - DECODE_LEN), DECODE_LEN


def check_against_hf(model: GPT2, hf_model, tol: float) -> list[CheckResult]:
    """Our PyTorch module vs Hugging Face's, on real (unpadded) token positions only."""
    prompt_len, decode_len = batch_lengths(model.config.n_positions)
    input_ids, attention_mask = example_batch(model.config.vocab_size, prompt_len + decode_len, PAD)
    real = attention_mask.astype(bool)[:, :, None]  # (B, L, 1)
    reference = hf_logits(hf_model, input_ids, attention_mask)  # (B, L, V)

    ours = TorchGPT2(model)
    full_logits, _ = ours.run(input_ids, attention_mask, positions_from_mask(attention_mask), empty_past(model.config, 2))
    _, (decode_logits, _) = prefill_then_decode(ours, input_ids, attention_mask, split=prompt_len)
    return [
        check("torch vs HF: logits, left-padded batch", max_abs_diff(full_logits, reference, real), tol, group="torch"),
        check(
            f"torch vs HF: logits of {decode_len} tokens after a KV cache",
            max_abs_diff(decode_logits, reference[:, prompt_len:], real[:, prompt_len:]),
            tol,
            group="torch",
        ),
    ]


def top1_agreement(a: np.ndarray, b: np.ndarray, where: np.ndarray | None = None) -> float:
    """Share of positions where two logit arrays (..., V) have the same argmax."""
    same = a.argmax(-1) == b.argmax(-1)
    return float(same[where].mean() if where is not None else same.mean())


def check_onnx(ort_runner: OrtGPT2, torch_runner: TorchGPT2, tolerances: Tolerances):
    """fp32 ONNX Runtime vs our PyTorch module on a left-padded batch: a prefill with an empty
    past, then ``DECODE_LEN`` tokens with that past; every output the graph has."""
    prompt_len, decode_len = batch_lengths(torch_runner.config.n_positions)
    input_ids, attention_mask = example_batch(torch_runner.config.vocab_size, prompt_len + decode_len, PAD)
    ort_out = prefill_then_decode(ort_runner, input_ids, attention_mask, split=prompt_len, everything=True)
    torch_out = prefill_then_decode(torch_runner, input_ids, attention_mask, split=prompt_len, everything=True)
    real = attention_mask.astype(bool)
    rows = []
    for step, (o, t) in enumerate(zip(ort_out, torch_out, strict=True)):
        label = "prefill (past 0)" if step == 0 else f"decode (past {prompt_len})"
        kinds = {"logits": ["logits"]}
        for prefix in ("present", "new", "attentions", "hidden_states"):
            names = [n for n in o if n.startswith(prefix + ".")]
            if names:
                kinds[prefix] = names
        for kind, names in kinds.items():
            diff = max_abs_diff([o[n] for n in names], [t[n] for n in names])
            rows.append(check(f"fp32 vs torch: {kind}, {label}", diff, tolerances.ort))
        where = real[:, :prompt_len] if step == 0 else real[:, prompt_len:]
        rows.append(
            check(
                f"fp32 vs torch: top-1 agreement, {label}",
                top1_agreement(o["logits"], t["logits"], where),
                tolerances.top1,
                at_least=True,
            )
        )
    return rows


def check_greedy(ort_runner: OrtGPT2, torch_runner: TorchGPT2, tol_tokens: int, new_tokens: int = GREEDY_NEW) -> list:
    """Greedy continuations of a left-padded batch of two prompts: ONNX Runtime with and
    without its KV cache vs PyTorch recomputing the whole sequence at every step. The prompts
    and ``new_tokens`` are cut to fit the context (``runtime.fit_greedy``)."""
    rng = np.random.default_rng(1)
    config = torch_runner.config
    prompt_len, new_tokens = fit_greedy(config.n_positions, GREEDY_PROMPT, new_tokens)
    lengths = (prompt_len, max(1, prompt_len - GREEDY_SHORTER))
    prompts = [rng.integers(0, config.vocab_size, n).tolist() for n in lengths]
    rows = []
    for no_repeat, label in [(False, "greedy"), (True, "no-repeat greedy")]:
        expected = greedy(torch_runner, prompts, new_tokens, no_repeat=no_repeat, use_cache=False)
        for use_cache in (True, False):
            got = greedy(ort_runner, prompts, new_tokens, no_repeat=no_repeat, use_cache=use_cache)
            mode = "with KV cache" if use_cache else "without cache"
            name = f"fp32 vs torch: {label}, 2 x {new_tokens} tokens {mode}, tokens differing"
            rows.append(check(name, int((got != expected).sum()), tol_tokens))
    return rows


def check_tied_embedding(onnx_path: str | Path, model: GPT2) -> CheckResult:
    """The (V, C) embedding, shared with the output layer, must be stored once."""
    import onnx

    from .export import tied_embedding_copies

    copies = tied_embedding_copies(onnx.load(str(onnx_path)), model.config)
    return check("fp32 graph: extra copies of the tied embedding", abs(copies - 1), 0)


def validate_reference(model: GPT2, hf_model, onnx_path: str | Path, tolerances: Tolerances, progress=print) -> list[CheckResult]:
    """Every check of our module and of the fp32 graph.

    Args:
        model: Our PyTorch module (with the outputs the graph has), loaded from ``hf_model``.
        hf_model: The Hugging Face reference (eager attention, float32).
        onnx_path: The fp32 graph.
        tolerances: Bounds.
        progress: Called with a line of text before each group of checks.

    Returns:
        One row per check.
    """
    ort_runner, torch_runner = OrtGPT2(onnx_path, model.config), TorchGPT2(model)
    progress("torch vs Hugging Face")
    rows = check_against_hf(model, hf_model, tolerances.hf)
    progress("fp32 graph vs torch: outputs")
    rows += check_onnx(ort_runner, torch_runner, tolerances)
    progress("fp32 graph vs torch: greedy continuations")
    rows += check_greedy(ort_runner, torch_runner, tolerances.tokens)
    rows.append(check_tied_embedding(onnx_path, model))
    return rows


# ---------------------------------------------------------------- variants against fp32


def validation_text() -> str:
    """The English text shipped with this package for teacher-forced comparisons."""
    return resources.files("model_export").joinpath("data/validation_text.txt").read_text("utf-8")


def text_tokens(tokenizer_dir: str | Path, n_positions: int, limit: int = TEXT_TOKENS) -> list[int]:
    """The validation text as GPT-2 token ids, at most ``min(limit, n_positions)`` of them."""
    from transformers import GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast.from_pretrained(str(tokenizer_dir))
    return tokenizer.encode(validation_text())[: min(limit, n_positions)]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """float64 log-probabilities over the last axis."""
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def top_k(logits: np.ndarray) -> np.ndarray:
    """(T, k) ids of the ``TOP_K`` (at most V) largest logits of each row, unordered."""
    k = min(TOP_K, logits.shape[-1])
    return np.argpartition(-logits, k - 1, axis=-1)[:, :k]


class Distributions:
    """Next-token log-probabilities of one run, computed once and compared with several others.

    Args:
        logits: (T, V) logits.
    """

    def __init__(self, logits: np.ndarray):
        self.logits = logits
        self.log_probs = log_softmax(logits)  # (T, V) float64
        self.top5 = top_k(logits)  # (T, TOP_K), unordered

    def compare(self, other: np.ndarray, targets: np.ndarray | None = None) -> dict:
        """How far ``other``'s next-token distributions are from these.

        Args:
            other: (T, V) logits.
            targets: (T,) the actual next tokens, for perplexities; None to skip them.

        Returns:
            ``kl`` (mean KL(self || other), nats), ``top1``, ``top5`` (mean overlap of the top-5
            sets), ``max_abs`` (max abs logit difference), ``rel_err`` (mean abs difference over
            the standard deviation of these logits), and with targets ``ppl_ref``, ``ppl``,
            ``ppl_ratio``.
        """
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # broken weights give NaN rows
            return self._compare(other, targets)

    def _compare(self, other: np.ndarray, targets: np.ndarray | None) -> dict:
        p, q = self.log_probs, log_softmax(other)  # (T, V)
        kl = (np.exp(p) * (p - q)).sum(axis=-1)  # (T,)
        top5 = top_k(other)
        overlap = [len(set(a) & set(b)) / top5.shape[1] for a, b in zip(self.top5.tolist(), top5.tolist(), strict=True)]
        metrics = {
            "kl": float(kl.mean()),
            "top1": top1_agreement(self.logits, other),
            "top5": float(np.mean(overlap)),
            "max_abs": max_abs_diff(self.logits, other),
            "rel_err": float(np.abs(self.logits - other).mean() / self.logits.std()),
        }
        if targets is not None:
            rows = np.arange(len(targets))
            metrics["ppl_ref"] = float(np.exp(-p[rows, targets].mean()))
            metrics["ppl"] = float(np.exp(-q[rows, targets].mean()))
            metrics["ppl_ratio"] = metrics["ppl"] / metrics["ppl_ref"]
        return metrics


def teacher_forced_logits(runner, tokens: list[int]) -> np.ndarray:
    """(T, V) logits of every position of one sequence, no cache."""
    ids = np.array([tokens], np.int64)
    mask = np.ones_like(ids)
    logits, _ = runner.run(ids, mask, positions_from_mask(mask), empty_past(runner.config, 1))
    return logits[0]


def cached_logits(runner, tokens: list[int], steps: int) -> np.ndarray:
    """(steps, V) logits of the last ``steps`` positions, decoded one token at a time after a
    prefill of the others."""
    split = len(tokens) - steps
    ids = np.array([tokens], np.int64)
    mask = np.ones_like(ids)
    positions = positions_from_mask(mask)
    logits, past = runner.run(ids[:, :split], mask[:, :split], positions[:, :split], empty_past(runner.config, 1))
    rows = []
    for t in range(split, len(tokens)):
        logits, past = runner.run(ids[:, t : t + 1], mask[:, : t + 1], positions[:, t : t + 1], past)
        rows.append(logits[0, -1])
    return np.stack(rows)


def compare_variant(name: str, runner: OrtGPT2, reference: Distributions, tokens: list[int], tol: VariantTolerance) -> tuple[list[CheckResult], dict]:
    """One variant against the fp32 graph's teacher-forced distributions.

    Args:
        name: Variant name (the rows' group).
        runner: The variant's session.
        reference: The fp32 graph's distributions at every position of ``tokens`` but the last.
        tokens: The validation text's ids.
        tol: The variant's bounds.

    Returns:
        ``(rows, metrics)``; metrics also has ``cache_kl``, ``nonfinite_padded`` and ``tokens``.
    """
    logits = teacher_forced_logits(runner, tokens)  # (T, V)
    targets = np.array(tokens[1:], np.int64)
    metrics = reference.compare(logits[:-1], targets)
    steps = min(CACHE_STEPS, len(tokens) - 1)
    metrics["cache_kl"] = Distributions(logits[-steps:]).compare(cached_logits(runner, tokens, steps))["kl"]
    length = min(PADDED_LEN, runner.config.n_positions)
    input_ids, attention_mask = example_batch(runner.config.vocab_size, length, pad=min(PADDED_PAD, length - 1))
    padded = runner.run(input_ids, attention_mask, positions_from_mask(attention_mask), empty_past(runner.config, 2))
    metrics["nonfinite_padded"] = int((~np.isfinite(padded[0])).sum())
    metrics["tokens"] = len(tokens)
    text = f"{len(tokens)}-token text"
    rows = [
        check(f"{name} vs fp32: mean KL divergence (nats), {text}", metrics["kl"], tol.kl, group=name),
        check(f"{name} vs fp32: top-1 agreement, {text}", metrics["top1"], tol.top1, at_least=True, group=name),
        check(f"{name} vs fp32: top-5 overlap, {text}", metrics["top5"], tol.top5, at_least=True, group=name),
        check(f"{name} vs fp32: perplexity ratio, {text}", metrics["ppl_ratio"], tol.ppl_ratio, group=name),
        check(f"{name}: KL with vs without KV cache, last {steps} tokens", metrics["cache_kl"], tol.cache_kl, group=name),
        check(f"{name}: non-finite logits, left-padded batch", metrics["nonfinite_padded"], 0, group=name),
    ]
    return rows, metrics


# ---------------------------------------------------------------- random or trained weights


def mean_entropy(logits: np.ndarray) -> float:
    """Mean entropy, in nats, of the next-token distributions of (T, V) logits."""
    log_probs = log_softmax(logits)
    return float(-(np.exp(log_probs) * log_probs).sum(axis=-1).mean())


def weights_verdict(model: GPT2, tokens: list[int], preset: bool = False) -> dict:
    """Whether ``Tolerances.defaults`` should take the bounds for random or for trained weights.

    The random-weight bounds are made for nearly flat next-token distributions, so flatness is
    what is measured: the mean entropy of our fp32 module's next-token distributions over the
    validation text, as a share of log(vocab_size), the entropy of the uniform distribution.
    From ``FLAT_SHARE`` (90 %) up the weights count as random. Default-initialised GPT-2s
    (weights of standard deviation 0.02, as ``GPT2LMHeadModel(config)`` or
    ``save_pretrained`` of one gives) measure 98 % (GPT-2 small's shape) to 99.99 % (8 wide);
    trained GPT-2 small has an entropy of a few nats on English, about a third of
    log(50257) = 10.8. Neither a config field nor a file name is trusted: a Hub model may be
    random, a local directory trained. A preset is random by construction whatever it measures.

    Args:
        model: Our PyTorch module.
        tokens: The validation text's ids (``text_tokens``).
        preset: Whether the weights are a preset's random initialisation.

    Returns:
        ``{"random": bool, "entropy": nats, "uniform": log(vocab_size), "share": their ratio,
        "reason": a sentence}``.
    """
    entropy = mean_entropy(teacher_forced_logits(TorchGPT2(model), tokens))
    uniform = math.log(model.config.vocab_size)
    share = entropy / uniform if uniform > 0 else 1.0
    flat = share >= FLAT_SHARE
    measured = f"mean next-token entropy on the {len(tokens)}-token validation text {entropy:.3g} nats, {share:.2%} of log(vocab_size) = {uniform:.3g}"
    if preset:
        reason = f"a preset, random by construction ({measured})"
    else:
        reason = f"{measured}, {'at least' if flat else 'under'} {FLAT_SHARE:.0%}"
    return {"random": preset or flat, "entropy": entropy, "uniform": uniform, "share": share, "reason": reason}


def format_value(value) -> str:
    """Integers as they are, floats in 4 significant digits; None (a non-finite value read back
    from JSON) as ``not finite``."""
    if value is None:
        return "not finite"
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def bound_text(row: CheckResult) -> str:
    """``<= 0.0001`` or ``>= 0.99``."""
    return ("≥ " if row.at_least else "≤ ") + format_value(row.limit)


def format_table(rows: list[CheckResult]) -> str:
    """A fixed-width text table of the rows."""
    header = ("check", "measured", "bound", "result")
    lines = [(r.name, format_value(r.measured), bound_text(r), "ok" if r.passed else "FAIL") for r in rows]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(4)]
    fmt = "  ".join(["{:<%d}" % widths[0], "{:>%d}" % widths[1], "{:>%d}" % widths[2], "{:<%d}" % widths[3]])
    rule = "-" * (sum(widths) + 6)
    return "\n".join([fmt.format(*header).rstrip(), rule, *(fmt.format(*line).rstrip() for line in lines)])


def failures(rows: list[CheckResult]) -> list[str]:
    """One sentence per failed row, naming the check and by how much it missed."""
    return [f"{r.name}: measured {format_value(r.measured)}, bound {bound_text(r)}" for r in rows if not r.passed]
