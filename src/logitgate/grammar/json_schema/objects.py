"""Objects: declared properties in schema order, then extra properties.

Declared properties appear in the order the schema declares them (required ones must
appear, optional ones may be skipped); after them come extra properties, whose keys are
JSON strings that are *not* a declared name (in any spelling). Each extra key's value
follows the ``patternProperties`` whose patterns match the key, or
``additionalProperties`` when none does, exactly: the key space is split by which patterns
match. ``propertyNames`` restricts every key; ``min/maxProperties`` count members. The
complement of ``additionalProperties: false`` (see :func:`.complement.member_outside`) asks
for a member whose key is outside a set: the members are then read once per set of such
complements met so far (up to :data:`MAX_OUTSIDE` of them on one object).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LimitExceededError, SchemaError
from ..ir import EMPTY, NOTHING, Expr, Ref, alt, and_, lit, not_, repeat, seq
from .complement import member_outside
from .excluded import string_content_except
from .strings import any_string_content

if TYPE_CHECKING:  # pragma: no cover
    from .converter import Converter, Node

__all__ = ["build_object"]

MAX_PATTERNS = 6
#: complements of ``additionalProperties: false`` on one object at most (2**n copies of its rules)
MAX_OUTSIDE = 3
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
    outside: list[tuple[list[str], list[str], Node]] = []  # (names, patterns, node): see member_outside
    for n in nodes:
        s = n.schema
        if (mo := member_outside(s)) is not None:
            if len(outside) == MAX_OUTSIDE:
                cv.fail(f"more than {MAX_OUTSIDE} complements of 'additionalProperties' on one object cannot be "
                        "enforced exactly", "not", n.ptr)
                continue
            outside.append((*mo, n))
        props = s.get("properties", {}) if "properties" not in ign else {}
        pats = s.get("patternProperties", {}) if "patternProperties" not in ign else {}
        addl = s.get("additionalProperties") if "additionalProperties" not in ign else None
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SchemaError("properties/patternProperties must be objects", keyword="properties", pointer=n.ptr)
        if props or pats or addl is not None:
            comps.append((props, pats, addl, n))
        for k in props:
            if k not in names:
                names.append(k)
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
    members: list[tuple[str, Expr, bool, int]] = []  # (name, member expr, required, complements met)
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
        val = cv.child_value(sub)
        if cv.is_empty(val):  # (no value: the member cannot be there)
            if is_req:
                return NOTHING
            continue
        member = seq(cv.lex.str_literal(k), ws, lit(":"), ws, val)
        members.append((k, member, is_req, _outside_mask(cv, k, outside)))

    # ---- extra members
    parts = _extra_parts(cv, comps, names, pnames)
    extra = _alt_members(cv, parts)

    n_req = sum(1 for m in members if m[2])
    if max_p is not None and (n_req > max_p or min_p > max_p):
        return NOTHING  # (no object: other types may still be valid)
    if extra is None:
        if max_p is not None and max_p >= len(members):
            max_p = None
        if min_p > len(members):
            return NOTHING
    if outside:
        if max_p is not None or min_p > 1:
            cv.fail("the complement of 'additionalProperties' beside minProperties/maxProperties cannot be "
                    "enforced exactly", "not", outside[0][2].ptr)
        else:
            return _members_in_order(cv, members, extra, min_p, _split_extras(cv, parts, outside), len(outside))
    if max_p is None and min_p <= 1:
        return _members_in_order(cv, members, extra, min_p)
    return _members_counted(cv, members, extra, min_p, max_p)


def _outside_mask(cv: Converter, key: str, outside: list[tuple[list[str], list[str], Node]]) -> int:
    """The complements a member with ``key`` meets (bit ``i``: none of the names and patterns of
    ``outside[i]``)."""
    mask = 0
    for i, (names, patterns, n) in enumerate(outside):
        if key not in names and not any(cv.py_search(p, key, "patternProperties", n.ptr) for p in patterns):
            mask |= 1 << i
    return mask


def _split_extras(cv: Converter, parts: list[tuple[Expr, Expr]],
                  outside: list[tuple[list[str], list[str], Node]]) -> dict[int, Expr]:
    """The extra members by the complements their keys meet (bit ``i``: a key outside the names
    and patterns of ``outside[i]``), each set of complements that some key may meet."""
    keys: list[tuple[Expr, Expr]] = []  # (outside, inside) key content of each complement
    for names, patterns, n in outside:
        regexes = [cv.regex(p, "patternProperties", f"{n.ptr}/not/patternProperties") for p in patterns]
        regexes = [r for r in regexes if r is not None]  # (None: its refusal ignored)
        keys.append((and_(string_content_except(names), *(not_(r) for r in regexes)),
                     alt(*(cv.lex.all_spellings(k) for k in names), *regexes)))
    out: dict[int, Expr] = {}
    for mask in range(1 << len(outside)):
        region = [keys[i][0] if mask >> i & 1 else keys[i][1] for i in range(len(outside))]
        members = _alt_members(cv, [(and_(key, *region), val) for key, val in parts])
        if members is not None:
            out[mask] = members
    return out


def _members_in_order(cv: Converter, members: list[tuple[str, Expr, bool, int]], extra: Expr | None,
                      min_p: int, regions: dict[int, Expr] | None = None, complements: int = 0) -> Expr:
    """The object ``{...}`` with declared members in order, then extra members (no maxProperties;
    minProperties at most 1); with ``complements`` of ``additionalProperties`` to meet (``regions``:
    the extra members by those their keys meet, see :func:`_split_extras`), each must be met by
    some member.

    Rule ``k{j}`` is "member ``j`` or, when it is optional, what may come instead": member ``j``
    then what may follow it (the closing brace once no required member is left, or a comma and
    ``k{j+1}``), or ``k{j+1}``; past the last member come the extra members (rule ``x``). Every one of these
    rules is read last where it is read, so the engine builds them into the object's automaton
    once each (:func:`logitgate.engine.rtn._tail_merges`): a separator or a key prefix is read
    by one parser stack, and each member's automaton exists once, whichever member came before.
    With complements to meet, rules ``q{j}_{m}`` and ``y{m}`` are those read when only the
    complements of mask ``m`` are met so far (the closing brace only once all are).
    """
    ws = cv.lex.ws
    n = len(members)
    prefix = cv.new_name("o")
    full = (1 << complements) - 1  # (every complement met)
    next_required = [n] * (n + 1)  # first required member at or after k (n: none)
    for k in range(n - 1, -1, -1):
        next_required[k] = k if members[k][2] else next_required[k + 1]
    close, comma = cv.lex.close_object, cv.lex.comma
    extras = None if extra is None else seq(extra, repeat(seq(comma, extra), 0, None), close)
    if extras is not None and n:
        cv.rules[f"{prefix}.x"] = extras
        extras = Ref(f"{prefix}.x")

    def extras_from(m: int) -> Expr | None:  # the extra members, complements ``m`` met before them
        return extras if m == full else Ref(f"{prefix}.y{m}") if regions else None

    for m in range(full if regions else 0):  # (a closure calling itself would be a reference cycle)
        opts = []
        for r, member in (regions or {}).items():
            nxt = extras_from(m | r)
            after_it = [close] if m | r == full else []
            if nxt is not None:
                after_it.append(seq(comma, nxt))
            opts.append(seq(member, alt(*after_it)))
        cv.rules[f"{prefix}.y{m}"] = alt(*opts)

    def from_(k: int, m: int) -> Expr | None:  # member k or a later one, or the extra members
        if k < n:                                # (None: nothing)
            return Ref(f"{prefix}.k{k}" if m == full else f"{prefix}.q{k}_{m}")
        return extras_from(m)

    def after(k: int, first: bool, m: int) -> Expr:  # what may follow the opening brace or a member
        opts = [close] if m == full and next_required[k] >= n and not (first and min_p) else []
        nxt = from_(k, m)
        if nxt is not None:
            opts.append(seq(ws if first else comma, nxt))
        return alt(*opts)

    for m in range(full + 1):
        for j, (_, member, required, meets) in enumerate(members):
            opts = [seq(member, after(j + 1, False, m | meets & full))]
            skip = None if required else from_(j + 1, m)
            if skip is not None:
                opts.append(skip)
            cv.rules[f"{prefix}.k{j}" if m == full else f"{prefix}.q{j}_{m}"] = alt(*opts)
    return seq(lit("{"), after(0, True, 0))


def _members_counted(cv: Converter, members: list[tuple[str, Expr, bool, int]], extra: Expr | None,
                     min_p: int, max_p: int | None) -> Expr:
    """The object ``{...}`` when members must be counted (``maxProperties``, ``minProperties`` > 1):
    one rule per (position, members so far)."""
    ws = cv.lex.ws
    sep_first = ws
    sep_more = cv.lex.comma
    cap = max(min_p, 1) if max_p is None else max_p

    def tail(c: int) -> Expr:
        """Extra members after ``c`` members."""
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
    made: dict[tuple[int, int], Expr] = {}
    pending: list[tuple[int, int]] = []

    def state(i: int, c: int) -> Expr:
        if max_p is None:
            c = min(c, cap)
        if i == len(members):
            return tail(c)
        key = (i, c)
        if key not in made:
            if len(made) > MAX_OBJECT_STATES:
                raise LimitExceededError("object automaton too large", limit="max_object_states")
            made[key] = Ref(f"{prefix}.p{i}_{c}")
            pending.append(key)
        return made[key]

    def body(i: int, c: int) -> Expr:
        _, member, is_req, _ = members[i]
        opts: list[Expr] = []
        if max_p is None or c + 1 <= max_p:
            opts.append(seq(sep_first if c == 0 else sep_more, member, state(i + 1, c + 1)))
        if not is_req:
            opts.append(state(i + 1, c))
        return alt(*opts)

    start = state(0, 0)
    while pending:
        i, c = pending.pop()
        cv.rules[f"{prefix}.p{i}_{c}"] = body(i, c)
    return seq(lit("{"), start, ws, lit("}"))


def _esc(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _extra_parts(cv: Converter, comps: list, names: list[str], pnames: list[Node]) -> list[tuple[Expr, Expr]]:
    """The extra members as (key content, value) pairs, keys that are not declared names split by
    the patterns they match."""
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
    members: list[tuple[Expr, Expr]] = []
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
        members.append((cv.shared(key, "k"), cv.child_value(sub)))
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
