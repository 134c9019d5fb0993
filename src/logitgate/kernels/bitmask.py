"""Token bitmasks: int32 ``[batch, ceil(vocab / 32)]``; bit ``i % 32`` of word ``i // 32`` set = token ``i`` allowed.

The layout of xgrammar and MLC-LLM, so masks interoperate. The helpers take numpy rows and
torch CPU tensors (through a zero-copy numpy view); none loops over the vocabulary in Python.

    >>> m = allocate_token_bitmask(1, 40)
    >>> bitmask_clear(m[0], [3, 35]); bitmask_count(m[0], 40), bitmask_test(m[0], 3)
    (38, False)
    >>> bitmask_to_ids(bitmask_from_ids([0, 33, 39], 40), 40).tolist()
    [0, 33, 39]
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "allocate_token_bitmask",
    "bitmask_clear",
    "bitmask_count",
    "bitmask_from_ids",
    "bitmask_set",
    "bitmask_test",
    "bitmask_to_ids",
    "bitmask_words",
    "reset_token_bitmask",
]

_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "device")


def _size(value: Any, name: str, fn: str) -> int:
    """A non-negative int argument (bools and floats rejected)."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be an int, got bool")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__}") from None
    if n < 0:
        raise ValueError(f"{fn}: {name} must be >= 0, got {n}")
    return int(n)


def bitmask_words(vocab_size: int) -> int:
    """Words per row: ``ceil(vocab_size / 32)``."""
    return (_size(vocab_size, "vocab_size", "bitmask_words") + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, backend: str = "numpy", device: Any = None) -> Any:
    """A ``[batch_size, ceil(vocab_size / 32)]`` int32 bitmask with every token allowed.

    ``backend="numpy"`` (default) gives a numpy array; ``backend="torch"`` an int32 tensor on ``device``.
    """
    fn = "allocate_token_bitmask"
    shape = (_size(batch_size, "batch_size", fn), (_size(vocab_size, "vocab_size", fn) + 31) // 32)
    if backend == "numpy":
        if device is not None and str(device) != "cpu":
            raise ValueError(f"{fn}: backend='numpy' lives on the CPU, got device={device!r}")
        return np.full(shape, -1, dtype=np.int32)
    if backend == "torch":
        import torch

        return torch.full(shape, -1, dtype=torch.int32, device=device)
    raise ValueError(f"{fn}: backend must be 'numpy' or 'torch', got {backend!r}")


def _view(x: Any, fn: str, name: str = "bitmask", row: bool = True) -> np.ndarray:
    """A numpy int32 view of a bitmask (row); torch CPU tensors share their memory."""
    if _is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"{fn}: {name} must be on the CPU, got a tensor on {x.device}; copy it to the host")
        if str(x.dtype) != "torch.int32":
            raise TypeError(f"{fn}: {name} must be int32, got {x.dtype}")
        x = x.detach().numpy()
    elif not isinstance(x, np.ndarray):
        raise TypeError(f"{fn}: {name} must be a numpy array or torch tensor, got {type(x).__name__}")
    elif x.dtype != np.int32:
        raise TypeError(f"{fn}: {name} must be int32, got {x.dtype}")
    if row and x.ndim != 1:
        raise ValueError(f"{fn}: {name} must be one 1-D row [words], got shape {x.shape}")
    return x


def reset_token_bitmask(bitmask: Any) -> None:
    """Allow every token again (all bits set), in place; numpy arrays and torch tensors on any device."""
    if _is_torch(bitmask):
        if str(bitmask.dtype) != "torch.int32":
            raise TypeError(f"reset_token_bitmask: bitmask must be int32, got {bitmask.dtype}")
        bitmask.fill_(-1)
    else:
        _view(bitmask, "reset_token_bitmask", row=False).fill(-1)


