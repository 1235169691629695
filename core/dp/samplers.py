"""Noise sampling in the two randomness modes.

``reproducible``
    Vectorised numpy draws from an explicit :class:`numpy.random.Generator`
    (never the global one). Fast and repeatable from the scenario seed, but
    *not* safe against the floating-point attack of Mironov (2012): use it for
    experiments, not deployments.

``secure``
    Values are first rounded to a power-of-two grid ``2**k`` and the noise is
    an exact integer on that grid, drawn by the Canonne-Kamath-Steinke
    samplers in :mod:`core.dp.exact` from operating-system entropy. The output
    ``2**k * (round(value / 2**k) + Z)`` is a deterministic function of an
    integer-valued ε-DP release, so its floating-point representation cannot
    leak. This is what OpenDP does for ``make_laplace``/``make_gaussian`` on
    floats; it is chosen over Mironov's snapping mechanism because it is exact
    (no clamping bound, no ``(1 + 12 B 2**-52)`` slack on ε) and needs no
    floating-point logarithm at all.

    *Cost of rounding.* Rounding to the grid can move two neighbouring values
    apart by up to one grid step, so the integer sensitivity is
    ``ceil(sensitivity / 2**k)`` grid steps (exact, because ``2**k`` is a power
    of two) and the noise is calibrated to it: the noise scale grows by a
    factor of at most ``1 + 2**-GRID_BITS`` and the released value carries an
    extra rounding error of at most half a step. ε is unchanged.

For distributions with no exact discrete counterpart (Cauchy, Student-t,
planar Laplace) secure mode draws uniforms from the OS CSPRNG and *snaps* the
output to the grid (Mironov's remedy without its formal accounting); see
:func:`secure_uniform` and :func:`snap`.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> laplace_noise(1.0, (3,), rng).shape
(3,)
>>> grid_exponent(1.0)  # a grid of 2**-20 for a unit sensitivity
-20
>>> snap_to_grid(np.array([0.75, -1.5]), -1)
[2, -3]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ppknn.core.dp.exact import (
    Entropy,
    SeededEntropy,
    SystemEntropy,
    discrete_gaussian,
    discrete_laplace,
)
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode, RandomSource

GRID_BITS = 20
"""Grid resolution in ``secure`` mode: the grid step is about ``2**-GRID_BITS``
times the sensitivity (Laplace, geometric) or the noise scale (Gaussian)."""


# ------------------------------------------------------------ randomness source
def resolve_generator(rng: object) -> np.random.Generator:
    """Return the numpy generator for ``reproducible`` mode.

    ``rng`` must be a :class:`numpy.random.Generator` or a reproducible
    :class:`~core.rng.RandomSource`. A *secure* ``RandomSource`` is refused:
    the caller asked for deployment-grade randomness, so a mechanism built in
    reproducible mode (float-unsafe sampling) must not silently serve it.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, RandomSource):
        if rng.mode is RandomnessMode.SECURE:
            raise ConfigError(
                "a secure RandomSource was passed to a mechanism in 'reproducible' mode; "
                "construct the mechanism with mode='secure'"
            )
        return rng.generator
    if rng is None:
        raise ConfigError(
            "reproducible mode needs an explicit numpy Generator or RandomSource as rng "
            "(no global random state is used), got None"
        )
    raise TypeError(f"rng must be a numpy Generator or RandomSource, got {type(rng).__name__}")


def resolve_entropy(rng: object) -> Entropy:
    """Return the entropy source for ``secure`` mode.

    Secure mode draws from the operating system whatever ``rng`` is: a fresh
    :class:`~core.dp.exact.SystemEntropy` per call, so no bit pool is ever
    shared between threads. Only a :class:`~core.dp.exact.SeededEntropy`
    (tests only) is used as given.
    """
    if isinstance(rng, SeededEntropy):
        return rng
    return SystemEntropy()


