"""`ppknn reproduce mukherjee --quick` end to end (in-process)."""

from __future__ import annotations

import csv
import dataclasses
import math
import re

import pytest

from simulations.experiments.pca import QUICK, run_experiments
from simulations.reproduce import REPRODUCTIONS, load
from simulations.reproduce.mukherjee import run

FIGURES = ("fig5_tradeoff", "fig6_worst_case", "fig8_attacks", "fig9_accuracy",
           "fig10_sanitize_time", "fig11_mining_time")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mukherjee")
    report = run(tmp / "out", quick=True, runtime="inprocess", report=tmp / "mukherjee.md")
    return tmp, report


def read(path):
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_registered():
    assert "mukherjee" in REPRODUCTIONS
    assert load("mukherjee").run is run


def test_every_figure_has_a_table_and_a_plot(quick_run):
    tmp, report = quick_run
    for name in FIGURES:
        assert read(tmp / "out" / f"{name}.csv")
        assert (tmp / "out" / f"{name}.png").stat().st_size > 1000
        assert (tmp / "mukherjee" / f"{name}.png").is_file()
        assert f"mukherjee/{name}.png" in report.read_text()


def test_tables_agree_with_the_theory(quick_run):
    tmp, _ = quick_run
    for row in read(tmp / "out" / "fig6_worst_case.csv"):
        b = float(row["b"])
        assert float(row["amp_min"]) == pytest.approx(math.exp(1 / b), rel=1e-5)
        assert float(row["amp_max"]) == pytest.approx(math.exp(1 / b), rel=1e-5)
        assert float(row["audit_eps_lower"]) <= 1 / b
    datasets = {r["dataset"] for r in read(tmp / "out" / "fig9_accuracy.csv")}
    assert datasets == {"wine", "iris", "ionosphere", "wdbc", "waveform", "synthetic-2",
                        "synthetic-8"}
    for row in read(tmp / "out" / "fig9_accuracy.csv"):
        for key in ("radius", "best_k", "k5"):
            assert 0.0 <= float(row[key]) <= 1.0


def test_report_sets_claims_beside_measurements(quick_run):
    _, report = quick_run
    text = report.read_text()
    assert "## Claims beside measurements" in text
    verdicts = re.findall(r"\*\*(holds|partly|differs|not measured)\*\*", text)
    assert len(verdicts) >= 14
    assert "pendigits, magic04 (not available offline)" in text
    assert "nan" not in text.lower().replace("n/a", "")


@pytest.mark.ray
def test_sessions_fanned_out_on_ray_give_the_same_rows(ray_local, tmp_path):
    settings = dataclasses.replace(QUICK, datasets=("iris",), reps=2)
    _, serial = run_experiments(settings, "inprocess", tmp_path, workers=1)
    _, parallel = run_experiments(settings, "inprocess", tmp_path, workers=2)
    assert len(serial) == 2 * 16
    assert [{k: repr(v) for k, v in r.items()} for r in serial] == \
        [{k: repr(v) for k, v in r.items()} for r in parallel]
