"""The Triton kernel behind :func:`~logitgate.kernels.apply_mask.apply_token_bitmask_inplace` on GPU.

Imported only when a Triton launch is needed (this module imports torch and triton at the top).
Each program masks ``BLOCK_WORDS * 32`` columns of one row: it loads ``BLOCK_WORDS`` mask words
once and expands them to a ``[BLOCK_WORDS, 32]`` tile of bits. An all-ones word's 32 columns are
left alone (neither read nor written), an all-zero word's are written ``-inf`` without being
read, and a mixed word's are read, masked and written back whole -- so every write covers a
word's 32 consecutive columns (whole memory sectors). Storing only the cleared bits' columns
made the memory read-modify-write partial sectors: on an H100, 256 rows of 151,936 took 200 µs
(random masks) and 131 µs (sparse) that way, 116 and 67 µs this way; mostly-allowed masks pay
for the mixed words' reads (19 → 23 µs).
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
    inside = cols < vocab
    write = inside & (w != -1)[:, None]
    read = write & (w != 0)[:, None]
    ptrs = logits_ptr + row * lstride + cols * cstride
    neg = tl.full([BLOCK_WORDS, 32], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
    x = tl.load(ptrs, mask=read, other=neg)
    tl.store(ptrs, tl.where(allowed, x, neg), mask=write)

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
