"""Independent language oracles for tests: every short string, and the bounded set semantics of the IR."""

from __future__ import annotations

import itertools

from logitgate.grammar.ir import Alt, And, Bytes, ByteSet, Expr, Grammar, Not, Ref, Repeat, Seq, iter_refs


def strings(alphabet: bytes, max_len: int) -> list[bytes]:
    """Every string over ``alphabet`` of length 0..max_len."""
    out = [b""]
    for n in range(1, max_len + 1):
        out.extend(bytes(t) for t in itertools.product(alphabet, repeat=n))
    return out


def bounded_language(g: Grammar, alphabet: bytes, max_len: int) -> set[bytes]:
    """The strings of length <= max_len over ``alphabet`` in the language of ``g`` (set semantics)."""
    universe = set(strings(alphabet, max_len))
    rules = g.rules

    def concat(a: set[bytes], b: set[bytes]) -> set[bytes]:
        return {x + y for x in a for y in b if len(x) + len(y) <= max_len}

    def ev(e: Expr, env: dict[str, set[bytes]]) -> set[bytes]:
        if isinstance(e, Bytes):
            return {e.value} if e.value in universe else set()
        if isinstance(e, ByteSet):
            return {bytes([c]) for c in alphabet if e.contains(c)}
        if isinstance(e, Seq):
            out = {b""}
            for it in e.items:
                out = concat(out, ev(it, env))
            return out
        if isinstance(e, Alt):
            return set().union(*(ev(it, env) for it in e.items))
        if isinstance(e, Repeat):
            x = ev(e.item, env)
            power, out = {b""}, set()
            top = e.min + max_len + 1 if e.max is None else min(e.max, e.min + max_len + 1)
            for k in range(top + 1):
                if k >= e.min:
                    out |= power
                power = concat(power, x)
            return out
        if isinstance(e, And):
            sets = [ev(it, env) for it in e.items]
            return set.intersection(*sets)
        if isinstance(e, Not):
            return universe - ev(e.item, env)
        if isinstance(e, Ref):
            return env[e.name]
        raise AssertionError(e)

    # rules that reach no cycle get exact values first (And/Not operands only use those),
    # so the remaining fixpoint iteration is monotone
    exact: dict[str, set[bytes]] = {}
    order = [n for n in rules if _reaches_no_cycle(rules, n)]
    while order:
        for n in list(order):
            if all(r in exact for r in iter_refs(rules[n])):
                exact[n] = ev(rules[n], exact)
                order.remove(n)
    env = {n: exact.get(n, set()) for n in rules}
    while True:
        new = {n: exact[n] if n in exact else ev(e, env) for n, e in rules.items()}
        if new == env:
            return env[g.root]
        env = new


def _reaches_no_cycle(rules, name: str) -> bool:
    seen: set[str] = set()

    def dfs(n: str, stack: set[str]) -> bool:
        if n in stack:
            return False
        if n in seen:
            return True
        stack.add(n)
        ok = all(dfs(r, stack) for r in set(iter_refs(rules[n])))
        stack.discard(n)
        seen.add(n)
        return ok

    return dfs(name, set())
