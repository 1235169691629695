"""``PPKNNClassifier``: the PP-kNN ring of Xiong, Chitti & Liu as a scikit-learn classifier.

``fit`` keeps the training rows; ``predict`` splits them among ``n_parties``
ring data owners (IID, from the seed) and runs the whole protocol on the
query batch -- PP-TopK over the ring, local votes, the secure sum -- on the
in-process runtime (or on Ray with ``runtime="ray"``). The last run's
transcript and per-node disclosure report are fitted attributes.

Examples
--------
>>> import numpy as np, warnings
>>> from sklearn.datasets import load_iris
>>> from sklearn.neighbors import KNeighborsClassifier
>>> X, y = load_iris(return_X_y=True)
>>> clf = PPKNNClassifier(n_neighbors=5, n_parties=4, bounds=(0.0, 8.0), random_state=0)
>>> pred = clf.fit(X[::2], y[::2]).predict(X[1::2])
>>> knn = KNeighborsClassifier(5, algorithm="brute").fit(X[::2], y[::2]).predict(X[1::2])
>>> float(np.mean(pred == knn)), clf.transcript_.num_rows > 0
(1.0, True)
>>> round(clf.leakage_.mean_probability, 2)        # per-node disclosure to the successor
0.48
"""

from __future__ import annotations

from typing import Any

from ppknn.core.errors import ConfigError
from ppknn.simulations.estimators.base import ProtocolClassifier


class PPKNNClassifier(ProtocolClassifier):
    """k-NN over ``n_parties`` ring data owners with the PP-kNN protocol (no DP).

    Parameters
    ----------
    n_neighbors:
        k.
    n_parties:
        Ring data owners (at least 3); the training rows are split among them.
    p0, d, rounds, delta:
        PP-TopK's randomisation: ``P_r = p0 * d**(r-1)`` over ``rounds`` rounds,
        random-fill width at least ``delta``. ``p0 = 0`` sends real values only.
    weighting:
        ``"uniform"`` or ``"distance"`` (``1/d``) votes.
    secure_sum:
        ``"ring"`` (Algorithm 3) or ``"shared"`` (collusion-resistant).
    bounds:
        Public domain bounds ``(lower, upper)`` (numbers or one per feature); the
        public maximum distance is their diameter. ``"data"`` derives them from
        the training rows (warns: they leak the extremes).
    runtime:
        ``"inprocess"`` (default, fast) or ``"ray"`` (one actor per party).
    channels:
        Authenticated encryption between parties (slower; off by default).
    random_state:
        Root seed of each simulated run (partition, ring order, randomisation);
        ``None``: fresh entropy every ``predict``.

    Attributes
    ----------
    classes_, n_features_in_:
        As in scikit-learn.
    transcript_:
        The last run's messages (pyarrow table: payload seen, provenance, bytes).
    leakage_:
        The last run's per-node disclosure report (successor attribution, Wilson 95%).
    privacy_:
        The last run's privacy accounting (no DP: the disclosure measure).
    """

    protocol_name = "ppknn-ring"

    def __init__(self, n_neighbors: int = 5, *, n_parties: int = 3, p0: float = 1.0,
                 d: float = 0.5, rounds: int = 2, delta: float = 1e-3,
                 weighting: str = "uniform", secure_sum: str = "ring", bounds: Any = "data",
                 runtime: str = "inprocess", channels: bool = False,
                 random_state: int | None = 0) -> None:
        self.n_neighbors = n_neighbors
        self.n_parties = n_parties
        self.p0 = p0
        self.d = d
        self.rounds = rounds
        self.delta = delta
        self.weighting = weighting
        self.secure_sum = secure_sum
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state

    def _parties(self) -> tuple[int, int]:
        return int(self.n_parties), 1

    def _randomised(self) -> bool:
        # with p0 > 0 random values may stay in the final top-k (the paper's bound)
        return bool(self.p0 > 0)

    def _check_params(self) -> None:
        super()._check_params()
        if not isinstance(self.n_parties, int) or self.n_parties < 3:
            raise ConfigError(f"n_parties = {self.n_parties!r}; allowed: an int >= 3 (a ring)")

    def _after_fit(self, X: Any, y: Any) -> None:
        if self.n_neighbors > len(y):
            raise ValueError(f"n_neighbors = {self.n_neighbors} is larger than n_samples = "
                             f"{len(y)}")

    def _protocol(self, n_train: int) -> dict[str, Any]:
        return {"name": "ppknn-ring", "k": self.n_neighbors, "p0": self.p0, "d": self.d,
                "rounds": self.rounds, "delta": self.delta, "weighting": self.weighting,
                "secure_sum": self.secure_sum}


__all__ = ["PPKNNClassifier"]
