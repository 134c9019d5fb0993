"""Vocabulary slices: a state's mask is the same with slices as with one plain walk of the whole trie.

The slices let compute_state_mask OR in whole token sets instead of walking them; a slice may be
used only when every one of its tokens is accepted. These tests compare, on the real Llama-3
vocabulary, the context-independent part of masks computed both ways at many states (bounded and
unbounded strings, patterns, keys, numbers), and check the survival depth of bounded strings.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import logitgate as lg
from logitgate.engine.masks import COUNT, EXITS, compute_state_mask, write_mask
from logitgate.engine.slices import SliceSet
from logitgate.tokenizer.bundled import bundled_available, load_bundled

pytestmark = pytest.mark.skipif(not bundled_available("llama3"), reason="needs quicktok-v1 (test extra)")


@pytest.fixture(scope="module")
def compiler():
    return lg.GrammarCompiler(load_bundled("llama3"))


def _ids(mask, runtime) -> set[int]:
    row = np.zeros(runtime.num_words, dtype=np.int32)
    write_mask(mask, row, True, runtime.base_row)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    return set(np.flatnonzero(bits).tolist())


def _whole_trie_slice(runtime) -> SliceSet:
    return SliceSet.whole(runtime.trie, runtime.base_row.copy())


SCHEMAS = [
    {"type": "string", "maxLength": 12},
    {"type": "string", "minLength": 3, "maxLength": 40},
    {"type": "string"},
    {"type": "string", "pattern": "^[a-z]{2,5}-[0-9]+$"},
    {"type": "string", "format": "email"},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 25}}, "required": ["name"]},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "array", "items": {"enum": ["alpha", "beta", "gamma delta"]}},
    {"type": "object", "properties": {"id": {"type": "string"}, "email": {"type": ["string", "null"]}}},
    {"type": "object", "patternProperties": {"^x-": {"type": "string", "maxLength": 8}},
     "additionalProperties": False},
    {"type": "string", "format": "hostname"},
    {"type": "string", "pattern": "^[A-Za-z0-9]{3,14}$"},
    {"type": "string", "maxLength": 3},  # raw multi-byte characters: tokens that end inside one
]
TEXTS = ['"abcdefghij"', '"abcdefghijklmnopqrstuvwxyz0123456789ab"', '"hello, world \\u00e9 ok"', '"ab-123"',
         '"x.y@example.com"', '{"name": "Ada Lovelace the first"}', '{"k": 1, "other key": 22}',
         '["alpha", "gamma delta"]', '{"id": "7", "email": null, "idx": "q"}', '{"x-one": "abc", "x-": ""}',
         '"Mail2.example-host.org"', '"Abc123XYZ"', '"é中😀"']


# a code-like grammar: identifiers after keywords take the "space then letters" slices whole
SQL = r"""
root  ::= "SELECT " ident (", " ident)* " FROM " ident (" WHERE " ident " = " value)? ";"
ident ::= [a-zA-Z_] [a-zA-Z0-9_]*
value ::= [0-9]+ | "'" [^'\n]* "'"
"""


@pytest.mark.parametrize("k", range(len(SCHEMAS) + 1))
def test_masks_with_slices_equal_whole_trie_walks(compiler, k):
    if k == len(SCHEMAS):
        cg, text = compiler.compile_grammar(SQL), b"SELECT name, age FROM users WHERE city = 'Paris x';"
    else:
        cg, text = compiler.compile_json_schema(SCHEMAS[k]), TEXTS[k].encode()
    rt = cg._runtime
    whole = _whole_trie_slice(rt)
    m = lg.GrammarMatcher(cg)
    checked = 0
    for i in range(len(text) + 1):
        for s in {int(x) for x in m._top}:
            fast = compute_state_mask(s, cg.rtn, rt.slices, rt.base_row, rt.scratch())
            plain = compute_state_mask(s, cg.rtn, whole, rt.base_row, rt.scratch())
            assert _ids(fast, rt) == _ids(plain, rt), (k, text[:i])
            assert (fast[EXITS].shape[0] > 0) == (plain[EXITS].shape[0] > 0)
            checked += 1
        if i < len(text):
            assert m.accept_string(text[i:i + 1])
    assert checked >= len(text)


def test_whitespace_is_kept_apart_from_the_unsliced_trie_and_taken_whole_at_a_json_value(compiler):
    """The whitespace-only tokens are slices of their own, left out of the unsliced trie; a state
    where a JSON value may begin (after whitespace) takes them whole and walks the unsliced trie for
    the rest, and its mask is a whole-trie walk's."""
    cg = compiler.compile_json_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    rt = cg._runtime
    slices, trie = rt.slices, rt.slices.trie
    apart = {j for j, sl in enumerate(slices) if sl.apart}
    ws = {i for i, b in enumerate(rt.info.token_bytes) if b and set(b) <= set(b" \t\n\r")}
    assert len(ws) > 300 and set().union(*(slices.slices[j].token_ids.tolist() for j in apart)) == ws
    lo, hi = slices.unsliced
    unsliced = set(trie.tok_ids[trie.tok_start[lo]:trie.tok_start[hi]].tolist())
    assert unsliced == set(rt.trie.tok_ids.tolist()) - ws
    m = lg.GrammarMatcher(cg)
    assert m.accept_string('{"n":')
    (value,) = m._top.tolist()
    taken, starts, ends, _ = slices.walk_plan(value, cg.rtn)
    assert set(taken) == apart
    assert any(lo <= a and b <= hi for a, b in zip(starts.tolist(), ends.tolist(), strict=True))
    fast = compute_state_mask(value, cg.rtn, slices, rt.base_row, rt.scratch())
    plain = compute_state_mask(value, cg.rtn, _whole_trie_slice(rt), rt.base_row, rt.scratch())
    assert _ids(fast, rt) == _ids(plain, rt) and ws <= _ids(fast, rt)


def test_a_large_grammars_plan_arrays_are_untouched_zeros_and_its_masks_are_exact(compiler):
    """A grammar of more than ``LAZY_ZEROS`` states gets its per-state plan arrays (depths proved and
    searched, 0: none) from numpy rather than the kernel; its masks are still a whole-trie walk's,
    the depths found are remembered, and the other grammars' arrays are the kernel's, zeros too."""
    from logitgate.engine._survival import LAZY_ZEROS

    # (no maxLength: a bounded string's character boundaries need no plan, see counted_chars_left)
    cg = compiler.compile_json_schema({"type": "string", "minLength": 2000})
    rt, rtn = cg._runtime, cg.rtn
    assert rtn.num_states > LAZY_ZEROS
    plan = rt.slices.plan_arrays(rtn)
    assert plan.lower.shape == plan.memo.shape == (len(rt.slices.covers), rtn.num_states)
    assert not plan.lower.any() and not plan.memo.any()
    whole = _whole_trie_slice(rt)
    m = lg.GrammarMatcher(cg)
    text = b'"' + b"word and w\\u00e9rd, " * 4
    for i in range(len(text)):
        (s,) = m._top.tolist()
        fast = compute_state_mask(s, rtn, rt.slices, rt.base_row, rt.scratch())
        plain = compute_state_mask(s, rtn, whole, rt.base_row, rt.scratch())
        assert _ids(fast, rt) == _ids(plain, rt), text[:i]
        assert m.accept_string(text[i:i + 1])
    assert plan.memo.any() or plan.lower.any()  # (what the searches found stays with the grammar)
    small = rt.slices.plan_arrays(compiler.compile_json_schema({"type": "string", "maxLength": 5}).rtn)
    assert small.memo.shape[1] <= LAZY_ZEROS and not small.lower.any() and not small.memo.any()


def test_layers_of_a_long_counted_string_share_masks_only_where_tokens_cannot_tell_them_apart(compiler):
    """In ``minLength: 140, maxLength: 420`` a token (at most 128 bytes here) cannot tell layer 5
    from layer 0 (neither reaches 140 characters) nor layer 200 from layer 140 (both may close,
    neither reaches 420): those layers share a mask; layers near a bound do not. Every shared
    mask equals the one computed for the state itself."""
    cg = compiler.compile_json_schema({"type": "string", "minLength": 140, "maxLength": 420})
    rtn, rt = cg.rtn, cg._runtime
    ((rule, (m, count, lo, hi)),) = rtn.layers.items()
    assert (count, lo, hi) == (420, 140, 420)
    horizon = rt.trie.max_depth
    first = int(np.flatnonzero(rtn.rule_of_state == rule)[0])  # (the rule's states are contiguous)
    assert rtn.local_index[first] == 0
    shared = 0
    for k in (0, 5, 11, 12, 139, 140, 200, 291, 292, 300, 419):
        for q in range(0, m, 7):
            state = first + k * m + q
            rep = rtn.mask_representative(state, horizon)
            expect_k = 0 if k + horizon < lo else lo if lo <= k and hi - k > horizon else k
            assert rep == first + expect_k * m + q, (k, q)
            own = compute_state_mask(state, rtn, rt.slices, rt.base_row, rt.scratch())
            assert _ids(cg.state_mask(state), rt) == _ids(own, rt), (k, q)
            assert np.array_equal(cg.state_mask(state)[EXITS], own[EXITS])
            shared += rep != state
    assert shared


def test_a_walk_that_outgrows_its_exit_buffer_walks_again_with_a_larger_one(compiler):
    """A trie walk records its exit nodes in a scratch buffer; a walk that finds more than fit
    grows the buffer and walks again (the walk's arguments, made once per scratch, follow the
    new buffer): the same mask and exits as with room to spare."""
    from logitgate.engine.masks import WalkScratch

    cg = compiler.compile_grammar(SQL)
    rt = cg._runtime
    m = lg.GrammarMatcher(cg)
    text = b"SELECT name, age FROM users WHERE city = 'Paris x';"
    grown = 0
    for i in range(len(text)):
        for s in {int(x) for x in m._top}:
            roomy = compute_state_mask(s, cg.rtn, rt.slices, rt.base_row, rt.scratch())
            tight = WalkScratch(rt.trie.max_depth, rt.num_words, exit_capacity=1)
            small = compute_state_mask(s, cg.rtn, rt.slices, rt.base_row, tight)
            assert _ids(small, rt) == _ids(roomy, rt)
            assert np.array_equal(small[EXITS], roomy[EXITS])
            grown += roomy[EXITS].shape[0] > 1
        assert m.accept_string(text[i:i + 1])
    assert grown  # (some state has more exits than the tight buffer holds)


def test_a_walk_plans_buffers_are_the_parts_of_the_block_the_mask_kernel_takes(compiler):
    """``plan_buffers`` returns one int32 block and the four buffers a plan writes: the kernel
    that takes the block slices the same memory out of it (``plan_views``)."""
    slices = compiler.compile_grammar(SQL)._runtime.slices
    block, *parts = slices.plan_buffers()
    assert [p.shape[0] for p in parts] == [block[0], block[1], block[1], block[1]]
    assert sum(p.shape[0] for p in parts) == block.shape[0] - 2
    for k, part in enumerate(parts):
        part[:] = k + 1
    assert block[2:].tolist() == [k + 1 for k, p in enumerate(parts) for _ in range(p.shape[0])]


@pytest.mark.parametrize("max_len", [0, 1, 5, 10, 11, 29, 30, 31, 100])
def test_survival_depth_of_bounded_strings(compiler, max_len):
    cg = compiler.compile_json_schema({"type": "string", "maxLength": max_len})
    slices = cg._runtime.slices
    k = _json_cover(slices)
    m = lg.GrammarMatcher(cg)
    assert m.accept_string('"')
    for used in range(min(max_len, 35) + 1):
        (state,) = {int(x) for x in m._top}
        h = slices.survival_depth(k, state, cg.rtn)
        left = max_len - used
        # exact below the limit; at or above it, anything from the limit to the true depth
        assert (h == left) if left < 30 else (30 <= h <= left), (max_len, used, h)
        if used < max_len:
            assert m.accept_string("é" if used % 2 else "a")  # one character, one or two bytes


def test_unbounded_string_survives_everything(compiler):
    cg = compiler.compile_json_schema({"type": "string"})
    slices = cg._runtime.slices
    m = lg.GrammarMatcher(cg)
    assert m.accept_string('"ab')
    (state,) = {int(x) for x in m._top}
    assert slices.survival_depth(_json_cover(slices), state, cg.rtn) == math.inf


def _json_cover(slices: SliceSet) -> int:
    """Index of the JSON-string cover (its longest bounded slice: 30 characters)."""
    cover = next(sl.cover for sl in slices if sl.name.startswith("json"))
    k = next(k for k, (c, _, _) in enumerate(slices.covers) if c is cover)
    assert slices.covers[k][1] == 30
    return k


def _cover_edges_by_numpy(cover, rtn):
    """The search input of a cover, written with numpy (the kernel's oracle)."""
    touch = np.zeros((cover.num_classes, rtn.num_classes), dtype=bool)
    touch[cover.byte_class, rtn.byte_class] = True
    q, cc = np.nonzero(cover.trans >= 0)  # row-major: edges grouped by state
    to = cover.trans[q, cc]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(q, minlength=cover.num_states))])
    edge, cls = np.nonzero(touch[cc])
    cls_ptr = np.concatenate([[0], np.cumsum(np.bincount(edge, minlength=to.shape[0]))])
    first = np.unique(cls[cls_ptr[ptr[cover.start]]:cls_ptr[ptr[cover.start + 1]]])
    boundary = cover.final & (cover.trans == cover.trans[cover.start]).all(axis=1)
    return [ptr, to, cover.final[to], cls_ptr, cls, first, boundary]


