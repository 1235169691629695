"""The compiled clique search (``protocols/dp_knn/_clique_kernel.c``) is the Python one.

Bounds, paths, work units and limits are compared field by field with the Python path
of :mod:`protocols.dp_knn.cliques` on random dense components (one to three, 1 to 200
vertices, across word boundaries; single ones of 513 to 1,100), under budgets from one
unit to none, on overlap graphs built from points (the packed adjacency read directly),
and piece by piece (ordering, renumbering, colours, greedy clique). Deliberately broken
builds of the C source must be caught by the same comparison; the source as shipped,
built the same way, passes it (the control).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ppknn.protocols.dp_knn import cliques
from ppknn.protocols.dp_knn.cliques import clique_bounds
from ppknn.protocols.dp_knn.overlap import overlap_graph, pack_rows
from tests.c_kernels import build_variant, compiler
from tests.dpknn.test_clique_budget import FIELDS, _graph

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "protocols" / "dp_knn" / "_clique_kernel.c"
BUDGETS = [1, 100, 2_000, 20_000, 200_000, 2_000_000]

needs_kernel = pytest.mark.skipif(cliques._kernel is None,
                                  reason="the compiled clique search is not built")


def _cases(seeds):
    for seed in seeds:
        rng = np.random.default_rng(seed)
        sizes = tuple(int(v) for v in rng.choice([1, 2, 5, 63, 64, 65, 100, 130, 200],
                                                 size=int(rng.integers(1, 4))))
        yield seed, _graph(seed, sizes=sizes, p=float(rng.choice([0.3, 0.6, 0.8, 0.95])))


def _differs(kernel, graph, work_limit, monkeypatch) -> list[str]:
    """The fields in which ``kernel``'s bounds differ from the Python path's."""
    with monkeypatch.context() as m:
        m.setattr(cliques, "_kernel", None)
        want = clique_bounds(graph, work_limit=work_limit)
    with monkeypatch.context() as m:
        m.setattr(cliques, "_kernel", kernel)
        got = clique_bounds(graph, work_limit=work_limit)
    return [f for f in FIELDS if not np.array_equal(getattr(got, f), getattr(want, f))]


@needs_kernel
@pytest.mark.parametrize("block", range(4))
def test_compiled_bounds_are_the_python_bounds(block, monkeypatch):
    methods = set()
    for seed, g in _cases(range(block * 10, block * 10 + 10)):
        for work_limit in BUDGETS:
            assert _differs(cliques._kernel, g, work_limit, monkeypatch) == [], (seed, work_limit)
            methods |= set(clique_bounds(g, work_limit=work_limit).method.tolist())
    # finished searches, and stopped ones ended by the colouring and the partial search
    assert {2, 5} <= methods and (block > 0 or 3 in methods), methods


@needs_kernel
@pytest.mark.parametrize(("n", "p"), [(513, 0.5), (577, 0.9), (1100, 0.7)])
def test_compiled_bounds_beyond_eight_words_a_row_are_the_python_bounds(n, p, monkeypatch):
    """Components of more than 512 vertices: the renumbering's groups of 8 row blocks
    (and a last, partial group), the ordering's and greedy clique's counter blocks."""
    g = _graph(n, sizes=(n,), p=p)
    for work_limit in (2_000, 200_000):
        assert _differs(cliques._kernel, g, work_limit, monkeypatch) == [], work_limit


@needs_kernel
@pytest.mark.parametrize("seed", range(8))
def test_compiled_bounds_of_point_batches_are_the_python_bounds(seed, monkeypatch):
    """Overlap graphs from points: the packed adjacency is read as it is."""
    rng = np.random.default_rng(seed)
    q, d = int(rng.integers(3, 500)), int(rng.integers(1, 4))
    x = rng.random((q, d))
    r = rng.random(q) * float(rng.choice([0.03, 0.1, 0.3]))
    g = overlap_graph(x, r)
    for work_limit in [None, 1_000, 100_000] if q < 300 else [1_000, 100_000, 3_000_000]:
        assert _differs(cliques._kernel, g, work_limit, monkeypatch) == [], work_limit


@needs_kernel
@pytest.mark.parametrize("seed", range(6))
def test_components_above_the_dense_size_are_the_csr_paths_bounds(seed, monkeypatch):
    """A packed graph's big components go to the compiled path, not the CSR one: the same
    bounds (several components: the sub-matrices are read off the packed rows)."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.random((int(rng.integers(20, 200)), 2)) + 3 * c
                        for c in range(int(rng.integers(1, 4)))])
    g = overlap_graph(x, np.full(len(x), float(rng.choice([0.08, 0.2]))))
    assert g.packed is not None
    monkeypatch.setattr(cliques, "_DENSE_MAX", 10)
    for work_limit in (None, 5_000):
        got = clique_bounds(g, work_limit=work_limit)
        with monkeypatch.context() as m:
            m.setattr(cliques, "_kernel", None)
            want = clique_bounds(g, work_limit=work_limit)
        assert [f for f in FIELDS
                if not np.array_equal(getattr(got, f), getattr(want, f))] == [], work_limit


