"""The one driver interface and the one result shape every protocol returns.

A *driver* runs one protocol over parties that a runtime already hosts::

    drive(runtime, parties, config, queries) -> ProtocolResult

``parties`` maps each role of the protocol (``"owner"``, ``"analyst"``,
``"client"``, ...) to the names of the parties playing it, in the order the
protocol uses them; ``config`` is the protocol's own public configuration;
``queries`` is the public (or the querier's private) query batch ``(Q, D)``.
The driver addresses parties by role and name through the runtime only: it
never imports a party class. It calls each role through the role's typed
interface (a ``typing.Protocol`` in ``protocols/<name>/api.py`` that the
party class implements) with :func:`core.runtime.typed.typed`, whose
methods are the runtime's calls underneath.

Examples
--------
>>> import numpy as np
>>> r = ProtocolResult(protocol="demo", predictions=np.array([0, 1, -1]), hops=2)
>>> r.answered.tolist(), r.privacy.guarantee
([True, True, False], 'none')
>>> ProtocolResult(protocol="demo", predictions=np.zeros((2, 2)), hops=1)
Traceback (most recent call last):
...
ppknn.core.errors.ProtocolError: demo: predictions must be a 1-D array of class indices, got ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ppknn.core.errors import ProtocolError
from ppknn.core.messages import PartyId
from ppknn.core.runtime.base import Runtime

NO_ANSWER = -1
"""Prediction of a query the protocol did not answer (e.g. a refused batch)."""

Roles = Mapping[str, tuple[PartyId, ...]]
"""Role name -> the parties playing it, in protocol order."""


@dataclass(frozen=True, kw_only=True)
class PrivacySpent:
    """What a run spent, in the protocol's own privacy unit.

    Parameters
    ----------
    guarantee:
        The unit and meaning, e.g. ``"ε-DP per analyst (add/remove one record)"``,
        ``"disclosure probability (no DP)"``, ``"none"``.
    epsilon, delta:
        The total charged (``None`` where the protocol gives no DP guarantee).
    per_party:
        ``party -> (ε, δ)`` as charged by that party's ledger (or promised to it).
    """

    guarantee: str = "none"
    epsilon: float | None = None
    delta: float | None = None
    per_party: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {"guarantee": self.guarantee, "epsilon": self.epsilon, "delta": self.delta,
                "per_party": {p: {"epsilon": e, "delta": d}
                              for p, (e, d) in self.per_party.items()}}


@dataclass(frozen=True, kw_only=True)
class ProtocolResult:
    """One protocol run's outputs, the same shape for every protocol.

    Parameters
    ----------
    protocol:
        The registered protocol name.
    predictions:
        ``(Q,)`` class indices, :data:`NO_ANSWER` where a query got none.
    hops:
        Sequential message hops on the critical path (what a real network's
        latency multiplies: a ring of n owners with r rounds pays about r·n).
    privacy:
        What the run spent.
    metrics:
        Protocol-specific scalars (JSON-able), e.g. the exact top-k fraction.
    per_query:
        Protocol-specific ``(Q,)`` columns for the predictions table.
    per_party:
        ``party -> {metric: scalar}`` for the per-party table.
    public:
        Public facts of the run that every party knows (ring order, tree height...).
    detail:
        The protocol's own typed output (e.g. the final top-k vector), for its scorers.
    """

    protocol: str
    predictions: np.ndarray
    hops: int
    privacy: PrivacySpent = PrivacySpent()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    per_query: Mapping[str, np.ndarray] = field(default_factory=dict)
    per_party: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    public: Mapping[str, Any] = field(default_factory=dict)
    detail: Any = None

    def __post_init__(self) -> None:
        pred = np.asarray(self.predictions)
        if pred.ndim != 1:
            raise ProtocolError(f"{self.protocol}: predictions must be a 1-D array of class "
                                f"indices, got shape {pred.shape}")
        object.__setattr__(self, "predictions", pred.astype(np.int64, copy=False))
        check_metrics(self.metrics, self.protocol)
        for name, col in self.per_query.items():
            if len(col) != len(pred):
                raise ProtocolError(f"{self.protocol}: per-query column {name!r} has "
                                    f"{len(col)} values for {len(pred)} queries")

    @property
    def answered(self) -> np.ndarray:
        """Queries that got an answer."""
        return self.predictions != NO_ANSWER


def check_metrics(metrics: Mapping[str, Any], where: str) -> None:
    """Refuse a metric that is not JSON, naming its key and type (``ProtocolError``).

    >>> check_metrics({"k": 5, "note": "x", "by_position": [0.1, None]}, "measured")
    >>> check_metrics({"scores": np.zeros(3)}, "measured")
    Traceback (most recent call last):
    ...
    ppknn.core.errors.ProtocolError: measured metric 'scores' is a ndarray; a metric must be a \
number, string, bool or None, or a list or dict of them (convert arrays with .tolist())
    """
    for key, value in metrics.items():
        if not isinstance(key, str) or not _json(value):
            raise ProtocolError(
                f"{where} metric {key!r} is a {type(value).__name__}; a metric must be a "
                "number, string, bool or None, or a list or dict of them (convert arrays "
                "with .tolist())")


def _json(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float, np.bool_, np.integer,
                                           np.floating)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    return False


class Driver(Protocol):
    """The one driver signature (module docstring)."""

    def __call__(self, runtime: Runtime, parties: Roles, config: Any,
                 queries: np.ndarray) -> ProtocolResult:
        """Run the protocol over the hosted parties; return its result."""
        ...


__all__ = ["NO_ANSWER", "Driver", "PrivacySpent", "ProtocolResult", "Roles", "check_metrics"]