def test_cover_edges_kernel_matches_numpy(compiler):
    """Every cover's search input, made for all covers in one kernel call, is what numpy makes of it."""
    for schema in SCHEMAS:
        cg = compiler.compile_json_schema(schema)
        slices = cg._runtime.slices
        for k, (cover, _, _) in enumerate(slices.covers):
            got = slices.cover_edges(k, cg.rtn)
            for a, b in zip(got, _cover_edges_by_numpy(cover, cg.rtn), strict=True):
                assert a.tolist() == b.astype(np.int64).tolist(), schema


def test_walk_plan_takes_a_slice_whole_exactly_when_its_cover_survives(compiler):
    """A slice is taken whole iff its cover's survival depth reaches its bound, with one latitude:
    a depth known only to reach the longest bounded slice (through a wider cover) may leave an
    unbounded slice to be walked. A state that takes no slice walks the unsliced trie instead of
    the slices (every token once either way): the trie of every token but whitespace, whose slices
    it takes whole (a JSON value's leading whitespace) or walks beside it."""
    from logitgate.engine._survival import dies_at_once

    unsliced_plans = 0
    for schema in SCHEMAS:
        cg = compiler.compile_json_schema(schema)
        rtn, slices = cg.rtn, cg._runtime.slices
        assert slices.unsliced is not None
        everything = _subtrees(slices.trie, [slices.unsliced[0]], [slices.unsliced[1]])
        index = {id(c): k for k, (c, _, _) in enumerate(slices.covers)}
        for s in range(rtn.num_states):
            taken, starts, ends, exits = slices.walk_plan(s, rtn)
            walked = _subtrees(slices.trie, starts, ends)
            enterable = _first_bytes(rtn, s)
            exits = set(exits.tolist())
            assert not exits & walked
            assert bool(exits) <= bool(rtn.final[s])  # (only a state that may pop has exits here)
            union = np.zeros_like(slices.slices[0].bitset)
            for j in taken:
                union |= slices.slices[j].bitset
            assert np.array_equal(slices.union(taken), union)
            # walked: the subtrees the state can enter, of the unsliced trie and the slices kept
            # apart (whitespace) not taken when no slice the unsliced trie holds is taken whole, else
            # of each slice not taken; the others are exits if it may pop
            in_unsliced = not any(not slices.slices[j].apart for j in taken)
            groups = [(sl.name, _subtrees(slices.trie, [sl.first], [sl.end])) for j, sl in enumerate(slices)
                      if j not in taken and (sl.apart or not in_unsliced)]
            if in_unsliced:
                groups.append(("unsliced", everything))
            unsliced_plans += in_unsliced
            for name, mine in groups:
                enters = {r for r in mine if slices.trie.node_byte[r] in enterable}
                assert mine & walked == enters, (schema, s, name)
                assert mine & exits == (mine - walked if rtn.final[s] else set()), (schema, s, name)
            assert walked | exits <= set().union(*(mine for _, mine in groups))
            for j, sl in enumerate(slices):
                whole = j in taken
                if sl.cover is None:
                    assert not whole
                    continue
                k = index[id(sl.cover)]
                first = slices.cover_edges(k, rtn)[5]
                if dies_at_once(s, rtn.trans, rtn.num_classes, rtn.chain_ptr, rtn.chain_target, first):
                    assert not whole, (schema, s, sl.name)
                    continue
                h = slices.survival_depth(k, s, rtn)
                if sl.max_chars is not None:
                    assert whole == (sl.max_chars <= h), (schema, s, sl.name, h)
                elif whole:
                    assert h == math.inf, (schema, s, sl.name)
    assert unsliced_plans  # (most states take no slice whole)


