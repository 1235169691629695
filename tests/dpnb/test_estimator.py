"""The scikit-learn estimator: equality with non-private NB at ε = ∞, ledger, seeds, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import CategoricalNB, GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from ppknn.core.dp import PrivacyLedger
from ppknn.core.errors import BudgetExhausted, ConfigError, PrivacyLeakWarning
from ppknn.protocols.dp_nb import BoundsWarning, DPNaiveBayes

INF = math.inf


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(0)
    n = 600
    y = rng.integers(0, 3, n)
    num = np.column_stack([rng.normal(2 + y, 1.0), rng.gamma(2 + y, 1.0)]).clip(0, 20)
    cat = np.column_stack([(y + rng.integers(0, 2, n)) % 4, rng.integers(0, 3, n)])
    X = np.column_stack([num[:, 0], cat[:, 0], num[:, 1], cat[:, 1]])
    return X, y, dict(bounds=([0.0, 0.0], [20.0, 20.0]), categories={1: [0, 1, 2, 3],
                                                                       3: [0, 1, 2]},
                      classes=[0, 1, 2])


def test_epsilon_infinity_equals_gaussian_nb():
    rng = np.random.default_rng(1)
    X = rng.normal(5, 2, (300, 3)).clip(0, 10)
    y = rng.integers(0, 2, 300)
    ours = DPNaiveBayes(epsilon=INF, bounds=(0.0, 10.0), classes=[0, 1]).fit(X, y)
    # our variance floor is var_smoothing * max (U - L)^2, scikit-learn's * max var(X)
    sk = GaussianNB(var_smoothing=1e-9 * 100.0 / np.var(X, axis=0).max()).fit(X, y)
    np.testing.assert_allclose(ours.theta_, sk.theta_, rtol=1e-13)
    np.testing.assert_allclose(ours.var_, sk.var_, rtol=1e-12)
    np.testing.assert_allclose(ours.class_prior_, sk.class_prior_, rtol=1e-13)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), rtol=1e-9, atol=1e-12)


def test_epsilon_infinity_equals_categorical_nb():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 4, (400, 2))
    y = (X[:, 0] + rng.integers(0, 2, 400)) % 3
    ours = DPNaiveBayes(epsilon=INF, categories={0: [0, 1, 2, 3], 1: [0, 1, 2, 3]},
                        classes=[0, 1, 2]).fit(X, y)
    sk = CategoricalNB(alpha=1.0, min_categories=4).fit(X, y)
    for a, b in zip(ours.feature_log_prob_, sk.feature_log_prob_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), rtol=1e-12)


def test_epsilon_infinity_mixed_equals_the_two_combined(mixed):
    X, y, schema = mixed
    ours = DPNaiveBayes(epsilon=INF, **schema).fit(X, y)
    num, cat = X[:, [0, 2]], X[:, [1, 3]].astype(int)
    g = GaussianNB(var_smoothing=1e-9 * 400.0 / np.var(num, axis=0).max()).fit(num, y)
    c = CategoricalNB(alpha=1.0, min_categories=[4, 3]).fit(cat, y)
    jll = g.predict_joint_log_proba(num) + c.predict_joint_log_proba(cat) - c.class_log_prior_
    expected = np.exp(jll - np.logaddexp.reduce(jll, axis=1, keepdims=True))
    np.testing.assert_allclose(ours.predict_proba(X), expected, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("method", ["smooth", "vaidya", "bun-steinke"])
def test_every_method_at_infinity_is_the_non_private_model(mixed, method):
    X, y, schema = mixed
    exact = DPNaiveBayes(method="non-private", **schema).fit(X, y)
    other = DPNaiveBayes(method=method, epsilon=INF, **schema).fit(X, y)
    np.testing.assert_allclose(other.theta_, exact.theta_, rtol=1e-12)
    np.testing.assert_allclose(other.var_, exact.var_, rtol=1e-9)
    assert other.ledger_ is None and other.epsilon_ == 0.0


def test_scikit_learn_protocol(mixed):
    X, y, schema = mixed
    clf = DPNaiveBayes(epsilon=2.0, random_state=0, neighbours="replace", **schema)
    assert clone(clf).get_params() == clf.get_params()
    assert clf.set_params(epsilon=3.0).epsilon == 3.0
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    pipe = make_pipeline(FunctionTransformer(), clone(clf)).fit(X, y)
    assert set(pipe.predict(X)) <= {0, 1, 2}
    fitted = clone(clf).fit(X, y)
    proba = fitted.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.array_equal(fitted.classes_[proba.argmax(axis=1)], fitted.predict(X))
    assert fitted.score(X, y) == np.mean(fitted.predict(X) == y)


def test_private_model_learns_on_large_data():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(3, 1, (20_000, 2)), rng.normal(6, 1, (20_000, 2))]).clip(0, 10)
    y = np.repeat([0, 1], 20_000)
    acc = [DPNaiveBayes(epsilon=1.0, bounds=(0.0, 10.0), classes=[0, 1], random_state=s)
           .fit(X, y).score(X, y) for s in range(5)]
    exact = DPNaiveBayes(method="non-private", bounds=(0.0, 10.0)).fit(X, y).score(X, y)
    assert min(acc) > exact - 0.02


def test_seeded_fits_repeat_and_unseeded_fits_differ(mixed):
    X, y, schema = mixed
    a = DPNaiveBayes(epsilon=1.0, random_state=7, **schema).fit(X, y)
    b = DPNaiveBayes(epsilon=1.0, random_state=7, **schema).fit(X, y)
    assert np.array_equal(a.theta_, b.theta_) and np.array_equal(a.class_count_, b.class_count_)
    c = DPNaiveBayes(epsilon=1.0, **schema).fit(X, y)
    d = DPNaiveBayes(epsilon=1.0, **schema).fit(X, y)
    assert not np.array_equal(c.theta_, d.theta_)


def test_fit_is_charged_to_the_ledger_and_refused_when_it_does_not_fit(mixed):
    X, y, schema = mixed
    ledger = PrivacyLedger(owner="hospital", epsilon=1.0, analyst_epsilon=0.5)
    DPNaiveBayes(epsilon=0.4, random_state=0, **schema).fit(X, y, ledger=ledger, analyst="ann")
    DPNaiveBayes(epsilon=0.4, random_state=0, **schema).fit(X, y, ledger=ledger, analyst="bob")
    assert ledger.remaining().epsilon == pytest.approx(0.2)
    assert [e.label for e in ledger.entries] == ["dp-nb global (laplace)"] * 2
    clf = DPNaiveBayes(epsilon=0.3, random_state=0, **schema)
    with pytest.raises(BudgetExhausted, match="owner's budget"):
        clf.fit(X, y, ledger=ledger, analyst="cat")
    assert not hasattr(clf, "params_") and len(ledger.entries) == 2
    with pytest.raises(BudgetExhausted, match="analyst 'ann'"):
        DPNaiveBayes(epsilon=0.2, **schema).fit(X, y, ledger=ledger, analyst="ann")


def test_own_ledger_holds_the_fit_and_delta(mixed):
    X, y, schema = mixed
    clf = DPNaiveBayes(epsilon=1.0, noise="gaussian", delta=1e-5, random_state=0,
                       neighbours="replace", method="smooth", budget="equal",
                       **schema).fit(X, y)
    assert clf.ledger_.spent().epsilon == 1.0 and clf.ledger_.spent().delta == 1e-5
    assert clf.budget_.per_release == pytest.approx(1.0 / 7)  # 2*2 numeric + 2 cat + 1
    assert [r.label for r in clf.releases_] == ["class counts", "categorical 1",
                                                 "categorical 3", "mean 0", "variance 0",
                                                 "mean 2", "variance 2"]
    assert sum(r.epsilon for r in clf.releases_) == pytest.approx(1.0)
    assert sum(r.delta for r in clf.releases_) == pytest.approx(1e-5)


def test_out_of_bounds_values_are_clipped_with_a_warning_or_rejected():
    X = np.array([[1.0], [2.0], [15.0], [-3.0]])
    y = np.array([0, 0, 1, 1])
    with pytest.warns(BoundsWarning, match="column 0: 2"):
        clf = DPNaiveBayes(method="non-private", bounds=(0.0, 10.0)).fit(X, y)
    assert clf.theta_[1, 0] == 5.0  # (10 + 0) / 2 after clipping
    with pytest.raises(ConfigError, match=r"value 15.0 \(row 2\) is outside"):
        DPNaiveBayes(method="non-private", bounds=(0.0, 10.0), out_of_bounds="error").fit(X, y)


def test_bounds_from_data_and_classes_from_labels_warn():
    X = np.array([[1.0], [2.0], [8.0], [9.0]] * 10)
    y = np.array([0, 0, 1, 1] * 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPNaiveBayes(epsilon=1.0, bounds="data", random_state=0).fit(X, y)
    messages = [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert any("bounds" in m for m in messages) and any("classes" in m for m in messages)


NUM = np.array([[1.0, 0.5], [2.0, 0.5], [8.0, 0.1], [9.0, 0.9]] * 5)
LAB = np.array([0, 0, 1, 1] * 5)
B = ([0.0, 0.0], [10.0, 1.0])


@pytest.mark.parametrize("params,X,y,error,match", [
    (dict(epsilon=0.0, bounds=B), NUM, LAB, ConfigError, "epsilon must be a number > 0"),
    (dict(epsilon=-1.0, bounds=B), NUM, LAB, ConfigError, "epsilon"),
    (dict(epsilon=float("nan"), bounds=B), NUM, LAB, ConfigError, "epsilon"),
    (dict(epsilon=1.0, bounds=None), NUM, LAB, ConfigError, "bounds are missing"),
    (dict(epsilon=1.0, bounds=([0.0], [10.0])), NUM, LAB, ConfigError, "one lower and one upper"),
    (dict(epsilon=1.0, bounds=([0.0, 1.0], [10.0, 1.0])), NUM, LAB, ConfigError,
     "lower < upper"),
    (dict(epsilon=1.0, bounds="guess"), NUM, LAB, ConfigError, "'data'"),
    (dict(epsilon=1.0, bounds=B, classes=[0]), NUM, LAB, ConfigError,
     "not among the declared classes"),
    (dict(epsilon=1.0, bounds=B, trim=5, method="smooth"), NUM, LAB, ConfigError,
     "has 10 training rows but trim=5 needs at least 12"),
    (dict(epsilon=1.0, bounds=B, trim=0.7), NUM, LAB, ConfigError, "trim"),
    (dict(epsilon=1.0, bounds=B, method="median"), NUM, LAB, ConfigError, "method"),
    (dict(epsilon=1.0, bounds=B, noise="student"), NUM, LAB, ConfigError, "noise"),
    (dict(epsilon=1.0, bounds=B, delta=1e-5), NUM, LAB, ConfigError, "delta"),
    (dict(epsilon=1.0, bounds=B, noise="laplace"), NUM, LAB, ConfigError, "delta > 0"),
    (dict(epsilon=1.0, bounds=B, gamma=0.5), NUM, LAB, ConfigError, "gamma"),
    (dict(epsilon=1.0, bounds=B, neighbours="swap"), NUM, LAB, ConfigError, "neighbours"),
    (dict(epsilon=1.0, bounds=B, density="cauchy"), NUM, LAB, ConfigError, "density"),
    (dict(epsilon=1.0, bounds=B, var_floor=0.5), NUM, LAB, ConfigError, "var_floor"),
    (dict(epsilon=1.0, bounds=B, out_of_bounds="ignore"), NUM, LAB, ConfigError,
     "out_of_bounds"),
    (dict(epsilon=1.0, bounds=B), NUM[:, 0], LAB, ConfigError, "2-D"),
    (dict(epsilon=1.0, bounds=B), NUM, LAB[:-1], ConfigError, "labels"),
    (dict(epsilon=1.0, bounds=B), np.where(NUM == 0.1, np.nan, NUM), LAB, ConfigError,
     "missing or non-finite value nan"),
    (dict(epsilon=1.0, bounds=([0.0], [10.0]), categories={1: ["a", "b"]}),
     np.array([[1.0, "a"], [2.0, "c"]], dtype=object), np.array([0, 1]), ConfigError,
     "value 'c' is not a declared category"),
    (dict(epsilon=1.0, bounds=([0.0], [10.0]), categories={5: ["a"]}), NUM, LAB, ConfigError,
     "column 5 is not in"),
    (dict(epsilon=1.0, bounds=B, noise="gaussian", delta=1e-5, mode="secure",
          method="smooth"), NUM, LAB,
     ConfigError, "secure"),
])
def test_bad_input_is_rejected_with_a_clear_message(params, X, y, error, match):
    with pytest.raises(error, match=match):
        DPNaiveBayes(classes=params.pop("classes", [0, 1]), **params).fit(X, y)


def test_unseen_category_at_predict_time_is_rejected():
    X = np.array([[1.0, "a"], [2.0, "b"], [8.0, "a"], [9.0, "b"]], dtype=object)
    clf = DPNaiveBayes(epsilon=1.0, bounds=([0.0], [10.0]), categories={1: ["a", "b"]},
                       classes=[0, 1], random_state=0).fit(X, np.array([0, 0, 1, 1]))
    assert clf.predict(X).shape == (4,)
    with pytest.raises(ConfigError, match="column 1: value 'z' is not a declared category"):
        clf.predict(np.array([[1.0, "z"]], dtype=object))


def test_predicting_before_fitting_is_an_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DPNaiveBayes(bounds=(0.0, 1.0)).predict(np.zeros((1, 1)))


def test_secure_mode_draws_from_os_entropy(mixed):
    X, y, schema = mixed
    a = DPNaiveBayes(epsilon=1.0, mode="secure", random_state=1, **schema).fit(X, y)
    b = DPNaiveBayes(epsilon=1.0, mode="secure", random_state=1, **schema).fit(X, y)
    assert not np.array_equal(a.theta_, b.theta_)  # the seed is ignored in secure mode
    assert a.ledger_.spent().epsilon == 1.0
