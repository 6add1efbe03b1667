"""Run the exported graphs and the PyTorch module side by side, with NumPy in and out.

Both runners share one call, ``run(input_ids, attention_mask, position_ids, past)`` returning
``(logits, present)``, so the validation, the greedy decoding and the speed measurement are
written once. Every variant takes and returns float32, whatever its weights are stored as.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
import torch

from .export import io_names, new_key_value_names
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


def left_pad(prompts: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Packs prompts of different lengths into one batch, padding on the left.

    Returns:
        ``(input_ids, attention_mask)``, both (B, longest) int64.
    """
    longest = max(len(p) for p in prompts)
    input_ids = np.full((len(prompts), longest), pad_id, np.int64)
    attention_mask = np.zeros((len(prompts), longest), np.int64)
    for row, prompt in enumerate(prompts):
        input_ids[row, longest - len(prompt) :] = prompt
        attention_mask[row, longest - len(prompt) :] = 1
    return input_ids, attention_mask


def cpu_session(path: str | Path, options, exact_integers: bool = True):
    """An onnxruntime CPU session over a graph file; with ``exact_integers`` its int8 products
    computed exactly whatever the CPU (:func:`exact_integer_products`)."""
    import onnx
    import onnxruntime as ort

    if exact_integers:
        proto = onnx.load(str(path))  # with its external-data pieces
        if exact_integer_products(proto):
            return ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def exact_integer_products(proto) -> bool:
    """Gives every MatMulInteger an uint8 weight and zero point (each its int8 one + 128, by three
    nodes that onnxruntime folds once) in place; True when there was one.

    The product (A - a0)(B - b0) is unchanged, but onnxruntime then runs its uint8 x uint8
    kernel. Its int8-weight kernel on an x86 CPU with AVX2 and no VNNI (``vpmaddubsw``)
    saturates sums of two products at 16 bits, so there a q8 graph's logits were seen off by up
    to 4 from the same graph's in WebAssembly, which does not saturate (nor does a VNNI CPU).
    """
    from onnx import TensorProto, helper

    initializers = {t.name: t.data_type for t in proto.graph.initializer}
    signed = lambda name: initializers.get(name, TensorProto.INT8) == TensorProto.INT8  # noqa: E731 (a computed weight: the int8 table's transpose)
    nodes = [n for n in proto.graph.node if n.op_type == "MatMulInteger" and len(n.input) == 4 and signed(n.input[1]) and signed(n.input[3])]
    if not nodes:
        return False
    proto.graph.initializer.append(helper.make_tensor("exact.offset", TensorProto.INT32, [], [128]))
    added, unsigned = [], {}
    for node in nodes:
        for slot in (1, 3):
            name = node.input[slot]
            if name not in unsigned:
                unsigned[name] = f"{name}.u8"
                added += [
                    helper.make_node("Cast", [name], [f"{name}.i32"], to=TensorProto.INT32),
                    helper.make_node("Add", [f"{name}.i32", "exact.offset"], [f"{name}.shifted"]),
                    helper.make_node("Cast", [f"{name}.shifted"], [unsigned[name]], to=TensorProto.UINT8),
                ]
            node.input[slot] = unsigned[name]
    proto.graph.node.extend(added)
    topological_order(proto)
    return True


def topological_order(proto) -> None:
    """Orders the graph's nodes so that each comes after the producers of its inputs."""
    available = {i.name for i in proto.graph.input} | {t.name for t in proto.graph.initializer} | {""}
    pending, ordered = list(proto.graph.node), []
    while pending:
        ready = [n for n in pending if all(i in available for i in n.input)]
        if not ready:
            raise ValueError("the graph has a cycle or an input nothing produces")
        for n in ready:
            ordered.append(n)
            available.update(n.output)
        done = {id(n) for n in ready}
        pending = [n for n in pending if id(n) not in done]
    del proto.graph.node[:]
    proto.graph.node.extend(ordered)


