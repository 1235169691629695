"""Missing values in a CSV file: an error naming the option, or dropped, or imputed."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

import ppknn
from ppknn.core.data import SHIPPED_DIR, load_dataset
from ppknn.core.errors import ConfigError, DataError

TOKENS = ("?", "", "NA")


@pytest.fixture
def holey(tmp_path):
    """pima with 3% of its numeric cells missing (seeded; '?', empty and 'NA')."""
    lines = gzip.decompress((SHIPPED_DIR / "pima.csv.gz").read_bytes()).decode().splitlines()
    header, rows = lines[0], [line.split(",") for line in lines[1:]]
    rng = np.random.default_rng(7)
    holes = rng.random((len(rows), 8)) < 0.03
    for i, j in np.argwhere(holes):
        rows[i][j] = TOKENS[(i + j) % 3]
    (tmp_path / "holey.csv").write_text("\n".join([header] + [",".join(r) for r in rows]) + "\n")
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"holey": {"file": "holey.csv", "label": "outcome"}}))
    return tmp_path, holes


def test_missing_values_are_an_error_naming_the_option(holey):
    folder, holes = holey
    with pytest.raises(DataError, match=r"missing value.*first in column .* at row \d+.*"
                       r"\[data\] missing = \"drop\"") as err:
        load_dataset("holey", directory=folder)
    assert f"{int(holes.sum())} missing value(s)" in str(err.value)


def test_drop_keeps_exactly_the_complete_rows(holey):
    folder, holes = holey
    full = load_dataset("pima")
    ds = load_dataset("holey", directory=folder, missing="drop")
    keep = ~holes.any(axis=1)
    np.testing.assert_array_equal(ds.X, full.X[keep])
    np.testing.assert_array_equal(ds.y, full.y[keep])
    assert ds.missing == {"policy": "drop", "rows_dropped": int((~keep).sum()),
                          "values_imputed": 0}


def test_impute_fills_each_gap_with_its_column_median(holey):
    folder, holes = holey
    full = load_dataset("pima")
    ds = load_dataset("holey", directory=folder, missing="impute")
    assert ds.X.shape == full.X.shape
    np.testing.assert_array_equal(ds.X[~holes], full.X[~holes])
    for j in range(8):
        median = np.median(full.X[~holes[:, j], j])
        assert (ds.X[holes[:, j], j] == median).all()
    assert ds.missing["values_imputed"] == int(holes.sum())
    assert sum(ds.missing["imputed_columns"].values()) == int(holes.sum())


def test_an_unknown_policy_names_the_allowed_ones(holey):
    with pytest.raises(ConfigError, match=r"missing = 'mean'; allowed: \['error', 'drop', "):
        load_dataset("holey", directory=holey[0], missing="mean")
    with pytest.raises(ConfigError, match="missing"):
        ppknn.load_scenario({"data": {"dataset": "holey", "missing": "mean"}})


def test_a_categorical_gap_is_its_own_category(tmp_path):
    (tmp_path / "c.csv").write_text("colour,size,label\nred,1,a\n?,2,b\nblue,,a\nred,4,b\n")
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"c": {"file": "c.csv", "label": "label", "categorical": ["colour"]}}))
    ds = load_dataset("c", directory=tmp_path, missing="drop")
    assert ds.feature_names == ("colour=?", "colour=blue", "colour=red", "size")
    assert ds.X.shape == (3, 4) and ds.missing["rows_dropped"] == 1


def test_the_ring_with_p0_zero_equals_sklearn_knn_on_the_rows_kept(holey):
    """PP-kNN at P0 = 0 is exact kNN: with missing = "drop" it predicts as scikit-learn's
    brute-force kNN fitted on the kept training rows, and the summary says what was dropped."""
    folder, holes = holey
    result = ppknn.run({
        "run": {"name": "holes", "seed": 3},
        "data": {"dataset": "holey", "data_dir": str(folder), "missing": "drop",
                 "max_queries": 120,
                 "bounds": {"lower": [0] * 8, "upper": [20, 200, 130, 100, 900, 70, 2.5, 90]}},
        "parties": {"n": 4},
        "protocol": {"name": "ppknn-ring", "k": 5, "p0": 0.0, "rounds": 1},
        "runtime": {"kind": "inprocess"},
    })
    data = result.run.prepared.data
    assert len(data.dataset.y) == int((~holes.any(axis=1)).sum())
    assert result.summary["missing_values"]["rows_dropped"] == int(holes.any(axis=1).sum())
    knn = KNeighborsClassifier(n_neighbors=5, algorithm="brute")
    expected = knn.fit(data.train_X, data.train_y).predict(data.queries)
    predicted = result.outcome().predictions
    d = np.linalg.norm(data.queries[:, None, :] - data.train_X[None, :, :], axis=2)
    kth = np.sort(d, axis=1)[:, 4:6]
    tied = np.isclose(kth[:, 0], kth[:, 1])  # a tie at the k-th distance: either answer
    assert ((predicted != expected) & ~tied).sum() == 0
    assert tied.sum() < len(predicted) / 10
