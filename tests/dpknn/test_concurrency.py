"""Concurrent analysts never spend more than the budget together (threads, and the runtime path).

The Ray runtime (a threaded owner actor) is exercised in ``test_ray.py``.
"""

from __future__ import annotations

import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.errors import BudgetExhausted
from ppknn.core.service import Refused
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_knn.driver import ask
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.protocol import Answer, Query
from tests.dpknn.conftest import owner_kwargs
from tests.dpknn.serving import rounds_of_requests, serve

XQ = np.random.default_rng(7).random((60, 2))


def _query(epsilon, i=0):
    algorithms = [("rn", "proposed", {"radius": 0.1}), ("knn", "noninteractive", {"k": 5}),
                  ("rn", "baseline-laplace", {"radius": 0.1}), ("knn", "baseline", {"k": 5})]
    task, algorithm, extra = algorithms[i % len(algorithms)]
    return Query(task=task, algorithm=algorithm, x=XQ, epsilon=epsilon, **extra)


def _hammer(owner, epsilons_per_analyst):
    """Every analyst thread submits its batches as fast as it can, all starting together."""
    barrier = threading.Barrier(len(epsilons_per_analyst))
    answered: list[float] = []
    refused: list[tuple[str, float]] = []
    lock = threading.Lock()

    def analyst(i, epsilons):
        me = Analyst(party_id=f"analyst-{i}", owner="owner", run_id="run")
        barrier.wait()
        for j, eps in enumerate(epsilons):
            try:
                ans = Answer.from_message(owner.answer(me.request(_query(eps, i + j))))
                with lock:
                    answered.append(ans.epsilon)
            except BudgetExhausted:
                with lock:
                    refused.append((me.party_id, eps))

    threads = [threading.Thread(target=analyst, args=(i, e))
               for i, e in enumerate(epsilons_per_analyst)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answered, refused


def test_eight_threads_spend_exactly_the_budget():
    owner = DPOwner(**owner_kwargs(epsilon=1.0))
    answered, refused = _hammer(owner, [[0.1] * 4] * 8)
    assert len(answered) == 10 and len(refused) == 22
    assert owner.ledger.spent_exact()[0] == Fraction(1)
    assert len(owner.ledger.entries) == 10


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.05, 0.1, 0.25, 0.4]), min_size=1, max_size=4),
                min_size=8, max_size=8))
def test_concurrent_spending_never_exceeds_the_budget(epsilons):
    owner = DPOwner(**owner_kwargs(epsilon=1.0, analyst_epsilon=0.5))
    answered, refused = _hammer(owner, epsilons)
    spent = owner.ledger.spent_exact()[0]
    assert spent <= 1
    assert spent == sum(Fraction(repr(e)) for e in answered)
    assert len(answered) + len(refused) == sum(len(e) for e in epsilons)
    for i in range(8):
        assert owner.ledger.spent_exact(f"analyst-{i}")[0] <= Fraction(1, 2)
    # budgets only shrink, so a batch refused then still does not fit now
    for who, eps in refused:
        e = Fraction(repr(eps))
        assert e > 1 - spent or e > Fraction(1, 2) - owner.ledger.spent_exact(who)[0]


def test_runtime_serves_eight_analysts_within_the_budget(tmp_path):
    """The runtime path: 24 batches of ε 1/8 from 8 analysts, budget 1 → exactly 8 answered.

    In-process the owner (``max_concurrency=8``) still answers in the driver's order, so
    the first round of requests is answered and the rest refused -- each refusal a recorded
    ``"refused"`` message from the owner, the ledger untouched by it.
    """
    rt, names = serve("inprocess", epsilon=1.0, transcript_dir=tmp_path / "t")
    try:
        got = ask(rt, rounds_of_requests(names, 0.125, 3), refusals="return")
        ledger = rt.state("owner", "ledger")
        assert [isinstance(g, Refused) for g in got] == [False] * 8 + [True] * 16
        assert [g.epsilon for g in got[:8]] == [0.125] * 8
        assert ledger.spent_exact()[0] == Fraction(1) and len(ledger.entries) == 8
        assert {(g.owner, g.analyst, g.request) for g in got[8:]} == {
            ("owner", a, r) for a in names for r in (1, 2)}
        assert all("exceed the owner's budget" in g.reason for g in got[8:])
        with pytest.raises(BudgetExhausted, match="owner's budget"):  # the default: raise
            ask(rt, [("a0", "owner", _query(0.01))], first_round=30)
        assert len(rt.state("owner", "ledger").entries) == 8
        assert rt.state("a0", "refused").keys() == {1, 2, 3}
        totals = rt.close_transcript()
    finally:
        rt.shutdown()
    kinds = Transcript(tmp_path / "t").table().column("kind").to_pylist()
    assert kinds.count("answer") == 8 and kinds.count("refused") == 17
    assert sum(k.startswith(("rn:", "knn:")) for k in kinds) == 25
    assert totals["messages"] == 50


def test_runtime_rejects_nothing_it_can_pay_for():
    rt, _ = serve("inprocess", analysts=1, epsilon=1.0)
    try:
        answers = ask(rt, [("a0", "owner", _query(0.25, i)) for i in range(4)])
        assert sorted(a.request for a in answers) == [0, 1, 2, 3]
        with pytest.raises(BudgetExhausted):
            ask(rt, [("a0", "owner", _query(0.01))], first_round=10)
    finally:
        rt.shutdown()
