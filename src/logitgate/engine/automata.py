"""Byte-level automata: IR expressions to minimal DFAs with call edges, all on numpy arrays.

The engine represents every *called* grammar rule as a DFA over byte classes plus "call"
edges (one symbol per callee rule). This module builds those DFAs:

* :class:`Program` walks an IR expression once and emits a compact postfix program (literal
  bytes, byte sets, sequence/alternation/repetition, calls); rules that are inlined are
  expanded in place, ``And``/``Not`` sub-expressions are compiled to standalone call-free
  DFAs (product / complement) and embedded.
* :meth:`Program.determinize` runs Thompson construction and subset construction in one numba
  kernel (:mod:`._construction_kernels`) over the coarsest byte classes the program needs.
* :func:`trim` and :func:`minimize` (partition refinement) run in numba too (:mod:`._automata_kernels`);
  a trimmed DFA is numbered breadth-first from its start, so minimal DFAs are canonical.

Byte classes are numbered by their lowest byte. Every construction is bounded (state limits)
and raises :class:`LimitExceededError`.
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import GrammarError, LimitExceededError
from ..grammar.ir import Alt, And, Bytes, ByteSet, Expr, Not, Ref, Repeat, Seq, Special, is_ref_free
from . import _construction_kernels as K
from ._automata_kernels import canonical_dfa, merge_equal_classes, product_table, reaches_final, renumber
from .lru import LRU

__all__ = [
    "ALL_BYTES",
    "DFA",
    "Program",
    "RefResolver",
    "canonical_classes",
    "class_representatives",
    "is_productive",
    "minimize",
    "standalone_dfa",
    "trim",
]

ALL_BYTES = (1 << 256) - 1

# A resolver tells the program builder what to do with a rule reference:
#   ("inline", expr)            expand the rule body in place
#   ("call", rule_id, nullable) emit a call edge (plus an epsilon skip if the rule is nullable)
#   ("goto", expr)              a rule only ever read last by its callers (a tail reference): its
#                               body is written once per program, a labelled fragment jumped into
RefResolver = Callable[[str], tuple]

_NO_CALLS = np.zeros(0, dtype=np.int32)
_NO_RULES_KEPT = np.zeros(1, dtype=np.uint8)  # ``reaches_final``'s rule filter when no call counts (read only)
#: ``build_dfa``'s embedded-automaton arguments when there are none (read only)
_NO_EMBEDS = (np.zeros((0, 6), dtype=np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8), np.zeros(0, np.int32))

#: the ops ``Program`` writes for its leaves in a loop of its own (a module global, not an attribute)
_OP_LIT, _OP_SET = K.OP_LIT, K.OP_SET

#: ``Program.determinize``'s ``reduce`` argument as the kernel reads it
_REDUCE = {None: K.REDUCE_NONE, "trim": K.REDUCE_TRIM, "minimize": K.REDUCE_MINIMIZE}
_REDUCED = {code: name for name, code in _REDUCE.items() if name is not None}  # (the kernel's answer)

#: a DFA of more states than this is trimmed where it would be minimized (a rule's, an
#: intersection's: its equal classes merged): past ~50,000 states the refinement is bound by
#: memory traffic, several µs a state, and merges few. Such automata come from a format or
#: pattern with a large ``maxLength`` (``format: email``, ``maxLength: 1024``: 0.37 s to go from
#: 152,254 states to 123,447; ``format: uri``, ``maxLength: 500``: 0.27 s, 86,721 to 85,804).
#: The language is the same; the states a few more, the digests of equal rules built otherwise
#: unequal (masks shared less, never wrongly).
MINIMIZE_MAX_STATES = 50_000

#: an alternation of at least this many literals is built as a prefix tree (one kernel call)
_TRIE_MIN_LITERALS = 8


def canonical_classes(signature: np.ndarray) -> np.ndarray:
    """Class id per byte for bytes grouped by equal ``signature`` rows (``[256]`` or ``[256, w]``),
    classes numbered in the order of their lowest byte."""
    sig = np.ascontiguousarray(signature)
    if sig.ndim == 2:
        sig = sig.view(np.dtype((np.void, sig.dtype.itemsize * sig.shape[1]))).ravel()
    _, first, inverse = np.unique(sig, return_index=True, return_inverse=True)
    rank = np.empty(first.shape[0], dtype=np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(first.shape[0], dtype=np.int32)
    return rank[inverse.ravel()]


def class_representatives(byte_class: np.ndarray) -> np.ndarray:
    """The lowest byte of each class (classes numbered as by :func:`canonical_classes`)."""
    return np.unique(byte_class, return_index=True)[1]


def _mask_bits(mask: int) -> np.ndarray:
    """A 256-bit byte mask as bool[256]."""
    return np.unpackbits(np.frombuffer(mask.to_bytes(32, "little"), dtype=np.uint8), bitorder="little").astype(bool)


@dataclass(eq=False)
class DFA:
    """A DFA over byte classes with call edges, as arrays.

    ``byte_class[b]`` is the class of byte ``b``; ``trans[s, c]`` the target of class ``c`` from
    state ``s`` or -1; ``final[s]`` marks accepting states; call edges ``(call_src[i],
    call_rule[i]) -> call_dst[i]`` are sorted by source, then rule. ``as_built``: built directly
    (a :class:`Special`'s automaton), trimmed and the same for equal input, and used as it is for
    a rule rather than minimized (which would cost more than the few states it saves). One made
    by :func:`trim` or :func:`minimize`, or built directly, holds the fact ``_trimmed`` (in its
    ``__dict__``, carried by :meth:`with_calls`): every state reaches a final state, call edges
    counted as edges.
    """

    byte_class: np.ndarray
    trans: np.ndarray
    final: np.ndarray
    call_src: np.ndarray = field(default_factory=lambda: _NO_CALLS)
    call_rule: np.ndarray = field(default_factory=lambda: _NO_CALLS)
    call_dst: np.ndarray = field(default_factory=lambda: _NO_CALLS)
    start: int = 0
    as_built: bool = False

    def __post_init__(self) -> None:
        if self.as_built:
            self.__dict__["_trimmed"] = True

    @classmethod
    def from_lists(cls, classes: list[int], trans: list[list[int]], final: list[bool],
                   calls: list[dict[int, int]] | None = None, start: int = 0) -> DFA:
        """A DFA from class masks (disjoint, covering all bytes), rows of targets and finality."""
        byte_class = np.full(256, -1, dtype=np.int32)
        for c, m in enumerate(classes):
            byte_class[_mask_bits(m)] = c
        if (byte_class < 0).any():
            raise ValueError("classes do not cover all bytes")
        src, rule, dst = [], [], []
        for s, cm in enumerate(calls or []):
            for r, t in sorted(cm.items()):
                src.append(s)
                rule.append(r)
                dst.append(t)
        table = np.asarray(trans, dtype=np.int32).reshape(len(trans), len(classes))
        return cls(byte_class, table, np.asarray(final, dtype=bool), np.asarray(src, dtype=np.int32),
                   np.asarray(rule, dtype=np.int32), np.asarray(dst, dtype=np.int32), start)

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(self.trans.nbytes + self.final.nbytes + self.call_src.nbytes * 3 + self.byte_class.nbytes)

    @property
    def num_classes(self) -> int:
        return int(self.trans.shape[1])

    @property
    def classes(self) -> list[int]:
        """Class masks (256-bit ints), by class id."""
        cached = self.__dict__.get("_classes")
        if cached is None:
            member = np.zeros((self.num_classes, 256), dtype=bool)
            member[self.byte_class, np.arange(256)] = True
            packed = np.packbits(member, axis=1, bitorder="little").tobytes()  # (32 bytes a class)
            cached = [int.from_bytes(packed[i:i + 32], "little") for i in range(0, len(packed), 32)]
            self.__dict__["_classes"] = cached
        return cached

    def table_digest(self) -> bytes:
        """SHA-256 of the state count, byte classes, table and finality (calls excluded); computed
        once per table and carried by :meth:`with_calls` copies. (An automaton built directly for a
        :class:`Special` has its own unique digest instead: see :func:`_special_dfa`.)"""
        cached = self.__dict__.get("_table_digest")
        if cached is None:
            # (hashed in the narrowest type that holds every target: the state count fixes it)
            n = self.num_states
            narrow = np.int8 if n < 128 else np.int16 if n < 32768 else np.int32
            h = hashlib.sha256(np.int64(n).tobytes())
            h.update(self.byte_class.astype(np.uint8))  # (at most 256 classes)
            h.update(self.trans.astype(narrow))
            h.update(self.final.astype(np.uint8))
            cached = self.__dict__["_table_digest"] = h.digest()
        return cached

    def with_calls(self, call_src: np.ndarray, call_rule: np.ndarray, call_dst: np.ndarray) -> DFA:
        """The same tables with other call edges (sorted by source, then rule)."""
        out = DFA(self.byte_class, self.trans, self.final, call_src, call_rule, call_dst, self.start)
        # facts of the tables alone, and of the cached rule they are (its calls renumbered, not changed)
        for fact in ("_table_digest", "_accepts_without_calls", "_named", "_layers", "_trimmed"):
            if fact in self.__dict__:
                out.__dict__[fact] = self.__dict__[fact]
        return out

    def calls_of(self, s: int) -> dict[int, int]:
        """Call edges of state ``s``: callee rule -> target."""
        lo, hi = np.searchsorted(self.call_src, [s, s + 1])
        return dict(zip(self.call_rule[lo:hi].tolist(), self.call_dst[lo:hi].tolist()))

    def accepts(self, data: bytes) -> bool:
        """Membership for call-free DFAs (tests and debugging)."""
        s = self.start
        for b in data:
            s = int(self.trans[s, self.byte_class[b]])
            if s < 0:
                return False
        return bool(self.final[s])


# ---------------------------------------------------------------------------- IR -> program

class Program:
    """The postfix program of one expression (see :mod:`._construction_kernels`), then its DFA.

    Example::

        >>> from logitgate.grammar.ir import lit, alt
        >>> p = Program(None)
        >>> p.emit(alt(lit("ab"), lit("ac")))
        >>> d = p.determinize(1000, 1000)[0]
        >>> d.accepts(b"ac"), d.accepts(b"a")
        (True, False)
    """

    def __init__(self, resolve: RefResolver | None, max_dfa_states: int = 100_000):
        self.resolve = resolve
        self.max_dfa_states = max_dfa_states
        self.ops: list[int] = []
        self.lit = bytearray()
        self.sets: dict[int, int] = {}
        self.embeds: list[tuple[DFA, list[int] | None]] = []
        #: rules jumped to (``goto``): label of each, and their bodies, written after the main program
        self.labels: dict[str, int] = {}
        self._label_bodies: list[Expr] = []
        self._labelled = 0  # bodies written so far (determinize writes them, once)
        #: id(node) -> (node, start, end) of its ops: a node met again is a copy of them (its ops
        #: name literals, sets, embeds, calls and labels of this program, wherever they stand)
        self._written: dict[int, tuple[Expr, int, int]] = {}
        #: a set of literals emitted first, its program not written yet (see _emit_literals)
        self._literals: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None

    @property
    def size(self) -> int:
        """Ops written, and literals of a first set held unwritten: about as many as the nodes of
        the expressions emitted."""
        return len(self.ops) + (0 if self._literals is None else len(self._literals[1]))

    def _set_id(self, mask: int) -> int:
        j = self.sets.get(mask)
        if j is None:
            j = self.sets[mask] = 256 + len(self.sets)
        return j

    def emit(self, e: Expr, inlining: tuple[str, ...] = ()) -> None:
        """Append the program of ``e``; ``inlining`` names the rules being expanded around it."""
        ops = self.ops
        t = type(e)
        if t is Bytes:
            v = e.value
            if v:
                ops += (K.OP_LIT, len(self.lit), len(v))
                self.lit += v
            else:
                ops.append(K.OP_EMPTY)
        elif t is ByteSet:
            ops += (K.OP_SET, self._set_id(e.to_mask()))
        elif (hit := self._written.get(id(e))) is not None and hit[0] is e:
            ops += ops[hit[1]:hit[2]]
        elif t is Alt or t is Seq or t is Repeat:
            start = len(ops)
            self._emit_composite(e, t, inlining)
            if len(ops) > start and (start or self._literals is None):  # (not around a first set of
                self._written[id(e)] = (e, start, len(ops))                 # literals: no ops of its own yet)
        elif t is Ref:
            if self.resolve is None:
                raise GrammarError(f"rule reference {e.name!r} is not allowed here")
            how = self.resolve(e.name)
            if how[0] == "inline":
                if e.name in inlining:
                    raise GrammarError(f"rule {e.name!r} is recursive and cannot be inlined")
                self.emit(how[1], (*inlining, e.name))
            elif how[0] == "goto":
                k = self.labels.get(e.name)
                if k is None:
                    k = self.labels[e.name] = len(self._label_bodies)
                    self._label_bodies.append(how[1])
                ops += (K.OP_GOTO, k)
            else:
                ops += (K.OP_CALL, how[1], 1 if how[2] else 0)
        elif t is And or t is Not or t is Special:
            self._embed(standalone_dfa(e, self.resolve, self.max_dfa_states, inlining))
        else:
            raise GrammarError(f"unknown IR node {e!r}")

    def _emit_composite(self, e: Expr, t: type, inlining: tuple[str, ...]) -> None:
        ops = self.ops
        if t is Alt:
            items = e.items
            if len(items) >= _TRIE_MIN_LITERALS and all(type(it) is Bytes for it in items):
                self._emit_literals(sorted({it.value for it in items}))  # type: ignore[attr-defined]
                return
            lit = self.lit
            for it in items:  # (literals and byte sets written here, as in a sequence below)
                ti = type(it)
                if ti is Bytes and it.value:  # type: ignore[attr-defined]
                    ops += (_OP_LIT, len(lit), len(it.value))  # type: ignore[attr-defined]
                    lit += it.value  # type: ignore[attr-defined]
                elif ti is ByteSet:
                    ops += (_OP_SET, self._set_id(it.to_mask()))  # type: ignore[attr-defined]
                else:
                    self.emit(it, inlining)
            ops += (K.OP_ALT, len(items))
        elif t is Seq:
            items = e.items
            if not items:
                ops.append(K.OP_EMPTY)
                return
            # X (S X)* -- X the items just before a (S X)* -- is built with one copy of X
            count = run = j = 0  # fragments so far; items since the last such unit; index
            lit = self.lit
            for it in items:
                j += 1
                ti = type(it)
                if ti is Bytes:  # (literals and byte sets written here: one call fewer per leaf)
                    v = it.value  # type: ignore[attr-defined]
                    if v:
                        ops += (_OP_LIT, len(lit), len(v))
                        lit += v
                    else:
                        ops.append(K.OP_EMPTY)
                    count += 1
                    run += 1
                    continue
                if ti is ByteSet:
                    ops += (_OP_SET, self._set_id(it.to_mask()))  # type: ignore[attr-defined]
                    count += 1
                    run += 1
                    continue
                if ti is Repeat and run and it.min == 0 and it.max is None:
                    body = it.item.items if type(it.item) is Seq else (it.item,)
                    k = min(len(body), run)
                    while k and items[j - 1 - k:j - 1] != body[len(body) - k:]:
                        k -= 1
                    if k:
                        if k > 1:
                            ops += (K.OP_SEQ, k)  # X as one fragment
                        if k < len(body):
                            self._emit_seq(body[:len(body) - k], inlining)
                            ops.append(K.OP_SEPREP)
                        else:
                            ops += (K.OP_REP, 1, -1)  # X X* is X+
                        count -= k - 1
                        run = 0
                        continue
                self.emit(it, inlining)
                count += 1
                run += 1
            ops += (K.OP_SEQ, count)
        else:  # Repeat
            self.emit(e.item, inlining)
            ops += (K.OP_REP, e.min, -1 if e.max is None else e.max)

    def _emit_seq(self, items: tuple[Expr, ...], inlining: tuple[str, ...]) -> None:
        for it in items:
            self.emit(it, inlining)
        if len(items) > 1:
            self.ops += (K.OP_SEQ, len(items))

    def _emit_literals(self, values: list[bytes]) -> None:
        """The alternation of ``values`` (sorted, distinct) as a prefix tree (see
        :func:`._construction_kernels.literal_trie_program`)."""
        lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        offs = np.zeros(len(values), dtype=np.int64)
        np.cumsum(lens[:-1], out=offs[1:])
        pool = np.frombuffer(b"".join(values), dtype=np.uint8)
        base = len(self.lit)
        self.lit += pool.tobytes()
        if not self.ops and self._literals is None:
            # perhaps the whole program, whose DFA determinize then builds directly: the program is
            # written only if more follows (this being the first fragment, it goes first)
            self._literals = (pool, offs, lens, base)
            return
        self.ops += K.literal_trie_program(pool, offs, lens, base).tolist()

    def _embed(self, dfa: DFA) -> None:
        self.ops += (K.OP_EMBED, len(self.embeds))
        self.embeds.append((dfa, None))  # (its classes' set ids: made by determinize, if it needs them)

    def _set_words(self) -> np.ndarray:
        """The masks used, each as 4 little-endian 64-bit words (what
        :func:`._construction_kernels.byte_classes` reads)."""
        packed = b"".join([m.to_bytes(32, "little") for m in self.sets])
        return np.frombuffer(packed, dtype="<u8").reshape(-1, 4)

    def determinize(self, max_nfa_states: int, max_dfa_states: int,
                    reduce: str | None = None) -> tuple[DFA, int]:
        """The program's DFA (start state 0; unreachable or dead states may remain) and the
        number of NFA states it took. ``reduce="trim"`` or ``"minimize"``: the subset construction's
        DFA comes back as :func:`trim` or :func:`minimize` would make it (trimmed where it has more
        than :data:`MINIMIZE_MAX_STATES` states), built and reduced in one kernel call, marked with
        the reduction made, ``_reduced`` (a DFA made otherwise -- built directly, one embedded
        automaton, an empty language -- comes back as it is, unmarked)."""
        while self._labelled < len(self._label_bodies):  # (a body may jump to further labels)
            k = self._labelled
            self._labelled += 1
            self.emit(self._label_bodies[k])
            self.ops += (K.OP_LABEL, k)
        if self._literals is not None and self.ops:  # a first set of literals and more: write its program
            self.ops[:0] = K.literal_trie_program(*self._literals).tolist()
            self._literals = None
        if len(self.ops) == 2 and self.ops[0] == K.OP_EMBED:  # the program is one And/Not: its DFA as it is
            d = self.embeds[0][0]
            if d.num_states + 1 > max_nfa_states:
                raise LimitExceededError(f"grammar automaton exceeds {max_nfa_states} NFA states",
                                         limit="max_nfa_states")
            return d, d.num_states + 1
        # the set ids of embedded automata's classes (not made for a program that is one embed, above)
        self.embeds = [(d, [self._set_id(m) for m in d.classes] if ids is None else ids) for d, ids in self.embeds]
        lit = np.frombuffer(bytes(self.lit) or b"\0", dtype=np.uint8)
        if self._literals is not None:  # a set of literals alone
            byte_class, _, _, ncls = K.byte_classes(self._set_words(), lit, len(self.lit))
            trans, final, group, nodes = K.literal_set_dfa(*self._literals[:3], byte_class, ncls)
            if nodes + 1 > max_nfa_states:
                raise LimitExceededError(f"grammar automaton exceeds {max_nfa_states} NFA states",
                                         limit="max_nfa_states")
            if trans.shape[0] > max_dfa_states:
                raise LimitExceededError(f"grammar automaton exceeds {max_dfa_states} DFA states",
                                         limit="max_dfa_states")
            # minimal and canonical already (what minimize would make of it)
            return DFA(group[byte_class].astype(np.int32), trans, final.view(bool), as_built=True), int(nodes) + 1
        if self.embeds:
            info = np.zeros((len(self.embeds), 6), dtype=np.int64)
            tr, fi, mk = [], [], []
            t_off = f_off = m_off = 0
            for i, (d, ids) in enumerate(self.embeds):
                info[i] = (d.num_states, d.num_classes, t_off, f_off, m_off, d.start)
                tr.append(d.trans.ravel())
                fi.append(d.final.view(np.uint8))
                mk.append(np.asarray(ids, dtype=np.int32))
                t_off += d.trans.size
                f_off += d.num_states
                m_off += len(ids)
            embedded = (info, np.concatenate(tr), np.concatenate(fi), np.concatenate(mk))
        else:  # (most programs: no And/Not operand or Special automaton)
            embedded = _NO_EMBEDS
        # classes, subset construction and reduction in one kernel call (classes merged by
        # minimization come back applied to the byte classes: see minimize)
        # (packed by struct: 4 µs for a 400-word program, where np.asarray of the list takes 13)
        ops = np.frombuffer(struct.pack(f"{len(self.ops)}i", *self.ops), dtype=np.int32)
        built = K.classes_and_reduced_dfa(self._set_words(), ops, lit, len(self.lit), *embedded,
                                          max_nfa_states, max_dfa_states, _REDUCE[reduce], MINIMIZE_MAX_STATES)
        status, nfa_states, trans, final, c_src, c_rule, c_dst, byte_class, reduced = built
        if status == K.NFA_LIMIT:
            raise LimitExceededError(f"grammar automaton exceeds {max_nfa_states} NFA states", limit="max_nfa_states")
        if status == K.DFA_LIMIT:
            raise LimitExceededError(f"grammar automaton exceeds {max_dfa_states} DFA states", limit="max_dfa_states")
        out = DFA(byte_class, trans, final.view(bool), c_src, c_rule, c_dst, 0)
        if reduced:
            out.__dict__["_trimmed"] = True
            out.__dict__["_reduced"] = _REDUCED[reduced]
        return out, int(nfa_states)


# ---------------------------------------------------------------------------- trim, minimize


def is_productive(dfa: DFA, productive: np.ndarray | None = None) -> bool:
    """Does ``dfa`` accept any string (calls of rules ``r`` with ``not productive[r]`` are dead)?"""
    alone = dfa.__dict__.get("_accepts_without_calls")
    if alone is None:  # (remembered: rule tables are shared between grammars)
        alone = dfa.__dict__["_accepts_without_calls"] = reaches_final(
            dfa.trans, dfa.final.view(np.uint8), _NO_CALLS, _NO_CALLS, _NO_CALLS, _NO_RULES_KEPT, dfa.start)
    if alone or dfa.call_src.shape[0] == 0:
        return alone
    ok = _kept_rules(dfa, productive)
    return reaches_final(dfa.trans, dfa.final.view(np.uint8), dfa.call_src, dfa.call_rule, dfa.call_dst, ok, dfa.start)


def _kept_rules(dfa: DFA, productive: np.ndarray | None) -> np.ndarray:
    """Per rule id: keep its call edges (``productive`` as uint8, or every rule the DFA calls)."""
    if productive is not None:
        return productive.astype(np.uint8)
    return np.ones(int(dfa.call_rule.max()) + 1 if dfa.call_rule.shape[0] else 1, dtype=np.uint8)


def trim(dfa: DFA, productive: np.ndarray | None = None) -> DFA | None:
    """Remove states that cannot reach a final state, or are unreachable (and edges to them).

    Calls of rules ``r`` with ``not productive[r]`` are dropped. Returns None if the start
    state is dead. States are renumbered breadth-first from the start (byte classes in order,
    then calls by rule).
    """
    t, f, cs, cr, cd = renumber(dfa.trans, dfa.final.view(np.uint8), dfa.call_src, dfa.call_rule, dfa.call_dst,
                                _kept_rules(dfa, productive), dfa.start)
    if t.shape[0] == 0:
        return None
    out = DFA(dfa.byte_class, t, f.view(bool), cs, cr, cd, 0)
    out.__dict__["_trimmed"] = True
    return out


def minimize(dfa: DFA, productive: np.ndarray | None = None) -> DFA | None:
    """The canonical minimal DFA of ``dfa`` (None if its language is empty): trimmed as by
    :func:`trim`, equivalent states merged (Valmari-Lehtinen refinement; calls count as symbols), numbered
    breadth-first from the start, and byte classes merged where every state treats them alike.

    Equal languages (and equal calls) give equal arrays, which is what lets rule digests
    identify behaviour across grammars.
    """
    t, f, cs, cr, cd, group = canonical_dfa(dfa.trans, dfa.final.view(np.uint8), dfa.call_src, dfa.call_rule,
                                           dfa.call_dst, _kept_rules(dfa, productive), dfa.start)
    if t.shape[0] == 0:
        return None
    # classes are numbered by lowest byte and merged groups by their first class: still canonical
    out = DFA(group[dfa.byte_class].astype(np.int32), t, f.view(bool), cs, cr, cd, 0)
    out.__dict__["_trimmed"] = True
    return out


# ---------------------------------------------------------------------- And / Not


#: standalone DFAs of reference-free And/Not expressions, process-wide (DFAs are never mutated)
_STANDALONE_CACHE: LRU[DFA] = LRU(512, max_bytes=128 << 20, weight=lambda d: d.nbytes)


def standalone_dfa(
    expr: Expr, resolve: RefResolver | None, max_states: int, inlining: tuple[str, ...] = ()
) -> DFA:
    """A call-free, trimmed DFA for a regular expression (used for And/Not operands): minimal
    when built from an expression or an intersection (up to :data:`MINIMIZE_MAX_STATES` states;
    past them only trimmed), as built for a :class:`Special`.

    Expressions without rule references are cached process-wide, so grammars that share e.g. a
    hostname or email format (or the string body of "any other key") pay for its automaton once.
    So are inlined rules without references of their own (a schema's patterns): a reference to
    one stands for its body.
    """
    while isinstance(expr, Ref) and resolve is not None and expr.name not in inlining:
        how = resolve(expr.name)
        if how[0] != "inline":
            break  # (refused below, naming the rule)
        expr, inlining = how[1], (*inlining, expr.name)
    if is_ref_free(expr):
        key = (expr, max_states)
        hit = _STANDALONE_CACHE.get(key)
        if hit is None:
            hit = _standalone_dfa(expr, resolve, max_states, inlining)
            _STANDALONE_CACHE.put(key, hit)
        return hit
    return _standalone_dfa(expr, resolve, max_states, inlining)


def _standalone_dfa(
    expr: Expr, resolve: RefResolver | None, max_states: int, inlining: tuple[str, ...] = ()
) -> DFA:
    if isinstance(expr, And):
        dfas = [standalone_dfa(it, resolve, max_states, inlining) for it in expr.items]
        if len(dfas) == 1:
            return dfas[0]
        # smallest first (stable): a product is at most the product of its operands' sizes, and
        # small operands constrain one another before a large one multiplies them; an empty
        # intersection ends the fold
        dfas.sort(key=lambda d: d.num_states)
        out = dfas[0]
        for d in dfas[1:]:
            if not out.final.any():
                return _empty_dfa()
            out = _product(out, d, max_states)
        if out.num_states > MINIMIZE_MAX_STATES:
            return _classes_merged(out)
        return minimize(out) or _empty_dfa()
    if isinstance(expr, Not):
        return _complement(standalone_dfa(expr.item, resolve, max_states, inlining), max_states)
    if isinstance(expr, Special):
        return _special_dfa(expr, max_states)

    def regular_only(name: str) -> tuple:
        how = resolve(name) if resolve is not None else ("call",)
        if how[0] != "inline":
            raise GrammarError(
                f"rule {name!r} is used inside an intersection or complement but is not regular "
                "(it is recursive); And/Not operands must be regular"
            )
        return how

    prog = Program(regular_only, max_states)
    prog.emit(expr, inlining)
    dfa, _ = prog.determinize(max_states * 4, max_states, reduce="minimize")
    # minimal: it is cached and embedded (often in many rules), and every state it keeps is
    # work for the subset construction and minimization of each rule that embeds it
    m = dfa if "_reduced" in dfa.__dict__ else minimize(dfa)
    return m if m is not None else _empty_dfa()


def _special_dfa(expr: Special, max_states: int) -> DFA:
    """A :class:`Special`'s automaton: built directly (trimmed) when its kind can, else from its expansion."""
    build = expr.spec.build
    if build is None:
        return standalone_dfa(expr.expand(), None, max_states)
    # (its building blocks as standalone automata are: minimal up to MINIMIZE_MAX_STATES, past them
    # trimmed -- minimizing one again would cost as much as the first time, for nothing)
    byte_class, trans, final, start, *layers = build(
        expr.args, lambda e: standalone_dfa(e, None, max_states), max_states)
    if trans.shape[0] > max_states:
        raise LimitExceededError(f"{expr.kind} automaton exceeds {max_states} states", limit="max_dfa_states")
    if not final.any():  # (an empty language: not trimmed, so the rule that holds it is unproductive)
        return _empty_dfa()
    out = DFA(np.asarray(byte_class, dtype=np.int32), trans, np.asarray(final, dtype=bool), start=int(start),
              as_built=True)
    if layers:
        out.__dict__["_layers"] = layers[0]
    # Its table's identity for rule digests: this automaton, one per cached Special (equal args
    # build equal tables, and find this one in the standalone cache) -- not a SHA-256 over the table,
    # which a grammar's first mask paid for every built automaton it calls (a counted string bounded
    # by maxLength: 6000 has 120,000 states; 30 ms on a MaskBench schema with dozens of them) -- nor
    # even over the serial: 32 bytes, as long as a digest, are enough. (A rule's DFA in the larger
    # rule cache, rtn._RULE_DFAS, may keep an automaton this cache has dropped: a grammar that builds
    # the rule again gets another identity for the same table -- masks shared less, never wrongly.)
    out.__dict__["_table_digest"] = b"built automaton %016d" % next(_BUILT_SERIALS)
    return out


_BUILT_SERIALS = itertools.count()  # (each built automaton's identity: never reused)


def _classes_merged(dfa: DFA) -> DFA:
    """``dfa`` with the byte classes every state treats alike merged into one (trimmed stays trimmed)."""
    table, group = merge_equal_classes(dfa.trans)
    out = DFA(group[dfa.byte_class].astype(np.int32), table, dfa.final, start=dfa.start)
    if "_trimmed" in dfa.__dict__:
        out.__dict__["_trimmed"] = True
    return out


def _empty_dfa() -> DFA:
    return DFA(np.zeros(256, dtype=np.int32), np.full((1, 1), -1, dtype=np.int32), np.zeros(1, dtype=bool))


def _product(a: DFA, b: DFA, max_states: int) -> DFA:
    byte_class = canonical_classes(a.byte_class.astype(np.int64) * 256 + b.byte_class)
    reps = class_representatives(byte_class)
    ca, cb = a.byte_class[reps].astype(np.int64), b.byte_class[reps].astype(np.int64)
    trans, final = product_table(a.trans, b.trans, a.final.view(np.uint8), b.final.view(np.uint8),
                                 ca, cb, a.start, b.start, max_states)
    if trans.shape[0] == 0:
        raise LimitExceededError(f"intersection automaton exceeds {max_states} states", limit="max_dfa_states")
    out = trim(DFA(byte_class, trans, final.astype(bool)))
    return out if out is not None else _empty_dfa()


def _complement(a: DFA, max_states: int) -> DFA:
    n = a.num_states
    if n + 1 > max_states:
        raise LimitExceededError(f"complement automaton exceeds {max_states} states", limit="max_dfa_states")
    trans = np.full((n + 1, a.num_classes), n, dtype=np.int32)
    trans[:n] = np.where(a.trans >= 0, a.trans, n)
    final = np.concatenate([~a.final, [True]])
    out = trim(DFA(a.byte_class, trans, final, start=a.start))
    return out if out is not None else _empty_dfa()
