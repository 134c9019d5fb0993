"""Tests for the EBNF/GBNF front-end (logitgate.grammar.ebnf)."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logitgate.errors import EbnfSyntaxError, GrammarError
from logitgate.grammar.ebnf import format_grammar, parse_ebnf
from logitgate.grammar.ir import (
    EMPTY,
    NOTHING,
    Alt,
    And,
    Bytes,
    ByteSet,
    Expr,
    Grammar,
    Not,
    Ref,
    Repeat,
    Seq,
    byteset,
    lit,
)
from logitgate.grammar.utf8 import codepoint_ranges_expr

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GBNF_FILES = sorted((DATA / "gbnf").glob("**/*.gbnf")) + sorted(
    (DATA / "llguidance-samples").glob("**/*.gbnf")
)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared test data not found at {DATA}")


def rule(text: str, name: str = "root") -> Expr:
    return parse_ebnf(text)[name]


# ----------------------------------------------------------------------------- a tiny membership oracle


class Oracle:
    """Exact membership for IR grammars without left recursion (sets of end positions)."""

    def __init__(self, g: Grammar, data: bytes):
        self.g, self.data, self.memo = g, data, {}

    def ends(self, e: Expr, i: int) -> frozenset[int]:
        d, n = self.data, len(self.data)
        if isinstance(e, Bytes):
            return frozenset({i + len(e.value)}) if d.startswith(e.value, i) else frozenset()
        if isinstance(e, ByteSet):
            return frozenset({i + 1}) if i < n and e.contains(d[i]) else frozenset()
        if isinstance(e, Seq):
            cur = frozenset({i})
            for it in e.items:
                cur = frozenset(q for p in cur for q in self.ends(it, p))
            return cur
        if isinstance(e, Alt):
            return frozenset(q for it in e.items for q in self.ends(it, i))
        if isinstance(e, Ref):
            key = (e.name, i)
            if key not in self.memo:
                self.memo[key] = frozenset()  # guards left recursion (not exact there)
                self.memo[key] = self.ends(self.g[e.name], i)
            return self.memo[key]
        if isinstance(e, And):
            sets = [self.ends(it, i) for it in e.items]
            return frozenset.intersection(*sets)
        if isinstance(e, Not):
            return frozenset(range(i, n + 1)) - self.ends(e.item, i)
        if isinstance(e, Repeat):
            cap = e.min if e.max is None else e.max
            seen = {(i, 0)}
            stack = [(i, 0)]
            out = set()
            while stack:
                p, c = stack.pop()
                if c >= e.min:
                    out.add(p)
                if e.max is not None and c >= e.max:
                    continue
                for q in self.ends(e.item, p):
                    s = (q, min(c + 1, cap) if e.max is None else c + 1)
                    if s not in seen:
                        seen.add(s)
                        stack.append(s)
            return frozenset(out)
        raise TypeError(e)


def accepts(g: Grammar, data: bytes) -> bool:
    ok = len(data) in Oracle(g, data).ends(Ref(g.root), 0)
    try:  # cross-check the project's reference recognizer when it exists
        from logitgate.grammar.reference import accepts as ref_accepts
    except ImportError:
        return ok
    assert ref_accepts(g, data) == ok, data
    return ok


def sample(g: Grammar, rng: random.Random, max_depth: int = 25) -> bytes | None:
    """A random string of the grammar's language (None when the walk got too deep)."""

    class TooDeep(Exception):
        pass

    def gen(e: Expr, depth: int) -> bytes:
        if depth > max_depth:
            raise TooDeep
        if isinstance(e, Bytes):
            return e.value
        if isinstance(e, ByteSet):
            lo, hi = rng.choice(e.ranges)
            return bytes([rng.randint(lo, hi)])
        if isinstance(e, Seq):
            return b"".join(gen(x, depth + 1) for x in e.items)
        if isinstance(e, Alt):
            return gen(rng.choice(e.items), depth + 1)
        if isinstance(e, Repeat):
            hi = e.min + 3 if e.max is None else e.max
            return b"".join(gen(e.item, depth + 1) for _ in range(rng.randint(e.min, min(hi, e.min + 3))))
        if isinstance(e, Ref):
            return gen(g[e.name], depth + 1)
        raise TypeError(e)

    try:
        return gen(Ref(g.root), 0)
    except TooDeep:
        return None


