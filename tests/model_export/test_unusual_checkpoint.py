"""A checkpoint directory of a shape GPT-2 never had, end to end; broken checkpoints refused.

Nothing in the exporter may assume 12 layers, 12 heads, 768 wide or 1024 positions: a model
with 3 layers, 6 heads of width 16 (96 wide) and 128 positions goes through ``model-export all``
from a ``save_pretrained`` directory and validates.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from export_helpers import NPM_DIR, save_checkpoint
from model_export.cli import main
from model_export.variants import VARIANTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return save_checkpoint(tmp_path_factory.mktemp("checkpoint") / "gpt2-3x6x96")


@pytest.fixture(scope="module")
def build(checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "custom"
    code = main(["all", "--from", str(checkpoint), "--out", str(out), "--tokenizer-src", str(NPM_DIR), "--runs", "1", "--new-tokens", "4"])
    assert code == 0
    return out


@pytest.mark.slow
def test_non_default_shape_end_to_end(build, checkpoint):
    manifest = json.loads((build / "manifest.json").read_text())
    sizes = {"n_layer": 3, "n_head": 6, "n_embd": 96, "n_positions": 128, "vocab_size": 50257}
    assert manifest["config"] == {**sizes, "layer_norm_epsilon": 1e-5, "eos_token_id": 50256}
    assert manifest["source"] == str(checkpoint.resolve())
    assert manifest["random_weights"] is True  # a random initialisation, recognised from its weights
    assert [v["name"] for v in manifest["variants"]] == list(VARIANTS)
    assert all(v["validation"]["passed"] for v in manifest["variants"])
    assert all(row["passed"] for row in manifest["validation"])
    # the validation text is cut to the model's 128 positions
    rows = json.loads((build / "report.json").read_text())["validation"]["rows"]
    assert any("128-token text" in row["name"] for row in rows)

    session = ort.InferenceSession(str(build / "q4" / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {"input_ids": np.array([[1, 2, 3]]), "attention_mask": np.ones((1, 5), np.int64), "position_ids": np.array([[2, 3, 4]])}
    for i in range(3):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{i}.{kv}"] = np.zeros((1, 6, 2, 16), np.float32)
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    assert outputs["logits"].shape == (1, 3, 50257)
    assert outputs["present.2.value"].shape == (1, 6, 5, 16)
    assert outputs["attentions.2"].shape == (1, 6, 3, 5)
    assert outputs["hidden_states.3"].shape == (1, 3, 96)
    assert "hidden_states.4" not in outputs


def broken_copy(checkpoint: Path, tmp_path: Path) -> Path:
    target = tmp_path / "broken"
    shutil.copytree(checkpoint, target)
    return target


def test_checkpoint_missing_a_tensor_is_refused(checkpoint, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    broken = broken_copy(checkpoint, tmp_path)
    tensors = load_file(broken / "model.safetensors")
    del tensors["transformer.h.1.attn.c_attn.weight"]
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    assert main(["all", "--from", str(broken), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "the checkpoint lacks 1 tensor(s): transformer.h.1.attn.c_attn.weight" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_truncated_weights_file_is_refused(checkpoint, tmp_path, capsys):
    broken = broken_copy(checkpoint, tmp_path)
    data = (broken / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(data[: len(data) // 2])
    assert main(["all", "--from", str(broken), "--out", str(tmp_path / "out")]) == 2
    assert "the weights file is unreadable or corrupt" in capsys.readouterr().err


def test_missing_weights_file_is_refused(checkpoint, tmp_path, capsys):
    broken = broken_copy(checkpoint, tmp_path)
    (broken / "model.safetensors").unlink()
    assert main(["all", "--from", str(broken), "--out", str(tmp_path / "out")]) == 2
    assert "no file named model.safetensors" in capsys.readouterr().err


@pytest.mark.parametrize(
    "config_text, message",
    [
        ("{not json", "is unreadable or not JSON"),
        ('{"model_type": "llama"}', "model_type is 'llama'; this exporter handles GPT-2 checkpoints"),
    ],
)
def test_broken_or_foreign_config_is_refused(checkpoint, tmp_path, capsys, config_text, message):
    broken = broken_copy(checkpoint, tmp_path)
    (broken / "config.json").write_text(config_text)
    assert main(["all", "--from", str(broken), "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


def test_unsupported_gpt2_variant_is_refused(tmp_path, capsys):
    checkpoint = save_checkpoint(tmp_path / "relu", activation_function="relu")
    assert main(["all", "--from", str(checkpoint), "--out", str(tmp_path / "out")]) == 2
    assert "unsupported GPT-2 variant: activation_function='relu'" in capsys.readouterr().err
