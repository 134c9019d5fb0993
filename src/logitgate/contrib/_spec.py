"""Turn a request's constraint description into a compiled grammar (shared by the adapters).

A spec is a dict with exactly one of ``json`` (a schema: dict, JSON text or pydantic model),
``json_object`` (any JSON value), ``regex``, ``grammar`` (GBNF/EBNF text) or ``choices``
(list of strings); compile options go under ``options``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SPEC_KINDS", "compile_spec", "validate_spec"]

SPEC_KINDS = ("json", "json_object", "regex", "grammar", "choices")


def validate_spec(spec: Any) -> str:
    """The kind of a spec, or ValueError naming what is wrong."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"a logitgate constraint spec must be a dict, got {type(spec).__name__}")
    kinds = [k for k in SPEC_KINDS if k in spec]
    extra = set(spec) - set(SPEC_KINDS) - {"options"}
    if extra:
        raise ValueError(f"unknown constraint spec keys {sorted(extra)}; expected one of {SPEC_KINDS} (+ 'options')")
    if len(kinds) != 1:
        raise ValueError(f"a constraint spec needs exactly one of {SPEC_KINDS}, got {kinds or 'none'}")
    kind = kinds[0]
    value = spec[kind]
    if kind in ("regex", "grammar") and not isinstance(value, str):
        raise ValueError(f"'{kind}' must be a string, got {type(value).__name__}")
    if kind == "choices" and (isinstance(value, str) or not all(isinstance(c, str) for c in value)):
        raise ValueError("'choices' must be a list of strings")
    if "options" in spec and not isinstance(spec["options"], Mapping):
        raise ValueError("'options' must be a dict of compile options")
    return kind


def compile_spec(compiler: Any, spec: Mapping[str, Any]) -> Any:
    """Compile a validated spec with a :class:`~logitgate.engine.compiler.GrammarCompiler`."""
    kind = validate_spec(spec)
    opts = dict(spec.get("options", {}))
    value = spec[kind]
    if kind == "json":
        return compiler.compile_json_schema(value, **opts)
    if kind == "json_object":
        return compiler.compile_builtin_json(**opts)
    if kind == "regex":
        return compiler.compile_regex(value, **opts)
    if kind == "grammar":
        return compiler.compile_grammar(value)
    return compiler.compile_choices(list(value))
