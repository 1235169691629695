"""Nearest-neighbour kernels every layer shares: distances, a node's k smallest, ties at the k-th.

They name no protocol: the PP-kNN ring computes its local top-k with them, and the
non-private kNN baseline (:mod:`simulations.knn`) scores every protocol against them.

>>> import numpy as np
>>> d = euclidean_distances(np.array([[0.0]]), np.array([[3.0], [1.0], [2.0]]))
>>> d.tolist(), local_topk(d, 2).tolist(), ties_at_kth(np.array([[1.0, 2.0, 2.0]]), 2).tolist()
([[3.0, 1.0, 2.0]], [[1.0, 2.0]], [True])
"""

from __future__ import annotations

import numpy as np


def euclidean_distances(queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Euclidean distances ``(Q, N)`` computed pair by pair from differences.

    Not the dot-product expansion: each pair's distance is computed on its
    own (``scipy.spatial.distance.cdist``), so the same pair always gets the
    same float whichever node computes it, ties and the true top-k are well
    defined across parties, and equal points are at distance exactly 0.
    """
    queries = np.asarray(queries, dtype=np.float64)
    points = np.asarray(points, dtype=np.float64)
    if len(queries) == 0 or len(points) == 0:
        return np.empty((len(queries), len(points)))
    # imported here: scipy.spatial costs a party worker ~0.6 s and ~17 MiB before it is needed
    from scipy.spatial.distance import cdist

    return cdist(queries, points, metric="euclidean")


def local_topk(distances: np.ndarray, k: int) -> np.ndarray:
    """A node's ``V``: its k smallest distances per query, ascending, padded with ``+inf``.

    Two ways to the same array, bit for bit (``tests/test_local_topk.py``): when ``k``
    is small against the row width (``32 * k <= n``, ``k <= 32``), ``k`` passes that
    each take every row's smallest remaining value and strike it out
    (:func:`_smallest_by_passes`, 5-7x faster than a partial selection on rows of
    hundreds of distances); otherwise a partial selection, then a sort of the ``k``
    kept (on narrow rows, an owner of a 64-party ring holds ~49, a full sort of each
    row was tried and is 2.5x slower over the owners' blocks). A row's k smallest
    values, ascending, are one array whichever way they are found, but for equal values
    that differ in sign (``0.0`` and ``-0.0``) or a NaN: the passes hand such arrays to
    the partial selection (distances never hold either: a square root of a sum of
    squares is ``+0.0`` or more).
    """
    q, n = distances.shape
    if n >= k:
        if n > k and 0 < k <= _PASSES_MAX_K and _PASSES_WIDTH * k <= n:
            out = _smallest_by_passes(distances, k)
            if out is not None:
                return out
        part = np.partition(distances, k - 1, axis=1)[:, :k] if n > k else distances
        return np.sort(part, axis=1)
    pad = np.full((q, k - n), np.inf)
    return np.concatenate([np.sort(distances, axis=1), pad], axis=1)


_PASSES_MAX_K = 32
_PASSES_WIDTH = 32  # passes when the row has at least 32 values per value kept


def _smallest_by_passes(distances: np.ndarray, k: int) -> np.ndarray | None:
    """Each row's ``k`` smallest float64 values, ascending, or ``None``.

    Pass ``j`` takes each row's first smallest remaining value (``argmin``) and sets that
    one entry to ``+inf`` in a copy, so ties are kept as often as they occur. ``None``
    where the result could depend on how equal values are ordered: a NaN (``argmin``
    takes it first, so a row holding one starts with it), a kept value that is negative,
    or a kept 0.0 in a row that also holds a ``-0.0`` (``-0.0 == 0.0``: a partial
    selection may keep either).
    """
    if distances.dtype != np.float64:
        return None
    q = distances.shape[0]
    work = np.array(distances, order="C", copy=True)
    out = np.empty((q, k))
    rows = np.arange(q)
    for j in range(k):
        col = work.argmin(axis=1)
        out[:, j] = work[rows, col]
        if j + 1 < k:
            work[rows, col] = np.inf
    if np.isnan(out[:, 0]).any() or np.signbit(out).any():
        return None
    zero = np.flatnonzero(out[:, 0] == 0)  # rows whose smallest is 0.0: any -0.0 in them?
    return None if np.signbit(distances[zero]).any() else out



def ties_at_kth(distances: np.ndarray, k: int, rtol: float = 1e-9) -> np.ndarray:
    """Queries whose k-th and (k+1)-th smallest distances (of the union) tie.

    ``distances`` is ``(Q, N)`` over the union. Values within ``rtol``
    (relative) count as tied, since other implementations may compute
    distances with different rounding.
    """
    q, n = distances.shape
    if k >= n:
        return np.zeros(q, dtype=bool)
    part = np.sort(np.partition(distances, k, axis=1)[:, : k + 1], axis=1)
    kth, nxt = part[:, k - 1], part[:, k]
    return np.abs(nxt - kth) <= rtol * np.maximum(np.abs(kth), 1e-300)


__all__ = ["euclidean_distances", "local_topk", "ties_at_kth"]
