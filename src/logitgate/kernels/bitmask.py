"""Token bitmasks: int32 ``[batch, ceil(vocab / 32)]``; bit ``i % 32`` of word ``i // 32`` set = token ``i`` allowed.

The layout of xgrammar and MLC-LLM, so masks interoperate. Helpers accept numpy rows and,
where cheap, torch tensors (via a zero-copy numpy view on CPU).

    >>> m = allocate_token_bitmask(1, 40)
    >>> bitmask_clear(m[0], [3, 35]); bitmask_count(m[0], 40), bitmask_test(m[0], 3)
    (38, False)
    >>> bitmask_to_ids(bitmask_from_ids([0, 33, 39], 40), 40).tolist()
    [0, 33, 39]
"""

from __future__ import annotations

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


def bitmask_words(vocab_size: int) -> int:
    """Words per row: ``ceil(vocab_size / 32)``."""
    if vocab_size < 0:
        raise ValueError(f"vocab_size must be >= 0, got {vocab_size}")
    return (int(vocab_size) + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, backend: str = "numpy", device: Any = None) -> Any:
    """A bitmask with every token allowed: numpy (default) or ``backend="torch"`` (int32 tensor)."""
    if batch_size < 0:
        raise ValueError(f"batch_size must be >= 0, got {batch_size}")
    shape = (int(batch_size), bitmask_words(vocab_size))
    if backend == "numpy":
        return np.full(shape, -1, dtype=np.int32)
    if backend == "torch":
        import torch

        return torch.full(shape, -1, dtype=torch.int32, device=device)
    raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")


def _np_view(x: Any) -> np.ndarray:
    """A numpy int32 view of a bitmask (row); torch CPU tensors share memory."""
    if type(x).__module__.startswith("torch"):
        if x.device.type != "cpu":
            raise ValueError("bitmask helpers need a CPU tensor; copy the mask to the host first")
        x = x.numpy()
    if not isinstance(x, np.ndarray) or x.dtype != np.int32:
        raise TypeError(f"a bitmask must be an int32 array, got {type(x).__name__} {getattr(x, 'dtype', '')}")
    return x


def reset_token_bitmask(bitmask: Any) -> None:
    """Allow every token again (all bits set)."""
    if type(bitmask).__module__.startswith("torch"):
        bitmask.fill_(-1)
    else:
        _np_view(bitmask).fill(-1)


def _ids(ids: Iterable[int] | np.ndarray, limit: int | None) -> np.ndarray:
    arr = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64).reshape(-1)
    if arr.size and (arr.min() < 0 or (limit is not None and arr.max() >= limit)):
        bad = int(arr[(arr < 0) | (arr >= (limit if limit is not None else np.iinfo(np.int64).max))][0])
        raise IndexError(f"token id {bad} is outside [0, {limit})")
    return arr


def bitmask_from_ids(ids: Iterable[int] | np.ndarray, vocab_size: int) -> np.ndarray:
    """A 1-D bitmask row allowing exactly ``ids``."""
    row = np.zeros(bitmask_words(vocab_size), dtype=np.int32)
    bitmask_set(row, _ids(ids, vocab_size))
    return row


def _bits(row: np.ndarray, vocab_size: int | None) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    return bits if vocab_size is None else bits[:vocab_size]


def bitmask_to_ids(row: Any, vocab_size: int | None = None) -> np.ndarray:
    """The allowed ids of a bitmask row (int32, ascending); ids ≥ ``vocab_size`` are dropped."""
    row = _np_view(row)
    if row.ndim != 1:
        raise ValueError(f"bitmask_to_ids takes one row, got shape {row.shape}")
    return np.flatnonzero(_bits(row, vocab_size)).astype(np.int32)


def bitmask_count(row: Any, vocab_size: int | None = None) -> int:
    """How many tokens a row allows."""
    row = _np_view(row)
    return int(np.count_nonzero(_bits(row.reshape(-1), vocab_size)))


def bitmask_test(row: Any, token_id: int) -> bool:
    """Is ``token_id`` allowed by the row?"""
    row = _np_view(row)
    t = int(token_id)
    if not 0 <= t < row.shape[-1] * 32:
        raise IndexError(f"token id {t} is outside the mask's {row.shape[-1] * 32} bits")
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


def _word_bits(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    words = ids >> 5
    bits = (np.uint32(1) << (ids & 31).astype(np.uint32)).view(np.int32)
    return words, bits


def bitmask_set(row: Any, ids: Iterable[int] | np.ndarray) -> None:
    """Allow ``ids`` in the row (in place)."""
    row = _np_view(row)
    arr = _ids(ids, row.shape[-1] * 32)
    if arr.size:
        words, bits = _word_bits(arr)
        np.bitwise_or.at(row, words, bits)


def bitmask_clear(row: Any, ids: Iterable[int] | np.ndarray) -> None:
    """Forbid ``ids`` in the row (in place)."""
    row = _np_view(row)
    arr = _ids(ids, row.shape[-1] * 32)
    if arr.size:
        words, bits = _word_bits(arr)
        np.bitwise_and.at(row, words, ~bits)
