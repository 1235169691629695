"""How much one released mean leaks: the exact loss and the DP core's empirical auditor.

One smooth-sensitivity release of a trimmed mean is ``T(x) + (S(x)/α) Z``,
a location-scale family in ``(T(x), S(x)/α)``. For the pure noises
(polynomial tail, Cauchy, and the paper's constant) the privacy loss between
two datasets is therefore computable exactly: ``sup_t |ln p_x(t) - ln p_y(t)|``
over a fine grid of outputs, tails included (:func:`exact_loss`).
:func:`audit_mean` runs :func:`core.dp.audit` on the same pair -- a
statistically valid *lower* bound from samples -- and :func:`worst_pair`
searches random small neighbouring datasets for the largest exact loss.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_nb.noise import SmoothCalibration
>>> cal = SmoothCalibration(noise="polynomial", epsilon=1.0)
>>> x = list(np.arange(1.0, 11.0)); y = x + [20.0]
>>> loss = exact_loss(x, y, cal, trim=1, lower=0.0, upper=20.0)
>>> 0.0 < loss < 1.0
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ppknn.core.dp import AuditResult, audit
from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_nb.noise import SmoothCalibration
from ppknn.protocols.dp_nb.sensitivity import smooth_sensitivity, trimmed_statistics


@dataclass(frozen=True)
class MeanAudit:
    """Claimed, exact and audited ε of one trimmed-mean release on a neighbouring pair."""

    claimed: float
    exact: float
    audited: AuditResult
    proven: bool


def _release_params(values: Sequence[float], cal: SmoothCalibration, trim: int, lower: float,
                    upper: float, neighbours: str) -> tuple[float, float]:
    st = trimmed_statistics(values, trim=trim, lower=lower, upper=upper)
    s = smooth_sensitivity(values, trim=trim, lower=lower, upper=upper, beta=cal.beta,
                           neighbours=neighbours)
    return st.mean, float(cal.scale(s.mean))


def _gamma(cal: SmoothCalibration) -> float:
    if cal.noise == "polynomial":
        return cal.gamma
    if cal.noise in ("cauchy", "paper"):
        return 2.0
    raise ConfigError(f"the exact loss needs a pure noise (polynomial, cauchy, paper), got "
                      f"{cal.noise!r}")


def exact_loss(x: Sequence[float], y: Sequence[float], cal: SmoothCalibration, *, trim: int,
               lower: float, upper: float, neighbours: str = "add-remove") -> float:
    """``sup_t |ln p_x(t) - ln p_y(t)|`` of the mean release on ``x`` and ``y``."""
    g = _gamma(cal)
    tx, bx = _release_params(x, cal, trim, lower, upper, neighbours)
    ty, by = _release_params(y, cal, trim, lower, upper, neighbours)
    b = max(bx, by)
    centre = np.linspace(min(tx, ty) - 50 * b, max(tx, ty) + 50 * b, 200_001)
    tails = np.geomspace(b * 1e-3, b * 1e12, 4_001)
    t = np.concatenate([centre, tx + tails, tx - tails, ty + tails, ty - tails])

    def logpdf(mu: float, scale: float) -> np.ndarray:
        return -np.log1p(np.abs((t - mu) / scale) ** g) - np.log(scale)

    return float(np.max(np.abs(logpdf(tx, bx) - logpdf(ty, by))))


def mean_mechanism(cal: SmoothCalibration, *, trim: int, lower: float, upper: float,
                   neighbours: str = "add-remove") -> Callable:
    """``(dataset, rng, n) -> n`` releases of its trimmed mean (for :func:`core.dp.audit`)."""
    def release(values, rng, n):
        mu, scale = _release_params(values, cal, trim, lower, upper, neighbours)
        return cal.randomise(np.full(n, mu), np.full(n, scale * cal.alpha), rng).value

    return release


def audit_mean(x: Sequence[float], y: Sequence[float], cal: SmoothCalibration, *, trim: int,
               lower: float, upper: float, n_samples: int, rng: np.random.Generator,
               neighbours: str = "add-remove") -> MeanAudit:
    """The exact loss and the auditor's lower bound on one neighbouring pair."""
    mech = mean_mechanism(cal, trim=trim, lower=lower, upper=upper, neighbours=neighbours)
    result = audit(mech, list(x), list(y), n_samples=n_samples, rng=rng, vectorized=True)
    loss = exact_loss(x, y, cal, trim=trim, lower=lower, upper=upper, neighbours=neighbours)
    return MeanAudit(cal.epsilon, loss, result, cal.proven)


def worst_pair(cal: SmoothCalibration, *, rng: np.random.Generator, trials: int, trim: int,
               lower: float = 0.0, upper: float = 10.0, max_n: int = 12,
               neighbours: str = "add-remove") -> tuple[list[float], list[float], float]:
    """The neighbouring pair with the largest exact loss among ``trials`` random ones."""
    best: tuple[list[float], list[float], float] = ([], [], -1.0)
    for _ in range(trials):
        n = int(rng.integers(2 * trim + 2, max_n + 1))
        x = [float(v) for v in np.round(lower + (upper - lower) * rng.beta(0.5, 0.5, n), 2)]
        new = float(rng.choice([lower, upper, rng.uniform(lower, upper)]))
        i = int(rng.integers(n))
        if neighbours == "replace":
            y = x[:i] + [new] + x[i + 1:]
        else:
            y = x + [new] if rng.random() < 0.5 else x[:i] + x[i + 1:]
        if neighbours == "replace" or len(y) > 0:
            loss = exact_loss(x, y, cal, trim=trim, lower=lower, upper=upper,
                              neighbours=neighbours)
            if loss > best[2]:
                best = (x, y, loss)
    return best


__all__ = ["MeanAudit", "audit_mean", "exact_loss", "mean_mechanism", "worst_pair"]
