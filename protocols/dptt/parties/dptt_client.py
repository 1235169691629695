"""The DP-TT client: holds the private queries, answers each level with EM bits.

Per level the client receives, for every pending decision of the batch,
the query slot and the node values its utility needs, computes the
``(T, 2)`` utilities (:mod:`protocols.dptt.utility`) and draws one bit per
decision with :class:`core.dp.ExponentialMechanism` from its own seeded
generator. The bits are all it ever sends about its queries.

Each query slot stands for one user. The optional ledger holds *each
user's* budget: every user of a batch runs the same schedule, so the batch
is charged once, the per-query cost of the variant (bounded-range
composition over the worst-case height), before the first bit is drawn.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.dp import ExponentialMechanism, PrivacyLedger
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId, uniform_provenance
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.protocols.dptt.api import ClientAPI
from ppknn.protocols.dptt.config import PROTOCOL, ClientOutcome, DPTTSetup, ServerInfo
from ppknn.protocols.dptt.neighbours import counts_per_slot, dedupe_pairs


class DPTTClient(ClientAPI):
    """The client party.

    Parameters
    ----------
    party_id, server:
        This party's and the server's names.
    run_id:
        The run's id.
    index:
        Provenance code of this party (also its random-stream key).
    seed, mode:
        Root seed and randomness mode (``"secure"`` draws the EM exactly from OS entropy).
    budget, budget_delta:
        Optional per-user (ε, δ) budget; a batch that would exceed it raises
        :class:`~core.errors.BudgetExhausted` before any bit is drawn.
    """

    def __init__(self, *, party_id: PartyId = "client", server: PartyId = "server",
                 run_id: str, index: int = 0, seed: int = 0,
                 mode: str = RandomnessMode.REPRODUCIBLE.value, budget: float | None = None,
                 budget_delta: float = 0.0) -> None:
        self.party_id, self.server, self.run_id, self.index = party_id, server, run_id, index
        self.mode = RandomnessMode(mode)
        self._rng = SeedPolicy(root=seed, mode=self.mode).generator("party", index, PROTOCOL)
        self.ledger = (PrivacyLedger(owner=party_id, epsilon=budget, delta=budget_delta)
                       if budget is not None else None)
        self.setup: DPTTSetup | None = None
        self.info: ServerInfo | None = None
        self.queries: np.ndarray | None = None
        self.mechanism: ExponentialMechanism | None = None
        self._seen: list[np.ndarray] = []
        self._seen_slots: list[np.ndarray] = []
        self._decisions = 0
        self._round = 0

    def configure(self, setup: DPTTSetup, info: ServerInfo) -> int:
        """Accept the public set-up and the server's public facts; returns the rounds."""
        if not isinstance(setup, DPTTSetup):
            raise ConfigError(f"expected a DPTTSetup, got {type(setup).__name__}")
        rounds = setup.rounds(info.height)
        self.setup, self.info = setup, info
        self.mechanism = ExponentialMechanism(epsilon=setup.mechanism_epsilon,
                                              sensitivity=setup.utility.sensitivity,
                                              mode=self.mode)
        return rounds

    def load_queries(self, queries: np.ndarray) -> int:
        """Take the private queries ``(Q, k)``; returns Q."""
        if self.info is None:
            raise ProtocolError(f"{self.party_id}: configure() before load_queries()")
        q = np.asarray(queries, dtype=np.float64)
        if q.ndim == 1 and self.info.dim == 1:
            q = q[:, None]
        if q.ndim != 2 or q.shape[1] != self.info.dim or len(q) == 0:
            raise ConfigError(f"queries must have shape (Q, {self.info.dim}) with Q >= 1 to "
                              f"match the server's {self.info.dim}-D data, got shape {q.shape}")
        if not np.all(np.isfinite(q)):
            raise ConfigError("queries must be finite; got NaN or infinite coordinates")
        self.queries = q
        return len(q)

    def open(self) -> Message:
        """Pay for the batch, then announce its size to the server (round 0)."""
        if self.setup is None or self.info is None or self.queries is None:
            raise ProtocolError(f"{self.party_id}: configure() and load_queries() before open()")
        account = self.setup.account(self.info.height)
        if self.ledger is not None:
            self.ledger.charge(account.cost, label=f"DP-TT {self.setup.variant.label} "
                               f"{self.setup.utility.name} ({len(self.queries)} users)")
        self._seen, self._seen_slots = [], []
        self._decisions = 0
        self._round = 0
        return self._message("open", {"n_queries": np.array([len(self.queries)], np.int64)})

    def choose(self, nodes: Message) -> Message:
        """Answer one level: one exponential-mechanism bit per pending decision."""
        if self.mechanism is None or self.queries is None or self.setup is None:
            raise ProtocolError(f"{self.party_id}: open() before choose()")
        if nodes.kind != "nodes":
            raise ProtocolError(f"{self.party_id}: expected 'nodes', got {nodes.kind!r}")
        self._round = nodes.round
        slots = np.asarray(nodes.payload["slot"], dtype=np.int64)
        fields = self.setup.utility.fields
        for name in fields:
            self._seen.append(np.asarray(nodes.payload[f"{name}_id"]))
            self._seen_slots.append(slots)
        values = {name: np.asarray(nodes.payload[name]) for name in fields}
        disc = int(np.asarray(nodes.payload["disc"]).reshape(-1)[0])
        utilities = self.setup.utility.scores(self.queries[slots], values, disc)
        bits = np.asarray(self.mechanism.randomise(utilities, self._rng).value)
        self._decisions += len(slots)
        return self._message("bits", {"bits": bits.astype(np.uint8).reshape(-1)})

    def receive(self, release: Message) -> ClientOutcome:
        """Take the released points; returns the batch's outcome."""
        if self.queries is None or self.info is None:
            raise ProtocolError(f"{self.party_id}: open() before receive()")
        if release.kind != "release":
            raise ProtocolError(f"{self.party_id}: expected 'release', got {release.kind!r}")
        slots = np.asarray(release.payload["slot"], dtype=np.int64)
        ids = np.asarray(release.payload["ids"], dtype=np.int64)
        n_q = len(self.queries)
        seen_slots, seen_ids = dedupe_pairs(np.concatenate([*self._seen_slots, slots]),
                                            np.concatenate([*self._seen, ids]),
                                            self.info.n_points)
        return ClientOutcome(slots=slots, ids=ids, points=np.asarray(release.payload["points"]),
                             found=np.asarray(release.payload["found"], dtype=np.int64),
                             released=counts_per_slot(slots, n_q),
                             seen=counts_per_slot(seen_slots, n_q), decisions=self._decisions,
                             labels=(np.asarray(release.payload["labels"], dtype=np.int64)
                                     if "labels" in release.payload else None))

    def _message(self, kind: str, payload: dict[str, np.ndarray]) -> Message:
        return Message(self.run_id, PROTOCOL, self._round, -1, self.party_id, self.server, kind,
                       payload, {k: uniform_provenance(self.index) for k in payload})


__all__ = ["DPTTClient"]
