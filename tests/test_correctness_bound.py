"""Statistical test of the paper's correctness bound (1 - P0^r d^(r(r-1)/2))^k."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.protocols.ppknn_ring.pp_topk import TopKParams, euclidean_distances
from tests.helpers import run_on

Z = 4.753  # one-sided alpha = 1e-6


def _synthetic(seed, n_points=240, n_queries=1500, dim=3, n=6):
    rng = np.random.default_rng(seed)
    X = rng.random((n_points, dim))
    y = rng.integers(0, 3, n_points)
    Q = rng.random((n_queries, dim))
    parts = np.array_split(rng.permutation(n_points), n)
    return [X[p] for p in parts], [y[p] for p in parts], Q


@pytest.mark.parametrize("rounds,k", [(2, 1), (2, 3), (3, 2), (3, 5), (4, 8)])
def test_exact_fraction_at_least_bound(rounds, k):
    parts_X, parts_y, Q = _synthetic(seed=rounds * 10 + k)
    result, _ = run_on("inprocess", parts_X, parts_y, 3, Q, k=k, p0=1.0, d=0.5, rounds=rounds,
                       seed=rounds + k, max_distance=np.sqrt(3))
    true = np.sort(euclidean_distances(Q, np.concatenate(parts_X)), axis=1)[:, :k]
    exact = np.all(result.final_vector == true, axis=1).mean()
    bound = TopKParams(k=k, p0=1.0, d=0.5, rounds=rounds, max_distance=1.0).correctness_bound()
    sampling = Z * np.sqrt(bound * (1 - bound) / len(Q))
    assert exact >= bound - sampling, f"exact {exact:.4f} < bound {bound:.4f} - {sampling:.4f}"


def test_one_round_full_randomisation_is_never_exact():
    # power check: the same measurement does see failures when the bound is 0
    parts_X, parts_y, Q = _synthetic(seed=1, n_queries=300)
    result, _ = run_on("inprocess", parts_X, parts_y, 3, Q, k=3, p0=1.0, d=0.5, rounds=1,
                       max_distance=np.sqrt(3))
    true = np.sort(euclidean_distances(Q, np.concatenate(parts_X)), axis=1)[:, :3]
    assert np.all(result.final_vector == true, axis=1).mean() == 0.0
