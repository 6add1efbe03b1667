"""The stages of a build, each reading and writing one build directory.

    build     load the weights, export the fp32 reference graph, copy the tokenizer files
    quantize  write the fp16 / q8 / q4 variants as a graph plus external-data pieces
    validate  compare our module with Hugging Face, the fp32 graph with our module, and every
              variant with the fp32 graph
    tables    write ``tables/``, what the pipeline figures read: where each weight is in the q4x
              files, and parity logits of PyTorch and every graph (``tables.py``)
    probes    write each variant's ``inspect.onnx``: its graph with the probes the "Looking
              inside" pages use, on the same weights (``probes.py``)
    draft     write ``draft/``: the model's first blocks (an early exit) as the draft model of
              speculative decoding, in the WASM and WebGPU variants, validated like the model
    package   write ``manifest.json``: files, sizes, sha256, outputs, backends, metrics, tables
    report    measure CPU decoding speed and write ``report.json`` and ``report.md``

Layout of a build directory (everything but ``.build/`` is what the site serves)::

    manifest.json  report.json  report.md
    vocab.json  merges.txt  TOKENIZER_NOTICE.txt
    q4/model.onnx  q4/model.onnx.data.0 ...     (and q8/, fp16/)
    q4x/model.onnx  q4x/expand.json  q4x/packed.0 ...   (4-bit download, fp32 compute)
    q8x/model.onnx  q8x/expand.json   (int8 compute from the q4x pieces: no pieces of its own)
    <variant>/inspect.onnx    the variant's graph with probes, on the same weights (not fp16)
    draft/q4x/ draft/q8x/ draft/q4/   the draft model's variants (listed under "draft" in the manifest)
    tables/index.json  tables/parity/*.f32      (the pipeline figures' weight index and parity logits)
    .build/reference.onnx     the fp32 graph, the reference for every comparison (not shipped)
    .build/q4x-expanded.onnx  q4x expanded as the browser expands it (validation, reports; also q8x)
    .build/reference-inspect.onnx  the reference with probes (the interpretability parity tests)
    .build/record.json        what each stage did: provenance, times, validation rows, speeds
    .build/draft/             the draft's own build directory (its reference, record, checks)

The site build skips dot-directories, so the reference (500 MB for GPT-2 small) never reaches
the site.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import package
from .layout import (
    BUILD_DIR,
    DRAFT_DIR,
    GRAPH_FILE,
    INDEX_FILE,
    INLINE_BYTES,
    INSPECT_FILE,
    INSPECT_REFERENCE,
    MANIFEST,
    PIECE_BYTES,
    PROTOBUF_LIMIT,
    RECORD,
    REFERENCE,
    TABLES_DIR,
    expanded_name,
)
from .variants import VARIANTS, draft_variants


class StageError(ValueError):
    """A stage cannot run on this directory (an earlier stage is missing, a bad option)."""


@dataclass
class Loaded:
    """The models of a build, loaded once and shared by the stages of ``model-export all``.

    Attributes:
        weights: ``weights.LoadedWeights`` (the Hugging Face reference and its provenance).
        model: Our ``GPT2`` with every output enabled.
    """

    weights: object
    model: object


class BuildDir:
    """Paths and the record of one build directory.

    Args:
        root: The directory (``build/models/<name>``).
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.work = self.root / BUILD_DIR
        self.reference = self.work / REFERENCE
        self.record_path = self.work / RECORD
        self.tables = self.root / TABLES_DIR

    def variant_dir(self, name: str) -> Path:
        """Directory of a shipped variant."""
        return self.root / name

    def variant_graph(self, name: str) -> Path:
        """Graph file of a shipped variant."""
        return self.variant_dir(name) / GRAPH_FILE

    def runnable_graph(self, name: str) -> Path:
        """A graph file onnxruntime-Python can open for a variant: the variant's own graph, or
        for a compact variant its expanded equivalent (``.build/<name>-expanded.onnx``, made
        from the shipped files the way the browser makes it)."""
        from .expand import onnx_graph

        return onnx_graph(self.variant_dir(name), self.work / expanded_name(name))

    def inspect_graph(self, name: str) -> Path:
        """Like ``runnable_graph``, for the variant's inspect graph (``probes.py``); ``reference``
        names the fp32 reference's."""
        from .expand import onnx_graph

        if name == "reference":
            return self.work / INSPECT_REFERENCE
        return onnx_graph(self.variant_dir(name), self.work / expanded_name(f"{name}-inspect"), INSPECT_FILE)

    def built_variants(self) -> list[str]:
        """Variants present on disk, in manifest order."""
        return [name for name in VARIANTS if self.variant_graph(name).is_file()]

    def record(self) -> dict:
        """The build record; StageError if ``build`` has not run here."""
        if not self.record_path.is_file():
            raise StageError(f"{self.root} has no {BUILD_DIR}/{RECORD}; run `model-export build --out {self.root}` first")
        return json.loads(self.record_path.read_text(encoding="utf-8"))

    def update_record(self, **changes) -> dict:
        """Merges top-level keys into the record and writes it."""
        record = self.record() if self.record_path.is_file() else {}
        record.update(changes)
        self.work.mkdir(parents=True, exist_ok=True)
        package.write_json(self.record_path, record)
        return record

    def drop_derived(self, progress=print) -> None:
        """Removes what later stages made from the files a stage is about to replace: ``tables/``
        and the inspect graphs (``model-export tables`` and ``model-export probes`` write them again)."""
        if self.tables.exists():
            shutil.rmtree(self.tables)
            progress(f"removed {self.tables} (made from the files replaced now; run `model-export tables` again)")
        inspect = [p for p in [self.work / INSPECT_REFERENCE, *(self.variant_dir(n) / INSPECT_FILE for n in VARIANTS)] if p.is_file()]
        for path in inspect:
            path.unlink()
        if inspect:
            progress(f"removed {len(inspect)} inspect graphs (made from the graphs replaced now; run `model-export probes` again)")


