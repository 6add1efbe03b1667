"""MkDocs hooks: the textbook's widgets for other people's pages (issue "embed").

After the site is written this

* copies ``site_src/embed/`` to ``site/assets/tx/embed/``: ``v1/widgets.js`` (the one script
  a course page includes), ``v1/frame.js`` and ``v1/frame.css`` (the iframe pages),
  ``v1/builder.js`` (the snippet builder on the "Embed in your course" page);
* writes ``site/assets/tx/embed/v1/catalog.js``: every widget's tag, module, attributes
  (read from the "Attributes" list in the widget file's doc comment), the runtime it needs
  (Python or the model) and the page that explains it;
* writes one bare page per widget, ``site/embed/<name>/index.html`` (``<name>`` is the tag
  without ``tx-``), that shows that widget alone, sized to its content, and an index of
  them at ``site/embed/index.html``.

Before that, on the "Embed in your course" page it replaces ``<!-- tx:widget-catalog -->``
by a table of the widgets and their attributes, and ``<!-- tx:embed-costs -->`` by the
download sizes of each runtime, measured on the files this build serves.

The widget list comes from the ``tx-*.js`` files (``widget_docs.py`` reads them; the sizes come
from ``embed_costs.py``), so a new widget is embeddable without touching this file.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from dataclasses import asdict
from pathlib import Path

from sitebuild.embed_costs import costs_markdown
from sitebuild.widget_docs import EMBED_SRC, Attribute, Widget, build_id, read_widgets

API_VERSION = "v1"
EMBED_PAGE = "embed-in-your-course.md"
CATALOG_MARKER = "<!-- tx:widget-catalog -->"
COSTS_MARKER = "<!-- tx:embed-costs -->"
RESERVED_PARAMETERS = ("theme",)
# How the embedding page writes this site's address in its snippets.
SITE_PLACEHOLDER = "https://SITE"
# Same inline icon as hooks.py, so the bare pages never request a missing favicon.
FAVICON = (
    '<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 '
    'viewBox=%220 0 16 16%22%3E%3Crect width=%2216%22 height=%2216%22 rx=%223%22 fill=%22%233f51b5%22/%3E%3C/svg%3E">'
)

_pages_by_tag: dict[str, dict] = {}


def _without_boolean_note(description: str) -> str:
    """ "boolean attribute: start with ..." -> "start with ..." (the table says boolean itself)."""
    return re.sub(r"^(boolean attribute|present)\s*:\s*", "", description)


def _cell(text: str) -> str:
    """Text for a Markdown table cell: HTML-escaped, no pipes, code spans kept."""
    return html.escape(text, quote=False).replace("|", "&#124;")


def catalog_markdown(widgets: list[Widget]) -> str:
    needs = {"python": "Python", "model": "the model", "python+model": "Python and the model", "none": "nothing more"}
    lines = ["| Widget | What it shows | Loads | Attributes (all optional) | Explained in |", "|---|---|---|---|---|"]
    for w in widgets:
        groups: list[list[Attribute]] = []  # attributes described together (x-min, x-max)
        for a in w.attributes:
            if groups and groups[-1][0].description == a.description:
                groups[-1].append(a)
            else:
                groups.append([a])
        attrs = (
            "<br>".join(
                ", ".join(f"`{a.name}`" for a in group) + (" (boolean)" if group[0].boolean else "") + f": {_cell(_without_boolean_note(group[0].description))}"
                for group in groups
            )
            or "none"
        )
        page = f"[{w.page['title']}]({w.page['src']})" if w.page else ""
        tag = f'<code style="white-space: nowrap">&lt;{w.tag}&gt;</code>'
        lines.append(f"| {tag} | {_cell(w.summary)} | {needs[w.runtime]} | {attrs} | {page} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- bare pages


FRAME_PAGE = """<!doctype html>
<html lang="en" data-widget="{tag}" data-theme="auto">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{title} · {site_name}</title>
{favicon}
<link rel="stylesheet" href="{root}assets/tx/embed/{api}/frame.css">
<script>
  // Theme before the first paint: ?theme=light|dark|auto (auto follows the reader's system).
  (function () {{
    var theme = new URLSearchParams(location.search).get("theme");
    if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  }})();
