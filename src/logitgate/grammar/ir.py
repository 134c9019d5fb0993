"""The grammar IR: named rules over byte-level expressions.

Every front-end (EBNF/GBNF, regex, JSON Schema, choices) produces a :class:`Grammar`;
the engine compiles it. The IR speaks bytes only: character classes are expanded to
UTF-8 byte sequences by the front-ends (see :mod:`logitgate.grammar.utf8`).

Expression nodes (all immutable, hashable, compared structurally):

==============  ==============================================================
``Bytes(b)``    the literal byte string ``b`` (``EMPTY`` is ``Bytes(b"")``)
``ByteSet(r)``  one byte in the inclusive ranges ``r`` (``((48, 57),)`` = a digit)
``Seq(items)``  concatenation
``Alt(items)``  alternation (``NOTHING`` is ``Alt(())``, the empty language)
``Repeat``      ``item`` repeated ``min`` to ``max`` times (``max=None``: unbounded)
``Ref(name)``   the rule called ``name``
``And(items)``  intersection; every item must be regular (no recursive rule)
``Not(item)``   complement over all byte strings; ``item`` must be regular
``Special``     a regular language named by a registered ``kind`` and ``args`` rather than
                spelled out (see :func:`register_special`): ``expand()`` gives the plain
                expression; the engine may build its automaton directly, which is faster
==============  ==============================================================

``Grammar`` normalizes its rules on construction (flattening, merging adjacent
literals, unwrapping singletons), so two grammars that differ only in such
bracketing compare equal, and ``Grammar.from_ebnf(g.to_ebnf()) == g`` (for grammars
without ``Special`` nodes, which print as their expansion).

Example::

    >>> from logitgate.grammar.ir import Grammar, Ref, lit, seq, alt, repeat, byteset
    >>> digit = byteset((0x30, 0x39))
    >>> g = Grammar({"root": seq(lit("n="), repeat(digit, 1, None))})
    >>> g.root
    'root'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import GrammarError

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

__all__ = [
    "EMPTY",
    "NOTHING",
    "Alt",
    "And",
    "ByteSet",
    "Bytes",
    "Expr",
    "Grammar",
    "Not",
    "Ref",
    "Repeat",
    "Seq",
    "Special",
    "SpecialKind",
    "alt",
    "and_",
    "byteset",
    "is_ref_free",
    "iter_refs",
    "lit",
    "literal_alt",
    "normalize",
    "not_",
    "register_special",
    "repeat",
    "seq",
]

_RULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(?:\.+[A-Za-z0-9_\-]+)*$")
_VALID_NAMES: set[str] = set()  # names _RULE_NAME matched (grammars reuse few: s1, s2, json.value, ...)


class Expr:
    """Base class of IR expressions."""

    __slots__ = ()

    def children(self) -> tuple[Expr, ...]:
        return ()


def _cached_hash(e: Any, key: tuple) -> int:
    """The hash of a composite node, computed once (a tree would otherwise be hashed again at every
    dictionary lookup of every enclosing node)."""
    h = e._hash
    if h is None:
        h = hash((type(e).__name__, *key))
        object.__setattr__(e, "_hash", h)
    return h


@dataclass(frozen=True, slots=True)
class Bytes(Expr):
    value: bytes  # (checked to be bytes: see _install_fast_inits)


@dataclass(frozen=True, slots=True)
class ByteSet(Expr):
    """One byte from sorted, disjoint, inclusive ``(lo, hi)`` ranges within 0..255."""

    ranges: tuple[tuple[int, int], ...]  # (checked: see _install_fast_inits)
    _normal: bool = field(default=False, init=False, repr=False, compare=False)
    _mask: int | None = field(default=None, init=False, repr=False, compare=False)

    def contains(self, byte: int) -> bool:
        return any(lo <= byte <= hi for lo, hi in self.ranges)

    def to_mask(self) -> int:
        """The set as a 256-bit integer (bit ``b`` set = byte ``b`` in the set); computed once."""
        m = self._mask
        if m is None:
            m = 0
            for lo, hi in self.ranges:
                m |= ((1 << (hi - lo + 1)) - 1) << lo
            object.__setattr__(self, "_mask", m)
        return m


@dataclass(frozen=True, slots=True)
class _Composite(Expr):
    """An expression over sub-expressions: its hash is computed once, its normal form remembered.

    Subclasses give ``_key`` (their fields) and restate ``__hash__``: a frozen dataclass would
    otherwise generate its own.
    """

    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _normal: bool = field(default=False, init=False, repr=False, compare=False)
    _ref_free: bool = field(default=False, init=False, repr=False, compare=False)  # known to hold no Ref
    #: facts the engine remembers about a node, once asked (None: none yet; see :class:`_Memo`)
    _memo: _Memo | None = field(default=None, init=False, repr=False, compare=False)

    def _key(self) -> tuple:
        raise NotImplementedError

    def __hash__(self) -> int:
        h = self._hash
        return h if h is not None else _cached_hash(self, self._key())

    def __reduce__(self) -> tuple:  # rebuilt, not copied: the cached hash is valid in one process only
        return (type(self), self._key())


class _Memo:
    """What the engine learned about a composite node, kept on it (nodes are shared by grammars:
    string bodies, numbers, library rules). One slot on the node for all of them: a node is made
    with its slots set, and most nodes are never asked."""

    __slots__ = ("lexeme", "nullable", "scanned", "size", "tails")

    def __init__(self) -> None:
        #: the engine's size estimate of a reference-free node (-1: not yet)
        self.size = -1
        #: whether a reference-free node derives the empty string (-1: not yet)
        self.nullable = -1
        #: whether a reference-free node or a rule's whole body is lexeme-like: ``2 * min_bytes +
        #: answer`` (-1: not yet)
        self.lexeme = -1
        #: ``(refs, boolean_refs)`` of a node that is a rule's whole body (see _scan_refs)
        self.scanned: tuple | None = None
        #: the rules a rule's whole body references last, with repeats (once asked)
        self.tails: tuple[str, ...] | None = None


def memo(e: _Composite) -> _Memo:
    """The :class:`_Memo` of a composite node (made on first use)."""
    m = e._memo
    if m is None:
        m = _Memo()
        object.__setattr__(e, "_memo", m)
    return m


@dataclass(frozen=True, slots=True)
class _Items(_Composite):
    items: tuple[Expr, ...]

    def _key(self) -> tuple:
        return (self.items,)

    def children(self) -> tuple[Expr, ...]:
        return self.items


@dataclass(frozen=True, slots=True)
class Seq(_Items):
    __hash__ = _Composite.__hash__


@dataclass(frozen=True, slots=True)
class Alt(_Items):
    __hash__ = _Composite.__hash__


@dataclass(frozen=True, slots=True)
class Repeat(_Composite):
    item: Expr
    min: int  # (bounds checked: see _install_fast_inits)
    max: int | None
    __hash__ = _Composite.__hash__

    def _key(self) -> tuple:
        return (self.item, self.min, self.max)

    def children(self) -> tuple[Expr, ...]:
        return (self.item,)


@dataclass(frozen=True, slots=True)
class Ref(Expr):
    name: str


@dataclass(frozen=True, slots=True)
class And(_Items):
    __hash__ = _Composite.__hash__


@dataclass(frozen=True, slots=True)
class Not(_Composite):
    item: Expr
    __hash__ = _Composite.__hash__

    def _key(self) -> tuple:
        return (self.item,)

    def children(self) -> tuple[Expr, ...]:
        return (self.item,)


def _install_fast_inits() -> None:
    """Replace the nodes' dataclass ``__init__`` (the signature type checkers see) by one that sets
    the slots through their descriptors and checks the fields.

    A frozen dataclass sets each field with ``object.__setattr__``, ~0.2 µs a field here, and a
    compile makes thousands of nodes: a ``Seq`` took 1.7 µs to make, 0.6 this way."""
    def setter(cls: type, name: str) -> Callable[[Any, Any], None]:
        return vars(cls)[name].__set__  # (the slot's member descriptor)

    h, n, r, m = (setter(_Composite, x) for x in ("_hash", "_normal", "_ref_free", "_memo"))
    set_value, set_ranges, set_byteset_normal, set_mask = (
        setter(Bytes, "value"), setter(ByteSet, "ranges"), setter(ByteSet, "_normal"), setter(ByteSet, "_mask"))
    set_items, set_item, set_min, set_max, set_not_item, set_name = (
        setter(_Items, "items"), setter(Repeat, "item"), setter(Repeat, "min"), setter(Repeat, "max"),
        setter(Not, "item"), setter(Ref, "name"))

    def bytes_init(self: Bytes, value: bytes, _v=set_value, _bytes=bytes) -> None:
        if type(value) is not _bytes and not isinstance(value, _bytes):
            raise GrammarError(f"Bytes needs a bytes value, got {type(value).__name__}")
        _v(self, value)

    def byteset_init(self: ByteSet, ranges: tuple[tuple[int, int], ...], _r=set_ranges, _n=set_byteset_normal,
                     _mask=set_mask) -> None:
        for x in ranges:
            if len(x) != 2 or not (0 <= x[0] <= x[1] <= 255):
                raise GrammarError(f"bad byte range {x!r} (need 0 <= lo <= hi <= 255)")
        _r(self, ranges)
        _n(self, False)
        _mask(self, None)

    def items_init(self: _Items, items: tuple[Expr, ...], _i=set_items, _h=h, _n=n, _f=r, _m=m) -> None:
        _i(self, items)
        _h(self, None)
        _n(self, False)
        _f(self, False)
        _m(self, None)

    def repeat_init(self: Repeat, item: Expr, min: int, max: int | None, _i=set_item, _lo=set_min,
                    _hi=set_max, _h=h, _n=n, _f=r, _m=m) -> None:
        if min < 0 or (max is not None and max < min):
            raise GrammarError(f"bad repetition bounds {{{min},{max}}}")
        _i(self, item)
        _lo(self, min)
        _hi(self, max)
        _h(self, None)
        _n(self, False)
        _f(self, False)
        _m(self, None)

    def not_init(self: Not, item: Expr, _i=set_not_item, _h=h, _n=n, _f=r, _m=m) -> None:
        _i(self, item)
        _h(self, None)
        _n(self, False)
        _f(self, False)
        _m(self, None)

    def ref_init(self: Ref, name: str, _s=set_name) -> None:
        _s(self, name)

    for cls, init in ((Bytes, bytes_init), (ByteSet, byteset_init), (Seq, items_init), (Alt, items_init),
                      (And, items_init), (Repeat, repeat_init), (Not, not_init), (Ref, ref_init)):
        cls.__init__ = init  # type: ignore[method-assign]


_install_fast_inits()


@dataclass(frozen=True)
class SpecialKind:
    """What the IR needs to know about a kind of :class:`Special` node (registered by the
    front-end that makes them, so the IR stays free of front-end knowledge).

    ``expand(args)`` gives the plain expression of the language (reference-free); ``nullable(args)``
    whether it holds the empty string; ``lexeme_like`` whether it repeats over most bytes (a string
    body: the engine then gives it its own rule, see :mod:`logitgate.engine.rtn`). ``build(args,
    dfa_of, max_states)``, if given, constructs the automaton directly and returns ``(byte_class,
    trans, final, start)`` arrays of a trimmed automaton, the same for equal ``args``, and may add
    a fifth item, ``(m, count, lo, hi)``, when states ``k * m + q`` (``k < count``) are layers of
    a counted repetition of ``lo..hi`` (``hi`` None: unbounded) items of ``m`` states, layer ``k``
    having read ``k`` items (two more items, arrays of the first and last layer of each layer's run,
    when layers are alike only within runs); ``dfa_of(expr)`` is the engine's DFA of a plain expression, for
    building blocks (trimmed; minimal up to the engine's minimization limit).
    """

    expand: Callable[[tuple], Expr]
    nullable: Callable[[tuple], bool]
    lexeme_like: bool = False
    build: Callable[[tuple, Callable[[Expr], Any], int], tuple] | None = None


_SPECIAL_KINDS: dict[str, SpecialKind] = {}


def register_special(kind: str, spec: SpecialKind) -> None:
    """Register a kind of :class:`Special` node (idempotent for the same ``spec``)."""
    old = _SPECIAL_KINDS.get(kind)
    if old is not None and old != spec:
        raise GrammarError(f"special kind {kind!r} is registered already")
    _SPECIAL_KINDS[kind] = spec


@dataclass(frozen=True, slots=True)
class Special(Expr):
    """A regular language named by ``kind`` (registered with :func:`register_special`) and
    hashable ``args``, for languages whose plain expression is large and slow to build (e.g. the
    JSON spellings of every string but a few object keys). It holds no rule references."""

    kind: str
    args: tuple

    def __post_init__(self) -> None:
        if self.kind not in _SPECIAL_KINDS:
            raise GrammarError(f"unknown special kind {self.kind!r} (register it with register_special)")

    @property
    def spec(self) -> SpecialKind:
        return _SPECIAL_KINDS[self.kind]

    def expand(self) -> Expr:
        """The plain expression of this language (built on first use, then remembered)."""
        hit = _EXPANSIONS.get(self)
        if hit is None:
            if len(_EXPANSIONS) >= 256:
                _EXPANSIONS.clear()
            hit = _EXPANSIONS[self] = normalize(self.spec.expand(self.args))
        return hit

    @property
    def nullable(self) -> bool:
        return self.spec.nullable(self.args)


_EXPANSIONS: dict[Special, Expr] = {}

EMPTY = Bytes(b"")
NOTHING = Alt(())


# ----------------------------------------------------------------------------- builders


def lit(value: bytes | str) -> Expr:
    """A literal; ``str`` is encoded as UTF-8."""
    return Bytes(value.encode("utf-8") if isinstance(value, str) else bytes(value))


def _merge_ranges(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            raise GrammarError(f"bad byte range ({lo}, {hi})")
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def byteset(*ranges: tuple[int, int] | int, negate: bool = False) -> Expr:
    """A set of bytes from ranges ``(lo, hi)`` or single ints; ``negate`` complements in 0..255."""
    rs = [(r, r) if isinstance(r, int) else (r[0], r[1]) for r in ranges]
    merged = _merge_ranges(rs)
    if negate:
        comp: list[tuple[int, int]] = []
        nxt = 0
        for lo, hi in merged:
            if lo > nxt:
                comp.append((nxt, lo - 1))
            nxt = hi + 1
        if nxt <= 255:
            comp.append((nxt, 255))
        merged = tuple(comp)
    return _byteset_of(merged)


def seq(*items: Expr) -> Expr:
    return _fresh_normal(_normal_seq(items, None))


def alt(*items: Expr) -> Expr:
    return _fresh_normal(_normal_alt(items, None))


def literal_alt(values: Iterable[bytes]) -> Expr:
    """``alt(*map(lit, values))`` -- one of the given literals -- built in normal form directly (no
    hashing of a node per literal: a list of a thousand words is common).

        >>> literal_alt([b"yes", b"no", b"yes"])
        Alt(items=(Bytes(value=b'yes'), Bytes(value=b'no')))
    """
    distinct = list(dict.fromkeys(values))
    if len(distinct) <= 1:
        return Bytes(distinct[0]) if distinct else NOTHING
    return _fresh_normal(Alt(tuple(map(Bytes, distinct))))


def repeat(item: Expr, min: int = 0, max: int | None = None) -> Expr:
    if min < 0 or (max is not None and max < min):
        Repeat(item, min, max)  # (raises: bad bounds)
    return _fresh_normal(_normal_repeat(item, min, max, None))


def and_(*items: Expr) -> Expr:
    return _fresh_normal(_normalize(And(items)))


def not_(item: Expr) -> Expr:
    return _fresh_normal(_normalize(Not(item)))


# ----------------------------------------------------------------------------- normalization


def _norm_byteset(e: ByteSet) -> Expr:
    return _byteset_of(_merge_ranges(e.ranges))


def _byteset_of(ranges: tuple[tuple[int, int], ...]) -> Expr:
    """The normal form of a byte set whose ``ranges`` are merged already (sorted, disjoint, not
    adjacent), made once and marked normal (a set would otherwise be merged and made again by the
    first sequence or alternation that holds it)."""
    if not ranges:
        return NOTHING
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return Bytes(bytes([ranges[0][0]]))
    out = ByteSet(ranges)
    object.__setattr__(out, "_normal", True)
    return out


# id(expr) -> (expr, its normal form). Builders normalize as they build, so the same
# subtrees are normalized again and again; holding ``expr`` keeps its id from being reused.
_NORMAL_FORMS: dict[int, tuple[Expr, Expr]] = {}
_NORMAL_FORMS_CAP = 1 << 10  # bounded: entries keep their expressions alive


def normalize(e: Expr) -> Expr:
    """Canonical form of an expression (language-preserving, idempotent).

    Flattens nested Seq/Alt/And, drops empty literals from sequences, merges adjacent
    literals, removes duplicate alternatives, unwraps singletons and simplifies
    trivial repetitions.
    """
    if isinstance(e, Bytes | Ref | Special) or e._normal:  # type: ignore[attr-defined]
        return e
    hit = _NORMAL_FORMS.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    n = _normalize(e)
    if not isinstance(n, Bytes | Ref | Special):
        object.__setattr__(n, "_normal", True)  # normal forms are never normalized again
    if len(_NORMAL_FORMS) >= _NORMAL_FORMS_CAP:
        _NORMAL_FORMS.clear()
    _NORMAL_FORMS[id(e)] = (e, n)
    _NORMAL_FORMS[id(n)] = (n, n)
    return n


def _fresh_normal(n: Expr, _mark=_Composite._normal.__set__,  # type: ignore[attr-defined]
                  _mark_set=ByteSet._normal.__set__) -> Expr:  # type: ignore[attr-defined]
    """Mark ``n``, the normal form of a node just built (nobody else holds it: not remembered),
    through its ``_normal`` slot's descriptor (what ``object.__setattr__`` would look up)."""
    t = type(n)
    if t is ByteSet:
        _mark_set(n, True)
    elif not (t is Bytes or t is Ref or t is Special):
        _mark(n, True)
    return n


def _normal_item(it: Expr) -> Expr:
    """``normalize(it)`` without the call when ``it`` is normal already (the common case)."""
    t = type(it)
    if t is Bytes or t is Ref or t is Special or it._normal:  # type: ignore[attr-defined]
        return it
    return normalize(it)


def _normal_seq(items: Sequence[Expr], e: Expr | None) -> Expr:
    """The normal form of ``Seq(items)``; ``e``, when given, is that node (returned when it is its
    own normal form; a builder passes None and the node is made only once, here)."""
    out: list[Expr] = []
    same = type(items) is tuple  # the items as they are: no copy
    for it in items:
        t = type(it)
        if t is Bytes or t is Ref or t is Special or it._normal:  # type: ignore[attr-defined]
            n = it  # (_normal_item, written out: the type is needed below)
        else:
            n = normalize(it)
            t = type(n)
            same = same and n is it
        if t is Seq:  # (normal: no empty or adjacent literals, no nothing -- only its first item may merge)
            same = False
            sub = n.items  # type: ignore[attr-defined]
            if out and type(out[-1]) is Bytes and type(sub[0]) is Bytes:
                out[-1] = Bytes(out[-1].value + sub[0].value)  # type: ignore[attr-defined]
                out.extend(sub[1:])
            else:
                out.extend(sub)
            continue
        if t is Bytes:
            if not n.value:  # type: ignore[attr-defined]
                same = False
                continue
            if out and type(out[-1]) is Bytes:
                out[-1] = Bytes(out[-1].value + n.value)  # type: ignore[attr-defined]
                same = False
                continue
        elif t is Alt and not n.items:  # type: ignore[attr-defined]
            return NOTHING
        out.append(n)
    if not out:
        return EMPTY
    if len(out) == 1:
        return out[0]
    if same:
        return e if e is not None else Seq(items)  # type: ignore[arg-type]
    return Seq(tuple(out))


def _normal_alt(items: Sequence[Expr], e: Expr | None) -> Expr:
    """The normal form of ``Alt(items)`` (``e`` as for :func:`_normal_seq`)."""
    if len(items) == 1:  # (an object's member rules, mostly: nothing to compare, so nothing to hash)
        return _normal_item(items[0])
    alts: list[Expr] = []
    seen: set[Expr] = set()
    same = type(items) is tuple
    for it in items:
        n = _normal_item(it)
        if type(n) is Alt:
            parts, same = n.items, False  # type: ignore[attr-defined]
        else:
            parts, same = (n,), same and n is it
        for p in parts:
            if p not in seen:
                seen.add(p)
                alts.append(p)
            else:
                same = False
    if len(alts) == 1:
        return alts[0]
    if same:
        return e if e is not None else Alt(items)  # type: ignore[arg-type]
    return Alt(tuple(alts))


def _normal_repeat(item: Expr, lo: int, hi: int | None, e: Expr | None) -> Expr:
    """The normal form of ``Repeat(item, lo, hi)`` (``e`` as for :func:`_normal_seq`)."""
    n = _normal_item(item)
    if hi == 0 or (type(n) is Bytes and not n.value):  # type: ignore[attr-defined]
        return EMPTY
    if type(n) is Alt and not n.items:  # type: ignore[attr-defined]
        return EMPTY if lo == 0 else NOTHING
    if lo == 1 and hi == 1:
        return n
    if e is not None and n is item:
        return e
    return Repeat(n, lo, hi)


def _normalize(e: Expr) -> Expr:
    t = type(e)
    if t is Seq:
        return _normal_seq(e.items, e)  # type: ignore[attr-defined]
    if t is Alt:
        return _normal_alt(e.items, e)  # type: ignore[attr-defined]
    if t is ByteSet:
        return _norm_byteset(e)  # type: ignore[arg-type]
    if t is Repeat:
        return _normal_repeat(e.item, e.min, e.max, e)  # type: ignore[attr-defined]
    if isinstance(e, And):
        items: list[Expr] = []
        for it in e.items:
            n = normalize(it)
            for p in n.items if isinstance(n, And) else (n,):
                if p not in items:
                    items.append(p)
        if not items:
            raise GrammarError("And() needs at least one operand")
        if NOTHING in items or any(type(p) is Not and p.item in items for p in items):
            return NOTHING  # (an operand and its complement: ``allOf [A, anyOf [not A, ...]]`` distributed)
        return items[0] if len(items) == 1 else And(tuple(items))
    if isinstance(e, Not):
        item = normalize(e.item)
        if isinstance(item, Not):
            return item.item
        return Not(item)
    raise GrammarError(f"not an IR expression: {e!r}")


def _scan_refs(e: Expr) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(refs, boolean_refs)``: every rule name referenced in ``e`` (with repeats), and those
    referenced inside an ``And``/``Not`` operand -- in one walk that skips (and marks) subtrees
    without references, which builders share widely (string bodies, number automata). Remembered
    on a composite ``e``: library rules (any JSON value, ...) are the same nodes in every grammar."""
    composite = isinstance(e, _Composite)
    known = e._memo if composite else None  # type: ignore[attr-defined]
    if known is not None and known.scanned is not None:
        return known.scanned
    refs: list[str] = []
    inside: list[str] = []
    _scan(e, False, refs, inside)
    out = (tuple(refs), tuple(inside))
    if composite:
        memo(e).scanned = out  # type: ignore[arg-type]
    return out


def _scan(x: Expr, under: bool, refs: list[str], inside: list[str]) -> bool:
    t = type(x)
    if t is Ref:
        refs.append(x.name)  # type: ignore[attr-defined]
        if under:
            inside.append(x.name)  # type: ignore[attr-defined]
        return True
    if t is Bytes or t is ByteSet or t is Special or x._ref_free:  # type: ignore[attr-defined]
        return False
    under = under or t is And or t is Not
    found = False
    for c in x.items if t is Seq or t is Alt or t is And else (x.item,):  # type: ignore[attr-defined]
        if _scan(c, under, refs, inside):
            found = True
    if not found:
        object.__setattr__(x, "_ref_free", True)
    return found


def is_ref_free(e: Expr) -> bool:
    """True if ``e`` references no rule (remembered on the nodes it walks)."""
    return not _scan(e, False, [], [])


def iter_refs(e: Expr) -> Iterator[str]:
    """Names of every rule referenced inside ``e`` (with repeats)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Ref):
            yield x.name
        else:
            stack.extend(x.children())


