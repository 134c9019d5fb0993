"""Constructors of :class:`~logitgate.tokenizer.info.TokenizerInfo` from tokenizer libraries.

Each library is imported lazily; only the one you use needs to be installed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TokenizerError
from .decoding import byte_level_bytes, sentencepiece_piece_bytes

if TYPE_CHECKING:
    from .info import TokenizerInfo

__all__ = ["from_huggingface", "from_mistral", "from_sentencepiece", "from_tiktoken"]


def _component_types(node: Any) -> list[str]:
    """All ``"type"`` values in a tokenizer.json sub-tree (decoder / pre_tokenizer)."""
    found: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            found.append(node["type"])
        for v in node.values():
            found.extend(_component_types(v))
    elif isinstance(node, list):
        for v in node:
            found.extend(_component_types(v))
    return found


def _hf_family(spec: dict) -> str:
    types = _component_types(spec.get("decoder")) + _component_types(spec.get("pre_tokenizer"))
    if "ByteLevel" in types:
        return "byte_level"
    model = spec.get("model") or {}
    text = json.dumps([spec.get("decoder"), spec.get("pre_tokenizer"), spec.get("normalizer")])
    if {"Metaspace", "ByteFallback"} & set(types) or model.get("byte_fallback") or "\\u2581" in text:
        return "sentencepiece"
    if model.get("type") == "WordPiece":
        raise TokenizerError("WordPiece tokenizers ('##' continuations) do not map tokens to bytes by "
                             "concatenation; build the TokenizerInfo with from_vocab explicitly")
    return "raw"


def from_huggingface(cls: type[TokenizerInfo], tokenizer: Any, *, vocab_size: int | None,
                     stop_token_ids: Iterable[int] | None) -> TokenizerInfo:
    from .info import VocabType

    eos = getattr(tokenizer, "eos_token_id", None)
    extra_special: set[int] = set()
    all_special = getattr(tokenizer, "all_special_ids", None)
    if all_special:
        extra_special.update(int(i) for i in all_special if i is not None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None and hasattr(tokenizer, "to_str") and hasattr(tokenizer, "get_vocab"):
        backend = tokenizer
    if backend is None:
        sp = getattr(tokenizer, "sp_model", None)
        if sp is None:
            raise TokenizerError(f"unsupported Hugging Face tokenizer {type(tokenizer).__name__}: "
                                 "neither a fast tokenizer nor SentencePiece-based")
        base = from_sentencepiece(cls, sp, vocab_size=None, stop_token_ids=None)
        tokens = list(base.token_bytes[: base.num_tokens])
        special = set(base.special_token_ids) | extra_special
        for i, added in getattr(tokenizer, "added_tokens_decoder", {}).items():
            while len(tokens) <= i:
                tokens.append(b"")
            tokens[i] = added.content.encode("utf-8")
            if getattr(added, "special", False):
                special.add(int(i))
        return cls(tokens, vocab_size=vocab_size, special_token_ids=special,
                   eos_token_id=eos if eos is not None else base.eos_token_id,
                   stop_token_ids=stop_token_ids, vocab_type=VocabType.SENTENCEPIECE, add_prefix_space=True)

    spec = json.loads(backend.to_str())
    family = _hf_family(spec)
    vocab: dict[str, int] = backend.get_vocab(with_added_tokens=True)
    added = {int(t["id"]): t for t in spec.get("added_tokens", [])}
    n = max(vocab.values()) + 1
    tokens: list[bytes] = [b""] * n
    for text, i in vocab.items():
        if i in added:
            tokens[i] = added[i]["content"].encode("utf-8")
        elif family == "byte_level":
            b = byte_level_bytes(text)
            tokens[i] = text.encode("utf-8") if b is None else b
        elif family == "sentencepiece":
            tokens[i] = sentencepiece_piece_bytes(text)
        else:
            tokens[i] = text.encode("utf-8")
    special = {i for i, t in added.items() if t.get("special")} | extra_special
    if eos is None:
        from .info import KNOWN_STOP_TOKENS

        eos = next((i for i in sorted(special) if tokens[i].decode("utf-8", "replace") in KNOWN_STOP_TOKENS), None)
    vt = {"byte_level": VocabType.BYTE_LEVEL, "sentencepiece": VocabType.SENTENCEPIECE}.get(family, VocabType.RAW)
    return cls(tokens, vocab_size=vocab_size, special_token_ids=special, eos_token_id=eos,
               stop_token_ids=stop_token_ids, vocab_type=vt, add_prefix_space=family == "sentencepiece")


def from_tiktoken(cls: type[TokenizerInfo], encoding: Any, *, vocab_size: int | None, eos_token_id: int | None,
                  stop_token_ids: Iterable[int] | None) -> TokenizerInfo:
    ranks: dict[bytes, int] | None = getattr(encoding, "_mergeable_ranks", None)
    specials: dict[str, int] = dict(getattr(encoding, "_special_tokens", {}) or {})
    n = int(encoding.n_vocab)
    tokens: list[bytes] = [b""] * n
    if ranks is not None:
        for b, r in ranks.items():
            if r < n:
                tokens[r] = b
    else:
        for i in range(n):
            with contextlib.suppress(KeyError):
                tokens[i] = encoding.decode_single_token_bytes(i)
    for text, i in specials.items():
        if i >= len(tokens):
            tokens.extend([b""] * (i + 1 - len(tokens)))
        tokens[i] = text.encode("utf-8")
    if eos_token_id is None:
        eos_token_id = specials.get("<|endoftext|>", specials.get("<|end_of_text|>"))
    return cls(tokens, vocab_size=vocab_size, special_token_ids=specials.values(), eos_token_id=eos_token_id,
               stop_token_ids=stop_token_ids)


def _sp_processor(model: Any) -> Any:
    if isinstance(model, str | Path):
        try:
            import sentencepiece
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise TokenizerError("from_sentencepiece needs the 'sentencepiece' package "
                                 "(pip install 'logitgate[sentencepiece]')") from e
        if not Path(model).is_file():
            raise TokenizerError(f"SentencePiece model file not found: {model}")
        return sentencepiece.SentencePieceProcessor(model_file=str(model))
    return model


def from_sentencepiece(cls: type[TokenizerInfo], model: Any, *, vocab_size: int | None,
                       stop_token_ids: Iterable[int] | None) -> TokenizerInfo:
    from .info import VocabType

    sp = _sp_processor(model)
    n = int(sp.get_piece_size())
    tokens: list[bytes] = []
    special: list[int] = []
    for i in range(n):
        piece = sp.id_to_piece(i)
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            special.append(i)
            tokens.append(piece.encode("utf-8"))
        else:
            tokens.append(sentencepiece_piece_bytes(piece))
    eos = sp.eos_id()
    return cls(tokens, vocab_size=vocab_size, special_token_ids=special, eos_token_id=eos if eos >= 0 else None,
               stop_token_ids=stop_token_ids, vocab_type=VocabType.SENTENCEPIECE, add_prefix_space=True)


def from_mistral(cls: type[TokenizerInfo], tokenizer: Any, *, vocab_size: int | None,
                 stop_token_ids: Iterable[int] | None) -> TokenizerInfo:
    if isinstance(tokenizer, str | Path):
        try:
            from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise TokenizerError("from_mistral needs 'mistral-common' (pip install 'logitgate[mistral]')") from e
        tokenizer = MistralTokenizer.from_file(str(tokenizer))
    inner = getattr(getattr(tokenizer, "instruct_tokenizer", None), "tokenizer", tokenizer)
    if hasattr(inner, "id_to_byte_piece"):  # tekken
        n = int(inner.n_words)
        num_special = int(inner.num_special_tokens)
        tokens = [inner.id_to_piece(i).encode("utf-8") if i < num_special else inner.id_to_byte_piece(i)
                  for i in range(n)]
        return cls(tokens, vocab_size=vocab_size, special_token_ids=range(num_special),
                   eos_token_id=int(inner.eos_id), stop_token_ids=stop_token_ids)
    model = getattr(inner, "_model", None)
    if model is None:
        raise TokenizerError(f"unsupported mistral-common tokenizer {type(inner).__name__}")
    return from_sentencepiece(cls, model, vocab_size=vocab_size, stop_token_ids=stop_token_ids)
