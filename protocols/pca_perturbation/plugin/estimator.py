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

Randomness: ``random_state=None`` (the default) draws fresh noise on every
call; an int draws the same noise on every call -- a simulation, not a
release: anyone who knows the seed regenerates the noise and subtracts it,
recovering the clean scores exactly; a numpy ``RandomState`` / ``Generator``
draws each call's seed from it. ``mode="secure"`` draws the noise from OS
entropy (a CSPRNG) whatever ``random_state`` says.

Accounting: every ``transform`` is a new release. The paper's worst-case
measure of one row's release is its joint amplification ``e^(s/b)`` (eq. 8
per column), so a row released by ``c`` calls has ``e^(c s/b)``;
``privacy_.epsilon`` is that ``c s / b`` for the calls since ``fit`` (``inf``
with ``b=None``), ``privacy_last_`` the last call's, and ``budget`` caps it
(checked before anything is released). No ε-DP is claimed: the ranges come
from the training rows. No δ is counted (``privacy_.delta`` stays 0), so a
``budget_delta`` (the δ cap the DP estimators share) is always met.

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
>>> _ = noisy.transform(X[:5]); noisy.privacy_.epsilon     # 2 calls * 3 components / 0.2
30.0
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ppknn.core.conventions import EstimatorConventions, once_per_estimator
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.core.protocol import PrivacySpent
from ppknn.protocols.pca_perturbation.driver import GUARANTEE_LAPLACE
from ppknn.protocols.pca_perturbation.sanitize import (
    amplification,
    distortion_statistics,
    fit_pca,
    laplace_mechanisms,
    normalise,
    perturb,
)
from ppknn.simulations.estimators import params as P
from ppknn.simulations.estimators.base import BATCH_DEPENDENT
from ppknn.simulations.estimators.simulate import resolve_bounds
from ppknn.simulations.estimators.spending import Spending


