"""Matcher behaviour: rejection leaves state, rollback, fork, validate_tokens, jump-forward, stop tokens."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_cases import CASES, arithmetic, small_vocab
from logitgate import GrammarCompiler, GrammarMatcher, TokenizerInfo, allocate_token_bitmask, bitmask_to_ids
from logitgate.engine.matcher import _KERNEL
from logitgate.grammar.ir import Grammar, lit, seq

SAMPLES = CASES[0].samples
INFO = small_vocab(SAMPLES)
COMPILED = GrammarCompiler(INFO).compile_grammar(arithmetic())
STOP = INFO.stop_token_ids[0]


def mask_of(m: GrammarMatcher) -> frozenset[int]:
    vocab_size = m.compiled_grammar.tokenizer_info.vocab_size
    bm = allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm)
    return frozenset(bitmask_to_ids(bm[0], vocab_size).tolist())


def random_tokens(m: GrammarMatcher, rng: random.Random, n: int) -> list[int]:
    out = []
    for _ in range(n):
        allowed = sorted(mask_of(m) - {STOP})
        if not allowed:
            break
        t = rng.choice(allowed)
        assert m.accept_token(t)
        out.append(t)
    return out


def test_rejected_token_leaves_state_unchanged() -> None:
    m = GrammarMatcher(COMPILED)
    m.accept_string("12+")
    before = mask_of(m)
    bad = [i for i in range(INFO.num_tokens) if i not in before][:50]
    for t in bad:
        assert not m.accept_token(t)
    assert mask_of(m) == before
    assert not m.accept_token(INFO.vocab_size - 1)  # padding id


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), k=st.integers(0, 12))
def test_rollback_restores_earlier_state(seed: int, n: int, k: int) -> None:
    rng = random.Random(seed)
    m = GrammarMatcher(COMPILED, max_rollback_tokens=20)
    toks = random_tokens(m, rng, n)
    k = min(k, len(toks))
    m.rollback(k)
    fresh = GrammarMatcher(COMPILED)
    for t in toks[: len(toks) - k]:
        assert fresh.accept_token(t)
    assert mask_of(m) == mask_of(fresh)
    # and the rolled-back matcher can go on exactly like the fresh one
    more = random_tokens(fresh, random.Random(seed + 1), 3)
    for t in more:
        assert m.accept_token(t)
    assert mask_of(m) == mask_of(fresh)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 16), k=st.integers(0, 4))
def test_can_terminate_after_steps_rollbacks_and_pool_growth(seed: int, n: int, k: int) -> None:
    """``can_terminate`` (known from the step that made the configuration, or asked afresh after a
    rollback or a frame pool that had to grow) is what the configuration's stacks say."""
    from logitgate.engine import _walk
    from logitgate.engine.matcher import FramePool

    def fresh(m: GrammarMatcher) -> bool:
        return bool(_walk.can_end(m._top, m._par, m._top.shape[0], m._rtn.final, m._pool.state, m._pool.parent))

    rng = random.Random(seed)
    m = GrammarMatcher(COMPILED, max_rollback_tokens=-1)
    m._pool = FramePool(capacity=1)  # every few steps the pool grows (the slower path of a step)
    assert m.can_terminate() == fresh(m)
    for _ in range(n):
        if not random_tokens(m, rng, 1):
            break
        assert m.can_terminate() == fresh(m)
    m.rollback(min(k, len(m._history)))
    assert m.can_terminate() == fresh(m)
    assert (STOP in mask_of(m)) == m.can_terminate()


def test_rollback_beyond_limit_raises() -> None:
    m = GrammarMatcher(COMPILED, max_rollback_tokens=2)
    m.accept_string("1")
    m.accept_string("2")
    m.accept_string("3")
    with pytest.raises(ValueError):
        m.rollback(3)


def test_fork_is_independent() -> None:
    rng = random.Random(3)
    m = GrammarMatcher(COMPILED)
    random_tokens(m, rng, 4)
    f = m.fork()
    assert mask_of(f) == mask_of(m)
    base = mask_of(m)
    random_tokens(f, rng, 5)
    assert mask_of(m) == base


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_validate_tokens_counts_acceptable_prefix(seed: int) -> None:
    rng = random.Random(seed)
    walker = GrammarMatcher(COMPILED)
    draft = random_tokens(walker, rng, 6)
    if draft and rng.random() < 0.7:
        draft.insert(rng.randrange(len(draft) + 1), rng.randrange(INFO.num_tokens))
    m = GrammarMatcher(COMPILED)
    m.accept_string("(")
    before = mask_of(m)
    n = m.validate_tokens(draft)
    assert mask_of(m) == before
    probe = m.fork()
    expected = 0
    for t in draft:
        if not probe.accept_token(t):
            break
        expected += 1
    assert n == expected


