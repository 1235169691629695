"""The DP r-N / k-NN driver: analysts ask the DP owner through a runtime.

Each query is a three-call chain -- ``analyst.request`` → ``owner.answer`` →
``analyst.receive`` -- and the driver builds all chains before waiting once,
so on Ray the messages travel analyst to owner to analyst without passing
through the driver. The owner is a plain party here: a runtime actor runs
its calls one at a time (for concurrent serving see
:mod:`protocols.dp_knn.service`).

The party classes are bound to their roles in :mod:`parties.specs`
(``dp_owner_spec``, ``analyst_spec``), whose examples run this driver.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.messages import PartyId
from core.runtime import Runtime
from protocols.dp_knn.protocol import PROTOCOL, Answer, Query


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


__all__ = ["ask"]