class OrtGPT2:
    """An ONNX Runtime session (CPU execution provider) over one exported graph.

    Args:
        path: The graph file; its external-data pieces are read from its directory.
        config: The model's configuration.
        threads: Intra-op threads; ONNX Runtime's default if None.
        exact_integers: Compute an int8 graph's products exactly (:func:`cpu_session`); False
            runs the CPU's own int8 kernel, as a speed measurement should.
    """

    def __init__(self, path: str | Path, config: GPT2Config, threads: int | None = None, exact_integers: bool = True):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # keep ORT's node-placement notes out of the tables
        if threads:
            options.intra_op_num_threads = threads
        self.session = cpu_session(path, options, exact_integers)
        self.config = config
        self.input_names, core = io_names(config.n_layer)
        self.output_names = [o.name for o in self.session.get_outputs()]
        self.core_outputs = core  # logits and present: what generation needs

    def feeds(self, input_ids, attention_mask, position_ids, past) -> dict[str, np.ndarray]:
        """The graph's input dict."""
        return dict(zip(self.input_names, [input_ids, attention_mask, position_ids, *past], strict=True))

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray, position_ids: np.ndarray, past: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """One forward pass. Returns logits (B, T, V) and present, ``2 * n_layer`` (B, nh, P+T, hd)."""
        logits, *present = self.session.run(self.core_outputs, self.feeds(input_ids, attention_mask, position_ids, past))
        return logits, present

    def run_all(self, input_ids, attention_mask, position_ids, past) -> dict[str, np.ndarray]:
        """One forward pass returning every output of the graph by name."""
        values = self.session.run(None, self.feeds(input_ids, attention_mask, position_ids, past))
        return dict(zip(self.output_names, values, strict=True))


def prompt_outputs(runner: OrtGPT2, ids: list[int]) -> dict[str, np.ndarray]:
    """Every output of the graph, by name, for one pass over the prompt ``ids`` (batch of one,
    empty cache): what the site's parity figures and their tests compare."""
    x = np.array([ids], np.int64)  # (1, T)
    positions = np.arange(len(ids), dtype=np.int64)[None]  # (1, T)
    return runner.run_all(x, np.ones_like(x), positions, empty_past(runner.config, 1))


class TorchGPT2:
    """The PyTorch module behind the same NumPy interface as ``OrtGPT2``."""

    def __init__(self, model: GPT2):
        self.model = model.eval()
        self.config = model.config

    @torch.no_grad()
    def run_all(self, input_ids, attention_mask, position_ids, past) -> dict[str, np.ndarray]:
        """One forward pass returning every output the graph has, named as in the graph: the
        module's own, then ``new.{i}.key/value``, the last ``T`` positions of its present."""
        args = [torch.from_numpy(np.ascontiguousarray(a)) for a in (input_ids, attention_mask, position_ids, *past)]
        _, names = io_names(self.config.n_layer, self.model.output_attentions, self.model.output_hidden_states)
        outputs = {name: t.numpy() for name, t in zip(names, self.model(*args), strict=True)}
        T = input_ids.shape[1]
        for name in new_key_value_names(self.config.n_layer):
            outputs[name] = outputs[name.replace("new.", "present.")][:, :, -T:]  # (B, nh, T, hd)
        return outputs

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray, position_ids: np.ndarray, past: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """One forward pass. Returns logits (B, T, V) and present, ``2 * n_layer`` (B, nh, P+T, hd)."""
        outputs = self.run_all(input_ids, attention_mask, position_ids, past)
        _, core = io_names(self.config.n_layer)
        return outputs["logits"], [outputs[name] for name in core[1:]]


def choose_next(last_logits: np.ndarray, generated: np.ndarray, no_repeat: bool) -> np.ndarray:
    """Greedy choice per row; with ``no_repeat`` each row's already generated ids are banned.

    A random-weight model tends to repeat one token forever, which would make a comparison of
    two greedy runs trivially easy; banning repeats forces it through many different ids.

    Args:
        last_logits: (B, V) logits of the last position.
        generated: (B, n) ids generated so far.
        no_repeat: Ban ids already generated.

    Returns:
        (B,) int64 chosen ids.
    """
    scores = last_logits.astype(np.float64)  # (B, V)
    if no_repeat and generated.shape[1]:
        np.put_along_axis(scores, generated, -np.inf, axis=1)
    return scores.argmax(axis=1).astype(np.int64)


