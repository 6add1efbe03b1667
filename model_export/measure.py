"""CPU measurements for the report: decoding speed per variant, and what the teaching outputs cost.

``attention_cost`` answers one design question with numbers: should the browser get one graph
that can also return ``attentions.{i}`` and ``hidden_states.{j}``, or a second, faster graph
without them? It times four ways of running the same weights, at several prompt lengths and
decode steps:

* ``plain``: the graph without the teaching outputs (logits and present only);
* ``full, fetch all``: the graph with them, every output fetched;
* ``full, fetch logits+present``: the graph with them, only generation's outputs fetched;
* ``fused``: ``plain`` after onnxscript's ONNX Runtime fusions (one MultiHeadAttention operator
  per layer, which never materialises the probabilities).

A model with a shorter context than GPT-2's 1024 positions gets the lengths that fit: the
longest prompt and the longest past become its own context (``fitted_lengths``), and the speed
runs a shorter prompt or fewer new tokens (``speed_lengths``).

It measures CPU time of one thread (``time.process_time``) rather than wall time, which other
processes on a shared machine disturb much more; the minimum over repetitions is kept.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .export import fuse_for_ort, io_names, without_outputs
from .gpt2 import GPT2Config
from .runtime import fit_greedy

PREFILL_LENGTHS = (64, 256, 1024)
DECODE_PASTS = (64, 256, 1023)
SPEED_PROMPT = 8  # tokens of the prompt before the timed greedy decoding


def fitted_lengths(lengths: tuple[int, ...], limit: int) -> list[int]:
    """``lengths`` with those above ``limit`` replaced by ``limit`` (once), in increasing order."""
    return sorted({min(n, limit) for n in lengths})


def speed_lengths(config: GPT2Config, new_tokens: int) -> tuple[int, int]:
    """``(prompt, new_tokens)`` of the speed measurement, fitted to the model's context."""
    return fit_greedy(config.n_positions, SPEED_PROMPT, new_tokens)


def _session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _feeds(config: GPT2Config, new: int, past: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    input_names, _ = io_names(config.n_layer)
    cache_shape = (1, config.n_head, past, config.head_dim)
    values = [
        rng.integers(0, config.vocab_size, (1, new), dtype=np.int64),  # input_ids
        np.ones((1, past + new), np.int64),  # attention_mask
        np.arange(past, past + new, dtype=np.int64)[None],  # position_ids
        *[rng.standard_normal(cache_shape).astype(np.float32) for _ in range(2 * config.n_layer)],
    ]
    return dict(zip(input_names, values, strict=True))


def prepare_attention_graphs(reference: Path, work_dir: Path) -> dict:
    """Writes ``plain.onnx`` and ``fused.onnx`` next to each other from the fp32 reference graph.

    Returns:
        ``{"plain": path, "fused": path, "fusions": {name: count}}``.
    """
    import onnx

    work_dir.mkdir(parents=True, exist_ok=True)
    plain, fused = work_dir / "plain.onnx", work_dir / "fused.onnx"
    onnx.save(without_outputs(onnx.load(str(reference))), str(plain))
    fusions = fuse_for_ort(plain, fused)
    return {"plain": plain, "fused": fused, "fusions": fusions}


def attention_cost(reference: Path, config: GPT2Config, work_dir: Path, repeats: int = 5, threads: int = 1, progress=print) -> dict:
    """Times the four ways of running the model (see the module docstring).

    Args:
        reference: The fp32 graph with ``attentions.{i}`` and ``hidden_states.{j}`` outputs.
        config: The model's configuration (lengths beyond its context become the context).
        work_dir: Where the plain and fused graphs are written.
        repeats: Timed runs per measurement; the minimum is kept (at least 2 for long prompts).
        threads: ONNX Runtime intra-op threads.
        progress: Called with a line of text per measurement.

    Returns:
        ``{"unit": "ms", "threads", "fusions", "configs": [...], "rows": [{"case", "tokens",
        "past", "<config>": ms, ...}], "attention_bytes": {...}}``.
    """
    graphs = prepare_attention_graphs(reference, work_dir)
    full = _session(reference, threads)
    plain = _session(graphs["plain"], threads)
    fused = _session(graphs["fused"], threads)
    _, core = io_names(config.n_layer)
    runs = {
        "plain": (plain, None),
        "full, fetch all": (full, None),
        "full, fetch logits+present": (full, core),
        "fused": (fused, None),
    }
    prefills = fitted_lengths(PREFILL_LENGTHS, config.n_positions)
    cases = [("prefill", n, 0) for n in prefills]
    cases += [("decode", 1, p) for p in fitted_lengths(DECODE_PASTS, config.n_positions - 1)]
    rng = np.random.default_rng(0)
    rows = []
    for case, new, past in cases:
        feeds = _feeds(config, new, past, rng)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for session, fetch in runs.values():
            session.run(fetch, feeds)  # warm-up: allocations, kernel selection
        count = repeats if new < 512 else max(2, repeats // 2)
        for _ in range(count):  # interleaved, so slow phases of the machine hit every config alike
            for name, (session, fetch) in runs.items():
                start = time.process_time()
                session.run(fetch, feeds)
                times[name].append(time.process_time() - start)
        row = {"case": case, "tokens": new, "past": past}
        row.update({name: round(min(values) * 1e3, 2) for name, values in times.items()})
        rows.append(row)
        progress(f"{case} {new} tokens, past {past}: " + ", ".join(f"{k} {row[k]} ms" for k in runs))
    bytes_per_token = 4 * config.n_layer * config.n_head  # one float per (layer, head, query, key)
    return {
        "unit": "ms of CPU time per forward pass, minimum over repetitions",
        "threads": threads,
        "repeats": repeats,
        "fusions": graphs["fusions"],
        "configs": list(runs),
        "rows": rows,
        "attention_bytes": {str(n): bytes_per_token * n * n for n in prefills},
    }


def speed_table(paths: dict[str, Path], config: GPT2Config, runs: int, new_tokens: int, threads: int | None, progress=print) -> dict:
    """Decoding speed (see ``runtime.decode_speed``) of several graphs.

    Args:
        paths: Variant name -> graph file.
        config: The model's configuration.
        runs: Timed runs per variant (median kept).
        new_tokens: Tokens generated per run, after a ``SPEED_PROMPT``-token prompt; both are
            cut to fit the context (``speed_lengths``), and the result says what ran.
        threads: ONNX Runtime intra-op threads (its default if None).
        progress: Called with a line of text per variant.

    Returns:
        Variant name -> ``decode_speed`` result, plus ``session_s`` (time to create the session).
    """
    from .runtime import OrtGPT2, decode_speed

    prompt, new_tokens = speed_lengths(config, new_tokens)
    result = {}
    for name, path in paths.items():
        start = time.perf_counter()
        runner = OrtGPT2(path, config, threads=threads, exact_integers=False)  # the CPU's own int8 kernels
        session_s = time.perf_counter() - start
        result[name] = {**decode_speed(runner, prompt, new_tokens, runs), "session_s": round(session_s, 2)}
        progress(f"{name}: {result[name]['tok_per_s']} tok/s (median of {runs})")
        del runner
    return result
