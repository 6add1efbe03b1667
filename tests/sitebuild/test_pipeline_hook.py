"""pipeline_hook.py: weights found by following the ONNX graph, their place in the q4x files, parity logits."""

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from model_export.gpt2 import GPT2Config
from model_export.runtime import OrtGPT2, prompt_outputs
from sitebuild import pipeline_hook as hook

ROOT = Path(__file__).resolve().parents[2]


MODEL = ROOT / "build" / "models" / "tiny"
needs_model = pytest.mark.skipif(hook.reference_graph(MODEL) is None if MODEL.is_dir() else True,
                                 reason="build/models/tiny is not built")


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def run_graph(graph, cfg):
    """A graph's outputs for the parity prompt (onnxruntime), by name."""
    return prompt_outputs(OrtGPT2(graph, GPT2Config(**cfg)), hook.PARITY_IDS)


@pytest.fixture(scope="module")
def graph_and_outputs():
    """The tiny model's fp32 graph and its outputs for a fixed prompt (onnxruntime)."""
    graph = hook.reference_graph(MODEL)
    cfg = json.loads((MODEL / "manifest.json").read_text())["config"]
    return graph, cfg, run_graph(graph, cfg)


def numpy_gpt2(w, cfg, ids):
    """GPT-2 in NumPy (float64) from weights by role, linear layers (in, out): every graph output."""
    C, H = cfg["n_embd"], cfg["n_head"]
    hd = C // H
    T = len(ids)
    x = w("wte")[ids].astype(np.float64) + w("wpe")[:T]
    out = {"hidden_states.0": x}
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(cfg["n_layer"]):
        b = lambda role, i=i: w(f"blocks.{i}.{role}")  # noqa: E731
        qkv = layer_norm(x, b("ln_1.weight"), b("ln_1.bias")) @ b("attn.c_attn.weight") + b("attn.c_attn.bias")
        q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, H, hd).transpose(1, 0, 2) for j in range(3))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[f"attentions.{i}"] = p
        y = (p @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + y @ b("attn.c_proj.weight") + b("attn.c_proj.bias")
        h = layer_norm(x, b("ln_2.weight"), b("ln_2.bias")) @ b("mlp.c_fc.weight") + b("mlp.c_fc.bias")
        h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
        x = x + h @ b("mlp.c_proj.weight") + b("mlp.c_proj.bias")
        out[f"hidden_states.{i + 1}"] = x
    out["logits"] = layer_norm(x[-1], w("ln_f.weight"), w("ln_f.bias")) @ w("wte").T
    return out


def assert_matches_graph(mine, graph_out, cfg):
    """NumPy's tensors against the graph's, with the bounds of float32 onnxruntime."""
    for i in range(cfg["n_layer"]):
        assert np.allclose(mine[f"attentions.{i}"], graph_out[f"attentions.{i}"][0], atol=1e-5)
    for j in range(cfg["n_layer"] + 1):
        assert np.allclose(mine[f"hidden_states.{j}"], graph_out[f"hidden_states.{j}"][0], atol=1e-6 if j == 0 else 1e-4)
    assert np.allclose(mine["logits"], graph_out["logits"][0, -1], atol=1e-4)


@needs_model
def test_weights_read_from_the_graph_reproduce_its_outputs(graph_and_outputs):
    """A NumPy GPT-2 with the weights found by following the fp32 graph gives the graph's tensors."""
    graph, cfg, out = graph_and_outputs
    w = hook.read_weights(graph, cfg["n_layer"])
    state = {"wte": w.wte, "wpe": w.wpe, "ln_f.weight": w.ln_f["weight"], "ln_f.bias": w.ln_f["bias"]}
    for i, block in enumerate(w.blocks):
        state |= {f"blocks.{i}.{role}": value.T if value.ndim == 2 else value for role, value in block.items()}
    assert_matches_graph(numpy_gpt2(state.__getitem__, cfg, hook.PARITY_IDS), out, cfg)


@pytest.fixture(scope="module")
def layout():
    """The figures' weight layout of the tiny model, and the graph its q4x files expand to."""
    from model_export.expand import onnx_graph

    manifest = json.loads((MODEL / "manifest.json").read_text())
    expanded = onnx_graph(MODEL / "q4x", MODEL / ".build" / "q4x-expanded.onnx")
    return hook.weight_layout(MODEL, manifest), manifest, expanded


@needs_model
def test_layout_weights_are_the_q4x_sessions_own(layout):
    """Each weight the figures read, expanded from the q4x pieces, is bit for bit the initializer
    the q4x session computes with, and a NumPy GPT-2 of them gives that session's outputs."""
    import onnx
    from onnx import numpy_helper

    lay, manifest, expanded = layout
    cfg = manifest["config"]
    assert lay["variant"] == hook.WEIGHTS_VARIANT == "q4x"
    tensors = lay["tensors"]
    roles = ["wte", "wpe", "ln_f.weight", "ln_f.bias"] + [f"blocks.{i}.{r}" for i in range(cfg["n_layer"]) for r in hook.BLOCK_ROLES]
    assert sorted(tensors) == sorted(roles)
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(expanded)).graph.initializer}
    weights = {role: hook.layout_tensor(MODEL / "q4x", entry) for role, entry in tensors.items()}
    for role, entry in tensors.items():
        assert weights[role].dtype == np.float32 and list(weights[role].shape) == entry["shape"]
        assert np.array_equal(weights[role], inits[entry["name"]]), role  # bit-identical, so parity is float rounding only
    C = cfg["n_embd"]
    assert tensors["wte"]["shape"] == [cfg["vocab_size"], C] and tensors["blocks.0.mlp.c_fc.weight"]["shape"] == [C, 4 * C]
    assert_matches_graph(numpy_gpt2(weights.__getitem__, cfg, hook.PARITY_IDS), run_graph(expanded, cfg), cfg)


