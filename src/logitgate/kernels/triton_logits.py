"""Triton kernels for logits on GPU: bias, penalties, temperature softmax, and one fused pass.

Imported lazily (only when a CUDA tensor, or an explicit ``*_triton`` call, needs it). All
kernels also run on CPU tensors under ``TRITON_INTERPRET=1``, which is how CI checks them.

The fused kernel (:func:`fused_probs_triton`) does, per row and in one launch: sparse logit
bias, sparse penalties (written back to ``logits`` -- only the touched entries), then the
bitmask and temperature softmax with an online max/sum, producing ``probs``. The dense row
is streamed twice (online max/sum, then normalize-and-write) -- the second stream mostly
hits L2 -- where MLC-LLM makes four passes (bias, penalty, mask, softmax).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl

from .softmax import GREEDY_EPS

__all__ = [
    "apply_logit_bias_triton",
    "apply_penalty_triton",
    "fused_probs_triton",
    "softmax_with_temperature_triton",
    "to_csr",
]


@triton.jit
def _bias_kernel(logits_ptr, stride, rows_ptr, toks_ptr, bias_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    r = tl.load(rows_ptr + offs, mask=ok, other=0).to(tl.int64)
    t = tl.load(toks_ptr + offs, mask=ok, other=0).to(tl.int64)
    b = tl.load(bias_ptr + offs, mask=ok, other=0.0)
    tl.atomic_add(logits_ptr + r * stride + t, b, mask=ok)


@triton.jit
def _penalty_kernel(logits_ptr, stride, seq_ptr, pos_ptr, toks_ptr, cnt_ptr, pen_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    p = tl.load(pos_ptr + offs, mask=ok, other=0).to(tl.int64)
    r = tl.load(seq_ptr + p, mask=ok, other=0).to(tl.int64)
    t = tl.load(toks_ptr + offs, mask=ok, other=0).to(tl.int64)
    c = tl.load(cnt_ptr + offs, mask=ok, other=0).to(tl.float32)
    presence = tl.load(pen_ptr + p * 3, mask=ok, other=0.0)
    frequency = tl.load(pen_ptr + p * 3 + 1, mask=ok, other=0.0)
    repetition = tl.load(pen_ptr + p * 3 + 2, mask=ok, other=1.0)
    v = tl.load(logits_ptr + r * stride + t, mask=ok, other=0.0).to(tl.float32)
    v = v - (presence + c * frequency)
    v = tl.where(v < 0, v * repetition, v / repetition)
    tl.store(logits_ptr + r * stride + t, v, mask=ok)


@triton.jit
def _softmax_kernel(logits_ptr, probs_ptr, mask_ptr, temps_ptr, stride, pstride, mstride, vocab, greedy_eps,
                    HAS_MASK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    t = tl.load(temps_ptr + row)
    greedy = t < greedy_eps
    inv = tl.where(greedy, 1.0, 1.0 / tl.where(greedy, 1.0, t))
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    best_v = tl.full((), float("-inf"), tl.float32)
    best_i = tl.zeros((), tl.int64)
    for start in range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < vocab
        x = tl.load(logits_ptr + row * stride + cols, mask=ok, other=float("-inf")).to(tl.float32)
        if HAS_MASK:
            w = tl.load(mask_ptr + row * mstride + cols // 32, mask=ok, other=0)
            x = tl.where(((w >> (cols % 32)) & 1) != 0, x, float("-inf"))
        bm = tl.max(x, axis=0)
        bi = tl.min(tl.where(x == bm, cols, 2147483647), axis=0).to(tl.int64)
        upd = bm > best_v
        best_i = tl.where(upd, bi, best_i)
        best_v = tl.where(upd, bm, best_v)
        new_m = tl.maximum(m, bm * inv)
        safe_m = tl.where(new_m == float("-inf"), 0.0, new_m)
        s = s * tl.exp(m - safe_m) + tl.sum(tl.exp(x * inv - safe_m), axis=0)
        m = new_m
    dead = best_v == float("-inf")
    safe_m = tl.where(dead, 0.0, m)
    scale = tl.where(dead, 0.0, 1.0 / tl.where(dead, 1.0, s))
    for start in range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < vocab
        x = tl.load(logits_ptr + row * stride + cols, mask=ok, other=float("-inf")).to(tl.float32)
        if HAS_MASK:
            w = tl.load(mask_ptr + row * mstride + cols // 32, mask=ok, other=0)
            x = tl.where(((w >> (cols % 32)) & 1) != 0, x, float("-inf"))
        p = tl.exp(x * inv - safe_m) * scale
        onehot = tl.where(cols == best_i, scale * 0.0 + tl.where(dead, 0.0, 1.0), 0.0)
        p = tl.where(greedy, onehot, p)
        tl.store(probs_ptr + row * pstride + cols, p, mask=ok)


@triton.jit
def _fused_sparse_kernel(logits_ptr, stride, bias_ptr_ptr, bias_tok_ptr, bias_val_ptr,
                         pen_ptr_ptr, pen_tok_ptr, pen_cnt_ptr, pen_ptr,
                         HAS_BIAS: tl.constexpr, HAS_PEN: tl.constexpr, SBLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if HAS_BIAS:
        lo = tl.load(bias_ptr_ptr + row)
        hi = tl.load(bias_ptr_ptr + row + 1)
        for start in range(lo, hi, SBLOCK):
            offs = start + tl.arange(0, SBLOCK)
            ok = offs < hi
            t = tl.load(bias_tok_ptr + offs, mask=ok, other=0).to(tl.int64)
            b = tl.load(bias_val_ptr + offs, mask=ok, other=0.0)
            tl.atomic_add(logits_ptr + row * stride + t, b, mask=ok)
    if HAS_PEN:
        tl.debug_barrier()
        presence = tl.load(pen_ptr + row * 3)
        frequency = tl.load(pen_ptr + row * 3 + 1)
        repetition = tl.load(pen_ptr + row * 3 + 2)
        lo = tl.load(pen_ptr_ptr + row)
        hi = tl.load(pen_ptr_ptr + row + 1)
        for start in range(lo, hi, SBLOCK):
            offs = start + tl.arange(0, SBLOCK)
            ok = offs < hi
            t = tl.load(pen_tok_ptr + offs, mask=ok, other=0).to(tl.int64)
            c = tl.load(pen_cnt_ptr + offs, mask=ok, other=0).to(tl.float32)
            v = tl.load(logits_ptr + row * stride + t, mask=ok, other=0.0).to(tl.float32)
            v = v - (presence + c * frequency)
            v = tl.where(v < 0, v * repetition, v / repetition)
            tl.store(logits_ptr + row * stride + t, v, mask=ok)


def _t(x: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x, dtype=dtype, device=device)


def apply_logit_bias_triton(logits: torch.Tensor, pos2seq_id: Any, token_ids: Any, logit_bias: Any) -> None:
    """Triton version of :func:`~logitgate.kernels.bias.apply_logit_bias_inplace` (float32 logits)."""
    dev = logits.device
    rows, toks = _t(pos2seq_id, torch.int32, dev), _t(token_ids, torch.int32, dev)
    bias = _t(logit_bias, torch.float32, dev)
    n = rows.shape[0]
    if n:
        _bias_kernel[(triton.cdiv(n, 256),)](logits, logits.stride(0), rows, toks, bias, n, BLOCK=256)


def apply_penalty_triton(logits: torch.Tensor, seq_ids: Any, pos2seq_id: Any, token_ids: Any, token_cnt: Any,
                         penalties: Any) -> None:
    """Triton version of :func:`~logitgate.kernels.penalty.apply_penalty_inplace` (float32 logits)."""
    dev = logits.device
    seqs, pos = _t(seq_ids, torch.int32, dev), _t(pos2seq_id, torch.int32, dev)
    toks, cnt = _t(token_ids, torch.int32, dev), _t(token_cnt, torch.int32, dev)
    pen = _t(penalties, torch.float32, dev).contiguous()
    n = pos.shape[0]
    if n:
        _penalty_kernel[(triton.cdiv(n, 256),)](logits, logits.stride(0), seqs, pos, toks, cnt, pen, n, BLOCK=256)


def softmax_with_temperature_triton(logits: torch.Tensor, temperatures: Any, bitmask: torch.Tensor | None = None,
                                    *, block: int = 2048) -> torch.Tensor:
    """Temperature softmax (optionally under a bitmask) in one Triton launch; returns float32 probs."""
    batch, vocab = logits.shape
    temps = _t(temperatures, torch.float32, logits.device).reshape(-1).expand(batch).contiguous()
    probs = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
    mask = bitmask if bitmask is not None else probs  # dummy pointer when unused
    _softmax_kernel[(batch,)](logits, probs, mask, temps, logits.stride(0), probs.stride(0),
                              mask.stride(0) if bitmask is not None else 0, vocab, GREEDY_EPS,
                              HAS_MASK=bitmask is not None, BLOCK=block)
    return probs


def to_csr(rows: np.ndarray, batch: int, *cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """Sort sparse entries by row: ``(row_ptr[batch+1], *cols_sorted)``."""
    order = np.argsort(rows, kind="stable")
    ptr = np.zeros(batch + 1, np.int32)
    np.cumsum(np.bincount(rows, minlength=batch), out=ptr[1:])
    return (ptr, *(c[order] for c in cols))


def fused_probs_triton(logits: torch.Tensor, temperatures: Any, *, bitmask: torch.Tensor | None = None,
                       bias: tuple[Any, Any, Any] | None = None,
                       penalty: tuple[Any, Any, Any, Any, Any] | None = None, block: int = 2048) -> torch.Tensor:
    """Bias → penalties → bitmask → temperature softmax, fused; returns probs ``[batch, vocab]``.

    ``bias = (pos2seq_id, token_ids, logit_bias)`` and ``penalty = (seq_ids, pos2seq_id,
    token_ids, token_cnt, penalties)`` use the layouts of the unfused kernels. ``logits`` gets
    the sparse updates in place (as the unfused kernels would); the mask is not written back.
    """
    batch, _ = logits.shape
    dev = logits.device
    if bias is not None or penalty is not None:
        dummy_i = torch.zeros(1, dtype=torch.int32, device=dev)
        dummy_f = torch.zeros(1, dtype=torch.float32, device=dev)
        b_args = [dummy_i, dummy_i, dummy_f]
        p_args = [dummy_i, dummy_i, dummy_i, dummy_f]
        if bias is not None:
            rows, toks, vals = (np.asarray(x) for x in bias)
            ptr, toks, vals = to_csr(rows.astype(np.int64), batch, toks.astype(np.int32), vals.astype(np.float32))
            b_args = [_t(ptr, torch.int32, dev), _t(toks, torch.int32, dev), _t(vals, torch.float32, dev)]
        if penalty is not None:
            seq_ids, pos, toks, cnt, pens = (np.asarray(x) for x in penalty)
            row_of_entry = seq_ids.astype(np.int64)[pos.astype(np.int64)]
            ptr, toks, cnt = to_csr(row_of_entry, batch, toks.astype(np.int32), cnt.astype(np.int32))
            per_row = np.tile(np.array([0.0, 0.0, 1.0], np.float32), (batch, 1))
            per_row[seq_ids.astype(np.int64)] = np.asarray(pens, np.float32).reshape(-1, 3)
            p_args = [_t(ptr, torch.int32, dev), _t(toks, torch.int32, dev), _t(cnt, torch.int32, dev),
                      _t(per_row, torch.float32, dev).contiguous()]
        _fused_sparse_kernel[(batch,)](logits, logits.stride(0), *b_args, *p_args,
                                       HAS_BIAS=bias is not None, HAS_PEN=penalty is not None, SBLOCK=128)
    return softmax_with_temperature_triton(logits, temperatures, bitmask, block=block)
