"""Typed errors raised by logitgate.

Every error names what is wrong and where: a grammar error carries its line and
column, a regex error its offset in the pattern, a schema error the keyword and the
JSON pointer of the subschema that holds it.
"""

from __future__ import annotations

__all__ = [
    "EbnfSyntaxError",
    "GrammarError",
    "LimitExceededError",
    "LogitgateError",
    "MatcherError",
    "RegexError",
    "SchemaError",
    "TokenizerError",
    "UnsupportedFeatureError",
]


class LogitgateError(Exception):
    """Base class of every error logitgate raises on purpose."""


class TokenizerError(LogitgateError, ValueError):
    """A vocabulary could not be read or is inconsistent (ids, sizes, special tokens)."""


class GrammarError(LogitgateError, ValueError):
    """A grammar is malformed: unknown rule, empty language, left recursion, bad IR."""


class EbnfSyntaxError(GrammarError):
    """EBNF/GBNF text does not parse. ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, line: int, column: int, source_line: str | None = None):
        self.line = line
        self.column = column
        self.source_line = source_line
        text = f"{message} at line {line}, column {column}"
        if source_line is not None:
            text += f"\n    {source_line}\n    {' ' * (column - 1)}^"
        super().__init__(text)


class RegexError(GrammarError):
    """A regular expression does not parse or uses an unsupported feature.

    ``offset`` is the 0-based character offset into ``pattern``.
    """

    def __init__(self, message: str, pattern: str, offset: int):
        self.pattern = pattern
        self.offset = offset
        super().__init__(f"{message} at offset {offset} in regex {pattern!r}")


class SchemaError(GrammarError):
    """A JSON Schema cannot be enforced exactly (or is malformed).

    ``keyword`` is the schema keyword at fault and ``pointer`` the JSON pointer
    (RFC 6901) of the subschema holding it, e.g. ``#/properties/age``.
    """

    def __init__(self, message: str, keyword: str | None = None, pointer: str = "#"):
        self.keyword = keyword
        self.pointer = pointer
        where = f"keyword {keyword!r} at {pointer}" if keyword else f"at {pointer}"
        super().__init__(f"{message} ({where})")


class UnsupportedFeatureError(GrammarError):
    """A construct is recognised but not supported (lookaround, backreferences, ...)."""


class LimitExceededError(GrammarError):
    """An automaton or expansion exceeded a configured size limit.

    Raised instead of hanging or exhausting memory; ``limit`` names the limit.
    """

    def __init__(self, message: str, limit: str | None = None):
        self.limit = limit
        super().__init__(message if limit is None else f"{message} (limit: {limit})")


class MatcherError(LogitgateError, ValueError):
    """A matcher was asked for something its state cannot do (e.g. roll back further than kept)."""
