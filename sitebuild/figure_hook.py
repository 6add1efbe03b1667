"""MkDocs hook: the book's static SVG figures, drawn at build time (``sitebuild.figures``).

A marker on a line of its own places a figure::

    <!-- figure: gpt2-block -->

and becomes ``<figure class="tx-figure" id="figure-gpt2-block"><svg ...>...</svg>
<figcaption>Figure N. caption</figcaption></figure>``, N counting the page's figures in order.
In the text, ``[[figure: gpt2-block]]`` becomes a link "Figure N" to it. An unknown name, or a
reference to a figure the page does not place, stops the build (``PluginError``).
"""

from __future__ import annotations

import re
from functools import cache
from html import escape

from mkdocs.exceptions import PluginError

from sitebuild.figures import FIGURES

MARKER = re.compile(r"^<!--\s*figure:\s*(?P<name>[\w-]+)\s*-->[ \t]*$", re.M)
REFERENCE = re.compile(r"\[\[figure:\s*(?P<name>[\w-]+)\s*\]\]")


@cache
def draw(name: str) -> tuple[str, str, str]:
    """The figure ``name``'s ``(svg, alt, caption)``, drawn once per build."""
    if name not in FIGURES:
        raise PluginError(f"figure_hook: unknown figure {name!r}; known: {', '.join(sorted(FIGURES))}")
    return FIGURES[name]()


def figure_html(name: str, number: int) -> str:
    """The ``<figure>`` element of figure ``name``, numbered ``number``, on lines without blanks."""
    svg, _alt, caption = draw(name)
    return f'<figure class="tx-figure" id="figure-{name}">\n{svg}\n<figcaption>Figure {number}. {escape(caption)}</figcaption>\n</figure>'


def expand_figures(markdown: str, where: str = "page") -> str:
    """Replaces the figure markers and references of one page's Markdown.

    Raises:
        PluginError: On an unknown figure, a figure placed twice, or a reference to a figure not placed.
    """
    numbers: dict[str, int] = {}
    for match in MARKER.finditer(markdown):
        name = match["name"]
        if name in numbers:
            raise PluginError(f"figure_hook: {where} places figure {name!r} twice")
        draw(name)
        numbers[name] = len(numbers) + 1
    for match in REFERENCE.finditer(markdown):
        if match["name"] not in numbers:
            raise PluginError(f"figure_hook: {where} refers to figure {match['name']!r}, which it does not place")
    markdown = MARKER.sub(lambda m: figure_html(m["name"], numbers[m["name"]]), markdown)
    return REFERENCE.sub(lambda m: f"[Figure {numbers[m['name']]}](#figure-{m['name']})", markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Draw the figures a page places."""
    if "figure:" not in markdown:
        return markdown
    return expand_figures(markdown, page.file.src_path)
