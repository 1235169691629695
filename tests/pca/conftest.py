"""Builders for the PCA-perturbation tests."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.data import DomainBounds
from ppknn.protocols.pca_perturbation.datasets import load_paper_dataset


def unit_bounds(X):
    """The table's own min and max as declared bounds (as the paper normalises)."""
    return DomainBounds(X.min(axis=0), X.max(axis=0))


@pytest.fixture(scope="session")
def paper_sets():
    """Every paper dataset, the generated ones small, loaded once."""
    rng = np.random.default_rng(11)
    rows = {"waveform": 1500, "synthetic-2": 2000, "synthetic-8": 2000}
    names = ("wine", "iris", "ionosphere", "wdbc", "waveform", "synthetic-2", "synthetic-8")
    return {n: load_paper_dataset(n, rng=rng, rows=rows.get(n)) for n in names}