def _subtrees(trie, starts, ends) -> set[int]:
    """The top-level nodes of the trie ranges ``starts[i]:ends[i]``."""
    out = set()
    for i, end in zip(starts, ends, strict=True):
        while i < end:
            out.add(int(i))
            i = int(trie.node_end[i])
    return out


def test_a_cover_dies_at_once_only_where_a_search_finds_depth_zero(compiler):
    """The plan's shortcut (no search where some character's first byte is taken neither by the
    state nor by a rule its call chains enter) agrees with the search itself: where it says so, the
    survival depth is 0, at states that call rules (an operand, a JSON value) as at plain ones.
    (Not the converse: a character may die at a later byte.)"""
    from logitgate.engine._survival import dies_at_once, survival_search
    from logitgate.engine.slices import MAX_PAIRS

    expression = 'root ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" root ")" | "-" term | [a-z]+ "(" root ")"'
    grammars = [compiler.compile_json_schema(schema) for schema in SCHEMAS] + [compiler.compile_grammar(expression),
                                                                              compiler.compile_grammar(SQL)]
    verdicts = {True: 0, False: 0}
    calling = 0
    for cg in grammars:
        rtn, slices = cg.rtn, cg._runtime.slices
        starts = slices._cover_params[0]
        for k in range(len(slices.covers)):
            ptr, to, fin, cls_ptr, cls, first, boundary = slices.cover_edges(k, rtn)
            for s in range(rtn.num_states):
                quick = dies_at_once(s, rtn.trans, rtn.num_classes, rtn.chain_ptr, rtn.chain_target, first)
                lower = np.zeros(rtn.num_states, dtype=np.int16)
                depth = survival_search(s, 64, MAX_PAIRS, rtn.trans, rtn.num_classes, rtn.chain_ptr, rtn.chain_target,
                                        starts[k], ptr, to, fin, cls_ptr, cls, boundary, lower)
                if quick:
                    assert depth == 0, (k, s, depth)
                verdicts[quick] += 1
                calling += quick and rtn.chain_ptr[s + 1] > rtn.chain_ptr[s]
    assert verdicts[True] and verdicts[False] and calling


