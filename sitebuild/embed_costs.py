"""What each runtime costs a page that embeds a widget: the download sizes (raw and gzip) of
Pyodide with NumPy and the demos, of onnxruntime-web, of the tokenizer and of the model variant
each backend loads, measured on the files this build serves.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from mkdocs.exceptions import PluginError

from model_export.layout import MANIFEST
from sitebuild.assets import build_demos_wheel, project_version
from sitebuild.paths import MODELS, VENDOR


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB"


_gzip_sizes: dict[tuple, int] = {}


def _gzip_size(path: Path) -> int:
    """Bytes of the file gzip-compressed (remembered across rebuilds of `mkdocs serve`)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _gzip_sizes:
        _gzip_sizes[key] = len(gzip.compress(path.read_bytes(), compresslevel=6, mtime=0))
    return _gzip_sizes[key]


def choose_variant(manifest: dict, backend: str) -> dict | None:
    """The variant the runtime loads on a backend by default (as runtime/variants.js chooses:
    the manifest's default, then its ``variant_order``, then the first that runs there); the
    WebGPU ``shader-f16`` check is the browser's and not made here."""
    usable = [v for v in manifest.get("variants", []) if backend in v.get("backends", [])]
    if not usable:
        return None
    by_name = {v["name"]: v for v in usable}
    preferred = [(manifest.get("default_variants") or {}).get(backend), *(manifest.get("variant_order") or {}).get(backend, [])]
    return next((by_name[name] for name in preferred if name in by_name), usable[0])


def runtime_costs(model: str) -> list[dict]:
    """Download sizes of what a page fetches for each runtime (from build/vendor and the model)."""
    pyodide = VENDOR / "pyodide"
    ort = VENDOR / "ort"
    if not pyodide.is_dir() or not ort.is_dir():
        raise PluginError("build/vendor is missing: run `make assets` (sitebuild/assets.py) first")
    with tempfile.TemporaryDirectory() as tmp:
        demos = build_demos_wheel(Path(tmp), project_version())
        python_files = [pyodide / n for n in ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")]
        python_files += sorted(pyodide.glob("numpy-*.whl")) + [demos]
        python = {
            "what": "Python (Pyodide 0.27 with NumPy and the demos package)",
            "bytes": sum(p.stat().st_size for p in python_files),
            "gzip": sum(_gzip_size(p) for p in python_files),
        }
    ort_files = sorted(p for p in ort.iterdir() if p.is_file())
    rows = [
        python,
        {"what": "ONNX Runtime Web (WebAssembly and WebGPU)", "bytes": sum(p.stat().st_size for p in ort_files), "gzip": sum(_gzip_size(p) for p in ort_files)},
    ]
    manifest_path = MODELS / model / MANIFEST
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        tokenizer = sum(manifest.get("tokenizer", {}).get(role, {}).get("bytes", 0) for role in ("vocab", "merges"))
        rows.append(
            {
                "what": "GPT-2 tokenizer files (vocab.json, merges.txt)",
                "bytes": tokenizer,
                "gzip": sum(_gzip_size(MODELS / model / manifest["tokenizer"][r]["path"]) for r in ("vocab", "merges") if r in manifest.get("tokenizer", {})),
            }
        )
        seen = set()
        for backend, label in (("wasm", "WebAssembly"), ("webgpu", "WebGPU")):
            variant = choose_variant(manifest, backend)
            if variant is None or variant["name"] in seen:
                continue
            seen.add(variant["name"])
            size = sum(f["bytes"] for f in variant["files"])
            rows.append(
                {
                    "what": f"Model “{manifest.get('name', model)}”, {variant['name']} weights "
                    f"(loaded on {label}"
                    + (" and WebGPU" if backend == "wasm" and choose_variant(manifest, "webgpu") is variant else "")
                    + f"; {len(variant['files'])} file{'s' if len(variant['files']) != 1 else ''})",
                    "bytes": size,
                    "gzip": None,
                }
            )
    return rows


def costs_markdown(model: str) -> str:
    rows = runtime_costs(model)
    lines = ["| What is downloaded | Size | Compressed (gzip) |", "|---|---:|---:|"]
    for row in rows:
        gz = _mb(row["gzip"]) if row["gzip"] is not None else "about the same"
        lines.append(f"| {row['what']} | {_mb(row['bytes'])} | {gz} |")
    return "\n".join(lines) + (f"\n\n<small>Measured on the files of this build (model `{model}`).</small>\n")
