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
from ..kernels.sampling import draw_rows, filter_probs_rows

__all__ = ["SamplingError", "filter_and_sample_torch", "filter_probs", "make_generator", "sample_from_probs",
           "top_logprobs"]


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


def _filter_params(batch: int, top_k: Any, top_p: Any, min_p: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row ``(top_k, top_p, min_p)`` arrays, checked."""
    ks = _row_params(top_k, batch, 0, "top_k").astype(np.int64)
    ps = _row_params(top_p, batch, 1.0, "top_p")
    mins = _row_params(min_p, batch, 0.0, "min_p")
    if ((ps <= 0) | (ps > 1)).any():
        raise SamplingError(f"top_p must be in (0, 1], got {ps[(ps <= 0) | (ps > 1)][0]}")
    if ((mins < 0) | (mins > 1)).any():
        raise SamplingError(f"min_p must be in [0, 1], got {mins[(mins < 0) | (mins > 1)][0]}")
    return ks, ps, mins


def filter_probs(probs: np.ndarray, *, top_k: Any = None, top_p: Any = None, min_p: Any = None) -> np.ndarray:
    """Apply per-row top-k / top-p / min-p to probabilities ``[batch, vocab]``; rows renormalized."""
    probs = np.asarray(probs)
    if probs.dtype not in (np.float32, np.float64):
        probs = probs.astype(np.float64)
    batch = probs.shape[0]
    ks, ps, mins = _filter_params(batch, top_k, top_p, min_p)
    out = np.empty_like(probs)
    bad = filter_probs_rows(probs, ks, ps, mins, out) if batch else -1  # (numba: no row sorts)
    if bad >= 0:
        raise SamplingError(f"row {bad}: probabilities must be non-negative numbers")
    return out


def _uniforms(generators: Sequence[np.random.Generator | None], batch: int) -> np.ndarray:
    """One uniform draw in [0, 1) per row, from the row's generator (None: fresh entropy)."""
    u = np.array([(g if g is not None else np.random.default_rng()).random() for g in generators], np.float64)
    if u.shape[0] != batch:
        raise SamplingError(f"need one generator per row: {batch} rows, {u.shape[0]} generators")
    return u


def sample_from_probs(probs: Any, generators: Sequence[np.random.Generator | None]) -> np.ndarray:
    """One token per row by inverse CDF with the row's generator (numpy or torch probs)."""
    if is_torch(probs):
        probs = probs.detach().float().cpu().numpy()
    probs = np.asarray(probs)
    if probs.dtype not in (np.float32, np.float64):
        probs = probs.astype(np.float64)
    u = _uniforms(generators, probs.shape[0])
    out = draw_rows(np.ascontiguousarray(probs), u)  # zero-probability tokens are never drawn
    dead = np.flatnonzero(out < 0)
    if dead.size:
        raise SamplingError(f"row {int(dead[0])}: every token is masked, nothing can be sampled")
    return out


def filter_and_sample_torch(probs: Any, generators: Sequence[np.random.Generator | None], *, top_k: Any = None,
                            top_p: Any = None, min_p: Any = None) -> np.ndarray:
    """:func:`filter_probs` then :func:`sample_from_probs`, as torch ops on the probabilities' device.

    For probabilities already on a GPU: the rows are filtered and drawn there, and only the drawn
    ids come back (not the ``[batch, vocab]`` probabilities). The uniform draw of each row comes
    from its generator as in :func:`sample_from_probs`, and the inverse CDF runs over the filtered
    row in token-id order, so a seeded request draws the same tokens on either path (up to float
    rounding at a boundary between two tokens' cumulative masses).
    """
    import torch

    batch, vocab = int(probs.shape[0]), int(probs.shape[1])
    ks, ps, mins = _filter_params(batch, top_k, top_p, min_p)
    dev = probs.device
    u = _uniforms(generators, batch)
    ks = np.where((ks <= 0) | (ks > vocab), vocab, ks)
    params = torch.from_numpy(np.stack([ks.astype(np.float64), np.where(ps >= 1.0, np.inf, ps), mins, u])).to(dev)
    k_t, p_t, min_t, u_t = params
    p = probs.detach().float()
    total = p.sum(dim=1, dtype=torch.float64)
    vals, order = torch.sort(p, dim=1, descending=True, stable=True)  # equal values: lower ids first
    before = torch.cumsum(vals, dim=1, dtype=torch.float64) - vals
    pos = torch.arange(vocab, device=dev, dtype=torch.float64)
    keep = (pos[None, :] < k_t[:, None]) & (before < (p_t * total)[:, None])  # top-k, top-p
    keep &= vals >= min_t[:, None] * vals[:, :1]  # min-p (vals[:, 0]: the row's max), compared in float64
    filtered = torch.zeros_like(p).scatter_(1, order, torch.where(keep, vals, torch.zeros_like(vals)))
    cdf = torch.cumsum(filtered, dim=1, dtype=torch.float64)
    mass = cdf[:, -1]
    idx = torch.searchsorted(cdf, (u_t * mass)[:, None], right=True)[:, 0]
    last = (vocab - 1) - torch.argmax(torch.flip(filtered > 0, dims=(1,)).to(torch.uint8), dim=1)
    drawn = torch.minimum(idx, last)  # (u * mass rounded up to the mass: the last kept token)
    out = torch.stack([drawn.to(torch.float64), mass]).cpu().numpy()
    dead = np.flatnonzero(~(out[1] > 0))
    if dead.size:
        raise SamplingError(f"row {int(dead[0])}: every token is masked, nothing can be sampled")
    return out[0].astype(np.int64)


def top_logprobs(logits: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, logprobs)`` of the ``n`` most likely tokens per row of ``logits`` (log-softmax).

    Logits on a GPU are reduced there (float32), and only the ``n`` per row come back.
    """
    if is_torch(logits) and logits.device.type != "cpu":
        return _top_logprobs_torch(logits, n)
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


def _top_logprobs_torch(logits: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_logprobs` as torch ops on the logits' device (float32)."""
    import torch

    top = torch.topk(torch.log_softmax(logits.detach().float(), dim=-1), min(n, int(logits.shape[1])), dim=-1)
    return top.indices.cpu().numpy().astype(np.int64), top.values.double().cpu().numpy()
