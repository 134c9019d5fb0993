"""JSON string contents as byte-level IR.

A JSON string value can be written in many ways: every character other than ``"``,
``\\`` and the controls U+0000..U+001F may appear raw (UTF-8); ``" \\ / \\b \\f \\n \\r \\t``
have short escapes; every BMP character has ``\\uXXXX`` escapes (hex digits in either
case) and every astral character a surrogate-pair escape ``\\uD8xx\\uDCxx``.
:func:`encode_chars` maps a set of code points to the IR of *one encoded character*
from the set, in all of its spellings, so constraints written on decoded strings
(patterns, lengths, formats) become exact constraints on the JSON text. Lone
surrogate escapes (``\\uD800`` alone) encode no Unicode character and are never
produced.

    >>> from logitgate.grammar.json_schema.strings import encode_chars, string_literal
    >>> encode_chars([(0x61, 0x61)])  # 'a' raw, or \\u0061 in any hex case
    Alt(items=(Bytes(value=b'a'), Bytes(value=b'\\\\u0061')))
    >>> string_literal("a\\n")
    Bytes(value=b'a\\\\n')
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache

from ..ir import EMPTY, NOTHING, Expr, alt, byteset, lit, repeat, seq
from ..utf8 import MAX_CODEPOINT, codepoint_ranges_expr, normalize_codepoint_ranges

__all__ = [
    "ALL_CHARS",
    "any_char",
    "any_string_content",
    "encode_chars",
    "hex_value_expr",
    "string_literal",
]

ALL_CHARS: tuple[tuple[int, int], ...] = ((0, MAX_CODEPOINT),)

# characters with a short escape: code point -> escape letter
_SHORT_ESCAPES = {0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x08: 0x62, 0x0C: 0x66, 0x0A: 0x6E, 0x0D: 0x72, 0x09: 0x74}
_HEX_CHARS = "0123456789abcdef"


def _hex_digit_set(lo: int, hi: int) -> Expr:
    """One hex digit (either case) with value in ``lo..hi``."""
    ranges: list[tuple[int, int]] = []
    if lo <= 9:
        ranges.append((0x30 + lo, 0x30 + min(hi, 9)))
    if hi >= 10:
        a, b = max(lo, 10) - 10, hi - 10
        ranges.append((0x61 + a, 0x61 + b))
        ranges.append((0x41 + a, 0x41 + b))
    return byteset(*ranges)


def _intervals_to_digits(ranges: tuple[tuple[int, int], ...], ndigits: int) -> Expr:
    """Digit strings (base 16, exactly ``ndigits``) whose value lies in ``ranges``."""
    full = 16**ndigits
    if not ranges:
        return NOTHING
    if ranges == ((0, full - 1),):
        return repeat(_hex_digit_set(0, 15), ndigits, ndigits) if ndigits else EMPTY
    if ndigits == 0:
        return EMPTY
    sub = full // 16
    # group leading digits whose remaining sets are identical
    groups: dict[tuple[tuple[int, int], ...], list[int]] = {}
    order: list[tuple[tuple[int, int], ...]] = []
    for d in range(16):
        base = d * sub
        rest: list[tuple[int, int]] = []
        for lo, hi in ranges:
            a, b = max(lo, base), min(hi, base + sub - 1)
            if a <= b:
                rest.append((a - base, b - base))
        if not rest:
            continue
        key = tuple(rest)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(d)
    parts = []
    for key in order:
        digits = groups[key]
        # digits form runs; express the leading digit set as one byteset
        runs: list[list[int]] = []
        for d in digits:
            if runs and runs[-1][1] == d - 1:
                runs[-1][1] = d
            else:
                runs.append([d, d])
        first = alt(*(_hex_digit_set(a, b) for a, b in runs))
        parts.append(seq(first, _intervals_to_digits(key, ndigits - 1)))
    return alt(*parts)


def hex_value_expr(ranges: Iterable[tuple[int, int]], ndigits: int = 4) -> Expr:
    """Exactly ``ndigits`` hex digits (either case) whose value lies in ``ranges``."""
    return _intervals_to_digits(tuple(normalize_codepoint_ranges(ranges)), ndigits)


def _subtract(ranges: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    out = []
    for a, b in ranges:
        if b < lo or a > hi:
            out.append((a, b))
            continue
        if a < lo:
            out.append((a, lo - 1))
        if b > hi:
            out.append((hi + 1, b))
    return out


def _intersect(ranges: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    return [(max(a, lo), min(b, hi)) for a, b in ranges if a <= hi and b >= lo]


def _contains(ranges: list[tuple[int, int]], cp: int) -> bool:
    return any(a <= cp <= b for a, b in ranges)


def _surrogate_pairs(astral: list[tuple[int, int]]) -> Expr:
    """``\\uHHHH\\uLLLL`` (after the first backslash-u is stripped: ``HHHH\\uLLLL``)."""
    rects: dict[tuple[int, int], list[tuple[int, int]]] = {}
    order: list[tuple[int, int]] = []

    def add(h_lo: int, h_hi: int, l_lo: int, l_hi: int) -> None:
        key = (l_lo, l_hi)
        if key not in rects:
            rects[key] = []
            order.append(key)
        rects[key].append((0xD800 + h_lo, 0xD800 + h_hi))

    for a, b in astral:
        va, vb = a - 0x10000, b - 0x10000
        ha, la, hb, lb = va >> 10, va & 0x3FF, vb >> 10, vb & 0x3FF
        if ha == hb:
            add(ha, ha, la, lb)
            continue
        add(ha, ha, la, 0x3FF)
        if ha + 1 <= hb - 1:
            add(ha + 1, hb - 1, 0, 0x3FF)
        add(hb, hb, 0, lb)
    parts = []
    for l_lo, l_hi in order:
        parts.append(
            seq(hex_value_expr(rects[(l_lo, l_hi)]), lit(b"\\u"), hex_value_expr([(0xDC00 + l_lo, 0xDC00 + l_hi)]))
        )
    return alt(*parts)


@lru_cache(maxsize=4096)
def _encode_chars_cached(ranges: tuple[tuple[int, int], ...], escapes: bool) -> Expr:
    rs = [(a, b) for a, b in ranges]
    rs = _subtract(rs, 0xD800, 0xDFFF)
    raw = _subtract(_subtract(_subtract(rs, 0, 0x1F), 0x22, 0x22), 0x5C, 0x5C)
    parts: list[Expr] = []
    if raw:
        parts.append(codepoint_ranges_expr(raw))
    if escapes:
        after_backslash: list[Expr] = []
        short = [esc for cp, esc in _SHORT_ESCAPES.items() if _contains(rs, cp)]
        if short:
            after_backslash.append(byteset(*short))
        u_parts: list[Expr] = []
        bmp = _intersect(rs, 0, 0xFFFF)
        if bmp:
            u_parts.append(hex_value_expr(bmp))
        astral = _intersect(rs, 0x10000, MAX_CODEPOINT)
        if astral:
            u_parts.append(_surrogate_pairs(astral))
        if u_parts:
            after_backslash.append(seq(lit(b"u"), alt(*u_parts)))
        if after_backslash:
            parts.append(seq(lit(b"\\"), alt(*after_backslash)))
    else:
        # escapes only where raw is impossible, in json.dumps(ensure_ascii=False) style
        for cp in range(0x20):
            if _contains(rs, cp):
                parts.append(lit(_canonical_char(cp)))
        for cp in (0x22, 0x5C):
            if _contains(rs, cp):
                parts.append(lit(_canonical_char(cp)))
    return alt(*parts)


def encode_chars(ranges: Iterable[tuple[int, int]], *, escapes: bool = True) -> Expr:
    """IR for one JSON-encoded character from the code points in ``ranges``.

    With ``escapes=True`` (default) every spelling JSON allows is included: raw UTF-8
    (where allowed), short escapes, ``\\uXXXX`` in either hex case and surrogate pairs.
    With ``escapes=False`` only the spelling ``json.dumps(..., ensure_ascii=False)``
    writes is included (a subset, used for positive literals when asked).
    """
    return _encode_chars_cached(tuple(normalize_codepoint_ranges(ranges)), escapes)


def _canonical_char(cp: int) -> bytes:
    return json.dumps(chr(cp), ensure_ascii=False)[1:-1].encode("utf-8")


def string_literal(value: str, *, all_spellings: bool = False) -> Expr:
    """The content (without quotes) of the JSON string ``value``.

    By default only the spelling ``json.dumps(value, ensure_ascii=False)`` writes; with
    ``all_spellings=True`` every JSON spelling of the same string (escapes included).
    """
    if not all_spellings:
        return lit(json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass"))
    return seq(*(encode_chars([(ord(c), ord(c))]) for c in value))


def any_char() -> Expr:
    """One JSON-encoded character of any kind (all spellings)."""
    return encode_chars(ALL_CHARS)


@lru_cache(maxsize=1024)
def any_string_content(min_len: int = 0, max_len: int | None = None) -> Expr:
    """String contents of ``min_len``..``max_len`` characters (escapes count as one)."""
    return repeat(any_char(), min_len, max_len)
