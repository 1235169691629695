"""Builders for the DP owner tests."""

from __future__ import annotations

import numpy as np
import pytest


def owner_kwargs(*, epsilon=1.0, analyst_epsilon=None, seed=0, n=300, d=2, mode="reproducible",
                 **extra):
    rng = np.random.default_rng(99)
    X = rng.random((n, d))
    y = np.where(X[:, 0] + 0.2 * rng.normal(size=n) > 0.5, "forged", "genuine")
    return dict(party_id="owner", X=X, y=y, classes=["forged", "genuine"], lower=np.zeros(d),
                upper=np.ones(d), epsilon=epsilon, analyst_epsilon=analyst_epsilon,
                run_id="run", seed=seed, mode=mode, **extra)


@pytest.fixture
def make_owner():
    from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner

    def build(**kwargs):
        return DPOwner(**owner_kwargs(**kwargs))

    return build


@pytest.fixture
def queries():
    return np.random.default_rng(5).random((40, 2))


class IndexSpy:
    """Stands in for the owner's private index and records every access."""

    def __init__(self, real):
        self.real, self.calls = real, []
        self.n_features, self.n_classes, self.size = real.n_features, real.n_classes, real.size

    def __getattr__(self, name):
        def record(*args, **kwargs):
            self.calls.append(name)
            return getattr(self.real, name)(*args, **kwargs)
        return record
