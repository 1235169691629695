"""Independent reference computations for bounded-range (BR) composition.

Used only by the tests. Nothing here calls ``core.dp.accounting``.

1. :func:`kl_route_epsilon` recomputes the Dong-Durfee-Rogers (2020, Prop. 4)
   bound from its ingredients instead of its closed form: the largest KL
   divergence of an ε-BR mechanism is found by *numerically* maximising
   KL(P_t || Q_t) over the worst-case binary pairs below, and the
   concentration term is Azuma-Hoeffding for k losses each confined to an
   interval of width ε: ``sqrt(k ε² ln(1/δ) / 2)``.

2. :func:`worst_pair_epsilon` is the *exact* ε(δ) of the k-fold composition of
   one specific ε-BR mechanism: the binary pair with privacy loss ``t`` (prob.
   ``p_t = (e^ε - e^t)/(e^ε - 1)`` under P) or ``t - ε``. Its loss after k
   runs is ``k t - (k - j) ε`` with ``j ~ Binomial(k, p_t)``, so the hockey-stick
   divergence is an exact binomial sum. Maximised over t, it is a *lower*
   bound on the optimal BR composition (Dong et al. show these pairs are the
   extreme BR mechanisms), so every valid upper bound must dominate it.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, stats


def pair(epsilon: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Output distributions (P, Q) of the binary ε-BR pair with losses {t, t - ε}."""
    p = (math.exp(epsilon) - math.exp(t)) / math.expm1(epsilon)
    P = np.array([p, 1.0 - p])
    Q = np.array([p * math.exp(-t), (1.0 - p) * math.exp(epsilon - t)])
    return P, Q


def kl(P: np.ndarray, Q: np.ndarray) -> float:
    mask = P > 0
    return float(np.sum(P[mask] * np.log(P[mask] / Q[mask])))


def max_kl(epsilon: float) -> float:
    res = optimize.minimize_scalar(
        lambda t: -kl(*pair(epsilon, t)),
        bounds=(0.0, epsilon),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return -res.fun


def kl_route_epsilon(epsilon: float, k: int, delta: float) -> float:
    bound = k * max_kl(epsilon) + math.sqrt(k * epsilon**2 * math.log(1.0 / delta) / 2.0)
    return min(bound, k * epsilon)


def _delta_at(eps_g: float, epsilon: float, k: int, t: float) -> float:
    p = (math.exp(epsilon) - math.exp(t)) / math.expm1(epsilon)
    j = np.arange(k + 1)
    loss = k * t - (k - j) * epsilon
    logpmf = stats.binom.logpmf(j, k, p)
    terms = np.exp(logpmf) * -np.expm1(np.minimum(eps_g - loss, 0.0))
    return float(np.sum(terms[loss > eps_g]))


def worst_pair_epsilon(epsilon: float, k: int, delta: float, t: float) -> float:
    """Smallest ε_g with δ(ε_g) <= delta for the k-fold pair with parameter t."""
    lo, hi = 0.0, k * epsilon
    if _delta_at(0.0, epsilon, k, t) <= delta:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _delta_at(mid, epsilon, k, t) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@functools.cache
def worst_pair_max_epsilon(
    epsilon: float, k: int, delta: float, grid: int = 41
) -> tuple[float, float]:
    """(max over t of worst_pair_epsilon, the maximising t): a grid, then a local refinement."""
    ts = np.linspace(0.0, epsilon, grid)[1:-1]
    values = [worst_pair_epsilon(epsilon, k, delta, float(t)) for t in ts]
    i = int(np.argmax(values))
    lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, len(ts) - 1)]
    res = optimize.minimize_scalar(
        lambda t: -worst_pair_epsilon(epsilon, k, delta, t),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-6},
    )
    if -res.fun > values[i]:
        return -res.fun, float(res.x)
    return values[i], float(ts[i])
