"""DP r-N and k-NN classifiers over a central DP owner (Gursoy, Inan, Nergiz & Saygin).

``fit`` keeps the training rows (the DP owner's data); ``predict`` starts the
DP owner with its privacy ledger and ``n_analysts`` analysts, who send the
query rows as request batches; each answered batch is charged ``epsilon`` on
the owner's ledger first (add/remove one training record). Every ``predict``
is a new release about the same training rows, so the fitted estimator adds
the calls up: ``privacy_`` is the ε spent since ``fit`` (three calls with two
analysts at ``epsilon=1`` spend 6), ``privacy_last_`` the last call's, and a
call that would take ``privacy_.epsilon`` above ``budget`` is refused before
it runs. The owner's answers are pure ε-DP: every call spends δ = 0, so any
``budget_delta`` (a δ cap, for an interface shared with the (ε, δ)
estimators) is met.

As ``epsilon`` grows the noise vanishes: at ``epsilon=1e12`` the r-N
classifier answers as scikit-learn's ``RadiusNeighborsClassifier`` wherever
one label has the most points in the region (a tie, or an empty region, is
decided by the vanishing noise; scikit-learn takes the lowest label, or its
outlier label) and the k-NN ``"baseline"`` algorithm as
``KNeighborsClassifier``.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_iris
>>> from sklearn.neighbors import KNeighborsClassifier
>>> X, y = load_iris(return_X_y=True)
>>> clf = DPKNeighborsClassifier(5, epsilon=1e12, algorithm="baseline", bounds=(0.0, 8.0))
>>> pred = clf.fit(X[::2], y[::2]).predict(X[1::2])
>>> bool(np.all(pred == KNeighborsClassifier(5).fit(X[::2], y[::2]).predict(X[1::2])))
True
>>> noisy = DPKNeighborsClassifier(5, epsilon=1.0, bounds=(0.0, 8.0), random_state=1)
>>> round(noisy.fit(X[::2], y[::2]).score(X[1::2], y[1::2]), 2), noisy.privacy_.epsilon
(0.4, 1.0)
>>> _ = noisy.predict(X[1::2]); noisy.privacy_.epsilon, noisy.privacy_last_.epsilon
(2.0, 1.0)
"""

from __future__ import annotations

import re
from typing import Any

from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_knn.cost import (
    DEFAULT_REQUEST_MEMORY_LIMIT_BYTES,
    DEFAULT_REQUEST_TIME_LIMIT_S,
    check_request_limits,
)
from ppknn.protocols.dp_knn.knn import KNN_ALGORITHMS
from ppknn.protocols.dp_knn.rn import RN_ALGORITHMS
from ppknn.simulations.estimators import params as P
from ppknn.simulations.estimators.base import BATCH_DEPENDENT, ProtocolClassifier
from ppknn.simulations.estimators.simulate import Planned


def _request_limits(who: str, seconds: Any, size: Any) -> dict[str, Any]:
    """The owner's request limits as protocol keys (``ConfigError`` naming a bad value)."""
    try:
        seconds, size = check_request_limits(seconds, size)
    except ConfigError as exc:
        raise ConfigError(f"{who}: {exc}") from None
    return {"request_time_limit_s": "none" if seconds is None else seconds,
            "request_memory_limit_bytes": "none" if size is None else size}


class _DPOwnerClassifier(ProtocolClassifier):
    protocol_name = "dp-knn"
    privacy_unit = ("per predict batch against the training data: add/remove one training "
                    "row, ε per analyst's request batch")
    parameter_of = {**ProtocolClassifier.parameter_of, "protocol.k": "n_neighbors"}
    expected_failed_checks = {
        **ProtocolClassifier.expected_failed_checks,
        "check_methods_subset_invariance": BATCH_DEPENDENT,
        "check_methods_sample_order_invariance": BATCH_DEPENDENT,
    }

    def _validated(self) -> dict[str, Any]:
        who = type(self).__name__
        epsilon = P.real(who, "epsilon", self.epsilon)
        return {**super()._validated(), "epsilon": epsilon,
                "n_analysts": P.integer(who, "n_analysts", self.n_analysts, low=1),
                "utility_folds": P.integer(who, "utility_folds", self.utility_folds, low=0,
                                           allowed="an int >= 0 (0: no check)"),
                **(caps := P.budgets(who, self.budget, self.budget_delta)),
                "accountant": P.accountant(who, self.accountant, caps["budget_delta"]),
                "request_limits": _request_limits(who, self.request_time_limit_s,
                                                  self.request_memory_limit_bytes)}

    def _parties(self, p: dict[str, Any]) -> tuple[int, int]:
        return 1, p["n_analysts"]

    def _refusal(self, exc: ConfigError) -> ConfigError:
        """As the base's; a request too big is split by the estimator's own means."""
        text = re.sub(r" \(protocol\.batches = .*?data\.max_queries\)$",
                      "; predict fewer rows per call or raise n_analysts", str(exc))
        return super()._refusal(ConfigError(text))

    def _guarantee(self) -> str:
        return "ε-DP, add/remove one training record (central owner's ledger)"

    def _call_cost(self, planned: Planned) -> tuple[float | None, float]:
        from ppknn.protocols.dp_knn.plugin import total_cost

        return float(total_cost(planned.config, planned.scenario.parties.analysts)), 0.0


