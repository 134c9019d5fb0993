"""Logit bias, penalties and temperature softmax: every backend against a plain-Python reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from logitgate.kernels.bias import apply_logit_bias_inplace
from logitgate.kernels.penalty import apply_penalty_inplace
from logitgate.kernels.softmax import softmax_with_temperature

torch = pytest.importorskip("torch")


def ref_bias(logits, rows, toks, bias):
    out = logits.astype(np.float64).copy()
    for r, t, b in zip(rows, toks, bias):
        out[r][t] += b
    return out


def ref_penalty(logits, seq_ids, pos, toks, cnt, pens):
    out = logits.astype(np.float64).copy()
    for p, t, c in zip(pos, toks, cnt):
        r = seq_ids[p]
        v = out[r][t] - (pens[p][0] + c * pens[p][1])
        out[r][t] = v * pens[p][2] if v < 0 else v / pens[p][2]
    return out


def ref_softmax(logits, temps):
    out = np.zeros(logits.shape)
    for r, row in enumerate(logits.astype(np.float64)):
        m = max(row)
        if m == -math.inf:
            continue
        if temps[r] < 1e-5:
            out[r][list(row).index(m)] = 1.0
            continue
        e = [math.exp((v - m) / temps[r]) if v != -math.inf else 0.0 for v in row]
        out[r] = [x / sum(e) for x in e]
    return out


def random_case(rng, batch, vocab, n_entries):
    logits = rng.normal(scale=5, size=(batch, vocab)).astype(np.float32)
    logits[rng.random((batch, vocab)) < 0.05] = -np.inf
    logits[0, 0] = 3e38
    rows = rng.integers(0, batch, n_entries)
    toks = rng.integers(0, vocab, n_entries)
    return logits, rows, toks


BACKENDS = ["numpy", "torch"]


def to_backend(x, backend):
    return torch.from_numpy(x.copy()) if backend == "torch" else x.copy()


def to_numpy(x):
    return x.numpy() if hasattr(x, "numpy") else x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch,vocab,n", [(1, 1, 0), (3, 33, 10), (8, 1001, 200), (2, 32001, 50)])
def test_bias_matches_reference(backend, batch, vocab, n):
    rng = np.random.default_rng(batch * vocab + n)
    logits, rows, toks = random_case(rng, batch, vocab, n)
    bias = rng.normal(size=n).astype(np.float32)
    x = to_backend(logits, backend)
    apply_logit_bias_inplace(x, rows, toks, bias)
    np.testing.assert_allclose(to_numpy(x), ref_bias(logits, rows, toks, bias).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch,vocab,n", [(1, 1, 1), (4, 33, 12), (8, 1001, 300), (2, 32001, 64)])
def test_penalty_matches_reference(backend, batch, vocab, n):
    rng = np.random.default_rng(batch + vocab + n)
    logits = rng.normal(scale=5, size=(batch, vocab)).astype(np.float32)
    seq_ids = rng.permutation(batch)[: max(1, batch // 2)]
    pos, toks = [], []
    for p in range(len(seq_ids)):  # unique tokens per sequence, as the layout requires
        ts = rng.choice(vocab, size=min(vocab, n // len(seq_ids) + 1), replace=False)
        pos += [p] * len(ts)
        toks += ts.tolist()
    cnt = rng.integers(1, 5, len(toks))
    pens = np.stack([rng.uniform(-1, 1, len(seq_ids)), rng.uniform(0, 1, len(seq_ids)),
                     rng.uniform(0.5, 2, len(seq_ids))], axis=1).astype(np.float32)
    x = to_backend(logits, backend)
    apply_penalty_inplace(x, seq_ids, pos, toks, cnt, pens)
    np.testing.assert_allclose(to_numpy(x), ref_penalty(logits, seq_ids, pos, toks, cnt, pens), rtol=1e-5, atol=1e-5)


def test_penalty_neutral_values_and_empty_lists():
    x = np.array([[1.0, -1.0, 0.0]], np.float32)
    apply_penalty_inplace(x, [0], [0, 0, 0], [0, 1, 2], [5, 5, 5], [[0.0, 0.0, 1.0]])
    assert x.tolist() == [[1.0, -1.0, 0.0]]
    apply_penalty_inplace(x, [], [], [], [], np.zeros((0, 3), np.float32))
    apply_logit_bias_inplace(x, [], [], [])
    assert x.tolist() == [[1.0, -1.0, 0.0]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch,vocab", [(1, 1), (5, 37), (7, 4099)])
def test_softmax_matches_reference(backend, batch, vocab):
    rng = np.random.default_rng(vocab)
    logits = rng.normal(scale=3, size=(batch, vocab)).astype(np.float32)
    logits[rng.random((batch, vocab)) < 0.1] = -np.inf
    if batch > 2:
        logits[2] = -np.inf  # a dead row
    temps = rng.choice([0.0, 0.3, 1.0, 2.5], size=batch).astype(np.float32)
    probs = to_numpy(softmax_with_temperature(to_backend(logits, backend), temps))
    np.testing.assert_allclose(probs, ref_softmax(logits, temps), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("fn,args,exc", [
    (apply_logit_bias_inplace, (np.zeros(4, np.float32), [0], [0], [1.0]), ValueError),
    (apply_logit_bias_inplace, (np.zeros((1, 4), np.int32), [0], [0], [1.0]), TypeError),
    (apply_logit_bias_inplace, (np.zeros((1, 4), np.float32), [0], [4], [1.0]), IndexError),
    (apply_logit_bias_inplace, (np.zeros((1, 4), np.float32), [1], [0], [1.0]), IndexError),
    (apply_logit_bias_inplace, (np.zeros((1, 4), np.float32), [0], [0, 1], [1.0]), ValueError),
    (apply_penalty_inplace, (np.zeros((1, 4), np.float32), [0], [0], [0], [1], [[0, 0]]), ValueError),
    (apply_penalty_inplace, (np.zeros((1, 4), np.float32), [0], [1], [0], [1], [[0, 0, 1]]), IndexError),
    (softmax_with_temperature, (np.zeros((2, 4), np.float32), [1.0]), ValueError),
    (softmax_with_temperature, (np.zeros((1, 4), np.float32), [-1.0]), ValueError),
])
def test_bad_arguments_raise_clear_errors(fn, args, exc):
    with pytest.raises(exc):
        fn(*args)


def test_float16_numpy_bias_and_penalty():
    x = np.zeros((2, 40), np.float16)
    apply_logit_bias_inplace(x, [1, 1], [3, 3], [1.5, 1.0])
    assert x[1, 3] == np.float16(2.5)
    apply_penalty_inplace(x, [1], [0], [3], [2], [[0.5, 0.0, 2.0]])
    assert x[1, 3] == np.float16(1.0)


# ----------------------------------------------------------------------------- Triton
triton_mod = None


def _triton():
    pytest.importorskip("triton")
    import os

    if os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available():
        pytest.skip("Triton needs a GPU or TRITON_INTERPRET=1")
    from logitgate.kernels import triton_logits

    return triton_logits


def _device():
    return "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("batch,vocab", [(1, 31), (3, 1000), (4, 2053)])
def test_triton_softmax_bias_penalty_and_fused(batch, vocab):
    tl = _triton()
    rng = np.random.default_rng(batch * vocab)
    logits = rng.normal(scale=4, size=(batch, vocab)).astype(np.float32)
    temps = rng.choice([0.0, 0.7, 1.0], size=batch).astype(np.float32)
    words = (vocab + 31) // 32
    bitmask = rng.integers(-2**31, 2**31 - 1, size=(batch, words), dtype=np.int64).astype(np.int32)
    bitmask[:, 0] |= 1  # keep a token alive per row
    n = 20
    bias = (rng.integers(0, batch, n), rng.integers(0, vocab, n), rng.normal(size=n).astype(np.float32))
    seq_ids = np.arange(batch)
    pos = np.repeat(np.arange(batch), 5)
    toks = np.concatenate([rng.choice(vocab, 5, replace=False) for _ in range(batch)])
    cnt = rng.integers(1, 4, len(toks))
    pens = np.tile(np.array([[0.3, 0.2, 1.2]], np.float32), (batch, 1))
    dev = _device()

    x = torch.from_numpy(logits.copy()).to(dev)
    tl.apply_logit_bias_triton(x, *bias)
    np.testing.assert_allclose(x.cpu().numpy(), ref_bias(logits, *bias), rtol=1e-5, atol=1e-5)
    tl.apply_penalty_triton(x, seq_ids, pos, toks, cnt, pens)
    after = ref_penalty(ref_bias(logits, *bias), seq_ids, pos, toks, cnt, pens)
    np.testing.assert_allclose(x.cpu().numpy(), after, rtol=1e-5, atol=1e-5)

    bits = np.unpackbits(bitmask.view(np.uint8), bitorder="little").reshape(batch, -1)[:, :vocab].astype(bool)
    masked = np.where(bits, after, -np.inf)
    probs = tl.softmax_with_temperature_triton(torch.from_numpy(after.astype(np.float32)).to(dev), temps,
                                               torch.from_numpy(bitmask).to(dev), block=256)
    np.testing.assert_allclose(probs.cpu().numpy(), ref_softmax(masked, temps), rtol=1e-4, atol=1e-6)

    y = torch.from_numpy(logits.copy()).to(dev)
    fused = tl.fused_probs_triton(y, temps, bitmask=torch.from_numpy(bitmask).to(dev), bias=bias,
                                  penalty=(seq_ids, pos, toks, cnt, pens), block=256)
    np.testing.assert_allclose(fused.cpu().numpy(), ref_softmax(masked, temps), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y.cpu().numpy(), after, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # (x - max) / T -> -inf: intended
def test_triton_softmax_subtracts_the_max_before_the_temperature():
    """Logits near float32's limit with T < 1: the max comes off before dividing (x / T overflows)."""
    tl = _triton()
    logits = np.array([[3e38, 2.9e38, 1.0, -np.inf], [0.5, 3e38, 3e38, 0.0]], np.float32)
    temps = np.array([0.5, 0.0], np.float32)
    expected = softmax_with_temperature(logits.copy(), temps)
    assert np.isfinite(expected).all() and expected[1].tolist() == [0.0, 1.0, 0.0, 0.0]
    probs = tl.softmax_with_temperature_triton(torch.from_numpy(logits).to(_device()), temps, block=2)
    np.testing.assert_allclose(probs.cpu().numpy(), expected, rtol=1e-5, atol=1e-7)


