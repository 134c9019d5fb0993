"""LogitsPipeline: order of operations, row management, beams, drafts, finished rows, grammars."""

from __future__ import annotations

import numpy as np
import pytest

from logitgate import GrammarCompiler, TokenizerInfo
from logitgate.processors.constraints import AllowedTokens, BadWords, MinTokens
from logitgate.processors.pipeline import LogitsPipeline, SamplingParams

V = 40
EOS = 39


def greedy(**kw) -> SamplingParams:
    return SamplingParams(temperature=0.0, **kw)


def test_bias_then_penalty_then_mask_order():
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    # token 5 gets +10 bias, then a repetition penalty halves it; token 6 is not allowed at all
    pipe.add_request(0, greedy(logit_bias={5: 10.0, 6: 100.0}, repetition_penalty=2.0,
                               allowed_token_ids=[5, 7, EOS]), output_token_ids=[5])
    logits = np.zeros((1, V), np.float32)
    logits[0, 7] = 4.9
    pipe.process(logits)
    assert logits[0, 5] == pytest.approx(5.0)
    assert logits[0, 6] == -np.inf and logits[0, 7] == pytest.approx(4.9)
    assert pipe.sample(np.where(np.arange(V) == 7, 4.9, 0.0).astype(np.float32)[None]).tokens.tolist() == [5]


def test_presence_and_frequency_counts_follow_accepted_tokens():
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, greedy(presence_penalty=1.0, frequency_penalty=0.5))
    pipe.accept([3])
    pipe.accept([3])
    logits = np.zeros((1, V), np.float32)
    pipe.process(logits)
    assert logits[0, 3] == pytest.approx(-(1.0 + 2 * 0.5))
    assert (logits[0, np.arange(V) != 3] == 0).all()


def test_finished_row_allows_only_eos_and_min_tokens_blocks_it():
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, greedy(min_tokens=2))
    pipe.add_request(1, greedy())
    logits = np.zeros((2, V), np.float32)
    logits[:, EOS] = 10.0
    out = pipe.step(logits.copy())
    assert out[0] != EOS and out[1] == EOS
    assert pipe.rows[1].finished and not pipe.rows[0].finished
    logits2 = np.zeros((2, V), np.float32)
    logits2[:, 1] = 5.0
    out = pipe.step(logits2.copy())
    assert out[1] == EOS  # finished row: only EOS
    out = pipe.step(logits.copy())
    assert out[0] == EOS  # two tokens generated: EOS allowed again


def test_bad_words_and_allowed_tokens_constraints():
    bw = BadWords([[1, 2], [4]])
    row = np.full(2, -1, np.int32)
    bw.restrict(row)
    assert not (row[0] >> 4) & 1 and (row[0] >> 2) & 1
    bw.accept_token(1)
    row[:] = -1
    bw.restrict(row)
    assert not (row[0] >> 2) & 1
    bw.rollback(1)
    row[:] = -1
    bw.restrict(row)
    assert (row[0] >> 2) & 1
    with pytest.raises(ValueError):
        AllowedTokens([], V)
    with pytest.raises(ValueError):
        AllowedTokens([V], V)
    mt = MinTokens(1, [EOS])
    row[:] = -1
    mt.restrict(row)
    assert not (row[EOS >> 5] >> (EOS & 31)) & 1


def test_rows_move_swap_remove_and_reorder_beams():
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    for r in range(3):
        pipe.add_request(r, greedy(bad_words=[[r + 1]]), request_id=f"req{r}")
    pipe.swap(0, 2)
    assert pipe.rows[0].request_id == "req2" and pipe.rows[2].request_id == "req0"
    pipe.move(1, 5)
    assert 1 not in pipe.rows and pipe.rows[5].request_id == "req1"
    pipe.remove(5)
    assert set(pipe.rows) == {0, 2}
    pipe.reorder([2, 2, 0])
    assert [pipe.rows[i].request_id for i in range(3)] == ["req0", "req0", "req2"]
    assert pipe.rows[0] is not pipe.rows[1]
    pipe.rows[0].constraints[0].accept_token(7)
    assert pipe.rows[1].constraints[0].history == []


def test_grammar_rows_and_drafts():
    vocab = [b"a", b"b", b"ab", b"c", b"</s>"]
    info = TokenizerInfo.from_vocab(vocab, special_token_ids=[4], eos_token_id=4)
    compiled = GrammarCompiler(info).compile_regex("(ab)+c")
    pipe = LogitsPipeline(info.vocab_size, eos_token_id=4)
    pipe.add_request(0, greedy(grammar=compiled))
    masks = pipe.draft_bitmasks(0, [2, 0, 1, 3])
    allowed = [[t for t in range(5) if (m[0] >> t) & 1] for m in masks]
    assert allowed == [[0, 2], [0, 2, 3], [1], [0, 2, 3], [4]]
    # the state is unchanged after the draft
    assert [t for t in range(5) if (pipe.draft_bitmasks(0, [])[0][0] >> t) & 1] == [0, 2]
    bad = pipe.draft_bitmasks(0, [3, 0])
    assert (bad[1:] == 0).all()
    logits = np.zeros((1, info.vocab_size), np.float32)
    logits[0, 3] = 9.0  # 'c' is not allowed first
    assert pipe.step(logits)[0] in (0, 2)
    counts = pipe.draft_penalty_counts(0, [2, 2])
    assert counts[2][2] == counts[0].get(2, 0) + 2


