"""Tree decode (RTP-LLM, seed 000): hard constraints from a "prefix → candidate tokens" map.

The config is RTP-LLM's JSON file::

    {"start_token_id": 225, "end_token_id": 2, "sep": "_",
     "prefix_dict": {"225": [64000, 64003], "225_64000": [64001, 64002], "225_64000_64001": [2]}}

Semantics (the seed's ``TreeDFA``), for one sequence:

* the state is the key ``str(start) + sep + str(t0) + sep + str(t1) ...`` of the tokens generated so
  far; it starts as ``str(start_token_id)`` (the last prompt token must be the tree's root);
* the allowed tokens are ``prefix_dict[state]``; a key that is missing (or maps to an empty list)
  allows only ``end_token_id``;
* accepting an allowed token ``t`` moves to ``state + sep + str(t)``; ``end_token_id`` is always a
  valid transition (the seed accepts it even when it is not a candidate) and finishes the sequence:
  the state then freezes and later tokens are ignored, as in the seed;
* a token outside the candidates (other than ``end``) puts the sequence in a sticky error state
  that allows only ``end_token_id`` (the seed logs/raises there; logitgate keeps decoding safe).

No strings are built while decoding: the string-keyed map is compiled once into an integer trie
(numpy CSR arrays: node → sorted child tokens, node → sorted allowed ids), and a step is a binary
search or two in a numba kernel. A 1,000,000-key file loads in seconds with memory bounded by
a few arrays (``logitgate bench tree-decode``): files in the usual shape (ASCII, integer arrays)
take a vectorized path that never builds a Python object per key; anything else goes through
``json`` and gets an exact error message.

Enabling (seed): ``--tree_decode_config NAME`` or ``TREE_DECODE_CONFIG=NAME``, resolved as
``<ckpt_path>/<NAME>``; see :func:`resolve_tree_decode_config`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numba
import numpy as np

from ..errors import LogitgateError

__all__ = [
    "TREE_DECODE_ENV",
    "TreeDecodeConfig",
    "TreeDecodeConfigError",
    "TreeDecodeState",
    "add_tree_decode_argument",
    "resolve_tree_decode_config",
]

log = logging.getLogger(__name__)

TREE_DECODE_ENV = "TREE_DECODE_CONFIG"
_INT32_MAX = 2**31 - 1


class TreeDecodeConfigError(LogitgateError, ValueError):
    """A tree-decode config is malformed (the message names the file/key and what is wrong)."""


# --------------------------------------------------------------------------------------------
# numba kernels (a decoding step)
# --------------------------------------------------------------------------------------------


@numba.njit(nogil=True, cache=True)
def _find(arr, lo, hi, x):  # pragma: no cover - numba
    """Index of ``x`` in the sorted ``arr[lo:hi]``, or -1."""
    while lo < hi:
        mid = (lo + hi) >> 1
        v = arr[mid]
        if v < x:
            lo = mid + 1
        elif v > x:
            hi = mid
        else:
            return mid
    return -1


@numba.njit(nogil=True, cache=True)
def _advance(allow_ptr, allow_ids, child_ptr, child_tok, node, tok, end, sink):  # pragma: no cover
    """Next node after ``tok`` (``sink`` when the key is missing), or -1 for a token outside the candidates."""
    lo = allow_ptr[node]
    hi = allow_ptr[node + 1]
    if lo == hi:
        ok = tok == end
    else:
        ok = _find(allow_ids, lo, hi, tok) >= 0
    if not ok and tok != end:
        return -1
    e = _find(child_tok, child_ptr[node], child_ptr[node + 1], tok)
    if e < 0:
        return sink
    return e + 1  # edge i leads to node i + 1


@numba.njit(nogil=True, cache=True)
def _fill_row(row, allow_ids, lo, hi, end):  # pragma: no cover - numba
    """Write a row allowing ``allow_ids[lo:hi]`` (or only ``end`` when empty); -1 if an id does not fit."""
    nbits = row.shape[0] * 32
    row[:] = 0
    if lo == hi:
        if end >= nbits:
            return -1
        row[end >> 5] |= np.uint32(1) << np.uint32(end & 31)
        return 0
    for i in range(lo, hi):
        t = allow_ids[i]
        if t >= nbits:
            return -1
        row[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
    return 0


@numba.njit(nogil=True, cache=True)
def _restrict_row(row, allow_ids, lo, hi, end):  # pragma: no cover - numba
    """AND the allowed set into ``row`` in place (ids beyond the row are dropped)."""
    nbits = row.shape[0] * 32
    if lo == hi:
        keep_end = end < nbits and (row[end >> 5] >> np.uint32(end & 31)) & np.uint32(1)
        row[:] = 0
        if keep_end:
            row[end >> 5] |= np.uint32(1) << np.uint32(end & 31)
        return
    keep = np.zeros(hi - lo, dtype=np.bool_)
    for i in range(lo, hi):
        t = allow_ids[i]
        if t < nbits and (row[t >> 5] >> np.uint32(t & 31)) & np.uint32(1):
            keep[i - lo] = True
    row[:] = 0
    for i in range(lo, hi):
        if keep[i - lo]:
            t = allow_ids[i]
            row[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


def _u32_row(row: Any) -> np.ndarray:
    """A uint32 view of an int32 bitmask row (numpy, or a CPU torch tensor)."""
    if type(row).__module__.startswith("torch"):
        if row.device.type != "cpu":
            raise ValueError("fill_bitmask needs a CPU row; fill a host mask and copy it to the device")
        row = row.numpy()
    if not isinstance(row, np.ndarray) or row.dtype != np.int32 or row.ndim != 1:
        raise TypeError(f"a bitmask row must be a 1-D int32 array, got {type(row).__name__} "
                        f"{getattr(row, 'dtype', '')} {getattr(row, 'shape', '')}")
    if not row.flags.c_contiguous:
        raise ValueError("a bitmask row must be contiguous")
    return row.view(np.uint32)


# --------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------

_NUM_TEXT = re.compile(r"0|[1-9][0-9]*")
_TOP_KEY = re.compile(rb'[ \t\n\r]*"((?:[^"\\]|\\.)*)"[ \t\n\r]*:[ \t\n\r]*')
_SCALAR = re.compile(rb'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"(?:[^"\\]|\\.)*"|true|false|null')
_WS_RE = re.compile(rb"[ \t\n\r]*")


class _Entries:
    """Parsed prefix_dict entries as flat int32 arrays: key parts and candidate ids, both CSR by entry."""

    __slots__ = ("key_len", "key_parts", "val_len", "vals")

    def __init__(self, key_len: np.ndarray, key_parts: np.ndarray, val_len: np.ndarray, vals: np.ndarray):
        self.key_len = key_len
        self.key_parts = key_parts
        self.val_len = val_len
        self.vals = vals


# states of the prefix_dict body parser
_P_KEY_OR_CLOSE, _P_KEY, _P_KEY_NUM0, _P_KEY_NUM, _P_COLON, _P_ARR = 0, 1, 2, 3, 4, 5
_P_ARR_FIRST, _P_ARR_NUM, _P_ARR_AFTER, _P_ARR_NEXT, _P_AFTER_ENTRY = 6, 7, 8, 9, 10


@numba.njit(nogil=True, cache=True)
def _parse_body(buf, lo, hi, sep, key_len, key_parts, val_len, vals):  # pragma: no cover - numba
    """One pass over ``buf[lo:hi]`` = ``{"k": [ids], ...}``: validate and emit ids.

    Returns (status, entries, key parts, values, position): status 0 ok, 1 outside this strict
    grammar (the caller falls back to ``json`` for an exact message), 2 an id above int32 (position
    = where its digits start).
    """
    int32_max = 2147483647
    nsep = sep.shape[0]
    ne = 0
    nk = 0
    nv = 0
    if hi - lo < 2 or buf[lo] != 123:  # '{'
        return 1, 0, 0, 0, lo
    state = _P_KEY_OR_CLOSE
    val = 0
    num_start = 0
    leading_zero = False
    parts = 0
    count = 0
    i = lo + 1
    while i < hi:
        c = buf[i]
        ws = c == 32 or c == 10 or c == 13 or c == 9
        digit = 48 <= c <= 57
        if state in (_P_KEY_OR_CLOSE, _P_KEY):
            if ws:
                i += 1
                continue
            if c == 34:
                state = _P_KEY_NUM0
                parts = 0
            elif c == 125 and state == _P_KEY_OR_CLOSE:
                return (0 if i + 1 == hi else 1), ne, nk, nv, i
            else:
                return 1, ne, nk, nv, i
        elif state in (_P_KEY_NUM0, _P_ARR_FIRST, _P_ARR_NEXT):
            if ws and state != _P_KEY_NUM0:
                i += 1
                continue
            if digit:
                val = c - 48
                leading_zero = c == 48
                num_start = i
                state = _P_KEY_NUM if state == _P_KEY_NUM0 else _P_ARR_NUM
            elif c == 93 and state == _P_ARR_FIRST:  # ']': empty list
                if ne >= val_len.shape[0]:
                    return 1, ne, nk, nv, i
                val_len[ne] = 0
                ne += 1
                state = _P_AFTER_ENTRY
            else:
                return 1, ne, nk, nv, i
        elif state in (_P_KEY_NUM, _P_ARR_NUM):
            if digit:
                if leading_zero:
                    return 1, ne, nk, nv, i
                val = val * 10 + (c - 48)
                if val > int32_max:
                    return 2, ne, nk, nv, num_start
                i += 1
                continue
            if state == _P_KEY_NUM:
                if c == 34 or (c == sep[0] and i + nsep <= hi):
                    if c != 34:
                        for j in range(1, nsep):
                            if buf[i + j] != sep[j]:
                                return 1, ne, nk, nv, i
                    if nk >= key_parts.shape[0]:
                        return 1, ne, nk, nv, i
                    key_parts[nk] = val
                    nk += 1
                    parts += 1
                    if c == 34:
                        if ne >= key_len.shape[0]:
                            return 1, ne, nk, nv, i
                        key_len[ne] = parts
                        state = _P_COLON
                    else:
                        state = _P_KEY_NUM0
                        i += nsep
                        continue
                else:
                    return 1, ne, nk, nv, i
            else:
                if nv >= vals.shape[0]:
                    return 1, ne, nk, nv, i
                vals[nv] = val
                nv += 1
                count += 1
                state = _P_ARR_AFTER
                continue  # re-read c in _P_ARR_AFTER
        elif state == _P_COLON:
            if ws:
                i += 1
                continue
            if c != 58:  # ':'
                return 1, ne, nk, nv, i
            state = _P_ARR
        elif state == _P_ARR:
            if ws:
                i += 1
                continue
            if c != 91:  # '['
                return 1, ne, nk, nv, i
            state = _P_ARR_FIRST
            count = 0
        elif state == _P_ARR_AFTER:
            if ws:
                i += 1
                continue
            if c == 44:
                state = _P_ARR_NEXT
            elif c == 93:
                val_len[ne] = count
                ne += 1
                state = _P_AFTER_ENTRY
            else:
                return 1, ne, nk, nv, i
        else:  # _P_AFTER_ENTRY
            if ws:
                i += 1
                continue
            if c == 44:
                state = _P_KEY
            elif c == 125:
                return (0 if i + 1 == hi else 1), ne, nk, nv, i
            else:
                return 1, ne, nk, nv, i
        i += 1
    return 1, ne, nk, nv, i


def _parse_body_fast(data: bytes, lo: int, hi: int, sep: str, source: str) -> _Entries | None:
    """Parse ``data[lo:hi]`` (the prefix_dict object) in one numba pass; None if it needs the json path."""
    sep_b = sep.encode("utf-8")
    if not sep_b or any(b in b'"\\0123456789' or b in b" \t\n\r" for b in sep_b):
        return None
    n_entries = data.count(b'"', lo, hi) // 2 + 1
    key_len = np.empty(n_entries, dtype=np.int32)
    val_len = np.empty(n_entries, dtype=np.int32)
    key_parts = np.empty(n_entries + data.count(sep_b, lo, hi), dtype=np.int32)
    vals = np.empty(n_entries + data.count(b",", lo, hi), dtype=np.int32)
    buf = np.frombuffer(data, dtype=np.uint8)
    status, ne, nk, nv, pos = _parse_body(buf, lo, hi, np.frombuffer(sep_b, dtype=np.uint8),
                                          key_len, key_parts, val_len, vals)
    if status == 2:
        m = re.compile(rb"[0-9]+").match(data, pos)
        text = m.group().decode() if m else "?"
        raise TreeDecodeConfigError(f"{source}: token id {text} in prefix_dict is out of the int32 range")
    if status != 0:
        return None
    return _Entries(key_len[:ne], key_parts[:nk], val_len[:ne], vals[:nv])


def _scan_top_level(data: bytes) -> tuple[dict[str, Any], tuple[int, int]] | None:
    """Read the top-level object's scalar members; return them and the span of prefix_dict.

    None when the file is not in the simple shape (then the ``json`` path explains any problem).
    """
    members: dict[str, Any] = {}
    span: tuple[int, int] | None = None
    pos = _WS_RE.match(data, 0).end()
    if data[pos:pos + 1] != b"{":
        return None
    pos = _WS_RE.match(data, pos + 1).end()
    if data[pos:pos + 1] == b"}":
        return None  # no prefix_dict
    while True:
        m = _TOP_KEY.match(data, pos)
        if m is None:
            return None
        key = json.loads(b'"' + m.group(1) + b'"')
        pos = m.end()
        if key == "prefix_dict":
            if data[pos:pos + 1] != b"{":
                return None
            close = data.find(b"}", pos)
            if close < 0:
                return None
            span = (pos, close + 1)
            members.pop(key, None)
            pos = close + 1
        else:
            v = _SCALAR.match(data, pos)
            if v is None:
                return None  # a nested value: leave it to json
            members[key] = json.loads(v.group())
            pos = v.end()
            if key == "prefix_dict":
                span = None
        pos = _WS_RE.match(data, pos).end()
        c = data[pos:pos + 1]
        if c == b",":
            pos = _WS_RE.match(data, pos + 1).end()
            continue
        if c == b"}":
            break
        return None
    if _WS_RE.match(data, pos + 1).end() != len(data) or span is None:
        return None
    return members, span


def _check_header(d: Mapping[str, Any], source: str) -> tuple[int, int, str]:
    for name in ("start_token_id", "end_token_id"):
        if name not in d:
            raise TreeDecodeConfigError(f"{source}: missing {name!r} (an integer token id)")
        v = d[name]
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TreeDecodeConfigError(f"{source}: {name!r} must be an integer token id, got {v!r}")
        if not 0 <= int(v) <= _INT32_MAX:
            raise TreeDecodeConfigError(f"{source}: {name!r} = {v} is outside [0, 2**31)")
    sep = d.get("sep", "_")
    if not isinstance(sep, str) or not sep:
        raise TreeDecodeConfigError(f"{source}: 'sep' must be a non-empty string, got {sep!r}")
    if any(c.isdigit() for c in sep):
        raise TreeDecodeConfigError(f"{source}: 'sep' = {sep!r} contains a digit, so keys would be ambiguous")
    if "prefix_dict" not in d:
        raise TreeDecodeConfigError(f"{source}: missing 'prefix_dict' (an object of key -> list of token ids)")
    return int(d["start_token_id"]), int(d["end_token_id"]), sep


def _entries_from_mapping(prefix_dict: Any, sep: str, source: str) -> _Entries:
    """Validate a string-keyed prefix dict and flatten it (the slow, exact-error path)."""
    if not isinstance(prefix_dict, Mapping):
        raise TreeDecodeConfigError(f"{source}: 'prefix_dict' must be an object, got {type(prefix_dict).__name__}")
    n = len(prefix_dict)
    key_len = np.empty(n, dtype=np.int32)
    val_len = np.empty(n, dtype=np.int32)
    key_parts: list[int] = []
    vals: list[int] = []
    for i, (key, cands) in enumerate(prefix_dict.items()):
        if not isinstance(key, str):
            raise TreeDecodeConfigError(f"{source}: prefix_dict key {key!r} is not a string")
        parts = key.split(sep)
        for p in parts:
            if not (p.isascii() and _NUM_TEXT.fullmatch(p)):
                why = "is empty" if p == "" else "is not a canonical non-negative integer"
                raise TreeDecodeConfigError(
                    f"{source}: prefix_dict key {key!r}: part {p!r} {why} (keys are token ids joined by {sep!r})")
            v = int(p)
            if v > _INT32_MAX:
                raise TreeDecodeConfigError(f"{source}: prefix_dict key {key!r}: token id {v} is out of the int32 range")
            key_parts.append(v)
        key_len[i] = len(parts)
        if isinstance(cands, (str, bytes)) or not isinstance(cands, (Sequence, np.ndarray)):
            raise TreeDecodeConfigError(
                f"{source}: prefix_dict[{key!r}] must be a list of token ids, got {type(cands).__name__}")
        for c in cands:
            if not isinstance(c, (int, np.integer)) or isinstance(c, bool):
                raise TreeDecodeConfigError(f"{source}: prefix_dict[{key!r}] holds {c!r}, not an integer token id")
            if not 0 <= int(c) <= _INT32_MAX:
                raise TreeDecodeConfigError(f"{source}: prefix_dict[{key!r}] holds token id {c}, outside [0, 2**31)")
            vals.append(int(c))
        val_len[i] = len(cands)
    return _Entries(key_len, np.asarray(key_parts, dtype=np.int32), val_len, np.asarray(vals, dtype=np.int32))


# --------------------------------------------------------------------------------------------
# the compiled trie
# --------------------------------------------------------------------------------------------


def _csr_offsets(lengths: np.ndarray) -> np.ndarray:
    off = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


class TreeDecodeConfig:
    """A compiled tree-decode config: the seed's JSON map as an integer trie.

    Arrays (read-only; ``N`` trie nodes, node 0 the root ``str(start)``, node ``N`` the sink that
    stands for every missing key): ``parent[N]``/``token[N]`` (incoming edge), ``child_ptr[N+2]``
    with ``child_tok`` (sorted per node; edge ``i`` leads to node ``i + 1``), ``allow_ptr[N+2]``
    with ``allow_ids`` (sorted, unique; empty = only ``end``), ``has_key[N]``.
    """

    def __init__(self, start_token_id: int, end_token_id: int, sep: str, entries: _Entries, *,
                 vocab_size: int | None = None, source: str = "<dict>"):
        self.start_token_id = int(start_token_id)
        self.end_token_id = int(end_token_id)
        self.sep = sep
        self.source = source
        self.vocab_size = None if vocab_size is None else int(vocab_size)
        self._check_vocab(entries)
        self._build(entries)
        self._end_arr = np.array([self.end_token_id], dtype=np.int32)
        self._end_arr.flags.writeable = False

    # ---- construction ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, vocab_size: int | None = None,
                  source: str = "<dict>") -> TreeDecodeConfig:
        """Compile a config given as a dict (the JSON object: start_token_id, end_token_id, sep, prefix_dict)."""
        if not isinstance(d, Mapping):
            raise TreeDecodeConfigError(f"{source}: a tree-decode config must be a JSON object, got {type(d).__name__}")
        start, end, sep = _check_header(d, source)
        entries = _entries_from_mapping(d["prefix_dict"], sep, source)
        return cls(start, end, sep, entries, vocab_size=vocab_size, source=source)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, vocab_size: int | None = None) -> TreeDecodeConfig:
        """Load and compile a JSON config file (fast vectorized path for ordinary files)."""
        source = os.fspath(path)
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise TreeDecodeConfigError(f"{source}: cannot read tree-decode config: {e.strerror or e}") from e
        try:
            fast = _scan_top_level(data)
        except ValueError:  # a member key or scalar json rejects: the json path names it
            fast = None
        if fast is not None:
            members, (lo, hi) = fast
            members["prefix_dict"] = {}
            start, end, sep = _check_header(members, source)
            entries = _parse_body_fast(data, lo, hi, sep, source)
            if entries is not None:
                del data  # the entries are standalone arrays: free the file before building
                return cls(start, end, sep, entries, vocab_size=vocab_size, source=source)
        try:
            d = json.loads(data)
        except UnicodeDecodeError as e:
            raise TreeDecodeConfigError(f"{source}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        except json.JSONDecodeError as e:
            raise TreeDecodeConfigError(
                f"{source}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
        del data
        return cls.from_dict(d, vocab_size=vocab_size, source=source)

    def _check_vocab(self, e: _Entries) -> None:
        limit = _INT32_MAX + 1 if self.vocab_size is None else self.vocab_size
        what = "the int32 range" if self.vocab_size is None else f"the vocabulary [0, {self.vocab_size})"
        for name, v in (("start_token_id", self.start_token_id), ("end_token_id", self.end_token_id)):
            if v >= limit:
                raise TreeDecodeConfigError(f"{self.source}: {name} = {v} is outside {what}")
        for arr, lens, kind in ((e.key_parts, e.key_len, "key"), (e.vals, e.val_len, "candidate")):
            if arr.size == 0 or (int(arr.min()) >= 0 and int(arr.max()) < limit):
                continue
            j = int(np.flatnonzero((arr >= limit) | (arr < 0))[0])
            i = int(np.searchsorted(np.cumsum(lens, dtype=np.int64), j, side="right"))
            k0 = int(np.sum(e.key_len[:i], dtype=np.int64))
            key = self.sep.join(str(int(t)) for t in e.key_parts[k0:k0 + int(e.key_len[i])])
            raise TreeDecodeConfigError(
                f"{self.source}: prefix_dict key {key!r}: {kind} token id {int(arr[j])} is outside {what}")

    def _build(self, e: _Entries) -> None:
        """Compile the entries into the trie, level by level with numpy (no per-key Python work)."""
        n_entries = int(e.key_len.size)
        if n_entries and int(e.key_len.min()) < 1:
            raise TreeDecodeConfigError(f"{self.source}: an empty prefix_dict key")
        key_off = _csr_offsets(e.key_len)
        self.num_keys = n_entries
        reach = np.flatnonzero(e.key_parts[key_off[:-1]] == self.start_token_id).astype(np.int32)
        self.num_foreign_keys = n_entries - int(reach.size)  # keys not rooted at start: never reached
        depth = e.key_len[reach] - 1
        order = np.argsort(-depth, kind="stable")
        reach = reach[order]  # entries by depth, deepest first
        depth = depth[order]
        del order
        max_depth = int(depth[0]) if depth.size else 0
        # entries with depth >= level are a prefix of ``reach``
        n_at_least = np.searchsorted(-depth, -np.arange(max_depth + 1), side="right")
        del depth
        base = key_off[:-1][reach]
        del key_off
        cur = np.zeros(reach.size, dtype=np.int64)  # the node of each entry's key prefix so far
        parents: list[np.ndarray] = []
        tokens: list[np.ndarray] = []
        next_id = 1
        for level in range(1, max_depth + 1):
            m = int(n_at_least[level])
            pair = cur[:m] << 32
            pair |= e.key_parts[base[:m] + level]
            uniq, inv = np.unique(pair, return_inverse=True)
            del pair
            cur[:m] = inv.reshape(-1)
            cur[:m] += next_id
            del inv
            parents.append((uniq >> 32).astype(np.int32))
            tokens.append((uniq & 0xFFFFFFFF).astype(np.int32))
            del uniq
            next_id += parents[-1].size
        del base
        n = next_id
        self.num_nodes = n
        self.sink = n
        minus1 = np.array([-1], dtype=np.int32)
        self.parent = np.concatenate([minus1, *parents])
        del parents
        self.token = np.concatenate([minus1, *tokens])
        del tokens
        self.child_ptr = _csr_offsets(np.bincount(self.parent[1:], minlength=n + 1))
        self.child_tok = self.token[1:]
        # the entry of each node: the last one in the file wins (JSON object semantics)
        node_entry = np.full(n, -1, dtype=np.int32)
        if reach.size:
            np.maximum.at(node_entry, cur, reach)
        del cur, reach
        self.has_key = node_entry >= 0
        has = np.flatnonzero(self.has_key)
        ent = node_entry[has]
        del node_entry
        lens = np.zeros(n + 1, dtype=np.int64)
        lens[has] = e.val_len[ent]
        allow_ptr = _csr_offsets(lens)
        total = int(allow_ptr[-1])
        if total:
            nz = lens[has] > 0
            has, ent = has[nz], ent[nz]
            seg_len = lens[has]
            del lens, nz
            val_off = _csr_offsets(e.val_len)
            src = np.repeat(val_off[ent] - allow_ptr[has], seg_len)
            del val_off
            src += np.arange(total, dtype=np.int64)
            ids = e.vals[src]
            del src
            same_seg = np.ones(total, dtype=bool)
            same_seg[allow_ptr[has][1:]] = False  # first item of each segment
            same_seg = same_seg[1:]
            if not bool(np.all((ids[1:] > ids[:-1]) | ~same_seg)):
                seg = np.repeat(has.astype(np.int32), seg_len)
                o = np.lexsort((ids, seg))
                ids, seg = ids[o], seg[o]
                del o
                keep = np.ones(total, dtype=bool)
                keep[1:] = (ids[1:] != ids[:-1]) | (seg[1:] != seg[:-1])
                ids, seg = ids[keep], seg[keep]
                allow_ptr = _csr_offsets(np.bincount(seg, minlength=n + 1))
            del same_seg
        else:
            ids = np.zeros(0, dtype=np.int32)
        self.allow_ptr = allow_ptr
        self.allow_ids = np.ascontiguousarray(ids, dtype=np.int32)
        self.num_candidates = int(ids.size)
        for a in (self.parent, self.token, self.child_ptr, self.child_tok, self.allow_ptr, self.allow_ids,
                  self.has_key):
            a.flags.writeable = False

    # ---- queries -----------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Memory held by the trie arrays."""
        return sum(a.nbytes for a in (self.parent, self.token, self.child_ptr, self.child_tok, self.allow_ptr,
                                      self.allow_ids, self.has_key))

    def allowed_at(self, node: int) -> np.ndarray:
        """Sorted allowed ids at a trie node (``[end]`` where the key is missing); a read-only view."""
        lo, hi = int(self.allow_ptr[node]), int(self.allow_ptr[node + 1])
        return self._end_arr if lo == hi else self.allow_ids[lo:hi]

    def node_of(self, tokens: Iterable[int]) -> int:
        """Trie node of the key ``start + sep + tokens...`` by edges alone (``sink`` if absent)."""
        node = 0
        for t in tokens:
            lo, hi = int(self.child_ptr[node]), int(self.child_ptr[node + 1])
            i = lo + int(np.searchsorted(self.child_tok[lo:hi], int(t)))
            if i >= hi or int(self.child_tok[i]) != int(t):
                return self.sink
            node = i + 1
        return node

    def candidates(self, key: str) -> np.ndarray | None:
        """``prefix_dict.get(key)`` as sorted unique ids (None for a missing key); for tests and debugging."""
        parts = key.split(self.sep)
        if not all(p.isascii() and _NUM_TEXT.fullmatch(p) for p in parts) or int(parts[0]) != self.start_token_id:
            return None
        node = self.node_of(int(p) for p in parts[1:])
        if node == self.sink or not self.has_key[node]:
            return None
        lo, hi = int(self.allow_ptr[node]), int(self.allow_ptr[node + 1])
        return self.allow_ids[lo:hi].copy()

    def key_of(self, node: int) -> str:
        """The seed's string key of a trie node."""
        parts = []
        while node > 0:
            parts.append(str(int(self.token[node])))
            node = int(self.parent[node])
        return self.sep.join([str(self.start_token_id), *reversed(parts)])

    def to_dict(self) -> dict[str, Any]:
        """The reachable part of the config as a JSON-able dict (candidate lists sorted and deduplicated)."""
        prefix = {}
        for node in np.flatnonzero(self.has_key):
            lo, hi = int(self.allow_ptr[node]), int(self.allow_ptr[node + 1])
            prefix[self.key_of(int(node))] = [int(t) for t in self.allow_ids[lo:hi]]
        return {"start_token_id": self.start_token_id, "end_token_id": self.end_token_id, "sep": self.sep,
                "prefix_dict": prefix}

    def new_state(self) -> TreeDecodeState:
        """A fresh per-sequence state at the root."""
        return TreeDecodeState(self)

    def __repr__(self) -> str:
        return (f"TreeDecodeConfig(source={self.source!r}, start={self.start_token_id}, end={self.end_token_id}, "
                f"sep={self.sep!r}, keys={self.num_keys}, nodes={self.num_nodes}, candidates={self.num_candidates})")


