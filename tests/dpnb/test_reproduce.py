"""The Zafarani reproduction end to end (quick), and its datasets."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from core.errors import DataError
from protocols.dp_nb.datasets import load_nb_dataset, synthetic_bounded


def test_quick_reproduction_writes_every_figure_and_the_report(tmp_path):
    from simulations.reproduce import REPRODUCTIONS, load

    assert "zafarani" in REPRODUCTIONS
    report = load("zafarani").run(tmp_path / "out", quick=True, runtime="inprocess",
                                  report=tmp_path / "zafarani.md")
    text = report.read_text()
    for name in ("accuracy_adult", "accuracy_glass", "accuracy_seeds", "bounds", "runtime",
                 "audit"):
        rows = list(csv.DictReader((tmp_path / "out" / f"{name}.csv").open()))
        assert rows, name
        assert (tmp_path / "zafarani" / f"{name}.png").stat().st_size > 1000
        assert f"zafarani/{name}.png" in text
    runs = list(csv.DictReader((tmp_path / "out" / "accuracy_runs.csv").open()))
    assert {r["method"] for r in runs} >= {"smooth", "vaidya", "bun-steinke", "non-private",
                                           "majority", "smooth, paper constant"}
    assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in runs)
    audit = list(csv.DictReader((tmp_path / "out" / "audit.csv").open()))
    assert all(float(r["exact"]) < float(r["claimed"]) for r in audit if r["proven"] == "True")
    for claim in ("Smooth sensitivity significantly improves accuracy", "Theorem 9",
                  "Fig. 13", "not available offline", "refused with `BudgetExhausted`"):
        assert claim in text
    assert "diffprivlib" in text and "nan" not in text.lower().replace("non-private", "")


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
