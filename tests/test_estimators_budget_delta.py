"""``budget_delta``: the δ cap of the DP estimators, checked exactly before anything runs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris, load_wine
from sklearn.utils.estimator_checks import check_estimator

import ppknn
from ppknn.core.errors import ConfigError
from ppknn.simulations.estimators import base
from ppknn.simulations.estimators.spending import BudgetRefused

B = (0.0, 8.0)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2]


def _dptt(**params):
    """DP-TT whose calls spend δ = ``delta`` each: GS's bounded-range bound beats the sum."""
    params = {"variant": "GS", "final_epsilon": 1.0, "delta": 1e-6, **params}
    return ppknn.DPTTClassifier(bounds=B, utility_folds=0, **params)


DP_ESTIMATORS = {
    "DPKNeighborsClassifier": lambda **p: ppknn.DPKNeighborsClassifier(5, bounds=B,
                                                                       utility_folds=0, **p),
    "DPRadiusNeighborsClassifier": lambda **p: ppknn.DPRadiusNeighborsClassifier(
        1.0, bounds=B, utility_folds=0, **p),
    "DPTTClassifier": _dptt,
    "PCALaplaceSanitizer": lambda **p: ppknn.PCALaplaceSanitizer(2, b=0.5, bounds=B, **p),
}


def _release(est, X):
    return est.transform(X) if hasattr(est, "transform") else est.predict(X)


# ------------------------------------------------------------------ the (ε, δ) estimator
def test_three_calls_at_1e_6_fit_3e_6_exactly_and_the_fourth_is_refused(iris, runs):
    X, y, Q = iris
    clf = _dptt(budget_delta=3e-6).fit(X, y)
    for _ in range(3):
        clf.predict(Q[:5])
        assert clf.privacy_last_.delta == 1e-6  # each call spends δ (GS: the bound wins)
    assert clf.privacy_.delta == 3e-6  # exact sums: no float drift refuses the third
    before = (clf.privacy_, clf.privacy_last_, clf.last_run_, clf.transcript_, len(runs))
    with pytest.raises(BudgetRefused, match=r"budget_delta = 3e-06 cannot pay for this call "
                       r"\(delta 1e-06\) on top of the 3e-06 spent by 3 call\(s\) since fit; "
                       r"nothing was released"):
        clf.predict(Q[:5])
    after = (clf.privacy_, clf.privacy_last_, clf.last_run_, clf.transcript_, len(runs))
    assert all(a is b for a, b in zip(before[:4], after[:4]))  # nothing released or changed
    assert after[4] == before[4]  # no party started
    assert clf.privacy_.delta == 3e-6 and "3 call(s) since fit" in clf.privacy_.guarantee


@pytest.mark.parametrize("cap, allowed", [(2e-6, 2), (math.nextafter(2e-6, 0.0), 1),
                                          (math.nextafter(2e-6, 1.0), 2)])
def test_the_boundary_is_exact(cap, allowed, iris):
    X, y, Q = iris
    clf = _dptt(budget_delta=cap).fit(X, y)
    for _ in range(allowed):
        clf.predict(Q[:3])
    with pytest.raises(BudgetRefused, match=f"budget_delta = {cap!r}"):
        clf.predict(Q[:3])
    assert clf._spending.calls == allowed


def test_epsilon_and_delta_caps_are_both_named_when_both_refuse(iris):
    X, y, Q = iris
    clf = _dptt(budget=1.5, budget_delta=1e-6).fit(X, y)
    clf.predict(Q[:3])
    with pytest.raises(BudgetRefused) as err:
        clf.predict(Q[:3])
    assert "budget = 1.5 cannot pay" in str(err.value)
    assert "budget_delta = 1e-06 cannot pay" in str(err.value)


def test_the_delta_cap_refuses_while_epsilon_still_fits(iris):
    X, y, Q = iris
    clf = _dptt(budget=100.0, budget_delta=1e-6).fit(X, y)
    clf.predict(Q[:3])
    with pytest.raises(BudgetRefused, match="budget_delta") as err:
        clf.predict(Q[:3])
    assert "budget = " not in str(err.value)


@pytest.mark.parametrize("cap", [0.0, 5e-7, math.nextafter(1e-6, 0.0)])
def test_a_delta_cap_below_one_call_is_refused_at_fit(cap, iris):
    X, y, _ = iris
    clf = _dptt(budget_delta=cap)
    with pytest.raises(ConfigError, match=rf"budget_delta = {cap!r} is below the cost of the "
                       r"cheapest predict call \(one query row\): delta 1e-06"):
        clf.fit(X, y)
    assert not hasattr(clf, "classes_")


