"""The automata against brute force: minimization, trimming and products on random DFAs; DFAs built
from random IR expressions (Thompson + subset construction in numba) against the set semantics."""

from __future__ import annotations

import dataclasses
import itertools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from language_oracle import bounded_language, strings
from logitgate.engine import _construction_kernels as K
from logitgate.engine._automata_kernels import product_table
from logitgate.engine.automata import ALL_BYTES, DFA, Program, _product, class_representatives, minimize, trim
from logitgate.errors import LimitExceededError
from logitgate.grammar.ir import Expr, Grammar, Ref, alt, and_, byteset, lit, not_, repeat, seq


def random_dfa(rng: random.Random, n: int, k: int = 3, density: float = 0.7) -> DFA:
    classes = [1 << b for b in range(k - 1)] + [ALL_BYTES & ~((1 << (k - 1)) - 1)]
    trans = [[rng.randrange(n) if rng.random() < density else -1 for _ in range(k)] for _ in range(n)]
    final = [rng.random() < 0.3 for _ in range(n)]
    final[rng.randrange(n)] = True
    return DFA.from_lists(classes, trans, final)


def language(d: DFA, max_len: int, alphabet: list[int] | None = None) -> set[tuple[int, ...]]:
    """Every accepted word up to ``max_len`` bytes over ``alphabet`` (default: one byte per class of ``d``)."""
    if alphabet is None:
        alphabet = class_representatives(d.byte_class).tolist()
    out = set()
    for length in range(max_len + 1):
        for word in itertools.product(alphabet, repeat=length):
            s = d.start
            for b in word:
                s = d.trans[s][d.byte_class[b]]
                if s < 0:
                    break
            else:
                if d.final[s]:
                    out.add(word)
    return out


def distinguishable_pairs(d: DFA) -> set[tuple[int, int]]:
    """Table filling (Myhill-Nerode): the pairs of states some word tells apart (-1 = reject sink)."""
    states = [*range(d.num_states), -1]

    def step(s: int, c: int) -> int:
        return -1 if s < 0 else d.trans[s][c]

    def accepting(s: int) -> bool:
        return s >= 0 and d.final[s]

    marked = {(a, b) for a, b in itertools.combinations(states, 2) if accepting(a) != accepting(b)}
    changed = True
    while changed:
        changed = False
        for a, b in itertools.combinations(states, 2):
            if (a, b) in marked:
                continue
            for c in range(len(d.classes)):
                x, y = step(a, c), step(b, c)
                if x != y and ((x, y) in marked or (y, x) in marked):
                    marked.add((a, b))
                    changed = True
                    break
    return marked


@pytest.mark.parametrize("density", [0.25, 0.7, 1.0])  # partial (most grammar DFAs are sparse) to complete
@pytest.mark.parametrize("seed", range(30))
def test_minimize_keeps_the_language_and_merges_every_equivalent_pair(seed: int, density: float) -> None:
    rng = random.Random(seed)
    d = trim(random_dfa(rng, rng.randint(2, 12), k=rng.randint(2, 5), density=density))
    if d is None:
        return
    m = minimize(d)
    assert m.num_states <= d.num_states
    alphabet = class_representatives(d.byte_class).tolist()  # the result's classes are unions of these
    assert language(m, 6, alphabet) == language(d, 6, alphabet)
    # minimal: every two states of the result are told apart by some word
    marked = distinguishable_pairs(m)
    for a, b in itertools.combinations(range(m.num_states), 2):
        assert (a, b) in marked, (a, b)
    # coarsest classes: no two classes behave alike in every state
    assert len({tuple(m.trans[:, c].tolist()) for c in range(m.num_classes)}) == m.num_classes


@pytest.mark.parametrize("seed", range(20))
def test_minimize_is_the_same_with_a_class_split_in_two_alike(seed: int) -> None:
    """Splitting a class into two identical columns (bytes moved to a class of their own) changes
    no array of the result: classes every state treats alike end up one, whether merged before
    the refinement (as now) or after it."""
    rng = random.Random(seed)
    d = trim(random_dfa(rng, rng.randint(2, 12), k=rng.randint(2, 5), density=0.7))
    if d is None:
        return
    c = rng.randrange(d.num_classes)
    if np.count_nonzero(d.byte_class == c) < 2:
        return
    byte = int(np.flatnonzero(d.byte_class == c)[-1])  # (the class keeps its lowest byte)
    byte_class = d.byte_class.copy()
    byte_class[byte] = d.num_classes
    split = DFA(byte_class, np.concatenate([d.trans, d.trans[:, c:c + 1]], axis=1), d.final, start=d.start)
    a, b = minimize(d), minimize(split)
    for x, y in zip((a.byte_class, a.trans, a.final), (b.byte_class, b.trans, b.final), strict=True):
        assert np.array_equal(x, y)


