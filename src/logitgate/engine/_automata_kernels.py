"""numba kernels behind :mod:`.automata`: trimming and products of DFAs given as int32 tables.

A table ``trans[state, cls]`` holds the target state or -1. Call edges (trimming only) come as
CSR arrays in the order the breadth-first numbering must visit them.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def grow(a, size, fill):
    """``a`` copied into a new array of ``size`` entries (along axis 0), the new tail set to ``fill``."""
    out = np.full((size,) + a.shape[1:], fill, dtype=a.dtype)  # noqa: RUF005 (numba: no tuple unpacking)
    out[: a.shape[0]] = a
    return out


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
                    pa = grow(pa, 2 * m, 0)
                    pb = grow(pb, 2 * m, 0)
                    trans = grow(trans, 2 * m, -1)
                pa[m] = tp
                pb[m] = tq
                m += 1
            trans[i, c] = j
        i += 1
    final = np.zeros(m, dtype=np.uint8)
    for j in range(m):
        final[j] = 1 if fa[pa[j]] and fb[pb[j]] else 0
    return trans[:m], final


@njit(nogil=True, cache=True)
def _push_work(wb, wa, nw, b, a):
    if nw >= wb.shape[0]:
        wb = grow(wb, 2 * nw, 0)
        wa = grow(wa, 2 * nw, 0)
    wb[nw] = b
    wa[nw] = a
    return wb, wa, nw + 1


@njit(nogil=True, cache=True)
def hopcroft_blocks(delta, final):
    """Coarsest partition of a DFA's states into equivalence classes (Hopcroft's algorithm).

    ``delta[state, symbol]`` is the target or -1 (a rejecting sink, added internally); every
    state is assumed to be live. Returns a block id per state; equal ids = equivalent states.
    """
    n, k = delta.shape
    N = n + 1  # with the sink
    sink = n
    # inverse transitions, CSR over (symbol, target)
    ptr = np.zeros(k * N + 1, dtype=np.int64)
    for s in range(N):
        for a in range(k):
            t = sink if s == sink or delta[s, a] < 0 else delta[s, a]
            ptr[a * N + t + 1] += 1
    for i in range(k * N):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    inv = np.empty(ptr[k * N], dtype=np.int32)
    for s in range(N):
        for a in range(k):
            t = sink if s == sink or delta[s, a] < 0 else delta[s, a]
            inv[fill[a * N + t]] = s
            fill[a * N + t] += 1
    # partition: elems grouped by block, block b = elems[bstart[b]:bend[b]]
    elems = np.empty(N, dtype=np.int32)
    loc = np.empty(N, dtype=np.int64)
    blk = np.zeros(N, dtype=np.int32)
    bstart = np.zeros(N, dtype=np.int64)
    bend = np.zeros(N, dtype=np.int64)
    mcount = np.zeros(N, dtype=np.int64)
    nf = 0
    for s in range(n):
        if final[s]:
            nf += 1
    i0, i1 = 0, nf
    for s in range(N):
        if s < n and final[s]:
            elems[i0] = s
            loc[s] = i0
            i0 += 1
        else:
            elems[i1] = s
            loc[s] = i1
            blk[s] = 1
            i1 += 1
    nblocks = 2
    bstart[0], bend[0] = 0, nf
    bstart[1], bend[1] = nf, N
    if nf == 0:  # only the non-final block (with the sink)
        blk[:] = 0
        return blk[:n]
    in_w = np.zeros(N * k, dtype=np.uint8)
    wb = np.empty(max(16, 2 * k), dtype=np.int32)
    wa = np.empty(max(16, 2 * k), dtype=np.int32)
    nw = 0
    first = 0 if nf <= N - nf else 1
    for a in range(k):
        wb, wa, nw = _push_work(wb, wa, nw, first, a)
        in_w[first * k + a] = 1
    marked = np.zeros(N, dtype=np.uint8)
    xs = np.empty(N, dtype=np.int32)
    touched = np.empty(N, dtype=np.int32)
    while nw > 0:
        nw -= 1
        b, a = wb[nw], wa[nw]
        in_w[b * k + a] = 0
        nx = 0
        for idx in range(bstart[b], bend[b]):
            t = elems[idx]
            for j in range(ptr[a * N + t], ptr[a * N + t + 1]):
                p = inv[j]
                if not marked[p]:
                    marked[p] = 1
                    xs[nx] = p
                    nx += 1
        nt = 0
        for x in range(nx):
            p = xs[x]
            marked[p] = 0
            y = blk[p]
            pos = bstart[y] + mcount[y]
            q = elems[pos]
            lp = loc[p]
            elems[pos] = p
            loc[p] = pos
            elems[lp] = q
            loc[q] = lp
            if mcount[y] == 0:
                touched[nt] = y
                nt += 1
            mcount[y] += 1
        for x in range(nt):
            y = touched[x]
            m = mcount[y]
            mcount[y] = 0
            size = bend[y] - bstart[y]
            if m == size:
                continue
            z = nblocks
            nblocks += 1
            if m <= size - m:  # the marked part becomes the new block
                bstart[z], bend[z] = bstart[y], bstart[y] + m
                bstart[y] += m
            else:
                bstart[z], bend[z] = bstart[y] + m, bend[y]
                bend[y] = bstart[y] + m
            for idx in range(bstart[z], bend[z]):
                blk[elems[idx]] = z
            small = z if bend[z] - bstart[z] <= bend[y] - bstart[y] else y
            for a2 in range(k):
                if in_w[y * k + a2]:
                    wb, wa, nw = _push_work(wb, wa, nw, z, a2)
                    in_w[z * k + a2] = 1
                else:
                    wb, wa, nw = _push_work(wb, wa, nw, small, a2)
                    in_w[small * k + a2] = 1
    return blk[:n]
