"""numba kernels behind :mod:`.automata`: trimming, products, minimization and merging of DFAs
given as int32 tables.

A table ``trans[state, cls]`` holds the target state or -1. Call edges come as CSR arrays in the
order the breadth-first numbering must visit them. Kernels make room for a step before its loop,
never inside it: numba keeps a loop's arrays in registers only when the loop does not rebind them.
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
def csr(n, src, dst, lab, m):
    """Edges ``0..m`` grouped by source (stable): ``(ptr, dst, lab)``."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(m):
        ptr[src[i] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    d = np.empty(m, dtype=np.int32)
    lb = np.empty(m, dtype=np.int32)
    for i in range(m):
        j = fill[src[i]]
        d[j] = dst[i]
        lb[j] = lab[i]
        fill[src[i]] = j + 1
    return ptr, d, lb


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
def reaches_final(trans, final, call_src, call_rule, call_dst, rule_ok, start):
    """Does some path from ``start`` reach a final state, over byte edges and the call edges
    (sorted by source) whose callee ``r`` has ``rule_ok[r]``?"""
    n, k = trans.shape
    ptr = np.zeros(n + 1, dtype=np.int64)
    for e in range(call_src.shape[0]):
        ptr[call_src[e] + 1] += 1
    for s in range(n):
        ptr[s + 1] += ptr[s]
    seen = np.zeros(n, dtype=np.uint8)
    stack = np.empty(n, dtype=np.int64)
    stack[0] = start
    seen[start] = 1
    top = 1
    while top > 0:
        top -= 1
        s = stack[top]
        if final[s]:
            return True
        for c in range(k):
            t = trans[s, c]
            if t >= 0 and not seen[t]:
                seen[t] = 1
                stack[top] = t
                top += 1
        for e in range(ptr[s], ptr[s + 1]):
            t = call_dst[e]
            if rule_ok[call_rule[e]] and not seen[t]:
                seen[t] = 1
                stack[top] = t
                top += 1
    return False


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


@njit(nogil=True, cache=True, inline="always")
def _home(key, mask):
    """Home slot of a non-negative key in an open-addressing table of ``mask + 1`` slots."""
    return (key * 0x9E3779B1) & mask


@njit(nogil=True, cache=True)
def _rehashed(keys, vals, size):
    """An open-addressing table (keys -1 = free) moved into ``size`` slots."""
    nk = np.full(size, -1, dtype=np.int64)
    nv = np.empty(size, dtype=np.int32)
    mask = size - 1
    for x in range(keys.shape[0]):
        if keys[x] >= 0:
            y = _home(keys[x], mask)
            while nk[y] >= 0:
                y = (y + 1) & mask
            nk[y] = keys[x]
            nv[y] = vals[x]
    return nk, nv


@njit(nogil=True, cache=True)
def product_table(ta, tb, fa, fb, ca, cb, sa, sb, max_states, dense_limit=1 << 20):
    """Reachable product of two call-free DFAs over the common refinement of their classes.

    ``ca[k]``/``cb[k]``: each DFA's class for common class ``k``. Returns ``(trans, final)``
    or an empty table when the product exceeds ``max_states``. State pairs are numbered through
    a dense table up to ``dense_limit`` possible pairs, through a hash table beyond.
    """
    na, nb = ta.shape[0], tb.shape[0]
    k = ca.shape[0]
    dense = na * nb <= dense_limit
    index = np.full(na * nb if dense else 0, -1, dtype=np.int32)
    keys = np.full(0 if dense else 1024, -1, dtype=np.int64)
    vals = np.empty(keys.shape[0], dtype=np.int32)
    start = np.int64(sa) * nb + sb
    if dense:
        index[start] = 0
    else:
        keys[_home(start, keys.shape[0] - 1)] = start
        vals[_home(start, keys.shape[0] - 1)] = 0
    pa = np.empty(64 + k, dtype=np.int64)
    pb = np.empty(64 + k, dtype=np.int64)
    pa[0] = sa
    pb[0] = sb
    trans = np.full((64, k), -1, dtype=np.int32)
    m = 1
    i = 0
    while i < m:
        # room for this row and for the k states it may add (no reallocation inside the row loop)
        if i >= trans.shape[0]:
            trans = grow(trans, 2 * trans.shape[0], -1)
        if m + k > pa.shape[0]:
            pa = grow(pa, 2 * (m + k), 0)
            pb = grow(pb, 2 * (m + k), 0)
        if not dense and 2 * (m + k) > keys.shape[0]:  # load under one half
            size = keys.shape[0]
            while 2 * (m + k) > size:
                size *= 2
            keys, vals = _rehashed(keys, vals, size)
        mask = keys.shape[0] - 1
        p, q = pa[i], pb[i]
        for c in range(k):
            tp = ta[p, ca[c]]
            tq = tb[q, cb[c]]
            if tp < 0 or tq < 0:
                continue
            key = np.int64(tp) * nb + tq
            slot = 0
            if dense:
                j = np.int64(index[key])
            else:
                slot = _home(key, mask)
                while keys[slot] >= 0 and keys[slot] != key:
                    slot = (slot + 1) & mask
                j = np.int64(vals[slot]) if keys[slot] == key else np.int64(-1)
            if j < 0:
                if m >= max_states:
                    return np.full((0, k), -1, dtype=np.int32), np.zeros(0, dtype=np.uint8)
                j = m
                if dense:
                    index[key] = j
                else:
                    keys[slot] = key
                    vals[slot] = j
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
def _split_marked(first, past, owner, elems, marked, touched, nt, nsets):
    """Split every touched set of a refinable partition into its marked and unmarked parts; the
    smaller part becomes a new set (numbered from ``nsets``). Returns the new number of sets."""
    while nt > 0:
        nt -= 1
        s = touched[nt]
        j = first[s] + marked[s]
        if j == past[s]:
            marked[s] = 0
            continue
        z = nsets
        nsets += 1
        if marked[s] <= past[s] - j:
            first[z] = first[s]
            past[z] = j
            first[s] = j
        else:
            past[z] = past[s]
            first[z] = j
            past[s] = j
        for i in range(first[z], past[z]):
            owner[elems[i]] = z
        marked[s] = 0
        marked[z] = 0
    return nsets


@njit(nogil=True, cache=True)
def _mark(e, owner, elems, loc, first, marked, touched, nt):
    """Move element ``e`` to the marked front of its set; returns the new touched count."""
    s = owner[e]
    i = loc[e]
    j = first[s] + marked[s]
    elems[i] = elems[j]
    loc[elems[i]] = i
    elems[j] = e
    loc[e] = j
    if marked[s] == 0:
        touched[nt] = s
        nt += 1
    marked[s] += 1
    return nt


@njit(nogil=True, cache=True)
def equivalence_blocks(delta, final):
    """Coarsest partition of a DFA's states into equivalence classes.

    ``delta[state, symbol]`` is the target or -1 (undefined: rejecting); every state is assumed
    live. Returns a block id per state; equal ids = equivalent states.

    This is Valmari and Lehtinen's refinement for *partial* transition functions: states and
    transitions are both partitions; each new block of states splits the transitions by head,
    each new block of transitions splits the states by tail. Work is O(n + m log m) for m defined
    transitions -- grammar DFAs leave most (state, class) pairs undefined, so this is much less
    than Hopcroft's O(k n log n) over a completed automaton.
    """
    n, k = delta.shape
    m = 0
    for s in range(n):
        for a in range(k):
            if delta[s, a] >= 0:
                m += 1
    tail = np.empty(m, dtype=np.int32)
    head = np.empty(m, dtype=np.int32)
    # transitions numbered by label, so the initial transition sets are contiguous
    cap = max(n, m) + 1
    c_first = np.zeros(cap, dtype=np.int64)
    c_past = np.zeros(cap, dtype=np.int64)
    c_owner = np.zeros(max(m, 1), dtype=np.int32)
    nc = 0
    t = 0
    for a in range(k):
        start = t
        for s in range(n):
            d = delta[s, a]
            if d >= 0:
                tail[t] = s
                head[t] = d
                c_owner[t] = nc
                t += 1
        if t > start:
            c_first[nc] = start
            c_past[nc] = t
            nc += 1
    c_elems = np.arange(max(m, 1)).astype(np.int32)
    c_loc = np.arange(max(m, 1)).astype(np.int64)
    # incoming transitions per state
    ids = np.arange(m).astype(np.int32)
    in_ptr, incoming, _ = csr(n, head, ids, ids, m)
    # states: one set, then split by finality
    b_first = np.zeros(cap, dtype=np.int64)
    b_past = np.zeros(cap, dtype=np.int64)
    b_owner = np.zeros(n, dtype=np.int32)
    b_elems = np.arange(n).astype(np.int32)
    b_loc = np.arange(n).astype(np.int64)
    b_past[0] = n
    nb = 1
    marked = np.zeros(cap, dtype=np.int64)
    touched = np.empty(cap, dtype=np.int64)
    nt = 0
    for s in range(n):
        if final[s]:
            nt = _mark(s, b_owner, b_elems, b_loc, b_first, marked, touched, nt)
    nb = _split_marked(b_first, b_past, b_owner, b_elems, marked, touched, nt, nb)
    b = 1
    c = 0
    while c < nc:
        nt = 0
        for i in range(c_first[c], c_past[c]):
            # (marking written out here and below: a helper call per element costs more than the work)
            e = tail[c_elems[i]]
            s = b_owner[e]
            x = b_loc[e]
            j = b_first[s] + marked[s]
            f = b_elems[j]
            b_elems[x] = f
            b_loc[f] = x
            b_elems[j] = e
            b_loc[e] = j
            if marked[s] == 0:
                touched[nt] = s
                nt += 1
            marked[s] += 1
        nb = _split_marked(b_first, b_past, b_owner, b_elems, marked, touched, nt, nb)
        c += 1
        while b < nb:
            nt = 0
            for i in range(b_first[b], b_past[b]):
                q = b_elems[i]
                for y in range(in_ptr[q], in_ptr[q + 1]):
                    e = incoming[y]
                    s = c_owner[e]
                    x = c_loc[e]
                    j = c_first[s] + marked[s]
                    f = c_elems[j]
                    c_elems[x] = f
                    c_loc[f] = x
                    c_elems[j] = e
                    c_loc[e] = j
                    if marked[s] == 0:
                        touched[nt] = s
                        nt += 1
                    marked[s] += 1
            nc = _split_marked(c_first, c_past, c_owner, c_elems, marked, touched, nt, nc)
            b += 1
    return b_owner


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
    (partition refinement, calls as extra symbols), numbered breadth-first, and equal classes merged.

    Returns ``(trans, final, call_src, call_rule, call_dst, group)`` where ``group[c]`` is the
    merged class of old class ``c`` (numbered in order of first occurrence); no states when the
    language is empty.
    """
    t1, f1, cs, cr, cd = renumber(trans, final, c_src, c_rule, c_dst, keep, start)
    # classes every state treats alike merged first: the refinement's work is per transition, and
    # the product of two automata has many such classes (``format: email`` with ``maxLength:
    # 1024``: 152,254 states, 36 classes of which 14 differ; refinement 0.93 s, 0.34 merged)
    t1, group = merge_equal_classes(t1)
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
        blk = equivalence_blocks(delta, f1)
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
    t1, after = merge_equal_classes(t1)  # (classes alike only once equivalent states are merged)
    return t1, f1, cs, cr, cd, after[group]


@njit(nogil=True, cache=True)
def merge_equal_classes(t1):
    """``(table, group)``: the classes (columns) of ``t1`` that are equal merged into one, ``group[c]``
    the merged class of old class ``c`` (numbered in order of first occurrence)."""
    n, k = t1.shape
    # hashes first, then a comparison
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
    return t1, group


@njit(nogil=True, cache=True)
def merge_tables(classes, flat, flat_off, nstates, nclasses):
    """The tables of several DFAs (rules) as one table over their common byte classes.

    ``classes[r]`` is rule ``r``'s class per byte; its table (``nstates[r]`` × ``nclasses[r]``)
    is ``flat[flat_off[r]:flat_off[r + 1]]``. Rule ``r``'s states are numbered after those of
    the rules before it. Returns ``(byte_class, trans, has_byte)``: the common refinement of the
    classes, numbered by lowest byte; the merged table with targets renumbered; whether a state
    has any byte edge.
    """
    nr = classes.shape[0]
    cls = np.zeros(256, dtype=np.int64)
    ng = 1
    pair = np.full(256 * max(1, nclasses.max()), -1, dtype=np.int64)  # (at most 256 classes so far)
    for r in range(nr):  # refine rule by rule: (class so far, rule's class) pairs, densely numbered
        k = nclasses[r]
        n2 = 0
        for b in range(256):
            key = cls[b] * k + classes[r, b]
            if pair[key] < 0:
                pair[key] = n2
                n2 += 1
            cls[b] = pair[key]
        pair[: ng * k] = -1
        ng = n2
    # number the classes by lowest byte
    byte_class = np.empty(256, dtype=np.int32)
    rank = np.full(ng, -1, dtype=np.int64)
    reps = np.empty(ng, dtype=np.int64)
    n = 0
    for b in range(256):
        c = cls[b]
        if rank[c] < 0:
            rank[c] = n
            reps[n] = b
            n += 1
        byte_class[b] = rank[c]
    total = 0
    for r in range(nr):
        total += nstates[r]
    trans = np.empty((total, ng), dtype=np.int32)
    has_byte = np.zeros(total, dtype=np.uint8)
    col = np.empty(ng, dtype=np.int64)  # the rule's class of each merged class
    off = 0
    for r in range(nr):
        k = nclasses[r]
        base = flat_off[r]
        for g in range(ng):
            col[g] = classes[r, reps[g]]
        for s in range(nstates[r]):
            row = base + s * k
            out = trans[off + s]
            live = 0
            for g in range(ng):
                t = flat[row + col[g]]
                live |= t >= 0
                out[g] = t + off if t >= 0 else -1
            has_byte[off + s] = live
        off += nstates[r]
    return byte_class, trans, has_byte


# ----------------------------------------------------------------------------- RTN assembly

#: status codes of :func:`assemble_network`
ASSEMBLED, LEFT_RECURSIVE, TOO_MANY_CHAINS = 0, 1, 2


@njit(nogil=True, cache=True)
def assemble_packed(classes, flat, header, final, calls, max_chains):
    """:func:`assemble_network` with its per-rule arguments packed: ``header[r]`` is rule ``r``'s
    state count, class count, start state and call count; ``calls`` its call sources, then rules,
    then targets (each array the rules' edges end to end); ``flat`` the tables end to end."""
    nr = header.shape[0]
    nstates = np.empty(nr, dtype=np.int64)
    nclasses = np.empty(nr, dtype=np.int64)
    starts = np.empty(nr, dtype=np.int64)
    ncalls = np.empty(nr, dtype=np.int64)
    flat_off = np.zeros(nr + 1, dtype=np.int64)
    for r in range(nr):
        nstates[r], nclasses[r], starts[r], ncalls[r] = header[r, 0], header[r, 1], header[r, 2], header[r, 3]
        flat_off[r + 1] = flat_off[r] + nstates[r] * nclasses[r]
    m = calls.shape[0] // 3
    call_src = calls[:m].astype(np.int64)
    call_rule = calls[m:2 * m].astype(np.int64)
    call_dst = calls[2 * m:].astype(np.int64)
    return assemble_network(classes, flat, flat_off, nstates, nclasses, starts, final, call_src, call_rule,
                            call_dst, ncalls, max_chains)


@njit(nogil=True, cache=True)
def assemble_network(classes, flat, flat_off, nstates, nclasses, starts, final, call_src, call_rule, call_dst,
                     ncalls, max_chains):
    """The flat tables of a recursive transition network from its rules' DFAs (see
    :mod:`logitgate.engine.rtn`), in one pass.

    Rule ``r``'s table is as for :func:`merge_tables`, its start state ``starts[r]`` and finality
    ``final`` (concatenated); its ``ncalls[r]`` call edges (local states, sorted by source, then
    callee) follow those of the rules before it in ``call_*``. Returns ``(status, trans,
    rule_of_state, local_index, rule_start, flags, pack)``: ``flags`` holds ``final``, ``simple`` and
    ``dead_end`` as its rows, ``pack`` the byte classes, the class count and the call chains
    (``chain_ptr``, ``chain_target``, ``chain_push_ptr``, ``chain_push``) as
    :attr:`logitgate.engine.rtn.RTN.step_pack` lays them out. ``status`` is :data:`LEFT_RECURSIVE`
    when a rule can call itself before reading a byte (the other arrays are then empty) or
    :data:`TOO_MANY_CHAINS` past ``max_chains``.

    A *chain* is a way to reach a byte through calls made before it: a target rule start plus
    the return states pushed, outermost first; a return state that could only pop (final, no
    byte, no call) is not pushed (a tail call keeps the stack flat).
    """
    nr = nstates.shape[0]
    byte_class, trans, has_byte = merge_tables(classes, flat, flat_off, nstates, nclasses)
    total = trans.shape[0]
    offsets = np.zeros(nr + 1, dtype=np.int64)
    for r in range(nr):
        offsets[r + 1] = offsets[r] + nstates[r]
    rule_of_state = np.empty(total, dtype=np.int32)
    local_index = np.empty(total, dtype=np.int32)
    rule_start = np.empty(nr, dtype=np.int32)
    for r in range(nr):
        rule_start[r] = offsets[r] + starts[r]
        for s in range(nstates[r]):
            rule_of_state[offsets[r] + s] = r
            local_index[offsets[r] + s] = s
    # call edges in global numbers (CSR by source; sources stay sorted rule after rule)
    m = call_src.shape[0]
    c_ptr = np.zeros(total + 1, dtype=np.int64)
    c_rule = np.empty(m, dtype=np.int64)
    c_dst = np.empty(m, dtype=np.int64)
    e = 0
    for r in range(nr):
        for _ in range(ncalls[r]):
            c_ptr[offsets[r] + call_src[e] + 1] += 1
            c_rule[e] = call_rule[e]
            c_dst[e] = offsets[r] + call_dst[e]
            e += 1
    for s in range(total):
        c_ptr[s + 1] += c_ptr[s]
    only_pops = np.zeros(total, dtype=np.uint8)
    for s in range(total):
        if final[s] and not has_byte[s] and c_ptr[s + 1] == c_ptr[s]:
            only_pops[s] = 1
    empty32 = np.zeros(0, dtype=np.int32)
    empty8 = np.zeros((3, 0), dtype=np.uint8)

    # left recursion: a cycle among the calls rules make at their start states
    color = np.zeros(nr, dtype=np.uint8)
    st_rule = np.empty(nr, dtype=np.int64)
    st_next = np.empty(nr, dtype=np.int64)
    for root in range(nr):
        if color[root]:
            continue
        st_rule[0], st_next[0] = root, c_ptr[rule_start[root]]
        color[root] = 1
        top = 1
        while top > 0:
            r = st_rule[top - 1]
            j = st_next[top - 1]
            if j == c_ptr[rule_start[r] + 1]:
                color[r] = 2
                top -= 1
                continue
            st_next[top - 1] = j + 1
            q = c_rule[j]
            if color[q] == 1:
                return (LEFT_RECURSIVE, trans.reshape(-1), empty32, empty32, empty32, empty8, empty32)
            if color[q] == 0:
                color[q] = 1
                st_rule[top], st_next[top] = q, c_ptr[rule_start[q]]
                top += 1

    # chains, state by state (:func:`_chains`), with arrays doubled and the pass redone when one
    # runs out (a few dozen chains per grammar: the first sizes nearly always do)
    chain_ptr = np.zeros(total + 1, dtype=np.int32)
    cap = 64 + 2 * m
    targets = np.empty(cap, dtype=np.int32)
    push_ptr = np.zeros(cap + 1, dtype=np.int32)
    pushes = np.empty(cap, dtype=np.int32)
    nodes = np.empty((cap, 3), dtype=np.int64)
    stack = np.empty((cap, 3), dtype=np.int64)
    while True:
        full, n_chains, n_push = _chains(total, c_ptr, c_rule, c_dst, rule_start, only_pops, max_chains,
                                         chain_ptr, targets, push_ptr, pushes, nodes, stack)
        if full == _FULL_NONE:
            break
        if full == _FULL_CHAINS:
            return (TOO_MANY_CHAINS, trans.reshape(-1), empty32, empty32, empty32, empty8, empty32)
        if full == _FULL_TARGETS:
            targets = np.empty(2 * targets.shape[0], dtype=np.int32)
            push_ptr = np.zeros(targets.shape[0] + 1, dtype=np.int32)
        elif full == _FULL_PUSHES:
            pushes = np.empty(2 * pushes.shape[0], dtype=np.int32)
        elif full == _FULL_NODES:
            nodes = np.empty((2 * nodes.shape[0], 3), dtype=np.int64)
        else:
            stack = np.empty((2 * stack.shape[0], 3), dtype=np.int64)
    flags = np.zeros((3, total), dtype=np.uint8)  # final, simple, dead_end
    for s in range(total):
        has_chain = chain_ptr[s + 1] != chain_ptr[s]
        flags[0, s] = final[s]
        if not has_chain and not final[s]:
            flags[1, s] = 1
        if final[s] and not has_chain and not has_byte[s]:
            flags[2, s] = 1
    # byte classes and call chains end to end behind a header of where each starts (and the class
    # count): the layout of :func:`logitgate._arrays.end_to_end`, which the step kernels read
    ncls = 0
    for b in range(256):
        ncls = max(ncls, byte_class[b] + 1)
    head = 7
    sizes = (256, total + 1, n_chains, n_chains + 1, n_push)
    pack = np.empty(head + 256 + total + 1 + n_chains + n_chains + 1 + n_push, dtype=np.int32)
    pos = head
    for k in range(5):
        pack[k] = pos
        pos += sizes[k]
    pack[5] = pos
    pack[6] = ncls
    pack[pack[0]:pack[1]] = byte_class
    pack[pack[1]:pack[2]] = chain_ptr
    pack[pack[2]:pack[3]] = targets[:n_chains]
    pack[pack[3]:pack[4]] = push_ptr[:n_chains + 1]
    pack[pack[4]:pack[5]] = pushes[:n_push]
    return (ASSEMBLED, trans.reshape(-1), rule_of_state, local_index, rule_start, flags, pack)


#: what :func:`_chains` ran out of
_FULL_NONE, _FULL_CHAINS, _FULL_TARGETS, _FULL_PUSHES, _FULL_NODES, _FULL_STACK = 0, 1, 2, 3, 4, 5


@njit(nogil=True, cache=True)
def _chains(total, c_ptr, c_rule, c_dst, rule_start, only_pops, max_chains, chain_ptr, targets, push_ptr, pushes,
            nodes, stack):
    """The chains of every state into ``chain_ptr``/``targets``/``push_ptr``/``pushes`` (see
    :func:`assemble_network`): depth-first over the calls made at callee starts, last call first.

    Returns ``(full, chains, pushes)``; ``full`` names the array that ran out (then nothing is
    complete: the caller enlarges it and calls again) or ``_FULL_CHAINS`` past ``max_chains``.
    ``nodes`` holds the pushed return states as a tree (value, parent, depth); ``stack`` the
    pending calls (callee, return state, node of the pushes before). No array is rebound here:
    numba then keeps the loops tight.
    """
    n_chains = 0
    n_push = 0
    for gs in range(total):
        lo, hi = c_ptr[gs], c_ptr[gs + 1]
        if lo < hi:
            n_nodes = 0
            top = 0
            for j in range(lo, hi):
                if top >= stack.shape[0]:
                    return _FULL_STACK, 0, 0
                stack[top, 0], stack[top, 1], stack[top, 2] = c_rule[j], c_dst[j], -1
                top += 1
            while top > 0:
                top -= 1
                r, ret, node = stack[top, 0], stack[top, 1], stack[top, 2]
                if not only_pops[ret]:
                    if n_nodes >= nodes.shape[0]:
                        return _FULL_NODES, 0, 0
                    nodes[n_nodes, 0], nodes[n_nodes, 1] = ret, node
                    nodes[n_nodes, 2] = 1 if node < 0 else nodes[node, 2] + 1
                    node = n_nodes
                    n_nodes += 1
                if n_chains >= max_chains:
                    return _FULL_CHAINS, 0, 0
                if n_chains >= targets.shape[0]:
                    return _FULL_TARGETS, 0, 0
                targets[n_chains] = rule_start[r]
                depth = 0 if node < 0 else nodes[node, 2]
                if n_push + depth > pushes.shape[0]:
                    return _FULL_PUSHES, 0, 0
                x = node
                for k in range(depth - 1, -1, -1):  # outermost first
                    pushes[n_push + k] = nodes[x, 0]
                    x = nodes[x, 1]
                n_push += depth
                n_chains += 1
                push_ptr[n_chains] = n_push
                s0 = rule_start[r]
                for j in range(c_ptr[s0], c_ptr[s0 + 1]):
                    if top >= stack.shape[0]:
                        return _FULL_STACK, 0, 0
                    stack[top, 0], stack[top, 1], stack[top, 2] = c_rule[j], c_dst[j], node
                    top += 1
        chain_ptr[gs + 1] = n_chains
    return _FULL_NONE, n_chains, n_push
