"""String contents of a counted length (``minLength``/``maxLength``), built directly.

As plain IR, ``lo..hi`` characters is ``any_char(){lo,hi}``: ``hi`` copies of the character's
automaton (an escape, a surrogate pair, UTF-8 sequences: ~17 NFA states each) for the subset
construction to walk and minimization to merge again -- 7.5 ms for ``maxLength: 255``. The
automaton is known in advance: one *layer* of the character's states per character read so far,
a finished character moving to the start of the next layer. :func:`counted_content` gives a
:class:`~logitgate.grammar.ir.Special` node whose automaton is laid out that way
(``Special.expand()`` still gives the expression: the reference recognizer and printing use it);
:func:`string_value` puts the quotes inside the automaton too, so a string value's rule is the
automaton as built rather than quotes around it for the subset construction to walk again, and
:func:`or_null` the alternative ``null`` (a nullable string: ``{"type": ["string", "null"]}``).

    >>> from logitgate.grammar.json_schema.lengths import counted_content
    >>> counted_content(0, 3).args
    (0, 3)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from ...errors import LimitExceededError
from ..ir import Expr, Special, SpecialKind, alt, lit, register_special, repeat, seq
from .strings import any_char

__all__ = ["FLAT_MAX_CHARS", "char_dfa", "chunked_string", "counted_content", "or_null", "own_classes", "string_value"]

KIND = "json_string_length"


#: a string only its length constrains, past this many characters (at least or at most), is counted
#: in chunks (:func:`chunked_string`); up to it, by one layered automaton (20 states a character:
#: 8,192 characters are 163,843 states, a 14 MB table)
FLAT_MAX_CHARS = 8192
#: characters in a chunk (more where a string would take over ``_CHUNKS_SOFT`` chunks: the square
#: root of its length, up to ``_CHUNK_MAX``), and the most chunks a string may take
CHUNK_CHARS = 512
_CHUNKS_SOFT = 1024
_CHUNK_MAX = 4096
MAX_CHUNKS = 65536


def counted_content(lo: int, hi: int | None) -> Expr:
    """String contents of ``lo``..``hi`` characters (``hi`` None: no upper bound); escapes and
    surrogate pairs count as one character."""
    if (lo < 2) if hi is None else (hi < 2):  # (a copy or two: the plain expression)
        return repeat(any_char(), lo, hi)
    return Special(KIND, (lo, hi))


def chunked_string(lo: int, hi: int | None, rule: Callable[[Expr], Expr]) -> Expr:
    """The JSON string of ``lo``..``hi`` characters, counted in whole chunks of ``b`` characters
    -- a rule of exactly ``b`` -- then a last part of fewer that ends with the closing quote (a
    rule per kind of last part; ``rule`` makes an expression a named rule and returns its
    reference). Each is a layered automaton built directly; the string's own expression only
    counts chunks. Exact: a string of ``n`` characters splits one way only, into ``n // b``
    chunks and ``n % b`` more. ``maxLength: 65535`` is up to 127 calls of a 10,241-state chunk
    and a last part as large (``b`` divides 65,536: no shorter last part after the 128th
    chunk), where one layered automaton would take 1.3 million states.

    Past its last whole chunk, the matcher cannot know whether the next characters are another
    chunk or the last part until ``b`` of them are read or the string ends, so it follows both
    meanwhile (two stacks). A token across a chunk's end is resolved against the count of chunks
    below it: some milliseconds a first time, so chunks are long (with 64 characters, a third of
    the mask time of the MaskBench schemas this concerns went there; chunks of 512 make fewer
    states to build than 1,024). The counts differ only in where the next chunk returns, which no
    token reaches, so resolutions key them all by one (``RTN.frame_representative``). A
    ``minLength`` is whole chunks first, then the rest: no such choice.
    """
    n = max(lo, hi or 0)
    b = CHUNK_CHARS
    if n // b > _CHUNKS_SOFT:
        b = min(_CHUNK_MAX, math.isqrt(n) + 1)
    elif hi is not None:  # a length whose count ends a chunk (2 ** k - 1, as most are) needs no shorter last part
        b = next((c for c in (b, 2 * b) if (hi + 1 - lo // c * c) % c == 0), b)
    if n // b > MAX_CHUNKS:
        raise LimitExceededError(f"string of {lo}..{hi} characters exceeds {MAX_CHUNKS} chunks of {b}",
                                 limit="max_dfa_states")
    chunk = rule(Special(KIND, (b, b)))

    def last(fewest: int, most: int | None) -> Expr:  # that many more characters, then the quote
        return rule(Special(KIND, (fewest, most, CLOSING)))

    whole, lo = divmod(lo, b)  # (at least ``lo``: that many whole chunks first, then the rest)
    parts = [lit('"')] + ([repeat(chunk, whole, whole)] if whole else [])
    if hi is not None:
        hi -= whole * b
    if hi is None or hi < b:
        return seq(*parts, last(lo, hi))
    q, r = divmod(hi, b)  # a string of n characters: n // b chunks, then n % b more
    tails = [last(lo, b - 1)] if lo else []  # no chunk: at least lo more
    first, most = (1 if lo else 0), (q if r == b - 1 else q - 1)  # chunks followed by up to b - 1
    if most >= first:
        tails.append(seq(repeat(chunk, first, most), last(0, b - 1)))
    if r != b - 1:
        tails.append(seq(repeat(chunk, q, q), last(0, r)))
    return seq(*parts, alt(*tails))


_CHAR: list[Any] = []  # the automaton of one encoded character, once made


def char_dfa(dfa_of: Callable[[Expr], Any]) -> Any:
    """The automaton of one encoded character (made once): it ends in one final state with no way
    on, which is not its start."""
    if not _CHAR:
        d = dfa_of(any_char())
        finals = np.flatnonzero(d.final)
        if len(finals) != 1 or (d.trans[finals[0]] >= 0).any() or finals[0] == d.start:  # pragma: no cover
            raise AssertionError("a character's automaton must end in one state with no way on")
        _CHAR.append(d)
    return _CHAR[0]


@functools.lru_cache(maxsize=256)
def string_value(content: Expr) -> Expr:
    """The JSON string ``"content"``: counted contents as one automaton, quotes included (a rule
    that is nothing else then uses it as built, where quotes around it would make the subset
    construction walk its layers again). One node per content (remembered): the common string
    values of different grammars are then the same object, which rule lookups compare at once."""
    if type(content) is Special and content.kind == KIND:  # type: ignore[attr-defined]
        return Special(KIND, (*content.args[:2], True))  # type: ignore[attr-defined]
    return seq(lit('"'), content, lit('"'))


def or_null(value: Expr) -> Expr | None:
    """``null`` or the counted string ``value`` (from :func:`string_value`) as one automaton, or
    None when ``value`` is not counted. ``{"type": ["string", "null"], "maxLength": 1000}`` is
    then a rule built directly, where the alternation would make the subset construction walk
    the string's 20,000 states again (and minimization after it)."""
    if type(value) is Special and value.kind == KIND and len(value.args) == 3:  # type: ignore[attr-defined]
        return Special(KIND, (*value.args, _NULL))  # type: ignore[attr-defined]
    return None


