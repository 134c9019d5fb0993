"""Objects: declared properties in schema order, then extra properties.

Declared properties appear in the order the schema declares them (required ones must
appear, optional ones may be skipped); after them come extra properties, whose keys are
JSON strings that are *not* a declared name (in any spelling). Each extra key's value
follows the ``patternProperties`` whose patterns match the key, or
``additionalProperties`` when none does, exactly: the key space is split by which patterns
match. ``propertyNames`` restricts every key; ``min/maxProperties`` count members. The
complements of ``additionalProperties``, ``patternProperties`` and ``propertyNames`` ask for
some member (see :func:`.complement.some_member`): the members are then read once per set of
such requests met so far (up to :data:`MAX_SOME_MEMBER` of them on one object), a member's value
split where it meets a request only by failing a schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LimitExceededError, SchemaError
from ..ir import EMPTY, NOTHING, Expr, Ref, alt, and_, lit, not_, repeat, seq
from .complement import SomeMember, some_member
from .excluded import string_content_except
from .strings import any_string_content

if TYPE_CHECKING:  # pragma: no cover
    from .converter import Converter, Node

__all__ = ["build_object"]

MAX_PATTERNS = 6
#: requests for some member on one object at most (2**n copies of its rules)
MAX_SOME_MEMBER = 3
MAX_OBJECT_STATES = 20_000


def _nonneg(v: Any, kw: str, ptr: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != int(v):
        raise SchemaError(f"{kw} must be a non-negative integer", keyword=kw, pointer=ptr)
    return int(v)


def build_object(cv: Converter, nodes: list[Node]) -> Expr:
    ign = cv.ignore
    comps: list[tuple[dict, dict, Any, Node]] = []
    names: list[str] = []
    required: list[str] = []
    min_p, max_p = 0, None
    pnames: list[Node] = []
    wanted: list[tuple[SomeMember, Node]] = []  # requests for some member (see some_member)
    for n in nodes:
        s = n.schema
        if (sm := some_member(s)) is not None:
            if len(wanted) == MAX_SOME_MEMBER:
                cv.fail(f"more than {MAX_SOME_MEMBER} complements of object keywords on one object cannot be "
                        "enforced exactly", "not", n.ptr)
                continue
            wanted.append((sm, n))
        props = s.get("properties", {}) if "properties" not in ign else {}
        pats = s.get("patternProperties", {}) if "patternProperties" not in ign else {}
        addl = s.get("additionalProperties") if "additionalProperties" not in ign else None
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SchemaError("properties/patternProperties must be objects", keyword="properties", pointer=n.ptr)
        if props or pats or addl is not None:
            comps.append((props, pats, addl, n))
        if props:
            names = _merged_order(names, props)
        if "required" in s and "required" not in ign:
            req = s["required"]
            if not isinstance(req, list) or not all(isinstance(x, str) for x in req):
                raise SchemaError("required must be an array of strings", keyword="required", pointer=n.ptr)
            for r in req:
                if r not in required:
                    required.append(r)
        if "minProperties" in s and "minProperties" not in ign:
            min_p = max(min_p, _nonneg(s["minProperties"], "minProperties", n.ptr))
        if "maxProperties" in s and "maxProperties" not in ign:
            v = _nonneg(s["maxProperties"], "maxProperties", n.ptr)
            max_p = v if max_p is None else min(max_p, v)
        if "propertyNames" in s and "propertyNames" not in ign:
            pnames.append(n)
    for r in required:
        if r not in names:
            names.append(r)
    ws = cv.lex.ws

    # ---- declared members
    # (name, its member expr by the requests it meets, required)
    members: list[tuple[str, list[tuple[Expr, int]], bool]] = []
    for k in names:
        sub: list[Node] = []
        ok = True
        for props, pats, addl, n in comps:
            matched = False
            if k in props:
                ok = ok and cv.expand(props[k], n.base, f"{n.ptr}/properties/{_esc(k)}", sub)
                matched = True
            for p, psch in pats.items():
                if cv.py_search(p, k, "patternProperties", n.ptr):
                    ok = ok and cv.expand(psch, n.base, f"{n.ptr}/patternProperties/{_esc(p)}", sub)
                    matched = True
            if not matched and addl is not None:
                ok = ok and cv.expand(addl, n.base, f"{n.ptr}/additionalProperties", sub)
        for n in pnames:  # (a Node made by its own class: the converter module imports this one)
            if not cv.validates(k, type(n)(n.schema["propertyNames"], n.base, f"{n.ptr}/propertyNames")):
                ok = False
        is_req = k in required
        if not ok:
            if is_req:
                return NOTHING
            continue
        key = cv.lex.str_literal(k)
        variants = []  # (the member, by the requests it meets: one unless a request splits its value)
        for vsub, meets in _split_value(cv, sub, _key_meets(cv, k, wanted), wanted):
            val = cv.child_value(vsub)
            if not cv.is_empty(val):
                variants.append((seq(key, ws, lit(":"), ws, val), meets))
        if not variants:  # (no value: the member cannot be there)
            if is_req:
                return NOTHING
            continue
        members.append((k, variants, is_req))

    # ---- extra members
    parts = _extra_parts(cv, comps, names, pnames)
    extra = _alt_members(cv, [(key, cv.child_value(sub)) for key, sub in parts])

    n_req = sum(1 for m in members if m[2])
    if max_p is not None and (n_req > max_p or min_p > max_p):
        return NOTHING  # (no object: other types may still be valid)
    if extra is None:
        if max_p is not None and max_p >= len(members):
            max_p = None
        if min_p > len(members):
            return NOTHING
    regions = _split_extras(cv, parts, wanted) if wanted else None
    if max_p is None and min_p <= 1:
        return _members_in_order(cv, members, extra, min_p, regions, len(wanted))
    return _members_counted(cv, members, extra, min_p, max_p, regions, len(wanted))


def _key_meets(cv: Converter, key: str, wanted: list[tuple[SomeMember, Node]]) -> int:
    """The requests whose key test ``key`` passes (bit ``i`` for ``wanted[i]``)."""
    mask = 0
    for i, (sm, n) in enumerate(wanted):
        if sm.kind == "name":
            ok = not cv.validates(key, type(n)(sm.key_schema, n.base, f"{n.ptr}/not/propertyNames"))
        else:
            hit = any(cv.py_search(p, key, "patternProperties", n.ptr) for p in sm.patterns)
            ok = hit if sm.kind == "pattern" else key not in sm.names and not hit
        if ok:
            mask |= 1 << i
    return mask


def _key_regions(cv: Converter, wanted: list[tuple[SomeMember, Node]]) -> list[tuple[Expr, Expr]]:
    """Each request's key test as key content: (the keys that pass it, the others)."""
    out = []
    for sm, n in wanted:
        if sm.kind == "name":
            sub = cv.nodes_of(sm.key_schema, n.base, f"{n.ptr}/not/propertyNames")
            content = None if sub is None else _key_language(cv, sub, f"{n.ptr}/not/propertyNames")
            out.append((any_string_content(), NOTHING) if content is None else (
                and_(any_string_content(), not_(content)), content))
            continue
        regexes = [cv.regex(p, "patternProperties", f"{n.ptr}/not/patternProperties") for p in sm.patterns]
        regexes = [r for r in regexes if r is not None]  # (None: its refusal ignored)
        if sm.kind == "pattern":
            out.append((alt(*regexes), and_(any_string_content(), *(not_(r) for r in regexes))))
        else:
            out.append((and_(string_content_except(sm.names), *(not_(r) for r in regexes)),
                        alt(*(cv.lex.all_spellings(k) for k in sm.names), *regexes)))
    return out


