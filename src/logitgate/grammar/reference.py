"""A slow, independent reference recognizer for grammars in the IR: the engine's test oracle.

``accepts(g, data)`` tells whether ``data`` is in the language of ``g``'s root rule;
``prefix_ok(g, data)`` whether ``data`` can be extended to such a string (a viable prefix);
:class:`Recognizer` does the same incrementally, byte by byte, with cheap copies.

How it works (kept simple on purpose; nothing here is shared with :mod:`logitgate.engine`):

* Rules that are recursive, or reach a recursive rule, become context-free nonterminals;
  every other (regular) rule or sub-expression, And/Not included, becomes a *regular
  terminal*: a hash-consed regular expression matched with Brzozowski derivatives
  (memoized per state and byte). ``Repeat`` is kept with its counter, so ``x{0,1000}``
  never expands.
* The context-free part is recognized with an Earley parser over bytes. An item whose next
  symbol is a regular terminal carries the terminal's current derivative. Nullable
  nonterminals use the Aycock-Horspool fix; ``Repeat`` over a nonterminal is a counted
  item (the dot is the number of copies, capped at ``min`` when unbounded).
* Exact viability: unproductive nonterminals and the productions that use them are removed
  (a regular terminal is productive iff its language is non-empty, decided for And/Not by
  exploring derivatives, memoized, at most ``max_states`` states before
  :class:`~logitgate.errors.LimitExceededError`), and a partially matched terminal is kept
  only while its derivative's language is non-empty. So every Earley item is completable
  and a prefix is viable iff the current Earley set is non-empty.

Complexity: Earley is O(n^3) in the worst (ambiguous) case, O(n^2) for unambiguous
grammars and about linear for the usual JSON-like grammars (no Leo optimization, so right
recursion is quadratic). A regular terminal costs one dict lookup per byte once its
derivatives are memoized. ``prefix_ok`` reuses the Earley sets of recent calls that share a
prefix, so checking many ``prefix + token`` strings costs about the token length each.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from contextlib import contextmanager

from ..errors import GrammarError, LimitExceededError
from .graphs import strongly_connected_components
from .ir import Alt, And, Bytes, ByteSet, Expr, Grammar, Not, Ref, Repeat, Seq, Special, iter_refs

__all__ = ["MAX_DERIVATIVE_STATES", "Recognizer", "accepts", "prefix_ok"]

MAX_DERIVATIVE_STATES = 100_000
"""Default limit on derivative states explored to decide whether a language is empty."""

# ----------------------------------------------------------------------------- regular expressions

_NONE, _EPS_ID = 0, 1  # ids of the empty language and of the empty string
_K_NONE, _K_EPS, _K_CHARS, _K_CAT, _K_ALT, _K_AND, _K_NOT, _K_REP = range(8)
_ALL_BYTES = (1 << 256) - 1


class _Regex:
    """Hash-consed regular expressions over bytes with memoized derivatives.

    Nodes are ints indexing ``nodes``: ``(_K_CHARS, mask)``, ``(_K_CAT, head, tail)``,
    ``(_K_ALT, frozenset)``, ``(_K_AND, frozenset)``, ``(_K_NOT, x)``, ``(_K_REP, x, min, max)``. Smart constructors keep alternation and
    intersection associative, commutative and idempotent, so every expression has finitely
    many distinct derivatives.
    """

    def __init__(self, max_states: int):
        self.nodes: list[tuple] = [(_K_NONE,), (_K_EPS,)]
        self.index: dict[tuple, int] = {(_K_NONE,): 0, (_K_EPS,): 1}
        self.null: list[bool] = [False, True]
        self.boolean: list[bool] = [False, False]  # contains And/Not
        self.dmemo: dict[int, int] = {}
        self.nonempty_memo: dict[int, bool] = {}
        self.max_states = max_states
        self.top = self.not_(_NONE)  # all byte strings

    def _mk(self, key: tuple, nullable: bool, boolean: bool) -> int:
        i = self.index.get(key)
        if i is None:
            i = len(self.nodes)
            self.nodes.append(key)
            self.index[key] = i
            self.null.append(nullable)
            self.boolean.append(boolean)
        return i

    # -- smart constructors
    def chars(self, mask: int) -> int:
        return _NONE if mask == 0 else self._mk((_K_CHARS, mask), False, False)

    def literal(self, data: bytes) -> int:
        r = _EPS_ID
        for b in reversed(data):
            r = self.cat(self.chars(1 << b), r)
        return r

    def cat(self, a: int, b: int) -> int:
        if a == _NONE or b == _NONE:
            return _NONE
        nodes, null, boolean = self.nodes, self.null, self.boolean
        if a == _EPS_ID:
            # a derivative exposes ``b``: keep its head a non-CAT so that nesting cannot pile up
            if nodes[b][0] != _K_CAT or nodes[nodes[b][1]][0] != _K_CAT:
                return b
            a, b = nodes[b][1], nodes[b][2]
        elif b == _EPS_ID:
            return a
        # rotate the left spine of ``a`` (heads may still be CATs; the language is the same)
        while nodes[a][0] == _K_CAT:
            _, x, y = nodes[a]
            b = self._mk((_K_CAT, y, b), null[y] and null[b], boolean[y] or boolean[b])
            a = x
        return self._mk((_K_CAT, a, b), null[a] and null[b], boolean[a] or boolean[b])

    def alt(self, items: Iterable[int]) -> int:
        nodes = self.nodes
        out: set[int] = set()
        mask = 0
        stack = list(items)
        while stack:
            i = stack.pop()
            k = nodes[i][0]
            if k == _K_NONE:
                continue
            if k == _K_CHARS:
                mask |= nodes[i][1]
            elif k == _K_ALT:
                stack.extend(nodes[i][1])
            else:
                out.add(i)
        if self.top in out:
            return self.top
        if mask:
            out.add(self.chars(mask))
        if not out:
            return _NONE
        if len(out) == 1:
            return next(iter(out))
        fs = frozenset(out)
        return self._mk((_K_ALT, fs), any(self.null[i] for i in fs), any(self.boolean[i] for i in fs))

    def and_(self, items: Iterable[int]) -> int:
        nodes = self.nodes
        out: set[int] = set()
        mask = -1
        stack = list(items)
        while stack:
            i = stack.pop()
            k = nodes[i][0]
            if k == _K_NONE:
                return _NONE
            if k == _K_CHARS:
                mask &= nodes[i][1]
            elif k == _K_AND:
                stack.extend(nodes[i][1])
            elif i != self.top:
                out.add(i)
        if mask != -1:
            if mask == 0:
                return _NONE
            out.add(self.chars(mask))
        if _EPS_ID in out:
            return _EPS_ID if all(self.null[i] for i in out) else _NONE
        if not out:
            return self.top
        if len(out) == 1:
            return next(iter(out))
        fs = frozenset(out)
        return self._mk((_K_AND, fs), all(self.null[i] for i in fs), True)

    def not_(self, a: int) -> int:
        if self.nodes[a][0] == _K_NOT:
            return self.nodes[a][1]
        return self._mk((_K_NOT, a), not self.null[a], True)

    def rep(self, a: int, lo: int, hi: int | None) -> int:
        if hi == 0 or a == _EPS_ID:
            return _EPS_ID
        if a == _NONE:
            return _EPS_ID if lo == 0 else _NONE
        if lo == 1 and hi == 1:
            return a
        if self.null[a]:
            lo = 0  # x{m,n} == x{0,n} when x matches the empty string
        return self._mk((_K_REP, a, lo, hi), lo == 0 or self.null[a], self.boolean[a])

    # -- derivatives and emptiness
    def deriv(self, r: int, b: int) -> int:
        """The derivative of ``r`` with respect to byte ``b``."""
        key = (r << 8) | b
        d = self.dmemo.get(key)
        if d is not None:
            return d
        node = self.nodes[r]
        k = node[0]
        if k in (_K_NONE, _K_EPS):
            d = _NONE
        elif k == _K_CHARS:
            d = _EPS_ID if (node[1] >> b) & 1 else _NONE
        elif k == _K_CAT:
            terms = []
            x = r
            while True:
                nx = self.nodes[x]
                if nx[0] != _K_CAT:
                    terms.append(self.deriv(x, b))
                    break
                terms.append(self.cat(self.deriv(nx[1], b), nx[2]))
                if not self.null[nx[1]]:
                    break
                x = nx[2]
            d = self.alt(terms)
        elif k == _K_ALT:
            d = self.alt([self.deriv(i, b) for i in node[1]])
        elif k == _K_AND:
            d = self.and_([self.deriv(i, b) for i in node[1]])
        elif k == _K_NOT:
            d = self.not_(self.deriv(node[1], b))
        else:  # _K_REP
            _, a, lo, hi = node
            d = self.cat(self.deriv(a, b), self.rep(a, max(lo - 1, 0), None if hi is None else hi - 1))
        self.dmemo[key] = d
        return d

    def _representatives(self, r: int) -> list[int]:
        """One byte from each class of bytes that no byte set inside ``r`` distinguishes."""
        masks: set[int] = set()
        seen = {r}
        stack = [r]
        while stack:
            node = self.nodes[stack.pop()]
            k = node[0]
            if k == _K_CHARS:
                masks.add(node[1])
                continue
            if k == _K_CAT:
                kids: Iterable[int] = (node[1], node[2])
            elif k in (_K_ALT, _K_AND):
                kids = node[1]
            elif k in (_K_NOT, _K_REP):
                kids = (node[1],)
            else:
                kids = ()
            for c in kids:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        atoms = [_ALL_BYTES]
        for m in masks:
            nxt = []
            for a in atoms:
                if a & m:
                    nxt.append(a & m)
                if a & ~m:
                    nxt.append(a & ~m)
            atoms = nxt
        return [(a & -a).bit_length() - 1 for a in atoms]

    def nonempty(self, r: int) -> bool:
        """Whether the language of ``r`` contains at least one string."""
        if not self.boolean[r]:
            return r != _NONE  # the constructors never build an empty And/Not-free expression
        memo = self.nonempty_memo
        got = memo.get(r)
        if got is not None:
            return got
        # derivatives of r only use byte sets built from r's, so r's byte classes suffice
        reps = self._representatives(r)
        parent: dict[int, int] = {r: -1}
        queue = [r]
        head = 0
        found = -1
        while head < len(queue) and found < 0:
            x = queue[head]
            head += 1
            if self.null[x] or not self.boolean[x] or memo.get(x):  # boolean-free x != 0 is non-empty
                found = x
                break
            for b in reps:
                y = self.deriv(x, b)
                if y == _NONE or y in parent or memo.get(y) is False:
                    continue
                parent[y] = x
                queue.append(y)
                if len(parent) > self.max_states:
                    raise LimitExceededError(
                        f"deciding whether an And/Not expression is empty explored more than "
                        f"{self.max_states} derivative states", limit="max_states")
        if found < 0:
            for x in parent:
                memo[x] = False
            return False
        while found >= 0:
            memo[found] = True
            found = parent[found]
        return True


# ----------------------------------------------------------------------------- grammar compilation


@contextmanager
def _deep_recursion(limit: int = 20_000):
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        if old < limit:
            sys.setrecursionlimit(old)


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components; each comes after those it reaches."""
    return strongly_connected_components({v: sorted(ws) for v, ws in graph.items()})


