"""Privacy measures of Mukherjee et al. (2008): worst case (amplification) and average case.

Worst case
    Laplace noise of scale ``b_i = b * range_i`` on a value known to lie in a
    range of width ``range_i`` is at most ``e^(1/b)``-amplifying (eq. 8); by
    Theorem 3 (Evfimievski et al.) no upward ``rho1 -> rho2`` breach happens
    when ``rho2 >= gamma rho1 / (1 + (gamma - 1) rho1)`` (eq. 2). This is the
    ε-DP guarantee of the Laplace mechanism with ``epsilon = 1/b`` for one
    value; the paper treats the ``s`` released values of a record separately
    (per column), the joint ratio of a record's ``s`` values is ``e^(s/b)``.

Average case
    The confidence-interval measure (Agrawal & Srikant): if an attacker's
    estimate of an attribute has errors whose central 95% lie in ``[e1,
    e2]``, the attribute's privacy is ``(e2 - e1) / (x_U - x_L)``. We use the
    empirical 2.5% and 97.5% quantiles of ``estimate - truth`` over the
    released rows, divide by the attribute's range (1 after normalisation to
    the declared bounds), and average over attributes.

Examples
--------
>>> round(amplification_bound(0.3), 3), round(amplification_bound(0.25), 3)
(28.032, 54.598)
>>> round(rho2_bound(20.0, 0.001), 6)
0.019627
>>> import numpy as np
>>> truth = np.zeros((1001, 1))
>>> estimate = np.linspace(-0.5, 0.5, 1001)[:, None]
>>> round(average_privacy(estimate, truth), 6)
0.95
"""

from __future__ import annotations

import math

import numpy as np

from ppknn.core.dp import AuditResult, audit
from ppknn.core.errors import ConfigError
from ppknn.protocols.pca_perturbation.sanitize import (
    check_noise_parameter,
    laplace_mechanisms,
    perturb,
)

ADDITIVE_NOISES = ("laplace", "uniform", "normal")


def amplification_bound(b: float) -> float:
    """``e^(1/b)``: the amplification of every released column (eq. 8)."""
    return math.exp(1.0 / check_noise_parameter(b))


def _check_probability(p: float, name: str) -> float:
    if not (isinstance(p, (int, float)) and 0.0 < float(p) < 1.0):
        raise ConfigError(f"{name} must be a probability in (0, 1), got {p!r}")
    return float(p)


def rho2_bound(gamma: float, rho1: float) -> float:
    """The largest posterior ``rho2`` a ``gamma``-amplifying release allows from prior ``rho1``.

    Eq. (2): ``gamma rho1 / (1 + (gamma - 1) rho1)``.
    """
    if not (math.isfinite(gamma) and gamma >= 1.0):
        raise ConfigError(f"gamma must be a finite amplification >= 1, got {gamma!r}")
    rho1 = _check_probability(rho1, "rho1")
    return gamma * rho1 / (1.0 + (gamma - 1.0) * rho1)


def breach_excluded(rho1: float, rho2: float, gamma: float) -> bool:
    """Theorem 3 / eq. (1): no ``rho1 -> rho2`` breach if ``rho2 (1 - rho1) / (rho1 (1 - rho2)) > gamma``."""  # noqa: E501
    rho1 = _check_probability(rho1, "rho1")
    rho2 = _check_probability(rho2, "rho2")
    if not rho1 < rho2:
        raise ConfigError(f"a breach needs rho1 < rho2, got rho1={rho1}, rho2={rho2}")
    return rho2 * (1.0 - rho1) / (rho1 * (1.0 - rho2)) > gamma


