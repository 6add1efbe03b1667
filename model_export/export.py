"""Export ``gpt2.GPT2`` to a single ONNX file with a key/value cache.

Inputs and outputs (names follow transformers.js / optimum so browser code can reuse them):

    input_ids                  (batch_size, sequence_length)           int64
    attention_mask             (batch_size, total_sequence_length)     int64
    position_ids               (batch_size, sequence_length)           int64
    past_key_values.{i}.key    (batch_size, n_head, past_sequence_length, head_dim)   float32
    past_key_values.{i}.value  (same)
    ->
    logits                     (batch_size, sequence_length, vocab_size)              float32
    present.{i}.key            (batch_size, n_head, total_sequence_length, head_dim)  float32
    present.{i}.value          (same)
    new.{i}.key                (batch_size, n_head, sequence_length, head_dim)        float32
    new.{i}.value              (same)
    attentions.{i}             (batch_size, n_head, sequence_length, total_sequence_length)  float32
    hidden_states.{j}          (batch_size, sequence_length, n_embd)                  float32

total_sequence_length = past_sequence_length + sequence_length. One graph serves the prefill
(a zero-length past) and every decode step. ``attentions.{i}`` are layer i's softmax
probabilities; ``hidden_states.0`` is the embedding sum (token + position) and
``hidden_states.{j}`` the residual stream after block j (1 <= j <= n_layer, before the final
LayerNorm). ONNX Runtime computes the probabilities and the residual stream anyway, so a caller
that does not fetch these outputs pays almost nothing for them (see ``measure.attention_cost``).

``new.{i}.key/value`` are the keys and values of this call's tokens alone: the last
``sequence_length`` positions of ``present``. A caller that keeps its own cache between steps
(the browser's worker does) fetches these instead of ``present`` and so copies out one position
a step instead of the whole cache. They come after every other output.
"""

from __future__ import annotations

import logging
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from .gpt2 import GPT2, GPT2Config

OPSET = 21
BATCH, SEQUENCE, PAST, TOTAL = "batch_size", "sequence_length", "past_sequence_length", "total_sequence_length"
TRACE_SEQUENCE, TRACE_PAST = 5, 3  # the traced call: 5 new tokens after 3 cached ones
MIN_POSITIONS = TRACE_PAST + TRACE_SEQUENCE  # the shortest context the exporter takes (positions 0 .. 7)


@dataclass
class ExportResult:
    """What ``export_onnx`` wrote.

    Attributes:
        path: The ONNX file.
        bytes: Its size.
        seconds: Wall time of the export, save included.
    """

    path: Path
    bytes: int
    seconds: float


def io_names(n_layer: int, attentions: bool = False, hidden_states: bool = False) -> tuple[list[str], list[str]]:
    """Names of the graph's inputs and outputs, in ``GPT2.forward`` order.

    Args:
        n_layer: Number of blocks.
        attentions: Whether the model returns ``attentions.{i}``.
        hidden_states: Whether the model returns ``hidden_states.{i}`` (n_layer + 1 of them).

    Returns:
        ``(input_names, output_names)``.
    """
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(n_layer):
        inputs += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outputs += [f"present.{i}.key", f"present.{i}.value"]
    if attentions:
        outputs += [f"attentions.{i}" for i in range(n_layer)]
    if hidden_states:
        outputs += [f"hidden_states.{i}" for i in range(n_layer + 1)]
    return inputs, outputs


def example_inputs(config: GPT2Config, batch: int = 2, sequence: int = TRACE_SEQUENCE, past: int = TRACE_PAST) -> tuple[torch.Tensor, ...]:
    """Sample arguments for tracing. Sizes must be >= 2 or torch.export fixes them as constants;
    ``past + sequence`` must be at most ``n_positions`` (the position ids run up to it)."""
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, config.vocab_size, (batch, sequence), generator=generator)  # (B, T)
    attention_mask = torch.ones(batch, past + sequence, dtype=torch.int64)  # (B, P+T)
    position_ids = torch.arange(past, past + sequence).repeat(batch, 1)  # (B, T)
    cache_shape = (batch, config.n_head, past, config.head_dim)
    past_kv = [torch.randn(cache_shape, generator=generator) for _ in range(2 * config.n_layer)]
    return (input_ids, attention_mask, position_ids, *past_kv)


def dynamic_shapes(config: GPT2Config) -> tuple:
    """torch.export dimension spec matching ``GPT2.forward(input_ids, attention_mask, position_ids, *past)``.

    The mask's length is past + sequence; torch.export cannot state a sum of two ``Dim``s, so it
    is ``Dim.AUTO`` (inferred) and renamed to ``total_sequence_length`` after export.
    """
    Dim = torch.export.Dim
    batch = Dim(BATCH, min=1)
    sequence = Dim(SEQUENCE, min=1, max=config.n_positions)
    past = Dim(PAST, min=1, max=config.n_positions - 1)  # 0 works at run time; export needs >= 1
    cache = {0: batch, 2: past}
    return (
        {0: batch, 1: sequence},  # input_ids
        {0: batch, 1: Dim.AUTO},  # attention_mask
        {0: batch, 1: sequence},  # position_ids
        tuple(cache for _ in range(2 * config.n_layer)),  # *past is a single pytree node
    )


