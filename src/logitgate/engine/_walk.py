"""numba kernels: stepping parser configurations and walking the token trie.

Configurations
--------------
A parser configuration is a set of stacks. Each entry is a pair ``(top, parent)``:
``top`` is the RTN state of the innermost rule and ``parent`` a *frame node* id (or
``BOTTOM`` = -1 for the outermost rule, ``EXIT`` = -2 for "the unknown context" used
when computing context-independent masks). A frame node holds the return state of a
suspended caller and its own parent node. Frame nodes live in one of two arrays:
the matcher's persistent *pool* (ids ``< ARENA``) and a per-call scratch *arena*
(ids ``>= ARENA``), which walks truncate when they backtrack.

Byte step
---------
Consuming byte class ``c`` from entry ``(t, p)``: follow ``trans[t, c]``; or enter a
callee through a precomputed call chain whose target start state can consume ``c``
(pushing the chain's return states); or, if ``t`` is final, pop to the parent frame and
retry there. Popping into ``EXIT`` sets the exit flag instead.

Token-trie walks
----------------
``walk_trie`` from ``(s, EXIT)`` computes, for one state ``s`` as the top of an unknown
stack, which tokens are accepted without leaving the frame (bits set in ``accept_row``)
and at which trie nodes a path leaves the frame (``exit_nodes``): tokens below those
nodes depend on the context and are resolved by walking their subtrees again from the
real parent frame.

Error codes (returned in ``info[2]``): 1 = arena full, 2 = configuration too large,
3 = exit buffer full.
"""

from __future__ import annotations

import numpy as np
from numba import njit

ARENA = 1 << 30
BOTTOM = -1
EXIT = -2

ERR_ARENA = 1
ERR_CONFIG = 2
ERR_EXITS = 3


@njit(nogil=True, cache=True, inline="always")
def _nstate(nid, ps, as_):
    if nid >= ARENA:
        return as_[nid - ARENA]
    return ps[nid]


@njit(nogil=True, cache=True, inline="always")
def _nparent(nid, pp, ap):
    if nid >= ARENA:
        return ap[nid - ARENA]
    return pp[nid]


@njit(nogil=True, cache=True, inline="always")
def _emit(out_top, out_par, o0, o1, top, par, cap, info):
    for k in range(o0, o1):
        if out_top[k] == top and out_par[k] == par:
            return o1
    if o1 >= cap:
        info[2] = ERR_CONFIG
        return o1
    out_top[o1] = top
    out_par[o1] = par
    return o1 + 1


@njit(nogil=True, cache=True, inline="always")
def _push(ret, parent, as_, ap, acount, a_step0, info):
    """Arena node (ret, parent), reusing one made earlier in the same step."""
    n = acount[0]
    for k in range(a_step0, n):
        if as_[k] == ret and ap[k] == parent:
            return ARENA + k
    if n >= as_.shape[0]:
        info[2] = ERR_ARENA
        return parent
    as_[n] = ret
    ap[n] = parent
    acount[0] = n + 1
    return ARENA + n



@njit(nogil=True, cache=True, inline="always")
def step(
    in_top, in_par, i0, i1, c,
    trans, ncls, final, chain_ptr, chain_target, chain_push_ptr, chain_push,
    ps, pp, pd, as_, ap, acount,
    out_top, out_par, o0, work_top, work_par, info,
):
    """Consume byte class ``c`` from config entries [i0, i1); write to out[o0:]; return end.

    ``info[0]`` is set to 1 if a path popped into EXIT; ``info[1]`` is lowered to the
    smallest pool depth of a frame that was popped into (touched); ``info[2]`` error.
    """
    cap = out_top.shape[0]
    o1 = o0
    a_step0 = acount[0]
    wcap = work_top.shape[0]
    for k in range(i0, i1):
        nw = 1
        work_top[0] = in_top[k]
        work_par[0] = in_par[k]
        while nw > 0:
            nw -= 1
            t = work_top[nw]
            p = work_par[nw]
            nt = trans[t * ncls + c]
            if nt >= 0:
                o1 = _emit(out_top, out_par, o0, o1, nt, p, cap, info)
            for j in range(chain_ptr[t], chain_ptr[t + 1]):
                tgt = trans[chain_target[j] * ncls + c]
                if tgt < 0:
                    continue
                q = p
                for m in range(chain_push_ptr[j], chain_push_ptr[j + 1]):
                    q = _push(chain_push[m], q, as_, ap, acount, a_step0, info)
                o1 = _emit(out_top, out_par, o0, o1, tgt, q, cap, info)
            if final[t]:
                if p == EXIT:
                    info[0] = 1
                elif p != BOTTOM:
                    if p < ARENA and pd[p] < info[1]:
                        info[1] = pd[p]
                    if nw >= wcap:
                        info[2] = ERR_CONFIG
                        return o1
                    work_top[nw] = _nstate(p, ps, as_)
                    work_par[nw] = _nparent(p, pp, ap)
                    nw += 1
            if info[2] != 0:
                return o1
    return o1


