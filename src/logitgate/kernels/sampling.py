"""Sampling kernels (numba): top-k / top-p / min-p filtering without sorting rows, and the draw.

**Filtering** (:func:`filter_probs_rows`).
For each row the tokens are binned by value (the top 11 bits of the value's float32 pattern,
which order non-negative floats: 4 bins an octave) with each bin's count and mass. Walking the
bins from the largest, every bin that lies wholly inside the kept set (fewer than ``k`` tokens
and less than ``top_p`` of the mass before its end) is kept without looking at its tokens; the
one bin where top-k or top-p stops is binned again by its next 12 bits when it holds more than
256 tokens, and the tokens left are sorted (by value, then id: equal values keep the lower ids
first) and kept one by one. A row costs a few passes over the vocabulary and a sort of a few
tokens, where sorting the row took O(V log V) (a flat 151,936-token row: ~7 ms).

The rule is :func:`logitgate.processors.sampling.filter_probs`'s: top-k keeps the ``k`` most
likely; top-p keeps a token while the mass strictly before it (most likely first) is below
``top_p`` times the row's total; min-p then keeps tokens of at least ``min_p`` times the largest.
Masses are summed in float64 (bins, then the boundary bin token by token), so a token whose mass
before it is within rounding of the threshold may fall either side.

**The draw** (:func:`draw_rows`): the first token whose running sum of probabilities (in id
order, float64) exceeds ``u`` times the row's sum, found through sums of blocks of 64 ids (one
vectorized pass) and a walk of one block, where a sequential ``cumsum`` of the row cost a
dependent add per id.

    >>> import numpy as np
    >>> p = np.array([[0.5, 0.3, 0.15, 0.05]])
    >>> out = np.empty_like(p)
    >>> filter_probs_rows(p, np.array([0]), np.array([0.7]), np.array([0.0]), out)
    -1
    >>> out.round(3).tolist()
    [[0.625, 0.375, 0.0, 0.0]]
    >>> draw_rows(out, np.array([0.7])).tolist()
    [1]
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["draw_rows", "filter_probs_rows", "filter_rows"]

_SHIFT = 21  # float32 bits >> 21: the sign (0), 8 exponent bits and 2 mantissa bits
_BINS = 1 << 10
_SHIFT2 = 9  # inside a bin: the next 12 bits
_BINS2 = 1 << 12
_SORT_DIRECTLY = 256  # an edge bin this small is sorted without level 2


_FAST = {"reassoc", "nsz"}  # sums in any order (vectorized); NaN and infinities keep their meaning


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _total_and_bad(p):  # pragma: no cover - compiled
    """Sum of a row and how many of its values are negative or NaN (vectorized)."""
    total = 0.0
    bad = 0
    for i in range(p.shape[0]):
        x = np.float64(p[i])
        total += x
        bad += not x >= 0.0
    return total, bad


@numba.njit(nogil=True, cache=True)
def _largest(p):  # pragma: no cover - compiled
    best = np.float64(p[0])
    for i in range(p.shape[0]):
        if p[i] > best:
            best = np.float64(p[i])
    return best


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _scaled(out, s):  # pragma: no cover - compiled
    if s > 0.0:
        inv = 1.0 / s
        for i in range(out.shape[0]):
            out[i] = out[i] * inv


@numba.njit(nogil=True, cache=True)
def _walk_bins(cnt, mass, k, target, kept, before):  # pragma: no cover - compiled
    """Walk the bins from the largest, keeping each that top-k and top-p keep whole. Returns
    ``(b, edge, kept, before)``: the bins above ``b`` are kept; ``edge``: top-k or top-p stops
    inside bin ``b`` (its tokens must be taken one by one), else ``b`` and below are dropped."""
    b = cnt.shape[0] - 1
    while b >= 0 and kept < k and before < target:
        if cnt[b] and (kept + cnt[b] > k or before + mass[b] >= target):
            return b, True, kept, before
        kept += cnt[b]
        before += mass[b]
        b -= 1
    return b, False, kept, before


@numba.njit(nogil=True, cache=True)
def _filter_row(p, bits, k, top_p, min_p, out, cnt, mass, ids):  # pragma: no cover - compiled
    """One row; ``bits``: the row's values as float32 bit patterns. False if a value is negative or NaN."""
    vocab = p.shape[0]
    total, bad = _total_and_bad(p)
    if bad:
        return False
    if not total > 0.0:  # nothing to keep (the sampler reports the row)
        out[:] = p
        return True
    if k <= 0 or k > vocab:
        k = vocab
    floor = min_p * _largest(p) if min_p > 0.0 else -1.0
    if k == vocab and top_p >= 1.0:  # min-p alone
        _scaled(out, _kept_at_least(p, out, floor))
        return True
    target = top_p * total if top_p < 1.0 else np.inf
    # level 1: bins of the bit pattern's top 11 bits (non-negative floats: the pattern orders them),
    # counted in four interleaved histograms (no chain of updates through one bin), then summed
    cnt[:] = 0
    mass[:] = 0.0
    for i in range(vocab):
        b = (bits[i] >> _SHIFT) + (i & 3) * _BINS
        cnt[b] += 1
        mass[b] += p[i]
    for b in range(_BINS):
        cnt[b] += cnt[b + _BINS] + cnt[b + 2 * _BINS] + cnt[b + 3 * _BINS]
        mass[b] += mass[b + _BINS] + mass[b + 2 * _BINS] + mass[b + 3 * _BINS]
    edge_bin, edge, kept, before = _walk_bins(cnt[:_BINS], mass[:_BINS], k, target, 0, 0.0)
    n_keep = 0  # the edge bin's kept tokens: ids[:n_keep]
    if edge:
        m = 0
        for i in range(vocab):
            if bits[i] >> _SHIFT == edge_bin:
                ids[m] = i
                m += 1
        rest = ids[:m].copy()
        n_rest = m
        if m > _SORT_DIRECTLY:  # level 2, inside the edge bin: its next 12 bits
            cnt2 = cnt[:_BINS2]
            mass2 = mass[:_BINS2]
            cnt2[:] = 0
            mass2[:] = 0.0
            for j in range(m):
                b = (bits[rest[j]] >> _SHIFT2) & (_BINS2 - 1)
                cnt2[b] += 1
                mass2[b] += p[rest[j]]
            edge2, edge_in, kept, before = _walk_bins(cnt2, mass2, k, target, kept, before)
            n_rest = 0
            for j in range(m):  # above the edge sub-bin: kept whole; in it: taken one by one
                b = (bits[rest[j]] >> _SHIFT2) & (_BINS2 - 1)
                if b > edge2:
                    ids[n_keep] = rest[j]
                    n_keep += 1
                elif b == edge2 and edge_in:
                    rest[n_rest] = rest[j]
                    n_rest += 1
        # the tokens left: by value (descending), then id, while top-k and top-p keep them
        neg = np.empty(n_rest, np.float64)
        for j in range(n_rest):
            neg[j] = -np.float64(p[rest[j]])
        order = np.argsort(neg, kind="mergesort")  # stable: equal values keep id order
        for j in range(n_rest):
            if kept >= k or before >= target:
                break
            ids[n_keep] = rest[order[j]]
            n_keep += 1
            kept += 1
            before -= neg[order[j]]
    s0 = _kept_above(p, bits, out, edge_bin, floor)
    for j in range(n_keep):
        x = p[ids[j]]
        if x >= floor:
            out[ids[j]] = x
            s0 += x
    _scaled(out, s0)
    return True


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _kept_at_least(p, out, floor):  # pragma: no cover - compiled
    """``out`` = the values of at least ``floor`` (others 0); returns their sum."""
    s = 0.0
    for i in range(p.shape[0]):
        x = p[i] if p[i] >= floor else 0.0
        out[i] = x
        s += x
    return s


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _kept_above(p, bits, out, edge_bin, floor):  # pragma: no cover - compiled
    """``out`` = the values in bins above ``edge_bin`` and of at least ``floor`` (others 0); their sum."""
    s = 0.0
    for i in range(p.shape[0]):
        x = p[i] if (bits[i] >> _SHIFT > edge_bin and p[i] >= floor) else 0.0
        out[i] = x
        s += x
    return s


