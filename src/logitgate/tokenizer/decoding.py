"""How each tokenizer family spells a token as text, and how to get its exact bytes back.

* byte-level BPE (GPT-2, Llama-3, Qwen2): every byte is drawn as a printable character
  (:func:`byte_level_decoder`);
* SentencePiece: ``▁`` (U+2581) stands for a space and ``<0xHH>`` pieces are raw bytes
  (:func:`sentencepiece_piece_bytes`);
* tiktoken and tekken: ranks are raw bytes already.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["SP_SPACE", "byte_level_bytes", "byte_level_decoder", "sentencepiece_piece_bytes"]

SP_SPACE = "\u2581"
_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


@lru_cache(maxsize=1)
def byte_level_decoder() -> dict[str, int]:
    """The inverse of GPT-2's byte→printable-character table."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table: dict[str, int] = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def byte_level_bytes(token: str) -> bytes | None:
    """Bytes of a byte-level BPE token string, or None if it is not byte-level encoded."""
    table = byte_level_decoder()
    try:
        return bytes(table[c] for c in token)
    except KeyError:
        return None


def sentencepiece_piece_bytes(piece: str) -> bytes:
    """Bytes of a SentencePiece piece: ``<0xHH>`` → that byte, ``▁`` → space."""
    m = _BYTE_PIECE.match(piece)
    if m:
        return bytes([int(m.group(1), 16)])
    return piece.replace(SP_SPACE, " ").encode("utf-8")
