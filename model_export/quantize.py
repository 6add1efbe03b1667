"""Smaller forms of the fp32 graph for the browser: fp16, int8 and 4-bit weights.

=======  =============================================  ===========================  ================
variant  what changes                                   ONNX Runtime operators       runs on
=======  =============================================  ===========================  ================
fp16     every float tensor in half precision           the same as fp32             WebGPU (shader-f16)
q8       int8 weights, activations quantized on the     DynamicQuantizeLinear,       WASM
         fly (dynamic), embedding tables int8           MatMulInteger, Gather+
                                                        DequantizeLinear
q4       4-bit weights in blocks of 32 with one scale   MatMulNBits (the token       WebGPU and WASM
         per block; the tied token embedding read from  embedding: Gather, Cast,
         the output layer's 4-bit matrix                Floor, Mul, Sub)
q4x      the fp32 graph; its weights shipped as 4-bit   the same as fp32             WASM
         blocks that the browser expands before it
         creates the session (``compact.py``)
q8x      int8 weights, one scale per output channel,   DynamicQuantizeLinear,       WASM
         built in the browser from q4x's pieces (no     MatMulInteger, Gather+Cast+
         download of its own: ``requant.py``)           Mul
=======  =============================================  ===========================  ================

Inputs and outputs stay float32 in every variant (fp16 casts at the graph's edges), so browser
code feeds and reads every variant the same way.

Both quantizers only touch ``MatMul`` nodes whose second input is a constant matrix. The
exported graph has that form for every ``nn.Linear`` except the output layer, whose weight is
the token embedding seen through a ``Transpose`` (the two are tied); ``fold_transposed_weights``
gives that MatMul its own transposed copy first, which is then quantized like the others.
"""

from __future__ import annotations

import logging
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from .compact import BLOCK_SIZE
from .variants import VARIANTS


@dataclass
class QuantizeResult:
    """What ``quantize_variant`` produced.

    Attributes:
        variant: The variant's name.
        seconds: Wall time of the conversion (saving excluded).
        operators: Operator type -> count in the new graph.
    """

    variant: str
    seconds: float
    operators: dict[str, int] = field(default_factory=dict)


def fold_transposed_weights(proto: onnx.ModelProto) -> dict[str, str]:
    """Rewrites ``MatMul(X, Transpose(W))`` with a constant W into ``MatMul(X, Wt)``, in place.

    ``Wt`` is a new initializer, named ``W.T``, holding W transposed; W itself stays for its
    other users (the embedding lookup). A ``Transpose`` left without users is removed.

    Returns:
        Original weight name -> transposed copy's name, for every rewritten MatMul.
    """
    graph = proto.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    folded = {}
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in producer:
            continue
        transpose = producer[node.input[1]]
        perm = next((list(a.ints) for a in transpose.attribute if a.name == "perm"), [1, 0])
        if transpose.op_type != "Transpose" or transpose.input[0] not in initializers or perm != [1, 0]:
            continue
        weight = numpy_helper.to_array(initializers[transpose.input[0]])  # (V, C)
        name = f"{transpose.input[0]}.T"
        if name not in initializers:
            initializers[name] = numpy_helper.from_array(weight.T.copy(), name)  # (C, V)
            graph.initializer.append(initializers[name])
        node.input[1] = name
        folded[transpose.input[0]] = name
    used = {name for node in graph.node for name in node.input}
    dead = [node for node in graph.node if node.op_type == "Transpose" and node.output[0] not in used]
    for node in dead:
        graph.node.remove(node)
    return folded


def to_fp16(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Half-precision weights and arithmetic; float32 inputs and outputs.

    Constants outside float16's range are clipped to +-65504 (the attention mask's very negative
    number among them, which stays far below any real score).
    """
    from onnxruntime.transformers.float16 import convert_float_to_float16

    return convert_float_to_float16(proto, keep_io_types=True, disable_shape_infer=True)


def to_q8(proto: onnx.ModelProto) -> onnx.ModelProto:
    """int8 weights for every constant MatMul and the embedding Gathers (dynamic quantization)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    prepared = proto
    fold_transposed_weights(prepared)
    with tempfile.TemporaryDirectory(prefix="model-export-q8-") as tmp:
        out = Path(tmp) / "q8.onnx"
        quantize_dynamic(
            prepared,
            out,
            op_types_to_quantize=["MatMul", "Gather"],
            weight_type=QuantType.QInt8,
            per_channel=False,
            use_external_data_format=True,  # weights beside the graph: no 2 GB protobuf limit
            extra_options={"MatMulConstBOnly": True},  # attention's activation x activation MatMuls stay float
        )
        return onnx.load(str(out))


