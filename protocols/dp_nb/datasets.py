"""The paper's datasets with raw categorical columns, and synthetic bounded data.

:func:`core.data.load_dataset` one-hot encodes categorical columns; Naive
Bayes wants them as categories, so the CSV is read here (pyarrow, the same
manifest). Categorical columns become integer codes ``0..J-1`` (``"?"``,
adult's missing value, is a category of its own) with the code's meaning in
``category_names``. Numeric bounds are the full dataset's minimum and
maximum, labelled as such: the paper assumes structural bounds (its example:
age in [0, 125]); the same data-derived bounds are given to every method
and to diffprivlib.

Of the paper's datasets, adult, glass and seeds are available offline;
mushroom, skin and the IPUMS 1940 census extracts are not
(:data:`UNAVAILABLE`).

Examples
--------
>>> ds = load_nb_dataset("seeds")
>>> ds.X.shape, len(ds.classes), ds.categories
((210, 7), 3, {})
>>> syn = synthetic_bounded(1000, seed=0)
>>> syn.X.shape, float(syn.X.min()) >= 0.0, float(syn.X.max()) <= 100.0
((1000, 6), True, True)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ppknn.core.data import data_dir
from ppknn.core.errors import DataError

PAPER_DATASETS = ("adult", "glass", "seeds")
UNAVAILABLE = {
    "mushroom": "UCI Mushroom (8K rows, 22 categorical attributes)",
    "skin": "UCI Skin Segmentation (245K rows, 3 numeric attributes)",
    "ipums-1940": "IPUMS USA 1940 census extracts (Wyoming, Nevada, Washington, Oregon)",
}


@dataclass(frozen=True)
class NBDataset:
    """Features (categorical columns as codes), labels, schema and bounds."""

    name: str
    X: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    feature_names: tuple[str, ...]
    categories: dict[int, tuple[int, ...]] = field(default_factory=dict)
    category_names: dict[int, tuple[str, ...]] = field(default_factory=dict)
    lower: np.ndarray = field(default_factory=lambda: np.empty(0))
    upper: np.ndarray = field(default_factory=lambda: np.empty(0))
    bounds_source: str = "data"

    @property
    def numeric(self) -> tuple[int, ...]:
        """Numeric column indices."""
        return tuple(c for c in range(self.X.shape[1]) if c not in self.categories)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of the numeric columns."""
        return self.lower, self.upper

    def numeric_only(self) -> NBDataset:
        """The numeric columns alone (e.g. adult's six, as diffprivlib's GaussianNB sees it)."""
        cols = list(self.numeric)
        return replace(self, name=f"{self.name}-numeric", X=self.X[:, cols],
                       feature_names=tuple(self.feature_names[c] for c in cols), categories={},
                       category_names={})

    def subset(self, index: np.ndarray) -> NBDataset:
        """The rows ``index`` (schema and bounds unchanged)."""
        return replace(self, X=self.X[index], y=self.y[index])


def load_nb_dataset(name: str, *, directory: str | Path | None = None) -> NBDataset:
    """Load ``adult``, ``glass`` or ``seeds`` (or any manifest CSV) for Naive Bayes."""
    import pyarrow.csv as pcsv

    if name in UNAVAILABLE:
        raise DataError(f"dataset {name!r} ({UNAVAILABLE[name]}) is not available offline")
    root = data_dir(directory)
    manifest_path = root / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if name not in manifest:
        raise DataError(f"unknown dataset {name!r}; available: {sorted(manifest)} "
                        f"(data directory {str(root)!r})")
    label = manifest[name]["label"]
    table = pcsv.read_csv(root / manifest[name]["file"])
    columns: list[np.ndarray] = []
    names: list[str] = []
    categories: dict[int, tuple[int, ...]] = {}
    category_names: dict[int, tuple[str, ...]] = {}
    for col in table.column_names:
        if col in (label, "split"):
            continue
        arr = table[col].to_numpy(zero_copy_only=False)
        if arr.dtype.kind in "biuf":
            columns.append(arr.astype(np.float64))
        else:
            values = np.asarray(arr, dtype=str)
            cats, codes = np.unique(values, return_inverse=True)
            categories[len(names)] = tuple(range(len(cats)))
            category_names[len(names)] = tuple(str(c) for c in cats)
            columns.append(codes.astype(np.float64))
        names.append(col)
    X = np.column_stack(columns)
    classes, y = np.unique(np.asarray(table[label].to_numpy(zero_copy_only=False)),
                           return_inverse=True)
    numeric = [c for c in range(X.shape[1]) if c not in categories]
    lower = X[:, numeric].min(axis=0)
    upper = X[:, numeric].max(axis=0)
    upper = np.where(upper > lower, upper, lower + 1.0)
    return NBDataset(name, X, y.astype(np.int64), classes, tuple(names), categories,
                     category_names, lower, upper, "data: the full dataset's min and max")


def synthetic_bounded(n: int, *, features: int = 6, classes: int = 2, seed: int = 0,
                      upper: float = 100.0) -> NBDataset:
    """``n`` rows of bounded numeric data in ``[0, upper]`` (Fig. 13's runtime study).

    Class ``c`` draws each feature from ``upper * Beta(2 + c, 5)`` (skewed,
    bounded, overlapping classes); labels are balanced at random.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    y = rng.integers(0, classes, size=n)
    X = upper * rng.beta(2.0 + y[:, None], 5.0, size=(n, features))
    return NBDataset(f"synthetic-{n}", X, y.astype(np.int64), np.arange(classes),
                     tuple(f"x{j}" for j in range(features)), lower=np.zeros(features),
                     upper=np.full(features, float(upper)),
                     bounds_source="public: the generator's range")


__all__ = ["PAPER_DATASETS", "UNAVAILABLE", "NBDataset", "load_nb_dataset", "synthetic_bounded"]
