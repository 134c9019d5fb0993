"""The directly built automaton of "JSON string content other than these names" (extra object
keys) against the automaton of its plain expansion, and the IR's Special nodes around it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logitgate.engine.automata import minimize, standalone_dfa, trim
from logitgate.errors import GrammarError, LimitExceededError
from logitgate.grammar.ir import Grammar, Special, SpecialKind, normalize, register_special, seq
from logitgate.grammar.json_schema.excluded import KIND, string_content_except
from logitgate.grammar.json_schema.strings import any_string_content
from logitgate.grammar.reference import accepts

# characters with every kind of spelling: plain ASCII, hex letters in their \u escape (case
# variants), short escapes, controls, 2-, 3- and 4-byte UTF-8 (surrogate pairs), a lone surrogate
ALPHABET = "abnz_-\"\\/\b\n\x01é€😀\U0010ffff\ud800"


def _same_language(a, b) -> None:
    ma, mb = minimize(a), minimize(b)
    assert ma.num_states == mb.num_states
    assert np.array_equal(ma.byte_class, mb.byte_class)
    assert np.array_equal(ma.trans, mb.trans)
    assert np.array_equal(ma.final, mb.final)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=5), max_size=6))
def test_direct_automaton_has_the_language_of_its_expansion(names):
    e = string_content_except(names)
    if not names:
        assert e == any_string_content()
        return
    direct = standalone_dfa(e, None, 100_000)
    assert direct.as_built
    assert trim(direct).num_states == direct.num_states  # trimmed by construction
    _same_language(direct, standalone_dfa(e.expand(), None, 100_000))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abfAFnz09_-\"\\/\b\n\x01\x7f ", max_size=6), min_size=1, max_size=6))
def test_direct_automaton_of_ascii_names_has_the_language_of_its_expansion(names):
    """ASCII names take a path of their own (spellings made once per process, one kernel call)."""
    e = string_content_except(names)
    direct = standalone_dfa(e, None, 100_000)
    assert trim(direct).num_states == direct.num_states
    _same_language(direct, standalone_dfa(e.expand(), None, 100_000))


def test_names_are_excluded_in_every_spelling_and_nothing_else_is():
    names = ["name", "na", "\u00e9t\u00e9", "a\"b", "\U0001f600"]
    g = Grammar({"root": string_content_except(names)})
    for n in names:
        for text in (json.dumps(n)[1:-1], json.dumps(n, ensure_ascii=False)[1:-1]):
            assert not accepts(g, text.encode()), text
    assert not accepts(g, b"\\u006Eame") and not accepts(g, b"n\\u0061")
    for other in ("", "n", "nam", "names", "\u00e9t", "a\\\"bc", "\\ud83d\\ude01"):
        assert accepts(g, other.encode()), other
    assert not accepts(g, b"\\ud83d")  # a lone high surrogate is no string content at all


def test_the_engine_matches_the_reference_on_a_schema_with_extra_keys():
    from logitgate import GrammarCompiler, GrammarMatcher, TokenizerInfo

    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "idx": {"type": "string"}}}
    vocab = [bytes([b]) for b in range(256)] + [b"\"id\"", b"\"idx\"", b"\\u0069", b"</s>"]
    tok = TokenizerInfo.from_vocab(vocab, eos_token_id=len(vocab) - 1, special_token_ids=[len(vocab) - 1])
    cg = GrammarCompiler(tok).compile_json_schema(schema)
    g = Grammar.from_json_schema(schema)
    for doc in (b'{"id": 1, "x": 2}', b'{"i": true}', b'{"idxx": null}', b'{"\\u0069d": 1}', b'{"id": 1, "id": 2}',
                b'{"\\u0069dx": "s"}', b'{"\\u0069dx": 1}', b'{"idx": 1}'):
        m = GrammarMatcher(cg)
        ok = all(m.accept_token(b) for b in doc) and m.can_terminate()
        assert ok == accepts(g, doc), doc


def test_special_nodes_in_the_ir():
    e = string_content_except(["b", "a", "b"])
    assert e == Special(KIND, ("a", "b")) and normalize(e) is e
    assert e.nullable and not string_content_except(["", "x"]).nullable  # "" is allowed unless a name
    g = Grammar({"root": seq(e, e)})
    assert "~" in g.to_ebnf()  # printed as its expansion
    assert Grammar.from_ebnf(g.to_ebnf()) == Grammar({"root": seq(e.expand(), e.expand())})
    with pytest.raises(GrammarError, match="unknown special kind"):
        Special("no such kind", ())
    with pytest.raises(GrammarError, match="registered already"):
        register_special(KIND, SpecialKind(expand=lambda a: e, nullable=lambda a: False))


def test_the_direct_automaton_respects_the_state_limit():
    with pytest.raises(LimitExceededError):
        standalone_dfa(string_content_except([f"property_{i:04d}" for i in range(200)]), None, 400)
    with pytest.raises(LimitExceededError):  # the same past the ASCII path
        standalone_dfa(string_content_except([f"propri\u00e9t\u00e9_{i:04d}" for i in range(200)]), None, 400)
