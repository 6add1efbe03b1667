"""``sitebuild/model_hook.py``: the export report in its page, the random-weights banner, and a
site copy of the model without the private build files."""

import json

import pytest

from sitebuild import model_hook
from sitebuild.paths import ROOT


@pytest.fixture
def hook(tmp_path, monkeypatch):
    monkeypatch.setattr(model_hook, "MODELS", tmp_path / "models")
    return model_hook


def served(tmp_path, manifest=None, report=None, name="tiny"):
    directory = tmp_path / "models" / name
    directory.mkdir(parents=True)
    if manifest is not None:
        (directory / "manifest.json").write_text(json.dumps(manifest))
    if report is not None:
        (directory / "report.md").write_text(report)
    return {"extra": {"tx_model": name}, "site_dir": str(tmp_path / "site")}


PAGE = "# How\n\nIntro.\n\n## The model on this site\n\n<!-- model-export:report -->\n\n## After\n"
REPORT = "**Model** `tiny`.\n\n## Variants\n\n| a |\n| --- |\n\n```text\n## not a heading\n```\n"
HTML = '<body><div data-md-component="announce">\n</div><header>x</header></body>'


def test_report_replaces_the_marker_one_level_down(hook, tmp_path):
    config = served(tmp_path, report=REPORT)
    page = hook.on_page_markdown(PAGE, None, config, None)
    assert "<!-- model-export:report -->" not in page
    assert "### Variants" in page and "\n## Variants" not in page
    assert "```text\n## not a heading\n```" in page  # code blocks untouched
    assert page.index("## The model on this site") < page.index("### Variants") < page.index("## After")


def test_pages_without_the_marker_are_untouched(hook, tmp_path):
    config = served(tmp_path, report=REPORT)
    assert hook.on_page_markdown("# Other\n", None, config, None) == "# Other\n"


def test_missing_report_says_how_to_make_it(hook, tmp_path):
    config = served(tmp_path)
    page = hook.on_page_markdown(PAGE, None, config, None)
    assert "make model MODEL=tiny" in page and '!!! note "No export report for `tiny`"' in page


def test_random_weights_banner_on_every_page(hook, tmp_path):
    config = served(tmp_path, manifest={"name": "tiny", "source": "preset:tiny", "random_weights": True})
    html = hook.on_post_page(HTML, None, config)
    assert html.count("data-tx-random-weights") == 1
    assert html.index('data-md-component="announce"') < html.index("Random weights.") < html.index("<header>")
    assert "make serve MODEL=gpt2" in html


@pytest.mark.parametrize("manifest", [{"name": "gpt2", "source": "gpt2", "random_weights": False}, None])
def test_no_banner_for_trained_weights_or_no_model(hook, tmp_path, manifest):
    config = served(tmp_path, manifest=manifest)
    assert hook.on_post_page(HTML, None, config) == HTML


def test_post_build_drops_private_files_and_refuses_huge_ones(hook, tmp_path):
    config = served(tmp_path)
    site_model = tmp_path / "site" / "models" / "tiny"
    (site_model / ".build").mkdir(parents=True)
    (site_model / ".build" / "reference.onnx").write_bytes(b"x")
    (site_model / "q4").mkdir()
    (site_model / "q4" / "model.onnx").write_bytes(b"x")
    hook.on_post_build(config)
    assert not (site_model / ".build").exists() and (site_model / "q4" / "model.onnx").exists()

    with open(site_model / "q4" / "model.onnx.data.0", "wb") as f:
        f.truncate(hook.PAGES_FILE_LIMIT + 1)  # sparse: no disk space used
    with pytest.raises(Exception, match="over GitHub Pages' 100 MB limit"):
        hook.on_post_build(config)


def test_the_report_page_holds_the_marker():
    page = (ROOT / "docs" / "model" / "export-report.md").read_text()
    assert page.count("<!-- model-export:report -->") == 1
    assert page.count('??? question "') >= 2