def config_of(record: dict):
    """The ``GPT2Config`` stored in a record."""
    from .gpt2 import GPT2Config

    return GPT2Config(**record["config"])


def load(source: str, seed: int, progress=print) -> Loaded:
    """Loads the Hugging Face reference and builds our module with every output enabled.

    Raises:
        weights.SourceError: For a bad, broken or unreachable source.
        StageError: For a GPT-2 variant our module does not implement.
    """
    from transformers.utils import logging as hf_logging

    from .gpt2 import GPT2
    from .weights import load_hf

    hf_logging.disable_progress_bar()
    weights = load_hf(source, seed)
    try:
        model = GPT2.from_hf(weights.model, output_attentions=True, output_hidden_states=True)
    except ValueError as err:
        raise StageError(f"{source}: {err}") from err
    config = model.config
    progress(f"{config.n_layer} layers, {config.n_head} heads, n_embd {config.n_embd}, {config.n_positions} positions, vocab {config.vocab_size}")
    return Loaded(weights, model)


def load_for(build: BuildDir, progress=print) -> Loaded:
    """Reloads the models a build directory was made from (same source and seed)."""
    record = build.record()
    return load(record["source"], record.get("seed") or 0, progress)


# ---------------------------------------------------------------- stages


def run_build(build: BuildDir, loaded: Loaded, name: str, tokenizer_src: Path, progress=print) -> dict:
    """Exports the fp32 reference graph and copies the tokenizer files; starts the record.

    The record says whether the weights are random (``validate.weights_verdict``), which
    decides the default tolerances of ``validate`` and the site's random-weights banner.
    """
    import onnx

    from .export import export_onnx, graph_io
    from .tokenizer import check_vocab_size, find_tokenizer, write_tokenizer_files
    from .validate import text_tokens, weights_verdict

    weights, model = loaded.weights, loaded.model
    tokenizer = find_tokenizer(weights.directory, tokenizer_src)
    check_vocab_size(tokenizer, model.config.vocab_size)
    build.work.mkdir(parents=True, exist_ok=True)
    build.drop_derived(progress)
    exported = export_onnx(model, build.reference, external_data=_parameter_bytes(model) > PROTOBUF_LIMIT)
    progress(f"fp32 reference graph: {exported.bytes / 1e6:.1f} MB in {exported.seconds:.1f} s")
    inputs, outputs = graph_io(onnx.load(str(build.reference), load_external_data=False))
    files = write_tokenizer_files(tokenizer, build.root)
    verdict = weights_verdict(model, text_tokens(build.root, model.config.n_positions), weights.random_weights)
    progress(f"{'random' if verdict['random'] else 'trained'} weights: {verdict['reason']}")
    return build.update_record(
        name=name,
        source=weights.source,
        kind=weights.kind,
        seed=weights.seed,
        random_weights=verdict["random"],
        weights=verdict,
        config=model.config.to_dict(),
        inputs=inputs,
        outputs=outputs,
        tokenizer={"origin": tokenizer.origin, "files": {role: p.name for role, p in files.items()}},
        reference={"bytes": exported.bytes, "export_s": round(exported.seconds, 1)},
        variants={},
        validation={},
        speed={},
    )


