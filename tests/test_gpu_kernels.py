"""The logits kernels on a real CUDA device, against the CPU (numba/numpy) kernels.

At the sizes serving engines use (Qwen2.5's padded 151,936 logits, batches to 64), every dtype
the mask kernel takes, strided and padded logits, duplicate bias entries (atomic adds), greedy
ties across Triton blocks, and a whole ``LogitsPipeline`` step on CUDA logits against the same
step on numpy logits. Skipped without a CUDA device (CI has none; ``bench/gpu_check.sh`` runs
them on a GPU machine).
"""

from __future__ import annotations

import numpy as np
import pytest

from logitgate.kernels.apply_mask import apply_token_bitmask_inplace
from logitgate.kernels.bias import apply_logit_bias_inplace
from logitgate.kernels.penalty import apply_penalty_inplace
from logitgate.kernels.softmax import softmax_with_temperature
from logitgate.processors.pipeline import LogitsPipeline, SamplingParams

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
pytest.importorskip("triton")

pytestmark = pytest.mark.gpu
CUDA = torch.device("cuda")


def grammar_like_mask(rng: np.random.Generator, batch: int, vocab: int) -> np.ndarray:
    """Whole words allowed or forbidden, some mixed, as grammar states produce; int32 [batch, words]."""
    words = (vocab + 31) // 32
    m = rng.integers(0, 2**32, size=(batch, words), dtype=np.uint64).astype(np.uint32).view(np.int32)
    u = rng.random((batch, words))
    m[u < 0.4] = -1
    m[(u >= 0.4) & (u < 0.8)] = 0
    return m


def expected_masked(before: np.ndarray, mask: np.ndarray, vocab: int, rows=None) -> np.ndarray:
    bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little").astype(bool)
    keep = np.zeros(before.shape, bool)
    width = min(vocab, bits.shape[1])
    keep[:, :width] = bits[: before.shape[0], :width]
    keep[:, vocab:] = True  # columns past vocab_size are never touched
    out = np.where(keep, before, -np.inf).astype(before.dtype)
    if rows is not None:
        untouched = np.setdiff1d(np.arange(before.shape[0]), rows)
        out[untouched] = before[untouched]
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("batch,width,vocab", [(1, 31, 31), (7, 1000, 1000), (64, 128_256, 128_256),
                                               (16, 152_064, 151_936)])
def test_mask_kernel_matches_the_reference(dtype, batch, width, vocab):
    rng = np.random.default_rng(batch * width)
    mask = grammar_like_mask(rng, batch, vocab)
    x = torch.from_numpy(rng.normal(size=(batch, width)).astype(np.float32)).to(getattr(torch, dtype)).to(CUDA)
    before = x.float().cpu().numpy()
    apply_token_bitmask_inplace(x, torch.from_numpy(mask).to(CUDA), vocab_size=vocab)
    np.testing.assert_array_equal(x.float().cpu().numpy(), expected_masked(before, mask, vocab))


def test_mask_kernel_rows_strides_and_a_host_mask():
    rng = np.random.default_rng(5)
    batch, vocab = 12, 50_001
    mask = grammar_like_mask(rng, batch, vocab)
    buf = torch.from_numpy(rng.normal(size=(batch, 2 * vocab + 7)).astype(np.float32)).to(CUDA)
    views = {"row stride > width": buf[:, 3:3 + vocab], "column stride 2": buf[:, : 2 * vocab : 2]}
    rows = np.array([0, 3, 4, 11])
    for name, x in views.items():
        before = x.cpu().numpy().copy()
        apply_token_bitmask_inplace(x, mask, indices=rows)  # numpy mask, CUDA logits
        np.testing.assert_array_equal(x.cpu().numpy(), expected_masked(before, mask, vocab, rows), err_msg=name)
    outside = buf.cpu().numpy()[:, 2 * vocab:]
    assert np.isfinite(outside).all(), "columns outside both views were written"


def test_bias_and_penalties_on_cuda_match_the_cpu_kernels():
    rng = np.random.default_rng(11)
    batch, vocab = 64, 151_936
    logits = rng.normal(scale=4, size=(batch, vocab)).astype(np.float32)
    n = 4096
    rows = rng.integers(0, batch, n)
    toks = rng.integers(0, 64, n)  # few distinct tokens: many entries hit the same logit (atomic adds)
    bias = rng.normal(size=n).astype(np.float32)
    seq_ids = rng.permutation(batch)[:40]
    pos, ptoks = [], []
    for p in range(len(seq_ids)):
        ts = rng.choice(vocab, size=300, replace=False)
        pos += [p] * len(ts)
        ptoks += ts.tolist()
    cnt = rng.integers(1, 6, len(ptoks))
    pens = np.stack([rng.uniform(-1, 1, 40), rng.uniform(0, 1, 40), rng.uniform(0.5, 2, 40)], 1).astype(np.float32)

    cpu = logits.copy()
    apply_logit_bias_inplace(cpu, rows, toks, bias)
    apply_penalty_inplace(cpu, seq_ids, pos, ptoks, cnt, pens)
    gpu = torch.from_numpy(logits).to(CUDA)
    apply_logit_bias_inplace(gpu, rows, toks, bias)
    apply_penalty_inplace(gpu, seq_ids, pos, ptoks, cnt, pens)
    np.testing.assert_allclose(gpu.cpu().numpy(), cpu, rtol=1e-5, atol=1e-4)


