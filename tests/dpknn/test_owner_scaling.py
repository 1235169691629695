"""The DP owner's large-batch paths give the very answers of the previous code.

The previous index, overlap graph and clique search are kept verbatim in
``tests/dpknn/reference``. Compared here, on seeded corpora and a hypothesis property:

* ball counts above 7 features by brute force (matrix-product distances, the kd-trees
  asked where a row lies within rounding of a radius) against the kd-tree counts, with
  radii exactly on the kd-tree's boundary; a variant that skips the kd-tree there is
  caught;
* the overlap edges of large batches (the direct test of every pair on dense graphs,
  the bucket searches with a plain sort of the keys on sparse ones);
* clique bounds through the dense matrix up to 12,288 vertices, the degree scan on big
  components and the iterative search, against the recursive search; a clique of
  3,000 vertices (far deeper than Python's recursion limit) is searched; a broken
  search (a vertex not taken out after its branch) is caught;
* the interactive DP k-NN end to end: labels, radii and sensitivities equal.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import cKDTree

from ppknn.core.data import DomainBounds
from ppknn.protocols.dp_knn import cliques, overlap
from ppknn.protocols.dp_knn import index as index_module
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import classify_knn
from tests.dpknn.reference import ref_cliques, ref_overlap, reference_knn
from tests.dpknn.reference.ref_index import LabelIndex as RefIndex
from tests.dpknn.test_fast_counts import _case, _kd_per_label, _kd_totals


@pytest.fixture
def small_blocks(monkeypatch):
    """Brute force everywhere, with small blocks and word segments (to cross their edges)."""
    monkeypatch.setattr(LabelIndex, "prefers_brute_force", lambda self, head, trees: True)
    monkeypatch.setattr(index_module, "PAIR_BLOCK", 64)
    monkeypatch.setattr(index_module, "HD_PAIR_BLOCK", 64)
    monkeypatch.setattr(index_module, "_LANE", 2)


def _high_cases():
    return [c for c in map(_case, range(200)) if c[0].shape[1] > index_module.MAX_FEATURES]


# --------------------------------------------------------------------------- counts
def test_high_dimension_brute_force_is_the_kd_tree(small_blocks):
    cases = _high_cases()
    assert len(cases) > 40
    for X, y, x, radii in cases:
        idx = LabelIndex(X, y, n_classes=3)
        np.testing.assert_array_equal(idx.ball_counts(x, radii), _kd_totals(X, x, radii))
        for col in range(radii.shape[1]):  # the remembered batch, one radius per instance
            np.testing.assert_array_equal(idx.radius_counts(x, radii[:, col]),
                                          _kd_per_label(X, y, x, radii[:, col], 3))
        fresh = LabelIndex(X, y, n_classes=3)  # no remembered batch
        np.testing.assert_array_equal(fresh.radius_counts(x, radii[:, 0]),
                                      _kd_per_label(X, y, x, radii[:, 0], 3))


def test_skipping_the_kd_tree_at_the_boundary_is_caught(small_blocks, monkeypatch):
    """Broken variant: the rows within rounding of a radius counted as outside."""
    monkeypatch.setattr(LabelIndex, "_settle",
                        lambda self, x, radii, counts, unsure, totals: counts)
    caught = 0
    for X, y, x, radii in _high_cases():
        caught += not np.array_equal(LabelIndex(X, y, n_classes=3).ball_counts(x, radii),
                                     _kd_totals(X, x, radii))
    assert caught > 10


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(8, 40), n=st.integers(1, 300))
def test_high_dimension_counts_property(seed, d, n):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) if seed % 2 else rng.integers(0, 2, (n, d)).astype(float)
    y = rng.integers(0, 2, n)
    x = np.concatenate([X[rng.integers(0, n, 5)], rng.random((5, d))])
    dist = np.sqrt(((x[:, None, :] - X[None, rng.integers(0, n, 4), :]) ** 2).sum(-1))
    radii = np.concatenate([dist, np.nextafter(dist, 0), rng.random((10, 2)) * d ** 0.5], 1)
    idx, ref = LabelIndex(X, y, n_classes=2), RefIndex(X, y, n_classes=2)
    np.testing.assert_array_equal(idx.ball_counts(x, radii), ref.ball_counts(x, radii))
    np.testing.assert_array_equal(idx.radius_counts(x, radii[:, 0]),
                                  ref.radius_counts(x, radii[:, 0]))
    np.testing.assert_array_equal(ref.ball_counts(x, radii),
                                  np.stack([cKDTree(X).query_ball_point(x, radii[:, c],
                                                                        return_length=True)
                                            for c in range(radii.shape[1])], 1))


# --------------------------------------------------------------------------- overlap graph
def _batch(rng, q, d, scale):
    x = rng.random((q, d))
    r = rng.uniform(0.2, 1.0, q) * scale * rng.choice([0.25, 1.0, 3.0], q)
    return x, r


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), q=st.integers(2, 300), d=st.integers(1, 6),
       scale=st.sampled_from([0.01, 0.05, 0.2, 0.6]))
def test_large_batch_edges_are_the_previous_edges(seed, q, d, scale):
    x, r = _batch(np.random.default_rng(seed), q, d, scale)
    ref = ref_overlap.overlap_edges(x, r)
    old = overlap.BRUTE_FORCE_MAX
    try:
        overlap.BRUTE_FORCE_MAX = 0  # as if the batch were large: dense test or buckets
        np.testing.assert_array_equal(overlap.overlap_edges(x, r), ref)
    finally:
        overlap.BRUTE_FORCE_MAX = old


def test_both_large_batch_paths_are_taken():
    rng = np.random.default_rng(1)
    x, r = _batch(rng, 400, 3, 0.3)
    assert overlap._dense(x, r)
    x, r = _batch(rng, 400, 3, 0.01)
    assert not overlap._dense(x, r)


# --------------------------------------------------------------------------- cliques
def _same_bounds(a, b):
    for f in ("size", "exact", "lower", "method"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


@pytest.mark.parametrize("seed", range(12))
def test_clique_bounds_are_the_previous_bounds(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    x, r = _batch(rng, int(rng.integers(50, 400)), int(rng.integers(1, 5)),
                  float(rng.choice([0.03, 0.1, 0.3])))
    g = overlap.overlap_graph(x, r)
    ref = ref_cliques.clique_bounds(g, time_limit_s=600.0)
    _same_bounds(cliques.clique_bounds(g, work_limit=None), ref)
    # the sparse-matrix path with the degree scan (not the buckets) on big components
    monkeypatch.setattr(cliques, "_DENSE_MAX", 10)
    monkeypatch.setattr(cliques, "_COMPILED_MAX", 10)
    monkeypatch.setattr(cliques, "_SCAN_MAX", 10)
    monkeypatch.setattr(cliques, "_SCAN_PER_EDGE", 10**9)
    _same_bounds(cliques.clique_bounds(g, work_limit=None), ref)
    monkeypatch.setattr(cliques, "_SCAN_PER_EDGE", 0)  # ... and with the buckets
    _same_bounds(cliques.clique_bounds(g, work_limit=None), ref)


def test_a_deep_clique_is_searched_without_recursion(monkeypatch):
    """ω = 2,900: 3,000 vertices, all joined but the 100 pairs of a matching on the first 200."""
    monkeypatch.setattr(cliques, "_GREEDY_MAX", 0)  # no head start: the search goes deep
    n = 3000
    i, j = np.triu_indices(n, 1)
    drop = (i < 200) & (j == i + 1) & (i % 2 == 0)
    edges = np.stack([i[~drop], j[~drop]], 1).astype(np.int64)
    g = overlap.OverlapGraph(n=n, edges=edges, component=np.zeros(n, dtype=np.int64),
                             n_components=1)
    res = cliques.clique_bounds(g, work_limit=None)
    assert res.size.tolist() == [n - 100] and res.exact.tolist() == [True]


def test_a_broken_search_is_caught(monkeypatch):
    """Broken variant: after a branch the parent resumes one vertex too far on."""
    def broken(self, frame):
        if self.best >= self.target:
            return True
        frame[1] ^= 1 << frame[2][frame[4]]
        frame[4] -= 2
        return False

    # the Python search (the compiled one's mutations: tests/dpknn/test_clique_kernel.py)
    monkeypatch.setattr(cliques, "_kernel", None)
    monkeypatch.setattr(cliques._Search, "_after_child", broken)
    monkeypatch.setattr(cliques, "_GREEDY_MAX", 0)  # the search must find the clique
    differ = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        x, r = _batch(rng, 120, 2, 0.08)
        g = overlap.overlap_graph(x, r)
        ref = ref_cliques.clique_bounds(g, time_limit_s=600.0)
        differ += not np.array_equal(cliques.clique_bounds(g, work_limit=None).size,
                                     ref.size)
    assert differ > 0


# --------------------------------------------------------------------------- end to end
@pytest.mark.parametrize("d,n,q", [(2, 800, 300), (5, 1500, 500), (9, 1200, 300),
                                   (24, 2000, 200)])
@pytest.mark.parametrize("seed", range(2))
def test_interactive_knn_answers_are_the_previous_answers(d, n, q, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) ** 2
    y = (X[:, 0] + 0.3 * rng.random(n) > 0.5).astype(np.int64)
    x = rng.random((q, d))
    bounds = DomainBounds(np.zeros(d), np.ones(d))
    ref = reference_knn(X, y, 2, x, 30, epsilon=1.0, bounds=bounds,
                        rng=np.random.default_rng(seed + 7))
    monkeypatch.setattr(overlap, "BRUTE_FORCE_MAX", 100)  # the large-batch graph paths
    monkeypatch.setattr(cliques, "_DENSE_MAX", 150)  # and big components too
    monkeypatch.setattr(cliques, "_COMPILED_MAX", 150)
    got = classify_knn(LabelIndex(X, y, n_classes=2), x, 30, algorithm="interactive",
                       epsilon=1.0, rng=np.random.default_rng(seed + 7), bounds=bounds)
    np.testing.assert_array_equal(got.radii, ref[1])
    np.testing.assert_array_equal(got.rn.sensitivity, ref[2])
    np.testing.assert_array_equal(got.labels, ref[0])
    assert math.isfinite(got.epsilon)
