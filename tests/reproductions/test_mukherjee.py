"""`ppknn reproduce mukherjee --quick` end to end (in-process)."""

from __future__ import annotations

import csv
import dataclasses
import inspect
import math
import re

import pytest

from ppknn.simulations.reporting import Claim, read_rows
from ppknn.simulations.reproduce import load, names
from ppknn_reproductions.experiments.pca import QUICK, run_grid_experiments
from ppknn_reproductions.mukherjee import run
from ppknn_reproductions.mukherjee_claims import check_claims, tradeoff_points

FIGURES = ("fig5_tradeoff", "fig6_worst_case", "fig8_attacks", "fig9_accuracy",
           "fig10_sanitize_time", "fig11_mining_time")


@pytest.fixture(scope="module")
def quick_run(quick_reproduction):
    """The session's one CLI run of `ppknn reproduce mukherjee --quick` (tests/conftest.py).

    ``(run, report)``: ``run.output`` holds the tables, ``run.figures`` the report's PNGs.
    """
    run = quick_reproduction("mukherjee")
    assert run.exit_code == 0, run.cli_output
    return run, run.report


def read(path):
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_registered():
    assert "mukherjee" in names()
    assert load("mukherjee").run is run
    assert "log" in inspect.signature(run).parameters  # the CLI passes its console


def test_progress_goes_to_the_log_not_to_stderr(quick_run, capfd, tmp_path):
    # the CLI hands its console to `log`, which prefixes every line with the name
    lines = quick_run[0].cli_output.splitlines()
    assert any(line.startswith("mukherjee: ") and "runs done" in line for line in lines)
    assert any(line.startswith("mukherjee: timing n=") for line in lines)
    capfd.readouterr()
    run_grid_experiments(dataclasses.replace(QUICK, datasets=("iris",), reps=1), tmp_path)
    assert capfd.readouterr().err == ""


def test_every_figure_has_a_table_and_a_plot(quick_run):
    run, report = quick_run
    for name in FIGURES:
        assert read(run.output / f"{name}.csv")
        assert (run.output / f"{name}.png").stat().st_size > 1000
        assert (run.figures / f"{name}.png").is_file()
        assert f"mukherjee/{name}.png" in report.read_text()


def test_tables_agree_with_the_theory(quick_run):
    run, _ = quick_run
    for row in read(run.output / "fig6_worst_case.csv"):
        b = float(row["b"])
        assert float(row["amp_min"]) == pytest.approx(math.exp(1 / b), rel=1e-5)
        assert float(row["amp_max"]) == pytest.approx(math.exp(1 / b), rel=1e-5)
        assert float(row["audit_eps_lower"]) <= 1 / b
    datasets = {r["dataset"] for r in read(run.output / "fig9_accuracy.csv")}
    assert datasets == {"wine", "iris", "ionosphere", "wdbc", "waveform", "synthetic-2",
                        "synthetic-8"}
    for row in read(run.output / "fig9_accuracy.csv"):
        for key in ("radius", "best_k", "k5"):
            assert 0.0 <= float(row[key]) <= 1.0


def test_report_sets_claims_beside_measurements(quick_run):
    _, report = quick_run
    text = report.read_text()
    assert "## Claims beside measurements" in text
    verdicts = re.findall(r"\*\*(reproduced|partly|differs|not measured)\*\*", text)
    assert len(verdicts) >= 14
    counts = {v: verdicts.count(v) for v in ("reproduced", "partly", "differs")}
    assert (f"Claims: {counts['reproduced']} reproduced, {counts['partly']} partly, "
            f"{counts['differs']} differ." in text)
    assert "pendigits, magic04 (not available offline)" in text
    assert "nan" not in text.lower().replace("n/a", "")
    assert "## Where this differs from the paper" in text
    assert "**Test points are not noised.**" in text


def test_claims_are_reporting_claims_with_unique_ids(quick_run):
    run, _ = quick_run
    tables = {p.stem: read_rows(p) for p in run.output.glob("*.csv")}
    claims = check_claims(tables, tables["releases"])
    assert all(isinstance(c, Claim) for c in claims)
    assert len({c.id for c in claims}) == len(claims)
    by_id = {c.id: c for c in claims}
    # Fig. 5: one accuracy claim per dataset and b, with its 95% interval where reps >= 2
    assert by_id["fig5-accuracy-b0.3-wine"].comparison == "between"
    assert by_id["fig5-accuracy-b0.3-wine"].interval is not None
    assert by_id["fig5-accuracy-b0.3-synthetic-8"].comparison == "at_least"
    # 6b: the paper's 2.8% is gamma * rho1, eq. (2) gives 2.73%: reads as differs
    assert by_id["fig6b-rho2"].measured == pytest.approx(2.73, abs=5e-3)
    assert by_id["fig6b-rho2"].verdict == "differs"


def test_headline_states_the_tradeoff_verdict(quick_run):
    run, report = quick_run
    text = report.read_text()
    tables = {p.stem: read_rows(p) for p in run.output.glob("*.csv")}
    tradeoff = next(c for c in check_claims(tables) if c.id == "fig5-tradeoff")
    names = list(dict.fromkeys(r["dataset"] for r in tables["fig9_accuracy"]))
    below, on, total = tradeoff_points(tables["fig5_tradeoff"], names)
    assert tradeoff.measured == below / total
    head = text.split("## Settings")[0]
    assert f"**{below} of {total} baseline points" in head
    assert f"{on} lie on it" in head and f"{total - below - on} above it" in head
    if tradeoff.verdict != "reproduced":
        assert "PCA-radius does not dominate the baselines" in head
        assert "main result is " + {"partly": "only partly reproduced",
                                    "differs": "not reproduced"}[tradeoff.verdict] in head


@pytest.mark.ray
def test_grids_fanned_out_on_ray_give_the_same_rows(ray_local, tmp_path):
    settings = dataclasses.replace(QUICK, datasets=("iris",), reps=2)
    *_, serial = run_grid_experiments(settings, tmp_path / "a")
    *_, parallel = run_grid_experiments(settings, tmp_path / "b", parallel="ray")
    assert len(serial) == 2 * 16
    drop = {"run_id"}
    assert [{k: repr(v) for k, v in r.items() if k not in drop} for r in serial] == \
        [{k: repr(v) for k, v in r.items() if k not in drop} for r in parallel]


def test_the_report_states_the_current_counting_not_its_history(quick_run):
    """The headline says how points on the line are counted (ON_LINE), in the present."""
    from ppknn_reproductions.mukherjee_claims import ON_LINE

    _, report = quick_run
    text = report.read_text()
    head = text.split("## Settings")[0]
    assert f"within {ON_LINE:g}".replace("e-0", "e-") + " of the line counts as on it" in head
    assert "Earlier" not in text and "earlier reproduction" not in text
    assert "Generated by `ppknn reproduce mukherjee --quick` (quick settings, inprocess" in text
