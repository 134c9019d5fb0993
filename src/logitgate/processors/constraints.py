"""Per-sequence constraints that narrow a row's bitmask, behind one small protocol.

A constraint is told each accepted token (``accept_token``) and, before sampling, clears the
bits of tokens it forbids (``restrict(row)`` on an int32 bitmask row). ``fork`` copies it
for beams and ``n > 1``; ``rollback`` undoes accepted tokens for speculative drafts.

Built in here: :class:`AllowedTokens`, :class:`BadWords`, :class:`MinTokens` and
:class:`GrammarConstraint` (a :class:`~logitgate.engine.matcher.GrammarMatcher`). The tree
decode, thinking budget and finished-row processors follow the same protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from ..kernels.bitmask import bitmask_clear, bitmask_from_ids

__all__ = ["AllowedTokens", "BadWords", "GrammarConstraint", "MinTokens", "RowConstraint"]


class RowConstraint(Protocol):
    def restrict(self, row: np.ndarray) -> None: ...
    def accept_token(self, token_id: int) -> bool: ...
    def rollback(self, num_tokens: int) -> None: ...
    def fork(self) -> RowConstraint: ...


class AllowedTokens:
    """Only the given ids may be sampled (vLLM's ``allowed_token_ids``)."""

    def __init__(self, token_ids: Iterable[int], vocab_size: int):
        ids = np.asarray(sorted(set(token_ids)), dtype=np.int64)
        if ids.size == 0:
            raise ValueError("allowed_token_ids is empty: nothing could ever be sampled")
        if ids[0] < 0 or ids[-1] >= vocab_size:
            raise ValueError(f"allowed_token_ids: {int(ids[-1] if ids[-1] >= vocab_size else ids[0])} "
                             f"is outside the vocabulary [0, {vocab_size})")
        self._mask = bitmask_from_ids(ids, vocab_size)

    def restrict(self, row: np.ndarray) -> None:
        row &= self._mask

    def accept_token(self, token_id: int) -> bool:
        return True

    def rollback(self, num_tokens: int) -> None:
        pass

    def fork(self) -> AllowedTokens:
        return self  # stateless


class BadWords:
    """Forbid token sequences: the last token of a bad word is banned when the output ends with the rest."""

    def __init__(self, bad_words: Iterable[Sequence[int]], history: Sequence[int] = ()):
        self.words = [tuple(int(t) for t in w) for w in bad_words if len(w)]
        self.history = list(history)

    def restrict(self, row: np.ndarray) -> None:
        banned = [w[-1] for w in self.words
                  if len(w) == 1 or (len(self.history) >= len(w) - 1 and tuple(self.history[-(len(w) - 1):]) == w[:-1])]
        if banned:
            bitmask_clear(row, banned)

    def accept_token(self, token_id: int) -> bool:
        self.history.append(int(token_id))
        return True

    def rollback(self, num_tokens: int) -> None:
        if num_tokens:
            del self.history[-num_tokens:]

    def fork(self) -> BadWords:
        return BadWords(self.words, self.history)


class MinTokens:
    """EOS and stop tokens are forbidden until ``min_tokens`` tokens have been generated."""

    def __init__(self, min_tokens: int, stop_token_ids: Iterable[int], generated: int = 0):
        self.min_tokens = int(min_tokens)
        self.stop_token_ids = sorted(set(stop_token_ids))
        self.generated = int(generated)

    def restrict(self, row: np.ndarray) -> None:
        if self.generated < self.min_tokens:
            bitmask_clear(row, self.stop_token_ids)

    def accept_token(self, token_id: int) -> bool:
        self.generated += 1
        return True

    def rollback(self, num_tokens: int) -> None:
        self.generated -= num_tokens

    def fork(self) -> MinTokens:
        return MinTokens(self.min_tokens, self.stop_token_ids, self.generated)


class GrammarConstraint:
    """A grammar matcher as a row constraint (stop tokens allowed exactly when the grammar can end)."""

    def __init__(self, matcher: Any):
        self.matcher = matcher
        self._buf: np.ndarray | None = None

    def restrict(self, row: np.ndarray) -> None:
        if self._buf is None or self._buf.shape[1] != row.shape[0]:
            self._buf = np.empty((1, row.shape[0]), dtype=np.int32)
        self.matcher.fill_next_token_bitmask(self._buf, 0)
        row &= self._buf[0]

    def accept_token(self, token_id: int) -> bool:
        return bool(self.matcher.accept_token(int(token_id)))

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fork(self) -> GrammarConstraint:
        return GrammarConstraint(self.matcher.fork())


class AfterThinking:
    """A thinking budget followed by a constraint on the answer (e.g. a grammar).

    ``think`` (a :class:`~logitgate.processors.think_budget.ThinkBudgetState`) always applies;
    ``inner`` applies once the answer has started. Tokens generated while thinking, the
    end-of-thinking marker included, are not shown to ``inner``.
    """

    def __init__(self, think: Any, inner: Any, fed: list[bool] | None = None):
        self.think = think
        self.inner = inner
        self._fed: list[bool] = list(fed or [])

    def restrict(self, row: np.ndarray) -> None:
        self.think.restrict(row)
        if self.think.answer_started:
            self.inner.restrict(row)

    def accept_token(self, token_id: int) -> bool:
        feed = bool(self.think.answer_started)
        ok = self.think.accept_token(token_id)
        self._fed.append(feed)
        if feed:
            ok = self.inner.accept_token(token_id) and ok
        return ok

    def rollback(self, num_tokens: int) -> None:
        if not num_tokens:
            return
        fed = sum(self._fed[-num_tokens:])
        del self._fed[-num_tokens:]
        self.think.rollback(num_tokens)
        if fed:
            self.inner.rollback(fed)

    def fork(self) -> AfterThinking:
        return AfterThinking(self.think.fork(), self.inner.fork(), self._fed)

    @property
    def matcher(self) -> Any:
        """The inner grammar matcher, when ``inner`` is a :class:`GrammarConstraint`."""
        return getattr(self.inner, "matcher", None)
