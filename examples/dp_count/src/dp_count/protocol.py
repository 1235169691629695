# examples/dp_count/src/dp_count/protocol.py
"""The protocol itself: two party classes and a driver; nothing here knows of Ray.

Each analyst sends its query rows to the owner in one request. For every query
the owner counts its training rows of each class within the public ``radius``
and answers the counts with Laplace noise of scale ``1 / epsilon``: adding or
removing one training record changes one count of a query by one, so each
query's answer is ε-DP, and a request of ``Q`` rows costs ``Q * epsilon``
(sequential composition), charged on the owner's ledger before any row is read.
The analyst predicts the class with the largest noisy count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.dp import Laplace, PrivacyLedger
from ppknn.core.messages import Message
from ppknn.core.protocol import PrivacySpent, ProtocolResult
from ppknn.core.rng import SeedPolicy

PROTOCOL = "dp-count"
GUARANTEE = "ε-DP per query, add/remove one training record (owner's ledger)"


def class_counts(X: np.ndarray, y: np.ndarray, queries: np.ndarray, radius: float,
                 n_classes: int) -> np.ndarray:
    """``(Q, C)``: how many rows of each class lie within ``radius`` of each query."""
    d2 = ((queries[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    near = d2 <= radius ** 2
    return np.stack([near[:, y == c].sum(axis=1) for c in range(n_classes)], axis=1)


class CountOwner:
    """Holds the training rows and a ledger; answers noisy class counts."""

    def __init__(self, *, party_id: str, X: np.ndarray, y: np.ndarray, n_classes: int,
                 radius: float, budget: float, run_id: str, seed: int = 0,
                 mode: str = "reproducible") -> None:
        self.party_id, self.run_id, self.mode = party_id, run_id, mode
        self.X, self.y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)
        self.n_classes, self.radius = int(n_classes), float(radius)
        self.ledger = PrivacyLedger(owner=party_id, epsilon=budget)
        self.rng = SeedPolicy(root=seed, mode=mode).generator("dp-count", party_id)

    def answer(self, request: Message) -> Message:
        """Charge ``Q * epsilon``, then release the ``(Q, C)`` noisy counts."""
        x = np.asarray(request.payload["x"], dtype=np.float64)
        mechanism = Laplace(epsilon=float(request.payload["epsilon"]), mode=self.mode)
        self.ledger.charge(mechanism, analyst=request.sender, repeat=len(x))
        counts = class_counts(self.X, self.y, x, self.radius, self.n_classes)
        noisy = mechanism.randomise(counts.astype(np.float64), self.rng).value
        return Message(run_id=self.run_id, protocol=PROTOCOL, round=request.round, seq=-1,
                       sender=self.party_id, receiver=request.sender, kind="noisy-counts",
                       payload={"counts": np.asarray(noisy, dtype=np.float64)})


class CountAnalyst:
    """Holds query rows; asks the owner and keeps the class with the largest noisy count."""

    def __init__(self, *, party_id: str, owner: str, run_id: str) -> None:
        self.party_id, self.owner, self.run_id = party_id, owner, run_id

    def request(self, x: np.ndarray, epsilon: float, round: int) -> Message:
        """The request for the rows ``x`` at ``epsilon`` per query."""
        return Message(run_id=self.run_id, protocol=PROTOCOL, round=round, seq=-1,
                       sender=self.party_id, receiver=self.owner, kind="count-request",
                       payload={"x": np.asarray(x, dtype=np.float64),
                                "epsilon": np.asarray(float(epsilon))})

    def receive(self, reply: Message) -> np.ndarray:
        """The predicted class of each query."""
        return np.argmax(reply.payload["counts"], axis=1)


@dataclass(frozen=True)
class CountSetup:
    """The driver's configuration: ε per query."""

    epsilon: float


def drive(runtime, parties, config: CountSetup, queries: np.ndarray) -> ProtocolResult:
    """Analyst ``i`` asks for its contiguous block of the queries (one request each).

    The owner serves one request at a time: a request and its answer per analyst
    are on the critical path.
    """
    (owner,) = parties["owner"]
    analysts = tuple(parties["analyst"])
    blocks = np.array_split(np.arange(len(queries)), len(analysts))
    replies = []
    for i, (analyst, rows) in enumerate(zip(analysts, blocks)):
        if len(rows) == 0:
            continue
        msg = runtime.call(analyst, "request", queries[rows], config.epsilon, i + 1,
                           protocol=PROTOCOL, round=i + 1)
        reply = runtime.call(owner, "answer", msg, protocol=PROTOCOL, round=i + 1)
        replies.append(runtime.call(analyst, "receive", reply, protocol=PROTOCOL, round=i + 1))
    labels = list(runtime.fetch(replies))
    ledger: PrivacyLedger = runtime.state(owner, "ledger")
    spent = ledger.spent()
    per_party = {a: (ledger.spent(a).epsilon, 0.0) for a in analysts}
    per_party[owner] = (spent.epsilon, 0.0)
    return ProtocolResult(
        protocol=PROTOCOL, predictions=np.concatenate(labels), hops=2 * len(labels),
        privacy=PrivacySpent(guarantee=GUARANTEE, epsilon=spent.epsilon, delta=0.0,
                             per_party=per_party),
        metrics={"epsilon_spent": spent.epsilon},
        public={"owner": owner, "analysts": list(analysts)})
