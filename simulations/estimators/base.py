"""What every protocol classifier shares: parameter and input checks, labels, seeds, runs.

:class:`ProtocolClassifier` validates every parameter at ``fit`` (numbers as
numbers, numpy scalars included; a refusal is a ``ConfigError`` naming the
estimator's parameter), keeps the training rows (validated as scikit-learn
does: finite, 2-D, numeric, consistent lengths) and sets up one run of its
registered protocol to check the settings against the data; nothing runs and
nothing is released at ``fit`` (the utility check's runs are owner-side
diagnostics). Each ``predict`` runs the protocol on the training rows through
:func:`~ppknn.simulations.estimators.simulate.run_planned`: reserve, run, settle.
Its cost is checked against ``budget`` (ε) and ``budget_delta`` (δ) and reserved
before the run, as one step under the account's lock (concurrent calls never
together exceed the caps), and settled at what the run spent after it, so ``privacy_`` is what
every call since ``fit`` spent together and ``privacy_last_`` what the last one
spent (``score`` predicts, so it spends too). The account belongs to the
fitted estimator: a refit starts it at zero, and clones (``cross_val_score``,
``GridSearchCV``) keep one each -- a data owner sums them over everything
released about the same rows. The last
run's transcript (a pyarrow table), leakage report, message counts and the run
itself are ``transcript_``, ``leakage_``, ``communication_`` and ``last_run_``.

Randomness: ``random_state=None`` (the default) draws each run's root seed from
OS entropy; an int repeats every run bit for bit -- a simulation, not a
release: anyone who knows the seed regenerates the noise; a numpy
``RandomState`` / ``Generator`` draws each run's seed from it.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ppknn.core.conventions import BelowMajorityWarning, EstimatorConventions, once_per_estimator
from ppknn.core.data import DomainBounds
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.simulations.estimators import params as P
from ppknn.simulations.estimators.simulate import (
    RUNTIMES,
    Planned,
    Simulated,
    plan_run,
    resolve_bounds,
    run_planned,
)
from ppknn.simulations.estimators.spending import Spending

BATCH_DEPENDENT = (
    "the protocol answers a query batch as one run, its randomness (noise, random fills) "
    "drawn per run and per position in the batch, so a query's prediction depends on "
    "the batch it came in; a seeded estimator repeats whole runs, not single rows")
"""Why a randomised protocol fails scikit-learn's subset and order invariance checks."""


def run_seed(random_state: Any, who: str = "estimator") -> int:
    """The root seed of one simulated run (see :func:`params.seed_of`)."""
    return P.seed_of(who, random_state)