def _first_bytes(rtn, s) -> set[int]:
    """Bytes ``s`` takes by a transition or a call chain (inside its frame)."""
    tops = [s, *rtn.chain_target[rtn.chain_ptr[s]:rtn.chain_ptr[s + 1]].tolist()]
    return {b for b in range(256) for t in tops if rtn.trans[t * rtn.num_classes + rtn.byte_class[b]] >= 0}


@pytest.mark.parametrize("density", [0.0, 1e-4, 0.003, 0.2, 1.0])
def test_listing_a_row_and_its_rejected_tokens(density):
    from logitgate.engine.masks import _rejected_ids, _row_to_ids

    rng = np.random.default_rng(int(density * 1e4))
    bits = rng.random(300 * 32) < density
    bits[31] = density > 0.1  # the sign bit of a word
    row = np.packbits(bits, bitorder="little").view(np.int32)
    n = int(bits.sum())
    assert _row_to_ids(row, n).tolist() == np.flatnonzero(bits).tolist()
    # rejected: the tokens of a base set (here: a random half of all ids) whose bit is clear
    in_base = rng.random(bits.shape[0]) < 0.5
    in_base[31] = True
    base = np.packbits(in_base, bitorder="little").view(np.int32)
    clear = np.flatnonzero(in_base & ~bits)
    assert _rejected_ids(row, base, clear.shape[0]).tolist() == clear.tolist()