def _split_value(cv: Converter, sub: list[Node], keyed: int,
                 wanted: list[tuple[SomeMember, Node]]) -> list[tuple[list[Node], int]]:
    """A member's value conjunction ``sub`` split by the requests it meets, of those its key
    passes (``keyed``): one asking for a value that fails a schema splits it in two."""
    out = [(sub, 0)]
    for i, (sm, n) in enumerate(wanted):
        if not keyed >> i & 1:
            continue
        if sm.fails is False:
            out = [(v, m | 1 << i) for v, m in out]
            continue
        ptr = f"{n.ptr}/not"  # (a Node made by its own class: the converter module imports this one)
        fails, holds = type(n)(cv.synthetic_not(sm.fails), n.base, ptr), type(n)(sm.fails, n.base, ptr)
        out = [w for v, m in out for w in (([*v, fails], m | 1 << i), ([*v, holds], m))]
    return out


def _split_extras(cv: Converter, parts: list[tuple[Expr, list[Node]]],
                  wanted: list[tuple[SomeMember, Node]]) -> dict[int, Expr]:
    """The extra members by the requests they meet (bit ``i`` for ``wanted[i]``): each key region
    (which key tests it passes), its value split by :func:`_split_value`."""
    regions = _key_regions(cv, wanted)
    out: dict[int, list[tuple[Expr, Expr]]] = {}
    for key, sub in parts:
        for keyed in range(1 << len(wanted)):
            region = and_(key, *[regions[i][0] if keyed >> i & 1 else regions[i][1] for i in range(len(wanted))])
            for vsub, meets in _split_value(cv, sub, keyed, wanted):
                val = cv.child_value(vsub)
                if not cv.is_empty(val):
                    out.setdefault(meets, []).append((region, val))
    return {meets: e for meets, kv in out.items() if (e := _alt_members(cv, kv)) is not None}


