"""One request/reply loop: analysts ask an owner through a runtime, the owner answers or refuses.

Both owners that answer analysts -- the DP r-N / k-NN owner and the Naive
Bayes model-release owner -- serve requests the same way. Each request is a
three-call chain ::

    analyst.request(request, round) → owner.<answer>(message) → analyst.receive(reply)

and :func:`ask` builds every chain before waiting once, so on Ray the
messages travel analyst → owner → analyst without passing through the
driver. An owner that should serve several analysts at once is given
``max_concurrency > 1`` in its :class:`~core.runtime.PartySpec`: on Ray its
calls then run concurrently (see :mod:`core.runtime.concurrency` for what
stays deterministic).

A request the owner's ledger cannot pay for is not an error inside the
protocol: the owner replies with a ``"refused"`` message (:func:`refusal`:
the request id, ε 0 and the ledger's reason; no data), which is sealed and
recorded like any other, and the analyst's ``receive`` returns a
:class:`Refused`. :func:`ask` then raises
:class:`~core.errors.BudgetExhausted` for the first refused request (after
every chain has run), or, with ``refusals="return"``, returns the
:class:`Refused` in that request's place.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.messages import Message
>>> request = Message("r", "demo", 3, 0, "alice", "owner", "ask",
...                   {"request": np.asarray(7)})
>>> reply = refusal(request, "would exceed the owner's budget")
>>> (reply.sender, reply.receiver, reply.kind, reply.round)
('owner', 'alice', 'refused', 3)
>>> read_refusal(reply)
Refused(owner='owner', analyst='alice', request=7, reason="would exceed the owner's budget")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ppknn.core.errors import BudgetExhausted, ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId
from ppknn.core.runtime.base import Runtime
from ppknn.core.runtime.typed import typed

REFUSED = "refused"
"""Kind of the owner's reply to a request its ledger refused."""

REFUSALS = ("raise", "return")


@dataclass(frozen=True)
class Refused:
    """A request the owner refused because its ledger could not pay for it.

    Nothing was released and nothing was charged.
    """

    owner: PartyId
    analyst: PartyId
    request: int
    reason: str

    def error(self) -> BudgetExhausted:
        """The :class:`~core.errors.BudgetExhausted` the owner's ledger raised."""
        return BudgetExhausted(self.reason)


def refusal(request: Message, reason: str) -> Message:
    """The owner's reply to ``request`` when its ledger refuses it (ε 0, the reason, no data)."""
    rid = request.payload.get("request")
    return Message(run_id=request.run_id, protocol=request.protocol, round=request.round,
                   seq=-1, sender=request.receiver, receiver=request.sender, kind=REFUSED,
                   payload={"request": np.asarray(-1 if rid is None else rid,
                                                  dtype=np.int64).reshape(()),
                            "epsilon": np.asarray(0.0),
                            "reason": np.asarray(str(reason))})


def read_refusal(message: Message) -> Refused:
    """Decode a ``"refused"`` message."""
    if message.kind != REFUSED:
        raise ProtocolError(f"expected a {REFUSED!r} message, got {message.kind!r}")
    p = message.payload
    try:
        rid = int(np.asarray(p["request"]).reshape(-1)[0])
        reason = str(np.asarray(p["reason"]).reshape(-1)[0])
    except (KeyError, IndexError) as exc:
        raise ProtocolError(f"malformed {REFUSED!r} message: {exc}") from None
    return Refused(owner=message.sender, analyst=message.receiver, request=rid, reason=reason)


def answer_or_refuse(answer: Callable[[Message], Message], request: Message) -> Message:
    """``answer(request)``, or :func:`refusal` when it raises ``BudgetExhausted``.

    The owner's ledger refuses before any data is touched, so the refusal
    carries nothing but the ledger's reason.
    """
    try:
        return answer(request)
    except BudgetExhausted as exc:
        return refusal(request, str(exc))


class Requester(Protocol):
    """What :func:`ask` calls on an analyst (each protocol's interface types it)."""

    def request(self, request: Any, round: int) -> Message:
        """The message asking the owner to answer ``request`` in ``round``."""
        ...

    def receive(self, reply: Message) -> Any:
        """Keep the owner's reply (or its :func:`refusal`) and return it."""
        ...


class Server(Protocol):
    """What :func:`ask` calls on an owner (each protocol's interface types it)."""

    def reply(self, request: Message) -> Message:
        """The reply to a request message, or a :func:`refusal`."""
        ...


def ask(runtime: Runtime, requests: Sequence[tuple[PartyId, PartyId, Any]], *,
        analyst_api: type[Requester], owner_api: type[Server], protocol: str,
        first_round: int = 1, refusals: str = "raise") -> list[Any]:
    """Send every ``(analyst, owner, request)``; return what the analysts received, in order.

    Request i travels in round ``first_round + i`` as the chain
    ``analyst.request(request, round)`` → ``owner.reply(message)`` →
    ``analyst.receive(reply)`` (module docstring), each called through the
    role's interface (:meth:`~core.runtime.base.Runtime.typed`).

    Parameters
    ----------
    runtime:
        A started runtime hosting the analysts and owners.
    requests:
        ``(analyst, owner, request)`` triples; ``request`` is the protocol's
        request object (a query batch, a model request).
    analyst_api, owner_api:
        The analysts' and the owners' interfaces (a :class:`Requester` and a
        :class:`Server`, typed by the protocol: e.g.
        :class:`~protocols.dp_knn.api.AnalystAPI`, :class:`~protocols.dp_knn.api.DPOwnerAPI`).
    protocol:
        The protocol name, for failure reports.
    first_round:
        Round of the first request.
    refusals:
        ``"raise"``: a refused request raises
        :class:`~core.errors.BudgetExhausted` (the owner's ledger is
        unchanged by it), after every request has been answered or refused.
        ``"return"``: its :class:`Refused` stands in its place.
    """
    if refusals not in REFUSALS:
        raise ConfigError(f"refusals must be one of {list(REFUSALS)}, got {refusals!r}")
    analysts = typed(runtime, analyst_api, dict.fromkeys(a for a, _, _ in requests))
    owners = typed(runtime, owner_api, dict.fromkeys(o for _, o, _ in requests))
    replies = []
    for i, (analyst, owner, request) in enumerate(requests):
        r = first_round + i
        msg = analysts.call(analyst, protocol=protocol, round=r).request(request, r)
        reply = owners.call(owner, protocol=protocol, round=r).reply(msg)
        replies.append(analysts.call(analyst, protocol=protocol, round=r).receive(reply))
    received = list(runtime.fetch(replies))
    if refusals == "raise":
        first = next((x for x in received if isinstance(x, Refused)), None)
        if first is not None:
            raise first.error()
    return received


__all__ = ["REFUSED", "REFUSALS", "Refused", "Requester", "Server", "answer_or_refuse", "ask",
           "read_refusal", "refusal"]
