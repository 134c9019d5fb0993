"""``logitgate bench SUITE``: benchmarks (never timed unit tests)."""

from __future__ import annotations

import argparse
import importlib

# suite -> (module under logitgate.benchmarks, help)
SUITES: dict[str, tuple[str, str]] = {
    "bitmask": ("bitmask", "apply_token_bitmask_inplace vs naive masked fill and xgrammar"),
    "workloads": ("workloads", "fixed suite (JSON, schemas, regex, alternation, GBNF): compile ms and mask µs"),
    "logits": ("logits", "logits kernels (bias, penalties, mask, softmax) vs naive torch and a plain copy; pipeline overhead"),
    "schema-suite": ("schema_suite", "JSON-Schema-Test-Suite cases: passed / failed / refused per file"),
    "tree-decode": ("tree_decode", "tree-decode prefix maps: 1M-prefix config load time, memory, per-step cost"),
    "maskbench": ("maskbench", "the MaskBench protocol on JSON schemas, engines side by side"),
    "maskbench-reference": ("maskbench_reference",
                            "MaskBench schemas: share that converts; test instances decided by the reference recognizer"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="suite", metavar="SUITE", required=True)
    for name, (module, help_text) in SUITES.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(f"logitgate.benchmarks.{module}").add_arguments(p)
        p.set_defaults(_suite_module=f"logitgate.benchmarks.{module}")


def run(args: argparse.Namespace) -> int:
    return int(importlib.import_module(args._suite_module).run(args) or 0)
