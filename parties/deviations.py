"""Parties that deviate from their protocol: active adversaries, chosen at construction.

Every paper's parties are honest-but-curious. A scenario's ``[[deviation]]``
entry makes one party deviate; the runner builds that party from one of the
subclasses below instead of its honest class (:func:`deviant_spec`), so the
honest code paths are untouched when no deviation is configured. Each
deviant takes one extra keyword argument, ``deviation`` (its parameters).

Kinds (:data:`KINDS`), by the honest class they replace:

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
``Analyst`` (dp-knn)
    ``repeat-query``: asks its first instance again in every position of every
    request, to average the owner's noise away (the ledger charges each answer).
``DPTTClient``
    ``lie-bits``: answers the opposite of its exponential-mechanism bit with
    probability ``probability`` (default 1): the client lies about its decisions.
    ``no-randomisation``: answers every decision with its best side, without
    the exponential mechanism (randomisation off) while the run still claims ε.
``DPOwner`` (dp-knn)
    ``weak-noise-dpknn``: computes every answer at ε / ``scale`` (default 0.5) while
    its ledger charges, and its answer states, the requested ε. For the Laplace
    classifiers (``proposed``, ``baseline-laplace``, the converted k-NN) the noise
    scale is ``scale`` times the calibrated one (0.5: halved); for
    ``baseline-exponential`` it is the exponential mechanism run with its utility
    sensitivity mis-set to ``scale`` instead of 1.
``NBOwner`` (dp-nb)
    ``weak-noise-nb``: trains at ε / ``scale`` (noise scale times ``scale``, default
    0.5) while the model it releases states ε.
``Sanitizer``
    ``weak-noise``: adds Laplace noise of ``scale`` (default 0.5) times the
    promised b while its release still states the promised b and amplification.

Examples
--------
>>> len(KINDS), sorted(KINDS)[:3]
(10, ['drop-out', 'lie-bits', 'never-randomise'])
>>> KINDS["never-randomise"].honest.__name__
'RingDataOwner'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp import PrivacyLedger
from ppknn.core.errors import ConfigError
from ppknn.core.messages import Message
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.core.runtime import PartySpec
from ppknn.parties.analyst import Analyst
from ppknn.parties.dp_owner import DPOwner
from ppknn.parties.dptt_client import DPTTClient
from ppknn.parties.nb_owner import NBOwner
from ppknn.parties.ring_owner import RingDataOwner
from ppknn.parties.sanitizer import Sanitizer
from ppknn.protocols.ppknn.config import RingSetup


def _number(params: Mapping[str, Any], key: str, default: float, *, low: float = -np.inf,
            high: float = np.inf) -> float:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            low <= float(value) <= high):
        raise ConfigError(f"deviation parameter {key} = {value!r}: allowed a number in "
                          f"[{low}, {high}]")
    return float(value)


class TinyDistancesOwner(RingDataOwner):
    """``tiny-distances`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dev = dict(deviation or {})
        self._value = _number(dev, "value", 0.0, low=0.0)
        self._label = int(_number(dev, "label", 0, low=0, high=self.n_classes - 1))

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
        self._round = int(_number(dict(deviation or {}), "round", 1, low=1))

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


class LyingClient(DPTTClient):
    """``lie-bits`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._p = _number(dict(deviation or {}), "probability", 1.0, low=0.0, high=1.0)
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


class WeakNoiseSanitizer(Sanitizer):
    """``weak-noise`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scale = _number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)

    def release(self, request: Any) -> Message:
        """Noise at ``scale * b``; the release claims ``b`` and its amplification."""
        if getattr(request, "b", None) is None:
            raise ConfigError(f"deviation weak-noise needs a Laplace scheme, got "
                              f"{request.scheme!r}")
        msg = super().release(dataclasses.replace(request, b=request.b * self._scale))
        payload = dict(msg.payload)
        payload["b"] = np.array([request.b])
        if "amplification" in payload:
            payload["amplification"] = np.asarray(payload["amplification"]) ** self._scale
        return dataclasses.replace(msg, payload=payload)


class WeakNoiseNBOwner(NBOwner):
    """``weak-noise-nb`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scale = _number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)
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


class WeakNoiseDPOwner(DPOwner):
    """``weak-noise-dpknn`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scale = _number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)

    def _compute(self, query: Any, rid: int, plan: Any, rng: Any) -> Any:
        """The honest computation at ε / scale; the caller states the ε it charged."""
        weak = dataclasses.replace(query, epsilon=float(query.epsilon) / self._scale)
        return super()._compute(weak, rid, plan, rng)


