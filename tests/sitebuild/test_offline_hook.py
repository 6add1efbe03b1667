"""The build side of the offline copy (sitebuild/offline_hook.py): version, groups, files written."""

from __future__ import annotations

import json
import re
from pathlib import Path

from site_under_test import SITE

from sitebuild import offline_hook
from sitebuild.offline_hook import (
    BUILD_MODULE,
    CACHE_PREFIX,
    REGISTER_SCRIPT,
    SW_FILE,
    build_version,
    offline_plan,
    site_files,
    url_of,
    write_offline_files,
)

ROOT = Path(__file__).resolve().parents[2]


def make_site(root: Path) -> Path:
    """A small built site: pages, assets, runtimes and a model with two variants."""
    files = {
        "index.html": "<h1>home</h1>",
        "404.html": "missing",
        "offline/index.html": "<h1>offline</h1>",
        "search/search_index.json": "{}",
        "assets/tx/styles/tx.css": "body{}",
        "assets/javascripts/bundle.min.js.map": "{}",
        "assets/vendor/katex/fonts/a.woff2": "w2",
        "assets/vendor/katex/fonts/a.ttf": "ttf",
        "assets/vendor/pyodide/pyodide.asm.wasm": "py" * 50,
        "assets/vendor/ort/ort.wasm": "ort" * 40,
        "models/index.json": json.dumps({"default": "tiny"}),
        "models/tiny/merges.txt": "merges",
        "models/tiny/tables/parity/torch.f32": "tbl",
        "models/tiny/q4/model.onnx": "w4",
        "models/tiny/q8/model.onnx": "w8",
        "models/tiny/q8/expand.json": "{}",
        REGISTER_SCRIPT: "// register\n",
    }
    manifest = {
        "variants": [{"name": "q4", "files": [{"path": "q4/model.onnx"}]}, {"name": "q8", "files": [{"path": "q8/model.onnx"}, {"path": "q8/expand.json"}]}]
    }
    files["models/tiny/manifest.json"] = json.dumps(manifest)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_urls_are_what_the_browser_requests():
    assert url_of("index.html") == "./"
    assert url_of("labs/bpe/index.html") == "labs/bpe/"
    assert url_of("404.html") == "404.html"
    assert url_of("assets/x.js") == "assets/x.js"


def test_version_changes_with_content_and_paths_only(tmp_path):
    site = make_site(tmp_path)
    first = build_version(site_files(site))
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert build_version(site_files(site)) == first  # deterministic
    # The files that carry the version do not feed it (else it could never be stable).
    write_offline_files(site, offline_plan(site))
    (site / REGISTER_SCRIPT).write_text("// register\n")  # as hooks.py copies it again
    assert build_version(site_files(site)) == first
    (site / "offline/index.html").write_text("<h1>offline, edited</h1>")
    second = build_version(site_files(site))
    assert second != first
    (site / "offline/index.html").rename(site / "offline/other.html")
    assert build_version(site_files(site)) not in (first, second)
    assert build_version(site_files(site), b"another service worker") != build_version(site_files(site))


def test_groups_precache_list_and_model_folders(tmp_path):
    site = make_site(tmp_path)
    plan = offline_plan(site)
    assert plan["cache"] == CACHE_PREFIX + plan["version"]
    assert plan["swFile"] == SW_FILE and plan["precache"] == "pages" and plan["pages"] == 3
    paths = {name: [p for p, _ in g["files"]] for name, g in plan["groups"].items()}
    assert sorted(paths["pages"]) == sorted(
        [
            "./",
            "404.html",
            "offline/",
            "search/search_index.json",
            "assets/tx/styles/tx.css",
            "assets/vendor/katex/fonts/a.woff2",
            "models/index.json",
            "models/tiny/manifest.json",
            REGISTER_SCRIPT,
            BUILD_MODULE,
        ]
    )
    assert paths["python"] == ["assets/vendor/pyodide/pyodide.asm.wasm"]
    assert paths["model-runtime"] == ["assets/vendor/ort/ort.wasm"]
    assert sorted(paths["model-data"]) == ["models/tiny/merges.txt", "models/tiny/tables/parity/torch.f32"]
    # download.js keeps the variants' files in its own cache: the worker lets them through.
    assert plan["passThrough"] == ["models/tiny/q4/", "models/tiny/q8/"]
    listed = {p for files in paths.values() for p in files}
    assert not any(p.startswith(("models/tiny/q4/", "models/tiny/q8/")) or p.endswith((".map", ".ttf")) for p in listed)
    assert plan["groups"]["python"]["bytes"] == 100 and plan["groups"]["model-runtime"]["bytes"] == 120
    assert "assets/tx/runtime/python-worker.js" in plan["groups"]["python"]["triggers"]
    # The model's data goes with the model: the same triggers.
    assert plan["groups"]["model-data"]["triggers"] == plan["groups"]["model-runtime"]["triggers"]


def test_written_files_share_one_set_of_facts(tmp_path):
    site = make_site(tmp_path)
    plan = offline_plan(site)
    write_offline_files(site, plan)
    sw = (site / SW_FILE).read_text()
    facts = json.loads(re.search(r"^self\.TX_OFFLINE = (\{.*\});$", sw, re.M).group(1))
    assert facts == plan
    assert sw.endswith(offline_hook.SW_SOURCE.read_text())
    module = (site / BUILD_MODULE).read_text()
    assert json.loads(re.search(r"^export const OFFLINE = (\{.*\});$", module, re.M).group(1)) == plan
    # The module lists itself with the pages, at its own size (the offline page imports it).
    pages = plan["groups"]["pages"]
    assert [BUILD_MODULE, (site / BUILD_MODULE).stat().st_size] in pages["files"]
    assert pages["bytes"] == sum(size for _, size in pages["files"])
    register = (site / REGISTER_SCRIPT).read_text()
    assert f'window.TX_OFFLINE = {{swFile: "{SW_FILE}", version: "{plan["version"]}"}};' in register
    assert register.endswith("// register\n")


def test_the_built_site_has_the_worker_and_its_facts():
    """When a site is built (TX_SITE, default site/), its sw.js and offline-build.js agree."""
    site = SITE
    if not (site / BUILD_MODULE).is_file():
        import pytest

        pytest.skip("site/ is not built with the offline hook")
    facts = json.loads(re.search(r"^export const OFFLINE = (\{.*\});$", (site / BUILD_MODULE).read_text(), re.M).group(1))
    assert f"self.TX_OFFLINE = {json.dumps(facts, separators=(',', ':'))};" in (site / SW_FILE).read_text()
    pages = {p for p, _ in facts["groups"]["pages"]["files"]}
    assert "./" in pages and "offline/" in pages
