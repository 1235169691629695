"""What every ppknn scikit-learn estimator shares: warnings once per estimator, search notices.

An estimator and every clone made of it (``clone``, ``GridSearchCV``,
``cross_val_score``) form one *family*: the clones share a record of the warnings
already shown. :func:`once_per_estimator` shows each *kind* of warning of the
given categories once per family -- the kind is the category and the message
with its figures left out -- so a ``PrivacyLeakWarning`` about data-derived
bounds appears on the first fit only, and a search that fits a hundred clones
shows one ``BelowMajorityWarning`` (the first clone's, with its figure), not a
hundred. Other warnings pass unchanged. The warnings are re-issued when the
block ends, through the caller's warning filters (``"error"`` still raises):
callers wrap the steps *before* a release, so a filter that turns the warning
into an error still stops the release.

A private estimator cloned by a hyper-parameter search (scikit-learn's
``BaseSearchCV``: ``GridSearchCV``, ``RandomizedSearchCV``, the halving
searches) warns once per family with :class:`UnchargedSearchWarning` unless the
search has a ``budget``: every candidate and fold is one more release about the
same rows, and nothing caps their sum.

Examples
--------
>>> import warnings
>>> from sklearn.base import BaseEstimator
>>> class Est(EstimatorConventions, BaseEstimator):
...     def fit(self):
...         with once_per_estimator(self, (UserWarning,)):
...             warnings.warn("bounds from the data: max 3.5")
...         return self
>>> est = Est()
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     _ = est.fit(); _ = est.fit(); _ = clone(est).fit()
>>> len(caught)
1
"""

from __future__ import annotations

import re
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_FAMILY = "_ppknn_family"
_FIGURE = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class UnchargedSearchWarning(UserWarning):
    """A private estimator cloned into a hyper-parameter search that has no budget."""


class Family:
    """The warnings shown by an estimator and its clones (module docstring)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        """Whether ``key`` is new to the family (and record it)."""
        with self._lock:
            new = key not in self.seen
            self.seen.add(key)
            return new

    def __getstate__(self) -> dict[str, Any]:  # a lock does not pickle (joblib, deepcopy)
        return {"seen": set(self.seen)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.seen = state["seen"]
        self._lock = threading.Lock()


def family(estimator: Any) -> Family:
    """The family of ``estimator`` (made on first use, never in ``__init__``)."""
    fam = estimator.__dict__.get(_FAMILY)
    if fam is None:
        fam = Family()
        estimator.__dict__[_FAMILY] = fam
    return fam


def kind(category: type[Warning], message: str) -> str:
    """The kind of a warning: its category and its message without the figures.

    >>> kind(UserWarning, "accuracy 0.25 below 0.33") == kind(UserWarning, "accuracy 0.1 below 0.5")
    True
    """
    return f"{category.__module__}.{category.__qualname__}: {_FIGURE.sub('#', message)}"


@contextmanager
def once_per_estimator(estimator: Any, categories: tuple[type[Warning], ...]) -> Iterator[None]:
    """Show each kind of warning of ``categories`` once per family (module docstring).

    The block's warnings are recorded and re-issued when it ends (also when it
    raises), in order, through the caller's filters; those of ``categories``
    whose kind the family has shown already are dropped.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            pending = list(caught)
    fam = family(estimator)
    for w in pending:
        if issubclass(w.category, categories) and not fam.first(kind(w.category,
                                                                        str(w.message))):
            continue
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def outside_level() -> int:
    """The ``stacklevel`` of the first caller outside scikit-learn and ppknn (the user's line)."""
    import os

    import sklearn

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    inside = (os.path.dirname(sklearn.__file__) + os.sep,
              *(os.path.join(root, layer) + os.sep
                for layer in ("core", "protocols", "parties", "simulations", "ppknn")))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


def calling_search(depth: int = 16) -> Any:
    """The scikit-learn search (``BaseSearchCV``) on the call stack, if any."""
    if "sklearn.model_selection" not in sys.modules:
        return None
    from sklearn.model_selection._search import BaseSearchCV

    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, BaseSearchCV):
            return candidate
        frame = frame.f_back
    return None


class BelowMajorityWarning(UserWarning):
    """A private fit whose expected accuracy is below always predicting the majority class."""


class EstimatorConventions:
    """Mixin (left of ``BaseEstimator``): clones share the family; a search warns once.

    Subclasses say whether they release anything private in :meth:`_is_private`.
    """

    def _is_private(self) -> bool:
        """Whether a fit or call of this estimator is a private release (DP or noise)."""
        return True

    def __sklearn_clone__(self) -> Any:
        new = super().__sklearn_clone__()  # type: ignore[misc]
        new.__dict__[_FAMILY] = family(self)
        search = calling_search()
        if search is not None and getattr(search, "budget", None) is None \
                and self._is_private():
            name, searcher = type(self).__name__, type(search).__name__
            with once_per_estimator(self, (UnchargedSearchWarning,)):
                warnings.warn(
                    f"{name} is cloned into {searcher} with no budget: every candidate and "
                    "fold is one more release about the same rows, and nothing caps their "
                    "sum; state it with ppknn.simulations.estimators.search_cost(search, X, "
                    "y) or search with DPGridSearchCV(..., budget=...)",
                    UnchargedSearchWarning, stacklevel=outside_level())
        return new


def clone(estimator: Any) -> Any:
    """scikit-learn's ``clone`` (imported lazily)."""
    from sklearn.base import clone as sk_clone

    return sk_clone(estimator)


__all__ = ["BelowMajorityWarning", "EstimatorConventions", "Family", "UnchargedSearchWarning",
           "calling_search",
           "clone", "family", "kind", "once_per_estimator", "outside_level"]
