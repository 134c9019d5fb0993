"""Unicode code-point sets as UTF-8 byte-level IR expressions.

Front-ends describe character classes as code-point ranges; :func:`codepoint_ranges_expr`
turns them into an alternation of byte sequences (each byte a :class:`ByteSet`), the
standard UTF-8 range split. Surrogates (U+D800..U+DFFF) have no UTF-8 encoding and are
dropped.

    >>> from logitgate.grammar.utf8 import codepoint_ranges_expr
    >>> codepoint_ranges_expr([(0x61, 0x7A)])
    ByteSet(ranges=((97, 122),))
"""

from __future__ import annotations

from collections.abc import Iterable

from .ir import Expr, alt, byteset, seq

__all__ = [
    "MAX_CODEPOINT",
    "codepoint_ranges_expr",
    "complement_codepoints",
    "normalize_codepoint_ranges",
    "utf8_byte_ranges",
]

MAX_CODEPOINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
# (first code point, last code point) for UTF-8 encodings of 1..4 bytes
_LENGTH_BANDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, MAX_CODEPOINT))


def normalize_codepoint_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged, inclusive ranges clipped to 0..U+10FFFF."""
    out: list[list[int]] = []
    for lo, hi in sorted((max(0, a), min(MAX_CODEPOINT, b)) for a, b in ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def complement_codepoints(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """All code points (0..U+10FFFF) not in ``ranges``."""
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in normalize_codepoint_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return out


def _remove_surrogates(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    s_lo, s_hi = _SURROGATES
    for lo, hi in ranges:
        if hi < s_lo or lo > s_hi:
            out.append((lo, hi))
            continue
        if lo < s_lo:
            out.append((lo, s_lo - 1))
        if hi > s_hi:
            out.append((s_hi + 1, hi))
    return out


def _split_same_prefix(lo: int, hi: int, nbytes: int) -> list[list[tuple[int, int]]]:
    """Split [lo, hi] (all encoded in ``nbytes`` bytes) into byte-range sequences."""
    if nbytes == 1:
        return [[(lo, hi)]]
    # Split on continuation-byte boundaries so every byte position is a plain range.
    for i in range(1, nbytes):
        m = (1 << (6 * i)) - 1
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                return _split_same_prefix(lo, lo | m, nbytes) + _split_same_prefix((lo | m) + 1, hi, nbytes)
            if hi & m != m:
                return _split_same_prefix(lo, (hi & ~m) - 1, nbytes) + _split_same_prefix(hi & ~m, hi, nbytes)
    a = chr(lo).encode("utf-8")
    b = chr(hi).encode("utf-8")
    return [[(a[k], b[k]) for k in range(nbytes)]]


def utf8_byte_ranges(ranges: Iterable[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """UTF-8 encodings of code-point ranges as sequences of inclusive byte ranges.

    Each returned sequence ``[(lo0, hi0), (lo1, hi1), ...]`` matches exactly the byte
    strings whose byte ``k`` lies in ``(lok, hik)``; together they match exactly the
    encodings of the given code points.
    """
    result: list[list[tuple[int, int]]] = []
    for lo, hi in _remove_surrogates(normalize_codepoint_ranges(ranges)):
        for nbytes, (b_lo, b_hi) in enumerate(_LENGTH_BANDS, start=1):
            a, b = max(lo, b_lo), min(hi, b_hi)
            if a <= b:
                result.extend(_split_same_prefix(a, b, nbytes))
    return result


def codepoint_ranges_expr(ranges: Iterable[tuple[int, int]]) -> Expr:
    """IR expression matching exactly one UTF-8 encoded code point from ``ranges``.

    Sequences that share their leading byte ranges are factored so the result stays
    small (a negated class like ``[^"]`` becomes a handful of alternatives). Results are
    remembered per set of ranges (expressions are immutable; patterns repeat their classes).
    """
    key = tuple(normalize_codepoint_ranges(ranges))
    hit = _CLASS_EXPRS.get(key)
    if hit is None:
        if len(_CLASS_EXPRS) >= 4096:
            _CLASS_EXPRS.clear()
        hit = _CLASS_EXPRS[key] = _class_expr(key)
    return hit


#: codepoint_ranges_expr by normalized ranges
_CLASS_EXPRS: dict[tuple[tuple[int, int], ...], Expr] = {}


def _class_expr(ranges: tuple[tuple[int, int], ...]) -> Expr:
    seqs = utf8_byte_ranges(ranges)
    # Merge single-byte ranges into one ByteSet; keep multi-byte sequences as Seq of ByteSets.
    singles = [s[0] for s in seqs if len(s) == 1]
    multi = [s for s in seqs if len(s) > 1]
    parts: list[Expr] = []
    if singles:
        parts.append(byteset(*singles))
    parts.extend(_factor(multi))
    return alt(*parts)


def _factor(seqs: list[list[tuple[int, int]]]) -> list[Expr]:
    """Group sequences by identical tails so e.g. ``[c2-df][80-bf]`` stays one item."""
    by_tail: dict[tuple[tuple[int, int], ...], list[tuple[int, int]]] = {}
    order: list[tuple[tuple[int, int], ...]] = []
    for s in seqs:
        tail = tuple(s[1:])
        if tail not in by_tail:
            by_tail[tail] = []
            order.append(tail)
        by_tail[tail].append(s[0])
    out: list[Expr] = []
    for tail in order:
        out.append(seq(byteset(*by_tail[tail]), *(byteset(r) for r in tail)))
    return out
