"""JSON Schema → grammar IR.

:func:`json_schema_grammar` compiles a schema (draft 2020-12, draft-07 spellings accepted)
into a :class:`~logitgate.grammar.ir.Grammar` over the bytes of JSON texts whose values
satisfy it. Properties are generated in declared order; every keyword that cannot be
enforced exactly raises :class:`~logitgate.errors.SchemaError` (keyword and JSON pointer)
unless listed in ``ignore_keywords``.

    >>> g = json_schema_grammar({"type": "object", "properties": {"a": {"type": "integer"}}})
    >>> g.root
    'root'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import SchemaError
from ..ir import NOTHING, Grammar
from .converter import Converter
from .formats import PYDANTIC_FORMATS

__all__ = ["PYDANTIC_FORMATS", "json_schema_grammar"]


def _pydantic(schema: Any) -> bool:
    """A pydantic model class or a ``TypeAdapter`` (``TypeAdapter(list[Item])``)."""
    if isinstance(schema, type):
        return hasattr(schema, "model_json_schema")
    return type(schema).__name__ == "TypeAdapter" and type(schema).__module__.startswith("pydantic")


def _load(schema: Any) -> Any:
    if _pydantic(schema):
        return schema.model_json_schema() if isinstance(schema, type) else schema.json_schema()
    if isinstance(schema, str | bytes):
        try:
            return json.loads(schema)
        except ValueError as exc:
            raise SchemaError(f"schema is not valid JSON: {exc}") from exc
    if isinstance(schema, dict | bool):
        return schema
    raise SchemaError("schema must be a dict, a JSON string, a bool, a pydantic model or a pydantic TypeAdapter, "
                      f"not {type(schema).__name__}")


def json_schema_grammar(
    schema: Any,
    *,
    whitespace: str = "flexible",
    max_whitespace: int | None = None,
    ignore_keywords: Iterable[str] = (),
    strict_format: bool = True,
    literal_spellings: str = "canonical",
    formats: Mapping[str, str] | None = None,
) -> Grammar:
    """A grammar for JSON texts valid under ``schema``.

    ``whitespace="compact"`` allows no whitespace between tokens; ``"flexible"`` allows JSON
    whitespace runs (at most ``max_whitespace`` bytes each when given). ``ignore_keywords``
    are dropped instead of refused (an ignored ``oneOf`` acts as ``anyOf``). With
    ``strict_format=False`` ``format`` is an annotation. ``literal_spellings="all"`` accepts
    every escape spelling of const/enum strings and keys (default: the ``json.dumps`` forms).
    ``formats`` defines formats of the caller's own, each a pattern (the regex dialect of
    ``pattern``) the whole string must match; they are asserted whatever ``strict_format`` says
    and replace a built-in format of the same name. A pydantic model (or ``TypeAdapter``) takes
    :data:`.formats.PYDANTIC_FORMATS` (``password``, ``uuid4``, ``ipvanyaddress``, ...: pydantic's
    languages for them) under them:

        >>> from logitgate.grammar.reference import accepts
        >>> g = json_schema_grammar({"format": "ticket"}, formats={"ticket": "[A-Z]{3}-[0-9]+"})
        >>> accepts(g, b'"ABC-42"'), accepts(g, b'"abc-42"'), accepts(g, b'7')
        (True, False, True)
    """
    root = _load(schema)
    if _pydantic(schema):  # (pydantic's own formats)
        formats = {**PYDANTIC_FORMATS, **(formats or {})}
    cv = Converter(
        root,
        whitespace=whitespace,
        max_whitespace=max_whitespace,
        ignore_keywords=tuple(ignore_keywords),
        strict_format=strict_format,
        literal_spellings=literal_spellings,
        formats=formats,
    )
    nodes = cv.nodes_of(cv.root, cv.refs.root_base, "#")
    body = NOTHING if nodes is None else cv.value(nodes)
    rules = {"root": body}
    rules.update(cv.rules)
    return Grammar(rules, root="root").reachable()
