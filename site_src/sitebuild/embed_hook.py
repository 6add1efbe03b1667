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

The widget list comes from the ``tx-*.js`` files, so a new widget is embeddable without
touching this file.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mkdocs.exceptions import PluginError

from model_export.layout import MANIFEST
from sitebuild.assets import build_demos_wheel, project_version
from sitebuild.paths import MODELS, SITE_SRC, VENDOR

EMBED_SRC = SITE_SRC / "embed"
WIDGETS_SRC = SITE_SRC / "widgets"
RUNTIME_SRC = SITE_SRC / "runtime"
API_VERSION = "v1"
EMBED_PAGE = "embed-in-your-course.md"
CATALOG_MARKER = "<!-- tx:widget-catalog -->"
COSTS_MARKER = "<!-- tx:embed-costs -->"
RESERVED_PARAMETERS = ("theme",)
# How the embedding page writes this site's address in its snippets.
SITE_PLACEHOLDER = "https://SITE"
# Same inline icon as hooks.py, so the bare pages never request a missing favicon.
FAVICON = ('<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 '
           'viewBox=%220 0 16 16%22%3E%3Crect width=%2216%22 height=%2216%22 rx=%223%22 fill=%22%233f51b5%22/%3E%3C/svg%3E">')

_pages_by_tag: dict[str, dict] = {}


@dataclass
class Attribute:
    """One documented attribute of a widget."""

    name: str
    description: str
    boolean: bool = False


@dataclass
class Widget:
    """What the catalog knows about one widget file."""

    tag: str
    name: str
    module: str
    summary: str
    runtime: str  # what it loads: "python", "model", "python+model" or "none"
    attributes: list[Attribute] = field(default_factory=list)
    page: dict | None = None


# ---------------------------------------------------------------- reading the widget files

DEFINE = re.compile(r'customElements\.define\(\s*["\'](tx-[a-z0-9-]+)["\']')
IMPORT = re.compile(r'^\s*import\s[^;]*?from\s+["\'](\.[^"\']+)["\']|^\s*import\s+["\'](\.[^"\']+)["\']', re.M)
INLINE_ATTRIBUTES = re.compile(r"^Attributes:\s*((?:`[a-z][a-z0-9-]*`(?:,\s*|\s+and\s+)?)+)\s*(?:\(optional\))?,?\s*(.+)$")
ATTRIBUTE_LINE = re.compile(r"^ {2,}([a-z][a-z0-9-]*(?:, ?[a-z][a-z0-9-]*)*)\s+(\S.*)$")


def doc_comment(source: str) -> list[str]:
    """Lines of the first ``/** ... */`` comment, without the leading `` * ``."""
    match = re.search(r"/\*\*(.*?)\*/", source, re.S)
    if not match:
        return []
    lines = []
    for line in match.group(1).splitlines():
        line = re.sub(r"^\s*\* ?", "", line)
        lines.append(line.rstrip())
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def summary_of(lines: list[str], tag: str) -> str:
    """The first paragraph of the doc comment, without the leading ``<tag>:``."""
    first = []
    for line in lines:
        if not line.strip():
            break
        first.append(line.strip())
    text = " ".join(first)
    text = re.sub(rf"^<{re.escape(tag)}>:\s*", "", text)
    return text[:1].upper() + text[1:] if text else tag


def attributes_of(lines: list[str]) -> list[Attribute]:
    """The ``Attributes`` list of a widget's doc comment (names, description, boolean or not).

    Each entry is ``  name  description`` or ``  a, b  description`` (several attributes
    described together); a more deeply indented line continues the description. A short
    form on one line is read too: ``Attributes: `base` (optional), what it is``.
    """
    out: list[Attribute] = []
    group: list[Attribute] = []
    inside = False
    for line in lines:
        if not inside:
            inside = line.strip().startswith("Attributes")
            inline = INLINE_ATTRIBUTES.match(line.strip())
            if inline:  # "Attributes: `base` (optional), the URL prefix ..." on one line
                names = re.findall(r"`([a-z][a-z0-9-]*)`", inline.group(1))
                return [Attribute(name, inline.group(2).strip().rstrip(".")) for name in names]
            continue
        if not line.strip():
            break
        indent = len(line) - len(line.lstrip())
        match = ATTRIBUTE_LINE.match(line)
        if match and indent <= 4:
            description = match.group(2).strip()
            boolean = bool(re.match(r"(boolean attribute|present\b)", description))
            group = [Attribute(name, description, boolean) for name in re.split(r",\s*", match.group(1))]
            out += group
        elif group:
            for attribute in group:
                attribute.description += " " + line.strip()
    return out


def runtime_of(path: Path, seen: set[Path] | None = None) -> set[str]:
    """Runtimes a module pulls in through its imports: "python" (Pyodide) and/or "model" (ORT)."""
    seen = set() if seen is None else seen
    if path in seen or not path.is_file():
        return set()
    seen.add(path)
    found = set()
    if path.name == "python.js":
        found.add("python")
    if path.name == "model.js":
        found.add("model")
    for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
        target = (path.parent / (match.group(1) or match.group(2))).resolve()
        found |= runtime_of(target, seen)
    return found


