"""The fast paths of the DP k-NN / r-N owner give the very bits of the reference paths.

* Ball counts: brute force over all (instance, row) pairs (``LabelIndex``'s fast path)
  against the kd-tree (scipy's ``cKDTree.query_ball_point``, the reference), on random and
  adversarial inputs: rows on a lattice, duplicates, radii equal to actual pair distances
  (computed in several ways) and one ulp either side, 1 to 13 features (the kd-tree's
  summation order changes at 8). Deliberately broken variants (``<`` for ``<=``, the
  feature sum in plain order for D >= 8) are caught by the same inputs.
* Overlap graph: the all-pairs edge test against the previous implementation (kept below).
* Clique bounds: the dense-matrix path against the CSR path and the previous implementation.
* The interactive conversion and the converted k-NN: brute-force vs kd-tree path, same
  radii, labels and random draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from ppknn.core.data import DomainBounds
from ppknn.protocols.dp_knn import cliques
from ppknn.protocols.dp_knn import index as index_module
from ppknn.protocols.dp_knn.cliques import clique_bounds
from ppknn.protocols.dp_knn.conversion import convert_interactive
from ppknn.protocols.dp_knn.index import MAX_FEATURES, LabelIndex, squared_distances
from ppknn.protocols.dp_knn.knn import classify_knn
from ppknn.protocols.dp_knn.overlap import (
    EDGE_SLACK,
    OverlapGraph,
    _all_pair_edges,
    overlap_graph,
)


# --------------------------------------------------------------------------- inputs
def _rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    kind = int(rng.integers(4))
    if kind == 0:  # a coarse lattice: many equal distances
        return rng.integers(0, 4, (n, d)) * 0.1
    if kind == 1:  # duplicates
        X = rng.random((n, d))
        X[rng.integers(0, n, n // 3)] = X[0]
        return X
    if kind == 2:  # another scale
        return rng.random((n, d)) * 10 ** rng.uniform(-3, 3)
    return np.round(rng.normal(size=(n, d)), 2)


def _interleaved(x: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Squared distances summed as the kd-tree sums a row's (four interleaved accumulators)."""
    d = x.shape[1]
    full = d - d % 4
    s = np.zeros((len(x), len(X)))
    if full:
        acc = [cdist(x[:, j:full:4], X[:, j:full:4], "sqeuclidean") for j in range(4)]
        s = ((acc[0] + acc[1]) + acc[2]) + acc[3]
    for k in range(full, d):
        diff = np.subtract.outer(x[:, k], X[:, k])
        s = s + diff * diff
    return s


