r"""Training private Naive Bayes models: Algorithm 1 and its baselines.

Budget (Algorithm 1, lines 1-3). With ``p`` numeric and ``q`` categorical
features, ``ε' = ε / (2p + q + 1)``: one release each for the class counts
and for every categorical feature's table of counts, two (mean and variance)
for every numeric feature. Under add/remove-one neighbouring a record lies in
exactly one class, so the per-class releases of one statistic are on disjoint
data and together cost ``ε'`` (parallel composition); the total is ``ε``
(sequential composition). For the (ε, δ) variants the ``2p`` smooth releases
get ``δ / (2p)`` each.

Methods (:data:`METHODS`):

``"smooth"`` (Zafarani & Clifton)
    class counts and category tables + Laplace(1/ε'); per class and numeric
    feature the trimmed mean and variance (Definition 4.1) with noise
    calibrated to their smooth sensitivity (:mod:`~protocols.dp_nb.sensitivity`,
    :mod:`~protocols.dp_nb.noise`). Deviation: Algorithm 1 (lines 17-19)
    perturbs the standard deviation σ with noise scaled to Theorem 7's smooth
    sensitivity of the variance; the variance is released here (see
    :func:`train`).
``"vaidya"`` (Vaidya, Shafiq, Basu & Hong 2013, global sensitivity)
    untrimmed mean + Laplace((U-L)/(n+1)/ε') and standard deviation +
    Laplace(√n (U-L)/(n+1)/ε') with ``n`` the true class size, as published
    (this treats class sizes as public).
``"bun-steinke"``
    trimmed means of ``x`` and of ``x**2`` with Cauchy noise at their smooth
    sensitivity, projected onto the bounds; variance ``E[x²] - E[x]²`` (the
    paper's §7 construction).
``"non-private"``
    exact counts, means and variances (ε ignored).

Neighbours (``neighbours``): ``"add-remove"`` (default; class sizes private)
or ``"replace"`` -- the paper's model, where a neighbour changes one record's
values within its class and class sizes are public (as Vaidya et al.'s
``(U-L)/(n+1)`` also assumes); see :mod:`~protocols.dp_nb.sensitivity`.

Trimming (``trim``): an integer ``m`` per side; a fraction of each class's
size (under add/remove the *noisy* count, public once the class counts are
released; under replace the true size, public in that model); or ``"auto"``:
``m = min(⌈ln(AUTO_RATIO) / (2β)⌉, ⌊AUTO_FRACTION · ñ_c⌋)``, enough for the
factor ``e^{-2mβ}`` to shrink the bounds' range ``AUTO_RATIO``-fold where the
class allows, and ``0`` at ε = ∞ (so ε = ∞ gives the non-private model).

Sensitivity (``sensitivity``): ``"exact"`` (default under replace: the exact
smooth sensitivities of the trimmed mean, Theorem 4, and of the trimmed variance,
:func:`~protocols.dp_nb.sensitivity.exact_variance`) or ``"bound"`` (the pair
bound; the only one under add/remove).

Global fallback (``global_fallback``, default on; not in the paper): for the
``"smooth"`` method, a class whose smooth release cannot beat global sensitivity
even in its best case -- a public rule on the class size (noisy under add/remove),
``m``, β, α and ε', see :func:`global_classes` -- is released with Laplace noise at
global sensitivity instead: under replace the mean and variance at ``(U-L)/n``
and ``(U-L)²(n-1)/n²``; under add/remove the sums of ``x - (L+U)/2`` and of its
square (sensitivities ``(U-L)/2`` and ``(U-L)²/4``) divided by the noisy class
count. With many features and small classes (breast_cancer: 30 features, ε' =
ε/61, β = ε'/10) the smooth sensitivity is close to the range itself and the
proven calibration's factor 2(γ+1) makes it far noisier than global sensitivity.

Post-processing: means are clipped to ``[L, U]`` and variances to
``[0, (U - L)²/4]``; every variance (of every model, the non-private one
included, so it is the same model without noise) is then raised to at least
``var_floor · (U - L)²`` -- the paper truncates negative values to zero, but a
zero variance makes the Gaussian degenerate and one such feature decides every
prediction -- and gets ``var_smoothing · max_j (U_j - L_j)²`` added
(``GaussianNB``'s rule, with public ranges in place of the data's variance).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_nb.schema import FeatureSchema
>>> schema = FeatureSchema.build(1, bounds=([0.0], [1.0]))
>>> X = np.array([[0.1], [0.2], [0.8], [0.9]]); y = np.array([0, 0, 1, 1])
>>> exact = train(X, np.empty((4, 0), int), y, n_classes=2, schema=schema,
...               config=NBConfig(method="non-private"), rng=np.random.default_rng(0))
>>> exact.params.theta.round(3).tolist(), exact.split.releases
([[0.15], [0.85]], 3)
>>> private = train(X, np.empty((4, 0), int), y, n_classes=2, schema=schema,
...                 config=NBConfig(epsilon=1.0), rng=np.random.default_rng(0))
>>> [r.label for r in private.releases], private.split.total.epsilon
(['class counts', 'mean 0', 'variance 0'], 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppknn.core.dp import Laplace, PrivacyCost
from ppknn.core.dp.validation import check_delta, check_epsilon, check_mode
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.dp_nb.model import DENSITIES, NBParams
from ppknn.protocols.dp_nb.noise import APPROXIMATE, NOISES, SmoothCalibration
from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import (
    NEIGHBOURS,
    resolve_method,
    smooth_from_statistics,
    trimmed_statistics,
)

METHODS = ("smooth", "global", "vaidya", "bun-steinke", "non-private")
AUTO_RATIO = 1000.0
"""``"auto"`` trimming shrinks the range term ``e^{-2mβ}`` by this factor...

