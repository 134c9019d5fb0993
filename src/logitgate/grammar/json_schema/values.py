"""JSON lexical pieces shared by the schema converter and the built-in JSON grammar.

Whitespace policy, literals of concrete JSON values (``const``/``enum``) and the rules of
an unconstrained JSON value.
"""

from __future__ import annotations

import functools
import json
from fractions import Fraction
from typing import Any

from ...errors import SchemaError
from ..ir import EMPTY, Expr, Ref, alt, byteset, lit, repeat, seq
from .numbers import TRUE, Range, number_expr
from .strings import any_string_content, encode_chars, string_literal

__all__ = ["Lexer", "json_equal", "json_key", "to_fraction"]

_WS_BYTES = (0x20, 0x09, 0x0A, 0x0D)


def to_fraction(x: Any) -> Fraction:
    """Exact value of a JSON number as written in the schema (floats by their shortest repr)."""
    if isinstance(x, bool):
        raise TypeError("boolean is not a number")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            raise ValueError("non-finite number")
        return Fraction(repr(x))
    raise TypeError(f"not a number: {x!r}")


def json_key(v: Any) -> Any:
    """A hashable key under which JSON Schema equality holds (1 == 1.0, true != 1)."""
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        return ("num", to_fraction(v))
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, list):
        return ("arr", tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return ("obj", frozenset((k, json_key(x)) for k, x in v.items()))
    raise TypeError(f"not a JSON value: {v!r}")


def json_equal(a: Any, b: Any) -> bool:
    return json_key(a) == json_key(b)


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v == int(v) else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise TypeError(f"not a JSON value: {v!r}")


@functools.lru_cache(maxsize=64)
def _layout(whitespace: str, max_bytes: int | None) -> tuple[Expr, Expr, Expr]:
    """``(ws, comma, close_object)`` of a whitespace policy: one node each per policy, shared by
    every grammar (identical nodes compare and hash at once wherever rules are looked up)."""
    ws = EMPTY if whitespace == "compact" else repeat(byteset(*_WS_BYTES), 0, max_bytes)
    return ws, seq(ws, lit(","), ws), seq(ws, lit("}"))


class Lexer:
    """Whitespace and literal spelling policy of one grammar."""

    def __init__(self, whitespace: str = "flexible", max_whitespace: int | None = None,
                 literal_spellings: str = "canonical"):
        if whitespace not in ("flexible", "compact"):
            raise SchemaError(f"whitespace must be 'flexible' or 'compact', not {whitespace!r}")
        if literal_spellings not in ("canonical", "all"):
            raise SchemaError(f"literal_spellings must be 'canonical' or 'all', not {literal_spellings!r}")
        if max_whitespace is not None and max_whitespace < 0:
            raise SchemaError("max_whitespace must be >= 0")
        self.literal_spellings = literal_spellings
        #: whitespace between tokens, a comma between members or items, the end of an object
        self.ws, self.comma, self.close_object = _layout(whitespace, max_whitespace)

    # -- strings
    def str_content_literal(self, s: str) -> Expr:
        """Content of a JSON string equal to ``s`` (without quotes)."""
        if self.literal_spellings == "all":
            return string_literal(s, all_spellings=True)
        if s.isascii():  # (most keys and enum values) one spelling
            return string_literal(s)
        parts: list[Expr] = []
        run: list[str] = []
        for ch in s:
            cp = ord(ch)
            if cp < 0x80:
                run.append(ch)
                continue
            if run:
                parts.append(string_literal("".join(run)))
                run = []
            ascii_form = json.dumps(ch)[1:-1]
            parts.append(alt(lit(ch.encode("utf-8", "surrogatepass")), lit(ascii_form)))
        if run:
            parts.append(string_literal("".join(run)))
        return seq(*parts)

    def str_literal(self, s: str) -> Expr:
        if s.isascii() and self.literal_spellings != "all":  # the quoted literal at once
            return lit(json.dumps(s))
        return seq(lit('"'), self.str_content_literal(s), lit('"'))

    def all_spellings(self, s: str) -> Expr:
        """Content of every JSON spelling of ``s`` (used to exclude names)."""
        return string_literal(s, all_spellings=True)

    # -- values
    def number_literal(self, v: Any, plain_integers: bool = False) -> Expr:
        """Every numeral of the value ``v`` (``plain_integers``: without fraction or exponent)."""
        f = to_fraction(v)
        e, rules = number_expr(Range(f, False, f, False), plain_integers=plain_integers)
        assert not rules
        return e

    def value_literal(self, v: Any) -> Expr:
        """Every accepted spelling of a JSON value equal to ``v`` (keys in ``v``'s order)."""
        if v is None:
            return lit("null")
        if v is True:
            return lit("true")
        if v is False:
            return lit("false")
        if isinstance(v, int | float):
            return self.number_literal(v)
        if isinstance(v, str):
            return self.str_literal(v)
        ws = self.ws
        if isinstance(v, list):
            if not v:
                return seq(lit("["), ws, lit("]"))
            items: list[Expr] = [lit("["), ws, self.value_literal(v[0])]
            for x in v[1:]:
                items += [self.comma, self.value_literal(x)]
            items += [ws, lit("]")]
            return seq(*items)
        if isinstance(v, dict):
            if not v:
                return seq(lit("{"), ws, lit("}"))
            items = [lit("{"), ws]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    items.append(self.comma)
                items += [self.str_literal(k), ws, lit(":"), ws, self.value_literal(x)]
            items += [ws, lit("}")]
            return seq(*items)
        raise SchemaError(f"not a JSON value: {v!r}")

    # -- any JSON value
    def any_value_rules(self, prefix: str = "json") -> tuple[Expr, dict[str, Expr]]:
        """``(Ref to the value rule, rules)`` for an unconstrained JSON value (built once per
        whitespace policy and prefix: most schemas allow extra properties somewhere, and equal
        rule bodies that are one object compare at once in the compiler's rule cache)."""
        key = (self.ws, prefix)
        hit = _ANY_VALUE_RULES.get(key)
        if hit is None:
            if len(_ANY_VALUE_RULES) >= 64:
                _ANY_VALUE_RULES.clear()
            hit = _ANY_VALUE_RULES[key] = self._any_value_rules(prefix)
        return hit[0], dict(hit[1])

    def _any_value_rules(self, prefix: str) -> tuple[Expr, dict[str, Expr]]:
        ws = self.ws
        v = Ref(f"{prefix}.value")
        string = seq(lit('"'), any_string_content(), lit('"'))
        number, nrules = number_expr(TRUE, rule_prefix=f"{prefix}.num")
        member = seq(string, ws, lit(":"), ws, v)
        obj = seq(lit("{"), ws, alt(EMPTY, seq(member, repeat(seq(self.comma, member)), ws)), lit("}"))
        arr = seq(lit("["), ws, alt(EMPTY, seq(v, repeat(seq(self.comma, v)), ws)), lit("]"))
        rules = {
            f"{prefix}.value": alt(
                Ref(f"{prefix}.object"), Ref(f"{prefix}.array"), Ref(f"{prefix}.string"), number,
                lit("true"), lit("false"), lit("null"),
            ),
            f"{prefix}.object": obj,
            f"{prefix}.array": arr,
            f"{prefix}.string": string,
        }
        rules.update(nrules)
        return v, rules


#: any_value_rules by (whitespace expression, prefix)
_ANY_VALUE_RULES: dict[tuple, tuple[Expr, dict[str, Expr]]] = {}




def any_char_expr() -> Expr:
    return encode_chars(((0, 0x10FFFF),))
