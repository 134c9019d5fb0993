"""TokenizerInfo: exact token bytes for real vocabularies, specials, padding, trie, save/load."""

from __future__ import annotations

import numpy as np
import pytest

from logitgate.errors import TokenizerError
from logitgate.tokenizer import TokenizerInfo, TokenTrie, VocabType
from logitgate.tokenizer.bundled import bundled_available, bundled_encoding, load_bundled
from logitgate.tokenizer.decoding import byte_level_bytes, byte_level_decoder

TEXTS = [
    "Hello, world!",
    "  leading spaces and\ttabs\n\n\nnewlines   ",
    "Grüße aus Köln — naïve café",
    "Привет, мир! Ελληνικά γράμματα",
    "日本語のテキストと中文文本，한국어 텍스트",
    "عربى نص עברית",
    "emoji 👍🏽🎉 family 👨‍👩‍👧 flags 🇫🇷",
    "def f(x):\n    return {'a': [1, 2.5e-3, None]}  # comment\n",
    '{"key": "value", "n": -12.5, "list": [true, false, null]}',
    "\u00a0non-breaking\u2003em-space\u200bzero-width",
    "mixed1234567890digits and     runs      of spaces",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 astral ‰ ∑ ∞",
]


def _need(name: str) -> TokenizerInfo:
    if not bundled_available(name):
        pytest.skip(f"package for bundled tokenizer {name} not installed")
    return load_bundled(name)


@pytest.mark.parametrize("name", ["llama3", "qwen2"])
def test_tiktoken_family_bytes_roundtrip(name: str) -> None:
    info = _need(name)
    pytest.importorskip("tiktoken")
    enc = bundled_encoding(name)
    for text in TEXTS:
        ids = enc.encode(text, disallowed_special=())
        assert info.decode(ids) == text.encode("utf-8"), text
        assert not any(info.special_mask[i] for i in ids)


def test_llama3_specials_and_stops() -> None:
    info = _need("llama3")
    assert info.vocab_size == 128_256 and info.num_tokens == 128_256
    eot = info.token_id("<|eot_id|>")
    eos = info.token_id("<|end_of_text|>")
    assert eos == info.eos_token_id and {eos, eot} <= set(info.stop_token_ids)
    assert len(info.special_token_ids) == 256
    assert all(info.special_mask[i] for i in info.special_token_ids)
    trie_ids = set(info.trie.tok_ids.tolist())
    assert not trie_ids & set(info.special_token_ids)
    assert len(trie_ids) == 128_000


def test_qwen2_padding_excluded() -> None:
    info = _need("qwen2")
    assert info.vocab_size == 151_936 and info.num_tokens == 151_665
    assert info.token_bytes[151_700] == b""
    assert info.special_mask[151_665:].all()
    assert int(info.trie.tok_ids.max()) < info.num_tokens
    assert info.token_id("<|im_end|>") in info.stop_token_ids
    assert info.special_mask[info.token_id("<|im_start|>")]


def test_sentencepiece_bytes_roundtrip() -> None:
    info = _need("mistral-sp")
    spm = pytest.importorskip("sentencepiece")
    from logitgate.tokenizer.bundled import bundled_sentencepiece

    sp = bundled_sentencepiece()
    assert isinstance(sp, spm.SentencePieceProcessor)
    assert info.vocab_type is VocabType.SENTENCEPIECE
    for text in TEXTS:
        ids = sp.encode(text)
        # SentencePiece prepends a space (the dummy prefix) and normalizes nothing else here.
        assert info.decode(ids) == b" " + text.encode("utf-8") or info.decode(ids).decode() == " " + text, text
    byte_ids = [i for i in range(info.num_tokens) if sp.is_byte(i)]
    assert len(byte_ids) == 256
    assert sorted(info.token_bytes[i] for i in byte_ids) == [bytes([b]) for b in range(256)]
    assert info.eos_token_id == sp.eos_id() and info.special_mask[sp.bos_id()]