The paper does not say how much it trims. These two constants were chosen on
synthetic two-class Gaussian data (5 features, bounds at ±5σ around the
classes' range, 60 to 6,000 rows per class), never on the evaluation datasets.
"""
AUTO_FRACTION = 0.1
"""...but trims at most this fraction of a class's size from each side."""


@dataclass(frozen=True, kw_only=True)
class NBConfig:
    """How to train (see the module docstring); validated on construction."""

    method: str = "smooth"
    epsilon: float = 1.0
    delta: float = 0.0
    noise: str = "polynomial"
    gamma: float = 4.0
    trim: Any = "auto"
    var_smoothing: float = 1e-9
    var_floor: float = 1e-3
    neighbours: str = "add-remove"
    density: str = "gaussian"
    mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE
    sensitivity: str | None = None
    global_fallback: bool = True
    budget: Any = "equal"
    noise_floor: float = 0.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)) \
                or math.isnan(eps) or eps <= 0:
            raise ConfigError(f"epsilon must be a number > 0 (math.inf: no noise), got {eps!r}")
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "mode", check_mode(self.mode))
        if self.noise not in NOISES:
            raise ConfigError(f"noise must be one of {list(NOISES)}, got {self.noise!r}")
        if (self.noise in APPROXIMATE) != (self.delta > 0) and self.method == "smooth":
            raise ConfigError(f"noise {self.noise!r} with delta={self.delta!r}: 'laplace' and "
                              "'gaussian' need delta > 0, the others delta = 0")
        if self.method != "smooth" and self.delta > 0:
            raise ConfigError(f"delta > 0 is only for method 'smooth', got method "
                              f"{self.method!r} with delta={self.delta!r}")
        trim = self.trim
        ok = (trim == "auto" if isinstance(trim, str) else
              (not isinstance(trim, bool) and isinstance(trim, (int, np.integer)) and trim >= 0)
              or (isinstance(trim, float) and 0.0 <= trim < 0.5))
        if not ok:
            raise ConfigError(f"trim must be 'auto', an integer >= 0 or a fraction in [0, 0.5), "
                              f"got {trim!r}")
        if not (isinstance(self.var_smoothing, (int, float)) and self.var_smoothing > 0):
            raise ConfigError(f"var_smoothing must be a number > 0, got {self.var_smoothing!r}")
        if not (isinstance(self.var_floor, (int, float)) and 0 <= self.var_floor < 0.25):
            raise ConfigError(f"var_floor must be a number in [0, 0.25), got {self.var_floor!r}")
        if self.neighbours not in NEIGHBOURS:
            raise ConfigError(f"neighbours must be one of {list(NEIGHBOURS)}, got "
                              f"{self.neighbours!r}")
        object.__setattr__(self, "sensitivity",
                           resolve_method(self.sensitivity, self.neighbours))
        object.__setattr__(self, "budget", check_budget(self.budget))
        nf = self.noise_floor
        if isinstance(nf, bool) or not isinstance(nf, (int, float)) or not math.isfinite(nf) \
                or nf < 0:
            raise ConfigError(f"noise_floor must be a finite number >= 0, got {nf!r}")
        if not isinstance(self.global_fallback, bool):
            raise ConfigError(f"global_fallback must be true or false, got "
                              f"{self.global_fallback!r}")
        if self.density not in DENSITIES:
            raise ConfigError(f"density must be one of {list(DENSITIES)}, got {self.density!r}")
        if self.private and self.method in ("smooth", "bun-steinke"):
            self.calibration(1.0, self.delta)  # validates gamma, noise x mode

    @property
    def randomness(self) -> RandomnessMode:
        """The randomness mode as an enum."""
        return RandomnessMode(self.mode)

    @property
    def private(self) -> bool:
        """Whether noise is added (a DP method and a finite ε)."""
        return self.method != "non-private" and math.isfinite(self.epsilon)

    def calibration(self, epsilon: float, delta: float) -> SmoothCalibration:
        """The smooth-sensitivity noise of one release (Bun-Steinke: Cauchy)."""
        noise = self.noise
        if self.method == "bun-steinke":
            noise = "paper" if noise == "paper" else "cauchy"
        return SmoothCalibration(noise=noise, epsilon=epsilon,
                                 delta=delta if noise in APPROXIMATE else 0.0,
                                 gamma=self.gamma, mode=self.randomness)


