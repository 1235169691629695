"""Exact samplers for ``secure`` mode (Canonne, Kamath & Steinke 2020).

Floating-point noise leaks: Mironov (2012) showed that the low-order bits of
``f(x) + Laplace(b)`` computed in doubles reveal ``f(x)``, because the set of
doubles a naive sampler can output depends on the input. The samplers here
never touch floating point. Every probability is a :class:`fractions.Fraction`
and every random choice is an exact uniform integer from an :class:`Entropy`
source, following Algorithms 1-3 of Canonne, Kamath & Steinke, *The Discrete
Gaussian for Differential Privacy* (NeurIPS 2020) -- the same algorithms
OpenDP uses for its secure samplers:

* :func:`bernoulli_exp` -- Bernoulli(exp(-gamma)) for rational ``gamma >= 0``;
* :func:`discrete_laplace` -- P(z) proportional to exp(-|z| / scale) on the integers;
* :func:`discrete_gaussian` -- P(z) proportional to exp(-z**2 / (2 sigma**2));
* :func:`exponential_mechanism_index` and :func:`permute_and_flip_index` --
  exact selection for the exponential mechanism and report-noisy-max with
  exponential noise (McKenna & Sheldon 2020; Ding et al. 2021).

The output distributions are exact provided the entropy source is uniform.
:class:`SystemEntropy` (the default) reads the operating system's CSPRNG
through :func:`os.urandom`. :class:`SeededEntropy` replays a seeded
:class:`random.Random` so tests can check the algorithms; it must never be
used for a real release.

Examples
--------
>>> from fractions import Fraction
>>> ent = SeededEntropy(3)
>>> draws = [discrete_laplace(Fraction(2), ent) for _ in range(5)]
>>> all(isinstance(z, int) for z in draws)
True
>>> bernoulli_exp(Fraction(0), ent)
True
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from fractions import Fraction

from ppknn.core.errors import ConfigError


class SystemEntropy:
    """Uniform integers and bytes from the operating system's CSPRNG.

    Random bits are read from :func:`os.urandom` in blocks (one system call
    per ``block`` bytes instead of one per draw) and consumed in order, each
    bit once. Integers below ``n`` are drawn by rejection, so they are exactly
    uniform. An instance is not thread-safe: give each thread (or each
    mechanism call, as :func:`core.dp.samplers.resolve_entropy` does) its own.
    """

    name = "os"

    def __init__(self, block: int = 512) -> None:
        self._block = block
        self._pool = 0  # unused random bits, least significant first
        self._nbits = 0

    def randbytes(self, n: int) -> bytes:
        """Return ``n`` uniform bytes."""
        return os.urandom(n)

    def randbelow(self, n: int) -> int:
        """Return a uniform integer in ``[0, n)``."""
        if n < 1:
            raise ValueError(f"randbelow needs n >= 1, got {n}")
        bits = (n - 1).bit_length()
        mask = (1 << bits) - 1
        while True:
            if self._nbits < bits:
                fresh = max(self._block, (bits + 7) // 8)
                self._pool |= int.from_bytes(os.urandom(fresh), "little") << self._nbits
                self._nbits += 8 * fresh
            x = self._pool & mask
            self._pool >>= bits
            self._nbits -= bits
            if x < n:
                return x


class SeededEntropy:
    """A *seeded* stand-in for :class:`SystemEntropy` -- for tests only.

    Secure-mode sampling driven by this class repeats from the seed, which
    defeats its purpose outside tests of the sampling algorithms.
    """

    name = "seeded-test"

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbelow(self, n: int) -> int:
        """Return a uniform integer in ``[0, n)``."""
        return self._random.randrange(n)

    def randbytes(self, n: int) -> bytes:
        """``n`` uniform bytes."""
        return self._random.randbytes(n)


Entropy = SystemEntropy | SeededEntropy


def _as_fraction(value: Fraction | int, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (Fraction, int)):
        raise TypeError(f"{name} must be a Fraction or int, got {type(value).__name__}")
    return Fraction(value)


def bernoulli(p: Fraction, entropy: Entropy) -> bool:
    """Exact Bernoulli(p) for rational ``p`` in ``[0, 1]``."""
    if not 0 <= p <= 1:
        raise ConfigError(f"probability must be in [0, 1], got {p}")
    return entropy.randbelow(p.denominator) < p.numerator


def bernoulli_exp(gamma: Fraction | int, entropy: Entropy) -> bool:
    """Exact Bernoulli(exp(-gamma)) for rational ``gamma >= 0`` (CKS Algorithm 1)."""
    gamma = _as_fraction(gamma, "gamma")
    if gamma < 0:
        raise ConfigError(f"gamma must be >= 0, got {gamma}")
    return _bernoulli_exp_ratio(gamma.numerator, gamma.denominator, entropy)


def _bernoulli_exp_ratio(num: int, den: int, entropy: Entropy) -> bool:
    """Bernoulli(exp(-num/den)) for integers ``num >= 0``, ``den >= 1``."""
    whole, rest = divmod(num, den)
    for _ in range(whole):  # exp(-gamma) = exp(-1)**whole * exp(-rest/den)
        if not _bernoulli_exp_unit(1, 1, entropy):
            return False
    return _bernoulli_exp_unit(rest, den, entropy)


def _bernoulli_exp_unit(num: int, den: int, entropy: Entropy) -> bool:
    """Bernoulli(exp(-gamma)) for ``gamma = num/den`` in [0, 1].

    Draw Bernoulli(gamma/k) for k = 1, 2, ... until one fails; the answer is
    whether the failing k is odd. (``randbelow(den k) < num`` is Bernoulli(gamma/k).)
    """
    k = 1
    while entropy.randbelow(den * k) < num:
        k += 1
    return k % 2 == 1


def discrete_laplace(scale: Fraction | int, entropy: Entropy) -> int:
    """One exact draw with P(z) proportional to exp(-|z| / scale) (CKS Algorithm 2).

    Parameters
    ----------
    scale:
        A positive rational number ``t / s``.
    entropy:
        The source of uniform integers.
    """
    scale = _as_fraction(scale, "scale")
    if scale <= 0:
        raise ConfigError(f"scale must be > 0, got {scale}")
    return _discrete_laplace(scale.numerator, scale.denominator, entropy)


def _discrete_laplace(t: int, s: int, entropy: Entropy) -> int:
    while True:
        u = entropy.randbelow(t)
        if not _bernoulli_exp_ratio(u, t, entropy):
            continue
        v = 0
        while _bernoulli_exp_unit(1, 1, entropy):
            v += 1
        y = (u + t * v) // s
        negative = entropy.randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2: Fraction | int, entropy: Entropy) -> int:
    """One exact draw with P(z) proportional to exp(-z**2 / (2 sigma2)) (CKS Algorithm 3)."""
    sigma2 = _as_fraction(sigma2, "sigma2")
    if sigma2 <= 0:
        raise ConfigError(f"sigma2 must be > 0, got {sigma2}")
    a, b = sigma2.numerator, sigma2.denominator  # sigma2 = a / b
    t = math.isqrt(a // b) + 1  # floor(sigma) + 1
    den = 2 * a * b * t * t
    while True:
        y = _discrete_laplace(t, 1, entropy)
        # accept with exp(-(|y| - sigma2/t)**2 / (2 sigma2)) = exp(-(|y| b t - a)**2 / den)
        if _bernoulli_exp_ratio((abs(y) * b * t - a) ** 2, den, entropy):
            return y


def _gaps(utilities: Sequence[float], eta: Fraction) -> list[tuple[int, int]]:
    exact = [Fraction(u) for u in utilities]  # floats convert exactly
    if not exact:
        raise ConfigError("need at least one candidate, got none")
    best = max(exact)
    gaps = [eta * (best - u) for u in exact]
    return [(g.numerator, g.denominator) for g in gaps]


def exponential_mechanism_index(utilities: Sequence[float], eta: Fraction, entropy: Entropy) -> int:
    """Exact draw of index i with probability proportional to exp(eta * u_i).

    Rejection sampling: propose i uniformly, accept with probability
    ``exp(-eta (max u - u_i))``; the accepted index has exactly the
    exponential-mechanism distribution. Expected proposals are at most the
    number of candidates.
    """
    gaps = _gaps(utilities, eta)
    while True:
        i = entropy.randbelow(len(gaps))
        if _bernoulli_exp_ratio(*gaps[i], entropy):
            return i


def permute_and_flip_index(utilities: Sequence[float], eta: Fraction, entropy: Entropy) -> int:
    """Exact permute-and-flip (equal in law to report-noisy-max with Exp(1/eta) noise).

    Visit candidates in a uniformly random order and stop at the first one
    whose coin ``Bernoulli(exp(-eta (max u - u_i)))`` lands; the best
    candidate always stops the pass.
    """
    gaps = _gaps(utilities, eta)
    order = list(range(len(gaps)))
    for j in range(len(order) - 1, 0, -1):  # Fisher-Yates with exact integers
        k = entropy.randbelow(j + 1)
        order[j], order[k] = order[k], order[j]
    for i in order:
        if _bernoulli_exp_ratio(*gaps[i], entropy):
            return i
    raise AssertionError("unreachable: the best candidate always accepts")  # pragma: no cover


__all__ = [
    "Entropy",
    "SeededEntropy",
    "SystemEntropy",
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential_mechanism_index",
    "permute_and_flip_index",
]
