"""The modified kNN (Fig. 4) and distance-weighted kNN against naive references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.neighbors import KNeighborsClassifier

from ppknn.protocols.pca_perturbation import knn
from ppknn.protocols.pca_perturbation.knn import knn_predict, nearest, radius_knn, select_k


def reference_radius(X, y, Q, radius2, n_classes, fallback_k=5):
    """Fig. 4 one query at a time, exact distances."""
    preds, votes = [], []
    for q in Q:
        d2 = ((X - q) ** 2).sum(axis=1)
        member = d2 <= radius2
        if not member.any():  # the k nearest and every point tied with the k-th
            member = d2 <= np.sort(d2)[min(fallback_k, len(X)) - 1]
        zero = member & (d2 == 0)
        if zero.any():
            w = zero.astype(float)
        else:
            w = np.where(member, 1.0 / np.where(member, d2, 1.0), 0.0)
        v = np.bincount(y, weights=w, minlength=n_classes)
        votes.append(v / v.sum())
        preds.append(int(np.argmax(v)))
    return np.array(preds), np.array(votes)


def test_radius_knn_matches_the_reference_with_duplicates_and_empty_radii():
    rng = np.random.default_rng(0)
    X = rng.random((300, 4))
    y = rng.integers(0, 3, 300)
    Q = np.vstack([rng.random((60, 4)), X[:5], rng.random((5, 4)) + 3.0])  # exact hits, far
    for radius2 in (0.05, 0.3, -1.0):
        res = radius_knn(X, y, Q, radius2=radius2, n_classes=3)
        preds, votes = reference_radius(X, y, Q, radius2, 3)
        np.testing.assert_array_equal(res.predictions, preds)
        np.testing.assert_allclose(res.votes, votes, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.votes.sum(axis=1), 1.0, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(X=hnp.arrays(np.float64, st.tuples(st.integers(6, 30), st.just(3)),
                    elements=st.integers(-4, 4).map(float)),
       radius2=st.sampled_from([0.0, 1.0, 4.0, 30.0]), seed=st.integers(0, 2**16))
def test_radius_knn_property_small_integer_grids(X, radius2, seed):
    """Integer coordinates: many exact ties and zero distances, computed exactly."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, len(X))
    Q = np.vstack([X[:3], rng.integers(-4, 5, (4, 3)).astype(float)])
    res = radius_knn(X, y, Q, radius2=radius2, n_classes=3, fallback_k=3)
    preds, votes = reference_radius(X, y, Q, radius2, 3, fallback_k=3)
    np.testing.assert_allclose(res.votes, votes, rtol=1e-9, atol=1e-12)
    close = np.abs(np.sort(votes, axis=1)[:, -1] - np.sort(votes, axis=1)[:, -2]) > 1e-9
    np.testing.assert_array_equal(res.predictions[close], preds[close])


def test_zero_distance_points_vote_alone():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1], [1.0, 1.0]])
    y = np.array([1, 0, 0, 0, 1])
    res = radius_knn(X, y, np.array([[0.0, 0.0]]), radius2=1.0, n_classes=2)
    assert res.predictions[0] == 1
    np.testing.assert_array_equal(res.votes[0], [0.0, 1.0])
    assert res.in_radius[0] == 4


def test_empty_radius_falls_back_to_the_nearest_points():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]])
    y = np.array([0, 0, 0, 1, 1])
    res = radius_knn(X, y, np.array([[9.0], [0.5]]), radius2=0.3, n_classes=2, fallback_k=2)
    np.testing.assert_array_equal(res.fallback, [True, False])
    np.testing.assert_array_equal(res.in_radius, [0, 2])
    np.testing.assert_array_equal(res.predictions, [1, 0])  # 9 -> nearest two are 10, 11


def test_negative_radius_equals_weighted_knn_with_the_fallback_k():
    rng = np.random.default_rng(2)
    X, y = rng.random((80, 3)), rng.integers(0, 3, 80)
    Q = rng.random((20, 3))
    res = radius_knn(X, y, Q, radius2=-1.0, n_classes=3, fallback_k=7)
    assert res.fallback.all() and not res.in_radius.any()
    np.testing.assert_array_equal(res.predictions, knn_predict(X, y, Q, k=7, n_classes=3))


@pytest.mark.parametrize("k", [1, 5, 15])
def test_weighted_knn_equals_scikit_learn_with_inverse_square_weights(k):
    rng = np.random.default_rng(k)
    X, y = rng.normal(size=(400, 5)), rng.integers(0, 4, 400)
    Q = rng.normal(size=(100, 5))
    ref = KNeighborsClassifier(n_neighbors=k, algorithm="brute",
                               weights=lambda d: 1.0 / d**2).fit(X, y).predict(Q)
    np.testing.assert_array_equal(knn_predict(X, y, Q, k=k, n_classes=4), ref)


def test_results_do_not_depend_on_the_block_size(monkeypatch):
    rng = np.random.default_rng(3)
    X, y = rng.random((500, 3)), rng.integers(0, 3, 500)
    Q = rng.random((97, 3))
    big = radius_knn(X, y, Q, radius2=0.02, n_classes=3)
    nb_big = nearest(X, y, Q, 9, 3)
    monkeypatch.setattr(knn, "BLOCK_ELEMENTS", 1700)  # 3 queries per block
    small = radius_knn(X, y, Q, radius2=0.02, n_classes=3)
    nb_small = nearest(X, y, Q, 9, 3)
    np.testing.assert_allclose(big.votes, small.votes, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(big.predictions, small.predictions)
    np.testing.assert_allclose(nb_big.d2, nb_small.d2, rtol=1e-12)
    np.testing.assert_array_equal(nb_big.labels, nb_small.labels)


def test_predict_all_equals_one_k_at_a_time():
    rng = np.random.default_rng(4)
    X, y = rng.random((200, 3)), rng.integers(0, 3, 200)
    Q = rng.random((40, 3))
    nb = nearest(X, y, Q, 30, 3)
    allp = nb.predict_all((1, 4, 30), 3)
    for row, k in zip(allp, (1, 4, 30)):
        np.testing.assert_array_equal(row, knn_predict(X, y, Q, k=k, n_classes=3))


def test_cross_validation_matches_a_naive_loop():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 1, (60, 2)), rng.normal(1.5, 1, (60, 2))])
    y = np.repeat([0, 1], 60)
    ks = (1, 3, 9, 25)
    cv = select_k(X, y, n_classes=2, rng=np.random.default_rng(9), ks=ks, folds=4,
                  max_validation=1000)
    perm = np.random.default_rng(9).permutation(120)
    fold = np.empty(120, dtype=int)
    fold[perm] = np.arange(120) % 4
    correct = np.zeros(len(ks))
    for i in range(120):
        rest = fold != fold[i]
        for j, k in enumerate(ks):
            correct[j] += knn_predict(X[rest], y[rest], X[i : i + 1], k=k, n_classes=2)[0] == y[i]
    np.testing.assert_allclose(cv.accuracy, correct / 120)
    assert cv.best_k == ks[int(np.argmax(correct))]
