r"""EBNF / GBNF front-end: :func:`parse_ebnf` (text -> :class:`~.ir.Grammar`) and
:func:`format_grammar` (grammar -> text that parses back to an equal grammar).

The input syntax is llama.cpp's GBNF::

    root   ::= item ("," ws item)*        # comments run to the end of the line
    item   ::= "a" | 'b' | [c-e] | [^\n"] | . | (x y)? | z{2,5}
    ws     ::= [ \t\n]*

* rules ``name ::= expr``; a rule ends where the next ``name ::=`` begins, so rules
  may span several lines. Names use ``[A-Za-z0-9_-]`` and may contain dots between
  those characters (``json.value``); a name must start with a letter or ``_``.
* strings in ``"..."`` or ``'...'`` and classes ``[...]`` / ``[^...]`` are Unicode:
  they match the UTF-8 encoding of their characters. Escapes: ``\n \r \t \\ \" \'
  \[ \]``, ``\xHH`` (code point U+00HH), ``\uHHHH`` and ``\UHHHHHHHH``.
* ``.`` is any one UTF-8 encoded character; ``|`` alternation; ``( )`` grouping;
  postfix ``*``, ``+``, ``?``, ``{m}``, ``{m,}``, ``{m,n}``; an empty alternative is
  the empty string.

Extensions (so that every IR node can be printed; llama.cpp does not know them):

=====================  =========================================================
``%x[30-39 41 C2-DF]``  one *byte* from hex bytes / ranges (``%x[^0A]``: negated)
``%x"E2 80"``           a raw byte string, hex bytes (need not be valid UTF-8)
``a & b``               intersection (binds tighter than ``|``, looser than
                        concatenation); operands must be regular
``~a``                  complement over all byte strings (prefix; applies to the
                        postfix expression after it: ``~a*`` is ``~(a*)``)
``%nothing``            the empty language (matches no string at all)
``%root name``          the start rule when it is not called ``root``
=====================  =========================================================
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from ..errors import EbnfSyntaxError, GrammarError
from .ir import (
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
    Special,
    normalize,
)
from .utf8 import MAX_CODEPOINT, codepoint_ranges_expr, complement_codepoints, normalize_codepoint_ranges

__all__ = ["format_grammar", "parse_ebnf"]

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NAME_RE = re.compile(r"[A-Za-z0-9_\-]+(?:\.+[A-Za-z0-9_\-]+)*")
_VALID_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "\\": 0x5C, '"': 0x22, "'": 0x27, "[": 0x5B, "]": 0x5D}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_MAX_DEPTH = 100
_ANY_CHAR: Expr | None = None


def _any_char() -> Expr:
    global _ANY_CHAR
    if _ANY_CHAR is None:
        _ANY_CHAR = codepoint_ranges_expr([(0, MAX_CODEPOINT)])
    return _ANY_CHAR


@dataclass(slots=True)
class _Tok:
    kind: str
    pos: int
    value: Any = None


_TOKEN_NAMES = {
    "name": "rule name",
    "def": "'::='",
    "eof": "end of input",
    "str": "string",
    "class": "character class",
    "xbytes": "'%x\"...\"'",
    "xclass": "'%x[...]'",
    "rep": "'{...}'",
    "root": "'%root'",
    "nothing": "'%nothing'",
}


def _describe(tok: _Tok) -> str:
    return _TOKEN_NAMES.get(tok.kind, f"'{tok.kind}'")


class _Source:
    """The text plus a line index, to turn offsets into (line, column, source line)."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, pos: int) -> tuple[int, int]:
        pos = max(0, min(pos, len(self.text)))
        idx = bisect.bisect_right(self.line_starts, pos) - 1
        return idx + 1, pos - self.line_starts[idx] + 1

    def error(self, message: str, pos: int) -> EbnfSyntaxError:
        line, col = self.line_col(pos)
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        source_line = self.text[start : (len(self.text) if end < 0 else end)].rstrip("\r")
        return EbnfSyntaxError(message, line, col, source_line)


# ----------------------------------------------------------------------------- lexer


