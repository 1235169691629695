"""Exact (non-private) nearest neighbours over a point set, and segment helpers.

The server uses it to release neighbourhoods (N, GS-N: post-processing of
the private traversal); the GEO baseline to answer noisy points; the
evaluation to find each query's true nearest neighbours. It wraps
:class:`scipy.spatial.cKDTree` (exact, O(log N) per query on low-dimensional data).

Examples
--------
>>> import numpy as np
>>> index = NeighbourIndex(np.array([[0.0], [1.0], [5.0]]))
>>> index.nearest(np.array([[0.9], [4.0]]), 2)
array([[1, 0],
       [2, 1]])
>>> index.neighbourhoods(np.array([2]), 2)
array([[2, 1]])
>>> dedupe_pairs(np.array([1, 0, 1]), np.array([7, 3, 7]), 10)
(array([0, 1]), array([3, 7]))
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from ppknn.core.errors import ConfigError
from ppknn.protocols.dptt.tree import check_points


class NeighbourIndex:
    """Exact k-nearest-neighbour search over ``points`` ``(N, k)``."""

    def __init__(self, points: object) -> None:
        self.points = check_points(points)
        self._tree = cKDTree(self.points)

    @property
    def n_points(self) -> int:
        """N."""
        return int(self.points.shape[0])

    def nearest(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Indices ``(Q, k)`` of the k nearest points of each query, nearest first."""
        if k < 1 or k > self.n_points:
            raise ConfigError(f"k must be in [1, {self.n_points}], got {k}")
        q = np.asarray(queries, dtype=np.float64).reshape(-1, self.points.shape[1])
        if len(q) == 0:
            return np.zeros((0, k), dtype=np.int64)
        _, idx = self._tree.query(q, k=k)
        return np.asarray(idx, dtype=np.int64).reshape(len(q), k)

    def distances(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Distances ``(Q, k)`` to the k nearest points, ascending."""
        q = np.asarray(queries, dtype=np.float64).reshape(-1, self.points.shape[1])
        dist, _ = self._tree.query(q, k=k)
        return np.asarray(dist, dtype=np.float64).reshape(len(q), k)

    def neighbourhoods(self, ids: np.ndarray, b: int) -> np.ndarray:
        """The b nearest points ``(len(ids), b)`` of each data point ``ids``, the point included.

        With duplicate points the search may return a copy instead of the point
        itself; the point then replaces the farthest neighbour, so the found
        leaf is always released.
        """
        ids = np.asarray(ids, dtype=np.int64)
        out = self.nearest(self.points[ids], min(b, self.n_points))
        missing = ~(out == ids[:, None]).any(axis=1)
        out[missing, -1] = ids[missing]
        return out


def dedupe_pairs(slots: np.ndarray, ids: np.ndarray, n_points: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(slot, id)`` pairs, sorted by slot then id."""
    key = np.sort(np.asarray(slots, np.int64) * n_points + np.asarray(ids, np.int64))
    if key.size:  # sort-based distinct values (faster here than numpy's hash-based unique)
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
    return key // n_points, key % n_points


def counts_per_slot(slots: np.ndarray, n_slots: int) -> np.ndarray:
    """How many pairs each slot has."""
    return np.bincount(np.asarray(slots, dtype=np.int64), minlength=n_slots)


__all__ = ["NeighbourIndex", "counts_per_slot", "dedupe_pairs"]
