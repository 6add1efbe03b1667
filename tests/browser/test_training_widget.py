"""<tx-train> trains in the page's Python worker exactly as demos.training does in CPython, and
its controls (Pause, Resume, Stop) and messages work."""

import json

import pytest

from demos import training

pytestmark = pytest.mark.browser

# One tab for the Python labs' test files (conftest.py `shared_tab`): Python starts once for them.
SHARED_TAB = "python labs"

SMALL = {"task": "text", "seed": "3", "steps": "30", "layers": "1", "width": "16"}


def open_widget(tab, settings):
    p = tab.embed("train", "&".join(f"{k}={v}" for k, v in settings.items()))
    p.wait_for_function("() => document.querySelector('tx-train')?.dataset.state === 'ready'", timeout=120_000)
    return p, p.locator("tx-train")


def wait_running(p, state, timeout=120_000):
    p.wait_for_function("s => document.querySelector('tx-train').dataset.running === s", arg=state, timeout=timeout)


def test_the_curve_for_a_seed_is_cpythons(tab):
    p, widget = open_widget(tab, SMALL)
    widget.locator("button.go").click()
    p.wait_for_function(
        "() => { const el = document.querySelector('tx-train'); return el.dataset.running === 'false' && el.dataset.step === '30'; }", timeout=120_000
    )
    shown = json.loads(widget.get_attribute("data-losses"))
    expected = [r["loss"] for r in training.train("text", seed=3, steps=30, n_layer=1, n_embd=16)["records"]]
    assert shown == pytest.approx(expected, rel=1e-6)
    assert widget.locator(".status-text").inner_text().startswith("Done after 30 steps: held-out loss ")
    points = widget.locator(".chart svg polyline.train").get_attribute("points").split()
    assert len(points) == 30  # one point per step shown, none NaN
    assert all(float(v) == float(v) for pt in points for v in pt.split(","))
    assert widget.locator(".sample").inner_text().startswith("The ")
    assert float(widget.get_attribute("data-steps-per-second")) > 0


def test_pause_resume_and_stop(tab):
    p, widget = open_widget(tab, {**SMALL, "steps": "3000"})
    widget.locator("button.go").click()
    p.wait_for_function("() => Number(document.querySelector('tx-train').dataset.step) > 0", timeout=120_000)
    widget.locator("button.pause").click()
    # the chunk on its way finishes, then the widget says where it paused and takes no step more
    paused = """() => { const el = document.querySelector('tx-train');
                        return el.shadowRoot.querySelector('.status-text').textContent === `Paused at step ${el.dataset.step}.`; }"""
    p.wait_for_function(paused, timeout=30_000)
    paused_at = widget.get_attribute("data-step")
    assert widget.locator("button.pause").inner_text() == "Resume"
    widget.locator("button.pause").click()
    p.wait_for_function("n => Number(document.querySelector('tx-train').dataset.step) > n", arg=int(paused_at), timeout=30_000)
    widget.locator("button.stop").click()
    wait_running(p, "false", 30_000)
    status = widget.locator(".status-text").inner_text()
    assert status.startswith(f"Stopped after {widget.get_attribute('data-step')} steps")
    assert int(widget.get_attribute("data-step")) < 3000
    assert widget.locator("button.go").is_enabled()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("width", "33", "The width (33) must be a multiple of the number of heads (2)."),
        ("layers", "9", "The number of layers must be between 1 and 4, got 9."),
        ("lr", "", "The learning rate must be"),
    ],
)
def test_bad_settings_get_a_message(tab, field, value, message):
    p, widget = open_widget(tab, SMALL)
    widget.locator(f"[name={field}]").fill(value)
    widget.locator("button.go").click()
    p.wait_for_function("() => document.querySelector('tx-train').dataset.state === 'error'", timeout=60_000)
    assert message in widget.locator(".status-text").inner_text()
    assert widget.locator("button.go").is_enabled()
