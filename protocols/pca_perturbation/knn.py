"""The miner's classifiers: the modified kNN of Fig. 4 and distance-weighted kNN.

Both weight a training point at squared distance ``d`` by ``1 / d`` (inverse
*squared* Euclidean distance, eq. 11, normalised so a query's weights sum to
1) and predict the class with the largest total weight (lowest class index
on ties, as scikit-learn).

Modified kNN (``radius``)
    Every training point with ``d <= radius2`` votes, where ``radius2 =
    E(D) + 2 sqrt(Var(D))`` from the sanitizer's distortion statistics
    (Fig. 4 compares the *squared* distance with that threshold).

Defined edge cases (the paper is silent on both):

- **Zero distance.** If a voter is at distance 0 (within rounding, see
  :func:`zero_tolerance`), only the zero-distance voters vote, each with
  weight 1 (scikit-learn's rule for ``weights="distance"``).
- **Empty radius.** A query with no training point inside the radius (also
  when ``radius2 < 0``, which happens when the dropped components' variance
  outweighs the noise) is classified by its ``fallback_k`` nearest points
  and every point tied with the ``fallback_k``-th, with the same weights.
  :class:`RadiusResult` reports how often.
- **Ties at the k-th distance** in fixed-k kNN: the tied points with the
  lowest training indices vote (a stable order).

Distances are computed as ``|q|^2 + |x|^2 - 2 q.x`` (one matrix product per
block of queries), blocks sized to bound memory; there is no per-query loop.

Examples
--------
>>> import numpy as np
>>> X = np.array([[0.0], [1.0], [10.0]]); y = np.array([0, 0, 1])
>>> radius_knn(X, y, np.array([[0.4], [9.0]]), radius2=4.0, n_classes=2).predictions
array([0, 1])
>>> knn_predict(X, y, np.array([[1.0]]), k=3, n_classes=2)
array([0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError

DEFAULT_KS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500)
"""The k grid searched by cross-validation (values above the fold size are skipped)."""

BLOCK_ELEMENTS = 4_000_000
"""Distance-matrix elements computed per block of queries (about 32 MB)."""


def _check_inputs(train: np.ndarray, labels: np.ndarray, queries: np.ndarray,
                  n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.asarray(train, dtype=np.float64)
    Q = np.asarray(queries, dtype=np.float64)
    y = np.asarray(labels)
    if X.ndim != 2 or Q.ndim != 2 or X.shape[1] != Q.shape[1]:
        raise ConfigError(f"training points {X.shape} and queries {Q.shape} must be 2-D with "
                          f"the same number of columns")
    if len(X) == 0:
        raise ConfigError("no training points to classify against")
    if y.shape != (len(X),) or y.dtype.kind not in "iu" or (len(y) and (
            y.min() < 0 or y.max() >= n_classes)):
        raise ConfigError(f"labels must be {len(X)} integers in [0, {n_classes})")
    return X, y.astype(np.int64), Q


def zero_tolerance(query_sq: np.ndarray, train_sq_max: float) -> np.ndarray:
    """Squared distances at most this (per query) count as 0: the expansion's rounding error."""
    return 64.0 * np.finfo(np.float64).eps * (query_sq + train_sq_max)


def _sq_dist(Qb: np.ndarray, Xm2: np.ndarray, x_sq: np.ndarray) -> np.ndarray:
    """``|q|^2 + |x|^2 - 2 q.x`` with ``Xm2 = -2 X`` precomputed (not clipped at 0)."""
    d2 = Qb @ Xm2.T
    d2 += x_sq[None, :]
    d2 += np.einsum("ij,ij->i", Qb, Qb)[:, None]
    return d2


