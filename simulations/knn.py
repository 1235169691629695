"""Non-private nearest-neighbour references: scikit-learn's kNN and the union's true top-k."""

from __future__ import annotations

from typing import Any

import numpy as np

from ppknn.core.knn import euclidean_distances, local_topk, ties_at_kth


def sklearn_knn(X: np.ndarray, y: np.ndarray, queries: np.ndarray, *, k: int,
                weighting: str = "uniform") -> np.ndarray:
    """scikit-learn's non-private brute-force kNN on ``(X, y)``, predicting ``queries``.

    With uniform weighting the prediction is computed here, exactly as
    scikit-learn gives it, for every query whose k nearest points are certain:
    its gap between the k-th and the (k+1)-th squared distance exceeds the
    sum of both computations' rounding-error bounds (:func:`certain_knn`), so
    scikit-learn's dot-product distances pick the same k points, and the
    majority class (ties to the smallest class, as scikit-learn's ``argmax``)
    follows from them. The other queries, and distance weighting, are
    predicted by scikit-learn itself (imported only then: it costs a run
    about a second).

    scikit-learn runs on one BLAS/OpenMP thread: its distances (dot-product
    expansion) differ in the last bits with the thread count, which flips
    near-ties, so the baseline would differ between a sweep's Ray workers
    (one thread each) and a run here.
    """
    X = np.asarray(X)
    queries = np.asarray(queries)
    y = np.asarray(y)
    if weighting == "uniform" and X.dtype.kind == "f" and queries.dtype.kind == "f" \
            and 0 < k <= len(X) and y.ndim == 1 and len(queries):
        classes, codes = np.unique(y, return_inverse=True)
        out, certain = certain_knn(X, codes.reshape(-1), queries, k, len(classes))
        if certain.all():
            return classes[out]
        rest = ~certain
        pred = classes[out]
        pred[rest] = _sklearn_predict(X, y, queries[rest], k=k, weighting=weighting)
        return pred
    return _sklearn_predict(X, y, queries, k=k, weighting=weighting)


def _sklearn_predict(X: np.ndarray, y: np.ndarray, queries: np.ndarray, *, k: int,
                     weighting: str) -> np.ndarray:
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    knn = KNeighborsClassifier(n_neighbors=k, algorithm="brute", weights=weighting)
    knn.fit(X, y)
    with threadpool_limits(limits=1):
        return knn.predict(queries)


def certain_knn(X: np.ndarray, codes: np.ndarray, queries: np.ndarray, k: int,
                n_classes: int, *, block_bytes: int = 64 << 20
                ) -> tuple[np.ndarray, np.ndarray]:
    """Uniform kNN votes ``(Q,)`` (class codes) and whether each query's k nearest are certain.

    Squared distances are summed pair by pair from differences (error at most
    ``(d + 3) eps D²``); scikit-learn ranks by ``|y|² - 2 x.y`` (error at
    most ``(2d + 2) eps (|x| + |y|)²``). A query is certain when its gap
    between the k-th and (k+1)-th squared distance exceeds twice their sum,
    bounded by ``8 (d + 2) eps (|x| + max |y|)²``: both then rank the same k
    points first. Its vote is the most frequent class among them, ties to
    the smallest code. Computed over blocks of queries so the distance
    matrix held at once stays under ``block_bytes``.
    """
    from scipy.spatial.distance import cdist

    X = np.asarray(X, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    n, d = X.shape
    eps = np.finfo(np.float64).eps
    reach = float(np.sqrt(np.einsum("ij,ij->i", X, X).max(initial=0.0)))
    votes = np.empty(len(queries), dtype=np.intp)
    certain = np.ones(len(queries), dtype=bool)
    rows = max(1, block_bytes // (8 * max(1, n)))
    for i in range(0, len(queries), rows):
        q = queries[i : i + rows]
        d2 = cdist(q, X, metric="sqeuclidean")
        if k < n:
            part = np.partition(d2, (k - 1, k), axis=1)  # the k-th and (k+1)-th smallest
            kth = part[:, k - 1]
            size = np.sqrt(np.einsum("ij,ij->i", q, q)) + reach
            tol = 8.0 * (d + 2) * eps * size * size
            sure = (part[:, k] - kth) > tol
        else:
            kth = d2.max(axis=1)
            sure = np.ones(len(q), dtype=bool)
        # a sure query has exactly k points at or below its k-th distance
        row, col = np.nonzero(d2 <= kth[:, None])
        counts = np.bincount(row * n_classes + codes[col], minlength=len(q) * n_classes)
        counts = counts.reshape(len(q), n_classes)
        for r in np.flatnonzero(~sure):  # a near-tie at the k-th: settled if one class
            settled = _one_class_band(d2[r], codes, k, tol[r], n_classes)
            if settled is not None:
                counts[r], sure[r] = settled, True
        certain[i : i + rows] = sure
        votes[i : i + rows] = counts.argmax(axis=1)
    return votes, certain


def _one_class_band(d2: np.ndarray, codes: np.ndarray, k: int, tol: float,
                    n_classes: int) -> np.ndarray | None:
    """Class counts of one query's k nearest when its near-tie cannot change the vote.

    The band is the run of sorted squared distances around the k-th linked
    by gaps of at most ``tol``: every point below it is among the k nearest
    for scikit-learn too, none above it is. scikit-learn takes ``k - below``
    of the band's points; when every way of taking them (per class, up to
    the band's count of it) gives the same majority class, that vote is
    certain (e.g. duplicated rows of one class): counts giving it are
    returned. ``None`` otherwise.
    """
    order = np.argsort(d2, kind="stable")
    gaps = np.diff(d2[order]) > tol  # gaps[j]: between sorted positions j and j + 1
    below = np.flatnonzero(gaps[: k - 1])
    lo = int(below[-1]) + 1 if len(below) else 0
    above = np.flatnonzero(gaps[k - 1 :])
    hi = k - 1 + int(above[0]) if len(above) else len(d2) - 1
    base = np.bincount(codes[order[:lo]], minlength=n_classes)
    present, available = np.unique(codes[order[lo : hi + 1]], return_counts=True)
    votes = set()
    first = None
    for take in _compositions(k - lo, available.tolist()):
        counts = base.copy()
        counts[present] += take
        votes.add(int(counts.argmax()))
        first = counts if first is None else first
        if len(votes) > 1:
            return None
    return first


def _compositions(total: int, caps: list[int]) -> Any:
    """Every way of writing ``total`` as a sum of parts ``0 <= part_i <= caps[i]``."""
    if not caps:
        if total == 0:
            yield []
        return
    for part in range(min(total, caps[0]) + 1):
        for rest in _compositions(total - part, caps[1:]):
            yield [part, *rest]


def union_topk_and_ties(queries: np.ndarray, X: np.ndarray, k: int, *,
                        block_bytes: int = 128 << 20) -> tuple[np.ndarray, np.ndarray]:
    """The union's true top-k distances and ties at the k-th, per query.

    Computed over blocks of queries so the distance matrix held at once
    stays under ``block_bytes`` (a large run's full matrix would not fit).
    """
    rows = max(1, block_bytes // (8 * max(1, len(X))))
    topk = np.empty((len(queries), k))
    ties = np.empty(len(queries), dtype=bool)
    for i in range(0, len(queries), rows):
        d = euclidean_distances(queries[i : i + rows], X)
        topk[i : i + rows] = local_topk(d, k)
        ties[i : i + rows] = ties_at_kth(d, k)
    return topk, ties


__all__ = ["certain_knn", "sklearn_knn", "union_topk_and_ties"]
