"""``apply_logit_bias_inplace``: sparse additive bias, MLC-LLM layout.

``logits[pos2seq_id[i], token_ids[i]] += logit_bias[i]`` for every entry ``i``; entries may
repeat (they add up).

    >>> import numpy as np
    >>> x = np.zeros((2, 4), np.float32)
    >>> apply_logit_bias_inplace(x, [1, 0], [3, 0], [2.5, -1.0])
    >>> x.tolist()
    [[-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.5]]
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ._arrays import as_index_array, check_logits_2d, check_range, cpu_numpy_view, is_torch, wants_triton

__all__ = ["apply_logit_bias_inplace"]


@numba.njit(nogil=True, cache=True)
def _bias_kernel(logits, pos2seq_id, token_ids, bias):  # pragma: no cover - compiled
    for i in range(token_ids.shape[0]):
        logits[pos2seq_id[i], token_ids[i]] += bias[i]


def apply_logit_bias_inplace(logits: Any, pos2seq_id: Any, token_ids: Any, logit_bias: Any) -> None:
    """Add ``logit_bias[i]`` to ``logits[pos2seq_id[i], token_ids[i]]`` in place (numpy or torch)."""
    fn = "apply_logit_bias_inplace"
    batch, vocab = check_logits_2d(logits, fn)
    rows = as_index_array(pos2seq_id, "pos2seq_id", fn)
    toks = as_index_array(token_ids, "token_ids", fn, rows.shape[0])
    check_range(rows, batch, "pos2seq_id", fn)
    check_range(toks, vocab, "token_ids", fn)
    view = cpu_numpy_view(logits)
    triton_path = wants_triton(logits)  # host arrays go to the device in one upload there
    if view is not None or triton_path:
        logits = view if view is not None else logits
        if is_torch(logit_bias):
            logit_bias = logit_bias.detach().cpu().numpy()
    if triton_path:
        bias_host = np.asarray(logit_bias, dtype=np.float32).reshape(-1)
        if bias_host.shape[0] != rows.shape[0]:
            raise ValueError(f"{fn}: logit_bias has length {bias_host.shape[0]}, expected {rows.shape[0]}")
        from .triton_logits import apply_logit_bias_triton

        apply_logit_bias_triton(logits, rows, toks, bias_host)
        return
    if is_torch(logits):
        import torch

        bias = torch.as_tensor(logit_bias, dtype=logits.dtype, device=logits.device).reshape(-1)
        if bias.shape[0] != rows.shape[0]:
            raise ValueError(f"{fn}: logit_bias has length {bias.shape[0]}, expected {rows.shape[0]}")
        if rows.shape[0]:
            idx = (torch.from_numpy(rows).to(logits.device, torch.long),
                   torch.from_numpy(toks).to(logits.device, torch.long))
            logits.index_put_(idx, bias, accumulate=True)
        return
    bias_np = np.ascontiguousarray(np.asarray(logit_bias, dtype=logits.dtype).reshape(-1))
    if bias_np.shape[0] != rows.shape[0]:
        raise ValueError(f"{fn}: logit_bias has length {bias_np.shape[0]}, expected {rows.shape[0]}")
    if logits.dtype in (np.float32, np.float64):
        _bias_kernel(logits, rows, toks, bias_np)
    else:  # e.g. float16: numba has no arithmetic for it
        np.add.at(logits, (rows, toks), bias_np)
