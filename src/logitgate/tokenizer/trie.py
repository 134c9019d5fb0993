"""A token trie as flat numpy arrays, the shape the numba mask kernels walk.

Nodes are numbered in preorder with children in increasing byte order; node 0 is the
root (the empty prefix). For node ``n``:

* ``node_byte[n]``   the byte on the edge into ``n`` (0 for the root),
* ``node_depth[n]``  its depth (the length of the prefix it spells),
* ``node_parent[n]`` its parent (-1 for the root),
* ``node_end[n]``    one past the last node of its subtree, so skipping a subtree is
  ``n = node_end[n]``,
* ``tok_ids[tok_start[n]:tok_start[n + 1]]`` the token ids whose bytes end exactly at ``n``
  (several ids may share the same bytes).

    >>> t = TokenTrie.from_tokens([b"ab", b"a", b"b"], [0, 1, 2])
    >>> t.num_nodes, t.node_byte.tolist(), t.node_end.tolist()
    (4, [0, 97, 98, 98], [4, 3, 3, 4])
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from .._arrays import end_to_end

__all__ = ["TokenTrie"]


@numba.njit(nogil=True, cache=True)
def _build_trie(data: np.ndarray, offsets: np.ndarray):  # pragma: no cover - compiled
    """Build the preorder trie of the (sorted) byte strings ``data[offsets[i]:offsets[i+1]]``."""
    n = offsets.shape[0] - 1
    max_len = 0
    total = 1
    prev_s = 0
    prev_e = 0
    for i in range(n):
        s = offsets[i]
        e = offsets[i + 1]
        ln = e - s
        if ln > max_len:
            max_len = ln
        lcp = 0
        m = min(ln, prev_e - prev_s)
        while lcp < m and data[s + lcp] == data[prev_s + lcp]:
            lcp += 1
        total += ln - lcp
        prev_s = s
        prev_e = e
    node_byte = np.zeros(total, np.uint8)
    node_depth = np.zeros(total, np.int32)
    node_parent = np.full(total, -1, np.int32)
    tok_node = np.empty(n, np.int32)
    path = np.zeros(max_len + 1, np.int32)
    count = 1
    prev_s = 0
    prev_e = 0
    for i in range(n):
        s = offsets[i]
        e = offsets[i + 1]
        ln = e - s
        lcp = 0
        m = min(ln, prev_e - prev_s)
        while lcp < m and data[s + lcp] == data[prev_s + lcp]:
            lcp += 1
        for d in range(lcp, ln):
            node_byte[count] = data[s + d]
            node_depth[count] = d + 1
            node_parent[count] = path[d]
            path[d + 1] = count
            count += 1
        tok_node[i] = path[ln]
        prev_s = s
        prev_e = e
    node_end = np.arange(1, total + 1).astype(np.int32)
    for v in range(total - 1, 0, -1):
        p = node_parent[v]
        if node_end[v] > node_end[p]:
            node_end[p] = node_end[v]
    return node_byte, node_depth, node_parent, node_end, tok_node, max_len


@numba.njit(nogil=True, cache=True)
def _restrict_trie(node_byte, node_depth, node_parent, tok_start, tok_ids, keep_token):  # pragma: no cover
    """The trie of the tokens ``keep_token`` flags: the nodes on their paths, in the same preorder."""
    total = node_byte.shape[0]
    keep = np.zeros(total, np.uint8)
    keep[0] = 1
    for v in range(total - 1, 0, -1):  # (children come after their parent: a node's are decided first)
        if keep[v] == 0:
            for x in range(tok_start[v], tok_start[v + 1]):
                if keep_token[tok_ids[x]]:
                    keep[v] = 1
        if keep[v]:
            keep[node_parent[v]] = 1
    new_id = np.full(total, -1, np.int32)
    count = 0
    max_len = 0
    for v in range(total):
        if keep[v]:
            new_id[v] = count
            count += 1
            if node_depth[v] > max_len:
                max_len = node_depth[v]
    out_byte = np.zeros(count, np.uint8)
    out_depth = np.zeros(count, np.int32)
    out_parent = np.full(count, -1, np.int32)
    out_start = np.zeros(count + 1, np.int32)
    out_ids = np.empty(tok_ids.shape[0], np.int32)
    k = 0
    for v in range(total):
        w = new_id[v]
        if w < 0:
            continue
        out_byte[w] = node_byte[v]
        out_depth[w] = node_depth[v]
        if v > 0:
            out_parent[w] = new_id[node_parent[v]]
        out_start[w] = k
        for x in range(tok_start[v], tok_start[v + 1]):
            if keep_token[tok_ids[x]]:
                out_ids[k] = tok_ids[x]
                k += 1
    out_start[count] = k
    out_end = np.arange(1, count + 1).astype(np.int32)
    for v in range(count - 1, 0, -1):
        p = out_parent[v]
        if out_end[v] > out_end[p]:
            out_end[p] = out_end[v]
    return out_byte, out_depth, out_parent, out_end, out_start, out_ids[:k].copy(), max_len


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """Flat-array trie over token byte strings (see the module docstring for the layout)."""

    node_byte: np.ndarray
    node_depth: np.ndarray
    node_parent: np.ndarray
    node_end: np.ndarray
    tok_start: np.ndarray
    tok_ids: np.ndarray
    max_depth: int

    @property
    def num_nodes(self) -> int:
        return int(self.node_byte.shape[0])

    @property
    def num_tokens(self) -> int:
        return int(self.tok_ids.shape[0])

    @classmethod
    def from_tokens(cls, token_bytes: Sequence[bytes], ids: Sequence[int] | np.ndarray) -> TokenTrie:
        """Build the trie of ``token_bytes[i]`` labelled ``ids[i]``; empty byte strings are skipped."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(token_bytes) != ids.shape[0]:
            raise ValueError(f"TokenTrie.from_tokens: {len(token_bytes)} byte strings but {ids.shape[0]} ids")
        order = sorted((i for i in range(len(token_bytes)) if token_bytes[i]),
                       key=lambda i: (token_bytes[i], ids[i]))
        sorted_bytes = [token_bytes[i] for i in order]
        lengths = np.fromiter((len(b) for b in sorted_bytes), dtype=np.int64, count=len(sorted_bytes))
        offsets = np.zeros(len(sorted_bytes) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(sorted_bytes), dtype=np.uint8)
        if data.shape[0] == 0:  # (read-only, as the bytes above: one argument type, one compile of the kernel)
            data = np.frombuffer(b"\0", dtype=np.uint8)
        node_byte, node_depth, node_parent, node_end, tok_node, max_len = _build_trie(data, offsets)
        counts = np.bincount(tok_node, minlength=node_byte.shape[0])
        tok_start = np.zeros(node_byte.shape[0] + 1, dtype=np.int32)
        np.cumsum(counts, out=tok_start[1:])
        # tok_node is non-decreasing in preorder because the strings are sorted, so the
        # ids come out grouped by node already.
        tok_ids = ids[np.asarray(order, dtype=np.int64)].astype(np.int32) if order else np.zeros(0, np.int32)
        return cls(node_byte, node_depth, node_parent, node_end, tok_start, tok_ids, int(max_len))

    def restricted_to(self, keep_token: np.ndarray) -> TokenTrie:
        """The trie of this one's tokens whose ids ``keep_token`` (a boolean array over ids) flags, in
        the same preorder (what :meth:`from_tokens` would build from them, without sorting again).

            >>> t = TokenTrie.from_tokens([b"ab", b"a", b"b"], [0, 1, 2])
            >>> r = t.restricted_to(np.array([True, False, True]))
            >>> r.node_byte.tolist(), r.tok_ids.tolist()
            ([0, 97, 98, 98], [0, 2])
        """
        keep = np.asarray(keep_token, dtype=np.bool_)
        byte, depth, parent, end, start, ids, max_len = _restrict_trie(
            self.node_byte, self.node_depth, self.node_parent, self.tok_start, self.tok_ids, keep)
        return TokenTrie(byte, depth, parent, end, start, ids, int(max_len))

    @classmethod
    def concat(cls, tries: Sequence[TokenTrie]) -> tuple[TokenTrie, np.ndarray]:
        """The tries laid end to end as one array set, and each one's root node in it.

        Walks stay inside a subtree, so node ``r + 1 : r + n`` of the result (``r`` a root,
        ``n`` that trie's node count) is exactly the old trie ``1 : n``.
        """
        roots = np.zeros(len(tries), dtype=np.int64)
        node_end, node_parent, tok_start = [], [], []
        nodes = toks = 0
        for k, t in enumerate(tries):
            roots[k] = nodes
            node_end.append(t.node_end + nodes)
            node_parent.append(np.where(t.node_parent >= 0, t.node_parent + nodes, -1))
            tok_start.append(t.tok_start[:-1] + toks)
            nodes += t.num_nodes
            toks += t.num_tokens

        def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

        return cls(
            node_byte=cat([t.node_byte for t in tries], np.uint8),
            node_depth=cat([t.node_depth for t in tries], np.int32),
            node_parent=cat(node_parent, np.int32),
            node_end=cat(node_end, np.int32),
            tok_start=cat([*tok_start, np.array([toks])], np.int32),
            tok_ids=cat([t.tok_ids for t in tries], np.int32),
            max_depth=max((t.max_depth for t in tries), default=0),
        ), roots

    @property
    def kids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(kid_ptr, kid_node, kid_pos, kid_byte)``: every node's children listed together, so a
        walk can pass over the children it cannot enter without touching them. Node ``n``'s children
        are ``kid_node[kid_ptr[n]:kid_ptr[n + 1]]`` (in preorder, i.e. byte order), their edge bytes
        ``kid_byte`` at the same places; ``kid_pos[c]`` is where child ``c`` is listed (-1 for a root).
        Views of :attr:`walk_pack` and :attr:`walk_bytes`.

            >>> t = TokenTrie.from_tokens([b"ab", b"a", b"b"], [0, 1, 2])
            >>> ptr, node, pos, byte = t.kids
            >>> node[ptr[0]:ptr[1]].tolist(), bytes(byte[ptr[0]:ptr[1]]), pos[3].item()
            ([1, 3], b'ab', 1)
        """
        p = self.walk_pack
        return p[p[4]:p[5]], p[p[5]:p[6]], p[p[6]:p[7]], self.walk_bytes[self.num_nodes:]

    @functools.cached_property
    def walk_pack(self) -> np.ndarray:
        """``node_depth``, ``node_end``, ``tok_start``, ``tok_ids`` and the children lists
        (:attr:`kids`: ``kid_ptr``, ``kid_node``, ``kid_pos``) end to end in one int32 array, after a
        header of where each starts (and where the last ends): one argument for a trie walk instead
        of seven."""
        n = self.num_nodes
        child = np.flatnonzero(self.node_parent >= 0)  # (in preorder: each parent's come in order)
        parent = self.node_parent[child]
        kid_node = child[np.argsort(parent, kind="stable")]
        kid_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(parent, minlength=n), out=kid_ptr[1:])
        kid_pos = np.full(n, -1, dtype=np.int64)
        kid_pos[kid_node] = np.arange(kid_node.shape[0])
        return end_to_end((self.node_depth, self.node_end, self.tok_start, self.tok_ids, kid_ptr, kid_node, kid_pos))

    @functools.cached_property
    def walk_bytes(self) -> np.ndarray:
        """``node_byte`` then ``kid_byte`` (:attr:`kids`) in one uint8 array: a walk's bytes, one
        argument."""
        p = self.walk_pack
        return np.concatenate((self.node_byte, self.node_byte[p[p[5]:p[6]]]))

    def lookup(self, data: bytes) -> int:
        """The node spelling ``data``, or -1 if no token starts with ``data`` (slow; for tests/tools)."""
        node = 0
        for b in data:
            child = node + 1
            end = int(self.node_end[node])
            while child < end and int(self.node_byte[child]) != b:
                child = int(self.node_end[child])
            if child >= end:
                return -1
            node = child
        return node

    def token_ids_at(self, node: int) -> np.ndarray:
        """Ids of the tokens whose bytes end exactly at ``node``."""
        return self.tok_ids[self.tok_start[node]:self.tok_start[node + 1]]
