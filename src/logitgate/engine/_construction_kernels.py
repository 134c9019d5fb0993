"""numba kernels behind :mod:`.automata`: Thompson construction and subset construction.

An expression arrives as a postfix *program* of int32 words (built in Python by
:class:`logitgate.engine.automata.Program`); :func:`build_dfa` runs it into a Thompson NFA
(epsilon, byte-set and call edges) and determinizes that NFA in the same call, so no NFA
ever exists as Python objects. Byte sets are *mask ids*: ``0..255`` is the single byte of
that value, ``256 + j`` the ``j``-th byte set of the program; ``mask_ptr``/``mask_cls`` (CSR)
list the byte classes each mask covers.

Ops (``OP_*``; operands follow the op word):

=========  =================  ==========================================================
LIT        offset, length     the literal ``lit_pool[offset:offset + length]`` (length ≥ 1)
SET        mask id            one byte from the set
EMPTY                         the empty string
SEQ        n                  concatenation of the top ``n`` fragments
ALT        n                  alternation of the top ``n`` fragments (``n = 0``: nothing)
REP        min, max           the top fragment ``min``..``max`` times (``max = -1``: unbounded)
CALL       rule, nullable     a call edge (plus an epsilon skip when ``nullable``)
EMBED      index              a call-free DFA given in the ``emb_*`` arrays
=========  =================  ==========================================================

DFA states are sets of *important* NFA states (those with byte or call edges, and the end
state), interned in an open-addressing hash table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._automata_kernels import grow

OP_LIT, OP_SET, OP_EMPTY, OP_SEQ, OP_ALT, OP_REP, OP_CALL, OP_EMBED = range(8)

#: status codes of :func:`build_dfa`
OK, NFA_LIMIT, DFA_LIMIT = 0, 1, 2

#: columns of ``emb_info`` (one row per embedded DFA)
EMB_STATES, EMB_CLASSES, EMB_TRANS_OFF, EMB_FINAL_OFF, EMB_MASK_OFF, EMB_START = range(6)

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


# ----------------------------------------------------------------------------- Thompson


@njit(nogil=True, cache=True)
def _edge(src, dst, lab, n, a, b, lab_value):
    """Append edge ``(a, b, lab_value)`` to the parallel arrays ``src/dst/lab`` holding ``n`` edges."""
    if n >= src.shape[0]:
        src = grow(src, 2 * n + 16, 0)
        dst = grow(dst, 2 * n + 16, 0)
        lab = grow(lab, 2 * n + 16, 0)
    src[n] = a
    dst[n] = b
    lab[n] = lab_value
    return src, dst, lab, n + 1


@njit(nogil=True, cache=True)
def thompson(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask, max_states):
    """Run ``prog`` into an NFA. Returns ``(status, n_states, start, end, eps, byte, call)`` where
    each edge kind is a tuple ``(src, dst, label, count)`` (label: 0 / mask id / rule id)."""
    cap = 64
    es, ed, el = np.empty(cap, np.int32), np.empty(cap, np.int32), np.empty(cap, np.int32)
    bs, bd, bl = np.empty(cap, np.int32), np.empty(cap, np.int32), np.empty(cap, np.int32)
    cs, cd, cl = np.empty(cap, np.int32), np.empty(cap, np.int32), np.empty(cap, np.int32)
    ne = nb = nc = 0
    ns = 0
    # fragment stack: start, end, and the counters when the fragment began (its window)
    fs = np.empty((64, 6), dtype=np.int64)
    sp = 0
    pc = 0
    n_prog = prog.shape[0]
    while pc < n_prog:
        op = prog[pc]
        if sp + 2 >= fs.shape[0]:
            fs = grow(fs, 2 * fs.shape[0], 0)
        if op in (OP_SEQ, OP_ALT):
            n = prog[pc + 1]
            pc += 2
            first = sp - n
            if op == OP_SEQ:
                for j in range(first, sp - 1):
                    es, ed, el, ne = _edge(es, ed, el, ne, fs[j, 1], fs[j + 1, 0], 0)
                fs[first, 1] = fs[sp - 1, 1]
                sp = first + 1
                continue
            if n == 0:
                fs[sp, 2], fs[sp, 3], fs[sp, 4], fs[sp, 5] = ns, ne, nb, nc
                first = sp
            s, e = ns, ns + 1
            ns += 2
            for j in range(first, sp):
                es, ed, el, ne = _edge(es, ed, el, ne, s, fs[j, 0], 0)
                es, ed, el, ne = _edge(es, ed, el, ne, fs[j, 1], e, 0)
            fs[first, 0], fs[first, 1] = s, e
            sp = first + 1
        elif op == OP_REP:
            mn, mx = prog[pc + 1], prog[pc + 2]
            pc += 3
            it = sp - 1
            copies = mn + 1 if mx < 0 else mx
            if copies < 1:
                copies = 1
            w_s, w_e, w_b, w_c = fs[it, 2], fs[it, 3], fs[it, 4], fs[it, 5]
            h_s, h_e, h_b, h_c = ns, ne, nb, nc
            if ns + (copies - 1) * (h_s - w_s) + 3 > max_states:
                return NFA_LIMIT, ns, 0, 0, (es, ed, el, ne), (bs, bd, bl, nb), (cs, cd, cl, nc)
            starts = np.empty(copies, dtype=np.int64)
            ends = np.empty(copies, dtype=np.int64)
            starts[0], ends[0] = fs[it, 0], fs[it, 1]
            for k in range(1, copies):
                off = ns - w_s
                ns += h_s - w_s
                for x in range(w_e, h_e):
                    es, ed, el, ne = _edge(es, ed, el, ne, es[x] + off, ed[x] + off, 0)
                for x in range(w_b, h_b):
                    bs, bd, bl, nb = _edge(bs, bd, bl, nb, bs[x] + off, bd[x] + off, bl[x])
                for x in range(w_c, h_c):
                    cs, cd, cl, nc = _edge(cs, cd, cl, nc, cs[x] + off, cd[x] + off, cl[x])
                starts[k], ends[k] = starts[0] + off, ends[0] + off
            s = ns
            ns += 1
            cur = s
            for k in range(mn):
                es, ed, el, ne = _edge(es, ed, el, ne, cur, starts[k], 0)
                cur = ends[k]
            if mx < 0:
                loop = ns
                ns += 1
                es, ed, el, ne = _edge(es, ed, el, ne, cur, loop, 0)
                es, ed, el, ne = _edge(es, ed, el, ne, loop, starts[mn], 0)
                es, ed, el, ne = _edge(es, ed, el, ne, ends[mn], loop, 0)
                fs[it, 0], fs[it, 1] = s, loop
            else:
                e = ns
                ns += 1
                for k in range(mn, mx):
                    es, ed, el, ne = _edge(es, ed, el, ne, cur, starts[k], 0)
                    es, ed, el, ne = _edge(es, ed, el, ne, cur, e, 0)
                    cur = ends[k]
                es, ed, el, ne = _edge(es, ed, el, ne, cur, e, 0)
                fs[it, 0], fs[it, 1] = s, e
        else:
            fs[sp, 2], fs[sp, 3], fs[sp, 4], fs[sp, 5] = ns, ne, nb, nc
            if op == OP_LIT:
                off, ln = prog[pc + 1], prog[pc + 2]
                pc += 3
                s = ns
                for i in range(ln):
                    bs, bd, bl, nb = _edge(bs, bd, bl, nb, s + i, s + i + 1, lit_pool[off + i])
                ns += ln + 1
                fs[sp, 0], fs[sp, 1] = s, s + ln
            elif op == OP_SET:
                bs, bd, bl, nb = _edge(bs, bd, bl, nb, ns, ns + 1, prog[pc + 1])
                pc += 2
                fs[sp, 0], fs[sp, 1] = ns, ns + 1
                ns += 2
            elif op == OP_EMPTY:
                pc += 1
                fs[sp, 0], fs[sp, 1] = ns, ns
                ns += 1
            elif op == OP_CALL:
                cs, cd, cl, nc = _edge(cs, cd, cl, nc, ns, ns + 1, prog[pc + 1])
                if prog[pc + 2]:
                    es, ed, el, ne = _edge(es, ed, el, ne, ns, ns + 1, 0)
                pc += 3
                fs[sp, 0], fs[sp, 1] = ns, ns + 1
                ns += 2
            else:  # OP_EMBED
                row = prog[pc + 1]
                pc += 2
                n, k = emb_info[row, EMB_STATES], emb_info[row, EMB_CLASSES]
                t_off, f_off, m_off = emb_info[row, EMB_TRANS_OFF], emb_info[row, EMB_FINAL_OFF], emb_info[row, EMB_MASK_OFF]
                base, end = ns, ns + n
                if end + 1 > max_states:
                    return NFA_LIMIT, ns, 0, 0, (es, ed, el, ne), (bs, bd, bl, nb), (cs, cd, cl, nc)
                for q in range(n):
                    for c in range(k):
                        t = emb_trans[t_off + q * k + c]
                        if t >= 0:
                            bs, bd, bl, nb = _edge(bs, bd, bl, nb, base + q, base + t, emb_mask[m_off + c])
                    if emb_final[f_off + q]:
                        es, ed, el, ne = _edge(es, ed, el, ne, base + q, end, 0)
                ns = end + 1
                fs[sp, 0], fs[sp, 1] = base + emb_info[row, EMB_START], end
            sp += 1
        if ns > max_states:
            return NFA_LIMIT, ns, 0, 0, (es, ed, el, ne), (bs, bd, bl, nb), (cs, cd, cl, nc)
    return OK, ns, fs[0, 0], fs[0, 1], (es, ed, el, ne), (bs, bd, bl, nb), (cs, cd, cl, nc)


@njit(nogil=True, cache=True)
def _csr(n, src, dst, lab, m):
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


# ----------------------------------------------------------------------------- subset construction


@njit(nogil=True, cache=True)
def _closure(targets, nt, eps_ptr, eps_dst, important, stamp, mark, stack, out):
    """Sorted important states epsilon-reachable from ``targets[:nt]`` into ``out``; returns the count."""
    top = 0
    for i in range(nt):
        q = targets[i]
        if stamp[q] != mark:
            stamp[q] = mark
            stack[top] = q
            top += 1
    n = 0
    while top > 0:
        top -= 1
        q = stack[top]
        if important[q]:
            out[n] = q
            n += 1
        for j in range(eps_ptr[q], eps_ptr[q + 1]):
            t = eps_dst[j]
            if stamp[t] != mark:
                stamp[t] = mark
                stack[top] = t
                top += 1
    out[:n].sort()
    return n


@njit(nogil=True, cache=True)
def _hash(a, n):
    h = _FNV_OFFSET
    for i in range(n):
        h = (h ^ np.uint64(a[i])) * _FNV_PRIME
    return h


@njit(nogil=True, cache=True)
def _intern(buf, n, data, ptr, hashes, table, count):
    """Id of the state set ``buf[:n]`` (added if new). Returns ``(id, data, ptr, hashes, table, count)``.

    Set ``i`` is ``data[ptr[i]:ptr[i + 1]]``; ``table`` is open addressing holding id + 1 (0 = free).
    """
    h = _hash(buf, n)
    mask = table.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while True:
        j = table[slot] - 1
        if j < 0:
            break
        if hashes[j] == h and ptr[j + 1] - ptr[j] == n:
            same = True
            base = ptr[j]
            for i in range(n):
                if data[base + i] != buf[i]:
                    same = False
                    break
            if same:
                return j, data, ptr, hashes, table, count
        slot = (slot + 1) & mask
    j = count
    if j + 2 > ptr.shape[0]:
        ptr = grow(ptr, 2 * ptr.shape[0], 0)
        hashes = grow(hashes, 2 * hashes.shape[0], 0)
    base = ptr[j]
    if base + n > data.shape[0]:
        data = grow(data, 2 * (base + n), 0)
    data[base:base + n] = buf[:n]
    ptr[j + 1] = base + n
    hashes[j] = h
    table[slot] = j + 1
    count += 1
    if 2 * count > table.shape[0]:  # keep the load under one half
        table = np.zeros(2 * table.shape[0], dtype=np.int64)
        mask = table.shape[0] - 1
        for i in range(count):
            s = np.int64(hashes[i] & np.uint64(mask))
            while table[s] != 0:
                s = (s + 1) & mask
            table[s] = i + 1
    return j, data, ptr, hashes, table, count


@njit(nogil=True, cache=True)
def build_dfa(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask, mask_ptr, mask_cls, ncls,
              max_nfa_states, max_dfa_states):
    """Thompson construction of ``prog`` plus subset construction (see the module docstring).

    Returns ``(status, nfa_states, trans[n, ncls], final[n], call_src, call_rule, call_dst)``;
    state 0 is the start; call edges are sorted by source, then rule.
    """
    st, ns, start, end, eps, byt, cal = thompson(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask,
                                                 max_nfa_states)
    empty_i32 = np.zeros(0, dtype=np.int32)
    if st != OK:
        return st, ns, np.zeros((0, ncls), np.int32), np.zeros(0, np.uint8), empty_i32, empty_i32, empty_i32
    eps_ptr, eps_dst, _ = _csr(ns, eps[0], eps[1], eps[2], eps[3])
    b_ptr, b_dst, b_mask = _csr(ns, byt[0], byt[1], byt[2], byt[3])
    c_ptr, c_dst, c_rule = _csr(ns, cal[0], cal[1], cal[2], cal[3])
    important = np.zeros(ns, dtype=np.uint8)
    for q in range(ns):
        if b_ptr[q + 1] > b_ptr[q] or c_ptr[q + 1] > c_ptr[q]:
            important[q] = 1
    important[end] = 1

    stamp = np.zeros(ns, dtype=np.int64)
    mark = 0
    stack = np.empty(ns, dtype=np.int64)
    buf = np.empty(ns, dtype=np.int32)
    # interned state sets
    data = np.empty(256, dtype=np.int32)
    ptr = np.zeros(64, dtype=np.int64)
    hashes = np.zeros(64, dtype=np.uint64)
    table = np.zeros(256, dtype=np.int64)
    count = 0
    one = np.empty(1, dtype=np.int32)
    one[0] = start
    mark += 1
    n = _closure(one, 1, eps_ptr, eps_dst, important, stamp, mark, stack, buf)
    _, data, ptr, hashes, table, count = _intern(buf, n, data, ptr, hashes, table, count)

    trans = np.full((64, ncls), -1, dtype=np.int32)
    final = np.zeros(64, dtype=np.uint8)
    c_src_o = np.empty(16, np.int32)
    c_rule_o = np.empty(16, np.int32)
    c_dst_o = np.empty(16, np.int32)
    n_calls = 0
    # per-state scratch: (class, target) pairs grouped by class
    pc_cls = np.empty(64, dtype=np.int32)
    pc_tgt = np.empty(64, dtype=np.int32)
    cls_cnt = np.zeros(ncls + 1, dtype=np.int64)
    grouped = np.empty(64, dtype=np.int32)
    tg = np.empty(64, dtype=np.int32)
    memo_start = np.empty(ncls, dtype=np.int64)  # distinct target lists of this state, in `grouped`
    memo_len = np.empty(ncls, dtype=np.int64)
    memo_hash = np.empty(ncls, dtype=np.uint64)
    memo_id = np.empty(ncls, dtype=np.int64)

    i = 0
    while i < count:
        if i >= trans.shape[0]:
            trans = grow(trans, 2 * trans.shape[0], -1)
            final = grow(final, 2 * final.shape[0], 0)
        lo, hi = ptr[i], ptr[i + 1]
        npairs = 0
        ncall_pairs = 0
        for x in range(lo, hi):
            q = data[x]
            if q == end:
                final[i] = 1
            for e in range(b_ptr[q], b_ptr[q + 1]):
                m = b_mask[e]
                t = b_dst[e]
                need = npairs + mask_ptr[m + 1] - mask_ptr[m]
                if need > pc_cls.shape[0]:
                    pc_cls = grow(pc_cls, 2 * need, 0)
                    pc_tgt = grow(pc_tgt, 2 * need, 0)
                for j in range(mask_ptr[m], mask_ptr[m + 1]):
                    pc_cls[npairs] = mask_cls[j]
                    pc_tgt[npairs] = t
                    npairs += 1
            ncall_pairs += c_ptr[q + 1] - c_ptr[q]
        # group targets by class (counting sort)
        cls_cnt[:] = 0
        for j in range(npairs):
            cls_cnt[pc_cls[j] + 1] += 1
        for c in range(ncls):
            cls_cnt[c + 1] += cls_cnt[c]
        if npairs > grouped.shape[0]:
            grouped = np.empty(2 * npairs, dtype=np.int32)
        fill = cls_cnt[:-1].copy()
        for j in range(npairs):
            c = pc_cls[j]
            grouped[fill[c]] = pc_tgt[j]
            fill[c] += 1
        n_memo = 0
        for c in range(ncls):
            a, b = cls_cnt[c], cls_cnt[c + 1]
            if a == b:
                continue
            seg = grouped[a:b]
            seg.sort()
            # dedupe in place
            k = 1
            for j in range(1, b - a):
                if seg[j] != seg[k - 1]:
                    seg[k] = seg[j]
                    k += 1
            h = _hash(seg, k)
            tid = -1
            for u in range(n_memo):
                if memo_hash[u] == h and memo_len[u] == k:
                    same = True
                    ms = memo_start[u]
                    for j in range(k):
                        if grouped[ms + j] != seg[j]:
                            same = False
                            break
                    if same:
                        tid = memo_id[u]
                        break
            if tid < 0:
                mark += 1
                n = _closure(seg, k, eps_ptr, eps_dst, important, stamp, mark, stack, buf)
                tid, data, ptr, hashes, table, count = _intern(buf, n, data, ptr, hashes, table, count)
                memo_start[n_memo] = a
                memo_len[n_memo] = k
                memo_hash[n_memo] = h
                memo_id[n_memo] = tid
                n_memo += 1
            trans[i, c] = tid
            if count > max_dfa_states:
                return DFA_LIMIT, ns, trans[:0], final[:0], empty_i32, empty_i32, empty_i32
        if ncall_pairs > 0:
            if ncall_pairs > tg.shape[0]:
                tg = np.empty(2 * ncall_pairs, dtype=np.int32)
            rules = np.empty(ncall_pairs, dtype=np.int32)
            r_tg = np.empty(ncall_pairs, dtype=np.int32)
            u = 0
            for x in range(lo, hi):
                q = data[x]
                for e in range(c_ptr[q], c_ptr[q + 1]):
                    rules[u] = c_rule[e]
                    r_tg[u] = c_dst[e]
                    u += 1
            order = np.argsort(rules, kind="mergesort")
            j = 0
            while j < ncall_pairs:
                r = rules[order[j]]
                k = 0
                while j < ncall_pairs and rules[order[j]] == r:
                    tg[k] = r_tg[order[j]]
                    k += 1
                    j += 1
                mark += 1
                n = _closure(tg, k, eps_ptr, eps_dst, important, stamp, mark, stack, buf)
                tid, data, ptr, hashes, table, count = _intern(buf, n, data, ptr, hashes, table, count)
                if count > max_dfa_states:
                    return DFA_LIMIT, ns, trans[:0], final[:0], empty_i32, empty_i32, empty_i32
                if n_calls >= c_src_o.shape[0]:
                    c_src_o = grow(c_src_o, 2 * n_calls, 0)
                    c_rule_o = grow(c_rule_o, 2 * n_calls, 0)
                    c_dst_o = grow(c_dst_o, 2 * n_calls, 0)
                c_src_o[n_calls] = i
                c_rule_o[n_calls] = r
                c_dst_o[n_calls] = tid
                n_calls += 1
        i += 1
    return OK, ns, trans[:count], final[:count], c_src_o[:n_calls], c_rule_o[:n_calls], c_dst_o[:n_calls]