def _parameter_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def run_quantize(
    build: BuildDir,
    variants: list[str],
    piece_bytes: int = PIECE_BYTES,
    inline_bytes: int = INLINE_BYTES,
    progress=print,
) -> dict:
    """Writes each variant as ``<variant>/model.onnx`` plus pieces; records sizes and times."""
    import onnx

    from .compact import write_compact
    from .quantize import QuantizeResult, operator_counts, quantize_variant
    from .requant import write_requant

    record = build.record()
    if not build.reference.is_file():
        raise StageError(f"{build.reference} is missing; run `model-export build` first")
    reference = onnx.load(str(build.reference))
    build.drop_derived(progress)
    done = dict(record.get("variants", {}))
    for name in variants:
        start = time.perf_counter()
        spec = VARIANTS[name]
        if spec.writer == "compact":  # no new graph: the fp32 one, its weights packed (compact.py)
            files = write_compact(reference, build.variant_dir(name), piece_bytes)
            proto, result = None, QuantizeResult(name, time.perf_counter() - start, operator_counts(reference))
            save_s = 0.0
        elif spec.writer == "requant":  # an int8 graph over another variant's pieces (requant.py)
            source = spec.built_from
            if not (build.variant_dir(source) / INDEX_FILE).is_file():
                raise StageError(f"{name} is built from the {source} pieces; quantize {source} first (--variants {source},{name})")
            graph = write_requant(reference, build.variant_dir(source), build.variant_dir(name))[0]
            files = package.variant_files(build.variant_dir(name))  # its download: graph, index, the source's pieces
            proto = onnx.load(str(graph), load_external_data=False)
            result = QuantizeResult(name, time.perf_counter() - start, operator_counts(proto))
            save_s = 0.0
        else:
            proto, result = quantize_variant(reference, name)
            start = time.perf_counter()
            files = package.save_variant(proto, build.variant_dir(name), piece_bytes, inline_bytes)
            save_s = time.perf_counter() - start
        sizes = [f.stat().st_size for f in files]
        done[name] = {
            "quantize_s": round(result.seconds, 1),
            "save_s": round(save_s, 1),
            "bytes": sum(sizes),
            "files": len(files),
            "largest_file": max(sizes),
            "operators": result.operators,
        }
        progress(f"{name}: {sum(sizes) / 1e6:.1f} MB in {len(files)} file(s), {result.seconds:.1f} s")
        del proto
    return build.update_record(variants=done)


