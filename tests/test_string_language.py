"""String-only schemas joined by ``anyOf``/``not``/``if`` are one regular language
(``Converter.string_language``), not distributed into alternatives of the whole conjunction.
Random such schemas over a few patterns and lengths decide random strings as ``jsonschema`` does."""

from __future__ import annotations

import json
import random
import time

import pytest

from engine_cases import small_vocab
from logitgate import GrammarCompiler, GrammarMatcher
from logitgate.errors import GrammarError
from logitgate.grammar.ir import Grammar

jsonschema = pytest.importorskip("jsonschema")

PATTERNS = ["a", "^b", "c$", "ab", "^[ab]+$", "[0-9]", "^.{2}$", "é", "\\\\"]
#: (no newline: ``jsonschema`` searches with Python's ``re``, whose ``$`` also matches before a
#: final newline, where ECMA-262's -- the schema's dialect, and the converter's -- does not)
ALPHABET = ["a", "b", "c", "0", "7", "é", "\\", "\t", "x"]


def _leaf(rng: random.Random) -> dict:
    kind = rng.randrange(5)
    if kind == 0:
        return {"pattern": rng.choice(PATTERNS)}
    if kind == 1:
        return {"minLength": rng.randrange(4)}
    if kind == 2:
        return {"maxLength": rng.randrange(1, 5)}
    if kind == 3:
        return {"type": rng.choice(["string", "integer", ["string", "null"]])}
    return {"pattern": rng.choice(PATTERNS), "maxLength": rng.randrange(2, 6)}


def _schema(rng: random.Random, depth: int) -> dict:
    if depth == 0 or rng.random() < 0.25:
        return _leaf(rng)
    kind = rng.randrange(5)
    subs = [_schema(rng, depth - 1) for _ in range(rng.randint(1, 3))]
    if kind == 0:
        return {"anyOf": subs}
    if kind == 1:
        return {"not": subs[0]}
    if kind == 2:
        return {"allOf": subs}
    if kind == 3:
        out = {"if": subs[0], "then": _schema(rng, depth - 1)}
        if rng.random() < 0.6:
            out["else"] = _schema(rng, depth - 1)
        return out
    return {**_leaf(rng), "anyOf": subs}


def _strings(rng: random.Random) -> list[str]:
    out = ["", "a", "ab", "b", "bc", "0", "aa", "é", "\\"]
    out += ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(7))) for _ in range(50)]
    return out


def test_random_string_combinations_decide_strings_as_jsonschema_does() -> None:
    rng = random.Random(11)
    checked = 0
    for case in range(50):
        schema = {"type": "string", **_schema(rng, 3)}
        strings = _strings(rng)
        info = small_vocab([json.dumps(s) for s in strings[:8]])
        grammar = Grammar.from_json_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        try:
            compiled = GrammarCompiler(info).compile_grammar(grammar)
        except GrammarError as e:  # an empty language: no string may be valid
            assert "empty" in str(e) and not any(validator.is_valid(t) for t in strings), (case, schema)
            checked += len(strings)
            continue
        for text in strings:
            m = GrammarMatcher(compiled)
            got = m.accept_string(json.dumps(text, ensure_ascii=False)) and m.can_terminate()
            assert got == validator.is_valid(text), (case, schema, text)
            checked += 1
        # (and the escaped spelling of the same string)
        m = GrammarMatcher(compiled)
        got = m.accept_string(json.dumps(strings[-1])) and m.can_terminate()
        assert got == validator.is_valid(strings[-1]), (case, schema, strings[-1])
    assert checked == 50 * 59


