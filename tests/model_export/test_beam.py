"""model_export.beam: beam search on the exported graph (ONNX Runtime, KV cache reordered by
beam) gives Hugging Face transformers' ``generate(num_beams=...)`` result, token for token and
score for score, on the book's trained model.

Data-driven: each case is a prompt from the book's held-out text and a set of options. Two
cases end hypotheses on "." (id 13) instead of end-of-text, so that hypotheses finish early and
the length penalty and the stopping rules decide; the others run to the length limit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from export_helpers import MADE_MODEL
from model_export import corpus, train
from model_export.beam import beam_search
from model_export.gpt2 import GPT2Config
from model_export.layout import MANIFEST
from model_export.runtime import OrtGPT2
from model_export.weights import BOOK_MODEL_DIR, BOOK_SOURCE, load_hf

GRAPH = MADE_MODEL / ".build" / "reference.onnx"
pytestmark = pytest.mark.skipif(not GRAPH.is_file(), reason=f"{GRAPH} is missing (make model)")

PERIOD = 13  # "."
EOS = 50256  # <|endoftext|>: transformers pads the shorter hypotheses with it
CASES = {  # name: (prompt start in the held-out text, prompt tokens, options)
    "4 beams, to the limit": (0, 12, dict(num_beams=4, new_tokens=12)),
    "3 beams, plain sums, never stop early": (300, 8, dict(num_beams=3, new_tokens=10, length_penalty=0.0, early_stopping="never")),
    "4 beams, ends on a period, early stopping": (450, 12, dict(num_beams=4, new_tokens=20, eos=PERIOD, early_stopping=True)),
    "4 beams, ends on a period, short favoured": (300, 12, dict(num_beams=4, new_tokens=20, eos=PERIOD, length_penalty=-0.5)),
    "4 beams, ends on a period, long favoured, never early": (
        1650,
        12,
        dict(num_beams=4, new_tokens=20, eos=PERIOD, length_penalty=2.0, early_stopping="never"),
    ),
    "1 beam is greedy": (1200, 8, dict(num_beams=1, new_tokens=8)),
}


@pytest.fixture(scope="module")
def ort_runner():
    config = json.loads((MADE_MODEL / MANIFEST).read_text())["config"]
    return OrtGPT2(GRAPH, GPT2Config(**config), threads=1)


@pytest.fixture(scope="module")
def hf():
    return load_hf(BOOK_SOURCE).model.float().eval()


@pytest.fixture(scope="module")
def held_out():
    tokenizer = train.gpt2_tokenizer()
    return train.tokenize(corpus.load_pages(BOOK_MODEL_DIR / train.CORPUS_FILE), tokenizer).held_out


def hf_beams(hf, prompt, num_beams, new_tokens, eos=None, length_penalty=1.0, early_stopping=False):
    """transformers' own beam search: every returned hypothesis's new tokens, and its score."""
    out = hf.generate(
        torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        num_beams=num_beams,
        num_return_sequences=num_beams,
        max_new_tokens=new_tokens,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=EOS,
        length_penalty=length_penalty,
        early_stopping=early_stopping,
        output_scores=True,
        return_dict_in_generate=True,
    )
    scores = getattr(out, "sequences_scores", None)  # none for one beam (greedy decoding)
    scores = scores.tolist() if scores is not None else [0.0] * num_beams
    return [row[len(prompt) :].tolist() for row in out.sequences], scores


@pytest.mark.parametrize("name", list(CASES))
def test_beam_search_is_transformers_beam_search(name, ort_runner, hf, held_out):
    start, length, options = CASES[name]
    prompt = held_out[start : start + length].tolist()
    got = beam_search(ort_runner, prompt, **options)
    want, want_scores = hf_beams(hf, prompt, **options)
    assert len(got.sequences) == options["num_beams"]
    for mine, theirs in zip(got.sequences, want, strict=True):
        assert theirs[: len(mine)] == mine, (mine, theirs)  # transformers pads the shorter ones
        assert all(t == EOS for t in theirs[len(mine) :])
    if options["num_beams"] > 1:
        np.testing.assert_allclose(got.scores, want_scores, atol=2e-3)
    for s in got.sequences:
        assert len(s) == options["new_tokens"] or s[-1] == options.get("eos")
    if options.get("eos") is not None:  # the case does test the endings: a best candidate ended on its token
        nb = options["num_beams"]
        assert any((step.tokens[:nb] == options["eos"]).any() for step in got.steps)
    # The view's record: each step keeps num_beams candidates, best first.
    for step in got.steps:
        assert len(step.kept) == options["num_beams"] and np.all(np.diff(step.log_probs) <= 0)


def test_one_beam_is_greedy_decoding(ort_runner, held_out):
    from model_export.runtime import greedy

    prompt = held_out[1500:1510].tolist()
    assert beam_search(ort_runner, prompt, 1, 12).sequences[0] == greedy(ort_runner, [prompt], 12)[0].tolist()


def test_bad_options_name_the_limit(ort_runner):
    with pytest.raises(ValueError, match="at least 1"):
        beam_search(ort_runner, [464], 0, 4)
    with pytest.raises(ValueError, match="do not fit"):
        beam_search(ort_runner, [464] * 200, 2, 100)
