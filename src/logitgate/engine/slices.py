"""Token slices: skip walking the parts of the vocabulary a state accepts wholesale.

Inside an unconstrained context (the body of a JSON string, an identifier, a comment) a state
accepts almost every token, and walking the whole trie is the most expensive thing a mask can
cost. Following llguidance's "slicer", the vocabulary is partitioned once per tokenizer into
*slices*, family by family (:data:`DEFAULT_FAMILIES`): tokens made only of lowercase ASCII
letters, then of ASCII letters and digits, then of identifier characters ``[A-Za-z0-9_]``, then
a space and ASCII letters (``" name"``, after a keyword of a code grammar), then of characters
``C`` a JSON string may hold unescaped (except DEL and U+2028/U+2029) but the apostrophe (the
body of a single-quoted string), then of all of those, each family bucketed by length
(``C{1,10}``, ``C{11,30}``, ``C{31,}`` for text), plus the remainder. The slices' tries are laid
end to end in one trie (:class:`SliceSet`). For a state whose language (within its rule frame)
contains every string of a slice -- checked on the automata, exactly -- the slice's bitset is
OR-ed in and its tokens are not walked; the other slices are walked as usual.

The check is exact: a slice is used only if *every* string of the slice's language survives
from the state by byte steps inside its rule frame (transitions, or entering a rule through a
call chain), so every token in it is accepted. Survival is prefix-closed, so one search per
family answers for all its slices: the *survival depth* of a state, the largest ``H`` such that
every ``C``-string of at most ``H`` characters survives, is the fewest complete characters before
some byte dies (:func:`survival_depth`). ``C{lo,hi}`` is contained iff ``hi <= H``, ``C{31,}``
iff nothing ever dies. A bounded string (``maxLength``) with ``r`` characters left has
``H = r``. Families nest, so a state that survives every JSON-string run survives every word.
A prefixed family (`` C+``) counts the characters after its prefix; its searches prove nothing
for the states they pass (from there on only ``C`` is read, not the prefix again).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..grammar.ir import Repeat, lit, seq
from ..grammar.utf8 import codepoint_ranges_expr
from ..tokenizer.trie import TokenTrie
from ._survival import INFINITE, LOWER_INF, cover_edges, dies_at_once, dying_covers, survival_search
from .automata import DFA, minimize, standalone_dfa

__all__ = ["DEFAULT_SLICE_BOUNDS", "Slice", "SliceSet", "build_slices", "slice_contained", "survival_depth"]

#: (min chars, max chars or None) of the default JSON-string slices
DEFAULT_SLICE_BOUNDS: tuple[tuple[int, int | None], ...] = ((1, 10), (11, 30), (31, None))

# Characters a JSON string may hold without escaping, minus DEL (as llguidance) and minus the
# line terminators U+2028/U+2029, which a regex ``.`` does not match: a pattern such as
# ``^(.*)$`` would otherwise make every string state fail the slice check on them.
_JSON_CHARS = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E), (0x80, 0x2027), (0x202A, 0x10FFFF)]
#: the same without the apostrophe: the body of a single-quoted string (SQL, Python, JavaScript)
_TEXT_CHARS = [(0x20, 0x21), (0x23, 0x26), (0x28, 0x5B), (0x5D, 0x7E), (0x80, 0x2027), (0x202A, 0x10FFFF)]
_ALPHA_CHARS = [(0x41, 0x5A), (0x61, 0x7A)]
_ALNUM_CHARS = [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)]
_WORD_CHARS = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_LOWER_CHARS = [(0x61, 0x7A)]


@dataclass(frozen=True)
class SliceFamily:
    """Tokens made of ``prefix`` and then only the characters ``chars`` (codepoint ranges), bucketed
    by how many of those characters they have.

    Families are tried in order: a token joins the first one it matches, so a later family holds
    the tokens an earlier one (a subset of its characters) left."""

    name: str
    chars: tuple[tuple[int, int], ...]
    bounds: tuple[tuple[int, int | None], ...]
    prefix: str = ""

    def pattern(self) -> re.Pattern:
        body = "[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in self.chars) + "]+"
        return re.compile(re.escape(self.prefix) + body)


#: lowercase ASCII words, letters and digits, identifier-like words, a space then ASCII letters
#: (the most common shape of a BPE token), runs of text without an apostrophe, then JSON-string
#: runs: a state inside a JSON string takes all six whole, one inside a single-quoted string (SQL,
#: Python) all but the last, one inside an identifier or an email's local part the first three,
#: one inside a hostname label (no "_") the first two, one after a keyword of a code grammar the
#: fourth
DEFAULT_FAMILIES: tuple[SliceFamily, ...] = (
    SliceFamily("lower", tuple(_LOWER_CHARS), ((1, 10), (11, None))),
    SliceFamily("alnum", tuple(_ALNUM_CHARS), ((1, 10), (11, None))),
    SliceFamily("word", tuple(_WORD_CHARS), ((1, 10), (11, None))),
    SliceFamily("space-alpha", tuple(_ALPHA_CHARS), ((1, 10), (11, None)), prefix=" "),
    SliceFamily("text", tuple(_TEXT_CHARS), DEFAULT_SLICE_BOUNDS),
    SliceFamily("json", tuple(_JSON_CHARS), DEFAULT_SLICE_BOUNDS),
)


@dataclass
class Slice:
    """A set of tokens with its bitset and its subtree of the slice set's trie.

    ``cover`` (None for the remainder slice) is the automaton of ``C+``: the slice holds
    ``C``-strings of at most ``max_chars`` characters (None = no upper bound), the lower
    bound being the previous slice's ``max_chars + 1``. Its tokens are the trie nodes
    ``first:end`` (a walk range of :func:`logitgate.engine._walk.walk_trie`).
    """

    name: str
    cover: DFA | None
    max_chars: int | None
    token_ids: np.ndarray
    bitset: np.ndarray
    first: int
    end: int


@dataclass
class SliceSet:
    """Slices partitioning a vocabulary, with their tries laid end to end in one :class:`TokenTrie`
    (so a state's mask is one walk over the ranges of the slices it must walk)."""

    slices: list[Slice]
    trie: TokenTrie
    #: per cover automaton, widest first: (cover, longest bounded slice, covers whose survival of
    #: everything implies this one's -- those of wider character sets)
    covers: tuple[tuple[DFA, int, tuple[DFA, ...]], ...] = ()

    def __iter__(self):
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    @classmethod
    def whole(cls, trie: TokenTrie, bitset: np.ndarray) -> SliceSet:
        """One remainder slice holding every token of ``trie`` (no slice can be skipped)."""
        return cls([Slice("all", None, None, trie.tok_ids, bitset, 1, trie.num_nodes)], trie)

    def survival_depths(self, state: int, rtn) -> dict[int, float]:
        """Survival depth of ``state`` per cover (by ``id``), widest character set first.

        A narrower set survives at least as deep as a wider one (fewer strings must survive): when
        a wider set's depth reaches this one's limit, that depth stands in for it (a lower bound
        deciding its bounded slices; at worst a small unbounded slice is walked instead of taken).
        Covers whose first characters die at once are found in one call (most states are narrow).
        """
        return self._depths(state, rtn, self._dying(state, rtn))

    def walk_plan(self, state: int, rtn) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """``(bitsets, starts, ends)``: the bitsets of the slices ``state`` accepts whole, and the
        trie ranges of the others (to walk)."""
        dying = self._dying(state, rtn)
        if dying == (1 << len(self.covers)) - 1:  # no slice is taken whole: walk them all
            ranges = self.__dict__.get("_all_ranges")
            if ranges is None:
                walked = [sl for sl in self.slices if sl.end > sl.first]
                ranges = self.__dict__["_all_ranges"] = (np.array([sl.first for sl in walked], dtype=np.int32),
                                                         np.array([sl.end for sl in walked], dtype=np.int32))
            return [], *ranges
        depths = self._depths(state, rtn, dying)
        bitsets: list[np.ndarray] = []
        starts, ends = [], []
        for sl in self.slices:
            if sl.cover is not None and slice_contained(sl, depths[id(sl.cover)]):
                bitsets.append(sl.bitset)
            elif sl.end > sl.first:
                starts.append(sl.first)
                ends.append(sl.end)
        return bitsets, np.array(starts, dtype=np.int32), np.array(ends, dtype=np.int32)

    def _dying(self, state: int, rtn) -> int:
        """Bit ``k``: cover ``k``'s first characters die at once from ``state``."""
        first = _cached(rtn, "_cover_first", dict)
        arrays = first.get(id(self))
        if arrays is None:
            arrays = first[id(self)] = _first_classes(self.covers, rtn)
        return int(dying_covers(state, rtn.trans, rtn.num_classes, rtn.chain_ptr, *arrays))

    def _depths(self, state: int, rtn, dying: int) -> dict[int, float]:
        depths: dict[int, float] = {}
        for k, (cover, limit, wider) in enumerate(self.covers):
            if dying >> k & 1:  # a character starting this cover's strings dies at once
                depths[id(cover)] = 0.0
                continue
            known = max((depths[id(w)] for w in wider), default=-1.0)
            depths[id(cover)] = known if known >= limit else survival_depth(cover, state, rtn, limit)
        return depths


def _cover_edges_of(cover: DFA, rtn) -> _CoverEdges:
    """The search input of ``cover`` in ``rtn``'s byte classes (made once per grammar and cover)."""
    edges = _cached(rtn, "_cover_edges", dict)
    ce = edges.get(id(cover))
    if ce is None:
        ce = edges[id(cover)] = _CoverEdges.of(cover, rtn)
    return ce


def _first_classes(covers, rtn) -> tuple[np.ndarray, np.ndarray]:
    """Per cover, the grammar's byte classes a first character can start with (concatenated, with
    offsets): the input of :func:`dying_covers`."""
    parts = [_cover_edges_of(cover, rtn).first_classes for cover, _, _ in covers]
    ptr = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.shape[0] for p in parts], out=ptr[1:])
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), ptr


