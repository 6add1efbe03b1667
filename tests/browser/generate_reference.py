"""The Python reference for the browser runtime's generation (its own checks are in
``test_generate_reference.py``).

The browser tests (``test_generate.py``, ``test_runtime.py``, ``test_faults.py``,
``test_next_token_widget.py``) compare what the browser shows with what this module computes
on the same model files:

* :class:`Mulberry32` and :func:`sample_token` are written from the specification in
  ``site_src/runtime/rng.js`` and ``sampler.js`` (same arithmetic, same order of
  summation), so a seed gives the same tokens here and there;
* :class:`ServedGraph` runs the served ONNX graph with onnxruntime (CPU) and a KV cache,
  one prefill then one-token steps, like ``model-worker.js``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from model_export import runtime
from model_export.gpt2 import GPT2Config

ROOT = Path(__file__).resolve().parents[2]
MASK = 0xFFFFFFFF

# Variants whose logits in the browser match onnxruntime in Python to ~1e-6. q8 quantizes
# activations on the fly, and its int8 kernels round differently on x86 and in WASM: its
# logits differ by ~1e-2 (GPT-2 small shape), too much to compare token choices exactly.
EXACT_VARIANTS = ("q4x", "fp32", "q4")

# Outputs of `new Rng(seed).random()` in site_src/runtime/rng.js (node 20, also tests/js/runtime.test.js).
JS_RANDOM = {42: [0.6011037487409305, 0.8524657984803172], 0: [0.26642920822150806, 0.22327202667446544]}


# ----------------------------------------------------------------------------
# the reference: random numbers, sampling, and the model with a KV cache


def _imul(a: int, b: int) -> int:
    """JavaScript's Math.imul on unsigned 32-bit patterns."""
    return (a * b) & MASK


class Mulberry32:
    """The runtime's seeded generator (rng.js): Mulberry32, 53-bit doubles from two outputs."""

    def __init__(self, seed: int):
        self.state = seed & MASK

    def next_uint32(self) -> int:
        self.state = (self.state + 0x6D2B79F5) & MASK
        t = self.state
        t = _imul(t ^ (t >> 15), t | 1)
        t = (t ^ ((t + _imul(t ^ (t >> 7), t | 61)) & MASK)) & MASK
        return (t ^ (t >> 14)) & MASK

    def random(self) -> float:
        a = self.next_uint32() >> 5
        b = self.next_uint32() >> 6
        return (a * 67108864 + b) / 9007199254740992


def sample_token(logits: np.ndarray, temperature: float, top_k: int, top_p: float, rng: Mulberry32) -> int:
    """Next token id by the rules of sampler.js, step for step.

    Args:
        logits: (V,) float32 or float64 scores.
        temperature: 0 for greedy, else > 0.
        top_k: 0 for off.
        top_p: 1 for off.
        rng: the generator; one draw per sampled token (none for greedy).
    """
    z = np.asarray(logits, dtype=np.float64)  # (V,)
    V = z.size
    if temperature == 0:
        return int(np.argmax(z))  # first of tied maxima
    scaled = (z - z.max()) / temperature  # (V,) <= 0
    weights = np.exp(scaled)  # (V,)
    floor = -math.inf
    if 0 < top_k < V:
        floor = float(np.sort(scaled)[V - top_k])  # k-th largest; ties with it survive
    if top_p < 1:
        candidates = scaled >= floor
        total = float(np.cumsum(weights[candidates])[-1])  # sequential sum in id order
        bound = top_p * total
        values = np.sort(scaled[candidates])[::-1]  # most likely first
        before = np.concatenate([[0.0], np.cumsum(np.exp(values))[:-1]])  # mass ahead of each value
        reached = np.flatnonzero(before >= bound)
        count = int(reached[0]) if reached.size else values.size
        floor = float(values[count - 1])
    keep = (scaled >= floor) & (weights > 0)
    ids = np.flatnonzero(keep)
    running = np.cumsum(weights[ids])  # id order
    target = rng.random() * float(running[-1])
    j = int(np.searchsorted(running, target, side="right"))  # first running total above the target
    return int(ids[min(j, ids.size - 1)])


def model_probability(logits: np.ndarray, token: int) -> float:
    """softmax(logits)[token] at temperature 1, float64."""
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max())
    return float(e[token] / e.sum())