def test_a_delta_cap_of_exactly_one_call_fits(iris):
    X, y, Q = iris
    clf = _dptt(budget_delta=1e-6).fit(X, y)
    clf.predict(Q)
    assert clf.privacy_.delta == 1e-6


def test_dptt_calls_with_pure_epsilon_fit_a_zero_delta_cap(iris):
    X, y, Q = iris
    for clf in (_dptt(delta=0.0, budget_delta=0.0), _dptt(variant="E4", budget_delta=0.0)):
        clf.fit(X, y)
        clf.predict(Q)
        clf.predict(Q)
        assert clf.privacy_.delta == 0.0


def test_a_failed_run_is_charged_its_delta(iris, monkeypatch):
    X, y, Q = iris
    clf = _dptt(budget_delta=1e-6).fit(X, y)

    def boom(planned):
        raise RuntimeError("party died")

    monkeypatch.setattr(base, "run_planned", boom)
    with pytest.raises(RuntimeError, match="party died"):
        clf.predict(Q)
    assert clf.privacy_.delta == 1e-6  # the parties may have read the data
    with pytest.raises(BudgetRefused, match="budget_delta"):
        clf.predict(Q)


def test_a_refit_starts_a_new_delta_account(iris):
    X, y, Q = iris
    clf = _dptt(budget_delta=1e-6).fit(X, y)
    clf.predict(Q[:3])
    with pytest.raises(BudgetRefused):
        clf.predict(Q[:3])
    clf.fit(X, y)
    assert clf.privacy_.delta == 0.0
    clf.predict(Q[:3])


# -------------------------------------------------------------------- pure ε estimators
@pytest.mark.parametrize("name", ["DPKNeighborsClassifier", "DPRadiusNeighborsClassifier"])
def test_pure_epsilon_estimators_meet_any_delta_cap(name, iris):
    X, y, Q = iris
    clf = DP_ESTIMATORS[name](epsilon=1.0, budget_delta=0.0).fit(X, y)
    for _ in range(4):
        clf.predict(Q)
    assert clf.privacy_.delta == 0.0 and clf.privacy_.epsilon == 4.0


def test_the_sanitizer_meets_any_delta_cap():
    X, _ = load_wine(return_X_y=True)
    s = ppknn.PCALaplaceSanitizer(3, b=0.5, budget=13.0, budget_delta=0.0,
                                  bounds=(X.min(0), X.max(0))).fit(X)
    s.transform(X)
    s.transform(X)
    assert s.privacy_.delta == 0.0
    with pytest.raises(BudgetRefused) as err:  # the ε cap still refuses, the δ cap never
        s.transform(X)
    assert "budget = 13.0" in str(err.value) and "budget_delta" not in str(err.value)


# ------------------------------------------------------------- parameters (sklearn ways)
@pytest.mark.parametrize("name", sorted(DP_ESTIMATORS))
def test_budget_delta_is_a_parameter_stored_as_given(name):
    est = DP_ESTIMATORS[name](budget_delta=np.float64(2e-6))
    assert est.get_params()["budget_delta"] == np.float64(2e-6)
    assert type(est.budget_delta) is np.float64  # stored as given, checked at fit
    assert clone(est).budget_delta == 2e-6
    assert DP_ESTIMATORS[name]().budget_delta is None  # the default: no cap


BAD = [-1e-6, float("nan"), float("inf"), -float("inf"), "1e-6", True, [1e-6]]


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize("name", sorted(DP_ESTIMATORS))
def test_a_bad_budget_delta_is_refused_at_fit_naming_the_value(name, bad, iris):
    X, y, _ = iris
    est = DP_ESTIMATORS[name](budget_delta=bad)  # accepted as given by the constructor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError) as err:
            est.fit(X, y)
    assert f"{name}: budget_delta = {bad!r}; allowed: None (no cap) or a finite number >= 0" \
        in str(err.value)
    assert not hasattr(est, "n_features_in_")


@pytest.mark.parametrize("name", sorted(DP_ESTIMATORS))
def test_numpy_budget_delta_is_a_number(name, iris):
    X, y, Q = iris
    est = DP_ESTIMATORS[name](budget_delta=np.float32(1.0)).fit(X, y)
    assert len(_release(est, Q)) == len(Q)


def test_check_estimator_passes_with_a_delta_cap():
    est = ppknn.DPTTClassifier(variant="GS", delta=1e-6, budget_delta=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None,
                                  expected_failed_checks=est.expected_failed_checks)
    assert not [r["check_name"] for r in results if r["status"] == "failed"]
