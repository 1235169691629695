"""A scikit-learn estimator for the private Naive Bayes of Zafarani & Clifton (and baselines).

:class:`DPNaiveBayes` follows scikit-learn's conventions (``fit`` returns
``self``, ``predict``, ``predict_proba``, ``score``, ``get_params`` /
``set_params``, ``clone``), so it drops into ``cross_val_score`` and
pipelines. Every fit of a private method is paid for on a
:class:`~core.dp.PrivacyLedger` *before* the data is read for a release:
pass ``fit(..., ledger=..., analyst=...)`` to charge a data owner's ledger,
or let the estimator open one holding exactly ``(epsilon, delta)``.

Randomness: ``random_state`` an int (a stream derived from it by
:class:`~core.rng.SeedPolicy`: refits repeat), a numpy Generator (used as
given), or ``None`` (fresh OS entropy: refits differ). ``mode="secure"``
draws the noise from OS entropy whatever ``random_state`` says.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.vstack([rng.normal(3, 1, (5000, 2)), rng.normal(7, 1, (5000, 2))]).clip(0, 10)
>>> y = np.repeat([0, 1], 5000)
>>> clf = DPNaiveBayes(epsilon=1.0, bounds=(0.0, 10.0), classes=[0, 1], random_state=1)
>>> clf.fit(X, y).score(X, y) > 0.9, clf.ledger_.remaining().epsilon
(True, 0.0)
>>> exact = DPNaiveBayes(epsilon=float("inf"), bounds=(0.0, 10.0), classes=[0, 1]).fit(X, y)
>>> from sklearn.naive_bayes import GaussianNB
>>> bool(np.allclose(exact.theta_, GaussianNB().fit(X, y).theta_))
True
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ppknn.core.dp import PrivacyLedger
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.protocols.dp_nb.schema import OUT_OF_BOUNDS, FeatureSchema
from ppknn.protocols.dp_nb.training import NBConfig, budget_split, check_trim, train


class DPNaiveBayes(ClassifierMixin, BaseEstimator):
    """Differentially private Naive Bayes (Gaussian numeric + categorical features).

    Parameters
    ----------
    epsilon:
        Total privacy budget ε of one fit (``math.inf``: no noise).
    bounds:
        ``(lower, upper)`` for the numeric columns (one value or one per numeric
        column, in column order), or ``"data"`` (derived from X; warns). Required
        when there are numeric columns.
    categories:
        ``{column: declared values}`` of the categorical columns.
    classes:
        The public label set (``None``: the labels in ``y``, with a warning).
    method:
        ``"smooth"`` (the paper), ``"vaidya"``, ``"bun-steinke"``, ``"non-private"``.
    noise:
        ``"polynomial"`` (proven, default), ``"cauchy"``, ``"paper"`` (the paper's
        unproven √2·S/ε' constant), ``"laplace"`` / ``"gaussian"`` (need ``delta > 0``).
    gamma:
        Tail exponent of the polynomial noise.
    delta:
        Total δ (only with ``noise="laplace"`` or ``"gaussian"``).
    trim:
        ``"auto"``, an integer per side, or a fraction of each class's noisy count.
    var_smoothing:
        Added to every variance, as a fraction of the largest squared bound range.
    var_floor:
        Private models: released variances are at least this fraction of the
        feature's squared bound range.
    neighbours:
        ``"add-remove"`` (class sizes private) or ``"replace"`` (the paper's model:
        class sizes public, one record's values change).
    density:
        ``"gaussian"`` or ``"truncated"`` (normal truncated to the bounds).
    out_of_bounds:
        Training values outside the bounds: ``"clip"`` (with a warning) or ``"error"``.
    random_state:
        Seed, Generator or ``None`` (see the module docstring).
    mode:
        ``"reproducible"`` or ``"secure"``.
    """

    def __init__(self, *, epsilon: float = 1.0, bounds: Any = None,
                 categories: dict[int, Any] | None = None, classes: Any = None,
                 method: str = "smooth", noise: str = "polynomial", gamma: float = 4.0,
                 delta: float = 0.0, trim: Any = "auto", var_smoothing: float = 1e-9,
                 var_floor: float = 1e-3, neighbours: str = "add-remove",
                 density: str = "gaussian", out_of_bounds: str = "clip",
                 random_state: Any = None, mode: str = "reproducible") -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.categories = categories
        self.classes = classes
        self.method = method
        self.noise = noise
        self.gamma = gamma
        self.delta = delta
        self.trim = trim
        self.var_smoothing = var_smoothing
        self.var_floor = var_floor
        self.neighbours = neighbours
        self.density = density
        self.out_of_bounds = out_of_bounds
        self.random_state = random_state
        self.mode = mode

    # ---------------------------------------------------------------- fitting
    def _config(self) -> NBConfig:
        return NBConfig(method=self.method, epsilon=self.epsilon, delta=self.delta,
                        noise=self.noise, gamma=self.gamma, trim=self.trim,
                        var_smoothing=self.var_smoothing, var_floor=self.var_floor,
                        neighbours=self.neighbours,
                        density=self.density,
                        mode=self.mode)

    def _generator(self, config: NBConfig) -> Any:
        if config.mode is RandomnessMode.SECURE:
            return None
        rs = self.random_state
        if isinstance(rs, np.random.Generator):
            return rs
        if rs is None:
            return np.random.default_rng()
        return SeedPolicy(root=rs).generator("dp-nb", "fit")

    def _labels(self, y: Any, private: bool) -> tuple[np.ndarray, np.ndarray]:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ConfigError(f"y must be 1-D, got shape {y.shape}")
        if self.classes is None:
            if private:
                warnings.warn("classes derived from the training labels leak which labels "
                              "occur; pass classes=... (public)", PrivacyLeakWarning,
                              stacklevel=3)
            classes = np.unique(y)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or len(np.unique(classes)) != len(classes) or not len(classes):
                raise ConfigError(f"classes must be distinct labels, got {self.classes!r}")
        index = {v: i for i, v in enumerate(classes.tolist())}
        uniq, inverse = np.unique(y, return_inverse=True)
        unknown = [u for u in uniq.tolist() if u not in index]
        if unknown:
            raise ConfigError(f"labels {unknown[:5]} are not among the declared classes "
                              f"{classes.tolist()}")
        codes = np.asarray([index[u] for u in uniq.tolist()], dtype=np.int64)[inverse.ravel()]
        return classes, codes

    def fit(self, X: Any, y: Any, *, ledger: PrivacyLedger | None = None,
            analyst: str | None = None) -> DPNaiveBayes:
        """Train on ``(X, y)``, charging ``(epsilon, delta)`` to ``ledger`` first.

        Raises
        ------
        ConfigError
            Bad parameters or input (named in the message).
        BudgetExhausted
            The ledger cannot pay for the fit (nothing is released).
        """
        config = self._config()
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.shape[0] == 0:
            raise ConfigError(f"X must be a non-empty 2-D array, got shape {arr.shape}")
        if self.out_of_bounds not in OUT_OF_BOUNDS[:2]:
            raise ConfigError(f"out_of_bounds must be 'clip' or 'error', got "
                              f"{self.out_of_bounds!r}")
        classes, codes = self._labels(y, config.private)
        if len(codes) != arr.shape[0]:
            raise ConfigError(f"X has {arr.shape[0]} rows but y has {len(codes)} labels")
        schema = FeatureSchema.build(arr.shape[1], bounds=self.bounds, categories=self.categories,
                                     X=arr)
        numeric, categorical = schema.encode(arr, out_of_bounds=self.out_of_bounds)
        check_trim(config, np.bincount(codes, minlength=len(classes)))
        rng = self._generator(config)
        kwargs = dict(n_classes=len(classes), schema=schema, config=config, rng=rng)
        if config.private:
            if ledger is None:
                ledger = PrivacyLedger(owner="dp-nb", epsilon=config.epsilon, delta=config.delta)
            cost = budget_split(config, len(schema.numeric), len(schema.categorical)).total
            with ledger.reserve(cost, analyst=analyst,
                                label=f"dp-nb {config.method} ({config.noise})"):
                result = train(numeric, categorical, codes, **kwargs)
        else:
            result = train(numeric, categorical, codes, **kwargs)
        self._set_fitted(result, classes, schema, ledger if config.private else None)
        return self

    def _set_fitted(self, result, classes, schema, ledger) -> None:
        params = result.params
        self.classes_ = classes
        self.schema_ = schema
        self.params_ = params
        self.n_features_in_ = schema.n_features
        self.class_count_ = params.class_count
        self.class_prior_ = np.exp(params.class_log_prior)
        self.theta_ = params.theta
        self.var_ = params.var
        self.category_count_ = params.category_count
        self.feature_log_prob_ = params.feature_log_prob
        self.releases_ = result.releases
        self.budget_ = result.split
        self.epsilon_ = result.split.total.epsilon
        self.ledger_ = ledger
        self.trim_ = result.trim  # owner-side diagnostics, not released
        self.sensitivity_ = result.sensitivity

    # ------------------------------------------------------------- prediction
    def _encode(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "params_")
        return self.schema_.encode(np.asarray(X), out_of_bounds="keep")

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log posterior class probabilities ``(n, C)``."""
        return np.log(self.predict_proba(X))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior class probabilities ``(n, C)``; columns follow ``classes_``."""
        numeric, categorical = self._encode(X)
        return self.params_.predict_proba(numeric, categorical)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of each row (a value of ``classes_``)."""
        numeric, categorical = self._encode(X)
        return self.classes_[self.params_.predict(numeric, categorical)]


__all__ = ["DPNaiveBayes"]
