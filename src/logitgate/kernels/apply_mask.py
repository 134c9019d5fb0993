"""``apply_token_bitmask_inplace``: set the logits of disallowed tokens to ``-inf``.

Back-ends: numpy arrays use a numba kernel (GIL released) that reads the mask a 32-bit word
at a time: all-ones words are skipped, all-zero words filled, and in mixed words only the
cleared bits are visited (count-trailing-zeros). Torch CPU tensors run the same kernel on a
zero-copy view; torch CUDA tensors use a Triton kernel (plain torch ops when Triton is
missing). The kernel writes the bit pattern of ``-inf`` through an integer view of the
logits, so float16, bfloat16, float32 and float64 share one path and any row stride works.

Semantics follow xgrammar's ``apply_token_bitmask_inplace``: row ``r`` of ``logits`` uses row
``r`` of ``bitmask``; ``indices`` lists the rows to mask (an index into both, so the two may
have different batch sizes; other rows are left alone); only the first ``vocab_size`` columns
are touched. One deliberate difference: with ``vocab_size=None`` every column of ``logits`` is
considered, and columns past the mask's ``32 * words`` bits are masked (xgrammar's default,
``min(logits.shape[-1], 32 * words)``, leaves them unmasked and warns; pass that value as
``vocab_size`` to get xgrammar's behaviour exactly).

    >>> import numpy as np
    >>> x = np.zeros((1, 5), np.float32)
    >>> apply_token_bitmask_inplace(x, np.array([[0b10101]], np.int32))
    >>> x.tolist()
    [[0.0, -inf, 0.0, -inf, 0.0]]
"""

from __future__ import annotations

import operator
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["apply_token_bitmask_inplace", "apply_token_bitmask_inplace_triton"]

_FN = "apply_token_bitmask_inplace"

# -inf bit patterns by float type, as the signed integer of the same width
_NEG_INF_BITS = {
    "float16": np.array(0xFC00, np.uint16).view(np.int16)[()],
    "bfloat16": np.array(0xFF80, np.uint16).view(np.int16)[()],
    "float32": np.array(0xFF800000, np.uint32).view(np.int32)[()],
    "float64": np.array(0xFFF0000000000000, np.uint64).view(np.int64)[()],
}
_NUMPY_NEG_INF = {np.dtype(name): bits for name, bits in _NEG_INF_BITS.items() if name != "bfloat16"}
_INT_VIEW = {2: np.int16, 4: np.int32, 8: np.int64}
_ALL_ROWS = np.zeros(0, np.int64)


@intrinsic
def _cttz(typingctx, x):  # pragma: no cover - compiled
    """Count trailing zeros of a non-zero int64 (LLVM ``cttz``)."""
    def codegen(context, builder, sig, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.int64(types.int64), codegen


@numba.njit(nogil=True, cache=True)
def _apply_kernel(bits_view, bitmask, rows, all_rows, vocab, neg_inf):  # pragma: no cover - compiled
    """Write ``neg_inf`` into ``bits_view[r, t]`` for every cleared bit ``t < vocab`` of ``bitmask[r]``."""
    covered = min(vocab, bitmask.shape[1] * 32)
    nwords = (covered + 31) // 32
    n = bits_view.shape[0] if all_rows else rows.shape[0]
    for k in range(n):
        r = k if all_rows else rows[k]
        for w in range(nwords):
            word = bitmask[r, w]
            if word == -1:
                continue
            base = w * 32
            if word == 0 and base + 32 <= covered:
                for b in range(32):
                    bits_view[r, base + b] = neg_inf
                continue
            cleared = np.int64(~word) & 0xFFFFFFFF
            while cleared != 0:
                j = base + _cttz(cleared)
                if j >= covered:
                    break
                bits_view[r, j] = neg_inf
                cleared &= cleared - 1
        for j in range(covered, vocab):
            bits_view[r, j] = neg_inf


def _neg_inf_bits(x: Any) -> Any:
    """The ``-inf`` bit pattern for the float dtype of ``x`` (a numpy integer scalar), or None."""
    if isinstance(x, np.ndarray):
        found = _NUMPY_NEG_INF.get(x.dtype)
        if found is None and x.dtype.name == "bfloat16":  # ml_dtypes
            found = _NEG_INF_BITS["bfloat16"]
        return found
    return _NEG_INF_BITS.get(str(x.dtype)[6:])  # "torch.float16" -> "float16"


def _is_int32(x: Any) -> bool:
    return x.dtype == np.int32 if isinstance(x, np.ndarray) else str(x.dtype) == "torch.int32"


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "device")


