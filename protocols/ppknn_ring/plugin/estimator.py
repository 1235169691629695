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

import numbers
from typing import Any

from ppknn.simulations.estimators import params as P
from ppknn.simulations.estimators.base import BATCH_DEPENDENT, ProtocolClassifier


class PPKNNClassifier(ProtocolClassifier):
    """k-NN over ``n_parties`` ring data owners with the PP-kNN protocol (no DP).

    Parameters
    ----------
    n_neighbors:
        k (an int >= 1, at most the training rows).
    n_parties:
        Ring data owners (an int >= 3); the training rows are split among them.
    p0, d, rounds, delta:
        PP-TopK's randomisation: ``P_r = p0 * d**(r-1)`` over ``rounds`` rounds
        (``p0`` in [0, 1], ``d`` in (0, 1], ``rounds`` >= 1), random-fill width at
        least ``delta`` >= 0. ``p0 = 0`` sends real values only.
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
        Root seed of each simulated run (partition, ring order, randomisation):
        ``None`` (default) draws it from OS entropy every ``predict``; an int
        repeats every run -- a simulation, not a deployment: anyone who knows the
        seed regenerates the random fills and the secure sum's masks; a numpy
        ``RandomState`` / ``Generator`` draws each run's seed from it.

    Attributes
    ----------
    classes_, n_features_in_:
        As in scikit-learn.
    bounds_:
        The public domain bounds (:class:`~ppknn.core.data.DomainBounds`).
    X_fit_, y_fit_:
        The training rows and their labels as indices into ``classes_``.
    transcript_:
        The last run's messages (pyarrow table: payload seen, provenance, bytes).
    leakage_:
        The last run's per-node disclosure report (successor attribution, Wilson 95%).
    communication_:
        The last run's message and byte counts (per party and in total).
    last_run_:
        The last run (:class:`~ppknn.simulations.estimators.simulate.Simulated`: the
        driver's result, transcript, public facts and plan).
    privacy_, privacy_last_:
        No DP: the guarantee (the disclosure measure) and the number of runs since
        ``fit``; ``epsilon`` is ``None``. ``privacy_last_``: the last run's.
    privacy_unit_:
        What one ε protects: here ``"none: no DP; ..."`` (the ring adds no DP noise).
    expected_accuracy_, majority_accuracy_:
        ``None`` (no utility check: the ring adds no noise to the labels) and the
        accuracy of always predicting the majority class.

    Notes
    -----
    ``transcript_`` and the other run attributes are ``None`` until the first
    ``predict``. With ``p0 > 0`` and an int ``random_state`` the estimator fails
    scikit-learn's subset and order invariance checks on purpose
    (``expected_failed_checks``): the ring answers a batch as one run.
    """

    protocol_name = "ppknn-ring"
    privacy_unit = "none: no DP; per-node disclosure probability of each predict run"
    parameter_of = {**ProtocolClassifier.parameter_of, "protocol.k": "n_neighbors"}
    expected_failed_checks = {
        **ProtocolClassifier.expected_failed_checks,
        "check_methods_subset_invariance": BATCH_DEPENDENT,
        "check_methods_sample_order_invariance": BATCH_DEPENDENT,
    }

    def __init__(self, n_neighbors: int = 5, *, n_parties: int = 3, p0: float = 1.0,
                 d: float = 0.5, rounds: int = 2, delta: float = 1e-3,
                 weighting: str = "uniform", secure_sum: str = "ring", bounds: Any = "data",
                 runtime: str = "inprocess", channels: bool = False,
                 random_state: Any = None) -> None:
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

    def _validated(self) -> dict[str, Any]:
        who = type(self).__name__
        return {**super()._validated(),
                "n_neighbors": P.integer(who, "n_neighbors", self.n_neighbors, low=1),
                "n_parties": P.integer(who, "n_parties", self.n_parties, low=3,
                                       allowed="an int >= 3 (a ring)"),
                "p0": P.real(who, "p0", self.p0, low=0.0, low_open=False, high=1.0),
                "d": P.real(who, "d", self.d, low=0.0, high=1.0),
                "rounds": P.integer(who, "rounds", self.rounds, low=1),
                "delta": P.real(who, "delta", self.delta, low=0.0, low_open=False),
                "weighting": P.choice(who, "weighting", self.weighting,
                                      ("uniform", "distance")),
                "secure_sum": P.choice(who, "secure_sum", self.secure_sum, ("ring", "shared"))}

    def _parties(self, p: dict[str, Any]) -> tuple[int, int]:
        return p["n_parties"], 1

    def _is_private(self) -> bool:
        return False  # no DP release: a search over it spends no budget

    def _randomised(self) -> bool:
        # with p0 > 0 random values may stay in the final top-k (the paper's bound)
        p0 = self.p0
        return not (isinstance(p0, numbers.Real) and not isinstance(p0, bool) and p0 == 0)

    def _guarantee(self) -> str:
        return "no DP: per-node disclosure probability"

    def _check_data(self, p: dict[str, Any], X: Any, y: Any) -> None:
        P.neighbours_fit(type(self).__name__, p["n_neighbors"], len(y))

    def _protocol(self, p: dict[str, Any], n_train: int) -> dict[str, Any]:
        return {"name": "ppknn-ring", "k": p["n_neighbors"], "p0": p["p0"], "d": p["d"],
                "rounds": p["rounds"], "delta": p["delta"], "weighting": p["weighting"],
                "secure_sum": p["secure_sum"]}


__all__ = ["PPKNNClassifier"]