BUDGETS = ("equal",)
"""Named budget splits; otherwise a weight triple ``(counts, means, variances)``."""


def check_budget(budget: Any) -> Any:
    """``"equal"`` or a triple of positive finite weights (as floats); else :class:`ConfigError`."""
    if isinstance(budget, str):
        if budget in BUDGETS:
            return budget
    elif isinstance(budget, (tuple, list)) and len(budget) == 3 and all(
            not isinstance(w, bool) and isinstance(w, (int, float, np.integer, np.floating))
            and math.isfinite(w) and w > 0 for w in budget):
        return tuple(float(w) for w in budget)
    raise ConfigError(f"budget must be 'equal' or three positive weights (counts, means, "
                      f"variances), got {budget!r}")


@dataclass(frozen=True)
class BudgetSplit:
    """How ``(ε, δ)`` is split among the releases.

    ``per_release`` is the ε of each numeric feature's mean release (under the
    paper's ``"equal"`` split, of every release); ``counts``, ``mean``,
    ``variance`` and ``categorical`` are the ε of the class-count release, of each
    mean, of each variance and of each categorical table.
    """

    per_release: float
    smooth_delta: float
    releases: int
    total: PrivacyCost
    counts: float = math.inf
    mean: float = math.inf
    variance: float = math.inf
    categorical: float = math.inf


def budget_split(config: NBConfig, n_numeric: int, n_categorical: int) -> BudgetSplit:
    """The ε of each release and ``δ' = δ / (2p)`` (zero cost when not private).

    ``budget="equal"`` (Algorithm 1): ``ε' = ε / (2p + q + 1)`` for every release.
    Weights ``(c, m, v)``: the class counts get ``ε·c/(c+m+v)``; the rest is split
    equally over the ``p + q`` features, a numeric feature's share ``m : v``
    between its mean and its variance, a categorical feature's share to its table.
    """
    releases = 2 * n_numeric + n_categorical + 1
    if not config.private:
        return BudgetSplit(math.inf, 0.0, releases, PrivacyCost(0.0, 0.0))
    smooth_delta = config.delta / (2 * n_numeric) if n_numeric and config.delta else 0.0
    total = PrivacyCost(config.epsilon, config.delta if n_numeric else 0.0)
    eps = config.epsilon
    features = n_numeric + n_categorical
    if config.budget == "equal" or not features:
        each = eps / releases
        return BudgetSplit(each, smooth_delta, releases, total, each, each, each, each)
    c, m, v = config.budget
    share = eps * (m + v) / (c + m + v) / features
    mean, variance = share * m / (m + v), share * v / (m + v)
    counts = max(eps - share * features, 0.0)
    return BudgetSplit(mean, smooth_delta, releases, total, counts, mean, variance, share)


@dataclass(frozen=True)
class ReleaseRecord:
    """One release of Algorithm 1: what, how, and what it cost."""

    label: str
    mechanism: str
    epsilon: float
    delta: float
    composition: str


