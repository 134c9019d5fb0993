"""Byte-level automata: NFA construction from IR, subset construction, products, minimization.

The engine represents every *called* grammar rule as a DFA over bytes plus "call" edges
(one per callee rule). This module builds those DFAs from IR expressions:

* :class:`NFA` — Thompson construction with epsilon edges, byte-set edges (256-bit
  Python ints) and call edges; references to rules that are inlined are expanded in place.
* :func:`determinize` — subset construction; call edges are symbols like bytes.
* :func:`minimize` — Hopcroft partition refinement (finality, byte classes, call symbols).
* ``And``/``Not`` sub-expressions are compiled to standalone call-free DFAs, combined by
  product / complement, and embedded back into the NFA.

Every construction is bounded (``max_states``) and raises :class:`LimitExceededError`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import GrammarError, LimitExceededError
from ..grammar.ir import Alt, And, Bytes, ByteSet, Expr, Not, Ref, Repeat, Seq, iter_refs
from ._automata_kernels import hopcroft_blocks, product_table, trim_order

__all__ = [
    "ALL_BYTES",
    "DFA",
    "NFA",
    "RefResolver",
    "byte_partition",
    "determinize",
    "is_productive",
    "minimize",
    "standalone_dfa",
    "trim",
]

ALL_BYTES = (1 << 256) - 1

# A resolver tells the NFA builder what to do with a rule reference:
#   ("inline", expr)            expand the rule body in place
#   ("call", rule_id, nullable) emit a call edge (plus an epsilon skip if the rule is nullable)
RefResolver = Callable[[str], tuple]


@dataclass
class NFA:
    """A mutable Thompson NFA over bytes with call edges."""

    max_states: int = 200_000
    eps: list[list[int]] = field(default_factory=list)
    edges: list[list[tuple[int, int]]] = field(default_factory=list)  # (byte mask, target)
    calls: list[list[tuple[int, int]]] = field(default_factory=list)  # (rule id, target)

    def new_state(self) -> int:
        n = len(self.eps)
        if n >= self.max_states:
            raise LimitExceededError(
                f"grammar automaton exceeds {self.max_states} NFA states", limit="max_nfa_states"
            )
        self.eps.append([])
        self.edges.append([])
        self.calls.append([])
        return n

    def __len__(self) -> int:
        return len(self.eps)

    # ------------------------------------------------------------------ Thompson construction
    def build(self, expr: Expr, resolve: RefResolver | None, _inlining: tuple[str, ...] = ()) -> tuple[int, int]:
        """Add a fragment for ``expr``; returns ``(start, end)`` states."""
        if isinstance(expr, Bytes):
            s = self.new_state()
            cur = s
            for b in expr.value:
                nxt = self.new_state()
                self.edges[cur].append((1 << b, nxt))
                cur = nxt
            return s, cur
        if isinstance(expr, ByteSet):
            s, e = self.new_state(), self.new_state()
            self.edges[s].append((expr.to_mask(), e))
            return s, e
        if isinstance(expr, Seq):
            s, cur = self.build(expr.items[0], resolve, _inlining)
            for it in expr.items[1:]:
                a, b = self.build(it, resolve, _inlining)
                self.eps[cur].append(a)
                cur = b
            return s, cur
        if isinstance(expr, Alt):
            s, e = self.new_state(), self.new_state()
            for it in expr.items:
                a, b = self.build(it, resolve, _inlining)
                self.eps[s].append(a)
                self.eps[b].append(e)
            return s, e
        if isinstance(expr, Repeat):
            return self._build_repeat(expr, resolve, _inlining)
        if isinstance(expr, Ref):
            if resolve is None:
                raise GrammarError(f"rule reference {expr.name!r} is not allowed here")
            how = resolve(expr.name)
            if how[0] == "inline":
                if expr.name in _inlining:
                    raise GrammarError(f"rule {expr.name!r} is recursive and cannot be inlined")
                return self.build(how[1], resolve, (*_inlining, expr.name))
            _, rule_id, nullable = how
            s, e = self.new_state(), self.new_state()
            self.calls[s].append((rule_id, e))
            if nullable:
                self.eps[s].append(e)
            return s, e
        if isinstance(expr, And | Not):
            dfa = standalone_dfa(expr, resolve, self.max_states, _inlining)
            return self.embed(dfa)
        raise GrammarError(f"unknown IR node {expr!r}")

    def _build_repeat(self, expr: Repeat, resolve: RefResolver | None, inl: tuple[str, ...]) -> tuple[int, int]:
        s = self.new_state()
        cur = s
        for _ in range(expr.min):
            a, b = self.build(expr.item, resolve, inl)
            self.eps[cur].append(a)
            cur = b
        if expr.max is None:
            loop = self.new_state()
            self.eps[cur].append(loop)
            a, b = self.build(expr.item, resolve, inl)
            self.eps[loop].append(a)
            self.eps[b].append(loop)
            return s, loop
        end = self.new_state()
        for _ in range(expr.max - expr.min):
            a, b = self.build(expr.item, resolve, inl)
            self.eps[cur].append(a)
            self.eps[cur].append(end)
            cur = b
        self.eps[cur].append(end)
        return s, end

    def embed(self, dfa: DFA) -> tuple[int, int]:
        """Copy a call-free DFA into this NFA as a fragment."""
        base = len(self.eps)
        for _ in range(dfa.num_states):
            self.new_state()
        end = self.new_state()
        for i in range(dfa.num_states):
            for mask, t in dfa.edge_masks(i):
                self.edges[base + i].append((mask, base + t))
            if dfa.final[i]:
                self.eps[base + i].append(end)
        return base + dfa.start, end

    # ------------------------------------------------------------------ closure
    def closure(self, states: frozenset[int] | set[int]) -> frozenset[int]:
        stack = list(states)
        seen = set(states)
        eps = self.eps
        while stack:
            for t in eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)


def byte_partition(masks: list[int] | set[int]) -> list[int]:
    """Coarsest partition of the 256 bytes that refines every mask; returns the class masks."""
    classes = [ALL_BYTES]
    for m in set(masks):
        if m == ALL_BYTES or m == 0:
            continue
        nxt = []
        for c in classes:
            a = c & m
            if a and a != c:
                nxt.append(a)
                nxt.append(c & ~m)
            else:
                nxt.append(c)
        classes = nxt
    return classes


@dataclass
class DFA:
    """A DFA over byte classes with call edges.

    ``classes`` are disjoint byte masks covering all 256 bytes; ``trans[s][c]`` is the
    target of class ``c`` from state ``s`` or -1; ``calls[s]`` maps callee rule id to
    target; ``final[s]`` marks accepting states.
    """

    classes: list[int]
    trans: list[list[int]]
    final: list[bool]
    calls: list[dict[int, int]]
    start: int = 0

    @property
    def num_states(self) -> int:
        return len(self.trans)

    def edge_masks(self, s: int) -> list[tuple[int, int]]:
        """Outgoing byte edges of ``s`` as (mask, target), classes with the same target merged."""
        by_target: dict[int, int] = {}
        for c, t in enumerate(self.trans[s]):
            if t >= 0:
                by_target[t] = by_target.get(t, 0) | self.classes[c]
        return [(m, t) for t, m in by_target.items()]

    def accepts(self, data: bytes) -> bool:
        """Membership for call-free DFAs (tests and debugging)."""
        s = self.start
        for b in data:
            c = self.class_of(b)
            s = self.trans[s][c]
            if s < 0:
                return False
        return self.final[s]

    def class_of(self, byte: int) -> int:
        bit = 1 << byte
        for i, m in enumerate(self.classes):
            if m & bit:
                return i
        raise AssertionError("classes do not cover all bytes")


def determinize(nfa: NFA, start: int, end: int, max_states: int = 100_000) -> DFA:
    """Subset construction; NFA state ``end`` is the only accepting state."""
    masks = {m for es in nfa.edges for m, _ in es}
    classes = byte_partition(masks)
    # For each distinct mask, the list of class indices it covers.
    cover: dict[int, list[int]] = {}
    for m in masks:
        cover[m] = [i for i, c in enumerate(classes) if c & m]
    ncls = len(classes)
    # DFA states are sets of *important* NFA states (with byte or call edges, or ``end``):
    # the epsilon-only states in a closure never change what happens next.
    edges, ncalls = nfa.edges, nfa.calls
    single: dict[int, frozenset[int]] = {}

    def closure_of(q: int) -> frozenset[int]:
        c = single.get(q)
        if c is None:
            c = frozenset(x for x in nfa.closure((q,)) if edges[x] or ncalls[x] or x == end)
            single[q] = c
        return c

    def closure(states: set[int]) -> frozenset[int]:
        if len(states) == 1:
            return closure_of(next(iter(states)))
        out: set[int] = set()
        for q in states:
            out |= closure_of(q)
        return frozenset(out)

    s0 = closure({start})
    ids: dict[frozenset[int], int] = {s0: 0}
    order = [s0]
    trans: list[list[int]] = []
    final: list[bool] = []
    calls: list[dict[int, int]] = []

    def intern(states: set[int]) -> int:
        T = closure(states)
        j = ids.get(T)
        if j is None:
            j = len(order)
            if j >= max_states:
                raise LimitExceededError(f"grammar automaton exceeds {max_states} DFA states", limit="max_dfa_states")
            ids[T] = j
            order.append(T)
        return j

    i = 0
    while i < len(order):
        S = order[i]
        i += 1
        per_class: list[set[int] | None] = [None] * ncls
        per_call: dict[int, set[int]] = {}
        for q in S:
            for m, t in edges[q]:
                for c in cover[m]:
                    tgt = per_class[c]
                    if tgt is None:
                        per_class[c] = {t}
                    else:
                        tgt.add(t)
            for r, t in ncalls[q]:
                per_call.setdefault(r, set()).add(t)
        row = [-1] * ncls
        for c in range(ncls):
            tgt = per_class[c]
            if tgt:
                row[c] = intern(tgt)
        crow = {r: intern(per_call[r]) for r in sorted(per_call)}
        trans.append(row)
        final.append(end in S)
        calls.append(crow)
    return DFA(classes, trans, final, calls, 0)


def minimize(dfa: DFA) -> DFA:
    """Merge equivalent states (Hopcroft refinement), numbered breadth-first from the start.

    Assumes ``dfa`` comes from :func:`trim` (every state live and reachable, numbered
    breadth-first; missing transitions all mean the same thing: reject).
    """
    n = dfa.num_states
    block = np.asarray(_refine_blocks(dfa.trans, dfa.calls, dfa.final), dtype=np.int32)
    nb = int(block.max()) + 1 if n else 0
    if nb == n:
        return dfa  # already minimal, and trim's numbering is the canonical one
    rep = np.full(nb, -1, dtype=np.int64)
    rep[block[::-1]] = np.arange(n - 1, -1, -1)  # first state of each block
    table = np.asarray(dfa.trans, dtype=np.int32).reshape(n, len(dfa.classes))[rep]
    q_trans = np.where(table >= 0, block[np.maximum(table, 0)], -1).tolist()
    reps = rep.tolist()
    q_calls = [{r: int(block[t]) for r, t in dfa.calls[s].items()} for s in reps]
    q_final = [dfa.final[s] for s in reps]
    out = trim(DFA(dfa.classes, q_trans, q_final, q_calls, int(block[dfa.start])))  # renumbers canonically
    assert out is not None, "a quotient of a trimmed DFA is live"
    return out


def _refine_blocks(trans: list[list[int]], calls: list[dict[int, int]], final: list[bool]) -> list[int]:
    """Block id per state; equivalent states (same finality, same behaviour on every byte class
    and every call) share one. Hopcroft's algorithm with call edges as extra symbols."""
    n = len(trans)
    if n == 0:
        return []
    callees = sorted({r for c in calls for r in c})
    col = {r: i for i, r in enumerate(callees)}
    delta = np.full((n, len(trans[0]) + len(callees)), -1, dtype=np.int32)
    delta[:, : len(trans[0])] = np.asarray(trans, dtype=np.int32).reshape(n, -1)
    base = len(trans[0])
    for s, cs in enumerate(calls):
        for r, tgt in cs.items():
            delta[s, base + col[r]] = tgt
    return hopcroft_blocks(delta, np.asarray(final, dtype=np.uint8)).tolist()


