"""Datasets, public domain bounds, and horizontal partitioning across parties.

Datasets are read by name from a data directory holding UCI-style CSV files
and a ``manifest.json`` (label column per file). The directory is, in order:
the ``data_dir`` argument, the ``PPKNN_DATA_DIR`` environment variable,
``../shared/datasets`` relative to the working directory or to this
checkout, then ``~/.cache/ppknn/datasets``. scikit-learn's bundled sets
(``iris``, ``wine``, ``breast_cancer``, ``digits``) need no files; name
them ``sklearn:iris`` etc., or plainly when no CSV of that name exists.
Synthetic data of any size: ``synthetic:classification?rows=50000&features=8&classes=3``.

A feature column holding text is an error unless the dataset's manifest
entry declares it categorical (``"categorical": ["col", ...]``; the shipped
``adult`` and ``abalone`` are declared here when their manifest says
nothing). Categorical columns are one-hot encoded (a ``"?"`` is its own
category). A dataset with fewer than two classes is refused. Labels are
encoded as integers ``0..C-1`` with the original values kept in
:attr:`Dataset.classes`.

Examples
--------
>>> ds = load_dataset("sklearn:iris")
>>> ds.X.shape, ds.n_classes
((150, 4), 3)
>>> parts = partition(ds.y, 3, scheme="iid", rng=np.random.default_rng(0))
>>> sorted(len(p) for p in parts)
[50, 50, 50]
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ppknn.core.errors import ConfigError, DataError, PrivacyLeakWarning

SKLEARN_DATASETS = ("iris", "wine", "breast_cancer", "digits")
PARTITION_SCHEMES = ("iid", "dirichlet", "size")


@dataclass(frozen=True)
class Dataset:
    """A labelled dataset: features, integer labels and their names."""

    name: str
    X: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    feature_names: tuple[str, ...] = field(default=())

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.classes)

    def subset(self, index: np.ndarray) -> Dataset:
        """The rows ``index`` (classes kept)."""
        return Dataset(self.name, self.X[index], self.y[index], self.classes, self.feature_names)


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory in use (see module docstring).

    A directory the user named (``explicit``, else ``PPKNN_DATA_DIR``) must
    hold a ``manifest.json``: a typo is an error, never a silent fall back to
    the default directory (a URI is fetched first, by
    :mod:`simulations.datasource`).
    """
    env = os.environ.get("PPKNN_DATA_DIR")
    for label, named in (("data_dir", explicit), ("PPKNN_DATA_DIR", env)):
        if not named:
            continue
        if "://" in str(named):  # fetched by the data source layer, never read here
            break
        if (Path(named) / "manifest.json").is_file():
            return Path(named).resolve()
        what = "does not exist" if not Path(named).exists() else "holds no manifest.json"
        raise DataError(f"{label} = {str(named)!r} {what}; a data directory lists its "
                        "datasets in manifest.json (set it to such a folder, or unset it for "
                        "the default ../shared/datasets)")
    candidates = []
    here = Path(__file__).resolve().parent.parent
    candidates += [
        Path.cwd() / ".." / "shared" / "datasets",
        here / ".." / "shared" / "datasets",
        Path.home() / ".cache" / "ppknn" / "datasets",
    ]
    for c in candidates:
        if (c / "manifest.json").is_file():
            return c.resolve()
    return candidates[0]


