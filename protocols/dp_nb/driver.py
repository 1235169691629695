"""The model-release driver: analysts ask the NB owner through a runtime.

Each request is a three-call chain -- ``requester.request`` →
``owner.reply`` (training, or a refusal) → ``requester.receive`` -- run by
the request/reply loop of :mod:`core.service`: all chains are built
before one wait, so on Ray the messages travel party to party without
passing through the driver.

The party classes are bound to their roles in :mod:`protocols.dp_nb.parties`
(``nb_owner_spec``, ``nb_requester_spec``), whose examples run this driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ppknn.core import service
from ppknn.core.messages import PartyId
from ppknn.core.protocol import NO_ANSWER, PrivacySpent, ProtocolResult, Roles
from ppknn.core.runtime import Runtime
from ppknn.core.service import Refused
from ppknn.protocols.dp_nb.api import NBOwnerAPI, RequesterAPI
from ppknn.protocols.dp_nb.protocol import PROTOCOL, ModelRequest, ReleasedModel


def ask(runtime: Runtime, requests: Sequence[tuple[PartyId, PartyId, ModelRequest]], *,
        first_round: int = 1, refusals: str = "raise") -> list[ReleasedModel | Refused]:
    """Send every ``(analyst, owner, request)``; return the released models in order.

    Request i travels in round ``first_round + i``. A request the owner's ledger
    cannot pay for raises :class:`~core.errors.BudgetExhausted` (nothing released;
    the refusal is a recorded ``"refused"`` message), or with ``refusals="return"``
    comes back as a :class:`~core.service.Refused`. See :func:`core.service.ask`.
    """
    return service.ask(runtime, requests, analyst_api=RequesterAPI, owner_api=NBOwnerAPI,
                       protocol=PROTOCOL,
                       first_round=first_round, refusals=refusals)


def drive(runtime: Runtime, parties: Roles, config: ModelRequest,
          queries: np.ndarray) -> ProtocolResult:
    """The registry's driver interface (:class:`core.protocol.Driver`) for the model release.

    ``parties["owner"]`` is the NB owner and ``parties["analyst"]`` the
    analysts; each analyst sends ``config`` once (request i in round i + 1,
    through :func:`ask` with ``refusals="return"``). The query rows are split
    into as many contiguous shares as there are analysts
    (``numpy.array_split``); each share is classified with the model its
    analyst received (post-processing of the public release; the driver
    applies it) and stays unanswered (``-1``) if the owner refused the
    request. Privacy is read from the owner's ledger: its total, and what it
    charged each analyst. Hops: request, reply, receive (the requests run
    side by side).
    """
    (owner,) = parties["owner"]
    analysts = tuple(parties["analyst"])
    queries = np.asarray(queries, dtype=np.float64)
    received = ask(runtime, [(a, owner, config) for a in analysts], refusals="return")
    shares = np.array_split(np.arange(len(queries)), len(analysts))
    predictions = np.full(len(queries), NO_ANSWER, dtype=np.int64)
    share_of = np.zeros(len(queries), dtype=np.int64)
    per_party: dict[str, dict[str, Any]] = {}
    for i, (analyst, got, rows) in enumerate(zip(analysts, received, shares)):
        share_of[rows] = i
        released = isinstance(got, ReleasedModel)
        if isinstance(got, ReleasedModel) and len(rows):
            predictions[rows] = got.predict(queries[rows])
        per_party[analyst] = {"model_released": int(released), "queries": int(len(rows))}
    ledger = runtime.state(owner, "ledger")
    total = ledger.spent()
    spent = {owner: (total.epsilon, total.delta)}
    for a in analysts:
        charged = ledger.spent(a)
        spent[a] = (charged.epsilon, charged.delta)
    refused = sum(isinstance(r, Refused) for r in received)
    private = config.config().private
    unit = ("add/remove one training record" if config.neighbours == "add-remove"
            else "replace one training record, class sizes public")
    guarantee = ("none (method 'non-private')" if not private else
                 f"{'ε' if config.delta == 0 else '(ε, δ)'}-DP, {unit} (released model)")
    return ProtocolResult(
        protocol=PROTOCOL, predictions=predictions, hops=3,
        privacy=PrivacySpent(guarantee=guarantee, epsilon=total.epsilon, delta=total.delta,
                             per_party=spent),
        metrics={"epsilon_per_model": config.epsilon if private else 0.0,
                 "delta_per_model": config.delta if private else 0.0,
                 "epsilon_spent": total.epsilon, "delta_spent": total.delta,
                 "released_models": len(received) - refused, "refused_requests": refused,
                 "method": config.method, "noise": config.noise},
        per_query={"analyst": share_of}, per_party=per_party,
        public={"owner": owner, "analysts": list(analysts)}, detail=tuple(received))


__all__ = ["ask", "drive"]
