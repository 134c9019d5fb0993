"""Sampling from processed logits: greedy, temperature, top-k, top-p, min-p, seeds, log-probs.

Filters combine per row (any subset, per-row values): top-k keeps the ``k`` most likely
tokens; top-p keeps the smallest most-likely set whose mass reaches ``p`` (a token is kept
when the mass strictly before it is below ``p``); min-p keeps tokens with probability at
least ``min_p`` times the largest. The kept probabilities are renormalized and one token is
drawn with the row's random generator, so a request with a seed is reproducible. Greedy rows
(temperature 0) arrive one-hot from :func:`~logitgate.kernels.softmax.softmax_with_temperature`.

    >>> import numpy as np
    >>> probs = np.array([[0.5, 0.3, 0.15, 0.05]])
    >>> filter_probs(probs, top_k=[0], top_p=[0.7], min_p=[0.0]).round(3).tolist()
    [[0.625, 0.375, 0.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import LogitgateError
from ..kernels._arrays import is_torch

__all__ = ["SamplingError", "filter_probs", "make_generator", "sample_from_probs", "top_logprobs"]

_PARTIAL = 2048  # candidates examined before falling back to a full sort for top-p


class SamplingError(LogitgateError, ValueError):
    """Nothing can be sampled (every token masked) or bad sampling parameters."""


def make_generator(seed: int | None) -> np.random.Generator:
    """The per-request generator: seeded → reproducible, None → fresh entropy."""
    return np.random.Generator(np.random.Philox(seed))


def _row_params(values: Sequence[float] | float | None, batch: int, default: float, name: str) -> np.ndarray:
    if values is None:
        return np.full(batch, default, np.float64)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(batch, float(arr))
    if arr.shape != (batch,):
        raise SamplingError(f"{name} must be a scalar or have {batch} values, got shape {arr.shape}")
    return arr


def _filter_row(p: np.ndarray, k: int, top_p: float, min_p: float) -> np.ndarray:
    vocab = p.shape[0]
    if k <= 0 or k > vocab:
        k = vocab
    if k == vocab and top_p >= 1.0 and min_p <= 0.0:
        return p
    m = min(k, _PARTIAL) if top_p < 1.0 or k < vocab else vocab
    if m < vocab:
        cand = np.argpartition(-p, m - 1)[:m]
    else:
        cand = np.arange(vocab)
    cand = cand[np.lexsort((cand, -p[cand]))]
    total = float(p.sum())
    if top_p < 1.0:
        before = np.cumsum(p[cand]) - p[cand]
        if m < k and before[-1] + p[cand[-1]] < top_p * total:  # not enough mass among the candidates
            cand = np.lexsort((np.arange(vocab), -p))[:k]
            before = np.cumsum(p[cand]) - p[cand]
        cand = cand[before < top_p * total]
    cand = cand[:k]
    if min_p > 0.0 and cand.size:
        cand = cand[p[cand] >= min_p * p[cand[0]]]
    out = np.zeros_like(p)
    out[cand] = p[cand]
    return out


def filter_probs(probs: np.ndarray, *, top_k: Any = None, top_p: Any = None, min_p: Any = None) -> np.ndarray:
    """Apply per-row top-k / top-p / min-p to probabilities ``[batch, vocab]``; rows renormalized."""
    probs = np.asarray(probs, dtype=np.float64)
    batch = probs.shape[0]
    ks = _row_params(top_k, batch, 0, "top_k").astype(np.int64)
    ps = _row_params(top_p, batch, 1.0, "top_p")
    mins = _row_params(min_p, batch, 0.0, "min_p")
    if ((ps <= 0) | (ps > 1)).any():
        raise SamplingError(f"top_p must be in (0, 1], got {ps[(ps <= 0) | (ps > 1)][0]}")
    if ((mins < 0) | (mins > 1)).any():
        raise SamplingError(f"min_p must be in [0, 1], got {mins[(mins < 0) | (mins > 1)][0]}")
    out = np.empty_like(probs)
    for r in range(batch):
        row = _filter_row(probs[r], int(ks[r]), float(ps[r]), float(mins[r]))
        s = row.sum()
        out[r] = row / s if s > 0 else row
    return out


def sample_from_probs(probs: Any, generators: Sequence[np.random.Generator | None]) -> np.ndarray:
    """One token per row by inverse CDF with the row's generator (numpy or torch probs)."""
    if is_torch(probs):
        probs = probs.detach().float().cpu().numpy()
    probs = np.asarray(probs)
    out = np.empty(probs.shape[0], np.int64)
    for r in range(probs.shape[0]):
        c = np.cumsum(probs[r], dtype=np.float64)
        total = c[-1]
        if not total > 0:
            raise SamplingError(f"row {r}: every token is masked, nothing can be sampled")
        g = generators[r] if generators[r] is not None else np.random.default_rng()
        u = g.random() * total
        i = int(np.searchsorted(c, u, side="right"))
        i = min(i, probs.shape[1] - 1)
        while probs[r, i] <= 0:  # u landed on a boundary next to zero-probability tokens
            i -= 1
        out[r] = i
    return out


def top_logprobs(logits: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, logprobs)`` of the ``n`` most likely tokens per row of ``logits`` (log-softmax)."""
    if is_torch(logits):
        logits = logits.detach().float().cpu().numpy()
    x = np.asarray(logits, dtype=np.float64)
    mx = x.max(axis=1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    lse = mx + np.log(np.exp(x - mx).sum(axis=1, keepdims=True))
    lp = x - lse
    n = min(n, x.shape[1])
    idx = np.argpartition(-lp, n - 1, axis=1)[:, :n]
    order = np.argsort(-np.take_along_axis(lp, idx, axis=1), axis=1, kind="stable")
    ids = np.take_along_axis(idx, order, axis=1)
    return ids, np.take_along_axis(lp, ids, axis=1)
