"""The Triton kernel behind :func:`~logitgate.kernels.apply_mask.apply_token_bitmask_inplace` on GPU.

Imported only when a Triton launch is needed (this module imports torch and triton at the top).
Each program masks ``BLOCK_WORDS * 32`` columns of one row: it loads ``BLOCK_WORDS`` mask words
once, expands them to a ``[BLOCK_WORDS, 32]`` tile of bits and stores ``-inf`` (cast to the
logits' dtype) where a bit is 0; logits are never read.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

__all__ = ["apply_bitmask_triton"]


@triton.jit
def _bitmask_kernel(logits_ptr, mask_ptr, rows_ptr, lstride, cstride, mstride, vocab, words,
                    HAS_ROWS: tl.constexpr, BLOCK_WORDS: tl.constexpr):
    pid = tl.program_id(0)
    if HAS_ROWS:
        row = tl.load(rows_ptr + pid).to(tl.int64)
    else:
        row = pid.to(tl.int64)
    widx = tl.program_id(1) * BLOCK_WORDS + tl.arange(0, BLOCK_WORDS)
    w = tl.load(mask_ptr + row * mstride + widx, mask=widx < words, other=0)
    bit = tl.arange(0, 32)
    cols = widx[:, None] * 32 + bit[None, :]
    allowed = ((w[:, None] >> bit[None, :]) & 1) != 0
    ptrs = logits_ptr + row * lstride + cols * cstride
    neg = tl.full([BLOCK_WORDS, 32], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
    tl.store(ptrs, neg, mask=(cols < vocab) & (~allowed))


def apply_bitmask_triton(logits: torch.Tensor, bitmask: torch.Tensor, rows: np.ndarray | None, vocab: int,
                         block_words: int = 128) -> None:
    """Mask ``logits[rows, :vocab]`` (``rows=None``: every row) under ``bitmask`` on the same device."""
    if bitmask.stride(-1) != 1:
        bitmask = bitmask.contiguous()
    if rows is None:
        n, r = int(logits.shape[0]), bitmask  # rows_ptr unused when HAS_ROWS is False
    else:
        n, r = len(rows), torch.as_tensor(np.ascontiguousarray(rows, dtype=np.int32)).to(logits.device)
    grid = (n, triton.cdiv(vocab, 32 * block_words))
    _bitmask_kernel[grid](logits, bitmask, r, logits.stride(0), logits.stride(1), bitmask.stride(0), vocab,
                          bitmask.shape[1], HAS_ROWS=rows is not None, BLOCK_WORDS=block_words)
