"""The grid of the thesis's experiments (§6), declared as scenario grids, and the rows they give.

:class:`Grid` fixes sizes and parameter lists (the reproduction's settings);
:func:`configurations` lists every DP-TT configuration the figures and
claims read, :func:`scenario_grids` turns them into
:class:`ppknn.simulations.grids.Grid` scenario grids of the ``dptt``
registry plugin (one grid per dataset: the thesis's synthetic law at one
dimension and size, written as CSV files by :func:`write_datasets`), and
:meth:`Sweep.run` runs them through the registry exactly as ``ppknn run``
runs a scenario (:func:`ppknn.simulations.grids.run_grids`). The GEO
baseline of a configuration is the plugin's ``geo_*`` metrics of the same
run (``protocol.geo_radius``), released as fairly as the thesis prescribes
against that run's release.

Experiment settings taken from the thesis: DIS with ε = 1 per decision and
the sensitivity bound (privacy radius) r from 10^9 down to 10^3 by decades;
GEO at the same radius with ε* = the DP-TT variant's final ε (bounded-range,
δ of :data:`~protocols.dptt.variants.DEFAULT_DELTA`); CMP over
ε ∈ {0.01, ..., 17}; GEO alone over ε*/Δ from 10^-9 to 10^-3 (ε* = 1).
Not given by the thesis and chosen here: the number of queries, the split
and neighbourhood sizes of each family (the thesis names P0/P4/P8, E8, N5,
N20), and the seed.

Every run of the grids uses the settings' seed as ``[run].seed`` (the
client's exponential-mechanism stream and GEO's stream) and as
``[data].split_seed`` (which rows of the pool are the queries).

Examples
--------
>>> grid = Grid.quick()
>>> grid.n_points, len(grid.cmp_epsilons) < len(THESIS_EPSILONS)
(100000, True)
>>> configs = configurations(Grid.quick(n_points=2000, dims=(1,)))
>>> len(configs) == len(set(configs)), configs[0].utility
(True, 'cmp')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.rng import SeedPolicy
from ppknn.protocols.dptt.data import SPAN, synthetic_points
from ppknn.protocols.dptt.variants import DEFAULT_DELTA
from ppknn.simulations.grids import Grid as ScenarioGrid
from ppknn.simulations.grids import run_grids
from ppknn.simulations.reporting import jsonio
from ppknn_reproductions.experiments.dptt_evaluation import Row

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
CLAIM_VARIANTS = ("basic", "E8", "GS", "P4", "P8")
"""CMP variants the claims read besides the comparison."""
LIMIT_EPSILON = 200.0
"""ε per decision at which CMP is deterministic in practice (a wrong side has chance e^-100)."""
LIMIT_VARIANTS = ("E8", "GS")
"""Variants whose ε → ∞ limit the claims read."""
CALIBRATION_VARIANTS = ("E8",)
"""CMP variants measured under both calibrations (the thesis's 95% at final ε ≈ 50)."""


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
    data_draws: int = 4
    """Extra draws of the dataset (each its own seed stream) on which the headline
    configurations are re-run, to measure the spread that the binomial intervals over
    queries do not show (the tree's top splits are shared by every query)."""

    @classmethod
    def quick(cls, **overrides: Any) -> Grid:
        """Small lists, same sizes: every figure and claim from a few hundred short runs."""
        base = cls(n_queries=300, radii=(1e9, 1e7, 1e5, 1e4, 1e3),
                   cmp_epsilons=(0.1, 1.0, 3.0, 5.0, 7.0, 10.0, 12.0, 17.0),
                   families={"P": ("basic", "P4", "P8"), "E": ("E4", "E8"), "GS": ("GS",),
                             "N": ("N5", "N20"), "GS-N": ("GS-N5", "GS-N20")},
                   geo_ratios=(1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2), sent_sizes=(1000, 10_000),
                   data_draws=1)
        return replace(base, **overrides)

    @property
    def size_comparison(self) -> tuple[int, ...]:
        """Fig. 6.18's database sizes: the run's size and a tenth of it."""
        return (self.n_points // 10, self.n_points)

    def dataset(self, dims: int, n_points: int, draw: int = 0) -> str:
        """The name of the synthetic dataset of ``dims``-D data with ``n_points`` server rows.

        ``draw`` > 0 names an extra draw of the same law (:attr:`data_draws`).
        """
        name = f"lepert-{self.distribution}-{dims}d-{n_points}"
        return f"{name}-draw{draw}" if draw else name


@dataclass(frozen=True)
class Config:
    """One DP-TT run of the reproduction (and the GEO baseline measured beside it)."""

    dims: int
    n_points: int
    utility: str
    variant: str
    epsilon: float
    radius: float | None = None
    geo_radius: float | None = None
    geo_epsilon: float | None = None
    calibration: str = "proven"
    draw: int = 0
    """Which draw of the dataset (0: the main one)."""

    def protocol(self) -> tuple[Any, ...]:
        """The values of :data:`PROTOCOL_KEYS`, in order."""
        return (self.utility, self.variant, float(self.epsilon), self.radius, self.geo_radius,
                self.geo_epsilon, self.calibration)


PROTOCOL_KEYS = ("protocol.utility", "protocol.variant", "protocol.epsilon", "protocol.radius",
                 "protocol.geo_radius", "protocol.geo_epsilon", "protocol.calibration")
"""The zipped axis of every grid: one configuration per point."""


def _variants(*groups: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(v for group in groups for v in group))


def cmp_config(g: Grid, dims: int, n_points: int, variant: str, epsilon: float,
               calibration: str = "proven") -> Config:
    """The configuration of a CMP run.

    Basic at the run's size carries GEO at the global sensitivity (Figs.
    6.28/6.29), so the figures that read basic share its run.
    """
    geo = SPAN if (variant == "basic" and n_points == g.n_points and calibration == "proven"
                   and epsilon in g.cmp_epsilons) else None
    return Config(dims, n_points, "cmp", variant, epsilon, geo_radius=geo,
                  calibration=calibration)


def configurations(g: Grid) -> list[Config]:
    """Every configuration the figures and claims read, each once, in a fixed order."""
    out: list[Config] = []
    families = [v for labels in g.families.values() for v in labels]
    cmp_variants = _variants(families, g.cmp_comparison, CLAIM_VARIANTS)
    n = g.n_points
    for dims in g.dims:
        for v in cmp_variants:  # CMP; GEO at the global sensitivity beside basic
            out += [cmp_config(g, dims, n, v, e) for e in g.cmp_epsilons]
            if v in LIMIT_VARIANTS:
                out.append(cmp_config(g, dims, n, v, LIMIT_EPSILON))
        for v in CALIBRATION_VARIANTS:
            out += [cmp_config(g, dims, n, v, e, "thesis-reading") for e in g.cmp_epsilons]
        for v in _variants(families, g.dis_comparison):  # DIS and GEO at the same radius
            out += [Config(dims, n, "dis", v, g.dis_epsilon, radius=r, geo_radius=r)
                    for r in g.radii]
        out += [Config(dims, n, "cmp", "basic", 1.0, geo_radius=1.0 / x, geo_epsilon=1.0)
                for x in g.geo_ratios]  # Fig. 6.17: GEO alone (ε* = 1)
        for size in g.size_comparison:  # Fig. 6.18
            out += [cmp_config(g, dims, size, "basic", e) for e in g.cmp_epsilons]
    if 2 in g.dims:  # Fig. 6.1 (2-D)
        out += [cmp_config(g, 2, size, v, g.sent_epsilon)
                for size in g.sent_sizes for v in g.sent_variants]
    out += draw_configurations(g)
    return list(dict.fromkeys(out))


DRAW_RADIUS = 1e4
"""Fig. 6.15's radius, re-run on every draw."""


def draw_configurations(g: Grid) -> list[Config]:
    """The headline configurations re-run on each extra draw of the data (no GEO).

    E8 CMP over the ε grid (both dimensions); in 2-D, basic DIS over the radii
    (Fig. 6.3) and the DIS comparison at r = 10^4 (Fig. 6.15).
    """
    out: list[Config] = []
    n = g.n_points
    for draw in range(1, g.data_draws + 1):
        for dims in g.dims:
            out += [Config(dims, n, "cmp", "E8", e, draw=draw) for e in g.cmp_epsilons]
        if 2 in g.dims:
            out += [Config(2, n, "dis", "basic", g.dis_epsilon, radius=r, draw=draw)
                    for r in g.radii]
            if DRAW_RADIUS in g.radii:
                out += [Config(2, n, "dis", v, g.dis_epsilon, radius=DRAW_RADIUS, draw=draw)
                        for v in g.dis_comparison if v != "basic"]
    return out


def _sizes(g: Grid) -> list[tuple[int, int, int]]:
    return sorted({(c.dims, c.n_points, c.draw) for c in configurations(g)})


def write_datasets(g: Grid, folder: Path) -> Path:
    """Write the synthetic datasets the grids read (CSV + ``manifest.json``); returns ``folder``.

    Each dataset is ``n + Q`` points of the thesis's law (:mod:`protocols.dptt.data`), the
    server's ``n`` rows and the client's ``Q`` queries once split; the label (needed
    by the registry's classification columns, unused by the thesis's accuracies) is
    whether the first coordinate lies above the middle of the domain. Existing files
    are rewritten only when their content would differ.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    policy = SeedPolicy(root=g.seed)
    manifest: dict[str, Any] = {}
    for dims, n, draw in _sizes(g):
        name = g.dataset(dims, n, draw)
        stream = (policy.generator("data", dims, n) if not draw
                  else policy.generator("data", dims, n, "draw", draw))
        x = synthetic_points(n + g.n_queries, dims, stream,
                             distribution=g.distribution)
        cols = {f"x{i}": x[:, i] for i in range(dims)}
        cols["label"] = (x[:, 0] >= SPAN / 2).astype(np.int64)
        path = folder / f"{name}.csv"
        pcsv.write_csv(pa.table(cols), path)
        manifest[name] = {"file": path.name, "label": "label"}
    (folder / "manifest.json").write_text(jsonio.dumps(manifest))
    return folder


def base_scenario(g: Grid, dims: int, n_points: int, data_dir: Path, draw: int = 0
                  ) -> dict[str, Any]:
    """The scenario every run on one dataset shares (the protocol keys come from the axis)."""
    return {
        "data": {"dataset": g.dataset(dims, n_points, draw), "data_dir": str(data_dir),
                 "test_fraction": g.n_queries / (n_points + g.n_queries),
                 "max_queries": g.n_queries, "split_seed": g.seed,
                 "bounds": {"lower": [0.0] * dims, "upper": [SPAN] * dims}},
        "parties": {"n": 1},
        "protocol": {"name": "dptt", "delta": g.delta, "predict": "nearest"},
        "run": {"seed": g.seed, "name": "lepert"},
    }


def scenario_grids(g: Grid, data_dir: Path) -> tuple[list[ScenarioGrid], list[list[Config]]]:
    """One scenario grid per dataset and the configurations of its points, in order."""
    by_data: dict[tuple[int, int, int], list[Config]] = {}
    for c in configurations(g):
        by_data.setdefault((c.dims, c.n_points, c.draw), []).append(c)
    grids, configs = [], []
    for (dims, n, draw), cs in sorted(by_data.items()):
        name = f"lepert-{dims}d-{n}" + (f"-draw{draw}" if draw else "")
        grids.append(ScenarioGrid(name, base=base_scenario(g, dims, n, data_dir, draw),
                                  axes={PROTOCOL_KEYS: [c.protocol() for c in cs]},
                                  seeds=(g.seed,)))
        configs.append(cs)
    return grids, configs


NAN = float("nan")


def dptt_row(c: Config, r: dict[str, Any]) -> Row:
    """The DP-TT :class:`Row` of one grid row."""
    return Row(method="DP-TT", dims=c.dims, n_points=int(r["n_points"]),
               n_queries=int(r["queries"]), utility=c.utility, variant=str(r["variant"]),
               epsilon=float(r["per_decision_epsilon"]),
               radius=float(c.radius) if c.radius is not None else NAN,
               compositions=int(r["compositions"]),
               final_epsilon_br=float(r["final_epsilon_br"]),
               final_epsilon_sum=float(r["final_epsilon_sum"]), geo_per_unit=NAN,
               nn_accuracy=float(r["nn_accuracy"]), top5_accuracy=float(r["top5_accuracy"]),
               released_mean=float(r["released_mean"]), seen_fraction=float(r["seen_fraction"]),
               rounds=int(r["rounds"]), messages=2 * int(r["rounds"]) + 2,
               stated_final_epsilon_br=float(r["stated_final_epsilon_br"]),
               calibration=str(r["calibration"]))


def geo_row(c: Config, r: dict[str, Any], *, alone: bool = False) -> Row:
    """The GEO :class:`Row` measured beside one grid row (``alone``: no DP-TT account)."""
    return Row(method="GEO", dims=c.dims, n_points=int(r["n_points"]),
               n_queries=int(r["queries"]), utility="-", variant=c.variant,
               epsilon=float(r["geo_epsilon"]), radius=float(r["geo_radius"]),
               compositions=0 if alone else int(r["compositions"]),
               final_epsilon_br=NAN if alone else float(r["final_epsilon_br"]),
               final_epsilon_sum=NAN if alone else float(r["final_epsilon_sum"]),
               geo_per_unit=float(r["geo_per_unit"]),
               nn_accuracy=float(r["geo_nn_accuracy"]),
               top5_accuracy=float(r["geo_top5_accuracy"]),
               released_mean=float(r["geo_released_mean"]), seen_fraction=NAN, rounds=1,
               messages=2)


@dataclass(frozen=True)
class DataFacts:
    """What the claims read off one dataset: the tree's height and the nearest-point gaps."""

    height: int
    nearest: np.ndarray
    """Per query, the distance to its nearest server point."""


class Sweep:
    """The rows of every configuration of a :class:`Grid`, measured by :meth:`run`.

    The lookups (:meth:`dis`, :meth:`cmp`, ...) answer from those rows; a
    configuration that :func:`configurations` does not list is an error
    (the figures and claims may only read what the grids ran).
    """

    def __init__(self, grid: Grid, rows: dict[Config, dict[str, Any]],
                 facts: dict[int, DataFacts]) -> None:
        self.grid = grid
        self._rows = rows
        self.facts = facts

    @classmethod
    def run(cls, grid: Grid, data_dir: Path, *, parallel: str = "sequential",
            progress: Callable[..., Any] | None = None,
            raw: dict[str, list[dict[str, Any]]] | None = None) -> Sweep:
        """Write the datasets, run every scenario grid, keep the rows.

        ``raw``, when given, receives each scenario grid's rows as
        :func:`~ppknn.simulations.grids.run_grids` returned them.
        """
        from scipy.spatial import cKDTree

        from ppknn.protocols.dptt.tree import tree_height
        from ppknn.simulations.prepare import prepare_data
        from ppknn.simulations.scenario import parse_scenario

        write_datasets(grid, data_dir)
        grids, configs = scenario_grids(grid, data_dir)
        out = run_grids(grids, parallel=parallel, progress=progress)
        if raw is not None:
            raw.update(out)
        rows = {c: r for g, cs in zip(grids, configs) for c, r in zip(cs, out[g.name])}
        facts = {}
        for dims in grid.dims:
            base = base_scenario(grid, dims, grid.n_points, data_dir)
            base["protocol"]["epsilon"] = 1.0  # any: only the split is read
            data = prepare_data(parse_scenario(base))
            gaps, _ = cKDTree(data.train_X).query(data.queries, k=1)
            facts[dims] = DataFacts(height=tree_height(len(data.train_y)),
                                    nearest=np.asarray(gaps, dtype=np.float64))
        return cls(grid, rows, facts)

    def rows(self) -> list[Row]:
        """Every DP-TT row."""
        return [dptt_row(c, r) for c, r in self._rows.items()]

    def _get(self, c: Config) -> dict[str, Any]:
        try:
            return self._rows[c]
        except KeyError:
            raise ConfigError(f"the reproduction read a configuration its grids did not run: "
                              f"{c}") from None

    def height(self, dims: int) -> int:
        """The worst-case tree height of the run's ``dims``-D data."""
        return self.facts[dims].height

    def median_gap(self, dims: int) -> float:
        """The median distance from a query to its nearest server point (``dims``-D)."""
        f = self.facts.get(dims)
        return float(np.median(f.nearest)) if f is not None else math.nan

    def dis(self, dims: int, variant: str, radius: float) -> tuple[Row, Row]:
        """DIS at radius r (ε = the grid's) and GEO at the same radius and final ε."""
        c = Config(dims, self.grid.n_points, "dis", variant, self.grid.dis_epsilon,
                   radius=radius, geo_radius=radius)
        r = self._get(c)
        return dptt_row(c, r), geo_row(c, r)

    def cmp(self, dims: int, variant: str, epsilon: float, n_points: int | None = None, *,
            calibration: str = "proven") -> Row:
        """CMP at ε per decision."""
        c = cmp_config(self.grid, dims, n_points or self.grid.n_points, variant, epsilon,
                       calibration)
        return dptt_row(c, self._get(c))

    def cmp_geo_global(self, dims: int, variant: str, epsilon: float) -> Row:
        """GEO with the global sensitivity (the domain, 10^9) at the CMP variant's final ε."""
        c = Config(dims, self.grid.n_points, "cmp", variant, epsilon, geo_radius=SPAN)
        return geo_row(c, self._get(c))

    def on_draw(self, draw: int, dims: int, utility: str, variant: str, epsilon: float,
                radius: float | None = None) -> Row:
        """A headline configuration on data draw ``draw`` (0: the main draw)."""
        if draw == 0:
            if utility == "dis":
                return self.dis(dims, variant, float(radius or 0))[0]
            return self.cmp(dims, variant, epsilon)
        c = Config(dims, self.grid.n_points, utility, variant, epsilon, radius=radius,
                   draw=draw)
        return dptt_row(c, self._get(c))

    def geo_alone(self, dims: int, ratio: float) -> Row:
        """GEO answering one point per query at ε*/Δ = ``ratio`` (ε* = 1), Fig. 6.17."""
        c = Config(dims, self.grid.n_points, "cmp", "basic", 1.0, geo_radius=1.0 / ratio,
                   geo_epsilon=1.0)
        return geo_row(c, self._get(c), alone=True)


__all__ = [
    "CMP_COMPARISON",
    "DIS_COMPARISON",
    "FAMILIES",
    "LIMIT_EPSILON",
    "PROTOCOL_KEYS",
    "THESIS_EPSILONS",
    "THESIS_RADII",
    "DRAW_RADIUS",
    "Config",
    "DataFacts",
    "Grid",
    "Sweep",
    "base_scenario",
    "cmp_config",
    "configurations",
    "draw_configurations",
    "scenario_grids",
    "write_datasets",
]
