"""k-NN → r-N conversion with budget ε̂ (Gursoy et al. §4.3, Algorithms 6 and 7).

Both algorithms turn test instances ``(x_i, k_i)`` into ``(x_i, r_i)`` and
spend ε̂ in total; both need the public domain ``Ω(D)`` (declared bounds,
:class:`core.data.DomainBounds`), whose volume is the product of the side
lengths (the paper says "smallest hyper-cube containing the allowed data
space"; on the min-max-normalised data of the experiments this is the unit
cube either way) and whose extent ``|Ω(D)|`` is taken to be its diameter.

Interactive (Algorithm 6)
    A share ``count_share`` of ε̂ buys a noisy ``|D|`` (Laplace, Δ = 1;
    clamped to >= 1). Then ``r_UNIF = (Γ(d/2+1) k vol(Ω) / (|D| π^(d/2)))^(1/d)``,
    candidates ``o_j = 2 j r_UNIF / n`` (j = 1..n), and one exponential
    mechanism per instance with utility ``-|c(x_i, o_j) - k_i|`` (Δu = 1)
    and budget ``(1 - count_share) ε̂ / |X|`` (sequential composition).
Non-interactive (Algorithm 7)
    A DP uniform grid: ``count_share`` of ε̂ buys a noisy ``|D|`` to size it
    (``m = ⌊(|D| ε / 10)^(2/(2+d))⌋`` cells per axis: Qardaji et al.'s
    ``sqrt(Nε/10)`` for d = 2, generalised to d dimensions as in Su et al.
    2016, capped at :data:`MAX_CELLS` cells), the rest buys the cell counts
    (one Laplace release over the histogram, Δ = 1; negatives clamped to 0).
    Then for each instance the smallest ``r = jγ`` (j >= 1) whose *mass*
    reaches ``k_i``, as the paper's loop ``r ← r + γ`` finds it.

Sphere-cell intersection volume (the estimate Algorithm 7 needs)
    Each cell is split into ``s^d`` equal sub-cells (``s`` from
    :func:`subcells_per_axis`); ``vol(C ∩ B(x, r))`` is estimated by the
    midpoint rule, ``vol(C) × (sub-cell centres of C inside the ball) / s^d``.
    In high dimension, where even ``s = 2`` is too many points, the same
    rule runs on a fixed set of unscrambled Halton points per cell instead
    (:func:`cell_offsets`; deterministic and data-free). The mass
    ``Σ_C vol(C ∩ B) |C| / vol(C)`` is then a weighted count of quadrature
    points within r of x (weight ``|C| / points per cell``), which is
    non-decreasing in r; so the first lattice radius reaching ``k`` is
    ``γ ⌈r*/γ⌉`` with ``r*`` the distance at which the sorted weights of the
    nearest points first add up to ``k`` (within :data:`MASS_TOL`) -- one
    vectorised kd-tree search instead of the loop (equal results, tested
    against the loop). When the total mass stays below k the instance gets
    the largest lattice radius within ``|Ω(D)|`` (the paper's loop would
    leave it out) and is flagged.

With ``epsilon = math.inf`` no noise is added (|D| exact, argmax utility
with the smallest radius on ties, exact grid counts on the finest grid).

Examples
--------
>>> import numpy as np
>>> round(float(uniform_radius(np.array([10]), n_rows=1000, volume=1.0, dim=2)[0]), 4)
0.0564
>>> grid_cells_per_axis(4000, 1.0, 2), grid_cells_per_axis(4000, 1.0, 5)
(20, 5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special
from scipy.spatial import cKDTree

from ppknn.core.data import DomainBounds
from ppknn.core.dp import ExponentialMechanism, Laplace
from ppknn.core.dp.validation import check_positive_int, check_probability
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.validation import check_ks, check_privacy, check_queries

CONVERSIONS = ("interactive", "noninteractive")
GRID_THETA = 10.0
"""The constant c (θ) of the grid-size rule (Qardaji et al. 2013; Su et al. 2016)."""
MAX_CELLS = 2**16
"""Largest number of grid cells built."""
MAX_SAMPLE_POINTS = 2**17
"""Largest number of quadrature points used for the intersection-volume estimate."""
HALTON_POINTS = 2**13
"""Most Halton points per cell (high dimension: kd-tree searches get slow beyond)."""
MASS_TOL = 1e-9
"""A mass within this of k counts as reaching k (sums of fractions round either way)."""
DEFAULT_GAMMA_FRACTION = 1e-4
"""γ as a fraction of |Ω(D)| ("approximately 0.01%" in the paper)."""


@dataclass(frozen=True)
class Conversion:
    """The r-N instances a conversion produced.

    Attributes
    ----------
    radii:
        ``(Q,)`` the converted radii (ε̂-DP).
    epsilon:
        ε̂ spent (``math.inf`` without noise).
    n_estimate:
        The noisy |D| used.
    saturated:
        ``(Q,)`` bool: no candidate / lattice radius reached k (the largest was used).
    cells_per_axis:
        Grid resolution (non-interactive; 0 for interactive).
    """

    radii: np.ndarray
    epsilon: float
    n_estimate: float
    saturated: np.ndarray
    cells_per_axis: int = 0


def _noisy_size(index: LabelIndex, epsilon: float, rng: Any, mode: Any) -> float:
    if epsilon == math.inf:
        return float(index.size)
    mech = Laplace(epsilon=epsilon, sensitivity=1.0, mode=RandomnessMode(mode))
    value = mech.randomise(float(index.size), rng)
    return max(1.0, float(value.value))


def uniform_radius(k: np.ndarray, *, n_rows: float, volume: float, dim: int) -> np.ndarray:
    """The radius holding ``k`` of ``n_rows`` rows uniform over ``volume`` (Alg. 6, line 3)."""
    log_unit_ball = (dim / 2.0) * math.log(math.pi) - special.gammaln(dim / 2.0 + 1.0)
    log_r = (np.log(np.asarray(k, dtype=np.float64)) + math.log(volume) - math.log(n_rows)
             - log_unit_ball) / dim
    return np.exp(log_r)


def _split(epsilon: float, count_share: float) -> tuple[float, float]:
    if epsilon == math.inf:
        return math.inf, math.inf
    share = check_probability(count_share, name="count_share")
    return share * epsilon, (1.0 - share) * epsilon


def convert_interactive(index: LabelIndex, x: Any, k: Any, *, epsilon: float,
                        bounds: DomainBounds, rng: Any, candidates: int = 10,
                        count_share: float = 0.05,
                        mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> Conversion:
    """Algorithm 6 (see the module docstring)."""
    eps = check_privacy(epsilon, name="conversion epsilon")
    x = check_queries(x, index.n_features)
    ks = check_ks(k, len(x))
    n = check_positive_int(candidates, name="candidates")
    eps_count, eps_em = _split(eps, count_share)
    q, d = x.shape
    volume = float(np.prod(bounds.upper - bounds.lower))
    if not volume > 0:
        raise ConfigError("the domain must have positive volume (every upper bound > lower bound)")
    n_est = _noisy_size(index, eps_count, rng, mode)
    r_unif = uniform_radius(ks, n_rows=n_est, volume=volume, dim=d)
    cand = 2.0 * np.arange(1, n + 1)[None, :] * r_unif[:, None] / n  # (Q, n)
    counts = index.ball_counts(x, cand)  # (Q, n): the kd-tree's c(x_i, o_j)
    utility = -np.abs(counts - ks[:, None]).astype(np.float64)
    if eps_em == math.inf:
        choice = np.argmax(utility, axis=1)
    else:
        mech = ExponentialMechanism(epsilon=eps_em / q, sensitivity=1.0, mode=RandomnessMode(mode))
        choice = np.asarray(mech.randomise(utility, rng).value).reshape(q)
    saturated = counts[:, -1] < ks
    return Conversion(radii=cand[np.arange(q), choice], epsilon=eps, n_estimate=n_est,
                      saturated=saturated)


def grid_cells_per_axis(n_rows: float, epsilon: float, dim: int) -> int:
    """Cells per axis ``⌊(N ε / θ)^(2/(2+d))⌋`` (>= 1), capped so ``m^d <= MAX_CELLS``."""
    cap = max(1, int(math.floor(MAX_CELLS ** (1.0 / dim) + 1e-9)))
    if epsilon == math.inf:
        return cap
    m = int(math.floor((max(n_rows, 1.0) * epsilon / GRID_THETA) ** (2.0 / (2.0 + dim)) + 1e-9))
    return int(min(max(m, 1), cap))


def subcells_per_axis(cells: int, dim: int) -> int:
    """Sub-cells per axis s for the midpoint rule: ``cells * s^d <= MAX_SAMPLE_POINTS``, s >= 1."""
    s = int(math.floor((MAX_SAMPLE_POINTS / cells) ** (1.0 / dim) + 1e-9))
    return max(1, min(s, 64))


@dataclass(frozen=True)
class NoisyGrid:
    """An ε-DP uniform grid over the domain (non-negative noisy counts per cell).

    Attributes
    ----------
    bounds:
        The public domain.
    cells_per_axis:
        m (the grid has ``m^d`` cells).
    counts:
        ``(m,)*d`` noisy counts, clamped at 0.
    epsilon:
        What the grid cost (including the noisy |D|).
    n_estimate:
        The noisy |D| used to size the grid.
    """

    bounds: DomainBounds
    cells_per_axis: int
    counts: np.ndarray
    epsilon: float
    n_estimate: float

    def sample_points(self) -> tuple[np.ndarray, np.ndarray]:
        """Quadrature points of the cells with mass, and their weights (module docstring)."""
        d = len(self.bounds.lower)
        m = self.cells_per_axis
        offsets = cell_offsets(m**d, d)  # in units of the cell width, inside [0, 1)^d
        width = (self.bounds.upper - self.bounds.lower) / m
        flat = self.counts.ravel()
        cells = np.flatnonzero(flat > 0)
        if not cells.size:
            return np.zeros((0, d)), np.zeros(0)
        corner = np.stack(np.unravel_index(cells, (m,) * d), axis=1) * width + self.bounds.lower
        points = (corner[:, None, :] + offsets[None, :, :] * width).reshape(-1, d)
        weights = np.repeat(flat[cells] / len(offsets), len(offsets))
        return points, weights


def cell_offsets(cells: int, dim: int) -> np.ndarray:
    """Quadrature points inside a unit cell: the ``s^d`` sub-cell centres when ``s >= 2``.

    When even ``s = 2`` would exceed :data:`MAX_SAMPLE_POINTS` (high
    dimension), ``min(MAX_SAMPLE_POINTS // cells, HALTON_POINTS)`` (at least 1)
    points of the unscrambled Halton sequence are used instead
    (deterministic, data-free).
    """
    s = subcells_per_axis(cells, dim)
    if s >= 2:
        grid = np.stack(np.meshgrid(*[np.arange(s)] * dim, indexing="ij"), axis=-1)
        return (grid.reshape(-1, dim) + 0.5) / s
    from scipy.stats import qmc  # here: scipy.stats costs an owner seconds of start-up

    count = max(1, min(MAX_SAMPLE_POINTS // cells, HALTON_POINTS))
    halton = qmc.Halton(d=dim, scramble=False)
    halton.fast_forward(1)  # skip the corner point 0
    return np.asarray(halton.random(count))


def build_grid(index: LabelIndex, *, epsilon: float, bounds: DomainBounds, rng: Any,
               count_share: float = 0.05, cells_per_axis: int | None = None,
               mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> NoisyGrid:
    """Build the ε-DP uniform grid of Algorithm 7, line 1 (see the module docstring).

    With ``cells_per_axis`` given, the whole budget buys cell counts.
    """
    eps = check_privacy(epsilon, name="conversion epsilon")
    d = index.n_features
    if len(bounds.lower) != d:
        raise ConfigError(f"the domain has {len(bounds.lower)} features, the data {d}")
    if cells_per_axis is None:
        eps_count, eps_grid = _split(eps, count_share)
        n_est = _noisy_size(index, eps_count, rng, mode)
        m = grid_cells_per_axis(n_est, eps_grid, d)
    else:
        m = check_positive_int(cells_per_axis, name="cells_per_axis")
        if m**d > MAX_CELLS:
            raise ConfigError(f"{m}^{d} cells exceed the limit of {MAX_CELLS}")
        eps_grid, n_est = eps, math.nan
    edges = [np.linspace(lo, hi, m + 1) for lo, hi in zip(bounds.lower, bounds.upper)]
    exact = index.histogram(edges).astype(np.float64)
    if eps_grid == math.inf:
        noisy = exact
    else:
        noisy = np.asarray(Laplace(epsilon=eps_grid, sensitivity=1.0, mode=RandomnessMode(mode))
                           .randomise(exact, rng).value)
    counts = np.maximum(noisy, 0.0).reshape((m,) * d)
    return NoisyGrid(bounds=bounds, cells_per_axis=m, counts=counts, epsilon=eps,
                     n_estimate=n_est)


def mass_radius(points: np.ndarray, weights: np.ndarray, x: np.ndarray, k: np.ndarray
                ) -> np.ndarray:
    """``r*``: smallest r with ``Σ weights[|p - x| <= r] >= k`` per row (``inf`` if never)."""
    q = len(x)
    out = np.full(q, np.inf)
    if not len(points):
        return out
    tree = cKDTree(points)
    todo = np.arange(q)
    kk = min(64, len(points))
    while todo.size:
        dist, idx = tree.query(x[todo], k=kk)
        dist, idx = dist.reshape(len(todo), -1), idx.reshape(len(todo), -1)
        cum = np.cumsum(weights[idx], axis=1)
        reached = cum[:, -1] >= k[todo] - MASS_TOL
        first = np.argmax(cum >= k[todo][:, None] - MASS_TOL, axis=1)
        out[todo[reached]] = dist[reached, first[reached]]
        if kk == len(points):
            break
        todo = todo[~reached]
        kk = min(4 * kk, len(points))
    return out


def lattice_radius(r_star: np.ndarray, gamma: float, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """The paper's loop result ``γ·max(1, ⌈r*/γ⌉)``, capped at the largest ``jγ <= limit``."""
    j_max = max(1, int(math.floor(limit / gamma + 1e-9)))
    finite = np.isfinite(r_star)
    j = np.ones(len(r_star), dtype=np.int64)
    ratio = np.where(finite, r_star, 0.0) / gamma
    j[finite] = np.maximum(1, np.ceil(ratio[finite]).astype(np.int64))
    # floating-point guard: the smallest j with j*gamma >= r*
    down = (j > 1) & ((j - 1) * gamma >= r_star)
    j[down] -= 1
    j[finite & (j * gamma < r_star)] += 1
    saturated = ~finite | (j > j_max)
    j[saturated] = j_max
    return j * gamma, saturated


def convert_noninteractive(index: LabelIndex, x: Any, k: Any, *, epsilon: float,
                           bounds: DomainBounds, rng: Any, gamma: float | None = None,
                           count_share: float = 0.05, grid: NoisyGrid | None = None,
                           mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE
                           ) -> Conversion:
    """Algorithm 7 (see the module docstring); ``grid`` reuses a grid built earlier (free)."""
    x = check_queries(x, index.n_features)
    ks = check_ks(k, len(x))
    if grid is None:
        grid = build_grid(index, epsilon=epsilon, bounds=bounds, rng=rng,
                          count_share=count_share, mode=mode)
        spent = grid.epsilon
    else:
        spent = 0.0
    diameter = bounds.diameter
    step = DEFAULT_GAMMA_FRACTION * diameter if gamma is None else float(gamma)
    if not (math.isfinite(step) and step > 0):
        raise ConfigError(f"gamma must be a finite number > 0, got {gamma!r}")
    points, weights = grid.sample_points()
    r_star = mass_radius(points, weights, x, ks.astype(np.float64))
    radii, saturated = lattice_radius(r_star, step, diameter)
    return Conversion(radii=radii, epsilon=spent, n_estimate=grid.n_estimate,
                      saturated=saturated, cells_per_axis=grid.cells_per_axis)


def avre(r_true: np.ndarray, r_private: np.ndarray) -> float:
    """Average relative error in r, in percent: ``mean(|r' - r| / r) * 100``."""
    r_true = np.asarray(r_true, dtype=np.float64)
    return float(np.mean(np.abs(np.asarray(r_private) - r_true) / r_true) * 100.0)


def rmse_k(k_true: np.ndarray, k_private: np.ndarray) -> float:
    """Root mean square error between ``c(x, r)`` and ``c(x, r')``."""
    diff = np.asarray(k_true, dtype=np.float64) - np.asarray(k_private, dtype=np.float64)
    return float(np.sqrt(np.mean(diff**2)))


__all__ = [
    "CONVERSIONS",
    "DEFAULT_GAMMA_FRACTION",
    "GRID_THETA",
    "HALTON_POINTS",
    "MASS_TOL",
    "MAX_CELLS",
    "MAX_SAMPLE_POINTS",
    "Conversion",
    "NoisyGrid",
    "avre",
    "build_grid",
    "cell_offsets",
    "convert_interactive",
    "convert_noninteractive",
    "grid_cells_per_axis",
    "lattice_radius",
    "mass_radius",
    "rmse_k",
    "subcells_per_axis",
    "uniform_radius",
]
