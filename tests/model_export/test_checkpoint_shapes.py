"""``model-export all`` on small random GPT-2 checkpoints of many shapes, and on shapes it refuses.

Each case is a ``transformers.GPT2LMHeadModel(config).save_pretrained(dir)`` directory: a context
of 16 positions or of the shortest one the exporter takes, odd head counts, 8-wide layers, one
layer, a padded vocabulary. Every build must exit 0 with every variant in the manifest, a
report, random-weight tolerances (the weights are a random initialisation, which the exporter
has to notice by itself), and an fp32 graph whose greedy continuation to the end of the context
is PyTorch's. A shape that cannot work exits 2 with one line saying why.
"""

import contextlib
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from export_helpers import NPM_DIR, run_model_export, save_checkpoint
from model_export.cli import main
from model_export.export import MIN_POSITIONS
from model_export.gpt2 import GPT2
from model_export.pipeline import BuildDir
from model_export.runtime import OrtGPT2, TorchGPT2, fit_greedy, greedy
from model_export.validate import FLAT_SHARE, weights_verdict
from model_export.variants import VARIANTS as QUANTIZED
from model_export.weights import load_hf

pytestmark = pytest.mark.slow  # exports ONNX graphs

# name -> transformers.GPT2Config keyword arguments (save_checkpoint fills in the rest)
BUILDS = {
    "context-16": dict(n_layer=2, n_head=4, n_embd=32, n_positions=16),
    "3-heads-24-wide-1-layer": dict(n_layer=1, n_head=3, n_embd=24, n_positions=32),
    "8-wide-2-heads": dict(n_layer=2, n_head=2, n_embd=8, n_positions=64),
    "shortest-context-padded-vocab": dict(n_layer=1, n_head=2, n_embd=16, n_positions=MIN_POSITIONS, vocab_size=50304),
}
SMALL = dict(n_layer=1, n_head=2, n_embd=16, n_positions=16)
REFUSED = {  # config, then changes written into config.json (transformers refuses to build them), message
    "context-4": (dict(SMALL, n_positions=4), {}, "n_positions=4 is too short"),
    "vocab-1000": (dict(SMALL, vocab_size=1000), {}, "but the model's vocab_size is 1000; this tokenizer needs vocab_size >= 50257"),
    "untied": (dict(SMALL, tie_word_embeddings=False), {}, "unsupported GPT-2 variant: tie_word_embeddings=False"),
    "16-wide-3-heads": (SMALL, {"n_head": 3}, "n_embd=16 is not divisible by n_head=3"),
    "no-layers": (SMALL, {"n_layer": 0}, "n_layer=0 in config.json; every size must be a whole number >= 1"),
}
VARIANTS = list(QUANTIZED)


@pytest.fixture(scope="module", params=list(BUILDS))
def build(request, tmp_path_factory):
    """``(checkpoint, output directory, stdout)`` of one ``model-export all``."""
    root = tmp_path_factory.mktemp(request.param)
    checkpoint = save_checkpoint(root / "checkpoint", **BUILDS[request.param])
    out, stdout = root / "out", io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["all", "--from", str(checkpoint), "--out", str(out), "--tokenizer-src", str(NPM_DIR), "--runs", "1", "--new-tokens", "64"])
    assert code == 0, stdout.getvalue()
    return checkpoint, out, stdout.getvalue()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_variant_is_in_the_manifest_with_its_files_and_hashes(build):
    _, out, _ = build
    manifest = json.loads((out / "manifest.json").read_text())
    assert [v["name"] for v in manifest["variants"]] == VARIANTS
    for variant in manifest["variants"]:
        assert variant["validation"]["passed"], variant["name"]
        assert variant["files"] and variant["bytes"] == sum(f["bytes"] for f in variant["files"])
        for entry in variant["files"]:
            path = out / entry["path"]
            assert path.stat().st_size == entry["bytes"] and sha256(path) == entry["sha256"], entry["path"]
    assert manifest["validation"] and all(row["passed"] for row in manifest["validation"])


