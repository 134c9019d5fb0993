"""vLLM integration: a v1 logits processor and a structured-output backend.

**Logits processor** (:class:`LogitgateLogitsProcessor`): requests opt in through
``SamplingParams(extra_args={"logitgate": SPEC})`` where ``SPEC`` is a dict with one of
``json``, ``json_object``, ``regex``, ``grammar`` or ``choices`` (see
:mod:`logitgate.contrib._spec`). Pass the class to ``LLM(..., logits_processors=[cls])``
after telling it the vocabulary once::

    LogitgateLogitsProcessor.configure(lg.TokenizerInfo.from_huggingface(tok, vocab_size=V))

It follows vLLM v1's interface: ``validate_params``, ``update_state(BatchUpdate)`` (removed,
then added, then moved; the ``output_tok_ids`` list of an added request is a live reference
that vLLM appends to), ``apply(logits)`` and ``is_argmax_invariant() -> False``.

**Structured-output backend** (:class:`LogitgateBackend`, :class:`LogitgateGrammar`): the
method shapes of vLLM's ``StructuredOutputBackend`` / ``StructuredOutputGrammar``
(``compile_grammar``, ``allocate_token_bitmask``, ``accept_tokens``, ``validate_tokens``,
``rollback``, ``fill_bitmask``, ``is_terminated``, ``reset``).

The vLLM package is optional: without it the classes are plain objects with the same
methods, which is how logitgate's tests exercise the protocol (vLLM has no CPU wheel here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..kernels.apply_mask import apply_token_bitmask_inplace
from ._spec import compile_spec, validate_spec

__all__ = ["SPEC_KEY", "LogitgateBackend", "LogitgateGrammar", "LogitgateLogitsProcessor"]

SPEC_KEY = "logitgate"

try:  # pragma: no cover - depends on the environment
    from vllm.v1.sample.logits_processor import LogitsProcessor as _VllmLogitsProcessor
except ImportError:
    _VllmLogitsProcessor = object


def _spec_of(sampling_params: Any) -> Any:
    extra = getattr(sampling_params, "extra_args", None) or {}
    return extra.get(SPEC_KEY)


@dataclass
class _Row:
    matcher: Any
    output: list[int]   # live reference to vLLM's output token list
    seen: int = 0       # how many of `output` the matcher has accepted


class LogitgateLogitsProcessor(_VllmLogitsProcessor):
    """vLLM v1 logits processor applying logitgate grammars per request (see the module doc)."""

    tokenizer_info: ClassVar[Any] = None
    _compiler: ClassVar[Any] = None

    @classmethod
    def configure(cls, tokenizer_info: Any, *, warm_up: bool = True, **compiler_options: Any) -> None:
        """Set the vocabulary (a :class:`~logitgate.TokenizerInfo`) all instances use. Called once at
        start-up: ``warm_up`` runs :meth:`~logitgate.GrammarCompiler.warm_up` there (a few seconds),
        so the first request does not pay for numba's start-up and kernel loads instead."""
        from ..engine.compiler import GrammarCompiler

        cls.tokenizer_info = tokenizer_info
        cls._compiler = GrammarCompiler(tokenizer_info, **compiler_options)
        if warm_up:
            cls._compiler.warm_up()

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        spec = _spec_of(sampling_params)
        if spec is not None:
            validate_spec(spec)

    def __init__(self, vllm_config: Any = None, device: Any = None, is_pin_memory: bool = False):
        if type(self).tokenizer_info is None:
            raise ValueError("call LogitgateLogitsProcessor.configure(tokenizer_info) before vLLM builds it")
        self.device = device
        self.rows: dict[int, _Row] = {}
        info = type(self).tokenizer_info
        self._bitmask = np.full((0, (info.vocab_size + 31) // 32), -1, dtype=np.int32)

    def is_argmax_invariant(self) -> bool:
        return False  # masking can change the argmax

    def update_state(self, batch_update: Any) -> None:
        if batch_update is not None:
            for index in batch_update.removed:
                self.rows.pop(index, None)
            for index, params, _prompt, output in batch_update.added:
                spec = _spec_of(params)
                if spec is None:
                    self.rows.pop(index, None)
                    continue
                from ..engine.matcher import GrammarMatcher

                compiled = compile_spec(type(self)._compiler, spec)
                self.rows[index] = _Row(GrammarMatcher(compiled), output)
            for a, b, direction in batch_update.moved:
                name = getattr(direction, "name", str(direction)).upper()
                ra, rb = self.rows.pop(a, None), self.rows.pop(b, None)
                if ra is not None:
                    self.rows[b] = ra
                if "SWAP" in name and rb is not None:
                    self.rows[a] = rb
        for row in self.rows.values():  # catch up with tokens vLLM appended
            while row.seen < len(row.output):
                row.matcher.accept_token(row.output[row.seen])
                row.seen += 1

    def apply(self, logits: Any) -> Any:
        if not self.rows:
            return logits
        batch = int(logits.shape[0])
        if self._bitmask.shape[0] < batch:
            self._bitmask = np.full((batch, self._bitmask.shape[1]), -1, dtype=np.int32)
        rows = [i for i in sorted(self.rows) if i < batch]
        for i in rows:
            self.rows[i].matcher.fill_next_token_bitmask(self._bitmask, i)
        mask = self._bitmask[:batch]
        if type(logits).__module__.startswith("torch"):
            import torch

            mask = torch.from_numpy(mask).to(logits.device)
        apply_token_bitmask_inplace(logits, mask, indices=rows, vocab_size=min(int(logits.shape[1]),
                                                                                 mask.shape[1] * 32))
        return logits


class LogitgateGrammar:
    """One request's grammar state, with vLLM's ``StructuredOutputGrammar`` methods."""

    def __init__(self, matcher: Any):
        self.matcher = matcher

    def accept_tokens(self, request_id: str, tokens: Sequence[int]) -> bool:
        """Accept all tokens or none (a rejected token rolls back the ones before it)."""
        for done, t in enumerate(tokens):
            if not self.matcher.accept_token(int(t)):
                if done:
                    self.matcher.rollback(done)
                return False
        return True

    def validate_tokens(self, tokens: Sequence[int]) -> list[int]:
        """The longest acceptable prefix of ``tokens`` (state unchanged)."""
        n = self.matcher.validate_tokens([int(t) for t in tokens])
        return list(tokens[:n])

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: Any, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.matcher.reset()


class LogitgateBackend:
    """vLLM ``StructuredOutputBackend`` shape: compiles request grammars, allocates bitmasks."""

    def __init__(self, tokenizer_info: Any, *, max_rollback_tokens: int = 16, **compiler_options: Any):
        from ..engine.compiler import GrammarCompiler

        self.tokenizer_info = tokenizer_info
        self.vocab_size = tokenizer_info.vocab_size
        self.compiler = GrammarCompiler(tokenizer_info, **compiler_options)
        self.max_rollback_tokens = max_rollback_tokens

    def compile_grammar(self, request_type: Any, grammar_spec: str) -> LogitgateGrammar:
        """``request_type``: vLLM's StructuredOutputOptions (JSON, JSON_OBJECT, REGEX, GRAMMAR, CHOICE)."""
        import json

        from ..engine.matcher import GrammarMatcher

        kind = getattr(request_type, "name", str(request_type)).upper()
        if kind == "JSON":
            spec = {"json": json.loads(grammar_spec) if isinstance(grammar_spec, str) else grammar_spec}
        elif kind == "JSON_OBJECT":
            spec = {"json_object": True}
        elif kind == "REGEX":
            spec = {"regex": grammar_spec}
        elif kind == "GRAMMAR":
            spec = {"grammar": grammar_spec}
        elif kind == "CHOICE":
            spec = {"choices": json.loads(grammar_spec) if isinstance(grammar_spec, str) else list(grammar_spec)}
        else:
            raise ValueError(f"logitgate backend does not support request type {kind}")
        compiled = compile_spec(self.compiler, spec)
        return LogitgateGrammar(GrammarMatcher(compiled, max_rollback_tokens=self.max_rollback_tokens))

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        from ..kernels.bitmask import allocate_token_bitmask

        try:
            import torch  # noqa: F401

            return allocate_token_bitmask(max_num_seqs, self.vocab_size, backend="torch")
        except ImportError:
            return allocate_token_bitmask(max_num_seqs, self.vocab_size)

    def destroy(self) -> None:
        self.compiler.clear_cache()
