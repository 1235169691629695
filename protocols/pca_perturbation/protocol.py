"""Data release with PCA + Laplace perturbation (Mukherjee et al. 2008): the mining plan.

The release loop is :func:`protocols.pca_perturbation.driver.run_releases`.

Two parties: the *sanitizer*
(:class:`protocols.pca_perturbation.parties.sanitizer.Sanitizer`) holds a
labelled training table; the *miner* (:class:`protocols.pca_perturbation.parties.miner.Miner`) holds
instances to classify. For each :class:`ReleaseRequest`:

1. round r: the sanitizer sends the miner one release message (noisy
   principal-component scores, labels, the projection the miner needs and
   the distortion statistics; or a baseline scheme's payload);
2. the miner projects its own instances (not noised) into the released
   space and classifies them by the :class:`MiningPlan`: the modified kNN of
   Fig. 4 (``radius``), distance-weighted kNN with k chosen by
   cross-validation on the release (``best-k``), or with a fixed k
   (``fixed-k``).

Everything the miner learns is the release; the attacks of
:mod:`protocols.pca_perturbation.attacks` run over its view.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.protocols.pca_perturbation.knn import DEFAULT_KS

PROTOCOL = "pca-perturbation"
METHODS = ("radius", "best-k", "fixed-k")


def _positive_int(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class MiningPlan:
    """How the miner classifies its instances against one release.

    Parameters
    ----------
    methods:
        Any of ``"radius"`` (modified kNN; needs a release with distortion
        statistics), ``"best-k"``, ``"fixed-k"``.
    k:
        The fixed k (the paper's PCA-k=5).
    ks:
        The k grid for cross-validation.
    folds, max_validation:
        Cross-validation folds and the most rows validated.
    fallback_k:
        Neighbours used when a query's radius is empty.
    """

    methods: tuple[str, ...] = ("radius",)
    k: int = 5
    ks: tuple[int, ...] = DEFAULT_KS
    folds: int = 5
    max_validation: int = 1000
    fallback_k: int = 5

    def __post_init__(self) -> None:
        methods = tuple(self.methods)
        unknown = [m for m in methods if m not in METHODS]
        if not methods or unknown:
            raise ConfigError(f"methods must be a non-empty subset of {list(METHODS)}, "
                              f"got {list(methods)}")
        object.__setattr__(self, "methods", methods)
        _positive_int(self.k, "k")
        _positive_int(self.folds, "folds", 2)
        _positive_int(self.max_validation, "max_validation", self.folds)
        _positive_int(self.fallback_k, "fallback_k")
        if not self.ks:
            raise ConfigError("ks must hold at least one k")
        for k in self.ks:
            _positive_int(k, "every k in ks")


@dataclass(frozen=True)
class MinerOutput:
    """What the miner computed from one release (its own, local result).

    Attributes
    ----------
    round:
        The release's round.
    predictions:
        Per method, ``(Q,)`` class indices.
    radius2:
        Squared search radius (NaN without ``radius``).
    mean_in_radius:
        Mean number of training points inside the radius.
    fallback_fraction:
        Fraction of queries whose radius was empty.
    best_k:
        k chosen by cross-validation (0 without ``best-k``).
    cv_accuracy:
        ``(k, validation accuracy)`` pairs.
    """

    round: int
    predictions: dict[str, np.ndarray]
    radius2: float = float("nan")
    mean_in_radius: float = float("nan")
    fallback_fraction: float = float("nan")
    best_k: int = 0
    cv_accuracy: tuple[tuple[int, float], ...] = field(default_factory=tuple)


__all__ = ["METHODS", "PROTOCOL", "MinerOutput", "MiningPlan"]
