"""MkDocs hook: the site's offline copy (service worker, versioned cache, what to precache).

After every other hook has written its files (this ``on_post_build`` runs last), this

* lists every file of the built site and hashes its content; the **build version** is a
  short sha256 of those (path, content hash) pairs and of ``runtime/sw.js``, so it changes
  exactly when a served file changes (the two files written here, which carry the
  version, are left out);
* sorts the files into **groups** (``GROUPS``): ``pages`` (every page and the small
  assets all pages need: stored when the service worker installs), ``python`` (Pyodide,
  NumPy and the demos wheel), ``model-runtime`` (onnxruntime-web) and ``model-data``
  (tokenizer text, the figures' weight index and parity logits, the export report), the last three stored
  when first used or with the offline page's button. The model's weight files (each
  variant's folder) are no group: ``runtime/download.js`` already keeps them, checked
  against their sha256, in its own cache (``tx-models-v1``), so the service worker lets
  them through untouched (``passThrough``) instead of storing them twice;
* writes ``site/<SW_FILE>`` (at the root, so that its scope covers every page):
  ``self.TX_OFFLINE = {...};`` then ``site_src/runtime/sw.js``;
* writes ``site/<BUILD_MODULE>`` (``export const OFFLINE = {...}``) for the ``<tx-offline>``
  widget, and puts the same object in front of ``<REGISTER_SCRIPT>``
  (``window.TX_OFFLINE = {...}``), the classic script every page loads to register the
  service worker.

The cache is ``CACHE_PREFIX + version``; the service worker deletes caches with the prefix
and another version when it activates, so a new build replaces stale files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath

from mkdocs.plugins import event_priority

from sitebuild.paths import SITE_SRC

SW_SOURCE = SITE_SRC / "runtime" / "sw.js"
# The service worker's file name, at the site root (one owner: pages and widget get it from here).
SW_FILE = "sw.js"
# Name prefix of the service worker's caches; the build version follows it.
CACHE_PREFIX = "tx-site-"
# The ES module with the build's offline facts (read by widgets/tx-offline.js).
BUILD_MODULE = "assets/tx/runtime/offline-build.js"
# The classic script that registers the service worker (listed in mkdocs.yml's extra_javascript).
REGISTER_SCRIPT = "assets/tx/runtime/sw-register.js"
# Files written here with the version in them (left out of the version's hash; the
# registration script is hashed as copied, before its header is added).
GENERATED = (SW_FILE, BUILD_MODULE)

# Group name -> (label for the reader, folder prefixes, triggers); "pages" takes what no other
# group does. A request for a trigger (the worker script that starts a runtime, the model
# index that every model widget reads first) makes the service worker store the whole group:
# the runtimes load in Web Workers, which may have started before it controlled the page.
# A page that starts a runtime also records its trigger (sw-register.js), so that the worker
# stores the group once it is active even when the reader has left that page by then. The
# model's data goes with the model: the figures that read its weights also read its tables.
GROUPS = {
    "pages": ("Pages, search and styles", (), ()),
    "python": ("Python runtime (Pyodide, NumPy, demos)", ("assets/vendor/pyodide/",), ("assets/tx/runtime/python-worker.js",)),
    "model-runtime": ("Model runtime (ONNX Runtime Web)", ("assets/vendor/ort/",), ("assets/tx/runtime/model-worker.js", "models/index.json")),
    "model-data": ("Model data (tokenizer, figures' index)", ("models/",), ("assets/tx/runtime/model-worker.js", "models/index.json")),
}
# Files that no group stores: source maps (only developer tools read them), the font
# formats a browser with WOFF2 never asks for (cached on use if one does).
SKIPPED_SUFFIXES = (".map", ".ttf", ".woff")
HASH_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def site_files(site: Path) -> dict[str, tuple[int, str]]:
    """Every served file of the site but the generated offline files: path -> (bytes, sha256)."""
    out = {}
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if path.is_file() and rel not in GENERATED:
            out[rel] = (path.stat().st_size, file_sha256(path))
    return out


def build_version(files: dict[str, tuple[int, str]], sw_source: bytes = b"") -> str:
    """Short hash of the site's paths and contents and of the service worker's source.

    It changes exactly when a served file changes (a new service worker is then installed).
    """
    digest = hashlib.sha256(sw_source)
    for rel in sorted(files):
        digest.update(f"{rel}\0{files[rel][1]}\n".encode())
    return digest.hexdigest()[:16]


def url_of(rel: str) -> str:
    """The URL (relative to the site root) a browser requests for a file: ``a/index.html`` -> ``a/``."""
    if rel == "index.html":
        return "./"
    return rel.removesuffix("index.html") if rel.endswith("/index.html") else rel


def model_weight_prefixes(site: Path) -> list[str]:
    """Folders of the model's variants and its draft's (``models/<name>/<variant>/``,
    ``models/<name>/draft/<variant>/``), which download.js caches itself."""
    prefixes = set()
    for manifest_path in sorted((site / "models").glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        model = manifest_path.parent.name
        for variant in manifest.get("variants", []) + manifest.get("draft", {}).get("variants", []):
            for f in variant.get("files", []):
                prefixes.add(f"models/{model}/{PurePosixPath(f['path']).parent}/")
    return sorted(prefixes)


def group_of(rel: str, pass_through: list[str]) -> str | None:
    """The group a site file belongs to, or None when no group stores it."""
    if rel.endswith(SKIPPED_SUFFIXES) or any(rel.startswith(p) for p in pass_through):
        return None
    if rel == "models/index.json" or (rel.startswith("models/") and rel.count("/") == 2 and rel.endswith("/manifest.json")):
        return "pages"  # small, and every model widget reads them first
    for name, (_, prefixes, _) in GROUPS.items():
        if any(rel.startswith(p) for p in prefixes):
            return name
    return "pages"


def offline_plan(site: Path) -> dict:
    """What the service worker and the offline widget need to know about this build."""
    files = site_files(site)
    version = build_version(files, SW_SOURCE.read_bytes())
    pass_through = model_weight_prefixes(site)
    groups = {name: {"label": label, "files": [], "bytes": 0, "triggers": list(triggers)} for name, (label, _, triggers) in GROUPS.items()}
    for rel, (size, _) in files.items():
        name = group_of(rel, pass_through)
        if name is not None:
            groups[name]["files"].append([url_of(rel), size])
            groups[name]["bytes"] += size
    # The offline page imports the build module: stored with the pages (its size, which it
    # holds itself, is filled in by `build_module`).
    groups["pages"]["files"].append([BUILD_MODULE, 0])
    return {
        "version": version,
        "cache": CACHE_PREFIX + version,
        "cachePrefix": CACHE_PREFIX,
        "swFile": SW_FILE,
        "precache": "pages",
        "passThrough": pass_through,
        "pages": sum(1 for rel in files if rel.endswith(".html")),
        "groups": groups,
    }


HEADER = "// Generated by sitebuild/offline_hook.py: this build's offline facts.\n"


def build_module(plan: dict) -> str:
    """The text of ``BUILD_MODULE``. The plan lists the module among the pages with its size,
    which the text itself holds: the size is updated in `plan` until it is the text's own."""
    entry = next(f for f in plan["groups"]["pages"]["files"] if f[0] == BUILD_MODULE)
    while True:
        text = f"{HEADER}export const OFFLINE = {json.dumps(plan, separators=(',', ':'))};\n"
        size = len(text.encode("utf-8"))
        if size == entry[1]:
            return text
        plan["groups"]["pages"]["bytes"] += size - entry[1]
        entry[1] = size


def write_offline_files(site: Path, plan: dict) -> None:
    """Write the build module, the service worker and the registration script's header."""
    module = build_module(plan)
    facts = json.dumps(plan, separators=(",", ":"))
    (site / BUILD_MODULE).write_text(module, encoding="utf-8")
    (site / SW_FILE).write_text(f"{HEADER}self.TX_OFFLINE = {facts};\n{SW_SOURCE.read_text(encoding='utf-8')}", encoding="utf-8")
    register = site / REGISTER_SCRIPT
    register.write_text(
        f"{HEADER}window.TX_OFFLINE = {{swFile: {json.dumps(SW_FILE)}, version: {json.dumps(plan['version'])}}};\n" + register.read_text(encoding="utf-8"),
        encoding="utf-8",
    )


@event_priority(-100)  # after every other hook has written its files
def on_post_build(config) -> None:
    """Plan the offline copy of the site just built and write the service worker."""
    site = Path(config["site_dir"])
    write_offline_files(site, offline_plan(site))