@njit(nogil=True, cache=True, inline="always")
def _set_tokens(row, node, tok_start, tok_ids, listed, n_listed):
    """Set the bits of the tokens ending at ``node``; each whose bit was clear is appended to
    ``listed`` while it fits and counted. Returns the new count."""
    for k in range(tok_start[node], tok_start[node + 1]):
        t = tok_ids[k]
        w = t >> 5
        bit = np.int32(1) << np.int32(t & 31)
        x = row[w]
        if not x & bit:
            row[w] = x | bit
            if n_listed < listed.shape[0]:
                listed[n_listed] = t
            n_listed += 1
    return n_listed


@njit(nogil=True, cache=True, inline="always")
def _next_sibling_alive(i, pn, dead_under, byte_class, kid_ptr, kid_node, kid_pos, kid_byte, node_end):
    """The node after ``i`` (a child of ``pn``) in a walk, passing over the siblings whose byte class
    led nowhere under ``pn`` (``dead_under[c] == pn``) by their bytes alone: the next other sibling,
    or the node after ``pn``'s subtree."""
    p = kid_pos[i] + 1
    lim = kid_ptr[pn + 1]
    while p < lim and dead_under[byte_class[kid_byte[p]]] == pn:
        p += 1
    return kid_node[p] if p < lim else node_end[pn]


@njit(nogil=True, cache=True, inline="always")
def _next_sibling_stepping(i, pn, trans, row, byte_class, kid_ptr, kid_node, kid_pos, kid_byte, node_end):
    """:func:`_next_sibling_alive` for one stack taking a plain DFA step (its transitions from
    ``trans[row:]``): the next sibling whose byte has a transition."""
    p = kid_pos[i] + 1
    lim = kid_ptr[pn + 1]
    while p < lim and trans[row + byte_class[kid_byte[p]]] < 0:
        p += 1
    return kid_node[p] if p < lim else node_end[pn]


