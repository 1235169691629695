"""The data every protocol of a scenario shares: loaded, bounded, split, partitioned.

:func:`prepare_data` reads ``[run]``, ``[data]`` and ``[parties]`` and
returns a :class:`PreparedData`: the training rows split among the ``n``
data owners (a protocol with one central owner gives it their union), the
query batch and its labels, the public domain bounds, the run id and the
seed policy. Every random choice comes from a named stream of the root
seed, so adding a protocol to a scenario never changes another's data.
"""

from __future__ import annotations

import functools
import uuid
import warnings
from dataclasses import dataclass

import numpy as np

from ppknn.core.data import (
    Dataset,
    DomainBounds,
    dataset_entry,
    load_dataset,
    partition,
    train_test_split,
)
from ppknn.core.errors import ConfigError, DataError, PrivacyLeakWarning
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.simulations.sampling import stratified_order, stratified_subset
from ppknn.simulations.scenario import Scenario


@dataclass(frozen=True)
class PreparedData:
    """The shared inputs of a run (module docstring)."""

    scenario: Scenario
    run_id: str
    policy: SeedPolicy
    dataset: Dataset
    bounds: DomainBounds
    train_X: np.ndarray
    train_y: np.ndarray
    queries: np.ndarray
    query_labels: np.ndarray
    owner_names: tuple[str, ...]
    owner_rows: tuple[np.ndarray, ...]
    """Indices into the training rows, one array per owner."""
    bounds_from_data: bool = False

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return self.dataset.n_classes

    def owner_X(self, i: int) -> np.ndarray:
        """Owner ``i``'s private rows."""
        return self.train_X[self.owner_rows[i]]

    def owner_y(self, i: int) -> np.ndarray:
        """Owner ``i``'s private labels."""
        return self.train_y[self.owner_rows[i]]

    @property
    def union_X(self) -> np.ndarray:
        """All training rows, in owner order."""
        return np.concatenate([self.owner_X(i) for i in range(len(self.owner_rows))])

    @property
    def union_y(self) -> np.ndarray:
        """All training labels, in owner order."""
        return np.concatenate([self.owner_y(i) for i in range(len(self.owner_rows))])


def owner_names(n: int, prefix: str = "owner") -> tuple[str, ...]:
    """``owner-00``, ``owner-01``, ... (zero-padded to the count's width, at least 2)."""
    return tuple(f"{prefix}-{i:0{max(2, len(str(n - 1)))}d}" for i in range(n))


