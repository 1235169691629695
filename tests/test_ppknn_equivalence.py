"""With P0 = 0, PP-kNN is exactly scikit-learn's brute-force kNN on the union."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from ppknn.protocols.ppknn_ring import ties_at_kth
from ppknn.protocols.ppknn_ring.pp_topk import euclidean_distances
from tests.helpers import run_on, split_dataset


@pytest.mark.parametrize("weighting", ["uniform", "distance"])
@pytest.mark.parametrize("n", [3, 8, 16])
@pytest.mark.parametrize("dataset", ["glass", "pima", "abalone"])
def test_p0_zero_matches_sklearn(dataset, n, weighting):
    k = 5
    ds, parts_X, parts_y, queries, _ = split_dataset(dataset, n, seed=n)
    result, _ = run_on("inprocess", parts_X, parts_y, ds.n_classes, queries, k=k, p0=0.0,
                       rounds=1, weighting=weighting)
    union_X, union_y = np.concatenate(parts_X), np.concatenate(parts_y)
    knn = KNeighborsClassifier(n_neighbors=k, algorithm="brute", weights=weighting)
    expected = knn.fit(union_X, union_y).predict(queries)
    ties = ties_at_kth(euclidean_distances(queries, union_X), k)
    mismatched = (result.predictions != expected) & ~ties
    assert mismatched.sum() == 0, f"{mismatched.sum()} non-tied queries differ"
    # ties are excluded from the comparison and counted, never the majority
    assert ties.sum() < len(queries) / 2
    # the final vector is the true top-k
    true = np.sort(euclidean_distances(queries, union_X), axis=1)[:, :k]
    np.testing.assert_array_equal(result.final_vector, true)


def test_secret_shared_sum_gives_same_predictions():
    ds, parts_X, parts_y, queries, _ = split_dataset("glass", 5)
    ring, _ = run_on("inprocess", parts_X, parts_y, ds.n_classes, queries, p0=0.0,
                     secure_sum="ring")
    shared, _ = run_on("inprocess", parts_X, parts_y, ds.n_classes, queries, p0=0.0,
                       secure_sum="shared")
    np.testing.assert_array_equal(ring.predictions, shared.predictions)
    np.testing.assert_array_equal(ring.totals, shared.totals)


def test_very_large_k_uses_whole_union():
    ds, parts_X, parts_y, queries, _ = split_dataset("glass", 4)
    k = sum(len(x) for x in parts_X)
    result, _ = run_on("inprocess", parts_X, parts_y, ds.n_classes, queries, k=k, p0=0.0,
                       rounds=1)
    counts = np.bincount(np.concatenate(parts_y), minlength=ds.n_classes)
    assert (result.predictions == np.argmax(counts)).all()


@pytest.mark.parametrize("cache_limit", [0, 3_000, 10**9])
def test_distance_cache_does_not_change_results(cache_limit):
    """Sorted-prefix caching (any width, or none) gives the same run as full recomputation."""
    from ppknn.core.runtime import InProcessRuntime, PartySpec, RunContext
    from ppknn.protocols.ppknn_ring import PPKNNConfig, run_ppknn
    from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
    from ppknn.protocols.ppknn_ring.pp_topk import TopKParams

    ds, parts_X, parts_y, queries, _ = split_dataset("pima", 3)
    outputs = []
    for limit in (cache_limit, 0):
        rt = InProcessRuntime()
        rt.start([PartySpec(f"p{i}", RingDataOwner, {
            "party_id": f"p{i}", "index": i, "X": X, "y": y, "n_classes": ds.n_classes,
            "run_id": "c", "seed": 1, "cache_limit": limit})
            for i, (X, y) in enumerate(zip(parts_X, parts_y))], RunContext(run_id="c"))
        runs = []
        for k, weighting in [(3, "uniform"), (40, "distance"), (300, "uniform")]:
            cfg = PPKNNConfig(params=TopKParams(k=k, p0=0.5, d=0.5, rounds=2,
                                                max_distance=1e4), weighting=weighting)
            res = run_ppknn(rt, queries, cfg, ring=["p0", "p1", "p2"], start="p1")
            runs.append((res.predictions, res.final_vector, res.totals))
        outputs.append(runs)
    for (pa, fa, ta), (pb, fb, tb) in zip(*outputs):
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(fa, fb)
        np.testing.assert_array_equal(ta, tb)


def test_union_topk_and_ties_blocks_equal_whole():
    from ppknn.protocols.ppknn_ring import ties_at_kth
    from ppknn.protocols.ppknn_ring.pp_topk import euclidean_distances, local_topk
    from ppknn.simulations.knn import union_topk_and_ties

    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(300, 3)).astype(float)  # many ties
    q = rng.integers(0, 4, size=(57, 3)).astype(float)
    d = euclidean_distances(q, X)
    for block_bytes in (1, 8 * 300 * 5, 1 << 30):  # one query per block, 5, all at once
        topk, ties = union_topk_and_ties(q, X, 7, block_bytes=block_bytes)
        np.testing.assert_array_equal(topk, local_topk(d, 7))
        np.testing.assert_array_equal(ties, ties_at_kth(d, 7))
    assert ties.any() and not ties.all()
