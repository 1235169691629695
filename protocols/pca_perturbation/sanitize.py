"""PCA + Laplace sanitisation: the sanitizer's maths (Mukherjee et al. 2008, §5.1 and §5.3.1).

1. Normalise every attribute to ``[0, 1]`` with public per-attribute bounds.
2. PCA of the normalised training data (eigen-decomposition of its
   covariance, population normalisation ``1/n``); components are sorted by
   decreasing variance and signed so that each one's largest-magnitude
   loading is positive (deterministic output).
3. Keep the first ``s`` scores and add Laplace noise to column ``i`` with
   scale ``b_i = b * range_i``, where ``range_i`` is the range (max - min) of
   score ``i`` over the training rows. The noise is drawn by
   :class:`core.dp.Laplace` with ``epsilon = 1/b`` and ``sensitivity =
   range_i``, so ``b_i = range_i / (1/b)`` and each column's amplification
   ``exp(range_i / b_i)`` is ``e^(1/b)`` (eq. 8).
4. Distortion statistics of the squared distance between a *noisy* training
   point and a *clean* test point projected on the same ``s`` components
   (eqs. 12-13; the test points are **not** noised): with ``S`` the kept
   and ``N`` the dropped components and ``sigma_i^2`` the eigenvalues,

   ``E(D) = 2 sum_S b_i^2 - 2 sum_N sigma_i^2``

   ``Var(D) = 16 sum_S b_i^2 sigma_i^2 + 20 sum_S b_i^4 + 8 sum_N sigma_i^4``.

   The text's eq. (12)-(13) are legible and agree with the appendix, which
   we re-derived: the ``S`` terms hold for any data distribution (they need
   only that a training and a test point are independent draws with the
   component's variance), the ``N`` terms assume the dropped scores are
   independent normals (``Var((X - Y)^2) = 8 sigma^4``).

Examples
--------
>>> import numpy as np
>>> Z = np.random.default_rng(0).random((200, 3))
>>> fit = fit_pca(Z)
>>> fit.components.shape, bool(np.all(np.diff(fit.variances) <= 0))
((3, 3), True)
>>> stats = distortion_statistics(kept_variances=fit.variances[:2],
...                               scales=np.array([0.1, 0.1]),
...                               dropped_variances=fit.variances[2:])
>>> round(stats.mean, 6) == round(2 * 0.02 - 2 * float(fit.variances[2]), 6)
True
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ppknn.core.data import check_finite
from ppknn.core.dp import Laplace
from ppknn.core.errors import ConfigError, DataError
from ppknn.core.rng import RandomnessMode


def check_noise_parameter(b: object, *, name: str = "b") -> float:
    """The Laplace parameter ``b``: a finite real number > 0."""
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, numbers.Real):
        raise ConfigError(f"{name} must be a real number > 0, got {type(b).__name__} {b!r}")
    value = float(b)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a finite number > 0, got {b!r}")
    return value


def check_components(s: object, m: int, *, name: str = "s") -> int:
    """The number of kept components: an integer in ``[1, m]``."""
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
        raise ConfigError(f"{name} must be an integer in [1, {m}], got {type(s).__name__} {s!r}")
    if not 1 <= int(s) <= m:
        raise ConfigError(f"{name} must be in [1, {m}] (the number of attributes), got {s}")
    return int(s)


def check_training_data(X: object, y: object, *, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate training rows and labels: finite, 2-D, >= 2 rows, no constant column.

    A constant column carries no information and has no range to normalise
    by; drop it before sanitising.
    """
    arr = np.asarray(X)
    check_finite(arr, what)
    arr = arr.astype(np.float64)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise DataError(f"{what}: features must be a 2-D array with >= 2 rows and >= 1 "
                        f"column, got shape {arr.shape}")
    span = arr.max(axis=0) - arr.min(axis=0)
    constant = np.flatnonzero(span == 0)
    if constant.size:
        j = int(constant[0])
        raise DataError(f"{what}: column {j} is constant (every value is {float(arr[0, j])!r}; "
                        f"{constant.size} constant column(s): {constant.tolist()[:10]}); "
                        f"drop constant columns before sanitising")
    labels = np.asarray(y)
    if labels.shape != (arr.shape[0],) or labels.dtype.kind not in "iu":
        raise DataError(f"{what}: labels must be {arr.shape[0]} integers, got shape "
                        f"{labels.shape} dtype {labels.dtype}")
    return arr, labels.astype(np.int64)


