"""Ring Naive Bayes: the driver.

1. Every owner computes its Gaussian Naive Bayes statistics (class counts,
   per-class sums and sums of squares of its rows normalised by the public
   bounds) and encodes them in Z_(2^64).
2. The owners add them with the ring secure sum (``n`` hops from the start
   node round the ring back to it) or the secret-shared sum (share-out,
   share-in, aggregate); **the start node alone learns the exact total**.
3. The start node charges its ledger, adds Laplace noise once (global
   sensitivity from the public bounds), fits the model and broadcasts it.
4. Every owner predicts the public query batch with the released model; the
   driver checks they all agree.

The start node is trusted for the noise step: it sees the exact summed
statistics of every owner before noising. This is a building block of the
framework, not a protocol of the five papers (see :mod:`protocols.ring_nb`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import PartyId
from ppknn.core.protocol import PrivacySpent, ProtocolResult, Roles
from ppknn.core.runtime.base import Progress, Runtime
from ppknn.core.runtime.typed import PREVIOUS, Parties, typed
from ppknn.protocols.ppknn_ring.driver import ring_from_start
from ppknn.protocols.ring_nb.api import RingNBOwnerAPI
from ppknn.protocols.ring_nb.config import GROUPS, MIN_PARTIES, PROTOCOL, RingNBConfig, RingNBSetup
from ppknn.protocols.ring_nb.steps import GaussianModel

GUARANTEE = ("ε-DP of the released model, add/remove one record (global sensitivity, "
             "noised once by the start node)")


@dataclass(frozen=True)
class RingNBResult:
    """Outputs of a ring Naive Bayes run (all public to the owners)."""

    predictions: np.ndarray  # (Q,) class indices
    model: GaussianModel  # the released model, on the normalised domain
    ring: tuple[PartyId, ...]
    start: PartyId
    epsilon: float  # charged by the start node's ledger
    group_epsilons: tuple[float, float, float]


def run_ring_nb(runtime: Runtime, queries: np.ndarray, config: RingNBConfig, *,
                ring: Sequence[PartyId], start: PartyId, lower: np.ndarray,
                upper: np.ndarray, name: str = PROTOCOL,
                progress: Progress | None = None) -> RingNBResult:
    """Train and release the model with the owners hosted on ``runtime``; classify ``queries``.

    Parameters
    ----------
    runtime:
        A started runtime hosting
        :class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner` parties.
    queries:
        The public query batch ``(Q, D)``.
    config:
        The release's public parameters.
    ring, start:
        The ring order and its start node (the one trusted with the noise).
    lower, upper:
        The public per-feature bounds (declared, never derived from the rows).
    name:
        The name of the summed vector and of the start node's ledger.
    progress:
        Called with (calls done, calls total) while waiting.
    """
    ring = tuple(ring)
    if len(ring) < MIN_PARTIES:
        raise ConfigError(f"ring Naive Bayes needs at least {MIN_PARTIES} owners, got "
                          f"{len(ring)}")
    if start not in ring:
        raise ConfigError(f"start node {start!r} is not on the ring {list(ring)}")
    queries = np.asarray(queries, dtype=np.float64)
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    if queries.ndim != 2 or lower.shape != upper.shape or queries.shape[1:] != lower.shape:
        raise ConfigError(f"queries {queries.shape} and bounds {lower.shape}/{upper.shape} "
                          "must agree on the feature count")
    if (upper < lower).any():
        raise ConfigError("every bound pair needs lower <= upper")
    owners = typed(runtime, RingNBOwnerAPI, ring_from_start(ring, start))
    others = owners.names[1:]
    setup = RingNBSetup(ring=ring, start=start, lower=lower, upper=upper, queries=queries,
                        config=config, name=name)
    runtime.map([owners.plan(p, protocol=PROTOCOL).nb_statistics(setup) for p in owners])
    if config.secure_sum == "ring":
        s = runtime.chain([owners.plan(start, protocol=PROTOCOL, round=1)
                           .vector_ring_start(PREVIOUS, name)]
                          + [owners.plan(p, protocol=PROTOCOL, round=1)
                             .vector_ring_step(PREVIOUS, name) for p in others]
                          + [owners.plan(start, protocol=PROTOCOL, round=1)
                             .vector_ring_finish(PREVIOUS, name)])
        model_round = 2
    else:
        s = _shared_sum(owners, ring, name)
        model_round = 3
    preds = runtime.scatter(
        owners.plan(start, protocol=PROTOCOL, round=model_round)
        .nb_release(PREVIOUS, name, model_round), s,
        [owners.plan(p, protocol=PROTOCOL, round=model_round).nb_receive_model(PREVIOUS, name)
         for p in others])
    start_out = owners.call(start, protocol=PROTOCOL).nb_result(name)
    values = runtime.fetch([start_out, *preds], progress=progress)
    (start_preds, params), node_preds = values[0], values[1:]
    for p, pr in zip(others, node_preds):
        if not np.array_equal(pr, start_preds):
            raise ProtocolError(f"owner {p!r} predicted differently from the start node")
    ledger = runtime.state(start, "nb_ledgers")[name]
    return RingNBResult(predictions=np.asarray(start_preds), model=GaussianModel(
        params["counts"], params["theta"], params["var"]), ring=ring, start=start,
        epsilon=ledger.spent().epsilon, group_epsilons=config.group_epsilons())



def _shared_sum(owners: Parties[RingNBOwnerAPI], ring: tuple[PartyId, ...], name: str) -> Any:
    """Secret-shared sum of ``name``: share out, share in, the start node aggregates.

    Returns the reference to the start node's aggregate (it keeps the total).
    """
    runtime, (start, *others) = owners.runtime, owners.names
    n = len(owners)
    outs = {p: owners.call(p, protocol=PROTOCOL, round=1, num_returns=n - 1)
            .vector_share_out(name) for p in owners}
    shares_in = []
    for j in owners:
        incoming = tuple(outs[i][ring_from_start(ring, i)[1:].index(j)]
                         for i in owners if i != j)
        shares_in.append(owners.plan(j, protocol=PROTOCOL, round=2)
                         .vector_share_in(name, *incoming))
    partials = dict(zip(owners, runtime.map(shares_in)))
    return owners.call(start, protocol=PROTOCOL, round=2).vector_aggregate(
        name, *[partials[j] for j in others])

@dataclass(frozen=True, kw_only=True)
class RingNBPlan:
    """The driver's configuration: the release's parameters and the public bounds."""

    config: RingNBConfig
    lower: np.ndarray
    upper: np.ndarray
    name: str = PROTOCOL


def drive(runtime: Runtime, parties: Roles, config: RingNBPlan,
          queries: np.ndarray) -> ProtocolResult:
    """The registry's driver interface (:class:`core.protocol.Driver`) for ring Naive Bayes.

    ``parties["owner"]`` is the ring order and ``parties["start"]`` its start
    node. Hops on the critical path: the secure sum (``n`` round the ring, or
    share-out and share-in) and the model's broadcast. Privacy: the start
    node's ledger (one charge of ε per release).
    """
    ring = tuple(parties["owner"])
    (start,) = parties["start"]
    out = run_ring_nb(runtime, queries, config.config, ring=ring, start=start,
                      lower=config.lower, upper=config.upper, name=config.name)
    n = len(ring)
    hops = (n if config.config.secure_sum == "ring" else 2) + 1
    eps = out.epsilon
    return ProtocolResult(
        protocol=PROTOCOL, predictions=out.predictions, hops=hops,
        privacy=PrivacySpent(guarantee=GUARANTEE, epsilon=eps, delta=0.0,
                             per_party={start: (eps, 0.0)}),
        metrics={"epsilon_spent": eps,
                 **{f"epsilon_{g.replace(' ', '_')}": e
                    for g, e in zip(GROUPS, out.group_epsilons)}},
        public={"ring": list(ring), "start": start}, detail=out)


__all__ = ["GUARANTEE", "RingNBPlan", "RingNBResult", "drive", "run_ring_nb"]
