"""JSON strings of a counted length that also match a pattern or format, built directly.

``{"type": "string", "format": "uri", "maxLength": 2083}`` (pydantic's ``HttpUrl``) is the
intersection of the format's language ``P`` with "at most 2,083 characters". As a product of two
automata (:func:`logitgate.engine.automata.standalone_dfa` of an ``And``) it is built pair by pair
and then minimized, and it forgets that its states come in layers: ``maxLength: 1024`` with
``format: email`` took ~0.4 s to compile, and every character read was a state of its own to
compute a mask for. Here the automaton is laid out in layers as :mod:`.lengths` lays out a string
only its length constrains:

- the *template* is ``P`` read one character at a time: pairs of a state of ``P`` and a state of
  the character's automaton (which says where a character -- an escape, a surrogate pair, a UTF-8
  sequence -- ends), those of ``P``'s states that cannot reach its end dropped;
- layer ``k`` (``k`` characters read) is a copy of the template, a byte that ends a character
  moving to the next layer; layers ``lo..hi`` may end the string (the closing quote);
- states no end is reachable from -- a state of ``P`` that needs more characters than are left,
  or cannot end before ``lo`` -- are cut, so the automaton stays trimmed.

A pattern whose strings are at most ``M`` characters long makes ``maxLength >= M`` vacuous (a
``date-time`` with ``maxLength: 40000`` is the format alone), and one whose strings are at least
``lo`` long a ``minLength <= lo`` vacuous.

Past ``max_states`` in layers (``(hi + 1) * m``), the product is built instead, as before, quotes
added around it directly: it holds only the pattern states each layer reaches, which may be far
fewer.

Layers far from both bounds behave alike on every token, and the engine computes their masks once
(:meth:`logitgate.engine.rtn.RTN.mask_representative`). The layout says which: layers in one *run*
have the same finality and the same live states; a layer whose next ``horizon`` layers lie in its
run behaves as the run's first does on tokens of up to ``horizon`` bytes.

    >>> from logitgate.grammar.ir import byteset, repeat
    >>> from logitgate.grammar.json_schema.pattern_lengths import counted_pattern
    >>> counted_pattern(1, 8, repeat(byteset((0x61, 0x7A)), 1, None)).kind
    'json_string_length_pattern'
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from ...errors import LimitExceededError
from ..ir import And, Expr, Special, SpecialKind, and_, is_ref_free, lit, register_special, repeat, seq
from . import lengths
from .lengths import char_dfa, own_classes
from .strings import any_char

__all__ = ["KIND", "build_counted_pattern", "counted_pattern", "quoted_string"]

KIND = "json_string_length_pattern"


@functools.lru_cache(maxsize=256)
def quoted_string(content: Expr) -> Expr:
    """The JSON string ``"content"``: :func:`counted_pattern` where ``content`` is a counted length
    (:func:`.lengths.counted_content`) and reference-free languages together, else
    :func:`.lengths.string_value`. One node per content (remembered), as there."""
    if type(content) is And:
        items = content.items  # type: ignore[attr-defined]
        counted = [it for it in items if type(it) is Special and it.kind == lengths.KIND and len(it.args) == 2]
        if len(counted) == 1:
            rest = [it for it in items if it is not counted[0]]
            other = rest[0] if len(rest) == 1 else and_(*rest)
            if is_ref_free(other):
                return counted_pattern(*counted[0].args, other)
    return lengths.string_value(content)


def counted_pattern(lo: int, hi: int | None, content: Expr) -> Special:
    """The JSON string (quotes included) of ``lo..hi`` characters (``hi`` None: no upper bound)
    whose content is in the regular, reference-free language ``content``."""
    return Special(KIND, (lo, hi, content))


def _expand(args: tuple) -> Expr:
    lo, hi, content = args
    return seq(lit('"'), and_(repeat(any_char(), lo, hi), content), lit('"'))


def build_counted_pattern(args: tuple, dfa_of: Callable[[Expr], Any], max_states: int) -> tuple:
    """``(byte_class, trans, final, start, layout)`` of :func:`counted_pattern` ``(lo, hi,
    content)`` (see the module docstring); ``layout = (m, count, lo, hi, run_start, run_end)``:
    states ``k * m + q`` (``k < count``) are template state ``q`` in layer ``k``; layer ``k``
    behaves as layer ``run_start[k]`` on strings that stay in layers up to ``run_end[k]``. The
    start state (reading the opening quote) and the end (after the closing one) come after the
    layers. An empty language gives one state, not final, with no way on."""
    lo, hi, content = args
    p = dfa_of(content)
    c = char_dfa(dfa_of)
    c_final = int(np.flatnonzero(c.final)[0])
    byte_class = _joint_classes(p.byte_class, c.byte_class)
    reps = _lowest_bytes(byte_class)
    layer, fin = _template(p.trans, p.final.view(np.uint8), int(p.start), c.trans, int(c.start), c_final,
                           p.byte_class[reps].astype(np.int64), c.byte_class[reps].astype(np.int64))
    byte_class, layer = own_classes(*_merged_columns(byte_class, layer), b'"')
    m = layer.shape[0]
    live, topo, fewest, most = _template_facts(layer, fin)
    if not live[0]:
        return _empty(byte_class)
    if lo <= fewest:  # (every string of the pattern is that long)
        lo = 0
    if most >= 0 and (hi is None or hi >= most):  # (no string of the pattern is longer)
        hi = None
    count = lo + 1 if hi is None else hi + 1  # layers; unbounded: the last one is "lo or more", looping
    if count * m + 2 > max_states:
        # the product may be smaller: it holds only the pattern's states a layer reaches (a long
        # minimum over a pattern of 6,837 states that starts with a fixed text: 690,000 states
        # in layers, the product minimized well under the limit)
        try:
            return _product(args, dfa_of)
        except LimitExceededError:
            raise LimitExceededError(
                f"a string of {args[0]}..{'' if args[1] is None else args[1]} characters that matches a pattern or "
                f"format needs more than {max_states} automaton states: every count of characters read is a copy "
                f"of the pattern's {m} states (a smaller maxLength, or CompileLimits(max_dfa_states=...), lets it "
                "compile)", limit="max_dfa_states") from None
    if _SPARSE * _reached(layer, live, count, hi is not None) < count * m > _SPARSE_MIN_STATES:
        # most layers hold few states the start reaches (the pattern's early states are only read
        # early: a string other than 40 enum values, counted to 51, is ~300 states a layer to
        # write and its prefix tree's few in each to reach): the product, minimized, is smaller
        # (a pattern that alternates two kinds of character reaches half in each layer: kept)
        try:
            return _product(args, dfa_of)
        except LimitExceededError:
            pass
    quote = int(byte_class[0x22])
    table, final, run_start, run_end = _layered(layer, fin, live, topo, count, lo, hi is not None, quote)
    if table.shape[0] == 0:  # (no string of lo..hi characters matches)
        return _empty(byte_class)
    return byte_class, table, final, count * m, (m, count, lo, hi, run_start, run_end)


#: a layered automaton of more states than this, of which its start reaches fewer than one in
#: ``_SPARSE``, is built as the product instead (where the product fits the limits)
_SPARSE_MIN_STATES = 4096
_SPARSE = 8


def _product(args: tuple, dfa_of: Callable[[Expr], Any]) -> tuple:
    """:func:`build_counted_pattern` as the product of the counted length and the pattern
    (minimized up to the engine's limit), quotes added around it."""
    lo, hi, content = args
    return _quoted(dfa_of(and_(lengths.counted_content(lo, hi), content)))


def _quoted(d: Any) -> tuple:
    """``(byte_class, trans, final, start)`` of the string content automaton ``d`` between quotes: a
    start state that reads the opening quote, and an end every final state reaches by the closing
    one (a raw quote never continues a character; its bytes get a class of their own)."""
    if not d.final.any():
        return _empty(d.byte_class)
    byte_class, inner = own_classes(d.byte_class, d.trans, b'"')
    n = inner.shape[0]
    quote = int(byte_class[0x22])
    table = np.full((n + 2, inner.shape[1]), -1, dtype=np.int32)
    table[:n] = inner
    table[np.flatnonzero(d.final), quote] = n + 1
    table[n, quote] = d.start
    final = np.zeros(n + 2, dtype=bool)
    final[n + 1] = True
    return byte_class, table, final, n


def _empty(byte_class: np.ndarray) -> tuple:
    return byte_class, np.full((1, int(byte_class.max()) + 1), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0


def _joint_classes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Byte classes that refine both ``a`` and ``b``, numbered by lowest byte."""
    return _by_lowest_byte(list(zip(a.tolist(), b.tolist())))


def _by_lowest_byte(keys: list) -> np.ndarray:
    """Class ids for the 256 bytes grouped by equal ``keys[byte]``, numbered in the order of their
    lowest byte (a dict over 256 keys: ~30 µs, where ``np.unique`` took ~0.5 ms a call cold)."""
    ids: dict = {}
    return np.array([ids.setdefault(key, len(ids)) for key in keys], dtype=np.int32)


def _merged_columns(byte_class: np.ndarray, layer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(byte_class, layer)`` with the classes every template state reads alike made one (the
    classes of the pattern and of the character's automaton together are more than the template
    tells apart: an address's 21 and a character's 22 are 37, the template's ~25)."""
    columns = [layer[:, x].tobytes() for x in range(layer.shape[1])]
    merged = _by_lowest_byte([columns[c] for c in byte_class.tolist()])
    return merged, np.ascontiguousarray(layer[:, byte_class[_lowest_bytes(merged)]])


def _lowest_bytes(byte_class: np.ndarray) -> np.ndarray:
    """The lowest byte of each class (classes numbered by lowest byte)."""
    first: dict = {}
    for b, c in enumerate(byte_class.tolist()):
        first.setdefault(c, b)
    return np.array(list(first.values()), dtype=np.int64)


@njit(nogil=True, cache=True)
def _template(p_trans, p_final, p_start, c_trans, c_start, c_final, p_cls, c_cls):  # pragma: no cover
    """The template: ``(layer, fin)``. ``layer[s, x]``: ``t < m`` the state ``t`` of the same layer,
    ``m + t`` state ``t`` of the next layer (the byte ends a character), -1 none; ``fin[s]``: a
    character boundary where ``P`` may end. State 0 is the start; states are pairs of ``P``'s and
    the character automaton's, numbered as found."""
    nc = c_trans.shape[0]
    k = p_cls.shape[0]
    index = np.full(p_trans.shape[0] * nc, -1, dtype=np.int64)
    # (pairs found are about as many as P's states, a character's states mostly in step with P's:
    # room for twice that, grown as needed -- the product's bound is ~20 times more to write)
    cap = 2 * p_trans.shape[0] + 16
    pairs = np.empty(cap, dtype=np.int64)
    rows = np.full((cap, k), -1, dtype=np.int64)  # (a next layer's state t as -2 - t until m is known)
    index[p_start * nc + c_start] = 0
    pairs[0] = p_start * nc + c_start
    m = 1
    i = 0
    while i < m:
        ps, cs = divmod(pairs[i], nc)
        for x in range(k):
            pt = p_trans[ps, p_cls[x]]
            ct = c_trans[cs, c_cls[x]]
            if pt < 0 or ct < 0:
                continue
            ends = ct == c_final
            code = pt * nc + (c_start if ends else ct)
            j = index[code]
            if j < 0:
                if m == cap:
                    cap *= 2
                    grown = np.full((cap, k), -1, dtype=np.int64)
                    grown[:m] = rows[:m]
                    rows = grown
                    more = np.empty(cap, dtype=np.int64)
                    more[:m] = pairs[:m]
                    pairs = more
                j = index[code] = m
                pairs[m] = code
                m += 1
            rows[i, x] = -2 - j if ends else j
        i += 1
    layer = np.empty((m, k), dtype=np.int32)
    fin = np.zeros(m, dtype=np.bool_)
    for s in range(m):
        ps, cs = divmod(pairs[s], nc)
        fin[s] = cs == c_start and p_final[ps] != 0
        for x in range(k):
            t = rows[s, x]
            layer[s, x] = m + (-2 - t) if t <= -2 else t
    return layer, fin


@njit(nogil=True, cache=True)
def _template_facts(layer, fin):  # pragma: no cover
    """``(live, topo, fewest, most)`` of a template: the states that reach a boundary where ``P``
    may end (layers unbounded); the states in an order where a byte within a character always
    moves later (the layer's edges are acyclic: a character is finite); the fewest characters of a
    string of the pattern; the most (-1: unbounded, a cycle through the next layer's edges)."""
    m, k = layer.shape
    # live: backwards from the ends, every edge (the next layer's state t is state t again)
    head = np.full(m, -1, dtype=np.int64)
    nxt = np.empty(m * k, dtype=np.int64)
    src = np.empty(m * k, dtype=np.int64)
    e = 0
    for s in range(m):
        for x in range(k):
            t = layer[s, x]
            if t >= 0:
                t = _within(t, m, True)
                src[e] = s
                nxt[e] = head[t]
                head[t] = e
                e += 1
    live = fin.copy()
    stack = np.empty(m, dtype=np.int64)
    top = 0
    for s in range(m):
        if live[s]:
            stack[top] = s
            top += 1
    while top:
        top -= 1
        j = head[stack[top]]
        while j >= 0:
            s = src[j]
            if not live[s]:
                live[s] = True
                stack[top] = s
                top += 1
            j = nxt[j]
    # the order within a layer (Kahn's, its edges only), then the fewest and most characters
    # (Kahn's over every edge among live states: a state left over is on a cycle)
    topo = _kahn(layer, live, False)
    order = _kahn(layer, live, True)
    fewest = np.full(m, 1 << 40, dtype=np.int64)
    most = np.full(m, -1, dtype=np.int64)
    fewest[0] = 0
    most[0] = 0  # (-1: not reached)
    cyclic = order.shape[0] < live.sum()
    # fewest: a shortest path where ending a character costs 1 (passes in the within-layer order,
    # at most one a character); most: a longest path, one pass in the order of every edge
    for _ in range(m + 1):
        if not _relax(layer, live, topo, fewest, False):
            break
    lo = 1 << 40
    for s in range(m):
        if fin[s] and fewest[s] < lo:
            lo = fewest[s]
    if cyclic:
        return live, topo, lo, -1
    _relax(layer, live, order, most, True)
    hi = -1
    for s in range(m):
        if fin[s] and most[s] > hi:
            hi = most[s]
    return live, topo, lo, hi


@njit(nogil=True, cache=True)
def _reached(layer, live, count, bounded):  # pragma: no cover
    """How many of the ``count`` layers' live template states the start reaches (ends within the
    bounds not asked: an estimate from above), found without writing the layers' table."""
    m, k = layer.shape
    seen = np.zeros(count * m, dtype=np.bool_)
    stack = np.empty(count * m, dtype=np.int64)
    seen[0] = True
    stack[0] = 0
    top, n = 1, 1
    while top:
        top -= 1
        g = stack[top]
        kk, s = divmod(g, m)
        for x in range(k):
            t = layer[s, x]
            if t < 0:
                continue
            if t >= m:
                t -= m
                if kk + 1 < count:
                    kk2 = kk + 1
                elif bounded:
                    continue
                else:
                    kk2 = kk  # (the last layer, unbounded: a character more stays in it)
            else:
                kk2 = kk
            if not live[t]:
                continue
            h = kk2 * m + t
            if not seen[h]:
                seen[h] = True
                stack[top] = h
                top += 1
                n += 1
    return n


@njit(nogil=True, cache=True)
def _relax(layer, live, order, chars, longest):  # pragma: no cover
    """One pass over the states in ``order``, each of its edges to a live state relaxing ``chars``
    (the characters read to get there, a character's end counting 1): the fewest, or the most when
    ``longest`` (a state not reached holds -1). Whether anything changed."""
    m, k = layer.shape
    changed = False
    for i in range(order.shape[0]):
        s = order[i]
        if chars[s] < 0 or (not longest and chars[s] >= 1 << 40):
            continue
        for x in range(k):
            t = layer[s, x]
            if t < 0:
                continue
            w = 0
            if t >= m:
                t -= m
                w = 1
            if live[t] and (chars[s] + w > chars[t] if longest else chars[s] + w < chars[t]):
                chars[t] = chars[s] + w
                changed = True
    return changed


@njit(nogil=True, cache=True, inline="always")
def _within(t, m, across):  # pragma: no cover
    """The template state a layer's edge target ``t`` names (``m + q``: state ``q`` of the next
    layer, taken as ``q`` when ``across``, else -1); -1 for none."""
    if t >= m:
        return t - m if across else -1
    return t


@njit(nogil=True, cache=True)
def _kahn(layer, live, across):  # pragma: no cover
    """Live states in an order where each edge moves later (``across``: the next layer's edges
    too, as edges into the same template); states on a cycle are left out."""
    m, k = layer.shape
    indegree = np.zeros(m, dtype=np.int64)
    for s in range(m):
        if live[s]:
            for x in range(k):
                t = _within(layer[s, x], m, across)
                if t >= 0 and live[t]:
                    indegree[t] += 1
    out = np.empty(m, dtype=np.int64)
    n = 0
    for s in range(m):
        if live[s] and indegree[s] == 0:
            out[n] = s
            n += 1
    i = 0
    while i < n:
        s = out[i]
        i += 1
        for x in range(k):
            t = _within(layer[s, x], m, across)
            if t >= 0 and live[t]:
                indegree[t] -= 1
                if indegree[t] == 0:
                    out[n] = t
                    n += 1
    return out[:n]


@njit(nogil=True, cache=True)
def _layered(layer, fin, tlive, topo, count, lo, bounded, quote):  # pragma: no cover
    """The table and finality of :func:`build_counted_pattern` (``count`` layers, then the start
    and the end), and each layer's run (first and last layer); an empty table where the start is
    dead. Bounded: layer ``count - 1`` is ``hi`` read, no character more; unbounded: it is ``lo``
    or more read, a character more staying in it."""
    m, k = layer.shape
    n = count * m + 2
    start, end = count * m, count * m + 1
    live = np.zeros(count * m, dtype=np.bool_)
    for kk in range(count - 1, -1, -1):
        base = kk * m
        if not bounded and kk == count - 1:
            for s in range(m):
                live[base + s] = tlive[s]
            continue
        ends_here = kk >= lo
        for i in range(topo.shape[0] - 1, -1, -1):  # (within the layer: targets first)
            s = topo[i]
            v = ends_here and fin[s]
            if not v:
                for x in range(k):
                    t = layer[s, x]
                    if t < 0:
                        continue
                    if t < m:
                        if live[base + t]:
                            v = True
                            break
                    elif kk + 1 < count and live[base + m + t - m]:
                        v = True
                        break
            live[base + s] = v
    if not live[0]:
        return (np.empty((0, k), dtype=np.int32), np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int32),
                np.zeros(0, dtype=np.int32))
    table = np.full((n, k), -1, dtype=np.int32)
    final = np.zeros(n, dtype=np.bool_)
    for kk in range(count):
        base = kk * m
        loops = not bounded and kk == count - 1
        for s in range(m):
            if not live[base + s]:
                continue
            for x in range(k):
                t = layer[s, x]
                if t < 0:
                    continue
                if t < m:
                    g = base + t
                elif loops:
                    g = base + t - m
                elif kk + 1 < count:
                    g = base + t
                else:
                    continue
                if live[g]:
                    table[base + s, x] = g
            if kk >= lo and fin[s]:  # (a boundary: a raw quote never continues a character)
                table[base + s, quote] = end
    table[start, quote] = 0
    final[end] = True
    # runs: layers alike in finality and live states (a token of h bytes read from layer k reads at
    # most h characters: it stays in layers k..k + h, and leaves none of them by a character's end
    # but the last -- into the layer after, by its h-th character)
    run_start = np.zeros(count, dtype=np.int32)
    run_end = np.zeros(count, dtype=np.int32)
    first = 0
    for kk in range(1, count + 1):
        same = kk < count and (kk >= lo) == (kk - 1 >= lo) and not (not bounded and kk == count - 1)
        if same:
            for s in range(m):
                if live[kk * m + s] != live[(kk - 1) * m + s]:
                    same = False
                    break
        if not same:
            for j in range(first, kk):
                run_start[j] = first
                run_end[j] = kk - 1
            first = kk
    return table, final, run_start, run_end


register_special(KIND, SpecialKind(expand=_expand, nullable=lambda args: False, lexeme_like=True,
                                   build=build_counted_pattern))
