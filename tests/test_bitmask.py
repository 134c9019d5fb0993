"""Token bitmasks: helpers and apply_token_bitmask_inplace on every backend against a plain reference."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

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
from logitgate.kernels.bitmask import bitmask_words

SRC = Path(__file__).resolve().parents[1] / "src"


# ----------------------------------------------------------------------------- references


def reference_bits(bitmask: np.ndarray, width: int) -> np.ndarray:
    """bool [rows, width]: token allowed, by a plain per-token loop over the packed words (no kernel code)."""
    bitmask = np.atleast_2d(bitmask)
    out = np.zeros((bitmask.shape[0], width), bool)
    words = bitmask.astype(np.int64) & 0xFFFFFFFF
    for t in range(min(width, bitmask.shape[1] * 32)):
        out[:, t] = (words[:, t // 32] >> (t % 32)) & 1 == 1
    return out


def reference_apply(logits, bitmask, indices=None, vocab_size=None):
    """The documented semantics, written the slow obvious way."""
    out = np.array(logits, dtype=np.float64, copy=True)
    one_d = out.ndim == 1
    out = np.atleast_2d(out)
    vocab = out.shape[1] if vocab_size is None else vocab_size
    allowed = reference_bits(bitmask, vocab)  # columns past the mask's bits stay False = masked
    for r in range(out.shape[0]) if indices is None else indices:
        out[r, :vocab] = np.where(allowed[r], out[r, :vocab], -np.inf)
    return out[0] if one_d else out


def random_mask(rng, rows, vocab, density=0.5):
    """int32 [rows, ceil(vocab/32)] with random bits plus whole allowed/forbidden words."""
    words = (vocab + 31) // 32
    bits = rng.random((rows, words * 32)) < density
    m = np.packbits(bits.astype(np.uint8), axis=1, bitorder="little").view(np.int32).copy()
    u = rng.random(m.shape)
    m[u < 0.25] = -1
    m[(u >= 0.25) & (u < 0.4)] = 0
    return m


# ----------------------------------------------------------------------------- helpers


@given(ids=st.sets(st.integers(0, 2_000), max_size=300), extra=st.integers(0, 40))
@settings(max_examples=150, deadline=None)
def test_ids_roundtrip(ids, extra):
    vocab = (max(ids) + 1 if ids else 1) + extra
    row = bitmask_from_ids(sorted(ids), vocab)
    assert row.shape == (bitmask_words(vocab),) and row.dtype == np.int32
    assert bitmask_to_ids(row, vocab).tolist() == sorted(ids)
    assert bitmask_count(row, vocab) == len(ids)
    assert reference_bits(row, vocab)[0].nonzero()[0].tolist() == sorted(ids)
    for t in range(vocab):
        if t % 7 == 0 or t in ids:
            assert bitmask_test(row, t) == (t in ids)


@given(ids=st.lists(st.integers(0, 95), max_size=200), start=st.booleans())
@settings(max_examples=100, deadline=None)
def test_set_and_clear_match_python_sets(ids, start):
    row = bitmask_from_ids(range(96) if start else [], 96)
    bitmask_clear(row, ids) if start else bitmask_set(row, ids)
    expected = (set(range(96)) - set(ids)) if start else set(ids)
    assert set(bitmask_to_ids(row).tolist()) == expected


def test_allocate_reset_and_counts_with_vocab_cut():
    m = allocate_token_bitmask(2, 70)
    assert m.shape == (2, 3) and m.dtype == np.int32 and (m == -1).all()
    assert bitmask_count(m[0], 70) == 70 and bitmask_count(m[0]) == 96 and bitmask_count(m[0], 65) == 65
    assert bitmask_to_ids(m[0], 70).tolist() == list(range(70))
    bitmask_clear(m[1], [0, 31, 69])
    assert bitmask_count(m[1], 70) == 67 and not bitmask_test(m[1], 31) and bitmask_test(m[1], 32)
    bitmask_set(m[1], np.array([31], np.uint16))
    assert bitmask_test(m[1], 31) and bitmask_count(m[1], 70) == 68
    reset_token_bitmask(m)
    assert (m == -1).all()
    assert allocate_token_bitmask(0, 0).shape == (0, 0)
    assert bitmask_from_ids([], 0).shape == (0,)


def test_many_ids_dense_path_matches_sparse_path():
    rng = np.random.default_rng(5)
    ids = rng.choice(32_001, size=20_000, replace=False)  # more ids than words: packbits path
    dense = bitmask_from_ids(ids, 32_001)
    sparse = np.zeros_like(dense)
    for chunk in np.array_split(ids, 200):  # fewer ids than words: ufunc.at path
        bitmask_set(sparse, chunk)
    np.testing.assert_array_equal(dense, sparse)
    assert bitmask_to_ids(dense, 32_001).tolist() == sorted(ids.tolist())
    bitmask_clear(dense, ids[:15_000])
    assert bitmask_to_ids(dense, 32_001).tolist() == sorted(ids[15_000:].tolist())


def test_helper_errors_name_the_argument():
    with pytest.raises(IndexError, match="outside"):
        bitmask_from_ids([70], 70)
    with pytest.raises(IndexError):
        bitmask_from_ids([-1], 70)
    with pytest.raises(TypeError, match="ids must be integers"):
        bitmask_from_ids([1.5], 70)
    with pytest.raises(TypeError, match="int32"):
        bitmask_to_ids(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="1-D row"):
        bitmask_count(np.zeros((2, 3), np.int32))
    with pytest.raises(ValueError, match="1-D row"):
        bitmask_set(np.zeros((2, 3), np.int32), [1])
    with pytest.raises(IndexError):
        bitmask_test(np.zeros(2, np.int32), 64)
    with pytest.raises(TypeError, match="token_id"):
        bitmask_test(np.zeros(2, np.int32), 1.0)
    with pytest.raises(ValueError, match="batch_size"):
        allocate_token_bitmask(-1, 10)
    with pytest.raises(TypeError, match="vocab_size"):
        allocate_token_bitmask(1, 10.0)
    with pytest.raises(ValueError, match="backend"):
        allocate_token_bitmask(1, 10, backend="jax")
    with pytest.raises(TypeError, match="numpy array or torch tensor"):
        bitmask_to_ids([1, 2])


def test_helpers_on_torch_tensors_share_memory():
    torch = pytest.importorskip("torch")
    t = allocate_token_bitmask(2, 33, backend="torch")
    assert t.dtype == torch.int32 and tuple(t.shape) == (2, 2) and bool((t == -1).all())
    bitmask_clear(t[0], torch.tensor([32, 5]))
    assert bitmask_to_ids(t[0], 33).tolist() == [i for i in range(33) if i not in (5, 32)]
    assert int(t[0, 0]) == -1 ^ (1 << 5)  # the tensor itself was written
    assert bitmask_count(t[0], 33) == 31 and not bitmask_test(t[0], 5)
    reset_token_bitmask(t)
    assert bool((t == -1).all())
    with pytest.raises(TypeError, match="int32"):
        bitmask_count(torch.zeros(2, dtype=torch.int64))


# ----------------------------------------------------------------------------- apply: numpy


@pytest.mark.parametrize("batch,vocab", [(1, 1), (1, 31), (3, 33), (64, 32), (8, 1000), (17, 4097), (2, 32_001)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_numpy_matches_reference(batch, vocab, dtype):
    rng = np.random.default_rng(batch * 7 + vocab)
    logits = rng.normal(size=(batch, vocab)).astype(dtype)
    mask = random_mask(rng, batch, vocab)
    got = logits.copy()
    apply_token_bitmask_inplace(got, mask)
    np.testing.assert_array_equal(got, reference_apply(logits, mask).astype(dtype))


def test_numpy_large_batch_and_vocab_vectorized_reference():
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(64, 32_001)).astype(np.float32)
    mask = random_mask(rng, 64, 32_001, density=0.1)
    got = logits.copy()
    apply_token_bitmask_inplace(got, mask)
    bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :32_001].astype(bool)
    np.testing.assert_array_equal(got, np.where(bits, logits, -np.inf).astype(np.float32))


@pytest.mark.parametrize("vocab", [33, 1000, 4099])
@pytest.mark.parametrize("indices", [[4, 1], [], [0, 1, 2, 3, 4, 5], np.array([5], np.int32)])
def test_indices_and_vocab_size(vocab, indices):
    rng = np.random.default_rng(vocab)
    logits = rng.normal(size=(6, vocab)).astype(np.float32)
    mask = random_mask(rng, 8, vocab)  # more mask rows than logits rows: allowed with indices
    got = logits.copy()
    apply_token_bitmask_inplace(got, mask, indices=indices, vocab_size=vocab - 3)
    expected = reference_apply(logits, mask, list(indices), vocab - 3).astype(np.float32)
    np.testing.assert_array_equal(got, expected)
    untouched = [r for r in range(6) if r not in list(indices)]
    np.testing.assert_array_equal(got[untouched], logits[untouched])
    np.testing.assert_array_equal(got[:, vocab - 3:], logits[:, vocab - 3:])


def test_columns_past_the_mask_are_masked_and_1d_inputs():
    logits = np.zeros((1, 40), np.float32)
    apply_token_bitmask_inplace(logits, np.array([[-1]], np.int32))
    assert (logits[0, :32] == 0).all() and np.isneginf(logits[0, 32:]).all()
    # xgrammar's default (vocab_size = min(width, 32 * words)) leaves them alone when asked for
    logits = np.zeros((1, 40), np.float32)
    apply_token_bitmask_inplace(logits, np.array([[-1]], np.int32), vocab_size=32)
    assert (logits == 0).all()
    rng = np.random.default_rng(3)
    for vocab in (1, 31, 33, 1000):
        one = rng.normal(size=vocab).astype(np.float32)
        mask = random_mask(rng, 1, vocab)[0]
        got = one.copy()
        apply_token_bitmask_inplace(got, mask)
        np.testing.assert_array_equal(got, reference_apply(one, mask).astype(np.float32))
    # 1-D logits with a 2-D mask use its first row
    one = np.zeros(33, np.float32)
    apply_token_bitmask_inplace(one, np.array([[0, 1], [-1, -1]], np.int32))
    assert one[32] == 0 and np.isneginf(one[:32]).all()


def test_strided_numpy_logits_and_mask():
    rng = np.random.default_rng(4)
    big = rng.normal(size=(6, 2 * 100)).astype(np.float32)
    logits = big[::2, ::2]  # non-contiguous in both axes
    mask_big = random_mask(rng, 6, 100)
    mask = mask_big[::2]
    expected = reference_apply(logits, mask).astype(np.float32)
    others = big[1::2].copy(), big[:, 1::2].copy()
    apply_token_bitmask_inplace(logits, mask)
    np.testing.assert_array_equal(logits, expected)
    np.testing.assert_array_equal(big[1::2], others[0])  # rows and columns in between were not touched
    np.testing.assert_array_equal(big[:, 1::2], others[1])


@pytest.mark.parametrize("bad,exc,match", [
    (dict(logits=np.zeros((2, 3, 4), np.float32)), ValueError, "logits must be"),
    (dict(bitmask=np.zeros((2, 1, 1), np.int32)), ValueError, "bitmask must be"),
    (dict(bitmask=np.zeros((2, 1), np.int64)), TypeError, "bitmask must be int32"),
    (dict(bitmask=np.zeros((2, 1), np.uint32)), TypeError, "bitmask must be int32"),
    (dict(logits=np.zeros((2, 32), np.int32)), TypeError, "logits must be float"),
    (dict(logits=[[0.0] * 32]), TypeError, "numpy array or torch tensor"),
    (dict(bitmask=np.zeros((1, 1), np.int32)), ValueError, "rows"),
    (dict(indices=[2]), IndexError, "indices"),
    (dict(indices=[-1]), IndexError, "indices"),
    (dict(indices=[0.5]), TypeError, "indices"),
    (dict(indices=[[0]]), ValueError, "indices"),
    (dict(vocab_size=33), ValueError, "vocab_size"),
    (dict(vocab_size=-1), ValueError, "vocab_size"),
    (dict(vocab_size=1.5), TypeError, "vocab_size must be an int"),
])
def test_errors(bad, exc, match):
    args = dict(logits=np.zeros((2, 32), np.float32), bitmask=np.zeros((2, 1), np.int32))
    args.update(bad)
    with pytest.raises(exc, match=match):
        apply_token_bitmask_inplace(args["logits"], args["bitmask"], indices=args.get("indices"),
                                    vocab_size=args.get("vocab_size"))


def test_kernel_releases_the_gil():
    from logitgate.kernels.apply_mask import _apply_kernel

    assert _apply_kernel.targetoptions.get("nogil") is True


# ----------------------------------------------------------------------------- apply: torch CPU


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_torch_cpu_matches_reference(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for batch, vocab in [(1, 31), (5, 1001), (3, 32_001)]:
        logits = rng.normal(size=(batch, vocab)).astype(np.float32)
        mask = random_mask(rng, batch, vocab)
        t = torch.from_numpy(logits.copy()).to(getattr(torch, dtype))
        before = t.float().numpy().copy()
        rows = list(range(0, batch, 2))
        apply_token_bitmask_inplace(t, torch.from_numpy(mask), indices=torch.tensor(rows))
        np.testing.assert_array_equal(t.float().numpy(), reference_apply(before, mask, rows).astype(np.float32))
        strided = torch.from_numpy(logits.copy()).t().contiguous().t().to(getattr(torch, dtype))
        assert strided.stride(-1) != 1 or batch == 1
        apply_token_bitmask_inplace(strided, mask)  # numpy mask with torch logits
        np.testing.assert_array_equal(strided.float().numpy(), reference_apply(before, mask).astype(np.float32))


def test_torch_1d_and_requires_grad_leaf_under_no_grad():
    torch = pytest.importorskip("torch")
    t = torch.zeros(40, requires_grad=True)
    with torch.no_grad():
        apply_token_bitmask_inplace(t, torch.tensor([0b101, -1], dtype=torch.int32))
    out = t.detach().numpy()
    assert out[0] == 0 and np.isneginf(out[1]) and out[2] == 0 and np.isneginf(out[3:32]).all()
    assert (out[32:] == 0).all()


# ----------------------------------------------------------------------------- apply: Triton / CUDA

_TRITON_SCRIPT = textwrap.dedent("""
    import os, sys
    assert os.environ["TRITON_INTERPRET"] == "1"
    import numpy as np, torch
    sys.path.insert(0, sys.argv[1])
    from test_bitmask import random_mask, reference_apply
    from logitgate.kernels.apply_mask import apply_token_bitmask_inplace_triton
    rng = np.random.default_rng(2)
    n = 0
    for batch, vocab, dtype in [(1, 1, "float32"), (1, 31, "float32"), (4, 1000, "float16"),
                                (3, 5000, "bfloat16"), (2, 33, "float32")]:
        logits = rng.normal(size=(batch, vocab + 5)).astype(np.float32)
        mask = random_mask(rng, batch + 1, vocab)
        for rows in (None, list(range(0, batch, 2))):
            t = torch.from_numpy(logits.copy()).to(getattr(torch, dtype))
            before = t.float().numpy().copy()
            apply_token_bitmask_inplace_triton(t, torch.from_numpy(mask), indices=rows, vocab_size=vocab + 3)
            exp = reference_apply(before, mask[:batch], rows, vocab + 3).astype(np.float32)
            np.testing.assert_array_equal(t.float().numpy(), exp)
            n += 1
    strided = torch.from_numpy(rng.normal(size=(100, 3)).astype(np.float32)).t()
    mask = random_mask(rng, 3, 100)
    before = strided.numpy().copy()
    apply_token_bitmask_inplace_triton(strided, torch.from_numpy(mask))
    np.testing.assert_array_equal(strided.numpy(), reference_apply(before, mask).astype(np.float32))
    print("TRITON-OK", n + 1)
