"""No sentence of ten or more words stands on three or more pages.

A line a reader meets on page after page ("Commit to an answer before…") is boilerplate: it
is written once (in the widget that needs it, or on the page it belongs to) and linked. The
prose is read as `overlap.prose_units` reads it (code, math and markup taken out); a sentence
ends at `.`, `!` or `?` followed by a space, and is compared as its lowercase words.
"""

from __future__ import annotations

import re
from collections import defaultdict

from overlap import DOCS, pages, prose_units, words

MIN_WORDS = 10
MAX_PAGES = 2
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def repeated_sentences(texts: dict[str, str]) -> dict[str, list[str]]:
    """Each sentence of at least MIN_WORDS words found on more than MAX_PAGES of `texts`, with its pages."""
    found: dict[str, set[str]] = defaultdict(set)
    for name, markdown in texts.items():
        for unit in prose_units(markdown):
            for sentence in _SENTENCE_END.split(unit):
                tokens = words(sentence)
                if len(tokens) >= MIN_WORDS:
                    found[" ".join(tokens)].add(name)
    return {sentence: sorted(names) for sentence, names in found.items() if len(names) > MAX_PAGES}


def test_no_long_sentence_is_repeated_on_three_pages():
    texts = {p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in pages()}
    repeated = repeated_sentences(texts)
    assert not repeated, "\n".join(f"{len(names)} pages ({', '.join(names[:4])}…): {sentence}" for sentence, names in repeated.items())


def test_the_check_finds_a_repeated_sentence():
    line = "Commit to an answer before you press *Check*; the answer is computed in your browser."
    texts = {f"p{i}.md": f"# Page {i}\n\nSomething of its own, page {i}.\n\n{line}\n" for i in range(3)}
    assert list(repeated_sentences(texts)) == [" ".join(words(line))]
    assert repeated_sentences({name: texts[name] for name in ("p0.md", "p1.md")}) == {}
    short = {f"p{i}.md": "The loop runs once per token.\n" for i in range(3)}
    assert repeated_sentences(short) == {}


# Phrases that answer a telling the reader never saw (a course's summary, a remembered number)
# instead of stating the fact: a note says what holds, under a title of its own.
SECOND_HAND = ("the course summarises", "sometimes remembered", "is sometimes said", "often summarised", "often quoted", "often made loosely")


def test_notes_state_the_fact_on_their_own():
    for page in pages():
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(DOCS).as_posix()
        assert not re.search(r'^\s*(?:!!!|\?\?\?) note "Precisely"', text, re.M), f"{name}: a note titled 'Precisely'"
        flat = " ".join(text.lower().split())
        assert not [p for p in SECOND_HAND if p in flat], f"{name}: {[p for p in SECOND_HAND if p in flat]}"
