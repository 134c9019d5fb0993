"""Per-state token masks: computation, adaptive storage and a bounded shared cache.

For a state ``s`` at the top of an unknown stack, :func:`compute_state_mask` walks the
token trie once (numba) and records

* the tokens accepted without leaving ``s``'s rule frame — stored as a list of accepted
  ids or of rejected ids while the list is short (at most a quarter as many ids as bitset
  words), else as a packed bitset, which is faster to write than a long list; and
* the trie nodes where some path leaves the frame ("exit nodes"): tokens below them
  depend on the caller and are resolved per context by :func:`resolve_context`.

Masks are keyed by :meth:`RTN.state_key`, which is independent of the grammar the state
came from, so grammars sharing rules (every JSON schema has strings and numbers) share
this work. :class:`MaskStore` bounds the memory they take.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from numba import njit

from ..errors import LimitExceededError
from . import _walk as _walk_mod
from ._survival import plan_state_packed, plan_views
from .slices import SliceSet

__all__ = ["MaskStore", "StateMask", "TokenSetKind", "WalkScratch", "compute_state_mask", "mask_nbytes",
           "resolve_context", "warm_kernels", "write_mask"]

CONFIG_CAP = 256  # max stacks in one configuration (ambiguity bound)
ARENA_CAP = 1 << 16


class TokenSetKind:
    BITSET = 0
    ACCEPTED = 1
    REJECTED = 2


#: One state's context-independent token mask, ``(kind, data, exits, count)`` (read-only by
#: convention: masks are shared between grammars):
#:
#: * ``kind``: a :class:`TokenSetKind`, how ``data`` holds the accepted tokens;
#: * ``data``: int32 bitset words, or token ids (in no particular order);
#: * ``exits``: int32 nodes of the slice set's trie where a path leaves the frame;
#: * ``count``: the number of accepted tokens (context-independent part).
#:
#: A plain tuple, not a class: a long-running process keeps one per state visited of every
#: grammar it has cached (~145,000 after 2,500 MaskBench schemas), and CPython's cyclic collector
#: stops tracking a tuple whose items it need not track (ints, arrays) where it walks every class
#: instance at every full collection (0.245 s there with a slots class, 0.145 with tuples).
StateMask = tuple[int, np.ndarray, np.ndarray, int]
#: the index of each field in a :data:`StateMask`
KIND, DATA, EXITS, COUNT = range(4)


def mask_nbytes(mask: StateMask) -> int:
    """Memory ``mask`` holds (what :class:`MaskStore` bounds)."""
    return int(mask[DATA].nbytes + mask[EXITS].nbytes + 64)


def write_mask(mask: StateMask, row: np.ndarray, overwrite: bool, base: np.ndarray) -> None:
    """Write (``overwrite``) or OR ``mask``'s accepted tokens into a packed bitmask row.

    ``base`` is the bitset of every token the trie holds (used by REJECTED sets).
    """
    _write_set(row, mask[KIND], mask[DATA], overwrite, base)


@njit(nogil=True, cache=True)
def _write_set(row, kind, data, overwrite, base):
    """Write/OR a token set into ``row``; ``base`` is the bitset of all trie tokens."""
    nw = row.shape[0]
    if kind == 0:
        if overwrite:
            for w in range(nw):
                row[w] = data[w]
        else:
            for w in range(nw):
                row[w] |= data[w]
    elif kind == 1:
        if overwrite:
            for w in range(nw):
                row[w] = 0
        for k in range(data.shape[0]):
            t = data[k]
            row[t >> 5] |= np.int32(1) << np.int32(t & 31)
    elif overwrite:
        for w in range(nw):
            row[w] = base[w]
        for k in range(data.shape[0]):
            t = data[k]
            row[t >> 5] &= ~(np.int32(1) << np.int32(t & 31))
    else:
        full = base.copy()
        for k in range(data.shape[0]):
            t = data[k]
            full[t >> 5] &= ~(np.int32(1) << np.int32(t & 31))
        for w in range(nw):
            row[w] |= full[w]


@njit(nogil=True, cache=True)
def _write_row(row, kind, data, base, more, stops):
    """``row`` set to a token set (:func:`_write_set`), then the bits of the ids ``more`` and ``stops``
    set: a one-stack mask (its state's set, its context's tokens, the stop tokens) in one call."""
    _write_set(row, kind, data, True, base)
    for ids in (more, stops):
        for k in range(ids.shape[0]):
            t = ids[k]
            row[t >> 5] |= np.int32(1) << np.int32(t & 31)


#: bit index of a power of two ``b`` (32 bits) at ``((b * 0x077CB531) mod 2**32) >> 27`` (de Bruijn)
_BIT_INDEX = np.array([0, 1, 28, 2, 29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4, 8,
                       31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6, 11, 5, 10, 9], dtype=np.int64)


@njit(nogil=True, cache=True, inline="always")
def _list_bits(x, first, out, n):
    """Write ``first`` + the position of each bit set in ``x`` (a 32-bit word in an int64) to
    ``out[n:]``, lowest first; return the new ``n``. One step per set bit."""
    while x:
        low = x & -x
        out[n] = first + _BIT_INDEX[((low * 0x077CB531) & 0xFFFFFFFF) >> 27]
        n += 1
        x ^= low
    return n


@njit(nogil=True, cache=True)
def _row_to_ids(row, limit):
    out = np.empty(limit, dtype=np.int32)
    n = 0
    for w in range(row.shape[0]):
        x = np.int64(row[w]) & 0xFFFFFFFF
        if x:
            n = _list_bits(x, w * 32, out, n)
    return out[:n]


@njit(nogil=True, cache=True)
def _rejected_ids(row, base, limit):
    """Ids of the trie tokens (bits of ``base``) whose bit in ``row`` is clear, ascending; there
    are ``limit`` of them."""
    out = np.empty(limit, dtype=np.int32)
    n = 0
    for w in range(row.shape[0]):
        x = np.int64(base[w] & ~row[w]) & 0xFFFFFFFF
        if x:
            n = _list_bits(x, w * 32, out, n)
    return out[:n]


#: the int64 block of :class:`WalkScratch`: a walk's and a step's results (``info``), the parser
#: step's capacities (arena, configurations), where each part of the int32 block starts (row, ids,
#: configurations, step block, exits, end), then a walk's per-depth bounds
_INFO, _CAPS, _PARTS = 0, 10, 12
_N_PARTS = 5  # (the int32 block's parts; their starts and its end take one more entry)
_CDEPTH = _PARTS + _N_PARTS + 1


class WalkScratch:
    """Per-thread scratch buffers for trie walks (sized by trie depth and limits).

    They are two arrays, ``block32`` and ``block64``, each attribute a view of one part: a mask
    kernel takes the two (:func:`_scratch_parts` slices them apart again) where it took seven
    arrays and two sizes -- each array passed to a kernel costs its call ~0.1 µs, ~0.3 µs with cold
    caches.
    """

    def __init__(self, max_depth: int, num_words: int, exit_capacity: int = 4096):
        self._depth = max_depth + 2
        self._num_words = num_words
        self._allocate(exit_capacity)
        self._plans: dict[int, tuple] = {}  # walk-plan buffers per slice set (id: the set, held)

    def _allocate(self, exit_capacity: int) -> None:
        depth, a, c = self._depth, ARENA_CAP, CONFIG_CAP
        # a mask row and its ids; a trie walk's configurations (tops, then parents); a parser
        # step's buffers end to end (the layout :func:`._walk._scratch_views` reads); exit nodes
        sizes = (self._num_words, self._num_words, 2 * depth * c, 2 * a + 14 * c, exit_capacity)
        parts = np.zeros(_N_PARTS + 1, dtype=np.int64)
        np.cumsum(sizes, out=parts[1:])
        self.block32 = np.zeros(int(parts[-1]), dtype=np.int32)
        self.block64 = np.zeros(_CDEPTH + 3 * depth, dtype=np.int64)
        self.block64[_CAPS:_CAPS + 2] = a, c
        self.block64[_PARTS:_CDEPTH] = parts
        self.row, self.ids, self.cbuf, self.step_block, self.exits = np.split(self.block32, parts[1:-1])
        # a walk's and a step's results (0-4), and :func:`_plan_and_walk`'s (5-9)
        self.info = self.block64[_INFO:_CAPS]
        self.cdepth = self.block64[_CDEPTH:]  # a walk's per-depth starts, ends and arena tops
        (self.arena_state, self.arena_parent, self.out_top, self.out_par, self.work_top,
         self.work_par) = np.split(self.step_block, np.cumsum([a, a, c, c, 6 * c]))
        #: the scratch arguments of a parser step (:func:`._walk.advance_packed`), in its order
        self.step_args = (self.step_block, a, c, self.info)

    def grow_exits(self, trie) -> None:
        """Room for a walk's exit nodes: at most one per trie node. Every buffer is new (the
        attributes read before are stale); the row keeps what it held."""
        row = self.row
        self._allocate(max(self.exits.shape[0] * 4, trie.num_nodes))
        self.row[:] = row

    def plan_out(self, slices: SliceSet) -> tuple[np.ndarray, ...]:
        """This thread's buffers for a walk plan of ``slices``: ``(block, take, starts, ends, exits)``,
        the last four views of the first (:meth:`SliceSet.plan_buffers`; :meth:`SliceSet.walk_plan`
        takes the tuple as its ``out``)."""
        hit = self._plans.get(id(slices))
        if hit is None or hit[0] is not slices:
            hit = self._plans[id(slices)] = (slices, slices.plan_buffers())
        return hit[1]


@njit(nogil=True, cache=True, inline="always")
def _scratch_parts(b32, b64):
    """``(row, ids, cbuf, step_block, exits, info, cdepth, arena_cap, config_cap)``: the parts of a
    :class:`WalkScratch`'s two blocks, as its attributes name them."""
    p = b64[_PARTS:_CDEPTH]
    return (b32[p[0]:p[1]], b32[p[1]:p[2]], b32[p[2]:p[3]], b32[p[3]:p[4]], b32[p[4]:p[5]],
            b64[_INFO:_CAPS], b64[_CDEPTH:], b64[_CAPS], b64[_CAPS + 1])


