"""numba kernels behind :mod:`.automata`: trimming and products of DFAs given as int32 tables.

A table ``trans[state, cls]`` holds the target state or -1. Call edges (trimming only) come as
CSR arrays in the order the breadth-first numbering must visit them.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def trim_order(trans, final, call_ptr, call_dst, start):
    """States that can reach a final state and are reachable from ``start`` through such states.

    Returns ``(order, index)``: old ids in breadth-first order from ``start`` (byte edges by
    class, then call edges), and per old id its new id or -1. ``order`` is empty when ``start``
    is dead.
    """
    n, k = trans.shape
    # reverse edges (CSR)
    ptr = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        for c in range(k):
            t = trans[s, c]
            if t >= 0:
                ptr[t + 1] += 1
        for e in range(call_ptr[s], call_ptr[s + 1]):
            ptr[call_dst[e] + 1] += 1
    for s in range(n):
        ptr[s + 1] += ptr[s]
    fill = ptr[:-1].copy()
    rev = np.empty(ptr[n], dtype=np.int32)
    for s in range(n):
        for c in range(k):
            t = trans[s, c]
            if t >= 0:
                rev[fill[t]] = s
                fill[t] += 1
        for e in range(call_ptr[s], call_ptr[s + 1]):
            t = call_dst[e]
            rev[fill[t]] = s
            fill[t] += 1
    live = np.zeros(n, dtype=np.uint8)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for s in range(n):
        if final[s]:
            live[s] = 1
            stack[top] = s
            top += 1
    while top > 0:
        top -= 1
        s = stack[top]
        for j in range(ptr[s], ptr[s + 1]):
            p = rev[j]
            if not live[p]:
                live[p] = 1
                stack[top] = p
                top += 1
    index = np.full(n, -1, dtype=np.int32)
    order = np.empty(n, dtype=np.int32)
    if not live[start]:
        return order[:0], index
    index[start] = 0
    order[0] = start
    m = 1
    i = 0
    while i < m:
        s = order[i]
        i += 1
        for c in range(k):
            t = trans[s, c]
            if t >= 0 and live[t] and index[t] < 0:
                index[t] = m
                order[m] = t
                m += 1
        for e in range(call_ptr[s], call_ptr[s + 1]):
            t = call_dst[e]
            if live[t] and index[t] < 0:
                index[t] = m
                order[m] = t
                m += 1
    return order[:m], index


@njit(nogil=True, cache=True)
def product_table(ta, tb, fa, fb, ca, cb, sa, sb, max_states):
    """Reachable product of two call-free DFAs over the common refinement of their classes.

    ``ca[k]``/``cb[k]``: each DFA's class for common class ``k``. Returns ``(trans, final)``
    or an empty table when the product exceeds ``max_states``.
    """
    nb = tb.shape[0]
    k = ca.shape[0]
    ids = {np.int64(sa) * nb + sb: 0}
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    pa[0] = sa
    pb[0] = sb
    trans = np.full((64, k), -1, dtype=np.int32)
    m = 1
    i = 0
    while i < m:
        p, q = pa[i], pb[i]
        for c in range(k):
            tp = ta[p, ca[c]]
            tq = tb[q, cb[c]]
            if tp < 0 or tq < 0:
                continue
            key = np.int64(tp) * nb + tq
            if key in ids:
                j = ids[key]
            else:
                if m >= max_states:
                    return np.full((0, k), -1, dtype=np.int32), np.zeros(0, dtype=np.uint8)
                j = m
                ids[key] = j
                if m >= pa.shape[0]:
                    grown = np.empty(2 * m, dtype=np.int64)
                    grown[:m] = pa[:m]
                    pa = grown
                    grown = np.empty(2 * m, dtype=np.int64)
                    grown[:m] = pb[:m]
                    pb = grown
                    t2 = np.full((2 * m, k), -1, dtype=np.int32)
                    t2[:m] = trans[:m]
                    trans = t2
                pa[m] = tp
                pb[m] = tq
                m += 1
            trans[i, c] = j
        i += 1
    final = np.zeros(m, dtype=np.uint8)
    for j in range(m):
        final[j] = 1 if fa[pa[j]] and fb[pb[j]] else 0
    return trans[:m], final