class ServedGraph:
    """The served graph in onnxruntime (CPU, one thread: model_export.runtime's session and
    feeds), decoding with a KV cache as model-worker.js does."""

    def __init__(self, graph_path: Path, config: dict):
        self.runner = runtime.OrtGPT2(graph_path, GPT2Config(**config), threads=1)
        self.outputs = self.runner.output_names  # every output of the graph, by name
        self.config = config

    def _step(self, ids: list[int], past_length: int, past: list[np.ndarray] | None) -> tuple[np.ndarray, list[np.ndarray]]:
        """Last position's logits (V,) and the present of one pass over `ids` after `past_length` cached ones."""
        x = np.array([ids], dtype=np.int64)  # (1, T)
        mask = np.ones((1, past_length + len(ids)), dtype=np.int64)  # (1, P + T)
        positions = np.arange(past_length, past_length + len(ids), dtype=np.int64)[None]  # (1, T)
        logits, present = self.runner.run(x, mask, positions, past if past is not None else runtime.empty_past(self.runner.config, 1))
        return logits[0, -1], present

    def run(self, ids: list[int], names: list[str]) -> dict[str, np.ndarray]:
        """Outputs `names` of one prefill over `ids` (empty cache)."""
        outputs = runtime.prompt_outputs(self.runner, ids)
        return {name: outputs[name] for name in names}

    def logits(self, ids: list[int]) -> np.ndarray:
        """(T, V) logits of a prefill over `ids`."""
        return self.run(ids, ["logits"])["logits"][0]

    def generate(
        self, ids: list[int], *, max_new_tokens: int, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0, stop_at_eos: bool = True
    ) -> list[tuple[int, float]]:
        """(token id, model probability) pairs, as model-worker.js produces them."""
        cfg = self.config
        rng = Mulberry32(seed)
        limit = min(max_new_tokens, cfg["n_positions"] - len(ids))
        logits, past = self._step(ids, 0, None)
        tokens = []
        for n in range(limit):
            token = sample_token(logits, temperature, top_k, top_p, rng)
            tokens.append((token, model_probability(logits, token)))
            if (stop_at_eos and token == cfg["eos_token_id"]) or n == limit - 1:
                break
            logits, past = self._step([token], len(ids) + n, past)
        return tokens


def exact_variant(manifest: dict, backend: str) -> str:
    """The variant to compare exactly on `backend`: q4x, fp32 or q4 when the model has them."""
    names = [v["name"] for v in manifest["variants"] if backend in v["backends"]]
    for name in EXACT_VARIANTS:
        if name in names:
            return name
    return manifest.get("default_variants", {}).get(backend) or names[0]


def graph_path(model_dir: Path, manifest: dict, variant_name: str) -> Path:
    """Path of a graph onnxruntime can open for a variant: its graph file (the data pieces sit
    beside it), or for a compact variant (q4x) the graph expanded by model_export.compact,
    cached in the temporary directory under the index's sha256."""
    import tempfile

    from model_export.expand import onnx_graph

    variant = next(v for v in manifest["variants"] if v["name"] == variant_name)
    graph = model_dir / next(f["path"] for f in variant["files"] if f.get("role", "graph") == "graph")
    key = next((f["sha256"] for f in variant["files"] if f.get("role") == "index"), variant_name)
    return onnx_graph(graph.parent, Path(tempfile.gettempdir()) / "tx-expanded" / f"{key}.onnx")


def add_variant_widget(p, tag: str, variant: str, place: str) -> str:
    """Put a ``<tag id="exact" variant=...>`` into the page by the DOM call `place` on `el` (such as
    ``document.querySelector('article').append(el)``); returns its selector."""
    p.evaluate(
        f"""(variant) => {{
      const el = document.createElement({tag!r});
      el.id = 'exact';
      el.setAttribute('variant', variant);
      {place};
    }}""",
        variant,
    )
    return f"{tag}#exact"


def model_widget_ready(p, selector: str, timeout: int = 120_000):
    """Wait until the model widget at `selector` has loaded its model (or failed); assert it is
    ready and return its locator."""
    p.wait_for_function(
        "(sel) => { const el = document.querySelector(sel);"
        " return el && (el.dataset.state === 'ready' || el.dataset.state === 'error') && el.dataset.backend; }",
        arg=selector,
        timeout=timeout,
    )
    widget = p.locator(selector)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    return widget