@njit(nogil=True, cache=True)
def _plan_and_walk(state, trans, flags, step, params, tables, lower, memo, plan_block, node_byte, trie_pack,
                   frames, b32, b64):
    """A state's walk plan (:func:`._survival.plan_state_packed`) and :func:`_walk_and_list` of its
    ranges into a cleared row; returns the walk's exit count. ``info[5:8]``: the ranges and the
    plan's exits, and whether slices were taken whole (the caller adds their tokens: none of them
    was walked); ``info[9]``: which (bit ``j``: slice ``j``, of the first 63). One call where a
    first mask made three (each kernel call from Python pays for its arguments and, cold, for its
    dispatch). ``plan_block``: the plan's buffers (:func:`._survival.plan_views`); ``b32``, ``b64``:
    a :class:`WalkScratch`'s blocks."""
    info = b64[_INFO:_CAPS]
    take, starts, ends, first_exits = plan_views(plan_block)
    n, ne = plan_state_packed(state, trans, flags, step, params, tables, lower, memo, take, starts, ends,
                              first_exits)
    info[5] = n
    info[6] = ne
    info[7] = 0
    info[2] = 0
    bits = 0
    for j in range(take.shape[0]):
        if take[j]:
            info[7] = 1
            if j < 63:
                bits |= 1 << j
    info[9] = bits
    return _walk_and_list(state, _walk_mod.EXIT, starts[:n], ends[:n], node_byte, trie_pack, trans, flags,
                          step, frames, b32, b64)


