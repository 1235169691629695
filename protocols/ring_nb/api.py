"""The ring Naive Bayes owner's interface: the methods the driver calls, with their types.

:class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner` implements it (beside
:class:`~protocols.ppknn_ring.api.RingOwnerAPI`); the driver
(:mod:`protocols.ring_nb.driver`) calls the owners through
``typed(runtime, RingNBOwnerAPI, ring)`` (:mod:`core.runtime.typed`).
``name`` names one sum (one run's statistics), so several can share the owners.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ppknn.core.messages import Message
from ppknn.protocols.ring_nb.config import RingNBSetup


class RingNBOwnerAPI(Protocol):
    """A data owner on the ring, summing Naive Bayes statistics."""

    def nb_statistics(self, setup: RingNBSetup) -> int:
        """Compute this owner's Naive Bayes statistics (clipped to the public bounds)."""
        ...

    def vector_ring_start(self, incoming: None, name: str) -> Message:
        """Start node: send a uniformly random mask to the successor (ring sum of ``name``)."""
        ...

    def vector_ring_step(self, incoming: Message, name: str) -> Message:
        """Add this owner's vector to the running masked sum; pass it on."""
        ...

    def vector_ring_finish(self, incoming: Message, name: str) -> None:
        """Start node: unmask and add its own vector; it keeps the total (nothing is sent)."""
        ...

    def vector_share_out(self, name: str) -> list[Message]:
        """Split the vector into n additive shares; one message per other node (ring order)."""
        ...

    def vector_share_in(self, name: str, *shares: Message) -> Message | None:
        """Add the received shares to the kept one; send the partial to the start node."""
        ...

    def vector_aggregate(self, name: str, *partials: Message) -> None:
        """Start node: add every partial sum; it keeps the total (nothing is sent)."""
        ...

    def nb_release(self, incoming: None, name: str, round: int) -> list[Message]:
        """Start node: charge its ledger, noise the exact total once, broadcast the model."""
        ...

    def nb_receive_model(self, message: Message, name: str) -> np.ndarray:
        """Non-start node: keep the released model; returns its predictions of the queries."""
        ...

    def nb_result(self, name: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """This node's predictions and the released model's parameters."""
        ...


__all__ = ["RingNBOwnerAPI"]
