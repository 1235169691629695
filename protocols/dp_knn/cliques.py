"""Maximum clique size per connected component, exactly under a work budget.

The proposed r-N classifier calibrates its noise to ``MCS(G_sub)``, the
clique number of each connected component of the region overlap graph
(Lemma 3: no training point lies in more test regions than that). Maximum
clique is NP-hard, so the search runs under a **deterministic work budget**
and any component it cannot finish gets a **valid upper bound** instead -- a
larger value only adds noise, so privacy never depends on the search
finishing, and the bound reached depends on the graph and the budget only,
never on the machine's speed or load: the same seed gives the same answer
everywhere.

Per component:

1. Trivial cases: a single vertex (1) or a complete component (its size).
2. Upper bounds: a *degeneracy ordering* (repeatedly remove a vertex of
   minimum degree) gives ``ω <= degeneracy + 1``; a greedy colouring in
   smallest-last order gives ``ω <= χ <= colours``. ``ub`` is the smaller.
3. Exact search: branch and bound with greedy-colouring bounds (Tomita &
   Seki's MCQ), vertex sets as Python integers used as bitsets, starting
   from the size of a greedily found clique (components up to 12,288
   vertices), so branches that cannot beat it are cut from the start. The
   search is depth-first with an explicit stack (cliques of thousands of
   vertices are as many levels deep), visiting the nodes of the recursive
   formulation in its order. It
   stops as soon as a clique of size ``ub`` is found. Vertices whose colour
   cannot lead past the best clique are coloured but not listed. networkx has no exact
   clique routine that can be interrupted (``max_weight_clique`` runs to
   the end; ``find_cliques`` enumerates every maximal clique), so the
   search is written here and checked against ``networkx.max_weight_clique``
   in the tests.
4. The budget is checked at every node of the search. On exhaustion the
   component's value is ``min(colours, degeneracy + 1, partial)``, where
   ``partial = max(best, c)`` and c is the colour bound of the top-level
   branch being searched: every clique not yet ruled out lies among the
   top-level vertices not yet taken out, whose clique number is at most c.

Work units
----------
The search counts its work in units proportional to its cost and
independent of the clock. With ``w = (n + 63) // 64`` the length in 64-bit
words of a bitset of the component's ``n`` vertices (every set operation of
the search is on such a bitset):

* each node of the search (one branch on one vertex: one intersection) costs ``w``;
* each colour sort of a candidate set ``p`` costs ``popcount(p) * w`` (one
  intersection per vertex coloured), charged before it runs.

The search stops as soon as the units spent exceed ``work_limit``. The budget
is shared by the components of one graph, searched largest first (the rest
of the budget passes on to the next). The preparation (degeneracy ordering,
colouring, greedy clique) is deterministic and is not counted.
:data:`DEFAULT_CLIQUE_WORK` (7.5×10^8) is calibrated on the phoneme graphs of
``benchmarks/bench_dp_owner_scaling.py``: the exact clique number of 5,000
queries takes 7.0×10^8 units (which a 5 s clock reached on an idle 2-core
machine), and at 10,000 queries the budget costs about 3.5 s of search there
(``docs/benchmarks/dp-owner-scaling.md``).

Compiled
--------
Components of a packed graph (up to :data:`_COMPILED_MAX` vertices) are searched by an
optional C extension (``_clique_kernel.c``) when it is built: the same ordering,
renumbering, colouring, greedy clique and search on the same bitsets, charging the
same units in the same order and reading the clock cap (and beating) after the same
charges, so its bounds, work and stops are the Python path's, field for field
(``tests/dpknn/test_clique_kernel.py``); only the time differs. It reads the overlap
graph's packed adjacency (:attr:`OverlapGraph.packed`) directly. Without the
extension the Python path below runs.

An optional wall-clock cap (``time_limit_s``, off by default) also stops
the search; setting it makes the released answers depend on the machine's
speed and load whenever it is the limit that stops a component.

Each component records which path it took (:data:`METHODS`), the work it
spent and which limit, if any, stopped it (:data:`STOPS`).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_knn.overlap import overlap_graph
>>> x = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.8], [9.0, 9.0]])
>>> res = clique_bounds(overlap_graph(x, np.full(4, 0.6)))
>>> res.size.tolist(), res.exact.tolist(), [METHODS[m] for m in res.method]
([3, 1], [True, True], ['complete', 'single'])
>>> res.work.tolist(), [STOPS[t] for t in res.stop]
([0, 0], ['none', 'none'])
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.progress import beat
from ppknn.protocols.dp_knn.overlap import OverlapGraph, pack_rows, unpack_rows

try:  # the dense path compiled (optional: without a C compiler the Python path runs)
    from ppknn.protocols.dp_knn import _clique_kernel as _kernel
except ImportError:  # pragma: no cover - depends on the install
    _kernel = None

METHODS = (
    "single",  # 0: one vertex
    "complete",  # 1: a complete component
    "exact",  # 2: the decomposed search finished (or met the upper bound)
    "bound:colouring",  # 3: search stopped; the greedy colouring bound was the smallest
    "bound:degeneracy",  # 4: search stopped; degeneracy + 1 was the smallest
    "bound:partial-search",  # 5: search stopped; max(best, colour bound of the open top branch)
)
"""Path codes recorded per component (index into this tuple)."""

STOPS = (
    "none",  # 0: the search finished (or was not needed)
    "work",  # 1: the work budget ran out
    "time",  # 2: the optional wall-clock cap passed
)
"""Which limit stopped a component's search (index into this tuple)."""

