"""Regular expressions as grammar IR (ECMA-262 / Python ``re`` common subset).

:func:`regex_grammar` builds a :class:`~logitgate.grammar.ir.Grammar` from a pattern and
:func:`regex_expr` the bare IR expression (the JSON Schema front-end uses it for
``pattern``, with ``encode_chars`` mapping each character set to its JSON spellings).

Dialect (code point semantics, like ECMA-262 with the ``u`` flag):

* literals, escapes ``\\n \\t \\r \\f \\v \\0 \\ooo \\xHH \\uHHHH \\u{H..} \\UHHHHHHHH \\N{name}
  \\cX``, escaped punctuation; ``\\uD83D\\uDE00`` (a surrogate pair) is one code point;
* classes ``[...]`` with ranges and negation, ``\\d \\w \\s \\D \\W \\S`` with ECMA
  meaning (``\\d`` = ``[0-9]``, ``\\w`` = ``[A-Za-z0-9_]``, ``\\s`` = ECMA white space and
  line terminators), ``\\p{..}``/``\\P{..}`` Unicode general categories;
* ``.`` = any code point but ``\\n \\r \\u2028 \\u2029`` (any at all with ``dotall``);
* ``^ $ \\A \\Z \\z`` anchors (``$`` only at the very end, as in ECMA-262), handled
  exactly wherever they appear; ``\\b`` only first or last in a top-level alternative
  next to a word character;
* groups ``( ) (?: ) (?P<n> ) (?<n> )``, comments ``(?#..)``, flags ``(?i) (?s)`` at the
  start and scoped ``(?i-s: )``; alternation; greedy and lazy quantifiers.

Lookaheads ``(?=X)``/``(?!X)`` are exact as items of a top-level alternative and in a tempered
token ``((?!X)c)*`` before the end (see :meth:`_Translator.looked`); lookaheads elsewhere,
lookbehind, backreferences, possessive quantifiers, atomic groups, conditionals and
multiline/verbose modes raise :class:`~logitgate.errors.UnsupportedFeatureError` (message
and ``.offset`` give the position); syntax errors raise
:class:`~logitgate.errors.RegexError`. Where the two dialects disagree (``[]``, ``{,n}``)
the pattern is rejected rather than guessed.

``search=False`` matches the whole string (``re.fullmatch``); ``search=True`` (JSON
Schema) accepts strings that *contain* a match, honouring anchors.

    >>> from logitgate.grammar.regex import regex_grammar
    >>> regex_grammar("ab?").rules["root"]
    Seq(items=(Bytes(value=b'a'), Repeat(item=Bytes(value=b'b'), min=0, max=1)))
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

from ..errors import LimitExceededError, RegexError, UnsupportedFeatureError
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
    Repeat,
    Seq,
    literal_alt,
    normalize,
)
from .utf8 import MAX_CODEPOINT, codepoint_ranges_expr, complement_codepoints, normalize_codepoint_ranges

__all__ = ["MAX_DEPTH", "MAX_REPEAT", "MAX_SIZE", "regex_expr", "regex_grammar"]

MAX_REPEAT = 10_000
"""Largest bound allowed in a counted repeat ``{m,n}``."""
MAX_SIZE = 1_000_000
"""Largest estimated expanded size of the result: byte positions with counted repeats multiplied out."""
MAX_DEPTH = 100
"""Deepest nesting of groups."""
_MAX_ANCHORED_UNROLL = 16  # counted repeats of sub-patterns holding anchors are unrolled up to this

Ranges = tuple[tuple[int, int], ...]
EncodeChars = Callable[[Ranges], Expr]

_DIGIT: Ranges = ((0x30, 0x39),)
_WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE: Ranges = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)  # fmt: skip
_LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_ALL: Ranges = ((0, MAX_CODEPOINT),)


def _complement(ranges: Iterable[tuple[int, int]]) -> Ranges:
    return tuple(complement_codepoints(ranges))


def _norm(ranges: Iterable[tuple[int, int]]) -> Ranges:
    return tuple(normalize_codepoint_ranges(ranges))


_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": _DIGIT,
    "D": _complement(_DIGIT),
    "w": _WORD,
    "W": _complement(_WORD),
    "s": _SPACE,
    "S": _complement(_SPACE),
}
_SIMPLE_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "f": 0x0C, "v": 0x0B}

# ----------------------------------------------------------------------------- Unicode tables


@lru_cache(maxsize=1)
def _case_table() -> tuple[list[int], dict[int, tuple[int, ...]]]:
    """Code points with case variants (sorted) and each one's equivalence class.

    Two code points are equivalent when linked by one-character ``str.lower``/``str.upper``
    mappings (transitively), close to Python ``re.IGNORECASE`` and ECMA simple case folding.
    """
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    for cp in range(0x20000):  # no cased characters above U+1FFFF
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        for v in (ch.lower(), ch.upper()):
            if len(v) == 1 and v != ch:
                a, b = find(cp), find(ord(v))
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for cp in list(parent):
        groups.setdefault(find(cp), []).append(cp)
    members: dict[int, tuple[int, ...]] = {}
    for root, cps in groups.items():
        group = tuple(sorted({root, *cps}))
        for cp in group:
            members[cp] = group
    return sorted(members), members


def _case_closure(ranges: Ranges) -> Ranges:
    keys, members = _case_table()
    extra: list[tuple[int, int]] = []
    for lo, hi in ranges:
        for k in keys[bisect.bisect_left(keys, lo) : bisect.bisect_right(keys, hi)]:
            extra.extend((m, m) for m in members[k])
    return _norm([*ranges, *extra]) if extra else ranges


_GC_LONG = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M",
    "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
    "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
    "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
    "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C",
    "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
    "Unassigned": "Cn",
}  # fmt: skip


@lru_cache(maxsize=1)
def _category_table() -> dict[str, Ranges]:
    """Code point ranges of every two-letter general category (Python's ``unicodedata``)."""
    import unicodedata

    out: dict[str, list[tuple[int, int]]] = {}
    start, cur = 0, unicodedata.category("\0")
    for cp in range(1, MAX_CODEPOINT + 2):
        cat = unicodedata.category(chr(cp)) if cp <= MAX_CODEPOINT else ""
        if cat != cur:
            out.setdefault(cur, []).append((start, cp - 1))
            start, cur = cp, cat
    return {k: tuple(v) for k, v in out.items()}


def _category_ranges(name: str) -> Ranges | None:
    table = _category_table()
    short = _GC_LONG.get(name, name)
    if short == "LC":
        return _norm([*table.get("Lu", ()), *table.get("Ll", ()), *table.get("Lt", ())])
    if len(short) == 1 and short in "LMNPSZC":
        return _norm(r for k, v in table.items() if k.startswith(short) for r in v)
    if len(short) == 2 and short[0] in "LMNPSZC":
        return table.get(short, ())
    if name == "Any":
        return _ALL
    if name == "ASCII":
        return ((0, 0x7F),)
    return None


# ----------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True, slots=True)
class _Set:
    ranges: Ranges


@dataclass(slots=True)
class _Lit:
    """A run of plain characters (no case folding): one node instead of one set per character.
    (Not frozen: made once per word of a large alternation, and a frozen one costs twice as much.)"""

    text: str


@dataclass(frozen=True, slots=True)
class _Cat:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Or:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Rep:
    item: _Node
    min: int
    max: int | None
    pos: int


@dataclass(frozen=True, slots=True)
class _Assert:
    kind: str  # "start", "end", "wordb", "nwordb"
    pos: int


@dataclass(frozen=True, slots=True)
class _Look:
    """A lookahead ``(?=body)`` or ``(?!body)`` (``negative``)."""

    body: _Node
    negative: bool
    pos: int


_Node = Union[_Set, _Lit, _Cat, _Or, _Rep, _Assert, _Look]  # noqa: UP007

#: a plain character: none with a meaning of its own outside a class ("{" and "}" included: a
#: literal brace is left to the general path, which tells it from a counted repeat), no surrogate
#: or astral code point
_PLAIN = r"[^\\^$.|?*+()\[\]{}\ud800-\U0010ffff]"
#: a run of plain characters
_PLAIN_RUN = re.compile(_PLAIN + "*")
#: an alternation of such runs, two characters or more each (what :meth:`_Parser.literal_run` takes)
_PLAIN_ALTERNATION = re.compile(f"{_PLAIN}{{2,}}(?:\\|{_PLAIN}{{2,}})+")

_BRACE = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_BRACE_NO_MIN = re.compile(r"\{,[0-9]*\}")
_HEX = frozenset("0123456789abcdefABCDEF")
_GROUP_NAME = re.compile(r"[^\W\d]\w*")


def _unsupported(what: str, pattern: str, offset: int) -> UnsupportedFeatureError:
    err = UnsupportedFeatureError(f"{what} is not supported at offset {offset} in regex {pattern!r}")
    err.pattern = pattern  # type: ignore[attr-defined]
    err.offset = offset  # type: ignore[attr-defined]
    return err


class _Parser:
    """Recursive-descent parser producing the syntax tree; case folding is applied here."""

    def __init__(self, pattern: str, ignorecase: bool, dotall: bool, max_repeat: int):
        self.p = pattern
        self.n = len(pattern)
        self.i = 0
        self.ignorecase = ignorecase
        self.dotall = dotall
        self.max_repeat = max_repeat
        self.names: set[str] = set()
        self.depth = 0

    # -- helpers
    def error(self, message: str, offset: int) -> RegexError:
        return RegexError(message, self.p, offset)

    def unsupported(self, what: str, offset: int) -> UnsupportedFeatureError:
        return _unsupported(what, self.p, offset)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < self.n else ""

    def chars(self, ranges: Ranges, fold: bool = True) -> _Set:
        return _Set(_case_closure(ranges) if fold and self.ignorecase else ranges)

    # -- grammar
    def parse(self) -> _Node:
        while self.p.startswith("(?", self.i) and self._is_flag_group(self.i + 2) == ")":
            self._flags(self.i, scoped=False)
        node = self.alternation()
        if self.i < self.n:
            raise self.error("unbalanced parenthesis", self.i)
        return node

    def alternation(self) -> _Node:
        if not self.ignorecase:  # words, the usual large alternation, in one match
            m = _PLAIN_ALTERNATION.match(self.p, self.i)
            if m is not None and (m.end() == self.n or self.p[m.end()] == ")"):
                self.i = m.end()
                return _Or(tuple(map(_Lit, m.group().split("|"))))
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else _Or(tuple(branches))

    def sequence(self) -> _Node:
        items: list[_Node] = []
        while self.i < self.n and self.p[self.i] not in "|)":
            run = None if self.ignorecase else self.literal_run()
            if run is not None:
                items.append(run)
                continue
            atom = self.atom()
            if atom is None:
                continue
            atom = self.quantifiers(atom)
            if isinstance(atom, _Cat):
                items.extend(atom.items)
            else:
                items.append(atom)
        return items[0] if len(items) == 1 else _Cat(tuple(items))

    def literal_run(self) -> _Lit | None:
        """Two or more plain characters at the cursor (a quantifier after them takes the last one
        alone, so that one is left out), as one node; None if there are not two."""
        p = self.p
        j = _PLAIN_RUN.match(p, self.i).end()  # type: ignore[union-attr]
        if j < self.n and p[j] in "*+?{":
            j -= 1
        if j - self.i < 2:
            return None
        text = p[self.i:j]
        self.i = j
        return _Lit(text)

    def quantifier_at(self) -> tuple[int, int | None, int] | None:
        """``(min, max, end)`` of a quantifier starting at the cursor, if there is one."""
        c = self.peek()
        if c == "*":
            return 0, None, self.i + 1
        if c == "+":
            return 1, None, self.i + 1
        if c == "?":
            return 0, 1, self.i + 1
        if c == "{":
            m = _BRACE.match(self.p, self.i)
            if m:
                lo = int(m.group(1))
                if m.group(2) is None:
                    return lo, lo, m.end()
                return lo, (int(m.group(3)) if m.group(3) else None), m.end()
            if _BRACE_NO_MIN.match(self.p, self.i):
                raise self.unsupported("'{,n}' (a quantifier in Python, literal text in ECMA-262)", self.i)
        return None

    def quantifiers(self, atom: _Node) -> _Node:
        q = self.quantifier_at()
        if q is None:
            return atom
        lo, hi, end = q
        qpos = self.i
        if isinstance(atom, _Assert):
            raise self.error("nothing to repeat", qpos)
        if isinstance(atom, _Look):
            raise self.unsupported("quantified lookahead", qpos)
        if hi is not None and lo > hi:
            raise self.error("min repeat greater than max repeat", qpos + 1)
        if max(lo, hi or 0) > self.max_repeat:
            raise LimitExceededError(
                f"counted repeat {self.p[qpos:end]} at offset {qpos} in regex {self.p!r} is too large",
                limit=f"max_repeat={self.max_repeat}",
            )
        self.i = end
        if self.peek() == "?":  # lazy: same language
            self.i += 1
        elif self.peek() == "+":
            raise self.unsupported("possessive quantifier", self.i)
        if self.quantifier_at() is not None:
            raise self.error("multiple repeat", self.i)
        return _Rep(atom, lo, hi, qpos)

    def atom(self) -> _Node | None:
        pos = self.i
        c = self.p[pos]
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == "\\":
            return self.escape()
        self.i += 1
        if c == ".":
            return _Set(_ALL if self.dotall else _complement(_LINE_TERMINATORS))
        if c == "^":
            return _Assert("start", pos)
        if c == "$":
            return _Assert("end", pos)
        if c in "*+?":
            raise self.error("nothing to repeat", pos)
        if c == "{":
            self.i = pos
            if self.quantifier_at() is not None:
                raise self.error("nothing to repeat", pos)
            self.i = pos + 1
        cp = self.pair_literal(ord(c))
        return self.chars(((cp, cp),))

    def pair_literal(self, cp: int) -> int:
        """Combine a high surrogate (already read) with a following low surrogate char or escape."""
        if not 0xD800 <= cp <= 0xDBFF:
            return cp
        low = None
        if 0xDC00 <= ord(self.peek() or "\0") <= 0xDFFF:
            low, end = ord(self.peek()), self.i + 1
        elif self.p.startswith("\\u", self.i) and all(h in _HEX for h in self.p[self.i + 2 : self.i + 6]):
            v = int(self.p[self.i + 2 : self.i + 6] or "0", 16)
            if len(self.p[self.i + 2 : self.i + 6]) == 4 and 0xDC00 <= v <= 0xDFFF:
                low, end = v, self.i + 6
        if low is None:
            return cp
        self.i = end
        return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)

    # -- groups
    def _is_flag_group(self, j: int) -> str:
        """After ``(?`` at ``j``: the terminator (``)`` or ``:``) if flag letters follow, else ''."""
        k = j
        while k < self.n and (self.p[k].isalpha() or self.p[k] == "-"):
            k += 1
        return self.p[k] if k > j and k < self.n and self.p[k] in "):" else ""

    def _flags(self, pos: int, scoped: bool) -> None:
        """Apply the flags of ``(?flags)`` / ``(?on-off:`` starting at ``pos``; leave the cursor after it."""
        j = pos + 2
        on = True
        while self.p[j] not in "):":
            f = self.p[j]
            if f == "-":
                if not scoped or not on:
                    raise self.error("bad inline flags", j)
                on = False
            elif f == "i":
                self.ignorecase = on
            elif f == "s":
                self.dotall = on
            elif f == "u":
                pass
            elif f in "mx":
                raise self.unsupported("multiline mode" if f == "m" else "verbose mode", j)
            elif f in "aL":
                raise self.unsupported(f"inline flag {f!r}", j)
            else:
                raise self.error(f"unknown flag {f!r}", j)
            j += 1
        self.i = j + 1

    def group(self) -> _Node | None:
        pos = self.i
        saved = (self.ignorecase, self.dotall)
        look = ""
        self.i += 1
        if self.peek() == "?":
            c, c2 = self.peek(1), self.peek(2)
            if not c or (c in "P<" and not c2):
                raise self.error("unexpected end of pattern", pos)
            if c == ":":
                self.i += 2
            elif (c == "P" and c2 == "<") or (c == "<" and c2 not in "=!"):
                self.i += 3 if c == "P" else 2
                m = _GROUP_NAME.match(self.p, self.i)
                end = m.end() if m else self.i
                if not m or self.peek(end - self.i) != ">":
                    raise self.error("bad group name", self.i)
                name = m.group()
                if name in self.names:
                    raise self.error(f"redefinition of group name {name!r}", self.i)
                self.names.add(name)
                self.i = end + 1
            elif c == "P" and c2 == "=":
                raise self.unsupported("backreference (?P=name)", pos)
            elif c == "<":
                raise self.unsupported("lookbehind", pos)
            elif c in "=!":
                self.i += 2
                look = c
            elif c == ">":
                raise self.unsupported("atomic group", pos)
            elif c == "(":
                raise self.unsupported("conditional group", pos)
            elif c == "#":
                end = self.p.find(")", self.i)
                if end < 0:
                    raise self.error("missing ), unterminated comment", pos)
                self.i = end + 1
                return None
            elif (term := self._is_flag_group(self.i + 1)) == ":":
                self._flags(pos, scoped=True)
            elif term == ")":
                raise self.error("global flags not at the start of the expression", pos)
            else:
                raise self.error(f"unknown extension ?{c}", pos)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise LimitExceededError(
                f"groups nested deeper than {MAX_DEPTH} at offset {pos} in regex {self.p!r}",
                limit=f"max_depth={MAX_DEPTH}",
            )
        body = self.alternation()
        self.depth -= 1
        if self.peek() != ")":
            raise self.error("missing ), unterminated subpattern", pos)
        self.i += 1
        self.ignorecase, self.dotall = saved
        if look:
            return _Look(body, look == "!", pos)
        return _Cat((body,)) if isinstance(body, _Assert | _Look) else body

    # -- escapes and classes
    def escape(self) -> _Node:
        pos = self.i
        c = self.peek(1)
        if c in ("d", "D", "w", "W", "s", "S"):
            self.i += 2
            return _Set(_CLASS_ESCAPES[c])
        if c in ("b", "B", "A", "Z", "z"):
            self.i += 2
            kind = {"b": "wordb", "B": "nwordb", "A": "start"}.get(c, "end")
            return _Assert(kind, pos)
        if c in ("p", "P"):
            return _Set(self.property_escape())
        if c and c in "123456789":
            raise self.unsupported("backreference", pos)
        if c == "k":
            raise self.unsupported("backreference \\k<name>", pos)
        cp = self.escape_char(in_class=False)
        return self.chars(((cp, cp),))

    def escape_char(self, in_class: bool) -> int:
        """The code point of a single-character escape at the cursor (a backslash)."""
        pos = self.i
        c = self.peek(1)
        self.i += 2
        if not c:
            raise self.error("bad escape (end of pattern)", pos)
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c == "0" or (in_class and c in "1234567"):
            digits = c
            while len(digits) < 3 and self.peek() in ("0", "1", "2", "3", "4", "5", "6", "7") and self.peek():
                digits += self.peek()
                self.i += 1
            value = int(digits, 8)
            if value > 0o377:
                raise self.error(f"octal escape value \\{digits} outside of range 0-0o377", pos)
            return value
        if c in ("x", "u", "U"):
            if c == "u" and self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1 : end] if end > 0 else ""
                if not digits or any(h not in _HEX for h in digits) or int(digits, 16) > MAX_CODEPOINT:
                    raise self.error("bad \\u{...} escape", pos)
                self.i = end + 1
                return int(digits, 16)
            width = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.p[self.i : self.i + width]
            if len(digits) != width or any(h not in _HEX for h in digits):
                raise self.error(f"incomplete escape \\{c}{digits}", pos)
            self.i += width
            value = int(digits, 16)
            if value > MAX_CODEPOINT:
                raise self.error(f"bad escape \\{c}{digits} (beyond U+10FFFF)", pos)
            return self.pair_literal(value) if c == "u" else value
        if c == "N":
            import unicodedata

            end = self.p.find("}", self.i)
            if self.peek() != "{" or end < 0:
                raise self.error("missing {name} after \\N", pos)
            try:
                ch = unicodedata.lookup(self.p[self.i + 1 : end])
            except KeyError:
                raise self.error(f"undefined character name {self.p[self.i + 1 : end]!r}", pos) from None
            self.i = end + 1
            return ord(ch)
        if c == "c":
            x = self.peek()
            if not ("a" <= x <= "z" or "A" <= x <= "Z"):
                raise self.error("\\c needs an ASCII letter", pos)
            self.i += 1
            return ord(x) % 32
        if c.isascii() and c.isalnum():
            raise self.error(f"bad escape \\{c}", pos)
        return self.pair_literal(ord(c))

    def property_escape(self) -> Ranges:
        pos = self.i
        negate = self.peek(1) == "P"
        end = self.p.find("}", self.i)
        if self.peek(2) != "{" or end < 0:
            raise self.error("\\p needs {Property}", pos)
        body = self.p[self.i + 3 : end]
        self.i = end + 1
        key, _, value = body.partition("=")
        if value:
            if key in ("Script", "sc", "Script_Extensions", "scx"):
                raise self.unsupported("Unicode script property", pos)
            if key not in ("General_Category", "gc"):
                raise self.error(f"unknown Unicode property {key!r}", pos)
            body = value
        ranges = _category_ranges(body)
        if ranges is None:
            raise self.error(f"unknown Unicode property {body!r}", pos)
        return _complement(ranges) if negate else ranges

    def class_atom(self) -> int | Ranges:
        if self.peek() != "\\":
            cp = ord(self.p[self.i])
            self.i += 1
            return self.pair_literal(cp)
        c = self.peek(1)
        if c in ("d", "D", "w", "W", "s", "S"):
            self.i += 2
            return _CLASS_ESCAPES[c]
        if c in ("p", "P"):
            return self.property_escape()
        if c == "b":
            self.i += 2
            return 0x08
        return self.escape_char(in_class=True)

    def char_class(self) -> _Set:
        pos = self.i
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        if self.peek() == "]":
            raise self.unsupported(
                "']' first in a class ('[]' and '[^]' differ between ECMA-262 and Python; write '\\]')",
                self.i,
            )
        singles: list[tuple[int, int]] = []
        sets: list[tuple[int, int]] = []
        while True:
            if self.i >= self.n:
                raise self.error("unterminated character set", pos)
            if self.p[self.i] == "]":
                self.i += 1
                break
            item_pos = self.i
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self.class_atom()
                if not isinstance(lo, int) or not isinstance(hi, int):
                    raise self.error("bad character range", item_pos)
                if lo > hi:
                    raise self.error(f"bad character range {self.p[item_pos : self.i]}", item_pos)
                singles.append((lo, hi))
            elif isinstance(lo, int):
                singles.append((lo, lo))
            else:
                sets.extend(lo)
        ranges = _norm(singles)
        if self.ignorecase:
            ranges = _case_closure(ranges)
        ranges = _norm([*ranges, *sets])
        return _Set(_complement(ranges) if negate else ranges)


