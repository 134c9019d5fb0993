"""Strings of a counted length that match a pattern or format: the layered automaton
(:mod:`logitgate.grammar.json_schema.pattern_lengths`) against the product it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from logitgate.engine.automata import minimize, standalone_dfa
from logitgate.engine.compiler import GrammarCompiler
from logitgate.errors import GrammarError, LimitExceededError
from logitgate.grammar.ir import Grammar, Special
from logitgate.grammar.json_schema.converter import _search_expr
from logitgate.grammar.json_schema.formats import format_expr
from logitgate.grammar.json_schema.pattern_lengths import KIND, counted_pattern
from logitgate.tokenizer.info import TokenizerInfo

_MAX = 200_000


def _languages_equal(a, b) -> bool:
    """Equal languages: minimal automata are canonical (equal arrays)."""
    ma, mb = minimize(a), minimize(b)
    if ma is None or mb is None:
        return ma is None and mb is None
    return (np.array_equal(ma.byte_class, mb.byte_class) and np.array_equal(ma.trans, mb.trans)
            and np.array_equal(ma.final, mb.final))


CASES = [
    ("^[a-c]+$", 2, 7),
    ("^(ab)*$", 0, 5),
    ("^(ab)*$", 3, 9),  # (odd bounds: only even lengths live)
    ("x[0-9]{2}", 0, 6),  # (a search: anything around it)
    ("^[a-z]{3}$", 0, 40),  # (at most 3 characters: the bound is vacuous)
    ("^[a-z]{3}$", 4, 40),  # (at least 4: empty)
    ("^.{2,}$", 1, 4),
    ("^é?[^\"]{0,3}\\\\?$", 1, 3),  # (non-ASCII, escapes)
    ("^(a|bc)+$", 5, None),
]


@pytest.mark.parametrize(("pattern", "lo", "hi"), CASES)
def test_a_counted_pattern_is_the_intersection_it_stands_for(pattern: str, lo: int, hi: int | None) -> None:
    node = counted_pattern(lo, hi, _search_expr(pattern))
    built = standalone_dfa(node, None, _MAX)
    plain = standalone_dfa(node.expand(), None, _MAX)  # (the expression: a product, minimized)
    assert _languages_equal(built, plain)
    if built.final.any():
        assert "_layers" in built.__dict__


@pytest.mark.parametrize("name", ["date", "email", "ipv4", "uuid", "date-time"])
def test_a_counted_format_is_the_intersection_it_stands_for(name: str) -> None:
    node = counted_pattern(1, 24, format_expr(name, "draft2020-12"))
    assert _languages_equal(standalone_dfa(node, None, _MAX), standalone_dfa(node.expand(), None, _MAX))


def test_a_pattern_no_longer_than_the_bound_makes_the_bound_vacuous() -> None:
    """A ``date`` has 10 characters: ``maxLength: 40000`` adds nothing, so no layers are built."""
    d = standalone_dfa(counted_pattern(0, 40_000, format_expr("date", "draft2020-12")), None, _MAX)
    m, count, lo, hi = d.__dict__["_layers"][:4]
    assert (count, lo, hi) == (1, 0, None)
    assert d.num_states == m + 2


def test_an_impossible_length_is_an_empty_language_and_its_rule_unproductive() -> None:
    d = standalone_dfa(counted_pattern(4, 40, _search_expr("^[a-z]{3}$")), None, _MAX)
    assert not d.final.any() and "_trimmed" not in d.__dict__
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]{3}$", "minLength": 4}},
              "required": ["a"]}
    with pytest.raises(GrammarError, match="language is empty"):
        GrammarCompiler(_tiny_vocab()).compile_json_schema(schema)


def test_layers_are_alike_within_a_run_and_runs_end_near_the_bounds() -> None:
    d = standalone_dfa(counted_pattern(30, 200, _search_expr("^(ab)+$")), None, _MAX)
    m, count, lo, hi, run_start, run_end = d.__dict__["_layers"]
    assert (count, lo, hi) == (201, 30, 200)
    # below the minimum, odd and even layers differ (an odd count ends on "a"): no run spans them;
    # past it, layers far from the maximum are one run
    assert run_start[100] <= 31 and run_end[100] >= 190
    # a layer alike with its run's first: its table, shifted, is the first's
    k, first = 120, int(run_start[120])
    rows, rows_first = d.trans[k * m:(k + 1) * m], d.trans[first * m:(first + 1) * m]
    shift = np.where(rows >= 0, rows - (k - first) * m, -1)
    inside = rows < count * m  # (the end state is not shifted)
    assert np.array_equal(np.where(inside, shift, rows), rows_first)
    assert np.array_equal(d.final[k * m:(k + 1) * m], d.final[first * m:(first + 1) * m])


def test_a_schema_of_a_pattern_and_a_length_compiles_to_one_layered_rule() -> None:
    g = Grammar.from_json_schema({"type": "string", "pattern": "^[a-z0-9-]+$", "maxLength": 4096})
    specials = [e for e in g.rules.values() if isinstance(e, Special)]
    assert [s.kind for s in specials] == [KIND]


def test_past_the_state_limit_in_layers_the_product_is_built_instead() -> None:
    """61 layers of 127 states are past a limit of 5,000; the product is 403."""
    node = counted_pattern(60, None, _search_expr("^(abcdefghij){2}[a-z]*$"))
    d = _special(node, 5_000)
    assert "_layers" not in d.__dict__ and d.num_states < 1000
    assert _languages_equal(d, standalone_dfa(node.expand(), None, _MAX))
    with pytest.raises(LimitExceededError):  # (the product's own limit still holds)
        _special(node, 1_000)


def test_layers_the_start_mostly_does_not_reach_are_built_as_the_product() -> None:
    """A fixed text then a long minimum: the layers hold every pattern state, but a layer reached
    while the text is read holds one or two the start reaches."""
    node = counted_pattern(60, None, _search_expr("^(abcdefghij){2}[a-z]*$"))
    d = standalone_dfa(node, None, _MAX)
    assert "_layers" not in d.__dict__ and d.num_states < 1000  # (in layers: 7,749)
    assert _languages_equal(d, standalone_dfa(node.expand(), None, _MAX))


def test_a_pattern_too_long_for_layers_or_product_is_refused() -> None:
    """The refusal says what the string is, why it is large, and what lets it compile."""
    with pytest.raises(LimitExceededError, match=r"a string of 1\.\.65536 characters .* needs more than .* "
                                                 r"automaton states.*max_dfa_states") as info:
        standalone_dfa(counted_pattern(1, 65_536, format_expr("email", "draft2020-12")), None, _MAX)
    assert info.value.limit == "max_dfa_states"


def _special(node, max_states: int):
    from logitgate.engine.automata import _special_dfa

    return _special_dfa(node, max_states)


def _tiny_vocab() -> TokenizerInfo:
    return TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])
