"""MkDocs hook for "The Transformer, in the order it runs" (``docs/pipeline/``).

* ``on_page_markdown``: a marker

      <!-- code: model_export/gpt2.py CausalSelfAttention.forward -->
      <!-- code: model_export/gpt2.py GPT2.forward from "tok_emb =" to "x = tok_emb + pos_emb" -->

  becomes a fenced Python block holding those lines of the source file, its line numbers
  in the title: the whole function or class (found with ``ast``), or the lines from the first one
  containing the ``from`` text to the first one after it containing the ``to`` text. A marker
  whose function or text is not in the file stops the build, so a page never shows code that
  is not there.
* ``on_post_build`` (after ``hooks.py`` has copied the model): writes into
  ``site/models/<name>/tables/``

  - ``index.json``: ``weights``, where the figures find each weight they recompute with: the
    name of its tensor in the ``q4x`` variant's ``expand.json`` (see ``weight_layout``), so
    the browser reads the very packed files the model downloaded, from Cache Storage, and
    expands only the tensors a figure shows; and ``parity``, the entries below (or why they
    are missing), each with its bytes and sha256;
  - ``parity/*.f32``: the logits of a fixed prompt from PyTorch (``model_export.gpt2.GPT2``
    holding the fp32 graph's own weights) and from onnxruntime in Python on the fp32 graph and
    on each shipped variant, when torch and onnxruntime can be imported.

The weights are found by following the graph (the embedding ``Gather`` nodes, then the
``LayerNormalization`` and ``MatMul`` + ``Add`` nodes in order), not by their names: the
exporter renames and shares initializers.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from model_export.layout import BUILD_DIR, MANIFEST, REFERENCE, expanded_name
from sitebuild.paths import MODELS, ROOT

TABLES_DIR = "tables"
TABLES_FORMAT = 2
WEIGHTS_VARIANT = "q4x"  # the figures read their weights from this variant's packed files
LINEARS = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")  # a block's linear layers, in graph order
BLOCK_ROLES = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
               "mlp.c_proj.weight", "mlp.c_proj.bias")  # a block's weights, by their GPT2 state-dict names
PARITY_TEXT = " Data visualization empowers users to"
PARITY_IDS = [6060, 32704, 795, 30132, 2985, 284]  # GPT-2's tokens of PARITY_TEXT (seed 002's example)
MARKER = re.compile(r'<!--\s*code:\s*(?P<path>\S+)\s+(?P<name>[\w.]+)(?:\s+from\s+"(?P<start>[^"]+)"\s+to\s+"(?P<end>[^"]+)")?\s*-->')


# ---------------------------------------------------------------- code snippets


@dataclass
class Snippet:
    """Lines of a source file.

    Attributes:
        path: The file, relative to the repository root.
        name: The qualified name of the function or class they come from.
        first: Number of the first line (1-based).
        last: Number of the last line (inclusive).
        text: The lines themselves, joined with newlines, without a final newline.
    """

    path: str
    name: str
    first: int
    last: int
    text: str


def _find_definition(tree: ast.AST, qualname: str):
    node = tree
    for part in qualname.split("."):
        found = None
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child.name == part:
                found = child
                break
        if found is None:
            return None
        node = found
    return node


def extract_snippet(path: str, qualname: str, start: str | None = None, end: str | None = None,
                    root: Path = ROOT) -> Snippet:
    """Finds the lines of a function or class, or a stretch inside it.

    Args:
        path: Source file relative to ``root``.
        qualname: ``Class.method``, ``Class`` or ``function``.
        start: When given (with ``end``), the snippet begins at the first line of the definition
            containing this text ...
        end: ... and ends at the first line from there containing this text.
        root: Repository root.

    Returns:
        The snippet, decorators included for a whole definition.

    Raises:
        ValueError: If the file, the definition or one of the texts is not found.
    """
    file = root / path
    if not file.is_file():
        raise ValueError(f"code marker: {path} does not exist")
    source = file.read_text(encoding="utf-8")
    lines = source.splitlines()
    node = _find_definition(ast.parse(source), qualname)
    if node is None:
        raise ValueError(f"code marker: {path} has no definition {qualname}")
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    last = node.end_lineno
    if (start is None) != (end is None):
        raise ValueError("code marker: give both `from` and `to`, or neither")
    if start is not None:
        begin = next((n for n in range(first, last + 1) if start in lines[n - 1]), None)
        if begin is None:
            raise ValueError(f"code marker: no line of {qualname} in {path} contains {start!r}")
        stop = next((n for n in range(begin, last + 1) if end in lines[n - 1]), None)
        if stop is None:
            raise ValueError(f"code marker: no line of {qualname} in {path} after line {begin} contains {end!r}")
        first, last = begin, stop
    text = "\n".join(lines[first - 1:last])
    return Snippet(path, qualname, first, last, _dedent(text))


def _dedent(text: str) -> str:
    rows = text.split("\n")
    indents = [len(r) - len(r.lstrip(" ")) for r in rows if r.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(r[cut:] for r in rows)


def render_snippet(snippet: Snippet) -> str:
    """The snippet as a fenced Python block titled with its file, definition and line numbers.

    (The line numbers go in the title rather than a number column: Material's number column
    is too faint for the contrast the site's accessibility test requires.)
    """
    lines = f"line {snippet.first}" if snippet.first == snippet.last else f"lines {snippet.first}–{snippet.last}"
    title = f"{snippet.path} · {snippet.name} · {lines}"
    return f'```python title="{title}"\n{snippet.text}\n```'


def expand_code_markers(markdown: str, root: Path = ROOT) -> str:
    """Replaces every code marker in ``markdown`` by its fenced snippet.

    Raises:
        ValueError: If a marker names something that is not in the source.
    """

    def replace(match: re.Match) -> str:
        snippet = extract_snippet(match["path"], match["name"], match["start"], match["end"], root)
        return render_snippet(snippet)

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Expand the code markers of a page."""
    if "<!-- code:" not in markdown:
        return markdown
    try:
        return expand_code_markers(markdown)
    except ValueError as err:
        raise PluginError(f"{page.file.src_path}: {err}") from err


# ---------------------------------------------------------------- weights


def reference_graph(model_dir: Path) -> Path | None:
    """The served model's fp32 graph: the build's reference, else an fp32 variant's graph."""
    reference = model_dir / BUILD_DIR / REFERENCE
    if reference.is_file():
        return reference
    manifest_path = model_dir / MANIFEST
    if not manifest_path.is_file():
        return None
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for variant in manifest.get("variants", []):
        if variant.get("dtype") == "float32":
            graphs = [f for f in variant["files"] if f.get("role", "graph") == "graph"]
            if graphs and (model_dir / graphs[0]["path"]).is_file():
                return model_dir / graphs[0]["path"]
    return None


def _constants(graph) -> dict:
    """Initializers and ``Constant`` node outputs of a graph, by name (TensorProtos)."""
    tensors = {i.name: i for i in graph.initializer}
    for node in graph.node:  # small constants may live in Constant nodes
        if node.op_type == "Constant" and node.output[0] not in tensors:
            for attr in node.attribute:
                if attr.name == "value":
                    tensors[node.output[0]] = attr.t
    return tensors


def weight_names(graph, n_layer: int) -> dict[str, str]:
    """Follows the graph to GPT-2's weights (see the module docstring).

    Args:
        graph: An ``onnx.GraphProto``; external data need not be loaded.
        n_layer: Number of blocks.

    Returns:
        Role -> name of the tensor holding it. Roles are ``model_export.gpt2`` state-dict
        names: ``wte`` (V, C), ``wpe`` (n_positions, C), ``blocks.{i}.ln_1.weight`` ...,
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
    norms = [(n.input[1], n.input[2]) for n in graph.node
             if n.op_type == "LayerNormalization" and n.input[1] in tensors and n.input[2] in tensors]
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
        raise ValueError(f"found {len(norms)} LayerNorms and {len(linears)} linear layers, "
                         f"expected {2 * n_layer + 1} and {4 * n_layer}")
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


def read_weights(graph_path: Path, n_layer: int) -> Weights:
    """GPT-2's weights from a self-contained graph file, found by ``weight_names``.

    Raises:
        ValueError: If the graph does not have the expected structure.
    """
    import onnx
    from onnx import numpy_helper

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


def weight_layout(model_dir: Path, manifest: dict) -> dict:
    """Where the pipeline figures find each weight in the files of the ``WEIGHTS_VARIANT`` variant.

    Returns:
        ``{"variant": name, "tensors": {role: {"name", "shape"}}}`` (roles and shapes as in
        ``weight_names``): ``name`` is the tensor's name in the variant's ``expand.json``; a
        tensor too small to have chunks there (it stayed inside the graph) carries its float32
        ``values`` instead. Or ``{"variant": None, "missing": reason}`` when the model has no
        such variant.
    """
    import onnx
    from onnx import numpy_helper

    from model_export.compact import read_index

    variant = next((v for v in manifest.get("variants", []) if v["name"] == WEIGHTS_VARIANT), None)
    if variant is None:
        return {"variant": None, "missing": f"the model was exported without its {WEIGHTS_VARIANT} variant, "
                                             "whose files the figures read their weights from"}
    graph_file = next(f for f in variant["files"] if f.get("role", "graph") == "graph")
    graph = onnx.load(str(model_dir / graph_file["path"]), load_external_data=False).graph
    try:
        names = weight_names(graph, manifest["config"]["n_layer"])
    except ValueError as err:
        raise PluginError(f"{graph_file['path']}: {err}") from err
    chunked = {c["tensor"] for c in read_index((model_dir / graph_file["path"]).parent)["chunks"]}
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
    from model_export.compact import dequantize_blocks, read_index

    if "values" in entry:
        return np.asarray(entry["values"], np.float32).reshape(entry["shape"])
    index = read_index(variant_dir)
    parts = []
    for chunk in sorted((c for c in index["chunks"] if c["tensor"] == entry["name"]), key=lambda c: c["offset"]):
        with open(variant_dir / index["pieces"][chunk["piece"]], "rb") as f:
            f.seek(chunk["start"])
            data = np.frombuffer(f.read(chunk["bytes"]), np.uint8)
        if chunk["encoding"] == "q4":
            n = chunk["elements"]
            parts.append(dequantize_blocks(data[: n // 2], data[n // 2 :].view("<f2"), index["block"]))
        else:
            parts.append(data.view("<f4"))
    return np.concatenate(parts).astype(np.float32).reshape(entry["shape"])


# ---------------------------------------------------------------- parity


def _ort_logits(graph: Path, ids: list[int], config: dict) -> np.ndarray:
    from model_export.gpt2 import GPT2Config
    from model_export.runtime import OrtGPT2, prompt_outputs

    return prompt_outputs(OrtGPT2(graph, GPT2Config(**config)), ids)["logits"][0, -1].astype(np.float32)


def _torch_logits(weights: Weights, ids: list[int], config: dict) -> np.ndarray:
    import torch

    from model_export.gpt2 import GPT2, GPT2Config

    cfg = GPT2Config(**{k: config[k] for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")
                        if k in config})
    model = GPT2(cfg)
    state = {"wte.weight": weights.wte, "wpe.weight": weights.wpe, "ln_f.weight": weights.ln_f["weight"],
             "ln_f.bias": weights.ln_f["bias"], "lm_head.weight": weights.wte}
    for i, block in enumerate(weights.blocks):
        state |= {f"blocks.{i}.{name}": value for name, value in block.items()}
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}, strict=True)
    x = torch.tensor([ids])
    with torch.no_grad():
        logits = model(x, torch.ones_like(x), torch.arange(len(ids))[None])[0]
    return logits[0, -1].numpy().astype(np.float32)


def parity_logits(model_dir: Path, graph: Path, weights: Weights, config: dict) -> tuple[dict, str | None]:
    """Logits of ``PARITY_IDS`` from PyTorch and onnxruntime (fp32 graph and every variant).

    Returns:
        ``({source: float32 logits}, None)``, or ``({}, reason)`` when torch or onnxruntime is
        missing.
    """
    try:
        import onnxruntime  # noqa: F401
        import torch  # noqa: F401
    except ImportError as err:
        return {}, f"the site was built without {err.name}, so the build-time logits are missing"
    out = {"torch": _torch_logits(weights, PARITY_IDS, config), "ort-fp32": _ort_logits(graph, PARITY_IDS, config)}
    manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
    for variant in manifest.get("variants", []):
        graphs = [f for f in variant["files"] if f.get("role", "graph") == "graph"]
        path = model_dir / graphs[0]["path"]
        if path.resolve() == graph.resolve() or not path.is_file():
            continue
        try:
            from model_export.expand import onnx_graph  # q4x: the graph its pieces expand to

            path = onnx_graph(path.parent, model_dir / BUILD_DIR / expanded_name(variant["name"]))
            out[f"ort-{variant['name']}"] = _ort_logits(path, PARITY_IDS, config)
        except Exception as err:  # noqa: BLE001  a variant CPU onnxruntime cannot run is left out
            out[f"ort-{variant['name']}-error"] = str(err)[:200]
    return out, None


def write_tables(model_dir: Path, out: Path, with_parity: bool = True) -> dict:
    """Writes the pipeline index (and parity logits) of the model in ``model_dir`` into ``out``.

    Returns:
        The index (see the module docstring).

    Raises:
        PluginError: If the model has no fp32 graph or a graph cannot be read.
    """
    manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
    config = manifest["config"]
    graph = reference_graph(model_dir)
    if graph is None:
        raise PluginError(f"{model_dir} has neither {BUILD_DIR}/{REFERENCE} nor an fp32 variant")
    layout = weight_layout(model_dir, manifest)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    parity = {"text": PARITY_TEXT, "ids": PARITY_IDS, "logits": [], "missing": None}
    if with_parity and len(PARITY_IDS) > config["n_positions"]:
        parity["missing"] = "context too short"
    elif with_parity:
        try:
            weights = read_weights(graph, config["n_layer"])
        except ValueError as err:
            raise PluginError(str(err)) from err
        logits, parity["missing"] = parity_logits(model_dir, graph, weights, config)
        (out / "parity").mkdir()
        for source, values in logits.items():
            if isinstance(values, str):
                parity["logits"].append({"source": source.removesuffix("-error"), "error": values})
                continue
            data = np.ascontiguousarray(values, dtype="<f4").tobytes()
            path = f"parity/{source}.f32"
            (out / path).write_bytes(data)
            parity["logits"].append({"source": source, "path": path, "bytes": len(data),
                                     "sha256": hashlib.sha256(data).hexdigest()})
    else:
        parity["missing"] = "not computed for this build"
    index = {"format": TABLES_FORMAT, "model": manifest.get("name"), "config": config,
             "source": graph.name, "weights": layout, "parity": parity}
    (out / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return index


@event_priority(-50)  # after hooks.py has copied the model, before model_hook.py tidies it
def on_post_build(config) -> None:
    """Write the pipeline index and parity logits of the served model into the site."""
    name = config["extra"]["tx_model"]
    model_dir = MODELS / name
    if not (model_dir / MANIFEST).is_file():
        return  # hooks.py has already said how to build the model
    write_tables(model_dir, Path(config["site_dir"]) / "models" / name / TABLES_DIR)