DEFAULT_CLIQUE_WORK = 750_000_000
"""Default work budget of the clique search of one graph (units: module docstring)."""


@dataclass(frozen=True)
class CliqueBounds:
    """Per-component clique numbers (or upper bounds) of an overlap graph.

    Attributes
    ----------
    size:
        ``(C,)`` int64: the value used as sensitivity -- the clique number when
        ``exact``, otherwise a valid upper bound on it.
    exact:
        ``(C,)`` bool: whether ``size`` is the exact clique number.
    lower:
        ``(C,)`` int64: the largest clique found (a lower bound).
    method:
        ``(C,)`` int8 index into :data:`METHODS`.
    work:
        ``(C,)`` int64: work units the search spent on each component.
    stop:
        ``(C,)`` int8 index into :data:`STOPS`: the limit that stopped the search.
    work_limit:
        The work budget of the whole graph (``None``: none).
    time_limit_s:
        The wall-clock cap (``None``: none).
    seconds:
        Wall time of the whole computation (not deterministic; for reports).
    search_seconds:
        Of which the searches themselves (not deterministic; for reports).
    """

    size: np.ndarray
    exact: np.ndarray
    lower: np.ndarray
    method: np.ndarray
    work: np.ndarray
    stop: np.ndarray
    work_limit: int | None
    time_limit_s: float | None
    seconds: float
    search_seconds: float

    def counts(self) -> dict[str, int]:
        """How many components took each path."""
        return {name: int(np.sum(self.method == i)) for i, name in enumerate(METHODS)}


_GREEDY_MAX = 12288
"""Largest component given a greedy clique (a dense ``n x n`` matrix) to start from."""

_DENSE_MAX = 12288
"""Largest component handled as a dense boolean matrix (at most 151 MB)."""

_COMPILED_MAX = 32768
"""Largest component of a packed graph searched by the compiled path (its bit matrices,
about five of ``n**2 / 8`` bytes: 640 MB at most); larger ones take the CSR path."""

_SCAN_MAX = 3000
"""Largest component always ordered by scanning all degrees per step (quadratic)."""

_SCAN_PER_EDGE = 256
"""Above :data:`_SCAN_MAX`, the scan is kept while ``n**2 <= this * (2 * edges)`` (a
vectorised scan step costs about that many times less per vertex than a bucket move)."""

_clock = time.perf_counter
"""The clock of the optional wall-clock cap (and of the reported seconds); nothing else reads it."""

_DONE = np.iinfo(np.int64).max // 2
"""Degree key of a vertex already taken out (above any real degree, even after decrements)."""


def _degeneracy_order(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, int]:
    """A degeneracy ordering (min-degree removal, lowest vertex first) and the degeneracy.

    The graph is given in CSR form over vertices ``0..n-1``.
    """
    n = len(indptr) - 1
    if n > _SCAN_MAX and n * n > _SCAN_PER_EDGE * max(1, int(indptr[-1])):
        return _degeneracy_order_buckets(indptr, indices)

    def drop(key: np.ndarray, v: int) -> None:
        key[indices[indptr[v]:indptr[v + 1]]] -= 1

    return _degeneracy_scan(np.diff(indptr).astype(np.int64), drop)


