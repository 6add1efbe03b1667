"""The book's static figures: SVG drawn at build time, no JavaScript.

``FIGURES`` maps a figure's name to a function returning ``(svg, alt, caption)``. A page
places a figure with a marker line ``<!-- figure: NAME -->``, and refers to it in its text
with ``[[figure: NAME]]`` (which becomes "Figure N", a link); ``sitebuild/figure_hook.py``
does both. Figures that show numbers take them from the tested ``demos`` and
``model_export`` code and also write them as ``data-*`` attributes, which
``tests/sitebuild/test_figures.py`` compares with the computed values.
"""

from __future__ import annotations

from collections.abc import Callable

from sitebuild.figures import attention, block, decoding, efficiency, families, inside, pipeline, scaling, sections, training

FIGURES: dict[str, Callable[[], tuple[str, str, str]]] = {
    "gpt2-block": block.gpt2_block,
    "forward-pass": block.forward_pass,
    "embedding-sum": pipeline.embedding_sum,
    "lm-head": pipeline.lm_head,
    "autoregression-loop": pipeline.autoregression_loop,
    "pre-post-norm": block.pre_post_norm,
    "qkv": block.qkv,
    "mlp": block.mlp,
    "gated-ffn": block.gated_ffn,
    "head-circuits": block.head_circuits,
    "attention-masks": attention.attention_masks,
    "multi-head": attention.multi_head,
    "encoder-decoder": attention.encoder_decoder,
    "gqa-mqa": attention.gqa_variants,
    "mla-cache": attention.mla_cache,
    "flash-tiles": attention.flash_tiles,
    "sliding-window": attention.sliding_window,
    "attention-sinks": attention.attention_sinks,
    "lens-translators": inside.lens_translators,
    "kv-cache": efficiency.kv_cache,
    "quantization-outliers": efficiency.quantization_outliers,
    "moe-routing": efficiency.moe_routing,
    "three-families": families.three_families,
    "bpe-merges": families.bpe_merges,
    "rope-rotation": families.rope_rotation,
    "rope-scaling": families.rope_scaling,
    "scaling-law": scaling.scaling_law,
    "compute-optimal": scaling.compute_optimal,
    "beam-tree": decoding.beam_tree,
    "top-k-top-p": decoding.top_k_top_p,
    "temperature": decoding.temperature,
    "speculative-tokens": decoding.speculative_tokens,
    "one-hot-vs-dense": sections.one_hot_vs_dense,
    "zero-few-shot": sections.zero_few_shot,
    "context-window": sections.context_window,
    "tokens-per-language": sections.tokens_per_language,
    "superposition": sections.superposition_curve,
    "export-pipeline": sections.export_pipeline,
    "gradient-range": training.gradient_range,
    "zero-memory": training.zero_memory,
    "optimizer-paths": training.optimizer_paths,
    "book-model-curve": training.book_model_curve,
}
