"""``logitgate bench workloads``: a small fixed suite, compile ms and mask µs per engine.

Each workload is a grammar plus valid texts; the texts are tokenized with the real Qwen2.5
BPE and traced token by token ("fill mask + accept", as in MaskBench). Compile time is
measured on a cold grammar cache (the tokenizer's own preprocessing is done beforehand): each
repeat is a fresh worker process, and the engines take turns, one repeat each per round.

    logitgate bench workloads --engines logitgate,llguidance,xgrammar --repeats 3
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from .isolation import EngineProcess
from .maskbench import engine_orders
from .stats import markdown_table, percentiles

ARITHMETIC_GBNF = r"""
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
"""

SQL_GBNF = r"""
root      ::= select ";"?
select    ::= "SELECT " columns " FROM " ident where? order? limit?
columns   ::= "*" | column (", " column)*
column    ::= ident | func "(" (ident | "*") ")" (" AS " ident)?
func      ::= "COUNT" | "SUM" | "AVG" | "MIN" | "MAX"
where     ::= " WHERE " cond ((" AND " | " OR ") cond)*
cond      ::= ident " " op " " value | ident " IS NULL" | "(" cond ")"
op        ::= "=" | "!=" | "<" | ">" | "<=" | ">=" | "LIKE"
value     ::= number | string
number    ::= "-"? [0-9]+ ("." [0-9]+)?
string    ::= "'" [^'\n]* "'"
order     ::= " ORDER BY " ident (" ASC" | " DESC")?
limit     ::= " LIMIT " [0-9]+
ident     ::= [a-zA-Z_] [a-zA-Z0-9_]*
"""

FLAT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
                   "email": {"type": "string", "format": "email"}, "active": {"type": "boolean"},
                   "score": {"type": "number"}},
    "required": ["name", "age", "active"],
    "additionalProperties": False,
}

NESTED_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "status": {"enum": ["draft", "review", "published", "archived"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 5},
        "author": {"type": "object", "properties": {"name": {"type": "string"},
                                                    "role": {"enum": ["admin", "editor", "viewer"]}},
                   "required": ["name", "role"], "additionalProperties": False},
        "sections": {"type": "array", "items": {
            "type": "object", "properties": {"title": {"type": "string"}, "words": {"type": "integer"}},
            "required": ["title", "words"], "additionalProperties": False}},
    },
    "required": ["id", "status", "tags", "author", "sections"],
    "additionalProperties": False,
}

RECURSIVE_SCHEMA = {
    "$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}},
    "$ref": "#/$defs/node",
}

EMAIL_DATE_REGEX = r"[a-z][a-z0-9._]{0,20}@[a-z]{2,10}\.(com|org|net) on \d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"


def _words(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "zen", "tor", "pha", "qui", "bel", "dra", "mon"]
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(syll) for _ in range(rng.randint(2, 4))))
    return sorted(out)


WORDS = _words(1000)


def workloads() -> list[dict]:
    """The fixed suite: name, kind, source and valid texts to trace."""
    nested_doc = {"id": "ABC-1234", "status": "review", "tags": ["alpha", "beta"],
                  "author": {"name": "Ada Lovelace", "role": "editor"},
                  "sections": [{"title": "Intro", "words": 250}, {"title": "Method", "words": 1200}]}
    tree = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4, "children": []}]}
    any_json = {"name": "Widget", "price": 12.5, "tags": ["a", "b"], "dims": {"w": 3, "h": 4.25},
                "note": "naïve café ✓", "ok": True, "none": None}
    return [
        {"name": "builtin JSON", "kind": "builtin_json", "source": None,
         "texts": [json.dumps(any_json, ensure_ascii=False), json.dumps(any_json, indent=2, ensure_ascii=False)]},
        {"name": "flat schema", "kind": "json_schema", "source": FLAT_SCHEMA,
         "texts": [json.dumps({"name": "Bob", "age": 42, "email": "bob@example.com", "active": True, "score": 3.5})]},
        {"name": "nested schema (enums, arrays)", "kind": "json_schema", "source": NESTED_SCHEMA,
         "texts": [json.dumps(nested_doc), json.dumps(nested_doc, indent=2)]},
        {"name": "recursive schema", "kind": "json_schema", "source": RECURSIVE_SCHEMA, "texts": [json.dumps(tree)]},
        {"name": "email/date regex", "kind": "regex", "source": EMAIL_DATE_REGEX,
         "texts": ["jane.doe_42@example.org on 2024-02-29", "x@ab.com on 1999-12-31"]},
        {"name": "1,000-word alternation", "kind": "regex", "source": "(" + "|".join(WORDS) + ")",
         "texts": [WORDS[17], WORDS[500], WORDS[999]]},
        {"name": "arithmetic GBNF", "kind": "ebnf", "source": ARITHMETIC_GBNF,
         "texts": ["(12+3.5)*-4/(7-2)", "1+2*3-(4/5)*((6))"]},
        {"name": "small SQL GBNF", "kind": "ebnf", "source": SQL_GBNF,
         "texts": ["SELECT name, COUNT(*) AS n FROM users WHERE age >= 18 AND city = 'Paris' ORDER BY name ASC "
                   "LIMIT 10;"]},
    ]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engines", default="logitgate,llguidance,xgrammar", help="comma-separated engines")
    p.add_argument("--repeats", type=int, default=3, help="cold compiles and traces per workload")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per workload per engine")
    p.add_argument("--tokenizer", default="qwen2", help="bundled tokenizer for the traces")
    p.add_argument("--seed", type=int, default=0, help="seed of the order the engines take turns in")
    p.add_argument("--steady-repeats", type=int, default=20,
                   help="after each cold trace, run the texts this many more times on the same grammar and "
                        "report the mean step then (every state visited before); 0 = off")


def run(args: argparse.Namespace) -> int:
    from ..tokenizer.bundled import bundled_encoding

    enc = bundled_encoding(args.tokenizer)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    rows = []
    target_rows = []
    for w in workloads():
        tests = [{"ids": enc.encode(t, disallowed_special=()), "valid": True} for t in w["texts"]]
        task = {"kind": w["kind"], "source": w["source"], "tests": tests, "steady_repeats": args.steady_repeats}
        runs = {e: _EngineRuns() for e in engines}
        # the engines take turns, a repeat each, in an order drawn per round: a slow spell of the
        # machine then falls on every engine alike, not on the one whose repeats it came during
        for order in engine_orders(engines, args.repeats, args.seed):
            for e in order:
                if runs[e].status == "pass":
                    runs[e].add(e, w["name"], _run_once(e, args.tokenizer, task, args.timeout))
        for e in engines:
            r = runs[e]
            mean = sum(r.tbm) / len(r.tbm) if r.tbm else float("nan")
            cms = _median(r.compile_ms)
            row = [w["name"], e, r.status, cms, mean, *percentiles(r.tbm, (50, 99))]
            rows.append([*row, _median(r.steady)] if args.steady_repeats > 0 else row)
            print(f"  {w['name']:<32} {e:<11} {r.status:<18} compile {cms:9.2f} ms  mask mean {mean:8.1f} µs"
                  + (f"  steady {_median(r.steady):7.1f} µs" if args.steady_repeats > 0 else ""), file=sys.stderr)
        target_rows += _target_rows(w["name"], runs)
    print(f"Fixed workloads, {args.tokenizer} tokens, engines single-threaded, {args.repeats} cold repeats"
          + (f"; steady: the mean step over {args.steady_repeats} more runs of the texts (median of the repeats)"
             if args.steady_repeats > 0 else "") + "\n")
    header = ["workload", "engine", "status", "compile ms (median)", "mask µs mean", "p50", "p99"]
    print(markdown_table([*header, "steady µs"] if args.steady_repeats > 0 else header, rows))
    if target_rows:
        print("\nTargets round by round: logitgate's value over the peer's in each round both passed (they ran "
              "in it one after the other), the median and range of those ratios, and the rounds at or under 1\n")
        print(markdown_table(["workload", "measure", "vs", "ratio (median)", "range", "rounds met"], target_rows))
    return 0


#: the fixed suite's targets (issue 4): logitgate's compile ms at most llguidance's, its mask mean
#: (first traces) at most xgrammar's -- as (label, ``_EngineRuns`` per-round list, peer)
TARGETS = (("compile ms", "compile_ms", "llguidance"), ("mask µs mean", "tbm_means", "xgrammar"))


def _target_rows(workload: str, runs: dict[str, _EngineRuns]) -> list[list]:
    """Per target whose engines both ran: the per-round ratios of logitgate's value to the peer's.

    The engines take turns round by round, so a slow spell of the machine falls on both values of a
    round alike; a ratio per round shows how often the target held, where the medians of two
    columns (each ±15 % from run to run here) hide it. Rounds pair by index: an engine's repeats
    stop at its first failure, so its first ``k`` results are those of the first ``k`` rounds.
    """
    ours = runs.get("logitgate")
    out: list[list] = []
    for label, attr, peer in TARGETS:
        theirs = runs.get(peer)
        if ours is None or theirs is None:
            continue
        pairs = list(zip(getattr(ours, attr), getattr(theirs, attr)))
        ratios = sorted(a / b for a, b in pairs if b > 0)
        if not ratios:
            continue
        met = sum(x <= 1.0 for x in ratios)
        out.append([workload, label, peer, f"{_median(ratios):.2f}", f"{ratios[0]:.2f}-{ratios[-1]:.2f}",
                    f"{met} of {len(ratios)}"])
    return out


def _run_once(engine: str, tokenizer: str, task: dict, timeout: float) -> dict:
    """One cold repeat: a fresh worker process (a cold grammar cache), one task, then closed."""
    proc = EngineProcess(engine, tokenizer)
    try:
        return proc.run(task, timeout)
    finally:
        proc.close()


class _EngineRuns:
    """One engine's repeats of one workload: compile ms, the traces' step µs, the steady means,
    and the status (the first that was not ``pass`` ends its repeats)."""

    def __init__(self) -> None:
        self.compile_ms: list[float] = []
        self.tbm: list[float] = []
        self.tbm_means: list[float] = []  # (each repeat's mean step: its first traces)
        self.steady: list[float] = []
        self.status = "pass"

    def add(self, engine: str, workload: str, r: dict) -> None:
        if r["status"] != "pass":
            self.status = r["status"]
            print(f"{workload} / {engine}: {r['status']} {r.get('error', '')[:300]}", file=sys.stderr)
            return
        self.compile_ms.append(r["ttfm_us"] / 1000)
        self.tbm.extend(r["tbm_us"])
        if r["tbm_us"]:
            self.tbm_means.append(sum(r["tbm_us"]) / len(r["tbm_us"]))
        if "steady_us" in r:
            self.steady.append(r["steady_us"])


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if xs else float("nan")