def _case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows, labels, instances (half of them rows) and radii (Q, 9) on the boundary."""
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(1, 14)), int(rng.integers(1, 120))
    X = _rows(rng, n, d)
    y = rng.integers(0, 3, n)
    x = np.concatenate([X[rng.integers(0, n, 6)], _rows(rng, 6, d)])
    j = rng.integers(0, n, len(x))
    exact = [np.sqrt(_interleaved(x, X[j]).diagonal()),
             np.sqrt(cdist(x, X[j], "sqeuclidean").diagonal()),
             np.linalg.norm(x - X[j], axis=1)]
    radii = exact + [np.nextafter(r, np.inf) for r in exact] + [np.nextafter(r, 0) for r in exact]
    return X, y, x, np.stack(radii, axis=1)


def _kd_totals(X: np.ndarray, x: np.ndarray, radii: np.ndarray) -> np.ndarray:
    tree = cKDTree(X)
    return np.stack([tree.query_ball_point(x, radii[:, col], return_length=True)
                     for col in range(radii.shape[1])], axis=1)


def _kd_per_label(X: np.ndarray, y: np.ndarray, x: np.ndarray, r: np.ndarray, c: int
                  ) -> np.ndarray:
    out = np.zeros((len(x), c), dtype=np.int64)
    for label in range(c):
        if np.any(y == label):
            out[:, label] = cKDTree(X[y == label]).query_ball_point(x, r, return_length=True)
    return out


@pytest.fixture
def brute(monkeypatch):
    """Force the brute-force path (small blocks and word segments, to cross their edges)."""
    monkeypatch.setattr(LabelIndex, "prefers_brute_force", lambda self, head, trees: True)
    monkeypatch.setattr(index_module, "PAIR_BLOCK", 64)
    monkeypatch.setattr(index_module, "_LANE", 2)


CASES = range(60)


# --------------------------------------------------------------------------- ball counts
@pytest.mark.parametrize("seed", CASES)
def test_brute_force_counts_are_the_kd_tree_counts(brute, seed):
    X, y, x, radii = _case(seed)
    idx = LabelIndex(X, y, n_classes=3)
    np.testing.assert_array_equal(idx.ball_counts(x, radii), _kd_totals(X, x, radii))
    for col in range(radii.shape[1]):
        r = radii[:, col]
        want = _kd_per_label(X, y, x, r, 3)
        idx._memo = None
        np.testing.assert_array_equal(idx.radius_counts(x, r), want)
        np.testing.assert_array_equal(idx.total_counts(x, r), _kd_totals(X, x, r[:, None])[:, 0])


@pytest.mark.parametrize("seed", range(8))
def test_grouped_and_broadcast_thresholds_agree(brute, seed):
    """Few distinct radius rows go through scalar comparisons, many through the broadcast."""
    rng = np.random.default_rng(seed)
    X, y = rng.random((300, 3)), rng.integers(0, 2, 300)
    x = rng.random((64, 3))
    idx = LabelIndex(X, y, n_classes=2)
    few = np.repeat(np.sort(rng.random((2, 4)), axis=1), 32, axis=0)  # 2 distinct rows
    many = np.sort(rng.random((64, 4)), axis=1)
    for radii in (few, many):
        np.testing.assert_array_equal(idx.ball_counts(x, radii), _kd_totals(X, x, radii))


def test_the_adversarial_inputs_catch_broken_variants():
    """``<`` instead of ``<=`` is caught by these inputs; ``<=`` on the same sums is right."""
    strict = tested = 0
    for seed in CASES:
        X, _, x, radii = _case(seed)
        if X.shape[1] > MAX_FEATURES:
            continue
        tested += 1
        ref = _kd_totals(X, x, radii)
        s = squared_distances(x, X)
        t2 = radii * radii
        strict += np.any(ref != (s[:, :, None] < t2[:, None, :]).sum(axis=1))
        np.testing.assert_array_equal(ref, (s[:, :, None] <= t2[:, None, :]).sum(axis=1))
    assert tested > 20
    assert strict > tested // 2


def test_from_8_features_the_kd_tree_counts_itself(brute):
    """From 8 features the kd-tree's boundary rows depend on its shape: brute force is off.

    A one-row kd-tree decides at its root with the features summed in order, a big
    one at its leaves with the interleaved sum: at the boundary they can disagree.
    """
    X = np.full((1, 10), 0.5)
    x = np.random.default_rng(53).random((200, 10))
    seq = cdist(x, X, "sqeuclidean")[:, 0]
    r = np.sqrt(_interleaved(x, X)[:, 0])
    differ = (seq <= r * r) != (_interleaved(x, X)[:, 0] <= r * r)
    assert differ.any()  # the two sums straddle some radii
    idx = LabelIndex(X, np.zeros(1, dtype=np.int64), n_classes=1)
    with pytest.raises(ValueError):
        squared_distances(x, X)
    np.testing.assert_array_equal(idx.radius_counts(x, r)[:, 0],
                                  cKDTree(X).query_ball_point(x, r, return_length=True))
    for seed in CASES:
        X, y, x, radii = _case(seed)
        if X.shape[1] > MAX_FEATURES:
            idx = LabelIndex(X, y, n_classes=3)
            np.testing.assert_array_equal(idx.ball_counts(x, radii), _kd_totals(X, x, radii))
            np.testing.assert_array_equal(idx.radius_counts(x, radii[:, 0]),
                                          _kd_per_label(X, y, x, radii[:, 0], 3))


def test_the_path_choice_changes_nothing(monkeypatch):
    rng = np.random.default_rng(3)
    X, y = rng.random((400, 5)), rng.integers(0, 2, 400)
    x, r = rng.random((50, 5)), rng.uniform(0.05, 0.8, 50)
    radii = np.sort(rng.uniform(0.05, 0.8, (50, 10)), axis=1)
    got = {}
    for choice in (True, False):
        monkeypatch.setattr(LabelIndex, "prefers_brute_force", lambda self, h, t, c=choice: c)
        idx = LabelIndex(X, y, n_classes=2)
        got[choice] = (idx.ball_counts(x, radii), idx.radius_counts(x, r))
    for a, b in zip(got[True], got[False]):
        np.testing.assert_array_equal(a, b)


def test_the_cost_model_picks_brute_force_for_big_balls_only():
    rng = np.random.default_rng(0)
    idx = LabelIndex(rng.random((4000, 5)), rng.integers(0, 2, 4000), n_classes=2)
    x = rng.random((100, 5))
    _, (big, _) = idx._sample(x, np.full((100, 10), 0.5))
    _, (small, _) = idx._sample(x, np.full((100, 1), 0.02))
    assert idx.prefers_brute_force(big, 1)
    assert not idx.prefers_brute_force(small, 2)


def test_remembered_counts_are_used_only_for_the_same_batch(brute):
    rng = np.random.default_rng(7)
    X, y = rng.random((200, 2)), rng.integers(0, 2, 200)
    idx = LabelIndex(X, y, n_classes=2)
    x = rng.random((30, 2))
    radii = np.sort(rng.uniform(0.05, 0.5, (30, 4)), axis=1)
    idx.ball_counts(x, radii)
    pick = radii[np.arange(30), rng.integers(0, 4, 30)]
    assert idx._recall(x, pick) is not None
    np.testing.assert_array_equal(idx.radius_counts(x, pick), _kd_per_label(X, y, x, pick, 2))
    other = pick.copy()
    other[3] = np.nextafter(other[3], 1.0)  # a radius the batch did not count
    assert idx._recall(x, other) is None
    np.testing.assert_array_equal(idx.radius_counts(x, other), _kd_per_label(X, y, x, other, 2))
    moved = x.copy()
    moved[0, 0] += 1e-3
    assert idx._recall(moved, pick) is None
    np.testing.assert_array_equal(idx.radius_counts(moved, pick),
                                  _kd_per_label(X, y, moved, pick, 2))


def test_empty_labels_and_empty_index(brute):
    X = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    idx = LabelIndex(X, np.array([2, 2, 0]), n_classes=4)
    x = np.array([[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(idx.radius_counts(x, np.array([0.0, 2.0])),
                                  [[1, 0, 1, 0], [1, 0, 2, 0]])
    empty = LabelIndex(np.zeros((0, 2)), np.zeros(0, dtype=np.int64), n_classes=2)
    assert empty.ball_counts(x, np.ones((2, 3))).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert empty.radius_counts(x, np.ones(2)).tolist() == [[0, 0], [0, 0]]


# --------------------------------------------------------------------------- overlap graph
def _reference_all_pair_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The all-pairs edge test as it was before the fast path (one block)."""
    q, dim = x.shape
    i, j = np.arange(0, q - 1), np.arange(1, q)
    sq = np.zeros((len(i), len(j)))
    for a in range(dim):
        diff = x[i, a][:, None] - x[j, a][None, :]
        sq += diff * diff
    reach = (r[i][:, None] + r[j][None, :]) * (1.0 + EDGE_SLACK)
    near = (sq <= reach * reach * (1.0 + 1e-6) + 1e-300) & (j[None, :] > i[:, None])
    ci, cj = np.nonzero(near)
    ci, cj = i[ci], j[cj]
    dist = np.linalg.norm(x[ci] - x[cj], axis=1)
    keep = dist <= (r[ci] + r[cj]) * (1.0 + EDGE_SLACK)
    return np.stack([ci[keep], cj[keep]], axis=1).astype(np.int64)


