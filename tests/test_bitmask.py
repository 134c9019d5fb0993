"""Token bitmasks: helpers and apply_token_bitmask_inplace on every backend against a plain reference."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logitgate import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_clear,
    bitmask_count,
    bitmask_from_ids,
    bitmask_set,
    bitmask_test,
    bitmask_to_ids,
    reset_token_bitmask,
)


def reference_apply(logits, bitmask, indices=None, vocab_size=None):
    out = logits.astype(np.float64).copy()
    width = out.shape[1]
    vocab = width if vocab_size is None else vocab_size
    rows = range(out.shape[0]) if indices is None else indices
    for r in rows:
        for t in range(vocab):
            w = t // 32
            allowed = w < bitmask.shape[1] and (int(bitmask[r, w]) >> (t % 32)) & 1
            if not allowed:
                out[r, t] = -np.inf
    return out


def random_mask(rng, batch, vocab, density=0.5):
    words = (vocab + 31) // 32
    bits = rng.random((batch, words * 32)) < density
    bits[:, : words * 32 : 97] = True
    packed = np.packbits(bits.astype(np.uint8), axis=1, bitorder="little")
    out = packed.view(np.int32).copy()
    out[rng.random(out.shape) < 0.2] = -1  # realistic: many all-allowed words
    return out


@given(ids=st.sets(st.integers(0, 999), max_size=200))
@settings(max_examples=100, deadline=None)
def test_ids_roundtrip(ids):
    row = bitmask_from_ids(sorted(ids), 1000)
    assert bitmask_to_ids(row, 1000).tolist() == sorted(ids)
    assert bitmask_count(row, 1000) == len(ids)
    for t in list(ids)[:10]:
        assert bitmask_test(row, t)


def test_set_clear_reset_and_allocate():
    m = allocate_token_bitmask(2, 70)
    assert m.shape == (2, 3) and m.dtype == np.int32 and (m == -1).all()
    bitmask_clear(m[1], [0, 31, 69])
    assert bitmask_count(m[1], 70) == 67 and not bitmask_test(m[1], 31)
    bitmask_set(m[1], [31])
    assert bitmask_test(m[1], 31)
    reset_token_bitmask(m)
    assert (m == -1).all()
    with pytest.raises(IndexError):
        bitmask_from_ids([70], 70)
    with pytest.raises(TypeError):
        bitmask_to_ids(np.zeros(3, np.int64))
    torch = pytest.importorskip("torch")
    t = allocate_token_bitmask(1, 33, backend="torch")
    assert t.dtype == torch.int32 and tuple(t.shape) == (1, 2)
    bitmask_clear(t[0], [32])
    assert bitmask_to_ids(t[0], 33).tolist() == list(range(32))


@pytest.mark.parametrize("batch,vocab", [(1, 1), (1, 31), (3, 33), (8, 1000), (64, 32001), (2, 151_936)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_numpy_matches_reference(batch, vocab, dtype):
    rng = np.random.default_rng(batch * 7 + vocab)
    logits = rng.normal(size=(batch, vocab)).astype(dtype)
    mask = random_mask(rng, batch, vocab)
    expected = reference_apply(logits, mask) if vocab < 40_000 else None
    got = logits.copy()
    apply_token_bitmask_inplace(got, mask)
    if expected is None:  # large vocab: vectorized reference
        bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :vocab].astype(bool)
        expected = np.where(bits, logits, -np.inf)
    np.testing.assert_array_equal(got, expected.astype(dtype))


@pytest.mark.parametrize("vocab", [33, 1000, 4099])
def test_indices_and_vocab_size(vocab):
    rng = np.random.default_rng(vocab)
    logits = rng.normal(size=(6, vocab)).astype(np.float32)
    mask = random_mask(rng, 6, vocab)
    got = logits.copy()
    apply_token_bitmask_inplace(got, mask, indices=[4, 1], vocab_size=vocab - 3)
    np.testing.assert_array_equal(got, reference_apply(logits, mask, [4, 1], vocab - 3).astype(np.float32))


def test_logits_wider_than_mask_and_1d():
    logits = np.zeros((1, 40), np.float32)
    apply_token_bitmask_inplace(logits, np.array([[-1]], np.int32))
    assert (logits[0, :32] == 0).all() and np.isneginf(logits[0, 32:]).all()
    one = np.zeros(5, np.float32)
    apply_token_bitmask_inplace(one, np.array([0b11], np.int32))
    assert one.tolist()[:2] == [0.0, 0.0] and np.isneginf(one[2:]).all()


@pytest.mark.parametrize("bad,exc", [
    (dict(logits=np.zeros((2, 3, 4), np.float32)), ValueError),
    (dict(bitmask=np.zeros((2, 1), np.int64)), TypeError),
    (dict(logits=np.zeros((2, 32), np.int32)), TypeError),
    (dict(bitmask=np.zeros((1, 1), np.int32)), ValueError),
    (dict(indices=[2]), IndexError),
    (dict(vocab_size=33), ValueError),
])
def test_errors(bad, exc):
    args = dict(logits=np.zeros((2, 32), np.float32), bitmask=np.zeros((2, 1), np.int32))
    args.update(bad)
    with pytest.raises(exc):
        apply_token_bitmask_inplace(args["logits"], args["bitmask"], indices=args.get("indices"),
                                    vocab_size=args.get("vocab_size"))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_torch_cpu_matches_reference(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(5, 1001)).astype(np.float32)
    mask = random_mask(rng, 5, 1001)
    t = torch.from_numpy(logits.copy()).to(getattr(torch, dtype))
    apply_token_bitmask_inplace(t, torch.from_numpy(mask), indices=[0, 3])
    exp = reference_apply(t.float().numpy(), mask, [0, 3])
    np.testing.assert_array_equal(t.float().numpy(), exp.astype(np.float32))
    strided = torch.from_numpy(logits.copy()).t().contiguous().t()  # non-contiguous rows
    apply_token_bitmask_inplace(strided, torch.from_numpy(mask))
    np.testing.assert_array_equal(strided.numpy(), reference_apply(logits, mask).astype(np.float32))


def test_triton_kernel_interpreted_or_gpu():
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available():
        pytest.skip("Triton needs a GPU or TRITON_INTERPRET=1")
    from logitgate.kernels.apply_mask import apply_token_bitmask_inplace_triton

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    rng = np.random.default_rng(2)
    for batch, vocab in [(1, 31), (4, 1000), (3, 5000)]:
        logits = rng.normal(size=(batch, vocab)).astype(np.float32)
        mask = random_mask(rng, batch, vocab)
        t = torch.from_numpy(logits.copy()).to(dev)
        apply_token_bitmask_inplace_triton(t, torch.from_numpy(mask).to(dev), indices=list(range(0, batch, 2)))
        exp = reference_apply(logits, mask, list(range(0, batch, 2)))
        np.testing.assert_array_equal(t.cpu().numpy(), exp.astype(np.float32))


def test_cuda_dispatch_when_gpu_present():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(8, 128_256)).astype(np.float32)
    mask = random_mask(rng, 8, 128_256)
    t = torch.from_numpy(logits.copy()).cuda()
    apply_token_bitmask_inplace(t, torch.from_numpy(mask).cuda())
    bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :128_256].astype(bool)
    np.testing.assert_array_equal(t.cpu().numpy(), np.where(bits, logits, -np.inf))


def test_apply_releases_the_gil_kernel_is_nogil():
    from logitgate.kernels.apply_mask import _apply_kernel

    assert _apply_kernel.targetoptions.get("nogil") is True


def test_logitgate_help_runs():
    out = subprocess.run([sys.executable, "-m", "logitgate.cli.main", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "bench" in out.stdout and "generate" in out.stdout
