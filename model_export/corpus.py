"""The book's own text as training data: the prose of ``docs/``, page by page.

``model-export train`` learns from the words a reader of the book reads, not from its code,
widgets, formulas or link targets. ``extract_prose`` keeps the sentences, headings, list items,
table cells and admonition bodies of a Markdown page and drops the rest; ``read_pages`` does it
for every page and marks a fixed share of whole pages as held out, so the held-out perplexity
measures text the model never saw, on topics it may have seen from other pages.

The text the committed checkpoint learned from is kept beside it (``corpus.json.gz`` in
``BOOK_MODEL_DIR``): the pages change as the book is edited, and a re-run of the recipe must
read the same words to draw the same curve. ``model-export train --refresh-corpus`` takes the
current pages instead.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

DOCS_DIR = Path("docs")
# every HELD_OUT_EVERY-th page in path order is held out (about 1 page in 8)
HELD_OUT_EVERY = 8

_FENCE = re.compile(r"^(\s*)(```|~~~)")
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_FOOTNOTE = re.compile(r"\[\^[^\]]+\]:?")
_ATTRIBUTES = re.compile(r"\{\s*[:.#][^}]*\}")
_ADMONITION = re.compile(r'^\s*(?:!!!|\?\?\?\+?)\s*[\w-]+(?:\s+"([^"]*)")?\s*$')
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_MARKUP = re.compile(r"\*\*|__|`")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")


@dataclass(frozen=True)
class Page:
    """One page's prose.

    Attributes:
        path: The page's path under ``docs/`` (``inside/induction-heads.md``).
        text: Its prose, paragraphs separated by blank lines.
        held_out: Whether training leaves it out (it measures the held-out perplexity).
    """

    path: str
    text: str
    held_out: bool


def extract_prose(markdown: str) -> str:
    """The prose of a Markdown page: what a reader reads as sentences.

    Drops the front matter, fenced code, display math, HTML (the widgets, figures), images,
    link targets, footnote markers, attribute lists, snippet includes and table rules; keeps
    link texts, headings, list items, table cells, admonition titles and bodies, and inline
    math as written.

    Args:
        markdown: A page's source.

    Returns:
        Paragraphs joined by blank lines, each paragraph's lines joined by spaces.

    Examples:
        >>> extract_prose('# Title\\n\\nSee [the paper](x.md#a) and `code`.\\n\\n```py\\nx = 1\\n```\\n')
        'Title\\n\\nSee the paper and code.'
    """
    if markdown.startswith("---\n"):
        end = markdown.find("\n---\n", 4)
        markdown = markdown[end + 5 :] if end > 0 else markdown
    markdown = _HTML_COMMENT.sub("", _DISPLAY_MATH.sub("", markdown))
    paragraphs, current, fence = [], [], None
    for line in markdown.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            fence = None if opened and opened.group(2) == fence else fence
            continue
        if opened:
            fence = opened.group(2)
            continue
        if line.lstrip().startswith("--8<--") or _TABLE_RULE.match(line):
            continue  # not a paragraph break
        line = _clean_line(line)
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(p for p in paragraphs if re.search(r"[A-Za-z]{2}", p))


def _clean_line(line: str) -> str:
    """One source line as prose ('' for a line with none)."""
    admonition = _ADMONITION.match(line)
    if admonition:
        return admonition.group(1) or ""
    line = _IMAGE.sub("", line)
    line = _LINK.sub(r"\1", _REF_LINK.sub(r"\1", line))
    line = _TAG.sub("", _ATTRIBUTES.sub("", _FOOTNOTE.sub("", line)))
    line = _LIST_MARK.sub("", _HEADING.sub("", line))
    if "|" in line:
        line = " ".join(cell.strip() for cell in line.strip().strip("|").split("|") if cell.strip())
    return " ".join(_MARKUP.sub("", line).split())


def read_pages(docs_dir: str | Path = DOCS_DIR) -> list[Page]:
    """Every Markdown page under ``docs_dir`` with text, in path order, every
    ``HELD_OUT_EVERY``-th one held out."""
    root = Path(docs_dir)
    pages = []
    for path in sorted(root.rglob("*.md")):
        text = extract_prose(path.read_text(encoding="utf-8"))
        if text:
            held_out = len(pages) % HELD_OUT_EVERY == HELD_OUT_EVERY - 1
            pages.append(Page(path.relative_to(root).as_posix(), text, held_out))
    return pages


def save_pages(pages: list[Page], path: str | Path) -> None:
    """Writes the pages as gzipped JSON (no timestamp, so the same pages give the same bytes)."""
    data = json.dumps([page.__dict__ for page in pages], ensure_ascii=False, indent=0).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(data)


def load_pages(path: str | Path) -> list[Page]:
    """Reads pages written by ``save_pages``."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [Page(**page) for page in json.load(f)]


def pages_hash(pages: list[Page]) -> str:
    """sha256 of the pages' paths, texts and splits: which words a model learned from."""
    digest = hashlib.sha256()
    for page in pages:
        digest.update(json.dumps([page.path, page.text, page.held_out], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()