@needs_kernel
def test_the_sub_matrix_of_a_packed_graph_is_read_in_blocks():
    rng = np.random.default_rng(3)
    upper = np.triu(rng.random((300, 300)) < 0.4, 1)
    adj = upper | upper.T
    nodes = np.sort(rng.choice(300, 170, replace=False))
    packed = pack_rows(adj, 5)
    for rows in (None, 7, 1):  # one block, blocks of 7 rows, row by row
        np.testing.assert_array_equal(cliques._sub_packed(packed, nodes, rows),
                                      pack_rows(adj[nodes][:, nodes], 3))


@needs_kernel
@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_pieces_are_the_python_pieces(seed):
    kernel = cliques._kernel
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 63, 64, 65, 129, 300]))
    upper = np.triu(rng.random((n, n)) < float(rng.choice([0.1, 0.5, 0.9])), 1)
    adj = upper | upper.T
    packed = pack_rows(adj, (n + 63) // 64)

    def drop(key, v):
        key -= adj[v]

    order, degeneracy = cliques._degeneracy_scan(adj.sum(axis=1, dtype=np.int64), drop)
    got_order, got_degeneracy = kernel.degeneracy(packed, n)
    np.testing.assert_array_equal(np.frombuffer(got_order, dtype=np.int64), order)
    assert got_degeneracy == degeneracy
    sl = order[::-1].copy()
    m = adj[sl][:, sl]
    nbrs = kernel.reorder(packed, n, sl)
    np.testing.assert_array_equal(np.frombuffer(nbrs, dtype="<u8").reshape(n, -1),
                                  pack_rows(m, (n + 63) // 64))
    bitsets = [int.from_bytes(row.tobytes(), "little")
               for row in np.packbits(m, axis=1, bitorder="little")]
    assert kernel.colours(nbrs, n) == cliques._colour_count(cliques._outside(bitsets))
    assert kernel.greedy(nbrs, n) == cliques._greedy_clique(bitsets, m)


@needs_kernel
def test_the_compiled_search_ticks_after_every_64th_charge(monkeypatch):
    """The beat and the clock cap are read where the Python path reads them."""
    g = _graph(3, sizes=(130, 90))
    counted = []
    real = cliques._Limits.charge

    def counting(self, units):
        counted.append(units)
        return real(self, units)

    with monkeypatch.context() as m:
        m.setattr(cliques, "_kernel", None)
        m.setattr(cliques._Limits, "charge", counting)
        want = clique_bounds(g, work_limit=None)
    ticks = []
    real_tick = cliques._Limits.tick
    monkeypatch.setattr(cliques._Limits, "tick", lambda self: ticks.append(1) or real_tick(self))
    got = clique_bounds(g, work_limit=None)
    assert int(got.work.sum()) == int(want.work.sum()) == sum(counted)
    assert len(ticks) == len(counted) // 64 > 0


@needs_kernel
def test_a_tick_that_raises_ends_the_compiled_search_with_its_error(monkeypatch):
    def boom(self):
        raise RuntimeError("stop here")

    monkeypatch.setattr(cliques._Limits, "tick", boom)
    with pytest.raises(RuntimeError, match="stop here"):
        clique_bounds(_graph(3, sizes=(130,)), work_limit=None)


@needs_kernel
def test_the_compiled_kernel_refuses_a_buffer_of_the_wrong_size():
    with pytest.raises(ValueError, match="expected"):
        cliques._kernel.search(b"\0" * 8, 65, 2, 3, -1, 0, None)
    with pytest.raises(ValueError, match="permutation"):
        cliques._kernel.reorder(np.zeros((3, 1), dtype="<u8"), 3, np.array([0, 0, 1]))


# ------------------------------------------------------------------ broken builds are caught
def _build(tmp_path: Path, text: str, name: str):
    """``text`` (a variant of the kernel's source) built and loaded as a module."""
    return build_variant(tmp_path, text, name, "_clique_kernel")


def _caught(kernel, monkeypatch) -> int:
    return sum(bool(_differs(kernel, g, work_limit, monkeypatch))
               for _, g in _cases(range(12)) for work_limit in (2_000, 200_000))


needs_compiler = pytest.mark.skipif(compiler() is None or not SOURCE.exists(),
                                    reason="no C compiler or no source here")


@needs_compiler
@pytest.mark.parametrize("mutation", [
    ("if (colour >= lowest) {", "if (colour > lowest) {"),  # a colour class not listed
    ("    f->i -= 1;", "    f->i -= 2;"),  # the parent resumes one vertex too far on
    ("if (units > s->left) {", "if (units >= s->left) {"),  # the budget stops one unit early
    ("memcpy(dst + i * w, tr + perm[i] * w,", "memcpy(dst + i * w, tr + i * w,"),  # renumbering
    ("if (score[v] < 0) break;", "if (score[v] <= 0) break;"),  # the greedy clique cut short
    # the ordering: one neighbour's key not decremented
    ("if (x) sub_bits(key + k * 64, x);", "if (x) sub_bits(key + k * 64, x & (x - 1));"),
    # the greedy clique: one score not decremented
    ("if (y) sub_bits(score + j * 64, y);", "if (y) sub_bits(score + j * 64, y & (y - 1));"),
    ("BITS8[b][l] = (b >> l) & 1;", "BITS8[b][l] = (b >> l) & 1 & (l != 7);"),  # a lane lost
    ("if (m < best) best = m, at = lo;", "if (m <= best) best = m, at = lo;"),  # a later tie
    ("if (m > best) best = m, at = lo;", "if (m >= best) best = m, at = lo;"),
])
def test_a_broken_compiled_search_is_caught(tmp_path, monkeypatch, mutation):
    text = SOURCE.read_text()
    assert text.count(mutation[0]) == 1
    broken = _build(tmp_path, text.replace(*mutation), "broken")
    assert _caught(broken, monkeypatch) > 0


@needs_compiler
def test_a_renumbering_that_drops_a_block_of_a_large_component_is_caught(tmp_path, monkeypatch):
    """A group of row blocks cut one short (seen only above 512 vertices)."""
    mutation = ("Py_ssize_t b1 = b0 + 8 < w ? b0 + 8 : w;",
                "Py_ssize_t b1 = b0 + 8 < w ? b0 + 7 : w;")
    text = SOURCE.read_text()
    assert text.count(mutation[0]) == 1
    broken = _build(tmp_path, text.replace(*mutation), "broken")
    assert _differs(broken, _graph(577, sizes=(577,), p=0.9), 200_000, monkeypatch)


@needs_compiler
def test_the_source_as_shipped_passes_the_same_comparison(tmp_path, monkeypatch):
    assert _caught(_build(tmp_path, SOURCE.read_text(), "control"), monkeypatch) == 0


@needs_compiler
def test_the_baseline_copy_of_the_vectorised_loops_passes_too(tmp_path, monkeypatch):
    """The loops compiled twice (AVX2 and the baseline, ``WIDE``) give the same results in
    the copy a CPU without AVX2 runs: built here with one baseline copy only."""
    text = SOURCE.read_text()
    wide = '#define WIDE __attribute__((target_clones("avx2", "default")))'
    assert text.count(wide) == 1
    baseline = _build(tmp_path, text.replace(wide, "#define WIDE"), "baseline")
    assert _caught(baseline, monkeypatch) == 0


def test_the_compiled_search_is_built_where_a_c_compiler_is():
    """An install on a machine with a C compiler builds it (optional only for those without)."""
    if compiler() is None:
        pytest.skip("no C compiler here")
    assert cliques._kernel is not None
