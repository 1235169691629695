"""The client's nearest-released-point rule against a sort-based reference, ties included."""

from __future__ import annotations

import numpy as np

from ppknn.protocols.dptt.config import ClientOutcome
from ppknn.protocols.dptt.driver import predict_labels


def _reference(q, slots, ids, points, labels):
    """Sort by (slot, distance, data index) and take each slot's first pair."""
    dist = np.linalg.norm(points - q[slots], axis=1)
    order = np.lexsort((ids, dist, slots))
    first = np.ones(len(order), dtype=bool)
    first[1:] = slots[order][1:] != slots[order][:-1]
    pick = order[first]
    out = np.full(len(q), -1)
    out[slots[pick]] = labels[pick]
    return out


def test_nearest_rule_equals_the_sorted_reference_on_tied_random_releases():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n_q, m = int(rng.integers(1, 30)), int(rng.integers(1, 200))
        slots = np.sort(rng.integers(0, n_q, m))
        ids = rng.integers(0, 50, m)
        points = rng.integers(0, 4, (m, 2)).astype(float)  # a coarse grid: many equal distances
        labels = rng.integers(0, 3, m)
        q = rng.integers(0, 4, (n_q, 2)).astype(float)
        for order in (np.arange(m), rng.permutation(m)):  # sorted by slot, and not
            out = ClientOutcome(slots=slots[order], ids=ids[order], points=points[order],
                                found=np.ones(n_q), released=np.ones(n_q), seen=np.ones(n_q),
                                decisions=0, labels=labels[order])
            np.testing.assert_array_equal(
                predict_labels(q, out, 3),
                _reference(q, slots[order], ids[order], points[order], labels[order]))