@numba.njit(nogil=True, cache=True)
def filter_rows(probs, bits, top_k, top_p, min_p, out):  # pragma: no cover - compiled
    """Filter each row of ``probs`` ``[batch, vocab]`` into ``out``, renormalized; ``bits``: the values
    as float32 bit patterns (int32, same shape). Returns -1, or the first row holding a negative or
    NaN value (left unfiltered, and the rows after it)."""
    vocab = probs.shape[1]
    cnt = np.zeros(4 * _BINS, np.int64)
    mass = np.zeros(4 * _BINS, np.float64)
    ids = np.empty(vocab, np.int64)
    for r in range(probs.shape[0]):
        if not _filter_row(probs[r], bits[r], top_k[r], top_p[r], min_p[r], out[r], cnt, mass, ids):
            return r
    return -1


def filter_probs_rows(probs: np.ndarray, top_k: np.ndarray, top_p: np.ndarray, min_p: np.ndarray,
                      out: np.ndarray) -> int:
    """:func:`filter_rows` on float32 or float64 ``probs`` (the bit patterns made here)."""
    probs = np.ascontiguousarray(probs)
    bits = (probs if probs.dtype == np.float32 else probs.astype(np.float32)).view(np.int32)
    return int(filter_rows(probs, bits, top_k, top_p, min_p, out))


