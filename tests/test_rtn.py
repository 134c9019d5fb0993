"""Rule digests of the compiled RTN: what lets grammars share per-state masks.

A digest must depend only on behaviour (the rule's minimal DFA and what its calls do), not on
rule names, so equal rules in different grammars share their masks -- and masks reused that way
must be the masks the grammar would have computed itself. A grammar's own root (and what is in a
cycle with it) has none: its masks stay with the grammar.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import logitgate as lg
from engine_cases import CASES, small_vocab, tail_chains
from logitgate.engine.rtn import compile_rtn
from logitgate.errors import GrammarError
from logitgate.grammar.ir import Grammar, Ref, alt, and_, byteset, lit, not_, repeat, seq
from logitgate.grammar.reference import accepts

_CHARS = byteset((0x20, 0x21), (0x23, 0x7E))  # printable ASCII but '"': wide enough to be "lexeme-like"
_BODY = seq(lit('"'), repeat(_CHARS, 0, None), lit('"'))


def _pair(name: str, body=_BODY, key: str = "k") -> Grammar:
    # referenced twice, so the rule is called (has its own DFA) rather than inlined
    return Grammar({"root": seq(lit("{"), Ref(name), lit(f"{key}:"), Ref(name), lit("}")), name: body})


def _nest(name: str, body=_BODY, key: str = "k") -> Grammar:
    # the pair as a recursive rule below the root (called, and not in a cycle with the root)
    pair = seq(lit("{"), Ref(name), lit(f"{key}:"), Ref(name), repeat(Ref("outer"), 0, 1), lit("}"))
    return Grammar({"root": seq(Ref("outer"), lit(";")), "outer": pair, name: body})


def _digest(g: Grammar, rule: str) -> str | None:
    rtn = compile_rtn(g)
    return rtn.rule_hash[rtn.rule_names.index(rule)]


def test_digests_ignore_rule_names() -> None:
    assert _digest(_pair("text"), "text") == _digest(_pair("s17"), "s17")
    assert _digest(_nest("text"), "outer") == _digest(_nest("s17"), "outer")  # calls are labelled by digests


def test_digests_change_with_behaviour() -> None:
    other_body = seq(lit('"'), repeat(_CHARS, 0, 30), lit('"'))
    assert _digest(_pair("text"), "text") != _digest(_pair("text", other_body), "text")
    # same callee, different caller
    assert _digest(_nest("text"), "outer") != _digest(_nest("text", key="j"), "outer")
    # same caller, callee of another behaviour
    assert _digest(_nest("text"), "outer") != _digest(_nest("text", other_body), "outer")


def test_a_grammars_own_root_and_its_cycle_have_no_digest_and_keep_their_masks() -> None:
    """A root built for the grammar (and every rule in a cycle with it) is the grammar's own: no
    digest, and its states' masks stay with the grammar, out of the shared store; the rules it
    calls are shared. A root taken from the rule cache (the builtin JSON grammar's: the any-value
    rule of open objects) has its digest. (``item`` is read in two places: it stays a rule, see
    :func:`test_a_recursive_rule_read_in_one_place_is_built_into_its_referrer`.)"""
    recursive = Grammar({"root": alt(seq(lit("("), repeat(Ref("item"), 0, None), lit(")")), seq(lit("<"), Ref("item"))),
                         "item": alt(Ref("root"), seq(Ref("text"), lit(","), Ref("text"))), "text": _BODY})
    rtn = compile_rtn(recursive)
    digests = dict(zip(rtn.rule_names, rtn.rule_hash, strict=True))
    assert digests == {"root": None, "item": None, "text": digests["text"]} and digests["text"] is not None
    compiler = lg.GrammarCompiler(small_vocab(['("ab","c"("d",""))']))
    cg = compiler.compile_grammar(recursive)
    m = lg.GrammarMatcher(cg)
    for ch in '("ab","c"("':
        m.get_next_token_ids()
        assert m.accept_string(ch)
    keys = {s: cg.rtn.state_key(s) for s in cg._state_masks}
    own = [s for s, k in keys.items() if k is None]
    shared = {(cg.tokenizer_info.fingerprint, *k) for k in keys.values() if k is not None}
    assert own and shared and set(compiler.mask_store._items) == shared
    open_object = {"type": "object", "properties": {"n": {"type": "integer"}}}  # (caches the any-value rule)
    compile_rtn(Grammar.from_json_schema(open_object))
    assert compile_rtn(Grammar.builtin_json()).rule_hash[0] is not None


def test_a_recursive_rule_read_in_one_place_is_built_into_its_referrer() -> None:
    """A node of a tree and the list of its children call each other; the list is read in one
    place, so it is built into the node's automaton, which calls itself: one rule, the same
    language. Read in two places, it stays a rule. A left recursion through such a rule is named
    with it."""
    def tree(twice: bool) -> Grammar:
        node = seq(lit("{"), repeat(Ref("kids"), 0, 1), lit("}"))
        return Grammar({"root": alt(node, seq(lit("<"), Ref("kids"), lit(">"))) if twice else node,
                        "kids": seq(lit("["), Ref("root"), repeat(seq(lit(","), Ref("root")), 0, None), lit("]"))})

    assert compile_rtn(tree(False)).rule_names == ["root"]
    assert compile_rtn(tree(True)).rule_names == ["root", "kids"]
    vocab = ["{", "}", "[", "]", ",", "{}", "{[", "]}", "},", "<", ">"]
    compiled = lg.GrammarCompiler(small_vocab(vocab)).compile_grammar(tree(False))
    for text in ("{}", "{[{}]}", "{[{},{[{}]}]}", "{[]}", "{[{}", "{[{}]}}", "{[{},]}"):
        m = lg.GrammarMatcher(compiled)
        assert (m.accept_string(text) and m.can_terminate()) == accepts(tree(False), text.encode()), text
    # a left recursion through a folded rule is reported through it, as the grammar writes it
    left = Grammar({"root": alt(lit("x"), seq(Ref("kids"), lit("x"))), "kids": seq(Ref("root"), lit("]"))})
    with pytest.raises(GrammarError, match="root -> kids -> root"):
        compile_rtn(left)


def test_recursive_rules_get_digests_of_their_cycle() -> None:
    def nested(open_: str) -> Grammar:
        v = seq(lit(open_), repeat(Ref("v"), 0, None), lit("]"))
        return Grammar({"root": seq(Ref("v"), lit(";")), "v": v})

    assert _digest(nested("["), "v") == _digest(nested("["), "v") is not None
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
    hits = shared.mask_store.hits
    reused = _masks_along(shared.compile_grammar(second), b'{"ba"k:""}')
    fresh = _masks_along(lg.GrammarCompiler(info).compile_grammar(second), b'{"ba"k:""}')
    assert shared.mask_store.hits > hits  # the second grammar found masks to reuse
    for a, b in zip(reused, fresh):
        assert a.tolist() == b.tolist()


def _nested_starts(depth: int) -> Grammar:
    """``r0`` calls ``r1`` before reading a byte, which calls ``r2``, ...: chains ``depth`` calls deep
    from many states. Each rule is recursive through a marker byte of its own (so it is called, not
    inlined, and every input has one parse)."""
    rules = {f"r{k}": alt(seq(Ref(f"r{k + 1}"), lit("x")), seq(lit(chr(0x41 + k)), Ref(f"r{k}")))
             for k in range(depth)}
    rules[f"r{depth}"] = alt(lit("y"), seq(lit(chr(0x41 + depth)), Ref(f"r{depth}")))
    return Grammar(rules, root="r0")


def test_deep_call_chains_are_all_listed() -> None:
    """Past the first array sizes (the chain pass is redone with larger ones) every chain is
    there: each state's chains reach exactly the rule starts its calls lead to."""
    depth = 40
    rtn = compile_rtn(_nested_starts(depth))
    assert rtn.stats["chains"] > 64 + 2 * depth  # more than the first sizes hold
    starts = {int(rtn.rule_start[rtn.rule_names.index(f"r{k}")]) for k in range(depth + 1)}
    root = int(rtn.rule_start[rtn.rule_names.index("r0")])
    lo, hi = rtn.chain_ptr[root], rtn.chain_ptr[root + 1]
    assert {int(t) for t in rtn.chain_target[lo:hi]} == starts - {root}
    for c in range(lo, hi):  # a chain into r_k pushes the k return states on the way
        k = rtn.rule_names[int(rtn.rule_of_state[rtn.chain_target[c]])]
        assert rtn.chain_push_ptr[c + 1] - rtn.chain_push_ptr[c] == int(k[1:])
    compiled = lg.GrammarCompiler(small_vocab(["ABy", "yxx"])).compile_grammar(_nested_starts(depth))
    # a marker of level k, then the levels below it: accepted; "y" then fewer "x" than levels: a prefix
    for text, whole in (("AAy" + "x" * depth, True), ("Cy" + "x" * depth, True), ("y" + "x" * (depth - 1), False),
                        ("Dyxx" + "A", None)):
        m = lg.GrammarMatcher(compiled)
        assert m.accept_string(text) == (whole is not None)
        if whole is not None:
            assert m.can_terminate() == whole


