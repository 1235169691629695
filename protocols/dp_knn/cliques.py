"""Maximum clique size per connected component, exactly under a time bound.

The proposed r-N classifier calibrates its noise to ``MCS(G_sub)``, the
clique number of each connected component of the region overlap graph
(Lemma 3: no training point lies in more test regions than that). Maximum
clique is NP-hard, so the search runs under a wall-clock deadline and any
component it cannot finish gets a **valid upper bound** instead -- a larger
value only adds noise, so privacy never depends on the search finishing.

Per component:

1. Trivial cases: a single vertex (1) or a complete component (its size).
2. Upper bounds: a *degeneracy ordering* (repeatedly remove a vertex of
   minimum degree) gives ``ω <= degeneracy + 1``; a greedy colouring in
   smallest-last order gives ``ω <= χ <= colours``. ``ub`` is the smaller.
3. Exact search: branch and bound with greedy-colouring bounds (Tomita &
   Seki's MCQ), vertex sets as Python integers used as bitsets. It stops as
   soon as a clique of size ``ub`` is found. networkx has no exact
   clique routine that can be interrupted (``max_weight_clique`` runs to
   the end; ``find_cliques`` enumerates every maximal clique), so the
   search is written here and checked against ``networkx.max_weight_clique``
   in the tests.
4. The deadline is checked at every node of the search. On expiry the
   component's value is ``min(colours, degeneracy + 1, partial)``, where
   ``partial = max(best, c)`` and c is the colour bound of the top-level
   branch being searched: every clique not yet ruled out lies among the
   top-level vertices not yet taken out, whose clique number is at most c.

Each component records which path it took (:data:`METHODS`).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_knn.overlap import overlap_graph
>>> x = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.8], [9.0, 9.0]])
>>> res = clique_bounds(overlap_graph(x, np.full(4, 0.6)), time_limit_s=1.0)
>>> res.size.tolist(), res.exact.tolist(), [METHODS[m] for m in res.method]
([3, 1], [True, True], ['complete', 'single'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ppknn.protocols.dp_knn.overlap import OverlapGraph

METHODS = (
    "single",  # 0: one vertex
    "complete",  # 1: a complete component
    "exact",  # 2: the decomposed search finished (or met the upper bound)
    "bound:colouring",  # 3: deadline; the greedy colouring bound was the smallest
    "bound:degeneracy",  # 4: deadline; degeneracy + 1 was the smallest
    "bound:partial-search",  # 5: deadline; max(best, colour bound of the open top branch)
)
"""Path codes recorded per component (index into this tuple)."""


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
    seconds:
        Wall time of the whole computation.
    """

    size: np.ndarray
    exact: np.ndarray
    lower: np.ndarray
    method: np.ndarray
    seconds: float

    def counts(self) -> dict[str, int]:
        """How many components took each path."""
        return {name: int(np.sum(self.method == i)) for i, name in enumerate(METHODS)}


def _degeneracy_order(nodes: list[int], adj: dict[int, set[int]]) -> tuple[list[int], int]:
    """A degeneracy ordering (min-degree removal) and the degeneracy."""
    degree = {v: len(adj[v]) for v in nodes}
    max_deg = max(degree.values(), default=0)
    buckets: list[set[int]] = [set() for _ in range(max_deg + 1)]
    for v, d in degree.items():
        buckets[d].add(v)
    removed: set[int] = set()
    order: list[int] = []
    degeneracy = 0
    low = 0
    for _ in range(len(nodes)):
        low = max(0, low - 1)
        while not buckets[low]:
            low += 1
        v = min(buckets[low])  # deterministic choice
        buckets[low].discard(v)
        degeneracy = max(degeneracy, low)
        order.append(v)
        removed.add(v)
        for u in adj[v]:
            if u not in removed:
                d = degree[u]
                buckets[d].discard(u)
                degree[u] = d - 1
                buckets[d - 1].add(u)
    return order, degeneracy


def _greedy_colours(order: list[int], adj: dict[int, set[int]]) -> int:
    """Colours used by greedy colouring visiting ``order``."""
    colour: dict[int, int] = {}
    used = 0
    for v in order:
        taken = {colour[u] for u in adj[v] if u in colour}
        c = 0
        while c in taken:
            c += 1
        colour[v] = c
        used = max(used, c + 1)
    return used


class _Timeout(Exception):
    """The search's deadline passed."""


