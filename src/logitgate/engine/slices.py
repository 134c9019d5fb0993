"""Token slices: skip walking the parts of the vocabulary a state accepts wholesale.

Inside an unconstrained context (the body of a JSON string, an identifier, a comment) a state
accepts almost every token, and walking the whole trie is the most expensive thing a mask can
cost. Following llguidance's "slicer", the vocabulary is partitioned once per tokenizer into
*slices*, family by family (:data:`DEFAULT_FAMILIES`): tokens made only of lowercase ASCII
letters, then of ASCII letters and digits, then of identifier characters ``[A-Za-z0-9_]``, then
a space and ASCII letters (``" name"``, after a keyword of a code grammar), then of characters
``C`` a JSON string may hold unescaped (except DEL and U+2028/U+2029) but the apostrophe (the
body of a single-quoted string), then of all of those, each family bucketed by length
(``C{1,10}``, ``C{11,30}``, ``C{31,}`` for text), plus the remainder. A byte-level token that
ends inside a multi-byte character (BPE splits them) joins an unprefixed family when its text is
of ``C`` and its last character may finish as one of ``C``, counted with that character (see
:func:`_split_partial`). The slices' tries are laid end to end in one trie (:class:`SliceSet`),
followed by the trie of every token, unsliced: a state that takes no slice whole -- most states,
outside strings -- walks that one, where each slice would have its own subtree for the same first
byte (a narrow state's walk visits the children of ``"a"`` once, not once per slice holding tokens
that start with it; cold traces of the fixed workloads 1-12 % faster, for ~4.5 MB more trie on
Qwen2.5). The whitespace-only tokens are left out of that trie (:attr:`SliceFamily.apart`): a state
that takes no other slice whole takes their slices whole (a JSON value's leading whitespace) or
walks them beside it.
For a state whose language (within its rule frame) contains every string of a slice -- checked
on the automata, exactly -- the slice's bitset is OR-ed in and its tokens are not walked; the
other slices are walked as usual.

The check is exact: a slice is used only if *every* string of the slice's language survives
from the state by byte steps inside its rule frame (transitions, or entering a rule through a
call chain), so every token in it is accepted. Survival is prefix-closed, so one search per
family answers for all its slices: the *survival depth* of a state, the largest ``H`` such that
every ``C``-string of at most ``H`` characters survives, is the fewest complete characters before
some byte dies (:meth:`SliceSet.survival_depth`). ``C{lo,hi}`` is contained iff ``hi <= H``, ``C{31,}``
iff nothing ever dies -- unless its tokens are all short (:data:`MAX_BOUNDED_CHARS`): then its
bound is its longest token's length, and a state with that much room takes it. A bounded
string (``maxLength``) with ``r`` characters left has ``H = r``. Families nest, so a state that
survives every JSON-string run survives every word. A prefixed family (`` C+``) counts the
characters after its prefix; its searches prove nothing for the states they pass (from there on
only ``C`` is read, not the prefix again).
"""

from __future__ import annotations

import functools
import math
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from .._arrays import end_to_end
from ..grammar.ir import Repeat, lit, seq
from ..grammar.utf8 import codepoint_ranges_expr
from ..tokenizer.trie import TokenTrie
from ._survival import (
    DEPTH_INF,
    T_CLS,
    T_CLS_PTR,
    T_EDGE,
    T_FIRST,
    T_PTR,
    T_STATE,
    cover_depth,
    plan_state_packed,
    plan_tables,
    plan_views,
    table_views,
)
from .automata import DFA, minimize, standalone_dfa

__all__ = ["DEFAULT_SLICE_BOUNDS", "MAX_PAIRS", "Slice", "SliceSet", "build_slices"]

#: pairs a survival search visits before it stops (with a smaller, still correct, depth)
MAX_PAIRS = 1024