class ProtocolClassifier(EstimatorConventions, ClassifierMixin, BaseEstimator):
    """Base of the protocol classifiers (module docstring); not used directly."""

    protocol_name: str = ""
    """The registered protocol the estimator runs."""

    privacy_unit: str = ""
    """What one ε of this estimator protects, and per what (``privacy_unit_`` when fitted)."""

    parameter_of: dict[str, str] = {"parties.n": "n_parties", "parties.analysts": "n_analysts"}
    """Scenario key -> the estimator parameter it comes from (for messages)."""

    expected_failed_checks: dict[str, str] = {
        "check_dict_unchanged": "predict records the run it simulates and adds its cost to "
                                "the privacy account: transcript_, leakage_, privacy_, "
                                "privacy_last_, communication_ and last_run_ are fitted "
                                "attributes by design",
    }
    """scikit-learn checks this estimator fails on purpose, with the reason
    (pass to ``check_estimator(..., expected_failed_checks=...)``)."""

    # -- hooks -----------------------------------------------------------------------------
    def _validated(self) -> dict[str, Any]:
        """Every parameter checked and in canonical form (``ConfigError`` naming it)."""
        who = type(self).__name__
        return {"runtime": P.choice(who, "runtime", self.runtime, RUNTIMES),
                "channels": P.flag(who, "channels", self.channels),
                "random_state": P.random_state(who, self.random_state)}

    def _protocol(self, p: dict[str, Any], n_train: int) -> dict[str, Any]:  # pragma: no cover
        """The ``[protocol]`` table of a run from the checked parameters ``p``."""
        raise NotImplementedError

    def _parties(self, p: dict[str, Any]) -> tuple[int, int]:
        """``(data owners, analysts)`` of a run."""
        return 1, 1

    def _randomised(self) -> bool:
        """Whether predictions depend on the run's randomness (noise, randomised rounds)."""
        return True

    def _guarantee(self) -> str:
        """What one call's ε means (for ``privacy_``)."""
        return "none"

    def _call_cost(self, planned: Planned) -> tuple[float | None, float]:
        """``(ε, δ)`` a run of ``planned`` will spend, known before it runs (None: no DP)."""
        return None, 0.0

    def _check_data(self, p: dict[str, Any], X: np.ndarray, y: np.ndarray) -> None:
        """Extra checks of the parameters ``p`` against the training rows."""

    def _search_call_cost(self, n_fit: int, n_query: int, *, first: bool = True,
                          n_features: int = 1) -> tuple[float | None, float]:
        """``(ε, δ)`` of one ``predict`` of ``n_query`` rows after a fit on ``n_fit`` rows.

        The hyper-parameter search's hook (:func:`simulations.estimators.search.search_cost`):
        the cost depends on the row counts, not the values, so placeholder rows are planned.
        """
        p = self._validated()
        y = np.arange(n_fit) % 2
        self._check_data(p, np.zeros((n_fit, 1)), y)
        planned = self._plan(p, np.zeros((n_fit, 1)), y, np.zeros((n_query, 1)), n_classes=2,
                             bounds=DomainBounds(np.zeros(1), np.ones(1)), seed=0)
        return self._call_cost(planned)

    # -- scikit-learn ----------------------------------------------------------------------
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        randomised = self._randomised()
        # an int random_state repeats every run: the estimator is then deterministic (its
        # predictions still depend on the batch: expected_failed_checks); None or a
        # generator draws a new seed per run
        tags.non_deterministic = randomised and not P.seeded(self.random_state)
        tags.classifier_tags.poor_score = randomised
        return tags

    def fit(self, X: Any, y: Any) -> ProtocolClassifier:
        """Check every parameter, keep the training rows and the public bounds; run nothing.

        The settings are checked against the data by setting up one run (a
        ``ConfigError`` names the estimator's parameter). Bounds derived from the
        data (``bounds="data"``, the default) warn with a
        :class:`~ppknn.core.errors.PrivacyLeakWarning` once per estimator (its clones
        included: :mod:`~ppknn.core.conventions`), as does the utility check's
        ``BelowMajorityWarning``. ``privacy_unit_`` says what one ε protects. A ``budget`` (ε) or
        ``budget_delta`` (δ) below the cost of the cheapest call (one query row) is
        refused: every call would be. The privacy account starts at zero.
        """
        params = self._validated()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        codes = codes.astype(np.int64)
        with once_per_estimator(self, (PrivacyLeakWarning,)):  # once per estimator and clones
            bounds = resolve_bounds(self.bounds, X, who=type(self).__name__)
        self._check_data(params, X, codes)
        # set up (not run) the cheapest call, one query row: every parameter meets the data
        probe = self._plan(params, X, codes, X[:1], n_classes=len(classes), bounds=bounds,
                           seed=0)
        spending = Spending(type(self).__name__, guarantee=self._guarantee(),
                            budget=params.get("budget"), budget_delta=params.get("budget_delta"),
                            accountant=params.get("accountant", "basic"))
        spending.check_first(*self._call_cost(probe),
                             what="the cheapest predict call (one query row)")
        self._params = params
        self.classes_, self.bounds_ = classes, bounds
        self.X_fit_, self.y_fit_ = X, codes
        self._spending = spending
        self.privacy_ = self._spending.total()
        self.privacy_last_ = None
        self.transcript_ = self.leakage_ = self.communication_ = self.last_run_ = None
        self.privacy_unit_ = self.privacy_unit
        with once_per_estimator(self, (BelowMajorityWarning,)):
            self._check_utility()
        return self

    def _refusal(self, exc: ConfigError) -> ConfigError:
        """A scenario's refusal in the estimator's words: its parameter names, its name."""
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        if lines and lines[0].startswith("invalid scenario"):
            lines = lines[1:] or lines

        def rename(m: re.Match[str]) -> str:
            key = m.group(0)
            return self.parameter_of.get(key, self.parameter_of.get(m.group(2), m.group(2)))

        text = "; ".join(re.sub(r"\b(protocol|parties)\.(\w+)", rename, line)
                         .replace("Value error, ", "") for line in lines)
        return ConfigError(f"{type(self).__name__}: {text}")

    def _plan(self, p: dict[str, Any], X: np.ndarray, y: np.ndarray, queries: np.ndarray, *,
              n_classes: int, bounds: Any, seed: int, runtime: str = "inprocess",
              channels: bool = False) -> Planned:
        """Set up one run on ``(X, y)`` answering ``queries`` (nothing runs)."""
        owners, analysts = self._parties(p)
        try:
            return plan_run(self._protocol(p, len(y)), X=X, y=y, n_classes=n_classes,
                            queries=queries, bounds=bounds, n_parties=owners,
                            analysts=min(analysts, max(1, len(queries))), runtime=runtime,
                            channels=channels, seed=seed, name=self.protocol_name)
        except ConfigError as exc:
            raise self._refusal(exc) from None

    def _check_utility(self) -> None:
        """Expected accuracy at these settings against always predicting the majority class.

        The protocol is simulated ``utility_folds`` times, each time on all but one
        fold of the training rows with that fold as the queries (owner-side
        diagnostics: nothing is released or charged to the estimator's account);
        the mean held-out accuracy is ``expected_accuracy_``. Unless it is above
        ``majority_accuracy_`` the fit warns with ``BelowMajorityWarning``.
        ``expected_accuracy_`` stays ``None`` when the check is off, the training
        rows are too few for the folds, or a fold is too small for settings that
        fit all the rows (e.g. ``n_neighbors`` above a fold's training rows).
        """
        y = self.y_fit_
        self.majority_accuracy_ = float(np.bincount(y).max() / len(y))
        self.expected_accuracy_ = None
        p = self._params
        folds = p.get("utility_folds", 0)
        owners, _ = self._parties(p)
        if folds < 2 or len(y) < folds * max(owners, 2):
            return
        fold_of = np.random.default_rng(0).permutation(len(y)) % folds
        plans = []
        for f in range(folds):
            train, test = fold_of != f, fold_of == f
            try:
                plans.append((test, self._plan(p, self.X_fit_[train], y[train],
                                               self.X_fit_[test], n_classes=len(self.classes_),
                                               bounds=self.bounds_,
                                               seed=run_seed(p["random_state"]))))
            except ConfigError:
                # the parameters were checked against all the rows above; what a fold
                # refuses is its size (fewer training rows than n_neighbors, a lower tree)
                return
        accs = [float(np.mean(run_planned(planned).result.predictions == y[test]))
                for test, planned in plans]
        self.expected_accuracy_ = float(np.mean(accs))
        if self.expected_accuracy_ <= self.majority_accuracy_:
            warnings.warn(
                f"{type(self).__name__}: expected accuracy {self.expected_accuracy_:.3f} "
                f"({folds}-fold on the training rows, at these settings) is not above the "
                f"{self.majority_accuracy_:.3f} of always predicting the majority class; "
                "raise epsilon or declare tighter bounds (shown once for this estimator and "
                "its clones; see expected_accuracy_)", BelowMajorityWarning, stacklevel=3)

    def _run(self, X: Any) -> tuple[np.ndarray, Simulated]:
        """Reserve, run, settle: one run of the protocol answering ``X``."""
        check_is_fitted(self, "X_fit_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        params = self._params
        planned = self._plan(params, self.X_fit_, self.y_fit_, X, n_classes=len(self.classes_),
                             bounds=self.bounds_, runtime=params["runtime"],
                             channels=params["channels"],
                             seed=run_seed(params["random_state"], type(self).__name__))
        epsilon, delta = self._call_cost(planned)
        # refused before any party starts; the check and the booking are one step, so
        # concurrent calls never together exceed the budget
        reservation = self._spending.reserve(epsilon, delta)
        try:
            run = run_planned(planned)
        except BaseException:
            # parties may have read the data before failing: the call is paid for
            self._spending.settle(reservation, epsilon, delta)
            self.privacy_ = self._spending.total()
            raise
        spent = run.result.privacy
        self._spending.settle(reservation, spent.epsilon, spent.delta or 0.0, spent.per_party)
        self.privacy_, self.privacy_last_ = self._spending.total(), spent
        self.transcript_ = run.transcript.table()
        self.leakage_ = run.leakage
        self.communication_ = run.communication
        self.last_run_ = run
        return np.asarray(run.result.predictions), run

    def predict(self, X: Any) -> np.ndarray:
        """Labels of ``X`` from one simulated run of the protocol (one release).

        A query the protocol does not answer (e.g. its request was refused by
        the ledger) gets the first class.

        Raises
        ------
        BudgetRefused
            The run would take ``privacy_.epsilon`` above ``budget`` or
            ``privacy_.delta`` above ``budget_delta`` (nothing runs).
        """
        pred, _ = self._run(X)
        return self.classes_[np.where(pred >= 0, pred, 0)]


__all__ = ["BATCH_DEPENDENT", "ProtocolClassifier", "run_seed"]
