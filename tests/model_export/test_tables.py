"""tables.py: weights found by following the ONNX graph, their place in the q4x files, parity logits,
and the ``tables`` stage that packages them next to manifest.json."""

import hashlib
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from export_helpers import MADE_MODEL
from model_export import tables
from model_export.cli import main
from model_export.gpt2 import GPT2Config
from model_export.layout import BUILD_DIR, INSPECT_REFERENCE, MANIFEST, REFERENCE, TABLES_DIR, TABLES_INDEX
from model_export.package import file_mismatches, listed_files
from model_export.pipeline import BuildDir
from model_export.runtime import OrtGPT2, prompt_outputs

MODEL = MADE_MODEL
REFERENCE_GRAPH = MODEL / BUILD_DIR / REFERENCE
needs_model = pytest.mark.skipif(not (REFERENCE_GRAPH.is_file() and (MODEL / MANIFEST).is_file()), reason=f"{MODEL} is not built (make model)")


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def run_graph(graph, cfg):
    """A graph's outputs for the parity prompt (onnxruntime), by name."""
    return prompt_outputs(OrtGPT2(graph, GPT2Config(**cfg)), tables.PARITY_IDS)


def manifest():
    return json.loads((MODEL / MANIFEST).read_text())


@pytest.fixture(scope="module")
def graph_and_outputs():
    """The built model's fp32 graph and its outputs for a fixed prompt (onnxruntime)."""
    cfg = manifest()["config"]
    return REFERENCE_GRAPH, cfg, run_graph(REFERENCE_GRAPH, cfg)


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
        q, k, v = (qkv[:, j * C : (j + 1) * C].reshape(T, H, hd).transpose(1, 0, 2) for j in range(3))
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


def read_logits(directory: Path, index: dict) -> dict[str, np.ndarray]:
    """The parity logits an index lists, each checked against its bytes and sha256."""
    logits = {}
    for e in index["parity"]["logits"]:
        if "path" in e:
            data = (directory / e["path"]).read_bytes()
            assert len(data) == e["bytes"] and hashlib.sha256(data).hexdigest() == e["sha256"]
            logits[e["source"]] = np.frombuffer(data, "<f4")
    return logits


@needs_model
def test_weights_read_from_the_graph_reproduce_its_outputs(graph_and_outputs):
    """A NumPy GPT-2 with the weights found by following the fp32 graph gives the graph's tensors."""
    graph, cfg, out = graph_and_outputs
    w = tables.read_weights(graph, cfg["n_layer"])
    state = {"wte": w.wte, "wpe": w.wpe, "ln_f.weight": w.ln_f["weight"], "ln_f.bias": w.ln_f["bias"]}
    for i, block in enumerate(w.blocks):
        state |= {f"blocks.{i}.{role}": value.T if value.ndim == 2 else value for role, value in block.items()}
    assert_matches_graph(numpy_gpt2(state.__getitem__, cfg, tables.PARITY_IDS), out, cfg)


@pytest.fixture(scope="module")
def layout():
    """The figures' weight layout of the built model, and the graph its q4x files expand to."""
    from model_export.expand import onnx_graph

    expanded = onnx_graph(MODEL / "q4x", MODEL / BUILD_DIR / "q4x-expanded.onnx")
    return tables.weight_layout(MODEL / "q4x" / "model.onnx", manifest()["config"]["n_layer"]), manifest(), expanded


@needs_model
def test_layout_weights_are_the_q4x_sessions_own(layout):
    """Each weight the figures read, expanded from the q4x pieces, is bit for bit the initializer
    the q4x session computes with, and a NumPy GPT-2 of them gives that session's outputs."""
    import onnx
    from onnx import numpy_helper

    lay, man, expanded = layout
    cfg = man["config"]
    assert lay["variant"] == tables.WEIGHTS_VARIANT == "q4x"
    tensors = lay["tensors"]
    roles = ["wte", "wpe", "ln_f.weight", "ln_f.bias"] + [f"blocks.{i}.{r}" for i in range(cfg["n_layer"]) for r in tables.BLOCK_ROLES]
    assert sorted(tensors) == sorted(roles)
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(expanded)).graph.initializer}
    weights = {role: tables.layout_tensor(MODEL / "q4x", entry) for role, entry in tensors.items()}
    for role, entry in tensors.items():
        assert weights[role].dtype == np.float32 and list(weights[role].shape) == entry["shape"]
        assert np.array_equal(weights[role], inits[entry["name"]]), role  # bit-identical, so parity is float rounding only
    C = cfg["n_embd"]
    assert tensors["wte"]["shape"] == [cfg["vocab_size"], C] and tensors["blocks.0.mlp.c_fc.weight"]["shape"] == [C, 4 * C]
    assert_matches_graph(numpy_gpt2(weights.__getitem__, cfg, tables.PARITY_IDS), run_graph(expanded, cfg), cfg)


@pytest.fixture(scope="module")
def written(tmp_path_factory, graph_and_outputs):
    """The tables stage run afresh on the built model, into a directory of its own."""
    build = BuildDir(MODEL)
    out = tmp_path_factory.mktemp("tables") / TABLES_DIR
    record = build.record()
    files = tables.write_tables(
        out,
        build.reference,
        build.variant_graph(tables.WEIGHTS_VARIANT),
        {name: build.runnable_graph(name) for name in build.built_variants()},
        record["config"],
        record["name"],
    )
    return out, files, json.loads((out / TABLES_INDEX).read_text())


