"""MkDocs hooks: put the browser runtime, the widgets and the model into the built site.

After MkDocs has written the pages, this copies

* ``build/vendor/`` (Pyodide + NumPy + the demos wheel, onnxruntime-web, KaTeX,
  gathered by ``site_src/assets.py``) to ``site/assets/vendor/``;
* ``site_src/runtime``, ``widgets`` and ``styles`` to ``site/assets/tx/``;
* ``build/models/<extra.tx_model>/`` to ``site/models/<name>/`` and writes
  ``site/models/index.json`` naming the default model.

It also serves a tiny inline favicon so browsers never request a missing one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
SITE_SRC = ROOT / "site_src"
VENDOR = ROOT / "build" / "vendor"
MODELS = ROOT / "build" / "models"
BROWSER_DIRS = ("runtime", "widgets", "styles")
FAVICON = '<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 viewBox=%220 0 16 16%22%3E%3Crect width=%2216%22 height=%2216%22 rx=%223%22 fill=%22%233f51b5%22/%3E%3C/svg%3E">'


def _require(path: Path, hint: str) -> Path:
    if not path.exists():
        raise PluginError(f"{path.relative_to(ROOT)} is missing: {hint}")
    return path


def _copy_tree(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.py", ".*"))


def on_post_page(output: str, page, config) -> str:
    """Add the inline favicon to every page."""
    return output.replace("</head>", FAVICON + "</head>", 1)


def on_post_build(config) -> None:
    """Copy runtime files, widgets and the model into the site directory."""
    site = Path(config["site_dir"])
    vendor = _require(VENDOR, "run `make assets` (site_src/assets.py) first")
    _copy_tree(vendor, site / "assets" / "vendor")
    for name in BROWSER_DIRS:
        _copy_tree(SITE_SRC / name, site / "assets" / "tx" / name)

    model = config["extra"]["tx_model"]
    model_dir = _require(MODELS / model, f"run `make model MODEL={model}` first")
    manifest = json.loads(_require(model_dir / "manifest.json", f"rebuild with `make model MODEL={model}`").read_text())
    _copy_tree(model_dir, site / "models" / model)
    (site / "models" / "index.json").write_text(json.dumps({"default": model, "models": {model: {"config": manifest["config"]}}}))
