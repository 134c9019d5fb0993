"""``logitgate bench bitmask``: apply a token bitmask to float32 logits, logitgate vs alternatives.

Rows: mask kind × vocabulary size × batch size. Columns: µs per call (median of ``--repeats``
timed calls after warm-up; the logits are restored before each call, outside the timing) for

* logitgate on numpy arrays (the numba kernel) and on torch CPU tensors (same kernel, zero-copy);
* naive numpy: ``np.unpackbits`` of the mask, then ``np.where``;
* naive torch: a bool mask from shifts of the bitmask, then ``masked_fill_``;
* ``xgrammar.apply_token_bitmask_inplace`` on torch CPU tensors, when xgrammar is installed.

With ``--device cuda`` the logits and the mask live on the GPU and the columns are logitgate
(its Triton kernel, called through ``apply_token_bitmask_inplace``), naive torch and xgrammar
(its own Triton kernel), each timed from the call to the end of the GPU's work
(``torch.cuda.synchronize``): what a decoding loop pays, launch and argument checks included.

Mask kinds: ``random`` (every bit a coin flip), ``realistic`` (90% of 32-token words fully
allowed, 5% fully forbidden, 5% random: a grammar position where most tokens fit) and
``sparse`` (95% of words forbidden, the rest random: a structural position).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .stats import markdown_table

DEFAULT_VOCABS = (32_000, 128_256, 151_936)
DEFAULT_BATCHES = (1, 32, 256)
MASK_KINDS = ("random", "realistic", "sparse")
_WARMUP = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``logitgate bench bitmask``."""
    p.add_argument("--vocab", type=int, nargs="+", default=list(DEFAULT_VOCABS), help="vocabulary sizes")
    p.add_argument("--batch", type=int, nargs="+", default=list(DEFAULT_BATCHES), help="batch sizes")
    p.add_argument("--masks", nargs="+", choices=MASK_KINDS, default=["random", "realistic"],
                   help="mask kinds (default: random realistic)")
    p.add_argument("--repeats", type=int, default=20, help="timed calls per cell; the median is reported")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads for the torch columns")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cpu (numba kernel) or cuda (Triton kernel; logits and mask on the GPU)")


def make_mask(rng: np.random.Generator, batch: int, vocab: int, kind: str) -> np.ndarray:
    """An int32 ``[batch, ceil(vocab / 32)]`` bitmask of the given kind."""
    words = (vocab + 31) // 32
    m = rng.integers(0, 2**32, size=(batch, words), dtype=np.uint64).astype(np.uint32).view(np.int32)
    if kind == "realistic":
        u = rng.random((batch, words))
        m[u < 0.90] = -1
        m[(u >= 0.90) & (u < 0.95)] = 0
    elif kind == "sparse":
        m[rng.random((batch, words)) < 0.95] = 0
    elif kind != "random":
        raise ValueError(f"unknown mask kind {kind!r}; expected one of {MASK_KINDS}")
    return m


def time_call(fn: Callable[[], Any], reset: Callable[[], Any], repeats: int,
              sync: Callable[[], Any] | None = None) -> float:
    """Median µs of ``fn()`` over ``repeats`` calls, each after an untimed ``reset()``.

    ``sync`` (e.g. ``torch.cuda.synchronize``) runs after each reset, untimed, and after each
    call, timed: the GPU's work counts, the reset's does not.
    """
    sync = sync or (lambda: None)
    for _ in range(_WARMUP):
        reset()
        fn()
    samples = []
    for _ in range(max(1, repeats)):
        reset()
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples)) * 1e6


def _table_row(kind: str, vocab: int, batch: int, cells: list[float], ours: float, xgrammar: Any, xt: Any, mt: Any,
               reset: Callable[[], Any], repeats: int, sync: Callable[[], Any] | None = None) -> list[object]:
    """One table row: ``cells`` (logitgate's and the alternatives' µs, from the third on the
    alternatives), xgrammar's µs when it is installed, and the speed-up over the best alternative."""
    if xgrammar is not None:
        cells.append(time_call(lambda: xgrammar.apply_token_bitmask_inplace(xt, mt), reset, repeats, sync))
    return [kind, f"{vocab:,}", batch, *cells, f"{min(cells[2:]) / ours:.1f}×"]


def _import_xgrammar() -> Any:
    try:
        import xgrammar
    except ImportError:
        return None
    return xgrammar


