"""The model-release driver: analysts ask the NB owner through a runtime.

Each request is a three-call chain -- ``requester.request`` →
``owner.train`` → ``requester.receive`` -- and all chains are built before
one wait, so on Ray the messages travel party to party without passing
through the driver.

The party classes are bound to their roles in :mod:`parties.specs`
(``nb_owner_spec``, ``nb_requester_spec``), whose examples run this driver.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.messages import PartyId
from core.runtime import Runtime
from protocols.dp_nb.protocol import PROTOCOL, ModelRequest, ReleasedModel


def ask(runtime: Runtime, requests: Sequence[tuple[PartyId, PartyId, ModelRequest]], *,
        first_round: int = 1) -> list[ReleasedModel]:
    """Send every ``(analyst, owner, request)``; return the released models in order.

    Request i travels in round ``first_round + i``. A request the owner's ledger
    cannot pay for raises :class:`~core.errors.BudgetExhausted` (nothing released).
    """
    replies = []
    for i, (analyst, owner, request) in enumerate(requests):
        r = first_round + i
        msg = runtime.call(analyst, "request", request, r, protocol=PROTOCOL, round=r)
        reply = runtime.call(owner, "train", msg, protocol=PROTOCOL, round=r)
        replies.append(runtime.call(analyst, "receive", reply, protocol=PROTOCOL, round=r))
    return list(runtime.fetch(replies))


__all__ = ["ask"]
