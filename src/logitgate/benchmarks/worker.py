"""A benchmark worker process: one engine, one tokenizer, tasks as JSON lines on stdin.

Run by :mod:`logitgate.benchmarks.isolation`; a crash or hang here costs one task, not the run.
Each task: ``{"kind", "source", "tests": [{"ids": [...], "valid": bool}]}``, optionally
``"steady_repeats": k``. Each answer: ``{"status", "ttfm_us", "tbm_us": [...], "error"}`` with
status one of ``pass``, ``compile_error``, ``validation_error``, ``invalidation_error``; with
``k > 0`` and status ``pass``, also ``"steady_us"``: the mean step time when the tests are run
``k`` more times on the same compiled grammar (every state visited before: the steady cost, as
against the first visits ``tbm_us`` holds).
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
        ok = _trace(engine, compiled, test["ids"], tbm)
        if test["valid"] and not ok:
            validation += 1
        elif not test["valid"] and ok:
            invalidation += 1
    status = "validation_error" if validation else "invalidation_error" if invalidation else "pass"
    result = {"status": status, "ttfm_us": ttfm, "tbm_us": tbm, "validation_errors": validation,
              "invalidation_errors": invalidation}
    repeats = int(task.get("steady_repeats", 0))
    if repeats > 0 and status == "pass":
        steady: list[float] = []
        for _ in range(repeats):
            for test in task["tests"]:
                _trace(engine, compiled, test["ids"], steady)
        result["steady_us"] = sum(steady) / len(steady) if steady else float("nan")
    return result


def _trace(engine, compiled, ids: list[int], times: list[float]) -> bool:
    """Step a new matcher through ``ids`` (then ask for the end), appending each step's µs to
    ``times``; whether every token was accepted and the grammar could end."""
    m = engine.new_matcher(compiled)
    for tok in ids:
        t = time.perf_counter()
        accepted = engine.step(m, tok)
        times.append((time.perf_counter() - t) * 1e6)
        if not accepted:
            return False
    t = time.perf_counter()
    ok = engine.can_end(m)
    times.append((time.perf_counter() - t) * 1e6)
    return ok


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
