"""The DP r-N / k-NN driver: analysts ask the DP owner through a runtime.

Each query is a three-call chain -- ``analyst.request`` → ``owner.answer`` →
``analyst.receive`` -- and the driver builds all chains before waiting once,
so on Ray the messages travel analyst to owner to analyst without passing
through the driver. The owner is a plain party here: a runtime actor runs
its calls one at a time (for concurrent serving see
:mod:`protocols.dp_knn.service`).

Examples
--------
>>> import numpy as np
>>> from core.runtime import RunContext, make_runtime
>>> from protocols.dp_knn.protocol import Query
>>> rt = make_runtime("inprocess")
>>> rt.start([owner_spec(party_id="owner", X=np.array([[0.1], [0.9]]), y=np.array([0, 1]),
...                      classes=[0, 1], lower=[0.0], upper=[1.0], epsilon=1.0, run_id="r"),
...           analyst_spec(party_id="alice", owner="owner", run_id="r")],
...          RunContext(run_id="r"))
>>> q = Query(task="rn", algorithm="proposed", x=np.array([[0.1], [0.9]]), radius=0.2,
...           epsilon=0.5)
>>> [a.epsilon for a in ask(rt, [("alice", "owner", q), ("alice", "owner", q)])]
[0.5, 0.5]
>>> rt.state("owner", "ledger").remaining().epsilon
0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.messages import PartyId
from core.runtime import PartySpec, Runtime
from parties.analyst import Analyst
from parties.dp_owner import DPOwner
from protocols.dp_knn.protocol import PROTOCOL, Answer, Query


def owner_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of a DP owner (``kwargs``: :class:`DPOwner`'s)."""
    return PartySpec(party_id, DPOwner, {"party_id": party_id, **kwargs})


def analyst_spec(*, party_id: PartyId, owner: PartyId, run_id: str, index: int = 1) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an analyst."""
    return PartySpec(party_id, Analyst, {"party_id": party_id, "owner": owner, "run_id": run_id,
                                         "index": index})


def ask(runtime: Runtime, requests: Sequence[tuple[PartyId, PartyId, Query]], *,
        first_round: int = 1) -> list[Answer]:
    """Send every ``(analyst, owner, query)`` and return the answers, in order.

    Request i travels in round ``first_round + i``. A refused request raises
    :class:`~core.errors.BudgetExhausted` (the owner's ledger is unchanged by it).
    """
    replies = []
    for i, (analyst, owner, query) in enumerate(requests):
        r = first_round + i
        msg = runtime.call(analyst, "request", query, r, protocol=PROTOCOL, round=r)
        reply = runtime.call(owner, "answer", msg, protocol=PROTOCOL, round=r)
        replies.append(runtime.call(analyst, "receive", reply, protocol=PROTOCOL, round=r))
    return list(runtime.fetch(replies))


__all__ = ["analyst_spec", "ask", "owner_spec"]
