"""The client/server protocol: limits, exact correct-side probability, views, variants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ppknn.core.errors import BudgetExhausted
from ppknn.core.messages import Message
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.dptt.config import DPTTSetup, ServerInfo
from ppknn.protocols.dptt.driver import run_dptt
from ppknn.protocols.dptt.neighbours import NeighbourIndex
from ppknn.protocols.dptt.parties import dptt_specs
from ppknn.protocols.dptt.parties.dptt_client import DPTTClient
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.protocols.dptt.utility import Utility
from ppknn_reproductions.experiments.dptt_session import DPTTSession

from .helpers import run_recorded

ALPHA = 1e-6


def _data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, k)), rng.normal(size=(300, k)) * 1.2


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize(("utility", "eps"), [(Utility.cmp(), 300.0),
                                              (Utility.dis(1.0), 1e15)])
def test_large_epsilon_reaches_the_plain_descent_leaf(k, utility, eps):
    x, q = _data(3000, k)
    tree = ModifiedKDTree.build(x)
    with DPTTSession(tree=tree, seed=5, record=False) as s:
        out = s.run(q, DPTTSetup(variant="basic", utility=utility, epsilon=eps)).outcome
    assert np.array_equal(out.slots, np.arange(len(q)))
    assert np.array_equal(out.ids, tree.descend(q, rule=utility.name))


def _binomial_p(successes: int, n: int, p: float) -> float:
    return float(stats.binomtest(successes, n, p).pvalue)


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_cmp_takes_the_correct_side_with_the_exact_probability(eps):
    n = 200_000
    client = DPTTClient(run_id="t", seed=int(eps * 10))
    client.configure(DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=eps),
                     ServerInfo(n_points=2, dim=1, height=1))
    rng = np.random.default_rng(1)
    client.load_queries(rng.uniform(-1, 1, size=(n, 1)))
    client.open()
    parent = rng.uniform(-1, 1, size=(n, 1))
    nodes = Message("t", "dptt", 1, 0, "server", "client", "nodes",
                    {"slot": np.arange(n, dtype=np.int32), "disc": np.array([0]),
                     "parent": parent, "parent_id": np.zeros(n, dtype=np.int64)})
    bits = client.choose(nodes).payload["bits"]
    correct = int((bits == (client.queries[:, 0] >= parent[:, 0])).sum())
    p = math.exp(eps / 2) / (1 + math.exp(eps / 2))
    assert _binomial_p(correct, n, p) > ALPHA
    for wrong in (eps * 1.3, eps / 1.3):  # power: a 30% wrong ε is rejected
        p_wrong = math.exp(wrong / 2) / (1 + math.exp(wrong / 2))
        assert _binomial_p(correct, n, p_wrong) < ALPHA


def test_first_level_bits_in_the_transcript_have_the_exact_law():
    x = np.arange(64.0)
    rng = np.random.default_rng(2)
    q = rng.uniform(-10, 74, size=(40_000, 1))
    eps = 1.0
    result, msgs = run_recorded(x, q, DPTTSetup(variant="basic", utility=Utility.cmp(),
                                                epsilon=eps), seed=9)
    first = next(m for m in msgs if m.kind == "bits" and m.round == 1).payload["bits"]
    root = 32.0  # the median of 0..63 at index 32
    correct = int((first == (q[:, 0] >= root)).sum())
    p = 1 / (1 + math.exp(-eps / 2))
    assert _binomial_p(correct, len(q), p) > ALPHA
    assert _binomial_p(correct, len(q), 1 / (1 + math.exp(-1.3 * eps / 2))) < ALPHA


def test_server_view_is_the_batch_size_and_the_bits():
    x, q = _data(1024, 2)
    setup = DPTTSetup(variant="GS", utility=Utility.dis(0.5), epsilon=1.0)
    result, msgs = run_recorded(x, q, setup, seed=1)
    to_server = [m for m in msgs if m.receiver == "server"]
    assert [m.kind for m in to_server].count("open") == 1
    assert sorted({m.kind for m in to_server}) == ["bits", "open"]
    opening = next(m for m in to_server if m.kind == "open")
    assert set(opening.payload) == {"n_queries"} and opening.payload["n_queries"][0] == len(q)
    bits = sorted((m for m in to_server if m.kind == "bits"), key=lambda m: m.round)
    assert [m.round for m in bits] == list(range(1, result.rounds + 1))
    for m in bits:
        assert set(m.payload) == {"bits"} and m.payload["bits"].dtype == np.uint8
        assert set(np.unique(m.payload["bits"])) <= {0, 1}
    assert len(msgs) == result.messages == 2 * result.rounds + 2
    assert sum(len(m.payload["bits"]) for m in bits) == result.outcome.decisions


@pytest.mark.parametrize(("label", "per_query"), [("basic", 10), ("P3", 7 * 8), ("E4", 6),
                                                  ("GS", 55), ("N7", 10), ("GS-N4", 55)])
def test_decisions_drawn_equal_the_composition_count(label, per_query):
    x, q = _data(1024, 2)  # N = 2^10: every path has H = 10 decisions
    setup = DPTTSetup(variant=label, utility=Utility.cmp(), epsilon=1.0)
    with DPTTSession(points=x, record=False) as s:
        res = s.run(q, setup)
    assert res.account.compositions == per_query
    assert res.outcome.decisions == per_query * len(q)


def test_variant_releases_with_a_deterministic_client():
    x, q = _data(1000, 2)  # N not a power of two: leaves at depths 9 and 10
    tree = ModifiedKDTree.build(x)
    index = NeighbourIndex(x)
    plain = tree.descend(q, rule="cmp")
    out = {}
    with DPTTSession(tree=tree, record=False) as s:
        for label in ("E3", "P2", "GS", "N6", "GS-N3"):
            out[label] = s.run(q, DPTTSetup(variant=label, utility=Utility.cmp(),
                                            epsilon=300.0)).outcome
    for i in range(len(q)):
        e3 = set(out["E3"].ids[out["E3"].slots == i])
        node = 1
        for depth in range(tree.height - 3):  # the plain path down to depth H - 3
            d = depth % 2
            node = 2 * node + int(q[i, d] >= x[tree.value[node], d])
        assert e3 == set(tree.subtree_leaves(node)) and plain[i] in e3
        p2 = out["P2"].ids[out["P2"].slots == i]
        assert len(p2) == 4 and plain[i] in p2
        assert len({int(np.searchsorted(tree.lo[4:8], tree.perm.tolist().index(j), "right"))
                    for j in p2}) == 4  # one leaf in each depth-2 subtree
        gs = out["GS"].ids[out["GS"].slots == i]
        assert plain[i] in gs and tree.height <= len(gs) <= tree.height + 1
        n6 = out["N6"].ids[out["N6"].slots == i]
        assert set(n6) == set(index.neighbourhoods(np.array([plain[i]]), 6)[0])
        gsn = set(out["GS-N3"].ids[out["GS-N3"].slots == i])
        assert gsn == set(index.neighbourhoods(gs, 3).ravel())
    assert np.array_equal(out["GS"].found, out["GS"].released)
    assert np.all(out["E3"].released == out["E3"].found)


def test_seeded_runs_repeat_and_seeds_differ():
    x, q = _data(2048, 2)
    setup = DPTTSetup(variant="GS", utility=Utility.cmp(), epsilon=1.0)
    runs = []
    for seed in (4, 4, 5):
        with DPTTSession(points=x, seed=seed, record=False) as s:
            runs.append(s.run(q, setup).outcome)
    assert np.array_equal(runs[0].ids, runs[1].ids)
    assert np.array_equal(runs[0].slots, runs[1].slots)
    assert not np.array_equal(runs[0].ids, runs[2].ids)


def test_client_counts_the_data_it_has_seen():
    x, q = _data(256, 1)
    with DPTTSession(points=x, record=False) as s:
        cmp = s.run(q, DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=200.0))
        dis = s.run(q, DPTTSetup(variant="basic", utility=Utility.dis(1.0), epsilon=1.0))
    # CMP: 8 distinct node values on the path, the released leaf may repeat one of them
    assert np.all((cmp.outcome.seen >= 8) & (cmp.outcome.seen <= 9))
    assert np.all(dis.outcome.seen > cmp.outcome.seen.min())  # DIS sees two children per level


def test_budget_is_charged_before_any_bit():
    x, q = _data(1024, 2)
    setup = DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=1.0)  # costs 10.0
    rt = make_runtime("inprocess")
    rt.start(dptt_specs(run_id="t", points=x, budget=15.0), RunContext(run_id="t"))
    try:
        first = run_dptt(rt, q, setup)
        with pytest.raises(BudgetExhausted, match="exceed the owner's budget"):
            run_dptt(rt, q, setup)
        rt.close_transcript()
        msgs = Transcript(rt.transcript_table()).messages()
        ledger = rt.state("client", "ledger")
    finally:
        rt.shutdown()
    assert first.account.cost.epsilon == 10.0
    assert ledger.spent().epsilon == 10.0
    assert [m.kind for m in msgs].count("bits") == first.rounds  # none from the refused batch


def test_secure_mode_draws_exact_bits_from_os_entropy():
    x, q = _data(256, 2)
    setup = DPTTSetup(variant="GS", utility=Utility.cmp(), epsilon=300.0)
    rt = make_runtime("inprocess")
    rt.start(dptt_specs(run_id="t", points=x, mode="secure"), RunContext(run_id="t"))
    try:
        first = run_dptt(rt, q[:50], setup).outcome
        second = run_dptt(rt, q[:50], setup).outcome
    finally:
        rt.shutdown()
    tree = ModifiedKDTree.build(x)
    plain = tree.descend(q[:50], rule="cmp")
    assert all(plain[i] in first.ids[first.slots == i] for i in range(50))
    assert np.array_equal(first.ids, second.ids)  # ε = 300: deterministic in law, any entropy


def test_proven_at_epsilon_draws_the_bits_of_the_thesis_reading_at_half_epsilon():
    # one mechanism, two labels: exp(εu/2Δ) at ε is exp(εu/Δ) at ε/2 (same seed, same bits)
    x, q = _data(512, 2)
    outs = []
    for eps, cal in ((3.0, "proven"), (1.5, "thesis-reading"), (1.5, "proven")):
        setup = DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=eps, calibration=cal)
        outs.append(run_recorded(x, q, setup, seed=9)[0].outcome)
    assert np.array_equal(outs[0].ids, outs[1].ids)
    assert not np.array_equal(outs[0].ids, outs[2].ids)
