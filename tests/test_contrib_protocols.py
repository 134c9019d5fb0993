"""vLLM and llama-cpp-python adapters against their protocols (the packages themselves are optional)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from logitgate import GrammarCompiler, TokenizerInfo, bitmask_to_ids
from logitgate.contrib.llama_cpp import LlamaCppLogitsProcessor
from logitgate.contrib.vllm import LogitgateBackend, LogitgateLogitsProcessor

VOCAB = [b"a", b"b", b"ab", b"c", b"1", b"2", b"</s>"]
INFO = TokenizerInfo.from_vocab(VOCAB, special_token_ids=[6], eos_token_id=6, vocab_size=10)


class Move(enum.Enum):
    SWAP = 0
    UNIDIRECTIONAL = 1


@dataclass
class Params:
    extra_args: dict[str, Any] | None = None


@dataclass
class BatchUpdate:
    batch_size: int
    removed: list[int] = field(default_factory=list)
    added: list[tuple] = field(default_factory=list)
    moved: list[tuple] = field(default_factory=list)


def allowed(logits_row) -> list[int]:
    return [i for i, v in enumerate(np.asarray(logits_row)) if v != -np.inf]


def test_vllm_logits_processor_follows_batch_updates():
    LogitgateLogitsProcessor.configure(INFO)
    with pytest.raises(ValueError):
        LogitgateLogitsProcessor.validate_params(Params({"logitgate": {"regex": 3}}))
    with pytest.raises(ValueError):
        LogitgateLogitsProcessor.validate_params(Params({"logitgate": {"regex": "a", "json": {}}}))
    LogitgateLogitsProcessor.validate_params(Params({"logitgate": {"regex": "(ab)+c"}}))
    LogitgateLogitsProcessor.validate_params(Params())
    proc = LogitgateLogitsProcessor(None, "cpu", False)
    assert not proc.is_argmax_invariant()
    out0: list[int] = []
    out1: list[int] = []
    proc.update_state(BatchUpdate(2, added=[(0, Params({"logitgate": {"regex": "(ab)+c"}}), [9], out0),
                                            (1, Params({"logitgate": {"choices": ["12", "21"]}}), [9], out1)]))
    logits = np.zeros((3, 10), np.float32)
    proc.apply(logits)
    assert allowed(logits[0]) == [0, 2] and allowed(logits[1]) == [4, 5] and allowed(logits[2]) == list(range(10))
    out0.append(2)  # vLLM appends to the live output list
    out1.append(4)
    proc.update_state(None)
    logits = np.zeros((2, 10), np.float32)
    proc.apply(logits)
    assert allowed(logits[0]) == [0, 2, 3] and allowed(logits[1]) == [5]
    proc.update_state(BatchUpdate(2, moved=[(0, 1, Move.SWAP)]))
    logits = np.zeros((2, 10), np.float32)
    proc.apply(logits)
    assert allowed(logits[1]) == [0, 2, 3] and allowed(logits[0]) == [5]
    proc.update_state(BatchUpdate(1, removed=[0], moved=[(1, 0, Move.UNIDIRECTIONAL)]))
    logits = np.zeros((1, 10), np.float32)
    proc.apply(logits)
    assert allowed(logits[0]) == [0, 2, 3] and set(proc.rows) == {0}


def test_vllm_structured_output_backend():
    class Opt(enum.Enum):
        JSON = 0
        REGEX = 1
        CHOICE = 2
        GRAMMAR = 3
        STRUCTURAL_TAG = 4

    backend = LogitgateBackend(INFO)
    bm = backend.allocate_token_bitmask(2)
    g = backend.compile_grammar(Opt.REGEX, "(ab)+c")
    assert g.validate_tokens([2, 0, 1, 4]) == [2, 0, 1]
    assert g.accept_tokens("r", [2, 0, 1])
    assert not g.accept_tokens("r", [0, 4])  # all-or-nothing
    g.fill_bitmask(bm, 1)
    assert bitmask_to_ids(bm[1].numpy(), 10).tolist() == [0, 2, 3]
    g.rollback(2)
    g.fill_bitmask(bm, 0)
    assert bitmask_to_ids(bm[0].numpy(), 10).tolist() == [0, 2, 3]
    assert g.accept_tokens("r", [3, 6]) and g.is_terminated()
    g.reset()
    assert not g.is_terminated()
    c = backend.compile_grammar(Opt.CHOICE, '["ab", "c"]')
    assert c.validate_tokens([3, 6]) == [3, 6]
    gr = backend.compile_grammar(Opt.GRAMMAR, 'root ::= "a" [12]+')
    assert gr.validate_tokens([0, 4, 5, 6]) == [0, 4, 5, 6]
    with pytest.raises(ValueError):
        backend.compile_grammar(Opt.STRUCTURAL_TAG, "{}")
    backend.destroy()


def test_llama_cpp_processor_protocol():
    compiled = GrammarCompiler(INFO).compile_regex("(ab)+c")
    proc = LlamaCppLogitsProcessor(compiled)
    history = np.array([7, 8, 9], dtype=np.intc)  # prompt tokens
    scores = np.zeros(10, np.float32)
    assert allowed(proc(history, scores)) == [0, 2]
    history = np.append(history, 2).astype(np.intc)
    scores = np.zeros(10, np.float32)
    assert allowed(proc(history, scores)) == [0, 2, 3]
    history = np.append(history, 3).astype(np.intc)
    scores = np.zeros(10, np.float32)
    assert allowed(proc(history, scores)) == [6]
    with pytest.raises(ValueError):
        proc(np.append(history, 0).astype(np.intc), np.zeros(10, np.float32))


def test_vllm_configure_warms_the_compiler_up_unless_told_not_to(monkeypatch):
    """``configure`` runs at start-up: it warms the compiler up there, so the first request does not
    pay for numba's start-up and kernel loads; ``warm_up=False`` leaves that to the first request."""
    from logitgate.engine.compiler import GrammarCompiler

    calls: list[GrammarCompiler] = []
    monkeypatch.setattr(GrammarCompiler, "warm_up", lambda self: calls.append(self) or self)
    LogitgateLogitsProcessor.configure(INFO)
    assert calls == [LogitgateLogitsProcessor._compiler]
    LogitgateLogitsProcessor.configure(INFO, warm_up=False)
    assert len(calls) == 1 and LogitgateLogitsProcessor._compiler is not calls[0]
