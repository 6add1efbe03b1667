"""The widget catalogue, read from the browser code: each ``tx-*.js`` file's tag, summary and
``Attributes`` list (from its first doc comment) and the runtimes its imports pull in.

``embed_hook.py`` turns it into the embedding page's table, ``catalog.js`` and the bare pages;
a new widget file is in the catalogue without touching this module.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from sitebuild.paths import SITE_SRC

EMBED_SRC = SITE_SRC / "embed"
WIDGETS_SRC = SITE_SRC / "widgets"
RUNTIME_SRC = SITE_SRC / "runtime"


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


# A widget file ends with `define("tx-name", Widget)` (site_src/widgets/widget.js).
DEFINE = re.compile(r'^define\(\s*["\'](tx-[a-z0-9-]+)["\']', re.M)
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


def read_widgets(pages: dict[str, dict] | None = None, widgets_dir: Path = WIDGETS_SRC) -> list[Widget]:
    """Every ``tx-*.js`` file that defines a custom element, in file-name order.

    Args:
        pages: The page that explains each tag (``{title, url, src}``), where known.
        widgets_dir: The folder of the widget files.
    """
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
        widgets.append(
            Widget(
                tag=tag,
                name=tag.removeprefix("tx-"),
                module=f"../../widgets/{path.name}",
                summary=summary_of(lines, tag),
                runtime=runtime,
                attributes=attributes_of(lines),
                page=(pages or {}).get(tag),
            )
        )
    return widgets


def build_id() -> str:
    """Short hash of the browser code (widgets, runtime, embed), shown as the build of widgets.js."""
    digest = hashlib.sha256()
    for folder in (WIDGETS_SRC, RUNTIME_SRC, EMBED_SRC):
        for path in sorted(folder.rglob("*.js")):
            digest.update(path.relative_to(SITE_SRC).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