def export_onnx(model: GPT2, path: str | Path, external_data: bool = False) -> ExportResult:
    """Exports ``model`` to ONNX (the tied embedding stored once).

    Args:
        model: The module to export; its output flags decide the extra outputs.
        path: Destination ``.onnx`` file; parent directories are created.
        external_data: Store the weights in ``<path>.data`` beside the graph (needed above the
            2 GB limit of a single ONNX file); otherwise everything is in one file.

    Returns:
        Path, size (weights included) and time of the export.
    """
    import onnx

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    input_names, output_names = io_names(model.config.n_layer, model.output_attentions, model.output_hidden_states)
    model.eval()
    with torch.no_grad(), quiet_exporter():
        program = torch.onnx.export(
            model,
            example_inputs(model.config),
            input_names=input_names,
            output_names=output_names,
            dynamic_shapes=dynamic_shapes(model.config),
            opset_version=OPSET,
            dynamo=True,
            verbose=False,
        )
    program.save(str(path), external_data=external_data)

    proto = onnx.load(str(path), load_external_data=False)  # the graph; external weights stay where they are
    name_total_length(proto)
    add_new_key_value_outputs(proto)
    onnx.save(proto, str(path))
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return ExportResult(path, size, time.perf_counter() - start)


@contextmanager
def quiet_exporter():
    """Silences the exporter's notes that do not concern this model.

    They are: optional torchvision operators not being registered, a pytree deprecation inside
    torch, and dimension names being merged (batch_size and the others are shared by several
    inputs on purpose).
    """
    exporter_log = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = exporter_log.level
    exporter_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"# The axis name: .* will not be used")
            warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)
            yield
    finally:
        exporter_log.setLevel(level)


def name_total_length(proto) -> None:
    """Renames the inferred past + sequence dimension to ``total_sequence_length`` in place.

    torch.export names it after an internal symbol (``s12``) on the mask and as an expression
    (``past_sequence_length + sequence_length``) on the present outputs.
    """
    mask = next(value for value in proto.graph.input if value.name == "attention_mask")
    inferred = mask.type.tensor_type.shape.dim[1].dim_param
    for value in [*proto.graph.input, *proto.graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param and (dim.dim_param == inferred or "+" in dim.dim_param):
                dim.dim_param = TOTAL


def new_key_value_names(n_layer: int) -> list[str]:
    """Names of the outputs that hold the new tokens' keys and values, key then value per layer."""
    return [f"new.{i}.{part}" for i in range(n_layer) for part in ("key", "value")]


def add_new_key_value_outputs(proto) -> None:
    """Adds the outputs ``new.{i}.key/value`` in place: the second input of each present Concat.

    Each ``present.{i}.key`` is ``Concat(past_key_values.{i}.key, k)`` with ``k`` the new
    tokens' keys (B, nh, T, hd); an Identity names ``k`` as an output of its own.
    """
    import onnx

    present_dims = {value.name: value.type.tensor_type.shape.dim for value in proto.graph.output}
    concats = {node.output[0]: node for node in proto.graph.node if node.op_type == "Concat" and node.output[0].startswith("present.")}
    layers = len(concats) // 2
    for name in new_key_value_names(layers):
        present = name.replace("new.", "present.")
        concat = concats[present]
        proto.graph.node.append(onnx.helper.make_node("Identity", [concat.input[1]], [name], name=f"{name}/identity"))
        shape = [d.dim_param or d.dim_value for d in present_dims[present]]
        shape[2] = SEQUENCE
        proto.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape))


def without_outputs(proto, prefixes: tuple[str, ...] = ("attentions.", "hidden_states.", "new.")):
    """A copy of the graph whose outputs starting with ``prefixes`` are dropped (nodes unchanged)."""
    import onnx

    stripped = onnx.ModelProto()
    stripped.CopyFrom(proto)
    kept = [value for value in stripped.graph.output if not value.name.startswith(prefixes)]
    del stripped.graph.output[:]
    stripped.graph.output.extend(kept)
    return stripped


def fuse_for_ort(src: str | Path, dst: str | Path) -> dict[str, int]:
    """Runs onnxscript's ONNX Runtime fusions (MultiHeadAttention, SkipLayerNormalization, ...).

    The attention fuses only in a graph without ``attentions.{i}`` outputs: the fused operator
    never materialises the probabilities.

    Returns:
        Fusion name -> number of times it applied (zero counts dropped).
    """
    import onnx_ir as ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort

    model = ir.load(str(src))
    model, counts = optimize_for_ort(model)
    ir.save(model, str(dst))
    return {name: count for name, count in counts.items() if count}


def tied_embedding_copies(proto, config: GPT2Config) -> int:
    """Counts initializers holding a (V, C) or (C, V) matrix; 1 means the tied weight is stored once."""
    shapes = {(config.vocab_size, config.n_embd), (config.n_embd, config.vocab_size)}
    return sum(tuple(init.dims) in shapes for init in proto.graph.initializer)


def graph_io(proto) -> tuple[list[dict], list[dict]]:
    """Describes the graph's inputs and outputs as ``{"name", "dtype", "shape"}`` dicts.

    Shapes list dimension names for symbolic axes and integers for fixed ones.
    """
    import onnx

    def describe(value) -> dict:
        tensor_type = value.type.tensor_type
        shape = [dim.dim_param or dim.dim_value for dim in tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name
        return {"name": value.name, "dtype": dtype, "shape": shape}

    return [describe(v) for v in proto.graph.input], [describe(v) for v in proto.graph.output]
