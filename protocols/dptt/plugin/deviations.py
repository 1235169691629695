"""The deviating parties of this protocol, offered through its plugin's ``deviations`` hook.

A scenario's ``[[deviation]]`` builds the party from the deviant class
instead of its honest one (:func:`parties.deviations.deviant_spec`).
Kinds, by the honest class they replace:

``DPTTClient``
    ``lie-bits``: answers the opposite of its exponential-mechanism bit with
    probability ``probability`` (default 1): the client lies about its decisions.
    ``no-randomisation``: answers every decision with its best side, without
    the exponential mechanism (randomisation off) while the run still claims ε.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppknn.core.messages import Message
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.parties.deviations import Kind, number
from ppknn.protocols.dptt.parties.dptt_client import DPTTClient


class LyingClient(DPTTClient):
    """``lie-bits`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._p = number(dict(deviation or {}), "probability", 1.0, low=0.0, high=1.0)
        self._lies = (np.random.default_rng([int(kwargs.get("seed", 0)), 7_919])
                      if self.mode is not RandomnessMode.SECURE  # secure: the CSPRNG
                      else SeedPolicy(mode=self.mode).generator("deviation", self.index))

    def choose(self, nodes: Message) -> Message:
        """The honest bits, each flipped with probability ``probability``."""
        msg = super().choose(nodes)
        bits = np.asarray(msg.payload["bits"], dtype=np.uint8)
        flip = self._lies.random(bits.shape) < self._p
        return dataclasses.replace(msg, payload={"bits": np.where(flip, 1 - bits, bits)
                                                 .astype(np.uint8)})


class TruthfulClient(DPTTClient):
    """``no-randomisation`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def choose(self, nodes: Message) -> Message:
        """The best side of every decision, with no exponential mechanism."""
        msg = super().choose(nodes)  # keeps the honest bookkeeping
        assert self.setup is not None and self.queries is not None
        slots = np.asarray(nodes.payload["slot"], dtype=np.int64)
        values = {name: np.asarray(nodes.payload[name]) for name in self.setup.utility.fields}
        disc = int(np.asarray(nodes.payload["disc"]).reshape(-1)[0])
        utilities = self.setup.utility.scores(self.queries[slots], values, disc)
        bits = np.argmax(utilities, axis=1).astype(np.uint8)
        return dataclasses.replace(msg, payload={"bits": bits})


KINDS: dict[str, Kind] = {
    "lie-bits": Kind(DPTTClient, LyingClient, ("probability",),
                     "the DP-TT client lies about its decisions"),
    "no-randomisation": Kind(DPTTClient, TruthfulClient, (),
                             "the DP-TT client answers every decision truthfully (no EM)"),
}
"""Deviation kind -> :class:`~parties.deviations.Kind`: this protocol's deviating parties."""