_BLOCK = 64  # a draw sums blocks of this many ids (vectorized), then walks one block


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _block_sums(row, sums):  # pragma: no cover - compiled
    """``sums[b]``: the sum of the positive values of ids ``[b * _BLOCK, (b + 1) * _BLOCK)``."""
    vocab = row.shape[0]
    for b in range(sums.shape[0]):
        t = 0.0
        for i in range(b * _BLOCK, min(vocab, (b + 1) * _BLOCK)):
            x = np.float64(row[i])
            t += x if x > 0.0 else 0.0
        sums[b] = t


@numba.njit(nogil=True, cache=True)
def draw_rows(probs, u):  # pragma: no cover - compiled
    """One id per row of ``probs`` ``[batch, vocab]``: where the running sum of the positive values
    (id order) first exceeds ``u[r]`` (in [0, 1)) times their sum; -1 for a row with none. (The
    sums are taken a block of ids at a time: at a boundary between two ids, rounding may pick
    either, as it may between numpy's ``cumsum`` and another order.)"""
    batch, vocab = probs.shape
    out = np.full(batch, -1, np.int64)
    sums = np.empty((vocab + _BLOCK - 1) // _BLOCK, np.float64)
    for r in range(batch):
        row = probs[r]
        _block_sums(row, sums)
        total = 0.0
        for b in range(sums.shape[0]):
            total += sums[b]
        if not total > 0.0:
            continue
        target = u[r] * total
        run = 0.0
        b = 0
        while b < sums.shape[0] - 1 and run + sums[b] <= target:  # the block where the sum passes it
            run += sums[b]
            b += 1
        pick = -1
        for i in range(b * _BLOCK, min(vocab, (b + 1) * _BLOCK)):
            x = np.float64(row[i])
            if x > 0.0:
                pick = i  # (rounding may leave the target at the block's end: its last positive id)
                run += x
                if run > target:
                    break
        while pick < 0:  # (a block whose sum rounded above nothing: the positive ids before it)
            b -= 1
            for i in range(b * _BLOCK, (b + 1) * _BLOCK):
                if row[i] > 0.0:
                    pick = i
        out[r] = pick
    return out