# ----------------------------------------------------------------------------- sample grammars


@needs_data
def test_sample_files_found():
    assert len(GBNF_FILES) >= 8, GBNF_FILES


@needs_data
@pytest.mark.parametrize("path", GBNF_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_gbnf_file_parses_and_round_trips(path: Path):
    g = parse_ebnf(path.read_text(encoding="utf-8"))
    assert g.root == "root"
    text = format_grammar(g)
    assert parse_ebnf(text) == g
    assert format_grammar(parse_ebnf(text)) == text
    assert Grammar.from_ebnf(g.to_ebnf()) == g
    # every rule of the file is there, and random strings of the language are accepted
    rng = random.Random(path.name)
    got = 0
    for _ in range(40):
        s = sample(g, rng)
        if s is not None and len(s) < 400:
            assert accepts(g, s), s
            got += 1
    assert got > 0


def _xgrammar_accepts():
    xgr = pytest.importorskip("xgrammar")
    testing = pytest.importorskip("xgrammar.testing")

    def check(text: str, s: str) -> bool:
        return testing._is_grammar_accept_string(xgr.Grammar.from_ebnf(text), s)

    return check


@needs_data
@pytest.mark.parametrize("path", sorted((DATA / "gbnf").glob("**/*.gbnf")), ids=lambda p: p.name)
def test_gbnf_language_agrees_with_xgrammar(path: Path):
    """Independent check of escapes/classes: membership agrees with xgrammar's GBNF parser."""
    xg = _xgrammar_accepts()
    text = path.read_text(encoding="utf-8")
    g = parse_ebnf(text)
    xtext = text.replace("::= |", '::= "" |')  # xgrammar rejects empty alternatives
    rng = random.Random(path.name)
    alphabet = 'ab1 \n\t-"\\{}[]()=,.:;é€😀\x85\u2028ぁ一'
    checked = 0
    for _ in range(30):
        raw = sample(g, rng)
        if raw is None or len(raw) > 200:
            continue
        s = raw.decode("utf-8")
        variants = [s]
        for _ in range(3):
            t = list(s)
            pos = rng.randrange(len(t) + 1)
            op = rng.randrange(3)
            if op == 0:
                t.insert(pos, rng.choice(alphabet))
            elif t and op == 1:
                del t[min(pos, len(t) - 1)]
            elif t:
                t[min(pos, len(t) - 1)] = rng.choice(alphabet)
            variants.append("".join(t))
        for v in variants:
            assert accepts(g, v.encode()) == xg(xtext, v), (v, path.name)
            checked += 1
    assert checked > 0


# ----------------------------------------------------------------------------- syntax


def test_basic_rules_and_operators():
    g = parse_ebnf('root ::= "a" b* | c+ d? e{2} e{2,} e{1,3}\nb ::= "b"\nc ::= "c"\nd ::= "d"\ne ::= "e"')
    assert g["root"] == Alt(
        (
            Seq((Bytes(b"a"), Repeat(Ref("b"), 0, None))),
            Seq(
                (
                    Repeat(Ref("c"), 1, None),
                    Repeat(Ref("d"), 0, 1),
                    Repeat(Ref("e"), 2, 2),
                    Repeat(Ref("e"), 2, None),
                    Repeat(Ref("e"), 1, 3),
                )
            ),
        )
    )
    assert rule('root ::= "x"{ 2 , 4 }') == Repeat(Bytes(b"x"), 2, 4)


def test_multiline_rules_comments_and_groups():
    text = """# leading comment
root ::=
    ( "a" # comment inside a group
      "b" )
    | "#not a comment"   # trailing
other ::= "x"
  "y"
"""
    g = parse_ebnf(text)
    assert g["root"] == Alt((Bytes(b"ab"), Bytes(b"#not a comment")))
    assert g["other"] == Bytes(b"xy")


def test_empty_alternatives():
    assert rule('root ::= | " "') == Alt((EMPTY, Bytes(b" ")))
    assert rule('root ::= ("a" | ) "b"') == Seq((Alt((Bytes(b"a"), EMPTY)), Bytes(b"b")))


def test_names_with_dashes_and_dots():
    g = parse_ebnf('root ::= json.value x-y\njson.value ::= "v"\nx-y ::= [0-9] .')
    assert g["root"] == Seq((Ref("json.value"), Ref("x-y")))
    # a trailing dot is the any-char, not part of the name
    assert parse_ebnf('root ::= ws.\nws ::= " "')["root"] == Seq(
        (Ref("ws"), codepoint_ranges_expr([(0, 0x10FFFF)]))
    )


def test_string_escapes_produce_utf8_bytes():
    assert rule(r'root ::= "\n\r\t\\\"\'\[\]"') == Bytes(b"\n\r\t\\\"'[]")
    assert rule(r"root ::= 'it\'s \"q\"'") == Bytes(b'it\'s "q"')
    assert rule(r'root ::= "\xE9"') == Bytes("é".encode())
    assert rule(r'root ::= "\u00e9\u20AC"') == Bytes("é€".encode())
    assert rule(r'root ::= "\U0001F600"') == Bytes("😀".encode())
    assert rule('root ::= "é😀"') == Bytes("é😀".encode())
    assert rule('root ::= "a\nb"') == Bytes(b"a\nb")


def test_character_classes():
    assert rule("root ::= [a-c]") == ByteSet(((0x61, 0x63),))
    assert rule(r"root ::= [\[\]\\]") == byteset(0x5B, 0x5C, 0x5D)
    assert rule("root ::= [-a]") == byteset(0x2D, 0x61)
    assert rule("root ::= [a-]") == byteset(0x2D, 0x61)
    assert rule("root ::= [é]") == Bytes("é".encode())
    assert rule(r"root ::= [\xE9]") == Bytes("é".encode())
    assert rule(r"root ::= [\u00e0-\u00ff]") == codepoint_ranges_expr([(0xE0, 0xFF)])
    assert rule("root ::= []") == NOTHING
    # english.gbnf-style punctuation class: ',-.' is a range that includes '-'
    assert rule(r"root ::= [,-.]") == ByteSet(((0x2C, 0x2E),))


def test_unicode_classes_membership():
    g = parse_ebnf(r'root ::= [^\x00-\x7F] | "." .')
    for ch in ["é", "€", "😀", "ぁ"]:
        assert accepts(g, ch.encode())
        assert accepts(g, b"." + ch.encode())
    for bad in [b"a", b"\x80", b"\xc3", "é".encode() * 2, b"\xed\xa0\x80", b".\xff"]:
        assert not accepts(g, bad), bad
    g = parse_ebnf(r"root ::= [ぁ-ゟ]+")
    assert accepts(g, "ひらがな".encode())
    assert not accepts(g, "カ".encode())
    g = parse_ebnf(r'root ::= [^"\\]*')
    assert accepts(g, "ab€😀\x00".encode())
    assert not accepts(g, b'a"b')


def test_extensions():
    assert rule("root ::= %x[30-39 41]") == ByteSet(((0x30, 0x39), (0x41, 0x41)))
    assert rule("root ::= %x[^00-7F]") == ByteSet(((0x80, 0xFF),))
    assert rule('root ::= %x"E2 80" %x"a9"') == Bytes(b"\xe2\x80\xa9")
    assert rule('root ::= %x""') == EMPTY
    assert rule("root ::= %nothing") == NOTHING
    assert rule('root ::= "a" "b" & "c" | "d"') == Alt((And((Bytes(b"ab"), Bytes(b"c"))), Bytes(b"d")))
    assert rule('root ::= ~"a"* "b"') == Seq((Not(Repeat(Bytes(b"a"), 0, None)), Bytes(b"b")))
    assert rule('root ::= (~"a")*') == Repeat(Not(Bytes(b"a")), 0, None)
    g = parse_ebnf('root ::= [a-z]* & ~("a" .*)')
    assert accepts(g, b"bca") and accepts(g, b"")
    assert not accepts(g, b"abc") and not accepts(g, b"B")


def test_root_selection():
    text = 'start ::= "s"\nroot ::= "r"\n'
    assert parse_ebnf(text).root == "root"
    assert parse_ebnf(text, root="start").root == "start"
    g = parse_ebnf('%root start\nstart ::= "s"\n')
    assert g.root == "start"
    assert parse_ebnf(format_grammar(g)) == g
    assert Grammar.from_ebnf(g.to_ebnf()) == g


# ----------------------------------------------------------------------------- errors


def err(text: str, **kw) -> EbnfSyntaxError:
    with pytest.raises(EbnfSyntaxError) as info:
        parse_ebnf(text, **kw)
    e = info.value
    lines = text.split("\n")
    assert e.source_line == lines[e.line - 1].rstrip("\r")
    assert 1 <= e.column <= len(e.source_line) + 1
    assert isinstance(e, GrammarError) and isinstance(e, ValueError)
    return e


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ('root ::= a b\nb ::= "x"\n', 1, 10, "undefined rule 'a'"),
        ('root ::= "x"\n\n  x ::= "y" zz\n', 3, 13, "undefined rule 'zz'"),
        ('root ::= x\nx ::= "a"\nx ::= "b"\n', 3, 1, "defined twice"),
        ('a ::= "x"\n', 1, 1, "'root'"),
        ('root ::= "abc\n', 1, 10, "unterminated string"),
        ('root ::= "a\\qb"', 1, 12, "escape"),
        ('root ::= "\\x4"', 1, 11, "hex digits"),
        ("root ::= [a-", 1, 10, "unterminated character class"),
        ("root ::= [z-a]", 1, 11, "out of order"),
        ('root ::=\n  "a"{3,2}', 2, 6, "out of order"),
        ('root ::= "a" {x}', 1, 14, "repetition"),
        ('root ::= * "a"', 1, 10, "nothing to repeat"),
        ('root ::= ("a" | "b"\nx ::= "c"', 2, 1, "expected ')'"),
        ('root ::= "a")', 1, 13, "unexpected ')'"),
        ('root ::= "a" @', 1, 14, "unexpected character"),
        ('root ::= 1x\n1x ::= "a"', 1, 10, "invalid rule name"),
        ('root = "a"', 1, 6, "'::='"),
        ('"a" ::= "b"', 1, 1, "rule definition"),
        ('root ::= "\\uD800"', 1, 11, "surrogate"),
        ("root ::= %x[3G]", 1, 13, "hex"),
        ('root ::= %x"ABC"', 1, 10, "hex byte pairs"),
        ('root ::= %foo "a"', 1, 10, "unknown directive"),
        ('root ::= "a" & | "b"', 1, 14, "'&'"),
        ('root ::= "a" ~', 1, 14, "'~'"),
        ("root ::= <think>", 1, 10, "token references"),
        ('root ::= "a"\r\nx ::= y\r\n', 2, 7, "undefined rule 'y'"),
        ('root ::= "é" é', 1, 14, "unexpected character"),
    ],
)
def test_error_positions(text, line, column, words):
    e = err(text)
    assert (e.line, e.column) == (line, column), str(e)
    assert words in str(e)
    assert f"line {line}, column {column}" in str(e)


