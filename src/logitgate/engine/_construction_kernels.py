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
SEPREP                        ``X (S X)*`` of the top two fragments ``X`` (below) and ``S``
CALL       rule, nullable     a call edge (plus an epsilon skip when ``nullable``)
EMBED      index              a call-free DFA given in the ``emb_*`` arrays
GOTO       label              go on in fragment ``label`` (which ends where the program ends)
LABEL      label              pop the top fragment as ``label``: its end is the program's end
=========  =================  ==========================================================

GOTO and LABEL merge a rule that is only ever the *last* thing its callers read (a tail
reference) into their automaton, written once: the labelled fragments follow the main one, each
GOTO is an epsilon edge into its label's start (patched once every label is known) and its own
end is a dead state, so nothing can follow it -- which is what a tail reference means.

An unbounded repetition loops back into its last copy (``X+`` is one copy of ``X``, not ``X X*``)
and SEPREP into its one copy of ``X``: a copy is NFA states the subset construction turns into
DFA states that minimization then merges again (``label ("." label)*`` of a hostname, ``value
("," value)*`` of a JSON array).

DFA states are sets of *important* NFA states (those with byte or call edges, and the end
state), interned in an open-addressing hash table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._automata_kernels import canonical_dfa, csr, grow, merge_equal_classes, renumber, same_run

OP_LIT, OP_SET, OP_EMPTY, OP_SEQ, OP_ALT, OP_REP, OP_CALL, OP_EMBED, OP_SEPREP, OP_GOTO, OP_LABEL = range(11)

#: status codes of :func:`build_dfa`
OK, NFA_LIMIT, DFA_LIMIT = 0, 1, 2

#: columns of ``emb_info`` (one row per embedded DFA)
EMB_STATES, EMB_CLASSES, EMB_TRANS_OFF, EMB_FINAL_OFF, EMB_MASK_OFF, EMB_START = range(6)

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


# ----------------------------------------------------------------------------- byte classes