def _merged_order(names: list[str], props: dict) -> list[str]:
    """``names`` with the new names of ``props`` merged in, each list keeping its order: a new name
    goes before the next name of ``props`` that ``names`` holds already, or at the end. (A base
    schema's ``properties`` restated by a schema that also lists its own: the restated order holds,
    ``{"oneOf": [{"properties": {"a", "c"}}], "properties": {"a", "b", "c"}}`` is a, b, c.)"""
    have = set(names)
    before: dict[str, list[str]] = {}
    pending: list[str] = []
    for k in props:
        if k in have:
            if pending:
                before.setdefault(k, []).extend(pending)
                pending = []
        else:
            pending.append(k)
            have.add(k)
    if not before:
        return names + pending
    out: list[str] = []
    for k in names:
        out.extend(before.get(k, ()))
        out.append(k)
    return out + pending


def _members_in_order(cv: Converter, members: list[tuple[str, list[tuple[Expr, int]], bool]], extra: Expr | None,
                      min_p: int, regions: dict[int, Expr] | None = None, complements: int = 0) -> Expr:
    """The object ``{...}`` with declared members in order, then extra members (no maxProperties;
    minProperties at most 1); with ``complements`` asking for some member (``regions``: the extra
    members by those they meet, see :func:`_split_extras`), each must be met by some member.

    Rule ``k{j}`` is "member ``j`` or, when it is optional, what may come instead": member ``j``
    then what may follow it (the closing brace once no required member is left, or a comma and
    ``k{j+1}``), or ``k{j+1}``; past the last member come the extra members (rule ``x``). Every one of these
    rules is read last where it is read, so the engine builds them into the object's automaton
    once each (:func:`logitgate.engine.rtn._tail_merges`): a separator or a key prefix is read
    by one parser stack, and each member's automaton exists once, whichever member came before.
    Those read in one place only (``k0``, ``k{j}`` after a required member, and ``x`` after a
    required last member) are written in that place instead of named, where no request is asked:
    the same automaton, and one rule fewer for each of the compile's passes over the grammar's
    rules (together ~7 % of a typical MaskBench compile).
    With requests to meet, rules ``q{j}_{m}`` and ``y{m}`` are those read when only the requests
    of mask ``m`` are met so far (the closing brace only once all are).
    """
    ws = cv.lex.ws
    n = len(members)
    prefix = cv.new_name("o")
    full = (1 << complements) - 1  # (every request met)
    next_required = [n] * (n + 1)  # first required member at or after k (n: none)
    for k in range(n - 1, -1, -1):
        next_required[k] = k if members[k][2] else next_required[k + 1]
    close, comma = cv.lex.close_object, cv.lex.comma
    extras = None if extra is None else seq(extra, repeat(seq(comma, extra), 0, None), close)
    # (without requests every member has one variant: a rule after a required member is read from
    # that member alone, and is written in place; the extra members are named after an optional one)
    if extras is not None and n and (complements or not members[-1][2]):
        cv.rules[f"{prefix}.x"] = extras
        extras = Ref(f"{prefix}.x")

    def extras_from(m: int) -> Expr | None:  # the extra members, requests ``m`` met before them
        return extras if m == full else Ref(f"{prefix}.y{m}") if regions else None

    if regions:  # (rules made here, not by a closure calling itself: that would be a reference cycle)
        for m in range(full):
            opts = []
            for r, member in regions.items():
                nxt = extras_from(m | r)
                after_it = [close] if m | r == full else []
                if nxt is not None:
                    after_it.append(seq(comma, nxt))
                opts.append(seq(member, alt(*after_it)))
            cv.rules[f"{prefix}.y{m}"] = alt(*opts)

    inlined: dict[int, Expr] = {}  # the bodies of rules ``k{j}`` written where they are read

    def from_(k: int, m: int) -> Expr | None:  # member k or a later one, or the extra members
        if k < n:                                # (None: nothing)
            body = inlined.get(k)  # (none with requests)
            return body if body is not None else Ref(f"{prefix}.k{k}" if m == full else f"{prefix}.q{k}_{m}")
        return extras_from(m)

    def after(k: int, first: bool, m: int) -> Expr:  # what may follow the opening brace or a member
        opts = [close] if m == full and next_required[k] >= n and not (first and min_p) else []
        nxt = from_(k, m)
        if nxt is not None:
            opts.append(seq(ws if first else comma, nxt))
        return alt(*opts)

    for m in range(full + 1):
        for j in range(n - 1, -1, -1):  # (last first: a rule written where it is read is made before)
            _, variants, required = members[j]
            opts = [seq(member, after(j + 1, False, m | meets)) for member, meets in variants]
            skip = None if required else from_(j + 1, m)
            if skip is not None:
                opts.append(skip)
            if not complements and (j == 0 or members[j - 1][2]):  # (read in one place)
                inlined[j] = alt(*opts)
            else:
                cv.rules[f"{prefix}.k{j}" if m == full else f"{prefix}.q{j}_{m}"] = alt(*opts)
    return seq(lit("{"), after(0, True, 0))


