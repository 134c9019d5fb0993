"""``apply_token_bitmask_inplace``: set the logits of disallowed tokens to ``-inf``.

Works on numpy arrays (a numba kernel, a 32-bit word at a time, GIL released), torch CPU
tensors (the same kernel on a zero-copy view) and torch CUDA tensors (a Triton kernel; torch
ops when Triton is missing). The kernel writes the bit pattern of ``-inf`` through an integer
view of the logits, so float16, bfloat16, float32 and float64 all take the same path.

Semantics (those of xgrammar): row ``i`` of ``logits`` uses row ``i`` of ``bitmask``;
``indices`` restricts the rows touched; only the first ``vocab_size`` columns are considered
(default: all columns), and columns beyond the mask's ``32 * words`` bits count as disallowed.

    >>> import numpy as np
    >>> x = np.zeros((1, 5), np.float32)
    >>> apply_token_bitmask_inplace(x, np.array([[0b10101]], np.int32))
    >>> x.tolist()
    [[0.0, -inf, 0.0, -inf, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ._arrays import is_torch

__all__ = ["apply_token_bitmask_inplace", "apply_token_bitmask_inplace_triton"]

# -inf bit patterns by element width, as the signed integer of the same width
_NEG_INF_BITS = {
    "float16": np.int16(np.array(0xFC00, np.uint16).view(np.int16)),
    "bfloat16": np.int16(np.array(0xFF80, np.uint16).view(np.int16)),
    "float32": np.int32(np.array(0xFF800000, np.uint32).view(np.int32)),
    "float64": np.int64(np.array(0xFFF0000000000000, np.uint64).view(np.int64)),
}
_INT_VIEW = {"float16": np.int16, "bfloat16": np.int16, "float32": np.int32, "float64": np.int64}


@numba.njit(nogil=True, cache=True)
def _apply_kernel(bits_view, bitmask, rows, vocab, neg_inf):  # pragma: no cover - compiled
    words = bitmask.shape[1]
    covered = min(vocab, words * 32)
    for k in range(rows.shape[0]):
        r = rows[k]
        for w in range((covered + 31) // 32):
            word = bitmask[r, w]
            if word == -1:
                continue
            base = w * 32
            end = min(base + 32, covered)
            if word == 0:
                for j in range(base, end):
                    bits_view[r, j] = neg_inf
                continue
            for j in range(base, end):
                if not (word >> (j - base)) & 1:
                    bits_view[r, j] = neg_inf
        for j in range(covered, vocab):
            bits_view[r, j] = neg_inf


def _dtype_name(x: Any) -> str:
    return str(x.dtype).replace("torch.", "")


def _check(logits: Any, bitmask: Any, indices: Any, vocab_size: int | None) -> tuple[Any, Any, np.ndarray, int]:
    fn = "apply_token_bitmask_inplace"
    if len(logits.shape) not in (1, 2):
        raise ValueError(f"{fn}: logits must be [vocab] or [batch, vocab], got shape {tuple(logits.shape)}")
    if len(bitmask.shape) not in (1, 2):
        raise ValueError(f"{fn}: bitmask must be [words] or [batch, words], got shape {tuple(bitmask.shape)}")
    if _dtype_name(bitmask) != "int32":
        raise TypeError(f"{fn}: bitmask must be int32, got {bitmask.dtype}")
    name = _dtype_name(logits)
    if name not in _NEG_INF_BITS:
        raise TypeError(f"{fn}: logits must be float16, bfloat16, float32 or float64, got {logits.dtype}")
    if len(logits.shape) == 1:
        logits = logits[None]
    if len(bitmask.shape) == 1:
        bitmask = bitmask[None]
    batch, width = int(logits.shape[0]), int(logits.shape[1])
    vocab = width if vocab_size is None else int(vocab_size)
    if not 0 <= vocab <= width:
        raise ValueError(f"{fn}: vocab_size={vocab} must be in [0, {width}] (the logits width)")
    if indices is None:
        if int(bitmask.shape[0]) < batch:
            raise ValueError(f"{fn}: bitmask has {bitmask.shape[0]} rows but logits have {batch}")
        rows = np.arange(batch, dtype=np.int64)
    else:
        rows = np.asarray(indices.tolist() if is_torch(indices) else indices, dtype=np.int64).reshape(-1)
        limit = min(batch, int(bitmask.shape[0]))
        if rows.size and (rows.min() < 0 or rows.max() >= limit):
            raise IndexError(f"{fn}: indices must be in [0, {limit}) (rows of both logits and bitmask), "
                             f"got {int(rows[(rows < 0) | (rows >= limit)][0])}")
    return logits, bitmask, rows, vocab


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Any = None, vocab_size: int | None = None) -> None:
    """Set ``logits[r, t] = -inf`` where bit ``t`` of ``bitmask[r]`` is 0 (numpy, torch CPU, torch CUDA)."""
    logits2, bitmask2, rows, vocab = _check(logits, bitmask, indices, vocab_size)
    if not rows.size or vocab == 0:
        return
    if is_torch(logits2):
        if logits2.device.type == "cuda":
            if bitmask2.device != logits2.device:
                bitmask2 = bitmask2.to(logits2.device)
            try:
                import triton  # noqa: F401
            except ImportError:
                _apply_torch(logits2, bitmask2, rows, vocab)
                return
            from .triton_mask import apply_bitmask_triton

            apply_bitmask_triton(logits2, bitmask2, rows, vocab)
            return
        if logits2.stride(-1) != 1 or logits2.device.type != "cpu":
            _apply_torch(logits2, bitmask2, rows, vocab)
            return
        import torch

        int_dtype = {2: torch.int16, 4: torch.int32, 8: torch.int64}[logits2.element_size()]
        view = logits2.view(int_dtype).numpy()
        mask = bitmask2.cpu().numpy() if bitmask2.device.type != "cpu" else bitmask2.numpy()
        _apply_kernel(view, mask, rows, vocab, _NEG_INF_BITS[_dtype_name(logits2)])
        return
    if not isinstance(logits2, np.ndarray) or not isinstance(bitmask2, np.ndarray):
        raise TypeError("apply_token_bitmask_inplace: logits and bitmask must both be numpy arrays or torch tensors")
    if logits2.strides[-1] != logits2.itemsize:
        raise ValueError("apply_token_bitmask_inplace: logits rows must be contiguous (stride 1 in the last axis)")
    view = logits2.view(_INT_VIEW[logits2.dtype.name])
    _apply_kernel(view, bitmask2, rows, vocab, _NEG_INF_BITS[logits2.dtype.name])


def _apply_torch(logits: Any, bitmask: Any, rows: np.ndarray, vocab: int) -> None:
    """Plain torch ops (fallback for strided tensors and CUDA without Triton)."""
    import torch

    dev = logits.device
    r = torch.from_numpy(rows).to(dev)
    words = bitmask[r].to(dev)
    shifts = torch.arange(32, device=dev, dtype=torch.int32)
    allowed = ((words.unsqueeze(-1) >> shifts) & 1).bool().reshape(len(rows), -1)
    cols = min(vocab, allowed.shape[1])
    sub = logits[r, :vocab]
    keep = torch.zeros_like(sub, dtype=torch.bool)
    keep[:, :cols] = allowed[:, :cols]
    logits[r, :vocab] = sub.masked_fill(~keep, float("-inf"))


def apply_token_bitmask_inplace_triton(logits: Any, bitmask: Any, indices: Any = None,
                                       vocab_size: int | None = None) -> None:
    """The Triton kernel explicitly (any device Triton runs on, incl. CPU under ``TRITON_INTERPRET=1``)."""
    logits2, bitmask2, rows, vocab = _check(logits, bitmask, indices, vocab_size)
    if rows.size and vocab:
        from .triton_mask import apply_bitmask_triton

        apply_bitmask_triton(logits2, bitmask2, rows, vocab)
