"""Additive noise mechanisms: Laplace, geometric (discrete Laplace) and Gaussian.

Every mechanism is a frozen, keyword-only dataclass that knows its guarantee
(``epsilon``, ``delta``, :attr:`cost`), its noise (``scale``, ``variance``) and
its error (:meth:`error_bound`). :meth:`randomise` takes a scalar or an array
(vectorised over the whole batch) and an explicit randomness source, and
returns a :class:`Release` that records the mechanism, the guarantee and the
sampling mode.

``mode="reproducible"`` draws from the given :class:`numpy.random.Generator`
(or reproducible :class:`~core.rng.RandomSource`). ``mode="secure"`` rounds to
a power-of-two grid and adds exact integer noise from OS entropy (see
:mod:`core.dp.samplers` for the construction and the cost of rounding).

Examples
--------
>>> import numpy as np
>>> mech = Laplace(epsilon=0.5, sensitivity=1.0)
>>> mech.scale, mech.variance
(2.0, 8.0)
>>> r = mech.randomise(np.zeros(4), np.random.default_rng(1))
>>> r.mechanism, r.epsilon, r.mode.value, r.value.shape
('laplace', 0.5, 'reproducible', (4,))
>>> Laplace(epsilon=0.5, mode="secure").randomise(3.0).mode.value
'secure'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ppknn.core.dp import samplers
from ppknn.core.dp.accounting import PrivacyCost
from ppknn.core.dp.calibration import analytic_gaussian_sigma, zcdp_gaussian_sigma
from ppknn.core.dp.validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_integer_sensitivity,
    check_mode,
    check_probability,
    check_sensitivity,
)
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode


class PureDP:
    """Pure ε-DP mechanisms: δ is 0 and one release costs ``PrivacyCost(epsilon, 0)``."""

    epsilon: float

    @property
    def delta(self) -> float:
        """Always 0 (pure ε-DP)."""
        return 0.0

    @property
    def cost(self) -> PrivacyCost:
        """``PrivacyCost(epsilon, 0)``."""
        return PrivacyCost(self.epsilon, 0.0)


@dataclass(frozen=True)
class Release:
    """The output of one mechanism call.

    Attributes
    ----------
    value:
        The noisy value(s): a float/int for scalar input, else an array of the
        input's shape (selection mechanisms: the chosen indices).
    mechanism:
        The mechanism's name, e.g. ``"laplace"``.
    epsilon, delta:
        The privacy cost of this release as a whole. Additive mechanisms
        calibrate to the sensitivity of the whole value (ε once); a batch of
        Q selections or of n smooth-sensitivity scalars on the same data
        costs Q·ε (n·ε); planar Laplace is ε per point, each point being its
        own secret (geo-indistinguishability).
    mode:
        How the noise was sampled (``reproducible`` or ``secure``).
    """

    value: Any
    mechanism: str
    epsilon: float
    delta: float
    mode: RandomnessMode

    @property
    def cost(self) -> PrivacyCost:
        """The release's (ε, δ) as a :class:`~core.dp.accounting.PrivacyCost`."""
        return PrivacyCost(self.epsilon, self.delta)


def _shape_out(arr: np.ndarray, out: np.ndarray) -> Any:
    return out.reshape(arr.shape) if arr.ndim else out.reshape(()).item()


def _set(obj: object, **values: Any) -> None:
    for name, value in values.items():
        object.__setattr__(obj, name, value)