def test_report_respects_the_context_and_chooses_random_weight_bounds(build):
    checkpoint, out, stdout = build
    config = json.loads((checkpoint / "config.json").read_text())
    n_positions = config["n_positions"]
    report = json.loads((out / "report.json").read_text())
    assert report["config"]["n_positions"] == n_positions
    speed = report["speed"]
    assert speed["prompt"] + speed["new_tokens"] - 1 <= n_positions  # greedy feeds all but the last token
    assert speed["new_tokens"] == min(64, n_positions - speed["prompt"] + 1)
    assert all(v["speed"]["tok_per_s"] > 0 for v in report["variants"])
    markdown = (out / "report.md").read_text()
    assert f"{n_positions} positions" in markdown and "all checks passed" in markdown
    assert "random weights (nearly flat next-token distributions" in markdown
    assert report["random_weights"] is True and report["weights"]["share"] >= FLAT_SHARE
    assert "tolerances for random weights: mean next-token entropy" in stdout


def test_fp32_graph_generates_what_pytorch_generates_to_the_end_of_the_context(build):
    checkpoint, out, _ = build
    model = GPT2.from_hf(load_hf(str(checkpoint)).model)
    config = model.config
    prompt_len, new_tokens = fit_greedy(config.n_positions, 4, config.n_positions)
    prompts = [list(range(100, 100 + prompt_len)), list(range(200, 200 + max(1, prompt_len - 2)))]
    expected = greedy(TorchGPT2(model), prompts, new_tokens, no_repeat=True, use_cache=False)
    got = greedy(OrtGPT2(out / ".build" / "reference.onnx", config), prompts, new_tokens, no_repeat=True)
    np.testing.assert_array_equal(got, expected)
    for name in VARIANTS:  # every shipped graph runs to the end of the context too
        graph = BuildDir(out).runnable_graph(name)  # a compact variant: the graph its pieces expand to
        tokens = greedy(OrtGPT2(graph, config), prompts, new_tokens)
        assert tokens.shape == (2, new_tokens) and ((0 <= tokens) & (tokens < config.vocab_size)).all()


def refused_checkpoint(name: str, directory: Path) -> tuple[Path, str]:
    """A checkpoint of ``REFUSED[name]`` and the message its refusal must give."""
    config, changes, message = REFUSED[name]
    checkpoint = save_checkpoint(directory, **config)
    path = checkpoint / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))
    return checkpoint, message


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_shape_that_cannot_work_exits_2_with_one_line(name, tmp_path, capsys):
    checkpoint, message = refused_checkpoint(name, tmp_path / "checkpoint")
    capsys.readouterr()
    assert main(["all", "--from", str(checkpoint), "--out", str(tmp_path / "out"), "--tokenizer-src", str(NPM_DIR)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.partial-*"))


@pytest.mark.parametrize("name", ["context-4", "vocab-1000"])  # refused before and after the weights are read
def test_the_command_itself_exits_2_without_a_traceback(name, tmp_path):
    """The same refusals seen from outside: ``python -m model_export``'s exit status and stderr."""
    checkpoint, message = refused_checkpoint(name, tmp_path / "checkpoint")
    result = run_model_export("all", "--from", str(checkpoint), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.strip()] == [result.stderr.strip()]


def test_peaked_distributions_get_the_trained_weight_bounds():
    """The verdict reads the weights: the same random model with a 100 times larger embedding
    (peaked next-token distributions, as trained weights give) no longer counts as random."""
    import torch
    import transformers

    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, n_positions=32))
    tokens = list(range(1000, 1032))
    flat = weights_verdict(GPT2.from_hf(hf), tokens)
    with torch.no_grad():
        hf.transformer.wte.weight.mul_(100)
    peaked = weights_verdict(GPT2.from_hf(hf), tokens)
    assert flat["random"] and flat["share"] >= FLAT_SHARE and "at least 90%" in flat["reason"]
    assert not peaked["random"] and peaked["share"] < FLAT_SHARE and "under 90%" in peaked["reason"]
    assert weights_verdict(GPT2.from_hf(hf), tokens, preset=True)["random"]
