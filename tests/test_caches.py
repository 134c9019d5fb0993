"""Process-wide compiler caches: bounded, and reused only where the result is the same."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import logitgate as lg
from engine_cases import small_vocab
from logitgate.engine import automata, rtn
from logitgate.engine.lru import LRU
from logitgate.engine.masks import mask_nbytes
from logitgate.grammar.ir import Grammar


def test_lru_bounds_entries_and_bytes() -> None:
    by_count = LRU(2)
    for k in "abc":
        by_count.put(k, k)
    assert len(by_count) == 2 and by_count.get("a") is None

    by_bytes = LRU(100, max_bytes=10, weight=len)
    by_bytes.put("a", "xxxx")
    by_bytes.put("b", "yyyy")
    assert by_bytes.get("a") == "xxxx"  # now the most recent
    by_bytes.put("c", "zzzz")
    assert by_bytes.get("b") is None and by_bytes.nbytes == 8
    by_bytes.put("d", "q" * 20)  # heavier than the budget alone: kept as the only entry
    assert len(by_bytes) == 1 and by_bytes.get("d") == "q" * 20


def test_lru_bounds_the_costs_given_to_put() -> None:
    by_cost = LRU(100, max_cost=10)
    by_cost.put("a", 1, cost=4)
    by_cost.put("b", 2, cost=4)
    assert by_cost.get("a") == 1  # now the most recent
    by_cost.put("c", 3, cost=4)
    assert by_cost.get("b") is None and by_cost.cost == 8
    by_cost.put("a", 4, cost=1)  # a key put again costs its new cost alone
    assert by_cost.cost == 5 and by_cost.get("a") == 4
    by_cost.put("d", 5, cost=50)  # costlier than the budget alone: kept as the only entry
    assert len(by_cost) == 1 and by_cost.cost == 50


def test_the_rule_cache_is_bounded_by_the_size_of_what_its_keys_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rule DFA costs its program's size (its key holds about as many expression nodes, which
    the cyclic collector walks at every full collection): a new rule pushes out the least recently
    used ones past ``max_cost``, however few entries there are."""
    cache = LRU(2048, max_bytes=256 << 20, weight=lambda e: e.dfa.nbytes, max_cost=2000)
    monkeypatch.setattr(rtn, "_RULE_DFAS", cache)
    monkeypatch.setattr(rtn, "RULE_CACHE_ENTRY_MAX_COST", 10_000)  # (the members' rules are large: see below)
    assert rtn.RULE_CACHE_MAX_COST < 100_000  # (the real one: tens of thousands of nodes, not 2,048 rules' worth)
    for i in range(40):  # objects of 12 members, each an array of one of 40 object types
        member = {"type": "object", "properties": {f"k{j}_{i}": {"type": "integer"} for j in range(12)},
                  "required": [f"k0_{i}"]}
        rtn.compile_rtn(Grammar.from_json_schema({"type": "array", "items": member}))
    assert 0 < cache.cost <= 2000 and len(cache) < 40


def test_a_rule_too_large_to_be_met_again_is_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule whose program passes ``RULE_CACHE_ENTRY_MAX_COST`` is compiled, not kept (its key
    would keep that many expression nodes alive, for the rare grammar that has the same rule); the
    small rules of the same grammar are kept, and the result is as with the limit lifted."""
    cache = LRU(2048, max_bytes=256 << 20, weight=lambda e: e.dfa.nbytes, max_cost=1 << 20)
    monkeypatch.setattr(rtn, "_RULE_DFAS", cache)
    member = {"type": "object", "properties": {f"k{j}": {"type": "integer"} for j in range(30)}}
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": member}, "b": member,
                                               "s": {"type": "string"}, "t": {"type": "string"}}}
    grammar = Grammar.from_json_schema(schema)
    limited = rtn.compile_rtn(grammar)
    kept = [e[3] for e in cache._items.values()]  # (each entry's cost)
    assert kept and max(kept) <= rtn.RULE_CACHE_ENTRY_MAX_COST
    monkeypatch.setattr(rtn, "RULE_CACHE_ENTRY_MAX_COST", 1 << 20)
    cache._items.clear()
    unlimited = rtn.compile_rtn(grammar)
    assert max(e[3] for e in cache._items.values()) > 512  # (the member object's rule: over the real limit)
    for a, b in zip(_arrays(limited), _arrays(unlimited)):
        assert np.array_equal(a, b)


def test_the_numbers_expression_cache_is_bounded_for_integer_ranges_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The numerals of a formula are kept for the next schema with the same bounds, at most
    ``_EXPR_CACHE_SIZE`` formulas: integer ranges (spelled directly, the common case) went in
    without the oldest going out, so distinct bounds grew it without end. An evicted formula
    converts again to the same grammar."""
    from logitgate.grammar.json_schema import numbers

    monkeypatch.setattr(numbers, "_EXPR_CACHE", {})
    monkeypatch.setattr(numbers, "_EXPR_CACHE_SIZE", 8)

    def schema(i: int) -> dict:
        return {"type": "integer", "minimum": i, "maximum": 1000 + i}

    first = Grammar.from_json_schema(schema(0))
    for i in range(1, 30):
        Grammar.from_json_schema(schema(i))
        Grammar.from_json_schema({"type": "number", "multipleOf": 0.5, "maximum": i})  # (an automaton)
    assert 0 < len(numbers._EXPR_CACHE) <= 8
    assert Grammar.from_json_schema(schema(0)) == first  # (evicted long since: converted again)


