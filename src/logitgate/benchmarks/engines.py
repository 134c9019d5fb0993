"""Uniform adapters over logitgate and its peers (llguidance, XGrammar) for the benchmarks.

Every adapter answers the same three questions, single-threaded, on one tokenizer:
``compile(kind, source)`` (raises on a refused grammar), ``new_matcher(compiled)``, and
``step(matcher, token) -> bool`` = "fill the next-token mask, check the token is allowed,
accept it" -- the unit MaskBench times. ``can_end(matcher)`` asks whether a stop token is
allowed now.

Kinds: ``json_schema`` (source: dict), ``regex``, ``ebnf`` (GBNF text), ``builtin_json``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

__all__ = ["ENGINES", "make_engine"]


class _XgrammarStyleSteps:
    """``step``/``can_end`` for matchers with xgrammar's method names (logitgate's and xgrammar's)."""

    bitmask: Any
    stop: int

    def step(self, m: Any, token: int) -> bool:
        bm = self.bitmask
        m.fill_next_token_bitmask(bm, 0)
        if not (int(bm[0, token >> 5]) >> (token & 31)) & 1:
            return False
        return bool(m.accept_token(token))

    def can_end(self, m: Any) -> bool:
        bm = self.bitmask
        m.fill_next_token_bitmask(bm, 0)
        return bool((int(bm[0, self.stop >> 5]) >> (self.stop & 31)) & 1)


class LogitgateEngine(_XgrammarStyleSteps):
    name = "logitgate"

    def __init__(self, tokenizer: str):
        from ..engine.compiler import GrammarCompiler
        from ..tokenizer.bundled import load_bundled

        self.info = load_bundled(tokenizer)
        self.compiler = GrammarCompiler(self.info, max_threads=1).warm_up()
        self.bitmask = np.full((1, (self.info.vocab_size + 31) // 32), -1, dtype=np.int32)
        self.stop = self.info.stop_token_ids[0]

    def compile(self, kind: str, source: Any) -> Any:
        c = self.compiler
        if kind == "json_schema":
            return c.compile_json_schema(source)
        if kind == "regex":
            return c.compile_regex(source)
        if kind == "ebnf":
            return c.compile_grammar(source)
        if kind == "builtin_json":
            return c.compile_builtin_json()
        raise ValueError(kind)

    def new_matcher(self, compiled: Any) -> Any:
        from ..engine.matcher import GrammarMatcher

        return GrammarMatcher(compiled)



class LLGuidanceEngine:
    name = "llguidance"

    def __init__(self, tokenizer: str):
        import llguidance
        import llguidance.tiktoken

        from ..tokenizer.bundled import bundled_encoding, load_bundled

        self.ll = llguidance
        info = load_bundled(tokenizer)
        self.stop = info.stop_token_ids[0]
        self.tok = llguidance.tiktoken.lltokenizer_from_encoding(
            bundled_encoding(tokenizer), n_vocab=info.vocab_size, eos_token=self.stop)
        self.bitmask = np.full((1, (info.vocab_size + 31) // 32), -1, dtype=np.int32)

    def compile(self, kind: str, source: Any) -> Any:
        ll = self.ll
        if kind == "json_schema":
            grammar = ll.LLMatcher.grammar_from_json_schema(
                source, defaults={"whitespace_flexible": True})
        elif kind == "regex":
            grammar = ll.LLMatcher.grammar_from_regex(source)
        elif kind == "ebnf":
            grammar = ll.grammar_from("gbnf", source)
        elif kind == "builtin_json":
            grammar = ll.LLMatcher.grammar_from_json_schema({}, defaults={"whitespace_flexible": True})
        else:
            raise ValueError(kind)
        m = ll.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return grammar

    def new_matcher(self, compiled: Any) -> Any:
        return self.ll.LLMatcher(self.tok, compiled, log_level=0)

    def step(self, m: Any, token: int) -> bool:
        from llguidance.numpy import fill_next_token_bitmask

        bm = self.bitmask
        fill_next_token_bitmask(m, bm, 0)
        if not (int(bm[0, token >> 5]) >> (token & 31)) & 1:
            return False
        return bool(m.consume_token(token))

    def can_end(self, m: Any) -> bool:
        return bool(m.is_accepting())


class XGrammarEngine(_XgrammarStyleSteps):
    name = "xgrammar"

    def __init__(self, tokenizer: str):
        import torch
        import xgrammar as xgr

        from ..tokenizer.bundled import load_bundled

        torch.set_num_threads(1)
        self.xgr = xgr
        info = load_bundled(tokenizer)
        self.stop = info.stop_token_ids[0]
        vocab = [b if not info.special_mask[i] else b"" for i, b in enumerate(info.token_bytes)]
        self.tok = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, vocab_size=info.vocab_size,
                                     stop_token_ids=list(info.stop_token_ids))
        self.compiler = xgr.GrammarCompiler(self.tok, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)

    def compile(self, kind: str, source: Any) -> Any:
        c = self.compiler
        if kind == "json_schema":
            return c.compile_json_schema(json.dumps(source), any_whitespace=True, strict_mode=False)
        if kind == "regex":
            return c.compile_regex(source)
        if kind == "ebnf":
            return c.compile_grammar(source)
        if kind == "builtin_json":
            return c.compile_builtin_json_grammar()
        raise ValueError(kind)

    def new_matcher(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)



ENGINES = {"logitgate": LogitgateEngine, "llguidance": LLGuidanceEngine, "xgrammar": XGrammarEngine}


def make_engine(name: str, tokenizer: str) -> Any:
    try:
        cls = ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}") from None
    return cls(tokenizer)
