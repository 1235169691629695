"""Queries and answers between analysts and the DP owner, as :class:`~core.messages.Message`.

An analyst sends one message per batch (``kind`` = ``"<task>:<algorithm>"``,
e.g. ``"rn:proposed"``); the owner answers with one ``"answer"`` message
whose payload carries the labels **and the ε the batch cost**, so the
transcript records every release with its price.

Request payload
    ``request`` (its id, unique per analyst), ``x`` ``(Q, D)``, ``radius``
    ``(Q,)`` (r-N) or ``k`` ``(Q,)`` (k-NN, conversion), ``epsilon``; an r-N
    request whose radius the owner chooses privately carries ``radius_target``
    and ``radius_epsilon`` instead of ``radius``; and
    for the converted k-NN classifiers and conversions ``weight``, ``candidates``, ``gamma``
    (0 = the default 0.01% of ``|Ω(D)|``).
Answer payload
    ``request``, ``epsilon`` (charged: the classification's ε plus, for a
    private radius, ε_r), ``labels`` (label indices into the
    owner's public label set; -1 for a conversion), ``radius`` (the r used: given or converted),
    ``sensitivity`` (noise sensitivity per instance), ``component``
    (overlap-graph component, -1 for baselines), ``clique_method`` (index
    into :data:`~protocols.dp_knn.cliques.METHODS`, -1 for baselines).

Examples
--------
>>> import numpy as np
>>> q = Query(task="rn", algorithm="proposed", x=np.zeros((2, 3)), radius=0.5, epsilon=1.0)
>>> m = q.to_message(run_id="r", sender="alice", receiver="owner", request=7)
>>> query, request = Query.from_message(m)
>>> m.kind, request, query.radius.tolist()
('rn:proposed', 7, [0.5, 0.5])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppknn.core.dp.validation import check_epsilon, check_positive_int
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import PROVENANCE_DTYPE, Message, PartyId, uniform_provenance
from ppknn.protocols.dp_knn.conversion import CONVERSIONS
from ppknn.protocols.dp_knn.knn import KNN_ALGORITHMS
from ppknn.protocols.dp_knn.rn import RN_ALGORITHMS
from ppknn.protocols.dp_knn.validation import check_ks, check_queries, check_radii, check_weight

PROTOCOL = "dp-knn"
ANSWER = "answer"
REFUSED = "refused"
TASKS = {"rn": RN_ALGORITHMS, "knn": KNN_ALGORITHMS, "convert": CONVERSIONS}


def _scalar(value: np.ndarray) -> Any:
    """A one-element payload entry as a Python number.

    The core encoder returns 0-d arrays as shape ``(1,)`` (``np.ascontiguousarray``
    promotes them), so scalars are read by size, not by shape.
    """
    arr = np.asarray(value).reshape(-1)
    if arr.size != 1:
        raise ProtocolError(f"expected a single number in the payload, got shape {arr.shape}")
    return arr[0].item()


@dataclass(frozen=True, kw_only=True)
class Query:
    """One batch of test instances with its algorithm and budget.

    Parameters
    ----------
    task:
        ``"rn"`` (instances ``(x, radius)``), ``"knn"`` (instances ``(x, k)``) or
        ``"convert"`` (instances ``(x, k)``; the answer is the ε-DP radii, no labels).
    algorithm:
        r-N: ``"proposed"``, ``"baseline-laplace"``, ``"baseline-exponential"``;
        k-NN: ``"baseline"``, ``"interactive"``, ``"noninteractive"``;
        convert: ``"interactive"``, ``"noninteractive"``.
    x:
        ``(Q, D)`` test instances.
    radius, k:
        Per-instance radius (r-N) or neighbour count (k-NN); a scalar is broadcast.
        An r-N query with ``radius=None`` asks the owner to choose one radius for
        the batch privately (:mod:`~ppknn.protocols.dp_knn.radius`).
    epsilon:
        The classification's budget (finite, > 0).
    radius_target, radius_epsilon:
        For ``radius=None``: the mean neighbour count aimed at, and ε_r of the
        radius's release (charged on top of ``epsilon``; :attr:`cost`).
    weight:
        The conversion's share w of ε (converted k-NN only), in ``(0, 1)``;
        a ``"convert"`` query spends all of ε on the conversion.
    candidates:
        n of Algorithm 6.
    gamma:
        γ of Algorithm 7 (``None``: 0.01% of ``|Ω(D)|``).
    """

    task: str
    algorithm: str
    x: np.ndarray
    epsilon: float
    radius: Any = None
    k: Any = None
    weight: float = 0.5
    candidates: int = 10
    gamma: float | None = None
    radius_target: float | None = None
    radius_epsilon: float | None = None
    n_queries: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"unknown task {self.task!r}; allowed: {sorted(TASKS)}")
        if self.algorithm not in TASKS[self.task]:
            raise ConfigError(f"unknown {self.task} algorithm {self.algorithm!r}; allowed: "
                              f"{list(TASKS[self.task])}")
        x = check_queries(self.x)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "n_queries", len(x))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.task == "rn":
            if self.k is not None:
                raise ConfigError("an r-N query takes a radius, not k")
            if self.radius is None:
                if self.radius_target is None or self.radius_epsilon is None:
                    raise ConfigError("an r-N query without a radius needs radius_target and "
                                      "radius_epsilon (the owner then chooses it privately)")
                t = self.radius_target
                if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
                    raise ConfigError(f"radius_target must be a finite number > 0, got {t!r}")
                object.__setattr__(self, "radius_epsilon",
                                   check_epsilon(self.radius_epsilon, name="radius_epsilon"))
            else:
                if self.radius_target is not None or self.radius_epsilon is not None:
                    raise ConfigError("an r-N query takes a radius or radius_target with "
                                      "radius_epsilon, not both")
                object.__setattr__(self, "radius", check_radii(self.radius, len(x)))
        else:
            if self.radius is not None:
                raise ConfigError("a k-NN query takes k, not a radius")
            object.__setattr__(self, "k", check_ks(self.k, len(x)))
            if self.algorithm != "baseline":
                if self.task == "knn":
                    object.__setattr__(self, "weight", check_weight(self.weight))
                object.__setattr__(self, "candidates",
                                   check_positive_int(self.candidates, name="candidates"))
                if self.gamma is not None and not (math.isfinite(self.gamma) and self.gamma > 0):
                    raise ConfigError(f"gamma must be a finite number > 0, got {self.gamma!r}")

    @property
    def auto_radius(self) -> bool:
        """Whether the owner chooses the radius (privately, at ``radius_epsilon``)."""
        return self.task == "rn" and self.radius is None

    @property
    def cost(self) -> float:
        """The ε the owner charges: ``epsilon``, plus ``radius_epsilon`` for a private radius."""
        return self.epsilon + (self.radius_epsilon or 0.0) if self.auto_radius else self.epsilon

    @property
    def kind(self) -> str:
        """The message kind, ``"<task>:<algorithm>"``."""
        return f"{self.task}:{self.algorithm}"

    def to_message(self, *, run_id: str, sender: PartyId, receiver: PartyId, request: int,
                   round: int = 0, provenance: int = 0) -> Message:
        """The request message (``provenance`` is the sender's party code)."""
        payload: dict[str, np.ndarray] = {
            "request": np.asarray(int(request), dtype=np.int64),
            "x": self.x,
            "epsilon": np.asarray(self.epsilon, dtype=np.float64),
        }
        if self.auto_radius:
            payload["radius_target"] = np.asarray(self.radius_target, dtype=np.float64)
            payload["radius_epsilon"] = np.asarray(self.radius_epsilon, dtype=np.float64)
        elif self.task == "rn":
            payload["radius"] = np.asarray(self.radius, dtype=np.float64)
        else:
            payload["k"] = np.asarray(self.k, dtype=np.int64)
            if self.algorithm != "baseline":
                payload["weight"] = np.asarray(self.weight, dtype=np.float64)
                payload["candidates"] = np.asarray(self.candidates, dtype=np.int64)
                payload["gamma"] = np.asarray(self.gamma or 0.0, dtype=np.float64)
        return Message(run_id=run_id, protocol=PROTOCOL, round=int(round), seq=-1, sender=sender,
                       receiver=receiver, kind=self.kind, payload=payload,
                       provenance={"x": uniform_provenance(provenance)})

    @classmethod
    def from_message(cls, message: Message) -> tuple[Query, int]:
        """The query and request id carried by ``message`` (validated)."""
        task, _, algorithm = message.kind.partition(":")
        p = message.payload
        try:
            request = int(_scalar(p["request"]))
            kwargs: dict[str, Any] = {"task": task, "algorithm": algorithm, "x": p["x"],
                                      "epsilon": float(_scalar(p["epsilon"]))}
            if task == "rn" and "radius_target" in p:
                kwargs["radius_target"] = float(_scalar(p["radius_target"]))
                kwargs["radius_epsilon"] = float(_scalar(p["radius_epsilon"]))
            elif task == "rn":
                kwargs["radius"] = p["radius"]
            else:
                kwargs["k"] = p["k"]
                if "weight" in p:
                    kwargs["weight"] = float(_scalar(p["weight"]))
                    kwargs["candidates"] = int(_scalar(p["candidates"]))
                    gamma = float(_scalar(p["gamma"]))
                    kwargs["gamma"] = gamma if gamma > 0 else None
        except KeyError as exc:
            raise ProtocolError(f"query message {message.kind!r} lacks payload entry {exc}") \
                from None
        return cls(**kwargs), request


@dataclass(frozen=True)
class Answer:
    """What an analyst learns from one answer message."""

    request: int
    epsilon: float
    labels: np.ndarray
    radius: np.ndarray
    sensitivity: np.ndarray
    component: np.ndarray
    clique_method: np.ndarray

    @classmethod
    def from_message(cls, message: Message) -> Answer:
        """Decode an ``"answer"`` message."""
        if message.kind != ANSWER:
            raise ProtocolError(f"expected an {ANSWER!r} message, got {message.kind!r}")
        p = message.payload
        return cls(request=int(_scalar(p["request"])), epsilon=float(_scalar(p["epsilon"])),
                   labels=np.asarray(p["labels"]), radius=np.asarray(p["radius"]),
                   sensitivity=np.asarray(p["sensitivity"]),
                   component=np.asarray(p["component"]),
                   clique_method=np.asarray(p["clique_method"]))

    def to_message(self, *, run_id: str, sender: PartyId, receiver: PartyId, round: int = 0,
                   provenance: int = 0) -> Message:
        """The answer message (``provenance``: the owner's party code)."""
        payload: dict[str, np.ndarray] = {
            "request": np.asarray(self.request, dtype=np.int64),
            "epsilon": np.asarray(self.epsilon, dtype=np.float64),
            "labels": np.asarray(self.labels, dtype=np.int64),
            "radius": np.asarray(self.radius, dtype=np.float64),
            "sensitivity": np.asarray(self.sensitivity, dtype=np.float64),
            "component": np.asarray(self.component, dtype=np.int64),
            "clique_method": np.asarray(self.clique_method, dtype=np.int8),
        }
        prov = np.full((1,), provenance, dtype=PROVENANCE_DTYPE)
        return Message(run_id=run_id, protocol=PROTOCOL, round=int(round), seq=-1, sender=sender,
                       receiver=receiver, kind=ANSWER, payload=payload,
                       provenance={"labels": prov, "radius": prov})


__all__ = ["ANSWER", "PROTOCOL", "REFUSED", "TASKS", "Answer", "Query"]