def _cover_dfa(chars, prefix: str = "") -> DFA:
    """The automaton of ``prefix C+`` for the codepoint ranges ``chars`` (final states end a
    character of ``C``: the survival depth counts those)."""
    body = Repeat(codepoint_ranges_expr(list(chars)), 1, None)
    dfa = minimize(standalone_dfa(seq(lit(prefix), body), None, 10_000))
    assert dfa is not None, "a cover holds at least one character"
    return dfa  # minimal: the survival search visits pairs of its states


def build_slices(token_bytes: list[bytes], trie_ids: np.ndarray, num_words: int,
                 families: tuple[SliceFamily, ...] = DEFAULT_FAMILIES) -> SliceSet:
    """Partition the trie's tokens into slices, family by family (the last slice is the remainder)."""
    remaining = np.asarray(trie_ids, dtype=np.int32)
    texts = {}
    for i in remaining.tolist():
        try:
            texts[i] = token_bytes[i].decode("utf-8")
        except UnicodeDecodeError:
            texts[i] = None
    parts: list[tuple[str, DFA | None, int | None, np.ndarray]] = []
    taken = np.zeros(len(token_bytes), dtype=bool)
    cover_of = [_cover_dfa(fam.chars, fam.prefix) for fam in families]
    covers = [(cover_of[k], max((hi for _, hi in fam.bounds if hi is not None), default=0),
               tuple(cover_of[j] for j, f in enumerate(families)
                     if j > k and f.prefix == fam.prefix and _contains(f.chars, fam.chars)))
              for k, fam in enumerate(families)]
    for cover, fam in zip(cover_of, families):
        pattern = fam.pattern()
        members = [i for i in remaining.tolist() if not taken[i] and texts[i] is not None
                   and pattern.fullmatch(texts[i])]
        skip = len(fam.prefix)
        for lo, hi in fam.bounds:
            arr = np.array([i for i in members if lo <= len(texts[i]) - skip and (hi is None or len(texts[i]) - skip <= hi)],
                           dtype=np.int32)
            taken[arr] = True
            parts.append((f"{fam.name}{lo}-{hi or ''}", cover, hi, arr))
    rest = np.array([i for i in remaining.tolist() if not taken[i]], dtype=np.int32)
    parts.append(("rest", None, None, rest))
    tries = [TokenTrie.from_tokens([token_bytes[i] for i in ids.tolist()], ids) for *_, ids in parts]
    trie, roots = TokenTrie.concat(tries)
    slices = [Slice(name, cov, hi, ids, _bitset(ids, num_words), int(r) + 1, int(r) + t.num_nodes)
              for (name, cov, hi, ids), t, r in zip(parts, tries, roots)]
    return SliceSet(slices, trie, tuple(reversed(covers)))