def test_a_token_ending_inside_a_character_counts_that_character():
    from logitgate.engine.slices import _split_partial

    assert _split_partial("né".encode()) == ("né", None)
    assert _split_partial(b"ab\xe4\xbd") == ("ab", (0x4F40, 0x4F7F))  # 你 and its 63 neighbours
    assert _split_partial(b"\xe0") == ("", (0x800, 0xFFF))  # E0 is followed by A0..BF only
    assert _split_partial(b"\xed") == ("", (0xD000, 0xD7FF))  # no surrogates
    assert _split_partial(b"\xf4\x8f") == ("", (0x10F000, 0x10FFFF))
    assert _split_partial(b"\x80ab") == (None, None)  # starts inside a character
    assert _split_partial(b"a\xe4b") == (None, None)  # a character cut short, then more


def test_tokens_ending_inside_a_character_join_the_text_slices(compiler):
    """Such a token sits in the first family holding its text and a way to finish its last character,
    counted with that character; the rest slice keeps none of them."""
    rt = compiler.compile_json_schema({"type": "string"})._runtime
    tokens = load_bundled("llama3").token_bytes
    where = {int(t): sl for sl in rt.slices for t in sl.token_ids}
    cut = [t for t in where if tokens[t] and _cut_short(tokens[t])]
    assert len(cut) > 500
    for t in cut:
        sl = where[t]
        assert sl.name.startswith(("text", "json")), (tokens[t], sl.name)
        n = len(tokens[t][:-len(_cut_short(tokens[t]))].decode()) + 1
        lo = int(sl.name.split("-")[0][4:])
        assert lo <= n and (sl.max_chars is None or n <= sl.max_chars), (tokens[t], sl.name)


def _cut_short(b: bytes) -> bytes:
    """The unfinished character at the end of ``b`` (empty if none, or if ``b`` is not text then one)."""
    try:
        b.decode()
        return b""
    except UnicodeDecodeError as e:
        return b[e.start:] if e.reason == "unexpected end of data" else b""


