"""Thinking budget (RTP-LLM ``ThinkModeLogitsProcessor``, seed 000): cap the tokens spent thinking.

A reasoning model writes ``<think> ... </think>`` before its answer; markers are token-id
sequences. Per sequence, a KMP "string-contain" matcher over token ids tracks how much of the
end marker the output currently ends with. Phases (the seed's ``ThinkProcessState``):

* ``NOT_THINKING`` — no thinking segment (the answer has started);
* ``IN_THINK`` — thinking, unconstrained;
* ``CLOSING`` — the rest of the end marker is forced, one token per step: from the step after
  ``max_thinking_tokens`` tokens were generated since thinking began (the begin marker is not
  counted; forced tokens are), or as soon as the model itself has emitted a prefix of the end
  marker (the matcher's status is > 0);
* ``AFTER_THINK`` — the end marker is complete; the answer follows (a grammar may take over).

With ``max_thinking_tokens <= 0`` (or None) there is no budget: nothing is forced (as in the
seed), but the matcher still tracks the end marker so :attr:`ThinkBudgetState.answer_started` works.

Optionally (``adaptive_start=True``, the seed's adaptive mode) the first generated token decides:
the begin marker's first token opens a thinking segment (the rest of the begin marker is then
forced) and anything else means no thinking. ``mask_begin=True`` forbids the begin marker's first
token outside thinking, as the seed does.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import LogitgateError

__all__ = ["KmpMatcher", "ThinkBudget", "ThinkBudgetError", "ThinkBudgetState", "ThinkPhase"]


class ThinkBudgetError(LogitgateError, ValueError):
    """A thinking-budget config is invalid (empty end marker, ids outside the vocabulary, ...)."""


class ThinkPhase(enum.IntEnum):
    """Where a sequence is relative to its thinking segment."""

    UNDECIDED = 0  # adaptive start: the first token has not been generated yet
    OPENING = 1  # adaptive start: the begin marker is being forced
    NOT_THINKING = 2
    IN_THINK = 3
    CLOSING = 4
    AFTER_THINK = 5


class KmpMatcher:
    """Streaming KMP over token ids: ``status`` = length of the longest marker prefix the input ends with.

    Once the whole marker has been seen the status stays at ``len(marker)`` (the seed's
    ``StringContainDFA``).
    """

    __slots__ = ("_fail", "marker", "status")

    def __init__(self, marker: Sequence[int], status: int = 0):
        self.marker = tuple(int(t) for t in marker)
        if not self.marker:
            raise ThinkBudgetError("the KMP marker is empty")
        fail = [0] * len(self.marker)
        j = 0
        for i in range(1, len(self.marker)):
            while j > 0 and self.marker[i] != self.marker[j]:
                j = fail[j - 1]
            if self.marker[i] == self.marker[j]:
                j += 1
            fail[i] = j
        self._fail = tuple(fail)
        self.status = int(status)

    @property
    def finished(self) -> bool:
        return self.status == len(self.marker)

    def next(self, token_id: int) -> int:
        """Feed one token; returns the new status."""
        if self.status == len(self.marker):
            return self.status
        s = self.status
        m = self.marker
        while s > 0 and m[s] != token_id:
            s = self._fail[s - 1]
        if m[s] == token_id:
            s += 1
        self.status = s
        return s

    def copy(self) -> KmpMatcher:
        k = KmpMatcher.__new__(KmpMatcher)
        k.marker, k._fail, k.status = self.marker, self._fail, self.status
        return k


def _ids(name: str, ids: Iterable[int] | None, vocab_size: int | None) -> tuple[int, ...]:
    out = tuple(int(t) for t in (ids or ()))
    for t in out:
        if t < 0 or (vocab_size is not None and t >= vocab_size):
            raise ThinkBudgetError(f"{name}: token id {t} is outside the vocabulary [0, {vocab_size})"
                                   if vocab_size is not None else f"{name}: token id {t} is negative")
    return out


class ThinkBudget:
    """The shared config: markers, budget and options; :meth:`new_state` makes per-sequence states.

    ``start_in_think=True`` means the prompt already opened the thinking segment (the chat template
    ended with the begin marker), so generation starts ``IN_THINK`` with a count of 0.
    """

    def __init__(self, begin_think_ids: Sequence[int] | None, end_think_ids: Sequence[int],
                 max_thinking_tokens: int | None, *, start_in_think: bool = True, adaptive_start: bool = False,
                 mask_begin: bool = False, vocab_size: int | None = None):
        self.begin_think_ids = _ids("begin_think_ids", begin_think_ids, vocab_size)
        self.end_think_ids = _ids("end_think_ids", end_think_ids, vocab_size)
        if not self.end_think_ids:
            raise ThinkBudgetError("end_think_ids is empty: the end of thinking cannot be recognised")
        if adaptive_start and not self.begin_think_ids:
            raise ThinkBudgetError("adaptive_start needs begin_think_ids")
        if max_thinking_tokens is not None and not isinstance(max_thinking_tokens, (int, np.integer)):
            raise ThinkBudgetError(f"max_thinking_tokens must be an integer or None, got {max_thinking_tokens!r}")
        self.max_thinking_tokens = None if max_thinking_tokens is None or max_thinking_tokens <= 0 \
            else int(max_thinking_tokens)
        self.start_in_think = bool(start_in_think)
        self.adaptive_start = bool(adaptive_start)
        self.mask_begin = bool(mask_begin)
        self.vocab_size = vocab_size
        self._kmp = KmpMatcher(self.end_think_ids)

    @property
    def has_budget(self) -> bool:
        return self.max_thinking_tokens is not None

    def new_state(self) -> ThinkBudgetState:
        """A fresh per-sequence state."""
        return ThinkBudgetState(self)

    def __repr__(self) -> str:
        return (f"ThinkBudget(begin={list(self.begin_think_ids)}, end={list(self.end_think_ids)}, "
                f"max_thinking_tokens={self.max_thinking_tokens}, start_in_think={self.start_in_think}, "
                f"adaptive_start={self.adaptive_start})")


def _set_only(row: np.ndarray, token: int) -> None:
    row.fill(0)
    if token >> 5 >= row.shape[0]:
        raise IndexError(f"token id {token} does not fit a bitmask row of {row.shape[0] * 32} bits")
    row.view(np.uint32)[token >> 5] = np.uint32(1) << np.uint32(token & 31)


def _np_row(row: Any) -> np.ndarray:
    if type(row).__module__.startswith("torch"):
        if row.device.type != "cpu":
            raise ValueError("fill_bitmask needs a CPU row; fill a host mask and copy it to the device")
        row = row.numpy()
    if not isinstance(row, np.ndarray) or row.dtype != np.int32 or row.ndim != 1:
        raise TypeError(f"a bitmask row must be a 1-D int32 array, got {type(row).__name__} "
                        f"{getattr(row, 'dtype', '')} {getattr(row, 'shape', '')}")
    return row


class ThinkBudgetState:
    """One sequence's thinking state: forced token, bitmask rows, accept/rollback/fork/reset."""

    __slots__ = ("_begin_idx", "_cfg", "_count", "_hist", "_kmp", "_phase", "_think_start")

    def __init__(self, config: ThinkBudget):
        self._cfg = config
        self._hist: list[tuple[int, int, int, int, int]] = []
        self.reset()

    def reset(self) -> None:
        """Back to the state before the first generated token."""
        cfg = self._cfg
        self._kmp = cfg._kmp.copy()
        self._kmp.status = 0
        self._count = 0  # tokens generated so far (forced ones included)
        self._think_start = 0  # value of _count when thinking began
        self._begin_idx = 0
        if cfg.adaptive_start:
            self._phase = ThinkPhase.UNDECIDED
        elif cfg.start_in_think:
            self._phase = ThinkPhase.IN_THINK
        else:
            self._phase = ThinkPhase.NOT_THINKING
        self._hist.clear()

    # ---- status ------------------------------------------------------------------------------

    @property
    def config(self) -> ThinkBudget:
        return self._cfg

    @property
    def phase(self) -> ThinkPhase:
        """The current phase; ``CLOSING`` whenever the next token is forced to continue the end marker."""
        if self._phase == ThinkPhase.IN_THINK and self._must_close():
            return ThinkPhase.CLOSING
        return self._phase

    @property
    def is_thinking(self) -> bool:
        """Inside the thinking segment (opening, thinking or closing)."""
        return self._phase in (ThinkPhase.OPENING, ThinkPhase.IN_THINK, ThinkPhase.CLOSING)

    @property
    def answer_started(self) -> bool:
        """The answer part has begun (no thinking, or the end marker is complete)."""
        return self._phase in (ThinkPhase.NOT_THINKING, ThinkPhase.AFTER_THINK)

    @property
    def thinking_tokens(self) -> int:
        """Tokens generated since thinking began (what the budget counts)."""
        return self._count - self._think_start if self.is_thinking or self._phase == ThinkPhase.AFTER_THINK else 0

    @property
    def end_marker_status(self) -> int:
        """How many tokens of the end marker the output currently ends with (KMP status)."""
        return self._kmp.status

    @property
    def num_accepted(self) -> int:
        return len(self._hist)

    def _must_close(self) -> bool:
        cfg = self._cfg
        if cfg.max_thinking_tokens is None:
            return False
        return self._kmp.status > 0 or self._count - self._think_start >= cfg.max_thinking_tokens

    def forced_token(self) -> int | None:
        """The token the next step must produce, or None when it is free."""
        ph = self._phase
        if ph == ThinkPhase.OPENING:
            return self._cfg.begin_think_ids[self._begin_idx]
        if ph in (ThinkPhase.IN_THINK, ThinkPhase.CLOSING) and self._must_close():
            return self._cfg.end_think_ids[self._kmp.status]
        return None

    def _forbidden(self) -> int | None:
        cfg = self._cfg
        if cfg.mask_begin and cfg.begin_think_ids and self._phase in (
                ThinkPhase.NOT_THINKING, ThinkPhase.AFTER_THINK, ThinkPhase.IN_THINK):
            return cfg.begin_think_ids[0]
        return None

    # ---- masks -------------------------------------------------------------------------------

    def allowed_token_ids(self) -> np.ndarray | None:
        """``[forced]`` while a marker is forced, else None (unconstrained; see :meth:`forbidden_token_ids`)."""
        t = self.forced_token()
        return None if t is None else np.array([t], dtype=np.int32)

    def forbidden_token_ids(self) -> np.ndarray | None:
        """Ids banned while unconstrained (the begin marker's first token with ``mask_begin``), else None."""
        if self.forced_token() is not None:
            return None
        t = self._forbidden()
        return None if t is None else np.array([t], dtype=np.int32)

    def fill_bitmask(self, row: Any) -> bool:
        """Overwrite an int32 bitmask row: only the forced token, or all ones when free; True if constrained."""
        row = _np_row(row)
        t = self.forced_token()
        if t is not None:
            _set_only(row, t)
            return True
        row.fill(-1)
        f = self._forbidden()
        if f is not None and f >> 5 < row.shape[0]:
            row.view(np.uint32)[f >> 5] &= ~(np.uint32(1) << np.uint32(f & 31))
            return True
        return False

    def restrict(self, row: Any) -> None:
        """AND this state's constraint into an existing bitmask row (the pipeline's constraint protocol)."""
        row = _np_row(row)
        t = self.forced_token()
        if t is not None:
            w = t >> 5
            keep = w < row.shape[0] and (int(row.view(np.uint32)[w]) >> (t & 31)) & 1
            row.fill(0)
            if keep:
                row.view(np.uint32)[w] = np.uint32(1) << np.uint32(t & 31)
            return
        f = self._forbidden()
        if f is not None and f >> 5 < row.shape[0]:
            row.view(np.uint32)[f >> 5] &= ~(np.uint32(1) << np.uint32(f & 31))

    # ---- transitions -------------------------------------------------------------------------

    def accept_token(self, token_id: int) -> bool:
        """Advance by one generated token; False when it was not the forced (or was a forbidden) token.

        The token is applied either way, so the state always reflects what was really generated.
        """
        cfg = self._cfg
        t = int(token_id)
        forced = self.forced_token()
        ok = t == forced if forced is not None else t != self._forbidden()
        self._hist.append((int(self._phase), self._kmp.status, self._count, self._think_start, self._begin_idx))
        self._count += 1
        ph = self._phase
        if ph == ThinkPhase.UNDECIDED:
            if t == cfg.begin_think_ids[0]:
                self._begin_idx = 1
                self._open_or_think()
            else:
                self._phase = ThinkPhase.NOT_THINKING
        elif ph == ThinkPhase.OPENING:
            if t == cfg.begin_think_ids[self._begin_idx]:
                self._begin_idx += 1
                self._open_or_think()
            else:
                self._phase = ThinkPhase.NOT_THINKING  # the seed gives up thinking on a mismatch
        elif ph in (ThinkPhase.IN_THINK, ThinkPhase.CLOSING):
            self._kmp.next(t)
            if self._kmp.finished:
                self._phase = ThinkPhase.AFTER_THINK
            elif cfg.max_thinking_tokens is not None and self._kmp.status > 0:
                self._phase = ThinkPhase.CLOSING
            else:
                self._phase = ThinkPhase.IN_THINK
            if self._phase == ThinkPhase.IN_THINK and self._must_close():
                self._phase = ThinkPhase.CLOSING
        return ok

    def _open_or_think(self) -> None:
        if self._begin_idx >= len(self._cfg.begin_think_ids):
            self._phase = ThinkPhase.IN_THINK
            self._think_start = self._count
            if self._must_close():
                self._phase = ThinkPhase.CLOSING
        else:
            self._phase = ThinkPhase.OPENING

    def accept_tokens(self, token_ids: Iterable[int]) -> bool:
        """Accept several tokens; True when each was allowed."""
        ok = True
        for t in token_ids:
            ok = self.accept_token(t) and ok
        return ok

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens."""
        n = int(num_tokens)
        if n < 0 or n > len(self._hist):
            raise ValueError(f"cannot roll back {n} tokens: {len(self._hist)} accepted")
        for _ in range(n):
            ph, st, self._count, self._think_start, self._begin_idx = self._hist.pop()
            self._phase = ThinkPhase(ph)
            self._kmp.status = st

    def fork(self) -> ThinkBudgetState:
        """An independent copy (beam search, ``n > 1``)."""
        s = ThinkBudgetState.__new__(ThinkBudgetState)
        s._cfg = self._cfg
        s._kmp = self._kmp.copy()
        s._phase, s._count, s._think_start, s._begin_idx = self._phase, self._count, self._think_start, \
            self._begin_idx
        s._hist = list(self._hist)
        return s

    def __repr__(self) -> str:
        return (f"ThinkBudgetState(phase={self.phase.name}, thinking_tokens={self.thinking_tokens}, "
                f"end_marker_status={self._kmp.status})")