@njit(nogil=True, cache=True)
def walk_trie(
    top, par, starts, ends, n_starts, start_bytes,
    node_byte, node_depth, node_end, tok_start, tok_ids, kid_ptr, kid_node, kid_pos, kid_byte,
    byte_class, trans, ncls, final, simple, chain_ptr, chain_target, chain_push_ptr, chain_push,
    ps, pp, pd,
    accept_row, exit_nodes, cbuf_top, cbuf_par, cstart, cend, atop, as_, ap, work_top, work_par, info, listed,
):
    """Walk trie subtrees from the one-stack configuration ``(top, par)``; return the exit count.

    Each range ``starts[x]:ends[x]`` of trie nodes is walked with ``starts[x]``'s byte consumed first:
    ``1:node_end[0]`` is the whole trie, ``e:node_end[e]`` the subtree below node ``e``. When
    ``start_bytes`` has ``n_starts`` entries, they are the first bytes of the ranges (each the subtree
    of its start: a context resolution's exit nodes), read to skip a range whose byte's class is
    already known to die without touching the trie. Accepted tokens set bits in
    ``accept_row``; nodes where a path pops into ``EXIT`` are written to ``exit_nodes``.
    ``info[3]`` is set to the smallest pool depth popped into (``1 << 30`` if none). The tokens whose
    bit the walk sets go to ``listed`` too, in the order walked, while they fit; ``info[8]`` is their
    count (a row that was clear then holds exactly them: no scan of the row needed to list it).

    Context-independent masks walk the whole trie from ``(s, EXIT)``; context resolution walks the
    subtrees below exit nodes from the real parent frame.

    Below the first level, the second node in a row that leads nowhere is left for its next sibling
    found in its parent's children list (``kid_*``, see :attr:`logitgate.tokenizer.trie.TokenTrie.kids`):
    the siblings whose byte also leads nowhere are passed over there, by their bytes, without
    reading the nodes themselves (the first goes on through ``node_end``: where its next sibling
    lives, the lists cost nothing). (Reaching the next sibling through ``node_end`` reads every sibling's
    node, one after another: ``)`` has 58 children on Qwen2.5, and where few of them can follow,
    a walk from a cold cache waits for memory at each.) A byte leads nowhere when the one stack
    there takes a plain DFA step without a transition on it, or when a sibling with the same
    byte class was stepped and nothing came of it (no stack, no pop out).
    """
    acount = np.zeros(1, dtype=np.int64)
    cap = cbuf_top.shape[0]
    n_exit = 0
    n_listed = 0
    min_depth = 1 << 30
    # classes the starting configuration can do nothing with (no stack, no pop out): every node at
    # relative depth 1 is stepped from it, so a class found dead once skips the rest of its
    # subtrees (a context resolution starts at hundreds of exit nodes, most of them dead ends)
    dead_first = np.zeros(ncls, dtype=np.uint8)
    # below the first level: the parent node under which each class was found to lead nowhere, and
    # the node at each depth whose children are being walked
    dead_under = np.full(ncls, -1, dtype=np.int32)
    parent_at = np.empty(cstart.shape[0], dtype=np.int32)
    dead_depth = 0  # the depth of the node before, when it led nowhere (else 0)
    known_bytes = start_bytes.shape[0] == n_starts
    for x in range(n_starts):
        if known_bytes and dead_first[byte_class[start_bytes[x]]]:
            continue
        first = starts[x]
        end = ends[x]
        base = node_depth[first] - 1  # relative depth 0 = the starting configuration
        cbuf_top[0] = top
        cbuf_par[0] = par
        cstart[0] = 0
        cend[0] = 1
        atop[0] = 0
        i = first
        while i < end:
            d = node_depth[i] - base
            o0 = cend[d - 1]
            i0 = cstart[d - 1]
            t0 = cbuf_top[i0]
            if o0 - i0 == 1 and simple[t0]:
                # the common case, kept tight: one stack whose top can only take a plain DFA step
                nt = trans[t0 * ncls + byte_class[node_byte[i]]]
                if nt < 0:
                    if dead_depth != d or d == 1:
                        dead_depth = d
                        i = node_end[i]
                        continue
                    i = _next_sibling_stepping(i, parent_at[d - 1], trans, t0 * ncls, byte_class, kid_ptr, kid_node,
                                               kid_pos, kid_byte, node_end)
                    continue
                dead_depth = 0
                cstart[d] = o0
                cbuf_top[o0] = nt
                cbuf_par[o0] = cbuf_par[i0]
                cend[d] = o0 + 1
                atop[d] = atop[d - 1]
                n_listed = _set_tokens(accept_row, i, tok_start, tok_ids, listed, n_listed)
                parent_at[d] = i
                i += 1
                continue
            c = byte_class[node_byte[i]]
            if d == 1:
                if dead_first[c]:
                    i = node_end[i]
                    continue
            elif dead_under[c] == parent_at[d - 1]:
                i = _next_sibling_alive(i, parent_at[d - 1], dead_under, byte_class, kid_ptr, kid_node, kid_pos,
                                        kid_byte, node_end)
                continue
            acount[0] = atop[d - 1]
            cstart[d] = o0
            popped_out = False
            if o0 - i0 == 1:
                # one stack: its own transition and call chains, then the same for each frame it can
                # pop into. Written out here, not called: numba helpers taking this many arrays cost
                # more than the step itself.
                ct = t0
                cp = cbuf_par[i0]
                o1 = o0
                a_step0 = acount[0]
                while True:
                    nt = trans[ct * ncls + c]
                    if nt >= 0:
                        dup = False
                        for z in range(o0, o1):
                            if cbuf_top[z] == nt and cbuf_par[z] == cp:
                                dup = True
                                break
                        if not dup:
                            if o1 >= cap:
                                info[2] = ERR_CONFIG
                                return n_exit
                            cbuf_top[o1] = nt
                            cbuf_par[o1] = cp
                            o1 += 1
                    for j in range(chain_ptr[ct], chain_ptr[ct + 1]):
                        tgt = trans[chain_target[j] * ncls + c]
                        if tgt < 0:
                            continue
                        q = cp
                        for m in range(chain_push_ptr[j], chain_push_ptr[j + 1]):
                            r = chain_push[m]
                            k = acount[0]
                            found = -1
                            for z in range(a_step0, k):
                                if as_[z] == r and ap[z] == q:
                                    found = z
                                    break
                            if found < 0:
                                if k >= as_.shape[0]:
                                    info[2] = ERR_ARENA
                                    return n_exit
                                as_[k] = r
                                ap[k] = q
                                acount[0] = k + 1
                                found = k
                            q = ARENA + found
                        dup = False
                        for z in range(o0, o1):
                            if cbuf_top[z] == tgt and cbuf_par[z] == q:
                                dup = True
                                break
                        if not dup:
                            if o1 >= cap:
                                info[2] = ERR_CONFIG
                                return n_exit
                            cbuf_top[o1] = tgt
                            cbuf_par[o1] = q
                            o1 += 1
                    if not final[ct] or cp == BOTTOM:
                        break
                    if cp == EXIT:
                        popped_out = True
                        break
                    if cp >= ARENA:
                        ct = as_[cp - ARENA]
                        cp = ap[cp - ARENA]
                    else:
                        if pd[cp] < min_depth:
                            min_depth = pd[cp]
                        ct = ps[cp]
                        cp = pp[cp]
            else:
                info[0] = 0
                info[1] = 1 << 30
                o1 = step(
                    cbuf_top, cbuf_par, i0, o0, c,
                    trans, ncls, final, chain_ptr, chain_target, chain_push_ptr, chain_push,
                    ps, pp, pd, as_, ap, acount,
                    cbuf_top, cbuf_par, o0, work_top, work_par, info,
                )
                if info[2] != 0:
                    return n_exit
                popped_out = info[0] != 0
                if info[1] < min_depth:
                    min_depth = info[1]
            cend[d] = o1
            atop[d] = acount[0]
            if o1 == o0 and not popped_out:
                if d == 1:
                    dead_first[c] = 1
                else:
                    dead_under[c] = parent_at[d - 1]
            if popped_out:
                if n_exit >= exit_nodes.shape[0]:
                    info[2] = ERR_EXITS
                    return n_exit
                exit_nodes[n_exit] = i
                n_exit += 1
            if o1 == o0:
                if dead_depth != d or d == 1:
                    dead_depth = d
                    i = node_end[i]
                    continue
                i = _next_sibling_alive(i, parent_at[d - 1], dead_under, byte_class, kid_ptr, kid_node, kid_pos,
                                        kid_byte, node_end)
                continue
            dead_depth = 0
            n_listed = _set_tokens(accept_row, i, tok_start, tok_ids, listed, n_listed)
            parent_at[d] = i
            i += 1
    info[3] = min_depth
    info[8] = n_listed
    return n_exit


