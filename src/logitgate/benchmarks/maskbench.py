"""``logitgate bench maskbench``: the MaskBench protocol, engines side by side.

For each schema file: compile (TTFM); for each test instance, reset, tokenize
``json.dumps(data, indent=None, ensure_ascii=False)`` with the Llama-3 tokenizer (no special
tokens) and time "fill the next-token mask + accept the token" per token (TBM); a token that
is not allowed rejects the instance. After the last token the stop token must be allowed for
the instance to count as accepted. A valid instance rejected is a *validation error*, an
invalid instance accepted an *invalidation error*; a schema passes when it compiles and has
neither. Each engine runs single-threaded in its own process, so a crash or a timeout costs
one schema, not the run; the engines run each file in an order drawn at random
(:func:`engine_orders`), so that none always runs right after the same other one.

    logitgate bench maskbench --sample 500 --engines logitgate,llguidance,xgrammar --plot cdf.png
"""

from __future__ import annotations

import argparse
import glob
import json
import random
import sys
from pathlib import Path

from .isolation import EngineProcess
from .stats import markdown_table, percentiles

STATUSES = ("pass", "compile_error", "crash", "timeout", "validation_error", "invalidation_error")
DEFAULT_DATA = Path("..") / "shared" / "data" / "maskbench"


def add_file_arguments(p: argparse.ArgumentParser, sample_help: str = "random sample of N files") -> None:
    """``--files``, ``--data-dir``, ``--sample``, ``--seed``: which MaskBench files (see :func:`select_files`)."""
    p.add_argument("--files", nargs="*", default=None,
                   help=f"MaskBench JSON files or globs, or names of files in --data-dir "
                        f"(default: {DEFAULT_DATA}/*.json)")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA), help="folder of MaskBench files")
    p.add_argument("--sample", type=int, default=None, help=sample_help)
    p.add_argument("--seed", type=int, default=0, help="seed of the file sample")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engines", default="logitgate,llguidance,xgrammar",
                   help="comma-separated engines (logitgate, llguidance, xgrammar)")
    add_file_arguments(p)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per schema per engine (compile + tests)")
    p.add_argument("--tokenizer", default="llama3", help="bundled tokenizer (MaskBench uses llama3)")
    p.add_argument("--plot", default=None, help="write a CDF plot of TBM and TTFM to this PNG")
    p.add_argument("--json-out", default=None, help="write per-file results to this JSON file")


def select_files(args: argparse.Namespace) -> list[Path]:
    if args.files:
        paths = sorted({Path(f) for pat in args.files for f in _matching(pat, args.data_dir)})
    else:
        paths = sorted(Path(args.data_dir).glob("*.json"))
    if not paths:
        raise SystemExit(f"no MaskBench files found (looked in {args.data_dir}); pass --files or --data-dir")
    if args.sample is not None and args.sample < len(paths):
        paths = sorted(random.Random(args.seed).sample(paths, args.sample))
    return paths


def _matching(pattern: str, data_dir: str) -> list[str]:
    """Files ``pattern`` names: a path or glob, else one inside ``data_dir`` (a file's name)."""
    hits = glob.glob(pattern) or glob.glob(str(Path(data_dir) / pattern))
    if not hits:
        raise SystemExit(f"no MaskBench file matches {pattern!r} (nor {Path(data_dir) / pattern})")
    return hits


def progress(iterable, total: int, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, dynamic_ncols=True)


def summarize(results: dict[str, list[dict]]) -> str:
    """The MaskBench tables (TBM, TTFM, outcome counts) for per-engine result lists."""
    tbm_q = (50, 75, 90, 95, 99, 99.9, 100)
    ttfm_q = (50, 75, 90, 99, 100)
    tbm_rows, ttfm_rows, count_rows = [], [], []
    for engine, rs in results.items():
        tbm = [x for r in rs for x in r.get("tbm_us", [])]
        ttfm = [r["ttfm_us"] for r in rs if "ttfm_us" in r]
        mean = sum(tbm) / len(tbm) if tbm else float("nan")
        tbm_rows.append([engine, mean, *percentiles(tbm, tbm_q), len(tbm)])
        tmean = sum(ttfm) / len(ttfm) if ttfm else float("nan")
        ttfm_rows.append([engine, tmean, *percentiles(ttfm, ttfm_q)])
        count_rows.append([engine, *(sum(r["status"] == s for r in rs) for s in STATUSES), len(rs)])
    tables = [
        "TBM (µs per token: fill mask + accept)\n" + markdown_table(
            ["engine", "avg", "p50", "p75", "p90", "p95", "p99", "p99.9", "max", "tokens"], tbm_rows),
        "TTFM (µs: compile)\n" + markdown_table(["engine", "avg", "p50", "p75", "p90", "p99", "max"], ttfm_rows),
        "Outcomes (schema files)\n" + markdown_table(["engine", *STATUSES, "files"], count_rows),
    ]
    common = _compiled_by_all(results)
    if len(results) > 1 and common:
        # (each engine's TTFM above is over the schemas it compiled, and a schema one engine refuses
        # is often one the others take longest on: the same schemas for all, side by side)
        rows = []
        for engine, rs in results.items():
            ttfm = [r["ttfm_us"] for r in rs if r.get("file") in common]
            rows.append([engine, sum(ttfm) / len(ttfm), *percentiles(ttfm, ttfm_q)])
        tables.append(f"TTFM on the {len(common)} schemas every engine compiled (µs)\n"
                      + markdown_table(["engine", "avg", "p50", "p75", "p90", "p99", "max"], rows))
    return "\n\n".join(tables)


