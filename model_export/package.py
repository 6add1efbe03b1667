"""Describe a build directory in ``manifest.json``.

The manifest lists every file the browser downloads with its size and sha256, grouped into
variants (one per precision / file layout, each a list of files), plus the tokenizer files, the
model's configuration and graph signature, and the validation rows. Paths are relative to the
manifest's directory.
"""

from __future__ import annotations

import json
from pathlib import Path

from .tokenizer import sha256_file

MANIFEST = "manifest.json"
FORMAT = 1


def file_entry(path: str | Path, root: str | Path) -> dict:
    """``{"path", "bytes", "sha256"}`` of a file, its path relative to ``root`` with ``/`` separators."""
    path, root = Path(path), Path(root)
    return {"path": path.relative_to(root).as_posix(), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def variant(name: str, dtype: str, backends: list[str], files: list[str | Path], root: str | Path) -> dict:
    """One downloadable form of the model.

    Args:
        name: Variant id, e.g. ``fp32``.
        dtype: Weight dtype, e.g. ``float32``.
        backends: ONNX Runtime Web execution providers it runs on, preferred first.
        files: The variant's files in load order (one ONNX file, or a graph plus weight chunks).
        root: The build directory.

    Returns:
        The manifest entry.
    """
    return {"name": name, "dtype": dtype, "backends": list(backends), "files": [file_entry(f, root) for f in files]}


def versions() -> dict[str, str]:
    """Versions of the packages that produced the files."""
    import onnx
    import onnxruntime
    import onnxscript
    import torch
    import transformers

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxscript": onnxscript.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def build_manifest(
    *,
    name: str,
    source: str,
    seed: int | None,
    config: dict,
    inputs: list[dict],
    outputs: list[dict],
    variants: list[dict],
    tokenizer: dict[str, Path],
    validation: list[dict],
    root: str | Path,
) -> dict:
    """Assembles the manifest dict.

    Args:
        name: Model name shown to readers.
        source: Where the weights came from (``preset:tiny``, a directory, a Hub id).
        seed: Random seed of a preset, else None.
        config: ``GPT2Config.to_dict()``.
        inputs: Graph inputs as ``{"name", "dtype", "shape"}``.
        outputs: Graph outputs, same form.
        variants: Entries from ``variant()``.
        tokenizer: Role (``vocab``, ``merges``, ``notice``) -> file path.
        validation: Validation rows as dicts (empty when skipped).
        root: The build directory.

    Returns:
        The manifest, ready for ``write_manifest``.
    """
    keys = ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "eos_token_id")
    return {
        "format": FORMAT,
        "name": name,
        "source": source,
        "seed": seed,
        "config": {key: config[key] for key in keys},
        "inputs": inputs,
        "outputs": outputs,
        "variants": variants,
        "tokenizer": {role: file_entry(path, root) for role, path in tokenizer.items()},
        "validation": validation,
        "created_with": versions(),
    }


def write_manifest(out_dir: str | Path, manifest: dict) -> Path:
    """Writes ``manifest.json`` (indented, trailing newline) and returns its path."""
    path = Path(out_dir) / MANIFEST
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def read_manifest(out_dir: str | Path) -> dict:
    """Reads ``manifest.json`` from a build directory."""
    return json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))


def listed_files(manifest: dict) -> list[dict]:
    """Every file entry of the manifest: all variants' files, then the tokenizer's."""
    return [f for v in manifest["variants"] for f in v["files"]] + list(manifest["tokenizer"].values())


def file_mismatches(out_dir: str | Path, manifest: dict) -> list[str]:
    """Files that are missing or whose size or sha256 differ from the manifest."""
    problems = []
    for entry in listed_files(manifest):
        path = Path(out_dir) / entry["path"]
        if not path.is_file():
            problems.append(f"{entry['path']}: missing")
        elif path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
            problems.append(f"{entry['path']}: differs from the manifest")
    return problems
