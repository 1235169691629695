"""k-NN -> r-N conversion: formulas, the vectorised search against the paper's loops, the grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from ppknn.core.data import DomainBounds
from ppknn.protocols.dp_knn.conversion import (
    MAX_CELLS,
    avre,
    build_grid,
    cell_offsets,
    convert_interactive,
    convert_noninteractive,
    grid_cells_per_axis,
    lattice_radius,
    rmse_k,
    uniform_radius,
)
from ppknn.protocols.dp_knn.index import LabelIndex


def _uniform(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return LabelIndex(X, (X[:, 0] > 0.5).astype(np.int64), n_classes=2), rng


@pytest.mark.parametrize("d", [1, 2, 5, 21])
def test_uniform_radius_ball_holds_k_of_n(d):
    r = uniform_radius(np.array([7, 30]), n_rows=1000.0, volume=2.0, dim=d)
    ball = math.pi ** (d / 2) / special.gamma(d / 2 + 1) * r**d
    np.testing.assert_allclose(ball * 1000.0 / 2.0, [7, 30], rtol=1e-12)


def test_grid_size_rule_pinned_values():
    assert grid_cells_per_axis(4000, 1.0, 2) == 20  # sqrt(4000 * 1 / 10)
    assert grid_cells_per_axis(4000, 0.5, 5) == 4  # floor(200 ** (2/7)) = floor(4.54)
    assert grid_cells_per_axis(5, 0.01, 3) == 1
    assert grid_cells_per_axis(1e9, 10.0, 2) ** 2 <= MAX_CELLS
    assert grid_cells_per_axis(100, math.inf, 4) == math.floor(MAX_CELLS ** 0.25)


def test_interactive_without_noise_is_the_papers_loop():
    index, rng = _uniform(1, 600, 2)
    x = rng.random((25, 2))
    k = rng.integers(1, 40, size=25)
    bounds = DomainBounds(np.zeros(2), np.ones(2))
    conv = convert_interactive(index, x, k, epsilon=math.inf, bounds=bounds, rng=rng,
                               candidates=10)
    X = index._X  # test-only look at the data for the reference loop
    for i in range(len(x)):
        r_unif = math.sqrt(special.gamma(2.0) * k[i] * 1.0 / (600 * math.pi))
        cands = [2 * j * r_unif / 10 for j in range(1, 11)]
        dist = np.linalg.norm(X - x[i], axis=1)
        cost = [abs(int(np.sum(dist <= o)) - k[i]) for o in cands]
        assert conv.radii[i] == pytest.approx(cands[int(np.argmin(cost))], rel=1e-12)
    assert conv.epsilon == math.inf and conv.n_estimate == 600


@pytest.mark.parametrize(("d", "m", "gamma"), [(2, 4, 0.01), (3, 3, 0.02), (20, 1, 0.1)])
def test_noninteractive_without_noise_is_the_papers_loop(d, m, gamma):
    index, rng = _uniform(2, 500, d)
    bounds = DomainBounds(np.zeros(d), np.ones(d))
    grid = build_grid(index, epsilon=math.inf, bounds=bounds, rng=rng, cells_per_axis=m)
    x = rng.random((6, d))
    k = rng.integers(1, 60, size=6)
    conv = convert_noninteractive(index, x, k, epsilon=math.inf, bounds=bounds, rng=rng,
                                  gamma=gamma, grid=grid)
    # the loop of Algorithm 7: r = γ, 2γ, ... until the mass reaches k, with the
    # documented intersection-volume estimate (quadrature points per cell)
    offsets = cell_offsets(m**d, d)
    width = 1.0 / m
    for i in range(len(x)):
        dist_by_cell = []
        for cell in np.ndindex(*(m,) * d):
            pts = (np.array(cell) + offsets) * width
            dist_by_cell.append((grid.counts[cell], np.linalg.norm(pts - x[i], axis=1)))
        r = gamma
        while r <= bounds.diameter + 1e-12:
            mass = sum(c * np.mean(dd <= r) for c, dd in dist_by_cell)
            if mass >= k[i] - 1e-9:
                break
            r = round(r / gamma + 1) * gamma
        assert conv.radii[i] == pytest.approx(r, rel=1e-9), (i, conv.radii[i], r)


def test_grid_counts_without_noise_are_the_histogram():
    index, rng = _uniform(3, 300, 2)
    bounds = DomainBounds(np.zeros(2), np.ones(2))
    grid = build_grid(index, epsilon=math.inf, bounds=bounds, rng=rng, cells_per_axis=5)
    hist, _, _ = np.histogram2d(index._X[:, 0], index._X[:, 1], bins=5, range=[[0, 1], [0, 1]])
    np.testing.assert_array_equal(grid.counts, hist)


def test_noisy_grid_is_clamped_and_costs_its_epsilon():
    index, rng = _uniform(4, 300, 2)
    bounds = DomainBounds(np.zeros(2), np.ones(2))
    grid = build_grid(index, epsilon=0.5, bounds=bounds, rng=rng)
    assert grid.epsilon == 0.5 and grid.counts.min() >= 0
    assert grid.cells_per_axis == grid_cells_per_axis(grid.n_estimate, 0.5 * 0.95, 2)


def test_reused_grid_costs_nothing():
    index, rng = _uniform(5, 300, 2)
    bounds = DomainBounds(np.zeros(2), np.ones(2))
    grid = build_grid(index, epsilon=0.5, bounds=bounds, rng=rng)
    conv = convert_noninteractive(index, rng.random((4, 2)), 5, epsilon=0.5, bounds=bounds,
                                  rng=rng, grid=grid)
    assert conv.epsilon == 0.0 and conv.cells_per_axis == grid.cells_per_axis


def test_lattice_radius_matches_the_loop_and_saturates():
    # 3 * 0.1 == 0.30000000000000004: the lattice value itself reaches r*
    r, sat = lattice_radius(np.array([0.0, 0.05, 0.3, 0.30000000000000004, 0.3000001, np.inf,
                                      9.0]), gamma=0.1, limit=1.0)
    np.testing.assert_allclose(r, [0.1, 0.1, 0.3, 0.3, 0.4, 1.0, 1.0], rtol=1e-15)
    assert sat.tolist() == [False, False, False, False, False, True, True]


def test_error_metrics_exact_values():
    assert avre(np.array([1.0, 2.0]), np.array([1.5, 1.0])) == pytest.approx(50.0)
    assert rmse_k(np.array([30, 30]), np.array([33, 26])) == pytest.approx(math.sqrt(12.5))


def test_conversion_gets_close_with_a_generous_budget():
    """At ε̂ = 100 on 4,000 uniform points the grid conversion is within 15% on average."""
    index, rng = _uniform(6, 4000, 2)
    bounds = DomainBounds(np.zeros(2), np.ones(2))
    x = 0.1 + 0.8 * rng.random((50, 2))
    conv = convert_noninteractive(index, x, 30, epsilon=100.0, bounds=bounds, rng=rng)
    truth = index.kth_distance(x, np.full(50, 30))
    assert avre(truth, conv.radii) < 15.0
