"""JSON string contents other than a few given strings, in every spelling: the keys of an
object's extra members, which may not be any declared property name.

As plain IR this language is ``any_string_content() & ~(spellings of name 1 | ...)``: large
(every character of every name in raw and escaped forms), and slow to build and determinize.
:func:`string_content_except` returns it as one :class:`~logitgate.grammar.ir.Special` node
instead, whose automaton is built directly by :func:`build_except_automaton`: the minimal
automaton of any string content, plus, for every node of the names' character trie, a small trie
of the spellings of the characters that continue a name there. Reading a spelling of such a
character moves down the name trie; anything else falls into the plain string automaton (the
decoded prefix is then no name's prefix). The states at the end of a name are not accepting.

    >>> from logitgate.grammar.ir import Grammar
    >>> from logitgate.grammar.reference import accepts
    >>> g = Grammar({"root": string_content_except(["id", "name"])})
    >>> accepts(g, b"nam"), accepts(g, b"name"), accepts(g, b"\\\\u006eame")
    (True, False, False)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np
from numba import njit

from ...errors import LimitExceededError
from ..ir import Expr, Special, SpecialKind, alt, and_, not_, register_special
from .strings import _SHORT_ESCAPES, any_string_content, string_literal

__all__ = ["build_except_automaton", "string_content_except"]

KIND = "json_string_except"


def string_content_except(values: Iterable[str]) -> Expr:
    """JSON string content (all spellings) whose decoded value is none of ``values``."""
    names = tuple(sorted(set(values)))
    if not names:
        return any_string_content()
    return Special(KIND, names)


def _expand(names: tuple) -> Expr:
    return and_(any_string_content(), not_(alt(*(string_literal(k, all_spellings=True) for k in names))))


# ---------------------------------------------------------------------------- spellings


@lru_cache(maxsize=8192)
def _spellings(cp: int) -> tuple[bytes, ...]:
    """Every JSON spelling of the character ``cp`` (none for a lone surrogate), as in
    :func:`~logitgate.grammar.json_schema.strings.encode_chars`."""
    if 0xD800 <= cp <= 0xDFFF:
        return ()
    out: list[bytes] = []
    if cp >= 0x20 and cp not in (0x22, 0x5C):
        out.append(chr(cp).encode("utf-8"))
    if cp in _SHORT_ESCAPES:
        out.append(b"\\" + bytes([_SHORT_ESCAPES[cp]]))
    if cp <= 0xFFFF:
        units = [cp]
    else:
        v = cp - 0x10000
        units = [0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)]
    hexes = [""]
    for u in units:
        digits = f"{u:04x}"
        for d in "\\u" + digits:
            hexes = [h + x for h in hexes for x in dict.fromkeys((d, d.upper()) if d in "abcdef" else (d,))]
    out.extend(h.encode("ascii") for h in hexes)
    return tuple(out)


# ---------------------------------------------------------------------------- the automaton


@njit(nogil=True, cache=True)
def _build(keys, key_ptr, sp_ptr, sp_data, ch_sp_ptr, cls_of_byte, s_row, s_final, s0, cap):
    """The automaton's table (see the module docstring); ``n = -1`` when ``cap`` states do not do.

    ``keys``: per name (sorted, distinct) the indices of its characters; a character ``c`` has
    the spellings ``ch_sp_ptr[c]..ch_sp_ptr[c + 1]``, spelling ``j`` the bytes
    ``sp_data[sp_ptr[j]:sp_ptr[j + 1]]``. ``s_row``/``s_final``: the string automaton in this
    automaton's classes, ``s0`` its start (the only accepting state: a character boundary).
    """
    n_s, k = s_row.shape
    trans = np.empty((cap, k), dtype=np.int32)
    final = np.zeros(cap, dtype=np.uint8)
    sigma = np.empty(cap, dtype=np.int64)  # the string automaton's state of each state
    for s in range(n_s):
        trans[s] = s_row[s]
        final[s] = s_final[s]
        sigma[s] = s
    longest = 0
    for i in range(key_ptr.shape[0] - 1):
        longest = max(longest, key_ptr[i + 1] - key_ptr[i])
    path = np.empty(longest + 1, dtype=np.int64)  # name-trie states along the previous name
    n = n_s
    if n >= cap:
        return trans, final, -1
    trans[n] = s_row[s0]
    final[n] = s_final[s0]
    sigma[n] = s0
    path[0] = n
    n += 1
    for i in range(key_ptr.shape[0] - 1):
        a, b = key_ptr[i], key_ptr[i + 1]
        lcp = 0
        if i > 0:
            pa, pb = key_ptr[i - 1], key_ptr[i]
            while lcp < b - a and lcp < pb - pa and keys[a + lcp] == keys[pa + lcp]:
                lcp += 1
        for j in range(lcp, b - a):
            if n >= cap:
                return trans, final, -1
            child = n
            trans[child] = s_row[s0]
            final[child] = s_final[s0]
            sigma[child] = s0
            n += 1
            c = keys[a + j]
            for sp in range(ch_sp_ptr[c], ch_sp_ptr[c + 1]):
                q = path[j]
                for x in range(sp_ptr[sp], sp_ptr[sp + 1] - 1):
                    cl = cls_of_byte[sp_data[x]]
                    t = trans[q, cl]
                    if t < n_s:  # no state of this spelling trie yet: a new one
                        if n >= cap:
                            return trans, final, -1
                        st = s_row[sigma[q], cl]
                        trans[n] = s_row[st]
                        final[n] = s_final[st]
                        sigma[n] = st
                        trans[q, cl] = n
                        t = n
                        n += 1
                    q = t
                trans[q, cls_of_byte[sp_data[sp_ptr[sp + 1] - 1]]] = child
            path[j + 1] = child
        final[path[b - a]] = 0  # a whole name: excluded
    return trans, final, n


@njit(nogil=True, cache=True)
def _build_names(keys, key_ptr, ch_sp_ptr, sp_ptr, sp_data, s_class, s_trans, s_final, s0, max_states):
    """:func:`_build` with its preparation: ``keys`` are the names' characters as indices into a
    table of spellings (character ``c``: spellings ``ch_sp_ptr[c]..ch_sp_ptr[c + 1]``). Makes the
    classes (the string automaton's, with every byte of a used character's spellings on its own),
    the string automaton in them and the state bound. Returns ``(byte_class, trans, final, n)``."""
    n_chars = ch_sp_ptr.shape[0] - 1
    used = np.zeros(n_chars, dtype=np.uint8)
    for x in range(keys.shape[0]):
        used[keys[x]] = 1
    signature = np.empty(256, dtype=np.int64)
    for b in range(256):
        signature[b] = s_class[b]
    per_char = np.zeros(n_chars, dtype=np.int64)  # inner bytes of a character's spellings
    for c in range(n_chars):
        if used[c]:
            for sp in range(ch_sp_ptr[c], ch_sp_ptr[c + 1]):
                per_char[c] += sp_ptr[sp + 1] - sp_ptr[sp] - 1
                for x in range(sp_ptr[sp], sp_ptr[sp + 1]):
                    signature[sp_data[x]] = 1000 + sp_data[x]
    rank = np.full(1256, -1, dtype=np.int64)
    byte_class = np.empty(256, dtype=np.int64)
    reps = np.empty(256, dtype=np.int64)
    k = 0
    for b in range(256):
        if rank[signature[b]] < 0:
            rank[signature[b]] = k
            reps[k] = b
            k += 1
        byte_class[b] = rank[signature[b]]
    n_s = s_trans.shape[0]
    s_row = np.empty((n_s, k), dtype=np.int32)
    for q in range(n_s):
        for c in range(k):
            s_row[q, c] = s_trans[q, s_class[reps[c]]]
    # states: the string automaton, one per name-trie node, one per inner byte of each spelling
    bound = n_s + 1
    for x in range(keys.shape[0]):
        bound += per_char[keys[x]] + 1
    trans, final, n = _build(keys, key_ptr, sp_ptr, sp_data, ch_sp_ptr, byte_class, s_row, s_final, s0,
                             min(bound, max_states + 1))
    return byte_class, trans, final, n


_STRINGS: list[tuple] = []  # the string automaton's arrays, once made
_ASCII_SPELLINGS: list[tuple] = []  # (ch_sp_ptr, sp_ptr, sp_data) of every ASCII character, once made


def _spelling_table(per_char: list[tuple[bytes, ...]]) -> tuple:
    """``(ch_sp_ptr, sp_ptr, sp_data)`` of :func:`_build_names` for the spellings of each character."""
    ch_sp_ptr = np.zeros(len(per_char) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in per_char], out=ch_sp_ptr[1:])
    flat = [sp for x in per_char for sp in x]
    sp_ptr = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum([len(sp) for sp in flat], out=sp_ptr[1:])
    return ch_sp_ptr, sp_ptr, np.frombuffer(b"".join(flat), dtype=np.uint8).copy()


def _ascii_spellings() -> tuple:
    if not _ASCII_SPELLINGS:
        _ASCII_SPELLINGS.append(_spelling_table([_spellings(cp) for cp in range(128)]))
    return _ASCII_SPELLINGS[0]


def _string_automaton(dfa_of: Callable[[Expr], Any]) -> tuple:
    """The string automaton's arrays (its byte classes, table, finality, start), made once."""
    if not _STRINGS:
        s = dfa_of(any_string_content())
        if np.flatnonzero(s.final).tolist() != [s.start]:  # pragma: no cover - by construction
            raise AssertionError("the string automaton must accept at character boundaries only")
        _STRINGS.append((np.asarray(s.byte_class, dtype=np.int64), np.ascontiguousarray(s.trans, dtype=np.int32),
                         s.final.astype(np.uint8), int(s.start)))
    return _STRINGS[0]


