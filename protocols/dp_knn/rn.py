"""Differentially private radius-neighbours (r-N) classification (Gursoy et al. §3).

Neighbouring datasets differ by **adding or removing one record** (the
paper's Definition 1). One record changes one label's count of every test
region that contains it, by one; so the L1 sensitivity of the ``(Q, C)``
count matrix of a batch is the largest number of test regions sharing a
point. (Under replace-one neighbours every sensitivity below doubles.)

Algorithms
----------
``baseline-laplace`` (Algorithm 1 per instance, ε' = ε/|X|)
    Laplace noise of scale ``|X|/ε`` on every count -- one
    :class:`~core.dp.mechanisms.Laplace` with sensitivity ``|X|`` over the
    whole matrix, which is the same noise and states the same ε.
``baseline-exponential`` (Algorithm 2 per instance, ε' = ε/|X|)
    The exponential mechanism with utility = count, ``Δu = 1``
    (``P ∝ exp(ε' c / 2)``, as the paper writes it).
``proposed`` (Algorithm 3)
    Region overlap graph (:mod:`~protocols.dp_knn.overlap`), its connected
    components (disjoint parts of the data: ε each, parallel composition),
    and Laplace noise of scale ``MCS(G_sub)/ε`` in component ``G_sub``
    (:mod:`~protocols.dp_knn.cliques`; an upper bound where the clique search
    ran out of its deterministic work budget). Components sharing a noise scale are released by one
    Laplace call (the block's sensitivity is the largest of theirs).

Each classifier returns the argmax of the noisy counts (lowest label on a
tie, as scikit-learn); with ``epsilon = math.inf`` no noise is added, which
is scikit-learn's ``RadiusNeighborsClassifier`` (an empty region gets label
0, scikit-learn's ``outlier_label`` set to the first class). The release
functions take counts of shape ``(..., Q, C)`` so the auditor can draw many
runs at once through the same code.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_knn.index import LabelIndex
>>> idx = LabelIndex(np.array([[0.0], [0.1], [0.2], [5.0]]), np.array([1, 1, 0, 0]), n_classes=2)
>>> res = classify_rn(idx, np.array([[0.0], [5.0]]), 0.5, algorithm="proposed",
...                   epsilon=math.inf, rng=np.random.default_rng(0))
>>> res.labels.tolist(), res.sensitivity.tolist()
([1, 0], [1, 1])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp import ExponentialMechanism, Laplace
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.dp_knn.cliques import DEFAULT_CLIQUE_WORK, CliqueBounds, clique_bounds
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.overlap import OverlapGraph, overlap_graph
from ppknn.protocols.dp_knn.validation import check_privacy, check_queries, check_radii

RN_ALGORITHMS = ("proposed", "baseline-laplace", "baseline-exponential")


@dataclass(frozen=True)
class RNPlan:
    """What the proposed classifier learns from the test instances alone (no data).

    Attributes
    ----------
    graph:
        The region overlap graph.
    cliques:
        Clique number (or upper bound) and search path per component.
    """

    graph: OverlapGraph
    cliques: CliqueBounds

    @property
    def sensitivity(self) -> np.ndarray:
        """``(Q,)`` int64: the MCS (or bound) of each instance's component."""
        return self.cliques.size[self.graph.component]

    @property
    def exact(self) -> np.ndarray:
        """``(Q,)`` bool: whether each instance's sensitivity is an exact clique number."""
        return self.cliques.exact[self.graph.component]


def plan_rn(x: np.ndarray, r: Any, *, work_limit: int | None = DEFAULT_CLIQUE_WORK,
            time_limit_s: float | None = None) -> RNPlan:
    """Build the overlap graph of ``(x, r)`` and bound each component's clique number.

    ``work_limit`` and ``time_limit_s`` are :func:`~protocols.dp_knn.cliques.clique_bounds`'s
    (a deterministic work budget; an optional, machine-dependent wall-clock cap).
    """
    x = check_queries(x)
    radii = check_radii(r, len(x))
    graph = overlap_graph(x, radii)
    return RNPlan(graph=graph, cliques=clique_bounds(graph, work_limit=work_limit,
                                                     time_limit_s=time_limit_s))


