"""``logitgate bench logits``: logits-kernel throughput and pipeline overhead.

For batch × vocab: time logitgate's bias, penalty, bitmask and temperature-softmax kernels
against naive torch ops doing the same work, and against one plain copy of the logits (the
memory-bandwidth floor). On a CUDA device the Triton kernels and the fused Triton kernel are
timed too, the fused one as a multiple of the floor. Finally, the per-step overhead of
``LogitsPipeline`` for a batch of 64 requests with mixed features.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .stats import markdown_table

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", type=int, nargs="*", default=[1, 8, 64, 256])
    p.add_argument("--vocab", type=int, nargs="*", default=[32_000, 128_256, 151_936])
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")


def _median_us(fn: Callable[[], object], repeats: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t)
    return float(np.median(out)) * 1e6


def _inputs(rng: np.random.Generator, batch: int, vocab: int, per_row: int = 64):
    rows = np.repeat(np.arange(batch), per_row)
    toks = np.concatenate([rng.choice(vocab, per_row, replace=False) for _ in range(batch)])
    bias = rng.normal(size=rows.shape[0]).astype(np.float32)
    cnt = rng.integers(1, 5, rows.shape[0]).astype(np.int32)
    pens = np.tile(np.array([[0.5, 0.2, 1.1]], np.float32), (batch, 1))
    words = (vocab + 31) // 32
    mask = rng.integers(-(2**31), 2**31 - 1, size=(batch, words), dtype=np.int64).astype(np.int32)
    mask[rng.random((batch, words)) < 0.5] = -1
    temps = np.full(batch, 0.7, np.float32)
    return rows, toks, bias, cnt, pens, mask, temps


def run(args: argparse.Namespace) -> int:
    import torch

    from ..kernels.apply_mask import apply_token_bitmask_inplace
    from ..kernels.bias import apply_logit_bias_inplace
    from ..kernels.penalty import apply_penalty_inplace
    from ..kernels.softmax import softmax_with_temperature

    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    rng = np.random.default_rng(0)
    rows_out = []
    shifts = torch.arange(32, dtype=torch.int32, device=dev)
    for vocab in args.vocab:
        for batch in args.batch:
            rows, toks, bias, cnt, pens, mask, temps = _inputs(rng, batch, vocab)
            base = torch.randn(batch, vocab, device=dev)
            x = base.clone()
            dst = torch.empty_like(base)
            t_rows = torch.from_numpy(rows).to(dev)
            t_toks = torch.from_numpy(toks.astype(np.int64)).to(dev)
            t_bias = torch.from_numpy(bias).to(dev)
            t_mask = torch.from_numpy(mask).to(dev)
            t_temps = torch.from_numpy(temps).to(dev)
            seq_ids = np.arange(batch)

            def naive_all() -> None:
                y = x.clone()
                y.index_put_((t_rows, t_toks), t_bias, accumulate=True)
                v = y[t_rows, t_toks] - (0.5 + torch.from_numpy(cnt).to(dev) * 0.2)
                y[t_rows, t_toks] = torch.where(v < 0, v * 1.1, v / 1.1)
                allowed = ((t_mask.unsqueeze(-1) >> shifts) & 1).bool().reshape(batch, -1)[:, :vocab]
                y.masked_fill_(~allowed, float("-inf"))
                torch.softmax(y / t_temps[:, None], dim=-1)

            def ours_all() -> None:
                y = x.clone() if cuda else x  # CPU: in place on the same buffer
                apply_logit_bias_inplace(y, rows, toks, bias)
                apply_penalty_inplace(y, seq_ids, rows, toks, cnt, pens)
                apply_token_bitmask_inplace(y, t_mask)
                softmax_with_temperature(y, temps)

            cells = {
                "copy (floor)": _median_us(lambda: dst.copy_(x), args.repeats, sync),
                "bias": _median_us(lambda: apply_logit_bias_inplace(x, rows, toks, bias), args.repeats, sync),
                "penalty": _median_us(lambda: apply_penalty_inplace(x, seq_ids, rows, toks, cnt, pens), args.repeats,
                                      sync),
                "mask": _median_us(lambda: apply_token_bitmask_inplace(x, t_mask), args.repeats, sync),
                "softmax(T)": _median_us(lambda: softmax_with_temperature(x, temps), args.repeats, sync),
                "logitgate all 4": _median_us(ours_all, args.repeats, sync),
                "naive torch all 4": _median_us(naive_all, args.repeats, sync),
            }
            if cuda:
                from ..kernels.triton_logits import fused_probs_triton

                def fused() -> None:
                    fused_probs_triton(x, t_temps, bitmask=t_mask, bias=(rows, toks, bias),
                                       penalty=(seq_ids, rows, toks, cnt, pens))

                cells["fused Triton"] = _median_us(fused, args.repeats, sync)
                cells["fused / floor"] = cells["fused Triton"] / cells["copy (floor)"]
            x.copy_(base)
            rows_out.append([f"{vocab:,}", batch, *cells.values()])
            header = ["vocab", "batch", *cells.keys()]
    print(f"Logits kernels on {dev} (µs, median of {args.repeats}; 64 sparse entries per row; "
          f"torch threads {args.threads})\n")
    print(markdown_table(header, rows_out))
    print()
    print(_pipeline_overhead(args.repeats))
    if cuda:
        print(_pipeline_overhead(args.repeats, dev))
    return 0


def _pipeline_overhead(repeats: int, device: Any = None) -> str:
    """Per-step cost of LogitsPipeline for 64 rows with mixed features (no grammar).

    With a CUDA ``device`` the logits live there (the fused Triton path), the step's GPU work
    included in the time.
    """
    from ..processors.pipeline import LogitsPipeline, SamplingParams

    vocab, batch = 32_000, 64
    rng = np.random.default_rng(1)
    pipe = LogitsPipeline(vocab, eos_token_id=2)
    for r in range(batch):
        kind = r % 4
        params = [
            SamplingParams(temperature=0.0),
            SamplingParams(temperature=0.8, top_p=0.9, presence_penalty=0.5, seed=r),
            SamplingParams(temperature=1.0, top_k=50, min_p=0.05, repetition_penalty=1.2, logit_bias={5: 2.0}),
            SamplingParams(temperature=0.7, bad_words=[[11, 12]], min_tokens=4, allowed_token_ids=range(0, vocab, 2)),
        ][kind]
        pipe.add_request(r, params, output_token_ids=rng.integers(0, vocab, 50).tolist())
    logits = rng.normal(size=(batch, vocab)).astype(np.float32)
    times = []
    for _ in range(repeats):
        if device is None:
            x = logits.copy()
        else:
            import torch

            x = torch.from_numpy(logits).to(device)
            torch.cuda.synchronize()
        t = time.perf_counter()
        pipe.step(x)  # the sampled ids come back to the host: the GPU's work is done when it returns
        times.append(time.perf_counter() - t)
    ms = float(np.median(times)) * 1e3
    where = "numpy logits" if device is None else f"logits on {device}"
    return (f"LogitsPipeline.step, batch {batch}, vocab {vocab:,}, {where}, mixed greedy / top-p+presence / "
            f"top-k+min-p+repetition+bias / allowed-ids+bad-words+min-tokens: {ms:.2f} ms per step "
            f"({ms / batch * 1e3:.0f} µs per row)")
