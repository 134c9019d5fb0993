"""``GrammarCompiler.warm_up``: start-up work that changes no result and caches nothing a user asked for."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine_cases import small_vocab
from logitgate import GrammarCompiler, GrammarMatcher, allocate_token_bitmask

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["name"]}
TEXT = '{"name": "Ab", "n": 12}'


@pytest.fixture(scope="module")
def info():
    return small_vocab([TEXT, '{"name0": "Ab c", "count0": 12, "score0": -1500.0}', "(n1+n1)-n1", "abc2@x.com"])


def _rows(compiled, info, pieces) -> list[np.ndarray]:
    """The mask before each piece and after the last, walking a new matcher through ``pieces``."""
    m = GrammarMatcher(compiled)
    bm = allocate_token_bitmask(1, info.vocab_size)
    out = []
    for piece in pieces:
        m.fill_next_token_bitmask(bm)
        out.append(bm[0].copy())
        assert m.accept_string(piece)
    m.fill_next_token_bitmask(bm)
    return [*out, bm[0].copy()]


def _masks(compiler: GrammarCompiler, info) -> list[np.ndarray]:
    return _rows(compiler.compile_json_schema(SCHEMA), info, TEXT)


def test_warm_up_walks_every_text_to_its_end(info) -> None:
    """Each round compiles three grammars and walks a text of each to an accepting state (were a
    text refused, the warm-up would stop short and warm less than it says)."""
    from logitgate.engine.compiler import WARM_UP_ROUNDS

    compiler = GrammarCompiler(info)
    assert compiler._warm_paths() == 3 * WARM_UP_ROUNDS  # (the texts change with the round)
    assert compiler.warm_up() is compiler


def test_warm_up_leaves_the_any_json_value_masks_in_the_shared_cache(info,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm-up walks the any-JSON-value grammar through its texts to their ends; a builtin JSON
    grammar compiled afterwards then finds the masks of its states in the shared cache (its first
    masks computed for it: none), and they are the masks a cold compiler computes."""
    import logitgate.engine.compiler as compiler_module

    pieces = ('{"', "k", '": [', "1", ", ", "true", "]}")
    warm = GrammarCompiler(info)
    assert warm._warm_any_json()
    computed = []
    real = compiler_module.compute_state_mask
    monkeypatch.setattr(compiler_module, "compute_state_mask", lambda *a: computed.append(1) or real(*a))
    warm_rows = _rows(warm.compile_builtin_json(), info, pieces)
    assert not computed
    cold_rows = _rows(GrammarCompiler(info).compile_builtin_json(), info, pieces)
    assert computed  # (the cold compiler computed them)
    for a, b in zip(warm_rows, cold_rows, strict=True):
        assert np.array_equal(a, b)


