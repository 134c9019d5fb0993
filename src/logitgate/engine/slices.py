"""Token slices: skip walking the parts of the vocabulary a state accepts wholesale.

Inside an unconstrained context (the body of a JSON string, a comment) a state accepts
almost every token, and walking the whole trie is the most expensive thing a mask can
cost. Following llguidance's "slicer", the vocabulary is partitioned once per tokenizer
into *slices*: the tokens matching ``C{1,10}``, ``C{11,30}``, ``C{31,}`` (``C`` = a
character a JSON string may hold unescaped), plus the remainder. Each slice has its own
trie and bitset. For a state whose language (within its rule frame) contains every
string of a slice — checked on the automata, exactly — the slice's bitset is OR-ed in
and its trie is not walked; the other slices are walked as usual.

The check is exact: a slice is used only if *every* string of the slice's regular
language survives from the state by direct byte transitions, so every token in it is
accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..grammar.ir import Repeat, seq
from ..grammar.utf8 import codepoint_ranges_expr
from .automata import DFA, standalone_dfa

__all__ = ["DEFAULT_SLICE_BOUNDS", "Slice", "build_slices", "slice_contained"]

#: (min chars, max chars or None) of the default JSON-string slices
DEFAULT_SLICE_BOUNDS: tuple[tuple[int, int | None], ...] = ((1, 10), (11, 30), (31, None))

# Characters a JSON string may hold without escaping, minus DEL (as llguidance).
_JSON_CHARS = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E), (0x80, 0x10FFFF)]


@dataclass
class Slice:
    """A set of tokens with its trie, bitset and defining automaton (None = remainder).

    ``cover`` is an automaton whose language contains this slice's (shared by the JSON
    slices: ``C+``); if a state contains ``cover`` it contains the slice, which lets one
    cheap check settle every slice at once.
    """

    name: str
    dfa: DFA | None
    token_ids: np.ndarray
    trie: object
    bitset: np.ndarray
    cover: DFA | None = None


def _slice_dfa(lo: int, hi: int | None) -> DFA:
    ch = codepoint_ranges_expr(_JSON_CHARS)
    return standalone_dfa(seq(Repeat(ch, lo, hi)), None, 10_000)


def build_slices(token_bytes: list[bytes], trie_ids: np.ndarray, num_words: int, make_trie,
                 bounds=DEFAULT_SLICE_BOUNDS) -> list[Slice]:
    """Partition the trie's tokens into slices (the last one is the remainder).

    ``make_trie(list_of_bytes, ids)`` builds a trie in the layout of
    :class:`logitgate.tokenizer.TokenTrie`.
    """
    remaining = np.asarray(trie_ids, dtype=np.int32)
    texts = {}
    for i in remaining.tolist():
        try:
            texts[i] = token_bytes[i].decode("utf-8")
        except UnicodeDecodeError:
            texts[i] = None
    out: list[Slice] = []
    cover = _slice_dfa(1, None)
    taken = np.zeros(len(token_bytes), dtype=bool)
    for lo, hi in bounds:
        ids = []
        for i in remaining.tolist():
            s = texts[i]
            if s is None or not (lo <= len(s) <= (hi if hi is not None else len(s))):
                continue
            if _JSON_RUN.fullmatch(s):
                ids.append(i)
        arr = np.array(ids, dtype=np.int32)
        taken[arr] = True
        sl = _make(f"json{lo}-{hi or ''}", _slice_dfa(lo, hi), arr, token_bytes, num_words, make_trie)
        sl.cover = cover
        out.append(sl)
    rest = np.array([i for i in remaining.tolist() if not taken[i]], dtype=np.int32)
    out.append(_make("rest", None, rest, token_bytes, num_words, make_trie))
    return out


_JSON_RUN = re.compile('[^"\\\\\x00-\x1f\x7f]+')


def _make(name, dfa, ids, token_bytes, num_words, make_trie) -> Slice:
    bits = np.zeros(num_words, dtype=np.int32)
    if ids.shape[0]:
        u = bits.view(np.uint32)
        np.bitwise_or.at(u, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
    trie = make_trie([token_bytes[i] for i in ids.tolist()], ids)
    return Slice(name, dfa, ids, trie, bits)


def slice_contained(slice_dfa: DFA, state: int, rtn, max_pairs: int = 4096) -> bool:
    """True if every string of ``slice_dfa``'s language survives from ``state`` by byte steps."""
    trans = rtn.trans
    ncls = rtn.num_classes
    cmasks = rtn.class_masks
    # for each slice edge mask, the grammar classes it touches (memoized)
    touch: dict[int, list[int]] = {}
    start = (slice_dfa.start, state)
    seen = {start}
    stack = [start]
    while stack:
        q, s = stack.pop()
        for m, q2 in slice_dfa.edge_masks(q):
            cls = touch.get(m)
            if cls is None:
                cls = [c for c in range(ncls) if cmasks[c] & m]
                touch[m] = cls
            base = s * ncls
            for c in cls:
                t = int(trans[base + c])
                if t < 0:
                    return False
                pair = (q2, t)
                if pair not in seen:
                    if len(seen) >= max_pairs:
                        return False
                    seen.add(pair)
                    stack.append(pair)
    return True
