"""Graph utilities shared by the grammar front-ends, the reference recognizer and the compiler."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = ["strongly_connected_components"]

K = TypeVar("K", bound=Hashable)


def strongly_connected_components(graph: Mapping[K, Iterable[K]]) -> list[list[K]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit).

    Every node reached must be a key of ``graph``. Components come out in reverse topological
    order: each one after every component it reaches.

        >>> strongly_connected_components({"a": ["b"], "b": ["a", "c"], "c": []})
        [['c'], ['b', 'a']]
    """
    index: dict[K, int] = {}
    low: dict[K, int] = {}
    on_stack: set[K] = set()
    stack: list[K] = []
    out: list[list[K]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(graph[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:  # descend into w (its successors next)
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on_stack and index[w] < low[v]:
                    low[v] = index[w]
            else:  # v is done
                work.pop()
                lv = low[v]
                if work:
                    u = work[-1][0]
                    if lv < low[u]:
                        low[u] = lv
                if lv == index[v]:
                    if stack[-1] == v:  # (most components are one node)
                        stack.pop()
                        on_stack.discard(v)
                        out.append([v])
                        continue
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out
