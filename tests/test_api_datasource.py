"""Datasets named by URI (pyarrow.fs): a CSV file, or a data directory with its manifest."""

from __future__ import annotations

import gzip

import pytest

import ppknn
from ppknn.core.data import SHIPPED_DIR
from ppknn.core.errors import DataError

PIMA_BOUNDS = {"lower": [0] * 8, "upper": [20, 200, 130, 100, 900, 70, 2.5, 90]}


@pytest.fixture
def datasets(tmp_path, monkeypatch):
    remote = tmp_path / "remote"
    remote.mkdir()  # the shipped pima file, uncompressed: a user's own CSV
    (remote / "diabetes.csv").write_bytes(gzip.decompress(
        (SHIPPED_DIR / "pima.csv.gz").read_bytes()))
    (remote / "manifest.json").write_text('{"diabetes": {"file": "diabetes.csv", '
                                          '"label": "outcome"}}')
    monkeypatch.setenv("PPKNN_CACHE_DIR", str(tmp_path / "cache"))
    return remote


def _scenario(dataset, **data):
    return {"data": {"dataset": dataset, "max_queries": 10, "bounds": PIMA_BOUNDS, **data},
            "parties": {"n": 3}, "runtime": {"kind": "inprocess", "channels": False}}


def test_a_csv_named_by_uri_equals_the_same_file_by_name(datasets):
    by_uri = ppknn.run(_scenario(f"{(datasets / 'diabetes.csv').as_uri()}?label=outcome"))
    by_name = ppknn.run(_scenario("diabetes", data_dir=str(datasets)))
    assert by_uri.summary["dataset"] == "diabetes"
    assert by_uri.predictions.equals(by_name.predictions)


def test_a_data_directory_named_by_uri(datasets, monkeypatch):
    monkeypatch.setenv("PPKNN_DATA_DIR", datasets.as_uri())
    result = ppknn.run(_scenario("diabetes"))
    assert result.summary["dataset"] == "diabetes" and result.predictions.num_rows == 10


def test_without_label_the_last_column_is_the_label_and_errors_name_the_uri(datasets):
    result = ppknn.run(_scenario((datasets / "diabetes.csv").as_uri()))
    assert result.predictions.num_rows == 10
    missing = (datasets / "nope.csv").as_uri()
    with pytest.raises(DataError, match="nope.csv"):
        ppknn.run(_scenario(missing))
    with pytest.raises(DataError, match="label column 'kind'"):
        ppknn.run(_scenario(f"{(datasets / 'diabetes.csv').as_uri()}?label=kind"))