def kfold(n: int, folds: int, fold: int, rng: np.random.Generator | None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Train and test indices of fold ``fold`` of ``folds`` over ``range(n)``.

    With ``rng`` the rows are permuted first; with ``None`` the folds are contiguous
    blocks in file order (``numpy.array_split`` sizes: the first ``n % folds`` folds get
    one row more).

    >>> train, test = kfold(7, 3, 0, None)
    >>> test.tolist(), train.tolist()
    ([0, 1, 2], [3, 4, 5, 6])
    >>> sorted(np.concatenate([kfold(7, 3, f, None)[1] for f in range(3)]).tolist())
    [0, 1, 2, 3, 4, 5, 6]
    """
    if folds > n:
        raise ConfigError(f"data.folds = {folds}: more folds than the {n} rows of the dataset")
    order = rng.permutation(n) if rng is not None else np.arange(n)
    parts = np.array_split(order, folds)
    test = np.sort(parts[fold])
    train = np.sort(np.concatenate([p for i, p in enumerate(parts) if i != fold]))
    return train, test


def stratified_kfold(y: np.ndarray, folds: int, fold: int, rng: np.random.Generator | None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Train and test indices of fold ``fold`` of stratified ``folds``-fold over ``y``.

    scikit-learn's ``StratifiedKFold``: with ``rng`` shuffled within each class, its
    ``random_state`` one integer drawn from ``rng``; with ``None`` unshuffled. Each fold
    keeps the class proportions (a class with fewer rows than folds is spread as far as
    it goes).

    >>> y = np.array([0] * 6 + [1] * 3)
    >>> train, test = stratified_kfold(y, 3, 0, None)
    >>> test.tolist(), np.bincount(y[test]).tolist()
    ([0, 1, 6], [2, 1])
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    if folds > len(y):
        raise ConfigError(f"data.folds = {folds}: more folds than the {len(y)} rows of the "
                          "dataset")
    seed = None if rng is None else int(rng.integers(2**31))
    splitter = StratifiedKFold(n_splits=folds, shuffle=rng is not None, random_state=seed)
    try:
        with warnings.catch_warnings():  # a class smaller than the fold count: allowed
            warnings.filterwarnings("ignore", message="The least populated class")
            train, test = list(splitter.split(np.zeros(len(y)), y))[fold]
    except ValueError as exc:
        raise ConfigError(f"data.stratify = true with data.folds = {folds}: {exc}") from None
    return np.sort(train), np.sort(test)


def _file_stamp(name: str, directory: str | None) -> tuple[object, ...] | None:
    """What a dataset file's content depends on (paths, sizes, mtimes); ``None`` if not a file."""
    if name.startswith(("sklearn:", "synthetic:")):
        return None
    try:
        found = dataset_entry(name, directory)
        if found is None or not isinstance(found[1].get("file"), str):
            return None
        manifest = found[0] / "manifest.json"
        file = found[0] / found[1]["file"]
        m, f = manifest.stat(), file.stat()
    except (OSError, ValueError):
        return None
    return (str(manifest), m.st_mtime_ns, m.st_size, str(file), f.st_mtime_ns, f.st_size)


@functools.lru_cache(maxsize=4)
def _load_file_cached(name: str, directory: str | None, missing: str,
                      stamp: tuple[object, ...]) -> Dataset:
    ds = load_dataset(name, directory=directory, missing=missing)
    ds.X.flags.writeable = False  # shared by every run of this process that reads the file
    ds.y.flags.writeable = False
    return ds


def load_scenario_dataset(name: str, directory: str | None, missing: str = "error"
                          ) -> Dataset:
    """:func:`~ppknn.core.data.load_dataset`, cached by value within a process for files.

    A grid runs many scenarios over the same (possibly large) file; the file is parsed once
    per process. The cache key holds the manifest's and the file's size and modification
    time, so a changed file is read again; the cached arrays are read-only. A dataset
    or data directory named by URI (``s3://``, ``file://``, ...) is fetched first
    (:mod:`ppknn.simulations.datasource`).
    """
    from ppknn.simulations.datasource import resolve_dataset

    name, directory = resolve_dataset(name, directory)
    stamp = _file_stamp(name, directory)
    if stamp is None:
        return load_dataset(name, directory=directory, missing=missing)
    return _load_file_cached(name, directory, missing, stamp)


def query_order(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The order of a whole test split: stratified and random (:func:`stratified_order`)."""
    return stratified_order(labels, rng)


def prepare_data(scenario: Scenario) -> PreparedData:
    """Load, split, bound, scale and partition the scenario's data (all from the seed).

    Bounds taken from the data (``bounds = "data"``) are read from the training rows
    only, never the queries, and warn (:class:`~ppknn.core.errors.PrivacyLeakWarning`):
    they reveal the training data's extremes.
    """
    s = scenario
    policy = SeedPolicy(root=s.run.seed, mode=RandomnessMode(s.run.mode))
    split_policy = (policy if s.data.split_seed is None
                    else SeedPolicy(root=s.data.split_seed, mode=RandomnessMode(s.run.mode)))
    ds = load_scenario_dataset(s.data.dataset, s.data.data_dir, s.data.missing)
    if s.data.subsample is not None and s.data.subsample < len(ds.y):
        keep = np.sort(split_policy.generator("subsample").permutation(len(ds.y))
                       [:s.data.subsample])
        ds = ds.subset(keep)
    if s.data.folds is not None and s.data.stratify:
        train, test = stratified_kfold(ds.y, s.data.folds, s.data.fold,
                                       split_policy.generator("split") if s.data.shuffle
                                       else None)
    elif s.data.folds is not None:
        train, test = kfold(len(ds.y), s.data.folds, s.data.fold,
                            split_policy.generator("split") if s.data.shuffle else None)
    else:
        train, test = train_test_split(len(ds.y), s.data.test_fraction,
                                       split_policy.generator("split"))
    from_data = s.data.bounds == "data"
    if from_data:
        bounds = DomainBounds.from_data(ds.X[train], warn=False)
        warnings.warn(
            f"scenario {s.run.name!r}: domain bounds derived from the training rows of "
            f"dataset {ds.name!r} reveal their extremes; declare [data.bounds] lower/upper "
            "to avoid this",
            PrivacyLeakWarning, stacklevel=2,
        )
    else:
        bounds = DomainBounds(np.array(s.data.bounds.lower), np.array(s.data.bounds.upper))
        try:
            bounds.check(ds.X, f"dataset {ds.name!r}")
        except DataError as exc:  # declared bounds that do not hold the data
            raise ConfigError(f"data.bounds: {exc}; declare bounds that contain every row "
                              "(or bounds = \"data\", which leaks the extremes)") from None
    X = ds.X
    if s.data.scale == "minmax":
        span = np.where(bounds.upper > bounds.lower, bounds.upper - bounds.lower, 1.0)
        X = (X - bounds.lower) / span
        if from_data:  # queries outside the training range stay outside [0, 1]: clip them
            X[test] = np.clip(X[test], 0.0, 1.0)
        bounds = DomainBounds(np.zeros(X.shape[1]), np.where(bounds.upper > bounds.lower, 1.0, 0.0))
    if s.data.max_queries is not None and s.data.max_queries < len(test):
        # a random subset stratified by class (sorted test indices of a class-sorted file
        # would otherwise give one class), in an order whose contiguous blocks keep the mix
        test = test[stratified_subset(ds.y[test], s.data.max_queries,
                                      split_policy.generator("queries"))]
    else:
        # the whole split, in a random order whose contiguous blocks keep the class mix:
        # the per-analyst shares and request batches are cut from it in blocks
        test = test[query_order(ds.y[test], split_policy.generator("queries"))]
    n = s.parties.n
    parts = partition(ds.y[train], n, scheme=s.parties.partition,
                      rng=split_policy.generator("partition"), alpha=s.parties.alpha,
                      size_skew=s.parties.size_skew)
    run_id = (f"{s.run.name}-{s.run.seed}" if s.run.mode == "reproducible"
              else f"{s.run.name}-{uuid.uuid4().hex[:12]}")
    return PreparedData(
        scenario=s, run_id=run_id, policy=policy, dataset=ds, bounds=bounds,
        train_X=X[train], train_y=ds.y[train], queries=X[test], query_labels=ds.y[test],
        owner_names=owner_names(n), owner_rows=tuple(np.asarray(p) for p in parts),
        bounds_from_data=from_data,
    )


__all__ = ["PreparedData", "kfold", "owner_names", "prepare_data", "query_order",
           "stratified_kfold"]
