"""The Mukherjee reproduction as scenario grids: the same releases, through the registry."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings

import numpy as np
import pytest

from ppknn.core.errors import PrivacyLeakWarning
from ppknn.protocols.pca_perturbation.datasets import PaperDataset
from ppknn.simulations.grids import run_grids
from ppknn.simulations.prepare import load_scenario_dataset
from ppknn.simulations.results import summary_of
from ppknn.simulations.runner import execute
from ppknn.simulations.sweep import table_row
from ppknn_reproductions.experiments.pca import (
    QUICK,
    RELEASE_KEYS,
    materialise,
    paper_grids,
    paper_jobs,
    release_points,
    release_row,
)
from ppknn_reproductions.mukherjee_claims import tradeoff_points


def _label(values: tuple) -> str:
    point = dict(zip(RELEASE_KEYS, values))
    return release_row({"dataset": "d", "seed": 0, "queries": 1, "run_id": "r", **point},
                       QUICK)["label"]


@pytest.mark.parametrize("m", [4, 13, 33, 100])
def test_the_grid_declares_the_sessions_releases(m):
    """One grid point per release of :func:`paper_jobs`, in the same order."""
    assert [_label(v) for v in release_points(m)] == \
        [j.request.label for j in paper_jobs(m, QUICK)]


def test_release_row_reads_the_plugin_metrics():
    row = {"dataset": "iris", "seed": QUICK.seed + 3, "queries": 15, "run_id": "x",
           **dict(zip(RELEASE_KEYS, release_points(4)[2])),
           "accuracy_radius": 0.8, "accuracy_best_k": None, "accuracy_fixed_k": 0.6,
           "privacy_transform_attack": 1.1, "privacy_correlation_attack": 0.9,
           "correlation_attack_s2": 1, "best_k": 7, "amplification": 148.4,
           "amplification_min": 148.4}
    r = release_row(row, QUICK)
    assert (r["rep"], r["label"], r["param"]) == (3, "PCA-radius b=0.2", 0.2)
    assert r["acc_radius"] == 0.8 and np.isnan(r["acc_best-k"]) and r["best_s2"] == 1
    assert r["best_k"] == 7 and np.isnan(r["E"])


def _tiny(tmp_path):
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (40, 4)), rng.normal(3, 1, (40, 4))])
    y = np.repeat([0, 1], 40)
    ds = {"tiny": PaperDataset("tiny", X, y, 2, (), "test data")}
    return ds, materialise(ds, tmp_path / "datasets")


def test_materialised_data_are_read_back_exactly(tmp_path):
    ds, folder = _tiny(tmp_path)
    back = load_scenario_dataset("tiny", str(folder))
    assert np.array_equal(back.X, ds["tiny"].X) and np.array_equal(back.y, ds["tiny"].y)
    assert json.loads((folder / "manifest.json").read_text())["tiny"]["features"] == 4


def test_a_grid_row_is_the_registry_run_of_its_scenario(tmp_path):
    """A grid point gives the row ``ppknn run`` would give for the same scenario."""
    ds, folder = _tiny(tmp_path)
    settings = dataclasses.replace(QUICK, reps=1, datasets=("tiny",))
    (grid,) = paper_grids(ds, settings, folder)
    grid = dataclasses.replace(grid, keep=lambda p: p["protocol.scheme"] == "pca-laplace"
                               and p["protocol.b"] == 0.2)
    (row,) = run_grids([grid])[grid.name]
    (_, scenario), = grid.scenarios()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        expected = table_row(summary_of(execute(scenario)))
    for key in ("accuracy", "accuracy_radius", "accuracy_best_k", "accuracy_fixed_k",
                "privacy_transform_attack", "privacy_correlation_attack", "radius2",
                "distortion_mean", "distortion_mean_measured", "amplification"):
        assert row[key] == expected[key], key
    assert scenario.data.bounds == "data" and "training rows" in row["privacy_warnings"]
    flat = release_row(row, settings)
    assert flat["label"] == "PCA-radius b=0.2" and flat["acc_radius"] == row["accuracy"]
    assert flat["queries"] == 8  # 10% of the 80 rows


def test_scenario_files_are_parsed_once_per_process_and_again_when_changed(tmp_path):
    _, folder = _tiny(tmp_path)
    first = load_scenario_dataset("tiny", str(folder))
    assert load_scenario_dataset("tiny", str(folder)) is first
    assert not first.X.flags.writeable
    path = folder / "tiny.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # one row fewer
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    again = load_scenario_dataset("tiny", str(folder))
    assert again is not first and len(again.y) == len(first.y) - 1


def test_points_on_a_flat_line_are_not_counted_below():
    """synthetic-2: PCA-radius is 100% at every b, baselines at 100% lie on its line."""
    fig5 = [{"dataset": "s", "method": "PCA-radius", "privacy": p, "accuracy": 1.0}
            for p in (0.3, 0.7, 1.1)]
    fig5 += [{"dataset": "s", "method": "Rand-U", "privacy": p, "accuracy": a}
             for p, a in ((0.1, 1.0), (0.43, 1.0), (0.52, 1.0), (0.46, 0.9996), (2.0, 1.0))]
    assert tradeoff_points(fig5, ["s"]) == (1, 4, 5)
    sloped = [dict(r, accuracy=1 - 0.1 * r["privacy"]) for r in fig5[:3]]
    sloped += [{"dataset": "s", "method": "Rand-N", "privacy": 0.5, "accuracy": a}
               for a in (0.94, 0.95, 0.96)]
    assert tradeoff_points(sloped, ["s"]) == (1, 1, 3)


@pytest.mark.parametrize("workers", [0, -1, True, 1.5])
def test_bad_workers_are_refused_before_anything_runs(tmp_path, workers):
    from ppknn.core.errors import ConfigError
    from ppknn_reproductions.mukherjee import run

    with pytest.raises(ConfigError, match=r"workers = .*: allowed an integer >= 1"):
        run(tmp_path / "out", quick=True, runtime="inprocess", report=tmp_path / "r.md",
            workers=workers)
    assert not (tmp_path / "out").exists()
