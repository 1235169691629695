"""The region overlap graph of a batch of r-N test instances (Definition 10).

Vertex i is the test instance ``(x_i, r_i)``; an edge joins i and j iff their
closed proximity balls intersect, ``δ(x_i, x_j) <= r_i + r_j``. A sparse
batch's graph is built with a spatial index, not by comparing all pairs: radii are grouped
into power-of-two buckets, and for each pair of buckets a
:class:`scipy.spatial.cKDTree` range search with the buckets' largest radii
returns the candidate pairs, which are then filtered exactly. A candidate is
at most twice as far as needed, so the work is proportional to the edges
(within a constant), not to ``Q**2``; each pair is found once, so a plain sort
of the pair keys orders the edges (no hashing, no duplicate removal). Small
batches (``Q <= BRUTE_FORCE_MAX``), and large ones whose sample of rows joins at
least :data:`DENSE_SHARE` of the pairs, test every pair directly, in row blocks:
the same exact filter on a candidate set that holds every pair, so the edges are
the same. On dense graphs (the converted k-NN radii join a third to a half of
all pairs) the edges themselves are quadratic, so this route writes no edge
list: it fills a packed dense adjacency (:attr:`OverlapGraph.packed`, one bit
per pair, ``n**2 / 8`` bytes) and labels the components from it; the edge list
is computed from it only when :attr:`OverlapGraph.edges` is read. The test of
every pair is compiled (``_overlap_kernel.c``) when the extension is built, and
runs in numpy otherwise, with the same bits.

Edges are kept with a relative slack of ``EDGE_SLACK``: two balls that share
a training point as the ball counts see it (distances computed in floating
point) are always joined, so rounding can only add edges, which only
raises the clique size used as sensitivity (still a valid bound).

Examples
--------
>>> import numpy as np
>>> g = overlap_graph(np.array([[0.0], [1.5], [10.0]]), np.array([1.0, 1.0, 1.0]))
>>> g.edges.tolist(), g.component.tolist(), g.n_components
([[0, 1]], [0, 0, 1], 2)
>>> g.n_edges, g.packed.shape, [bin(int(w)) for w in g.packed[:, 0]]
(1, (3, 1), ['0b10', '0b1', '0b0'])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from ppknn.core.progress import beat

try:  # the all-pairs test compiled (built by pip install when a C compiler is there; optional)
    from ppknn.protocols.dp_knn import _overlap_kernel as _kernel
except ImportError:  # pragma: no cover - exercised by the tests' kernel-off runs
    _kernel = None

EDGE_SLACK = 1e-9
"""Relative slack on ``r_i + r_j`` (floating-point safety; adds edges only)."""

BRUTE_FORCE_MAX = 4096
"""Largest batch whose pairs are all tested directly (no spatial index)."""

DENSE_SHARE = 1 / 32
"""Share of joined pairs (in a sample) from which a large batch tests every pair."""

DENSE_SAMPLE = 128
"""Rows (evenly spaced) whose pairs estimate the share of joined pairs."""

_BLOCK_PAIRS = 1 << 16
"""Pairs tested per block by the direct test in numpy (bounds its memory; cache-sized)."""

_KERNEL_BLOCK_PAIRS = 1 << 21
"""Pairs tested per call of the compiled test (a beat between calls, a few ms apart)."""

_KERNEL_LANES = 8
"""The most columns per vector the compiled test may use (the CPU's widest of 8 with
AVX-512, 4 with AVX2, else 2): any count gives the same bits."""

_UNPACK_BYTES = 1 << 22
"""Unpacked adjacency bytes per block when the edges or the CSR are read off ``packed``."""

_SAFE = 1e140
"""Radii and coordinates within ``[1/_SAFE, _SAFE]`` keep squared distances normal numbers."""


@dataclass(frozen=True, init=False, repr=False, eq=False)
class OverlapGraph:
    """The region overlap graph and its connected components.

    Built from an edge list (``OverlapGraph(n=..., edges=..., component=...,
    n_components=...)``), from a packed dense adjacency (``packed=...`` instead of
    ``edges``), or from both, which must then be the same graph. Read-only: the
    attributes cannot be reassigned, and ``packed`` as :func:`overlap_graph` builds
    it and ``edges`` read off ``packed`` are not writeable arrays.

    Attributes
    ----------
    n:
        Number of vertices (test instances).
    edges:
        ``(E, 2)`` int64 array of vertex pairs ``i < j``, sorted by ``(i, j)``. When
        the graph was given ``packed`` only, computed from it on the first read
        (and kept): ``16 E`` bytes, which :attr:`n_edges`, :meth:`csr` and
        :meth:`adjacency` do not need.
    component:
        ``(n,)`` connected-component label of every vertex, ``0..n_components-1``
        (numbered by their smallest vertex).
    n_components:
        Number of connected components (disconnected subgraphs).
    packed:
        The adjacency matrix packed into bits, ``(n, (n + 63) // 64)`` uint64: bit
        ``j & 63`` (least significant first) of word ``j >> 6`` of row ``i`` is set
        iff ``i`` and ``j`` are joined; symmetric, zero diagonal, no bit at or beyond
        column ``n``. Present when given, as :func:`overlap_graph` gives it for the
        batches whose pairs it all tests (small or dense ones), else ``None``.
    """

    n: int
    edges: np.ndarray
    component: np.ndarray
    n_components: int
    packed: np.ndarray | None

    def __init__(self, n: int, edges: np.ndarray | None = None,
                 component: np.ndarray | None = None, n_components: int | None = None,
                 packed: np.ndarray | None = None) -> None:
        if component is None or n_components is None:
            raise TypeError("OverlapGraph needs component and n_components")
        if edges is None and packed is None:
            raise TypeError("OverlapGraph needs edges, packed, or both")
        if packed is not None and (packed.dtype != np.uint64
                                   or packed.shape != (n, _words(n))):
            raise ValueError(f"packed must be ({n}, {_words(n)}) uint64, "
                             f"not {packed.shape} {packed.dtype}")
        object.__setattr__(self, "n", n)
        if edges is not None:
            object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "component", component)
        object.__setattr__(self, "n_components", n_components)
        object.__setattr__(self, "packed", packed)

    def __getattr__(self, name: str):
        # only reached when ``edges`` was not given (nor computed yet): read it off packed
        packed = self.__dict__.get("packed") if name == "edges" else None
        if packed is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        edges = _packed_edges(packed)
        edges.flags.writeable = False
        object.__setattr__(self, "edges", edges)
        return edges

    def __repr__(self) -> str:
        return (f"OverlapGraph(n={self.n}, n_edges={self.n_edges}, "
                f"n_components={self.n_components}, packed={self.packed is not None})")

    @cached_property
    def n_edges(self) -> int:
        """Number of edges ``E``: ``len(edges)`` when held, else half the packed bits."""
        edges = self.__dict__.get("edges")
        if edges is not None:
            return len(edges)
        return int(_row_degrees(self.packed).sum()) // 2

    def degrees(self) -> np.ndarray:
        """``(n,)`` int64: every vertex's degree (off ``packed`` when held: no edge list)."""
        if self.packed is not None:
            return _row_degrees(self.packed)
        e = self.edges
        return np.bincount(e.ravel(), minlength=self.n).astype(np.int64)

    def adjacency(self) -> sparse.csr_matrix:
        """The symmetric boolean adjacency matrix (CSR, sorted column indices)."""
        indptr, indices = self.csr()
        return sparse.csr_matrix(
            (np.ones(len(indices), dtype=bool), indices, indptr), shape=(self.n, self.n)
        )

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` int64 of :meth:`adjacency`: row v lists v's neighbours, ascending.

        With ``packed``, read off its rows (no edge list). Otherwise built from the
        sorted edges by one stable sort of the rows: for a row v, the entries of
        edges ``(i, v)`` come first (ascending i, as the edges are sorted) and those
        of edges ``(v, j)`` next (ascending j).
        """
        if self.packed is not None:
            return _packed_csr(self.packed)
        i, j = self.edges[:, 0], self.edges[:, 1]
        rows = np.concatenate([j, i])
        cols = np.concatenate([i, j])
        key = rows.astype(np.uint16) if self.n <= 1 << 16 else rows  # radix sort when it can
        order = np.argsort(key, kind="stable")
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n), out=indptr[1:])
        return indptr, cols[order].astype(np.int64, copy=False)


def _bucket_pairs(tree_a: cKDTree, tree_b: cKDTree, reach: float, same: bool) -> np.ndarray:
    if same:
        return tree_a.query_pairs(reach, output_type="ndarray").astype(np.int64)
    coo = tree_a.sparse_distance_matrix(tree_b, reach, output_type="ndarray")
    return np.stack([coo["i"], coo["j"]], axis=1).astype(np.int64)


def overlap_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Edges ``i < j`` with ``δ(x_i, x_j) <= (r_i + r_j)(1 + EDGE_SLACK)``, sorted.

    ``x`` is ``(Q, D)``, ``r`` is ``(Q,)`` with positive entries (callers
    validate; see :mod:`protocols.dp_knn.validation`).
    """
    x = np.asarray(x, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    if _all_pairs(x, r):
        return _all_pair_edges(x, r)
    return _tree_edges(x, r)


def _all_pairs(x: np.ndarray, r: np.ndarray) -> bool:
    """Whether the graph is built by testing every pair (small or dense batches)."""
    return len(x) <= BRUTE_FORCE_MAX or _dense(x, r)


def _tree_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`overlap_edges` by the spatial index (the bucket searches)."""
    bucket = np.floor(np.log2(r)).astype(np.int64)
    keys = np.unique(bucket)
    members = [np.flatnonzero(bucket == b) for b in keys]
    trees = [cKDTree(x[m]) for m in members]
    rmax = [float(r[m].max()) for m in members]
    found = []
    for a in range(len(keys)):
        beat()
        for b in range(a, len(keys)):
            reach = (rmax[a] + rmax[b]) * (1.0 + EDGE_SLACK)
            local = _bucket_pairs(trees[a], trees[b], reach, same=a == b)
            if local.size:
                found.append(np.stack([members[a][local[:, 0]], members[b][local[:, 1]]], axis=1))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found)
    pairs = np.sort(pairs, axis=1)  # i < j
    dist = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    keep = dist <= (r[pairs[:, 0]] + r[pairs[:, 1]]) * (1.0 + EDGE_SLACK)
    pairs = pairs[keep & (pairs[:, 0] != pairs[:, 1])]
    if not pairs.size:
        return np.zeros((0, 2), dtype=np.int64)
    # each pair was found once (by the search of its two buckets), so a sort of the
    # keys (no hashing, no duplicate removal) orders the edges by (i, j)
    n = np.int64(len(x))
    key = pairs[:, 0] * n + pairs[:, 1]
    del pairs
    key.sort()
    return np.stack([key // n, key % n], axis=1)


def _dense(x: np.ndarray, r: np.ndarray) -> bool:
    """Whether a sample of rows joins at least :data:`DENSE_SHARE` of all pairs.

    Then testing every pair costs little more than writing the edges out, and less
    than the tree searches (which find up to twice as far as needed).
    """
    q = len(x)
    take = np.unique(np.linspace(0, q - 1, min(q, DENSE_SAMPLE)).astype(np.int64))
    reach = (r[take][:, None] + r[None, :]) * (1.0 + EDGE_SLACK)
    share = float(np.mean(cdist(x[take], x, "sqeuclidean") <= reach * reach))
    return share >= DENSE_SHARE


def _all_pair_edges(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`overlap_edges` by testing every pair: the edges of :func:`_all_pair_packed`."""
    return _packed_edges(_all_pair_packed(x, r))


def _all_pair_packed(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The packed adjacency (:attr:`OverlapGraph.packed`) by testing every pair.

    A pre-test with a generous margin sorts the pairs into three kinds: outside
    ``sq <= reach**2 (1 + 1e-6) + 1e-300`` (``sq`` the squared distance, the
    feature-by-feature sum of squared differences; ``reach = (r_i + r_j)(1 +
    EDGE_SLACK)``), not an edge; inside ``sq <= reach**2 (1 - 1e-6)``, an edge for
    sure, when every value is far from floating-point underflow and overflow
    (:data:`_SAFE`); any other candidate, tested exactly as on the tree path (the
    same distance expression, pair by pair, :func:`_exact`). The margins dwarf the
    rounding of either side, so every pair gets the exact test's answer, and the
    edges are the tree path's. Compiled (``_overlap_kernel.rows``, the upper
    triangle, then mirrored) when the extension is built, else in numpy (both
    triangles); the same bits either way. Row blocks, a beat between blocks.
    """
    x = np.asarray(x, dtype=np.float64)
    r = np.ascontiguousarray(r, dtype=np.float64)
    q = len(x)
    sure_ok = bool(q and r.min() >= 1.0 / _SAFE and r.max() <= _SAFE
                   and np.abs(x).max() <= _SAFE)
    if _kernel is not None:
        packed = _packed_compiled(x, r, sure_ok)
    else:
        packed = _packed_numpy(x, r, sure_ok)
    packed.flags.writeable = False
    return packed


def _exact(x: np.ndarray, r: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact edge test of the pairs ``(a, b)``, ``a < b`` (the tree path's expression)."""
    dist = np.linalg.norm(x[a] - x[b], axis=1)
    return dist <= (r[a] + r[b]) * (1.0 + EDGE_SLACK)


def _packed_compiled(x: np.ndarray, r: np.ndarray, sure_ok: bool) -> np.ndarray:
    q, d = x.shape
    packed = np.zeros((q, _words(q)), dtype=np.uint64)
    xt = np.ascontiguousarray(x.T)  # feature by feature: each feature's column contiguous
    rows = max(1, _KERNEL_BLOCK_PAIRS // max(1, q))
    for start in range(0, q, rows):
        beat()  # a big request's graph takes a while: the step is still working
        stop = min(q, start + rows)
        border = _kernel.rows(xt, r, q, d, start, stop, 1.0 + EDGE_SLACK, sure_ok,
                              _KERNEL_LANES, packed)
        pairs = np.frombuffer(border, dtype=np.int64).reshape(-1, 2)
        if len(pairs):
            a, b = pairs[:, 0], pairs[:, 1]
            keep = _exact(x, r, a, b)
            _set_bits(packed, a[keep], b[keep])
    _kernel.symmetrize(packed, q)
    return packed


def _packed_numpy(x: np.ndarray, r: np.ndarray, sure_ok: bool) -> np.ndarray:
    q = len(x)
    w = _words(q)
    packed = np.zeros((q, w), dtype=np.uint64)
    rows = max(1, max(_BLOCK_PAIRS, 16 * q) // max(1, q))  # >= 16 rows: per-block overhead
    for start in range(0, q, rows):
        beat()  # a big request's graph takes seconds: the step is still working
        stop = min(q, start + rows)
        i = np.arange(start, stop)
        sq = cdist(x[i], x, "sqeuclidean")  # every column: both triangles
        reach = r[i][:, None] + r[None, :]
        reach *= 1.0 + EDGE_SLACK
        reach2 = reach * reach
        # margin: the pre-test's rounding differs from the exact test's by far less
        near = sq <= reach2 * (1.0 + 1e-6) + 1e-300
        near[np.arange(len(i)), i] = False  # no loops
        if sure_ok:
            reach2 *= 1.0 - 1e-6
            keep = near & (sq <= reach2)
        else:
            keep = np.zeros_like(near)
        ti, tj = np.nonzero(near & ~keep)
        if ti.size:
            a, b = np.minimum(i[ti], tj), np.maximum(i[ti], tj)
            keep[ti, tj] = _exact(x, r, a, b)
        packed[start:stop] = pack_rows(keep, w)
    return packed


def _words(n: int) -> int:
    """uint64 words per packed row of ``n`` columns."""
    return (n + 63) // 64


def pack_rows(bits: np.ndarray, w: int) -> np.ndarray:
    """``(m, n)`` bool rows packed into ``(m, w)`` uint64 (bit j: word j >> 6, bit j & 63)."""
    by = np.packbits(bits, axis=1, bitorder="little")
    out = np.zeros((len(bits), 8 * w), dtype=np.uint8)
    out[:, :by.shape[1]] = by
    return out.view("<u8").astype(np.uint64, copy=False)


def unpack_rows(packed: np.ndarray, n: int) -> np.ndarray:
    """``(m, w)`` packed rows as ``(m, n)`` uint8 zeros and ones."""
    by = packed.astype("<u8", copy=False).view(np.uint8)
    return np.unpackbits(by, axis=1, count=n, bitorder="little")


def _set_bits(packed: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Set bit ``(a, b)`` of ``packed`` for every pair (repeated words are all kept)."""
    np.bitwise_or.at(packed, (a, b >> 6), np.left_shift(np.uint64(1), (b & 63).astype(np.uint64)))


_POPCOUNT8 = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)


def _row_degrees(packed: np.ndarray) -> np.ndarray:
    """Set bits of every packed row, int64."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(packed).sum(axis=1, dtype=np.int64)
    by = np.ascontiguousarray(packed).view(np.uint8)
    return _POPCOUNT8[by].sum(axis=1, dtype=np.int64)


def _unpack_blocks(packed: np.ndarray):
    """``(start, bits)`` for row blocks of ``packed``, ``bits`` the unpacked ``(m, n)`` rows."""
    n = len(packed)
    rows = max(1, _UNPACK_BYTES // max(1, n))
    for start in range(0, n, rows):
        yield start, unpack_rows(packed[start:start + rows], n)


def _packed_edges(packed: np.ndarray) -> np.ndarray:
    """The edges ``i < j`` of a packed adjacency, int64 ``(E, 2)``, sorted by ``(i, j)``."""
    if _kernel is not None:
        edges = np.empty((int(_row_degrees(packed).sum()) // 2, 2), dtype=np.int64)
        _kernel.edges(np.ascontiguousarray(packed), len(packed), edges)
        return edges
    found = []
    for start, bits in _unpack_blocks(packed):
        ii, jj = np.nonzero(np.triu(bits, start + 1))  # row-major: sorted by (i, j)
        found.append(np.stack([ii + start, jj], axis=1))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(found).astype(np.int64, copy=False)


def _packed_csr(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, indices)`` int64 of a packed adjacency: every row's set columns, ascending."""
    n = len(packed)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(_row_degrees(packed), out=indptr[1:])
    if _kernel is not None:
        indices = np.empty(indptr[-1], dtype=np.int64)
        _kernel.columns(np.ascontiguousarray(packed), n, indices)
        return indptr, indices
    found = [np.nonzero(bits)[1] for _, bits in _unpack_blocks(packed)]
    indices = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return indptr, indices.astype(np.int64, copy=False)


def _packed_components(packed: np.ndarray) -> tuple[int, np.ndarray]:
    """``(n_components, labels)`` of a packed adjacency, numbered by their smallest vertex.

    A breadth-first search from each vertex not reached yet, in increasing order
    (compiled when built; in numpy one level at a time over the rows' bits).
    """
    n = len(packed)
    labels = np.empty(n, dtype=np.int64)
    if _kernel is not None:
        return int(_kernel.components(np.ascontiguousarray(packed), n, labels)), labels
    unseen = pack_rows(np.ones((1, n), dtype=bool), _words(n))[0]
    n_comp, low = 0, 0
    while True:
        while low < len(unseen) and not unseen[low]:
            low += 1
        if low == len(unseen):
            return n_comp, labels
        word = int(unseen[low])
        frontier = np.array([64 * low + (word & -word).bit_length() - 1])
        unseen[frontier >> 6] &= ~(np.uint64(1) << (frontier & 63).astype(np.uint64))
        while frontier.size:
            labels[frontier] = n_comp
            new = np.bitwise_or.reduce(packed[frontier], axis=0) & unseen
            unseen &= ~new
            frontier = np.flatnonzero(unpack_rows(new[None, :], n)[0])
        n_comp += 1


def overlap_graph(x: np.ndarray, r: np.ndarray) -> OverlapGraph:
    """Build the region overlap graph of ``(x, r)`` and label its components.

    Small and dense batches (every pair tested) give a graph with ``packed`` and no
    edge list until one is read; sparse ones, found by the spatial index, give the
    edge list and ``packed=None``. The same edges and labels either way.
    """
    x = np.asarray(x, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    n = x.shape[0]
    if _all_pairs(x, r):
        packed = _all_pair_packed(x, r)
        n_comp, component = _packed_components(packed)
        return OverlapGraph(n=n, component=component, n_components=n_comp, packed=packed)
    edges = _tree_edges(x, r)
    adj = sparse.coo_matrix(
        (np.ones(len(edges), dtype=bool), (edges[:, 0], edges[:, 1])), shape=(n, n)
    )
    n_comp, labels = connected_components(adj, directed=False)
    # renumber components by their smallest vertex (deterministic, readable)
    first = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    rank = np.empty(n_comp, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_comp)
    return OverlapGraph(n=n, edges=edges, component=rank[labels], n_components=int(n_comp))


__all__ = ["EDGE_SLACK", "OverlapGraph", "overlap_edges", "overlap_graph", "pack_rows",
           "unpack_rows"]