@dataclass(frozen=True, kw_only=True)
class Laplace(PureDP):
    """The Laplace mechanism: ``value + Laplace(sensitivity / epsilon)``; ε-DP.

    Parameters
    ----------
    epsilon:
        Privacy parameter, > 0.
    sensitivity:
        L1 sensitivity of the released value(s), > 0.
    mode:
        ``"reproducible"`` (numpy) or ``"secure"`` (grid + exact discrete Laplace).
    """

    epsilon: float
    sensitivity: float = 1.0
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE
    _grid: int = field(init=False, repr=False, compare=False, default=0)
    _steps: int = field(init=False, repr=False, compare=False, default=0)

    name = "laplace"

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        sens = check_sensitivity(self.sensitivity)
        k = samplers.grid_exponent(sens)
        _set(
            self,
            epsilon=eps,
            sensitivity=sens,
            mode=check_mode(self.mode),
            _grid=k,
            _steps=samplers.grid_steps(sens, k),
        )

    @property
    def scale(self) -> float:
        """Noise scale b; in secure mode ``2**k * ceil(sensitivity / 2**k) / epsilon``."""
        if self.mode is RandomnessMode.SECURE:
            return float(Fraction(self._steps) * Fraction(2) ** self._grid / Fraction(self.epsilon))
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """Noise variance ``2 b**2``."""
        return 2.0 * self.scale**2

    def error_bound(self, beta: float = 0.05) -> float:
        """Return the t with ``P(|noise| > t) = beta``: ``b ln(1/beta)``."""
        beta = check_probability(beta, name="beta")
        return self.scale * math.log(1.0 / beta)

    def randomise(self, value: Any, rng: Any = None) -> Release:
        """Add noise to ``value`` (scalar or array, vectorised)."""
        arr = check_finite_array(value)
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            scale_steps = Fraction(self._steps) / Fraction(self.epsilon)
            base = samplers.snap_to_grid(arr, self._grid)
            noise = samplers.secure_discrete_laplace(scale_steps, arr.shape, entropy)
            out = samplers.from_grid(
                [b + z for b, z in zip(base, noise, strict=True)], self._grid, arr.shape
            )
        else:
            gen = samplers.resolve_generator(rng)
            out = arr + samplers.laplace_noise(self.scale, arr.shape, gen)
        return Release(_shape_out(arr, out), self.name, self.epsilon, 0.0, self.mode)


@dataclass(frozen=True, kw_only=True)
class Geometric(PureDP):
    """The geometric mechanism: integer value + discrete Laplace noise; ε-DP.

    Noise has ``P(z) ∝ exp(-epsilon |z| / sensitivity)`` on the integers
    (Ghosh, Roughgarden & Sundararajan 2009). Both modes are exact on the
    integers; ``secure`` uses OS entropy and the CKS sampler.

    Parameters
    ----------
    epsilon:
        Privacy parameter, > 0.
    sensitivity:
        Integer L1 sensitivity (>= 1) of the integer-valued query.
    mode:
        ``"reproducible"`` or ``"secure"``.

    Examples
    --------
    >>> import numpy as np
    >>> g = Geometric(epsilon=1.0)
    >>> round(g.variance, 4)
    1.8413
    >>> g.randomise([3, 4], np.random.default_rng(0)).value.dtype
    dtype('int64')
    """

    epsilon: float
    sensitivity: int = 1
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "geometric"

    def __post_init__(self) -> None:
        _set(
            self,
            epsilon=check_epsilon(self.epsilon),
            sensitivity=check_integer_sensitivity(self.sensitivity),
            mode=check_mode(self.mode),
        )

    @property
    def scale(self) -> float:
        """``sensitivity / epsilon`` (the noise law is ∝ exp(-|z| / scale))."""
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """``2a / (1 - a)**2`` with ``a = exp(-1/scale)``."""
        a = math.exp(-1.0 / self.scale)
        return 2.0 * a / (-math.expm1(-1.0 / self.scale)) ** 2

    def error_bound(self, beta: float = 0.05) -> int:
        """Return the smallest integer t with ``P(|noise| > t) <= beta``."""
        beta = check_probability(beta, name="beta")
        a = math.exp(-1.0 / self.scale)
        # P(|Z| > t) = 2 a**(t+1) / (1 + a)
        t = math.log(beta * (1 + a) / 2) / math.log(a) - 1
        return max(0, math.ceil(t - 1e-12))

    def randomise(self, value: Any, rng: Any = None) -> Release:
        """Add integer noise to an integer-valued ``value`` (scalar or array)."""
        arr = check_finite_array(value)
        if not np.all(arr == np.round(arr)):
            raise ConfigError(f"the geometric mechanism needs integer values, got {value!r}")
        raw = np.asarray(value)
        ints = raw.astype(np.int64) if raw.dtype.kind in "iu" else arr.astype(np.int64)
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            scale = Fraction(self.sensitivity) / Fraction(self.epsilon)
            noise = np.array(
                samplers.secure_discrete_laplace(scale, arr.shape, entropy), dtype=np.int64
            ).reshape(arr.shape)
        else:
            gen = samplers.resolve_generator(rng)
            noise = samplers.discrete_laplace_noise(self.scale, arr.shape, gen)
        return Release(_shape_out(arr, ints + noise), self.name, self.epsilon, 0.0, self.mode)