def test_too_many_chains_is_a_limit_error() -> None:
    from logitgate.engine.rtn import CompileLimits
    from logitgate.errors import LimitExceededError

    with pytest.raises(LimitExceededError) as err:
        compile_rtn(_nested_starts(40), CompileLimits(max_chains=100))
    assert err.value.limit == "max_chains"


def test_rules_inlined_hundreds_deep_build_with_room_or_are_refused() -> None:
    """A chain of rules each read once (``r0 ::= "a0" r1 | "b"``, ...) is inlined into one
    expression as deep as the chain; building it recurses two or three frames a level, past
    Python's limit of 1,000 at 400 rules (a RecursionError before). It is built again with room
    (the limit put back after), and a chain too deep even so is refused with the typed error."""
    import sys

    from logitgate.errors import LimitExceededError

    def chain(n: int) -> str:
        return "root ::= r0\n" + "\n".join(f'r{i} ::= "a" r{i + 1} | "b"' for i in range(n)) + f'\nr{n} ::= "z"\n'

    compiler = lg.GrammarCompiler(small_vocab(["aab", "aaz"]))
    limit = sys.getrecursionlimit()
    compiled = compiler.compile_grammar(chain(400))
    assert sys.getrecursionlimit() == limit
    for text, whole in (("a" * 400 + "z", True), ("a" * 17 + "b", True), ("a" * 401, False), ("a" * 400, None)):
        m = lg.GrammarMatcher(compiled)
        assert m.accept_string(text) == (whole is not False)
        if whole is not False:
            assert m.can_terminate() == bool(whole)
    with pytest.raises(LimitExceededError) as err:
        compiler.compile_grammar(chain(2500))
    assert err.value.limit == "recursion" and sys.getrecursionlimit() == limit


