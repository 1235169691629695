"""The non-private baseline of the Naive Bayes protocols: scikit-learn's ``GaussianNB``.

Shared by ``dp-nb`` and ``ring-nb`` (which imports the ``dp-nb`` plugin already, never
the other way round).
"""

from __future__ import annotations

import numpy as np


def gaussian_nb(X: np.ndarray, y: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """scikit-learn's ``GaussianNB`` fitted on ``(X, y)``, predicting ``queries`` (one thread)."""
    from sklearn.naive_bayes import GaussianNB
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return GaussianNB().fit(X, y).predict(queries)


__all__ = ["gaussian_nb"]