@njit(nogil=True, cache=True, inline="always")
def _step_views(pack):
    """``(byte_class, ncls, chain_ptr, chain_target, chain_push_ptr, chain_push)`` from the int32
    pack of :attr:`logitgate.engine.rtn.RTN.step_pack`."""
    return (pack[pack[0]:pack[1]], pack[6], pack[pack[1]:pack[2]], pack[pack[2]:pack[3]], pack[pack[3]:pack[4]],
            pack[pack[4]:pack[5]])


@njit(nogil=True, cache=True, inline="always")
def _scratch_views(block, a, c):
    """``(arena states, arena parents, out tops, out parents, work tops, work parents)`` from a
    parser step's scratch block (``a`` arena entries each, ``c`` configuration entries each for the
    output, six times that for each work list; the layout ``WalkScratch`` allocates)."""
    return (block[:a], block[a:2 * a], block[2 * a:2 * a + c], block[2 * a + c:2 * a + 2 * c],
            block[2 * a + 2 * c:2 * a + 8 * c], block[2 * a + 8 * c:2 * a + 14 * c])


@njit(nogil=True, cache=True)
def subtrees(nodes, node_byte, trie_pack):
    """``(ends, first bytes)`` of the trie subtrees below ``nodes``: walk ranges (``trie_pack`` as
    :func:`walk_trie_packed` takes it)."""
    node_end = trie_pack[trie_pack[1]:trie_pack[2]]
    ends = np.empty(nodes.shape[0], dtype=np.int32)
    first = np.empty(nodes.shape[0], dtype=np.uint8)
    for k in range(nodes.shape[0]):
        ends[k] = node_end[nodes[k]]
        first[k] = node_byte[nodes[k]]
    return ends, first