# ----------------------------------------------------------------------------- translation

# A translated node is four IR expressions indexed by 2*s + e: the strings it matches where
# s = a start anchor was passed (the node must begin at position 0 and nothing before the
# anchor was consumed) and e = an end anchor was passed (likewise at the end).
_Classes = tuple[Expr, Expr, Expr, Expr]


def _nullable(e: Expr) -> bool:
    if isinstance(e, Bytes):
        return not e.value
    if isinstance(e, ByteSet):
        return False
    if isinstance(e, Seq | And):
        return all(_nullable(x) for x in e.items)
    if isinstance(e, Alt):
        return any(_nullable(x) for x in e.items)
    if isinstance(e, Repeat):
        return e.min == 0 or _nullable(e.item)
    if isinstance(e, Not):
        return not _nullable(e.item)
    raise UnsupportedFeatureError(
        f"encode_chars produced an expression the regex front-end cannot analyse: {e!r}"
    )


def _is_nothing(x: Expr) -> bool:
    """``x == NOTHING``, without a dataclass comparison (this runs per character)."""
    return x is NOTHING or (type(x) is Alt and not x.items)


def _is_empty(x: Expr) -> bool:
    return x is EMPTY or (type(x) is Bytes and not x.value)


def _seq(*items: Expr) -> Expr:
    out: list[Expr] = []
    for x in items:
        if _is_nothing(x):
            return NOTHING
        if _is_empty(x):
            continue
        out.extend(x.items if type(x) is Seq else (x,))  # type: ignore[attr-defined]
    return EMPTY if not out else out[0] if len(out) == 1 else Seq(tuple(out))


