r"""Calibrating noise to a smooth sensitivity: the proven default and the paper's constant.

A release ``f(x) + (S(x) / α) Z`` is private when ``S`` is β-smooth and the
noise ``Z`` is (α, β)-admissible (NRS 2007, Lemma 2.6). :class:`SmoothCalibration`
names the noise family, derives (α, β) for one release's ``(ε, δ)``, and
draws through the DP core's samplers:

``"polynomial"`` (default)
    density ∝ ``1/(1 + |z|**γ)`` (:class:`core.dp.PolynomialTail`),
    ``α = β = ε / (2(γ + 1))``: noise scale ``2(γ + 1) S / ε`` -- Theorem 2
    of the paper, pure ε-DP.
``"cauchy"``
    the γ = 2 member (:class:`core.dp.Cauchy`), ``α = β = ε / 6``.
``"paper"``
    **reproduction option, not a proven calibration.** Cauchy noise of scale
    ``√2 S / ε`` (Algorithm 1, lines 15 and 18) with ``S`` computed at
    ``β = ε`` (the text of §3.1 writes the smooth sensitivity with
    ``e^{-kε}``). Theorem 2 asks for ``β <= ε/6`` and scale ``6 S / ε``.
``"laplace"``, ``"gaussian"`` (need δ > 0)
    the (ε, δ) variants of the paper's §7, with NRS Lemma 2.10's constants
    (as quoted in the literature; the paper does not state them):
    Laplace ``α = ε/2``, ``β = ε / (2 ln(2/δ₀))``; Gaussian
    ``α = ε / (5 √(2 ln(2/δ₀)))``, ``β = ε / (4 (1 + ln(2/δ₀)))``. Applying
    the sliding and the dilation property in turn gives
    ``(ε, (1 + e^{ε/2}) δ₀ / 2)``, so ``δ₀ = 2δ / (1 + e^{ε/2})`` is used to
    reach the claimed δ. ``tests/dpnb`` checks both properties numerically.

Examples
--------
>>> import numpy as np
>>> cal = SmoothCalibration(noise="polynomial", epsilon=0.5, gamma=4.0)
>>> round(cal.beta, 4), round(cal.scale(0.2), 4)
(0.05, 4.0)
>>> paper = SmoothCalibration(noise="paper", epsilon=0.5)
>>> paper.beta, round(paper.scale(0.2), 4), paper.proven
(0.5, 0.5657, False)
>>> r = cal.randomise(np.array([1.0, 2.0]), np.array([0.2, 0.1]), np.random.default_rng(0))
>>> r.value.shape, r.epsilon
((2,), 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp import Cauchy, Laplace, PolynomialTail, Release, samplers
from ppknn.core.dp.validation import check_delta, check_epsilon, check_mode
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode

NOISES = ("polynomial", "cauchy", "paper", "laplace", "gaussian")
APPROXIMATE = ("laplace", "gaussian")


def admissible_delta(epsilon: float, delta: float) -> float:
    """δ₀ such that sliding then dilation add up to δ: ``2δ / (1 + e^{ε/2})``."""
    return 2.0 * delta / (1.0 + math.exp(epsilon / 2.0))


@dataclass(frozen=True, kw_only=True)
class SmoothCalibration:
    """Noise for one smooth-sensitivity release of ``(epsilon, delta)``.

    Parameters
    ----------
    noise:
        One of :data:`NOISES`.
    epsilon:
        ε of this release (> 0, finite).
    delta:
        δ of this release (> 0 for ``"laplace"``/``"gaussian"``, else 0).
    gamma:
        Tail exponent of ``"polynomial"`` (> 1; 4 gives finite variance).
    mode:
        ``"reproducible"`` or ``"secure"`` (``"gaussian"`` supports only the former).
    """

    noise: str = "polynomial"
    epsilon: float
    delta: float = 0.0
    gamma: float = 4.0
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    def __post_init__(self) -> None:
        if self.noise not in NOISES:
            raise ConfigError(f"noise must be one of {list(NOISES)}, got {self.noise!r}")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "mode", check_mode(self.mode))
        if self.noise in APPROXIMATE and self.delta <= 0:
            raise ConfigError(f"noise {self.noise!r} needs delta > 0 (the (epsilon, delta) "
                              f"variant), got delta={self.delta!r}")
        if self.noise not in APPROXIMATE and self.delta != 0:
            raise ConfigError(f"noise {self.noise!r} is pure epsilon-DP; delta must be 0, got "
                              f"{self.delta!r} (use noise='laplace' or 'gaussian' for delta > 0)")
        if self.noise == "gaussian" and self.mode is RandomnessMode.SECURE:
            raise ConfigError("noise 'gaussian' has no secure sampler at a given scale; "
                              "use mode='reproducible' or noise='laplace'")
        if self.noise == "polynomial":
            PolynomialTail(epsilon=self.epsilon, gamma=self.gamma)  # validates gamma

    @property
    def proven(self) -> bool:
        """Whether the calibration has a privacy proof (all but ``"paper"``)."""
        return self.noise != "paper"

    def _family(self) -> Any:
        if self.noise == "polynomial":
            return PolynomialTail(epsilon=self.epsilon, gamma=self.gamma, mode=self.mode)
        return Cauchy(epsilon=self.epsilon, mode=self.mode)

    @property
    def beta(self) -> float:
        """The smoothness the sensitivity must be computed at."""
        if self.noise in ("polynomial", "cauchy"):
            return float(self._family().beta)
        if self.noise == "paper":
            return self.epsilon
        d0 = admissible_delta(self.epsilon, self.delta)
        if self.noise == "laplace":
            return self.epsilon / (2.0 * math.log(2.0 / d0))
        return self.epsilon / (4.0 * (1.0 + math.log(2.0 / d0)))

    @property
    def alpha(self) -> float:
        """Noise scale per unit of smooth sensitivity is ``1 / alpha``."""
        if self.noise in ("polynomial", "cauchy"):
            return float(self._family().alpha)
        if self.noise == "paper":
            return self.epsilon / math.sqrt(2.0)
        if self.noise == "laplace":
            return self.epsilon / 2.0
        d0 = admissible_delta(self.epsilon, self.delta)
        return self.epsilon / (5.0 * math.sqrt(2.0 * math.log(2.0 / d0)))

    def scale(self, smooth_sensitivity: Any) -> Any:
        """The noise scale ``S / alpha`` (a float for a scalar ``S``)."""
        out = np.asarray(smooth_sensitivity, dtype=np.float64) / self.alpha
        return float(out) if out.ndim == 0 else out

    def randomise(self, value: Any, smooth_sensitivity: Any, rng: Any) -> Release:
        """Release ``value + (S / alpha) Z`` (element-wise; each element is one release).

        The returned :class:`~core.dp.Release` carries this calibration's ``(ε, δ)``
        per element, times the number of elements (sequential composition); callers
        releasing on disjoint data account with parallel composition themselves.
        """
        arr = np.asarray(value, dtype=np.float64)
        scale = np.broadcast_to(self.scale(smooth_sensitivity), arr.shape)
        count = max(arr.size, 1)
        if np.any(scale <= 0):
            raise ConfigError("smooth sensitivity must be > 0 for every element")
        if self.noise in ("polynomial", "cauchy", "paper"):
            family = self._family()
            # the family adds (S'/alpha_family) Z: pass S' = scale * alpha_family
            out = family.randomise(arr, scale * family.alpha, rng).value
        elif self.noise == "laplace" and self.mode is RandomnessMode.REPRODUCIBLE:
            gen = samplers.resolve_generator(rng)
            out = arr + scale * samplers.laplace_noise(1.0, arr.shape, gen)
        elif self.noise == "laplace":  # secure: exact discrete Laplace on a grid, per element
            flat = [Laplace(epsilon=1.0, sensitivity=float(s), mode=self.mode).randomise(v, rng)
                    .value for v, s in zip(arr.ravel(), scale.ravel())]
            out = np.asarray(flat, dtype=np.float64).reshape(arr.shape)
        else:
            gen = samplers.resolve_generator(rng)
            out = arr + scale * samplers.gaussian_noise(1.0, arr.shape, gen)
        value_out = out if arr.ndim else float(out)
        return Release(value_out, f"smooth-{self.noise}", self.epsilon * count,
                       min(self.delta * count, math.nextafter(1.0, 0.0)), self.mode)


__all__ = ["APPROXIMATE", "NOISES", "SmoothCalibration", "admissible_delta"]
