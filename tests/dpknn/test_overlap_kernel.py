"""The packed all-pairs route of the overlap graph gives the previous graph, exactly.

The reference is ``overlap.py`` as it was before the packed adjacency
(``tests/dpknn/reference/ref_overlap_dense.py``, verbatim): the same edges, component
labels and component count, on every case, by each route of the new code -- compiled
with up to eight-lane vectors (``8``: AVX-512 when the CPU has it), up to four (``4``:
AVX2), two-lane vectors (``2``), and numpy (``numpy``, the compiled test off, as an
install without a C compiler runs).

The compiled test is also held to the numpy pre-test's three-way classification of
every pair (edge for sure / borderline, for the exact test / not an edge): the cases
place pairs exactly at the exact test's threshold, and exactly on the pre-test's two
bounds, in full words (the vector code) and in a row's last, partial word (the scalar
code). Deliberately broken copies of the C source, built here, must fail the
comparison; the source as shipped, built the same way, passes it.
"""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

import numpy as np
import pytest

from ppknn.protocols.dp_knn import overlap
from ppknn.protocols.dp_knn.overlap import EDGE_SLACK, OverlapGraph
from tests.c_kernels import build_variant, compiler
from tests.dpknn.reference import ref_overlap_dense as ref

SOURCE = Path(overlap.__file__).with_name("_overlap_kernel.c")
SLACK = 1.0 + EDGE_SLACK
ROUTES = ("8", "4", "2", "numpy")
LANES = (8, 4, 2)


# --------------------------------------------------------------------------- routes
@pytest.fixture(params=ROUTES)
def route(request, monkeypatch):
    """The route under test: overlap's kernel (at most 8, 4 or 2 lanes) or none (numpy)."""
    if request.param == "numpy":
        monkeypatch.setattr(overlap, "_kernel", None)
    elif overlap._kernel is None:
        pytest.skip("the compiled test is not built")
    else:
        monkeypatch.setattr(overlap, "_KERNEL_LANES", int(request.param))
    return request.param


# --------------------------------------------------------------------------- cases
def _sure_ok(x: np.ndarray, r: np.ndarray) -> bool:
    return bool(len(x) and r.min() >= 1.0 / overlap._SAFE and r.max() <= overlap._SAFE
                and np.abs(x).max() <= overlap._SAFE)


def _bounds(ra: float, rb: float) -> tuple[float, float]:
    """The pre-test's two bounds on ``sq`` for radii ``ra``, ``rb``: (sure, near)."""
    reach = np.float64(ra + rb) * SLACK
    reach2 = reach * reach
    return float(reach2 * (1.0 - 1e-6)), float(reach2 * (1.0 + 1e-6) + 1e-300)


def _root(target: float) -> float | None:
    """A double ``s`` with ``s * s == target`` (rounded), if one is near ``sqrt(target)``."""
    s = np.sqrt(target)
    for _ in range(4):
        s = np.nextafter(s, 0.0)
    for _ in range(9):
        if s * s == target:
            return float(s)
        s = np.nextafter(s, np.inf)
    return None


def _place(rng, x: np.ndarray, r: np.ndarray, a: int, b: int, how: str) -> None:
    """Put the pair (a, b) on a boundary: every feature but the first equal, and
    ``x_a0 - x_b0`` a chosen distance (differences from 0.0 are exact)."""
    for _ in range(50):
        x[b] = x[a]
        x[a, 0] = 0.0
        if how == "threshold":  # distance == (r_a + r_b)(1 + EDGE_SLACK), +- 1 ulp
            dist = float(np.linalg.norm(x[a] - x[b]) or rng.uniform(0.05, 0.5))
            half = dist / (2.0 * SLACK)
            r[a] = r[b] = np.nextafter(half, [0.0, np.inf, half][int(rng.integers(3))])
            x[b, 0] = dist
            return
        sure, near = _bounds(r[a], r[b])
        s = _root(sure if how == "sure" else near)
        if s is not None:
            x[b, 0] = s
            return
        r[a] = np.nextafter(r[a], np.inf)  # another bound, another try


