"""The model-release service as messages: an analyst asks, the owner publishes an ε-DP model.

Request (kind ``"train"``)
    ``request`` (id, fresh per analyst), ``method``, ``noise``, ``density``,
    ``neighbours`` (indices into :data:`~protocols.dp_nb.training.METHODS`,
    :data:`~protocols.dp_nb.noise.NOISES`, :data:`~protocols.dp_nb.model.DENSITIES`,
    :data:`~protocols.dp_nb.sensitivity.NEIGHBOURS`),
    ``epsilon``, ``delta``, ``gamma``, ``trim`` (``-1`` = ``"auto"``, an
    integer, or a fraction flagged by ``trim_is_fraction``).
Reply (kind ``"model"``)
    ``request``, ``epsilon`` and ``delta`` charged, and the released
    parameters (:meth:`~protocols.dp_nb.model.NBParams.to_payload`). The
    owner's smooth sensitivities and trimming are **not** in the reply.

The schema (bounds, categories, classes) is public and known to both sides.

Examples
--------
>>> import numpy as np
>>> req = ModelRequest(method="smooth", epsilon=0.5, trim=0.05)
>>> m = req.to_message(run_id="r", sender="alice", receiver="owner", request=3)
>>> back, rid = ModelRequest.from_message(m)
>>> m.kind, rid, back == req
('train', 3, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId, uniform_provenance
from ppknn.protocols.dp_nb.model import DENSITIES, NBParams
from ppknn.protocols.dp_nb.noise import NOISES
from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import NEIGHBOURS, SENSITIVITIES
from ppknn.protocols.dp_nb.training import METHODS, NBConfig

PROTOCOL = "dp-nb"
TRAIN = "train"
MODEL = "model"


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """What an analyst asks for: one model trained with these public parameters."""

    method: str = "smooth"
    epsilon: float = 1.0
    delta: float = 0.0
    noise: str = "polynomial"
    gamma: float = 4.0
    trim: Any = "auto"
    neighbours: str = "add-remove"
    density: str = "gaussian"
    sensitivity: str | None = None
    global_fallback: bool = True
    budget: Any = "equal"
    """``"equal"`` (the paper's split) or ``(counts, means, variances)`` weights."""
    noise_floor: float = 0.0
    """Globally released variances at least this multiple of their noise scale (0: off)."""

    def __post_init__(self) -> None:
        if not math.isfinite(float(self.epsilon)):
            raise ConfigError(f"a model release needs a finite epsilon > 0, got {self.epsilon!r}")
        self.config()  # validates everything else

    def config(self, mode: str = "reproducible") -> NBConfig:
        """The training configuration (the owner supplies the randomness mode)."""
        return NBConfig(method=self.method, epsilon=self.epsilon, delta=self.delta,
                        noise=self.noise, gamma=self.gamma, trim=self.trim,
                        neighbours=self.neighbours, density=self.density, mode=mode,
                        sensitivity=self.sensitivity, global_fallback=self.global_fallback,
                        budget=self.budget, noise_floor=self.noise_floor)

    def to_message(self, *, run_id: str, sender: PartyId, receiver: PartyId, request: int,
                   round: int = 1, provenance: int = 1) -> Message:
        """The request message."""
        fraction = isinstance(self.trim, float)
        trim = -1.0 if self.trim == "auto" else float(self.trim)
        payload = {"request": np.asarray(request, dtype=np.int64),
                   "method": np.asarray(METHODS.index(self.method)),
                   "noise": np.asarray(NOISES.index(self.noise)),
                   "density": np.asarray(DENSITIES.index(self.density)),
                   "neighbours": np.asarray(NEIGHBOURS.index(self.neighbours)),
                   "epsilon": np.asarray(float(self.epsilon)),
                   "delta": np.asarray(float(self.delta)),
                   "gamma": np.asarray(float(self.gamma)),
                   "trim": np.asarray(trim), "trim_is_fraction": np.asarray(fraction),
                   "sensitivity": np.asarray(-1 if self.sensitivity is None
                                             else SENSITIVITIES.index(self.sensitivity)),
                   "global_fallback": np.asarray(bool(self.global_fallback)),
                   # the budget weights, or (0, 0, 0) for the paper's equal split
                   "budget": np.asarray((0.0, 0.0, 0.0) if self.budget == "equal"
                                        else tuple(float(w) for w in self.budget)),
                   "noise_floor": np.asarray(float(self.noise_floor))}
        return Message(run_id=run_id, protocol=PROTOCOL, round=round, seq=-1, sender=sender,
                       receiver=receiver, kind=TRAIN, payload=payload,
                       provenance={k: uniform_provenance(provenance) for k in payload})

    @classmethod
    def from_message(cls, message: Message) -> tuple[ModelRequest, int]:
        """``(request, request id)``; :class:`ProtocolError` for a malformed message."""
        if message.protocol != PROTOCOL or message.kind != TRAIN:
            raise ProtocolError(f"expected a {PROTOCOL!r} {TRAIN!r} message, got "
                                f"{message.protocol!r} {message.kind!r}")
        p = message.payload
        try:
            trim_value = float(p["trim"])
            trim: Any = ("auto" if trim_value == -1.0 else trim_value if bool(p["trim_is_fraction"])
                         else int(trim_value))
            req = cls(method=METHODS[int(p["method"])], epsilon=float(p["epsilon"]),
                      delta=float(p["delta"]), noise=NOISES[int(p["noise"])],
                      gamma=float(p["gamma"]), trim=trim,
                      neighbours=NEIGHBOURS[int(p["neighbours"])],
                      density=DENSITIES[int(p["density"])],
                      sensitivity=(None if int(p.get("sensitivity", -1)) < 0
                                   else SENSITIVITIES[int(p["sensitivity"])]),
                      global_fallback=bool(p.get("global_fallback", True)),
                      budget=_budget(p.get("budget")),
                      noise_floor=float(p.get("noise_floor", 0.0)))
            return req, int(p["request"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed {PROTOCOL!r} request: {exc}") from exc


def _budget(value: Any) -> Any:
    """A request's budget split from its message: ``"equal"`` (absent or all zero) or weights."""
    if value is None:
        return "equal"
    weights = tuple(float(w) for w in np.asarray(value, dtype=np.float64).ravel())
    return "equal" if weights == (0.0, 0.0, 0.0) else weights


@dataclass(frozen=True)
class ReleasedModel:
    """A published model on the analyst's side: parameters plus the public schema."""

    params: NBParams
    classes: np.ndarray
    schema: FeatureSchema
    epsilon: float
    delta: float
    request: int

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior class probabilities ``(n, C)``."""
        return self.params.predict_proba(*self.schema.encode(np.asarray(X), out_of_bounds="keep"))

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels (values of ``classes``)."""
        return self.classes[self.params.predict(*self.schema.encode(np.asarray(X),
                                                                     out_of_bounds="keep"))]


def model_message(params: NBParams, *, run_id: str, sender: PartyId, receiver: PartyId,
                  request: int, epsilon: float, delta: float, round: int = 1,
                  provenance: int = 0) -> Message:
    """The owner's reply carrying the released parameters."""
    payload = {"request": np.asarray(request, dtype=np.int64),
               "epsilon": np.asarray(float(epsilon)), "delta": np.asarray(float(delta)),
               **params.to_payload()}
    return Message(run_id=run_id, protocol=PROTOCOL, round=round, seq=-1, sender=sender,
                   receiver=receiver, kind=MODEL, payload=payload,
                   provenance={k: uniform_provenance(provenance) for k in payload})


def read_model(message: Message, *, classes: Any, schema: FeatureSchema) -> ReleasedModel:
    """Decode the owner's reply."""
    if message.protocol != PROTOCOL or message.kind != MODEL:
        raise ProtocolError(f"expected a {PROTOCOL!r} {MODEL!r} message, got "
                            f"{message.protocol!r} {message.kind!r}")
    p = message.payload
    return ReleasedModel(NBParams.from_payload(p), np.asarray(classes), schema,
                         float(p["epsilon"]), float(p["delta"]), int(p["request"]))


__all__ = ["MODEL", "PROTOCOL", "TRAIN", "ModelRequest", "ReleasedModel", "model_message",
           "read_model"]