@dataclass(frozen=True)
class TrainResult:
    """A trained model and its accounting.

    ``trim`` and ``sensitivity`` (``(C, p, 2)``: smooth sensitivity of mean and
    variance) are owner-side diagnostics computed from the data: they are not
    part of the release.
    """

    params: NBParams
    releases: tuple[ReleaseRecord, ...]
    split: BudgetSplit
    trim: np.ndarray = field(repr=False)
    sensitivity: np.ndarray = field(repr=False)


def check_trim(config: NBConfig, counts: np.ndarray, *, owner: bool = False) -> None:
    """Raise :class:`ConfigError` when an integer ``trim`` leaves a class too small.

    A fixed ``m`` needs ``2m + 2`` rows per class (a window of two values) to be
    useful. The check reads the class sizes, so it runs only where that reveals
    nothing: under replace neighbouring (class sizes are public in that model),
    or for the data owner itself (``owner=True``: the estimator, whose user
    holds the rows). An owner answering analysts under add/remove does not
    check, since a refusal would tell the analyst, for free, whether every class
    has ``2m + 2`` rows; the release stays private at any window (the smooth
    sensitivity covers windows of any size, up to the global ``(U - L) / 2``).
    ``"auto"`` and fractions adapt to the noisy counts and never fail.
    """
    trim = config.trim
    if not (config.method in ("smooth", "bun-steinke") and not isinstance(trim, (str, float))):
        return
    if config.neighbours != "replace" and not owner:
        return
    short = np.flatnonzero(np.asarray(counts) < 2 * trim + 2)
    if short.size:
        c = int(short[0])
        raise ConfigError(f"class index {c} has {int(counts[c])} training rows but trim={trim} "
                          f"needs at least {2 * trim + 2} (2*trim + 2); lower trim or use "
                          "trim='auto' or a fraction")


def _trim_for(config: NBConfig, beta: float, noisy_counts: np.ndarray,
              true_counts: np.ndarray) -> np.ndarray:
    counts = np.maximum(noisy_counts, 0.0)
    trim = config.trim
    if isinstance(trim, str):  # auto
        if not math.isfinite(beta):
            return np.zeros(len(counts), dtype=np.int64)
        by_beta = math.ceil(math.log(AUTO_RATIO) / (2.0 * beta))
        return np.minimum(by_beta, np.floor(AUTO_FRACTION * counts)).astype(np.int64)
    if isinstance(trim, float):
        return np.floor(trim * counts).astype(np.int64)
    check_trim(config, true_counts)
    return np.full(len(counts), int(trim), dtype=np.int64)


def train(numeric: np.ndarray, categorical: np.ndarray, y: np.ndarray, *, n_classes: int,
          schema: FeatureSchema, config: NBConfig, rng: Any) -> TrainResult:
    """Train one model on encoded data (``numeric`` inside the schema's bounds).

    Parameters
    ----------
    numeric, categorical:
        ``(n, p)`` floats and ``(n, q)`` category indices (see
        :meth:`~protocols.dp_nb.schema.FeatureSchema.encode`).
    y:
        ``(n,)`` class indices in ``0..n_classes-1``.
    rng:
        The noise's randomness (a numpy Generator in reproducible mode).

    The global method under add/remove in reproducible mode (the estimator's
    default) draws every statistic's noise in one call (:func:`_train_global`);
    the draws, and so the model, are those of the release-by-release route.
    """
    y = np.asarray(y, dtype=np.int64)
    p, q = numeric.shape[1], categorical.shape[1]
    split = budget_split(config, p, q)
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    if (config.method == "global" and config.private and config.neighbours == "add-remove"
            and config.randomness is RandomnessMode.REPRODUCIBLE and config.noise != "paper"
            and isinstance(rng, np.random.Generator)):
        return _train_global(numeric, categorical, y, counts, schema, config, split, rng)
    records: list[ReleaseRecord] = []
    class_count = _laplace_counts(counts, "class counts", split.counts, config, rng, records)
    tables = tuple(_laplace_counts(_table(y, categorical[:, k], n_classes,
                                          schema.n_categories[k]),
                                   f"categorical {col}", split.categorical, config, rng, records)
                   for k, col in enumerate(schema.categorical))
    plan = _plan(config, split, class_count, counts)
    order = np.argsort(y, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts.astype(np.int64))])
    by_class = numeric[order]
    theta = np.empty((n_classes, p))
    var = np.empty((n_classes, p))
    sens = np.zeros((n_classes, p, 2))
    for j in range(p):
        lo, hi = float(schema.lower[j]), float(schema.upper[j])
        stats_a = np.empty((n_classes, 2))  # the two released statistics per class
        s_a = np.ones((n_classes, 2))
        for c in range(n_classes):
            x = by_class[starts[c]:starts[c + 1], j]
            stats_a[c], s_a[c] = _class_statistics(x, c, lo, hi, config, plan)
        sens[:, j, :] = s_a
        noisy = stats_a.copy()
        if config.private:
            records += _add_noise(noisy, stats_a, s_a, schema.numeric[j], config, plan, rng)
        theta[:, j], var[:, j] = _finish_feature(noisy, s_a, lo, hi, class_count, config, plan)
    if p:
        var = var + config.var_smoothing * float(np.max((schema.upper - schema.lower) ** 2))
    params = NBParams(class_count, theta, var, tables, schema.lower.copy(),
                      schema.upper.copy(), config.density)
    return TrainResult(params, tuple(records), split, plan.trim, sens)