def _arrays(r: rtn.RTN) -> list[np.ndarray]:
    return [r.trans, r.final, r.byte_class, r.chain_ptr, r.chain_target, r.chain_push_ptr, r.chain_push]


def test_rule_dfas_are_reused_across_grammars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rule but the root comes from the cache the second time (a root is one grammar's own
    automaton: it is not kept, nor the IR it was built from); the result is the same."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
              "additionalProperties": {"type": "array"}}  # extra values: the any-JSON-value rules
    first = rtn.compile_rtn(Grammar.from_json_schema(schema))
    assert len(first.rule_names) > 1
    built = []
    real = automata.Program.determinize
    monkeypatch.setattr(automata.Program, "determinize",
                        lambda self, *a, **k: built.append(1) or real(self, *a, **k))
    again = rtn.compile_rtn(Grammar.from_json_schema(schema))
    assert built == [1]  # the root alone was built again
    for a, b in zip(_arrays(first), _arrays(again)):
        assert np.array_equal(a, b)
    assert first.rule_hash == again.rule_hash


def test_a_root_is_still_taken_from_the_cache_where_another_grammar_put_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A root is not put in the rule cache, but is looked up there: the builtin JSON grammar's root
    is the any-value rule every schema with open objects caches, and is not built again."""
    rtn.compile_rtn(Grammar.from_json_schema({"type": "object", "properties": {"n": {"type": "integer"}}}))
    built = []
    real = automata.Program.determinize
    monkeypatch.setattr(automata.Program, "determinize",
                        lambda self, *a, **k: built.append(1) or real(self, *a, **k))
    r = rtn.compile_rtn(Grammar.builtin_json())
    assert not built
    assert r.num_states > 1


def test_a_compile_leaves_no_reference_cycles() -> None:
    """What a compile builds is freed by reference counting alone (no closure that calls itself,
    no object graph that points back): the cyclic collector has nothing of ours to find. Garbage
    in cycles would keep a whole conversion alive until a collection, and make each collection
    walk it."""
    import gc

    schema = {"type": "object", "properties": {
        "a": {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}, "minItems": 1},
        "b": {"type": "number", "multipleOf": 0.5, "minimum": 0},  # (a number automaton with helper rules)
        "c": {"type": "object", "properties": {"x": {"type": "boolean"}}, "maxProperties": 1},
        "d": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/node"}]}},
        "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}}
    compiler = lg.GrammarCompiler(small_vocab(['{"a": [1]}']), cache_enabled=False)
    compiler.compile_json_schema(schema)  # (first use imports what validation needs)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        compiler.compile_json_schema(schema)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    ours = [o for o in garbage if (getattr(o, "__module__", None) or type(o).__module__ or "").startswith("logitgate")]
    assert not ours, ours[:5]


def test_memory_size_counts_the_survival_tables_of_masks() -> None:
    """A grammar's reported size includes what its first masks add to it (the per-state survival
    depths of the vocabulary slices), not just its automaton."""
    from engine_cases import small_vocab
    from logitgate import GrammarCompiler, GrammarMatcher, allocate_token_bitmask

    info = small_vocab(['{"a": "xyz"}'])
    cg = GrammarCompiler(info).compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    before = cg.memory_size_bytes
    m = GrammarMatcher(cg)
    bm = allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm)
    plans = cg.rtn.__dict__["_slice_plans"].values()
    depths = sum(p.lower.nbytes + p.memo.nbytes for p in plans)
    assert depths >= 6 * cg.rtn.num_states  # (int16 + int32 per cover and state)
    tables = sum(p.tables.nbytes for p in plans)
    contexts = 64 * cg._ctx_size  # (cached context resolutions, counted 64 bytes each)
    own = sum(mask_nbytes(m) for s, m in cg._state_masks.items() if cg.rtn.state_key(s) is None)
    assert own > 0  # (the root's first mask: the grammar's own, not in the shared store)
    assert cg.memory_size_bytes - contexts - own == before + depths + tables
    assert before >= sum(a.nbytes for a in cg.rtn.step_pack)  # (the automaton itself)


def test_cached_masks_leave_the_cyclic_collector_nothing_to_walk() -> None:
    """A long-running process keeps a mask per state visited of every grammar it has cached (some
    145,000 after 2,500 MaskBench schemas); the collector walks every object it tracks at each full
    collection (0.245 s there while a mask was a class instance). A mask holds only ints and arrays,
    so after one collection neither the grammar's masks nor the shared store's are tracked."""
    import gc

    from engine_cases import small_vocab
    from logitgate import GrammarCompiler, GrammarMatcher, allocate_token_bitmask

    text = '{"a": "xyz", "b": [1, 2]}'
    info = small_vocab([text])
    compiler = GrammarCompiler(info)
    cg = compiler.compile_json_schema({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}}}})
    m = GrammarMatcher(cg)
    bm = allocate_token_bitmask(1, info.vocab_size)
    for ch in text:  # (a mask filled at every character)
        m.fill_next_token_bitmask(bm)
        assert m.accept_string(ch)
    m.fill_next_token_bitmask(bm)
    masks = list(cg._state_masks.values()) + list(compiler.mask_store._items.values())
    assert len(masks) >= 5
    gc.collect()
    assert not [mask for mask in masks if gc.is_tracked(mask)]


def _word_grammars(n: int) -> list[str]:
    """``n`` regexes of one shape (automata of one size), each a different language."""
    return [f"id{i:03d}-[a-f]{{2,4}}" for i in range(n)]


def test_the_compile_cache_lets_the_least_recently_used_grammars_go_past_its_byte_limit() -> None:
    """A server compiling a new schema per request must not keep every grammar it ever compiled:
    the compiled grammars are bounded by ``cache_limit_bytes`` (each weighed by its memory), the
    least recently used going first; a grammar asked for again is the most recent once more."""
    info = small_vocab(["id012-abcd"])
    weight = lg.GrammarCompiler(info).compile_regex(_word_grammars(1)[0]).memory_size_bytes
    compiler = lg.GrammarCompiler(info, cache_limit_bytes=3 * weight + weight // 2)  # room for three
    patterns = _word_grammars(8)
    first = [compiler.compile_regex(p) for p in patterns[:3]]
    assert [compiler.compile_regex(p) for p in patterns[:3]] == first  # (all three kept: hits)
    assert compiler.compile_regex(patterns[0]) is first[0]  # now the most recently used
    compiler.compile_regex(patterns[3])  # a fourth: the least recently used (the second) goes
    assert len(compiler._by_input) == 3
    assert compiler.compile_regex(patterns[0]) is first[0]
    assert compiler.compile_regex(patterns[2]) is first[2]
    gone = weakref.ref(first[1])
    del first[1]
    gc.collect()
    assert gone() is None  # (let go by the cache: nothing else held it)
    for p in patterns:
        compiler.compile_regex(p)
        assert compiler._grammar_bytes <= compiler.cache_limit_bytes
        assert compiler._grammar_bytes == sum(cg.memory_size_bytes for cg, _ in compiler._by_input.values())
    assert len(compiler._by_input) == 3
    # a grammar larger than the whole limit is still cached, alone (the newest always stays)
    small = lg.GrammarCompiler(info, cache_limit_bytes=weight // 2)
    cg = small.compile_regex(patterns[0])
    assert small.compile_regex(patterns[0]) is cg and len(small._by_input) == 1
    assert small.compile_regex(patterns[1]) is not cg and len(small._by_input) == 1


def test_inputs_that_convert_to_one_grammar_share_its_compile() -> None:
    """Schemas that differ only in annotations (titles, descriptions) are one grammar: the second
    is converted, not compiled again, while the first is alive; a different one is compiled."""
    compiler = lg.GrammarCompiler(small_vocab(['{"a": 1}']))
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]}
    first = compiler.compile_json_schema(schema)
    described = {**schema, "title": "T", "description": "the same object, described"}
    assert compiler.compile_json_schema(described) is first
    assert len(compiler._by_input) == 2  # (each input keeps its own entry)
    other = compiler.compile_json_schema({**schema, "required": []})
    assert other is not first
    loose, strict = lg.GrammarMatcher(other), lg.GrammarMatcher(first)
    assert loose.accept_string("{}") and loose.can_terminate()
    assert not (strict.accept_string("{}") and strict.can_terminate())
    compiler.clear_cache()
    assert compiler.compile_json_schema(described) is not first


def test_only_the_last_grammars_are_kept_for_sharing() -> None:
    """A compiler keeps the grammars of its last ``SHARED_GRAMMARS`` compiles (each holds its IR, which
    every full collection of the cyclic garbage collector walks): a variant of a recent schema shares
    its compile, one of a schema compiled longer ago than that is compiled again."""
    from logitgate.engine.compiler import SHARED_GRAMMARS

    compiler = lg.GrammarCompiler(small_vocab(['{"a": 1}']))
    schemas = [{"type": "object", "properties": {f"k{i}": {"type": "integer"}}} for i in range(SHARED_GRAMMARS + 3)]
    compiled = [compiler.compile_json_schema(schema) for schema in schemas]  # (all alive: held here)
    assert len(compiler._by_grammar) == SHARED_GRAMMARS
    assert compiler.compile_json_schema({**schemas[-1], "title": "a recent one"}) is compiled[-1]
    old = compiler.compile_json_schema({**schemas[0], "title": "an old one"})
    assert old is not compiled[0]
    assert compiler.compile_json_schema({**schemas[0], "description": "the same"}) is old  # (kept again)
    assert len(compiler._by_grammar) == SHARED_GRAMMARS


def test_grammars_kept_for_sharing_are_bounded_by_their_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Besides their count, the grammars kept for sharing hold at most ``SHARED_GRAMMAR_RULES``
    rules together (a large schema's IR is thousands of objects): the oldest go first, and
    a grammar larger than that alone is not kept (a variant of it compiles again); a small one
    still shares."""
    from logitgate.engine import compiler as compiler_module

    monkeypatch.setattr(compiler_module, "SHARED_GRAMMAR_RULES", 40)
    compiler = lg.GrammarCompiler(small_vocab(['{"a": 1}']))

    def nested(depth: int, tag: str) -> dict:  # an object in objects: a rule each (and ``root``)
        schema: dict = {"type": "integer"}
        for i in range(depth):
            schema = {"type": "object", "properties": {f"{tag}{i}": schema}, "required": [f"{tag}{i}"]}
        return schema

    small = [nested(3, f"s{i}") for i in range(8)]
    compiled = [compiler.compile_json_schema(schema) for schema in small]  # (all alive: held here)
    rules = [len(g.rules) for g in compiler._by_grammar]
    assert sum(rules) <= 40 and sum(rules) == compiler._shared_rules
    assert 1 < len(rules) < len(small)  # (the oldest went for the rule budget, not the count)
    assert compiler.compile_json_schema({**small[-1], "title": "a recent one"}) is compiled[-1]
    large = nested(60, "l")
    big = compiler.compile_json_schema(large)
    assert all(len(g.rules) <= 40 for g in compiler._by_grammar)
    assert compiler.compile_json_schema({**large, "title": "a variant"}) is not big
    assert compiler.compile_json_schema({**small[-1], "description": "still shared"}) is compiled[-1]
    compiler.clear_cache()
    assert compiler._shared_rules == 0 and not compiler._by_grammar


