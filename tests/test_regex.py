"""Regex front-end: languages checked against Python ``re`` (fullmatch and search), errors, limits."""

from __future__ import annotations

import itertools
import json
import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logitgate.errors import GrammarError, LimitExceededError, RegexError, UnsupportedFeatureError
from logitgate.grammar.ir import NOTHING, Alt, Bytes, ByteSet, Expr, Grammar, Repeat, Seq, lit
from logitgate.grammar.regex import regex_expr, regex_grammar

try:
    from logitgate.grammar.reference import accepts as _ref_accepts
except ImportError:  # pragma: no cover - the reference recognizer is written separately
    _ref_accepts = None


# ----------------------------------------------------------------------------- oracle


def _nfa_accepts(expr: Expr, data: bytes) -> bool:
    """Minimal Thompson-style matcher for Ref/And/Not-free IR (fallback when reference is missing)."""

    def step(e: Expr, rest: tuple[Expr, ...], pos: int, out: set[tuple[int, tuple[Expr, ...]]]) -> None:
        if isinstance(e, Bytes):
            if data.startswith(e.value, pos):
                out.add((pos + len(e.value), rest))
        elif isinstance(e, ByteSet):
            if pos < len(data) and e.contains(data[pos]):
                out.add((pos + 1, rest))
        elif isinstance(e, Seq):
            out.add((pos, (*e.items, *rest)))
        elif isinstance(e, Alt):
            for x in e.items:
                out.add((pos, (x, *rest)))
        elif isinstance(e, Repeat):
            if e.min > 0:
                nxt = Repeat(e.item, e.min - 1, None if e.max is None else e.max - 1)
                out.add((pos, (e.item, nxt, *rest)))
            else:
                out.add((pos, rest))
                if e.max != 0:
                    nxt = Repeat(e.item, 0, None if e.max is None else e.max - 1)
                    out.add(
                        (pos, (Alt((Seq((e.item, nxt)),)) if e.max is None else Seq((e.item, nxt)), *rest))
                    )
        else:
            raise AssertionError(f"fallback matcher cannot handle {e!r}")

    seen: set[tuple[int, tuple[Expr, ...]]] = set()
    todo = [(0, (expr,))]
    while todo:
        pos, stack = todo.pop()
        if (pos, stack) in seen:
            continue
        seen.add((pos, stack))
        if not stack:
            if pos == len(data):
                return True
            continue
        out: set[tuple[int, tuple[Expr, ...]]] = set()
        step(stack[0], stack[1:], pos, out)
        todo.extend(out)
    return False


def accepts(g: Grammar, s: str | bytes) -> bool:
    data = s.encode("utf-8") if isinstance(s, str) else s
    if _ref_accepts is not None:
        return _ref_accepts(g, data)
    return _nfa_accepts(g.rules[g.root], data)


# ----------------------------------------------------------------------------- ECMA -> Python

_ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_OUTSIDE = {
    "d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]",
    "s": f"[{_ECMA_SPACE}]", "S": f"[^{_ECMA_SPACE}]", "z": "\\Z",
}  # fmt: skip
_INSIDE = {"d": "0-9", "w": "A-Za-z0-9_", "s": _ECMA_SPACE}


