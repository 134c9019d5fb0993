"""numba kernels of :mod:`.numbers`: the product of the atoms' numeral automata, and its minimal DFA.

Every automaton here is a table over the numeral's symbols (``trans[state, symbol]``, -1 for no
move) whose start state is 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _row_hash(row, mask):  # pragma: no cover - numba
    h = np.uint64(14695981039346656037)
    for x in row:
        h = (h ^ np.uint64(x + 1)) * np.uint64(1099511628211)
    return np.int64(h >> np.uint64(17)) & mask


@njit(nogil=True, cache=True)
def _find(table, rows, row, mask):  # pragma: no cover - numba
    """Slot of ``row`` in the open-addressing ``table`` (ids of ``rows``), or of the free slot where it goes."""
    slot = _row_hash(row, mask)
    while table[slot] >= 0:
        other = rows[table[slot]]
        same = True
        for j in range(row.shape[0]):
            if other[j] != row[j]:
                same = False
                break
        if same:
            return slot
        slot = (slot + 1) & mask
    return slot


@njit(nogil=True, cache=True)
def _rehash(rows, n, size):  # pragma: no cover - numba
    table = np.full(size, -1, dtype=np.int64)
    for i in range(n):
        table[_find(table, rows, rows[i], size - 1)] = i
    return table


@njit(nogil=True, cache=True)
def product_rows(tables, offsets, max_states):  # pragma: no cover - numba
    """The reachable product of automata over the same symbols, from the pair of starts.

    ``tables``: every automaton's rows one after another, automaton ``j``'s state ``s`` at row
    ``offsets[j] + s``. A product state moves on a symbol where every automaton does. Returns
    ``(trans, states)``: the product's table and each product state's state in every automaton
    (``states[i, j]``); both empty when the product has more than ``max_states`` states.
    """
    k = offsets.shape[0]
    nsym = tables.shape[1]
    trans = np.full((64, nsym), -1, dtype=np.int32)
    states = np.zeros((64, k), dtype=np.int32)
    table = np.full(128, -1, dtype=np.int64)
    table[_find(table, states, states[0], 127)] = 0
    cur = np.empty(k, dtype=np.int32)
    n = 1
    i = 0
    while i < n:
        for c in range(nsym):
            moves = True
            for j in range(k):
                t = tables[offsets[j] + states[i, j], c]
                if t < 0:
                    moves = False
                    break
                cur[j] = t
            if not moves:
                continue
            mask = table.shape[0] - 1
            slot = _find(table, states, cur, mask)
            if table[slot] < 0:
                if n >= max_states:
                    return np.full((0, nsym), -1, dtype=np.int32), np.zeros((0, k), dtype=np.int32)
                if n == states.shape[0]:
                    grown = np.zeros((2 * n, k), dtype=np.int32)
                    grown[:n] = states
                    states = grown
                    more = np.full((2 * n, nsym), -1, dtype=np.int32)
                    more[:n] = trans
                    trans = more
                states[n] = cur
                table[slot] = n
                n += 1
                if 2 * n > table.shape[0]:  # (load under one half)
                    table = _rehash(states, n, 2 * table.shape[0])
                trans[i, c] = n - 1
            else:
                trans[i, c] = table[slot]
        i += 1
    return trans[:n].copy(), states[:n].copy()


@njit(nogil=True, cache=True)
def minimal_rows(trans, final):  # pragma: no cover - numba
    """The minimal DFA of ``(trans, final)`` (every state reachable from 0), numbered
    breadth-first from its start with symbols in ascending order; no states when 0 is dead.

    Equivalent states are merged by refinement (Moore: a state's block and its successors'
    blocks, until no block splits) over the table completed by a sink (state ``n``, where every
    missing move goes): the states that reach no final state end in the sink's block, and moves
    into it are no moves in the quotient.
    """
    n, nsym = trans.shape
    sink = n
    block = np.zeros(n + 1, dtype=np.int32)
    finals = 0
    for s in range(n):
        if final[s]:
            block[s] = 1
            finals += 1
    nblocks = 2 if finals > 0 else 1  # (the sink is never final)
    sig = np.empty((n + 1, nsym + 1), dtype=np.int32)
    size = 64
    while size < 2 * (n + 1):
        size *= 2
    while True:
        for s in range(n + 1):
            sig[s, 0] = block[s]
            for c in range(nsym):
                t = trans[s, c] if s < n else sink
                sig[s, c + 1] = block[t if t >= 0 else sink]
        table = np.full(size, -1, dtype=np.int64)
        new = np.empty(n + 1, dtype=np.int32)
        m = 0
        for s in range(n + 1):
            slot = _find(table, sig, sig[s], size - 1)
            if table[slot] < 0:
                table[slot] = s
                new[s] = m
                m += 1
            else:
                new[s] = new[table[slot]]
        block = new
        if m == nblocks:
            break
        nblocks = m
    dead = block[sink]
    if block[0] == dead:
        return np.full((0, nsym), -1, dtype=np.int32), np.zeros(0, dtype=np.bool_)
    # the quotient without the sink's block, numbered breadth-first from the start's block
    index = np.full(nblocks, -1, dtype=np.int32)
    rep = np.empty(nblocks, dtype=np.int32)
    index[block[0]] = 0
    rep[0] = 0
    q = 1
    i = 0
    while i < q:
        s = rep[i]
        for c in range(nsym):
            t = trans[s, c]
            if t >= 0 and block[t] != dead and index[block[t]] < 0:
                index[block[t]] = q
                rep[q] = t
                q += 1
        i += 1
    out = np.full((q, nsym), -1, dtype=np.int32)
    out_final = np.zeros(q, dtype=np.bool_)
    for i in range(q):
        s = rep[i]
        out_final[i] = final[s]
        for c in range(nsym):
            t = trans[s, c]
            if t >= 0 and block[t] != dead:
                out[i, c] = index[block[t]]
    return out, out_final
