"""Room for deep recursion: grammars are built, walked and printed recursively, a few frames a level
of nesting, and a grammar can nest past Python's 1,000 frames (a numeric bound of hundreds of digits:
``"maximum": 1.7976931348623157e308``, the largest double, nests its digits 600 levels deep; a chain
of hundreds of rules each read once is inlined into one expression)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from .errors import LimitExceededError

__all__ = ["DEEP_RECURSION_LIMIT", "with_room"]

T = TypeVar("T")

#: the interpreter's recursion limit while a call that ran out of frames is made again
DEEP_RECURSION_LIMIT = 4000
_DEEP_LOCK = threading.Lock()


def with_room(call: Callable[[], T], what: str) -> T:
    """``call()``; where that recursed past the interpreter's limit, once more under a limit of
    :data:`DEEP_RECURSION_LIMIT` (one such call at a time: the limit is the process's, and is put
    back), and a :class:`LimitExceededError` naming ``what`` if that is not room enough.

        >>> with_room(lambda: 1 + 1, "an addition")
        2
    """
    try:
        return call()
    except RecursionError:
        pass
    with _DEEP_LOCK:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, DEEP_RECURSION_LIMIT))
        try:
            return call()
        except RecursionError:
            raise LimitExceededError(f"{what} nests too deeply: more than {DEEP_RECURSION_LIMIT} stack frames",
                                     limit="recursion") from None
        finally:
            sys.setrecursionlimit(old)
