"""Concurrent analysts never spend more than the budget together (threads and asyncio)."""

from __future__ import annotations

import asyncio
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import BudgetExhausted
from parties.analyst import Analyst
from parties.dp_owner import DPOwner
from protocols.dp_knn.protocol import Answer, Query
from protocols.dp_knn.service import DPOwnerService
from tests.dpknn.conftest import owner_kwargs

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


async def test_asyncio_service_serves_eight_analysts_concurrently():
    service = DPOwnerService(owner=owner_kwargs(epsilon=1.0), workers=4)
    analysts = [Analyst(party_id=f"a{i}", owner="owner", run_id="run") for i in range(8)]

    async def run(a, i):
        outcomes = []
        for j in range(3):
            try:
                reply = await service.submit(a.request(_query(0.125, i + j)))
                outcomes.append(a.receive(reply).epsilon)
            except BudgetExhausted:
                outcomes.append(None)
        return outcomes

    results = await asyncio.gather(*(run(a, i) for i, a in enumerate(analysts)))
    flat = [e for r in results for e in r]
    assert flat.count(0.125) == 8 and flat.count(None) == 16
    assert (await service.spent()).epsilon == 1.0
    assert await service.peak_concurrency() >= 2  # requests really overlapped
    table = await service.transcript()
    kinds = table.column("kind").to_pylist()
    assert kinds.count("answer") == 8 and kinds.count("refused") == 16
    assert sum(k.startswith(("rn:", "knn:")) for k in kinds) == 24
    totals = await service.close()
    assert totals["messages"] == 48


def test_service_rejects_nothing_it_can_pay_for():
    service = DPOwnerService(owner=owner_kwargs(epsilon=1.0))
    alice = Analyst(party_id="alice", owner="owner", run_id="run")

    async def go():
        return await asyncio.gather(*(service.submit(alice.request(_query(0.25, i)))
                                      for i in range(4)))

    replies = asyncio.run(go())
    assert sorted(Answer.from_message(r).request for r in replies) == [0, 1, 2, 3]
    with pytest.raises(BudgetExhausted):
        asyncio.run(service.submit(alice.request(_query(0.01))))