def laplace_labels(counts: np.ndarray, sensitivity: np.ndarray, epsilon: float, rng: Any,
                   mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> np.ndarray:
    """Argmax of Laplace-noised counts; ``counts`` ``(..., Q, C)``, ``sensitivity`` ``(Q,)``.

    Rows sharing a sensitivity s get one Laplace(ε, s) release; with
    ``epsilon = math.inf`` the counts are used as they are.
    """
    counts = np.asarray(counts)
    if epsilon == math.inf:
        return np.argmax(counts, axis=-1)
    noisy = np.empty(counts.shape, dtype=np.float64)
    sens = np.asarray(sensitivity)
    for s in np.unique(sens):
        rows = sens == s
        mech = Laplace(epsilon=epsilon, sensitivity=float(s), mode=RandomnessMode(mode))
        noisy[..., rows, :] = mech.randomise(counts[..., rows, :], rng).value
    return np.argmax(noisy, axis=-1)


def exponential_labels(counts: np.ndarray, epsilon_each: float, rng: Any,
                       mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> np.ndarray:
    """One exponential-mechanism choice per row of ``counts`` ``(..., Q, C)``, ε_each per row.

    Utility = count, ``Δu = 1``, not treated as monotonic (the paper's ε'/2).
    """
    counts = np.asarray(counts)
    if epsilon_each == math.inf:
        return np.argmax(counts, axis=-1)
    mech = ExponentialMechanism(epsilon=epsilon_each, sensitivity=1.0, mode=RandomnessMode(mode))
    flat = counts.reshape(-1, counts.shape[-1]).astype(np.float64)
    return np.asarray(mech.randomise(flat, rng).value).reshape(counts.shape[:-1])


@dataclass(frozen=True)
class RNResult:
    """Labels of one r-N batch and how they were produced.

    Attributes
    ----------
    labels:
        ``(Q,)`` int64 label indices.
    epsilon:
        The batch's privacy cost (``math.inf`` without noise).
    sensitivity:
        ``(Q,)``: the count sensitivity the noise of each instance was
        calibrated to (``|X|`` for the baselines, MCS for the proposed one).
    component:
        ``(Q,)`` overlap-graph component (``-1`` for the baselines).
    exact:
        ``(Q,)`` bool: sensitivity from an exact clique number (baselines: True).
    plan:
        The proposed classifier's plan (``None`` for the baselines).
    """

    labels: np.ndarray
    epsilon: float
    sensitivity: np.ndarray
    component: np.ndarray
    exact: np.ndarray
    plan: RNPlan | None = None


def release_rn(counts: np.ndarray, *, algorithm: str, epsilon: float, rng: Any,
               plan: RNPlan | None = None,
               mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> np.ndarray:
    """The labels of ``algorithm`` for counts ``(..., Q, C)`` (see the module docstring)."""
    q = counts.shape[-2]
    if algorithm == "proposed":
        if plan is None:
            raise ConfigError("the proposed r-N classifier needs its plan (plan_rn)")
        return laplace_labels(counts, plan.sensitivity, epsilon, rng, mode)
    if algorithm == "baseline-laplace":
        return laplace_labels(counts, np.full(q, q), epsilon, rng, mode)
    if algorithm == "baseline-exponential":
        return exponential_labels(counts, epsilon / q, rng, mode)
    raise ConfigError(f"unknown r-N algorithm {algorithm!r}; allowed: {list(RN_ALGORITHMS)}")


def classify_rn(index: LabelIndex, x: Any, r: Any, *, algorithm: str, epsilon: float,
                rng: Any, mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE,
                plan: RNPlan | None = None,
                work_limit: int | None = DEFAULT_CLIQUE_WORK,
                time_limit_s: float | None = None) -> RNResult:
    """Classify the batch ``(x, r)`` ε-DP with ``algorithm`` (see the module docstring).

    Parameters
    ----------
    index:
        The private training data.
    x, r:
        Test instances ``(Q, D)`` and radii (scalar or ``(Q,)``).
    algorithm:
        One of :data:`RN_ALGORITHMS`.
    epsilon:
        Budget of the whole batch (``math.inf``: no noise).
    rng:
        Generator for the noise (``reproducible`` mode).
    plan:
        A plan of this very batch computed earlier (the proposed algorithm
        computes it otherwise).
    work_limit, time_limit_s:
        Limits of the clique search when the plan is computed here (:func:`plan_rn`).
    """
    if algorithm not in RN_ALGORITHMS:
        raise ConfigError(f"unknown r-N algorithm {algorithm!r}; allowed: {list(RN_ALGORITHMS)}")
    eps = check_privacy(epsilon)
    x = check_queries(x, index.n_features)
    radii = check_radii(r, len(x))
    q = len(x)
    if algorithm == "proposed":
        plan = plan if plan is not None else plan_rn(x, radii, work_limit=work_limit,
                                                      time_limit_s=time_limit_s)
        if plan.graph.n != q:
            raise ConfigError(f"the plan covers {plan.graph.n} instances, the batch has {q}")
    counts = index.radius_counts(x, radii)
    labels = release_rn(counts, algorithm=algorithm, epsilon=eps, rng=rng, plan=plan, mode=mode)
    if algorithm == "proposed":
        assert plan is not None
        return RNResult(labels=labels, epsilon=eps, sensitivity=plan.sensitivity,
                        component=plan.graph.component, exact=plan.exact, plan=plan)
    return RNResult(labels=labels, epsilon=eps, sensitivity=np.full(q, q, dtype=np.int64),
                    component=np.full(q, -1, dtype=np.int64), exact=np.ones(q, dtype=bool))


__all__ = [
    "DEFAULT_CLIQUE_WORK",
    "RN_ALGORITHMS",
    "RNPlan",
    "RNResult",
    "classify_rn",
    "exponential_labels",
    "laplace_labels",
    "plan_rn",
    "release_rn",
]
