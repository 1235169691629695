"""``DPTTClassifier``: DP kd-tree traversal (Lepert) as a nearest-neighbour classifier.

``fit`` builds nothing yet: it keeps the server's points and labels; ``predict``
starts the DP-TT server (the modified kd-tree over the training rows) and the
client (the query rows, one user per query), runs the level-synchronous
traversal in which the client answers each decision by the exponential
mechanism, and labels each query with the label of the nearest released point
(or the majority of its released points). ``kneighbors`` is not offered: the
released points are what the protocol returns (``last_run_.result.detail``).

Privacy unit: the *queries* (each query slot is one user, local (ε, δ)-DP
against the server; with the DIS utility only within ``radius``); the training
points the walk reaches are released in the clear.
A user whose query is in every ``predict`` since ``fit`` has spent the sum of
the calls' ε and δ per query: that sum is ``privacy_`` (``privacy_last_``: the
last call); ``budget`` caps the ε and ``budget_delta`` the δ. A call spends
``delta`` when the bounded-range bound is below plain summation (then it is the
smaller ε), else δ = 0.

The tree descent alone is approximate even without noise (no backtracking);
with a neighbourhood variant ``N<B>`` whose ``B`` is at least the number of
training rows every point is released, so at a very large ε the classifier
answers exactly as scikit-learn's 1-NN.

Examples
--------
>>> import numpy as np
>>> from sklearn.neighbors import KNeighborsClassifier
>>> rng = np.random.default_rng(0)
>>> X = rng.random((200, 2)); y = (X[:, 0] + X[:, 1] > 1).astype(int)
>>> clf = DPTTClassifier(variant="GS-N4", final_epsilon=10.0, bounds=(0.0, 1.0), random_state=0)
>>> round(clf.fit(X[:150], y[:150]).score(X[150:], y[150:]), 2), round(clf.privacy_.epsilon, 6)
(0.82, 10.0)
>>> exact = DPTTClassifier(variant="N150", epsilon=1e12, bounds=(0.0, 1.0), delta=0.0)
>>> knn = KNeighborsClassifier(1).fit(X[:150], y[:150])
>>> bool(np.all(exact.fit(X[:150], y[:150]).predict(X[150:]) == knn.predict(X[150:])))
True
"""

from __future__ import annotations

from typing import Any

from ppknn.core.errors import ConfigError
from ppknn.protocols.dptt.variants import Variant
from ppknn.simulations.estimators import params as P
from ppknn.simulations.estimators.base import BATCH_DEPENDENT, ProtocolClassifier
from ppknn.simulations.estimators.simulate import Planned

DEFAULT_FINAL_EPSILON = 10.0
"""ε per query when neither ``epsilon`` nor ``final_epsilon`` is given."""


