"""``logitgate bench schema-suite``: the JSON-Schema-Test-Suite through the JSON Schema front-end.

Every case's schema is converted; a case *passes* when every valid instance is accepted and
every invalid one rejected (compact and default ``json.dumps`` spacing; the grammar fixes the
declared key order, so a valid instance needs *some* key order that is accepted, and an
invalid one must have none), is *refused* when conversion raises a clear error, and *fails*
otherwise. Decisions use the reference recognizer. Prints per-file counts.

    logitgate bench schema-suite --suite ../shared/data/JSON-Schema-Test-Suite/tests/draft2020-12

A folder of an older draft (``draft2019-09``, ``draft7``, ``draft6``, ``draft4``) runs its cases
under that draft's ``$schema``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import LimitExceededError, SchemaError, UnsupportedFeatureError
from ..grammar.json_schema import json_schema_grammar
from ..grammar.reference import accepts, prefix_ok
from .stats import markdown_table

__all__ = ["DRAFT_FOLDERS", "add_arguments", "find_accepted", "run", "run_case", "spellings", "suite_cases"]

DEFAULT_SUITE = Path("..") / "shared" / "data" / "JSON-Schema-Test-Suite" / "tests" / "draft2020-12"


#: the ``$schema`` each older draft's folder of the suite is run under: most of its cases leave it
#: out (the folder names the draft), and a schema without one is read as draft 2020-12
DRAFT_FOLDERS = {"draft2019-09": "https://json-schema.org/draft/2019-09/schema",
                 "draft7": "http://json-schema.org/draft-07/schema#",
                 "draft6": "http://json-schema.org/draft-06/schema#",
                 "draft4": "http://json-schema.org/draft-04/schema#"}


def suite_cases(path: Path) -> list[tuple[dict, dict]]:
    """The cases of one suite file, each with the options it runs under: the draft of the file's
    folder (:data:`DRAFT_FOLDERS`) as the ``$schema`` of a schema that names none, and
    ``strict_format=False`` for ``format.json`` ('format' is an annotation unless asked for, which
    is what that file tests)."""
    uri = DRAFT_FOLDERS.get(path.parent.name)
    opts = {"strict_format": False} if path.name == "format.json" else {}
    out = []
    for case in json.loads(path.read_text(encoding="utf-8")):
        schema = case["schema"]
        if uri is not None and isinstance(schema, dict) and "$schema" not in schema:
            case = {**case, "schema": {"$schema": uri, **schema}}
        out.append((case, opts))
    return out


def spellings(v) -> set[str]:
    return {json.dumps(v), json.dumps(v, separators=(",", ":"))}


def run_case(case: dict, **opts) -> tuple[str, list[str]]:
    """('refused' | 'passed' | 'failed', details).

    A valid instance must have *some* key order the grammar accepts (the grammar fixes
    declared order); an invalid one must have none, in compact and in default spacing.
    """
    try:
        g = json_schema_grammar(case["schema"], **opts)
    except (SchemaError, UnsupportedFeatureError, LimitExceededError) as exc:
        return "refused", [str(exc)]
    bad = []
    for t in case["tests"]:
        for compact in (True, False):
            s = find_accepted(g, t["data"], compact)
            if t["valid"] and s is None:
                bad.append(f"valid rejected: {json.dumps(t['data'])[:100]} ({t['description']})")
            if not t["valid"] and s is not None:
                bad.append(f"invalid accepted: {s[:100]} ({t['description']})")
    return ("failed" if bad else "passed"), bad

def find_accepted(g, v, compact: bool, max_tries: int = 64) -> str | None:
    """A serialization of ``v`` (keys in any order) that ``g`` accepts, or None.

    Object keys are chosen depth-first, pruned with the reference recognizer's viable-prefix
    test, so the grammar's property order need not be guessed.
    """
    item_sep, kv_sep = (",", ":") if compact else (", ", ": ")
    tries = [0]

    def ok(p: str) -> bool:
        return prefix_ok(g, p.encode())

    def gen(x, prefix: str):
        if isinstance(x, dict):
            def rec(p: str, remaining: list, first: bool):
                if not remaining:
                    yield p + "}"
                    return
                for k in remaining:
                    q = p + ("" if first else item_sep) + json.dumps(k) + kv_sep
                    if not ok(q):
                        continue
                    for q2 in gen(x[k], q):
                        if ok(q2):
                            yield from rec(q2, [r for r in remaining if r != k], False)

            yield from rec(prefix + "{", list(x), True)
        elif isinstance(x, list):
            def rec_l(p: str, i: int):
                if i == len(x):
                    yield p + "]"
                    return
                for q in gen(x[i], p + ("" if i == 0 else item_sep)):
                    if ok(q):
                        yield from rec_l(q, i + 1)

            yield from rec_l(prefix + "[", 0)
        else:
            yield prefix + json.dumps(x)

    for s in gen(v, ""):
        tries[0] += 1
        if accepts(g, s.encode()):
            return s
        if tries[0] >= max_tries:
            return None
    return None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default=str(DEFAULT_SUITE), help="folder of test-suite JSON files")
    p.add_argument("--show", action="store_true", help="print failed and refused cases with their reasons")


def run(args: argparse.Namespace) -> int:
    files = sorted(Path(args.suite).glob("*.json"))
    if not files:
        raise SystemExit(f"no test-suite files in {args.suite}")
    rows, total = [], {"passed": 0, "failed": 0, "refused": 0}
    for path in files:
        counts = {"passed": 0, "failed": 0, "refused": 0}
        for case, opts in suite_cases(path):
            status, info = run_case(case, **opts)
            counts[status] += 1
            if args.show and status != "passed":
                print(f"{status}: {path.name}: {case['description']}: {info[:2]}")
        rows.append([path.name, counts["passed"], counts["failed"], counts["refused"]])
        for k in total:
            total[k] += counts[k]
    rows.append(["TOTAL", total["passed"], total["failed"], total["refused"]])
    print(markdown_table(["file", "passed", "failed", "refused"], rows))
    return 1 if total["failed"] else 0
