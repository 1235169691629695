"""Estimator parameters: checked at fit, named in the message, numpy numbers accepted."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV

import ppknn
from ppknn.core.errors import ConfigError

B = (0.0, 8.0)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2]


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


BAD = [
    # the reviewer's cases: refused at fit (they were accepted until predict, or raw errors)
    (lambda: ppknn.DPKNeighborsClassifier(5, algorithm="foo", bounds=B), "algorithm = 'foo'"),
    (lambda: ppknn.DPTTClassifier(utility="dis", bounds=B), "radius = None"),
    (lambda: ppknn.PPKNNClassifier(0, bounds=B), "n_neighbors = 0"),
    (lambda: ppknn.PPKNNClassifier("5", bounds=B), "n_neighbors = '5'"),
    (lambda: ppknn.PCALaplaceSanitizer(2, b="x", bounds=B), "b = 'x'"),
    (lambda: ppknn.PCALaplaceSanitizer(2, n_sd="a", bounds=B), "n_sd = 'a'"),
    # and their kin
    (lambda: ppknn.PPKNNClassifier(n_parties=2.5, bounds=B), "n_parties = 2.5"),
    (lambda: ppknn.PPKNNClassifier(p0=1.5, bounds=B), "p0 = 1.5"),
    (lambda: ppknn.PPKNNClassifier(d=0, bounds=B), "d = 0"),
    (lambda: ppknn.PPKNNClassifier(rounds=0, bounds=B), "rounds = 0"),
    (lambda: ppknn.PPKNNClassifier(weighting="idw", bounds=B), "weighting = 'idw'"),
    (lambda: ppknn.PPKNNClassifier(secure_sum="x", bounds=B), "secure_sum = 'x'"),
    (lambda: ppknn.PPKNNClassifier(channels="yes", bounds=B), "channels = 'yes'"),
    (lambda: ppknn.PPKNNClassifier(bounds=None), "bounds = None"),
    (lambda: ppknn.PPKNNClassifier(500, bounds=B), "n_neighbors = 500 is larger"),
    (lambda: ppknn.DPKNeighborsClassifier(epsilon=0, bounds=B), "epsilon = 0"),
    (lambda: ppknn.DPKNeighborsClassifier(epsilon=float("nan"), bounds=B), "epsilon = nan"),
    (lambda: ppknn.DPKNeighborsClassifier(epsilon=True, bounds=B), "epsilon = True"),
    (lambda: ppknn.DPKNeighborsClassifier(weight=1.0, bounds=B), "weight = 1.0"),
    (lambda: ppknn.DPKNeighborsClassifier(n_analysts=0, bounds=B), "n_analysts = 0"),
    (lambda: ppknn.DPKNeighborsClassifier(utility_folds=-1, bounds=B), "utility_folds = -1"),
    (lambda: ppknn.DPKNeighborsClassifier(budget="all", bounds=B), "budget = 'all'"),
    (lambda: ppknn.DPRadiusNeighborsClassifier(radius="1", bounds=B), "radius = '1'"),
    (lambda: ppknn.DPRadiusNeighborsClassifier(algorithm="knn", bounds=B), "algorithm = 'knn'"),
    (lambda: ppknn.DPRadiusNeighborsClassifier(runtime="spark", bounds=B), "runtime = 'spark'"),
    (lambda: ppknn.DPTTClassifier(variant="Q3", bounds=B), "variant = 'Q3'"),
    (lambda: ppknn.DPTTClassifier(variant="E20", bounds=B), "variant = 'E20'"),
    (lambda: ppknn.DPTTClassifier(delta=1.0, bounds=B), "delta = 1.0"),
    (lambda: ppknn.DPTTClassifier(predict_rule="vote", bounds=B), "predict_rule = 'vote'"),
    (lambda: ppknn.DPTTClassifier(final_epsilon="10", bounds=B), "final_epsilon = '10'"),
    (lambda: ppknn.PCALaplaceSanitizer(0, bounds=B), "n_components = 0"),
    (lambda: ppknn.PCALaplaceSanitizer(9, bounds=B), "n_components = 9"),
    (lambda: ppknn.PCALaplaceSanitizer(2, mode="fast", bounds=B), "mode = 'fast'"),
    (lambda: ppknn.DPNaiveBayes(utility_draws="8", bounds=B), "utility_draws = '8'"),
]


@pytest.mark.parametrize("make,named", BAD, ids=[m for _, m in BAD])
def test_a_bad_parameter_is_refused_at_fit_naming_the_estimator_parameter(make, named, iris):
    X, y, _ = iris
    est = make()
    with pytest.raises(ConfigError) as err:
        _fit(est, X, y)
    message = str(err.value)
    assert named in message and "allowed" in message
    assert "protocol." not in message and "parties." not in message
    assert not hasattr(est, "classes_") or isinstance(est, ppknn.DPNaiveBayes)


NUMPY = [
    lambda: ppknn.PPKNNClassifier(np.int64(3), n_parties=np.int64(3), p0=np.float32(0.5),
                                  rounds=np.int32(1), bounds=B),
    lambda: ppknn.DPKNeighborsClassifier(np.int64(3), epsilon=np.float32(1),
                                         n_analysts=np.int64(2), weight=np.float16(0.5),
                                         budget=np.float64(5), utility_folds=np.int8(0),
                                         random_state=np.int64(1), bounds=B),
    lambda: ppknn.DPRadiusNeighborsClassifier(np.float32(1.0), epsilon=np.int64(2),
                                              utility_folds=np.int64(0), bounds=B),
    lambda: ppknn.DPTTClassifier(final_epsilon=np.float32(10), delta=np.float64(0),
                                 utility_folds=np.uint8(0), bounds=B),
    lambda: ppknn.PCALaplaceSanitizer(np.int64(2), b=np.float32(0.2), n_sd=np.int64(2),
                                      random_state=np.int64(1), bounds=B),
    lambda: ppknn.DPNaiveBayes(epsilon=np.float32(1), gamma=np.int64(4),
                               utility_draws=np.int64(2), random_state=np.int64(1), bounds=B,
                               classes=[0, 1, 2]),
]


@pytest.mark.parametrize("make", NUMPY)
def test_numpy_numbers_are_numbers(make, iris):
    X, y, Q = iris
    est = _fit(make(), X, y)
    out = est.transform(Q) if hasattr(est, "transform") else est.predict(Q)
    assert len(out) == len(Q)


def test_grid_search_over_numpy_grids(iris):
    X, y, _ = iris
    grids = [(ppknn.PPKNNClassifier(bounds=B, p0=0.0), {"n_parties": np.arange(3, 5)}),
             (ppknn.DPKNeighborsClassifier(bounds=B, utility_folds=0),
              {"epsilon": np.linspace(1.0, 50.0, 2), "n_neighbors": np.arange(3, 5)})]
    for est, grid in grids:
        search = GridSearchCV(est, grid, cv=2, error_score="raise").fit(X, y)
        assert search.best_score_ > 0.3


def test_the_utility_check_does_not_hide_a_bad_parameter(iris):
    X, y, _ = iris
    with pytest.raises(ConfigError, match="variant = 'E20'"):
        _fit(ppknn.DPTTClassifier(variant="E20", bounds=B), X, y)
    # a fold smaller than the settings need skips the check; the parameters are valid
    clf = _fit(ppknn.DPKNeighborsClassifier(60, bounds=B, random_state=0), X, y)
    assert clf.expected_accuracy_ is None
    assert len(clf.predict(X[:3])) == 3
