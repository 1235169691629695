"""The PP-TopK step's sorted-rows path gives what the sorting path gives, bit for bit.

``_original_topk_step`` is ``topk_step`` as it was before the sorted-rows path was added
(one stable sort of ``G ∪ V`` for every row, a stable re-sort when any row is filled),
copied here so that the comparison does not depend on the module's own fallback.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.errors import ProtocolError
from ppknn.core.messages import PROVENANCE_DTYPE, RANDOM_FILL
from ppknn.protocols.ppknn_ring import pp_topk
from ppknn.protocols.ppknn_ring.pp_topk import topk_step


def _original_topk_step(g, g_prov, v, *, own, already_inserted, p_r, delta, rng):
    g = np.asarray(g, dtype=np.float64)
    q, k = g.shape
    coins = rng.random(q)
    uniforms = rng.random((q, k))
    if q == 0:
        empty = np.zeros(0, dtype=bool)
        return g, g_prov, empty, empty, np.zeros(0, dtype=np.int64)
    v = np.asarray(v, dtype=np.float64)
    values = np.concatenate([g, v], axis=1)
    origin = np.concatenate([g_prov, np.full(v.shape, own, dtype=PROVENANCE_DTYPE)], axis=1)
    order = np.argsort(values, axis=1, kind="stable")[:, :k]
    flat = order + (np.arange(q) * (2 * k))[:, None]
    merged = values.ravel()[flat]
    merged_prov = origin.ravel()[flat]
    own_in = order >= k
    m = own_in[:, 0].astype(np.int64)
    for j in range(1, k):
        m += own_in[:, j]
    m[already_inserted] = 0
    randomise = coins < p_r
    real = (m > 0) & ~randomise
    fill = (m > 0) & randomise
    keep = ~real[:, None]
    out = np.where(keep, g, merged)
    prov = np.where(keep, g_prov, merged_prov)
    if fill.any():
        lo = merged[:, k - 1]
        g_km = g[np.arange(q), np.clip(k - m, 0, k - 1)]
        hi = np.maximum(lo + delta, g_km)
        draws = lo[:, None] + uniforms * (hi - lo)[:, None]
        slots = fill[:, None] & (np.arange(k)[None, :] >= (k - m)[:, None])
        out = np.where(slots, draws, out)
        prov = np.where(slots, RANDOM_FILL, prov)
        resort = np.argsort(out, axis=1, kind="stable")
        flat = resort + (np.arange(q) * k)[:, None]
        out = out.ravel()[flat]
        prov = prov.ravel()[flat]
    return out, prov, real, fill, m


def _outputs(outcome) -> tuple:
    return outcome.g, outcome.provenance, outcome.inserted, outcome.randomised, outcome.m


def _same(got, want) -> bool:
    return all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
               for a, b in zip(got, want))


def _case(seed: int):
    """Rows with many exact ties (both signs of zero), +inf pads and awkward sizes."""
    r = np.random.default_rng(seed)
    k = int(r.choice([1, 1, 2, 3, 5, 8, 12]))
    q = int(r.choice([1, 2, 7, 60, 300]))
    grid = r.integers(1, 9)
    vals = r.integers(0, grid, size=(q, 2 * k)).astype(float) / 4  # exact ties
    if seed % 4 == 0:
        vals = r.random((q, 2 * k)) * r.choice([1e-300, 1.0, 1e300])  # no ties, extremes
    if seed % 6 == 1:
        vals[vals == 0] = -0.0  # -0.0 and 0.0 compare equal, differ in bits
        vals[:, ::3][vals[:, ::3] == -0.0] = 0.0
    if seed % 5 == 0:
        vals[r.random(vals.shape) < 0.2] = np.inf  # +inf pads (and +inf in G)
    if seed % 11 == 0:
        vals[:, :k] = np.finfo(float).max  # lo + delta overflows
    g, v = np.sort(vals[:, :k], axis=1), np.sort(vals[:, k:], axis=1)
    dtype = PROVENANCE_DTYPE if seed % 2 else np.int64
    g_prov = r.integers(-4, 64, size=g.shape).astype(dtype)
    inserted = r.random(q) < [0.0, 0.3, 1.0][seed % 3]
    kw = dict(own=int(r.integers(0, 64)), already_inserted=inserted,
              p_r=float(r.choice([0.0, 0.5, 1.0, r.random()])),
              delta=float(r.choice([0.0, 1e-3, 0.25, 2.0])))
    return g, g_prov, v, kw


def _check(g, g_prov, v, kw, seed) -> bool:
    got = topk_step(g, g_prov, v, rng=np.random.default_rng(seed), **kw)
    want = _original_topk_step(g, g_prov, v, rng=np.random.default_rng(seed), **kw)
    return _same(_outputs(got), want)


@pytest.mark.parametrize("block", range(8))
def test_sorted_rows_path_is_the_original_step(block):
    with np.errstate(all="ignore"):
        for seed in range(block * 100, (block + 1) * 100):
            g, g_prov, v, kw = _case(seed)
            assert pp_topk._ascending_rows(g) and pp_topk._ascending_rows(v)
            assert _check(g, g_prov, v, kw, seed), seed


def test_the_sorted_rows_path_is_taken_and_the_sorting_one_otherwise(monkeypatch):
    calls = []
    for name in ("_step_sorted_rows", "_step_by_sorting"):
        original = getattr(pp_topk, name)

        def spy(*a, _f=original, _n=name, **k):
            calls.append(_n)
            return _f(*a, **k)

        monkeypatch.setattr(pp_topk, name, spy)
    g, v = np.array([[1.0, 2.0, 4.0]]), np.array([[0.5, 3.0, np.inf]])
    kw = dict(own=1, already_inserted=np.zeros(1, bool), p_r=0.5, delta=0.1)
    prov = np.zeros((1, 3), PROVENANCE_DTYPE)
    for gi, vi, path in ((g, v, "_step_sorted_rows"), (g[:, ::-1], v, "_step_by_sorting"),
                         (g, np.array([[0.5, np.nan, 1.0]]), "_step_by_sorting")):
        calls.clear()
        topk_step(gi, prov, vi, rng=np.random.default_rng(0), **kw)
        assert calls == [path]
    calls.clear()  # an integer mask of rows is not a boolean mask: the sorting path
    topk_step(g, prov, v, rng=np.random.default_rng(0), **{**kw, "already_inserted": [0]})
    assert calls == ["_step_by_sorting"]


def test_rows_that_are_not_ascending_or_hold_nan_use_the_sorting_path():
    caught = 0
    with np.errstate(all="ignore"):
        for seed in range(300):
            g, g_prov, v, kw = _case(seed)
            r = np.random.default_rng(seed)
            if seed % 3 == 0:
                g = r.permuted(g, axis=1)  # an unsorted incoming vector
            elif seed % 3 == 1:
                v = np.where(r.random(v.shape) < 0.1, np.nan, v)
            else:
                g = np.where(r.random(g.shape) < 0.1, np.nan, g)
            caught += not (pp_topk._ascending_rows(g) and pp_topk._ascending_rows(v))
            assert _check(g, g_prov, v, kw, seed), seed
    assert caught > 150


def test_ascending_rows():
    asc = pp_topk._ascending_rows
    assert asc(np.array([[1.0, 2.0], [0.0, 0.5]]))  # the row boundary 2.0 > 0.0 is ignored
    assert asc(np.array([[-0.0, 0.0, 0.0, -0.0]]))
    assert asc(np.array([[1.0, np.inf, np.inf]]))
    assert not asc(np.array([[1.0, 2.0], [0.5, 0.0]]))
    assert not asc(np.array([[np.nan, 1.0]])) and not asc(np.array([[1.0, np.nan]]))
    assert not asc(np.array([[1.0], [np.nan]]))  # one column: only the NaN test sees it
    assert asc(np.array([[3.0], [1.0]])) and asc(np.zeros((0, 3)))


def test_empty_batch_and_bad_shapes():
    rng = np.random.default_rng(0)
    out = topk_step(np.zeros((0, 3)), np.zeros((0, 3), PROVENANCE_DTYPE), np.zeros((0, 3)),
                    own=1, already_inserted=np.zeros(0, bool), p_r=1.0, delta=0.0, rng=rng)
    assert out.g.shape == (0, 3) and out.m.dtype == np.int64
    with pytest.raises(ProtocolError):
        topk_step(np.zeros((2, 3)), np.zeros((1, 1), PROVENANCE_DTYPE), np.zeros((2, 3)),
                  own=1, already_inserted=np.zeros(2, bool), p_r=1.0, delta=0.0, rng=rng)


def test_a_broken_sorted_rows_path_is_caught(monkeypatch):
    """V first among equals in the tail test (``<=``): the comparison must notice."""
    real_step = pp_topk._step_sorted_rows

    class _Flipped(np.ndarray):
        def __lt__(self, other):
            return np.less_equal(np.asarray(self), other)

    def broken(g, g_prov, v, **kw):
        return real_step(g, g_prov, np.asarray(v).view(_Flipped), **kw)

    monkeypatch.setattr(pp_topk, "_step_sorted_rows", broken)
    caught = 0
    with np.errstate(all="ignore"):
        for seed in range(1, 200, 2):  # tied grids
            g, g_prov, v, kw = _case(seed)
            caught += not _check(g, g_prov, v, kw, seed)
    assert caught > 10


@settings(max_examples=300, deadline=None)
@given(k=st.integers(1, 6), q=st.integers(1, 6), data=st.data())
def test_property_sorted_rows_equal_the_original(k, q, data):
    values = st.sampled_from([-0.0, 0.0, 0.25, 0.5, 0.5, 1.0, 3.0, np.inf])
    grid = data.draw(st.lists(st.lists(values, min_size=2 * k, max_size=2 * k),
                              min_size=q, max_size=q))
    vals = np.array(grid, dtype=float)
    g, v = np.sort(vals[:, :k], axis=1, kind="stable"), np.sort(vals[:, k:], axis=1,
                                                                 kind="stable")
    g_prov = np.array(data.draw(st.lists(st.integers(-4, 9), min_size=q * k,
                                         max_size=q * k)), dtype=PROVENANCE_DTYPE)
    inserted = np.array(data.draw(st.lists(st.booleans(), min_size=q, max_size=q)))
    kw = dict(own=data.draw(st.integers(0, 9)), already_inserted=inserted,
              p_r=data.draw(st.sampled_from([0.0, 0.5, 1.0])),
              delta=data.draw(st.sampled_from([0.0, 0.1])))
    with np.errstate(all="ignore"):
        assert _check(g, g_prov.reshape(q, k), v, kw, data.draw(st.integers(0, 2**32)))


def test_floating_point_warnings_are_the_original_ones():
    """lo, hi and the draws are the same floats for every row, so the same warnings arise."""
    import warnings

    def messages(f, *args, **kw):
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
            warnings.simplefilter("always")
            f(*args, **kw)
        return sorted(str(w.message) for w in caught)

    warned = 0
    for seed in range(0, 400, 5):  # cases with +inf in G and V
        g, g_prov, v, kw = _case(seed)
        got = messages(topk_step, g, g_prov, v, rng=np.random.default_rng(seed), **kw)
        want = messages(_original_topk_step, g, g_prov, v, rng=np.random.default_rng(seed),
                        **kw)
        assert got == want, seed
        warned += bool(want)
    assert warned > 5
