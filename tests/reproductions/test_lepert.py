"""`ppknn reproduce lepert`: every figure and claim from scenario grids of the dptt plugin.

The grids are declared on a small grid (the same figures and claims as ``--quick``, fewer
points, queries and parameter values); the end-to-end test reads the session's one run of
``ppknn reproduce lepert --quick`` (tests/conftest.py), which the CLI test shares.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from ppknn.simulations import reproduce
from ppknn.simulations.prepare import prepare_data
from ppknn.simulations.reporting import fmt
from ppknn.simulations.scenario import parse_scenario
from ppknn_reproductions.experiments.dptt_sweeps import (
    Grid,
    base_scenario,
    configurations,
    scenario_grids,
    write_datasets,
)

SMALL = Grid.quick(
    n_points=2000, n_queries=150, radii=(1e9, 1e5, 1e4, 1e3), cmp_epsilons=(1.0, 5.0, 17.0),
    families={"P": ("basic", "P4", "P8"), "E": ("E8",), "GS": ("GS",), "N": ("N5",),
              "GS-N": ("GS-N5",)},
    dis_comparison=("basic", "P8", "E8", "GS", "N5", "GS-N5"),
    cmp_comparison=("basic", "E8", "GS", "N5"), geo_ratios=(1e-6, 1e-4, 1e-2),
    sent_sizes=(500, 2000), sent_variants=("basic", "E8"))


def test_grids_declare_every_configuration_once_as_valid_dptt_scenarios(tmp_path):
    folder = write_datasets(SMALL, tmp_path / "data")
    grids, configs = scenario_grids(SMALL, folder)
    assert sum(map(len, configs)) == len(configurations(SMALL)) == 137
    assert [g.name for g in grids] == ["lepert-1d-200", "lepert-1d-2000", "lepert-1d-2000-draw1",
                                       "lepert-2d-200", "lepert-2d-500", "lepert-2d-2000",
                                       "lepert-2d-2000-draw1"]
    # the extra draw is another dataset of the same law: other points, same sizes
    draws = [prepare_data(parse_scenario({**base_scenario(SMALL, 2, 2000, folder, d),
                                          "protocol": {"name": "dptt", "epsilon": 1.0}}))
             for d in (0, 1)]
    assert draws[0].train_X.shape == draws[1].train_X.shape
    assert not np.array_equal(draws[0].train_X, draws[1].train_X)
    for g, cs in zip(grids, configs):
        scenarios = g.scenarios()
        assert len(scenarios) == len(cs)
        for (_point, sc), c in zip(scenarios, cs):
            p = sc.protocols[0]
            assert (p.name, p.utility, p.variant, p.epsilon, p.radius, p.geo_radius,
                    p.calibration) == ("dptt", c.utility, c.variant, c.epsilon, c.radius,
                                       c.geo_radius, c.calibration)
            assert sc.run.seed == sc.data.split_seed == SMALL.seed
    # the split gives the server exactly N rows and the client exactly Q queries, the same
    # every time, inside the declared public bounds [0, 10^9]
    base = base_scenario(SMALL, 2, 2000, folder)
    base["protocol"]["epsilon"] = 1.0
    a, b = (prepare_data(parse_scenario(base)) for _ in range(2))
    assert a.train_X.shape == (2000, 2) and a.queries.shape == (150, 2)
    np.testing.assert_array_equal(a.queries, b.queries)
    assert a.train_X.min() >= 0 and a.train_X.max() <= 1e9 and not a.bounds_from_data


@pytest.mark.slow
def test_small_reproduction_writes_figures_grids_and_report(quick_reproduction):
    module = reproduce.load("lepert")
    run = quick_reproduction("lepert")  # `ppknn reproduce lepert --quick`, run once
    assert run.exit_code == 0, run.cli_output
    grid, audited = Grid.quick(**module.QUICK_GRID), module.AuditSettings.quick()
    out, figures = run.output, run.figures
    text = run.report.read_text()
    images = re.findall(r"!\[[^\]]+\]\(lepert/([^)]+)\.png\)", text)
    assert len(images) >= 25
    for name in images:
        assert (figures / f"{name}.png").stat().st_size > 5000
        assert (out / f"{name}.png").is_file()
        assert f"(data: `{name}.csv`)" in text
        with (out / f"{name}.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(0.0 <= float(r["nn_accuracy"]) <= float(r["top5_accuracy"]) <= 1.0
                            for r in rows)
        # every accuracy carries its 95% interval
        assert all(float(r[f"{m}_low"]) <= float(r[f"{m}_accuracy"]) <= float(r[f"{m}_high"])
                   for r in rows for m in ("nn", "top5"))
    # every DP-TT point is a registry run: the grids' long tables hold one row per configuration
    grids = sorted((out / "grids").glob("grid-*.csv"))
    runs = []
    for path in grids:
        with path.open() as fh:
            runs += list(csv.DictReader(fh))
    assert len(runs) == len(configurations(grid))
    assert {r["protocol"] for r in runs} == {"dptt"}
    with (out / "fig6_02_dis_vs_geo_1d.csv").open() as fh:
        fig = list(csv.DictReader(fh))
    dis = [r for r in fig if r["series"] == "DP-TT-DIS"]
    geo = [r for r in fig if r["series"] == "GEO"]
    by_radius = {float(r["protocol.radius"]): r for r in runs
                 if r["dataset"] == f"lepert-normal-1d-{grid.n_points}" and r["utility"] == "dis"
                 and r["variant"] == "basic"}
    for d, g in zip(dis, geo):
        row = by_radius[float(d["radius"])]
        assert float(d["nn_accuracy"]) == float(row["nn_accuracy"])
        assert float(g["nn_accuracy"]) == float(row["geo_nn_accuracy"])
    # the report's numbers are generated: the accounting table (N = 100,000: H = 17) and
    # the claims table
    assert grid.n_points == 100_000
    assert "| E8 | 9 | 9 | 20 | 256 | 9.00 | 9.00 | 9.00 | 90.0 | 90.0 |" in text
    claims = [line for line in text.splitlines() if re.match(r"\| (Figs?\.|§)", line)]
    assert len(claims) >= 14
    verdicts = [re.search(r"\| \*\*(reproduced|partly|differs)\*\* \|", c) for c in claims]
    assert all(verdicts)
    best_raw = max(float(r["nn_accuracy"]) for r in dis)
    assert f"| DP-TT-DIS | 1,000 | 1.00e+09 | {fmt(best_raw)} | [" in text
    # the calibration reading and the audit, with intervals
    assert "exp(εu/Δ), thesis reading" in text and "if the mechanism was exp(εu/Δ)" in text
    audit = text[text.index("## Empirical privacy audit"):]
    # a proven CMP decision is ε/2-DP: promised 4 (bounded range, sum), really spent 2
    assert "basic" in audited.variants
    assert re.search(r"\| CMP \| exp\(εu/2Δ\), proven \| basic \| 8 \| 4.00 \| 4.00 \| 2.00 "
                     r"\| [0-9.]+ \| \[[-0-9.]+, [0-9.]+\] \| " + f"{audited.n_samples:,} \\|",
                     audit)
    calibration = text[text.index("## What the thesis's numbers imply"):]
    assert "over-charges CMP" in calibration and "final ε charged" in calibration
    # the spread over draws of the data: main draw, the other draw, a t interval
    spread = text[text.index("## Spread over draws of the data"):]
    assert re.search(r"\| 2-D basic DIS: largest top-5 accuracy over the radii \(Fig. 6.3\) \| "
                     r"[0-9.]+ \| [0-9.]+ \| [0-9.]+ \| \[[-0-9.]+, [0-9.]+\] \|", spread)
    # every deviation of the paper is listed
    deviations = text[text.index("## Where this differs from the paper"):]
    for needle in ("Gowalla", "number of queries", "Algorithm 5", "caption of Fig. 6.1",
                   "exp(εu/Δ)", "GEO baseline", "class label", "Algorithm 16"):
        assert needle in deviations
