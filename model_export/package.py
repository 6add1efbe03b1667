"""Lay a variant out on disk for the browser, and describe the build directory in ``manifest.json``.

A variant is one graph file, ``<variant>/model.onnx``, plus its weights in external-data pieces
``<variant>/model.onnx.data.0``, ``.data.1``, ... of at most ``piece_bytes`` each (GitHub Pages
refuses files over 100 MB, and smaller files download in parallel and cache well). Each weight
tensor of the graph names its piece by file name (its ONNX external-data ``location``, relative
to the graph file) with an offset and a length, so the browser hands the pieces to
onnxruntime-web as ``externalData: [{path: location, data: bytes}]``. A variant whose weights
total at most ``inline_bytes`` stays a single file: below a few megabytes one request is cheaper
than several.

A tensor larger than a piece is stored as row blocks joined by a ``Concat`` node that produces
the original tensor name; ONNX Runtime folds the ``Concat`` when it loads the graph.

The manifest lists, per variant, its files with bytes, sha256 and role (``graph`` or ``data``),
the execution providers it targets, its output names and its validation metrics; plus the
model configuration, the graph's inputs and outputs, the tokenizer files, the pipeline figures'
tables (``tables.py``) and the default variant per backend. Paths are relative to the manifest's
directory.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper

from .expand import index_problems
from .layout import (
    GRAPH_FILE,
    INDEX_FILE,
    INLINE_BYTES,
    INSPECT_FILE,
    MANIFEST,
    PACKED_PREFIX,
    PIECE_BYTES,
    SMALL_TENSOR_BYTES,
    external_locations,
    piece_name,
    tensor_bytes,
)
from .probes import probe_contract
from .tokenizer import sha256_file
from .variants import variant_order

FORMAT = 2
CONFIG_KEYS = (
    "n_layer",
    "n_head",
    "n_embd",
    "n_positions",
    "vocab_size",
    "layer_norm_epsilon",
    "eos_token_id",
)  # the manifest's (and the tables') config: every number the browser computes with


def _raw(tensor: onnx.TensorProto) -> bytes:
    if tensor.HasField("raw_data"):
        return tensor.raw_data
    return numpy_helper.to_array(tensor).tobytes()


def split_large_initializers(proto: onnx.ModelProto, max_bytes: int) -> list[str]:
    """Replaces each initializer over ``max_bytes`` by row blocks and a ``Concat`` node, in place.

    Only plain numeric tensors can be split (4-bit or blocked quantized weights cannot, and are
    far smaller than a piece anyway).

    Returns:
        Names of the split initializers.

    Raises:
        ValueError: If a tensor too large for a piece cannot be split by rows.
    """
    graph = proto.graph
    split, concats = [], []
    for tensor in list(graph.initializer):
        size = tensor_bytes(tensor)
        if size <= max_bytes:
            continue
        array = numpy_helper.to_array(tensor)
        if array.ndim == 0 or tensor.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
            raise ValueError(f"initializer {tensor.name} ({size} bytes) exceeds a piece and cannot be split by rows")
        row_bytes = array.nbytes // array.shape[0]
        rows = max(1, max_bytes // row_bytes)
        names = []
        for index, start in enumerate(range(0, array.shape[0], rows)):
            names.append(f"{tensor.name}.rows{index}")
            graph.initializer.append(numpy_helper.from_array(array[start : start + rows], names[-1]))
        graph.initializer.remove(tensor)
        concats.append(onnx.helper.make_node("Concat", names, [tensor.name], name=f"{tensor.name}.concat", axis=0))
        split.append(tensor.name)
    for node in reversed(concats):  # before every user: graph nodes are topologically sorted
        graph.node.insert(0, node)
    return split


def save_variant(
    proto: onnx.ModelProto,
    directory: str | Path,
    piece_bytes: int = PIECE_BYTES,
    inline_bytes: int = INLINE_BYTES,
) -> list[Path]:
    """Writes ``directory/model.onnx`` and its external-data pieces; edits ``proto`` in place.

    Args:
        proto: The graph with all weights loaded.
        directory: The variant's directory (created; files left from an earlier run removed).
        piece_bytes: Largest piece.
        inline_bytes: Weights totalling at most this stay inside the graph file.

    Returns:
        The written files, graph first, then the pieces in order.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob(f"{GRAPH_FILE}*"):
        old.unlink()
    graph_path = directory / GRAPH_FILE
    big = [t for t in proto.graph.initializer if tensor_bytes(t) >= SMALL_TENSOR_BYTES]
    if sum(tensor_bytes(t) for t in big) <= inline_bytes:
        onnx.save(proto, str(graph_path))
        return [graph_path]

    split_large_initializers(proto, piece_bytes)
    big = [t for t in proto.graph.initializer if tensor_bytes(t) >= SMALL_TENSOR_BYTES]
    pieces: list[Path] = []
    handle, offset = None, 0
    try:
        for tensor in big:
            data = _raw(tensor)
            if handle is None or offset + len(data) > piece_bytes:
                if handle is not None:
                    handle.close()
                pieces.append(directory / piece_name(len(pieces)))
                handle, offset = open(pieces[-1], "wb"), 0
            handle.write(data)
            external_data_helper.set_external_data(tensor, location=pieces[-1].name, offset=offset, length=len(data))
            tensor.data_location = onnx.TensorProto.EXTERNAL
            tensor.ClearField("raw_data")
            for typed in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"):
                tensor.ClearField(typed)
            offset += len(data)
    finally:
        if handle is not None:
            handle.close()
    onnx.save(proto, str(graph_path))
    return [graph_path, *pieces]


