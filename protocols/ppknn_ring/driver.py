"""PP-kNN classification (Xiong, Chitti & Liu): the driver.

1. Every owner computes distances to the public query batch and keeps its
   k smallest (``V``).
2. PP-TopK over the ring for ``rounds`` rounds; the start node broadcasts
   the final vector; ``Delta`` = its k-th value. With ``start_step =
   "first"`` the start node is the first node of every round; with
   ``"last"`` it forwards the initial vector and is the last node of every
   round (a flagged reading: :mod:`~ppknn.protocols.ppknn_ring.pp_topk`).
3. Every owner builds its local class-vote vector over its points with
   distance <= Delta (``vote = "paper"``) or whose distance occurs in the
   final vector (``"exact-k"``, :mod:`~ppknn.protocols.ppknn_ring.votes`),
   unweighted or distance-weighted.
4. The owners add the vote vectors with a secure sum (ring or
   secret-shared); every owner predicts the argmax (lowest class index on
   ties, as scikit-learn).

Ties at Delta (``vote = "paper"``): every point at distance exactly Delta
votes, so a query can have more than k voters; the simulation counts such queries
(:func:`ties_at_kth`) and the scikit-learn equivalence check excludes them,
because scikit-learn then picks an arbitrary subset of the tied points.

The driver only builds the call chain, calling the owners through their interface
(:class:`~protocols.ppknn_ring.api.RingOwnerAPI`); payloads flow party to party.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.knn import ties_at_kth
from ppknn.core.messages import PartyId
from ppknn.core.protocol import PrivacySpent, ProtocolResult, Roles
from ppknn.core.runtime.base import Progress, Runtime
from ppknn.core.runtime.typed import PREVIOUS, Parties, typed
from ppknn.protocols.ppknn_ring.api import RingOwnerAPI
from ppknn.protocols.ppknn_ring.config import MIN_PARTIES, PPKNNConfig, RingSetup
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL as TOPK
from ppknn.protocols.ppknn_ring.secure_sum import RING_PROTOCOL, SHARED_PROTOCOL


@dataclass(frozen=True)
class PPKNNResult:
    """Outputs of a PP-kNN run (all public to the owners)."""

    predictions: np.ndarray  # (Q,) class indices
    final_vector: np.ndarray  # (Q, k) the broadcast top-k distances
    totals: np.ndarray  # (Q, C) global vote vector (fixed point)
    ring: tuple[PartyId, ...]
    start: PartyId


def random_ring(parties: Sequence[PartyId], rng: np.random.Generator
                ) -> tuple[tuple[PartyId, ...], PartyId]:
    """A random ring order and a random start node."""
    if len(parties) < MIN_PARTIES:
        raise ConfigError(f"PP-kNN needs at least {MIN_PARTIES} parties, got {len(parties)}")
    if len(set(parties)) != len(parties):
        raise ConfigError(f"party names must be unique, got {list(parties)}")
    order = tuple(parties[i] for i in rng.permutation(len(parties)))
    return order, order[int(rng.integers(len(order)))]


def ring_from_start(ring: Sequence[PartyId], start: PartyId) -> list[PartyId]:
    """The ring read from its start node.

    Give parties to a hosted runtime in this order: each host then holds a
    contiguous stretch of the ring and the first starts at the start node,
    so a round crosses as few hosts as possible.
    """
    i = list(ring).index(start)
    return list(ring[i:]) + list(ring[:i])


def run_ppknn(runtime: Runtime, queries: np.ndarray, config: PPKNNConfig, *,
              ring: Sequence[PartyId], start: PartyId,
              query_block: np.ndarray | None = None,
              progress: Progress | None = None) -> PPKNNResult:
    """Classify ``queries`` with the owners hosted on ``runtime``.

    Parameters
    ----------
    runtime:
        A started runtime hosting
        :class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner` parties.
    queries:
        The public query batch ``(Q, D)``.
    config:
        Protocol parameters.
    ring, start:
        The ring order and its start node (see :func:`random_ring`).
    query_block:
        Block id per query when the owners hold several independent
        experiments (see :class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner`).
    progress:
        Called with (calls done, calls total) while waiting.
    """
    ring = tuple(ring)
    if len(ring) < MIN_PARTIES:
        raise ConfigError(f"PP-kNN needs at least {MIN_PARTIES} parties, got {len(ring)}")
    owners = typed(runtime, RingOwnerAPI, ring_from_start(ring, start))
    queries = np.asarray(queries, dtype=np.float64)
    if queries.ndim != 2:
        raise ConfigError(f"queries must be a 2-D array (Q, D), got shape {queries.shape}")
    setup = RingSetup(ring=ring, start=start, params=config.params, weighting=config.weighting,
                      vote=config.vote)
    # set-up and distances in one call per host; a party whose feature count differs from
    # the queries' raises ConfigError naming itself (no round trip through the driver)
    runtime.map([owners.plan(p, protocol="setup").configure(setup) for p in owners]
                + [owners.plan(p, protocol="setup").load_queries(queries, query_block)
                   for p in owners])
    _pp_topk(owners, config.params.rounds, config.params.start_step)
    if config.secure_sum == "ring":
        preds = _ring_sum(owners)
    else:
        preds = _shared_sum(owners, ring)
    start_out = owners.call(start, protocol="result").result()
    values = runtime.fetch([start_out, *preds], progress=progress)
    (start_values, final_g, totals), node_preds = values[0], values[1:]
    for p, pr in zip(owners.names[1:], node_preds):
        if not np.array_equal(pr, start_values):
            raise ProtocolError(f"owner {p!r} predicted differently from the start node")
    return PPKNNResult(predictions=np.asarray(start_values), final_vector=np.asarray(final_g),
                       totals=np.asarray(totals), ring=ring, start=start)


def _pp_topk(owners: Parties[RingOwnerAPI], rounds: int, start_step: str) -> None:
    """PP-TopK: ``rounds`` times round the ring, then the final vector's broadcast.

    ``owners`` run in ring order from the start node, which sends the final
    vector to every other node.
    """
    runtime, (start, *others) = owners.runtime, owners.names
    finals = [owners.plan(p, protocol=TOPK, round=rounds).receive_final(PREVIOUS)
              for p in others]
    if start_step == "first":
        msg = runtime.chain([owners.plan(p, protocol=TOPK, round=r).topk_step(PREVIOUS, r)
                             for r in range(1, rounds + 1) for p in owners])
        runtime.scatter(owners.plan(start, protocol=TOPK, round=rounds).topk_finish(PREVIOUS),
                        msg, finals)
        return
    # the start node forwards the initial vector and closes every round
    steps = [owners.plan(start, protocol=TOPK, round=1).topk_initial(PREVIOUS)]
    for r in range(1, rounds + 1):
        steps += [owners.plan(p, protocol=TOPK, round=r).topk_step(PREVIOUS, r) for p in others]
        if r < rounds:
            steps.append(owners.plan(start, protocol=TOPK, round=r + 1)
                         .topk_close_round(PREVIOUS, r))
    msg = runtime.chain(steps)
    runtime.scatter(owners.plan(start, protocol=TOPK, round=rounds)
                    .topk_close_last(PREVIOUS, rounds), msg, finals)


def _ring_sum(owners: Parties[RingOwnerAPI]) -> list[Any]:
    """Ring secure sum of the vote vectors; the start node broadcasts the total.

    Returns the references to the other nodes' predictions.
    """
    runtime, (start, *others) = owners.runtime, owners.names
    s = runtime.chain([owners.plan(start, protocol=RING_PROTOCOL, round=1)
                       .ring_sum_start(PREVIOUS)]
                      + [owners.plan(p, protocol=RING_PROTOCOL, round=1)
                         .ring_sum_step(PREVIOUS) for p in others])
    receive = [owners.plan(p, protocol="result").receive_total(PREVIOUS) for p in others]
    return runtime.scatter(owners.plan(start, protocol=RING_PROTOCOL, round=2)
                           .ring_sum_finish(PREVIOUS), s, receive)


def _shared_sum(owners: Parties[RingOwnerAPI], ring: tuple[PartyId, ...]) -> list[Any]:
    """Secret-shared sum: share out, share in; the start node aggregates and broadcasts.

    Returns the references to the other nodes' predictions.
    """
    runtime, (start, *others) = owners.runtime, owners.names
    n = len(owners)
    outs = {p: owners.call(p, protocol=SHARED_PROTOCOL, round=1, num_returns=n - 1)
            .share_out() for p in owners}
    shares_in = []
    for j in owners:
        incoming = tuple(outs[i][ring_from_start(ring, i)[1:].index(j)]
                         for i in owners if i != j)
        shares_in.append(owners.plan(j, protocol=SHARED_PROTOCOL, round=2).share_in(*incoming))
    partials = dict(zip(owners, runtime.map(shares_in)))
    results = owners.call(start, protocol=SHARED_PROTOCOL, round=3, num_returns=n - 1
                          ).aggregate(*[partials[j] for j in others])
    return runtime.map([owners.plan(p, protocol="result").receive_total(res)
                        for p, res in zip(others, results)])


def drive(runtime: Runtime, parties: Roles, config: PPKNNConfig,
          queries: np.ndarray) -> ProtocolResult:
    """The registry's driver interface (:class:`core.protocol.Driver`) for PP-kNN.

    ``parties["owner"]`` is the ring order and ``parties["start"]`` its start
    node. Hops on the critical path: ``rounds`` times around the ring, the
    final vector's broadcast, the secure sum (``n`` hops round the ring, or
    share-out, share-in and aggregate) and the total's broadcast.
    """
    ring = tuple(parties["owner"])
    (start,) = parties["start"]
    out = run_ppknn(runtime, queries, config, ring=ring, start=start)
    n, rounds = len(ring), config.params.rounds
    hops = rounds * n + 1 + (n if config.secure_sum == "ring" else 3) + 1
    return ProtocolResult(
        protocol="ppknn-ring", predictions=out.predictions, hops=hops,
        privacy=PrivacySpent(guarantee="no DP: per-node disclosure probability"),
        public={"ring": list(ring), "start": start}, detail=out)


__all__ = ["PPKNNResult", "drive", "random_ring", "ring_from_start", "run_ppknn", "ties_at_kth"]