# --------------------------------------------------------------------------------------------
# per-sequence state
# --------------------------------------------------------------------------------------------

_FINISHED = 1
_ERROR = 2


class TreeDecodeState:
    """One sequence's position in the tree: allowed ids, bitmask rows, accept/rollback/fork.

    ``accept_token`` returns False when the token was outside the candidates (the state is then
    the sticky error state: only ``end`` allowed) or when the sequence had already finished.
    """

    __slots__ = ("_cfg", "_flags", "_hist", "_node", "_tokens")

    def __init__(self, config: TreeDecodeConfig):
        self._cfg = config
        self._node = 0
        self._flags = 0
        self._hist: list[int] = []  # (node << 3 | flags << 1 | extended-key bit) before each token
        self._tokens: list[int] = []  # tokens that extended the key (not those ignored after end)

    @property
    def config(self) -> TreeDecodeConfig:
        return self._cfg

    @property
    def node(self) -> int:
        """Current trie node (``config.sink`` for a missing key or the error state)."""
        return self._node

    @property
    def is_error(self) -> bool:
        """A token outside the candidates was accepted: only ``end`` is allowed from now on."""
        return bool(self._flags & _ERROR)

    @property
    def is_finished(self) -> bool:
        """``end_token_id`` was accepted; the state is frozen."""
        return bool(self._flags & _FINISHED)

    is_terminated = is_finished

    @property
    def num_accepted(self) -> int:
        """Tokens passed to ``accept_token`` (including ignored ones), i.e. how far ``rollback`` can go."""
        return len(self._hist)

    @property
    def status(self) -> str:
        """The seed's state string ``start + sep + t0 + sep + t1 ...`` (built on demand only)."""
        sep = self._cfg.sep
        return sep.join([str(self._cfg.start_token_id), *map(str, self._tokens)])

    def allowed_token_ids(self) -> np.ndarray:
        """Sorted allowed ids (int32, read-only view): the candidates, or ``[end]``."""
        cfg = self._cfg
        if self._flags & _ERROR:
            return cfg._end_arr
        return cfg.allowed_at(self._node)

    def _span(self) -> tuple[int, int]:
        if self._flags & _ERROR:
            return 0, 0
        p = self._cfg.allow_ptr
        return int(p[self._node]), int(p[self._node + 1])

    def fill_bitmask(self, row: Any) -> bool:
        """Overwrite an int32 bitmask row with the allowed set; returns True (the row is always constrained)."""
        lo, hi = self._span()
        if _fill_row(_u32_row(row), self._cfg.allow_ids, lo, hi, self._cfg.end_token_id) < 0:
            raise IndexError(f"tree decode: an allowed token id does not fit a bitmask row of {len(row) * 32} bits")
        return True

    def restrict(self, row: Any) -> None:
        """AND the allowed set into an existing bitmask row (the pipeline's constraint protocol)."""
        lo, hi = self._span()
        _restrict_row(_u32_row(row), self._cfg.allow_ids, lo, hi, self._cfg.end_token_id)

    def accept_token(self, token_id: int) -> bool:
        """Advance by one sampled token (see the class docstring for the return value)."""
        cfg = self._cfg
        t = int(token_id)
        before = (self._node << 3) | (self._flags << 1)
        if self._flags & _FINISHED:
            self._hist.append(before)
            return t == cfg.end_token_id  # frozen, as the seed's TreeDFA after end
        self._hist.append(before | 1)  # this token extends the key
        self._tokens.append(t)
        if self._flags & _ERROR:
            if t == cfg.end_token_id:
                self._flags |= _FINISHED
                return True
            return False
        nxt = _advance(cfg.allow_ptr, cfg.allow_ids, cfg.child_ptr, cfg.child_tok, self._node, t,
                       cfg.end_token_id, cfg.sink)
        if nxt < 0:
            self._node = cfg.sink
            self._flags |= _ERROR
            return False
        self._node = int(nxt)
        if t == cfg.end_token_id:
            self._flags |= _FINISHED
        return True

    def accept_tokens(self, token_ids: Iterable[int]) -> bool:
        """Accept several tokens; True when every one was accepted without error."""
        ok = True
        for t in token_ids:
            ok = self.accept_token(t) and ok
        return ok

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens (speculative drafts)."""
        n = int(num_tokens)
        if n < 0 or n > len(self._hist):
            raise ValueError(f"cannot roll back {n} tokens: {len(self._hist)} accepted")
        for _ in range(n):
            packed = self._hist.pop()
            if packed & 1:
                self._tokens.pop()
            self._node, self._flags = packed >> 3, (packed >> 1) & 3

    def fork(self) -> TreeDecodeState:
        """An independent copy (beam search, ``n > 1``)."""
        s = TreeDecodeState(self._cfg)
        s._node, s._flags = self._node, self._flags
        s._hist = list(self._hist)
        s._tokens = list(self._tokens)
        return s

    def reset(self) -> None:
        """Back to the root, forgetting every accepted token."""
        self._node, self._flags = 0, 0
        self._hist.clear()
        self._tokens.clear()

    def __repr__(self) -> str:
        flags = "".join(f for f, on in ((" finished", self.is_finished), (" error", self.is_error)) if on)
        return f"TreeDecodeState(node={self._node}{flags})"


# --------------------------------------------------------------------------------------------
# enabling (flag / env var, resolved against the checkpoint)
# --------------------------------------------------------------------------------------------


def add_tree_decode_argument(parser: argparse.ArgumentParser) -> None:
    """Add the seed's ``--tree_decode_config NAME`` option (file name under the checkpoint)."""
    parser.add_argument("--tree_decode_config", "--tree-decode-config", dest="tree_decode_config", default=None,
                        metavar="NAME",
                        help=f"tree-decode JSON under the checkpoint directory (or env {TREE_DECODE_ENV})")