def build_except_automaton(names: tuple, dfa_of: Callable[[Expr], Any], max_states: int) -> tuple:
    """``(byte_class, trans, final, start)`` of :func:`string_content_except` ``(names)`` (see the
    module docstring), trimmed by construction; ``dfa_of`` gives the engine's minimal automaton of
    a plain expression (here: any string content)."""
    s_class, s_trans, s_final, s0 = _string_automaton(dfa_of)
    joined = "".join(names)
    key_ptr = np.array([0, *itertools.accumulate(map(len, names))], dtype=np.int64)
    if joined.isascii():  # (nearly always: the spellings of every ASCII character are made once)
        keys = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.int64)
        table = _ascii_spellings()
    else:
        cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
        if ((cps >= 0xD800) & (cps <= 0xDFFF)).any():  # a lone surrogate: no string content spells that name
            return build_except_automaton(tuple(n for n in names if not any(0xD800 <= ord(c) <= 0xDFFF for c in n)),
                                          dfa_of, max_states)
        chars, keys = np.unique(cps, return_inverse=True)
        table = _spelling_table([_spellings(cp) for cp in chars.tolist()])
    keys = np.ascontiguousarray(keys.ravel(), dtype=np.int64)  # (a copy only where not int64 already)
    byte_class, trans, final, n = _build_names(keys, key_ptr, *table, s_class, s_trans, s_final, s0,
                                               max_states)
    if n < 0:
        raise LimitExceededError(f"the automaton of keys other than {len(names)} names exceeds {max_states} states",
                                 limit="max_dfa_states")
    return byte_class, trans[:n], final[:n], s_trans.shape[0]


register_special(KIND, SpecialKind(
    expand=_expand, nullable=lambda names: "" not in names, lexeme_like=True, build=build_except_automaton))