def run(args: argparse.Namespace) -> int:
    """Time every method on every (mask kind, vocab, batch) cell and print a markdown table."""
    import torch

    from ..kernels.apply_mask import apply_token_bitmask_inplace

    if getattr(args, "device", "cpu") == "cuda":
        return _run_cuda(args)
    torch.set_num_threads(max(1, args.threads))
    xgrammar = _import_xgrammar()
    rng = np.random.default_rng(args.seed)
    shifts = torch.arange(32, dtype=torch.int32)
    header = ["mask", "vocab", "batch", "logitgate numpy", "logitgate torch", "naive numpy", "naive torch"]
    if xgrammar is not None:
        header.append("xgrammar")
    header.append("speed-up vs best other")
    rows: list[list[object]] = []
    for kind in args.masks:
        for vocab in args.vocab:
            for batch in args.batch:
                base = rng.standard_normal((batch, vocab), dtype=np.float32)
                mask = make_mask(rng, batch, vocab, kind)
                x = base.copy()
                xt = torch.from_numpy(base.copy())
                base_t = torch.from_numpy(base)
                mt = torch.from_numpy(mask)

                def reset_np(x: np.ndarray = x, base: np.ndarray = base) -> None:
                    np.copyto(x, base)

                def reset_t(xt: Any = xt, base_t: Any = base_t) -> None:
                    xt.copy_(base_t)

                def naive_np(x: np.ndarray = x, mask: np.ndarray = mask, vocab: int = vocab) -> None:
                    bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :vocab]
                    x[...] = np.where(bits.astype(bool), x, np.float32(-np.inf))

                def naive_t(xt: Any = xt, mt: Any = mt, batch: int = batch, vocab: int = vocab) -> None:
                    allowed = ((mt.unsqueeze(-1) >> shifts) & 1).bool().reshape(batch, -1)[:, :vocab]
                    xt.masked_fill_(~allowed, float("-inf"))

                ours = time_call(lambda x=x, mask=mask: apply_token_bitmask_inplace(x, mask), reset_np, args.repeats)
                cells = [
                    ours,
                    time_call(lambda xt=xt, mt=mt: apply_token_bitmask_inplace(xt, mt), reset_t, args.repeats),
                    time_call(naive_np, reset_np, args.repeats),
                    time_call(naive_t, reset_t, args.repeats),
                ]
                rows.append(_table_row(kind, vocab, batch, cells, ours, xgrammar, xt, mt, reset_t, args.repeats))
    print(f"apply_token_bitmask_inplace on CPU, float32 logits: µs per call, median of {args.repeats} "
          f"(warm-up {_WARMUP}); torch threads {max(1, args.threads)}; "
          f"xgrammar {'present' if xgrammar is not None else 'not installed'}\n")
    print(markdown_table(header, rows))
    return 0


def _run_cuda(args: argparse.Namespace) -> int:
    """The ``--device cuda`` table: logitgate's Triton kernel vs naive torch and xgrammar on the GPU."""
    import torch

    from ..kernels.apply_mask import apply_token_bitmask_inplace

    if not torch.cuda.is_available():
        print("logitgate bench bitmask --device cuda: no CUDA device (torch.cuda.is_available() is False)")
        return 2
    dev = torch.device("cuda")
    xgrammar = _import_xgrammar()
    rng = np.random.default_rng(args.seed)
    shifts = torch.arange(32, dtype=torch.int32, device=dev)
    header = ["mask", "vocab", "batch", "copy (floor)", "logitgate", "naive torch"]
    if xgrammar is not None:
        header.append("xgrammar")
    header.append("speed-up vs best other")
    rows: list[list[object]] = []
    sync = torch.cuda.synchronize
    for kind in args.masks:
        for vocab in args.vocab:
            for batch in args.batch:
                base = torch.from_numpy(rng.standard_normal((batch, vocab), dtype=np.float32)).to(dev)
                mt = torch.from_numpy(make_mask(rng, batch, vocab, kind)).to(dev)
                xt = base.clone()
                dst = torch.empty_like(base)

                def reset(xt: Any = xt, base: Any = base) -> None:
                    xt.copy_(base)

                def naive(xt: Any = xt, mt: Any = mt, batch: int = batch, vocab: int = vocab) -> None:
                    allowed = ((mt.unsqueeze(-1) >> shifts) & 1).bool().reshape(batch, -1)[:, :vocab]
                    xt.masked_fill_(~allowed, float("-inf"))

                ours = time_call(lambda xt=xt, mt=mt: apply_token_bitmask_inplace(xt, mt), reset, args.repeats, sync)
                cells = [
                    time_call(lambda dst=dst, xt=xt: dst.copy_(xt), reset, args.repeats, sync),
                    ours,
                    time_call(naive, reset, args.repeats, sync),
                ]
                rows.append(_table_row(kind, vocab, batch, cells, ours, xgrammar, xt, mt, reset, args.repeats, sync))
    print(f"apply_token_bitmask_inplace on {torch.cuda.get_device_name(dev)}, float32 logits: µs per call "
          f"(launch to synchronize), median of {args.repeats} (warm-up {_WARMUP}); "
          f"xgrammar {'present' if xgrammar is not None else 'not installed'}\n")
    print(markdown_table(header, rows))
    return 0
