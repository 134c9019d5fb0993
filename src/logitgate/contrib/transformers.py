"""A transformers ``LogitsProcessor`` running logitgate constraints inside ``model.generate``.

Each row keeps its own state (grammar matcher, tree decode, thinking budget, ...). States are
keyed by the tokens a row has generated so far, so beam search reorders and
``num_return_sequences`` copies are followed exactly: a row whose history extends another
row's forks that row's state. Finished rows (a stop token accepted) may only emit stop
tokens, which is what ``generate`` pads them with.

    from transformers import AutoModelForCausalLM, AutoTokenizer
    import logitgate as lg
    from logitgate.contrib.transformers import LogitgateLogitsProcessor

    tok = AutoTokenizer.from_pretrained(...)
    info = lg.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiled = lg.GrammarCompiler(info).compile_json_schema(schema)
    proc = LogitgateLogitsProcessor.from_grammar(compiled)
    model.generate(**inputs, logits_processor=[proc], max_new_tokens=200)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..kernels.apply_mask import apply_token_bitmask_inplace
from ..kernels.bitmask import bitmask_set
from ..kernels.penalty import apply_penalty_inplace
from ..processors.constraints import GrammarConstraint

__all__ = ["LogitgateLogitsProcessor"]

try:  # subclass the real base class when transformers is installed
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover - depends on the environment
    _Base = object


class LogitgateLogitsProcessor(_Base):
    """Constrain ``generate``: one list of row constraints per batch item (see the module doc).

    Args:
        make_constraints: called with the batch item index (``row // copies``), returns the
            new row's constraints (objects with ``restrict``, ``accept_token``, ``fork``).
        vocab_size: width of the logits row (the model's vocab size).
        stop_token_ids: tokens a finished row may emit.
        penalties: optional ``(presence, frequency, repetition)`` applied to generated tokens
            with logitgate's penalty kernel (before the masks).
        num_items: number of prompts in the batch when constraints differ per prompt (rows
            are grouped per prompt, as ``generate`` lays out beams and return sequences).
    """

    def __init__(self, make_constraints: Callable[[int], list[Any]], *, vocab_size: int,
                 stop_token_ids: Sequence[int] = (), penalties: tuple[float, float, float] | None = None,
                 num_items: int = 1):
        self.num_items = int(num_items)
        self.make_constraints = make_constraints
        self.vocab_size = int(vocab_size)
        self.stop_token_ids = sorted(set(int(t) for t in stop_token_ids))
        self.penalties = penalties
        self._prompt_len: int | None = None
        self._states: dict[tuple[int, tuple[int, ...]], tuple[list[Any], bool]] = {}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_grammar(cls, compiled: Any | Sequence[Any], *, vocab_size: int | None = None,
                     penalties: tuple[float, float, float] | None = None) -> LogitgateLogitsProcessor:
        """One compiled grammar for every row, or one per batch item."""
        from ..engine.matcher import GrammarMatcher

        grammars = list(compiled) if isinstance(compiled, list | tuple) else [compiled]
        info = grammars[0].tokenizer_info

        def make(item: int) -> list[Any]:
            return [GrammarConstraint(GrammarMatcher(grammars[item % len(grammars)]))]

        return cls(make, vocab_size=vocab_size or info.vocab_size, stop_token_ids=info.stop_token_ids,
                   penalties=penalties, num_items=len(grammars))

    def reset(self) -> None:
        """Forget all rows (call between ``generate`` calls if you reuse the processor)."""
        self._prompt_len = None
        self._states.clear()

    # ------------------------------------------------------------------ the hook
    def _state_for(self, item: int, generated: tuple[int, ...]) -> tuple[list[Any], bool]:
        key = (item, generated)
        if key in self._states:
            return self._states[key]
        if not generated:
            state = (self.make_constraints(item), False)
        else:
            parent, finished = self._state_for(item, generated[:-1])
            tok = generated[-1]
            if finished:
                state = (parent, True)
            else:
                cons = [c.fork() for c in parent]
                for c in cons:
                    if not c.accept_token(tok) and tok not in self.stop_token_ids:
                        raise ValueError(f"token {tok} was generated although the constraint forbade it "
                                         "(is another logits processor changing scores after this one?)")
                state = (cons, tok in self.stop_token_ids or _terminated(cons))
        self._states[key] = state
        return state

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        batch, length = input_ids.shape
        if self._prompt_len is None or length < self._prompt_len:
            self.reset()
            self._prompt_len = length
        ids = input_ids[:, self._prompt_len:].tolist()
        words = (self.vocab_size + 31) // 32
        bitmask = np.full((batch, words), -1, dtype=np.int32)
        live: dict[tuple[int, tuple[int, ...]], tuple[list[Any], bool]] = {}
        items = self._items(batch)
        for row in range(batch):
            key = (items[row], tuple(ids[row]))
            cons, finished = self._state_for(*key)
            live[key] = (cons, finished)
            if finished:
                bitmask[row] = 0
                bitmask_set(bitmask[row], self.stop_token_ids)
            else:
                for c in cons:
                    c.restrict(bitmask[row])
        # keep only the states the next step can extend (bounded memory)
        self._states = dict(live)
        if self.penalties is not None and length > self._prompt_len:
            self._apply_penalties(scores, ids)
        width = scores.shape[-1]
        if width > words * 32:
            raise ValueError(f"scores have {width} columns but the processor was built for vocab_size "
                             f"{self.vocab_size}")
        apply_token_bitmask_inplace(scores, torch.from_numpy(bitmask).to(scores.device), vocab_size=width)
        return scores

    def _items(self, batch: int) -> list[int]:
        # Rows come in equal groups (beams x return sequences) per batch item, in order.
        if batch % self.num_items:
            raise ValueError(f"batch of {batch} rows is not a multiple of num_items={self.num_items}")
        copies = batch // self.num_items
        return [row // copies for row in range(batch)]

    def _apply_penalties(self, scores: Any, ids: list[list[int]]) -> None:
        seq_ids, pos, toks, cnts = [], [], [], []
        for row, gen in enumerate(ids):
            if not gen:
                continue
            uniq, counts = np.unique(np.asarray(gen), return_counts=True)
            k = len(seq_ids)
            seq_ids.append(row)
            pos += [k] * len(uniq)
            toks += uniq.tolist()
            cnts += counts.tolist()
        if seq_ids:
            pens = np.tile(np.asarray(self.penalties, np.float32), (len(seq_ids), 1))
            apply_penalty_inplace(scores, seq_ids, pos, toks, cnts, pens)


def _terminated(constraints: list[Any]) -> bool:
    return any(isinstance(c, GrammarConstraint) and c.matcher.is_terminated() for c in constraints)