def _case(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = int(rng.choice([0, 1, 2, 3, 5, 40, 63, 64, 65, 100, 128, 130, 191, 257]))
    d = int(rng.choice([1, 2, 5, 20]))
    x = rng.random((q, d))
    kind = seed % 6
    if kind == 1:  # a grid: repeated points, tied distances
        x = np.round(x * 4) / 4
    if kind == 2 and q:  # duplicate rows
        x[rng.integers(0, q, q // 3)] = x[rng.integers(0, q, q // 3)]
    scale = np.sqrt(d) * rng.choice([0.05, 0.15, 0.4])
    r = rng.choice([0.25, 0.5, 1.0], q) * scale  # ties
    if q >= 2:
        for _ in range(max(1, q // 6)):
            a, b = (int(v) for v in rng.choice(q, 2, replace=False))
            _place(rng, x, r, a, b, str(rng.choice(["threshold", "sure", "near"])))
    if kind == 4 and q:  # beyond the safe range: nothing is sure, the exact test decides
        if seed // 6 % 3 == 0:
            r[0] = 1e-200
        elif seed // 6 % 3 == 1:
            x[-1, 0] = 1e150
        else:  # tiny: squared distances underflow (and the 1e-300 floor counts)
            x, r = x * 1e-155, r * 1e-158
    return x, r


CASES = range(96)


# --------------------------------------------------------------------------- comparisons
def _pack(edges: np.ndarray, n: int) -> np.ndarray:
    """The packed adjacency of an edge list, by the definition (both triangles)."""
    w = overlap._words(n)
    dense = np.zeros((n, 64 * w), dtype=bool)
    dense[edges[:, 0], edges[:, 1]] = True
    dense[edges[:, 1], edges[:, 0]] = True
    weights = np.uint64(1) << np.arange(64, dtype=np.uint64)
    return (dense.reshape(n, w, 64) * weights).sum(axis=2, dtype=np.uint64)


def _graph_problems(x: np.ndarray, r: np.ndarray, want=None) -> list[str]:
    """How the new overlap graph (the route set up) differs from the reference's."""
    want = ref.overlap_graph(x, r) if want is None else want
    got = overlap.overlap_graph(x, r)
    problems = []
    if got.n != want.n or got.n_components != want.n_components:
        problems.append(f"n / components {got.n, got.n_components} != {want.n, want.n_components}")
    if got.component.dtype != np.int64 or not np.array_equal(got.component, want.component):
        problems.append("component labels")
    if got.n_edges != len(want.edges):
        problems.append(f"n_edges {got.n_edges} != {len(want.edges)}")
    if got.packed is not None and not np.array_equal(got.packed, _pack(want.edges, want.n)):
        problems.append("packed adjacency")
    indptr, indices = got.csr()
    old_indptr, old_indices = want.csr()
    if not (np.array_equal(indptr, old_indptr) and np.array_equal(indices, old_indices)):
        problems.append("csr")
    edges = got.edges
    if edges.dtype != np.int64 or edges.shape != want.edges.shape \
            or not np.array_equal(edges, want.edges):
        problems.append("edges")
    if not np.array_equal(overlap.overlap_edges(x, r), want.edges):
        problems.append("overlap_edges")
    return problems


def _reference_classes(x: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numpy pre-test's (sure, borderline) pairs ``i < j``, as ``(q, q)`` bool."""
    q, d = x.shape
    sq = np.zeros((q, q))
    for k in range(d):  # feature by feature
        diff = x[:, k][:, None] - x[:, k][None, :]
        sq += diff * diff
    reach = r[:, None] + r[None, :]
    reach *= SLACK
    reach2 = reach * reach
    near = (sq <= reach2 * (1.0 + 1e-6) + 1e-300) & np.triu(np.ones((q, q), dtype=bool), 1)
    sure = near & (sq <= reach2 * (1.0 - 1e-6)) if _sure_ok(x, r) else np.zeros_like(near)
    return sure, near & ~sure


PATTERN = np.uint64(0xA5A5A5A5A5A5A5A5)


def _kernel_classes(kernel, x: np.ndarray, r: np.ndarray, lanes: int, seed: int):
    """The compiled test's (sure, borderline) pairs, row blocks of random sizes, and
    whether it wrote exactly the words it owns (row i's from i >> 6 on) and listed the
    borderline pairs in row-major order."""
    q, d = x.shape
    w = overlap._words(q)
    packed = np.full((q, w), PATTERN)
    xt = np.ascontiguousarray(x.T)
    cuts = np.unique(np.r_[0, np.random.default_rng(seed).integers(0, q + 1, 3), q])
    pairs = [np.zeros((0, 2), dtype=np.int64)]
    for start, stop in zip(cuts[:-1], cuts[1:]):
        border = kernel.rows(xt, r, q, d, int(start), int(stop), SLACK, _sure_ok(x, r), lanes,
                             packed)
        pairs.append(np.frombuffer(border, dtype=np.int64).reshape(-1, 2))
    row_word = np.arange(q)[:, None] >> 6
    own = np.arange(w)[None, :] >= row_word
    kept = bool(np.all(packed[~own] == PATTERN))
    bits = overlap.unpack_rows(np.where(own, packed, np.uint64(0)), q).astype(bool)
    listed = np.concatenate(pairs)
    border = np.zeros((q, q), dtype=bool)
    border[listed[:, 0], listed[:, 1]] = True
    ordered = bool(np.all(np.diff(listed[:, 0] * max(q, 1) + listed[:, 1]) > 0))
    return bits, border, kept and ordered


def _class_problems(kernel, x: np.ndarray, r: np.ndarray, seed: int) -> list[str]:
    want_sure, want_border = _reference_classes(x, r)
    problems = []
    for lanes in LANES:
        sure, border, tidy = _kernel_classes(kernel, x, r, lanes, seed)
        if not np.array_equal(sure, want_sure):
            problems.append(f"sure pairs (lanes <= {lanes})")
        if not np.array_equal(border, want_border):
            problems.append(f"borderline pairs (lanes <= {lanes})")
        if not tidy:
            problems.append(f"words written or pairs listed out of place (lanes <= {lanes})")
    return problems


def _counts(cases) -> dict[str, int]:
    """How often the cases reach each pre-test class and boundary (the comparison's reach)."""
    out = {"sure": 0, "border": 0, "border_safe": 0, "exact_edge": 0, "unsafe": 0, "tail": 0}
    for seed in cases:
        x, r = _case(seed)
        sure, border = _reference_classes(x, r)
        out["sure"] += int(sure.sum())
        out["border"] += int(border.sum())
        out["border_safe"] += int(border.sum()) if _sure_ok(x, r) else 0
        ii, jj = np.nonzero(border)
        out["exact_edge"] += int(overlap._exact(x, r, ii, jj).sum())
        out["unsafe"] += not _sure_ok(x, r)
        out["tail"] += int(border[:, 64 * (len(x) // 64):].sum())
    return out


# --------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("seed", CASES)
def test_the_graph_is_the_previous_graph(seed, route):
    x, r = _case(seed)
    assert _graph_problems(x, r) == []


def test_the_cases_reach_every_class():
    counts = _counts(CASES)
    assert counts["sure"] > 10_000 and counts["border_safe"] > 100, counts
    assert counts["exact_edge"] > 20 and counts["unsafe"] >= 10 and counts["tail"] > 20, counts


@pytest.mark.parametrize("seed", CASES)
def test_the_compiled_classes_are_the_numpy_pre_tests(seed):
    if overlap._kernel is None:
        pytest.skip("the compiled test is not built")
    x, r = _case(seed)
    assert _class_problems(overlap._kernel, x, r, seed) == []


_LARGE: dict = {}


def _large_reference(*key_and_batch):
    *key, x, r = key_and_batch
    if tuple(key) not in _LARGE:  # the same batch for every route: one reference graph
        _LARGE[tuple(key)] = ref.overlap_graph(x, r)
    return _LARGE[tuple(key)]


@pytest.mark.parametrize("q, d, reach, shift", [
    (4200, 2, 0.6, 0.0),  # dense: more than BRUTE_FORCE_MAX, all pairs tested
    (4160, 5, 0.9, 0.0),  # a multiple of 64: no partial word
    (4500, 3, 0.02, 0.0),  # sparse: the spatial index (no packed adjacency)
    (4300, 20, 1.2, 1e-200),  # dense, one radius beyond the safe range: all exact tests
])
def test_large_batches_give_the_previous_graph(q, d, reach, shift, route):
    rng = np.random.default_rng(q + d)
    x = rng.random((q, d))
    x[q // 2] = x[q // 3]  # a duplicate
    r = rng.choice([0.5, 1.0], q) * reach
    if shift:
        r[7] = shift
    assert (q <= overlap.BRUTE_FORCE_MAX or overlap._dense(x, r)) == (reach > 0.5)
    assert _graph_problems(x, r, want=_large_reference(q, d, reach, shift, x, r)) == []
    g = overlap.overlap_graph(x, r)
    assert (g.packed is None) == (reach < 0.5)


def test_every_pair_at_the_threshold_is_decided_by_the_exact_test(route):
    """Pairs exactly at ``(r_a + r_b)(1 + EDGE_SLACK)`` and one ulp either side."""
    rng = np.random.default_rng(5)
    q = 150
    x = np.zeros((q, 3))
    x[:, 0] = np.arange(q) * 10.0  # far apart: only the placed pairs can be edges
    r = np.full(q, 0.1)
    for a in range(0, q, 2):
        x[a + 1] = x[a]
        dist = rng.uniform(0.1, 1.0)
        x[a + 1, 1] = dist
        r[a] = r[a + 1] = np.nextafter(dist / (2.0 * SLACK), [0.0, np.inf, dist][a % 3])
    assert _graph_problems(x, r) == []
    g = overlap.overlap_graph(x, r)
    assert 0 < g.n_edges < q // 2  # some joined, some not


# --------------------------------------------------------------------------- the graph object
def test_a_packed_graph_keeps_no_edge_list_until_one_is_read():
    rng = np.random.default_rng(3)
    x, r = rng.random((300, 2)), np.full(300, 0.2)
    g = overlap.overlap_graph(x, r)
    want = ref.overlap_graph(x, r)
    assert g.packed is not None and g.packed.dtype == np.uint64 and g.packed.shape == (300, 5)
    assert not g.packed.flags.writeable
    assert g.n_edges == len(want.edges) > 1000
    g.csr(), g.adjacency(), repr(g), dataclasses.fields(g)
    assert "edges" not in vars(g)  # none of the above wrote the edges out
    edges = g.edges
    assert edges is g.edges and not edges.flags.writeable  # computed once, kept
    np.testing.assert_array_equal(edges, want.edges)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.n = 3
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        g.nope  # noqa: B018


def test_a_graph_built_from_edges_is_as_before():
    edges = np.array([[0, 1], [1, 2], [3, 4]], dtype=np.int64)
    g = OverlapGraph(n=5, edges=edges, component=np.array([0, 0, 0, 1, 1]), n_components=2)
    assert g.packed is None and g.edges is edges and g.n_edges == 3
    assert g.csr()[1].tolist() == [1, 0, 2, 1, 4, 3]
    both = OverlapGraph(n=5, edges=edges, component=g.component, n_components=2,
                        packed=_pack(edges, 5))
    assert [a.tolist() for a in both.csr()] == [a.tolist() for a in g.csr()]
    dropped = dataclasses.replace(both, edges=edges[:0], packed=None)  # the owner's plan cache
    assert dropped.n_edges == 0 and dropped.packed is None and dropped.n_components == 2
    with pytest.raises(TypeError):
        OverlapGraph(n=5, edges=edges)
    with pytest.raises(TypeError):
        OverlapGraph(n=5, component=g.component, n_components=2)
    with pytest.raises(ValueError, match="packed"):
        OverlapGraph(n=5, component=g.component, n_components=2,
                     packed=np.zeros((5, 2), dtype=np.uint64))


def test_the_bit_counts_without_numpy_bitwise_count(monkeypatch):
    """numpy < 2 has no ``bitwise_count``: a byte table counts the same bits."""
    rng = np.random.default_rng(4)
    packed = rng.integers(0, 2**63, (70, 2), dtype=np.uint64) | np.uint64(1 << 63)
    want = [sum(bin(int(v)).count("1") for v in row) for row in packed]
    assert overlap._row_degrees(packed).tolist() == want
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert overlap._row_degrees(packed).tolist() == want
    assert overlap._row_degrees(packed[:, ::-1]).tolist() == want  # not contiguous


@pytest.mark.parametrize("q", [0, 1, 2])
def test_tiny_batches(q, route):
    x, r = np.zeros((q, 2)), np.ones(q)
    g = overlap.overlap_graph(x, r)
    assert g.packed.shape == (q, overlap._words(q))
    assert g.edges.shape == (q * (q - 1) // 2, 2) and g.n_components == min(q, 1)
    assert g.component.tolist() == [0] * q


@pytest.mark.parametrize("kernel_on", [True, False])
def test_the_row_blocks_beat(monkeypatch, kernel_on):
    if not kernel_on:
        monkeypatch.setattr(overlap, "_kernel", None)
    elif overlap._kernel is None:
        pytest.skip("the compiled test is not built")
    beats = []
    monkeypatch.setattr(overlap, "beat", lambda: beats.append(1))
    monkeypatch.setattr(overlap, "_KERNEL_BLOCK_PAIRS", 600 * 30)  # 30 rows a call
    monkeypatch.setattr(overlap, "_BLOCK_PAIRS", 600 * 30)
    overlap.overlap_graph(np.random.default_rng(0).random((600, 2)), np.full(600, 0.1))
    assert len(beats) == 20


def test_the_kernel_checks_its_buffers():
    kernel = overlap._kernel
    if kernel is None:
        pytest.skip("the compiled test is not built")
    q, d = 70, 2
    xt, r = np.zeros((d, q)), np.ones(q)
    packed = np.zeros((q, 2), dtype=np.uint64)
    with pytest.raises(ValueError, match="packed"):
        kernel.rows(xt, r, q, d, 0, q, SLACK, True, True, packed[:, :1].copy())
    with pytest.raises(ValueError, match="r:"):
        kernel.rows(xt, r[:-1], q, d, 0, q, SLACK, True, True, packed)
    with pytest.raises(ValueError, match="start"):
        kernel.rows(xt, r, q, d, 5, 4, SLACK, True, True, packed)
    with pytest.raises(ValueError, match="out"):
        kernel.edges(packed, q, np.zeros((1, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="labels"):
        kernel.components(packed, q, np.zeros(q - 1, dtype=np.int64))
    labels = np.zeros(q, dtype=np.int64)
    labels.flags.writeable = False
    with pytest.raises(TypeError, match="read-write"):
        kernel.components(packed, q, labels)


# --------------------------------------------------------------------------- the C source
def _build(tmp_path: Path, text: str, name: str):
    """``text`` (a variant of the kernel's source) built and loaded as a module."""
    return build_variant(tmp_path, text, name, "_overlap_kernel")


MUTATION_CASES = range(0, 96, 2)


def _caught(kernel, monkeypatch) -> int:
    """Cases on which ``kernel`` fails the comparison (classes, then the graph), or makes
    it raise (a packed matrix the kernel's own checks reject)."""
    monkeypatch.setattr(overlap, "_kernel", kernel)
    caught = 0
    for seed in MUTATION_CASES:
        x, r = _case(seed)
        try:
            problems = _class_problems(kernel, x, r, seed)
            for lanes in LANES:
                monkeypatch.setattr(overlap, "_KERNEL_LANES", lanes)
                problems += _graph_problems(x, r)
        except ValueError as err:
            problems = [str(err)]
        caught += bool(problems)
    return caught


def test_the_compiled_test_is_built_where_a_c_compiler_is():
    """An install on a machine with a C compiler builds it (optional only for those without)."""
    if compiler() is None:
        pytest.skip("no C compiler here")
    assert overlap._kernel is not None
    assert overlap._kernel.lanes(2) == overlap._kernel.lanes(0) == 2  # GCC/Clang vectors


def test_the_widest_vectors_the_cpu_has_are_taken():
    """8 lanes where the CPU has AVX-512F, else 4 where it has AVX2 (x86-64), else 2."""
    if overlap._kernel is None:
        pytest.skip("the compiled test is not built")
    flags = Path("/proc/cpuinfo").read_text().split() if Path("/proc/cpuinfo").exists() else []
    if not flags or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("reads the x86-64 CPU's flags from /proc/cpuinfo")
    avx2, avx512 = "avx2" in flags, "avx512f" in flags
    assert overlap._kernel.lanes(8) == (8 if avx512 else 4 if avx2 else 2)
    assert overlap._kernel.lanes(4) == (4 if avx2 else 2)


@pytest.mark.parametrize("mutation", [
    # the sure test strict, in the vector code and in the scalar code
    ("in_a = near_a & ok & (vu)(sq_a <= reach2_a", "in_a = near_a & ok & (vu)(sq_a < reach2_a"),
    ("near & sure_ok & (sq <= reach2", "near & sure_ok & (sq < reach2"),
    ("near_b = (vu)(sq_b <= reach2_b", "near_b = (vu)(sq_b < reach2_b"),  # the near test strict
    ("#define SURE_MARGIN (1.0 - 1e-6)", "#define SURE_MARGIN (1.0)"),  # a margin dropped
    ("#define NEAR_MARGIN (1.0 + 1e-6)", "#define NEAR_MARGIN (1.0)"),
    ("#define UNDERFLOW_FLOOR 1e-300", "#define UNDERFLOW_FLOOR 0.0"),
    # off by one: the diagonal tested (scalar code, vector code's mask), the last column not
    ("base > i ? base : i + 1;  /* columns", "base > i ? base : i;  /* columns"),
    ("upper = ~(((uint64_t)2 << (i & 63)) - 1);", "upper = ~(((uint64_t)1 << (i & 63)) - 1);"),
    ("j1 = base + 64 < q ? base + 64 : q;", "j1 = base + 64 < q ? base + 64 : q - 1;"),
    ("sq_b += diff_b * diff_b;", "sq_b += diff_a * diff_b;"),  # a lane mixed up
    ("tj = ti; tj < w; tj++", "tj = ti + 1; tj < w; tj++"),  # diagonal tiles not mirrored
    ("k = lowest; k < w; k++", "k = lowest + 1; k < w; k++"),  # the search skips a word
    ("k = upper ? i >> 6 : 0;", "k = upper ? (i >> 6) + 1 : 0;"),  # edges: a word skipped
])
def test_a_broken_kernel_is_caught(tmp_path, monkeypatch, mutation):
    """Each deliberate change to the C source makes the comparison fail."""
    if compiler() is None or not SOURCE.exists():
        pytest.skip("no C compiler or no source here")
    text = SOURCE.read_text()
    assert text.count(mutation[0]) == 1, mutation[0]
    broken = _build(tmp_path, text.replace(*mutation), "broken")
    assert _caught(broken, monkeypatch) >= 1


def test_the_source_as_shipped_passes_the_same_comparison(tmp_path, monkeypatch):
    """The unmutated source built the same way agrees everywhere (the control)."""
    if compiler() is None or not SOURCE.exists():
        pytest.skip("no C compiler or no source here")
    built = _build(tmp_path, SOURCE.read_text(), "control")
    assert _caught(built, monkeypatch) == 0