@njit(nogil=True, cache=True)
def _walk_and_list(top, par, starts, ends, node_byte, trie_pack, trans, flags, step, frames, b32, b64):
    """``row`` cleared, the ranges walked into it (:func:`._walk.walk_trie_packed`) and
    the ids it accepts listed into ``ids`` while they fit (their count: ``info[8]``; the walk lists
    them as it sets their bits, in the order walked, so a cleared row is not scanned, ~1 µs on a
    4,748-word row); returns the exit count. The buffers are parts of a :class:`WalkScratch`'s
    blocks ``b32`` and ``b64``. Empty ``ends`` (``_AS_SUBTREES``): each range is the subtree of its
    start node (a context resolution's exit nodes), its end and first byte read here from the trie
    (the walk skips a range whose first byte's class already died)."""
    row, ids, cbuf, step_block, exit_nodes, info, cdepth, arena_cap, config_cap = _scratch_parts(b32, b64)
    row[:] = 0
    if ends.shape[0] != starts.shape[0]:
        ends, start_bytes = _walk_mod.subtrees(starts, node_byte, trie_pack)
    else:
        start_bytes = np.zeros(0, np.uint8)  # (ranges of several subtrees: no first byte to read)
    for k in range(5):
        info[k] = 0
    info[3] = 1 << 30
    info[8] = 0
    n_exit = 0
    if starts.shape[0] > 0:
        n_exit = _walk_mod.walk_trie_packed(top, par, starts, ends, start_bytes, node_byte, trie_pack, trans,
                                            flags, step, frames, row, exit_nodes, cbuf, cdepth, step_block,
                                            arena_cap, config_cap, info, ids)
    return n_exit


def _raise_walk_error(code: int) -> None:
    if code == _walk_mod.ERR_CONFIG:
        raise LimitExceededError(
            f"the grammar is too ambiguous here: more than {CONFIG_CAP} parser stacks at once",
            limit="config_cap",
        )
    if code == _walk_mod.ERR_ARENA:
        raise LimitExceededError("too many rule calls within one token", limit="arena_cap")