class DPTTClassifier(ProtocolClassifier):
    """Private nearest-neighbour classification by DP kd-tree traversal.

    Parameters
    ----------
    variant:
        ``basic``, ``P<s>``, ``E<s>``, ``GS``, ``N<B>``, ``GS-N<B>`` (thesis §5.4).
    utility:
        ``"cmp"`` (comparison at the discriminator, sensitivity 1) or ``"dis"``
        (distance; needs ``radius``).
    final_epsilon:
        ε per query (bounded-range composition over the worst-case tree height);
        give this or ``epsilon`` (neither: ``final_epsilon = 10``, the thesis's).
    epsilon:
        ε per decision.
    delta:
        δ of the bounded-range bound, in [0, 1) (0: plain summation).
    radius:
        DIS sensitivity bound (``utility="dis"``), a finite number > 0.
    predict_rule:
        ``"nearest"`` (label of the nearest released point) or ``"majority"``.
    budget:
        The most ε per query slot all ``predict`` calls since ``fit`` may spend
        together (``None``: no cap); a call that would exceed it raises
        ``BudgetRefused`` (a ``ConfigError``) before anything runs.
    budget_delta:
        The most δ per query slot all ``predict`` calls since ``fit`` may spend
        together (``None``: no cap; else a finite number >= 0), refused as
        ``budget``. A call spends ``delta`` (``privacy_last_.delta``) when the
        bounded-range bound gives its ε, else 0; ``budget_delta=0`` admits only
        calls whose ε is the plain sum (pure ε-DP).
    accountant:
        How the calls since ``fit`` compose, as a scenario's ledger
        (:mod:`~ppknn.core.dp.accountant`): ``"auto"`` (default: ``"pld"`` when
        ``budget_delta > 0``, else ``"basic"``), ``"basic"`` (ε and δ add up; valid
        whatever the caller chooses after seeing earlier answers), ``"pld"`` (the
        calls' privacy-loss distributions composed -- each call as randomised
        response at its (ε, δ) -- read at ``budget_delta``) or ``"advanced"``; the
        last two need ``budget_delta > 0``, assume the calls' costs are set in advance,
        and are kept only where they beat the sum. ``privacy_`` is the composed (ε, δ).
    bounds, runtime, channels:
        As :class:`~ppknn.estimators.PPKNNClassifier`.
    random_state:
        Root seed of each simulated run (the client's exponential mechanisms):
        ``None`` (default) draws it from OS entropy every ``predict``; an int
        repeats every run -- a simulation, not a release: anyone who knows the seed
        regenerates the client's random choices; a numpy ``RandomState`` /
        ``Generator`` draws each run's seed from it.
    utility_folds:
        As :class:`~ppknn.estimators.DPRadiusNeighborsClassifier`.

    Attributes
    ----------
    classes_, n_features_in_, bounds_, X_fit_, y_fit_:
        As :class:`~ppknn.estimators.PPKNNClassifier`.
    privacy_:
        What every ``predict`` since ``fit`` spent together, per query slot
        (:class:`~ppknn.core.protocol.PrivacySpent`; module docstring); ``fit``
        resets it.
    privacy_last_:
        The last ``predict``'s ε (bounded-range) and δ per query, and the client's.
    privacy_unit_:
        What one ε protects: each query row against the server (local DP per query
        and ``predict``); the training points reached are released in the clear.
    transcript_, communication_, last_run_:
        The last run's messages, message counts and the run itself
        (``last_run_.result.detail``: the released points).
    leakage_:
        The last run's leakage report, if the protocol registers one.
    expected_accuracy_, majority_accuracy_:
        As :class:`~ppknn.estimators.DPRadiusNeighborsClassifier`.
    """

    protocol_name = "dptt"
    charges_queries = True
    """A ``predict`` charges the query rows it answers (a hyper-parameter search's hook)."""
    privacy_unit = ("per query, protecting the querier from the server (local ε per row "
                    "and predict); training points reached are released")
    parameter_of = {**ProtocolClassifier.parameter_of, "protocol.predict": "predict_rule"}
    expected_failed_checks = {
        **ProtocolClassifier.expected_failed_checks,
        "check_methods_subset_invariance": BATCH_DEPENDENT,
        "check_methods_sample_order_invariance": BATCH_DEPENDENT,
    }

    def __init__(self, *, variant: str = "basic", utility: str = "cmp",
                 final_epsilon: float | None = None, epsilon: float | None = None,
                 delta: float = 1e-7, radius: float | None = None,
                 predict_rule: str = "nearest", budget: float | None = None,
                 budget_delta: float | None = None, accountant: str = "auto",
                 bounds: Any = "data",
                 runtime: str = "inprocess", channels: bool = False,
                 random_state: Any = None, utility_folds: int = 3) -> None:
        self.variant = variant
        self.utility = utility
        self.final_epsilon = final_epsilon
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.predict_rule = predict_rule
        self.budget = budget
        self.budget_delta = budget_delta
        self.accountant = accountant
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds

    def _validated(self) -> dict[str, Any]:
        who = type(self).__name__
        if not isinstance(self.variant, str):
            raise ConfigError(f"{who}: variant = {self.variant!r}; allowed: basic, P<s>, "
                              "E<s>, GS, N<B>, GS-N<B>")
        try:
            variant = Variant.parse(self.variant).label
        except ConfigError as exc:
            raise ConfigError(f"{who}: variant = {self.variant!r}: {exc}") from None
        out = {**super()._validated(), "variant": variant,
               "utility": P.choice(who, "utility", self.utility, ("cmp", "dis")),
               "final_epsilon": P.optional_real(who, "final_epsilon", self.final_epsilon,
                                                allowed="None or a finite number > 0"),
               "epsilon": P.optional_real(who, "epsilon", self.epsilon,
                                          allowed="None or a finite number > 0"),
               "delta": P.real(who, "delta", self.delta, low=0.0, low_open=False, high=1.0,
                               high_open=True),
               "radius": P.optional_real(who, "radius", self.radius,
                                         allowed="None or a finite number > 0"),
               "predict_rule": P.choice(who, "predict_rule", self.predict_rule,
                                        ("nearest", "majority")),
               **(caps := P.budgets(who, self.budget, self.budget_delta)),
               "accountant": P.accountant(who, self.accountant, caps["budget_delta"]),
               "utility_folds": P.integer(who, "utility_folds", self.utility_folds, low=0,
                                          allowed="an int >= 0 (0: no check)")}
        if out["epsilon"] is not None and out["final_epsilon"] is not None:
            raise ConfigError(f"{who}: epsilon = {self.epsilon!r}, final_epsilon = "
                              f"{self.final_epsilon!r}: give exactly one (ε per decision or "
                              "per query)")
        if out["utility"] == "dis" and out["radius"] is None:
            raise ConfigError(f"{who}: radius = None: utility = 'dis' needs the DIS "
                              "sensitivity bound; allowed: a finite number > 0")
        return out

    def _check_data(self, p: dict[str, Any], X: Any, y: Any) -> None:
        if len(y) < 2:
            raise ValueError(f"{type(self).__name__}: the server's kd-tree needs n_samples >= "
                             f"2 (one private decision at least); got n_samples = {len(y)}")

    def _guarantee(self) -> str:
        return ("local (ε, δ)-DP per query slot (bounded-range composition over the "
                "worst-case tree height; DIS: only within radius); the training points "
                "reached are released in the clear")

    def _call_cost(self, planned: Planned) -> tuple[float | None, float]:
        run = planned.plan.config
        cost = run.setup.account(run.height).cost
        return cost.epsilon, cost.delta

    def _protocol(self, p: dict[str, Any], n_train: int) -> dict[str, Any]:
        table: dict[str, Any] = {"name": "dptt", "variant": p["variant"],
                                 "utility": p["utility"], "delta": p["delta"],
                                 "predict": p["predict_rule"]}
        if p["epsilon"] is not None:
            table["epsilon"] = p["epsilon"]
        else:
            table["final_epsilon"] = (DEFAULT_FINAL_EPSILON if p["final_epsilon"] is None
                                      else p["final_epsilon"])
        if p["radius"] is not None:
            table["radius"] = p["radius"]
        return table


__all__ = ["DEFAULT_FINAL_EPSILON", "DPTTClassifier"]
