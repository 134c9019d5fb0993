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


@njit(nogil=True, cache=True, inline="always")
def same_run(a, b):
    """Whether the 1-D arrays ``a`` and ``b`` (of one length) hold the same values."""
    for i in range(a.shape[0]):  # noqa: SIM110 (numba compiles no generator expressions)
        if a[i] != b[i]:
            return False
    return True


@njit(nogil=True, cache=True)
def _map_rows(trans, rows, to):
    """Rows ``rows`` of ``trans`` with every target ``t`` renamed ``to[t]`` (negative: no edge)."""
    m, k = rows.shape[0], trans.shape[1]
    out = np.full((m, k), -1, dtype=np.int32)
    for i in range(m):
        s = rows[i]
        for c in range(k):
            t = trans[s, c]
            if t >= 0 and to[t] >= 0:
                out[i, c] = to[t]
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


@njit(nogil=True, cache=True)
def renumber(trans, final, c_src, c_rule, c_dst, keep, start):
    """Trim (states live and reachable from ``start``; calls with ``keep[rule]`` only) and number
    breadth-first. Calls come and go sorted by source, then rule. No states when ``start`` is dead."""
    n = trans.shape[0]
    ptr = np.zeros(n + 1, dtype=np.int64)
    kept = np.zeros(c_src.shape[0], dtype=np.uint8)
    for e in range(c_src.shape[0]):
        if keep[c_rule[e]]:
            kept[e] = 1
            ptr[c_src[e] + 1] += 1
    for s in range(n):
        ptr[s + 1] += ptr[s]
    dst = np.empty(ptr[n], dtype=np.int32)
    eid = np.empty(ptr[n], dtype=np.int64)
    j = 0
    for e in range(c_src.shape[0]):
        if kept[e]:
            dst[j] = c_dst[e]
            eid[j] = e
            j += 1
    order, index = trim_order(trans, final, ptr, dst, start)
    m = order.shape[0]
    t2 = _map_rows(trans, order, index)
    f2 = final[order]
    nc = 0
    for i in range(m):
        s = order[i]
        for j in range(ptr[s], ptr[s + 1]):
            if index[dst[j]] >= 0:
                nc += 1
    cs = np.empty(nc, dtype=np.int32)
    cr = np.empty(nc, dtype=np.int32)
    cd = np.empty(nc, dtype=np.int32)
    nc = 0
    for i in range(m):
        s = order[i]
        for j in range(ptr[s], ptr[s + 1]):
            t = index[dst[j]]
            if t >= 0:
                cs[nc] = i
                cr[nc] = c_rule[eid[j]]
                cd[nc] = t
                nc += 1
    return t2, f2, cs, cr, cd


@njit(nogil=True, cache=True)
def canonical_dfa(trans, final, c_src, c_rule, c_dst, keep, start):
    """The minimal DFA in canonical form: trimmed (see :func:`renumber`), equivalent states merged
    (Hopcroft, calls as extra symbols), numbered breadth-first, and equal classes merged.

    Returns ``(trans, final, call_src, call_rule, call_dst, group)`` where ``group[c]`` is the
    merged class of old class ``c`` (numbered in order of first occurrence); no states when the
    language is empty.
    """
    t1, f1, cs, cr, cd = renumber(trans, final, c_src, c_rule, c_dst, keep, start)
    n, k = t1.shape
    if n > 0:
        # callee columns
        ncallee = 0
        col = np.full(keep.shape[0], -1, dtype=np.int64)
        for e in range(cr.shape[0]):
            if col[cr[e]] < 0:
                col[cr[e]] = 0
        for r in range(keep.shape[0]):
            if col[r] == 0:
                col[r] = ncallee
                ncallee += 1
        delta = np.full((n, k + ncallee), -1, dtype=np.int32)
        delta[:, :k] = t1
        for e in range(cs.shape[0]):
            delta[cs[e], k + col[cr[e]]] = cd[e]
        blk = hopcroft_blocks(delta, f1)
        # dense block ids in order of first state; rep[b] = first state of block b
        dense = np.full(n + 1, -1, dtype=np.int64)
        block = np.empty(n, dtype=np.int64)
        rep = np.empty(n, dtype=np.int64)
        nb = 0
        for s in range(n):
            b = blk[s]
            if dense[b] < 0:
                dense[b] = nb
                rep[nb] = s
                nb += 1
            block[s] = dense[b]
        if nb < n:
            qt = _map_rows(t1, rep[:nb], block)
            qf = f1[rep[:nb]]
            qn = 0
            cptr = np.zeros(n + 1, dtype=np.int64)  # calls are sorted by source
            for e in range(cs.shape[0]):
                cptr[cs[e] + 1] += 1
            for s in range(n):
                cptr[s + 1] += cptr[s]
            for b in range(nb):
                qn += cptr[rep[b] + 1] - cptr[rep[b]]
            qs = np.empty(qn, dtype=np.int32)
            qr = np.empty(qn, dtype=np.int32)
            qd = np.empty(qn, dtype=np.int32)
            # the representatives' calls, by block, then rule
            qn = 0
            for b in range(nb):
                for e in range(cptr[rep[b]], cptr[rep[b] + 1]):
                    qs[qn] = b
                    qr[qn] = cr[e]
                    qd[qn] = block[cd[e]]
                    qn += 1
            t1, f1, cs, cr, cd = renumber(qt, qf, qs, qr, qd, keep, block[0])
            n = t1.shape[0]
    # merge classes whose columns are equal (hashes first, then a comparison)
    h = np.zeros(k, dtype=np.uint64)
    for s in range(n):
        for c in range(k):
            h[c] = (h[c] ^ np.uint64(t1[s, c] + 2)) * np.uint64(1099511628211)
    group = np.full(k, -1, dtype=np.int64)
    first_of = np.empty(k, dtype=np.int64)
    ng = 0
    for c in range(k):
        for g in range(ng):
            f = first_of[g]
            if h[f] == h[c] and same_run(t1[:, c], t1[:, f]):
                group[c] = g
                break
        if group[c] < 0:
            group[c] = ng
            first_of[ng] = c
            ng += 1
    if ng < k:
        t3 = np.empty((n, ng), dtype=np.int32)
        for g in range(ng):
            t3[:, g] = t1[:, first_of[g]]
        t1 = t3
    return t1, f1, cs, cr, cd, group