class PCALaplaceSanitizer(EstimatorConventions, TransformerMixin, BaseEstimator):
    """PCA + Laplace perturbation of normalised rows (Mukherjee, Banerjee, Chen & Gangopadhyay).

    Parameters
    ----------
    n_components:
        s, the principal components kept (an int in [1, n_features]; ``None``: all).
    b:
        Laplace scale factor (a finite number > 0): component ``i`` gets noise of
        scale ``b * range_i``; ``None``: no noise (the plain projection,
        scikit-learn's ``PCA`` after min-max scaling by the bounds).
    n_sd:
        Standard deviations in the modified kNN's search radius (``radius2_``), a
        finite number >= 0.
    bounds:
        Public per-feature bounds ``(lower, upper)`` used to normalise to ``[0, 1]``,
        or ``"data"`` (derived from the training rows; warns: they leak the extremes).
    budget:
        The most ``privacy_.epsilon`` (``calls * s / b``, module docstring) all
        ``transform`` calls since ``fit`` may reach together (``None``: no cap); a
        call that would exceed it raises ``BudgetRefused`` (a ``ConfigError``) and
        releases nothing.
    budget_delta:
        The most ``privacy_.delta`` all ``transform`` calls since ``fit`` may reach
        together (``None``: no cap; else a finite number >= 0); every call counts
        δ = 0, so every value is met.
    random_state:
        ``None`` (default: fresh OS entropy every call), an int (the same noise every
        call: reproducible by anyone who knows the seed -- a simulation, not a
        release) or a numpy ``RandomState`` / ``Generator`` (each call's seed drawn
        from it).
    mode:
        ``"reproducible"`` or ``"secure"`` (OS entropy and floating-point-safe noise).

    Attributes
    ----------
    n_features_in_:
        As in scikit-learn.
    lower_, span_:
        The public bounds as used: each feature maps to ``(x - lower_) / span_``.
    mean_, components_, explained_variance_:
        The PCA of the normalised training rows (components signed so that each
        one's largest loading is positive, as scikit-learn does).
    ranges_, scales_, amplification_:
        Per kept component: the training scores' range, the noise scale
        ``b * range_i``, and ``exp(range_i / scale_i) = e^(1/b)``.
    distortion_mean_, distortion_variance_, radius2_:
        E(D), Var(D) and the squared search radius ``E + n_sd * sqrt(Var)``.
    privacy_:
        What every ``transform`` since ``fit`` released together
        (:class:`~ppknn.core.protocol.PrivacySpent`; ``epsilon``: ``calls * s / b``,
        the log of the worst-case amplification of a row released by every call);
        ``fit`` resets it.
    privacy_last_:
        The last ``transform``'s (``None`` before the first).
    privacy_unit_:
        What ``privacy_.epsilon`` measures: per transformed row, the log of its joint
        amplification summed over the calls that released it (not ε-DP).
    """

    privacy_unit: str = ("per transform call, per transformed row: the log of its joint "
                         "amplification s/b (not ε-DP)")
    """What one ε of this estimator measures (``privacy_unit_`` when fitted)."""
    charges_queries = True
    """A ``transform`` charges the rows it transforms (a hyper-parameter search's hook)."""

    expected_failed_checks: dict[str, str] = {
        "check_dict_unchanged": "transform is a release: it adds its cost to privacy_ and "
                                "sets privacy_last_ by design",
        "check_methods_subset_invariance": "the noise of a row depends on its position in "
                                           "the batch; " + BATCH_DEPENDENT,
        "check_methods_sample_order_invariance": "the noise of a row depends on its "
                                                 "position in the batch; " + BATCH_DEPENDENT,
    }
    """scikit-learn checks this estimator fails on purpose, with the reason."""

    def __init__(self, n_components: int | None = None, *, b: float | None = 0.2, n_sd: float = 2.0,
                 bounds: Any = "data", budget: float | None = None,
                 budget_delta: float | None = None, random_state: Any = None,
                 mode: str = "reproducible") -> None:
        self.n_components = n_components
        self.b = b
        self.n_sd = n_sd
        self.bounds = bounds
        self.budget = budget
        self.budget_delta = budget_delta
        self.random_state = random_state
        self.mode = mode

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # an int random_state draws the same noise every call (deterministic, but a row's
        # noise depends on its position in the batch: expected_failed_checks)
        tags.non_deterministic = self.b is not None and (
            not P.seeded(self.random_state) or self.mode == "secure")
        return tags

    def _search_call_cost(self, n_fit: int, n_query: int, *, first: bool = True,
                          n_features: int = 1) -> tuple[float, float]:
        """``(ε, δ)`` of one ``transform`` (a search's hook): ``s / b`` per row, ∞ without noise.

        ``n_components=None`` takes every feature, which only the first step of a pipeline
        knows (``n_features``).
        """
        p = self._validated(None)
        if p["b"] is None:
            return float("inf"), 0.0
        s = self.n_components
        if s is None:
            if not first:
                raise ConfigError("search_cost: PCALaplaceSanitizer(n_components=None) "
                                  "after other pipeline steps: its cost s / b needs s; "
                                  "allowed: an int n_components")
            s = n_features
        return s / p["b"], 0.0

    def _validated(self, n_features: int | None) -> dict[str, Any]:
        who = type(self).__name__
        out = {"mode": P.choice(who, "mode", self.mode, ("reproducible", "secure")),
               "random_state": P.random_state(who, self.random_state),
               "b": P.optional_real(who, "b", self.b,
                                    allowed="None (no noise) or a finite number > 0"),
               "n_sd": P.real(who, "n_sd", self.n_sd, low=0.0, low_open=False),
               **P.budgets(who, self.budget, self.budget_delta)}
        if n_features is None:  # before the data is known
            if self.n_components is not None:
                P.integer(who, "n_components", self.n_components, low=1,
                          allowed="None or an int >= 1 (at most the number of features)")
            return out
        s = n_features if self.n_components is None else self.n_components
        out["n_components"] = P.integer(who, "n_components", s, low=1, high=n_features,
                                        allowed=f"None or an int in [1, {n_features}] (the "
                                                "number of features)")
        return out

    def fit(self, X: Any, y: Any = None) -> PCALaplaceSanitizer:
        """Normalise by the bounds, run PCA and fix the noise scales (no release yet).

        Every parameter is checked here (a ``ConfigError`` names it); the privacy
        account starts at zero.
        """
        who = type(self).__name__
        self._validated(None)  # the parameters that do not need the data
        X = validate_data(self, X, dtype=np.float64)
        if X.shape[0] < 2:
            raise ValueError(f"PCA of the training rows needs n_samples >= 2; got "
                             f"n_samples = {X.shape[0]}")
        p = self._validated(X.shape[1])
        s, b = p["n_components"], p["b"]
        with once_per_estimator(self, (PrivacyLeakWarning,)):  # once per estimator and clones
            bounds = resolve_bounds(self.bounds, X, who=who)
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
        if b is None:
            self._mechanisms = None
            self.scales_ = np.zeros(s)
        else:
            self._mechanisms = laplace_mechanisms(self.ranges_, b, p["mode"])
            self.scales_ = b * self.ranges_
        with np.errstate(divide="ignore"):
            self.amplification_ = amplification(self.ranges_, self.scales_)
        stats = distortion_statistics(kept_variances=self.explained_variance_,
                                      scales=self.scales_,
                                      dropped_variances=fit.variances[s:], n_sd=p["n_sd"])
        self.distortion_mean_, self.distortion_variance_ = stats.mean, stats.variance
        self.radius2_ = stats.radius2
        cost = self._call_epsilon(p)
        if p["budget"] is not None and b is None:
            raise ConfigError(f"{who}: budget = {self.budget!r} with b = None: without noise "
                              "every transform releases the exact scores (unbounded "
                              "amplification); allowed: budget = None, or a finite b > 0")
        if p["budget"] is not None and cost > p["budget"]:
            raise ConfigError(f"{who}: budget = {self.budget!r} is below the cost of one "
                              f"transform (s / b = {cost:.6g}), so every call would be "
                              f"refused; allowed: >= {cost:.6g} or None")
        self._params = p
        self._spending = Spending(who, guarantee=GUARANTEE_LAPLACE + "; epsilon = s/b per "
                                  "row per call, the log of the joint amplification",
                                  budget=p["budget"], budget_delta=p["budget_delta"])
        self.privacy_, self.privacy_last_ = self._spending.total(), None
        self.privacy_unit_ = self.privacy_unit
        return self

    def _is_private(self) -> bool:
        return self.b is not None  # b = None: the clean projection, no budget can be charged

    @staticmethod
    def _call_epsilon(p: dict[str, Any]) -> float:
        """``s / b``: the log of one row's joint amplification in one release (inf: no noise)."""
        return float("inf") if p["b"] is None else p["n_components"] / p["b"]

    def project(self, X: Any) -> np.ndarray:
        """The clean scores of ``X`` on the kept components (no noise, not a release)."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Z = normalise(X, self.lower_, self.lower_ + self.span_)
        return (Z - self.mean_) @ self.components_.T

    def transform(self, X: Any) -> np.ndarray:
        """The sanitised scores of ``X``: its projection plus Laplace noise (a release).

        Raises
        ------
        BudgetRefused
            The call would take ``privacy_.epsilon`` above ``budget`` (nothing is
            released; its δ is 0, so ``budget_delta`` never refuses it).
        """
        scores = self.project(X)
        p = self._params
        epsilon = self._call_epsilon(p)
        # the check and the booking are one step: concurrent calls never exceed the budget
        reservation = self._spending.reserve(epsilon, 0.0)
        try:
            if self._mechanisms is None:
                out = scores
            else:
                rng = (None if p["mode"] == "secure" else
                       P.generator_of(type(self).__name__, p["random_state"], "sanitizer",
                                      "noise"))
                out = perturb(scores, self._mechanisms, rng)
        except BaseException:
            self._spending.release(reservation)  # nothing was returned: nothing released
            raise
        self._spending.settle(reservation, epsilon, 0.0)
        self.privacy_ = self._spending.total()
        self.privacy_last_ = PrivacySpent(guarantee=self._spending.guarantee, epsilon=epsilon,
                                          delta=0.0)
        return out

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``pc0``, ``pc1``, ... (one per kept component)."""
        check_is_fitted(self, "components_")
        return np.asarray([f"pc{i}" for i in range(len(self.components_))], dtype=object)


__all__ = ["PCALaplaceSanitizer"]