class _Lexer:
    def __init__(self, src: _Source):
        self.src = src
        self.text = src.text
        self.n = len(self.text)

    def tokens(self) -> list[_Tok]:
        text, n = self.text, self.n
        out: list[_Tok] = []
        i = 0
        while True:
            # skip whitespace and comments
            while i < n:
                c = text[i]
                if c in " \t\r\n\f\v":
                    i += 1
                elif c == "#":
                    j = text.find("\n", i)
                    i = n if j < 0 else j + 1
                else:
                    break
            if i >= n:
                out.append(_Tok("eof", n))
                return out
            c = text[i]
            if c in _NAME_CHARS:
                m = _NAME_RE.match(text, i)
                assert m is not None
                out.append(_Tok("name", i, m.group()))
                i = m.end()
            elif c == ":":
                if text.startswith("::=", i):
                    out.append(_Tok("def", i))
                    i += 3
                else:
                    raise self.src.error("expected '::='", i)
            elif c in "\"'":
                value, j = self._string(i)
                out.append(_Tok("str", i, value))
                i = j
            elif c == "[":
                value, j = self._class(i)
                out.append(_Tok("class", i, value))
                i = j
            elif c == ".":
                out.append(_Tok("class", i, _any_char()))
                i += 1
            elif c in "()|&~*+?":
                out.append(_Tok(c, i))
                i += 1
            elif c == "{":
                value, j = self._braces(i)
                out.append(_Tok("rep", i, value))
                i = j
            elif c == "%":
                tok, j = self._percent(i)
                out.append(tok)
                i = j
            elif c == "=":
                raise self.src.error("expected '::=' (GBNF defines rules with 'name ::= ...')", i)
            elif c == "<":
                raise self.src.error("token references '<...>' are not supported", i)
            else:
                raise self.src.error(f"unexpected character {c!r}", i)

    # -- pieces
    def _char(self, i: int, quote: str | None) -> tuple[int, int]:
        """One (possibly escaped) character at ``i``: (code point, next offset)."""
        text = self.text
        c = text[i]
        if c != "\\":
            cp = ord(c)
            if 0xD800 <= cp <= 0xDFFF:
                raise self.src.error("lone surrogate character", i)
            return cp, i + 1
        if i + 1 >= self.n:
            raise self.src.error("unterminated escape sequence", i)
        e = text[i + 1]
        if e in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[e], i + 2
        if e in _HEX_ESCAPES:
            k = _HEX_ESCAPES[e]
            digits = text[i + 2 : i + 2 + k]
            if len(digits) != k or not all(d in _HEX for d in digits):
                raise self.src.error(f"escape '\\{e}' needs {k} hex digits", i)
            cp = int(digits, 16)
            if cp > MAX_CODEPOINT:
                raise self.src.error(f"code point U+{cp:X} is beyond U+10FFFF", i)
            if 0xD800 <= cp <= 0xDFFF and quote is not None:
                raise self.src.error(f"surrogate U+{cp:04X} has no UTF-8 encoding", i)
            return cp, i + 2 + k
        raise self.src.error(f"unknown escape sequence '\\{e}'", i)

    def _string(self, start: int) -> tuple[Expr, int]:
        quote = self.text[start]
        i = start + 1
        chars: list[str] = []
        while True:
            if i >= self.n:
                raise self.src.error("unterminated string", start)
            if self.text[i] == quote:
                return Bytes("".join(chars).encode("utf-8")), i + 1
            cp, i = self._char(i, quote)
            chars.append(chr(cp))

    def _class(self, start: int) -> tuple[Expr, int]:
        text = self.text
        i = start + 1
        negated = i < self.n and text[i] == "^"
        if negated:
            i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if i >= self.n:
                raise self.src.error("unterminated character class", start)
            if text[i] == "]":
                i += 1
                break
            at = i
            lo, i = self._char(i, None)
            hi = lo
            if i + 1 < self.n and text[i] == "-" and text[i + 1] != "]":
                hi, i = self._char(i + 1, None)
                if hi < lo:
                    raise self.src.error("character range is out of order", at)
            ranges.append((lo, hi))
        if negated:
            ranges = complement_codepoints(ranges)
        return codepoint_ranges_expr(ranges), i

    def _braces(self, start: int) -> tuple[tuple[int, int | None], int]:
        m = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}").match(self.text, start)
        if m is None:
            raise self.src.error("malformed repetition: expected {m}, {m,} or {m,n}", start)
        lo = int(m.group(1))
        if m.group(2) is None:
            hi: int | None = lo
        elif m.group(3):
            hi = int(m.group(3))
        else:
            hi = None
        if hi is not None and hi < lo:
            raise self.src.error(f"repetition bounds {{{lo},{hi}}} are out of order", start)
        return (lo, hi), m.end()

    def _percent(self, start: int) -> tuple[_Tok, int]:
        text = self.text
        if text.startswith("%x[", start):
            end = text.find("]", start)
            if end < 0:
                raise self.src.error("unterminated byte class", start)
            body = text[start + 3 : end]
            negated = body.startswith("^")
            if negated:
                body = body[1:]
            ranges: list[tuple[int, int]] = []
            for m in re.finditer(r"\S+", body):
                item = re.fullmatch(r"([0-9A-Fa-f]{2})(?:-([0-9A-Fa-f]{2}))?", m.group())
                at = start + 3 + int(negated) + m.start()
                if item is None:
                    raise self.src.error("byte class items must be hex bytes HH or ranges HH-HH", at)
                lo = int(item.group(1), 16)
                hi = int(item.group(2), 16) if item.group(2) else lo
                if hi < lo:
                    raise self.src.error("byte range is out of order", at)
                ranges.append((lo, hi))
            value = _byteset(ranges, negated)
            return _Tok("xclass", start, value), end + 1
        if text.startswith('%x"', start):
            end = text.find('"', start + 3)
            if end < 0:
                raise self.src.error("unterminated byte string", start)
            body = text[start + 3 : end]
            compact = re.sub(r"\s+", "", body)
            if len(compact) % 2 or not all(d in _HEX for d in compact):
                raise self.src.error('byte string must hold hex byte pairs like %x"E2 80"', start)
            return _Tok("xbytes", start, Bytes(bytes.fromhex(compact))), end + 1
        m = re.compile(r"%([A-Za-z]+)").match(text, start)
        word = m.group(1) if m else ""
        if word == "nothing":
            return _Tok("nothing", start, NOTHING), m.end()  # type: ignore[union-attr]
        if word == "root":
            return _Tok("root", start), m.end()  # type: ignore[union-attr]
        raise self.src.error(f"unknown directive '%{word}'", start)


