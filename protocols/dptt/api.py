"""The DP-TT roles' interfaces: the methods the driver calls, with their types.

:class:`~protocols.dptt.parties.dptt_client.DPTTClient` implements :class:`ClientAPI` and
:class:`~protocols.dptt.parties.dptt_server.DPTTServer` :class:`ServerAPI`; the driver
(:mod:`protocols.dptt.driver`) calls them through ``typed(runtime, ...)``
(:mod:`core.runtime.typed`).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ppknn.core.messages import Message
from ppknn.protocols.dptt.config import ClientOutcome, DPTTSetup, ServerInfo


class ClientAPI(Protocol):
    """The client: holds the queries, answers one bit per decision."""

    def configure(self, setup: DPTTSetup, info: ServerInfo) -> int:
        """Accept the public set-up and the server's public facts; returns the rounds."""
        ...

    def load_queries(self, queries: np.ndarray) -> int:
        """Take the private queries ``(Q, k)``; returns Q."""
        ...

    def open(self) -> Message:
        """Pay for the batch, then announce its size to the server (round 0)."""
        ...

    def choose(self, nodes: Message) -> Message:
        """Answer one level: one exponential-mechanism bit per pending decision."""
        ...

    def receive(self, release: Message) -> ClientOutcome:
        """Take the released points; returns the batch's outcome."""
        ...


class ServerAPI(Protocol):
    """The server: holds the kd-tree, releases points."""

    def describe(self) -> ServerInfo:
        """The public facts about the tree."""
        ...

    def configure(self, setup: DPTTSetup) -> int:
        """Accept the public set-up; returns the number of rounds."""
        ...

    def begin(self, opening: Message) -> Message:
        """Start the batch announced by ``opening``; returns round 1's nodes (or the release)."""
        ...

    def advance(self, answer: Message) -> Message:
        """Apply the client's bits of this round; returns the next nodes (or the release)."""
        ...


__all__ = ["ClientAPI", "ServerAPI"]