def test_triton_fused_writes_the_mask_back_and_leaves_columns_past_mask_vocab_alone():
    tl = _triton()
    rng = np.random.default_rng(21)
    batch, vocab, width = 3, 70, 75  # 5 padding columns past the mask's vocabulary
    logits = rng.normal(size=(batch, width)).astype(np.float32)
    bitmask = rng.integers(-2**31, 2**31 - 1, size=(batch, 3), dtype=np.int64).astype(np.int32)
    rows = np.array([2, 0, 2, 1])  # not grouped by row: the CSR step must sort them
    toks = np.array([4, 9, 4, 72])
    vals = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    temps = np.array([1.0, 0.0, 0.5], np.float32)
    y = torch.from_numpy(logits.copy()).to(_device())
    probs = tl.fused_probs_triton(y, temps, bitmask=torch.from_numpy(bitmask).to(_device()), bias=(rows, toks, vals),
                                  write_mask=True, mask_vocab=vocab)
    biased = ref_bias(logits, rows, toks, vals)
    bits = np.unpackbits(bitmask.view(np.uint8), axis=1, bitorder="little")[:, :vocab].astype(bool)
    keep = np.concatenate([bits, np.ones((batch, width - vocab), bool)], axis=1)
    masked = np.where(keep, biased, -np.inf)
    np.testing.assert_allclose(y.cpu().numpy(), masked, rtol=1e-6)
    np.testing.assert_allclose(probs.cpu().numpy(), ref_softmax(masked, temps), rtol=1e-4, atol=1e-7)