def _colour_sort(p: int, nbrs: list[int]) -> tuple[list[int], list[int]]:
    """MCQ's colour sort of the bitset ``p``: vertices and their colour numbers (ascending)."""
    verts: list[int] = []
    cols: list[int] = []
    colour = 0
    while p:
        colour += 1
        q = p
        while q:
            low = q & -q
            v = low.bit_length() - 1
            q &= ~nbrs[v] & ~low
            p &= ~low
            verts.append(v)
            cols.append(colour)
    return verts, cols


class _Search:
    """Branch and bound for the clique number on a bitset graph (Tomita & Seki 2003)."""

    def __init__(self, nbrs: list[int], best: int, target: int, deadline: float) -> None:
        self.nbrs, self.best, self.target, self.deadline = nbrs, best, target, deadline
        self.ticks = 0
        self.top_bound = target  # colour bound of the top-level branch being searched

    def _tick(self) -> None:
        self.ticks += 1
        if self.ticks % 64 == 0 and time.perf_counter() > self.deadline:
            raise _Timeout

    def expand(self, size: int, p: int, top: bool = False) -> None:
        verts, cols = _colour_sort(p, self.nbrs)
        for i in range(len(verts) - 1, -1, -1):
            if size + cols[i] <= self.best:
                return
            if top:
                self.top_bound = cols[i]
            self._tick()
            v = verts[i]
            child = p & self.nbrs[v]
            if child:
                self.expand(size + 1, child)
            elif size + 1 > self.best:
                self.best = size + 1
            if self.best >= self.target:
                return
            p &= ~(1 << v)


def _component_bound(nodes: list[int], adj: dict[int, set[int]], deadline: float
                     ) -> tuple[int, bool, int, int]:
    """(size, exact, lower, method) for one component with >= 3 vertices."""
    order, degeneracy = _degeneracy_order(nodes, adj)
    colours = _greedy_colours(order[::-1], adj)  # smallest-last order
    ub = min(colours, degeneracy + 1)
    rank = {v: i for i, v in enumerate(order[::-1])}  # bit i = i-th vertex, smallest-last
    nbrs = [0] * len(order)
    for v, i in rank.items():
        bits = 0
        for u in adj[v]:
            bits |= 1 << rank[u]
        nbrs[i] = bits
    search = _Search(nbrs, best=2, target=ub, deadline=deadline)
    try:
        search.expand(0, (1 << len(order)) - 1, top=True)
    except _Timeout:
        partial = max(search.best, search.top_bound)
        options = ((colours, 3), (degeneracy + 1, 4), (partial, 5))
        size, method = min(options, key=lambda t: (t[0], t[1]))
        return size, False, search.best, method
    return search.best, True, search.best, 2


def clique_bounds(graph: OverlapGraph, *, time_limit_s: float = 5.0) -> CliqueBounds:
    """Clique number (or a valid upper bound) of every component of ``graph``.

    Parameters
    ----------
    graph:
        The region overlap graph.
    time_limit_s:
        Wall-clock budget for the whole graph; components are searched
        largest first and those left when it runs out get an upper bound.
    """
    start = time.perf_counter()
    deadline = start + float(time_limit_s)
    n_comp = graph.n_components
    comp = graph.component
    sizes = np.bincount(comp, minlength=n_comp).astype(np.int64)
    n_edges = np.bincount(comp[graph.edges[:, 0]], minlength=n_comp) if len(graph.edges) \
        else np.zeros(n_comp, dtype=np.int64)
    size = sizes.copy()
    exact = np.ones(n_comp, dtype=bool)
    method = np.where(sizes == 1, 0, 1).astype(np.int8)
    hard = np.flatnonzero(n_edges < sizes * (sizes - 1) // 2)  # not complete
    lower = size.copy()
    if hard.size:
        adj_csr = graph.adjacency()
        indptr, indices = adj_csr.indptr, adj_csr.indices
        for c in hard[np.argsort(-sizes[hard], kind="stable")]:
            nodes = np.flatnonzero(comp == c).tolist()
            adj = {v: set(indices[indptr[v]:indptr[v + 1]].tolist()) for v in nodes}
            s, ex, lo, m = _component_bound(nodes, adj, deadline)
            size[c], exact[c], lower[c], method[c] = s, ex, lo, m
    return CliqueBounds(size=size, exact=exact, lower=lower, method=method,
                        seconds=time.perf_counter() - start)


__all__ = ["METHODS", "CliqueBounds", "clique_bounds"]
