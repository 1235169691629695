"""Datasets, public domain bounds, and horizontal partitioning across parties.

Datasets are read by name from a data directory holding UCI-style CSV files
(plain or gzip-compressed) and a ``manifest.json`` (label column per file). A
name is looked up in the directory the user named (the ``data_dir`` argument,
else the ``PPKNN_DATA_DIR`` environment variable), then among the datasets
shipped inside the package (``ppknn/core/datasets``: glass, pima, abalone,
banknote, phoneme, wine, iris, ionosphere, seeds, adult; sources and licences
in its ``README.md``), so ``load_dataset("pima")`` works anywhere after
``pip install ppknn``. scikit-learn's bundled sets
(``iris``, ``wine``, ``breast_cancer``, ``digits``) need no files (they are read
from the installed scikit-learn's data folder without importing scikit-learn); name
them ``sklearn:iris`` etc., or plainly when no CSV of that name exists.
Synthetic data of any size: ``synthetic:classification?rows=50000&features=8&classes=3``.

A feature column holding text is an error unless the dataset's manifest
entry declares it categorical (``"categorical": ["col", ...]``; the shipped
``adult`` and ``abalone`` are declared here when their manifest says
nothing). Every other column but the label is a feature, whatever its name;
columns that are neither (adult's ``split`` marker) are listed under
``"drop"`` in the entry. Categorical columns are one-hot encoded (a missing value is its own
category, ``"?"``). A dataset with fewer than two classes is refused.

Missing values (``?``, an empty cell, ``NA``, ``N/A``, ``NaN``, ``null``) in
numeric feature columns or the label are an error by default naming the
column and the ``missing`` option: ``missing="drop"`` removes the rows that
hold one; ``missing="impute"`` fills a numeric feature with the median of its
column over the whole file (rows with a missing label are dropped, since a
label cannot be imputed). What was done is in :attr:`Dataset.missing`.
Imputation is a release outside every protocol's accounting: the median is
computed from all rows before the split and the partition, so each party's
filled cells carry a statistic of every other party's rows and of the query
rows, and no leakage figure measures it; use ``"drop"`` (or impute your own
data per party) when that matters. Labels are
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
MISSING_POLICIES = ("error", "drop", "impute")
MISSING_TOKENS = ("?", "", "NA", "N/A", "NaN", "nan", "null", "NULL")
"""Cells read as missing in numeric columns and the label (categorical: a category)."""
SHIPPED_DIR = Path(__file__).resolve().parent / "datasets"
"""The datasets shipped inside the package (with their manifest, sources and licences)."""


@dataclass(frozen=True)
class Dataset:
    """A labelled dataset: features, integer labels and their names."""

    name: str
    X: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    feature_names: tuple[str, ...] = field(default=())
    missing: dict[str, object] = field(default_factory=dict)
    """How missing values were handled: ``policy``, ``rows_dropped``, ``values_imputed``
    (per column in ``imputed_columns``); empty for data without missing values."""

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.classes)

    def subset(self, index: np.ndarray) -> Dataset:
        """The rows ``index`` (classes kept)."""
        return Dataset(self.name, self.X[index], self.y[index], self.classes, self.feature_names,
                       self.missing)


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory in use (see module docstring).

    A directory the user named (``explicit``, else ``PPKNN_DATA_DIR``) must
    hold a ``manifest.json``: a typo is an error, never a silent fall back to
    the shipped datasets (a URI is fetched first, by
    :mod:`simulations.datasource`). Without one, the shipped folder.
    """
    named = _named_dir(explicit)
    return named if named is not None else SHIPPED_DIR


def _named_dir(explicit: str | os.PathLike[str] | None) -> Path | None:
    """The directory the user named, checked; ``None`` when none is named."""
    env = os.environ.get("PPKNN_DATA_DIR")
    for label, named in (("data_dir", explicit), ("PPKNN_DATA_DIR", env)):
        if not named:
            continue
        if "://" in str(named):  # fetched by the data source layer, never read here
            return None
        if (Path(named) / "manifest.json").is_file():
            return Path(named).resolve()
        what = "does not exist" if not Path(named).exists() else "holds no manifest.json"
        raise DataError(f"{label} = {str(named)!r} {what}; a data directory lists its "
                        "datasets in manifest.json (set it to such a folder, or unset it for "
                        "the datasets shipped with ppknn)")
    return None


