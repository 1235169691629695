"""Utility metrics of a release: raw NN accuracy and top-5 accuracy (thesis §6.2).

*Raw accuracy* is the fraction of queries whose true nearest neighbour is
among the released points; *top-5 accuracy* the fraction with at least one
of the five nearest neighbours released. Both are decided by distance, so
ties count: a released point at the nearest (fifth-nearest) distance is a
hit. Distances are compared with a relative tolerance of 1e-9 (the
reference distances come from a different code path).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dptt.neighbours import NeighbourIndex
>>> index = NeighbourIndex(np.arange(10.0))
>>> queries = np.array([[0.1], [5.2]])
>>> truth = Truth.of(index, queries)
>>> nn, top5 = hits(index.points, queries, truth, np.array([0, 1]), np.array([0, 7]))
>>> nn.tolist(), top5.tolist()
([True, False], [True, True])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.protocols.dptt.neighbours import NeighbourIndex

TOP = 5
RTOL = 1e-9


@dataclass(frozen=True)
class Truth:
    """Each query's distances to its nearest and its fifth-nearest data point."""

    nearest: np.ndarray
    fifth: np.ndarray

    @classmethod
    def of(cls, index: NeighbourIndex, queries: np.ndarray) -> Truth:
        """Exact reference distances (the non-private answer)."""
        k = min(TOP, index.n_points)
        d = index.distances(queries, k)
        return cls(nearest=d[:, 0], fifth=d[:, -1])


def nearest_released(points: np.ndarray, queries: np.ndarray, slots: np.ndarray,
                     ids: np.ndarray) -> np.ndarray:
    """Per query, the distance to its nearest released point (inf when nothing was released)."""
    q = np.asarray(queries, dtype=np.float64).reshape(len(queries), -1)
    dist = np.linalg.norm(points[ids] - q[slots], axis=1)
    best = np.full(len(q), np.inf)
    np.minimum.at(best, slots, dist)
    return best


def hits(points: np.ndarray, queries: np.ndarray, truth: Truth, slots: np.ndarray,
         ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean ``(Q,)`` arrays: raw NN hit, top-5 hit."""
    best = nearest_released(points, queries, slots, ids)
    return best <= truth.nearest * (1 + RTOL), best <= truth.fifth * (1 + RTOL)


__all__ = ["RTOL", "TOP", "Truth", "hits", "nearest_released"]
