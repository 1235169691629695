"""What every protocol classifier shares: scikit-learn input checks, labels, seeds, runs.

:class:`ProtocolClassifier` keeps the training rows at ``fit`` (validated as
scikit-learn does: finite, 2-D, numeric, consistent lengths), and at
``predict`` runs its registered protocol on them through
:func:`~ppknn.simulations.estimators.simulate.simulate`. The last run's
transcript (a pyarrow table), its leakage report and its privacy
accounting are kept as the fitted attributes ``transcript_``, ``leakage_``
and ``privacy_``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ppknn.core.errors import ConfigError
from ppknn.simulations.estimators.simulate import RUNTIMES, Simulated, resolve_bounds, simulate


def run_seed(random_state: Any) -> int:
    """The root seed of one simulated run: an int as given, ``None``: fresh OS entropy."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2 ** 63))  # type: ignore[operator]
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ConfigError(f"random_state = {random_state!r}; allowed: an int >= 0 or None")
        return int(random_state)
    raise ConfigError(f"random_state = {random_state!r}; allowed: an int >= 0 or None "
                      "(a simulated run has one root seed)")


class ProtocolClassifier(ClassifierMixin, BaseEstimator):
    """Base of the protocol classifiers (module docstring); not used directly."""

    protocol_name: str = ""
    """The registered protocol the estimator runs."""

    expected_failed_checks: dict[str, str] = {
        "check_dict_unchanged": "predict records the run it simulates: the last run's "
                                "transcript_, leakage_, privacy_ and communication_ are "
                                "fitted attributes by design",
    }
    """scikit-learn checks this estimator fails on purpose, with the reason
    (pass to ``check_estimator(..., expected_failed_checks=...)``)."""

    # -- hooks -----------------------------------------------------------------------------
    def _protocol(self, n_train: int) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _parties(self) -> tuple[int, int]:
        """``(data owners, analysts)`` of a run."""
        return 1, 1

    def _randomised(self) -> bool:
        """Whether predictions depend on the run's randomness (noise, randomised rounds)."""
        return True

    def _check_params(self) -> None:
        """Refuse bad parameters (``ConfigError``, a ``ValueError``)."""
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"runtime = {self.runtime!r}; allowed: {list(RUNTIMES)}")

    # -- scikit-learn ----------------------------------------------------------------------
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # predictions of a randomised protocol depend on the batch (the noise of a query
        # depends on its place in it) and, as for any DP mechanism, on epsilon
        tags.non_deterministic = self._randomised()
        tags.classifier_tags.poor_score = self._randomised()
        return tags

    def fit(self, X: Any, y: Any) -> ProtocolClassifier:
        """Keep the training rows (validated) and the public bounds; nothing runs yet.

        Bounds derived from the data (``bounds="data"``) warn with a
        :class:`~ppknn.core.errors.PrivacyLeakWarning`.
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        self.bounds_ = resolve_bounds(self.bounds, X, who=type(self).__name__)
        self.X_fit_, self.y_fit_ = X, codes.astype(np.int64)
        self._after_fit(X, self.y_fit_)
        self._check_utility()
        return self

    def _utility_folds(self) -> int:
        """Folds of the expected-accuracy check (0: none; DP classifiers override)."""
        return 0

    def _check_utility(self) -> None:
        """Expected accuracy at these settings against always predicting the majority class.

        The protocol is simulated ``utility_folds`` times, each time on all but one
        fold of the training rows with that fold as the queries (owner-side
        diagnostics: nothing is released or charged to the estimator's runs); the
        mean held-out accuracy is ``expected_accuracy_``. Unless it is above
        ``majority_accuracy_`` the fit warns with ``BelowMajorityWarning``.
        """
        from ppknn.protocols.dp_nb.estimator import BelowMajorityWarning

        y = self.y_fit_
        self.majority_accuracy_ = float(np.bincount(y).max() / len(y))
        self.expected_accuracy_ = None
        folds = self._utility_folds()
        if isinstance(folds, bool) or not isinstance(folds, int) or folds < 0:
            raise ConfigError(f"utility_folds = {folds!r}; allowed: an int >= 0 (0: no check)")
        owners, analysts = self._parties()
        if folds < 2 or len(y) < folds * max(owners, 2):
            return
        fold_of = np.random.default_rng(0).permutation(len(y)) % folds
        accs = []
        for f in range(folds):
            train, test = fold_of != f, fold_of == f
            try:
                run = simulate(self._protocol(int(train.sum())), X=self.X_fit_[train],
                               y=y[train], n_classes=len(self.classes_),
                               queries=self.X_fit_[test], bounds=self.bounds_,
                               n_parties=owners, analysts=min(analysts, int(test.sum())),
                               runtime="inprocess", channels=False,
                               seed=run_seed(self.random_state), name=self.protocol_name)
            except (ConfigError, ValueError):  # a fold too small for these settings
                return
            accs.append(float(np.mean(run.result.predictions == y[test])))
        self.expected_accuracy_ = float(np.mean(accs))
        if self.expected_accuracy_ <= self.majority_accuracy_:
            warnings.warn(
                f"{type(self).__name__}: expected accuracy {self.expected_accuracy_:.3f} "
                f"({folds}-fold on the training rows, at these settings) is not above the "
                f"{self.majority_accuracy_:.3f} of always predicting the majority class; "
                "raise epsilon or declare tighter bounds", BelowMajorityWarning, stacklevel=3)

    def _after_fit(self, X: np.ndarray, y: np.ndarray) -> None:
        """Extra checks once the data is known."""

    def _run(self, X: Any) -> tuple[np.ndarray, Simulated]:
        check_is_fitted(self, "X_fit_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        owners, analysts = self._parties()
        run = simulate(self._protocol(len(self.y_fit_)), X=self.X_fit_, y=self.y_fit_,
                       n_classes=len(self.classes_), queries=X, bounds=self.bounds_,
                       n_parties=owners, analysts=min(analysts, max(1, len(X))),
                       runtime=self.runtime, channels=self.channels,
                       seed=run_seed(self.random_state),
                       name=self.protocol_name)
        self.transcript_ = run.transcript.table()
        self.leakage_ = run.leakage
        self.privacy_ = run.result.privacy
        self.communication_ = run.communication
        self.last_run_ = run
        return np.asarray(run.result.predictions), run

    def predict(self, X: Any) -> np.ndarray:
        """Labels of ``X`` from one simulated run of the protocol.

        A query the protocol does not answer (e.g. its request was refused by
        the ledger) gets the first class.
        """
        pred, _ = self._run(X)
        return self.classes_[np.where(pred >= 0, pred, 0)]


__all__ = ["ProtocolClassifier", "run_seed"]