def is_productive(dfa: DFA, productive_calls: Callable[[int], bool] = lambda r: True) -> bool:
    """Does ``dfa`` accept any string (calls of unproductive rules count as dead edges)?"""
    seen = {dfa.start}
    stack = [dfa.start]
    while stack:
        s = stack.pop()
        if dfa.final[s]:
            return True
        for t in dfa.trans[s]:
            if t >= 0 and t not in seen:
                seen.add(t)
                stack.append(t)
        for r, t in dfa.calls[s].items():
            if t not in seen and productive_calls(r):
                seen.add(t)
                stack.append(t)
    return False


def trim(dfa: DFA, productive_calls: Callable[[int], bool] = lambda r: True) -> DFA | None:
    """Remove states that cannot reach a final state (and edges to them).

    ``productive_calls(r)`` says whether callee rule ``r`` can derive any string; call
    edges to unproductive rules are dropped. Returns None if the start state is dead.
    States are renumbered in breadth-first order from the start (unreachable ones dropped).
    """
    n = dfa.num_states
    table = np.asarray(dfa.trans, dtype=np.int32).reshape(n, len(dfa.classes))
    call_ptr = np.zeros(n + 1, dtype=np.int64)
    call_dst: list[int] = []
    kept_calls: list[list[tuple[int, int]]] = []
    for s, cm in enumerate(dfa.calls):
        kept = [(r, t) for r, t in sorted(cm.items()) if productive_calls(r)]
        kept_calls.append(kept)
        call_dst.extend(t for _, t in kept)
        call_ptr[s + 1] = len(call_dst)
    order, index = trim_order(table, np.asarray(dfa.final, dtype=np.uint8), call_ptr,
                              np.asarray(call_dst, dtype=np.int32), dfa.start)
    if order.shape[0] == 0:
        return None
    sub = table[order]
    trans = np.where(sub >= 0, index[np.maximum(sub, 0)], -1).tolist()
    calls = [{r: int(index[t]) for r, t in kept_calls[s] if index[t] >= 0} for s in order.tolist()]
    return DFA(dfa.classes, trans, [dfa.final[s] for s in order.tolist()], calls, 0)


