"""String contents of a counted length (``minLength``/``maxLength``), built directly.

As plain IR, ``lo..hi`` characters is ``any_char(){lo,hi}``: ``hi`` copies of the character's
automaton (an escape, a surrogate pair, UTF-8 sequences: ~17 NFA states each) for the subset
construction to walk and minimization to merge again -- 7.5 ms for ``maxLength: 255``. The
automaton is known in advance: one *layer* of the character's states per character read so far,
a finished character moving to the start of the next layer. :func:`counted_content` gives a
:class:`~logitgate.grammar.ir.Special` node whose automaton is laid out that way
(``Special.expand()`` still gives the expression: the reference recognizer and printing use it);
:func:`string_value` puts the quotes inside the automaton too, so a string value's rule is the
automaton as built rather than quotes around it for the subset construction to walk again.

    >>> from logitgate.grammar.json_schema.lengths import counted_content
    >>> counted_content(0, 3).args
    (0, 3)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import LimitExceededError
from ..ir import Expr, Special, SpecialKind, lit, register_special, repeat, seq
from .strings import any_char

__all__ = ["counted_content", "string_value"]

KIND = "json_string_length"


def counted_content(lo: int, hi: int | None) -> Expr:
    """String contents of ``lo``..``hi`` characters (``hi`` None: no upper bound); escapes and
    surrogate pairs count as one character."""
    if (lo < 2) if hi is None else (hi < 2):  # (a copy or two: the plain expression)
        return repeat(any_char(), lo, hi)
    return Special(KIND, (lo, hi))


_CHAR: list[Any] = []  # the automaton of one encoded character, once made


def string_value(content: Expr) -> Expr:
    """The JSON string ``"content"``: counted contents as one automaton, quotes included (a rule
    that is nothing else then uses it as built, where quotes around it would make the subset
    construction walk its layers again)."""
    if type(content) is Special and content.kind == KIND:  # type: ignore[attr-defined]
        return Special(KIND, (*content.args[:2], True))  # type: ignore[attr-defined]
    return seq(lit('"'), content, lit('"'))


def _expand(args: tuple) -> Expr:
    body = repeat(any_char(), args[0], args[1])
    return seq(lit('"'), body, lit('"')) if len(args) > 2 else body


def build_counted(args: tuple, dfa_of: Callable[[Expr], Any], max_states: int) -> tuple:
    """``(byte_class, trans, final, start)`` of ``lo..hi`` characters (``args = (lo, hi)``, or
    ``(lo, hi, True)``: between quotes), trimmed by construction.

    Layer ``k`` (``k`` characters read) holds the character automaton's states but its final
    one; a byte that finishes a character goes to the next layer's start. Bounded: layers
    ``0..hi-1`` and one state for "``hi`` read"; unbounded: layers ``0..lo-1`` and one state for
    "``lo`` or more read", whose next character goes on in the last layer. Minimal as built.
    """
    lo, hi = args[:2]
    if not _CHAR:
        _CHAR.append(dfa_of(any_char()))
    d = _CHAR[0]
    n, k = d.trans.shape
    finals = np.flatnonzero(d.final)
    if len(finals) != 1 or (d.trans[finals[0]] >= 0).any() or finals[0] == d.start:  # pragma: no cover
        raise AssertionError("a character's automaton must end in one state with no way on")
    f = int(finals[0])
    inner = [d.start] + [q for q in range(n) if q != f and q != d.start]  # a layer's states, its start first
    m = len(inner)
    where = np.full(n, -1, dtype=np.int64)
    where[inner] = np.arange(m)
    targets = d.trans[inner].astype(np.int64)  # (m, k) in the character's numbering
    done = targets == f
    local = np.where(targets >= 0, where[np.maximum(targets, 0)], -1)
    layers = hi if hi is not None else lo
    total = layers * m + 1  # and "hi read" (bounded), or "lo read or more" (unbounded)
    if total > max_states:
        raise LimitExceededError(f"string of {lo}..{hi} characters exceeds {max_states} automaton states",
                                 limit="max_dfa_states")
    base = (np.arange(layers, dtype=np.int64) * m)[:, None, None]
    trans = np.where(done[None], base + m, np.where(local[None] >= 0, local[None] + base, -1))
    table = np.empty((total, k), dtype=np.int32)
    table[:-1] = trans.reshape(layers * m, k)
    final = np.zeros(total, dtype=bool)
    final[-1] = True
    if hi is None:  # "lo read or more": a character more goes on in the last layer, or ends here again
        table[-1] = np.where(done[0], total - 1, np.where(local[0] >= 0, local[0] + (lo - 1) * m, -1))
    else:
        table[-1] = -1
        final[np.arange(lo, hi) * m] = True
    if len(args) > 2:
        return _quoted(d.byte_class, table, final)
    return d.byte_class, table, final, 0


def _quoted(byte_class: np.ndarray, table: np.ndarray, final: np.ndarray) -> tuple:
    """The automaton between quotes: a start state that reads ``"``, and ``"`` from every final
    state to one last state. The quote gets a class of its own (inside an escape it reads like the
    bytes it shared a class with)."""
    q = int(byte_class[0x22])
    byte_class = np.asarray(byte_class, dtype=np.int32).copy()
    if (byte_class == q).sum() > 1:  # split: a new column, the old one's copy
        table = np.concatenate([table, table[:, q:q + 1]], axis=1)
        q = table.shape[1] - 1
        byte_class[0x22] = q
    n, k = table.shape
    if (table[final, q] >= 0).any():  # pragma: no cover - a raw quote never starts a character
        raise AssertionError("a quote after a whole character must end the string")
    out = np.full((n + 2, k), -1, dtype=np.int32)
    out[:n] = table
    out[:n][final, q] = n + 1
    out[n, q] = 0
    done = np.zeros(n + 2, dtype=bool)
    done[n + 1] = True
    return byte_class, out, done, n


register_special(KIND, SpecialKind(
    expand=_expand, nullable=lambda args: len(args) < 3 and args[0] == 0, lexeme_like=True, build=build_counted))