def normalise(X: np.ndarray, lower: np.ndarray, upper: np.ndarray, *,
              out_of_bounds: str = "clip") -> np.ndarray:
    """Map ``[lower, upper]`` to ``[0, 1]`` per attribute.

    A value outside its bounds is clipped to them (``out_of_bounds="clip"``)
    or refused (``"raise"``); a constant attribute (``lower == upper``) and a
    NaN are refused with :class:`~core.errors.ConfigError` naming them.

    >>> normalise(np.array([[1.0, 5.0], [4.0, 9.0]]), np.array([0.0, 5.0]), np.array([2.0, 7.0]))
    array([[0.5, 0. ],
           [1. , 1. ]])
    """
    X = np.asarray(X, dtype=np.float64)
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    if out_of_bounds not in ("clip", "raise"):
        raise ConfigError(f"out_of_bounds must be 'clip' or 'raise', got {out_of_bounds!r}")
    constant = np.flatnonzero(np.broadcast_to(upper <= lower, lower.shape))
    if constant.size:
        j = int(constant[0])
        raise ConfigError(f"cannot normalise attribute {j}: its bounds [{lower.flat[j]}, "
                          f"{upper.flat[j]}] have no width (a constant feature); declare wider "
                          "public bounds or drop the feature")
    if np.isnan(X).any():
        row, col = (int(v) for v in np.argwhere(np.isnan(X))[0])
        raise ConfigError(f"cannot normalise NaN at row {row}, attribute {col}")
    outside = (X < lower) | (X > upper)
    if out_of_bounds == "raise" and outside.any():
        row, col = (int(v) for v in np.argwhere(outside)[0])
        raise ConfigError(f"value {X[row, col]} at row {row}, attribute {col} is outside its "
                          f"bounds [{np.broadcast_to(lower, X.shape)[row, col]}, "
                          f"{np.broadcast_to(upper, X.shape)[row, col]}]")
    return np.clip((X - lower) / (upper - lower), 0.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class PCAFit:
    """A PCA of normalised data.

    Attributes
    ----------
    mean:
        ``(m,)`` mean of the normalised training rows.
    components:
        ``(m, m)``; row ``i`` is the ``i``-th eigenvector (unit norm).
    variances:
        ``(m,)`` eigenvalues, decreasing: the population variance of each score.
    """

    mean: np.ndarray
    components: np.ndarray
    variances: np.ndarray

    def scores(self, Z: np.ndarray, s: int | None = None) -> np.ndarray:
        """Scores of normalised rows ``Z`` on the first ``s`` components (all if None)."""
        comps = self.components if s is None else self.components[:s]
        return (np.asarray(Z, dtype=np.float64) - self.mean) @ comps.T


def fit_pca(Z: np.ndarray) -> PCAFit:
    """PCA by eigen-decomposition of the ``1/n`` covariance (see module docstring)."""
    Z = np.asarray(Z, dtype=np.float64)
    mean = Z.mean(axis=0)
    centred = Z - mean
    cov = centred.T @ centred / Z.shape[0]
    values, vectors = np.linalg.eigh(cov)
    order = np.argsort(values, kind="stable")[::-1]
    values = np.clip(values[order], 0.0, None)
    comps = vectors[:, order].T
    lead = np.argmax(np.abs(comps), axis=1)
    signs = np.where(comps[np.arange(len(comps)), lead] < 0, -1.0, 1.0)
    return PCAFit(mean=mean, components=comps * signs[:, None], variances=values)


def laplace_mechanisms(ranges: np.ndarray, b: float,
                       mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE) -> list[Laplace]:
    """One Laplace mechanism per kept component: ``epsilon = 1/b``, ``sensitivity = range_i``.

    A component with range 0 (the data has fewer than ``s`` dimensions of
    variation) cannot be noised in proportion to its range and is refused.
    """
    b = check_noise_parameter(b)
    ranges = np.asarray(ranges, dtype=np.float64)
    flat = np.flatnonzero(~(ranges > 1e-12 * max(1.0, float(np.max(ranges, initial=0.0)))))
    if flat.size:
        i = int(flat[0])
        raise ConfigError(f"principal component {i + 1} has range {ranges[i]:.3g} on the "
                          f"training data (the data spans only {i} dimension(s)); choose "
                          f"s <= {i}")
    mode = RandomnessMode(mode)
    return [Laplace(epsilon=1.0 / b, sensitivity=float(r), mode=mode) for r in ranges]


def perturb(values: np.ndarray, mechanisms: list[Laplace], rng: object) -> np.ndarray:
    """Add each mechanism's noise to its column of ``values`` ``(n, s)``.

    One vectorised draw per column (the loop runs over the ``s`` columns,
    never over rows).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(mechanisms):
        raise ConfigError(f"values of shape {values.shape} do not match "
                          f"{len(mechanisms)} mechanisms")
    out = np.empty_like(values)
    for i, mech in enumerate(mechanisms):
        out[:, i] = mech.randomise(values[:, i], rng).value
    return out


def amplification(ranges: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Per-column amplification ``exp(range_i / b_i)`` of Laplace noise (eqs. 7-8).

    ``inf`` (without a warning) where a tiny ``b`` makes it overflow.
    """
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(ranges, dtype=np.float64) / np.asarray(scales, dtype=np.float64))


