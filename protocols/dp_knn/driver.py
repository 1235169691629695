"""The DP r-N / k-NN driver: analysts ask the DP owner through a runtime.

Each query is a three-call chain -- ``analyst.request`` → ``owner.reply`` →
``analyst.receive`` -- run by the request/reply loop of
:mod:`core.service`: all chains are built before one wait, so on Ray
the messages travel analyst to owner to analyst without passing through the
driver. To serve analysts concurrently, give the owner's
:class:`~core.runtime.PartySpec` ``max_concurrency > 1`` (on Ray its calls
then run at the same time; answers do not depend on the interleaving).

The party classes are bound to their roles in :mod:`protocols.dp_knn.parties`
(``dp_owner_spec``, ``analyst_spec``), whose examples run this driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppknn.core import service
from ppknn.core.dp import PrivacyLedger
from ppknn.core.errors import ConfigError
from ppknn.core.messages import PartyId
from ppknn.core.protocol import NO_ANSWER, PrivacySpent, ProtocolResult, Roles
from ppknn.core.runtime import Runtime
from ppknn.core.service import Refused
from ppknn.protocols.dp_knn.api import AnalystAPI, DPOwnerAPI
from ppknn.protocols.dp_knn.cliques import METHODS
from ppknn.protocols.dp_knn.protocol import PROTOCOL, Answer, Query


def ask(runtime: Runtime, requests: Sequence[tuple[PartyId, PartyId, Query]], *,
        first_round: int = 1, refusals: str = "raise") -> list[Answer | Refused]:
    """Send every ``(analyst, owner, query)`` and return the answers, in order.

    Request i travels in round ``first_round + i``. A refused request raises
    :class:`~core.errors.BudgetExhausted` (the owner's ledger is unchanged by it;
    the refusal is a recorded ``"refused"`` message), or with ``refusals="return"``
    comes back as a :class:`~core.service.Refused`. See :func:`core.service.ask`.
    """
    return service.ask(runtime, requests, analyst_api=AnalystAPI, owner_api=DPOwnerAPI,
                       protocol=PROTOCOL,
                       first_round=first_round, refusals=refusals)


# --------------------------------------------------------------------------- the registry's driver
@dataclass(frozen=True, kw_only=True)
class DPKNNSetup:
    """What the analysts ask: one query template, cut into request batches.

    Parameters
    ----------
    task, algorithm:
        ``"rn"`` with one of :data:`~protocols.dp_knn.rn.RN_ALGORITHMS`,
        ``"knn"`` with one of :data:`~protocols.dp_knn.knn.KNN_ALGORITHMS`, or
        ``"convert"`` with one of :data:`~protocols.dp_knn.conversion.CONVERSIONS`
        (the ε-DP radii of a k-NN batch, no labels: its rows stay unanswered).
    epsilon:
        ε of each request batch's classification (or conversion); the ledger charges
        it, plus ``radius_epsilon`` when the owner chooses the radius.
    batches:
        Requests per analyst: each analyst's contiguous block of the query
        rows is cut into this many contiguous batches.
    radius:
        r-N: the public radius of every test instance; ``None`` with
        ``radius_target`` and ``radius_epsilon``: the owner chooses one radius per
        request privately (:mod:`~protocols.dp_knn.radius`), charged ``radius_epsilon``.
    k:
        k-NN: the neighbour count of every test instance.
    weight, candidates, gamma:
        The converted k-NN classifiers' parameters (:class:`~protocols.dp_knn.protocol.Query`).
    lower, upper:
        The public domain bounds. The analyst clips its test instances to them before
        sending (bounds declared or taken from the training rows need not hold the
        queries; the owner's conversions assume instances inside the domain).
    """

    task: str
    algorithm: str
    epsilon: float
    batches: int = 1
    radius: float | None = None
    k: int | None = None
    weight: float = 0.5
    candidates: int = 10
    gamma: float | None = None
    radius_target: float | None = None
    radius_epsilon: float | None = None
    lower: tuple[float, ...] | None = None
    upper: tuple[float, ...] | None = None

    def query(self, x: np.ndarray) -> Query:
        """The request for the test instances ``x`` (clipped to the public bounds)."""
        if self.lower is not None and self.upper is not None:
            x = np.clip(x, np.asarray(self.lower), np.asarray(self.upper))
        if self.task == "rn":
            if self.radius is None:
                return Query(task="rn", algorithm=self.algorithm, x=x, epsilon=self.epsilon,
                             radius_target=self.radius_target,
                             radius_epsilon=self.radius_epsilon)
            return Query(task="rn", algorithm=self.algorithm, x=x, radius=self.radius,
                         epsilon=self.epsilon)
        return Query(task=self.task, algorithm=self.algorithm, x=x, k=self.k,
                     epsilon=self.epsilon, weight=self.weight, candidates=self.candidates,
                     gamma=self.gamma)


@dataclass(frozen=True)
class RequestBlock:
    """One request: analyst ``analyst`` (its position) sends query rows ``[start, stop)``."""

    analyst: int
    batch: int
    start: int
    stop: int


def request_blocks(n_queries: int, analysts: int, batches: int) -> list[RequestBlock]:
    """The requests of a run, in the order they are sent.

    The query rows are split among the analysts in contiguous blocks
    (``numpy.array_split``), each block into ``batches`` contiguous batches;
    the requests go out batch by batch, analyst by analyst within a batch.
    Raises :class:`~core.errors.ConfigError` when some batch would be empty.

    >>> [(b.analyst, b.batch, b.start, b.stop) for b in request_blocks(5, 2, 2)]
    [(0, 0, 0, 2), (1, 0, 3, 4), (0, 1, 2, 3), (1, 1, 4, 5)]
    """
    if analysts < 1 or batches < 1:
        raise ConfigError(f"need at least one analyst and one batch, got {analysts} and "
                          f"{batches}")
    per = [len(b) for b in np.array_split(np.arange(n_queries), analysts)]
    if min(per) < batches:
        raise ConfigError(f"{n_queries} queries among {analysts} analysts give {min(per)} rows "
                          f"to the smallest block, fewer than its {batches} batches")
    starts = np.concatenate([[0], np.cumsum(per)])
    cuts = [np.array_split(np.arange(starts[a], starts[a + 1]), batches)
            for a in range(analysts)]
    return [RequestBlock(a, b, int(cuts[a][b][0]), int(cuts[a][b][-1]) + 1)
            for b in range(batches) for a in range(analysts)]


@dataclass(frozen=True)
class DPKNNRun:
    """A run's requests and what each got back, and the owner's ledger after them."""

    blocks: tuple[RequestBlock, ...]
    replies: tuple[Answer | Refused, ...]
    ledger: PrivacyLedger
    peak_concurrency: int


def drive(runtime: Runtime, parties: Roles, config: DPKNNSetup,
          queries: np.ndarray) -> ProtocolResult:
    """The registry's driver interface (:class:`core.protocol.Driver`) for DP r-N / k-NN.

    ``parties["owner"]`` is the one DP owner, ``parties["analyst"]`` the
    analysts in order; :func:`request_blocks` says who asks for which rows.
    Every request goes through :func:`ask` with ``refusals="return"``: a
    request the ledger refuses leaves its rows at
    :data:`~core.protocol.NO_ANSWER` and the run goes on. Privacy spent is
    read from the owner's ledger (owner-wide and per analyst), never
    recomputed. Hops on the critical path: a request and its answer per
    batch (an analyst sends its batches one after the other; analysts run in
    parallel when the owner serves concurrently).

    On Ray with a concurrent owner and a budget that runs out, *which*
    requests are refused depends on the arrival order (first come, first
    served); answered labels do not (each request's noise stream is
    addressed by analyst and request id).

    Deviations from the paper (Gursoy et al. classify one batch of one
    analyst): several analysts each send request batches, and the owner's
    ledger composes the batches *sequentially* (their ε add up) even where
    their test regions are disjoint -- parallel composition is used only
    within a batch (the overlap graph's components), never across requests,
    which is conservative. Every instance of a run shares one public radius
    (r-N) or one k (k-NN); the paper allows one per instance.
    """
    (owner,) = parties["owner"]
    analysts = tuple(parties["analyst"])
    blocks = request_blocks(len(queries), len(analysts), config.batches)
    requests = [(analysts[b.analyst], owner, config.query(queries[b.start:b.stop]))
                for b in blocks]
    replies = ask(runtime, requests, refusals="return")
    ledger: PrivacyLedger = runtime.state(owner, "ledger")
    pred, per_query = _per_query(len(queries), blocks, replies)
    refused = sum(isinstance(r, Refused) for r in replies)
    spent = ledger.spent()
    budget = ledger.budget
    per_party = {a: (ledger.spent(a).epsilon, ledger.spent(a).delta) for a in analysts}
    per_party[owner] = (spent.epsilon, spent.delta)
    guarantee = "ε-DP, add/remove one training record (central owner's ledger)"
    if spent.delta > 0:
        guarantee = (f"(ε, δ)-DP, add/remove one training record (central owner's ledger, "
                     f"{ledger.accountant} composition)")
    return ProtocolResult(
        protocol=PROTOCOL, predictions=pred, hops=2 * config.batches,
        privacy=PrivacySpent(guarantee=guarantee, epsilon=spent.epsilon, delta=spent.delta,
                             per_party=per_party),
        metrics={"requests": len(blocks), "answered_requests": len(blocks) - refused,
                 "refused_requests": refused, "epsilon_spent": spent.epsilon,
                 "delta_spent": spent.delta, "epsilon_budget": budget.epsilon,
                 "epsilon_remaining": ledger.remaining().epsilon,
                 "refusals": [r.reason for r in replies if isinstance(r, Refused)]},
        per_query=per_query,
        per_party={a: {"requests": sum(b.analyst == i for b in blocks),
                       "refused_requests": sum(isinstance(r, Refused) and b.analyst == i
                                               for b, r in zip(blocks, replies)),
                       "epsilon_remaining": ledger.remaining(a).epsilon}
                   for i, a in enumerate(analysts)},
        public={"owner": owner, "analysts": list(analysts),
                "requests": [[analysts[b.analyst], b.batch, b.start, b.stop] for b in blocks]},
        detail=DPKNNRun(blocks=tuple(blocks), replies=tuple(replies), ledger=ledger,
                        peak_concurrency=int(runtime.state(owner, "peak_concurrency"))))


def _per_query(q: int, blocks: Sequence[RequestBlock], replies: Sequence[Answer | Refused]
               ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The predictions and the per-query columns of ``q`` queries, from the replies."""
    pred = np.full(q, NO_ANSWER, dtype=np.int64)
    radius = np.full(q, np.nan)
    sensitivity = np.full(q, np.nan)
    method = np.full(q, "", dtype=object)
    analyst_col = np.empty(q, dtype=np.int64)
    request_col = np.empty(q, dtype=np.int64)
    refused_col = np.zeros(q, dtype=np.int64)
    for b, reply in zip(blocks, replies):
        rows = slice(b.start, b.stop)
        analyst_col[rows], request_col[rows] = b.analyst, b.batch
        if isinstance(reply, Refused):
            refused_col[rows] = 1
            continue
        pred[rows] = reply.labels
        radius[rows] = reply.radius
        sensitivity[rows] = reply.sensitivity
        method[rows] = [METHODS[m] if m >= 0 else "" for m in reply.clique_method]
    return pred, {"analyst": analyst_col, "request": request_col, "refused": refused_col,
                  "radius": radius, "sensitivity": sensitivity, "clique_method": method}


__all__ = ["DPKNNRun", "DPKNNSetup", "RequestBlock", "ask", "drive", "request_blocks"]
