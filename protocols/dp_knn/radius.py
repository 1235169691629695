"""Choosing the r-N radius privately: the exponential mechanism over a public ladder of radii.

Gursoy et al. (§5.1) set the public radius r "so that on average a test
instance would have between 5 and 20 training instances in its proximity
region" -- a rule that reads the training data and is not charged to any
budget. Here the same rule is an ε-DP release:

* candidates: a public geometric ladder of radii from the domain's diameter
  down, fixed by the declared bounds only (:func:`radius_candidates`): each
  step shrinks the ball's *volume* by ``2^(1/STEPS)`` (so a neighbour count
  changes by about that factor per step in any dimension d), down to
  ``2^(-HALVINGS)`` of the diameter ball's volume. A ladder even in r would
  be too coarse in high dimension (a 9% step in r multiplies counts by 6 at
  d = 21) and would put too many candidates on near-empty balls, whose
  utilities all sit near ``-target`` and together outweigh the good ones;
* utility of candidate r: ``-|mean_i count(x_i, r) - target|`` over the
  batch's test instances ``x_i`` (the probes; public to the analyst who
  sends them). Adding or removing one training record changes each probe's
  count by at most one, so the mean by at most one: the utility's
  sensitivity is 1 (not monotonic: the distance to the target can move
  either way);
* the exponential mechanism with ε_r picks one candidate
  (:class:`~ppknn.core.dp.ExponentialMechanism`, ``P ∝ exp(ε_r u / 2)``).
  With ``epsilon = math.inf`` the best candidate is taken (the
  non-private rule on the same ladder; ties go to the smaller radius).

Its error is in *counts*: with probability >= 1 - β the chosen radius's
mean count is within ``2 (ln L + ln 1/β) / ε_r`` of the best candidate's
(L candidates), so a target of about 10 neighbours needs ε_r of order 1.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.data import DomainBounds
>>> from ppknn.protocols.dp_knn.index import LabelIndex
>>> X = np.linspace(0, 1, 101)[:, None]
>>> idx = LabelIndex(X, np.zeros(101, dtype=np.int64), n_classes=1)
>>> bounds = DomainBounds(np.zeros(1), np.ones(1))
>>> r = choose_radius(idx, np.array([[0.5]]), target=10, epsilon=math.inf, bounds=bounds,
...                   rng=np.random.default_rng(0))
>>> round(r, 3), int(idx.total_counts(np.array([[0.5]]), np.array([r]))[0])
(0.044, 9)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppknn.core.data import DomainBounds
from ppknn.core.dp import ExponentialMechanism
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.validation import check_privacy, check_queries

STEPS = 2
"""Candidates per halving of the ball's volume (counts change by about √2 per step)."""
HALVINGS = 50
"""The smallest candidate's ball has ``2^-50`` of the diameter ball's volume."""


def radius_candidates(bounds: DomainBounds) -> np.ndarray:
    """The public ladder, ascending: ``diameter · 2^(-j / (STEPS d))``, j = 0..STEPS·HALVINGS.

    >>> c = radius_candidates(DomainBounds(np.zeros(2), np.ones(2)))
    >>> len(c), round(float(c[-1]), 4), round(float(c[-1] / c[-2]) ** 4, 4)
    (101, 1.4142, 2.0)
    """
    diameter = float(np.linalg.norm(np.asarray(bounds.upper) - np.asarray(bounds.lower)))
    if not diameter > 0:
        raise ConfigError("the domain must have a positive diameter to choose a radius "
                          "(some upper bound > its lower bound)")
    d = len(np.asarray(bounds.lower))
    j = np.arange(STEPS * HALVINGS, -1, -1, dtype=np.float64)
    return diameter * np.exp2(-j / (STEPS * d))


def mean_counts(index: LabelIndex, probes: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``(L,)``: mean over the probes of the training rows within each candidate radius.

    Reads the private data (through :meth:`LabelIndex.count_profile`); release
    it only through :func:`choose_radius`.
    """
    return index.count_profile(probes, candidates) / float(len(probes))


def choose_radius(index: LabelIndex, probes: Any, *, target: float, epsilon: float,
                  bounds: DomainBounds, rng: Any,
                  mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> float:
    """An ε-DP radius at which the probes have about ``target`` training rows each (module doc).

    Parameters
    ----------
    index:
        The owner's private index.
    probes:
        ``(Q, D)`` test instances (public to the analyst).
    target:
        The mean neighbour count aimed at (> 0).
    epsilon:
        ε_r of this release (``math.inf``: the non-private rule, no noise).
    bounds:
        The declared public domain (fixes the candidate ladder).
    rng, mode:
        Randomness of the exponential mechanism.
    """
    x = check_queries(probes, index.n_features)
    eps = check_privacy(epsilon, name="radius epsilon")
    if not (isinstance(target, (int, float)) and math.isfinite(target) and target > 0):
        raise ConfigError(f"radius target must be a finite number > 0, got {target!r}")
    cand = radius_candidates(bounds)
    utility = -np.abs(mean_counts(index, x, cand) - float(target))
    if eps == math.inf:
        return float(cand[int(np.argmax(utility))])  # first maximum: the smaller radius
    mech = ExponentialMechanism(epsilon=eps, sensitivity=1.0, mode=RandomnessMode(mode))
    choice = int(np.asarray(mech.randomise(utility[None, :], rng).value).reshape(-1)[0])
    return float(cand[choice])


__all__ = ["HALVINGS", "STEPS", "choose_radius", "mean_counts", "radius_candidates"]