def _degeneracy_scan(key: np.ndarray, drop: Callable[[np.ndarray, int], None]
                     ) -> tuple[np.ndarray, int]:
    """Min-degree removal by scanning ``key`` (the degrees), lowest vertex first.

    ``drop(key, v)`` decrements the keys of v's neighbours; ``key`` is used up.
    """
    n = len(key)
    order = np.empty(n, dtype=np.int64)
    degeneracy = 0
    for t in range(n):
        if t % 256 == 0:
            beat()
        v = int(np.argmin(key))  # the lowest vertex of minimum remaining degree
        degeneracy = max(degeneracy, int(key[v]))
        order[t] = v
        key[v] = _DONE
        drop(key, v)
    return order, degeneracy


def _degeneracy_order_buckets(indptr: np.ndarray, indices: np.ndarray
                              ) -> tuple[np.ndarray, int]:
    """:func:`_degeneracy_order` with degree buckets: linear time, for large components."""
    n = len(indptr) - 1
    nbrs = [indices[indptr[v]:indptr[v + 1]].tolist() for v in range(n)]
    degree = [len(a) for a in nbrs]
    buckets: list[set[int]] = [set() for _ in range(max(degree, default=0) + 1)]
    for v, d in enumerate(degree):
        buckets[d].add(v)
    removed = [False] * n
    order: list[int] = []
    degeneracy = low = 0
    for t in range(n):
        if t % 256 == 0:
            beat()
        low = max(0, low - 1)
        while not buckets[low]:
            low += 1
        v = min(buckets[low])  # the lowest vertex of minimum remaining degree
        buckets[low].discard(v)
        degeneracy = max(degeneracy, low)
        order.append(v)
        removed[v] = True
        for u in nbrs[v]:
            if not removed[u]:
                d = degree[u]
                buckets[d].discard(u)
                degree[u] = d - 1
                buckets[d - 1].add(u)
    return np.asarray(order, dtype=np.int64), degeneracy


