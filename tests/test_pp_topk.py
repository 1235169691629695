"""PP-TopK step (Algorithm 2): unit and property tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ppknn.core.errors import ConfigError
from ppknn.core.messages import PUBLIC, RANDOM_FILL
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams, initial_vector, local_topk, topk_step


def _step(g, v, p_r, inserted=None, own=7, seed=0, delta=0.01):
    g = np.asarray(g, float)
    v = np.asarray(v, float)
    prov = np.full(g.shape, PUBLIC)
    ins = np.zeros(len(g), bool) if inserted is None else np.asarray(inserted)
    return topk_step(g, prov, v, own=own, already_inserted=ins, p_r=p_r, delta=delta,
                     rng=np.random.default_rng(seed))


def test_no_randomisation_gives_true_merge():
    out = _step([[1, 3, 5, 9]], [[2, 4, 10, 11]], p_r=0.0)
    assert out.g.tolist() == [[1, 2, 3, 4]]
    assert out.m.tolist() == [2]
    assert out.inserted.tolist() == [True]
    assert out.provenance.tolist() == [[PUBLIC, 7, PUBLIC, 7]]


def test_ties_keep_incoming_values_first():
    # equal values: the incoming vector's copy wins, the node's value does not enter
    out = _step([[1, 2, 3]], [[3, 3, 3]], p_r=0.0)
    assert out.m.tolist() == [0]
    assert out.provenance.tolist() == [[PUBLIC] * 3]


def test_m_zero_passes_vector_unchanged_even_when_randomising():
    out = _step([[1, 2, 3]], [[4, 5, 6]], p_r=1.0)
    assert out.g.tolist() == [[1, 2, 3]]
    assert not out.randomised.any() and not out.inserted.any()


def test_random_fill_keeps_prefix_and_draws_in_range():
    g = np.array([[1.0, 2.0, 8.0, 9.0]])
    v = np.array([[0.5, 1.5, 20.0, 30.0]])  # m = 2: G' = [0.5, 1, 1.5, 2]
    for seed in range(50):
        out = _step(g, v, p_r=1.0, seed=seed, delta=0.25)
        assert out.randomised.tolist() == [True]
        assert out.g[0, :2].tolist() == [1.0, 2.0]  # G[:k-m]
        lo, hi = 2.0, max(2.0 + 0.25, 8.0)  # [G'[k], max(G'[k]+delta, G[k-m+1])]
        fills = out.g[0, 2:]
        assert ((fills >= lo) & (fills <= hi)).all()
        assert (out.provenance[0, 2:] == RANDOM_FILL).all()
        assert (np.diff(out.g[0]) >= 0).all()


def test_node_inserts_at_most_once():
    g = np.array([[5.0, 6.0]])
    out = _step(g, [[1.0, 2.0]], p_r=0.0, inserted=[True])
    assert out.g.tolist() == [[5.0, 6.0]]  # already inserted: pass on


def test_rng_consumption_is_value_independent():
    a = np.random.default_rng(3)
    b = np.random.default_rng(3)
    prov = np.full((2, 3), PUBLIC)
    ins = np.zeros(2, bool)
    topk_step(np.ones((2, 3)), prov, np.zeros((2, 3)), own=0, already_inserted=ins, p_r=0.5,
              delta=0.1, rng=a)
    topk_step(np.ones((2, 3)), prov, np.full((2, 3), 9.0), own=0, already_inserted=ins,
              p_r=0.5, delta=0.1, rng=b)
    assert a.random() == b.random()


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(3, 6),
    k=st.integers(1, 6),
    q=st.integers(1, 5),
    data=st.data(),
)
def test_without_randomisation_ring_finds_true_topk(n, k, q, data):
    values = [data.draw(arrays(np.float64, (q, data.draw(st.integers(0, 8))),
                               elements=st.floats(0, 100, allow_nan=False)))
              for _ in range(n)]
    params = TopKParams(k=k, p0=0.0, rounds=1, max_distance=1000.0)
    g, prov = initial_vector(q, params)
    inserted = [np.zeros(q, bool) for _ in range(n)]
    for i in range(n):
        out = topk_step(g, prov, local_topk(values[i], k), own=i, already_inserted=inserted[i],
                        p_r=0.0, delta=0.0, rng=np.random.default_rng(i))
        g, prov = out.g, out.provenance
    union = np.concatenate(values + [np.full((q, k), 1000.0)], axis=1)
    np.testing.assert_array_equal(g, np.sort(union, axis=1)[:, :k])
    # provenance points at a party that really holds that value (or public)
    for qi in range(q):
        for j in range(k):
            owner = prov[qi, j]
            if owner >= 0:
                assert g[qi, j] in values[owner][qi]
            else:
                assert owner == PUBLIC and g[qi, j] == 1000.0


def test_local_topk_pads_with_inf():
    v = local_topk(np.array([[3.0, 1.0]]), 4)
    assert v.tolist() == [[1.0, 3.0, np.inf, np.inf]]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"k": 0}, "k must be an integer >= 1"),
        ({"p0": -0.1}, "P0 must be in [0, 1]"),
        ({"p0": 1.5}, "P0 must be in [0, 1]"),
        ({"d": 0.0}, "d must be in (0, 1]"),
        ({"d": 1.2}, "d must be in (0, 1]"),
        ({"rounds": 0}, "rounds must be an integer >= 1"),
        ({"delta": float("nan")}, "delta must be finite"),
        ({"max_distance": float("inf")}, "max_distance must be finite"),
    ],
)
def test_bad_parameters_rejected(kwargs, fragment):
    base = {"k": 3, "p0": 1.0, "d": 0.5, "rounds": 2, "max_distance": 10.0}
    with pytest.raises(ConfigError) as err:
        TopKParams(**{**base, **kwargs})
    assert fragment in str(err.value)


def test_correctness_bound_formula():
    p = TopKParams(k=4, p0=1.0, d=0.5, rounds=3, max_distance=1.0)
    assert p.correctness_bound() == pytest.approx((1 - 0.5**3) ** 4)
    assert p.randomisation_probability(3) == 0.25
