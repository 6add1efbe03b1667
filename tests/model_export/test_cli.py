"""``model-export`` errors and exit codes, the Hub probe behind ``make serve``, tolerances and
the validation table. Nothing here exports a graph."""

import errno
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from export_helpers import NPM_DIR, run_model_export
from model_export import hub
from model_export.cli import main
from model_export.tokenizer import TokenizerError, find_tokenizer
from model_export.validate import CheckResult, Tolerances, check, failures, format_table
from model_export.variants import VARIANTS
from model_export.weights import BOOK_SOURCE

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER_FILES = {"vocab.json": "encoder.json", "merges.txt": "vocab.bpe"}


@pytest.fixture
def no_hub(monkeypatch, tmp_path):
    """An empty Hugging Face cache and no network settings from the environment."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:9"}], ids=["offline-flag", "no-connection"])
def test_unreachable_hub_fails_fast_with_alternatives(tmp_path, capsys, monkeypatch, no_hub, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    start = time.perf_counter()
    code = main(["all", "--from", "gpt2", "--out", str(tmp_path / "out")])
    assert time.perf_counter() - start < 15
    assert code == 2
    err = capsys.readouterr().err
    assert "unreachable" in err and "--from DIR" in err and "--preset" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out.partial-*"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["all", "--from", "/no/such/dir", "--out", "x"], "directory not found: /no/such/dir"),
        (["build", "--preset", "huge", "--out", "x"], "invalid choice"),
        (["all", "--out", "x"], "one of the arguments --preset --from is required"),
        (["validate", "--out", "/no/such/build"], "run `model-export build --out /no/such/build` first"),
        (["quantize", "--out", "x", "--variants", "q5"], "choose among q4x,q8x,q4,q8,fp16"),
        (["all", "--preset", "tiny", "--out", "x", "--tol", "q4"], "expected KEY=NUMBER"),
        (["all", "--preset", "tiny", "--out", "x", "--piece-mb", "-1"], "must be >= 0"),
    ],
)
def test_bad_input_exits_2_without_traceback(argv, message):
    """Run as a subprocess: the real exit status and stderr of ``python -m model_export``."""
    result = run_model_export(*argv)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_help_documents_the_exit_codes():
    result = run_model_export("--help", timeout=60)
    assert result.returncode == 0
    for command in ("all", "build", "quantize", "validate", "package", "report"):
        assert command in result.stdout
    for line in ("0  success", "1  a validation check failed", "2  bad input", "3  a file could not be written"):
        assert line in result.stdout


def test_directory_without_config_is_rejected(tmp_path, capsys):
    assert main(["all", "--from", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_unknown_tolerance_key_is_bad_input(tmp_path, capsys):
    (tmp_path / "b" / ".build").mkdir(parents=True)
    (tmp_path / "b" / ".build" / "record.json").write_text('{"random_weights": true, "source": "preset:tiny"}')
    assert main(["validate", "--out", str(tmp_path / "b"), "--tol", "q9.kl=1"]) == 2
    assert "unknown tolerance 'q9.kl'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device", "/full/disk/model.onnx"),
        RuntimeError("SafetensorError: I/O error: No space left on device (os error 28)"),
    ],
)
def test_full_disk_exits_3_with_advice(tmp_path, capsys, monkeypatch, error):
    from model_export import pipeline

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(pipeline, "load", fail)
    assert main(["all", "--preset", "tiny", "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "no space left on the device" in err and "free some space" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.partial-*"))


def test_other_errors_are_not_disguised(tmp_path, monkeypatch):
    from model_export import pipeline

    def fail(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(pipeline, "load", fail)
    with pytest.raises(ZeroDivisionError):
        main(["all", "--preset", "tiny", "--out", str(tmp_path / "out")])


def test_tokenizer_prefers_the_model_directory(tmp_path):
    for name, npm_name in TOKENIZER_FILES.items():
        shutil.copyfile(NPM_DIR / npm_name, tmp_path / name)
    source = find_tokenizer(tmp_path, npm_dir=tmp_path / "absent")
    assert source.files == {name: tmp_path / name for name in TOKENIZER_FILES} and source.is_openai
    with pytest.raises(TokenizerError, match="not found"):
        find_tokenizer(None, npm_dir=tmp_path / "absent")


# ---------------------------------------------------------------- the Hub probe and make serve


def fake_snapshot(cache: Path, repo: str = "gpt2") -> Path:
    snapshot = cache / f"models--{repo}" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "gpt2"}')
    (snapshot / "model.safetensors").write_bytes(b"")
    return snapshot


def test_cached_snapshot_needs_config_and_weights(tmp_path):
    assert hub.cached_snapshot("gpt2", tmp_path) is None
    snapshot = fake_snapshot(tmp_path)
    assert hub.cached_snapshot("gpt2", tmp_path) == snapshot
    (snapshot / "model.safetensors").unlink()
    assert hub.cached_snapshot("gpt2", tmp_path) is None


def test_availability_offline_and_cached(tmp_path, monkeypatch, no_hub):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ok, why = hub.availability("gpt2")
    assert not ok and "not in the local Hugging Face cache" in why and "HF_HUB_OFFLINE" in why
    fake_snapshot(tmp_path)
    ok, why = hub.availability("gpt2")
    assert ok and "local Hugging Face cache" in why


def test_hub_probe_gives_up_within_seconds(monkeypatch, no_hub):
    """A lookup or connection that hangs (no socket timeout applies) still ends the probe."""
    monkeypatch.setattr(hub, "_answers", lambda url, timeout: time.sleep(30) or True)
    start = time.perf_counter()
    assert hub.hub_reachable(timeout=1.0) is False
    assert time.perf_counter() - start < 3


def test_hub_probe_needs_an_http_answer(monkeypatch, no_hub):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    assert hub.hub_reachable(timeout=1.0) is False


def run_make(args, env_changes, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL", "MAKEFLAGS", "MFLAGS")}
    env.update(env_changes)
    return subprocess.run(["make", "--no-print-directory", "-n", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_serve_falls_back_to_the_books_model_and_says_why(tmp_path):
    start = time.perf_counter()
    result = run_make(["serve"], {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": "http://127.0.0.1:9"}, tmp_path)
    assert time.perf_counter() - start < 10
    assert "model: book, because the Hugging Face Hub (http://127.0.0.1:9) is unreachable" in result.stderr
    assert "--preset" not in result.stdout and "--from gpt2" not in result.stdout
    if not (ROOT / "build/models/book/manifest.json").exists():
        assert "model-export all --from book --out build/models/book" in result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_site_and_test_take_the_books_model():
    for args in (["site"], ["test"]):
        result = run_make(args, {"HF_HUB_OFFLINE": "1"}, None)
        assert "--preset" not in result.stdout and "build/models/tiny" not in result.stdout, args
        if not (ROOT / "build/models/book/manifest.json").exists():
            assert "model-export all --from book --out build/models/book" in result.stdout, args
    # a bare `mkdocs build` (no TX_MODEL from make) serves the same model
    assert f"tx_model: !ENV [TX_MODEL, {BOOK_SOURCE}]" in (ROOT / "mkdocs.yml").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_serve_takes_gpt2_from_the_local_cache(tmp_path):
    fake_snapshot(tmp_path)
    result = run_make(["serve"], {"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}, tmp_path)
    assert "model: gpt2 (gpt2 is in the local Hugging Face cache" in result.stderr
    if not (ROOT / "build/models/gpt2/manifest.json").exists():
        assert "model-export all --from gpt2 --out build/models/gpt2" in result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_and_explicit_models_do_not_probe(tmp_path):
    fake_snapshot(tmp_path)
    for args in (["test"], ["serve", "MODEL=small-random"], ["model"]):
        result = run_make(args, {"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}, tmp_path)
        assert "model: " not in result.stderr, args
        assert "--from gpt2" not in result.stdout, args


# ---------------------------------------------------------------- tolerances and the table


def test_default_tolerances_depend_on_the_weights():
    random, trained = Tolerances.defaults(True), Tolerances.defaults(False)
    assert random.ort == 1e-4 and random.hf == 1e-5 and random.tokens == 0
    assert set(random.variants) == set(trained.variants) == set(VARIANTS)
    for name in random.variants:  # trained weights: peaked distributions, agreements must be higher
        assert trained.variants[name].top1 > random.variants[name].top1


def test_tolerance_overrides():
    base = Tolerances.defaults(True)
    changed = base.override("q4.kl", 0.5).override("ort", 1e-3).override("tokens", 2)
    assert changed.variants["q4"].kl == 0.5 and changed.ort == 1e-3 and changed.tokens == 2
    assert base.variants["q4"].kl != 0.5  # the original is untouched
    for bad in ("q4.speed", "q9.kl", "nothing"):
        with pytest.raises(ValueError, match="unknown tolerance"):
            base.override(bad, 1.0)


def test_rows_pass_within_their_bound_and_never_on_nan():
    assert check("error", 1e-5, 1e-4).passed
    assert not check("error", 2e-4, 1e-4).passed
    assert check("agreement", 0.95, 0.9, at_least=True).passed
    assert not check("agreement", 0.85, 0.9, at_least=True).passed
    assert not check("nan error", float("nan"), 1.0).passed
    assert not check("nan agreement", float("nan"), 0.0, at_least=True).passed


def test_table_and_failures_say_what_failed_by_how_much():
    rows = [check("logits", 2.5e-4, 1e-4), check("top-1", 0.5, 0.9, at_least=True, group="q4"), check("tokens", 0, 0)]
    table = format_table(rows)
    assert table.splitlines()[0].split() == ["check", "measured", "bound", "result"]
    assert "0.00025" in table and "≤ 0.0001" in table and "≥ 0.9" in table and table.count("FAIL") == 2
    assert failures(rows) == ["logits: measured 0.00025, bound ≤ 0.0001", "top-1: measured 0.5, bound ≥ 0.9"]
    assert CheckResult.from_dict(rows[1].to_dict()) == rows[1]
