"""The Naive Bayes data owner: private rows, a privacy ledger, ε-DP models on request.

:class:`NBOwner` is the DP owner's Naive Bayes service as its own party
class: it composes a :class:`~core.dp.PrivacyLedger` (the DP core's, as the
DP owner of :mod:`protocols.dp_knn.parties.dp_owner` does) with the training of
:mod:`protocols.dp_nb`. For every request it

1. decodes the request and validates its public parameters;
2. **reserves the model's (ε, δ) on the ledger** -- owner-wide and for the
   requesting analyst -- raising :class:`~core.errors.BudgetExhausted`
   before any training row is read when it does not fit;
3. trains (Algorithm 1 or a baseline) with noise from a stream addressed by
   ``(analyst, request id)``, and
4. replies with the released parameters and the (ε, δ) charged.

The training rows are checked against the public schema once, at
construction (values outside the declared bounds are rejected here, not
clipped). :class:`NBRequester` is the analyst's side.

:meth:`NBOwner.train` raises :class:`~core.errors.BudgetExhausted` on a
refused request; :meth:`NBOwner.reply` -- the step the driver calls --
returns a ``"refused"`` message instead (see :mod:`core.service`). The
ledger and the request-id check are thread-safe, so the owner can serve
analysts concurrently (``max_concurrency > 1`` in its
:class:`~core.runtime.PartySpec`); a model depends only on (analyst, request
id), not on the interleaving.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_nb.protocol import ModelRequest
>>> owner = NBOwner(party_id="owner", X=np.array([[1.0], [2.0], [8.0], [9.0]] * 25),
...                 y=np.array([0, 0, 1, 1] * 25), classes=[0, 1], bounds=([0.0], [10.0]),
...                 epsilon=1.0, run_id="r")
>>> alice = NBRequester(party_id="alice", owner="owner", run_id="r", classes=[0, 1],
...                     schema=owner.schema)
>>> model = alice.receive(owner.train(alice.request(ModelRequest(epsilon=0.5))))
>>> model.epsilon, owner.ledger.remaining("alice").epsilon, model.predict([[1.0]]).tolist()
(0.5, 0.5, [0])
>>> alice.receive(owner.reply(alice.request(ModelRequest(epsilon=0.75)))).request
1
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppknn.core.dp import PrivacyCost, PrivacyLedger
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.core.service import REFUSED, Refused, answer_or_refuse, read_refusal
from ppknn.protocols.dp_nb.api import NBOwnerAPI, RequesterAPI
from ppknn.protocols.dp_nb.protocol import ModelRequest, ReleasedModel, model_message, read_model
from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.training import budget_split, check_trim, train


class NBOwner(NBOwnerAPI):
    """Holds training data and a ledger; publishes private Naive Bayes models.

    Parameters
    ----------
    party_id:
        This party's name.
    X, y:
        Private training rows and their labels (values of ``classes``).
    classes:
        The public label set.
    bounds, categories:
        The public schema (see :class:`~protocols.dp_nb.schema.FeatureSchema`).
    epsilon, delta:
        The owner's total budget.
    analyst_epsilon:
        Optional cap on what any single analyst may spend.
    run_id:
        The run's id.
    index:
        This party's provenance code.
    seed, mode:
        Root seed and randomness mode.
    accountant:
        How the ledger composes models (:class:`~core.dp.ledger.PrivacyLedger`).
    """

    def __init__(self, *, party_id: PartyId, X: Any, y: Any, classes: Sequence[Any],
                 bounds: Any, categories: Mapping[int, Sequence[Any]] | None = None,
                 epsilon: float, delta: float = 0.0, analyst_epsilon: float | None = None,
                 run_id: str, index: int = 0, seed: int = 0,
                 mode: str = RandomnessMode.REPRODUCIBLE.value,
                 accountant: str | None = "auto") -> None:
        arr = np.asarray(X)
        if arr.ndim != 2 or not len(arr):
            raise ConfigError(f"training rows must be a non-empty 2-D array, got {arr.shape}")
        if isinstance(bounds, str):
            raise ConfigError("the NB owner needs declared public bounds=(lower, upper)")
        self.schema = FeatureSchema.build(arr.shape[1], bounds=bounds, categories=categories)
        self._numeric, self._categorical = self.schema.encode(arr, out_of_bounds="error")
        self.classes = np.asarray(classes)
        index_of = {v: i for i, v in enumerate(self.classes.tolist())}
        labels = np.asarray(y).tolist()
        unknown = sorted({str(v) for v in labels if v not in index_of})
        if unknown or len(labels) != len(arr):
            raise ConfigError(f"labels must be one per row and among {self.classes.tolist()}; "
                              f"unknown: {unknown[:5]}")
        self._y = np.asarray([index_of[v] for v in labels], dtype=np.int64)
        self.party_id = party_id
        self.run_id = run_id
        self.index = int(index)
        self.ledger = PrivacyLedger(owner=party_id, epsilon=epsilon, delta=delta,
                                    analyst_epsilon=analyst_epsilon, accountant=accountant)
        self.mode = RandomnessMode(mode)
        self._policy = SeedPolicy(root=seed, mode=self.mode)
        self._lock = threading.Lock()
        self._seen: set[tuple[str, int]] = set()

    def _claim(self, analyst: str, request: int) -> None:
        with self._lock:
            if (analyst, request) in self._seen:
                raise ProtocolError(f"analyst {analyst!r} reused request id {request}; every "
                                    "request needs a fresh id (it addresses the noise stream)")
            self._seen.add((analyst, request))

    def reply(self, message: Message) -> Message:
        """:meth:`train`, or a ``"refused"`` message when the ledger refuses the request."""
        return answer_or_refuse(self.train, message)

    def train(self, message: Message) -> Message:
        """Answer one request with a model (see the module docstring)."""
        request, rid = ModelRequest.from_message(message)
        analyst = message.sender
        config = request.config(self.mode.value)
        split = budget_split(config, len(self.schema.numeric), len(self.schema.categorical))
        check_trim(config, np.bincount(self._y, minlength=len(self.classes)))
        self._claim(analyst, rid)
        with self.ledger.reserve(split.total, analyst=analyst,
                                 label=f"dp-nb {config.method} request {rid}"):
            rng = (None if self.mode is RandomnessMode.SECURE
                   else self._policy.generator("dp-nb", analyst, rid))
            result = train(self._numeric, self._categorical, self._y,
                           n_classes=len(self.classes), schema=self.schema, config=config,
                           rng=rng)
        return model_message(result.params, run_id=self.run_id, sender=self.party_id,
                             receiver=analyst, request=rid, epsilon=split.total.epsilon,
                             delta=split.total.delta, round=message.round,
                             provenance=self.index)

    def remaining(self, analyst: str | None = None) -> PrivacyCost:
        """What the owner (or ``analyst``) can still spend."""
        return self.ledger.remaining(analyst)

    @property
    def remaining_budget(self) -> PrivacyCost:
        """The owner's remaining budget (a plain value: readable across processes)."""
        return self.ledger.remaining()

    @property
    def ledger_entries(self) -> int:
        """How many charges the ledger holds."""
        return len(self.ledger.entries)


