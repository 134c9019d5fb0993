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

Inlining policy: the root and recursive rules are always called; a non-recursive rule
is called when it is referenced more than once and is large, or is a "lexeme-like"
rule whose states see most of the vocabulary (its per-state masks are then shared
between every place — and every grammar — that uses it). Everything else is inlined.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import GrammarError, LimitExceededError
from ..grammar.graphs import strongly_connected_components
from ..grammar.ir import Alt, And, Bytes, ByteSet, Expr, Grammar, Not, Ref, Repeat, Seq
from .automata import DFA, NFA, byte_partition, determinize, is_productive, minimize, trim

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


@dataclass
class RTN:
    """Flat arrays of a compiled grammar; see the module docstring."""

    rule_names: list[str]
    rule_start: np.ndarray  # int32[num_rules]
    rule_of_state: np.ndarray  # int32[num_states]
    local_index: np.ndarray  # int32[num_states]: index of the state inside its rule's DFA
    rule_hash: list[str]  # per rule: digest of its DFA and everything it calls
    byte_class: np.ndarray  # int32[256]
    class_masks: list[int]
    num_classes: int
    trans: np.ndarray  # int32[num_states * num_classes]
    final: np.ndarray  # uint8[num_states]
    simple: np.ndarray  # uint8[num_states]: no call chains and not final (a plain DFA step)
    dead_end: np.ndarray  # uint8[num_states]: final with no way to consume a byte (can only pop)
    chain_ptr: np.ndarray  # int32[num_states + 1]
    chain_target: np.ndarray  # int32[num_chains]
    chain_push_ptr: np.ndarray  # int32[num_chains + 1]
    chain_push: np.ndarray  # int32[total pushes]
    stats: dict = field(default_factory=dict)

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def root_start(self) -> int:
        return int(self.rule_start[0])

    def state_key(self, state: int) -> tuple[str, int]:
        """Grammar-independent identity of a state: equal keys => equal behaviour as a stack top."""
        return (self.rule_hash[int(self.rule_of_state[state])], int(self.local_index[state]))


# ---------------------------------------------------------------------------- IR analysis


def _nullable_map(rules: dict[str, Expr]) -> dict[str, bool]:
    nullable = dict.fromkeys(rules, False)

    def nul(e: Expr) -> bool:
        if isinstance(e, Bytes):
            return not e.value
        if isinstance(e, ByteSet):
            return False
        if isinstance(e, Seq):
            return all(nul(x) for x in e.items)
        if isinstance(e, Alt):
            return any(nul(x) for x in e.items)
        if isinstance(e, Repeat):
            return e.min == 0 or nul(e.item)
        if isinstance(e, Ref):
            return nullable[e.name]
        if isinstance(e, And):
            return all(nul(x) for x in e.items)
        if isinstance(e, Not):
            return not nul(e.item)
        raise GrammarError(f"unknown IR node {e!r}")

    changed = True
    while changed:
        changed = False
        for name, e in rules.items():
            if not nullable[name] and nul(e):
                nullable[name] = True
                changed = True
    return nullable