class DPRadiusNeighborsClassifier(_DPOwnerClassifier):
    """ε-DP r-N classification by a central DP owner.

    Parameters
    ----------
    radius:
        The public radius of every query (a finite number > 0).
    epsilon:
        ε of each request batch (one per analyst), charged on the owner's ledger; a
        ``predict`` of ``Q`` rows costs ``min(n_analysts, Q) * epsilon``.
    budget:
        The most ε all ``predict`` calls since ``fit`` may spend together (``None``:
        no cap). A call that would exceed it raises ``BudgetRefused`` (a
        ``ConfigError``) before anything runs.
    budget_delta:
        The most δ all ``predict`` calls since ``fit`` may spend together (``None``:
        no cap; else a finite number >= 0), refused as ``budget``. The owner's answers
        are pure ε-DP (δ = 0 per call), so every value is met.
    accountant:
        How the calls since ``fit`` compose, as a scenario's ledger
        (:mod:`~ppknn.core.dp.accountant`): ``"auto"`` (default: ``"pld"`` when
        ``budget_delta > 0``, else ``"basic"``), ``"basic"`` (ε and δ add up; valid
        whatever the caller chooses after seeing earlier answers), ``"pld"`` (the
        calls' privacy-loss distributions composed -- each call as randomised
        response at its (ε, δ) -- read at ``budget_delta``) or ``"advanced"``; the
        last two need ``budget_delta > 0``, assume the calls' costs are set in advance,
        and are kept only where they beat the sum. ``privacy_`` is the composed (ε, δ).
    algorithm:
        ``"proposed"`` (region overlap graph, noise scaled by the maximum clique
        size of each component), ``"baseline-laplace"`` or ``"baseline-exponential"``
        (ε/|X| per query).
    n_analysts:
        Analysts sharing the query rows (contiguous blocks).
    bounds:
        Public domain bounds ``(lower, upper)`` or ``"data"`` (warns).
    runtime, channels:
        As :class:`~ppknn.estimators.PPKNNClassifier`.
    random_state:
        Root seed of each simulated run (the owner's noise): ``None`` (default) draws
        it from OS entropy every ``predict``; an int repeats every run -- a
        simulation, not a release: anyone who knows the seed regenerates the noise
        and can remove it; a numpy ``RandomState`` / ``Generator`` draws each run's
        seed from it.
    utility_folds:
        At ``fit``, simulate the protocol this many times on folds of the training rows
        and warn (``BelowMajorityWarning``) unless the mean held-out accuracy
        ``expected_accuracy_`` is above ``majority_accuracy_`` (always predicting the
        majority class); 0 turns the check off.
    request_time_limit_s, request_memory_limit_bytes:
        The owner's limits on one request's worst-case estimated time (seconds) and
        peak memory (bytes) (:mod:`~ppknn.protocols.dp_knn.cost`; defaults 600 s and
        8 GiB; ``None``: no limit). A ``predict`` whose request would be over either is
        refused before it runs (``ConfigError``, naming the largest batch that fits):
        predict fewer rows per call, raise ``n_analysts`` (each analyst's request is
        charged ``epsilon``) or raise the limit.

    Attributes
    ----------
    classes_, n_features_in_, bounds_, X_fit_, y_fit_:
        As :class:`~ppknn.estimators.PPKNNClassifier`.
    privacy_:
        What every ``predict`` since ``fit`` spent together
        (:class:`~ppknn.core.protocol.PrivacySpent`): ``epsilon`` and ``delta`` on
        the training rows (sequential composition over the calls), ``per_party``
        the owner's total and each analyst's. ``fit`` resets it to zero.
    privacy_last_:
        What the last ``predict`` spent (``None`` before the first).
    privacy_unit_:
        What one ε protects: the training rows (add/remove one row), charged per
        ``predict`` batch (per analyst's request batch in it).
    transcript_, communication_, last_run_:
        The last run's messages, message counts and the run itself
        (``last_run_.result.detail.ledger``: the owner's ledger of that run).
    leakage_:
        ``None`` (the protocol registers no per-run leakage report).
    expected_accuracy_, majority_accuracy_:
        The ``fit``-time utility check (owner-side, not released; ``None``: not run)
        and the accuracy of always predicting the majority class.
    """

    def __init__(self, radius: float = 1.0, *, epsilon: float = 1.0, budget: float | None = None,
                 budget_delta: float | None = None, accountant: str = "auto",
                 algorithm: str = "proposed",
                 n_analysts: int = 1, bounds: Any = "data", runtime: str = "inprocess",
                 channels: bool = False, random_state: Any = None,
                 utility_folds: int = 3,
                 request_time_limit_s: float | None = DEFAULT_REQUEST_TIME_LIMIT_S,
                 request_memory_limit_bytes: int | None = DEFAULT_REQUEST_MEMORY_LIMIT_BYTES
                 ) -> None:
        self.radius = radius
        self.epsilon = epsilon
        self.budget = budget
        self.budget_delta = budget_delta
        self.accountant = accountant
        self.algorithm = algorithm
        self.n_analysts = n_analysts
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds
        self.request_time_limit_s = request_time_limit_s
        self.request_memory_limit_bytes = request_memory_limit_bytes

    def _validated(self) -> dict[str, Any]:
        who = type(self).__name__
        return {**super()._validated(), "radius": P.real(who, "radius", self.radius),
                "algorithm": P.choice(who, "algorithm", self.algorithm, RN_ALGORITHMS)}

    def _protocol(self, p: dict[str, Any], n_train: int) -> dict[str, Any]:
        return {"name": "dp-knn", "task": "rn", "algorithm": p["algorithm"],
                "epsilon": p["epsilon"], "radius": p["radius"], **p["request_limits"]}


