"""The deviating parties of this protocol, offered through its plugin's ``deviations`` hook.

A scenario's ``[[deviation]]`` builds the party from the deviant class
instead of its honest one (:func:`parties.deviations.deviant_spec`).
Kinds, by the honest class they replace:

``RingDataOwner``
    ``tiny-distances``: inserts crafted distances (``value``, default 0) as its
    local top-k, so the final k-th distance collapses and only its crafted vote
    (``k`` votes for class ``label``, default 0) counts: it takes over the vote.
    ``never-randomise``: runs PP-TopK with ``p0 = 0`` (never a random fill), so
    its successor sees its real values. ``drop-out``: fails in PP-TopK round
    ``round`` (default 1), as a crashed or departed node would. ``reuse-mask``
    (the start node): draws one uniform mask row for the ring secure sum and
    reuses it for every query, a one-time pad used many times, so the
    difference of two queries' partial sums is no longer masked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.messages import Message
from ppknn.parties.deviations import Kind, number
from ppknn.protocols.ppknn_ring.config import RingSetup
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner


class TinyDistancesOwner(RingDataOwner):
    """``tiny-distances`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dev = dict(deviation or {})
        self._value = number(dev, "value", 0.0, low=0.0)
        self._label = int(number(dev, "label", 0, low=0, high=self.n_classes - 1))

    def load_queries(self, queries: np.ndarray, query_block: np.ndarray | None = None) -> int:
        """The honest top-k, replaced by crafted distances."""
        n = super().load_queries(queries, query_block)
        honest: np.ndarray = np.asarray(getattr(self, "v"))  # noqa: B009 - typed read
        self.v = np.full_like(honest, self._value)
        return n

    def local_votes(self) -> np.ndarray:
        """``k`` votes (or their fixed-point weight) for the chosen class, for every query."""
        votes = np.zeros_like(super().local_votes())
        assert self.params is not None
        votes[:, self._label] = np.uint64(self.params.k) << np.uint64(40)
        return votes


class NeverRandomiseOwner(RingDataOwner):
    """``never-randomise`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def configure(self, setup: RingSetup) -> int:
        """The public set-up, with ``p0 = 0`` for this node only."""
        params = dataclasses.replace(setup.params, p0=0.0)
        return super().configure(dataclasses.replace(setup, params=params))


class DropOutOwner(RingDataOwner):
    """``drop-out`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._round = int(number(dict(deviation or {}), "round", 1, low=1))

    def topk_step(self, incoming: Message | None, round: int) -> Message:
        """Fails from round ``round`` on."""
        if round >= self._round:
            raise ConnectionAbortedError(f"{self.party_id} dropped out in PP-TopK round "
                                         f"{round}")
        return super().topk_step(incoming, round)


class ReusedMaskOwner(RingDataOwner):
    """``reuse-mask`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def configure(self, setup: RingSetup) -> int:
        """The public set-up; only the start node draws the ring sum's mask."""
        if setup.start != self.party_id:
            raise ConfigError(f"deviation reuse-mask: party {self.party_id!r} is not the start "
                              f"node; allowed: the start node {setup.start!r}")
        return super().configure(setup)

    def ring_sum_start(self, incoming: None = None) -> Message:
        """The mask of the first query, reused for every query."""
        msg = super().ring_sum_start(incoming)
        fresh: np.ndarray = np.asarray(getattr(self, "_mask"))  # noqa: B009 - typed read
        reused = np.broadcast_to(fresh[:1], fresh.shape).copy()
        self._mask = reused
        return dataclasses.replace(msg, payload={**msg.payload, "s": reused})


KINDS: dict[str, Kind] = {
    "tiny-distances": Kind(RingDataOwner, TinyDistancesOwner, ("value", "label"),
                           "a ring node inserts crafted tiny distances and takes over the vote"),
    "never-randomise": Kind(RingDataOwner, NeverRandomiseOwner, (),
                            "a ring node never inserts random fills (p0 = 0)"),
    "drop-out": Kind(RingDataOwner, DropOutOwner, ("round",),
                     "a ring node fails in a PP-TopK round"),
    "reuse-mask": Kind(RingDataOwner, ReusedMaskOwner, (),
                       "the start node reuses one ring-sum mask for every query"),
}
"""Deviation kind -> :class:`~parties.deviations.Kind`: this protocol's deviating parties."""