def _sccs(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    return strongly_connected_components(graph)


def _size(e: Expr, rules: dict[str, Expr], memo: dict[str, int], depth: int = 0) -> int:
    """Rough NFA-state estimate of an expression with non-recursive refs expanded."""
    if depth > 200:
        return 1 << 30
    if isinstance(e, Bytes):
        return len(e.value) + 1
    if isinstance(e, ByteSet):
        return 2
    if isinstance(e, Seq | Alt | And):
        return sum(_size(x, rules, memo, depth + 1) for x in e.items) + 2
    if isinstance(e, Repeat):
        copies = max(e.min, 1) if e.max is None else max(e.max, 1)
        return min(copies * _size(e.item, rules, memo, depth + 1) + 2, 1 << 30)
    if isinstance(e, Not):
        return _size(e.item, rules, memo, depth + 1) + 2
    if isinstance(e, Ref):
        return memo.get(e.name, 2)
    return 1


def _is_lexeme_like(e: Expr, min_bytes: int) -> bool:
    """True if ``e`` repeats (unboundedly or widely) over a large set of bytes, e.g. string bodies."""
    if isinstance(e, Repeat) and (e.max is None or e.max >= 16):
        return _width(e.item) >= min_bytes or _is_lexeme_like(e.item, min_bytes)
    return any(_is_lexeme_like(c, min_bytes) for c in e.children())


def _width(e: Expr) -> int:
    """Number of distinct first bytes an expression can start with (approximation)."""
    if isinstance(e, Bytes):
        return 1 if e.value else 0
    if isinstance(e, ByteSet):
        return sum(hi - lo + 1 for lo, hi in e.ranges)
    if isinstance(e, Alt):
        return min(256, sum(_width(x) for x in e.items))
    if isinstance(e, Seq):
        return _width(e.items[0]) if e.items else 0
    if isinstance(e, Repeat):
        return _width(e.item)
    return 0


# ---------------------------------------------------------------------------- compile


def compile_rtn(grammar: Grammar, limits: CompileLimits | None = None) -> RTN:
    """Compile ``grammar`` into an :class:`RTN` (see module docstring)."""
    limits = limits or CompileLimits()
    g = grammar.reachable()
    rules = dict(g.rules)
    all_refs = g.rule_refs
    refs = {n: list(dict.fromkeys(r)) for n, r in all_refs.items()}
    recursive: set[str] = set()
    for comp in _sccs(refs):
        if len(comp) > 1 or comp[0] in refs[comp[0]]:
            recursive.update(comp)
    nullable = _nullable_map(rules)
    refcount: dict[str, int] = dict.fromkeys(rules, 0)
    for n in rules:
        for r in all_refs[n]:
            refcount[r] += 1
    # sizes bottom-up over the (acyclic) non-recursive part
    sizes: dict[str, int] = {}
    for comp in _sccs(refs):  # Tarjan emits SCCs in reverse topological order (callees first)
        for n in comp:
            sizes[n] = _size(rules[n], rules, sizes)

    # Rules used inside And/Not must be inlined (operands must be regular).
    forced_inline: set[str] = set()

    def collect_forced(e: Expr, inside: bool) -> None:
        if isinstance(e, Ref):
            if inside and e.name not in forced_inline:
                forced_inline.add(e.name)
                collect_forced(rules[e.name], True)
            return
        for c in e.children():
            collect_forced(c, inside or isinstance(e, And | Not))

    for e in rules.values():
        collect_forced(e, False)

    called: list[str] = [g.root]
    for n in rules:
        if n == g.root:
            continue
        if n in recursive:
            called.append(n)
            continue
        if n in forced_inline:
            continue
        lexeme = _is_lexeme_like(rules[n], limits.lexeme_min_bytes)
        if refcount[n] > 1 and (lexeme or sizes[n] > limits.inline_max_size):
            called.append(n)
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
        return ("inline", rules[name])

    # Per-rule DFAs
    dfas: list[DFA] = []
    nfa_states = 0
    for name in called:
        nfa = NFA(max_states=limits.max_nfa_states - nfa_states)
        s, e = nfa.build(rules[name], resolve)
        nfa_states += len(nfa)
        dfas.append(determinize(nfa, s, e, limits.max_dfa_states))

    # Productivity of rules (fixpoint), then trim + minimize.
    productive = [False] * len(called)
    changed = True
    while changed:
        changed = False
        for i, d in enumerate(dfas):
            if not productive[i] and is_productive(d, lambda r: productive[r]):
                productive[i] = True
                changed = True
    if not productive[0]:
        raise GrammarError(f"the grammar's language is empty (root rule {g.root!r} derives no string)")
    trimmed: list[DFA | None] = []
    for i, d in enumerate(dfas):
        t = trim(d, lambda r: productive[r]) if productive[i] else None
        trimmed.append(minimize(t) if t is not None else None)

    # Keep only rules reachable from the root through call edges.
    keep = [0]
    seen = {0}
    k = 0
    while k < len(keep):
        d = trimmed[keep[k]]
        k += 1
        assert d is not None
        for cmap in d.calls:
            for r in cmap:
                if r not in seen:
                    seen.add(r)
                    keep.append(r)
    remap = {old: new for new, old in enumerate(keep)}
    names = [called[i] for i in keep]
    rdfas: list[DFA] = [trimmed[i] for i in keep]  # type: ignore[misc]
    for d in rdfas:
        d.calls = [{remap[r]: t for r, t in cm.items()} for cm in d.calls]

    _check_left_recursion(names, rdfas)
    return _assemble(names, rdfas, limits, nfa_states)


def _check_left_recursion(names: list[str], dfas: list[DFA]) -> None:
    graph = {i: sorted(d.calls[d.start]) for i, d in enumerate(dfas)}
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
    all_masks = {m for d in dfas for m in d.classes}
    classes = byte_partition(all_masks)
    ncls = len(classes)
    byte_class = np.zeros(256, dtype=np.int32)
    for ci, m in enumerate(classes):
        for b in range(256):
            if (m >> b) & 1:
                byte_class[b] = ci
    offsets = []
    total = 0
    for d in dfas:
        offsets.append(total)
        total += d.num_states
    trans = np.full(total * ncls, -1, dtype=np.int32)
    final = np.zeros(total, dtype=np.uint8)
    rule_of_state = np.zeros(total, dtype=np.int32)
    local_index = np.zeros(total, dtype=np.int32)
    rule_start = np.array([offsets[i] + d.start for i, d in enumerate(dfas)], dtype=np.int32)
    for i, d in enumerate(dfas):
        # local class for each global class
        loc = []
        for m in classes:
            loc.append(next(j for j, lm in enumerate(d.classes) if lm & m))
        base, n = offsets[i], d.num_states
        local = np.asarray(d.trans, dtype=np.int32).reshape(n, -1)[:, loc]
        trans[base * ncls:(base + n) * ncls] = np.where(local >= 0, local + base, -1).reshape(-1)
        final[base:base + n] = np.asarray(d.final, dtype=np.uint8)
        rule_of_state[base:base + n] = i
        local_index[base:base + n] = np.arange(n, dtype=np.int32)

    # A return state that is final and can do nothing else would only pop again: it is not
    # pushed (a tail call), so a chain of optional properties or nested tail positions does not
    # grow the stack by a frame per call -- which keeps closing brackets cheap to resolve.
    has_byte = (trans.reshape(total, ncls) >= 0).any(axis=1) if total else np.zeros(0, dtype=bool)
    only_pops = [bool(final[offsets[i] + s]) and not has_byte[offsets[i] + s] and not d.calls[s]
                 for i, d in enumerate(dfas) for s in range(d.num_states)]

    # call chains per state
    chain_ptr = np.zeros(total + 1, dtype=np.int32)
    targets: list[int] = []
    push_ptr: list[int] = [0]
    pushes: list[int] = []
    for i, d in enumerate(dfas):
        for s in range(d.num_states):
            gs = offsets[i] + s
            stack: list[tuple[int, int, tuple[int, ...]]] = []
            for r, t in sorted(d.calls[s].items()):
                stack.append((r, offsets[i] + t, ()))
            while stack:
                r, ret, prefix = stack.pop()
                chain = prefix if only_pops[ret] else (*prefix, ret)
                start = int(rule_start[r])
                targets.append(start)
                pushes.extend(chain)
                push_ptr.append(len(pushes))
                if len(targets) > limits.max_chains:
                    raise LimitExceededError(
                        f"grammar has more than {limits.max_chains} call chains", limit="max_chains"
                    )
                cd = dfas[r]
                for r2, t2 in sorted(cd.calls[cd.start].items()):
                    stack.append((r2, offsets[r] + t2, chain))
            chain_ptr[gs + 1] = len(targets)

    has_chain = chain_ptr[1:] != chain_ptr[:-1]
    simple = ((~has_chain) & (final == 0)).astype(np.uint8)
    dead_end = ((final == 1) & (~has_chain) & (~has_byte)).astype(np.uint8)
    rule_hash = _rule_hashes(names, dfas, classes)
    return RTN(
        rule_names=names,
        rule_start=rule_start,
        rule_of_state=rule_of_state,
        local_index=local_index,
        rule_hash=rule_hash,
        byte_class=byte_class,
        class_masks=classes,
        num_classes=ncls,
        trans=trans,
        final=final,
        simple=simple,
        dead_end=dead_end,
        chain_ptr=chain_ptr,
        chain_target=np.array(targets, dtype=np.int32),
        chain_push_ptr=np.array(push_ptr, dtype=np.int32),
        chain_push=np.array(pushes, dtype=np.int32),
        stats={"rules": len(names), "states": total, "classes": ncls, "chains": len(targets), "nfa_states": nfa_states},
    )


def _rule_hashes(names: list[str], dfas: list[DFA], classes: list[int]) -> list[str]:
    """Digest per rule of its own DFA (in canonical BFS numbering) and of every rule it can call.

    Two rules with equal digests behave identically as stack tops, whatever grammar they
    come from, so per-state token masks can be shared between grammars.
    """
    local: list[bytes] = []
    for d in dfas:
        h = hashlib.sha256()
        for s in range(d.num_states):
            h.update(b"F" if d.final[s] else b"N")
            for m, t in sorted(d.edge_masks(s)):
                h.update(m.to_bytes(32, "little"))
                h.update(t.to_bytes(4, "little"))
            for r, t in sorted(d.calls[s].items()):
                h.update(b"C" + names[r].encode() + b"\x00" + t.to_bytes(4, "little"))
            h.update(b"|")
        local.append(h.digest())
    out = []
    for i in range(len(dfas)):
        # closure of callees
        seen = {i}
        stack = [i]
        while stack:
            for cm in dfas[stack.pop()].calls:
                for r in cm:
                    if r not in seen:
                        seen.add(r)
                        stack.append(r)
        h = hashlib.sha256(names[i].encode() + b"\x00")
        for r in sorted(seen, key=lambda x: names[x]):
            h.update(names[r].encode() + b"\x00" + local[r])
        out.append(h.hexdigest())
    return out
