"""Benchmarks behind ``logitgate bench``. Each module defines add_arguments(parser) and run(args) -> int."""