def _compiled_by_all(results: dict[str, list[dict]]) -> set[str]:
    """The files every engine compiled (results that have a TTFM), by name."""
    sets = [{r.get("file") for r in rs if "ttfm_us" in r} for rs in results.values()]
    return set.intersection(*sets) - {None} if sets else set()


def _plot(results: dict[str, list[dict]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for engine, rs in results.items():
        for ax, values in ((axes[0], [x for r in rs for x in r.get("tbm_us", [])]),
                           (axes[1], [r["ttfm_us"] for r in rs if "ttfm_us" in r])):
            if values:
                v = np.sort(np.asarray(values))
                ax.plot(v, np.arange(1, len(v) + 1) / len(v), label=engine)
    for ax, title in zip(axes, ("TBM (µs)", "TTFM (µs)")):
        ax.set_xscale("log")
        ax.set_title(f"CDF of {title}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def engine_orders(engines: list[str], count: int, seed: int = 0) -> list[list[str]]:
    """The order the engines run each of ``count`` files in: drawn at random (from ``seed``), and
    never beginning with the engine that ended the file before, so that over a run each engine
    runs right after each other one about equally often (with two engines they alternate).

    A worker waits while the others run, and a compile after a wait is slower (docs/benchmarks.md,
    stop 33); in a fixed order each engine would always wait through the same others' work, and
    always compile right after the same one. (Measured: no effect of the order on this machine that
    a run can show -- the per-file ratio of two engines' compiles moved 1.88-2.02 between orders --
    but a fixed order could hide one.)

        >>> orders = engine_orders(["a", "b", "c"], 300)
        >>> all(sorted(o) == ["a", "b", "c"] for o in orders), any(p[-1] == o[0] for p, o in zip(orders, orders[1:]))
        (True, False)
    """
    rng = random.Random(seed)
    orders: list[list[str]] = []
    last = None
    for _ in range(count):
        order = rng.sample(engines, len(engines))
        while len(order) > 1 and order[0] == last:
            order = rng.sample(engines, len(engines))
        orders.append(order)
        last = order[-1] if order else None
    return orders


def run(args: argparse.Namespace) -> int:
    from ..tokenizer.bundled import bundled_encoding

    paths = select_files(args)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    enc = bundled_encoding(args.tokenizer)
    procs = {e: EngineProcess(e, args.tokenizer) for e in engines}
    results: dict[str, list[dict]] = {e: [] for e in engines}
    try:
        orders = engine_orders(engines, len(paths), args.seed)
        for path, order in zip(progress(paths, len(paths), "maskbench"), orders):
            spec = json.loads(Path(path).read_text())
            tests = [{"ids": enc.encode(json.dumps(t["data"], indent=None, ensure_ascii=False), disallowed_special=()),
                      "valid": bool(t["valid"])} for t in spec.get("tests", [])]
            task = {"kind": "json_schema", "source": spec["schema"], "tests": tests}
            for e in order:
                try:
                    r = procs[e].run(task, args.timeout)
                except RuntimeError as err:  # the engine cannot even start
                    print(str(err), file=sys.stderr)
                    return 2
                r["file"] = Path(path).name
                results[e].append(r)
    finally:
        for p in procs.values():
            p.close()
    print(f"MaskBench: {len(paths)} files, tokenizer {args.tokenizer}, engines single-threaded\n")
    print(summarize(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results))
    if args.plot:
        _plot(results, args.plot)
        print(f"\nCDF plot written to {args.plot}")
    return 0