def _byteset(ranges: list[tuple[int, int]], negated: bool) -> Expr:
    mask = 0
    for lo, hi in ranges:
        mask |= ((1 << (hi - lo + 1)) - 1) << lo
    if negated:
        mask ^= (1 << 256) - 1
    out: list[tuple[int, int]] = []
    b = 0
    while b < 256:
        if mask >> b & 1:
            e = b
            while e + 1 < 256 and mask >> (e + 1) & 1:
                e += 1
            out.append((b, e))
            b = e + 1
        else:
            b += 1
    return ByteSet(tuple(out))


# ----------------------------------------------------------------------------- parser

_ATOM_KINDS = frozenset({"str", "class", "xbytes", "xclass", "nothing", "("})
_POSTFIX_KINDS = frozenset({"*", "+", "?", "rep"})


class _Parser:
    def __init__(self, src: _Source, toks: list[_Tok]):
        self.src = src
        self.toks = toks
        self.i = 0
        self.depth = 0
        self.refs: list[tuple[str, int]] = []

    @property
    def peek(self) -> _Tok:
        return self.toks[self.i]

    def _at_rule_start(self) -> bool:
        t = self.toks[self.i]
        return t.kind == "name" and self.toks[self.i + 1].kind == "def"

    def _starts_item(self) -> bool:
        k = self.peek.kind
        if k in _ATOM_KINDS or k == "~":
            return True
        return k == "name" and not self._at_rule_start()

    def grammar(self, root: str) -> Grammar:
        rules: dict[str, Expr] = {}
        where: dict[str, int] = {}
        root_directive: str | None = None
        while self.peek.kind != "eof":
            t = self.peek
            if t.kind == "root":
                name_tok = self.toks[self.i + 1]
                if name_tok.kind != "name":
                    raise self.src.error("expected a rule name after '%root'", name_tok.pos)
                if root_directive is not None:
                    raise self.src.error("'%root' given twice", t.pos)
                root_directive = name_tok.value
                self.i += 2
                continue
            if t.kind != "name":
                raise self.src.error(
                    f"expected a rule definition 'name ::= ...', found {_describe(t)}", t.pos
                )
            if self.toks[self.i + 1].kind != "def":
                nxt = self.toks[self.i + 1]
                raise self.src.error(f"expected '::=' after rule name {t.value!r}", nxt.pos)
            name = self._check_name(t)
            if name in rules:
                line, col = self.src.line_col(where[name])
                raise self.src.error(
                    f"rule {name!r} is defined twice (first at line {line}, column {col})", t.pos
                )
            self.i += 2
            body = self.alternation()
            nxt = self.peek
            if nxt.kind not in ("eof", "root") and not self._at_rule_start():
                if nxt.kind in _POSTFIX_KINDS:
                    raise self.src.error(f"{_describe(nxt)} has nothing to repeat", nxt.pos)
                raise self.src.error(f"unexpected {_describe(nxt)}", nxt.pos)
            rules[name] = body
            where[name] = t.pos
        for ref, pos in self.refs:
            if ref not in rules:
                raise self.src.error(f"undefined rule {ref!r}", pos)
        if root_directive is not None and root == "root":
            root = root_directive
        if root not in rules:
            pos = 0
            if root_directive is not None:
                pos = next(p for p in (t.pos for t in self.toks if t.kind == "root"))
            raise self.src.error(f"root rule {root!r} is not defined", pos)
        try:
            return Grammar(rules, root=root)
        except GrammarError as exc:  # pragma: no cover - the checks above should catch everything
            raise self.src.error(str(exc), 0) from exc

    def _check_name(self, t: _Tok) -> str:
        name = t.value
        if not _VALID_NAME_RE.fullmatch(name):
            raise self.src.error(f"invalid rule name {name!r} (must start with a letter or '_')", t.pos)
        return name

    def alternation(self) -> Expr:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.src.error("expression nested too deeply", self.peek.pos)
        items = [self.intersection()]
        while self.peek.kind == "|":
            self.i += 1
            items.append(self.intersection())
        self.depth -= 1
        return items[0] if len(items) == 1 else Alt(tuple(items))

    def intersection(self) -> Expr:
        first = self.sequence()
        if self.peek.kind != "&":
            return EMPTY if first is None else first
        if first is None:
            raise self.src.error("'&' needs an expression on its left", self.peek.pos)
        items = [first]
        while self.peek.kind == "&":
            amp = self.peek
            self.i += 1
            nxt = self.sequence()
            if nxt is None:
                raise self.src.error("'&' needs an expression on its right", amp.pos)
            items.append(nxt)
        return And(tuple(items))

    def sequence(self) -> Expr | None:
        items: list[Expr] = []
        while self._starts_item():
            items.append(self.unary())
        if self.peek.kind in _POSTFIX_KINDS:
            raise self.src.error(f"{_describe(self.peek)} has nothing to repeat", self.peek.pos)
        if not items:
            return None
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def unary(self) -> Expr:
        negations = 0
        while self.peek.kind == "~":  # ~~x is x: count instead of nesting
            t = self.peek
            self.i += 1
            negations += 1
            if not self._starts_item():
                raise self.src.error("'~' needs an expression after it", t.pos)
        e = self.postfix()
        return Not(e) if negations % 2 else e

    def postfix(self) -> Expr:
        e = self.primary()
        while self.peek.kind in _POSTFIX_KINDS:
            t = self.peek
            self.i += 1
            if t.kind == "*":
                e = Repeat(e, 0, None)
            elif t.kind == "+":
                e = Repeat(e, 1, None)
            elif t.kind == "?":
                e = Repeat(e, 0, 1)
            else:
                lo, hi = t.value
                e = Repeat(e, lo, hi)
        return e

    def primary(self) -> Expr:
        t = self.peek
        if t.kind == "name":
            self.i += 1
            name = self._check_name(t)
            self.refs.append((name, t.pos))
            return Ref(name)
        if t.kind == "(":
            self.i += 1
            e = self.alternation()
            if self.peek.kind != ")":
                nxt = self.peek
                if nxt.kind in _POSTFIX_KINDS:
                    raise self.src.error(f"{_describe(nxt)} has nothing to repeat", nxt.pos)
                line, col = self.src.line_col(t.pos)
                raise self.src.error(
                    f"expected ')' to close the '(' at line {line}, column {col}, found {_describe(nxt)}",
                    nxt.pos,
                )
            self.i += 1
            return e
        if t.kind in ("str", "class", "xbytes", "xclass", "nothing"):
            self.i += 1
            return t.value
        raise self.src.error(f"expected an expression, found {_describe(t)}", t.pos)  # pragma: no cover


