"""The ``q8x`` variant (model_export/requant.py and site_src/runtime/requant.js).

The int8 codes are checked against onnxruntime's own per-axis ``QuantizeLinear`` and
``DequantizeLinear`` (the independent reference), the graph against the fp32 reference, and the
browser's ``requant.js`` under Node must build the very same bytes as Python from the q4x files.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from export_helpers import NPM_DIR
from model_export import compact, expand, requant
from model_export.cli import main
from model_export.gpt2 import GPT2Config
from model_export.layout import INDEX_FILE
from model_export.package import variant_files
from model_export.pipeline import BuildDir, StageError, run_quantize
from model_export.runtime import OrtGPT2
from model_export.validate import Distributions, teacher_forced_logits
from nodejs import run_script

ROOT = Path(__file__).resolve().parents[2]


def matrix_case(name: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    values = rng.normal(0, 0.02, (6, 64)).astype(np.float32)
    if name == "zero channel":
        values[:, 5] = 0
        values[2, :] = 0
    elif name == "halves":  # values exactly half-way between two codes
        values[:] = (np.arange(64) % 5 - 2 + 0.5).astype(np.float32) * np.float32(0.25)
        values[0, :] = 127 * 0.25
    elif name == "outlier":
        values[4, 7] = 3.0
    return values


CASES = ["normal", "zero channel", "halves", "outlier"]


def onnxruntime_quantize(values: np.ndarray, scales: np.ndarray, per: str) -> tuple[np.ndarray, np.ndarray]:
    """Codes and values from onnxruntime's QuantizeLinear / DequantizeLinear: one scale, or one
    per row (per axis 0)."""
    safe = np.where(scales == 0, np.float32(1), scales).astype(np.float32)
    zero = numpy_helper.from_array(np.zeros(safe.shape, np.int8), "zero")
    scale = numpy_helper.from_array(safe, "scale")
    axis = {"axis": 0} if per == "row" else {}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], **axis),
        helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"], **axis),
    ]
    graph = helper.make_graph(
        nodes,
        "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, values.shape)],
        [helper.make_tensor_value_info("q", TensorProto.INT8, values.shape), helper.make_tensor_value_info("y", TensorProto.FLOAT, values.shape)],
        initializer=[zero, scale],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(["q", "y"], {"x": values})


@pytest.mark.parametrize("per", ["matrix", "row"])
@pytest.mark.parametrize("case", CASES)
def test_codes_are_onnxruntimes_quantization_and_within_half_a_step(case, per):
    values = matrix_case(case)
    codes, scales = requant.requantize(values, per)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    axis = None if per == "matrix" else 1
    assert scales.shape == (() if per == "matrix" else (values.shape[0],))
    np.testing.assert_array_equal(scales, np.abs(values).max(axis=axis) / np.float32(127))
    want_codes, want_values = onnxruntime_quantize(values, scales, per)
    wide = np.broadcast_to(scales.reshape(1, 1) if per == "matrix" else scales[:, None], values.shape)
    zero = wide == 0
    np.testing.assert_array_equal(codes, np.where(zero, 0, want_codes))
    ours = requant.dequantize(codes, scales, per)
    np.testing.assert_array_equal(ours, np.where(zero, 0, want_values))
    assert np.all(np.abs(ours - values) <= wide / 2 * (1 + 1e-6))
    nonzero = np.asarray(scales).reshape(-1) > 0
    extremes = np.abs(codes).max(axis=axis).reshape(-1)
    assert np.all(extremes[nonzero] == 127)  # each group's extreme is +-127


def test_an_unknown_group_is_refused():
    with pytest.raises(ValueError, match="per must be one of"):
        requant.requantize(np.zeros((2, 32), np.float32), "column")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("requant") / "tiny"
    assert main(["build", "--preset", "tiny", "--out", str(out), "--tokenizer-src", str(NPM_DIR)]) == 0
    assert main(["quantize", "--out", str(out), "--variants", "q4x,q8x"]) == 0
    return out


def test_layout_reads_the_q4x_pieces_and_ships_none_of_its_own(built):
    variant = built / "q8x"
    index = compact.read_index(variant, (requant.FORMAT,))
    assert expand.index_problems(variant) == []
    assert sorted(p.name for p in variant.iterdir()) == ["expand.json", "model.onnx"]
    source = compact.read_index(built / "q4x")
    assert index["pieces"] == [f"../q4x/{p}" for p in source["pieces"]]
    files = [p.relative_to(built).as_posix() for p in variant_files(variant)]
    assert files == ["q8x/model.onnx", "q8x/expand.json", *[f"q4x/{p}" for p in source["pieces"]]]
    assert {m["tensor"] for m in index["matrices"]} == {c["tensor"] for c in source["chunks"] if c["encoding"] == "q4"}
    proto = onnx.load(str(variant / "model.onnx"), load_external_data=False)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("MatMulInteger") == len(index["matrices"]) and "DequantizeLinear" not in ops
    groups = [m["per"] for m in index["matrices"]]
    assert groups.count("row") == 1  # the tied embedding; every other matrix has one scale


def test_int8_weights_are_the_q4x_weights_requantized(built):
    index = compact.read_index(built / "q8x", (requant.FORMAT,))
    targets = expand.expand_targets(built / "q8x")
    q4x = expand.expand_targets(built / "q4x")
    expanded = {t.name: t for t in onnx.load(str(built / "q4x" / "model.onnx"), load_external_data=False).graph.initializer}

    def q4x_tensor(name):
        info = {e.key: e.value for e in expanded[name].external_data}
        start, length = int(info["offset"]), int(info["length"])
        return np.frombuffer(q4x[info["location"]][start : start + length], np.float32).reshape(list(expanded[name].dims))

    def read(where, count, dtype):
        data = targets[index["targets"][where[0]]["name"]]
        return np.frombuffer(data[where[1] : where[1] + count * np.dtype(dtype).itemsize], dtype)

    for m in index["matrices"]:
        values = q4x_tensor(m["tensor"])
        codes = read(m["values"], m["rows"] * m["cols"], np.int8).reshape(m["rows"], m["cols"])
        scales = read(m["scales"], requant.scale_count(m["rows"], m["per"]), "<f4")
        want_codes, want_scales = requant.requantize(values, m["per"])
        np.testing.assert_array_equal(codes, want_codes)
        np.testing.assert_array_equal(scales, want_scales.reshape(-1))
    for chunk in index["chunks"]:  # raw tensors: q4x's bytes
        got = targets[index["targets"][chunk["target"]]["name"]][chunk["offset"] : chunk["offset"] + chunk["bytes"]]
        np.testing.assert_array_equal(np.frombuffer(got, np.uint8), q4x_tensor(chunk["tensor"]).reshape(-1).view(np.uint8)[: chunk["bytes"]])


def test_small_pieces_give_the_same_bytes(built, tmp_path):
    proto = onnx.load(str(built / ".build" / "reference.onnx"))
    compact.write_compact(proto, tmp_path / "q4x", piece_bytes=150_000)
    requant.write_requant(proto, tmp_path / "q4x", tmp_path / "q8x")
    index = compact.read_index(tmp_path / "q8x", (requant.FORMAT,))
    assert any(len(m["parts"]) > 1 for m in index["matrices"])  # a matrix spans pieces
    assert expand.index_problems(tmp_path / "q8x", piece_bytes=150_000) == []
    assert expand.expand_targets(tmp_path / "q8x") == expand.expand_targets(built / "q8x")


def test_int8_graph_validates_against_fp32(built, tmp_path):
    config = GPT2Config(**json.loads((built / ".build" / "record.json").read_text())["config"])
    tokens = list(np.random.default_rng(0).integers(0, config.vocab_size, 64))
    want = teacher_forced_logits(OrtGPT2(built / ".build" / "reference.onnx", config), tokens)
    q4x = teacher_forced_logits(OrtGPT2(expand.expand_to_file(built / "q4x", tmp_path / "q4x.onnx"), config), tokens)
    got = teacher_forced_logits(OrtGPT2(expand.expand_to_file(built / "q8x", tmp_path / "q8x.onnx"), config), tokens)
    to_fp32, to_q4x = Distributions(want).compare(got), Distributions(q4x).compare(got)
    assert to_fp32["kl"] < 5e-3, to_fp32  # the variant's bound for random weights is 5e-2
    assert to_q4x["kl"] < to_fp32["kl"] * 2, (to_q4x, to_fp32)  # int8 of the q4x weights: close to q4x
    assert 0 < np.abs(got - q4x).max() < 0.5


def test_q8x_needs_q4x_first(built, tmp_path):
    copy = tmp_path / "tiny"
    shutil.copytree(built / ".build", copy / ".build")
    with pytest.raises(StageError, match="quantize q4x first"):
        run_quantize(BuildDir(copy), ["q8x"], progress=lambda line: None)


def test_index_problems_are_reported(built, tmp_path):
    broken = tmp_path / "q8x"
    shutil.copytree(built / "q8x", broken)
    shutil.copytree(built / "q4x", tmp_path / "q4x")
    index = json.loads((broken / INDEX_FILE).read_text())
    index["matrices"][0]["rows"] += 1
    index["matrices"][1]["scales"][1] += 2
    index["matrices"][2]["values"] = index["matrices"][3]["values"]
    index["targets"][0]["bytes"] = 10
    (broken / INDEX_FILE).write_text(json.dumps(index))
    problems = "\n".join(expand.index_problems(broken))
    assert f"{index['matrices'][0]['tensor']}: " in problems and "elements in parts" in problems
    assert "not aligned to 4 bytes" in problems and "overlap" in problems and "runs past its end" in problems


NODE_REQUANT = """
import { readFileSync, writeFileSync } from 'node:fs';
import { requantWeights, checkRequantIndex } from '%s';
const [dir, out] = process.argv.slice(2);
const index = JSON.parse(readFileSync(`${dir}/expand.json`, 'utf8'));
const pieces = index.pieces.map((p) => new Uint8Array(readFileSync(`${dir}/${p}`)));
let calls = 0;
const targets = requantWeights(index, pieces, () => calls++);
for (const [name, bytes] of targets) writeFileSync(`${out}/${name}`, bytes);
const errors = [];
for (const breakIt of [(i) => { i.matrices[0].parts[0].start = 1e9; }, (i) => { i.format = 'x'; },
                       (i) => { i.matrices[0].rows += 1; }, (i) => { i.matrices[0].values[1] = 1e9; },
                       (i) => { i.pieces.push('extra'); }, (i) => { i.matrices[0].scales[1] += 2; }]) {
  const copy = JSON.parse(JSON.stringify(index));
  breakIt(copy);
  try { checkRequantIndex(copy, pieces); errors.push(null); } catch (e) { errors.push(e.message); }
}
console.log(JSON.stringify({ calls, matrices: index.matrices.length, errors }));
"""


def test_browser_requantization_builds_the_same_bytes_as_python(built, tmp_path):
    out = tmp_path / "targets"
    out.mkdir()
    report = run_script(NODE_REQUANT, "requant.js", [str(built / "q8x"), str(out)], tmp_path)
    assert report["calls"] == report["matrices"] + 1  # raw tensors, then after every matrix
    for name, data in expand.expand_targets(built / "q8x").items():
        assert (out / name).read_bytes() == data, name
    messages = report["errors"]
    assert all(messages), messages
    assert "runs past the end of its file" in messages[0] and "format x" in messages[1]
    assert "does not match its 4-bit parts" in messages[2] and "runs past the end of its file" in messages[3]
    assert "names 3 packed files; 2 arrived" in messages[4] or "packed files" in messages[4]
    assert "not aligned to 4 bytes" in messages[5]