def _laplace_counts(values: np.ndarray, label: str, eps: float, config: NBConfig, rng: Any,
                    records: list[ReleaseRecord]) -> np.ndarray:
    """Counts with Laplace noise of sensitivity 1 (the paper's Cauchy noise for the classes)."""
    if not config.private:
        return values
    if config.noise == "paper" and label == "class counts":  # Algorithm 1 line 23
        cal = SmoothCalibration(noise="paper", epsilon=eps, mode=config.randomness)
        out = np.asarray(cal.randomise(values, 1.0, rng).value, dtype=np.float64)
        records.append(ReleaseRecord(label, "cauchy-paper", eps, 0.0, "histogram"))
        return out
    rel = Laplace(epsilon=eps, sensitivity=1.0, mode=config.randomness).randomise(values, rng)
    records.append(ReleaseRecord(label, "laplace", eps, 0.0, "histogram"))
    return np.asarray(rel.value, dtype=np.float64)


def _table(y: np.ndarray, column: np.ndarray, n_classes: int, n_categories: int) -> np.ndarray:
    """``(C, K)`` counts of each category in each class."""
    table = np.zeros((n_classes, n_categories))
    np.add.at(table, (y, column), 1.0)
    return table


@dataclass
class _Plan:
    """What the numeric releases share: noise calibrations, trimming, fallback classes."""

    cals: tuple[Any, Any]
    beta: float
    beta_var: float
    trim: np.ndarray
    fallback: np.ndarray
    empty: np.ndarray
    eps_t: tuple[float, float]


def _plan(config: NBConfig, split: BudgetSplit, class_count: np.ndarray, counts: np.ndarray
          ) -> _Plan:
    eps1 = split.per_release  # the means' (under "equal": every release's)
    n_classes = len(counts)
    cal = config.calibration(eps1, split.smooth_delta) if config.private else None
    cal_var = (cal if cal is None or split.variance == eps1
               else config.calibration(split.variance, split.smooth_delta))
    beta = cal.beta if cal is not None else math.inf
    if config.method in ("smooth", "bun-steinke"):
        public_sizes = counts if config.neighbours == "replace" else class_count
        trim = _trim_for(config, beta, public_sizes, counts)
    else:
        trim = np.zeros(n_classes, dtype=np.int64)
    # classes where the smooth release cannot beat global sensitivity (a public rule)
    fallback = (global_classes(config, cal, eps1, class_count, counts, trim)
                if config.private and config.method in ("smooth", "global")
                else np.zeros(n_classes, dtype=bool))
    return _Plan((cal, cal_var), beta, cal_var.beta if cal_var is not None else math.inf,
                 trim, fallback, np.zeros(n_classes, dtype=bool),  # empty: replace, no window
                 (split.mean, split.variance))


def _smooth(st: Any, c: int, config: NBConfig, plan: _Plan) -> tuple[float, float]:
    """Smooth sensitivities ``(of the mean, of the second statistic)`` at their β."""
    if config.neighbours == "replace" and st.window <= 0:
        plan.empty[c] = True
        ss = smooth_from_statistics(st, beta=plan.beta)  # any positive scale; not used
        return ss.mean, ss.variance
    ss = smooth_from_statistics(st, beta=plan.beta, neighbours=config.neighbours,
                                method=config.sensitivity)
    if plan.beta_var == plan.beta:
        return ss.mean, ss.variance
    sv = smooth_from_statistics(st, beta=plan.beta_var, neighbours=config.neighbours,
                                method=config.sensitivity)
    return ss.mean, sv.variance


