"""The draft model that ``model-export all`` ships for speculative decoding, on make's build of
the book's model (``build/models/book``: ``make site`` writes it):

* the manifest lists it (its blocks, its config, its variants under ``draft/``, each validated),
  and its fp32 graph is the checkpoint cut after its first blocks, as PyTorch computes it;
* the ``batch_invariant`` fact each variant carries holds: the last position's logits from a
  pass over several tokens equal those of a pass over that token alone (after the cache of the
  others) for the float variants, and differ for dynamic int8 activation quantization, whose
  scale is taken over the whole pass. Speculative decoding checks several tokens in one pass, so
  its greedy output is the model's own only on an invariant variant.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model_export.expand import onnx_graph
from model_export.gpt2 import GPT2Config
from model_export.layout import DRAFT_DIR, expanded_name
from model_export.runtime import OrtGPT2, empty_past
from model_export.weights import BOOK_SOURCE, load_hf

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "models" / "book"
IDS = [464, 3241, 19590, 286, 257, 1182, 318, 257, 11710, 286, 262, 3815]  # "The attention weights of a head is a mixture of the values"


@pytest.fixture(scope="module")
def manifest() -> dict:
    path = BUILD / "manifest.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make model` (make test does it)")
    return json.loads(path.read_text())


def graph(directory: Path, name: str) -> Path:
    return onnx_graph(directory, BUILD / ".build" / expanded_name(name))


def test_the_manifest_lists_a_validated_draft_of_the_first_blocks(manifest):
    draft = manifest["draft"]
    assert 1 <= draft["blocks"] < manifest["config"]["n_layer"]
    assert draft["config"] == {**manifest["config"], "n_layer": draft["blocks"]}
    assert {v["name"] for v in draft["variants"]} == set(draft["variant_order"]["wasm"]) | set(draft["variant_order"].get("webgpu", []))
    for variant in draft["variants"]:
        assert all(f["path"].startswith(f"{DRAFT_DIR}/") for f in variant["files"]), variant["name"]
        assert variant["validation"]["passed"], variant["name"]
        assert (BUILD / variant["files"][0]["path"]).is_file()


def test_the_draft_is_the_checkpoint_cut_after_its_first_blocks(manifest):
    blocks = manifest["draft"]["blocks"]
    hf = load_hf(BOOK_SOURCE).model.float().eval()
    early_exit = copy.deepcopy(hf)
    early_exit.transformer.h = early_exit.transformer.h[:blocks]  # then ln_f and the tied unembedding
    with torch.no_grad():
        want = early_exit(torch.tensor([IDS])).logits[0].numpy()
    reference = BUILD / ".build" / DRAFT_DIR / ".build" / "reference.onnx"
    runner = OrtGPT2(reference, GPT2Config(**manifest["draft"]["config"]), threads=1)
    x = np.array([IDS], np.int64)
    logits, _ = runner.run(x, np.ones_like(x), np.arange(len(IDS))[None], empty_past(runner.config, 1))
    np.testing.assert_allclose(logits[0], want, atol=1e-3)
    full = hf(torch.tensor([IDS])).logits[0].detach().numpy()
    assert np.abs(full - want).max() > 1.0  # cut short, it is a different model


def last_logits_both_ways(runner: OrtGPT2, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The last position's logits from one pass over `ids`, and from a pass over the last token
    after the cache of the others."""
    x = np.array([ids], np.int64)
    together, _ = runner.run(x, np.ones_like(x), np.arange(len(ids))[None], empty_past(runner.config, 1))
    head = x[:, :-1]
    _, past = runner.run(head, np.ones_like(head), np.arange(len(ids) - 1)[None], empty_past(runner.config, 1))
    alone, _ = runner.run(x[:, -1:], np.ones((1, len(ids)), np.int64), np.array([[len(ids) - 1]]), past)
    return together[0, -1], alone[0, -1]


def test_batch_invariant_says_whether_the_rest_of_the_pass_changes_a_positions_logits(manifest):
    config = GPT2Config(**manifest["config"])
    seen = {}
    for variant in manifest["variants"]:
        if "wasm" not in variant["backends"]:
            continue  # fp16 runs on WebGPU only
        runner = OrtGPT2(graph(BUILD / variant["name"], variant["name"]), config, threads=1)
        together, alone = last_logits_both_ways(runner, IDS[:6])  # a round of 4 proposals: 1 + 4 + 1
        seen[variant["name"]] = float(np.abs(together - alone).max())
        if variant["batch_invariant"]:
            assert seen[variant["name"]] < 1e-4, seen
        else:
            assert seen[variant["name"]] > 1e-3, seen
    assert {"q4x", "q8x"} <= set(seen), seen
