"""Finished rows (RTP-LLM ``MultiSeqLogitsProcessor``, seed 000): a finished row may only repeat EOS.

With beam search or ``num_return_sequences > 1`` a batch keeps stepping rows that already
ended; masking everything but EOS on those rows keeps them ended (their scores stop changing
except by EOS). Unfinished rows are left untouched.

    >>> fr = FinishedRows(eos_token_id=2, batch_size=3)
    >>> fr.update([5, 2, 7]).tolist()      # row 1 sampled EOS
    [False, True, False]
    >>> fr.allowed_token_ids(1).tolist(), fr.allowed_token_ids(0)
    ([2], None)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import LogitgateError

__all__ = ["FinishedRows", "FinishedRowsError"]


class FinishedRowsError(LogitgateError, ValueError):
    """Bad EOS ids or row indices."""


def _np_mask(x: Any) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        if x.device.type != "cpu":
            raise ValueError("FinishedRows fills host bitmasks; copy the mask to the device afterwards")
        x = x.numpy()
    if not isinstance(x, np.ndarray) or x.dtype != np.int32:
        raise TypeError(f"a bitmask must be an int32 array, got {type(x).__name__} {getattr(x, 'dtype', '')}")
    return x


class FinishedRows:
    """Which rows of a batch have finished, and the only-EOS mask for them.

    ``eos_token_id`` is one id (the seed) or several (models with more than one end token: any of
    them ends a row and each stays allowed afterwards).
    """

    def __init__(self, eos_token_id: int | Sequence[int], batch_size: int = 0, *, vocab_size: int | None = None):
        ids = [eos_token_id] if isinstance(eos_token_id, (int, np.integer)) else list(eos_token_id)
        if not ids:
            raise FinishedRowsError("eos_token_id is empty")
        arr = np.asarray(sorted({int(t) for t in ids}), dtype=np.int32)
        if arr[0] < 0 or (vocab_size is not None and arr[-1] >= vocab_size):
            raise FinishedRowsError(f"eos token id {int(arr[0] if arr[0] < 0 else arr[-1])} is outside the "
                                    f"vocabulary [0, {vocab_size})" if vocab_size is not None
                                    else f"eos token id {int(arr[0])} is negative")
        arr.flags.writeable = False
        self.eos_token_ids = arr
        self.vocab_size = vocab_size
        self._finished = np.zeros(int(batch_size), dtype=bool)
        self._words = arr >> 5
        self._bits = (np.uint32(1) << (arr & 31).astype(np.uint32))

    # ---- bookkeeping -------------------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        return int(self._finished.size)

    @property
    def finished(self) -> np.ndarray:
        """A copy of the per-row finished flags."""
        return self._finished.copy()

    def any(self) -> bool:
        return bool(self._finished.any())

    def is_finished(self, row: int) -> bool:
        return bool(self._finished[self._row(row)])

    def _row(self, row: int) -> int:
        r = int(row)
        if not 0 <= r < self._finished.size:
            raise FinishedRowsError(f"row {r} is outside the batch of {self._finished.size}")
        return r

    def resize(self, batch_size: int) -> None:
        """Grow (new rows unfinished) or shrink the batch."""
        n = int(batch_size)
        if n < 0:
            raise FinishedRowsError(f"batch_size must be >= 0, got {n}")
        old = self._finished
        self._finished = np.zeros(n, dtype=bool)
        k = min(n, old.size)
        self._finished[:k] = old[:k]

    def set_finished(self, rows: int | Iterable[int], value: bool = True) -> None:
        """Mark rows finished (or not, ``value=False``)."""
        idx = [rows] if isinstance(rows, (int, np.integer)) else list(rows)
        for r in idx:
            self._finished[self._row(r)] = bool(value)

    def update(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """Record one sampled token per row: an EOS finishes its row. Returns the finished flags (a copy)."""
        toks = np.asarray(tokens).reshape(-1)
        if toks.size != self._finished.size:
            raise FinishedRowsError(f"update got {toks.size} tokens for a batch of {self._finished.size}")
        self._finished |= np.isin(toks, self.eos_token_ids)
        return self._finished.copy()

    def reorder(self, src_rows: Sequence[int] | np.ndarray) -> None:
        """Rows after a beam step: new row ``i`` continues old row ``src_rows[i]``."""
        src = np.asarray(src_rows, dtype=np.int64).reshape(-1)
        if src.size and (src.min() < 0 or src.max() >= self._finished.size):
            raise FinishedRowsError(f"reorder: source rows must lie in [0, {self._finished.size})")
        self._finished = self._finished[src]

    def fork(self) -> FinishedRows:
        f = FinishedRows(self.eos_token_ids.tolist(), 0, vocab_size=self.vocab_size)
        f._finished = self._finished.copy()
        return f

    def reset(self) -> None:
        self._finished[:] = False

    # ---- masks -------------------------------------------------------------------------------

    def allowed_token_ids(self, row: int) -> np.ndarray | None:
        """``eos_token_ids`` for a finished row, None (unconstrained) otherwise."""
        return self.eos_token_ids if self._finished[self._row(row)] else None

    def _check_width(self, words: int) -> None:
        if int(self._words[-1]) >= words:
            raise FinishedRowsError(f"eos token id {int(self.eos_token_ids[-1])} does not fit a bitmask of "
                                    f"{words * 32} bits")

    def fill_bitmask_row(self, row_index: int, row: Any) -> bool:
        """Overwrite one row: only EOS if the row is finished (True), all ones otherwise (False)."""
        r = _np_mask(row)
        if not self._finished[self._row(row_index)]:
            r.fill(-1)
            return False
        self._check_width(r.shape[-1])
        r.fill(0)
        np.bitwise_or.at(r.view(np.uint32), self._words, self._bits)
        return True

    def fill_bitmask(self, bitmask: Any) -> np.ndarray:
        """Overwrite the finished rows of a ``[batch, words]`` bitmask with only-EOS; others untouched.

        Returns the indices of the rows written.
        """
        m = _np_mask(bitmask)
        if m.ndim != 2 or m.shape[0] < self._finished.size:
            raise FinishedRowsError(f"fill_bitmask needs a [>= {self._finished.size}, words] bitmask, got {m.shape}")
        rows = np.flatnonzero(self._finished)
        if rows.size:
            self._check_width(m.shape[1])
            eos_row = np.zeros(m.shape[1], dtype=np.uint32)
            np.bitwise_or.at(eos_row, self._words, self._bits)
            m[rows] = eos_row.view(np.int32)
        return rows

    def restrict(self, bitmask: Any) -> np.ndarray:
        """AND only-EOS into the finished rows of a bitmask (EOS stays allowed only where it already was)."""
        m = _np_mask(bitmask)
        if m.ndim != 2 or m.shape[0] < self._finished.size:
            raise FinishedRowsError(f"restrict needs a [>= {self._finished.size}, words] bitmask, got {m.shape}")
        rows = np.flatnonzero(self._finished)
        if rows.size:
            self._check_width(m.shape[1])
            eos_row = np.zeros(m.shape[1], dtype=np.uint32)
            np.bitwise_or.at(eos_row, self._words, self._bits)
            m[rows] &= eos_row.view(np.int32)
        return rows

    def mask_logits(self, logits: np.ndarray, value: float = float("-inf")) -> np.ndarray:
        """Reference (numpy) masking: finished rows get ``value`` everywhere but EOS. In place; returns rows."""
        if logits.ndim != 2 or logits.shape[0] < self._finished.size:
            raise FinishedRowsError(f"mask_logits needs [>= {self._finished.size}, vocab] logits, got {logits.shape}")
        rows = np.flatnonzero(self._finished)
        if rows.size:
            if int(self.eos_token_ids[-1]) >= logits.shape[1]:
                raise FinishedRowsError(f"eos token id {int(self.eos_token_ids[-1])} is outside {logits.shape[1]} logits")
            keep = logits[np.ix_(rows, self.eos_token_ids)]
            logits[rows] = value
            logits[np.ix_(rows, self.eos_token_ids)] = keep
        return rows

    def __repr__(self) -> str:
        return (f"FinishedRows(eos={self.eos_token_ids.tolist()}, batch_size={self.batch_size}, "
                f"finished={int(self._finished.sum())})")