def _class_statistics(x: np.ndarray, c: int, lo: float, hi: float, config: NBConfig,
                      plan: _Plan) -> tuple[tuple[float, float], tuple[float, float]]:
    """One class's two released statistics of a feature and their sensitivities."""
    trim, private, replace = int(plan.trim[c]), config.private, config.neighbours == "replace"
    if config.method == "bun-steinke":
        st1 = trimmed_statistics(x, trim=trim, lower=lo, upper=hi)
        lo2, hi2 = _square_bounds(lo, hi)
        st2 = trimmed_statistics(x * x, trim=trim, lower=lo2, upper=hi2)
        s = ((_smooth(st1, c, config, plan)[0], _smooth(st2, c, config, plan)[0]) if private
             else (1.0, 1.0))
        return (st1.mean, st2.mean), s
    if plan.fallback[c]:  # global sensitivity (module docstring, "Fallback")
        mid = (lo + hi) / 2.0
        if not replace:  # sums centred on the middle: |x - mid| <= (U - L) / 2
            return ((float(np.sum(x - mid)), float(np.sum((x - mid) ** 2))),
                    ((hi - lo) / 2.0, (hi - lo) ** 2 / 4.0))
        n_c = max(x.size, 1)
        if x.size == 0:  # no row: both statistics are constants
            plan.empty[c] = True
        # one row: its mean is private (Laplace at (U - L) / 1); its variance is
        # the constant 0, at sensitivity 0, released as is
        return (((float(x.mean()), float(x.var())) if x.size else (mid, 0.0)),
                ((hi - lo) / n_c, (hi - lo) ** 2 * (n_c - 1) / n_c**2))
    if config.method in ("smooth", "bun-steinke"):
        st = trimmed_statistics(x, trim=trim, lower=lo, upper=hi)
        # Deviation from the paper: Algorithm 1 (lines 17-19) adds noise to the
        # standard deviation σ, scaled to the smooth sensitivity of Theorem 7 --
        # which is the *variance's*. We release the variance, the statistic that
        # sensitivity bounds; σ moves by |Δvar| / (σ + σ'), more than the variance
        # whenever σ + σ' < 1, so that noise would not cover σ. The model's σ is
        # the square root of the released (clipped, floored) variance.
        return (st.mean, st.variance), (_smooth(st, c, config, plan) if private else (1.0, 1.0))
    # vaidya / non-private: untrimmed; Vaidya releases the standard deviation
    n_c = x.size
    mu = float(x.mean()) if n_c else (lo + hi) / 2.0
    sd = float(x.std()) if n_c else 0.0
    return ((mu, (sd if config.method == "vaidya" else sd * sd)),
            ((hi - lo) / (n_c + 1), math.sqrt(max(n_c, 1)) * (hi - lo) / (n_c + 1)))


_NAMES = {"smooth": ("mean", "variance"), "global": ("mean", "variance"),
          "bun-steinke": ("mean", "second moment"), "vaidya": ("mean", "standard deviation")}


def _laplace(eps: float, sensitivity: float, values: Any, config: NBConfig, rng: Any) -> Any:
    return Laplace(epsilon=eps, sensitivity=float(sensitivity),
                   mode=config.randomness).randomise(values, rng).value


def _add_noise(noisy: np.ndarray, stats_a: np.ndarray, s_a: np.ndarray, col: Any,
               config: NBConfig, plan: _Plan, rng: Any) -> list[ReleaseRecord]:
    """Noise on one feature's two statistics (in place, in ``noisy``); their records."""
    records = []
    fallback, eps_t = plan.fallback, plan.eps_t
    for t in range(2):
        if config.method == "vaidya":
            noisy[:, t] = [_laplace(eps_t[t], s, v, config, rng)
                           for v, s in zip(stats_a[:, t], s_a[:, t])]
            mech, delta_r = "laplace", 0.0
        else:
            cal_t = plan.cals[t]
            assert cal_t is not None
            smooth_c = ~fallback
            if smooth_c.any():
                noisy[smooth_c, t] = cal_t.randomise(stats_a[smooth_c, t],
                                                     s_a[smooth_c, t], rng).value
            glob = np.flatnonzero(fallback & (s_a[:, t] > 0))
            if (config.method == "global" and glob.size
                    and np.all(s_a[glob, t] == s_a[glob[0], t])):  # one draw
                noisy[glob, t] = _laplace(eps_t[t], s_a[glob[0], t], stats_a[glob, t], config,
                                          rng)
                glob = glob[:0]
            for cg in glob.tolist():
                noisy[cg, t] = _laplace(eps_t[t], s_a[cg, t], stats_a[cg, t], config, rng)
            noisy[plan.empty, t] = stats_a[plan.empty, t]  # a constant: released as is
            mech, delta_r = f"smooth-{cal_t.noise}", cal_t.delta
            if config.method == "global":
                mech, delta_r = "laplace-global", 0.0
            elif fallback.any():
                mech = (f"{mech} / laplace-global (classes "
                        f"{np.flatnonzero(fallback).tolist()})")
        records.append(ReleaseRecord(f"{_NAMES[config.method][t]} {col}", mech, eps_t[t],
                                     delta_r, "parallel over classes"))
    return records


