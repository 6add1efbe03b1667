"""Any compact variant, read as onnxruntime-Python needs it: ``q4x`` (compact.py, index format
``tx-compact-1``) and ``q8x`` (requant.py, ``tx-requant-1``) alike.

Validation, the reports, the site's parity figures, the benchmarks and the tests open compact
variants through this module: it checks an index's contract, builds the target files' bytes
as the browser does, and writes the equivalent self-contained graph. It picks the format's own
module by the index's ``format``; those modules know nothing of each other but what requant
borrows from compact.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx

from . import compact, requant
from .layout import GRAPH_FILE, INDEX_FILE, PIECE_BYTES, PROTOBUF_LIMIT, SMALL_TENSOR_BYTES

GRAPH_HEADROOM = 0.95  # inline weights up to this share of PROTOBUF_LIMIT: the rest is for the nodes


def _index(directory: Path) -> dict:
    """The variant's index, in either compact format."""
    return compact.read_index(directory, (compact.FORMAT, requant.FORMAT))


def index_problems(directory: str | Path, piece_bytes: int = PIECE_BYTES) -> list[str]:
    """Breaks of the index's contract: chunks outside their piece or target, overlapping chunks,
    pieces over ``piece_bytes``, or a graph that refers to other files than the targets."""
    directory = Path(directory)
    index = _index(directory)
    if index["format"] == requant.FORMAT:
        return requant.index_problems(directory, index, piece_bytes) + compact.location_problems(directory, index)
    return compact.index_problems(directory, piece_bytes)


def expand_targets(directory: str | Path) -> dict[str, bytes]:
    """Builds every target file's bytes from the variant's pieces, as the browser does."""
    directory = Path(directory)
    index = _index(directory)
    if index["format"] == requant.FORMAT:
        return requant.expand_targets(directory, index)
    return compact.expand_targets(directory)


def onnx_graph(directory: str | Path, cache: str | Path, graph: str = GRAPH_FILE) -> Path:
    """A graph file onnxruntime-Python can open for the variant in ``directory``: its own
    ``graph`` (``model.onnx``, or another graph on the same weights such as ``inspect.onnx``),
    or for a compact variant that graph with the weights its pieces expand to, written to
    ``cache`` (see ``expand_to_file``)."""
    directory = Path(directory)
    if not (directory / INDEX_FILE).is_file():
        return directory / graph
    return expand_to_file(directory, cache, graph)


def expand_to_file(directory: str | Path, out: str | Path, graph: str = GRAPH_FILE) -> Path:
    """Writes the expanded model as one self-contained ``.onnx`` file (the "equivalent graph"
    that validation and the browser tests run in onnxruntime-Python).

    The file is rewritten only when missing or older than the index or the graph.
    """
    directory, out = Path(directory), Path(out)
    newest = max((directory / INDEX_FILE).stat().st_mtime_ns, (directory / graph).stat().st_mtime_ns)
    if out.is_file() and out.stat().st_mtime_ns >= newest:
        return out
    proto = onnx.load(str(directory / graph), load_external_data=False)
    targets = expand_targets(directory)
    for tensor in proto.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        start, length = int(info.get("offset", 0)), int(info["length"])
        tensor.raw_data = targets[info["location"]][start : start + length]
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]
    out.parent.mkdir(parents=True, exist_ok=True)
    # A name of this process's own: two processes may expand the same graph at once (the browser
    # tests' PyTorch side and test_probes.py on the two pytest workers); with one shared name, one
    # renamed the other's half-written file into place.
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    if sum(len(t) for t in targets.values()) < GRAPH_HEADROOM * PROTOBUF_LIMIT:
        onnx.save(proto, str(tmp))
    else:  # a single .onnx file cannot exceed 2 GB: weights in one file beside it
        onnx.save(proto, str(tmp), save_as_external_data=True, all_tensors_to_one_file=True, location=out.name + ".data", size_threshold=SMALL_TENSOR_BYTES)
    tmp.replace(out)
    return out