def _weights(d2: np.ndarray, member: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Inverse-square weights of the members, zero-distance rule applied (rows not normalised).

    Rounding can make a duplicate's squared distance slightly negative; anything
    at most ``tol`` counts as zero.
    """
    w = np.zeros_like(d2)
    with np.errstate(divide="ignore"):  # zero distances are handled just below
        np.divide(1.0, d2, out=w, where=member)
    zero_rows = np.flatnonzero(d2.min(axis=1) <= tol)
    if zero_rows.size:
        zero = member[zero_rows] & (d2[zero_rows] <= tol[zero_rows, None])
        hit = zero.any(axis=1)  # a zero-distance point outside the members changes nothing
        w[zero_rows[hit]] = zero[hit]
    return w


def _top(d2: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and squared distances of the k nearest per row, ascending.

    The k-th smallest of the group minima (groups of up to 64 consecutive
    columns, at least 8k groups) bounds the k-th smallest value, so only the
    few values below it are sorted. Ties are broken by the lower index.
    """
    q, n = d2.shape
    if k >= n:
        order = np.argsort(d2, axis=1, kind="stable")
        return order, np.take_along_axis(d2, order, axis=1)
    size = max(1, min(64, n // (8 * k)))
    groups = n // size
    mins = d2[:, : groups * size].reshape(q, groups, size).min(axis=2)
    if groups * size < n:
        mins = np.concatenate([mins, d2[:, groups * size :].min(axis=1, keepdims=True)], axis=1)
    bound = np.partition(mins, k - 1, axis=1)[:, k - 1]
    rows, cols = np.nonzero(d2 <= bound[:, None])
    vals = d2[rows, cols]
    order = np.lexsort((cols, vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, np.arange(q))[rows]
    keep = rank < k
    return cols[keep].reshape(q, k), vals[keep].reshape(q, k)


@dataclass(frozen=True)
class Neighbours:
    """The ``k`` nearest training points of each query, ascending.

    Attributes
    ----------
    d2:
        ``(Q, k)`` squared distances.
    labels:
        ``(Q, k)`` their labels.
    tol:
        ``(Q,)`` zero-distance tolerance per query.
    """

    d2: np.ndarray
    labels: np.ndarray
    tol: np.ndarray

    def predict_all(self, ks: tuple[int, ...], n_classes: int) -> np.ndarray:
        """Predictions ``(len(ks), Q)`` of distance-weighted kNN for every k in ``ks``."""
        K = self.d2.shape[1]
        if not ks or max(ks) > K or min(ks) < 1:
            raise ConfigError(f"every k must be in [1, {K}], got {ks}")
        zero_first = self.d2[:, 0] <= self.tol
        w = np.zeros_like(self.d2)
        np.divide(1.0, self.d2, out=w, where=self.d2 > self.tol[:, None])
        w[zero_first] = self.d2[zero_first] <= self.tol[zero_first, None]
        onehot = np.zeros(self.labels.shape + (n_classes,))
        np.put_along_axis(onehot, self.labels[..., None], w[..., None], axis=2)
        cum = np.cumsum(onehot, axis=1)
        return np.argmax(cum[:, np.asarray(ks) - 1, :], axis=2).T


def nearest(train: np.ndarray, labels: np.ndarray, queries: np.ndarray, k: int,
            n_classes: int) -> Neighbours:
    """The ``k`` nearest training points of every query (block-vectorised)."""
    X, y, Q = _check_inputs(train, labels, queries, n_classes)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    k = min(int(k), len(X))
    x_sq = np.einsum("ij,ij->i", X, X)
    Xm2 = -2.0 * X
    d2_out = np.empty((len(Q), k))
    idx_out = np.empty((len(Q), k), dtype=np.int64)
    step = max(1, BLOCK_ELEMENTS // len(X))
    for start in range(0, len(Q), step):
        Qb = Q[start : start + step]
        idx, part = _top(_sq_dist(Qb, Xm2, x_sq), k)
        d2_out[start : start + len(Qb)] = part
        idx_out[start : start + len(Qb)] = idx
    tol = zero_tolerance(np.einsum("ij,ij->i", Q, Q), float(x_sq.max()))
    return Neighbours(d2=d2_out, labels=y[idx_out], tol=tol)


def knn_predict(train: np.ndarray, labels: np.ndarray, queries: np.ndarray, *, k: int,
                n_classes: int) -> np.ndarray:
    """Distance-weighted (``1/d^2``) kNN predictions."""
    nb = nearest(train, labels, queries, k, n_classes)
    return nb.predict_all((nb.d2.shape[1],), n_classes)[0]


@dataclass(frozen=True)
class RadiusResult:
    """Output of :func:`radius_knn`.

    Attributes
    ----------
    predictions:
        ``(Q,)`` class indices.
    votes:
        ``(Q, C)`` normalised class weights (each row sums to 1).
    in_radius:
        ``(Q,)`` number of training points inside the radius.
    fallback:
        ``(Q,)`` True where the radius was empty and the ``fallback_k`` nearest voted.
    """

    predictions: np.ndarray
    votes: np.ndarray
    in_radius: np.ndarray
    fallback: np.ndarray


def radius_knn(train: np.ndarray, labels: np.ndarray, queries: np.ndarray, *,
               radius2: float, n_classes: int, fallback_k: int = 5) -> RadiusResult:
    """The modified kNN of Fig. 4 (see module docstring for the edge cases)."""
    X, y, Q = _check_inputs(train, labels, queries, n_classes)
    if not np.isfinite(radius2):
        raise ConfigError(f"radius2 must be finite, got {radius2!r}")
    if not isinstance(fallback_k, (int, np.integer)) or fallback_k < 1:
        raise ConfigError(f"fallback_k must be an integer >= 1, got {fallback_k!r}")
    # training points grouped by class: a class's votes are a sum over a column range
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    present = np.unique(y)
    starts = np.searchsorted(y, present)
    x_sq = np.einsum("ij,ij->i", X, X)
    Xm2 = -2.0 * X

    def tally(w: np.ndarray) -> np.ndarray:
        out = np.zeros((len(w), n_classes))
        out[:, present] = np.add.reduceat(w, starts, axis=1)
        return out

    tol = zero_tolerance(np.einsum("ij,ij->i", Q, Q), float(x_sq.max()))
    votes = np.zeros((len(Q), n_classes))
    counts = np.zeros(len(Q), dtype=np.int64)
    step = max(1, BLOCK_ELEMENTS // len(X))
    for start in range(0, len(Q), step):
        sl = slice(start, start + step)
        d2 = _sq_dist(Q[sl], Xm2, x_sq)
        inside = d2 <= radius2
        counts[sl] = np.count_nonzero(inside, axis=1)
        votes[sl] = tally(_weights(d2, inside, tol[sl]))
        empty = np.flatnonzero(counts[sl] == 0)
        if empty.size:
            rows = d2[empty]
            k = min(int(fallback_k), rows.shape[1])
            kth = np.partition(rows, k - 1, axis=1)[:, k - 1]
            member = rows <= kth[:, None]  # the k nearest and every point tied with the k-th
            votes[start + empty] = tally(_weights(rows, member, tol[start + empty]))
    votes /= votes.sum(axis=1, keepdims=True)
    return RadiusResult(predictions=np.argmax(votes, axis=1), votes=votes, in_radius=counts,
                        fallback=counts == 0)


@dataclass(frozen=True)
class CVResult:
    """Cross-validated choice of k.

    Attributes
    ----------
    best_k:
        The smallest k with the highest validation accuracy.
    ks:
        The k values tried.
    accuracy:
        Validation accuracy per k.
    """

    best_k: int
    ks: tuple[int, ...]
    accuracy: np.ndarray


def select_k(train: np.ndarray, labels: np.ndarray, *, n_classes: int,
             rng: np.random.Generator, ks: tuple[int, ...] = DEFAULT_KS, folds: int = 5,
             max_validation: int = 1000) -> CVResult:
    """Choose k for distance-weighted kNN by ``folds``-fold cross-validation.

    The rows are split into ``folds`` random folds; a random subset of at
    most ``max_validation`` rows is validated, each against every row
    outside its fold. k values larger than the smallest training fold are
    skipped.
    """
    X, y, _ = _check_inputs(train, labels, train[:1], n_classes)
    n = len(X)
    if not isinstance(folds, int) or not 2 <= folds <= n:
        raise ConfigError(f"folds must be an integer in [2, {n}], got {folds!r}")
    if max_validation < folds:
        raise ConfigError(f"max_validation must be >= folds ({folds}), got {max_validation}")
    perm = rng.permutation(n)
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[perm] = np.arange(n) % folds
    smallest_train = n - int(np.bincount(fold_of).max())
    usable = tuple(sorted({int(k) for k in ks if 1 <= k <= smallest_train}))
    if not usable:
        raise ConfigError(f"no k in {ks} fits a training fold of {smallest_train} rows")
    validated = perm[:max_validation]
    correct = np.zeros(len(usable))
    for f in range(folds):
        val = validated[fold_of[validated] == f]
        if val.size == 0:
            continue
        rest = np.flatnonzero(fold_of != f)
        nb = nearest(X[rest], y[rest], X[val], max(usable), n_classes)
        correct += (nb.predict_all(usable, n_classes) == y[val][None, :]).sum(axis=1)
    acc = correct / len(validated)
    return CVResult(best_k=usable[int(np.argmax(acc))], ks=usable, accuracy=acc)


__all__ = [
    "BLOCK_ELEMENTS",
    "CVResult",
    "DEFAULT_KS",
    "Neighbours",
    "RadiusResult",
    "knn_predict",
    "nearest",
    "radius_knn",
    "select_k",
]
