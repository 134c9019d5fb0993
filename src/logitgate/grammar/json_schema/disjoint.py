"""Keyword tables and a conservative disjointness test for ``oneOf`` branches."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .values import json_key

if TYPE_CHECKING:  # pragma: no cover
    from .converter import Converter, Node

__all__ = ["ANNOTATIONS", "KNOWN_KEYWORDS", "disjoint"]

ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$vocabulary",
    "contentEncoding", "contentMediaType", "contentSchema",
})

KNOWN_KEYWORDS = frozenset({
    "$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "dependentSchemas", "dependentRequired", "dependencies", "prefixItems", "items", "additionalItems",
    "contains", "minContains", "maxContains", "properties", "patternProperties", "additionalProperties",
    "propertyNames", "unevaluatedItems", "unevaluatedProperties", "type", "enum", "const", "multipleOf",
    "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties", "required", "format",
})


def _required(nodes: list[Node]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        r = n.schema.get("required")
        if isinstance(r, list):
            out.update(x for x in r if isinstance(x, str))
    return out


def _prop_values(cv: Converter, nodes: list[Node], name: str) -> list[Any] | None:
    sub: list[Node] = []
    found = False
    for n in nodes:
        props = n.schema.get("properties")
        if isinstance(props, dict) and name in props:
            found = True
            if not cv.expand(props[name], n.base, f"{n.ptr}/properties/{name}", sub):
                return []
    if not found:
        return None
    return cv.finite_values(sub)


def _forbids(cv: Converter, nodes: list[Node], name: str) -> bool:
    """Some node makes property ``name`` impossible (``false`` schema, no declared/pattern slot,
    or ``not: {"required": [name]}``)."""
    for n in nodes:
        s = n.schema
        inner = s.get("not")
        if (type(inner) is dict and inner.get("required") == [name] and "not" not in n.consumed
                and "not" not in cv.ignore and all(k == "required" or k in ANNOTATIONS for k in inner)):
            return True
        props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
        if props.get(name) is False:
            return True
        if name in props:
            continue
        pats = s.get("patternProperties") if isinstance(s.get("patternProperties"), dict) else {}
        try:
            matched = [p for p in pats if re.search(p, name)]
        except re.error:
            return False
        if any(pats[p] is False for p in matched):
            return True
        if not pats and s.get("additionalProperties") is False and "additionalProperties" not in cv.ignore:
            return True
    return False


def _branches_forbidden(cv: Converter, x: list[Node], y: list[Node]) -> bool:
    """``x`` has a ``oneOf``/``anyOf`` each of whose branches requires a property ``y`` forbids
    (one of two spellings of a key required, the other a schema without either)."""
    for n in x:
        for kw in ("oneOf", "anyOf"):
            branches = n.schema.get(kw)
            if (kw in n.consumed or kw in cv.ignore or type(branches) is not list or not branches
                    or "required" in cv.ignore):
                continue
            if all(type(br) is dict and type(req := br.get("required")) is list
                   and any(type(r) is str and _forbids(cv, y, r) for r in req) for br in branches):
                return True
    return False


def disjoint(cv: Converter, a: list[Node], b: list[Node]) -> bool:
    """True only if no JSON value satisfies both conjunctions (False: unknown or overlapping)."""
    for x, y in ((a, b), (b, a)):
        fx = cv.finite_values(x)
        if fx is not None:
            return not any(all(cv.validates(v, n) for n in y) for v in fx)
    common = cv.allowed_types(a) & cv.allowed_types(b)
    if not common:
        return True
    if common != {"object"}:
        return False
    for x, y in ((a, b), (b, a)):
        if any(_forbids(cv, y, p) for p in _required(x)) or _branches_forbidden(cv, x, y):
            return True
    for p in sorted(_required(a) & _required(b)):
        va, vb = _prop_values(cv, a, p), _prop_values(cv, b, p)
        if va is None or vb is None:
            continue
        if not ({json_key(v) for v in va} & {json_key(v) for v in vb}):
            return True
    return False
