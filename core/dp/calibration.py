"""Noise calibration for the Gaussian mechanism (pure functions).

Three calibrations, all for an L2 sensitivity ``sensitivity``:

* :func:`analytic_gaussian_sigma` -- the smallest sigma for which the Gaussian
  mechanism is (ε, δ)-DP, from the exact privacy profile of Balle & Wang
  (ICML 2018, Theorem 8). Used in ``reproducible`` mode. Valid for every ε > 0.
* :func:`classic_gaussian_sigma` -- ``sensitivity * sqrt(2 ln(1.25/δ)) / ε``
  (Dwork & Roth, Theorem A.1; only valid for ε < 1). Kept for comparison.
* :func:`zcdp_gaussian_sigma` -- the sigma giving ρ-zCDP with
  ``ρ = sensitivity**2 / (2 sigma**2)``, where ρ is the largest value whose
  conversion (:func:`zcdp_to_delta`) meets (ε, δ). Used in ``secure`` mode,
  because the multivariate *discrete* Gaussian is ρ-zCDP with the same ρ for
  integer shifts (Canonne, Kamath & Steinke 2020, Prop. 5 and Thm. 14), while
  the analytic profile is only proven for the continuous one.

Examples
--------
>>> s = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
>>> round(s, 3)
3.731
>>> gaussian_delta(s, 1.0, 1.0) <= 1e-5
True
>>> round(classic_gaussian_sigma(0.5, 1e-5, 1.0), 3)
9.69
"""

from __future__ import annotations

import math

from ppknn.core.dp.validation import check_delta, check_epsilon, check_sensitivity


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Return the exact δ(ε) of the continuous Gaussian mechanism (Balle & Wang, Thm. 8).

    ``δ = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ)``.
    """
    from scipy import special  # lazily: a party that never uses it never loads scipy

    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = math.exp(special.log_ndtr(a - b))
    second = math.exp(epsilon + special.log_ndtr(-a - b))
    return max(0.0, first - second)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with ``gaussian_delta(sigma, epsilon, sensitivity) <= delta``."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_sensitivity(sensitivity)

    def excess(log_sigma: float) -> float:
        return math.log(max(gaussian_delta(math.exp(log_sigma), epsilon, 1.0), 1e-300)) - math.log(
            delta
        )

    from scipy import optimize  # lazily: parties that never calibrate never load it

    lo, hi = math.log(1e-6), math.log(1e6)
    log_sigma = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14)
    sigma = math.exp(log_sigma)
    while gaussian_delta(sigma, epsilon, 1.0) > delta:  # make sure we land on the safe side
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-12)
    return sigma * sensitivity


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``sensitivity * sqrt(2 ln(1.25/δ)) / ε`` (Dwork & Roth, Thm. A.1; ε < 1)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_sensitivity(sensitivity)
    if epsilon >= 1:
        from ppknn.core.errors import ConfigError

        raise ConfigError(f"the classic Gaussian bound needs epsilon < 1, got {epsilon!r}")
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Cor. 13).

    ``δ = inf_{α>1} exp((α-1)(αρ-ε)) (α-1)^(α-1) / α^α``.
    """

    def log_delta(log_am1: float) -> float:
        am1 = math.exp(log_am1)
        alpha = am1 + 1.0
        return am1 * (alpha * rho - epsilon) + am1 * math.log(am1) - alpha * math.log(alpha)

    from scipy import optimize

    res = optimize.minimize_scalar(
        log_delta, bounds=(-20.0, 20.0), method="bounded", options={"xatol": 1e-10}
    )
    return min(1.0, math.exp(min(res.fun, log_delta(res.x))))


def zcdp_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma whose ρ = Δ²/(2σ²) converts to (ε, δ) via :func:`zcdp_to_delta`."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_sensitivity(sensitivity)
    lo, hi = 1e-12, epsilon + 10.0  # rho range; zcdp_to_delta increases with rho
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if zcdp_to_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-13:
            break
    return sensitivity / math.sqrt(2.0 * lo)


__all__ = [
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "zcdp_gaussian_sigma",
    "zcdp_to_delta",
]
