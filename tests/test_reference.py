"""The reference recognizer (test oracle) against independent oracles.

Oracles: Python ``re``, hand-written checkers, and a bounded set semantics of the IR
(``bounded_language``: every string of length <= L over a small alphabet, computed by a
least fixpoint over the rules), compared on exhaustively enumerated short strings.
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from language_oracle import bounded_language, strings
from logitgate.errors import GrammarError, LimitExceededError
from logitgate.grammar.ir import (
    NOTHING,
    Alt,
    And,
    Bytes,
    ByteSet,
    Expr,
    Grammar,
    Ref,
    Repeat,
    Seq,
    alt,
    and_,
    byteset,
    lit,
    not_,
    repeat,
    seq,
)
from logitgate.grammar.reference import Recognizer, accepts, prefix_ok
from logitgate.grammar.utf8 import codepoint_ranges_expr

# ----------------------------------------------------------------------------- oracle helpers


def check_exhaustive(g: Grammar, oracle, alphabet: bytes, max_len: int, prefix_len: int | None = None,
                     completion_len: int | None = None) -> int:
    """accepts == oracle on all strings <= max_len; prefix_ok exact for prefixes <= prefix_len,
    assuming every viable prefix that short has a completion within completion_len total bytes
    over ``alphabet``. Returns how many strings were accepted."""
    total = max(max_len, completion_len or 0)
    lang = [s for s in strings(alphabet, total) if oracle(s)]
    lang_set = set(lang)
    n = 0
    for s in strings(alphabet, max_len):
        got = accepts(g, s)
        assert got == (s in lang_set), s
        n += got
    if prefix_len is not None:
        prefixes = {w[:i] for w in lang for i in range(len(w) + 1)}
        for p in strings(alphabet, prefix_len):
            assert prefix_ok(g, p) == (p in prefixes), p
    return n


def re_oracle(pattern: str):
    rx = re.compile(pattern.encode("latin-1"), re.DOTALL)
    return lambda s: rx.fullmatch(s) is not None


AZ = byteset((97, 122))

# ----------------------------------------------------------------------------- regular grammars


def test_literals_and_classes() -> None:
    g = Grammar({"root": alt(lit("ab"), seq(byteset((97, 99)), lit("c")), seq(lit("b"), repeat(lit("a"))))})
    n = check_exhaustive(g, re_oracle("ab|[a-c]c|ba*"), b"abc", 5, prefix_len=4, completion_len=5)
    assert n >= 5


def test_nested_bounded_repeats() -> None:
    g = Grammar({"root": seq(repeat(seq(repeat(lit("a"), 1, 2), lit("b")), 2, 5), repeat(lit("c"), 0, 1))})
    n = check_exhaustive(g, re_oracle("(?:a{1,2}b){2,5}c?"), b"abc", 7, prefix_len=5, completion_len=9)
    assert n > 10


def test_repeat_exact_and_open_counts() -> None:
    g = Grammar({"root": seq(repeat(byteset(97, 98), 3, 3), repeat(lit("c"), 2, None), repeat(lit("a"), 0, 2))})
    check_exhaustive(g, re_oracle("[ab]{3}c{2,}a{0,2}"), b"abc", 7, prefix_len=6, completion_len=8)


def test_large_bounded_repeats_do_not_explode() -> None:
    g = Grammar({"root": seq(repeat(lit("a"), 0, 1000), lit(";"))})
    assert accepts(g, b"a" * 1000 + b";")
    assert not accepts(g, b"a" * 1001 + b";")
    assert prefix_ok(g, b"a" * 1000)
    assert not prefix_ok(g, b"a" * 1001)
    g2 = Grammar({"root": repeat(seq(lit("x"), repeat(lit("y"), 0, 500)), 1, 700)})
    assert accepts(g2, b"x" + b"y" * 500 + b"x" * 699)
    assert not accepts(g2, b"x" * 701)
    assert not prefix_ok(g2, b"x" + b"y" * 501)
    assert not accepts(g2, b"")
    # a repeat over a recursive rule (a counted Earley item)
    g3 = Grammar({"root": repeat(Ref("p"), 2, 300), "p": seq(lit("("), repeat(Ref("p")), lit(")"))})
    assert accepts(g3, b"()" * 300)
    assert accepts(g3, b"(())()")
    assert not accepts(g3, b"()")
    assert not prefix_ok(g3, b"()" * 301)
    assert not accepts(g3, b"()" * 301)
    assert prefix_ok(g3, b"()" * 300 + b"")
    g4 = Grammar({"root": repeat(Ref("p"), 250, None), "p": seq(lit("("), repeat(Ref("p")), lit(")"))})
    assert not accepts(g4, b"()" * 249)
    assert accepts(g4, b"()" * 250) and accepts(g4, b"()" * 260)


# ----------------------------------------------------------------------------- context-free grammars


def test_counted_repeat_of_nullable_recursive_rule() -> None:
    # min 2 copies of a nullable rule: fewer non-empty copies are fine (the rest match "")
    g = Grammar({"root": seq(repeat(Ref("n"), 2, 3), lit(";")),
                 "n": alt(lit(""), seq(lit("("), Ref("n"), lit(")")))})
    lang = bounded_language(g, b"();", 8)
    assert b";" in lang and b"();" in lang and b"()()();" in lang and b"()()()();" not in lang
    check_exhaustive(g, lang.__contains__, b"();", 8)
    prefixes = {w[:i] for w in lang for i in range(len(w) + 1)}
    for p in strings(b"();", 3):  # a prefix needs at most len(p) + 1 more bytes
        assert prefix_ok(g, p) == (p in prefixes), p


def test_nullable_rules_recursive() -> None:
    # A = a*, B = b* a*, written with recursion so they go through the Earley part
    g = Grammar({
        "root": seq(Ref("A"), Ref("B"), lit("c")),
        "A": alt(seq(lit("a"), Ref("A")), lit("")),
        "B": alt(seq(lit("b"), Ref("B")), Ref("A")),
    })
    check_exhaustive(g, re_oracle("a*b*a*c"), b"abc", 6, prefix_len=5, completion_len=6)


def test_nullable_mutual_recursion_matches_set_semantics() -> None:
    g = Grammar({
        "root": seq(Ref("a"), Ref("b"), lit(";")),
        "a": alt(seq(lit("a"), Ref("a")), lit("")),
        "b": alt(seq(lit("b"), Ref("root")), lit("")),
    })
    lang = bounded_language(g, b"ab;", 7)
    assert b"ab;;" in lang and b"bba;;;" in lang and b"bab;;" not in lang
    check_exhaustive(g, lang.__contains__, b"ab;", 7)
    # every viable prefix p needs at most len(p) + 1 more ';'
    lang9 = bounded_language(g, b"ab;", 9)
    prefixes = {w[:i] for w in lang9 for i in range(len(w) + 1)}
    for p in strings(b"ab;", 4):
        assert prefix_ok(g, p) == (p in prefixes), p


def _arith_ok(s: bytes) -> bool:
    """Recursive-descent check of E := T ('+' T)*, T := F ('*' F)*, F := 'x' | '(' E ')'."""
    pos = 0

    def expr() -> bool:
        nonlocal pos
        if not term():
            return False
        while pos < len(s) and s[pos:pos + 1] == b"+":
            pos += 1
            if not term():
                return False
        return True

    def term() -> bool:
        nonlocal pos
        if not factor():
            return False
        while pos < len(s) and s[pos:pos + 1] == b"*":
            pos += 1
            if not factor():
                return False
        return True

    def factor() -> bool:
        nonlocal pos
        if s[pos:pos + 1] == b"x":
            pos += 1
            return True
        if s[pos:pos + 1] == b"(":
            pos += 1
            if not expr() or s[pos:pos + 1] != b")":
                return False
            pos += 1
            return True
        return False

    return expr() and pos == len(s)


def _arith_prefix_ok(p: bytes) -> bool:
    """A prefix is viable iff it is one of the language once closed by 'x' and/or ')'s."""
    depth = p.count(b"(") - p.count(b")")
    if depth < 0:
        return False
    return any(_arith_ok(p + tail + b")" * depth) for tail in (b"", b"x"))


ARITH_GRAMMARS = {
    "left": {
        "root": Ref("E"),
        "E": alt(seq(Ref("E"), lit("+"), Ref("T")), Ref("T")),
        "T": alt(seq(Ref("T"), lit("*"), Ref("F")), Ref("F")),
        "F": alt(lit("x"), seq(lit("("), Ref("E"), lit(")"))),
    },
    "right": {
        "root": Ref("E"),
        "E": alt(seq(Ref("T"), lit("+"), Ref("E")), Ref("T")),
        "T": alt(seq(Ref("F"), lit("*"), Ref("T")), Ref("F")),
        "F": alt(lit("x"), seq(lit("("), Ref("E"), lit(")"))),
    },
    "repeat": {
        "root": Ref("E"),
        "E": seq(Ref("T"), repeat(seq(lit("+"), Ref("T")))),
        "T": seq(Ref("F"), repeat(seq(lit("*"), Ref("F")))),
        "F": alt(lit("x"), seq(lit("("), Ref("E"), lit(")"))),
    },
}


@pytest.mark.parametrize("kind", sorted(ARITH_GRAMMARS))
def test_arithmetic_left_right_recursion(kind: str) -> None:
    g = Grammar(ARITH_GRAMMARS[kind])
    n = 0
    for s in strings(b"x+*()", 6):
        got = accepts(g, s)
        assert got == _arith_ok(s), s
        n += got
        assert prefix_ok(g, s) == _arith_prefix_ok(s), s
    assert n == 15  # lengths 1, 3, 5: 1 + 3 + 11


def test_ambiguous_grammar() -> None:
    g = Grammar({"root": Ref("E"), "E": alt(seq(Ref("E"), lit("+"), Ref("E")), lit("x"), seq(lit("("), Ref("E"), lit(")")))})
    for s in strings(b"x+()", 7):
        assert accepts(g, s) == _arith_ok(s), s
        assert prefix_ok(g, s) == _arith_prefix_ok(s), s


def _brackets_ok(s: bytes, prefix: bool = False) -> bool:
    stack = []
    pairs = {ord(")"): ord("("), ord("]"): ord("[")}
    for c in s:
        if c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
        else:
            stack.append(c)
    return prefix or not stack


def test_balanced_brackets_mutual_recursion() -> None:
    g = Grammar({
        "root": Ref("S"),
        "S": repeat(alt(Ref("P"), Ref("B"))),
        "P": seq(lit("("), Ref("S2"), lit(")")),
        "B": seq(lit("["), Ref("S"), lit("]")),
        "S2": alt(seq(Ref("P"), Ref("S2")), seq(Ref("B"), Ref("S2")), lit("")),
    })
    n = 0
    for s in strings(b"()[]", 6):
        got = accepts(g, s)
        assert got == _brackets_ok(s), s
        n += got
        assert prefix_ok(g, s) == _brackets_ok(s, prefix=True), s
    assert n > 10


# ----------------------------------------------------------------------------- And / Not


def test_identifier_not_keyword() -> None:
    g = Grammar({"root": and_(repeat(AZ), not_(lit("if")))})
    check_exhaustive(g, lambda s: re.fullmatch(rb"[a-z]*", s) is not None and s != b"if", b"ifx", 5,
                     prefix_len=5, completion_len=6)
    assert prefix_ok(g, b"if") and not accepts(g, b"if")


def test_three_letters_containing_x() -> None:
    g = Grammar({"root": and_(repeat(AZ, 3, 3), seq(repeat(AZ), lit("x"), repeat(AZ)))})
    check_exhaustive(g, lambda s: len(s) == 3 and b"x" in s and s.isalpha(), b"axy", 5,
                     prefix_len=4, completion_len=3)


def test_and_not_inside_recursion() -> None:
    ident = and_(repeat(AZ, 1, None), not_(alt(lit("if"), lit("in"))))
    g = Grammar({"root": Ref("L"), "L": alt(Ref("id"), seq(lit("("), Ref("L"), lit(")")),
                                              seq(Ref("L"), lit(","), Ref("id"))), "id": ident})

    lang = bounded_language(g, b"(),fin", 6)
    for s in strings(b"(),fin", 5):
        assert accepts(g, s) == (s in lang), s
    assert accepts(g, b"fi,nf") and not accepts(g, b"fi,in") and accepts(g, b"(f),i")
    assert prefix_ok(g, b"((in") and not prefix_ok(g, b"(in)")


def test_intersection_empty_from_some_point() -> None:
    # strings over {a,b} ending in 'ab' and never containing 'bb'
    g = Grammar({"root": seq(and_(seq(repeat(byteset(97, 98)), lit("ab")),
                                  not_(seq(repeat(byteset(97, 98)), lit("bb"), repeat(byteset(97, 98))))),
                             lit("!"))})
    check_exhaustive(g, lambda s: re.fullmatch(rb"[ab]*ab!", s) is not None and b"bb" not in s, b"ab!", 6,
                     prefix_len=5, completion_len=8)
    assert not prefix_ok(g, b"abb")
    assert prefix_ok(g, b"aba")


def test_not_of_regular_language_in_sequence() -> None:
    # x then any string over {a,b} that is not (ab)*, then ';'
    g = Grammar({"root": seq(lit("x"), and_(repeat(byteset(97, 98)), not_(repeat(lit("ab")))), lit(";"))})
    check_exhaustive(g, lambda s: re.fullmatch(rb"x[ab]*;", s) is not None
                     and re.fullmatch(rb"x(?:ab)*;", s) is None, b"ab;x", 6, prefix_len=5, completion_len=7)


def test_unproductive_rules_are_not_viable() -> None:
    g = Grammar({"root": alt(lit("y"), seq(lit("z"), Ref("loop"))), "loop": seq(lit("x"), Ref("loop"))})
    assert accepts(g, b"y") and prefix_ok(g, b"") and prefix_ok(g, b"y")
    assert not prefix_ok(g, b"z") and not prefix_ok(g, b"zx")
    g2 = Grammar({"root": Ref("loop"), "loop": seq(lit("x"), Ref("loop"))})
    assert not prefix_ok(g2, b"")
    assert not Recognizer(g2).viable()
    assert not Recognizer(g2).feed(b"x")
    # empty intersections, also behind a repeat with min 0 (only the empty string remains)
    g3 = Grammar({"root": alt(lit("y"), seq(lit("q"), and_(lit("a"), lit("b"))))})
    assert prefix_ok(g3, b"y") and not prefix_ok(g3, b"q")
    g4 = Grammar({"root": seq(lit("q"), not_(repeat(byteset((0, 255)))))})
    assert not prefix_ok(g4, b"") and not accepts(g4, b"q")
    g5 = Grammar({"root": seq(repeat(Ref("e")), lit("!")), "e": seq(lit("("), Ref("e"), lit(")"))})
    assert accepts(g5, b"!") and not prefix_ok(g5, b"(")


def test_limit_exceeded_on_huge_emptiness_check() -> None:
    x = repeat(byteset(97, 98), 0, 50)
    same = seq(repeat(byteset(97, 98), 0, 49), repeat(byteset(97, 98), 0, 1))  # (x's language, spelled otherwise)
    assert and_(x, not_(x)) is NOTHING  # (an operand beside its complement: found without a check)
    g = Grammar({"root": alt(lit("y"), seq(lit("z"), and_(x, not_(same))))})
    with pytest.raises(LimitExceededError):
        prefix_ok(g, b"z", max_states=10)
    assert not prefix_ok(g, b"z")
    assert accepts(g, b"y")


def test_recursive_rule_inside_and_is_an_error() -> None:
    g = Grammar({"root": and_(Ref("p"), repeat(AZ)), "p": alt(lit("a"), seq(lit("("), Ref("p"), lit(")")))})
    with pytest.raises(GrammarError):
        accepts(g, b"a")


# ----------------------------------------------------------------------------- Recognizer


def test_recognizer_walk_copy_and_failure() -> None:
    g = Grammar(ARITH_GRAMMARS["left"])
    r = Recognizer(g)
    assert r.viable() and not r.accepting()
    text = b"(x+x)*x"
    for i, b in enumerate(text):
        assert r.feed(b)
        assert r.accepting() == _arith_ok(text[: i + 1])
    fork = r.copy()
    assert not r.feed(b"+)")  # '+' is fine, ')' is not: the whole feed fails, nothing changes
    assert r.position == len(text) and r.accepting()
    assert r.feed(b"+x") and r.accepting()
    assert fork.position == len(text) and fork.accepting()
    assert fork.feed(b"*(") and not fork.accepting() and fork.viable()
    assert r.position == len(text) + 2
    # next_bytes agrees with prefix_ok
    for p in (b"", b"(x", b"x+", b"((x)*"):
        rp = Recognizer(g)
        assert rp.feed(p)
        assert rp.next_bytes() == {b for b in range(256) if prefix_ok(g, p + bytes([b]))}


# ----------------------------------------------------------------------------- random grammars


def _exprs(names: list[str], allow_bool: bool, depth: int) -> st.SearchStrategy[Expr]:
    leaves = st.one_of(
        st.sampled_from([lit("a"), lit("b"), lit("ab"), lit(""), byteset(97, 98)]),
        *([st.sampled_from([Ref(n) for n in names])] if names else []),
    )

    def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        opts = [
            st.lists(children, min_size=2, max_size=3).map(lambda xs: seq(*xs)),
            st.lists(children, min_size=2, max_size=3).map(lambda xs: alt(*xs)),
            st.tuples(children, st.integers(0, 2), st.sampled_from([None, 1, 2, 3])).filter(
                lambda t: t[2] is None or t[2] >= t[1]).map(lambda t: repeat(t[0], t[1], t[2])),
        ]
        return st.one_of(*opts)

    return st.recursive(leaves, extend, max_leaves=depth)


def _regular_exprs(depth: int) -> st.SearchStrategy[Expr]:
    base = _exprs([], False, depth)

    def add_bool(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.lists(children, min_size=2, max_size=2).map(lambda xs: and_(*xs)),
            children.map(not_),
            st.lists(children, min_size=2, max_size=2).map(lambda xs: seq(*xs)),
        )

    return st.recursive(base, add_bool, max_leaves=3)


@st.composite
def random_grammars(draw) -> Grammar:
    regular = draw(_regular_exprs(4))
    names = ["r0", "r1", "reg"]
    r0 = draw(_exprs(names, False, 5))
    r1 = draw(_exprs(names, False, 5))
    return Grammar({"root": Ref("r0"), "r0": r0, "r1": r1, "reg": regular})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_grammars())
def test_random_grammars_match_set_semantics(g: Grammar) -> None:
    lang = bounded_language(g, b"ab", 6)
    prefixes = {w[:i] for w in lang for i in range(len(w) + 1)}
    for s in strings(b"ab", 6):
        got = accepts(g, s)
        assert got == (s in lang), (s, g.to_ebnf() if hasattr(g, "to_ebnf") else g)
        if s in prefixes:
            assert prefix_ok(g, s), s
        if prefix_ok(g, s) and len(s) < 6:
            # a viable prefix is accepted or has a viable one-byte extension
            assert accepts(g, s) or any(prefix_ok(g, s + bytes([c])) for c in range(256)), s


def _max_len(e: Expr) -> float:
    if isinstance(e, Bytes):
        return len(e.value)
    if isinstance(e, ByteSet):
        return 1
    if isinstance(e, Seq):
        return sum(_max_len(x) for x in e.items)
    if isinstance(e, Alt):
        return max((_max_len(x) for x in e.items), default=0)
    if isinstance(e, Repeat):
        m = _max_len(e.item)
        return m * e.max if e.max is not None else (0 if m == 0 else float("inf"))
    if isinstance(e, And):
        return min(_max_len(x) for x in e.items)
    return float("inf")


@settings(max_examples=80, deadline=None)
@given(_regular_exprs(5))
def test_random_finite_languages_prefix_exact(e: Expr) -> None:
    g = Grammar({"root": e})
    bound = _max_len(e)
    if bound > 7:
        return
    lang = bounded_language(g, b"ab", 7)
    prefixes = {w[:i] for w in lang for i in range(len(w) + 1)}
    for s in strings(b"ab", 7):
        assert accepts(g, s) == (s in lang), s
        assert prefix_ok(g, s) == (s in prefixes), s


# ----------------------------------------------------------------------------- JSON: size and speed


def json_grammar() -> Grammar:
    """A JSON grammar spread over many small rules (about 45)."""
    r: dict[str, Expr] = {}
    r["root"] = seq(Ref("ws"), Ref("value"), Ref("ws"))
    r["value"] = alt(Ref("object"), Ref("array"), Ref("string"), Ref("number"), Ref("true"), Ref("false"),
                     Ref("null"))
    r["object"] = alt(seq(Ref("lbrace"), Ref("ws"), Ref("rbrace")),
                      seq(Ref("lbrace"), Ref("members"), Ref("rbrace")))
    r["members"] = seq(Ref("member"), repeat(seq(Ref("comma"), Ref("member"))))
    r["member"] = seq(Ref("ws"), Ref("string"), Ref("ws"), Ref("colon"), Ref("element"))
    r["array"] = alt(seq(Ref("lbracket"), Ref("ws"), Ref("rbracket")),
                     seq(Ref("lbracket"), Ref("elements"), Ref("rbracket")))
    r["elements"] = alt(Ref("element"), seq(Ref("elements"), Ref("comma"), Ref("element")))  # left recursive
    r["element"] = seq(Ref("ws"), Ref("value"), Ref("ws"))
    for name, text in [("lbrace", "{"), ("rbrace", "}"), ("lbracket", "["), ("rbracket", "]"), ("comma", ","),
                       ("colon", ":"), ("quote", '"'), ("backslash", "\\"), ("true", "true"),
                       ("false", "false"), ("null", "null"), ("minus", "-"), ("dot", "."), ("zero", "0")]:
        r[name] = lit(text)
    r["string"] = seq(Ref("quote"), Ref("characters"), Ref("quote"))
    r["characters"] = repeat(Ref("character"))
    r["character"] = alt(Ref("plain"), Ref("escape_seq"))
    r["plain"] = alt(Ref("ascii_plain"), Ref("utf8_2"), Ref("utf8_3"), Ref("utf8_4"))
    r["ascii_plain"] = byteset((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7F))
    r["utf8_2"] = codepoint_ranges_expr([(0x80, 0x7FF)])
    r["utf8_3"] = codepoint_ranges_expr([(0x800, 0xFFFF)])
    r["utf8_4"] = codepoint_ranges_expr([(0x10000, 0x10FFFF)])
    r["escape_seq"] = seq(Ref("backslash"), Ref("escape"))
    r["escape"] = alt(Ref("simple_escape"), seq(lit("u"), Ref("hex4")))
    r["simple_escape"] = byteset(*[ord(c) for c in '"\\/bfnrt'])
    r["hex4"] = seq(Ref("hex"), Ref("hex"), Ref("hex"), Ref("hex"))
    r["hex"] = alt(Ref("digit"), byteset((65, 70)), byteset((97, 102)))
    r["number"] = seq(Ref("integer"), Ref("fraction"), Ref("exponent"))
    r["integer"] = seq(repeat(Ref("minus"), 0, 1), alt(Ref("zero"), seq(Ref("onenine"), Ref("digits0"))))
    r["digits0"] = repeat(Ref("digit"))
    r["digits"] = repeat(Ref("digit"), 1, None)
    r["digit"] = byteset((0x30, 0x39))
    r["onenine"] = byteset((0x31, 0x39))
    r["fraction"] = repeat(seq(Ref("dot"), Ref("digits")), 0, 1)
    r["exponent"] = repeat(seq(Ref("e"), Ref("sign"), Ref("digits")), 0, 1)
    r["e"] = byteset(ord("e"), ord("E"))
    r["sign"] = repeat(byteset(ord("+"), ord("-")), 0, 1)
    r["ws"] = repeat(Ref("ws_char"))
    r["ws_char"] = byteset(0x20, 0x0A, 0x0D, 0x09)
    return Grammar(r)


def _random_json(rng: random.Random, depth: int = 0):
    k = rng.random()
    if depth > 4 or k < 0.35:
        return rng.choice([0, -17, 3.25e-7, 12345678901234, "", "héllo \"wörld\" \\ \n ✓ 𝄞", True, False, None,
                           "plain text"])
    if k < 0.7:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {f"key{i}": _random_json(rng, depth + 1) for i in range(rng.randint(0, 5))}


def _json_valid(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return True


def test_json_document_speed_and_mutations() -> None:
    g = json_grammar()
    assert len(g.rules) >= 40
    rng = random.Random(1)
    doc = b""
    while len(doc) < 2000:
        doc = json.dumps([_random_json(rng) for _ in range(12)], indent=rng.choice([None, 1]),
                         ensure_ascii=rng.random() < 0.5).encode()
    doc = doc[:2100] if _json_valid(doc[:2100]) else doc
    t0 = time.perf_counter()
    assert accepts(g, doc)
    t_accepts = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert prefix_ok(g, doc[: len(doc) // 2 + 1])
    assert not accepts(g, doc[:-1])
    t_prefix = time.perf_counter() - t0
    assert t_accepts < 3.0 and t_prefix < 3.0, (t_accepts, t_prefix)
    # single-byte mutations: accepted exactly when Python's json accepts them
    for _ in range(40):
        i = rng.randrange(len(doc))
        mutated = doc[:i] + bytes([rng.choice(b'{}[],:"\\ 0a-e.\xc3\x80')]) + doc[i + 1:]
        assert accepts(g, mutated) == _json_valid(mutated), (i, mutated[max(0, i - 20): i + 20])
    # byte-by-byte walk agrees with prefix_ok at every position for a smaller document
    small = json.dumps({"a": [1, {"b": None}, "x\u00e9"], "c": -2.5e3}).encode()
    r = Recognizer(g)
    for i, b in enumerate(small):
        assert r.feed(b), i
        assert r.accepting() == _json_valid(small[: i + 1]), small[: i + 1]
    assert not r.copy().feed(b",")
    assert r.accepting()


def test_deep_nesting_is_fast() -> None:
    g = json_grammar()
    t0 = time.perf_counter()
    assert accepts(g, b"[" * 500 + b"1" + b"]" * 500)
    assert not accepts(g, b"[" * 500 + b"1" + b"]" * 499)
    # 2000 nested non-recursive rules: one big regular terminal
    rules: dict[str, Expr] = {f"r{i}": seq(lit("("), Ref(f"r{i + 1}"), lit(")")) for i in range(2000)}
    rules["r2000"] = lit("x")
    rules["root"] = Ref("r0")
    g2 = Grammar(rules)
    assert accepts(g2, b"(" * 2000 + b"x" + b")" * 2000)
    assert not prefix_ok(g2, b"(" * 2001)
    assert not accepts(g2, b"(" * 1999 + b"x" + b")" * 1999)
    assert time.perf_counter() - t0 < 5.0
