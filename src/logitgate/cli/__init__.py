"""The ``logitgate`` command line."""