def test_a_root_that_is_another_rule_is_that_rule() -> None:
    """``root ::= value`` compiles as ``value`` itself (no rule of its own to build), with the same
    language; a chain of such rules that comes back is still refused."""
    body = alt(lit("x"), seq(lit("("), Ref("value"), lit(")")))
    rtn = compile_rtn(Grammar({"root": Ref("value"), "value": body}))
    assert rtn.rule_names == ["value"]
    compiled = lg.GrammarCompiler(small_vocab(["((x))"])).compile_grammar(Grammar({"root": Ref("value"), "value": body}))
    for text, ok in (("((x))", True), ("(x", False), ("x)", None)):
        m = lg.GrammarMatcher(compiled)
        assert m.accept_string(text) == (ok is not None)
        if ok is not None:
            assert m.can_terminate() == ok

    with pytest.raises(GrammarError, match="root rule 'root'"):
        compile_rtn(Grammar({"root": Ref("a"), "a": Ref("b"), "b": Ref("a")}))


def test_productivity_follows_callees_whether_or_not_a_search_is_needed() -> None:
    """A called rule whose callees are all productive is productive without a search; one calling
    an unproductive rule keeps only what does not go through it, and a rule that cannot avoid it
    is dropped: the language is what the reference recognizer says."""
    from logitgate.grammar.reference import accepts

    grammar = Grammar({
        "root": alt(seq(Ref("mid"), lit(","), Ref("mid")), seq(lit("b"), Ref("only_dead")), lit("c")),
        "mid": alt(seq(lit("("), Ref("dead"), lit(")")), lit("m"), seq(lit("<"), Ref("fine"), lit(">"))),
        "fine": alt(lit("f"), seq(lit("f"), Ref("fine"))),  # (recursive, productive)
        "dead": seq(lit("x"), Ref("dead")),  # (recursive, no string)
        "only_dead": seq(lit("y"), Ref("dead")),
    })
    rtn = compile_rtn(grammar)
    assert "dead" not in rtn.rule_names and "only_dead" not in rtn.rule_names
    texts = ["m,m", "<ff>,m", "c", "(x),m", "by", "b", "m,", "<>,m"]
    cg = lg.GrammarCompiler(small_vocab(texts)).compile_grammar(grammar)
    for text in texts:
        m = lg.GrammarMatcher(cg)
        ok = m.accept_string(text) and m.can_terminate()
        assert ok == accepts(grammar, text.encode()), text
    assert [t for t in texts if accepts(grammar, t.encode())] == ["m,m", "<ff>,m", "c"]


