"""The runnable examples in docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import logitgate

# modules whose examples need an optional package, a GPU or a subprocess
_SKIP = ("logitgate.contrib.", "logitgate.kernels.triton", "logitgate.benchmarks.", "logitgate.cli.")
MODULES = sorted(m.name for m in pkgutil.walk_packages(logitgate.__path__, "logitgate.")
                 if not m.name.startswith(_SKIP))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
