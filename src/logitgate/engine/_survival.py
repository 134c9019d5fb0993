"""Numba kernels of the vocabulary slices: the survival-depth search (see
:meth:`logitgate.engine.slices.SliceSet.survival_depth`) and a state's walk plan.

The search is a 0-1 breadth-first search over pairs (cover automaton state, set of grammar
states), ordered by characters completed. Grammar state sets are interned (sorted runs in one
flat array, found through an open-addressing hash table); a pair's id is ``set id * cover states
+ cover state``, so distances and per-class successor sets are plain arrays indexed by ids.
:func:`plan_state` decides, for one state, every cover's depth (searching when it must) and which
slices are taken whole, in one call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._automata_kernels import grow, same_run

#: returned when every string of the cover survives
INFINITE = -1
#: a lower bound meaning "survives everything" (lower bounds are int16, stored as depth + 1: an array
#: of zeros knows none -- numpy's zeros come from the OS untouched, where filling -1 into a 365,000-
#: state grammar's arrays wrote 13-17 MB at its first mask)
LOWER_INF = 32767
#: a depth meaning "survives everything" in :func:`plan_state`'s depths and memo (int32)
DEPTH_INF = 1 << 30
#: a memo entry not searched yet (memo entries are stored as depth - UNKNOWN_DEPTH: zeros are unknown)
UNKNOWN_DEPTH = -2
#: states with at most this many call chains first look up (or search) their entry states' depths
MAX_ENTRIES_TRIED = 4
#: a grammar with more states gets its plan's per-state arrays from numpy (:func:`plan_tables`)
LAZY_ZEROS = 1 << 14
#: the search of a rule that call chains enter may visit this many times the pairs of a state's own:
#: its depth is remembered and answers for every state entering the rule (an object's "other key"
#: rule, entered at each of its key starts)
ENTRY_PAIRS_FACTOR = 8
#: columns of :func:`cover_tables`'s offsets: where a cover's rows start in each concatenated array
T_PTR, T_EDGE, T_CLS_PTR, T_CLS, T_FIRST, T_STATE = range(6)

_UNSEEN = np.int64(1) << 62
_UNKNOWN = -3  # successor not computed yet
_DEAD = -2  # no member survives the class


@njit(nogil=True, cache=True, inline="always")
def _hash(buf, n):
    h = np.uint64(n) * np.uint64(1000003)
    for k in range(n):
        h = (h ^ np.uint64(buf[k])) * np.uint64(0x100000001B3)
    return h


@njit(nogil=True, cache=True)
def _lookup(table, buf, n, set_data, set_off):
    """Slot of the set ``buf[:n]`` in ``table`` (holding its id) or of the empty slot to put it in."""
    mask = np.uint64(table.shape[0] - 1)
    slot = _hash(buf, n) & mask
    while True:
        sid = table[slot]
        if sid < 0:
            return slot
        lo = set_off[sid]
        if set_off[sid + 1] - lo == n and same_run(set_data[lo:lo + n], buf[:n]):
            return slot
        slot = (slot + np.uint64(1)) & mask


@njit(nogil=True, cache=True)
def dies_at_once(state, trans, ncls, chain_ptr, chain_target, first_classes):
    """True when ``state`` rejects a class some character starts with, and so does every rule its
    call chains enter: its survival depth is 0 without a search. (A state that opens a value, an
    expression's operand, calls a rule; most covers die at its first byte all the same.)"""
    lo, hi = chain_ptr[state], chain_ptr[state + 1]
    for c in first_classes:
        if trans[state * ncls + c] >= 0:
            continue
        taken = False
        for x in range(lo, hi):
            if trans[chain_target[x] * ncls + c] >= 0:
                taken = True
                break
        if not taken:
            return True
    return False


@njit(nogil=True, cache=True, inline="always")
def _takes_not_all(can, classes):
    """Whether some class of ``classes`` is not among those ``can`` marks."""
    for c in classes:  # noqa: SIM110 (numba compiles no generator expressions)
        if not can[c]:
            return True
    return False


@njit(nogil=True, cache=True)
def survival_search(
    state, limit, max_pairs,
    trans, ncls, chain_ptr, chain_target,
    cover_start, edge_ptr, edge_to, edge_final, edge_cls_ptr, edge_cls, boundary, lower,
):
    """Survival depth of ``state`` (``INFINITE`` when nothing ever dies); see the module docstring.

    ``lower[g]`` (one entry per grammar state, kept by the caller; depth + 1, 0: none) is raised to
    what the search proves for state ``g``: reached alone at a character boundary (a cover state with
    ``boundary``) after ``d`` complete characters, it survives ``h - d`` more (``LOWER_INF``:
    everything). States further along a bounded string then need no search.
    """
    h, set_data, set_off, n_sets, dist, nq = _search(
        state, limit, max_pairs, trans, ncls, chain_ptr, chain_target,
        cover_start, edge_ptr, edge_to, edge_final, edge_cls_ptr, edge_cls)
    for sid in range(n_sets):
        if set_off[sid + 1] - set_off[sid] != 1:
            continue
        g = set_data[set_off[sid]]
        for q in range(nq):
            if not boundary[q] and q != cover_start:
                continue
            d = dist[sid * nq + q]
            if d >= _UNSEEN:
                continue
            b = LOWER_INF if h == INFINITE else h - d + 1  # (stored as depth + 1: 0 is none)
            if b > lower[g]:
                lower[g] = b
    return h


@njit(nogil=True, cache=True)
def _search(
    state, limit, max_pairs,
    trans, ncls, chain_ptr, chain_target,
    cover_start, edge_ptr, edge_to, edge_final, edge_cls_ptr, edge_cls,
):
    """The search: ``(depth, set_data, set_off, n_sets, dist, nq)`` (the sets and their distances)."""
    # Most states die on the first character (they are not inside a string): check that before
    # allocating anything.
    q0 = cover_start
    for e in range(edge_ptr[q0], edge_ptr[q0 + 1]):
        for ci in range(edge_cls_ptr[e], edge_cls_ptr[e + 1]):
            c = edge_cls[ci]
            if trans[state * ncls + c] >= 0:
                continue
            taken = False
            for j in range(chain_ptr[state], chain_ptr[state + 1]):
                if trans[chain_target[j] * ncls + c] >= 0:
                    taken = True
                    break
            if not taken:
                return 0, np.zeros(0, np.int32), np.zeros(1, np.int64), 0, np.zeros(0, np.int64), 1
    nq = edge_ptr.shape[0] - 1
    set_data = np.empty(256, dtype=np.int32)
    set_off = np.zeros(65, dtype=np.int64)
    table = np.full(256, -1, dtype=np.int64)
    dist = np.full(64 * nq, _UNSEEN, dtype=np.int64)
    succ_of = np.full(64 * ncls, _UNKNOWN, dtype=np.int64)
    buf = np.empty(64, dtype=np.int32)
    succs = np.empty(ncls + 1, dtype=np.int64)
    # the most sets a step from each cover state can create: one per class of its edges
    max_new = np.zeros(nq, dtype=np.int64)
    for q in range(nq):
        for e in range(edge_ptr[q], edge_ptr[q + 1]):
            max_new[q] += edge_cls_ptr[e + 1] - edge_cls_ptr[e]
    cap = 4 * max_pairs + 16
    q_pair = np.empty(cap, dtype=np.int64)
    q_dist = np.empty(cap, dtype=np.int64)
    head = cap // 2
    tail = head
    # the start set {state}
    set_data[0] = state
    set_off[1] = 1
    n_sets = 1
    buf[0] = state
    table[_lookup(table, buf, 1, set_data, set_off)] = 0
    n_pairs = 1
    start = np.int64(cover_start)
    dist[start] = 0
    q_pair[tail] = start
    q_dist[tail] = 0
    tail += 1
    while head < tail:
        pair = q_pair[head]
        d = q_dist[head]
        head += 1
        if d > dist[pair]:
            continue
        if d > limit:
            return limit, set_data, set_off, n_sets, dist, nq
        sid = pair // nq
        q = pair % nq
        # Room for everything this step may add, made here: the loops below never rebind an array
        # (numba keeps a loop's arrays in registers only when the loop does not rebind them).
        width = 0  # the most members a successor set can have
        for k in range(set_off[sid], set_off[sid + 1]):
            s = set_data[k]
            width += 1 + chain_ptr[s + 1] - chain_ptr[s]
        if width > buf.shape[0]:
            buf = np.empty(2 * width, dtype=np.int32)
        grown = n_sets + max_new[q]
        if set_off[n_sets] + max_new[q] * width > set_data.shape[0]:
            set_data = grow(set_data, 2 * (set_off[n_sets] + max_new[q] * width), 0)
        if grown + 2 > set_off.shape[0]:
            set_off = grow(set_off, 2 * (grown + 2), 0)
        if grown * nq > dist.shape[0]:
            dist = grow(dist, 2 * grown * nq, _UNSEEN)
            succ_of = grow(succ_of, 2 * grown * ncls, _UNKNOWN)
        if 2 * grown > table.shape[0]:  # keep the table at most half full
            size = table.shape[0]
            while 2 * grown > size:
                size *= 2
            table = np.full(size, -1, dtype=np.int64)
            for x in range(n_sets):
                lo, hi = set_off[x], set_off[x + 1]
                table[_lookup(table, set_data[lo:hi], hi - lo, set_data, set_off)] = x
        for e in range(edge_ptr[q], edge_ptr[q + 1]):
            q2 = edge_to[e]
            d2 = d + edge_final[e]
            n_succ = 0
            for ci in range(edge_cls_ptr[e], edge_cls_ptr[e + 1]):
                c = edge_cls[ci]
                nxt = succ_of[sid * ncls + c]
                if nxt == _UNKNOWN:
                    # members reached on class c (by a transition or by entering a rule), deduplicated
                    n = 0
                    for k in range(set_off[sid], set_off[sid + 1]):
                        s = set_data[k]
                        for j in range(-1, chain_ptr[s + 1] - chain_ptr[s]):
                            src = s if j < 0 else chain_target[chain_ptr[s] + j]
                            t = trans[src * ncls + c]
                            if t < 0:
                                continue
                            # insert t into the sorted run buf[:n] unless it is there
                            x = n
                            while x > 0 and buf[x - 1] > t:
                                x -= 1
                            if x > 0 and buf[x - 1] == t:
                                continue
                            for y in range(n, x, -1):
                                buf[y] = buf[y - 1]
                            buf[x] = t
                            n += 1
                    if n == 0:
                        nxt = _DEAD
                    else:
                        slot = _lookup(table, buf, n, set_data, set_off)
                        nxt = table[slot]
                        if nxt < 0:  # a new set
                            nxt = n_sets
                            end = set_off[n_sets]
                            set_data[end:end + n] = buf[:n]
                            set_off[n_sets + 1] = end + n
                            n_sets += 1
                            table[slot] = nxt
                    succ_of[sid * ncls + c] = nxt
                if nxt == _DEAD:  # a string of d complete characters and part of one more dies here
                    return d, set_data, set_off, n_sets, dist, nq
                dup = False
                for x in range(n_succ):
                    if succs[x] == nxt:
                        dup = True
                        break
                if not dup:
                    succs[n_succ] = nxt
                    n_succ += 1
            for x in range(n_succ):
                key2 = succs[x] * nq + q2
                if d2 < dist[key2]:
                    if dist[key2] == _UNSEEN:
                        if n_pairs >= max_pairs:
                            return d, set_data, set_off, n_sets, dist, nq
                        n_pairs += 1
                    dist[key2] = d2
                    if d2 == d:
                        head -= 1
                        q_pair[head] = key2
                        q_dist[head] = d2
                    else:
                        q_pair[tail] = key2
                        q_dist[tail] = d2
                        tail += 1
    return INFINITE, set_data, set_off, n_sets, dist, nq


# ----------------------------------------------------------------------------- all covers at once


@njit(nogil=True, cache=True, inline="always")
def _touch(c_byte_class, kc, g_byte_class, g_ncls, touch, n_touch):
    """``touch[c, g]``: cover class ``c`` and grammar class ``g`` share a byte; ``n_touch[c]``: how
    many grammar classes cover class ``c`` touches."""
    touch[:kc, :g_ncls] = 0
    for b in range(256):
        touch[c_byte_class[b], g_byte_class[b]] = 1
    for c in range(kc):
        n = 0
        for g in range(g_ncls):
            n += touch[c, g]
        n_touch[c] = n


@njit(nogil=True, cache=True)
def cover_tables(c_byte_class, c_trans, c_final, c_nq, c_nc, c_start, g_byte_class, g_ncls):
    """Every cover automaton's edges in one grammar's byte classes, the search input of
    :func:`survival_search` (padded tables ``c_trans[k, :c_nq[k], :c_nc[k]]``), as one int64 array
    (one kernel argument): a header of where each part starts (and where the last ends), then
    ``offsets`` (``(K + 1) x 6``, flat), ``edge_ptr``, ``edge_to``, ``edge_final``, ``edge_cls_ptr``,
    ``edge_cls``, ``first`` and ``boundary``; cover ``k``'s part of each starts at ``offsets[k, T_*]``
    (row ``K`` holds the totals). Read it with :func:`table_views`.

    Per cover: edges are one per cover state and cover class with a target, grouped by state
    (``edge_ptr``, ``edge_to``, ``edge_final``: the target's finality); each lists the grammar
    classes its bytes touch, sorted (``edge_cls_ptr``, ``edge_cls``); ``first`` are those of the
    start's edges (sorted, distinct); ``boundary`` marks the final states with the start's
    transitions. Sized in a first pass and written in a second, into the one array.
    """
    nk = c_start.shape[0]
    kmax = 1
    for k in range(nk):
        kmax = max(kmax, c_nc[k])
    touch = np.zeros((nk, kmax, g_ncls), dtype=np.uint8)  # (per cover, made once for both passes)
    n_touch = np.zeros((nk, kmax), dtype=np.int64)
    starts = np.zeros(g_ncls, dtype=np.uint8)
    off = np.zeros((nk + 1, 6), dtype=np.int64)
    for k in range(nk):  # sizes
        nq, kc = c_nq[k], c_nc[k]
        _touch(c_byte_class[k], kc, g_byte_class, g_ncls, touch[k], n_touch[k])
        ne = 0
        nc = 0
        starts[:] = 0
        for q in range(nq):
            for c in range(kc):
                if c_trans[k, q, c] >= 0:
                    ne += 1
                    nc += n_touch[k, c]
                    if q == c_start[k]:
                        for g in range(g_ncls):
                            if touch[k, c, g]:
                                starts[g] = 1
        nf = 0
        for g in range(g_ncls):
            nf += starts[g]
        off[k + 1, T_PTR] = off[k, T_PTR] + nq + 1
        off[k + 1, T_EDGE] = off[k, T_EDGE] + ne
        off[k + 1, T_CLS_PTR] = off[k, T_CLS_PTR] + ne + 1
        off[k + 1, T_CLS] = off[k, T_CLS] + nc
        off[k + 1, T_FIRST] = off[k, T_FIRST] + nf
        off[k + 1, T_STATE] = off[k, T_STATE] + nq
    sizes = (6 * (nk + 1), off[nk, T_PTR], off[nk, T_EDGE], off[nk, T_EDGE], off[nk, T_CLS_PTR],
             off[nk, T_CLS], off[nk, T_FIRST], off[nk, T_STATE])
    head = 9
    total = head
    for x in sizes:
        total += x
    out = np.empty(total, dtype=np.int64)
    pos = head
    for j in range(8):
        out[j] = pos
        pos += sizes[j]
    out[8] = pos
    out[out[0]:out[1]] = off.reshape(-1)
    for k in range(nk):  # contents
        nq, kc = c_nq[k], c_nc[k]
        edge_ptr = out[out[1] + off[k, T_PTR]:]
        edge_to = out[out[2] + off[k, T_EDGE]:]
        edge_final = out[out[3] + off[k, T_EDGE]:]
        edge_cls_ptr = out[out[4] + off[k, T_CLS_PTR]:]
        edge_cls = out[out[5] + off[k, T_CLS]:]
        first = out[out[6] + off[k, T_FIRST]:]
        boundary = out[out[7] + off[k, T_STATE]:]
        e = 0
        n = 0
        edge_ptr[0] = 0
        edge_cls_ptr[0] = 0
        starts[:] = 0
        for q in range(nq):
            for c in range(kc):
                t = c_trans[k, q, c]
                if t < 0:
                    continue
                edge_to[e] = t
                edge_final[e] = c_final[k, t]
                for g in range(g_ncls):
                    if touch[k, c, g]:
                        edge_cls[n] = g
                        n += 1
                        if q == c_start[k]:
                            starts[g] = 1
                e += 1
                edge_cls_ptr[e] = n
            edge_ptr[q + 1] = e
        nf = 0
        for g in range(g_ncls):
            if starts[g]:
                first[nf] = g
                nf += 1
        for q in range(nq):
            same = c_final[k, q] != 0
            if same:
                for c in range(kc):
                    if c_trans[k, q, c] != c_trans[k, c_start[k], c]:
                        same = False
                        break
            boundary[q] = 1 if same else 0
    return out


@njit(nogil=True, cache=True)
def plan_tables(c_byte_class, c_trans, c_final, c_nq, c_nc, c_start, g_byte_class, g_ncls, g_nstates):
    """A grammar's walk-plan arrays in one call: :func:`cover_tables`, and per cover and grammar
    state the survival depth proved so far (``lower``, int16, depth + 1, 0: none) and searched
    (``memo``, int32, depth - ``UNKNOWN_DEPTH``, 0: not yet), zeros. (Two numpy calls from Python
    cost a grammar's first mask ~15 µs, cold; numba's zeros are written, numpy's come from the OS
    untouched: a grammar of more than ``LAZY_ZEROS`` states gets numpy's, see
    :meth:`logitgate.engine.slices.SliceSet.plan_arrays`.)"""
    nk = c_start.shape[0]
    n = g_nstates if g_nstates <= LAZY_ZEROS else 0
    lower = np.zeros((nk, n), dtype=np.int16)
    memo = np.zeros((nk, n), dtype=np.int32)
    tables = cover_tables(c_byte_class, c_trans, c_final, c_nq, c_nc, c_start, g_byte_class, g_ncls)
    return tables, lower, memo


@njit(nogil=True, cache=True)
def table_views(tables):
    """``(offsets, edge_ptr, edge_to, edge_final, edge_cls_ptr, edge_cls, first, boundary)``: views
    of :func:`cover_tables`'s array (cover ``k``'s part of each array starts at ``offsets[k, T_*]``)."""
    off = tables[tables[0]:tables[1]]
    return (off.reshape((off.shape[0] // 6, 6)), tables[tables[1]:tables[2]], tables[tables[2]:tables[3]],
            tables[tables[3]:tables[4]], tables[tables[4]:tables[5]], tables[tables[5]:tables[6]],
            tables[tables[6]:tables[7]], tables[tables[7]:tables[8]])


@njit(nogil=True, cache=True)
def _quick_depth(k, s, trans, ncls, chain_ptr, chain_target, off, first, limit, lower, memo):
    """Cover ``k``'s survival depth of ``s`` when known without a search, else ``UNKNOWN_DEPTH``."""
    if dies_at_once(s, trans, ncls, chain_ptr, chain_target, first[off[k, T_FIRST]:off[k + 1, T_FIRST]]):
        return 0
    known = lower[k, s]  # (depth + 1)
    if known > limit:
        return DEPTH_INF if known == LOWER_INF else np.int64(known) - 1
    return np.int64(memo[k, s]) + UNKNOWN_DEPTH


@njit(nogil=True, cache=True)
def cover_depth(k, state, trans, ncls, chain_ptr, chain_target, c_start, c_limit, off, edge_ptr, edge_to,
                edge_final, edge_cls_ptr, edge_cls, first, boundary, lower, memo, max_pairs):
    """Cover ``k``'s survival depth of ``state`` (``DEPTH_INF``: everything survives), searched unless
    known (see :func:`logitgate.engine.slices.SliceSet.survival_depth`); searches are remembered in
    ``memo[k]`` and the bounds they prove in ``lower[k]``.

    A state with at most ``MAX_ENTRIES_TRIED`` call chains first looks at the rules its chains
    enter: one member of a state set surviving a string is enough, so the state survives at least
    as deep as each of them, and one that survives everything, or as deep as the limit, answers for
    it (a depth at or above the limit decides the same slices: see
    :meth:`logitgate.engine.slices.SliceSet.survival_depth`). Their depths are found the same way (a
    stack, not recursion). An object's key starts all enter its "other key" rule: its search is
    made once, where each key start searched the declared names and the other keys together. So
    the search of a rule entered here may visit ``ENTRY_PAIRS_FACTOR`` times ``max_pairs`` pairs (the
    rule of any key but 80 declared names takes ~1,500 sets to reach the limit: stopped at 1,024,
    its depth fell short and every key start searched again).
    """
    limit = c_limit[k]
    r = _quick_depth(k, state, trans, ncls, chain_ptr, chain_target, off, first, limit, lower, memo)
    if r != UNKNOWN_DEPTH:
        return r
    e0, e1 = off[k, T_EDGE], off[k + 1, T_EDGE]
    q0, q1 = off[k, T_STATE], off[k + 1, T_STATE]
    stack_s = np.empty(64, dtype=np.int64)
    stack_j = np.empty(64, dtype=np.int64)
    stack_s[0], stack_j[0] = state, chain_ptr[state]
    sp = 1
    while sp > 0:
        s = stack_s[sp - 1]
        j = stack_j[sp - 1]
        lo, hi = chain_ptr[s], chain_ptr[s + 1]
        result = UNKNOWN_DEPTH
        pushed = False
        if 0 < hi - lo <= MAX_ENTRIES_TRIED:
            while j < hi:
                t = chain_target[j]
                seen = t == s
                for x in range(lo, j):
                    if chain_target[x] == t:
                        seen = True
                        break
                if not seen:
                    rt = _quick_depth(k, t, trans, ncls, chain_ptr, chain_target, off, first, limit, lower, memo)
                    if rt >= limit:  # (everything, or as deep as the limit asks: decides as everything does)
                        result = rt
                        break
                    if rt == UNKNOWN_DEPTH and sp < stack_s.shape[0]:  # (deeper: the search decides)
                        stack_j[sp - 1] = j
                        stack_s[sp], stack_j[sp] = t, chain_ptr[t]
                        sp += 1
                        pushed = True
                        break
                j += 1
        if pushed:
            continue
        if result == UNKNOWN_DEPTH:
            # twice as deep as asked: the bounds it leaves for the states ahead then reach the limit
            budget = max_pairs if s == state else ENTRY_PAIRS_FACTOR * max_pairs
            h = survival_search(s, 2 * limit, budget, trans, ncls, chain_ptr, chain_target, c_start[k],
                                edge_ptr[off[k, T_PTR]:off[k + 1, T_PTR]], edge_to[e0:e1], edge_final[e0:e1],
                                edge_cls_ptr[off[k, T_CLS_PTR]:off[k + 1, T_CLS_PTR]],
                                edge_cls[off[k, T_CLS]:off[k + 1, T_CLS]], boundary[q0:q1], lower[k])
            result = DEPTH_INF if h == INFINITE else h
        memo[k, s] = result - UNKNOWN_DEPTH
        sp -= 1
    return np.int64(memo[k, state]) + UNKNOWN_DEPTH


@njit(nogil=True, cache=True)
def plan_state(state, trans, ncls, chain_ptr, chain_target, c_start, c_limit, c_wider, off, edge_ptr, edge_to,
               edge_final, edge_cls_ptr, edge_cls, first, boundary, lower, memo, max_pairs,
               s_cover, s_max, s_first, s_end, s_apart, r_ptr, r_node, r_end, r_byte, byte_class, final, take,
               starts, ends, exits):
    """Which slices ``state`` accepts whole (``take[j]``), the trie ranges of the others to walk
    (``starts``/``ends``) and, of a final state, the top-level nodes whose first byte only a pop can
    take (``exits``); returns the counts of ranges and of exits. See
    :meth:`logitgate.engine.slices.SliceSet.walk_plan`.

    Covers come widest character set first; ``c_wider[k]`` has bit ``w`` for each cover ``w`` whose
    survival of a string implies cover ``k``'s. Slice ``j`` holds strings of cover ``s_cover[j]``
    (-1: the remainder) of at most ``s_max[j]`` characters (-1: no bound); its top-level trie nodes
    are ``r_node[r_ptr[j]:r_ptr[j + 1]]`` (subtrees ending at ``r_end``, first bytes ``r_byte``).
    Of a walked slice, only the subtrees whose first byte the state can take are listed (adjacent
    ones as one range); where the state is final, the other top-level nodes are exits (a pop may
    take any byte: the walk would find just that there, at a few times the cost). Where ``r_ptr``
    has one group more than there are slices, that group is the unsliced trie of every token but
    those of the slices kept apart (``s_apart[j]``: whitespace), and a state that takes no other slice
    whole walks it instead of the slices -- and, beside it, the slices kept apart it does not take.
    """
    # the classes the state takes inside its frame: its transitions and its call chains' entries
    can = np.zeros(ncls, dtype=np.uint8)
    for x in range(chain_ptr[state] - 1, chain_ptr[state + 1]):
        t = state if x < chain_ptr[state] else chain_target[x]
        for c in range(ncls):
            if trans[t * ncls + c] >= 0:
                can[c] = 1
    nk = c_start.shape[0]
    depth = np.zeros(nk, dtype=np.int64)
    for k in range(nk):
        if _takes_not_all(can, first[off[k, T_FIRST]:off[k + 1, T_FIRST]]):
            continue  # (most states: dies at once, as :func:`dies_at_once` finds; no search, no memo)
        known = -1
        for w in range(nk):
            if (c_wider[k] >> w) & 1 and depth[w] > known:
                known = depth[w]
        if known >= c_limit[k]:  # a narrower set survives at least as deep as a wider one
            depth[k] = known
        else:
            depth[k] = cover_depth(k, state, trans, ncls, chain_ptr, chain_target, c_start, c_limit, off, edge_ptr,
                                   edge_to, edge_final, edge_cls_ptr, edge_cls, first, boundary, lower, memo, max_pairs)
    pops = final[state] != 0
    n = 0
    ne = 0
    n_sl = s_cover.shape[0]
    any_taken = False  # (of the slices the unsliced trie holds)
    for j in range(n_sl):
        c = s_cover[j]
        whole = False
        if c >= 0:
            whole = depth[c] == DEPTH_INF if s_max[j] < 0 else s_max[j] <= depth[c]
        take[j] = whole
        any_taken = any_taken or (whole and not s_apart[j])
    # no slice of the unsliced trie taken whole, and the slice set has that trie as its last group:
    # walk it (one subtree per first byte, where each slice has its own) and the slices kept apart
    unsliced = not any_taken and r_ptr.shape[0] > n_sl + 1
    for j in range(n_sl + 1 if unsliced else n_sl):
        if j < n_sl and (take[j] or s_end[j] <= s_first[j] or (unsliced and not s_apart[j])):
            continue
        last_end = -1
        for r in range(r_ptr[j], r_ptr[j + 1]):
            if can[byte_class[r_byte[r]]]:
                if r_node[r] == last_end:  # right after the previous range: extend it
                    ends[n - 1] = r_end[r]
                else:
                    starts[n] = r_node[r]
                    ends[n] = r_end[r]
                    n += 1
                last_end = r_end[r]
            elif pops:  # the first byte leaves the frame: an exit, as a walk would find it
                exits[ne] = r_node[r]
                ne += 1
    return n, ne


@njit(nogil=True, cache=True)
def plan_views(block):
    """``(take, starts, ends, exits)``: a walk plan's output buffers, the parts of one int32 array
    (``block[0]`` slices, ``block[1]`` ranges at most; see
    :meth:`logitgate.engine.slices.SliceSet.plan_buffers`)."""
    n_sl, m = block[0], block[1]
    a = 2 + n_sl
    return block[2:a], block[a:a + m], block[a + m:a + 2 * m], block[a + 2 * m:a + 3 * m]


@njit(nogil=True, cache=True)
def plan_state_packed(state, trans, flags, step, params, tables, lower, memo, take, starts, ends, exits):
    """:func:`plan_state` with its arrays passed as fewer (a kernel call pays for each argument, and
    this one is made at every state's first mask): ``trans``, ``flags`` and ``step`` (the grammar's
    step arrays: :attr:`logitgate.engine.rtn.RTN.step_pack`), ``params`` (the slice set's constants:
    :attr:`logitgate.engine.slices.SliceSet.plan_params`) and ``tables`` (:func:`cover_tables`)."""
    byte_class, ncls = step[step[0]:step[1]], step[6]
    chain_ptr, chain_target = step[step[1]:step[2]], step[step[2]:step[3]]
    p = params
    c_start, c_limit, c_wider = p[p[0]:p[1]], p[p[1]:p[2]], p[p[2]:p[3]]
    s_cover, s_max, s_first, s_end, s_apart = p[p[3]:p[4]], p[p[4]:p[5]], p[p[5]:p[6]], p[p[6]:p[7]], p[p[7]:p[8]]
    r_ptr, r_node, r_end, r_byte = p[p[8]:p[9]], p[p[9]:p[10]], p[p[10]:p[11]], p[p[11]:p[12]]
    off, edge_ptr, edge_to, edge_final, edge_cls_ptr, edge_cls, first, boundary = table_views(tables)
    return plan_state(state, trans, ncls, chain_ptr, chain_target, c_start, c_limit, c_wider, off, edge_ptr,
                      edge_to, edge_final, edge_cls_ptr, edge_cls, first, boundary, lower, memo, p[13],
                      s_cover, s_max, s_first, s_end, s_apart, r_ptr, r_node, r_end, r_byte, byte_class, flags[0],
                      take, starts, ends, exits)
