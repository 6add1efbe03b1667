"""The "Looking inside the model" widgets as a reader uses them: what they show against PyTorch
hooks (model_export/interpret.py) on the same weights, clicks, long runs and Cancel, the
messages for bad input, and the inputs kept in the address (on the book's pages and the embed
pages). The tests share one tab (tabs.SharedTab): the model starts once. The numbers are compared on q4x (float32 compute, exact to 1e-4 in probability), which
the embed pages load when asked (`?variant=q4x&backend=wasm`); the reader-view test checks
every page of the section at phone width.
"""

from __future__ import annotations

from urllib.parse import quote

import numpy as np
import pytest

from faults import manifest
from inspect_reference import hooked
from model_export import interpret
from widget_checks import grid_values, settle

pytestmark = pytest.mark.browser

EXACT = "variant=q4x&backend=wasm"
PROB = 1e-4


def config():
    return manifest()["config"]


def model():
    return hooked("q4x")


def embed(tab, name, query=""):
    p = tab.embed(name, f"{EXACT}{'&' if query else ''}{query}")
    state, status = settle(p, f"tx-{name}")
    assert state == "ready", status
    return p, p.locator(f"tx-{name}")


def tokens_of(widget):
    """The token ids of the widget's prompt, from the model the widget loaded."""
    return widget.evaluate("(el) => el.widget.model.tokenizer.encode(el.shadowRoot.querySelector('textarea').value)")


def test_logit_lens_grid_final_rank_and_top10(tab):
    p, widget = embed(tab, "logit-lens")
    ids = tokens_of(widget)
    want = interpret.logit_lens(model(), ids)  # (L + 1, T, V)
    probs, tops = grid_values(widget, "lens")
    assert probs.shape == want.shape[:2]
    np.testing.assert_array_equal(tops, want.argmax(-1))
    np.testing.assert_allclose(probs, want.max(-1), atol=PROB, rtol=0)
    final = int(want[-1, -1].argmax())
    assert widget.get_attribute("data-final") == str(final)
    ranks = widget.evaluate("(el) => [...el.shadowRoot.querySelectorAll('.final-table tbody tr')].map(tr => +tr.dataset.rank)")
    assert ranks == [int((row > row[final]).sum()) + 1 for row in want[:, -1]]
    # a click on a cell shows its top 10, and the address keeps the choice
    widget.locator("figure[data-name='lens'] td[data-r='1'][data-c='2'] button").click()
    shown = widget.evaluate("(el) => [...el.shadowRoot.querySelectorAll('.top-table tbody tr')].map(tr => +tr.dataset.id)")
    assert shown == np.argsort(-want[1, 2], kind="stable")[:10].tolist()
    assert "logit-lens.layer=1" in p.url and "logit-lens.position=2" in p.url
    text = widget.locator(".card").inner_text()
    assert "Top 10 read after block 0, position 2" in text
    assert ("random weights" in text) == manifest()["random_weights"]  # the card says when the model is untrained


def test_head_ablation_kl_top10_and_the_map(tab):
    p, widget = embed(tab, "head-ablation", "heads=0.1,%201.3&mode=mean")
    ids = tokens_of(widget)
    before, after = interpret.ablate_heads(model(), ids, [(0, 1), (1, 3)], "mean")
    kl = interpret.kl_divergence(before, after)
    assert float(widget.get_attribute("data-kl")) == pytest.approx(kl, rel=2e-3, abs=1e-7)
    after_ids = widget.evaluate("(el) => [...el.shadowRoot.querySelectorAll('.after-table tbody tr')].map(tr => +tr.dataset.id)")
    assert after_ids == np.argsort(-after, kind="stable")[:10].tolist()
    assert "KL(before ‖ after) =" in widget.locator(".summary").inner_text()
    # the map: one run per head, each head's KL
    widget.locator(".map-button").click()
    state, status = settle(p, "tx-head-ablation")
    assert state == "ready" and status.startswith(f"{config()['n_layer'] * config()['n_head']} runs in"), status
    values, _ = grid_values(widget, "heads")
    want = [
        [interpret.kl_divergence(*interpret.ablate_heads(model(), ids, [(layer, h)], "mean")) for h in range(config()["n_head"])]
        for layer in range(config()["n_layer"])
    ]
    np.testing.assert_allclose(values, want, rtol=2e-3, atol=1e-7)
    # a click on the map adds that head to the ones switched off
    widget.locator("figure[data-name='heads'] td[data-r='1'][data-c='0'] button").click()
    assert widget.locator("input[name='heads']").input_value() == "0.1, 1.3, 1.0"