@dataclass(frozen=True, kw_only=True)
class Gaussian:
    """The Gaussian mechanism: ``value + N(0, sigma**2)``; (ε, δ)-DP.

    ``reproducible`` mode uses the *analytic* Gaussian calibration of Balle &
    Wang (2018), the smallest sigma that is (ε, δ)-DP for any ε > 0.
    ``secure`` mode adds exact discrete Gaussian noise on a power-of-two grid
    (step <= ``2**-GRID_BITS * sensitivity / sqrt(d)`` for d coordinates) and
    calibrates sigma through zero-concentrated DP, which is proven for the
    multivariate discrete Gaussian (CKS 2020); that sigma is about 8% larger.

    Parameters
    ----------
    epsilon:
        Privacy parameter, > 0.
    delta:
        In ``(0, 1)``.
    sensitivity:
        L2 sensitivity of the released vector, > 0.
    mode:
        ``"reproducible"`` or ``"secure"``.

    Examples
    --------
    >>> g = Gaussian(epsilon=1.0, delta=1e-5)
    >>> round(g.scale, 3)
    3.731
    >>> round(Gaussian(epsilon=1.0, delta=1e-5, mode="secure").scale, 3)
    4.045
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE
    _sigma: float = field(init=False, repr=False, compare=False, default=0.0)

    name = "gaussian"

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        delta = check_delta(self.delta, allow_zero=False)
        sens = check_sensitivity(self.sensitivity)
        mode = check_mode(self.mode)
        if mode is RandomnessMode.SECURE:  # rounding adds <= 2**-GRID_BITS relative sensitivity
            sigma = zcdp_gaussian_sigma(eps, delta, sens * (1 + 2.0**-samplers.GRID_BITS))
        else:
            sigma = analytic_gaussian_sigma(eps, delta, sens)
        _set(self, epsilon=eps, delta=delta, sensitivity=sens, mode=mode, _sigma=sigma)

    @property
    def cost(self) -> PrivacyCost:
        """``PrivacyCost(epsilon, delta)``."""
        return PrivacyCost(self.epsilon, self.delta)

    @property
    def scale(self) -> float:
        """The noise standard deviation sigma."""
        return self._sigma

    @property
    def variance(self) -> float:
        """``sigma**2``."""
        return self._sigma**2

    def error_bound(self, beta: float = 0.05) -> float:
        """Return the t with ``P(|noise| > t) = beta`` per coordinate."""
        from scipy import special  # lazily: a party that never uses it never loads scipy

        beta = check_probability(beta, name="beta")
        return self._sigma * float(special.ndtri(1.0 - beta / 2.0))

    def randomise(self, value: Any, rng: Any = None) -> Release:
        """Add noise to ``value`` (scalar or vector; sensitivity is over the whole vector)."""
        arr = check_finite_array(value)
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            k = samplers.grid_exponent(self.sensitivity / math.sqrt(max(arr.size, 1)))
            sigma2 = Fraction(math.ldexp(self._sigma, -k)) ** 2
            base = samplers.snap_to_grid(arr, k)
            noise = samplers.secure_discrete_gaussian(sigma2, arr.shape, entropy)
            out = samplers.from_grid(
                [b + z for b, z in zip(base, noise, strict=True)], k, arr.shape
            )
        else:
            gen = samplers.resolve_generator(rng)
            out = arr + samplers.gaussian_noise(self._sigma, arr.shape, gen)
        return Release(_shape_out(arr, out), self.name, self.epsilon, self.delta, self.mode)


__all__ = ["Gaussian", "Geometric", "Laplace", "Release"]