def test_missing_named_root():
    e = err('root ::= "a"', root="start")
    assert "'start'" in str(e)
    e = err('%root main\nroot ::= "a"')
    assert "'main'" in str(e) and e.line == 1


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(EbnfSyntaxError):
        parse_ebnf("root ::= " + "(" * 5000 + '"a"' + ")" * 5000)


# ----------------------------------------------------------------------------- printing


def test_printing_is_readable():
    g = Grammar(
        {
            "root": Seq((lit('hé"\n'), Repeat(Ref("d"), 1, None), Repeat(Ref("d"), 0, 1))),
            "d": Alt((byteset((0x30, 0x39)), Repeat(lit("ab"), 2, 5), lit(b"\xff\xfe"), Not(NOTHING))),
        }
    )
    text = format_grammar(g)
    assert 'root ::= "hé\\"\\n" d+ d?' in text
    assert '[0-9] | "ab"{2,5} | %x"FF FE" | ~%nothing' in text
    assert parse_ebnf(text) == g


def test_unicode_classes_print_as_classes():
    text = format_grammar(
        parse_ebnf(r'root ::= ([^"\\\x7F\x00-\x1F] | "\\" .)* [ぁ-ゟ]+ "x" . [\u00e0-\U0001F600]')
    )
    assert '([^\\x00-\\x1F"\\\\\\x7F] | "\\\\" .)* [ぁ-ゟ]+ "x" . [à-😀]' in text, text
    assert "%x" not in text
    # a one-sequence class that normalization spliced into a literal ("a\xC3" [A9-BC]) prints as a class
    g = parse_ebnf('root ::= "a" [é-ü] "é" x\nx ::= "x"')
    assert g["root"] == Seq((Bytes(b"a\xc3"), ByteSet(((0xA9, 0xBC),)), Bytes("é".encode()), Ref("x")))
    assert 'root ::= "a" [é-ü] "é" x' in format_grammar(g)


