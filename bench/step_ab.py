"""Steady per-token A/B of two revisions in one process: fill and accept µs on the fixed workloads.

Each workload (``logitgate bench workloads``) is compiled under both revisions; then its texts
(Qwen2.5 tokens) are traced with a fresh matcher, round after round, the revisions taking turns
(which goes first alternates). After ``--warm`` rounds every state has been visited, so what is
timed is the steady step a long-running server pays per token. Prints, per workload and side,
the median over the rounds of the mean fill (``fill_next_token_bitmask``) and accept
(``accept_token``) µs per token. Whole runs on a shared machine drift by more than the few per
cent a change to the step makes; interleaved rounds in one process do not.

With ``--cold``, each round compiles the workload again with the compilers' caches cleared (the
compiled grammars and the shared masks), so every step is a first visit, as in a benchmark's first
trace: what a change to a first mask or a first context resolution saves, without the run-to-run
noise of the fresh processes ``logitgate bench workloads`` starts (the process stays warm).

The base revision is extracted as in ``compile_ab.py`` (the package ``lgbase``).

    python bench/step_ab.py --base HEAD~1 [--rounds 40] [--workloads recursive arith] [--cold]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_ab import extract_base


def side(package: str):
    """``(compiler, GrammarMatcher, bitmask)`` of ``package`` on the Qwen2.5 vocabulary, warmed up."""
    c = importlib.import_module(f"{package}.engine.compiler")
    m = importlib.import_module(f"{package}.engine.matcher")
    info = importlib.import_module(f"{package}.tokenizer.bundled").load_bundled("qwen2")
    bitmask = np.full((1, (info.vocab_size + 31) // 32), -1, dtype=np.int32)
    return c.GrammarCompiler(info, max_threads=1).warm_up(), m.GrammarMatcher, bitmask


def compile_workload(compiler, w: dict):
    if w["kind"] == "builtin_json":
        return compiler.compile_builtin_json()
    make = {"json_schema": compiler.compile_json_schema, "regex": compiler.compile_regex,
            "ebnf": compiler.compile_grammar}[w["kind"]]
    return make(w["source"])


def trace(matcher_cls, compiled, bitmask, texts: list[list[int]]) -> tuple[float, float]:
    """Mean fill and accept µs per token over one run of ``texts``."""
    fill = accept = 0.0
    n = 0
    for ids in texts:
        m = matcher_cls(compiled)
        for tok in ids:
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bitmask, 0)
            t1 = time.perf_counter()
            m.accept_token(tok)
            accept += time.perf_counter() - t1
            fill += t1 - t0
            n += 1
    return fill / n * 1e6, accept / n * 1e6


def main() -> None:
    from logitgate.benchmarks.workloads import workloads
    from logitgate.tokenizer.bundled import bundled_encoding

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, help="git revision to compare the working tree with")
    p.add_argument("--rounds", type=int, default=40, help="timed rounds per workload")
    p.add_argument("--warm", type=int, default=5, help="untimed rounds first")
    p.add_argument("--workloads", nargs="*", default=None, help="workload names (prefixes); default: all")
    p.add_argument("--cold", action="store_true", help="compile afresh each round, caches cleared: first visits")
    args = p.parse_args()
    enc = bundled_encoding("qwen2")
    chosen = [w for w in workloads()
              if args.workloads is None or any(w["name"].startswith(x) for x in args.workloads)]
    with tempfile.TemporaryDirectory() as tmp:
        extract_base(args.base, Path(tmp))
        sys.path.insert(0, tmp)
        sides = {args.base: side("lgbase"), "working tree": side("logitgate")}
        for w in chosen:
            texts = [enc.encode(t, disallowed_special=()) for t in w["texts"]]
            compiled = {k: compile_workload(s[0], w) for k, s in sides.items()}
            times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in sides}
            order = list(sides)
            for r in range(args.warm + args.rounds):
                for k in (order if r % 2 == 0 else order[::-1]):
                    if args.cold:
                        sides[k][0].clear_cache()
                        compiled[k] = compile_workload(sides[k][0], w)
                    f, a = trace(sides[k][1], compiled[k], sides[k][2], texts)
                    if r >= args.warm:
                        times[k][0].append(f)
                        times[k][1].append(a)
            print(f"{w['name']:<32}" + "  ".join(
                f"{k}: fill {statistics.median(f):6.2f} accept {statistics.median(a):6.2f}"
                for k, (f, a) in times.items()))


if __name__ == "__main__":
    main()
