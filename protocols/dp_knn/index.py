"""The DP owner's private index: per-label kd-trees over the training data.

Every count the classifiers release goes through :class:`LabelIndex`, so
"touching the data" has one address (tests watch it to prove that a refused
batch never reached the data). All queries are vectorised over the batch:
:meth:`LabelIndex.radius_counts` asks each label's
:class:`scipy.spatial.cKDTree` for ball sizes (``return_length=True``) with
one radius per test instance.

Examples
--------
>>> import numpy as np
>>> idx = LabelIndex(np.array([[0.0], [0.5], [3.0]]), np.array([0, 1, 1]), n_classes=2)
>>> idx.radius_counts(np.array([[0.0], [3.0]]), np.array([1.0, 0.1])).tolist()
[[1, 1], [0, 1]]
>>> idx.knn_counts(np.array([[2.9]]), np.array([2])).tolist()
[[0, 2]]
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from ppknn.protocols.dp_knn.validation import check_training


class LabelIndex:
    """kd-trees over private training rows, one per label and one over all rows.

    Parameters
    ----------
    X:
        ``(N, D)`` training features.
    y:
        ``(N,)`` integer labels in ``[0, n_classes)``.
    n_classes:
        Size of the public label set.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, *, n_classes: int) -> None:
        X, y = check_training(X, y, n_classes)
        self.n_classes = int(n_classes)
        self.n_features = int(X.shape[1])
        self._X, self._y = X, y
        self._all = cKDTree(X) if len(X) else None
        self._trees = [cKDTree(X[y == c]) if np.any(y == c) else None for c in range(n_classes)]

    @property
    def size(self) -> int:
        """|D|: the number of training rows (private: release it only with noise)."""
        return int(self._y.size)

    def radius_counts(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``(Q, C)`` int64: per label, training rows t with ``δ(x_i, t) <= r_i``."""
        out = np.zeros((len(x), self.n_classes), dtype=np.int64)
        for c, tree in enumerate(self._trees):
            if tree is not None:
                out[:, c] = tree.query_ball_point(x, r, return_length=True)
        return out

    def total_counts(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``(Q,)`` int64: training rows within ``r_i`` of ``x_i`` (all labels)."""
        if self._all is None:
            return np.zeros(len(x), dtype=np.int64)
        return np.asarray(self._all.query_ball_point(x, r, return_length=True), dtype=np.int64)

    def count_profile(self, x: np.ndarray, radii: np.ndarray, *, chunk: int = 1 << 22
                      ) -> np.ndarray:
        """``(L,)`` int64: summed over ``x``, the training rows within each of the ``radii``.

        ``radii`` ascending. One pass over the (query, row) distances, in chunks of
        about ``chunk`` pairs: each distance goes to the first radius that holds it.
        """
        radii = np.asarray(radii, dtype=np.float64)
        out = np.zeros(len(radii), dtype=np.int64)
        if self._all is None or len(x) == 0:
            return out
        X = self._X
        xx = (X**2).sum(1)
        step = max(1, chunk // max(1, len(X)))
        for start in range(0, len(x), step):
            q = x[start:start + step]
            d2 = np.maximum((q**2).sum(1)[:, None] + xx[None, :] - 2.0 * (q @ X.T), 0.0)
            slot = np.searchsorted(radii, np.sqrt(d2).ravel(), side="left")
            out += np.bincount(slot, minlength=len(radii) + 1)[: len(radii)]
        return np.cumsum(out)

    def knn_counts(self, x: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``(Q, C)`` int64: labels among the ``min(k_i, N)`` nearest rows of ``x_i``.

        Ties at the k-th distance are broken by the kd-tree's order.
        """
        q = len(x)
        out = np.zeros((q, self.n_classes), dtype=np.int64)
        if self._all is None:
            return out
        kk = np.minimum(np.asarray(k, dtype=np.int64), self.size)
        _, idx = self._all.query(x, k=int(kk.max()))
        idx = np.asarray(idx).reshape(q, -1)
        use = np.arange(idx.shape[1])[None, :] < kk[:, None]
        rows = np.broadcast_to(np.arange(q)[:, None], idx.shape)[use]
        np.add.at(out, (rows, self._y[idx[use]]), 1)
        return out

    def kth_distance(self, x: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``(Q,)``: distance from ``x_i`` to its ``min(k_i, N)``-th nearest row (non-private)."""
        q = len(x)
        kk = np.minimum(np.asarray(k, dtype=np.int64), self.size)
        dist, _ = self._all.query(x, k=int(kk.max())) if self._all is not None else (None, None)
        dist = np.asarray(dist).reshape(q, -1)
        return dist[np.arange(q), kk - 1]

    def histogram(self, edges: list[np.ndarray]) -> np.ndarray:
        """Counts of training rows per cell of a grid given by per-axis ``edges``.

        Rows outside the edges are clipped into the border cells (the owner's
        data lies in the public domain, checked at construction time).
        """
        cells = [len(e) - 1 for e in edges]
        pos = np.stack(
            [np.clip(np.searchsorted(e, self._X[:, a], side="right") - 1, 0, cells[a] - 1)
             for a, e in enumerate(edges)],
            axis=1,
        )
        flat = np.ravel_multi_index(tuple(pos.T), cells) if len(pos) else np.zeros(0, np.int64)
        return np.bincount(flat, minlength=int(np.prod(cells))).astype(np.int64)


__all__ = ["LabelIndex"]