@dataclass(frozen=True)
class Kind:
    """A deviation kind: the honest class it replaces, the deviant, its parameters."""

    honest: type
    deviant: type
    params: tuple[str, ...]
    description: str


KINDS: dict[str, Kind] = {
    "tiny-distances": Kind(RingDataOwner, TinyDistancesOwner, ("value", "label"),
                           "a ring node inserts crafted tiny distances and takes over the vote"),
    "never-randomise": Kind(RingDataOwner, NeverRandomiseOwner, (),
                            "a ring node never inserts random fills (p0 = 0)"),
    "drop-out": Kind(RingDataOwner, DropOutOwner, ("round",),
                     "a ring node fails in a PP-TopK round"),
    "reuse-mask": Kind(RingDataOwner, ReusedMaskOwner, (),
                       "the start node reuses one ring-sum mask for every query"),
    "repeat-query": Kind(Analyst, RepeatQueryAnalyst, (),
                         "an analyst asks the same instance over and over"),
    "lie-bits": Kind(DPTTClient, LyingClient, ("probability",),
                     "the DP-TT client lies about its decisions"),
    "no-randomisation": Kind(DPTTClient, TruthfulClient, (),
                             "the DP-TT client answers every decision truthfully (no EM)"),
    "weak-noise": Kind(Sanitizer, WeakNoiseSanitizer, ("scale",),
                       "the sanitizer adds less noise than it claims"),
    "weak-noise-nb": Kind(NBOwner, WeakNoiseNBOwner, ("scale",),
                          "the DP Naive Bayes owner adds less noise than it claims"),
    "weak-noise-dpknn": Kind(DPOwner, WeakNoiseDPOwner, ("scale",),
                             "the DP owner answers at ε / scale while it charges and states ε "
                             "(Laplace noise scale times scale; the exponential mechanism's "
                             "sensitivity mis-set to scale)"),
}
"""Deviation kind -> :class:`Kind` (module docstring)."""


def check_deviation(kind: str, params: Mapping[str, Any]) -> Kind:
    """The kind, after checking its name and parameter names (``ConfigError`` otherwise)."""
    found = KINDS.get(kind)
    if found is None:
        raise ConfigError(f"unknown deviation kind {kind!r}; allowed: {sorted(KINDS)}")
    unknown = sorted(set(params) - set(found.params))
    if unknown:
        raise ConfigError(f"deviation {kind!r}: unknown parameter(s) {unknown}; allowed: "
                          f"{list(found.params)}")
    return found


def deviant_spec(spec: PartySpec, kind: str, params: Mapping[str, Any]) -> PartySpec:
    """``spec`` built as the deviant of ``kind`` (its honest class must match)."""
    found = check_deviation(kind, params)
    if spec.factory is not found.honest:
        raise ConfigError(f"deviation {kind!r} applies to {found.honest.__name__} parties; "
                          f"{spec.party_id!r} is a "
                          f"{getattr(spec.factory, '__name__', spec.factory)!r}")
    return dataclasses.replace(spec, factory=found.deviant,
                               kwargs={**spec.kwargs, "deviation": dict(params)})


__all__ = ["KINDS", "DropOutOwner", "Kind", "LyingClient", "NeverRandomiseOwner",
           "RepeatQueryAnalyst", "ReusedMaskOwner", "TinyDistancesOwner", "TruthfulClient",
           "WeakNoiseDPOwner", "WeakNoiseNBOwner", "WeakNoiseSanitizer", "check_deviation",
           "deviant_spec"]