@dataclass(frozen=True, kw_only=True)
class DistortionStats:
    """Mean and variance of the squared-distance distortion ``D = d'^2 - d^2`` (eqs. 12-13).

    Attributes
    ----------
    mean, variance:
        ``E(D)`` and ``Var(D)``.
    n_sd:
        Standard deviations above the mean in the search radius (the paper uses 2).
    """

    mean: float
    variance: float
    n_sd: float = 2.0

    @property
    def radius2(self) -> float:
        """Squared search radius of the modified kNN: ``E(D) + n_sd * sqrt(Var(D))``."""
        return self.mean + self.n_sd * math.sqrt(self.variance)


def distortion_statistics(*, kept_variances: np.ndarray, scales: np.ndarray,
                          dropped_variances: np.ndarray, n_sd: float = 2.0) -> DistortionStats:
    """Eqs. (12)-(13) from the kept components' variances and noise scales.

    Parameters
    ----------
    kept_variances:
        ``sigma_i^2`` of the released (noised) components ``S``.
    scales:
        Laplace scales ``b_i`` of those components (0 for no noise).
    dropped_variances:
        ``sigma_i^2`` of the dropped components ``N``.
    n_sd:
        Standard deviations in the search radius.
    """
    kv = np.asarray(kept_variances, dtype=np.float64)
    bs = np.asarray(scales, dtype=np.float64)
    dv = np.asarray(dropped_variances, dtype=np.float64)
    if kv.shape != bs.shape:
        raise ConfigError(f"{kv.size} kept variances but {bs.size} noise scales")
    if not (np.isfinite(n_sd) and n_sd >= 0):
        raise ConfigError(f"n_sd must be a finite number >= 0, got {n_sd!r}")
    b2 = bs**2
    mean = 2.0 * b2.sum() - 2.0 * dv.sum()
    var = 16.0 * (b2 * kv).sum() + 20.0 * (b2**2).sum() + 8.0 * (dv**2).sum()
    return DistortionStats(mean=float(mean), variance=float(var), n_sd=float(n_sd))


__all__ = [
    "DistortionStats",
    "PCAFit",
    "amplification",
    "check_components",
    "check_noise_parameter",
    "check_training_data",
    "distortion_statistics",
    "fit_pca",
    "laplace_mechanisms",
    "normalise",
    "perturb",
]
