"""A scikit-learn estimator for the private Naive Bayes of Zafarani & Clifton (and baselines).

:class:`DPNaiveBayes` follows scikit-learn's conventions (``fit`` returns
``self``, ``predict``, ``predict_proba``, ``score``, ``get_params`` /
``set_params``, ``clone``), so it drops into ``cross_val_score`` and
pipelines. Every fit of a private method is paid for on a
:class:`~core.dp.PrivacyLedger` *before* the data is read for a release:
pass ``fit(..., ledger=..., analyst=...)`` to charge a data owner's ledger,
or let the estimator open one holding exactly ``(epsilon, delta)``.

Randomness: ``random_state`` ``None`` (the default: fresh OS entropy, refits
differ), an int (a stream derived from it by :class:`~core.rng.SeedPolicy`:
refits repeat -- a simulation, not a release: anyone who knows the seed
regenerates the noise and can remove it from the released model), a numpy
``Generator`` (used as given) or ``RandomState`` (a seed drawn from it per
fit). ``mode="secure"`` draws the noise from OS entropy whatever
``random_state`` says.

Accounting: the fit is the release (the model's noisy statistics); predicting
is post-processing of the released model and spends nothing, so any number of
``predict`` calls cost the ``(epsilon, delta)`` of the one fit (``ledger_``).

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

import functools
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ppknn.core.conventions import BelowMajorityWarning, EstimatorConventions, once_per_estimator
from ppknn.core.dp import PrivacyLedger
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.protocols.dp_nb.schema import OUT_OF_BOUNDS, FeatureSchema
from ppknn.protocols.dp_nb.training import NBConfig, budget_split, check_trim, train


def _describe(X: Any, y: Any) -> str:
    """What is wrong with ``(X, y)``, in the words of the rest of the project."""
    import scipy.sparse

    if scipy.sparse.issparse(X):
        return "X is sparse; DPNaiveBayes needs a dense array"
    try:
        arr = np.asarray(X)
    except Exception:  # noqa: BLE001 - described by scikit-learn's message
        return "X is not an array"
    if arr.ndim != 2:
        return f"X must be a 2-D array, got shape {arr.shape}"
    if y is not None and np.ndim(y) >= 1 and len(y) != arr.shape[0]:
        return f"X has {arr.shape[0]} rows but y has {len(y)} labels"
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        bad = arr[~np.isfinite(arr)].ravel()[0]
        return f"X holds a missing or non-finite value {float(bad)!r}"
    return "bad input"


RANDOM_STATE_ALLOWED = ("None (fresh OS entropy), an int >= 0 (reproducible: a simulation, not "
                        "a release), a numpy Generator or RandomState")


def _number(value: Any) -> Any:
    """A numpy scalar (``np.int64(2)``, ``np.float32(1)``) as the Python number; else as given."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, float):
        return float(value)
    return value


@functools.lru_cache(maxsize=64)
def _spawn_key(path: tuple[str, ...]) -> tuple[int, ...]:
    """The spawn key :class:`~core.rng.SeedPolicy` gives a stream path."""
    return SeedPolicy(root=0).seed_sequence(*path).spawn_key


def _random_state(value: Any) -> Any:
    """``random_state`` checked (module docstring); an int as ``int``."""
    if value is None or isinstance(value, (np.random.Generator, np.random.RandomState)):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or int(value) < 0:
        raise ConfigError(f"DPNaiveBayes: random_state = {value!r}; allowed: "
                          f"{RANDOM_STATE_ALLOWED}")
    return int(value)


