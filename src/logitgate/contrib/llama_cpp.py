"""llama-cpp-python integration: a ``logits_processor`` for ``Llama.__call__`` / ``create_completion``.

llama-cpp-python calls ``processor(input_ids, scores)`` once per token with the whole token
history (prompt included) and a 1-D float32 ``scores`` array; this adapter accepts the new
tokens into a grammar matcher and masks ``scores`` in place.

    from llama_cpp import Llama, LogitsProcessorList
    llm = Llama(model_path="model.gguf")
    info = tokenizer_info_from_llama(llm)
    proc = LlamaCppLogitsProcessor(lg.GrammarCompiler(info).compile_json_schema(schema))
    llm(prompt, logits_processor=LogitsProcessorList([proc]))

The real package is an optional extra (``pip install 'logitgate[llama-cpp]'``, a slow source
build); its end-to-end test, ``tests/test_llama_cpp_real.py``, runs whenever it is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kernels.apply_mask import apply_token_bitmask_inplace

__all__ = ["LlamaCppLogitsProcessor", "tokenizer_info_from_llama"]


def tokenizer_info_from_llama(llm: Any) -> Any:
    """The :class:`~logitgate.TokenizerInfo` of a ``llama_cpp.Llama`` model.

    Each id's bytes come from llama.cpp's own detokenizer; ids that detokenize to nothing
    without ``special=True`` (control tokens such as ``<|im_end|>``) are marked special.
    """
    from ..tokenizer import TokenizerInfo

    n = int(llm.n_vocab())
    vocab: list[bytes] = []
    special: list[int] = []
    for i in range(n):
        plain = llm.detokenize([i], special=False)
        if not plain:
            special.append(i)
            plain = llm.detokenize([i], special=True)
        vocab.append(bytes(plain))
    eos = int(llm.token_eos())
    return TokenizerInfo.from_vocab(vocab, special_token_ids=special, eos_token_id=eos if eos >= 0 else None)


class LlamaCppLogitsProcessor:
    """Grammar-constrain one llama-cpp-python generation (make a new one per request, or ``reset``)."""

    def __init__(self, compiled: Any):
        from ..engine.matcher import GrammarMatcher

        self.matcher = GrammarMatcher(compiled)
        vocab = compiled.tokenizer_info.vocab_size
        self._bitmask = np.full((1, (vocab + 31) // 32), -1, dtype=np.int32)
        self._prompt_len: int | None = None
        self._seen = 0

    def reset(self) -> None:
        self.matcher.reset()
        self._prompt_len = None
        self._seen = 0

    def __call__(self, input_ids: Any, scores: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self._prompt_len is None:
            self._prompt_len = n
            self._seen = n
        for t in input_ids[self._seen:n]:
            if not self.matcher.accept_token(int(t)):
                raise ValueError(f"llama.cpp generated token {int(t)}, which the grammar forbids")
        self._seen = n
        self.matcher.fill_next_token_bitmask(self._bitmask, 0)
        apply_token_bitmask_inplace(scores, self._bitmask[0], vocab_size=min(len(scores), self._bitmask.shape[1] * 32))
        return scores