def _alt(items: Iterable[Expr]) -> Expr:
    out: list[Expr] = []
    seen: set[Expr] = set()
    for x in items:
        if not _is_nothing(x) and x not in seen:
            seen.add(x)
            out.append(x)
    return NOTHING if not out else out[0] if len(out) == 1 else Alt(tuple(out))


def _rep(x: Expr, lo: int, hi: int | None) -> Expr:
    if _is_nothing(x):
        return EMPTY if lo == 0 else NOTHING
    if hi == 0 or _is_empty(x):
        return EMPTY
    return x if lo == hi == 1 else Repeat(x, lo, hi)


def _plain(x: _Classes) -> bool:
    return _is_nothing(x[1]) and _is_nothing(x[2]) and _is_nothing(x[3])


_EPS: _Classes = (EMPTY, NOTHING, NOTHING, NOTHING)


def _concat(a: _Classes, b: _Classes) -> _Classes:
    if _plain(a) and _plain(b):
        return (_seq(a[0], b[0]), NOTHING, NOTHING, NOTHING)
    out: list[list[Expr]] = [[], [], [], []]
    for ia, xa in enumerate(a):
        if _is_nothing(xa):
            continue
        sa, ea = ia >> 1, ia & 1
        for ib, xb in enumerate(b):
            if _is_nothing(xb):
                continue
            sb, eb = ib >> 1, ib & 1
            idx = ((sa | sb) << 1) | (ea | eb)
            if sb and ea:  # b must start at 0 and a must end at the end: both empty
                if _nullable(xa) and _nullable(xb):
                    out[idx].append(EMPTY)
            elif sb:  # b starts at position 0: a consumed nothing
                if _nullable(xa):
                    out[idx].append(xb)
            elif ea:  # a ends at the end: b consumes nothing
                if _nullable(xb):
                    out[idx].append(xa)
            else:
                out[idx].append(_seq(xa, xb))
    return tuple(_alt(o) for o in out)  # type: ignore[return-value]