def run_validate(build: BuildDir, loaded: Loaded, tolerances, variants: list[str] | None = None, progress=print):
    """Runs every check; stores rows and metrics in the record (and the manifest, if any).

    Returns:
        The rows (``validate.CheckResult``).
    """
    from .runtime import OrtGPT2
    from .validate import Distributions, check, compare_variant, teacher_forced_logits, text_tokens, validate_reference

    record = build.record()
    start = time.perf_counter()
    rows = []
    manifest_path = build.root / MANIFEST
    if manifest_path.is_file():
        progress("files against manifest.json")
        manifest = package.read_manifest(build.root)
        problems = package.file_mismatches(build.root, manifest) + package.layout_problems(build.root, manifest)
        for problem in problems:
            progress(f"    {problem}")
        rows.append(check("files differing from manifest.json or breaking its layout", len(problems), 0, group="files"))
    rows += validate_reference(loaded.model, loaded.weights.model, build.reference, tolerances, progress)

    metrics = {}
    names = build.built_variants() if variants is None else variants
    if names:
        config = loaded.model.config
        tokens = text_tokens(build.root, config.n_positions)
        reference = Distributions(teacher_forced_logits(OrtGPT2(build.reference, config), tokens)[:-1])
        for name in names:
            progress(f"{name} vs fp32 on the validation text ({len(tokens)} tokens)")
            tol = tolerances.variants.get(name)
            if tol is None:
                raise StageError(f"no tolerances for variant {name!r}")
            variant_rows, metrics[name] = compare_variant(name, OrtGPT2(build.runnable_graph(name), config), reference, tokens, tol)
            metrics[name]["passed"] = all(r.passed for r in variant_rows)
            rows += variant_rows
    seconds = time.perf_counter() - start
    earlier = record.get("validation", {})
    kept = [n for n in build.built_variants() if n not in metrics and n in earlier.get("metrics", {})]
    build.update_record(
        validation={  # variants not compared this time keep their earlier results
            "rows": [r.to_dict() for r in rows] + [r for r in earlier.get("rows", []) if r.get("group") in kept],
            "metrics": {n: earlier["metrics"][n] for n in kept} | metrics,
            "seconds": round(seconds, 1),
        }
    )
    if manifest_path.is_file():
        run_package(build, progress=lambda line: None)
    return rows


def run_tables(build: BuildDir, progress=print) -> list[Path]:
    """Writes ``tables/`` (``tables.write_tables``) from the reference and the variants on disk.

    When ``manifest.json`` exists it is written again, listing the new files.

    Returns:
        The written files, the index first.
    """
    from .tables import WEIGHTS_VARIANT, write_tables

    record = build.record()
    if not build.reference.is_file():
        raise StageError(f"{build.reference} is missing; run `model-export build` first")
    names = build.built_variants()
    if not names:
        raise StageError(f"{build.root} has no variants; run `model-export quantize --out {build.root}` first")
    start = time.perf_counter()
    try:
        files = write_tables(
            build.tables,
            build.reference,
            build.variant_graph(WEIGHTS_VARIANT),
            {name: build.runnable_graph(name) for name in names},
            record["config"],
            record["name"],
        )
    except ValueError as err:
        raise StageError(f"the pipeline tables cannot be written: {err}") from err
    seconds = time.perf_counter() - start
    index = json.loads(files[0].read_text(encoding="utf-8"))
    sources = [e["source"] + ("" if "path" in e else " (error)") for e in index["parity"]["logits"]]
    progress(
        f"{build.tables}: weights from {index['weights']['variant'] or 'nowhere: ' + index['weights']['missing']}; "
        f"parity logits from {', '.join(sources) or index['parity']['missing']} ({seconds:.1f} s)"
    )
    build.update_record(tables={"files": len(files), "bytes": sum(f.stat().st_size for f in files), "seconds": round(seconds, 1)})
    if (build.root / MANIFEST).is_file():
        run_package(build, progress=lambda line: None)
    return files