def file_entry(path: str | Path, root: str | Path, role: str | None = None) -> dict:
    """``{"path", "bytes", "sha256"[, "role"]}`` of a file, its path relative to ``root`` with ``/``."""
    path, root = Path(os.path.normpath(path)), Path(os.path.normpath(root))
    entry = {"path": path.relative_to(root).as_posix(), "bytes": path.stat().st_size, "sha256": sha256_file(path)}
    if role:
        entry["role"] = role
    return entry


def _numbered(directory: Path, prefix: str) -> list[Path]:
    return sorted(directory.glob(f"{prefix}*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))


def variant_files(directory: str | Path) -> list[Path]:
    """A variant directory's files in load order: the graph, then the pieces by number (for a
    compact variant: the graph, its index, then its packed pieces)."""
    directory = Path(directory)
    if (directory / INDEX_FILE).is_file():  # the pieces the index names (a q8x one names q4x's)
        pieces = json.loads((directory / INDEX_FILE).read_text(encoding="utf-8"))["pieces"]
        return [directory / GRAPH_FILE, directory / INDEX_FILE, *(Path(os.path.normpath(directory / p)) for p in pieces)]
    return [directory / GRAPH_FILE, *_numbered(directory, f"{GRAPH_FILE}.data.")]


def file_role(path: Path) -> str:
    """``graph``, ``data`` (external-data piece), ``index`` or ``packed`` (compact variants)."""
    if path.name == GRAPH_FILE:
        return "graph"
    if path.name == INDEX_FILE:
        return "index"
    return "packed" if path.name.startswith(PACKED_PREFIX) else "data"


def variant_entry(
    name: str,
    dtype: str,
    backends: list[str],
    outputs: list[str],
    root: str | Path,
    validation: dict | None = None,
    gpu_features: tuple[str, ...] = (),
    batch_invariant: bool = True,
) -> dict:
    """One downloadable form of the model, as listed in the manifest.

    Args:
        name: Variant id; its files are in ``root/name/``.
        dtype: Weight dtype, e.g. ``int4``.
        backends: onnxruntime-web execution providers it runs on, preferred first.
        outputs: Names of the graph's outputs.
        root: The build directory.
        validation: Its metrics against the fp32 reference, if measured.
        gpu_features: WebGPU features a device needs to run it (listed only when there are some).
        batch_invariant: Whether a position's logits do not depend on the rest of the pass
            (``variants.VariantSpec.batch_invariant``).

    Returns:
        The manifest entry.
    """
    paths = variant_files(Path(root) / name)
    files = [file_entry(p, root, file_role(p)) for p in paths]
    entry = {
        "name": name,
        "dtype": dtype,
        "backends": list(backends),
        "outputs": list(outputs),
        "files": files,
        "validation": validation or {},
        "bytes": sum(f["bytes"] for f in files),
        "batch_invariant": batch_invariant,
    }
    if gpu_features:
        entry["gpu_features"] = list(gpu_features)
    inspect = Path(root) / name / INSPECT_FILE
    if inspect.is_file():  # the same weights with probes (probes.py): loaded instead of the graph
        entry["inspect"] = file_entry(inspect, root, "graph")
    return entry


def versions() -> dict[str, str]:
    """Versions of the packages that produced the files."""
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
    random_weights: bool,
    config: dict,
    inputs: list[dict],
    outputs: list[dict],
    variants: list[dict],
    tokenizer: dict[str, Path],
    validation: list[dict],
    root: str | Path,
    tables: list[Path] | None = None,
    default_variants: dict[str, str] | None = None,
    draft: dict | None = None,
) -> dict:
    """Assembles the manifest dict.

    Args:
        name: Model name shown to readers.
        source: Where the weights came from (``preset:tiny``, a directory, a Hub id).
        seed: Random seed of a preset, else None.
        random_weights: True when the weights are random numbers (a preset, or a checkpoint whose
            next-token distributions are nearly flat: ``validate.weights_verdict``).
        config: ``GPT2Config.to_dict()``.
        inputs: Graph inputs as ``{"name", "dtype", "shape"}`` (the same for every variant).
        outputs: Every output a variant may have, same form; each variant lists its own names.
        variants: Entries from ``variant_entry()``; ``variants.variant_order`` ranks them per backend.
        tokenizer: Role (``vocab``, ``merges``, ``notice``) -> file path.
        validation: The fp32 reference's validation rows as dicts (empty when skipped).
        root: The build directory.
        tables: The files of the ``tables`` stage (index first); none when it has not run.
        default_variants: Backend -> variant name; if None, the first of ``variant_order``.
        draft: The draft model of speculative decoding (``pipeline.draft_entry``), if built.

    Returns:
        The manifest, ready for ``write_manifest``.
    """
    order = variant_order([v["name"] for v in variants])
    if default_variants is None:
        default_variants = first_choices(order)
    return {
        "format": FORMAT,
        "name": name,
        "source": source,
        "seed": seed,
        "random_weights": random_weights,
        "config": {key: config[key] for key in CONFIG_KEYS},
        "inputs": inputs,
        "outputs": outputs,
        "variants": variants,
        "default_variants": default_variants,
        "variant_order": order,
        "probes": probe_contract(),  # the inspect graphs' probe inputs (probes.py), for probe-feeds.js
        "tokenizer": {role: file_entry(path, root) for role, path in tokenizer.items()},
        "tables": [file_entry(path, root) for path in tables or []],
        "validation": validation,
        "created_with": versions(),
    } | ({"draft": draft} if draft else {})


def first_choices(order: dict[str, list[str]]) -> dict[str, str]:
    """Backend -> the variant a browser tries first there, from ``variant_order``'s ranking."""
    return {backend: names[0] for backend, names in order.items()}


def write_json(path: str | Path, data: dict) -> Path:
    """Writes strict JSON (indented, trailing newline) atomically: a temporary file, renamed.

    NaN and infinities, which browsers' ``JSON.parse`` rejects, are written as ``null``.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(_finite(data), indent=2, allow_nan=False, default=_json_default)
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _finite(value):
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def write_manifest(out_dir: str | Path, manifest: dict) -> Path:
    """Writes ``manifest.json`` and returns its path."""
    return write_json(Path(out_dir) / MANIFEST, manifest)


def read_manifest(out_dir: str | Path) -> dict:
    """Reads ``manifest.json`` from a build directory."""
    return json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))


def listed_files(manifest: dict) -> list[dict]:
    """Every file entry of the manifest: all variants' files (and inspect graphs), then the
    tokenizer's and the tables'."""
    variants = manifest["variants"] + manifest.get("draft", {}).get("variants", [])
    files = [f for v in variants for f in v["files"] + ([v["inspect"]] if "inspect" in v else [])]
    return files + list(manifest["tokenizer"].values()) + manifest.get("tables", [])


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


def layout_problems(out_dir: str | Path, manifest: dict, piece_bytes: int = PIECE_BYTES) -> list[str]:
    """Breaks of the browser's contract: one graph per variant, pieces that are too large, or
    external-data locations that are not the variant's pieces."""
    problems = []
    for variant in manifest["variants"]:
        graphs = [f for f in variant["files"] if f.get("role") == "graph"]
        data = [f for f in variant["files"] if f.get("role") == "data"]
        if len(graphs) != 1:
            problems.append(f"{variant['name']}: {len(graphs)} graph files (expected 1)")
            continue
        if any(f.get("role") == "index" for f in variant["files"]):
            directory = (Path(out_dir) / graphs[0]["path"]).parent
            problems += [f"{variant['name']}: {p}" for p in index_problems(directory, piece_bytes)]
            continue
        problems += [f"{f['path']}: {f['bytes']} bytes > {piece_bytes}" for f in data if f["bytes"] > piece_bytes]
        graph_dir = Path(graphs[0]["path"]).parent
        names = {Path(f["path"]).name for f in data}
        if any(Path(f["path"]).parent != graph_dir for f in data):
            problems.append(f"{variant['name']}: data pieces outside the graph's directory")
        locations = external_locations(Path(out_dir) / graphs[0]["path"])
        if locations != names:
            problems.append(f"{variant['name']}: graph refers to {sorted(locations)}, manifest lists {sorted(names)}")
    return problems
