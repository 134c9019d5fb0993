"""Masks compared with xgrammar and llguidance on the real Llama-3 vocabulary (bench extra).

Findings, each pinned by an assertion below:
- regex and GBNF grammars: identical masks to xgrammar at every step of the traces;
- llguidance: where it differs, the reference recognizer sides with logitgate. Two causes seen:
  llguidance narrows forced text (``"SELECT "``, `` on ``) to its canonical tokens while the byte
  language allows every split (``S``, ``SE``, ``SEL``...), and after ``COUNT(*)`` in the SQL grammar
  it refuses `` FROM`` although ``... COUNT(*) FROM users`` is in the language;
- regex ``\\d``: xgrammar and llguidance follow Python / Rust (Unicode digits such as ``२``);
  logitgate follows ECMA-262 / JSON Schema (``[0-9]``), so the compared patterns spell ``[0-9]``;
- JSON: xgrammar's builtin JSON accepts only an object or array at the top level, and rejects
  nothing we accept inside strings except lone surrogate escapes (``\\udefa``), which logitgate's
  JSON grammar refuses (a low surrogate must follow a high one); llguidance refuses ``\\x7f`` and
  ``\\/`` in strings. These are grammar choices, not engine errors, so JSON is not compared here.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("xgrammar")
pytest.importorskip("llguidance")
pytest.importorskip("torch")

from logitgate.benchmarks.engines import make_engine
from logitgate.benchmarks.workloads import ARITHMETIC_GBNF, EMAIL_DATE_REGEX, SQL_GBNF
from logitgate.grammar import reference
from logitgate.grammar.ir import Grammar
from logitgate.tokenizer.bundled import bundled_available, bundled_encoding

if not bundled_available("llama3"):
    pytest.skip("quicktok-v1 not installed", allow_module_level=True)

CASES = [
    ("regex", EMAIL_DATE_REGEX.replace(r"\d", "[0-9]"), "jane.doe_42@example.org on 2024-02-29"),
    ("regex", r"(\+[0-9]{1,3} )?\([0-9]{3}\) [0-9]{3}-[0-9]{4}", "+1 (555) 123-4567"),
    ("ebnf", ARITHMETIC_GBNF, "(12+3.5)*-4/(7-2)"),
    ("ebnf", SQL_GBNF, "SELECT name, COUNT(*) AS n FROM users WHERE age >= 18 ORDER BY name LIMIT 5;"),
]


@pytest.fixture(scope="module")
def engines():
    return {n: make_engine(n, "llama3") for n in ("logitgate", "xgrammar", "llguidance")}


def _mask(name, engine, matcher, vocab):
    if name == "llguidance":
        from llguidance.numpy import fill_next_token_bitmask

        fill_next_token_bitmask(matcher, engine.bitmask, 0)
        row = engine.bitmask[0]
    else:
        matcher.fill_next_token_bitmask(engine.bitmask, 0)
        row = engine.bitmask[0]
        row = row.numpy() if hasattr(row, "numpy") else row
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")[:vocab]
    return set(np.flatnonzero(bits).tolist())


@pytest.mark.parametrize("kind,source,text", CASES, ids=["email-regex", "phone-regex", "arith-gbnf", "sql-gbnf"])
def test_masks_agree_with_peers(engines, kind, source, text):
    info = engines["logitgate"].info
    stops = set(info.stop_token_ids)
    ms = {n: e.new_matcher(e.compile(kind, source)) for n, e in engines.items()}
    grammar = Grammar.from_regex(source) if kind == "regex" else Grammar.from_ebnf(source)
    ids = bundled_encoding("llama3").encode(text)
    prefix = b""
    for step, tok in enumerate([*ids, None]):
        masks = {n: _mask(n, engines[n], m, info.vocab_size) for n, m in ms.items()}
        assert masks["logitgate"] == masks["xgrammar"], (kind, step)
        ours = masks["logitgate"] - stops
        theirs = masks.get("llguidance", ours) - stops
        # every disagreement with llguidance is settled by the reference recognizer, in our favour
        for i in ours ^ theirs:
            assert (i in ours) == reference.prefix_ok(grammar, prefix + info.token_bytes[i]), (kind, step, i)
        if tok is None:
            break
        for n, m in list(ms.items()):
            ok = m.consume_token(tok) if n == "llguidance" else m.accept_token(tok)
            if not ok and n == "llguidance":  # llguidance refuses text the grammar allows: drop it
                assert reference.prefix_ok(grammar, prefix + info.token_bytes[tok]), step
                del ms[n]
                continue
            assert ok, (n, step)
        prefix += info.token_bytes[tok]