def compute_state_mask(state: int, rtn, slices: SliceSet, trie_row: np.ndarray, scratch: WalkScratch) -> StateMask:
    """Context-independent mask of ``state`` (see module docstring).

    ``slices`` partition the trie tokens (:mod:`.slices`); ``trie_row`` is the bitset of them all.
    The slices whose every token the state accepts are one bitset (:meth:`SliceSet.union`) and, for
    a short mask, one list of ids (:meth:`SliceSet.union_ids`); the others are walked -- the
    unsliced trie instead, when no slice it holds is taken whole.
    """
    if rtn.dead_end[state]:  # only a pop can follow: every token leaves the frame at its first byte
        return (TokenSetKind.ACCEPTED, _NO_EXITS, slices.top_nodes, 0)
    if rtn.layers and slices.string_chars is not None:
        left = rtn.counted_chars_left(state)
        if left >= 0:
            return _counted_string_mask(state, left, rtn, slices, trie_row, scratch)
    block, take, _, _, first_exits = scratch.plan_out(slices)
    plan = slices.plan_arrays(rtn)
    while True:  # plan, and where no slice is taken whole, walk and list: one kernel call
        n_exit = _plan_and_walk(state, *rtn.step_pack, slices.plan_params, plan.tables, plan.lower, plan.memo,
                                block, slices.trie.walk_bytes, slices.trie.walk_pack, _NO_FRAMES,
                                scratch.block32, scratch.block64)
        # (the walk's results read at once: ``int(info[k])`` costs a numpy scalar each)
        _, _, code, _, _, _, ne, took, count, took_bits = scratch.info.tolist()
        if code != _walk_mod.ERR_EXITS:
            break
        scratch.grow_exits(slices.trie)  # (at most one exit per trie node: sized once, then again)
    if code:
        _raise_walk_error(code)
    if ne:  # (nodes only a pop can take: the plan lists them, no walk visits them)
        exits = np.concatenate((first_exits[:ne], scratch.exits[:n_exit]))
    else:
        exits = scratch.exits[:n_exit].copy() if n_exit else _NO_EXITS
    added = None
    if took:  # slices taken whole (none of their tokens walked): added to the walk's
        taken, in_taken = slices.taken_from_bits(took_bits, take)
        added = (in_taken, lambda: slices.union(taken), lambda: slices.union_ids(taken))
    return _stored(scratch, count, added, exits, slices, trie_row)


def _stored(scratch: WalkScratch, walked: int, added: tuple | None, exits: np.ndarray, slices: SliceSet,
            trie_row: np.ndarray) -> StateMask:
    """The mask of a walk (its row and, while they fit, its ``walked`` ids listed in ``scratch``) and
    of the tokens ``added`` beside it unwalked, ``(count, bitset(), ids())`` (None: none; the two
    callables asked only for what the mask's form needs), in the form that suits it."""
    row, ids = scratch.row, scratch.ids
    count = walked
    # a list of ids while it is short: writing one costs a scattered bit per id, where a bitset
    # is copied whole (a string state on Qwen2.5 rejects 4,651 ids: 2.5 us to write as a list,
    # 0.3 us as the 4,748 words of a bitset); longer lists would take less memory (4 bytes an id,
    # 4 a word) but cost time on every token
    short = row.shape[0] // 4
    if added is not None:
        in_added, bits, added_ids = added
        count += in_added
        if count <= short:  # (whitespace at a JSON value: ~430 ids)
            return (TokenSetKind.ACCEPTED, np.concatenate((ids[:walked], added_ids())), exits, count)
        np.bitwise_or(row, bits(), out=row)
    if count <= short:
        return (TokenSetKind.ACCEPTED, ids[:count].copy(), exits, count)
    n_trie = slices.num_tokens
    if n_trie - count <= short:
        return (TokenSetKind.REJECTED, _rejected_ids(row, trie_row, n_trie - count), exits, count)
    return (TokenSetKind.BITSET, row.copy(), exits, count)


def _counted_string_mask(state: int, left: int, rtn, slices: SliceSet, trie_row: np.ndarray,
                         scratch: WalkScratch) -> StateMask:
    """:func:`compute_state_mask` of a character boundary of a counted JSON string with ``left``
    characters to go (:meth:`RTN.counted_chars_left`): its string-character tokens are those of at
    most ``left`` characters, a set kept per count (:meth:`SliceSet.strings_up_to`); only the other
    slices are walked (quotes, escapes, control characters: their tokens end the string or die).

    Where the survival depth alone decides, a string near its ``maxLength`` takes none of the
    short-token slices whole and walks most of the vocabulary at every character (0.7-5 ms a state
    on Llama-3 for ``maxLength: 32``, each state a first visit)."""
    starts, ends = slices.outside_strings
    n_exit = _walk_listing(state, _walk_mod.EXIT, starts, ends, _NO_FRAMES, rtn, slices.trie, scratch)
    bits, in_strings = slices.strings_up_to(left)
    exits = scratch.exits[:n_exit].copy() if n_exit else _NO_EXITS
    return _stored(scratch, scratch.info.item(8), (in_strings, lambda: bits, lambda: slices.string_ids_up_to(left)),
                   exits, slices, trie_row)


