"""Argument checks shared by the logits kernels: backend detection, shapes, dtypes, index ranges."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_index_array", "check_logits_2d", "check_range", "cpu_numpy_view", "is_torch", "wants_triton"]


def is_torch(x: Any) -> bool:
    """True for a torch tensor (without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "device")


def cpu_numpy_view(x: Any) -> np.ndarray | None:
    """A numpy view sharing memory with a float32/float64 CPU tensor (the numba kernels
    then work on it in place, without torch's per-op overhead); None for anything else."""
    if not is_torch(x) or x.device.type != "cpu" or str(x.dtype) not in ("torch.float32", "torch.float64"):
        return None
    return x.detach().numpy()


def check_logits_2d(logits: Any, fn: str) -> tuple[int, int]:
    """``(batch, vocab)`` of a 2-D floating logits array/tensor, or a clear error."""
    shape = tuple(logits.shape)
    if len(shape) != 2:
        raise ValueError(f"{fn}: logits must be 2-D [batch, vocab], got shape {shape}")
    if is_torch(logits):
        if not logits.dtype.is_floating_point:
            raise TypeError(f"{fn}: logits must be a floating tensor, got {logits.dtype}")
    elif not isinstance(logits, np.ndarray) or logits.dtype.kind != "f":
        raise TypeError(f"{fn}: logits must be a floating numpy array or torch tensor, got "
                        f"{type(logits).__name__} {getattr(logits, 'dtype', '')}")
    return int(shape[0]), int(shape[1])


def as_index_array(x: Any, name: str, fn: str, length: int | None = None) -> np.ndarray:
    """A 1-D int32 numpy array from a list/array/tensor (tensors are copied to host)."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{fn}: {name} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{fn}: {name} must hold integers, got {arr.dtype}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{fn}: {name} has length {arr.shape[0]}, expected {length}")
    return np.ascontiguousarray(arr, dtype=np.int32)


def check_range(arr: np.ndarray, hi: int, name: str, fn: str) -> None:
    """Every value of ``arr`` in ``[0, hi)``."""
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= hi):
        bad = arr[(arr < 0) | (arr >= hi)][0]
        raise IndexError(f"{fn}: {name} contains {int(bad)}, outside [0, {hi})")


def wants_triton(logits: Any) -> bool:
    """True for a float32 CUDA tensor when Triton is installed (the GPU fast path)."""
    if not (is_torch(logits) and logits.is_cuda and str(logits.dtype) == "torch.float32"):
        return False
    import importlib.util

    return importlib.util.find_spec("triton") is not None
