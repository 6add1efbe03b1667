"""The tables of "The Transformer, in the order it runs": where each weight is, and parity logits.

The ``tables`` stage writes, into the build directory next to ``manifest.json`` (and so into
``site/models/<name>/`` when the site copies the model):

* ``tables/index.json``: ``weights``, where the figures find each weight they recompute with:
  the name of its tensor in the ``WEIGHTS_VARIANT`` variant's ``expand.json`` (see
  ``weight_layout``), so the browser reads the very packed files the model downloaded, from
  Cache Storage, and expands only the tensors a figure shows; and ``parity``, the entries
  below (or why they are missing), each with its bytes and sha256;
* ``tables/parity/*.f32``: the logits of a fixed prompt from PyTorch (``gpt2.GPT2`` holding
  the fp32 graph's own weights) and from onnxruntime on the fp32 graph and on each variant.

The weights are found by following the graph (the embedding ``Gather`` nodes, then the
``LayerNormalization`` and ``MatMul`` + ``Add`` nodes in order), not by their names: the
exporter renames and shares initializers.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from .compact import Q4_ENCODING, dequantize_blocks, read_index
from .gpt2 import GPT2, GPT2Config
from .layout import TABLES_INDEX, parity_name
from .package import CONFIG_KEYS
from .runtime import OrtGPT2, TorchGPT2, prompt_outputs
from .variants import PACKED

TABLES_FORMAT = 2
WEIGHTS_VARIANT = PACKED  # the figures read their weights from this variant's packed files
LINEARS = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")  # a block's linear layers, in graph order
BLOCK_ROLES = (
    "ln_1.weight",
    "ln_1.bias",
    "attn.c_attn.weight",
    "attn.c_attn.bias",
    "attn.c_proj.weight",
    "attn.c_proj.bias",
    "ln_2.weight",
    "ln_2.bias",
    "mlp.c_fc.weight",
    "mlp.c_fc.bias",
    "mlp.c_proj.weight",
    "mlp.c_proj.bias",
)  # a block's weights, by their GPT2 state-dict names
PARITY_TEXT = " Data visualization empowers users to"
PARITY_IDS = [6060, 32704, 795, 30132, 2985, 284]  # GPT-2's tokens of PARITY_TEXT (seed 002's example)


# ---------------------------------------------------------------- weights


def _constants(graph: onnx.GraphProto) -> dict:
    """Initializers and ``Constant`` node outputs of a graph, by name (TensorProtos)."""
    tensors = {i.name: i for i in graph.initializer}
    for node in graph.node:  # small constants may live in Constant nodes
        if node.op_type == "Constant" and node.output[0] not in tensors:
            for attr in node.attribute:
                if attr.name == "value":
                    tensors[node.output[0]] = attr.t
    return tensors


def weight_names(graph: onnx.GraphProto, n_layer: int) -> dict[str, str]:
    """Follows the graph to GPT-2's weights (see the module docstring).

    Args:
        graph: The graph; external data need not be loaded.
        n_layer: Number of blocks.

    Returns:
        Role -> name of the tensor holding it. Roles are ``gpt2.GPT2`` state-dict names:
        ``wte`` (V, C), ``wpe`` (n_positions, C), ``blocks.{i}.ln_1.weight`` ...,
        ``blocks.{i}.attn.c_attn.weight`` ..., ``ln_f.weight``, ``ln_f.bias``. A linear layer's
        weight is the tensor its ``MatMul`` reads, so it is (in, out), the transpose of
        ``nn.Linear``'s.

    Raises:
        ValueError: If the graph does not have the expected structure.
    """
    tensors = _constants(graph)
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    names = {}
    for node in graph.node:
        if node.op_type == "Gather" and node.input[0] in tensors:
            if node.input[1] == "input_ids":
                names["wte"] = node.input[0]
            elif node.input[1] == "position_ids":
                names["wpe"] = node.input[0]
    if "wte" not in names or "wpe" not in names:
        raise ValueError("no embedding Gather on input_ids/position_ids")
    vocab = tensors[names["wte"]].dims[0]
    norms = [(n.input[1], n.input[2]) for n in graph.node if n.op_type == "LayerNormalization" and n.input[1] in tensors and n.input[2] in tensors]
    linears = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in tensors:
            continue
        dims = list(tensors[node.input[1]].dims)  # (in, out)
        if len(dims) != 2 or dims[1] == vocab:
            continue  # the output projection (tied to wte)
        bias = None
        for user in consumers.get(node.output[0], []):
            if user.op_type == "Add":
                other = [x for x in user.input if x != node.output[0]]
                if other and other[0] in tensors:
                    bias = other[0]
        if bias is None:
            raise ValueError(f"MatMul {node.name} has no bias Add")
        linears.append((node.input[1], bias))
    if len(norms) != 2 * n_layer + 1 or len(linears) != 4 * n_layer:
        raise ValueError(f"found {len(norms)} LayerNorms and {len(linears)} linear layers, expected {2 * n_layer + 1} and {4 * n_layer}")
    for i in range(n_layer):
        for k, ln in enumerate(("ln_1", "ln_2")):
            names[f"blocks.{i}.{ln}.weight"], names[f"blocks.{i}.{ln}.bias"] = norms[2 * i + k]
        for k, linear in enumerate(LINEARS):
            names[f"blocks.{i}.{linear}.weight"], names[f"blocks.{i}.{linear}.bias"] = linears[4 * i + k]
    names["ln_f.weight"], names["ln_f.bias"] = norms[-1]
    return names


@dataclass
class Weights:
    """GPT-2's weights as read from a graph, in ``nn.Linear`` orientation (out, in).

    Attributes:
        wte: (V, C) token embedding (tied with the output projection).
        wpe: (n_positions, C) position embedding.
        blocks: per block, a dict with ``ln_1.weight``, ``ln_1.bias``, ``attn.c_attn.weight``
            (3C, C), ``attn.c_attn.bias``, ``attn.c_proj.weight`` (C, C), ``attn.c_proj.bias``,
            ``ln_2.weight``, ``ln_2.bias``, ``mlp.c_fc.weight`` (4C, C), ``mlp.c_fc.bias``,
            ``mlp.c_proj.weight`` (C, 4C), ``mlp.c_proj.bias``.
        ln_f: ``weight`` and ``bias`` of the final LayerNorm.
    """

    wte: np.ndarray
    wpe: np.ndarray
    blocks: list[dict]
    ln_f: dict

    def state_dict(self) -> dict[str, np.ndarray]:
        """The weights under ``gpt2.GPT2``'s state-dict names (``lm_head`` tied to ``wte``)."""
        state = {"wte.weight": self.wte, "wpe.weight": self.wpe, "ln_f.weight": self.ln_f["weight"], "ln_f.bias": self.ln_f["bias"], "lm_head.weight": self.wte}
        for i, block in enumerate(self.blocks):
            state |= {f"blocks.{i}.{name}": value for name, value in block.items()}
        return state


