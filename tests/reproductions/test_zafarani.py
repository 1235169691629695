"""The Zafarani reproduction end to end (quick), and its datasets."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from ppknn.core.errors import DataError
from ppknn.protocols.dp_nb.datasets import load_nb_dataset, synthetic_bounded


def test_quick_reproduction_writes_every_figure_and_the_report(quick_reproduction):
    from ppknn.simulations.reproduce import names

    assert "zafarani" in names()
    run = quick_reproduction("zafarani")  # `ppknn reproduce zafarani --quick`, run once
    assert run.exit_code == 0, run.cli_output
    out, figures = run.output, run.figures
    text = run.report.read_text()
    for name in ("accuracy_adult", "accuracy_glass", "accuracy_seeds", "bounds", "runtime",
                 "audit"):
        rows = list(csv.DictReader((out / f"{name}.csv").open()))
        assert rows, name
        assert (figures / f"{name}.png").stat().st_size > 1000
        assert f"zafarani/{name}.png" in text
    runs = list(csv.DictReader((out / "accuracy_runs.csv").open()))
    assert {r["method"] for r in runs} >= {"smooth", "vaidya", "bun-steinke", "non-private",
                                           "majority", "smooth, paper constant"}
    assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in runs)
    # the accuracy figures come from dp-nb grid rows (the majority line from the fold labels)
    assert {r["source"] for r in runs} == {"grid (dp-nb plugin)", "fold labels"}
    assert {r["source"] for r in runs if r["method"] != "majority"} == {"grid (dp-nb plugin)"}
    audit = list(csv.DictReader((out / "audit.csv").open()))
    assert all(float(r["exact"]) < float(r["claimed"]) for r in audit if r["proven"] == "True")
    for claim in ("Smooth sensitivity significantly improves accuracy", "Theorem 9",
                  "Fig. 13", "not available offline", "refused with `BudgetExhausted`"):
        assert claim in text
    assert "diffprivlib" in text and "nan" not in text.lower().replace("non-private", "")
    # the claims are data, each with a verdict, counted in the summary line
    assert "Claims: " in text and "**not measured**" in text
    for name in ("bounds_summary", "audit_ratios", "peer_summary"):  # the figures' own data
        assert list(csv.DictReader((out / f"{name}.csv").open())), name
        assert (figures / f"{name}.csv").is_file(), name  # beside the PNGs
    # the breast_cancer comparison comes from grid rows through the dp-nb plugin
    peer = list(csv.DictReader((out / "peer.csv").open()))
    assert {r["source"] for r in peer} >= {"grid (dp-nb plugin)"}
    assert len({r["fold"] for r in peer}) == 5
    for heading in ("Exact sensitivity against the pair bound", "breast_cancer against "
                    "diffprivlib", "**Verdict.**", "is not ε-DP", "95% t interval"):
        assert heading in text, heading
    assert "±" not in text.split("## Accuracy against ε")[1].split("##")[0]  # intervals


def _paired_row(dataset, epsilon, a, b, d, two_se):
    return dict(dataset=dataset, epsilon=epsilon, a=a, b=b, mean_difference=d, two_se=two_se,
                pairs=10)


def test_claims_follow_significance_at_two_standard_errors():
    from ppknn_reproductions.zafarani import QUICK, Results, beats_vaidya, claim_sections

    paired = [_paired_row("adult", 0.1, "smooth", "vaidya", 0.03, 0.01),    # better
              _paired_row("adult", 1.0, "smooth", "vaidya", 0.01, 0.02),    # not significant
              _paired_row("adult", 10.0, "smooth", "vaidya", -0.05, 0.02),  # worse
              _paired_row("adult", 1.0, "smooth, Gaussian δ=1/n", "smooth", -0.03, 0.01),
              _paired_row("adult", 1.0, "bun-steinke", "smooth", -0.03, 0.01)]
    audit = [dict(noise=n, neighbours=nb, claimed=0.5, exact=x, audited=0.9 * x,
                  proven=n != "paper")
             for n, nb, x in (("polynomial", "replace", 0.2), ("cauchy", "replace", 0.1),
                              ("paper", "replace", 0.55), ("paper", "add-remove", 0.45))]
    times = [dict(dataset="s", n=n, version=v, seconds=t) for n in QUICK.sizes
             for v, t in (("non-private", 0.001), ("global (vaidya)", 0.01), ("smooth", 0.08))]
    res = Results(QUICK, {"adult": None}, [], [], paired, [], "", [], times, audit, {}, {})
    rows = beats_vaidya(res)["adult"]
    assert [(e, c.verdict) for e, c in rows] == [(0.1, "reproduced"), (1.0, "partly"),
                                                 (10.0, "differs")]
    assert rows[0][1].interval == pytest.approx((0.02, 0.04))
    claims = {c.id: c for sec in claim_sections(res) for c in sec.claims}
    assert claims["gaussian-adult-eps1"].verdict == "differs"
    assert claims["bun-steinke-adult-eps1"].verdict == "reproduced"
    assert claims["thm9-paper-replace"].verdict == "differs"
    assert claims["thm9-paper-add-remove"].verdict == "reproduced"
    assert claims["thm9-proven"].measured == pytest.approx(0.4)
    assert claims["fig13-ratio-5000"].measured == pytest.approx(8.0)  # 10,000 rows: nearest
    assert claims["fig13-ratio-1000000"].verdict == "not measured"  # quick: no 10^6 rows
    assert claims["fig5-mushroom"].verdict == "not measured"


def test_datasets_keep_raw_categories():
    adult = load_nb_dataset("adult")
    assert adult.X.shape == (48842, 14) and len(adult.numeric) == 6
    assert "?" in adult.category_names[1]  # workclass has missing values as a category
    assert adult.numeric_only().X.shape == (48842, 6)
    assert np.all(adult.X[:, list(adult.numeric)] >= adult.lower)


def test_unavailable_and_unknown_datasets_say_so():
    with pytest.raises(DataError, match="not available offline"):
        load_nb_dataset("mushroom")
    with pytest.raises(DataError, match="unknown dataset"):
        load_nb_dataset("nope")


def test_synthetic_data_is_seeded_and_bounded():
    a, b = synthetic_bounded(500, seed=3), synthetic_bounded(500, seed=3)
    assert np.array_equal(a.X, b.X) and a.X.min() >= 0 and a.X.max() <= 100
