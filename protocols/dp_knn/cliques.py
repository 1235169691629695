"""Maximum clique size per connected component, exactly under a time bound.

The proposed r-N classifier calibrates its noise to ``MCS(G_sub)``, the
clique number of each connected component of the region overlap graph
(Lemma 3: no training point lies in more test regions than that). Maximum
clique is NP-hard, so the search runs under a wall-clock deadline and any
component it cannot finish gets a **valid upper bound** instead -- a larger
value only adds noise, so privacy never depends on the search finishing.

Per component:

1. Trivial cases: a single vertex (1) or a complete component (its size).
2. A *degeneracy ordering* (repeatedly remove a vertex of minimum degree);
   its degeneracy ``d`` gives ``ω <= d + 1``. A greedy colouring in
   smallest-last order gives ``ω <= χ <= colours``. The smaller is ``ub``.
3. Exact search, decomposed: every clique has a unique earliest vertex v
   in the ordering and lies in ``{v} ∪ N⁺(v)`` (its later neighbours, at
   most ``d`` of them). Subproblems are visited by decreasing ``|N⁺(v)|``;
   one is skipped when ``1 + |N⁺(v)|`` or ``1 +`` a greedy colouring of
   ``N⁺(v)`` cannot beat the best clique so far; otherwise
   :func:`networkx.find_cliques` enumerates the maximal cliques of
   ``G[N⁺(v)]`` (restricted to its ``best``-core). The search stops early
   when the best clique reaches ``ub``.
4. The deadline is checked between subproblems and between enumerated
   cliques. On expiry the component's value is the upper bound
   ``min(ub, max(best, max over unsearched v of 1 + |N⁺(v)|))`` -- every
   clique not yet examined has its earliest vertex among the unsearched.

Each component records which path it took (:data:`METHODS`).

Examples
--------
>>> import numpy as np
>>> from protocols.dp_knn.overlap import overlap_graph
>>> x = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.8], [9.0, 9.0]])
>>> res = clique_bounds(overlap_graph(x, np.full(4, 0.6)), time_limit_s=1.0)
>>> res.size.tolist(), res.exact.tolist(), [METHODS[m] for m in res.method]
([3, 1], [True, True], ['complete', 'single'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from protocols.dp_knn.overlap import OverlapGraph

METHODS = (
    "single",  # 0: one vertex
    "complete",  # 1: a complete component
    "exact",  # 2: the decomposed search finished (or met the upper bound)
    "bound:colouring",  # 3: deadline; the greedy colouring bound was the smallest
    "bound:degeneracy",  # 4: deadline; degeneracy + 1 was the smallest
    "bound:partial-search",  # 5: deadline; max(best, 1 + |N+(v)| over unsearched v)
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


def _greedy_colours(order: list[int], adj: dict[int, set[int]], within: set[int]) -> int:
    """Colours used by greedy colouring of ``G[within]`` visiting ``order``."""
    colour: dict[int, int] = {}
    used = 0
    for v in order:
        taken = {colour[u] for u in adj[v] if u in colour and u in within}
        c = 0
        while c in taken:
            c += 1
        colour[v] = c
        used = max(used, c + 1)
    return used


def _component_bound(nodes: list[int], adj: dict[int, set[int]], deadline: float
                     ) -> tuple[int, bool, int, int]:
    """(size, exact, lower, method) for one component with >= 3 vertices."""
    order, degeneracy = _degeneracy_order(nodes, adj)
    pos = {v: i for i, v in enumerate(order)}
    everything = set(nodes)
    colours = _greedy_colours(order[::-1], adj, everything)  # smallest-last order
    ub = min(colours, degeneracy + 1)
    later = {v: [u for u in adj[v] if pos[u] > pos[v]] for v in order}
    best = 2 if any(later.values()) else 1
    pending = sorted(order, key=lambda v: (-len(later[v]), pos[v]))
    for idx, v in enumerate(pending):
        if best >= ub:
            return best, True, best, 2
        if time.perf_counter() > deadline:
            rest = max(1 + len(later[u]) for u in pending[idx:])
            partial = max(best, rest)
            options = ((colours, 3), (degeneracy + 1, 4), (partial, 5))
            size, method = min(options, key=lambda t: (t[0], t[1]))
            return size, False, best, method
        cand = later[v]
        if 1 + len(cand) <= best:
            continue
        within = set(cand)
        sub_order = sorted(cand, key=lambda u: -len(adj[u] & within))
        if 1 + _greedy_colours(sub_order, adj, within) <= best:
            continue
        sub = nx.Graph()
        sub.add_nodes_from(cand)
        sub.add_edges_from((a, b) for a in cand for b in adj[a] & within if a < b)
        # a clique beating `best` has every member's degree >= best - 1
        sub = nx.k_core(sub, best - 1) if best > 1 else sub
        for clique in nx.find_cliques(sub):
            if 1 + len(clique) > best:
                best = 1 + len(clique)
                if best >= ub:
                    break
            if time.perf_counter() > deadline:
                break
        else:
            continue
        if best >= ub:
            return best, True, best, 2
        # deadline inside this subproblem: it counts as unsearched
        rest = max(1 + len(later[u]) for u in pending[idx:])
        partial = max(best, rest)
        options = ((colours, 3), (degeneracy + 1, 4), (partial, 5))
        size, method = min(options, key=lambda t: (t[0], t[1]))
        return size, False, best, method
    return best, True, best, 2


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