#: an open-ended bucket (``C{11,}``) whose longest token has at most this many characters is taken
#: whole by a state that survives that many (a bounded string, an email label) rather than only by
#: one that survives everything; longer ones stay open (deeper searches would cost more than they save)
MAX_BOUNDED_CHARS = 64

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
_SPACE_CHARS = [(0x20, 0x20)]
_WS_CHARS = [(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]  # JSON's whitespace: tab, newline, return, space


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
    #: the family's tokens are left out of the unsliced trie: a state that takes no other slice whole
    #: still walks that trie, taking this family whole or walking its slices beside it
    apart: bool = False

    def pattern(self) -> re.Pattern:
        body = "[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in self.chars) + "]+"
        return re.compile(re.escape(self.prefix) + body)


#: runs of spaces, lowercase ASCII words, letters and digits, identifier-like words, a space then
#: ASCII letters (the most common shape of a BPE token), runs of text without an apostrophe, JSON-
#: string runs, then the other whitespace runs (tabs, newlines, returns and spaces): a state inside
#: a JSON string takes the first seven whole, one inside a single-quoted string (SQL, Python) all
#: but the last two, one inside an identifier or an email's local part lower to word, one inside
#: a hostname label (no "_") lower and alnum, one after a keyword of a code grammar the space-alpha
#: family, one where a JSON value may begin after whitespace the spaces and the whitespace runs.
#: The whitespace-only tokens (~420 of Llama-3's and Qwen2.5's) are kept apart from the unsliced
#: trie: a JSON value position walked them all at its first mask (its mask: 16.0 -> 10.3 µs warm on
#: Qwen2.5), where now it takes them whole and walks the unsliced trie for the rest
DEFAULT_FAMILIES: tuple[SliceFamily, ...] = (
    SliceFamily("spaces", tuple(_SPACE_CHARS), ((1, 10), (11, None)), apart=True),
    SliceFamily("lower", tuple(_LOWER_CHARS), ((1, 10), (11, None))),
    SliceFamily("alnum", tuple(_ALNUM_CHARS), ((1, 10), (11, None))),
    SliceFamily("word", tuple(_WORD_CHARS), ((1, 10), (11, None))),
    SliceFamily("space-alpha", tuple(_ALPHA_CHARS), ((1, 10), (11, None)), prefix=" "),
    SliceFamily("text", tuple(_TEXT_CHARS), DEFAULT_SLICE_BOUNDS),
    SliceFamily("json", tuple(_JSON_CHARS), DEFAULT_SLICE_BOUNDS),
    SliceFamily("whitespace", tuple(_WS_CHARS), ((1, 10), (11, None)), apart=True),
)


@dataclass
class Slice:
    """A set of tokens with its bitset and its subtree of the slice set's trie.

    ``cover`` (None for the remainder slice) is the automaton of ``C+``: the slice holds
    ``C``-strings of at most ``max_chars`` characters (None = no upper bound; an open bucket of
    short tokens has its longest token's length), the lower bound being the previous slice's
    bucket end + 1. Its tokens are the trie nodes
    ``first:end`` (a walk range of :func:`logitgate.engine._walk.walk_trie`).
    """

    name: str
    cover: DFA | None
    max_chars: int | None
    token_ids: np.ndarray
    bitset: np.ndarray
    first: int
    end: int
    #: of a family whose tokens the unsliced trie leaves out (:attr:`SliceFamily.apart`)
    apart: bool = False
    #: of a family whose tokens (its prefix included) are all characters a JSON string holds
    #: unescaped (:attr:`SliceSet.string_chars` counts them)
    in_strings: bool = False