def test_seeded_requests_are_reproducible_and_forks_continue_identically():
    def run(seed):
        pipe = LogitsPipeline(V, eos_token_id=EOS)
        pipe.add_request(0, SamplingParams(temperature=1.0, top_k=10, seed=seed))
        rng = np.random.default_rng(0)
        return [int(pipe.step(rng.normal(size=(1, V)).astype(np.float32))[0]) for _ in range(10)]
    assert run(5) == run(5)
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, SamplingParams(temperature=1.0, seed=9))
    pipe.fork_row(0, 1)
    x = np.random.default_rng(1).normal(size=(1, V)).astype(np.float32)
    out = pipe.step(np.concatenate([x, x]))
    assert out[0] == out[1]


def test_torch_logits_path():
    torch = pytest.importorskip("torch")
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, greedy(logit_bias={3: 5.0}, allowed_token_ids=[3, 4]))
    logits = torch.zeros((1, V))
    out = pipe.sample(logits)
    assert out.tokens.tolist() == [3]
    assert torch.isinf(logits[0, 5]) and logits[0, 3] == 5.0


def test_logprobs_are_returned():
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, greedy(logprobs=3))
    logits = np.arange(V, dtype=np.float32)[None].copy()
    out = pipe.sample(logits)
    assert out.logprob_ids.tolist() == [[39, 38, 37]]
    assert np.all(np.diff(out.logprobs[0]) < 0)


def test_bad_params():
    with pytest.raises(ValueError):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError):
        SamplingParams(top_p=0)
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    with pytest.raises(ValueError):
        pipe.add_request(0, SamplingParams(logit_bias={V: 1.0}))


def _allowed(pipe, row, n):
    mask = pipe.draft_bitmasks(row, [])[0]
    return [t for t in range(n) if (int(mask[t >> 5]) >> (t & 31)) & 1]


def test_tree_decode_in_pipeline():
    from logitgate import TreeDecodeConfig

    cfg = TreeDecodeConfig.from_dict({"start_token_id": 1, "end_token_id": 2, "sep": "_",
                                      "prefix_dict": {"1": [5, 6], "1_5": [7], "1_5_7": [3]}}, vocab_size=V)
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, greedy(tree_decode=cfg))
    assert _allowed(pipe, 0, V) == [5, 6]
    pipe.accept([5])
    assert _allowed(pipe, 0, V) == [7]
    pipe.accept([7])
    assert _allowed(pipe, 0, V) == [3]
    pipe.accept([3])
    assert _allowed(pipe, 0, V) == [2]  # missing key: only the end token


def test_think_budget_then_grammar_for_the_answer():
    from logitgate import ThinkBudget

    vocab = [b"a", b"b", b"ab", b"x", b"<think>", b"</think>", b"</s>"]
    info = TokenizerInfo.from_vocab(vocab, special_token_ids=[4, 5, 6], eos_token_id=6)
    compiled = GrammarCompiler(info).compile_regex("(ab)+")
    think = ThinkBudget([4], [5], max_thinking_tokens=2)
    pipe = LogitsPipeline(info.vocab_size, eos_token_id=6)
    pipe.add_request(0, greedy(grammar=compiled, think_budget=think))
    n = info.vocab_size
    assert _allowed(pipe, 0, n) == list(range(n))  # thinking: free
    pipe.accept([3])
    pipe.accept([3])
    assert _allowed(pipe, 0, n) == [5]  # budget spent: the end marker is forced
    pipe.accept([5])
    assert _allowed(pipe, 0, n) == [0, 2]  # the answer follows the grammar, which never saw </think>
    pipe.accept([2])
    assert _allowed(pipe, 0, n) == [0, 2, 6]
    masks = pipe.draft_bitmasks(0, [0, 1])
    assert [t for t in range(n) if (int(masks[2][0]) >> t) & 1] == [0, 2, 6]
    assert _allowed(pipe, 0, n) == [0, 2, 6]  # drafts rolled back


@pytest.mark.parametrize("allowed", [None, [4]])
def test_a_row_past_the_logits_batch_is_left_alone_constrained_or_not(allowed):
    """Rows past this step's batch are not sampled, not accepted and not masked: a constrained one
    raised an IndexError from the bitmask before, where an unconstrained one was left alone."""
    pipe = LogitsPipeline(V, eos_token_id=EOS)
    pipe.add_request(0, greedy(allowed_token_ids=[3]))
    pipe.add_request(3, greedy(allowed_token_ids=allowed))
    assert pipe.step(np.zeros((2, V), np.float32)).tolist() == [3, -1]
    assert pipe.rows[0].output == [3] and pipe.rows[3].output == []
    assert pipe.step(np.zeros((4, V), np.float32)).tolist() == [3, -1, -1, 4 if allowed else 0]