def _rows(indices: Any, limit: int) -> np.ndarray:
    """``indices`` as a 1-D int64 array of rows in ``[0, limit)``."""
    if _is_torch(indices):
        indices = indices.detach().cpu().numpy()
    arr = np.asarray(indices)
    if arr.size == 0:
        return np.zeros(0, np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{_FN}: indices must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{_FN}: indices must be 1-D, got shape {arr.shape}")
    rows = arr.astype(np.int64, copy=False)
    lo, hi = int(rows.min()), int(rows.max())
    if lo < 0 or hi >= limit:
        raise IndexError(f"{_FN}: indices must be rows of both logits and bitmask, in [0, {limit}); "
                         f"got {lo if lo < 0 else hi}")
    return rows


def _check(logits: Any, bitmask: Any, indices: Any, vocab_size: Any) -> tuple[Any, Any, np.ndarray | None, int]:
    """2-D logits and bitmask, the rows to mask (``None`` = all) and the vocabulary width, or a clear error."""
    lt, mt = _is_torch(logits), _is_torch(bitmask)
    if not (lt or isinstance(logits, np.ndarray)):
        raise TypeError(f"{_FN}: logits must be a numpy array or torch tensor, got {type(logits).__name__}")
    if not (mt or isinstance(bitmask, np.ndarray)):
        raise TypeError(f"{_FN}: bitmask must be a numpy array or torch tensor, got {type(bitmask).__name__}")
    if mt and not lt:
        if bitmask.device.type != "cpu":
            raise ValueError(f"{_FN}: numpy logits need a CPU bitmask, got a tensor on {bitmask.device}")
        bitmask = bitmask.detach().numpy()
    if len(logits.shape) not in (1, 2):
        raise ValueError(f"{_FN}: logits must be [vocab] or [batch, vocab], got shape {tuple(logits.shape)}")
    if len(bitmask.shape) not in (1, 2):
        raise ValueError(f"{_FN}: bitmask must be [words] or [batch, words], got shape {tuple(bitmask.shape)}")
    if not _is_int32(bitmask):
        raise TypeError(f"{_FN}: bitmask must be int32, got {bitmask.dtype}")
    if _neg_inf_bits(logits) is None:
        raise TypeError(f"{_FN}: logits must be float16, bfloat16, float32 or float64, got {logits.dtype}")
    if len(logits.shape) == 1:
        logits = logits[None]
    if len(bitmask.shape) == 1:
        bitmask = bitmask[None]
    batch, width = int(logits.shape[0]), int(logits.shape[1])
    if vocab_size is None:
        vocab = width
    else:
        try:
            if isinstance(vocab_size, bool):
                raise TypeError
            vocab = operator.index(vocab_size)
        except TypeError:
            raise TypeError(f"{_FN}: vocab_size must be an int, got {type(vocab_size).__name__}") from None
        if not 0 <= vocab <= width:
            raise ValueError(f"{_FN}: vocab_size={vocab} must be in [0, {width}] (the logits width)")
    if indices is None:
        if int(bitmask.shape[0]) < batch:
            raise ValueError(f"{_FN}: bitmask has {bitmask.shape[0]} rows but logits have {batch} "
                             "(pass indices to mask only some rows)")
        return logits, bitmask, None, vocab
    return logits, bitmask, _rows(indices, min(batch, int(bitmask.shape[0]))), vocab


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Any = None, vocab_size: int | None = None) -> None:
    """Set ``logits[r, t] = -inf`` where bit ``t`` of ``bitmask[r]`` is 0, in place.

    ``logits``: float ``[batch, V]`` or ``[V]`` (numpy, torch CPU or CUDA); ``bitmask``: int32
    ``[rows, W]`` or ``[W]`` with ``rows >= batch`` unless ``indices`` is given. ``indices``:
    rows (of both) to mask, the others are untouched. ``vocab_size``: columns considered
    (default: all); columns past ``32 * W`` count as disallowed.
    """
    logits2, bitmask2, rows, vocab = _check(logits, bitmask, indices, vocab_size)
    if (rows is not None and not rows.size) or vocab == 0 or logits2.shape[0] == 0:
        return
    if _is_torch(logits2):
        if logits2.device.type != "cpu":
            if not _is_torch(bitmask2):
                import torch

                bitmask2 = torch.from_numpy(np.ascontiguousarray(bitmask2))
            if bitmask2.device != logits2.device:
                bitmask2 = bitmask2.to(logits2.device, non_blocking=True)
            if logits2.device.type == "cuda" and _has_triton():
                from .triton_mask import apply_bitmask_triton

                apply_bitmask_triton(logits2, bitmask2, rows, vocab)
            else:
                _apply_torch(logits2, bitmask2, rows, vocab)
            return
        if not _TORCH_INT:
            import torch

            _TORCH_INT.update({2: torch.int16, 4: torch.int32, 8: torch.int64})
        view = logits2.view(_TORCH_INT[logits2.element_size()])
        view = (view.detach() if view.requires_grad else view).numpy()
        if not isinstance(bitmask2, np.ndarray):
            bitmask2 = bitmask2.numpy() if bitmask2.device.type == "cpu" else bitmask2.cpu().numpy()
    else:
        view = logits2.view(_INT_VIEW[logits2.itemsize])
    _apply_kernel(view, bitmask2, _ALL_ROWS if rows is None else rows, rows is None, vocab,
                  _neg_inf_bits(logits2))


