"""Long counted strings (``minLength``/``maxLength`` past ``lengths.FLAT_MAX_CHARS``) are built in
chunks: whole chunks of ``b`` characters -- one called rule -- and a last part of fewer. The
tests shrink the constants (3-character chunks past 4 characters) so every split is reached on
short strings, and check the language and the masks against the reference recognizer; then the
real sizes, which one layered automaton could not hold."""

from __future__ import annotations

import pytest

from engine_cases import small_vocab
from logitgate import GrammarCompiler, GrammarMatcher, allocate_token_bitmask
from logitgate.errors import LimitExceededError
from logitgate.grammar import reference
from logitgate.grammar.ir import Grammar
from logitgate.grammar.json_schema import lengths
from test_engine_exact import walk_and_check

#: characters of every kind a count must treat as one: ASCII, escapes (two and six bytes), two-,
#: three- and four-byte UTF-8, and an escaped surrogate pair
PIECES = ["a", "\\n", "\\u00e9", "é", "€", "😀", "\\ud83d\\ude00", "Z"]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lengths, "FLAT_MAX_CHARS", 4)
    monkeypatch.setattr(lengths, "CHUNK_CHARS", 3)


def _string(n: int, shift: int = 0) -> str:
    """A JSON string of ``n`` characters, each of another kind."""
    return '"' + "".join(PIECES[(i + shift) % len(PIECES)] for i in range(n)) + '"'


def _schema(lo: int, hi: int | None) -> dict:
    s: dict = {"type": "string"}
    if lo:
        s["minLength"] = lo
    if hi is not None:
        s["maxLength"] = hi
    return s


BOUNDS = [(0, 5), (0, 6), (0, 7), (0, 11), (2, 11), (4, 9), (5, 13), (7, 10), (9, 14), (5, None), (8, None)]


@pytest.mark.parametrize(("lo", "hi"), BOUNDS)
def test_a_chunked_string_holds_exactly_the_strings_of_its_lengths(small_chunks, lo: int, hi: int | None) -> None:
    g = Grammar.from_json_schema(_schema(lo, hi))
    assert any(name.startswith("chunk") for name in g.rules)
    info = small_vocab([_string(8)])
    cg = GrammarCompiler(info).compile_grammar(g)
    for n in range(0, (hi if hi is not None else lo) + 5):
        for shift in (0, 3):
            text = _string(n, shift)
            want = n >= lo and (hi is None or n <= hi)
            assert reference.accepts(g, text.encode()) == want, (n, text)
            m = GrammarMatcher(cg)
            assert (m.accept_string(text) and m.can_terminate()) == want, (n, text)


@pytest.mark.parametrize(("lo", "hi"), [(0, 7), (2, 11), (5, None)])
def test_masks_of_a_chunked_string_equal_the_reference(small_chunks, lo: int, hi: int | None) -> None:
    """Past each whole chunk the matcher follows two stacks (another chunk, or the last part)
    until the chunk is whole or the string ends; every mask on the way is the reference's."""
    samples = [_string(n, shift) for n in (lo, (hi or lo + 4), (lo + (hi or lo + 4)) // 2) for shift in (0, 5)]
    g = Grammar.from_json_schema(_schema(lo, hi))
    info = small_vocab(samples, extra=200)
    for seed in range(3):
        walk_and_check(g, info, samples, seed=seed, steps=60)


def test_a_string_in_an_object_counts_in_chunks_beside_other_members(small_chunks) -> None:
    """Equal long strings share their chunk and last-part rules, and what follows a string (a
    comma, the next member) is read after either of its stacks ends it."""
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 7},
                                               "b": {"type": "string", "maxLength": 7}, "n": {"type": "integer"}},
              "required": ["a", "b", "n"], "additionalProperties": False}
    g = Grammar.from_json_schema(schema)
    one = Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string", "maxLength": 7}}})
    assert sum(name.startswith("chunk") for name in g.rules) == sum(name.startswith("chunk") for name in one.rules) > 1
    doc = '{"a": ' + _string(7) + ', "b": ' + _string(3, 2) + ', "n": 12}'
    samples = [doc, '{"a": ' + _string(6, 1) + ', "b": "", "n": 0}']
    info = small_vocab(samples)
    for seed in range(2):
        walk_and_check(g, info, samples, seed=seed, steps=70)
    cg = GrammarCompiler(info).compile_grammar(g)
    for a, ok in ((_string(7), True), (_string(8), False)):
        m = GrammarMatcher(cg)
        assert (m.accept_string('{"a": ' + a + ', "b": "x", "n": 1}') and m.can_terminate()) == ok


