"""Names and size limits of the files a build directory holds: one owner for each.

``package`` lays variants out with them, ``compact`` and ``requant`` write compact variants,
``tables`` writes the pipeline figures' tables, ``pipeline`` keeps its private files under
:data:`BUILD_DIR`, and the site's hooks read the same names; none of them spells a file name or a limit of its own.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import numpy_helper

MANIFEST = "manifest.json"
GRAPH_FILE = "model.onnx"
INSPECT_FILE = "inspect.onnx"  # the variant's graph with probes (probes.py), same weights
INSPECT_REFERENCE = "reference-inspect.onnx"  # in BUILD_DIR: the fp32 reference with probes
INDEX_FILE = "expand.json"  # compact variants (see compact.py): how to build the data pieces
PACKED_PREFIX = "packed."

BUILD_DIR = ".build"  # the build's private files: never served
REFERENCE = "reference.onnx"  # in BUILD_DIR: the fp32 graph every comparison is made against
RECORD = "record.json"  # in BUILD_DIR: what each stage did
EXPANDED_SUFFIX = "-expanded.onnx"  # in BUILD_DIR: a compact variant expanded as the browser does

DRAFT_DIR = "draft"  # the draft model of speculative decoding: its variants' folders (pipeline.run_draft): served
DRAFT_BLOCKS = 2  # the draft is the model's first DRAFT_BLOCKS blocks, then its final norm and unembedding

TABLES_DIR = "tables"  # the pipeline figures' weight index and parity logits (tables.py): served
TABLES_INDEX = "index.json"  # in TABLES_DIR: where each weight is, and the parity entries
PARITY_DIR = "parity"  # in TABLES_DIR: one file of float32 logits per source

PAGES_FILE_LIMIT = 100_000_000  # GitHub Pages refuses files of this size and more
PIECE_BYTES = 40_000_000  # largest weight file: well under PAGES_FILE_LIMIT, and small files cache well
INLINE_BYTES = 5_000_000  # weights up to this stay inside the graph file
SMALL_TENSOR_BYTES = 1024  # shape constants and the like stay inside the graph
PROTOBUF_LIMIT = 2_000_000_000  # a single .onnx file (a protobuf message) cannot exceed 2 GB


def piece_name(index: int) -> str:
    """File name of external-data piece ``index``: ``model.onnx.data.{index}``."""
    return f"{GRAPH_FILE}.data.{index}"


def expanded_name(variant: str) -> str:
    """File name, inside :data:`BUILD_DIR`, of a compact variant's expanded graph."""
    return f"{variant}{EXPANDED_SUFFIX}"


def parity_name(source: str) -> str:
    """Path, relative to :data:`TABLES_DIR`, of one source's parity logits: ``parity/{source}.f32``."""
    return f"{PARITY_DIR}/{source}.f32"


def tensor_bytes(tensor: onnx.TensorProto) -> int:
    """Size of an initializer's data as stored (raw bytes)."""
    if tensor.HasField("raw_data"):
        return len(tensor.raw_data)
    return numpy_helper.to_array(tensor).nbytes


def external_locations(graph_path: str | Path) -> set[str]:
    """The external-data file names a graph refers to (without loading the weights)."""
    proto = onnx.load(str(graph_path), load_external_data=False)
    locations = set()
    for tensor in proto.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            locations.add(next(e.value for e in tensor.external_data if e.key == "location"))
    return locations
