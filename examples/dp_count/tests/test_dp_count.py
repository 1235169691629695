# examples/dp_count/tests/test_dp_count.py
"""The protocol's own tests: ppknn's contract battery, the audit's power, the estimator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dp_count.estimator import DPCountClassifier
from dp_count.plugin import DPCount
from dp_count.protocol import class_counts
from sklearn.datasets import load_iris

from ppknn.testing import ContractSuite, check_audit, registered, scenario_data

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "dp-count.toml"


class TestDPCountContract(ContractSuite):
    """ppknn's contract battery on this protocol and its example scenario."""

    protocol = DPCount  # registered for the tests unless the package is installed
    scenario = SCENARIO


def test_the_audit_catches_an_owner_adding_too_little_noise():
    """An owner adding a quarter of the noise it charges for is caught by the audit."""
    leaky = scenario_data(SCENARIO)
    leaky["deviation"] = [{"party": "owner", "kind": "weak-noise-count",
                           "params": {"scale": 0.25}}]
    with registered(DPCount), pytest.raises(AssertionError, match="above bound"):
        check_audit("dp-count", leaky)


def test_the_estimator_spends_epsilon_per_query_row():
    """Each predicted row costs ε; with almost no noise it is the exact-count rule."""
    X, y = load_iris(return_X_y=True)
    with registered(DPCount):
        clf = DPCountClassifier(radius=1.0, epsilon=1e9, bounds=(0.0, 8.0), random_state=0)
        pred = clf.fit(X[::2], y[::2]).predict(X[1::2])
    assert clf.privacy_.epsilon == pytest.approx(1e9 * 75)
    counts = class_counts(X[::2], y[::2], X[1::2], 1.0, 3)
    top = counts.max(axis=1, keepdims=True)
    untied = (counts == top).sum(axis=1) == 1  # a tie is broken by the (tiny) noise
    assert untied.sum() > 60
    np.testing.assert_array_equal(pred[untied], counts.argmax(axis=1)[untied])
