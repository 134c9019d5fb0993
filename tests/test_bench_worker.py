"""The benchmark worker's task protocol (:func:`logitgate.benchmarks.worker.run_task`), with a stand-in engine."""

from __future__ import annotations

import math

from logitgate.benchmarks.worker import run_task


class _CountingEngine:
    """Accepts every token but -1; counts the steps it is asked for."""

    def __init__(self) -> None:
        self.steps = 0

    def compile(self, kind, source):
        return object()

    def new_matcher(self, compiled):
        return []

    def step(self, m, token) -> bool:
        self.steps += 1
        return token != -1

    def can_end(self, m) -> bool:
        return True


def test_steady_repeats_replay_the_tests_after_the_cold_trace() -> None:
    engine = _CountingEngine()
    task = {"kind": "x", "source": None, "tests": [{"ids": [1, 2, 3], "valid": True}, {"ids": [4], "valid": True}],
            "steady_repeats": 2}
    r = run_task(engine, task)
    assert r["status"] == "pass"
    assert len(r["tbm_us"]) == 4 + 2  # (each step, and each test's end question)
    assert engine.steps == 4 * 3  # the cold trace, then two replays
    assert r["steady_us"] > 0 and math.isfinite(r["steady_us"])


def test_no_steady_replay_without_repeats_or_after_a_failure() -> None:
    engine = _CountingEngine()
    r = run_task(engine, {"kind": "x", "source": None, "tests": [{"ids": [1, 2], "valid": True}]})
    assert "steady_us" not in r and engine.steps == 2
    engine = _CountingEngine()
    r = run_task(engine, {"kind": "x", "source": None, "tests": [{"ids": [1, -1, 2], "valid": True}],
                          "steady_repeats": 3})
    assert r["status"] == "validation_error" and "steady_us" not in r
    assert engine.steps == 2  # (stopped at the refused token; nothing replayed)