def test_open_buckets_of_short_tokens_are_bounded_by_their_longest(compiler):
    """``lower11-`` (no token longer than 64 characters) gets its longest token's length as its bound,
    so a bounded string with room for it takes it whole; ``text31-`` (longer tokens) stays open."""
    from logitgate.engine.slices import MAX_BOUNDED_CHARS

    cg = compiler.compile_json_schema({"type": "string", "maxLength": 100})
    slices = cg._runtime.slices
    byname = {sl.name: sl for sl in slices}
    tokens = load_bundled("llama3").token_bytes
    lower = byname["lower11-"]
    longest = max(len(tokens[int(t)]) for t in lower.token_ids)
    assert lower.max_chars == longest <= MAX_BOUNDED_CHARS
    assert byname["text31-"].max_chars is None
    m = lg.GrammarMatcher(cg)
    for text, room in (('"', 100), ('"' + "a" * 80, 20)):
        m.reset()
        assert m.accept_string(text)
        (state,) = {int(x) for x in m._top}
        taken, _, _, _ = slices.walk_plan(state, cg.rtn)
        assert (slices.slices.index(lower) in taken) == (room >= longest), room


def test_a_mask_is_a_list_of_ids_only_while_the_list_is_short_and_writes_the_same_either_way(compiler):
    """A state's token set is kept as accepted or rejected ids only while there are at most a quarter
    as many ids as bitset words (a long list is slower to write than a bitset is to copy); written
    over a row or OR-ed into one, every form gives the row of its accepted tokens."""
    from logitgate.engine.masks import _NO_EXITS, TokenSetKind

    rt = compiler._runtime
    short = rt.num_words // 4
    rng = np.random.default_rng(3)
    kinds = set()
    for schema in SCHEMAS[2:4] + SCHEMAS[6:9]:
        cg = compiler.compile_json_schema(schema)
        for s in range(cg.rtn.num_states):
            sm = cg.state_mask(s)
            kind, data, _, count = sm
            kinds.add(kind)
            if kind != TokenSetKind.BITSET:
                assert data.shape[0] <= short, (schema, s)
            over = rng.integers(-2**31, 2**31, rt.num_words, dtype=np.int64).astype(np.int32)
            write_mask(sm, over, True, rt.base_row)
            assert int(np.unpackbits(over.view(np.uint8)).sum()) == count, (schema, s)
            assert not (over & ~rt.base_row).any()  # (only tokens of the trie)
            noise = rng.integers(-2**31, 2**31, rt.num_words, dtype=np.int64).astype(np.int32)
            ored = noise.copy()
            write_mask(sm, ored, False, rt.base_row)
            assert np.array_equal(ored, noise | over), (schema, s)
    # (llama3's string states reject more ids than a quarter of its words: no list of rejected ids)
    assert kinds == {TokenSetKind.BITSET, TokenSetKind.ACCEPTED}
    # the three forms of one random set (rejected ids, as a Qwen2.5 string state keeps them, included)
    trie_ids = rt.trie.tok_ids
    accepted = np.sort(rng.choice(trie_ids, size=trie_ids.shape[0] - 50, replace=False)).astype(np.int32)
    bitset = np.zeros(rt.num_words, dtype=np.int32)
    np.bitwise_or.at(bitset.view(np.uint32), accepted >> 5, np.uint32(1) << (accepted & 31).astype(np.uint32))
    rejected = np.setdiff1d(trie_ids, accepted).astype(np.int32)
    for kind, data in ((TokenSetKind.ACCEPTED, accepted), (TokenSetKind.REJECTED, rejected),
                       (TokenSetKind.BITSET, bitset)):
        sm = (kind, data, _NO_EXITS, accepted.shape[0])
        for overwrite in (True, False):
            noise = rng.integers(-2**31, 2**31, rt.num_words, dtype=np.int64).astype(np.int32)
            row = noise.copy()
            write_mask(sm, row, overwrite, rt.base_row)
            assert np.array_equal(row, bitset if overwrite else noise | bitset), (kind, overwrite)


def test_a_state_that_can_only_pop_exits_at_every_first_byte_as_a_walk_finds(compiler):
    """A dead-end state (final, nothing to read) skips the trie walk: no token stays in its frame and
    every top-level node of the unsliced trie is an exit -- what walking the trie from it finds."""
    import dataclasses

    cg = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "array", "items": {
        "type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"],
        "additionalProperties": False}}}, "required": ["a"], "additionalProperties": False})
    rt = cg._runtime
    trans, flags, pack = cg.rtn.step_pack
    plain_flags = flags.copy()
    plain_flags[2] = 0  # (no state is known to be a dead end: every one is walked)
    walked = dataclasses.replace(cg.rtn, step_pack=(trans, plain_flags, pack))
    dead = np.flatnonzero(cg.rtn.dead_end).tolist()
    assert len(dead) >= 2  # (the end of the inner object and of the outer one)
    for s in dead:
        fast = compute_state_mask(s, cg.rtn, rt.slices, rt.base_row, rt.scratch())
        slow = compute_state_mask(s, walked, rt.slices, rt.base_row, rt.scratch())
        assert fast[COUNT] == slow[COUNT] == 0 and not _ids(fast, rt)
        assert sorted(fast[EXITS].tolist()) == sorted(slow[EXITS].tolist()) and fast[EXITS].shape[0] > 0


