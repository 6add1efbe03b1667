"""Graph surgery and file layout on small hand-made ONNX graphs (no export, milliseconds each):
the transposed-weight fold the quantizers need, external-data pieces, row-split tensors, and
the checks that the browser's contract holds."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from model_export import layout, package
from model_export.quantize import fold_transposed_weights, to_q4
from model_export.variants import VARIANTS

VOCAB, WIDTH = 300, 16


def embedding_graph() -> onnx.ModelProto:
    """ids -> Gather(E) -> MatMul(W) -> MatMul(Transpose(E)): a tied embedding in miniature."""
    rng = np.random.default_rng(0)  # the same weights at every call
    embedding = rng.standard_normal((VOCAB, WIDTH)).astype(np.float32)  # (V, C) 19.2 kB
    weight = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32)  # (C, C) 1 kB
    nodes = [
        helper.make_node("Gather", ["E", "ids"], ["x"]),
        helper.make_node("MatMul", ["x", "W"], ["h"]),
        helper.make_node("Transpose", ["E"], ["Et"], perm=[1, 0]),
        helper.make_node("MatMul", ["h", "Et"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-tied",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["B", "T"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["B", "T", VOCAB])],
        [numpy_helper.from_array(embedding, "E"), numpy_helper.from_array(weight, "W")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def run(model_or_path, ids):
    source = model_or_path.SerializeToString() if isinstance(model_or_path, onnx.ModelProto) else str(model_or_path)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})[0]


IDS = np.array([[1, 5, 299, 0]], np.int64)


def test_fold_transposed_weights_gives_the_matmul_a_constant_matrix():
    model = embedding_graph()
    expected = run(model, IDS)
    assert fold_transposed_weights(model) == {"E": "E.T"}
    ops = [node.op_type for node in model.graph.node]
    assert "Transpose" not in ops
    last = model.graph.node[-1]
    folded = next(t for t in model.graph.initializer if t.name == last.input[1])
    assert list(folded.dims) == [WIDTH, VOCAB] and folded.name == "E.T"
    assert any(t.name == "E" for t in model.graph.initializer)  # the Gather keeps the original
    np.testing.assert_allclose(run(model, IDS), expected, rtol=0, atol=1e-6)


def test_q4_reads_the_tied_embedding_from_the_output_layers_4bit_matrix():
    """After 4-bit quantization the float embedding is gone; the lookup decodes the output
    layer's MatMulNBits rows (width 16: one block of 32, padded, then sliced)."""
    model = embedding_graph()
    model.graph.output.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", WIDTH]))
    quantized = to_q4(model)
    ops = [node.op_type for node in quantized.graph.node]
    assert "GatherBlockQuantized" not in ops and ops.count("MatMulNBits") == 2
    assert not any(t.name == "E" for t in quantized.graph.initializer)
    inits = {t.name: numpy_helper.to_array(t) for t in quantized.graph.initializer}
    packed, scales = inits["E.T_Q4"], inits["E.T_scales"]  # (V, 1, 16) uint8, (V, 1)
    codes = np.stack([packed & 15, packed >> 4], axis=-1).reshape(VOCAB, 1, 32).astype(np.float32)
    table = ((codes - 8) * scales[:, :, None]).reshape(VOCAB, 32)[:, :WIDTH]  # (V, C)
    embedding = numpy_helper.to_array(next(t for t in embedding_graph().graph.initializer if t.name == "E"))
    assert np.abs(table - embedding).max() <= np.abs(scales).max()  # a 4-bit copy of E
    session = ort.InferenceSession(quantized.SerializeToString(), providers=["CPUExecutionProvider"])
    logits, looked_up = session.run(["logits", "x"], {"ids": IDS})
    np.testing.assert_allclose(looked_up, table[IDS], rtol=0, atol=1e-6)
    assert logits.shape == (1, 4, VOCAB) and np.isfinite(logits).all()


def test_small_variant_stays_one_file(tmp_path):
    model = embedding_graph()
    files = package.save_variant(model, tmp_path / "v", piece_bytes=10_000, inline_bytes=1_000_000)
    assert files == [tmp_path / "v" / "model.onnx"]
    np.testing.assert_allclose(run(files[0], IDS), run(embedding_graph(), IDS), atol=0)


def test_pieces_respect_the_limit_and_name_their_files(tmp_path):
    model = embedding_graph()
    expected = run(model, IDS)
    files = package.save_variant(model, tmp_path / "v", piece_bytes=8_000, inline_bytes=0)
    graph, pieces = files[0], files[1:]
    assert [p.name for p in pieces] == [f"model.onnx.data.{i}" for i in range(len(pieces))]
    assert all(p.stat().st_size <= 8_000 for p in pieces)
    # the 19.2 kB embedding became row blocks joined by a Concat that restores its name
    proto = onnx.load(str(graph), load_external_data=False)
    concat = next(node for node in proto.graph.node if node.op_type == "Concat")
    assert concat.output[0] == "E" and len(concat.input) == 3
    assert layout.external_locations(graph) == {p.name for p in pieces}
    np.testing.assert_array_equal(run(graph, IDS), expected)