def test_rules_read_last_are_built_inside_the_rule_that_reads_them() -> None:
    """``more``/``more2`` (a cycle of tail references) and ``loop`` (a tail loop) are written into
    the automata of ``list`` and ``item``: no rule of their own, no call; the language is
    unchanged (the exactness tests walk this grammar against the reference recognizer)."""
    rtn = compile_rtn(tail_chains())
    assert sorted(rtn.rule_names) == ["item", "list", "root"]
    info = small_vocab(["[x,<ab>;([x]),x];"])
    cg = lg.GrammarCompiler(info).compile_grammar(tail_chains())
    for text, ok in ((b"[x,<ab>;([x]),x];", True), (b"[x;x];", False), (b"[x,x,x];", False),
                     (b"[<abc>,<>;x];", True), (b"[<a1>];", False)):
        m = lg.GrammarMatcher(cg)
        assert (m.accept_string(text) and m.can_terminate()) == ok, text


def test_an_inlined_rule_that_hosts_others_is_called() -> None:
    """An object's rule is inlined where it is read once, but the rules of what may follow each of
    its members are read last inside it: it becomes a called rule holding them all."""
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "x": {"type": "string"}, "y": {"type": "integer"}, "z": {"type": "boolean"}}}, "b": {"type": "string"}}}
    g = Grammar.from_json_schema(schema)
    rtn = compile_rtn(g)
    after = [n for n in g.rules if ".a" in n or n.endswith(".x")]
    assert after and not set(after) & set(rtn.rule_names)


def test_merging_stops_at_the_rule_limit() -> None:
    """A host takes at most ``merge_max_rules`` merged rules; beyond, they stay called (the keys of
    a huge object would otherwise meet in every state set). The language is the same either way."""
    from logitgate.engine.rtn import CompileLimits

    g = Grammar.from_json_schema({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(12)}})
    whole, parts, none = (compile_rtn(g, CompileLimits(merge_max_rules=m)) for m in (10**6, 4, 0))
    assert len(whole.rule_names) < len(parts.rule_names) < len(none.rule_names)
    info = small_vocab(['{"p1": 2, "p7": 30, "x": [true]}'])
    cgs = [lg.GrammarCompiler(info, limits=CompileLimits(merge_max_rules=m)).compile_grammar(g) for m in (10**6, 4, 0)]
    for text in (b'{"p1": 2, "p7": 30, "x": [true]}', b'{"p7": 1, "p1": 2}', b'{"p11":0}', b'{"p12":0,"p3":1}',
                 b'{"p0":1,"p0":2}'):
        verdicts = set()
        for cg in cgs:
            m = lg.GrammarMatcher(cg)
            verdicts.add(m.accept_string(text) and m.can_terminate())
        assert len(verdicts) == 1, text


