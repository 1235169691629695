"""``DPTTClassifier``: DP kd-tree traversal (Lepert) as a nearest-neighbour classifier.

``fit`` builds nothing yet: it keeps the server's points and labels; ``predict``
starts the DP-TT server (the modified kd-tree over the training rows) and the
client (the query rows, one user per query), runs the level-synchronous
traversal in which the client answers each decision by the exponential
mechanism, and labels each query with the label of the nearest released point
(or the majority of its released points). ``kneighbors`` is not offered: the
released points are what the protocol returns (``last_run_.result.detail``).

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
>>> clf = DPTTClassifier(variant="GS-N4", final_epsilon=10.0, bounds=(0.0, 1.0))
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
from ppknn.simulations.estimators.base import ProtocolClassifier

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
        δ of the bounded-range bound (0: plain summation).
    radius:
        DIS sensitivity bound (``utility="dis"``).
    predict_rule:
        ``"nearest"`` (label of the nearest released point) or ``"majority"``.
    bounds, runtime, channels, random_state:
        As :class:`~ppknn.simulations.estimators.PPKNNClassifier`.
    utility_folds:
        As :class:`~ppknn.simulations.estimators.DPRadiusNeighborsClassifier`.

    Attributes
    ----------
    privacy_:
        The last run's ε per query (bounded-range and summed) and the client's ledger.
    """

    protocol_name = "dptt"

    def __init__(self, *, variant: str = "basic", utility: str = "cmp",
                 final_epsilon: float | None = None, epsilon: float | None = None,
                 delta: float = 1e-7, radius: float | None = None,
                 predict_rule: str = "nearest", bounds: Any = "data",
                 runtime: str = "inprocess", channels: bool = False,
                 random_state: int | None = 0, utility_folds: int = 3) -> None:
        self.variant = variant
        self.utility = utility
        self.final_epsilon = final_epsilon
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.predict_rule = predict_rule
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds

    def _utility_folds(self) -> int:
        return self.utility_folds

    def _check_params(self) -> None:
        super()._check_params()
        if self.epsilon is not None and self.final_epsilon is not None:
            raise ConfigError(f"epsilon = {self.epsilon!r}, final_epsilon = "
                              f"{self.final_epsilon!r}: give exactly one (ε per decision or "
                              "per query)")

    def _protocol(self, n_train: int) -> dict[str, Any]:
        table: dict[str, Any] = {"name": "dptt", "variant": self.variant,
                                 "utility": self.utility, "delta": float(self.delta),
                                 "predict": self.predict_rule}
        if self.epsilon is not None:
            table["epsilon"] = float(self.epsilon)
        else:
            table["final_epsilon"] = (DEFAULT_FINAL_EPSILON if self.final_epsilon is None
                                      else float(self.final_epsilon))
        if self.radius is not None:
            table["radius"] = float(self.radius)
        return table


__all__ = ["DEFAULT_FINAL_EPSILON", "DPTTClassifier"]
