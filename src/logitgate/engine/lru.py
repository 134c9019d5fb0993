"""A small thread-safe least-recently-used map (process-wide caches of the compiler)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

V = TypeVar("V")


class LRU(Generic[V]):
    """At most ``size`` entries; the least recently used one goes first.

        >>> c = LRU(2); c.put("a", 1); c.put("b", 2); _ = c.get("a"); c.put("c", 3)
        >>> c.get("b") is None, c.get("a"), len(c)
        (True, 1, 2)
    """

    def __init__(self, size: int):
        self.size = int(size)
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            v = self._items.get(key)
            if v is not None:
                self._items.move_to_end(key)
            return v

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
