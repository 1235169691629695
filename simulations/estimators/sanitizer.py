"""``PCALaplaceSanitizer``: the sanitizer of Mukherjee et al. as a scikit-learn transformer.

``fit`` normalises the training rows to ``[0, 1]`` with the public bounds, runs
PCA and keeps ``n_components`` components; ``transform`` releases the noisy
scores of the rows it is given: their projection plus Laplace noise of scale
``b * range_i`` on component ``i`` (``range_i``: the range of that score over
the training rows, as in the paper). ``project`` gives the clean projection
(what the miner computes for its own query rows). The per-component
amplification ``e^(1/b)`` and the distortion statistics ``E(D)``, ``Var(D)``
(eqs. 12-13) are fitted attributes. No ε-DP is claimed (the noise is scaled to
the scores' range, the basis is published exactly).

Randomness: an int ``random_state`` draws the same noise on every call
(reproducible experiments); ``None`` or ``mode="secure"`` draws fresh noise
each call (OS entropy with ``"secure"``).

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_wine
>>> from sklearn.decomposition import PCA
>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.preprocessing import MinMaxScaler
>>> X, _ = load_wine(return_X_y=True)
>>> clean = PCALaplaceSanitizer(n_components=3, b=None, bounds=(X.min(0), X.max(0))).fit(X)
>>> ref = make_pipeline(MinMaxScaler(), PCA(3)).fit(X)
>>> bool(np.allclose(clean.transform(X), ref.transform(X)))
True
>>> noisy = PCALaplaceSanitizer(n_components=3, b=0.2, bounds=(X.min(0), X.max(0))).fit(X)
>>> round(float(noisy.amplification_[0]), 1), noisy.transform(X).shape
(148.4, (178, 3))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.protocols.pca_perturbation.sanitize import (
    amplification,
    distortion_statistics,
    fit_pca,
    laplace_mechanisms,
    normalise,
    perturb,
)
from ppknn.simulations.estimators.simulate import resolve_bounds


class PCALaplaceSanitizer(TransformerMixin, BaseEstimator):
    """PCA + Laplace perturbation of normalised rows (Mukherjee, Banerjee, Chen & Gangopadhyay).

    Parameters
    ----------
    n_components:
        s, the principal components kept (at most the number of features; ``None``: all).
    b:
        Laplace scale factor: component ``i`` gets noise of scale ``b * range_i``;
        ``None``: no noise (the plain projection, scikit-learn's ``PCA`` after
        min-max scaling by the bounds).
    n_sd:
        Standard deviations in the modified kNN's search radius (``radius2_``).
    bounds:
        Public per-feature bounds ``(lower, upper)`` used to normalise to ``[0, 1]``,
        or ``"data"`` (derived from the training rows; warns: they leak the extremes).
    random_state:
        An int (the same noise every call) or ``None`` (fresh noise every call).
    mode:
        ``"reproducible"`` or ``"secure"`` (OS entropy and floating-point-safe noise).

    Attributes
    ----------
    mean_, components_, explained_variance_:
        The PCA of the normalised training rows (components signed so that each
        one's largest loading is positive, as scikit-learn does).
    ranges_, scales_, amplification_:
        Per kept component: the training scores' range, the noise scale
        ``b * range_i``, and ``exp(range_i / scale_i) = e^(1/b)``.
    distortion_mean_, distortion_variance_, radius2_:
        E(D), Var(D) and the squared search radius ``E + n_sd * sqrt(Var)``.
    """

    def __init__(self, n_components: int | None = None, *, b: float | None = 0.2, n_sd: float = 2.0,
                 bounds: Any = "data", random_state: int | None = 0,
                 mode: str = "reproducible") -> None:
        self.n_components = n_components
        self.b = b
        self.n_sd = n_sd
        self.bounds = bounds
        self.random_state = random_state
        self.mode = mode

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # the noise of a row depends on its position in the batch: a reordered or
        # subset batch gets other noise (scikit-learn's order/subset invariance checks)
        tags.non_deterministic = self.b is not None
        return tags

    def fit(self, X: Any, y: Any = None) -> PCALaplaceSanitizer:
        """Normalise by the bounds, run PCA and fix the noise scales (no release yet)."""
        if self.mode not in ("reproducible", "secure"):
            raise ConfigError(f"mode = {self.mode!r}; allowed: 'reproducible', 'secure'")
        if self.random_state is not None and (isinstance(self.random_state, bool) or
                                              not isinstance(self.random_state, int)):
            raise ConfigError(f"random_state = {self.random_state!r}; allowed: an int or None")
        X = validate_data(self, X, dtype=np.float64)
        if X.shape[0] < 2:
            raise ValueError(f"PCA of the training rows needs n_samples >= 2; got "
                             f"n_samples = {X.shape[0]}")
        s = X.shape[1] if self.n_components is None else self.n_components
        if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= X.shape[1]:
            raise ValueError(f"n_components = {s!r}; allowed: an int in [1, {X.shape[1]}] "
                             "(the number of features)")
        bounds = resolve_bounds(self.bounds, X, who=type(self).__name__)
        width = bounds.upper - bounds.lower
        self.lower_ = bounds.lower
        self.span_ = np.where(width > 0, width, 1.0)  # a constant feature maps to 0
        Z = normalise(X, self.lower_, self.lower_ + self.span_)
        fit = fit_pca(Z)
        self.mean_ = fit.mean
        self.components_ = fit.components[:s]
        self.explained_variance_ = fit.variances[:s]
        scores = fit.scores(Z, s)
        self.ranges_ = scores.max(axis=0) - scores.min(axis=0)
        if self.b is None:
            self._mechanisms = None
            self.scales_ = np.zeros(s)
        else:
            self._mechanisms = laplace_mechanisms(self.ranges_, float(self.b), self.mode)
            self.scales_ = float(self.b) * self.ranges_
        with np.errstate(divide="ignore"):
            self.amplification_ = amplification(self.ranges_, self.scales_)
        stats = distortion_statistics(kept_variances=self.explained_variance_,
                                      scales=self.scales_,
                                      dropped_variances=fit.variances[s:], n_sd=self.n_sd)
        self.distortion_mean_, self.distortion_variance_ = stats.mean, stats.variance
        self.radius2_ = stats.radius2
        return self

    def project(self, X: Any) -> np.ndarray:
        """The clean scores of ``X`` on the kept components (no noise)."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Z = normalise(X, self.lower_, self.lower_ + self.span_)
        return (Z - self.mean_) @ self.components_.T

    def transform(self, X: Any) -> np.ndarray:
        """The sanitised scores of ``X``: its projection plus Laplace noise (module docstring)."""
        scores = self.project(X)
        if self._mechanisms is None:
            return scores
        if self.mode == "secure":
            rng: Any = None
        elif self.random_state is None:
            rng = np.random.default_rng()
        else:
            rng = SeedPolicy(root=int(self.random_state),
                             mode=RandomnessMode.REPRODUCIBLE).generator("sanitizer", "noise")
        return perturb(scores, self._mechanisms, rng)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``pc0``, ``pc1``, ... (one per kept component)."""
        check_is_fitted(self, "components_")
        return np.asarray([f"pc{i}" for i in range(len(self.components_))], dtype=object)


__all__ = ["PCALaplaceSanitizer"]
