"""Mask exactness: at every step of random walks, the engine's mask equals the reference recognizer."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine_cases import CASES, Case, small_vocab
from logitgate import GrammarCompiler, GrammarMatcher, allocate_token_bitmask, bitmask_to_ids
from logitgate.grammar import reference


def walk_and_check(grammar, info, samples, *, seed: int, steps: int = 40) -> int:
    """Random walk guided by a sample string; check every token's mask bit. Returns steps taken."""
    rng = random.Random(seed)
    compiled = GrammarCompiler(info).compile_grammar(grammar)
    m = GrammarMatcher(compiled)
    bm = allocate_token_bitmask(1, info.vocab_size)
    stop = info.stop_token_ids[0]
    matchable = [i for i in range(info.num_tokens) if not info.special_mask[i]]
    target = rng.choice(samples).encode()
    prefix = b""
    for step in range(steps):
        m.fill_next_token_bitmask(bm)
        allowed = set(bitmask_to_ids(bm[0], info.vocab_size).tolist())
        expected = {i for i in matchable if reference.prefix_ok(grammar, prefix + info.token_bytes[i])}
        if reference.accepts(grammar, prefix):
            expected.add(stop)
        assert allowed == expected, (
            f"step {step} after {prefix!r}: engine-only {sorted(info.token_bytes[i] for i in allowed - expected)[:10]}"
            f" reference-only {sorted(info.token_bytes[i] for i in expected - allowed)[:10]}")
        choices = [i for i in allowed if i != stop]
        if not choices:
            break
        rest = target[len(prefix):] if target.startswith(prefix) else b""
        guided = [i for i in choices if rest.startswith(info.token_bytes[i])]
        if guided and rng.random() < 0.85:
            tok = max(guided, key=lambda i: (len(info.token_bytes[i]), rng.random()))
        else:
            tok = rng.choice(choices)
        assert m.accept_token(tok)
        prefix += info.token_bytes[tok]
    return step


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mask_equals_reference_on_walks(case: Case) -> None:
    grammar = case.grammar()
    info = small_vocab(case.samples)
    for seed in range(3):
        walk_and_check(grammar, info, case.samples, seed=seed)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_samples_accepted_token_by_token(case: Case) -> None:
    grammar = case.grammar()
    info = small_vocab(case.samples)
    m = GrammarMatcher(GrammarCompiler(info).compile_grammar(grammar))
    for s in case.samples:
        assert reference.accepts(grammar, s.encode()), s
        m.reset()
        assert m.accept_string(s), s
        assert m.can_terminate()
        assert m.accept_token(info.stop_token_ids[0]) and m.is_terminated()


def test_real_vocabulary_json_walk() -> None:
    from logitgate.tokenizer.bundled import bundled_available, load_bundled

    if not bundled_available("llama3"):
        pytest.skip("quicktok-v1 not installed")
    info = load_bundled("llama3")
    case = next(c for c in CASES if c.name == "json_like")
    grammar = case.grammar()
    compiled = GrammarCompiler(info).compile_grammar(grammar)
    m = GrammarMatcher(compiled)
    bm = allocate_token_bitmask(1, info.vocab_size)
    rng = np.random.default_rng(0)
    prefix = b""
    sample_ids = rng.choice(info.trie.tok_ids, size=3000, replace=False).tolist()
    for _ in range(12):
        m.fill_next_token_bitmask(bm)
        allowed = set(bitmask_to_ids(bm[0], info.vocab_size).tolist())
        check = sample_ids + sorted(allowed - set(info.stop_token_ids))[:200]
        for i in check:
            assert (i in allowed) == reference.prefix_ok(grammar, prefix + info.token_bytes[i]), info.token_bytes[i]
        choices = sorted(allowed - set(info.stop_token_ids))
        if not choices:
            break
        tok = int(rng.choice(choices))
        assert m.accept_token(tok)
        prefix += info.token_bytes[tok]


@pytest.mark.parametrize("ebnf,text", [
    # a shallow stack is met first, then deeper ones whose top frames hold the same states
    (next(c for c in CASES if c.name == "arithmetic").grammar, "(12+3.5)*-4/(7-2)"),
    (lambda: __import__("logitgate").Grammar.from_ebnf('root ::= "[" root? "]" ("," root)?'), "[[]],[[[]],[]]"),
])
def test_context_cache_tells_the_stack_bottom_from_deeper_frames(ebnf, text) -> None:
    """One matcher, one byte at a time: cached context resolutions are reused between stacks whose
    top frames agree, and a resolution that popped to the bottom must not answer for a deeper stack."""
    grammar = ebnf()
    info = small_vocab([text], extra=0)
    m = GrammarMatcher(GrammarCompiler(info).compile_grammar(grammar))
    bm = allocate_token_bitmask(1, info.vocab_size)
    single = [i for i in range(info.num_tokens) if len(info.token_bytes[i]) == 1]
    prefix = b""
    for ch in text.encode():
        m.fill_next_token_bitmask(bm)
        allowed = set(bitmask_to_ids(bm[0], info.vocab_size).tolist())
        for i in single:
            assert (i in allowed) == reference.prefix_ok(grammar, prefix + info.token_bytes[i]), (prefix, i)
        assert m.accept_string(bytes([ch]))
        prefix += bytes([ch])


def test_a_resolution_that_finds_nothing_still_depends_on_the_frames_it_read() -> None:
    """A context resolution that accepts nothing still depends on every frame it popped through to
    learn that: a stack that differs only below a final frame must be resolved again, not served
    the cached "nothing"."""
    from logitgate import Grammar, TokenizerInfo

    # after ``"<" e`` the caller of ``e`` is final (``"!"`` is optional) but not a tail call: a frame
    grammar = Grammar.from_ebnf('root ::= "x" e "2" | "y" e "1"\ne ::= "<" e "!"? | "(" e ")" | "ab"')
    # "b1" is the only token that leaves ``e`` after "a": its exit is the byte "1"
    vocab = [bytes([c]) for c in b"xy<()!ab12"] + [b"b1", b"</s>"]
    info = TokenizerInfo(vocab, special_token_ids=[len(vocab) - 1], eos_token_id=len(vocab) - 1)
    compiled = GrammarCompiler(info).compile_grammar(grammar)
    bm = allocate_token_bitmask(1, info.vocab_size)
    for text, b1_allowed in (("x<a", False), ("y<a", True), ("x<a", False)):
        m = GrammarMatcher(compiled)  # (one compiled grammar: its context cache is shared)
        assert m.accept_string(text)
        m.fill_next_token_bitmask(bm)
        allowed = set(bitmask_to_ids(bm[0], info.vocab_size).tolist())
        assert (vocab.index(b"b1") in allowed) == b1_allowed == reference.prefix_ok(grammar, text.encode() + b"b1")
