"""Grammars: one IR (:mod:`.ir`) fed by EBNF/GBNF, regex, JSON Schema and choices front-ends,
plus a slow reference recognizer (:mod:`.reference`) used as the engine's test oracle."""

from .ir import Grammar

__all__ = ["Grammar"]