def _finish_feature(noisy: np.ndarray, s_a: np.ndarray, lo: float, hi: float,
                    class_count: np.ndarray, config: NBConfig, plan: _Plan
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Post-processing of one feature's noisy statistics: its means and variances."""
    fallback, replace = plan.fallback, config.neighbours == "replace"
    vcap = (hi - lo) ** 2 / 4.0
    if fallback.any() and not replace:  # noisy sums over the noisy class sizes
        size = np.maximum(class_count[fallback], 1.0)
        mean_f = (lo + hi) / 2.0 + noisy[fallback, 0] / size
        noisy[fallback, 0] = mean_f
        noisy[fallback, 1] = noisy[fallback, 1] / size - (np.clip(mean_f, lo, hi)
                                                         - (lo + hi) / 2.0) ** 2
    theta = np.clip(noisy[:, 0], lo, hi)
    if config.method == "vaidya":
        var = np.clip(noisy[:, 1], 0.0, (hi - lo) / 2.0) ** 2
    elif config.method == "bun-steinke":
        lo2, hi2 = _square_bounds(lo, hi)
        var = np.clip(np.clip(noisy[:, 1], lo2, hi2) - theta ** 2, 0.0, vcap)
    else:
        var = np.clip(noisy[:, 1], 0.0, vcap)
    # the floor applies to every model, private or not, so the non-private line is
    # the same model without noise (the paper clips at zero only: a deviation)
    var = np.maximum(var, config.var_floor * (hi - lo) ** 2)
    if config.noise_floor and config.private and fallback.any():
        # the variance release's own noise scale (public: sensitivity, ε', noisy size)
        scale = s_a[fallback, 1] / plan.eps_t[1]
        if not replace:
            scale = scale / np.maximum(class_count[fallback], 1.0)
        var[fallback] = np.maximum(var[fallback], np.minimum(config.noise_floor * scale, vcap))
    return theta, var


def _train_global(numeric: np.ndarray, categorical: np.ndarray, y: np.ndarray,
                  counts: np.ndarray, schema: FeatureSchema, config: NBConfig,
                  split: BudgetSplit, rng: np.random.Generator) -> TrainResult:
    """The global method under add/remove, vectorised: one Laplace draw for every release.

    The draw order is the release order of :func:`train`'s general route (class
    counts, each category table, then per feature its means and its variances,
    classes in order), so a seeded generator gives the same model.
    """
    n_classes, p = len(counts), numeric.shape[1]
    lower, upper = schema.lower, schema.upper
    eps_c, eps_k = split.counts, split.categorical
    eps_m, eps_v = split.mean, split.variance
    config.calibration(split.per_release, split.smooth_delta)  # refuses noise and gamma
    for e in (eps_c, eps_m, eps_v) + ((eps_k,) if categorical.shape[1] else ()):
        check_epsilon(e)  # as the Laplace mechanism of each release would
    tables = [_table(y, categorical[:, k], n_classes, schema.n_categories[k])
              for k in range(categorical.shape[1])]
    span = upper - lower
    mid = (lower + upper) / 2.0
    # per class the sums of x - mid and (x - mid)^2, each column summed on its own
    centred = np.asfortranarray(numeric[np.argsort(y, kind="stable")] - mid)
    starts = np.concatenate([[0], np.cumsum(counts.astype(np.int64))])
    sums = np.zeros((n_classes, 2, p))
    for c in np.flatnonzero(counts).tolist():
        block = centred[starts[c]:starts[c + 1]]
        sums[c, 0] = np.sum(block, axis=0)
        sums[c, 1] = np.sum(block ** 2, axis=0)
    sens = np.empty((2, p))
    sens[0], sens[1] = span / 2.0, span ** 2 / 4.0
    eps_t = np.array([eps_m, eps_v])
    scales = np.concatenate([np.full(n_classes, 1.0 / eps_c)]
                            + [np.full(t.size, 1.0 / eps_k) for t in tables]
                            + [np.repeat((sens / eps_t[:, None]).T.ravel(), n_classes)])
    noise = rng.laplace(0.0, scales)
    class_count = counts + noise[:n_classes]
    at = n_classes
    for k, t in enumerate(tables):
        tables[k] = t + noise[at:at + t.size].reshape(t.shape)
        at += t.size
    noisy = sums + noise[at:].reshape(p, 2, n_classes).transpose(2, 1, 0)
    size = np.maximum(class_count, 1.0)[:, None]
    mean = mid + noisy[:, 0] / size
    second = noisy[:, 1] / size - (np.clip(mean, lower, upper) - mid) ** 2
    theta = np.clip(mean, lower, upper)
    vcap = span ** 2 / 4.0
    var = np.maximum(np.clip(second, 0.0, vcap), config.var_floor * span ** 2)
    if config.noise_floor:
        var = np.maximum(var, np.minimum(config.noise_floor * (sens[1] / eps_v) / size, vcap))
    if p:
        var = var + config.var_smoothing * float(np.max(span ** 2))
    records = [ReleaseRecord("class counts", "laplace", eps_c, 0.0, "histogram")]
    records += [ReleaseRecord(f"categorical {col}", "laplace", eps_k, 0.0, "histogram")
                for col in schema.categorical]
    for col in schema.numeric:
        records += [ReleaseRecord(f"{name} {col}", "laplace-global", e, 0.0,
                                  "parallel over classes")
                    for name, e in (("mean", eps_m), ("variance", eps_v))]
    params = NBParams(class_count, theta, var, tuple(tables), lower.copy(), upper.copy(),
                      config.density)
    diag = np.broadcast_to(sens.T, (n_classes, p, 2)).copy()
    return TrainResult(params, tuple(records), split, np.zeros(n_classes, dtype=np.int64),
                       diag)


def global_classes(config: NBConfig, cal: SmoothCalibration | None, eps1: float,
                   noisy_counts: np.ndarray, counts: np.ndarray, trim: np.ndarray
                   ) -> np.ndarray:
    """Classes whose means and variances are released at global sensitivity instead.

    A public rule (sizes public under replace, noisy under add/remove; ``m``, β, α,
    ε' public): the smooth noise scale is at least ``e^{-(2m+1)β} (U-L) / (w α)``
    under replace (``G_k`` reaches ``U - L`` at ``k = 2m + 1``) and
    ``e^{-(w-1)β} (U-L) / α`` under add/remove (the window shrinks to one value),
    against ``(U-L) / (n ε')`` for the global release; where the smooth scale cannot
    be the smaller, the class uses the global one. ``global_fallback = False`` (and
    every method but ``"smooth"``) never falls back.
    """
    out = np.zeros(len(counts), dtype=bool)
    if config.method == "global" and config.private:
        return ~out
    if not config.global_fallback or cal is None:
        return out
    replace = config.neighbours == "replace"
    sizes = counts if replace else np.maximum(noisy_counts, 1.0)
    w = sizes - 2 * trim
    with np.errstate(over="ignore"):
        if replace:
            best = np.exp(-(2 * trim + 1) * cal.beta) / (np.maximum(w, 1) * cal.alpha)
        else:
            best = np.exp(-np.maximum(w - 1, 0) * cal.beta) / cal.alpha
    return best >= 1.0 / (np.maximum(sizes, 1.0) * eps1)


def _square_bounds(lo: float, hi: float) -> tuple[float, float]:
    """Bounds of ``x**2`` for ``x`` in ``[lo, hi]``."""
    top = max(lo * lo, hi * hi)
    bottom = 0.0 if lo <= 0.0 <= hi else min(lo * lo, hi * hi)
    return bottom, (top if top > bottom else bottom + 1.0)


__all__ = ["AUTO_FRACTION", "AUTO_RATIO", "METHODS", "BudgetSplit", "NBConfig", "ReleaseRecord",
           "TrainResult", "budget_split", "check_trim", "global_classes", "train"]
