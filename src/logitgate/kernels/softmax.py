"""``softmax_with_temperature``: logits ``[batch, vocab]`` → probabilities, per-row temperature.

Row ``r`` becomes ``softmax(logits[r] / temperatures[r])``; a temperature of 0 (or below
``GREEDY_EPS``) gives the one-hot distribution of the row's argmax (the first one on ties),
so greedy decoding is sampling from it. A row whose logits are all ``-inf`` gives all zeros
(nothing can be sampled from it; the sampler reports that row).

    >>> import numpy as np
    >>> p = softmax_with_temperature(np.array([[0.0, 0.0], [1.0, 3.0]], np.float32), [1.0, 0.0])
    >>> p.tolist()
    [[0.5, 0.5], [0.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import check_logits_2d, is_torch, wants_triton

__all__ = ["GREEDY_EPS", "softmax_with_temperature"]

GREEDY_EPS = 1e-5


def _softmax_rows(x: np.ndarray, temps: np.ndarray, out: np.ndarray) -> None:
    """Row-wise temperature softmax with numpy's SIMD ufuncs (exp is vectorized there, not in numba).

    Works on blocks of rows so the temporaries stay in cache; every op releases the GIL.
    """
    batch, vocab = x.shape
    step = max(1, (1 << 20) // max(vocab, 1))
    for a in range(0, batch, step):
        b = min(batch, a + step)
        xs, o, t = x[a:b], out[a:b], temps[a:b]
        mx = xs.max(axis=1)
        dead = mx == -np.inf
        greedy = (t < GREEDY_EPS) & ~dead
        np.subtract(xs, np.where(dead, 0.0, mx)[:, None], out=o, casting="same_kind")
        with np.errstate(over="ignore"):  # x - max far below -FLT_MAX * T: -inf, probability 0
            o *= np.where(greedy | dead, 1.0, 1.0 / np.maximum(t, GREEDY_EPS)).astype(o.dtype)[:, None]
        np.exp(o, out=o)
        total = o.sum(axis=1, dtype=np.float64)
        total[dead] = 1.0
        o *= (1.0 / total).astype(o.dtype)[:, None]
        if greedy.any():
            rows = np.flatnonzero(greedy)
            o[rows] = 0.0
            o[rows, xs[rows].argmax(axis=1)] = 1.0


def _temperatures(temperatures: Any, batch: int, fn: str) -> np.ndarray:
    if is_torch(temperatures):
        temperatures = temperatures.detach().cpu().numpy()
    t = np.asarray(temperatures, dtype=np.float32)
    if t.ndim == 0:
        t = np.full(batch, float(t), np.float32)
    if t.shape != (batch,):
        raise ValueError(f"{fn}: temperatures must be a scalar or have shape ({batch},), got {t.shape}")
    if np.isnan(t).any() or (t < 0).any():
        raise ValueError(f"{fn}: temperatures must be >= 0, got {t[np.isnan(t) | (t < 0)][0]}")
    return np.ascontiguousarray(t)


def softmax_with_temperature(logits: Any, temperatures: Any, *, out: Any = None) -> Any:
    """Per-row temperature softmax (numpy → numba kernel; torch → torch ops, CPU or CUDA)."""
    fn = "softmax_with_temperature"
    batch, vocab = check_logits_2d(logits, fn)
    temps = _temperatures(temperatures, batch, fn)
    if wants_triton(logits) and out is None:
        from .triton_logits import softmax_with_temperature_triton

        return softmax_with_temperature_triton(logits, temps)
    if is_torch(logits) and logits.device.type == "cpu" and out is None:
        import torch  # CPU tensors: the numba kernel on a numpy view (no torch thread pool)

        return torch.from_numpy(softmax_with_temperature(logits.detach().float().numpy(), temps))
    if is_torch(logits):
        import torch

        x = logits.float()
        t = torch.from_numpy(temps).to(x.device)
        greedy = t < GREEDY_EPS
        probs = torch.softmax(x / torch.where(greedy, torch.ones_like(t), t)[:, None], dim=-1)
        if bool(greedy.any()):
            onehot = torch.zeros_like(probs)
            onehot.scatter_(1, x.argmax(dim=-1, keepdim=True), 1.0)
            probs = torch.where(greedy[:, None], onehot, probs)
        dead = torch.isneginf(x).all(dim=-1)
        if bool(dead.any()):
            probs[dead] = 0.0
        if out is not None:
            out.copy_(probs)
            return out
        return probs
    x = np.ascontiguousarray(logits, dtype=np.float32 if logits.dtype != np.float64 else np.float64)
    res = out if out is not None else np.empty((batch, vocab), dtype=np.float32)
    if res.shape != (batch, vocab):
        raise ValueError(f"{fn}: out must have shape {(batch, vocab)}, got {res.shape}")
    _softmax_rows(x, temps, res)
    return res