def to_python(p: str, dotall: bool = False) -> str:
    """The ECMA-semantics pattern ``p`` as a Python pattern (ASCII classes, strict ``$``)."""
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            e = p[i + 1]
            if not in_class and e in _OUTSIDE:
                out.append(_OUTSIDE[e])
            elif in_class and e in _INSIDE:
                out.append(_INSIDE[e])
            else:
                assert not (in_class and e in "DWS"), "not translatable"
                out.append(p[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif p.startswith("(?<", i) and p[i + 3 : i + 4] not in "=!":
            c = "(?P<"
            i += 2
        elif c == "[":
            in_class = True
            if p[i + 1 : i + 2] == "^":
                out.append("[^")
                i += 2
                continue
        elif c == "$":
            c = "\\Z"
        elif c == ".":
            c = "(?s:.)" if dotall else "[^\\n\\r\\u2028\\u2029]"
        out.append(c)
        i += 1
    return "".join(out)


# pattern, alphabet for exhaustive strings (plus a few standard extras)
CASES: list[tuple[str, str]] = [
    ("abc", "abc"),
    ("a|b|", "ab"),
    ("a*b+c?", "abc"),
    ("(ab|a)(bc|c)", "abc"),
    ("a{2}", "a"),
    ("a{2,}", "a"),
    ("a{1,3}b{0,2}", "ab"),
    ("(a|bc){2,3}", "abc"),
    ("(?:ab)*?c", "abc"),
    ("a+?b??", "ab"),
    ("(a*)*", "ab"),
    ("(a?){3}", "a"),
    ("[a-c]x[^a-c]", "abcx"),
    ("[^a]", "ab\u00e9\U0001f600"),
    ("[^\\u0080-\\uffff]+", "a\u00e9\u20ac\U0001f600"),
    ("[\\u00e0-\\u00ff\\U0001F600-\\U0001F64F]+", "a\u00e9\U0001f600\U0001f680"),
    ("\\u00e9|\\x41|\\t", "\u00e9A\tx"),
    ("[-a]|[a-]|[\\]\\[]", "a-[]"),
    ("[\\d]\\d|\\D", "1a"),
    ("\\w+\\W", "a_1 -"),
    ("\\s\\S", " \u00a0\u3000a\n"),
    ("[\\s\\d]+", " 1a\u2028"),
    ("a.b", "ab\n\r\u2028\u00e9"),
    ("..", "a\U0001f600\n"),
    ("\\.\\*\\+\\?\\(\\)\\{\\}\\|\\^\\$\\\\", ".*+?(){}|^$\\"),
    ("a{,", "a{,"),
    ("x{1,2", "x{12,"),
    ("\\0|\\x00\\n", "\0\n"),
    ("(?P<name>ab)(?<other>c)?", "abc"),
    ("(?#comment)ab", "ab"),
    # anchors
    ("^abc", "abc"),
    ("abc$", "abc"),
    ("^abc$", "abc"),
    ("^a|b$", "abx"),
    ("^(a|b$)", "abx"),
    ("(^a|b)c", "abc"),
    ("a(b$|c)", "abc"),
    ("a^b", "ab"),
    ("a$b", "ab"),
    ("^*", ""),  # invalid in both: skipped by the comparison (see test)
    ("(^)*a", "ab"),
    ("(^a)*", "a"),
    ("(a$)*", "a"),
    ("(^a|b)+", "ab"),
    ("(^a|b$)*", "abx"),
    ("(^a|b)*", "ab"),
    ("$(^b|^c)", "bc"),
    ("(a|$)(^b|c)", "abc"),
    ("(^a|b|c$)+", "abc"),
    ("(^a|b){0,2}", "ab"),
    ("(^|a){1,3}b", "ab"),
    ("(a|$){2,3}", "ab"),
    ("(^a|b){2,3}", "ab"),
    ("(a|b$){1,2}", "ab"),
    ("(^|x)a($|y)", "axy"),
    ("x*^a", "ax"),
    ("a$x*", "ax"),
    ("^$", "a"),
    ("$^", "a"),
    ("(^a$)?b", "ab"),
    ("\\Aab\\Z", "ab"),
    ("\\Aa|b\\z", "ab"),
    ("(?:^|,)a", "a,b"),
    ("a(?:,|$)", "a,b"),
    # word boundaries next to word characters at the ends
    ("\\bab\\b", "ab -"),
    ("^\\bab", "ab -"),
    ("\\w+\\b$", "a -"),
    ("\\b[a-b]+\\b|x", "ab x"),
    ("(?s)a.b", "ab\n\u2028"),
    # runs of plain characters (one syntax node): a quantifier after a run takes its last character
    ("abc*d", "abcd"),
    ("ab{2}c|abc", "abc"),
    ("(foo|food|fo)+", "fod"),
    ("x-y_z?", "xyz-_"),
    ("\\bword\\b", "word -"),
    ("a{b", "a{b"),
    ("(?i)abC|xY", "abcxyABCXY"),
    ("\u00e9t\u00e9|ab\u00e9", "\u00e9tab"),
    # alternations of plain words (read in one match; eight or more: built as a set of literals)
    ("aa|ab|ba|bb|aaa|aab|aba|abb|baa", "ab"),
    ("x(aa|ab|ba|bb|aaa|aab|aba|abb|baa)+", "abx"),
    ("(aa|ab|ba|bb|aaa|aab|aba|abb|baa)(a|bab|ab|b|aaa|aab|aba|abb|baa)x", "abx"),
    ("ab|ba|ab|aab", "ab"),
    ("(ab|ba|aab)", "ab"),
    ("x(ab|ba)y|ab", "abxy"),
    ("(ab|ba)+", "ab"),
    ("(ab|bab*)", "ab"),
    ("(ab|ba){2}", "ab"),
    ("ab|ba|", "ab"),
    ("ab|b", "ab"),
    ("(ab|ba))", "ab"),
    ("(\u00e9t|t\u00e9|\u00e9\u00e9)", "\u00e9t"),
    ("^(ab|ba)$", "ab"),
    # lookaheads: items of a top-level alternative, and tempered tokens before the end
    ("(?!ab)[ab]+", "ab"),
    ("^(?!ab)[ab]+$", "abc"),
    ("a(?=b)", "abc"),
    ("a(?!b)", "abc"),
    ("a(?=b$)|c", "abc"),
    ("a(?!b$)", "ab"),
    ("(?=a)", "ab"),
    ("(?!a)", "ab"),
    ("(?=.*a)(?=.*b)[a-c]{3}", "abc"),
    ("(?!a|bb)[ab]{2}", "ab"),
    ("x(?!ab)(?=a)[ab]*y", "abxy"),
    ("^((?!ab).)*$", "abc"),
    ("^((?!ab)(?!ba).)+$", "abc"),
    ("x((?!a$)[ab])*$", "abx"),
    ("^(?!.*:)(?=.{1,4}$)(.{1,2}\\.)+(?![0-9]*$)[a-z0-9]+$", "a1.:"),
    # a start anchor inside a lookahead that stands at the start, or never does
    ("^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$", "+-.01"),  # (pydantic's Decimal as a string)
    ("^(?=^ab)a", "ab"),
    ("a(?!^b)b", "ab"),
    ("^x(?=^a|b)", "xab"),
    # lookaheads inside an alternation or an optional group: spelled out as top-level alternatives
    ("^(?!^[-+.]*$)[+-]?0*(?:\\d{0,3}|(?=[\\d.]{1,6}0*$)\\d{0,3}\\.\\d{0,2}0*$)", "-.01"),  # (Decimal, 5 digits)
    ("x(?:a|(?=b)c|(?!bc)b.)", "abcx"),
    ("x(?:(?=ab)a)?b", "abx"),
    ("(x|(?!a)b)c", "abcx"),
]

_EXTRA = "x\n\u00e9\U0001f600"


def _compiled_python(p: str, flags: int = 0) -> re.Pattern[str] | None:
    try:
        return re.compile(to_python(p, dotall="(?s)" in p), flags | re.ASCII)
    except re.error:
        return None


def _strings(alphabet: str, max_len: int, limit: int = 400) -> list[str]:
    out = []
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            out.append("".join(t))
            if len(out) >= limit:
                return out
    return out


@pytest.mark.parametrize(("pattern", "alphabet"), CASES)
def test_matches_python_exhaustively(pattern: str, alphabet: str) -> None:
    py = _compiled_python(pattern)
    if py is None:
        with pytest.raises(GrammarError):
            regex_grammar(pattern)
        return
    full = regex_grammar(pattern)
    search = regex_grammar(pattern, search=True)
    letters = "".join(sorted(set(alphabet))) or "a"
    strings = _strings(letters, 4, 300) + _strings("".join(sorted(set(letters[:2] + _EXTRA))), 3, 200)
    for s in strings:
        assert accepts(full, s) == (py.fullmatch(s) is not None), (pattern, s)
        assert accepts(search, s) == (py.search(s) is not None), (pattern, s, "search")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_matches_python_random(data: st.DataObject) -> None:
    pattern, alphabet = data.draw(st.sampled_from(CASES))
    py = _compiled_python(pattern)
    if py is None:
        return
    chars = st.sampled_from(sorted(set(alphabet + _EXTRA + " _-1")))
    s = data.draw(st.text(st.one_of(chars, st.characters(exclude_categories=["Cs"])), max_size=10))
    assert accepts(regex_grammar(pattern), s) == (py.fullmatch(s) is not None)
    assert accepts(regex_grammar(pattern, search=True), s) == (py.search(s) is not None)


def test_search_semantics_with_anchors() -> None:
    g = regex_grammar("^a|b$", search=True)
    assert accepts(g, "axx") and accepts(g, "xxb") and accepts(g, "ab")
    assert not accepts(g, "xax") and not accepts(g, "xbx") and not accepts(g, "")
    assert regex_expr("a^b") == NOTHING and regex_expr("a^b", search=True) == NOTHING
    assert accepts(regex_grammar("^$", search=True), "") and not accepts(
        regex_grammar("^$", search=True), "a"
    )
    # fullmatch: anchors at the ends are no-ops
    assert regex_grammar("^ab$") == regex_grammar("ab")


def test_lookaheads_where_the_rest_of_the_string_is_known() -> None:
    # a tempered token matches whole strings; in a search, what follows a match is open: refused
    assert accepts(regex_grammar("((?!ab).)*"), "ba") and not accepts(regex_grammar("((?!ab).)*"), "xaby")
    with pytest.raises(UnsupportedFeatureError):
        regex_grammar("((?!ab).)*", search=True)
    # a lookahead whose body reaches past the alternative's own match (a search: anything may follow)
    g = regex_grammar("^a(?=.*z)", search=True)
    assert accepts(g, "abz") and accepts(g, "az") and not accepts(g, "ab") and not accepts(g, "za")
    # MaskBench's forms: a reserved prefix, a reserved name, a password rule
    g = regex_grammar("^(?!org\\.bukkit\\.)([a-z]+\\.)*[a-z]+$", search=True)
    assert accepts(g, "org.example.x") and accepts(g, "org.bukkitx") and not accepts(g, "org.bukkit.x")
    g = regex_grammar("^(?!pattern$).*$", search=True)
    assert accepts(g, "patterns") and accepts(g, "") and not accepts(g, "pattern")
    g = regex_grammar("(?=.*[0-9])(?=.*[A-Z]).{8,}")
    assert accepts(g, "abcdefG1") and not accepts(g, "abcdefgh1") and not accepts(g, "aB1")


def test_lookaheads_in_groups_are_spelled_out_up_to_a_limit() -> None:
    """An alternation holding a lookahead becomes alternatives of its own, at most
    ``MAX_DISTRIBUTED_ALTERNATIVES`` more; past that, or in a repetition, the lookahead is refused."""
    from logitgate.grammar.regex import MAX_DISTRIBUTED_ALTERNATIVES

    n = MAX_DISTRIBUTED_ALTERNATIVES.bit_length()  # (n groups of two choices: 2 ** n alternatives)
    assert 2 ** (n - 1) <= MAX_DISTRIBUTED_ALTERNATIVES < 2 ** n
    fits = "(?:a|(?=b)bc)" * (n - 1)
    g = regex_grammar(fits)
    assert accepts(g, "a" * (n - 2) + "bc") and not accepts(g, "a" * (n - 2) + "b")
    for pattern in ("(?:a|(?=b)bc)" * n, "(?:(?=a)..|b)+"):
        with pytest.raises(UnsupportedFeatureError):
            regex_grammar(pattern)


def test_a_start_anchor_inside_a_lookahead_is_refused_where_the_position_may_be_either() -> None:
    """``^`` inside a lookahead matches only where the lookahead stands at the string's start:
    exact after start anchors (always there) or after a character (never); where what comes before
    may be empty -- or, in a search, preceded by anything -- it is refused, naming its offset."""
    for pattern in ("(?=^a)a", "x*(?!^a)b", "(?!^)a"):
        with pytest.raises(UnsupportedFeatureError) as info:
            regex_grammar(pattern, search=True)
        assert "start anchor inside a lookahead" in str(info.value) and info.value.offset == pattern.index("(?")
    g = regex_grammar("^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$", search=True)
    assert accepts(g, "-0.25") and accepts(g, "+.5") and not accepts(g, "+.") and not accepts(g, "")


def test_ecma_dollar_is_end_only() -> None:
    # Python's $ also matches before a final newline; ECMA-262's does not.
    g = regex_grammar("a$", search=True)
    assert accepts(g, "xa") and not accepts(g, "a\n")


# ----------------------------------------------------------------------------- Unicode


@settings(max_examples=200, deadline=None)
@given(st.characters(exclude_categories=["Cs"]))
def test_negated_class_and_dot_over_all_code_points(ch: str) -> None:
    neg = regex_grammar("[^a-z\\u00e9\\U0001F600]")
    assert accepts(neg, ch) == (not ("a" <= ch <= "z" or ch in "\u00e9\U0001f600"))
    assert accepts(regex_grammar("."), ch) == (ch not in "\n\r\u2028\u2029")
    assert accepts(regex_grammar(".", dotall=True), ch)
    assert accepts(regex_grammar("\\s"), ch) == (re.fullmatch(f"[{_ECMA_SPACE}]", ch) is not None)
    assert accepts(regex_grammar("\\W"), ch) == (re.fullmatch("[A-Za-z0-9_]", ch) is None)


def test_class_escapes_over_code_points() -> None:
    checks = [
        (regex_grammar("\\s"), re.compile(f"[{_ECMA_SPACE}]")),
        (regex_grammar("[^\\S]"), re.compile(f"[{_ECMA_SPACE}]")),
        (regex_grammar("\\w"), re.compile("[A-Za-z0-9_]")),
        (regex_grammar("\\D"), re.compile("[^0-9]")),
        (regex_grammar("."), re.compile("[^\\n\\r\\u2028\\u2029]")),
    ]
    for cp in [*range(0x3100), *range(0xFE00, 0xFF10), 0x10000, 0x10FFFF]:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        for g, py in checks:
            assert accepts(g, ch) == (py.fullmatch(ch) is not None), (hex(cp), py.pattern)


@settings(max_examples=200, deadline=None)
@given(st.characters(exclude_categories=["Cs"]))
def test_unicode_properties(ch: str) -> None:
    cat = unicodedata.category(ch)
    assert accepts(regex_grammar("\\p{Lu}"), ch) == (cat == "Lu")
    assert accepts(regex_grammar("\\p{L}"), ch) == cat.startswith("L")
    assert accepts(regex_grammar("\\P{Number}"), ch) == (not cat.startswith("N"))
    assert accepts(regex_grammar("[\\p{gc=Nd}_]"), ch) == (cat == "Nd" or ch == "_")


def test_astral_and_surrogate_escapes() -> None:
    for p in ("\\u{1F600}", "\\U0001F600", "\\uD83D\\uDE00", "[\\uD83D\\uDE00]", "\\N{GRINNING FACE}"):
        g = regex_grammar(p)
        assert accepts(g, "\U0001f600") and not accepts(g, "\ud83d".encode("utf-8", "surrogatepass")), p
    # a lone surrogate matches nothing (it has no UTF-8 encoding); classes just drop surrogates
    assert regex_expr("\\uD800") == NOTHING
    assert accepts(regex_grammar("[\\uD000-\\uE000]"), "\ue000")


def test_ignorecase_matches_python() -> None:
    pats = ["abc", "[a-f]+", "[^k]", "\u03c3|\u00c9", "\u01c5", "(?i:x)y"]
    sample = "aAbBcCfFgkK\u212a\u03a3\u03c3\u03c2\u00e9\u00c9\u01c4\u01c5\u01c6sS\u017fxXyY"
    for p in pats:
        full = regex_grammar(p, flags="i")
        py = re.compile(p, re.IGNORECASE)
        for n in (1, 2, 3):
            for t in (
                itertools.product(sample, repeat=n)
                if n < 3
                else itertools.islice(itertools.product(sample, repeat=3), 0, None, 37)
            ):
                s = "".join(t)
                assert accepts(full, s) == (py.fullmatch(s) is not None), (p, s)
    assert regex_grammar("(?i)ab") == regex_grammar("ab", ignorecase=True) == regex_grammar("ab", flags=re.I)
    g = regex_grammar("a(?i:b)c")
    assert accepts(g, "aBc") and not accepts(g, "Abc") and not accepts(g, "abC")


# ----------------------------------------------------------------------------- encode_chars


def test_encode_chars_receives_every_character() -> None:
    calls: list[tuple[tuple[int, int], ...]] = []

    def enc(ranges):  # spell every character as "<" + its UTF-8 + ">"
        calls.append(tuple(ranges))
        return Alt(
            tuple(lit("<" + chr(cp) + ">") for lo, hi in ranges for cp in range(lo, min(hi, lo + 3) + 1))
        )

    e = regex_expr("ab[xy]", encode_chars=enc)
    g = Grammar({"root": e})
    assert accepts(g, "<a><b><y>") and not accepts(g, "aby")
    assert ((0x61, 0x61),) in calls and ((0x62, 0x62),) in calls and ((0x78, 0x79),) in calls
    s = Grammar({"root": regex_expr("^a", search=True, encode_chars=enc)})
    assert accepts(s, "<a><\x00>") and ((0, 0x10FFFF),) in calls  # search tail uses the full range


def test_json_string_encoding() -> None:
    strings = pytest.importorskip("logitgate.grammar.json_schema.strings")
    for pattern in ('^a"b$', "\\d+\\\\", "^[^a]$", "x\\n"):
        g = Grammar({"root": regex_expr(pattern, search=True, encode_chars=strings.encode_chars)})
        py = re.compile(to_python(pattern))
        for s in ('a"b', "1\\", "12\\x", "\n", "\u00e9", "a", "x\n", '"', "\U0001f600"):
            body = json.dumps(s)[1:-1]
            assert accepts(g, body) == (py.search(s) is not None), (pattern, s)
            assert accepts(g, json.dumps(s, ensure_ascii=False)[1:-1]) == (py.search(s) is not None)


# ----------------------------------------------------------------------------- errors and limits

SYNTAX_ERRORS = [
    ("(ab", 0), ("ab)", 2), ("[a-", 0), ("a**", 2), ("*a", 0), ("[z-a]", 1), ("a{3,2}", 2),
    ("a|*", 2), ("\\", 0), ("a\\", 1), ("\\xZZ", 0), ("\\u12", 0), ("x(?i)", 1), ("[\\d-z]", 1),
    ("a{2}{3}", 4), ("a??+", 3), ("\\q", 0), ("(a|b", 0), ("{2}", 0), ("^*", 1), ("(?", 0),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "offset"), SYNTAX_ERRORS)
def test_syntax_errors_have_offsets(pattern: str, offset: int) -> None:
    with pytest.raises(RegexError) as info:
        regex_grammar(pattern)
    assert info.value.offset == offset and info.value.pattern == pattern
    try:  # the same offset Python reports, where Python rejects the pattern too
        re.compile(pattern)
    except re.error as e:
        assert e.pos == offset or pattern in ("(?",)


UNSUPPORTED = [
    ("(a(?=b))*", 2), ("(?=a)*", 5), ("(x|(?!a)b)*c", 3), ("((?!a).)*b", 1), ("^(x(?!y)(a|b))+$", 3), ("(?=^a)", 0),
    ("(?<=a)b", 0), ("(?<!a)b", 0), ("(a)\\1", 3), ("(?<n>a)\\k<n>", 7),
    ("(?P<n>a)(?P=n)", 8), ("a*+", 2), ("a{2}+", 4), ("(?>a)", 0), ("x\\by", 1), ("\\Ba", 0),
    ("a{,3}", 1), ("[]a]", 1), ("[^]", 2), ("(?m)a", 2), ("\\p{Script=Latin}", 0), ("(^a|b){20}", 6),
    ("a-\\b", 2), ("\\b-a", 0), ("(\\ba|b)c", 1),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "offset"), UNSUPPORTED)