def test_a_large_intersection_is_trimmed_its_classes_merged_and_keeps_its_language() -> None:
    """An intersection past MINIMIZE_MAX_STATES (an email of at most 1,024 characters) is left
    trimmed, not minimized (0.37 s there), with its alike classes merged; it accepts what both
    operands accept."""
    from logitgate.engine.automata import MINIMIZE_MAX_STATES, standalone_dfa
    from logitgate.grammar.json_schema.formats import format_expr
    from logitgate.grammar.json_schema.lengths import counted_content

    email = format_expr("email")
    d = standalone_dfa(and_(counted_content(0, 1024), email), None, 200_000)
    assert d.num_states > MINIMIZE_MAX_STATES and "_trimmed" in d.__dict__
    assert len({d.trans[:, c].tobytes() for c in range(d.num_classes)}) == d.num_classes
    assert d.accepts(b"a" * 1012 + b"@example.org")  # 1,024 characters
    assert not d.accepts(b"a" * 1013 + b"@example.org")  # 1,025
    assert not d.accepts(b"a." + b"a" * 1000 + b".@example.org")  # (a dot ends no local part)
    assert not d.accepts(b"no-at-sign.org") and not d.accepts(b"a@")


@pytest.mark.parametrize("seed", range(30))
def test_trim_keeps_the_language_and_only_live_states(seed: int) -> None:
    rng = random.Random(seed)
    d = random_dfa(rng, rng.randint(1, 10), density=0.5)
    t = trim(d)
    if t is None:
        assert not language(d, d.num_states)
        return
    assert language(t, 6) == language(d, 6)
    for s in range(t.num_states):  # every state reaches a final state
        assert language(dataclasses.replace(t, start=s), t.num_states)


@pytest.mark.parametrize("seed", range(20))
def test_product_accepts_the_intersection(seed: int) -> None:
    rng = random.Random(seed)
    a, b = random_dfa(rng, rng.randint(1, 8)), random_dfa(rng, rng.randint(1, 8))
    p = _product(a, b, 10_000)
    alphabet = class_representatives(p.byte_class).tolist()  # the common refinement of both
    assert language(p, 6, alphabet) == language(a, 6, alphabet) & language(b, 6, alphabet)


@pytest.mark.parametrize("seed", range(5))
def test_product_table_numbers_pairs_alike_through_its_hash_table(seed: int) -> None:
    """Beyond ``dense_limit`` pairs the product numbers states through open addressing (with
    rehashing): the table must come out identical to the dense one."""
    rng = np.random.default_rng(seed)
    n, k = 300, 4
    ta, tb = (np.where(rng.random((n, k)) < 0.15, -1, rng.integers(0, n, (n, k))).astype(np.int32) for _ in "ab")
    fa, fb = ((rng.random(n) < 0.3).astype(np.uint8) for _ in "ab")
    cls = np.arange(k, dtype=np.int64)
    dense = product_table(ta, tb, fa, fb, cls, cls, 0, 0, 1 << 20)
    hashed = product_table(ta, tb, fa, fb, cls, cls, 0, 0, 1 << 20, 0)
    assert dense[0].shape[0] > 2048  # several rehashes
    assert np.array_equal(dense[0], hashed[0]) and np.array_equal(dense[1], hashed[1])