def test_softmax_on_cuda_matches_the_cpu_kernel():
    rng = np.random.default_rng(12)
    batch, vocab = 32, 151_936
    logits = rng.normal(scale=3, size=(batch, vocab)).astype(np.float32)
    logits[rng.random((batch, vocab)) < 0.3] = -np.inf
    logits[5] = -np.inf  # a dead row: all zeros
    logits[6, [100, 70_000, 150_000]] = 50.0  # greedy ties in three Triton blocks: the first one wins
    temps = rng.choice([0.0, 0.01, 0.7, 1.0, 3.0], size=batch).astype(np.float32)
    temps[6] = 0.0
    expected = softmax_with_temperature(logits.copy(), temps)
    probs = softmax_with_temperature(torch.from_numpy(logits).to(CUDA), temps)
    assert probs.device.type == CUDA.type and probs.dtype == torch.float32
    got = probs.cpu().numpy()
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=1e-7)
    assert got[5].sum() == 0.0 and got[6, 100] == 1.0 and got[6].sum() == 1.0
    live = (temps > 0) & (np.arange(batch) != 5)
    np.testing.assert_allclose(got[live].sum(axis=1), 1.0, rtol=1e-4)


def test_fused_kernel_matches_the_unfused_kernels_on_cuda():
    from logitgate.kernels.triton_logits import fused_probs_triton

    rng = np.random.default_rng(13)
    batch, vocab = 48, 128_256
    logits = rng.normal(scale=4, size=(batch, vocab)).astype(np.float32)
    mask = grammar_like_mask(rng, batch, vocab)
    mask[:, 0] |= 1
    rows = np.repeat(np.arange(batch), 64)
    toks = np.concatenate([rng.choice(vocab, 64, replace=False) for _ in range(batch)])
    bias = rng.normal(size=rows.shape[0]).astype(np.float32)
    cnt = rng.integers(1, 5, rows.shape[0])
    pens = np.tile(np.array([[0.5, 0.2, 1.1]], np.float32), (batch, 1))
    temps = rng.choice([0.0, 0.7, 1.3], size=batch).astype(np.float32)
    seq_ids = np.arange(batch)

    unfused = torch.from_numpy(logits.copy()).to(CUDA)
    apply_logit_bias_inplace(unfused, rows, toks, bias)
    apply_penalty_inplace(unfused, seq_ids, rows, toks, cnt, pens)
    apply_token_bitmask_inplace(unfused, torch.from_numpy(mask).to(CUDA))
    expected = softmax_with_temperature(unfused, temps).cpu().numpy()

    fused_logits = torch.from_numpy(logits.copy()).to(CUDA)
    probs = fused_probs_triton(fused_logits, temps, bitmask=torch.from_numpy(mask).to(CUDA),
                               bias=(rows, toks, bias), penalty=(seq_ids, rows, toks, cnt, pens))
    np.testing.assert_allclose(probs.cpu().numpy(), expected, rtol=1e-4, atol=1e-7)
    cpu_after = logits.copy()  # the sparse updates are written back, the mask is not
    apply_logit_bias_inplace(cpu_after, rows, toks, bias)
    apply_penalty_inplace(cpu_after, seq_ids, rows, toks, cnt, pens)
    np.testing.assert_allclose(fused_logits.cpu().numpy(), cpu_after, rtol=1e-5, atol=1e-5)


def _mixed_pipeline(vocab: int, batch: int) -> LogitsPipeline:
    pipe = LogitsPipeline(vocab, eos_token_id=vocab - 1)
    rng = np.random.default_rng(3)
    for r in range(batch):
        params = [
            SamplingParams(temperature=0.0, logit_bias={7: 30.0}),
            SamplingParams(temperature=0.8, top_p=0.9, presence_penalty=0.5, seed=r),
            SamplingParams(temperature=1.0, top_k=50, min_p=0.05, repetition_penalty=1.2, seed=r),
            SamplingParams(temperature=0.7, allowed_token_ids=range(0, vocab, 3), seed=r, logprobs=3),
        ][r % 4]
        pipe.add_request(r, params, output_token_ids=rng.integers(0, vocab, 20).tolist())
    return pipe


def test_pipeline_steps_on_cuda_logits_as_on_numpy_logits():
    """Masks, softmax, top-k/p/min-p and the seeded draws on the GPU: the same tokens as on numpy."""
    vocab, batch = 32_000, 16
    rng = np.random.default_rng(4)
    on_cpu, on_gpu = _mixed_pipeline(vocab, batch), _mixed_pipeline(vocab, batch)
    for _ in range(6):
        logits = rng.normal(scale=2, size=(batch, vocab)).astype(np.float32)
        want = on_cpu.sample(logits.copy())
        got = on_gpu.sample(torch.from_numpy(logits).to(CUDA))
        np.testing.assert_array_equal(got.tokens, want.tokens)
        assert all(t % 3 == 0 for t in got.tokens[3::4]), "a row limited to every third id drew another"
        np.testing.assert_array_equal(got.logprob_ids, want.logprob_ids)
        np.testing.assert_allclose(got.logprobs, want.logprobs, rtol=1e-4, atol=1e-4)
        on_cpu.accept(want.tokens.tolist())
        on_gpu.accept(got.tokens.tolist())