def test_patching_logit_differences_and_heat_maps(tab):
    p, widget = embed(tab, "patching")
    clean = widget.evaluate("(el) => el.widget.model.tokenizer.encode(el.shadowRoot.querySelector('[name=clean]').value)")
    corrupted = widget.evaluate("(el) => el.widget.model.tokenizer.encode(el.shadowRoot.querySelector('[name=corrupted]').value)")
    good, bad = widget.evaluate("(el) => ['good', 'bad'].map(n => el.widget.model.tokenizer.encode(el.shadowRoot.querySelector(`[name=${n}]`).value)[0])")
    m = model()
    base = interpret.run_with_hooks(m, clean)
    ld_clean = interpret.logit_difference(base.logits, good, bad)
    ld_corrupt = interpret.logit_difference(interpret.run_with_hooks(m, corrupted).logits, good, bad)
    assert float(widget.get_attribute("data-ld-clean")) == pytest.approx(ld_clean, abs=1e-4)
    assert float(widget.get_attribute("data-ld-corrupt")) == pytest.approx(ld_corrupt, abs=1e-4)
    widget.locator(".resid-button").click()
    state, status = settle(p, "tx-patching")
    assert state == "ready", status
    values, _ = grid_values(widget, "resid")
    np.testing.assert_allclose(values, interpret.patch_residual(m, clean, corrupted, good, bad), atol=1e-3 / max(abs(ld_clean - ld_corrupt), 1e-3), rtol=0)
    widget.locator(".heads-button").click()
    state, status = settle(p, "tx-patching")
    assert state == "ready", status
    values, _ = grid_values(widget, "heads")
    np.testing.assert_allclose(values, interpret.patch_heads(m, clean, corrupted, good, bad), atol=1e-3 / max(abs(ld_clean - ld_corrupt), 1e-3), rtol=0)


def test_induction_scores_loss_and_pattern(tab):
    p, widget = embed(tab, "induction", "length=8&seed=2")
    ids = [int(i) for i in widget.get_attribute("data-ids").split(",")]
    assert len(ids) == 17 and ids[1:9] == ids[9:]
    want = interpret.induction(model(), ids, 8)
    values, _ = grid_values(widget, "scores")
    np.testing.assert_allclose(values, want["scores"], atol=1e-5, rtol=0)
    loss, _ = grid_values(widget, "loss")
    np.testing.assert_allclose(loss, [want["loss"][:8], want["loss"][8:16]], atol=1e-3, rtol=0)
    top = np.unravel_index(int(np.argmax(want["scores"])), want["scores"].shape)
    assert widget.get_attribute("data-pattern") == f"{top[0]}.{top[1]}"
    widget.locator("figure[data-name='scores'] td[data-r='0'][data-c='1'] button").click()
    assert widget.get_attribute("data-pattern") == "0.1"
    assert "induction.head=0.1" in p.url


def test_logit_attribution_parts(tab):
    p, widget = embed(tab, "logit-attribution", "token=%20the")
    ids = tokens_of(widget)
    token = widget.evaluate("(el) => el.widget.model.tokenizer.encode(' the')[0]")
    assert widget.get_attribute("data-token") == str(token)
    want = interpret.logit_attribution(model(), ids, token)
    heads, _ = grid_values(widget, "heads")
    np.testing.assert_allclose(heads, want["heads"], atol=1e-4, rtol=0)
    mlps, _ = grid_values(widget, "mlps")
    np.testing.assert_allclose(mlps[0], want["mlps"], atol=1e-4, rtol=0)
    assert float(widget.get_attribute("data-logit")) == pytest.approx(want["logit"], abs=1e-4)
    assert "the final LayerNorm's bias" in widget.locator(".summary").inner_text()


BAD_INPUT = [
    ("head-ablation", "heads=7.9", "“7.9” is not a head of this model"),
    ("head-ablation", "mode=max", "The mode must be “zero” or “mean”, not “max”."),
    ("patching", "clean=The%20cat&corrupted=The%20black%20cat&good=%20sat&bad=%20ran", "The clean prompt has 2 tokens and the corrupted one 3"),
    ("patching", "good=%20Parisian%20city", "tokens; it must be exactly one (most words need a leading space"),
    ("patching", "pair=moon", "There is no ready-made pair “moon”"),
    ("logit-lens", "prompt=", "The prompt is empty: type some text."),
    ("logit-lens", "layer=40", "The layer must be a whole number from 0 to"),
    ("induction", "length=3", "Tokens per copy must be a whole number from 4 to"),
    ("induction", "head=9.9", "“9.9” is not a head of this model"),
    ("logit-attribution", "token=%20Eiffel%20Tower", "” is 4 tokens; name exactly one"),
]