def _is_word_edge(node: _Node, first: bool) -> bool:
    """Whether every match of ``node`` begins (``first``) or ends with a word character."""
    if isinstance(node, _Lit):
        cp = ord(node.text[0 if first else -1])
        return any(lo <= cp <= hi for lo, hi in _WORD)
    if isinstance(node, _Set):
        return bool(node.ranges) and all(
            any(wlo <= lo and hi <= whi for wlo, whi in _WORD) for lo, hi in node.ranges
        )
    if isinstance(node, _Rep):
        return node.min >= 1 and _is_word_edge(node.item, first)
    if isinstance(node, _Cat):
        return bool(node.items) and _is_word_edge(node.items[0 if first else -1], first)
    if isinstance(node, _Or):
        return all(_is_word_edge(x, first) for x in node.items)
    return False


class _Translator:
    def __init__(self, pattern: str, encode: EncodeChars):
        self.pattern = pattern
        self.encode = encode
        self.memo: dict[Ranges, Expr] = {}

    def chars(self, ranges: Ranges) -> Expr:
        e = self.memo.get(ranges)
        if e is None:
            e = self.memo[ranges] = self.encode(ranges) if ranges else NOTHING
            if self.encode is not codepoint_ranges_expr:  # (plain UTF-8 is made anew each time: no sharing)
                _remember_estimate(e)
        return e

    def tr(self, node: _Node) -> _Classes:
        if isinstance(node, _Set):
            return (self.chars(node.ranges), NOTHING, NOTHING, NOTHING)
        if isinstance(node, _Lit):
            if self.encode is codepoint_ranges_expr:  # plain UTF-8: the text's own bytes
                return (Bytes(node.text.encode("utf-8")), NOTHING, NOTHING, NOTHING)
            parts = [self.chars(((ord(c), ord(c)),)) for c in node.text]
            if all(type(x) is Bytes for x in parts):  # each character spelled one way: one literal
                return (Bytes(b"".join(x.value for x in parts)), NOTHING, NOTHING, NOTHING)  # type: ignore[attr-defined]
            return (_seq(*parts), NOTHING, NOTHING, NOTHING)
        if isinstance(node, _Assert):
            if node.kind == "start":
                return (NOTHING, NOTHING, EMPTY, NOTHING)
            if node.kind == "end":
                return (NOTHING, EMPTY, NOTHING, NOTHING)
            what = "word boundary \\b (except first/last next to a word character)"
            raise _unsupported(what if node.kind == "wordb" else "\\B", self.pattern, node.pos)
        if isinstance(node, _Look):
            raise _unsupported(_NESTED_LOOKAHEAD, self.pattern, node.pos)
        if isinstance(node, _Or):
            if self.encode is codepoint_ranges_expr and all(type(x) is _Lit for x in node.items):
                # words (the usual large alternation): their UTF-8 bytes, each once
                return (literal_alt(x.text.encode("utf-8") for x in node.items), NOTHING, NOTHING, NOTHING)  # type: ignore[union-attr]
            parts = [self.tr(x) for x in node.items]
            if all(_plain(p) for p in parts):  # no anchors inside (the usual case)
                return (_alt(p[0] for p in parts), NOTHING, NOTHING, NOTHING)
            return tuple(_alt(p[k] for p in parts) for k in range(4))  # type: ignore[return-value]
        if isinstance(node, _Cat):
            acc: _Classes = _EPS
            run: list[Expr] = []
            for item in node.items:
                x = self.tr(item)
                if _plain(x):
                    run.append(x[0])
                    continue
                if run:
                    acc = _concat(acc, (_seq(*run), NOTHING, NOTHING, NOTHING))
                    run = []
                acc = _concat(acc, x)
            if run:
                acc = _concat(acc, (_seq(*run), NOTHING, NOTHING, NOTHING))
            return acc
        return self.repeat(node)

    def repeat(self, node: _Rep) -> _Classes:
        x = self.tr(node.item)
        lo, hi = node.min, node.max
        if _plain(x):
            return (_rep(x[0], lo, hi), NOTHING, NOTHING, NOTHING)
        if max(lo, hi or 0) > _MAX_ANCHORED_UNROLL:
            raise _unsupported(
                f"counted repeat above {_MAX_ANCHORED_UNROLL} of a group holding anchors",
                self.pattern,
                node.pos,
            )
        acc = _EPS
        for _ in range(lo):
            acc = _concat(acc, x)
        if hi is not None:
            opt: _Classes = (_alt([x[0], EMPTY]), x[1], x[2], x[3])
            for _ in range(hi - lo):
                acc = _concat(acc, opt)
            return acc
        # x*: the last start-anchored pass and the first end-anchored pass bound the plain ones
        star = _rep(x[0], 0, None)
        closure = (
            star,
            _seq(star, x[1]),
            _seq(x[2], star),
            _alt([_seq(x[2], star, x[1]), x[3]]),
        )
        return _concat(acc, closure)

    def top(self, node: _Node, search: bool) -> Expr:
        """The whole pattern: per top-level alternative, word boundaries at its ends are resolved
        and its four anchor classes are combined (fullmatch) or wrapped in ``.*`` (search)."""
        branches = node.items if isinstance(node, _Or) else (node,)
        groups: dict[tuple[bool, bool], list[_Classes]] = {}
        if isinstance(node, _Or) and all(type(b) is _Lit for b in branches):  # words: no anchors, no \b
            groups[(False, False)] = [self.tr(node)]
            branches = ()
        looks = "(?=" in self.pattern or "(?!" in self.pattern
        for items in _distributed(branches) if looks else map(_items_of, branches):
            lead = trail = False
            j = 0
            while j < len(items) and isinstance(items[j], _Assert) and items[j].kind == "start":
                j += 1
            if j + 1 < len(items) and _is_wordb(items[j]) and _is_word_edge(items[j + 1], first=True):
                del items[j]
                lead = True
            k = len(items) - 1
            while k >= 0 and isinstance(items[k], _Assert) and items[k].kind == "end":
                k -= 1
            if k >= 1 and _is_wordb(items[k]) and _is_word_edge(items[k - 1], first=False):
                del items[k]
                trail = True
            if any(type(x) is _Look or _tempered(x) is not None for x in items):
                suffix = None if not search else self.suffix(trail)
                classes = self.looked(items, suffix)
            else:
                classes = self.tr_items(items)
            groups.setdefault((lead, trail), []).append(classes)
        results: list[Expr] = []
        if not search:
            for parts in groups.values():
                results.extend(x for p in parts for x in p)
            return _alt(results)
        for (lead, trail), parts in groups.items():
            c = [_alt(p[k] for p in parts) for k in range(4)]
            any_star = self.any_star()
            prefix = _alt([EMPTY, _seq(any_star, self.chars(_complement(_WORD)))]) if lead else any_star
            suffix = self.suffix(trail)
            results += [_seq(prefix, c[0], suffix), _seq(prefix, c[1]), _seq(c[2], suffix), c[3]]
        return _alt(results)

    def tr_items(self, items: list[_Node]) -> _Classes:
        """The classes of a sequence of nodes."""
        if not items:
            return _EPS
        return self.tr(items[0] if len(items) == 1 else _Cat(tuple(items)))

    def any_star(self) -> Expr:
        """Any string."""
        return _rep(self.chars(_ALL), 0, None)

    def suffix(self, trail: bool) -> Expr:
        """What may follow a match in search mode (``trail``: after a word boundary)."""
        any_star = self.any_star()
        return _alt([EMPTY, _seq(self.chars(_complement(_WORD)), any_star)]) if trail else any_star

    def looked(self, items: list[_Node], suffix: Expr | None) -> _Classes:
        """A top-level alternative holding lookaheads. From its last lookahead back to its first,
        what follows one (the rest of the alternative, then ``suffix``: what may follow a match,
        None where the string must end) is intersected with what the lookahead asks of the string
        from there on (``(?=X)``: some prefix of it matches X; ``(?!X)``: none does). A tempered
        token, ``((?!X)c)*`` with only the end after it, is the strings of ``c`` in which no
        position begins a match of X. The result's classes end where the string ends."""
        resolved: _Classes | None = None
        end = len(items)
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            tempered = _tempered(item)
            if type(item) is not _Look and tempered is None:
                continue
            after = self.tr_items(items[i + 1:end])
            if resolved is not None:
                after = _concat(after, resolved)
            # what the string may be from here on: a match of the rest, then the suffix (the parts
            # that end at the end already, a later lookahead's among them, take no suffix)
            if suffix is None:
                rest, rest_at_start = _alt([after[0], after[1]]), _alt([after[2], after[3]])
            else:
                rest = _alt([_seq(after[0], suffix), after[1]])
                rest_at_start = _alt([_seq(after[2], suffix), after[3]])
            if tempered is None:
                assert type(item) is _Look
                asked = self.look_language(item, items[:i])
                rest, rest_at_start = (_meet(r, asked, item.negative) for r in (rest, rest_at_start))
            else:
                looks, char, least = tempered
                if not (_is_empty(rest) and _is_nothing(rest_at_start)):
                    raise _unsupported(_NESTED_LOOKAHEAD, self.pattern, looks[0].pos)
                # a position that begins a match of some X, before the end (the token's loop runs
                # once per character: the end itself is not checked)
                begins = _alt([self.look_language(x) for x in looks])
                any_star = self.any_star()
                forbidden = _seq(any_star, And((begins, _seq(self.chars(_ALL), any_star))))
                rest = And((_rep(self.tr_items([char])[0], least, None), Not(forbidden)))
                rest_at_start = NOTHING
            resolved = (NOTHING, rest, NOTHING, rest_at_start)
            end = i
        assert resolved is not None
        return _concat(self.tr_items(items[:end]), resolved)

    def look_language(self, look: _Look, before: list[_Node] | None = None) -> Expr:
        """The strings from a lookahead's position on that it holds for when positive: a match of
        its body, then anything (``$`` inside it: the string ends with the match). A start anchor
        inside it matches where the lookahead stands at the string's start and nowhere else: after
        the items ``before`` of its top-level alternative, when they say which
        (:meth:`look_position`; pydantic's ``Decimal``: ``^(?!^[-+.]*$)...``); refused otherwise."""
        x = self.tr(look.body)
        anchored = not (_is_nothing(x[2]) and _is_nothing(x[3]))
        position = None if not anchored or before is None else self.look_position(before)
        if anchored and position is None:
            raise _unsupported("a start anchor inside a lookahead that may or may not stand at the start",
                               self.pattern, look.pos)
        any_star = self.any_star()
        parts = [_seq(x[0], any_star), x[1]]
        if anchored and position:
            parts += [_seq(x[2], any_star), x[3]]
        return _alt(parts)

    def look_position(self, before: list[_Node]) -> bool | None:
        """Whether a lookahead after the items ``before`` (of its top-level alternative) stands at
        the string's start: True when they are start anchors (and other lookaheads) only, False
        when they read a character first in every match, None otherwise."""
        prefix = self.tr_items([it for it in before if type(it) is not _Look])
        if _is_nothing(prefix[0]) and _is_nothing(prefix[1]) and _is_nothing(prefix[3]) and prefix[2] == EMPTY:
            return True
        if not any(_nullable(x) for x in prefix):
            return False
        return None


