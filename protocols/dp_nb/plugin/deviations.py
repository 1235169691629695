"""The deviating parties of this protocol, offered through its plugin's ``deviations`` hook.

A scenario's ``[[deviation]]`` builds the party from the deviant class
instead of its honest one (:func:`parties.deviations.deviant_spec`).
Kinds, by the honest class they replace:

``NBOwner`` (dp-nb)
    ``weak-noise-nb``: trains at ε / ``scale`` (noise scale times ``scale``, default
    0.5) while the model it releases states ε.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppknn.core.dp import PrivacyLedger
from ppknn.core.messages import Message
from ppknn.parties.deviations import Kind, number
from ppknn.protocols.dp_nb.parties.nb_owner import NBOwner


class WeakNoiseNBOwner(NBOwner):
    """``weak-noise-nb`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scale = number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)
        # its own ledger pays for the larger ε it really spends, so nothing is refused
        self.ledger = PrivacyLedger(owner=self.party_id,
                                    epsilon=float(kwargs["epsilon"]) / self._scale,
                                    delta=float(kwargs.get("delta", 0.0)))

    def train(self, message: Message) -> Message:
        """A model trained at ε / scale (noise scale times ``scale``), labelled ε."""
        claimed = np.asarray(message.payload["epsilon"], dtype=np.float64)
        strong = dataclasses.replace(message, payload={**message.payload,
                                                       "epsilon": claimed / self._scale})
        reply = super().train(strong)
        if "epsilon" in reply.payload:
            reply = dataclasses.replace(reply, payload={**reply.payload, "epsilon": np.asarray(
                np.asarray(reply.payload["epsilon"]) * self._scale)})
        return reply


KINDS: dict[str, Kind] = {
    "weak-noise-nb": Kind(NBOwner, WeakNoiseNBOwner, ("scale",),
                          "the DP Naive Bayes owner adds less noise than it claims"),
}
"""Deviation kind -> :class:`~parties.deviations.Kind`: this protocol's deviating parties."""