def test_a_dropped_compiler_is_freed_without_the_cyclic_collector() -> None:
    """The mask store reads the compiled grammars' bytes through a weak reference: a callback
    holding the compiler made a cycle, so a dropped compiler and every grammar and mask it cached
    waited for the cyclic collector."""
    import gc
    import weakref

    compiler = lg.GrammarCompiler(small_vocab(["id012-abcd"]))
    compiler.compile_regex(_word_grammars(1)[0])
    gone = weakref.ref(compiler)
    was = gc.isenabled()
    gc.disable()
    try:
        del compiler
        assert gone() is None
    finally:
        if was:
            gc.enable()


def test_compiled_grammars_and_shared_masks_share_one_byte_limit() -> None:
    """Masks filled by matchers grow the heap too: the shared mask store and the compiled grammars
    (whose own masks, context resolutions and survival tables count, weighed again when a grammar
    is asked for) stay within ``cache_limit_bytes`` together; a grammar the cache let go keeps
    working for the matchers that hold it."""
    from logitgate import GrammarMatcher, allocate_token_bitmask

    text = "id007-abcd"
    info = small_vocab([text])
    probe = lg.GrammarCompiler(info)
    probe_cg = probe.compile_regex(_word_grammars(1)[0])
    m = GrammarMatcher(probe_cg)
    bm = allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm)
    used = probe_cg.memory_size_bytes + probe.mask_store.nbytes  # one grammar and its first mask
    compiler = lg.GrammarCompiler(info, cache_limit_bytes=4 * used)
    held = []
    for p in _word_grammars(12):
        cg = compiler.compile_regex(p)
        m = GrammarMatcher(cg)
        for ch in p.split("-")[0] + "-ab":  # (a mask at every character)
            m.fill_next_token_bitmask(bm)
            assert m.accept_string(ch)
        held.append(m)
        cg = compiler.compile_regex(p)  # (asked for again: weighed with what the walk added)
        assert compiler._grammar_bytes + compiler.mask_store.nbytes <= compiler.cache_limit_bytes
    assert 1 < len(compiler._by_input) < 12
    first = held[0]  # its grammar long gone from the cache, it still decides
    first.fill_next_token_bitmask(bm)
    assert first.accept_string("c") and first.can_terminate() and not first.accept_string("-")


