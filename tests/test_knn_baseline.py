"""The non-private kNN baseline: computed here where certain, scikit-learn's answer exactly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppknn.simulations.knn import _sklearn_predict, certain_knn, sklearn_knn
from ppknn.simulations.prepare import prepare_data
from ppknn.simulations.scenario import parse_scenario


def _data(dataset: str, seed: int, scale: str):
    sc = parse_scenario({"run": {"seed": seed},
                         "data": {"dataset": dataset, "max_queries": 300, "scale": scale},
                         "parties": {"n": 4}, "protocol": {"name": "ppknn-ring", "k": 5},
                         "runtime": {"kind": "inprocess"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prepare_data(sc)


@pytest.mark.parametrize("dataset,scale", [("pima", "minmax"), ("glass", "none"),
                                           ("abalone", "none"), ("iris", "minmax")])
def test_the_baseline_is_scikit_learns_prediction_exactly(dataset, scale):
    for seed in (0, 1):
        d = _data(dataset, seed, scale)
        for k in (1, 3, 5, 10):
            ours = sklearn_knn(d.union_X, d.union_y, d.queries, k=k)
            theirs = _sklearn_predict(d.union_X, d.union_y, d.queries, k=k,
                                      weighting="uniform")
            assert ours.dtype == theirs.dtype
            np.testing.assert_array_equal(ours, theirs)


def test_a_tie_at_the_kth_distance_is_left_to_scikit_learn():
    # query 0 has two points at the same distance, of different classes: with k = 1
    # which one is nearest is scikit-learn's tie-break, not certain here
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [5.0, 5.0], [6.0, 5.0]])
    y = np.array([1, 0, 1, 0])
    q = np.array([[0.0, 0.0], [5.1, 5.0]])
    votes, certain = certain_knn(X, y, q, 1, 2)
    assert certain.tolist() == [False, True] and votes[1] == 1
    np.testing.assert_array_equal(sklearn_knn(X, y, q, k=1),
                                  _sklearn_predict(X, y, q, k=1, weighting="uniform"))
    # a gap far below the rounding bound is not certain either
    near = np.array([[1.0, 0.0], [-1.0 - 1e-15, 0.0]])
    _, certain = certain_knn(near, np.array([1, 0]), q[:1], 1, 2)
    assert not certain[0]


def test_majority_ties_go_to_the_smallest_class_as_in_scikit_learn():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    y = np.array([2, 0, 1, 1])
    q = np.array([[0.4]])
    assert sklearn_knn(X, y, q, k=2).tolist() == [0]
    assert _sklearn_predict(X, y, q, k=2, weighting="uniform").tolist() == [0]


def test_distance_weighting_and_labels_as_strings():
    rng = np.random.default_rng(3)
    X, q = rng.random((60, 3)), rng.random((20, 3))
    y = np.array(["a", "b", "c"])[rng.integers(0, 3, 60)]
    np.testing.assert_array_equal(sklearn_knn(X, y, q, k=4),
                                  _sklearn_predict(X, y, q, k=4, weighting="uniform"))
    np.testing.assert_array_equal(sklearn_knn(X, y, q, k=4, weighting="distance"),
                                  _sklearn_predict(X, y, q, k=4, weighting="distance"))


def test_a_tie_among_points_of_one_class_is_settled_here():
    # three duplicated points of class 1 straddle the k-th place (k = 2): whichever two
    # scikit-learn takes, the vote is the same
    X = np.array([[0.0], [2.0], [2.0], [2.0], [9.0]])
    y = np.array([0, 1, 1, 1, 0])
    q = np.array([[0.9]])
    votes, certain = certain_knn(X, y, q, 3, 2)
    assert certain.tolist() == [True] and votes.tolist() == [1]
    y_mixed = np.array([0, 1, 0, 1, 0])  # the band holds both classes: left to scikit-learn
    assert not certain_knn(X, y_mixed, q, 3, 2)[1][0]
    for labels in (y, y_mixed):
        np.testing.assert_array_equal(sklearn_knn(X, labels, q, k=3),
                                      _sklearn_predict(X, labels, q, k=3, weighting="uniform"))


def test_a_mixed_tie_that_cannot_change_the_majority_is_settled_here():
    # two sure points of class 0 below, then a tie between a class-0 and a class-1 point
    # for the third place: the majority is class 0 whichever scikit-learn takes
    X = np.array([[0.0], [0.1], [1.0], [-0.8], [9.0]])
    y = np.array([0, 0, 0, 1, 1])
    q = np.array([[0.1]])
    assert certain_knn(X, y, q, 3, 2)[1].tolist() == [True]
    assert certain_knn(X, y, q, 3, 2)[0].tolist() == [0]
    # one sure point of class 1, then the tie: class 0 ties the vote (to class 0), class 1
    # wins it: left to scikit-learn
    y_sure_1 = np.array([1, 0, 1, 1])
    assert not certain_knn(X[1:], y_sure_1, q, 2, 2)[1][0]
    assert certain_knn(X[1:], y[1:], q, 2, 2)[1][0]  # sure class 0: either way class 0
    for labels in (y[1:], y_sure_1):
        np.testing.assert_array_equal(sklearn_knn(X[1:], labels, q, k=2),
                                      _sklearn_predict(X[1:], labels, q, k=2,
                                                       weighting="uniform"))
