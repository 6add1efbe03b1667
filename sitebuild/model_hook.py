"""MkDocs hooks for the served model: its export report, a random-weights notice, a clean copy.

* ``on_page_markdown``: a page containing ``<!-- model-export:report -->`` gets, in its place, the
  served model's ``report.md`` (written by ``model-export report``), its headings moved one
  level down so they sit under the page's own section.
* ``on_post_page``: when the served model has random weights (a ``tiny`` or ``small-random``
  preset), every page shows a banner saying so at the top.
* ``on_post_build`` (after ``hooks.py`` has copied the model): makes sure the build's private
  ``.build/`` directory (the fp32 reference graph) did not reach the site and that no served
  file is too large for GitHub Pages.

The served model is ``build/models/<extra.tx_model>/``, as in ``hooks.py``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from model_export.layout import BUILD_DIR, MANIFEST, PAGES_FILE_LIMIT
from sitebuild.paths import MODELS

MARKER = "<!-- model-export:report -->"
ANNOUNCE = '<div data-md-component="announce">'


def _model_dir(config) -> Path:
    return MODELS / config["extra"]["tx_model"]


def _manifest(config) -> dict | None:
    path = _model_dir(config) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def demote_headings(markdown: str, levels: int = 1) -> str:
    """Adds ``levels`` ``#`` to every ATX heading outside fenced code blocks."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" * levels + line
        lines.append(line)
    return "\n".join(lines) + "\n"


def report_markdown(config) -> str:
    """The served model's report, or a sentence saying how to produce it."""
    name = config["extra"]["tx_model"]
    path = _model_dir(config) / "report.md"
    if not path.is_file():
        return (
            f'!!! note "No export report for `{name}`"\n'
            f"    `build/models/{name}/report.md` is missing. Rebuild the model with "
            f"`make model MODEL={name}` (it runs `model-export all`).\n"
        )
    return demote_headings(path.read_text(encoding="utf-8"))


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace the report marker with the served model's report."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, report_markdown(config))


def random_weights_banner(manifest: dict) -> str:
    """The banner shown on every page when the served model's weights are random."""
    name = html.escape(str(manifest.get("name", "")))
    source = html.escape(str(manifest.get("source", "")))
    return (
        '<aside class="md-banner md-banner--warning" role="note" data-tx-random-weights>'
        '<div class="md-banner__inner md-grid md-typeset">'
        f"<strong>Random weights.</strong> The GPT-2 demos on this site run <code>{name}</code> "
        f"(<code>{source}</code>), a model with GPT-2's code and vocabulary but untrained, random "
        "weights: its predictions are noise. Build the site with <code>make serve MODEL=gpt2</code> "
        "where the Hugging Face Hub is reachable to see real GPT-2."
        "</div></aside>"
    )


def on_post_page(output: str, page, config) -> str:
    """Put the random-weights banner at the top of every page when it applies."""
    manifest = _manifest(config)
    if not manifest or not manifest.get("random_weights"):
        return output
    return output.replace(ANNOUNCE, ANNOUNCE + random_weights_banner(manifest), 1)


@event_priority(-100)  # after hooks.py has copied build/models/<name> into the site
def on_post_build(config) -> None:
    """Keep the private build files out of the site; refuse files GitHub Pages would reject."""
    served = Path(config["site_dir"]) / "models" / config["extra"]["tx_model"]
    if not served.is_dir():
        return
    private = served / BUILD_DIR
    if private.exists():
        shutil.rmtree(private)
    too_big = [p for p in served.rglob("*") if p.is_file() and p.stat().st_size >= PAGES_FILE_LIMIT]
    if too_big:
        names = ", ".join(f"{p.relative_to(served)} ({p.stat().st_size / 1e6:.0f} MB)" for p in too_big)
        raise PluginError(f"files over GitHub Pages' 100 MB limit in the served model: {names}")
