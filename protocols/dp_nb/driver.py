"""The model-release driver: analysts ask the NB owner through a runtime.

Each request is a three-call chain -- ``requester.request`` →
``owner.train`` → ``requester.receive`` -- and all chains are built before
one wait, so on Ray the messages travel party to party without passing
through the driver.

Examples
--------
>>> import numpy as np
>>> from core.runtime import RunContext, make_runtime
>>> from protocols.dp_nb.protocol import ModelRequest
>>> from protocols.dp_nb.schema import FeatureSchema
>>> schema = FeatureSchema.build(1, bounds=([0.0], [10.0]))
>>> X, y = np.array([[1.0], [2.0], [8.0], [9.0]] * 25), np.array([0, 0, 1, 1] * 25)
>>> rt = make_runtime("inprocess")
>>> rt.start([owner_spec(party_id="owner", X=X, y=y, classes=[0, 1], bounds=([0.0], [10.0]),
...                      epsilon=1.0, run_id="r"),
...           requester_spec(party_id="alice", owner="owner", run_id="r", classes=[0, 1],
...                          schema=schema)], RunContext(run_id="r"))
>>> models = ask(rt, [("alice", "owner", ModelRequest(epsilon=0.5))] * 2)
>>> [m.epsilon for m in models], rt.state("owner", "remaining_budget").epsilon
([0.5, 0.5], 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.messages import PartyId
from core.runtime import PartySpec, Runtime
from parties.nb_owner import NBOwner, NBRequester
from protocols.dp_nb.protocol import PROTOCOL, ModelRequest, ReleasedModel


def owner_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an NB owner (``kwargs``: :class:`NBOwner`'s)."""
    return PartySpec(party_id, NBOwner, {"party_id": party_id, **kwargs})


def requester_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an analyst (``kwargs``: :class:`NBRequester`'s)."""
    return PartySpec(party_id, NBRequester, {"party_id": party_id, **kwargs})


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


__all__ = ["ask", "owner_spec", "requester_spec"]