@needs_model
def test_index_has_no_weight_files_and_parity(tmp_path, graph_and_outputs):
    graph, cfg, out = graph_and_outputs
    index = hook.write_tables(MODEL, tmp_path / "tables")
    written = sorted(str(f.relative_to(tmp_path / "tables")) for f in (tmp_path / "tables").rglob("*") if f.is_file())
    assert written == ["index.json"] + sorted(e["path"] for e in index["parity"]["logits"] if "path" in e)
    assert "files" not in index and index["format"] == hook.TABLES_FORMAT
    chunked = {c["tensor"] for c in json.loads((MODEL / "q4x" / "expand.json").read_text())["chunks"]}
    for entry in index["weights"]["tensors"].values():
        assert (entry["name"] in chunked) != ("values" in entry)  # in the packed files, or small enough to travel here
    assert len(json.dumps(index)) < 100_000

    parity = index["parity"]
    if parity["missing"]:
        pytest.skip(parity["missing"])
    logits = {}
    for e in parity["logits"]:
        if "path" in e:
            data = (tmp_path / "tables" / e["path"]).read_bytes()
            assert len(data) == e["bytes"] and hashlib.sha256(data).hexdigest() == e["sha256"]
            logits[e["source"]] = np.frombuffer(data, "<f4")
    assert np.abs(logits["torch"] - logits["ort-fp32"]).max() < 1e-4
    assert np.abs(logits["ort-fp32"] - out["logits"][0, -1]).max() == 0


@needs_model
def test_a_model_without_q4x_says_why():
    manifest = json.loads((MODEL / "manifest.json").read_text())
    manifest["variants"] = [v for v in manifest["variants"] if v["name"] != "q4x"]
    lay = hook.weight_layout(MODEL, manifest)
    assert lay["variant"] is None and "q4x" in lay["missing"]


def test_no_model_no_tables(tmp_path):
    config = {"extra": {"tx_model": "no-such-model-here"}, "site_dir": str(tmp_path)}
    assert hook.on_post_build(config) is None
    assert not any(tmp_path.iterdir())


def test_parity_ids_are_the_seed_example():
    tokenizers = pytest.importorskip("transformers")
    tok = tokenizers.GPT2TokenizerFast.from_pretrained(MODEL) if (MODEL / "vocab.json").is_file() else pytest.skip("no tokenizer files")
    assert tok.encode(hook.PARITY_TEXT) == hook.PARITY_IDS
