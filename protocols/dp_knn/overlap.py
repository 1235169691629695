"""The region overlap graph of a batch of r-N test instances (Definition 10).

Vertex i is the test instance ``(x_i, r_i)``; an edge joins i and j iff their
closed proximity balls intersect, ``δ(x_i, x_j) <= r_i + r_j``. The graph is
built with a spatial index, never by comparing all pairs: radii are grouped
into power-of-two buckets, and for each pair of buckets a
:class:`scipy.spatial.cKDTree` range search with the buckets' largest radii
returns the candidate pairs, which are then filtered exactly. A candidate is
at most twice as far as needed, so the work is proportional to the edges
(within a constant), not to ``Q**2``. Small batches (``Q <= BRUTE_FORCE_MAX``)
test every pair directly, in row blocks: the same exact filter on a candidate
set that holds every pair, so the edges are the same, and for the dense graphs
of large radii it is much faster than the tree searches.

Edges are kept with a relative slack of ``EDGE_SLACK``: two balls that share
a training point as the ball counts see it (distances computed in floating
point) are always joined, so rounding can only add edges, which only
raises the clique size used as sensitivity (still a valid bound).

Examples
--------
>>> import numpy as np
>>> g = overlap_graph(np.array([[0.0], [1.5], [10.0]]), np.array([1.0, 1.0, 1.0]))
>>> g.edges.tolist(), g.component.tolist(), g.n_components
([[0, 1]], [0, 0, 1], 2)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

EDGE_SLACK = 1e-9
"""Relative slack on ``r_i + r_j`` (floating-point safety; adds edges only)."""

BRUTE_FORCE_MAX = 4096
"""Largest batch whose pairs are all tested directly (no spatial index)."""

_BLOCK_PAIRS = 1 << 20
"""Pairs tested per block by the direct test (bounds its memory)."""


@dataclass(frozen=True)
class OverlapGraph:
    """The region overlap graph and its connected components.

    Attributes
    ----------
    n:
        Number of vertices (test instances).
    edges:
        ``(E, 2)`` int64 array of vertex pairs ``i < j``, sorted.
    component:
        ``(n,)`` connected-component label of every vertex, ``0..n_components-1``
        (numbered by their smallest vertex).
    n_components:
        Number of connected components (disconnected subgraphs).
    """

    n: int
    edges: np.ndarray
    component: np.ndarray
    n_components: int

    def adjacency(self) -> sparse.csr_matrix:
        """The symmetric boolean adjacency matrix (CSR)."""
        i, j = self.edges[:, 0], self.edges[:, 1]
        data = np.ones(2 * len(i), dtype=bool)
        return sparse.csr_matrix(
            (data, (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(self.n, self.n)
        )


def _bucket_pairs(tree_a: cKDTree, tree_b: cKDTree, reach: float, same: bool) -> np.ndarray:
    if same:
        return tree_a.query_pairs(reach, output_type="ndarray").astype(np.int64)
    coo = tree_a.sparse_distance_matrix(tree_b, reach, output_type="ndarray")
    return np.stack([coo["i"], coo["j"]], axis=1).astype(np.int64)


def overlap_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Edges ``i < j`` with ``δ(x_i, x_j) <= (r_i + r_j)(1 + EDGE_SLACK)``, sorted.

    ``x`` is ``(Q, D)``, ``r`` is ``(Q,)`` with positive entries (callers
    validate; see :mod:`protocols.dp_knn.validation`).
    """
    x = np.asarray(x, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    if len(x) <= BRUTE_FORCE_MAX:
        return _all_pair_edges(x, r)
    bucket = np.floor(np.log2(r)).astype(np.int64)
    keys = np.unique(bucket)
    members = [np.flatnonzero(bucket == b) for b in keys]
    trees = [cKDTree(x[m]) for m in members]
    rmax = [float(r[m].max()) for m in members]
    found = []
    for a in range(len(keys)):
        for b in range(a, len(keys)):
            reach = (rmax[a] + rmax[b]) * (1.0 + EDGE_SLACK)
            local = _bucket_pairs(trees[a], trees[b], reach, same=a == b)
            if local.size:
                found.append(np.stack([members[a][local[:, 0]], members[b][local[:, 1]]], axis=1))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found)
    pairs = np.sort(pairs, axis=1)  # i < j
    dist = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    keep = dist <= (r[pairs[:, 0]] + r[pairs[:, 1]]) * (1.0 + EDGE_SLACK)
    pairs = pairs[keep & (pairs[:, 0] != pairs[:, 1])]
    if not pairs.size:
        return np.zeros((0, 2), dtype=np.int64)
    n = np.int64(len(x))
    key = np.unique(pairs[:, 0] * n + pairs[:, 1])  # sorted by (i, j), duplicates dropped
    return np.stack([key // n, key % n], axis=1)


def _all_pair_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`overlap_edges` by testing every pair ``i < j`` (row blocks, in order).

    A vectorised pre-test with a generous margin picks the candidates; each
    candidate is then tested exactly as on the tree path (the same distance
    expression, pair by pair), so the edges are the same. They come out sorted
    by ``(i, j)``.
    """
    q, dim = x.shape
    found = []
    rows = max(1, _BLOCK_PAIRS // max(1, q))
    for start in range(0, q - 1, rows):
        stop = min(q - 1, start + rows)
        i = np.arange(start, stop)
        j = np.arange(start + 1, q)
        sq = np.zeros((len(i), len(j)))
        for a in range(dim):
            diff = x[i, a][:, None] - x[j, a][None, :]
            sq += diff * diff
        reach = (r[i][:, None] + r[j][None, :]) * (1.0 + EDGE_SLACK)
        # margin: the pre-test's rounding differs from the exact test's by far less
        near = (sq <= reach * reach * (1.0 + 1e-6) + 1e-300) & (j[None, :] > i[:, None])
        ci, cj = np.nonzero(near)
        ci, cj = i[ci], j[cj]
        dist = np.linalg.norm(x[ci] - x[cj], axis=1)
        keep = dist <= (r[ci] + r[cj]) * (1.0 + EDGE_SLACK)
        found.append(np.stack([ci[keep], cj[keep]], axis=1))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(found).astype(np.int64, copy=False)


def overlap_graph(x: np.ndarray, r: np.ndarray) -> OverlapGraph:
    """Build the region overlap graph of ``(x, r)`` and label its components."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    edges = overlap_edges(x, r)
    adj = sparse.coo_matrix(
        (np.ones(len(edges), dtype=bool), (edges[:, 0], edges[:, 1])), shape=(n, n)
    )
    n_comp, labels = connected_components(adj, directed=False)
    # renumber components by their smallest vertex (deterministic, readable)
    first = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    rank = np.empty(n_comp, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_comp)
    return OverlapGraph(n=n, edges=edges, component=rank[labels], n_components=int(n_comp))


__all__ = ["EDGE_SLACK", "OverlapGraph", "overlap_edges", "overlap_graph"]