def run_probes(build: BuildDir, progress=print) -> dict[str, str]:
    """Writes every variant's ``inspect.onnx`` (and the reference's) with ``probes.py``.

    When ``manifest.json`` exists it is written again, listing the new files.

    Returns:
        Per variant, "written" or why it has no inspect graph.
    """
    from .probes import ProbeError, write_inspect_graph

    record = build.record()
    if not build.reference.is_file():
        raise StageError(f"{build.reference} is missing; run `model-export build` first")
    start = time.perf_counter()
    try:
        write_inspect_graph(build.reference, record["config"], build.work / INSPECT_REFERENCE)
    except ProbeError as err:  # every variant is made from it: nothing else could be probed
        raise StageError(f"the reference graph cannot be probed: {err}") from err
    done = {"reference": "written"}
    for name in build.built_variants():
        try:
            write_inspect_graph(build.variant_graph(name), record["config"])
            done[name] = "written"
        except ProbeError as err:
            (build.variant_dir(name) / INSPECT_FILE).unlink(missing_ok=True)
            done[name] = f"none: {err}"
    seconds = time.perf_counter() - start
    progress("inspect graphs: " + ", ".join(f"{n} {'ok' if v == 'written' else v}" for n, v in done.items()) + f" ({seconds:.1f} s)")
    build.update_record(probes={"variants": done, "seconds": round(seconds, 1)})
    if (build.root / MANIFEST).is_file():
        run_package(build, progress=lambda line: None)
    return done


def run_draft(build: BuildDir, loaded: Loaded, blocks: int, tokenizer_src: Path, tolerances_for=None, progress=print) -> list:
    """Writes ``draft/``: the draft model of speculative decoding, made of the model's first
    `blocks` blocks followed by its own final norm and unembedding (an early exit, as in
    LayerSkip), so it shares the tokenizer and needs no training of its own.

    The draft is built in ``.build/draft/`` by the same stages as the model (``build``,
    ``quantize``, ``validate`` with ``tolerances_for(draft_record)``; none when None), then its variants move to
    ``draft/`` and the record notes them for ``package``.

    Returns:
        The draft's validation rows (``validate.CheckResult``), their group prefixed with ``draft``.
    """
    import copy

    n_layer = loaded.model.config.n_layer
    if not 1 <= blocks < n_layer:
        raise StageError(f"a draft of {blocks} blocks needs a model of more than {blocks} blocks; this one has {n_layer}")
    variants = draft_variants(build.built_variants())
    work = BuildDir(build.work / DRAFT_DIR)
    checkpoint = build.work / "draft-checkpoint"
    hf = copy.deepcopy(loaded.weights.model)
    hf.transformer.h = hf.transformer.h[:blocks]  # (then ln_f and the tied unembedding, as in the model)
    hf.config.n_layer = blocks
    hf.save_pretrained(checkpoint)
    del hf
    progress(f"draft: the first {blocks} of {n_layer} blocks")
    draft = load(str(checkpoint), 0, progress)
    record = run_build(work, draft, f"{build.record()['name']}-draft", tokenizer_src, progress)
    run_quantize(work, variants, progress=progress)
    rows = run_validate(work, draft, tolerances_for(record), variants, progress) if tolerances_for is not None else []
    for row in rows:
        row.group = f"draft {row.group}"
    target = build.root / DRAFT_DIR
    if target.exists():
        shutil.rmtree(target)
    target.mkdir()
    for name in variants:
        work.variant_dir(name).rename(target / name)
    metrics = work.record().get("validation", {}).get("metrics", {})
    build.update_record(draft={"blocks": blocks, "config": record["config"], "variants": variants, "metrics": metrics})
    return rows


def draft_entry(build: BuildDir, record: dict) -> dict | None:
    """The manifest's ``draft``: its blocks, config and variants (paths under ``draft/``), or None."""
    draft = record.get("draft")
    if not draft or not (build.root / DRAFT_DIR).is_dir():
        return None
    entries = []
    for name in draft["variants"]:
        spec = VARIANTS[name]
        folder = f"{DRAFT_DIR}/{name}"
        outputs = [o.name for o in _graph_outputs(build.root / folder / GRAPH_FILE)]
        entry = package.variant_entry(
            folder, spec.dtype, list(spec.backends), outputs, build.root, draft["metrics"].get(name), spec.gpu_features, spec.batch_invariant
        )
        entries.append({**entry, "name": name})
    order = package.variant_order(draft["variants"])
    return {
        "blocks": draft["blocks"],
        "config": {key: draft["config"][key] for key in package.CONFIG_KEYS},
        "variants": entries,
        "default_variants": package.first_choices(order),
        "variant_order": order,
    }


