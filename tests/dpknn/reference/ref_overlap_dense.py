# The DP owner's overlap graph before the packed adjacency (every pair of a small or dense
# batch tested into an edge list), kept verbatim as the reference of the packed route.
"""The region overlap graph of a batch of r-N test instances (Definition 10).

Vertex i is the test instance ``(x_i, r_i)``; an edge joins i and j iff their
closed proximity balls intersect, ``δ(x_i, x_j) <= r_i + r_j``. The graph is
built with a spatial index, never by comparing all pairs: radii are grouped
into power-of-two buckets, and for each pair of buckets a
:class:`scipy.spatial.cKDTree` range search with the buckets' largest radii
returns the candidate pairs, which are then filtered exactly. A candidate is
at most twice as far as needed, so the work is proportional to the edges
(within a constant), not to ``Q**2``; each pair is found once, so a plain sort
of the pair keys orders the edges (no hashing, no duplicate removal). Small
batches (``Q <= BRUTE_FORCE_MAX``), and large ones whose sample of rows joins at
least :data:`DENSE_SHARE` of the pairs, test every pair directly, in row blocks:
the same exact filter on a candidate set that holds every pair, so the edges are
the same; on dense graphs (the converted k-NN radii join a third to a half of
all pairs) the edges themselves are quadratic, and writing them out in order
costs less than the tree searches and the sort.

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
from scipy.spatial.distance import cdist

from ppknn.core.progress import beat

EDGE_SLACK = 1e-9
"""Relative slack on ``r_i + r_j`` (floating-point safety; adds edges only)."""

BRUTE_FORCE_MAX = 4096
"""Largest batch whose pairs are all tested directly (no spatial index)."""

DENSE_SHARE = 1 / 32
"""Share of joined pairs (in a sample) from which a large batch tests every pair."""

DENSE_SAMPLE = 128
"""Rows (evenly spaced) whose pairs estimate the share of joined pairs."""

_BLOCK_PAIRS = 1 << 16
"""Pairs tested per block by the direct test (bounds its memory; cache-sized)."""

_SAFE = 1e140
"""Radii and coordinates within ``[1/_SAFE, _SAFE]`` keep squared distances normal numbers."""


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
        """The symmetric boolean adjacency matrix (CSR, sorted column indices)."""
        indptr, indices = self.csr()
        return sparse.csr_matrix(
            (np.ones(len(indices), dtype=bool), indices, indptr), shape=(self.n, self.n)
        )

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` int64 of :meth:`adjacency`: row v lists v's neighbours, ascending.

        Built from the sorted edges by one stable sort of the rows: for a row v,
        the entries of edges ``(i, v)`` come first (ascending i, as the edges are
        sorted) and those of edges ``(v, j)`` next (ascending j).
        """
        i, j = self.edges[:, 0], self.edges[:, 1]
        rows = np.concatenate([j, i])
        cols = np.concatenate([i, j])
        key = rows.astype(np.uint16) if self.n <= 1 << 16 else rows  # radix sort when it can
        order = np.argsort(key, kind="stable")
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n), out=indptr[1:])
        return indptr, cols[order].astype(np.int64, copy=False)


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
    if len(x) <= BRUTE_FORCE_MAX or _dense(x, r):
        return _all_pair_edges(x, r)
    bucket = np.floor(np.log2(r)).astype(np.int64)
    keys = np.unique(bucket)
    members = [np.flatnonzero(bucket == b) for b in keys]
    trees = [cKDTree(x[m]) for m in members]
    rmax = [float(r[m].max()) for m in members]
    found = []
    for a in range(len(keys)):
        beat()
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
    # each pair was found once (by the search of its two buckets), so a sort of the
    # keys (no hashing, no duplicate removal) orders the edges by (i, j)
    n = np.int64(len(x))
    key = pairs[:, 0] * n + pairs[:, 1]
    del pairs
    key.sort()
    return np.stack([key // n, key % n], axis=1)


def _dense(x: np.ndarray, r: np.ndarray) -> bool:
    """Whether a sample of rows joins at least :data:`DENSE_SHARE` of all pairs.

    Then testing every pair costs little more than writing the edges out, and less
    than the tree searches (which find up to twice as far as needed).
    """
    q = len(x)
    take = np.unique(np.linspace(0, q - 1, min(q, DENSE_SAMPLE)).astype(np.int64))
    reach = (r[take][:, None] + r[None, :]) * (1.0 + EDGE_SLACK)
    share = float(np.mean(cdist(x[take], x, "sqeuclidean") <= reach * reach))
    return share >= DENSE_SHARE


def _all_pair_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`overlap_edges` by testing every pair ``i < j`` (row blocks, in order).

    A vectorised pre-test with a generous margin picks the candidates; each
    candidate is then tested exactly as on the tree path (the same distance
    expression, pair by pair), so the edges are the same. They come out sorted
    by ``(i, j)``. Candidates far inside the margin (squared distance below
    ``reach**2 (1 - 1e-6)``) pass the exact test for sure and are not tested
    again, when every value is far from floating-point underflow and overflow
    (:data:`_SAFE`); the pre-test's squared distances (:func:`cdist`) are the
    feature-by-feature sums of the direct loop, bit for bit.
    """
    q = len(x)
    found = []
    rows = max(1, max(_BLOCK_PAIRS, 16 * q) // max(1, q))  # >= 16 rows: per-block overhead
    sure_ok = bool(q and r.min() >= 1.0 / _SAFE and r.max() <= _SAFE
                   and np.abs(x).max() <= _SAFE)
    for start in range(0, q - 1, rows):
        beat()  # a big request's graph takes seconds: the step is still working
        stop = min(q - 1, start + rows)
        i = np.arange(start, stop)
        j = np.arange(start + 1, q)
        sq = cdist(x[i], x[j], "sqeuclidean")
        reach = r[i][:, None] + r[j][None, :]
        reach *= 1.0 + EDGE_SLACK
        reach2 = reach * reach
        # margin: the pre-test's rounding differs from the exact test's by far less
        near = sq <= reach2 * (1.0 + 1e-6) + 1e-300
        near &= j[None, :] > i[:, None]
        flat = np.flatnonzero(near)
        ci, cj = i[flat // len(j)], j[flat % len(j)]
        if sure_ok:
            reach2 *= 1.0 - 1e-6
            keep = (sq <= reach2).ravel()[flat]
        else:
            keep = np.zeros(len(flat), dtype=bool)
        test = np.flatnonzero(~keep)
        if test.size:
            a, b = ci[test], cj[test]
            dist = np.linalg.norm(x[a] - x[b], axis=1)
            keep[test] = dist <= (r[a] + r[b]) * (1.0 + EDGE_SLACK)
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