class _Set:
    """One Earley set (immutable once built)."""

    __slots__ = ("accept", "scan", "size", "waiting")

    def __init__(self, scan: list, waiting: dict, accept: bool, size: int):
        self.scan = scan  # items (prod, dot, origin, regex state) whose next symbol is a terminal
        self.waiting = waiting  # nonterminal -> items (prod, dot, origin) whose next symbol it is
        self.accept = accept
        self.size = size


class _Compiled:
    """A grammar turned into Earley productions over regular terminals."""

    def __init__(self, grammar: Grammar, max_states: int):
        self.rx = _Regex(max_states)
        self.rules = grammar.rules
        graph = {n: set(iter_refs(e)) for n, e in self.rules.items()}
        self.cfg_rule: dict[str, bool] = {}
        for comp in _sccs(graph):
            rec = len(comp) > 1 or comp[0] in graph[comp[0]]
            reaches = any(self.cfg_rule.get(t, False) for n in comp for t in graph[n] if t not in comp)
            for n in comp:
                self.cfg_rule[n] = rec or reaches
        self._rule_rx: dict[str, int] = {}
        self._expr_rx: dict[int, int] = {}
        self._regular: dict[int, bool] = {}
        self._keep: list[Expr] = []  # keeps id()-keyed memo entries valid
        # productions: lhs, symbols (nonterminal >= 0, terminal = -1 - regex id) or a counted repeat
        self.lhs: list[int] = []
        self.syms: list[tuple[int, ...]] = []
        self.rep: list[tuple[int, int, int | None] | None] = []
        self.nt_names: list[str] = []
        self._nt: dict[str, int] = {}
        self._pending: list[tuple[int, Expr]] = []
        with _deep_recursion():
            self.start = self._new_nt("<start>")
            root = grammar.root
            root_sym = self._nt_of(root) if self.cfg_rule[root] else self._term(Ref(root))
            self._add(self.start, (root_sym,))
            while self._pending:
                nt, e = self._pending.pop()
                self._body(nt, e)
            self._finish()
        self.initial = self.close(0, [self._item(p, 0, 0) for p in self.prods_of[self.start]], [])
        self.recent: list[tuple[bytes, list[_Set]]] = []

    # -- IR -> regular expressions
    def _rx(self, e: Expr) -> int:
        got = self._expr_rx.get(id(e))
        if got is not None:
            return got
        rx = self.rx
        if isinstance(e, Bytes):
            r = rx.literal(e.value)
        elif isinstance(e, ByteSet):
            r = rx.chars(e.to_mask())
        elif isinstance(e, Seq):
            r = _EPS_ID
            for it in reversed(e.items):
                r = rx.cat(self._rx(it), r)
        elif isinstance(e, Alt):
            r = rx.alt([self._rx(it) for it in e.items])
        elif isinstance(e, Repeat):
            r = rx.rep(self._rx(e.item), e.min, e.max)
        elif isinstance(e, And):
            r = rx.and_([self._rx(it) for it in e.items])
        elif isinstance(e, Not):
            r = rx.not_(self._rx(e.item))
        elif isinstance(e, Ref):
            if self.cfg_rule[e.name]:
                raise GrammarError(f"rule {e.name!r} is recursive (or reaches a recursive rule) and cannot "
                                   f"be used inside And/Not")
            r = self._rule_rx.get(e.name)
            if r is None:
                r = self._rule_rx[e.name] = self._rx(self.rules[e.name])
        elif isinstance(e, Special):
            r = self._rx(e.expand())
        else:
            raise GrammarError(f"not an IR expression: {e!r}")
        self._expr_rx[id(e)] = r
        self._keep.append(e)
        return r

    def _is_regular(self, e: Expr) -> bool:
        got = self._regular.get(id(e))
        if got is None:
            if isinstance(e, Ref):
                got = not self.cfg_rule[e.name]
            else:
                got = all(self._is_regular(c) for c in e.children())
            self._regular[id(e)] = got
            self._keep.append(e)
        return got

    def _term(self, e: Expr) -> int:
        return -1 - self._rx(e)

    # -- IR -> productions
    def _new_nt(self, name: str) -> int:
        self.nt_names.append(name)
        return len(self.nt_names) - 1

    def _nt_of(self, name: str) -> int:
        nt = self._nt.get(name)
        if nt is None:
            nt = self._nt[name] = self._new_nt(name)
            self._pending.append((nt, self.rules[name]))
        return nt

    def _add(self, lhs: int, syms: tuple[int, ...], rep: tuple[int, int, int | None] | None = None) -> None:
        self.lhs.append(lhs)
        self.syms.append(syms)
        self.rep.append(rep)

    def _body(self, nt: int, e: Expr) -> None:
        if self._is_regular(e):
            self._add(nt, (self._term(e),))
        elif isinstance(e, Alt):
            regular = [it for it in e.items if self._is_regular(it)]
            if regular:
                self._add(nt, (-1 - self.rx.alt([self._rx(it) for it in regular]),))
            for it in e.items:
                if not self._is_regular(it):
                    self._add(nt, self._seq_syms(it))
        elif isinstance(e, Repeat):
            self._add(nt, (), (self._sym(e.item), e.min, e.max))
        elif isinstance(e, And | Not):
            self._rx(e)  # raises: an operand reaches a recursive rule
            raise GrammarError("And/Not operands must be regular")  # pragma: no cover
        else:
            self._add(nt, self._seq_syms(e))

    def _seq_syms(self, e: Expr) -> tuple[int, ...]:
        if not isinstance(e, Seq):
            return (self._sym(e),)
        out: list[int] = []
        run: list[Expr] = []
        for it in [*e.items, None]:
            if it is not None and self._is_regular(it):
                run.append(it)
                continue
            if run:
                r = _EPS_ID
                for x in reversed(run):
                    r = self.rx.cat(self._rx(x), r)
                out.append(-1 - r)
                run = []
            if it is not None:
                out.append(self._sym(it))
        return tuple(out)

    def _sym(self, e: Expr) -> int:
        if self._is_regular(e):
            return self._term(e)
        if isinstance(e, Ref):
            return self._nt_of(e.name)
        nt = self._new_nt(f"<{len(self.nt_names)}>")
        self._body(nt, e)
        return nt

    # -- productivity, pruning, nullability
    def _finish(self) -> None:
        rx = self.rx
        n_nt = len(self.nt_names)
        productive = [False] * n_nt

        def sym_ok(s: int) -> bool:
            return productive[s] if s >= 0 else rx.nonempty(-1 - s)

        changed = True
        while changed:
            changed = False
            for p, a in enumerate(self.lhs):
                if productive[a]:
                    continue
                rep = self.rep[p]
                ok = (rep[1] == 0 or sym_ok(rep[0])) if rep else all(sym_ok(s) for s in self.syms[p])
                if ok:
                    productive[a] = changed = True
        # keep only productions whose every symbol is productive
        lhs: list[int] = []
        syms: list[tuple[int, ...]] = []
        reps: list[tuple[int, int, int | None] | None] = []
        for p, a in enumerate(self.lhs):
            rep = self.rep[p]
            if rep is not None and not sym_ok(rep[0]):
                if rep[1] > 0:
                    continue
                rep = None  # x{0,n} with an empty x: just the empty string
            elif rep is None and not all(sym_ok(s) for s in self.syms[p]):
                continue
            lhs.append(a)
            syms.append(self.syms[p] if rep is None else ())
            reps.append(rep)
        nullable = [False] * n_nt
        changed = True
        while changed:
            changed = False
            for p, a in enumerate(lhs):
                if nullable[a]:
                    continue
                rep = reps[p]
                if rep:
                    ok = rep[1] == 0 or nullable[rep[0]]
                else:
                    ok = all(nullable[s] if s >= 0 else rx.null[-1 - s] for s in syms[p])
                if ok:
                    nullable[a] = changed = True
        for p, rep in enumerate(reps):
            if rep is not None and nullable[rep[0]] and rep[1] > 0:
                reps[p] = (rep[0], 0, rep[2])  # x{m,n} == x{0,n} when x is nullable
        self.lhs, self.syms, self.rep = lhs, syms, reps
        self.nullable = nullable
        self.prods_of: list[list[int]] = [[] for _ in range(n_nt)]
        for p, a in enumerate(lhs):
            self.prods_of[a].append(p)
        # regex state of the terminal after each dot (-1: not a terminal)
        self.init_r = [(*(-1 - s if s < 0 else -1 for s in sy), -1) for sy in syms]

    # -- Earley
    def _item(self, p: int, dot: int, origin: int) -> tuple[int, int, int, int]:
        return (p, dot, origin, self.init_r[p][dot] if self.rep[p] is None else -1)

    def close(self, pos: int, seed: list, sets: list[_Set]) -> _Set:
        """Complete the Earley set at ``pos`` from the scanned items ``seed``."""
        rx_null = self.rx.null
        syms, reps, lhs, prods_of = self.syms, self.rep, self.lhs, self.prods_of
        nullable, init_r, start = self.nullable, self.init_r, self.start
        seen: set = set()
        agenda: list = []
        waiting: dict[int, list] = {}
        scan: list = []
        predicted: set[int] = set()
        accept = False

        def advance(p: int, dot: int, origin: int) -> None:
            rep = reps[p]
            if rep is None:
                it = (p, dot + 1, origin, init_r[p][dot + 1])
            else:
                nd = dot + 1
                if rep[2] is None and nd > rep[1]:
                    nd = rep[1]
                it = (p, nd, origin, -1)
            if it not in seen:
                seen.add(it)
                agenda.append(it)

        for it in seed:
            if it not in seen:
                seen.add(it)
                agenda.append(it)
        while agenda:
            it = agenda.pop()
            p, dot, origin, r = it
            rep = reps[p]
            if rep is None:
                s = syms[p]
                complete = dot == len(s)
                nxt = -1 if complete else s[dot]
                is_nt = not complete and nxt >= 0
            else:
                complete = dot >= rep[1]
                is_nt = rep[2] is None or dot < rep[2]
                nxt = rep[0]
            if complete:
                a = lhs[p]
                if a == start:
                    accept = True
                elif origin != pos:  # empty completions are handled when predicting (nullable)
                    for q, qd, qo in sets[origin].waiting.get(a, ()):
                        advance(q, qd, qo)
            if is_nt:
                lst = waiting.get(nxt)
                if lst is None:
                    waiting[nxt] = [(p, dot, origin)]
                else:
                    lst.append((p, dot, origin))
                if nxt not in predicted:
                    predicted.add(nxt)
                    for q in prods_of[nxt]:
                        new = (q, 0, pos, init_r[q][0] if reps[q] is None else -1)
                        if new not in seen:
                            seen.add(new)
                            agenda.append(new)
                # Aycock-Horspool: step over a nullable nonterminal at once (for a repeat the
                # stepped-over item is subsumed: the repeat is already complete, min being 0)
                if nullable[nxt] and rep is None:
                    advance(p, dot, origin)
            elif not complete and rep is None:
                if rx_null[r]:
                    advance(p, dot, origin)
                if r != _EPS_ID:
                    scan.append(it)
        return _Set(scan, waiting, accept, len(seen))

    def step(self, cur: _Set, b: int, sets: list[_Set]) -> _Set | None:
        """The Earley set after byte ``b`` (``sets`` ends with ``cur``), or None if none is viable."""
        rx = self.rx
        dmemo, boolean = rx.dmemo, rx.boolean
        seed = []
        for p, dot, origin, r in cur.scan:
            r2 = dmemo.get((r << 8) | b)
            if r2 is None:
                r2 = rx.deriv(r, b)
            if r2 == _NONE or (boolean[r2] and not rx.nonempty(r2)):
                continue
            seed.append((p, dot, origin, r2))
        if not seed:
            return None
        return self.close(len(sets), seed, sets)

    def run(self, sets: list[_Set], data: bytes) -> bool:
        """Feed ``data``, appending sets; on failure ``sets`` ends at the last viable set."""
        with _deep_recursion():
            for b in data:
                s = self.step(sets[-1], b, sets)
                if s is None:
                    return False
                sets.append(s)
        return True

    def sets_for(self, data: bytes) -> tuple[bool, list[_Set]]:
        """Earley sets for ``data`` (reusing recent calls' sets); whether all of it is viable."""
        if not self.initial.size:
            return False, [self.initial]
        best_k, best = 0, None
        for i, (d0, _) in enumerate(self.recent):
            k = _common_prefix(d0, data)
            if k > best_k or best is None:
                best_k, best = k, i
        if best is not None:
            entry = self.recent.pop(best)
            self.recent.insert(0, entry)
            sets = entry[1][: best_k + 1]
        else:
            sets = [self.initial]
        ok = self.run(sets, data[best_k:])
        self.recent.insert(0, (data[: len(sets) - 1], sets))
        del self.recent[8:]
        return ok, sets


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


