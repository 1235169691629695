"""Planar Laplace noise for geo-indistinguishability (Andrés et al. 2013).

The mechanism reports ``z = x + r (cos θ, sin θ)`` for a true point x in the
plane, with θ uniform on ``[0, 2π)`` and radius r drawn from Gamma(2, 1/ε),
whose CDF is ``C(r) = 1 - (1 + εr) e^(-εr)``. Its inverse uses the -1 branch
of the Lambert W function:

    ``r = C^-1(p) = -(W_-1((p - 1) / e) + 1) / ε``.

The density is ∝ ``exp(-ε |z - x|)``, so the mechanism is ε-geo-
indistinguishable: for two points at Euclidean distance d the output
distributions differ by at most a factor ``e^(εd)``. ε is *per unit of
distance* (see Lepert 2022, §2.2). ``E[r] = 2/ε`` and the median of εr is
``-W_-1(-1/(2e)) - 1 ≈ 1.6783``.

``secure`` mode takes its uniforms from the OS CSPRNG and snaps the output to
a grid of ``2**-GRID_BITS / ε`` (see :mod:`core.dp.smooth` for the caveat).

Examples
--------
>>> import numpy as np
>>> pl = PlanarLaplace(epsilon=0.5)
>>> pl.expected_radius
4.0
>>> round(pl.radius_quantile(0.5) * pl.epsilon, 4)
1.6783
>>> pl.randomise([[0.0, 0.0], [1.0, 2.0]], np.random.default_rng(0)).value.shape
(2, 2)
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
)
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode


def planar_radius(p: Any, epsilon: float) -> np.ndarray:
    """Inverse CDF of the planar-Laplace radius: ``-(W_-1((p-1)/e) + 1) / epsilon``."""
    from scipy import special  # lazily: a party that never uses it never loads scipy

    p = np.asarray(p, dtype=np.float64)
    w = special.lambertw((p - 1.0) / math.e, k=-1).real
    return -(w + 1.0) / epsilon


@dataclass(frozen=True, kw_only=True)
class PlanarLaplace:
    """ε-geo-indistinguishable noise for points in the plane.

    Parameters
    ----------
    epsilon:
        Privacy per unit of distance, > 0.
    mode:
        ``"reproducible"`` or ``"secure"``.
    """

    epsilon: float
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "planar_laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "mode", check_mode(self.mode))

    @property
    def delta(self) -> float:
        """Always 0."""
        return 0.0

    @property
    def expected_radius(self) -> float:
        """``E[r] = 2 / epsilon``."""
        return 2.0 / self.epsilon

    @property
    def variance(self) -> float:
        """Variance of each coordinate of the noise: ``E[r**2] / 2 = 3 / epsilon**2``."""
        return 3.0 / self.epsilon**2

    def radius_quantile(self, p: float) -> float:
        """Return the radius r with ``P(|noise| <= r) = p``."""
        p = check_probability(p, name="p")
        return float(planar_radius(p, self.epsilon))

    def error_bound(self, beta: float = 0.05) -> float:
        """Return the radius exceeded with probability beta."""
        return self.radius_quantile(1.0 - check_probability(beta, name="beta"))

    def randomise(self, points: Any, rng: Any = None) -> Release:
        """Perturb a point ``(2,)`` or a batch of points ``(N, 2)``.

        Each point is protected on its own (ε-geo-indistinguishability per
        point); points that are the *same* secret compose sequentially.
        """
        arr = check_finite_array(points, name="points")
        if arr.ndim not in (1, 2) or arr.shape[-1] != 2:
            raise ConfigError(f"points must have shape (2,) or (N, 2), got shape {arr.shape}")
        shape = arr.shape[:-1]
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            u = samplers.secure_uniform((2, *shape), entropy)
            theta, p = 2.0 * math.pi * u[0], u[1]
        else:
            gen = samplers.resolve_generator(rng)
            theta = gen.uniform(0.0, 2.0 * math.pi, size=shape)
            p = gen.random(size=shape)
        r = planar_radius(p, self.epsilon)
        out = arr + np.stack([r * np.cos(theta), r * np.sin(theta)], axis=-1)
        if self.mode is RandomnessMode.SECURE:
            out = samplers.snap(out, samplers.grid_exponent(1.0 / self.epsilon))
        return Release(out, self.name, self.epsilon, 0.0, self.mode)


__all__ = ["PlanarLaplace", "planar_radius"]