@needs_model
def test_index_has_no_weight_files_and_parity(written, graph_and_outputs):
    graph, cfg, out = graph_and_outputs
    directory, files, index = written
    on_disk = sorted(str(f.relative_to(directory)) for f in directory.rglob("*") if f.is_file())
    assert on_disk == [TABLES_INDEX] + sorted(e["path"] for e in index["parity"]["logits"] if "path" in e)
    assert files == tables.table_files(directory) and files[0] == directory / TABLES_INDEX
    assert "files" not in index and index["format"] == tables.TABLES_FORMAT
    assert index["config"] == cfg and index["model"] == manifest()["name"] and index["source"] == REFERENCE
    chunked = {c["tensor"] for c in json.loads((MODEL / "q4x" / "expand.json").read_text())["chunks"]}
    for entry in index["weights"]["tensors"].values():
        assert (entry["name"] in chunked) != ("values" in entry)  # in the packed files, or small enough to travel here
    assert len(json.dumps(index)) < 100_000

    parity = index["parity"]
    assert parity["missing"] is None and parity["ids"] == tables.PARITY_IDS
    logits = read_logits(directory, index)
    variants = [v["name"] for v in manifest()["variants"]]
    assert list(logits) == ["torch", "ort-fp32"] + [f"ort-{name}" for name in variants]  # every variant runs on CPU
    assert np.abs(logits["torch"] - logits["ort-fp32"]).max() < 1e-4
    assert np.abs(logits["ort-fp32"] - out["logits"][0, -1]).max() == 0
    for name in variants:  # each variant's logits are its own graph's, whatever its error against fp32
        expanded = BuildDir(MODEL).runnable_graph(name)
        assert np.array_equal(logits[f"ort-{name}"], run_graph(expanded, cfg)["logits"][0, -1]), name


@needs_model
def test_the_packaged_tables_are_these_and_the_manifest_lists_them(written):
    """The built model's tables/ is what the stage writes, and manifest.json lists each of its
    files with bytes and sha256 (so the site copies them and `validate` checks them)."""
    directory, files, index = written
    man = manifest()
    packaged = MODEL / TABLES_DIR
    assert json.loads((packaged / TABLES_INDEX).read_text()) == index
    for path in files:
        assert (packaged / path.relative_to(directory)).read_bytes() == path.read_bytes(), path.name
    assert [e["path"] for e in man["tables"]] == [f"{TABLES_DIR}/{p.relative_to(directory).as_posix()}" for p in files]
    for entry in man["tables"]:
        data = (MODEL / entry["path"]).read_bytes()
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert all(entry in listed_files(man) for entry in man["tables"])
    assert file_mismatches(MODEL, man) == []


@needs_model
def test_tables_command_brings_an_older_build_up_to_date(tmp_path, capsys):
    """`model-export tables` on a build without them: writes tables/ and lists it in the manifest."""
    copy = tmp_path / MODEL.name
    shutil.copytree(MODEL, copy, ignore=shutil.ignore_patterns("*-expanded.onnx"))
    shutil.rmtree(copy / TABLES_DIR)
    older = json.loads((copy / MANIFEST).read_text())
    del older["tables"]
    (copy / MANIFEST).write_text(json.dumps(older))
    assert main(["tables", "--out", str(copy)]) == 0
    assert "tables for the pipeline figures" in capsys.readouterr().out
    updated = json.loads((copy / MANIFEST).read_text())
    assert updated["tables"] == manifest()["tables"]  # the same bytes as the packaged model's
    assert file_mismatches(copy, updated) == []
    assert {k: v for k, v in updated.items() if k not in ("tables", "created_with")} == {k: v for k, v in older.items() if k != "created_with"}
    assert BuildDir(copy).record()["tables"]["files"] == len(updated["tables"])

    BuildDir(copy).drop_derived(progress=lambda line: None)  # what build and quantize do first
    assert not (copy / TABLES_DIR).exists()
    assert not list(copy.glob("*/inspect.onnx")) and not (copy / BUILD_DIR / INSPECT_REFERENCE).exists()  # made from them too
    assert main(["package", "--out", str(copy)]) == 0
    assert json.loads((copy / MANIFEST).read_text())["tables"] == []


def test_tables_need_the_earlier_stages(tmp_path, capsys):
    assert main(["tables", "--out", str(tmp_path)]) == 2
    assert "run `model-export build" in capsys.readouterr().err


def test_a_model_without_q4x_says_why(tmp_path):
    lay = tables.weight_layout(tmp_path / "q4x" / "model.onnx", 2)
    assert lay["variant"] is None and "q4x" in lay["missing"]


def test_parity_ids_are_the_seed_example():
    tokenizers = pytest.importorskip("transformers")
    tok = tokenizers.GPT2TokenizerFast.from_pretrained(MODEL) if (MODEL / "vocab.json").is_file() else pytest.skip("no tokenizer files")
    assert tok.encode(tables.PARITY_TEXT) == tables.PARITY_IDS