def test_digests_remembered_for_cached_rules_are_the_digests_computed_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached rule's digest is remembered by its callees' digests (and a cycle of cached rules by
    their names, entries and outside callees): the same as computing them with empty caches."""
    from logitgate.engine import rtn as rtn_module
    from logitgate.engine.lru import LRU

    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"$ref": "#"}},
                                               "b": {"type": "string", "format": "email"}}}
    other_body = seq(lit("'"), repeat(_CHARS, 0, None), lit("'"))  # (still called: lexeme-like)
    # Rules cached by earlier tests are left out: a built automaton's digest is its identity (see
    # automata._special_dfa), and a rule cached long ago may hold one that the smaller cache of
    # built automata has dropped since -- the extra keys' automaton here would then be built again,
    # with another identity, in the compile "afresh".
    monkeypatch.setattr(rtn_module, "_RULE_DFAS", LRU(64))
    monkeypatch.setattr(rtn_module, "_CYCLE_DIGESTS", {})
    first = compile_rtn(Grammar.from_json_schema(schema)).rule_hash
    again = compile_rtn(Grammar.from_json_schema(schema)).rule_hash  # cache hits, remembered digests
    # a cached rule with a callee of another behaviour: another digest
    outers = [_digest(_nest("text"), "outer"), _digest(_nest("text", other_body), "outer")]
    monkeypatch.setattr(rtn_module, "_RULE_DFAS", LRU(64))
    monkeypatch.setattr(rtn_module, "_CYCLE_DIGESTS", {})
    fresh = compile_rtn(Grammar.from_json_schema(schema)).rule_hash
    assert first == again == fresh and any(d is not None for d in first)
    assert None not in outers and outers[1] != outers[0]
    assert outers == [_digest(_nest("text"), "outer"), _digest(_nest("text", other_body), "outer")]


def test_digests_are_made_at_first_use(monkeypatch) -> None:
    """The compile leaves the digests to the first mask lookup (its inputs kept until then), and
    they are what digesting at once gives."""
    from logitgate.engine import rtn as rtn_module

    calls: list[int] = []
    real = rtn_module._rule_hashes
    monkeypatch.setattr(rtn_module, "_rule_hashes", lambda names, dfas: calls.append(1) or real(names, dfas))
    rtn = compile_rtn(_pair("text"))
    assert calls == [] and rtn.digest_input is not None
    names, dfas = rtn.digest_input
    eager = real(names, dfas)
    text = rtn.rule_names.index("text")
    key = rtn.state_key(int(rtn.rule_start[text]))
    assert calls == [1] and rtn.digest_input is None  # made once, its inputs let go
    assert rtn.rule_hash == eager and key == (eager[text], 0) and eager[text] is not None
    assert rtn.state_key(rtn.root_start) is None  # (the grammar's own root)
    assert calls == [1]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_grammar_all_in_a_cycle_with_its_root_has_no_digests_to_make(case, monkeypatch) -> None:
    """Where every rule is in a cycle with a root built for the grammar, the compile already knows
    every rule is the grammar's own; elsewhere the digests are made at first use. Either way they
    are what digesting the assembled rules gives."""
    from logitgate.engine import rtn as rtn_module

    seen: list[tuple] = []
    real = rtn_module._assemble
    monkeypatch.setattr(rtn_module, "_assemble",
                        lambda names, dfas, *a: seen.append((names, dfas)) or real(names, dfas, *a))
    rtn = compile_rtn(case.grammar())
    eager = rtn_module._rule_hashes(*seen[-1])
    all_own = len(eager) > 1 and all(d is None for d in eager)
    assert (rtn.digest_input is None) == all_own, case.name  # (arithmetic: all its own)
    assert rtn.rule_hash == eager


def test_digests_are_made_once_when_threads_ask_at_once(monkeypatch) -> None:
    """Threads filling a new grammar's first masks together: one makes the digests, all get them."""
    import threading
    import time

    from logitgate.engine import rtn as rtn_module

    calls: list[int] = []
    real = rtn_module._rule_hashes

    def slow(names, dfas):
        calls.append(1)
        time.sleep(0.02)  # (the others arrive while this one digests)
        return real(names, dfas)

    monkeypatch.setattr(rtn_module, "_rule_hashes", slow)
    rtn = compile_rtn(_pair("text"))
    barrier = threading.Barrier(4)
    seen: list[tuple[str, ...]] = []

    def ask() -> None:
        barrier.wait()
        seen.append(tuple(rtn.rule_hash))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1] and len(seen) == 4 and len(set(seen)) == 1


