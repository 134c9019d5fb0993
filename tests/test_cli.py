"""The `logitgate` command: grammar, check, bench argument handling (generate is covered end to end elsewhere)."""

from __future__ import annotations

import json

import pytest

from logitgate.cli.check import classify_keywords
from logitgate.cli.main import main
from logitgate.grammar.ir import Grammar

SCHEMA = {"type": "object", "title": "T", "properties": {"a": {"type": "integer", "minimum": 0}, "b": {"x-custom": 1}},
          "required": ["a"], "additionalProperties": False}


def test_grammar_prints_ebnf_that_parses_back(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCHEMA))
    assert main(["grammar", str(path)]) == 0
    text = capsys.readouterr().out
    assert Grammar.from_ebnf(text) == Grammar.from_json_schema(SCHEMA)
    assert main(["grammar", "--regex", "[0-9]{3}"]) == 0
    assert "[0-9]{3}" in capsys.readouterr().out


def test_grammar_reports_errors(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"type": "string", "format": "no-such-format"}))
    assert main(["grammar", str(path)]) == 1
    err = capsys.readouterr().err
    assert "format" in err and "SchemaError" in err


def test_check_classifies_keywords(tmp_path, capsys):
    rows, refusal = classify_keywords(SCHEMA)
    verdicts = {(p, k): v for p, k, v in rows}
    assert refusal is None
    assert verdicts[("#", "title")] == "annotation"
    assert verdicts[("#/properties/a", "minimum")] == "enforced"
    assert verdicts[("#/properties/b", "x-custom")].startswith("ignored")
    refused = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    rows, refusal = classify_keywords(refused)
    assert refusal and ("#", "uniqueItems", "refused") in rows
    rows, refusal = classify_keywords(refused, ignore=("uniqueItems",))
    assert refusal is None and ("#", "uniqueItems", "ignored (--ignore)") in rows
    path = tmp_path / "s.json"
    path.write_text(json.dumps(refused))
    assert main(["check", str(path)]) == 1
    assert "refused" in capsys.readouterr().out