def test_mixed_literal_prints_quoted_and_hex_runs():
    g = Grammar({"root": Alt((lit(b"ab\xe2\x80cd"), lit("x")))})
    text = format_grammar(g)
    assert '"ab" %x"E2 80" "cd"' in text
    assert parse_ebnf(text) == g


@pytest.mark.parametrize(
    "expr",
    [
        Repeat(Repeat(Ref("x"), 1, None), 0, 1),
        Repeat(Not(lit("a")), 2, None),
        Not(Repeat(lit("a"), 0, None)),
        Not(Seq((lit("a"), Ref("x")))),
        And((Alt((lit("a"), lit("b"))), Seq((Ref("x"), Ref("x"))))),
        Seq((Not(lit("a")), And((Ref("x"), lit("c"))))),
        Alt((EMPTY, NOTHING, lit(b"\x80"), byteset((0, 0x1F), 0x7F, (0x80, 0xFF)))),
        byteset(0x2D, 0x5E, 0x5B, 0x5D, 0x5C, 0x20),
        byteset((0x2B, 0x2D)),
        byteset(0x5E, 0x61),
        codepoint_ranges_expr([(0x2D, 0x2D), (0x5E, 0x5E), (0x2028, 0x2029), (0xD7F0, 0xE010)]),
    ],
)
def test_tricky_expressions_round_trip(expr):
    g = Grammar({"root": expr, "x": lit("x")})
    assert parse_ebnf(format_grammar(g)) == g


