"""Numbers that say the export is right.

Three references are compared, each check yielding one ``CheckResult`` row:

* our PyTorch ``GPT2`` against Hugging Face's ``GPT2LMHeadModel`` (eager attention), on a left-padded
  batch and on a KV-cache decode step (the reference recomputes the whole sequence without cache);
* ONNX Runtime (CPU) against our PyTorch module, on the prefill (empty past) and on a decode step
  that feeds each runner's own present back as past;
* greedy and no-repeat greedy continuations: ONNX Runtime with its KV cache against PyTorch
  recomputing the full sequence each step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .gpt2 import GPT2
from .runtime import OrtGPT2, TorchGPT2, empty_past, greedy_with_cache, greedy_without_cache, positions_from_mask


@dataclass
class Tolerances:
    """Largest accepted value of each kind of measurement.

    Attributes:
        hf: Max abs logit difference, our module vs Hugging Face.
        ort: Max abs difference of logits and present, ONNX Runtime vs our module.
        tokens: Number of greedy tokens allowed to differ, ONNX Runtime vs PyTorch.
    """

    hf: float = 1e-5
    ort: float = 1e-4
    tokens: int = 0


@dataclass
class CheckResult:
    """One row of the validation table: passed means ``measured <= tolerance``."""

    name: str
    measured: float
    tolerance: float
    passed: bool

    def to_dict(self) -> dict:
        """Returns the row as a JSON-serialisable dict."""
        return asdict(self)


def check(name: str, measured: float, tolerance: float) -> CheckResult:
    """Builds a row. NaN never passes (every comparison with NaN is False)."""
    measured = int(measured) if isinstance(measured, int | np.integer) else float(measured)
    return CheckResult(name, measured, tolerance, bool(measured <= tolerance))


def max_abs_diff(a, b, where: np.ndarray | None = None) -> float:
    """Max |a - b| over arrays (or lists of arrays), optionally only where ``where`` is True."""
    if isinstance(a, list | tuple):
        return max(max_abs_diff(x, y) for x, y in zip(a, b, strict=True))
    diff = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    return float(diff[where].max() if where is not None else diff.max())


def example_batch(vocab_size: int, prompt_len: int = 8, pad: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two random prompts, the second left-padded by ``pad`` tokens.

    Returns:
        ``(input_ids, attention_mask)``, both (2, prompt_len) int64.
    """
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(0, vocab_size, (2, prompt_len), dtype=np.int64)
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


def prefill_then_decode(runner, input_ids: np.ndarray, attention_mask: np.ndarray, split: int):
    """Runs ``input_ids[:, :split]`` as a prefill, then the rest as one decode step with past.

    Returns:
        ``(prefill_logits, prefill_present, decode_logits, decode_present)``.
    """
    positions = positions_from_mask(attention_mask)
    batch = input_ids.shape[0]
    logits0, present0 = runner.run(
        input_ids[:, :split], attention_mask[:, :split], positions[:, :split], empty_past(runner.config, batch)
    )
    logits1, present1 = runner.run(input_ids[:, split:], attention_mask, positions[:, split:], present0)
    return logits0, present0, logits1, present1


def check_against_hf(model: GPT2, hf_model, tol: float, prompt_len: int = 8, decode_len: int = 3) -> list[CheckResult]:
    """Our PyTorch module vs Hugging Face's, on real (unpadded) token positions only."""
    input_ids, attention_mask = example_batch(model.config.vocab_size, prompt_len + decode_len)
    real = attention_mask.astype(bool)
    reference = hf_logits(hf_model, input_ids, attention_mask)  # (2, L, V)

    ours = TorchGPT2(model)
    _, _, full_logits, _ = prefill_then_decode(ours, input_ids, attention_mask, split=0)
    _, _, decode_logits, _ = prefill_then_decode(ours, input_ids, attention_mask, split=prompt_len)
    return [
        check("torch vs HF: logits, left-padded batch", max_abs_diff(full_logits, reference, real), tol),
        check(
            f"torch vs HF: logits, {decode_len} tokens after KV cache",
            max_abs_diff(decode_logits, reference[:, prompt_len:], real[:, prompt_len:]),
            tol,
        ),
    ]