def _regular(depth: int) -> st.SearchStrategy[Expr]:
    leaves = st.sampled_from([lit("a"), lit("b"), lit("ab"), lit("cba"), lit(""), byteset((97, 98)),
                              byteset((98, 99)), byteset(99, negate=True)])

    def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.lists(children, min_size=2, max_size=3).map(lambda xs: seq(*xs)),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: alt(*xs)),
            st.tuples(children, st.integers(0, 3), st.sampled_from([None, 0, 1, 2, 4])).filter(
                lambda t: t[2] is None or t[2] >= t[1]).map(lambda t: repeat(t[0], t[1], t[2])),
            st.lists(children, min_size=2, max_size=2).map(lambda xs: and_(*xs)),
            children.map(not_),
            # separated lists X (S X)* and X X*, which the program builds with one copy of X
            st.tuples(children, children).map(lambda t: seq(t[0], repeat(seq(t[1], t[0])))),
            children.map(lambda x: seq(lit("a"), x, repeat(x))),
        )

    return st.recursive(leaves, extend, max_leaves=depth)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regular(8))
def test_program_dfa_accepts_exactly_the_expression(e: Expr) -> None:
    """Thompson construction (literals, sets, nested bounded/unbounded repeats, embedded And/Not
    products and complements) + subset construction + trim + minimize keep the language."""
    alphabet, n = b"abc", 5
    prog = Program(None)
    prog.emit(e)
    dfa, _ = prog.determinize(100_000, 10_000)
    t = trim(dfa)
    want = bounded_language(Grammar({"root": e}), alphabet, n)
    for d in (dfa, t, minimize(t) if t is not None else None):
        if d is None:
            assert not want
            continue
        assert {w for w in strings(alphabet, n) if d.accepts(w)} == want


#: an expression whose subset construction minimization reduces (5 -> 3 states, 4 -> 3 classes)
_TWO_WAYS_TO_C = alt(seq(lit("a"), repeat(lit("c"), 1)), seq(lit("b"), repeat(lit("c"), 1)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regular(8), st.sampled_from(["trim", "minimize"]), st.sampled_from([None, 3]))
@example(_TWO_WAYS_TO_C, "minimize", None)
@example(_TWO_WAYS_TO_C, "minimize", 3)
@example(_TWO_WAYS_TO_C, "trim", None)
def test_a_dfa_reduced_where_it_is_built_is_the_one_trim_or_minimize_makes(e: Expr, how: str,
                                                                          limit: int | None) -> None:
    """``determinize(reduce=...)`` (subset construction and reduction in one kernel call) gives the
    very arrays :func:`trim` or :func:`minimize` makes of the unreduced DFA, marked with the
    reduction made -- trimmed, not minimized, past ``MINIMIZE_MAX_STATES`` (set to ``limit`` here);
    one it does not build that way (built directly, one embedded automaton taken as it is) or
    cannot reduce (an empty language) comes back unmarked."""
    from logitgate.engine import automata

    def program() -> Program:
        prog = Program(None)
        prog.emit(e)
        return prog

    one_embed = program().ops == [K.OP_EMBED, 0]
    plain = program().determinize(100_000, 10_000)[0]
    saved = automata.MINIMIZE_MAX_STATES
    try:
        automata.MINIMIZE_MAX_STATES = saved if limit is None else limit
        reduced = program().determinize(100_000, 10_000, reduce=how)[0]
    finally:
        automata.MINIMIZE_MAX_STATES = saved
    if how == "minimize" and limit is not None and plain.num_states > limit:
        how = "trim"
    want = (trim if how == "trim" else minimize)(plain)
    if plain.as_built or one_embed or want is None:
        assert "_reduced" not in reduced.__dict__
        return
    assert reduced.__dict__["_reduced"] == how and "_trimmed" in reduced.__dict__
    for field in ("byte_class", "trans", "final", "call_src", "call_rule", "call_dst"):
        assert np.array_equal(getattr(reduced, field), getattr(want, field)), field
    assert reduced.start == want.start


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regular(8), _regular(4), st.lists(st.sampled_from([1, 2, 3, 200, 256]), min_size=1, max_size=4))
def test_lexeme_answers_remembered_on_nodes_are_the_walks_answers(e: Expr, other: Expr,
                                                                   widths: list[int]) -> None:
    """Whether a rule body is lexeme-like (a wide repetition somewhere in it) is answered from what
    it and its reference-free subtrees remember exactly as by walking everything, whatever the
    width threshold asked before (the remembered answer is for one threshold)."""
    from logitgate.engine.rtn import _is_lexeme_like, _lexeme_walk
    from logitgate.grammar.ir import is_ref_free

    body = alt(seq(e, Ref("r")), seq(lit("x"), other, repeat(e, 0, None)))
    is_ref_free(body)  # (marks the reference-free subtrees, as a grammar's construction does)
    for min_bytes in widths:
        for _ in range(2):  # (the second time from what the first remembered)
            assert _is_lexeme_like(body, min_bytes) == _lexeme_walk(body, min_bytes, remember=False)
            assert _is_lexeme_like(e, min_bytes) == _lexeme_walk(e, min_bytes, remember=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regular(4), _regular(4), _regular(4))
