"""Hyper-parameter search charged to the privacy budget.

A search over a DP estimator is itself a sequence of releases about the same
rows: every candidate is fitted on every fold's training rows and scored on its
test rows, and the best candidate is refitted on all of them. What each of
those steps releases depends on the estimator's privacy unit
(``privacy_unit_``):

- ``DPNaiveBayes``: each fit releases a model about its training rows;
  ``predict`` is free.
- ``DPRadiusNeighborsClassifier`` / ``DPKNeighborsClassifier``: each
  ``predict`` (each score) is a release about the rows the estimator was
  fitted on; ``fit`` is free.
- ``DPTTClassifier``: each ``predict`` charges every query row it answers
  (local DP of the querier); the training rows are not protected.
- ``PCALaplaceSanitizer`` (a pipeline step): each ``transform`` (a pipeline's
  ``fit`` calls ``fit_transform``) charges every row it transforms ``s / b``.

:func:`search_cost` adds these up per row, exactly (amounts as fractions of
their shortest decimal, as the ledger does), over the candidates x folds (x
``return_train_score``) and the refit, and states the search's cost as the
largest total of any one row -- basic (sequential) composition, where a row
outside a fit's training rows (or a call's query rows) is not charged by it.
:class:`DPGridSearchCV` is ``GridSearchCV`` with a ``budget``: it states the
cost before the search runs and refuses (:class:`BudgetRefused`) a search that
would spend more; the fitted search keeps the cost in ``privacy_cost_``.

The figures assume one prediction per scored set (one scorer, or several that
share ``predict``, as scikit-learn's multi-metric scoring does), the splits of
``cv`` as given (a shuffled splitter needs an int ``random_state`` to split the
same way twice) and, before the search has run, the most expensive candidate's
refit (afterwards, the best one's).

Examples
--------
>>> import warnings
>>> from sklearn.datasets import load_iris
>>> from sklearn.model_selection import GridSearchCV
>>> from ppknn.estimators import DPKNeighborsClassifier
>>> X, y = load_iris(return_X_y=True)
>>> search = GridSearchCV(DPKNeighborsClassifier(bounds=(0.0, 8.0)),
...                       {"epsilon": [0.5, 1.0], "n_neighbors": [3, 5]}, cv=5)
>>> cost = search_cost(search, X, y)
>>> cost.candidates, cost.splits, cost.releases, cost.epsilon
(4, 5, 20, 12.0)
>>> print(cost)  # doctest: +ELLIPSIS
GridSearchCV over DPKNeighborsClassifier: 4 candidates x 5 splits (+ refit): 20 releases; ...
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, ParameterGrid, ParameterSampler, check_cv
from sklearn.model_selection._search import BaseSearchCV
from sklearn.pipeline import Pipeline

from ppknn.core.dp.ledger import exact
from ppknn.core.errors import ConfigError
from ppknn.simulations.estimators.spending import BudgetRefused

Cost = tuple[Fraction, Fraction]
"""``(ε, δ)`` of one release, exactly (``ε`` may be ``math.inf`` as a float)."""


@dataclass(frozen=True)
class SearchCost:
    """What a hyper-parameter search releases about the rows it searches on.

    Attributes
    ----------
    searcher, estimator:
        The search's and the searched estimator's class names.
    candidates, splits:
        Parameter settings tried, and cross-validation splits per setting.
    refit:
        Whether the best setting is refitted on all rows (counted).
    releases:
        Private releases the search makes (fits and calls that spend).
    epsilon, delta:
        The largest total of any one row over the releases that charge it (basic
        composition): the search's cost in the estimator's privacy unit.
        ``None``: nothing private (no DP estimator in the search).
    epsilon_sum, delta_sum:
        The plain sum over every release (what charging each to the whole data
        set would give; at least ``epsilon``).
    unit:
        The privacy unit of the DP estimator(s) searched.
    refit_bound:
        The refit is the most expensive candidate's (the search has not run yet),
        an upper bound; else the best candidate's.
    """

    searcher: str
    estimator: str
    candidates: int
    splits: int
    refit: bool
    releases: int
    epsilon: float | None
    delta: float | None
    epsilon_sum: float | None
    delta_sum: float | None
    unit: str
    refit_bound: bool

    def __str__(self) -> str:
        head = (f"{self.searcher} over {self.estimator}: {self.candidates} candidates x "
                f"{self.splits} splits{' (+ refit)' if self.refit else ''}: "
                f"{self.releases} releases; ")
        if self.epsilon is None:
            return head + "nothing private is released"
        bound = " (refit: the dearest candidate's, an upper bound)" if self.refit_bound else ""
        return (head + f"epsilon = {self.epsilon:.6g}, delta = {self.delta:.6g} per row "
                f"(basic composition over the releases that include it; sum over all "
                f"releases {self.epsilon_sum:.6g}){bound}; unit: {self.unit}")


def _cost(epsilon: float | None, delta: float | None) -> Cost | None:
    if epsilon is None:
        return None
    e = float(epsilon)
    return (Fraction(e) if np.isinf(e) else exact(e)), exact(float(delta or 0.0))


class _Component:
    """A private estimator inside the search and where it sits (standalone / pipeline step).

    What the search charges is each estimator's own answer (the search hooks every private
    estimator defines): ``_search_fit_cost()`` (what ``fit`` releases; ``None``: nothing),
    ``_search_call_cost(n_fit, n_query, first=, n_features=)`` (one ``predict`` /
    ``transform``), ``search_unit`` (what one ε protects, defaulting to ``privacy_unit``)
    and ``charges_queries`` (a call charges its query rows, else the rows it was fit on).
    """

    def __init__(self, est: Any, *, final: bool, first: bool, n_features: int) -> None:
        self.est, self.final, self.first, self.n_features = est, final, first, n_features

    def unit(self) -> str:
        return getattr(self.est, "search_unit", getattr(self.est, "privacy_unit", ""))

    def fit_cost(self) -> Cost | None:
        """What ``fit`` releases about its training rows."""
        hook = getattr(self.est, "_search_fit_cost", None)
        cost = hook() if hook is not None else None
        return None if cost is None else _cost(*cost)

    def call_cost(self, n_fit: int, n_query: int) -> Cost | None:
        """One ``predict`` / ``transform`` of ``n_query`` rows after a fit on ``n_fit`` rows."""
        hook = getattr(self.est, "_search_call_cost", None)
        if hook is None:
            return None
        cost = hook(n_fit, n_query, first=self.first, n_features=self.n_features)
        return None if cost is None else _cost(*cost)

    def charges_queries(self) -> bool:
        """Whether a call charges its query rows (else the rows the estimator was fit on)."""
        return bool(getattr(self.est, "charges_queries", False))


def _private(est: Any) -> bool:
    """Whether ``est`` is one of the private estimators (it answers the search hooks)."""
    return hasattr(est, "_search_call_cost") or hasattr(est, "_search_fit_cost")


def _components(est: Any, n_features: int) -> list[_Component]:
    if isinstance(est, Pipeline):
        steps = [s for _, s in est.steps if s not in (None, "passthrough")]
        return [_Component(s, final=i == len(steps) - 1, first=i == 0, n_features=n_features)
                for i, s in enumerate(steps) if _private(s)]
    if _private(est):
        return [_Component(est, final=True, first=True, n_features=n_features)]
    return []


def _candidates(search: BaseSearchCV) -> list[dict[str, Any]]:
    if isinstance(search, GridSearchCV):
        return list(ParameterGrid(search.param_grid))
    if type(search).__name__ == "RandomizedSearchCV":
        if search.random_state is None:
            raise ConfigError("search_cost: RandomizedSearchCV(random_state=None) draws its "
                              "candidates at fit, so their cost cannot be stated before; "
                              "allowed: an int random_state")
        return list(ParameterSampler(search.param_distributions, search.n_iter,
                                     random_state=search.random_state))
    raise ConfigError(f"search_cost: {type(search).__name__} is not supported; allowed: "
                      "GridSearchCV, DPGridSearchCV, RandomizedSearchCV(random_state=int)")


class _Rows:
    """Per-row exact totals: counts of each distinct cost (n rows x distinct costs)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.costs: dict[Cost, int] = {}
        self.columns: list[np.ndarray] = []
        self.releases = 0
        self.sum_eps = Fraction(0)
        self.sum_delta = Fraction(0)

    def charge(self, cost: Cost | None, rows: np.ndarray) -> None:
        if cost is None or (cost[0] == 0 and cost[1] == 0) or len(rows) == 0:
            return
        if cost not in self.costs:
            self.costs[cost] = len(self.columns)
            self.columns.append(np.zeros(self.n, dtype=np.int64))
        self.columns[self.costs[cost]][rows] += 1
        self.releases += 1
        self.sum_eps += cost[0]
        self.sum_delta += cost[1]

    def worst(self) -> tuple[float, float]:
        """The largest ε total of any row, and the largest δ total (exact, then float)."""
        if not self.columns:
            return 0.0, 0.0
        counts = np.stack(self.columns, axis=1)
        costs = sorted(self.costs, key=self.costs.__getitem__)
        eps = delta = Fraction(0)
        for pattern in np.unique(counts, axis=0):
            eps = max(eps, sum((int(c) * e for c, (e, _) in zip(pattern, costs)), Fraction(0)))
            delta = max(delta, sum((int(c) * d for c, (_, d) in zip(pattern, costs)),
                                   Fraction(0)))
        return float(eps), float(delta)


