"""Region overlap graph, components, clique bounds, and the sensitivity claim (Lemma 3)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.protocols.dp_knn.cliques import METHODS, clique_bounds
from ppknn.protocols.dp_knn.overlap import EDGE_SLACK, OverlapGraph, overlap_graph
from ppknn.protocols.dp_knn.rn import plan_rn

seeds = st.integers(0, 2**32 - 1)


def _batch(seed, q, d, spread=10.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, spread, size=(q, d))
    r = rng.uniform(0.1, 3.0, size=q) * rng.choice([0.01, 1.0, 4.0], size=q)  # mixed scales
    return x, r


def _brute_edges(x, r):
    return sorted((i, j) for i, j in itertools.combinations(range(len(x)), 2)
                  if np.linalg.norm(x[i] - x[j]) <= (r[i] + r[j]) * (1 + EDGE_SLACK))


def _nx_graph(g: OverlapGraph) -> nx.Graph:
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(g.edges.tolist())
    return G


@settings(max_examples=60, deadline=None)
@given(seed=seeds, q=st.integers(1, 40), d=st.integers(1, 3))
def test_edges_are_exactly_the_intersecting_pairs(seed, q, d):
    x, r = _batch(seed, q, d)
    g = overlap_graph(x, r)
    assert [tuple(e) for e in g.edges.tolist()] == _brute_edges(x, r)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, q=st.integers(1, 40))
def test_components_match_networkx(seed, q):
    x, r = _batch(seed, q, 2)
    g = overlap_graph(x, r)
    ours = {frozenset(np.flatnonzero(g.component == c).tolist()) for c in range(g.n_components)}
    assert ours == {frozenset(c) for c in nx.connected_components(_nx_graph(g))}
    first = [int(np.flatnonzero(g.component == c)[0]) for c in range(g.n_components)]
    assert first == sorted(first)  # numbered by smallest vertex


def _true_clique_numbers(g: OverlapGraph) -> np.ndarray:
    G = _nx_graph(g)
    out = np.zeros(g.n_components, dtype=np.int64)
    for c in range(g.n_components):
        sub = G.subgraph(np.flatnonzero(g.component == c).tolist())
        out[c] = nx.max_weight_clique(sub, weight=None)[1]
    return out


@settings(max_examples=40, deadline=None)
@given(seed=seeds, q=st.integers(1, 45), d=st.integers(1, 3))
def test_clique_numbers_are_exact_on_geometric_graphs(seed, q, d):
    x, r = _batch(seed, q, d, spread=6.0)
    g = overlap_graph(x, r)
    res = clique_bounds(g)
    assert res.exact.all()
    np.testing.assert_array_equal(res.size, _true_clique_numbers(g))
    np.testing.assert_array_equal(res.lower, res.size)


@pytest.mark.parametrize("seed", range(6))
def test_clique_numbers_are_exact_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = 40
    upper = np.triu(rng.random((n, n)) < rng.uniform(0.2, 0.8), 1)
    edges = np.argwhere(upper)
    g = OverlapGraph(n=n, edges=edges, component=np.zeros(n, dtype=np.int64), n_components=1)
    assert nx.is_connected(_nx_graph(g))  # one component, as the graph says (seeded draws)
    res = clique_bounds(g)
    assert res.exact.all() and METHODS[res.method[0]] == "exact"
    assert res.size[0] == nx.max_weight_clique(_nx_graph(g), weight=None)[1]


def test_time_bound_falls_back_to_a_valid_upper_bound():
    rng = np.random.default_rng(3)
    n = 60
    edges = np.argwhere(np.triu(rng.random((n, n)) < 0.7, 1))
    g = OverlapGraph(n=n, edges=edges, component=np.zeros(n, dtype=np.int64), n_components=1)
    res = clique_bounds(g, time_limit_s=0.0)
    omega = nx.max_weight_clique(_nx_graph(g), weight=None)[1]
    assert not res.exact[0]
    assert METHODS[res.method[0]].startswith("bound:")
    assert res.lower[0] <= omega <= res.size[0] < n
    assert res.counts()[METHODS[res.method[0]]] == 1


def test_trivial_components_take_the_trivial_paths():
    x = np.array([[0.0], [1.0], [1.5], [10.0], [10.5], [11.0], [30.0]])
    res = clique_bounds(overlap_graph(x, np.full(7, 0.6)))
    assert res.size.tolist() == [2, 3, 1]  # a path, a triangle, a lone region
    assert [METHODS[m] for m in res.method] == ["exact", "complete", "single"]
    assert res.exact.all()


# --- the sensitivity claim: no point lies in more regions than the clique size used ---------

def _depths(points, x, r):
    """(P, Q) membership of candidate points in the closed regions (float tolerance)."""
    dist = np.linalg.norm(points[:, None, :] - x[None, :, :], axis=-1)
    return dist <= r[None, :] * (1 + 1e-9)


def _circle_vertices(x, r):
    pts = [x]
    for i, j in itertools.combinations(range(len(x)), 2):
        v = x[j] - x[i]
        dd = np.linalg.norm(v)
        if dd == 0 or dd > r[i] + r[j] or dd < abs(r[i] - r[j]):
            continue
        a = (r[i] ** 2 - r[j] ** 2 + dd**2) / (2 * dd)
        h = np.sqrt(max(r[i] ** 2 - a**2, 0.0))
        base = x[i] + a * v / dd
        perp = np.array([-v[1], v[0]]) / dd
        pts.append(np.stack([base + h * perp, base - h * perp]))
    return np.concatenate(pts)


def _check_claim(points, x, r, plan):
    member = _depths(points, x, r)
    comp = plan.graph.component
    depth_max = np.zeros(plan.graph.n_components, dtype=np.int64)
    for row in member:
        inside = np.flatnonzero(row)
        if inside.size:
            assert np.unique(comp[inside]).size == 1  # a point never joins two components
            c = comp[inside[0]]
            depth_max[c] = max(depth_max[c], inside.size)
    assert np.all(depth_max <= plan.cliques.size)
    return depth_max


@settings(max_examples=50, deadline=None)
@given(seed=seeds, q=st.integers(1, 30))
def test_sensitivity_claim_one_dimension_exact(seed, q):
    """In 1-D pairwise intersecting intervals share a point, so max depth == clique number."""
    x, r = _batch(seed, q, 1, spread=8.0)
    plan = plan_rn(x, r)
    ends = np.concatenate([x[:, 0] - r, x[:, 0] + r])[:, None]
    depth = _check_claim(ends, x, r, plan)
    np.testing.assert_array_equal(depth, plan.cliques.size)


@settings(max_examples=50, deadline=None)
@given(seed=seeds, q=st.integers(1, 25))
def test_sensitivity_claim_two_dimensions_exact_depth(seed, q):
    """Max depth of closed discs is attained at a centre or a pairwise boundary crossing."""
    x, r = _batch(seed, q, 2, spread=6.0)
    plan = plan_rn(x, r)
    _check_claim(_circle_vertices(x, r), x, r, plan)


@pytest.mark.parametrize("seed", range(4))
def test_sensitivity_claim_sampled_in_three_dimensions(seed):
    x, r = _batch(seed, 25, 3, spread=5.0)
    plan = plan_rn(x, r)
    rng = np.random.default_rng(seed)
    near = x[rng.integers(len(x), size=20_000)] + rng.normal(scale=1.0, size=(20_000, 3))
    _check_claim(near, x, r, plan)