#: top-level alternatives that spelling out alternations around lookaheads may add, at most
MAX_DISTRIBUTED_ALTERNATIVES = 64


def _distributed(branches: tuple[_Node, ...]) -> list[list[_Node]]:
    """The items of each top-level alternative, an alternation or optional group among them that
    holds a lookahead spelled out as alternatives of their own (``x(?:a|(?=b)c)`` is ``xa|x(?=b)c``,
    ``x(?:(?=b)c)?`` is ``x|x(?=b)c``): a lookahead is exact as an item of a top-level
    alternative (pydantic's ``Decimal`` with ``max_digits`` writes one inside a group). Past
    :data:`MAX_DISTRIBUTED_ALTERNATIVES` the alternatives stay as written (and such a lookahead
    is refused)."""
    out: list[list[_Node]] = []
    work = [_items_of(b) for b in reversed(branches)]
    while work:
        items = work.pop()
        i = next((k for k, it in enumerate(items) if _splits(it)), -1)
        if i < 0:
            out.append(items)
            continue
        it = items[i]
        choices = it.items if type(it) is _Or else (_Cat(()), it.item)  # type: ignore[union-attr]
        spelled = [items[:i] + _items_of(c) + items[i + 1:] for c in choices]
        if len(out) + len(work) + len(spelled) > len(branches) + MAX_DISTRIBUTED_ALTERNATIVES:
            return [_items_of(b) for b in branches]
        work.extend(reversed(spelled))
    return out


