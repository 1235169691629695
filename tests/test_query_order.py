"""The whole test split is queried in a random order whose contiguous blocks keep the class mix.

Per-analyst shares (dp-knn, dp-nb) and request batches are contiguous blocks of the
queries; on a class-sorted file (seeds: 70 rows of each of 3 classes, in class order)
the sorted split gave each analyst one class.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppknn.simulations.prepare import prepare_data
from ppknn.simulations.scenario import parse_scenario
from tests.test_leakage import small


def _shares(analysts: int = 3) -> list[np.ndarray]:
    data = small("dp-nb")
    data["data"] = {"dataset": "seeds", "test_fraction": 0.5, "bounds": "data"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_data(parse_scenario(data))
    return np.array_split(np.asarray(prepared.query_labels), analysts)


def _max_gap(shares: list[np.ndarray]) -> float:
    """The largest gap between a share's class count and its proportional share."""
    labels = np.concatenate(shares)
    classes, counts = np.unique(labels, return_counts=True)
    gaps = [abs(np.sum(s == c) - len(s) * n / len(labels))
            for s in shares for c, n in zip(classes, counts)]
    return float(max(gaps))


def test_each_share_carries_the_class_mix():
    # systematic sampling within each class: a block is off by at most 1 + K n_c / n
    # rows per class (K = 3 classes of equal size: 2), whatever the seed
    assert _max_gap(_shares()) <= 2.0


def test_the_sorted_order_fails_the_check(monkeypatch):
    import ppknn.simulations.prepare as prepare

    monkeypatch.setattr(prepare, "query_order", lambda labels, rng: np.arange(len(labels)))
    assert _max_gap(_shares()) > 10  # each share nearly one class


def test_the_order_is_random_from_the_seed():
    a = np.concatenate(_shares())
    assert np.array_equal(a, np.concatenate(_shares()))  # the same seed, the same order
    assert not np.all(np.diff(a) >= 0)


@pytest.mark.parametrize("analysts", [2, 5, 7])
def test_any_number_of_shares(analysts):
    assert _max_gap(_shares(analysts)) <= 2.0