class DPNaiveBayes(EstimatorConventions, ClassifierMixin, BaseEstimator):
    """Differentially private Naive Bayes (Gaussian numeric + categorical features).

    Parameters
    ----------
    epsilon:
        Total privacy budget ε of one fit (``math.inf``: no noise).
    bounds:
        ``(lower, upper)`` for the numeric columns (one value or one per numeric
        column, in column order), or ``"data"`` (the default: derived from X; warns
        once per estimator, as every ppknn estimator does). ``None`` refuses data with
        numeric columns.
    categories:
        ``{column: declared values}`` of the categorical columns.
    classes:
        The public label set (``None``: the labels in ``y``, with a warning).
    method:
        ``"global"`` (the default: Laplace noise at global sensitivity on every class,
        sums centred on the bounds' middle over the noisy class counts), ``"smooth"``
        (the paper: trimmed statistics at their exact smooth sensitivity, global
        sensitivity for a class where that cannot win), ``"vaidya"``,
        ``"bun-steinke"``, ``"non-private"``. See "Deviations from the paper" below.
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
    budget:
        How ε is split: ``(counts, means, variances)`` weights (default ``(1, 2, 1)``:
        a quarter to the class counts, half to the means and a quarter to the
        variances, each split over the features) or ``"equal"`` (the paper:
        ``ε / (2p + q + 1)`` per release).
    noise_floor:
        Classes released at global sensitivity: each released variance is at least
        this multiple of its own noise scale (public; capped at ``(U - L)² / 4``);
        0 turns it off. Post-processing, free.
    neighbours:
        ``"add-remove"`` (class sizes private) or ``"replace"`` (the paper's model:
        class sizes public, one record's values change).
    density:
        ``"gaussian"`` or ``"truncated"`` (normal truncated to the bounds).
    out_of_bounds:
        Training values outside the bounds: ``"clip"`` (with a warning) or ``"error"``.
    random_state:
        ``None`` (default: fresh OS entropy every fit), an int (refits repeat: a
        simulation, not a release -- anyone who knows the seed regenerates the
        noise), a numpy ``Generator`` or ``RandomState`` (module docstring).
    mode:
        ``"reproducible"`` or ``"secure"``.
    utility_draws:
        Before a private fit releases its model, train this many models with fresh
        noise on folds of the same rows (owner-side diagnostics: never released, not
        charged to the ledger) and warn (:class:`BelowMajorityWarning`) unless their mean held-out
        accuracy ``expected_accuracy_`` is above ``majority_accuracy_`` (the accuracy of
        always predicting the majority class) with 95% confidence. 0 (the default): the
        quick check, one such model (one draw, no interval) -- about one more fit.
    utility_check:
        ``False`` turns the check off (e.g. when the warning itself would reach an
        untrusted party).

    Attributes
    ----------
    classes_, n_features_in_:
        As in scikit-learn (``classes_``: the declared ``classes``, else the labels seen).
    class_count_, class_prior_:
        The released (noisy) class counts and the priors from them.
    theta_, var_:
        The released per-class means and variances of the numeric columns.
    category_count_, feature_log_prob_:
        The released per-class category counts of the categorical columns and their
        log probabilities.
    params_:
        The released model (:class:`~ppknn.protocols.dp_nb.model.NBParams`) that
        ``predict`` uses.
    schema_:
        The public feature schema (numeric bounds, declared categories).
    releases_:
        One entry per noisy release of the fit, with its ε and δ.
    budget_, epsilon_:
        How ``(epsilon, delta)`` was split among the releases, and the ε spent
        (0 for a non-private fit).
    ledger_:
        The ledger charged for the fit (``fit(ledger=...)`` or the estimator's own
        holding exactly ``(epsilon, delta)``); ``None`` for a non-private fit.
        ``predict`` spends nothing (post-processing of the released model).
    trim_, sensitivity_:
        Owner-side diagnostics of the fit (not released).
    privacy_unit_:
        What ``epsilon`` protects: ``"per model: the training set, add/remove one
        row"`` (``replace`` under ``neighbours="replace"``); predicting spends nothing.
    expected_accuracy_, expected_accuracy_low_, majority_accuracy_:
        The ``utility_draws`` check (owner-side, not released; ``None``: not run),
        its one-sided 95% lower bound, and the accuracy of always predicting the
        majority class.

    Notes
    -----
    ``bounds="data"`` (the default, as for every ppknn estimator) derives the bounds
    from the training rows with a :class:`~ppknn.core.errors.PrivacyLeakWarning`
    (once per estimator and its clones): a DP model must not take its bounds from
    the data it protects without saying so. Declare public ``bounds=(lower,
    upper)``; ``bounds=None`` refuses data with numeric columns.

    Deviations from the paper (Zafarani & Clifton), chosen because its defaults lose
    to the global-sensitivity baseline (IBM diffprivlib's ``GaussianNB``) on the
    shipped datasets and on skewed integer data (``docs/benchmarks/
    dp-nb-vs-diffprivlib/``):

    * ``method="global"``, not ``"smooth"``: trimming biases skewed features (values
      1-10 mostly at 1 are trimmed to a constant, the variance floor then decides
      the prediction) and the smooth noise's constants exceed the global Laplace
      noise on classes of up to thousands of rows. ``method="smooth"`` keeps the
      paper's trimmed statistics with their exact smooth sensitivity.
    * ``budget=(1, 2, 1)``, not ``"equal"`` (``ε / (2p + 1)`` per release): the
      class counts divide the noisy sums, and the means decide more than the
      variances.
    * ``neighbours="add-remove"`` (class sizes private), not the paper's replace
      model.
    * ``noise_floor=1`` and ``var_floor``: the paper clips negative variances to 0.

    To run the paper's settings: ``method="smooth", budget="equal",
    noise_floor=0.0``.
    """

    def __init__(self, *, epsilon: float = 1.0, bounds: Any = "data",
                 categories: dict[int, Any] | None = None, classes: Any = None,
                 method: str = "global", noise: str = "polynomial", gamma: float = 4.0,
                 delta: float = 0.0, trim: Any = "auto", var_smoothing: float = 1e-9,
                 var_floor: float = 1e-3, budget: Any = (1.0, 2.0, 1.0),
                 noise_floor: float = 1.0, neighbours: str = "add-remove",
                 density: str = "gaussian", out_of_bounds: str = "clip",
                 random_state: Any = None, mode: str = "reproducible",
                 utility_draws: int = 0, utility_check: bool = True) -> None:
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
        self.budget = budget
        self.noise_floor = noise_floor
        self.neighbours = neighbours
        self.density = density
        self.out_of_bounds = out_of_bounds
        self.random_state = random_state
        self.mode = mode
        self.utility_draws = utility_draws
        self.utility_check = utility_check

    # ---------------------------------------------------------------- fitting
    def _config(self) -> NBConfig:
        """Every training parameter checked (numpy scalars as Python numbers)."""
        return NBConfig(method=self.method, epsilon=_number(self.epsilon),
                        delta=_number(self.delta), noise=self.noise, gamma=_number(self.gamma),
                        trim=_number(self.trim), var_smoothing=_number(self.var_smoothing),
                        var_floor=_number(self.var_floor), neighbours=self.neighbours,
                        budget=(tuple(_number(w) for w in self.budget)
                                if isinstance(self.budget, (tuple, list)) else self.budget),
                        noise_floor=_number(self.noise_floor),
                        density=self.density, mode=self.mode)

    def _draws(self) -> int:
        draws = _number(self.utility_draws)
        if isinstance(draws, bool) or not isinstance(draws, int) or draws < 0:
            raise ConfigError(f"utility_draws = {self.utility_draws!r}; allowed: an int >= 0 "
                              "(0: one draw, the quick check)")
        if not isinstance(self.utility_check, (bool, np.bool_)):
            raise ConfigError(f"utility_check = {self.utility_check!r}; allowed: True or False")
        return draws if self.utility_check else -1

    def _generator(self, config: NBConfig, *path: str) -> Any:
        """The noise's generator (``None``: secure mode, OS entropy)."""
        if config.mode is RandomnessMode.SECURE:
            return None
        rs = _random_state(self.random_state)
        if isinstance(rs, np.random.Generator):
            return rs
        if isinstance(rs, np.random.RandomState):
            return np.random.default_rng(int(rs.randint(0, 2 ** 63, dtype=np.int64)))
        if rs is None:
            return np.random.default_rng()
        # SeedPolicy(root=rs).generator(*path), the path's spawn key hashed once per process
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            rs, spawn_key=_spawn_key(path))))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        private = self.method != "non-private" and self.epsilon != float("inf")
        # a private fit adds noise: its accuracy depends on epsilon, and refits differ
        # unless random_state is an int
        tags.classifier_tags.poor_score = private
        seeded = isinstance(self.random_state, numbers.Integral)
        tags.non_deterministic = private and (not seeded or self.mode == "secure")
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = bool(self.categories)
        tags.input_tags.string = bool(self.categories)
        return tags

    def _validate(self, X: Any, y: Any = None, *, reset: bool) -> Any:
        """scikit-learn's input checks (finite, 2-D, dense, ``n_features_in_``).

        A refusal is a :class:`ConfigError` (a ``ValueError``) saying what was
        wrong in the project's words, then scikit-learn's own message.
        """
        fast = self._plain(X, y, reset=reset)
        if fast is not None:
            return fast if y is None else (fast, y)
        dtype = None if self.categories else np.float64
        finite = not self.categories
        try:
            if y is None:
                return validate_data(self, X, dtype=dtype, reset=reset,
                                     ensure_all_finite=finite)
            X, y = validate_data(self, X, y, dtype=dtype, reset=reset,
                                 ensure_all_finite=finite)
        except ValueError as exc:
            raise ConfigError(f"{_describe(X, y)}: {exc}") from None
        check_classification_targets(y)
        return X, y

    def _plain(self, X: Any, y: Any, *, reset: bool) -> np.ndarray | None:
        """``X`` itself when scikit-learn's checks would pass it unchanged, else ``None``.

        A finite float64 2-D ``ndarray`` with a row and a column (and, when fitted,
        as many columns as in the fit; no feature names involved), with ``y`` a 1-D
        integer ``ndarray`` of as many labels (binary or multiclass by its type):
        the per-call cost of :func:`validate_data` and
        :func:`check_classification_targets` is skipped. Anything else takes their
        route, with their messages.
        """
        if (self.categories or type(X) is not np.ndarray or X.dtype != np.float64
                or X.ndim != 2 or not X.shape[0] or not X.shape[1]
                or hasattr(self, "feature_names_in_")):
            return None
        if not reset and X.shape[1] != getattr(self, "n_features_in_", None):
            return None
        if y is not None and (type(y) is not np.ndarray or y.ndim != 1
                              or y.dtype.kind not in "iu" or len(y) != X.shape[0]):
            return None
        if not np.isfinite(X).all():
            return None
        if reset:
            self.n_features_in_ = X.shape[1]
        return X

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
        self._draws()
        _random_state(self.random_state)
        if y is None:
            raise ValueError("DPNaiveBayes requires y to be passed, but the target y is None")
        arr, y = self._validate(X, y, reset=True)
        if self.out_of_bounds not in OUT_OF_BOUNDS[:2]:
            raise ConfigError(f"out_of_bounds must be 'clip' or 'error', got "
                              f"{self.out_of_bounds!r}")
        with once_per_estimator(self, (PrivacyLeakWarning,)):  # once per estimator and clones
            classes, codes = self._labels(y, config.private)
            if len(codes) != arr.shape[0]:
                raise ConfigError(f"X has {arr.shape[0]} rows but y has {len(codes)} labels")
            schema = FeatureSchema.build(arr.shape[1], bounds=self.bounds,
                                         categories=self.categories, X=arr)
        numeric, categorical = schema.encode(arr, out_of_bounds=self.out_of_bounds)
        check_trim(config, np.bincount(codes, minlength=len(classes)), owner=True)
        self.privacy_unit_ = (f"per model: the training set, {self.neighbours.replace('-', '/')} "
                              "one row" if config.private else "none: a non-private model")
        # the utility check runs before the release: a fit that will not help says so first
        with once_per_estimator(self, (BelowMajorityWarning,)):
            self._check_utility(config, numeric, categorical, codes, schema, len(classes))
        rng = self._generator(config, "dp-nb", "fit")
        kwargs = dict(n_classes=len(classes), schema=schema, config=config, rng=rng)
        if config.private:
            if ledger is None:
                ledger = PrivacyLedger(owner="dp-nb", epsilon=config.epsilon, delta=config.delta)
            cost = budget_split(config, len(schema.numeric), len(schema.categorical)).total
            with ledger.reserve(cost, analyst=analyst,
                                label=f"dp-nb {config.method} "
                                f"({'laplace' if config.method == 'global' else config.noise})"):
                result = train(numeric, categorical, codes, **kwargs)
        else:
            result = train(numeric, categorical, codes, **kwargs)
        self._set_fitted(result, classes, schema, ledger if config.private else None)
        return self

    def _is_private(self) -> bool:
        return self.method != "non-private" and self.epsilon != float("inf")

    search_unit = "per model: the training set, add/remove or replace one row"
    """What one ε protects, as a hyper-parameter search states it."""

    def _search_fit_cost(self) -> tuple[float, float] | None:
        """``(ε, δ)`` a ``fit`` releases (a search's hook), ``None`` when not private."""
        return (self.epsilon, self.delta) if self._is_private() else None

    def _check_utility(self, config: NBConfig, numeric: np.ndarray, categorical: np.ndarray,
                       codes: np.ndarray, schema: FeatureSchema, n_classes: int) -> None:
        """Expected accuracy at this ε against always predicting the majority class.

        ``utility_draws`` more models are trained with fresh noise on four fifths of
        the rows and scored on the other fifth, the folds in turn (owner-side
        diagnostics: never released, not charged); their mean is
        ``expected_accuracy_`` (slightly pessimistic: fewer rows, more noise). Unless
        its one-sided 95% lower bound (``expected_accuracy_low_``, Student t over the
        draws) is above ``majority_accuracy_``, the fit warns with
        :class:`BelowMajorityWarning`.
        """
        self.majority_accuracy_ = float(np.bincount(codes, minlength=n_classes).max()
                                        / len(codes))
        self.expected_accuracy_ = None
        self.expected_accuracy_low_ = None
        draws = self._draws()
        if not config.private or draws < 0:
            return
        quick = draws == 0
        draws = max(draws, 1)
        rng = self._generator(config, "dp-nb", "utility-check")
        n = len(codes)
        folds = min(5, n)
        fold_of = (np.random.default_rng(0).permutation(n) % folds) if folds > 1 else None
        accs = []
        for i in range(draws):
            if fold_of is None:  # one row: score on it
                train_rows = test_rows = np.arange(n)
            else:
                test_rows = np.flatnonzero(fold_of == i % folds)
                train_rows = np.flatnonzero(fold_of != i % folds)
            model = train(numeric[train_rows], categorical[train_rows], codes[train_rows],
                          n_classes=n_classes, schema=schema, config=config, rng=rng).params
            pred = model.predict(numeric[test_rows], categorical[test_rows])
            accs.append(float(np.mean(pred == codes[test_rows])))
        self.expected_accuracy_ = float(np.mean(accs))
        # one-sided 95% lower bound of the mean (Student t over the draws)
        if draws > 1:
            from scipy.stats import t as student_t

            se = float(np.std(accs, ddof=1)) / np.sqrt(draws)
            low = self.expected_accuracy_ - float(student_t.ppf(0.95, draws - 1)) * se
        else:
            low = self.expected_accuracy_
        self.expected_accuracy_low_ = low
        below = int(np.sum(np.asarray(accs) < self.majority_accuracy_))
        how = ("one noise draw, 4/5 of the training rows scored on the rest" if quick else
               f"95% lower bound {low:.3f}; {below} of {draws} noise draws below, 5-fold "
               "on the training rows")
        if low < self.majority_accuracy_:
            warnings.warn(
                f"DPNaiveBayes at epsilon = {config.epsilon:g}: expected accuracy "
                f"{self.expected_accuracy_:.3f} ({how}) is not above the "
                f"{self.majority_accuracy_:.3f} of always predicting the majority class; "
                "raise epsilon, declare tighter bounds or use fewer features (shown once "
                "for this estimator and its clones; see expected_accuracy_)",
                BelowMajorityWarning, stacklevel=3)

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
        return self.schema_.encode(self._validate(X, reset=False), out_of_bounds="keep")

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


__all__ = ["BelowMajorityWarning", "DPNaiveBayes"]