def test_check_and_grammar_take_formats_of_ones_own(tmp_path, capsys):
    """``--format NAME=PATTERN`` defines a format the schema uses (pydantic's ``uuid4``): refused
    without it, enforced with it; a malformed option is an argument error."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "format": "uuid4"}},
              "additionalProperties": False}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema))
    assert main(["check", str(path)]) == 1
    assert "unknown format 'uuid4'" in capsys.readouterr().out
    uuid4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert main(["check", str(path), "--format", f"uuid4={uuid4}"]) == 0
    assert "the schema converts" in capsys.readouterr().out
    assert ("#/properties/id", "format", "enforced") in classify_keywords(schema, formats={"uuid4": uuid4})[0]
    assert main(["grammar", str(path), "--format", f"uuid4={uuid4}"]) == 0
    text = capsys.readouterr().out
    assert Grammar.from_ebnf(text) == Grammar.from_json_schema(schema, formats={"uuid4": uuid4})
    with pytest.raises(SystemExit):
        main(["check", str(path), "--format", "uuid4"])
    assert "NAME=PATTERN" in capsys.readouterr().err


def test_version_and_bench_help(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip()
    with pytest.raises(SystemExit):
        main(["bench", "maskbench", "--help"])
    assert "--engines" in capsys.readouterr().out


def test_python_dash_m_runs_the_command_line() -> None:
    """``python -m logitgate`` is the ``logitgate`` command."""
    import subprocess
    import sys

    import logitgate

    done = subprocess.run([sys.executable, "-m", "logitgate", "--version"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == logitgate.__version__


def test_maskbench_reference_counts(tmp_path, capsys):
    """A made-up MaskBench folder: one refused schema, one whose instances are decided."""
    ok = {"schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}, "required": ["n"]},
          "tests": [{"data": {"n": 3}, "valid": True}, {"data": {"n": 9}, "valid": False},
                    {"data": {}, "valid": False}]}
    refused = {"schema": {"type": "string", "format": "no-such-format"}, "tests": []}
    (tmp_path / "a.json").write_text(json.dumps(ok))
    (tmp_path / "b.json").write_text(json.dumps(refused))
    assert main(["bench", "maskbench-reference", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 files, 1 convert (50.0%)" in out
    assert "| format | 1 |" in out
    assert "| valid | 1 | 0 | 0 |" in out
    assert "| invalid | 2 | 0 | 0 |" in out


def test_maskbench_summary_compares_ttfm_on_the_schemas_every_engine_compiled():
    from logitgate.benchmarks.maskbench import summarize

    results = {
        "a": [{"file": "x.json", "status": "pass", "ttfm_us": 100.0, "tbm_us": [1.0]},
              {"file": "y.json", "status": "pass", "ttfm_us": 9000.0, "tbm_us": [2.0]}],
        "b": [{"file": "x.json", "status": "pass", "ttfm_us": 300.0, "tbm_us": [1.0]},
              {"file": "y.json", "status": "compile_error", "tbm_us": []}],
    }
    out = summarize(results)
    common = out.split("TTFM on the 1 schemas every engine compiled (µs)\n")[1]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in common.splitlines() if line.startswith("| a") or line.startswith("| b")}
    assert rows["a"][:2] == ["100", "100"]  # (y.json, which b refused, is left out of a's row)
    assert rows["b"][:2] == ["300", "300"]
    assert "schemas every engine compiled" not in summarize({"a": results["a"]})


def test_maskbench_engines_follow_each_other_about_equally_often():
    from collections import Counter
    from itertools import pairwise

    from logitgate.benchmarks.maskbench import engine_orders

    engines = ["logitgate", "llguidance", "xgrammar"]
    orders = engine_orders(engines, 3000, seed=7)
    assert orders == engine_orders(engines, 3000, seed=7)  # (reproducible from the seed)
    assert all(sorted(o) == sorted(engines) for o in orders)
    run = [e for o in orders for e in o]  # every task, in the order the workers run them
    pairs = Counter(pairwise(run))
    assert not any(a == b for a, b in pairs)  # (no engine runs two tasks back to back: it would not wait)
    counts = [pairs[a, b] for a in engines for b in engines if a != b]
    assert max(counts) < 1.1 * min(counts)  # (in a fixed order one engine would always follow XGrammar)
    firsts = Counter(o[0] for o in orders)
    assert max(firsts.values()) < 1.1 * min(firsts.values())
    two = engine_orders(["a", "b"], 50, seed=1)
    run2 = [e for o in two for e in o]
    assert all(x != y for x, y in pairwise(run2))  # (two engines simply alternate)


def test_workloads_engines_take_turns_and_a_failure_ends_only_that_engines_repeats(monkeypatch, capsys):
    import argparse

    from logitgate.benchmarks import workloads as wl

    engines: list[str] = []  # (the engine of every repeat run, in order)

    def fake_run_once(engine, tokenizer, task, timeout):
        engines.append(engine)
        if engine == "b" and engines.count("b") == 2:  # b's second repeat crashes
            return {"status": "crash", "error": "boom", "tbm_us": []}
        ttfm = {"a": 1000.0, "b": 2000.0, "c": 3000.0}[engine] + len(engines)
        return {"status": "pass", "ttfm_us": ttfm, "tbm_us": [10.0, 30.0], "steady_us": 5.0}

    monkeypatch.setattr(wl, "_run_once", fake_run_once)
    arithmetic = [w for w in wl.workloads() if w["kind"] == "ebnf"][:1]
    monkeypatch.setattr(wl, "workloads", lambda: arithmetic)
    args = argparse.Namespace(engines="a,b,c", repeats=4, timeout=1.0, tokenizer="qwen2", steady_repeats=3, seed=5)
    assert wl.run(args) == 0
    assert engines.count("a") == engines.count("c") == 4
    assert engines.count("b") == 2  # (no repeat after the crash)
    # the engines take turns: every round runs each engine (still passing) once, in a drawn order
    rounds = [engines[0:3], engines[3:6], engines[6:8], engines[8:10]]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds[:2]) and all(sorted(r) == ["a", "c"] for r in rounds[2:])
    assert len({tuple(r) for r in rounds[:2]}) + len({tuple(r) for r in rounds[2:]}) > 2  # (not one fixed order)
    out = capsys.readouterr()
    table = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[3:-1]]
             for line in out.out.splitlines() if line.startswith("| arithmetic")}
    assert table["a"][0] == "pass" and table["c"][0] == "pass" and table["b"][0] == "crash"
    assert float(table["a"][1]) == pytest.approx(1.0, abs=0.05)  # (median compile, ms)
    assert float(table["c"][1]) == pytest.approx(3.0, abs=0.05)
    assert float(table["a"][2]) == 20.0  # (mask mean over every step of every repeat)
    assert "boom" in out.err



def test_workloads_targets_compare_the_engines_round_by_round(monkeypatch, capsys):
    import argparse

    from logitgate.benchmarks import workloads as wl

    rounds: dict[str, int] = {}

    def fake_run_once(engine, tokenizer, task, timeout):
        k = rounds[engine] = rounds.get(engine, 0) + 1  # (this engine's repeat, 1-based: its round)
        if engine == "xgrammar" and k == 4:  # xgrammar fails its 4th round: no pair there
            return {"status": "crash", "error": "boom", "tbm_us": []}
        if engine == "logitgate":  # compile 1 ms, 3 in round 2; mask mean 10 µs, 40 in rounds 3 and 4
            return {"status": "pass", "ttfm_us": 3000.0 if k == 2 else 1000.0,
                    "tbm_us": [40.0, 40.0] if k >= 3 else [5.0, 15.0]}
        return {"status": "pass", "ttfm_us": 2000.0, "tbm_us": [20.0]}  # (llguidance and xgrammar alike)

    monkeypatch.setattr(wl, "_run_once", fake_run_once)
    arithmetic = [w for w in wl.workloads() if w["kind"] == "ebnf"][:1]
    monkeypatch.setattr(wl, "workloads", lambda: arithmetic)
    args = argparse.Namespace(engines="logitgate,llguidance,xgrammar", repeats=4, timeout=1.0, tokenizer="qwen2",
                              steady_repeats=0, seed=3)
    assert wl.run(args) == 0
    out = capsys.readouterr().out
    targets = {tuple(c.strip() for c in line.split("|")[2:4]): [c.strip() for c in line.split("|")[4:-1]]
               for line in out.split("Targets round by round")[1].splitlines() if line.startswith("| arithmetic")}
    # compile: 1/2 in rounds 1, 3, 4 and 3/2 in round 2 -- the median 0.5, met in 3 of 4
    assert targets[("compile ms", "llguidance")] == ["0.50", "0.50-1.50", "3 of 4"]
    # mask mean: 10/20 in rounds 1 and 2, 40/20 in round 3; round 4 has no xgrammar value to pair
    assert targets[("mask µs mean", "xgrammar")] == ["0.50", "0.50-2.00", "2 of 3"]


def test_workloads_without_logitgate_and_its_peers_print_no_targets(monkeypatch, capsys):
    import argparse

    from logitgate.benchmarks import workloads as wl

    monkeypatch.setattr(wl, "_run_once", lambda *a: {"status": "pass", "ttfm_us": 1000.0, "tbm_us": [1.0]})
    arithmetic = [w for w in wl.workloads() if w["kind"] == "ebnf"][:1]
    monkeypatch.setattr(wl, "workloads", lambda: arithmetic)
    args = argparse.Namespace(engines="logitgate", repeats=2, timeout=1.0, tokenizer="qwen2", steady_repeats=0, seed=0)
    assert wl.run(args) == 0
    assert "Targets" not in capsys.readouterr().out