_CACHE: dict[tuple[Grammar, int], _Compiled] = {}


def _compiled(grammar: Grammar, max_states: int) -> _Compiled:
    if not isinstance(grammar, Grammar):
        raise GrammarError(f"expected a Grammar, got {type(grammar).__name__}")
    key = (grammar, max_states)
    c = _CACHE.get(key)
    if c is None:
        c = _Compiled(grammar, max_states)
        if len(_CACHE) >= 32:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = c
    return c


def _as_bytes(data: bytes | bytearray | memoryview | int) -> bytes:
    if isinstance(data, int):
        if not 0 <= data <= 255:
            raise ValueError(f"byte value out of range: {data}")
        return bytes((data,))
    return bytes(data)


# ----------------------------------------------------------------------------- public API


class Recognizer:
    """Incremental recognizer: feed bytes, ask whether the input is accepted or still viable."""

    __slots__ = ("_c", "_sets")

    def __init__(self, grammar: Grammar, *, max_states: int = MAX_DERIVATIVE_STATES):
        self._c = _compiled(grammar, max_states)
        self._sets = [self._c.initial]

    def feed(self, data: bytes | bytearray | memoryview | int) -> bool:
        """Consume ``data`` (bytes or one byte value). False, with the state unchanged, if the
        input would no longer be a viable prefix."""
        data = _as_bytes(data)
        n = len(self._sets)
        try:
            ok = self._c.run(self._sets, data)
        except BaseException:
            del self._sets[n:]
            raise
        if not ok:
            del self._sets[n:]
            return False
        return self.viable()

    def copy(self) -> Recognizer:
        """An independent recognizer in the same state (cheap: Earley sets are shared)."""
        other = Recognizer.__new__(Recognizer)
        other._c = self._c
        other._sets = list(self._sets)
        return other

    def accepting(self) -> bool:
        """Whether the bytes fed so far form a string of the language."""
        return self._sets[-1].accept

    def viable(self) -> bool:
        """Whether the bytes fed so far can be extended to a string of the language."""
        return self._sets[-1].size > 0

    def next_bytes(self) -> set[int]:
        """The byte values that keep the input viable."""
        c, sets = self._c, self._sets
        with _deep_recursion():
            return {b for b in range(256) if c.step(sets[-1], b, sets) is not None}

    @property
    def position(self) -> int:
        """Number of bytes consumed."""
        return len(self._sets) - 1


def accepts(grammar: Grammar, data: bytes, *, max_states: int = MAX_DERIVATIVE_STATES) -> bool:
    """Whether ``data`` is in the language of ``grammar``'s root rule."""
    ok, sets = _compiled(grammar, max_states).sets_for(_as_bytes(data))
    return ok and sets[-1].accept


def prefix_ok(grammar: Grammar, data: bytes, *, max_states: int = MAX_DERIVATIVE_STATES) -> bool:
    """Whether ``data`` can be extended to a string in the language (a viable prefix)."""
    ok, sets = _compiled(grammar, max_states).sets_for(_as_bytes(data))
    return ok and sets[-1].size > 0
