"""The exercises on the pages (issue 15, item 6): every lab page and every stage page has a
<tx-predict>, every lab page a <tx-exercise>, and each one works: its demos call runs in
CPython, the answer is where its `answer` path says, and a multiple-choice question has
exactly one choice that is the computed answer (what the widget does in the browser)."""

from __future__ import annotations

import html
import importlib
import json
import re
from pathlib import Path

import pytest

from demos import exercises

DOCS = Path(__file__).resolve().parents[2] / "docs"
LAB_PAGES = sorted((DOCS / "labs").glob("*.md"))
STAGE_PAGES = sorted((DOCS / "pipeline").glob("*.md"))  # index.md (the whole pass) and 01 … 08 with 5a … 5f
TAG = re.compile(r"(?<!`)<(tx-predict|tx-exercise)\b([^>]*)>")  # a tag, not one quoted as `<tx-predict>`
ATTR = re.compile(r"""([a-z-]+)=(?:"([^"]*)"|'([^']*)')""")


def widgets(page: Path, tag: str) -> list[dict]:
    found = []
    for match in TAG.finditer(page.read_text(encoding="utf-8")):
        if match.group(1) == tag:
            found.append({name: html.unescape(a if a is not None and q == "" else q or a or "") for name, q, a in ATTR.findall(match.group(2))})
    return found


def pick(value, path):
    for key in path.split(".") if path else []:
        if isinstance(value, list) and key == "length":
            value = len(value)
        elif isinstance(value, list):
            value = value[int(key)]
        else:
            value = value[key]
    return value


def within(guess, answer, tolerance):
    if tolerance.endswith("%"):
        return abs(guess - answer) <= float(tolerance[:-1]) / 100 * abs(answer) + 1e-12
    return abs(guess - answer) <= float(tolerance) + 1e-12 * abs(answer)


def test_the_stage_pages_are_the_fourteen():
    assert len(STAGE_PAGES) == 14, [p.name for p in STAGE_PAGES]
    assert len(LAB_PAGES) == 10, [p.name for p in LAB_PAGES]


@pytest.mark.parametrize("page", LAB_PAGES + STAGE_PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_lab_and_stage_page_has_a_prediction(page):
    assert widgets(page, "tx-predict"), f"{page.name} has no <tx-predict>"


@pytest.mark.parametrize("page", LAB_PAGES, ids=lambda p: p.stem)
def test_every_lab_page_has_a_code_exercise_of_its_own(page):
    found = widgets(page, "tx-exercise")
    assert found, f"{page.name} has no <tx-exercise>"
    for attrs in found:
        assert exercises.EXERCISES[attrs["exercise"]].page == f"labs/{page.name}"


# Every <tx-predict> of the book, not only those the lab and stage pages must have.
PREDICTIONS = [(page, attrs) for page in sorted(DOCS.rglob("*.md")) for attrs in widgets(page, "tx-predict")]


@pytest.mark.parametrize("page, attrs", PREDICTIONS, ids=[f"{p.parent.name}/{p.stem}:{a.get('function')}" for p, a in PREDICTIONS])
def test_the_prediction_has_an_answer_computed_by_demos(page, attrs):
    for name in ("question", "module", "function", "answer", "explain"):
        assert name in attrs, f"{page.name}: a <tx-predict> without {name}"
    assert re.fullmatch(r"[a-z_][a-z0-9_]*", attrs["function"]) and not attrs["function"].startswith("_")
    fn = getattr(importlib.import_module(f"demos.{attrs['module']}"), attrs["function"])
    answer = pick(fn(**json.loads(attrs.get("kwargs", "{}"))), attrs["answer"])
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = answer / float(attrs.get("scale", "1"))
    tolerance = attrs.get("tolerance", "5%")
    if "choices" in attrs:
        choices = [part.strip().split(":", 1)[0].strip() for part in attrs["choices"].split("|") if part.strip()]
        if isinstance(answer, (int, float)):
            right = [c for c in choices if within(float(c), answer, tolerance)]
        else:
            shown = answer if isinstance(answer, str) else json.dumps(answer, separators=(",", ":"))
            right = [c for c in choices if c.replace(" ", "") == shown.replace(" ", "")]
        assert len(right) == 1, f"{page.name}: answer {answer!r}, choices {choices}"
    else:
        assert isinstance(answer, (int, float)) and not isinstance(answer, bool), f"{page.name}: answer {answer!r} is not a number"
    # The answer is the reader's to find: the page states no number in the question's attributes.
    assert "{answer}" in attrs["explain"] or "choices" in attrs