def test_stop_token_only_when_grammar_can_end_and_terminates() -> None:
    m = GrammarMatcher(COMPILED)
    assert STOP not in mask_of(m)
    m.accept_string("12")
    assert STOP in mask_of(m) and m.can_terminate()
    m.accept_string("+")
    assert STOP not in mask_of(m) and not m.accept_token(STOP)
    m.accept_string("3")
    assert m.accept_token(STOP) and m.is_terminated()
    assert mask_of(m) == frozenset({STOP}) or mask_of(m) == frozenset()
    assert not m.accept_token(INFO.token_id("1"))


def test_jump_forward_is_forced() -> None:
    info = TokenizerInfo.from_vocab([b"a", b"b", b"{", b'{"name": "', b'"', b"}", b"</s>", b'"name'],
                                    special_token_ids=[6], eos_token_id=6)
    g = Grammar({"root": seq(lit('{"name": "'), lit("a"), lit('", "x": 1}'))})
    m = GrammarMatcher(GrammarCompiler(info).compile_grammar(g))
    assert m.find_jump_forward_string() == '{"name": "a", "x": 1}'
    m.accept_string("{")
    assert m.find_jump_forward_string() == '"name": "a", "x": 1}'


def test_jump_forward_consistent_with_mask() -> None:
    rng = random.Random(5)
    for case in CASES:
        info = small_vocab(case.samples)
        m = GrammarMatcher(GrammarCompiler(info).compile_grammar(case.grammar()))
        bm = allocate_token_bitmask(1, info.vocab_size)
        for _ in range(10):
            jf = m.find_jump_forward_bytes()
            m.fill_next_token_bitmask(bm)
            allowed = [i for i in bitmask_to_ids(bm[0], info.vocab_size).tolist() if i not in info.stop_token_ids]
            for i in allowed:
                b = info.token_bytes[i]
                assert b.startswith(jf) or jf.startswith(b), (case.name, jf, b)
            if jf:
                assert m.fork().accept_string(jf)
            if not allowed:
                break
            assert m.accept_token(rng.choice(allowed))


def test_batch_fill_matches_single() -> None:
    from logitgate import BatchGrammarMatcher

    rng = random.Random(0)
    ms = []
    for i in range(6):
        m = GrammarMatcher(COMPILED)
        random_tokens(m, rng, i)
        ms.append(m)
    bm = allocate_token_bitmask(len(ms), INFO.vocab_size)
    batch = BatchGrammarMatcher(max_threads=2)
    batch.batch_fill_next_token_bitmask(ms, bm)
    for i, m in enumerate(ms):
        assert frozenset(bitmask_to_ids(bm[i], INFO.vocab_size).tolist()) == mask_of(m)
    batch.close()


