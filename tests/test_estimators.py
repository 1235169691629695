"""scikit-learn estimators: check_estimator, equality with scikit-learn at no privacy, warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier, RadiusNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils.estimator_checks import check_estimator

import ppknn
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.protocols.dp_nb.estimator import BelowMajorityWarning

ESTIMATORS = ["PPKNNClassifier", "DPRadiusNeighborsClassifier", "DPKNeighborsClassifier",
              "DPTTClassifier", "PCALaplaceSanitizer", "DPNaiveBayes"]


def _make(name, **params):
    return getattr(ppknn, name)(**params)  # the defaults: bounds="data" for every estimator


@pytest.mark.parametrize("name", ESTIMATORS)
def test_check_estimator_passes_with_listed_expected_failures(name):
    est = _make(name)
    expected = getattr(est, "expected_failed_checks", {})
    assert all(reason for reason in expected.values())  # every skip says why
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None, expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert not failed
    assert len(results) > 40


def test_check_estimator_catches_a_broken_estimator():
    class Broken(ppknn.PPKNNClassifier):
        def predict(self, X):  # no n_features_in_ check, no validation
            return np.zeros(len(X), dtype=int)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(Broken(), on_fail=None,
                                  expected_failed_checks=Broken.expected_failed_checks)
    assert any(r["status"] == "failed" for r in results)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2]


def test_ppknn_without_randomisation_equals_knn(iris):
    X, y, Q = iris
    ours = ppknn.PPKNNClassifier(5, n_parties=4, p0=0.0, bounds=(0.0, 8.0)).fit(X, y)
    ref = KNeighborsClassifier(5, algorithm="brute").fit(X, y)
    np.testing.assert_array_equal(ours.predict(Q), ref.predict(Q))
    assert ours.transcript_.num_rows > 0
    assert len(ours.leakage_.parties) == 4
    # randomised rounds change only what the successor sees, here not the labels (seeded: a
    # random fill may stay in the top-k, so other seeds can differ in a few more rows)
    noisy = ppknn.PPKNNClassifier(5, n_parties=4, p0=1.0, bounds=(0.0, 8.0),
                                  random_state=0).fit(X, y)
    assert np.mean(noisy.predict(Q) == ref.predict(Q)) > 0.95


def test_ppknn_string_labels_and_ray_parameters(iris):
    X, y, Q = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = ppknn.PPKNNClassifier(3, p0=0.0, bounds=(0.0, 8.0)).fit(X, names)
    assert set(clf.predict(Q)) <= set(names)
    with pytest.raises(ConfigError, match="n_parties = 2"):
        ppknn.PPKNNClassifier(n_parties=2, bounds=(0.0, 8.0)).fit(X, y)
    with pytest.raises(ConfigError, match="runtime = 'spark'"):
        ppknn.PPKNNClassifier(runtime="spark", bounds=(0.0, 8.0)).fit(X, y)


def test_dp_rn_at_huge_epsilon_equals_radius_neighbours(iris):
    X, y, Q = iris
    ours = ppknn.DPRadiusNeighborsClassifier(0.8, epsilon=1e12, bounds=(0.0, 8.0)).fit(X, y)
    ref = RadiusNeighborsClassifier(0.8, outlier_label=0).fit(X, y)
    # a tie of counts (an empty region too) is broken by the vanishing noise; scikit-learn
    # gives the lowest label (the outlier label 0 to an empty region)
    counts = np.array([np.bincount(y[i], minlength=3) for i in
                       ref.radius_neighbors(Q, return_distance=False)])
    tie = (counts == counts.max(axis=1, keepdims=True)).sum(axis=1) > 1
    assert tie.sum() <= 4
    np.testing.assert_array_equal(ours.predict(Q)[~tie], ref.predict(Q)[~tie])
    assert ours.privacy_.epsilon == 1e12


def test_dp_knn_baseline_at_huge_epsilon_equals_knn(iris):
    X, y, Q = iris
    ours = ppknn.DPKNeighborsClassifier(7, epsilon=1e12, algorithm="baseline",
                                        bounds=(0.0, 8.0)).fit(X, y)
    np.testing.assert_array_equal(ours.predict(Q), KNeighborsClassifier(7).fit(X, y).predict(Q))


def test_dp_knn_at_small_epsilon_is_noisy_and_charged(iris):
    X, y, Q = iris
    ours = ppknn.DPKNeighborsClassifier(7, epsilon=0.05, algorithm="baseline",
                                        n_analysts=3, bounds=(0.0, 8.0)).fit(X, y)
    pred = ours.predict(Q)
    assert np.mean(pred == KNeighborsClassifier(7).fit(X, y).predict(Q)) < 0.9
    assert ours.privacy_.epsilon == pytest.approx(0.15)  # three analysts, one batch each


def test_dptt_releasing_every_point_at_huge_epsilon_equals_one_nn():
    rng = np.random.default_rng(0)
    X = rng.random((120, 2))
    y = (X[:, 0] > X[:, 1]).astype(int)
    ours = ppknn.DPTTClassifier(variant="N100", epsilon=1e12, delta=0.0,
                                bounds=(0.0, 1.0)).fit(X[:100], y[:100])
    ref = KNeighborsClassifier(1).fit(X[:100], y[:100])
    np.testing.assert_array_equal(ours.predict(X[100:]), ref.predict(X[100:]))
    with pytest.raises(ConfigError, match="give exactly one"):
        ppknn.DPTTClassifier(epsilon=1.0, final_epsilon=2.0, bounds=(0.0, 1.0)).fit(X, y)


def test_sanitizer_without_noise_equals_minmax_pca_and_noise_has_the_scale():
    X, _ = load_wine(return_X_y=True)
    bounds = (X.min(axis=0), X.max(axis=0))
    clean = ppknn.PCALaplaceSanitizer(3, b=None, bounds=bounds).fit(X)
    ref = make_pipeline(MinMaxScaler(), PCA(3)).fit(X)
    np.testing.assert_allclose(clean.transform(X), ref.transform(X), atol=1e-10)
    noisy = ppknn.PCALaplaceSanitizer(3, b=0.5, bounds=bounds, random_state=3).fit(X)
    noise = noisy.transform(X) - noisy.project(X)
    # Laplace(b * range): mean absolute deviation equals the scale (178 rows, 3 columns)
    mad = np.mean(np.abs(noise), axis=0)
    np.testing.assert_allclose(mad, noisy.scales_, rtol=0.25)
    np.testing.assert_allclose(noisy.amplification_, np.exp(2.0))
    np.testing.assert_array_equal(noisy.transform(X), noisy.transform(X))  # int seed repeats


def test_dp_naive_bayes_at_infinite_epsilon_equals_gaussian_nb():
    X, y = load_breast_cancer(return_X_y=True)
    lower, upper = X.min(0), X.max(0)
    ours = ppknn.DPNaiveBayes(epsilon=float("inf"), bounds=(lower, upper), var_floor=0.0,
                              classes=[0, 1]).fit(X[::2], y[::2])
    # the variance floor is var_smoothing * max (U - L)^2, scikit-learn's * max var(X)
    smoothing = 1e-9 * ((upper - lower) ** 2).max() / np.var(X[::2], axis=0).max()
    ref = GaussianNB(var_smoothing=smoothing).fit(X[::2], y[::2])
    np.testing.assert_array_equal(ours.predict(X[1::2]), ref.predict(X[1::2]))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_bounds_from_data_warn(name, iris):
    X, y, _ = iris
    with pytest.warns(PrivacyLeakWarning, match="bounds"):
        est = _make(name, bounds="data")
        est.fit(X, y)


def test_declared_bounds_do_not_warn_and_must_hold_the_data(iris):
    X, y, _ = iris
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        ppknn.PPKNNClassifier(bounds=(0.0, 8.0)).fit(X, y)
    with pytest.raises(ConfigError, match="outside the declared bounds"):
        ppknn.PPKNNClassifier(bounds=(0.0, 5.0)).fit(X, y)


def _fit_nb(epsilon, draws=8, check=True):
    X, y = load_breast_cancer(return_X_y=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = ppknn.DPNaiveBayes(epsilon=epsilon, bounds=(X.min(0), X.max(0)), classes=[0, 1],
                                 random_state=1, utility_draws=draws,
                                 utility_check=check).fit(X, y)
    return clf, [w for w in caught if issubclass(w.category, BelowMajorityWarning)]


def test_naive_bayes_below_the_majority_baseline_warns():
    clf, below = _fit_nb(0.05)
    assert below and "majority class" in str(below[0].message)
    assert clf.expected_accuracy_low_ < clf.majority_accuracy_ == pytest.approx(357 / 569)


def test_naive_bayes_well_above_the_majority_baseline_is_quiet():
    clf, below = _fit_nb(20.0)
    assert not below and clf.expected_accuracy_ > 0.85
    _, off = _fit_nb(0.05, check=False)  # the check can be turned off
    assert not off
    quick, warned = _fit_nb(0.05, draws=0)  # one draw (the default) still warns
    assert warned and quick.expected_accuracy_ < quick.majority_accuracy_


@pytest.mark.parametrize("make", [  # seeded: the default random_state=None draws new noise
    lambda eps: ppknn.DPKNeighborsClassifier(5, epsilon=eps, bounds=(0.0, 8.0), random_state=0),
    lambda eps: ppknn.DPRadiusNeighborsClassifier(0.5, epsilon=eps, bounds=(0.0, 8.0),
                                                  random_state=0),
])
def test_dp_classifiers_warn_when_not_above_the_majority_baseline(make):
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings(record=True) as low:
        warnings.simplefilter("always")
        weak = make(0.01).fit(X[::2], y[::2])
    assert any(issubclass(w.category, BelowMajorityWarning) for w in low)
    assert weak.expected_accuracy_ <= weak.majority_accuracy_ == pytest.approx(1 / 3)
    with warnings.catch_warnings(record=True) as high:
        warnings.simplefilter("always")
        strong = make(200.0).fit(X[::2], y[::2])
    assert not any(issubclass(w.category, BelowMajorityWarning) for w in high)
    assert strong.expected_accuracy_ > 0.75


def test_dptt_estimates_its_accuracy_and_the_check_can_be_turned_off():
    X, y = load_iris(return_X_y=True)
    clf = ppknn.DPTTClassifier(variant="GS-N4", final_epsilon=200.0, bounds=(0.0, 8.0))
    assert clf.fit(X[::2], y[::2]).expected_accuracy_ > 0.8
    off = ppknn.DPTTClassifier(bounds=(0.0, 8.0), utility_folds=0).fit(X[::2], y[::2])
    assert off.expected_accuracy_ is None
