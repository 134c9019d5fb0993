"""Compile-time A/B of two revisions in one process, compiles interleaved schema by schema.

Whole-run timings on a shared machine drift by 2x over minutes, so two runs of a 3 % change
disagree; this compares each MaskBench schema's compile under both revisions back to back
(which goes first alternates), and reports the median of the per-schema ratios, which held to
within ~1 % from run to run where the run totals moved by 10 %.

The base revision's ``src/logitgate`` is extracted with ``git archive`` as a package named
``lgbase`` (the package imports itself relatively), and the working tree's ``logitgate`` is the
other side. Both compilers are warmed up first; process caches are each revision's own.
``--pause S`` sleeps before every compile: a compile after the process waited (as every MaskBench
compile is, in its worker) runs about 2x slower than one right after another, and not uniformly.

    python bench/compile_ab.py --base HEAD~3 --sample 600 --seed 1 [--pause 0.05]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extract_base(rev: str, into: Path) -> None:
    """``src/logitgate`` at ``rev`` as the package ``into/lgbase``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/logitgate"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "src" / "logitgate").rename(into / "lgbase")


def compiler(package: str):
    c = importlib.import_module(f"{package}.engine.compiler")
    info = importlib.import_module(f"{package}.tokenizer.bundled").load_bundled("llama3")
    return c.GrammarCompiler(info, max_threads=1).warm_up()


def main() -> None:
    from logitgate.benchmarks.maskbench import add_file_arguments, select_files

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, help="git revision to compare the working tree with")
    add_file_arguments(p)  # (the files `logitgate bench maskbench` takes, the same sample for a seed)
    p.add_argument("--pause", type=float, default=0.0, help="seconds to sleep before each compile")
    p.set_defaults(data_dir=str(ROOT.parent / "shared" / "data" / "maskbench"), sample=600, seed=1)
    args = p.parse_args()
    schemas = [json.loads(path.read_text())["schema"] for path in select_files(args)]
    with tempfile.TemporaryDirectory() as tmp:
        extract_base(args.base, Path(tmp))
        sys.path.insert(0, tmp)
        sides = [compiler("lgbase"), compiler("logitgate")]
        gc.collect()
        gc.freeze()
        base_us: list[float] = []
        work_us: list[float] = []
        for i, schema in enumerate(schemas):
            took = [0.0, 0.0]
            ok = True
            for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                if args.pause:
                    time.sleep(args.pause)
                t0 = time.perf_counter()
                try:
                    sides[k].compile_json_schema(schema)
                except Exception:  # (refused: left out of the comparison)
                    ok = False
                took[k] = (time.perf_counter() - t0) * 1e6
            if ok:
                base_us.append(took[0])
                work_us.append(took[1])
    n = len(base_us)
    ratios = sorted(w / b for b, w in zip(base_us, work_us))
    print(f"{n} schemas compiled by both; working tree / {args.base}:")
    print(f"  median of per-schema ratios {ratios[n // 2]:.3f} (quartiles {ratios[n // 4]:.3f}, "
          f"{ratios[3 * n // 4]:.3f})")
    print(f"  p50 {sorted(work_us)[n // 2]:,.0f} vs {sorted(base_us)[n // 2]:,.0f} µs; "
          f"total {sum(work_us) / sum(base_us):.3f}")


if __name__ == "__main__":
    main()
