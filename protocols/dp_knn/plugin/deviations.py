"""The deviating parties of this protocol, offered through its plugin's ``deviations`` hook.

A scenario's ``[[deviation]]`` builds the party from the deviant class
instead of its honest one (:func:`parties.deviations.deviant_spec`).
Kinds, by the honest class they replace:

``Analyst`` (dp-knn)
    ``repeat-query``: asks its first instance again in every position of every
    request, to average the owner's noise away (the ledger charges each answer).
``DPOwner`` (dp-knn)
    ``weak-noise-dpknn``: computes every answer at ε / ``scale`` (default 0.5) while
    its ledger charges, and its answer states, the requested ε. For the Laplace
    classifiers (``proposed``, ``baseline-laplace``, the converted k-NN) the noise
    scale is ``scale`` times the calibrated one (0.5: halved); for
    ``baseline-exponential`` it is the exponential mechanism run with its utility
    sensitivity mis-set to ``scale`` instead of 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppknn.core.messages import Message
from ppknn.parties.deviations import Kind, number
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner


class RepeatQueryAnalyst(Analyst):
    """``repeat-query`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._first: Any = None

    def request(self, query: Any, round: int = 0) -> Message:
        """The same instance (its first) in every position of every request."""
        if self._first is None:
            self._first = np.asarray(query.x)[0].copy()
        x = np.repeat(self._first[None, :], len(query.x), axis=0)
        return super().request(dataclasses.replace(query, x=x), round)


class WeakNoiseDPOwner(DPOwner):
    """``weak-noise-dpknn`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scale = number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)

    def _compute(self, query: Any, rid: int, plan: Any, rng: Any) -> Any:
        """The honest computation at ε / scale; the caller states the ε it charged."""
        weak = dataclasses.replace(query, epsilon=float(query.epsilon) / self._scale)
        return super()._compute(weak, rid, plan, rng)


KINDS: dict[str, Kind] = {
    "repeat-query": Kind(Analyst, RepeatQueryAnalyst, (),
                         "an analyst asks the same instance over and over"),
    "weak-noise-dpknn": Kind(DPOwner, WeakNoiseDPOwner, ("scale",),
                             "the DP owner answers at ε / scale while it charges and states ε "
                             "(Laplace noise scale times scale; the exponential mechanism's "
                             "sensitivity mis-set to scale)"),
}
"""Deviation kind -> :class:`~parties.deviations.Kind`: this protocol's deviating parties."""