def to_q4(proto: onnx.ModelProto) -> onnx.ModelProto:
    """4-bit symmetric weights in blocks of 32 for every constant MatMul (MatMulNBits).

    The tied token embedding is then read from the output layer's 4-bit matrix
    (``share_tied_embedding``): one 4-bit copy serves both, and the lookup uses standard
    operators that every backend has (onnxruntime-web 1.30's WebAssembly build has no kernel for
    ``GatherBlockQuantized``). The position embedding stays float32.
    """
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    tied = fold_transposed_weights(proto)
    quantizer = MatMulNBitsQuantizer(
        proto,
        bits=4,
        block_size=BLOCK_SIZE,
        is_symmetric=True,
        op_types_to_quantize=("MatMul",),
        quant_axes=(("MatMul", 0),),
    )
    quantizer.process()
    model = quantizer.model.model
    for weight, transposed in tied.items():
        share_tied_embedding(model, weight, transposed)
    return model


def share_tied_embedding(proto: onnx.ModelProto, weight: str, transposed: str) -> int:
    """Replaces ``Gather(weight, ids)`` by a lookup into the 4-bit matrix of ``MatMul(x, weight.T)``.

    ``MatMulNBits`` stores its (K, N) matrix as N rows of K/32 blocks, each block 16 bytes of
    two 4-bit numbers (low nibble first, zero point 8) and one float scale. For the output layer
    N is the vocabulary and K the width, so row ``v`` is token ``v``'s embedding, quantized.
    The lookup gathers those rows and expands them with Cast, Div, Floor, Mul and Sub.

    Args:
        proto: A graph after ``MatMulNBitsQuantizer``; edited in place.
        weight: The (V, C) float embedding, used by Gather nodes.
        transposed: Name of its transposed copy before quantization.

    Returns:
        The number of Gather nodes replaced (0 if the output layer was not quantized).
    """
    graph = proto.graph
    matmul = next((n for n in graph.node if n.op_type == "MatMulNBits" and n.input[1].startswith(transposed)), None)
    if matmul is None:
        return 0
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in matmul.attribute}
    if attrs.get("bits") != 4 or len(matmul.input) > 3 and matmul.input[3]:  # explicit zero points: not ours
        return 0
    width, block = attrs["K"], attrs["block_size"]
    packed, scales = matmul.input[1], matmul.input[2]
    gathers = [n for n in graph.node if n.op_type == "Gather" and n.input[0] == weight]
    for index, gather in enumerate(gathers):
        nodes, constants = dequantizing_gather(f"{weight}.q4_lookup{index}", packed, scales, gather.input[1], gather.output[0], width, block)
        position = list(graph.node).index(gather)
        graph.node.remove(gather)
        for offset, node in enumerate(nodes):
            graph.node.insert(position + offset, node)
        graph.initializer.extend(constants)
    if not any(weight in node.input for node in graph.node):
        graph.initializer.remove(next(t for t in graph.initializer if t.name == weight))
    return len(gathers)


