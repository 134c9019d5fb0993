"""Compile time of the fixed JSON-schema workloads when compiles come back to back, and when each
follows an idle spell: how much of ``logitgate bench workloads``' compile column is the wake-up.

A worker of ``logitgate bench workloads`` compiles right after it waited for its task, as a server
does after an idle spell. On this kind of shared 2-core machine the first millisecond or so after a
wait of a few ms runs slowly: the caches hold other work by then. Spinning in a loop before the
compile does not help, so it is not the clock speed. A lone ``numpy`` sum then costs ~75 µs
instead of 2. Every engine pays it, in proportion to how much code and data its compile touches.

Each engine runs in its own process (warmed up as the benchmark does). It compiles ``--variants``
renamed copies of each schema: property names, enum strings and ``$defs`` get a per-copy suffix,
so no copy is found in a cache. Before each compile it sleeps the ``--idle`` ms being measured
(0: back to back). The engines take turns in ``--rounds`` rounds, ordered as MaskBench orders
them (the machine's speed drifts over minutes). Prints, per engine, workload and idle time, the
median over the rounds of each round's median µs, and the first engine's over each other's (at
most 1: the first is as fast).

    python bench/compile_idle.py [--engines logitgate,llguidance] [--workloads flat nested recursive]
                                 [--idle 0 1 5 20] [--variants 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any


def variant(schema: Any, i: int) -> Any:
    """``schema`` with a suffix ``i`` on its property names (and ``required``), enum strings and
    ``$defs`` names (and the ``$ref`` pointers to them): the same shape, another cache key."""
    if isinstance(schema, list):
        return [variant(x, i) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in ("properties", "$defs", "definitions") and isinstance(v, dict):
            out[k] = {f"{name}{i}": variant(sub, i) for name, sub in v.items()}
        elif k == "required" and isinstance(v, list):
            out[k] = [f"{name}{i}" for name in v]
        elif k == "enum" and isinstance(v, list):
            out[k] = [f"{x}{i}" if isinstance(x, str) else x for x in v]
        elif k == "$ref" and isinstance(v, str) and v.startswith(("#/$defs/", "#/definitions/")):
            out[k] = f"{v}{i}"
        else:
            out[k] = variant(v, i)
    return out


def schema_workloads(prefixes: list[str]) -> list[dict]:
    """The fixed suite's JSON-schema workloads whose names start with one of ``prefixes``."""
    from logitgate.benchmarks.workloads import workloads

    chosen = [w for w in workloads() if any(w["name"].startswith(p) for p in prefixes)]
    others = [w["name"] for w in chosen if w["kind"] != "json_schema"]
    if others:
        raise SystemExit(f"compile_idle varies JSON schemas only, not {others}")
    if not chosen:
        raise SystemExit(f"no fixed workload starts with any of {prefixes}")
    return chosen


def worker(engine_name: str, names: list[str], idle_ms: list[float], n: int) -> None:
    """In the engine's own process: one JSON line per (workload, idle time) with the compile µs."""
    import gc

    from logitgate.benchmarks.engines import make_engine

    engine = make_engine(engine_name, "qwen2")
    gc.collect()
    gc.freeze()  # (as the benchmark's workers do)
    k = 0
    for w in schema_workloads(names):
        for idle in idle_ms:
            times = []
            for _ in range(n):
                k += 1
                schema = variant(w["source"], k)
                time.sleep(idle / 1000)
                t = time.perf_counter()
                engine.compile("json_schema", schema)
                times.append((time.perf_counter() - t) * 1e6)
            print(json.dumps({"workload": w["name"], "idle": idle, "us": times}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engines", default="logitgate,llguidance")
    p.add_argument("--workloads", nargs="+", default=["flat", "nested", "recursive"],
                   help="name prefixes of the fixed suite's JSON-schema workloads")
    p.add_argument("--idle", nargs="+", type=float, default=[0, 1, 5, 20], help="ms asleep before each compile")
    p.add_argument("--variants", type=int, default=100, help="compiles per workload, idle time and round")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the engines taking turns")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.workloads, args.idle, args.variants)
        return
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    schema_workloads(args.workloads)  # (a bad name fails here, before any engine starts)
    from logitgate.benchmarks.maskbench import engine_orders

    medians: dict[tuple[str, float], dict[str, list[float]]] = {}
    for order in engine_orders(engines, args.rounds):
        for e in order:
            cmd = [sys.executable, __file__, "--worker", e, "--workloads", *args.workloads,
                   "--idle", *map(str, args.idle), "--variants", str(args.variants)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                res = json.loads(line)
                medians.setdefault((res["workload"], res["idle"]), {}).setdefault(e, []).append(
                    statistics.median(res["us"]))
    print("| workload | idle ms | " + " | ".join(f"{e} µs" for e in engines)
          + "".join(f" | {engines[0]} / {e}" for e in engines[1:]) + " |")
    print("|---|---:|" + "---:|" * (2 * len(engines) - 1))
    for (name, idle), by in medians.items():
        med = {e: statistics.median(by[e]) for e in engines}
        cells = [f"{med[e]:,.0f}" for e in engines]
        ratios = [f"{med[engines[0]] / med[e]:.2f}" for e in engines[1:]]
        print(f"| {name} | {idle:g} | " + " | ".join(cells + ratios) + " |")


if __name__ == "__main__":
    main()
