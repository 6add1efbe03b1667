"""Run the exported graph and the PyTorch module side by side, with NumPy in and out.

Both runners share one call signature, ``run(input_ids, attention_mask, position_ids, past)``
returning ``(logits, present)``, so the validation and greedy decoding code is written once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .export import io_names
from .gpt2 import GPT2, GPT2Config


def empty_past(config: GPT2Config, batch_size: int) -> list[np.ndarray]:
    """A zero-length cache: ``2 * n_layer`` float32 arrays of shape (B, nh, 0, hd)."""
    shape = (batch_size, config.n_head, 0, config.head_dim)
    return [np.zeros(shape, np.float32) for _ in range(2 * config.n_layer)]


def positions_from_mask(attention_mask: np.ndarray) -> np.ndarray:
    """Absolute positions of every token given a left-padded mask: real tokens count from 0.

    Args:
        attention_mask: (B, L) int, 1 = real token, 0 = padding.

    Returns:
        (B, L) int64; padding positions are 0.
    """
    return np.maximum(np.cumsum(attention_mask, axis=-1) - 1, 0).astype(np.int64)


class OrtGPT2:
    """An ONNX Runtime session over ``model.onnx`` (CPU execution provider).

    Args:
        path: The exported ONNX file.
        config: The model's configuration.
        threads: Intra-op threads; ONNX Runtime's default if None.
    """

    def __init__(self, path: str | Path, config: GPT2Config, threads: int | None = None):
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.config = config
        self.input_names, _ = io_names(config.n_layer)
        self.output_names = [o.name for o in self.session.get_outputs()]

    def run(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, position_ids: np.ndarray, past: list[np.ndarray]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """One forward pass. Returns logits (B, T, V) and present, ``2 * n_layer`` (B, nh, P+T, hd)."""
        feeds = dict(zip(self.input_names, [input_ids, attention_mask, position_ids, *past]))
        logits, *present = self.session.run(None, feeds)
        return logits, present[: 2 * self.config.n_layer]


class TorchGPT2:
    """The PyTorch module behind the same NumPy interface as ``OrtGPT2``."""

    def __init__(self, model: GPT2):
        self.model = model.eval()
        self.config = model.config

    @torch.no_grad()
    def run(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, position_ids: np.ndarray, past: list[np.ndarray]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """One forward pass. Returns logits (B, T, V) and present, ``2 * n_layer`` (B, nh, P+T, hd)."""
        args = [torch.from_numpy(np.ascontiguousarray(a)) for a in (input_ids, attention_mask, position_ids, *past)]
        logits, *present = self.model(*args)
        return logits.numpy(), [p.numpy() for p in present[: 2 * self.config.n_layer]]


def next_token(last_logits: np.ndarray, generated: list[int], no_repeat: bool) -> int:
    """Greedy choice for one sequence; with ``no_repeat`` the ids generated so far are banned.

    A random-weight model tends to repeat one token forever, which would make a comparison of
    two greedy runs trivially easy; banning repeats forces it through many different ids.
    """
    scores = last_logits.astype(np.float64)  # (V,)
    if no_repeat and generated:
        scores[generated] = -np.inf
    return int(scores.argmax())


def greedy_with_cache(runner, prompt: list[int], new_tokens: int, no_repeat: bool = False) -> list[int]:
    """Greedy decoding that feeds each step's present back as the next step's past.

    Args:
        runner: ``OrtGPT2`` or ``TorchGPT2``.
        prompt: Token ids of one sequence.
        new_tokens: How many ids to generate.
        no_repeat: Ban ids already generated.

    Returns:
        The generated ids.
    """
    input_ids = np.array([prompt], np.int64)  # (1, T)
    position_ids = np.arange(len(prompt), dtype=np.int64)[None]  # (1, T)
    past = empty_past(runner.config, 1)
    generated: list[int] = []
    for _ in range(new_tokens):
        total = len(prompt) + len(generated)
        attention_mask = np.ones((1, total), np.int64)  # (1, P+T)
        logits, past = runner.run(input_ids, attention_mask, position_ids, past)
        generated.append(next_token(logits[0, -1], generated, no_repeat))
        input_ids = np.array([[generated[-1]]], np.int64)  # (1, 1)
        position_ids = np.array([[total]], np.int64)  # (1, 1)
    return generated


def greedy_without_cache(runner, prompt: list[int], new_tokens: int, no_repeat: bool = False) -> list[int]:
    """Greedy decoding that reprocesses the whole sequence at every step (no cache at all).

    Same arguments and result as ``greedy_with_cache``.
    """
    generated: list[int] = []
    for _ in range(new_tokens):
        ids = prompt + generated
        input_ids = np.array([ids], np.int64)  # (1, L)
        attention_mask = np.ones_like(input_ids)  # (1, L)
        position_ids = np.arange(len(ids), dtype=np.int64)[None]  # (1, L)
        logits, _ = runner.run(input_ids, attention_mask, position_ids, empty_past(runner.config, 1))
        generated.append(next_token(logits[0, -1], generated, no_repeat))
    return generated