def test_warm_up_leaves_the_format_masks_in_the_shared_cache(info, monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm-up walks a typical value of every format to its end; a user's schema with a format
    property then finds the masks of that value's states in the shared cache (the states it
    computes are only its own root's), and they are the masks a cold compiler computes."""
    import logitgate.engine.compiler as compiler_module
    from logitgate.grammar.json_schema.formats import FORMAT_EXAMPLES, FORMATS

    assert set(FORMAT_EXAMPLES) == set(FORMATS)
    schema = {"type": "object", "properties": {"contact": {"type": "string", "format": "email"}},
              "additionalProperties": False}
    pieces = ('{"', "contact", '": "', "jane", ".", "doe", "@", "example", ".", "com", '"}')
    warm = GrammarCompiler(info)
    assert warm._warm_formats()
    computed: list[tuple | None] = []
    real = compiler_module.compute_state_mask
    monkeypatch.setattr(compiler_module, "compute_state_mask",
                        lambda state, rtn, *a: computed.append(rtn.state_key(state)) or real(state, rtn, *a))
    warm_rows = _rows(warm.compile_json_schema(schema), info, pieces)
    assert computed and all(key is None for key in computed)  # (the root's own states only)
    computed.clear()
    cold_rows = _rows(GrammarCompiler(info).compile_json_schema(schema), info, pieces)
    assert sum(key is not None for key in computed) >= 4  # (the cold compiler computed the email's)
    for a, b in zip(warm_rows, cold_rows, strict=True):
        assert np.array_equal(a, b)


def test_format_examples_are_values_of_their_formats(info) -> None:
    """Every warm-up example is a whole value of its format (a refused one would stop the walk
    short: `_warm_formats` returns False)."""
    from logitgate.grammar.json_schema.formats import FORMAT_EXAMPLES

    compiler = GrammarCompiler(info)
    for fmt, examples in FORMAT_EXAMPLES.items():
        compiled = compiler.compile_json_schema({"type": "string", "format": fmt})
        for text in examples:
            m = GrammarMatcher(compiled)
            assert m.accept_string(json.dumps(text)) and m.can_terminate(), (fmt, text)
        assert not GrammarMatcher(compiled).accept_string('"not a ' + fmt + ' value!"'), fmt
    assert compiler._warm_formats()


def test_warm_up_caches_no_grammar_and_changes_no_mask(info) -> None:
    cold, warm = GrammarCompiler(info), GrammarCompiler(info).warm_up()
    assert not warm._by_input  # (nothing a user asked for is cached)
    for a, b in zip(_masks(cold, info), _masks(warm, info), strict=True):
        assert np.array_equal(a, b)


def test_warm_up_works_under_limits_set_low_and_leaves_them_in_force(info) -> None:
    """Warm-up compiles its own fixed grammars under default limits; a compiler whose limits are set
    low against its users' input still warms up, and still refuses what exceeds them."""
    from logitgate.engine.rtn import CompileLimits
    from logitgate.errors import LimitExceededError

    compiler = GrammarCompiler(info, limits=CompileLimits(max_dfa_states=40)).warm_up()
    assert compiler.compile_json_schema({"type": "integer"}) is not None
    with pytest.raises(LimitExceededError):
        compiler.compile_json_schema(SCHEMA)


#: run in a fresh interpreter by the test below: warm up a compiler, note the numba kernels loaded
#: and the modules imported, then serve requests of every kind; prints each kernel a request loaded
#: (or compiled) again, and each module it imported
_REQUESTS = r'''
import importlib, json, pkgutil, sys

sys.path.insert(0, sys.argv[1])
from numba.core.registry import CPUDispatcher

import logitgate
from engine_cases import small_vocab
from logitgate import GrammarCompiler, GrammarMatcher, allocate_token_bitmask
from logitgate.engine.batch import BatchGrammarMatcher

kernels = {}
for mod in pkgutil.walk_packages(logitgate.__path__, "logitgate."):
    if mod.name.split(".")[1] in ("engine", "grammar", "tokenizer"):
        for name, f in vars(importlib.import_module(mod.name)).items():
            if isinstance(f, CPUDispatcher):
                kernels[f"{f.py_func.__module__}.{f.__name__}"] = f
schema = {"type": "object", "$defs": {"t": {"type": "object", "properties": {"k": {"$ref": "#/$defs/t"}}}},
          "properties": {"s": {"type": ["string", "null"], "maxLength": 12}, "e": {"enum": ["x", "y", 3]},
                         "p": {"type": "string", "pattern": "^[a-f]{2,4}$"}, "o": {"anyOf": [
                             {"type": "integer", "minimum": -5}, {"type": "boolean"}]},
                         "a": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3},
                         "t": {"$ref": "#/$defs/t"}, "n": {"type": "number", "multipleOf": 0.25, "minimum": 1},
                         "m": {"type": "string", "format": "email", "maxLength": 1024},  # (a large intersection)
                         "l": {"type": "string", "minLength": 2, "maxLength": 65535}},  # (counted in chunks)
          "required": ["s"]}
values = [{"s": None, "e": "y", "p": "abc", "o": 3, "a": [1.5, -2], "t": {"k": {}}, "n": 2.75, "l": "xyz"},
          {"s": "hello", "o": True}]
texts = [json.dumps(v) for v in values] + [json.dumps(values[0], indent=2)]
info = small_vocab(texts + ["ab@cd.org", "aab", "(1+2)*3", "[[[1]]]"])
compiler = GrammarCompiler(info, max_threads=2).warm_up()
loaded = {name: len(f.signatures) for name, f in kernels.items()}
modules = set(sys.modules)
work = [(compiler.compile_json_schema(schema), texts), (compiler.compile_regex(r"[a-z]+@[a-z]+\.(com|org)"),
        ["ab@cd.org"]), (compiler.compile_grammar('root ::= "a"* "ab"? ("a" | "b")*'), ["aab"]),
        (compiler.compile_grammar('root ::= t (("+" | "*") t)*\nt ::= [0-9]+ | "(" root ")"'), ["(1+2)*3"]),
        (compiler.compile_builtin_json(), ["[" * 1100 + "1" + "]" * 1100]),
        (compiler.compile_choices(["alpha", "beta"]), ["beta"])]
bitmask = allocate_token_bitmask(4, info.vocab_size)
for compiled, cases in work:
    for text in cases:
        m = GrammarMatcher(compiled, max_rollback_tokens=4)
        for i in range(0, len(text), 2):
            piece = text[i:i + 2]
            m.fill_next_token_bitmask(bitmask, 1)
            m.get_next_token_ids()
            tid = info.token_id(piece)
            assert m.accept_token(tid) if tid is not None and i % 4 else m.accept_string(piece), (text, i)
            if i % 6 == 0:
                probe = m.fork()
                probe.find_jump_forward_string()
                probe.validate_tokens([tid] if tid is not None else [])
                probe.rollback(1)
        assert m.can_terminate() and m.accept_token(info.stop_token_ids[0]) and m.is_terminated()
        BatchGrammarMatcher(2).batch_fill_next_token_bitmask([GrammarMatcher(compiled) for _ in range(4)], bitmask)
        m.reset()
for name, f in kernels.items():
    if len(f.signatures) != loaded[name]:
        print(name, f.signatures[-1])
for name in sorted(set(sys.modules) - modules):
    print("import", name)
'''


def test_after_warm_up_no_request_loads_a_kernel_or_imports_a_module() -> None:
    """In a fresh process, requests of every kind after :meth:`GrammarCompiler.warm_up` (JSON
    Schema with a number automaton among its values, regex, EBNF with several stacks, builtin
    JSON nested past the frame pool's first capacity, choices; masks, tokens, strings, forks,
    jump-forward, validation, rollback, batch fill) find every numba kernel they call loaded, for
    the argument types they pass, and every module they use imported. A kernel warm-up left alone
    was loaded by the request that first needed it (~3 ms from numba's cache, a compile of most of
    a second without it), as was a second type: a counted string's layer in Fortran order (0.6 s),
    a jump-forward byte writable where a token's bytes are read-only, the product of a number's
    atoms (0.8 s), the class merge of an intersection too large to minimize (25 ms)."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", _REQUESTS, str(Path(__file__).parent)], capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "", f"kernels loaded and modules imported by requests after warm-up:\n{done.stdout}"