class NBRequester(RequesterAPI):
    """An analyst asking the NB owner for models (request ids are consecutive)."""

    def __init__(self, *, party_id: PartyId, owner: PartyId, run_id: str, classes: Sequence[Any],
                 schema: FeatureSchema, index: int = 1) -> None:
        self.party_id = party_id
        self.owner = owner
        self.run_id = run_id
        self.classes = np.asarray(classes)
        self.schema = schema
        self.index = int(index)
        self._next = 0
        self.models: dict[int, ReleasedModel] = {}
        self.refused: dict[int, Refused] = {}

    def request(self, request: ModelRequest, round: int = 1) -> Message:
        """The message asking for one model (a fresh request id)."""
        rid, self._next = self._next, self._next + 1
        return request.to_message(run_id=self.run_id, sender=self.party_id, receiver=self.owner,
                                  request=rid, round=round, provenance=self.index)

    def receive(self, reply: Message) -> ReleasedModel | Refused:
        """Keep and return the published model (or the owner's refusal)."""
        if reply.kind == REFUSED:
            refused = read_refusal(reply)
            self.refused[refused.request] = refused
            return refused
        model = read_model(reply, classes=self.classes, schema=self.schema)
        self.models[model.request] = model
        return model


__all__ = ["NBOwner", "NBRequester"]
