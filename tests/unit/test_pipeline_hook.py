"""pipeline_hook.py: weights read from the ONNX graph, table files, parity logits."""

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "site_src"))

import pipeline_hook as hook  # noqa: E402

MODEL = ROOT / "build" / "models" / "tiny"
needs_model = pytest.mark.skipif(hook.reference_graph(MODEL) is None if MODEL.is_dir() else True,
                                 reason="build/models/tiny is not built")


@settings(max_examples=40, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(1, 6), st.integers(1, 9)),
              elements=st.floats(-100, 100, width=32)))
def test_int8_rows_round_trip_within_half_a_step(matrix):
    q, scale = hook.quantize_rows(matrix)
    assert q.dtype == np.int8 and np.abs(q.astype(int)).max() <= 127
    err = np.abs(hook.dequantize_rows(q, scale) - matrix)
    assert (err <= scale[:, None] * 0.5 + 1e-6 * np.abs(matrix).max(initial=0) + 1e-30).all()


def test_zero_rows_stay_zero():
    q, scale = hook.quantize_rows(np.zeros((2, 3), np.float32))
    assert not q.any() and not scale.any()


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


@pytest.fixture(scope="module")
def graph_and_outputs():
    """The tiny model's fp32 graph and its outputs for a fixed prompt (onnxruntime)."""
    ort = pytest.importorskip("onnxruntime")
    graph = hook.reference_graph(MODEL)
    cfg = json.loads((MODEL / "manifest.json").read_text())["config"]
    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    ids = np.array([hook.PARITY_IDS], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": np.arange(ids.shape[1])[None]}
    hd = cfg["n_embd"] // cfg["n_head"]
    for i in range(cfg["n_layer"]):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{i}.{kv}"] = np.zeros((1, cfg["n_head"], 0, hd), np.float32)
    names = [o.name for o in session.get_outputs()]
    return graph, cfg, dict(zip(names, session.run(names, feeds)))


@needs_model
def test_weights_read_from_the_graph_reproduce_its_outputs(graph_and_outputs):
    """A NumPy GPT-2 with the weights found by following the graph gives the graph's tensors."""
    graph, cfg, out = graph_and_outputs
    w = hook.read_weights(graph, cfg["n_layer"])
    C, H = cfg["n_embd"], cfg["n_head"]
    hd = C // H
    ids = hook.PARITY_IDS
    T = len(ids)
    x = w.wte[ids].astype(np.float64) + w.wpe[:T]
    assert np.allclose(x, out["hidden_states.0"][0], atol=1e-6)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i, b in enumerate(w.blocks):
        qkv = layer_norm(x, b["ln_1.weight"], b["ln_1.bias"]) @ b["attn.c_attn.weight"].T + b["attn.c_attn.bias"]
        q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, H, hd).transpose(1, 0, 2) for j in range(3))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        assert np.allclose(p, out[f"attentions.{i}"][0], atol=1e-5)
        y = (p @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + y @ b["attn.c_proj.weight"].T + b["attn.c_proj.bias"]
        h = layer_norm(x, b["ln_2.weight"], b["ln_2.bias"]) @ b["mlp.c_fc.weight"].T + b["mlp.c_fc.bias"]
        h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
        x = x + h @ b["mlp.c_proj.weight"].T + b["mlp.c_proj.bias"]
        assert np.allclose(x, out[f"hidden_states.{i + 1}"][0], atol=1e-4)
    logits = layer_norm(x[-1], w.ln_f["weight"], w.ln_f["bias"]) @ w.wte.T
    assert np.allclose(logits, out["logits"][0, -1], atol=1e-4)


@needs_model
def test_tables_files_index_and_parity(tmp_path, graph_and_outputs):
    graph, cfg, out = graph_and_outputs
    index = hook.write_tables(MODEL, tmp_path / "tables")
    weights = hook.read_weights(graph, cfg["n_layer"])
    assert [f["path"] for f in index["files"]] == ["embeddings.bin"] + [f"block.{i}.bin" for i in range(cfg["n_layer"])] + ["final.bin"]
    for entry in index["files"]:
        data = (tmp_path / "tables" / entry["path"]).read_bytes()
        assert len(data) == entry["bytes"] <= hook.FILE_LIMIT
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        for t in entry["tensors"].values():
            assert t["offset"] % 4 == 0 and t.get("scale_offset", 0) % 4 == 0
    entry = index["files"][0]
    data = (tmp_path / "tables" / "embeddings.bin").read_bytes()
    t = entry["tensors"]["wte"]
    q = np.frombuffer(data, np.int8, t["shape"][0] * t["shape"][1], t["offset"]).reshape(t["shape"])
    scale = np.frombuffer(data, "<f4", t["shape"][0], t["scale_offset"])
    assert np.all(np.abs(q * scale[:, None] - weights.wte) <= scale[:, None] * 0.5 + 1e-7)

    parity = index["parity"]
    if parity["missing"]:
        pytest.skip(parity["missing"])
    logits = {e["source"]: np.fromfile(tmp_path / "tables" / e["path"], "<f4") for e in parity["logits"] if "path" in e}
    assert np.abs(logits["torch"] - logits["ort-fp32"]).max() < 1e-4
    assert np.abs(logits["ort-fp32"] - out["logits"][0, -1]).max() == 0


def test_no_model_no_tables(tmp_path):
    config = {"extra": {"tx_model": "no-such-model-here"}, "site_dir": str(tmp_path)}
    assert hook.on_post_build(config) is None
    assert not any(tmp_path.iterdir())


def test_parity_ids_are_the_seed_example():
    tokenizers = pytest.importorskip("transformers")
    tok = tokenizers.GPT2TokenizerFast.from_pretrained(MODEL) if (MODEL / "vocab.json").is_file() else pytest.skip("no tokenizer files")
    assert tok.encode(hook.PARITY_TEXT) == hook.PARITY_IDS
