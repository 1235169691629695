"""An owner's local votes are what the code before the vote-counting speed-up gave, bit for bit.

``_original_class_votes`` and ``_original_local_votes`` are copies of
``RingDataOwner._class_votes`` and ``RingDataOwner.local_votes`` as they were before
(``np.nonzero`` of the voter mask, a one-hot product for whole blocks, fancy-indexed
reads and writes of every block).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.protocols.ppknn_ring import secure_sum as ss
from ppknn.protocols.ppknn_ring.config import RingSetup
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams
from ppknn.protocols.ppknn_ring.votes import voter_mask


def _original_class_votes(owner, dist, rows, voters, zero_rows, scale):
    c_n = owner.n_classes
    if owner.weighting == "uniform" and rows.ndim == 2 and rows.strides[0] == 0:
        onehot = np.zeros((rows.shape[1], c_n))
        onehot[np.arange(rows.shape[1]), owner.y[rows[0]]] = 1.0
        return (voters.astype(np.float64) @ onehot).astype(np.uint64)
    q_i, col = np.nonzero(voters)
    slot = q_i * c_n + owner.y[rows[q_i, col]]
    if owner.weighting == "uniform":
        counts = np.bincount(slot, minlength=len(voters) * c_n)
        return counts.astype(np.uint64).reshape(len(voters), c_n)
    ss.encode_fixed(np.zeros(len(scale)), scale)
    d = dist[q_i, col]
    with np.errstate(divide="ignore"):
        w = np.where(d > 0, 1.0 / d, 0.0)
    w = np.where(zero_rows[q_i], (d == 0).astype(np.float64), w)
    out = np.zeros(len(voters) * c_n, dtype=np.uint64)
    np.add.at(out, slot, ss.encode_fixed(w, scale[q_i]))
    return out.reshape(len(voters), c_n)


def _original_local_votes(owner):
    g = owner.final_g
    c_n = owner.n_classes
    weighted = owner.vote == "k-weighted"
    votes = np.zeros((len(g), 2 * c_n + 2 if weighted else c_n), dtype=np.uint64)
    scale = (ss.weight_scale(g[:, 0], owner.params.k) if owner.weighting == "distance"
             else np.ones(len(g)))
    for q_idx, dist, rows in owner._index.within(g[:, -1]):
        if weighted:
            matched = voter_mask(dist, g[q_idx], "exact-k", rows)
            groups = [matched, (dist <= g[q_idx, -1][:, None]) & ~matched]
        else:
            groups = [voter_mask(dist, g[q_idx], owner.vote, rows)]
        for j, voters in enumerate(groups):
            votes[q_idx, j * c_n:(j + 1) * c_n] = _original_class_votes(
                owner, dist, rows, voters, g[q_idx, 0] == 0, scale[q_idx])
            if weighted:
                votes[q_idx, 2 * c_n + j] = voters.sum(axis=1).astype(np.uint64)
    return votes


def _owner(rng, n, c_n, weighting="uniform", vote="paper", blocks=None, cache_limit=20_000_000):
    X = np.round(rng.random((n, 2)) * 4) / 4  # repeated points: ties and zero distances
    owner = RingDataOwner(party_id="a", index=0, X=X, y=rng.integers(0, c_n, n),
                          n_classes=c_n, run_id="r", seed=0, row_block=blocks,
                          cache_limit=cache_limit)
    params = TopKParams(k=int(rng.integers(1, 6)), max_distance=10.0)
    owner.configure(RingSetup(ring=("a", "b"), start="a", params=params, weighting=weighting,
                              vote=vote))
    return owner


@pytest.mark.parametrize("seed", range(40))
def test_class_votes_equal_the_original(seed):
    rng = np.random.default_rng(seed)
    n, c_n, q = int(rng.integers(0, 60)), int(rng.integers(1, 30)), int(rng.integers(0, 120))
    owner = _owner(rng, max(n, 1), c_n, weighting=["uniform", "distance"][seed % 2])
    n = len(owner.X)
    dist = np.round(rng.random((q, n)) * 3) / 3
    if seed % 4 == 1:
        rows = np.broadcast_to(rng.permutation(n), (q, n))  # a whole block
    else:
        rows = rng.integers(0, n, size=(q, n))
    voters = rng.random((q, n)) < [0.0, 0.01, 0.3, 1.0][seed % 4]
    zero_rows = rng.random(q) < 0.2
    scale = np.exp2(rng.integers(0, 40, size=q)).astype(float)
    got = owner._class_votes(dist, rows, voters, zero_rows, scale)
    want = _original_class_votes(owner, dist, rows, voters, zero_rows, scale)
    assert got.dtype == want.dtype == np.uint64 and got.shape == want.shape == (q, c_n)
    np.testing.assert_array_equal(got, want)
    if owner.weighting == "uniform":
        assert got.sum() == voters.sum()


def test_class_votes_with_no_columns():
    owner = _owner(np.random.default_rng(0), 3, 4)
    empty = np.zeros((5, 0))
    got = owner._class_votes(empty, empty.astype(int), empty.astype(bool),
                             np.zeros(5, bool), np.ones(5))
    assert got.shape == (5, 4) and got.dtype == np.uint64 and not got.any()


@pytest.mark.parametrize("seed", range(24))
def test_local_votes_equal_the_original(seed):
    rng = np.random.default_rng(seed)
    n, c_n, q = int(rng.integers(1, 80)), int(rng.integers(1, 12)), int(rng.integers(1, 90))
    blocked = seed % 3 == 0
    owner = _owner(rng, n, c_n, weighting=["uniform", "distance"][seed % 2],
                   vote=["paper", "exact-k", "k-weighted"][seed % 3 if seed % 5 else 0],
                   blocks=rng.integers(0, 3, n) if blocked else None,
                   cache_limit=[20_000_000, 64, 0][seed % 3])
    queries = np.round(rng.random((q, 2)) * 4) / 4
    owner.load_queries(queries, rng.integers(0, 3, q) if blocked else None)
    final = np.sort(np.round(rng.random((q, owner.params.k)) * 4) / 4, axis=1)
    final[rng.random(q) < 0.2, 0] = 0.0  # a zero distance in the public vector
    owner.final_g = final
    got = owner.local_votes()
    want = _original_local_votes(owner)
    assert got.dtype == want.dtype == np.uint64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(6))
def test_a_block_of_every_row_read_in_place_gives_the_same_index(seed):
    """``every=True`` (the caller's word that the one block is every query and row, in
    order) skips the index checks: the same distances, prefixes and top-k as checking."""
    from ppknn.protocols.ppknn_ring.parties.ring_owner import NeighbourBlocks

    rng = np.random.default_rng(seed)
    q, n = int(rng.integers(1, 60)), int(rng.integers(1, 80))
    queries, X = rng.random((q, 3)), rng.random((n, 3))
    blocks = [(np.arange(q), np.arange(n))]
    limit = [20_000_000, 64, 0][seed % 3]
    fast = NeighbourBlocks(queries, X, blocks, limit, every=True)
    checked = NeighbourBlocks(queries, X, blocks, limit)
    assert checked._in_order == fast._in_order == [(True, True)]
    for a, b in zip(fast.prefix, checked.prefix):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
    k = int(rng.integers(1, 6))
    np.testing.assert_array_equal(fast.topk(k), checked.topk(k))
    # a block that is not every row in order is read through its indices
    shuffled = NeighbourBlocks(queries, X, [(np.arange(q), np.arange(n)[::-1].copy())], limit)
    assert shuffled._in_order[0][1] == (n == 1)