def test_rules_jumped_to_keep_the_language(head: Expr, out: Expr, step: Expr) -> None:
    """A rule read last (``goto``: written once as a labelled fragment) -- here one that loops
    through itself and another -- gives the language of the grammar it comes from."""
    rules = {"root": alt(seq(head, Ref("t")), lit("c")), "t": alt(out, seq(step, Ref("u"))),
             "u": alt(seq(lit("a"), Ref("t")), Ref("t"))}
    prog = Program(lambda name: ("goto", rules[name]))
    prog.emit(rules["root"])
    dfa, _ = prog.determinize(100_000, 10_000)
    want = bounded_language(Grammar(rules), b"abc", 5)
    assert {w for w in strings(b"abc", 5) if dfa.accepts(w)} == want


def test_separated_lists_and_plus_are_built_with_one_copy() -> None:
    """``X (S X)*`` and ``X+`` put one copy of ``X`` into the NFA (a second copy is states the
    subset construction would double and minimization merge again); the language is unchanged."""
    x = seq(lit("k"), repeat(byteset((97, 99)), 0, 12), lit("v"))  # ~15 NFA states
    cases = {
        "sep": (seq(x, repeat(seq(lit(","), x))), lambda w: all(_is_x(p) for p in w.split(b","))),
        "plus": (repeat(x, 1, None), lambda w: w.startswith(b"k") and all(_is_x(b"k" + p) for p in w.split(b"k")[1:])),
        "flattened": (seq(lit("["), x, repeat(seq(lit(","), x)), lit("]")),
                      lambda w: w[:1] == b"[" and w[-1:] == b"]" and all(_is_x(p) for p in w[1:-1].split(b","))),
    }
    one = Program(None)
    one.emit(x)
    x_states = one.determinize(10_000, 10_000)[1]
    for name, (e, oracle) in cases.items():
        prog = Program(None)
        prog.emit(e)
        dfa, nfa_states = prog.determinize(10_000, 10_000)
        assert nfa_states < 2 * x_states, name
        for w in strings(b"kav,[]", 6):
            assert dfa.accepts(w) == oracle(w), (name, w)


def _is_x(w: bytes) -> bool:
    return len(w) >= 2 and w[:1] == b"k" and w[-1:] == b"v" and len(w) <= 14 and all(c in b"abc" for c in w[1:-1])


_WORDS = st.lists(st.binary(max_size=5).map(lambda b: bytes(97 + x % 3 for x in b)), min_size=8, max_size=40,
                  unique=True)


@settings(max_examples=120, deadline=None)
@given(_WORDS)
def test_a_set_of_literals_alone_is_built_minimal_and_canonical(words: list[bytes]) -> None:
    """A rule that is only a set of literals (eight or more) is built from its prefix tree merged
    bottom-up, without an NFA: the same arrays minimize gives from the general construction."""
    prog = Program(None)
    prog.emit(alt(*map(lit, words)))
    dfa, _ = prog.determinize(100_000, 100_000)
    general = Program(None)
    for w in words:  # the general construction: one fragment per literal, then ALT
        general.emit(lit(w))
    general.ops += [K.OP_ALT, len(words)]
    want = minimize(general.determinize(100_000, 100_000)[0])
    assert dfa.as_built and want is not None
    assert np.array_equal(dfa.trans, want.trans) and np.array_equal(dfa.final, want.final)
    assert np.array_equal(dfa.byte_class, want.byte_class)
    assert {w for w in strings(b"abcd", 5) if dfa.accepts(w)} == set(words)