def _members_counted(cv: Converter, members: list[tuple[str, list[tuple[Expr, int]], bool]], extra: Expr | None,
                     min_p: int, max_p: int | None, regions: dict[int, Expr] | None = None,
                     complements: int = 0) -> Expr:
    """The object ``{...}`` when members must be counted (``maxProperties``, ``minProperties`` > 1):
    one rule per (position, members so far), and per set of the ``complements`` asking for some
    member met so far where there are any (``regions``: see :func:`_members_in_order`)."""
    ws = cv.lex.ws
    sep_first = ws
    sep_more = cv.lex.comma
    cap = max(min_p, 1) if max_p is None else max_p
    full = (1 << complements) - 1  # (every request met)

    def sep(c: int) -> Expr:
        return sep_first if c == 0 else sep_more

    def tail(c: int) -> Expr:
        """Extra members after ``c`` members, every request met."""
        if extra is None:
            return EMPTY if c >= min_p else NOTHING
        lo = max(0, min_p - c)
        hi = None if max_p is None else max_p - c
        if hi is not None and hi < 0:
            return NOTHING
        if c == 0 and hi is not None and hi < 1:
            return EMPTY if lo == 0 else NOTHING
        more = repeat(seq(sep_more, extra), max(lo - 1, 0) if c == 0 else lo, None if hi is None else
                      (hi - 1 if c == 0 else hi))
        if c == 0:
            first = seq(sep_first, extra, more)
            return alt(EMPTY, first) if lo == 0 else first
        return more

    prefix = cv.new_name("o")
    made: dict[tuple[int, int, int], Expr] = {}
    pending: list[tuple[int, int, int]] = []

    def name(i: int, c: int, m: int) -> str:  # (i = -1: the extra members before every request is met)
        at = f"x_{c}" if i < 0 else f"{i}_{c}"
        return f"{prefix}.p{at}" if m == full else f"{prefix}.p{at}_q{m}"

    def state(i: int, c: int, m: int) -> Expr:
        if max_p is None:
            c = min(c, cap)
        if i == len(members):  # (the extra members; until every request is met, a rule per state)
            if m == full:
                return tail(c)
            if not regions:
                return NOTHING
            i = -1
        key = (i, c, m)
        if key not in made:
            if len(made) > MAX_OBJECT_STATES:
                raise LimitExceededError("object automaton too large", limit="max_object_states")
            made[key] = Ref(name(i, c, m))
            pending.append(key)
        return made[key]

    def body(i: int, c: int, m: int) -> Expr:
        opts: list[Expr] = []
        fits = max_p is None or c + 1 <= max_p
        if i < 0:  # an extra member, then more until every request is met
            if fits:
                opts.extend(seq(sep(c), member, state(len(members), c + 1, m | r))
                            for r, member in (regions or {}).items())
            return alt(*opts)
        _, variants, is_req = members[i]
        if fits:
            opts.extend(seq(sep(c), member, state(i + 1, c + 1, m | meets)) for member, meets in variants)
        if not is_req:
            opts.append(state(i + 1, c, m))
        return alt(*opts)

    start = state(0, 0, 0)
    while pending:
        i, c, m = pending.pop()
        cv.rules[name(i, c, m)] = body(i, c, m)
    return seq(lit("{"), start, ws, lit("}"))


