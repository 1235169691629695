"""One convention for every estimator: bounds default, warnings once, privacy unit, search cost."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

import ppknn
from ppknn.core import conventions
from ppknn.core.conventions import UnchargedSearchWarning
from ppknn.core.dp import PrivacyLedger
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.protocols.dp_nb.estimator import BelowMajorityWarning
from ppknn.simulations.estimators import DPGridSearchCV, search_cost
from ppknn.simulations.estimators.base import ProtocolClassifier
from ppknn.simulations.estimators.spending import BudgetRefused

ESTIMATORS = ["PPKNNClassifier", "DPRadiusNeighborsClassifier", "DPKNeighborsClassifier",
              "DPTTClassifier", "PCALaplaceSanitizer", "DPNaiveBayes"]
UNITS = {"PPKNNClassifier": "none", "DPRadiusNeighborsClassifier": "per predict batch",
         "DPKNeighborsClassifier": "per predict batch", "DPTTClassifier": "per query",
         "PCALaplaceSanitizer": "per transform call", "DPNaiveBayes": "per model"}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, caught


def _kinds(caught, category):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_one_bounds_default_and_the_leak_warning_once_per_estimator(name, iris):
    X, y = iris
    cls = getattr(ppknn, name)
    assert cls().get_params()["bounds"] == "data"
    est = cls()
    _, caught = _caught(lambda: (est.fit(X, y), est.fit(X, y), clone(est).fit(X, y)))
    leaks = [m for m in _kinds(caught, PrivacyLeakWarning) if "bounds" in m]
    assert len(leaks) == 1  # three fits, one of them a clone's: one warning
    _, again = _caught(lambda: cls().fit(X, y))  # another estimator: it warns too
    assert len([m for m in _kinds(again, PrivacyLeakWarning) if "bounds" in m]) == 1


def test_the_leak_warning_still_stops_a_fit_under_an_error_filter(iris):
    X, y = iris
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(PrivacyLeakWarning, match="bounds"):
            ppknn.DPNaiveBayes(classes=[0, 1, 2]).fit(X, y, ledger=ledger)
    assert ledger.remaining().epsilon == 1.0  # nothing was released


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_estimator_states_its_privacy_unit(name, iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = getattr(ppknn, name)().fit(X, y)
    assert isinstance(est.privacy_unit_, str) and len(est.privacy_unit_) <= 120
    assert est.privacy_unit_.startswith(UNITS[name])


def _search(est, grid, **kw):
    return GridSearchCV(est, grid, cv=KFold(3, shuffle=True, random_state=0), **kw)


@pytest.mark.parametrize("est,grid", [
    (ppknn.DPKNeighborsClassifier(epsilon=0.01, random_state=0),
     {"epsilon": [0.01, 0.02], "n_neighbors": [3, 5]}),
    (ppknn.DPNaiveBayes(epsilon=0.01, random_state=0), {"epsilon": [0.01, 0.02, 0.03]}),
])
def test_a_grid_search_emits_at_most_one_warning_of_each_kind(est, grid, iris):
    X, y = iris
    _, caught = _caught(lambda: _search(est, grid).fit(X, y))
    counts = Counter((w.category, conventions.kind(w.category, str(w.message)))
                     for w in caught)
    assert counts and max(counts.values()) == 1, counts
    categories = Counter(w.category for w in caught)
    # ε = 0.01 on 3 classes: every clone is below the majority rate; one warning says so
    assert categories[BelowMajorityWarning] == 1
    assert "expected accuracy 0." in _kinds(caught, BelowMajorityWarning)[0]
    assert categories[UnchargedSearchWarning] == 1
    assert len(_kinds(caught, PrivacyLeakWarning)) >= 1


def test_the_once_rule_is_what_keeps_the_search_quiet(iris, monkeypatch):
    """The broken variant: a family that forgets what it showed floods the search."""
    X, y = iris
    monkeypatch.setattr(conventions.Family, "first", lambda self, key: True)
    # seeded: unseeded noise lifts some clones above the majority rate, and they stay quiet
    est = ppknn.DPKNeighborsClassifier(epsilon=0.01, random_state=0)
    _, caught = _caught(lambda: _search(est, {"epsilon": [0.01, 0.02]}).fit(X, y))
    assert len(_kinds(caught, BelowMajorityWarning)) > 1


def test_no_search_warning_for_a_non_private_estimator_or_a_budgeted_search(iris):
    X, y = iris
    _, caught = _caught(lambda: _search(ppknn.PPKNNClassifier(p0=0.0),
                                        {"n_neighbors": [3, 5]}).fit(X, y))
    assert not _kinds(caught, UnchargedSearchWarning)
    search = DPGridSearchCV(ppknn.DPKNeighborsClassifier(epsilon=1.0),
                            {"n_neighbors": [3, 5]}, budget=4.0, cv=3)
    _, caught = _caught(lambda: search.fit(X, y))
    assert not _kinds(caught, UnchargedSearchWarning)
    # 2 candidates, each row in 2 of 3 training folds, ε 1 a predict: 4 exactly
    assert search.privacy_cost_.epsilon == 4.0 and not search.privacy_cost_.refit_bound


def _recorded(monkeypatch):
    """Every charged call of a protocol classifier: (ε, the ids of the rows it charged)."""
    calls = []
    original = ProtocolClassifier._run

    def run(self, Xq):
        pred, sim = original(self, Xq)
        rows = self.X_fit_ if type(self).__name__ != "DPTTClassifier" else np.asarray(Xq)
        calls.append((self.privacy_last_.epsilon, rows[:, 0].astype(int)))
        return pred, sim

    monkeypatch.setattr(ProtocolClassifier, "_run", run)
    return calls


@pytest.mark.parametrize("est,grid,return_train", [
    (ppknn.DPKNeighborsClassifier(bounds=(0.0, 200.0), utility_folds=0, n_analysts=2),
     {"epsilon": [0.3, 0.7], "n_neighbors": [3, 5]}, False),
    (ppknn.DPRadiusNeighborsClassifier(0.5, bounds=(0.0, 200.0), utility_folds=0),
     {"epsilon": [0.1, 1.0]}, True),
    (ppknn.DPTTClassifier(bounds=(0.0, 200.0), utility_folds=0),
     {"final_epsilon": [1.0, 2.5]}, True),
])
def test_search_cost_is_what_the_search_spends_per_row(est, grid, return_train, iris,
                                                        monkeypatch):
    X, y = iris
    X = np.column_stack([np.arange(len(y)), X])  # column 0: the row's id
    search = _search(est, grid, return_train_score=return_train)
    stated = search_cost(search, X, y)
    calls = _recorded(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    per_row = np.zeros(len(y))
    for eps, rows in calls:
        per_row[rows] += eps
    assert stated.releases == len(calls) > 0
    assert stated.epsilon == pytest.approx(per_row.max(), rel=1e-12)
    assert stated.epsilon_sum == pytest.approx(sum(e for e, _ in calls), rel=1e-12)
    assert stated.epsilon < stated.epsilon_sum  # per row, not every release on every row
    assert search_cost(search, X, y).refit_bound is False  # after the search: the best's


def test_search_cost_of_dp_naive_bayes_counts_every_fit_and_the_refit(iris):
    X, y = iris
    search = _search(ppknn.DPNaiveBayes(), {"epsilon": [0.5, 2.0]})
    cost = search_cost(search, X, y)
    # each row is in 2 of 3 training folds per candidate, then the dearest refit
    assert (cost.candidates, cost.splits, cost.releases) == (2, 3, 7)
    assert cost.epsilon == 2 * (0.5 + 2.0) + 2.0 and cost.refit_bound
    assert cost.epsilon_sum == 3 * 2.5 + 2.0
    assert "per model" in cost.unit and "epsilon = 7" in str(cost)


def test_search_cost_of_a_sanitizer_in_a_pipeline(iris):
    X, y = iris
    pipe = make_pipeline(ppknn.PCALaplaceSanitizer(2, bounds=(0.0, 8.0)), KNeighborsClassifier())
    cost = search_cost(_search(pipe, {"pcalaplacesanitizer__b": [0.5, 1.0]}), X, y)
    # per candidate each row is transformed 3 times (2 fit_transforms, 1 score), s / b each;
    # then the dearest refit's fit_transform: 3 * 4 + 3 * 2 + 4
    assert cost.epsilon == 22.0 and "per transform call" in cost.unit


def test_dp_grid_search_refuses_before_anything_runs(iris, monkeypatch):
    X, y = iris
    calls = _recorded(monkeypatch)
    search = DPGridSearchCV(ppknn.DPKNeighborsClassifier(epsilon=1.0), {"n_neighbors": [3, 5]},
                            budget=3.999, cv=3)
    with pytest.raises(BudgetRefused, match=r"budget = 3.999 cannot pay for epsilon 4"):
        search.fit(X, y)
    assert not calls and not hasattr(search, "cv_results_")


@pytest.mark.parametrize("search,match", [
    (KNeighborsClassifier(), "allowed: a scikit-learn hyper-parameter search"),
    (RandomizedSearchCV(ppknn.DPNaiveBayes(), {"epsilon": [1.0, 2.0]}, n_iter=2),
     "allowed: an int random_state"),
    (DPGridSearchCV(ppknn.DPNaiveBayes(), {"epsilon": [1.0]}, budget=-1.0), "budget = -1.0"),
])
def test_bad_searches_are_refused_by_name(search, match, iris):
    X, y = iris
    with pytest.raises(ConfigError, match=match):
        search.fit(X, y) if isinstance(search, DPGridSearchCV) else search_cost(search, X, y)


def test_naive_bayes_says_it_will_not_help_before_it_releases(iris):
    X, y = iris
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("error", BelowMajorityWarning)
        with pytest.raises(BelowMajorityWarning, match=r"expected accuracy 0\.\d+"):
            ppknn.DPNaiveBayes(epsilon=0.01, classes=[0, 1, 2],
                               random_state=0).fit(X, y, ledger=ledger)
    assert ledger.remaining().epsilon == 1.0  # the warning came first: nothing released


@pytest.mark.parametrize("name", ["DPRadiusNeighborsClassifier", "DPKNeighborsClassifier",
                                  "DPTTClassifier", "DPNaiveBayes"])
def test_every_dp_classifier_says_when_it_will_not_help(name, iris):
    X, _ = iris
    y = (np.arange(len(X)) % 5 == 0).astype(int)  # labels unrelated to X, majority 0.8
    eps = {"final_epsilon": 0.01} if name == "DPTTClassifier" else {"epsilon": 0.01}
    est, caught = _caught(lambda: getattr(ppknn, name)(random_state=0, **eps).fit(X, y))
    assert est.majority_accuracy_ == 0.8
    below = _kinds(caught, BelowMajorityWarning)
    assert est.expected_accuracy_ is not None and len(below) == 1
    assert f"{est.expected_accuracy_:.3f}" in below[0]
    assert f"{est.majority_accuracy_:.3f}" in below[0]