def test_tekken_bytes_roundtrip() -> None:
    info = _need("tekken")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    from logitgate.tokenizer.bundled import _files

    tk = MistralTokenizer.from_file(str(_files("tekken")[0])).instruct_tokenizer.tokenizer
    for text in TEXTS:
        ids = tk.encode(text, bos=False, eos=False)
        assert info.decode(ids) == text.encode("utf-8"), text
    assert info.special_mask[: 1000].all() and not info.special_mask[1000:].any()
    assert info.eos_token_id == tk.eos_id


def test_huggingface_byte_level_tokenizer() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TEXTS * 5, trainer)
    info = TokenizerInfo.from_huggingface(tok, vocab_size=640)
    assert info.vocab_type is VocabType.BYTE_LEVEL and info.vocab_size == 640
    for text in TEXTS:
        ids = tok.encode(text).ids
        assert info.decode(ids) == text.encode("utf-8"), text
    im_end = tok.token_to_id("<|im_end|>")
    assert im_end in info.special_token_ids and im_end in info.stop_token_ids
    assert info.special_mask[info.num_tokens:].all()


def test_huggingface_sentencepiece_style_tokenizer() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(TEXTS * 5, trainer)
    info = TokenizerInfo.from_huggingface(tok)
    assert info.vocab_type is VocabType.SENTENCEPIECE
    for text in TEXTS:
        ids = tok.encode(text).ids
        # the token bytes keep the dummy-prefix space that the tokenizer's decoder strips
        assert info.decode(ids) == b" " + tok.decode(ids).encode("utf-8"), text
        assert tok.decode(ids).strip() == text.strip()
    eos = tok.token_to_id("</s>")
    assert eos in info.stop_token_ids and info.special_mask[tok.token_to_id("<s>")]


def test_byte_level_table_is_a_bijection() -> None:
    table = byte_level_decoder()
    assert sorted(table.values()) == list(range(256))
    assert byte_level_bytes("Ġhello") == b" hello"
    assert byte_level_bytes("Ċ") == b"\n"


def test_from_vocab_families_and_padding() -> None:
    info = TokenizerInfo.from_vocab(["▁Hello", "<0x0A>", "world", "</s>"], vocab_type="sentencepiece",
                                    vocab_size=40, special_token_ids=[3], eos_token_id=3)
    assert info.token_bytes[:3] == (b" Hello", b"\n", b"world")
    assert info.token_bytes[3] == b"</s>" and info.stop_token_ids == (3,)
    assert info.special_mask[3] and info.special_mask[4:].all() and not info.special_mask[:3].any()
    assert sorted(info.trie.tok_ids.tolist()) == [0, 1, 2]


@pytest.mark.parametrize("bad", [
    dict(vocab=[b"a"], vocab_size=0),
    dict(vocab=[b"a", b"b"], special_token_ids=[5]),
    dict(vocab=[b"a"], eos_token_id=1),
    dict(vocab=[]),
    dict(vocab=[b"a"], stop_token_ids=[-1]),
])
def test_from_vocab_errors(bad: dict) -> None:
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_vocab(**bad)


def test_trie_structure_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    toks = [bytes(rng.integers(97, 100, size=int(rng.integers(1, 5))).tolist()) for _ in range(200)]
    ids = list(range(len(toks)))
    t = TokenTrie.from_tokens(toks, ids)
    prefixes = {b[:k] for b in toks for k in range(1, len(b) + 1)}
    assert t.num_nodes == len(prefixes) + 1
    for tok_id, b in enumerate(toks):
        node = t.lookup(b)
        assert node > 0 and tok_id in t.token_ids_at(node).tolist()
        assert int(t.node_depth[node]) == len(b)
    # preorder with sorted children: walking nodes in order spells prefixes in sorted order
    spelled = []
    stack: list[bytes] = [b""]
    for n in range(1, t.num_nodes):
        depth = int(t.node_depth[n])
        stack = stack[:depth]
        stack.append(stack[-1] + bytes([int(t.node_byte[n])]))
        spelled.append(stack[-1])
        assert int(t.node_parent[n]) < n and int(t.node_end[n]) > n
    assert spelled == sorted(prefixes)
    assert t.max_depth == max(len(b) for b in toks)


