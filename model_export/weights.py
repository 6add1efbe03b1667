"""Where the weights come from: presets (random init), local directories, or the Hugging Face Hub.

Every source ends as a ``transformers.GPT2LMHeadModel`` in float32 with eager attention, the
PyTorch reference the exported model is validated against. Presets are random-initialised with a
fixed seed, written with ``save_pretrained`` and read back, so the local-directory path runs on
every build.

A checkpoint is refused, with a sentence saying why, when its ``config.json`` is missing or not
a GPT-2 configuration, when its shape cannot be exported (a size that is not a whole number >= 1,
``n_embd`` not divisible by ``n_head``, fewer than ``export.MIN_POSITIONS`` positions, a GPT-2
variant ``gpt2.GPT2Config.from_hf`` does not implement), when its weights file is missing or
unreadable, or when it lacks a tensor (transformers would silently fill a missing tensor with
random numbers). Every check of the configuration runs before the weights are read.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import hub

PRESETS: dict[str, dict] = {
    # transformers.GPT2Config keyword arguments; unnamed ones keep GPT-2 small's values
    # (vocab_size=50257, n_positions=1024).
    "tiny": dict(n_layer=2, n_head=4, n_embd=64),
    "small-random": dict(n_layer=12, n_head=12, n_embd=768),
}
PRESET_PREFIX = "preset:"
# The book's own trained model (``model-export train``), committed with its recipe: the source
# named BOOK_SOURCE, the default wherever the Hub is out of reach.
BOOK_SOURCE = "book"
BOOK_MODEL_DIR = Path(__file__).resolve().parent / "book_model"
# GPT-2's causal-mask buffers, present in old checkpoints, recomputed by the model
IGNORED_KEYS = (".attn.bias", ".attn.masked_bias")
# what a Hub download fetches: configuration, tokenizer files and safetensors weights
HUB_FILES = ["*.json", "merges.txt", "*.safetensors"]
SIZE_KEYS = ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")


class SourceError(ValueError):
    """The requested weights cannot be loaded (bad name, missing or broken files, Hub unreachable)."""


@dataclass
class LoadedWeights:
    """A loaded reference model and where it came from.

    Attributes:
        model: ``transformers.GPT2LMHeadModel`` in eval mode, float32, eager attention.
        source: Canonical source string: ``preset:NAME``, an absolute directory, or a Hub id.
        kind: ``"preset"``, ``"dir"`` or ``"hub"``.
        seed: The random seed for presets, else None.
        directory: The local directory the model was read from (``--from DIR``, or the Hub
            cache's snapshot); None for presets (a deleted temporary directory).
    """

    model: object
    source: str
    kind: str
    seed: int | None
    directory: Path | None

    @property
    def random_weights(self) -> bool:
        """True for presets, whose weights are random numbers by construction. Whether a
        checkpoint's weights are random is measured (``validate.weights_verdict``)."""
        return self.kind == "preset"


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
    if source == BOOK_SOURCE:
        if not (BOOK_MODEL_DIR / "config.json").is_file():
            raise SourceError(f"the book's model is missing from {BOOK_MODEL_DIR}: restore it from git, or run `model-export train`")
        return "dir", str(BOOK_MODEL_DIR)
    path = Path(source).expanduser()
    if path.is_dir():
        return "dir", str(path.resolve())
    if _looks_like_path(source):
        raise SourceError(f"directory not found: {source}")
    return "hub", source


def load_hf(source: str, seed: int = 0) -> LoadedWeights:
    """Loads a Hugging Face GPT-2 from a preset, a local directory or the Hub.

    Args:
        source: ``preset:tiny``, ``preset:small-random``, ``book`` (the book's own trained
            model), a directory written by ``save_pretrained``, or a Hub id such as ``gpt2``.
        seed: Random seed for presets; ignored otherwise.

    Returns:
        The loaded model and its provenance.

    Raises:
        SourceError: If the source is unknown, missing, broken or unreachable.
    """
    kind, value = parse_source(source)
    if kind == "preset":
        return load_preset(value, seed)
    if kind == "dir":
        label = BOOK_SOURCE if source == BOOK_SOURCE else value  # the same name on every machine
        return LoadedWeights(load_directory(Path(value)), label, "dir", None, Path(value))
    model, snapshot = _from_hub(value)
    return LoadedWeights(model, value, "hub", None, snapshot)


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
        return LoadedWeights(load_directory(Path(tmp)), PRESET_PREFIX + name, "preset", seed, None)


def load_directory(path: Path):
    """Loads a ``save_pretrained`` directory, refusing anything incomplete.

    Args:
        path: The directory.

    Returns:
        ``GPT2LMHeadModel`` in eval mode.

    Raises:
        SourceError: If ``config.json`` is missing, unreadable, not GPT-2's or of a shape the
            exporter cannot take (``read_config``), if no weights file can be read, or if a
            tensor is missing.
    """
    from transformers import GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the load report is turned into an error below
    try:
        config = read_config(path)
        model, info = GPT2LMHeadModel.from_pretrained(path, config=config, output_loading_info=True, **_load_kwargs())
    except SourceError:
        raise
    except OSError as err:
        raise SourceError(f"cannot load a GPT-2 from {path}: {err}") from err
    except Exception as err:  # safetensors' SafetensorError, pickle errors of a broken .bin, ...
        raise SourceError(f"{path}: the weights file is unreadable or corrupt ({type(err).__name__}: {err})") from err
    finally:
        hf_logging.set_verbosity(verbosity)
    missing = sorted(k for k in info.get("missing_keys", ()) if not k.endswith(IGNORED_KEYS))
    mismatched = info.get("mismatched_keys") or []
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise SourceError(f"{path}: the checkpoint lacks {len(missing)} tensor(s): {shown}")
    if mismatched:
        raise SourceError(f"{path}: tensors whose shape does not match config.json: {mismatched}")
    return model.eval()


def read_config(path: Path):
    """The checkpoint's ``transformers.GPT2Config``, checked before any weight is read.

    Raises:
        SourceError: See ``check_config_file`` and ``check_shape``.
    """
    from transformers import GPT2Config

    check_config_file(path / "config.json")
    try:
        config = GPT2Config.from_pretrained(path)
    except Exception as err:  # a value transformers refuses
        raise SourceError(f"{path}/config.json is not a valid GPT-2 configuration: {err}") from err
    check_shape(config, path)
    return config


def check_config_file(path: Path) -> dict:
    """Reads ``config.json`` and checks that it describes a GPT-2.

    Raises:
        SourceError: If the file is missing, is not JSON, or names another model type.
    """
    if not path.is_file():
        raise SourceError(f"{path.parent} has no config.json; expected a directory written by save_pretrained()")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SourceError(f"{path} is unreadable or not JSON: {err}") from err
    if not isinstance(config, dict) or config.get("model_type") != "gpt2":
        found = config.get("model_type") if isinstance(config, dict) else type(config).__name__
        raise SourceError(f'{path}: model_type is {found!r}; this exporter handles GPT-2 checkpoints ("gpt2") only')
    return config


def check_shape(config, path: Path) -> None:
    """Refuses a configuration the exporter cannot take, with one sentence saying why.

    Args:
        config: A ``transformers.GPT2Config``.
        path: The checkpoint directory, named in the message.

    Raises:
        SourceError: If a size (``SIZE_KEYS``) is not a whole number >= 1, if our module does not
            implement the configuration (``n_embd`` not divisible by ``n_head``, another
            activation, untied embeddings, ...), or if ``n_positions`` is under
            ``export.MIN_POSITIONS``.
    """
    from .export import MIN_POSITIONS, TRACE_PAST, TRACE_SEQUENCE
    from .gpt2 import GPT2Config

    sizes = {key: getattr(config, key, None) for key in SIZE_KEYS}
    bad = [f"{key}={value!r}" for key, value in sizes.items() if type(value) is not int or value < 1]
    if bad:
        raise SourceError(f"{path}: {', '.join(bad)} in config.json; every size must be a whole number >= 1")
    try:
        GPT2Config.from_hf(config)
    except ValueError as err:
        raise SourceError(f"{path}: {err}") from err
    if sizes["n_positions"] < MIN_POSITIONS:
        raise SourceError(
            f"{path}: n_positions={sizes['n_positions']} is too short; the exporter needs at least {MIN_POSITIONS} "
            f"positions (it traces {TRACE_SEQUENCE} new tokens after {TRACE_PAST} cached ones, and validates a "
            "left-padded prompt followed by decode steps with the KV cache)"
        )


def _looks_like_path(source: str) -> bool:
    """Hub ids are ``name`` or ``owner/name``; anything else that names a path is a path."""
    return source.startswith((".", "/", "~")) or source.count("/") > 1 or "\\" in source


def _load_kwargs() -> dict:
    import torch

    return dict(dtype=torch.float32, attn_implementation="eager")


def _from_hub(repo_id: str):
    """Downloads (or finds in the cache) and loads a Hub checkpoint.

    ``from_pretrained`` retries an unreachable Hub for about half a minute; a short probe (see
    ``hub.hub_reachable``) or ``HF_HUB_OFFLINE=1`` switches to the local cache instead.

    Returns:
        ``(model, snapshot directory)``.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
    offline = hub.offline_requested() or not hub.hub_reachable()
    try:
        snapshot = Path(snapshot_download(repo_id, allow_patterns=HUB_FILES, local_files_only=offline))
        if not any(snapshot.glob("*.safetensors")):  # older repositories have pickled weights only
            snapshot = Path(snapshot_download(repo_id, allow_patterns=["pytorch_model.bin"], local_files_only=offline))
    except Exception as err:  # LocalEntryNotFoundError, RepositoryNotFoundError, HTTP errors
        if offline:
            raise SourceError(
                f"cannot load {repo_id!r}: the Hugging Face Hub ({hub.endpoint()}) is unreachable and the model "
                f"is not in the local cache ({hub.cache_dir()}). Use --from DIR (a directory written by "
                f"save_pretrained) or --preset {{{'|'.join(PRESETS)}}} (random weights) instead."
            ) from err
        raise SourceError(f"cannot load {repo_id!r} from the Hugging Face Hub: {err}") from err
    return load_directory(snapshot), snapshot
