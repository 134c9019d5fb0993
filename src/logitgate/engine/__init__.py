"""The engine: automata, grammar compilation against a tokenizer, mask computation and matchers."""
