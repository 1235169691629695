"""Vote rules of PP-kNN: the paper's (distance <= Delta), exact-k and k-weighted."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from ppknn.core.errors import ConfigError
from ppknn.core.runtime import InProcessRuntime, RunContext
from ppknn.core.transcript import Transcript
from ppknn.protocols.ppknn_ring import PPKNNConfig, random_ring, run_ppknn, ties_at_kth
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams, euclidean_distances
from ppknn.protocols.ppknn_ring.votes import combine_k_weighted, voter_mask
from tests.helpers import owner_specs, split_dataset


def _run(parts_X, parts_y, n_classes, queries, *, vote, k=5, p0=1.0, rounds=2, seed=0,
         start_step="first", max_distance=None):
    names, specs = owner_specs(parts_X, parts_y, n_classes, seed=seed)
    rt = InProcessRuntime()
    rt.start(specs, RunContext(run_id="test", record=True))
    if max_distance is None:
        allx = np.concatenate([*parts_X, queries])
        max_distance = float(np.linalg.norm(allx.max(axis=0) - allx.min(axis=0)))
    ring, start = random_ring(names, np.random.default_rng(seed))
    cfg = PPKNNConfig(params=TopKParams(k=k, p0=p0, d=0.5, rounds=rounds,
                                        max_distance=max_distance, start_step=start_step),
                      vote=vote)
    try:
        result = run_ppknn(rt, queries, cfg, ring=ring, start=start)
        rt.close_transcript()
        transcript = Transcript(rt.transcript_table())
    finally:
        rt.shutdown()
    return result, transcript


def _continuous(seed=0, n_points=300, n_queries=400, n=4):
    rng = np.random.default_rng(seed)
    X = rng.random((n_points, 3))
    y = rng.integers(0, 3, n_points)
    parts = np.array_split(rng.permutation(n_points), n)
    return [X[p] for p in parts], [y[p] for p in parts], rng.random((n_queries, 3))


def test_exact_k_caps_a_nodes_ties_at_the_values_multiplicity_in_row_order():
    dist = np.array([[0.3, 0.1, 0.3, 0.3, 0.2]])
    final = np.array([[0.1, 0.3, 0.3, 0.35]])  # two 0.3 in the vector, 0.35 a fill
    rows = np.array([[7, 0, 2, 5, 1]])
    mask = voter_mask(dist, final, "exact-k", rows)
    # the 0.1 and the two 0.3 with the lowest row indices (2 and 5); 0.2 is not in the vector
    assert mask.tolist() == [[False, True, True, True, False]]
    assert voter_mask(dist, final, "paper").tolist() == [[True, True, True, True, True]]


def test_combine_k_weighted_gives_the_rest_k_minus_matched_votes():
    total = np.array([[3, 1, 4, 4, 4, 8],    # 4 matched; 8 others share k - 4 = 1
                      [5, 0, 0, 2, 5, 2],    # 5 matched = k: the others get nothing
                      [0, 0, 4, 4, 0, 8]])   # none matched: the 8 others share all 5
    out = combine_k_weighted(total, 2, 5)
    np.testing.assert_allclose(out, [[3.5, 1.5], [5.0, 0.0], [2.5, 2.5]])
    np.testing.assert_allclose(out.sum(axis=1), [5.0, 5.0, 5.0])


def test_unknown_vote_rule_is_refused():
    params = TopKParams(k=3, max_distance=1.0)
    with pytest.raises(ConfigError, match="vote must be one of"):
        PPKNNConfig(params=params, vote="nearest")
    with pytest.raises(ConfigError, match="vote must be one of"):
        voter_mask(np.zeros((1, 1)), np.zeros((1, 1)), "k-weighted")


@pytest.mark.parametrize("vote", ["paper", "exact-k", "k-weighted"])
def test_every_rule_is_exact_knn_at_p0_zero(vote):
    ds, parts_X, parts_y, queries, _ = split_dataset("glass", 4, seed=2)
    result, _ = _run(parts_X, parts_y, ds.n_classes, queries, vote=vote, p0=0.0, rounds=1)
    union_X, union_y = np.concatenate(parts_X), np.concatenate(parts_y)
    expected = KNeighborsClassifier(n_neighbors=5, algorithm="brute").fit(
        union_X, union_y).predict(queries)
    ties = ties_at_kth(euclidean_distances(queries, union_X), 5)
    assert ((result.predictions != expected) & ~ties).sum() == 0


def test_voters_per_rule_with_random_fills():
    """P0 = 1, r = 2 on continuous data: exact-k <= k voters, k-weighted exactly k, paper more."""
    parts_X, parts_y, Q = _continuous()
    k = 5
    totals = {v: _run(parts_X, parts_y, 3, Q, vote=v, k=k, max_distance=np.sqrt(3),
                      seed=4)[0].totals.sum(axis=1) for v in ("paper", "exact-k", "k-weighted")}
    assert (totals["exact-k"] <= k).all() and (totals["exact-k"] < k).any()
    np.testing.assert_allclose(totals["k-weighted"], k)
    assert (totals["paper"] > k).mean() > 0.2  # the paper's rule over-admits (power check)


def test_vote_rule_does_not_change_pp_topk_messages():
    parts_X, parts_y, Q = _continuous(n_queries=60)
    runs = [_run(parts_X, parts_y, 3, Q, vote=v, max_distance=np.sqrt(3), seed=1)[1]
            for v in ("paper", "exact-k", "k-weighted")]
    msgs = [t.messages(protocol="pp-topk") for t in runs]
    assert len(msgs[0]) == 4 * 2 + 3
    for other in msgs[1:]:
        assert [(m.round, m.sender, m.receiver) for m in other] == \
            [(m.round, m.sender, m.receiver) for m in msgs[0]]
        for a, b in zip(msgs[0], other):
            np.testing.assert_array_equal(a.payload["g"], b.payload["g"])
    # the sums differ: k-weighted adds two class vectors and two counts
    sums = [t.messages(protocol="secure-sum") for t in runs]
    assert sums[2][0].payload["s"].shape[1] == 2 * 3 + 2 != sums[0][0].payload["s"].shape[1]


@pytest.mark.parametrize("key,value,allowed", [
    ("vote", "nearest", "'paper', 'exact-k' or 'k-weighted'"),
    ("schedule", "r+1", "'r-1' or 'r'"),
    ("start_step", 3, "'first' or 'last'"),
])
def test_scenario_refuses_unknown_rule_or_reading_naming_key_value_and_allowed(key, value,
                                                                              allowed):
    from ppknn.simulations.scenario import parse_scenario

    with pytest.raises(ConfigError) as info:
        parse_scenario({"protocol": {"name": "ppknn-ring", key: value}}, source="t")
    assert f"protocol.{key} = {value!r}" in str(info.value) and allowed in str(info.value)
