"""Arrays: ``prefixItems``/``items`` (and draft-07 ``items`` arrays + ``additionalItems``),
``min/maxItems``, ``contains`` with ``min/maxContains`` (several of them counted together) and
``uniqueItems`` where exact."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LimitExceededError, SchemaError
from ..ir import EMPTY, NOTHING, Expr, Ref, alt, lit, repeat, seq
from .values import json_key

if TYPE_CHECKING:  # pragma: no cover
    from .converter import Converter, Node

__all__ = ["build_array", "contains_bounds"]

MAX_ARRAY_STATES = 20_000
#: ``contains`` keywords of one array at most (each item is read in 2**n ways: which it matches)
MAX_CONTAINS = 3
MAX_UNIQUE_VALUES = 10


def contains_bounds(s: dict, draft: str, ignore: set[str] | frozenset[str], ptr: str) -> tuple[int, int | None]:
    """``(minContains, maxContains)`` of schema ``s`` (1 and None by default, and always before
    draft 2019-09, which has neither keyword); a malformed one raises :class:`SchemaError`."""
    lo = _nonneg(s.get("minContains", 1), "minContains", ptr) if "minContains" not in ignore else 1
    hi = s.get("maxContains") if "maxContains" not in ignore else None
    hi = None if hi is None else _nonneg(hi, "maxContains", ptr)
    return (1, None) if draft in ("draft4", "draft6", "draft7") else (lo, hi)


def _nonneg(v: Any, kw: str, ptr: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != int(v):
        raise SchemaError(f"{kw} must be a non-negative integer", keyword=kw, pointer=ptr)
    return int(v)


def build_array(cv: Converter, nodes: list[Node]) -> Expr:
    ign = cv.ignore
    comps: list[tuple[list, Any, Node, str, str]] = []  # (prefix, tail schema, node, prefix kw, tail kw)
    min_i, max_i = 0, None
    contains: list[tuple[Any, int, int | None, Node]] = []
    unique = False
    for n in nodes:
        s = n.schema
        prefix: list = []
        tail: Any = None
        pkw, tkw = "prefixItems", "items"
        items = s.get("items") if "items" not in ign else None
        if isinstance(items, list):  # draft-07 tuple form
            prefix, pkw = items, "items"
            tail = s.get("additionalItems") if "additionalItems" not in ign else None
            tkw = "additionalItems"
        else:
            if "prefixItems" in s and "prefixItems" not in ign:
                prefix = s["prefixItems"]
                if not isinstance(prefix, list):
                    raise SchemaError("prefixItems must be an array", keyword="prefixItems", pointer=n.ptr)
            tail = items
        if prefix or tail is not None:
            comps.append((prefix, tail, n, pkw, tkw))
        if "minItems" in s and "minItems" not in ign:
            min_i = max(min_i, _nonneg(s["minItems"], "minItems", n.ptr))
        if "maxItems" in s and "maxItems" not in ign:
            v = _nonneg(s["maxItems"], "maxItems", n.ptr)
            max_i = v if max_i is None else min(max_i, v)
        if "contains" in s and "contains" not in ign:
            lo, hi = contains_bounds(s, cv.draft, ign, n.ptr)
            if lo > 0 or hi is not None:
                contains.append((s["contains"], lo, hi, n))
        if s.get("uniqueItems") is True and "uniqueItems" not in ign:
            unique = True
    if max_i is not None and min_i > max_i:
        return NOTHING
    plen = max((len(c[0]) for c in comps), default=0)

    def elem_nodes(i: int) -> list[Node] | None:
        sub: list[Node] = []
        for prefix, tail, n, pkw, tkw in comps:
            if i < len(prefix):
                if not cv.expand(prefix[i], n.base, f"{n.ptr}/{pkw}/{i}", sub):
                    return None
            elif tail is not None and not cv.expand(tail, n.base, f"{n.ptr}/{tkw}", sub):
                return None
        return sub

    # the longest possible array: the first impossible position bounds it
    elems: list[list[Node] | None] = [elem_nodes(i) for i in range(plen + 1)]
    limit = max_i
    for i, e in enumerate(elems):
        if e is None:
            limit = i if limit is None else min(limit, i)
            break
    if limit is not None and min_i > limit:
        return NOTHING
    ws = cv.lex.ws
    sep_first, sep_more = ws, cv.lex.comma

    def sep(i: int) -> Expr:
        return sep_first if i == 0 else sep_more

    def en(i: int) -> list[Node] | None:
        return elems[min(i, plen)]

    if unique and (limit is None or limit > 1):
        return _unique_array(cv, nodes, comps, contains, plen, min_i, limit, en)

    if len(contains) > MAX_CONTAINS:
        cv.fail(f"more than {MAX_CONTAINS} 'contains' keywords cannot be combined exactly", "contains",
                contains[MAX_CONTAINS][3].ptr)
        contains = contains[:MAX_CONTAINS]

    evals: dict[int, Expr] = {}

    def ev(i: int) -> Expr:
        k = min(i, plen)
        if k not in evals:
            evals[k] = cv.child_value(en(k))
        return evals[k]

    if not contains:
        # plain: prefix positions, then a tail repetition; built from the last position back
        # (element values are made first to last, as they are named)
        end = plen if limit is None else min(plen, limit)
        values = [ev(i) for i in range(end)]
        if limit is not None and limit <= plen:  # no element at position ``end``
            rest = EMPTY if end >= min_i else NOTHING
        else:
            lo = max(0, min_i - end)
            hi = None if limit is None else limit - end
            e = ev(end)
            if end == 0:
                first = seq(sep_first, e, repeat(seq(sep_more, e), max(lo - 1, 0), None if hi is None else hi - 1))
                rest = alt(EMPTY, first) if lo == 0 else first
            else:
                rest = repeat(seq(sep_more, e), lo, hi)
        for i in range(end - 1, -1, -1):
            nxt = seq(sep(i), values[i], rest)
            rest = alt(EMPTY, nxt) if i >= min_i else nxt
        return seq(lit("["), rest, ws, lit("]"))

    # Several ``contains``: a state is (position, matches of each so far, each capped where its
    # count stops mattering); an item counts as a match of the contains in a chosen subset and
    # holds their schemas, and the negation of each other one with a maxContains (one without
    # may match uncounted: a count at least its minimum has a path that counts enough).
    for _, cmin, cmax, _ in contains:
        if cmax is not None and cmin > cmax:
            return NOTHING
    caps = [cmin if cmax is None else cmax + 1 for _, cmin, cmax, _ in contains]
    bounded = any(cmax is not None for _, _, cmax, _ in contains)
    icap = max(plen, min_i, 1) if limit is None else limit
    variants: dict[tuple[int, int], Expr] = {}

    def ev_with(i: int, chosen: int) -> Expr:  # the item at ``i`` matching exactly the ``chosen`` counted ones
        k = (min(i, plen), chosen)
        if k not in variants and chosen == 0 and not bounded:  # (no schema to hold or to fail)
            variants[k] = ev(i)
        if k not in variants:
            base = en(k[0])
            sub = None if base is None else list(base)
            for j, (cschema, _, cmax, cnode) in enumerate(contains):
                if sub is None:
                    break
                if chosen >> j & 1:
                    if not cv.expand(cschema, cnode.base, f"{cnode.ptr}/contains", sub):
                        sub = None
                elif cmax is not None:  # (a Node made by its own class: the converter module imports this one)
                    sub.append(type(cnode)(cv.synthetic_not(cschema), cnode.base, f"{cnode.ptr}/contains"))
            variants[k] = cv.child_value(sub)
        return variants[k]

    prefix = cv.new_name("a")
    made: dict[tuple[int, tuple[int, ...]], Expr] = {}
    pending: list[tuple[int, tuple[int, ...]]] = []

    def satisfied(counts: tuple[int, ...]) -> bool:
        return all(c >= cmin and (cmax is None or c <= cmax) for c, (_, cmin, cmax, _) in zip(counts, contains))

    def state(i: int, counts: tuple[int, ...]) -> Expr:
        counts = tuple(min(c, cap) for c, cap in zip(counts, caps))
        if limit is None:
            i = min(i, icap)
        if any(cmax is not None and c > cmax for c, (_, _, cmax, _) in zip(counts, contains)):
            return NOTHING
        if i >= plen and not bounded and satisfied(counts):
            # every contains satisfied, none bounded above: the rest is a plain tail
            lo = max(0, min_i - i)
            hi = None if limit is None else limit - i
            if hi is not None and hi < 0:
                return NOTHING
            return repeat(seq(sep_more, ev(i)), lo, hi) if i > 0 else alt(
                EMPTY if lo == 0 else NOTHING,
                seq(sep_first, ev(i), repeat(seq(sep_more, ev(i)), max(lo - 1, 0), None if hi is None else hi - 1))
                if hi is None or hi >= 1 else NOTHING,
            )
        key = (i, counts)
        if key not in made:
            if len(made) > MAX_ARRAY_STATES:
                raise LimitExceededError("array automaton too large", limit="max_array_states")
            made[key] = Ref(f"{prefix}.p{i}_{'_'.join(map(str, counts))}")
            pending.append(key)
        return made[key]

    def body(i: int, counts: tuple[int, ...]) -> Expr:
        opts: list[Expr] = []
        if i >= min_i and satisfied(counts):
            opts.append(EMPTY)
        if limit is None or i < limit:
            for chosen in range((1 << len(contains)) - 1, -1, -1):  # (the matching variants first)
                nxt = tuple(c + (chosen >> j & 1) for j, c in enumerate(counts))
                opts.append(seq(sep(i), ev_with(i, chosen), state(i + 1, nxt)))
        return alt(*opts)

    start = state(0, (0,) * len(contains))
    while pending:
        i, counts = pending.pop()
        cv.rules[f"{prefix}.p{i}_{'_'.join(map(str, counts))}"] = body(i, counts)
    return seq(lit("["), start, ws, lit("]"))


def _unique_array(cv: Converter, nodes: list, comps: list, contains: list, plen: int, min_i: int,
                  limit: int | None, en: Any) -> Expr:
    """``uniqueItems`` over a small finite set of element values: distinct sequences."""
    ptr = next((n.ptr for n in nodes if n.schema.get("uniqueItems") is True), nodes[0].ptr)
    if contains or plen:
        cv.fail("uniqueItems with prefixItems/contains cannot be enforced exactly", "uniqueItems", ptr)
        return build_plain_fallback(cv)
    values = cv.finite_values(en(0))
    if values is None or len(values) > MAX_UNIQUE_VALUES:
        cv.fail("uniqueItems is exact only for items restricted to a few constant values (ignore_keywords="
                "['uniqueItems'] drops it: repeated items are then allowed)", "uniqueItems", ptr)
        return build_plain_fallback(cv)
    keys = []
    vals = []
    for v in values:
        k = json_key(v)
        if k not in keys:
            keys.append(k)
            vals.append(v)
    lits = [cv.lex.value_literal(v) for v in vals]
    ws = cv.lex.ws
    prefix = cv.new_name("u")
    made: dict[int, Expr] = {}
    pending: list[int] = []
    maxlen = len(vals) if limit is None else min(limit, len(vals))
    if min_i > maxlen:
        return NOTHING

    def state(used: int) -> Expr:
        if used not in made:
            made[used] = Ref(f"{prefix}.u{used}")
            pending.append(used)
        return made[used]

    def body(used: int) -> Expr:
        count = bin(used).count("1")
        opts: list[Expr] = []
        if count >= min_i:
            opts.append(EMPTY)
        if count < maxlen:
            sep = ws if count == 0 else cv.lex.comma
            for j, e in enumerate(lits):
                if not used >> j & 1:
                    opts.append(seq(sep, e, state(used | 1 << j)))
        return alt(*opts)

    start = state(0)
    while pending:
        u = pending.pop()
        cv.rules[f"{prefix}.u{u}"] = body(u)
    return seq(lit("["), start, ws, lit("]"))


def build_plain_fallback(cv: Converter) -> Expr:  # only reached when uniqueItems is ignored
    raise SchemaError("uniqueItems cannot be enforced exactly", keyword="uniqueItems")