@pytest.mark.parametrize(("name", "query", "message"), BAD_INPUT, ids=[f"{n}-{q}" for n, q, _ in BAD_INPUT])
def test_bad_input_gets_a_clear_message(tab, name, query, message):
    p = tab.embed(name, f"{EXACT}&{query}")
    state, status = settle(p, f"tx-{name}")
    assert state == "error" and message in status, status
    assert p.locator(f"tx-{name}").locator(".status .retry").is_hidden()  # the reader fixes the input instead


# Press Cancel the moment the widget shows `runs` runs done, as a reader's click then would: in
# the page, when data-progress changes, so that the run cannot end between seeing the button and
# pressing it (40 runs of the tiny model take under a second; a Playwright click came too late
# once in a fresh-clone run: the button had gone with the finished run). `window.__txCancelled`
# resolves to what the reader saw then.
CANCEL_AT = """runs => { window.__txCancelled = new Promise((resolve) => {
  const el = document.querySelector('tx-patching');
  const press = () => {
    const [done, total] = (el.dataset.progress || '0/0').split('/').map(Number);
    if (!(done >= runs && done < total)) return false;  // a run in flight, with `runs` done
    const cancel = el.shadowRoot.querySelector('.cancel');
    resolve({ visible: cancel.checkVisibility(), status: el.shadowRoot.querySelector('.status-text').textContent });
    cancel.click();
    return true;
  };
  if (press()) return;
  const watch = new MutationObserver(() => press() && watch.disconnect());
  watch.observe(el, { attributes: true, attributeFilter: ['data-progress'] });
}); }"""


def test_a_long_run_can_be_cancelled_and_run_again(tab):
    long = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
    query = f"clean={quote(long)}&corrupted={quote(long.replace('one', 'two', 1))}&good=%20twenty&bad=%20one"
    p, widget = embed(tab, "patching", query)
    p.evaluate(CANCEL_AT, 2)  # watching before the run starts
    widget.locator(".resid-button").click()
    seen = p.evaluate("() => window.__txCancelled")
    assert seen["visible"] and "runs" in seen["status"], seen
    state, status = settle(p, "tx-patching")
    assert state == "ready" and status.startswith("Cancelled after "), status
    done, total = (int(n) for n in status.removeprefix("Cancelled after ").split(" runs")[0].split(" of "))
    assert done < total
    assert widget.locator("figure[data-name='resid']").count() == 0
    widget.locator(".resid-button").click()
    state, status = settle(p, "tx-patching")
    assert state == "ready" and status.startswith(f"{total} runs in"), status


def test_the_address_keeps_the_inputs_on_the_book_page(tab):
    p = tab.visit("inside/logit-lens/")
    state, status = settle(p, "tx-logit-lens")
    assert state == "ready", status
    box = p.locator("tx-logit-lens textarea")
    box.fill("Shared links reproduce")
    p.wait_for_function("() => location.search.includes('logit-lens.prompt=Shared')", timeout=10_000)
    shared = p.url
    p.goto(shared)  # a fresh load of the shared address
    state, status = settle(p, "tx-logit-lens")
    assert state == "ready", status
    assert p.locator("tx-logit-lens textarea").input_value() == "Shared links reproduce"
    # the embed page takes the book page's parameters as they are
    query = shared.split("?", 1)[1]
    e = tab.reload(f"embed/logit-lens/?{query}")  # a fresh load: frame.js reports unknown parameters
    settle(e, "tx-logit-lens")
    assert e.locator("tx-logit-lens textarea").input_value() == "Shared links reproduce"
    assert e.locator("[role=alert]").count() == 0  # no "unknown parameter" note


def test_next_token_keeps_its_prompt_in_the_address(tab):
    p = tab.visit("")
    state, status = settle(p, "tx-next-token")
    assert state == "ready", status
    p.locator("tx-next-token textarea").fill("A shared start")
    p.wait_for_function("() => location.search.includes('next-token.prompt=A+shared+start')", timeout=10_000)
    p.goto(p.url)
    settle(p, "tx-next-token")
    assert p.locator("tx-next-token textarea").input_value() == "A shared start"