""")


def test_triton_kernel_in_interpreter_subprocess():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _TRITON_SCRIPT, str(Path(__file__).parent)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "TRITON-OK 11" in out.stdout


def test_importing_apply_mask_does_not_import_triton():
    code = "import sys, logitgate.kernels.apply_mask; print('triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


@pytest.mark.gpu
def test_cuda_dispatch_matches_reference():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(3)
    for dtype in ("float32", "float16", "bfloat16"):
        logits = rng.normal(size=(8, 128_256)).astype(np.float32)
        mask = random_mask(rng, 8, 128_256)
        t = torch.from_numpy(logits.copy()).to(getattr(torch, dtype)).cuda()
        before = t.float().cpu().numpy()
        apply_token_bitmask_inplace(t, torch.from_numpy(mask).cuda(), indices=[1, 6])
        bits = np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :128_256].astype(bool)
        expected = before.copy()
        expected[[1, 6]] = np.where(bits[[1, 6]], before[[1, 6]], -np.inf)
        np.testing.assert_array_equal(t.float().cpu().numpy(), expected)
        full = torch.from_numpy(logits.copy()).cuda()
        apply_token_bitmask_inplace(full, mask)  # numpy mask, CUDA logits
        np.testing.assert_array_equal(full.cpu().numpy(), np.where(bits, logits, -np.inf))


def test_logitgate_help_runs():
    out = subprocess.run([sys.executable, "-m", "logitgate.cli.main", "bench", "bitmask", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--repeats" in out.stdout and "--vocab" in out.stdout