def parse_ebnf(text: str, root: str = "root") -> Grammar:
    """Parse GBNF/EBNF ``text`` into a :class:`Grammar` whose start rule is ``root``.

    A ``%root name`` line in the text names the start rule when ``root`` is left at
    its default. Raises :class:`EbnfSyntaxError` (with 1-based line and column) on
    malformed text, undefined or duplicate rules and a missing root rule.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_ebnf needs a str, got {type(text).__name__}")
    src = _Source(text)
    toks = _Lexer(src).tokens()
    try:
        return _Parser(src, toks).grammar(root)
    except RecursionError:
        raise src.error("grammar is nested too deeply", 0) from None


# ----------------------------------------------------------------------------- printer

_ALT, _AND, _SEQ, _UNARY, _POSTFIX, _PRIMARY = range(6)
_STR_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_ESCAPES = {"\\": "\\\\", "]": "\\]", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_cp(cp: int) -> str:
    if cp <= 0xFF:
        return f"\\x{cp:02X}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04X}"
    return f"\\U{cp:08X}"


def _quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _STR_ESCAPES:
            out.append(_STR_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(_escape_cp(ord(ch)))
    out.append('"')
    return "".join(out)


def _hex_bytes(b: bytes) -> str:
    return '%x"' + " ".join(f"{x:02X}" for x in b) + '"'


def _format_bytes(value: bytes) -> tuple[str, int]:
    if not value:
        return '""', _PRIMARY
    decoded = value.decode("utf-8", errors="surrogateescape")
    parts: list[str] = []
    run: list[str] = []
    raw: list[int] = []
    for ch in decoded:
        cp = ord(ch)
        if 0xDC80 <= cp <= 0xDCFF:
            if run:
                parts.append(_quote("".join(run)))
                run = []
            raw.append(cp - 0xDC00)
        else:
            if raw:
                parts.append(_hex_bytes(bytes(raw)))
                raw = []
            run.append(ch)
    if run:
        parts.append(_quote("".join(run)))
    if raw:
        parts.append(_hex_bytes(bytes(raw)))
    return " ".join(parts), (_PRIMARY if len(parts) == 1 else _SEQ)


def _class_char(cp: int, first: bool) -> str:
    ch = chr(cp)
    if ch in _CLASS_ESCAPES:
        return _CLASS_ESCAPES[ch]
    if cp < 0x20 or cp == 0x7F or ch == "-" or (first and ch == "^") or not ch.isprintable():
        return _escape_cp(cp)
    return ch


def _format_class(ranges: list[tuple[int, int]], negated: bool = False) -> str:
    """A ``[...]`` class over code-point ranges (a single ``-`` goes first, unescaped)."""
    items: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if hi == lo + 1:
            items += [(lo, lo), (hi, hi)]
        else:
            items.append((lo, hi))
    dash = (0x2D, 0x2D)
    body: list[str] = ["^"] if negated else []
    if dash in items:
        body.append("-")
    for lo, hi in items:
        if (lo, hi) == dash:
            continue
        first = not body
        if lo == hi:
            body.append(_class_char(lo, first))
        else:
            body.append(_class_char(lo, first) + "-" + _class_char(hi, False))
    return "[" + "".join(body) + "]"


def _format_byteset(ranges: tuple[tuple[int, int], ...]) -> str:
    if ranges[-1][1] >= 0x80:
        items = [f"{lo:02X}" if lo == hi else f"{lo:02X}-{hi:02X}" for lo, hi in ranges]
        return "%x[" + " ".join(items) + "]"
    return _format_class(list(ranges))


# -- recognising the output of codepoint_ranges_expr, to print it as a Unicode class


def _piece(e: Expr) -> list[tuple[tuple[int, int], ...]] | None:
    """``e`` as a sequence of byte-range sets, if it is a plain byte pattern of 1..4 bytes."""
    parts = e.items if isinstance(e, Seq) else (e,)
    out: list[tuple[tuple[int, int], ...]] = []
    for p in parts:
        if isinstance(p, ByteSet):
            out.append(p.ranges)
        elif isinstance(p, Bytes):
            out.extend(((b, b),) for b in p.value)
        else:
            return None
    return out if 1 <= len(out) <= 4 else None


_LEAD_LENGTH = ((0x00, 0x7F, 1), (0xC0, 0xDF, 2), (0xE0, 0xEF, 3), (0xF0, 0xF7, 4))


def _piece_codepoints(piece: list[tuple[tuple[int, int], ...]]) -> list[tuple[int, int]] | None:
    """Code points whose (possibly overlong) UTF-8 form the piece spells, or None."""
    n = len(piece)
    lead = piece[0]
    if not any(lo <= lead[0][0] and lead[-1][1] <= hi and k == n for lo, hi, k in _LEAD_LENGTH):
        return None
    for rs in piece[1:]:
        if rs[0][0] < 0x80 or rs[-1][1] > 0xBF:
            return None
    # the prefixes to enumerate: all positions before the last non-full one (bounded work)
    full = ((0x80, 0xBF),)
    last = max((k for k in range(1, n) if piece[k] != full), default=0)
    combos = 1
    for rs in piece[:last]:
        combos *= sum(hi - lo + 1 for lo, hi in rs)
    if combos > 4096:
        return None
    mask = (0x7F, 0x1F, 0x0F, 0x07)[n - 1]
    shift = 6 * (n - 1 - last)
    prefixes = [0]
    for k in range(last):
        m = mask if k == 0 else 0x3F
        prefixes = [(v << 6) | (b & m) for v in prefixes for lo, hi in piece[k] for b in range(lo, hi + 1)]
    m = mask if last == 0 else 0x3F
    out: list[tuple[int, int]] = []
    for v in prefixes:
        for lo, hi in piece[last]:
            a, b = (v << 6) | (lo & m), (v << 6) | (hi & m)
            out.append((a << shift, (b << shift) + (1 << shift) - 1))
    return out


def _as_class(items: tuple[Expr, ...]) -> str | None:
    """``items`` printed as one Unicode class if they are exactly ``codepoint_ranges_expr`` of one."""
    cps: list[tuple[int, int]] = []
    for it in items:
        piece = _piece(it)
        got = _piece_codepoints(piece) if piece is not None else None
        if got is None:
            return None
        cps.extend(got)
    ranges = normalize_codepoint_ranges(cps)
    target = codepoint_ranges_expr(ranges)
    if (target.items if isinstance(target, Alt) else (target,)) != items:
        return None
    if ranges == [(0, MAX_CODEPOINT)] or ranges == [(0, 0xD7FF), (0xE000, MAX_CODEPOINT)]:
        return "."
    comp = _bridge_surrogates(_without_surrogates(complement_codepoints(ranges)))
    ranges = _bridge_surrogates(ranges)
    if len(comp) < len(ranges) or (len(comp) == len(ranges) and ranges[-1][1] == MAX_CODEPOINT):
        return _format_class(comp, negated=True)
    return _format_class(ranges)


def _without_surrogates(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if lo < 0xD800:
            out.append((lo, min(hi, 0xD7FF)))
        if hi > 0xDFFF:
            out.append((max(lo, 0xE000), hi))
    return out


def _bridge_surrogates(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join ``(a, U+D7FF)`` and ``(U+E000, b)`` into ``(a, b)`` (surrogates never match anyway)."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if out and out[-1][1] == 0xD7FF and lo == 0xE000:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


_MAX_CLASS_TRIES = 8


def _alt_parts(items: tuple[Expr, ...]) -> list[str]:
    """Alternatives printed at ``&`` level, runs of UTF-8 byte patterns folded into classes."""
    out: list[str] = []
    i, n = 0, len(items)
    while i < n:
        j = i
        while j < n and _piece(items[j]) is not None and (j == i or len(_piece(items[j]) or ()) > 1):
            j += 1
        done = False
        for k in range(j, max(i + 1, j - _MAX_CLASS_TRIES) - 1, -1):
            if k - i >= 2 or (k - i == 1 and isinstance(items[i], Seq)):
                cls = _as_class(items[i:k])
                if cls is not None:
                    out.append(cls)
                    i = k
                    done = True
                    break
        if not done:
            out.append(_fmt(items[i], _AND))
            i += 1
    return out


def _repeat_suffix(lo: int, hi: int | None) -> str:
    if hi is None:
        return "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
    if lo == 0 and hi == 1:
        return "?"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


def _seq_parts(items: tuple[Expr, ...]) -> list[str]:
    """Sequence items printed at unary level; a multi-byte class that normalization spliced
    into the sequence (``"a" [é-ü]`` is ``"a\xc3" [A9-BC]`` in the IR) prints as a class again."""
    if not any(isinstance(x, ByteSet) for x in items):
        return [_format_bytes(x.value)[0] if isinstance(x, Bytes) else _fmt(x, _UNARY) for x in items]
    # flatten to byte positions: an int (fixed byte), a ByteSet, or another expression
    flat: list[int | Expr] = []
    for x in items:
        if isinstance(x, Bytes):
            flat.extend(x.value)
        else:
            flat.append(x)
    out: list[str] = []
    lit_run = bytearray()

    def flush() -> None:
        if lit_run:
            out.append(_format_bytes(bytes(lit_run))[0])  # a sequence needs no parentheses
            lit_run.clear()

    i = 0
    while i < len(flat):
        x = flat[i]
        cls = None
        lead = ((x, x),) if isinstance(x, int) else x.ranges if isinstance(x, ByteSet) else None
        if lead is not None and lead[0][0] >= 0xC0:
            n = next((k for lo, hi, k in _LEAD_LENGTH if lo <= lead[0][0] <= hi), 0)
            window = flat[i : i + n]
            if (
                n > 1
                and len(window) == n
                and all(isinstance(y, int | ByteSet) for y in window)
                and any(isinstance(y, ByteSet) for y in window)
            ):
                cand = Seq(tuple(Bytes(bytes([y])) if isinstance(y, int) else y for y in window))
                cand_norm = normalize(cand)
                cls = _as_class((cand_norm,)) if isinstance(cand_norm, Seq) else None
        if cls is not None:
            flush()
            out.append(cls)
            i += n
        elif isinstance(x, int):
            lit_run.append(x)
            i += 1
        else:
            flush()
            out.append(_fmt(x, _UNARY))
            i += 1
    flush()
    return out


def _fmt(e: Expr, level: int) -> str:
    s, own = _fmt_node(e)
    return f"({s})" if own < level else s


def _fmt_node(e: Expr) -> tuple[str, int]:
    if isinstance(e, Bytes):
        return _format_bytes(e.value)
    if isinstance(e, ByteSet):
        return _format_byteset(e.ranges), _PRIMARY
    if isinstance(e, Ref):
        if not _NAME_RE.fullmatch(e.name):
            raise GrammarError(f"rule name {e.name!r} cannot be written as EBNF")
        return e.name, _PRIMARY
    if isinstance(e, Alt):
        if not e.items:
            return "%nothing", _PRIMARY
        parts = _alt_parts(e.items)
        return " | ".join(parts), (_PRIMARY if len(parts) == 1 else _ALT)
    if isinstance(e, And):
        return " & ".join(_fmt(x, _SEQ) for x in e.items), _AND
    if isinstance(e, Seq):
        cls = _as_class((e,)) if _piece(e) is not None else None
        if cls is not None:
            return cls, _PRIMARY
        return " ".join(_seq_parts(e.items)), _SEQ
    if isinstance(e, Not):
        return "~" + _fmt(e.item, _PRIMARY), _UNARY
    if isinstance(e, Repeat):
        return _fmt(e.item, _PRIMARY) + _repeat_suffix(e.min, e.max), _POSTFIX
    if isinstance(e, Special):
        return _fmt_node(e.expand())
    raise GrammarError(f"not an IR expression: {e!r}")


def format_grammar(grammar: Grammar) -> str:
    """The grammar as GBNF text (plus the extensions above) that :func:`parse_ebnf`
    parses back to an equal grammar."""
    lines: list[str] = []
    names = list(grammar.rules)
    for name in names:
        if not _NAME_RE.fullmatch(name):
            raise GrammarError(f"rule name {name!r} cannot be written as EBNF")
    if grammar.root != "root":
        lines.append(f"%root {grammar.root}")
    width = max((len(n) for n in names), default=0)
    for name, expr in grammar.rules.items():
        head = f"{name.ljust(width)} ::= "
        if isinstance(expr, Alt) and expr.items:
            alts = _alt_parts(expr.items)
            one_line = head + " | ".join(alts)
            if len(one_line) <= 100:
                lines.append(one_line)
            else:
                pad = " " * (width + 3)
                lines.append(head + alts[0])
                lines.extend(f"{pad} | {a}" for a in alts[1:])
        else:
            lines.append(head + _fmt(expr, _ALT))
    return "\n".join(lines) + "\n"
