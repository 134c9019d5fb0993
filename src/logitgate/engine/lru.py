"""A small thread-safe least-recently-used map (process-wide caches of the compiler)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

V = TypeVar("V")


class LRU(Generic[V]):
    """At most ``size`` entries and, with ``weight``, at most ``max_bytes`` of them; the least
    recently used entries go first.

        >>> c = LRU(2); c.put("a", 1); c.put("b", 2); _ = c.get("a"); c.put("c", 3)
        >>> c.get("b") is None, c.get("a"), len(c)
        (True, 1, 2)
    """

    def __init__(self, size: int, max_bytes: int | None = None, weight: Callable[[V], int] | None = None):
        self.size = int(size)
        self.max_bytes = max_bytes
        self._weight = weight
        # value, weight and the key itself: a hit moves the entry by its own key object, which
        # compares by identity (keys can be large structures whose equality is a deep comparison)
        self._items: OrderedDict[Hashable, tuple[V, int, Hashable]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(hit[2])
            return hit[0]

    def put(self, key: Hashable, value: V) -> None:
        w = self._weight(value) if self._weight is not None else 0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, w, key)
            self._bytes += w
            while len(self._items) > self.size or (
                    self.max_bytes is not None and self._bytes > self.max_bytes and len(self._items) > 1):
                _, (_, ew, _) = self._items.popitem(last=False)
                self._bytes -= ew

    @property
    def nbytes(self) -> int:
        """Total weight of the entries (0 without a weight function)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)