def test_unprintable_rule_name_is_reported():
    with pytest.raises(GrammarError):
        format_grammar(Grammar({"root": Ref("a."), "a.": lit("a")}))


# ----------------------------------------------------------------------------- random IR round trips

NAMES = ["root", "a", "b_1", "c-d", "e.f"]
byte_ranges = st.lists(
    st.tuples(st.integers(0, 255), st.integers(0, 255)).map(sorted), min_size=1, max_size=4
)
cp = st.integers(0, 0x10FFFF)
leaves = st.one_of(
    st.binary(max_size=6).map(Bytes),
    st.text(max_size=5).map(lit),
    byte_ranges.map(lambda rs: byteset(*[tuple(r) for r in rs])),
    st.lists(st.tuples(cp, cp).map(sorted), min_size=1, max_size=3).map(
        lambda rs: codepoint_ranges_expr([tuple(r) for r in rs])
    ),
    st.sampled_from([EMPTY, NOTHING]),
    st.sampled_from(NAMES).map(Ref),
)


def _repeat(args):
    item, lo, extra = args
    return Repeat(item, lo, None if extra is None else lo + extra)


exprs = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: Seq(tuple(xs))),
        st.lists(inner, max_size=4).map(lambda xs: Alt(tuple(xs))),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: And(tuple(xs))),
        inner.map(Not),
        st.tuples(inner, st.integers(0, 3), st.none() | st.integers(0, 3)).map(_repeat),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(exprs, min_size=len(NAMES), max_size=len(NAMES)), st.sampled_from(NAMES))
