"""Triton kernels for logits on GPU: bias, penalties, temperature softmax, and one fused pass.

Imported lazily (only when a CUDA tensor, or an explicit ``*_triton`` call, needs it). All
kernels also run on CPU tensors under ``TRITON_INTERPRET=1``, which is how CI checks them.

The fused kernel (:func:`fused_probs_triton`) does, per row and in one launch: sparse logit
bias, sparse penalties (written back to ``logits`` -- only the touched entries), then the
bitmask and temperature softmax with an online max/sum, producing ``probs``. The dense row
is streamed twice (online max/sum, then normalize-and-write) -- the second stream mostly
hits L2 -- where MLC-LLM makes four passes (bias, penalty, mask, softmax). On a GPU these
calls are bound by the host more than by the device (a Triton launch took 14-28 µs of Python on
an H100 machine's host; the work itself is a few µs below large batches), so every call uploads
its host arrays in one copy and the fused path is one launch.
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
def _softmax_row(logits_ptr, probs_ptr, mask_ptr, temps_ptr, row, stride, pstride, mstride, mwords, mvocab, vocab,
                 greedy_eps, HAS_MASK: tl.constexpr, WRITE_MASK: tl.constexpr, BLOCK: tl.constexpr):
    """Temperature softmax of one row under its bitmask; ``WRITE_MASK`` also stores -inf into masked logits.

    The mask governs columns below ``mvocab`` (those past its ``32 * mwords`` bits are
    disallowed); columns from ``mvocab`` on are allowed.
    """
    t = tl.load(temps_ptr + row)
    greedy = t < greedy_eps
    inv = tl.where(greedy, 1.0, 1.0 / tl.where(greedy, 1.0, t))
    # online max and sum over the raw logits: exp((x - max) / T), the max subtracted before
    # the temperature divides, as the CPU kernel does (x / T itself may overflow float32)
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    best_i = tl.zeros((), tl.int64)
    for start in range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < vocab
        x = tl.load(logits_ptr + row * stride + cols, mask=ok, other=float("-inf")).to(tl.float32)
        if HAS_MASK:
            w = tl.load(mask_ptr + row * mstride + cols // 32, mask=ok & (cols // 32 < mwords), other=0)
            x = tl.where((((w >> (cols % 32)) & 1) != 0) | (cols >= mvocab), x, float("-inf"))
        bm = tl.max(x, axis=0)
        bi = tl.min(tl.where(x == bm, cols, 2147483647), axis=0).to(tl.int64)
        best_i = tl.where(bm > m, bi, best_i)  # strictly greater: the first maximum wins ties
        new_m = tl.maximum(m, bm)
        safe_m = tl.where(new_m == float("-inf"), 0.0, new_m)
        s = s * tl.exp((m - safe_m) * inv) + tl.sum(tl.exp((x - safe_m) * inv), axis=0)
        m = new_m
    dead = m == float("-inf")
    safe_m = tl.where(dead, 0.0, m)
    scale = tl.where(dead, 0.0, 1.0 / tl.where(dead, 1.0, s))
    for start in range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < vocab
        x = tl.load(logits_ptr + row * stride + cols, mask=ok, other=float("-inf")).to(tl.float32)
        if HAS_MASK:
            w = tl.load(mask_ptr + row * mstride + cols // 32, mask=ok & (cols // 32 < mwords), other=0)
            allowed = (((w >> (cols % 32)) & 1) != 0) | (cols >= mvocab)
            x = tl.where(allowed, x, float("-inf"))
            if WRITE_MASK:
                neg = tl.full([BLOCK], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
                tl.store(logits_ptr + row * stride + cols, neg, mask=ok & (~allowed))
        p = tl.exp((x - safe_m) * inv) * scale
        onehot = tl.where(cols == best_i, scale * 0.0 + tl.where(dead, 0.0, 1.0), 0.0)
        p = tl.where(greedy, onehot, p)
        tl.store(probs_ptr + row * pstride + cols, p, mask=ok)


@triton.jit
def _softmax_kernel(logits_ptr, probs_ptr, mask_ptr, temps_ptr, stride, pstride, mstride, mwords, vocab,
                    greedy_eps, HAS_MASK: tl.constexpr, BLOCK: tl.constexpr):
    _softmax_row(logits_ptr, probs_ptr, mask_ptr, temps_ptr, tl.program_id(0).to(tl.int64), stride, pstride,
                 mstride, mwords, vocab, vocab, greedy_eps, HAS_MASK, False, BLOCK)


@triton.jit
def _fused_kernel(logits_ptr, probs_ptr, mask_ptr, temps_ptr, stride, pstride, mstride, mwords, mvocab, vocab,
                  greedy_eps,
                  bias_ptr_ptr, bias_tok_ptr, bias_val_ptr, pen_ptr_ptr, pen_tok_ptr, pen_cnt_ptr, pen_ptr,
                  HAS_BIAS: tl.constexpr, HAS_PEN: tl.constexpr, HAS_MASK: tl.constexpr,
                  WRITE_MASK: tl.constexpr, SBLOCK: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row: its sparse bias, then its penalties, then the masked softmax."""
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
        tl.debug_barrier()  # the row's bias is in before its penalties read it
    if HAS_PEN:
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
        tl.debug_barrier()  # ... and the penalized values before the softmax streams the row
    _softmax_row(logits_ptr, probs_ptr, mask_ptr, temps_ptr, row, stride, pstride, mstride, mwords, mvocab, vocab,
                 greedy_eps, HAS_MASK, WRITE_MASK, BLOCK)