def greedy(runner, prompts: list[list[int]], new_tokens: int, *, no_repeat: bool = False, use_cache: bool = True) -> np.ndarray:
    """Greedy decoding of a batch of prompts, left-padded to a common length.

    With ``use_cache`` each step feeds the previous step's present back as past and runs only
    the new token; without it every step reprocesses the whole sequence with an empty past.

    Args:
        runner: ``OrtGPT2`` or ``TorchGPT2``.
        prompts: Token ids of each sequence (lengths may differ).
        new_tokens: How many ids to generate per sequence.
        no_repeat: Ban ids already generated in that sequence.
        use_cache: Use the KV cache.

    Returns:
        (B, new_tokens) int64 generated ids.

    Raises:
        ValueError: If the longest prompt and the new tokens do not fit the model's context.
    """
    needed = greedy_positions(max(len(p) for p in prompts), new_tokens)
    if needed > runner.config.n_positions:
        raise ValueError(
            f"greedy decoding of {new_tokens} tokens after these prompts needs {needed} positions; the model has {runner.config.n_positions} (see fit_greedy)"
        )
    input_ids, attention_mask = left_pad(prompts)  # (B, L)
    batch = len(prompts)
    generated = np.zeros((batch, 0), np.int64)
    step_ids, past = input_ids, empty_past(runner.config, batch)
    step_positions = positions_from_mask(attention_mask)
    for _ in range(new_tokens):
        if use_cache:
            logits, past = runner.run(step_ids, attention_mask, step_positions, past)
        else:
            full_ids = np.concatenate([input_ids, generated], axis=1)
            positions = positions_from_mask(attention_mask)
            logits, _ = runner.run(full_ids, attention_mask, positions, empty_past(runner.config, batch))
        chosen = choose_next(logits[:, -1], generated, no_repeat)  # (B,)
        generated = np.concatenate([generated, chosen[:, None]], axis=1)
        step_ids = chosen[:, None]  # (B, 1)
        step_positions = attention_mask.sum(axis=1, keepdims=True).astype(np.int64)  # (B, 1) next position
        attention_mask = np.concatenate([attention_mask, np.ones((batch, 1), np.int64)], axis=1)
    return generated


def greedy_positions(prompt_len: int, new_tokens: int) -> int:
    """Positions ``greedy`` feeds the model: the prompt and every generated token but the last."""
    return prompt_len + new_tokens - 1


def fit_greedy(n_positions: int, prompt_len: int, new_tokens: int) -> tuple[int, int]:
    """A prompt length and a number of new tokens that ``greedy`` can run within the context.

    The prompt is cut to at most half the context, then the new tokens to what is left, so
    that ``greedy_positions(prompt, new) <= n_positions``; lengths that fit stay as they are.

    Args:
        n_positions: The model's context (``GPT2Config.n_positions``).
        prompt_len: The wanted prompt length (>= 1).
        new_tokens: The wanted number of generated tokens (>= 1).

    Returns:
        ``(prompt_len, new_tokens)``, each >= 1 for a context of at least 2.
    """
    prompt = max(1, min(prompt_len, n_positions // 2))
    return prompt, max(1, min(new_tokens, n_positions - prompt + 1))


def decode_speed(runner, prompt_len: int = 8, new_tokens: int = 64, runs: int = 5) -> dict:
    """Tokens per second of greedy decoding with the KV cache, batch 1.

    One untimed warm-up run, then ``runs`` timed runs of a ``prompt_len``-token prompt followed
    by ``new_tokens`` generated tokens (the prompt's forward pass included in the time). Both
    must fit the context (see ``fit_greedy``).

    Returns:
        ``{"tok_per_s": median, "tok_per_s_runs": [...], "prompt": prompt_len, "new_tokens": ...}``.
    """
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, runner.config.vocab_size, prompt_len).tolist()
    greedy(runner, [prompt], min(4, new_tokens))
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        greedy(runner, [prompt], new_tokens)
        rates.append(new_tokens / (time.perf_counter() - start))
    return {
        "tok_per_s": round(statistics.median(rates), 1),
        "tok_per_s_runs": [round(r, 1) for r in rates],
        "prompt": prompt_len,
        "new_tokens": new_tokens,
    }