def run_package(build: BuildDir, progress=print) -> dict:
    """Writes ``manifest.json`` from the record and the files on disk (the tables when written)."""
    from .tables import table_files

    record = build.record()
    names = build.built_variants()
    if not names:
        raise StageError(f"{build.root} has no variants; run `model-export quantize --out {build.root}` first")
    validation = record.get("validation", {})
    metrics = validation.get("metrics", {})
    entries = []
    for name in names:
        spec = VARIANTS[name]
        outputs = [o.name for o in _graph_outputs(build.variant_graph(name))]
        entries.append(
            package.variant_entry(name, spec.dtype, list(spec.backends), outputs, build.root, metrics.get(name), spec.gpu_features, spec.batch_invariant)
        )
    reference_rows = [r for r in validation.get("rows", []) if r.get("group") in ("torch", "fp32")]
    manifest = package.build_manifest(
        name=record["name"],
        source=record["source"],
        seed=record.get("seed"),
        random_weights=record["random_weights"],
        config=record["config"],
        inputs=record["inputs"],
        outputs=record["outputs"],
        variants=entries,
        tokenizer={role: build.root / file for role, file in record["tokenizer"]["files"].items()},
        validation=reference_rows,
        root=build.root,
        tables=table_files(build.tables),
        draft=draft_entry(build, record),
    )
    path = package.write_manifest(build.root, manifest)
    progress(f"{path}: {len(entries)} variant(s), " + ", ".join(f"{v['name']} {v['bytes'] / 1e6:.1f} MB" for v in entries))
    return manifest


def _graph_outputs(path: Path):
    import onnx

    return onnx.load(str(path), load_external_data=False).graph.output


def run_report(
    build: BuildDir,
    runs: int = 5,
    new_tokens: int = 64,
    threads: int | None = None,
    attention_cost: bool = False,
    attention_repeats: int = 5,
    progress=print,
) -> dict:
    """Measures decoding speed (and optionally the attention-output cost); writes the reports.

    The prompt and ``new_tokens`` are cut to fit the model's context (``measure.speed_lengths``);
    the record keeps what ran.
    """
    from .measure import attention_cost as measure_attention_cost
    from .measure import speed_lengths, speed_table
    from .report import write_reports

    record = build.record()
    config = config_of(record)
    paths = {"fp32": build.reference, **{name: build.runnable_graph(name) for name in build.built_variants()}}
    prompt, fitted = speed_lengths(config, new_tokens)
    if fitted < new_tokens:
        progress(f"{fitted} new tokens per run instead of {new_tokens}: the model has {config.n_positions} positions")
    speed = speed_table(paths, config, runs, fitted, threads, progress)
    changes = {"speed": {"runs": runs, "prompt": prompt, "new_tokens": fitted, "threads": threads, "variants": speed}}
    if attention_cost:
        changes["attention_cost"] = measure_attention_cost(build.reference, config, build.work / "attention-cost", attention_repeats, 1, progress)
    record = build.update_record(**changes)
    manifest = package.read_manifest(build.root) if (build.root / MANIFEST).is_file() else None
    return write_reports(build.root, record, manifest)


def replace_directory(new: Path, final: Path) -> None:
    """Moves a finished build to its final place, replacing an older build there.

    Two renames: the old directory is out of the way for an instant only, never half written.
    """
    final = Path(final)
    old = final.with_name(f".{final.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    Path(new).rename(final)
    if old.exists():
        shutil.rmtree(old)
