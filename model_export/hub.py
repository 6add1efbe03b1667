"""Is a Hugging Face Hub model available here: in the local cache, or from a reachable Hub?

Standard library only, so that ``make serve`` can ask before any virtual environment exists:

    python3 -m model_export.hub gpt2 book

prints ``gpt2`` when the Hub answers or the local cache holds a complete ``gpt2`` snapshot, and
``book`` (the book's own small trained model) otherwise; the reason goes to stderr. The answer comes within a few seconds even when
name resolution hangs.
"""

from __future__ import annotations

import os
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

PROBE_TIMEOUT_S = 3.0
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def env_flag(name: str) -> bool:
    """True when the environment variable is set to 1/true/yes/on."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def offline_requested() -> bool:
    """True when ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` asks not to use the network."""
    return env_flag("HF_HUB_OFFLINE") or env_flag("TRANSFORMERS_OFFLINE")


def endpoint() -> str:
    """The Hub's base URL (``HF_ENDPOINT`` or https://huggingface.co)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def cache_dir() -> Path:
    """The Hugging Face Hub cache directory, following huggingface_hub's environment variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


def cached_snapshot(repo_id: str, cache: Path | None = None) -> Path | None:
    """A cached snapshot of ``repo_id`` holding ``config.json`` and a weights file, or None."""
    repo_dir = (cache or cache_dir()) / ("models--" + repo_id.replace("/", "--"))
    snapshots = sorted((repo_dir / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for snapshot in snapshots:
        if (snapshot / "config.json").is_file() and any((snapshot / name).is_file() for name in WEIGHT_FILES):
            return snapshot
    return None


def _answers(url: str, timeout: float) -> bool:
    """Whether an HTTP server answers ``url`` (any status; TLS certificates verified)."""
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "model-export"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # an error status is still the server answering
    except (OSError, ValueError):  # URLError, TLS failure, refused connection, bad URL
        return False


def hub_reachable(timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the Hub answers an HTTP request within ``timeout`` seconds, name lookup included.

    The request goes through the environment's HTTP(S) proxy settings, like the download would.
    """
    result: list[bool] = []
    # name lookup ignores socket timeouts; a daemon thread bounds the whole probe
    probe = threading.Thread(target=lambda: result.append(_answers(endpoint().rstrip("/") + "/", timeout)), daemon=True)
    probe.start()
    probe.join(timeout + 0.5)
    return bool(result and result[0])


def availability(repo_id: str) -> tuple[bool, str]:
    """Whether ``repo_id`` can be loaded here, and why (a sentence)."""
    snapshot = cached_snapshot(repo_id)
    if snapshot is not None:
        return True, f"{repo_id} is in the local Hugging Face cache ({snapshot})"
    if offline_requested():
        return False, f"{repo_id} is not in the local Hugging Face cache ({cache_dir()}) and HF_HUB_OFFLINE is set"
    if hub_reachable():
        return True, f"the Hugging Face Hub ({endpoint()}) is reachable"
    return False, (f"the Hugging Face Hub ({endpoint()}) is unreachable and {repo_id} is not in the local cache ({cache_dir()})")


def main(argv: list[str] | None = None) -> int:
    """``python -m model_export.hub PREFERRED FALLBACK``: print the model to use, the reason on stderr."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m model_export.hub PREFERRED_HUB_ID FALLBACK", file=sys.stderr)
        return 2
    preferred, fallback = args
    ok, why = availability(preferred)
    if ok:
        print(f"model: {preferred} ({why})", file=sys.stderr)
        print(preferred)
    else:
        print(f"model: {fallback}, because {why}", file=sys.stderr)
        print(fallback)
    return 0


if __name__ == "__main__":
    sys.exit(main())