class DPKNeighborsClassifier(_DPOwnerClassifier):
    """ε-DP k-NN classification by a central DP owner.

    Parameters
    ----------
    n_neighbors:
        k (an int >= 1, at most the training rows).
    epsilon:
        ε of each request batch (one per analyst), charged on the owner's ledger; a
        ``predict`` of ``Q`` rows costs ``min(n_analysts, Q) * epsilon``.
    budget, budget_delta, accountant:
        As :class:`DPRadiusNeighborsClassifier`.
    algorithm:
        ``"interactive"`` (k-NN to r-N conversion by the exponential mechanism, then
        the proposed r-N classifier), ``"noninteractive"`` (a DP grid) or
        ``"baseline"`` (exponential mechanism over the k nearest rows' labels,
        ε/|X| per query).
    weight:
        Share of ε spent on the conversion (converted algorithms), in (0, 1).
    n_analysts, bounds, runtime, channels, utility_folds, random_state:
        As :class:`DPRadiusNeighborsClassifier`.
    request_time_limit_s, request_memory_limit_bytes:
        As :class:`DPRadiusNeighborsClassifier`.

    Attributes
    ----------
    classes_, n_features_in_, bounds_, X_fit_, y_fit_:
        As :class:`~ppknn.estimators.PPKNNClassifier`.
    privacy_, privacy_last_:
        What every ``predict`` since ``fit`` spent together (``fit`` resets it), and
        the last ``predict`` alone (as :class:`DPRadiusNeighborsClassifier`).
    privacy_unit_:
        As :class:`DPRadiusNeighborsClassifier`.
    transcript_, communication_, last_run_, leakage_:
        The last run's messages, message counts, the run itself, and ``None`` (no
        leakage report is registered).
    expected_accuracy_, majority_accuracy_:
        As :class:`DPRadiusNeighborsClassifier`.
    """

    def __init__(self, n_neighbors: int = 5, *, epsilon: float = 1.0,
                 budget: float | None = None, budget_delta: float | None = None,
                 accountant: str = "auto", algorithm: str = "interactive", weight: float = 0.5,
                 n_analysts: int = 1,
                 bounds: Any = "data", runtime: str = "inprocess", channels: bool = False,
                 random_state: Any = None, utility_folds: int = 3,
                 request_time_limit_s: float | None = DEFAULT_REQUEST_TIME_LIMIT_S,
                 request_memory_limit_bytes: int | None = DEFAULT_REQUEST_MEMORY_LIMIT_BYTES
                 ) -> None:
        self.n_neighbors = n_neighbors
        self.epsilon = epsilon
        self.budget = budget
        self.budget_delta = budget_delta
        self.accountant = accountant
        self.algorithm = algorithm
        self.weight = weight
        self.n_analysts = n_analysts
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds
        self.request_time_limit_s = request_time_limit_s
        self.request_memory_limit_bytes = request_memory_limit_bytes

    def _validated(self) -> dict[str, Any]:
        who = type(self).__name__
        return {**super()._validated(),
                "n_neighbors": P.integer(who, "n_neighbors", self.n_neighbors, low=1),
                "algorithm": P.choice(who, "algorithm", self.algorithm, KNN_ALGORITHMS),
                "weight": P.real(who, "weight", self.weight, high=1.0, high_open=True)}

    def _check_data(self, p: dict[str, Any], X: Any, y: Any) -> None:
        P.neighbours_fit(type(self).__name__, p["n_neighbors"], len(y))

    def _protocol(self, p: dict[str, Any], n_train: int) -> dict[str, Any]:
        return {"name": "dp-knn", "task": "knn", "algorithm": p["algorithm"],
                "epsilon": p["epsilon"], "k": p["n_neighbors"], "weight": p["weight"],
                **p["request_limits"]}


__all__ = ["DPKNeighborsClassifier", "DPRadiusNeighborsClassifier"]