def test_schemas_differing_in_property_order_are_different_grammars() -> None:
    """Properties come in declared order, so the compile cache must not identify two schemas whose
    ``properties`` list the same members in another order (it did: the key sorted the keys)."""
    compiler = lg.GrammarCompiler(small_vocab(['{"a":1,"b":2}']))
    members = {"a": {"type": "integer"}, "b": {"type": "integer"}}
    for order in (["a", "b"], ["b", "a"]):
        schema = {"type": "object", "properties": {k: members[k] for k in order}, "required": ["a", "b"],
                  "additionalProperties": False}
        m = lg.GrammarMatcher(compiler.compile_json_schema(schema))
        text = "{" + ",".join(f'"{k}":1' for k in order) + "}"
        assert m.accept_string(text) and m.can_terminate(), order


def test_compiled_schemas_are_cached_by_their_exact_document() -> None:
    """Equal documents share one compiled grammar; documents that differ as JSON text (a key order,
    ``1`` against ``1.0``) do not; a document that cannot be keyed is compiled, not kept."""
    compiler = lg.GrammarCompiler(small_vocab(['{"a": 1}']))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"const": 1}}}
    first = compiler.compile_json_schema(schema)
    assert compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"},
                                                                          "b": {"const": 1}}}) is first
    assert len(compiler._by_input) == 1
    assert compiler.compile_json_schema({"type": "object", "properties": {"b": {"const": 1},
                                                                          "a": {"type": "integer"}}}) is not first
    # (an equal number spelled otherwise: a key of its own -- the grammar may be the same, and shared)
    compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"const": 1.0}}})
    assert len(compiler._by_input) == 3

    class Unpicklable(dict):
        def __reduce_ex__(self, protocol):
            raise TypeError("no pickling")

    odd = Unpicklable(type="integer")
    keys = len(compiler._by_input)
    one = compiler.compile_json_schema(odd)
    assert compiler.compile_json_schema(odd) is one  # (the same grammar, alive: shared by it)
    assert len(compiler._by_input) == keys  # never kept by a key that could be a wrong hit
    m = lg.GrammarMatcher(one)
    assert m.accept_string("42")
