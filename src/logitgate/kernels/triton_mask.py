"""The Triton kernel behind :func:`~logitgate.kernels.apply_mask.apply_token_bitmask_inplace` on GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl

__all__ = ["apply_bitmask_triton"]


@triton.jit
def _bitmask_kernel(logits_ptr, mask_ptr, rows_ptr, lstride, mstride, vocab, words, BLOCK: tl.constexpr):
    row = tl.load(rows_ptr + tl.program_id(0)).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < vocab
    covered = cols < words * 32
    w = tl.load(mask_ptr + row * mstride + cols // 32, mask=inside & covered, other=0)
    allowed = ((w >> (cols % 32)) & 1) != 0
    tl.store(logits_ptr + row * lstride + cols, float("-inf"), mask=inside & (~allowed))


def apply_bitmask_triton(logits: torch.Tensor, bitmask: torch.Tensor, rows: np.ndarray, vocab: int,
                         block: int = 4096) -> None:
    """Mask ``logits[rows, :vocab]`` under ``bitmask`` (same device) with one Triton launch."""
    r = torch.from_numpy(np.ascontiguousarray(rows, dtype=np.int32)).to(logits.device)
    grid: Any = (len(rows), triton.cdiv(vocab, block))
    _bitmask_kernel[grid](logits, bitmask, r, logits.stride(0), bitmask.stride(0), vocab, bitmask.shape[1],
                          BLOCK=block)
