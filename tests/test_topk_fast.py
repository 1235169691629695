"""The PP-TopK step's fast paths give what the sorting path gives, bit for bit.

``_original_topk_step`` is ``topk_step`` as it was before the sorted-rows path was added
(one stable sort of ``G ∪ V`` for every row, a stable re-sort when any row is filled),
copied here so that the comparison does not depend on the module's own fallback.

The comparisons run twice (``path``): with the compiled step (``_topk_kernel.c``, taken
first when it is built) and with it off (the numpy sorted-rows path).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.errors import ProtocolError
from ppknn.core.messages import PROVENANCE_DTYPE, RANDOM_FILL
from ppknn.protocols.ppknn_ring import pp_topk
from ppknn.protocols.ppknn_ring.pp_topk import topk_step
from tests.c_kernels import build_variant, compiler


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


PATHS = ["compiled", "numpy"]


@contextlib.contextmanager
def _path(path: str, kernel=None):
    """Run ``topk_step`` with the compiled step (``kernel``, else the built one) or without."""
    if path == "compiled" and (kernel or pp_topk._kernel) is None:
        pytest.skip("the compiled step is not built (no C compiler at install)")
    saved = pp_topk._kernel
    pp_topk._kernel = (kernel or saved) if path == "compiled" else None
    try:
        yield
    finally:
        pp_topk._kernel = saved


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


class _Counting:
    """A compiled step that notes what each call returned (1: done; 0, 2: numpy decides)."""

    def __init__(self, kernel) -> None:
        self.kernel, self.status = kernel, []

    def step(self, *args):
        self.status.append(self.kernel.step(*args))
        return self.status[-1]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("block", range(8))
def test_sorted_rows_path_is_the_original_step(block, path):
    counting = _Counting(pp_topk._kernel) if pp_topk._kernel else None
    with _path(path, counting), np.errstate(all="ignore"):
        for seed in range(block * 100, (block + 1) * 100):
            g, g_prov, v, kw = _case(seed)
            assert pp_topk._ascending_rows(g) and pp_topk._ascending_rows(v)
            assert _check(g, g_prov, v, kw, seed), seed
    if path == "compiled":  # int32 provenance (odd seeds): the compiled step did most
        assert counting.status.count(1) >= 40, counting.status


ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "protocols" / "ppknn_ring" / "_topk_kernel.c"


def _build(tmp_path: Path, text: str, name: str):
    """``text`` (a variant of the kernel's source) built and loaded as a module."""
    return build_variant(tmp_path, text, name, "_topk_kernel")


def test_the_compiled_step_is_built_where_a_c_compiler_is():
    """An install on a machine with a C compiler builds it (optional only for those without)."""
    if compiler() is None:
        pytest.skip("no C compiler here")
    assert pp_topk._kernel is not None


@pytest.mark.parametrize("mutation", [
    ("if (vr[j] < gr[i])", "if (vr[j] <= gr[i])"),  # V first among equals in the merge
    ("o[s] = d + lo;", "o[s] = fma(u[r * k + s], w, lo);"),  # one rounding, not two
    ("while (t >= 0 && o[t] > x)", "while (t >= 0 && o[t] >= x)"),  # an unstable sort
    ("p[s] = RANDOM_FILL;", "p[s] = own;"),  # a fill credited to the node
])
def test_a_broken_compiled_step_is_caught(tmp_path, mutation):
    """Each deliberate change to the C source makes the bit-for-bit comparison fail."""
    if compiler() is None or not SOURCE.exists():
        pytest.skip("no C compiler or no source here")
    text = SOURCE.read_text()
    assert text.count(mutation[0]) == 1
    broken = _Counting(_build(tmp_path, text.replace(*mutation), "broken"))
    caught = 0
    with _path("compiled", broken), np.errstate(all="ignore"):
        for seed in range(1, 400, 2):  # int32 provenance: the compiled step runs
            g, g_prov, v, kw = _case(seed)
            caught += not _check(g, g_prov, v, kw, seed)
    assert broken.status.count(1) > 100 and caught >= 3, (caught, broken.status.count(1))


def test_the_source_as_shipped_passes_the_same_comparison(tmp_path):
    """The unmutated source built the same way agrees everywhere (the control)."""
    if compiler() is None or not SOURCE.exists():
        pytest.skip("no C compiler or no source here")
    built = _Counting(_build(tmp_path, SOURCE.read_text(), "control"))
    with _path("compiled", built), np.errstate(all="ignore"):
        for seed in range(1, 400, 2):
            g, g_prov, v, kw = _case(seed)
            assert _check(g, g_prov, v, kw, seed), seed
    assert built.status.count(1) > 100


def test_a_ring_run_takes_the_compiled_step_at_every_step(tmp_path, monkeypatch):
    """The benchmark's 64-owner run: every step compiled, and the recorded hash unchanged."""
    if pp_topk._kernel is None:
        pytest.skip("the compiled step is not built")
    from tests.test_perf_golden import CASES, GOLDEN, run_digest

    counting = _Counting(pp_topk._kernel)
    monkeypatch.setattr(pp_topk, "_kernel", counting)
    assert run_digest(CASES["bench-ppknn-64"], tmp_path) == GOLDEN["bench-ppknn-64"]
    assert counting.status == [1] * (64 * 2)  # 64 owners, 2 rounds


def test_the_sorted_rows_path_is_taken_and_the_sorting_one_otherwise(monkeypatch):
    monkeypatch.setattr(pp_topk, "_kernel", None)  # the numpy paths
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


@pytest.mark.parametrize("path", PATHS)
def test_rows_that_are_not_ascending_or_hold_nan_use_the_sorting_path(path):
    caught = 0
    with _path(path), np.errstate(all="ignore"):
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
    monkeypatch.setattr(pp_topk, "_kernel", None)  # the numpy paths
    caught = 0
    with np.errstate(all="ignore"):
        for seed in range(1, 200, 2):  # tied grids
            g, g_prov, v, kw = _case(seed)
            caught += not _check(g, g_prov, v, kw, seed)
    assert caught > 10


@pytest.mark.parametrize("path", PATHS)
def test_property_sorted_rows_equal_the_original(path):
    with _path(path):
        _property_sorted_rows_equal_the_original()


@settings(max_examples=300, deadline=None)
@given(k=st.integers(1, 6), q=st.integers(1, 6), data=st.data())
def _property_sorted_rows_equal_the_original(k, q, data):
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


@pytest.mark.parametrize("path", PATHS)
def test_floating_point_warnings_are_the_original_ones(path):
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
        if path == "compiled":  # the provenance the compiled step takes (numpy: both kinds)
            g_prov = g_prov.astype(PROVENANCE_DTYPE)
        with _path(path):
            got = messages(topk_step, g, g_prov, v, rng=np.random.default_rng(seed), **kw)
        want = messages(_original_topk_step, g, g_prov, v, rng=np.random.default_rng(seed),
                        **kw)
        assert got == want, seed
        warned += bool(want)
    assert warned > 5
