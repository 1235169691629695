"""With ε = ∞ every classifier is its non-private counterpart (scikit-learn, brute force)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier, RadiusNeighborsClassifier

from ppknn.core.data import DomainBounds
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import classify_knn
from ppknn.protocols.dp_knn.rn import RN_ALGORITHMS, classify_rn


def _data(seed, n=400, q=150, d=3, classes=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (np.digitize(X[:, 0] + 0.5 * rng.normal(size=n), [-0.5, 0.5])) % classes
    return X, y.astype(np.int64), rng.normal(size=(q, d)), rng


def _sk_radius(X, y, xq, radii):
    """scikit-learn's r-N with one radius per query (one fit, the radius set per group)."""
    out = np.empty(len(xq), dtype=np.int64)
    clf = RadiusNeighborsClassifier(radius=1.0, algorithm="brute", outlier_label=0).fit(X, y)
    for r in np.unique(radii):
        rows = radii == r
        out[rows] = clf.set_params(radius=float(r)).predict(xq[rows])
    return out


@pytest.mark.parametrize("algorithm", RN_ALGORITHMS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rn_without_noise_is_radius_neighbours(algorithm, seed):
    X, y, xq, rng = _data(seed)
    radii = rng.choice([0.3, 0.6, 1.0], size=len(xq))  # includes empty regions and ties
    res = classify_rn(LabelIndex(X, y, n_classes=3), xq, radii, algorithm=algorithm,
                      epsilon=math.inf, rng=rng)
    np.testing.assert_array_equal(res.labels, _sk_radius(X, y, xq, radii))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 4, 15])
def test_knn_baseline_without_noise_is_kneighbours(seed, k):
    X, y, xq, rng = _data(seed)
    res = classify_knn(LabelIndex(X, y, n_classes=3), xq, k, algorithm="baseline",
                       epsilon=math.inf, rng=rng)
    sk = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(X, y).predict(xq)
    np.testing.assert_array_equal(res.labels, sk)


@pytest.mark.parametrize("algorithm", ["interactive", "noninteractive"])
def test_converted_knn_without_noise_is_radius_neighbours_on_its_radii(algorithm):
    X, y, xq, rng = _data(5, d=2)
    bounds = DomainBounds(np.full(2, -5.0), np.full(2, 5.0))
    res = classify_knn(LabelIndex(X, y, n_classes=3), xq, 8, algorithm=algorithm,
                       epsilon=math.inf, rng=rng, bounds=bounds)
    assert res.conversion is not None and np.all(res.radii > 0)
    np.testing.assert_array_equal(res.labels, _sk_radius(X, y, xq, res.radii))


def test_exact_conversion_radius_gives_kneighbours():
    """A radius between the k-th and (k+1)-th neighbour distances turns r-N into k-NN.

    (Exactly at the k-th distance the boundary point may fall either way in floating point.)
    """
    X, y, xq, rng = _data(7)
    index = LabelIndex(X, y, n_classes=3)
    sixth, seventh = (index.kth_distance(xq, np.full(len(xq), k)) for k in (6, 7))
    r = (sixth + seventh) / 2
    res = classify_rn(index, xq, r, algorithm="proposed", epsilon=math.inf, rng=rng)
    sk = KNeighborsClassifier(n_neighbors=6, algorithm="brute").fit(X, y).predict(xq)
    np.testing.assert_array_equal(res.labels, sk)
