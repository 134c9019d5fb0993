"""A small thread-safe least-recently-used map (process-wide caches of the compiler)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

V = TypeVar("V")


class LRU(Generic[V]):
    """At most ``size`` entries and, with ``weight``, at most ``max_bytes`` of them, and with
    ``max_cost``, entries whose costs (given to :meth:`put`) add up to at most that; the least
    recently used entries go first.

        >>> c = LRU(2); c.put("a", 1); c.put("b", 2); _ = c.get("a"); c.put("c", 3)
        >>> c.get("b") is None, c.get("a"), len(c)
        (True, 1, 2)
    """

    def __init__(self, size: int, max_bytes: int | None = None, weight: Callable[[V], int] | None = None,
                 max_cost: int | None = None):
        self.size = int(size)
        self.max_bytes = max_bytes
        self.max_cost = max_cost
        self._weight = weight
        # value, weight, the key itself and its cost: a hit moves the entry by its own key object,
        # which compares by identity (keys can be large structures whose equality is a deep comparison)
        self._items: OrderedDict[Hashable, tuple[V, int, Hashable, int]] = OrderedDict()
        self._bytes = 0
        self._cost = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(hit[2])
            return hit[0]

    def put(self, key: Hashable, value: V, cost: int = 0) -> None:
        w = self._weight(value) if self._weight is not None else 0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
                self._cost -= old[3]
            self._items[key] = (value, w, key, cost)
            self._bytes += w
            self._cost += cost
            while len(self._items) > self.size or (len(self._items) > 1 and self._over_budget()):
                _, (_, ew, _, ec) = self._items.popitem(last=False)
                self._bytes -= ew
                self._cost -= ec

    def _over_budget(self) -> bool:
        return ((self.max_bytes is not None and self._bytes > self.max_bytes)
                or (self.max_cost is not None and self._cost > self.max_cost))

    @property
    def cost(self) -> int:
        """Total cost of the entries."""
        return self._cost

    @property
    def nbytes(self) -> int:
        """Total weight of the entries (0 without a weight function)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)