def read_widgets(widgets_dir: Path = WIDGETS_SRC) -> list[Widget]:
    """Every ``tx-*.js`` file that defines a custom element, in file-name order."""
    widgets = []
    for path in sorted(widgets_dir.glob("tx-*.js")):
        source = path.read_text(encoding="utf-8")
        match = DEFINE.search(source)
        if not match:  # a tx-*.js file defining no element (shared modules live in widgets/pipeline/)
            continue
        tag = match.group(1)
        lines = doc_comment(source)
        needs = runtime_of(path.resolve())
        runtime = "+".join(sorted(needs, key=["python", "model"].index)) or "none"
        widgets.append(Widget(
            tag=tag,
            name=tag.removeprefix("tx-"),
            module=f"../../widgets/{path.name}",
            summary=summary_of(lines, tag),
            runtime=runtime,
            attributes=attributes_of(lines),
            page=_pages_by_tag.get(tag),
        ))
    return widgets


def build_id() -> str:
    """Short hash of the browser code (widgets, runtime, embed), shown as the build of widgets.js."""
    digest = hashlib.sha256()
    for folder in (WIDGETS_SRC, RUNTIME_SRC, EMBED_SRC):
        for path in sorted(folder.rglob("*.js")):
            digest.update(path.relative_to(SITE_SRC).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# ---------------------------------------------------------------- sizes


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
        raise PluginError("build/vendor is missing: run `make assets` (site_src/sitebuild/assets.py) first")
    with tempfile.TemporaryDirectory() as tmp:
        demos = build_demos_wheel(Path(tmp), project_version())
        python_files = [pyodide / n for n in ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm",
                                               "python_stdlib.zip", "pyodide-lock.json")]
        python_files += sorted(pyodide.glob("numpy-*.whl")) + [demos]
        python = {"what": "Python (Pyodide 0.27 with NumPy and the demos package)",
                  "bytes": sum(p.stat().st_size for p in python_files),
                  "gzip": sum(_gzip_size(p) for p in python_files)}
    ort_files = sorted(p for p in ort.iterdir() if p.is_file())
    rows = [python, {"what": "ONNX Runtime Web (WebAssembly and WebGPU)",
                     "bytes": sum(p.stat().st_size for p in ort_files),
                     "gzip": sum(_gzip_size(p) for p in ort_files)}]
    manifest_path = MODELS / model / MANIFEST
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        tokenizer = sum(manifest.get("tokenizer", {}).get(role, {}).get("bytes", 0) for role in ("vocab", "merges"))
        rows.append({"what": "GPT-2 tokenizer files (vocab.json, merges.txt)", "bytes": tokenizer,
                     "gzip": sum(_gzip_size(MODELS / model / manifest["tokenizer"][r]["path"])
                                 for r in ("vocab", "merges") if r in manifest.get("tokenizer", {}))})
        seen = set()
        for backend, label in (("wasm", "WebAssembly"), ("webgpu", "WebGPU")):
            variant = choose_variant(manifest, backend)
            if variant is None or variant["name"] in seen:
                continue
            seen.add(variant["name"])
            size = sum(f["bytes"] for f in variant["files"])
            rows.append({"what": f"Model “{manifest.get('name', model)}”, {variant['name']} weights "
                                 f"(loaded on {label}"
                                 + (" and WebGPU" if backend == "wasm" and choose_variant(manifest, "webgpu") is variant else "")
                                 + f"; {len(variant['files'])} file{'s' if len(variant['files']) != 1 else ''})",
                         "bytes": size, "gzip": None})
    return rows


def costs_markdown(model: str) -> str:
    rows = runtime_costs(model)
    lines = ["| What is downloaded | Size | Compressed (gzip) |", "|---|---:|---:|"]
    for row in rows:
        gz = _mb(row["gzip"]) if row["gzip"] is not None else "about the same"
        lines.append(f"| {row['what']} | {_mb(row['bytes'])} | {gz} |")
    return "\n".join(lines) + (
        f"\n\n<small>Measured on the files of this build (model `{model}`).</small>\n"
    )


def _without_boolean_note(description: str) -> str:
    """"boolean attribute: start with ..." -> "start with ..." (the table says boolean itself)."""
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
        attrs = "<br>".join(
            ", ".join(f"`{a.name}`" for a in group) + (" (boolean)" if group[0].boolean else "")
            + f": {_cell(_without_boolean_note(group[0].description))}" for group in groups
        ) or "none"
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
        tag=widget.tag, title=html.escape(widget.summary.rstrip(".")), site_name=html.escape(site_name),
        favicon=FAVICON, root=root, api=API_VERSION, link=html.escape(link), credit=html.escape(credit),
    )


def index_page(widgets: list[Widget], site_name: str) -> str:
    items = "\n".join(
        f'<li><a href="{w.name}/"><code>{w.name}/</code></a>: {html.escape(w.summary)}</li>' for w in widgets
    )
    return INDEX_PAGE.format(site_name=html.escape(site_name), favicon=FAVICON, api=API_VERSION, items=items,
                             embed_page=EMBED_PAGE.removesuffix(".md") + "/")


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
        "// Generated by site_src/sitebuild/embed_hook.py from the widget files: do not edit.\n"
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
        widgets = read_widgets()
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
    widgets = read_widgets()
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