@pytest.mark.parametrize("schema", [{"type": "string", "maxLength": 32},
                                    {"type": "string", "minLength": 4, "maxLength": 9},
                                    {"type": ["string", "null"], "maxLength": 6}])
def test_a_counted_strings_character_boundaries_take_its_string_tokens_by_their_length(compiler, schema):
    """At the boundary after ``k`` of at most ``hi`` characters, the string-character tokens of at most
    ``hi - k`` characters are taken as one set and only the other slices walked: the same tokens and
    exits as a walk of the whole trie, at every layer, the last ones included."""
    cg = compiler.compile_json_schema(schema)
    rtn, rt = cg.rtn, cg._runtime
    ((rule, (m, _, _, hi)),) = rtn.layers.items()
    first = int(np.flatnonzero(rtn.rule_of_state == rule)[0])
    whole = _whole_trie_slice(rt)
    for k in range(hi + 1):
        state = first + k * m
        assert rtn.counted_chars_left(state) == hi - k
        assert rtn.counted_chars_left(state + 1) == -1  # (inside a character: the plan decides)
        fast = compute_state_mask(state, rtn, rt.slices, rt.base_row, rt.scratch())
        plain = compute_state_mask(state, rtn, whole, rt.base_row, rt.scratch())
        assert _ids(fast, rt) == _ids(plain, rt), k
        assert fast[COUNT] == len(_ids(plain, rt))
        assert (fast[EXITS].shape[0] > 0) == (plain[EXITS].shape[0] > 0)
    strings = rt.slices.string_ids_up_to(hi)
    assert strings.shape[0] == rt.slices.strings_up_to(hi)[1] and (rt.slices.string_chars[strings] <= hi).all()
    assert _ids((0, rt.slices.strings_up_to(hi)[0], None, 0), rt) == set(strings.tolist())


def test_a_counted_strings_tokens_that_close_it_are_resolved_against_the_object_around_it(compiler):
    """The tokens that end a counted string (a quote, then what the object reads) leave its frame:
    they are found by the walk of the slices outside strings and resolved against the stack."""
    cg = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3},
                                                                        "b": {"type": "integer"}},
                                       "required": ["a"], "additionalProperties": False})
    info = cg.tokenizer_info
    by_bytes = {b: i for i, b in enumerate(info.token_bytes)}
    m = lg.GrammarMatcher(cg)
    assert m.accept_string('{"a": "xy')
    allowed = set(m.get_next_token_ids().tolist())
    for text, ok in ((b'"}', True), (b'",', True), (b'":', False), (b"z", True), (b"zz", False), (b'z"}', True)):
        if text in by_bytes:
            assert (by_bytes[text] in allowed) == ok, text
    assert m.accept_string("z")
    allowed = set(m.get_next_token_ids().tolist())
    assert by_bytes[b"z"] not in allowed and by_bytes[b'"}'] in allowed


def test_a_counted_string_whose_rule_may_end_after_a_character_is_planned_as_before(compiler):
    """Content counted without its closing quote (a chunk of a long string: the caller reads on after
    it) has no character count to go by -- a caller may take more characters -- so its states are
    planned and walked as any other's: a chunk's states report no count, and their masks are exact."""
    cg = compiler.compile_json_schema({"type": "string", "maxLength": 9000})
    rtn, rt = cg.rtn, cg._runtime
    # (the chunk: exactly its length; the last parts, which read the closing quote, are called too)
    ((rule, (m, _, _, hi)),) = [(r, lay) for r, lay in rtn.layers.items() if lay[2] == lay[3]]
    first = int(np.flatnonzero(rtn.rule_of_state == rule)[0])
    whole = _whole_trie_slice(rt)
    for k in (0, hi - 3, hi - 1, hi):
        state = first + k * m
        assert rtn.counted_chars_left(state) == -1
        fast = compute_state_mask(state, rtn, rt.slices, rt.base_row, rt.scratch())
        plain = compute_state_mask(state, rtn, whole, rt.base_row, rt.scratch())
        assert _ids(fast, rt) == _ids(plain, rt), k