def _items_of(node: _Node) -> list[_Node]:
    """The items of a sequence, or the node alone."""
    return list(node.items) if type(node) is _Cat else [node]  # type: ignore[union-attr]


def _splits(node: _Node) -> bool:
    """An alternation, or a group read at most once, holding a lookahead outside any repetition."""
    t = type(node)
    if t is _Or:
        return any(_holds_look(x) for x in node.items)  # type: ignore[union-attr]
    return t is _Rep and node.min == 0 and node.max == 1 and _holds_look(node.item)  # type: ignore[union-attr]


def _holds_look(node: _Node) -> bool:
    t = type(node)
    if t is _Look:
        return True
    if t is _Cat or t is _Or:
        return any(_holds_look(x) for x in node.items)  # type: ignore[union-attr]
    return t is _Rep and node.min == 0 and node.max == 1 and _holds_look(node.item)  # type: ignore[union-attr]


#: where a lookahead can be enforced (anywhere else it is refused)
_NESTED_LOOKAHEAD = ("lookahead (except as an item of a top-level alternative, or in a tempered token "
                     "((?!X)c)* at the end)")


def _meet(x: Expr, asked: Expr, negative: bool) -> Expr:
    """``x`` and (``negative``: not) ``asked``."""
    if _is_nothing(x):
        return NOTHING
    return And((x, Not(asked) if negative else asked))


