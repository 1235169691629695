"""Differentially private k-NN classification (Gursoy et al. §4).

``baseline`` (Algorithm 4 per instance, ε' = ε/|X|)
    The exponential mechanism over the label counts among the k nearest
    training rows (``Δu = 1``: adding or removing one row changes any one
    label's count by at most one), ``P ∝ exp(ε' q / 2)``.
``interactive`` / ``noninteractive`` (Algorithm 5)
    Convert ``(x, k)`` to ``(x, r)`` with ε̂ = wε (Algorithm 6 or 7,
    :mod:`~protocols.dp_knn.conversion`), then classify the r-N instances
    with the proposed r-N classifier and ``(1 - w)ε`` (Algorithm 3);
    sequential composition gives ε.

With ``epsilon = math.inf`` the baseline is scikit-learn's
``KNeighborsClassifier`` (lowest label on a tie of votes); the converted
classifiers become the r-N classifier on the conversion's noise-free radii.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_knn.index import LabelIndex
>>> idx = LabelIndex(np.array([[0.0], [0.1], [0.2], [5.0]]), np.array([1, 1, 0, 0]), n_classes=2)
>>> classify_knn(idx, np.array([[0.0], [5.0]]), 1, algorithm="baseline", epsilon=math.inf,
...              rng=np.random.default_rng(0)).labels.tolist()
[1, 0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.data import DomainBounds
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.dp_knn.conversion import (
    Conversion,
    NoisyGrid,
    convert_interactive,
    convert_noninteractive,
)
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.rn import (
    DEFAULT_CLIQUE_WORK,
    RNResult,
    classify_rn,
    exponential_labels,
)
from ppknn.protocols.dp_knn.validation import check_ks, check_privacy, check_queries, check_weight

KNN_ALGORITHMS = ("baseline", "interactive", "noninteractive")


@dataclass(frozen=True)
class KNNResult:
    """Labels of one k-NN batch.

    Attributes
    ----------
    labels:
        ``(Q,)`` int64 label indices.
    epsilon:
        The batch's total privacy cost.
    conversion:
        The k-NN -> r-N conversion (``None`` for the baseline).
    rn:
        The r-N classification of the converted instances (``None`` for the baseline).
    """

    labels: np.ndarray
    epsilon: float
    conversion: Conversion | None = None
    rn: RNResult | None = None

    @property
    def radii(self) -> np.ndarray:
        """The converted radii (NaN for the baseline)."""
        if self.conversion is None:
            return np.full(len(self.labels), np.nan)
        return self.conversion.radii


def classify_knn(index: LabelIndex, x: Any, k: Any, *, algorithm: str, epsilon: float,
                 rng: Any, bounds: DomainBounds | None = None, weight: float = 0.5,
                 candidates: int = 10, gamma: float | None = None, count_share: float = 0.05,
                 grid: NoisyGrid | None = None,
                 mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE,
                 work_limit: int | None = DEFAULT_CLIQUE_WORK,
                 time_limit_s: float | None = None) -> KNNResult:
    """Classify the batch ``(x, k)`` ε-DP with ``algorithm`` (see the module docstring).

    Parameters
    ----------
    index:
        The private training data.
    x, k:
        Test instances ``(Q, D)`` and neighbour counts (scalar or ``(Q,)``, >= 1).
    algorithm:
        One of :data:`KNN_ALGORITHMS`.
    epsilon:
        Budget of the whole batch (``math.inf``: no noise).
    bounds:
        The public domain (needed by the conversions).
    weight:
        w in ``(0, 1)``: the conversion's share of ε.
    candidates, gamma, count_share, grid:
        Conversion parameters (:mod:`~protocols.dp_knn.conversion`).
    work_limit, time_limit_s:
        Limits of the r-N step's clique search (:func:`~protocols.dp_knn.rn.plan_rn`).
    """
    if algorithm not in KNN_ALGORITHMS:
        raise ConfigError(f"unknown k-NN algorithm {algorithm!r}; allowed: {list(KNN_ALGORITHMS)}")
    eps = check_privacy(epsilon)
    x = check_queries(x, index.n_features)
    ks = check_ks(k, len(x))
    q = len(x)
    if algorithm == "baseline":
        counts = index.knn_counts(x, ks)
        return KNNResult(labels=exponential_labels(counts, eps / q, rng, mode), epsilon=eps)
    w = check_weight(weight)
    if bounds is None:
        raise ConfigError("the k-NN -> r-N conversion needs the public domain bounds")
    eps_conv = eps * w
    conv: Conversion
    if algorithm == "interactive":
        conv = convert_interactive(index, x, ks, epsilon=eps_conv, bounds=bounds, rng=rng,
                                   candidates=candidates, count_share=count_share, mode=mode)
    else:
        conv = convert_noninteractive(index, x, ks, epsilon=eps_conv, bounds=bounds, rng=rng,
                                      gamma=gamma, count_share=count_share, grid=grid, mode=mode)
    eps_rn = math.inf if eps == math.inf else eps - eps_conv
    rn = classify_rn(index, x, conv.radii, algorithm="proposed", epsilon=eps_rn, rng=rng,
                     mode=mode, work_limit=work_limit, time_limit_s=time_limit_s)
    spent = eps if eps == math.inf else conv.epsilon + eps_rn
    return KNNResult(labels=rn.labels, epsilon=spent, conversion=conv, rn=rn)


__all__ = ["KNN_ALGORITHMS", "KNNResult", "classify_knn"]