def test_string_characters_are_counted_as_the_slices_count_them(compiler):
    """A token's count is its characters (a prefix's too); an unfinished last character counts as one;
    tokens with a character a string must escape (a newline, a quote) are not counted."""
    rt = compiler.compile_json_schema({"type": "string", "maxLength": 3})._runtime
    info, chars = rt.info, rt.slices.string_chars
    by_bytes = {b: i for i, b in enumerate(info.token_bytes)}
    for text, n in ((b"a", 1), (b" the", 4), (b"hello", 5), ("é".encode(), 1), (b'"', 0), (b"\n", 0), (b"\\", 0)):
        if text in by_bytes:
            assert chars[by_bytes[text]] == n, text
    from logitgate.engine.slices import _split_partial

    partial = [(i, text) for i, b in enumerate(info.token_bytes) if chars[i]
               for text, tail in [_split_partial(b)] if tail is not None]
    assert len(partial) > 10 and all(chars[i] == len(text) + 1 for i, text in partial)


def test_a_key_start_survives_as_deep_as_the_other_keys_rule_it_enters(compiler):
    """An object of optional members with other keys allowed: each key start is its own state and
    enters the "other key" rule through a call chain. A state survives at least as deep as a rule its
    chains enter (one member of the state set surviving is enough), which answers for it once the
    rule's depth reaches the cover's limit -- no search of its own. The masks stay a whole-trie walk's."""
    names = [f"prefer-{w}" for w in ("alpha", "beta", "gamma", "delta")] + [f"no-{w}" for w in ("one", "two", "three")]
    schema = {"type": "object", "properties": {n: {"enum": ["off", "error"]} for n in names}}
    cg = compiler.compile_json_schema(schema)
    rtn, rt = cg.rtn, cg._runtime
    sl, whole = rt.slices, _whole_trie_slice(rt)
    m = lg.GrammarMatcher(cg)
    text = '{"prefer-beta": "off", "no-two": "error", "x-other": 1, "y": "error"}'
    entered = 0
    for i in range(len(text) + 1):
        for s in m._top.tolist():
            fast = compute_state_mask(s, rtn, sl, rt.base_row, rt.scratch())
            plain = compute_state_mask(s, rtn, whole, rt.base_row, rt.scratch())
            assert _ids(fast, rt) == _ids(plain, rt), text[:i]
            for t in rtn.chain_target[rtn.chain_ptr[s]:rtn.chain_ptr[s + 1]].tolist():
                for k in range(len(sl.covers)):
                    assert sl.survival_depth(k, s, rtn) >= min(sl.survival_depth(k, t, rtn), sl.covers[k][1]), (i, k)
                entered += 1
        if i < len(text):
            assert m.accept_string(text[i])
    assert entered


def test_the_other_keys_rule_of_many_declared_names_is_searched_to_the_limit(compiler):
    """An object of 80 optional members with other keys allowed: the "other key" rule (any string but
    the declared names, in every spelling) has a state per prefix of a name, more (cover state,
    state set) pairs than one state's search may visit. A key start enters it, and that search,
    remembered for every key start, gets a larger budget: the key start survives as deep as an
    unbounded search of the rule finds, up to the cover's limit. (Stopped at ``MAX_PAIRS``, it came
    back 18 where the limit asked 30, and each of the 80 key starts searched the names again: ~4 ms
    a first visit on Llama-3.)"""
    import random

    from logitgate.engine._survival import INFINITE, survival_search

    rng = random.Random(5)
    syllables = ["acu", "te", "fla", "cid", "pa", "ra", "ly", "sis", "cho", "le", "mal", "ria", "se", "ve", "re"]
    names: set[str] = set()
    while len(names) < 80:
        names.add("_".join("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(3)))
    cg = compiler.compile_json_schema({"type": "object", "properties": {n: {} for n in sorted(names)}})
    rtn, sl = cg.rtn, cg._runtime.slices
    m = lg.GrammarMatcher(cg)
    assert m.accept_string('{"')
    starts = sl._cover_params[0]
    deep = 0
    for s in m._top.tolist():
        for t in rtn.chain_target[rtn.chain_ptr[s]:rtn.chain_ptr[s + 1]].tolist():
            for k, (_, limit, _) in enumerate(sl.covers):
                ptr, to, fin, cls_ptr, cls, _, boundary = sl.cover_edges(k, rtn)
                lower = np.zeros(rtn.num_states, dtype=np.int16)
                unbounded = survival_search(t, 2 * limit, 1 << 18, rtn.trans, rtn.num_classes, rtn.chain_ptr,
                                            rtn.chain_target, starts[k], ptr, to, fin, cls_ptr, cls, boundary, lower)
                want = limit if unbounded == INFINITE else min(unbounded, limit)
                assert sl.survival_depth(k, s, rtn) >= want, (k, unbounded)
                deep += want >= limit
    assert deep  # (some cover the other keys survive to its limit: letters, identifiers)
