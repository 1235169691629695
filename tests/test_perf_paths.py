"""Fast paths give exactly what the straightforward code gives (bit for bit)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from ppknn.core.messages import Message, decode_arrays, encode_arrays
from ppknn.protocols.dp_knn import overlap


def _batch(seed: int, q: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((q, d))
    if seed % 3 == 0:
        x = np.round(x * 4) / 4  # repeated points and exact ties at the boundary
    r = rng.choice([0.05, 0.125, 0.25], size=q) * rng.choice([1.0, 0.5, 2.0], size=q)
    return x, r


@pytest.mark.parametrize("seed", range(12))
def test_all_pair_edges_equal_the_tree_search(seed, monkeypatch):
    q, d = 40 + 37 * seed, 1 + seed % 4
    x, r = _batch(seed, q, d)
    monkeypatch.setattr(overlap, "_BLOCK_PAIRS", 500)  # many row blocks
    direct = overlap.overlap_edges(x, r)
    monkeypatch.setattr(overlap, "BRUTE_FORCE_MAX", 0)
    tree = overlap.overlap_edges(x, r)
    assert direct.dtype == tree.dtype == np.int64
    np.testing.assert_array_equal(direct, tree)
    assert len(direct)  # the batches have edges
    # a pair just outside the slack is not an edge on either path
    far = np.array([[0.0], [2.0 * (1 + 2e-9)]])
    for limit in (0, 4096):
        monkeypatch.setattr(overlap, "BRUTE_FORCE_MAX", limit)
        assert overlap.overlap_edges(far, np.ones(2)).shape == (0, 2)
        assert overlap.overlap_edges(far[:1].repeat(2, 0), np.ones(2)).tolist() == [[0, 1]]


def _reference_encode(arrays: dict) -> bytes:
    """The payload format written out plainly (JSON header, then each array's bytes)."""
    names = sorted(arrays)
    metas, blobs = [], []
    for name in names:
        arr = np.asarray(arrays[name], order="C")
        metas.append([name, arr.dtype.str, list(arr.shape)])
        blobs.append(arr.tobytes())
    head = json.dumps(metas, separators=(",", ":")).encode()
    return b"PPKA" + struct.pack("<I", len(head)) + head + b"".join(blobs)


PAYLOADS = [
    {},
    {"a": np.float64(3.5)},
    {"g": np.arange(12.0).reshape(3, 4)[:, ::2], "s": np.zeros((0, 3))},
    {"s": np.array([[2**64 - 1, 7]], dtype=np.uint64), "t": np.array(True),
     "h": np.array([1, -2], dtype=">i4"), "c": np.array([1 + 2j]), "e": np.float16([1.5])},
    {"d": np.array(["2020-01-01"], dtype="M8[D]")},
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_encoding_is_the_plain_format(payload):
    for _ in range(2):  # the second time from the kept header
        data = encode_arrays(payload)
        assert isinstance(data, bytes) and data == _reference_encode(payload)
    back = decode_arrays(data)
    assert sorted(back) == sorted(payload)
    for name, value in payload.items():
        value = np.asarray(value)
        assert back[name].dtype == value.dtype and back[name].shape == value.shape
        np.testing.assert_array_equal(back[name], value)


def test_encoding_of_records_is_their_bytes():
    rec = {"rec": np.array([(1, 2.5), (3, -0.0)], dtype=[("a", "<i4"), ("b", "<f8")])}
    assert encode_arrays(rec) == _reference_encode(rec)


def test_associated_data_is_the_sorted_header():
    for m in (Message("run", "pp-topk", 2, 17, "owner-01", "owner-02", "topk-vector", {}),
              Message("r\u00e9\"", "p", np.int64(0), -1, "a", "b", "k", {})):
        expected = json.dumps(m.header(), sort_keys=True, separators=(",", ":")).encode()
        assert m.associated_data() == expected
        assert m.with_seq(5).associated_data() != expected  # the sequence number is bound


@pytest.mark.parametrize("n,p", [(60, 0.3), (400, 0.05), (300, 0.7)])
def test_degeneracy_orderings_agree(n, p):
    """The scanning and the bucket orderings take the same vertex at every step."""
    from scipy import sparse

    from ppknn.protocols.dp_knn import cliques

    rng = np.random.default_rng(n)
    upper = np.triu(rng.random((n, n)) < p, 1)
    adj = sparse.csr_matrix(upper | upper.T)
    adj.sort_indices()
    indptr, indices = adj.indptr.astype(np.int64), adj.indices.astype(np.int64)
    scan, d_scan = cliques._degeneracy_order(indptr, indices)
    buckets, d_buckets = cliques._degeneracy_order_buckets(indptr, indices)
    np.testing.assert_array_equal(scan, buckets)
    assert d_scan == d_buckets
    assert sorted(scan.tolist()) == list(range(n))


def _reference_topk_step(g, g_prov, v, *, own, already_inserted, p_r, delta, rng, v_first=False):
    """Algorithm 2 as first written (argsort + take_along_axis); ``v_first`` breaks it."""
    from ppknn.core.messages import PROVENANCE_DTYPE, RANDOM_FILL

    q, k = g.shape
    coins, uniforms = rng.random(q), rng.random((q, k))
    own_block = np.full(v.shape, own, dtype=PROVENANCE_DTYPE)
    values = np.concatenate([v, g] if v_first else [g, v], axis=1)
    origin = np.concatenate([own_block, g_prov] if v_first else [g_prov, own_block], axis=1)
    order = np.argsort(values, axis=1, kind="stable")[:, :k]
    merged = np.take_along_axis(values, order, axis=1)
    merged_prov = np.take_along_axis(origin, order, axis=1)
    m = ((order < k) if v_first else (order >= k)).sum(axis=1)
    m = np.where(already_inserted, 0, m)
    real = (m > 0) & ~(coins < p_r)
    fill = (m > 0) & (coins < p_r)
    out = np.where(real[:, None], merged, g)
    prov = np.where(real[:, None], merged_prov, g_prov)
    if fill.any():
        lo = merged[:, k - 1]
        hi = np.maximum(lo + delta, g[np.arange(q), np.clip(k - m, 0, k - 1)])
        draws = lo[:, None] + uniforms * (hi - lo)[:, None]
        slots = fill[:, None] & (np.arange(k)[None, :] >= (k - m)[:, None])
        out = np.where(slots, draws, out)
        prov = np.where(slots, RANDOM_FILL, prov)
        resort = np.argsort(out, axis=1, kind="stable")
        out = np.take_along_axis(out, resort, axis=1)
        prov = np.take_along_axis(prov, resort, axis=1)
    return out, prov, real, fill, m


def _topk_case(seed: int):
    from ppknn.core.messages import PROVENANCE_DTYPE

    r = np.random.default_rng(seed)
    k, q = int(r.integers(1, 8)), int(r.integers(1, 60))
    vals = r.integers(0, 6, size=(q, 2 * k)).astype(float) / 4  # many exact ties
    if seed % 3 == 0:
        vals[:, :k] = r.random((q, k))
    if seed % 5 == 0:
        vals[0, -1] = np.inf  # a node with fewer than k points pads with +inf
    g, v = np.sort(vals[:, :k], axis=1), np.sort(vals[:, k:], axis=1)
    if seed % 7 == 0:
        g = vals[:, :k]  # an unsorted incoming vector (a misbehaving predecessor)
    g_prov = r.integers(-3, 9, size=g.shape).astype(PROVENANCE_DTYPE)
    kw = dict(own=4, already_inserted=r.random(q) < 0.3, p_r=[0.0, 0.5, 1.0][seed % 3],
              delta=[0.0, 0.1, 2.0][seed % 3])
    return g, g_prov, v, kw


def test_topk_step_is_the_reference_algorithm_bit_for_bit():
    from ppknn.protocols.ppknn_ring.pp_topk import topk_step

    broken_caught = 0
    for seed in range(300):
        g, g_prov, v, kw = _topk_case(seed)
        got = topk_step(g, g_prov, v, rng=np.random.default_rng(seed), **kw)
        want = _reference_topk_step(g, g_prov, v, rng=np.random.default_rng(seed), **kw)
        for a, b in zip((got.g, got.provenance, got.inserted, got.randomised, got.m), want):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        broken = _reference_topk_step(g, g_prov, v, rng=np.random.default_rng(seed),
                                      v_first=True, **kw)
        broken_caught += any(a.tobytes() != b.tobytes() for a, b in zip(
            (got.g, got.provenance, got.inserted, got.randomised, got.m), broken))
    assert broken_caught > 50  # the comparison tells G-first from V-first among equals


@pytest.mark.parametrize("seed", range(6))
def test_uniform_votes_of_a_whole_block_equal_the_general_count(seed):
    """Rows shared by every query (a broadcast view, as a whole block gives) are counted as
    the same rows given one copy per query (once a separate one-hot product path)."""
    from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner

    rng = np.random.default_rng(seed)
    n, c_n, q = int(rng.integers(1, 80)), int(rng.integers(1, 30)), int(rng.integers(1, 200))
    owner = RingDataOwner(party_id="a", index=0, X=rng.random((n, 2)),
                          y=rng.integers(0, c_n, n), n_classes=c_n, run_id="r", seed=seed)
    rows = np.broadcast_to(rng.permutation(n), (q, n))
    voters = rng.random((q, n)) < rng.random()
    dist, zero, scale = rng.random((q, n)), np.zeros(q, dtype=bool), np.ones(q)
    fast = owner._class_votes(dist, rows, voters, zero, scale)
    general = owner._class_votes(dist, np.ascontiguousarray(rows), voters, zero, scale)
    assert fast.dtype == general.dtype == np.uint64
    np.testing.assert_array_equal(fast, general)
    assert general.sum() == voters.sum()
