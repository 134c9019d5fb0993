"""``python -m logitgate``: the command line, as the ``logitgate`` script runs it."""

from __future__ import annotations

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
