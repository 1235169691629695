"""The DP owner: answers, budgets checked before the data, transcripts with ε, modes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ppknn.core.errors import BudgetExhausted, ProtocolError
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_knn.driver import ask
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.parties import analyst_spec, dp_owner_spec
from ppknn.protocols.dp_knn.parties.analyst import Analyst, one_at_a_time
from ppknn.protocols.dp_knn.protocol import Answer, Query
from ppknn.protocols.dp_knn.rn import classify_rn
from tests.dpknn.conftest import IndexSpy, owner_kwargs


def _ask(owner, analyst, query):
    return Answer.from_message(owner.answer(analyst.request(query)))


def test_answer_is_the_classifier_on_the_owners_stream(make_owner, queries):
    owner = make_owner(seed=4)
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    q = Query(task="rn", algorithm="proposed", x=queries, radius=0.15, epsilon=0.7)
    ans = _ask(owner, alice, q)
    kw = owner_kwargs(seed=4)
    y = (kw["y"] == "genuine").astype(np.int64)
    ref = classify_rn(LabelIndex(kw["X"], y, n_classes=2), queries, 0.15, algorithm="proposed",
                      epsilon=0.7, rng=owner._policy.generator("dp-owner", "answer", "alice", 0))
    np.testing.assert_array_equal(ans.labels, ref.labels)
    np.testing.assert_array_equal(ans.sensitivity, ref.sensitivity)
    assert ans.epsilon == 0.7 and ans.request == 0


@pytest.mark.parametrize("query", [
    dict(task="rn", algorithm="proposed", radius=0.2),
    dict(task="rn", algorithm="baseline-laplace", radius=0.2),
    dict(task="knn", algorithm="noninteractive", k=5),
    dict(task="knn", algorithm="baseline", k=5),
])
def test_overspending_batch_is_refused_before_any_data_access(make_owner, queries, query):
    owner = make_owner(epsilon=1.0)
    spy = IndexSpy(owner._index)
    owner._index = spy
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    _ask(owner, alice, Query(x=queries, epsilon=0.75, **query))
    assert spy.calls  # the first batch read the data
    spy.calls.clear()
    before = owner.ledger.entries
    with pytest.raises(BudgetExhausted, match="exceed the owner's budget"):
        owner.answer(alice.request(Query(x=queries, epsilon=0.5, **query)))
    assert spy.calls == []
    assert owner.ledger.entries == before
    assert owner.ledger.spent_exact()[0] == Fraction(3, 4)


def test_per_analyst_cap_and_global_budget(make_owner, queries):
    owner = make_owner(epsilon=1.0, analyst_epsilon=0.5)
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    bob = Analyst(party_id="bob", owner="owner", run_id="run")
    q = dict(task="rn", algorithm="proposed", x=queries, radius=0.1)
    _ask(owner, alice, Query(epsilon=0.4, **q))
    with pytest.raises(BudgetExhausted, match="analyst 'alice'"):
        owner.answer(alice.request(Query(epsilon=0.2, **q)))
    _ask(owner, alice, Query(epsilon=0.1, **q))  # a smaller batch still fits alice's cap
    _ask(owner, bob, Query(epsilon=0.5, **q))
    with pytest.raises(BudgetExhausted, match="owner's budget"):
        owner.answer(bob.request(Query(epsilon=0.01, **q)))
    assert owner.remaining().epsilon == 0.0
    assert [e.analyst for e in owner.ledger.entries] == ["alice", "alice", "bob"]


def test_refused_request_id_can_be_reused_but_answered_one_cannot(make_owner, queries):
    owner = make_owner(epsilon=1.0)
    q = Query(task="rn", algorithm="proposed", x=queries, radius=0.1, epsilon=2.0)
    msg = q.to_message(run_id="run", sender="alice", receiver="owner", request=3)
    with pytest.raises(BudgetExhausted):
        owner.answer(msg)
    ok = Query(task="rn", algorithm="proposed", x=queries, radius=0.1, epsilon=0.5)
    owner.answer(ok.to_message(run_id="run", sender="alice", receiver="owner", request=3))
    with pytest.raises(ProtocolError, match="reused request id 3"):
        owner.answer(ok.to_message(run_id="run", sender="alice", receiver="owner", request=3))


def test_seeded_owners_repeat_and_request_ids_change_the_noise(make_owner, queries):
    q = Query(task="rn", algorithm="baseline-laplace", x=queries, radius=0.1, epsilon=0.5)
    runs = []
    for _ in range(2):
        owner = make_owner(seed=8, epsilon=10.0)
        alice = Analyst(party_id="alice", owner="owner", run_id="run")
        runs.append([_ask(owner, alice, q).labels for _ in range(3)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[0][1])


def test_knn_answers_carry_converted_radii(make_owner, queries):
    owner = make_owner(epsilon=5.0)
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    for algorithm in ("interactive", "noninteractive"):
        ans = _ask(owner, alice, Query(task="knn", algorithm=algorithm, x=queries, k=10,
                                       epsilon=2.0, weight=0.25))
        assert ans.epsilon == 2.0 and np.all(ans.radius > 0) and np.all(ans.sensitivity >= 1)
    base = _ask(owner, alice, Query(task="knn", algorithm="baseline", x=queries, k=10,
                                    epsilon=1.0))
    assert np.all(base.sensitivity == len(queries)) and np.all(np.isnan(base.radius))
    assert owner.remaining().epsilon == 0.0


def test_one_at_a_time_spends_the_same_and_loses_the_overlap_analysis(make_owner, queries):
    owner = make_owner(epsilon=1.0)
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    batch = Query(task="rn", algorithm="proposed", x=queries[:8], radius=0.3, epsilon=1.0)
    answers = [_ask(owner, alice, q) for q in one_at_a_time(batch)]
    assert [a.sensitivity.tolist() for a in answers] == [[1.0]] * 8
    assert sum(a.epsilon for a in answers) == pytest.approx(1.0)
    assert owner.ledger.spent().epsilon == pytest.approx(1.0)


def test_secure_mode_answers(make_owner, queries):
    owner = make_owner(mode="secure")
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    ans = _ask(owner, alice, Query(task="rn", algorithm="proposed", x=queries[:10], radius=0.2,
                                   epsilon=0.5))
    assert set(ans.labels.tolist()) <= {0, 1} and ans.epsilon == 0.5


def test_transcript_records_every_answer_with_its_price(tmp_path, queries):
    rt = make_runtime("inprocess")
    rt.start([dp_owner_spec(**{k: v for k, v in owner_kwargs(epsilon=1.0).items()
                               if k != "party_id"}, party_id="owner"),
              analyst_spec(party_id="alice", owner="owner", run_id="run"),
              analyst_spec(party_id="bob", owner="owner", run_id="run", index=2)],
             RunContext(run_id="run", transcript_dir=tmp_path / "t", secure_channels=True))
    asks = [("alice", "owner", Query(task="rn", algorithm="proposed", x=queries, radius=0.1,
                                     epsilon=0.25)),
            ("bob", "owner", Query(task="knn", algorithm="noninteractive", x=queries, k=5,
                                   epsilon=0.5)),
            ("alice", "owner", Query(task="knn", algorithm="baseline", x=queries, k=5,
                                     epsilon=0.125))]
    answers = ask(rt, asks)
    rt.close_transcript()
    rt.shutdown()
    msgs = Transcript(tmp_path / "t").messages(protocol="dp-knn")
    replies = [m for m in msgs if m.kind == "answer"]
    assert len(msgs) == 6 and len(replies) == 3
    assert sorted(Answer.from_message(m).epsilon for m in replies) == [0.125, 0.25, 0.5]
    assert {m.receiver for m in replies} == {"alice", "bob"}
    assert [a.epsilon for a in answers] == [0.25, 0.5, 0.125]


def test_conversion_queries_release_radii_only(make_owner, queries):
    from ppknn.protocols.dp_knn.conversion import convert_noninteractive

    owner = make_owner(epsilon=1.0, seed=3)
    alice = Analyst(party_id="alice", owner="owner", run_id="run")
    ans = _ask(owner, alice, Query(task="convert", algorithm="noninteractive", x=queries, k=7,
                                   epsilon=0.5))
    ref = convert_noninteractive(owner._index, queries, 7, epsilon=0.5, bounds=owner.bounds,
                                 rng=owner._policy.generator("dp-owner", "answer", "alice", 0))
    np.testing.assert_array_equal(ans.radius, ref.radii)
    assert np.all(ans.labels == -1) and ans.epsilon == 0.5
    assert owner.ledger.entries[-1].label == "convert:noninteractive x40 (request 0)"


def test_registered_as_a_reproduction():
    from ppknn.simulations import reproduce

    assert reproduce.load("gursoy").run is not None
    assert "Gursoy" in reproduce.available()["gursoy"]


def test_cached_plans_keep_no_edges_and_answer_as_a_fresh_owner():
    """A dense batch's plan is cached in O(n) memory; the answers do not change."""
    from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
    from ppknn.protocols.dp_knn.protocol import Answer, Query
    from ppknn.protocols.dp_knn.rn import plan_rn
    from tests.dpknn.conftest import owner_kwargs

    x = np.random.default_rng(8).random((300, 2))
    full = plan_rn(x, np.full(300, 0.2))
    assert len(full.graph.edges) > 10_000  # dense: most pairs overlap

    def ask(owner, rid, epsilon):
        q = Query(task="rn", algorithm="proposed", x=x, radius=0.2, epsilon=epsilon)
        return Answer.from_message(owner.answer(q.to_message(
            run_id="run", sender="alice", receiver="owner", request=rid)))

    owner = DPOwner(**owner_kwargs(epsilon=10.0))
    answers = [ask(owner, rid, eps) for rid, eps in ((0, 1.0), (1, 2.0), (2, 1.0))]
    (plan,) = owner._plans.values()  # one batch at three ε: analysed once
    kept = sum(a.nbytes for a in (plan.graph.edges, plan.graph.component, plan.cliques.size))
    assert kept < 100 * 300 < full.graph.edges.nbytes
    assert plan.graph.packed is None  # nor the packed adjacency
    np.testing.assert_array_equal(plan.graph.component, full.graph.component)
    np.testing.assert_array_equal(plan.cliques.size, full.cliques.size)
    for rid, eps in ((1, 2.0), (2, 1.0)):  # each answer equals a fresh owner's (no cache)
        fresh = ask(DPOwner(**owner_kwargs(epsilon=10.0)), rid, eps)
        got = answers[rid]
        for field in ("labels", "sensitivity", "component", "clique_method"):
            np.testing.assert_array_equal(getattr(got, field), getattr(fresh, field))