</script>
<script type="module" src="{root}assets/tx/embed/{api}/frame.js"></script>
</head>
<body>
<main id="tx-frame"><noscript>This interactive widget needs JavaScript.</noscript></main>
<p class="tx-credit"><a href="{link}" target="_blank" rel="noopener">{credit}</a></p>
</body>
</html>
"""

INDEX_PAGE = """<!doctype html>
<html lang="en" data-theme="auto">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Widgets for iframes · {site_name}</title>
{favicon}
<link rel="stylesheet" href="../assets/tx/embed/{api}/frame.css">
</head>
<body class="tx-index">
<main>
<h1>Widgets for iframes</h1>
<p>Each page below shows one widget of <a href="../">{site_name}</a> and nothing else, for an
<code>&lt;iframe&gt;</code> in your own course page. How to embed them:
<a href="../{embed_page}">Embed in your course</a>.</p>
<ul>
{items}
</ul>
</main>
</body>
</html>
"""


def frame_page(widget: Widget, site_name: str) -> str:
    root = "../../"
    if widget.page:
        link, credit = root + widget.page["url"], f"{widget.page['title']} · {site_name}"
    else:
        link, credit = root, site_name
    return FRAME_PAGE.format(
        tag=widget.tag,
        title=html.escape(widget.summary.rstrip(".")),
        site_name=html.escape(site_name),
        favicon=FAVICON,
        root=root,
        api=API_VERSION,
        link=html.escape(link),
        credit=html.escape(credit),
    )


def index_page(widgets: list[Widget], site_name: str) -> str:
    items = "\n".join(f'<li><a href="{w.name}/"><code>{w.name}/</code></a>: {html.escape(w.summary)}</li>' for w in widgets)
    return INDEX_PAGE.format(site_name=html.escape(site_name), favicon=FAVICON, api=API_VERSION, items=items, embed_page=EMBED_PAGE.removesuffix(".md") + "/")


def catalog_module(widgets: list[Widget]) -> str:
    entries = {
        w.tag: {
            "name": w.name,
            "module": w.module,
            "summary": w.summary,
            "runtime": w.runtime,
            "attributes": [asdict(a) for a in w.attributes],
            "page": w.page,
        }
        for w in widgets
    }
    return (
        "// Generated by sitebuild/embed_hook.py from the widget files: do not edit.\n"
        f"export const VERSION = {json.dumps(API_VERSION)};\n"
        f"export const BUILD = {json.dumps(build_id())};\n"
        f"export const RESERVED = {json.dumps(list(RESERVED_PARAMETERS))};\n"
        f"export const WIDGETS = {json.dumps(entries, indent=1, ensure_ascii=False)};\n"
    )


# ---------------------------------------------------------------- MkDocs events


def on_nav(nav, config, files):
    """Note the page that explains each widget (the iframe pages link back to it).

    A lab page comes first, then a page named after the widget (``sampling.md`` for
    ``<tx-sampling>``), then the first page in the navigation that shows it.
    """
    _pages_by_tag.clear()
    ranked: dict[str, tuple] = {}
    for order, page in enumerate(nav.pages):
        path = Path(page.file.abs_src_path)
        if not path.is_file() or page.file.src_uri == EMBED_PAGE:
            continue
        text = path.read_text(encoding="utf-8")
        for tag in set(re.findall(r"^\s*<(tx-[a-z0-9-]+)[\s>]", text, re.M)):
            uri = page.file.src_uri
            rank = (not uri.startswith("labs/"), Path(uri).stem != tag.removeprefix("tx-"), order)
            if tag not in ranked or rank < ranked[tag]:
                ranked[tag] = rank
                _pages_by_tag[tag] = {"title": page.title or page.file.name, "url": page.file.url, "src": uri}
    return nav


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Fill in the widget table and the measured sizes on the embedding page."""
    if page.file.src_uri != EMBED_PAGE:
        return markdown
    if CATALOG_MARKER in markdown:
        widgets = read_widgets(_pages_by_tag)
        for w in widgets:  # links relative to this page
            if w.page:
                w.page = {**w.page, "src": _relative_src(w.page["src"], page.file.src_uri)}
        markdown = markdown.replace(CATALOG_MARKER, catalog_markdown(widgets))
    if COSTS_MARKER in markdown:
        markdown = markdown.replace(COSTS_MARKER, costs_markdown(config["extra"]["tx_model"]))
    if config.get("site_url"):  # the snippets show the real address (builder.js does it otherwise)
        root = config["site_url"].rstrip("/") + "/"
        origin = re.match(r"[a-z]+://[^/]+", root).group(0)
        markdown = markdown.replace(SITE_PLACEHOLDER + "/", root).replace(SITE_PLACEHOLDER, origin)
    return markdown


def _relative_src(target: str, source: str) -> str:
    """A Markdown link from one docs file to another (MkDocs resolves and checks it)."""
    depth = source.count("/")
    return "../" * depth + target


def on_post_build(config) -> None:
    """Copy the embedding scripts, write the widget catalog and one bare page per widget."""
    site = Path(config["site_dir"])
    dst = site / "assets" / "tx" / "embed"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(EMBED_SRC, dst, ignore=shutil.ignore_patterns("__pycache__", "*.py", ".*"))
    widgets = read_widgets(_pages_by_tag)
    catalog = catalog_module(widgets)
    for version in dst.glob("v[0-9]*"):  # every published version of the interface
        (version / "catalog.js").write_text(catalog, encoding="utf-8")

    frames = site / "embed"
    if frames.exists():
        shutil.rmtree(frames)
    site_name = config["site_name"]
    for widget in widgets:
        out = frames / widget.name / "index.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(frame_page(widget, site_name), encoding="utf-8")
    (frames / "index.html").write_text(index_page(widgets, site_name), encoding="utf-8")