def test_a_variant_directory_is_rewritten_cleanly(tmp_path):
    package.save_variant(embedding_graph(), tmp_path / "v", piece_bytes=4_000, inline_bytes=0)
    many = len(list((tmp_path / "v").iterdir()))
    files = package.save_variant(embedding_graph(), tmp_path / "v", piece_bytes=30_000, inline_bytes=0)
    assert len(list((tmp_path / "v").iterdir())) == len(files) < many


def test_four_bit_tensors_too_large_for_a_piece_are_refused():
    packed = helper.make_tensor("Q", TensorProto.INT4, [64, 64], np.zeros(64 * 64, np.int8).tolist())
    graph = helper.make_graph([], "g", [], [], [packed])
    with pytest.raises(ValueError, match="cannot be split by rows"):
        package.split_large_initializers(helper.make_model(graph), max_bytes=100)


def make_manifest(root, piece_bytes=8_000):
    package.save_variant(embedding_graph(), root / "q4", piece_bytes=piece_bytes, inline_bytes=0)
    entry = package.variant_entry("q4", "int4", ["webgpu", "wasm"], ["logits"], root, {"kl": 0.0})
    return {"variants": [entry], "tokenizer": {}}


def test_variant_entry_and_layout_checks(tmp_path):
    manifest = make_manifest(tmp_path)
    (entry,) = manifest["variants"]
    assert entry["files"][0]["role"] == "graph" and {f["role"] for f in entry["files"][1:]} == {"data"}
    assert entry["bytes"] == sum(f["bytes"] for f in entry["files"])
    assert package.file_mismatches(tmp_path, manifest) == []
    assert package.layout_problems(tmp_path, manifest, piece_bytes=8_000) == []
    assert package.layout_problems(tmp_path, manifest, piece_bytes=1_000)  # pieces now too large

    listed_without_a_piece = json.loads(json.dumps(manifest))
    listed_without_a_piece["variants"][0]["files"].pop()
    (problem,) = package.layout_problems(tmp_path, listed_without_a_piece, piece_bytes=8_000)
    assert "graph refers to" in problem

    (tmp_path / "q4" / "model.onnx.data.0").write_bytes(b"changed")
    assert package.file_mismatches(tmp_path, manifest) == ["q4/model.onnx.data.0: differs from the manifest"]


def test_default_variants_and_order_follow_the_specs_of_what_was_built(tmp_path):
    def manifest(names):
        return package.build_manifest(
            name="m",
            source="preset:tiny",
            seed=0,
            random_weights=True,
            config=dict.fromkeys(package.CONFIG_KEYS, 1),
            inputs=[],
            outputs=[],
            variants=[{"name": name, "backends": list(VARIANTS[name].backends)} for name in names],
            tokenizer={},
            validation=[],
            root=tmp_path,
        )

    def defaults(names):
        return manifest(names)["default_variants"]

    all_three = ["q4", "q8", "fp16"]
    assert defaults(all_three) == {"webgpu": "q4", "wasm": "q8"}
    assert defaults(["fp16", "q8"]) == {"webgpu": "fp16", "wasm": "q8"}
    assert defaults(["q4"]) == {"webgpu": "q4", "wasm": "q4"}
    assert defaults(["q4x", *all_three]) == {"webgpu": "q4", "wasm": "q4x"}
    # The measured preferences (variants.py), whole, as the manifest carries them to the browser.
    order = manifest(list(VARIANTS))["variant_order"]
    assert order == {"wasm": ["q8x", "q4x", "q8", "q4"], "webgpu": ["q4", "fp16"]}
    for backend, names in order.items():
        assert names == sorted((n for n, spec in VARIANTS.items() if backend in spec.ranks), key=lambda n: VARIANTS[n].ranks[backend])


def test_json_is_written_atomically_and_strictly(tmp_path):
    path = package.write_json(tmp_path / "a.json", {"x": np.float32(0.5), "n": np.int64(3)})
    assert json.loads(path.read_text()) == {"x": 0.5, "n": 3}
    assert not list(tmp_path.glob("*.tmp"))
    path = package.write_json(tmp_path / "b.json", {"x": [float("nan"), float("inf")], "y": np.float64("-inf")})
    assert path.read_text() == '{\n  "x": [\n    null,\n    null\n  ],\n  "y": null\n}\n'  # strict JSON
