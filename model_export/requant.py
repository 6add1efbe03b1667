"""The ``q8x`` variant: download the 4-bit ``q4x`` pieces, compute in int8.

``q4x`` (``compact.py``) expands its 4-bit blocks into float32 and runs the fp32 graph: fast in
WebAssembly, but the browser then holds the weights in float32 several times over (the expanded
files, onnxruntime's copy, its pre-packed copy), about 2 GB at its peak for GPT-2 small. ``q8``
computes with int8 weights (``MatMulInteger``), which holds a quarter of that and pre-fills a
long prompt faster in WebAssembly, but its own download is 165 MB.

``q8x`` takes both halves: it downloads nothing of its own but a graph and an index, reads the
very pieces ``q4x`` ships (so a reader's cache holds one copy of the weights, whichever variant
runs), and the worker turns each 4-bit matrix into int8 codes with float32 scales (one per matrix,
one per row of the token embedding; see below) before it creates the session:

    value  = (code4 - 8) * block_scale                      float32, as q4x expands it
    scale  = max |value| over the group / 127               float32 (0 for an all-zero group)
    code8  = round_half_even(value / scale), in [-127, 127]  (0 where scale is 0)

Every step is one correctly rounded float32 operation, so JavaScript (doubles rounded with
``Math.fround``: one rounding of an exact product, and a division, for which rounding a double
to float32 is exact) and NumPy produce the same bytes; ``tests/js`` checks that they do.

A group shares one scale: a whole matrix (``per`` = ``"matrix"``, every ``MatMul`` weight, as
ONNX Runtime's own dynamic int8 quantizes it: the q8 variant) or, for the tied token embedding
(V, C), a row (``per`` = ``"row"``): its transposed use as the output layer then has one scale
per token, a column scale that a matrix product can apply after the sum, and the same int8 rows
serve the embedding lookup. A scale per column of the other matrices would be finer, but each
code would then need a division of its own in the browser (about five times the time of the
whole q4x expansion); with one scale per group of 32 codes, the 16 possible codes of a 4-bit
block are divided once.

Files of a ``q8x`` directory::

    model.onnx     the int8 graph; its large initializers are external data in "targets"
    expand.json    the index (format ``tx-requant-1``): targets, raw chunks as in ``q4x``, and
                   one entry per int8 matrix naming the q4x chunks it is built from

The index's ``pieces`` are paths relative to this directory (``../q4x/packed.0``, ...).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import compact
from .layout import GRAPH_FILE, INDEX_FILE, SMALL_TENSOR_BYTES, tensor_bytes

FORMAT = "tx-requant-1"
QMAX = 127
INT8_SUFFIX = ".int8"
SCALE_SUFFIX = ".scale"


# ---------------------------------------------------------------- the arithmetic


PER = ("matrix", "row")


def _wide(scales: np.ndarray, per: str) -> np.ndarray:
    return scales.reshape(1, 1) if per == "matrix" else scales[:, None]


def requantize(values: np.ndarray, per: str) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes and float32 scales, one scale per group.

    Args:
        values: (R, L) float32.
        per: ``"matrix"`` for one scale, ``"row"`` for one per row.

    Returns:
        ``(codes, scales)``: (R, L) int8, and float32 of shape () or (R,).
    """
    if per not in PER:
        raise ValueError(f"per must be one of {PER}, got {per!r}")
    values = np.asarray(values, np.float32)
    scales = np.abs(values).max(axis=None if per == "matrix" else 1) / np.float32(QMAX)  # float32, rounded once
    wide = _wide(np.asarray(scales), per)
    safe = np.where(wide == 0, np.float32(1), wide)
    codes = np.clip(np.rint(values / safe), -QMAX, QMAX)  # float32 quotient, then half-to-even
    codes = np.where(wide == 0, 0, codes).astype(np.int8)
    return codes, np.asarray(scales, np.float32)


def scale_count(rows: int, per: str) -> int:
    """How many scales a (rows, cols) matrix has."""
    return 1 if per == "matrix" else rows


def dequantize(codes: np.ndarray, scales: np.ndarray, per: str) -> np.ndarray:
    """The float32 values the int8 graph computes with: code * scale of its group."""
    return codes.astype(np.float32) * _wide(np.asarray(scales, np.float32), per)


# ---------------------------------------------------------------- the graph