# ---------------------------------------------------------------------- And / Not


_STANDALONE_CACHE: OrderedDict[tuple[Expr, int], DFA] = OrderedDict()
_STANDALONE_CACHE_SIZE = 512
_STANDALONE_LOCK = threading.Lock()


def standalone_dfa(
    expr: Expr, resolve: RefResolver | None, max_states: int, inlining: tuple[str, ...] = ()
) -> DFA:
    """A call-free, trimmed DFA for a regular expression (used for And/Not operands).

    Expressions without rule references are cached process-wide (DFAs are never mutated), so
    grammars that share e.g. a hostname or email format pay for its product automaton once.
    """
    if isinstance(expr, And | Not) and next(iter_refs(expr), None) is None:
        key = (expr, max_states)
        with _STANDALONE_LOCK:
            hit = _STANDALONE_CACHE.get(key)
            if hit is not None:
                _STANDALONE_CACHE.move_to_end(key)
                return hit
        dfa = _standalone_dfa(expr, resolve, max_states, inlining)
        with _STANDALONE_LOCK:
            _STANDALONE_CACHE[key] = dfa
            if len(_STANDALONE_CACHE) > _STANDALONE_CACHE_SIZE:
                _STANDALONE_CACHE.popitem(last=False)
        return dfa
    return _standalone_dfa(expr, resolve, max_states, inlining)


