"""Sampling: filters against a brute-force definition, seeded reproducibility, χ² on draws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logitgate.processors.sampling import (
    SamplingError,
    filter_probs,
    make_generator,
    sample_from_probs,
    top_logprobs,
)


def brute_filter(p, k, top_p, min_p):
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    keep = order[: k if 0 < k < len(p) else len(p)]
    if top_p < 1:
        kept, mass, total = [], 0.0, sum(p)
        for i in keep:
            if mass < top_p * total:
                kept.append(i)
            mass += p[i]
        keep = kept
    if min_p > 0 and keep:
        keep = [i for i in keep if p[i] >= min_p * p[keep[0]]]
    out = np.zeros(len(p))
    out[keep] = np.asarray(p)[keep]
    return out / out.sum() if out.sum() > 0 else out


@settings(max_examples=200, deadline=None)
# (no subnormal probabilities: the definition's ``top_p * total`` underflows to 0 for a total of
# 5e-324 and keeps nothing, where the filter keeps the most likely token)
@given(p=st.lists(st.floats(0, 1, allow_subnormal=False), min_size=1, max_size=40).filter(lambda x: sum(x) > 0),
       k=st.integers(0, 45), top_p=st.floats(0.01, 1.0), min_p=st.floats(0.0, 1.0))
def test_filter_matches_definition(p, k, top_p, min_p):
    arr = np.asarray([p], dtype=np.float64)
    got = filter_probs(arr, top_k=[k], top_p=[top_p], min_p=[min_p])[0]
    np.testing.assert_allclose(got, brute_filter(p, k, top_p, min_p), atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(p=st.lists(st.sampled_from([0.0, 0.125, 0.25, 0.5, 1.0]), min_size=1, max_size=40).filter(lambda x: sum(x) > 0),
       k=st.integers(0, 45), top_p=st.floats(0.01, 1.0), min_p=st.floats(0.0, 1.0))
def test_filter_ties_keep_lowest_ids(p, k, top_p, min_p):
    arr = np.asarray([p], dtype=np.float32)
    got = filter_probs(arr, top_k=[k], top_p=[top_p], min_p=[min_p])[0]
    np.testing.assert_allclose(got, brute_filter(p, k, top_p, min_p), atol=1e-6)


def test_large_vocab_ties_top_k_and_top_p():
    rng = np.random.default_rng(3)
    p = rng.integers(1, 6, 20_000).astype(np.float64)   # five values, thousands of ties each
    p /= p.sum()
    for k, top_p in [(3000, 1.0), (0, 0.5), (5000, 0.3), (100, 0.99)]:
        got = filter_probs(p[None], top_k=[k], top_p=[top_p])[0]
        np.testing.assert_allclose(got, brute_filter(p.tolist(), k, top_p, 0.0), atol=1e-12)


def test_top_p_beyond_partial_candidates():
    rng = np.random.default_rng(0)
    p = rng.random(10_000)
    p /= p.sum()
    got = filter_probs(p[None], top_p=[0.95])[0]
    np.testing.assert_allclose(got, brute_filter(p.tolist(), 0, 0.95, 0.0), atol=1e-12)


def test_seeded_sampling_is_reproducible():
    rng = np.random.default_rng(1)
    probs = rng.random((4, 1000))
    probs /= probs.sum(1, keepdims=True)
    a = [sample_from_probs(probs, [make_generator(s) for s in (1, 2, 3, 4)]) for _ in range(2)]
    assert (a[0] == a[1]).all()
    g = [make_generator(7)] * 4
    seq1 = [sample_from_probs(probs[:1], g[:1])[0] for _ in range(20)]
    g = [make_generator(7)]
    seq2 = [sample_from_probs(probs[:1], g)[0] for _ in range(20)]
    assert seq1 == seq2


def test_chi_square_matches_filtered_distribution():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    p = rng.random(50)
    p /= p.sum()
    target = filter_probs(p[None], top_k=[20], top_p=[0.8], min_p=[0.1])[0]
    g = make_generator(123)
    n = 20_000
    draws = np.array([sample_from_probs(target[None], [g])[0] for _ in range(n)])
    support = np.flatnonzero(target)
    assert set(np.unique(draws)) <= set(support.tolist())
    observed = np.bincount(draws, minlength=50)[support]
    _, pvalue = scipy_stats.chisquare(observed, target[support] * n)
    assert pvalue > 1e-3


def test_greedy_one_hot_and_dead_row():
    probs = np.zeros((2, 5))
    probs[0, 3] = 1.0
    assert sample_from_probs(probs[:1], [None]).tolist() == [3]
    with pytest.raises(SamplingError):
        sample_from_probs(probs[1:], [None])


def test_top_logprobs():
    logits = np.log(np.array([[0.1, 0.6, 0.3]]))
    ids, lp = top_logprobs(logits, 2)
    assert ids.tolist() == [[1, 2]]
    np.testing.assert_allclose(np.exp(lp), [[0.6, 0.3]])


@pytest.mark.parametrize("kw", [dict(top_p=[0.0]), dict(top_p=[1.5]), dict(min_p=[-0.1]), dict(top_k=[1, 2])])
def test_bad_parameters(kw):
    with pytest.raises(SamplingError):
        filter_probs(np.ones((1, 4)) / 4, **kw)


def test_torch_filter_and_sample_draws_as_the_numpy_path():
    """The device path (torch ops; here on CPU tensors) against filter_probs + sample_from_probs."""
    torch = pytest.importorskip("torch")
    from logitgate.processors.sampling import filter_and_sample_torch

    rng = np.random.default_rng(5)
    batch, vocab = 12, 3001
    logits = rng.normal(scale=2.5, size=(batch, vocab))
    logits[rng.random((batch, vocab)) < 0.3] = -np.inf
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
    probs[3, :] = 0.0
    probs[3, [7, 9, 11]] = [0.25, 0.5, 0.25]  # ties at the top-k boundary: the lower id kept
    probs[4] = 0.0
    probs[4, 100] = 1.0  # a greedy (one-hot) row
    probs[9] = 0.0
    probs[9, :4] = [0.4, 0.2, 0.2, 0.2]  # min_p 0.5: exactly at the threshold, kept
    top_k = [0, 50, 2, 2, 0, 1, 10, 0, 3000, 3001, 5000, 0]
    top_p = [1.0, 0.9, 1.0, 0.5, 0.3, 1.0, 0.7, 0.05, 0.99, 1.0, 0.8, 1.0]
    min_p = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.02, 0.5, 0.0, 0.2]
    filtered = filter_probs(probs, top_k=top_k, top_p=top_p, min_p=min_p)
    for trial in range(30):
        want = sample_from_probs(filtered, [make_generator(trial * 100 + r) for r in range(batch)])
        got = filter_and_sample_torch(torch.from_numpy(probs), [make_generator(trial * 100 + r) for r in range(batch)],
                                      top_k=top_k, top_p=top_p, min_p=min_p)
        np.testing.assert_array_equal(got, want)
        assert (filtered[np.arange(batch), got] > 0).all()
    assert got[3] in (7, 9) and got[4] == 100
    dead = torch.zeros((2, 5))
    dead[0, 1] = 1.0
    with pytest.raises(SamplingError, match="row 1"):
        filter_and_sample_torch(dead, [None, None])
    with pytest.raises(SamplingError, match="top_p"):
        filter_and_sample_torch(torch.from_numpy(probs), [None] * batch, top_p=0.0)


def test_torch_top_logprobs_match_numpy():
    torch = pytest.importorskip("torch")
    from logitgate.processors.sampling import _top_logprobs_torch

    logits = np.random.default_rng(2).normal(size=(3, 500)).astype(np.float32)
    ids, lp = top_logprobs(logits, 5)
    tids, tlp = _top_logprobs_torch(torch.from_numpy(logits), 5)
    np.testing.assert_array_equal(tids, ids)
    np.testing.assert_allclose(tlp, lp, rtol=1e-5, atol=1e-5)


def test_filter_refuses_negative_or_nan_probabilities():
    probs = np.full((3, 8), 0.125)
    probs[1, 2] = -0.1
    with pytest.raises(SamplingError, match="row 1"):
        filter_probs(probs, top_p=[0.5] * 3)
    probs[1, 2] = np.nan
    with pytest.raises(SamplingError, match="row 1"):
        filter_probs(probs, top_k=[2] * 3)


def test_flat_large_rows_match_the_definition():
    """Rows whose top-p set is most of a large vocabulary (the boundary bin holds thousands of tokens)."""
    rng = np.random.default_rng(11)
    vocab = 50_000
    p = rng.random((3, vocab)) + 0.5  # flat: every value within two octaves
    p[1, ::7] = p[1, 3]  # thousands of ties
    p /= p.sum(axis=1, keepdims=True)
    for k, top_p, min_p in [(0, 0.9, 0.0), (20_000, 0.99, 0.0), (0, 0.3, 0.5), (7_000, 1.0, 0.0)]:
        got = filter_probs(p, top_k=[k] * 3, top_p=[top_p] * 3, min_p=[min_p] * 3)
        for r in range(3):
            np.testing.assert_allclose(got[r], brute_filter(p[r].tolist(), k, top_p, min_p), atol=1e-12)


@pytest.mark.parametrize("vocab", [1, 2, 63, 64, 65, 130, 5000])
def test_draws_follow_the_cumulative_definition(vocab):
    """The draw kernel (block sums, then one block) against numpy's cumsum + searchsorted."""
    rng = np.random.default_rng(vocab)
    probs = rng.random((6, vocab)) ** 3
    probs[rng.random((6, vocab)) < 0.6] = 0.0
    probs[:, rng.integers(0, vocab)] = 0.01
    probs[1, :] = 0.0
    probs[1, vocab - 1] = 1.0  # the last id only
    for seed in range(40):
        got = sample_from_probs(probs, [make_generator(seed * 7 + r) for r in range(6)])
        for r in range(6):
            nz = np.flatnonzero(probs[r] > 0)
            c = np.cumsum(probs[r, nz])
            u = make_generator(seed * 7 + r).random() * c[-1]
            assert got[r] == nz[min(int(np.searchsorted(c, u, side="right")), nz.size - 1)]
