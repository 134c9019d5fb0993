"""``logitgate bench bitmask``: apply a token bitmask to logits on CPU, logitgate vs alternatives.

Rows: vocabulary sizes × batch sizes; columns: µs per call (median of repeats) for logitgate
(numba on numpy, and on torch CPU tensors), a naive numpy masked fill, a naive torch masked
fill, and xgrammar's ``apply_token_bitmask_inplace`` when installed. Masks are realistic: most
32-token words fully allowed, the rest random.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from .stats import markdown_table

DEFAULT_VOCABS = (32_000, 128_256, 151_936)
DEFAULT_BATCHES = (1, 32, 256)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vocab", type=int, nargs="*", default=list(DEFAULT_VOCABS))
    p.add_argument("--batch", type=int, nargs="*", default=list(DEFAULT_BATCHES))
    p.add_argument("--repeats", type=int, default=30, help="timed calls per cell (median reported)")
    p.add_argument("--allowed-words", type=float, default=0.5,
                   help="share of 32-token words left fully allowed (the rest are random bits)")
    p.add_argument("--threads", type=int, default=1, help="torch threads for the torch rows")


def _time(fn: Callable[[], None], reset: Callable[[], None], repeats: int) -> float:
    reset()
    fn()  # warm-up / compile
    samples = []
    for _ in range(repeats):
        reset()
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return float(np.median(samples)) * 1e6


def make_mask(rng: np.random.Generator, batch: int, vocab: int, allowed_words: float) -> np.ndarray:
    words = (vocab + 31) // 32
    m = rng.integers(-(2**31), 2**31 - 1, size=(batch, words), dtype=np.int64).astype(np.int32)
    m[rng.random((batch, words)) < allowed_words] = -1
    return m


def run(args: argparse.Namespace) -> int:
    import torch

    from ..kernels.apply_mask import apply_token_bitmask_inplace

    torch.set_num_threads(args.threads)
    try:
        import xgrammar
    except ImportError:
        xgrammar = None
    rng = np.random.default_rng(0)
    rows = []
    header = ["vocab", "batch", "logitgate numpy", "logitgate torch", "naive numpy", "naive torch"]
    if xgrammar is not None:
        header.append("xgrammar (torch CPU)")
    shifts_t = torch.arange(32, dtype=torch.int32)
    for vocab in args.vocab:
        for batch in args.batch:
            base = rng.normal(size=(batch, vocab)).astype(np.float32)
            mask = make_mask(rng, batch, vocab, args.allowed_words)
            x = base.copy()
            xt = torch.from_numpy(base.copy())
            mt = torch.from_numpy(mask)

            def reset_np() -> None:
                np.copyto(x, base)

            def reset_t() -> None:
                xt.copy_(torch.from_numpy(base))

            def naive_np() -> None:
                bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :vocab]
                x[bits == 0] = -np.inf

            def naive_t() -> None:
                allowed = ((mt.unsqueeze(-1) >> shifts_t) & 1).bool().reshape(batch, -1)[:, :vocab]
                xt.masked_fill_(~allowed, float("-inf"))

            cells = [
                _time(lambda: apply_token_bitmask_inplace(x, mask), reset_np, args.repeats),
                _time(lambda: apply_token_bitmask_inplace(xt, mt), reset_t, args.repeats),
                _time(naive_np, reset_np, args.repeats),
                _time(naive_t, reset_t, args.repeats),
            ]
            if xgrammar is not None:
                cells.append(_time(lambda: xgrammar.apply_token_bitmask_inplace(xt, mt), reset_t, args.repeats))
            rows.append([f"{vocab:,}", batch, *cells])
    print(f"apply_token_bitmask_inplace on CPU, µs per call (median of {args.repeats}), "
          f"{args.allowed_words:.0%} of words fully allowed, torch threads {args.threads}\n")
    print(markdown_table(header, rows))
    return 0