def scale_groups(proto: onnx.ModelProto, names: set[str]) -> dict[str, str]:
    """Scale group of each matrix in ``names``: ``"matrix"`` when a MatMul reads it directly,
    ``"row"`` when it reads it through a ``Transpose`` (the tied embedding).

    Raises:
        ValueError: A matrix is read both ways, or looked up (Gather) while read directly.
    """
    producer = {out: node for node in proto.graph.node for out in node.output}
    axes: dict[str, str] = {}

    def note(name: str, per: str):
        if axes.setdefault(name, per) != per:
            raise ValueError(f"{name} is read both directly and transposed; one int8 form cannot serve both")

    for node in proto.graph.node:
        if node.op_type != "MatMul":
            continue
        weight = node.input[1]
        if weight in names:
            note(weight, "matrix")
        elif weight in producer and producer[weight].op_type == "Transpose" and producer[weight].input[0] in names:
            note(producer[weight].input[0], "row")
    for node in proto.graph.node:
        if node.op_type == "Gather" and node.input[0] in names and axes.get(node.input[0]) != "row":
            raise ValueError(f"{node.input[0]} is looked up by rows but not scaled by rows")
    return axes


def _int8_matmul(node: onnx.NodeProto, weight: str, scale: str, zero: str) -> list[onnx.NodeProto]:
    """``MatMul(x, W)`` as int8 arithmetic: x quantized on the fly; W's scale one number, or one
    per column (the transposed embedding's rows)."""
    prefix = node.output[0]

    def name(part: str) -> str:
        return f"{prefix}.{part}"

    return [
        helper.make_node("DynamicQuantizeLinear", [node.input[0]], [name("x_q"), name("x_scale"), name("x_zero")]),
        helper.make_node("Mul", [name("x_scale"), scale], [name("scale")]),  # () or (N,)
        helper.make_node("MatMulInteger", [name("x_q"), weight, name("x_zero"), zero], [name("int")]),  # (B, T, N)
        helper.make_node("Cast", [name("int")], [name("float")], to=onnx.TensorProto.FLOAT),
        helper.make_node("Mul", [name("float"), name("scale")], [node.output[0]]),
    ]


def _int8_lookup(node: onnx.NodeProto, codes: str, scale: str, last_axis: str) -> list[onnx.NodeProto]:
    """``Gather(E, ids)`` from int8 rows: each row times its own scale."""
    prefix = node.output[0]

    def name(part: str) -> str:
        return f"{prefix}.{part}"

    ids = node.input[1]
    return [
        helper.make_node("Gather", [codes, ids], [name("rows_q")], axis=0),  # (B, T, C) int8
        helper.make_node("Cast", [name("rows_q")], [name("rows")], to=onnx.TensorProto.FLOAT),
        helper.make_node("Gather", [scale, ids], [name("row_scale")], axis=0),  # (B, T)
        helper.make_node("Unsqueeze", [name("row_scale"), last_axis], [name("row_scale1")]),  # (B, T, 1)
        helper.make_node("Mul", [name("rows"), name("row_scale1")], [node.output[0]]),
    ]


def _placeholder(name: str, data_type: int, dims: tuple[int, ...]) -> onnx.TensorProto:
    """An initializer with a name, type and shape but no data (``write_requant`` points it at a target)."""
    tensor = onnx.TensorProto(name=name, data_type=data_type, raw_data=b"")  # raw_data set: external data may replace it
    tensor.dims.extend(dims)
    return tensor


