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
