"""Public configuration of a ring Naive Bayes run, shared by the owners and the driver.

Examples
--------
>>> cfg = RingNBConfig(epsilon=1.5)
>>> cfg.group_epsilons()
(0.5, 0.5, 0.5)
>>> RingNBConfig(epsilon=1.0, split=(2.0, 1.0, 1.0)).group_epsilons()
(0.5, 0.25, 0.25)
>>> RingNBConfig(epsilon=float("inf"))
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: ring-nb: epsilon must be a finite number > 0, got inf
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.messages import PartyId
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.ppknn_ring.secure_sum import SUM_KINDS

PROTOCOL = "ring-nb"
"""Protocol name on every message of a ring Naive Bayes run."""
MIN_PARTIES = 3
"""Like PP-kNN, the ring needs at least three owners (two would reveal each other's sums)."""
GROUPS = ("class counts", "sums", "sums of squares")
"""The three statistic groups, in the order the budget ``split`` weights them."""


def _positive_finite(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"ring-nb: {name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ConfigError(f"ring-nb: {name} must be a finite number > 0, got {value!r}")
    return v


@dataclass(frozen=True, kw_only=True)
class RingNBConfig:
    """Public parameters of one ring Naive Bayes release.

    Parameters
    ----------
    epsilon:
        ε of the released model (> 0, finite): the start node's Laplace noise
        on the summed statistics, split over the three statistic groups.
    split:
        Relative weights of ε for (class counts, sums, sums of squares);
        group ``g`` gets ``epsilon * split[g] / sum(split)`` (sequential
        composition: the groups add up to ``epsilon``).
    secure_sum:
        ``"ring"`` (Algorithm 3 of Xiong et al.) or ``"shared"``
        (additive secret sharing, collusion resistant).
    var_floor:
        Released variances are raised to at least ``var_floor`` on the
        normalised domain ``[-1, 1]``, i.e. ``var_floor * ((U - L) / 2)**2`` in
        data units (noise can drive a variance to zero or below; a zero
        variance makes one feature decide every prediction). ``0``: only the
        ``var_smoothing`` term stays.
    var_smoothing:
        Added to every variance on the normalised domain (scikit-learn's
        ``GaussianNB`` adds ``var_smoothing`` times the largest feature
        variance; the public range stands in for the data's here).
    budget:
        The start node's ledger budget for this release (``None``: ``epsilon``).
    mode:
        ``"reproducible"`` (seeded numpy noise) or ``"secure"`` (the DP
        core's floating-point-safe samplers, masks from OS entropy).
    """

    epsilon: float
    split: tuple[float, ...] = (1.0, 1.0, 1.0)
    secure_sum: str = "ring"
    var_floor: float = 1e-3
    var_smoothing: float = 1e-9
    budget: float | None = None
    mode: str = RandomnessMode.REPRODUCIBLE.value

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _positive_finite(self.epsilon, "epsilon"))
        split = tuple(self.split)
        if len(split) != len(GROUPS):
            raise ConfigError(f"ring-nb: split needs {len(GROUPS)} weights {list(GROUPS)}, "
                              f"got {list(split)}")
        object.__setattr__(self, "split", tuple(_positive_finite(w, "each split weight")
                                                for w in split))
        if self.secure_sum not in SUM_KINDS:
            raise ConfigError(f"ring-nb: secure_sum must be one of {list(SUM_KINDS)}, "
                              f"got {self.secure_sum!r}")
        floor = self.var_floor
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) \
                or not 0 <= floor < 1:
            raise ConfigError(f"ring-nb: var_floor must be a number in [0, 1), got {floor!r}")
        _positive_finite(self.var_smoothing, "var_smoothing")
        if self.budget is not None:
            budget = _positive_finite(self.budget, "budget")
            if budget < self.epsilon:
                raise ConfigError(f"ring-nb: budget {budget!r} is below the release's epsilon "
                                  f"{self.epsilon!r}")
        RandomnessMode(self.mode)

    def group_epsilons(self) -> tuple[float, float, float]:
        """ε of the class counts, the sums and the sums of squares."""
        total = sum(self.split)
        a, b, c = (self.epsilon * w / total for w in self.split)
        return a, b, c

    @property
    def ledger_budget(self) -> float:
        """The start node's budget (``budget``, else ``epsilon``)."""
        return self.epsilon if self.budget is None else float(self.budget)


@dataclass(frozen=True)
class RingNBSetup:
    """Public set-up every owner learns: the ring, the bounds, the queries, the release."""

    ring: tuple[PartyId, ...]
    start: PartyId
    lower: np.ndarray
    upper: np.ndarray
    queries: np.ndarray
    config: RingNBConfig
    name: str = PROTOCOL
    """The name of the summed vector (and of the owner's state for this release)."""


__all__ = ["GROUPS", "MIN_PARTIES", "PROTOCOL", "RingNBConfig", "RingNBSetup"]