def test_rules_inside_an_intersection_are_never_merged_or_hosts() -> None:
    """``word`` is used inside an ``And`` operand and reads ``tail`` last (twice): merging ``tail``
    into it would make ``word`` a called rule, which an operand cannot use (this raised "not
    regular"); the string rule read last twice elsewhere is still merged."""
    text = seq(lit('"'), repeat(_CHARS, 0, None), lit('"'))
    g = Grammar({
        "root": alt(seq(and_(Ref("word"), not_(lit("ab"))), lit(";")), seq(lit("x"), Ref("str")),
                    seq(lit("y"), Ref("str"))),
        "word": alt(seq(lit("a"), Ref("tail")), seq(lit("b"), Ref("tail"))),
        "tail": alt(lit("b"), lit("c")),
        "str": text,
    })
    assert compile_rtn(g).rule_names == ["root"]
    cg = lg.GrammarCompiler(small_vocab(['ac;', 'x"q"'])).compile_grammar(g)
    for text_, ok in ((b"ac;", True), (b"bb;", True), (b"ab;", False), (b'y"a b"', True), (b'x"', False)):
        m = lg.GrammarMatcher(cg)
        assert (m.accept_string(text_) and m.can_terminate()) == ok, text_


def test_an_automaton_built_for_a_special_is_digested_by_identity_not_by_its_table() -> None:
    """A counted string's automaton is built directly (one per cached Special) and its digest is
    that identity -- no SHA-256 over a table of up to 120,000 states at a grammar's first mask --
    while grammars with the same string still share its masks."""
    from logitgate.engine.automata import DFA

    def schema(key: str) -> dict:
        counted = {"type": "string", "maxLength": 300}
        return {"type": "object", "properties": {key: counted}, "required": [key]}

    digests = []
    for key in ("a", "b"):
        rtn = compile_rtn(Grammar.from_json_schema(schema(key)))
        _, dfas = rtn.digest_input
        (built,) = [i for i, d in enumerate(dfas) if "_layers" in d.__dict__]
        d = dfas[built]
        by_table = DFA(d.byte_class, d.trans, d.final, start=d.start).table_digest()
        assert d.table_digest() != by_table  # (not a hash of the table)
        digests.append(rtn.rule_hash[built])
    assert digests[0] is not None and digests[0] == digests[1]  # (the same automaton: shared masks)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.sets(st.integers(0, n - 1)))))
def test_candidate_components_are_those_of_the_candidates_graph(case) -> None:
    """The tail-merge candidates' components, taken from the whole grammar's, are the components
    of the graph of the candidates alone, callers first (a rule's referrers before it)."""
    from logitgate.engine import rtn as engine_rtn

    n, edges, chosen = case
    refs: dict[str, list[str]] = {f"r{i}": [] for i in range(n)}
    for a, b in edges:
        if f"r{b}" not in refs[f"r{a}"]:
            refs[f"r{a}"].append(f"r{b}")
    candidates = {f"r{i}" for i in chosen}
    order = engine_rtn._candidate_order(engine_rtn._sccs(refs), refs, candidates)
    alone = engine_rtn._sccs({t: [r for r in refs[t] if r in candidates] for t in refs if t in candidates})
    assert sorted(map(sorted, order)) == sorted(map(sorted, alone))
    position = {t: i for i, comp in enumerate(order) for t in comp}
    for t in candidates:
        for r in refs[t]:
            if r in candidates and position[r] != position[t]:
                assert position[t] < position[r]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rules_trimmed_past_the_minimization_limit_allow_the_same_tokens(case, monkeypatch) -> None:
    """A DFA past ``MINIMIZE_MAX_STATES`` is trimmed where it would be minimized (a rule's, an
    intersection's): with the limit set to two states, every case allows the same tokens at every
    step of its samples as when its rules are minimal, with as many states or more."""
    from logitgate.engine import automata
    from logitgate.engine import rtn as rtn_module
    from logitgate.engine.rtn import CompileLimits

    info = small_vocab(case.samples)
    minimal = lg.GrammarCompiler(info).compile_grammar(case.grammar())
    monkeypatch.setattr(automata, "MINIMIZE_MAX_STATES", 2)
    monkeypatch.setattr(rtn_module, "MINIMIZE_MAX_STATES", 2)
    # (other limits, so that no rule or intersection built before comes from the process-wide caches)
    trimmed = lg.GrammarCompiler(info, limits=CompileLimits(max_dfa_states=99_991)).compile_grammar(case.grammar())
    assert trimmed.rtn.stats["states"] >= minimal.rtn.stats["states"]
    for text in case.samples:
        a, b = lg.GrammarMatcher(minimal), lg.GrammarMatcher(trimmed)
        for i in range(0, len(text), 3):
            assert np.array_equal(a.get_next_token_ids(), b.get_next_token_ids()), (text, i)
            assert a.accept_string(text[i:i + 3]) and b.accept_string(text[i:i + 3])
        assert a.can_terminate() and b.can_terminate()


