"""The PP-kNN ring owner's interface: the methods the driver calls, with their types.

:class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner` implements it; the driver
(:mod:`protocols.ppknn_ring.driver`) calls the owners through
``typed(runtime, RingOwnerAPI, ring)`` (:mod:`core.runtime.typed`), so a
message can be followed from the driver to the party. A method whose first
parameter is ``incoming`` (or ``final``, ``result``) takes the previous
step's output: the message a chain or a scatter hands on.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ppknn.core.messages import Message
from ppknn.protocols.ppknn_ring.config import RingSetup


class RingOwnerAPI(Protocol):
    """A data owner on the PP-kNN ring (any node; the start node's methods say so)."""

    def configure(self, setup: RingSetup) -> int:
        """Learn the public ring, start node and protocol parameters; returns the feature count."""
        ...

    def load_queries(self, queries: np.ndarray, query_block: np.ndarray | None = None) -> int:
        """Compute distances to the (public) query batch and the local top-k ``V``."""
        ...

    def topk_step(self, incoming: Message | None, round: int) -> Message:
        """Algorithm 2 for this node in ``round``; returns the vector for the successor."""
        ...

    def topk_initial(self, incoming: None = None) -> Message:
        """Start node, ``start_step = "last"``: send the initial vector on unchanged."""
        ...

    def topk_close_round(self, incoming: Message, round: int) -> Message:
        """Start node, ``start_step = "last"``: Algorithm 2 as the last node of ``round``."""
        ...

    def topk_close_last(self, incoming: Message, round: int) -> list[Message]:
        """Start node, ``start_step = "last"``: Algorithm 2 in the last round, then broadcast."""
        ...

    def topk_finish(self, incoming: Message) -> list[Message]:
        """Start node: the last round's vector is final; broadcast it to every other node."""
        ...

    def receive_final(self, final: Message) -> None:
        """Non-start node: receive the final vector."""
        ...

    def ring_sum_start(self, incoming: None = None) -> Message:
        """Start node: send a uniformly random mask to the successor."""
        ...

    def ring_sum_step(self, incoming: Message) -> Message:
        """Add the local vector to the running masked sum."""
        ...

    def ring_sum_finish(self, incoming: Message) -> list[Message]:
        """Start node: unmask, add own vector, broadcast the total."""
        ...

    def share_out(self) -> list[Message]:
        """Split the local vector into n shares; one message per other node (ring order)."""
        ...

    def share_in(self, *shares: Message) -> Message | None:
        """Add the received shares to the kept one; send the partial to the aggregator."""
        ...

    def aggregate(self, *partials: Message) -> list[Message]:
        """Aggregator (start node): add all partial sums, broadcast the total."""
        ...

    def receive_total(self, result: Message) -> np.ndarray:
        """Receive the global vote vector; returns this node's predictions."""
        ...

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This node's public outputs: predictions, final top-k vector, global vote vector."""
        ...


__all__ = ["RingOwnerAPI"]