@njit(nogil=True, cache=True)
def byte_classes(set_words, lit, nlit):
    """The coarsest byte classes refining every byte set and isolating every byte of the literals.

    ``set_words[j]`` holds set ``j`` as 4 little-endian 64-bit words (bit ``b`` = byte ``b``);
    the literals' bytes are ``lit[:nlit]``.
    Classes are numbered by their lowest byte. Returns ``(byte_class[256], mask_ptr, mask_cls, ncls)``:
    the classes of mask id ``m`` are ``mask_cls[mask_ptr[m]:mask_ptr[m + 1]]`` (ids ``0..255`` are
    single bytes, ``256 + j`` the sets).
    """
    nsets = set_words.shape[0]
    nw = (nsets + 63) // 64
    lit_used = np.zeros(256, dtype=np.uint8)
    for i in range(nlit):
        lit_used[lit[i]] = 1
    sig = np.zeros((256, nw + 1), dtype=np.uint64)  # membership bits per byte, then the literal tag
    for b in range(256):
        w, bit = b >> 6, np.uint64(b & 63)
        for j in range(nsets):
            if (set_words[j, w] >> bit) & np.uint64(1):
                sig[b, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
        if lit_used[b]:
            sig[b, nw] = np.uint64(b + 1)
    byte_class = np.full(256, -1, dtype=np.int32)
    rep = np.empty(256, dtype=np.int64)
    table = np.full(1024, -1, dtype=np.int64)  # open addressing over signature hashes: class ids
    ncls = 0
    for b in range(256):
        h = np.uint64(14695981039346656037)
        for x in range(nw + 1):
            h = (h ^ sig[b, x]) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(1023))
        while True:
            c = table[slot]
            if c < 0:
                table[slot] = ncls
                rep[ncls] = b
                byte_class[b] = ncls
                ncls += 1
                break
            if same_run(sig[rep[c]], sig[b]):
                byte_class[b] = c
                break
            slot = (slot + 1) & 1023
    ptr = np.zeros(257 + nsets, dtype=np.int64)
    for m in range(256):
        ptr[m + 1] = m + 1
    count = 0
    for j in range(nsets):
        for c in range(ncls):
            r = rep[c]
            if (set_words[j, r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
                count += 1
    cls = np.empty(256 + count, dtype=np.int32)
    for m in range(256):
        cls[m] = byte_class[m]
    k = 256
    for j in range(nsets):
        for c in range(ncls):
            r = rep[c]
            if (set_words[j, r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
                cls[k] = c
                k += 1
        ptr[257 + j] = k
    return byte_class, ptr, cls, ncls


# ----------------------------------------------------------------------------- Thompson


@njit(nogil=True, cache=True)
def _sizes(prog, emb_info, emb_trans, emb_final, limit):
    """Exact ``(states, eps, byte, call, labels)`` counts of the NFA of ``prog``; ``states > limit``
    stops early."""
    st = np.zeros((64, 4), dtype=np.int64)
    labelled = np.zeros(5, dtype=np.int64)  # the counts of the labelled fragments, and how many
    sp = 0
    pc = 0
    while pc < prog.shape[0]:
        op = prog[pc]
        if sp + 1 >= st.shape[0]:
            st = grow(st, 2 * st.shape[0], 0)
        if op == OP_LABEL:
            pc += 2
            sp -= 1
            for c in range(4):
                labelled[c] += st[sp, c]
            labelled[1] += 1  # its end into the program's end
            labelled[4] += 1
            if labelled[0] > limit:
                return labelled
            continue
        if op in (OP_SEQ, OP_ALT):
            n = prog[pc + 1]
            pc += 2
            first = sp - n
            if n == 0:
                st[sp] = 0
                first = sp
            for j in range(first + 1, sp):
                for c in range(4):
                    st[first, c] += st[j, c]
            if op == OP_SEQ:
                st[first, 1] += n - 1
            else:
                st[first, 0] += 2
                st[first, 1] += 2 * n
            sp = first + 1
        elif op == OP_REP:
            mn, mx = prog[pc + 1], prog[pc + 2]
            pc += 3
            copies = max(mn, 1) if mx < 0 else max(mx, 1)
            it = sp - 1
            if st[it, 0] * copies > limit:
                st[it, 0] = limit + 1
                return _with_labelled(st[it], labelled)
            for c in range(4):
                st[it, c] *= copies
            st[it, 0] += 2
            if mx >= 0:
                st[it, 1] += mn + 2 * (mx - mn) + 1
            else:
                st[it, 1] += 3 if mn == 0 else mn + 2
        elif op == OP_SEPREP:
            pc += 1
            for c in range(4):
                st[sp - 2, c] += st[sp - 1, c]
            st[sp - 2, 0] += 1
            st[sp - 2, 1] += 3
            sp -= 1
        else:
            st[sp] = 0
            if op == OP_LIT:
                ln = prog[pc + 2]
                st[sp, 0], st[sp, 2] = ln + 1, ln
                pc += 3
            elif op == OP_SET:
                st[sp, 0], st[sp, 2] = 2, 1
                pc += 2
            elif op == OP_EMPTY:
                st[sp, 0] = 1
                pc += 1
            elif op == OP_CALL:
                st[sp, 0], st[sp, 1], st[sp, 3] = 2, 1 if prog[pc + 2] else 0, 1
                pc += 3
            elif op == OP_GOTO:
                st[sp, 0], st[sp, 1] = 2, 1
                pc += 2
            else:  # OP_EMBED
                row = prog[pc + 1]
                pc += 2
                n, k = emb_info[row, EMB_STATES], emb_info[row, EMB_CLASSES]
                t_off, f_off = emb_info[row, EMB_TRANS_OFF], emb_info[row, EMB_FINAL_OFF]
                edges = 0
                for x in range(t_off, t_off + n * k):
                    if emb_trans[x] >= 0:
                        edges += 1
                finals = 0
                for x in range(f_off, f_off + n):
                    finals += emb_final[x]
                st[sp, 0], st[sp, 1], st[sp, 2] = n + 1, finals, edges
            sp += 1
        if st[sp - 1, 0] > limit:
            return _with_labelled(st[sp - 1], labelled)
    return _with_labelled(st[0], labelled)


@njit(nogil=True, cache=True, inline="always")
def _with_labelled(row, labelled):
    out = labelled.copy()
    for c in range(4):
        out[c] += row[c]
    return out


@njit(nogil=True, cache=True)
def thompson(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask, max_states):
    """Run ``prog`` into an NFA. Returns ``(status, n_states, start, end, eps_src, eps_dst, byte_src,
    byte_dst, byte_mask, call_src, call_dst, call_rule)``; edge arrays hold exactly the edges."""
    size = _sizes(prog, emb_info, emb_trans, emb_final, max_states)
    e0 = np.zeros(0, np.int32)
    if size[0] > max_states:
        return NFA_LIMIT, size[0], 0, 0, e0, e0, e0, e0, e0, e0, e0, e0
    es, ed = np.empty(size[1], np.int32), np.empty(size[1], np.int32)
    lab_s, lab_e = np.empty(size[4], np.int64), np.empty(size[4], np.int64)  # labelled fragments
    bs, bd, bl = np.empty(size[2], np.int32), np.empty(size[2], np.int32), np.empty(size[2], np.int32)
    cs, cd, cl = np.empty(size[3], np.int32), np.empty(size[3], np.int32), np.empty(size[3], np.int32)
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
        if op == OP_LABEL:
            k = prog[pc + 1]
            pc += 2
            sp -= 1
            lab_s[k], lab_e[k] = fs[sp, 0], fs[sp, 1]
            continue
        if op in (OP_SEQ, OP_ALT):
            n = prog[pc + 1]
            pc += 2
            first = sp - n
            if op == OP_SEQ:
                for j in range(first, sp - 1):
                    es[ne], ed[ne] = fs[j, 1], fs[j + 1, 0]
                    ne += 1
                fs[first, 1] = fs[sp - 1, 1]
                sp = first + 1
                continue
            if n == 0:
                fs[sp, 2], fs[sp, 3], fs[sp, 4], fs[sp, 5] = ns, ne, nb, nc
                first = sp
            s, e = ns, ns + 1
            ns += 2
            for j in range(first, sp):
                es[ne], ed[ne] = s, fs[j, 0]
                es[ne + 1], ed[ne + 1] = fs[j, 1], e
                ne += 2
            fs[first, 0], fs[first, 1] = s, e
            sp = first + 1
        elif op == OP_REP:
            mn, mx = prog[pc + 1], prog[pc + 2]
            pc += 3
            it = sp - 1
            copies = max(mn, 1) if mx < 0 else max(mx, 1)
            w_s, w_e, w_b, w_c = fs[it, 2], fs[it, 3], fs[it, 4], fs[it, 5]
            h_s, h_e, h_b, h_c = ns, ne, nb, nc
            starts = np.empty(copies, dtype=np.int64)
            ends = np.empty(copies, dtype=np.int64)
            starts[0], ends[0] = fs[it, 0], fs[it, 1]
            for k in range(1, copies):
                off = ns - w_s
                ns += h_s - w_s
                for x in range(w_e, h_e):
                    es[ne], ed[ne] = es[x] + off, ed[x] + off if ed[x] >= 0 else ed[x]  # (a GOTO's label)
                    ne += 1
                for x in range(w_b, h_b):
                    bs[nb], bd[nb], bl[nb] = bs[x] + off, bd[x] + off, bl[x]
                    nb += 1
                for x in range(w_c, h_c):
                    cs[nc], cd[nc], cl[nc] = cs[x] + off, cd[x] + off, cl[x]
                    nc += 1
                starts[k], ends[k] = starts[0] + off, ends[0] + off
            s = ns
            ns += 1
            cur = s
            for k in range(mn):
                es[ne], ed[ne] = cur, starts[k]
                ne += 1
                cur = ends[k]
            if mx < 0 and mn == 0:
                loop = ns
                ns += 1
                es[ne], ed[ne] = cur, loop
                es[ne + 1], ed[ne + 1] = loop, starts[0]
                es[ne + 2], ed[ne + 2] = ends[0], loop
                ne += 3
                fs[it, 0], fs[it, 1] = s, loop
            elif mx < 0:  # back into the last copy, then out
                e = ns
                ns += 1
                es[ne], ed[ne] = ends[mn - 1], starts[mn - 1]
                es[ne + 1], ed[ne + 1] = cur, e
                ne += 2
                fs[it, 0], fs[it, 1] = s, e
            else:
                e = ns
                ns += 1
                for k in range(mn, mx):
                    es[ne], ed[ne] = cur, starts[k]
                    es[ne + 1], ed[ne + 1] = cur, e
                    ne += 2
                    cur = ends[k]
                es[ne], ed[ne] = cur, e
                ne += 1
                fs[it, 0], fs[it, 1] = s, e
        elif op == OP_SEPREP:  # X (S X)*: X's end goes on to S or out; S's end back to X's start
            pc += 1
            x, sep = sp - 2, sp - 1
            e = ns
            ns += 1
            es[ne], ed[ne] = fs[x, 1], e
            es[ne + 1], ed[ne + 1] = fs[x, 1], fs[sep, 0]
            es[ne + 2], ed[ne + 2] = fs[sep, 1], fs[x, 0]
            ne += 3
            fs[x, 1] = e
            sp -= 1
        else:
            fs[sp, 2], fs[sp, 3], fs[sp, 4], fs[sp, 5] = ns, ne, nb, nc
            if op == OP_LIT:
                off, ln = prog[pc + 1], prog[pc + 2]
                pc += 3
                s = ns
                for i in range(ln):
                    bs[nb], bd[nb], bl[nb] = s + i, s + i + 1, lit_pool[off + i]
                    nb += 1
                ns += ln + 1
                fs[sp, 0], fs[sp, 1] = s, s + ln
            elif op == OP_SET:
                bs[nb], bd[nb], bl[nb] = ns, ns + 1, prog[pc + 1]
                nb += 1
                pc += 2
                fs[sp, 0], fs[sp, 1] = ns, ns + 1
                ns += 2
            elif op == OP_EMPTY:
                pc += 1
                fs[sp, 0], fs[sp, 1] = ns, ns
                ns += 1
            elif op == OP_GOTO:  # an edge to the label (patched below); the end is dead
                es[ne], ed[ne] = ns, -1 - prog[pc + 1]
                ne += 1
                pc += 2
                fs[sp, 0], fs[sp, 1] = ns, ns + 1
                ns += 2
            elif op == OP_CALL:
                cs[nc], cd[nc], cl[nc] = ns, ns + 1, prog[pc + 1]
                nc += 1
                if prog[pc + 2]:
                    es[ne], ed[ne] = ns, ns + 1
                    ne += 1
                pc += 3
                fs[sp, 0], fs[sp, 1] = ns, ns + 1
                ns += 2
            else:  # OP_EMBED
                row = prog[pc + 1]
                pc += 2
                n, k = emb_info[row, EMB_STATES], emb_info[row, EMB_CLASSES]
                t_off, f_off, m_off = emb_info[row, EMB_TRANS_OFF], emb_info[row, EMB_FINAL_OFF], emb_info[row, EMB_MASK_OFF]
                base, end = ns, ns + n
                for q in range(n):
                    for c in range(k):
                        t = emb_trans[t_off + q * k + c]
                        if t >= 0:
                            bs[nb], bd[nb], bl[nb] = base + q, base + t, emb_mask[m_off + c]
                            nb += 1
                    if emb_final[f_off + q]:
                        es[ne], ed[ne] = base + q, end
                        ne += 1
                ns = end + 1
                fs[sp, 0], fs[sp, 1] = base + emb_info[row, EMB_START], end
            sp += 1
    if lab_s.shape[0]:
        for x in range(ne):
            if ed[x] < 0:
                ed[x] = lab_s[-1 - ed[x]]
        for k in range(lab_s.shape[0]):
            es[ne], ed[ne] = lab_e[k], fs[0, 1]
            ne += 1
    return OK, ns, fs[0, 0], fs[0, 1], es, ed, bs, bd, bl, cs, cd, cl


@njit(nogil=True, cache=True)
def literal_trie_program(pool, offs, lens, base):
    """The program of the alternation of the literals ``pool[offs[i]:offs[i] + lens[i]]`` (sorted,
    distinct) as a prefix tree: ``LIT`` of each shared prefix once, then the ``ALT`` of what follows
    it (``EMPTY`` where a literal ends). Its NFA is nearly deterministic, so the subset construction
    does not carry one NFA state per literal through every step of a large alternation (a list of
    words, an enum). ``LIT`` offsets are ``base`` plus positions in ``pool``."""
    n = offs.shape[0]
    total = 0
    longest = 0
    for i in range(n):
        total += lens[i]
        longest = max(longest, lens[i])
    # sized up front (no array is rebound in the loop): a node of the tree takes at most
    # LIT + ALT + SEQ + EMPTY = 8 words, and a frame is open per byte of the longest literal
    out = np.empty(8 * (total + 1) + 8, dtype=np.int32)
    o = 0
    # frames: items lo..hi sharing their first ``depth`` bytes; next item; fragments; SEQ on close
    f_hi = np.empty(longest + 2, dtype=np.int64)
    f_depth = np.empty(longest + 2, dtype=np.int64)
    f_next = np.empty(longest + 2, dtype=np.int64)
    f_k = np.empty(longest + 2, dtype=np.int64)
    f_seq = np.empty(longest + 2, dtype=np.int64)
    sp = 0
    lo, hi, depth, seq = 0, n, 0, 0
    opening = True
    while True:
        if opening:  # push the frame (lo, hi, depth, seq)
            f_hi[sp], f_depth[sp], f_seq[sp] = hi, depth, seq
            f_next[sp], f_k[sp] = lo, 0
            if lens[lo] == depth:  # the shortest item (sorted first) ends here
                out[o] = OP_EMPTY
                o += 1
                f_next[sp], f_k[sp] = lo + 1, 1
            sp += 1
            opening = False
        f = sp - 1
        i, hi, depth = f_next[f], f_hi[f], f_depth[f]
        if i < hi:  # the next group: the items whose byte at ``depth`` is item i's
            b = pool[offs[i] + depth]
            j = i + 1
            while j < hi and pool[offs[j] + depth] == b:
                j += 1
            # their common prefix is that of the first and the last (the items are sorted)
            end = depth + 1
            last = j - 1
            while end < lens[i] and end < lens[last] and pool[offs[i] + end] == pool[offs[last] + end]:
                end += 1
            out[o], out[o + 1], out[o + 2] = OP_LIT, base + offs[i] + depth, end - depth
            o += 3
            f_next[f] = j
            f_k[f] += 1
            if j - i > 1 or lens[i] > end:
                lo, hi, depth, seq = i, j, end, 1
                opening = True
            continue
        if f_k[f] > 1:
            out[o], out[o + 1] = OP_ALT, f_k[f]
            o += 2
        if f_seq[f]:
            out[o], out[o + 1] = OP_SEQ, 2
            o += 2
        sp -= 1
        if sp == 0:
            return out[:o]


@njit(nogil=True, cache=True)
def literal_set_dfa(pool, offs, lens, byte_class, ncls):
    """The canonical minimal DFA (as :func:`._automata_kernels.canonical_dfa` gives it) of the
    literals ``pool[offs[i]:offs[i] + lens[i]]`` (sorted, distinct; every byte they use has a class
    of its own), built without an NFA: their prefix tree, then its states merged bottom-up where
    they have the same finality and the same merged children (the right languages of an acyclic
    automaton are equal exactly then), then numbered breadth-first. Linear in the literals' length.

    Returns ``(trans, final, group, nodes)``: ``group`` as from ``canonical_dfa``, ``nodes`` the
    prefix tree's size.
    """
    n = offs.shape[0]
    total = 1
    longest = 0
    for i in range(n):
        total += lens[i]
        longest = max(longest, lens[i])
    # the prefix tree, nodes in preorder (children after their parent), children as sibling lists
    child = np.full(total, -1, dtype=np.int64)  # first child
    sibling = np.full(total, -1, dtype=np.int64)  # next child of the same parent (higher byte)
    label = np.zeros(total, dtype=np.int64)  # class of the byte into the node
    fin = np.zeros(total, dtype=np.uint8)
    last = np.full(total, -1, dtype=np.int64)  # last child so far
    path = np.zeros(longest + 1, dtype=np.int64)
    nodes = 1
    for i in range(n):
        p = 0
        if i > 0:  # the prefix shared with the previous literal is in the tree already
            lim = min(lens[i], lens[i - 1])
            while p < lim and pool[offs[i] + p] == pool[offs[i - 1] + p]:
                p += 1
        for d in range(p, lens[i]):
            parent = path[d]
            v = nodes
            nodes += 1
            label[v] = byte_class[pool[offs[i] + d]]
            if last[parent] < 0:
                child[parent] = v
            else:
                sibling[last[parent]] = v
            last[parent] = v
            path[d + 1] = v
        fin[path[lens[i]]] = 1
    # bottom-up merging: canon[v] = the class of v's right language (an id in order of discovery)
    canon = np.empty(nodes, dtype=np.int64)
    rep = np.empty(nodes, dtype=np.int64)  # a node of each class
    size = 16
    while size < 2 * nodes:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    n_cls = 0
    for v in range(nodes - 1, -1, -1):
        h = np.uint64(fin[v] + 1) * _FNV_PRIME
        c = child[v]
        while c >= 0:
            h = (h ^ np.uint64(label[c] * 1000003 + canon[c])) * _FNV_PRIME
            c = sibling[c]
        slot = h & mask
        while True:
            u = table[slot]
            if u < 0:
                table[slot] = n_cls
                rep[n_cls] = v
                canon[v] = n_cls
                n_cls += 1
                break
            r = rep[u]
            same = fin[r] == fin[v]
            a, b = child[r], child[v]
            while same and a >= 0 and b >= 0:
                same = label[a] == label[b] and canon[a] == canon[b]
                a, b = sibling[a], sibling[b]
            if same and a < 0 and b < 0:
                canon[v] = u
                break
            slot = (slot + np.uint64(1)) & mask
    trans = np.full((n_cls, ncls), -1, dtype=np.int32)
    final = np.zeros(n_cls, dtype=np.uint8)
    for u in range(n_cls):
        r = rep[u]
        final[u] = fin[r]
        c = child[r]
        while c >= 0:
            trans[u, label[c]] = canon[c]
            c = sibling[c]
    no_calls = np.zeros(0, dtype=np.int32)
    t1, f1, _, _, _ = renumber(trans, final, no_calls, no_calls, no_calls, np.zeros(0, dtype=np.uint8), canon[0])
    t1, group = merge_equal_classes(t1)
    return t1, f1, group, nodes


# ----------------------------------------------------------------------------- subset construction


@njit(nogil=True, cache=True, inline="always")
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
    _sort_small(out[:n])
    return n


@njit(nogil=True, cache=True, inline="always")
def _sort_small(a):
    """Sort in place: insertion sort for the short runs subset construction sorts by the thousand
    (numba's general sort costs a call and setup per run), the general sort beyond."""
    n = a.shape[0]
    if n > 16:
        a.sort()
        return
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(nogil=True, cache=True, inline="always")
def _hash(a, lo, n):
    h = _FNV_OFFSET
    for i in range(lo, lo + n):
        h = (h ^ np.uint64(a[i])) * _FNV_PRIME
    return h


@njit(nogil=True, cache=True, inline="always")
def _find(buf, n, h, data, ptr, hashes, table):
    """``(id, slot)`` of the state set ``buf[:n]`` with hash ``h``: id -1 and a free slot if it is new.

    Set ``i`` is ``data[ptr[i]:ptr[i + 1]]``; ``table`` is open addressing holding id + 1 (0 = free).
    """
    mask = table.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while True:
        j = table[slot] - 1
        if j < 0:
            return -1, slot
        if hashes[j] == h and ptr[j + 1] - ptr[j] == n and same_run(data[ptr[j]:ptr[j] + n], buf[:n]):
            return j, slot
        slot = (slot + 1) & mask


@njit(nogil=True, cache=True)
def _rehash(hashes, count, size):
    table = np.zeros(size, dtype=np.int64)
    mask = size - 1
    for i in range(count):
        s = np.int64(hashes[i] & np.uint64(mask))
        while table[s] != 0:
            s = (s + 1) & mask
        table[s] = i + 1
    return table


@njit(nogil=True, cache=True)
def build_dfa(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask, mask_ptr, mask_cls, ncls,
              max_nfa_states, max_dfa_states):
    """Thompson construction of ``prog`` plus subset construction (see the module docstring).

    Returns ``(status, nfa_states, trans[n, ncls], final[n], call_src, call_rule, call_dst)``;
    state 0 is the start; call edges are sorted by source, then rule.

    (Arrays grow only between loops, never inside one: numba keeps a loop's arrays in registers
    only when the loop does not rebind them -- a rebinding inside, even one never executed, made
    such loops several times slower.)
    """
    st, ns, start, end, es, ed, bs, bd, bl, cs, cd, cl = thompson(prog, lit_pool, emb_info, emb_trans, emb_final,
                                                                  emb_mask, max_nfa_states)
    empty_i32 = np.zeros(0, dtype=np.int32)
    if st != OK:
        return st, ns, np.zeros((0, ncls), np.int32), np.zeros(0, np.uint8), empty_i32, empty_i32, empty_i32
    eps_ptr, eps_dst, _ = csr(ns, es, ed, ed, es.shape[0])
    b_ptr, b_dst, b_mask = csr(ns, bs, bd, bl, bs.shape[0])
    c_ptr, c_dst, c_rule = csr(ns, cs, cd, cl, cs.shape[0])
    important = np.zeros(ns, dtype=np.uint8)
    pair_cnt = np.zeros(ns, dtype=np.int64)  # (class, target) pairs an NFA state's byte edges give
    n_imp = 1
    for q in range(ns):
        for e in range(b_ptr[q], b_ptr[q + 1]):
            m = b_mask[e]
            pair_cnt[q] += mask_ptr[m + 1] - mask_ptr[m]
        if b_ptr[q + 1] > b_ptr[q] or c_ptr[q + 1] > c_ptr[q]:
            important[q] = 1
            n_imp += 1
    important[end] = 1

    stamp = np.zeros(ns, dtype=np.int64)
    single_id = np.full(ns, -1, dtype=np.int64)  # DFA state of the closure of one NFA state, once known
    mark = 0
    stack = np.empty(ns, dtype=np.int64)
    buf = np.empty(ns, dtype=np.int32)
    # interned state sets
    data = np.empty(max(256, 4 * ns), dtype=np.int32)
    ptr = np.zeros(64, dtype=np.int64)
    hashes = np.zeros(64, dtype=np.uint64)
    table = np.zeros(256, dtype=np.int64)
    trans = np.full((64, ncls), -1, dtype=np.int32)
    final = np.zeros(64, dtype=np.uint8)
    c_src_o = np.empty(16, np.int32)
    c_rule_o = np.empty(16, np.int32)
    c_dst_o = np.empty(16, np.int32)
    n_calls = 0
    # per-state scratch. A *group* is a target list to close and intern: one per distinct list of a
    # class (classes with equal lists share one), one per called rule.
    pc_cls = np.empty(64, dtype=np.int32)
    pc_tgt = np.empty(64, dtype=np.int32)
    cls_cnt = np.zeros(ncls + 1, dtype=np.int64)
    fill = np.zeros(ncls, dtype=np.int64)
    grouped = np.empty(64, dtype=np.int32)  # target lists, class by class, then rule by rule
    g_start = np.empty(ncls + 8, dtype=np.int64)
    g_len = np.empty(ncls + 8, dtype=np.int64)
    g_hash = np.empty(ncls + 8, dtype=np.uint64)
    g_id = np.empty(ncls + 8, dtype=np.int64)
    g_rule = np.empty(ncls + 8, dtype=np.int64)  # -1 for class groups
    cls_group = np.empty(ncls, dtype=np.int64)
    touched = np.empty(ncls, dtype=np.int64)
    rules = np.empty(16, dtype=np.int32)
    r_tg = np.empty(16, dtype=np.int32)

    count = 0
    i = -1  # the state whose successors are being built; -1: the start state itself
    while i < count:
        n_groups = 0
        nt = 0  # classes the state reads: touched[:nt]
        if i < 0:
            grouped[0] = start
            g_start[0], g_len[0], g_rule[0] = 0, 1, -1
            n_groups = 1
        else:
            if i >= trans.shape[0]:
                trans = grow(trans, 2 * trans.shape[0], -1)
                final = grow(final, 2 * final.shape[0], 0)
            lo, hi = ptr[i], ptr[i + 1]
            need = 0
            ncall_pairs = 0
            for x in range(lo, hi):
                q = data[x]
                need += pair_cnt[q]
                ncall_pairs += c_ptr[q + 1] - c_ptr[q]
            if need > pc_cls.shape[0]:
                pc_cls = np.empty(2 * need, dtype=np.int32)
                pc_tgt = np.empty(2 * need, dtype=np.int32)
            if need + ncall_pairs > grouped.shape[0]:
                grouped = np.empty(2 * (need + ncall_pairs), dtype=np.int32)
            if ncls + ncall_pairs > g_start.shape[0]:
                size = 2 * (ncls + ncall_pairs)
                g_start = np.empty(size, dtype=np.int64)
                g_len = np.empty(size, dtype=np.int64)
                g_hash = np.empty(size, dtype=np.uint64)
                g_id = np.empty(size, dtype=np.int64)
                g_rule = np.empty(size, dtype=np.int64)
            if ncall_pairs > rules.shape[0]:
                rules = np.empty(2 * ncall_pairs, dtype=np.int32)
                r_tg = np.empty(2 * ncall_pairs, dtype=np.int32)
            npairs = 0
            for x in range(lo, hi):
                q = data[x]
                if q == end:
                    final[i] = 1
                for e in range(b_ptr[q], b_ptr[q + 1]):
                    m = b_mask[e]
                    t = b_dst[e]
                    for j in range(mask_ptr[m], mask_ptr[m + 1]):
                        pc_cls[npairs] = mask_cls[j]
                        pc_tgt[npairs] = t
                        npairs += 1
            # targets grouped by class: a counting sort over the classes present (a state reads a
            # few of the program's classes; no pass over all of them)
            for j in range(npairs):
                c = pc_cls[j]
                if cls_cnt[c] == 0:
                    touched[nt] = c
                    nt += 1
                cls_cnt[c] += 1
            _sort_small(touched[:nt])
            a = 0
            for x in range(nt):
                c = touched[x]
                fill[c] = a
                a += cls_cnt[c]
            for j in range(npairs):
                c = pc_cls[j]
                grouped[fill[c]] = pc_tgt[j]
                fill[c] += 1
            for x in range(nt):
                c = touched[x]
                b = fill[c]
                a = b - cls_cnt[c]
                cls_cnt[c] = 0  # (zero again for the next state)
                cls_group[c] = -1
                seg = grouped[a:b]
                _sort_small(seg)
                k = 1
                for j in range(1, b - a):
                    if seg[j] != seg[k - 1]:
                        seg[k] = seg[j]
                        k += 1
                h = _hash(grouped, a, k)
                for u in range(n_groups):  # a class with the same target list as an earlier one
                    if g_hash[u] == h and g_len[u] == k and same_run(grouped[g_start[u]:g_start[u] + k], seg[:k]):
                        cls_group[c] = u
                        break
                if cls_group[c] < 0:
                    g_start[n_groups], g_len[n_groups], g_hash[n_groups], g_rule[n_groups] = a, k, h, -1
                    cls_group[c] = n_groups
                    n_groups += 1
            if ncall_pairs > 0:  # targets grouped by called rule
                base = npairs
                u = 0
                for x in range(lo, hi):
                    q = data[x]
                    for e in range(c_ptr[q], c_ptr[q + 1]):
                        rules[u] = c_rule[e]
                        r_tg[u] = c_dst[e]
                        u += 1
                order = np.argsort(rules[:ncall_pairs], kind="mergesort")
                j = 0
                while j < ncall_pairs:
                    r = rules[order[j]]
                    k = 0
                    while j < ncall_pairs and rules[order[j]] == r:
                        grouped[base + k] = r_tg[order[j]]
                        k += 1
                        j += 1
                    g_start[n_groups], g_len[n_groups], g_rule[n_groups] = base, k, r
                    n_groups += 1
                    base += k
        # close and intern every group: room for n_groups new states and calls first
        if count + n_groups + 2 > ptr.shape[0]:
            ptr = grow(ptr, 2 * (count + n_groups + 2), 0)
            hashes = grow(hashes, 2 * (count + n_groups + 2), 0)
        if 2 * (count + n_groups) > table.shape[0]:  # keep the load under one half
            size = table.shape[0]
            while 2 * (count + n_groups) > size:
                size *= 2
            table = _rehash(hashes, count, size)
        if n_calls + n_groups > c_src_o.shape[0]:
            c_src_o = grow(c_src_o, 2 * (n_calls + n_groups), 0)
            c_rule_o = grow(c_rule_o, 2 * (n_calls + n_groups), 0)
            c_dst_o = grow(c_dst_o, 2 * (n_calls + n_groups), 0)
        u = 0
        while u < n_groups:
            if ptr[count] + n_imp > data.shape[0]:  # room for one more closure
                data = grow(data, 2 * (ptr[count] + n_imp), 0)
            while u < n_groups and ptr[count] + n_imp <= data.shape[0]:
                single = grouped[g_start[u]] if g_len[u] == 1 else -1
                tid = single_id[single] if single >= 0 else -1
                if tid < 0:
                    mark += 1
                    n = _closure(grouped[g_start[u]:g_start[u] + g_len[u]], g_len[u], eps_ptr, eps_dst, important,
                                 stamp, mark, stack, buf)
                    h = _hash(buf, 0, n)
                    tid, slot = _find(buf, n, h, data, ptr, hashes, table)
                    if tid < 0:
                        tid = count
                        base = ptr[count]
                        data[base:base + n] = buf[:n]
                        ptr[count + 1] = base + n
                        hashes[count] = h
                        table[slot] = count + 1
                        count += 1
                    if single >= 0:
                        single_id[single] = tid
                g_id[u] = tid
                if g_rule[u] >= 0:
                    c_src_o[n_calls] = i
                    c_rule_o[n_calls] = g_rule[u]
                    c_dst_o[n_calls] = tid
                    n_calls += 1
                u += 1
        if count > max_dfa_states:
            return DFA_LIMIT, ns, trans[:0], final[:0], empty_i32, empty_i32, empty_i32
        for x in range(nt):
            c = touched[x]
            trans[i, c] = g_id[cls_group[c]]
        i += 1
    return OK, ns, trans[:count], final[:count], c_src_o[:n_calls], c_rule_o[:n_calls], c_dst_o[:n_calls]


#: what :func:`build_reduced_dfa` does with the DFA it built
REDUCE_NONE, REDUCE_TRIM, REDUCE_MINIMIZE = 0, 1, 2


@njit(nogil=True, cache=True)
def build_reduced_dfa(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask, mask_ptr, mask_cls, ncls,
                      max_nfa_states, max_dfa_states, reduce, max_minimize):
    """:func:`build_dfa`, then the DFA trimmed (``reduce`` :data:`REDUCE_TRIM`: as
    :func:`logitgate.engine.automata.trim` makes it) or minimized (:data:`REDUCE_MINIMIZE`: as
    :func:`logitgate.engine.automata.minimize`; trimmed instead when it has more than
    ``max_minimize`` states) in the same call, every call edge kept.

    Returns ``(status, nfa_states, trans, final, call_src, call_rule, call_dst, group, reduced)``:
    ``group[c]`` the merged class of class ``c`` (the identity unless minimized), ``reduced`` the
    reduction made, :data:`REDUCE_NONE` when the DFA was left as built (``reduce``
    :data:`REDUCE_NONE`, a limit, or an empty language).
    """
    status, ns, trans, final, cs, cr, cd = build_dfa(prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask,
                                                     mask_ptr, mask_cls, ncls, max_nfa_states, max_dfa_states)
    group = np.arange(ncls, dtype=np.int64)
    if status != OK or reduce == REDUCE_NONE:
        return status, ns, trans, final, cs, cr, cd, group, REDUCE_NONE
    if reduce == REDUCE_MINIMIZE and trans.shape[0] > max_minimize:
        reduce = REDUCE_TRIM
    nrules = 1
    for e in range(cr.shape[0]):
        nrules = max(nrules, cr[e] + 1)
    keep = np.ones(nrules, dtype=np.uint8)
    if reduce == REDUCE_TRIM:
        t, f, cs2, cr2, cd2 = renumber(trans, final, cs, cr, cd, keep, 0)
    else:
        t, f, cs2, cr2, cd2, group2 = canonical_dfa(trans, final, cs, cr, cd, keep, 0)
        if t.shape[0] > 0:
            group = group2
    if t.shape[0] == 0:  # (an empty language: left as built)
        return status, ns, trans, final, cs, cr, cd, np.arange(ncls, dtype=np.int64), REDUCE_NONE
    return status, ns, t, f, cs2, cr2, cd2, group, reduce


@njit(nogil=True, cache=True)
def classes_and_reduced_dfa(set_words, prog, lit_pool, nlit, emb_info, emb_trans, emb_final, emb_mask,
                            max_nfa_states, max_dfa_states, reduce, max_minimize):
    """:func:`byte_classes` of the program's sets and literals (the first ``nlit`` bytes of
    ``lit_pool``), then :func:`build_reduced_dfa` over them: one call where a determinization made
    two (a kernel call from Python pays for its arguments and, cold, for its dispatch: the first
    of a compile ~20 µs). Returns ``(status, nfa_states, trans, final, call_src, call_rule,
    call_dst, byte_class, reduced)``, ``byte_class`` the DFA's (classes merged by minimization
    applied)."""
    byte_class, mask_ptr, mask_cls, ncls = byte_classes(set_words, lit_pool, nlit)
    status, ns, t, f, cs, cr, cd, group, reduced = build_reduced_dfa(
        prog, lit_pool, emb_info, emb_trans, emb_final, emb_mask, mask_ptr, mask_cls, ncls, max_nfa_states,
        max_dfa_states, reduce, max_minimize)
    if reduced == REDUCE_MINIMIZE:
        for b in range(256):
            byte_class[b] = group[byte_class[b]]
    return status, ns, t, f, cs, cr, cd, byte_class, reduced