def test_a_rule_past_the_nfa_limit_is_refused_naming_the_limit_itself() -> None:
    """Each rule's automaton gets what the rules before it left of ``max_nfa_states``; a refusal
    names the configured limit (it named the remainder: "exceeds 644 NFA states" under a limit of
    400,000) and the rule that went past it."""
    from logitgate.engine.rtn import CompileLimits
    from logitgate.errors import LimitExceededError

    g = _pair("text")
    total = compile_rtn(g).stats["nfa_states"]
    # (its rule built again, then taken from the rule cache: both refuse alike)
    for max_dfa_states in (199_999, CompileLimits().max_dfa_states):
        with pytest.raises(LimitExceededError) as info:
            compile_rtn(g, CompileLimits(max_nfa_states=total - 1, max_dfa_states=max_dfa_states))
        message = str(info.value)
        assert info.value.limit == "max_nfa_states"
        assert f"exceeds {total - 1} NFA states (rule '" in message, message


@pytest.mark.parametrize("schema", [
    {"anyOf": [{"type": "string", "maxLength": 4096}, {"type": "null"}]},
    {"type": ["string", "integer"], "maxLength": 4096},
    {"type": ["string", "null"], "format": "email", "maxLength": 320},
], ids=["anyOf-null", "type-list", "pattern-or-null"])
def test_a_large_built_automaton_read_last_or_beside_others_is_called(schema) -> None:
    """A string counted to thousands of characters, an alternative of another type, is called as
    the automaton it was built as (its layers reported, masks shared between them), not written
    into the alternation's automaton, which made the subset construction walk and minimize its
    tens of thousands of states (70-160 ms a schema); the alternation itself stays a few states."""
    from logitgate.engine.rtn import BUILT_CALL_MIN_STATES

    rtn = compile_rtn(Grammar.from_json_schema(schema))
    (built,) = rtn.layers
    sizes = np.bincount(rtn.rule_of_state, minlength=len(rtn.rule_names))
    assert sizes[built] > BUILT_CALL_MIN_STATES
    assert all(n < 20 for r, n in enumerate(sizes) if r != built)


def test_a_small_built_automaton_is_still_written_into_its_reader() -> None:
    """Below :data:`BUILT_CALL_MIN_STATES` a built automaton (a short counted string) is merged or
    inlined as before: one rule, no call."""
    rtn = compile_rtn(Grammar.from_json_schema({"anyOf": [{"type": "string", "maxLength": 8}, {"type": "null"}]}))
    assert len(rtn.rule_names) == 1 and not rtn.layers


def test_a_called_counted_string_accepts_what_the_merged_one_did(monkeypatch: pytest.MonkeyPatch) -> None:
    """The language is the same whether the strings are called or merged (the threshold moved)."""
    import logitgate.engine.rtn as rtn_module

    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "null"}]},
                                               "b": {"type": ["string", "integer"], "maxLength": 30}}}
    texts = [b'{"a": null, "b": 7}', b'{"a": "' + b"x" * 40 + b'"}', b'{"a": "' + b"x" * 41 + b'"}',
             b'{"b": "' + b"\\u00e9" * 30 + b'"}', b'{"b": "' + b"y" * 31 + b'"}', b'{"a": "\\"", "b": -1}']
    info = small_vocab([t.decode() for t in texts])
    verdicts = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(rtn_module, "BUILT_CALL_MIN_STATES", threshold)
        cg = lg.GrammarCompiler(info).compile_json_schema(schema)
        assert len(cg.rtn.layers) == (0 if threshold else 2)
        row = []
        for t in texts:
            m = lg.GrammarMatcher(cg)
            row.append(m.accept_string(t) and m.can_terminate())
        verdicts.append(row)
    assert verdicts[0] == verdicts[1] == [True, True, False, True, False, True]