@njit(nogil=True, cache=True)
def walk_trie_packed(top, par, starts, ends, start_bytes, node_byte, trie_pack, trans, flags, pack, frames,
                     accept_row, exit_nodes, cbuf, cdepth, step_block, arena_cap, config_cap, info, listed):
    """:func:`walk_trie` over all of ``starts``, with its arrays passed as fewer: ``node_byte``
    (the node bytes, then the children lists' bytes: :attr:`logitgate.tokenizer.trie.TokenTrie.walk_bytes`),
    ``trie_pack`` (node depths, subtree ends, token starts and ids, the children lists, see
    :attr:`logitgate.tokenizer.trie.TokenTrie.walk_pack`), ``trans``, ``flags`` and ``pack`` (the
    automaton's step arrays, see :attr:`logitgate.engine.rtn.RTN.step_pack`),
    ``frames`` (pool rows), ``cbuf`` (configuration tops then parents), ``cdepth`` (per-depth
    starts, ends and arena tops) and the parser step's scratch block (see :func:`advance_packed`)."""
    byte_class, ncls, chain_ptr, chain_target, chain_push_ptr, chain_push = _step_views(pack)
    as_, ap, _, _, work_top, work_par = _scratch_views(step_block, arena_cap, config_cap)
    nd = cdepth.shape[0] // 3
    half = cbuf.shape[0] // 2
    return walk_trie(
        top, par, starts, ends, starts.shape[0], start_bytes,
        node_byte, trie_pack[trie_pack[0]:trie_pack[1]], trie_pack[trie_pack[1]:trie_pack[2]],
        trie_pack[trie_pack[2]:trie_pack[3]], trie_pack[trie_pack[3]:trie_pack[4]],
        trie_pack[trie_pack[4]:trie_pack[5]], trie_pack[trie_pack[5]:trie_pack[6]],
        trie_pack[trie_pack[6]:trie_pack[7]], node_byte[trie_pack[1] - trie_pack[0]:],
        byte_class, trans, ncls, flags[0], flags[1], chain_ptr, chain_target, chain_push_ptr, chain_push,
        frames[0], frames[1], frames[2],
        accept_row, exit_nodes, cbuf[:half], cbuf[half:], cdepth[:nd], cdepth[nd:2 * nd], cdepth[2 * nd:],
        as_, ap, work_top, work_par, info, listed,
    )


@njit(nogil=True, cache=True)
def advance(
    cfg_top, cfg_par, n_cfg, data,
    byte_class, trans, ncls, final, simple, dead_end, chain_ptr, chain_target, chain_push_ptr, chain_push,
    ps, pp, pd, as_, ap, out_top, out_par, work_top, work_par, info,
):
    """Consume ``data`` from a configuration; new frames go to the arena.

    Returns the number of entries of the resulting configuration (0 = rejected), which is
    left in ``out_top/out_par[0:n]``. ``work_top/work_par`` must hold at least 3 x
    ``out_top.shape[0]`` entries (pop worklist plus two ping-pong buffers).
    """
    acount = np.zeros(1, dtype=np.int64)
    cap = out_top.shape[0]
    wq = work_top.shape[0] - 2 * cap
    wt = work_top[:wq]
    wp = work_par[:wq]
    a_top = work_top[wq : wq + cap]
    a_par = work_par[wq : wq + cap]
    b_top = work_top[wq + cap :]
    b_par = work_par[wq + cap :]
    for k in range(n_cfg):
        a_top[k] = cfg_top[k]
        a_par[k] = cfg_par[k]
    n = n_cfg
    for bi in range(data.shape[0]):
        t0 = a_top[0]
        if n == 1 and simple[t0]:
            nt = trans[t0 * ncls + byte_class[data[bi]]]
            if nt < 0:
                return 0
            a_top[0] = nt
            continue
        info[0] = 0
        info[1] = 1 << 30
        n = step(
            a_top, a_par, 0, n, byte_class[data[bi]],
            trans, ncls, final, chain_ptr, chain_target, chain_push_ptr, chain_push,
            ps, pp, pd, as_, ap, acount,
            b_top, b_par, 0, wt, wp, info,
        )
        if info[2] != 0 or n == 0:
            return 0
        a_top, b_top = b_top, a_top
        a_par, b_par = b_par, a_par
    # Eagerly pop frames that can do nothing but pop (dead-end final states): the result
    # is equivalent and its top states are the callers', whose masks are shared.
    m = 0
    for k in range(n):
        t = a_top[k]
        p = a_par[k]
        while dead_end[t] and p >= 0:
            t = _nstate(p, ps, as_)
            p = _nparent(p, pp, ap)
        m = _emit(out_top, out_par, 0, m, t, p, cap, info)
    info[3] = acount[0]
    return m


