"""An owner's local top-k by passes gives what the partial selection gives, bit for bit.

``_by_partition`` is ``local_topk`` as it was before the passes were added (a partial
selection, then a sort of the k kept), copied here so that the comparison does not depend
on the module's own fallback. Arrays are compared as raw bits, so ``0.0`` against
``-0.0`` and NaN's place count as differences.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core import knn as kernels
from ppknn.core.knn import local_topk


def _by_partition(distances, k):
    q, n = distances.shape
    if n >= k:
        part = np.partition(distances, k - 1, axis=1)[:, :k] if n > k else distances
        return np.sort(part, axis=1)
    pad = np.full((q, k - n), np.inf)
    return np.concatenate([np.sort(distances, axis=1), pad], axis=1)


def _same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


POOL = np.array([0.0, -0.0, 0.5, 1.0, 1.0, 2.0, 3.5, np.inf, np.nan, 1e-300, 7.0])


def _corpus(seed: int = 0):
    """Seeded arrays for the passes and for the partial selection (narrow rows, or wide
    ones with k large): ties, zeros of both signs, NaN, inf."""
    rng = np.random.default_rng(seed)
    for i in range(450):
        q, k = int(rng.integers(0, 6)), int(rng.integers(1, 7))
        way = i % 3
        if way == 0:  # wide: the passes
            n = int(rng.integers(32 * k, 32 * k + 40))
        elif way == 1:  # narrow: the partial selection
            n = int(rng.integers(k + 1, 32 * k))
        else:  # wide with k large: the partial selection
            k = int(rng.integers(9, 40))
            n = int(rng.integers(257, 32 * k))
        kind = rng.integers(0, 3)
        if kind == 0:  # few distinct values: many ties
            a = rng.integers(0, 4, (q, n)).astype(np.float64)
        elif kind == 1:  # the pool's special values
            a = rng.choice(POOL, (q, n))
        else:  # distances as a run has them
            a = rng.random((q, n)) * 3
        yield a, k


def _mismatches(fn) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return sum(not _same_bits(fn(a, k), _by_partition(a, k)) for a, k in _corpus())


def test_passes_match_the_partial_selection_on_a_corpus():
    assert _mismatches(local_topk) == 0


def test_the_passes_are_taken_on_distances():
    rng = np.random.default_rng(1)
    d = rng.random((50, 300))
    out = kernels._smallest_by_passes(d, 5)
    assert out is not None and _same_bits(out, _by_partition(d, 5))


@pytest.mark.parametrize("k", [1, 5])
def test_a_negative_zero_or_nan_hands_over_to_the_partial_selection(k):
    d = np.random.default_rng(2).random((3, 200))
    for special in (-0.0, np.nan, -1.0):
        e = d.copy()
        e[1, 17] = special
        assert kernels._smallest_by_passes(e, k) is None
        assert _same_bits(local_topk(e, k), _by_partition(e, k))


def test_the_input_is_left_as_it_was():
    d = np.random.default_rng(3).random((20, 400))
    before = d.copy()
    local_topk(d, 5)
    assert _same_bits(d, before)


def _strike_every_tie(distances, k):
    """Broken: a pass strikes out every copy of the smallest value, not one."""
    work = distances.copy()
    out = np.empty((len(work), k))
    for j in range(k):
        m = work.min(axis=1)
        out[:, j] = m
        work[work == m[:, None]] = np.inf
    return out


def _no_guard(distances, k):
    """Broken: the passes trusted whatever the row holds (a NaN, a -0.0)."""
    work = distances.copy()
    out = np.empty((len(work), k))
    rows = np.arange(len(work))
    for j in range(k):
        col = work.argmin(axis=1)
        out[:, j] = work[rows, col]
        work[rows, col] = np.inf
    return out


@pytest.mark.parametrize("broken", [_strike_every_tie, _no_guard])
def test_a_broken_selection_is_caught(broken):
    assert _mismatches(broken) > 0


@settings(max_examples=150, deadline=None)
@given(q=st.integers(0, 5), k=st.integers(1, 6), n=st.integers(1, 300),
       seed=st.integers(0, 2**32 - 1), special=st.booleans())
def test_local_topk_property(q, k, n, seed, special):
    rng = np.random.default_rng(seed)
    a = rng.choice(POOL, (q, n)) if special else rng.integers(0, 5, (q, n)) / 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _same_bits(local_topk(a, k), _by_partition(a, k))


def test_a_ring_run_is_the_same_with_either_selection(monkeypatch, tmp_path):
    """Four abalone owners of ~780 rows (the passes) against the partial selection."""
    from ppknn.core.transcript import Transcript
    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario

    sc = parse_scenario({"data": {"dataset": "abalone", "test_fraction": 0.25,
                                  "max_queries": 200},
                         "parties": {"n": 4}, "protocol": {"name": "ppknn-ring", "k": 5},
                         "runtime": {"kind": "inprocess", "channels": True}})

    def run(folder):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = execute(sc, transcript_dir=folder)
        rows = sorted(tuple(r.values()) for r in Transcript(folder).table().to_pylist())
        return rows, [np.asarray(o.predictions) for o in result.outcomes]

    rows, predictions = run(tmp_path / "passes")
    monkeypatch.setattr(kernels, "_PASSES_WIDTH", 10**9)  # the partial selection only
    rows_before, predictions_before = run(tmp_path / "partition")
    assert rows and rows == rows_before
    assert all(np.array_equal(a, b) for a, b in zip(predictions, predictions_before, strict=True))
