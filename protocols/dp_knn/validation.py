"""Input checks for DP r-N / k-NN classification.

Every check returns the value in canonical form and raises
:class:`~core.errors.ConfigError` naming the bad value and what is allowed
(``TypeError`` for values of the wrong type). The privacy parameter of the
pure classification functions may be ``math.inf`` -- the non-private limit,
used to compare with scikit-learn -- whereas a DP owner only accepts finite
ε (:func:`core.dp.validation.check_epsilon`).

Examples
--------
>>> check_radii(0.5, 3).tolist()
[0.5, 0.5, 0.5]
>>> check_radii([0.5, -1.0], 2)
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: radius must be a finite number > 0 for every test instance, \
got -1.0 at index 1
>>> check_weight(0.5)
0.5
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ppknn.core.dp.validation import check_epsilon, check_real
from ppknn.core.errors import ConfigError


def check_privacy(epsilon: object, *, name: str = "epsilon") -> float:
    """ε > 0 for the pure classifiers; ``math.inf`` means no noise (the non-private limit)."""
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, (bool, np.bool_)):
        if float(epsilon) == math.inf:
            return math.inf
    try:
        return check_epsilon(epsilon, name=name)
    except ConfigError:
        raise ConfigError(
            f"{name} must be a number > 0 (math.inf for no noise), got {epsilon!r}"
        ) from None


def check_weight(weight: object) -> float:
    """The share w of the budget spent on the k-NN -> r-N conversion, in ``(0, 1)``."""
    w = check_real(weight, "weight w")
    if not 0.0 < w < 1.0:
        raise ConfigError(f"weight w must be in the open interval (0, 1), got {weight!r}")
    return w


def check_queries(x: object, n_features: int | None = None) -> np.ndarray:
    """Test instances as a finite ``(Q, D)`` float array with ``Q >= 1``."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"test instances must be a numeric (Q, D) array, got {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"test instances must be a numeric (Q, D) array: {exc}") from exc
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ConfigError(
            f"test instances must have shape (Q, D) with Q >= 1 and D >= 1, got {arr.shape}"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ConfigError(
            f"test instances have {arr.shape[1]} features, the training data has {n_features}"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise ConfigError(
            f"test instances must be finite, got {arr[row, col]} at row {row}, feature {col}"
        )
    return arr


def check_radii(r: object, n_queries: int) -> np.ndarray:
    """Radii as a ``(Q,)`` float array, each finite and > 0 (a scalar is broadcast)."""
    if isinstance(r, (str, bytes)) or r is None:
        raise TypeError(f"radius must be a number or a (Q,) array, got {type(r).__name__}")
    arr = np.asarray(r, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n_queries, float(arr))
    if arr.shape != (n_queries,):
        raise ConfigError(f"radius must be a scalar or have shape ({n_queries},), got {arr.shape}")
    bad = ~(np.isfinite(arr) & (arr > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(
            f"radius must be a finite number > 0 for every test instance, got {float(arr[i])!r} "
            f"at index {i}"
        )
    return arr


def check_ks(k: object, n_queries: int) -> np.ndarray:
    """Neighbour counts as a ``(Q,)`` int64 array, each >= 1 (a scalar is broadcast)."""
    if isinstance(k, (str, bytes)) or k is None:
        raise TypeError(f"k must be an integer or a (Q,) integer array, got {type(k).__name__}")
    arr = np.asarray(k)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"k must be an integer or a (Q,) integer array, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
    arr = arr.astype(np.int64)
    if arr.ndim == 0:
        arr = np.full(n_queries, int(arr), dtype=np.int64)
    if arr.shape != (n_queries,):
        raise ConfigError(f"k must be a scalar or have shape ({n_queries},), got {arr.shape}")
    if (arr < 1).any():
        i = int(np.argmax(arr < 1))
        raise ConfigError(f"k must be an integer >= 1 for every test instance, got {arr[i]} "
                          f"at index {i}")
    return arr


def check_training(X: object, y: object, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Training rows ``(N, D)`` (finite) and integer labels in ``[0, n_classes)``."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, numbers.Integral):
        raise TypeError(f"n_classes must be an integer, got {n_classes!r}")
    if n_classes < 1:
        raise ConfigError(f"n_classes must be >= 1, got {n_classes}")
    Xa = np.asarray(X, dtype=np.float64)
    if Xa.ndim != 2 or Xa.shape[1] < 1:
        raise ConfigError(f"training features must have shape (N, D) with D >= 1, got {Xa.shape}")
    if not np.all(np.isfinite(Xa)):
        raise ConfigError("training features must be finite")
    ya = np.asarray(y)
    if ya.shape != (Xa.shape[0],):
        raise ConfigError(f"{Xa.shape[0]} training rows but labels of shape {ya.shape}")
    if ya.dtype.kind not in "iu":
        raise ConfigError(f"training labels must be integer class indices, got dtype {ya.dtype}")
    if ya.size and (ya.min() < 0 or ya.max() >= n_classes):
        bad = ya[(ya < 0) | (ya >= n_classes)][0]
        raise ConfigError(
            f"training label {bad} is not in the label set 0..{n_classes - 1} ({n_classes} classes)"
        )
    return Xa, ya.astype(np.int64)


def encode_labels(y: object, classes: object) -> tuple[np.ndarray, np.ndarray]:
    """Map raw labels onto indices into the public label set ``classes``.

    Raises :class:`ConfigError` for a label outside the declared set, or a
    label set with repeated values.

    >>> encode_labels([5, 7, 5], [5, 7])[0].tolist()
    [0, 1, 0]
    """
    cls = np.asarray(classes)
    if cls.ndim != 1 or cls.size < 1:
        raise ConfigError(f"the label set must be a non-empty 1-D sequence, got shape {cls.shape}")
    if np.unique(cls).size != cls.size:
        raise ConfigError(f"the label set has repeated values: {cls.tolist()}")
    ya = np.asarray(y)
    if ya.ndim != 1:
        raise ConfigError(f"labels must be 1-D, got shape {ya.shape}")
    order = np.argsort(cls, kind="stable")
    pos = np.searchsorted(cls[order], ya)
    pos = np.clip(pos, 0, cls.size - 1)
    found = cls[order][pos] == ya
    if not np.all(found):
        bad = ya[~found][0].item()
        raise ConfigError(
            f"label {bad!r} is not in the declared label set {cls.tolist()}; "
            "declare every class the training data may hold"
        )
    return order[pos].astype(np.int64), cls


__all__ = [
    "check_ks",
    "check_privacy",
    "check_queries",
    "check_radii",
    "check_training",
    "check_weight",
    "encode_labels",
]
