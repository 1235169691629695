"""DP-TT (Lepert 2022): the driver of the client/server protocol.

1. The server describes its tree (size, dimension, worst-case height);
   client and server accept the public :class:`~protocols.dptt.config.DPTTSetup`
   and agree on the number of rounds R.
2. The client pays for the batch and announces its size (``open``).
3. For r = 1..R: the server sends the node values of every pending
   decision (``nodes``), the client answers one exponential-mechanism bit
   each (``bits``). Levels are synchronous: one message each way per level
   carries the whole batch.
4. The server sends the released points (``release``).

The driver only builds the call chain; on Ray every message goes from actor
to actor by reference and is recorded by the host, so the server's view in
the transcript is exactly what it received: the batch size and the bits.

The client and server classes are bound to their roles in
:mod:`protocols.dptt.parties` (``dptt_specs``), whose examples run this driver.

:func:`drive` is the registry's driver (:class:`core.protocol.Driver`):
one batch, then the client labels each query from what was released
(:func:`predict_labels`). Deviation from the thesis, for classification:
the server releases each released point's class label with the point
(the thesis releases points only; the server's data is not protected
either way, thesis §5.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import PartyId
from ppknn.core.protocol import NO_ANSWER, PrivacySpent, ProtocolResult, Roles
from ppknn.core.runtime.base import Progress, Runtime
from ppknn.core.runtime.typed import typed
from ppknn.protocols.dptt.api import ClientAPI, ServerAPI
from ppknn.protocols.dptt.config import PROTOCOL, ClientOutcome, DPTTSetup, ServerInfo
from ppknn.protocols.dptt.variants import PrivacyAccount

PREDICT_RULES = ("nearest", "majority")
"""How the client labels a query from its released points (:func:`predict_labels`)."""
GUARANTEE = ("local (ε, δ)-DP per query (bounded-range composition over the worst-case tree "
             "height); DIS: only within radius, ε·d/radius per decision at distance d")
"""The run's guarantee: CMP for any two queries; DIS for queries within the declared
radius, and ε·d/radius per decision for two queries d apart (:mod:`protocols.dptt.utility`)."""


@dataclass(frozen=True)
class DPTTResult:
    """One batch's outcome.

    Attributes
    ----------
    outcome:
        What the client received (released points, counts).
    account:
        Final ε per query (bounded-range with δ, and summation).
    info:
        The server's public facts.
    setup:
        The public set-up of the batch.
    rounds:
        Client/server rounds R (levels at which the client answered).
    messages:
        Messages exchanged: ``2 R + 2``.
    """

    outcome: ClientOutcome
    account: PrivacyAccount
    info: ServerInfo
    setup: DPTTSetup
    rounds: int
    messages: int


def run_dptt(runtime: Runtime, queries: Any, setup: DPTTSetup, *, client: PartyId = "client",
             server: PartyId = "server", progress: Progress | None = None) -> DPTTResult:
    """Run one batch of private queries ``(Q, k)`` on a started runtime (module docstring)."""
    if not isinstance(setup, DPTTSetup):
        raise ConfigError(f"setup must be a DPTTSetup, got {type(setup).__name__}")
    client_ = typed(runtime, ClientAPI, [client]).call
    server_ = typed(runtime, ServerAPI, [server]).call
    info = runtime.fetch(server_(server, protocol="setup").describe())
    q = np.asarray(queries, dtype=np.float64)
    if q.ndim == 1 and info.dim == 1:
        q = q[:, None]
    if q.ndim != 2 or q.shape[1] != info.dim or len(q) == 0:
        raise ConfigError(f"queries must have shape (Q, {info.dim}) with Q >= 1 to match the "
                          f"server's {info.dim}-D data, got shape {q.shape}")
    rounds = runtime.fetch([server_(server, protocol="setup").configure(setup),
                            client_(client, protocol="setup").configure(setup, info)])
    if rounds[0] != rounds[1]:
        raise ProtocolError(f"client and server disagree on the rounds: {rounds}")
    n_rounds = int(rounds[0])
    client_(client, protocol="setup").load_queries(q)
    msg = client_(client, protocol=PROTOCOL, round=0).open()
    msg = server_(server, protocol=PROTOCOL, round=1).begin(msg)
    for r in range(1, n_rounds + 1):
        bits = client_(client, protocol=PROTOCOL, round=r).choose(msg)
        msg = server_(server, protocol=PROTOCOL, round=r).advance(bits)
    outcome = runtime.fetch(client_(client, protocol=PROTOCOL, round=n_rounds + 1)
                            .receive(msg), progress=progress)
    return DPTTResult(outcome=outcome, account=setup.account(info.height), info=info,
                      setup=setup, rounds=n_rounds, messages=2 * n_rounds + 2)


@dataclass(frozen=True, kw_only=True)
class DPTTRun:
    """What the registry's driver runs: one batch's public set-up and the client's labelling.

    Parameters
    ----------
    setup:
        The public :class:`~protocols.dptt.config.DPTTSetup` (per-decision ε).
    n_classes:
        Number of classes of the labels the server releases.
    predict:
        ``"nearest"`` or ``"majority"`` (:func:`predict_labels`).
    height:
        The worst-case tree height the plan accounted for (``None``: not
        checked); the driver refuses a server whose tree differs.
    """

    setup: DPTTSetup
    n_classes: int
    predict: str = "nearest"
    height: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.setup, DPTTSetup):
            raise ConfigError(f"setup must be a DPTTSetup, got {type(self.setup).__name__}")
        if self.predict not in PREDICT_RULES:
            raise ConfigError(f"predict must be one of {list(PREDICT_RULES)}, got "
                              f"{self.predict!r}")
        if isinstance(self.n_classes, bool) or not isinstance(self.n_classes, int) \
                or self.n_classes < 1:
            raise ConfigError(f"n_classes must be an integer >= 1, got {self.n_classes!r}")


def predict_labels(queries: np.ndarray, outcome: ClientOutcome, n_classes: int,
                   rule: str = "nearest") -> np.ndarray:
    """The client's label for each query from its released points (local post-processing).

    ``"nearest"``: the label of the released point nearest to the query
    (1-NN over the release; equal distances: the smaller data index).
    ``"majority"``: the most frequent label among the query's distinct
    released points (a tie: the smaller class index). A query with nothing
    released gets :data:`~core.protocol.NO_ANSWER` (no variant does that).

    >>> out = ClientOutcome(slots=np.array([0, 0, 0, 1]), ids=np.array([4, 7, 9, 2]),
    ...                     points=np.array([[0.0], [0.9], [1.0], [5.0]]), found=np.ones(2),
    ...                     released=np.array([3, 1]), seen=np.array([3, 1]), decisions=0,
    ...                     labels=np.array([1, 0, 0, 1]))
    >>> q = np.array([[0.2], [4.0]])
    >>> predict_labels(q, out, 2).tolist(), predict_labels(q, out, 2, "majority").tolist()
    ([1, 1], [0, 1])
    """
    if outcome.labels is None:
        raise ProtocolError(f"{PROTOCOL}: the server released no labels; build it with the "
                            "points' labels to classify")
    if rule not in PREDICT_RULES:
        raise ConfigError(f"rule must be one of {list(PREDICT_RULES)}, got {rule!r}")
    q = np.asarray(queries, dtype=np.float64).reshape(len(queries), -1)
    slots = np.asarray(outcome.slots, dtype=np.int64)
    labels = np.asarray(outcome.labels, dtype=np.int64)
    preds = np.full(len(q), NO_ANSWER, dtype=np.int64)
    if not len(slots):
        return preds
    if rule == "majority":
        counts = np.zeros((len(q), n_classes), dtype=np.int64)
        np.add.at(counts, (slots, labels), 1)
        has = counts.sum(axis=1) > 0
        preds[has] = np.argmax(counts[has], axis=1)
        return preds
    dist = np.linalg.norm(np.asarray(outcome.points, dtype=np.float64) - q[slots], axis=1)
    ids = np.asarray(outcome.ids, dtype=np.int64)
    if np.any(slots[1:] < slots[:-1]):  # released pairs come sorted by slot; sort if not
        order = np.argsort(slots, kind="stable")
        slots, dist, ids, labels = slots[order], dist[order], ids[order], labels[order]
    # per slot: the smallest distance, then among those the smallest data index (linear time)
    starts = np.flatnonzero(np.r_[True, slots[1:] != slots[:-1]])
    nearest = np.minimum.reduceat(dist, starts)
    seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(slots)]))
    tied = np.where(dist == nearest[seg], ids, np.iinfo(np.int64).max)
    best_id = np.minimum.reduceat(tied, starts)
    pick = np.flatnonzero((dist == nearest[seg]) & (ids == best_id[seg]))
    first = np.r_[True, slots[pick][1:] != slots[pick][:-1]]  # one pick per slot
    pick = pick[first]
    preds[slots[pick]] = labels[pick]
    return preds


def drive(runtime: Runtime, parties: Roles, config: DPTTRun, queries: np.ndarray
          ) -> ProtocolResult:
    """The registry's driver (:class:`core.protocol.Driver`): one batch, labelled by the client.

    ``parties["client"]`` and ``parties["server"]`` name one party each.
    Hops on the critical path: the ``2 R + 2`` messages of the batch, one
    after the other. Privacy: each query slot is one user, whose whole view
    to the server -- its bits -- is ``(ε, δ)``-DP with the variant's final
    ε over the worst-case height (:meth:`DPTTSetup.account`, what is
    charged): δ is the bounded-range bound's when it beats summation, else 0
    (pure ε-DP). For DIS the guarantee covers queries within the declared
    radius only (:data:`GUARANTEE`). The client's charge is read from its
    ledger when it has one.
    """
    if not isinstance(config, DPTTRun):
        raise ConfigError(f"{PROTOCOL}: config must be a DPTTRun, got {type(config).__name__}")
    (client,) = parties["client"]
    (server,) = parties["server"]
    out = run_dptt(runtime, queries, config.setup, client=client, server=server)
    if config.height is not None and out.info.height != config.height:
        raise ProtocolError(f"{PROTOCOL}: the plan accounted a tree of height {config.height}, "
                            f"the server's tree has height {out.info.height}")
    o, acct = out.outcome, out.account
    preds = predict_labels(queries, o, config.n_classes, config.predict)
    cost = acct.cost
    ledger = runtime.state(client, "ledger")
    client_row: dict[str, Any] = {"queries": int(len(preds)), "decisions": int(o.decisions),
                                  "epsilon_per_query": cost.epsilon,
                                  "delta_per_query": cost.delta}
    spent = (cost.epsilon, cost.delta)
    if ledger is not None:
        used, left = ledger.spent(), ledger.remaining()
        spent = (used.epsilon, used.delta)
        client_row.update(budget_epsilon=ledger.budget.epsilon,
                          budget_spent_epsilon=used.epsilon,
                          budget_remaining_epsilon=left.epsilon)
    n = out.info.n_points
    setup = config.setup
    metrics: dict[str, Any] = {
        "variant": setup.variant.label, "utility": setup.utility.name,
        "radius": setup.utility.sensitivity if setup.utility.name == "dis" else None,
        "predict": config.predict,
        "per_decision_epsilon": acct.epsilon, "compositions": acct.compositions,
        "final_epsilon_br": acct.epsilon_br, "final_epsilon_sum": acct.epsilon_sum,
        "br_delta": acct.delta, "delta_spent": cost.delta, "tree_height": out.info.height,
        "n_points": n,
        "rounds": out.rounds, "messages": out.messages, "decisions": int(o.decisions),
        "released_mean": float(o.released.mean()), "released_max": int(o.released.max()),
        "found_mean": float(o.found.mean()),
        "seen_mean": float(o.seen.mean()), "seen_fraction": float(o.seen.mean() / n),
    }
    per_party = {
        client: client_row,
        server: {"points": n, "tree_height": out.info.height,
                 "bits_received": int(o.decisions), "points_released": int(len(o.ids))},
    }
    public = {"tree_height": out.info.height, "n_points": n, "dim": out.info.dim,
              "rounds": out.rounds, "compositions": acct.compositions,
              "variant": setup.variant.label, "utility": setup.utility.name,
              "per_decision_epsilon": acct.epsilon}
    return ProtocolResult(
        protocol=PROTOCOL, predictions=preds, hops=out.messages,
        privacy=PrivacySpent(guarantee=GUARANTEE, epsilon=cost.epsilon, delta=cost.delta,
                             per_party={client: spent}),
        metrics=metrics,
        per_query={"released": o.released, "found": o.found, "seen": o.seen},
        per_party=per_party, public=public, detail=out)


def server_view_bits(messages: Sequence[Any], server: PartyId = "server") -> list[np.ndarray]:
    """The bits the server received, one array per round (from transcript messages)."""
    got = sorted((m for m in messages if m.receiver == server and m.kind == "bits"),
                 key=lambda m: m.round)
    return [np.asarray(m.payload["bits"]) for m in got]


__all__ = ["GUARANTEE", "PREDICT_RULES", "DPTTResult", "DPTTRun", "drive", "predict_labels",
           "run_dptt", "server_view_bits"]
