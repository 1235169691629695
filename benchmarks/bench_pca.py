"""PCA + Laplace perturbation benchmark: sanitising and mining, measured side by side.

Run:  python benchmarks/bench_pca.py [--rows 100000] [--dims 100] [--queries 1000] [--repeats 3]

On the synthetic 10-cluster data (standard deviation 2, b = 0.3, s = m/2) it
prints the time to sanitise ``rows x dims`` (normalise + PCA, and the
Laplace noise) through the Sanitizer party's own code, and, for ``queries``
test points against the release, the wall time of

- the modified kNN of Fig. 4 (search radius from the distortion statistics),
- our distance-weighted kNN with k = 5,
- scikit-learn's ``KNeighborsClassifier(n_neighbors=5)`` (brute force and auto),

each as a ratio to scikit-learn's brute-force kNN, measured in this process one
after the other (median of ``--repeats``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from ppknn.core.data import DomainBounds
from ppknn.protocols.pca_perturbation.datasets import gaussian_clusters
from ppknn.protocols.pca_perturbation.knn import knn_predict, radius_knn
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.sanitize import normalise
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dims", type=int, default=100)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--b", type=float, default=0.3)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    X, y = gaussian_clusters(args.rows + args.queries, args.dims, n_clusters=10, sd=2.0,
                             rng=rng)
    test, train = np.arange(args.queries), np.arange(args.queries, len(X))
    bounds = DomainBounds(X.min(axis=0), X.max(axis=0))
    s = max(1, args.dims // 2)
    request = ReleaseRequest(scheme="pca-laplace", b=args.b, s=s)

    t0 = time.perf_counter()
    san = Sanitizer(party_id="sanitizer", index=0, X=X[train], y=y[train], n_classes=10,
                    run_id="bench", bounds=bounds)
    t_fit = time.perf_counter() - t0
    t_release = median_time(lambda: san.release(request), args.repeats)
    msg = san.release(request)
    p = msg.payload
    print(f"sanitise {args.rows:,} x {args.dims} (s = {s}, b = {args.b}): "
          f"normalise + PCA {t_fit:.2f} s, projection + noise + statistics "
          f"{t_release:.2f} s")

    Zq = normalise(X[test], bounds.lower, bounds.upper)
    Q = (Zq - p["mean"]) @ p["components"].T
    train_scores, labels = p["scores"], p["labels"]
    E, var, n_sd = p["stats"]
    radius2 = E + n_sd * np.sqrt(var)

    brute = KNeighborsClassifier(n_neighbors=5, algorithm="brute").fit(train_scores, labels)
    auto = KNeighborsClassifier(n_neighbors=5).fit(train_scores, labels)
    timings = {
        "scikit-learn kNN k=5 (brute)": median_time(lambda: brute.predict(Q), args.repeats),
        "scikit-learn kNN k=5 (auto)": median_time(lambda: auto.predict(Q), args.repeats),
        "weighted kNN k=5 (ours)": median_time(
            lambda: knn_predict(train_scores, labels, Q, k=5, n_classes=10), args.repeats),
        "modified kNN (radius)": median_time(
            lambda: radius_knn(train_scores, labels, Q, radius2=radius2, n_classes=10),
            args.repeats),
    }
    res = radius_knn(train_scores, labels, Q, radius2=radius2, n_classes=10)
    base = timings["scikit-learn kNN k=5 (brute)"]
    print(f"classify {args.queries:,} test points against the release "
          f"(mean {res.in_radius.mean():,.0f} points in the radius, "
          f"accuracy radius {np.mean(res.predictions == y[test]):.3f}, "
          f"scikit-learn k=5 {np.mean(brute.predict(Q) == y[test]):.3f}):")
    for name, t in timings.items():
        print(f"  {name:30s} {t:7.2f} s  = {t / base:5.2f} x scikit-learn brute")


if __name__ == "__main__":
    main()
