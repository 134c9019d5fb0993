"""Options the commands that read a JSON Schema share: ``--format NAME=PATTERN``."""

from __future__ import annotations

import argparse

__all__ = ["add_format_argument", "formats_of"]


def _format_pair(text: str) -> tuple[str, str]:
    name, sep, pattern = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=PATTERN, got {text!r}")
    return name, pattern


def add_format_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="formats", action="append", type=_format_pair, default=[],
                   metavar="NAME=PATTERN",
                   help="a format of your own: strings of format NAME match PATTERN whole (repeatable; "
                        "pydantic writes e.g. uuid4, password, ipvanyaddress)")


def formats_of(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``formats`` option of :func:`logitgate.grammar.json_schema.json_schema_grammar`."""
    return dict(args.formats) or None
