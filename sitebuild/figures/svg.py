"""A tiny SVG writer for the book's static figures.

Shapes carry CSS classes, never colours: ``site_src/styles/tx.css`` styles the classes with
MkDocs Material's colour variables, so a figure follows the light and dark schemes. Strokes
default to ``currentColor``. Numbers a figure shows can also be written as ``data-*``
attributes (``data={"shape": "1024x768"}``), which the tests read back.

Classes used (``tx.css``): ``box`` (plain), ``box primary`` / ``box accent`` / ``box muted``
(tinted), ``cell on`` / ``cell off`` / ``cell pad`` / ``cell hi`` (grid cells), ``arrow``,
``line``, ``dash``, ``curve``, ``curve alt``, ``label`` (text), ``small``, ``bold``, ``dim``.
"""

from __future__ import annotations

import math
from html import escape


def _attrs(cls: str | None = None, data: dict | None = None, **attrs) -> str:
    """`` class="..." data-k="v" k="v"`` with every value escaped; None values are left out."""
    items = [("class", cls)] + [(f"data-{k.replace('_', '-')}", v) for k, v in (data or {}).items()]
    items += [(k.rstrip("_").replace("_", "-"), v) for k, v in attrs.items()]
    return "".join(f' {k}="{escape(_num(v))}"' for k, v in items if v is not None)


def _num(v) -> str:
    """A coordinate or value as short text: 12 not 12.0, 3.14 not 3.1400000001."""
    if isinstance(v, float):
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)


class Svg:
    """An SVG drawing, built shape by shape and rendered once.

    Args:
        width: viewBox width (the figure scales to the page; 360 reads well on a phone).
        height: viewBox height.
    """

    def __init__(self, width: float, height: float):
        self.width, self.height = width, height
        self.parts: list[str] = []

    def add(self, element: str) -> None:
        """Appends raw SVG markup (for the rare shape this class has no method for)."""
        self.parts.append(element)

    def text(self, x, y, s, cls="label", anchor="middle", data=None) -> None:
        """Text centred on ``(x, y)`` (``anchor``: start, middle or end)."""
        self.add(f"<text{_attrs(cls, data, x=x, y=y, text_anchor=anchor, dominant_baseline='central')}>{escape(str(s))}</text>")

    def lines(self, x, y, lines, step=14, cls="label small", anchor="middle") -> None:
        """A paragraph: one ``text`` per line, the first centred on ``(x, y)``, each ``step`` lower."""
        for i, line in enumerate(lines):
            self.text(x, y + i * step, line, cls=cls, anchor=anchor)

    def box(self, x, y, w, h, label=None, cls="box", data=None, sub=None, rx=4) -> None:
        """A rounded rectangle, its ``label`` centred inside (and ``sub``, a smaller second line)."""
        self.add(f"<rect{_attrs(cls, data, x=x, y=y, width=w, height=h, rx=rx)}/>")
        if label is not None and sub is None:
            self.text(x + w / 2, y + h / 2, label)
        elif label is not None:
            self.text(x + w / 2, y + h / 2 - 6, label)
            self.text(x + w / 2, y + h / 2 + 8, sub, cls="label small")

    def circle(self, cx, cy, r, cls="box", label=None, data=None) -> None:
        """A circle, ``label`` centred inside."""
        self.add(f"<circle{_attrs(cls, data, cx=cx, cy=cy, r=r)}/>")
        if label is not None:
            self.text(cx, cy, label)

    def line(self, x1, y1, x2, y2, cls="line", data=None) -> None:
        """A straight line."""
        self.add(f"<line{_attrs(cls, data, x1=x1, y1=y1, x2=x2, y2=y2)}/>")

    def polyline(self, points, cls="curve", data=None) -> None:
        """An open polyline through ``points`` [(x, y), ...]."""
        pts = " ".join(f"{_num(float(x))},{_num(float(y))}" for x, y in points)
        self.add(f"<polyline{_attrs(cls, data, points=pts)}/>")

    def legend_entry(self, x, y, label, cls="curve") -> None:
        """A short sample of a line drawn with ``cls``, and its label to the right."""
        self.polyline([(x, y), (x + 18, y)], cls=cls)
        self.text(x + 22, y + 3, label, cls="label small", anchor="start")

    def arrow(self, x1, y1, x2, y2, cls="arrow", head=6) -> None:
        """A line from ``(x1, y1)`` to ``(x2, y2)`` with a filled head at the end."""
        a = math.atan2(y2 - y1, x2 - x1)
        bx, by = x2 - head * math.cos(a), y2 - head * math.sin(a)
        self.line(x1, y1, bx, by, cls=cls)
        left = (bx + head / 2 * math.sin(a), by - head / 2 * math.cos(a))
        right = (bx - head / 2 * math.sin(a), by + head / 2 * math.cos(a))
        pts = " ".join(f"{_num(float(px))},{_num(float(py))}" for px, py in ((x2, y2), left, right))
        self.add(f"<polygon{_attrs('arrowhead', points=pts)}/>")

    def path(self, d, cls="line", data=None) -> None:
        """A path from its ``d`` commands."""
        self.add(f"<path{_attrs(cls, data, d=d)}/>")

    def grid(self, x, y, rows, cols, cell, cls_of, data_of=None, gap=1) -> None:
        """A ``rows`` × ``cols`` grid of square cells; ``cls_of(r, c)`` gives each cell's class."""
        for r in range(rows):
            for c in range(cols):
                data = data_of(r, c) if data_of else None
                self.add(f"<rect{_attrs(cls_of(r, c), data, x=x + c * cell, y=y + r * cell, width=cell - gap, height=cell - gap)}/>")

    def render(self, name: str, alt: str, data: dict | None = None) -> str:
        """The ``<svg>`` element, titled by ``alt`` (``aria-labelledby``), one line per shape."""
        title_id = f"figure-{name}-title"
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="tx-fig" viewBox="0 0 {_num(self.width)} {_num(self.height)}" '
            f'role="img" aria-labelledby="{title_id}"{_attrs(None, data)}>'
        )
        return "\n".join([head, f'<title id="{title_id}">{escape(alt)}</title>', *self.parts, "</svg>"])