def test_nested_not_of_anyof_is_one_automaton_not_a_product_per_combination() -> None:
    """``not`` of ``anyOf`` of ``not`` of ``anyOf`` of patterns (MaskBench's ``Handwritten---allany``
    schemas): distributed, three of them made 81 alternatives, each a product of the length, the
    top pattern and four more, refused past the NFA limit after 4.7 s; as one language, one rule
    built in well under a second."""
    inner = [{"not": {"anyOf": [{"pattern": p} for p in trio]}}
             for trio in (("^....$", "ab1", "b12"), ("^\\w*$", "\\d\\d", "[ab]"), ("^\\w+", "1.*2", "ac"))]
    schema = {"type": "string", "pattern": "[aA][12].*[zZ]", "minLength": 10, "maxLength": 90,
              "anyOf": [{"not": {"anyOf": inner}}, {"not": {"anyOf": inner[1:]}}, {"not": {"anyOf": inner[:1]}}]}
    t = time.perf_counter()
    grammar = Grammar.from_json_schema(schema)
    assert len(grammar.rules) <= 12  # (the patterns' rules, the string: no rule per combination)
    compiled = GrammarCompiler(small_vocab(['"a1xxxxxxxz"'])).compile_grammar(grammar)
    assert time.perf_counter() - t < 30  # (a hang guard, not a speed test: it takes well under a second)
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(3)
    for _ in range(300):
        text = rng.choice(["a1", "A2", "a2"]) + "".join(rng.choice("ab12cz\\.Z ") for _ in range(rng.randrange(6, 30))) \
            + rng.choice(["z", "Z", ""])
        m = GrammarMatcher(compiled)
        got = m.accept_string(json.dumps(text)) and m.can_terminate()
        assert got == validator.is_valid(text), text


def test_a_string_keyword_the_language_cannot_hold_takes_the_general_path() -> None:
    """``enum``/``const``/``oneOf`` inside: the general path (distributed), whose answers are the same."""
    for schema in ({"type": "string", "anyOf": [{"enum": ["ab", "cd"]}, {"pattern": "^x"}]},
                   {"type": "string", "not": {"const": "ab"}, "maxLength": 3},
                   {"type": "string", "anyOf": [{"oneOf": [{"pattern": "a"}, {"pattern": "b"}]}, {"maxLength": 1}]},
                   # (a length counted in chunks where it stands alone: a branch of its own)
                   {"type": "string", "anyOf": [{"maxLength": 40_000}, {"pattern": "^x", "minLength": 2}]}):
        compiled = GrammarCompiler(small_vocab(['"abc"'])).compile_json_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        for text in ["", "a", "ab", "cd", "xy", "abc", "ba", "x", "xab"]:
            m = GrammarMatcher(compiled)
            assert (m.accept_string(json.dumps(text)) and m.can_terminate()) == validator.is_valid(text), (schema, text)


def _levels(n: int) -> dict:
    """``n`` levels of unions, each referring to the next one twice (and a pattern of its own)."""
    defs = {f"l{i}": {"anyOf": [{"$ref": f"#/$defs/l{i + 1}"}, {"$ref": f"#/$defs/l{i + 1}"}, {"pattern": f"x{i % 7}"}]}
            for i in range(n)}
    defs[f"l{n}"] = {"pattern": "^a"}
    return {"type": "string", "$defs": defs, "not": {"$ref": "#/$defs/l0"}}


def test_shared_and_self_referencing_unions_are_built_once() -> None:
    """A union that refers to the same schema from several branches, level after level, is made
    once per schema (40 levels of two references each: 2**40 walks unremembered) and decides
    strings as ``jsonschema`` does (on 10 levels: the validator walks every path); one that refers
    back to itself (which the validator recurses on without end) takes the general path, at once."""
    vocab = small_vocab(['"abx3q"'])
    for n in (40, 10):
        t = time.perf_counter()
        compiled = GrammarCompiler(vocab).compile_json_schema(_levels(n))
        assert time.perf_counter() - t < 60  # (a hang guard, not a speed test: well under a second)
    validator = jsonschema.Draft202012Validator(_levels(10))
    for text in ["", "a", "ba", "x3", "bx9", "q", "bq", "zz", "ax1"]:
        m = GrammarMatcher(compiled)
        assert (m.accept_string(json.dumps(text)) and m.can_terminate()) == validator.is_valid(text), (text,)
    cyclic = {"type": "string", "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"},
                                                         {"pattern": "q"}]}}, "not": {"$ref": "#/$defs/a"}}
    t = time.perf_counter()
    Grammar.from_json_schema(cyclic)
    assert time.perf_counter() - t < 60