@settings(max_examples=80, deadline=None)
@given(_WORDS, st.sampled_from([b"", b"a", b"ca"]))
def test_a_set_of_literals_inside_an_expression_keeps_its_language(words: list[bytes], tail: bytes) -> None:
    """Inside a larger expression the set is emitted as its prefix tree (shared prefixes once)."""
    e = seq(alt(*map(lit, words)), repeat(lit(tail)) if tail else lit("d"))
    prog = Program(None)
    prog.emit(e)
    dfa, nfa_states = prog.determinize(100_000, 100_000)
    assert nfa_states <= sum(map(len, set(words))) + 4 * len(set(words)) + 8
    assert {w for w in strings(b"abcd", 6) if dfa.accepts(w)} == bounded_language(Grammar({"root": e}), b"abcd", 6)


def test_a_set_of_literals_counts_against_the_limits() -> None:
    rng = random.Random(5)
    words = [bytes(rng.randrange(97, 123) for _ in range(6)) for _ in range(300)]
    for nfa, dfa, which in ((100, 100_000, "max_nfa_states"), (100_000, 100, "max_dfa_states")):
        prog = Program(None)
        prog.emit(alt(*map(lit, words)))
        with pytest.raises(LimitExceededError) as err:
            prog.determinize(nfa, dfa)
        assert err.value.limit == which


def test_program_limits_raise_instead_of_growing() -> None:
    prog = Program(None)
    prog.emit(repeat(seq(lit("ab"), repeat(byteset((97, 99)), 0, 50)), 0, 100))
    with pytest.raises(LimitExceededError) as nfa:
        prog.determinize(1_000, 100_000)
    assert nfa.value.limit == "max_nfa_states"
    with pytest.raises(LimitExceededError) as dfa:
        prog.determinize(1_000_000, 100)
    assert dfa.value.limit == "max_dfa_states"


def test_an_operand_beside_its_complement_makes_the_intersection_empty_before_anything_is_built() -> None:
    """``allOf [A, anyOf [not A, ...]]`` distributes into branches ``A & ... & not A``: the IR
    makes such an And the empty language, so no operand (here one past the state limit) is built."""
    from logitgate.engine.automata import standalone_dfa
    from logitgate.grammar.ir import NOTHING

    a = repeat(lit("ab"), 1, None)
    big = seq(repeat(byteset((97, 98)), 0, None), lit("a"), repeat(byteset((97, 98)), 12, 12))
    with pytest.raises(LimitExceededError):
        standalone_dfa(big, None, 1_000)
    assert and_(a, big, not_(a)) is NOTHING and and_(not_(a), big, a) is NOTHING
    assert and_(a, big, not_(lit("ab"))) is not NOTHING  # (a different operand's complement)
    d = standalone_dfa(and_(a, not_(lit("ab"))), None, 1_000)
    assert d.accepts(b"abab") and not d.accepts(b"ab")


def test_an_intersection_is_folded_smallest_operand_first() -> None:
    """In the order written, the first two operands' product (the last ten bytes times the length
    modulo 3: ~3,000 states) exceeds the limit; the small one first keeps every product small."""
    from logitgate.engine.automata import standalone_dfa

    ab = byteset((97, 98))
    window = seq(repeat(ab, 0, None), lit("a"), repeat(ab, 9, 9))  # 1,024 states
    thirds = repeat(seq(ab, ab, ab), 0, None)  # length divisible by 3
    short = alt(lit("a" * 12), lit("ba" * 6))
    with pytest.raises(LimitExceededError):
        _product(standalone_dfa(window, None, 2_000), standalone_dfa(thirds, None, 2_000), 2_000)
    d = standalone_dfa(and_(window, thirds, short), None, 2_000)
    assert d.accepts(b"a" * 12) and not d.accepts(b"ba" * 6)  # (ten bytes from the end: b)
    assert d.num_states == 13  # (minimal: "a" * 12 alone)


def test_a_reference_to_an_inlined_rule_shares_its_bodys_automaton() -> None:
    """A pattern a schema uses in several intersections is an inlined rule: each reference stands
    for its body, whose automaton is built once per process (not once per reference)."""
    from logitgate.engine.automata import standalone_dfa

    body = seq(lit("ref-shared:"), repeat(byteset((48, 57)), 3, 7))
    rules = {"p": body, "q": body}
    first = standalone_dfa(Ref("p"), lambda name: ("inline", rules[name]), 1_000)
    assert standalone_dfa(Ref("q"), lambda name: ("inline", rules[name]), 1_000) is first
    assert standalone_dfa(body, None, 1_000) is first
    assert first.accepts(b"ref-shared:123") and not first.accepts(b"ref-shared:12")