def _greedy_colours(order: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> int:
    """Colours used by greedy colouring visiting ``order`` (CSR graph)."""
    colour = np.full(len(indptr) - 1, -1, dtype=np.int64)
    used = 0
    for v in order.tolist():
        taken = colour[indices[indptr[v]:indptr[v + 1]]]
        free = np.ones(used + 1, dtype=bool)
        free[taken[taken >= 0]] = False
        c = int(np.argmax(free))  # the smallest colour no neighbour has
        colour[v] = c
        used = max(used, c + 1)
    return used


def _colour_count(outside: list[int]) -> int:
    """Colours used by greedy colouring visiting the vertices in bit order (bitset graph).

    ``outside[v]`` is the bitset of the vertices not adjacent to ``v`` (``v``
    included). Building the colour classes one after the other -- each takes,
    in bit order, every vertex with no neighbour already in it -- gives every
    vertex the smallest colour none of its earlier neighbours has, which is
    :func:`_greedy_colours` in the same order.
    """
    p = (1 << len(outside)) - 1
    used = 0
    while p:
        used += 1
        q = p
        while q:
            low = q & -q
            q &= outside[low.bit_length() - 1]
            p ^= low
    return used


def _bitsets(order: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> list[int]:
    """Neighbourhoods as Python-int bitsets: bit ``i`` stands for vertex ``order[i]``."""
    n = len(order)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    out: list[int] = []
    rows = max(1, (1 << 24) // max(1, n))  # bounds the dense block's memory
    for lo in range(0, n, rows):
        vs = order[lo:lo + rows]
        block = np.zeros((len(vs), n), dtype=bool)
        counts = indptr[vs + 1] - indptr[vs]
        cols = np.concatenate([indices[indptr[v]:indptr[v + 1]] for v in vs.tolist()]) \
            if counts.sum() else np.zeros(0, dtype=np.int64)
        block[np.repeat(np.arange(len(vs)), counts), rank[cols]] = True
        packed = np.packbits(block, axis=1, bitorder="little")
        out.extend(int.from_bytes(row.tobytes(), "little") for row in packed)
    return out


def _outside(nbrs: list[int]) -> list[int]:
    """Per vertex, the bitset of the vertices not adjacent to it (itself included)."""
    full = (1 << len(nbrs)) - 1
    return [full & ~(b | (1 << v)) for v, b in enumerate(nbrs)]


class _Stopped(Exception):
    """A limit stopped the search; ``stop`` is its index into :data:`STOPS`."""

    def __init__(self, stop: int) -> None:
        super().__init__(STOPS[stop])
        self.stop = stop


class _Limits:
    """The work budget of one graph (shared by its components) and the optional clock cap."""

    def __init__(self, work_limit: int | None, deadline: float | None) -> None:
        self.left = math.inf if work_limit is None else work_limit
        self.deadline = deadline
        self.spent = 0
        self.charges = 0
        self.search_seconds = 0.0

    def tick(self) -> bool:
        """After every 64th charge: a progress beat, and whether the clock cap has passed."""
        beat()
        return self.deadline is not None and _clock() > self.deadline

    def charge(self, units: int) -> None:
        """Spend ``units`` of work; :class:`_Stopped` when the budget (or the cap) is out.

        A charge larger than what is left is not spent and empties the budget, so no
        later search (of this component or the next) goes on.
        """
        if units > self.left:
            self.left = 0
            raise _Stopped(1)
        self.left -= units
        self.spent += units
        self.charges += 1
        if self.charges % 64 == 0:
            beat()  # a long search is progress: the party timeout does not end it
            if self.deadline is not None and _clock() > self.deadline:
                raise _Stopped(2)


def _colour_sort(p: int, outside: list[int], lowest: int) -> tuple[list[int], list[int]]:
    """MCQ's colour sort of the bitset ``p``: vertices and their colour numbers (ascending).

    ``outside[v]`` is the bitset of the vertices not adjacent to ``v`` (``v`` included).
    Vertices of colour below ``lowest`` are coloured but not listed: the search never
    branches on them.
    """
    verts: list[int] = []
    cols: list[int] = []
    colour = 0
    while p:
        colour += 1
        q = p
        if colour < lowest:
            while q:
                low = q & -q
                q &= outside[low.bit_length() - 1]
                p ^= low
            continue
        while q:
            low = q & -q
            v = low.bit_length() - 1
            q &= outside[v]
            p ^= low
            verts.append(v)
            cols.append(colour)
    return verts, cols


class _Search:
    """Branch and bound for the clique number on a bitset graph (Tomita & Seki 2003)."""

    def __init__(self, nbrs: list[int], best: int, target: int, limits: _Limits,
                 outside: list[int] | None = None) -> None:
        self.nbrs, self.best, self.target, self.limits = nbrs, best, target, limits
        self.outside = _outside(nbrs) if outside is None else outside
        self.words = (len(nbrs) + 63) // 64  # 64-bit words of one bitset
        self.top_bound = target  # colour bound of the top-level branch being searched

    def _sort(self, p: int, lowest: int) -> tuple[list[int], list[int]]:
        """:func:`_colour_sort`, charged one bitset operation per vertex of ``p``."""
        self.limits.charge(p.bit_count() * self.words)
        return _colour_sort(p, self.outside, lowest)

    def expand(self, size: int, p: int, top: bool = False) -> None:
        """Search the candidates ``p`` below a clique of ``size`` (MCQ's EXPAND).

        Depth-first with an explicit stack (a clique of thousands of vertices needs as
        many levels): each frame is one call of the recursive formulation, visiting its
        coloured vertices from the highest colour down, and the search visits the same
        nodes in the same order as the recursion would.
        """
        nbrs, charge, words = self.nbrs, self.limits.charge, self.words
        verts, cols = self._sort(p, self.best - size + 1)
        # frame: [size, candidates, vertices, colours, next index, top level]
        stack = [[size, p, verts, cols, len(verts) - 1, top]]
        while stack:
            frame = stack[-1]
            size, p, verts, cols, i, top = frame
            if i < 0 or size + cols[i] <= self.best:
                stack.pop()
                if stack and self._after_child(stack[-1]):
                    return
                continue
            if top:
                self.top_bound = cols[i]
            charge(words)  # one node
            v = verts[i]
            child = p & nbrs[v]
            if child:
                c_verts, c_cols = self._sort(child, self.best - size)
                stack.append([size + 1, child, c_verts, c_cols, len(c_verts) - 1, False])
                continue
            if size + 1 > self.best:
                self.best = size + 1
            if self._after_child(frame):
                return

    def _after_child(self, frame: list) -> bool:
        """Finish the branch on ``frame``'s current vertex; True when the search is done."""
        if self.best >= self.target:
            return True
        v = frame[2][frame[4]]
        frame[1] ^= 1 << v
        frame[4] -= 1
        return False


def _greedy_clique(nbrs: list[int], m: np.ndarray | None = None) -> int:
    """Size of a clique found greedily (a lower bound to start the search from).

    Takes, among the candidates, the vertex with the most candidate neighbours
    (lowest bit on ties) until none is left. ``m``: the dense boolean form of
    ``nbrs`` (``m[i, k]`` is bit k of ``nbrs[i]``), if at hand.
    """
    n = len(nbrs)
    if n == 0:
        return 0
    if m is None:
        m = np.unpackbits(np.frombuffer(b"".join(b.to_bytes((n + 7) // 8, "little")
                                                 for b in nbrs),
                                        dtype=np.uint8).reshape(n, -1), axis=1,
                          bitorder="little")[:, :n].astype(bool)
    # score: a candidate's number of candidate neighbours (>= 0); below 0 once gone (it
    # starts at -(n + 2) and loses at most n), so the argmax is the best candidate
    score = m.sum(axis=1).astype(np.int64)
    size = 0
    while True:
        v = int(np.argmax(score))
        if score[v] < 0:
            return size
        size += 1
        gone = np.flatnonzero((score >= 0) & ~m[v])  # v itself included
        score[gone] = -(n + 2)
        # m is symmetric: the rows of the vertices gone count what they took from everyone
        score -= m[gone[0]] if len(gone) == 1 else m[gone].sum(axis=0)


def _component_bound(indptr: np.ndarray, indices: np.ndarray, limits: _Limits
                     ) -> tuple[int, bool, int, int, int]:
    """(size, exact, lower, method, stop) for one component with >= 3 vertices (CSR, local ids)."""
    order, degeneracy = _degeneracy_order(indptr, indices)
    smallest_last = order[::-1]
    nbrs = _bitsets(smallest_last, indptr, indices)  # bit i = i-th vertex, smallest-last
    return _search_bound(nbrs, degeneracy, None, limits)


def _component_bound_dense(adj: np.ndarray, limits: _Limits
                           ) -> tuple[int, bool, int, int, int]:
    """:func:`_component_bound` of a component given as a dense boolean adjacency matrix.

    The same steps on the same graph: the degeneracy ordering of the scan
    (``key -= adj[v]`` decrements every neighbour's key, as the CSR scan does),
    the same bitsets (the matrix reordered smallest-last, packed), the same
    search.
    """
    if _kernel is not None:
        return _compiled_bound(pack_rows(adj, (len(adj) + 63) // 64), len(adj), limits)

    def drop(key: np.ndarray, v: int) -> None:
        key -= adj[v]

    order, degeneracy = _degeneracy_scan(adj.sum(axis=1, dtype=np.int64), drop)
    smallest_last = order[::-1]
    m = adj[smallest_last][:, smallest_last]  # row/column i = i-th vertex, smallest-last
    packed = np.packbits(m, axis=1, bitorder="little")
    nbrs = [int.from_bytes(row.tobytes(), "little") for row in packed]
    return _search_bound(nbrs, degeneracy, m, limits)


def _compiled_bound(packed: np.ndarray, n: int, limits: _Limits
                    ) -> tuple[int, bool, int, int, int]:
    """:func:`_component_bound_dense` by the compiled kernel (``_clique_kernel.c``).

    The same steps on the same bitsets -- degeneracy ordering by the scan, the
    matrix renumbered smallest-last, the greedy colouring's count, the greedy
    clique, the search -- and the same work units charged in the same order, so
    the result and the budget left are those of the Python path. The search calls
    :meth:`_Limits.tick` after every 64th charge, as :meth:`_Limits.charge` beats
    and reads the clock.
    """
    beat()  # as the Python path's ordering beats at its first step
    packed = np.ascontiguousarray(packed, dtype="<u8")
    order, degeneracy = _kernel.degeneracy(packed, n)
    smallest_last = np.frombuffer(order, dtype=np.int64)[::-1].copy()
    nbrs = _kernel.reorder(packed, n, smallest_last)
    colours = _kernel.colours(nbrs, n)
    ub = min(colours, degeneracy + 1)
    start = max(2, _kernel.greedy(nbrs, n)) if 2 < ub and n <= _GREEDY_MAX else 2
    if start >= ub:
        return start, True, start, 2, 0
    t0 = _clock()
    left = -1 if limits.left == math.inf else int(limits.left)
    try:
        best, top_bound, stop, spent, charges, left = _kernel.search(
            nbrs, n, start, ub, left, limits.charges, limits.tick)
    finally:
        limits.search_seconds += _clock() - t0
    limits.spent += spent
    limits.charges = charges
    if limits.left != math.inf:
        limits.left = left
    if stop:
        return _stopped_bound(colours, degeneracy, best, top_bound, stop)
    return best, True, best, 2, 0


def _stopped_bound(colours: int, degeneracy: int, best: int, top_bound: int, stop: int
                   ) -> tuple[int, bool, int, int, int]:
    """Step 4 of the module docstring: a stopped search's bound, the smallest valid one."""
    options = ((colours, 3), (degeneracy + 1, 4), (max(best, top_bound), 5))
    size, method = min(options, key=lambda t: (t[0], t[1]))
    return size, False, best, method, stop


def _search_bound(nbrs: list[int], degeneracy: int, m: np.ndarray | None, limits: _Limits
                  ) -> tuple[int, bool, int, int, int]:
    """Steps 2-4 of the module docstring on the bitset graph ``nbrs`` (smallest-last order)."""
    outside = _outside(nbrs)
    colours = _colour_count(outside)  # = _greedy_colours(smallest_last, indptr, indices)
    ub = min(colours, degeneracy + 1)
    start = max(2, _greedy_clique(nbrs, m)) if 2 < ub and len(nbrs) <= _GREEDY_MAX else 2
    search = _Search(nbrs, best=start, target=ub, limits=limits, outside=outside)
    t0 = _clock()
    try:
        if search.best < ub:
            search.expand(0, (1 << len(nbrs)) - 1, top=True)
    except _Stopped as stopped:
        return _stopped_bound(colours, degeneracy, search.best, search.top_bound,
                              stopped.stop)
    finally:
        limits.search_seconds += _clock() - t0
    return search.best, True, search.best, 2, 0


def _induced(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of the subgraph on ``nodes`` (a whole component, ascending).

    Local id = position in ``nodes``. A component holds all its vertices'
    neighbours and the renumbering keeps their order, so each row stays sorted.
    """
    n = len(indptr) - 1
    if len(nodes) == n:  # the whole graph: ids unchanged
        return indptr, indices
    degree = indptr[nodes + 1] - indptr[nodes]
    sub_indptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(degree, out=sub_indptr[1:])
    at = np.repeat(indptr[nodes] - sub_indptr[:-1], degree) + np.arange(sub_indptr[-1])
    local = np.empty(n, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    return sub_indptr, local[indices[at]]


def _edges_by_component(graph: OverlapGraph) -> tuple[np.ndarray, np.ndarray]:
    """The edges ordered by component (in order within each) and each component's cut."""
    edges, comp = graph.edges, graph.component
    if graph.n_components > 1:
        edges = edges[np.argsort(comp[edges[:, 0]], kind="stable")]
    return edges, np.searchsorted(comp[edges[:, 0]], np.arange(graph.n_components + 1))


def _unpacked(packed: np.ndarray, nodes: np.ndarray, cols: np.ndarray | None = None
              ) -> np.ndarray:
    """The boolean adjacency of rows ``nodes`` to columns ``cols``, from a packed matrix.

    ``cols`` defaults to ``nodes`` (both ascending).
    """
    bits = unpack_rows(packed[nodes], len(packed))
    return bits[:, nodes if cols is None else cols].astype(bool)


def _sub_packed(packed: np.ndarray, nodes: np.ndarray, rows: int | None = None
                ) -> np.ndarray:
    """The packed adjacency among ``nodes`` (ascending), read ``rows`` rows at a time.

    By default as many rows as keep one block's unpacked bits within 16 MB.
    """
    n, m = len(packed), len(nodes)
    if m == n:
        return packed
    out = np.empty((m, (m + 63) // 64), dtype="<u8")
    rows = max(1, (1 << 24) // max(1, n)) if rows is None else rows
    for lo in range(0, m, rows):
        out[lo:lo + rows] = pack_rows(_unpacked(packed, nodes[lo:lo + rows], nodes), out.shape[1])
    return out


def _check_limits(work_limit: object, time_limit_s: object) -> tuple[int | None, float | None]:
    """The checked limits of :func:`clique_bounds`.

    ``work_limit``: an int >= 1 or ``None``; ``time_limit_s``: a number >= 0 or
    ``None``; anything else is a :class:`ConfigError` naming the value and what is
    allowed.
    """
    if work_limit is not None and (isinstance(work_limit, bool)
                                   or not isinstance(work_limit, Integral) or work_limit < 1):
        raise ConfigError(f"clique work_limit = {work_limit!r}; allowed: an integer >= 1 "
                          "(work units) or None (no budget)")
    if time_limit_s is not None and (isinstance(time_limit_s, bool)
                                     or not isinstance(time_limit_s, Real)
                                     or math.isnan(time_limit_s) or time_limit_s < 0):
        raise ConfigError(f"clique time_limit_s = {time_limit_s!r}; allowed: a number of "
                          "seconds >= 0 or None (no wall-clock cap)")
    return (None if work_limit is None else int(work_limit),
            None if time_limit_s is None else float(time_limit_s))


def clique_bounds(graph: OverlapGraph, *, work_limit: int | None = DEFAULT_CLIQUE_WORK,
                  time_limit_s: float | None = None) -> CliqueBounds:
    """Clique number (or a valid upper bound) of every component of ``graph``.

    Parameters
    ----------
    graph:
        The region overlap graph.
    work_limit:
        Work budget of the whole graph (units: module docstring; default
        :data:`DEFAULT_CLIQUE_WORK`); components are searched largest first and
        those left when it runs out get an upper bound. ``None``: no budget.
        The result depends on the graph and this budget only.
    time_limit_s:
        Optional wall-clock cap of the whole graph's search, off (``None``) by
        default. Setting it makes the result -- hence the noise scale and the
        released answers -- depend on the machine's speed and load whenever the
        cap, not the budget, stops a search.
    """
    start = _clock()
    work_limit, time_limit_s = _check_limits(work_limit, time_limit_s)
    limits = _Limits(work_limit, None if time_limit_s is None else start + time_limit_s)
    n_comp = graph.n_components
    comp = graph.component
    sizes = np.bincount(comp, minlength=n_comp).astype(np.int64)
    packed = graph.packed
    n_edges = np.bincount(comp, weights=graph.degrees(), minlength=n_comp).astype(np.int64) // 2
    size = sizes.copy()
    exact = np.ones(n_comp, dtype=bool)
    method = np.where(sizes == 1, 0, 1).astype(np.int8)
    work = np.zeros(n_comp, dtype=np.int64)
    stop = np.zeros(n_comp, dtype=np.int8)
    hard = np.flatnonzero(n_edges < sizes * (sizes - 1) // 2)  # not complete
    lower = size.copy()
    if hard.size:
        members = np.argsort(comp, kind="stable")  # by component, ascending within
        cuts = np.searchsorted(comp[members], np.arange(n_comp + 1))
        local = np.empty(graph.n, dtype=np.int64)
        component_edges = None if packed is not None else _edges_by_component(graph)
        csr: tuple[np.ndarray, np.ndarray] | None = None
        for c in hard[np.argsort(-sizes[hard], kind="stable")]:
            nodes = members[cuts[c]:cuts[c + 1]]  # ascending: local ids keep the vertex order
            spent = limits.spent
            if len(nodes) <= _COMPILED_MAX and packed is not None and _kernel is not None:
                out = _compiled_bound(_sub_packed(packed, nodes), len(nodes), limits)
            elif len(nodes) <= _DENSE_MAX:
                if packed is not None:
                    adj = _unpacked(packed, nodes)
                else:
                    edges, edge_cuts = component_edges
                    local[nodes] = np.arange(len(nodes))
                    e = edges[edge_cuts[c]:edge_cuts[c + 1]]
                    adj = np.zeros((len(nodes), len(nodes)), dtype=bool)
                    li, lj = local[e[:, 0]], local[e[:, 1]]
                    adj[li, lj] = True
                    adj[lj, li] = True
                out = _component_bound_dense(adj, limits)
            else:
                csr = graph.csr() if csr is None else csr
                out = _component_bound(*_induced(csr[0], csr[1], nodes), limits)
            size[c], exact[c], lower[c], method[c], stop[c] = out
            work[c] = limits.spent - spent
    return CliqueBounds(size=size, exact=exact, lower=lower, method=method, work=work,
                        stop=stop, work_limit=work_limit, time_limit_s=time_limit_s,
                        seconds=_clock() - start,
                        search_seconds=limits.search_seconds)


__all__ = ["DEFAULT_CLIQUE_WORK", "METHODS", "STOPS", "CliqueBounds", "clique_bounds"]
