"""Every shipped variant of the model, and every fact about one, in one place.

A variant is a downloadable form of the fp32 graph: how its weights are stored, how the
exporter writes it, which onnxruntime-web backends run it and in which order a browser tries
it there, what it needs of the device, and the bounds its validation must meet. The rest of
the package and the browser read these facts from here or from the manifest, which carries
them (``package.variant_entry``, ``package.variant_order``); nothing else names a variant.

Adding a variant is one entry in ``VARIANTS`` (and, for a new way of writing one, its converter
in ``quantize.CONVERTERS``).

The order of preference (``ranks``) was measured by ``bench/browser.py``: on WASM q8x decodes
as fast as q4x from the same 4-bit download, pre-fills faster and holds about half the memory;
q4x is next; q8 downloads twice as much; q4 is several times slower. On WebGPU 4-bit weights
are the usual format; fp16 needs the ``shader-f16`` feature.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VariantTolerance:
    """Bounds for one variant against the fp32 graph.

    Attributes:
        kl: Max mean KL(fp32 || variant) of the next-token distributions, in nats.
        top1: Min share of positions where both pick the same most likely token.
        top5: Min mean overlap of the two top-5 sets (0..1).
        ppl_ratio: Max perplexity of the variant over perplexity of fp32 on the text.
        cache_kl: Max mean KL between the variant's logits with and without the KV cache.
    """

    kl: float
    top1: float
    top5: float
    ppl_ratio: float
    cache_kl: float


# Random weights give nearly flat next-token distributions: a tiny change of the logits moves
# the top-1 token, so agreements are low and KL tiny even for a good variant. Trained weights
# give peaked distributions and a meaningful perplexity (validate.weights_verdict tells them apart).
FOUR_BIT = {
    "trained": VariantTolerance(kl=0.3, top1=0.65, top5=0.65, ppl_ratio=1.3, cache_kl=0.05),
    "random": VariantTolerance(kl=5e-2, top1=0.2, top5=0.2, ppl_ratio=1.05, cache_kl=5e-3),
}


@dataclass(frozen=True)
class VariantSpec:
    """A shipped form of the model.

    Attributes:
        name: Variant id, also its directory name.
        dtype: What the weights are stored as.
        writer: How the exporter writes it: ``compact`` (the fp32 graph, its weights packed in
            4-bit pieces: compact.py), ``requant`` (an int8 graph over another variant's pieces:
            requant.py), or a converter of ``quantize.CONVERTERS`` (``float16``, ``int8-dynamic``,
            ``int4-blocks``) whose graph is saved in pieces.
        ranks: Backend -> place in the order a browser tries the variants there (1 first); the
            backends it runs on are these keys.
        tolerances: ``trained`` and ``random`` -> its validation bounds.
        description: One line for the report.
        built_from: The variant whose pieces it reads, written before it (else None).
        gpu_features: WebGPU features the device must have to run it.
        batch_invariant: Whether a position's logits are the same whatever else the pass
            holds. Not so with dynamic activation quantization: one int8 scale is computed over
            every position of the pass, so checking five tokens at once (speculative decoding)
            rounds differently from checking one, and a near-tie of greedy decoding can flip.
    """

    name: str
    dtype: str
    writer: str
    ranks: dict[str, int]
    tolerances: dict[str, VariantTolerance]
    description: str
    built_from: str | None = None
    gpu_features: tuple[str, ...] = ()
    batch_invariant: bool = True

    @property
    def backends(self) -> tuple[str, ...]:
        """The onnxruntime-web execution providers it runs on, the one it ranks highest on first."""
        return tuple(sorted(self.ranks, key=self.ranks.get))


# In the order the exporter writes them (a variant after the one it is built from).
VARIANTS: dict[str, VariantSpec] = {
    spec.name: spec
    for spec in [
        VariantSpec("q4x", "int4", "compact", {"wasm": 2}, FOUR_BIT, "4-bit download, expanded to float32 in the browser (compact.py)"),
        VariantSpec(
            "q8x",
            "int8",
            "requant",
            {"wasm": 1},
            FOUR_BIT,
            "q4x's 4-bit download, requantized to int8 in the browser (requant.py)",
            built_from="q4x",
            batch_invariant=False,
        ),
        VariantSpec("q4", "int4", "int4-blocks", {"webgpu": 1, "wasm": 4}, FOUR_BIT, "4-bit weights, blocks of 32 (MatMulNBits)"),
        VariantSpec(
            "q8",
            "int8",
            "int8-dynamic",
            {"wasm": 3},
            {
                "trained": VariantTolerance(kl=0.1, top1=0.8, top5=0.8, ppl_ratio=1.1, cache_kl=0.05),
                "random": VariantTolerance(kl=5e-3, top1=0.5, top5=0.5, ppl_ratio=1.01, cache_kl=5e-3),
            },
            "8-bit weights, dynamic activation quantization (MatMulInteger)",
            batch_invariant=False,
        ),
        VariantSpec(
            "fp16",
            "float16",
            "float16",
            {"webgpu": 2},
            {
                "trained": VariantTolerance(kl=2e-3, top1=0.97, top5=0.95, ppl_ratio=1.01, cache_kl=2e-3),
                "random": VariantTolerance(kl=1e-4, top1=0.9, top5=0.9, ppl_ratio=1.001, cache_kl=1e-4),
            },
            "half precision; needs WebGPU's shader-f16",
            gpu_features=("shader-f16",),
        ),
    ]
}

# The variant whose packed 4-bit files the pipeline figures read their weights from (tables.py).
PACKED = next(spec.name for spec in VARIANTS.values() if spec.writer == "compact")


def draft_variants(names: list[str]) -> list[str]:
    """The variants of ``names`` a speculative-decoding draft ships in (``pipeline.run_draft``):
    the first choice on each backend and the variants they read their pieces from, in
    ``VARIANTS`` order. The draft is small beside the model; the other variants would only
    add to the download."""
    first = {order[0] for order in variant_order(names).values()}
    wanted = first | {VARIANTS[name].built_from for name in first if VARIANTS[name].built_from}
    return [name for name in VARIANTS if name in wanted]


def tolerances(random_weights: bool) -> dict[str, VariantTolerance]:
    """Every variant's bounds for random or for trained weights."""
    return {name: spec.tolerances["random" if random_weights else "trained"] for name, spec in VARIANTS.items()}


def variant_order(names: list[str]) -> dict[str, list[str]]:
    """Per backend, the variants of ``names`` that run on it, in the order a browser tries them.

    Args:
        names: Variant names (a manifest's).

    Returns:
        Backend -> names, best first; a backend none of them runs on is left out.
    """
    order: dict[str, list[str]] = {}
    for name in names:
        for backend in VARIANTS[name].ranks:
            order.setdefault(backend, []).append(name)
    return {backend: sorted(ranked, key=lambda name: VARIANTS[name].ranks[backend]) for backend, ranked in order.items()}
