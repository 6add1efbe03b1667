"""Compact weights: download 4 bits per weight, compute in float32.

In the browser's WebAssembly build of ONNX Runtime the 4-bit matrix product (``MatMulNBits``)
is more than ten times slower than the float32 one, and int8 (``MatMulInteger``) is no faster
than float32, so the small files are the slow ones. The ``q4x`` variant separates the two: its
weights travel as 4-bit numbers in blocks of 32 with one float16 scale per block, and the worker
expands them into the float32 external-data files of an ordinary fp32 graph before it creates
the session. The download is about an eighth of fp32's; the arithmetic is fp32's.

Files of a ``q4x`` directory::

    model.onnx     the fp32 graph; its large initializers are external data in "targets"
                   (model.onnx.data.0, ...) that are never shipped: the browser builds them
    expand.json    the index: every target's size and, per chunk of a tensor, where its bytes
                   come from
    packed.0 ...   the packed chunks, each file at most ``piece_bytes``

A chunk is a run of consecutive elements of one tensor, written at ``offset`` bytes into target
``target``. Its ``encoding`` is

* ``q4``: ``elements`` float32 values from ``bytes`` packed bytes starting at ``start`` in
  piece ``piece``: first ``elements / 2`` bytes of 4-bit codes (element ``2i`` in the low
  nibble of byte ``i``, ``2i + 1`` in the high one), then ``elements / block`` float16 scales
  (little-endian). Value = (code - 8) * scale, computed in float32.
* ``raw``: ``bytes`` bytes copied as they are (biases, layer norms, the position embedding and
  any non-float constant).

The 4-bit tensors are the float matrices that feed a ``MatMul`` (directly or through a
``Transpose``, which takes in the tied token embedding) and whose rows are whole blocks, that
is, the same weights the ``q4`` variant quantizes; blocks run along each row. Quantization is
symmetric: the element of largest magnitude in a block maps to code 0 (value -8 * scale). A
block whose largest weight is under about 5e-4 gets a subnormal float16 scale, whose rounding
adds up to 2.4e-7 to each of its values' error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper

from .layout import GRAPH_FILE, INDEX_FILE, PACKED_PREFIX, PIECE_BYTES, SMALL_TENSOR_BYTES, external_locations, tensor_bytes

FORMAT = "tx-compact-1"
BLOCK_SIZE = 32
Q4_ENCODING = "q4"  # a chunk of 4-bit codes in blocks of BLOCK_SIZE, then their float16 scales
TARGET_BYTES = 256_000_000  # expanded files the browser builds; a tensor never spans two
ALIGN = 16


def packed_name(index: int) -> str:
    """File name of packed piece ``index``: ``packed.{index}``."""
    return f"{PACKED_PREFIX}{index}"


def target_name(index: int) -> str:
    """File name of expanded target ``index`` (what the graph's external data refers to)."""
    return f"{GRAPH_FILE}.data.{index}"


# ---------------------------------------------------------------- 4-bit blocks


def quantize_blocks(values: np.ndarray, block: int = BLOCK_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric 4-bit codes for float32 ``values`` in blocks of ``block``.

    Args:
        values: 1-D float32, length a multiple of ``block`` (and of 2).

    Returns:
        ``(packed, scales)``: ``len(values) / 2`` bytes of codes, low nibble first, and one
        float16 scale per block.
    """
    blocks = values.astype(np.float32).reshape(-1, block)  # (nb, block)
    rows = np.arange(len(blocks))
    extreme = blocks[rows, np.abs(blocks).argmax(axis=1)]  # signed value of largest magnitude
    scales = (extreme / np.float32(-8)).astype(np.float16)  # extreme -> code 0 (value -8)
    if not np.all(np.isfinite(scales)):
        raise ValueError("a weight is too large for a float16 block scale")
    wide = scales.astype(np.float32)[:, None]
    safe = np.where(wide == 0, np.float32(1), wide)
    codes = np.clip(np.rint(blocks / safe), -8, 7).astype(np.int8) + 8  # (nb, block) in 0..15
    codes = np.where(wide == 0, 8, codes).astype(np.uint8).reshape(-1)
    packed = codes[0::2] | (codes[1::2] << 4)
    return packed.astype(np.uint8), scales


def dequantize_blocks(packed: np.ndarray, scales: np.ndarray, block: int = BLOCK_SIZE) -> np.ndarray:
    """Float32 values of ``quantize_blocks``' output: (code - 8) * scale."""
    codes = np.empty(len(packed) * 2, np.float32)
    codes[0::2] = packed & 0x0F
    codes[1::2] = packed >> 4
    values = (codes - np.float32(8)).reshape(-1, block) * scales.astype(np.float32)[:, None]
    return values.reshape(-1)


# ---------------------------------------------------------------- writing


def quantized_names(proto: onnx.ModelProto, block: int = BLOCK_SIZE) -> set[str]:
    """Float matrices read by a MatMul, directly or through a Transpose, with rows of whole blocks."""
    initializers = {t.name: t for t in proto.graph.initializer}
    producer = {out: node for node in proto.graph.node for out in node.output}
    names = set()
    for node in proto.graph.node:
        if node.op_type != "MatMul":
            continue
        weight = node.input[1]
        if weight not in initializers and weight in producer and producer[weight].op_type == "Transpose":
            weight = producer[weight].input[0]
        tensor = initializers.get(weight)
        if tensor is not None and tensor.data_type == onnx.TensorProto.FLOAT and len(tensor.dims) == 2 and tensor.dims[1] % block == 0:
            names.add(weight)
    return names


class TargetLayout:
    """Expanded files being laid out: each tensor at a 16-byte aligned offset of one target, a new
    target when the next tensor would take the current one past ``limit`` bytes."""

    def __init__(self, limit: int):
        self.limit = limit
        self.sizes: list[int] = []

    def place(self, size: int) -> tuple[int, int]:
        """Room for ``size`` bytes: (target index, offset)."""
        last = self.sizes[-1] if self.sizes else None
        if last is None or last and last + (-last % ALIGN) + size > self.limit:
            self.sizes.append(0)
        offset = self.sizes[-1] + (-self.sizes[-1] % ALIGN)
        self.sizes[-1] = offset + size
        return len(self.sizes) - 1, offset


def externalize(tensor: onnx.TensorProto, target: int, offset: int, length: int) -> None:
    """Points an initializer at ``length`` bytes of target file ``target`` and drops its data."""
    external_data_helper.set_external_data(tensor, location=target_name(target), offset=offset, length=length)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        tensor.ClearField(field)


@dataclass
class _Pieces:
    """Packed pieces being written, at most ``limit`` bytes each."""

    directory: Path
    limit: int

    def __post_init__(self):
        self.files: list[Path] = []
        self.handle = None
        self.size = 0

    def add(self, data: bytes) -> tuple[int, int]:
        """Appends ``data`` (in a new piece when it does not fit); returns (piece, start)."""
        if self.handle is None or self.size + len(data) > self.limit:
            self.close()
            self.files.append(self.directory / packed_name(len(self.files)))
            self.handle, self.size = open(self.files[-1], "wb"), 0
        start = self.size
        self.handle.write(data)
        self.size += len(data)
        return len(self.files) - 1, start

    def close(self):
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _chunks(array: np.ndarray, quantized: bool, limit: int, block: int):
    """(element start, element count) runs of ``array`` whose packed form fits in ``limit`` bytes."""
    count = array.size
    if quantized:
        per_block = block // 2 + 2  # codes + one float16 scale
        step = max(1, limit // per_block) * block
    else:
        step = max(1, limit // array.itemsize)
    for start in range(0, count, step):
        yield start, min(step, count - start)


def write_compact(
    reference: onnx.ModelProto,
    directory: str | Path,
    piece_bytes: int = PIECE_BYTES,
    block: int = BLOCK_SIZE,
    target_bytes: int = TARGET_BYTES,
) -> list[Path]:
    """Writes a ``q4x`` directory from the fp32 graph.

    Args:
        reference: The fp32 graph with its weights loaded (not modified).
        directory: Created; earlier ``model.onnx*``, ``packed.*`` and the index are removed.
        piece_bytes: Largest packed piece.
        block: Elements per 4-bit block.
        target_bytes: Largest expanded target (a larger tensor gets a target of its own).

    Returns:
        The written files: graph, index, then the packed pieces in order.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in [*directory.glob(f"{GRAPH_FILE}*"), *directory.glob(f"{PACKED_PREFIX}*"), directory / INDEX_FILE]:
        old.unlink(missing_ok=True)
    proto = onnx.ModelProto()
    proto.CopyFrom(reference)
    four_bit = quantized_names(proto, block)
    targets = TargetLayout(target_bytes)
    chunks: list[dict] = []
    pieces = _Pieces(directory, piece_bytes)
    try:
        for tensor in proto.graph.initializer:
            size = tensor_bytes(tensor)
            if size < SMALL_TENSOR_BYTES:
                continue
            target, offset = targets.place(size)
            array = numpy_helper.to_array(tensor).reshape(-1)
            quantized = tensor.name in four_bit
            for start, count in _chunks(array, quantized, piece_bytes, block):
                part = array[start : start + count]
                chunk = {"tensor": tensor.name, "target": target, "offset": offset + start * array.itemsize}
                if quantized:
                    packed, scales = quantize_blocks(part, block)
                    data = packed.tobytes() + scales.astype("<f2").tobytes()
                    chunk |= {"encoding": Q4_ENCODING, "elements": int(count)}
                else:
                    data = part.astype(part.dtype.newbyteorder("<")).tobytes()
                    chunk |= {"encoding": "raw"}
                piece, source = pieces.add(data)
                chunks.append(chunk | {"piece": piece, "start": source, "bytes": len(data)})
            externalize(tensor, target, offset, size)
    finally:
        pieces.close()
    graph_path = directory / GRAPH_FILE
    onnx.save(proto, str(graph_path))
    index = {
        "format": FORMAT,
        "block": block,
        "pieces": [p.name for p in pieces.files],
        "targets": [{"name": target_name(i), "bytes": n} for i, n in enumerate(targets.sizes)],
        "chunks": chunks,
    }
    index_path = directory / INDEX_FILE
    index_path.write_text(json.dumps(index, separators=(",", ":")) + "\n", encoding="utf-8")
    return [graph_path, index_path, *pieces.files]


# ---------------------------------------------------------------- reading


def read_index(directory: str | Path, formats: tuple[str, ...] = (FORMAT,)) -> dict:
    """The ``expand.json`` of a compact directory, if its format is one of ``formats``."""
    index = json.loads((Path(directory) / INDEX_FILE).read_text(encoding="utf-8"))
    if index.get("format") not in formats:
        raise ValueError(f"{directory}/{INDEX_FILE}: format {index.get('format')!r}, expected {' or '.join(formats)}")
    return index


def index_problems(directory: str | Path, piece_bytes: int = PIECE_BYTES) -> list[str]:
    """Breaks of a q4x index's contract: chunks outside their piece or target, overlapping chunks,
    pieces over ``piece_bytes``, or a graph that refers to other files than the targets
    (``expand.index_problems`` takes any compact variant)."""
    directory = Path(directory)
    index = read_index(directory)
    block = index["block"]
    problems = []
    sizes = [(directory / name).stat().st_size for name in index["pieces"]]
    problems += [f"{name}: {n} bytes > {piece_bytes}" for name, n in zip(index["pieces"], sizes) if n > piece_bytes]
    written = [[] for _ in index["targets"]]
    for chunk in index["chunks"]:
        where = f"{chunk['tensor']} at {chunk['offset']}"
        if chunk["start"] + chunk["bytes"] > sizes[chunk["piece"]]:
            problems.append(f"{where}: beyond the end of {index['pieces'][chunk['piece']]}")
        length = chunk["elements"] * 4 if chunk["encoding"] == Q4_ENCODING else chunk["bytes"]
        if chunk["encoding"] == Q4_ENCODING and chunk["bytes"] != chunk["elements"] // 2 + chunk["elements"] // block * 2:
            problems.append(f"{where}: {chunk['bytes']} packed bytes for {chunk['elements']} elements")
        if chunk["offset"] + length > index["targets"][chunk["target"]]["bytes"]:
            problems.append(f"{where}: beyond the end of {index['targets'][chunk['target']]['name']}")
        written[chunk["target"]].append((chunk["offset"], chunk["offset"] + length))
    for target, spans in zip(index["targets"], written):
        spans.sort()
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            problems.append(f"{target['name']}: chunks overlap")
    return problems + location_problems(directory, index)


def location_problems(directory: Path, index: dict) -> list[str]:
    """The graph must refer to exactly the targets the index builds."""
    locations = external_locations(directory / GRAPH_FILE)
    names = {t["name"] for t in index["targets"]}
    return [] if locations == names else [f"graph refers to {sorted(locations)}, the index builds {sorted(names)}"]


def expand_targets(directory: str | Path) -> dict[str, bytes]:
    """Builds every target file's bytes from a q4x variant's packed pieces, as the browser does
    (``expand.expand_targets`` takes any compact variant)."""
    directory = Path(directory)
    index = read_index(directory)
    block = index["block"]
    pieces = [np.fromfile(directory / name, np.uint8) for name in index["pieces"]]
    targets = {t["name"]: np.zeros(t["bytes"], np.uint8) for t in index["targets"]}
    for chunk in index["chunks"]:
        source = pieces[chunk["piece"]][chunk["start"] : chunk["start"] + chunk["bytes"]]
        if chunk["encoding"] == Q4_ENCODING:
            n = chunk["elements"]
            scales = source[n // 2 :].view("<f2")
            data = dequantize_blocks(source[: n // 2], scales, block).astype("<f4").view(np.uint8)
        elif chunk["encoding"] == "raw":
            data = source
        else:
            raise ValueError(f"unknown chunk encoding {chunk['encoding']!r}")
        out = targets[index["targets"][chunk["target"]]["name"]]
        out[chunk["offset"] : chunk["offset"] + len(data)] = data
    return {name: array.tobytes() for name, array in targets.items()}