@pytest.mark.parametrize(("lo", "hi"), [(0, 32767), (1, 65535), (10_000, None), (9_000, 20_000)])
def test_long_real_bounds_compile_small_and_count_exactly(lo: int, hi: int | None) -> None:
    """``maxLength: 65535`` -- a common column limit -- took 1.3 million states as one layered
    automaton and was refused; in chunks it is some 80,000, each part built directly."""
    info = small_vocab(['"abc"'])
    cg = GrammarCompiler(info).compile_json_schema(_schema(lo, hi))
    assert cg.rtn.num_states < 100_000
    for n in sorted({lo - 1, lo, lo + 1023, lo + 1024, lo + 1025, (hi or lo + 600) - 1, hi or lo + 600,
                     (hi or lo + 600) + 1}):
        if n < 0:
            continue
        m = GrammarMatcher(cg)
        want = n >= lo and (hi is None or n <= hi)
        assert (m.accept_string('"' + "é" * (n // 2) + "a" * (n - n // 2) + '"') and m.can_terminate()) == want, n


def test_a_length_no_chunks_can_hold_is_refused_with_the_limit() -> None:
    with pytest.raises(LimitExceededError) as e:
        Grammar.from_json_schema({"type": "string", "maxLength": 10**12})
    assert e.value.limit == "max_dfa_states"


def test_a_long_length_with_a_pattern_is_still_one_intersection() -> None:
    """Chunks call a rule, and an intersection's operands must be regular expressions: a pattern
    beside a long ``maxLength`` is intersected with the layered automaton as before (refused past
    the state limit, not chunked)."""
    g = Grammar.from_json_schema({"type": "string", "maxLength": 20_000, "pattern": "^a"})
    assert not any(name.startswith("chunk") for name in g.rules)
    with pytest.raises(LimitExceededError):
        GrammarCompiler(small_vocab(['"abc"'])).compile_grammar(g)
    alone = Grammar.from_json_schema({"type": "string", "maxLength": 20_000})
    assert any(name.startswith("chunk") for name in alone.rules)


def test_chunked_masks_equal_one_layered_automatons_on_a_real_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Llama-3's vocabulary (tokens up to 128 bytes: across several chunk ends at once), a walk
    of random tokens through a string of at most 1,500 characters, to its end and past it: every
    mask of the chunked grammar (chunks of 200) equals the one-automaton grammar's."""
    import numpy as np

    from logitgate import allocate_token_bitmask, bitmask_to_ids
    from logitgate.tokenizer.bundled import bundled_available, load_bundled

    if not bundled_available("llama3"):
        pytest.skip("quicktok-v1 not installed")
    info = load_bundled("llama3")
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": 450, "maxLength": 1500}},
              "required": ["s"], "additionalProperties": False}
    flat = GrammarCompiler(info).compile_json_schema(schema)
    monkeypatch.setattr(lengths, "FLAT_MAX_CHARS", 400)
    monkeypatch.setattr(lengths, "CHUNK_CHARS", 200)
    chunked_grammar = Grammar.from_json_schema(schema)
    assert any(name.startswith("chunk") for name in chunked_grammar.rules)
    chunked = GrammarCompiler(info).compile_grammar(chunked_grammar)
    a, b = GrammarMatcher(flat), GrammarMatcher(chunked)
    bm = allocate_token_bitmask(2, info.vocab_size)
    rng = np.random.default_rng(5)
    assert a.accept_string('{"s": "') and b.accept_string('{"s": "')
    read = b""
    for step in range(1200):
        a.fill_next_token_bitmask(bm, 0)
        b.fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1]), step
        ids = bitmask_to_ids(bm[0], info.vocab_size)
        if a.is_terminated() or not ids.shape[0]:
            break
        # mostly long content tokens (they cross chunk ends), sometimes whatever is allowed (a quote)
        content = [i for i in rng.choice(ids, size=min(40, ids.shape[0]), replace=False).tolist()
                   if b'"' not in info.token_bytes[i]]
        tok = max(content, key=lambda i: len(info.token_bytes[i])) if content and rng.random() < 0.97 \
            else int(rng.choice(ids))
        assert a.accept_token(tok) and b.accept_token(tok), step
        read += info.token_bytes[tok]
        if read.count(b'"') and len(read) - read.index(b'"') > 300:  # (well past the string's end)
            break
    assert len(read[:read.index(b'"')].decode()) >= 450  # (the string went past two chunk ends at least)


def test_a_chunk_end_is_resolved_once_for_every_count_of_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token across a chunk's end pops into the string's own rule, whose state after ``k`` chunks
    calls the next chunk or the last part -- alike for every ``k``, but for where the next chunk
    returns, which no token reaches (a chunk is longer than a token). Context resolutions key that
    frame by one state for them all (``RTN.frame_representative``): the resolutions of the first
    chunk's end serve every later one (on Llama-3, 15-40 ms at each of a 32,767-character string's
    64 chunk ends). Masks stay the reference's."""
    from logitgate.engine import compiler as compiler_module
    from logitgate.tokenizer import TokenizerInfo

    monkeypatch.setattr(lengths, "FLAT_MAX_CHARS", 4)
    monkeypatch.setattr(lengths, "CHUNK_CHARS", 6)
    # tokens of at most two bytes: shorter than a chunk, as real tokens are than 512 characters
    vocab = sorted({bytes([b]) for b in range(256)} | {(a + b).encode() for a in "ab\\\"" for b in "ab\"n"})
    info = TokenizerInfo([*vocab, b"</s>"], special_token_ids=[len(vocab)], eos_token_id=len(vocab))
    g = Grammar.from_json_schema({"type": "string", "maxLength": 40})
    samples = ['"' + "ab" * 17 + '"', '"' + "a\\n" * 9 + '"']
    for seed in range(3):
        walk_and_check(g, info, samples, seed=seed, steps=45)

    cg = GrammarCompiler(info).compile_grammar(g)
    step = [0]
    resolved: list[int] = []  # the steps a context resolution was made at
    real = compiler_module.resolve_context
    monkeypatch.setattr(compiler_module, "resolve_context", lambda *args: resolved.append(step[0]) or real(*args))
    m = GrammarMatcher(cg)
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    ab = info.token_id("ab")
    assert m.accept_string('"a')
    for step[0] in range(17):  # "ab" across the end of chunk k at step 3k - 1, popping into k - 1 chunks
        m.fill_next_token_bitmask(bitmask)
        assert m.accept_token(ab)
    assert resolved and max(resolved) <= 2, resolved  # (the first chunk end only: every count of chunks alike)
    assert len(set(cg._frames.values())) < len(cg._frames)