def available_datasets(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Names that :func:`load_dataset` accepts."""
    names = [f"sklearn:{n}" for n in SKLEARN_DATASETS]
    manifest = Path(data_dir(directory)) / "manifest.json"
    if manifest.is_file():
        names = sorted(json.loads(manifest.read_text())) + names
    return names


def load_dataset(name: str, *, directory: str | os.PathLike[str] | None = None) -> Dataset:
    """Load a dataset by name (see module docstring)."""
    if not isinstance(name, str) or not name:
        raise DataError(f"dataset name must be a non-empty string, got {name!r}")
    if name.startswith("sklearn:"):
        return _load_sklearn(name.split(":", 1)[1])
    if name.startswith("synthetic:"):
        return _load_synthetic(name)
    root = data_dir(directory)
    manifest_path = root / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if name in manifest:
        entry = manifest[name]
        declared = entry.get("categorical", KNOWN_CATEGORICAL.get(name, ()))
        if isinstance(declared, str) or not all(isinstance(c, str) for c in declared):
            raise DataError(f"dataset {name!r}: manifest 'categorical' must be a list of column "
                            f"names, got {declared!r}")
        return _check_classes(_load_csv(name, root / entry["file"], entry["label"],
                                        categorical=tuple(declared)))
    if name in SKLEARN_DATASETS:
        return _load_sklearn(name)
    raise DataError(
        f"unknown dataset {name!r}; available: {available_datasets(directory)} "
        f"(data directory: {str(root)!r}; set PPKNN_DATA_DIR to change it)"
    )


KNOWN_CATEGORICAL: dict[str, tuple[str, ...]] = {
    "adult": ("workclass", "education", "marital_status", "occupation", "relationship", "race",
              "sex", "native_country"),
    "abalone": ("sex",),
}
"""Categorical columns of the shipped datasets whose manifest does not declare them."""


def _check_classes(ds: Dataset) -> Dataset:
    """Refuse data with fewer than two classes: there is nothing to classify."""
    if ds.n_classes < 2:
        shown = ds.classes.tolist() if ds.n_classes else []
        raise DataError(f"dataset {ds.name!r} has {ds.n_classes} class(es) {shown}; "
                        "classification needs at least 2")
    return ds


def _load_sklearn(name: str) -> Dataset:
    from sklearn import datasets as skd

    if name not in SKLEARN_DATASETS:
        raise DataError(f"unknown scikit-learn dataset {name!r}; allowed: {list(SKLEARN_DATASETS)}")
    bunch = getattr(skd, f"load_{name}")()
    X = np.asarray(bunch.data, dtype=np.float64)
    classes, y = np.unique(bunch.target, return_inverse=True)
    names = getattr(bunch, "target_names", None)
    labels = np.asarray(names)[classes] if names is not None and len(names) == len(classes) \
        else classes
    feats = tuple(str(f) for f in getattr(bunch, "feature_names", range(X.shape[1])))
    return Dataset(f"sklearn:{name}", X, y.astype(np.int64), labels, feats)


SYNTHETIC_DEFAULTS = {"rows": 10_000, "features": 8, "classes": 3, "seed": 0}


def _load_synthetic(name: str) -> Dataset:
    """Load ``synthetic:classification?rows=N&features=D&classes=C&seed=S``.

    scikit-learn's ``make_classification``, seeded; features scaled to [0, 1].
    """
    from urllib.parse import parse_qsl

    kind, _, query = name.split(":", 1)[1].partition("?")
    if kind != "classification":
        raise DataError(f"unknown synthetic dataset {kind!r}; allowed: 'classification'")
    params = dict(SYNTHETIC_DEFAULTS)
    for key, value in parse_qsl(query, strict_parsing=bool(query)):
        if key not in params:
            raise DataError(f"unknown synthetic parameter {key!r}; allowed: {sorted(params)}")
        try:
            params[key] = int(value)
        except ValueError:
            raise DataError(
                f"synthetic parameter {key} must be an integer, got {value!r}"
            ) from None
    if params["rows"] < 2 or params["features"] < 2 or params["classes"] < 2:
        raise DataError(f"synthetic data needs rows, features, classes >= 2, got {params}")
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=params["rows"], n_features=params["features"],
        n_informative=max(2, params["features"] // 2), n_redundant=0,
        n_classes=params["classes"], n_clusters_per_class=1, random_state=params["seed"])
    X = (X - X.min(axis=0)) / np.where(np.ptp(X, axis=0) > 0, np.ptp(X, axis=0), 1.0)
    return Dataset(name, X, y.astype(np.int64), np.arange(params["classes"]),
                   tuple(f"x{i}" for i in range(params["features"])))


def _load_csv(name: str, path: Path, label: str, *,
              categorical: tuple[str, ...] = ()) -> Dataset:
    import pyarrow.csv as pcsv

    if not path.is_file():
        raise DataError(f"dataset {name!r}: file {str(path)!r} is missing")
    try:
        table = pcsv.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - re-raised with context
        raise DataError(f"dataset {name!r}: cannot read {str(path)!r}: {exc}") from exc
    if label not in table.column_names:
        raise DataError(f"dataset {name!r}: label column {label!r} not in {table.column_names}")
    unknown = sorted(set(categorical) - set(table.column_names))
    if unknown:
        raise DataError(f"dataset {name!r}: manifest declares categorical columns {unknown} "
                        f"that the file does not have; columns: {table.column_names}")
    columns = []
    feature_names: list[str] = []
    for col in table.column_names:
        if col in (label, "split"):
            continue
        arr = table[col].to_numpy(zero_copy_only=False)
        if col not in categorical and arr.dtype.kind in "biuf":
            columns.append(arr.astype(np.float64)[:, None])
            feature_names.append(col)
        else:  # categorical: one-hot, "?" is its own category
            values = np.asarray(arr, dtype=str)
            if col not in categorical:
                row = _first_non_numeric(values)
                bad = str(values[row])
                raise DataError(
                    f"dataset {name!r}: feature column {col!r} is not numeric ({bad!r} "
                    f"at row {row}); declare it categorical in the manifest "
                    f"(\"categorical\": [{col!r}]) or fix the file {str(path)!r}")
            cats = np.unique(values)
            columns.append((values[:, None] == cats[None, :]).astype(np.float64))
            feature_names += [f"{col}={c}" for c in cats]
    X = np.hstack(columns)
    raw = np.asarray(table[label].to_numpy(zero_copy_only=False))
    classes, y = np.unique(raw, return_inverse=True)
    check_finite(X, name)
    return Dataset(name, X, y.astype(np.int64), classes, tuple(feature_names))


def _first_non_numeric(values: np.ndarray) -> int:
    """Index of the first value that does not parse as a number."""
    for i, v in enumerate(values):
        try:
            float(v)
        except ValueError:
            return i
    return 0


def check_finite(X: np.ndarray, what: str) -> None:
    """Raise :class:`DataError` naming the first NaN or infinite value."""
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise DataError(f"{what}: features must be numeric, got dtype {X.dtype}")
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise DataError(
            f"{what}: features must be finite; found {X[row, col]} at row {row}, column {col} "
            f"({int(bad.sum())} non-finite values in all)"
        )


def train_test_split(n: int, test_fraction: float, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Random split of ``range(n)`` into train and test indices."""
    if not 0 < test_fraction < 1:
        raise ConfigError(f"test_fraction must be in (0, 1), got {test_fraction}")
    perm = rng.permutation(n)
    n_test = max(1, int(round(n * test_fraction)))
    if n_test >= n:
        raise ConfigError(f"test_fraction {test_fraction} leaves no training rows out of {n}")
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def partition(y: np.ndarray, n_parties: int, *, scheme: str = "iid",
              rng: np.random.Generator, alpha: float = 0.5, size_skew: float = 1.0,
              min_size: int = 1) -> list[np.ndarray]:
    """Horizontally partition row indices across ``n_parties``.

    Parameters
    ----------
    y:
        Integer labels of the rows to partition.
    scheme:
        ``"iid"``: a random permutation cut into near-equal parts.
        ``"dirichlet"``: label skew; for each class, the shares of the
        parties are drawn from Dirichlet(``alpha``) (small alpha = strong skew).
        ``"size"``: quantity skew; party sizes proportional to
        ``(i + 1) ** -size_skew`` over a random party order.
    min_size:
        Every party gets at least this many rows (rows are moved from the
        largest party when needed).

    Returns
    -------
    list of sorted index arrays, one per party, disjoint, covering all rows.
    """
    y = np.asarray(y)
    n = len(y)
    if n_parties < 1:
        raise ConfigError(f"number of parties must be >= 1, got {n_parties}")
    if n < n_parties * min_size:
        raise ConfigError(
            f"cannot give {n_parties} parties at least {min_size} row(s) each from {n} rows"
        )
    if scheme == "iid":
        parts = np.array_split(rng.permutation(n), n_parties)
    elif scheme == "dirichlet":
        if not alpha > 0:
            raise ConfigError(f"dirichlet alpha must be > 0, got {alpha}")
        owners = np.empty(n, dtype=np.int64)
        for c in np.unique(y):
            rows = rng.permutation(np.flatnonzero(y == c))
            shares = rng.dirichlet(np.full(n_parties, alpha))
            cuts = (np.cumsum(shares)[:-1] * len(rows)).astype(np.int64)
            for party, chunk in enumerate(np.split(rows, cuts)):
                owners[chunk] = party
        parts = [np.flatnonzero(owners == p) for p in range(n_parties)]
    elif scheme == "size":
        if not size_skew >= 0:
            raise ConfigError(f"size_skew must be >= 0, got {size_skew}")
        weights = (np.arange(n_parties) + 1.0) ** -size_skew
        weights = rng.permutation(weights / weights.sum())
        cuts = (np.cumsum(weights)[:-1] * n).astype(np.int64)
        parts = np.split(rng.permutation(n), cuts)
    else:
        raise ConfigError(
            f"unknown partition scheme {scheme!r}; allowed: {list(PARTITION_SCHEMES)}"
        )
    parts = [np.asarray(p, dtype=np.int64) for p in parts]
    # enforce the minimum size by moving rows from the largest parts
    for i in range(n_parties):
        while len(parts[i]) < min_size:
            j = int(np.argmax([len(p) for p in parts]))
            parts[i] = np.append(parts[i], parts[j][-1])
            parts[j] = parts[j][:-1]
    return [np.sort(p) for p in parts]


@dataclass(frozen=True)
class DomainBounds:
    """Public per-feature bounds of the data domain.

    The diameter (Euclidean distance between the corners) is the public
    maximum distance PP-TopK starts from.
    """

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        lo = np.asarray(self.lower, dtype=np.float64)
        hi = np.asarray(self.upper, dtype=np.float64)
        if lo.shape != hi.shape or lo.ndim != 1:
            raise ConfigError(f"bounds must be two 1-D arrays of equal length, got "
                              f"shapes {lo.shape} and {hi.shape}")
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ConfigError("bounds must be finite")
        if (hi < lo).any():
            i = int(np.argmax(hi < lo))
            raise ConfigError(f"upper bound {hi[i]} < lower bound {lo[i]} for feature {i}")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def diameter(self) -> float:
        """Largest possible Euclidean distance inside the domain."""
        return float(np.sqrt(np.sum((self.upper - self.lower) ** 2)))

    @classmethod
    def from_data(cls, X: np.ndarray, *, warn: bool = True) -> DomainBounds:
        """Bounds read off data: leaks the extremes, so warns unless told not to."""
        if warn:
            warnings.warn(
                "domain bounds derived from the data reveal its extremes; declare public "
                "bounds in the scenario to avoid this leak",
                PrivacyLeakWarning,
                stacklevel=2,
            )
        X = np.asarray(X, dtype=np.float64)
        return cls(X.min(axis=0), X.max(axis=0))

    def check(self, X: np.ndarray, what: str) -> None:
        """Raise :class:`DataError` when ``X`` leaves the domain."""
        X = np.asarray(X)
        if X.shape[1] != len(self.lower):
            raise DataError(f"{what}: {X.shape[1]} features, bounds have {len(self.lower)}")
        out = (X < self.lower) | (X > self.upper)
        if out.any():
            row, col = (int(v) for v in np.argwhere(out)[0])
            raise DataError(
                f"{what}: value {X[row, col]} at row {row}, feature {col} is outside the "
                f"declared domain [{self.lower[col]}, {self.upper[col]}]"
            )


__all__ = [
    "PARTITION_SCHEMES",
    "SKLEARN_DATASETS",
    "Dataset",
    "DomainBounds",
    "available_datasets",
    "check_finite",
    "data_dir",
    "load_dataset",
    "partition",
    "train_test_split",
]