def check_onnx(ort_runner: OrtGPT2, torch_runner: TorchGPT2, tol: float, prompt_len: int = 8) -> list[CheckResult]:
    """ONNX Runtime vs our PyTorch module: prefill with an empty past, then one decode token."""
    input_ids, attention_mask = example_batch(torch_runner.config.vocab_size, prompt_len + 1)
    ort_out = prefill_then_decode(ort_runner, input_ids, attention_mask, split=prompt_len)
    torch_out = prefill_then_decode(torch_runner, input_ids, attention_mask, split=prompt_len)
    names = ["logits, prefill (past 0)", "present, prefill", f"logits, decode (past {prompt_len})", "present, decode"]
    return [
        check(f"ORT vs torch: {name}", max_abs_diff(o, t), tol)
        for name, o, t in zip(names, ort_out, torch_out, strict=True)
    ]


def check_greedy(
    ort_runner: OrtGPT2, torch_runner: TorchGPT2, tol_tokens: int, new_tokens: int = 20, prompt_len: int = 8
) -> list[CheckResult]:
    """Greedy continuations: ONNX Runtime with KV cache vs PyTorch without cache."""
    prompt = example_batch(torch_runner.config.vocab_size, prompt_len)[0][0].tolist()
    rows = []
    for no_repeat, label in [(False, "greedy"), (True, "no-repeat greedy")]:
        got = greedy_with_cache(ort_runner, prompt, new_tokens, no_repeat)
        expected = greedy_without_cache(torch_runner, prompt, new_tokens, no_repeat)
        mismatches = sum(a != b for a, b in zip(got, expected, strict=True))
        rows.append(check(f"{label}, {new_tokens} tokens: ORT (cache) vs torch, tokens differing", mismatches, tol_tokens))
    return rows


def check_tied_embedding(onnx_path: str | Path, model: GPT2) -> CheckResult:
    """The (V, C) embedding, shared with the output layer, must be stored once."""
    import onnx

    from .export import tied_embedding_copies

    copies = tied_embedding_copies(onnx.load(str(onnx_path)), model.config)
    return check("model.onnx: extra copies of the tied embedding", abs(copies - 1), 0)


def validate(model: GPT2, hf_model, onnx_path: str | Path, tolerances: Tolerances | None = None) -> list[CheckResult]:
    """Runs every check.

    Args:
        model: Our PyTorch module, loaded from ``hf_model``.
        hf_model: The Hugging Face reference (eager attention, float32).
        onnx_path: The exported ``model.onnx``.
        tolerances: Limits; defaults if None.

    Returns:
        One row per check.
    """
    tolerances = tolerances or Tolerances()
    ort_runner, torch_runner = OrtGPT2(onnx_path, model.config), TorchGPT2(model)
    return [
        *check_against_hf(model, hf_model, tolerances.hf),
        *check_onnx(ort_runner, torch_runner, tolerances.ort),
        *check_greedy(ort_runner, torch_runner, tolerances.tokens),
        check_tied_embedding(onnx_path, model),
    ]


def format_value(value) -> str:
    """Integers as they are, floats in 3 significant digits."""
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def format_table(rows: list[CheckResult]) -> str:
    """A fixed-width text table of the rows."""
    header = ("check", "measured", "tolerance", "result")
    lines = [
        (r.name, format_value(r.measured), format_value(r.tolerance), "ok" if r.passed else "FAIL") for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(4)]
    fmt = "  ".join(["{:<%d}" % widths[0], "{:>%d}" % widths[1], "{:>%d}" % widths[2], "{:<%d}" % widths[3]])
    rule = "-" * (sum(widths) + 6)
    return "\n".join([fmt.format(*header).rstrip(), rule, *(fmt.format(*line).rstrip() for line in lines)])


def failures(rows: list[CheckResult]) -> list[str]:
    """One sentence per failed row, naming the check and by how much it missed."""
    return [
        f"{r.name}: measured {format_value(r.measured)} > tolerance {format_value(r.tolerance)}"
        for r in rows
        if not r.passed
    ]
