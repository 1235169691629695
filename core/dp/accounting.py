"""Composition theorems (pure functions) and the :class:`PrivacyCost` value.

* :func:`sequential_composition` -- basic composition: ε and δ add up.
* :func:`parallel_composition` -- mechanisms on disjoint parts of the data:
  the maximum ε and the maximum δ.
* :func:`advanced_composition` -- Dwork, Rothblum & Vadhan (2010), as stated
  in Dwork & Roth (Thm. 3.20): k-fold adaptive composition of (ε, δ)-DP
  mechanisms is ``(sqrt(2k ln(1/δ'))ε + kε(e^ε - 1), kδ + δ')``-DP.
* :func:`bounded_range_epsilon` -- Dong, Durfee & Rogers (2020, Prop. 4; quoted
  as Thm. 2.13 in the Lepert thesis): the adaptive composition of
  ε_i-bounded-range mechanisms (e.g. exponential mechanisms) is (ε, δ)-DP with
  ``ε = min{Σε_i, Σ(ε_i/(1-e^-ε_i) - 1 - ln(ε_i/(1-e^-ε_i))) + sqrt(½ Σε_i² ln(1/δ))}``.

Every function returns the *minimum* of the theorem's bound and plain
summation, since both are valid.

These bounds assume the per-release parameters are fixed before the run (the
mechanisms themselves may be chosen adaptively). For budgets whose per-release
ε is chosen from earlier outputs, only basic composition is a valid privacy
filter; :class:`~core.dp.ledger.PrivacyLedger` composes across charges with it.

Examples
--------
>>> round(bounded_range_epsilon([0.1] * 10, 1e-5), 4)
0.7712
>>> bounded_range_epsilon([3.5] * 12, 1e-5)
42.0
>>> sequential_composition([PrivacyCost(0.5), PrivacyCost(0.25, 1e-6)])
PrivacyCost(epsilon=0.75, delta=1e-06)
>>> parallel_composition([PrivacyCost(0.5), PrivacyCost(0.25, 1e-6)])
PrivacyCost(epsilon=0.5, delta=1e-06)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ppknn.core.dp.validation import check_delta, check_epsilon, check_positive_int, check_real
from ppknn.core.errors import ConfigError


@dataclass(frozen=True)
class PrivacyCost:
    """An (ε, δ) privacy cost (or budget).

    Parameters
    ----------
    epsilon:
        A finite number >= 0.
    delta:
        A number in ``[0, 1)``.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        eps = check_real(self.epsilon, "epsilon")
        if eps < 0:
            raise ConfigError(f"epsilon of a privacy cost must be >= 0, got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", check_delta(self.delta))


def _costs(costs: Iterable[PrivacyCost]) -> list[PrivacyCost]:
    out = list(costs)
    for c in out:
        if not isinstance(c, PrivacyCost):
            raise TypeError(f"expected PrivacyCost values, got {type(c).__name__}")
    return out


def sequential_composition(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    """Compose sequentially (basic composition): ``(Σε_i, Σδ_i)``, δ capped below 1."""
    items = _costs(costs)
    delta = min(math.fsum(c.delta for c in items), math.nextafter(1.0, 0.0))
    return PrivacyCost(math.fsum(c.epsilon for c in items), delta)


def parallel_composition(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    """Parallel composition over disjoint data: ``(max ε_i, max δ_i)``."""
    items = _costs(costs)
    if not items:
        return PrivacyCost(0.0, 0.0)
    return PrivacyCost(max(c.epsilon for c in items), max(c.delta for c in items))


def advanced_composition_epsilon(epsilon: float, k: int, delta_slack: float) -> float:
    """Return the raw DRV bound ``sqrt(2k ln(1/δ'))ε + kε(e^ε - 1)``."""
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, name="k")
    delta_slack = check_delta(delta_slack, name="delta_slack", allow_zero=False)
    return math.sqrt(2 * k * math.log(1 / delta_slack)) * epsilon + k * epsilon * math.expm1(
        epsilon
    )


def advanced_composition(epsilon: float, delta: float, k: int, delta_slack: float) -> PrivacyCost:
    """k-fold composition of (ε, δ)-DP mechanisms: the better of DRV and summation.

    Returns ``(ε', kδ + δ')`` when the DRV bound ε' is below ``kε``, else
    ``(kε, kδ)``.

    >>> c = advanced_composition(0.1, 0.0, 100, 1e-6)
    >>> round(c.epsilon, 4), c.delta
    (6.3082, 1e-06)
    """
    delta = check_delta(delta)
    k = check_positive_int(k, name="k")
    drv = advanced_composition_epsilon(epsilon, k, delta_slack)
    if drv < k * epsilon:
        return PrivacyCost(drv, min(k * delta + delta_slack, math.nextafter(1.0, 0.0)))
    return PrivacyCost(k * epsilon, min(k * delta, math.nextafter(1.0, 0.0)))


def bounded_range_kl(epsilon: float) -> float:
    """``ε/(1-e^-ε) - 1 - ln(ε/(1-e^-ε))``: the largest KL divergence of an ε-BR mechanism.

    >>> round(bounded_range_kl(1.0), 6)
    0.123302
    """
    epsilon = check_epsilon(epsilon)
    y = epsilon / -math.expm1(-epsilon) - 1.0  # ε/(1-e^-ε) - 1 > 0
    if y < 1e-4:  # y - ln(1 + y) by its series, avoiding cancellation
        return y * y / 2 - y**3 / 3 + y**4 / 4
    return y - math.log1p(y)


def bounded_range_epsilon(epsilons: Sequence[float], delta: float) -> float:
    """ε of the adaptive composition of ε_i-bounded-range mechanisms (DDR 2020, Prop. 4).

    ``min{Σε_i, Σ KL(ε_i) + sqrt(½ Σε_i² ln(1/δ))}``; with ``delta == 0`` this
    is plain summation.
    """
    eps = [check_epsilon(e, name="epsilons[i]") for e in epsilons]
    delta = check_delta(delta)
    total = math.fsum(eps)
    if not eps or delta == 0:
        return total
    bound = math.fsum(bounded_range_kl(e) for e in eps) + math.sqrt(
        0.5 * math.fsum(e * e for e in eps) * math.log(1 / delta)
    )
    return min(total, bound)


def bounded_range_composition(epsilon: float, k: int, delta: float) -> PrivacyCost:
    """K exponential mechanisms (each ε-BR) composed: ``PrivacyCost(ε_BR, δ)``.

    When plain summation wins the cost is ``(kε, 0)``.

    >>> round(bounded_range_composition(1.0, 16, 1e-5).epsilon, 4)
    11.5699
    """
    k = check_positive_int(k, name="k")
    eps = bounded_range_epsilon([epsilon] * k, delta)
    if eps >= k * check_epsilon(epsilon):
        return PrivacyCost(eps, 0.0)
    return PrivacyCost(eps, delta)


__all__ = [
    "PrivacyCost",
    "advanced_composition",
    "advanced_composition_epsilon",
    "bounded_range_composition",
    "bounded_range_epsilon",
    "bounded_range_kl",
    "parallel_composition",
    "sequential_composition",
]
