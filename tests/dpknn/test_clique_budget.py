"""The clique search's deterministic work budget: the bounds, hence the answers, never depend
on the machine's speed; a wall-clock cap (opt-in) does, and the tests show they can tell."""

from __future__ import annotations

import re
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_knn import cliques
from ppknn.protocols.dp_knn.cliques import DEFAULT_CLIQUE_WORK, METHODS, STOPS, clique_bounds
from ppknn.protocols.dp_knn.overlap import OverlapGraph
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.protocol import Answer, Query
from ppknn.protocols.dp_knn.rn import plan_rn

FIELDS = ("size", "exact", "lower", "method", "work", "stop")
PATHS = ["compiled", "python"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """The clique search compiled (``_clique_kernel.c``) or in Python: the same bounds."""
    if request.param == "compiled" and cliques._kernel is None:
        pytest.skip("the compiled clique search is not built")
    if request.param == "python":
        monkeypatch.setattr(cliques, "_kernel", None)
    return request.param


class _SlowMachine:
    """A clock that moves ``step`` seconds between two reads: a machine slower by any factor."""

    def __init__(self, step: float = 1e4) -> None:
        self.now, self.step, self.reads = 0.0, step, 0

    def __call__(self) -> float:
        self.now += self.step
        self.reads += 1
        return self.now


def _graph(seed: int, sizes=(70,), p: float = 0.75) -> OverlapGraph:
    """Dense random components (G(n, p) each, checked connected), numbered in vertex order."""
    rng = np.random.default_rng(seed)
    edges, comp, base = [], [], 0
    for c, n in enumerate(sizes):
        while True:
            upper = np.triu(rng.random((n, n)) < p, 1)
            if n == 1 or nx.is_connected(nx.from_numpy_array(upper | upper.T)):
                break
        edges.append(np.argwhere(upper) + base)
        comp += [c] * n
        base += n
    return OverlapGraph(n=base, edges=np.concatenate(edges).astype(np.int64),
                        component=np.asarray(comp, dtype=np.int64), n_components=len(sizes))


def _omega(g: OverlapGraph) -> np.ndarray:
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(g.edges.tolist())
    return np.array([nx.max_weight_clique(G.subgraph(np.flatnonzero(g.component == c).tolist()),
                                          weight=None)[1] for c in range(g.n_components)])


def _re(value) -> str:
    return re.escape(repr(value))


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def _bounds_on_a_slow_machine(monkeypatch, g, **limits):
    clock = _SlowMachine()
    with monkeypatch.context() as m:
        m.setattr(cliques, "_clock", clock)
        res = clique_bounds(g, **limits)
    return res, clock


# ------------------------------------------------------------------ the clock does not matter
@pytest.mark.parametrize("seed", range(4))
def test_the_budget_gives_the_same_bounds_on_a_machine_slower_by_any_factor(path, seed,
                                                                           monkeypatch):
    g = _graph(seed, sizes=(70, 40, 1, 25))
    fast = clique_bounds(g)
    slow, clock = _bounds_on_a_slow_machine(monkeypatch, g)
    assert clock.reads >= 2  # the slowed clock was read (by the reported seconds only)
    assert _same(fast, slow)
    assert fast.exact.all() and np.array_equal(fast.size, _omega(g))
    assert slow.seconds >= 1e4  # ... and the slow machine did show in the seconds


@pytest.mark.parametrize("seed", range(4))
def test_the_same_check_catches_a_wall_clock_cap(path, seed, monkeypatch):
    """The check above, against the opt-in time cap: it must fail there (power)."""
    g = _graph(seed, sizes=(70, 40, 1, 25))
    fast = clique_bounds(g, time_limit_s=3600.0)  # an hour: never reached here
    slow, _ = _bounds_on_a_slow_machine(monkeypatch, g, time_limit_s=3600.0)
    assert not _same(fast, slow)
    assert fast.exact.all() and not slow.exact.all()
    assert STOPS[slow.stop.max()] == "time"
    assert np.all(slow.size >= _omega(g))  # still valid upper bounds


# ------------------------------------------------------------------ exhaustion
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("work_limit", [1, 60, 600])
def test_a_tiny_budget_gives_valid_upper_bounds(path, seed, work_limit):
    g = _graph(seed, sizes=(60, 35, 2, 1))
    omega = _omega(g)
    res = clique_bounds(g, work_limit=work_limit)
    assert np.all(res.size >= omega) and np.all(res.lower <= omega)
    assert not res.exact[0]  # the largest component is never finished on this budget
    stopped = ~res.exact
    assert [STOPS[t] for t in res.stop[stopped]] == ["work"] * int(stopped.sum())
    assert all(METHODS[m].startswith("bound:") for m in res.method[stopped])
    assert np.all(res.stop[res.exact] == 0)
    assert 0 <= res.work.sum() <= work_limit
    assert res.size[2:].tolist() == [2, 1]  # trivial components need no search
    assert _same(res, clique_bounds(g, work_limit=work_limit))  # deterministic


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("work_limit", [None, DEFAULT_CLIQUE_WORK])
def test_an_ample_budget_gives_the_exact_clique_numbers(path, seed, work_limit):
    g = _graph(seed, sizes=(60, 35, 2, 1))
    res = clique_bounds(g, work_limit=work_limit)
    np.testing.assert_array_equal(res.size, _omega(g))
    assert res.exact.all() and np.all(res.stop == 0) and res.work_limit == work_limit
    assert res.work[:2].min() > 0 and res.work[2:].sum() == 0


def test_the_budget_is_shared_largest_component_first(path):
    g = _graph(7, sizes=(30, 60, 45))
    full = clique_bounds(g, work_limit=None)
    assert full.exact.all() and full.work.min() > 0
    # exactly what the largest component needs: it finishes, the others get nothing
    res = clique_bounds(g, work_limit=int(full.work[1]))
    assert res.exact.tolist() == [False, True, False]
    assert res.work.tolist() == [0, full.work[1], 0]
    assert [STOPS[t] for t in res.stop] == ["work", "none", "work"]
    # ... and with what the two largest need, the smallest alone is left
    res = clique_bounds(g, work_limit=int(full.work[1] + full.work[2]))
    assert res.exact.tolist() == [False, True, True]


def test_the_search_charges_what_the_docstring_says(monkeypatch):
    """Units: ``w`` per node plus ``popcount(p) * w`` per colour sort (w = 64-bit words)."""
    # the Python search; the compiled one charges the same (tests/dpknn/test_clique_kernel.py)
    monkeypatch.setattr(cliques, "_kernel", None)
    g = _graph(3, sizes=(130,))  # w = 3
    charges: list[int] = []
    sorts: list[int] = []
    real_sort, real_charge = cliques._colour_sort, cliques._Limits.charge

    def counting_sort(p, outside, lowest):
        sorts.append(3 * p.bit_count())
        return real_sort(p, outside, lowest)

    def counting_charge(self, units):
        charges.append(units)
        return real_charge(self, units)

    monkeypatch.setattr(cliques, "_colour_sort", counting_sort)
    monkeypatch.setattr(cliques._Limits, "charge", counting_charge)
    res = clique_bounds(g, work_limit=None)
    nodes = Counter(charges) - Counter(sorts)  # what is not a sort is a node, at w each
    assert set(nodes) == {3} and nodes[3] > 0 and len(sorts) > 1
    assert sum(charges) == res.work[0] == sum(sorts) + 3 * nodes[3]


# ------------------------------------------------------------------ the owner
def _rn_answers(owner, q: Query) -> list[Answer]:
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    return [Answer.from_message(owner.answer(alice.request(q))) for _ in range(2)]


def _owner_batch() -> Query:
    x = np.random.default_rng(5).random((300, 2))  # a search of ~58,000 units: exact (ω 54)
    return Query(task="rn", algorithm="proposed", x=x, radius=0.2, epsilon=0.5)


def test_the_owners_answers_are_the_same_on_a_slow_machine(make_owner, monkeypatch):
    q = _owner_batch()
    fast = _rn_answers(make_owner(seed=3, epsilon=10.0), q)
    clock = _SlowMachine()
    monkeypatch.setattr(cliques, "_clock", clock)
    slow = _rn_answers(make_owner(seed=3, epsilon=10.0), q)
    assert clock.reads > 0
    for a, b in zip(fast, slow):
        for f in ("labels", "radius", "sensitivity", "component", "clique_method"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert fast[0].sensitivity.max() == 54
    assert not np.array_equal(fast[0].labels, fast[1].labels)  # two requests, two noises


def test_an_owner_with_a_time_cap_answers_differently_on_a_slow_machine(make_owner,
                                                                        monkeypatch):
    """The check above has power: the opt-in cap makes the answer depend on the machine."""
    q = _owner_batch()
    fast = _rn_answers(make_owner(seed=3, epsilon=10.0, clique_time_limit_s=3600.0), q)
    monkeypatch.setattr(cliques, "_clock", _SlowMachine())
    slow = _rn_answers(make_owner(seed=3, epsilon=10.0, clique_time_limit_s=3600.0), q)
    assert fast[0].sensitivity.max() == 54 and slow[0].sensitivity.max() > 54
    assert not np.array_equal(fast[0].sensitivity, slow[0].sensitivity)


def test_the_owner_searches_with_its_own_budget(make_owner):
    x, r = _owner_batch().x, np.full(300, 0.2)
    assert make_owner()._plan(x, r).cliques.exact.all()
    small = make_owner(clique_work_limit=100)
    plan = small._plan(x, r)
    assert not plan.cliques.exact.all() and plan.cliques.work_limit == 100
    assert small._plan(x, r) is plan  # cached
    np.testing.assert_array_equal(plan.sensitivity, plan_rn(x, r, work_limit=100).sensitivity)


# ------------------------------------------------------------------ bad limits
BAD_WORK = [0, -1, 1.5, "x", True, None]


@pytest.mark.parametrize("value", BAD_WORK, ids=[repr(v) for v in BAD_WORK])
def test_the_owner_refuses_a_bad_work_limit_naming_it(make_owner, value):
    with pytest.raises(ConfigError, match=r"clique_work_limit = " + _re(value)
                       + r"; allowed: an integer >= 1"):
        make_owner(clique_work_limit=value)


@pytest.mark.parametrize("value", [0, 0.0, -2.5, float("nan"), float("inf")])
def test_the_owner_refuses_a_bad_time_cap(make_owner, value):
    with pytest.raises((ConfigError, TypeError), match="clique_time_limit_s"):
        make_owner(clique_time_limit_s=value)


@pytest.mark.parametrize(("kwargs", "message"), [
    *[({"work_limit": v}, r"work_limit = " + _re(v) + r"; allowed: an integer >= 1")
      for v in (0, -1, 1.5, "x", True)],
    *[({"time_limit_s": v}, r"time_limit_s = " + _re(v) + r"; allowed: a number of seconds")
      for v in (-1.0, float("nan"), "5", False)],
])
def test_clique_bounds_refuses_bad_limits_naming_them(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        clique_bounds(_graph(0, sizes=(5,)), **kwargs)