def _charge_fit(rows: _Rows, comps: list[_Component], params: dict[str, Any], est: Any,
                fit_rows: np.ndarray, scored: Sequence[np.ndarray]) -> None:
    """A fit of ``est`` with ``params`` on ``fit_rows`` and one call per scored row set."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the search's own clones warn, not its costing
        cand = clone(est).set_params(**params)
    for comp in _components(cand, comps[0].n_features):
        rows.charge(comp.fit_cost(), fit_rows)
        calls = list(scored) if comp.final else [fit_rows, *scored]  # fit_transform
        for query in calls:
            cost = comp.call_cost(len(fit_rows), len(query))
            rows.charge(cost, query if comp.charges_queries() else fit_rows)


def search_cost(search: BaseSearchCV, X: Any, y: Any = None, *, groups: Any = None
                ) -> SearchCost:
    """What ``search.fit(X, y)`` releases, per row and in total (module docstring).

    Parameters
    ----------
    search:
        A ``GridSearchCV`` (or :class:`DPGridSearchCV`), or a ``RandomizedSearchCV``
        with an int ``random_state``, over a ppknn estimator or a pipeline holding
        some.
    X, y, groups:
        What ``search.fit`` is (or was) given.

    Returns
    -------
    SearchCost
        Candidates, splits, releases and the largest per-row ε and δ.

    Raises
    ------
    ConfigError
        An unsupported search, or a candidate whose cost cannot be stated.
    """
    if not isinstance(search, BaseSearchCV):
        raise ConfigError(f"search_cost: search = {type(search).__name__}; allowed: a "
                          "scikit-learn hyper-parameter search (GridSearchCV, ...)")
    est = search.estimator
    n = len(X)
    n_features = int(np.shape(X)[1]) if np.ndim(X) == 2 else 0
    comps = _components(est, n_features)
    candidates = _candidates(search)
    splits = list(check_cv(search.cv, y, classifier=is_classifier(est)).split(X, y, groups))
    rows = _Rows(n)
    name = type(est).__name__
    if isinstance(est, Pipeline):
        name = f"Pipeline({', '.join(type(c.est).__name__ for c in comps) or 'no DP step'})"
    if comps:
        for params in candidates:
            for train, test in splits:
                scored = [test, train] if search.return_train_score else [test]
                _charge_fit(rows, comps, params, est, np.asarray(train), scored)
        if search.refit:
            everything = np.arange(n)
            best = getattr(search, "best_params_", None)
            if best is not None:
                _charge_fit(rows, comps, best, est, everything, [])
            else:  # not run yet: the dearest candidate's refit
                dearest, worst = None, (-1.0, -1.0)
                for params in candidates:
                    trial = _Rows(n)
                    _charge_fit(trial, comps, params, est, everything, [])
                    if trial.worst() > worst:
                        dearest, worst = params, trial.worst()
                _charge_fit(rows, comps, dearest or {}, est, everything, [])
    eps, delta = rows.worst()
    private = bool(comps) and any(c.est._is_private() for c in comps)
    return SearchCost(
        searcher=type(search).__name__, estimator=name, candidates=len(candidates),
        splits=len(splits), refit=bool(search.refit), releases=rows.releases,
        epsilon=eps if private else None, delta=delta if private else None,
        epsilon_sum=float(rows.sum_eps) if private else None,
        delta_sum=float(rows.sum_delta) if private else None,
        unit="; ".join(dict.fromkeys(c.unit() for c in comps)) or "none",
        refit_bound=bool(search.refit) and getattr(search, "best_params_", None) is None)


class DPGridSearchCV(GridSearchCV):
    """``GridSearchCV`` charged to a privacy budget: refused before it runs if it would overspend.

    Parameters
    ----------
    estimator, param_grid, scoring, n_jobs, refit, cv, verbose, pre_dispatch, error_score,
    return_train_score:
        As scikit-learn's ``GridSearchCV``.
    budget:
        The most ε the whole search may spend per row (:func:`search_cost`);
        ``None``: no cap (the search still states its cost, and the DP estimators
        warn once with ``UnchargedSearchWarning``).
    budget_delta:
        The most δ per row (``None``: no cap).

    Attributes
    ----------
    privacy_cost_:
        The search's :class:`SearchCost` (after the search: with the best
        candidate's refit).
    privacy_unit_:
        The privacy unit of the searched estimator(s).
    """

    def __init__(self, estimator: Any, param_grid: Any, *, budget: float | None = None,
                 budget_delta: float | None = None, scoring: Any = None, n_jobs: Any = None,
                 refit: Any = True, cv: Any = None, verbose: int = 0,
                 pre_dispatch: Any = "2*n_jobs", error_score: Any = np.nan,
                 return_train_score: bool = False) -> None:
        super().__init__(estimator, param_grid, scoring=scoring, n_jobs=n_jobs, refit=refit,
                         cv=cv, verbose=verbose, pre_dispatch=pre_dispatch,
                         error_score=error_score, return_train_score=return_train_score)
        self.budget = budget
        self.budget_delta = budget_delta

    def fit(self, X: Any, y: Any = None, **params: Any) -> DPGridSearchCV:
        """State the search's cost, refuse it above the budget, else search.

        Raises
        ------
        BudgetRefused
            The search would spend more than ``budget`` (ε) or ``budget_delta`` (δ)
            per row; nothing runs.
        """
        from ppknn.simulations.estimators import params as P

        caps = P.budgets(type(self).__name__, self.budget, self.budget_delta)
        cost = search_cost(self, X, y, groups=params.get("groups"))
        over = [f"{name} = {cap!r} cannot pay for {word} {value:.6g}"
                for name, cap, word, value in (("budget", caps["budget"], "epsilon",
                                                cost.epsilon),
                                               ("budget_delta", caps["budget_delta"], "delta",
                                                cost.delta))
                if cap is not None and value is not None and exact(value) > exact(cap)]
        if over:
            raise BudgetRefused(f"DPGridSearchCV: {' and '.join(over)} ({cost}); nothing "
                                "ran. Fewer candidates or folds, or a smaller epsilon")
        super().fit(X, y, **params)
        self.privacy_cost_ = search_cost(self, X, y, groups=params.get("groups"))
        self.privacy_unit_ = self.privacy_cost_.unit
        return self


__all__ = ["DPGridSearchCV", "SearchCost", "search_cost"]
