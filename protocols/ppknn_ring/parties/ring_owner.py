"""The ring data owner: one private database, PP-TopK and secure-sum steps.

A :class:`RingDataOwner` holds its rows ``(X, y)`` and its random streams.
Its methods are the party-side steps of PP-kNN; a runtime calls them and
delivers the :class:`~core.messages.Message` objects they return. The
query batch is public input given to every owner by the querier.

The same owners also run the ring Naive Bayes building block
(:mod:`protocols.ring_nb`): :meth:`RingDataOwner.nb_statistics` computes the
owner's sufficient statistics, the ``vector_*`` methods add any named vector
with the ring or the secret-shared secure sum (the total stays with the start
node), and :meth:`RingDataOwner.nb_release` noises the total once and
broadcasts the model. Their state and random streams are separate from
PP-kNN's, so running both on the same owners changes neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.data import check_finite
from ppknn.core.dp import PrivacyCost, PrivacyLedger
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import MASK, MIXED, PROVENANCE_DTYPE, Message, PartyId, uniform_provenance
from ppknn.core.rng import RandomnessMode, RandomSource, SeedPolicy
from ppknn.protocols.ppknn_ring import secure_sum as ss
from ppknn.protocols.ppknn_ring.api import RingOwnerAPI
from ppknn.protocols.ppknn_ring.config import RingSetup
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL as TOPK
from ppknn.protocols.ppknn_ring.pp_topk import (
    TopKParams,
    ascending_rows,
    euclidean_distances,
    initial_vector,
    local_topk,
    topk_step,
)
from ppknn.protocols.ppknn_ring.votes import (
    VOTE_RULES,
    combine_k_weighted,
    paper_counts,
    voter_mask,
)
from ppknn.protocols.ring_nb import steps as nb
from ppknn.protocols.ring_nb.api import RingNBOwnerAPI
from ppknn.protocols.ring_nb.config import GROUPS, RingNBSetup
from ppknn.protocols.ring_nb.config import PROTOCOL as NB_PROTOCOL

WEIGHTINGS = ("uniform", "distance")


def _ring_index(setup: RingSetup) -> dict[PartyId, int]:
    """Every party's position in ``setup.ring``, built once per set-up object.

    All the owners of a host are configured with the same set-up object, so
    the ring is scanned once per host, not once per owner (n owners scanning
    a ring of n: 10^10 steps at n = 100,000).
    """
    index = setup.__dict__.get("_index")
    if index is None:
        index = {party: i for i, party in enumerate(setup.ring)}
        object.__setattr__(setup, "_index", index)  # a cache beside the frozen fields
    return index


class RingDataOwner(RingOwnerAPI, RingNBOwnerAPI):
    """A data owner on the PP-kNN ring.

    Parameters
    ----------
    party_id:
        This owner's name.
    index:
        Its provenance code (position in the scenario's party list).
    X, y:
        Private rows and integer labels ``0..n_classes-1``.
    n_classes:
        Number of classes (public schema).
    run_id:
        The run's id (bound into messages).
    seed, mode:
        Root seed and randomness mode; streams are derived per party and protocol.
    row_block:
        Optional block id per row, for batches that hold several independent
        experiments (e.g. random splits): a query of block ``b`` only sees
        this owner's rows of block ``b``. ``None``: one block.
    cache_limit:
        Values of sorted distance prefixes kept in memory between the top-k
        and the voting phases, and across runs on the same query batch
        (beyond it, distances are recomputed when needed).
    """

    def __init__(self, *, party_id: PartyId, index: int, X: np.ndarray, y: np.ndarray,
                 n_classes: int, run_id: str, seed: int = 0,
                 mode: str = RandomnessMode.REPRODUCIBLE.value,
                 row_block: np.ndarray | None = None,
                 cache_limit: int = 20_000_000) -> None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ConfigError(f"{party_id}: features must be 2-D, got shape {X.shape}")
        check_finite(X, f"party {party_id!r}")
        y = np.asarray(y, dtype=np.int64)
        if len(y) != len(X):
            raise ConfigError(f"{party_id}: {len(X)} rows but {len(y)} labels")
        if len(y) and (y.min() < 0 or y.max() >= n_classes):
            raise ConfigError(f"{party_id}: labels must be in [0, {n_classes}), got "
                              f"[{y.min()}, {y.max()}]")
        if row_block is not None:
            row_block = np.asarray(row_block, dtype=np.int64)
            if row_block.shape != (len(X),):
                raise ConfigError(f"{party_id}: row_block needs one block id per row "
                                  f"({len(X)}), got shape {row_block.shape}")
        self.row_block = row_block
        self.cache_limit = int(cache_limit)
        self._batch: tuple[np.ndarray, np.ndarray | None] | None = None  # the cached batch
        self.party_id = party_id
        self.index = int(index)
        self.X, self.y, self.n_classes = X, y, int(n_classes)
        self.run_id = run_id
        policy = SeedPolicy(root=seed, mode=RandomnessMode(mode))
        self._rng_topk = policy.generator("party", self.index, TOPK)
        self._mask_source: RandomSource | None = None  # built on first use (_masks)
        self._policy = policy
        self._vectors: dict[str, _NamedSum] = {}  # named secure sums (ring Naive Bayes)
        self._nb: dict[str, _NBState] = {}
        self.nb_ledgers: dict[str, PrivacyLedger] = {}
        """The start node's ledger per ring Naive Bayes release (charged before noising)."""
        self.ring: tuple[PartyId, ...] = ()
        self._position = -1  # my index in the ring, set by configure()
        self.start: PartyId = ""
        self.params: TopKParams | None = None
        self.weighting = "uniform"
        self.vote = "paper"

    @property
    def _masks(self) -> RandomSource:
        """The secure sums' mask stream, derived when first drawn from.

        Only the start node of a ring sum and the nodes of a secret-shared sum draw
        masks; the stream is the same whenever it is derived (its path fixes it).
        """
        if self._mask_source is None:
            self._mask_source = self._policy.source("party", self.index, "secure-sum")
        return self._mask_source

    # -- set-up -------------------------------------------------------------
    def configure(self, setup: RingSetup) -> int:
        """Learn the public ring, start node and protocol parameters; returns the feature count."""
        ring, start, params, weighting = setup.ring, setup.start, setup.params, setup.weighting
        index = _ring_index(setup)
        if self.party_id not in index or start not in index:
            raise ConfigError(f"{self.party_id}: ring {list(ring)} must contain me and {start!r}")
        if weighting not in WEIGHTINGS:
            raise ConfigError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
        if setup.vote not in VOTE_RULES:
            raise ConfigError(f"vote must be one of {list(VOTE_RULES)}, got {setup.vote!r}")
        self.ring, self.start, self.params, self.weighting = tuple(ring), start, params, weighting
        self.vote = setup.vote
        self._position = index[self.party_id]
        return int(self.X.shape[1])

    @property
    def others(self) -> list[PartyId]:
        """The other nodes in ring order, starting with the successor."""
        i = self._position
        return list(self.ring[i + 1 :] + self.ring[:i])

    @property
    def successor(self) -> PartyId:
        """Next node on the ring."""
        return self.ring[(self._position + 1) % len(self.ring)]

    def load_queries(self, queries: np.ndarray, query_block: np.ndarray | None = None) -> int:
        """Compute distances to the (public) query batch and the local top-k ``V``.

        ``query_block`` gives each query's block when the owner was built with
        ``row_block``.
        """
        queries = np.asarray(queries, dtype=np.float64)
        if queries.ndim != 2 or queries.shape[1] != self.X.shape[1]:
            raise ConfigError(f"{self.party_id}: queries of shape {queries.shape} do not match "
                              f"{self.X.shape[1]} features")
        assert self.params is not None, "configure() first"
        if (self.row_block is None) != (query_block is None):
            raise ConfigError(f"{self.party_id}: give query blocks exactly when rows have blocks")
        if not self._same_batch(queries, query_block):  # new blocks, new neighbour index
            self._batch = (queries.copy(), None if query_block is None
                           else np.array(query_block, dtype=np.int64))
            self.queries = queries
            if query_block is None:
                blocks = [(np.arange(len(queries)), np.arange(len(self.X)))]
            else:
                query_block = np.asarray(query_block, dtype=np.int64)
                if query_block.shape != (len(queries),):
                    raise ConfigError(f"{self.party_id}: query_block needs one id per query")
                blocks = [(np.flatnonzero(query_block == b), np.flatnonzero(self.row_block == b))
                          for b in np.unique(query_block)]
            self._index = NeighbourBlocks(queries, self.X, blocks, self.cache_limit,
                                          every=query_block is None)
        self.v = self._index.topk(self.params.k)
        self._v_ascending = ascending_rows(self.v)  # checked once, not at every step
        self.inserted = np.zeros(len(queries), dtype=bool)
        self.final_g: np.ndarray | None = None
        self.last_votes: np.ndarray | None = None
        return len(queries)

    def _same_batch(self, queries: np.ndarray, query_block: np.ndarray | None) -> bool:
        """Whether the batch is the one the neighbour index was built for (reuse it)."""
        if self._batch is None:
            return False
        cached, blocks = self._batch
        if (blocks is None) != (query_block is None) or not np.array_equal(cached, queries):
            return False
        return blocks is None or np.array_equal(blocks, np.asarray(query_block, dtype=np.int64))

    # -- PP-TopK ---------------------------------------------------------------
    def topk_step(self, incoming: Message | None, round: int) -> Message:
        """Algorithm 2 for this node in ``round``; returns the vector for the successor."""
        p = self.params
        assert p is not None
        if incoming is None:
            if self.party_id != self.start or round != 1:
                raise ProtocolError(f"{self.party_id}: only the start node begins round 1")
            g, prov = initial_vector(len(self.v), p)
        else:
            g = incoming.payload["g"]
            known = incoming.provenance.get("g")  # ground truth, carried only
            prov = known if known is not None else np.full(g.shape, MIXED, PROVENANCE_DTYPE)
        out = topk_step(g, prov, self.v, own=self.index, already_inserted=self.inserted,
                        p_r=p.randomisation_probability(round), delta=p.delta, rng=self._rng_topk,
                        v_ascending=self._v_ascending)
        self.inserted |= out.inserted
        return Message(self.run_id, TOPK, round, -1, self.party_id, self.successor,
                       "topk-vector", {"g": out.g}, {"g": out.provenance})

    def topk_initial(self, incoming: None = None) -> Message:
        """Start node, ``start_step = "last"``: send the initial vector on unchanged.

        The message is labelled round 1 (the round the vector enters).
        """
        p = self.params
        assert p is not None
        if self.party_id != self.start:
            raise ProtocolError(f"{self.party_id}: only the start node sends the initial vector")
        g, prov = initial_vector(len(self.v), p)
        return Message(self.run_id, TOPK, 1, -1, self.party_id, self.successor,
                       "topk-vector", {"g": g}, {"g": prov})

    def topk_close_round(self, incoming: Message, round: int) -> Message:
        """Start node, ``start_step = "last"``: Algorithm 2 as the last node of ``round``.

        The output enters round ``round + 1`` and is labelled so.
        """
        out = self.topk_step(incoming, round)
        return Message(self.run_id, TOPK, round + 1, -1, self.party_id, self.successor,
                       out.kind, out.payload, out.provenance)

    def topk_close_last(self, incoming: Message, round: int) -> list[Message]:
        """Start node, ``start_step = "last"``: Algorithm 2 in the last round, then broadcast."""
        out = self.topk_step(incoming, round)
        return self.topk_finish(Message(self.run_id, TOPK, round, -1, self.party_id,
                                        self.party_id, out.kind, out.payload, out.provenance))

    def topk_finish(self, incoming: Message) -> list[Message]:
        """Start node: the last round's vector is final; broadcast it to every other node."""
        self._set_final(incoming.payload["g"])
        return [Message(self.run_id, TOPK, incoming.round, -1, self.party_id, other,
                        "topk-final", {"g": incoming.payload["g"]},
                        {"g": incoming.provenance.get("g", np.zeros(0))})
                for other in self.others]

    def receive_final(self, final: Message) -> None:
        """Non-start node: receive the final vector."""
        self._set_final(final.payload["g"])

    def _set_final(self, g: np.ndarray) -> None:
        self.final_g = np.asarray(g, dtype=np.float64)
        self.last_votes = self.local_votes()

    # -- local classification -----------------------------------------------
    def local_votes(self) -> np.ndarray:
        """Encoded local class-vote vector (uint64) from the final vector.

        ``vote = "paper"``: every point with distance <= Delta (the k-th value)
        votes, so ties at Delta give more than k voters; ``"exact-k"``: only
        points whose distance occurs in the final vector; ``"k-weighted"``: the
        vector is ``(Q, 2C + 2)``: the votes of the points in the final vector,
        the votes of the other points within Delta, and the two counts, so the
        total can give the second group ``k - matched`` votes in all
        (:mod:`~ppknn.protocols.ppknn_ring.votes`). Distance weights are ``1/dist``;
        when the smallest distance in the (public) final vector is 0, only
        zero-distance points vote, with weight 1 (scikit-learn's rule).
        Otherwise the vector is ``(Q, C)``.
        """
        assert self.final_g is not None and self.params is not None
        g = self.final_g
        c_n = self.n_classes
        weighted = self.vote == "k-weighted"
        blocks = self._index.blocks
        if (not weighted and self.weighting == "uniform" and len(blocks) == 1
                and len(blocks[0][0]) == len(g)):
            # one block holding the whole batch (in query order): its counts are the vector
            ((_, dist, rows),) = self._index.within(g[:, -1])
            if self.vote == "paper" and rows.ndim == 2 and len(rows) and rows.strides[0] == 0:
                # one row order shared by every query: counted in one compiled pass
                counts = paper_counts(dist, g, self.y[rows[0]], c_n)
                if counts is not None:
                    return counts
            return self._class_votes(dist, rows, voter_mask(dist, g, self.vote, rows), None, None)
        votes = np.zeros((len(g), 2 * c_n + 2 if weighted else c_n), dtype=np.uint64)
        scale = (ss.weight_scale(g[:, 0], self.params.k) if self.weighting == "distance"
                 else np.ones(len(g)))  # (uniform votes are not scaled)
        for q_idx, dist, rows in self._index.within(g[:, -1]):
            # blocks partition the batch, each in query order: a block as long as the
            # batch is the whole batch, read and written through a slice (no copies)
            sel = slice(None) if len(q_idx) == len(g) else q_idx
            if weighted:
                matched = voter_mask(dist, g[sel], "exact-k", rows)
                groups = [matched, (dist <= g[sel, -1][:, None]) & ~matched]
            else:
                groups = [voter_mask(dist, g[sel], self.vote, rows)]
            for j, voters in enumerate(groups):
                votes[sel, j * c_n:(j + 1) * c_n] = self._class_votes(
                    dist, rows, voters, g[sel, 0] == 0, scale[sel])
                if weighted:
                    votes[sel, 2 * c_n + j] = voters.sum(axis=1).astype(np.uint64)
        return votes

    def _class_votes(self, dist: np.ndarray, rows: np.ndarray, voters: np.ndarray,
                     zero_rows: np.ndarray | None, scale: np.ndarray | None) -> np.ndarray:
        """``(q, C)`` encoded votes of the ``voters`` columns (a fresh C-ordered array).

        ``zero_rows`` and ``scale`` are read by distance weighting only.

        Only the voting entries are read (the columns may come in any order): their
        encodings are added per (query, class) in Z_(2^64), which does not depend on
        the order of the additions.
        """
        c_n = self.n_classes
        n_q, width = voters.shape
        # the voting entries in row-major order, as np.nonzero(voters) gives them (found
        # in one flat pass: np.nonzero on a 2-D mask is several times slower)
        q_i, col = np.divmod(np.flatnonzero(voters), width)
        if rows.ndim == 2 and len(rows) and rows.strides[0] == 0:
            # one row order shared by every query (a broadcast view): a 1-D lookup, where a
            # 2-D fancy index costs ten times as much
            labels = self.y[rows[0]][col]
        else:
            labels = self.y[rows[q_i, col]]
        slot = q_i * c_n + labels
        if self.weighting == "uniform":
            counts = np.bincount(slot, minlength=n_q * c_n)
            # non-negative int64 counts have the bits of the same uint64 values (no copy)
            counts = (counts.view(np.uint64) if counts.dtype == np.int64
                      else counts.astype(np.uint64))
            return counts.reshape(n_q, c_n)
        assert zero_rows is not None and scale is not None, "distance weights need both"
        ss.encode_fixed(np.zeros(len(scale)), scale)  # refuses a NaN scale, as for all rows
        d = dist[q_i, col]
        with np.errstate(divide="ignore"):
            w = np.where(d > 0, 1.0 / d, 0.0)
        w = np.where(zero_rows[q_i], (d == 0).astype(np.float64), w)
        out = np.zeros(len(voters) * c_n, dtype=np.uint64)
        np.add.at(out, slot, ss.encode_fixed(w, scale[q_i]))
        return out.reshape(len(voters), c_n)

    # -- ring secure sum (Algorithm 3) --------------------------------------
    def ring_sum_start(self, incoming: None = None) -> Message:
        """Start node: send a uniformly random mask to the successor.

        ``incoming`` is ``None``: the start begins the ring chain with no message.
        """
        if incoming is not None:
            raise ProtocolError(f"{self.party_id}: the ring sum starts with no incoming message")
        assert self.last_votes is not None
        self._mask = self._masks.uint64(self.last_votes.shape)
        return self._sum_message(self._mask, self.successor, "partial-sum", MASK)

    def ring_sum_step(self, incoming: Message) -> Message:
        """Add the local vector to the running masked sum."""
        assert self.last_votes is not None
        return self._sum_message(ss.add(incoming.payload["s"], self.last_votes),
                                 self.successor, "partial-sum", MASK)

    def ring_sum_finish(self, incoming: Message) -> list[Message]:
        """Start node: unmask, add own vector, broadcast the total."""
        assert self.last_votes is not None
        total = ss.add(ss.sub(incoming.payload["s"], self._mask), self.last_votes)
        self._set_total(total)
        return [self._sum_message(total, other, "sum-result", MIXED)
                for other in self.others]

    # -- secret-shared sum ---------------------------------------------------
    def share_out(self) -> list[Message]:
        """Split the local vector into n shares; one message per other node (ring order)."""
        assert self.last_votes is not None
        n = len(self.ring)
        shares = ss.split_shares(self.last_votes, n,
                                 self._masks.uint64((n - 1,) + self.last_votes.shape))
        others = self.others
        self._kept_share = shares[-1]
        return [Message(self.run_id, ss.SHARED_PROTOCOL, 1, -1, self.party_id, other, "share",
                        {"s": shares[i]}, {"s": uniform_provenance(MASK)})
                for i, other in enumerate(others)]

    def share_in(self, *shares: Message) -> Message | None:
        """Add the received shares to the kept one; send the partial to the aggregator."""
        if len(shares) != len(self.ring) - 1:
            raise ProtocolError(f"{self.party_id}: expected {len(self.ring) - 1} shares, "
                                f"got {len(shares)}")
        partial = self._kept_share
        for m in shares:
            partial = ss.add(partial, m.payload["s"])
        self._partial = partial
        if self.party_id == self.start:
            return None
        return Message(self.run_id, ss.SHARED_PROTOCOL, 2, -1, self.party_id, self.start,
                       "partial-sum", {"s": partial},
                       {"s": uniform_provenance(MASK)})

    def aggregate(self, *partials: Message) -> list[Message]:
        """Aggregator (start node): add all partial sums, broadcast the total."""
        total = self._partial
        for m in partials:
            total = ss.add(total, m.payload["s"])
        self._set_total(total)
        return [Message(self.run_id, ss.SHARED_PROTOCOL, 3, -1, self.party_id, other,
                        "sum-result", {"s": total},
                        {"s": uniform_provenance(MIXED)})
                for other in self.others]

    # -- result ----------------------------------------------------------------
    def _sum_message(self, s: np.ndarray, receiver: PartyId, kind: str, code: int) -> Message:
        return Message(self.run_id, ss.RING_PROTOCOL, 1 if kind == "partial-sum" else 2, -1,
                       self.party_id, receiver, kind, {"s": s},
                       {"s": uniform_provenance(code)})

    def _set_total(self, total: np.ndarray) -> None:
        self.total = ss.decode_total(total)
        if self.vote == "k-weighted":
            assert self.params is not None
            self.total = combine_k_weighted(self.total, self.n_classes, self.params.k)
        self.predictions = np.argmax(self.total, axis=1)

    def receive_total(self, result: Message) -> np.ndarray:
        """Receive the global vote vector; returns this node's predictions."""
        self._set_total(result.payload["s"])
        return self.predictions

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This node's public outputs: predictions, final top-k vector, global vote vector."""
        assert self.final_g is not None
        return self.predictions, self.final_g, self.total


    # -- named secure sums (any per-owner vector; the total stays with the start) --
    def _put_vector(self, name: str, vector: np.ndarray, ring: tuple[PartyId, ...],
                    start: PartyId, protocol: str) -> None:
        """Hold ``vector`` (uint64, Z_(2^64)) to be added under ``name`` over ``ring``."""
        if self.party_id not in ring or start not in ring:
            raise ConfigError(f"{self.party_id}: ring {list(ring)} must contain me and {start!r}")
        old = self._vectors.get(name)
        masks = old.masks if old is not None else self._policy.source(
            "party", self.index, "vector-sum", name)  # one stream per name, kept across runs
        self._vectors[name] = _NamedSum(np.asarray(vector, dtype=np.uint64), tuple(ring),
                                        tuple(ring).index(self.party_id), start, protocol,
                                        masks)

    def _vector(self, name: str) -> _NamedSum:
        v = self._vectors.get(name)
        if v is None:
            raise ProtocolError(f"{self.party_id}: no vector named {name!r} to add")
        return v

    def _vector_message(self, v: _NamedSum, s: np.ndarray, receiver: PartyId, kind: str,
                        round: int) -> Message:
        return Message(self.run_id, v.protocol, round, -1, self.party_id, receiver, kind,
                       {"s": s}, {"s": uniform_provenance(MASK)})

    def vector_ring_start(self, incoming: None, name: str) -> Message:
        """Start node: send a uniformly random mask to the successor (ring sum of ``name``)."""
        if incoming is not None:
            raise ProtocolError(f"{self.party_id}: the ring sum starts with no incoming message")
        v = self._vector(name)
        if self.party_id != v.start:
            raise ProtocolError(f"{self.party_id}: only the start node {v.start!r} begins "
                                f"the sum of {name!r}")
        v.mask = v.masks.uint64(v.vector.shape)
        return self._vector_message(v, v.mask, v.successor, "partial-sum", 1)

    def vector_ring_step(self, incoming: Message, name: str) -> Message:
        """Add this owner's vector to the running masked sum; pass it on."""
        v = self._vector(name)
        return self._vector_message(v, ss.add(incoming.payload["s"], v.vector), v.successor,
                                    "partial-sum", 1)

    def vector_ring_finish(self, incoming: Message, name: str) -> None:
        """Start node: unmask and add its own vector; it keeps the total (nothing is sent)."""
        v = self._vector(name)
        if v.mask is None:
            raise ProtocolError(f"{self.party_id}: the sum of {name!r} was not started here")
        v.total = ss.add(ss.sub(incoming.payload["s"], v.mask), v.vector)
        v.mask = None

    def vector_share_out(self, name: str) -> list[Message]:
        """Split the vector into n additive shares; one message per other node (ring order)."""
        v = self._vector(name)
        n = len(v.ring)
        shares = ss.split_shares(v.vector, n, v.masks.uint64((n - 1,) + v.vector.shape))
        v.kept = shares[-1]
        return [self._vector_message(v, shares[i], other, "share", 1)
                for i, other in enumerate(v.others)]

    def vector_share_in(self, name: str, *shares: Message) -> Message | None:
        """Add the received shares to the kept one; send the partial to the start node."""
        v = self._vector(name)
        if len(shares) != len(v.ring) - 1 or v.kept is None:
            raise ProtocolError(f"{self.party_id}: expected {len(v.ring) - 1} shares of "
                                f"{name!r} after share-out, got {len(shares)}")
        partial = v.kept
        for m in shares:
            partial = ss.add(partial, m.payload["s"])
        v.kept = None
        if self.party_id == v.start:
            v.partial = partial
            return None
        return self._vector_message(v, partial, v.start, "partial-sum", 2)

    def vector_aggregate(self, name: str, *partials: Message) -> None:
        """Start node: add every partial sum; it keeps the total (nothing is sent)."""
        v = self._vector(name)
        if v.partial is None or len(partials) != len(v.ring) - 1:
            raise ProtocolError(f"{self.party_id}: aggregate of {name!r} needs its own partial "
                                f"and {len(v.ring) - 1} others, got {len(partials)}")
        total = v.partial
        for m in partials:
            total = ss.add(total, m.payload["s"])
        v.total, v.partial = total, None

    # -- ring Naive Bayes (protocols.ring_nb) ---------------------------------
    def nb_statistics(self, setup: RingNBSetup) -> int:
        """Compute this owner's Naive Bayes statistics (clipped to the public bounds).

        They are held, fixed-point encoded, as the vector ``setup.name`` for the
        secure sum. Returns the feature count.
        """
        d = len(setup.lower)
        if self.X.shape[1] != d or np.shape(setup.queries)[1:] != (d,):
            raise ConfigError(f"{self.party_id}: {self.X.shape[1]} features, but the bounds "
                              f"have {d} and the queries {np.shape(setup.queries)[1:]}")
        stats = nb.local_statistics(self.X, self.y, self.n_classes, setup.lower, setup.upper)
        self._put_vector(setup.name, nb.encode_signed(stats), setup.ring, setup.start,
                         NB_PROTOCOL)
        old = self._nb.get(setup.name)
        self._nb[setup.name] = _NBState(setup, noise_rng=old.noise_rng if old else None)
        return d

    def nb_release(self, incoming: None, name: str, round: int) -> list[Message]:
        """Start node: charge its ledger, noise the exact total once, broadcast the model.

        The start node sees the exact summed statistics before noising: it is
        trusted for this step (see :mod:`protocols.ring_nb`).
        """
        state, v = self._nb_state(name), self._vector(name)
        if self.party_id != v.start or v.total is None:
            raise ProtocolError(f"{self.party_id}: only the start node {v.start!r} releases "
                                f"{name!r}, after the secure sum")
        setup = state.setup
        cfg = setup.config
        c, d = self.n_classes, len(setup.lower)
        ledger = self.nb_ledgers.get(name)
        if ledger is None:
            ledger = self.nb_ledgers[name] = PrivacyLedger(owner=self.party_id,
                                                           epsilon=cfg.ledger_budget)
        if state.noise_rng is None:  # one stream per release name, kept across runs
            state.noise_rng = self._policy.generator("party", self.index, name, "noise")
        epsilons = cfg.group_epsilons()
        label = (f"{name}: Laplace on {', '.join(GROUPS)} "
                 f"(epsilon {' + '.join(f'{e:.6g}' for e in epsilons)})")
        with ledger.reserve(PrivacyCost(cfg.epsilon, 0.0), label=label):
            noisy = nb.add_noise(nb.decode_signed(v.total), n_classes=c, n_features=d,
                                 epsilons=epsilons, mode=cfg.mode, rng=state.noise_rng)
        v.total = None  # the exact total is not kept once noised
        state.release = noisy
        model = nb.fit(noisy.vector, n_classes=c, n_features=d, var_floor=cfg.var_floor,
                       var_smoothing=cfg.var_smoothing)
        self._nb_set_model(state, model)
        return [nb.model_message(model, run_id=self.run_id, protocol=NB_PROTOCOL,
                                 round=round, sender=self.party_id, receiver=other)
                for other in v.others]

    def nb_receive_model(self, message: Message, name: str) -> np.ndarray:
        """Non-start node: keep the released model; returns its predictions of the queries."""
        state = self._nb_state(name)
        if message.kind != nb.MODEL:
            raise ProtocolError(f"{self.party_id}: expected a {nb.MODEL!r} message, got "
                                f"{message.kind!r}")
        return self._nb_set_model(state, nb.GaussianModel.from_payload(message.payload))

    def nb_result(self, name: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """This node's predictions and the released model's parameters."""
        state = self._nb_state(name)
        if state.model is None or state.predictions is None:
            raise ProtocolError(f"{self.party_id}: no model released under {name!r} yet")
        return state.predictions, state.model.payload()

    def _nb_state(self, name: str) -> _NBState:
        state = self._nb.get(name)
        if state is None:
            raise ProtocolError(f"{self.party_id}: nb_statistics for {name!r} first")
        return state

    @staticmethod
    def _nb_set_model(state: _NBState, model: nb.GaussianModel) -> np.ndarray:
        setup = state.setup
        state.model = model
        state.predictions = nb.predict(model, nb.normalise(setup.queries, setup.lower,
                                                           setup.upper))
        return state.predictions


@dataclass
class _NamedSum:
    """One owner's state for the secure sum of a named vector."""

    vector: np.ndarray
    ring: tuple[PartyId, ...]
    position: int
    start: PartyId
    protocol: str
    masks: RandomSource
    mask: np.ndarray | None = None
    kept: np.ndarray | None = None
    partial: np.ndarray | None = None
    total: np.ndarray | None = None

    @property
    def successor(self) -> PartyId:
        """Next node on this sum's ring."""
        return self.ring[(self.position + 1) % len(self.ring)]

    @property
    def others(self) -> list[PartyId]:
        """The other nodes in ring order, starting with the successor."""
        i = self.position
        return list(self.ring[i + 1:] + self.ring[:i])


@dataclass
class _NBState:
    """One owner's state for a ring Naive Bayes release."""

    setup: RingNBSetup
    model: nb.GaussianModel | None = None
    predictions: np.ndarray | None = None
    release: nb.NoisyStatistics | None = None
    noise_rng: np.random.Generator | None = None


class NeighbourBlocks:
    """An owner's distances to a query batch, per block, as sorted prefixes.

    For each block the ``width`` smallest distances of every query are kept
    with their row indices (``width`` chosen so all blocks fit in
    ``cache_limit`` values, at most 256), in no particular order: a partial
    selection (``argpartition``), not a sort. A block with at most ``width``
    rows, or with at most ``FULL_ROWS`` rows when the whole batch's distances fit
    in ``cache_limit`` values, keeps all its distances as computed (no selection
    at all). ``topk(k)`` sorts only the ``k``
    smallest of the prefix, and the voters within a radius are read from it
    (voting does not depend on the column order); when ``k`` or a radius
    reaches past the prefix, the block's distances are recomputed in full.
    Distances come from :func:`~protocols.ppknn_ring.pp_topk.euclidean_distances`
    either way, so results do not depend on the cache.

    ``every``: the caller built ``blocks`` as one block of every query and every row,
    in order (``np.arange`` of each), so the arrays are read in place without checking
    the indices (the three checks cost each owner of a 64-party ring about 25 µs).
    """

    MAX_WIDTH = 256
    FULL_ROWS = 1024

    def __init__(self, queries: np.ndarray, X: np.ndarray,
                 blocks: list[tuple[np.ndarray, np.ndarray]], cache_limit: int, *,
                 every: bool = False) -> None:
        self.queries, self.X, self.blocks = queries, X, blocks
        n_q = sum(len(q) for q, _ in blocks)
        # per block: whether its query and row indices are every query / row in order
        self._in_order = ([(True, True)] if every else
                          [(_every_row(q, len(queries)), _every_row(r, len(X)))
                           for q, r in blocks])
        self.width = int(min(self.MAX_WIDTH, cache_limit // max(1, n_q)))
        whole = self.width >= 1 and sum(len(q) * len(r) for q, r in blocks) <= cache_limit
        self.prefix: list[tuple[np.ndarray, np.ndarray] | None] = []
        for i, (q_idx, r_idx) in enumerate(blocks):
            if self.width < 1 or len(q_idx) == 0:
                self.prefix.append(None)
                continue
            dist = self._distances(i)
            w = min(self.width, dist.shape[1])
            if whole and dist.shape[1] <= self.FULL_ROWS:
                w = dist.shape[1]
            if w < dist.shape[1]:
                order = np.argpartition(dist, w - 1, axis=1)[:, :w]
                self.prefix.append((np.take_along_axis(dist, order, axis=1), r_idx[order]))
            else:  # the whole block: kept as computed, rows shared by every query
                self.prefix.append((dist, np.broadcast_to(r_idx, dist.shape)))

    def _distances(self, i: int) -> np.ndarray:
        """Block ``i``'s distances, ``(queries of the block, rows of the block)``."""
        (q_idx, r_idx), (all_q, all_r) = self.blocks[i], self._in_order[i]
        return euclidean_distances(self.queries if all_q else self.queries[q_idx],
                                   self.X if all_r else self.X[r_idx])

    def _full(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        dist = self._distances(i)
        return dist, np.broadcast_to(self.blocks[i][1], dist.shape)

    def topk(self, k: int) -> np.ndarray:
        """``V``: the k smallest distances per query, ascending, padded with ``+inf``."""
        n_q = sum(len(q) for q, _ in self.blocks)
        v = None
        for i, (q_idx, r_idx) in enumerate(self.blocks):
            cached = self.prefix[i]
            if cached is not None and (k <= cached[0].shape[1] or cached[0].shape[1] == len(r_idx)):
                part = local_topk(cached[0], k)  # the prefix holds the k smallest
            else:
                part = local_topk(self._full(i)[0], k)
            if (len(self.blocks) == 1 and self._in_order[0][0] and part.dtype == np.float64
                    and part.flags.c_contiguous and part.flags.writeable):
                return part  # one block holding the whole batch, in query order
            if v is None:
                v = np.full((n_q, k), np.inf)
            v[q_idx] = part
        return v if v is not None else np.full((n_q, k), np.inf)

    def within(self, radius: np.ndarray):
        """Per block: (query indices, distances, row indices) with every row within ``radius``.

        Other columns may be included; compare with the radius.
        """
        for i, (q_idx, r_idx) in enumerate(self.blocks):
            cached = self.prefix[i]
            if cached is not None:
                dist, rows = cached
                complete = dist.shape[1] == len(r_idx)
                # every row left out of the prefix is at least as far as the prefix's largest
                if complete or (dist.max(axis=1, initial=-np.inf) > radius[q_idx]).all():
                    yield q_idx, dist, rows
                    continue
            dist, rows = self._full(i)
            yield q_idx, dist, rows


def _every_row(index: np.ndarray, n: int) -> bool:
    """Whether ``index`` is ``0, 1, ..., n - 1`` (every row, in order)."""
    return len(index) == n and (n == 0 or (index[0] == 0 and index[-1] == n - 1
                                           and np.array_equal(index, np.arange(n))))


__all__ = ["WEIGHTINGS", "RingDataOwner"]
