"""MaskBench traces A/B of two revisions in one process: first-visit step µs, file by file.

``logitgate bench maskbench`` runs each engine in worker processes; two runs of it a few minutes
apart differ by 10-20 % on a shared machine, more than most changes to a first mask or a context
resolution move. Here both revisions run in one process, file after file, taking turns (which
goes first alternates): each compiles the file's schema and traces its tests as the benchmark's
worker does (a fresh matcher per test, fill and accept per token: ``benchmarks.worker.run_task``
of each revision). The cyclic garbage collector is paused while a file runs and collects the young
generations after it (everything every 200 files), so a full collection landing in one side's step
does not decide a comparison.

Prints, per side, the steps' total, mean, p99 and max and how many steps took over 1 ms, and the
files whose traces moved most. The base revision is extracted as in ``compile_ab.py`` (the package
``lgbase``; its kernels compile on first use, a minute or two).

    python bench/trace_ab.py --base HEAD [--sample 1000] [--seed 1] [--files ...]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_ab import ROOT, extract_base


def side(package: str):
    """``(engine, run_task)`` of ``package``: the benchmark's logitgate engine (warmed up) on Llama-3."""
    engine = importlib.import_module(f"{package}.benchmarks.engines").make_engine("logitgate", "llama3")
    return engine, importlib.import_module(f"{package}.benchmarks.worker").run_task


def main() -> None:
    from logitgate.benchmarks.maskbench import add_file_arguments, select_files
    from logitgate.benchmarks.stats import percentiles
    from logitgate.tokenizer.bundled import bundled_encoding

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, help="git revision to compare the working tree with")
    add_file_arguments(p)
    p.set_defaults(data_dir=str(ROOT.parent / "shared" / "data" / "maskbench"), sample=1000, seed=1)
    args = p.parse_args()
    enc = bundled_encoding("llama3")
    with tempfile.TemporaryDirectory() as tmp:
        extract_base(args.base, Path(tmp))
        sys.path.insert(0, tmp)
        sides = {"base": side("lgbase"), "new": side("logitgate")}
        gc.collect()
        gc.freeze()
        steps: dict[str, list[float]] = {name: [] for name in sides}
        per_file: dict[str, dict[str, float]] = {name: {} for name in sides}
        for i, path in enumerate(select_files(args)):
            spec = json.loads(path.read_text())
            tests = [{"ids": enc.encode(json.dumps(t["data"], indent=None, ensure_ascii=False),
                                        disallowed_special=()), "valid": bool(t["valid"])}
                     for t in spec.get("tests", [])]
            task = {"kind": "json_schema", "source": spec["schema"], "tests": tests}
            order = list(sides) if i % 2 == 0 else list(sides)[::-1]
            if i % 200 == 199:
                gc.collect()
            for name in order:
                engine, run_task = sides[name]
                gc.disable()
                try:
                    result = run_task(engine, task)
                finally:
                    gc.enable()
                gc.collect(1)  # (a full collection walks both sides' caches: ~0.1 s)
                steps[name] += result["tbm_us"]
                per_file[name][path.name] = sum(result["tbm_us"])
    base_total = sum(steps["base"])
    for name, xs in steps.items():
        if not xs:
            continue
        p99, top = percentiles(xs, (99, 100))
        print(f"{name:>5}: {len(xs):,} steps, total {sum(xs) / 1e3:,.1f} ms ({sum(xs) / base_total:.3f} of base), "
              f"mean {sum(xs) / len(xs):.2f} µs, p99 {p99:,.0f}, max {top:,.0f}, "
              f"over 1 ms {sum(x > 1000 for x in xs)}")
    moved = sorted((per_file["new"][f] - per_file["base"][f], f) for f in per_file["base"] if f in per_file["new"])
    for label, chosen in (("faster", moved[:8]), ("slower", moved[::-1][:8])):
        print(f"most {label}: " + ", ".join(f"{f} {d / 1e3:+.1f} ms" for d, f in chosen))


if __name__ == "__main__":
    main()