def _manifest(directory: Path) -> dict[str, dict]:
    """A data directory's manifest, checked for shape (a clear error, never a traceback)."""
    path = directory / "manifest.json"
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{str(path)!r} is not a readable JSON manifest: {exc}") from None
    if not isinstance(manifest, dict) or not all(isinstance(v, dict)
                                                 for v in manifest.values()):
        raise DataError(f"{str(path)!r} must map each dataset name to an object with 'file' "
                        "and 'label', e.g. {\"pima\": {\"file\": \"pima.csv\", "
                        "\"label\": \"outcome\"}}")
    return manifest


def dataset_entry(name: str, directory: str | os.PathLike[str] | None = None
                  ) -> tuple[Path, dict] | None:
    """Where dataset ``name`` is listed: ``(folder, manifest entry)``, or ``None``.

    The user's folder first (``directory``, else ``PPKNN_DATA_DIR``), then the shipped one.
    """
    named = _named_dir(directory)
    for root in ([named] if named is not None else []) + [SHIPPED_DIR]:
        manifest = _manifest(root)
        if name in manifest:
            return root, manifest[name]
    return None


def available_datasets(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Names that :func:`load_dataset` accepts."""
    names = [f"sklearn:{n}" for n in SKLEARN_DATASETS]
    named = _named_dir(directory)
    listed = set(_manifest(SHIPPED_DIR)) | (set(_manifest(named)) if named else set())
    return sorted(listed) + names


def load_dataset(name: str, *, directory: str | os.PathLike[str] | None = None,
                 missing: str = "error") -> Dataset:
    """Load a dataset by name (see module docstring).

    ``missing`` (``"error"``, ``"drop"`` or ``"impute"``) says what to do with missing
    values in a CSV file's numeric columns and label.
    """
    if not isinstance(name, str) or not name:
        raise DataError(f"dataset name must be a non-empty string, got {name!r}")
    if missing not in MISSING_POLICIES:
        raise ConfigError(f"missing = {missing!r}; allowed: {list(MISSING_POLICIES)}")
    if name.startswith("sklearn:"):
        return _load_sklearn(name.split(":", 1)[1])
    if name.startswith("synthetic:"):
        return _load_synthetic(name)
    found = dataset_entry(name, directory)
    if found is not None:
        root, entry = found
        if not isinstance(entry.get("file"), str) or not isinstance(entry.get("label"), str):
            raise DataError(f"dataset {name!r}: its manifest entry in {str(root)!r} needs "
                            f"'file' and 'label' strings, got {entry!r}")
        declared = entry.get("categorical", KNOWN_CATEGORICAL.get(name, ()))
        dropped = entry.get("drop", KNOWN_DROPPED.get(name, ()))
        for key, value in (("categorical", declared), ("drop", dropped)):
            if isinstance(value, str) or not isinstance(value, list | tuple) or not all(
                    isinstance(c, str) for c in value):
                raise DataError(f"dataset {name!r}: manifest {key!r} must be a list of column "
                                f"names, got {value!r}")
        return _check_classes(_load_csv(name, root / entry["file"], entry["label"],
                                        categorical=tuple(declared), missing=missing,
                                        drop=tuple(dropped)))
    if name in SKLEARN_DATASETS:
        return _load_sklearn(name)
    named = _named_dir(directory)
    where = (f"data directory {str(named)!r}, then the shipped datasets" if named
             else "the shipped datasets; set PPKNN_DATA_DIR to a folder of your own")
    raise DataError(f"unknown dataset {name!r}; available: {available_datasets(directory)} "
                    f"(looked in {where})")


KNOWN_CATEGORICAL: dict[str, tuple[str, ...]] = {
    "adult": ("workclass", "education", "marital_status", "occupation", "relationship", "race",
              "sex", "native_country"),
    "abalone": ("sex",),
}
"""Categorical columns of the shipped datasets whose manifest does not declare them."""

KNOWN_DROPPED: dict[str, tuple[str, ...]] = {"adult": ("split",)}
"""Columns of the shipped datasets that are neither feature nor label (adult's original
train/test marker), for manifests that do not list them under ``"drop"``."""


def _check_classes(ds: Dataset) -> Dataset:
    """Refuse data with fewer than two classes: there is nothing to classify."""
    if ds.n_classes < 2:
        shown = ds.classes.tolist() if ds.n_classes else []
        raise DataError(f"dataset {ds.name!r} has {ds.n_classes} class(es) {shown}; "
                        "classification needs at least 2")
    return ds


def _load_sklearn(name: str) -> Dataset:
    """scikit-learn's bundled dataset ``name``, read from its files without importing it.

    The files sit in the installed package (``sklearn/datasets/data``); they are parsed
    as scikit-learn's loaders parse them, so the arrays are the same bit for bit. Only
    when a file is not where it is expected (another layout) is scikit-learn imported.
    """
    if name not in SKLEARN_DATASETS:
        raise DataError(f"unknown scikit-learn dataset {name!r}; allowed: {list(SKLEARN_DATASETS)}")
    read = _read_sklearn_files(name)
    if read is None:
        from sklearn import datasets as skd

        bunch = getattr(skd, f"load_{name}")()
        read = (bunch.data, bunch.target, getattr(bunch, "target_names", None),
                getattr(bunch, "feature_names", None))
    data, target, names, feature_names = read
    X = np.asarray(data, dtype=np.float64)
    classes, y = np.unique(target, return_inverse=True)
    labels = np.asarray(names)[classes] if names is not None and len(names) == len(classes) \
        else classes
    feats = tuple(str(f) for f in (range(X.shape[1]) if feature_names is None
                                   else feature_names))
    return Dataset(f"sklearn:{name}", X, y.astype(np.int64), labels, feats)


SKLEARN_FILES = {"iris": "iris.csv", "wine": "wine_data.csv",
                 "breast_cancer": "breast_cancer.csv", "digits": "digits.csv.gz"}
"""The file of each scikit-learn dataset in ``sklearn/datasets/data``."""

_CELL = ("radius", "texture", "perimeter", "area", "smoothness", "compactness", "concavity",
         "concave points", "symmetry", "fractal dimension")
SKLEARN_FEATURES: dict[str, tuple[str, ...]] = {
    "iris": ("sepal length (cm)", "sepal width (cm)", "petal length (cm)",
             "petal width (cm)"),
    "wine": ("alcohol", "malic_acid", "ash", "alcalinity_of_ash", "magnesium",
             "total_phenols", "flavanoids", "nonflavanoid_phenols", "proanthocyanins",
             "color_intensity", "hue", "od280/od315_of_diluted_wines", "proline"),
    "breast_cancer": tuple([f"mean {c}" for c in _CELL] + [f"{c} error" for c in _CELL]
                           + [f"worst {c}" for c in _CELL]),
    "digits": tuple(f"pixel_{r}_{c}" for r in range(8) for c in range(8)),
}
"""Feature names as scikit-learn's loaders state them."""


def _read_sklearn_files(name: str) -> tuple | None:
    """``(data, target, target_names, feature_names)`` from scikit-learn's data folder.

    ``None`` when scikit-learn is not installed or its folder does not hold the file
    (the caller then imports scikit-learn, which reports what is wrong).
    """
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # locates the package, imports nothing
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" \
        / SKLEARN_FILES[name]
    if not path.is_file():
        return None
    if name == "digits":  # as load_gzip_compressed_csv_data: np.loadtxt of the gzip text
        import gzip

        with gzip.open(path, mode="rt", encoding="utf-8") as f:
            data = np.loadtxt(f, delimiter=",")
        return (data[:, :-1], data[:, -1].astype(int, copy=False), np.arange(10),
                SKLEARN_FEATURES[name])
    import csv

    with open(path, encoding="utf-8") as f:  # as load_csv_data: header, then rows
        rows = csv.reader(f)
        head = next(rows)
        n_samples, n_features = int(head[0]), int(head[1])
        data = np.empty((n_samples, n_features))
        target = np.empty((n_samples,), dtype=int)
        for i, row in enumerate(rows):
            data[i] = np.asarray(row[:-1], dtype=np.float64)
            target[i] = np.asarray(row[-1], dtype=int)
    return data, target, np.array(head[2:]), SKLEARN_FEATURES[name]


SYNTHETIC_DEFAULTS = {"rows": 10_000, "features": 8, "classes": 3, "seed": 0}
MAX_SYNTHETIC_CELLS = 100_000_000
"""Most values (rows x features) of a synthetic dataset: 800 MB of float64."""


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
    cells = params["rows"] * params["features"]
    if cells > MAX_SYNTHETIC_CELLS:  # checked before anything is allocated
        raise DataError(f"synthetic data of rows={params['rows']} x features="
                        f"{params['features']} is {cells:.3g} values ({cells * 8 / 2**30:.3g} "
                        f"GiB); allowed: rows x features <= {MAX_SYNTHETIC_CELLS:.0e}")
    informative = max(2, params["features"] // 2)
    if params["classes"] > min(params["rows"], 2 ** min(informative, 62)):
        raise DataError(f"synthetic data with classes={params['classes']}: allowed: at most "
                        f"rows ({params['rows']}) and 2**(features // 2) "
                        f"({2 ** min(informative, 62)}) classes")
    if not 0 <= params["seed"] < 2**32:
        raise DataError(f"synthetic parameter seed = {params['seed']}; allowed: 0 <= seed "
                        "< 2**32")
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=params["rows"], n_features=params["features"],
        n_informative=informative, n_redundant=0,
        n_classes=params["classes"], n_clusters_per_class=1, random_state=params["seed"])
    X = (X - X.min(axis=0)) / np.where(np.ptp(X, axis=0) > 0, np.ptp(X, axis=0), 1.0)
    return Dataset(name, X, y.astype(np.int64), np.arange(params["classes"]),
                   tuple(f"x{i}" for i in range(params["features"])))


def _load_csv(name: str, path: Path, label: str, *,
              categorical: tuple[str, ...] = (), missing: str = "error",
              drop: tuple[str, ...] = ()) -> Dataset:
    import pyarrow.csv as pcsv

    if not path.is_file():
        raise DataError(f"dataset {name!r}: file {str(path)!r} is missing")
    try:
        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            null_values=list(MISSING_TOKENS), strings_can_be_null=True))
    except Exception as exc:  # noqa: BLE001 - re-raised with context
        raise DataError(f"dataset {name!r}: cannot read {str(path)!r}: {exc}") from exc
    names = table.column_names
    duplicated = sorted({c for c in names if names.count(c) > 1})
    if duplicated:
        raise DataError(f"dataset {name!r}: {str(path)!r} repeats the column name(s) "
                        f"{duplicated}; every column needs its own name")
    if label not in names:
        raise DataError(f"dataset {name!r}: label column {label!r} not in {names}")
    if table.num_rows == 0:
        raise DataError(f"dataset {name!r}: {str(path)!r} holds a header but no rows")
    unknown = sorted(set(categorical) - set(names))
    if unknown:
        raise DataError(f"dataset {name!r}: manifest declares categorical columns {unknown} "
                        f"that the file does not have; columns: {names}")
    unknown = sorted(set(drop) - set(names))
    if unknown or label in drop:
        raise DataError(f"dataset {name!r}: manifest 'drop' lists {unknown or [label]}, "
                        f"{'the label' if not unknown else 'not a column of the file'}; "
                        f"allowed: feature columns of {names}")
    blocks: list[np.ndarray] = []  # one per column: (rows, width), NaN where missing
    feature_names: list[str] = []
    numeric: list[bool] = []
    for col in names:
        if col == label or col in drop:  # dropped: declared in the manifest ("drop")
            continue
        arr = table[col].to_numpy(zero_copy_only=False)
        if col not in categorical and (arr.dtype.kind in "biuf" or table[col].null_count
                                       == table.num_rows):
            blocks.append(np.asarray(arr, dtype=np.float64)[:, None])
            feature_names.append(col)
            numeric.append(True)
        else:  # categorical: one-hot, a missing value is its own category "?"
            import pyarrow as pa
            import pyarrow.compute as pc

            values = np.asarray(pc.fill_null(table[col].cast(pa.string()), "?")
                                .to_numpy(zero_copy_only=False), dtype=str)
            if col not in categorical:
                row = _first_non_numeric(values)
                bad = str(values[row])
                raise DataError(
                    f"dataset {name!r}: feature column {col!r} is not numeric ({bad!r} "
                    f"at row {row}); declare it categorical in the manifest "
                    f"(\"categorical\": [{col!r}]) or fix the file {str(path)!r} (missing "
                    f"values are read from {list(MISSING_TOKENS)})")
            cats = np.unique(values)
            blocks.append((values[:, None] == cats[None, :]).astype(np.float64))
            feature_names += [f"{col}={c}" for c in cats]
            numeric.append(False)
    label_col = table[label]
    label_missing = np.asarray(label_col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    raw = label_col.drop_null().to_numpy(zero_copy_only=False)  # the labels that are there
    X = np.hstack(blocks)
    numeric_cols = [i for i, (b, is_num) in enumerate(zip(blocks, numeric)) if is_num]
    X, keep, record = _handle_missing(name, path, X, label_missing, missing,
                                      [feature_names[_offset(blocks, i)] for i in numeric_cols],
                                      [_offset(blocks, i) for i in numeric_cols], label)
    raw = np.asarray(raw)[keep[~label_missing]]
    classes, y = np.unique(raw, return_inverse=True)
    check_finite(X, name)
    return Dataset(name, X, y.astype(np.int64), classes, tuple(feature_names), record)


def _offset(blocks: list[np.ndarray], i: int) -> int:
    """The column of ``X`` where block ``i`` starts."""
    return int(sum(b.shape[1] for b in blocks[:i]))


def _handle_missing(name: str, path: Path, X: np.ndarray, label_missing: np.ndarray,
                    missing: str, columns: list[str], where: list[int], label: str
                    ) -> tuple[np.ndarray, np.ndarray, dict[str, object]]:
    """Apply the ``missing`` policy: the features, the rows kept and what was done."""
    holes = np.zeros_like(X, dtype=bool)
    holes[:, where] = np.isnan(X[:, where])
    n_holes, n_labels = int(holes.sum()), int(label_missing.sum())
    keep = np.ones(len(X), dtype=bool)
    if not n_holes and not n_labels:
        return X, keep, {}
    if missing == "error":
        if n_labels:
            row = int(np.flatnonzero(label_missing)[0])
            first = f"the label {label!r} at row {row}"
        else:
            row, col = (int(v) for v in np.argwhere(holes)[0])
            first = f"column {columns[where.index(col)]!r} at row {row}"
        raise DataError(
            f"dataset {name!r}: {n_holes + n_labels} missing value(s) in {str(path)!r}, the "
            f"first in {first} (cells read as missing: {list(MISSING_TOKENS)}); set "
            "[data] missing = \"drop\" to remove those rows, or \"impute\" to fill numeric "
            "features with their column's median (a release outside the privacy accounting)")
    record: dict[str, object] = {"policy": missing}
    if missing == "drop":
        keep = ~(holes.any(axis=1) | label_missing)
        record.update(rows_dropped=int((~keep).sum()), values_imputed=0)
    else:  # impute: medians over the whole file; a missing label cannot be imputed
        keep = ~label_missing
        X = X.copy()
        filled: dict[str, int] = {}
        for col, c in zip(columns, where):
            gaps = holes[:, c]
            if not gaps.any():
                continue
            present = X[~gaps, c]
            if not len(present):
                raise DataError(f"dataset {name!r}: column {col!r} holds no value at all; "
                                "nothing to impute from (drop the column from the file)")
            X[gaps, c] = float(np.median(present))
            filled[col] = int(gaps.sum())
        record.update(rows_dropped=int((~keep).sum()), values_imputed=int(sum(filled.values())),
                      imputed_columns=filled)
    if not keep.any():
        raise DataError(f"dataset {name!r}: missing = {missing!r} leaves no row of "
                        f"{str(path)!r}")
    return X[keep], keep, record


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
    "MISSING_POLICIES",
    "MISSING_TOKENS",
    "PARTITION_SCHEMES",
    "SHIPPED_DIR",
    "SKLEARN_DATASETS",
    "Dataset",
    "DomainBounds",
    "available_datasets",
    "check_finite",
    "data_dir",
    "dataset_entry",
    "load_dataset",
    "partition",
    "train_test_split",
]
