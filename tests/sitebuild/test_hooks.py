"""hooks.py's model copy: the pipeline figures' tables come from the model export, copied, not computed."""

import json
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError
from site_under_test import SITE

from model_export.layout import MANIFEST, TABLES_DIR
from model_export.package import listed_files
from sitebuild import hooks, pipeline_hook

ROOT = Path(__file__).resolve().parents[2]


def model_dir(tmp_path, tables=True):
    """A model directory with one variant file, the tokenizer and (or not) its tables."""
    files = {"q4x/model.onnx": b"graph", "vocab.json": b"{}", f"{TABLES_DIR}/index.json": b"{}", f"{TABLES_DIR}/parity/torch.f32": b"\0" * 8}
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    entry = lambda rel: {"path": rel, "bytes": len(files[rel]), "sha256": "0" * 64}  # noqa: E731
    manifest = {"variants": [{"name": "q4x", "files": [entry("q4x/model.onnx")]}], "tokenizer": {"vocab": entry("vocab.json")}}
    if tables:
        manifest["tables"] = [entry(f"{TABLES_DIR}/index.json"), entry(f"{TABLES_DIR}/parity/torch.f32")]
    return tmp_path, manifest


def test_a_complete_model_passes(tmp_path):
    directory, manifest = model_dir(tmp_path)
    assert hooks.check_model(directory, manifest, "tiny") is None
    assert [f["path"] for f in listed_files(manifest)][-2:] == [f"{TABLES_DIR}/index.json", f"{TABLES_DIR}/parity/torch.f32"]


@pytest.mark.parametrize("manifest_tables", [None, []], ids=["no tables entry", "tables stage not run"])
def test_a_model_without_tables_says_which_command_builds_them(tmp_path, manifest_tables):
    directory, manifest = model_dir(tmp_path, tables=False)
    if manifest_tables is not None:
        manifest["tables"] = manifest_tables
    with pytest.raises(PluginError) as err:
        hooks.check_model(directory, manifest, "tiny")
    message = str(err.value)
    assert f"{TABLES_DIR}/ is missing" in message
    assert "make model MODEL=tiny" in message and f"model-export tables --out {directory}" in message


def test_a_listed_file_that_is_missing_stops_the_build(tmp_path):
    directory, manifest = model_dir(tmp_path)
    (directory / TABLES_DIR / "parity" / "torch.f32").unlink()
    with pytest.raises(PluginError, match=r"lacks 1 file\(s\) .*tables/parity/torch.f32.*make model MODEL=tiny"):
        hooks.check_model(directory, manifest, "tiny")


def test_the_pipeline_hook_computes_nothing_at_build_time():
    """Only the code markers are left in the hook; the tables are the export's (model_export.tables)."""
    for name in ("on_post_build", "write_tables", "weight_layout", "layout_tensor", "read_weights"):
        assert not hasattr(pipeline_hook, name), name


@pytest.mark.skipif(not (SITE / "models" / "index.json").is_file(), reason="no built site")
def test_the_site_serves_the_exported_tables_as_they_are():
    name = json.loads((SITE / "models" / "index.json").read_text())["default"]
    exported, served = ROOT / "build" / "models" / name, SITE / "models" / name
    if not (exported / MANIFEST).is_file():
        pytest.skip(f"build/models/{name} is not built")
    manifest = json.loads((exported / MANIFEST).read_text())
    assert manifest["tables"], "the served model has no tables"
    for entry in manifest["tables"]:
        assert (served / entry["path"]).read_bytes() == (exported / entry["path"]).read_bytes(), entry["path"]
    on_site = sorted(p.relative_to(served).as_posix() for p in (served / TABLES_DIR).rglob("*") if p.is_file())
    assert on_site == sorted(entry["path"] for entry in manifest["tables"])