_TRITON: list[bool] = []
_TORCH_INT: dict[int, Any] = {}


def _has_triton() -> bool:
    if not _TRITON:
        import importlib.util

        _TRITON.append(importlib.util.find_spec("triton") is not None)
    return _TRITON[0]


def _apply_torch(logits: Any, bitmask: Any, rows: np.ndarray | None, vocab: int) -> None:
    """Plain torch ops on the logits' device (CUDA without Triton, other accelerators)."""
    import torch

    dev = logits.device
    r = torch.arange(logits.shape[0], device=dev) if rows is None else torch.from_numpy(rows).to(dev)
    words = bitmask[r.to(bitmask.device)].to(dev)
    shifts = torch.arange(32, device=dev, dtype=torch.int32)
    allowed = ((words.unsqueeze(-1) >> shifts) & 1).bool().reshape(len(r), -1)
    keep = torch.zeros((len(r), vocab), dtype=torch.bool, device=dev)
    cols = min(vocab, allowed.shape[1])
    keep[:, :cols] = allowed[:, :cols]
    logits[r, :vocab] = logits[r, :vocab].masked_fill(~keep, float("-inf"))


def apply_token_bitmask_inplace_triton(logits: Any, bitmask: Any, indices: Any = None,
                                       vocab_size: int | None = None) -> None:
    """:func:`apply_token_bitmask_inplace` through the Triton kernel, whatever the device.

    For tests and explicit use: runs on CPU tensors under ``TRITON_INTERPRET=1``. Both
    arguments must be torch tensors on the same device.
    """
    logits2, bitmask2, rows, vocab = _check(logits, bitmask, indices, vocab_size)
    if not (_is_torch(logits2) and _is_torch(bitmask2)):
        raise TypeError(f"{_FN}_triton: logits and bitmask must be torch tensors")
    if bitmask2.device != logits2.device:
        raise ValueError(f"{_FN}_triton: logits are on {logits2.device} but bitmask on {bitmask2.device}")
    if (rows is None or rows.size) and vocab and logits2.shape[0]:
        from .triton_mask import apply_bitmask_triton

        apply_bitmask_triton(logits2, bitmask2, rows, vocab)
