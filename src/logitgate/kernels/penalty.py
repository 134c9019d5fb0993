"""``apply_penalty_inplace``: presence, frequency and repetition penalties, MLC-LLM layout.

For every entry ``i`` (a token that appeared ``token_cnt[i]`` times in sequence ``s``),
with ``p = pos2seq_id[i]``, ``row = seq_ids[p]`` and ``l = logits[row, token_ids[i]]``::

    l -= penalties[p, 0] + token_cnt[i] * penalties[p, 1]      # presence, frequency
    l = l * penalties[p, 2] if l < 0 else l / penalties[p, 2]  # repetition

A (row, token) pair must appear at most once. Penalties ``(0, 0, 1)`` leave a logit as is.

    >>> import numpy as np
    >>> x = np.array([[2.0, -2.0, 1.0]], np.float32)
    >>> apply_penalty_inplace(x, [0], [0, 0], [0, 1], [3, 1], [[0.5, 0.0, 2.0]])
    >>> x.tolist()
    [[0.75, -5.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ._arrays import as_index_array, check_logits_2d, check_range, cpu_numpy_view, is_torch, wants_triton

__all__ = ["apply_penalty_inplace"]


@numba.njit(nogil=True, cache=True)
def _penalty_kernel(logits, seq_ids, pos2seq_id, token_ids, token_cnt, penalties):  # pragma: no cover
    for i in range(token_ids.shape[0]):
        p = pos2seq_id[i]
        row = seq_ids[p]
        t = token_ids[i]
        v = logits[row, t] - (penalties[p, 0] + token_cnt[i] * penalties[p, 1])
        if v < 0:
            v = v * penalties[p, 2]
        else:
            v = v / penalties[p, 2]
        logits[row, t] = v


def apply_penalty_inplace(logits: Any, seq_ids: Any, pos2seq_id: Any, token_ids: Any, token_cnt: Any,
                          penalties: Any) -> None:
    """Apply presence/frequency/repetition penalties in place (numpy or torch); see the module doc."""
    fn = "apply_penalty_inplace"
    batch, vocab = check_logits_2d(logits, fn)
    seqs = as_index_array(seq_ids, "seq_ids", fn)
    pos = as_index_array(pos2seq_id, "pos2seq_id", fn)
    toks = as_index_array(token_ids, "token_ids", fn, pos.shape[0])
    cnts = as_index_array(token_cnt, "token_cnt", fn, pos.shape[0])
    check_range(seqs, batch, "seq_ids", fn)
    check_range(pos, seqs.shape[0], "pos2seq_id", fn)
    check_range(toks, vocab, "token_ids", fn)
    view = cpu_numpy_view(logits)
    triton_path = wants_triton(logits)  # host arrays go to the device in one upload there
    if view is not None or triton_path:
        logits = view if view is not None else logits
        if is_torch(penalties):
            penalties = penalties.detach().cpu().numpy()
    if is_torch(logits) and not triton_path:
        import torch

        pen = torch.as_tensor(penalties, dtype=torch.float32, device=logits.device)
    else:
        pen = np.ascontiguousarray(np.asarray(penalties, dtype=np.float32))
    if tuple(pen.shape) != (seqs.shape[0], 3):
        raise ValueError(f"{fn}: penalties must have shape ({seqs.shape[0]}, 3), got {tuple(pen.shape)}")
    if not pos.shape[0]:
        return
    if triton_path:
        from .triton_logits import apply_penalty_triton

        apply_penalty_triton(logits, seqs, pos, toks, cnts, pen)
        return
    if is_torch(logits):
        dev = logits.device
        p = torch.from_numpy(pos).to(dev, torch.long)
        rows = torch.from_numpy(seqs).to(dev, torch.long)[p]
        t = torch.from_numpy(toks).to(dev, torch.long)
        c = torch.from_numpy(cnts).to(dev, torch.float32)
        v = logits[rows, t].float() - (pen[p, 0] + c * pen[p, 1])
        v = torch.where(v < 0, v * pen[p, 2], v / pen[p, 2])
        logits[rows, t] = v.to(logits.dtype)
        return
    if logits.dtype in (np.float32, np.float64):
        _penalty_kernel(logits, seqs, pos, toks, cnts, pen)
        return
    rows = seqs[pos]  # e.g. float16: vectorized numpy in float32
    v = logits[rows, toks].astype(np.float32) - (pen[pos, 0] + cnts * pen[pos, 1])
    logits[rows, toks] = np.where(v < 0, v * pen[pos, 2], v / pen[pos, 2]).astype(logits.dtype)
