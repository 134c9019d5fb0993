"""``LogitsPipeline``: one call per decoding step for a whole batch of requests.

Order per row (seeds 000-002): logit bias → penalties → masks (grammar, tree decode, thinking
budget, allowed ids, bad words, min tokens, finished rows) → temperature softmax →
top-k / top-p / min-p → sample. Masks come after the additive steps so a masked logit is
never touched again.

Rows are managed like vLLM v1's ``BatchUpdate``: :meth:`add_request`, :meth:`remove`,
:meth:`move` / :meth:`swap`; beams and ``n > 1`` use :meth:`fork_row` / :meth:`reorder`;
speculative drafts use :meth:`draft_bitmasks` (accept each draft path temporarily, fill one
mask per position, roll back).

    >>> import numpy as np
    >>> pipe = LogitsPipeline(vocab_size=5, eos_token_id=4)
    >>> pipe.add_request(0, SamplingParams(temperature=0.0, logit_bias={2: 10.0}))
    >>> pipe.step(np.zeros((1, 5), np.float32)).tolist()
    [2]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kernels._arrays import is_torch, wants_triton
from ..kernels.apply_mask import apply_token_bitmask_inplace
from ..kernels.bias import apply_logit_bias_inplace
from ..kernels.bitmask import bitmask_set
from ..kernels.penalty import apply_penalty_inplace
from ..kernels.softmax import softmax_with_temperature
from .constraints import AfterThinking, AllowedTokens, BadWords, GrammarConstraint, MinTokens
from .sampling import (
    SamplingError,
    filter_and_sample_torch,
    filter_probs,
    make_generator,
    sample_from_probs,
    top_logprobs,
)

__all__ = ["LogitsPipeline", "SamplingParams", "SequenceState", "StepOutput"]


@dataclass
class SamplingParams:
    """Per-request parameters. Defaults change nothing (plain sampling at temperature 1)."""

    temperature: float = 1.0
    top_k: int = 0                    # 0 = off
    top_p: float = 1.0
    min_p: float = 0.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: Mapping[int, float] | None = None
    seed: int | None = None
    min_tokens: int = 0
    allowed_token_ids: Sequence[int] | None = None
    bad_words: Sequence[Sequence[int]] | None = None
    logprobs: int | None = None       # top-n log-probabilities to return
    grammar: Any = None               # a CompiledGrammar (a GrammarMatcher is made per sequence)
    tree_decode: Any = None           # a TreeDecodeConfig (prefix -> allowed next tokens)
    think_budget: Any = None          # a ThinkBudget; with `grammar`, the grammar constrains the answer
    constraints: Sequence[Any] = ()   # extra row constraints (objects with restrict/accept_token/...)

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.repetition_penalty <= 0:
            raise ValueError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}")
        if self.min_tokens < 0:
            raise ValueError(f"min_tokens must be >= 0, got {self.min_tokens}")

    @property
    def has_penalties(self) -> bool:
        return self.presence_penalty != 0 or self.frequency_penalty != 0 or self.repetition_penalty != 1


@dataclass
class SequenceState:
    """Everything one row remembers between steps."""

    params: SamplingParams
    output: list[int] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)
    constraints: list[Any] = field(default_factory=list)
    generator: np.random.Generator | None = None
    finished: bool = False
    request_id: Any = None

    def fork(self) -> SequenceState:
        gen = None
        if self.generator is not None:
            gen = np.random.Generator(type(self.generator.bit_generator)())
            gen.bit_generator.state = self.generator.bit_generator.state
        return SequenceState(self.params, list(self.output), dict(self.counts),
                             [c.fork() for c in self.constraints], gen, self.finished, self.request_id)


@dataclass
class StepOutput:
    tokens: np.ndarray                     # [batch] sampled ids (-1 for empty rows)
    logprob_ids: np.ndarray | None = None  # [batch, n]
    logprobs: np.ndarray | None = None     # [batch, n]


class LogitsPipeline:
    """Bias, penalties, masks, temperature and sampling for a batch of rows (numpy or torch logits)."""

    def __init__(self, vocab_size: int, *, eos_token_id: int | None = None,
                 stop_token_ids: Iterable[int] | None = None, max_rollback_tokens: int = 16):
        self.vocab_size = int(vocab_size)
        stops = set(stop_token_ids or ())
        if eos_token_id is not None:
            stops.add(int(eos_token_id))
        self.eos_token_id = eos_token_id
        self.stop_token_ids = sorted(stops)
        self.max_rollback_tokens = max_rollback_tokens
        self.rows: dict[int, SequenceState] = {}
        self._words = (self.vocab_size + 31) // 32

    def warm_up(self, dtype: Any = np.float32) -> LogitsPipeline:
        """Load every kernel a step runs now, not in the first :meth:`step`; returns ``self``.

        A process's first numba kernel makes numba set itself up (it imports SciPy's BLAS bindings
        where SciPy is installed: ~0.2 s), and every kernel then loads from numba's cache (a few ms
        each; a compile where there is no cache). Without this, the first step pays all of it:
        ~0.4 s on a 2-core machine. A scratch pipeline (this one's rows are untouched) runs a few
        steps of ``dtype`` logits (numpy ``float32``, ``float64`` or ``float16``; a CPU torch tensor
        runs the same kernels as its numpy dtype) with every per-row option: bias, penalties,
        allowed ids, bad words, minimum tokens, a tree decode, a thinking budget, greedy and
        sampled rows with top-k/top-p/min-p, log-probabilities, draft masks and a finished row. A
        grammar's kernels are loaded by :meth:`~logitgate.GrammarCompiler.warm_up`.

            >>> pipe = LogitsPipeline(vocab_size=100, eos_token_id=0).warm_up()
            >>> pipe.rows
            {}
        """
        from .think_budget import ThinkBudget
        from .tree_decode import TreeDecodeConfig

        vocab = 64  # (the kernels' types do not depend on the vocabulary's size)
        dtype = np.dtype(dtype)
        if dtype not in (np.float16, np.float32, np.float64):
            raise TypeError(f"warm_up: logits dtype must be float16, float32 or float64, got {dtype}")
        tree = TreeDecodeConfig.from_dict({"start_token_id": 1, "end_token_id": 2, "sep": "_",
                                           "prefix_dict": {"1": [5, 6], "1_5": [7]}}, vocab_size=vocab)
        scratch = LogitsPipeline(vocab, eos_token_id=0, stop_token_ids=[3])
        rows = [SamplingParams(temperature=0.0, logit_bias={4: 1.0}, allowed_token_ids=[4, 5, 6, 0]),
                SamplingParams(temperature=0.8, top_k=5, top_p=0.9, min_p=0.01, repetition_penalty=1.2,
                               presence_penalty=0.5, frequency_penalty=0.1, seed=0, logprobs=2,
                               bad_words=[[8, 9], [10]], min_tokens=2),
                SamplingParams(tree_decode=tree, seed=1),
                SamplingParams(think_budget=ThinkBudget([11], [12], max_thinking_tokens=1), seed=2)]
        for row, params in enumerate(rows):
            scratch.add_request(row, params, output_token_ids=[8, 8, 13])
        logits = np.linspace(-1.0, 1.0, len(rows) * vocab, dtype=np.float32).reshape(len(rows), vocab)
        for _ in range(3):
            scratch.step(logits.astype(dtype))
        scratch.draft_bitmasks(2, [5, 7])
        scratch.rows[0].finished = True
        scratch.step(logits.astype(dtype))
        return self

    # ------------------------------------------------------------------ rows
    def add_request(self, row: int, params: SamplingParams, *, output_token_ids: Sequence[int] = (),
                    request_id: Any = None) -> None:
        """Put a new request in ``row`` (replacing what was there)."""
        cons: list[Any] = []
        grammar = None
        if params.grammar is not None:
            from ..engine.matcher import GrammarMatcher

            m = GrammarMatcher(params.grammar, max_rollback_tokens=self.max_rollback_tokens,
                               stop_token_ids=self.stop_token_ids or None)
            grammar = GrammarConstraint(m)
        if params.think_budget is not None:
            think = params.think_budget.new_state()
            cons.append(AfterThinking(think, grammar) if grammar is not None else think)
        elif grammar is not None:
            cons.append(grammar)
        if params.tree_decode is not None:
            cons.append(params.tree_decode.new_state())
        if params.allowed_token_ids is not None:
            cons.append(AllowedTokens(params.allowed_token_ids, self.vocab_size))
        if params.bad_words:
            cons.append(BadWords(params.bad_words))
        if params.min_tokens:
            cons.append(MinTokens(params.min_tokens, self.stop_token_ids))
        cons.extend(params.constraints)
        if params.logit_bias:
            bad = [t for t in params.logit_bias if not 0 <= int(t) < self.vocab_size]
            if bad:
                raise ValueError(f"logit_bias token {bad[0]} is outside the vocabulary [0, {self.vocab_size})")
        state = SequenceState(params, constraints=cons, generator=make_generator(params.seed), request_id=request_id)
        for t in output_token_ids:
            self._record(state, int(t))
        self.rows[row] = state

    def remove(self, row: int) -> None:
        self.rows.pop(row, None)

    def move(self, src: int, dst: int) -> None:
        """Move the request in ``src`` to ``dst`` (``dst`` is overwritten)."""
        self.rows[dst] = self.rows.pop(src)

    def swap(self, a: int, b: int) -> None:
        ra, rb = self.rows.pop(a, None), self.rows.pop(b, None)
        if ra is not None:
            self.rows[b] = ra
        if rb is not None:
            self.rows[a] = rb

    def fork_row(self, src: int, dst: int) -> None:
        """``dst`` becomes an independent copy of ``src`` (beam split, ``n > 1``)."""
        self.rows[dst] = self.rows[src].fork()

    def reorder(self, parents: Sequence[int]) -> None:
        """Beam reorder: new row ``i`` continues old row ``parents[i]`` (states forked)."""
        old = self.rows
        new: dict[int, SequenceState] = {}
        taken: set[int] = set()
        for i, p in enumerate(parents):
            new[i] = old[p] if p not in taken else old[p].fork()
            taken.add(p)
        self.rows = new

    # ------------------------------------------------------------------ per step
    def _record(self, state: SequenceState, token: int) -> None:
        state.output.append(token)
        state.counts[token] = state.counts.get(token, 0) + 1

    def accept(self, tokens: Sequence[int]) -> None:
        """Tell every active row which token it got; rows that stop become finished."""
        for row, state in self.rows.items():
            if row >= len(tokens) or tokens[row] < 0 or state.finished:
                continue
            t = int(tokens[row])
            self._record(state, t)
            for c in state.constraints:
                c.accept_token(t)
            if t in self.stop_token_ids:
                state.finished = True
            else:
                for c in state.constraints:
                    matcher = getattr(c, "matcher", None)
                    if matcher is not None and matcher.is_terminated():
                        state.finished = True

    def fill_bitmask(self, bitmask: np.ndarray) -> list[int]:
        """Fill one row of ``bitmask`` per constrained row; returns the rows that got a mask. Rows
        past the bitmask's last are left alone, as :meth:`process` and :meth:`sample` leave rows
        past the logits' batch."""
        rows = []
        batch = bitmask.shape[0]
        for row, state in self.rows.items():
            if row >= batch:
                continue
            if state.finished:
                bitmask[row] = 0
                if self.eos_token_id is not None:
                    bitmask_set(bitmask[row], [self.eos_token_id])
                rows.append(row)
            elif state.constraints:
                bitmask[row] = -1
                for c in state.constraints:
                    c.restrict(bitmask[row])
                rows.append(row)
        return rows

    def _sparse(self, batch: int):
        b_rows, b_toks, b_vals = [], [], []
        p_seqs, p_pos, p_toks, p_cnt, p_pen = [], [], [], [], []
        for row, st in self.rows.items():
            if row >= batch:
                continue
            if st.params.logit_bias:
                for t, v in st.params.logit_bias.items():
                    b_rows.append(row)
                    b_toks.append(int(t))
                    b_vals.append(float(v))
            if st.params.has_penalties and st.counts:
                k = len(p_seqs)
                p_seqs.append(row)
                p_pen.append((st.params.presence_penalty, st.params.frequency_penalty, st.params.repetition_penalty))
                for t, c in st.counts.items():
                    p_pos.append(k)
                    p_toks.append(t)
                    p_cnt.append(c)
        bias = (b_rows, b_toks, np.asarray(b_vals, np.float32)) if b_rows else None
        pen = (p_seqs, p_pos, p_toks, p_cnt, np.asarray(p_pen, np.float32).reshape(-1, 3)) if p_seqs else None
        return bias, pen

    def process(self, logits: Any) -> Any:
        """Bias, penalties and masks in place on ``logits [batch, vocab]``; returns probabilities.

        float32 CUDA logits (with Triton installed) go through one fused kernel launch.
        """
        batch = int(logits.shape[0])
        bias, pen = self._sparse(batch)
        if wants_triton(logits):
            return self._process_fused(logits, batch, bias, pen)
        if bias is not None:
            apply_logit_bias_inplace(logits, *bias)
        if pen is not None:
            apply_penalty_inplace(logits, *pen)
        bitmask = np.full((batch, self._words), -1, dtype=np.int32)
        masked = self.fill_bitmask(bitmask)
        if masked:
            if is_torch(logits):
                import torch

                bm = torch.from_numpy(bitmask).to(logits.device)
            else:
                bm = bitmask
            apply_token_bitmask_inplace(logits, bm, indices=masked, vocab_size=self.vocab_size)
        return softmax_with_temperature(logits, self._temperatures(batch))

    def _temperatures(self, batch: int) -> np.ndarray:
        temps = np.ones(batch, np.float32)
        for row, st in self.rows.items():
            if row < batch:
                temps[row] = st.params.temperature
        return temps

    def _process_fused(self, logits: Any, batch: int, bias: Any, pen: Any) -> Any:
        """:meth:`process` on a GPU: bias, penalties, masks and softmax in one Triton launch."""
        import torch

        from ..kernels.triton_logits import fused_probs_triton

        bitmask = np.full((batch, self._words), -1, dtype=np.int32)  # rows left alone stay all-allowed
        bm = torch.from_numpy(bitmask).to(logits.device) if self.fill_bitmask(bitmask) else None
        return fused_probs_triton(logits, self._temperatures(batch), bitmask=bm, bias=bias, penalty=pen,
                                  write_mask=True, mask_vocab=self.vocab_size)

    def sample(self, logits: Any) -> StepOutput:
        """:meth:`process` then top-k/top-p/min-p and one draw per active row (does not accept)."""
        batch = int(logits.shape[0])
        probs = self.process(logits)
        on_device = is_torch(probs) and probs.device.type != "cpu"  # filtered and drawn there
        if is_torch(probs) and not on_device:
            probs = probs.detach().float().cpu().numpy()
        tokens = np.full(batch, -1, np.int64)
        active = [r for r in sorted(self.rows) if r < batch]
        if active:
            ps = [self.rows[r].params for r in active]
            filters = {"top_k": [p.top_k for p in ps], "top_p": [p.top_p for p in ps], "min_p": [p.min_p for p in ps]}
            generators = [self.rows[r].generator for r in active]
            try:
                if on_device:
                    rows = probs if active == list(range(batch)) else probs[active]
                    drawn = filter_and_sample_torch(rows, generators, **filters)
                else:
                    drawn = sample_from_probs(filter_probs(probs[active], **filters), generators)
            except SamplingError as e:
                raise SamplingError(f"{e} (batch rows {active})") from None
            tokens[active] = drawn
        out = StepOutput(tokens)
        n = max((st.params.logprobs or 0) for st in self.rows.values()) if self.rows else 0
        if n:
            out.logprob_ids, out.logprobs = top_logprobs(logits, n)
        return out

    def step(self, logits: Any) -> np.ndarray:
        """:meth:`sample` and :meth:`accept` in one call; returns the sampled ids."""
        out = self.sample(logits)
        self.accept(out.tokens.tolist())
        return out.tokens

    # ------------------------------------------------------------------ speculative drafts
    def draft_bitmasks(self, row: int, draft: Sequence[int]) -> np.ndarray:
        """Masks ``[len(draft) + 1, words]`` for each draft position of ``row`` (state unchanged)."""
        st = self.rows[row]
        out = np.full((len(draft) + 1, self._words), -1, dtype=np.int32)
        accepted = [0] * len(st.constraints)
        try:
            for j in range(len(draft) + 1):
                for c in st.constraints:
                    c.restrict(out[j])
                if j == len(draft):
                    break
                for k, c in enumerate(st.constraints):
                    if not c.accept_token(int(draft[j])):
                        out[j + 1:] = 0  # the draft left the language: nothing after it is valid
                        return out
                    accepted[k] += 1
            return out
        finally:
            for k, c in enumerate(st.constraints):
                if accepted[k]:
                    c.rollback(accepted[k])

    def draft_penalty_counts(self, row: int, draft: Sequence[int]) -> list[dict[int, int]]:
        """Token counts seen at each draft position (the counts to penalize with), state unchanged."""
        counts = dict(self.rows[row].counts)
        out = [dict(counts)]
        for t in draft:
            counts[int(t)] = counts.get(int(t), 0) + 1
            out.append(dict(counts))
        return out