@njit(nogil=True, cache=True)
def persist(out_top, out_par, n, n_arena, as_, ap, ps, pp, pd, n_pool):
    """Copy the arena frames referenced by entries ``[0, n)`` into the pool, then drop
    entries that duplicate another structurally. The pool arrays must have room for
    every arena node. Returns ``(new pool size, new entry count)``.
    """
    remap = np.full(n_arena, -1, dtype=np.int64)
    free = n_pool
    chain = np.empty(n_arena, dtype=np.int64)
    for k in range(n):
        x = out_par[k]
        nc = 0
        while x >= ARENA and remap[x - ARENA] < 0:
            chain[nc] = x - ARENA
            nc += 1
            x = ap[x - ARENA]
        base = x if x < ARENA else remap[x - ARENA]
        for j in range(nc - 1, -1, -1):
            a = chain[j]
            ps[free] = as_[a]
            pp[free] = base
            pd[free] = 1 if base < 0 else pd[base] + 1
            remap[a] = free
            base = free
            free += 1
        y = out_par[k]
        out_par[k] = y if y < ARENA else remap[y - ARENA]
    # structural de-duplication of entries
    m = 0
    for k in range(n):
        dup = False
        for j in range(m):
            if out_top[j] == out_top[k] and _same_stack(out_par[j], out_par[k], ps, pp):
                dup = True
                break
        if not dup:
            out_top[m] = out_top[k]
            out_par[m] = out_par[k]
            m += 1
    return free, m


@njit(nogil=True, cache=True)
def _same_stack(a, b, ps, pp):
    while a != b:
        if a < 0 or b < 0:
            return False
        if ps[a] != ps[b]:
            return False
        a = pp[a]
        b = pp[b]
    return True


@njit(nogil=True, cache=True)
def advance_persist(
    cfg_top, cfg_par, n_cfg, data,
    byte_class, trans, ncls, final, simple, dead_end, chain_ptr, chain_target, chain_push_ptr, chain_push,
    ps, pp, pd, n_pool, as_, ap, out_top, out_par, work_top, work_par, info,
):
    """:func:`advance` then :func:`persist` when the pool has room.

    Returns the entry count (0 = rejected). ``info[3]`` = arena nodes used; ``info[2]``
    is -1 if the pool lacked room (the caller grows it and calls :func:`persist`);
    otherwise ``info[3]`` is replaced by the new pool size and ``info[4]`` says whether the
    new configuration can end the grammar (:func:`can_end`, asked by every mask fill).
    """
    n = advance(
        cfg_top, cfg_par, n_cfg, data,
        byte_class, trans, ncls, final, simple, dead_end, chain_ptr, chain_target, chain_push_ptr, chain_push,
        ps, pp, pd, as_, ap, out_top, out_par, work_top, work_par, info,
    )
    if n == 0:
        return 0
    used = info[3]
    if n_pool + used > ps.shape[0]:
        info[2] = -1
        return n
    size, m = persist(out_top, out_par, n, used, as_, ap, ps, pp, pd, n_pool)
    info[3] = size
    info[4] = 1 if can_end(out_top, out_par, m, final, ps, pp) else 0
    return m


