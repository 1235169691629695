"""Who a PP-TopK value is attributed to: the ring's attribution attack read in bounded memory.

A node claims the values of the final top-k vector it did not see change on their way
round the ring (Xiong et al.'s successor attack, and an informed variant that also uses
the public start node); the claims are scored against the real owners (ground truth)
and against a claimer naming as many values at random (:func:`random_claim_miss`).
The transcript is read through :mod:`simulations.leakage.stream`, one group of
messages at a time, under its byte budgets.
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.leakage import Disclosure, DisclosureReport, multiset_new
from ppknn.core.transcript import Transcript
from ppknn.simulations.leakage import stream

_ATTRIBUTION: weakref.WeakKeyDictionary[Transcript, dict[Any, Any]] = (
    weakref.WeakKeyDictionary())
"""Each transcript's attribution reports, by the arguments that made them."""


@dataclass
class _Tally:
    disclosed: dict[str, np.ndarray]
    claimed: dict[str, int]
    correct: dict[str, int]
    log_miss: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    """Per target and query: log P(a random claimer with the same claims hits none)."""
    pool: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    """Per target: [its values, all values] in the claimed messages' rows."""

    @classmethod
    def new(cls, parties: list[str], n_queries: int) -> _Tally:
        return cls({p: np.zeros(n_queries, dtype=bool) for p in parties},
                   dict.fromkeys(parties, 0), dict.fromkeys(parties, 0),
                   {p: np.zeros(n_queries) for p in parties}, {p: [0, 0] for p in parties})

    def add_chance(self, targets: list[str], sizes: list[int], mask: np.ndarray,
                   mine: np.ndarray) -> None:
        """The random-claim baseline of stacked messages (:func:`random_claim_miss`)."""
        miss = random_claim_miss(mask, mine)
        ends = np.cumsum(sizes, dtype=np.int64)
        claimed_rows = mask.any(axis=1)
        for target, lo, hi in zip(targets, ends - np.asarray(sizes, dtype=np.int64), ends):
            self.log_miss[target] += miss[lo:hi]
            rows = claimed_rows[lo:hi]
            self.pool[target][0] += int(mine[lo:hi][rows].sum())
            self.pool[target][1] += int(rows.sum()) * mine.shape[1]

    def add(self, targets: list[str], sizes: list[int], mask: np.ndarray, hit: np.ndarray
            ) -> None:
        """Claims of stacked messages, each aimed at its target.

        Message ``i`` (aimed at ``targets[i]``) owns the next ``sizes[i]`` rows
        of ``mask`` (the values claimed for the target) and ``hit`` (those
        truly the target's).
        """
        ends = np.cumsum(sizes, dtype=np.int64)
        starts = ends - np.asarray(sizes, dtype=np.int64)
        claimed = np.concatenate([[0], np.cumsum(mask.sum(axis=1))])  # running totals
        correct = np.concatenate([[0], np.cumsum(hit.sum(axis=1))])
        any_hit = hit.any(axis=1)
        for target, lo, hi in zip(targets, starts, ends):
            n_claimed = int(claimed[hi] - claimed[lo])
            if n_claimed:
                n_correct = int(correct[hi] - correct[lo])
                self.claimed[target] += n_claimed
                self.correct[target] += n_correct
                if n_correct:
                    self.disclosed[target] |= any_hit[lo:hi]

    def report(self, adversary: str, order: list[str], n_queries: int) -> DisclosureReport:
        return ChanceReport(adversary=adversary, parties=tuple(
            Disclosure(party=p, disclosed=int(self.disclosed[p].sum()), trials=n_queries,
                       claimed=self.claimed[p], correct=self.correct[p]) for p in order),
            chance={p: 1.0 - np.exp(self.log_miss[p]) for p in order if p in self.log_miss},
            hits={p: self.disclosed[p] for p in order},
            pool={p: tuple(self.pool[p]) for p in order if p in self.pool})


