"""Datasets by name, partitioning schemes, public bounds."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.data import DomainBounds, data_dir, load_dataset, partition
from ppknn.core.errors import PrivacyLeakWarning


@pytest.mark.parametrize("name", ["glass", "pima", "abalone", "banknote", "phoneme", "wine",
                                  "iris", "ionosphere", "seeds"])
def test_csv_datasets_match_manifest(name):
    manifest = json.loads((data_dir() / "manifest.json").read_text())[name]
    ds = load_dataset(name)
    assert ds.X.shape[0] == manifest["rows"]
    assert ds.n_classes == manifest["classes"]
    assert np.isfinite(ds.X).all()


def test_abalone_sex_is_one_hot():
    ds = load_dataset("abalone")
    assert ds.X.shape[1] == 10
    onehot = ds.X[:, :3]
    assert set(np.unique(onehot.sum(axis=1))) == {1.0}


@pytest.mark.parametrize("name", ["sklearn:iris", "sklearn:wine", "sklearn:breast_cancer"])
def test_bundled_datasets(name):
    ds = load_dataset(name)
    assert len(ds.y) == len(ds.X) > 100


def test_data_dir_from_environment(tmp_path, monkeypatch):
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"tiny": {"file": "tiny.csv", "label": "c"}}))
    (tmp_path / "tiny.csv").write_text("a,b,c\n1,2,x\n3,4,y\n5,6,x\n")
    monkeypatch.setenv("PPKNN_DATA_DIR", str(tmp_path))
    ds = load_dataset("tiny")
    assert ds.X.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert ds.classes.tolist() == ["x", "y"] and ds.y.tolist() == [0, 1, 0]


@settings(max_examples=50, deadline=None)
@given(n_rows=st.integers(10, 300), n=st.integers(3, 10),
       scheme=st.sampled_from(["iid", "dirichlet", "size"]), seed=st.integers(0, 10**6))
def test_partition_is_a_disjoint_cover(n_rows, n, scheme, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n_rows)
    parts = partition(y, n, scheme=scheme, rng=rng, alpha=0.3, size_skew=1.5)
    assert len(parts) == n
    assert all(len(p) >= 1 for p in parts)
    allrows = np.concatenate(parts)
    assert sorted(allrows.tolist()) == list(range(n_rows))


def test_dirichlet_skews_labels_and_size_skews_sizes():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 250)
    iid = partition(y, 5, scheme="iid", rng=rng)
    skew = partition(y, 5, scheme="dirichlet", rng=rng, alpha=0.1)

    def label_spread(parts):  # mean total-variation distance from the global label mix
        return np.mean([0.5 * np.abs(np.bincount(y[p], minlength=4) / len(p) - 0.25).sum()
                        for p in parts])

    assert label_spread(skew) > 3 * label_spread(iid)
    sizes = sorted(len(p) for p in partition(y, 5, scheme="size", rng=rng, size_skew=2.0))
    assert sizes[-1] > 5 * sizes[0]


def test_bounds_from_data_warn_and_diameter():
    X = np.array([[0.0, 0.0], [3.0, 4.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = DomainBounds.from_data(X)
    assert any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
    assert b.diameter == 5.0


def _tiny(tmp_path, monkeypatch, csv: str, entry: dict | None = None):
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"tiny": {"file": "tiny.csv", "label": "c", **(entry or {})}}))
    (tmp_path / "tiny.csv").write_text(csv)
    monkeypatch.setenv("PPKNN_DATA_DIR", str(tmp_path))


def test_text_in_a_feature_column_is_an_error_unless_declared(tmp_path, monkeypatch):
    from ppknn.core.errors import DataError

    csv = "a,b,c\n1,2,x\n3,oops,y\n5,6,x\n"
    _tiny(tmp_path, monkeypatch, csv)
    with pytest.raises(DataError, match=r"feature column 'b' is not numeric \('oops' at row 1\); "
                                        r"declare it categorical"):
        load_dataset("tiny")
    _tiny(tmp_path, monkeypatch, csv, {"categorical": ["b"]})
    ds = load_dataset("tiny")
    assert ds.feature_names == ("a", "b=2", "b=6", "b=oops")
    _tiny(tmp_path, monkeypatch, csv, {"categorical": ["zz"]})
    with pytest.raises(DataError, match=r"declares categorical columns \['zz'\]"):
        load_dataset("tiny")


def test_shipped_categorical_datasets_still_load():
    ds = load_dataset("abalone")
    assert any(f.startswith("sex=") for f in ds.feature_names)


def test_single_class_data_is_refused(tmp_path, monkeypatch):
    from ppknn.core.errors import DataError

    _tiny(tmp_path, monkeypatch, "a,b,c\n1,2,x\n3,4,x\n5,6,x\n")
    with pytest.raises(DataError, match=r"has 1 class\(es\) \['x'\]; classification needs at "
                                        "least 2"):
        load_dataset("tiny")


def test_nan_never_reaches_fixed_point_encoding():
    from ppknn.core.errors import ProtocolError
    from ppknn.protocols.ppknn_ring.secure_sum import encode_fixed

    assert encode_fixed(np.array([1.5, 2.0]), 2.0).tolist() == [3, 4]
    with pytest.raises(ProtocolError, match="NaN refused"):
        encode_fixed(np.array([1.0, np.nan]))
    with pytest.raises(ProtocolError, match="NaN refused"):
        encode_fixed(np.array([1.0]), np.array([np.nan]))


def test_normalise_clips_or_refuses_and_refuses_constant_features():
    from ppknn.core.errors import ConfigError
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    lo, hi = np.array([0.0, 10.0]), np.array([2.0, 20.0])
    X = np.array([[1.0, 15.0], [-1.0, 25.0]])
    assert normalise(X, lo, hi).tolist() == [[0.5, 0.5], [0.0, 1.0]]
    with pytest.raises(ConfigError, match=r"value -1.0 at row 1, attribute 0 is outside its "
                                          r"bounds \[0.0, 2.0\]"):
        normalise(X, lo, hi, out_of_bounds="raise")
    with pytest.raises(ConfigError, match=r"attribute 1: its bounds \[10.0, 10.0\] have no "
                                          r"width \(a constant feature\)"):
        normalise(X, lo, np.array([2.0, 10.0]))
    with pytest.raises(ConfigError, match="NaN at row 0, attribute 1"):
        normalise(np.array([[1.0, np.nan]]), lo, hi)


def test_a_data_directory_the_user_named_must_hold_a_manifest(tmp_path, monkeypatch):
    """A typo in PPKNN_DATA_DIR (or data_dir) is an error naming it, never a silent fall
    back to the default directory's datasets."""
    from ppknn.core.data import data_dir
    from ppknn.core.errors import DataError

    monkeypatch.setenv("PPKNN_DATA_DIR", str(tmp_path / "typo"))
    with pytest.raises(DataError, match=r"PPKNN_DATA_DIR = '.*typo' does not exist"):
        load_dataset("pima")
    monkeypatch.setenv("PPKNN_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match="holds no manifest.json"):
        data_dir()
    with pytest.raises(DataError, match=r"data_dir = '.*nowhere' does not exist"):
        data_dir(tmp_path / "nowhere")
    assert load_dataset("sklearn:iris").n_classes == 3  # needs no directory
