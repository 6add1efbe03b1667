"""<tx-tokenizer>: GPT-2's tokenizer in the browser gives Hugging Face's ids for every example, shows
them as the reader reads them, counts each line, and refuses an empty or oversized text."""

import json

import pytest
from gpt2_vocab import hf_tokenizer

from widget_checks import wait_error, wait_ready

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def hf_ids():
    tok = hf_tokenizer(special=True)  # Hugging Face's GPT-2 tokenizer turns literal <|endoftext|> into 50256
    return lambda text: tok.encode(text).ids


def shown(widget) -> dict:
    return widget.evaluate(
        """el => ({
          ids: JSON.parse(el.dataset.ids),
          chips: [...el.shadowRoot.querySelectorAll('.chip')].map(c => [Number(c.dataset.id), c.querySelector('.piece').textContent]),
          lines: [...el.shadowRoot.querySelectorAll('tr[data-line]')].map(r => [Number(r.dataset.chars), Number(r.dataset.bytes), Number(r.dataset.tokens)]),
          text: el.shadowRoot.querySelector('textarea').value,
        })"""
    )


def test_every_example_is_tokenized_as_hugging_face_does(tab, hf_ids):
    p = tab.visit("foundations/tokenizers/")
    widget = p.locator("tx-tokenizer")
    options = widget.locator('select[name="preset"] option').evaluate_all("os => os.map(o => o.value)")
    assert options[-1] == "own" and len(options) == 8
    for preset in options[:-1]:
        widget.locator('select[name="preset"]').select_option(preset)
        wait_ready(p, "tx-tokenizer")
        p.wait_for_function("el => JSON.parse(el.dataset.request).text === el.shadowRoot.querySelector('textarea').value", arg=widget.element_handle())
        got = shown(widget)
        assert got["ids"] == hf_ids(got["text"]), preset
        assert [i for i, _ in got["chips"]] == got["ids"]
        lines = got["text"].split("\n")
        assert got["lines"] == [[len(line), len(line.encode()), len(hf_ids(line))] for line in lines], preset
        text = widget.inner_text()
        assert "[object" not in text and "undefined" not in text and "NaN" not in text

    # What a reader sees for the cases the page discusses.
    widget.locator('select[name="preset"]').select_option("spaces")
    wait_ready(p, "tx-tokenizer")
    assert shown(widget)["chips"][-1] == [220, "␣"]  # the trailing space is a token of its own
    widget.locator('select[name="preset"]').select_option("special")
    wait_ready(p, "tx-tokenizer")
    assert [50256, "<|endoftext|>"] in shown(widget)["chips"]
    widget.locator('select[name="preset"]').select_option("scripts")
    wait_ready(p, "tx-tokenizer")
    english, *_, japanese = shown(widget)["lines"]
    assert japanese[2] / japanese[0] > 2 * english[2] / english[0]  # tokens per character


def test_own_text_and_bad_input(tab, hf_ids):
    p = tab.visit("foundations/tokenizers/")
    widget = p.locator("tx-tokenizer")
    wait_ready(p, "tx-tokenizer")
    box = widget.locator("textarea")
    box.fill("Ünïcödé 🙂 works")
    request = wait_ready(p, "tx-tokenizer", {"text": "Ünïcödé 🙂 works"})
    assert shown(widget)["ids"] == hf_ids(request["text"])
    assert widget.locator('select[name="preset"]').input_value() == "own"
    assert "<0x" in json.dumps(shown(widget)["chips"])  # the emoji's bytes are split across tokens
    box.fill("")
    assert "Type some text" in wait_error(p, "tx-tokenizer")
    box.fill("x" * 4001)
    widget.locator(".status-text").filter(has_text="use at most 4,000").wait_for(timeout=30_000)
    assert wait_error(p, "tx-tokenizer").endswith("4,001 characters long; use at most 4,000.")
    box.fill("ok again")
    wait_ready(p, "tx-tokenizer", {"text": "ok again"})