def int8_graph(reference: onnx.ModelProto, axes: dict[str, str]) -> onnx.ModelProto:
    """The fp32 graph with every matrix in ``axes`` replaced by int8 codes and their scales.

    ``axes`` maps each matrix to its scale group (``scale_groups``). The new initializers
    ``W.int8`` (int8, W's shape) and ``W.scale`` (float32, () or (rows,)) have no data yet;
    ``write_requant`` points them at the targets. A ``Transpose`` of the tied embedding
    now transposes its int8 codes; onnxruntime folds it when it creates the session.
    """
    proto = onnx.ModelProto()
    proto.CopyFrom(reference)
    graph = proto.graph
    initializers = {t.name: t for t in graph.initializer}
    transposed = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Transpose" and n.input[0] in axes}
    zero, last_axis = "requant.zero_int8", "requant.last_axis"
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(0, np.int8), zero),
            numpy_helper.from_array(np.array([-1], np.int64), last_axis),
        ]
    )
    for weight, per in axes.items():
        shape = tuple(initializers[weight].dims)
        graph.initializer.extend(
            [
                _placeholder(weight + INT8_SUFFIX, onnx.TensorProto.INT8, shape),
                _placeholder(weight + SCALE_SUFFIX, onnx.TensorProto.FLOAT, () if per == "matrix" else shape[:1]),
            ]
        )
    nodes: list[onnx.NodeProto] = []
    retyped: set[str] = set()
    for node in graph.node:
        weight = node.input[1] if node.op_type == "MatMul" else None
        if weight in axes:
            nodes += _int8_matmul(node, weight + INT8_SUFFIX, weight + SCALE_SUFFIX, zero)
        elif weight in transposed:
            nodes += _int8_matmul(node, weight, transposed[weight] + SCALE_SUFFIX, zero)
        elif node.op_type == "Gather" and node.input[0] in axes:
            source = node.input[0]
            nodes += _int8_lookup(node, source + INT8_SUFFIX, source + SCALE_SUFFIX, last_axis)
        else:
            if node.op_type == "Transpose" and node.input[0] in axes:
                node.input[0] = node.input[0] + INT8_SUFFIX
                retyped.add(node.output[0])  # now int8: its recorded float type goes
            nodes.append(node)
    stale = [info for info in graph.value_info if info.name in retyped]
    for info in stale:
        graph.value_info.remove(info)
    del graph.node[:]
    graph.node.extend(nodes)
    for weight in axes:
        graph.initializer.remove(initializers[weight])
    return proto


# ---------------------------------------------------------------- writing


def write_requant(reference: onnx.ModelProto, source_dir: str | Path, directory: str | Path, target_bytes: int = compact.TARGET_BYTES) -> list[Path]:
    """Writes a ``q8x`` directory that builds its int8 weights from ``source_dir``'s q4x pieces.

    Args:
        reference: The fp32 graph (not modified); the q4x variant was written from it.
        source_dir: The q4x directory (its index and pieces are read, not copied).
        directory: Created; an earlier graph and index are removed.
        target_bytes: Largest expanded target.

    Returns:
        The written files: graph, then index.
    """
    source_dir, directory = Path(source_dir), Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in [*directory.glob(f"{GRAPH_FILE}*"), directory / INDEX_FILE]:
        old.unlink(missing_ok=True)
    source = compact.read_index(source_dir)
    four_bit = {c["tensor"] for c in source["chunks"] if c["encoding"] == compact.Q4_ENCODING}
    axes = scale_groups(reference, four_bit)
    if set(axes) != four_bit:
        raise ValueError(f"q4x matrices no MatMul reads: {sorted(four_bit - set(axes))}")
    proto = int8_graph(reference, axes)
    targets = compact.TargetLayout(target_bytes)
    raw_chunks, matrices = [], []
    by_tensor: dict[str, list[dict]] = {}
    for chunk in source["chunks"]:
        by_tensor.setdefault(chunk["tensor"], []).append(chunk)
    initializers = {t.name: t for t in proto.graph.initializer}
    for tensor in proto.graph.initializer:
        name = tensor.name
        if name.endswith(INT8_SUFFIX) and name[: -len(INT8_SUFFIX)] in axes:
            weight = name[: -len(INT8_SUFFIX)]
            rows, cols = (int(d) for d in tensor.dims)
            values = targets.place(rows * cols)
            compact.externalize(tensor, *values, rows * cols)
            scale = initializers[weight + SCALE_SUFFIX]
            groups = scale_count(rows, axes[weight])
            scales = targets.place(4 * groups)
            compact.externalize(scale, *scales, 4 * groups)
            parts = [{k: c[k] for k in ("piece", "start", "bytes", "elements")} for c in by_tensor[weight]]
            matrices.append({"tensor": weight, "rows": rows, "cols": cols, "per": axes[weight], "values": list(values), "scales": list(scales), "parts": parts})
        elif name in by_tensor:  # raw in q4x: the same bytes, at their new place
            chunks = by_tensor[name]
            size = tensor_bytes(tensor)
            target, offset = targets.place(size)
            base = chunks[0]["offset"]
            for c in chunks:
                raw_chunks.append(c | {"target": target, "offset": offset + c["offset"] - base})
            compact.externalize(tensor, target, offset, size)
        elif tensor.data_location != onnx.TensorProto.EXTERNAL and tensor_bytes(tensor) >= SMALL_TENSOR_BYTES:
            raise ValueError(f"{name}: a large initializer the q4x pieces do not hold")
    graph_path = directory / GRAPH_FILE
    onnx.save(proto, str(graph_path))
    relative = Path("..") / source_dir.name
    index = {
        "format": FORMAT,
        "block": source["block"],
        "pieces": [(relative / p).as_posix() for p in source["pieces"]],
        "targets": [{"name": compact.target_name(i), "bytes": n} for i, n in enumerate(targets.sizes)],
        "chunks": raw_chunks,
        "matrices": matrices,
    }
    index_path = directory / INDEX_FILE
    index_path.write_text(json.dumps(index, separators=(",", ":")) + "\n", encoding="utf-8")
    return [graph_path, index_path]


