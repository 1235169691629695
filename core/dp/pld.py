"""Privacy-loss distributions (PLDs): tight composition of mechanisms with known loss laws.

A mechanism M with a *dominating pair* (P, Q) -- for every pair of
neighbouring inputs, M's output laws are no further apart than P and Q in
every hockey-stick divergence -- has the privacy loss ``L = ln(P(o)/Q(o))``,
``o ~ P``; M is (ε, δ(ε))-DP with

    δ(ε) = E[(1 - e^(ε - L))_+] + P(L = +∞).

The loss of a composition of such mechanisms (their parameters fixed in
advance) is the *sum* of independent losses, so its law is the convolution
of theirs (Meiser & Mohammadi 2018; Koskela, Jälkö & Honkela 2020; Zhu,
Dong & Wang 2022). This module holds the loss laws of

* :class:`LaplaceLoss` -- Laplace noise of scale b on an L1 sensitivity Δ,
  ``epsilon = Δ / b`` (the one-coordinate pair dominates the vector case);
* :class:`GaussianLoss` -- Gaussian noise σ on an L2 sensitivity Δ, ``mu = Δ / σ``;
* :class:`DiscreteLaplaceLoss` -- integer noise ``∝ exp(-ε|z| / Δ)``, integer Δ
  (the :class:`~core.dp.mechanisms.Geometric` mechanism, and the secure
  Laplace, which draws it on a grid);
* :class:`RandomisedResponseLoss` -- binary randomised response; with
  ``delta`` it is the (ε, δ) pair that dominates *every* (ε, δ)-DP mechanism
  (Kairouz, Oh & Viswanath 2015), so report noisy max (ε-DP) uses it;
* :class:`BoundedRangeLoss` -- the pair that dominates every ε-bounded-range
  mechanism (Dong, Durfee & Rogers 2020), the exponential mechanism among them;

and :class:`PLD`, a loss law discretised on the grid ``interval * Z``.

Pessimism. Every loss value is rounded *up* to the grid, mass in the lower
tail is merged upwards, mass in the upper tail beyond ``TAIL_MASS`` is moved
to ``+∞`` and a bound on the floating-point error of each convolution is
added to δ. Each step can only raise δ(ε), so the composed (ε, δ) is an upper
bound on the exact composition. The rounding costs at most one interval of ε
per release (half an interval on average).

All the laws here are symmetric (the pair (Q, P) has the same loss law as
(P, Q)), which add/remove neighbours need.

Examples
--------
>>> round(compose_epsilon([LaplaceLoss(0.1)] * 100, 1e-6), 4)
4.693
>>> round(compose_epsilon([GaussianLoss(0.5)] * 4, 1e-6), 4)
4.8868
>>> LaplaceLoss(1.0).pld().delta(1.0)  # no loss above ε: pure 1-DP
0.0
>>> round(compose_epsilon([BoundedRangeLoss(1.0)] * 16, 1e-5), 4)
10.6908
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppknn.core.dp.accounting import PrivacyCost
from ppknn.core.dp.validation import check_delta, check_epsilon, check_positive_int, check_real
from ppknn.core.errors import ConfigError

INTERVAL = 1e-4
"""Default grid interval of the losses (dp-accounting's default too)."""

TAIL_MASS = 1e-15
"""Mass allowed in each truncated tail (the upper one counts fully towards δ)."""

_ULP = 2.0**-52


def _grid_up(values: np.ndarray, interval: float) -> np.ndarray:
    """Grid indices j with ``j * interval >= value`` (ties and float error rounded up)."""
    idx = np.ceil(values / interval).astype(np.int64)
    idx += (idx * interval < values)  # float error in the division
    return idx


@dataclass(frozen=True, eq=False)
class PLD:
    """A privacy-loss law on the grid ``interval * Z`` (plus mass at ``+∞``).

    Parameters
    ----------
    interval:
        The grid step of the losses, > 0.
    offset:
        Grid index of ``masses[0]``: it sits at loss ``offset * interval``.
    masses:
        Non-negative masses of consecutive grid points.
    infinity:
        Mass at loss ``+∞`` (δ that no ε covers).
    error:
        An upper bound on the floating-point error in the masses, added to δ.
    """

    interval: float
    offset: int
    masses: np.ndarray = field(repr=False)
    infinity: float = 0.0
    error: float = 0.0

    def __post_init__(self) -> None:
        m = np.asarray(self.masses, dtype=np.float64)
        m = np.where(m > 0, m, 0.0)  # float error of a convolution can dip below 0
        m.setflags(write=False)
        object.__setattr__(self, "masses", m)

    # -------------------------------------------------------------- building
    @classmethod
    def from_atoms(cls, losses: Sequence[float], masses: Sequence[float], *,
                   interval: float = INTERVAL, infinity: float = 0.0) -> PLD:
        """Discretise a finite loss law: each loss rounded up to the grid."""
        interval = _check_interval(interval)
        idx = _grid_up(np.asarray(losses, dtype=np.float64), interval)
        lo = int(idx.min())
        out = np.zeros(int(idx.max()) - lo + 1)
        np.add.at(out, idx - lo, np.asarray(masses, dtype=np.float64))
        return cls(interval, lo, out, float(infinity))

    @classmethod
    def from_cdf(cls, cdf: Any, lo: float, hi: float, *, interval: float = INTERVAL) -> PLD:
        """Discretise a loss law with support in ``[lo, hi]`` and right-continuous ``cdf``.

        The grid point ``j * interval`` gets ``P((j-1) interval < L <= j interval)``.
        """
        interval = _check_interval(interval)
        j0, j1 = (int(j) for j in _grid_up(np.array([lo, hi]), interval))
        grid = np.arange(j0, j1, dtype=np.float64) * interval
        below = np.concatenate([[0.0], np.clip(cdf(grid), 0.0, 1.0), [1.0]])
        return cls(interval, j0, np.diff(below).clip(0.0))._trimmed()

    # ---------------------------------------------------------------- queries
    @property
    def losses(self) -> np.ndarray:
        """The grid losses of :attr:`masses`."""
        return (self.offset + np.arange(len(self.masses))) * self.interval

    def delta(self, epsilon: float) -> float:
        """δ(ε) = Σ p_j (1 - e^(ε - l_j))_+ + P(+∞) (+ the error bound)."""
        eps = check_real(epsilon, "epsilon")
        losses = self.losses
        above = losses > eps
        tail = float(np.sum(self.masses[above] * -np.expm1(eps - losses[above])))
        return min(1.0, tail + self.infinity + self.error)

    def epsilon(self, delta: float) -> float:
        """The smallest ε >= 0 with ``delta(ε) <= delta`` (``inf`` when none)."""
        delta = check_delta(delta, allow_zero=True)
        if self.infinity + self.error > delta:
            return math.inf
        if self.delta(0.0) <= delta:
            return 0.0
        losses, m = self.losses, self.masses
        top = max(float(losses[-1]), 0.0)
        if self.delta(top) > delta:  # only the error bound can be left here
            return math.inf
        # on [l_(j-1), l_j): δ(ε) = P_j - e^ε Q_j with P_j = Σ_(i>=j) p_i + P(∞) + error and
        # Q_j = Σ_(i>=j) p_i e^-l_i; solve in every piece, keep the first that lands in it
        tail_p = np.cumsum(m[::-1])[::-1] + self.infinity + self.error
        tail_q = np.cumsum((m * np.exp(-losses))[::-1])[::-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.log((tail_p - delta) / tail_q)
        start = np.concatenate([[-math.inf], losses[:-1]])
        ok = np.flatnonzero((eps >= start) & (eps <= losses) & np.isfinite(eps))
        hi = top if not len(ok) else max(float(eps[ok[0]]), 0.0)
        for _ in range(64):  # the closed form is checked; float error is paid upwards
            if self.delta(hi) <= delta:
                return hi
            hi = hi + max(abs(hi), 1.0) * 2.0**-40
        return top
    # ------------------------------------------------------------ composition
    def compose(self, other: PLD) -> PLD:
        """The loss law of running both mechanisms: the convolution of the two."""
        from scipy import signal  # on first use: a party's import stays light
        if not isinstance(other, PLD):
            raise TypeError(f"expected a PLD, got {type(other).__name__}")
        if other.interval != self.interval:
            raise ConfigError(f"cannot compose PLDs on grids {self.interval!r} and "
                              f"{other.interval!r}; build both with the same interval")
        a, b = self.masses, other.masses
        if min(len(a), len(b)) <= 64:
            conv = np.convolve(a, b)  # direct: exact up to rounding of each product
            err = 0.0
        else:
            small, big = (a, b) if len(a) <= len(b) else (b, a)
            method = signal.oaconvolve if len(small) * 8 < len(big) else signal.fftconvolve
            conv = method(big, small)
            # FFT convolution (Higham 2002, Sec. 24.1): the 2-norm of the error is at most
            # about 3 k (||a||_2 + ||b||_2) for inputs of 1-norm <= 1 with k = 10 u log2 n;
            # δ is a sum of at most n of its entries with weights <= 1: sqrt(n) times that
            n = len(conv)
            norms = math.sqrt(float(np.sum(np.square(a)))) + math.sqrt(float(np.sum(np.square(b))))
            err = math.sqrt(n) * 3 * 10 * _ULP * math.log2(n) * norms
        inf = self.infinity + other.infinity - self.infinity * other.infinity
        return PLD(self.interval, self.offset + other.offset, conv, inf,
                   self.error + other.error + err)._trimmed()

    def self_compose(self, k: int) -> PLD:
        """``k`` runs of this mechanism (by repeated squaring)."""
        k = check_positive_int(k, name="k")
        result: PLD | None = None
        base: PLD = self
        while k:
            if k & 1:
                result = base if result is None else result.compose(base)
            k >>= 1
            if k:
                base = base.compose(base)
        assert result is not None
        return result

    def _trimmed(self) -> PLD:
        """Merge the lower tail upwards and move the upper tail to ``+∞`` (both pessimistic)."""
        m = self.masses
        if len(m) == 0:
            return self
        low = np.cumsum(m)
        first = int(np.searchsorted(low, TAIL_MASS, side="right"))
        high = np.cumsum(m[::-1])
        drop_top = int(np.searchsorted(high, TAIL_MASS, side="right"))
        last = len(m) - drop_top  # exclusive
        if first >= last:  # keep at least the top bin of the body
            first, drop_top, last = max(last - 1, 0), len(m) - max(last, 1), max(last, 1)
        body = m[first:last].copy()
        body[0] += float(low[first - 1]) if first > 0 else 0.0
        moved = float(high[drop_top - 1]) if drop_top > 0 else 0.0
        return PLD(self.interval, self.offset + first, body, min(1.0, self.infinity + moved),
                   self.error)


def _check_interval(interval: Any) -> float:
    h = check_real(interval, "interval")
    if not 0 < h <= 0.1:
        raise ConfigError(f"interval (the PLD grid step) must be in (0, 0.1], got {interval!r}")
    return h


# --------------------------------------------------------------------------- loss laws
@dataclass(frozen=True)
class LaplaceLoss:
    """Laplace noise of scale b on an L1 sensitivity Δ: ``epsilon = Δ / b`` (ε-DP).

    Under P = Lap(0, b) against Q = Lap(Δ, b) the loss is ε with probability
    1/2, -ε with probability e^-ε / 2 and ``ε - 2o/b`` for ``0 < o < Δ``.
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def cost(self) -> PrivacyCost:
        """``PrivacyCost(epsilon, 0)``."""
        return PrivacyCost(self.epsilon)

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The discretised loss law."""
        eps = self.epsilon

        def cdf(x: np.ndarray) -> np.ndarray:
            return np.where(x >= eps, 1.0, 0.5 * np.exp(-(eps - np.minimum(x, eps)) / 2.0))

        return PLD.from_cdf(cdf, -eps, eps, interval=interval)


@dataclass(frozen=True)
class GaussianLoss:
    """Gaussian noise σ on an L2 sensitivity Δ: ``mu = Δ / σ``; the loss is N(μ²/2, μ²)."""

    mu: float

    def __post_init__(self) -> None:
        mu = check_real(self.mu, "mu")
        if not mu > 0:
            raise ConfigError(f"mu (sensitivity / sigma) must be a finite number > 0, "
                              f"got {self.mu!r}")
        object.__setattr__(self, "mu", mu)

    @classmethod
    def from_sigma(cls, sigma: float, sensitivity: float = 1.0) -> GaussianLoss:
        """The law of noise ``sigma`` on L2 sensitivity ``sensitivity``."""
        return cls(check_real(sensitivity, "sensitivity") / check_real(sigma, "sigma"))

    def delta(self, epsilon: float) -> float:
        """The exact δ(ε) (Balle & Wang 2018): ``Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ)``."""
        from scipy import special  # on first use: a party's import stays light
        mu, eps = self.mu, check_real(epsilon, "epsilon")
        return float(special.ndtr(mu / 2 - eps / mu) - math.exp(eps) * special.ndtr(
            -mu / 2 - eps / mu))

    @property
    def cost(self) -> PrivacyCost:
        """Not defined alone: a Gaussian is (ε, δ)-DP on a curve (use :meth:`delta`)."""
        raise ConfigError("a GaussianLoss has no single (epsilon, delta); give the mechanism "
                          "(core.dp.Gaussian), whose cost is declared, or use GaussianLoss.delta")

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The discretised loss law (tails beyond 10 standard deviations pessimistically)."""
        from scipy import special  # on first use: a party's import stays light
        mean, sd = self.mu**2 / 2, self.mu
        lo, hi = mean - 10 * sd, mean + 10 * sd

        def cdf(x: np.ndarray) -> np.ndarray:
            return special.ndtr((x - mean) / sd)

        body = PLD.from_cdf(cdf, lo, hi, interval=interval)
        above = float(special.ndtr(-10.0))  # P(L > hi) goes to +∞; P(L < lo) is in bin 0
        return PLD(body.interval, body.offset, body.masses, min(1.0, body.infinity + above),
                   body.error)


@dataclass(frozen=True)
class DiscreteLaplaceLoss:
    """Integer noise with ``P(z) ∝ exp(-epsilon |z| / sensitivity)``, integer sensitivity."""

    epsilon: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity",
                           check_positive_int(self.sensitivity, name="sensitivity"))

    @property
    def cost(self) -> PrivacyCost:
        """``PrivacyCost(epsilon, 0)``."""
        return PrivacyCost(self.epsilon)

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The discretised loss law (finitely many atoms)."""
        eps, d = self.epsilon, self.sensitivity
        a = math.exp(-eps / d)
        z = np.arange(1, d)
        losses = np.concatenate([[eps, -eps], eps * (d - 2 * z) / d])
        masses = np.concatenate([[1 / (1 + a), a**d / (1 + a)], (1 - a) / (1 + a) * a**z])
        return PLD.from_atoms(losses, masses, interval=interval)


@dataclass(frozen=True)
class RandomisedResponseLoss:
    """Binary randomised response: the worst case of every (ε, δ)-DP mechanism.

    Loss ε with probability ``(1-δ) e^ε / (1 + e^ε)``, -ε with ``(1-δ) / (1 + e^ε)``
    and ``+∞`` with δ (Kairouz, Oh & Viswanath 2015).
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))

    @property
    def cost(self) -> PrivacyCost:
        """``PrivacyCost(epsilon, delta)``."""
        return PrivacyCost(self.epsilon, self.delta)

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The discretised loss law (two atoms and ``+∞``)."""
        eps, d = self.epsilon, self.delta
        p = 1.0 / (1.0 + math.exp(-eps))
        return PLD.from_atoms([eps, -eps], [(1 - d) * p, (1 - d) * (1 - p)],
                              interval=interval, infinity=d)


@dataclass(frozen=True)
class BoundedRangeLoss:
    """Every ε-bounded-range (ε-BR) mechanism at once: the exponential mechanism's law.

    A mechanism is ε-BR when, for neighbouring inputs, its privacy loss stays in
    an interval ``[t - ε, t]`` for some ``t ∈ [0, ε]`` (Dong, Durfee & Rogers
    2020; the exponential mechanism with utility sensitivity Δ and weights
    ``exp(ε u / 2Δ)``, or ``exp(ε u / Δ)`` for monotonic utilities, is ε-BR).
    With its loss confined there and ``E_P[e^-L] = 1``, the hockey-stick
    divergence ``E_P[(1 - e^(ε' - L))_+]`` (convex in ``e^-L``) is largest for the
    two-point law on the interval's ends: loss ``t`` with probability
    ``p_t = (e^ε - e^t) / (e^ε - 1)``, else ``t - ε`` -- DDR's extreme pairs. Over
    ``t`` their largest δ at ``0 <= ε' <= ε`` is

        ``δ(ε') = max_t p_t (1 - e^(ε' - t)) = (e^(ε/2) - e^(ε'/2))² / (e^ε - 1)``

    at ``t = (ε + ε') / 2``. That curve is the privacy profile of the symmetric
    pair whose loss has the density ``e^(ε/2) e^(l/2) / (2 (e^ε - 1))`` on
    ``[-ε, ε]`` (integrate ``(1 - e^(ε' - l))`` against it), so this pair
    dominates every ε-BR mechanism and, composed, every composition of them --
    adaptive ones included, since dominating pairs compose (Zhu, Dong & Wang
    2022, Thm. 10). It is tighter than randomised response (δ(0) = tanh(ε/4)
    against tanh(ε/2)) and than DDR's closed-form bound
    (:func:`~core.dp.accounting.bounded_range_epsilon`): 16 releases at ε = 1
    give 10.69 at δ = 1e-5, against 11.57 and 16. It does not reach DDR's
    optimum for a non-adaptive run of equal mechanisms, which takes one ``t``
    for all of them (9.56 there): one pair for every ``t`` pays for mixing them.
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def cost(self) -> PrivacyCost:
        """``PrivacyCost(epsilon, 0)`` (an ε-BR mechanism is ε-DP)."""
        return PrivacyCost(self.epsilon)

    def delta(self, epsilon: float) -> float:
        """The exact δ(ε') of one release: ``(e^(ε/2) - e^(ε'/2))² / (e^ε - 1)``, 0 above ε."""
        eps, e = self.epsilon, check_real(epsilon, "epsilon")
        if e < 0:
            raise ConfigError(f"epsilon must be >= 0 here, got {epsilon!r}")
        if e >= eps:
            return 0.0
        return math.exp(e) * math.expm1((eps - e) / 2) ** 2 / math.expm1(eps)

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The discretised loss law: ``P(L <= x) = (e^((x + ε)/2) - 1) / (e^ε - 1)``."""
        eps = self.epsilon

        def cdf(x: np.ndarray) -> np.ndarray:
            return np.expm1((np.clip(x, -eps, eps) + eps) / 2) / math.expm1(eps)

        return PLD.from_cdf(cdf, -eps, eps, interval=interval)


@dataclass(frozen=True)
class MechanismLoss:
    """A mechanism's declared (ε, δ) together with the loss law that bounds it.

    What :func:`loss_model` returns for a mechanism: ``cost`` is what basic
    composition charges, ``law`` what the PLD accountant composes.
    """

    cost: PrivacyCost
    law: Any

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The law's discretised PLD."""
        return self.law.pld(interval)


@dataclass(frozen=True)
class Composite:
    """Several releases paid as one (e.g. a private radius, then the labels)."""

    parts: tuple[Any, ...]

    def __post_init__(self) -> None:
        parts = tuple(self.parts)
        if not parts:
            raise ConfigError("a Composite needs at least one part, got none")
        for p in parts:
            if not callable(getattr(p, "pld", None)):
                raise TypeError(f"every part needs a loss law (.pld), got {type(p).__name__}")
        object.__setattr__(self, "parts", parts)

    @property
    def cost(self) -> PrivacyCost:
        """The parts' costs added (basic composition)."""
        costs = [p.cost for p in self.parts]
        return PrivacyCost(math.fsum(c.epsilon for c in costs),
                           min(math.fsum(c.delta for c in costs), math.nextafter(1.0, 0.0)))

    def pld(self, interval: float = INTERVAL) -> PLD:
        """The parts' laws composed."""
        return compose([p for p in self.parts], interval=interval)


LAWS = (LaplaceLoss, GaussianLoss, DiscreteLaplaceLoss, RandomisedResponseLoss,
        BoundedRangeLoss)


def loss_model(release: Any) -> Any | None:
    """The loss law of a release, or ``None`` when it has no known one.

    Accepts the laws above, :class:`MechanismLoss`, :class:`Composite`, and the
    core mechanisms: reproducible :class:`~core.dp.mechanisms.Laplace`
    (:class:`LaplaceLoss`), secure Laplace and
    :class:`~core.dp.mechanisms.Geometric` (:class:`DiscreteLaplaceLoss` in
    grid steps), reproducible :class:`~core.dp.mechanisms.Gaussian`
    (:class:`GaussianLoss`), the exponential mechanism
    :class:`~core.dp.selection.ExponentialMechanism` (:class:`BoundedRangeLoss`)
    and :class:`~core.dp.selection.ReportNoisyMax` (:class:`RandomisedResponseLoss`:
    report noisy max is not counted as bounded-range).
    A bare :class:`~core.dp.accounting.PrivacyCost`, the smooth-sensitivity
    mechanisms and the secure (discrete) Gaussian give ``None``.
    """
    if isinstance(release, (MechanismLoss, Composite)):
        return release
    if isinstance(release, LAWS):
        return MechanismLoss(release.cost, release)  # a bare GaussianLoss says why not
    from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace
    from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
    from ppknn.core.rng import RandomnessMode

    if isinstance(release, Laplace):
        if release.mode is RandomnessMode.SECURE:  # discrete Laplace in grid steps
            law: Any = DiscreteLaplaceLoss(release.epsilon, release._steps)
        else:
            law = LaplaceLoss(release.epsilon)
        return MechanismLoss(release.cost, law)
    if isinstance(release, Geometric):
        sens = release.sensitivity
        if float(sens).is_integer():
            return MechanismLoss(release.cost, DiscreteLaplaceLoss(release.epsilon, int(sens)))
        return MechanismLoss(release.cost, RandomisedResponseLoss(release.epsilon))
    if isinstance(release, Gaussian) and release.mode is RandomnessMode.REPRODUCIBLE:
        return MechanismLoss(release.cost, GaussianLoss.from_sigma(release.scale,
                                                                   release.sensitivity))
    if isinstance(release, ExponentialMechanism):  # ε-bounded-range (either weighting)
        return MechanismLoss(release.cost, BoundedRangeLoss(release.epsilon))
    if isinstance(release, ReportNoisyMax):
        return MechanismLoss(release.cost, RandomisedResponseLoss(release.epsilon))
    return None


def compose(releases: Iterable[Any], *, interval: float = INTERVAL) -> PLD:
    """The PLD of running every release once (equal ones by repeated squaring).

    ``releases`` are loss laws or anything :func:`loss_model` accepts;
    a release with no known law is refused.
    """
    groups: Counter[Any] = Counter()
    for r in releases:
        law = r if isinstance(r, LAWS) else loss_model(r)
        if law is None:
            raise ConfigError(f"{r!r} has no known privacy-loss distribution; compose it "
                              "by basic composition instead")
        groups[law] += 1
    if not groups:
        raise ConfigError("compose needs at least one release, got none")
    out: PLD | None = None
    for law, k in groups.items():
        part = law.pld(interval).self_compose(k)
        out = part if out is None else out.compose(part)
    assert out is not None
    return out


def compose_epsilon(releases: Iterable[Any], delta: float, *, interval: float = INTERVAL
                    ) -> float:
    """ε of the composition at ``delta`` (an upper bound on the exact value)."""
    delta = check_delta(delta, allow_zero=False)
    return compose(releases, interval=interval).epsilon(delta)


__all__ = [
    "INTERVAL",
    "TAIL_MASS",
    "BoundedRangeLoss",
    "Composite",
    "DiscreteLaplaceLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "MechanismLoss",
    "PLD",
    "RandomisedResponseLoss",
    "compose",
    "compose_epsilon",
    "loss_model",
]