def test_random_grammars_round_trip(bodies, root):
    g = Grammar(dict(zip(NAMES, bodies)), root=root)
    text = format_grammar(g)
    assert parse_ebnf(text) == g, text
    assert format_grammar(parse_ebnf(text)) == text


def test_reachable_is_remembered_and_other_roots_still_trim() -> None:
    """A grammar known to hold only rules reachable from its root is its own ``reachable()`` (the
    compile asks again for a front-end's trimmed grammar); another root still trims."""
    g = Grammar({"root": Seq((Bytes(b"a"), Ref("b"))), "b": Bytes(b"b"), "c": Bytes(b"c")}, root="root")
    r = g.reachable()
    assert set(r.rules) == {"root", "b"} and r.reachable() is r
    sub = r.reachable("b")
    assert set(sub.rules) == {"b"} and sub.root == "b" and sub.reachable() is sub
    full = Grammar({"root": Ref("b"), "b": Bytes(b"b")})
    assert full.reachable() is full and full.reachable() is full  # (found by a walk, then remembered)
    assert set(full.reachable("b").rules) == {"b"}
    assert set(g.reachable().rules) == {"root", "b"}  # (the original keeps its unreachable rule)
    assert set(g.rules) == {"root", "b", "c"}


def test_ir_nodes_check_their_fields_and_stay_immutable() -> None:
    """The nodes' fast constructors check what the dataclass fields promise; nodes are frozen,
    equal and hashed by their fields (not by what the engine remembers on them) and pickle."""
    import dataclasses
    import pickle

    from logitgate.errors import GrammarError
    from logitgate.grammar.ir import Alt, And, Not, Repeat, memo

    for bad in (lambda: Bytes("x"), lambda: ByteSet(((3, 1),)), lambda: ByteSet(((0, 256),)),
                lambda: Repeat(Bytes(b"a"), 2, 1), lambda: Repeat(Bytes(b"a"), -1, None)):
        with pytest.raises(GrammarError):
            bad()
    a, b = Bytes(b"a"), ByteSet(((48, 57),))
    nodes = [Seq((a, b)), Alt((a, b)), And((b, b)), Repeat(b, 1, 3), Not(a)]
    for node in nodes:
        # (FrozenInstanceError; CPython before 3.12 raises TypeError for a frozen dataclass with
        # slots, gh-90055 -- either way the node is unchanged)
        with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
            node.items = ()  # type: ignore[misc]
        twin = pickle.loads(pickle.dumps(node))
        memo(node).size = 7  # (a fact the engine keeps: no part of the node's identity)
        assert twin == node and hash(twin) == hash(node) and twin is not node
    assert Seq((a, b)) != Seq((b, a)) and Repeat(b, 1, 3) != Repeat(b, 1, None)
    assert dataclasses.replace(Repeat(b, 1, 3), max=5) == Repeat(b, 1, 5)


