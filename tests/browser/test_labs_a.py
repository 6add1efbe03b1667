"""The lab widgets <tx-attention>, <tx-size-calc>, <tx-positional> and <tx-rope> show
exactly what the same demos calls compute in CPython, after a reader changes a control."""

import numpy as np
import pytest

from demos import attention, positional, rope, size
from widget_checks import TOL, assert_close, press_keys, shown_attention, wait_error, wait_ready

pytestmark = pytest.mark.browser

# One tab for the Python labs' test files (conftest.py `shared_tab`): Python starts once for them.
SHARED_TAB = "python labs"


# ---------------------------------------------------------------------------
# <tx-attention>


def test_attention_explorer_matches_cpython(tab):
    p = tab.visit("labs/attention/")
    widget = p.locator("tx-attention")
    request = wait_ready(p, "tx-attention", {"causal": True})
    expected = attention.explore(**request)
    weights, masked = shown_attention(widget)
    assert_close(weights, expected["heads"][0]["weights"])
    assert masked.tolist() == (~np.array(expected["allowed"])).tolist()
    # the widget says its weights are untrained, so a sentence with meaning is not read as a finding
    assert widget.locator(".note").inner_text().startswith("Untrained: each word gets a fixed random vector")

    # A reader types a sentence, picks 3 heads, turns the mask off, adds padding, looks at head 2.
    widget.locator('[name="sentence"]').fill("attention is all you need")
    widget.locator('[name="heads"]').select_option("3")
    widget.locator('[name="causal"]').uncheck()
    widget.locator('[name="padding"]').focus()
    p.keyboard.press("ArrowRight")
    p.keyboard.press("ArrowRight")
    request = wait_ready(p, "tx-attention", {"sentence": "attention is all you need", "heads": 3, "causal": False, "padding": 2})
    widget.locator('[name="head"]').select_option("1")
    p.wait_for_function("() => document.querySelector('tx-attention').dataset.head === '1'")
    expected = attention.explore(**request)
    weights, masked = shown_attention(widget)
    assert_close(weights, expected["heads"][1]["weights"])
    assert masked.sum() == 7 * 2  # the two [PAD] columns, in every one of the 7 rows
    assert masked.tolist() == (~np.array(expected["allowed"])).tolist()
    assert widget.locator(".cell.masked").count() == 14
    labels = widget.evaluate("el => [...el.shadowRoot.querySelectorAll('.col')].map(c => c.dataset.token)")
    assert labels == expected["tokens"]

    # Keyboard: focus the first cell, move right; the readout names the pair and its weight.
    widget.locator('.cell[data-row="0"][data-col="0"]').focus()
    p.keyboard.press("ArrowRight")
    # The readout follows the focus, which moves on the key event: wait for it (a loaded machine is slow).
    p.wait_for_function(
        """() => document.querySelector('tx-attention').shadowRoot
                               .querySelector('.readout').textContent.includes('(key 2)')""",
        timeout=10_000,
    )
    readout = widget.locator(".readout").inner_text()
    assert "“attention” (query 1)" in readout and "“is” (key 2)" in readout
    assert f"{expected['heads'][1]['weights'][0][1]:.4f}" in readout

    # The heads must divide the width: 5 does not divide 24, and the widget says so.
    widget.locator('[name="heads"]').select_option("5")
    assert "5 heads do not divide the width 24" in wait_error(p, "tx-attention")
    widget.locator('[name="heads"]').select_option("4")
    wait_ready(p, "tx-attention", {"heads": 4})


# ---------------------------------------------------------------------------
# <tx-size-calc>


def lookup(result, dotted):
    for part in dotted.split("."):
        result = result[part]
    return result


def shown_sizes(widget):
    return widget.evaluate("""el => Object.fromEntries([...el.shadowRoot.querySelectorAll('td[data-key]')]
        .map(td => [td.dataset.key, td.dataset.value]))""")


