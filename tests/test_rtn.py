"""Rule digests of the compiled RTN: what lets grammars share per-state masks.

A digest must depend only on behaviour (the rule's minimal DFA and what its calls do), not on
rule names, so equal rules in different grammars share their masks -- and masks reused that way
must be the masks the grammar would have computed itself.
"""

from __future__ import annotations

import numpy as np

import logitgate as lg
from engine_cases import small_vocab
from logitgate.engine.rtn import compile_rtn
from logitgate.grammar.ir import Grammar, Ref, byteset, lit, repeat, seq

_CHARS = byteset((0x20, 0x21), (0x23, 0x7E))  # printable ASCII but '"': wide enough to be "lexeme-like"
_BODY = seq(lit('"'), repeat(_CHARS, 0, None), lit('"'))


def _pair(name: str, body=_BODY, key: str = "k") -> Grammar:
    # referenced twice, so the rule is called (has its own DFA) rather than inlined
    return Grammar({"root": seq(lit("{"), Ref(name), lit(f"{key}:"), Ref(name), lit("}")), name: body})


def _digest(g: Grammar, rule: str) -> str:
    rtn = compile_rtn(g)
    return rtn.rule_hash[rtn.rule_names.index(rule)]


def test_digests_ignore_rule_names() -> None:
    assert _digest(_pair("text"), "text") == _digest(_pair("s17"), "s17")
    assert _digest(_pair("text"), "root") == _digest(_pair("s17"), "root")  # calls are labelled by digests


def test_digests_change_with_behaviour() -> None:
    other_body = seq(lit('"'), repeat(_CHARS, 0, 30), lit('"'))
    assert _digest(_pair("text"), "text") != _digest(_pair("text", other_body), "text")
    # same callee, different caller
    assert _digest(_pair("text"), "root") != _digest(_pair("text", key="j"), "root")


def test_recursive_rules_get_digests_of_their_cycle() -> None:
    def nested(open_: str) -> Grammar:
        return Grammar({"root": Ref("v"), "v": seq(lit(open_), repeat(Ref("v"), 0, None), lit("]"))})

    assert _digest(nested("["), "v") == _digest(nested("["), "v")
    assert _digest(nested("["), "v") != _digest(nested("("), "v")


def _masks_along(cg: lg.CompiledGrammar, text: bytes) -> list[np.ndarray]:
    m = lg.GrammarMatcher(cg)
    out = [m.get_next_token_ids()]
    for i in range(len(text)):
        assert m.accept_string(text[i:i + 1])
        out.append(m.get_next_token_ids())
    return out


def test_masks_shared_between_grammars_equal_fresh_ones() -> None:
    info = small_vocab(['{"ab"k:"c"}', '{"ba"k:""}'])
    shared = lg.GrammarCompiler(info)
    first = shared.compile_grammar(_pair("text"))
    _masks_along(first, b'{"ab"k:"c"}')  # fills the shared store with the "text" rule's masks
    second = _pair("other")
    stored = len(shared.mask_store)
    reused = _masks_along(shared.compile_grammar(second), b'{"ba"k:""}')
    fresh = _masks_along(lg.GrammarCompiler(info).compile_grammar(second), b'{"ba"k:""}')
    assert len(shared.mask_store) < stored + len(fresh)  # the second grammar found masks to reuse
    for a, b in zip(reused, fresh):
        assert a.tolist() == b.tolist()
