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
