"""The inspect graph: a variant's own graph with probes added, for the "Looking inside" pages.

Each shipped variant's ``model.onnx`` is copied with a few nodes added, and saved next to it as
``inspect.onnx``. Its weights are the variant's: the initializers, and their external-data
references, are kept as they are (new nodes reuse them by name), so the browser builds the same
data files for either graph and onnxruntime holds one copy of the weights. The inputs it adds:

    head_scale    (B, L, nh, T)      multiplies each head's output z at each position,
    head_add      (B, L, nh, T, hd)  then is added to it:  z' = z * head_scale + head_add
    resid_scale   (B, L, T)          multiplies the residual stream entering block l,
    resid_add     (B, L, T, C)       then is added to it:  x' = x * resid_scale + resid_add
    lens_hidden   (B, N, C)          rows read like the last residual stream: ln_f, then the
                                     unembedding (the logit lens)
    unembed_rows  (B, M, C)          rows read through the unembedding without the final
                                     LayerNorm's centring and scaling: (r * ln_f.weight) @ wte.T
                                     (direct logit attribution)
    head_rows     (B, L, K, C)       rows of merged head outputs put through each layer's output
                                     projection c_proj, bias included (one head's share of it)

and the outputs it adds:

    head_outputs.{l}   (B, nh, T, hd)  each layer's z' (the heads' outputs before c_proj)
    attn_outputs.{l}   (B, T, C)       what attention adds to the residual stream at layer l
    mlp_outputs.{l}    (B, T, C)       what the MLP adds
    lens_logits        (B, N, V)       of lens_hidden
    unembed_logits     (B, M, V)       of unembed_rows
    head_writes.{l}    (B, K, C)       of head_rows[:, l]

With scales of 1 and adds of 0 the graph computes exactly what ``model.onnx`` computes, and its
``hidden_states.{l}`` are the streams before the patch. Zero-ablating head h of layer l is
``head_scale[:, l, h] = 0``; mean ablation adds the head's mean output; patching copies a clean
run's z or x into ``head_add`` / ``resid_add`` where the scale is 0. The lens, unembedding and
c_proj rows go through copies of the graph's own nodes (same weights, their own activation
quantization), so they never change the prompt's logits; pass one row of zeros when unused.

The probes are found by the tensors every variant names: ``attentions.{l}`` (the attention
probabilities, whose MatMul with the values gives z), ``hidden_states.{l}`` (the residual stream
between blocks), the final LayerNorm that reads ``hidden_states.{L}`` and ``logits``. A graph
without them (the fp16 variant is exported without a MatMul reading the probabilities) raises
:class:`ProbeError`, and that variant ships without an inspect graph.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from .layout import INSPECT_FILE

# Every probe input, the one owner of their contract: its shape after the batch axis, in the
# model's sizes (``SIZES``) and the prompt's length ("sequence"); a name ending in "_rows" is a
# free number of rows, none when the probe is left out; then the value that changes nothing.
# The manifest carries it (``probe_contract``, as ``probes``) to the browser, whose
# runtime/probe-feeds.js feeds the inspect graph from it.
PROBES = {
    "head_scale": (("layers", "heads", "sequence"), 1.0),
    "head_add": (("layers", "heads", "sequence", "head_dim"), 0.0),
    "resid_scale": (("layers", "sequence"), 1.0),
    "resid_add": (("layers", "sequence", "width"), 0.0),
    "lens_hidden": (("lens_rows", "width"), 0.0),
    "unembed_rows": (("unembed_rows", "width"), 0.0),
    "head_rows": (("layers", "head_rows", "width"), 0.0),
}
PROBE_INPUTS = tuple(PROBES)


def sizes(config: dict) -> dict[str, int]:
    """The model's sizes that probe shapes name (``config``: n_layer, n_head, n_embd)."""
    L, nh, C = config["n_layer"], config["n_head"], config["n_embd"]
    return {"layers": L, "heads": nh, "head_dim": C // nh, "width": C}


def probe_contract() -> dict:
    """``PROBES`` as the manifest carries it: name -> {shape, neutral}."""
    return {name: {"shape": list(shape), "neutral": neutral} for name, (shape, neutral) in PROBES.items()}


class ProbeError(ValueError):
    """The graph lacks a tensor the probes attach to."""


def probe_inputs(config: dict) -> list[onnx.ValueInfoProto]:
    """Graph inputs of the probes (``PROBES``), with the model's sizes (``config``: n_layer, n_head, n_embd)."""
    known = sizes(config)
    return [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", *(known.get(d, d) for d in shape)]) for name, (shape, _) in PROBES.items()]


def probe_outputs(config: dict) -> list[onnx.ValueInfoProto]:
    """Graph outputs of the probes."""
    L, nh, C, V = config["n_layer"], config["n_head"], config["n_embd"], config["vocab_size"]
    f32 = TensorProto.FLOAT
    out = []
    for layer in range(L):
        out += [
            helper.make_tensor_value_info(f"head_outputs.{layer}", f32, ["batch", nh, "sequence", C // nh]),
            helper.make_tensor_value_info(f"attn_outputs.{layer}", f32, ["batch", "sequence", C]),
            helper.make_tensor_value_info(f"mlp_outputs.{layer}", f32, ["batch", "sequence", C]),
            helper.make_tensor_value_info(f"head_writes.{layer}", f32, ["batch", "head_rows", C]),
        ]
    out += [
        helper.make_tensor_value_info("lens_logits", f32, ["batch", "lens_rows", V]),
        helper.make_tensor_value_info("unembed_logits", f32, ["batch", "unembed_rows", V]),
    ]
    return out


class _Graph:
    """Producers and consumers of a graph's tensors, and the nodes to add."""

    def __init__(self, graph: onnx.GraphProto):
        self.graph = graph
        self.added: list[onnx.NodeProto] = []
        self.constants: set[str] = set()
        self.producer: dict[str, onnx.NodeProto] = {name: node for node in graph.node for name in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)

    def consumer(self, tensor: str, op_type: str) -> onnx.NodeProto:
        found = [n for n in self.consumers.get(tensor, []) if n.op_type == op_type]
        if len(found) != 1:
            raise ProbeError(f"expected one {op_type} reading {tensor!r}, found {len(found)}")
        return found[0]

    def reroute(self, tensor: str, replacement: str) -> None:
        """Makes every original reader of ``tensor`` read ``replacement`` (the probes added since
        are not among them, so the probe itself still reads ``tensor``)."""
        for node in self.consumers.get(tensor, []):
            for i, name in enumerate(node.input):
                if name == tensor:
                    node.input[i] = replacement

    def node(self, op_type: str, inputs: list[str], output: str, **attrs) -> str:
        self.added.append(helper.make_node(op_type, inputs, [output], name=f"probe/{output}", **attrs))
        return output

    def scale_and_add(self, x: str, scale: str, add: str, layer: int, out: str) -> str:
        """``x * scale[:, layer] (unsqueezed on its last axis) + add[:, layer]``; returns ``out``."""
        index = self.layer_index(layer)
        s = self.node("Gather", [scale, index], f"{out}/scale", axis=1)
        s = self.node("Unsqueeze", [s, self.constant("probe/axes.-1", [-1])], f"{out}/scale.u")
        a = self.node("Gather", [add, index], f"{out}/add", axis=1)
        scaled = self.node("Mul", [x, s], f"{out}/scaled")
        return self.node("Add", [scaled, a], out)

    def layer_index(self, layer: int) -> str:
        return self.constant(f"probe/layer.{layer}", layer)

    def constant(self, name: str, value: int | list[int]) -> str:
        if name not in self.constants:
            self.constants.add(name)
            dims = [] if isinstance(value, int) else [len(value)]
            values = [value] if isinstance(value, int) else value
            self.graph.initializer.append(helper.make_tensor(name, TensorProto.INT64, dims, values))
        return name

    def other_input(self, node: onnx.NodeProto, known: str) -> str:
        """The input of a two-input node that is not ``known``."""
        others = [name for name in node.input if name != known]
        if len(others) != 1:
            raise ProbeError(f"{node.op_type} {node.name!r} does not add {known!r} to one other tensor")
        return others[0]

    def clone_path(self, start: str, end: str, new_start: str, prefix: str) -> str:
        """Copies the nodes that lead from tensor ``start`` to tensor ``end`` so that they read
        ``new_start`` instead; every other input (weights, constants) is shared. Returns the copy
        of ``end``."""
        after = {start}  # tensors computed from start
        for node in self.graph.node:  # the graph is in topological order
            if any(name in after for name in node.input):
                after.update(node.output)
        if end not in after:
            raise ProbeError(f"{end!r} is not computed from {start!r}")
        needed, stack = set(), [end]  # nodes between start and end
        while stack:
            node = self.producer.get(stack.pop())
            if node is None or id(node) in needed:
                continue
            if any(name in after for name in node.input):
                needed.add(id(node))
                stack.extend(node.input)
        renamed = {start: new_start}
        for k, node in enumerate(n for n in self.graph.node if id(n) in needed):
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.name = f"{prefix}/{k}.{node.name or node.op_type}"
            for i, name in enumerate(copy.input):
                copy.input[i] = renamed.get(name, name)
            for i, name in enumerate(copy.output):
                if name:
                    renamed[name] = copy.output[i] = f"{prefix}/{name}"
            self.added.append(copy)
        return renamed[end]


def add_probes(model: onnx.ModelProto, config: dict) -> onnx.ModelProto:
    """Returns a copy of ``model`` with the probes described in the module docstring.

    Args:
        model: A variant's graph, loaded without its external data (the references are kept).
        config: The model's config (``n_layer``, ``n_head``, ``n_embd``, ``vocab_size``).

    Returns:
        The inspect graph.

    Raises:
        ProbeError: When a tensor the probes attach to is missing.
    """
    proto = onnx.ModelProto()
    proto.CopyFrom(model)
    g = _Graph(proto.graph)
    L = config["n_layer"]
    outputs = {o.name for o in proto.graph.output}
    for name in [f"hidden_states.{i}" for i in range(L + 1)] + [f"attentions.{i}" for i in range(L)] + ["logits"]:
        if name not in outputs:
            raise ProbeError(f"the graph has no {name!r} output")

    for layer in range(L):
        x = f"hidden_states.{layer}"  # (B, T, C) the residual stream entering the block
        residual = g.consumer(x, "Add")  # x + attn(ln_1(x))
        attn_out = g.other_input(residual, x)  # (B, T, C)
        mid = residual.output[0]
        mlp_out = g.other_input(g.consumer(mid, "Add"), mid)  # (B, T, C)
        z = g.consumer(f"attentions.{layer}", "MatMul").output[0]  # (B, nh, T, hd) probs @ v
        merged = g.consumer(g.consumer(z, "Transpose").output[0], "Reshape").output[0]  # (B, T, C)

        # the probes on the block's own path
        patched = g.scale_and_add(x, "resid_scale", "resid_add", layer, f"resid_pre.{layer}")  # (B, T, C)
        g.reroute(x, patched)
        probed = g.scale_and_add(z, "head_scale", "head_add", layer, f"head_outputs.{layer}")  # (B, nh, T, hd)
        g.reroute(z, probed)
        g.node("Identity", [attn_out], f"attn_outputs.{layer}")
        g.node("Identity", [mlp_out], f"mlp_outputs.{layer}")

        # rows of merged head outputs through a copy of this layer's c_proj (bias included)
        rows = g.node("Gather", ["head_rows", g.layer_index(layer)], f"probe/head_rows.{layer}", axis=1)  # (B, K, C)
        writes = g.clone_path(merged, attn_out, rows, f"probe/c_proj.{layer}")  # (B, K, C)
        g.node("Identity", [writes], f"head_writes.{layer}")

    # the logit lens: rows through copies of ln_f and the unembedding
    last = f"hidden_states.{L}"
    ln_f = g.consumer(last, "LayerNormalization")
    lens = g.clone_path(last, "logits", "lens_hidden", "probe/lens")  # (B, N, V)
    g.node("Identity", [lens], "lens_logits")
    # direct logit attribution: rows scaled by ln_f's weight, through a copy of the unembedding
    scaled = g.node("Mul", ["unembed_rows", ln_f.input[1]], "probe/unembed_rows.scaled")  # (B, M, C)
    unembedded = g.clone_path(ln_f.output[0], "logits", scaled, "probe/unembed")  # (B, M, V)
    g.node("Identity", [unembedded], "unembed_logits")

    proto.graph.node.extend(g.added)
    proto.graph.input.extend(probe_inputs(config))
    proto.graph.output.extend(probe_outputs(config))
    _sort_topologically(proto.graph)
    return proto


def _sort_topologically(graph: onnx.GraphProto) -> None:
    """Orders the nodes so each comes after the producers of its inputs (ONNX requires it)."""
    ready = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    pending = list(graph.node)
    ordered = []
    while pending:
        rest = []
        for node in pending:
            if all(name in ready for name in node.input):
                ordered.append(node)
                ready.update(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            raise ProbeError(f"the probed graph has a cycle or a missing input at {rest[0].name or rest[0].op_type}")
        pending = rest
    del graph.node[:]
    graph.node.extend(ordered)


def write_inspect_graph(graph: str | Path, config: dict, out: str | Path | None = None) -> Path:
    """Writes the inspect graph of ``graph``; its weights stay the graph's.

    Args:
        graph: A variant's ``model.onnx`` (or the reference graph).
        config: The model's config.
        out: Where to write; default ``inspect.onnx`` beside ``graph``. It must be in the same
            directory, since external-data references are relative to it.

    Returns:
        The path written.

    Raises:
        ProbeError: When the graph lacks the tensors the probes need.
    """
    graph = Path(graph)
    out = Path(out) if out else graph.with_name(INSPECT_FILE)
    if out.parent.resolve() != graph.parent.resolve():
        raise ValueError(f"{out} must be beside {graph}: their external-data paths are relative")
    model = onnx.load(str(graph), load_external_data=False)
    probed = add_probes(model, config)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(probed.SerializeToString())
    tmp.replace(out)
    return out


def neutral_probes(config: dict, T: int) -> dict[str, np.ndarray]:
    """Probe inputs that change nothing, batch of one: each ``PROBES`` value that changes nothing,
    and no rows for each row input, as site_src/runtime/probe-feeds.js feeds them."""
    known = {**sizes(config), "sequence": T}
    return {name: np.full([1, *(known.get(d, 0) for d in shape)], neutral, np.float32) for name, (shape, neutral) in PROBES.items()}


class InspectSession:
    """An inspect graph in onnxruntime-Python, fed the way the browser feeds it (model-worker.js).

    Args:
        path: An inspect graph file (for a compact variant, its expanded form).
        config: The model's config.
    """

    def __init__(self, path: str | Path, config: dict):
        import onnxruntime as ort

        from .runtime import cpu_session

        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.session = cpu_session(path, options)  # int8 products exact, as in the browser
        self.config = config
        self.outputs = [o.name for o in self.session.get_outputs()]

    def run(self, ids: list[int], want: list[str] | None = None, **probes: np.ndarray) -> dict[str, np.ndarray]:
        """One pass over ``ids`` (batch of one, no cache) with ``probes`` (each with its batch
        axis; the rest neutral). Returns the ``want`` outputs (default: all), by name."""
        from .export import io_names
        from .gpt2 import GPT2Config
        from .runtime import empty_past

        x = np.array([ids], np.int64)  # (1, T)
        positions = np.arange(len(ids), dtype=np.int64)[None]  # (1, T)
        inputs, _ = io_names(self.config["n_layer"])
        feeds = dict(zip(inputs, [x, np.ones_like(x), positions, *empty_past(GPT2Config(**self.config), 1)], strict=True))
        feeds |= neutral_probes(self.config, len(ids)) | {k: np.asarray(v, np.float32) for k, v in probes.items()}
        names = want or self.outputs
        return dict(zip(names, self.session.run(names, feeds), strict=True))
