"""Fill the bitmask rows of many matchers at once, in parallel threads.

The heavy parts of a fill (trie walks, row writes) run in numba with the GIL released,
so threads overlap on the steps that matter: the first visit of a parser state, which
walks the token trie. Cached steps cost a few microseconds and run inline.

Example::

    >>> import logitgate as lg
    >>> tok = lg.TokenizerInfo.from_vocab([b"a", b"b", b"</s>"], eos_token_id=2, special_token_ids=[2])
    >>> cg = lg.GrammarCompiler(tok).compile_regex("a+b")
    >>> ms = [lg.GrammarMatcher(cg) for _ in range(3)]
    >>> bm = lg.allocate_token_bitmask(3, tok.vocab_size)
    >>> lg.BatchGrammarMatcher(max_threads=2).batch_fill_next_token_bitmask(ms, bm)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .matcher import GrammarMatcher, _row_view

__all__ = ["BatchGrammarMatcher", "fill_next_token_bitmasks"]


class BatchGrammarMatcher:
    """Batch operations over many :class:`GrammarMatcher` objects.

    Args:
        max_threads: worker threads for filling (default: CPU count, at most 16).
    """

    def __init__(self, max_threads: int | None = None):
        n = max_threads if max_threads is not None else min(16, os.cpu_count() or 1)
        self.max_threads = max(1, int(n))
        self._pool: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.max_threads, thread_name_prefix="logitgate-fill")
        return self._pool

    def batch_fill_next_token_bitmask(
        self,
        matchers: Sequence[GrammarMatcher | None],
        bitmask: Any,
        indices: Sequence[int] | None = None,
    ) -> None:
        """Fill row ``indices[i]`` (default ``i``) of ``bitmask`` from ``matchers[i]``.

        ``None`` matchers are skipped (their rows are left as they are).
        """
        if indices is None:
            indices = range(len(matchers))
        if len(indices) != len(matchers):
            raise ValueError(f"{len(matchers)} matchers but {len(indices)} indices")
        jobs = [(m, int(i)) for m, i in zip(matchers, indices) if m is not None]
        if not jobs:
            return
        num_words = jobs[0][0]._rt.num_words
        rows = []
        commits = []
        for _m, i in jobs:
            row, commit = _row_view(bitmask, i, num_words)
            rows.append(row)
            if commit is not None:
                commits.append(commit)
        if self.max_threads == 1 or len(jobs) == 1:
            for (m, _), row in zip(jobs, rows):
                m.fill_row(row)
        else:
            list(self._executor().map(lambda mr: mr[0][0].fill_row(mr[1]), zip(jobs, rows)))
        for c in commits:
            c()

    def batch_accept_token(self, matchers: Sequence[GrammarMatcher], token_ids: Sequence[int]) -> np.ndarray:
        """``accept_token`` for each matcher; returns a bool array."""
        return np.array([m.accept_token(t) for m, t in zip(matchers, token_ids)], dtype=bool)

    def batch_accept_string(self, matchers: Sequence[GrammarMatcher], texts: Sequence[str | bytes]) -> np.ndarray:
        return np.array([m.accept_string(s) for m, s in zip(matchers, texts)], dtype=bool)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> BatchGrammarMatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fill_next_token_bitmasks(
    matchers: Sequence[GrammarMatcher | None],
    bitmask: Any,
    indices: Sequence[int] | None = None,
    max_threads: int | None = None,
) -> None:
    """One-shot :meth:`BatchGrammarMatcher.batch_fill_next_token_bitmask`."""
    with BatchGrammarMatcher(max_threads) as b:
        b.batch_fill_next_token_bitmask(matchers, bitmask, indices)
