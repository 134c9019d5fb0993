"""The values that fail one keyword, spelled as schemas: the De Morgan form of a ``not``.

A value fails a conjunction of keywords exactly when it fails one of them, so the complement
of a schema is the union of its keywords' complements. Keywords that read one another are one
unit: ``additionalItems`` is read with a tuple ``items``, ``items`` after ``prefixItems``,
``minContains``/``maxContains`` with ``contains``, ``then``/``else`` with ``if``
(:data:`COMPANIONS`: nothing of their own). Each complement is a list of schemas the converter
builds like any other (they may hold ``not`` again, of the keyword's own subschemas);
:func:`keyword_complement` gives None where spelling it needs what JSON Schema cannot say (an
object member, or an array item past a position, failing a subschema).

The complements of ``additionalProperties``, ``patternProperties`` and ``propertyNames`` ask
for *some member* (a key outside the declared ones, or matching a pattern, with a value that
fails a schema; a key that fails ``propertyNames``), which no JSON Schema keyword says: each is
spelled ``{"type": "object", "not": {<the one keyword>}}`` with :data:`SOME_MEMBER` beside the
``not``, which the object builder enforces itself (:func:`some_member`) and ``jsonschema``
reads as the plain ``not`` it is.

Example::

    >>> keyword_complement("items", {"type": "string"}, {"items": {"type": "string"}}, "2020-12", set())
    [{'type': 'array', 'contains': {'not': {'type': 'string'}}}]
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, NamedTuple

from ...errors import SchemaError
from .arrays import contains_bounds

__all__ = ["ARRAY_KEYWORDS", "COMPANIONS", "MAX_ONE_OF_BRANCHES", "OBJECT_KEYWORDS", "SOME_MEMBER", "SomeMember",
           "keyword_complement", "some_member"]

#: beside ``not`` (the shapes :func:`some_member` reads): the object builder enforces that ``not``
SOME_MEMBER = "$logitgate:someMember"


class SomeMember(NamedTuple):
    """An object has a member whose key is of ``kind`` -- ``"outside"``: none of ``names`` and
    matching none of ``patterns``; ``"pattern"``: matching ``patterns[0]``; ``"name"``: failing
    ``key_schema`` -- and whose value fails ``fails`` (``False``: any value)."""

    kind: str
    names: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    key_schema: Any = None
    fails: Any = False


#: keywords that constrain objects only, and arrays only (any other value satisfies them)
OBJECT_KEYWORDS = frozenset({
    "properties", "patternProperties", "additionalProperties", "required", "propertyNames", "minProperties",
    "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"})
ARRAY_KEYWORDS = frozenset({
    "items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains", "minItems", "maxItems",
    "uniqueItems", "unevaluatedItems"})

#: keywords whose complement is read with another keyword's (see the module docstring)
COMPANIONS = frozenset({"then", "else", "minContains", "maxContains", "additionalItems"})
#: a ``oneOf`` of more branches is not complemented (its complement names every pair of them)
MAX_ONE_OF_BRANCHES = 4
_COUNT_FLIPS = {"minProperties": ("maxProperties", "object", -1), "maxProperties": ("minProperties", "object", 1),
                "minItems": ("maxItems", "array", -1), "maxItems": ("minItems", "array", 1)}


def keyword_complement(kw: str, v: Any, schema: dict, draft: str, ignore: set[str],
                       types: frozenset[str] | None = None) -> list[Any] | None:
    """The schemas whose union holds the values that fail keyword ``kw`` (value ``v``) of
    ``schema``, among values of ``types`` (JSON types, ``"fraction"`` for a number that is not
    an integer; None: all); ``[]`` when none fails it, None when it cannot be spelled (or ``v``
    is malformed: the keyword's own build reports that). Type, value, number and string keywords
    are not read here: their complement is one ``not`` of them all (see ``Converter.de_morgan``)."""
    if kw in COMPANIONS:
        return []
    if types is not None and ((kw in OBJECT_KEYWORDS and "object" not in types)
                              or (kw in ARRAY_KEYWORDS and "array" not in types)):
        return []
    if kw == "required":
        if not isinstance(v, list):
            return None
        return [{"type": "object", "properties": {r: False}} for r in v]
    if kw == "properties":
        if not isinstance(v, dict):
            return None
        return [{"type": "object", "required": [p], "properties": {p: {"not": ps}}}
                for p, ps in v.items() if ps is not True and ps != {}]
    if kw == "anyOf":
        return [{"allOf": [{"not": x} for x in v]}] if isinstance(v, list) else None
    if kw == "oneOf":
        # none of the branches, or two of them
        if not isinstance(v, list) or not 1 <= len(v) <= MAX_ONE_OF_BRANCHES:
            return None
        return [{"allOf": [{"not": x} for x in v]}, *({"allOf": [a, b]} for a, b in combinations(v, 2))]
    if kw == "not":
        return [v]
    if kw == "if":
        out = []
        if "then" in schema and "then" not in ignore:
            out.append({"allOf": [v, {"not": schema["then"]}]})
        if "else" in schema and "else" not in ignore:
            out.append({"allOf": [{"not": v}, {"not": schema["else"]}]})
        return out
    if kw in _COUNT_FLIPS:
        if not _count(v):
            return None
        flip, t, step = _COUNT_FLIPS[kw]
        return [] if v + step < 0 else [{"type": t, flip: v + step}]
    if kw in ("dependentRequired", "dependentSchemas", "dependencies"):
        return _dependencies(kw, v)
    if kw in ("items", "prefixItems"):
        return _items(kw, v, schema, ignore)
    if kw == "contains":
        return _contains(v, schema, draft, ignore)
    if kw == "uniqueItems":
        return [] if v is False else None
    if kw == "additionalProperties":
        return [] if v is True else _member_outside(schema, ignore, v)
    if kw == "patternProperties":  # (a member matching a pattern whose value fails its schema)
        if not isinstance(v, dict):
            return None
        return [_some({"patternProperties": {p: ps}}) for p, ps in v.items() if ps is not True and ps != {}]
    if kw == "propertyNames":  # (a key that fails it)
        if v is True or v == {}:
            return []
        return [{"type": "object", "minProperties": 1}] if v is False else [_some({"propertyNames": v})]
    return None


def _some(inner: dict) -> dict:
    return {"type": "object", "not": inner, SOME_MEMBER: True}


def _member_outside(schema: dict, ignore: set[str], v: Any) -> list[Any] | None:
    """Objects with a member whose key is none of ``schema``'s properties and matches none of its
    patterns, and whose value fails ``v`` (the complement of ``additionalProperties: v``)."""
    props = schema.get("properties", {}) if "properties" not in ignore else {}
    pats = schema.get("patternProperties", {}) if "patternProperties" not in ignore else {}
    if not isinstance(props, dict) or not isinstance(pats, dict):
        return None
    if not props and not pats and v is False:
        return [{"type": "object", "minProperties": 1}]
    return [_some({"properties": dict.fromkeys(props, True), "patternProperties": dict.fromkeys(pats, True),
                   "additionalProperties": v})]


def some_member(schema: Any) -> SomeMember | None:
    """The member ``schema`` asks for when it is spelled as :func:`keyword_complement` spells
    "some member" (:data:`SOME_MEMBER` beside a ``not`` of one object keyword), else None."""
    if type(schema) is not dict or schema.get(SOME_MEMBER) is not True:
        return None
    inner = schema.get("not")
    if type(inner) is not dict:
        return None
    keys = set(inner)
    if keys == {"properties", "patternProperties", "additionalProperties"}:
        props, pats = inner["properties"], inner["patternProperties"]
        if type(props) is dict and type(pats) is dict and all(v is True for v in (*props.values(), *pats.values())):
            return SomeMember("outside", tuple(props), tuple(pats), fails=inner["additionalProperties"])
    elif keys == {"patternProperties"}:
        pats = inner["patternProperties"]
        if type(pats) is dict and len(pats) == 1:
            ((p, ps),) = pats.items()
            return SomeMember("pattern", patterns=(p,), fails=ps)
    elif keys == {"propertyNames"}:
        return SomeMember("name", key_schema=inner["propertyNames"])
    return None


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _dependencies(kw: str, v: Any) -> list[Any] | None:
    """Present with a dependency missing, or present and failing the dependent schema."""
    if not isinstance(v, dict):
        return None
    out: list[Any] = []
    for name, dep in v.items():
        if isinstance(dep, list) and kw != "dependentSchemas":
            out.extend({"type": "object", "required": [name], "properties": {r: False}} for r in dep)
        elif kw != "dependentRequired" and not isinstance(dep, list):
            if dep is not True:
                out.append({"type": "object", "required": [name], "not": dep})
        else:
            return None
    return out


def _items(kw: str, v: Any, schema: dict, ignore: set[str]) -> list[Any] | None:
    """A position of a tuple (``prefixItems``, or ``items`` as a list) failing its schema, or an
    item after the tuple failing the tail schema (``items``, or ``additionalItems`` after a list)."""
    if isinstance(v, list):  # a tuple: every position, then the tail read with it
        out = [{"type": "array", "minItems": i + 1, kw: [True] * i + [{"not": s}]}
               for i, s in enumerate(v) if s is not True]
        if kw == "prefixItems":
            return out  # (items, the tail, is complemented under its own key)
        tail = schema.get("additionalItems", True) if "additionalItems" not in ignore else True
        return _tail(out, len(v), tail)
    if kw == "prefixItems":
        return None  # malformed: the array's own build says so
    prefix = schema.get("prefixItems") if "prefixItems" not in ignore else None
    return _tail([], len(prefix) if isinstance(prefix, list) else 0, v)


def _tail(out: list[Any], start: int, tail: Any) -> list[Any] | None:
    """``out`` and the arrays whose items from ``start`` on fail ``tail`` (None: not spelled,
    for a schema past a tuple -- an item at some position past it)."""
    if tail is True:
        return out
    if tail is False:
        return [*out, {"type": "array", "minItems": start + 1}]
    if start == 0:
        return [*out, {"type": "array", "contains": {"not": tail}}]
    return None


def _contains(v: Any, schema: dict, draft: str, ignore: set[str]) -> list[Any] | None:
    """Fewer matching items than ``minContains`` (1 by default), or more than ``maxContains``."""
    try:
        lo, hi = contains_bounds(schema, draft, ignore, "#")
    except SchemaError:
        return None  # (malformed: the array's own build says so)
    out: list[Any] = []
    if lo == 1:
        out.append({"type": "array", "items": {"not": v}})
    elif lo > 1:
        out.append({"type": "array", "contains": v, "minContains": 0, "maxContains": lo - 1})
    if hi is not None:
        out.append({"type": "array", "contains": v, "minContains": hi + 1})
    return out
