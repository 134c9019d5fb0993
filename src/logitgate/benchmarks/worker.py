"""A benchmark worker process: one engine, one tokenizer, tasks as JSON lines on stdin.

Run by :mod:`logitgate.benchmarks.isolation`; a crash or hang here costs one task, not the run.
Each task: ``{"kind", "source", "tests": [{"ids": [...], "valid": bool}]}``. Each answer:
``{"status", "ttfm_us", "tbm_us": [...], "error"}`` with status one of ``pass``,
``compile_error``, ``validation_error``, ``invalidation_error``.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import traceback

from .engines import make_engine


def run_task(engine, task: dict) -> dict:
    t0 = time.perf_counter()
    try:
        compiled = engine.compile(task["kind"], task["source"])
    except Exception as e:
        return {"status": "compile_error", "error": f"{type(e).__name__}: {e}"[:500], "tbm_us": []}
    ttfm = (time.perf_counter() - t0) * 1e6
    tbm: list[float] = []
    validation = invalidation = 0
    for test in task["tests"]:
        m = engine.new_matcher(compiled)
        ok = True
        for tok in test["ids"]:
            t = time.perf_counter()
            accepted = engine.step(m, tok)
            tbm.append((time.perf_counter() - t) * 1e6)
            if not accepted:
                ok = False
                break
        if ok:
            t = time.perf_counter()
            ok = engine.can_end(m)
            tbm.append((time.perf_counter() - t) * 1e6)
        if test["valid"] and not ok:
            validation += 1
        elif not test["valid"] and ok:
            invalidation += 1
    status = "validation_error" if validation else "invalidation_error" if invalidation else "pass"
    return {"status": status, "ttfm_us": ttfm, "tbm_us": tbm, "validation_errors": validation,
            "invalidation_errors": invalidation}


def main() -> None:
    engine_name, tokenizer = sys.argv[1], sys.argv[2]
    engine = make_engine(engine_name, tokenizer)
    # As a long-running server would: the start-up heap (imports, compiled kernels, the tokenizer)
    # is frozen out of the cyclic garbage collector, so a full collection during a timed step walks
    # only what the tasks themselves keep alive. Done for every engine alike.
    gc.collect()
    gc.freeze()
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        task = json.loads(line)
        try:
            result = run_task(engine, task)
        except Exception:
            result = {"status": "crash", "error": traceback.format_exc()[-800:], "tbm_us": []}
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
