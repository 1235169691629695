"""DP r-N and k-NN classifiers over a central DP owner (Gursoy, Inan, Nergiz & Saygin).

``fit`` keeps the training rows (the DP owner's data); ``predict`` starts the
DP owner with its privacy ledger and ``n_analysts`` analysts, who send the
query rows as request batches; each answered batch is charged ``epsilon`` on
the owner's ledger first (add/remove one training record). The ledger and
the per-analyst spending of the last run are fitted attributes.

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
"""

from __future__ import annotations

from typing import Any

from ppknn.core.errors import ConfigError
from ppknn.simulations.estimators.base import ProtocolClassifier


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or value == float("inf"):
        raise ConfigError(f"{name} = {value!r}; allowed: a finite number > 0")
    return float(value)


class _DPOwnerClassifier(ProtocolClassifier):
    protocol_name = "dp-knn"

    def _parties(self) -> tuple[int, int]:
        return 1, int(self.n_analysts)

    def _utility_folds(self) -> int:
        return self.utility_folds

    def _check_params(self) -> None:
        super()._check_params()
        _positive("epsilon", self.epsilon)
        n = self.n_analysts
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"n_analysts = {n!r}; allowed: an int >= 1")


class DPRadiusNeighborsClassifier(_DPOwnerClassifier):
    """ε-DP r-N classification by a central DP owner.

    Parameters
    ----------
    radius:
        The public radius of every query.
    epsilon:
        ε of each request batch (one per analyst), charged on the owner's ledger.
    algorithm:
        ``"proposed"`` (region overlap graph, noise scaled by the maximum clique
        size of each component), ``"baseline-laplace"`` or ``"baseline-exponential"``
        (ε/|X| per query).
    n_analysts:
        Analysts sharing the query rows (contiguous blocks).
    bounds:
        Public domain bounds ``(lower, upper)`` or ``"data"`` (warns).
    runtime, channels, random_state:
        As :class:`~ppknn.simulations.estimators.PPKNNClassifier`.
    utility_folds:
        At ``fit``, simulate the protocol this many times on folds of the training rows
        and warn (``BelowMajorityWarning``) unless the mean held-out accuracy
        ``expected_accuracy_`` is above ``majority_accuracy_`` (always predicting the
        majority class); 0 turns the check off.

    Attributes
    ----------
    privacy_:
        The last run's ledger total (ε, δ) and per-analyst spending.
    transcript_, leakage_:
        The last run's messages and leakage report (none is registered).
    """

    def __init__(self, radius: float = 1.0, *, epsilon: float = 1.0,
                 algorithm: str = "proposed", n_analysts: int = 1, bounds: Any = "data",
                 runtime: str = "inprocess", channels: bool = False,
                 random_state: int | None = 0, utility_folds: int = 3) -> None:
        self.radius = radius
        self.epsilon = epsilon
        self.algorithm = algorithm
        self.n_analysts = n_analysts
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds

    def _check_params(self) -> None:
        super()._check_params()
        _positive("radius", self.radius)

    def _protocol(self, n_train: int) -> dict[str, Any]:
        return {"name": "dp-knn", "task": "rn", "algorithm": self.algorithm,
                "epsilon": float(self.epsilon), "radius": float(self.radius)}


class DPKNeighborsClassifier(_DPOwnerClassifier):
    """ε-DP k-NN classification by a central DP owner.

    Parameters
    ----------
    n_neighbors:
        k.
    epsilon:
        ε of each request batch (one per analyst), charged on the owner's ledger.
    algorithm:
        ``"interactive"`` (k-NN to r-N conversion by the exponential mechanism, then
        the proposed r-N classifier), ``"noninteractive"`` (a DP grid) or
        ``"baseline"`` (exponential mechanism over the k nearest rows' labels,
        ε/|X| per query).
    weight:
        Share of ε spent on the conversion (converted algorithms).
    n_analysts, bounds, runtime, channels, random_state, utility_folds:
        As :class:`DPRadiusNeighborsClassifier`.
    """

    def __init__(self, n_neighbors: int = 5, *, epsilon: float = 1.0,
                 algorithm: str = "interactive", weight: float = 0.5, n_analysts: int = 1,
                 bounds: Any = "data", runtime: str = "inprocess", channels: bool = False,
                 random_state: int | None = 0, utility_folds: int = 3) -> None:
        self.n_neighbors = n_neighbors
        self.epsilon = epsilon
        self.algorithm = algorithm
        self.weight = weight
        self.n_analysts = n_analysts
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds

    def _after_fit(self, X: Any, y: Any) -> None:
        if self.n_neighbors > len(y):
            raise ValueError(f"n_neighbors = {self.n_neighbors} is larger than n_samples = "
                             f"{len(y)}")

    def _protocol(self, n_train: int) -> dict[str, Any]:
        return {"name": "dp-knn", "task": "knn", "algorithm": self.algorithm,
                "epsilon": float(self.epsilon), "k": self.n_neighbors,
                "weight": float(self.weight)}


__all__ = ["DPKNeighborsClassifier", "DPRadiusNeighborsClassifier"]