_NULL = "null"
#: the third argument of a counted content the closing quote ends (see :func:`chunked_string`)
CLOSING = "closing"


def _expand(args: tuple) -> Expr:
    body = repeat(any_char(), args[0], args[1])
    if len(args) == 2:
        return body
    if args[2] == CLOSING:
        return seq(body, lit('"'))
    quoted = seq(lit('"'), body, lit('"'))
    return alt(lit(_NULL), quoted) if len(args) > 3 else quoted


def build_counted(args: tuple, dfa_of: Callable[[Expr], Any], max_states: int) -> tuple:
    """``(byte_class, trans, final, start, layers)`` of ``lo..hi`` characters (``args = (lo, hi)``;
    ``(lo, hi, True)``: between quotes; ``(lo, hi, True, "null")``: that or ``null``; ``(lo, hi,
    CLOSING)``: then the closing quote, the last part of a string counted in chunks), trimmed and
    minimal by construction; ``layers = (m, count, lo, hi)`` says states ``k * m + q`` are layer
    ``k``'s (``k < count``), which lets the engine share masks between layers
    (:meth:`logitgate.engine.rtn.RTN.mask_representative`).

    Layer ``k`` (``k`` characters read) holds the character automaton's states but its final
    one; a byte that finishes a character goes to the next layer's start. Bounded: layers
    ``0..hi-1`` and one state for "``hi`` read"; unbounded: layers ``0..lo-1`` and one state for
    "``lo`` or more read", whose next character goes on in the last layer. Quotes: a start state
    that reads ``"`` and a last state every final one reaches by ``"`` (the bytes the states
    outside the layers read get classes of their own). The table is written by one kernel call
    (``maxLength: 6000`` is 120,000 states).
    """
    lo, hi = args[:2]
    quoted, null = len(args) > 2, len(args) > 3
    opening = quoted and args[2] != CLOSING
    byte_class, layer = _layer(dfa_of, quoted, null)
    m = layer.shape[0]
    # start and end (the end alone after chunks), and n, nu, nul
    extra = 0 if not quoted else 1 + opening + (len(_NULL) - 1 if null else 0)
    layers = hi if hi is not None else lo
    count = layers * m + 1  # the layers, and "hi read" (bounded) or "lo read or more" (unbounded)
    if count + extra > max_states:
        raise LimitExceededError(f"string of {lo}..{hi} characters exceeds {max_states} automaton states",
                                 limit="max_dfa_states")
    q = int(byte_class[0x22]) if quoted else -1
    path = np.asarray([byte_class[b] for b in _NULL.encode()] if null else [], dtype=np.int32)
    table, final, ok = _counted_table(layer, layers, lo, 0 if hi is None else hi, hi is not None, extra, q, path,
                                      opening)
    if not ok:  # pragma: no cover - a raw quote never starts a character
        raise AssertionError("a quote after a whole character must end the string")
    layout = (m, layers, lo, hi)  # states ``k * m + q``: character state ``q`` of layer ``k``
    return byte_class, table, final, count if opening else 0, layout


