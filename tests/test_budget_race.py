"""The estimators' ``budget`` holds under concurrent calls: reserve, run, settle.

Eight threads released together by a barrier call one fitted estimator whose
``budget`` (ε = 6) pays for one call at ε = 4: exactly one call releases and
seven are refused (:class:`BudgetRefused`), in each of five trials. A check
that is not one step with the spending (check, run, spend) lets every thread
through: the test names the broken variant it catches.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from sklearn.datasets import load_iris

import ppknn
from ppknn.core.dp.ledger import PrivacyLedger
from ppknn.core.errors import BudgetExhausted
from ppknn.simulations.estimators.spending import BudgetRefused, Spending

B = (0.0, 8.0)
THREADS, TRIALS = 8, 5

ESTIMATORS = {
    "DPKNeighborsClassifier": lambda: ppknn.DPKNeighborsClassifier(
        5, epsilon=4.0, budget=6.0, bounds=B, utility_folds=0),
    "DPRadiusNeighborsClassifier": lambda: ppknn.DPRadiusNeighborsClassifier(
        1.0, epsilon=4.0, budget=6.0, bounds=B, utility_folds=0),
    "DPTTClassifier": lambda: ppknn.DPTTClassifier(
        variant="basic", final_epsilon=4.0, delta=0.0, budget=6.0, bounds=B, utility_folds=0),
    "PCALaplaceSanitizer": lambda: ppknn.PCALaplaceSanitizer(2, b=0.5, budget=6.0, bounds=B),
}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2][:6]


def _race(call, n: int = THREADS) -> tuple[int, list[BaseException]]:
    """Run ``call`` on ``n`` threads released together; (successes, exceptions)."""
    barrier = threading.Barrier(n)
    done, errors, lock = [0], [], threading.Lock()

    def worker() -> None:
        barrier.wait()
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - collected and checked below
            with lock:
                errors.append(exc)
        else:
            with lock:
                done[0] += 1

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0], errors


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_eight_threads_against_budget_6_at_epsilon_4_release_exactly_once(name, iris):
    X, y, Q = iris
    for _ in range(TRIALS):
        est = ESTIMATORS[name]().fit(X, y)
        release = est.transform if hasattr(est, "transform") else est.predict
        released, errors = _race(lambda release=release: release(Q))
        assert released == 1, f"{name}: {released} releases against budget 6 at ε 4"
        assert len(errors) == THREADS - 1
        assert all(isinstance(e, BudgetRefused) for e in errors), errors
        assert est.privacy_.epsilon == 4.0
        assert est._spending.calls == 1


def test_dp_naive_bayes_fits_sharing_one_ledger_release_exactly_once(iris):
    X, y, _ = iris
    for _ in range(TRIALS):
        ledger = PrivacyLedger(owner="owner", epsilon=6.0)
        released, errors = _race(lambda ledger=ledger: ppknn.DPNaiveBayes(
            epsilon=4.0, bounds=(np.zeros(4), np.full(4, 8.0)), classes=[0, 1, 2],
            utility_draws=0).fit(X, y, ledger=ledger))
        assert released == 1 and len(errors) == THREADS - 1
        assert all(isinstance(e, BudgetExhausted) for e in errors), errors
        assert ledger.spent().epsilon == 4.0


def test_a_failed_release_keeps_its_charge_and_a_reservation_never_outlives_its_call():
    s = Spending("Est", guarantee="ε-DP", budget=6.0)
    r = s.reserve(4.0, 0.0)
    with pytest.raises(BudgetRefused, match="on top of the 4 spent or reserved"):
        s.reserve(4.0, 0.0)  # the reservation counts before the call settles
    s.release(r)
    assert s.total().epsilon == 0.0 and s.calls == 0
    r = s.reserve(4.0, 0.0)
    s.settle(r, 3.5, 0.0, {"owner": (3.5, 0.0)})  # settled at what the run spent
    assert s.total().epsilon == 3.5 and s.calls == 1
    with pytest.raises(BudgetRefused):
        s.reserve(4.0, 0.0)
    s.reserve(2.5, 0.0)  # 3.5 + 2.5 = 6 exactly


def test_the_unlocked_check_then_spend_is_what_the_race_catches(iris, monkeypatch):
    """The broken variant (check, run, spend as three steps) releases more than once."""
    X, y, Q = iris

    def check_only(self, epsilon, delta=0.0):
        self.check(epsilon, delta)
        return None

    def spend_after(self, reservation, epsilon, delta=0.0, per_party=None):
        self.spend(epsilon, delta, per_party)

    monkeypatch.setattr(Spending, "reserve", check_only)
    monkeypatch.setattr(Spending, "settle", spend_after)
    monkeypatch.setattr(Spending, "release", lambda self, r: None)
    est = ESTIMATORS["DPKNeighborsClassifier"]().fit(X, y)
    released, _ = _race(lambda: est.predict(Q))
    assert released > 1
