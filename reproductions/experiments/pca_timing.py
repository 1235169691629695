"""Execution time of sanitisation and mining (§6.5, Figs. 10-11), measured side by side.

A study, not protocol runs: it times the functions the parties run, in one process.

Both measurements use the synthetic 10-cluster data with standard
deviation 2, as the paper does, and the same functions the parties run.

:func:`time_sanitize`
    Normalisation + PCA, and the Laplace noise step, on ``n x m`` rows
    (the paper also counts loading and saving files; we have none).
:func:`time_mining`
    Per test point: the modified kNN of Fig. 4 at ``b`` against
    distance-weighted kNN with k = 5 (ours) and scikit-learn's
    ``KNeighborsClassifier(n_neighbors=5, algorithm="brute")`` on the same
    released scores.

Examples
--------
>>> import numpy as np
>>> t = time_sanitize(2000, 10, b=0.3, rng=np.random.default_rng(0))
>>> sorted(t)
['noise', 'pca']
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from ppknn.protocols.pca_perturbation.datasets import gaussian_clusters
from ppknn.protocols.pca_perturbation.knn import knn_predict, radius_knn
from ppknn.protocols.pca_perturbation.sanitize import (
    distortion_statistics,
    fit_pca,
    laplace_mechanisms,
    normalise,
    perturb,
)


def _data(n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return gaussian_clusters(n, m, n_clusters=10, sd=2.0, rng=rng)


def _sanitize(X: np.ndarray, b: float, s: int, rng: np.random.Generator):
    t0 = time.perf_counter()
    Z = normalise(X, X.min(axis=0), X.max(axis=0))
    fit = fit_pca(Z)
    clean = fit.scores(Z, s)
    t1 = time.perf_counter()
    mechs = laplace_mechanisms(clean.max(axis=0) - clean.min(axis=0), b)
    noisy = perturb(clean, mechs, rng)
    t2 = time.perf_counter()
    return fit, noisy, np.array([m.scale for m in mechs]), {"pca": t1 - t0, "noise": t2 - t1}


def time_sanitize(n: int, m: int, *, b: float, rng: np.random.Generator, repeats: int = 3
                  ) -> dict[str, float]:
    """Seconds for (normalise + PCA + projection) and for the noise, keeping ``s = m // 2``.

    Medians of ``repeats`` runs.
    """
    X, _ = _data(n, m, rng)
    runs = [_sanitize(X, b, max(1, m // 2), rng)[3] for _ in range(repeats)]
    return {key: float(np.median([r[key] for r in runs])) for key in runs[0]}


def time_mining(n: int, m: int, *, b: float, queries: int, rng: np.random.Generator,
                repeats: int = 3) -> dict[str, float]:
    """Seconds per test point: modified kNN, our weighted kNN (k=5), scikit-learn kNN (k=5).

    Medians of ``repeats`` interleaved runs.
    """
    X, y = _data(n + queries, m, rng)
    perm = rng.permutation(len(X))
    tr, te = perm[queries:], perm[:queries]
    s = max(1, m // 2)
    fit, noisy, scales, _ = _sanitize(X[tr], b, s, rng)
    Zq = normalise(X[te], X[tr].min(axis=0), X[tr].max(axis=0))
    Q = fit.scores(Zq, s)
    stats = distortion_statistics(kept_variances=fit.variances[:s], scales=scales,
                                  dropped_variances=fit.variances[s:])
    clf = KNeighborsClassifier(n_neighbors=5, algorithm="brute").fit(noisy, y[tr])
    runs = {
        "radius": lambda: radius_knn(noisy, y[tr], Q, radius2=stats.radius2, n_classes=10),
        "knn5": lambda: knn_predict(noisy, y[tr], Q, k=5, n_classes=10),
        "sklearn5": lambda: clf.predict(Q),
    }
    out: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # interleaved, so load changes hit every method alike
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - t0) / queries)
    return {name: float(np.median(ts)) for name, ts in out.items()}


__all__ = ["time_mining", "time_sanitize"]