def resolve_context(state_mask: StateMask, parent: int, rtn, slices: SliceSet, pool,
                    scratch: WalkScratch) -> tuple[np.ndarray, int]:
    """Tokens below the exit nodes accepted with the real parent stack ``parent``.

    Returns ``(token ids, deepest pool depth touched)``.
    """
    _walk_listing(pool.state.item(parent), pool.parent.item(parent), state_mask[EXITS], _AS_SUBTREES,
                  pool.block, rtn, slices.trie, scratch)
    info = scratch.info
    min_depth = min(pool.depth.item(parent), info.item(3))
    count = info.item(8)
    ids = scratch.ids
    return (ids[:count].copy() if count <= ids.shape[0] else _row_to_ids(scratch.row, count)), min_depth


def _walk_listing(top: int, par: int, starts: np.ndarray, ends: np.ndarray, frames: np.ndarray, rtn, trie,
                  scratch: WalkScratch) -> int:
    """One :func:`_walk_and_list` call into ``scratch.row`` (cleared first), walking
    again with more room for exits if it ran out; returns the exit count (the nodes: the start of
    ``scratch.exits``). ``frames``: the pool's rows below ``par``, or ``_NO_FRAMES``; ``ends``:
    the ranges' ends, or ``_AS_SUBTREES``: each range the subtree of its start node, whose first
    byte the walk reads to skip a range its class already died on."""
    while True:
        n_exit = _walk_and_list(top, par, starts, ends, trie.walk_bytes, trie.walk_pack, *rtn.step_pack,
                                frames, scratch.block32, scratch.block64)
        code = scratch.info.item(2)
        if code != _walk_mod.ERR_EXITS:
            break
        scratch.grow_exits(trie)  # at most one exit per trie node: sized once, then walked again
    if code:
        _raise_walk_error(code)
    return n_exit


_NO_EXITS = np.zeros(0, dtype=np.int32)
_AS_SUBTREES = np.zeros(0, dtype=np.int32)  # (a walk's ranges: each the subtree of its start node)
_NO_FRAMES = np.zeros((3, 1), dtype=np.int32)  # (no pool: a walk that never pops into one)


def warm_kernels(num_words: int, trie_ids: np.ndarray) -> None:
    """Call every token-set kernel once, so numba loads them now rather than on a first mask."""
    row = np.zeros(num_words, dtype=np.int32)
    base = np.full(num_words, -1, dtype=np.int32)
    ids = np.asarray(trie_ids[:1], dtype=np.int32)
    for kind in (TokenSetKind.BITSET, TokenSetKind.ACCEPTED, TokenSetKind.REJECTED):
        for overwrite in (True, False):
            _write_set(row, kind, row if kind == TokenSetKind.BITSET else ids, overwrite, base)
    _write_row(row, TokenSetKind.ACCEPTED, ids, base, ids, ids)
    row[:] = 0
    _row_to_ids(row, 0)  # the limit is the count: 0 bits set
    _rejected_ids(base, base, 0)  # (no bit of base is clear in base)


class MaskStore:
    """A thread-safe, memory-bounded LRU cache of :data:`StateMask` keyed by state keys.

    ``others``: the bytes held by caches sharing the bound (a compiler's compiled grammars): masks
    go, least recently used first, while the store and they together pass ``limit_bytes``.
    """

    def __init__(self, limit_bytes: int = 1 << 30, others: Callable[[], int] | None = None):
        self.limit_bytes = int(limit_bytes)
        self._others = others
        self._items: OrderedDict[tuple, StateMask] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> StateMask | None:
        with self._lock:
            m = self._items.get(key)
            if m is not None:
                self._items.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return m

    def put(self, key: tuple, mask: StateMask) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= mask_nbytes(old)
            self._items[key] = mask
            self._bytes += mask_nbytes(mask)
            limit = self.limit_bytes - (self._others() if self._others is not None else 0)
            while self._bytes > limit and len(self._items) > 1:
                _, ev = self._items.popitem(last=False)
                self._bytes -= mask_nbytes(ev)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
