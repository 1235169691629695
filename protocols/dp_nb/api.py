"""The DP Naive Bayes roles' interfaces: the methods the driver calls, with their types.

:class:`~protocols.dp_nb.parties.nb_owner.NBRequester` implements :class:`RequesterAPI` and
:class:`~protocols.dp_nb.parties.nb_owner.NBOwner` :class:`NBOwnerAPI`; the request/reply
loop (:func:`core.service.ask`) calls them through
``typed(runtime, ...)`` (:mod:`core.runtime.typed`).
"""

from __future__ import annotations

from typing import Protocol

from ppknn.core.messages import Message
from ppknn.core.service import Refused
from ppknn.protocols.dp_nb.protocol import ModelRequest, ReleasedModel


class RequesterAPI(Protocol):
    """An analyst asking for one released model."""

    def request(self, request: ModelRequest, round: int = 1) -> Message:
        """The message asking for one model (a fresh request id)."""
        ...

    def receive(self, reply: Message) -> ReleasedModel | Refused:
        """Keep and return the published model (or the owner's refusal)."""
        ...


class NBOwnerAPI(Protocol):
    """The NB owner: trains and releases a model, or refuses."""

    def reply(self, message: Message) -> Message:
        """:meth:`train`, or a ``"refused"`` message when the ledger refuses the request."""
        ...


__all__ = ["NBOwnerAPI", "RequesterAPI"]