def _tempered(node: _Node) -> tuple[tuple[_Look, ...], _Node, int] | None:
    """``((?!X)(?!Y)...c)*`` or ``+``/``{n,}`` -- a tempered token: its negative lookaheads, its
    character and its least count -- else None."""
    if type(node) is not _Rep or node.max is not None or type(node.item) is not _Cat:
        return None
    *looks, char = node.item.items
    if not looks or not all(type(x) is _Look and x.negative for x in looks):
        return None
    if type(char) is _Set or (type(char) is _Lit and len(char.text) == 1):
        return tuple(looks), char, node.min  # type: ignore[return-value]
    return None


def _is_wordb(node: _Node) -> bool:
    return isinstance(node, _Assert) and node.kind == "wordb"


#: :func:`_estimate`'s results for the expressions of characters (what ``encode_chars`` gives), by
#: id, the expression held (so the id stays its own): an encoder such as the JSON Schema one is
#: cached, so every pattern that uses a class shares its expression, and walking its escapes and
#: UTF-8 forms again was a fifth of translating a pattern such as ``^(.*?)\.txt$`` (116 -> 94 µs).
#: Only these are kept (a pattern's own nodes are not held past its translation); bounded.
_CHAR_ESTIMATES: dict[int, tuple[Expr, int]] = {}
_CHAR_ESTIMATES_CAP = 1024


