"""``logitgate grammar``: print the EBNF a JSON schema (or regex, or grammar file) compiles to.

    logitgate grammar examples/cat.schema.json
    logitgate grammar --regex '\\d{3}-\\d{4}'
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .schema_options import add_format_argument, formats_of

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("schema", nargs="?", help="JSON Schema file ('-' reads stdin)")
    p.add_argument("--regex", help="a regular expression instead of a schema")
    p.add_argument("--ebnf", metavar="FILE", help="a GBNF/EBNF file instead of a schema (normalized and reprinted)")
    p.add_argument("--whitespace", choices=("flexible", "compact"), default="flexible",
                   help="JSON whitespace between tokens (default flexible)")
    p.add_argument("--ignore", default="", help="comma-separated schema keywords to ignore instead of refusing")
    add_format_argument(p)


def run(args: argparse.Namespace) -> int:
    from ..errors import GrammarError
    from ..grammar.ir import Grammar

    try:
        if args.regex is not None:
            g = Grammar.from_regex(args.regex)
        elif args.ebnf:
            g = Grammar.from_ebnf(Path(args.ebnf).read_text())
        elif args.schema:
            text = sys.stdin.read() if args.schema == "-" else Path(args.schema).read_text()
            ignore = tuple(k for k in args.ignore.split(",") if k)
            g = Grammar.from_json_schema(json.loads(text), whitespace=args.whitespace, ignore_keywords=ignore,
                                         formats=formats_of(args))
        else:
            print("logitgate grammar: give a schema file, --regex or --ebnf", file=sys.stderr)
            return 2
    except (GrammarError, json.JSONDecodeError, OSError) as e:
        print(f"logitgate grammar: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(g.to_ebnf())
    return 0
