"""Finished rows (seed 000, RTP-LLM MultiSeq): a finished row allows only EOS; other rows untouched."""

from __future__ import annotations

import numpy as np
import pytest

from logitgate.errors import LogitgateError
from logitgate.processors.finished import FinishedRows, FinishedRowsError

V = 70


def bits(row: np.ndarray) -> list[int]:
    return np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")).tolist()


def test_update_marks_rows_that_sample_eos():
    fr = FinishedRows(2, batch_size=4, vocab_size=V)
    assert fr.update([5, 2, 7, 9]).tolist() == [False, True, False, False]
    assert fr.update([2, 3, 7, 9]).tolist() == [True, True, False, False]  # stays finished
    assert fr.is_finished(1) and not fr.is_finished(2) and fr.any()
    assert fr.allowed_token_ids(0).tolist() == [2] and fr.allowed_token_ids(3) is None


def test_fill_bitmask_only_finished_rows():
    fr = FinishedRows(33, batch_size=3)
    fr.set_finished([0, 2])
    rng = np.random.default_rng(0)
    mask = rng.integers(-(2**31), 2**31 - 1, size=(3, 3), dtype=np.int64).astype(np.int32)
    before = mask.copy()
    assert fr.fill_bitmask(mask).tolist() == [0, 2]
    assert bits(mask[0]) == [33] and bits(mask[2]) == [33]
    assert np.array_equal(mask[1], before[1])


def test_restrict_keeps_eos_only_where_allowed():
    fr = FinishedRows([2, 63], batch_size=2)
    fr.set_finished(0)
    fr.set_finished(1)
    mask = np.full((2, 2), -1, dtype=np.int32)
    mask[1, 1] = 0  # row 1 forbids 32..63, so 63
    fr.restrict(mask)
    assert bits(mask[0]) == [2, 63] and bits(mask[1]) == [2]


def test_fill_bitmask_row_overwrites():
    fr = FinishedRows(5, batch_size=2)
    fr.set_finished(1)
    row = np.zeros(3, dtype=np.int32)
    assert fr.fill_bitmask_row(0, row) is False and bits(row) == list(range(96))
    assert fr.fill_bitmask_row(1, row) is True and bits(row) == [5]


def test_multiple_eos_ids_each_finish_and_stay_allowed():
    fr = FinishedRows([7, 3, 7], batch_size=3)
    assert fr.eos_token_ids.tolist() == [3, 7]
    assert fr.update(np.array([3, 7, 1])).tolist() == [True, True, False]
    m = np.full((3, 1), -1, dtype=np.int32)
    fr.fill_bitmask(m)
    assert bits(m[0]) == [3, 7] and bits(m[1]) == [3, 7] and bits(m[2]) == list(range(32))


def test_reorder_resize_fork_reset():
    fr = FinishedRows(0, batch_size=3)
    fr.set_finished(1)
    fr.reorder([1, 1, 0, 2])  # beams: two children of row 1, one of row 0, one of row 2
    assert fr.finished.tolist() == [True, True, False, False]
    f = fr.fork()
    fr.set_finished(3)
    assert f.finished.tolist() == [True, True, False, False]
    fr.resize(5)
    assert fr.finished.tolist() == [True, True, False, True, False]
    fr.resize(2)
    assert fr.batch_size == 2
    fr.reset()
    assert not fr.any()


def test_mask_logits_reference():
    fr = FinishedRows(4, batch_size=2)
    fr.set_finished(0)
    logits = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert fr.mask_logits(logits).tolist() == [0]
    assert logits[0].tolist() == [-np.inf] * 4 + [4.0, -np.inf]
    assert logits[1].tolist() == list(range(6, 12))


def test_errors():
    with pytest.raises(FinishedRowsError, match="outside the vocabulary"):
        FinishedRows(70, vocab_size=V)
    with pytest.raises(FinishedRowsError, match="negative"):
        FinishedRows(-1)
    with pytest.raises(FinishedRowsError, match="empty"):
        FinishedRows([])
    fr = FinishedRows(40, batch_size=2)
    with pytest.raises(FinishedRowsError, match="outside the batch"):
        fr.set_finished(2)
    with pytest.raises(FinishedRowsError, match="tokens for a batch of 2"):
        fr.update([1, 2, 3])
    with pytest.raises(FinishedRowsError, match="source rows"):
        fr.reorder([0, 5])
    fr.set_finished(0)
    with pytest.raises(FinishedRowsError, match="does not fit"):
        fr.fill_bitmask(np.zeros((2, 1), dtype=np.int32))
    with pytest.raises(TypeError):
        fr.fill_bitmask(np.zeros((2, 2), dtype=np.int64))
    assert issubclass(FinishedRowsError, LogitgateError)
