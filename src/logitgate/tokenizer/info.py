"""``TokenizerInfo``: a vocabulary as the exact bytes each token id stands for.

The engine never sees token *strings*; it sees ``token_bytes[i]``, the bytes token ``i``
adds to the output. Special tokens (BOS, EOS, chat markers, control pieces) are kept apart:
grammars never match them, and only the declared stop tokens may be allowed, exactly when
the grammar can end. Ids in ``[num_tokens, vocab_size)`` are padding of the logits row and
are never allowed.

    >>> info = TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"</s>"], eos_token_id=3, special_token_ids=[3])
    >>> info.vocab_size, info.stop_token_ids, info.token_bytes[2]
    (4, (3,), b'ab')
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TokenizerError
from .decoding import byte_level_bytes, sentencepiece_piece_bytes
from .trie import TokenTrie

__all__ = ["KNOWN_STOP_TOKENS", "TokenizerInfo", "VocabType"]

#: Texts of special tokens that end a turn in common model families; they become stop
#: tokens by default next to EOS.
KNOWN_STOP_TOKENS = frozenset({
    "</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|eom_id|>", "<|im_end|>",
    "<end_of_turn>", "<|end|>", "<|return|>",
})

_FORMAT_VERSION = 1


class VocabType(enum.Enum):
    """How token strings spell bytes (only relevant when building from strings)."""

    RAW = "raw"                      # token strings are UTF-8 text / bytes as given
    BYTE_LEVEL = "byte_level"        # GPT-2 byte-to-unicode alphabet
    SENTENCEPIECE = "sentencepiece"  # "▁" for space, "<0xHH>" byte pieces


class TokenizerInfo:
    """The exact bytes of every token id, which ids are special, and which ids stop generation.

    Build one with a constructor matching your tokenizer: :meth:`from_huggingface`,
    :meth:`from_tiktoken`, :meth:`from_sentencepiece`, :meth:`from_mistral`, or
    :meth:`from_vocab` for a plain list.
    """

    def __init__(
        self,
        token_bytes: Sequence[bytes],
        *,
        vocab_size: int | None = None,
        special_token_ids: Iterable[int] = (),
        eos_token_id: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
        vocab_type: VocabType = VocabType.RAW,
        add_prefix_space: bool = False,
    ):
        tokens = [bytes(b) for b in token_bytes]
        num_tokens = len(tokens)
        if num_tokens == 0:
            raise TokenizerError("the vocabulary is empty")
        if vocab_size is None:
            vocab_size = num_tokens
        if vocab_size < num_tokens:
            raise TokenizerError(f"vocab_size={vocab_size} is smaller than the {num_tokens} tokens given")
        special = sorted({int(i) for i in special_token_ids})
        for i in special:
            if not 0 <= i < num_tokens:
                raise TokenizerError(f"special token id {i} is outside the vocabulary [0, {num_tokens})")
        if eos_token_id is not None and not 0 <= eos_token_id < num_tokens:
            raise TokenizerError(f"eos_token_id {eos_token_id} is outside the vocabulary [0, {num_tokens})")
        self._token_bytes: tuple[bytes, ...] = tuple(tokens) + (b"",) * (vocab_size - num_tokens)
        self._vocab_size = int(vocab_size)
        self._num_tokens = num_tokens
        self._special = tuple(special)
        self._eos = None if eos_token_id is None else int(eos_token_id)
        if stop_token_ids is None:
            stops = set() if self._eos is None else {self._eos}
            stops.update(i for i in special if self._token_bytes[i].decode("utf-8", "replace") in KNOWN_STOP_TOKENS)
        else:
            stops = {int(i) for i in stop_token_ids}
            for i in stops:
                if not 0 <= i < num_tokens:
                    raise TokenizerError(f"stop token id {i} is outside the vocabulary [0, {num_tokens})")
        self._stops = tuple(sorted(stops))
        self.vocab_type = vocab_type
        self.add_prefix_space = bool(add_prefix_space)

    # ------------------------------------------------------------------ properties
    @property
    def vocab_size(self) -> int:
        """Width of the logits row (may exceed :attr:`num_tokens`; the rest is padding)."""
        return self._vocab_size

    @property
    def num_tokens(self) -> int:
        """Number of real token ids, ``0 .. num_tokens - 1``."""
        return self._num_tokens

    @property
    def token_bytes(self) -> tuple[bytes, ...]:
        """``token_bytes[i]``: the bytes of token ``i`` (special tokens: their text; padding: ``b""``)."""
        return self._token_bytes

    @property
    def special_token_ids(self) -> tuple[int, ...]:
        return self._special

    @property
    def eos_token_id(self) -> int | None:
        return self._eos

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """Tokens that end generation: EOS plus the family's end-of-turn tokens unless overridden."""
        return self._stops

    @cached_property
    def special_mask(self) -> np.ndarray:
        """Boolean ``[vocab_size]``: special or padding ids (never matched by a grammar)."""
        mask = np.zeros(self._vocab_size, dtype=bool)
        mask[list(self._special)] = True
        mask[self._num_tokens:] = True
        return mask

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the vocabulary (bytes, specials, stops, size); keys caches and saved files."""
        h = hashlib.sha256()
        h.update(f"v{_FORMAT_VERSION}:{self._vocab_size}:{self._num_tokens}:".encode())
        for b in self._token_bytes[: self._num_tokens]:
            h.update(len(b).to_bytes(4, "little"))
            h.update(b)
        h.update(np.asarray(self._special, dtype=np.int64).tobytes())
        h.update(b"|")
        h.update(np.asarray(self._stops, dtype=np.int64).tobytes())
        return h.hexdigest()[:32]

    @cached_property
    def trie(self) -> TokenTrie:
        """Trie of the grammar-matchable tokens (not special, not empty, not padding)."""
        ids = [i for i in range(self._num_tokens) if self._token_bytes[i] and not self.special_mask[i]]
        return TokenTrie.from_tokens([self._token_bytes[i] for i in ids], ids)

    def with_stop_tokens(self, stop_token_ids: Iterable[int]) -> TokenizerInfo:
        """A copy with a different set of stop tokens."""
        return TokenizerInfo(
            self._token_bytes[: self._num_tokens], vocab_size=self._vocab_size,
            special_token_ids=self._special, eos_token_id=self._eos, stop_token_ids=stop_token_ids,
            vocab_type=self.vocab_type, add_prefix_space=self.add_prefix_space,
        )

    def decode(self, ids: Iterable[int]) -> bytes:
        """Concatenated bytes of ``ids`` (special tokens contribute their text)."""
        tb = self._token_bytes
        return b"".join(tb[int(i)] for i in ids)

    def token_id(self, text: str | bytes) -> int | None:
        """The id whose bytes are exactly ``text`` (first such id), or None."""
        key = text.encode() if isinstance(text, str) else bytes(text)
        return self._lookup.get(key)

    @cached_property
    def _lookup(self) -> dict[bytes, int]:
        out: dict[bytes, int] = {}
        for i, b in enumerate(self._token_bytes[: self._num_tokens]):
            out.setdefault(b, i)
        return out

    def __repr__(self) -> str:
        return (f"TokenizerInfo(vocab_size={self._vocab_size}, num_tokens={self._num_tokens}, "
                f"special={len(self._special)}, stop_token_ids={self._stops}, type={self.vocab_type.value})")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_vocab(
        cls,
        vocab: Sequence[bytes | str],
        *,
        vocab_type: VocabType | str = VocabType.RAW,
        vocab_size: int | None = None,
        special_token_ids: Iterable[int] = (),
        eos_token_id: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
        add_prefix_space: bool = False,
    ) -> TokenizerInfo:
        """From a list indexed by token id: bytes, or strings spelled the ``vocab_type`` way."""
        vt = VocabType(vocab_type)
        special = set(special_token_ids)
        tokens: list[bytes] = []
        for i, t in enumerate(vocab):
            if isinstance(t, bytes | bytearray):
                tokens.append(bytes(t))
            elif not isinstance(t, str):
                raise TokenizerError(f"vocab[{i}] is {type(t).__name__}, expected bytes or str")
            elif i in special or vt is VocabType.RAW:
                tokens.append(t.encode("utf-8"))
            elif vt is VocabType.BYTE_LEVEL:
                b = byte_level_bytes(t)
                tokens.append(t.encode("utf-8") if b is None else b)
            else:
                tokens.append(sentencepiece_piece_bytes(t))
        return cls(tokens, vocab_size=vocab_size, special_token_ids=special, eos_token_id=eos_token_id,
                   stop_token_ids=stop_token_ids, vocab_type=vt, add_prefix_space=add_prefix_space)

    @classmethod
    def from_huggingface(cls, tokenizer: Any, *, vocab_size: int | None = None,
                         stop_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """From a ``tokenizers.Tokenizer`` or a transformers tokenizer (fast or SentencePiece-based)."""
        from .adapters import from_huggingface

        return from_huggingface(cls, tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids)

    @classmethod
    def from_tiktoken(cls, encoding: Any, *, vocab_size: int | None = None, eos_token_id: int | None = None,
                      stop_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """From a ``tiktoken.Encoding`` (ranks are raw bytes; its special tokens are marked special)."""
        from .adapters import from_tiktoken

        return from_tiktoken(cls, encoding, vocab_size=vocab_size, eos_token_id=eos_token_id,
                             stop_token_ids=stop_token_ids)

    @classmethod
    def from_sentencepiece(cls, model: Any, *, vocab_size: int | None = None,
                           stop_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """From a SentencePiece model file path or a ``SentencePieceProcessor``."""
        from .adapters import from_sentencepiece

        return from_sentencepiece(cls, model, vocab_size=vocab_size, stop_token_ids=stop_token_ids)

    @classmethod
    def from_mistral(cls, tokenizer: Any, *, vocab_size: int | None = None,
                     stop_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """From a mistral-common tokenizer (tekken or SentencePiece), or a path to its file."""
        from .adapters import from_mistral

        return from_mistral(cls, tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids)

    # ------------------------------------------------------------------ serialization
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write to ``path`` (an ``.npz`` file); :meth:`load` reads it back and checks the fingerprint."""
        path = Path(path)
        toks = self._token_bytes[: self._num_tokens]
        lengths = np.fromiter((len(b) for b in toks), dtype=np.int64, count=len(toks))
        meta = {
            "format": _FORMAT_VERSION, "vocab_size": self._vocab_size, "eos_token_id": self._eos,
            "vocab_type": self.vocab_type.value, "add_prefix_space": self.add_prefix_space,
            "fingerprint": self.fingerprint,
        }
        with open(path, "wb") as f:
            np.savez(
                f, data=np.frombuffer(b"".join(toks), dtype=np.uint8), lengths=lengths,
                special=np.asarray(self._special, dtype=np.int64), stops=np.asarray(self._stops, dtype=np.int64),
                meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
            )
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenizerInfo:
        """Read a file written by :meth:`save`."""
        try:
            with np.load(Path(path), allow_pickle=False) as z:
                meta = json.loads(z["meta"].tobytes().decode())
                data = z["data"].tobytes()
                lengths = z["lengths"]
                special, stops = z["special"].tolist(), z["stops"].tolist()
        except (OSError, KeyError, ValueError) as e:
            raise TokenizerError(f"cannot read a saved TokenizerInfo from {path}: {e}") from e
        if meta.get("format") != _FORMAT_VERSION:
            raise TokenizerError(f"{path}: unsupported TokenizerInfo format {meta.get('format')!r}")
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends[:-1]]
        tokens = [data[s:e] for s, e in zip(starts, ends, strict=True)]
        info = cls(tokens, vocab_size=meta["vocab_size"], special_token_ids=special,
                   eos_token_id=meta["eos_token_id"], stop_token_ids=stops,
                   vocab_type=VocabType(meta["vocab_type"]), add_prefix_space=meta["add_prefix_space"])
        if info.fingerprint != meta["fingerprint"]:
            raise TokenizerError(f"{path}: fingerprint mismatch (file corrupted or written by another version)")
        return info