def test_byte_sets_are_built_in_normal_form() -> None:
    """``byteset`` merges its ranges once and gives a node already normal (the sequences and
    alternations that hold it take it as it is); a hand-made set is still normalized."""
    from logitgate.grammar.ir import NOTHING, alt, byteset, normalize, seq

    digits = byteset((0x35, 0x39), (0x30, 0x34), 0x3A)
    assert digits == ByteSet(((0x30, 0x3A),)) and normalize(digits) is digits
    assert seq(Bytes(b"x"), digits).items[1] is digits and alt(digits, Bytes(b"y")).items[0] is digits
    assert byteset(0x41) == Bytes(b"A") and byteset() is NOTHING
    assert byteset((0x00, 0x40), (0x42, 0xFF), negate=True) == Bytes(b"A")
    rough = ByteSet(((0x32, 0x39), (0x30, 0x33)))  # (overlapping, unsorted: made by hand)
    assert normalize(rough) == ByteSet(((0x30, 0x39),)) and normalize(rough) is not rough


def _is_normal_form(e: Expr) -> bool:
    """The shape every normal form has: sequences of two or more items with no empty literal, no
    two literals side by side and no sequence inside; alternations of two or more distinct items
    with no alternation inside; the empty alternation (nothing) never inside a sequence."""
    if isinstance(e, Seq):
        items = e.items
        return (len(items) >= 2 and all(_is_normal_form(it) for it in items)
                and not any(isinstance(it, Seq) or it == Bytes(b"") or it == Alt(()) for it in items)
                and not any(isinstance(a, Bytes) and isinstance(b, Bytes) for a, b in pairwise(items)))
    if isinstance(e, Alt):
        items = e.items
        return (len(items) != 1 and len(set(items)) == len(items) and all(_is_normal_form(it) for it in items)
                and not any(isinstance(it, Alt) for it in items))
    if isinstance(e, Repeat):
        return _is_normal_form(e.item)
    return True


_leaves = st.sampled_from([Bytes(b""), Bytes(b"a"), Bytes(b"bc"), ByteSet(((0x30, 0x39),)),
                           ByteSet(((0x41, 0x41),)), Ref("r"), Alt(())])
_hand_made = st.recursive(_leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=4).map(lambda xs: Seq(tuple(xs))),
    st.lists(kids, max_size=4).map(lambda xs: Alt(tuple(xs))),
    st.tuples(kids, st.integers(0, 2), st.sampled_from([None, 2, 3])).map(lambda t: Repeat(t[0], t[1], t[2])),
), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(_hand_made, min_size=1, max_size=4))
def test_builders_give_the_normal_form_of_hand_made_nodes(items: list[Expr]) -> None:
    """``seq``/``alt`` of hand-made nodes (not normal: nested, empty, single, repeated items) equal
    ``normalize`` of the same node made by hand, have the normal shape, and normalize to themselves;
    a one-item alternation is its item's normal form."""
    from logitgate.grammar.ir import alt, normalize, seq

    for built, by_hand in ((seq(*items), Seq(tuple(items))), (alt(*items), Alt(tuple(items)))):
        assert built == normalize(by_hand)
        assert _is_normal_form(built) and normalize(built) == built
    assert alt(items[0]) == normalize(items[0]) == seq(items[0])


def test_a_literal_before_a_normal_sequence_merges_with_its_first_literal() -> None:
    """A normal sequence inside a sequence gives its items whole; only its first may join the
    literal before it (its own literals are never side by side)."""
    from logitgate.grammar.ir import lit, seq

    digit = ByteSet(((0x30, 0x39),))
    inner = seq(lit("ab"), digit, lit("c"))
    assert seq(lit("x"), inner, lit("y")) == Seq((Bytes(b"xab"), digit, Bytes(b"cy")))
    assert seq(digit, inner) == Seq((digit, Bytes(b"ab"), digit, Bytes(b"c")))
    assert seq(inner, inner).items == (Bytes(b"ab"), digit, Bytes(b"cab"), digit, Bytes(b"c"))