def _esc(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _extra_parts(cv: Converter, comps: list, names: list[str], pnames: list[Node]) -> list[tuple[Expr, list[Node]]]:
    """The extra members as (key content, value conjunction) pairs, keys that are not declared
    names split by the patterns they match."""
    patterns: list[tuple[str, str]] = []  # (pattern, pointer)
    for _props, pats, _addl, n in comps:
        for p in pats:
            if p not in [q for q, _ in patterns]:
                patterns.append((p, n.ptr))
    if len(patterns) > MAX_PATTERNS:
        raise LimitExceededError(
            f"{len(patterns)} patternProperties patterns (more than {MAX_PATTERNS})", limit="max_patterns"
        )
    key_base: list[Expr] = [string_content_except(names)]
    for n in pnames:
        sub = cv.nodes_of(n.schema["propertyNames"], n.base, f"{n.ptr}/propertyNames")
        if sub is None:
            return []
        content = _key_language(cv, sub, f"{n.ptr}/propertyNames")
        if content is None:
            return []
        key_base.append(content)
    regexes: list[Expr | None] = []
    for p, ptr in patterns:
        regexes.append(cv.regex(p, "patternProperties", ptr))
    members: list[tuple[Expr, list[Node]]] = []
    for mask in range(1 << len(patterns)):
        chosen = {patterns[i][0] for i in range(len(patterns)) if mask >> i & 1}
        sub: list[Node] = []
        ok = True
        for _props, pats, addl, n in comps:
            matched = False
            for p, psch in pats.items():
                if p in chosen:
                    ok = ok and cv.expand(psch, n.base, f"{n.ptr}/patternProperties/{_esc(p)}", sub)
                    matched = True
            if not matched and addl is not None:
                ok = ok and cv.expand(addl, n.base, f"{n.ptr}/additionalProperties", sub)
        if not ok:
            continue
        parts = list(key_base)
        skip = False
        for i, r in enumerate(regexes):
            if r is None:  # pattern ignored: treat it as never matching
                if mask >> i & 1:
                    skip = True
                continue
            parts.append(r if mask >> i & 1 else not_(r))
        if skip:
            continue
        key = and_(*parts) if len(parts) > 1 else parts[0]
        members.append((cv.shared(key, "k"), sub))
    return members


def _alt_members(cv: Converter, parts: list[tuple[Expr, Expr]]) -> Expr | None:
    """``"key": value`` for each (key content, value), or None when there is none."""
    ws = cv.lex.ws
    if not parts:
        return None
    return alt(*(seq(lit('"'), key, lit('"'), ws, lit(":"), ws, val) for key, val in parts))


def _key_language(cv: Converter, nodes: list[Node], ptr: str) -> Expr | None:
    """String content allowed by a ``propertyNames`` schema (None: no string allowed)."""
    finite = cv.finite_values(nodes)
    if finite is not None:
        strs = [v for v in finite if isinstance(v, str)]
        if not strs:
            return None
        return alt(*(cv.lex.all_spellings(v) for v in strs))
    for n in nodes:
        for kw in ("anyOf", "oneOf", "not", "if"):
            if kw in n.schema:
                cv.fail(f"propertyNames with {kw} cannot be enforced exactly", "propertyNames", ptr)
                return any_string_content()
    if "string" not in cv.allowed_types(nodes):
        return None
    return cv.string_content(nodes)
