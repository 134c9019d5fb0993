"""Vocabularies as exact token bytes: :class:`TokenizerInfo`, its trie, and real bundled vocabularies."""

from .info import KNOWN_STOP_TOKENS, TokenizerInfo, VocabType
from .trie import TokenTrie

__all__ = ["KNOWN_STOP_TOKENS", "TokenTrie", "TokenizerInfo", "VocabType"]
