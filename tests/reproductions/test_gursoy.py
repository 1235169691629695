"""`ppknn reproduce gursoy --quick`: each figure as CSV + PNG; report numbers are the run's."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from ppknn_reproductions import gursoy

FIGURES = ["fig07_rn_eps0.5", "fig08_rn_eps1", "fig09_rn_eps2", "fig10_conversion_avre",
           "fig11_conversion_rmse", "fig12_knn_eps0.5", "fig13_knn_eps1", "fig14_knn_eps2"]


@pytest.fixture(scope="module")
def quick_run(quick_reproduction):
    """``(output folder, report)`` of `ppknn reproduce gursoy --quick` (run once)."""
    run = quick_reproduction("gursoy")
    assert run.exit_code == 0, run.cli_output
    return run.output, run.report


def _rows(path):
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_every_figure_has_a_csv_and_a_png(quick_run):
    root, report = quick_run
    for name in FIGURES:
        assert (root / f"{name}.csv").stat().st_size > 0
        png = root / "gursoy" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"](gursoy/{name}.png)" in report.read_text()
    datasets = {r["dataset"] for r in _rows(root / "fig08_rn_eps1.csv")}
    assert datasets == {"banana", "phoneme", "banknote", "thyroid"}


def test_report_headline_numbers_are_computed_from_the_rows(quick_run):
    root, report = quick_run
    rows = _rows(root / "rows.csv")
    text = report.read_text()

    def acc(dataset, classifier, eps=None):
        vals = [float(r["accuracy"]) for r in rows if r["figure"] == "rn"
                and r["dataset"] == dataset and r["classifier"] == classifier
                and (eps is None or float(r["epsilon"]) == eps)]
        return np.mean(vals)

    for dataset in ("banana", "banknote"):
        loss = 100 * (acc(dataset, "non-private") - acc(dataset, "proposed", 1.0))
        claim = [line for line in text.splitlines()
                 if f"*{dataset}: non-private minus proposed r-N accuracy at ε = 1*" in line]
        assert len(claim) == 1 and f"| {loss:.1f}% |" in claim[0]  # measured, no CI in quick
    assert "ppknn reproduce gursoy --quick" in text
    assert "stand-in" in text and "PrivBayes" in text


def test_claims_are_data_with_computed_verdicts(quick_run):
    _, report = quick_run
    text = report.read_text()
    summary = re.search(r"^Claims: (\d+) reproduced, (\d+) partly, (\d+) differ\.$", text, re.M)
    assert summary is not None
    rows = [line for line in text.splitlines() if re.search(r"\| \*\*(reproduced|partly|differs)"
                                                            r"\*\* \|", line)]
    assert len(rows) == sum(int(n) for n in summary.groups())
    assert sum("non-private minus proposed" in r for r in rows) == 4  # one loss claim per dataset
    assert sum("baseline loss / proposed loss" in r for r in rows) == 4
    assert sum("banknote: proposed r-N accuracy" in r for r in rows) == 3
    assert sum("best AvRE in r" in r for r in rows) == 3
    assert sum("empirical ε lower bound" in r for r in rows) == 3
    assert "## Where this differs from the paper" in text


def test_ledger_spent_exactly_what_was_asked(quick_run):
    _, report = quick_run
    setup = report.read_text().split("## r-N")[0]
    spent_budget = [line.split("|")[-2].strip() for line in setup.splitlines()
                    if line.startswith("| b") or line.startswith("| p") or line.startswith("| t")]
    pairs = [tuple(x.strip() for x in v.split("/")) for v in spent_budget if "/" in v]
    assert len(pairs) == 4 and all(a == b for a, b in pairs)


def test_conversion_and_audit_tables(quick_run):
    root, _ = quick_run
    avre = _rows(root / "fig10_conversion_avre.csv")
    assert {r["algorithm"] for r in avre} == {"interactive", "noninteractive"}
    assert all(float(r["avre_mean"]) >= 0 for r in avre)
    audit = _rows(root / "audit.csv")
    assert [(r["algorithm"], r["calibration"]) for r in audit] == [
        ("proposed", "claimed"), ("baseline-laplace", "claimed"),
        ("baseline-exponential", "claimed"), ("proposed", "ignore-overlaps")]


def test_figure_points_are_registry_runs_with_a_charged_radius(quick_run):
    root, _ = quick_run
    rn = _rows(root / "grid-rn.csv")
    s = gursoy.QUICK
    assert {r["protocol"] for r in rn} == {"dp-knn"}
    assert all(r["task"] == "rn" and float(r["radius_epsilon"]) == s.radius_epsilon for r in rn)
    for r in rn:  # each request paid its classification ε plus the radius's ε_r
        assert float(r["epsilon_spent"]) == pytest.approx(float(r["protocol.epsilon"])
                                                          + s.radius_epsilon, abs=1e-12)
    rows = [r for r in _rows(root / "rows.csv") if r["figure"] == "rn"
            and r["classifier"] != "non-private"]
    assert len(rows) == len(rn)
    assert "PrivacyLeakWarning" not in rn[0]["privacy_warnings"]  # the message, not the class
    assert all("training rows" in r["privacy_warnings"] for r in rn)
    knn = _rows(root / "grid-knn.csv")
    assert len(knn) == len(s.datasets) * len(s.knn_ks) * len(s.knn_epsilons) * 3


@pytest.mark.parametrize("quick, runtime, expected", [
    (False, "ray", "ppknn reproduce gursoy --runtime ray"),
    (False, "inprocess", "ppknn reproduce gursoy"),
    (True, "ray", "ppknn reproduce gursoy --quick --runtime ray"),
])
def test_the_report_names_the_command_with_the_documented_runtime_option(quick, runtime,
                                                                         expected):
    """The header's command reproduces the report: the CLI's ``--runtime``, not a hidden
    alias; the report of the quick in-process run names its own command."""
    assert gursoy.command(quick=quick, runtime=runtime) == expected


def test_the_quick_report_header_is_its_command(quick_run):
    _, report = quick_run
    head = report.read_text().splitlines()[2]
    assert head.startswith("Generated by `ppknn reproduce gursoy --quick` (quick settings, "
                           "inprocess runtime")
    assert "Earlier" not in report.read_text()
