"""Arrays laid end to end in one, for numba kernels (every array argument costs a call time to pass)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def end_to_end(arrays: Sequence[np.ndarray], *scalars: int) -> np.ndarray:
    """One int32 array: a header of where each of ``arrays`` starts (and where the last ends), then
    ``scalars``, then the arrays. Array ``k`` is ``out[out[k]:out[k + 1]]``; scalar ``j`` is
    ``out[len(arrays) + 1 + j]``.

        >>> out = end_to_end([np.array([7, 8]), np.array([9])], 5)
        >>> out.tolist(), out[out[1]:out[2]].tolist(), int(out[3])
        ([4, 6, 7, 5, 7, 8, 9], [9], 5)
    """
    head = len(arrays) + 1 + len(scalars)
    bounds = np.cumsum([head] + [a.shape[0] for a in arrays])
    out = np.empty(int(bounds[-1]), dtype=np.int32)
    out[:len(arrays) + 1] = bounds
    out[len(arrays) + 1:head] = scalars
    for a, lo in zip(arrays, bounds[:-1], strict=False):
        out[lo:lo + a.shape[0]] = a
    return out
