"""The grid of the thesis's experiments (§6) and a cached sweep over it.

:class:`Grid` fixes sizes and parameter lists; :class:`Sweep` opens one
:class:`~simulations.experiments.dptt_evaluation.Bench` per (dimension, size) on demand
and memoises every measured :class:`~simulations.experiments.dptt_evaluation.Row`, so a
configuration shared by several figures runs once.

Experiment settings taken from the thesis: DIS with ε = 1 per decision and
the sensitivity bound (privacy radius) r from 10^9 down to 10^3 by decades;
GEO at the same radius with ε* = the DP-TT variant's final ε (bounded-range,
δ of :data:`~protocols.dptt.variants.DEFAULT_DELTA`); CMP over
ε ∈ {0.01, ..., 17}; GEO alone over ε*/Δ from 10^-9 to 10^-3 (ε* = 1).
Not given by the thesis and chosen here: the number of queries, the split
and neighbourhood sizes of each family (the thesis names P0/P4/P8, E8, N5,
N20), and the seed.

Examples
--------
>>> grid = Grid.quick()
>>> grid.n_points, len(grid.cmp_epsilons) < len(THESIS_EPSILONS)
(100000, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ppknn.core.rng import SeedPolicy
from ppknn.protocols.dptt.data import SPAN, synthetic_points
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import DEFAULT_DELTA, Variant
from ppknn.simulations.experiments.dptt_evaluation import Bench, Row

THESIS_EPSILONS = (0.01, 0.1, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 12.0, 17.0)
"""§6.2.2: the per-decision ε of the CMP experiments."""
THESIS_RADII = (1e9, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3)
"""§6.1: sensitivity bounds / privacy radii, "incrementing by a degree of magnitude"."""
FAMILIES: dict[str, tuple[str, ...]] = {
    "P": ("basic", "P4", "P8"),
    "E": ("E2", "E4", "E6", "E8"),
    "GS": ("GS",),
    "N": ("N5", "N10", "N20"),
    "GS-N": ("GS-N5", "GS-N10", "GS-N20"),
}
DIS_COMPARISON = ("basic", "P8", "E8", "GS", "N20", "GS-N20")
"""Figs. 6.14/6.15."""
CMP_COMPARISON = ("basic", "E8", "GS", "N20", "GS-N20")
"""Figs. 6.28/6.29 (the thesis leaves P out)."""


@dataclass(frozen=True, kw_only=True)
class Grid:
    """Sizes and parameter lists of a reproduction run."""

    n_points: int = 100_000
    n_queries: int = 2000
    dims: tuple[int, ...] = (1, 2)
    radii: tuple[float, ...] = THESIS_RADII
    dis_epsilon: float = 1.0
    cmp_epsilons: tuple[float, ...] = THESIS_EPSILONS
    families: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(FAMILIES))
    dis_comparison: tuple[str, ...] = DIS_COMPARISON
    cmp_comparison: tuple[str, ...] = CMP_COMPARISON
    geo_ratios: tuple[float, ...] = (1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
    sent_sizes: tuple[int, ...] = (1000, 10_000, 100_000)
    sent_variants: tuple[str, ...] = ("basic", "P4", "E8", "GS", "N20", "GS-N20")
    sent_epsilon: float = 5.0
    distribution: str = "normal"
    delta: float = DEFAULT_DELTA
    seed: int = 2022
    runtime: str = "inprocess"

    @classmethod
    def quick(cls, **overrides: Any) -> Grid:
        """Small lists, same sizes: the whole reproduction in well under two minutes."""
        base = cls(n_queries=300, radii=(1e9, 1e7, 1e5, 1e4, 1e3),
                   cmp_epsilons=(0.1, 1.0, 3.0, 5.0, 7.0, 10.0, 12.0, 17.0),
                   families={"P": ("basic", "P4", "P8"), "E": ("E4", "E8"), "GS": ("GS",),
                             "N": ("N5", "N20"), "GS-N": ("GS-N5", "GS-N20")},
                   geo_ratios=(1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2), sent_sizes=(1000, 10_000))
        return replace(base, **overrides)

    @property
    def size_comparison(self) -> tuple[int, ...]:
        """Fig. 6.18's database sizes: the run's size and a tenth of it."""
        return (self.n_points // 10, self.n_points)


class Sweep:
    """Measure configurations of a :class:`Grid`, each once (module docstring)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.policy = SeedPolicy(root=grid.seed)
        self._benches: dict[tuple[int, int], Bench] = {}
        self._rows: dict[tuple, Row] = {}
        self._found: dict[tuple, np.ndarray] = {}
        # TODO(runtime lifetime): on Ray every bench's session starts its own RayRuntime, and
        # RayRuntime.shutdown() calls ray.shutdown() when it is the last runtime using the Ray
        # instance it started, so Ray restarts when a bench closes while no other is open.
        # core/runtime/ray_runtime.py has no option to leave Ray running; once it has one,
        # the caller should own one Ray lifetime for the whole sweep.

    def close(self) -> None:
        """Close every bench."""
        for bench in list(self._benches.values()):
            bench.close()
        self._benches.clear()

    def __enter__(self) -> Sweep:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def release(self, dims: int, n_points: int | None = None) -> None:
        """Close one bench (its rows stay cached)."""
        bench = self._benches.pop((dims, n_points or self.grid.n_points), None)
        if bench is not None:
            bench.close()

    def rows(self) -> list[Row]:
        """Every row measured so far."""
        return list(self._rows.values())

    def bench(self, dims: int, n_points: int | None = None) -> Bench:
        """The bench of ``dims``-D data of ``n_points`` points (the grid's size by default)."""
        n = n_points or self.grid.n_points
        key = (dims, n)
        if key not in self._benches:
            g = self.grid
            points = synthetic_points(n, dims, self.policy.generator("points", dims, n),
                                      distribution=g.distribution)
            queries = synthetic_points(g.n_queries, dims,
                                       self.policy.generator("queries", dims, n),
                                       distribution=g.distribution)
            self._benches[key] = Bench(points=points, queries=queries, runtime=g.runtime,
                                       seed=self.policy.seed_sequence("client", dims, n)
                                       .generate_state(1)[0].item(), delta=g.delta)
        return self._benches[key]

    def dptt(self, dims: int, variant: str, utility: Utility, epsilon: float,
             n_points: int | None = None) -> Row:
        """DP-TT at one configuration."""
        n = n_points or self.grid.n_points
        key = ("DP-TT", dims, n, Variant.parse(variant).label, utility.name,
               utility.sensitivity, float(epsilon))
        if key not in self._rows:
            row, found = self.bench(dims, n).dptt(variant, utility, epsilon)
            self._rows[key], self._found[key] = row, found
        return self._rows[key]

    def dis(self, dims: int, variant: str, radius: float) -> tuple[Row, Row]:
        """DIS at radius r (ε = the grid's) and GEO at the same radius and final ε."""
        util = Utility.dis(radius)
        row = self.dptt(dims, variant, util, self.grid.dis_epsilon)
        return row, self._geo_for(dims, variant, util, self.grid.dis_epsilon, radius)

    def cmp(self, dims: int, variant: str, epsilon: float, n_points: int | None = None) -> Row:
        """CMP at ε per decision."""
        return self.dptt(dims, variant, Utility.cmp(), epsilon, n_points)

    def cmp_geo_global(self, dims: int, variant: str, epsilon: float) -> Row:
        """GEO with the global sensitivity (the domain, 10^9) at the CMP variant's final ε."""
        return self._geo_for(dims, variant, Utility.cmp(), epsilon, SPAN)

    def _geo_for(self, dims: int, variant: str, util: Utility, epsilon: float,
                 radius: float) -> Row:
        n = self.grid.n_points
        dkey = ("DP-TT", dims, n, Variant.parse(variant).label, util.name, util.sensitivity,
                float(epsilon))
        key = ("GEO", *dkey[1:], float(radius))
        if key not in self._rows:
            acct = self.dptt(dims, variant, util, epsilon)
            self._rows[key] = self.bench(dims).geo(variant, self._found[dkey],
                                                   epsilon=acct.final_epsilon_br,
                                                   radius=radius, account=acct)
        return self._rows[key]

    def geo_alone(self, dims: int, ratio: float) -> Row:
        """GEO answering one point per query at ε*/Δ = ``ratio`` (ε* = 1), Fig. 6.17."""
        key = ("GEO-alone", dims, float(ratio))
        if key not in self._rows:
            ones = np.ones(self.grid.n_queries, dtype=np.int64)
            self._rows[key] = self.bench(dims).geo("basic", ones, epsilon=1.0,
                                                   radius=1.0 / ratio)
        return self._rows[key]


__all__ = [
    "CMP_COMPARISON",
    "DIS_COMPARISON",
    "FAMILIES",
    "THESIS_EPSILONS",
    "THESIS_RADII",
    "Grid",
    "Sweep",
]