def test_torch_bitmask_fill() -> None:
    torch = pytest.importorskip("torch")
    m = GrammarMatcher(COMPILED)
    bm = torch.full((2, (INFO.vocab_size + 31) // 32), -1, dtype=torch.int32)
    m.fill_next_token_bitmask(bm, 1)
    ids = bitmask_to_ids(bm[1].numpy(), INFO.vocab_size).tolist()
    assert frozenset(ids) == mask_of(m)
    assert (bm[0] == -1).all()
    assert np.isin(ids, [INFO.token_id(c) for c in "0123456789(-"]).any()


def test_the_scratch_buffers_python_reads_are_the_ones_the_kernels_slice() -> None:
    """A parser step's scratch is one block: ``WalkScratch`` names its parts for Python, the kernels
    slice the same parts out of it (``_scratch_views``); both must see the same memory."""
    from logitgate.engine import _walk
    from logitgate.engine.masks import ARENA_CAP, CONFIG_CAP, WalkScratch

    sc = WalkScratch(max_depth=10, num_words=8)
    named = (sc.arena_state, sc.arena_parent, sc.out_top, sc.out_par, sc.work_top, sc.work_par)
    sliced = _walk._scratch_views(sc.step_block, ARENA_CAP, CONFIG_CAP)
    for a, b in zip(named, sliced, strict=True):
        assert a.shape == b.shape
        assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


@pytest.mark.parametrize("exit_capacity", [1, 4096])
def test_the_walk_buffers_python_reads_are_the_ones_the_mask_kernels_slice(exit_capacity) -> None:
    """A mask kernel takes a ``WalkScratch`` as its two blocks and slices its buffers out of them
    (``_scratch_parts``); Python reads the same buffers by name, before and after the exit buffer
    grows (which makes every buffer new, the row keeping what it held)."""
    from logitgate.engine.masks import ARENA_CAP, CONFIG_CAP, WalkScratch, _scratch_parts
    from logitgate.tokenizer.trie import TokenTrie

    sc = WalkScratch(max_depth=10, num_words=8, exit_capacity=exit_capacity)
    for grown in (False, True):
        named = (sc.row, sc.ids, sc.cbuf, sc.step_block, sc.exits, sc.info, sc.cdepth)
        *sliced, arena_cap, config_cap = _scratch_parts(sc.block32, sc.block64)
        assert (arena_cap, config_cap) == (ARENA_CAP, CONFIG_CAP)
        assert sc.step_args[0] is sc.step_block and sc.step_args[3] is sc.info
        for a, b in zip(named, sliced, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype
            assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        assert sc.row.shape == (8,) and sc.cdepth.shape == (3 * 12,)
        if not grown:
            sc.row[:] = np.arange(8)
            old_exits = sc.exits.shape[0]
            sc.grow_exits(TokenTrie.from_tokens([b"a" * 5000], [0]))
            assert sc.exits.shape[0] >= max(4 * old_exits, 5001)
            assert sc.row.tolist() == list(range(8))


def _stacks(m: GrammarMatcher, tops: np.ndarray, pars: np.ndarray) -> list[list[int]]:
    """Each stack of a configuration as its states (and frames' depths), top first: frames compared by
    what they hold (the Python step and the kernel write a token's new frames at different places)."""
    pool = m._pool
    out = []
    for t, p in zip(tops.tolist(), pars.tolist(), strict=True):
        states = [t]
        while p >= 0:
            states += [int(pool.state[p]), int(pool.depth[p])]
            p = int(pool.parent[p])
        out.append(states)
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_one_stack_steps_in_python_leave_the_configuration_the_kernel_leaves(case) -> None:
    """A token that does not fork one stack is stepped in Python (plain steps, calls, pops, then the
    pops of dead ends); at every step of random walks, for every token, the result -- rejected, or
    the stack (its states and frames' depths) and whether it can end -- is the kernel's. A step
    remembered in the grammar's step memo (with the states of the frames below the top it read),
    found again at another stack with the same top, gives the kernel's result there too."""
    info = small_vocab(case.samples)
    cg = GrammarCompiler(info).compile_grammar(case.grammar())
    rng = random.Random(7)
    python_steps = memo_steps = deep_steps = 0
    for _ in range(4):
        m = GrammarMatcher(cg)
        for _ in range(25):
            if m._top.shape[0] == 1:
                for t in range(info.num_tokens):
                    if t in m._stop_set or not m._rt.in_trie[t]:
                        continue
                    key = m._top.item(0) * m._rt.vocab_size + t
                    remembered = cg._step_memo.get(key)
                    slow = m._advance(m._rt.token_data(t))
                    if remembered is not None:  # (from an earlier stack, or this one: accept_token reads it)
                        probe = m.fork()
                        assert probe.accept_token(t) == (slow is not None), (case.name, t)
                        if slow is not None:
                            assert _stacks(m, probe._top, probe._par) == _stacks(m, *slow[:2]), (case.name, t)
                        memo_steps += 1
                        deep_steps += bool(remembered[0])  # (it had read frames below the top)
                    fast = m._advance_one(m._rt.info.token_bytes[t], key)
                    if fast is _KERNEL:
                        continue
                    assert (fast is None) == (slow is None), (case.name, t)
                    if fast is not None:
                        python_steps += 1
                        assert _stacks(m, *fast[:2]) == _stacks(m, *slow[:2]), (case.name, t)
                        probe, kernel = m.fork(), m.fork()
                        probe._top, probe._par, probe._can_end = fast
                        kernel._top, kernel._par, kernel._can_end = slow  # (None where the pool grew)
                        assert probe.can_terminate() == kernel.can_terminate(), (case.name, t)
            allowed = sorted(mask_of(m) - m._stop_set)
            if not allowed:
                break
            assert m.accept_token(rng.choice(allowed))
    assert python_steps  # (the Python path was taken)
    assert memo_steps  # (and the memo was read)
    if case.name in ("arithmetic", "json_like", "tail_chains"):  # (grammars whose tokens pop)
        assert deep_steps  # (steps that read frames below the top were remembered and found again)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), limit=st.integers(1, 4))
def test_remembered_context_tokens_equal_resolved_ones(seed: int, limit: int) -> None:
    """A frame pool remembers each stack's context tokens (bounded); masks through accepts, rollbacks
    and forks (which share the pool) equal those of a new matcher that remembers nothing yet."""
    import logitgate.engine.matcher as matcher_module

    rng = random.Random(seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matcher_module, "_CONTEXT_MEMO_LIMIT", limit)
        m = GrammarMatcher(COMPILED, max_rollback_tokens=-1)
        accepted: list[int] = []
        for _ in range(24):
            if accepted and rng.random() < 0.2:
                k = rng.randint(1, len(accepted))
                m.rollback(k)
                del accepted[-k:]
            elif rng.random() < 0.1:
                m = m.fork()  # (the fork shares the pool and what it remembers)
            else:
                accepted += random_tokens(m, rng, 1)
            fresh = GrammarMatcher(COMPILED)
            for t in accepted:
                assert fresh.accept_token(t)
            assert mask_of(m) == mask_of(fresh)
            assert len(m._pool.contexts) <= limit
        assert m._pool.contexts  # (the arithmetic grammar's numbers and parentheses have context tokens)