def read_weights(graph_path: Path, n_layer: int) -> Weights:
    """GPT-2's weights from a graph file (its external data read too), found by ``weight_names``.

    Raises:
        ValueError: If the graph does not have the expected structure.
    """
    graph = onnx.load(str(graph_path)).graph
    try:
        names = weight_names(graph, n_layer)
    except ValueError as err:
        raise ValueError(f"{graph_path}: {err}") from err
    tensors = _constants(graph)
    array = lambda role: numpy_helper.to_array(tensors[names[role]]).astype(np.float32)  # noqa: E731
    blocks = []
    for i in range(n_layer):
        block = {}
        for role in BLOCK_ROLES:
            value = array(f"blocks.{i}.{role}")
            block[role] = value.T.copy() if value.ndim == 2 else value  # (out, in)
        blocks.append(block)
    return Weights(array("wte"), array("wpe"), blocks, {"weight": array("ln_f.weight"), "bias": array("ln_f.bias")})


def weight_layout(variant_graph: Path, n_layer: int) -> dict:
    """Where the pipeline figures find each weight in the files of the ``WEIGHTS_VARIANT`` variant.

    Args:
        variant_graph: That variant's graph file (beside its ``expand.json``); need not exist.
        n_layer: Number of blocks.

    Returns:
        ``{"variant": name, "tensors": {role: {"name", "shape"}}}`` (roles and shapes as in
        ``weight_names``): ``name`` is the tensor's name in the variant's ``expand.json``; a
        tensor too small to have chunks there (it stayed inside the graph) carries its float32
        ``values`` instead. Or ``{"variant": None, "missing": reason}`` when the model has no
        such variant.

    Raises:
        ValueError: If the graph does not have the expected structure.
    """
    if not variant_graph.is_file():
        return {"variant": None, "missing": f"the model was exported without its {WEIGHTS_VARIANT} variant, whose files the figures read their weights from"}
    graph = onnx.load(str(variant_graph), load_external_data=False).graph
    try:
        names = weight_names(graph, n_layer)
    except ValueError as err:
        raise ValueError(f"{variant_graph}: {err}") from err
    chunked = {c["tensor"] for c in read_index(variant_graph.parent)["chunks"]}
    tensors = _constants(graph)
    layout = {}
    for role, name in names.items():
        entry = {"name": name, "shape": [int(d) for d in tensors[name].dims]}
        if name not in chunked:
            entry["values"] = numpy_helper.to_array(tensors[name]).astype(np.float32).reshape(-1).tolist()
        layout[role] = entry
    return {"variant": WEIGHTS_VARIANT, "tensors": layout}


