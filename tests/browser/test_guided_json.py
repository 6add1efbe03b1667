"""Guided JSON on the live model: every text the browser writes under a schema parses and
validates against it (``jsonschema``), over several schemas and seeds, and at every step the
mask allowed as many tokens as Outlines' own index (``outlines_core``, built from the schema's
expression over GPT-2's vocabulary) allows after the same tokens; the chosen token is always
one Outlines allows. Then <tx-guided-json> is used as a reader would: its text, verdict and
table, bad schemas, Stop, a phone.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from generate_reference import model_widget_ready
from served import manifest, model_dir
from widget_checks import shown_text

pytestmark = pytest.mark.browser

PAGE = "decoding/guided-json/"
WIDGET = "tx-guided-json"
SCHEMAS = {
    "a person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "age": {"type": "integer"},
            "languages": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
        },
        "required": ["name", "age", "languages"],
    },
    "literals and a nested object": {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "ok": {"type": "boolean"},
            "none": {"type": "null"},
            "size": {"enum": ["small", "large", 3]},
            "inner": {"type": "object", "properties": {"k": {"type": "string", "minLength": 2, "maxLength": 6}}, "required": ["k"]},
        },
        "required": ["x", "ok", "none", "size", "inner"],
    },
    "a bounded list": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4},
}
SEEDS = (1, 2, 3, 4)
GENERATE = """async ([prompt, options]) => {
  const { loadModel } = await import(new URL('/assets/tx/runtime/model.js', location.href).href);
  const model = await loadModel({ backend: 'wasm' });
  const run = model.generate(prompt, options);
  const steps = [];
  for await (const token of run) steps.push({ id: token.id, allowed: token.guide.allowed, any: token.guide.allowedAny });
  const result = await run.result;
  return { steps, reason: result.reason, ids: steps.map((s) => s.id) };
}"""


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import GPT2TokenizerFast

    return GPT2TokenizerFast.from_pretrained(model_dir())


@pytest.fixture(scope="module")
def vocabulary(tokenizer):
    """GPT-2's vocabulary for outlines_core: each token's bytes -> its id (end-of-text apart)."""
    from outlines_core import Vocabulary
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    to_byte = {char: byte for byte, char in bytes_to_unicode().items()}
    eos = manifest()["config"]["eos_token_id"]
    tokens = {bytes(to_byte[c] for c in token): [i] for token, i in tokenizer.get_vocab().items() if i != eos}
    return Vocabulary(eos, tokens)


def outlines_guide(schema, vocabulary):
    from outlines_core import Guide, Index
    from outlines_core.json_schema import build_regex_from_schema

    return Guide(Index(build_regex_from_schema(json.dumps(schema), whitespace_pattern=r"[ ]?"), vocabulary))


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_every_text_validates_and_every_mask_is_outlines(tab, tokenizer, vocabulary, name):
    schema = SCHEMAS[name]
    eos = manifest()["config"]["eos_token_id"]
    p = tab.visit(PAGE)
    for seed in SEEDS:
        options = {"schema": schema, "maxNewTokens": 64, "temperature": 1.0, "seed": seed, "alternatives": 0, "stopAtEos": False}
        run = p.evaluate(GENERATE, ["Here it is, as JSON:", options])
        text = tokenizer.decode(run["ids"])
        assert run["reason"] == "complete", (seed, run["reason"], text)
        jsonschema.validate(json.loads(text), schema)  # parses, and is valid
        guide = outlines_guide(schema, vocabulary)
        for i, step in enumerate(run["steps"]):
            allowed = set(guide.get_tokens())
            assert len(allowed - {eos}) == step["any"], (seed, i, text)
            assert step["allowed"] <= step["any"] + (eos in allowed)  # the length budget only removes
            assert step["id"] in allowed, (seed, i, text)
            guide.advance(step["id"])
        assert guide.is_finished() or eos in guide.get_tokens(), text  # Outlines agrees the text is complete


def test_the_widget_writes_valid_json_and_names_what_it_refuses(tab, tokenizer):
    p = tab.visit(PAGE)
    widget = model_widget_ready(p, WIDGET)
    status = widget.locator(".status")

    # The page's own example, greedy: the text shown is the text generated, and it parses.
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("button.go").click()
    p.wait_for_function(f"() => Number(document.querySelector('{WIDGET}').dataset.runs) > {runs}", timeout=120_000)
    ids = json.loads(widget.get_attribute("data-ids"))
    text = widget.get_attribute("data-text")
    assert text == tokenizer.decode(ids) == widget.locator(".json").inner_text()
    schema = json.loads(widget.locator('[name="schema"]').input_value())
    jsonschema.validate(json.loads(text), schema)
    assert widget.get_attribute("data-parses") == "true" and widget.get_attribute("data-reason") == "complete"
    assert widget.locator(".verdict").inner_text().startswith("✓ JSON.parse reads it")
    assert widget.locator("tbody tr").count() == len(ids)
    assert status.inner_text().startswith(f"The JSON is complete after {len(ids)} new tokens."), status.inner_text()

    # A schema that is not JSON, and one with a keyword the grammar does not support: named, and Generate waits.
    schema_field = widget.locator('[name="schema"]')
    for value, words in [
        ('{"type": "object",', "The schema is not valid JSON"),
        ('{"type": "object", "properties": {"a": {"type": "string", "pattern": "x+"}}}', "properties.a: “pattern” is not supported"),
        ('{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}', "properties.n: “minimum” is not supported"),
    ]:
        schema_field.fill(value)
        assert words in status.inner_text(), status.inner_text()
        assert schema_field.get_attribute("aria-invalid") == "true" and widget.locator("button.go").is_disabled()
    widget.locator('[name="example"]').select_option("answer")
    assert widget.get_attribute("data-state") == "ready" and widget.locator("button.go").is_enabled()

    # Too few tokens for the shortest JSON the schema allows: the worker gives the number.
    widget.locator('[name="maxNewTokens"]').fill("5")
    widget.locator("button.go").click()
    p.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.state === 'error'")
    shortest = len(json.dumps({"answer": "no", "reason": ""}, separators=(",", ":")))
    words = f"The shortest JSON this schema allows is {shortest} characters; allow at least {shortest} new tokens"
    assert words in status.inner_text(), status.inner_text()

    # Stop, pressed at once: ends after the step in progress; the verdict says the JSON is unfinished.
    widget.locator('[name="maxNewTokens"]').fill("60")
    runs = int(widget.get_attribute("data-runs"))
    widget.evaluate("el => { el.shadowRoot.querySelector('button.go').click(); el.shadowRoot.querySelector('button.stop').click(); }")
    p.wait_for_function(f"() => Number(document.querySelector('{WIDGET}').dataset.runs) > {runs}", timeout=120_000)
    assert widget.get_attribute("data-reason") == "stopped"
    assert widget.get_attribute("data-parses") == "false"
    assert widget.locator(".verdict").inner_text() == "Stopped before the JSON was complete: it does not parse yet."

    # A phone: nothing sticks out sideways at 375 px.
    p.set_viewport_size({"width": 375, "height": 740})
    width = p.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page is {width} px wide at 375 px"
    shown = shown_text(widget)
    for bad in ("undefined", "NaN", "[object"):
        assert bad not in shown, bad