def dequantizing_gather(prefix: str, packed: str, scales: str, ids: str, output: str, width: int, block: int):
    """Nodes computing the float rows ``ids`` of a MatMulNBits 4-bit matrix.

    Returns:
        ``(nodes, constant initializers)``; ``output`` is (B, T, width) float32.
    """
    helper = onnx.helper
    n_blocks = -(-width // block)

    def name(part: str) -> str:
        return f"{prefix}.{part}"

    constants = [
        numpy_helper.from_array(np.array(16.0, np.float32), name("sixteen")),
        numpy_helper.from_array(np.array(8.0, np.float32), name("eight")),
        numpy_helper.from_array(np.array([-1], np.int64), name("last_axis")),
        numpy_helper.from_array(np.array([0, 0, n_blocks, block], np.int64), name("blocks_shape")),
        numpy_helper.from_array(np.array([0, 0, n_blocks * block], np.int64), name("row_shape")),
        numpy_helper.from_array(np.array([0], np.int64), name("zero")),
        numpy_helper.from_array(np.array([width], np.int64), name("width")),
    ]
    nodes = [
        helper.make_node("Gather", [packed, ids], [name("bytes")], axis=0),  # (B, T, nb, block/2) uint8
        helper.make_node("Cast", [name("bytes")], [name("byte_values")], to=onnx.TensorProto.FLOAT),
        helper.make_node("Div", [name("byte_values"), name("sixteen")], [name("div")]),
        helper.make_node("Floor", [name("div")], [name("high")]),  # high nibble
        helper.make_node("Mul", [name("high"), name("sixteen")], [name("high16")]),
        helper.make_node("Sub", [name("byte_values"), name("high16")], [name("low")]),  # low nibble
        helper.make_node("Unsqueeze", [name("low"), name("last_axis")], [name("low1")]),
        helper.make_node("Unsqueeze", [name("high"), name("last_axis")], [name("high1")]),
        helper.make_node("Concat", [name("low1"), name("high1")], [name("pairs")], axis=-1),  # (..., block/2, 2)
        helper.make_node("Reshape", [name("pairs"), name("blocks_shape")], [name("codes")]),  # (B, T, nb, block)
        helper.make_node("Sub", [name("codes"), name("eight")], [name("centered")]),
        helper.make_node("Gather", [scales, ids], [name("block_scales")], axis=0),  # (B, T, nb)
        helper.make_node("Unsqueeze", [name("block_scales"), name("last_axis")], [name("scale1")]),
        helper.make_node("Mul", [name("centered"), name("scale1")], [name("values")]),  # (B, T, nb, block)
        helper.make_node("Reshape", [name("values"), name("row_shape")], [name("padded")]),  # (B, T, nb*block)
        helper.make_node("Slice", [name("padded"), name("zero"), name("width"), name("last_axis")], [output]),
    ]
    return nodes, constants


# A variant's writer (variants.VariantSpec.writer) -> the function that converts the fp32 graph.
CONVERTERS = {"float16": to_fp16, "int8-dynamic": to_q8, "int4-blocks": to_q4}


def quantize_variant(reference: onnx.ModelProto, variant: str) -> tuple[onnx.ModelProto, QuantizeResult]:
    """Converts the fp32 reference graph into one variant.

    Args:
        reference: The fp32 graph, weights loaded.
        variant: A key of ``VARIANTS``.

    Returns:
        The new graph (weights inside) and the conversion's time and operator counts.

    Raises:
        ValueError: For an unknown variant.
    """
    convertible = [name for name, spec in VARIANTS.items() if spec.writer in CONVERTERS]
    if variant not in convertible:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(convertible)}")
    start = time.perf_counter()
    work = onnx.ModelProto()
    work.CopyFrom(reference)  # the converters may edit their argument
    with quiet_quantizers():
        converted = CONVERTERS[VARIANTS[variant].writer](work)
    seconds = time.perf_counter() - start
    return converted, QuantizeResult(variant, seconds, operator_counts(converted))


@contextmanager
def quiet_quantizers():
    """Keeps ONNX Runtime's quantizers from logging every node they visit.

    Importing ``matmul_nbits_quantizer`` sets the root logger to INFO; ``quantize_dynamic`` logs
    each skipped node there and suggests a pre-processing step this graph does not need.
    """
    root = logging.getLogger()
    levels = {logger: logger.level for logger in (root, logging.getLogger("onnxruntime.quantization"))}
    for logger in levels:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in levels.items():
            logger.setLevel(level)


def operator_counts(proto: onnx.ModelProto) -> dict[str, int]:
    """Operator type -> number of nodes, most frequent first."""
    counts: dict[str, int] = {}
    for node in proto.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))
