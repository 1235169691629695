"""The public schema of a Naive Bayes dataset: numeric bounds, declared categories.

Everything here is public: which columns are numeric and their declared
bounds ``[lower, upper]``, which are categorical and their declared values.
:meth:`FeatureSchema.encode` turns a feature matrix into a float block of
numeric columns and an integer block of category indices, and rejects what
the schema does not allow:

* a numeric value outside its bounds is **clipped with a** :class:`BoundsWarning`
  (``out_of_bounds="clip"``, the default) or **rejected** with a
  :class:`~core.errors.ConfigError` (``out_of_bounds="error"``);
* a category that was not declared, and a missing or non-finite numeric
  value, are always rejected (at fit and at predict time).

Examples
--------
>>> import numpy as np
>>> schema = FeatureSchema.build(3, bounds=([0.0, 0.0], [10.0, 1.0]), categories={1: ["a", "b"]})
>>> schema.numeric, schema.categorical
((0, 2), (1,))
>>> num, cat = schema.encode(np.array([[1.5, "b", 0.2], [9.0, "a", 1.0]], dtype=object))
>>> num.tolist(), cat.tolist()
([[1.5, 0.2], [9.0, 1.0]], [[1], [0]])
>>> schema.encode(np.array([[1.5, "c", 0.2]], dtype=object))
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: column 1: value 'c' is not a declared category; allowed: ['a', 'b']
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError, PrivacyLeakWarning

OUT_OF_BOUNDS = ("clip", "error", "keep")


class BoundsWarning(UserWarning):
    """Numeric values outside the declared bounds were clipped to them."""


@dataclass(frozen=True)
class FeatureSchema:
    """Which columns are numeric (with bounds) and categorical (with values).

    Attributes
    ----------
    n_features:
        Number of columns.
    numeric, lower, upper:
        Numeric column indices and their declared bounds (``lower < upper``).
    categorical, categories:
        Categorical column indices and their declared values.
    """

    n_features: int
    numeric: tuple[int, ...]
    lower: np.ndarray
    upper: np.ndarray
    categorical: tuple[int, ...]
    categories: tuple[np.ndarray, ...]

    @classmethod
    def build(cls, n_features: int, *, bounds: Any,
              categories: Mapping[int, Sequence[Any]] | None = None,
              X: Any = None) -> FeatureSchema:
        """Validate and build a schema.

        Parameters
        ----------
        n_features:
            Number of columns.
        bounds:
            ``(lower, upper)``: one value (broadcast) or one per numeric column,
            in column order; or ``"data"`` to take them from ``X`` (leaks the
            data's extremes: a :class:`~core.errors.PrivacyLeakWarning`).
        categories:
            ``{column: declared values}`` for the categorical columns.
        X:
            The data, only for ``bounds="data"``.
        """
        cats = dict(categories or {})
        for col, values in cats.items():
            if isinstance(col, bool) or not isinstance(col, (int, np.integer)) or not (
                    0 <= col < n_features):
                raise ConfigError(f"categories: column {col!r} is not in 0..{n_features - 1}")
            if len(values) < 1 or len(set(map(str, values))) != len(values):
                raise ConfigError(f"categories: column {col} needs distinct declared values, "
                                  f"got {list(values)!r}")
        categorical = tuple(sorted(int(c) for c in cats))
        numeric = tuple(c for c in range(n_features) if c not in cats)
        if bounds is None:
            if numeric:
                raise ConfigError(
                    f"bounds are missing for the numeric columns {list(numeric)}: declare "
                    "bounds=(lower, upper) (public), or bounds='data' (derived from the data; "
                    "leaks its extremes)")
            bounds = ([], [])
        if isinstance(bounds, str):
            if bounds != "data":
                raise ConfigError(f"bounds must be (lower, upper) or 'data', got {bounds!r}")
            if X is None:
                raise ConfigError("bounds='data' needs the data")
            block = _numeric_block(np.asarray(X, dtype=object) if np.asarray(X).dtype == object
                                   else np.asarray(X), numeric)
            warnings.warn("domain bounds derived from the data leak its extremes; declare "
                          "public bounds for a private model", PrivacyLeakWarning, stacklevel=3)
            lower, upper = block.min(axis=0), block.max(axis=0)
            upper = np.where(upper > lower, upper, lower + 1.0)
        else:
            try:
                lo_in, hi_in = bounds
            except (TypeError, ValueError):
                raise ConfigError(f"bounds must be a pair (lower, upper), got {bounds!r}") from None
            lower = np.broadcast_to(np.asarray(lo_in, dtype=np.float64), (len(numeric),)).copy() \
                if np.ndim(lo_in) == 0 else np.asarray(lo_in, dtype=np.float64)
            upper = np.broadcast_to(np.asarray(hi_in, dtype=np.float64), (len(numeric),)).copy() \
                if np.ndim(hi_in) == 0 else np.asarray(hi_in, dtype=np.float64)
            if lower.shape != (len(numeric),) or upper.shape != (len(numeric),):
                raise ConfigError(f"bounds: need one lower and one upper value per numeric column "
                                  f"({len(numeric)}), got shapes {lower.shape} and {upper.shape}")
        bad = ~(np.isfinite(lower) & np.isfinite(upper) & (lower < upper))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"bounds of column {numeric[j]} must be finite with lower < upper, "
                              f"got [{lower[j]}, {upper[j]}]")
        return cls(n_features, numeric, lower, upper, categorical,
                   tuple(np.asarray(cats[c], dtype=object) for c in categorical))

    @property
    def n_categories(self) -> tuple[int, ...]:
        """Declared values per categorical column."""
        return tuple(len(c) for c in self.categories)

    def encode(self, X: Any, *, out_of_bounds: str = "clip") -> tuple[np.ndarray, np.ndarray]:
        """``(numeric float block (n, p), category indices (n, q))`` of ``X``.

        ``out_of_bounds``: ``"clip"`` (warn), ``"error"``, or ``"keep"`` (prediction:
        values outside the bounds are simply evaluated).
        """
        if out_of_bounds not in OUT_OF_BOUNDS:
            raise ConfigError(f"out_of_bounds must be one of {list(OUT_OF_BOUNDS)}, "
                              f"got {out_of_bounds!r}")
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.shape[1] != self.n_features:
            raise ConfigError(f"X must be 2-D with {self.n_features} columns, got shape "
                              f"{arr.shape}")
        num = _numeric_block(arr, self.numeric)
        low, high = num < self.lower, num > self.upper
        if out_of_bounds != "keep" and (low.any() or high.any()):
            row, j = (int(v) for v in np.argwhere(low | high)[0])
            col = self.numeric[j]
            if out_of_bounds == "error":
                raise ConfigError(
                    f"column {col}: value {float(num[row, j])!r} (row {row}) is outside the "
                    f"declared bounds [{self.lower[j]}, {self.upper[j]}]; "
                    f"{int((low | high).sum())} values in all (use out_of_bounds='clip' to "
                    "clip them)")
            counts = (low | high).sum(axis=0)
            warnings.warn("values outside the declared bounds were clipped: "
                          + ", ".join(f"column {self.numeric[k]}: {int(c)}"
                                      for k, c in enumerate(counts) if c),
                          BoundsWarning, stacklevel=3)
            num = np.clip(num, self.lower, self.upper)
        cat = np.empty((arr.shape[0], len(self.categorical)), dtype=np.int64)
        for q, col in enumerate(self.categorical):
            cat[:, q] = _category_codes(arr[:, col], self.categories[q], col)
        return num, cat


def _numeric_block(arr: np.ndarray, columns: tuple[int, ...]) -> np.ndarray:
    try:
        num = arr[:, list(columns)].astype(np.float64) if columns else np.empty((len(arr), 0))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"numeric columns {list(columns)} must hold numbers ({exc}); declare "
                          "categorical columns with categories={column: values}") from None
    bad = ~np.isfinite(num)
    if bad.any():
        row, j = (int(v) for v in np.argwhere(bad)[0])
        raise ConfigError(f"column {columns[j]}: missing or non-finite value "
                          f"{float(num[row, j])!r} at row {row}; numeric features must be "
                          "finite numbers (encode a missing value as a category of a "
                          "categorical column)")
    return num


def _as_float(values: np.ndarray) -> np.ndarray | None:
    try:
        out = np.asarray(values).astype(np.float64)
    except (TypeError, ValueError):
        return None
    return out if np.all(np.isfinite(out)) else None


def _category_codes(column: np.ndarray, declared: np.ndarray, col: int) -> np.ndarray:
    """Indices of the column's values in the declared categories (vectorised over uniques).

    Numbers are compared as numbers when both the column and the declared values
    are numeric (so the code ``1.0`` matches a declared ``1``), as text otherwise.
    """
    num_col, num_dec = _as_float(column), _as_float(declared)
    if num_col is not None and num_dec is not None:
        uniq, inverse = np.unique(num_col, return_inverse=True)
        keys: list = [float(v) for v in num_dec]
        found: list = [float(v) for v in uniq]
    else:
        uniq, inverse = np.unique(column.astype(str), return_inverse=True)
        keys, found = [str(v) for v in declared], [str(v) for v in uniq]
    index = {k: i for i, k in enumerate(keys)}
    codes = np.empty(len(uniq), dtype=np.int64)
    for u, value in enumerate(found):
        if value not in index:
            shown = uniq[u] if isinstance(value, float) else value
            raise ConfigError(f"column {col}: value {shown!r} is not a declared category; "
                              f"allowed: {[str(v) for v in declared[:20]]}")
        codes[u] = index[value]
    return codes[inverse.ravel()]


__all__ = ["OUT_OF_BOUNDS", "BoundsWarning", "FeatureSchema"]
