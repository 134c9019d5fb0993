"""Entry point of the ``logitgate`` command.

Sub-commands live in their own modules and are imported only when chosen, so
``logitgate --help`` is fast and needs no optional dependency.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# sub-command -> (module, one-line help). Each module defines add_arguments(parser) and run(args) -> int.
_COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("logitgate.cli.generate", "generate constrained text with a small real model (SmolLM2-135M)"),
    "grammar": ("logitgate.cli.grammar", "print the EBNF a JSON schema / regex / grammar compiles to"),
    "check": ("logitgate.cli.check", "report which JSON Schema keywords are enforced, ignored or refused"),
    "bench": ("logitgate.cli.bench", "run benchmarks (bitmask kernels, MaskBench, fixed workloads)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="logitgate",
        description="Constrained decoding and logits processing for LLMs.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from logitgate import __version__

        print(__version__)
        return 0
    if not args.command:
        parser.print_help()
        return 0
    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
