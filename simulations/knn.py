"""Non-private nearest-neighbour references: scikit-learn's kNN and the union's true top-k."""

from __future__ import annotations

import numpy as np

from ppknn.protocols.ppknn.driver import ties_at_kth
from ppknn.protocols.ppknn.pp_topk import euclidean_distances, local_topk


def sklearn_knn(X: np.ndarray, y: np.ndarray, queries: np.ndarray, *, k: int,
                weighting: str = "uniform") -> np.ndarray:
    """scikit-learn's non-private brute-force kNN on ``(X, y)``, predicting ``queries``.

    Runs on one BLAS/OpenMP thread: scikit-learn's distances (dot-product
    expansion) differ in the last bits with the thread count, which flips
    near-ties, so the baseline would differ between a sweep's Ray workers
    (one thread each) and a run here.
    """
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    knn = KNeighborsClassifier(n_neighbors=k, algorithm="brute", weights=weighting)
    knn.fit(X, y)
    with threadpool_limits(limits=1):
        return knn.predict(queries)


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


__all__ = ["sklearn_knn", "union_topk_and_ties"]