def _upload(device: torch.device, *arrays: np.ndarray) -> list[torch.Tensor]:
    """Host int32/float32 arrays to ``device`` in one copy (one transfer, not one per array).

    Each comes back as a 1-D view of the uploaded buffer, 16-byte aligned, with its own dtype.
    """
    sizes = [int(a.size) for a in arrays]
    starts = np.concatenate([[0], np.cumsum([(n + 3) & ~3 for n in sizes])]).astype(np.int64)
    buf = np.zeros(max(int(starts[-1]), 4), np.int32)
    for a, n, lo in zip(arrays, sizes, starts):
        buf[lo:lo + n] = np.ascontiguousarray(a).reshape(-1).view(np.int32) if a.dtype == np.float32 else a.reshape(-1)
    dev = torch.from_numpy(buf).to(device)
    return [dev[lo:lo + n].view(torch.float32) if a.dtype == np.float32 else dev[lo:lo + n]
            for a, n, lo in zip(arrays, sizes, starts)]


def _host(x: Any, dtype: type) -> np.ndarray:
    """``x`` (list, array or tensor) as a flat host array of ``dtype``."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype).reshape(-1)


def apply_logit_bias_triton(logits: torch.Tensor, pos2seq_id: Any, token_ids: Any, logit_bias: Any) -> None:
    """Triton version of :func:`~logitgate.kernels.bias.apply_logit_bias_inplace` (float32 logits)."""
    rows, toks = _host(pos2seq_id, np.int32), _host(token_ids, np.int32)
    n = rows.shape[0]
    if n:
        rows_d, toks_d, bias_d = _upload(logits.device, rows, toks, _host(logit_bias, np.float32))
        _bias_kernel[(triton.cdiv(n, 256),)](logits, logits.stride(0), rows_d, toks_d, bias_d, n, BLOCK=256)


def apply_penalty_triton(logits: torch.Tensor, seq_ids: Any, pos2seq_id: Any, token_ids: Any, token_cnt: Any,
                         penalties: Any) -> None:
    """Triton version of :func:`~logitgate.kernels.penalty.apply_penalty_inplace` (float32 logits)."""
    pos = _host(pos2seq_id, np.int32)
    n = pos.shape[0]
    if n:
        seqs, pos_d, toks, cnt, pen = _upload(logits.device, _host(seq_ids, np.int32), pos,
                                              _host(token_ids, np.int32), _host(token_cnt, np.int32),
                                              _host(penalties, np.float32))
        _penalty_kernel[(triton.cdiv(n, 256),)](logits, logits.stride(0), seqs, pos_d, toks, cnt, pen, n, BLOCK=256)


def _temperatures(temperatures: Any, batch: int) -> np.ndarray:
    temps = _host(temperatures, np.float32)
    return np.broadcast_to(temps, (batch,)) if temps.shape[0] == 1 else temps


def softmax_with_temperature_triton(logits: torch.Tensor, temperatures: Any, bitmask: torch.Tensor | None = None,
                                    *, block: int | None = None, num_warps: int | None = None) -> torch.Tensor:
    """Temperature softmax (optionally under a bitmask) in one Triton launch; returns float32 probs.

    Columns past the bitmask's ``32 * words`` bits count as disallowed. ``block`` (columns a
    step) and ``num_warps`` default to :func:`row_launch_config`'s choice.
    """
    batch, vocab = logits.shape
    if isinstance(temperatures, torch.Tensor) and temperatures.device == logits.device:
        temps = temperatures.to(torch.float32).reshape(-1).expand(batch).contiguous()
    else:
        (temps,) = _upload(logits.device, np.ascontiguousarray(_temperatures(temperatures, batch)))
    bitmask, mstride, mwords = _mask_arg(bitmask, logits)
    probs = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
    mask = bitmask if bitmask is not None else probs  # dummy pointer when unused
    block, num_warps = row_launch_config(vocab, block, num_warps, batch)
    _softmax_kernel[(batch,)](logits, probs, mask, temps, logits.stride(0), probs.stride(0), mstride, mwords,
                              vocab, GREEDY_EPS, HAS_MASK=bitmask is not None, BLOCK=block, num_warps=num_warps)
    return probs


def row_launch_config(vocab: int, block: int | None = None, num_warps: int | None = None,
                      batch: int = 1) -> tuple[int, int]:
    """``(block, num_warps)`` for the row kernels (one program streams a whole row).

    A row of a large vocabulary is one program's work, so it takes a whole block of warps.
    Measured on an H100 (softmax under a mask, device µs, 151,936 columns): batch 1 266 µs
    with (2048, 4), 102 with (4096, 16), 67 with (8192, 32); batch 64 343 / 129 / 86;
    batch 256 412 / 210 / 215, and 196 with (4096, 32) (``.gpuprobe``-style sweep in
    docs/benchmarks.md).
    """
    if vocab < 8192:
        return block or min(2048, max(128, triton.next_power_of_2(vocab))), num_warps or 4
    return block or (8192 if batch < 128 else 4096), num_warps or 32


def _mask_arg(bitmask: torch.Tensor | None, logits: torch.Tensor) -> tuple[torch.Tensor | None, int, int]:
    """``(bitmask with contiguous rows, its row stride, its words)``, or a clear error."""
    if bitmask is None:
        return None, 0, 0
    if not isinstance(bitmask, torch.Tensor) or bitmask.dtype != torch.int32 or bitmask.dim() != 2:
        raise TypeError(f"bitmask must be a 2-D int32 tensor, got {type(bitmask).__name__} "
                        f"{getattr(bitmask, 'dtype', '')} {tuple(getattr(bitmask, 'shape', ()))}")
    if bitmask.device != logits.device or bitmask.shape[0] < logits.shape[0]:
        raise ValueError(f"bitmask {tuple(bitmask.shape)} on {bitmask.device} must have a row per logits row "
                         f"{tuple(logits.shape)}, on the logits' device {logits.device}")
    if bitmask.stride(-1) != 1:
        bitmask = bitmask.contiguous()
    return bitmask, int(bitmask.stride(0)), int(bitmask.shape[1])


def to_csr(rows: np.ndarray, batch: int, *cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """Group sparse entries by row: ``(row_ptr[batch+1], *cols_in_row_order)`` (no sort if already grouped)."""
    ptr = np.zeros(batch + 1, np.int32)
    np.cumsum(np.bincount(rows, minlength=batch), out=ptr[1:])
    if rows.size < 2 or bool((rows[1:] >= rows[:-1]).all()):
        return (ptr, *cols)
    order = np.argsort(rows, kind="stable")
    return (ptr, *(c[order] for c in cols))


def fused_probs_triton(logits: torch.Tensor, temperatures: Any, *, bitmask: torch.Tensor | None = None,
                       bias: tuple[Any, Any, Any] | None = None,
                       penalty: tuple[Any, Any, Any, Any, Any] | None = None, write_mask: bool = False,
                       mask_vocab: int | None = None, block: int | None = None,
                       num_warps: int | None = None) -> torch.Tensor:
    """Bias → penalties → bitmask → temperature softmax in one launch; returns probs ``[batch, vocab]``.

    ``bias = (pos2seq_id, token_ids, logit_bias)`` and ``penalty = (seq_ids, pos2seq_id,
    token_ids, token_cnt, penalties)`` use the layouts of the unfused kernels. ``logits`` gets
    the sparse updates in place (as the unfused kernels would); with ``write_mask`` the masked
    logits become ``-inf`` too (as :func:`apply_token_bitmask_inplace` would), else the mask is
    not written back. The mask governs the first ``mask_vocab`` columns (default: all; those
    past its ``32 * words`` bits are disallowed), later ones are allowed. Every host array
    travels to the device in one copy.
    """
    batch, vocab = logits.shape
    bitmask, mstride, mwords = _mask_arg(bitmask, logits)
    host: list[np.ndarray] = [np.ascontiguousarray(_temperatures(temperatures, batch))]
    if bias is not None:
        rows = _host(bias[0], np.int64)
        host += to_csr(rows, batch, _host(bias[1], np.int32), _host(bias[2], np.float32))
    if penalty is not None:
        seq_ids, pos = _host(penalty[0], np.int64), _host(penalty[1], np.int64)
        host += to_csr(seq_ids[pos], batch, _host(penalty[2], np.int32), _host(penalty[3], np.int32))
        per_row = np.tile(np.array([0.0, 0.0, 1.0], np.float32), (batch, 1))
        per_row[seq_ids] = _host(penalty[4], np.float32).reshape(-1, 3)
        host.append(per_row)
    dev = _upload(logits.device, *host)
    temps = dev.pop(0)
    dummy = temps  # a pointer for the arrays a constexpr flag leaves unread
    b_args = [dev.pop(0) for _ in range(3)] if bias is not None else [dummy] * 3
    p_args = [dev.pop(0) for _ in range(4)] if penalty is not None else [dummy] * 4
    probs = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
    mask = bitmask if bitmask is not None else probs
    block, num_warps = row_launch_config(vocab, block, num_warps, batch)
    _fused_kernel[(batch,)](logits, probs, mask, temps, logits.stride(0), probs.stride(0), mstride, mwords,
                            vocab if mask_vocab is None else int(mask_vocab), vocab, GREEDY_EPS, *b_args, *p_args,
                            HAS_BIAS=bias is not None, HAS_PEN=penalty is not None, HAS_MASK=bitmask is not None,
                            WRITE_MASK=write_mask and bitmask is not None, SBLOCK=128, BLOCK=block,
                            num_warps=num_warps)
    return probs