# ---------------------------------------------------------------- grid helpers
def grid_exponent(length: float, bits: int = GRID_BITS) -> int:
    """Return the ``k`` with ``2**k <= length * 2**-bits < 2**(k + 1)``."""
    if not (math.isfinite(length) and length > 0):
        raise ConfigError(f"grid length must be a finite number > 0, got {length!r}")
    _, exponent = math.frexp(length)  # length = m * 2**exponent, 0.5 <= m < 1
    return exponent - 1 - bits


def grid_steps(length: float, k: int) -> int:
    """``ceil(length / 2**k)``, computed exactly."""
    return math.ceil(Fraction(length) / Fraction(2) ** k)


def snap_to_grid(values: np.ndarray, k: int) -> list[int]:
    """Round each value to the nearest multiple of ``2**k``; return the multiples.

    ``value / 2**k`` is exact in binary floating point, and Python's
    ``round`` turns a float into the nearest integer exactly (ties to even).
    """
    return [round(math.ldexp(float(v), -k)) for v in np.asarray(values, dtype=float).ravel()]


def from_grid(steps: list[int], k: int, shape: tuple[int, ...]) -> np.ndarray:
    """Multiples of ``2**k`` back to floats (post-processing of the exact integers)."""
    return np.array([math.ldexp(float(n), k) for n in steps], dtype=np.float64).reshape(shape)


def snap(values: np.ndarray, k: int) -> np.ndarray:
    """Round values to the nearest multiple of ``2**k`` (as floats)."""
    arr = np.asarray(values, dtype=np.float64)
    return np.ldexp(np.rint(np.ldexp(arr, -k)), k)


# ------------------------------------------------------ reproducible (numpy)
def laplace_noise(scale: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Continuous Laplace(0, scale) noise from a seeded generator."""
    return rng.laplace(0.0, scale, size=shape)


def gaussian_noise(sigma: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Normal(0, sigma**2) noise from a seeded generator."""
    return rng.normal(0.0, sigma, size=shape)


def discrete_laplace_noise(
    scale: float, shape: tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Integer noise with P(z) proportional to exp(-|z| / scale).

    The difference of two i.i.d. geometric variables with success probability
    ``1 - exp(-1/scale)`` has exactly this law.
    """
    p = -math.expm1(-1.0 / scale)
    return rng.geometric(p, size=shape).astype(np.int64) - rng.geometric(p, size=shape)


# ------------------------------------------------------------ secure (exact)
def secure_discrete_laplace(scale: Fraction, shape: tuple[int, ...], entropy: Entropy) -> list[int]:
    """``prod(shape)`` exact discrete Laplace draws (flat list of Python ints)."""
    return [discrete_laplace(scale, entropy) for _ in range(math.prod(shape))]


def secure_discrete_gaussian(
    sigma2: Fraction, shape: tuple[int, ...], entropy: Entropy
) -> list[int]:
    """``prod(shape)`` exact discrete Gaussian draws (flat list of Python ints)."""
    return [discrete_gaussian(sigma2, entropy) for _ in range(math.prod(shape))]


def secure_uniform(shape: tuple[int, ...], entropy: Entropy) -> np.ndarray:
    """Uniform floats in the open interval (0, 1) on the 2**-53 grid, from CSPRNG bytes."""
    count = math.prod(shape)
    words = np.frombuffer(entropy.randbytes(8 * count), dtype=np.uint64) >> np.uint64(11)
    return ((words.astype(np.float64) + 0.5) * 2.0**-53).reshape(shape)


__all__ = [
    "GRID_BITS",
    "resolve_entropy",
    "resolve_generator",
    "discrete_laplace_noise",
    "from_grid",
    "gaussian_noise",
    "grid_exponent",
    "grid_steps",
    "laplace_noise",
    "secure_discrete_gaussian",
    "secure_discrete_laplace",
    "secure_uniform",
    "snap",
    "snap_to_grid",
]