def test_triton_softmax_treats_columns_past_the_mask_as_disallowed():
    tl = _triton()
    logits = np.zeros((2, 40), np.float32)
    logits[:, 35] = 9.0  # past the single mask word: must not win
    bitmask = np.array([[0b1010], [-1]], np.int32)
    probs = tl.softmax_with_temperature_triton(torch.from_numpy(logits).to(_device()), [1.0, 0.0],
                                               torch.from_numpy(bitmask).to(_device()), block=16).cpu().numpy()
    np.testing.assert_allclose(probs[0, [1, 3]], [0.5, 0.5], rtol=1e-6)
    assert probs[0].sum() == pytest.approx(1.0) and probs[1, 0] == 1.0 and probs[:, 32:].max() == 0.0
    with pytest.raises(TypeError, match="int32"):
        tl.softmax_with_temperature_triton(torch.from_numpy(logits), [1.0, 1.0], torch.zeros((2, 2)))


def test_triton_to_csr_keeps_grouped_rows_and_sorts_the_others():
    tl = _triton()
    ptr, toks = tl.to_csr(np.array([0, 0, 2]), 3, np.array([5, 6, 7]))
    assert ptr.tolist() == [0, 2, 2, 3] and toks.tolist() == [5, 6, 7]
    ptr, toks = tl.to_csr(np.array([2, 0, 2, 1]), 3, np.array([1, 2, 3, 4]))
    assert ptr.tolist() == [0, 1, 2, 4] and toks.tolist() == [2, 4, 1, 3]


def test_pipeline_fused_path_matches_the_numpy_path():
    """The pipeline's GPU path (one fused launch) against its numpy path, run here on CPU tensors."""
    _triton()
    from logitgate.processors.pipeline import LogitsPipeline, SamplingParams

    vocab, batch = 300, 6

    def pipeline() -> LogitsPipeline:
        pipe = LogitsPipeline(vocab, eos_token_id=vocab - 1)
        for r in range(batch - 1):  # the last row has no request: left alone
            params = [SamplingParams(temperature=0.0, logit_bias={7: 3.0}),
                      SamplingParams(temperature=0.8, presence_penalty=0.5, frequency_penalty=0.3),
                      SamplingParams(temperature=1.0, repetition_penalty=1.3, allowed_token_ids=range(0, vocab, 3))][r % 3]
            pipe.add_request(r, params, output_token_ids=[3, 3, 9, 12, 7])
        return pipe

    rng = np.random.default_rng(8)
    logits = rng.normal(scale=2, size=(batch, vocab + 20)).astype(np.float32)  # 20 padding columns
    want_logits = logits.copy()
    want = pipeline().process(want_logits)
    got_logits = torch.from_numpy(logits.copy()).to(_device())
    pipe = pipeline()
    got = pipe._process_fused(got_logits, batch, *pipe._sparse(batch))
    np.testing.assert_allclose(got_logits.cpu().numpy(), want_logits, rtol=1e-6)
    np.testing.assert_allclose(got.cpu().numpy(), np.asarray(want), rtol=1e-4, atol=1e-7)