def test_an_empty_trie_is_built_by_the_kernel_a_full_one_is() -> None:
    """A trie of no tokens hands the build kernel bytes of the type a trie of tokens does (a
    writable array where the others are read-only would be a second compile of the kernel)."""
    from logitgate.tokenizer.trie import _build_trie

    empty = TokenTrie.from_tokens([], [])
    TokenTrie.from_tokens([b"ab", b"a"], [0, 1])
    assert empty.num_nodes == 1 and empty.num_tokens == 0
    assert len(_build_trie.signatures) == 1


@pytest.mark.parametrize("seed", range(4))
def test_a_restricted_trie_is_the_trie_of_the_tokens_kept(seed) -> None:
    rng = np.random.default_rng(seed)
    toks = [bytes(rng.integers(97, 100, size=int(rng.integers(1, 6))).tolist()) for _ in range(300)]
    ids = rng.permutation(len(toks))  # (ids in no order; equal byte strings under several ids)
    t = TokenTrie.from_tokens(toks, ids)
    keep = rng.random(len(toks)) < (0.5, 0.0, 1.0, 0.9)[seed]
    got = t.restricted_to(keep)
    kept = [k for k in range(len(toks)) if keep[ids[k]]]
    want = TokenTrie.from_tokens([toks[k] for k in kept], ids[kept])
    for name in ("node_byte", "node_depth", "node_parent", "node_end", "tok_start", "tok_ids"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist(), name
    assert got.max_depth == want.max_depth


@pytest.mark.parametrize("seed", range(3))
def test_children_lists_match_the_preorder_layout(seed) -> None:
    rng = np.random.default_rng(seed)
    toks = [bytes(rng.integers(96, 104, size=int(rng.integers(1, 6))).tolist()) for _ in range(300)]
    one = TokenTrie.from_tokens(toks, range(len(toks)))
    t = one if seed < 2 else TokenTrie.concat([one, TokenTrie.from_tokens([b"x", b"xy", b"z"], [0, 1, 2])])[0]
    kid_ptr, kid_node, kid_pos, kid_byte = t.kids
    for n in range(t.num_nodes):
        children, c = [], n + 1  # the children by the preorder: each next one past the last's subtree
        while c < int(t.node_end[n]):
            children.append(c)
            c = int(t.node_end[c])
        listed = kid_node[kid_ptr[n]:kid_ptr[n + 1]].tolist()
        assert listed == children
        assert kid_byte[kid_ptr[n]:kid_ptr[n + 1]].tolist() == t.node_byte[children].tolist()
        assert [int(kid_pos[c]) for c in children] == list(range(int(kid_ptr[n]), int(kid_ptr[n + 1])))
    roots = np.flatnonzero(t.node_parent < 0)
    assert kid_pos[roots].tolist() == [-1] * len(roots) and kid_node.shape[0] == t.num_nodes - len(roots)
    pack, walk_bytes = t.walk_pack, t.walk_bytes
    assert pack[pack[4]:pack[5]].tolist() == kid_ptr.tolist() and pack[pack[6]:pack[7]].tolist() == kid_pos.tolist()
    assert walk_bytes[:t.num_nodes].tolist() == t.node_byte.tolist() and walk_bytes[t.num_nodes:].tolist() == kid_byte.tolist()


def test_save_load_roundtrip(tmp_path) -> None:
    info = TokenizerInfo.from_vocab([b"a", b"\xff\x00", b"", b"<eos>"], vocab_size=70, special_token_ids=[3],
                                    eos_token_id=3)
    path = info.save(tmp_path / "tok.npz")
    back = TokenizerInfo.load(path)
    assert back.token_bytes == info.token_bytes and back.fingerprint == info.fingerprint
    assert back.stop_token_ids == info.stop_token_ids and back.vocab_size == 70
    other = TokenizerInfo.from_vocab([b"a", b"\xff\x01", b"", b"<eos>"], vocab_size=70, special_token_ids=[3])
    assert other.fingerprint != info.fingerprint
    (tmp_path / "bad.npz").write_bytes(b"not a file")
    with pytest.raises(TokenizerError):
        TokenizerInfo.load(tmp_path / "bad.npz")
