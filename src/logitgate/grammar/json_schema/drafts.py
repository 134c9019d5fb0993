"""What a schema's draft leaves out: keywords that a later draft introduced.

Under the draft that ``$schema`` names, a keyword that draft does not have is an annotation, as that
draft's ``jsonschema`` validator treats it: ``if``/``then`` in a draft-04 schema constrain nothing.
:func:`without_later_keywords` takes them out of the document before it is converted, so the
converter and its validators see the keywords the draft has and no others. The schemas the
converter writes itself (the complement of ``items`` is an array that ``contains`` a failing item)
may use any keyword. :func:`validator_class` is the draft's validator that also knows those
keywords.

A schema without ``$schema`` is read as draft 2020-12 that also takes the draft-07 spellings
(``dependencies``, ``items`` as an array), so nothing is taken out of it, whichever draft wrote it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["LATER_KEYWORDS", "validator_class", "without_later_keywords"]

_SINCE_2019 = frozenset({"dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
                         "minContains", "maxContains", "$recursiveRef", "prefixItems", "$dynamicRef"})
#: the keywords each older draft does not have (introduced by a later one), by draft
LATER_KEYWORDS: dict[str, frozenset[str]] = {
    "draft4": _SINCE_2019 | {"const", "contains", "propertyNames", "if", "then", "else"},
    "draft6": _SINCE_2019 | {"if", "then", "else"},
    "draft7": _SINCE_2019,
    "draft2019-09": frozenset({"prefixItems", "$dynamicRef"}),
}

#: keywords whose value is a schema, a list of schemas, or a map of names to schemas (the places
#: a walk of the document looks for schemas; a schema anywhere else, reached only by a ``$ref``, keeps
#: every keyword: enforced, never wrongly dropped)
_SCHEMA = frozenset({"additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not", "if",
                     "then", "else", "unevaluatedProperties", "unevaluatedItems"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_MAP = frozenset({"properties", "patternProperties", "definitions", "$defs", "dependentSchemas",
                         "dependencies"})

#: the keywords the converter's own schemas use that some draft lacks (see complement.py): the
#: validators of every draft know them (:func:`validator_class`)
_WRITTEN = frozenset({"contains", "propertyNames", "const", "if"})


def without_later_keywords(doc: Any, draft: str) -> Any:
    """``doc`` without the keywords ``draft`` does not have (:data:`LATER_KEYWORDS`) in any of its
    schemas; parts with none of them are the document's own objects (``doc`` itself if nothing goes).

    >>> without_later_keywords({"properties": {"if": {"if": {"type": "string"}}}}, "draft4")
    {'properties': {'if': {}}}
    """
    drop = LATER_KEYWORDS.get(draft)
    return doc if not drop else _schema(doc, drop)


def _schema(s: Any, drop: frozenset[str]) -> Any:
    if type(s) is not dict:
        return s
    changed = False
    items = []
    for k, v in s.items():
        if k in drop:
            changed = True
            continue
        if k in _SCHEMA_MAP and type(v) is dict:
            nv: Any = _members(v, drop)
        elif k in _SCHEMA_LIST and type(v) is list:
            nv = _list(v, drop)
        elif k in _SCHEMA:
            nv = _schema(v, drop)
        else:
            nv = v
        changed = changed or nv is not v
        items.append((k, nv))
    return dict(items) if changed else s


def _members(m: dict, drop: frozenset[str]) -> dict:
    out = {k: _schema(v, drop) for k, v in m.items()}
    return out if any(out[k] is not v for k, v in m.items()) else m


def _list(xs: list, drop: frozenset[str]) -> list:
    out = [_schema(v, drop) for v in xs]
    return out if any(a is not b for a, b in zip(out, xs, strict=True)) else xs


@cache
def validator_class(draft: str) -> Any:
    """The ``jsonschema`` validator class of ``draft``, which also knows the keywords of a later draft
    it does not have (their checks as draft 2020-12 makes them): the converter's own schemas may
    use them. (A document reaches it without them: :func:`without_later_keywords`.)"""
    import jsonschema

    latest = jsonschema.Draft202012Validator
    base = {"draft4": jsonschema.Draft4Validator, "draft6": jsonschema.Draft6Validator,
            "draft7": jsonschema.Draft7Validator, "draft2019-09": jsonschema.Draft201909Validator}.get(draft)
    if base is None:
        return latest
    extra = {k: latest.VALIDATORS[k] for k in LATER_KEYWORDS[draft] & _WRITTEN if k in latest.VALIDATORS}
    return jsonschema.validators.extend(base, extra) if extra else base