@njit(nogil=True, cache=True)
def advance_packed(cfg_top, cfg_par, n_cfg, data, trans, flags, pack, pool, n_pool, scratch, arena_cap,
                   config_cap, info):
    """:func:`advance_persist` with its arrays passed as fewer: ``trans``, ``flags`` and ``pack``
    (the automaton's step arrays, see :attr:`logitgate.engine.rtn.RTN.step_pack`), ``pool`` (frame states, parents and
    depths as its rows) and ``scratch`` (arena states and parents, ``arena_cap`` each, the output
    configuration, ``config_cap`` each, and the work lists, six times that each, end to end)."""
    byte_class, ncls, chain_ptr, chain_target, chain_push_ptr, chain_push = _step_views(pack)
    as_, ap, out_top, out_par, work_top, work_par = _scratch_views(scratch, arena_cap, config_cap)
    return advance_persist(
        cfg_top, cfg_par, n_cfg, data,
        byte_class, trans, ncls, flags[0], flags[1], flags[2], chain_ptr, chain_target, chain_push_ptr, chain_push,
        pool[0], pool[1], pool[2], n_pool, as_, ap, out_top, out_par, work_top, work_par, info,
    )


@njit(nogil=True, cache=True)
def set_bits(row, ids):
    for k in range(ids.shape[0]):
        t = ids[k]
        row[t >> 5] |= np.int32(1) << np.int32(t & 31)


@njit(nogil=True, cache=True)
def can_end(cfg_top, cfg_par, n, final, ps, pp):
    """True if some stack of the configuration can complete the root rule now."""
    for k in range(n):
        if not final[cfg_top[k]]:
            continue
        p = cfg_par[k]
        ok = True
        while p >= 0:
            if not final[ps[p]]:
                ok = False
                break
            p = pp[p]
        if ok:
            return True
    return False


@njit(nogil=True, cache=True)
def next_classes(
    cfg_top, cfg_par, n_cfg,
    trans, ncls, final, chain_ptr, chain_target, chain_push_ptr, chain_push,
    ps, pp, pd, as_, ap, out_top, out_par, work_top, work_par, info, out_ok,
):
    """``out_ok[c] = 1`` iff byte class ``c`` can be consumed from the configuration."""
    acount = np.zeros(1, dtype=np.int64)
    for c in range(ncls):
        acount[0] = 0
        info[0] = 0
        info[1] = 1 << 30
        info[2] = 0
        n = step(
            cfg_top, cfg_par, 0, n_cfg, c,
            trans, ncls, final, chain_ptr, chain_target, chain_push_ptr, chain_push,
            ps, pp, pd, as_, ap, acount,
            out_top, out_par, 0, work_top, work_par, info,
        )
        out_ok[c] = 1 if (n > 0 and info[2] == 0) else 0


@njit(nogil=True, cache=True)
def ends_within(start, limit, trans, ncls, final, chain_ptr, chain_push_ptr, chain_push):
    """Whether the frame of ``start``'s rule may be popped after at most ``limit`` bytes read from
    ``start`` (a lower bound on what it takes: a byte transition reads one, a call chain at least
    none -- its callees may be empty -- and goes on at the outermost return state it pushes, or
    ends the rule when it pushes none: a tail call). True when a final state is that near.
    Breadth-first by bytes read; each state is visited once, at its nearest."""
    n = final.shape[0]
    seen = np.zeros(n, dtype=np.uint8)
    cur = np.empty(n, dtype=np.int64)
    nxt = np.empty(n, dtype=np.int64)
    cur[0] = start
    seen[start] = 1
    nc = 1
    for d in range(limit + 1):
        i = 0
        while i < nc:  # (the chains' returns join this layer: read no byte)
            s = cur[i]
            i += 1
            if final[s]:
                return True
            for j in range(chain_ptr[s], chain_ptr[s + 1]):
                lo = chain_push_ptr[j]
                if lo == chain_push_ptr[j + 1]:
                    return True
                r = chain_push[lo]
                if not seen[r]:
                    seen[r] = 1
                    cur[nc] = r
                    nc += 1
        if d == limit:
            break
        nn = 0
        for i in range(nc):
            s = cur[i]
            for c in range(ncls):
                t = trans[s * ncls + c]
                if t >= 0 and not seen[t]:
                    seen[t] = 1
                    nxt[nn] = t
                    nn += 1
        for i in range(nn):
            cur[i] = nxt[i]
        nc = nn
        if nc == 0:
            break
    return False
