"""``logitgate check SCHEMA``: which JSON Schema keywords are enforced, ignored or refused.

Every keyword occurrence is listed with its JSON pointer: *enforced* (the grammar guarantees
it), *annotation* (no effect on validity: title, description, ...), *ignored* (unknown, or
listed in ``--ignore``), or *refused* (conversion fails on it; the error names it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .schema_options import add_format_argument, formats_of

__all__ = ["add_arguments", "classify_keywords", "run"]

ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "contentMediaType", "contentEncoding",
    "contentSchema", "id",
})
# keywords whose sub-schemas are walked: name -> "schema" | "map" | "list"
_SUBSCHEMAS = {
    "properties": "map", "patternProperties": "map", "$defs": "map", "definitions": "map",
    "dependentSchemas": "map", "additionalProperties": "schema", "propertyNames": "schema", "items": "schema_or_list",
    "additionalItems": "schema", "contains": "schema", "not": "schema", "if": "schema", "then": "schema",
    "else": "schema", "unevaluatedItems": "schema", "unevaluatedProperties": "schema",
    "prefixItems": "list", "allOf": "list", "anyOf": "list", "oneOf": "list",
}
ENFORCED = frozenset({
    "type", "const", "enum", "properties", "required", "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "items", "prefixItems", "additionalItems", "minItems",
    "maxItems", "contains", "minContains", "maxContains", "uniqueItems", "minLength", "maxLength", "pattern",
    "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "oneOf",
    "allOf", "not", "$ref", "$defs", "definitions", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
})


def _walk(schema: Any, pointer: str) -> Iterator[tuple[str, str]]:
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        yield key, pointer
        kind = _SUBSCHEMAS.get(key)
        sub = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
        if kind == "map" and isinstance(value, dict):
            for name, s in value.items():
                yield from _walk(s, f"{sub}/{name.replace('~', '~0').replace('/', '~1')}")
        elif kind in ("list", "schema_or_list") and isinstance(value, list):
            for i, s in enumerate(value):
                yield from _walk(s, f"{sub}/{i}")
        elif kind in ("schema", "schema_or_list"):
            yield from _walk(value, sub)


def classify_keywords(schema: Any, ignore: tuple[str, ...] = (), formats: dict[str, str] | None = None,
                      ) -> tuple[list[tuple[str, str, str]], str | None]:
    """``([(pointer, keyword, verdict)], refusal)``; refusal is the conversion error message, if any
    (``formats``: formats of the caller's own, see ``json_schema_grammar``)."""
    from ..errors import GrammarError, SchemaError
    from ..grammar.ir import Grammar

    refusal: str | None = None
    refused_at: tuple[str | None, str] | None = None
    try:
        Grammar.from_json_schema(schema, ignore_keywords=ignore, formats=formats)
    except SchemaError as e:
        refusal = str(e)
        refused_at = (e.keyword, e.pointer)
    except GrammarError as e:
        refusal = str(e)
    rows = []
    for key, pointer in _walk(schema, "#"):
        if refused_at is not None and key == refused_at[0] and pointer == refused_at[1]:
            verdict = "refused"
        elif key in ignore:
            verdict = "ignored (--ignore)"
        elif key in ANNOTATIONS:
            verdict = "annotation"
        elif key in ENFORCED:
            verdict = "enforced" if refusal is None else "enforced (if the schema converted)"
        else:
            verdict = "ignored (unknown keyword)"
        rows.append((pointer, key, verdict))
    return rows, refusal


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("schema", help="JSON Schema file ('-' reads stdin)")
    p.add_argument("--ignore", default="", help="comma-separated keywords to ignore instead of refusing")
    add_format_argument(p)


def run(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.schema == "-" else Path(args.schema).read_text()
    schema = json.loads(text)
    rows, refusal = classify_keywords(schema, tuple(k for k in args.ignore.split(",") if k), formats_of(args))
    width = max([len(p) for p, _, _ in rows] + [7])
    for pointer, key, verdict in rows:
        print(f"{pointer:<{width}}  {key:<24} {verdict}")
    if refusal:
        print(f"\nrefused: {refusal}")
        return 1
    print("\nthe schema converts: every enforced keyword is guaranteed by the grammar")
    return 0
