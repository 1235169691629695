"""Admissible noise for smooth sensitivity (Nissim, Raskhodnikova & Smith 2007).

A noise density h is *(α, β)-admissible* when sliding it by at most α and
dilating it by a factor ``e^λ`` with ``|λ| <= β`` each change the probability
of any event by at most a factor ``e^(ε/2)``. Then, for any β-smooth upper
bound S(x) on the local sensitivity of f,

    ``x -> f(x) + (S(x) / α) * Z``,   Z ~ h,

is ε-DP. Each noise below reports the ``alpha`` and ``beta`` it needs:

* :class:`PolynomialTail` -- density ∝ ``1 / (1 + |z|**γ)``, γ > 1:
  ``alpha = beta = ε / (2(γ+1))`` (NRS Lemma 2.7, as quoted by Zafarani & Clifton);
* :class:`Cauchy` -- the γ = 2 case: ``alpha = beta = ε / 6``;
* :class:`StudentT` -- density ∝ ``(1 + z**2/d)**(-(d+1)/2)``, d >= 1:
  ``alpha = ε √d / (d+1)``, ``beta = ε / (2d)``.

The Student-t constants are derived here from the definition: ``|d/dz ln h|``
peaks at ``(d+1)/(2√d)`` (sliding) and ``|λ + ln h(e^λ z) - ln h(z)| <= d|λ|``
(dilation); ``tests/dp`` checks all three numerically on a grid.

The guarantee is for one scalar release. An array of n values is released as
n scalar releases: the :class:`~core.dp.mechanisms.Release` carries ``n * ε``
(sequential composition), which is conservative.

``secure`` mode draws uniforms from the OS CSPRNG, transforms them in floating
point and snaps the output to a grid of ``2**-GRID_BITS`` times the noise
scale. This removes the low-order-bit channel of Mironov's attack in the way
his snapping mechanism does, but unlike the Laplace/Gaussian/geometric
samplers it has no formal floating-point analysis.

Examples
--------
>>> import numpy as np
>>> c = Cauchy(epsilon=0.6)
>>> round(c.alpha, 4), round(c.beta, 4), c.scale_for(0.5)
(0.1, 0.1, 5.0)
>>> r = c.randomise(1.0, 0.5, np.random.default_rng(0))
>>> r.mechanism, r.epsilon
('cauchy', 0.6)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp import samplers
from ppknn.core.dp.mechanisms import Release
from ppknn.core.dp.validation import (
    check_epsilon,
    check_finite_array,
    check_mode,
    check_probability,
    check_real,
)
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode


def _check_smooth_sensitivity(value: Any) -> np.ndarray:
    arr = check_finite_array(value, name="smooth_sensitivity")
    if np.any(arr <= 0):
        raise ConfigError(f"smooth_sensitivity must be > 0, got {value!r}")
    return arr


class _SmoothNoise:
    """Shared behaviour; subclasses define alpha, beta and the standard noise."""

    epsilon: float
    mode: RandomnessMode
    name = "smooth"

    @property
    def delta(self) -> float:
        """Always 0 (pure ε-DP)."""
        return 0.0

    @property
    def alpha(self) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def scale_for(self, smooth_sensitivity: float) -> float:
        """Return the noise scale ``S / alpha`` for a smooth sensitivity S."""
        return float(check_real(smooth_sensitivity, "smooth_sensitivity")) / self.alpha

    def _standard(self, shape: tuple[int, ...], gen: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _standard_from_uniform(self, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _abs_quantile(self, q: float) -> float:
        raise NotImplementedError  # pragma: no cover

    def error_bound(self, smooth_sensitivity: float, beta: float = 0.05) -> float:
        """Return the t with ``P(|noise| > t) = beta`` at smooth sensitivity S."""
        beta = check_probability(beta, name="beta")
        return self.scale_for(smooth_sensitivity) * self._abs_quantile(1.0 - beta)

    def randomise(self, value: Any, smooth_sensitivity: Any, rng: Any = None) -> Release:
        """Release ``value + (S / alpha) Z`` (S broadcast against ``value``)."""
        arr = check_finite_array(value)
        sens = _check_smooth_sensitivity(smooth_sensitivity)
        scale = np.broadcast_to(sens / self.alpha, arr.shape)
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            z = self._standard_from_uniform(samplers.secure_uniform(arr.shape, entropy))
            k = samplers.grid_exponent(float(np.min(scale)))
            out = samplers.snap(arr + scale * z, k)
        else:
            gen = samplers.resolve_generator(rng)
            out = arr + scale * self._standard(arr.shape, gen)
        value_out = out.reshape(arr.shape) if arr.ndim else float(out)
        eps = self.epsilon * max(arr.size, 1)
        return Release(value_out, self.name, eps, 0.0, self.mode)


@dataclass(frozen=True, kw_only=True)
class PolynomialTail(_SmoothNoise):
    """Noise with density ∝ ``1 / (1 + |z|**gamma)``, gamma > 1 (NRS Lemma 2.7).

    Sampled as ``|Z| = (B / (1 - B))**(1/gamma)`` with ``B ~ Beta(1/gamma, 1 - 1/gamma)``
    and a fair random sign (|Z|**gamma is beta-prime distributed).
    """

    epsilon: float
    gamma: float = 4.0
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "polynomial_tail"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        gamma = check_real(self.gamma, "gamma")
        if gamma <= 1:
            raise ConfigError(f"gamma must be a finite number > 1, got {self.gamma!r}")
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "mode", check_mode(self.mode))

    @property
    def alpha(self) -> float:
        """``epsilon / (2 (gamma + 1))``."""
        return self.epsilon / (2.0 * (self.gamma + 1.0))

    @property
    def beta(self) -> float:
        """``epsilon / (2 (gamma + 1))``: the smoothness the sensitivity bound needs."""
        return self.epsilon / (2.0 * (self.gamma + 1.0))

    @property
    def variance_factor(self) -> float:
        """``Var(Z) = sin(pi/gamma) / sin(3 pi/gamma)`` for gamma > 3, else inf."""
        if self.gamma <= 3:
            return math.inf
        return math.sin(math.pi / self.gamma) / math.sin(3 * math.pi / self.gamma)

    def _standard(self, shape, gen):
        b = gen.beta(1.0 / self.gamma, 1.0 - 1.0 / self.gamma, size=shape)
        sign = np.where(gen.random(size=shape) < 0.5, -1.0, 1.0)
        return sign * (b / (1.0 - b)) ** (1.0 / self.gamma)

    def _standard_from_uniform(self, u):
        sign = np.where(u < 0.5, -1.0, 1.0)
        v = np.abs(2.0 * u - 1.0)  # uniform on (0, 1), independent of the sign
        from scipy import special  # lazily: a party that never uses it never loads scipy

        b = special.betaincinv(1.0 / self.gamma, 1.0 - 1.0 / self.gamma, v)
        return sign * (b / (1.0 - b)) ** (1.0 / self.gamma)

    def _abs_quantile(self, q):
        from scipy import special  # lazily: a party that never uses it never loads scipy

        b = special.betaincinv(1.0 / self.gamma, 1.0 - 1.0 / self.gamma, q)
        return float((b / (1.0 - b)) ** (1.0 / self.gamma))


@dataclass(frozen=True, kw_only=True)
class Cauchy(_SmoothNoise):
    """Standard Cauchy noise (the gamma = 2 member of :class:`PolynomialTail`).

    ``alpha = beta = epsilon / 6``: release ``f(x) + 6 S(x) / epsilon * Z`` for
    an ``epsilon/6``-smooth bound S. (The Zafarani-Clifton paper's
    ``sqrt(2) S / epsilon'`` constant is a reproduction option of that
    protocol, not this default.)
    """

    epsilon: float
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "cauchy"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "mode", check_mode(self.mode))

    @property
    def alpha(self) -> float:
        """``epsilon / 6``."""
        return self.epsilon / 6.0

    @property
    def beta(self) -> float:
        """``epsilon / 6``."""
        return self.epsilon / 6.0

    variance_factor = math.inf

    def _standard(self, shape, gen):
        return gen.standard_cauchy(size=shape)

    def _standard_from_uniform(self, u):
        return np.tan(np.pi * (u - 0.5))

    def _abs_quantile(self, q):
        return math.tan(math.pi * q / 2.0)


@dataclass(frozen=True, kw_only=True)
class StudentT(_SmoothNoise):
    """Student-t noise with ``dof`` degrees of freedom (pure ε-DP via admissibility).

    ``alpha = epsilon sqrt(dof) / (dof + 1)``, ``beta = epsilon / (2 dof)``
    (derived in the module docstring). Variance ``dof / (dof - 2)`` for dof > 2.
    """

    epsilon: float
    dof: float = 3.0
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "student_t"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        dof = check_real(self.dof, "dof")
        if dof < 1:
            raise ConfigError(f"dof must be a finite number >= 1, got {self.dof!r}")
        object.__setattr__(self, "dof", dof)
        object.__setattr__(self, "mode", check_mode(self.mode))

    @property
    def alpha(self) -> float:
        """``epsilon sqrt(dof) / (dof + 1)``."""
        return self.epsilon * math.sqrt(self.dof) / (self.dof + 1.0)

    @property
    def beta(self) -> float:
        """``epsilon / (2 dof)``."""
        return self.epsilon / (2.0 * self.dof)

    @property
    def variance_factor(self) -> float:
        """``dof / (dof - 2)`` for dof > 2, else inf."""
        return self.dof / (self.dof - 2.0) if self.dof > 2 else math.inf

    def _standard(self, shape, gen):
        return gen.standard_t(self.dof, size=shape)

    def _standard_from_uniform(self, u):
        from scipy import stats  # lazily: scipy.stats costs parties seconds of start-up

        return stats.t.ppf(u, self.dof)

    def _abs_quantile(self, q):
        from scipy import stats

        return float(stats.t.ppf(0.5 + q / 2.0, self.dof))


__all__ = ["Cauchy", "PolynomialTail", "StudentT"]