@njit(nogil=True, cache=True)
def _counted_table(layer, layers, lo, hi, bounded, extra, q, null_classes, opening):  # pragma: no cover
    """The table and finality of :func:`build_counted` (``hi`` read only when ``bounded``; ``q``
    the quote's class, -1: unquoted; ``null_classes``: the classes of ``n``, ``u``, ``l``, ``l``,
    empty: no ``null``; ``opening``: a start state reads the opening quote), and False where a quote
    would already be read after a whole character.
    One compiled call: a dozen numpy calls took ~250 µs in a compile right after the process
    waited, ~40 back to back."""
    m, k = layer.shape
    count = layers * m + 1
    n = count + extra
    table = np.full((n, k), -1, dtype=np.int32)
    for base in range(0, layers * m, m):  # layer base // m: the character's states, moved along
        for s in range(m):
            for c in range(k):
                t = layer[s, c]
                if t >= 0:
                    table[base + s, c] = t + base
    final = np.zeros(n, dtype=np.bool_)
    last = count - 1
    if bounded:
        for j in range(lo, hi + 1):
            final[j * m] = True
    else:  # "lo read or more": a character more goes on in the last layer, or ends here again
        for c in range(k):
            f = layer[0, c]
            table[last, c] = last if f == m else (f + (lo - 1) * m if f >= 0 else -1)
        final[last] = True
    if q < 0:
        return table, final, True
    start, end = (count, count + 1) if opening else (-1, count)
    for s in range(count):
        if final[s]:
            if table[s, q] >= 0:
                return table, final, False
            table[s, q] = end
            final[s] = False
    if opening:
        table[start, q] = 0
    final[end] = True
    if null_classes.shape[0]:  # start -n-> n -u-> nu -l-> nul -l-> end
        prev = start
        for i in range(null_classes.shape[0]):
            nxt = end if i == null_classes.shape[0] - 1 else end + 1 + i
            table[prev, null_classes[i]] = nxt
            prev = nxt
    return table, final, True


def _layer(dfa_of: Callable[[Expr], Any], quoted: bool, null: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(byte_class, layer)`` of :func:`build_counted`: one layer's table, its targets
    relative to the layer's first state (``m``, the row count: the next layer's start; -1: none),
    with the bytes read outside the layers in classes of their own when ``quoted``; made once per
    kind (a compile that needs a counted string then only writes its table)."""
    hit = _LAYERS.get((quoted, null))
    if hit is not None:
        return hit
    d = char_dfa(dfa_of)
    n = d.trans.shape[0]
    f = int(np.flatnonzero(d.final)[0])
    inner = [d.start] + [q for q in range(n) if q != f and q != d.start]  # a layer's states, its start first
    m = len(inner)
    where = np.full(n, -1, dtype=np.int64)
    where[inner] = np.arange(m)
    targets = d.trans[inner].astype(np.int64)  # (m, k) in the character's numbering
    layer = np.where(targets == f, m, np.where(targets >= 0, where[np.maximum(targets, 0)], -1)).astype(np.int32)
    byte_class = np.asarray(d.byte_class, dtype=np.int32)
    if quoted:
        outside = b'"' + (_NULL.encode() if null else b"")  # the bytes read outside the layers
        byte_class, layer = own_classes(byte_class, layer, outside)
    hit = _LAYERS[(quoted, null)] = (byte_class, layer)
    return hit


_LAYERS: dict[tuple[bool, bool], tuple[np.ndarray, np.ndarray]] = {}


def own_classes(byte_class: np.ndarray, layer: np.ndarray, data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Each byte of ``data`` in a class of its own: a byte sharing its class gets a new column,
    a copy of that class's (inside the layers it reads like the bytes it shared a class with);
    classes numbered by lowest byte."""
    byte_class = byte_class.copy()
    cols = [layer]
    k = layer.shape[1]
    for b in dict.fromkeys(data):
        c = int(byte_class[b])
        if (byte_class == c).sum() > 1:
            cols.append(layer[:, c:c + 1])
            byte_class[b] = k
            k += 1
    if len(cols) == 1:
        return byte_class, layer
    layer = np.concatenate(cols, axis=1)
    # classes numbered by lowest byte again (as minimization leaves them: equal input, equal arrays)
    _, lowest = np.unique(byte_class, return_index=True)
    order = np.argsort(lowest)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    # (C order, as every other layer is: the columns taken by ``order`` come back in Fortran order,
    # and an array of another layout is another type to numba, a second compile of the table kernel)
    return rank[byte_class].astype(np.int32), np.ascontiguousarray(layer[:, order])


register_special(KIND, SpecialKind(
    expand=_expand, nullable=lambda args: len(args) < 3 and args[0] == 0, lexeme_like=True, build=build_counted))
