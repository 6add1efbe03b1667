"""Where the weights come from: presets (random init), local directories, or the Hugging Face Hub.

Every source ends as a ``transformers.GPT2LMHeadModel`` in float32 with eager attention, the
PyTorch reference the exported model is validated against. Presets are random-initialised with a
fixed seed, written with ``save_pretrained`` and read back, so the local-directory path runs on
every build.
"""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

PRESETS: dict[str, dict] = {
    # transformers.GPT2Config keyword arguments; unnamed ones keep GPT-2 small's values
    # (vocab_size=50257, n_positions=1024).
    "tiny": dict(n_layer=2, n_head=4, n_embd=64),
    "small-random": dict(n_layer=12, n_head=12, n_embd=768),
}
PRESET_PREFIX = "preset:"
HUB_PROBE_TIMEOUT_S = 3.0


class SourceError(ValueError):
    """The requested weights cannot be loaded (bad name, missing directory, Hub unreachable)."""


@dataclass
class LoadedWeights:
    """A loaded reference model and where it came from.

    Attributes:
        model: ``transformers.GPT2LMHeadModel`` in eval mode, float32, eager attention.
        source: Canonical source string: ``preset:NAME``, an absolute directory, or a Hub id.
        kind: ``"preset"``, ``"dir"`` or ``"hub"``.
        seed: The random seed for presets, else None.
        directory: The local directory the model was read from, for ``--from DIR``; None for
            presets (a deleted temporary directory) and the Hub.
    """

    model: object
    source: str
    kind: str
    seed: int | None
    directory: Path | None


def parse_source(source: str) -> tuple[str, str]:
    """Classifies a source string without loading anything.

    Args:
        source: As for ``load_hf``.

    Returns:
        ``(kind, value)``: ``("preset", name)``, ``("dir", absolute path)`` or ``("hub", repo id)``.

    Raises:
        SourceError: For an unknown preset or a path that is not a directory.
    """
    if source.startswith(PRESET_PREFIX):
        name = source[len(PRESET_PREFIX) :]
        if name not in PRESETS:
            raise SourceError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
        return "preset", name
    path = Path(source).expanduser()
    if path.is_dir():
        return "dir", str(path.resolve())
    if _looks_like_path(source):
        raise SourceError(f"directory not found: {source}")
    return "hub", source


def load_hf(source: str, seed: int = 0) -> LoadedWeights:
    """Loads a Hugging Face GPT-2 from a preset, a local directory or the Hub.

    Args:
        source: ``preset:tiny``, ``preset:small-random``, a directory written by
            ``save_pretrained``, or a Hub id such as ``gpt2``.
        seed: Random seed for presets; ignored otherwise.

    Returns:
        The loaded model and its provenance.

    Raises:
        SourceError: If the source is unknown, missing or unreachable.
    """
    kind, value = parse_source(source)
    if kind == "preset":
        return load_preset(value, seed)
    if kind == "dir":
        return LoadedWeights(_from_directory(Path(value)), value, "dir", None, Path(value))
    return LoadedWeights(_from_hub(value), value, "hub", None, None)


def load_preset(name: str, seed: int = 0) -> LoadedWeights:
    """Creates a randomly initialised preset, saves it to a temporary directory and loads it back.

    Args:
        name: A key of ``PRESETS``.
        seed: Seed for ``torch.manual_seed`` before initialisation; the same seed gives the same
            weights (and the same ``model.onnx``) on the same torch version.

    Returns:
        The reloaded model.

    Raises:
        SourceError: If ``name`` is not a preset.
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    parse_source(PRESET_PREFIX + name)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**PRESETS[name])).eval()
    with tempfile.TemporaryDirectory(prefix=f"gpt2-{name}-") as tmp:
        model.save_pretrained(tmp)
        return LoadedWeights(_from_directory(Path(tmp)), PRESET_PREFIX + name, "preset", seed, None)


def _looks_like_path(source: str) -> bool:
    """Hub ids are ``name`` or ``owner/name``; anything else that names a path is a path."""
    return source.startswith((".", "/", "~")) or source.count("/") > 1 or "\\" in source


def _load_kwargs() -> dict:
    import torch

    return dict(dtype=torch.float32, attn_implementation="eager")


def _from_directory(path: Path):
    from transformers import GPT2LMHeadModel

    if not (path / "config.json").is_file():
        raise SourceError(f"{path} has no config.json; expected a directory written by save_pretrained()")
    try:
        return GPT2LMHeadModel.from_pretrained(path, **_load_kwargs()).eval()
    except (OSError, ValueError) as err:
        raise SourceError(f"cannot load a GPT-2 from {path}: {err}") from err


def _from_hub(repo_id: str):
    """Loads from the Hub, failing within seconds when it cannot be reached.

    ``from_pretrained`` retries an unreachable Hub for about half a minute; a short TCP probe
    (skipped behind an HTTP proxy, where it proves nothing) or ``HF_HUB_OFFLINE=1`` switches to
    the local cache instead.
    """
    from transformers import GPT2LMHeadModel

    offline = _env_flag("HF_HUB_OFFLINE") or _env_flag("TRANSFORMERS_OFFLINE") or not _hub_reachable()
    try:
        return GPT2LMHeadModel.from_pretrained(repo_id, local_files_only=offline, **_load_kwargs()).eval()
    except OSError as err:
        if offline:
            raise SourceError(
                f"cannot load {repo_id!r}: the Hugging Face Hub ({_hub_endpoint()}) is unreachable and the model "
                "is not in the local cache. Use --from DIR (a directory written by save_pretrained) or "
                f"--preset {{{'|'.join(PRESETS)}}} (random weights) instead."
            ) from err
        raise SourceError(f"cannot load {repo_id!r} from the Hugging Face Hub: {err}") from err


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def _hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(_hub_endpoint())
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False