def test_size_calculator_matches_cpython(tab):
    p = tab.visit("labs/model-size/")
    widget = p.locator("tx-size-calc")
    request = wait_ready(p, "tx-size-calc", {"n_layer": 12, "d_model": 768})
    expected = size.model_size(**request)
    values = shown_sizes(widget)
    assert float(values["parameters.total"]) == 124_439_808
    for key, value in values.items():
        assert float(value) == pytest.approx(lookup(expected, key), rel=TOL)

    # Every preset row: computed and published counts as demos.size.preset_table gives them.
    rows = widget.evaluate("""el => [...el.shadowRoot.querySelectorAll('.all tbody tr')].map(tr => [
        tr.dataset.id, tr.querySelector('[data-computed]').dataset.computed,
        tr.querySelector('[data-published]').dataset.published])""")
    assert rows == [[r["id"], str(r["computed"]), str(r["published"])] for r in size.preset_table()]

    # Pick LLaMA 7B, then switch to grouped-query attention with 8 KV heads and a 4096-token context.
    widget.locator('[name="preset"]').select_option("llama-7b")
    wait_ready(p, "tx-size-calc", {"d_model": 4096, "n_head": 32})
    widget.locator('[name="n_kv_head"]').fill("8")
    widget.locator('[name="context_length"]').fill("4096")
    request = wait_ready(p, "tx-size-calc", {"d_model": 4096, "n_kv_head": 8, "context_length": 4096})
    expected = size.model_size(**request)
    values = shown_sizes(widget)
    for key, value in values.items():
        assert float(value) == pytest.approx(lookup(expected, key), rel=TOL)
    assert float(values["kv_cache.bytes_per_token.gqa"]) == 131_072
    assert widget.locator('[name="preset"]').input_value() == "custom"

    # Invalid fields are named in the widget (Python checks divisibility, the widget whole numbers).
    widget.locator('[name="n_head"]').fill("7")
    assert "n_head must divide d_model" in wait_error(p, "tx-size-calc")
    assert widget.locator('[name="n_head"]').get_attribute("aria-invalid") == "true"
    widget.locator('[name="n_head"]').fill("16")
    wait_ready(p, "tx-size-calc", {"n_head": 16})
    widget.locator('[name="n_layer"]').fill("0")
    assert "Layers must be a whole number" in wait_error(p, "tx-size-calc")


# ---------------------------------------------------------------------------
# <tx-positional> and <tx-rope>


def test_position_widgets_match_cpython(tab):
    p = tab.visit("labs/positions/")
    widget = p.locator("tx-positional")
    wait_ready(p, "tx-positional", {"d_model": 32})
    press_keys(widget.locator('[name="d_model"]'), "ArrowLeft", 4)  # 32 -> 24
    press_keys(widget.locator('[name="n_positions"]'), "ArrowLeft", 12)  # 32 -> 20
    widget.locator('[name="k"]').fill("11")
    request = wait_ready(p, "tx-positional", {"d_model": 24, "n_positions": 20, "k": 11})
    expected = positional.sinusoidal_view(**request)
    for kind, key, shape in (("table", "table", (20, 24)), ("similarity", "similarity", (20, 20))):
        cells = widget.evaluate(f"""el => [...el.shadowRoot.querySelectorAll('svg[data-kind={kind}] rect.cell')]
            .map(r => [Number(r.dataset.row), Number(r.dataset.col), r.dataset.value])""")
        shown = np.full(shape, np.nan)
        for i, j, v in cells:
            shown[i, j] = float(v)
        assert_close(shown, expected[key])
    readout = expected["readout"]
    for attr, key in (("data-dot", "dot"), ("data-shifted-dot", "shifted_dot"), ("data-closed-form", "closed_form")):
        assert float(widget.locator(f"[{attr}]").get_attribute(attr)) == pytest.approx(readout[key], abs=TOL)
    assert readout["dot"] == pytest.approx(readout["shifted_dot"], abs=1e-12)

    # Clicking a similarity cell picks p and q.
    widget.locator('svg[data-kind=similarity] rect.cell[data-row="4"][data-col="9"]').click()
    request = wait_ready(p, "tx-positional", {"p": 4, "q": 9})
    expected = positional.relative_dot(4, 9, 11, 24)
    assert float(widget.locator("[data-dot]").get_attribute("data-dot")) == pytest.approx(expected["dot"], abs=TOL)

    # <tx-rope>, on the same page.
    widget = p.locator("tx-rope")
    wait_ready(p, "tx-rope", {"m": 6, "n": 2})
    widget.locator('[name="d"]').select_option("64")
    press_keys(widget.locator('[name="m"]'), "ArrowRight", 4)  # 6 -> 10
    press_keys(widget.locator('[name="pair"]'), "ArrowRight", 3)  # 0 -> 3
    request = wait_ready(p, "tx-rope", {"d": 64, "m": 10, "pair": 3})
    expected = rope.rope_view(**request)
    for attr, key in (("data-theta", "theta"), ("data-score", "score"), ("data-relative-score", "relative_score"), ("data-pair-score", "pair_score")):
        assert float(widget.locator(f"[{attr}]").get_attribute(attr)) == pytest.approx(expected[key], rel=TOL, abs=TOL)
    points = widget.evaluate("""el => [...el.shadowRoot.querySelectorAll('circle.pt')]
        .map(c => [Number(c.dataset.distance), c.dataset.similarity, c.dataset.bound])""")
    assert [d for d, _, _ in points] == expected["distances"]
    assert_close([float(s) for _, s, _ in points], expected["similarity"])
    assert_close([float(b) for _, _, b in points], expected["bound"])

    # Moving the key by the same amount keeps the logit: only m - n matters.
    score = float(widget.locator("[data-score]").get_attribute("data-score"))
    press_keys(widget.locator('[name="n"]'), "ArrowRight", 4)  # 2 -> 6
    press_keys(widget.locator('[name="m"]'), "ArrowRight", 4)  # 10 -> 14
    wait_ready(p, "tx-rope", {"m": 14, "n": 6})
    assert float(widget.locator("[data-score]").get_attribute("data-score")) == pytest.approx(score, rel=1e-12)