def _remember_estimate(e: Expr) -> None:
    """Keep the estimate of a character's expression (see ``_CHAR_ESTIMATES``)."""
    hit = _CHAR_ESTIMATES.get(id(e))
    if hit is None or hit[0] is not e:
        if len(_CHAR_ESTIMATES) >= _CHAR_ESTIMATES_CAP:
            _CHAR_ESTIMATES.clear()
        _CHAR_ESTIMATES[id(e)] = (e, _estimate(e, {}))


def _estimate(e: Expr, memo: dict[int, int]) -> int:
    """Byte positions (literal bytes and byte sets) in ``e`` with counted repeats multiplied out."""
    t = type(e)
    if t is Bytes:
        return len(e.value)  # type: ignore[attr-defined]
    if t is ByteSet:
        return 1
    key = id(e)
    n = memo.get(key)
    if n is not None:
        return n
    hit = _CHAR_ESTIMATES.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    if t is Repeat:
        hi = e.max if e.max is not None else e.min + 1  # type: ignore[attr-defined]
        n = _estimate(e.item, memo) * max(1, hi)  # type: ignore[attr-defined]
    else:
        n = 0
        for x in e.children():
            n += _estimate(x, memo)
    memo[key] = n
    return n


_KNOWN_FLAGS = int(re.IGNORECASE | re.DOTALL | re.UNICODE)


def _parse_flags(flags: int | str) -> tuple[bool, bool]:
    if not flags:  # (the usual case: no enum arithmetic, a few microseconds each)
        return False, False
    if isinstance(flags, str):
        bad = set(flags) - set("isu")
        if bad:
            raise UnsupportedFeatureError(f"regex flags {''.join(sorted(bad))!r} are not supported")
        return "i" in flags, "s" in flags
    if flags & ~_KNOWN_FLAGS:
        raise UnsupportedFeatureError(f"regex flags {re.RegexFlag(flags & ~_KNOWN_FLAGS)!r} are not supported")
    return bool(flags & re.IGNORECASE), bool(flags & re.DOTALL)


def regex_expr(
    pattern: str,
    *,
    search: bool = False,
    encode_chars: EncodeChars | None = None,
    flags: int | str = 0,
    ignorecase: bool = False,
    dotall: bool = False,
    max_repeat: int = MAX_REPEAT,
    max_size: int = MAX_SIZE,
) -> Expr:
    """IR expression for the strings matching ``pattern`` (whole string, or containing a match
    when ``search``).

    ``encode_chars(ranges)`` gives the IR of one character from the code point ranges (default:
    its UTF-8 bytes); every character, literals included, goes through it. ``flags``: ``re``
    flags or letters (``"i"``, ``"s"``). The language is empty (``NOTHING``) when no string
    can match, e.g. ``a^b``.
    """
    if not isinstance(pattern, str):
        raise RegexError(f"pattern must be a str, not {type(pattern).__name__}", repr(pattern), 0)
    fi, fs = _parse_flags(flags)
    node = _Parser(pattern, ignorecase or fi, dotall or fs, max_repeat).parse()
    encode = encode_chars if encode_chars is not None else codepoint_ranges_expr
    expr = _Translator(pattern, encode).top(node, search)
    size = _estimate(expr, {})
    if size > max_size:
        raise LimitExceededError(
            f"regex {pattern!r} expands to about {size} byte positions", limit=f"max_size={max_size}"
        )
    return normalize(expr)


def regex_grammar(
    pattern: str,
    *,
    search: bool = False,
    flags: int | str = 0,
    ignorecase: bool = False,
    dotall: bool = False,
    encode_chars: EncodeChars | None = None,
    rule_name: str = "root",
    max_repeat: int = MAX_REPEAT,
    max_size: int = MAX_SIZE,
) -> Grammar:
    """A one-rule grammar for ``pattern`` (see :func:`regex_expr` for the options)."""
    expr = regex_expr(
        pattern,
        search=search,
        encode_chars=encode_chars,
        flags=flags,
        ignorecase=ignorecase,
        dotall=dotall,
        max_repeat=max_repeat,
        max_size=max_size,
    )
    return Grammar({rule_name: expr}, root=rule_name)
