"""``logitgate bench maskbench-reference``: MaskBench schemas through the JSON Schema front-end.

For every MaskBench file: does the schema convert (or is it refused, and for which
keyword)? For the converted ones, the reference recognizer decides each test instance,
with a time limit per instance: a valid instance must have *some* key order the grammar
accepts (the grammar fixes the declared order), an invalid one must have none — the
semantics of ``logitgate bench schema-suite``. Exactness, not speed, is measured here;
instances the pure-Python recognizer cannot decide in time (or within Python's recursion
limit, for deeply nested documents) are counted apart.

    logitgate bench maskbench-reference --sample 500 --instance-timeout 5
"""

from __future__ import annotations

import argparse
import json
import signal
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from ..errors import LimitExceededError, SchemaError, UnsupportedFeatureError
from ..grammar.json_schema import json_schema_grammar
from .maskbench import add_file_arguments, progress, select_files
from .schema_suite import find_accepted
from .stats import markdown_table

__all__ = ["add_arguments", "run"]


class _Timeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    """Raise :class:`_Timeout` after ``seconds`` (SIGALRM; no limit where it does not exist)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_file_arguments(p, "random sample of N files for the instance checks (all files are converted)")
    p.add_argument("--instance-timeout", type=float, default=5.0, help="seconds per instance (0 = none)")
    p.add_argument("--show", action="store_true", help="list every wrong decision and refusal reason")


def _refusal_reason(exc: Exception) -> str:
    kw = getattr(exc, "keyword", None)
    if kw:
        return str(kw)
    return type(exc).__name__


def run(args: argparse.Namespace) -> int:
    sample = args.sample
    args.sample = None
    all_paths = select_files(args)
    args.sample = sample
    checked = set(select_files(args)) if sample is not None else set(all_paths)
    refused: Counter[str] = Counter()
    counts = Counter()
    wrong: list[str] = []
    for path in progress(all_paths, len(all_paths), "maskbench-reference"):
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        try:
            g = json_schema_grammar(d["schema"])
        except (SchemaError, UnsupportedFeatureError, LimitExceededError) as exc:
            refused[_refusal_reason(exc)] += 1
            if args.show:
                print(f"refused {Path(path).name}: {exc}")
            continue
        counts["converted"] += 1
        if path not in checked:
            continue
        counts["checked files"] += 1
        for t in d.get("tests", []):
            kind = "valid" if t["valid"] else "invalid"
            try:
                with _time_limit(args.instance_timeout):
                    s = find_accepted(g, t["data"], compact=False)
            except (_Timeout, RecursionError):
                counts[f"{kind} undecided"] += 1
                continue
            right = (s is not None) == t["valid"]
            counts[f"{kind} {'right' if right else 'wrong'}"] += 1
            if not right:
                wrong.append(f"{Path(path).name}: {kind} instance {'rejected' if t['valid'] else 'accepted'}")
    total = len(all_paths)
    print(f"MaskBench through the JSON Schema front-end: {total} files, {counts['converted']} convert "
          f"({100.0 * counts['converted'] / max(total, 1):.1f}%)\n")
    print(markdown_table(["refused for", "files"], refused.most_common(15)))
    print(f"\nReference recognizer on {counts['checked files']} converted files "
          f"(time limit {args.instance_timeout:g} s per instance; any key order):\n")
    rows = [[kind, counts[f"{kind} right"], counts[f"{kind} wrong"], counts[f"{kind} undecided"]]
            for kind in ("valid", "invalid")]
    print(markdown_table(["instances", "decided right", "decided wrong", "undecided (time or recursion limit)"], rows))
    if wrong:
        print("\nwrong decisions:")
        for w in wrong if args.show else wrong[:20]:
            print(f"  {w}")
    return 0
