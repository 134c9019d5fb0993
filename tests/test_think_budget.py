"""Thinking budget (seed 000): KMP end-marker tracking, forcing at the budget and after a begun marker."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logitgate.errors import LogitgateError
from logitgate.processors.think_budget import KmpMatcher, ThinkBudget, ThinkBudgetError, ThinkPhase

V = 64  # vocabulary of the scripted scenarios
BEGIN, END = [40, 41], [50, 51, 52]


def bits(row: np.ndarray) -> list[int]:
    return np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")).tolist()


def allowed(state) -> list[int] | None:
    a = state.allowed_token_ids()
    return None if a is None else a.tolist()


# ---------------------------------------------------------------------------------------------
# KMP
# ---------------------------------------------------------------------------------------------


def naive_status(marker: list[int], seen: list[int]) -> int:
    """Longest marker prefix that the input ends with, sticky once the marker occurred."""
    for i in range(len(seen)):
        if seen[max(0, i + 1 - len(marker)):i + 1] == marker:
            return len(marker)
    for k in range(min(len(marker) - 1, len(seen)), 0, -1):
        if seen[len(seen) - k:] == marker[:k]:
            return k
    return 0


@pytest.mark.parametrize("marker, start, feed, statuses", [
    # RTP-LLM's own StringContainDFA cases
    ([5], 0, [0], [0]), ([5], 0, [1], [0]), ([5], 0, [5], [1]), ([5], 0, [9], [0]),
    ([5, 5], 1, [5], [2]), ([5, 5], 1, [9], [0]),
    ([5, 6], 0, [5], [1]), ([5, 6], 0, [6], [0]), ([5, 6], 1, [5], [1]), ([5, 6], 1, [6], [2]),
    # overlapping prefixes
    ([5, 5, 6], 0, [5, 5, 5, 6], [1, 2, 2, 3]),
    ([1, 2, 1, 3], 0, [1, 2, 1, 2, 1, 3], [1, 2, 3, 2, 3, 4]),
    ([7, 7, 7], 0, [7, 7, 8, 7, 7, 7, 1], [1, 2, 0, 1, 2, 3, 3]),  # sticky once complete
])
def test_kmp_scripted(marker, start, feed, statuses):
    k = KmpMatcher(marker, status=start)
    assert [k.next(t) for t in feed] == statuses


@settings(max_examples=300, deadline=None)
@given(marker=st.lists(st.integers(0, 2), min_size=1, max_size=5), seen=st.lists(st.integers(0, 2), max_size=20))
def test_kmp_matches_naive(marker, seen):
    k = KmpMatcher(marker)
    for i, t in enumerate(seen):
        assert k.next(t) == naive_status(marker, seen[:i + 1])


# ---------------------------------------------------------------------------------------------
# budget forcing
# ---------------------------------------------------------------------------------------------


def test_budget_forces_the_end_marker_token_by_token():
    tb = ThinkBudget(BEGIN, END, 3, vocab_size=V)
    s = tb.new_state()
    row = np.zeros(2, dtype=np.int32)
    for tok in (1, 2, 3):  # three free thinking tokens
        assert s.phase == ThinkPhase.IN_THINK and allowed(s) is None
        assert s.fill_bitmask(row) is False and bits(row) == list(range(64))
        assert s.accept_token(tok)
    forced = []
    while s.is_thinking:
        assert s.phase == ThinkPhase.CLOSING
        forced.append(allowed(s))
        assert s.fill_bitmask(row) is True and bits(row) == forced[-1]
        assert s.accept_token(forced[-1][0])
    assert forced == [[50], [51], [52]]
    assert s.phase == ThinkPhase.AFTER_THINK and s.answer_started and s.thinking_tokens == 6
    assert allowed(s) is None and s.fill_bitmask(row) is False
    assert s.accept_token(50) and s.phase == ThinkPhase.AFTER_THINK  # the answer may say anything


def test_model_beginning_the_marker_forces_the_rest():
    s = ThinkBudget(BEGIN, END, 100).new_state()
    s.accept_tokens([1, 50])
    assert s.phase == ThinkPhase.CLOSING and s.end_marker_status == 1 and allowed(s) == [51]
    s.accept_token(51)
    assert allowed(s) == [52]
    s.accept_token(52)
    assert s.answer_started and s.thinking_tokens == 4  # 1, 50, 51, 52


def test_budget_reached_in_the_middle_of_a_begun_marker_continues_it():
    s = ThinkBudget(BEGIN, END, 2).new_state()
    s.accept_tokens([1, 50])  # budget spent exactly as the model starts the marker
    assert allowed(s) == [51]


def test_forced_token_refused_is_applied_as_generated():
    s = ThinkBudget(BEGIN, [5, 5, 6], 1).new_state()
    s.accept_token(9)
    assert allowed(s) == [5]
    assert s.accept_token(5)
    assert allowed(s) == [5]
    assert s.accept_token(7) is False  # not the forced token: KMP falls back, budget still spent
    assert s.end_marker_status == 0 and s.phase == ThinkPhase.CLOSING and allowed(s) == [5]


def test_no_budget_tracks_the_marker_without_forcing():
    for budget in (None, 0, -5):
        s = ThinkBudget(None, [5, 5, 6], budget).new_state()
        for t in [1, 5, 5, 5]:
            assert allowed(s) is None
            s.accept_token(t)
        assert s.end_marker_status == 2 and s.phase == ThinkPhase.IN_THINK and allowed(s) is None
        s.accept_token(6)
        assert s.phase == ThinkPhase.AFTER_THINK and s.answer_started and not s.is_thinking


def test_not_starting_in_think_is_unconstrained():
    s = ThinkBudget(BEGIN, END, 1, start_in_think=False).new_state()
    assert s.answer_started and not s.is_thinking
    for t in [50, 51, 52, 1, 2]:
        assert allowed(s) is None
        s.accept_token(t)
    assert s.phase == ThinkPhase.NOT_THINKING


def test_adaptive_start_opens_thinking_and_counts_after_the_begin_marker():
    tb = ThinkBudget(BEGIN, END, 2, adaptive_start=True)
    s = tb.new_state()
    assert s.phase == ThinkPhase.UNDECIDED and allowed(s) is None and not s.answer_started
    s.accept_token(40)
    assert s.phase == ThinkPhase.OPENING and allowed(s) == [41]
    s.accept_token(41)
    assert s.phase == ThinkPhase.IN_THINK and s.thinking_tokens == 0
    s.accept_tokens([7, 8])
    assert allowed(s) == [50]
    other = tb.new_state()
    other.accept_token(7)
    assert other.phase == ThinkPhase.NOT_THINKING and other.answer_started and allowed(other) is None


def test_mask_begin_clears_only_that_bit_while_free():
    tb = ThinkBudget(BEGIN, END, 1, mask_begin=True)
    s = tb.new_state()
    row = np.zeros(2, dtype=np.int32)
    assert allowed(s) is None and s.forbidden_token_ids().tolist() == [40]
    assert s.fill_bitmask(row) is True and bits(row) == [t for t in range(64) if t != 40]
    assert s.accept_token(40) is False  # forbidden, applied anyway
    assert allowed(s) == [50] and s.forbidden_token_ids() is None


def test_restrict_ands_into_an_existing_row():
    s = ThinkBudget(BEGIN, END, 1).new_state()
    s.accept_token(3)
    row = np.full(2, -1, dtype=np.int32)
    s.restrict(row)
    assert bits(row) == [50]
    row = np.zeros(2, dtype=np.int32)  # the grammar forbids the forced token
    s.restrict(row)
    assert bits(row) == []
    free = ThinkBudget(BEGIN, END, 10).new_state()
    row = np.array([5, 0], dtype=np.int32)
    free.restrict(row)
    assert bits(row) == [0, 2]


def test_fork_rollback_reset():
    s = ThinkBudget(BEGIN, END, 2).new_state()
    s.accept_tokens([1, 2])
    f = s.fork()
    s.accept_tokens([50, 51, 52])
    assert s.answer_started and f.phase == ThinkPhase.CLOSING and allowed(f) == [50]
    f.accept_token(50)
    assert allowed(f) == [51] and s.answer_started  # independent
    s.rollback(2)
    assert s.phase == ThinkPhase.CLOSING and allowed(s) == [51] and s.num_accepted == 3
    with pytest.raises(ValueError):
        s.rollback(4)
    s.reset()
    assert s.phase == ThinkPhase.IN_THINK and s.num_accepted == 0 and allowed(s) is None


def test_config_errors():
    with pytest.raises(ThinkBudgetError, match="end_think_ids is empty"):
        ThinkBudget(BEGIN, [], 5)
    with pytest.raises(ThinkBudgetError, match="outside the vocabulary"):
        ThinkBudget(BEGIN, [70], 5, vocab_size=V)
    with pytest.raises(ThinkBudgetError, match="negative"):
        ThinkBudget([-1], END, 5)
    with pytest.raises(ThinkBudgetError, match="adaptive_start needs"):
        ThinkBudget(None, END, 5, adaptive_start=True)
    with pytest.raises(ThinkBudgetError, match="max_thinking_tokens"):
        ThinkBudget(BEGIN, END, 2.5)
    assert issubclass(ThinkBudgetError, LogitgateError) and issubclass(ThinkBudgetError, ValueError)


@settings(max_examples=200, deadline=None)
@given(budget=st.integers(1, 6), end=st.lists(st.integers(0, 3), min_size=1, max_size=3),
       free=st.lists(st.integers(0, 3), max_size=12))
def test_thinking_always_ends_within_budget_plus_marker(budget, end, free):
    """Following the mask, thinking ends after at most budget + len(marker) tokens."""
    s = ThinkBudget(None, end, budget).new_state()
    it = iter(free)
    n = 0
    while s.is_thinking:
        a = s.allowed_token_ids()
        tok = int(a[0]) if a is not None else next(it, 0)
        assert s.accept_token(tok)
        n += 1
        assert n <= budget + len(end)
    assert s.answer_started and s.thinking_tokens == n