# ---------------------------------------------------------------- reading


def matrix_values(index: dict, matrix: dict, pieces: list[np.ndarray]) -> np.ndarray:
    """The (rows, cols) float32 values of one matrix, expanded from its q4 parts as q4x does."""
    block = index["block"]
    values = []
    for part in matrix["parts"]:
        source = pieces[part["piece"]][part["start"] : part["start"] + part["bytes"]]
        n = part["elements"]
        values.append(compact.dequantize_blocks(source[: n // 2], source[n // 2 :].view("<f2"), block))
    return np.concatenate(values).reshape(matrix["rows"], matrix["cols"])


def expand_targets(directory: str | Path, index: dict) -> dict[str, bytes]:
    """Builds every target file's bytes from the q4x pieces, as the browser does."""
    directory = Path(directory)
    pieces = [np.fromfile(directory / name, np.uint8) for name in index["pieces"]]
    targets = {t["name"]: np.zeros(t["bytes"], np.uint8) for t in index["targets"]}

    def write(where: list[int], data: np.ndarray):
        out = targets[index["targets"][where[0]]["name"]]
        out[where[1] : where[1] + data.nbytes] = data.reshape(-1).view(np.uint8)

    for chunk in index["chunks"]:
        if chunk["encoding"] != "raw":
            raise ValueError(f"unknown chunk encoding {chunk['encoding']!r}")
        write([chunk["target"], chunk["offset"]], pieces[chunk["piece"]][chunk["start"] : chunk["start"] + chunk["bytes"]])
    for matrix in index["matrices"]:
        codes, scales = requantize(matrix_values(index, matrix, pieces), matrix["per"])
        write(matrix["values"], codes)
        write(matrix["scales"], scales.astype("<f4"))
    return {name: array.tobytes() for name, array in targets.items()}


def index_problems(directory: str | Path, index: dict, piece_bytes: int) -> list[str]:
    """Breaks of a ``tx-requant-1`` index's contract (see ``compact.index_problems``)."""
    directory = Path(directory)
    problems = []
    sizes = [(directory / name).stat().st_size if (directory / name).is_file() else -1 for name in index["pieces"]]
    problems += [f"{name}: missing" for name, n in zip(index["pieces"], sizes) if n < 0]
    problems += [f"{name}: {n} bytes > {piece_bytes}" for name, n in zip(index["pieces"], sizes) if n > piece_bytes]
    spans = [[] for _ in index["targets"]]
    for chunk in index["chunks"]:
        if chunk["start"] + chunk["bytes"] > sizes[chunk["piece"]]:
            problems.append(f"{chunk['tensor']}: beyond the end of {index['pieces'][chunk['piece']]}")
        spans[chunk["target"]].append((chunk["offset"], chunk["offset"] + chunk["bytes"], chunk["tensor"]))
    for m in index["matrices"]:
        elements = sum(p["elements"] for p in m["parts"])
        if elements != m["rows"] * m["cols"] or m["cols"] % index["block"] or m.get("per") not in PER:
            problems.append(f"{m['tensor']}: {elements} elements in parts for a {m['rows']} x {m['cols']} matrix")
        for p in m["parts"]:
            if p["start"] + p["bytes"] > sizes[p["piece"]]:
                problems.append(f"{m['tensor']}: a part beyond the end of {index['pieces'][p['piece']]}")
        channels = scale_count(m["rows"], m.get("per"))
        spans[m["values"][0]].append((m["values"][1], m["values"][1] + m["rows"] * m["cols"], m["tensor"]))
        spans[m["scales"][0]].append((m["scales"][1], m["scales"][1] + 4 * channels, m["tensor"] + SCALE_SUFFIX))
        if m["scales"][1] % 4:
            problems.append(f"{m['tensor']}: scales not aligned to 4 bytes")
    for target, written in zip(index["targets"], spans):
        written.sort()
        problems += [f"{target['name']}: {name} runs past its end" for _, end, name in written if end > target["bytes"]]
        if any(a[1] > b[0] for a, b in zip(written, written[1:])):
            problems.append(f"{target['name']}: tensors overlap")
    return problems