def random_claim_miss(mask: np.ndarray, mine: np.ndarray) -> np.ndarray:
    """Per row: log P(``c`` values drawn at random from the row's ``K`` hit none of the target's).

    ``c`` is the row's claims (``mask``), ``t`` the target's values in it (``mine``):
    ``C(K - t, c) / C(K, c)``, zero when ``c > K - t``.
    """
    from scipy.special import gammaln

    width = mask.shape[1]
    c = mask.sum(axis=1).astype(np.float64)
    t = mine.sum(axis=1).astype(np.float64)
    free = width - t
    out = np.full(len(c), -np.inf)
    ok = c <= free
    out[ok] = (gammaln(free[ok] + 1) - gammaln(free[ok] - c[ok] + 1) - gammaln(width + 1)
               + gammaln(width - c[ok] + 1))
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class ChanceReport(DisclosureReport):
    """A disclosure report with its random-claim baseline.

    ``chance[p][q]``: the probability that a claimer naming, in every row it claimed,
    as many values as the attack did but drawn at random, names one of ``p``'s values
    for query ``q``; ``hits[p][q]``: whether the attack did; ``pool[p]``: ``p``'s
    values and all values in the claimed rows (a random claim's precision).
    """

    chance: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    hits: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    pool: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        """Equal to any report with the same adversary and disclosures (the baseline aside)."""
        if not isinstance(other, DisclosureReport):
            return NotImplemented
        return (self.adversary, self.parties) == (other.adversary, other.parties)

    __hash__ = DisclosureReport.__hash__


COMPARE_BUDGET = 2**18


"""Bytes of received and reference vectors the ring attribution compares in one stack.

Stacking amortises the per-call cost of the multiset comparison over many messages;
its temporaries are about ten times the stack, so a small stack keeps the peak low."""


def ring_attribution(transcript: Transcript, public: Mapping[str, Any], *,
                     state_budget: int = stream.STATE_BUDGET
                     ) -> tuple[DisclosureReport, DisclosureReport]:
    """Successor attribution and the informed successor, streamed (module docstring).

    The attack is :func:`protocols.ppknn_ring.pp_topk_attacks.successor_attribution`:
    each node compares every vector it receives with the last one it sent
    before (the start node: in the same round too; nobody: the public initial
    vector); the informed variant keeps only values that are also in the final
    broadcast vector.

    Its state is one vector per observing node (what it sent last), a round's
    worth. The nodes are taken in groups whose two vectors each (the last
    round's and this round's) fit ``state_budget``; the transcript is read once
    and each group's messages (those its members send or receive) are scattered
    to a temporary file (:func:`scatter`), so memory holds one record batch, the
    spill buffer and one group's vectors, and the work is linear in the
    transcript. A ring whose vectors all fit is read once, with no spill.

    The result is remembered for the transcript object (as long as its parts
    are unchanged), so the run's disclosure and its leakage table share one
    computation.
    """
    from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL
    from ppknn.protocols.ppknn_ring.pp_topk_attacks import ADVERSARY, INFORMED

    index = {p: int(i) for p, i in dict(public["party_index"]).items()}
    n_q = int(public["n_queries"])
    max_d = float(public["max_distance"])
    key = (tuple(sorted(index.items())), n_q, max_d, state_budget,
           tuple((p.name, p.stat().st_size) for p in transcript.parts()))
    memo = _ATTRIBUTION.setdefault(transcript, {})
    if key not in memo:
        memo.clear()  # one entry per transcript: the latest
        memo[key] = _ring_attribution(transcript, index, n_q, max_d, state_budget,
                                      PROTOCOL, ADVERSARY, INFORMED)
    return memo[key]