def _standalone_dfa(
    expr: Expr, resolve: RefResolver | None, max_states: int, inlining: tuple[str, ...] = ()
) -> DFA:
    if isinstance(expr, And):
        dfas = [standalone_dfa(it, resolve, max_states, inlining) for it in expr.items]
        out = dfas[0]
        for d in dfas[1:]:
            out = _product(out, d, max_states)
        return out
    if isinstance(expr, Not):
        return _complement(standalone_dfa(expr.item, resolve, max_states, inlining), max_states)

    def regular_only(name: str) -> tuple:
        how = resolve(name) if resolve is not None else ("call",)
        if how[0] != "inline":
            raise GrammarError(
                f"rule {name!r} is used inside an intersection or complement but is not regular "
                "(it is recursive); And/Not operands must be regular"
            )
        return how

    nfa = NFA(max_states=max_states * 4)
    s, e = nfa.build(expr, regular_only, inlining)
    dfa = determinize(nfa, s, e, max_states)
    t = trim(dfa)
    if t is None:
        return _empty_dfa()
    return t


def _empty_dfa() -> DFA:
    return DFA([ALL_BYTES], [[-1]], [False], [{}], 0)


def _product(a: DFA, b: DFA, max_states: int) -> DFA:
    classes = byte_partition(a.classes + b.classes)
    ca = np.array([next(i for i, m in enumerate(a.classes) if m & c) for c in classes], dtype=np.int64)
    cb = np.array([next(i for i, m in enumerate(b.classes) if m & c) for c in classes], dtype=np.int64)
    ta = np.asarray(a.trans, dtype=np.int32).reshape(a.num_states, len(a.classes))
    tb = np.asarray(b.trans, dtype=np.int32).reshape(b.num_states, len(b.classes))
    trans, final = product_table(ta, tb, np.asarray(a.final, dtype=np.uint8), np.asarray(b.final, dtype=np.uint8),
                                 ca, cb, a.start, b.start, max_states)
    if trans.shape[0] == 0:
        raise LimitExceededError(f"intersection automaton exceeds {max_states} states", limit="max_dfa_states")
    out = trim(DFA(classes, trans.tolist(), final.astype(bool).tolist(), [{} for _ in range(trans.shape[0])], 0))
    return out if out is not None else _empty_dfa()


def _complement(a: DFA, max_states: int) -> DFA:
    n = a.num_states
    if n + 1 > max_states:
        raise LimitExceededError(f"complement automaton exceeds {max_states} states", limit="max_dfa_states")
    sink = n
    trans = [[(t if t >= 0 else sink) for t in row] for row in a.trans]
    trans.append([sink] * len(a.classes))
    final = [not f for f in a.final] + [True]
    out = trim(DFA(list(a.classes), trans, final, [{} for _ in trans], a.start))
    return out if out is not None else _empty_dfa()