def _contains(outer: tuple[tuple[int, int], ...], inner: tuple[tuple[int, int], ...]) -> bool:
    """Is every codepoint of the ranges ``inner`` in the ranges ``outer``?"""
    return all(any(a <= lo and hi <= b for a, b in outer) for lo, hi in inner)


def _bitset(ids: np.ndarray, num_words: int) -> np.ndarray:
    bits = np.zeros(num_words, dtype=np.int32)
    if ids.shape[0]:
        np.bitwise_or.at(bits.view(np.uint32), ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
    return bits


def slice_contained(sl: Slice, depth: float) -> bool:
    """Is every token of ``sl`` accepted by a state of survival depth ``depth``?"""
    if sl.cover is None:
        return False
    return depth == math.inf if sl.max_chars is None else sl.max_chars <= depth


def survival_depth(cover: DFA, state: int, rtn, limit: int, max_pairs: int = 1024) -> float:
    """The largest ``H`` such that every string of ``cover`` with at most ``H`` characters
    survives from ``state`` by byte steps inside its frame; ``math.inf`` if every string does.

    A byte step follows a transition or enters a rule through a call chain (an object key
    may be a declared name or a shared "other key" rule); the grammar side of the search is
    the *set* of states reachable so far, so no alternative is missed. Leaving the frame
    (pops) is not followed, which can only make ``H`` smaller: safe. A 0-1 breadth-first
    search over (cover state, state set) pairs ordered by characters completed (``cover``'s
    final states end a character); the first dying byte found gives ``H``. Below ``limit`` (the
    longest bounded slice) the answer is exact; at or above it, it is some value between
    ``limit`` and ``H``, which decides the same slices. After ``max_pairs`` pairs the search stops
    with a smaller, still correct, answer.

    A state whose call chains enter a rule that alone survives everything (an object key that
    is a declared name or any other string) survives everything too: the depths of the entry
    states of states with few chains are searched once per grammar and remembered. A search
    also proves a depth for every state it reaches alone after ``d`` characters (``H - d``) and
    runs to twice the limit, so along a bounded string one search serves the next states too.
    """
    ce = _cover_edges_of(cover, rtn)
    if dies_at_once(state, rtn.trans, rtn.num_classes, rtn.chain_ptr, ce.first_classes):
        return 0.0
    known = int(ce.lower[state])  # proved by an earlier search that reached this state
    if known >= limit:
        return math.inf if known == LOWER_INF else float(known)
    memo = _cached(rtn, "_survival_memo", dict, cap=_MEMO_CAP)
    key = (id(cover), state, limit, max_pairs)
    h = memo.get(key)
    if h is None:
        h = _survival_search(cover, state, rtn, limit, max_pairs)
        memo[key] = h
    return h


#: entries of the per-grammar survival-depth memo before it is emptied
_MEMO_CAP = 20_000

#: states with at most this many call chains first look up (or search) their entry states' depths
_MAX_ENTRIES_TRIED = 4


def _survival_search(cover: DFA, state: int, rtn, limit: int, max_pairs: int) -> float:
    lo, hi = int(rtn.chain_ptr[state]), int(rtn.chain_ptr[state + 1])
    if 0 < hi - lo <= _MAX_ENTRIES_TRIED:
        # one member of the state set surviving a string is enough for the set to survive it
        for t in dict.fromkeys(rtn.chain_target[lo:hi].tolist()):
            if t != state and survival_depth(cover, t, rtn, limit, max_pairs) == math.inf:
                return math.inf
    ce = _cover_edges_of(cover, rtn)
    # twice as deep as asked: the bounds it leaves for the states ahead then reach the limit
    h = survival_search(state, 2 * limit, max_pairs, rtn.trans, rtn.num_classes, rtn.chain_ptr,
                        rtn.chain_target, cover.start, *ce.arrays, ce.boundary, ce.lower)
    return math.inf if h == INFINITE else float(h)



@dataclass
class _CoverEdges:
    """A cover automaton's edges in one grammar's byte classes (the search's input), the grammar
    classes a first character can start with, and survival depths proved so far."""

    arrays: tuple[np.ndarray, ...]
    first_classes: np.ndarray
    lower: np.ndarray  # int16 per grammar state: survival depth proved by searches so far (-1: none)
    #: cover states where a search may prove depths for the grammar states it reached: character
    #: boundaries from which every string of the cover can still be read (final states with the
    #: start's transitions: all of them for ``C+``, none for a prefixed cover such as `` C+``)
    boundary: np.ndarray

    @classmethod
    def of(cls, cover: DFA, rtn) -> _CoverEdges:
        *arrays, first, boundary = cover_edges(cover.byte_class, cover.trans, cover.final.view(np.uint8),
                                               cover.start, rtn.byte_class, rtn.num_classes)
        return cls(tuple(arrays), first, np.full(rtn.num_states, -1, dtype=np.int16), boundary)


def _cached(obj, name: str, make, cap: int | None = None):
    """A cache kept on ``obj`` (a grammar's RTN or a DFA) under ``name``; remade past ``cap`` entries."""
    cache = obj.__dict__.get(name)
    if cache is None or (cap is not None and len(cache) > cap):
        cache = obj.__dict__[name] = make()
    return cache
