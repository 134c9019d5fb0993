"""logitgate: constrained decoding and logits processing for large language models.

Quick start::

    import logitgate as lg
    tok = lg.TokenizerInfo.from_vocab([b"a", b"b", b"<eos>"], eos_token_id=2, special_token_ids=[2])
    compiler = lg.GrammarCompiler(tok)
    matcher = lg.GrammarMatcher(compiler.compile_regex(r"a+b"))
    mask = lg.allocate_token_bitmask(1, tok.vocab_size)
    matcher.fill_next_token_bitmask(mask, 0)

Public names are imported lazily, so ``import logitgate`` stays cheap and optional
back-ends (torch, triton, transformers) load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "LogitgateError": "logitgate.errors",
    "TokenizerError": "logitgate.errors",
    "GrammarError": "logitgate.errors",
    "EbnfSyntaxError": "logitgate.errors",
    "RegexError": "logitgate.errors",
    "SchemaError": "logitgate.errors",
    "UnsupportedFeatureError": "logitgate.errors",
    "LimitExceededError": "logitgate.errors",
    "MatcherError": "logitgate.errors",
    # vocabulary
    "TokenizerInfo": "logitgate.tokenizer",
    "VocabType": "logitgate.tokenizer",
    # grammars
    "Grammar": "logitgate.grammar.ir",
    # token bitmasks
    "allocate_token_bitmask": "logitgate.kernels.bitmask",
    "reset_token_bitmask": "logitgate.kernels.bitmask",
    "apply_token_bitmask_inplace": "logitgate.kernels.apply_mask",
    "bitmask_from_ids": "logitgate.kernels.bitmask",
    "bitmask_to_ids": "logitgate.kernels.bitmask",
    "bitmask_count": "logitgate.kernels.bitmask",
    "bitmask_test": "logitgate.kernels.bitmask",
    "bitmask_set": "logitgate.kernels.bitmask",
    "bitmask_clear": "logitgate.kernels.bitmask",
    # engine
    "GrammarCompiler": "logitgate.engine.compiler",
    "CompiledGrammar": "logitgate.engine.compiler",
    "GrammarMatcher": "logitgate.engine.matcher",
    "BatchGrammarMatcher": "logitgate.engine.batch",
    "fill_next_token_bitmasks": "logitgate.engine.batch",
    # logits kernels
    "apply_logit_bias_inplace": "logitgate.kernels.bias",
    "apply_penalty_inplace": "logitgate.kernels.penalty",
    "softmax_with_temperature": "logitgate.kernels.softmax",
    # pipeline
    "LogitsPipeline": "logitgate.processors.pipeline",
    "SamplingParams": "logitgate.processors.pipeline",
    "TreeDecodeConfig": "logitgate.processors.tree_decode",
    "ThinkBudget": "logitgate.processors.think_budget",
    "FinishedRows": "logitgate.processors.finished",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'logitgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
