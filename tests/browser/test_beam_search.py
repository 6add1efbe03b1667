"""<tx-beam-search> runs beam search on the site's model in the browser and finds what the
reference finds: ``model_export.beam`` on the same graph in onnxruntime, token for token and
score for score, candidate for candidate at every step. (That reference gives Hugging Face
transformers' ``generate(num_beams=...)`` result on the exported checkpoint:
tests/model_export/test_beam.py.)

The reader's controls are used as a reader would; the tree, the finished list and the messages
are read from what the widget shows. A search is compared on a second widget added to the page
with a `variant` attribute naming a variant onnxruntime reproduces to ~1e-6.
"""

from __future__ import annotations

import json

import pytest

from generate_reference import add_variant_widget, exact_variant, graph_path, model_widget_ready
from model_export.beam import beam_search
from model_export.gpt2 import GPT2Config
from model_export.runtime import OrtGPT2
from served import manifest, model_dir
from widget_checks import fits_a_phone, press_go, refuses_a_prompt_too_long, refuses_out_of_range, set_fields

pytestmark = pytest.mark.browser

PAGE = "decoding/beam-search/"
WIDGET = "tx-beam-search#exact"
PERIOD = 13  # "." in GPT-2's vocabulary
# name: (prompt, settings typed into the widget, beam_search's options)
CASES = {
    "4 beams, a full stop ends": (
        "The attention weights of a head",
        dict(beams=4, maxNewTokens=12, lengthPenalty=1, earlyStopping="false", endToken="period"),
        dict(num_beams=4, new_tokens=12, eos=PERIOD, length_penalty=1.0, early_stopping=False),
    ),
    "3 beams, short favoured, early stopping": (
        "A language model",
        dict(beams=3, maxNewTokens=10, lengthPenalty=-0.5, earlyStopping="true", endToken="period"),
        dict(num_beams=3, new_tokens=10, eos=PERIOD, length_penalty=-0.5, early_stopping=True),
    ),
}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import GPT2TokenizerFast

    return GPT2TokenizerFast.from_pretrained(model_dir())


def search(p, widget, selector, timeout=180_000):
    press_go(p, widget, selector, timeout)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()


def shown_tree(widget) -> list[list[dict]]:
    """Every step's candidates as the tree shows them."""
    return widget.locator(".steps > li").evaluate_all(
        """rows => rows.map(row => [...row.querySelectorAll('.cand')].map(c => ({
             parent: Number(c.dataset.parent), token: Number(c.dataset.token),
             logProb: Number(c.dataset.logProb), fate: c.dataset.fate })))"""
    )


@pytest.mark.parametrize("case", list(CASES))
def test_the_search_is_the_references_token_for_token(tab, tokenizer, case):
    prompt, typed, options = CASES[case]
    p = tab.visit(PAGE)
    model_widget_ready(p, "tx-beam-search")  # the page's own widget, with the default variant
    variant = exact_variant(manifest(), "wasm")
    widget = model_widget_ready(p, add_variant_widget(p, "tx-beam-search", variant, "document.querySelector('article').append(el)"))
    widget.locator("textarea").fill(prompt)
    set_fields(widget, **typed)
    search(p, widget, WIDGET)

    ids = tokenizer.encode(prompt)
    runner = OrtGPT2(graph_path(model_dir(), manifest(), variant), GPT2Config(**manifest()["config"]), threads=1)
    want = beam_search(runner, ids, **options)
    shown = json.loads(widget.get_attribute("data-hypotheses"))
    assert [h["tokens"] for h in shown] == want.sequences
    assert [h["score"] for h in shown] == pytest.approx(want.scores, abs=1e-4)

    # The tree: one row a step, 2 × beams candidates each, as the reference's steps.
    tree = shown_tree(widget)
    assert len(tree) == len(want.steps) == int(widget.get_attribute("data-steps"))
    for row, step in zip(tree, want.steps, strict=True):
        assert [c["token"] for c in row] == step.tokens.tolist()
        assert [c["parent"] for c in row] == step.parents.tolist()
        assert [c["logProb"] for c in row] == pytest.approx(step.log_probs.tolist(), abs=1e-4)
        kept = [i for i, c in enumerate(row) if c["fate"] == "kept"]
        assert sorted(kept) == sorted(step.kept.tolist())
        beams = options["num_beams"]
        fates = ["kept" if i in step.kept else ("finished" if i < beams else "ended") if step.ended[i] else "pruned" for i in range(len(row))]
        assert [c["fate"] for c in row] == fates

    # What the reader reads: each hypothesis as text after the prompt, with its score's sum.
    items = widget.locator(".hyps li")
    assert items.count() == len(want.sequences)
    for i, tokens in enumerate(want.sequences):
        text = items.nth(i).inner_text()
        assert text.startswith(prompt + tokenizer.decode(tokens, clean_up_tokenization_spaces=False)), text
        assert f"= {want.scores[i]:.2f}".replace("-", "−") in text, text
    status = widget.locator(".status").inner_text()
    assert status.startswith("Done"), status
    assert "ms a step for" in widget.locator(".rate").inner_text()


def test_limits_stop_and_a_phone(tab, tokenizer):
    p = tab.visit(PAGE)
    widget = model_widget_ready(p, "tx-beam-search")
    status = widget.locator(".status")

    # Out-of-range settings are refused with the range, and Search waits for a valid value.
    cases = [
        ("beams", "9", "The number of beams must be a whole number from 1 to 8"),
        ("beams", "0", "from 1 to 8"),
        ("maxNewTokens", "65", "Max new tokens must be a whole number from 1 to 64"),
        ("lengthPenalty", "9", "The length penalty must be a number from −5 to 5"),
    ]
    refuses_out_of_range(widget, cases, {"beams": "4", "maxNewTokens": "12", "lengthPenalty": "1"})

    # A prompt and length the model cannot hold: the worker's message gives the numbers.
    set_fields(widget, beams=4, maxNewTokens=12)
    refuses_a_prompt_too_long(p, widget, "tx-beam-search", tokenizer, manifest()["config"]["n_positions"], 12)

    # Stop: pressed at once, the search ends after the step in progress and lists what it has.
    widget.locator("textarea").fill("The model")
    set_fields(widget, beams=8, maxNewTokens=64, endToken="none")
    runs = int(widget.get_attribute("data-runs"))
    widget.evaluate("el => { el.shadowRoot.querySelector('button.go').click(); el.shadowRoot.querySelector('button.stop').click(); }")
    p.wait_for_function(f"() => Number(document.querySelector('tx-beam-search').dataset.runs) > {runs}")
    assert widget.get_attribute("data-reason") == "stopped"
    steps = int(widget.get_attribute("data-steps"))
    assert 1 <= steps < 64
    assert status.inner_text().startswith(f"Stopped after {steps} step"), status.inner_text()
    assert widget.locator(".beams li").count() == 8  # the beams still running when it stopped
    assert widget.locator(".steps > li").count() == steps

    # A finished search fits a phone: nothing sticks out sideways at 375 px.
    set_fields(widget, beams=4, maxNewTokens=12, endToken="period")
    search(p, widget, "tx-beam-search")
    fits_a_phone(p, widget, "Finished hypotheses")
