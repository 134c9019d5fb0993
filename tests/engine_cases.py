"""Grammars, sample strings and small vocabularies shared by the engine tests."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from logitgate.grammar.ir import Grammar, Ref, alt, and_, byteset, lit, not_, repeat, seq
from logitgate.grammar.utf8 import codepoint_ranges_expr
from logitgate.tokenizer import TokenizerInfo


@dataclass
class Case:
    name: str
    grammar: Callable[[], Grammar]
    samples: list[str]


def arithmetic() -> Grammar:
    digits = repeat(byteset((48, 57)), 1, None)
    return Grammar({
        "root": Ref("expr"),
        "expr": seq(Ref("term"), repeat(seq(byteset(ord("+"), ord("-")), Ref("term")))),
        "term": seq(Ref("factor"), repeat(seq(byteset(ord("*"), ord("/")), Ref("factor")))),
        "factor": alt(seq(digits, repeat(seq(lit("."), digits), 0, 1)), seq(lit("("), Ref("expr"), lit(")")),
                      seq(lit("-"), Ref("factor"))),
    })


def json_like() -> Grammar:
    ch = codepoint_ranges_expr([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)])
    hexd = byteset((48, 57), (65, 70), (97, 102))
    esc = seq(lit("\\"), alt(byteset(*[ord(c) for c in '"\\/bfnrt']), seq(lit("u"), repeat(hexd, 4, 4))))
    string = seq(lit('"'), repeat(alt(ch, esc)), lit('"'))
    digits = repeat(byteset((48, 57)), 1, None)
    number = seq(repeat(lit("-"), 0, 1), alt(lit("0"), seq(byteset((49, 57)), repeat(byteset((48, 57))))),
                 repeat(seq(lit("."), digits), 0, 1),
                 repeat(seq(byteset(ord("e"), ord("E")), repeat(byteset(ord("+"), ord("-")), 0, 1), digits), 0, 1))
    w = Ref("ws")
    member = seq(Ref("string"), w, lit(":"), w, Ref("value"), w)
    obj = seq(lit("{"), w, repeat(seq(member, repeat(seq(lit(","), w, member))), 0, 1), lit("}"))
    arr = seq(lit("["), w, repeat(seq(Ref("value"), w, repeat(seq(lit(","), w, Ref("value"), w))), 0, 1), lit("]"))
    value = alt(Ref("object"), Ref("array"), Ref("string"), Ref("number"), lit("true"), lit("false"), lit("null"))
    return Grammar({"root": seq(w, Ref("value"), w), "value": value, "object": obj, "array": arr,
                    "string": string, "number": number, "ws": repeat(byteset(32, 9, 10, 13), 0, 20)})


def identifiers_not_keywords() -> Grammar:
    ident = and_(repeat(byteset((97, 122)), 1, 8), not_(alt(lit("if"), lit("while"), lit("in"))))
    return Grammar({"root": seq(Ref("id"), repeat(seq(lit(", "), Ref("id")), 0, 4)), "id": ident})


def bounded_repeats() -> Grammar:
    return Grammar({"root": seq(repeat(alt(lit("ab"), lit("a")), 2, 5), repeat(lit("c"), 0, 3),
                                repeat(seq(lit("x"), repeat(lit("y"), 1, 2)), 1, 3))})


def nullable_mutual() -> Grammar:
    return Grammar({
        "root": seq(Ref("a"), Ref("b"), lit(";")),
        "a": alt(seq(lit("a"), Ref("a")), lit("")),
        "b": alt(seq(lit("b"), Ref("root")), lit("")),
    })


def unicode_classes() -> Grammar:
    greek = codepoint_ranges_expr([(0x3B1, 0x3C9)])
    emoji = codepoint_ranges_expr([(0x1F600, 0x1F64F)])
    return Grammar({"root": seq(repeat(greek, 1, None), repeat(alt(lit(" "), emoji), 0, 3), lit("!"))})


def tags() -> Grammar:
    name = repeat(byteset((97, 122)), 1, 3)
    return Grammar({"root": Ref("el"),
                    "el": alt(seq(lit("<"), name, lit(">"), repeat(alt(Ref("el"), repeat(byteset((48, 57)), 1, 2))),
                                  lit("</"), name, lit(">")), lit("<br/>"))})


def nullable_counted_string() -> Grammar:
    """``null`` or a JSON string of 1..4 characters as one automaton built directly
    (``lengths.or_null``: its bytes ``n``, ``u``, ``l`` and the quote in classes of their own)."""
    from logitgate.grammar.json_schema.lengths import counted_content, or_null, string_value

    value = or_null(string_value(counted_content(1, 4)))
    return Grammar({"root": seq(value, repeat(seq(lit(","), value)), lit(";"))})


def long_counted_strings() -> Grammar:
    """Counted strings longer than the vocabulary's longest token (6 bytes): layers far from both
    bounds share their masks (``RTN.mask_representative``) -- 9..24 characters (layers 0-2 as
    layer 0, 9-17 as layer 9), and 8 or more (layer 1 as layer 0), each its own rule."""
    from logitgate.grammar.json_schema.lengths import counted_content, string_value

    return Grammar({"root": seq(Ref("a"), lit(","), Ref("b"), lit(";")),
                    "a": string_value(counted_content(9, 24)), "b": string_value(counted_content(8, None))})


def short_counted_strings() -> Grammar:
    """Counted strings shorter than the vocabulary's longest token, each its own rule: every layer is
    near a bound, where a character boundary's mask takes the string tokens by their length
    (``RTN.counted_chars_left``), the quote and what follows it walked and resolved."""
    from logitgate.grammar.json_schema.lengths import counted_content, or_null, string_value

    a = or_null(string_value(counted_content(0, 3)))
    return Grammar({"root": seq(Ref("a"), lit(";"), Ref("a"), lit(","), Ref("b"), lit(";")), "a": a,
                    "b": string_value(counted_content(2, 5))})


def tail_chains() -> Grammar:
    """Rules only ever read last by their callers: merged into one automaton with the rule that
    reads them (``rtn._tail_merges``) -- a cycle of two (``more``/``more2``), a loop of one."""
    return Grammar({
        "root": seq(Ref("list"), lit(";")),
        "list": seq(lit("["), alt(lit("]"), seq(Ref("item"), Ref("more")))),
        "more": alt(lit("]"), seq(lit(","), Ref("item"), Ref("more2"))),
        "more2": alt(lit("]"), seq(lit(";"), Ref("item"), Ref("more"))),
        "item": alt(lit("x"), seq(lit("("), Ref("list"), lit(")")), seq(lit("<"), Ref("loop"))),
        "loop": alt(lit(">"), seq(byteset((97, 122)), Ref("loop"))),
    })


def many_optional_members() -> Grammar:
    """An object with twenty optional members, two of them required (each separator offers every
    key up to the next required one)."""
    props = {f"k{i}": {"type": "integer"} for i in range(20)}
    return Grammar.from_json_schema({"type": "object", "properties": props, "required": ["k3", "k12"],
                                     "additionalProperties": {"type": "boolean"}})


def counted_patterns() -> Grammar:
    """Strings of a counted length that match a pattern or format, laid out in layers
    (:mod:`logitgate.grammar.json_schema.pattern_lengths`): runs of alike layers far from the bounds
    (masks shared), odd and even lengths apart below a minimum, a vacuous bound, a search pattern."""
    return Grammar.from_json_schema({
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^[a-c]+$", "minLength": 2, "maxLength": 30},
            "b": {"type": "string", "pattern": "^(ab)*x?$", "minLength": 9, "maxLength": 25},
            "c": {"type": "string", "format": "date", "maxLength": 100},
            "d": {"type": ["string", "null"], "pattern": "[0-9]{2}", "maxLength": 20},
        },
        "required": ["a", "b"], "additionalProperties": False})


def called_counted_strings() -> Grammar:
    """Counted strings large enough to be called where they are an alternative of another type
    (:func:`logitgate.engine.rtn._large_built`): ``anyOf`` with ``null``, a type list, with a pattern."""
    return Grammar.from_json_schema({
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "null"}]},
            "b": {"type": ["string", "integer"], "pattern": "^[a-z ]+$", "maxLength": 90},
        },
        "required": ["a"], "additionalProperties": False})


def ambiguous_closers() -> Grammar:
    """A closer that may end the inner or the outer of two nested rules (``a a x z``: two stacks,
    one state with two parents)."""
    return Grammar({"root": seq(Ref("a"), lit(";")),
                    "a": alt(seq(lit("a"), Ref("a"), repeat(lit("z"), 0, 1)), lit("x"))})


CASES = [
    Case("arithmetic", arithmetic, ["12+(3.5*-4)/7", "((1))", "-(2-3)*10.25"]),
    Case("json_like", json_like, ['{"a": [1, 2.5e3, {"b": null}], "c": "x\\"y\\u00e9 ✓"}', '[true,false, "ünï"]',
                                  ' {"key":"value"} ']),
    Case("identifiers_not_keywords", identifiers_not_keywords, ["iff, whilex, a, inn", "foo, bar"]),
    Case("bounded_repeats", bounded_repeats, ["ababaccxyxyy", "aaxy"]),
    Case("nullable_mutual", nullable_mutual, ["aab;;", "b;;", ";"]),
    Case("unicode_classes", unicode_classes, ["αβγ 😀!", "ω!"]),
    Case("tags", tags, ["<ab>12<br/><c>3</c></ab>", "<br/>"]),
    Case("nullable_counted_string", nullable_counted_string,
         ['"ab",null,"\\u00e9\u00e9nu",null;', 'null;', '"\\"\U0001F600ll";']),
    Case("long_counted_strings", long_counted_strings,
         ['"abcdefghijklmnopqrstuvwx","12345678";', '"\\u00e9\u00e9abc\\n\U0001F600xyz\\"",\"abcdefghijklmnopqrstuvwxyz0123456789\";',
          '"aaaaaaaaa","\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9";']),
    Case("short_counted_strings", short_counted_strings,
         ['"\\u00e9\U0001F600x";null,"ab";', 'null;"","\\"a b\\n";', '"abc";"x\\u00e9","\u00e9\u00e9\u00e9\u00e9\u00e9";']),
    Case("counted_patterns", counted_patterns,
         ['{"a": "abcabcabcabcabcabcabcabcabcabc", "b": "abababababababababababx", "c": "2024-02-29", '
          '"d": "x\\u00e912\\""}', '{"a":"ab","b":"ababababab","d":null}',
          '{"a": "cc", "b": "ababababababx", "d": "\u00e9\u00e907"}']),
    Case("called_counted_strings", called_counted_strings,
         ['{"a": "0123456789012345678901234567890123456789", "b": "the quick brown fox"}', '{"a":null,"b":-12}',
          '{"a": "\\u00e9\\"x", "b": "\\u0061b c"}']),
    Case("tail_chains", tail_chains, ["[x,<ab>;([x]),x];", "[];", "[([x,<>]),x];"]),
    Case("ambiguous_closers", ambiguous_closers, ["aaxzz;", "aaaxz;", "ax;", "aaxz;"]),
    Case("many_optional_members", many_optional_members,
         ['{"k1": 1, "k3": 22, "k9": 3, "k12": 4, "k19": 5, "x": true}', '{"k3":0,"k12":1}']),
]


def small_vocab(samples: list[str], seed: int = 0, extra: int = 300) -> TokenizerInfo:
    """All single bytes, substrings of the samples, random multi-byte strings, and a stop token."""
    rng = random.Random(seed)
    toks: set[bytes] = {bytes([b]) for b in range(256)}
    for s in samples:
        b = s.encode()
        for _ in range(60):
            i = rng.randrange(len(b))
            toks.add(b[i:i + rng.randint(2, 6)])
    alphabet = sorted({c for s in samples for c in s.encode()})
    for _ in range(extra):
        toks.add(bytes(rng.choice(alphabet) for _ in range(rng.randint(2, 4))))
    vocab = sorted(t for t in toks if t)
    vocab.append(b"</s>")
    return TokenizerInfo(vocab, vocab_size=len(vocab) + 5, special_token_ids=[len(vocab) - 1],
                         eos_token_id=len(vocab) - 1)