# ----------------------------------------------------------------------------- grammar


class Grammar:
    """An immutable grammar: ordered named rules and a root rule.

    ``rules`` maps rule names to expressions; the first rule need not be the root.
    Construction validates names and references and normalizes every rule.
    """

    __slots__ = ("_boolean_refs", "_hash", "_reachable_only", "_refs", "_root", "_rules")

    def __init__(self, rules: Mapping[str, Expr] | Sequence[tuple[str, Expr]], root: str = "root"):
        items = list(rules.items()) if isinstance(rules, Mapping) else list(rules)
        normalized: dict[str, Expr] = {}
        for name, expr in items:
            if not (type(name) is str and name in _VALID_NAMES):
                if not isinstance(name, str) or not _RULE_NAME.match(name):
                    raise GrammarError(f"invalid rule name {name!r}")
                if len(_VALID_NAMES) >= 1 << 14:
                    _VALID_NAMES.clear()
                _VALID_NAMES.add(name)
            if name in normalized:
                raise GrammarError(f"rule {name!r} defined twice")
            if not isinstance(expr, Expr):
                raise GrammarError(f"rule {name!r}: not an IR expression: {expr!r}")
            normalized[name] = _normal_item(expr)  # (normal already -- what builders make -- without a call)
        if root not in normalized:
            raise GrammarError(f"root rule {root!r} is not defined")
        refs: dict[str, tuple[str, ...]] = {}
        boolean_refs: dict[str, tuple[str, ...]] = {}
        for name, expr in normalized.items():
            refs[name], boolean_refs[name] = _scan_refs(expr)
            for ref in refs[name]:
                if ref not in normalized:
                    raise GrammarError(f"rule {name!r} refers to undefined rule {ref!r}")
        self._refs = MappingProxyType(refs)
        self._boolean_refs = MappingProxyType(boolean_refs)
        self._rules = MappingProxyType(normalized)
        self._root = root
        self._hash: int | None = None
        self._reachable_only = False  # (known to hold only rules reachable from the root: see reachable)

    # -- accessors
    @property
    def rules(self) -> Mapping[str, Expr]:
        return self._rules

    @property
    def root(self) -> str:
        return self._root

    @property
    def rule_refs(self) -> Mapping[str, tuple[str, ...]]:
        """Per rule, the names of the rules its expression references (with repeats)."""
        return self._refs

    @property
    def boolean_refs(self) -> Mapping[str, tuple[str, ...]]:
        """Per rule, the names it references inside an ``And``/``Not`` operand (with repeats)."""
        return self._boolean_refs

    def __getitem__(self, name: str) -> Expr:
        return self._rules[name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self._root == other._root and dict(self._rules) == dict(other._rules)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self._root, tuple(sorted(self._rules.items(), key=lambda kv: kv[0]))))
        return self._hash

    def __repr__(self) -> str:
        return f"Grammar(root={self._root!r}, rules={len(self._rules)})"

    def __str__(self) -> str:
        return self.to_ebnf()

    def reachable(self, root: str | None = None) -> Grammar:
        """The same grammar without rules unreachable from the root (or from rule ``root``, which
        then is the root)."""
        root = self._root if root is None else root
        if root == self._root and self._reachable_only:  # (a front-end's grammar, asked again by the compile)
            return self
        if root not in self._rules:
            raise GrammarError(f"root rule {root!r} is not defined")
        seen = {root}
        stack = [root]
        while stack:
            for ref in self._refs[stack.pop()]:
                if ref not in seen:
                    seen.add(ref)
                    stack.append(ref)
        if len(seen) == len(self._rules) and root == self._root:
            self._reachable_only = True
            return self
        # (the rules are valid and normal already: the subset is taken as it is -- copies less the
        # few rules left out, when they are few)
        rules, refs, boolean_refs = dict(self._rules), dict(self._refs), dict(self._boolean_refs)
        for n in self._rules.keys() - seen:
            del rules[n], refs[n], boolean_refs[n]
        sub = object.__new__(Grammar)
        sub._rules = MappingProxyType(rules)
        sub._refs = MappingProxyType(refs)
        sub._boolean_refs = MappingProxyType(boolean_refs)
        sub._root = root
        sub._hash = None
        sub._reachable_only = True
        return sub

    def with_root(self, root: str) -> Grammar:
        return Grammar(dict(self._rules), root=root)

    def fingerprint(self) -> str:
        """A stable hex digest of the grammar's canonical text (for caches keyed across processes)."""
        import hashlib

        return hashlib.sha256(self.to_ebnf().encode("utf-8")).hexdigest()

    # -- printing / front-ends (front-ends are imported lazily: they depend on this module)
    def to_ebnf(self) -> str:
        """The grammar as EBNF text that :meth:`from_ebnf` parses back to an equal grammar."""
        from .._recursion import with_room
        from .ebnf import format_grammar

        # (a Special prints as its expansion: a numeral of hundreds of digits is 600 levels deep)
        return with_room(lambda: format_grammar(self), "the grammar's text")

    @classmethod
    def from_ebnf(cls, text: str, root: str = "root") -> Grammar:
        """Parse llama.cpp GBNF / EBNF text (see :mod:`logitgate.grammar.ebnf`)."""
        from .ebnf import parse_ebnf

        return parse_ebnf(text, root=root)

    @classmethod
    def from_regex(cls, pattern: str, **options: Any) -> Grammar:
        """A grammar for strings fully matching ``pattern`` (see :mod:`logitgate.grammar.regex`)."""
        from .regex import regex_grammar

        return regex_grammar(pattern, **options)

    @classmethod
    def from_json_schema(cls, schema: Any, **options: Any) -> Grammar:
        """A grammar for JSON texts valid under ``schema`` (dict, JSON string or pydantic model)."""
        from .json_schema import json_schema_grammar

        return json_schema_grammar(schema, **options)

    @classmethod
    def builtin_json(cls, **options: Any) -> Grammar:
        """A grammar for any JSON value."""
        from .builtins import builtin_json_grammar

        return builtin_json_grammar(**options)

    @classmethod
    def from_choices(cls, choices: Iterable[str | bytes]) -> Grammar:
        """A grammar matching exactly one of the given strings."""
        from .builtins import choices_grammar

        return choices_grammar(choices)