def domain_amplification(components: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Amplification over the whole normalised domain ``[0, 1]^m`` rather than the data.

    Score ``i`` of any point of the unit cube lies in an interval of width
    ``||a_i||_1`` (``a_i`` the ``i``-th component), so a record outside the
    training data's score range can be amplified up to ``exp(||a_i||_1 / b_i)``.
    """
    comps = np.atleast_2d(np.asarray(components, dtype=np.float64))
    return np.exp(np.abs(comps).sum(axis=1) / np.asarray(scales, dtype=np.float64))


def interval_widths(estimate: np.ndarray, truth: np.ndarray, *, level: float = 0.95
                    ) -> np.ndarray:
    """Per attribute: width of the central ``level`` interval of ``estimate - truth``."""
    est = np.asarray(estimate, dtype=np.float64)
    tru = np.asarray(truth, dtype=np.float64)
    if est.shape != tru.shape or est.ndim != 2:
        raise ConfigError(f"estimate {est.shape} and truth {tru.shape} must be equal 2-D shapes")
    level = _check_probability(level, "level")
    err = est - tru  # a fresh array: partitioned in place
    n = len(err)
    if n == 1:
        return np.zeros(err.shape[1])
    tail = (1.0 - level) / 2.0
    # linear interpolation between order statistics, as numpy.quantile's default
    pos = np.array([tail, 1.0 - tail]) * (n - 1)
    low = np.floor(pos).astype(np.int64)
    frac = pos - low
    err.partition(sorted({int(i) for i in np.concatenate([low, np.minimum(low + 1, n - 1)])}),
                  axis=0)
    q = [err[lo] + f * (err[min(lo + 1, n - 1)] - err[lo]) for lo, f in zip(low, frac)]
    return q[1] - q[0]


def average_privacy(estimate: np.ndarray, truth: np.ndarray, *,
                    ranges: np.ndarray | float = 1.0, level: float = 0.95) -> float:
    """Mean over attributes of the 95% interval width divided by the attribute's range."""
    widths = interval_widths(estimate, truth, level=level)
    r = np.broadcast_to(np.asarray(ranges, dtype=np.float64), widths.shape)
    if not np.all(r > 0):
        raise ConfigError("attribute ranges must be > 0")
    return float(np.mean(widths / r))


def audit_column(*, low: float, high: float, noise: str, scale: float, n_samples: int,
                 rng: np.random.Generator, confidence: float = 0.95) -> AuditResult:
    """Empirical lower confidence bound on the log amplification of one released column.

    Outputs for a record at ``low`` and one at ``high`` (the ends of the
    column's range) are drawn ``n_samples`` times each and handed to
    :func:`core.dp.audit`. ``noise="laplace"`` uses the sanitizer's own path
    (:func:`~protocols.pca_perturbation.sanitize.laplace_mechanisms` with
    ``b = scale`` and :func:`~protocols.pca_perturbation.sanitize.perturb`),
    so ``exp(eps_lower)`` may not exceed ``e^(1/b)`` except with probability
    ``1 - confidence``. ``"uniform"`` and ``"normal"`` add noise of standard
    deviation ``scale`` (Rand-U, Rand-N), whose amplification is unbounded.
    """
    if noise not in ADDITIVE_NOISES:
        raise ConfigError(f"noise must be one of {list(ADDITIVE_NOISES)}, got {noise!r}")
    if not high > low:
        raise ConfigError(f"need high > low, got low={low}, high={high}")
    if noise == "laplace":
        mechs = laplace_mechanisms(np.array([high - low]), scale)

        def draw(x: float, gen: np.random.Generator, n: int) -> np.ndarray:
            return perturb(np.full((n, 1), x), mechs, gen)[:, 0]
    elif noise == "uniform":
        half = scale * math.sqrt(3.0)

        def draw(x: float, gen: np.random.Generator, n: int) -> np.ndarray:
            return x + gen.uniform(-half, half, size=n)
    else:
        def draw(x: float, gen: np.random.Generator, n: int) -> np.ndarray:
            return x + gen.normal(0.0, scale, size=n)
    return audit(draw, float(low), float(high), n_samples=n_samples, rng=rng,
                 confidence=confidence, vectorized=True)


__all__ = [
    "ADDITIVE_NOISES",
    "amplification_bound",
    "audit_column",
    "average_privacy",
    "breach_excluded",
    "domain_amplification",
    "interval_widths",
    "rho2_bound",
]
