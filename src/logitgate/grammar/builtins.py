"""Built-in grammars: any JSON value, and a fixed set of choices."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import GrammarError
from .ir import Grammar, literal_alt

__all__ = ["builtin_json_grammar", "choices_grammar"]


def builtin_json_grammar(*, whitespace: str = "flexible", max_whitespace: int | None = None) -> Grammar:
    """A grammar for any JSON value (RFC 8259), whitespace as in :func:`json_schema_grammar`."""
    from .json_schema.values import Lexer

    ref, rules = Lexer(whitespace, max_whitespace).any_value_rules("json")
    return Grammar({"root": ref, **rules}, root="root")


def choices_grammar(choices: Iterable[str | bytes]) -> Grammar:
    """A grammar matching exactly one of ``choices`` (str is UTF-8 encoded)."""
    values = []
    for c in choices:
        if not isinstance(c, str | bytes):
            raise GrammarError(f"choices must be str or bytes, got {type(c).__name__}")
        values.append(c.encode("utf-8") if isinstance(c, str) else c)
    if not values:
        raise GrammarError("choices_grammar needs at least one choice")
    return Grammar({"root": literal_alt(values)}, root="root")