@pytest.mark.parametrize("seed", range(40))
def test_all_pair_edges_are_the_reference_edges(seed):
    rng = np.random.default_rng(seed)
    q, d = int(rng.integers(2, 150)), int(rng.integers(1, 10))
    x = _rows(rng, q, d)
    dist = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    r = dist[np.arange(q), rng.integers(0, q, q)] / 2  # radii summing to actual distances
    r = np.where(r > 0, r, 0.1)
    r[::3] = np.nextafter(r[::3], np.inf)
    # pairs exactly on the edge test's boundary: dist == (r_a + r_b)(1 + EDGE_SLACK), +- 1 ulp
    for a, b in rng.integers(0, q, (q // 4, 2)):
        if a != b and dist[a, b] > 0:
            half = dist[a, b] / (2.0 * (1.0 + EDGE_SLACK))
            r[a] = r[b] = np.nextafter(half, [0.0, np.inf, half][int(rng.integers(3))])
    if seed % 5 == 0:  # beyond the safe range: every candidate goes to the exact test
        r[0] = 1e-200
    got = _all_pair_edges(x, r)
    np.testing.assert_array_equal(got, _reference_all_pair_edges(x, r))


def test_adjacency_is_the_previous_matrix():
    rng = np.random.default_rng(1)
    x, r = rng.random((200, 2)), rng.uniform(0.01, 0.1, 200)
    g = overlap_graph(x, r)
    i, j = g.edges[:, 0], g.edges[:, 1]
    old = sparse.csr_matrix((np.ones(2 * len(i), dtype=bool),
                             (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(g.n, g.n))
    new = g.adjacency()
    np.testing.assert_array_equal(new.indptr, old.indptr)
    np.testing.assert_array_equal(new.indices, old.indices)
    assert (new != old).nnz == 0


# --------------------------------------------------------------------------- cliques
def _reference_greedy_clique(nbrs: list[int]) -> int:
    n = len(nbrs)
    m = np.unpackbits(np.frombuffer(b"".join(b.to_bytes((n + 7) // 8, "little") for b in nbrs),
                                    dtype=np.uint8).reshape(n, -1), axis=1,
                      bitorder="little")[:, :n].astype(bool)
    cand = np.ones(n, dtype=bool)
    degree = m.sum(axis=1).astype(np.int64)
    size = 0
    while cand.any():
        v = int(np.argmax(np.where(cand, degree, -1)))
        size += 1
        gone = cand & ~m[v]
        cand &= m[v]
        degree -= m[:, gone].sum(axis=1)
    return size


def _reference_clique_bounds(graph: OverlapGraph):
    """clique_bounds as it was: scipy sub-matrices, greedy colouring by numpy, the CSR path."""
    n_comp, comp = graph.n_components, graph.component
    sizes = np.bincount(comp, minlength=n_comp).astype(np.int64)
    n_edges = np.bincount(comp[graph.edges[:, 0]], minlength=n_comp) if len(graph.edges) \
        else np.zeros(n_comp, dtype=np.int64)
    size = sizes.copy()
    exact = np.ones(n_comp, dtype=bool)
    method = np.where(sizes == 1, 0, 1).astype(np.int8)
    lower = size.copy()
    hard = np.flatnonzero(n_edges < sizes * (sizes - 1) // 2)
    i, j = graph.edges[:, 0], graph.edges[:, 1]
    adj = sparse.csr_matrix((np.ones(2 * len(i), dtype=bool),
                             (np.concatenate([i, j]), np.concatenate([j, i]))),
                            shape=(graph.n, graph.n))
    for c in hard:
        nodes = np.flatnonzero(comp == c)
        sub = adj[nodes][:, nodes].tocsr()
        sub.sort_indices()
        indptr, indices = sub.indptr.astype(np.int64), sub.indices.astype(np.int64)
        order, degeneracy = cliques._degeneracy_order(indptr, indices)
        smallest_last = order[::-1]
        colours = cliques._greedy_colours(smallest_last, indptr, indices)
        ub = min(colours, degeneracy + 1)
        nbrs = cliques._bitsets(smallest_last, indptr, indices)
        start = max(2, _reference_greedy_clique(nbrs)) if 2 < ub else 2
        search = cliques._Search(nbrs, best=start, target=ub,
                                 limits=cliques._Limits(None, None))
        if search.best < ub:
            search.expand(0, (1 << len(order)) - 1, top=True)
        size[c], exact[c], lower[c], method[c] = search.best, True, search.best, 2
    return size, exact, lower, method


@pytest.mark.parametrize("seed", range(30))
def test_clique_bounds_are_the_reference_bounds(seed):
    rng = np.random.default_rng(seed)
    q, d = int(rng.integers(3, 120)), int(rng.integers(1, 4))
    x = rng.random((q, d)) * rng.choice([1.0, 3.0, 10.0])
    r = rng.uniform(0.05, 0.6, q) * rng.choice([0.3, 1.0], q)
    g = overlap_graph(x, r)
    got = clique_bounds(g, work_limit=None)
    want = _reference_clique_bounds(g)
    for a, b in zip((got.size, got.exact, got.lower, got.method), want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(12))
def test_dense_and_csr_component_paths_agree(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 90))
    upper = np.triu(rng.random((n, n)) < rng.uniform(0.05, 0.95), 1)
    dense = upper | upper.T
    adj = sparse.csr_matrix(dense)
    adj.sort_indices()
    indptr, indices = adj.indptr.astype(np.int64), adj.indices.astype(np.int64)
    assert cliques._component_bound_dense(dense, cliques._Limits(None, None)) == \
        cliques._component_bound(indptr, indices, cliques._Limits(None, None))
    order, _ = cliques._degeneracy_order(indptr, indices)
    nbrs = cliques._bitsets(order[::-1], indptr, indices)
    assert cliques._colour_count(cliques._outside(nbrs)) == \
        cliques._greedy_colours(order[::-1], indptr, indices)
    assert cliques._greedy_clique(nbrs) == _reference_greedy_clique(nbrs)


# --------------------------------------------------------------------------- end to end
@pytest.mark.parametrize("k", [1, 7, 30])
def test_conversion_and_knn_are_the_same_on_both_paths(monkeypatch, k):
    rng = np.random.default_rng(k)
    X, y = rng.random((600, 4)), rng.integers(0, 3, 600)
    x = rng.random((80, 4))
    ks = np.where(rng.random(80) < 0.5, k, k + 3)
    bounds = DomainBounds(np.zeros(4), np.ones(4))
    runs = []
    for choice in (True, False):
        monkeypatch.setattr(LabelIndex, "prefers_brute_force", lambda self, h, t, c=choice: c)
        idx = LabelIndex(X, y, n_classes=3)
        gen = np.random.default_rng(11)
        conv = convert_interactive(idx, x, ks, epsilon=1.0, bounds=bounds, rng=gen)
        res = classify_knn(idx, x, ks, algorithm="interactive", epsilon=1.0, rng=gen,
                           bounds=bounds)
        runs.append((conv.radii, conv.saturated, res.radii, res.labels, res.rn.sensitivity,
                     gen.bit_generator.state["state"]["state"]))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