def test_unsupported_features_name_offset(pattern: str, offset: int) -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        regex_grammar(pattern)
    assert f"offset {offset}" in str(info.value)
    assert info.value.offset == offset  # type: ignore[attr-defined]
    assert isinstance(info.value, GrammarError) and isinstance(info.value, ValueError)


def test_limits() -> None:
    with pytest.raises(LimitExceededError):
        regex_grammar("a{1000000}")
    with pytest.raises(LimitExceededError):
        regex_grammar("a{1,20000}")
    with pytest.raises(LimitExceededError):
        regex_grammar("((a{100}){100}){200}")
    with pytest.raises(LimitExceededError):
        regex_grammar("[a-z]{500}", max_size=100)
    with pytest.raises(LimitExceededError):
        regex_grammar("(" * 150 + "a" + ")" * 150)
    assert accepts(regex_grammar("(" * 50 + "a" + ")" * 50), "a")
    g = regex_grammar("a{10000}")
    assert g.rules["root"] == Repeat(Bytes(b"a"), 10000, 10000)


def test_size_estimates_kept_between_patterns_count_as_a_fresh_walk() -> None:
    """The size check keeps its estimates of the subexpressions patterns share (character classes'
    JSON encodings): each pattern's estimate equals a walk of its own expression, and a pattern over
    the limit is refused again however much of it was estimated before."""
    from logitgate.grammar.json_schema.strings import encode_chars
    from logitgate.grammar.regex import _estimate

    def walk(e) -> int:
        if type(e) is Bytes:
            return len(e.value)
        if type(e) is ByteSet:
            return 1
        if type(e) is Repeat:
            return walk(e.item) * max(1, e.max if e.max is not None else e.min + 1)
        return sum(walk(x) for x in e.children())

    for pattern in ("^[a-z]{3}$", "[a-z]{3}x[0-9]+", "(.*)\\.txt", "^[a-z]{3}$", "é{2,4}[^a-c]"):
        e = regex_expr(pattern, search=True, encode_chars=encode_chars)
        assert _estimate(e, {}) == walk(e) > 0, pattern
    limit = walk(regex_expr("[a-z]{40}", encode_chars=encode_chars))  # (the class's estimate is kept)
    assert regex_expr("[a-z]{40}", encode_chars=encode_chars, max_size=limit) is not None
    for _ in range(2):
        with pytest.raises(LimitExceededError):
            regex_expr("[a-z]{41}", encode_chars=encode_chars, max_size=limit)


def test_grammar_api() -> None:
    g = Grammar.from_regex("[0-9]+", search=False)
    assert g == regex_grammar("[0-9]+") and g.root == "root"
    h = regex_grammar("x", rule_name="num")
    assert h.root == "num" and accepts(h, "x")
    assert regex_grammar("a|a") == regex_grammar("a")
    with pytest.raises(UnsupportedFeatureError):
        regex_grammar("a", flags=re.MULTILINE)