def resolve_tree_decode_config(name: str | None = None, ckpt_path: str | os.PathLike[str] | None = None, *,
                               vocab_size: int | None = None, environ: Mapping[str, str] | None = None,
                               strict: bool = True) -> TreeDecodeConfig | None:
    """Load the config named by ``--tree_decode_config`` (``name``) or env ``TREE_DECODE_CONFIG``.

    The path is ``<ckpt_path>/<NAME>`` (plain concatenation, as the seed). None when neither is set
    (tree decode disabled). A bad file raises :class:`TreeDecodeConfigError`; with
    ``strict=False`` it is logged and tree decode is disabled instead, as the seed does.
    """
    env = os.environ if environ is None else environ
    chosen = name if name else env.get(TREE_DECODE_ENV, "")
    if not chosen:
        return None
    if ckpt_path is None:
        raise TreeDecodeConfigError(f"tree decode config {chosen!r} is set but no checkpoint path to resolve it against")
    path = f"{os.fspath(ckpt_path)}/{chosen}"
    try:
        cfg = TreeDecodeConfig.from_file(path, vocab_size=vocab_size)
    except TreeDecodeConfigError as e:
        if strict:
            raise
        log.warning("tree decode disabled: %s", e)
        return None
    log.info("tree decode config %s loaded: %d keys, %d nodes", path, cfg.num_keys, cfg.num_nodes)
    return cfg
