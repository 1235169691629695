"""Seeded goodness-of-fit tests for every sampler, with a power check.

Each case draws from a sampler (both modes where the sampler has both) and
tests the draws against the distribution the sampler claims at α = 1e-6
(Kolmogorov-Smirnov for continuous laws, χ² for discrete ones). The power
check draws from the *same* sampler with its scale 30% too large and 30% too
small and requires the same test to reject at the same α.

Secure-mode samplers run on :class:`SeededEntropy` so the tests repeat; the
algorithms are the ones that run on OS entropy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, special, stats

from ppknn.core.dp.exact import (
    SeededEntropy,
    SystemEntropy,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
)
from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace
from ppknn.core.dp.planar import PlanarLaplace
from ppknn.core.dp.samplers import discrete_laplace_noise
from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
from ppknn.core.dp.smooth import Cauchy, PolynomialTail, StudentT

ALPHA = 1e-6
SEED = 20240604
N_FAST = 20_000  # numpy samplers
N_EXACT = 10_000  # exact samplers (pure Python, ~40-80 µs per draw)


# ------------------------------------------------------------------ tests
def ks_pvalue(sample: np.ndarray, cdf: Callable) -> float:
    return float(stats.kstest(sample, cdf).pvalue)


def chi2_pvalue(values: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray], lo: int, hi: int):
    """χ² over the cells lo..hi plus the two tails; cells need expected count >= 5."""
    values = np.asarray(values, dtype=np.int64)
    n = values.size
    support = np.arange(lo, hi + 1)
    p_inner = pmf(support)
    probs = np.concatenate(
        [[max(0.0, 0.5 * (1 - p_inner.sum()))], p_inner, [max(0.0, 0.5 * (1 - p_inner.sum()))]]
    )
    inside = values[(values >= lo) & (values <= hi)] - lo
    obs = np.concatenate(
        [[np.sum(values < lo)], np.bincount(inside, minlength=hi - lo + 1), [np.sum(values > hi)]]
    )
    keep = probs * n >= 5
    obs_k, exp_k = obs[keep], probs[keep] * n
    other_obs, other_exp = n - obs_k.sum(), n - exp_k.sum()
    if other_exp >= 5:
        obs_k, exp_k = np.append(obs_k, other_obs), np.append(exp_k, other_exp)
    else:
        exp_k = exp_k * obs_k.sum() / exp_k.sum()
    return float(stats.chisquare(obs_k, exp_k).pvalue)


def dlap_pmf(scale: float) -> Callable:
    a = math.exp(-1.0 / scale)
    return lambda z: (1 - a) / (1 + a) * a ** np.abs(z)


def dgauss_pmf(sigma: float) -> Callable:
    grid = np.arange(-int(40 * sigma) - 1, int(40 * sigma) + 2)
    norm = np.exp(-(grid**2) / (2 * sigma**2)).sum()
    return lambda z: np.exp(-(np.asarray(z, float) ** 2) / (2 * sigma**2)) / norm


def polynomial_cdf(gamma: float, scale: float) -> Callable:
    def cdf(x):
        z = np.abs(np.asarray(x) / scale)
        q = z**gamma / (1 + z**gamma)
        return 0.5 + np.sign(x) * 0.5 * special.betainc(1 / gamma, 1 - 1 / gamma, q)

    return cdf


def rnm_probabilities(u: np.ndarray, scale: float, noise: str) -> np.ndarray:
    """Exact P(argmax(u + noise) = i) by quadrature."""
    law = stats.laplace(scale=scale) if noise == "laplace" else stats.expon(scale=scale)
    out = []
    for i in range(len(u)):

        def integrand(x, i=i):
            others = np.prod([law.cdf(x - u[j]) for j in range(len(u)) if j != i])
            return law.pdf(x - u[i]) * others

        lo = u.min() - (40 * scale if noise == "laplace" else 0)
        out.append(
            integrate.quad(integrand, lo, u.max() + 60 * scale, limit=400, points=list(u))[0]
        )
    out = np.array(out)
    return out / out.sum()


def category_pvalue(chosen: np.ndarray, probs: np.ndarray) -> float:
    counts = np.bincount(chosen, minlength=probs.size)
    return float(stats.chisquare(counts, probs * chosen.size).pvalue)


# ------------------------------------------------------------------ cases
@dataclass(frozen=True)
class Case:
    """draw(factor, seed) samples with the scale multiplied by factor; pvalue tests nominal."""

    name: str
    draw: Callable[[float, int], np.ndarray]
    pvalue: Callable[[np.ndarray], float]


def _exact_dlap(scale: Fraction) -> Case:
    def draw(f, seed):
        ent = SeededEntropy(seed)
        s = scale * Fraction(f).limit_denominator(1000)
        return np.array([discrete_laplace(s, ent) for _ in range(N_EXACT)])

    return Case(
        f"exact-discrete-laplace-{scale}",
        draw,
        lambda x: chi2_pvalue(x, dlap_pmf(float(scale)), -25, 25),
    )


def _exact_dgauss(sigma: Fraction) -> Case:
    def draw(f, seed):
        ent = SeededEntropy(seed)
        s2 = (sigma * Fraction(f).limit_denominator(1000)) ** 2
        return np.array([discrete_gaussian(s2, ent) for _ in range(N_EXACT)])

    return Case(
        f"exact-discrete-gaussian-{sigma}",
        draw,
        lambda x: chi2_pvalue(x, dgauss_pmf(float(sigma)), -15, 15),
    )


def _numpy_dlap(scale: float) -> Case:
    return Case(
        f"numpy-discrete-laplace-{scale}",
        lambda f, seed: discrete_laplace_noise(scale * f, (N_FAST,), np.random.default_rng(seed)),
        lambda x: chi2_pvalue(x, dlap_pmf(scale), -25, 25),
    )


def _rng(mode: str, seed: int):
    return SeededEntropy(seed) if mode == "secure" else np.random.default_rng(seed)


def _n(mode: str) -> int:
    return N_EXACT if mode == "secure" else N_FAST


def _laplace(mode: str) -> Case:
    eps, sens, x0 = 0.8, 2.0, 3.25

    def draw(f, seed):
        mech = Laplace(epsilon=eps / f, sensitivity=sens, mode=mode)
        return mech.randomise(np.full(_n(mode), x0), _rng(mode, seed)).value - x0

    return Case(
        f"laplace-{mode}", draw, lambda x: ks_pvalue(x, stats.laplace(scale=sens / eps).cdf)
    )


def _gaussian(mode: str) -> Case:
    eps, delta = 1.0, 1e-5
    sigma = Gaussian(epsilon=eps, delta=delta, mode=mode).scale

    def draw(f, seed):  # sigma is linear in the sensitivity
        mech = Gaussian(epsilon=eps, delta=delta, sensitivity=f, mode=mode)
        return mech.randomise(np.zeros(_n(mode)), _rng(mode, seed)).value

    return Case(f"gaussian-{mode}", draw, lambda x: ks_pvalue(x, stats.norm(scale=sigma).cdf))


def _geometric(mode: str) -> Case:
    eps, sens = 0.5, 2

    def draw(f, seed):
        mech = Geometric(epsilon=eps / f, sensitivity=sens, mode=mode)
        return mech.randomise(np.full(_n(mode), 7), _rng(mode, seed)).value - 7

    return Case(f"geometric-{mode}", draw, lambda x: chi2_pvalue(x, dlap_pmf(sens / eps), -30, 30))


def _smooth(kind: str, mode: str) -> Case:
    eps, s_sens = 1.0, 0.5
    make = {
        "cauchy": lambda e: Cauchy(epsilon=e, mode=mode),
        "student": lambda e: StudentT(epsilon=e, dof=3.0, mode=mode),
        "poly": lambda e: PolynomialTail(epsilon=e, gamma=4.0, mode=mode),
    }[kind]
    nominal = make(eps)
    scale = nominal.scale_for(s_sens)
    cdf = {
        "cauchy": stats.cauchy(scale=scale).cdf,
        "student": stats.t(df=3.0, scale=scale).cdf,
        "poly": polynomial_cdf(4.0, scale),
    }[kind]

    def draw(f, seed):
        mech = make(eps / f)
        return mech.randomise(np.zeros(_n(mode)), s_sens, _rng(mode, seed)).value

    return Case(f"{kind}-{mode}", draw, lambda x: ks_pvalue(x, cdf))


def _planar(mode: str) -> Case:
    eps = 0.7

    def draw(f, seed):
        pts = np.tile([1.5, -2.0], (_n(mode), 1))
        out = PlanarLaplace(epsilon=eps / f, mode=mode).randomise(pts, _rng(mode, seed)).value
        return np.hypot(out[:, 0] - 1.5, out[:, 1] + 2.0)

    return Case(
        f"planar-radius-{mode}", draw, lambda r: ks_pvalue(r, stats.gamma(a=2, scale=1 / eps).cdf)
    )


UTIL = np.array([0.0, 1.0, 2.5, 3.0, 0.5])


def _exponential(mode: str) -> Case:
    eps = 1.2
    probs = ExponentialMechanism(epsilon=eps).probabilities(UTIL)

    def draw(f, seed):
        mech = ExponentialMechanism(epsilon=eps / f, mode=mode)
        rows = np.tile(UTIL, (_n(mode), 1))  # one batched call: (Q, C) -> Q choices
        return mech.randomise(rows, _rng(mode, seed)).value

    return Case(f"exponential-{mode}", draw, lambda c: category_pvalue(c, probs))


def _rnm(noise: str, mode: str) -> Case:
    eps = 1.2
    nominal = ReportNoisyMax(epsilon=eps, noise=noise, mode=mode)
    probs = rnm_probabilities(UTIL, nominal.scale, noise)

    def draw(f, seed):
        mech = ReportNoisyMax(epsilon=eps / f, noise=noise, mode=mode)
        return mech.randomise(np.tile(UTIL, (_n(mode), 1)), _rng(mode, seed)).value

    return Case(f"rnm-{noise}-{mode}", draw, lambda c: category_pvalue(c, probs))


CASES = [
    _exact_dlap(Fraction(3)),
    _exact_dlap(Fraction(7, 3)),
    _numpy_dlap(3.0),
    _exact_dgauss(Fraction(3)),
    _exact_dgauss(Fraction(5, 2)),
    *[_laplace(m) for m in ("reproducible", "secure")],
    *[_gaussian(m) for m in ("reproducible", "secure")],
    *[_geometric(m) for m in ("reproducible", "secure")],
    *[_smooth(k, m) for k in ("cauchy", "student", "poly") for m in ("reproducible", "secure")],
    *[_planar(m) for m in ("reproducible", "secure")],
    *[_exponential(m) for m in ("reproducible", "secure")],
    _rnm("laplace", "reproducible"),
    *[_rnm("exponential", m) for m in ("reproducible", "secure")],
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sampler_fits_its_distribution(case):
    assert case.pvalue(case.draw(1.0, SEED)) > ALPHA


@pytest.mark.parametrize("factor", [0.7, 1.3])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_same_test_rejects_scale_30_percent_off(case, factor):
    assert case.pvalue(case.draw(factor, SEED + 1)) < ALPHA


# ------------------------------------------------------- exact primitives
@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma):
    ent = SeededEntropy(SEED)
    n = 20_000
    hits = sum(bernoulli_exp(gamma, ent) for _ in range(n))
    p = math.exp(-float(gamma))
    assert stats.binomtest(hits, n, p).pvalue > ALPHA
    if gamma > 0:  # power: a 30% wrong exponent is rejected
        assert stats.binomtest(hits, n, math.exp(-1.3 * float(gamma))).pvalue < ALPHA


def test_seeded_entropy_repeats_and_system_entropy_does_not():
    a = [discrete_laplace(Fraction(10), SeededEntropy(1)) for _ in range(1)]
    b = [discrete_laplace(Fraction(10), SeededEntropy(1)) for _ in range(1)]
    assert a == b
    sys_draws = {
        tuple(discrete_laplace(Fraction(10**6), SystemEntropy()) for _ in range(3))
        for _ in range(3)
    }
    assert len(sys_draws) == 3


# --------------------------------------------- the OS entropy source itself
# Not seeded (that is its point): each test can fail by chance with probability ~1e-6.
@pytest.mark.parametrize("n", [2, 7, 256, 2**40 + 3])
def test_system_entropy_randbelow_is_uniform(n):
    ent = SystemEntropy()
    draws = np.array([ent.randbelow(n) for _ in range(40_000)], dtype=np.float64)
    cells = np.minimum((draws * 8 / n).astype(int), 7) if n > 8 else draws.astype(int)
    k = min(n, 8)
    edges = np.floor(np.arange(k + 1) * n / k) if n > 8 else np.arange(k + 1)
    probs = np.diff(edges) / n if n > 8 else np.full(k, 1 / k)
    counts = np.bincount(cells, minlength=k)
    assert stats.chisquare(counts, probs * draws.size).pvalue > ALPHA


def test_secure_laplace_on_os_entropy_fits():
    mech = Laplace(epsilon=0.5, mode="secure")
    noise = mech.randomise(np.zeros(N_EXACT)).value
    assert ks_pvalue(noise, stats.laplace(scale=2.0).cdf) > ALPHA