def _ring_attribution(transcript: Transcript, index: dict[str, int], n_q: int, max_d: float,
                      state_budget: int, protocol: str, adversary: str, informed_name: str
                      ) -> tuple[DisclosureReport, DisclosureReport]:
    order = sorted(index, key=index.__getitem__)
    final: np.ndarray | None = None
    starts: set[str] = set()
    for m in stream.iter_messages(transcript, protocol, kinds=("topk-final",),
                                  with_provenance=False):
        starts.add(m.sender)
        if final is None:
            final = np.array(m.payload["g"])  # a copy: a view would hold its whole batch
    scorer = _Attribution(index, final, _Tally.new(order, n_q), _Tally.new(order, n_q))
    vector = final.nbytes if final is not None else 8 * n_q * 64
    size = max(1, int(state_budget // (2 * max(vector, 1))))
    group_of = {p: i // size for i, p in enumerate(order)}
    n_groups = -(-len(order) // size)

    def groups_of(sender: str, receiver: str, kind: str) -> set[int]:
        return {g for g in (group_of.get(sender), group_of.get(receiver)) if g is not None}

    for first, msgs in stream.scatter(transcript, protocol, n_groups, groups_of,
                               kinds=("topk-vector",)):
        _score_group(scorer, msgs, set(order[first * size:(first + 1) * size]), starts, max_d)
    scorer.flush()
    return (scorer.plain.report(adversary, order, n_q),
            scorer.informed.report(informed_name, order, n_q))


def _score_group(scorer: _Attribution, msgs: Iterable[Any], members: set[str],
                 starts: set[str], max_d: float) -> None:
    """Score the vectors the ``members`` of one group received, round by round."""
    last_sent: dict[str, np.ndarray] = {}  # each member's latest vector
    for _, in_round in itertools.groupby(msgs, key=lambda m: m.round):
        sent_now: dict[str, np.ndarray] = {}
        to_start = []  # the start node compares with what it sends in this round too
        for m in in_round:
            if m.sender in members:
                sent_now[m.sender] = np.array(m.payload["g"])
            me = m.receiver
            if me not in members:
                continue
            g = np.asarray(m.payload["g"])
            prov = np.asarray(m.provenance["g"])
            if me in starts:
                to_start.append((m.sender, me, np.array(g), np.array(prov)))
            else:
                scorer.score(m.sender, g, last_sent.get(me, np.full(g.shape, max_d)), prov)
        for sender, me, g, prov in to_start:
            reference = sent_now.get(me)
            if reference is None:
                reference = last_sent.get(me, np.full(g.shape, max_d))
            scorer.score(sender, g, reference, prov)
        last_sent.update(sent_now)


class _Attribution:
    """Both successor adversaries' tallies, scored for many messages at once.

    The rows of the messages' vectors are stacked (``multiset_new`` works row by
    row), up to :data:`COMPARE_BUDGET` of vectors, then compared in one call.
    """

    def __init__(self, index: dict[str, int], final: np.ndarray | None, plain: _Tally,
                 informed: _Tally) -> None:
        self.index, self.final, self.plain, self.informed = index, final, plain, informed
        self.pending: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
        self.pending_bytes = 0

    def score(self, sender: str, g: np.ndarray, reference: np.ndarray,
              prov: np.ndarray) -> None:
        """Queue the vector ``g`` ``sender`` sent, compared with ``reference``."""
        pending = self.pending
        if pending and (g.shape[1:] != pending[0][1].shape[1:]
                        or reference.shape[1:] != pending[0][2].shape[1:]):
            self.flush()  # vectors of another width: not stacked with these
        pending.append((sender, g, reference, prov))
        self.pending_bytes += g.nbytes + reference.nbytes
        if self.pending_bytes >= COMPARE_BUDGET:
            self.flush()

    def flush(self) -> None:
        """Compare every queued vector and add the outcomes to both tallies."""
        pending, final = self.pending, self.final
        if not pending:
            return
        received = np.concatenate([p[1] for p in pending])
        mask = multiset_new(received, np.concatenate([p[2] for p in pending]))
        if final is not None:
            beyond = multiset_new(received, np.concatenate([final] * len(pending)))
        senders = [p[0] for p in pending]
        sizes = [len(p[1]) for p in pending]
        # a value is truly the sender's when its provenance is the sender's index
        mine = (np.concatenate([np.broadcast_to(p[3], p[1].shape) for p in pending])
                == np.repeat([self.index[s] for s in senders], sizes)[:, None])
        self.plain.add(senders, sizes, mask, mask & mine)
        self.plain.add_chance(senders, sizes, mask, mine)
        if final is not None:
            claims = mask & ~beyond
            self.informed.add(senders, sizes, claims, claims & mine)
            self.informed.add_chance(senders, sizes, claims, mine)
        pending.clear()
        self.pending_bytes = 0


__all__ = ['COMPARE_BUDGET', 'ChanceReport', 'random_claim_miss', 'ring_attribution']