@dataclass
class SliceSet:
    """Slices partitioning a vocabulary, with their tries laid end to end in one :class:`TokenTrie`
    (so a state's mask is one walk over the ranges of the slices it must walk)."""

    slices: list[Slice]
    trie: TokenTrie
    #: per cover automaton, widest first: (cover, longest bounded slice, covers whose survival of
    #: everything implies this one's -- those of wider character sets)
    covers: tuple[tuple[DFA, int, tuple[DFA, ...]], ...] = ()
    #: the trie nodes ``first:end`` of every token in one trie, after the slices' (None: none), walked
    #: instead of the slices by a state that takes no slice whole -- but the tokens of the slices
    #: kept apart (:attr:`Slice.apart`: whitespace), which it takes whole or walks beside it
    unsliced: tuple[int, int] | None = None
    #: per token id, the characters of a token of a slice :attr:`Slice.in_strings` (an unfinished last
    #: one counted, as the slices count it), 0 for the others; None: not counted (see
    #: :meth:`strings_up_to`)
    string_chars: np.ndarray | None = None
    _strings: dict[int, tuple[np.ndarray, int]] = field(default_factory=dict, repr=False, compare=False)
    _string_ids: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _unions: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _union_ids: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    #: slice indices by the flags of a walk plan (few patterns occur)
    _taken: dict[bytes, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)
    _taken_bits: dict[int, tuple[tuple[int, ...], int]] = field(default_factory=dict, repr=False, compare=False)
    _unions_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __iter__(self):
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    @functools.cached_property
    def num_tokens(self) -> int:
        """Tokens in the slices (each in one; :attr:`trie` also holds them all in :attr:`unsliced`)."""
        return sum(int(sl.token_ids.shape[0]) for sl in self.slices)

    @classmethod
    def whole(cls, trie: TokenTrie, bitset: np.ndarray) -> SliceSet:
        """One remainder slice holding every token of ``trie`` (no slice can be skipped)."""
        return cls([Slice("all", None, None, trie.tok_ids, bitset, 1, trie.num_nodes)], trie)

    def walk_plan(self, state: int, rtn, out: tuple[np.ndarray, ...] | None = None
                  ) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray]:
        """``(taken, starts, ends, exits)``: the indices of the slices ``state`` accepts whole (their
        tokens: :meth:`union`), the trie ranges of the others to walk (of the unsliced trie, when
        it takes none), and -- where ``state`` is final -- the top-level nodes whose first byte only
        a pop can take (exits the walk need not visit). One kernel call
        (:func:`._survival.plan_state_packed`). ``out``: buffers from :meth:`plan_buffers` to write
        into (one set per thread; the arrays returned are views of them)."""
        _, take, starts, ends, exits = out if out is not None else self.plan_buffers()
        p = self.plan_arrays(rtn)
        n, ne = plan_state_packed(state, *rtn.step_pack, self.plan_params, p.tables, p.lower, p.memo, take,
                                  starts, ends, exits)
        return self.taken(take), starts[:n], ends[:n], exits[:ne]

    def taken(self, take: np.ndarray) -> tuple[int, ...]:
        """The indices of the slices flagged in ``take`` (a plan's), kept per combination."""
        key = take.tobytes()
        taken = self._taken.get(key)
        if taken is None:
            taken = _kept(self._taken, key, tuple(np.flatnonzero(take).tolist()), self._unions_lock)
        return taken

    def plan_buffers(self) -> tuple[np.ndarray, ...]:
        """``(block, take, starts, ends, exits)``: buffers sized for :meth:`walk_plan`, the last four
        parts of the first (a kernel taking it slices them apart itself: :func:`plan_views`)."""
        n_sl = len(self.slices)
        m = self._roots[1].shape[0] + n_sl
        block = np.zeros(2 + n_sl + 3 * m, dtype=np.int32)
        block[:2] = n_sl, m
        return (block, *plan_views(block))

    def union(self, taken: tuple[int, ...]) -> np.ndarray:
        """The bitset of the tokens of slices ``taken`` (read-only; kept per combination: states take
        few different ones -- every slice but the remainder inside a JSON string, say)."""
        u = self._unions.get(taken)
        if u is None:
            u = np.zeros_like(self.slices[0].bitset)
            for j in taken:
                u |= self.slices[j].bitset
            u.flags.writeable = False
            _kept(self._unions, taken, u, self._unions_lock)
        return u

    def taken_from_bits(self, bits: int, take: np.ndarray) -> tuple[tuple[int, ...], int]:
        """``(taken, tokens)``: the indices of the slices a plan took whole and how many tokens they
        hold, kept by ``bits`` (bit ``j`` for slice ``j``: one dict read for a mask kernel's answer,
        where :meth:`taken` of its ``take`` flags and a count cost ~10 µs with Python's caches cold);
        a set of more than 63 slices reads ``take``."""
        hit = self._taken_bits.get(bits)
        if hit is None:
            taken = self.taken(take)
            hit = (taken, sum(int(self.slices[j].token_ids.shape[0]) for j in taken))
            if len(self.slices) <= 63:
                _kept(self._taken_bits, bits, hit, self._unions_lock)
        return hit

    def union_ids(self, taken: tuple[int, ...]) -> np.ndarray:
        """The token ids of slices ``taken`` (read-only; kept per combination, as :meth:`union`)."""
        u = self._union_ids.get(taken)
        if u is None:
            u = np.concatenate([self.slices[j].token_ids for j in taken]).astype(np.int32, copy=False)
            u.flags.writeable = False
            _kept(self._union_ids, taken, u, self._unions_lock)
        return u

    def strings_up_to(self, n: int) -> tuple[np.ndarray, int]:
        """``(bitset, count)`` of the tokens of the slices :attr:`Slice.in_strings` with at most ``n``
        characters (read-only; kept per ``n``): what a JSON string with ``n`` characters left to read
        accepts of them, and all it accepts (every other character is one more). Needs
        :attr:`string_chars`; :meth:`string_ids_up_to` lists them."""
        n = min(n, self._string_counts.shape[0] - 1)
        hit = self._strings.get(n)
        if hit is None:
            words = self.slices[0].bitset.shape[0]
            packed = np.zeros(4 * words, dtype=np.uint8)
            bits = np.packbits(self._strings_of_at_most(n), bitorder="little")
            packed[:bits.shape[0]] = bits
            row = packed.view(np.int32)
            row.flags.writeable = False
            hit = _kept(self._strings, n, (row, int(self._string_counts[n])), self._unions_lock)
        return hit

    def string_ids_up_to(self, n: int) -> np.ndarray:
        """The ids :meth:`strings_up_to` counts (read-only; kept per ``n``)."""
        n = min(n, self._string_counts.shape[0] - 1)
        ids = self._string_ids.get(n)
        if ids is None:
            ids = np.flatnonzero(self._strings_of_at_most(n)).astype(np.int32)
            ids.flags.writeable = False
            ids = _kept(self._string_ids, n, ids, self._unions_lock)
        return ids

    def _strings_of_at_most(self, n: int) -> np.ndarray:
        """Per token id: is it a string-character token of at most ``n`` characters."""
        chars = self.string_chars
        return (chars > 0) & (chars <= n)

    @functools.cached_property
    def _string_counts(self) -> np.ndarray:
        """How many string-character tokens have at most ``n`` characters, for ``n`` up to the longest."""
        assert self.string_chars is not None
        return np.cumsum(np.bincount(self.string_chars)) - int((self.string_chars == 0).sum())

    @functools.cached_property
    def outside_strings(self) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, ends)``: the trie ranges of the slices not :attr:`Slice.in_strings` (the
        remainder, whitespace with tabs or newlines): what a JSON string's mask walks beside
        :meth:`strings_up_to`."""
        ranges = [(sl.first, sl.end) for sl in self.slices if not sl.in_strings and sl.end > sl.first]
        starts = np.array([a for a, _ in ranges], dtype=np.int32)
        ends = np.array([b for _, b in ranges], dtype=np.int32)
        return starts, ends

    def survival_depth(self, k: int, state: int, rtn) -> float:
        """The largest ``H`` such that every string of cover ``k`` (``self.covers[k]``) with at most
        ``H`` characters survives from ``state`` by byte steps inside its frame; ``math.inf`` if
        every string does.

        A byte step follows a transition or enters a rule through a call chain (an object key
        may be a declared name or a shared "other key" rule); the grammar side of the search is
        the *set* of states reachable so far, so no alternative is missed. Leaving the frame
        (pops) is not followed, which can only make ``H`` smaller: safe. A 0-1 breadth-first
        search over (cover state, state set) pairs ordered by characters completed (the cover's
        final states end a character); the first dying byte found gives ``H``. Below the cover's
        limit (its longest bounded slice) the answer is exact; at or above it, it is some value
        between the limit and ``H``, which decides the same slices. After ``MAX_PAIRS`` pairs the
        search stops with a smaller, still correct, answer.

        A state whose call chains enter a rule that alone survives everything (an object key
        that is a declared name or any other string) survives everything too. A search also
        proves a depth for every state it reaches alone after ``d`` characters (``H - d``) and
        runs to twice the limit, so along a bounded string one search serves the next states
        too. Results are remembered per grammar.
        """
        p = self.plan_arrays(rtn)
        h = cover_depth(k, state, rtn.trans, rtn.num_classes, rtn.chain_ptr, rtn.chain_target,
                        *self._cover_params[:2], *table_views(p.tables), p.lower, p.memo, MAX_PAIRS)
        return math.inf if h == DEPTH_INF else float(h)

    def cover_edges(self, k: int, rtn) -> tuple[np.ndarray, ...]:
        """Cover ``k``'s search input in ``rtn``'s classes (its part of :func:`._survival.cover_tables`)."""
        off, *arrays = table_views(self.plan_arrays(rtn).tables)
        cols = (T_PTR, T_EDGE, T_EDGE, T_CLS_PTR, T_CLS, T_FIRST, T_STATE)
        return tuple(a[off[k, c]:off[k + 1, c]] for a, c in zip(arrays, cols, strict=True))

    def plan_arrays(self, rtn) -> _Plan:
        """``rtn``'s walk-plan arrays for this slice set (made at its first plan, kept with it)."""
        plans = rtn.__dict__.get("_slice_plans")
        if plans is None:
            plans = rtn.__dict__["_slice_plans"] = {}
        p = plans.get(id(self))
        if p is None:
            tables, lower, memo = plan_tables(*self._cover_args, rtn.byte_class, rtn.num_classes, rtn.num_states)
            if lower.shape[1] != rtn.num_states:  # (a large grammar: zeros the OS gives untouched)
                lower = np.zeros((len(self.covers), rtn.num_states), dtype=np.int16)
                memo = np.zeros((len(self.covers), rtn.num_states), dtype=np.int32)
            p = plans[id(self)] = _Plan(tables, lower, memo)
        return p

    @functools.cached_property
    def _cover_args(self) -> tuple[np.ndarray, ...]:
        """:attr:`_cover_arrays` in the order :func:`._survival.plan_tables` takes them."""
        c = self._cover_arrays
        return c["byte_class"], c["trans"], c["final"], c["nq"], c["nc"], c["start"]

    @functools.cached_property
    def _cover_arrays(self) -> dict[str, np.ndarray]:
        """The cover automata as padded arrays (the input of :func:`._survival.cover_tables`)."""
        dfas = [cover for cover, _, _ in self.covers]
        nk = len(dfas)
        nq = np.array([d.num_states for d in dfas], dtype=np.int64)
        nc = np.array([d.num_classes for d in dfas], dtype=np.int64)
        trans = np.full((nk, max(nq, default=1), max(nc, default=1)), -1, dtype=np.int32)
        final = np.zeros((nk, max(nq, default=1)), dtype=np.uint8)
        byte_class = np.zeros((nk, 256), dtype=np.int32)
        for k, d in enumerate(dfas):
            trans[k, :d.num_states, :d.num_classes] = d.trans
            final[k, :d.num_states] = d.final
            byte_class[k] = d.byte_class
        return {"byte_class": byte_class, "trans": trans, "final": final, "nq": nq, "nc": nc,
                "start": np.array([d.start for d in dfas], dtype=np.int64)}

    @functools.cached_property
    def _cover_index(self) -> dict[int, int]:
        """Position in ``covers`` of each cover automaton, by ``id``."""
        return {id(cover): k for k, (cover, _, _) in enumerate(self.covers)}

    @functools.cached_property
    def _cover_params(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(start, limit, wider)`` per cover (see :func:`._survival.plan_state`)."""
        index = self._cover_index
        wider = [sum(1 << index[id(w)] for w in ws) for _, _, ws in self.covers]
        return (self._cover_arrays["start"], np.array([lim for _, lim, _ in self.covers], dtype=np.int64),
                np.array(wider, dtype=np.int64))

    @functools.cached_property
    def _roots(self) -> tuple[np.ndarray, ...]:
        """``(ptr, node, end, byte)``: each slice's top-level trie nodes (``node[ptr[j]:ptr[j + 1]]``
        for slice ``j``), then the unsliced trie's (group ``len(slices)``, when there is one), where
        their subtrees end and their bytes. A walk plan lists only the subtrees a state can enter,
        and reads these few hundred entries, not the trie itself."""
        t = self.trie
        ptr, nodes = [0], []
        groups = [(sl.first, sl.end) for sl in self.slices] + ([self.unsliced] if self.unsliced else [])
        for first, end in groups:
            i = first
            while i < end:
                nodes.append(i)
                i = int(t.node_end[i])
            ptr.append(len(nodes))
        node = np.array(nodes, dtype=np.int64)
        return (np.array(ptr, dtype=np.int64), node, t.node_end[node].astype(np.int64),
                t.node_byte[node].astype(np.int64))

    @functools.cached_property
    def plan_params(self) -> np.ndarray:
        """What :func:`._survival.plan_state_packed` reads of the slice set, end to end in one array
        (:func:`.._arrays.end_to_end`): the covers' starts, limits and wider sets
        (:attr:`_cover_params`), the slices' covers, bounds and ranges (:attr:`_slice_params`), their
        top-level nodes (:attr:`_roots`), then ``MAX_PAIRS``."""
        return end_to_end((*self._cover_params, *self._slice_params, *self._roots), MAX_PAIRS)

    @functools.cached_property
    def top_nodes(self) -> np.ndarray:
        """The top-level trie nodes of the unsliced trie and of the slices kept apart, or of every
        slice when there is none (int32, ascending, read-only): the exits of a state that can only
        pop (each token leaves its frame at its first byte), as a walk that takes no slice whole
        finds them."""
        ptr, node = self._roots[:2]
        n_sl = len(self.slices)
        groups = ([j for j, sl in enumerate(self.slices) if sl.apart] + [n_sl]) if self.unsliced else range(n_sl)
        nodes = np.concatenate([node[ptr[j]:ptr[j + 1]] for j in groups]).astype(np.int32)
        nodes.flags.writeable = False
        return nodes

    @functools.cached_property
    def _slice_params(self) -> tuple[np.ndarray, ...]:
        """``(cover index, max chars, first, end, apart)`` per slice (-1: no cover, no bound)."""
        index = self._cover_index
        sl = self.slices
        return (np.array([index[id(x.cover)] if x.cover is not None else -1 for x in sl], dtype=np.int64),
                np.array([x.max_chars if x.max_chars is not None else -1 for x in sl], dtype=np.int64),
                np.array([x.first for x in sl], dtype=np.int64), np.array([x.end for x in sl], dtype=np.int64),
                np.array([x.apart for x in sl], dtype=np.int64))


def _kept(cache: dict, key, value, lock: threading.Lock):
    """Keep ``value`` under ``key`` in one of a slice set's per-combination caches and return it.
    Bounded: a cache of 256 entries is cleared first (states take few different combinations, and
    a union is a row of the vocabulary's bits)."""
    with lock:
        if len(cache) >= 256:
            cache.clear()
        cache[key] = value
    return value


@dataclass
class _Plan:
    """Per grammar and slice set: the covers' search input in the grammar's classes
    (:func:`._survival.cover_tables`), survival depths proved so far per cover and state (``lower``,
    int16, depth + 1, 0: none) and the depths searched (``memo``, int32, depth - ``UNKNOWN_DEPTH``, 0:
    not yet)."""

    tables: np.ndarray  # (one array: :func:`._survival.table_views` reads it)
    lower: np.ndarray
    memo: np.ndarray


def _cover_dfa(chars, prefix: str = "") -> DFA:
    """The automaton of ``prefix C+`` for the codepoint ranges ``chars`` (final states end a
    character of ``C``: the survival depth counts those)."""
    body = Repeat(codepoint_ranges_expr(list(chars)), 1, None)
    dfa = minimize(standalone_dfa(seq(lit(prefix), body), None, 10_000))
    assert dfa is not None, "a cover holds at least one character"
    return dfa  # minimal: the survival search visits pairs of its states


def build_slices(token_bytes: list[bytes], trie_ids: np.ndarray, num_words: int,
                 families: tuple[SliceFamily, ...] = DEFAULT_FAMILIES,
                 unsliced: TokenTrie | None = None) -> SliceSet:
    """Partition the trie's tokens into slices, family by family (the last slice is the remainder);
    ``unsliced``: the trie of all of them (built here if not given), laid after the slices' without
    the tokens of the families kept apart."""
    remaining = np.asarray(trie_ids, dtype=np.int32)
    texts: dict[int, str | None] = {}
    partial: dict[int, tuple[int, int]] = {}  # token -> codepoints its unfinished last character may be
    for i in remaining.tolist():
        texts[i], tail = _split_partial(token_bytes[i])
        if tail is not None:
            partial[i] = tail
    parts: list[tuple[str, DFA | None, int | None, np.ndarray, bool, bool]] = []
    taken = np.zeros(len(token_bytes), dtype=bool)
    string_chars = np.zeros(len(token_bytes), dtype=np.int32)
    cover_of = [_cover_dfa(fam.chars, fam.prefix) for fam in families]
    limits = []  # per family: its longest bounded slice (how deep its survival searches must see)
    for cover, fam in zip(cover_of, families):
        pattern = fam.pattern()
        chars: dict[int, int] = {}  # member -> characters it counts (an unfinished one included)
        for i in remaining.tolist():
            text = texts[i]
            if taken[i] or text is None:
                continue
            if i not in partial:
                if pattern.fullmatch(text):
                    chars[i] = len(text) - len(fam.prefix)
            elif not fam.prefix and (not text or pattern.fullmatch(text)) and _overlaps(fam.chars, partial[i]):
                chars[i] = len(text) + 1
        limit = 0
        in_strings = _contains(_JSON_CHARS, fam.chars) and all(_contains(_JSON_CHARS, ((ord(c), ord(c)),))
                                                                for c in fam.prefix)
        for lo, hi in fam.bounds:
            members = {i: n for i, n in chars.items() if lo <= n and (hi is None or n <= hi)}
            arr = np.array(list(members), dtype=np.int32)
            taken[arr] = True
            if in_strings and members:  # (every character one, the prefix's too)
                string_chars[arr] = np.fromiter(members.values(), dtype=np.int32, count=len(members)) + len(fam.prefix)
            longest = max(members.values(), default=0)
            # an open bucket whose tokens are all short enough is bounded by its longest
            bound = longest if hi is None and 0 < longest <= MAX_BOUNDED_CHARS else hi
            parts.append((f"{fam.name}{lo}-{hi or ''}", cover, bound, arr, fam.apart, in_strings))
            limit = max(limit, bound or 0)
        limits.append(limit)
    covers = [(cover_of[k], limits[k],
               tuple(cover_of[j] for j, f in enumerate(families)
                     if j > k and f.prefix == fam.prefix and _contains(f.chars, fam.chars)))
              for k, fam in enumerate(families)]
    rest = np.array([i for i in remaining.tolist() if not taken[i]], dtype=np.int32)
    parts.append(("rest", None, None, rest, False, False))
    tries = [TokenTrie.from_tokens([token_bytes[i] for i in ids.tolist()], ids) for _, _, _, ids, _, _ in parts]
    if unsliced is None:
        all_ids = np.asarray(trie_ids, dtype=np.int32)
        unsliced = TokenTrie.from_tokens([token_bytes[i] for i in all_ids.tolist()], all_ids)
    apart = [ids for *_, ids, is_apart, _ in parts if is_apart and ids.shape[0]]
    if apart:  # (their tokens left out of the unsliced trie)
        keep = np.ones(len(token_bytes), dtype=np.bool_)
        keep[np.concatenate(apart)] = False
        unsliced = unsliced.restricted_to(keep)
    trie, roots = TokenTrie.concat([*tries, unsliced])
    slices = [Slice(name, cov, hi, ids, _bitset(ids, num_words), int(r) + 1, int(r) + t.num_nodes, is_apart, strs)
              for (name, cov, hi, ids, is_apart, strs), t, r in zip(parts, tries, roots)]
    string_chars.flags.writeable = False
    return SliceSet(slices, trie, tuple(reversed(covers)),
                    unsliced=(int(roots[-1]) + 1, int(roots[-1]) + unsliced.num_nodes), string_chars=string_chars)


def _split_partial(token: bytes) -> tuple[str | None, tuple[int, int] | None]:
    """``(text, None)`` for a token that is UTF-8 text; ``(text before, (lo, hi))`` for one that is
    text and then the start of one more character, whose codepoint lies in ``lo..hi`` (UTF-8 keeps
    codepoint order, so the ways to finish it are one range); ``(None, None)`` otherwise.

    A token ``t`` followed by an unfinished character ``u`` is a prefix of ``t c`` for every
    character ``c`` that starts with ``u``. A state that survives every ``C``-string of ``n + 1``
    characters therefore survives the token when one such ``c`` is in ``C``: it joins a slice as
    ``n + 1`` characters.
    """
    try:
        return token.decode("utf-8"), None
    except UnicodeDecodeError as e:
        if e.reason != "unexpected end of data" or e.end != len(token):
            return None, None
        head, tail = token[:e.start], token[e.start:]
    need = 2 if tail[0] < 0xE0 else 3 if tail[0] < 0xF0 else 4  # the character's length
    ends = []
    for filler in (range(0x80, 0xC0), range(0xBF, 0x7F, -1)):  # the smallest, then the largest finish
        for b in filler:  # (only the next byte can be out of range: E0 A0.., ED ..9F, F0 90.., F4 ..8F)
            rest = bytes([b]) + bytes([filler[0]]) * (need - len(tail) - 1)
            try:
                ends.append(ord((tail + rest).decode("utf-8")))
                break
            except UnicodeDecodeError:
                continue
    if len(ends) != 2:  # pragma: no cover - an unfinished character always has a way to finish
        return None, None
    return head.decode("utf-8"), (ends[0], ends[1])


def _overlaps(ranges: tuple[tuple[int, int], ...], span: tuple[int, int]) -> bool:
    """Does some codepoint of ``span`` (lo, hi) lie in ``ranges``?"""
    return any(lo <= span[1] and span[0] <= hi for lo, hi in ranges)


def _contains(outer: tuple[tuple[int, int], ...], inner: tuple[tuple[int, int], ...]) -> bool:
    """Is every codepoint of the ranges ``inner`` in the ranges ``outer``?"""
    return all(any(a <= lo and hi <= b for a, b in outer) for lo, hi in inner)


def _bitset(ids: np.ndarray, num_words: int) -> np.ndarray:
    bits = np.zeros(num_words, dtype=np.int32)
    if ids.shape[0]:
        np.bitwise_or.at(bits.view(np.uint32), ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
    return bits

