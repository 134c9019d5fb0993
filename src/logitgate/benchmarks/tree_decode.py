"""``logitgate bench tree-decode``: load a 1,000,000-prefix tree-decode config, then decode with it.

Generates a synthetic RTP-LLM config (``{"start_token_id", "end_token_id", "sep", "prefix_dict"}``)
into a temporary file: a tree whose levels branch ``--branching`` ways (semantic-id style), cut at
``--keys`` keys; the deepest keys allow only ``end``. Reports

* load + compile time of :meth:`TreeDecodeConfig.from_file` (best of ``--repeats``, in a fresh
  process) and its memory: tracemalloc peak and the growth of peak RSS, next to the file size and
  the compiled trie's size; optionally the same for ``json.load`` + ``from_dict`` (``--compare-json``);
* per-step cost of random walks from the root to ``end``: ``fill_bitmask`` (a full row of a
  ``--vocab`` vocabulary) and ``accept_token``, mean / p50 / p99 in µs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import time

import numpy as np

from .stats import markdown_table, percentiles


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", type=int, default=1_000_000, help="prefix_dict keys to generate")
    p.add_argument("--branching", type=str, default="100,100,100",
                   help="children per node at each level, comma separated (the last one repeats)")
    p.add_argument("--vocab", type=int, default=151_936, help="vocabulary size (ids are drawn below it)")
    p.add_argument("--repeats", type=int, default=3, help="timed loads (best reported)")
    p.add_argument("--walks", type=int, default=2_000, help="random root-to-end walks for the per-step timings")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compare-json", action="store_true",
                   help="also time json.load + TreeDecodeConfig.from_dict (the per-key Python path)")
    p.add_argument("--keep", type=str, default=None, help="write the generated config here and keep it")


def generate_config(path: str, n_keys: int, branching: list[int], vocab: int, seed: int = 0) -> dict[str, int]:
    """Write a synthetic config with ``n_keys`` keys to ``path``; returns its header fields and sizes."""
    rng = np.random.default_rng(seed)
    start, end = vocab - 2, vocab - 1
    lo, span = 1000, vocab - 1002
    keys_written = 0
    cands_written = 0
    level_keys = [str(start)]
    depth = 0
    with open(path, "w", encoding="ascii") as f:
        f.write(f'{{"start_token_id": {start}, "end_token_id": {end}, "sep": "_", "prefix_dict": {{')
        first = True
        while level_keys and keys_written < n_keys:
            b = branching[min(depth, len(branching) - 1)]
            room = n_keys - keys_written
            level_keys = level_keys[:room]
            # children of this level become keys only if they still fit
            will_have_children = keys_written + len(level_keys) < n_keys
            next_keys: list[str] = []
            base = rng.integers(0, span, size=len(level_keys))
            steps = np.arange(b, dtype=np.int64) * 7919
            for key, bs in zip(level_keys, base):
                if will_have_children:
                    toks = (lo + (bs + steps) % span).tolist()
                    next_keys.extend(f"{key}_{t}" for t in toks)
                    body = ",".join(map(str, toks))
                    cands_written += b
                else:
                    body = str(end)
                    cands_written += 1
                f.write(("" if first else ",\n") + f'"{key}": [{body}]')
                first = False
            keys_written += len(level_keys)
            level_keys = next_keys
            depth += 1
        f.write("}}\n")
    return {"start": start, "end": end, "keys": keys_written, "candidates": cands_written,
            "bytes": os.path.getsize(path), "depth": depth}


def _max_rss_bytes() -> int:
    import resource
    import sys

    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r if sys.platform == "darwin" else r * 1024)


def _load_child(path: str, vocab: int, repeats: int, use_json: bool, q: mp.Queue) -> None:  # pragma: no cover
    import tracemalloc

    from ..processors.tree_decode import TreeDecodeConfig

    def load():
        if use_json:
            with open(path, "rb") as f:
                d = json.load(f)
            return TreeDecodeConfig.from_dict(d, vocab_size=vocab, source=path)
        return TreeDecodeConfig.from_file(path, vocab_size=vocab)

    rss0 = _max_rss_bytes()
    times = []
    cfg = None
    for _ in range(repeats):
        cfg = None
        t = time.perf_counter()
        cfg = load()
        times.append(time.perf_counter() - t)
    rss1 = _max_rss_bytes()
    cfg = None
    tracemalloc.start()
    cfg = load()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    q.put({"best_s": min(times), "times": times, "rss_growth": rss1 - rss0, "trace_peak": peak,
           "nbytes": cfg.nbytes, "nodes": cfg.num_nodes, "keys": cfg.num_keys})


def measure_load(path: str, vocab: int, repeats: int, use_json: bool = False) -> dict:
    """Load time and memory in a fresh (spawned) process, so peak RSS is the loader's own."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_load_child, args=(path, vocab, repeats, use_json, q))
    proc.start()
    out = q.get()
    proc.join()
    return out


