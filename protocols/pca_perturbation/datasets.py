"""The paper's datasets (Table 2) as far as they exist offline, and two generators.

========================  =====================================================
name                      source
========================  =====================================================
``wine``                  UCI Wine CSV (data directory)
``iris``                  UCI Iris CSV
``ionosphere``            UCI Ionosphere CSV; attribute ``a02`` is constant
                          (always 0) and is dropped, leaving 33 attributes
``wdbc``                  scikit-learn's bundled Wisconsin diagnostic breast cancer
``waveform``              :func:`waveform21`, Breiman et al.'s generator, 5,000 rows
``synthetic-2``,          :func:`gaussian_clusters`: 10 clusters in 100 dimensions,
``synthetic-8``           100,000 rows, standard deviation 2 or 8
========================  =====================================================

Pendigits and Magic04 are not available offline and are not reproduced.

Examples
--------
>>> import numpy as np
>>> X, y = waveform21(300, np.random.default_rng(0))
>>> X.shape, sorted(set(y.tolist()))
((300, 21), [0, 1, 2])
>>> X, y = gaussian_clusters(1000, 5, n_clusters=10, sd=2.0, rng=np.random.default_rng(0))
>>> X.shape, np.bincount(y).tolist() == [100] * 10
((1000, 5), True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.data import load_dataset
from ppknn.core.errors import ConfigError, DataError

PAPER_DATASETS = ("wine", "iris", "ionosphere", "wdbc", "waveform", "synthetic-2", "synthetic-8")
UNAVAILABLE = ("pendigits", "magic04")


def waveform_bases() -> np.ndarray:
    """The three triangular base waves ``h1, h2, h3`` on 21 points ``(3, 21)``.

    ``h1(i) = max(6 - |i - 11|, 0)`` for ``i = 1..21``; ``h2(i) = h1(i - 4)``;
    ``h3(i) = h1(i + 4)`` (Breiman, Friedman, Olshen & Stone 1984, §2.6.2).
    """
    i = np.arange(1, 22, dtype=np.float64)

    def h(shift: float) -> np.ndarray:
        return np.maximum(6.0 - np.abs(i - shift - 11.0), 0.0)

    return np.stack([h(0.0), h(4.0), h(-4.0)])


def waveform21(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of waveform-21: three equiprobable classes, 21 noisy attributes.

    Class 0 = ``u h1 + (1 - u) h2``, class 1 = ``u h1 + (1 - u) h3``, class 2 =
    ``u h2 + (1 - u) h3``, with ``u ~ U(0, 1)`` per row, plus ``N(0, 1)``
    noise on every attribute.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    h = waveform_bases()
    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    y = rng.integers(0, 3, size=n)
    u = rng.random(n)[:, None]
    X = u * h[pairs[y, 0]] + (1.0 - u) * h[pairs[y, 1]] + rng.normal(size=(n, 21))
    return X, y.astype(np.int64)


def gaussian_clusters(n: int, m: int, *, n_clusters: int, sd: float,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows in ``m`` dimensions from ``n_clusters`` spherical normal clusters.

    Centres uniform in ``[-5, 5]^m``; every cluster has standard deviation
    ``sd`` in every dimension and ``n / n_clusters`` rows (the remainder goes
    to the first clusters); the label is the cluster.
    """
    if n < n_clusters or n_clusters < 1 or m < 1 or not sd > 0:
        raise ConfigError(f"need n >= n_clusters >= 1, m >= 1, sd > 0; got n={n}, m={m}, "
                          f"n_clusters={n_clusters}, sd={sd}")
    centres = rng.uniform(-5.0, 5.0, size=(n_clusters, m))
    y = np.arange(n) % n_clusters
    X = centres[y] + rng.normal(0.0, sd, size=(n, m))
    return X, y.astype(np.int64)


@dataclass(frozen=True)
class PaperDataset:
    """A dataset prepared as in the paper.

    Attributes
    ----------
    name:
        Short name (one of :data:`PAPER_DATASETS`).
    X, y:
        Rows and integer labels.
    n_classes:
        Number of classes.
    dropped:
        Names of constant columns removed.
    note:
        Where it comes from and what was changed.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    dropped: tuple[str, ...]
    note: str


def drop_constant(X: np.ndarray, names: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Remove constant columns; returns the rest and the removed names."""
    keep = X.max(axis=0) > X.min(axis=0)
    return X[:, keep], tuple(n for n, k in zip(names, keep) if not k)


def load_paper_dataset(name: str, *, rng: np.random.Generator, rows: int | None = None
                       ) -> PaperDataset:
    """Load or generate one of the paper's datasets.

    Parameters
    ----------
    name:
        One of :data:`PAPER_DATASETS`.
    rng:
        Generator for the synthetic sets.
    rows:
        Rows to generate for ``waveform`` (default 5,000) and the synthetic
        sets (default 100,000); ignored for the real sets.
    """
    if name in UNAVAILABLE:
        raise DataError(f"dataset {name!r} is not available offline; available: "
                        f"{list(PAPER_DATASETS)}")
    if name in ("wine", "iris", "ionosphere", "wdbc"):
        ds = load_dataset("sklearn:breast_cancer" if name == "wdbc" else name)
        names = ds.feature_names or tuple(str(i) for i in range(ds.X.shape[1]))
        X, dropped = drop_constant(ds.X, names)
        source = "scikit-learn's bundled breast_cancer" if name == "wdbc" else "UCI CSV"
        note = source + (f"; constant column(s) {', '.join(dropped)} dropped" if dropped else "")
        return PaperDataset(name, X, ds.y, ds.n_classes, dropped, note)
    if name == "waveform":
        n = rows or 5000
        X, y = waveform21(n, rng)
        return PaperDataset(name, X, y, 3, (), f"generated (Breiman et al. definition), {n} rows")
    if name in ("synthetic-2", "synthetic-8"):
        n, sd = rows or 100_000, float(name.split("-")[1])
        X, y = gaussian_clusters(n, 100, n_clusters=10, sd=sd, rng=rng)
        return PaperDataset(name, X, y, 10, (),
                            f"generated: 10 normal clusters, 100 dims, sd {sd:g}, {n} rows")
    raise DataError(f"unknown dataset {name!r}; available: {list(PAPER_DATASETS)}")


__all__ = [
    "PAPER_DATASETS",
    "UNAVAILABLE",
    "PaperDataset",
    "drop_constant",
    "gaussian_clusters",
    "load_paper_dataset",
    "waveform21",
    "waveform_bases",
]
