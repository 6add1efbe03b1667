"""The phenomena the book's pages describe, as the widgets show them on the book's own model.

Runs where the site was built from ``book`` (``make site``, ``make test``): the logit lens
converges to the output, the generator's greedy text is not one token repeated, beam search
repeats a phrase and follows its length penalty, the
next-token widget ranks the true next token of the book's held-out prose in its top 10 far more
often than chance, and the induction widget shows what its page's note says of this model, which did not learn to copy
(no head near an induction head, a second copy as costly as the first). The thresholds are
those of tests/model_export/test_book_model.py, which measures the same model in PyTorch; here
they are read off what the reader sees.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from model_export import corpus, train
from model_export.weights import BOOK_MODEL_DIR
from served import manifest
from widget_checks import grid_values, settle

PERIOD = 13  # "." in GPT-2's vocabulary

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(manifest().get("source") != "book", reason="the site was not built from the book's model"),
]


def ready(p, tag):
    state, status = settle(p, tag)
    assert state == "ready", status
    return p.locator(tag)


def test_the_induction_page_shows_no_copying_as_its_note_says(tab):
    p = tab.visit("inside/induction-heads/")
    widget = ready(p, "tx-induction")
    scores, _ = grid_values(widget, "scores")
    caption = " ".join(widget.locator("figcaption").all_inner_texts())
    first, second = (float(x) for x in re.search(r"first copy, mean (\d+\.\d+); second copy, mean (\d+\.\d+)", caption).groups())
    assert scores.max() < 0.1, scores
    assert abs(second - first) < 0.5 and second > 10, caption  # both near ln 50,257 = 10.8
    best = np.unravel_index(int(scores.argmax()), scores.shape)
    assert widget.get_attribute("data-pattern") == f"{best[0]}.{best[1]}"


def test_the_logit_lens_page_converges_to_the_output(tab):
    p = tab.visit("inside/logit-lens/")
    widget = ready(p, "tx-logit-lens")
    _, tops = grid_values(widget, "lens")  # (L + 1, T): each layer's top-1 id at each position
    agreement = (tops == tops[-1]).mean(axis=1)
    assert agreement[-1] == 1.0
    assert agreement[0] < agreement[-2] <= 1.0, agreement
    assert widget.get_attribute("data-final") == str(tops[-1, -1])


def test_greedy_text_on_the_generate_page_is_not_one_token_repeated(tab):
    p = tab.visit("generate/")
    widget = ready(p, "tx-generate")
    widget.locator("textarea").fill("The attention weights of each head")
    if widget.locator("details.settings").get_attribute("open") is None:
        widget.locator("details.settings summary").click()
    for name, value in (("maxNewTokens", 40), ("temperature", 0)):
        widget.locator(f'input[name="{name}"]').fill(str(value))
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("button.go").click()
    p.wait_for_function(f"() => Number(document.querySelector('tx-generate').dataset.runs) > {runs}", timeout=120_000)
    ids = [int(x) for x in widget.locator(".continuation .tok").evaluate_all("els => els.map(e => e.dataset.id)")]
    assert len(ids) == 40 and len(set(ids)) >= 10, widget.locator(".continuation").inner_text()


def test_the_next_token_widget_ranks_the_books_next_word_in_its_top_10(tab):
    """Prefixes of a page the model never trained on, typed into the home page's widget: the
    true next token is among the ten it shows far more often than chance (10 in 50,257)."""
    pages = corpus.load_pages(BOOK_MODEL_DIR / train.CORPUS_FILE)
    tokenizer = train.gpt2_tokenizer()
    held_out = train.tokenize(pages, tokenizer).held_out  # starts with end-of-text
    p = tab.visit("")
    widget = ready(p, "tx-next-token")
    hits = []
    for k in (8, 12, 16, 20, 24, 28):
        runs = int(widget.get_attribute("data-runs"))
        widget.locator("textarea").fill(tokenizer.decode(held_out[1 : 1 + k].tolist()))
        p.wait_for_function(f"() => Number(document.querySelector('tx-next-token').dataset.runs) > {runs}", timeout=60_000)
        widget = ready(p, "tx-next-token")
        shown = [int(i) for i in widget.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")]
        assert len(shown) == 10
        hits.append(int(held_out[1 + k]) in shown)
    assert sum(hits) >= 2, hits  # chance: 6 × 10 / 50,257 ≈ 0.001 hits


def test_beam_search_on_its_page_repeats_itself_and_the_length_penalty_moves_the_winner(tab):
    """What the beam-search page tells the reader to look for, on the page's own widget: with
    several beams the best hypothesis repeats a phrase; a length penalty of −1 crowns a short
    hypothesis ended by a full stop, and 2 a hypothesis at least as long as at 1."""
    p = tab.visit("decoding/beam-search/")
    widget = ready(p, "tx-beam-search")

    def best_with(penalty):
        widget.locator('[name="lengthPenalty"]').fill(str(penalty))
        runs = int(widget.get_attribute("data-runs"))
        widget.locator("button.go").click()
        p.wait_for_function(f"() => Number(document.querySelector('tx-beam-search').dataset.runs) > {runs}", timeout=120_000)
        assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
        return json.loads(widget.get_attribute("data-hypotheses"))[0]["tokens"]

    plain = best_with(1)
    trigrams = [tuple(plain[i : i + 3]) for i in range(len(plain) - 2)]
    assert len(set(trigrams)) < len(trigrams), widget.locator(".hyps li").first.inner_text()  # a phrase comes back
    short = best_with(-1)
    assert short[-1] == PERIOD and len(short) < len(plain), (short, plain)
    long = best_with(2)
    assert len(long) >= len(plain), (long, plain)


def test_the_guided_json_widget_overrules_the_model_at_the_punctuation_not_in_strings(tab):
    """The guided-JSON page says of the book's model: the mask removes nearly all of the
    probability where the JSON's braces, keys, colons and commas must come, and little inside a
    string, where almost every token is allowed."""
    p = tab.visit("decoding/guided-json/")
    widget = ready(p, "tx-guided-json")
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("button.go").click()
    p.wait_for_function(f"() => Number(document.querySelector('tx-guided-json').dataset.runs) > {runs}", timeout=120_000)
    rows = widget.locator("tbody tr").evaluate_all("rows => rows.map(r => [+r.dataset.allowed, +r.dataset.removed])")
    structure = [removed for allowed, removed in rows if allowed <= 10]  # a brace, a key, a colon, a comma
    strings = [removed for allowed, removed in rows if allowed > 10_000]  # inside a string
    assert len(structure) >= 5 and len(strings) >= 2, rows
    assert np.mean(structure) > 0.9 and np.mean(strings) < 0.2, (np.mean(structure), np.mean(strings))


def test_the_four_decoding_methods_land_where_the_overview_page_says(tab):
    """The overview page, of its <tx-decode-compare> with the prompt it starts with: beam search
    finds the most probable continuation and greedy the next; both are the most repetitive;
    sampling is the least repetitive at a lower probability per token; the guided text is the
    least probable. Another seed changes the sampled text only."""
    p = tab.visit("decoding/overview/")
    widget = ready(p, "tx-decode-compare")

    def run():
        runs = int(widget.get_attribute("data-runs"))
        widget.locator("button.go").click()
        p.wait_for_function(f"() => Number(document.querySelector('tx-decode-compare').dataset.runs) > {runs}", timeout=180_000)
        assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
        panels = widget.locator(".panel").evaluate_all(
            "ps => ps.map(p => [p.dataset.method, JSON.parse(p.dataset.ids), +p.dataset.logProb, +p.dataset.distinct])"
        )
        return {method: {"ids": ids, "per_token": log_prob / len(ids), "sum": log_prob, "distinct": distinct} for method, ids, log_prob, distinct in panels}

    first = run()
    assert first["beam"]["sum"] > first["greedy"]["sum"] > first["sampling"]["sum"] > first["guided"]["sum"], first
    assert first["sampling"]["per_token"] < first["greedy"]["per_token"]
    assert first["sampling"]["distinct"] > max(first["greedy"]["distinct"], first["beam"]["distinct"], first["guided"]["distinct"])
    assert max(first["greedy"]["distinct"], first["beam"]["distinct"]) < min(first["sampling"]["distinct"], first["guided"]["distinct"])
    widget.locator('[name="seed"]').fill("2")
    second = run()
    assert second["sampling"]["ids"] != first["sampling"]["ids"]
    assert all(second[m]["ids"] == first[m]["ids"] for m in ("greedy", "beam", "guided"))
