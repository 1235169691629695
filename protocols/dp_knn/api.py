"""The DP r-N / k-NN roles' interfaces: the methods the driver calls, with their types.

:class:`~protocols.dp_knn.parties.analyst.Analyst` implements :class:`AnalystAPI` and
:class:`~protocols.dp_knn.parties.dp_owner.DPOwner` :class:`DPOwnerAPI`; the request/reply
loop (:func:`core.service.ask`) calls them through
``typed(runtime, ...)`` (:mod:`core.runtime.typed`).
"""

from __future__ import annotations

from typing import Protocol

from ppknn.core.messages import Message
from ppknn.core.service import Refused
from ppknn.protocols.dp_knn.protocol import Answer, Query


class AnalystAPI(Protocol):
    """An analyst: sends request batches, keeps the answers."""

    def request(self, query: Query, round: int = 0) -> Message:
        """The message asking the owner to answer ``query`` (a fresh request id)."""
        ...

    def receive(self, reply: Message) -> Answer | Refused:
        """Keep the owner's answer (or refusal) and return it."""
        ...


class DPOwnerAPI(Protocol):
    """The central DP owner: answers a request batch or refuses it."""

    def reply(self, request: Message) -> Message:
        """:meth:`answer`, or a ``"refused"`` message when the ledger refuses the batch."""
        ...


__all__ = ["AnalystAPI", "DPOwnerAPI"]