def _ids(ids: Any, limit: int, fn: str) -> np.ndarray:
    """Token ids as a 1-D int64 array, each in ``[0, limit)``."""
    if _is_torch(ids):
        ids = ids.detach().cpu().numpy()
    elif not isinstance(ids, np.ndarray):
        ids = list(ids) if isinstance(ids, Iterable) else [ids]
    arr = np.asarray(ids)
    if arr.size == 0:
        return np.zeros(0, np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{fn}: ids must be integers, got dtype {arr.dtype}")
    arr = arr.reshape(-1).astype(np.int64, copy=False)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= limit:
        raise IndexError(f"{fn}: token id {lo if lo < 0 else hi} is outside [0, {limit})")
    return arr


def bitmask_from_ids(ids: Iterable[int] | np.ndarray, vocab_size: int) -> np.ndarray:
    """A 1-D bitmask row (``ceil(vocab_size / 32)`` int32 words) allowing exactly ``ids``."""
    fn = "bitmask_from_ids"
    vocab = _size(vocab_size, "vocab_size", fn)
    row = np.zeros((vocab + 31) // 32, dtype=np.int32)
    _write(row, _ids(ids, vocab, fn), True)
    return row


def _bits(row: np.ndarray, vocab_size: int | None, fn: str) -> np.ndarray:
    """One uint8 (0/1) per token of a row, little-endian bit order, cut at ``vocab_size``."""
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    return bits if vocab_size is None else bits[: _size(vocab_size, "vocab_size", fn)]


def bitmask_to_ids(row: Any, vocab_size: int | None = None) -> np.ndarray:
    """The allowed token ids of a bitmask row (int32, ascending); ids ≥ ``vocab_size`` are left out."""
    row = _view(row, "bitmask_to_ids")
    return np.flatnonzero(_bits(row, vocab_size, "bitmask_to_ids")).astype(np.int32)


def bitmask_count(row: Any, vocab_size: int | None = None) -> int:
    """How many tokens a row allows (among the first ``vocab_size``, if given)."""
    fn = "bitmask_count"
    row = _view(row, fn)
    words = row.view(np.uint32)
    if vocab_size is not None:
        vocab = _size(vocab_size, "vocab_size", fn)
        full, rest = divmod(min(vocab, words.shape[0] * 32), 32)
        tail = int(words[full]) & ((1 << rest) - 1) if rest else 0
        words = words[:full]
    else:
        tail = 0
    if _HAS_BITWISE_COUNT:
        total = int(np.bitwise_count(words).sum(dtype=np.int64))
    else:  # pragma: no cover - numpy < 2
        total = int(np.count_nonzero(np.unpackbits(np.ascontiguousarray(words).view(np.uint8))))
    return total + tail.bit_count()


def bitmask_test(row: Any, token_id: int) -> bool:
    """Is ``token_id`` allowed by the row?"""
    row = _view(row, "bitmask_test")
    if isinstance(token_id, bool):
        raise TypeError("bitmask_test: token_id must be an int, got bool")
    try:
        t = operator.index(token_id)
    except TypeError:
        raise TypeError(f"bitmask_test: token_id must be an int, got {type(token_id).__name__}") from None
    if not 0 <= t < row.shape[0] * 32:
        raise IndexError(f"bitmask_test: token id {t} is outside [0, {row.shape[0] * 32}) (the row's bits)")
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


def _write(row: np.ndarray, ids: np.ndarray, allow: bool) -> None:
    """Set (``allow``) or clear the bits of ``ids`` in ``row``, in place."""
    if not ids.size:
        return
    if ids.size > row.shape[0]:  # many ids: build the bits densely, O(vocab) but vectorized
        bits = np.zeros(row.shape[0] * 32, np.uint8)
        bits[ids] = 1
        packed = np.packbits(bits, bitorder="little").view(np.int32)
        if allow:
            np.bitwise_or(row, packed, out=row)
        else:
            np.bitwise_and(row, ~packed, out=row)
        return
    words = ids >> 5
    masks = (np.uint32(1) << (ids & 31).astype(np.uint32)).view(np.int32)
    if allow:
        np.bitwise_or.at(row, words, masks)
    else:
        np.bitwise_and.at(row, words, ~masks)


def bitmask_set(row: Any, ids: Iterable[int] | np.ndarray) -> None:
    """Allow ``ids`` in the row, in place."""
    row = _view(row, "bitmask_set")
    _write(row, _ids(ids, row.shape[0] * 32, "bitmask_set"), True)


def bitmask_clear(row: Any, ids: Iterable[int] | np.ndarray) -> None:
    """Forbid ``ids`` in the row, in place."""
    row = _view(row, "bitmask_clear")
    _write(row, _ids(ids, row.shape[0] * 32, "bitmask_clear"), False)