def measure_steps(path: str, vocab: int, walks: int, seed: int = 0) -> dict[str, list[float]]:
    """Per-step µs of fill_bitmask / accept_token over random walks (each walk ends at end_token_id)."""
    from ..processors.tree_decode import TreeDecodeConfig

    cfg = TreeDecodeConfig.from_file(path, vocab_size=vocab)
    rng = np.random.default_rng(seed)
    row = np.empty((vocab + 31) // 32, dtype=np.int32)
    fill, accept, allowed = [], [], []
    st = cfg.new_state()
    st.fill_bitmask(row)  # compile the kernels
    st.accept_token(int(st.allowed_token_ids()[0]))
    pc = time.perf_counter_ns
    for _ in range(walks):
        st.reset()
        for _ in range(64):
            t0 = pc()
            st.fill_bitmask(row)
            t1 = pc()
            ids = st.allowed_token_ids()
            t2 = pc()
            tok = int(ids[rng.integers(ids.size)])
            t3 = pc()
            st.accept_token(tok)
            t4 = pc()
            fill.append((t1 - t0) / 1e3)
            allowed.append((t2 - t1) / 1e3)
            accept.append((t4 - t3) / 1e3)
            if st.is_finished:
                break
    return {"fill_bitmask": fill, "allowed_token_ids": allowed, "accept_token": accept}


def run(args: argparse.Namespace) -> int:
    branching = [int(x) for x in args.branching.split(",") if x.strip()]
    tmpdir = None
    if args.keep:
        path = args.keep
    else:
        tmpdir = tempfile.TemporaryDirectory(prefix="logitgate-tree-")
        path = os.path.join(tmpdir.name, "tree_decode.json")
    try:
        t = time.perf_counter()
        info = generate_config(path, args.keys, branching, args.vocab, args.seed)
        gen_s = time.perf_counter() - t
        print(f"config: {info['keys']:,} keys, {info['candidates']:,} candidates, depth {info['depth']}, "
              f"{info['bytes'] / 2**20:.1f} MiB (generated in {gen_s:.1f} s)")
        rows = []
        for label, use_json in (("from_file", False), ("json.load + from_dict", True)):
            if use_json and not args.compare_json:
                continue
            m = measure_load(path, args.vocab, args.repeats, use_json)
            rows.append([label, f"{m['best_s']:.2f}", f"{m['trace_peak'] / 2**20:.0f}",
                         f"{m['rss_growth'] / 2**20:.0f}", f"{m['nbytes'] / 2**20:.0f}", f"{m['nodes']:,}"])
        print()
        print(markdown_table(["load", "best s", "tracemalloc peak MiB", "peak RSS growth MiB", "trie MiB", "nodes"],
                             rows))
        steps = measure_steps(path, args.vocab, args.walks, args.seed)
        print()
        srows = []
        for name, xs in steps.items():
            p50, p99 = percentiles(xs, [50, 99])
            srows.append([name, len(xs), float(np.mean(xs)), p50, p99])
        print(markdown_table([f"per step (vocab {args.vocab:,})", "samples", "mean µs", "p50 µs", "p99 µs"], srows))
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    return 0


if __name__ == "__main__":  # pragma: no cover
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    raise SystemExit(run(ap.parse_args()))
