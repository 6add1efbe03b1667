"""MkDocs hook for "The Transformer, in the order it runs" (``docs/pipeline/``): code snippets.

``on_page_markdown``: a marker

    <!-- code: model_export/gpt2.py CausalSelfAttention.forward -->
    <!-- code: model_export/gpt2.py GPT2.forward from "tok_emb =" to "x = tok_emb + pos_emb" -->

becomes a fenced Python block holding those lines of the source file, its line numbers in the
title: the whole function or class (found with ``ast``), or the lines from the first one
containing the ``from`` text to the first one after it containing the ``to`` text. A marker whose
function or text is not in the file stops the build, so a page never shows code that is not there.

The pages' figures read ``models/<name>/tables/`` (weight index, parity logits): the model export
writes it (``model_export/tables.py``, the ``tables`` stage of ``model-export all``) and
``hooks.py`` copies it with the model.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from mkdocs.exceptions import PluginError

from sitebuild.paths import ROOT

MARKER = re.compile(r'<!--\s*code:\s*(?P<path>\S+)\s+(?P<name>[\w.]+)(?:\s+from\s+"(?P<start>[^"]+)"\s+to\s+"(?P<end>[^"]+)")?\s*-->')


# ---------------------------------------------------------------- code snippets


@dataclass
class Snippet:
    """Lines of a source file.

    Attributes:
        path: The file, relative to the repository root.
        name: The qualified name of the function or class they come from.
        first: Number of the first line (1-based).
        last: Number of the last line (inclusive).
        text: The lines themselves, joined with newlines, without a final newline.
    """

    path: str
    name: str
    first: int
    last: int
    text: str


def _find_definition(tree: ast.AST, qualname: str):
    node = tree
    for part in qualname.split("."):
        found = None
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child.name == part:
                found = child
                break
        if found is None:
            return None
        node = found
    return node


def extract_snippet(path: str, qualname: str, start: str | None = None, end: str | None = None, root: Path = ROOT) -> Snippet:
    """Finds the lines of a function or class, or a stretch inside it.

    Args:
        path: Source file relative to ``root``.
        qualname: ``Class.method``, ``Class`` or ``function``.
        start: When given (with ``end``), the snippet begins at the first line of the definition
            containing this text ...
        end: ... and ends at the first line from there containing this text.
        root: Repository root.

    Returns:
        The snippet, decorators included for a whole definition.

    Raises:
        ValueError: If the file, the definition or one of the texts is not found.
    """
    file = root / path
    if not file.is_file():
        raise ValueError(f"code marker: {path} does not exist")
    source = file.read_text(encoding="utf-8")
    lines = source.splitlines()
    node = _find_definition(ast.parse(source), qualname)
    if node is None:
        raise ValueError(f"code marker: {path} has no definition {qualname}")
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    last = node.end_lineno
    if (start is None) != (end is None):
        raise ValueError("code marker: give both `from` and `to`, or neither")
    if start is not None:
        begin = next((n for n in range(first, last + 1) if start in lines[n - 1]), None)
        if begin is None:
            raise ValueError(f"code marker: no line of {qualname} in {path} contains {start!r}")
        stop = next((n for n in range(begin, last + 1) if end in lines[n - 1]), None)
        if stop is None:
            raise ValueError(f"code marker: no line of {qualname} in {path} after line {begin} contains {end!r}")
        first, last = begin, stop
    text = "\n".join(lines[first - 1 : last])
    return Snippet(path, qualname, first, last, _dedent(text))


def _dedent(text: str) -> str:
    rows = text.split("\n")
    indents = [len(r) - len(r.lstrip(" ")) for r in rows if r.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(r[cut:] for r in rows)


def render_snippet(snippet: Snippet) -> str:
    """The snippet as a fenced Python block titled with its file, definition and line numbers.

    (The line numbers go in the title rather than a number column: Material's number column
    is too faint for the contrast the site's accessibility test requires.)
    """
    lines = f"line {snippet.first}" if snippet.first == snippet.last else f"lines {snippet.first}–{snippet.last}"
    title = f"{snippet.path} · {snippet.name} · {lines}"
    return f'```python title="{title}"\n{snippet.text}\n```'


def expand_code_markers(markdown: str, root: Path = ROOT) -> str:
    """Replaces every code marker in ``markdown`` by its fenced snippet.

    Raises:
        ValueError: If a marker names something that is not in the source.
    """

    def replace(match: re.Match) -> str:
        snippet = extract_snippet(match["path"], match["name"], match["start"], match["end"], root)
        return render_snippet(snippet)

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Expand the code markers of a page."""
    if "<!-- code:" not in markdown:
        return markdown
    try:
        return expand_code_markers(markdown)
    except ValueError as err:
        raise PluginError(f"{page.file.src_path}: {err}") from err
