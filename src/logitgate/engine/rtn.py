"""Compile a grammar into a recursive transition network (RTN) of byte-level DFAs.

Each *called* rule becomes a minimized DFA whose edges are byte classes or calls of
other called rules; every other rule is inlined into its callers. The result is a
set of flat numpy arrays that the numba kernels in :mod:`._walk` step through:

* ``trans[state * num_classes + cls]`` → next state or -1
* ``final[state]`` → the state's rule may end here (pop)
* call *chains* per state: the ways a byte can be consumed by first entering one or
  more rules (left corners), each a target start state plus the return states pushed
  (a return state that could only pop is not pushed: tail calls keep the stack flat).

A parser configuration is a set of stacks; a stack is a top state plus a parent frame
(see :mod:`._walk`). Left recursion has no finite chain set and is reported as a
:class:`GrammarError` naming the rules (llama.cpp rejects it too).

Inlining policy: the root and recursive rules are called -- except a recursive rule read in
one place only, which is built into the rule that reads it (:func:`_folded_recursive`); a
non-recursive rule is called when it is referenced more than once and is large, or is a
"lexeme-like" rule whose states see most of the vocabulary (its per-state masks are then shared
between every place — and every grammar — that uses it), or is read once but is large
and lexeme-like (a string with a format or pattern automaton: its DFA and masks come
from the process-wide caches). A rule only ever read last by its callers is merged into
their automaton instead (:func:`_tail_merges`). Everything else is inlined -- but a rule that is
a large automaton built directly (:func:`_large_built`: a string counted to thousands of
characters), which is always called: written into another rule's automaton, it would make the
subset construction and minimization walk its states again.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import GrammarError, LimitExceededError
from ..grammar.graphs import strongly_connected_components
from ..grammar.ir import Alt, And, Bytes, ByteSet, Expr, Grammar, Not, Ref, Repeat, Seq, Special, memo
from ._automata_kernels import LEFT_RECURSIVE, TOO_MANY_CHAINS, assemble_packed
from ._walk import ends_within
from .automata import DFA, MINIMIZE_MAX_STATES, Program, is_productive, minimize, standalone_dfa, trim
from .lru import LRU

__all__ = ["RTN", "CompileLimits", "compile_rtn"]


@dataclass(frozen=True)
class CompileLimits:
    """Size limits for grammar compilation (nothing may grow without bound)."""

    max_nfa_states: int = 400_000
    max_dfa_states: int = 200_000
    max_chains: int = 200_000
    #: inline non-recursive rules whose estimated size is at most this
    inline_max_size: int = 48
    #: a rule with a repetition over at least this many byte values is "lexeme-like"
    lexeme_min_bytes: int = 64
    #: rules read last by their callers are merged into one automaton, at most this many per host
    #: (beyond, they stay called: a huge object's keys would otherwise meet in every state set)
    merge_max_rules: int = 64


@dataclass
class RTN:
    """Flat arrays of a compiled grammar; see the module docstring."""

    rule_names: list[str]
    rule_start: np.ndarray  # int32[num_rules]
    rule_of_state: np.ndarray  # int32[num_states]
    local_index: np.ndarray  # int32[num_states]: index of the state inside its rule's DFA
    #: the arrays a parser step and a trie walk read, as three (:func:`._walk.advance_packed`,
    #: :func:`._walk.walk_trie_packed`; every array argument costs a kernel call time to pass, on
    #: every token): the transition table, ``final``, ``simple`` and ``dead_end`` as the rows of one
    #: uint8 array, and the byte classes and call chains end to end in one int32 array after a header
    #: of where each starts (and the class count; :func:`.._arrays.end_to_end`'s layout). The
    #: assembly kernel lays them out so; the named arrays below are views of them.
    step_pack: tuple[np.ndarray, np.ndarray, np.ndarray]
    stats: dict = field(default_factory=dict)
    #: per rule index, ``(m, count, lo, hi)`` when its states are layers of a counted repetition
    #: (a counted string: see :meth:`mask_representative`), with two more items, the first and last
    #: layer of each layer's run, for a counted string that matches a pattern
    #: (:mod:`logitgate.grammar.json_schema.pattern_lengths`)
    layers: dict = field(default_factory=dict)
    #: the rule names and DFAs the digests (:attr:`rule_hash`) are made of, until they are made
    digest_input: tuple[list[str], list[DFA]] | None = field(default=None, repr=False)
    # the step arrays, and views of them (made by ``__post_init__``)
    trans: np.ndarray = field(init=False, repr=False)  # int32[num_states * num_classes]
    final: np.ndarray = field(init=False, repr=False)  # uint8[num_states]: the rule may end here (pop)
    simple: np.ndarray = field(init=False, repr=False)  # uint8[num_states]: no call chains and not final
    dead_end: np.ndarray = field(init=False, repr=False)  # uint8[num_states]: final, no byte to consume
    byte_class: np.ndarray = field(init=False, repr=False)  # int32[256]: classes numbered by lowest byte
    num_classes: int = field(init=False, repr=False)
    chain_ptr: np.ndarray = field(init=False, repr=False)  # int32[num_states + 1]
    chain_target: np.ndarray = field(init=False, repr=False)  # int32[num_chains]: the start a chain enters
    chain_push_ptr: np.ndarray = field(init=False, repr=False)  # int32[num_chains + 1]
    chain_push: np.ndarray = field(init=False, repr=False)  # return states pushed, outermost first

    def __post_init__(self) -> None:
        self.trans, flags, pack = self.step_pack
        self.final, self.simple, self.dead_end = flags
        (self.byte_class, self.chain_ptr, self.chain_target, self.chain_push_ptr, self.chain_push) = (
            pack[pack[k]:pack[k + 1]] for k in range(5))
        self.num_classes = int(pack[6])

    @property
    def rule_hash(self) -> list[str | None]:
        """Per rule: digest of its DFA and everything it calls, None for the grammar's own rules
        (:func:`_rule_hashes`).

        Made when first asked for -- at a grammar's first mask, which looks states up in the mask
        store by them -- not by the compile, which does not need them."""
        hashes = self.__dict__.get("_rule_hash")
        if hashes is None:
            with _DIGEST_LOCK:  # (made once: the digest caches are shared between grammars)
                hashes = self.__dict__.get("_rule_hash")
                if hashes is None:
                    assert self.digest_input is not None
                    hashes = self.__dict__["_rule_hash"] = _rule_hashes(*self.digest_input)
                    self.digest_input = None  # (the rule DFAs: no longer needed here)
        return hashes

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def class_masks(self) -> list[int]:
        """Byte mask (a 256-bit int) of each class."""
        cached = self.__dict__.get("_class_masks")
        if cached is None:
            cached = self.__dict__["_class_masks"] = [
                int.from_bytes(np.packbits(self.byte_class == c, bitorder="little").tobytes(), "little")
                for c in range(self.num_classes)]
        return cached

    @property
    def root_start(self) -> int:
        return int(self.rule_start[0])

    def mask_representative(self, state: int, horizon: int) -> int:
        """A state that accepts exactly the same strings of at most ``horizon`` bytes as ``state``
        (``state`` itself unless it is in a layered rule).

        In a counted repetition of ``lo..hi`` items, layer ``k`` (``k`` items read) differs from
        another only in how many items remain before ``lo`` is reached and before ``hi`` is: no
        string of ``horizon`` bytes reads more than ``horizon`` items, so layers with both counts
        beyond ``horizon`` behave alike on tokens (a token has at most ``horizon`` bytes, the
        tokenizer's longest) -- those before ``lo`` like layer 0, those from ``lo`` like layer ``lo``.
        Their masks, and the walks that resolve a token's exit against the stack below, are then
        one: a string bounded by ``maxLength: 1000`` computes the mask of each character state
        once, not once per character read.
        """
        rule = int(self.rule_of_state[state])
        lay = self.layers.get(rule)
        if lay is None:
            return state
        m, count, lo, hi = lay[:4]
        local = int(self.local_index[state])
        k, q = divmod(local, m)
        if k >= count:
            return state
        if len(lay) > 4:  # (layers of a pattern: alike within a run, see .pattern_lengths)
            run_start, run_end = lay[4], lay[5]
            return state - local + int(run_start[k]) * m + q if k + horizon <= run_end[k] else state
        far = hi is None or hi - k > horizon  # (no token reaches hi from here)
        if far and k + horizon < lo:
            k = 0
        elif far and k >= lo:
            k = lo
        else:
            return state
        return state - local + k * m + q

    def frame_representative(self, state: int, horizon: int) -> int:
        """A state that, as a suspended caller's return state, takes exactly the same strings of at
        most ``horizon`` bytes as ``state`` does.

        A token that pops into such a frame goes on by its transitions, through its call chains, or
        pops further if it is final. States alike in all three are alike as frames -- but a chain
        whose innermost rule cannot end within ``horizon`` bytes never returns within a token, so
        what it pushes does not matter. The states after ``k`` chunks of a counted string all read
        the last part or call the next chunk (512 characters), alike but for where that chunk
        returns: a token across a chunk's end is resolved once for them all
        (:meth:`logitgate.engine.compiler.CompiledGrammar.context_tokens`), not once per chunk
        (15-40 ms each on Llama-3).
        """
        ptr, push_ptr, push = self.chain_ptr, self.chain_push_ptr, self.chain_push
        chains = []
        far = False  # (a chain no token returns from: only then can another state be alike)
        for j in range(int(ptr[state]), int(ptr[state + 1])):
            target = int(self.chain_target[j])
            if self._ends_within(target, horizon):
                chains.append((target, tuple(push[push_ptr[j]:push_ptr[j + 1]].tolist())))
            else:  # (nothing it pushes is reached: so for every chain into that rule)
                chains.append((target, ()))
                far = True
        if not far:
            return state
        ncls = self.num_classes
        row = self.trans[state * ncls:(state + 1) * ncls].tolist()
        moves = tuple((c, t) for c, t in enumerate(row) if t >= 0)
        signature = (bool(self.final[state]), horizon, moves, tuple(sorted(chains)))
        reps = self.__dict__.setdefault("_frame_reps", {})
        return reps.setdefault(signature, state)

    def _ends_within(self, target: int, horizon: int) -> bool:
        """Whether the rule ``target`` starts may end within ``horizon`` bytes (remembered)."""
        memo = self.__dict__.setdefault("_ends_memo", {})
        key = (target, horizon)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = bool(ends_within(target, horizon, self.trans, self.num_classes, self.final,
                                               self.chain_ptr, self.chain_push_ptr, self.chain_push))
        return hit

    def counted_chars_left(self, state: int) -> int:
        """How many more characters a counted JSON string may read from ``state``, when ``state`` is
        a character boundary of one (``k`` read of at most ``hi``: ``hi - k``) whose rule reads the
        closing quote itself; -1 otherwise (no layered rule, inside a character or an escape, no
        upper bound, or a rule that may end after a character -- a chunk: a caller may read more).

        From such a state a token of string characters only is accepted exactly when it has at most
        that many (:meth:`logitgate.engine.slices.SliceSet.strings_up_to`): the layers accept any
        character, and after the last one only the quote."""
        rule = int(self.rule_of_state[state])
        lay = self.layers.get(rule)
        if lay is None:
            return -1
        m, _count, _lo, hi = lay[:4]
        if hi is None or len(lay) > 4:  # (a pattern's layers do not take every character)
            return -1
        local = int(self.local_index[state])
        k, q = divmod(local, m)
        if q or k > hi or self.final[state - local + hi * m]:  # ("hi read" final: no quote in the rule)
            return -1
        return hi - k

    def state_key(self, state: int) -> tuple[str, int] | None:
        """Grammar-independent identity of a state: equal keys => equal behaviour as a stack top;
        None for a state of the grammar's own rules (its root and the rules in a cycle with it,
        see :func:`_rule_hashes`), whose masks are not shared."""
        digest = self.rule_hash[self.rule_of_state.item(state)]
        return None if digest is None else (digest, self.local_index.item(state))


# ---------------------------------------------------------------------------- IR analysis


def _nullable_map(rules: dict[str, Expr], sccs: list[list[str]]) -> dict[str, bool]:
    """Which rules derive the empty string; ``sccs`` lists the rules callees first, so a fixpoint
    is iterated only inside recursive components."""
    nullable = dict.fromkeys(rules, False)
    for comp in sccs:
        changed = True
        while changed:
            changed = False
            for name in comp:
                if not nullable[name] and _nullable(rules[name], nullable):
                    nullable[name] = True
                    changed = len(comp) > 1  # (one rule alone reaches its fixpoint at once)
    return nullable


def _nullable(e: Expr, nullable: dict[str, bool]) -> bool:
    """Does ``e`` derive the empty string (rule ``r`` does if ``nullable[r]``)?

    (A function of its own, not a closure: a closure calling itself is a reference cycle, and
    would keep everything it sees alive until the cyclic collector runs.)"""
    t = type(e)
    if t is Bytes:
        return not e.value  # type: ignore[attr-defined]
    if t is ByteSet:
        return False
    if t is not Ref and t is not Special and e._ref_free:  # type: ignore[attr-defined]
        # (reference-free parts -- string bodies, numbers -- are shared: decided once, on the node)
        m = memo(e)  # type: ignore[arg-type]
        v = m.nullable
        if v < 0:
            v = m.nullable = int(_nullable_of(e, t, nullable))
        return bool(v)
    return _nullable_of(e, t, nullable)


def _nullable_of(e: Expr, t: type, nullable: dict[str, bool]) -> bool:
    if t is Seq or t is And:
        return all(_nullable(x, nullable) for x in e.items)  # type: ignore[attr-defined]
    if t is Alt:
        return any(_nullable(x, nullable) for x in e.items)  # type: ignore[attr-defined]
    if t is Repeat:
        return e.min == 0 or _nullable(e.item, nullable)  # type: ignore[attr-defined]
    if t is Ref:
        return nullable[e.name]  # type: ignore[attr-defined]
    if t is Not:
        return not _nullable(e.item, nullable)  # type: ignore[attr-defined]
    if t is Special:
        return e.nullable  # type: ignore[attr-defined]
    raise GrammarError(f"unknown IR node {e!r}")


def _sccs(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    return strongly_connected_components(graph)


def _size(e: Expr, ref_size: dict[str, int], cap: int, depth: int = 0) -> int:
    """Rough NFA-state estimate of an expression, a reference counting ``ref_size[name]`` (2 if absent).

    Exact up to ``cap``; beyond it, some value above ``cap`` (the walk stops early).
    """
    if depth > 200:
        return cap + 1
    t = type(e)
    if t is Bytes:
        return len(e.value) + 1
    if t is ByteSet:
        return 2
    if t is not Ref and t is not Special and e._ref_free:  # type: ignore[attr-defined]
        # (reference-free parts -- string bodies, numbers -- are shared: measured once, on the node)
        m = memo(e)  # type: ignore[arg-type]
        n = m.size
        if n < 0:
            n = m.size = min(_measure(e, t, ref_size, _MEASURED, depth), _MEASURED + 1)
        if n <= _MEASURED or cap <= _MEASURED:
            return n
    return _measure(e, t, ref_size, cap, depth)


_MEASURED = 4096  # reference-free sizes remembered exactly up to this


def _measure(e: Expr, t: type, ref_size: dict[str, int], cap: int, depth: int) -> int:
    if t is Seq or t is Alt or t is And:
        total = 2
        for x in e.items:  # type: ignore[attr-defined]
            total += _size(x, ref_size, cap, depth + 1)
            if total > cap:
                return total
        return total
    if t is Repeat:
        copies = max(e.min, 1) if e.max is None else max(e.max, 1)  # type: ignore[attr-defined]
        return min(copies * _size(e.item, ref_size, cap, depth + 1) + 2, cap + 1)  # type: ignore[attr-defined]
    if t is Not:
        return _size(e.item, ref_size, cap, depth + 1) + 2  # type: ignore[attr-defined]
    if t is Ref:
        return ref_size.get(e.name, 2)  # type: ignore[attr-defined]
    if t is Special:  # built as an automaton of its own: count it as large
        return cap + 1
    return 1


def _is_lexeme_like(e: Expr, min_bytes: int) -> bool:
    """True if ``e`` repeats (unboundedly or widely) over a large set of bytes, e.g. string bodies
    (the walk does not follow references).

    The answer is remembered on ``e`` -- a rule's body: a library rule's is the same node in every
    grammar -- and on every reference-free subtree met in the walk (a number, a string body,
    shared by many rules)."""
    t = type(e)
    if not (t is Seq or t is Alt or t is And or t is Repeat or t is Not):
        return _lexeme_walk(e, min_bytes, True)
    m = memo(e)  # type: ignore[arg-type]
    v = m.lexeme
    if v < 0 or v >> 1 != min_bytes:
        v = m.lexeme = 2 * min_bytes + _lexeme_walk(e, min_bytes, not e._ref_free)  # type: ignore[attr-defined]
    return bool(v & 1)


def _lexeme_walk(e: Expr, min_bytes: int, remember: bool) -> bool:
    """:func:`_is_lexeme_like` of ``e``, the answers for reference-free subtrees remembered on them
    (``remember``: read and written; else not used)."""
    stack = [e]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        x = pop()
        t = type(x)
        composite = t is Seq or t is Alt or t is And or t is Repeat or t is Not
        if remember and composite and x._ref_free:  # type: ignore[attr-defined]
            m = memo(x)  # type: ignore[arg-type]
            v = m.lexeme
            if v < 0 or v >> 1 != min_bytes:
                v = m.lexeme = 2 * min_bytes + _lexeme_walk(x, min_bytes, False)
            if v & 1:
                return True
            continue
        if t is Seq or t is Alt or t is And:
            extend(x.items)  # type: ignore[attr-defined]
        elif t is Repeat:
            if (x.max is None or x.max >= 16) and _width(x.item) >= min_bytes:  # type: ignore[attr-defined]
                return True
            push(x.item)  # type: ignore[attr-defined]
        elif t is Not:
            push(x.item)  # type: ignore[attr-defined]
        elif t is Special and x.spec.lexeme_like:  # type: ignore[attr-defined]
            return True
    return False


def _width(e: Expr) -> int:
    """Number of distinct first bytes an expression can start with (approximation, at most 256)."""
    t = type(e)
    if t is ByteSet:
        return e.to_mask().bit_count()  # type: ignore[attr-defined]
    if t is Bytes:
        return 1 if e.value else 0  # type: ignore[attr-defined]
    if t is Alt:
        n = 0
        for x in e.items:  # type: ignore[attr-defined]
            n += _width(x)
            if n >= 256:
                return 256
        return n
    if t is Seq:
        return _width(e.items[0]) if e.items else 0  # type: ignore[attr-defined]
    if t is Repeat:
        return _width(e.item)  # type: ignore[attr-defined]
    return 0


def _folded_recursive(recursive: set[str], root: str, refs: dict[str, list[str]], refcount: dict[str, int]) -> set[str]:
    """The recursive rules built into the rule that refers to them rather than called: those
    read in one place only (not the root; one used inside an ``And``/``Not`` operand is refused
    whether folded or not, see :func:`compile_rtn`).

    No cycle is left without a call: a cycle of such rules would be entered only from inside
    itself (each member's one reference is its predecessor's), so it would not be reachable from
    the root. A tree of objects -- a node, its members, the array of its children, a node -- is
    then one automaton calling itself, not two calling each other.
    """
    return {r for r in recursive if r != root and refcount[r] == 1 and r not in refs[r]}


def _tail_refs(e: Expr, out: list[str]) -> list[str]:
    """Append the rules ``e`` references last (nothing of ``e`` can follow them), with repeats."""
    t = type(e)
    if t is Ref:
        out.append(e.name)  # type: ignore[attr-defined]
    elif t is Seq:
        if e.items:  # type: ignore[attr-defined]
            _tail_refs(e.items[-1], out)  # type: ignore[attr-defined]
    elif t is Alt:
        for x in e.items:  # type: ignore[attr-defined]
            _tail_refs(x, out)
    return out


def _tails_of(body: Expr) -> tuple[str, ...]:
    """:func:`_tail_refs` of a rule's whole body (remembered on a composite one: library rules'
    bodies are the same nodes in every grammar)."""
    if not isinstance(body, Seq | Alt):
        return tuple(_tail_refs(body, []))
    m = memo(body)
    if m.tails is None:
        m.tails = tuple(_tail_refs(body, []))
    return m.tails


def _candidate_order(sccs: list[list[str]], refs: dict[str, list[str]], candidates: set[str]) -> list[list[str]]:
    """The components of the graph of ``candidates`` (edges: ``refs`` between candidates), callers
    first, from the whole graph's components ``sccs`` (callees first): a component of that graph
    lies inside one of the whole graph's, and only one holding two candidates or more needs a
    search of its own."""
    order: list[list[str]] = []
    for comp in reversed(sccs):
        inside = [t for t in comp if t in candidates]
        if len(inside) <= 1:
            if inside:
                order.append(inside)
            continue
        members = set(inside)
        order.extend(reversed(_sccs({t: [r for r in refs[t] if r in members] for t in inside})))
    return order


#: a rule whose body is an automaton built directly (a :class:`Special`'s) of more states than this
#: is called wherever it is read (:func:`_large_built`)
BUILT_CALL_MIN_STATES = 512


def _large_built(body: Expr, max_states: int) -> bool:
    """Whether ``body`` is an automaton built directly of more than :data:`BUILT_CALL_MIN_STATES`
    states (built here if not yet: the process-wide cache keeps it for the rule's own build).

    Such a rule is called even where it is read once or last: ``{"anyOf": [{"type": "string",
    "maxLength": 4096}, {"type": "null"}]}`` merged into one automaton made the subset construction
    walk the string's 82,000 states and minimize them (~130 ms); called, the alternation is the
    string's rule or ``null`` (~1 ms, the string's automaton as built)."""
    if type(body) is not Special or body.spec.build is None:  # type: ignore[attr-defined]
        return False
    return standalone_dfa(body, None, max_states).num_states > BUILT_CALL_MIN_STATES


def _tail_merges(rules: dict[str, Expr], refs: dict[str, list[str]], all_refs: Mapping[str, tuple[str, ...]],
                 refcount: dict[str, int], root: str, called_set: set[str], unmerged: set[str],
                 max_rules: int, sccs: list[list[str]]) -> dict[str, str]:
    """The rules to build inside another rule's automaton, each with that rule (its host).

    A rule every reference of which is a *tail* reference (the last thing its caller reads) ends
    where its callers end; when all those callers belong to one host -- are the host, are merged
    into it, or are inlined rules whose own references are such -- the rule is written once into
    the host's program, which jumps to it (``goto``), instead of being called: one automaton for
    an object and the rules of what may follow each member, where a call per member position
    would build, digest and walk each separately; a small rule read in several places is written
    once rather than inlined in each. A host that is an inlined rule becomes a called
    one (it is inlined where it is not read last). A host takes at most ``max_rules`` rules; a
    rule beyond that stays called and hosts the rules it reads last itself. The ``unmerged`` rules
    are never merged: those used inside an ``And``/``Not`` operand (closed under reference;
    operands are built as plain regular expressions) and large built automata (called, see
    :func:`_large_built`). ``sccs`` are the grammar's components, callees first.
    """
    referrers: dict[str, list[str]] = {}
    for n, rs in refs.items():
        for r in rs:
            referrers.setdefault(r, []).append(n)
    tails: dict[str, tuple[str, ...]] = {}
    candidates: set[str] = set()
    for t, ps in referrers.items():
        if t == root or t in unmerged:
            continue
        ok = True
        for p in ps:
            if p not in tails:
                tails[p] = _tails_of(rules[p])
            if tails[p].count(t) != all_refs[p].count(t):
                ok = False
                break
        if ok:
            candidates.add(t)
    if not candidates & called_set:
        return {}
    # callers first, a cycle of candidates (tail references going round: a loop) as one
    host: dict[str, str] = {}
    taken: dict[str, int] = {}  # rules merged into each host so far
    for comp in _candidate_order(sccs, refs, candidates):
        members = set(comp)
        outside = {host.get(p, p) for t in comp for p in referrers[t] if p not in members}
        one = outside.pop() if len(outside) == 1 else None
        if one is not None:
            if taken.get(one, 0) + len(comp) > max_rules:
                one = None
            else:
                taken[one] = taken.get(one, 0) + len(comp)
        for t in comp:
            host[t] = one or t
    # (a rule read once is inlined: one copy either way)
    return {t: h for t, h in host.items() if h != t and (t in called_set or refcount[t] > 1)}


# ---------------------------------------------------------------------------- compile


def compile_rtn(grammar: Grammar, limits: CompileLimits | None = None, *, fold_recursive: bool = True) -> RTN:
    """Compile ``grammar`` into an :class:`RTN` (see module docstring). ``fold_recursive=False``
    calls every recursive rule (a left recursion is then reported through every rule of its
    cycle, which is how it is reported with folding too: the compile is done again so)."""
    limits = limits or CompileLimits()
    # "root ::= other" (a builtin JSON value, a schema that is one $ref): "other" is the root, one
    # rule fewer to build (a chain that comes back is left recursion: found below as usual)
    root, aliases = grammar.root, {grammar.root}
    while type(grammar[root]) is Ref and grammar[root].name not in aliases:  # type: ignore[attr-defined]
        root = grammar[root].name  # type: ignore[attr-defined]
        aliases.add(root)
    g = grammar.reachable(root)
    rules = dict(g.rules)
    all_refs = g.rule_refs
    refs = {n: list(dict.fromkeys(r)) for n, r in all_refs.items()}
    recursive: set[str] = set()
    sccs = _sccs(refs)  # in reverse topological order: callees first
    for comp in sccs:
        if len(comp) > 1 or comp[0] in refs[comp[0]]:
            recursive.update(comp)
    nullable = _nullable_map(rules, sccs)
    refcount: dict[str, int] = dict.fromkeys(rules, 0)
    for n in rules:
        for r in all_refs[n]:
            refcount[r] += 1

    # Rules used inside And/Not must be inlined (operands must be regular), with all they use.
    forced_inline: set[str] = set()
    stack = [r for n in rules for r in g.boolean_refs[n]]
    while stack:
        r = stack.pop()
        if r not in forced_inline:
            forced_inline.add(r)
            stack.extend(refs[r])

    # A rule used more than once is called if it is large or lexeme-like (one used once, if it is
    # both). Sizes (with inlined references expanded) are estimated bottom-up for those rules and
    # what they refer to only; a rule used more than once is tested for lexemes only if it is small.
    min_bytes, cap = limits.lexeme_min_bytes, limits.inline_max_size
    candidates = [n for n in rules if n != root and n not in recursive and n not in forced_inline
                  and (refcount[n] > 1 or (_is_lexeme_like(rules[n], min_bytes) and _size(rules[n], {}, cap) > cap))]
    sizes: dict[str, int] = {}
    if candidates:
        needed = set(candidates)
        stack = list(candidates)
        while stack:
            for r in refs[stack.pop()]:
                if r not in needed and r not in recursive:
                    needed.add(r)
                    stack.append(r)
        for comp in sccs:  # callees first
            for n in comp:
                if n in needed:
                    sizes[n] = _size(rules[n], sizes, cap)
    folded = _folded_recursive(recursive, root, refs, refcount) if fold_recursive else set()
    called_set = {root} | (recursive - folded)
    large = {n for n, body in rules.items()
             if type(body) is Special and n not in forced_inline and _large_built(body, limits.max_dfa_states)}
    called_set |= large
    for n in candidates:
        if sizes[n] > cap or _is_lexeme_like(rules[n], min_bytes):  # (used once: known lexeme-like)
            called_set.add(n)
    merged = _tail_merges(rules, refs, all_refs, refcount, root, called_set, forced_inline | large,
                          limits.merge_max_rules, sccs)
    called_set.difference_update(merged)
    called_set.update(merged.values())  # a host is called (its merged rules end where it ends)
    called: list[str] = [root] + [n for n in rules if n != root and n in called_set]
    bad = forced_inline & recursive
    if bad:
        raise GrammarError(
            f"rule(s) {sorted(bad)} are recursive but used inside an intersection/complement "
            "(And/Not operands must be regular)"
        )
    rule_id = {n: i for i, n in enumerate(called)}

    def resolve(name: str) -> tuple:
        if name in rule_id:
            return ("call", rule_id[name], nullable[name])
        if name in merged:
            return ("goto", rules[name])
        return ("inline", rules[name])

    def resolution(name: str) -> tuple:
        """How every rule reachable from ``name`` by inlining is resolved: what its DFA depends on."""
        out, stack, seen = [], [name], set()
        while stack:
            for r in refs[stack.pop()]:
                if r in seen:
                    continue
                seen.add(r)
                if r in rule_id:
                    out.append((r, nullable[r]))
                else:
                    out.append((r, rules[r]))
                    stack.append(r)
        return tuple(sorted(out, key=lambda x: x[0]))

    # Per-rule DFAs (a rule another grammar compiled the same way is taken from the cache)
    dfas: list[DFA] = []
    nfa_states = 0
    for name in called:
        body = rules[name]
        # (a root is looked up only if some grammar cached a rule with its body: nearly always a
        # root is a grammar's own, and making its key walks every rule it inlines)
        key = None if name == root and hash(body) not in _CACHED_BODIES else (
            body, resolution(name), limits.max_dfa_states)
        hit = None if key is None else _RULE_DFAS.get(key)
        if hit is None:
            prog = Program(resolve, limits.max_dfa_states)
            prog.emit(body)
            # minimal assuming every callee is productive (they nearly always are; see below),
            # unless built directly (a Special's automaton: trimmed, and the same for equal input);
            # a grammar's own root only trimmed (its masks are its own: the few states minimizing
            # would merge cost less than minimizing); so is a DFA past MINIMIZE_MAX_STATES
            how = "trim" if name == root else "minimize"
            try:
                dfa, used = prog.determinize(limits.max_nfa_states - nfa_states, limits.max_dfa_states,
                                             reduce=how)
            except LimitExceededError as e:
                if e.limit != "max_nfa_states":
                    raise
                # (the program was given what the rules before it left: name the limit itself)
                raise _nfa_limit(limits, name, nfa_states) from None
            if not dfa.as_built and "_reduced" not in dfa.__dict__:  # (an embedded automaton as it is)
                if how == "minimize" and dfa.num_states <= MINIMIZE_MAX_STATES:
                    dfa = minimize(dfa) or dfa
                elif "_trimmed" not in dfa.__dict__:
                    dfa = trim(dfa) or dfa
            # (a root is one grammar's own automaton, and a large rule seldom another grammar's: not
            # kept, either would keep its IR alive)
            if name != root and prog.size <= RULE_CACHE_ENTRY_MAX_COST:
                assert key is not None  # (only a root goes without)
                _RULE_DFAS.put(key, _NamedCalls.of(dfa, used, called), cost=prog.size)
                _cached_body(body)
        else:
            _cached_body(body)
            used = hit.nfa_states
            if used > limits.max_nfa_states - nfa_states:
                raise _nfa_limit(limits, name, nfa_states)
            dfa = hit.with_ids(rule_id)
        nfa_states += used
        dfas.append(dfa)

    # Productivity of rules (fixpoint), then trim + minimize.
    # (callees first: a fixpoint is iterated only inside recursive components)
    # (a list, not an array: a few rules, and numpy's reductions cost ~30 µs on a cold process)
    productive = [False] * len(called)
    # (the callee rule ids of each)
    callees = [d.__dict__.get("_callees") or sorted(set(d.call_rule.tolist())) for d in dfas]
    for comp in sccs:
        members = [rule_id[n] for n in comp if n in rule_id]
        if len(members) == 1 and "_trimmed" in dfas[members[0]].__dict__ and comp[0] not in refs[comp[0]]:
            # (every state of a trimmed DFA reaches a final state when its callees can return)
            i = members[0]
            if all(productive[r] for r in callees[i]):
                productive[i] = True
                continue
        changed = bool(members)
        while changed:
            changed = False
            for i in members:
                if not productive[i] and is_productive(dfas[i], np.array(productive)):
                    productive[i] = True
                    changed = len(members) > 1
    if not productive[0]:
        raise GrammarError(f"the grammar's language is empty (root rule {grammar.root!r} derives no string)")
    # (a rule DFA is minimal already unless it calls an unproductive rule; a productive one reaches
    # a final state, so it is not empty)
    trimmed: list[DFA | None] = dfas  # type: ignore[assignment]
    if not all(productive):
        kept = np.array(productive)
        trimmed = [(d if kept[d.call_rule].all() else minimize(d, kept)) if productive[i] else None
                   for i, d in enumerate(dfas)]
        callees = [[] if d is None else sorted(set(d.call_rule.tolist())) for d in trimmed]

    # Keep only rules reachable from the root through call edges.
    keep = [0]
    seen = {0}
    k = 0
    while k < len(keep):
        i = keep[k]
        k += 1
        assert trimmed[i] is not None
        for r in callees[i]:
            if r not in seen:
                seen.add(r)
                keep.append(r)
    if len(keep) == len(called):  # (the common case: every rule kept, numbered as they are)
        names, rdfas = called, trimmed  # type: ignore[assignment]
    else:
        remap = np.full(len(called), -1, dtype=np.int32)
        remap[keep] = np.arange(len(keep), dtype=np.int32)
        names = [called[i] for i in keep]
        rdfas = []
        for i in keep:
            d = trimmed[i]
            assert d is not None
            if d.call_rule.shape[0]:
                d = d.with_calls(d.call_src, remap[d.call_rule], d.call_dst)
            rdfas.append(d)

    try:
        rtn = _assemble(names, rdfas, limits, nfa_states)
    except LimitExceededError:
        raise
    except GrammarError:  # left recursion: named again with every rule of its cycle called
        if folded:
            return compile_rtn(grammar, limits, fold_recursive=False)
        raise
    if "_named" not in rdfas[0].__dict__ and len(names) > 1:
        # a root built for this grammar, every rule in a cycle with it (an expression grammar): all
        # the grammar's own, no digest to make (:func:`_rule_hashes` would find so at a first mask)
        cycle = next(set(comp) for comp in sccs if root in comp)
        if cycle.issuperset(names):
            rtn.__dict__["_rule_hash"] = [None] * len(names)
            rtn.digest_input = None
    return rtn


def _nfa_limit(limits: CompileLimits, name: str, used: int) -> LimitExceededError:
    """The refusal of rule ``name``, whose automaton needs more NFA states than the rules before
    it (``used`` states) left of ``limits.max_nfa_states``."""
    left = limits.max_nfa_states - used
    return LimitExceededError(f"grammar automaton exceeds {limits.max_nfa_states} NFA states (rule {name!r} "
                              f"needs more than the {left} the rules before it left)", limit="max_nfa_states")


@dataclass(frozen=True)
class _NamedCalls:
    """A rule's DFA (before trimming) with its calls naming the callee rules, so that any grammar
    resolving the rule the same way can reuse it whatever the rule ids there."""

    dfa: DFA  # call_rule indexes ``callees``
    callees: tuple[str, ...]
    nfa_states: int
    #: this rule's digest by its callees' digests (in ``callees`` order), see :func:`_rule_hashes`
    digests: dict = field(default_factory=dict, compare=False, repr=False)
    #: the DFA by its callees' rule ids (:meth:`with_ids`: grammars that share a rule mostly number
    #: its callees alike; the DFAs are never changed, only facts about them remembered)
    by_ids: dict = field(default_factory=dict, compare=False, repr=False)
    serial: int = field(default_factory=lambda: next(_SERIALS), compare=False)  # (never reused)

    @classmethod
    def of(cls, dfa: DFA, nfa_states: int, names: list[str]) -> _NamedCalls:
        rules = dfa.call_rule.tolist()
        ids = sorted(set(rules))  # (a handful of callees: plain Python beats np.unique here)
        local = {r: i for i, r in enumerate(ids)}
        named = dfa.with_calls(dfa.call_src, np.array([local[r] for r in rules], dtype=np.int32), dfa.call_dst)
        return cls(named, tuple(names[i] for i in ids), nfa_states)

    def with_ids(self, rule_id: dict[str, int]) -> DFA:
        d = self.dfa
        if not self.callees:
            return d
        ids = tuple([rule_id[n] for n in self.callees])
        out = self.by_ids.get(ids)
        if out is None:
            rule = np.array(ids, dtype=np.int32)[d.call_rule]
            o = np.lexsort((rule, d.call_src))  # calls sorted by source, then rule id
            out = d.with_calls(d.call_src[o], rule[o], d.call_dst[o])
            out.__dict__["_named"] = self  # (kept by further with_calls renumberings)
            out.__dict__["_callees"] = sorted(ids)  # (its callee rule ids: see compile_rtn)
            if len(self.by_ids) >= 8:
                self.by_ids.clear()
            self.by_ids[ids] = out
        return out


_SERIALS = itertools.count()
_DIGEST_LOCK = threading.Lock()


#: rule DFAs by (body, resolution of what it inlines or calls, DFA limit), process-wide: grammars
#: repeat rules (the any-JSON-value rules of every schema that allows extra properties). A rule's
#: own name does not shape its DFA; the names it refers to are part of its body.
#:
#: Bounded by the size of its keys too (each entry costs its program's size, about the nodes of
#: the expressions its key holds: ``RULE_CACHE_MAX_COST``): the keys' expression nodes are objects
#: Python's cyclic collector walks at every full collection, and 2,048 entries after 1,500
#: MaskBench schemas held 190,000 of them -- a full collection of 110-135 ms, which fell inside a
#: token's mask fill (the largest steps of a run over the whole set, 125-190 ms). Most entries
#: that are found again are small (the median of those found holds 2 nodes); entries of more than
#: 8 inlined rules held two thirds of the nodes and 3 % of the hits.
RULE_CACHE_MAX_COST = 65_536
#: the largest entry kept (a rule whose program is larger is compiled again when met again): over
#: 2,500 MaskBench schemas, the entries of at most 512 held 99 % of the hits and half the cost
RULE_CACHE_ENTRY_MAX_COST = 512
_RULE_DFAS: LRU[_NamedCalls] = LRU(2048, max_bytes=256 << 20, weight=lambda e: e.dfa.nbytes,
                                   max_cost=RULE_CACHE_MAX_COST)


#: hashes of the bodies of rules put in (or found in) ``_RULE_DFAS``: a root whose body is not
#: here is not looked up (bounded: cleared when large; hits add their bodies again)
_CACHED_BODIES: set[int] = set()


def _cached_body(body: Expr) -> None:
    if len(_CACHED_BODIES) >= 16 * _RULE_DFAS.size:
        _CACHED_BODIES.clear()
    _CACHED_BODIES.add(hash(body))


def _check_left_recursion(names: list[str], dfas: list[DFA]) -> None:
    graph = {i: sorted(d.calls_of(d.start)) for i, d in enumerate(dfas)}
    color = [0] * len(dfas)
    for root in range(len(dfas)):
        if color[root]:
            continue
        path: list[int] = []
        work = [(root, iter(graph[root]))]
        color[root] = 1
        path.append(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                path.pop()
                color[v] = 2
                continue
            if color[nxt] == 1:
                cycle = [names[x] for x in path[path.index(nxt) :]] + [names[nxt]]
                raise GrammarError(
                    "left recursion is not supported: " + " -> ".join(cycle)
                    + " (rewrite it with repetition, e.g. expr ::= term (op term)*)"
                )
            if color[nxt] == 0:
                color[nxt] = 1
                path.append(nxt)
                work.append((nxt, iter(graph[nxt])))


def _assemble(names: list[str], dfas: list[DFA], limits: CompileLimits, nfa_states: int) -> RTN:
    """One table over the common refinement of every rule's byte classes, plus the call chains
    of every state (:func:`._automata_kernels.assemble_network`)."""
    # (five arrays, each made by one numpy call: see assemble_packed)
    header = np.array([x for d in dfas for x in (*d.trans.shape, d.start, d.call_src.shape[0])],
                      dtype=np.int64).reshape(len(dfas), 4)
    status, trans, rule_of_state, local_index, rule_start, flags, pack = assemble_packed(
        np.array([d.byte_class for d in dfas], dtype=np.int32),
        np.concatenate([d.trans.ravel() for d in dfas]), header,
        np.concatenate([d.final for d in dfas]).view(np.uint8),
        np.concatenate([d.call_src for d in dfas] + [d.call_rule for d in dfas] + [d.call_dst for d in dfas],
                       dtype=np.int32),
        limits.max_chains)
    if status == LEFT_RECURSIVE:
        _check_left_recursion(names, dfas)  # raises, naming the cycle
    if status == TOO_MANY_CHAINS:
        raise LimitExceededError(f"grammar has more than {limits.max_chains} call chains", limit="max_chains")
    layers = {i: d.__dict__["_layers"] for i, d in enumerate(dfas) if "_layers" in d.__dict__}
    return RTN(
        rule_names=names,
        rule_start=rule_start,
        rule_of_state=rule_of_state,
        local_index=local_index,
        step_pack=(trans, flags, pack),
        stats={"rules": len(names), "states": flags.shape[1], "classes": int(pack[6]),
               "chains": int(pack[3] - pack[2]), "nfa_states": nfa_states},
        layers=layers,
        digest_input=(names, dfas),
    )


def _rule_hashes(names: list[str], dfas: list[DFA]) -> list[str | None]:
    """Digest per rule of its own DFA (canonical: minimal, numbered breadth-first, classes by
    lowest byte) with every call labelled by the callee's digest, callees first; None for the
    grammar's own rules: a root built for this grammar (not taken from the rule cache) and the
    rules in a cycle with it.

    A root is what makes a grammar itself: another grammar with the same root automaton is rare
    (1.7 % of the root states' first masks on 300 MaskBench schemas found one in the mask store,
    11 % of the other rules' states), and digesting it cost a new grammar's first mask a SHA-256
    over its whole table (25-100 µs, cold, on the fixed workloads' grammars) plus a store lookup
    per state. Its states' masks stay with the grammar (:meth:`RTN.state_key` is None for them).

    Two rules with equal digests behave identically as stack tops, whatever grammar they come from
    and whatever they are called there, so per-state token masks can be shared between grammars.
    Rules in a recursive cycle cannot be labelled by digests of themselves: inside a cycle calls are
    labelled by rule name, and each member's digest covers the whole cycle. A table's own digest is
    computed once (:meth:`DFA.table_digest`; rule DFAs are cached across grammars); call edges are
    listed by source, callee label and target, an order no rule numbering affects.
    """
    own_root = "_named" not in dfas[0].__dict__
    if own_root and len(dfas) == 1:
        return [None]
    callees = {i: sorted(set(d.call_rule.tolist())) for i, d in enumerate(dfas)}
    digests: list[bytes] = [b""] * len(dfas)
    own: set[int] = set()
    index = {n: i for i, n in enumerate(names)}

    def labelled(i: int, cycle: set[int]) -> bytes:
        d = dfas[i]
        edges = sorted(
            (src, names[r].encode() + b"\x00" if r in cycle else digests[r], dst)
            for src, r, dst in zip(d.call_src.tolist(), d.call_rule.tolist(), d.call_dst.tolist()))
        return d.table_digest() + b"".join(
            src.to_bytes(4, "little") + label + dst.to_bytes(4, "little") for src, label, dst in edges)

    for comp in strongly_connected_components(callees):  # callees first
        if own_root and 0 in comp:  # (every rule is reached from the root: no other calls these)
            own.update(comp)
            continue
        if len(comp) == 1 and comp[0] not in callees[comp[0]]:
            d = dfas[comp[0]]
            if not callees[comp[0]]:  # the digest of the table alone: kept with it (rule DFAs are cached)
                solo = d.__dict__.get("_solo_digest")
                if solo is None:
                    solo = d.__dict__["_solo_digest"] = hashlib.sha256(d.table_digest()).digest()
                digests[comp[0]] = solo
                continue
            named = d.__dict__.get("_named")
            if named is None:
                digests[comp[0]] = hashlib.sha256(labelled(comp[0], set())).digest()
                continue
            # a cached rule: its digest is fixed by its callees' (a cache hit computes it once)
            key = tuple(digests[index[n]] for n in named.callees)
            hit = named.digests.get(key)
            if hit is None:
                if len(named.digests) >= 16:
                    named.digests.clear()
                hit = named.digests[key] = hashlib.sha256(labelled(comp[0], set())).digest()
            digests[comp[0]] = hit
            continue
        members = set(comp)
        order = sorted(comp, key=lambda x: names[x])
        named_all = [dfas[i].__dict__.get("_named") for i in order]
        key = None
        if all(x is not None for x in named_all):  # cached rules: fixed by their names and callees
            key = tuple((names[i], x.serial, tuple(names[index[n]] if index[n] in members else digests[index[n]]
                                                   for n in x.callees)) for i, x in zip(order, named_all))
            hit = _CYCLE_DIGESTS.get(key)
            if hit is not None:
                for i, dg in zip(order, hit):
                    digests[i] = dg
                continue
        cycle = hashlib.sha256(b"cycle")
        for i in order:
            cycle.update(names[i].encode() + b"\x00" + labelled(i, members))
        for i in comp:
            digests[i] = hashlib.sha256(cycle.digest() + names[i].encode()).digest()
        if key is not None:
            if len(_CYCLE_DIGESTS) >= 1024:
                _CYCLE_DIGESTS.clear()
            _CYCLE_DIGESTS[key] = tuple(digests[i] for i in order)
    return [None if i in own else d.hex() for i, d in enumerate(digests)]


#: digests of the members of a cycle of cached rules (see :func:`_rule_hashes`), by their names,
#: cache entries and outside callees' digests
_CYCLE_DIGESTS: dict[tuple, tuple[bytes, ...]] = {}