def layout_tensor(variant_dir: Path, entry: dict) -> np.ndarray:
    """A tensor of ``weight_layout`` as the browser expands it (float32, in the layout's shape).

    Args:
        variant_dir: The directory of the variant's ``expand.json`` and packed files.
        entry: ``weight_layout(...)["tensors"][role]``.
    """
    if "values" in entry:
        return np.asarray(entry["values"], np.float32).reshape(entry["shape"])
    index = read_index(variant_dir)
    parts = []
    for chunk in sorted((c for c in index["chunks"] if c["tensor"] == entry["name"]), key=lambda c: c["offset"]):
        with open(variant_dir / index["pieces"][chunk["piece"]], "rb") as f:
            f.seek(chunk["start"])
            data = np.frombuffer(f.read(chunk["bytes"]), np.uint8)
        if chunk["encoding"] == Q4_ENCODING:
            n = chunk["elements"]
            parts.append(dequantize_blocks(data[: n // 2], data[n // 2 :].view("<f2"), index["block"]))
        else:
            parts.append(data.view("<f4"))
    return np.concatenate(parts).astype(np.float32).reshape(entry["shape"])


# ---------------------------------------------------------------- parity


def torch_logits(weights: Weights, config: GPT2Config, ids: list[int]) -> np.ndarray:
    """Next-token logits (V,) float32 of ``ids`` from ``gpt2.GPT2`` holding ``weights``."""
    import torch

    model = GPT2(config)
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in weights.state_dict().items()}
    model.load_state_dict(state, strict=True)
    return prompt_outputs(TorchGPT2(model), ids)["logits"][0, -1].astype(np.float32)


def ort_logits(graph: Path, config: GPT2Config, ids: list[int]) -> np.ndarray:
    """Next-token logits (V,) float32 of ``ids`` from onnxruntime on ``graph``."""
    return prompt_outputs(OrtGPT2(graph, config), ids)["logits"][0, -1].astype(np.float32)


def parity_logits(reference: Path, variants: dict[str, Path], config: GPT2Config) -> dict[str, np.ndarray | str]:
    """Logits of ``PARITY_IDS`` from PyTorch and onnxruntime (fp32 graph and every variant).

    Args:
        reference: The fp32 graph.
        variants: Variant name -> a graph onnxruntime can open for it (a compact variant's
            expanded graph), in manifest order.
        config: The model's configuration.

    Returns:
        Source (``torch``, ``ort-fp32``, ``ort-<variant>``) -> float32 logits (V,), or, for a
        variant CPU onnxruntime cannot run, ``ort-<variant>-error`` -> the error's first words.
    """
    weights = read_weights(reference, config.n_layer)
    out = {"torch": torch_logits(weights, config, PARITY_IDS), "ort-fp32": ort_logits(reference, config, PARITY_IDS)}
    for name, graph in variants.items():
        if Path(graph).resolve() == Path(reference).resolve():
            continue
        try:
            out[f"ort-{name}"] = ort_logits(graph, config, PARITY_IDS)
        except Exception as err:  # noqa: BLE001  a variant CPU onnxruntime cannot run is left out
            out[f"ort-{name}-error"] = str(err)[:200]
    return out


def write_tables(out: Path, reference: Path, weights_graph: Path, variants: dict[str, Path], config: dict, name: str) -> list[Path]:
    """Writes the pipeline index and parity logits of one model into ``out`` (emptied first).

    Args:
        out: The tables directory (``<build>/tables``).
        reference: The fp32 graph, whose weights PyTorch runs with.
        weights_graph: The ``WEIGHTS_VARIANT`` variant's graph file (may be missing).
        variants: Variant name -> a graph onnxruntime can open for it, in manifest order.
        config: ``GPT2Config.to_dict()``.
        name: The model's name.

    Returns:
        The written files, the index first.

    Raises:
        ValueError: If a graph does not have the structure ``weight_names`` follows.
    """
    cfg = GPT2Config(**config)
    layout = weight_layout(weights_graph, cfg.n_layer)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    parity = {"text": PARITY_TEXT, "ids": PARITY_IDS, "logits": [], "missing": None}
    files = []
    if len(PARITY_IDS) > cfg.n_positions:
        parity["missing"] = "context too short"
    else:
        for source, values in parity_logits(reference, variants, cfg).items():
            if isinstance(values, str):
                parity["logits"].append({"source": source.removesuffix("-error"), "error": values})
                continue
            data = np.ascontiguousarray(values, dtype="<f4").tobytes()
            path = out / parity_name(source)
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
            files.append(path)
            parity["logits"].append({"source": source, "path": parity_name(source), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    index = {
        "format": TABLES_FORMAT,
        "model": name,
        "config": {key: config[key] for key in CONFIG_KEYS},
        "source": reference.name,
        "weights": layout,
        "parity": parity,
    }
    (out / TABLES_INDEX).write_text(json.dumps(index, indent=1), encoding="utf-8")
    return [out / TABLES_INDEX, *files]


def table_files(out: Path) -> list[Path]:
    """The files ``write_tables`` wrote into ``out``, the index first; none when it has not run."""
    index_path = out / TABLES_INDEX
    if not index_path.is_file():
        return []
    index = json.loads(index_path.read_text(encoding="utf-8"))
    return [index_path, *(out / e["path"] for e in index["parity"]["logits"] if "path" in e)]
